#!/usr/bin/env python3
"""Small models for the GPU targets' tests (tests/gpu/, bench/cuda_device_check),
in the ONNX backend-test layout (model.onnx, test_data_set_0/input_N.pb,
output_N.pb).  The expected outputs are ONNX Runtime's (another engine), on
random inputs; weights are random; seeds are fixed.

  mlp         MatMul + bias + Relu, MatMul + bias, Softmax over [4, 64] -> [4, 10]
  eltwise     a chain of 14 elementwise ops with broadcasting over odd shapes
              [2, 3, 17, 19] (no extent divides the block size), two outputs
  norm_reduce LayerNormalization, ReduceMax and ReduceSum over [3, 5, 33]
  cnn_pool    strided and depthwise convolutions, BatchNorm, MaxPool,
              AveragePool, GlobalAveragePool and Gemm over [2, 3, 15, 15]
  gather      Gather with indices given at run time (a data check on the device)
  gather_bad  the same with an index out of range: the run must fail naming
              the node, the index and its position (the expected output is
              zeros: ONNX Runtime refuses it too)
  long_reduce Softmax over rows of 5000 and a sum of everything (few outputs,
              long reductions: split across a block's threads)
  lstm        an LSTM layer over 5 steps (its op's loop IR calls the gemm
              micro-kernel: plain loops in GPU kernels)
  tiled_mm    MatMul + bias + Relu, Gemm (transB) + bias, a batched MatMul alone,
              sizes no tile divides (135 x 270 x 197, 135 x 197 x 83, 2 x 45 x 150 x 250):
              the GPU rules' tiled products with shared-memory staging (cache_read)
  tiled_conv  3x3 conv + bias + Relu, 1x1 conv + bias + a 1x1 skip conv + Relu,
              3x3 conv with stride 2, over [2, 33, 17, 18]: tiled convolutions
  half        float16 arithmetic (Cast, Add, Mul in float16): the GPU targets
              refuse it, naming the function and its nodes (only compiled:
              ONNX Runtime's float16 results differ from smelt's by an ulp)
  wide_mlp    --big only: the MLP at [64, 512] -> 512 -> 1000 (timings)

usage: gen_gpu_models.py OUT_DIR [--big]
Needs onnx, onnxruntime and numpy (scripts/setup.sh installs them for the
python3 on PATH).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.inits, self.nodes = [], []

    def const(self, name, shape, lo=-1.0, hi=1.0):
        self.inits.append(numpy_helper.from_array(
            self.rng.uniform(lo, hi, shape).astype(np.float32), name))
        return name

    def node(self, op, ins, out, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=out + "_node", **attrs))
        return out

    def model(self, name, inputs, outputs):
        g = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="gen_gpu_models.py")
        m.ir_version = 8  # readable by onnx 1.12 and ONNX Runtime
        onnx.checker.check_model(m)
        return m


def vi(name, shape, dt=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def mlp(rows=4, d_in=64, hidden=128, d_out=10, seed=1, name="mlp"):
    b = Builder(seed)
    h = b.node("MatMul", ["x", b.const("w1", (d_in, hidden), -0.2, 0.2)], "h0")
    h = b.node("Add", [h, b.const("b1", (hidden,))], "h1")
    h = b.node("Relu", [h], "h2")
    h = b.node("MatMul", [h, b.const("w2", (hidden, d_out), -0.2, 0.2)], "h3")
    h = b.node("Add", [h, b.const("b2", (d_out,))], "h4")
    b.node("Softmax", [h], "y", axis=-1)
    m = b.model(name, [vi("x", [rows, d_in])], [vi("y", [rows, d_out])])
    return m, {"x": b.rng.uniform(-1, 1, (rows, d_in)).astype(np.float32)}


def eltwise():
    b = Builder(2)
    shape = [2, 3, 17, 19]
    t = b.node("Add", ["x", "y"], "add")
    t = b.node("Mul", [t, b.const("scale", (19,), 0.5, 1.5)], "mul")
    s = b.node("Sigmoid", [t], "sig")
    th = b.node("Tanh", [t], "tanh")
    t = b.node("Sub", [s, th], "sub")
    a = b.node("Abs", [t], "abs")
    q = b.node("Sqrt", [a], "sqrt")
    d = b.node("Div", [q, b.const("den", (3, 1, 1), 1.0, 2.0)], "div")
    e = b.node("Erf", [d], "erf")
    m = b.node("Max", [e, th], "max")
    c = b.node("Clip", [m, b.const("lo", (), -0.5, -0.5), b.const("hi", (), 0.5, 0.5)], "clip")
    f = b.node("Floor", [b.node("Mul", [c, b.const("ten", (), 10.0, 10.0)], "x10")], "floor")
    b.node("Exp", [b.node("Neg", [a], "neg")], "z")
    b.node("Add", [f, c], "w")
    m = b.model("eltwise", [vi("x", shape), vi("y", [17, 19])], [vi("w", shape), vi("z", shape)])
    rng = b.rng
    return m, {"x": rng.uniform(-2, 2, shape).astype(np.float32),
               "y": rng.uniform(-2, 2, (17, 19)).astype(np.float32)}


def norm_reduce():
    b = Builder(3)
    shape = [3, 5, 33]
    ln = b.node("LayerNormalization", ["x", b.const("g", (33,), 0.5, 1.5), b.const("bb", (33,))],
                "ln", axis=-1, epsilon=1e-5)
    b.node("ReduceMax", [ln], "mx", axes=[1], keepdims=0)
    axes = numpy_helper.from_array(np.array([0, 2], dtype=np.int64), "axes")
    b.inits.append(axes)
    b.node("ReduceSum", ["x", "axes"], "sm", keepdims=1)
    m = b.model("norm_reduce", [vi("x", shape)], [vi("mx", [3, 33]), vi("sm", [1, 5, 1])])
    return m, {"x": b.rng.uniform(-3, 3, shape).astype(np.float32)}


def cnn_pool():
    b = Builder(4)
    t = b.node("Conv", ["x", b.const("w0", (8, 3, 3, 3), -0.3, 0.3), b.const("c0", (8,))], "conv0",
               strides=[2, 2], pads=[1, 1, 1, 1])
    t = b.node("BatchNormalization", [t, b.const("bn_s", (8,), 0.5, 1.5), b.const("bn_b", (8,)),
                                      b.const("bn_m", (8,), -0.1, 0.1),
                                      b.const("bn_v", (8,), 0.5, 1.5)], "bn")
    t = b.node("Relu", [t], "relu0")
    t = b.node("Conv", [t, b.const("wd", (8, 1, 3, 3), -0.3, 0.3)], "dwconv", group=8,
               pads=[1, 1, 1, 1])
    t = b.node("MaxPool", [t], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    t = b.node("AveragePool", [t], "avgpool", kernel_shape=[2, 2], strides=[1, 1])
    t = b.node("Conv", [t, b.const("w1", (12, 8, 1, 1), -0.3, 0.3)], "conv1")
    t = b.node("GlobalAveragePool", [t], "gap")
    t = b.node("Flatten", [t], "flat", axis=1)
    b.node("Gemm", [t, b.const("fc", (5, 12)), b.const("fcb", (5,))], "y", transB=1)
    m = b.model("cnn_pool", [vi("x", [2, 3, 15, 15])], [vi("y", [2, 5])])
    return m, {"x": b.rng.uniform(-1, 1, (2, 3, 15, 15)).astype(np.float32)}


def gather(idx=(0, 7, 15)):
    b = Builder(5)
    b.node("Gather", [b.const("table", (16, 4)), "idx"], "y", axis=0)
    m = b.model("gather", [vi("idx", [3], TensorProto.INT64)], [vi("y", [3, 4])])
    return m, {"idx": np.array(idx, dtype=np.int64)}


def long_reduce():
    b = Builder(8)
    b.node("Softmax", ["x"], "p", axis=-1)
    b.node("ReduceSum", ["x"], "total", keepdims=0)
    b.node("ReduceMax", ["x"], "rowmax", axes=[1], keepdims=1)
    m = b.model("long_reduce", [vi("x", [3, 5000])],
                [vi("p", [3, 5000]), vi("total", []), vi("rowmax", [3, 1])])
    return m, {"x": b.rng.uniform(-4, 4, (3, 5000)).astype(np.float32)}


def half():
    b = Builder(9)
    h = b.node("Cast", ["x"], "h", to=TensorProto.FLOAT16)
    s = b.node("Add", [h, h], "s")
    p = b.node("Mul", [s, h], "p")
    b.node("Cast", [p], "y", to=TensorProto.FLOAT)
    m = b.model("half", [vi("x", [4, 8])], [vi("y", [4, 8])])
    return m, {"x": b.rng.uniform(-2, 2, (4, 8)).astype(np.float32)}


def lstm():
    b = Builder(7)
    seq, batch, d_in, hidden = 5, 2, 8, 16
    b.node("LSTM", ["x", b.const("W", (1, 4 * hidden, d_in)), b.const("R", (1, 4 * hidden, hidden))],
           "y", hidden_size=hidden)
    m = b.model("lstm", [vi("x", [seq, batch, d_in])], [vi("y", [seq, 1, batch, hidden])])
    return m, {"x": b.rng.uniform(-1, 1, (seq, batch, d_in)).astype(np.float32)}


def tiled_mm():
    """Matrix products the GPU rules tile (sizes no tile divides)."""
    b = Builder(10)
    h = b.node("MatMul", ["x", b.const("w1", (270, 197), -0.1, 0.1)], "h0")
    h = b.node("Add", [h, b.const("b1", (197,))], "h1")
    h = b.node("Relu", [h], "h2")
    b.node("Gemm", [h, b.const("w2", (83, 197), -0.1, 0.1), b.const("b2", (83,))], "y", transB=1)
    b.node("MatMul", ["u", b.const("w3", (150, 250), -0.1, 0.1)], "z")
    m = b.model("tiled_mm", [vi("x", [135, 270]), vi("u", [2, 45, 150])],
                [vi("y", [135, 83]), vi("z", [2, 45, 250])])
    return m, {"x": b.rng.uniform(-1, 1, (135, 270)).astype(np.float32),
               "u": b.rng.uniform(-1, 1, (2, 45, 150)).astype(np.float32)}


def tiled_conv():
    """Convolutions the GPU rules tile: 3x3 (padded), 1x1, 3x3 with stride 2."""
    b = Builder(11)
    t = b.node("Conv", ["x", b.const("w0", (49, 33, 3, 3), -0.1, 0.1), b.const("c0", (49,))], "conv0",
               pads=[1, 1, 1, 1])
    t = b.node("Relu", [t], "relu0")
    t = b.node("Conv", [t, b.const("w1", (70, 49, 1, 1), -0.2, 0.2), b.const("c1", (70,))], "conv1")
    t = b.node("Add", [t, b.node("Conv", ["x", b.const("ws", (70, 33, 1, 1), -0.2, 0.2)], "skip")],
               "res")
    t = b.node("Relu", [t], "relu1")
    b.node("Conv", [t, b.const("w2", (40, 70, 3, 3), -0.1, 0.1)], "y", strides=[2, 2],
           pads=[1, 1, 1, 1])
    m = b.model("tiled_conv", [vi("x", [2, 33, 17, 18])], [vi("y", [2, 40, 9, 9])])
    return m, {"x": b.rng.uniform(-1, 1, (2, 33, 17, 18)).astype(np.float32)}


def write(out_dir, name, model_and_inputs):
    import onnxruntime as ort
    model, inputs = model_and_inputs
    d = os.path.join(out_dir, name)
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    if name.endswith("_bad"):  # the run must fail: no reference output
        outs = [np.zeros([d.dim_value for d in o.type.tensor_type.shape.dim], np.float32)
                for o in model.graph.output]
    else:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        outs = sess.run(None, inputs)
    for i, inp in enumerate(model.graph.input):
        t = numpy_helper.from_array(inputs[inp.name], inp.name)
        with open(os.path.join(data, "input_%d.pb" % i), "wb") as f:
            f.write(t.SerializeToString())
    for i, (o, v) in enumerate(zip(model.graph.output, outs)):
        t = numpy_helper.from_array(np.asarray(v), o.name)
        with open(os.path.join(data, "output_%d.pb" % i), "wb") as f:
            f.write(t.SerializeToString())
    print("wrote", d)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    models = {"mlp": mlp(), "eltwise": eltwise(), "norm_reduce": norm_reduce(),
              "cnn_pool": cnn_pool(), "gather": gather(), "gather_bad": gather((0, 99, 15)),
              "lstm": lstm(), "long_reduce": long_reduce(), "half": half(),
              "tiled_mm": tiled_mm(), "tiled_conv": tiled_conv()}
    if "--big" in sys.argv[2:]:
        models["wide_mlp"] = mlp(rows=64, d_in=512, hidden=512, d_out=1000, seed=6, name="wide_mlp")
    for name, mi in models.items():
        write(out, name, mi)


if __name__ == "__main__":
    main()
