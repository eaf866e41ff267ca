#!/usr/bin/env python3
"""Checks smelt's CUDA packages on a machine with an NVIDIA GPU.

Two steps, on two machines:

  prepare DIR   (here: smelt is built, torch and onnxruntime are installed)
      compiles test models to CUDA packages (`smelt compile --target cuda`)
      under DIR twice: pkg (the default schedules: matrix products and
      convolutions in shared-memory tiles) and pkg_plain (SMELT_GPU_TILE=0:
      one thread per output, the schedules before tiling), with their
      inputs, the expected outputs (the test data: PyTorch's or ONNX
      Runtime's outputs) as raw files, each model's GFLOP count, and the
      small models' model.onnx for ONNX Runtime timings.  Large weights do
      not travel (the device tool carries 64 MiB): the big MatMuls' weights
      and inputs come from a counter-based generator (gen_values) run again
      on the GPU machine, which computes their expected outputs with numpy;
      ResNet-18/50's weights.bin is regenerated there from each 64 KiB
      chunk's RMS (random values of the same scale), so those two are
      checked tiled against plain (same weights) rather than against
      PyTorch (smelt check --target opencl does that here, on PoCL).
  run DIR       (the GPU machine: nvcc, make, python3 with numpy; onnxruntime
                optional; smelt is not needed)
      builds every package with nvcc for sm_90 (CUDA_ARCH) with
      -DSMELT_GPU_TIMING (CUDA events around each run's kernels), runs it
      (WARMUP untimed runs, then --runs timed ones; a run is a whole
      model_run: inputs to the device, the kernels, outputs back), compares
      the outputs, reports the median run and kernel times (and, for models
      with a tiled stage, each call's -- fused function's -- kernel time in
      every package side by side, with its tile and layer: further runs
      with model_gpu_time_calls) and the kernels'
      GFLOP/s for both schedules, times ONNX Runtime on the CPU for context
      and cuBLAS's sgemm on the MatMul shapes when cuBLAS is installed, and
      prints a PASS/FAIL summary (also written to $OUT/cuda_device_check.txt
      when $OUT is set).  Without a GPU it builds the packages, says that no
      GPU was found, and stops there.

scripts/cuda_device_check.sh is the entry point; see its header.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RTOL, ATOL = 1e-3, 1e-4
ONNX_MAX_BYTES = 12 << 20  # model.onnx files shipped for ONNX Runtime (the carry limit)
WEIGHTS_MAX_BYTES = 8 << 20  # larger weights are regenerated on the GPU machine
CHUNK = 16384  # floats per RMS chunk of regenerated weights
# MatMuls: (name, m, k, n, bias, batch) -- y = x[batch, m, k] @ w[k, n] (+ b)
MATMULS = [("mm1024", 1024, 1024, 1024, False, None),
           ("bert_ffn1", 128, 768, 3072, True, 1),
           ("bert_ffn2", 128, 3072, 768, True, 1)]
# other tiles measured beside the rules' choice (SMELT_GPU_TILE=ty,txh,txw,tm,tn:
# threads on rows, on output rows, on columns; registers on rows, on columns;
# a tile applies to each stage it fits, the others keep the rules' choice), or
# "block=N": the rules' choices with blocks of N threads (SMELT_GPU_BLOCK)
OTHER_TILES = {}


def gen_values(seed, n, scale=1.0):
    """n float32 values in [-scale, scale): a counter-based hash (splitmix64's
    finaliser), the same on every machine and numpy version."""
    import numpy as np
    i = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = i * np.uint64(0x9E3779B97F4A7C15) + np.uint64((seed * 0x632BE59BD9B4E019 + 1) % (1 << 64))
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    u = (x >> np.uint64(40)).astype(np.float64) / float(1 << 24) * 2.0 - 1.0
    return (u * scale).astype(np.float32)


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


def matmul_model(out_dir, name, m, k, n, bias, batch):
    """A MatMul (+ bias) model whose weights are gen_values(1, ...) (and
    gen_values(2, ...) for the bias); no test data (made on the GPU machine)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = gen_values(1, k * n, 1.0 / k ** 0.5).reshape(k, n)
    inits = [numpy_helper.from_array(w, "w")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm" if bias else "y"])]
    if bias:
        inits.append(numpy_helper.from_array(gen_values(2, n), "b"))
        nodes.append(helper.make_node("Add", ["mm", "b"], ["y"]))
    lead = [batch] if batch else []
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, lead + [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, lead + [m, n])], inits)
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(mo, os.path.join(d, "model.onnx"))
    return d


