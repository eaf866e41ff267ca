#!/usr/bin/env python3
"""Control-flow cases beyond the ONNX node tests (If, Loop, Scan), in the
ONNX backend-test layout (<case>/model.onnx, <case>/test_data_set_0/*.pb),
with expected outputs from ONNX Runtime.

The node tests have one If, one Loop and a few Scans.  These cover what a
model exported from a framework does: an If nested in a Loop body reading
values of the enclosing graphs, a trip count given as a model input (read
at run time by the compiled code), a while loop whose condition the body
computes, loop-carried values swapped each iteration, a Scan computing a
cumulative sum in reverse along axis 1, and If branches returning outer
values and constants.

Run by ctest (conformance/control_cases_*) with the pyenv python3 (onnx and
onnxruntime from PyPI, installed by scripts/setup.sh).
"""
import argparse
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper, TensorProto as TP

OPSET = 17
RNG = np.random.default_rng(14)


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name))


def save(out, name, graph, feeds, opset=OPSET):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    expected = sess.run(None, feeds)
    d = os.path.join(out, name)
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, inp in enumerate(graph.input):
        t = numpy_helper.from_array(feeds[inp.name], inp.name)
        open(os.path.join(data, f"input_{i}.pb"), "wb").write(t.SerializeToString())
    for i, (o, v) in enumerate(zip(graph.output, expected)):
        t = numpy_helper.from_array(np.asarray(v), o.name)
        open(os.path.join(data, f"output_{i}.pb"), "wb").write(t.SerializeToString())


