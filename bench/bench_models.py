#!/usr/bin/env python3
"""Latency of smelt's compiled models against its reference kernels (and
ONNX Runtime when its Python package is importable), same machine, same
run, interleaved, medians.  With --records, also smelt with the tuning
records applied (`smelt bench --records`).  Each model is measured in
--rounds rounds of default (, tuned) and ORT, interleaved; each figure is the
median of the rounds' medians.
Prints a Markdown table for docs/benchmarks.md.

usage: bench_models.py SMELT MODELS_DIR [--models a,b] [--repeat N] [--threads N]
                       [--records FILE] [--rounds N] [--no-reference]
"""
import argparse, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import cpu_name, ort_median, smelt_bench, smelt_median  # noqa: E402


def tuned_median(smelt, model, repeat, threads, records):
    ms, err = smelt_bench(smelt, model, repeat, threads, ["--records", records])
    if ms is None:
        raise RuntimeError("smelt bench --records %s: %s" % (model, err))
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("smelt")
    ap.add_argument("models_dir")
    ap.add_argument("--models", default="")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--records", help="tuning records (smelt tune -o FILE)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-reference", action="store_true", help="skip the reference kernels")
    a = ap.parse_args()
    names = a.models.split(",") if a.models else sorted(os.listdir(a.models_dir))
    print(f"date {time.strftime('%Y-%m-%d')}, CPU {cpu_name()}, {os.cpu_count()} cores, "
          f"threads {a.threads}, repeat {a.repeat}, rounds {a.rounds}")
    cols = ["model", "smelt compiled (ms)"]
    if a.records:
        cols += ["smelt tuned (ms)", "tuned speed-up"]
    if not a.no_reference:
        cols += ["smelt reference (ms)", "reference / compiled"]
    cols += ["ONNX Runtime (ms)", "compiled / ORT"] + (["tuned / ORT"] if a.records else [])
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for name in names:
        model = os.path.join(a.models_dir, name, "model.onnx")
        if not os.path.exists(model):
            continue
        comp, tuned, ort = [], [], []
        for _ in range(a.rounds):
            comp.append(smelt_median(a.smelt, model, False, a.repeat, a.threads))
            if a.records:
                tuned.append(tuned_median(a.smelt, model, a.repeat, a.threads, a.records))
            o = ort_median(model, a.repeat, a.threads)
            if o:
                ort.append(o)
        c = statistics.median(comp)
        t = statistics.median(tuned) if tuned else None
        o = statistics.median(ort) if ort else None
        row = [name, f"{c:.2f}"]
        if t:
            row += [f"{t:.2f}", f"{c / t:.2f}x"]
        if not a.no_reference:
            ref = smelt_median(a.smelt, model, True, max(3, a.repeat // 4), a.threads)
            row += [f"{ref:.2f}", f"{ref / c:.1f}x"]
        row += [f"{o:.2f}" if o else "n/a", f"{c / o:.2f}" if o else "n/a"]
        if t:
            row.append(f"{t / o:.2f}" if o else "n/a")
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
