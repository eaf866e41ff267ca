"""Custom ops: ONNX nodes of a user domain given a smelt.te definition compile
like built-in ops; results compared with NumPy."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import smelt
from smelt import te


def model(nodes, inputs, outputs, domains=("my.ops",)):
    g = helper.make_graph(nodes, "custom",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs])
    ops = [helper.make_opsetid("", 17)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(g, opset_imports=ops).SerializeToString()


def softplus2(x):
    return te.compute(x.shape, lambda *i: te.log(1.0 + te.exp(x[i])) * 2.0, name="sp")


def rowdot(x, y):
    k = te.reduce_axis(x.shape[1], name="k")
    return te.compute((x.shape[0],), lambda i: te.sum(x[i, k] * y[i, k], axis=k), name="dot")


def test_custom_ops_compile_and_match_numpy():
    te.register_op("my.ops", "Softplus2", softplus2, num_inputs=1)
    te.register_op("my.ops", "RowDot", rowdot, num_inputs=2)
    m = smelt.load(model([
        helper.make_node("Softplus2", ["X"], ["s"], domain="my.ops", name="sp1"),
        helper.make_node("Relu", ["Y"], ["r"]),
        helper.make_node("RowDot", ["s", "r"], ["Z"], domain="my.ops", name="dot1"),
        helper.make_node("Sqrt", ["Z"], ["W"]),
    ], [("X", [7, 33]), ("Y", [7, 33])], ["W", "s"]))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((7, 33), dtype=np.float32)
    y = rng.standard_normal((7, 33), dtype=np.float32)
    s = np.log1p(np.exp(x)) * 2
    want_w = np.sqrt((s * np.maximum(y, 0)).sum(axis=1))
    assert [(o.name, o.shape) for o in m.outputs] == [("W", (7,)), ("s", (7, 33))]
    outs = m.compile(threads=2).run({"X": x, "Y": y})
    np.testing.assert_allclose(outs["s"], s, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs["W"], want_w, rtol=1e-5)
    ref = m.run_reference({"X": x, "Y": y})  # the te interpreter of the same definition
    np.testing.assert_allclose(ref["W"], want_w, rtol=1e-5)


def test_custom_op_errors():
    te.register_op("my.ops", "RowDot", rowdot, num_inputs=2)
    one_input = model([helper.make_node("RowDot", ["X"], ["Z"], domain="my.ops", name="d")],
                      [("X", [4, 4])], ["Z"])
    with pytest.raises(smelt.InvalidModelError, match="registered with 2 and 1") as e:
        smelt.load(one_input)
    assert e.value.node == "d"
    unknown = model([helper.make_node("Frob", ["X"], ["Z"], domain="my.ops", name="f")],
                    [("X", [4, 4])], ["Z"])
    with pytest.raises(smelt.UnsupportedError, match="Frob"):
        smelt.load(unknown)

    def broken(x):
        raise ValueError("no such thing")
    te.register_op("my.ops", "Broken", broken, num_inputs=1)
    bad = model([helper.make_node("Broken", ["X"], ["Z"], domain="my.ops", name="b")],
                [("X", [4, 4])], ["Z"])
    with pytest.raises(smelt.Error, match="ValueError: no such thing"):
        smelt.load(bad)
    with pytest.raises(smelt.ArgumentError, match="other than ai.onnx"):
        te.register_op("ai.onnx", "Relu2", softplus2, num_inputs=1)
