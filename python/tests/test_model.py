"""Loading and describing models."""
import shutil

import numpy as np
import pytest

import smelt


def test_load_path_describes_inputs_and_outputs(tiny_cnn):
    m = smelt.load(tiny_cnn)
    assert [(v.name, v.dtype, v.shape) for v in m.inputs] == [("input", np.float32, (1, 3, 32, 32))]
    assert [(v.name, v.dtype, v.shape) for v in m.outputs] == [("output", np.float32, (1, 10))]


def test_load_bytes_equals_load_path(tiny_cnn):
    with open(tiny_cnn, "rb") as f:
        m = smelt.load(f.read())
    assert m.inputs == smelt.load(tiny_cnn).inputs


def test_symbolic_dims_are_strings(matmul_relu):
    m = smelt.load(matmul_relu)
    assert m.inputs[0].shape == ("batch", 8)
    assert m.outputs[0].shape == ("batch", 4)


def test_graph_lists_nodes_in_order(matmul_relu):
    nodes = list(smelt.load(matmul_relu).graph)
    assert [(n.name, n.op_type) for n in nodes] == [("mm", "MatMul"), ("relu", "Relu")]
    assert nodes[0].inputs == ("x", "W") and nodes[0].outputs == ("h",)
    assert nodes[1].inputs == ("h",) and nodes[1].outputs == ("y",)


def test_graph_of_tiny_cnn_matches_onnx(tiny_cnn):
    import onnx
    want = [(n.name, n.op_type) for n in onnx.load(tiny_cnn).graph.node]
    assert [(n.name, n.op_type) for n in smelt.load(tiny_cnn).graph] == want


def test_graph_dot_names_every_node(matmul_relu):
    dot = smelt.load(matmul_relu).graph.to_dot()
    assert dot.lstrip().startswith("digraph") and "MatMul" in dot and "Relu" in dot


@pytest.mark.skipif(not shutil.which("dot"), reason="graphviz's dot is not installed")
def test_graph_svg_for_jupyter(matmul_relu):
    svg = smelt.load(matmul_relu).graph._repr_svg_()
    assert "<svg" in svg and "MatMul" in svg


def test_graph_render_unknown_format_is_argument_error(matmul_relu, tmp_path):
    with pytest.raises(smelt.ArgumentError, match="unknown graph format"):
        smelt.load(matmul_relu).graph.render(tmp_path / "g.xyz")


def test_model_context_manager_frees(tiny_cnn):
    with smelt.load(tiny_cnn) as m:
        assert m.inputs
    assert m._handle.ptr is None
