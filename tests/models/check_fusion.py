#!/usr/bin/env python3
"""Transformer patterns as `smelt compile --stats --json` reports them.

usage: check_fusion.py SMELT MODELS_DIR NAME:LAYERNORMS:GELUS:ATTENTIONS ...

For each model: the decomposed LayerNorm, GELU and attention pieces
(ReduceMean, Erf, Pow, Sqrt, Softmax) are gone; LayerNormalization, Gelu and
FusedAttention (passes/fuse_attention.c) appear as often as the model has
them; the per-function listing covers every generated function
and holds each of those nodes once, each Gelu inside its matmul's epilogue
(MatMul, bias Add, Gelu in one function).  Exit status 1 on any failure.
"""
import json
import subprocess
import sys

GONE = ("ReduceMean", "Erf", "Pow", "Sqrt", "Softmax")


def check_model(smelt, models_dir, spec):
    name, ln, gelu, attention = spec.split(":")
    want = {"LayerNormalization": int(ln), "Gelu": int(gelu), "FusedAttention": int(attention)}
    model = f"{models_dir}/{name}/model.onnx"
    out = subprocess.run([smelt, "compile", model, "--stats", "--json"], check=True,
                         capture_output=True, text=True).stdout
    stats = json.loads(out)
    ops, funcs = stats["ops"], stats.get("function_ops", [])
    errors = []
    for op in GONE:
        if ops.get(op, 0):
            errors.append(f"{ops[op]} {op} left")
    for op, n in want.items():
        if ops.get(op, 0) != n:
            errors.append(f"{op}: {ops.get(op, 0)} nodes, expected {n}")
        listed = sum(f.count(op) for f in funcs)
        if listed != n:
            errors.append(f"{op}: {listed} in the function listing, expected {n}")
    if len(funcs) != stats["functions"]:
        errors.append(f"{len(funcs)} functions listed, {stats['functions']} generated")
    for i, f in enumerate(funcs):
        if "Gelu" in f and not (("MatMul" in f or "MatMulPacked" in f) and "Add" in f):
            errors.append(f"f{i} {f}: Gelu outside a MatMul + bias epilogue")
    for e in errors:
        print(f"{name}: {e}")
    if not errors:
        print(f"{name}: ok ({stats['functions']} functions; " +
              ", ".join(f"{op}={n}" for op, n in want.items()) + ")")
    return not errors


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    smelt, models_dir = sys.argv[1], sys.argv[2]
    ok = all([check_model(smelt, models_dir, spec) for spec in sys.argv[3:]])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
