#!/usr/bin/env python3
"""Write the single-operator models of the tuning benchmark (issue 9): shapes
where smelt's default schedules are weak.  One folder per op, named after its
shape, with model.onnx (fp32, batch 1, opset 17, random weights as
initializers) and test_data_set_0/ (seeded input, output computed by ONNX
Runtime) so that `smelt check DIR` verifies the compiled result.

Deterministic: every model's weights and input come from a generator seeded
with the crc32 of its name, so the files are byte-identical between runs.

usage: gen_tune_ops.py [--out DIR] [--only a,b] [--list]

Names: convKxK[sS]_CI_CO_H (square input H x H, pad K//2), dwconvKxK[sS]_C_H
(depthwise), suffix _relu when a bias and a Relu follow; matmul_M_K_N
(A [M,K] input, B [K,N] initializer); softmax_/layernorm_ + the input dims
(last axis reduced); maxpoolKxKsS_C_H and avgpoolKxKsS_C_H (pad K//2 unless
_p0; avgpool counts the pads unless _excl); convpool_C_H (3x3 conv + Relu +
MaxPool 3x3 s2 + 1x1 conv: the pool runs in the blocked layout, as in ResNet).
"""
import argparse, os, shutil, sys, zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def conv(ci, co, h, k, stride=1, group=1, relu=False):
    name = "%sconv%dx%d%s_%s%d" % ("dw" if group > 1 else "", k, k,
                                 "s%d" % stride if stride > 1 else "",
                                 "" if group > 1 else "%d_" % ci, co)
    name += "_%d%s" % (h, "_relu" if relu else "")
    return name, dict(kind="conv", ci=ci, co=co, h=h, k=k, stride=stride, group=group, relu=relu)


def matmul(m, k, n):
    return "matmul_%d_%d_%d" % (m, k, n), dict(kind="matmul", m=m, k=k, n=n)


def rowop(kind, *dims):
    return kind + "_" + "_".join(map(str, dims)), dict(kind=kind, dims=list(dims))


def maxpool(c, h, k, stride, pad=None, kind="maxpool", include_pad=True):
    pad = k // 2 if pad is None else pad
    name = "%s%dx%ds%d_%d_%d%s%s" % (kind, k, k, stride, c, h, "" if pad == k // 2 else "_p%d" % pad,
                                     "" if include_pad or kind == "maxpool" else "_excl")
    return name, dict(kind=kind, c=c, h=h, k=k, stride=stride, pad=pad, include_pad=include_pad)


def avgpool(c, h, k, stride, pad=None, include_pad=True):
    return maxpool(c, h, k, stride, pad, "avgpool", include_pad)


def convpool(c, h):
    return "convpool_%d_%d" % (c, h), dict(kind="convpool", c=c, h=h)


OPS = [
    # named in issue 9
    conv(24, 144, 56, 1),                  # MobileNetV2 expand
    conv(48, 48, 28, 3),                   # 3x3 with 48 channels
    conv(96, 96, 112, 3, 2, group=96),     # MobileNetV2 stride-2 depthwise
    conv(144, 144, 56, 3, 2, group=144),
    conv(3, 64, 224, 7, 2),                # ResNet stem
    matmul(1, 768, 768),                   # GEMV (BERT-base, batch 1, one token)
    matmul(1, 1024, 4096),
    matmul(1, 4096, 1024),
    # others of the same kinds (EfficientNet/MobileNet/ResNet/transformer shapes)
    conv(40, 240, 28, 1),
    conv(80, 480, 14, 1),
    conv(240, 40, 28, 1),                  # projection (reduce)
    conv(3, 32, 224, 3, 2),                # MobileNet/EfficientNet stem
    conv(480, 480, 14, 5, 1, group=480),   # EfficientNet depthwise 5x5
    conv(240, 240, 28, 5, 2, group=240),
    conv(64, 64, 56, 3, relu=True),        # ResNet-18 body, bias + relu fused
    conv(32, 16, 112, 1, relu=True),
    conv(256, 256, 14, 3, relu=True),      # ResNet-50 stage 3 (the largest share of its time)
    conv(512, 512, 7, 3, relu=True),       # ResNet-50 stage 4
    conv(1024, 256, 14, 1, relu=True),     # ResNet-50 stage 3 reduce
    conv(1024, 2048, 14, 1, 2),            # ResNet-50 stage 4 downsample (strided 1x1)
    conv(512, 2048, 7, 1, relu=True),      # ResNet-50 stage 4 expand (7 columns)
    matmul(8, 768, 3072),                  # small-M GEMMs (a few tokens)
    matmul(16, 768, 3072),
    matmul(16, 3072, 768),
    rowop("softmax", 12, 128, 128),        # attention scores
    rowop("softmax", 1, 32000),            # one big row (vocabulary)
    rowop("layernorm", 128, 768),
    maxpool(64, 112, 3, 2),                # ResNet stem pool
    maxpool(64, 56, 2, 2, pad=0),          # VGG-style 2x2
    maxpool(192, 28, 3, 1),                # Inception branch pool
    avgpool(192, 28, 3, 1),                # Inception avg pool (count_include_pad)
    avgpool(64, 56, 3, 2, include_pad=False),
    convpool(64, 112),                     # ResNet stem pool after a conv (NCHW16c)
]


