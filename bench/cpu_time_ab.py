#!/usr/bin/env python3
"""Interleaved in one process: smelt with all passes, smelt with some passes
disabled or with tuning records, and ONNX Runtime on one model, timing each
run by the process's CPU time as well as by the wall clock.  On a shared
machine a one-thread run's CPU time does not count the time it waited for a
core, so it moves far less than wall time (cache interference remains).
With --threads 2 compare the wall times: the variants share one process, so
the drift between processes (thread placement, memory) cannot favour one.
ONNX Runtime's workers do not spin, so they take no core from the others.

  SMELT_LIB=build/libsmelt.so PYTHONPATH=python python3 bench/cpu_time_ab.py MODEL \
      --disable fuse_attention --rounds 8 --repeat 10
  ... bench/cpu_time_ab.py MODEL --records r50.jsonl --threads 2 --rounds 12
"""
import argparse, statistics, sys, time

import numpy as np
import smelt


def inputs_of(model_path):
    import onnx
    m = onnx.load(model_path, load_external_data=False)
    init = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    types = {1: np.float32, 7: np.int64, 6: np.int32, 9: np.bool_, 2: np.uint8, 3: np.int8,
             10: np.float16}
    for vi in m.graph.input:
        if vi.name in init:
            continue
        t = vi.type.tensor_type
        shape = [d.dim_value for d in t.shape.dim]
        dt = types[t.elem_type]
        feeds[vi.name] = (rng.integers(0, 100, shape).astype(dt) if dt in (np.int64, np.int32, np.uint8, np.int8)
                          else rng.standard_normal(shape).astype(dt))
    return feeds


def timed(fn, repeat):
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append((time.process_time() - c0) * 1e3)
        wall.append((time.perf_counter() - w0) * 1e3)
    return statistics.median(cpu), statistics.median(wall)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--disable", default="", help="comma-separated passes for the B variant")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--records", default="", help="tuning records for a variant (smelt tune -o FILE)")
    a = ap.parse_args()
    feeds = inputs_of(a.model)
    variants = {"smelt": smelt.load(a.model).compile(threads=a.threads)}
    if a.disable:
        variants["smelt -" + a.disable] = smelt.load(a.model).compile(
            threads=a.threads, disabled_passes=tuple(a.disable.split(",")))
    if a.records:
        variants["smelt --records"] = smelt.load(a.model).compile(threads=a.threads, records=a.records)
    try:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = a.threads, 1
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
        variants["onnxruntime " + ort.__version__] = sess
    except ImportError:
        pass
    calls = {k: (lambda v=v: v.run(None, feeds)) if k.startswith("onnxruntime") else
             (lambda v=v: v.run(feeds)) for k, v in variants.items()}
    for f in calls.values():  # warm up (and compile)
        f()
    res = {k: ([], []) for k in calls}
    names = list(calls)
    for r in range(a.rounds):
        for k in (names if r % 2 == 0 else names[::-1]):
            c, w = timed(calls[k], a.repeat)
            res[k][0].append(c)
            res[k][1].append(w)
    for k, (c, w) in res.items():
        print("%-32s cpu ms min %8.3f median %8.3f | wall ms min %8.3f median %8.3f"
              % (k, min(c), statistics.median(c), min(w), statistics.median(w)))


if __name__ == "__main__":
    sys.exit(main())
