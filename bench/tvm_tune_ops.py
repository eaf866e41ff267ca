#!/usr/bin/env python3
"""Tune the single-operator models (bench/gen_tune_ops.py) with Apache TVM's
MetaSchedule and print, per op and trial count, the tuned latency, the tuning
wall time and ONNX Runtime's latency measured in the same run.  The tuned
output is checked against test_data_set_0 when the folder has one.

Needs apache-tvm (bench/setup_tvm.sh installs 0.27.0.post1 with
apache-tvm-ffi 0.1.14.post1); exits with status 2 and a message without it.

usage: tvm_tune_ops.py OPS_DIR [--models a,b] [--trials 64,256] [--threads N]
                       [--mcpu CPU] [--repeat N] [--work-dir DIR]
Each op is tuned from an empty database per trial count: the ONNX model is
imported with tvm.relax.frontend.onnx and tuned as
relax.get_pipeline("static_shape_tuning") does (tune_relax with
max_trials_per_task = trials, then MetaScheduleApplyDatabase), except that the
LocalBuilder gets a longer timeout: each batch of candidates starts fresh
builder processes, and each imports tvm.s_tir.tensor_intrin (CUDA intrinsics
included), which takes 20-40 s on a 2-core machine, longer than the default
30 s build timeout, so every candidate failed to build.  That start-up is part
of the reported tuning wall time.
"""
import argparse, os, shutil, sys, time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ops_dir")
    ap.add_argument("--models", default="", help="comma-separated op folder names (default: all)")
    ap.add_argument("--trials", default="64,256",
                    help="trials per task, comma-separated; 0 = untuned")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mcpu", default="znver4", help="LLVM CPU of the target (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs of the tuned module and ORT")
    ap.add_argument("--build-timeout", type=float, default=300,
                    help="seconds per candidate build (TVM's 30 s default is shorter than its "
                         "builder workers' start-up here)")
    ap.add_argument("--work-dir", default="/tmp/smelt_tvm_tune", help="MetaSchedule databases")
    a = ap.parse_args()

    os.environ["TVM_NUM_THREADS"] = str(a.threads)   # read when TVM's thread pool starts
    try:
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx
        from tvm.s_tir import meta_schedule as ms
    except ImportError as e:
        print("tvm_tune_ops.py: Apache TVM is not importable (%s); install it with "
              "bench/setup_tvm.sh (apache-tvm 0.27.0.post1, apache-tvm-ffi 0.1.14.post1)" % e,
              file=sys.stderr)
        return 2
    import onnx
    from onnx import numpy_helper
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from peers import Ort, cpu_field, cpu_name

    target = tvm.target.Target({"kind": "llvm", "mcpu": a.mcpu, "num-cores": a.threads})
    trials = [int(t) for t in a.trials.split(",")]
    names = a.models.split(",") if a.models else sorted(os.listdir(a.ops_dir))
    names = [n for n in names if os.path.exists(os.path.join(a.ops_dir, n, "model.onnx"))]
    try:
        import tvm_ffi
        ffi_v = tvm_ffi.__version__
    except (ImportError, AttributeError):
        ffi_v = "?"
    print("- date: %s; CPU %s, cpu family %s, %d cores" % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), cpu_name(), cpu_field("cpu family"),
        os.cpu_count()))
    print("- apache-tvm %s (apache-tvm-ffi %s), target `%s`, TVM_NUM_THREADS=%d; latency: median "
          "of %d timed runs after warm-up; ORT intra_op_num_threads=%d" % (
              tvm.__version__, ffi_v, target, a.threads, a.repeat, a.threads))
    print()
    print("| op | trials/task | TVM tuned ms | tuning wall s | ORT ms | TVM/ORT | output check |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        folder = os.path.join(a.ops_dir, name)
        path = os.path.join(folder, "model.onnx")
        model = onnx.load(path)
        inp = model.graph.input[0]
        data = os.path.join(folder, "test_data_set_0")
        if os.path.exists(os.path.join(data, "input_0.pb")):
            x = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "input_0.pb")))
            want = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "output_0.pb")))
        else:
            shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
            x, want = np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32), None
        ort = Ort(path, a.threads)
        for n in trials:
            work = os.path.join(a.work_dir, "%s_%d" % (name, n))
            shutil.rmtree(work, ignore_errors=True)
            try:
                mod = from_onnx(model)
                t0 = time.perf_counter()
                with target:   # relax.pipeline.static_shape_tuning_pipeline, with our builder
                    mod = relax.transform.DecomposeOpsForInference()(mod)
                    mod = relax.transform.CanonicalizeBindings()(mod)
                    mod = relax.get_pipeline("zero")(mod)
                    if n > 0:   # 0: untuned (TVM's default schedules), checks the import
                        ms.relax_integration.tune_relax(
                            mod, {}, target, work, max_trials_global=n * 8, max_trials_per_task=n,
                            builder=ms.builder.LocalBuilder(timeout_sec=a.build_timeout))
                        mod = relax.transform.MetaScheduleApplyDatabase(work)(mod)
                wall = time.perf_counter() - t0
                ex = tvm.compile(mod, target=target)
                dev = tvm.cpu()
                vm = relax.VirtualMachine(ex, dev)
                xt = tvm.runtime.tensor(x, dev)
                got = vm["main"](xt).numpy()
                check = ("ok" if np.allclose(got, want, rtol=1e-3, atol=1e-5) else
                         "WRONG (max abs diff %.3g)" % np.abs(got - want).max()) if want is not None else "-"
                ev = vm.time_evaluator("main", dev, number=1, repeat=a.repeat, min_repeat_ms=0)
                tuned_ms = float(np.median(ev(xt).results)) * 1e3  # not `ms`: that is meta_schedule
                o = ort.median(a.repeat)
                print("| %s | %d | %.3f | %.1f | %.3f | %.2f | %s |" % (name, n, tuned_ms, wall, o, tuned_ms / o, check),
                      flush=True)
            except Exception as e:  # one failing op must not end the table
                msg = str(e).strip().splitlines()
                print("| %s | %d | error: %s | | | | |" % (name, n, (msg[-1] if msg else type(e).__name__)[:120]),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
