#!/usr/bin/env python3
"""Models quantized by onnxruntime.quantization (issue #10), with test data
from ONNX Runtime's outputs for the same quantized model, in the ONNX
backend-test layout (<name>/model.onnx, <name>/test_data_set_0/*.pb), plus
<name>/tolerance.txt: "ATOL RTOL", what check_quant_models.py gives
`smelt check`:
  qdq_cnn, qdq_conv_relu, qdq_mlp  ATOL = the output's quantization scale (the scale of the
               DequantizeLinear producing it), RTOL 0: one quantization step.
               smelt's fuse_qdq runs a quantized conv / matmul as an integer
               one with the requantization in its epilogue, which may round
               a value lying on a rounding boundary of the output to the
               neighbouring step.
  qop_cnn      ATOL = RTOL = 1e-5: QLinearConv is computed as ONNX defines it
               (the same integers), the float32 ops after it may round
               differently.
  dynamic_mlp  ATOL = RTOL = 1e-4: the output is float32 (every quantization
               inside is dynamic, from the data), the integer products are
               exact, and only the float32 roundings of scales, softmax and
               additions differ.
The expected outputs are ONNX Runtime's with its graph optimizations off
(ORT_DISABLE_ALL): each op as ONNX defines it.  Its default session fuses QDQ
groups into int8 kernels that requantize intermediate tensors with their own
float32 rounding, and one intermediate step that flips grows through the
following layers: on qdq_mlp its default and its op-by-op outputs differ by
two output steps (the generator prints that gap per model), so its fused
outputs would test ONNX Runtime's rounding, not smelt.
The models are quantized with reduce_range=True (7-bit weights), as
onnxruntime recommends for CPUs without VNNI: ONNX Runtime's u8 x s8 kernels
on AVX2 sum pairs of products in saturating 16 bits (vpmaddubsw), so with
8-bit weights its outputs depart from the ONNX semantics (by 5 output steps
on qdq_cnn, on a Zen 3 machine) and would be no oracle; with 7-bit weights
no pair can saturate and ONNX Runtime's optimized and unoptimized (op by
op) runs agree exactly.

  qdq_cnn      conv+relu -> maxpool -> conv(stride 2)+relu -> conv+relu with a
               residual add -> global average pool -> flatten -> gemm, fp32
               with random weights, then quantize_static (QDQ format, per-
               channel int8 weights, uint8 activations) calibrated by a
               CalibrationDataReader over random inputs (min/max).
  qop_cnn      the same CNN quantized by quantize_static in the QOperator
               format (QLinearConv nodes, MaxPool on uint8; Add, the pool and
               the Gemm stay float).
  qdq_conv_relu  a QDQ conv with a Relu before its QuantizeLinear, written by
               hand (fuse_qdq's integer Max).
  qdq_mlp      the attention + MLP block below, quantized by quantize_static as
               qdq_cnn is.
  dynamic_mlp  an attention-like block (q/k/v projections, softmax(q k^T)
               v, output projection, a GELU-free 2-layer MLP with a residual),
               fp32 with random weights, then quantize_dynamic (MatMulInteger
               with DynamicQuantizeLinear on the activations, int8 weights).

The fp32 models are built with the onnx helper API (pyenv python3 with
onnx and onnxruntime from scripts/setup.sh); inputs are random, never
downloaded.
"""
import argparse
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_dynamic, quantize_static)

RNG = np.random.default_rng(1010)


def init(name, shape, scale):
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def conv(name, x, cin, cout, k, stride=1, pad=1):
    w = init(name + "_w", (cout, cin, k, k), (2.0 / (cin * k * k)) ** 0.5)
    b = init(name + "_b", (cout,), 0.1)
    n = helper.make_node("Conv", [x, w.name, b.name], [name], name=name, kernel_shape=[k, k],
                         strides=[stride, stride], pads=[pad] * 4)
    return n, [w, b]


