#!/usr/bin/env python3
"""Interleaved A/B timing of two (or more) smelt builds on one model.

On a machine whose speed drifts between runs (other tenants, frequency), one
run per build says little; this alternates `smelt bench` of each build for
ROUNDS rounds (order reversed every other round) and prints the minimum and
the median of the per-round medians.

  python3 bench/ab_bench.py MODEL --rounds 8 OLD/build/smelt build/smelt

A variant may carry options of its own, quoted as one argument, e.g.
"build/smelt --schedule s.txt" against "build/smelt".
"""
import argparse, re, shlex, statistics, subprocess, sys


def bench(smelt, model, repeat, threads):
    binary, *extra = shlex.split(smelt)
    p = subprocess.run([binary, "bench", model, "--repeat", str(repeat), "--threads", str(threads)]
                       + extra, capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) ms", p.stdout)
    if p.returncode != 0 or not m:
        sys.exit("%s bench %s failed: %s" % (smelt, model, (p.stderr or p.stdout).strip()))
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("smelt", nargs="+", help="smelt binaries (with options) to compare")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per `smelt bench`")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    times = [[] for _ in a.smelt]  # by position: the same binary may be given twice
    order = list(range(len(a.smelt)))
    for r in range(a.rounds):
        for i in (order if r % 2 == 0 else order[::-1]):
            times[i].append(bench(a.smelt[i], a.model, a.repeat, a.threads))
    for b, t in zip(a.smelt, times):
        print("%-40s min %8.3f  median %8.3f ms   rounds: %s" %
              (b, min(t), statistics.median(t), " ".join("%.3f" % x for x in t)))


if __name__ == "__main__":
    main()
