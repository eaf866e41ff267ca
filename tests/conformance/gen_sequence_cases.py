#!/usr/bin/env python3
"""Node tests for sequence and optional values (ops/sequence.c, the
sequences If, Loop and SequenceMap carry) beyond the ONNX node tests, in the
ONNX backend-test layout.  Expected values are worked out here from the
operator definitions with numpy (lists of arrays), not taken from smelt nor
from onnx's reference implementation (whose SequenceInsert puts a tensor
inserted at position len(sequence) first).

Run by ctest with the pyenv python3 (onnx 1.23: numpy_helper.from_list and
from_optional write the SequenceProto/OptionalProto files):
conformance/sequence_cases_reference checks every case on the reference
executor; conformance/sequence_cases_compiled the compiled path, which
unrolls sequences and optionals into their elements
(passes/unroll_containers.c).
"""
import argparse
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def tensor_type(dt, shape=None):
    return helper.make_tensor_type_proto(dt, shape)


def seq_type(dt):
    return helper.make_sequence_type_proto(tensor_type(dt))


def opt_type(inner):
    return helper.make_optional_type_proto(inner)


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name))


def write_value(path, vtype, value, name):
    if vtype.HasField("sequence_type"):
        proto = numpy_helper.from_list(value, name)
    elif vtype.HasField("optional_type"):
        proto = numpy_helper.from_optional(value, name)
    else:
        proto = numpy_helper.from_array(value, name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def write_case(out, name, opset, nodes, inputs, outputs, data_sets):
    """inputs/outputs: (name, TypeProto); data_sets: [(input values, output values)]."""
    d = os.path.join(out, "test_" + name)
    graph = helper.make_graph(nodes, name, [helper.make_value_info(n, t) for n, t in inputs],
                              [helper.make_value_info(n, t) for n, t in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (ins, outs) in enumerate(data_sets):
        ds = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(ds)
        for kind, decl, vals in (("input", inputs, ins), ("output", outputs, outs)):
            for i, ((n, t), v) in enumerate(zip(decl, vals)):
                write_value(os.path.join(ds, "%s_%d.pb" % (kind, i)), t, v, n)


def loop_builds_sequence(out):
    """A Loop inserting at the front each iteration a tensor whose length
    grows with the iteration; then its length and ConcatFromSequence."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]),
         const("one", np.array(1, np.int64)),
         helper.make_node("Add", ["i", "one"], ["len"]),
         helper.make_node("Reshape", ["len", "shape1"], ["len1"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Expand", ["fi", "len1"], ["t"]),
         const("front", np.array(0, np.int64)),
         helper.make_node("SequenceInsert", ["s", "t", "front"], ["s_out"])],
        "body", [helper.make_value_info("i", tensor_type(I64, [])),
                 helper.make_value_info("c", tensor_type(TensorProto.BOOL, [])),
                 helper.make_value_info("s", seq_type(F))],
        [helper.make_value_info("c_out", tensor_type(TensorProto.BOOL, [])),
         helper.make_value_info("s_out", seq_type(F))],
        initializer=[numpy_helper.from_array(np.array([1], np.int64), "shape1")])
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
             helper.make_node("Loop", ["m", "", "empty"], ["seq"], body=body),
             helper.make_node("SequenceLength", ["seq"], ["n"]),
             helper.make_node("ConcatFromSequence", ["seq"], ["cat"], axis=0)]
    m = 4
    seq = [np.full(i + 1, i, np.float32) for i in reversed(range(m))]
    write_case(out, "loop_builds_sequence", 13, nodes,
               [("m", tensor_type(I64, []))],
               [("seq", seq_type(F)), ("n", tensor_type(I64, [])), ("cat", tensor_type(F))],
               [([np.array(m, np.int64)], [seq, np.array(m, np.int64), np.concatenate(seq)])])


def if_picks_sequence(out):
    """Branches giving sequences of other lengths: SequenceConstruct of two
    tensors, or SplitToSequence by a scalar split (chunks 2, 2, 1)."""
    then_g = helper.make_graph([helper.make_node("SequenceConstruct", ["x", "x"], ["a"])],
                               "then", [], [helper.make_value_info("a", seq_type(F))])
    else_g = helper.make_graph(
        [const("two", np.array(2, np.int64)),
         helper.make_node("SplitToSequence", ["x", "two"], ["b"], axis=0)],
        "else", [], [helper.make_value_info("b", seq_type(F))])
    nodes = [helper.make_node("If", ["cond"], ["s"], then_branch=then_g, else_branch=else_g)]
    x = np.arange(5, dtype=np.float32)
    sets = [([np.array(True), x], [[x, x]]),
            ([np.array(False), x], [[x[0:2], x[2:4], x[4:5]]])]
    write_case(out, "if_picks_sequence", 13, nodes,
               [("cond", tensor_type(TensorProto.BOOL, [])), ("x", tensor_type(F, [5]))],
               [("s", seq_type(F))], sets)


def erase_and_at(out):
    """SequenceErase at an int32 position counted from the back and by
    default (the last); SequenceAt at -1 and at 0."""
    nodes = [helper.make_node("SequenceErase", ["s", "p"], ["first_gone"]),
             helper.make_node("SequenceErase", ["s"], ["last_gone"]),
             const("minus1", np.array(-1, np.int64)),
             helper.make_node("SequenceAt", ["s", "minus1"], ["last"]),
             const("zero", np.array(0, np.int32)),
             helper.make_node("SequenceAt", ["first_gone", "zero"], ["second"])]
    s = [np.ones((1, 2), np.float32), np.arange(6, dtype=np.float32).reshape(2, 3),
         np.full((3,), 7, np.float32)]
    write_case(out, "erase_and_at", 11, nodes,
               [("s", seq_type(F)), ("p", tensor_type(TensorProto.INT32, []))],
               [("first_gone", seq_type(F)), ("last_gone", seq_type(F)),
                ("last", tensor_type(F)), ("second", tensor_type(F))],
               [([s, np.array(-3, np.int32)], [s[1:], s[:2], s[2], s[1]])])


def insert_positions(out):
    """SequenceInsert at len(sequence) (appends, as the spec says), at -1
    (before the last) and without a position (appends)."""
    nodes = [const("end", np.array(2, np.int64)), const("before_last", np.array(-1, np.int64)),
             helper.make_node("SequenceInsert", ["s", "t", "end"], ["at_end"]),
             helper.make_node("SequenceInsert", ["s", "t", "before_last"], ["at_minus1"]),
             helper.make_node("SequenceInsert", ["s", "t"], ["appended"])]
    s = [np.array([1, 2], np.int64), np.array([3], np.int64)]
    t = np.array([9, 9, 9], np.int64)
    write_case(out, "insert_positions", 11, nodes,
               [("s", seq_type(I64)), ("t", tensor_type(I64, [3]))],
               [("at_end", seq_type(I64)), ("at_minus1", seq_type(I64)),
                ("appended", seq_type(I64))],
               [([s, t], [s + [t], [s[0], t, s[1]], s + [t]])])


def concat_new_axis(out):
    """ConcatFromSequence stacking along a new last axis, and concatenating
    tensors of other lengths along axis 1."""
    nodes = [helper.make_node("ConcatFromSequence", ["s"], ["stacked"], axis=-1, new_axis=1),
             helper.make_node("ConcatFromSequence", ["r"], ["joined"], axis=1)]
    s = [np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * k for k in range(3)]
    r = [np.ones((2, 1), np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)]
    write_case(out, "concat_new_axis", 11, nodes,
               [("s", seq_type(F)), ("r", seq_type(F))],
               [("stacked", tensor_type(F)), ("joined", tensor_type(F))],
               [([s, r], [np.stack(s, axis=-1), np.concatenate(r, axis=1)])])


def split_forms(out):
    """SplitToSequence: a 1-D split with a zero-length chunk, a scalar split
    not dividing the axis, no split with keepdims 0 along axis -1."""
    nodes = [helper.make_node("SplitToSequence", ["x", "sizes"], ["by_sizes"], axis=1),
             helper.make_node("SplitToSequence", ["x", "each"], ["by_each"], axis=1),
             helper.make_node("SplitToSequence", ["x"], ["squeezed"], axis=-1, keepdims=0)]
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    sizes, each = np.array([0, 3, 2], np.int64), np.array(2, np.int32)
    write_case(out, "split_forms", 11, nodes,
               [("x", tensor_type(F, [2, 5])), ("sizes", tensor_type(I64, [3])),
                ("each", tensor_type(TensorProto.INT32, []))],
               [("by_sizes", seq_type(F)), ("by_each", seq_type(F)), ("squeezed", seq_type(F))],
               [([x, sizes, each], [[x[:, 0:0], x[:, 0:3], x[:, 3:5]],
                                    [x[:, 0:2], x[:, 2:4], x[:, 4:5]],
                                    [x[:, k] for k in range(5)]])])


def optional_roundtrip(out):
    """Optional of a tensor and an empty Optional by its type attribute
    (opset 18): has-element both ways, the element back, the empty one as
    an output."""
    nodes = [helper.make_node("Optional", ["x"], ["some"]),
             helper.make_node("Optional", [], ["none"], type=tensor_type(F, [3])),
             helper.make_node("OptionalHasElement", ["some"], ["has_some"]),
             helper.make_node("OptionalHasElement", ["none"], ["has_none"]),
             helper.make_node("OptionalGetElement", ["some"], ["back"])]
    x = np.array([1, -2, 3], np.float32)
    write_case(out, "optional_roundtrip", 18, nodes, [("x", tensor_type(F, [3]))],
               [("has_some", tensor_type(TensorProto.BOOL, [])),
                ("has_none", tensor_type(TensorProto.BOOL, [])), ("back", tensor_type(F, [3])),
                ("none", opt_type(tensor_type(F, [3])))],
               [([x], [np.array(True), np.array(False), x, None])])


def sequence_map_two_outputs(out):
    """SequenceMap over elements of other lengths with a tensor input,
    giving two sequences (a sum and each element's shape)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["e", "t"], ["sum"]), helper.make_node("Shape", ["e"], ["shp"])],
        "body", [helper.make_value_info("e", tensor_type(F, ["n"])),
                 helper.make_value_info("t", tensor_type(F, [1]))],
        [helper.make_value_info("sum", tensor_type(F, ["n"])),
         helper.make_value_info("shp", tensor_type(I64, [1]))])
    nodes = [helper.make_node("SequenceMap", ["s", "t"], ["sums", "shapes"], body=body)]
    s = [np.arange(k + 1, dtype=np.float32) for k in range(3)]
    t = np.array([0.5], np.float32)
    write_case(out, "sequence_map_two_outputs", 17, nodes,
               [("s", seq_type(F)), ("t", tensor_type(F, [1]))],
               [("sums", seq_type(F)), ("shapes", seq_type(I64))],
               [([s, t], [[e + t for e in s], [np.array([len(e)], np.int64) for e in s]])])


def sequence_map_untyped_body(out):
    """SequenceMap whose body declares no types: the outputs' element type
    comes from the body's first run."""
    body = helper.make_graph([helper.make_node("Mul", ["e", "e"], ["sq"])], "body",
                             [helper.make_empty_tensor_value_info("e")],
                             [helper.make_empty_tensor_value_info("sq")])
    nodes = [helper.make_node("SequenceMap", ["s"], ["squares"], body=body)]
    s = [np.arange(k + 2, dtype=np.int64) - 1 for k in range(3)]
    write_case(out, "sequence_map_untyped_body", 17, nodes, [("s", seq_type(I64))],
               [("squares", seq_type(I64))], [([s], [[e * e for e in s]])])


def loop_optional_state(out):
    """A loop-carried optional(seq) the body turns into a seq: read as a
    present optional from the second iteration on; with zero iterations the
    node gives the initial optional's sequence."""
    then_g = helper.make_graph([helper.make_node("OptionalGetElement", ["o"], ["inner"])],
                               "then", [], [helper.make_value_info("inner", seq_type(F))])
    else_g = helper.make_graph([helper.make_node("SequenceEmpty", [], ["fresh"])],
                               "else", [], [helper.make_value_info("fresh", seq_type(F))])
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]),
         helper.make_node("OptionalHasElement", ["o"], ["has"]),
         helper.make_node("If", ["has"], ["cur"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Unsqueeze", ["fi", "ax"], ["t"]),
         helper.make_node("SequenceInsert", ["cur", "t"], ["o_out"])],
        "body", [helper.make_value_info("i", tensor_type(I64, [])),
                 helper.make_value_info("c", tensor_type(TensorProto.BOOL, [])),
                 helper.make_value_info("o", opt_type(seq_type(F)))],
        [helper.make_value_info("c_out", tensor_type(TensorProto.BOOL, [])),
         helper.make_value_info("o_out", seq_type(F))],
        initializer=[numpy_helper.from_array(np.array([0], np.int64), "ax")])
    nodes = [helper.make_node("Loop", ["m", "", "init"], ["res"], body=body)]
    start = [np.array([5], np.float32)]
    sets = [([np.array(3, np.int64), start],
             [start + [np.array([k], np.float32) for k in range(3)]]),
            ([np.array(0, np.int64), start], [start])]
    write_case(out, "loop_optional_state", 16, nodes,
               [("m", tensor_type(I64, [])), ("init", opt_type(seq_type(F)))],
               [("res", seq_type(F))], sets)


def identity_empty_sequence(out):
    """An empty sequence of int64 through Identity (Identity-14)."""
    nodes = [helper.make_node("SequenceEmpty", [], ["e"], dtype=I64),
             helper.make_node("Identity", ["e"], ["y"]),
             helper.make_node("SequenceLength", ["y"], ["n"])]
    write_case(out, "identity_empty_sequence", 14, nodes, [],
               [("y", seq_type(I64)), ("n", tensor_type(I64, []))],
               [([], [[], np.array(0, np.int64)])])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    for gen in (loop_builds_sequence, if_picks_sequence, erase_and_at, insert_positions,
                concat_new_axis, split_forms, optional_roundtrip, sequence_map_two_outputs,
                sequence_map_untyped_body, loop_optional_state, identity_empty_sequence):
        gen(args.out)


if __name__ == "__main__":
    main()
