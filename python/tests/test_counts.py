"""Outputs whose row count depends on the data (NonMaxSuppression, NonZero):
the compiled model takes the count at run time and returns arrays of the
run's rows, 0 included, against ONNX Runtime."""
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import smelt

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def nms_model():
    """boxes [1, 80, 4] + scores [1, 1, 80] -> NMS (score threshold 0.5) ->
    the kept boxes [K, 4] and the non-zero entries of their scores [1, K']."""
    consts = [numpy_helper.from_array(np.array([80], np.int64), "max_out"),
              numpy_helper.from_array(np.array([0.4], np.float32), "iou"),
              numpy_helper.from_array(np.array([0.5], np.float32), "thr"),
              numpy_helper.from_array(np.array([2], np.int64), "col"),
              numpy_helper.from_array(np.array([0], np.int64), "axis0"),
              numpy_helper.from_array(np.array([1], np.int64), "axis1")]
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "thr"],
                              ["sel"]),
             helper.make_node("Gather", ["sel", "col"], ["sel_col"], axis=1),
             helper.make_node("Squeeze", ["sel_col", "axis1"], ["keep"]),
             helper.make_node("Squeeze", ["boxes", "axis0"], ["flat"]),
             helper.make_node("Gather", ["flat", "keep"], ["kept"], axis=0),
             helper.make_node("NonZero", ["scores"], ["nz"])]
    g = helper.make_graph(nodes, "counts",
                          [helper.make_tensor_value_info("boxes", F, [1, 80, 4]),
                           helper.make_tensor_value_info("scores", F, [1, 1, 80])],
                          [helper.make_tensor_value_info("kept", F, ["K", 4]),
                           helper.make_tensor_value_info("nz", I64, [3, "Z"])], consts)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


def inputs(rng, score_scale):
    lo = rng.uniform(0, 30, (1, 80, 2)).astype(np.float32)
    boxes = np.concatenate([lo, lo + rng.uniform(2, 10, (1, 80, 2)).astype(np.float32)], axis=2)
    scores = (rng.permutation(80).astype(np.float32) / 80 * score_scale).reshape(1, 1, 80)
    scores[0, 0, :7] = 0.0
    return {"boxes": boxes, "scores": scores}


def test_counts_match_onnxruntime_at_every_count():
    data = nms_model()
    compiled = smelt.load(data).compile()
    s = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    seen = set()
    for scale in (1.0, 0.4, 0.9):  # 0.4: no score above the threshold, K = 0
        feed = inputs(rng, scale)
        want = dict(zip(["kept", "nz"], s.run(None, feed)))
        got = compiled.run(feed)
        for name in ("kept", "nz"):
            assert np.asarray(got[name]).shape == want[name].shape, name
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6)
        seen.add(want["kept"].shape[0])
    assert 0 in seen and len(seen) == 3
