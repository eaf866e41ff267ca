#!/usr/bin/env python3
"""Run-time dims against specialisation, one thread, interleaved, in one
process: a model with a symbolic length compiled ONCE for MIN..MAX
(compile(dims={NAME: (MIN, MAX)})) against builds specialised to each
length (dims={NAME: N}), with and without fused attention (which run-time
lengths do not use yet).  Timed by process CPU time (a one-thread run's CPU
time does not count waiting for a core on a shared machine) and wall time.

  SMELT_LIB=build/libsmelt.so PYTHONPATH=python python3 bench/rt_dims_ab.py \\
      MODEL --dim seq --range 1 512 --lengths 128 --rounds 6 --repeat 5
"""
import argparse, os, statistics, sys, time

import numpy as np
import smelt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_time_ab import timed  # noqa: E402  (one timing loop for both A/B scripts)


def feeds_of(model_path, dim, length):
    """Random inputs with the symbolic dim `dim` at `length` (ids in [0, 100))."""
    import onnx
    m = onnx.load(model_path, load_external_data=False)
    init = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(0)
    types = {1: np.float32, 7: np.int64, 6: np.int32}
    feeds = {}
    for vi in m.graph.input:
        if vi.name in init:
            continue
        t = vi.type.tensor_type
        shape = [length if d.dim_param == dim else d.dim_value for d in t.shape.dim]
        dt = types[t.elem_type]
        feeds[vi.name] = (rng.integers(0, 100, shape).astype(dt) if dt != np.float32
                          else np.zeros(shape, dt))  # an additive mask keeping every key
    return feeds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--dim", default="seq")
    ap.add_argument("--range", type=int, nargs=2, default=(1, 512))
    ap.add_argument("--lengths", type=int, nargs="+", default=[128])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    model = smelt.load(a.model)
    t0 = time.perf_counter()
    rt = model.compile(threads=1, dims={a.dim: tuple(a.range)})
    print("run-time %s %d..%d: compiled in %.1f s" % (a.dim, a.range[0], a.range[1],
                                                    time.perf_counter() - t0))
    for length in a.lengths:
        feeds = feeds_of(a.model, a.dim, length)
        variants = {
            "run-time %d..%d" % tuple(a.range): rt,
            "specialised %d" % length: model.compile(threads=1, dims={a.dim: length}),
            "specialised %d, no fuse_attention" % length: model.compile(
                threads=1, dims={a.dim: length}, disabled_passes=("fuse_attention",)),
        }
        ref = None
        for k, v in variants.items():  # warm up, and the same results
            out = list(v.run(feeds).values())[0]
            if ref is None:
                ref = out
            err = float(np.max(np.abs(out - ref) / (1 + np.abs(ref))))
            print("  %s at %d: max rel. difference to the first %.2e" % (k, length, err))
        res = {k: ([], []) for k in variants}
        names = list(variants)
        for r in range(a.rounds):
            for k in (names if r % 2 == 0 else names[::-1]):
                c, w = timed(lambda v=variants[k]: v.run(feeds), a.repeat)
                res[k][0].append(c)
                res[k][1].append(w)
        base = statistics.median(res[names[1]][0])
        for k, (c, w) in res.items():
            print("%-40s cpu ms median %9.2f min %9.2f (%.3fx specialised) | wall median %9.2f"
                  % (k + " @%d" % length, statistics.median(c), min(c),
                     statistics.median(c) / base, statistics.median(w)))


if __name__ == "__main__":
    main()