def nested_if_in_loop(out):
    """Loop (trip count from a constant) whose body holds an If on the
    iteration's parity; both branches read the outer model input `w` and
    the body's carried value; a scan output stacks each iteration's state."""
    then_g = helper.make_graph(
        [helper.make_node("Add", ["h_in", "w"], ["t_out"])], "then", [], [vi("t_out", TP.FLOAT, [2, 3])])
    else_g = helper.make_graph(
        [helper.make_node("Mul", ["h_in", "w"], ["e0"]), const("half", np.float32(0.5)),
         helper.make_node("Mul", ["e0", "half"], ["e_out"])], "else", [], [vi("e_out", TP.FLOAT, [2, 3])])
    body = helper.make_graph(
        [const("two", np.int64(2)), helper.make_node("Mod", ["i", "two"], ["r"]),
         const("zero", np.int64(0)), helper.make_node("Equal", ["r", "zero"], ["even"]),
         helper.make_node("If", ["even"], ["h_out"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Tanh", ["h_out"], ["h_next"]),
         helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Identity", ["h_next"], ["h_scan"])],
        "body", [vi("i", TP.INT64, []), vi("c_in", TP.BOOL, []), vi("h_in", TP.FLOAT, [2, 3])],
        [vi("c_out", TP.BOOL, []), vi("h_next", TP.FLOAT, [2, 3]), vi("h_scan", TP.FLOAT, [2, 3])])
    g = helper.make_graph(
        [const("M", np.int64(5)), const("T", np.array(True)),
         helper.make_node("Loop", ["M", "T", "h0"], ["h", "hs"], body=body)],
        "nested_if_in_loop", [vi("h0", TP.FLOAT, [2, 3]), vi("w", TP.FLOAT, [2, 3])],
        [vi("h", TP.FLOAT, [2, 3]), vi("hs", TP.FLOAT, [5, 2, 3])])
    feeds = {"h0": RNG.standard_normal((2, 3)).astype(np.float32),
             "w": RNG.standard_normal((2, 3)).astype(np.float32)}
    save(out, "control_nested_if_in_loop", g, feeds)


def loop_trip_count_input(out, name, trips):
    """The trip count is a model input (compiled code reads it at run
    time); two carried values swap every iteration, a third accumulates."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["b_in"], ["a_out"]),
         helper.make_node("Identity", ["a_in"], ["b_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=TP.FLOAT),
         helper.make_node("Mul", ["a_in", "i_f"], ["ai"]),
         helper.make_node("Add", ["s_in", "ai"], ["s_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [vi("i", TP.INT64, []), vi("c_in", TP.BOOL, []), vi("a_in", TP.FLOAT, [4]),
                 vi("b_in", TP.FLOAT, [4]), vi("s_in", TP.FLOAT, [4])],
        [vi("c_out", TP.BOOL, []), vi("a_out", TP.FLOAT, [4]), vi("b_out", TP.FLOAT, [4]),
         vi("s_out", TP.FLOAT, [4])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "a0", "b0", "s0"], ["a", "b", "s"], body=body)],
        name, [vi("M", TP.INT64, []), vi("a0", TP.FLOAT, [4]), vi("b0", TP.FLOAT, [4]),
               vi("s0", TP.FLOAT, [4])],
        [vi("a", TP.FLOAT, [4]), vi("b", TP.FLOAT, [4]), vi("s", TP.FLOAT, [4])])
    feeds = {"M": np.array(trips, np.int64), "a0": RNG.standard_normal(4).astype(np.float32),
             "b0": RNG.standard_normal(4).astype(np.float32), "s0": np.zeros(4, np.float32)}
    save(out, name, g, feeds)


def while_loop(out):
    """No trip count: the body halves x until its sum falls below a limit
    (an outer-scope model input), so the condition ends the loop."""
    body = helper.make_graph(
        [const("h", np.float32(0.5)), helper.make_node("Mul", ["x_in", "h"], ["x_out"]),
         helper.make_node("ReduceSum", ["x_out"], ["sum"], keepdims=0),
         helper.make_node("Greater", ["sum", "limit"], ["c_out"])],
        "body", [vi("i", TP.INT64, []), vi("c_in", TP.BOOL, []), vi("x_in", TP.FLOAT, [3])],
        [vi("c_out", TP.BOOL, []), vi("x_out", TP.FLOAT, [3])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["", "go", "x0"], ["x"], body=body)],
        "while_loop", [vi("go", TP.BOOL, []), vi("x0", TP.FLOAT, [3]), vi("limit", TP.FLOAT, [])],
        [vi("x", TP.FLOAT, [3])])
    feeds = {"go": np.array(True), "x0": np.array([40, 30, 50], np.float32),
             "limit": np.array(1.0, np.float32)}
    save(out, "control_while_loop", g, feeds)


def scan_cumsum(out):
    """Scan-16: a running sum over axis 1 of x read in reverse, the sums
    written along output axis 1, plus a running max as a second state."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Max", ["m_in", "x_t"], ["m_out"]),
         helper.make_node("Identity", ["s_out"], ["y_t"])],
        "body", [vi("s_in", TP.FLOAT, [2]), vi("m_in", TP.FLOAT, [2]), vi("x_t", TP.FLOAT, [2])],
        [vi("s_out", TP.FLOAT, [2]), vi("m_out", TP.FLOAT, [2]), vi("y_t", TP.FLOAT, [2])])
    g = helper.make_graph(
        [helper.make_node("Scan", ["s0", "m0", "x"], ["s", "m", "y"], body=body, num_scan_inputs=1,
                          scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1])],
        "scan_cumsum", [vi("s0", TP.FLOAT, [2]), vi("m0", TP.FLOAT, [2]), vi("x", TP.FLOAT, [2, 6])],
        [vi("s", TP.FLOAT, [2]), vi("m", TP.FLOAT, [2]), vi("y", TP.FLOAT, [2, 6])])
    feeds = {"s0": np.zeros(2, np.float32), "m0": np.full(2, -1e30, np.float32),
             "x": RNG.standard_normal((2, 6)).astype(np.float32)}
    save(out, "control_scan_cumsum", g, feeds)


def if_outer_values(out, name, cond):
    """If on a model input: then returns an outer value (through Identity:
    onnx's checker refuses a bare outer name as a branch output) and a
    computed one, else a constant and another outer value."""
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]),
                                helper.make_node("Identity", ["x"], ["xi"])], "then", [],
                               [vi("xi", TP.FLOAT, [3]), vi("r", TP.FLOAT, [3])])
    else_g = helper.make_graph([const("k", np.array([7, 8, 9], np.float32)),
                                helper.make_node("Identity", ["y"], ["yi"])], "else", [],
                               [vi("k", TP.FLOAT, [3]), vi("yi", TP.FLOAT, [3])])
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["o1", "o2"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Add", ["o1", "o2"], ["sum"])],
        name, [vi("c", TP.BOOL, []), vi("x", TP.FLOAT, [3]), vi("y", TP.FLOAT, [3])],
        [vi("o1", TP.FLOAT, [3]), vi("sum", TP.FLOAT, [3])])
    feeds = {"c": np.array(cond), "x": np.array([-1, 2, -3], np.float32),
             "y": np.array([4, 5, 6], np.float32)}
    save(out, name, g, feeds)


