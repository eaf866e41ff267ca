#!/usr/bin/env python3
"""Latency of smelt's compiled models against its reference kernels (and
ONNX Runtime when its Python package is importable), same machine, same
run, interleaved, medians.  Prints a Markdown table for docs/benchmarks.md.

usage: bench_models.py SMELT MODELS_DIR [--models a,b] [--repeat N] [--threads N]
"""
import argparse, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import cpu_name, ort_median, smelt_median  # noqa: E402

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("smelt")
    ap.add_argument("models_dir")
    ap.add_argument("--models", default="")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    names = a.models.split(",") if a.models else sorted(os.listdir(a.models_dir))
    print(f"date {time.strftime('%Y-%m-%d')}, CPU {cpu_name()}, {os.cpu_count()} cores, "
          f"threads {a.threads}, repeat {a.repeat}")
    print("| model | smelt compiled (ms) | smelt reference (ms) | reference / compiled | ONNX Runtime (ms) | compiled / ORT |")
    print("|---|---|---|---|---|---|")
    for name in names:
        model = os.path.join(a.models_dir, name, "model.onnx")
        if not os.path.exists(model):
            continue
        comp = smelt_median(a.smelt, model, False, a.repeat, a.threads)
        ref = smelt_median(a.smelt, model, True, max(3, a.repeat // 4), a.threads)
        ort = ort_median(model, a.repeat, a.threads)
        ort_s = f"{ort:.2f}" if ort else "n/a"
        ratio = f"{comp / ort:.2f}" if ort else "n/a"
        print(f"| {name} | {comp:.2f} | {ref:.2f} | {ref / comp:.1f}x | {ort_s} | {ratio} |", flush=True)

if __name__ == "__main__":
    sys.exit(main())
