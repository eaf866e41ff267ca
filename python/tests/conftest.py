"""Tests run against the package source next to them and the library named
by SMELT_LIB (default: the repository's build/libsmelt.so)."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))
os.environ.setdefault("SMELT_LIB", os.path.join(REPO, "build", "libsmelt.so"))

import numpy as np  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402


@pytest.fixture
def tiny_cnn():
    return os.path.join(REPO, "models", "tiny_cnn", "model.onnx")


@pytest.fixture
def small_model():
    return lambda name: os.path.join(REPO, "tests", "models", "small", name)


def make_model(nodes, inputs, outputs, initializers=(), opset=13):
    """Serialized ONNX model from helper-API pieces; inputs/outputs are
    (name, TensorProto type, shape) triples."""
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.fixture
def matmul_relu():
    """y = Relu(x @ W) with symbolic batch: bytes."""
    w = np.random.default_rng(3).standard_normal((8, 4)).astype(np.float32)
    init = helper.make_tensor("W", TensorProto.FLOAT, w.shape, w.flatten())
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    return make_model(nodes, [("x", TensorProto.FLOAT, ["batch", 8])],
                      [("y", TensorProto.FLOAT, ["batch", 4])], [init])
