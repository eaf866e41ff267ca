#!/usr/bin/env python3
"""Compile time against model size (issue 11: linear in the number of nodes).

Writes chains of N elementwise nodes (Relu by default; --ops Add,Mul,Sub
alternates binary ops with a constant) and times `smelt compile` on each,
cold (an empty JIT cache: the C compiler runs) and warm (the generated C is
cached: smelt's own passes, scheduling, lowering and code generation).
Optional --models DIR adds the models found there (e.g. resnet50/model.onnx).

  python3 bench/bench_compile.py build/smelt --nodes 2000,8000,32000
"""
import argparse, os, shutil, subprocess, sys, tempfile, time

import onnx
from onnx import TensorProto, helper


def chain_model(n, ops):
    nodes, prev = [], "x"
    for i in range(n):
        op = ops[i % len(ops)]
        out = "y" if i == n - 1 else "t%d" % i
        nodes.append(helper.make_node(op, [prev] if op == "Relu" else [prev, "c"], [out]))
        prev = out
    inits = [] if ops == ["Relu"] else [helper.make_tensor("c", TensorProto.FLOAT, [1], [1.0001])]
    v = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 64])
    g = helper.make_graph(nodes, "chain%d" % n, [v("x")], [v("y")], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def timed_compile(smelt, model, cache):
    env = dict(os.environ, SMELT_CACHE_DIR=cache)
    t0 = time.perf_counter()
    p = subprocess.run([smelt, "compile", model], capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("smelt compile %s failed: %s" % (model, (p.stderr or p.stdout).strip()[-500:]))
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("smelt")
    ap.add_argument("--nodes", default="2000,8000,32000")
    ap.add_argument("--ops", default="Relu", help="comma-separated op types the chain cycles through")
    ap.add_argument("--models", default="", help="folder of MODEL/model.onnx to time as well")
    a = ap.parse_args()
    ops = a.ops.split(",")
    work = tempfile.mkdtemp(prefix="smelt_bench_compile_")
    rows = []
    try:
        cases = []
        for n in (int(x) for x in a.nodes.split(",")):
            path = os.path.join(work, "chain%d.onnx" % n)
            onnx.save(chain_model(n, ops), path)
            cases.append(("chain of %d %s" % (n, "/".join(ops)), path, n))
        if a.models:
            for name in sorted(os.listdir(a.models)):
                path = os.path.join(a.models, name, "model.onnx")
                if os.path.exists(path):
                    cases.append((name, path, len(onnx.load(path, load_external_data=False).graph.node)))
        for label, path, n in cases:
            cache = os.path.join(work, "cache_" + str(len(rows)))
            cold = timed_compile(a.smelt, path, cache)
            warm = timed_compile(a.smelt, path, cache)
            rows.append((label, n, cold, warm))
            print("%-32s %7d nodes  cold %8.2f s  warm %8.2f s" % (label, n, cold, warm), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    chains = [r for r in rows if r[0].startswith("chain")]
    if len(chains) >= 2:
        (l0, n0, c0, w0), (l1, n1, c1, w1) = chains[0], chains[-1]
        print("\n%d -> %d nodes (%.0fx): cold %.1fx, warm %.1fx" % (n0, n1, n1 / n0, c1 / c0, w1 / w0))


if __name__ == "__main__":
    main()