def model_gflop(onnx_path):
    """Multiply-adds x 2 of the Conv, MatMul and Gemm nodes, in GFLOP."""
    import onnx
    m = onnx.shape_inference.infer_shapes(onnx.load(onnx_path))
    shapes = {}
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    flops = 0
    for nd in m.graph.node:
        out = shapes.get(nd.output[0])
        if not out or any(d <= 0 for d in out):
            continue
        n_out = 1
        for d in out:
            n_out *= d
        if nd.op_type == "Conv":
            w = shapes.get(nd.input[1])
            if w:
                flops += 2 * n_out * w[1] * w[2] * w[3]
        elif nd.op_type in ("MatMul", "Gemm"):
            a = shapes.get(nd.input[0])
            trans_a = any(at.name == "transA" and at.i for at in nd.attribute)
            if a:
                flops += 2 * n_out * (a[-2] if trans_a else a[-1])
    return flops / 1e9


def gen_models(work, with_resnet):
    """(name, model dir) of the models to check."""
    models = [("tiny_cnn", os.path.join(ROOT, "models", "tiny_cnn"))]
    gen = os.path.join(work, "gen")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "gpu", "gen_gpu_models.py"), gen,
                    "--big"], check=True, stdout=subprocess.DEVNULL)
    for m in ("mlp", "eltwise", "norm_reduce", "cnn_pool", "gather", "long_reduce", "lstm", "tiled_mm",
              "tiled_conv", "wide_mlp"):
        models.append((m, os.path.join(gen, m)))
    for name, m, k, n, bias, batch in MATMULS:
        models.append((name, matmul_model(os.path.join(work, "mm"), name, m, k, n, bias, batch)))
    torch_names = ["bert_tiny_like", "gpt2_tiny_like"] + (["resnet18", "resnet50"] if with_resnet else [])
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


def compile_package(smelt, onnx_path, pkg, tile):
    """Compiles the package; {function: its tile decision} (SMELT_DEBUG=2)."""
    env = dict(os.environ)
    env["SMELT_DEBUG"] = "2"
    if tile is not None and tile.startswith("block="):
        env["SMELT_GPU_BLOCK"] = tile[len("block="):]
    elif tile is not None:
        env["SMELT_GPU_TILE"] = tile
    r = subprocess.run([smelt, "compile", onnx_path, "--target", "cuda", "-o", pkg], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, env=env)
    if r.returncode != 0:
        sys.exit("prepare: smelt compile --target cuda failed for %s:\n%s" % (onnx_path, r.stdout[-4000:]))
    return tile_decisions(r.stdout)


def tile_decisions(text):
    """{function: "TILE" or "plain" ...} from SMELT_DEBUG=2's lines: "scheduling
    fN_op (nodes)", then its reductions' "GPU tile for 'x' (extents): tiled (ty x
    txh x txw threads, tm x tn registers, k step kt, ...)" (the last line of a
    reduction wins; a group whose tiled schedule did not replay is plain)."""
    out, cur = {}, None
    tile = re.compile(r"smelt: GPU tile for '([^']*)' \(([^)]*)\): (tiled|not tiled)(?:: [^(]*)? \((\d+) x (\d+) "
                      r"x (\d+) threads, (\d+) x (\d+) registers, k step (\d+)")
    for line in text.splitlines():
        m = re.match(r"smelt: scheduling (\S+) ", line)
        if m:
            cur = m.group(1)
            out[cur] = {}
            continue
        m = tile.match(line)
        if m and cur:
            ty, txh, txw, tm, tn, kt = m.groups()[3:]
            out[cur][m.group(1)] = ("%sx%sx%s thr %sx%s reg k%s" % (ty, txh, txw, tm, tn, kt)
                                    if m.group(3) == "tiled" else "plain")
        elif cur and "GPU schedule level 3 does not replay" in line:
            out[cur] = {k: "plain (tile refused)" for k in out[cur]}
    return {f: "; ".join(v.values()) for f, v in out.items() if v}


