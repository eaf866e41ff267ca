#!/usr/bin/env python3
"""Latency of smelt's compiled models against its reference kernels (and
ONNX Runtime when its Python package is importable), same machine, same
run, interleaved, medians.  Prints a Markdown table for docs/benchmarks.md.

usage: bench_models.py SMELT MODELS_DIR [--models a,b] [--repeat N] [--threads N]
"""
import argparse, os, platform, re, subprocess, sys, time

def smelt_median(smelt, model, reference, repeat, threads):
    cmd = [smelt, "bench", model, "--repeat", str(repeat), "--threads", str(threads)]
    if reference:
        cmd.append("--reference")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))

def ort_median(model, repeat, threads):
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError:
        return None
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if "int64" in i.type:
            feeds[i.name] = np.zeros(shape, dtype=np.int64)
        else:
            feeds[i.name] = np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32)
    for _ in range(3):
        sess.run(None, feeds)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]

def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()

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
