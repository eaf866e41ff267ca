#!/usr/bin/env python3
"""CNNs in the blocked layout as `smelt compile --stats --json` reports them.

usage: check_layout.py SMELT MODELS_DIR NAME:MAX_FUNCTIONS ...

For each model (compiled for avx512, whose 16 lanes make the blocks): every
Conv became a ConvNCHWc; at most two LayoutTransform nodes in the whole
graph; no BatchNormalization left; every Clip, Relu and Add sits in a
function with a ConvNCHWc (its epilogue), or for an Add, with the
MatMulPacked a classifier Gemm became; at most MAX_FUNCTIONS generated
functions; the activation arena at most a quarter of the intermediates.
Exit status 1 on any failure.
"""
import json
import subprocess
import sys

EPILOGUE = ("Clip", "Relu", "Add")


def check_model(smelt, models_dir, spec):
    name, max_functions = spec.split(":")
    model = f"{models_dir}/{name}/model.onnx"
    out = subprocess.run([smelt, "compile", model, "--stats", "--json", "--target", "avx512"],
                         check=True, capture_output=True, text=True).stdout
    stats = json.loads(out)
    ops, funcs = stats["ops"], stats.get("function_ops", [])
    errors = []
    if ops.get("Conv", 0) or not ops.get("ConvNCHWc", 0):
        errors.append(f"{ops.get('Conv', 0)} Conv left, {ops.get('ConvNCHWc', 0)} ConvNCHWc")
    if ops.get("LayoutTransform", 0) > 2:
        errors.append(f"{ops['LayoutTransform']} layout conversions, expected at most 2")
    if ops.get("BatchNormalization", 0):
        errors.append(f"{ops['BatchNormalization']} BatchNormalization left")
    for op in EPILOGUE:
        fused = sum(f.count(op) for f in funcs
                    if "ConvNCHWc" in f or (op == "Add" and "MatMulPacked" in f))
        if fused != ops.get(op, 0):
            errors.append(f"{op}: {fused} of {ops.get(op, 0)} in a ConvNCHWc function")
    if stats["functions"] > int(max_functions):
        errors.append(f"{stats['functions']} functions, expected at most {max_functions}")
    if 4 * stats["arena_bytes"] > stats["intermediate_bytes"]:
        errors.append(f"arena {stats['arena_bytes']} bytes is more than a quarter of "
                      f"{stats['intermediate_bytes']} intermediate bytes")
    for e in errors:
        print(f"{name}: {e}")
    if not errors:
        print(f"{name}: ok ({stats['functions']} functions, "
              f"{ops.get('LayoutTransform', 0)} conversions, {ops['ConvNCHWc']} ConvNCHWc)")
    return not errors


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    ok = all([check_model(sys.argv[1], sys.argv[2], spec) for spec in sys.argv[3:]])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
