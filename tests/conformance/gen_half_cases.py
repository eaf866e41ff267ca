#!/usr/bin/env python3
"""float16 and bfloat16 Conv, ConvTranspose, MatMul and Gemm cases, in the ONNX
backend-test layout (<case>/model.onnx, <case>/test_data_set_0/*.pb).  smelt
computes such graphs with its float32 kernels between Casts at their edges
(passes/widen_half.c), as ONNX Runtime's CPU provider does: the expected
output is ONNX Runtime's on a float32 twin of the model fed the same
(half-exact) values, rounded once to float16 or bfloat16.  Cases whose value
does not depend on rounding between ops go to <out>/ (both paths); the
residual Add after a product goes to <out>-region/ (compiled only: the
reference executor rounds each op's output, and rounding the product first
moves 5-28% of these outputs by one unit).

Run by ctest (conformance/half_cases_*) with the pyenv python3 (onnx,
onnxruntime and ml_dtypes from PyPI, installed by scripts/setup.sh).
"""
import argparse
import os
import shutil

import ml_dtypes
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HALF = {"f16": (np.float16, TensorProto.FLOAT16), "bf16": (ml_dtypes.bfloat16, TensorProto.BFLOAT16)}


def conv3x3_relu(rng):
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    return nodes, {"x": rng.standard_normal((1, 8, 10, 10))}, \
        {"w": rng.standard_normal((16, 8, 3, 3)) * 0.2, "b": rng.standard_normal(16)}


def conv1x1_stride2_residual(rng):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2]),
             helper.make_node("Add", ["c", "r"], ["y"])]
    return nodes, {"x": rng.standard_normal((2, 12, 9, 9)), "r": rng.standard_normal((2, 20, 5, 5))}, \
        {"w": rng.standard_normal((20, 12, 1, 1)) * 0.3}


def conv_transpose(rng):
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2])]
    return nodes, {"x": rng.standard_normal((1, 6, 5, 4))}, \
        {"w": rng.standard_normal((6, 4, 2, 2)) * 0.3, "b": rng.standard_normal(4)}


def matmul_const(rng):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])]
    return nodes, {"x": rng.standard_normal((4, 24))}, {"w": rng.standard_normal((24, 40)) * 0.2}


def matmul_batched_inputs(rng):
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"])]
    return nodes, {"a": rng.standard_normal((2, 5, 16)), "b": rng.standard_normal((2, 16, 7))}, {}


def gemm_trans_b(rng):
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)]
    return nodes, {"x": rng.standard_normal((3, 10))}, \
        {"w": rng.standard_normal((6, 10)), "c": rng.standard_normal(6)}


CASES = [conv3x3_relu, conv1x1_stride2_residual, conv_transpose, matmul_const,
         matmul_batched_inputs, gemm_trans_b]


def model(name, nodes, inputs, inits, elem):
    g = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(k, elem, v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    for d in (a.out, a.out + "-region"):  # no stale case from an earlier split
        shutil.rmtree(d, ignore_errors=True)
    for tag, (npt, elem) in HALF.items():
        rng = np.random.default_rng(16)
        for case in CASES:
            nodes, inputs, inits = case(rng)
            # values exact in the half type, then the same values in float32
            inputs = {k: v.astype(npt) for k, v in inputs.items()}
            inits = {k: v.astype(npt) for k, v in inits.items()}
            twin = model(case.__name__, nodes, {k: v.astype(np.float32) for k, v in inputs.items()},
                         {k: v.astype(np.float32) for k, v in inits.items()}, TensorProto.FLOAT)
            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            sess = ort.InferenceSession(twin.SerializeToString(), so,
                                        providers=["CPUExecutionProvider"])
            feeds = {k: v.astype(np.float32) for k, v in inputs.items()}
            (want,) = sess.run(None, feeds)
            want = want.astype(npt)
            name = f"test_{case.__name__}_{tag}"
            region = any(n.op_type == "Add" for n in nodes)
            d = os.path.join(a.out + "-region" if region else a.out, name)
            os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
            with open(os.path.join(d, "model.onnx"), "wb") as f:
                f.write(model(name, nodes, inputs, inits, elem).SerializeToString())
            for i, (k, v) in enumerate(inputs.items()):
                with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(v, k).SerializeToString())
            with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
                f.write(numpy_helper.from_array(want, "y").SerializeToString())


if __name__ == "__main__":
    main()
