#!/usr/bin/env python3
"""AOT run-time checks: a standalone package of gather_chain.onnx refuses an
out-of-range index with the reference's message (smelt_rt_model_run's error)
and runs in-range indices.  usage: check_aot_data_error.py SMELT MODEL WORK_DIR"""
import os, subprocess, sys
import numpy as np

MESSAGE = "node 'n3' (GatherElements): index 9 at position 0 is out of range for axis 0 of size 4"

def main():
    smelt, model, work = sys.argv[1:4]
    pkg = os.path.join(work, "pkg")
    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(work)
    subprocess.run([smelt, "compile", model, "-o", pkg, "--embed-weights"], check=True)
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(work, "aot_run")
    sources = [os.path.join(pkg, f) for f in ("model.c", "smelt_rt_pool.c", "smelt_rt_model.c")]
    subprocess.run(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I", pkg, "-o", exe,
                    os.path.join(here, "aot_run.c")] + sources + ["-lpthread", "-lm"], check=True)
    failed = 0
    for value, want_ok in ((3, False), (1, True), (-1, True)):
        raw = os.path.join(work, f"in_{value}.raw")
        np.full((4, 4, 4, 4), value, dtype=np.int64).tofile(raw)
        r = subprocess.run([exe, "", raw, os.path.join(work, "out.raw")], capture_output=True,
                           text=True)
        ok = (r.returncode == 0) == want_ok and (want_ok or MESSAGE in r.stderr)
        print(f"{'PASS' if ok else 'FAIL'} indices {value}: rc {r.returncode} {r.stderr.strip()}")
        failed += not ok
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
