#!/usr/bin/env python3
"""Node tests for attributes smelt once ignored (issue #14), in the ONNX
backend-test layout (<case>/model.onnx, <case>/test_data_set_0/*.pb).

Expected outputs come from numpy, written from the ONNX operator
definitions, not from smelt.  Run by ctest (conformance/attr_cases_*) with
Debian's python3 (numpy, onnx 1.12: the models use opsets newer than it
knows, so they are written without onnx.checker).

space_to_depth_crd: SpaceToDepth-28 with mode=CRD returned DCR's values
with exit status 0 while mode was ignored.

Values the ONNX node tests leave out, for ops added later: hardmax_nan_ties
(the first maximum wins a tie, a NaN is the maximum as in numpy's argmax),
mod28_float_signed_zero (Mod-28's fmod=0 on floats, numpy's mod, was
refused before), bitshift28_* (every count of BitShift-28's definition:
negative and past the width, signed types; expected values from Python's
integers) and bitwise_*_edges (the extreme values of each width).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


def space_to_depth(x, b, mode):
    """ONNX SpaceToDepth-28: blocks of b x b pixels move into channels;
    DCR orders the new channels (row offset, column offset, channel), CRD
    (channel, row offset, column offset)."""
    n, c, h, w = x.shape
    y = np.empty((n, c * b * b, h // b, w // b), x.dtype)
    for ci in range(c):
        for bh in range(b):
            for bw in range(b):
                ch = (bh * b + bw) * c + ci if mode == "DCR" else ci * b * b + bh * b + bw
                y[:, ch] = x[:, ci, bh::b, bw::b]
    return y


def write_case(out, name, opset, node, inputs, outputs):
    """inputs and outputs: lists of (name, numpy array)."""
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    vi = lambda n, a: helper.make_tensor_value_info(
        n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], list(a.shape))
    graph = helper.make_graph([node], name, [vi(n, a) for n, a in inputs],
                              [vi(n, a) for n, a in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, os.path.join(d, "model.onnx"))
    for kind, items in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(items):
            with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def space_to_depth_case(out, name, opset, shape, b, mode):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    attrs = {"blocksize": b}
    if mode is not None:
        attrs["mode"] = mode
    node = helper.make_node("SpaceToDepth", ["x"], ["y"], **attrs)
    y = space_to_depth(x, b, mode or "DCR")
    write_case(out, name, opset, node, [("x", x)], [("y", y)])


def hardmax(x, axis):
    y = np.zeros_like(x)
    idx = np.expand_dims(np.argmax(x, axis=axis), axis)
    np.put_along_axis(y, idx, 1, axis=axis)
    return y


def shift_value(x, n, left, bits, signed):
    """BitShift-28: a count < 0 or >= the width leaves only the sign fill."""
    if n < 0 or n >= bits:
        return -1 if (not left and signed and x < 0) else 0
    if not left:
        return x >> n  # Python's >> is arithmetic on negative ints
    r = (x << n) & ((1 << bits) - 1)
    return r - (1 << bits) if signed and r >= 1 << (bits - 1) else r


def bitshift_cases(out):
    for dt in (np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64):
        info = np.iinfo(dt)
        bits, signed = info.bits, info.min < 0
        xs = [0, 1, 5, info.max, info.max // 3]
        if signed:
            xs += [-1, -7, info.min, info.min + 1]
        ns = [0, 1, 3, bits - 1, bits, bits + 1, 63, 64, 100]
        if signed:
            ns += [-1, -64, info.min]
        else:
            ns += [info.max]
        x = np.array(xs, dt).reshape(-1, 1)
        n = np.array(ns, dt).reshape(1, -1)
        for left in (True, False):
            y = np.array([[shift_value(int(a), int(c), left, bits, signed) for c in ns] for a in xs], dt)
            write_case(out, "bitshift28_%s_%s" % ("left" if left else "right", np.dtype(dt).name), 28,
                       helper.make_node("BitShift", ["x", "n"], ["y"],
                                        direction="LEFT" if left else "RIGHT"),
                       [("x", x), ("n", n)], [("y", y)])


def bitwise_cases(out):
    for dt in (np.int8, np.uint16, np.int32, np.uint64):
        info = np.iinfo(dt)
        a = np.array([0, 1, info.max, info.min, info.max // 5, 12345 % (int(info.max) + 1)], dt)
        b = a[::-1].copy()
        name = np.dtype(dt).name
        for op, f in (("And", np.bitwise_and), ("Or", np.bitwise_or), ("Xor", np.bitwise_xor)):
            write_case(out, "bitwise_%s_edges_%s" % (op.lower(), name), 18,
                       helper.make_node("Bitwise" + op, ["a", "b"], ["y"]),
                       [("a", a), ("b", b)], [("y", f(a, b))])
        write_case(out, "bitwise_not_edges_%s" % name, 18, helper.make_node("BitwiseNot", ["a"], ["y"]),
                   [("a", a)], [("y", np.invert(a))])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    space_to_depth_case(out, "space_to_depth_crd", 28, (2, 3, 4, 6), 2, "CRD")
    space_to_depth_case(out, "space_to_depth_crd_b3", 28, (1, 2, 6, 9), 3, "CRD")
    space_to_depth_case(out, "space_to_depth_dcr", 28, (2, 3, 4, 6), 2, "DCR")
    space_to_depth_case(out, "space_to_depth_default", 28, (2, 3, 4, 6), 2, None)
    space_to_depth_case(out, "space_to_depth_opset13", 13, (1, 4, 4, 4), 2, None)

    x = np.array([[1, 5, 5, 2], [np.nan, 7, np.nan, 1], [-1, -1, -3, -1]], np.float32)
    for axis in (0, 1):
        write_case(out, "hardmax_nan_ties_axis%d" % axis, 13,
                   helper.make_node("Hardmax", ["x"], ["y"], axis=axis),
                   [("x", x)], [("y", hardmax(x, axis))])

    a = np.array([0.0, -0.0, 5.5, -5.5, 1.0, -1.0, 7.25, -0.0], np.float32)
    b = np.array([-2.0, 2.0, -2.0, 2.0, np.inf, -np.inf, 0.25, -3.0], np.float32)
    write_case(out, "mod28_float_signed_zero", 28,
               helper.make_node("Mod", ["a", "b"], ["y"], fmod=0),
               [("a", a), ("b", b)], [("y", np.mod(a, b))])
    bitshift_cases(out)
    bitwise_cases(out)


if __name__ == "__main__":
    main()
