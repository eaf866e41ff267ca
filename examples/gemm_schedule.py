"""A GEMM written by hand with smelt.te and scheduled step by step.

    SMELT_LIB=build/libsmelt.so PYTHONPATH=python python3 examples/gemm_schedule.py
    ... --size 256 --threads 1 --repeat 5

C[i, j] = sum_k A[i, k] * B[k, j] in fp32, from the naive loop nest to a
blocked, packed, vectorised, parallel schedule with a register tile, all of
it generated code (a side step hands the inner block to the compiler's GEMM
micro-kernel through tensorize instead).  After each step: the GFLOP/s
(best of --repeat runs, wall clock) and the result checked against NumPy.
At the end: the machine's fp32 FMA peak measured as bench/fma_peak.c does
it, and `smelt bench`'s figure for a MatMul ONNX model of the same size run
in this process (the compiler's own default schedule), so that on a shared
machine the three figures come from one time window.

Read it as a notebook: every step is a function that builds the same
computation and applies the steps of the previous one plus its own.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if "SMELT_LIB" not in os.environ and os.path.exists(os.path.join(REPO, "build", "libsmelt.so")):
    os.environ["SMELT_LIB"] = os.path.join(REPO, "build", "libsmelt.so")
sys.path.insert(0, os.path.join(REPO, "python"))

import smelt  # noqa: E402
from smelt import te  # noqa: E402


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


FLAGS = cpu_flags()
# The micro-kernel's register block: ROWS x (VECS x LANES) (codegen/microkernel.c)
if "avx512f" in FLAGS:
    LANES, UK_ROWS, UK_COLS = 16, 8, 48
elif "avx2" in FLAGS:
    LANES, UK_ROWS, UK_COLS = 8, 6, 16
else:
    LANES, UK_ROWS, UK_COLS = 4, 4, 8


# ---- the computation ---------------------------------------------------------------

def gemm(n, packed=False, nb=UK_COLS, pack_a=False, mr=UK_ROWS):
    """A, B, C = A @ B; with packed, B is first copied into panels
    Bp[j // nb, k, j % nb] (each panel nb columns wide, contiguous along k),
    so the inner loops read B contiguously (TVM's tutorial does the same).
    With pack_a, A is copied into row tiles Ap[i // mr, k, i % mr] too: the mr
    rows a register tile reads, interleaved, so that they come from one
    contiguous stream instead of mr rows n floats apart (which all fall into
    the same L1 set when n * 4 bytes is a multiple of 4 KB)."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis(n, name="k")
    if not packed:
        C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
        return A, B, C, None, None
    Bp = te.compute((-(-n // nb), n, nb), lambda jo, kk, ji: te.select(
        jo * nb + ji < n, B[kk, te.min(jo * nb + ji, n - 1)], 0.0), name="Bp")
    if not pack_a:
        C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * Bp[j // nb, k, j % nb], axis=k),
                       name="C")
        return A, B, C, Bp, None
    Ap = te.compute((-(-n // mr), n, mr), lambda io, kk, ii: te.select(
        io * mr + ii < n, A[te.min(io * mr + ii, n - 1), kk], 0.0), name="Ap")
    C = te.compute((n, n), lambda i, j: te.sum(
        Ap[i // mr, k, i % mr] * Bp[j // nb, k, j % nb], axis=k), name="C")
    return A, B, C, Bp, Ap


# ---- the steps -----------------------------------------------------------------------

def step_naive(n):
    A, B, C, _, _ = gemm(n)
    return smelt.create_schedule(C), [A, B, C]


def step_blocked(n, bn=32, kf=4):
    """Tiles of bn x bn of C, k split: the tile's rows of A and B stay in cache."""
    A, B, C, _, _ = gemm(n)
    s = smelt.create_schedule(C)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    ko, ki = s[C].split(C.op.reduce_axis[0], kf)
    s[C].reorder(xo, yo, ko, ki, xi, yi)
    return s, [A, B, C], (xo, yo, ko, ki, xi, yi)


def step_vectorized(n):
    """The innermost loop (bn consecutive columns of C and B) in vectors."""
    s, args, (xo, yo, ko, ki, xi, yi) = step_blocked(n)
    s[args[2]].vectorize(yi)
    return s, args


def step_permuted(n):
    """k outside the tile rows: each row of the tile reads one row of B."""
    s, args, (xo, yo, ko, ki, xi, yi) = step_blocked(n)
    C = args[2]
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)
    return s, args


def register_tile(n, parallel, pack_a=False, panel_group=None):
    """B packed into panels; C accumulated in a register tile (cache_write)
    of UK_ROWS rows x one panel, k outside it, rows unrolled, columns in vectors.
    panel_group: panels per group, the groups outermost (and in parallel),
    every row tile inside a group, the group's panels inside the row tile:
    the group's panels stay in L2 and the row tile's slice of A in L1 while
    they are reused, where panels outermost stream all of A once per panel."""
    A, B, C, Bp, Ap = gemm(n, packed=True, pack_a=pack_a)
    s = smelt.create_schedule(C)
    s[Bp].vectorize(Bp.op.axis[2])
    CL = s.cache_write(C, "local")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], UK_ROWS, UK_COLS)
    if panel_group:
        group, yo = s[C].split(yo, panel_group)
        s[C].reorder(group, xo, yo, xi, yi)
        s[CL].compute_at(s[C], yo)
    else:
        group = yo
        s[C].reorder(yo, xo, xi, yi)
        s[CL].compute_at(s[C], xo)
    x, y = CL.op.axis
    (k,) = CL.op.reduce_axis
    s[CL].reorder(k, x, y)
    s[CL].unroll(x)
    s[CL].vectorize(y)
    s[C].vectorize(yi)
    if parallel:
        s[Bp].parallel(Bp.op.axis[0])
        if Ap is not None:
            s[Ap].parallel(Ap.op.axis[0])
        s[C].parallel(group)
    return s, [A, B, C]


def step_write_cache(n):
    return register_tile(n, parallel=False)


def step_parallel(n):
    """The column panels spread over the threads."""
    return register_tile(n, parallel=True)


def step_microkernel(n, rows=48, kb=256):
    """Instead of the register tile, the inner block (rows x one panel x kb)
    handed to the compiler's register-blocked GEMM micro-kernel (tensorize):
    panel outside, k blocks of kb (a panel's slice stays in L1), rows of A
    inside, panels in parallel."""
    A, B, C, Bp, _ = gemm(n, packed=True)
    s = smelt.create_schedule(C)
    s[Bp].parallel(Bp.op.axis[0])
    s[Bp].vectorize(Bp.op.axis[2])
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], rows, UK_COLS)
    ko, ki = s[C].split(C.op.reduce_axis[0], kb)
    s[C].reorder(yo, ko, xo, xi, yi, ki)
    s[C].tensorize(xi, "smelt.gemm_f32")
    s[C].parallel(yo)
    return s, [A, B, C]


def step_pack_a(n):
    """A packed into row tiles as well."""
    return register_tile(n, parallel=True, pack_a=True)


def step_panel_groups(n, panels=8):
    """Groups of 8 panels (128 columns of C; 512 KB of B at n = 1024, this
    CPU's L2) outermost and in parallel, every row tile inside: each row
    tile's A (24 KB, in L1) serves the 8 panels, each group's panels are read
    from L2 instead of L3."""
    return register_tile(n, parallel=True, pack_a=True, panel_group=panels)


STEPS = [
    ("naive", step_naive),
    ("blocked 32x32, k split by 4", lambda n: step_blocked(n)[:2]),
    ("+ vectorized inner columns", step_vectorized),
    ("+ k outside the tile rows", step_permuted),
    ("B packed, register tile (cache_write)", step_write_cache),
    ("or: the block tensorized (micro-kernel)", step_microkernel),
    ("register tile + parallel column panels", step_parallel),
    ("+ A packed in row tiles", step_pack_a),
    ("+ groups of 8 panels kept in L2", step_panel_groups),
]


# ---- measuring -------------------------------------------------------------------

def best_seconds(fn, repeat, budget_s):
    """Best wall-clock time and best process CPU time (all threads) of up to
    `repeat` calls (fewer when one call is slow).  On a shared machine the
    CPU time leaves out the time the threads waited for a core."""
    fn()
    best, best_cpu, start = float("inf"), float("inf"), time.perf_counter()
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        best = min(best, time.perf_counter() - t)
        best_cpu = min(best_cpu, time.process_time() - c)
        if time.perf_counter() - start > budget_s:
            break
    return best, best_cpu


class FmaPeak:
    """bench/fma_peak.c built once (cc -O2 -march=native); unusable (None
    results) without a compiler."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.exe = os.path.join(self.dir.name, "fma_peak")
        try:
            subprocess.run(["cc", "-O2", "-march=native", "-pthread",
                            os.path.join(REPO, "bench", "fma_peak.c"), "-o", self.exe],
                           check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError):
            self.exe = None

    def gflops(self, threads, cpu=False):
        """GFLOP/s (best of fma_peak's 30 short runs); with cpu, GFLOP per
        CPU-second (one core's rate)."""
        if not self.exe:
            return None
        argv = [self.exe, str(threads)] + (["cpu"] if cpu else [])
        try:
            return float(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
        except (OSError, subprocess.CalledProcessError, ValueError):
            return None


def interleaved_peak_ratios(peak, fn, flop, threads, rounds, repeat):
    """(peak GFLOP/s, fn's GFLOP/s) per round, the two measured back to back
    in each round: this machine's speed drifts by tens of percent over
    seconds, so a ratio is only meaningful within one time window."""
    pairs = []
    for _ in range(rounds):
        p = peak.gflops(threads)
        secs, _ = best_seconds(fn, repeat, budget_s=5)
        if p:
            pairs.append((p, flop / secs / 1e9))
    return pairs


def smelt_bench_gflops(n, threads, repeat):
    """GFLOP/s of a MatMul ONNX model (A, B inputs) compiled by smelt with its
    default schedule: what `smelt bench` measures, run here."""
    try:
        from onnx import TensorProto, helper
    except ImportError:
        return None
    g = helper.make_graph([helper.make_node("MatMul", ["A", "B"], ["C"])], "mm",
                          [helper.make_tensor_value_info("A", TensorProto.FLOAT, [n, n]),
                           helper.make_tensor_value_info("B", TensorProto.FLOAT, [n, n])],
                          [helper.make_tensor_value_info("C", TensorProto.FLOAT, [n, n])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    c = smelt.load(model.SerializeToString()).compile(threads=threads)
    b = c.benchmark(repeat=repeat, warmup=2)
    return 2.0 * n ** 3 / (b.min_ms * 1e-3) / 1e9


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=0, help="0: all cores")
    ap.add_argument("--repeat", type=int, default=20, help="runs per step (best is kept)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds of the peak and the last step")
    ap.add_argument("--no-compare", action="store_true", help="skip the peak and smelt bench")
    ap.add_argument("--print-ir", action="store_true", help="print the loop IR of each step")
    a = ap.parse_args(argv)
    n, threads = a.size, a.threads or os.cpu_count() or 1
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n), dtype=np.float32)
    y = rng.standard_normal((n, n), dtype=np.float32)
    want = x @ y
    flop = 2.0 * n ** 3
    print(f"C = A @ B, {n}x{n}x{n} fp32, {threads} thread(s); best of {a.repeat} runs")
    print(f"  {'step':40s} {'wall clock':>16s} {'':>12s} GFLOP per CPU-second")
    rates, per_core = {}, {}
    for name, step in STEPS:
        s, args = step(n)
        if a.print_ir:
            print(smelt.lower(s, args))
        f = smelt.build(s, args, threads=threads)
        c = np.zeros((n, n), np.float32)
        f(x, y, c)
        np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3 * np.sqrt(n))
        secs, cpu = best_seconds(lambda: f(x, y, c), a.repeat, budget_s=10)
        rates[name] = flop / secs / 1e9
        per_core[name] = flop / max(cpu, 1e-9) / 1e9
        print(f"  {name:40s} {rates[name]:8.2f} GFLOP/s {secs * 1e3:9.1f} ms "
              f"{per_core[name]:8.2f}", flush=True)
    print("  schedule of the last step:")
    print("    " + s.text.strip().replace("\n", "\n    "))
    if not a.no_compare:
        peak = FmaPeak()
        pairs = interleaved_peak_ratios(peak, lambda: f(x, y, c), flop, threads, a.rounds,
                                        a.repeat)
        peak1 = peak.gflops(1, cpu=True)
        bench = smelt_bench_gflops(n, threads, a.repeat)
        last = rates[STEPS[-1][0]]
        if pairs:
            ratios = sorted(r / p for p, r in pairs)
            print(f"the last step against the fp32 FMA peak (bench/fma_peak.c, {threads} "
                  f"thread(s)), {len(pairs)} rounds, each measuring both back to back:")
            for p, r in pairs:
                print(f"    peak {p:7.1f} GFLOP/s  last step {r:7.1f} GFLOP/s  {100 * r / p:3.0f}%")
            print(f"  median {100 * ratios[len(ratios) // 2]:.0f}% of the peak "
                  f"(range {100 * ratios[0]:.0f}-{100 * ratios[-1]:.0f}%)")
        if peak1:
            print(f"fp32 FMA peak per CPU-second (fma_peak.c 1 cpu): {peak1:.1f}; the last step "
                  f"per CPU-second: {100 * per_core[STEPS[-1][0]] / peak1:.0f}% of it (on a "
                  "shared machine the figure the load disturbs least)")
        if bench:
            print(f"smelt's default schedule on a MatMul ONNX model (smelt bench): {bench:.2f} "
                  f"GFLOP/s; the last step: {last / bench:.2f}x")
        print("load average: " + " ".join(open("/proc/loadavg").read().split()[:3])
              if os.path.exists("/proc/loadavg") else "")
    return rates


if __name__ == "__main__":
    main()
