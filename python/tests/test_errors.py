"""Bad input raises the smelt.Error subclass of its status, naming node and op."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import smelt
from conftest import make_model


def test_malformed_bytes_raise_parse_error():
    with pytest.raises(smelt.ParseError, match="not a valid ONNX model") as e:
        smelt.load(b"\x08\x07this is not protobuf\xff\xff")
    assert e.value.node is None and e.value.status == 2


def test_missing_file_raises_file_error(tmp_path):
    with pytest.raises(smelt.FileError, match="nothing.onnx"):
        smelt.load(tmp_path / "nothing.onnx")


def test_unsupported_op_names_node_and_op():
    model = make_model([helper.make_node("Frobnicate", ["x"], ["y"], name="frob1")],
                       [("x", TensorProto.FLOAT, [2])], [("y", TensorProto.FLOAT, [2])])
    with pytest.raises(smelt.UnsupportedError, match="Frobnicate") as e:
        smelt.load(model)
    assert (e.value.node, e.value.op) == ("frob1", "Frobnicate")
    assert "frob1" in str(e.value)


def test_shape_mismatch_names_node_and_op():
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm7")],
                       [("a", TensorProto.FLOAT, [2, 3]), ("b", TensorProto.FLOAT, [4, 5])],
                       [("y", TensorProto.FLOAT, [2, 5])])
    with pytest.raises(smelt.ShapeError) as e:
        smelt.load(model)
    assert (e.value.node, e.value.op) == ("mm7", "MatMul")
    assert "node 'mm7' (MatMul)" in e.value.message


def test_bad_attribute_names_node_and_op():
    node = helper.make_node("Transpose", ["x"], ["y"], name="tr", perm=[0, 0])
    model = make_model([node], [("x", TensorProto.FLOAT, [2, 3])], [("y", TensorProto.FLOAT, [3, 2])])
    with pytest.raises(smelt.Error) as e:
        smelt.load(model)
    assert (e.value.node, e.value.op) == ("tr", "Transpose")
    assert isinstance(e.value, (smelt.ModelAttributeError, smelt.ShapeError))


def test_dangling_edge_is_invalid_model():
    model = make_model([helper.make_node("Relu", ["nowhere"], ["y"], name="r")],
                       [("x", TensorProto.FLOAT, [2])], [("y", TensorProto.FLOAT, [2])])
    with pytest.raises(smelt.InvalidModelError, match="nowhere") as e:
        smelt.load(model)
    assert (e.value.node, e.value.op) == ("r", "Relu")


@pytest.fixture
def compiled(matmul_relu):
    return smelt.load(matmul_relu).compile()


def test_wrong_input_name(compiled):
    with pytest.raises(smelt.ArgumentError, match="unknown input 'z'.*inputs: x"):
        compiled.run({"z": np.zeros((1, 8), np.float32)})


def test_missing_input(compiled):
    with pytest.raises(smelt.ArgumentError, match="missing input 'x'"):
        compiled.run({})


def test_wrong_input_dtype(compiled):
    with pytest.raises(smelt.ArgumentError, match="input 'x': dtype f64, expected f32"):
        compiled.run({"x": np.zeros((1, 8), np.float64)})


def test_wrong_input_shape(compiled):
    with pytest.raises(smelt.ArgumentError, match="input 'x'"):
        compiled.run({"x": np.zeros((1, 9), np.float32)})


def test_wrong_input_rank_on_reference(matmul_relu):
    with pytest.raises(smelt.ArgumentError, match="input 'x'"):
        smelt.load(matmul_relu).run_reference({"x": np.zeros((8,), np.float32)})


def test_arguments_are_also_value_errors(compiled):
    with pytest.raises(ValueError):
        compiled.run({"z": 1})


@pytest.mark.parametrize("kwargs, match", [
    ({"target": "vax11"}, "unknown target 'vax11'"),
    ({"opt_level": 7}, "opt_level"),
    ({"threads": -1}, "threads"),
    ({"records": "/nonexistent/r.jsonl"}, "records file"),
    ({"disabled_passes": ["no_such_pass"]}, "unknown pass 'no_such_pass'"),
])
def test_bad_compile_options(tiny_cnn, kwargs, match):
    with pytest.raises(smelt.ArgumentError, match=match):
        smelt.load(tiny_cnn).compile(**kwargs)


def test_runtime_index_error_is_execution_error(small_model):
    m = smelt.load(small_model("gather_chain.onnx"))
    v0 = np.full((4, 4, 4, 4), 3, np.int64)  # 3 * 3 = 9 indexes an axis of 4
    with pytest.raises(smelt.ExecutionError, match="out of range") as e:
        m.run_reference({"v0": v0})
    assert (e.value.node, e.value.op) == ("n3", "GatherElements")