def layer_shapes(onnx_path):
    """{node name: "KxK/sS Cin->Cout HxW"} of the Conv nodes (out: the output
    map), "MxK->N" of MatMul/Gemm."""
    import onnx
    m = onnx.shape_inference.infer_shapes(onnx.load(onnx_path))
    shapes = {}
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    out = {}
    for nd in m.graph.node:
        o, w = shapes.get(nd.output[0]), shapes.get(nd.input[1]) if len(nd.input) > 1 else None
        if nd.op_type == "Conv" and o and w and len(o) == 4 and len(w) == 4:
            strides = [a.ints for a in nd.attribute if a.name == "strides"]
            st = strides[0][0] if strides and strides[0] else 1
            out[nd.name] = "%dx%d/s%d %d->%d %dx%d" % (w[2], w[3], st, w[1], w[0], o[2], o[3])
        elif nd.op_type in ("MatMul", "Gemm") and o:
            a = shapes.get(nd.input[0])
            out[nd.name] = "%sx%s->%s" % (o[-2] if len(o) > 1 else 1, (a or ["?"])[-1], o[-1])
    return out


def weight_segments(onnx_path, weights):
    """Where each initializer's bytes lie in weights.bin, if the file is just
    them and zeros: [(offset, name, count)], else None."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    m = onnx.load(onnx_path)
    covered = np.zeros(len(weights), dtype=bool)
    segs = []
    for t in m.graph.initializer:
        raw = np.ascontiguousarray(numpy_helper.to_array(t)).tobytes()
        off = weights.find(raw)
        if off < 0 or off % 4:
            return None
        segs.append((off, t.name, len(raw) // 4))
        covered[off:off + len(raw)] = True
    rest = np.frombuffer(weights, dtype=np.uint8)[~covered]
    return segs if not rest.any() else None


def chunk_rms(weights):
    import numpy as np
    n = len(weights) // 4
    w = np.frombuffer(weights[:n * 4], dtype=np.float32).astype(np.float64)
    pad = (-n) % CHUNK
    w = np.concatenate([w, np.zeros(pad)]).reshape(-1, CHUNK)
    return [float(x) for x in np.sqrt((w * w).mean(axis=1))]


def prepare(args):
    out = os.path.abspath(args.dir)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    work = os.path.join(out, "_work")
    manifest = []
    matmuls = {m[0]: m for m in MATMULS}
    for name, mdir in gen_models(work, not args.no_resnet):
        d = os.path.join(out, name)
        os.makedirs(os.path.join(d, "data"))
        onnx_path = os.path.join(mdir, "model.onnx")
        decisions = {"pkg": compile_package(args.smelt, onnx_path, os.path.join(d, "pkg"), None)}
        compile_package(args.smelt, onnx_path, os.path.join(d, "pkg_plain"), "0")
        meta = {"gflop": model_gflop(onnx_path), "tiles": OTHER_TILES.get(name, [])}
        for i, tile in enumerate(meta["tiles"]):
            decisions["pkg_tile%d" % i] = compile_package(args.smelt, onnx_path,
                                                          os.path.join(d, "pkg_tile%d" % i), tile)
            os.remove(os.path.join(d, "pkg_tile%d" % i, "weights.bin"))
        meta["decisions"] = decisions
        meta["layers"] = layer_shapes(onnx_path)
        if name in matmuls:
            _, m, k, n, bias, batch = matmuls[name]
            meta.update({"inputs": [{"name": "x", "dtype": "float32", "shape": ([batch] if batch else []) + [m, k]}],
                         "outputs": [{"name": "y", "dtype": "float32", "shape": ([batch] if batch else []) + [m, n]}],
                         "matmul": {"m": m, "k": k, "n": n, "bias": bias, "batch": batch}})
        else:
            meta.update(tensor_files(mdir, os.path.join(d, "data")))
        # weights: shipped once (both packages read the same file), or
        # regenerated on the GPU machine
        wpath = os.path.join(d, "pkg", "weights.bin")
        with open(wpath, "rb") as f:
            weights = f.read()
        with open(os.path.join(d, "pkg_plain", "weights.bin"), "rb") as f:
            if f.read() != weights:
                sys.exit("prepare: %s: the two packages' weights differ" % name)
        os.remove(os.path.join(d, "pkg_plain", "weights.bin"))
        meta["weight_bytes"] = len(weights)
        if name in matmuls:
            segs = weight_segments(onnx_path, weights)
            if segs is None:
                sys.exit("prepare: %s: weights.bin is not the initializers' bytes" % name)
            meta["weights"] = {"kind": "segments", "segments": segs,
                               "values": {"w": [1, 1.0 / k ** 0.5], "b": [2, 1.0]}}
            os.remove(wpath)
        elif len(weights) > WEIGHTS_MAX_BYTES:
            meta["weights"] = {"kind": "chunk_rms", "chunk": CHUNK, "rms": chunk_rms(weights)}
            os.remove(wpath)
        else:
            meta["weights"] = {"kind": "shipped"}
        meta["onnx"] = os.path.getsize(onnx_path) <= ONNX_MAX_BYTES and name not in matmuls
        if meta["onnx"]:
            shutil.copy(onnx_path, os.path.join(d, "model.onnx"))
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f)
        manifest.append(name)
        log("prepare: %-15s packages (tiled, plain), %.3f GFLOP, weights %s%s" %
            (name, meta["gflop"], meta["weights"]["kind"],
             "" if meta["onnx"] else " (no model.onnx shipped: no ONNX Runtime timing)"))
    shutil.rmtree(work)
    shutil.copy(os.path.join(ROOT, "scripts", "cuda_device_runner.c"), os.path.join(out, "runner.c"))
    shutil.copy(os.path.join(ROOT, "scripts", "cublas_bench.cu"), os.path.join(out, "cublas_bench.cu"))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"models": manifest, "rtol": RTOL, "atol": ATOL,
                   "smelt": subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                                           stdout=subprocess.PIPE, text=True).stdout.strip()}, f, indent=1)
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


NVCC_FLAGS = "-O3 -arch=%s -Werror all-warnings -Xcompiler -Wall,-Wextra -DSMELT_GPU_TIMING"


def build(d, pkg_name, runner, arch):
    """Builds a package (kernels timed: -DSMELT_GPU_TIMING) and the runner;
    (ok, log, seconds)."""
    pkg = os.path.join(d, pkg_name)
    t0 = time.time()
    cmds = [["make", "-s", "-C", pkg, "lib", "CUDA_ARCH=" + arch, "NVCCFLAGS=" + NVCC_FLAGS % arch],
            ["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I", pkg, "-c", runner, "-o",
             os.path.join(pkg, "runner.o")],
            ["nvcc", "-arch=" + arch, "-o", os.path.join(pkg, "check_run"), os.path.join(pkg, "runner.o"),
             os.path.join(pkg, "libmodel.a"), "-lpthread", "-lm"]]
    for c in cmds:
        r = subprocess.run(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0 or "warning" in r.stdout.lower():
            return False, "$ %s\n%s" % (" ".join(c), r.stdout[-3000:]), time.time() - t0
    return True, "", time.time() - t0


def materialize(d, meta):
    """Writes what was not shipped: weights.bin (both packages), the big
    MatMuls' inputs and expected outputs."""
    import numpy as np
    w = meta["weights"]
    wpath = os.path.join(d, "pkg", "weights.bin")
    if w["kind"] == "segments":
        buf = np.zeros(meta["weight_bytes"] // 4, dtype=np.float32)
        arrays = {}
        for off, name, count in w["segments"]:
            seed, scale = w["values"][name]
            arrays[name] = gen_values(seed, count, scale)
            buf[off // 4:off // 4 + count] = arrays[name]
        buf.tofile(wpath)
        mm = meta["matmul"]
        x = gen_values(4, (mm["batch"] or 1) * mm["m"] * mm["k"])
        x.tofile(os.path.join(d, "data", "in0.bin"))
        y = x.astype(np.float64).reshape(-1, mm["k"]) @ arrays["w"].astype(np.float64).reshape(mm["k"], mm["n"])
        if mm["bias"]:
            y += arrays["b"].astype(np.float64)
        y.astype(np.float32).tofile(os.path.join(d, "data", "expected0.bin"))
    elif w["kind"] == "chunk_rms":
        n = meta["weight_bytes"] // 4
        v = gen_values(3, n).astype(np.float64)
        rms = np.repeat(np.array(w["rms"]) * 3 ** 0.5, w["chunk"])[:n]
        (v * rms).astype(np.float32).tofile(wpath)
    for i in range(-1, len(meta.get("tiles", []))):
        other = os.path.join(d, "pkg_plain" if i < 0 else "pkg_tile%d" % i, "weights.bin")
        if not os.path.exists(other):
            shutil.copy(wpath, other)


def read_outputs(d, meta, sub):
    import numpy as np
    res = []
    for i, o in enumerate(meta["outputs"]):
        path = os.path.join(d, sub, "out%d.bin" % i)
        res.append(np.fromfile(path, dtype=o["dtype"]) if os.path.exists(path) else None)
    return res


def compare(got, want, rtol, atol, names):
    """Per output: (name, max abs error, max rel error, ok); want None: the
    output was not written."""
    import numpy as np
    res = []
    for name, g, w in zip(names, got, want):
        if g is None or w is None or g.size != w.size:
            res.append((name, float("inf"), float("inf"), False))
            continue
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        diff = np.abs(g64 - w64)
        rel = diff / np.maximum(np.abs(w64), 1e-12)
        ok = bool(np.all(diff <= atol + rtol * np.abs(w64))) and not np.any(np.isnan(g64) != np.isnan(w64))
        res.append((name, float(np.nanmax(diff)) if diff.size else 0.0,
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


def run_package(d, pkg_name, out_sub, runs):
    """(ok, median run ms, median kernel ms or None, log, calls): calls the
    runner's per-call lines, [(function, ms, "fN name (nodes)")]."""
    os.makedirs(os.path.join(d, out_sub), exist_ok=True)
    r = subprocess.run([os.path.join(d, pkg_name, "check_run"), os.path.join(d, pkg_name),
                        os.path.join(d, "data"), str(runs), os.path.join(d, out_sub)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if r.returncode != 0:
        return False, None, None, "exit %d: %s" % (r.returncode, r.stdout[-2000:]), []
    f = r.stdout.split()
    kms = float(f[f.index("kernel_ms") + 1]) if "kernel_ms" in f else -1
    calls = []
    for line in r.stdout.splitlines():
        c = line.split(" ", 3)
        if c[0] == "call" and len(c) == 4:
            calls.append((c[3].split(" ")[1] if " " in c[3] else c[3], float(c[2]), c[3]))
    return True, float(f[f.index("median_ms") + 1]), (kms if kms >= 0 else None), "", calls


def call_layer(meta, text):
    """The layer of a call "fN name (first node .. last node (n nodes))": its
    first node's shape (layer_shapes), else the nodes."""
    nodes = text[text.find("(") + 1:] if "(" in text else ""
    first = nodes.split(" .. ")[0].rstrip(")")
    return "%-22s %s" % (meta.get("layers", {}).get(first, ""), first)


def per_call_table(say, meta, variants):
    """Each call's device time in each package, side by side (variants: [(label,
    package, calls)], the first two the tiled default and plain), the tile each
    package's rules gave it, and the sums: each package's, and the best
    package's per call."""
    calls = variants[0][2]
    if not calls or any(len(v[2]) != len(calls) for v in variants):
        say("  (no per-call times: %s)" % ", ".join("%s %d calls" % (v[0], len(v[2])) for v in variants))
        return
    decisions = meta.get("decisions", {})
    say("  per call, ms (median of the runs timed per call); ratio: plain / tiled; tile: the default's")
    say("  %-4s %-20s %s | %6s | %-34s | %s" % ("call", "function", " ".join("%8s" % v[0][:8] for v in variants),
                                              "ratio", "tile (threads, registers, k step)", "layer"))
    best = 0.0
    for i, (fn, _, text) in enumerate(calls):
        t = [v[2][i][1] for v in variants]
        best += min(t)
        say("  %-4d %-20s %s | %6s | %-34s | %s" % (
            i, fn[:20], " ".join("%8.4f" % x for x in t), "%.2fx" % (t[1] / t[0]) if t[0] > 0 else "n/a",
            decisions.get("pkg", {}).get(fn, "")[:34], call_layer(meta, text)))
        other = ["%s: %s" % (lab, decisions.get(pkg, {}).get(fn)) for lab, pkg, _ in variants[2:]
                 if decisions.get(pkg, {}).get(fn) not in (None, decisions.get("pkg", {}).get(fn))]
        if other:
            say("       (other tiles: %s)" % "; ".join(other))
    say("  sum  %-20s %s | best per call %.4f" % ("", " ".join("%8.4f" % sum(c[1] for c in v[2])
                                                               for v in variants), best))


def cublas(top, arch, mm, runs):
    """cuBLAS sgemm (FP32, no TF32) of the shape: median ms, or a reason."""
    exe = os.path.join(top, "cublas_bench")
    if not os.path.exists(exe):
        r = subprocess.run(["nvcc", "-O2", "-arch=" + arch, "-o", exe, os.path.join(top, "cublas_bench.cu"),
                            "-lcublas"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            return None, "no cuBLAS (%s)" % r.stdout.strip().splitlines()[-1][:120] if r.stdout.strip() else "no cuBLAS"
    r = subprocess.run([exe, str((mm["batch"] or 1) * mm["m"]), str(mm["n"]), str(mm["k"]), str(runs)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    f = r.stdout.split()
    if r.returncode != 0 or "cublas_ms" not in f:
        return None, "cuBLAS failed: %s" % r.stdout[-200:]
    return float(f[f.index("cublas_ms") + 1]), ""


def tool_versions():
    out = []
    for cmd in (["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,memory.total",
                 "--format=csv,noheader"], ["nvcc", "--version"]):
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
            lines = [l for l in r.stdout.strip().splitlines() if l.strip()]
            out.append(lines[-1] if cmd[0] == "nvcc" and lines else "; ".join(lines))
        except (OSError, subprocess.TimeoutExpired):
            out.append("%s: not found" % cmd[0])
    return out


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
    jobs = []
    for m in models:
        with open(os.path.join(top, m, "meta.json")) as f:
            n_tiles = len(json.load(f).get("tiles", []))
        jobs += [(m, p) for p in ["pkg", "pkg_plain"] + ["pkg_tile%d" % i for i in range(n_tiles)]]
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1)) as ex:
        built = dict(zip(jobs, ex.map(lambda j: build(os.path.join(top, j[0]), j[1], runner, args.arch), jobs)))
    for j in jobs:
        ok, text, secs = built[j]
        if not ok:
            say("build %-15s %-9s FAILED (%.1f s)\n%s" % (j[0], j[1], secs, text))
    say("built %d packages in %.0f s (%s)" % (sum(b[0] for b in built.values()), time.time() - t0,
                                            ", ".join("%s %.0f s" % (j[0], built[j][2]) for j in jobs
                                                      if j[1] == "pkg" and built[j][2] > 20)))
    if not gpus:
        say("cuda_device_check: the packages built for %s, but no GPU was found (nvidia-smi -L "
            "lists none): nothing ran" % args.arch)
        write_summary(lines)
        return 0 if all(b[0] for b in built.values()) else 1
    say("GPU: %s" % "; ".join(gpus))
    say("versions: %s; smelt %s" % (" | ".join(tool_versions()), manifest.get("smelt", "?")))
    say("%-15s %-6s %8s | %9s %9s %9s | %9s %9s %9s | %7s | %9s %9s | %10s %10s" % (
        "model", "result", "GFLOP", "run ms", "kern ms", "GFLOP/s", "plain run", "plain krn", "GFLOP/s",
        "speedup", "ORT cpu", "cuBLAS ms", "max abs", "max rel"))
    failed = 0
    for m in models:
        d = os.path.join(top, m)
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        if not (built[(m, "pkg")][0] and built[(m, "pkg_plain")][0]):
            say("%-15s %-6s (a package did not build)" % (m, "FAIL"))
            failed += 1
            continue
        materialize(d, meta)
        tiled = run_package(d, "pkg", "out", args.runs)
        plain = run_package(d, "pkg_plain", "out_plain", args.runs)
        if not tiled[0] or not plain[0]:
            say("%-15s %-6s the run failed: %s" % (m, "FAIL", tiled[3] or plain[3]))
            failed += 1
            continue
        names = [o["name"] for o in meta["outputs"]]
        got, got_plain = read_outputs(d, meta, "out"), read_outputs(d, meta, "out_plain")
        if meta["weights"]["kind"] == "chunk_rms":  # regenerated weights: tiled against plain
            import numpy as np
            scale = max(float(np.nanmax(np.abs(g))) if g is not None and g.size else 0.0 for g in got_plain)
            res = compare(got, got_plain, rtol, atol * max(1.0, scale), names)
            want = got_plain
            how = "vs plain"
        else:
            import numpy as np
            want = []
            for i, o in enumerate(meta["outputs"]):
                p = os.path.join(d, "data", "expected%d.bin" % i)
                want.append(np.fromfile(p, dtype=o["dtype"]) if os.path.exists(p) else None)
            res = compare(got, want, rtol, atol, names) + \
                [(n + " (plain)",) + x[1:] for n, x in zip(names, compare(got_plain, want, rtol, atol, names))]
            how = "vs expected"
        ok = all(x[3] for x in res)
        failed += not ok
        ort = ort_ms(d, meta, args.runs)
        cb = cublas(top, args.arch, meta["matmul"], args.runs) if "matmul" in meta else (None, "")
        g = meta["gflop"]

        def rate(ms):
            return "%.0f" % (g / (ms / 1e3)) if ms and g > 0 else "n/a"

        def fmt(x, f="%.3f"):
            return f % x if x is not None else "n/a"

        speed = "%.2fx" % (plain[2] / tiled[2]) if tiled[2] and plain[2] else "n/a"
        say("%-15s %-6s %8.3f | %9.3f %9s %9s | %9.3f %9s %9s | %7s | %9s %9s | %10.3g %10.3g  %s" % (
            m, "PASS" if ok else "FAIL", g, tiled[1], fmt(tiled[2]), rate(tiled[2]), plain[1], fmt(plain[2]),
            rate(plain[2]), speed, fmt(ort), fmt(cb[0]) + ("" if cb[0] is None else " (%s GF/s)" % rate(cb[0])),
            max(x[1] for x in res), max(x[2] for x in res), how + ("" if ok else ": " + ", ".join(
                "%s abs %.3g rel %.3g" % x[:3] for x in res if not x[3]))))
        if cb[1] and "matmul" in meta:
            say("  (cuBLAS: %s)" % cb[1])
        variants = [("tiled", "pkg", tiled[4]), ("plain", "pkg_plain", plain[4])]
        for i, tile in enumerate(meta.get("tiles", [])):
            if not built[(m, "pkg_tile%d" % i)][0]:
                say("  %-27s did not build" % tile)
                continue
            other = run_package(d, "pkg_tile%d" % i, "out_tile%d" % i, args.runs)
            if not other[0]:
                say("  %-27s run failed: %s" % (tile, other[3]))
                failed += 1
                continue
            if meta["weights"]["kind"] == "chunk_rms":
                r2 = compare(read_outputs(d, meta, "out_tile%d" % i), want, rtol,
                             atol * max(1.0, scale), names)
            else:
                r2 = compare(read_outputs(d, meta, "out_tile%d" % i), want, rtol, atol, names)
            t_ok = all(x[3] for x in r2)
            failed += not t_ok
            env = ("SMELT_GPU_BLOCK=" + tile[6:] if tile.startswith("block=") else
                   tile if ":" in tile else "SMELT_GPU_TILE=" + tile)  # "name: ...": another smelt's
            say("  %-27s %-4s kernel %9s ms %9s GFLOP/s (the rules' tile: %s ms)" % (
                env, "ok" if t_ok else "FAIL", fmt(other[2]), rate(other[2]), fmt(tiled[2])))
            variants.append((tile, "pkg_tile%d" % i, other[4]))
        if any("thr" in x for x in meta.get("decisions", {}).get("pkg", {}).values()):
            per_call_table(say, meta, variants)
    say("timings: median of %d runs after 3 warm-up runs; run ms: a whole model_run (inputs to the "
        "device, the kernels, outputs back); kern ms: CUDA events around the run's kernels "
        "(-DSMELT_GPU_TIMING); GFLOP/s: the model's Conv/MatMul/Gemm FLOPs over the kernel time; plain: "
        "the same model compiled with SMELT_GPU_TILE=0 (one thread per output, no shared "
        "memory); cuBLAS: cublasSgemm, FP32 (default math: no TF32), same shape, events around the call; "
        "ORT cpu: onnxruntime on this machine's CPU; tolerance |got - want| <= %g + %g |want| "
        "(vs plain: atol scaled by the largest output)" % (args.runs, atol, rtol))
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
    p.add_argument("--no-resnet", action="store_true", help="leave ResNet-18 and ResNet-50 out")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--runs", type=int, default=50)
    r.add_argument("--arch", default="sm_90")
    a = ap.parse_args()
    sys.exit(prepare(a) if a.cmd == "prepare" else run(a))


if __name__ == "__main__":
    main()