def build(name, p, rng):
    """Returns (ModelProto, input array)."""
    inits, nodes = [], []

    def weight(wname, shape, fan_in):
        bound = np.sqrt(3.0 / fan_in)      # unit-variance outputs for unit inputs
        w = rng.uniform(-bound, bound, shape).astype(np.float32)
        inits.append(numpy_helper.from_array(w, wname))
        return wname

    kind = p["kind"]
    if kind == "conv":
        ci, co, h, k, s, g = p["ci"], p["co"], p["h"], p["k"], p["stride"], p["group"]
        ho = (h + 2 * (k // 2) - k) // s + 1
        xs, ys = [1, ci, h, h], [1, co, ho, ho]
        ins = ["x", weight("w", [co, ci // g, k, k], ci // g * k * k)]
        if p["relu"]:
            b = rng.uniform(-0.1, 0.1, [co]).astype(np.float32)
            inits.append(numpy_helper.from_array(b, "b"))
            ins.append("b")
        out = "conv_out" if p["relu"] else "y"
        nodes.append(helper.make_node("Conv", ins, [out], kernel_shape=[k, k], strides=[s, s],
                                      pads=[k // 2] * 4, group=g))
        if p["relu"]:
            nodes.append(helper.make_node("Relu", [out], ["y"]))
    elif kind == "matmul":
        xs, ys = [p["m"], p["k"]], [p["m"], p["n"]]
        nodes.append(helper.make_node("MatMul", ["x", weight("w", [p["k"], p["n"]], p["k"])], ["y"]))
    elif kind == "softmax":
        xs = ys = p["dims"]
        nodes.append(helper.make_node("Softmax", ["x"], ["y"], axis=-1))
    elif kind == "layernorm":
        xs = ys = p["dims"]
        n = xs[-1]
        scale = numpy_helper.from_array(rng.uniform(0.5, 1.5, [n]).astype(np.float32), "scale")
        bias = numpy_helper.from_array(rng.uniform(-0.5, 0.5, [n]).astype(np.float32), "bias")
        inits += [scale, bias]
        nodes.append(helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"],
                                      axis=-1, epsilon=1e-5))
    elif kind in ("maxpool", "avgpool"):
        c, h, k, s, pad = p["c"], p["h"], p["k"], p["stride"], p["pad"]
        ho = (h + 2 * pad - k) // s + 1
        xs, ys = [1, c, h, h], [1, c, ho, ho]
        extra = {} if kind == "maxpool" else dict(count_include_pad=int(p["include_pad"]))
        nodes.append(helper.make_node("MaxPool" if kind == "maxpool" else "AveragePool", ["x"], ["y"],
                                      kernel_shape=[k, k], strides=[s, s], pads=[pad] * 4, **extra))
    elif kind == "convpool":
        c, h = p["c"], p["h"]
        xs, ys = [1, c, h, h], [1, c, h // 2, h // 2]
        nodes.append(helper.make_node("Conv", ["x", weight("w", [c, c, 3, 3], c * 9)], ["conv_out"],
                                      kernel_shape=[3, 3], pads=[1] * 4))
        nodes.append(helper.make_node("Relu", ["conv_out"], ["relu_out"]))
        nodes.append(helper.make_node("MaxPool", ["relu_out"], ["pool_out"], kernel_shape=[3, 3],
                                      strides=[2, 2], pads=[1] * 4))
        nodes.append(helper.make_node("Conv", ["pool_out", weight("w2", [c, c, 1, 1], c)], ["y"]))
    else:
        raise ValueError(kind)
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ys)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="smelt bench/gen_tune_ops.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    x = rng.uniform(-1, 1, xs).astype(np.float32)
    return model, x


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="write the single-operator tuning benchmark models")
    ap.add_argument("--out", default="/tmp/smelt_tune_ops", help="output folder (default: %(default)s)")
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--list", action="store_true", help="print the names and exit")
    ap.add_argument("--no-data", action="store_true", help="skip test_data_set_0 (no ONNX Runtime needed)")
    a = ap.parse_args(argv)
    only = set(a.only.split(",")) if a.only else None
    if a.list:
        print("\n".join(n for n, _ in OPS))
        return 0
    if not a.no_data:
        import onnxruntime as ort
    for name, p in OPS:
        if only and name not in only:
            continue
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        model, x = build(name, p, rng)
        d = os.path.join(a.out, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        onnx.save(model, os.path.join(d, "model.onnx"))
        if a.no_data:
            print(d)
            continue
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        y = sess.run(None, {"x": x})[0]
        td = os.path.join(d, "test_data_set_0")
        os.makedirs(td)
        for fname, arr, tname in (("input_0.pb", x, "x"), ("output_0.pb", y, "y")):
            with open(os.path.join(td, fname), "wb") as f:
                f.write(numpy_helper.from_array(arr, tname).SerializeToString())
        print(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
