#!/usr/bin/env python3
"""Checks smelt's CUDA packages on a machine with an NVIDIA GPU.

Two steps, on two machines:

  prepare DIR   (here: smelt is built, torch and onnxruntime are installed)
      compiles test models to CUDA packages (`smelt compile --target cuda`)
      under DIR, with their inputs and the expected outputs (the test data:
      PyTorch's or ONNX Runtime's outputs) as raw files, and the small
      models' model.onnx for ONNX Runtime timings.
  run DIR       (the GPU machine: nvcc, make, python3 with numpy; onnxruntime
                optional; smelt is not needed)
      builds every package with nvcc for sm_90 (CUDA_ARCH), runs it (WARMUP
      untimed runs, then --runs timed ones; a run is a whole model_run:
      inputs to the device, the kernels, outputs back), compares the outputs
      with the expected ones (max abs/rel error per output, pass when every
      element is within atol + rtol * |expected|), times ONNX Runtime on the
      CPU for context, and prints a PASS/FAIL summary (also written to
      $OUT/cuda_device_check.txt when $OUT is set).  Without a GPU it builds
      the packages, says that no GPU was found, and stops there.

scripts/cuda_device_check.sh is the entry point; see its header.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RTOL, ATOL = 1e-3, 1e-4
ONNX_MAX_BYTES = 12 << 20  # model.onnx files shipped for ONNX Runtime (the carry limit)


def log(*a):
    print(*a, flush=True)


# ---- prepare (here) ----

def tensor_files(model_dir, out_dir):
    """The test data's inputs and outputs as raw files, and their description."""
    import numpy as np
    from onnx import TensorProto, numpy_helper
    data = os.path.join(model_dir, "test_data_set_0")
    meta = {"inputs": [], "outputs": []}
    for kind, prefix, name in (("inputs", "input_", "in"), ("outputs", "output_", "expected")):
        i = 0
        while os.path.exists(os.path.join(data, "%s%d.pb" % (prefix, i))):
            t = TensorProto()
            with open(os.path.join(data, "%s%d.pb" % (prefix, i)), "rb") as f:
                t.ParseFromString(f.read())
            a = np.ascontiguousarray(numpy_helper.to_array(t))
            a.tofile(os.path.join(out_dir, "%s%d.bin" % (name, i)))
            meta[kind].append({"name": t.name, "dtype": str(a.dtype), "shape": list(a.shape)})
            i += 1
    return meta


def gen_models(work, with_resnet):
    """(name, model dir) of the models to check."""
    models = [("tiny_cnn", os.path.join(ROOT, "models", "tiny_cnn"))]
    gen = os.path.join(work, "gen")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpu", "gen_gpu_models.py"), gen,
                    "--big"], check=True, stdout=subprocess.DEVNULL)
    for m in ("mlp", "eltwise", "norm_reduce", "cnn_pool", "gather", "long_reduce", "lstm", "wide_mlp"):
        models.append((m, os.path.join(gen, m)))
    torch_names = ["bert_tiny_like", "gpt2_tiny_like"] + (["resnet18"] if with_resnet else [])
    torch_models = os.path.join(work, "torch")
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests", "models", "gen_models.py"),
                        "--out", torch_models, "--only", ",".join(torch_names)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for m in torch_names:
        if os.path.exists(os.path.join(torch_models, m, "model.onnx")):
            models.append((m, os.path.join(torch_models, m)))
        else:
            log("prepare: no %s (tests/models/gen_models.py failed):\n%s" % (m, r.stdout[-2000:]))
    return models


