#!/usr/bin/env python3
"""AOT end to end: package a model with `smelt compile -o`, build the package
standalone with `cc -std=c99 -O2 -Wall -Wextra -Werror` (no smelt library), run it on
the test folder's inputs and compare with the expected outputs.
usage: check_aot.py SMELT MODEL_DIR WORK_DIR [--embed-weights] [--target T]
Another architecture: AOT_CC names its C compiler (default cc) and
AOT_EMULATOR the command the program runs under (e.g. "qemu-aarch64 -L
/usr/aarch64-linux-gnu")."""
import os, subprocess, sys
import numpy as np
from onnx import numpy_helper, TensorProto

def load_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)

def main():
    smelt, model_dir, work = sys.argv[1:4]
    embed = "--embed-weights" in sys.argv[4:]
    target = sys.argv[sys.argv.index("--target") + 1] if "--target" in sys.argv[4:] else None
    cc = os.environ.get("AOT_CC", "cc").split()
    emulator = os.environ.get("AOT_EMULATOR", "").split()
    pkg = os.path.join(work, "pkg")
    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(work)
    cmd = [smelt, "compile", os.path.join(model_dir, "model.onnx"), "-o", pkg]
    subprocess.run(cmd + (["--embed-weights"] if embed else []) + (["--target", target] if target else []),
                   check=True)
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(work, "aot_run")
    sources = [os.path.join(pkg, f) for f in ("model.c", "smelt_rt_pool.c", "smelt_rt_model.c")]
    subprocess.run(cc + ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I", pkg, "-o", exe,
                    os.path.join(here, "aot_run.c")] + sources + ["-lpthread", "-lm"], check=True)
    data = os.path.join(model_dir, "test_data_set_0")
    ins = sorted(f for f in os.listdir(data) if f.startswith("input_"))
    outs = sorted(f for f in os.listdir(data) if f.startswith("output_"))
    args = emulator + [exe, "" if embed else os.path.join(pkg, "weights.bin")]
    for i, name in enumerate(ins):
        raw = os.path.join(work, f"in{i}.raw")
        load_pb(os.path.join(data, name)).tofile(raw)
        args.append(raw)
    got_files = [os.path.join(work, f"out{i}.raw") for i in range(len(outs))]
    subprocess.run(args + got_files, check=True)
    failed = 0
    for name, path in zip(outs, got_files):
        want = load_pb(os.path.join(data, name))
        got = np.fromfile(path, dtype=want.dtype).reshape(want.shape)
        ok = np.allclose(got, want, rtol=1e-3, atol=1e-4)
        err = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
        print(f"{'PASS' if ok else 'FAIL'} {os.path.basename(model_dir)} {name}: max abs err {err:.3g}")
        failed += not ok
    print(f"{len(outs) - failed} passed, {failed} failed")
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