def cnn_fp32():
    nodes, inits = [], []

    def add(n_inits):
        n, i = n_inits
        nodes.append(n)
        inits.extend(i)

    add(conv("c1", "x", 3, 8, 3))
    nodes.append(helper.make_node("Relu", ["c1"], ["r1"]))
    nodes.append(helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]))
    add(conv("c2", "p1", 8, 16, 3, stride=2))
    nodes.append(helper.make_node("Relu", ["c2"], ["r2"]))
    add(conv("c3", "r2", 16, 16, 3))
    nodes.append(helper.make_node("Relu", ["c3"], ["r3"]))
    nodes.append(helper.make_node("Add", ["r3", "r2"], ["s3"]))
    nodes.append(helper.make_node("GlobalAveragePool", ["s3"], ["g"]))
    nodes.append(helper.make_node("Flatten", ["g"], ["f"], axis=1))
    inits += [init("fc_w", (10, 16), 0.3), init("fc_b", (10,), 0.1)]
    nodes.append(helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], transB=1))
    graph = helper.make_graph(
        nodes, "qdq_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 20, 20])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def mlp_fp32(seq=6, d=32):
    inits, nodes = [], []

    def linear(name, x, din, dout):
        inits.extend([init(name + "_w", (din, dout), din ** -0.5), init(name + "_b", (dout,), 0.1)])
        nodes.append(helper.make_node("MatMul", [x, name + "_w"], [name + "_mm"]))
        nodes.append(helper.make_node("Add", [name + "_mm", name + "_b"], [name]))
        return name

    q, k, v = (linear(n, "x", d, d) for n in ("q", "k", "v"))
    nodes.append(helper.make_node("Transpose", [k], ["kt"], perm=[0, 2, 1]))
    nodes.append(helper.make_node("MatMul", [q, "kt"], ["att"]))
    inits.append(numpy_helper.from_array(np.array(d ** -0.5, np.float32), "att_scale"))
    nodes.append(helper.make_node("Mul", ["att", "att_scale"], ["att_s"]))
    nodes.append(helper.make_node("Softmax", ["att_s"], ["prob"], axis=-1))
    nodes.append(helper.make_node("MatMul", ["prob", v], ["ctx"]))
    o = linear("o", "ctx", d, d)
    nodes.append(helper.make_node("Add", [o, "x"], ["h"]))
    up = linear("up", "h", d, 2 * d)
    nodes.append(helper.make_node("Relu", [up], ["up_r"]))
    down = linear("down", "up_r", 2 * d, d)
    nodes.append(helper.make_node("Add", [down, "h"], ["y"]))
    graph = helper.make_graph(
        nodes, "dynamic_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, seq, d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, seq, d])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def qdq_conv_relu():
    """A QDQ conv + Relu written by hand (quantize_static drops a Relu whose
    output is quantized; other tools keep it): x -> Q -> DQ -> Conv(DQ(w int8
    per channel), DQ(b int32)) -> Relu -> Q -> DQ -> y."""
    c = lambda name, a: numpy_helper.from_array(a, name)
    xs, ws = np.float32(0.02), (RNG.random(8) * 0.01 + 0.002).astype(np.float32)
    inits = [c("xs", np.array(xs)), c("xz", np.array(128, np.uint8)),
             c("w", RNG.integers(-64, 64, (8, 3, 3, 3)).astype(np.int8)), c("ws", ws),
             c("wz", np.zeros(8, np.int8)), c("b", RNG.integers(-2000, 2000, 8).astype(np.int32)),
             c("bs", (xs * ws).astype(np.float32)), c("ys", np.array(0.03, np.float32)),
             c("yz", np.array(10, np.uint8))]
    n = helper.make_node
    nodes = [n("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             n("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             n("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             n("DequantizeLinear", ["b", "bs"], ["bd"], axis=0),
             n("Conv", ["xd", "wd", "bd"], ["c"], pads=[1, 1, 1, 1]),
             n("Relu", ["c"], ["r"]),
             n("QuantizeLinear", ["r", "ys", "yz"], ["rq"]),
             n("DequantizeLinear", ["rq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(
        nodes, "qdq_conv_relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 9, 9])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


class RandomReader(CalibrationDataReader):
    """Calibration batches of random inputs (not the test input)."""

    def __init__(self, name, shape, count):
        self.batches = iter([{name: RNG.standard_normal(shape).astype(np.float32)}
                             for _ in range(count)])

    def get_next(self):
        return next(self.batches, None)


def write_test(out, name, model_path, x, atol, rtol):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    model = onnx.load(model_path)
    onnx.save(model, os.path.join(d, "model.onnx"))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0].name
    outs = sess.run(None, {inp: x})
    fused = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    gap = max(float(np.abs(a - b).max()) for a, b in zip(outs, fused.run(None, {inp: x})))
    print("gen_quant_models: %s: ONNX Runtime op by op vs its fused kernels: %.6g" % (name, gap))
    with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, inp).SerializeToString())
    for i, (o, a) in enumerate(zip(sess.get_outputs(), outs)):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(a, o.name).SerializeToString())
    with open(os.path.join(d, "tolerance.txt"), "w") as f:
        f.write("%.9g %.9g\n" % (atol, rtol))


def output_scale(model_path):
    """The scale of the DequantizeLinear that produces the graph output."""
    model = onnx.load(model_path)
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    out = model.graph.output[0].name
    for n in model.graph.node:
        if n.output[0] == out and n.op_type == "DequantizeLinear":
            return float(consts[n.input[1]])
    raise SystemExit("gen_quant_models: %s: the output is not a DequantizeLinear" % model_path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fp32, q = os.path.join(tmp, "cnn.onnx"), os.path.join(tmp, "cnn_q.onnx")
        onnx.save(cnn_fp32(), fp32)
        quantize_static(fp32, q, RandomReader("x", (2, 3, 20, 20), 8), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, reduce_range=True)
        write_test(args.out, "qdq_cnn", q, RNG.standard_normal((2, 3, 20, 20)).astype(np.float32),
                   output_scale(q), 0.0)
        q = os.path.join(tmp, "cnn_qop.onnx")
        quantize_static(fp32, q, RandomReader("x", (2, 3, 20, 20), 8),
                        quant_format=QuantFormat.QOperator, per_channel=True,
                        op_types_to_quantize=["Conv", "MaxPool", "MatMul"],
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        reduce_range=True)
        write_test(args.out, "qop_cnn", q, RNG.standard_normal((2, 3, 20, 20)).astype(np.float32),
                   1e-5, 1e-5)
        q = os.path.join(tmp, "conv_relu.onnx")
        onnx.save(qdq_conv_relu(), q)
        write_test(args.out, "qdq_conv_relu", q, RNG.standard_normal((1, 3, 9, 9)).astype(np.float32),
                   output_scale(q), 0.0)
        fp32, q = os.path.join(tmp, "mlp.onnx"), os.path.join(tmp, "mlp_qdq.onnx")
        onnx.save(mlp_fp32(), fp32)
        quantize_static(fp32, q, RandomReader("x", (2, 6, 32), 8), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, reduce_range=True)
        write_test(args.out, "qdq_mlp", q, RNG.standard_normal((2, 6, 32)).astype(np.float32),
                   output_scale(q), 0.0)
        q = os.path.join(tmp, "mlp_q.onnx")
        quantize_dynamic(fp32, q, weight_type=QuantType.QInt8, reduce_range=True)
        write_test(args.out, "dynamic_mlp", q, RNG.standard_normal((2, 6, 32)).astype(np.float32),
                   1e-4, 1e-4)
    print("gen_quant_models: wrote qdq_cnn, qop_cnn, qdq_conv_relu, qdq_mlp and dynamic_mlp to %s"
          % args.out)


if __name__ == "__main__":
    main()
