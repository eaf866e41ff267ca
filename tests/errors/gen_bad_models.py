#!/usr/bin/python3
"""Write malformed and hostile ONNX models for smelt's error tests.

    /usr/bin/python3 tests/errors/gen_bad_models.py --out DIR

Each case is DIR/<case>/model.onnx (one folder per case, so external-data
cases have a model folder of their own) plus DIR/cases.txt, one line per case,
tab-separated:

    <case>  <compile|run|runc>  <expected status name>  <substring> [<substring>...]

A status of "ok" means the model must load (exit status 0).
check_bad_models.sh runs `smelt compile` (or `smelt run --reference` for
"run" cases, compiled `smelt run` for "runc" cases) on each model and expects exit status 1, stderr holding
"smelt: <status name>: " and every substring.

The bad models are built with onnx.helper and serialized directly: never
passed through onnx.checker or onnx.save (which would reject or rewrite
them).  The output is deterministic: same bytes on every run.
"""

import argparse
import os
import shutil
import stat
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
F = TensorProto.FLOAT
CASES = []  # (name, mode, status, [substrings]), in generation order


def case(name, mode, status, *subs):
    """Decorator: register a generator writing DIR/<name>/model.onnx."""
    def wrap(fn):
        CASES.append((name, mode, status, list(subs), fn))
        return fn
    return wrap


def model(nodes, inputs, outputs, inits=(), opset=OPSET, domains=(), ir_version=8, **kw):
    """domains: (domain, version) pairs imported besides the default one."""
    graph = helper.make_graph(nodes, "bad", inputs, outputs, initializer=list(inits))
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in domains]
    m = helper.make_model(graph, opset_imports=imports, **kw)
    m.ir_version = ir_version
    return m


def vi(name, shape, dt=F):
    return helper.make_tensor_value_info(name, dt, shape)