def prepare(args):
    out = os.path.abspath(args.dir)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    work = os.path.join(out, "_work")
    manifest = []
    for name, mdir in gen_models(work, not args.no_resnet):
        d = os.path.join(out, name)
        os.makedirs(os.path.join(d, "data"))
        r = subprocess.run([args.smelt, "compile", os.path.join(mdir, "model.onnx"), "--target", "cuda",
                            "-o", os.path.join(d, "pkg")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            sys.exit("prepare: smelt compile --target cuda failed for %s:\n%s" % (name, r.stdout))
        meta = tensor_files(mdir, os.path.join(d, "data"))
        onnx_path = os.path.join(mdir, "model.onnx")
        meta["onnx"] = os.path.getsize(onnx_path) <= ONNX_MAX_BYTES
        if meta["onnx"]:
            shutil.copy(onnx_path, os.path.join(d, "model.onnx"))
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        manifest.append(name)
        log("prepare: %-15s package, %d input(s), %d output(s)%s" %
            (name, len(meta["inputs"]), len(meta["outputs"]),
             "" if meta["onnx"] else " (model.onnx too big to ship: no ONNX Runtime timing)"))
    shutil.rmtree(work)
    shutil.copy(os.path.join(ROOT, "scripts", "cuda_device_runner.c"), os.path.join(out, "runner.c"))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"models": manifest, "rtol": RTOL, "atol": ATOL}, f, indent=1)
    size = sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(out) for fn in fns)
    log("prepare: wrote %s (%.1f MiB)" % (out, size / (1 << 20)))


# ---- run (the GPU machine) ----

def find_nvcc():
    nvcc = shutil.which("nvcc")
    if not nvcc and os.path.exists("/usr/local/cuda/bin/nvcc"):
        os.environ["PATH"] += os.pathsep + "/usr/local/cuda/bin"
        nvcc = "/usr/local/cuda/bin/nvcc"
    return nvcc


def gpu_names():
    """The GPUs nvidia-smi lists, else what nvcc's device query finds ([]
    when neither finds one: no GPU or no driver)."""
    for cmd in (["nvidia-smi", "-L"], ["__nvcc_device_query"]):
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode != 0:
            continue
        if cmd[0] == "nvidia-smi":
            found = [l for l in r.stdout.splitlines() if l.startswith("GPU ")]
        else:  # compute capabilities, e.g. "90"
            found = ["GPU sm_%s (nvcc device query)" % c for c in r.stdout.replace(",", " ").split()]
        if found:
            return found
    return []


