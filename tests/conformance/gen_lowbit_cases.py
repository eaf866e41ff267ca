#!/usr/bin/env python3
"""Graphs with ONNX's low-bit types (float8, float4, int4, int2) that the
ONNX node tests leave out, in the ONNX backend-test layout: packed 4- and
2-bit initializers of odd sizes (raw_data and int32_data), float8 weights,
low-bit tensors between nodes (inside the compiled code), moved by
Transpose/Reshape/Concat, and low-bit graph outputs.

Expected outputs come from onnx's reference implementation
(onnx.reference.ReferenceEvaluator).  The inputs avoid NaN for float4, where
onnx's reference (ml_dtypes) and ONNX's float4 spec disagree.  Run by ctest
(conformance/lowbit_cases_*) with the pyenv python3 (onnx 1.23.2).
"""
import argparse
import os

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

RNG = np.random.default_rng(20261126)


def write_case(out, name, nodes, inputs, outputs, inits=(), opset=25):
    """inputs: (name, array); outputs: (name, elem type); inits: TensorProtos."""
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
          for n, a in inputs]
    vo = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    graph = helper.make_graph(nodes, name, vi, vo, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 11
    expected = ReferenceEvaluator(model).run(None, dict(inputs))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (n, a) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for i, ((n, _), a) in enumerate(zip(outputs, expected)):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a), n).SerializeToString())


def floats(shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def int4_weights_matmul(out):
    """int4 weights [3, 5] (15 values: a half-filled last byte), per-column
    scales, in raw_data; DequantizeLinear -> MatMul."""
    w = RNG.integers(-8, 8, size=(3, 5)).astype(ml_dtypes.int4)
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array([0.5, 0.25, 1.0, 0.125, 2.0], np.float32), "s"),
             numpy_helper.from_array(np.array([1, -2, 0, 3, -8], ml_dtypes.int4), "z")]
    nodes = [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wf"], axis=1),
             helper.make_node("MatMul", ["x", "wf"], ["y"])]
    write_case(out, "lowbit_int4_weights_matmul", nodes, [("x", floats((4, 3)))],
               [("y", T.FLOAT)], inits)


def packed_int32(name, elem_type, dims, packed_bytes):
    t = onnx.TensorProto()
    t.name = name
    t.data_type = elem_type
    t.dims.extend(dims)
    t.int32_data.extend(packed_bytes)
    return t


def int2_weights_int32_data(out):
    """uint2 weights of 7 values in int32_data (one packed byte per value)."""
    vals = np.array([0, 1, 2, 3, 3, 2, 1], np.uint8)
    packed = [int(b) for b in numpy_helper._pack_2bitx4(vals)]
    inits = [packed_int32("w", T.UINT2, [7], packed), numpy_helper.from_array(np.float32(0.5), "s"),
             packed_int32("z", T.UINT2, [], [1])]
    nodes = [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wf"]),
             helper.make_node("Add", ["x", "wf"], ["y"])]
    write_case(out, "lowbit_uint2_int32_data", nodes, [("x", floats((7,)))],
               [("y", T.FLOAT)], inits)


def float8_weights(out):
    """e4m3fn and e5m2fnuz weight initializers (every finite code) feeding Mul."""
    for t, tname in ((ml_dtypes.float8_e4m3fn, "e4m3fn"), (ml_dtypes.float8_e5m2fnuz, "e5m2fnuz")):
        codes = np.arange(256, dtype=np.uint8).view(t)
        codes = codes[np.isfinite(codes.astype(np.float32))][:120].reshape(8, 15)
        inits = [numpy_helper.from_array(codes, "w"),
                 numpy_helper.from_array(np.float32(0.75), "s")]
        nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"]),
                 helper.make_node("Mul", ["x", "wf"], ["y"])]
        write_case(out, "lowbit_%s_weights" % tname, nodes, [("x", floats((8, 15)))],
                   [("y", T.FLOAT)], inits)


def float8_between_nodes(out):
    """x -> Cast(e5m2) -> Transpose -> Cast(float): a float8 tensor inside the
    compiled code, moved as codes; also returned (a float8 output)."""
    x = np.concatenate([floats((20,), 100.0),
                        np.array([np.nan, np.inf, -np.inf, -0.0, 6e4, -7e4, 1e-6, 3e-5],
                                 np.float32),
                        floats((2,), 1e-5)]).reshape(5, 6)
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=T.FLOAT8E5M2, saturate=0),
             helper.make_node("Transpose", ["c"], ["ct"], perm=[1, 0]),
             helper.make_node("Cast", ["ct"], ["y"], to=T.FLOAT)]
    write_case(out, "lowbit_float8_between_nodes", nodes, [("x", x)],
               [("y", T.FLOAT), ("ct", T.FLOAT8E5M2)])


def quantize_round_trip(out):
    """QuantizeLinear to uint4 and int2 (odd counts), Concat of the int2
    values, DequantizeLinear back; the 4- and 2-bit tensors are outputs too."""
    x = floats((3, 7), 4.0)
    inits = [numpy_helper.from_array(np.float32(0.6), "s"),
             numpy_helper.from_array(np.array(5, ml_dtypes.uint4), "zu"),
             numpy_helper.from_array(np.array(-1, ml_dtypes.int2), "zi")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zu"], ["qu"]),
             helper.make_node("DequantizeLinear", ["qu", "s", "zu"], ["yu"]),
             helper.make_node("QuantizeLinear", ["x", "s", "zi"], ["qi"]),
             helper.make_node("Concat", ["qi", "qi"], ["qc"], axis=0),
             helper.make_node("DequantizeLinear", ["qc", "s", "zi"], ["yi"])]
    write_case(out, "lowbit_quantize_round_trip", nodes, [("x", x)],
               [("yu", T.FLOAT), ("qu", T.UINT4), ("yi", T.FLOAT), ("qc", T.INT2)], inits)


def float4_cast_chain(out):
    """float -> float4 (no NaN: see the docstring) -> float16, and float4
    through Reshape as an output."""
    x = np.concatenate([floats((16,), 3.0),
                        np.array([0.25, 0.75, 2.5, 5.0, -5.0, 7.0, 1e9, -np.inf], np.float32)])
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=T.FLOAT4E2M1),
             helper.make_node("Reshape", ["c", "shape"], ["cr"]),
             helper.make_node("Cast", ["cr"], ["y"], to=T.FLOAT16)]
    inits = [numpy_helper.from_array(np.array([4, 6], np.int64), "shape")]
    write_case(out, "lowbit_float4_cast_chain", nodes, [("x", x)],
               [("y", T.FLOAT16), ("cr", T.FLOAT4E2M1)], inits)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    for case in (int4_weights_matmul, int2_weights_int32_data, float8_weights,
                 float8_between_nodes, quantize_round_trip, float4_cast_chain):
        case(args.out)
    print("gen_lowbit_cases: wrote the low-bit graph tests to %s" % args.out)


if __name__ == "__main__":
    main()
