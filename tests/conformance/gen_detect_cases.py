#!/usr/bin/env python3
"""Detection-head cases: NonMaxSuppression whose row count K depends on the
data, in the ONNX backend-test layout (<case>/model.onnx,
<case>/test_data_set_N/*.pb), expected outputs from onnx's reference
implementation (onnx.reference.ReferenceEvaluator).

Compiled code makes K a run-time dim the NMS kernel writes mid-run; the ops
after it (Gather, Squeeze, Cast, RoiAlign, Flatten, Gemm, elementwise) loop
over K rows and the outputs come back with K rows, K = 0 included:

  detect_nms_roi      NMS -> Gather/Squeeze of the selected indices -> the kept
                      boxes -> RoiAlign over them -> Relu; data sets with both
                      classes contributing, with every score below the
                      threshold (K = 0) and with a few survivors
  detect_nms_center   center_point_box=1, 2 batches x 3 classes, the
                      max_output_boxes_per_class a model input (3 and 100), no
                      score_threshold; int64 elementwise on the indices, Cast
  detect_two_nms      two NMS nodes on two scores inputs (two counts), each
                      followed by a Gather of its boxes; Flatten + Gemm on one
  detect_nms_reduce   NMS -> Gather of the kept boxes' scores -> ReduceSum over
                      the K axis: compiled code refuses it ("data-dependent
                      count", expected_failures_detect.txt); the reference
                      executor runs it

The other data-dependent selections, NonZero and Compress (K the number of
non-zero elements / true condition entries):

  select_nonzero_chain  NonZero of a float32 [3, 5, 4] (exact zeros, a -0.0,
                      which is zero, and a NaN, which is not) -> Transpose to
                      [K, 3] -> GatherND of the non-zero values -> Mul by 2;
                      data sets with some zeros, all zeros (K = 0), none (K = 60)
  select_nonzero_types  three NonZero nodes (three counts) on an int32 [7], a
                      bool [2, 3] and a float16 [4, 4] input
  select_compress_axis  Compress axis=1 of a [4, 6, 3] by a bool [5] (shorter
                      than the axis: slice 5 is never kept) -> Relu; K = 0 too
  select_compress_flat  Compress without axis (the flattened int64 [2, 3, 2])
                      by a bool [12] -> Add 1
  select_compress_past  a bool [8] condition on an axis of 6; only data sets
                      whose entries 6 and 7 are false (onnx's reference,
                      numpy.compress, raises on a true entry past the axis, which
                      the ONNX spec leaves undefined, so no data set has one)

The data: seeded numpy, float32, scores all distinct and none within 1e-3 of
the score threshold, no two boxes with an IoU within 1e-3 of the IoU
threshold (so float rounding cannot flip a decision).

Run by ctest (conformance/detect_cases_*) with the pyenv python3 (onnx from
PyPI, installed by scripts/setup.sh).  --ort (not used by ctest) also runs
every data set on ONNX Runtime and fails where it disagrees with onnx's
reference.
"""
import argparse
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as TP
from onnx.reference import ReferenceEvaluator

OPSET = 17
MARGIN = 1e-3
IMAGE = 32.0


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name))


