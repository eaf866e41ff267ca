#!/usr/bin/env python3
"""DeformConv cases beyond the four ONNX node tests, in the ONNX backend-test
layout (<case>/model.onnx, <case>/test_data_set_0/*.pb): groups and offset
groups together, strides, dilations, uneven pads, a non-square kernel, a mask
without a bias (B omitted), offsets that carry taps off the image, float64.
Expected outputs come from ONNX Runtime; each is checked against onnx's
reference implementation too, so a disagreement between the two oracles
stops the generator instead of testing smelt against either.

Run by ctest (conformance/deform_cases_*) with the pyenv python3 (onnx and
onnxruntime from PyPI, installed by scripts/setup.sh).
"""
import argparse
import os

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

# name: (N, C, H, W, M, kH, kW, attrs, offset scale, bias, mask, dtype)
CASES = {
    "deform_basic_pad1": (2, 4, 7, 7, 6, 3, 3, dict(pads=[1, 1, 1, 1]), 1.5, True, False, np.float32),
    "deform_groups_stride_dilation": (1, 4, 9, 8, 6, 3, 2,
                                      dict(group=2, offset_group=2, strides=[2, 1],
                                           dilations=[2, 1], pads=[2, 0, 1, 1]),
                                      2.0, True, True, np.float32),
    "deform_mask_no_bias": (1, 3, 6, 5, 2, 2, 2, dict(offset_group=3), 1.0, False, True, np.float32),
    "deform_taps_off_image": (1, 2, 5, 5, 3, 3, 3, dict(pads=[1, 1, 1, 1]), 8.0, True, True, np.float32),
    "deform_float64": (1, 2, 5, 6, 4, 3, 3, dict(strides=[2, 2], pads=[1, 1, 1, 1], group=2),
                       1.5, True, True, np.float64),
}


def out_size(n, k, s, d, pb, pe):
    return (n + pb + pe - (k - 1) * d - 1) // s + 1


def make_case(name, spec, rng):
    n, c, h, w, m, kh, kw, attrs, scale, bias, mask, dt = spec
    g, og = attrs.get("group", 1), attrs.get("offset_group", 1)
    sh, sw = attrs.get("strides", [1, 1])
    dh, dw = attrs.get("dilations", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    oh = out_size(h, kh, sh, dh, pads[0], pads[2])
    ow = out_size(w, kw, sw, dw, pads[1], pads[3])
    feeds = {
        "X": rng.standard_normal((n, c, h, w)).astype(dt),
        "W": rng.standard_normal((m, c // g, kh, kw)).astype(dt),
        "offset": (rng.uniform(-scale, scale, (n, og * kh * kw * 2, oh, ow))).astype(dt),
    }
    inputs = ["X", "W", "offset"]
    if bias:
        feeds["B"] = rng.standard_normal(m).astype(dt)
    if bias or mask:
        inputs.append("B" if bias else "")
    if mask:
        feeds["mask"] = rng.uniform(0, 1, (n, og * kh * kw, oh, ow)).astype(dt)
        inputs.append("mask")
    elem = TensorProto.FLOAT if dt == np.float32 else TensorProto.DOUBLE
    node = helper.make_node("DeformConv", inputs, ["Y"], kernel_shape=[kh, kw], **attrs)
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info(k, elem, v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info("Y", elem, [n, m, oh, ow])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model, feeds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = np.random.default_rng(19)
    for name, spec in CASES.items():
        model, feeds = make_case(name, spec, rng)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        sess = ort.InferenceSession(model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        (want,) = sess.run(None, feeds)
        (ref,) = ReferenceEvaluator(model).run(None, feeds)
        np.testing.assert_allclose(want, ref, rtol=1e-4, atol=1e-4, err_msg=name)
        d = os.path.join(a.out, "test_" + name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        for i, k in enumerate(feeds):
            with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(feeds[k], k).SerializeToString())
        with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(want, "Y").SerializeToString())


if __name__ == "__main__":
    main()