def relu_model():
    """A small valid model (x -> Relu -> y) that cases then break."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu1")],
                 [vi("x", [1, 4])], [vi("y", [1, 4])])


def write(d, m):
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString() if not isinstance(m, bytes) else m)


def ext_tensor(name, dims, location, offset=None, length=None):
    """A float initializer whose data lives in an external file."""
    t = TensorProto()
    t.name = name
    t.data_type = F
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for k, v in entries:
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def add_model(init):
    """y = x + W with W an initializer of shape [2, 2]."""
    return model([helper.make_node("Add", ["x", "W"], ["y"], name="add1")],
                 [vi("x", [2, 2])], [vi("y", [2, 2])], inits=[init])


# ---- graph structure -------------------------------------------------------

@case("unsupported_op", "compile", "unsupported",
      "FancyOp (ai.onnx, opset 13) at 'fancy1'")
def _(d):
    write(d, model([helper.make_node("FancyOp", ["x"], ["y"], name="fancy1")],
                   [vi("x", [1])], [vi("y", [1])]))


@case("unsupported_two_ops", "compile", "unsupported", "3 node(s) with unsupported ops",
      "FancyOp (ai.onnx, opset 13) at 'fancy1', 'fancy2'",
      "OtherOp (domain com.example) at 'other1'")
def _(d):
    nodes = [helper.make_node("FancyOp", ["x"], ["a"], name="fancy1"),
             helper.make_node("OtherOp", ["a"], ["b"], name="other1", domain="com.example"),
             helper.make_node("FancyOp", ["b"], ["y"], name="fancy2")]
    write(d, model(nodes, [vi("x", [1])], [vi("y", [1])]))


@case("internal_op", "compile", "unsupported",
      "node 'lt1' (LayoutTransform): LayoutTransform is internal to smelt")
def _(d):
    node = helper.make_node("LayoutTransform", ["x"], ["y"], name="lt1", src_block=0,
                            dst_block=4)
    write(d, model([node], [vi("x", [1, 4, 2, 2])], [vi("y", [1, 1, 2, 2, 4])]))


@case("dangling_input", "compile", "invalid model",
      "node 'add1' (Add): input 'nowhere' is never produced")
def _(d):
    write(d, model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add1")],
                   [vi("x", [1])], [vi("y", [1])]))


@case("output_never_produced", "compile", "invalid model",
      "graph output 'ghost' is never produced")
def _(d):
    m = relu_model()
    m.graph.output.append(vi("ghost", [1]))
    write(d, m)


@case("cycle", "compile", "invalid model", "the graph has a cycle")
def _(d):
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="add_a"),
             helper.make_node("Relu", ["a"], ["b"], name="relu_b")]
    write(d, model(nodes, [vi("x", [1])], [vi("b", [1])]))


@case("self_loop", "compile", "invalid model", "node 'loop1' (Add)", "cycle")
def _(d):
    write(d, model([helper.make_node("Add", ["x", "y"], ["y"], name="loop1")],
                   [vi("x", [1])], [vi("y", [1])]))


@case("two_producers", "compile", "invalid model",
      "node 'relu2' (Relu): output 'y' is already defined elsewhere")
def _(d):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu1"),
             helper.make_node("Relu", ["x"], ["y"], name="relu2")]
    write(d, model(nodes, [vi("x", [1])], [vi("y", [1])]))


@case("output_overwrites_input", "compile", "invalid model",
      "output 'x' is already defined elsewhere")
def _(d):
    write(d, model([helper.make_node("Relu", ["x"], ["x"], name="relu1")],
                   [vi("x", [1])], [vi("x", [1])]))


@case("no_outputs", "compile", "invalid model", "the graph has no outputs")
def _(d):
    write(d, model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [vi("x", [1])], []))


@case("no_op_type", "compile", "invalid model", "node 'blank' has no op_type")
def _(d):
    write(d, model([helper.make_node("", ["x"], ["y"], name="blank")],
                   [vi("x", [1])], [vi("y", [1])]))


@case("input_listed_twice", "compile", "invalid model", "graph input 'x' is listed twice")
def _(d):
    m = relu_model()
    m.graph.input.append(vi("x", [1, 4]))
    write(d, m)


@case("no_graph", "compile", "invalid model", "the model has no graph")
def _(d):
    m = onnx.ModelProto()
    m.ir_version = 8
    m.opset_import.append(helper.make_opsetid("", OPSET))
    write(d, m)


@case("empty_file", "compile", "invalid model", "the model has no graph")
def _(d):
    write(d, b"")


@case("no_default_opset", "compile", "invalid model",
      "node 'relu1' (Relu): the model uses ai.onnx ops but imports no ai.onnx opset")
def _(d):
    # (no opset_import at all reads as an IR v2 model, i.e. opset 1)
    m = relu_model()
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    write(d, m)


@case("bad_opset_version", "compile", "invalid model", "invalid ai.onnx opset 0")
def _(d):
    m = relu_model()
    m.opset_import[0].version = 0
    write(d, m)


@case("not_protobuf", "compile", "parse error", "could not be decoded")
def _(d):
    write(d, b"this is not an ONNX model, just text\n" * 4)


@case("truncated", "compile", "parse error", "could not be decoded")
def _(d):
    data = add_model(numpy_helper.from_array(np.ones((2, 2), np.float32), "W"))
    b = data.SerializeToString()
    write(d, b[: len(b) - 7])


# ---- op arity, attributes and shapes ----------------------------------------

@case("conv_rank3", "compile", "shape error", "node 'conv3' (Conv): ", "rank 4, expected 3")
def _(d):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "W")
    write(d, model([helper.make_node("Conv", ["x", "W"], ["y"], name="conv3")],
                   [vi("x", [1, 3, 8])], [vi("y", None)], inits=[w]))


@case("quantize_e8m0_output", "compile", "unsupported",
      "node 'q1' (QuantizeLinear): attribute 'output_dtype' is 24; smelt implements uint8")
def _(d):
    s = numpy_helper.from_array(np.array(0.5, np.float32), "s")
    write(d, model([helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="q1",
                                     output_dtype=24)],
                   [vi("x", [4])], [vi("y", None)], inits=[s], opset=21))


# ONNX's low-bit types by number (17 FLOAT8E4M3FN, 22 INT4): Debian's onnx 1.12
# predates them
@case("add_float8_inputs", "run", "unsupported",
      "node 'a1' (Add): input 'x' has unsupported dtype f8e4m3fn")
def _(d):
    write(d, model([helper.make_node("Add", ["x", "x"], ["y"], name="a1")],
                   [vi("x", [4], 17)], [vi("y", None)], opset=21))


@case("int4_initializer_unpacked", "compile", "invalid model",
      "initializer 'W': raw_data has 5 bytes, its shape needs 3")
def _(d):
    t = onnx.TensorProto()
    t.name = "W"
    t.data_type = 22
    t.dims.extend([5])
    t.raw_data = bytes([1, 2, 3, 4, 5])  # one byte per element: not ONNX's packed form
    dq = helper.make_node("DequantizeLinear", ["W", "s"], ["w"], name="dq1")
    s = numpy_helper.from_array(np.array(0.5, np.float32), "s")
    write(d, model([dq, helper.make_node("Add", ["x", "w"], ["y"], name="a1")],
                   [vi("x", [5])], [vi("y", None)], inits=[t, s], opset=21))


@case("dequantize_axis_scale_length", "compile", "shape error",
      "node 'dq1' (DequantizeLinear): per-axis scale 's' has rank 1 and 4 elements; expected 1-D with 3")
def _(d):
    s = numpy_helper.from_array(np.ones(4, np.float32), "s")
    z = numpy_helper.from_array(np.zeros(4, np.uint8), "z")
    write(d, model([helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], name="dq1",
                                     axis=1)],
                   [vi("x", [2, 3], TensorProto.UINT8)], [vi("y", None)], inits=[s, z]))


@case("qlinearconv_bias_type", "compile", "shape error",
      "node 'qc1' (QLinearConv): input B 'b' must be int32 1-D with one value per output channel")
def _(d):
    c = lambda n, a: numpy_helper.from_array(a, n)
    inits = [c("xs", np.array(0.1, np.float32)), c("xz", np.array(0, np.uint8)),
             c("w", np.ones((2, 1, 3, 3), np.int8)), c("ws", np.array(0.1, np.float32)),
             c("wz", np.array(0, np.int8)), c("ys", np.array(0.2, np.float32)),
             c("yz", np.array(0, np.uint8)), c("b", np.ones(2, np.float32))]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                            ["y"], name="qc1")
    write(d, model([node], [vi("x", [1, 1, 5, 5], TensorProto.UINT8)], [vi("y", None)],
                   inits=inits))


@case("wrong_input_count", "compile", "invalid model",
      "node 'add1' (Add): has 1 inputs, expected 2")
def _(d):
    write(d, model([helper.make_node("Add", ["x"], ["y"], name="add1")],
                   [vi("x", [1])], [vi("y", [1])]))


@case("too_many_outputs", "compile", "invalid model",
      "node 'relu1' (Relu): has 3 outputs, expected 1")
def _(d):
    write(d, model([helper.make_node("Relu", ["x"], ["y", "z", "w"], name="relu1")],
                   [vi("x", [1])], [vi("y", [1])]))


@case("missing_required_input", "compile", "invalid model",
      "node 'split1' (Split): required input 0 is missing")
def _(d):
    # "" marks an omitted optional input; Split's data input is not optional
    write(d, model([helper.make_node("Split", ["", "x"], ["a", "b"], name="split1", axis=0)],
                   [vi("x", [2])], [vi("a", None), vi("b", None)]))


@case("split_no_inputs", "compile", "invalid model",
      "node 'split1' (Split): has 0 inputs, expected 1 to 2")
def _(d):
    write(d, model([helper.make_node("Split", [], ["a", "b"], name="split1", axis=0)],
                   [vi("x", [2])], [vi("a", None), vi("b", None)], opset=7))


@case("missing_required_output", "compile", "invalid model",
      "node 'relu1' (Relu): required output 0 is missing")
def _(d):
    write(d, model([helper.make_node("Relu", ["x"], [""], name="relu1"),
                    helper.make_node("Relu", ["x"], ["y"], name="relu2")],
                   [vi("x", [2])], [vi("y", None)]))


@case("bad_attribute_type", "compile", "attribute error",
      "node 'softmax1' (Softmax): attribute 'axis' has type string, expected int")
def _(d):
    write(d, model([helper.make_node("Softmax", ["x"], ["y"], name="softmax1", axis="one")],
                   [vi("x", [2, 3])], [vi("y", [2, 3])]))


@case("attribute_unsupported_type", "compile", "unsupported",
      "node 'relu1' (Relu): attribute 'weird' has unsupported type 11")
def _(d):
    m = relu_model()
    a = m.graph.node[0].attribute.add()
    a.name, a.type = "weird", onnx.AttributeProto.SPARSE_TENSOR
    write(d, m)


@case("constant_two_values", "compile", "invalid model",
      "node 'c1' (Constant): expected exactly one value attribute, got 2")
def _(d):
    c = helper.make_node("Constant", [], ["c"], name="c1", value_float=1.0, value_int=2)
    write(d, model([c, helper.make_node("Add", ["x", "c"], ["y"], name="add1")],
                   [vi("x", [1])], [vi("y", [1])]))


@case("reshape_bad_count", "compile", "shape error", "node 'reshape1' (Reshape): ")
def _(d):
    s = numpy_helper.from_array(np.array([4, 2], np.int64), "shape")
    write(d, model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape1")],
                   [vi("x", [2, 3])], [vi("y", None)], inits=[s]))


@case("gather_index_out_of_range", "run", "runtime error",
      "node 'gather1' (Gather): ")
def _(d):
    idx = numpy_helper.from_array(np.array([1, 7], np.int64), "idx")
    write(d, model([helper.make_node("Gather", ["x", "idx"], ["y"], name="gather1", axis=0)],
                   [vi("x", [3, 4])], [vi("y", None)], inits=[idx]))


# NonMaxSuppression compiles with its count taken at run time; a sum over the
# count (which may be 0) is refused in compiled code
@case("nms_count_reduced", "runc", "unsupported",
      "node 'sum0' (ReduceSum): 'yf' has the data-dependent count 'count(y)' (dim 0)")
def _(d):
    limits = [numpy_helper.from_array(np.array([5], np.int64), "m"),
              numpy_helper.from_array(np.array([0.5], np.float32), "iou")]
    write(d, model([helper.make_node("NonMaxSuppression", ["b", "s", "m", "iou"], ["y"],
                                     name="nms0"),
                    helper.make_node("Cast", ["y"], ["yf"], name="cast0", to=TensorProto.FLOAT),
                    helper.make_node("ReduceSum", ["yf"], ["z"], name="sum0", keepdims=0)],
                   [vi("b", [1, 100, 4]), vi("s", [1, 1, 100])], [vi("z", None)],
                   inits=limits))


# a value of twice the count (Concat of the selection with itself) is not the
# count plus a constant: refused naming the node, with no --dim hint (a count
# has no value to give; rt_dims.c leaves the hint out for counts)
@case("nms_count_doubled", "runc", "unsupported",
      "node 'cat0' (Concat): value 'twice' dim 0 is", "the reference executor runs it",
      "!--dim")
def _(d):
    limits = [numpy_helper.from_array(np.array([100], np.int64), "m"),
              numpy_helper.from_array(np.array([0.5], np.float32), "iou")]
    write(d, model([helper.make_node("NonMaxSuppression", ["b", "s", "m", "iou"], ["sel"],
                                     name="nms0"),
                    helper.make_node("Concat", ["sel", "sel"], ["twice"], name="cat0", axis=0)],
                   [vi("b", [1, 100, 4]), vi("s", [1, 1, 100])],
                   [vi("twice", None, TensorProto.INT64)], inits=limits))


def grow_loop_body():
    """A Loop body that appends a column to its carried value: the value's
    shape changes per iteration."""
    return helper.make_graph(
        [helper.make_node("Concat", ["x_in", "x_in"], ["x_cat"], axis=1),
         helper.make_node("Slice", ["x_cat", "st", "en", "ax"], ["x_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL),
                 vi("x_in", None)],
        [vi("c_out", [], TensorProto.BOOL), vi("x_out", None)],
        initializer=[numpy_helper.from_array(np.array([0], np.int64), "st"),
                     numpy_helper.from_array(np.array([-1], np.int64), "en"),
                     numpy_helper.from_array(np.array([1], np.int64), "ax")])


@case("loop_carried_grows", "runc", "unsupported",
      "node 'loop0' (Loop): its trip count is not a compile-time constant; the reference "
      "executor runs it")
def _(d):  # the carried value grows per iteration: compiled code unrolls such a loop only
    # when its trip count is known, and here the data decides it
    nodes = [helper.make_node("ArgMax", ["x"], ["am"], name="argmax", axis=0, keepdims=0),
             helper.make_node("ReduceMax", ["am"], ["m"], name="trips", keepdims=0),
             helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop0", body=grow_loop_body())]
    write(d, model(nodes, [vi("x", [100, 2])], [vi("y", None)]))


@case("loop_no_end", "runc", "unsupported",
      "node 'loop0' (Loop): no trip count and a condition that never turns false")
def _(d):
    body = helper.make_graph(
        [helper.make_node("Neg", ["x_in"], ["x_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL),
                 vi("x_in", [100])],
        [vi("c_out", [], TensorProto.BOOL), vi("x_out", [100])])
    write(d, model([helper.make_node("Loop", ["", "", "x"], ["y"], name="loop0", body=body)],
                   [vi("x", [100])], [vi("y", [100])]))


@case("subgraph_unknown_name", "compile", "invalid model", "'nowhere'")
def _(d):
    then_g = helper.make_graph([helper.make_node("Neg", ["nowhere"], ["t"])], "then", [],
                               [vi("t", [4])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [vi("e", [4])])
    write(d, model([helper.make_node("If", ["c"], ["y"], name="if0", then_branch=then_g,
                                     else_branch=else_g)],
                   [vi("c", [], TensorProto.BOOL), vi("x", [4])], [vi("y", [4])]))


@case("graph_attr_on_relu", "compile", "unsupported",
      "node 'relu1' (Relu): attribute 'body' holds a subgraph; Relu takes no subgraphs")
def _(d):
    g = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "g", [], [vi("t", [1, 4])])
    write(d, model([helper.make_node("Relu", ["x"], ["y"], name="relu1", body=g)],
                   [vi("x", [1, 4])], [vi("y", [1, 4])]))


@case("if_branch_output_count", "compile", "invalid model",
      "node 'if0' (If): 'else_branch' has 2 outputs, expected 1")
def _(d):
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [],
                               [vi("t", [4])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"]),
                                helper.make_node("Neg", ["x"], ["e2"])], "else", [],
                               [vi("e", [4]), vi("e2", [4])])
    write(d, model([helper.make_node("If", ["c"], ["y"], name="if0", then_branch=then_g,
                                     else_branch=else_g)],
                   [vi("c", [], TensorProto.BOOL), vi("x", [4])], [vi("y", [4])]))


@case("huge_intermediate", "run", "limit exceeded",
      "node 'expand1' (Expand): its outputs need 34359738368 bytes while 0 are held: over the "
      "reference executor's memory limit of 4294967296 bytes (SMELT_MEMORY_LIMIT; raise it")
def _(d):
    # 2^33 floats: under the element cap, over the memory limit that
    # check_bad_models.sh sets (4G); never allocated
    shape = numpy_helper.from_array(np.array([1 << 17, 1 << 16], np.int64), "shape")
    write(d, model([helper.make_node("Expand", ["x", "shape"], ["y"], name="expand1")],
                   [vi("x", [1, 1])], [vi("y", None)], inits=[shape]))


@case("too_many_elements", "compile", "limit exceeded",
      "node 'expand1' (Expand): output 0 'y' has more than 17179869184 elements")
def _(d):
    shape = numpy_helper.from_array(np.array([1 << 20, 1 << 20, 1 << 20], np.int64), "shape")
    write(d, model([helper.make_node("Expand", ["x", "shape"], ["y"], name="expand1")],
                   [vi("x", [1, 1, 1])], [vi("y", None)], inits=[shape]))


@case("subgraph_attribute", "compile", "unsupported",
      "node 'relu1' (Relu): attribute 'body' holds a subgraph")
def _(d):
    body = helper.make_graph([helper.make_node("Relu", ["a"], ["b"])], "body",
                             [vi("a", [1])], [vi("b", [1])])
    m = relu_model()
    m.graph.node[0].attribute.append(helper.make_attribute("body", body))
    write(d, m)


# ---- recurrent ops (issue #14): refused attributes and shapes ------------------

def recurrent_model(op, name, dirs=1, hidden=4, w_rows=None, **attrs):
    """X [3, 2, 5] through one RNN/GRU/LSTM with constant W and R."""
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    rows = w_rows if w_rows is not None else gates * hidden
    w = numpy_helper.from_array(np.ones((dirs, rows, 5), np.float32), "W")
    r = numpy_helper.from_array(np.ones((dirs, gates * hidden, hidden), np.float32), "R")
    node = helper.make_node(op, ["x", "W", "R"], ["y"], name=name, hidden_size=hidden, **attrs)
    return model([node], [vi("x", [3, 2, 5])], [vi("y", None)], inits=[w, r], opset=14)


@case("lstm_unknown_activation", "compile", "unsupported",
      "node 'lstm1' (LSTM): attribute 'activations': 'Gelu' is not an activation smelt implements")
def _(d):
    write(d, recurrent_model("LSTM", "lstm1", activations=["Sigmoid", "Tanh", "Gelu"]))


@case("gru_activation_count", "compile", "attribute error",
      "node 'gru1' (GRU): attribute 'activations' has 1 names; GRU with 1 direction(s) takes 2")
def _(d):
    write(d, recurrent_model("GRU", "gru1", activations=["Sigmoid"]))


@case("rnn_extra_activation_alpha", "compile", "attribute error",
      "node 'rnn1' (RNN): attribute 'activation_alpha' has 2 values; the activations take 1")
def _(d):
    write(d, recurrent_model("RNN", "rnn1", activations=["LeakyRelu"], activation_alpha=[0.1, 0.2]))


@case("rnn_bad_direction", "compile", "attribute error",
      "node 'rnn1' (RNN): attribute 'direction' is 'backward'")
def _(d):
    write(d, recurrent_model("RNN", "rnn1", direction="backward"))


@case("lstm_clip_zero", "compile", "attribute error",
      "node 'lstm1' (LSTM): attribute 'clip' is 0; expected > 0")
def _(d):
    write(d, recurrent_model("LSTM", "lstm1", clip=0.0))


@case("lstm_w_rows", "compile", "shape error",
      "node 'lstm1' (LSTM): input 'W' has dim 1 = 12; expected 16")
def _(d):
    write(d, recurrent_model("LSTM", "lstm1", w_rows=12))


@case("gru_directions", "compile", "shape error",
      "node 'gru1' (GRU): input 'W' has dim 0 = 1; expected 2")
def _(d):
    write(d, recurrent_model("GRU", "gru1", direction="bidirectional"))


# ---- versioned import (issue #14): nothing unknown is ignored ----------------

@case("unknown_attribute", "compile", "unsupported",
      "node 'relu1' (Relu): attribute 'alpha' is not implemented for Relu at opset 13 "
      "(known: none)")
def _(d):
    m = relu_model()
    m.graph.node[0].attribute.append(helper.make_attribute("alpha", 0.5))
    write(d, m)


@case("attribute_outside_its_opsets", "compile", "unsupported",
      "node 'mean1' (ReduceMean): attribute 'axes' is not implemented for ReduceMean at "
      "opset 18 (known: keepdims, noop_with_empty_axes)")
def _(d):
    # axes became an input at opset 18: the attribute would have been ignored
    write(d, model([helper.make_node("ReduceMean", ["x"], ["y"], name="mean1", axes=[1])],
                   [vi("x", [2, 3])], [vi("y", [2, 1])], opset=18))


@case("opset_newer_than_known", "compile", "unsupported",
      "node 'relu1' (Relu): opset 29 is newer than smelt knows (28); Relu is implemented "
      "for opsets 1 to 28")
def _(d):
    m = relu_model()
    m.opset_import[0].version = 29
    write(d, m)


@case("space_to_depth_bad_mode", "compile", "attribute error",
      "node 's2d1' (SpaceToDepth): attribute 'mode' is 'RDC', expected DCR or CRD "
      "(ai.onnx opset 28)")
def _(d):
    write(d, model([helper.make_node("SpaceToDepth", ["x"], ["y"], name="s2d1", blocksize=2,
                                     mode="RDC")],
                   [vi("x", [1, 1, 2, 2])], [vi("y", [1, 4, 1, 1])], opset=28))


# The compiled path used to copy x through whatever training_mode said at run
# time (a silent wrong answer when it is true).
@case("dropout_runtime_training_mode", "compile", "unsupported",
      "node 'drop1' (Dropout): training_mode input 't' is only known at run time")
def _(d):
    ratio = numpy_helper.from_array(np.array(0.5, np.float32), "r")
    write(d, model([helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="drop1")],
                   [vi("x", [2, 3]), vi("t", [], TensorProto.BOOL)], [vi("y", [2, 3])],
                   inits=[ratio], opset=13))


@case("if_branch_types", "compile", "invalid model",
      "node 'if1' (If): output 0 is f32 in then_branch and i64 in else_branch")
def _(d):
    def branch(name, arr):
        c = helper.make_node("Constant", [], ["out_" + name],
                             value=numpy_helper.from_array(arr))
        return helper.make_graph([c], name, [], [vi("out_" + name, [1])])
    node = helper.make_node("If", ["cond"], ["y"], name="if1",
                            then_branch=branch("then", np.array([1.0], np.float32)),
                            else_branch=branch("else", np.array([0], np.int64)))
    write(d, model([node], [vi("cond", [], TensorProto.BOOL)], [vi("y", [1])]))


@case("recursive_function", "compile", "limit exceeded",
      "functions nest deeper than 32", "SMELT_LIMIT_FUNCTION_DEPTH")
def _(d):
    body = [helper.make_node("Rec", ["a"], ["t"], domain="local"),
            helper.make_node("Relu", ["t"], ["b"])]
    f = helper.make_function("local", "Rec", ["a"], ["b"], body,
                             [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)])
    m = model([helper.make_node("Rec", ["x"], ["y"], name="call1", domain="local")],
              [vi("x", [1])], [vi("y", [1])],
              functions=[f])
    m.opset_import.append(helper.make_opsetid("local", 1))
    write(d, m)


@case("mutually_recursive_functions", "compile", "limit exceeded",
      "functions nest deeper than 32")
def _(d):
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)]
    # Ping calls Pong twice, Pong calls Ping twice: 2^depth calls if unbounded.
    ping = helper.make_function("local", "Ping", ["a"], ["b"], [
        helper.make_node("Pong", ["a"], ["t"], domain="local"),
        helper.make_node("Pong", ["t"], ["b"], domain="local")], opsets)
    pong = helper.make_function("local", "Pong", ["a"], ["b"], [
        helper.make_node("Ping", ["a"], ["t"], domain="local"),
        helper.make_node("Ping", ["t"], ["b"], domain="local")], opsets)
    m = model([helper.make_node("Ping", ["x"], ["y"], name="call1", domain="local")],
              [vi("x", [1])], [vi("y", [1])], functions=[ping, pong])
    m.opset_import.append(helper.make_opsetid("local", 1))
    write(d, m)


@case("function_blowup", "compile", "limit exceeded",
      "more than 200000 nodes (SMELT_LIMIT_INLINED_NODES")
def _(d):
    # F0 calls F1 twice, F1 calls F2 twice...: 2^24 nodes once inlined, from a
    # model of a few KB.  The cap on inlined nodes must stop it early.
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)]
    depth = 24
    funcs = []
    for i in range(depth):
        if i + 1 < depth:
            body = [helper.make_node(f"F{i + 1}", ["a"], ["t"], domain="local"),
                    helper.make_node(f"F{i + 1}", ["t"], ["b"], domain="local")]
        else:
            body = [helper.make_node("Relu", ["a"], ["b"])]
        funcs.append(helper.make_function("local", f"F{i}", ["a"], ["b"], body, opsets))
    m = model([helper.make_node("F0", ["x"], ["y"], name="call1", domain="local")],
              [vi("x", [1])], [vi("y", [1])], functions=funcs)
    m.opset_import.append(helper.make_opsetid("local", 1))
    write(d, m)


# ---- tensors -------------------------------------------------------------------

@case("raw_data_length", "compile", "invalid model",
      "initializer 'W': raw_data has 12 bytes, its shape needs 16")
def _(d):
    t = numpy_helper.from_array(np.ones((2, 2), np.float32), "W")
    t.raw_data = t.raw_data[:12]
    write(d, add_model(t))


@case("typed_data_count", "compile", "invalid model",
      "initializer 'W': holds 3 values, its shape needs 4")
def _(d):
    t = helper.make_tensor("W", F, [3], [1.0, 2.0, 3.0])
    t.dims[:] = [2, 2]
    write(d, add_model(t))


@case("negative_dims", "compile", "invalid model", "initializer 'W': negative dim -2")
def _(d):
    t = helper.make_tensor("W", F, [2, 2], [1.0, 2.0, 3.0, 4.0])
    t.dims[0] = -2
    write(d, add_model(t))


@case("dims_overflow_int64", "compile", "limit exceeded",
      "initializer 'W': element count exceeds the limit", "SMELT_LIMIT_TENSOR_ELEMS")
def _(d):
    t = helper.make_tensor("W", F, [2, 2], [1.0, 2.0, 3.0, 4.0])
    del t.dims[:]
    t.dims.extend([1 << 32, 1 << 32, 1 << 32])  # product wraps int64
    write(d, add_model(t))


@case("dims_huge", "compile", "limit exceeded", "initializer 'W': element count exceeds")
def _(d):
    t = helper.make_tensor("W", F, [2, 2], [1.0, 2.0, 3.0, 4.0])
    del t.dims[:]
    t.dims.extend([1 << 20, 1 << 20])
    write(d, add_model(t))


@case("rank_9_initializer", "compile", "limit exceeded",
      "initializer 'W': rank 9 exceeds the maximum rank 8")
def _(d):
    write(d, add_model(helper.make_tensor("W", F, [1] * 9, [1.0])))


@case("rank_9_input", "compile", "limit exceeded",
      "graph input 'x': rank 9 exceeds the maximum rank 8")
def _(d):
    write(d, model([helper.make_node("Relu", ["x"], ["y"], name="relu1")],
                   [vi("x", [1] * 9)], [vi("y", None)]))


@case("string_initializer", "compile", "unsupported",
      "initializer 'W': data type 8 is not supported")
def _(d):
    t = helper.make_tensor("W", TensorProto.STRING, [2], [b"a", b"b"])
    write(d, add_model(t))


@case("string_input", "compile", "unsupported",
      "graph input 'x': element type 8 is not supported")
def _(d):
    write(d, model([helper.make_node("Relu", ["x"], ["y"], name="relu1")],
                   [vi("x", [1], TensorProto.STRING)], [vi("y", [1])]))


@case("undefined_dtype_initializer", "compile", "unsupported",
      "initializer 'W': data type 0 is not supported")
def _(d):
    t = helper.make_tensor("W", F, [2, 2], [1.0, 2.0, 3.0, 4.0])
    t.data_type = 0
    write(d, add_model(t))


@case("bad_dtype_initializer", "compile", "unsupported",
      "initializer 'W': data type 99 is not supported")
def _(d):
    t = helper.make_tensor("W", F, [2, 2], [1.0, 2.0, 3.0, 4.0])
    t.data_type = 99
    write(d, add_model(t))


@case("unnamed_initializer", "compile", "invalid model", "initializer 0 has no name")
def _(d):
    write(d, add_model(helper.make_tensor("", F, [2, 2], [1.0, 2.0, 3.0, 4.0])))


@case("initializer_twice", "compile", "invalid model", "value 'W' is defined more than once")
def _(d):
    m = add_model(helper.make_tensor("W", F, [2, 2], [1.0, 2.0, 3.0, 4.0]))
    m.graph.initializer.append(helper.make_tensor("W", F, [2, 2], [1.0, 2.0, 3.0, 4.0]))
    write(d, m)


@case("segmented_tensor", "compile", "unsupported", "segmented tensors are not supported")
def _(d):
    t = helper.make_tensor("W", F, [2, 2], [1.0, 2.0, 3.0, 4.0])
    t.segment.begin, t.segment.end = 0, 2
    write(d, add_model(t))


@case("sparse_initializer", "compile", "unsupported", "sparse initializers are not supported")
def _(d):
    m = relu_model()
    vals = helper.make_tensor("sp", F, [1], [1.0])
    idx = helper.make_tensor("sp_idx", TensorProto.INT64, [1], [0])
    m.graph.sparse_initializer.append(helper.make_sparse_tensor(vals, idx, [4]))
    write(d, m)


# ---- external data ------------------------------------------------------------------

def write_bin(d, name, nbytes):
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes(range(256)) * (nbytes // 256) + bytes(nbytes % 256))


@case("ext_absolute_path", "compile", "invalid model",
      "initializer 'W': external data location must be a relative path")
def _(d):
    write(d, add_model(ext_tensor("W", [2, 2], "/etc/passwd")))


@case("ext_dotdot", "compile", "invalid model",
      "initializer 'W': external data location '../ext_ok/w.bin' contains '..'")
def _(d):
    write(d, add_model(ext_tensor("W", [2, 2], "../ext_ok/w.bin")))


@case("ext_dotdot_inner", "compile", "invalid model", "contains '..'")
def _(d):
    os.makedirs(os.path.join(d, "sub"))
    write_bin(d, "w.bin", 16)
    write(d, add_model(ext_tensor("W", [2, 2], "sub/../w.bin")))


@case("ext_symlink_escape", "compile", "invalid model",
      "initializer 'W': external data 'w.bin' resolves outside the model's folder")
def _(d):
    # points at a real file in a sibling folder: valid data, wrong place
    os.symlink("../ext_ok/w.bin", os.path.join(d, "w.bin"))
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin")))


@case("ext_symlink_dir_escape", "compile", "invalid model", "resolves outside the model's folder")
def _(d):
    os.symlink("../ext_ok", os.path.join(d, "data"))
    write(d, add_model(ext_tensor("W", [2, 2], "data/w.bin")))


@case("ext_offset_beyond", "compile", "invalid model",
      "initializer 'W': external data [8, +16) lies beyond the end of 'w.bin' (16 bytes)")
def _(d):
    write_bin(d, "w.bin", 16)
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin", offset=8)))


@case("ext_offset_huge", "compile", "invalid model", "lies beyond the end of 'w.bin'")
def _(d):
    write_bin(d, "w.bin", 16)
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin", offset=(1 << 63) - 1)))


@case("ext_length_mismatch", "compile", "invalid model",
      "external data length 64 does not match its shape (16 bytes)")
def _(d):
    write_bin(d, "w.bin", 64)
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin", length=64)))


@case("ext_negative_offset", "compile", "invalid model", "bad external data offset '-4'")
def _(d):
    write_bin(d, "w.bin", 16)
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin", offset=-4)))


@case("ext_missing_file", "compile", "io error", "cannot open external data 'nothere.bin'")
def _(d):
    write(d, add_model(ext_tensor("W", [2, 2], "nothere.bin")))


@case("ext_directory", "compile", "io error", "'sub' is not a regular file")
def _(d):
    os.makedirs(os.path.join(d, "sub"))
    write(d, add_model(ext_tensor("W", [2, 2], "sub")))


@case("ext_fifo", "compile", "io error", "'w.bin' is not a regular file")
def _(d):
    os.mkfifo(os.path.join(d, "w.bin"))  # opening it must not block
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin")))


@case("ext_no_location", "compile", "invalid model",
      "external data location must be a relative path")
def _(d):
    t = ext_tensor("W", [2, 2], "w.bin")
    del t.external_data[:]
    write(d, add_model(t))


@case("ext_dotdot_trailing", "compile", "invalid model", "location 'sub/..' contains '..'")
def _(d):
    os.makedirs(os.path.join(d, "sub"))
    write(d, add_model(ext_tensor("W", [2, 2], "sub/..")))


@case("ext_backslash_dotdot", "compile", "invalid model", "contains '..'")
def _(d):
    # a plain name on POSIX, but a model written on Windows means an escape
    write(d, add_model(ext_tensor("W", [2, 2], "..\\ext_ok\\w.bin")))


@case("ext_symlink_absolute_escape", "compile", "invalid model",
      "external data 'w.bin' resolves outside the model's folder")
def _(d):
    os.symlink("/etc/passwd", os.path.join(d, "w.bin"))
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin")))


@case("ext_symlink_to_device", "compile", "invalid model",
      "external data 'w.bin' resolves outside the model's folder")
def _(d):
    os.symlink("/dev/zero", os.path.join(d, "w.bin"))  # endless: must not be read
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin")))


@case("ext_symlink_loop", "compile", "io error", "cannot open external data 'w.bin'")
def _(d):
    os.symlink("w.bin", os.path.join(d, "w.bin"))
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin")))


@case("ext_symlink_dangling", "compile", "io error", "cannot open external data 'w.bin'")
def _(d):
    os.symlink("nothere.bin", os.path.join(d, "w.bin"))
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin")))


@case("ext_symlink_inside", "compile", "ok")
def _(d):
    # links that stay in the folder are fine: a file link and a folder link
    os.makedirs(os.path.join(d, "data"))
    write_bin(os.path.join(d, "data"), "real.bin", 32)
    os.symlink("data/real.bin", os.path.join(d, "w.bin"))
    os.symlink("data", os.path.join(d, "alias"))
    m = model([helper.make_node("Add", ["x", "W"], ["t"], name="add1"),
               helper.make_node("Add", ["t", "V"], ["y"], name="add2")],
              [vi("x", [2, 2])], [vi("y", [2, 2])],
              inits=[ext_tensor("W", [2, 2], "w.bin"),
                     ext_tensor("V", [2, 2], "alias/real.bin", offset=16, length=16)])
    write(d, m)


@case("ext_offset_length_overflow", "compile", "invalid model",
      "external data [9223372036854775800, +16) lies beyond the end of 'w.bin' (16 bytes)")
def _(d):
    # offset + length wraps past INT64_MAX: a naive sum would pass
    write_bin(d, "w.bin", 16)
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin", offset=(1 << 63) - 8, length=16)))


@case("ext_offset_beyond_int64", "compile", "invalid model",
      "bad external data offset '18446744073709551624'")
def _(d):
    # 2^64 + 8: wrapped modulo 2^64 it would be a valid offset of 8
    write_bin(d, "w.bin", 24)
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin", offset=(1 << 64) + 8)))


@case("ext_negative_length", "compile", "invalid model", "bad external data length '-16'")
def _(d):
    write_bin(d, "w.bin", 16)
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin", length=-16)))


@case("ext_offset_empty", "compile", "invalid model", "bad external data offset ''")
def _(d):
    write_bin(d, "w.bin", 16)
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin", offset="")))


@case("ext_offset_signed", "compile", "invalid model", "bad external data offset '+0'")
def _(d):
    write_bin(d, "w.bin", 16)
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin", offset="+0")))


@case("ext_nul_in_location", "compile", "io error", "cannot open external data 'w.bin'")
def _(d):
    # C sees the name up to the NUL, for the checks and the open alike: what
    # follows cannot steer either (there is no w.bin here)
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin\x00/../../ext_ok/w.bin")))


@case("ext_location_too_long", "compile", "invalid model", "external data path too long")
def _(d):
    # longer than PATH_MAX: cut short, it would name another file
    write_bin(d, "w.bin", 16)
    write(d, add_model(ext_tensor("W", [2, 2], "./" * 2100 + "w.bin")))


@case("ext_name_too_long", "compile", "io error", "cannot open external data")
def _(d):
    write(d, add_model(ext_tensor("W", [2, 2], "w" * 300 + ".bin")))


def gen_ext_device(d):
    """A character device planted in the folder (needs CAP_MKNOD)."""
    os.mknod(os.path.join(d, "w.bin"), 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin")))


# A valid external-data model: the sibling the escape cases point into, and a
# check that the confinement does not refuse legitimate data.
def gen_ext_ok(d):
    write_bin(d, "w.bin", 16)
    write(d, add_model(ext_tensor("W", [2, 2], "w.bin", offset=0, length=16)))


# Valid models that stress sizes the importer must not cap too tightly;
# listed in cases.txt with status "ok".
def gen_wide(d):
    """Split into 12 outputs and a Concat of 100 inputs, runnable."""
    outs = [f"s{i}" for i in range(12)]
    nodes = [helper.make_node("Split", ["x"], outs, name="split1", axis=0),
             helper.make_node("Concat", outs * 8 + outs[:4], ["y"], name="concat1", axis=0)]
    write(d, model(nodes, [vi("x", [12, 2])], [vi("y", [100, 2])]))


# ---- sequences and optionals (ops/sequence.c) ----

def seq_vi(name, dt=F):
    return helper.make_value_info(
        name, helper.make_sequence_type_proto(helper.make_tensor_type_proto(dt, None)))


def const_node(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name))


@case("seq_at_out_of_range", "run", "invalid model",
      "node 'at' (SequenceAt): position 5 is out of range [-2, 1] for a sequence of 2 tensors")
def _(d):
    nodes = [const_node("a", np.ones(2, np.float32)), const_node("b", np.zeros(3, np.float32)),
             const_node("p", np.array(5, np.int64)),
             helper.make_node("SequenceConstruct", ["a", "b"], ["s"], name="construct"),
             helper.make_node("SequenceAt", ["s", "p"], ["y"], name="at")]
    write(d, model(nodes, [], [vi("y", None)]))


@case("seq_at_out_of_range_at_run_time", "run", "invalid model",
      "node 'at' (SequenceAt): position -3 is out of range [-1, 0] for a sequence of 1 tensors")
def _(d):
    nodes = [const_node("p", np.array(-3, np.int32)),
             helper.make_node("SplitToSequence", ["x"], ["s"], name="split", axis=0),
             helper.make_node("SequenceAt", ["s", "p"], ["y"], name="at")]
    write(d, model(nodes, [vi("x", ["N", 4])], [vi("y", None)]))


@case("seq_into_add", "run", "invalid model",
      "node 'add' (Add): input 0 is a sequence; Add takes tensors")
def _(d):
    nodes = [helper.make_node("SequenceConstruct", ["x"], ["s"], name="construct"),
             helper.make_node("Add", ["s", "x"], ["y"], name="add")]
    write(d, model(nodes, [vi("x", [4])], [vi("y", [4])]))


@case("seq_insert_wrong_type", "run", "invalid model",
      "node 'insert' (SequenceInsert): the tensor is i64, the sequence holds f32")
def _(d):
    nodes = [helper.make_node("SequenceEmpty", [], ["s"], name="empty"),
             const_node("t", np.array([1], np.int64)),
             helper.make_node("SequenceInsert", ["s", "t"], ["y"], name="insert")]
    write(d, model(nodes, [], [seq_vi("y")]))


@case("optional_get_empty", "run", "invalid model",
      "node 'get' (OptionalGetElement): the optional is empty")
def _(d):
    nodes = [helper.make_node("Optional", [], ["o"], name="none",
                              type=helper.make_tensor_type_proto(F, [4])),
             helper.make_node("OptionalGetElement", ["o"], ["y"], name="get")]
    write(d, model(nodes, [], [vi("y", [4])], opset=18))


@case("seq_input_without_file", "run", "bad argument",
      "input 's' is a sequence: give it with --input s=FILE")
def _(d):
    write(d, model([helper.make_node("SequenceLength", ["s"], ["n"], name="len")],
                   [seq_vi("s")], [vi("n", [], TensorProto.INT64)]))


@case("seq_split_over_memory_limit", "run", "limit exceeded",
      "node 'split' (SplitToSequence): its outputs' element arrays need 4400000000 bytes",
      "memory limit of 4294967296 bytes")
def _(d):  # 50 MB of bools split into 5e7 tensors: the element array alone is 4.4 GB
    nodes = [const_node("b", np.array(True)), const_node("n", np.array([50000000], np.int64)),
             helper.make_node("Expand", ["b", "n"], ["big"], name="expand"),
             helper.make_node("SplitToSequence", ["big"], ["s"], name="split", keepdims=0),
             helper.make_node("SequenceLength", ["s"], ["y"], name="len")]
    write(d, model(nodes, [], [vi("y", [], TensorProto.INT64)]))


@case("seq_compiled_runtime_position", "runc", "unsupported",
      "node 'at' (SequenceAt): the position is not a compile-time constant; the reference "
      "executor runs it (--reference)")
def _(d):  # compiled code unrolls sequences: a position computed from the data cannot be
    # (x has more than 64 elements, so no specialisation makes it a constant)
    nodes = [const_node("two", np.array(2, np.int64)),
             helper.make_node("ArgMax", ["x"], ["m"], name="argmax", keepdims=0),
             helper.make_node("Mod", ["m", "two"], ["p"], name="mod"),
             helper.make_node("SequenceConstruct", ["x", "x"], ["s"], name="construct"),
             helper.make_node("SequenceAt", ["s", "p"], ["y"], name="at")]
    write(d, model(nodes, [vi("x", [100])], [vi("y", [100])]))


@case("map_input", "compile", "unsupported",
      "graph input 'm': only tensors, sequences of tensors and optionals of either are supported")
def _(d):
    mt = onnx.TypeProto()
    mt.map_type.key_type = TensorProto.INT64
    mt.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(F, None))
    write(d, model([helper.make_node("Identity", ["m"], ["y"], name="id")],
                   [helper.make_value_info("m", mt)], [helper.make_value_info("y", mt)]))


# ---- ai.onnx.ml ----

def ml_model(node, x_shape, opset=5):
    graph = helper.make_graph([node], "bad", [vi("x", x_shape)], [vi("y", None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", opset)])
    m.ir_version = 8
    return m


def tree_node(**changes):
    kw = dict(domain="ai.onnx.ml", n_targets=1, tree_roots=[0], nodes_featureids=[0, 0],
              nodes_modes=numpy_helper.from_array(np.array([0, 0], np.uint8), "m"),
              nodes_splits=numpy_helper.from_array(np.array([0, 0], np.float32), "s"),
              nodes_truenodeids=[1, 0], nodes_falsenodeids=[0, 0],
              nodes_trueleafs=[0, 1], nodes_falseleafs=[1, 1], leaf_targetids=[0],
              leaf_weights=numpy_helper.from_array(np.array([1], np.float32), "w"))
    kw.update(changes)
    return helper.make_node("TreeEnsemble", ["x"], ["y"], name="trees", **kw)


@case("tree_cycle", "run", "invalid model",
      "node 'trees' (TreeEnsemble): tree 0 has a cycle")
def _(d):  # node 1's true branch goes back to node 0
    write(d, ml_model(tree_node(nodes_trueleafs=[0, 0], nodes_truenodeids=[1, 0]), [2, 1]))


@case("tree_cycle_compiled", "runc", "invalid model",
      "node 'trees' (TreeEnsemble): tree 0 has a cycle")
def _(d):
    write(d, ml_model(tree_node(nodes_trueleafs=[0, 0], nodes_truenodeids=[1, 0]), [2, 1]))


@case("tree_post_transform", "compile", "unsupported",
      "node 'trees' (TreeEnsemble): post_transform 1 is not implemented")
def _(d):
    write(d, ml_model(tree_node(post_transform=1), [2, 1]))


@case("tree_feature_out_of_range", "compile", "invalid model",
      "node 'trees' (TreeEnsemble): nodes_featureids[0] = 3, X has 1 features")
def _(d):
    write(d, ml_model(tree_node(nodes_featureids=[3, 0]), [2, 1]))


@case("tree_target_out_of_range", "compile", "attribute error",
      "node 'trees' (TreeEnsemble): leaf_targetids[0] = 4 is not in [0, 1)")
def _(d):
    write(d, ml_model(tree_node(leaf_targetids=[4]), [2, 1]))


@case("ml_opset_missing", "compile", "invalid model",
      "node 'bin' (Binarizer): the model uses ai.onnx.ml ops but imports no ai.onnx.ml opset")
def _(d):
    node = helper.make_node("Binarizer", ["x"], ["y"], name="bin", domain="ai.onnx.ml")
    write(d, model([node], [vi("x", [2])], [vi("y", [2])]))


@case("afe_index_out_of_range", "run", "runtime error",
      "node 'afe' (ArrayFeatureExtractor): index 4 at position 1 is out of range for axis 1 "
      "of size 4")
def _(d):
    node = helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], name="afe",
                            domain="ai.onnx.ml")
    graph = helper.make_graph([node], "bad", [vi("x", [2, 4])], [vi("y", None)],
                              initializer=[numpy_helper.from_array(np.array([0, 4], np.int64),
                                                                   "i")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 1)])
    m.ir_version = 8
    write(d, m)


# ---- FlexAttention (ai.onnx.preview) ----

def flex_model(q, k, v, **kw):
    node = helper.make_node("FlexAttention", ["Q", "K", "V"], ["Y"], name="flex",
                            domain="ai.onnx.preview", **kw)
    return model([node], [vi("Q", q), vi("K", k), vi("V", v)], [vi("Y", None)], opset=26,
                 domains=[("ai.onnx.preview", 1)], ir_version=10)


@case("flex_heads", "compile", "invalid model",
      "node 'flex' (FlexAttention): 3 query heads are not a multiple of 2 key/value heads")
def _(d):
    write(d, flex_model([1, 3, 2, 4], [1, 2, 2, 4], [1, 2, 2, 4]))


@case("flex_body_shape", "run", "invalid model",
      "node 'flex' (FlexAttention): 'score_mod' must give floats of its input's shape")
def _(d):
    sm = helper.make_graph([helper.make_node("ReduceSum", ["s"], ["o"], keepdims=1)], "sm",
                           [vi("s", None)], [vi("o", None)])
    write(d, flex_model([1, 1, 2, 4], [1, 1, 3, 4], [1, 1, 3, 4], score_mod=sm))


@case("flex_compiled", "runc", "unsupported",
      "node 'flex' (FlexAttention): FlexAttention has no compiled form yet")
def _(d):  # a body holding a subgraph is not copied into the graph (expand_flex)
    c = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(True), "c"))
    branch = lambda name, op: helper.make_graph([helper.make_node(op, ["s"], [name])], name, [],
                                                [vi(name, None)])
    sm = helper.make_graph([c, helper.make_node("If", ["c"], ["o"], then_branch=branch("t", "Neg"),
                                                else_branch=branch("e", "Abs"))],
                           "sm", [vi("s", None)], [vi("o", None)])
    write(d, flex_model([1, 1, 2, 4], [1, 1, 3, 4], [1, 1, 3, 4], score_mod=sm))


# ---- training optimisers (ai.onnx.preview.training) ----

def optimizer_model(op, inputs, outputs, **kw):
    node = helper.make_node(op, inputs, outputs, name="step", domain="ai.onnx.preview.training", **kw)
    return model([node], [vi("R", []), vi("T", [], TensorProto.INT64)] + [vi(n, [2]) for n in inputs[2:]],
                 [vi(n, None) for n in outputs], opset=17, domains=[("ai.onnx.preview.training", 1)])


@case("adam_missing_state", "run", "invalid model",
      "node 'step' (Adam): 5 inputs: expected R, T and 4 tensors per optimised tensor")
def _(d):
    write(d, optimizer_model("Adam", ["R", "T", "X", "G", "V"], ["X_new", "V_new"]))


@case("momentum_bad_mode", "compile", "attribute error",
      "node 'step' (Momentum): attribute 'mode' is 'heavy': expected 'standard' or 'nesterov'")
def _(d):
    write(d, optimizer_model("Momentum", ["R", "T", "X", "G", "V"], ["X_new", "V_new"], alpha=0.9,
                             beta=0.1, mode="heavy", norm_coefficient=0.0))


@case("adagrad_compiled", "runc", "unsupported",
      "node 'step' (Adagrad): op has no compiled implementation yet")
def _(d):
    write(d, optimizer_model("Adagrad", ["R", "T", "X", "G", "H"], ["X_new", "H_new"]))


# ---- TfIdfVectorizer ----

def tfidf_model(**kw):
    node = helper.make_node("TfIdfVectorizer", ["X"], ["Y"], name="tfidf", **kw)
    return model([node], [vi("X", [2, 6], TensorProto.INT32)], [vi("Y", None)], opset=9)


@case("tfidf_counts_outside_pool", "compile", "attribute error",
      "node 'tfidf' (TfIdfVectorizer): ngram_counts[1] = 9 is not an ascending position inside "
      "the pool of 4")
def _(d):
    write(d, tfidf_model(mode="TF", min_gram_length=2, max_gram_length=2, max_skip_count=0,
                         ngram_counts=[0, 9], ngram_indexes=[0, 1], pool_int64s=[2, 3, 5, 4]))


@case("tfidf_string_pool", "compile", "unsupported",
      "node 'tfidf' (TfIdfVectorizer): attribute 'pool_strings': string tensors are outside")
def _(d):
    write(d, tfidf_model(mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0,
                         ngram_counts=[0], ngram_indexes=[0], pool_strings=["a"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder (recreated)")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    os.makedirs(os.path.join(out, "ext_ok"))
    gen_ext_ok(os.path.join(out, "ext_ok"))
    os.makedirs(os.path.join(out, "wide_ok"))
    gen_wide(os.path.join(out, "wide_ok"))
    lines = ["ext_ok\tcompile\tok",  # must load: confinement refuses only escapes
             "wide_ok\trun\tok"]
    try:
        os.makedirs(os.path.join(out, "ext_device"))
        gen_ext_device(os.path.join(out, "ext_device"))
        lines.append("ext_device\tcompile\tio error\t'w.bin' is not a regular file")
    except PermissionError:
        shutil.rmtree(os.path.join(out, "ext_device"))
        print("ext_device skipped: mknod is not permitted here")
    for name, mode, status, subs, fn in CASES:
        d = os.path.join(out, name)
        os.makedirs(d)
        fn(d)
        for s in subs:
            assert "\t" not in s and "\n" not in s, name
        lines.append("\t".join([name, mode, status] + subs))
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("# <case>\t<compile|run|runc>\t<status>\t<substring>...  (generated)\n")
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(CASES)} bad models to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
