#!/usr/bin/env python3
"""Node tests for the ai.onnx.ml ops smelt implements (Binarizer,
ArrayFeatureExtractor, TreeEnsemble) beyond their ONNX node tests, in the
ONNX backend-test layout.  Expected values come from the operator
definitions, written here with numpy (a tree walk per row), not from smelt.
onnx's reference agrees on every case but two, where it departs from the
spec: a tree whose root is a leaf (it reads leaf_* at the root's node index,
the spec the leaf its branches name) and set members listed in node order
when the walk meets them in another order.

Run by ctest (conformance/ml_cases_{reference,compiled}) with the pyenv
python3 (onnx 1.23: TreeEnsemble is ai.onnx.ml opset 5).
"""
import argparse
import math
import os
import shutil

import numpy as np
import onnx
from onnx import helper, numpy_helper

ML = "ai.onnx.ml"
TYPES = {np.dtype(np.float32): onnx.TensorProto.FLOAT, np.dtype(np.float64): onnx.TensorProto.DOUBLE,
         np.dtype(np.int64): onnx.TensorProto.INT64, np.dtype(np.int32): onnx.TensorProto.INT32}


def write_case(out, name, ml_opset, node, inputs, outputs):
    """inputs and outputs: lists of (name, numpy array)."""
    d = os.path.join(out, "test_" + name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    vi = lambda n, a: helper.make_tensor_value_info(n, TYPES[a.dtype], list(a.shape))
    graph = helper.make_graph([node], name, [vi(n, a) for n, a in inputs],
                              [vi(n, a) for n, a in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(ML, ml_opset)])
    model.ir_version = 8
    onnx.save(model, os.path.join(d, "model.onnx"))
    for kind, items in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(items):
            path = os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i))
            with open(path, "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


# ---- Binarizer: x > threshold in x's type ----

def binarizer_cases(out):
    x = np.array([[-2.5, -1.0, 0.0, np.nan], [0.5, 1.0, 1.5, np.inf]], np.float32)
    node = helper.make_node("Binarizer", ["x"], ["y"], domain=ML, threshold=-1.0)
    write_case(out, "binarizer_negative_threshold_nan", 1, node, [("x", x)],
               [("y", (x > np.float32(-1.0)).astype(np.float32))])
    xi = np.array([-3, 0, 1, 2, 7], np.int64)
    node = helper.make_node("Binarizer", ["x"], ["y"], domain=ML, threshold=1.5)
    write_case(out, "binarizer_int64", 1, node, [("x", xi)],
               [("y", (xi > 1.5).astype(np.int64))])
    xd = np.array([0.0, 1e-300, -1e-300], np.float64)
    node = helper.make_node("Binarizer", ["x"], ["y"], domain=ML)  # threshold 0
    write_case(out, "binarizer_double_default", 1, node, [("x", xd)],
               [("y", (xd > 0).astype(np.float64))])


# ---- ArrayFeatureExtractor: a gather along the last axis ----

def afe(x, y):
    idx = y.ravel()
    shape = (1, idx.size) if x.ndim == 1 else x.shape[:-1] + (idx.size,)
    return x[..., idx].reshape(shape)


def array_feature_extractor_cases(out):
    node = helper.make_node("ArrayFeatureExtractor", ["x", "y"], ["z"], domain=ML)
    x1 = np.array([10, 11, 12, 13], np.int32)
    y1 = np.array([3, 0, 3], np.int64)
    write_case(out, "afe_rank1_repeats", 1, node, [("x", x1), ("y", y1)],
               [("z", afe(x1, y1))])
    x3 = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    y2 = np.array([[1, -1]], np.int64)  # -1: the last, as numpy and onnx's reference
    write_case(out, "afe_rank3_2d_indices_negative", 1, node, [("x", x3), ("y", y2)],
               [("z", afe(x3, y2))])


# ---- TreeEnsemble: each row down each tree to a leaf, leaves summed per target ----

MODES = {"LEQ": 0, "LT": 1, "GTE": 2, "GT": 3, "EQ": 4, "NEQ": 5, "MEMBER": 6}


def take_true(mode, x, split, members, missing_true):
    if math.isnan(x) and missing_true:
        return True
    return {0: x <= split, 1: x < split, 2: x >= split, 3: x > split, 4: x == split,
            5: x != split, 6: x in members}[mode]


def tree_ensemble(x, t):
    """t: the attribute values as lists; membership sets in node order."""
    sets, pos = {}, 0
    for i, m in enumerate(t["modes"]):
        if m == 6:
            end = pos
            while not math.isnan(t["members"][end]):
                end += 1
            sets[i] = set(t["members"][pos:end])
            pos = end + 1
    big = float(np.finfo(x.dtype).max)
    start = {0: 0.0, 1: 0.0, 2: big, 3: -big}[t["aggregate"]]
    y = np.full((x.shape[0], t["n_targets"]), start, np.float64)
    for r in range(x.shape[0]):
        for root in t["roots"]:
            node = root
            for _ in range(len(t["modes"]) + 1):
                v = float(x[r, t["features"][node]])
                yes = take_true(t["modes"][node], v, t["splits"][node], sets.get(node, set()),
                                t.get("missing", [0] * len(t["modes"]))[node])
                nxt = t["true_ids"][node] if yes else t["false_ids"][node]
                if (t["true_leafs"] if yes else t["false_leafs"])[node]:
                    break
                node = nxt
            else:
                raise ValueError("the trees have a cycle")
            w, tgt = t["weights"][nxt], t["targets"][nxt]
            if t["aggregate"] == 0:
                y[r, tgt] += w / len(t["roots"])
            elif t["aggregate"] == 1:
                y[r, tgt] += w
            elif t["aggregate"] == 2:
                y[r, tgt] = min(y[r, tgt], w)
            else:
                y[r, tgt] = max(y[r, tgt], w)
    return y.astype(x.dtype)


def tree_node(t, dtype):
    kw = dict(
        domain=ML, n_targets=t["n_targets"], aggregate_function=t["aggregate"],
        tree_roots=t["roots"], nodes_featureids=t["features"],
        nodes_modes=numpy_helper.from_array(np.array(t["modes"], np.uint8), "modes"),
        nodes_splits=numpy_helper.from_array(np.array(t["splits"], dtype), "splits"),
        nodes_truenodeids=t["true_ids"], nodes_falsenodeids=t["false_ids"],
        nodes_trueleafs=t["true_leafs"], nodes_falseleafs=t["false_leafs"],
        leaf_targetids=t["targets"],
        leaf_weights=numpy_helper.from_array(np.array(t["weights"], dtype), "weights"))
    if "missing" in t:
        kw["nodes_missing_value_tracks_true"] = t["missing"]
    if "members" in t:
        kw["membership_values"] = numpy_helper.from_array(np.array(t["members"], dtype), "mv")
    return helper.make_node("TreeEnsemble", ["x"], ["y"], **kw)


def forest(aggregate):
    """Three trees over 3 features and 2 targets: every comparison mode, a
    NaN-tracking node, a set membership node visited after a later one in
    node order, a tree that is one leaf."""
    return dict(
        n_targets=2, aggregate=aggregate, roots=[0, 3, 5],
        # tree 0: nodes 0..2; tree 1: nodes 3, 4; tree 2: node 5, a leaf
        features=[0, 1, 2, 2, 0, 1],
        modes=[MODES["LEQ"], MODES["MEMBER"], MODES["NEQ"], MODES["GT"], MODES["MEMBER"],
               MODES["EQ"]],
        splits=[0.5, 0.0, 2.0, 1.0, 0.0, 0.0],
        true_ids=[2, 0, 1, 4, 4, 6], false_ids=[1, 1, 1, 5, 5, 6],
        true_leafs=[0, 1, 1, 0, 1, 1], false_leafs=[0, 1, 0, 1, 1, 1],
        missing=[1, 0, 0, 0, 1, 0],
        # node 1's set, then node 4's (node order; the walk meets 4 second too)
        members=[1.0, 3.0, float("nan"), -1.0, float("nan")],
        targets=[0, 1, 1, 0, 1, 0, 1], weights=[1.5, -2.0, 4.0, 8.0, 0.25, 3.0, -5.0])


def tree_ensemble_cases(out):
    x = np.array([[0.0, 1.0, 2.0], [1.0, 3.0, 5.0], [np.nan, 2.0, 2.0], [2.0, np.nan, 0.0],
                  [0.5, -1.0, np.nan], [-1.0, 3.0, 1.0]], np.float32)
    for agg, name in ((0, "average"), (1, "sum"), (2, "min"), (3, "max")):
        t = forest(agg)
        write_case(out, "tree_ensemble_" + name, 5, tree_node(t, np.float32), [("x", x)],
                   [("y", tree_ensemble(x, t))])
    t = forest(1)
    xd = x.astype(np.float64)
    write_case(out, "tree_ensemble_double", 5, tree_node(t, np.float64), [("x", xd)],
               [("y", tree_ensemble(xd, t))])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    binarizer_cases(args.out)
    array_feature_extractor_cases(args.out)
    tree_ensemble_cases(args.out)


if __name__ == "__main__":
    main()