def build(d, runner, arch):
    """Builds the package and the runner; (ok, log, seconds)."""
    pkg = os.path.join(d, "pkg")
    t0 = time.time()
    cmds = [["make", "-s", "-C", pkg, "lib", "CUDA_ARCH=" + arch],
            ["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I", pkg, "-c", runner, "-o",
             os.path.join(pkg, "runner.o")],
            ["nvcc", "-arch=" + arch, "-o", os.path.join(pkg, "check_run"), os.path.join(pkg, "runner.o"),
             os.path.join(pkg, "libmodel.a"), "-lpthread", "-lm"]]
    for c in cmds:
        r = subprocess.run(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0 or "warning" in r.stdout.lower():
            return False, "$ %s\n%s" % (" ".join(c), r.stdout[-3000:]), time.time() - t0
    return True, "", time.time() - t0


def compare(d, meta, rtol, atol):
    """Per output: (name, max abs error, max rel error, ok)."""
    import numpy as np
    res = []
    for i, o in enumerate(meta["outputs"]):
        want = np.fromfile(os.path.join(d, "data", "expected%d.bin" % i), dtype=o["dtype"])
        got_path = os.path.join(d, "data", "out%d.bin" % i)
        got = np.fromfile(got_path, dtype=o["dtype"]) if os.path.exists(got_path) else None
        if got is None or got.size != want.size:
            res.append((o["name"], float("inf"), float("inf"), False))
            continue
        w, g = want.astype(np.float64), got.astype(np.float64)
        diff = np.abs(g - w)
        rel = diff / np.maximum(np.abs(w), 1e-12)
        ok = bool(np.all(diff <= atol + rtol * np.abs(w))) and not np.any(np.isnan(g) != np.isnan(w))
        res.append((o["name"], float(np.nanmax(diff)) if diff.size else 0.0,
                    float(np.nanmax(rel)) if rel.size else 0.0, ok))
    return res


def ort_ms(d, meta, runs, provider="CPUExecutionProvider"):
    """Median ms of ONNX Runtime with `provider` on the same inputs, or None
    (no model.onnx shipped, no onnxruntime, or not that provider)."""
    if not meta.get("onnx"):
        return None
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError:
        return None
    if provider not in ort.get_available_providers():
        return None
    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=[provider])
    feed = {}
    for i, inp in enumerate(meta["inputs"]):
        a = np.fromfile(os.path.join(d, "data", "in%d.bin" % i), dtype=inp["dtype"])
        feed[inp["name"]] = a.reshape(inp["shape"])
    for _ in range(3):
        sess.run(None, feed)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feed)
        ts.append((time.perf_counter() - t0) * 1e3)
    return sorted(ts)[len(ts) // 2]


def run(args):
    top = os.path.abspath(args.dir)
    with open(os.path.join(top, "manifest.json")) as f:
        manifest = json.load(f)
    rtol, atol = manifest["rtol"], manifest["atol"]
    lines = []

    def say(s):
        log(s)
        lines.append(s)

    if not find_nvcc():
        say("cuda_device_check: no nvcc (the CUDA toolkit): nothing built, nothing run")
        return 0
    gpus = gpu_names()
    runner = os.path.join(top, "runner.c")
    models = manifest["models"]
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as ex:
        built = dict(zip(models, ex.map(lambda m: build(os.path.join(top, m), runner, args.arch),
                                        models)))
    for m in models:
        ok, text, secs = built[m]
        say("build %-15s %s (%.1f s)%s" % (m, "ok" if ok else "FAILED", secs, "" if ok else "\n" + text))
    if not gpus:
        say("cuda_device_check: the packages built for %s, but no GPU was found (nvidia-smi -L "
            "lists none): nothing ran" % args.arch)
        write_summary(lines)
        return 0 if all(b[0] for b in built.values()) else 1
    say("GPU: %s" % "; ".join(gpus))
    say("%-15s %-6s %10s %10s %11s %12s %12s  %s" % ("model", "result", "smelt ms", "ORT cpu ms",
                                                    "ORT cuda ms", "max abs err", "max rel err",
                                                    "outputs"))
    failed = 0
    for m in models:
        d = os.path.join(top, m)
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        if not built[m][0]:
            say("%-15s %-6s (the package did not build)" % (m, "FAIL"))
            failed += 1
            continue
        r = subprocess.run([os.path.join(d, "pkg", "check_run"), os.path.join(d, "pkg"),
                            os.path.join(d, "data"), str(args.runs)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        if r.returncode != 0:
            say("%-15s %-6s the run failed (exit %d):\n%s" % (m, "FAIL", r.returncode, r.stdout[-2000:]))
            failed += 1
            continue
        fields = r.stdout.split()
        ms = float(fields[fields.index("median_ms") + 1])
        res = compare(d, meta, rtol, atol)
        ok = all(x[3] for x in res)
        failed += not ok
        ort = ort_ms(d, meta, args.runs)
        ort_cuda = ort_ms(d, meta, args.runs, "CUDAExecutionProvider")
        say("%-15s %-6s %10.3f %10s %11s %12.3g %12.3g  %s" % (
            m, "PASS" if ok else "FAIL", ms, "%.3f" % ort if ort is not None else "n/a",
            "%.3f" % ort_cuda if ort_cuda is not None else "n/a",
            max(x[1] for x in res), max(x[2] for x in res),
            ", ".join("%s: abs %.3g rel %.3g%s" % (n, a, rl, "" if k else " FAIL") for n, a, rl, k in res)))
    say("timings: median of %d runs after 3 warm-up runs; smelt's run includes the copies of the "
        "inputs to the device and of the outputs back; ORT cuda: n/a without onnxruntime's "
        "CUDA execution provider (onnxruntime-gpu); tolerance |got - want| <= %g + %g |want|"
        % (args.runs, atol, rtol))
    say("cuda_device_check: %s (%d of %d models passed)" %
        ("PASS" if failed == 0 else "FAIL", len(models) - failed, len(models)))
    write_summary(lines)
    return 1 if failed else 0


def write_summary(lines):
    out = os.environ.get("OUT")
    if out and os.path.isdir(out):
        with open(os.path.join(out, "cuda_device_check.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("dir")
    p.add_argument("--smelt", default=os.path.join(ROOT, "build", "smelt"))
    p.add_argument("--no-resnet", action="store_true", help="leave ResNet-18 out (47 MB of weights)")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--runs", type=int, default=50)
    r.add_argument("--arch", default="sm_90")
    a = ap.parse_args()
    sys.exit(prepare(a) if a.cmd == "prepare" else run(a))


if __name__ == "__main__":
    main()
