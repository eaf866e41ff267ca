"""Sequence and optional inputs and outputs: lists of arrays and None in,
lists and None out, on the compiled path (which unrolls them per element
count and shapes) and the reference kernels, against ONNX Runtime."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import smelt

F = TensorProto.FLOAT


def seq(name, dtype=F):
    return helper.make_tensor_sequence_value_info(name, dtype, None)


def model(nodes, inputs, outputs, opset=18):
    g = helper.make_graph(nodes, "containers", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def ort_run(data, feed):
    s = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feed)))


def assert_same(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_sequence_in_and_out_match_onnxruntime():
    # s (a sequence) with x inserted at position 1, its length, and the
    # elements concatenated; x split into a sequence of rows
    nodes = [helper.make_node("SequenceInsert", ["s", "x", "one"], ["t"]),
             helper.make_node("SequenceLength", ["t"], ["n"]),
             helper.make_node("ConcatFromSequence", ["t"], ["cat"], axis=0),
             helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
             helper.make_node("Constant", [], ["one"], value=helper.make_tensor("c", TensorProto.INT64, [], [1]))]
    data = model(nodes, [seq("s"), helper.make_tensor_value_info("x", F, [2, 3])],
                 [seq("t"), helper.make_tensor_value_info("n", TensorProto.INT64, []),
                  helper.make_tensor_value_info("cat", F, None), seq("rows")])
    m = smelt.load(data)
    assert m.inputs[0].kind == "sequence" and m.inputs[0].dtype == np.float32
    assert m.outputs[0].kind == "sequence" and m.outputs[1].kind == "tensor"
    c = m.compile()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    for count in (1, 3, 0):  # a compile per element count; an empty sequence too
        s = [rng.standard_normal((1 + k % 2, 3)).astype(np.float32) for k in range(count)]
        if count == 0:  # inserting at 1 into an empty sequence is out of range
            with pytest.raises(smelt.Error, match="SequenceInsert"):
                c.run({"s": s, "x": x})
            continue
        want = ort_run(data, {"s": s, "x": x})
        for got in (c.run({"s": s, "x": x}), m.run_reference({"s": s, "x": x})):
            for name in want:
                assert_same(got[name], want[name] if not isinstance(want[name], list) else list(want[name]))


def test_optional_in_and_out():
    def opt(name, inner):
        return helper.make_value_info(name, helper.make_optional_type_proto(inner))

    nodes = [helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("Identity", ["o"], ["same"])]
    data = model(nodes, [opt("o", helper.make_tensor_type_proto(F, [2]))],
                 [helper.make_tensor_value_info("has", TensorProto.BOOL, []),
                  opt("same", helper.make_tensor_type_proto(F, [2]))])
    m = smelt.load(data)
    assert m.inputs[0].kind == "optional"
    c = m.compile()
    v = np.array([1.5, -2], np.float32)
    got = c.run({"o": v})
    assert bool(got["has"]) and np.array_equal(got["same"], v)
    got = c.run({"o": None})
    assert not bool(got["has"]) and got["same"] is None


def test_sequence_input_errors():
    data = model([helper.make_node("SequenceLength", ["s"], ["n"])], [seq("s")],
                 [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    c = smelt.load(data).compile()
    with pytest.raises(smelt.ArgumentError, match="input 's' is a sequence: give a list of arrays"):
        c.run({"s": np.zeros(3, np.float32)})
    with pytest.raises(smelt.ArgumentError, match="input 's'"):
        c.run({"s": [np.zeros(3, np.int64)]})  # elements of the wrong type
    assert int(c.run({"s": [np.zeros(3, np.float32)] * 4})["n"]) == 4