def save(out, name, graph, data_sets, check_ort):
    """data_sets: a list of feed dicts; each gets onnx's reference outputs in
    test_data_set_N.  Returns the outputs of every data set."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    ref = ReferenceEvaluator(model)
    d = os.path.join(out, name)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    results = []
    for n, feeds in enumerate(data_sets):
        expected = ref.run(None, feeds)
        if check_ort:
            ort_check(model, feeds, expected, "%s/test_data_set_%d" % (name, n))
        data = os.path.join(d, "test_data_set_%d" % n)
        os.makedirs(data)
        for i, inp in enumerate(graph.input):
            t = numpy_helper.from_array(feeds[inp.name], inp.name)
            with open(os.path.join(data, "input_%d.pb" % i), "wb") as f:
                f.write(t.SerializeToString())
        for i, (o, v) in enumerate(zip(graph.output, expected)):
            t = numpy_helper.from_array(np.asarray(v), o.name)
            with open(os.path.join(data, "output_%d.pb" % i), "wb") as f:
                f.write(t.SerializeToString())
        results.append(expected)
    return results


def ort_check(model, feeds, expected, where):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    got = sess.run(None, feeds)
    for o, e, g in zip(model.graph.output, expected, got):
        e, g = np.asarray(e), np.asarray(g)
        if e.shape != g.shape or e.dtype != g.dtype:
            raise SystemExit("%s %s: reference %s %s, ONNX Runtime %s %s"
                             % (where, o.name, e.dtype, e.shape, g.dtype, g.shape))
        if not np.allclose(e, g, rtol=1e-5, atol=1e-5, equal_nan=True):
            raise SystemExit("%s %s: reference and ONNX Runtime differ by %g"
                             % (where, o.name, float(np.max(np.abs(e.astype(np.float64) - g)))))


# ---- data ------------------------------------------------------------------

def corners(rng, n):
    """n boxes [x1, y1, x2, y2] in a 32x32 image, x2 > x1, y2 > y1."""
    x1 = rng.uniform(0, IMAGE - 6, n)
    y1 = rng.uniform(0, IMAGE - 6, n)
    x2 = np.minimum(x1 + rng.uniform(4, 14, n), IMAGE)
    y2 = np.minimum(y1 + rng.uniform(4, 14, n), IMAGE)
    return np.stack([x1, y1, x2, y2], -1).astype(np.float32)


def iou_clear(c, thr):
    """No pair of boxes (corners, [n, 4]) with an IoU within MARGIN of thr."""
    c = c.astype(np.float64)
    area = (c[:, 2] - c[:, 0]) * (c[:, 3] - c[:, 1])
    w = np.clip(np.minimum(c[:, None, 2], c[None, :, 2]) - np.maximum(c[:, None, 0], c[None, :, 0]), 0, None)
    h = np.clip(np.minimum(c[:, None, 3], c[None, :, 3]) - np.maximum(c[:, None, 1], c[None, :, 1]), 0, None)
    inter = w * h
    iou = inter / (area[:, None] + area[None, :] - inter)
    np.fill_diagonal(iou, 0.0)
    return not np.any(np.abs(iou - thr) < MARGIN)


def boxes_for(rng, batches, n, thr):
    """[batches, n, 4] corner boxes, each batch clear of the IoU threshold."""
    out = []
    for _ in range(batches):
        while True:
            c = corners(rng, n)
            if iou_clear(c, thr):
                out.append(c)
                break
    return np.stack(out)


def scores_for(rng, shape, lo, hi, thr=None):
    """Distinct float32 scores uniform in [lo, hi), none within MARGIN of thr."""
    while True:
        s = rng.uniform(lo, hi, shape).astype(np.float32)
        ok = len(np.unique(s)) == s.size
        if thr is not None:
            ok = ok and not np.any(np.abs(s.astype(np.float64) - thr) < MARGIN)
        if ok:
            return s


def few_above(rng, shape, thr, k):
    """Scores all below thr but k of them (spread over the array) above it."""
    s = scores_for(rng, shape, 0.0, thr - 2 * MARGIN)
    flat = s.reshape(-1)
    pick = rng.choice(flat.size, k, replace=False)
    flat[pick] = scores_for(rng, (k,), thr + 2 * MARGIN, 1.0)
    assert len(np.unique(flat)) == flat.size
    return s


# ---- cases -----------------------------------------------------------------

def nms_roi(out, rng, check_ort):
    """NMS -> the kept boxes (Gather of Squeeze(boxes) by the selected box
    index) and their batch index -> RoiAlign 2x2 (spatial_scale 0.25: the
    32x32 image onto the 8x8 feature map) -> Relu."""
    g = helper.make_graph(
        [const("max_out", np.array([10], np.int64)), const("iou", np.array([0.5], np.float32)),
         const("score_thr", np.array([0.3], np.float32)),
         const("col2", np.array([2], np.int64)), const("col0", np.array([0], np.int64)),
         const("ax0", np.array([0], np.int64)), const("ax1", np.array([1], np.int64)),
         helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score_thr"],
                          ["sel"], center_point_box=0),
         helper.make_node("Gather", ["sel", "col2"], ["sel_box"], axis=1),
         helper.make_node("Squeeze", ["sel_box", "ax1"], ["box_idx"]),
         helper.make_node("Squeeze", ["boxes", "ax0"], ["boxes2"]),
         helper.make_node("Gather", ["boxes2", "box_idx"], ["kept"], axis=0),
         helper.make_node("Gather", ["sel", "col0"], ["sel_batch"], axis=1),
         helper.make_node("Squeeze", ["sel_batch", "ax1"], ["batch"]),
         helper.make_node("RoiAlign", ["feature", "kept", "batch"], ["roi"], output_height=2,
                          output_width=2, spatial_scale=0.25, sampling_ratio=2),
         helper.make_node("Relu", ["roi"], ["pooled"])],
        "detect_nms_roi",
        [vi("boxes", TP.FLOAT, [1, 100, 4]), vi("scores", TP.FLOAT, [1, 2, 100]),
         vi("feature", TP.FLOAT, [1, 4, 8, 8])],
        [vi("sel", TP.INT64, ["K", 3]), vi("kept", TP.FLOAT, ["K", 4]),
         vi("pooled", TP.FLOAT, ["K", 4, 2, 2])])

    def feeds(scores):
        return {"boxes": boxes_for(rng, 1, 100, 0.5), "scores": scores,
                "feature": rng.standard_normal((1, 4, 8, 8)).astype(np.float32)}
    sets = [feeds(scores_for(rng, (1, 2, 100), 0.0, 0.45, 0.3)),      # both classes
            feeds(scores_for(rng, (1, 2, 100), 0.0, 0.3 - 2 * MARGIN)),  # none: K = 0
            feeds(few_above(rng, (1, 2, 100), 0.3, 3))]               # a few survivors
    return save(out, "detect_nms_roi", g, sets, check_ort)


def to_center(c):
    """[..., 4] corners to [xc, yc, w, h]."""
    return np.concatenate([(c[..., :2] + c[..., 2:]) / 2, c[..., 2:] - c[..., :2]], -1).astype(np.float32)


def nms_center(out, rng, check_ort):
    """center_point_box=1 over 2 batches x 3 classes x 40 boxes, the per-class
    limit a model input, no score_threshold; the kept boxes gathered from the
    boxes flattened to [80, 4] by batch * 40 + box (int64 Mul and Add over the
    K rows), the selected indices also Cast to float."""
    g = helper.make_graph(
        [const("iou", np.array([0.5], np.float32)),
         const("col0", np.array([0], np.int64)), const("col2", np.array([2], np.int64)),
         const("ax1", np.array([1], np.int64)), const("n_boxes", np.array(40, np.int64)),
         const("flat", np.array([80, 4], np.int64)),
         helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou"], ["sel"],
                          center_point_box=1),
         helper.make_node("Gather", ["sel", "col0"], ["b1"], axis=1),
         helper.make_node("Squeeze", ["b1", "ax1"], ["b"]),
         helper.make_node("Gather", ["sel", "col2"], ["i1"], axis=1),
         helper.make_node("Squeeze", ["i1", "ax1"], ["i"]),
         helper.make_node("Mul", ["b", "n_boxes"], ["b40"]),
         helper.make_node("Add", ["b40", "i"], ["row"]),
         helper.make_node("Reshape", ["boxes", "flat"], ["boxes_flat"]),
         helper.make_node("Gather", ["boxes_flat", "row"], ["kept"], axis=0),
         helper.make_node("Cast", ["sel"], ["sel_f"], to=TP.FLOAT)],
        "detect_nms_center",
        [vi("boxes", TP.FLOAT, [2, 40, 4]), vi("scores", TP.FLOAT, [2, 3, 40]),
         vi("max_out", TP.INT64, [1])],
        [vi("sel", TP.INT64, ["K", 3]), vi("kept", TP.FLOAT, ["K", 4]),
         vi("sel_f", TP.FLOAT, ["K", 3])])
    sets = []
    for m in (3, 100):
        sets.append({"boxes": to_center(boxes_for(rng, 2, 40, 0.5)),
                     "scores": scores_for(rng, (2, 3, 40), 0.0, 1.0),
                     "max_out": np.array([m], np.int64)})
    return save(out, "detect_nms_center", g, sets, check_ort)


def two_nms(out, rng, check_ort):
    """Two NMS nodes on one set of boxes with two scores inputs (two counts,
    Ka and Kb); each output a Gather of its kept boxes, the second through
    Flatten and Gemm (a 4x3 weight and a bias) too."""
    w = rng.standard_normal((4, 3)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    g = helper.make_graph(
        [const("max_a", np.array([5], np.int64)), const("max_b", np.array([4], np.int64)),
         const("iou_a", np.array([0.5], np.float32)), const("iou_b", np.array([0.3], np.float32)),
         const("thr_a", np.array([0.2], np.float32)), const("thr_b", np.array([0.6], np.float32)),
         const("col2", np.array([2], np.int64)), const("ax0", np.array([0], np.int64)),
         const("ax1", np.array([1], np.int64)), const("w", w), const("bias", bias),
         helper.make_node("Squeeze", ["boxes", "ax0"], ["boxes2"]),
         helper.make_node("NonMaxSuppression", ["boxes", "scores_a", "max_a", "iou_a", "thr_a"], ["sel_a"]),
         helper.make_node("Gather", ["sel_a", "col2"], ["ia1"], axis=1),
         helper.make_node("Squeeze", ["ia1", "ax1"], ["ia"]),
         helper.make_node("Gather", ["boxes2", "ia"], ["kept_a"], axis=0),
         helper.make_node("NonMaxSuppression", ["boxes", "scores_b", "max_b", "iou_b", "thr_b"], ["sel_b"]),
         helper.make_node("Gather", ["sel_b", "col2"], ["ib1"], axis=1),
         helper.make_node("Squeeze", ["ib1", "ax1"], ["ib"]),
         helper.make_node("Gather", ["boxes2", "ib"], ["kept_b"], axis=0),
         helper.make_node("Flatten", ["kept_b"], ["flat_b"], axis=1),
         helper.make_node("Gemm", ["flat_b", "w", "bias"], ["proj_b"], alpha=0.5)],
        "detect_two_nms",
        [vi("boxes", TP.FLOAT, [1, 30, 4]), vi("scores_a", TP.FLOAT, [1, 1, 30]),
         vi("scores_b", TP.FLOAT, [1, 2, 30])],
        [vi("kept_a", TP.FLOAT, ["Ka", 4]), vi("kept_b", TP.FLOAT, ["Kb", 4]),
         vi("proj_b", TP.FLOAT, ["Kb", 3])])
    sets = []
    for lo_a in (0.0, None):
        boxes = None
        while boxes is None:
            c = boxes_for(rng, 1, 30, 0.5)
            boxes = c if iou_clear(c[0], 0.3) else None
        # the second data set: no score of the first NMS above its threshold
        sa = (scores_for(rng, (1, 1, 30), 0.0, 1.0, 0.2) if lo_a is not None
              else scores_for(rng, (1, 1, 30), 0.0, 0.2 - 2 * MARGIN))
        sets.append({"boxes": boxes, "scores_a": sa,
                     "scores_b": scores_for(rng, (1, 2, 30), 0.0, 1.0, 0.6)})
    return save(out, "detect_two_nms", g, sets, check_ort)


def nms_reduce(out, rng, check_ort):
    """NMS -> the kept boxes' scores (Gather of the flattened scores by the
    selected box index) -> ReduceSum over the K axis to a scalar: the count
    is dropped, which compiled code refuses."""
    g = helper.make_graph(
        [const("max_out", np.array([6], np.int64)), const("iou", np.array([0.5], np.float32)),
         const("score_thr", np.array([0.25], np.float32)),
         const("col2", np.array([2], np.int64)), const("ax1", np.array([1], np.int64)),
         const("ax01", np.array([0, 1], np.int64)), const("axk", np.array([0], np.int64)),
         helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score_thr"], ["sel"]),
         helper.make_node("Gather", ["sel", "col2"], ["i1"], axis=1),
         helper.make_node("Squeeze", ["i1", "ax1"], ["i"]),
         helper.make_node("Squeeze", ["scores", "ax01"], ["scores1"]),
         helper.make_node("Gather", ["scores1", "i"], ["kept_scores"], axis=0),
         helper.make_node("ReduceSum", ["kept_scores", "axk"], ["total"], keepdims=0)],
        "detect_nms_reduce",
        [vi("boxes", TP.FLOAT, [1, 24, 4]), vi("scores", TP.FLOAT, [1, 1, 24])],
        [vi("total", TP.FLOAT, [])])
    # some kept (the limit of 6), then none: the sum over no rows is 0
    sets = [{"boxes": boxes_for(rng, 1, 24, 0.5), "scores": scores_for(rng, (1, 1, 24), 0.0, 1.0, 0.25)},
            {"boxes": boxes_for(rng, 1, 24, 0.5),
             "scores": scores_for(rng, (1, 1, 24), 0.0, 0.25 - 2 * MARGIN)}]
    return save(out, "detect_nms_reduce", g, sets, check_ort)


def with_specials(rng, shape, zero_frac):
    """float32 normals, about zero_frac of them exact zeros and (if any) one of
    those a -0.0 (zero to NonZero), and a NaN (non-zero) in the middle."""
    x = rng.standard_normal(shape).astype(np.float32)
    x[np.abs(x) < 1e-3] = 0.5                   # no accidental near-zeros
    flat = x.reshape(-1)
    flat[rng.random(flat.size) < zero_frac] = 0.0
    if zero_frac:
        flat[1] = -0.0
    flat[flat.size // 2] = np.nan
    return x


def nonzero_chain(out, rng, check_ort):
    """NonZero [3, K] -> Transpose [K, 3] -> GatherND(x) [K] -> Mul by 2 (x of 75
    elements: more than smelt binds by value, so the count path runs)."""
    g = helper.make_graph(
        [const("two", np.array(2.0, np.float32)),
         helper.make_node("NonZero", ["x"], ["idx"]),
         helper.make_node("Transpose", ["idx"], ["idx_t"], perm=[1, 0]),
         helper.make_node("GatherND", ["x", "idx_t"], ["vals"]),
         helper.make_node("Mul", ["vals", "two"], ["doubled"])],
        "select_nonzero_chain",
        [vi("x", TP.FLOAT, [3, 5, 5])],
        [vi("idx", TP.INT64, [3, "K"]), vi("doubled", TP.FLOAT, ["K"])])
    zeros = np.zeros((3, 5, 5), np.float32)
    zeros.reshape(-1)[[1, 17]] = -0.0
    sets = [{"x": with_specials(rng, (3, 5, 5), 0.4)},     # some zeros
            {"x": zeros},                                  # all (-)zero: K = 0
            {"x": with_specials(rng, (3, 5, 5), 0.0)}]      # none zero: K = 75
    return save(out, "select_nonzero_chain", g, sets, check_ort)


def some_zero(rng, shape, dtype, k):
    """An array of dtype with exactly k non-zero entries (+-1..9, or True)."""
    x = np.zeros(int(np.prod(shape)), dtype)
    pick = rng.choice(x.size, k, replace=False)
    x[pick] = True if dtype == np.bool_ else (rng.integers(1, 10, k) * rng.choice([-1, 1], k)).astype(dtype)
    return x.reshape(shape)


def nonzero_types(out, rng, check_ort):
    """NonZero on int32 [7], bool [2, 3] and float16 [4, 4]: three counts."""
    g = helper.make_graph(
        [helper.make_node("NonZero", ["a"], ["ia"]),
         helper.make_node("NonZero", ["b"], ["ib"]),
         helper.make_node("NonZero", ["c"], ["ic"])],
        "select_nonzero_types",
        [vi("a", TP.INT32, [7]), vi("b", TP.BOOL, [2, 3]), vi("c", TP.FLOAT16, [4, 4])],
        [vi("ia", TP.INT64, [1, "Ka"]), vi("ib", TP.INT64, [2, "Kb"]),
         vi("ic", TP.INT64, [2, "Kc"])])
    sets = []
    for ka, kb, kc in ((3, 4, 7), (0, 6, 16), (7, 0, 0)):
        c = some_zero(rng, (4, 4), np.float16, kc)
        if kc < 16:
            c[c == 0] = np.where(rng.random(16 - kc) < 0.5, np.float16(-0.0), np.float16(0.0))
        if kc:
            c.reshape(-1)[np.flatnonzero(c)[0]] = np.nan   # NaN is non-zero
        sets.append({"a": some_zero(rng, (7,), np.int32, ka),
                     "b": some_zero(rng, (2, 3), np.bool_, kb), "c": c})
    return save(out, "select_nonzero_types", g, sets, check_ort)


def compress_axis(out, rng, check_ort):
    """Compress axis=1 of [4, 6, 3] by a bool [5] -> [4, K, 3] -> Relu."""
    g = helper.make_graph(
        [helper.make_node("Compress", ["x", "cond"], ["sel"], axis=1),
         helper.make_node("Relu", ["sel"], ["y"])],
        "select_compress_axis",
        [vi("x", TP.FLOAT, [4, 6, 3]), vi("cond", TP.BOOL, [5])],
        [vi("y", TP.FLOAT, [4, "K", 3])])

    def feeds(cond):
        return {"x": rng.standard_normal((4, 6, 3)).astype(np.float32),
                "cond": np.array(cond, np.bool_)}
    sets = [feeds([1, 0, 1, 1, 0]),    # K = 3
            feeds([0, 0, 0, 0, 0]),    # K = 0
            feeds([1, 1, 1, 1, 1])]    # K = 5: the sixth slice is past the condition
    return save(out, "select_compress_axis", g, sets, check_ort)


def compress_flat(out, rng, check_ort):
    """Compress without axis of int64 [2, 3, 2] by a bool [12] -> [K] -> Add 1."""
    g = helper.make_graph(
        [const("one", np.array(1, np.int64)),
         helper.make_node("Compress", ["x", "cond"], ["sel"]),
         helper.make_node("Add", ["sel", "one"], ["y"])],
        "select_compress_flat",
        [vi("x", TP.INT64, [2, 3, 2]), vi("cond", TP.BOOL, [12])],
        [vi("y", TP.INT64, ["K"])])

    def feeds(cond):
        return {"x": rng.integers(-1000, 1000, (2, 3, 2)).astype(np.int64), "cond": cond}
    sets = [feeds(some_zero(rng, (12,), np.bool_, 5)),   # K = 5
            feeds(np.zeros(12, np.bool_)),              # K = 0
            feeds(np.ones(12, np.bool_))]               # K = 12
    return save(out, "select_compress_flat", g, sets, check_ort)


def compress_past(out, rng, check_ort):
    """Compress axis=1 of [2, 6, 2] by a bool [8] -> [2, K, 2] -> Neg.  A true
    entry 6 or 7 would select a slice past the axis: the ONNX spec does not say
    what that means, onnx's reference raises, smelt refuses it; the data sets
    keep entries 6 and 7 false."""
    g = helper.make_graph(
        [helper.make_node("Compress", ["x", "cond"], ["sel"], axis=1),
         helper.make_node("Neg", ["sel"], ["y"])],
        "select_compress_past",
        [vi("x", TP.FLOAT, [2, 6, 2]), vi("cond", TP.BOOL, [8])],
        [vi("y", TP.FLOAT, [2, "K", 2])])

    def feeds(cond):
        return {"x": rng.standard_normal((2, 6, 2)).astype(np.float32),
                "cond": np.array(cond, np.bool_)}
    sets = [feeds([0, 1, 1, 0, 0, 1, 0, 0]),   # K = 3, the last slice kept
            feeds([0, 0, 0, 0, 0, 0, 0, 0])]   # K = 0
    return save(out, "select_compress_past", g, sets, check_ort)


def unique_flat(out, rng, check_ort):
    """Unique (not sorted: in order of first occurrence) of int32 [70]: Y,
    indices, inverse_indices, counts."""
    g = helper.make_graph(
        [helper.make_node("Unique", ["x"], ["y", "first", "inverse", "counts"], sorted=0)],
        "select_unique_flat", [vi("x", TP.INT32, [70])],
        [vi("y", TP.INT32, ["K"]), vi("first", TP.INT64, ["K"]), vi("inverse", TP.INT64, [70]),
         vi("counts", TP.INT64, ["K"])])
    sets = [{"x": rng.integers(-9, 9, 70).astype(np.int32)},     # many repeats
            {"x": rng.permutation(70).astype(np.int32) - 35},   # all distinct: K = 70
            {"x": np.full(70, -4, np.int32)}]                   # one value: K = 1
    return save(out, "select_unique_flat", g, sets, check_ort)


def unique_axis(out, rng, check_ort):
    """Unique (sorted) of float32 [3, 25] along axis 1 (columns, some
    repeated), then Relu of the unique columns (onnx's reference fails on
    sorted=0 with an axis)."""
    g = helper.make_graph(
        [helper.make_node("Unique", ["x"], ["y", "first", "inverse", "counts"], axis=1),
         helper.make_node("Relu", ["y"], ["r"])],
        "select_unique_axis", [vi("x", TP.FLOAT, [3, 25])],
        [vi("r", TP.FLOAT, [3, "K"]), vi("first", TP.INT64, ["K"]),
         vi("inverse", TP.INT64, [25]), vi("counts", TP.INT64, ["K"])])

    def columns(distinct):
        base = rng.standard_normal((3, distinct)).astype(np.float32)
        return base[:, rng.integers(0, distinct, 25)]
    sets = [{"x": columns(6)}, {"x": columns(25)}, {"x": columns(1)}]
    return save(out, "select_unique_axis", g, sets, check_ort)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--ort", action="store_true",
                    help="also check every data set against ONNX Runtime (development)")
    ap.add_argument("--print-counts", action="store_true",
                    help="print each output's row count (K) per data set")
    args = ap.parse_args()
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    rng = np.random.default_rng(16)
    counts = {}
    for name, fn in (("detect_nms_roi", nms_roi), ("detect_nms_center", nms_center),
                     ("detect_two_nms", two_nms), ("detect_nms_reduce", nms_reduce),
                     ("select_nonzero_chain", nonzero_chain), ("select_nonzero_types", nonzero_types),
                     ("select_compress_axis", compress_axis), ("select_compress_flat", compress_flat),
                     ("select_compress_past", compress_past), ("select_unique_flat", unique_flat),
                     ("select_unique_axis", unique_axis)):
        res = fn(args.out, rng, args.ort)
        if name.startswith("select_"):   # the count is not always the first dim: whole shapes
            counts[name] = [[np.asarray(o).shape for o in r] for r in res]
        else:
            counts[name] = [[np.asarray(o).shape[0] for o in r if np.asarray(o).ndim] for r in res]
    if args.print_counts:
        for name, c in counts.items():
            print(name, c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
