#!/usr/bin/env python3
"""ONNX Runtime's per-node times on one model, the peer of `smelt bench --profile`:
each node's median and minimum kernel time over the runs (its profiler), slowest
first, with op type and shapes.

    python3 bench/ort_profile.py MODEL --threads 1 --runs 20

On a shared machine compare minima, measured in one window with smelt's
(`build/smelt bench MODEL --threads 1 --repeat 20 --profile`): docs/tuning.md.
"""
import argparse, collections, json, os, statistics, tempfile, time

import numpy as np
import onnxruntime as ort


def random_input(rng, info):
    """Normal floats, or small integers (token ids, indices) for integer inputs."""
    shape = [d if isinstance(d, int) else 1 for d in info.shape]
    if info.type in ("tensor(int64)", "tensor(int32)"):
        return rng.integers(0, 8, shape).astype(np.int64 if "64" in info.type else np.int32)
    types = {"tensor(float)": np.float32, "tensor(float16)": np.float16}
    return rng.standard_normal(shape).astype(types.get(info.type, np.float32))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.enable_profiling = True
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    s = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {i.name: random_input(rng, i) for i in s.get_inputs()}
    warm = 5
    for _ in range(warm):
        s.run(None, feeds)
    runs = []
    for _ in range(a.runs):
        t = time.perf_counter()
        s.run(None, feeds)
        runs.append((time.perf_counter() - t) * 1e3)
    path = s.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    times, info = collections.defaultdict(list), {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = e["name"][:-len("_kernel_time")]
            times[name].append(e["dur"] / 1e3)
            info[name] = (e["args"].get("op_name"), e["args"].get("input_type_shape"))
    rows = sorted(((statistics.median(v[warm:]), min(v[warm:]), n)
                   for n, v in times.items() if len(v) > warm), reverse=True)
    print(f"ORT {ort.__version__}: run median {statistics.median(runs):.2f} ms, min {min(runs):.2f}; "
          f"node medians sum {sum(r[0] for r in rows):.2f}, minima {sum(r[1] for r in rows):.2f}")
    print(f"{'ms':>9} {'min ms':>9}  {'op':12} node")
    for med, mn, n in rows:
        print(f"{med:9.3f} {mn:9.3f}  {info[n][0]:12} {n} in={json.dumps(info[n][1])}")


if __name__ == "__main__":
    main()