def scan_outer_constants(out):
    """Scan whose body reshapes with shapes and axes that are constants of
    the outer graph (captured: the body's shapes depend on their values)."""
    body = helper.make_graph(
        [helper.make_node("Unsqueeze", ["x_t", "axes"], ["col"]),
         helper.make_node("Unsqueeze", ["x_t", "axes0"], ["row"]),
         helper.make_node("MatMul", ["col", "row"], ["outer"]),
         helper.make_node("Add", ["s_in", "outer"], ["s_out"]),
         helper.make_node("Reshape", ["s_out", "flat"], ["y_t"])],
        "body", [vi("s_in", TP.FLOAT, [3, 3]), vi("x_t", TP.FLOAT, [3])],
        [vi("s_out", TP.FLOAT, [3, 3]), vi("y_t", TP.FLOAT, [9])])
    g = helper.make_graph(
        [const("axes", np.array([-1], np.int64)), const("axes0", np.array([0], np.int64)),
         const("flat", np.array([9], np.int64)),
         helper.make_node("Scan", ["s0", "x"], ["s", "y"], body=body, num_scan_inputs=1)],
        "scan_outer_constants", [vi("s0", TP.FLOAT, [3, 3]), vi("x", TP.FLOAT, [4, 3])],
        [vi("s", TP.FLOAT, [3, 3]), vi("y", TP.FLOAT, [4, 9])])
    feeds = {"s0": RNG.standard_normal((3, 3)).astype(np.float32),
             "x": RNG.standard_normal((4, 3)).astype(np.float32)}
    save(out, "control_scan_outer_constants", g, feeds)


def if_constant_cond(out):
    """If on a constant: the branch not taken gives another shape (as in
    AffineGrid's function body), which compiled code must not lower."""
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [],
                               [vi("t", TP.FLOAT, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Transpose", ["x"], ["e"])], "else", [],
                               [vi("e", TP.FLOAT, [3, 2])])
    g = helper.make_graph(
        [const("c", np.array(True)),
         helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
        "if_constant_cond", [vi("x", TP.FLOAT, [2, 3])], [vi("y", TP.FLOAT, [2, 3])])
    save(out, "control_if_constant_cond", g, {"x": RNG.standard_normal((2, 3)).astype(np.float32)})


def scan8(out, name, lens, lens_const=False):
    """Scan-8 (opset 8): a batch axis on every input, the sequence at axis 1,
    the second scan input read in reverse; with sequence_lens, shorter
    entries stop early and their scan outputs are padded with zeros
    (lens_const: sequence_lens an initializer, not an input)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "a_t"], ["s1"]),
         helper.make_node("Mul", ["s1", "b_t"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y_t"])],
        "body", [vi("s_in", TP.FLOAT, [2]), vi("a_t", TP.FLOAT, [2]), vi("b_t", TP.FLOAT, [2])],
        [vi("s_out", TP.FLOAT, [2]), vi("y_t", TP.FLOAT, [2])])
    ins = [vi("s0", TP.FLOAT, [3, 2]), vi("a", TP.FLOAT, [3, 4, 2]), vi("b", TP.FLOAT, [3, 4, 2])]
    feeds = {"s0": RNG.standard_normal((3, 2)).astype(np.float32),
             "a": RNG.standard_normal((3, 4, 2)).astype(np.float32),
             "b": RNG.uniform(0.5, 1.5, (3, 4, 2)).astype(np.float32)}
    first, inits = "", []
    if lens is not None and lens_const:
        inits = [numpy_helper.from_array(np.array(lens, np.int64), "lens")]
        first = "lens"
    elif lens is not None:
        ins = [vi("lens", TP.INT64, [3])] + ins
        feeds = {"lens": np.array(lens, np.int64), **feeds}
        first = "lens"
    g = helper.make_graph(
        [helper.make_node("Scan", [first, "s0", "a", "b"], ["s", "y"], body=body,
                          num_scan_inputs=2, directions=[0, 1])],
        name, ins, [vi("s", TP.FLOAT, [3, 2]), vi("y", TP.FLOAT, [3, 4, 2])], initializer=inits)
    save(out, name, g, feeds, opset=8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    nested_if_in_loop(out)
    loop_trip_count_input(out, "control_loop_trips_input", 7)
    loop_trip_count_input(out, "control_loop_trips_zero", 0)
    while_loop(out)
    scan_cumsum(out)
    if_outer_values(out, "control_if_outer_true", True)
    if_outer_values(out, "control_if_outer_false", False)
    scan_outer_constants(out)
    if_constant_cond(out)
    scan8(out, "control_scan8", None)
    scan8(out, "control_scan8_lens", [4, 2, 1])
    scan8(out, "control_scan8_lens_const", [1, 4, 3], lens_const=True)


if __name__ == "__main__":
    main()
