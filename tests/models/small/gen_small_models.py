#!/usr/bin/python3
"""Small checked-in models for tests that need a model file but no torch:

  attention.onnx   one attention head over 6 tokens of width 8: Q, K, V
                   projections (MatMul with constant weights + bias Add, so
                   pack_weights applies), Q K^T, scale, Softmax, P V, Relu.
                   Used by unit/test_alloc_fail_compile.
  gather_chain.onnx the pipeline fuzzer's reproducer of issue 16
                   (tests/fuzz/regressions/pipeline_models/
                   gather_elements_oom_simplify.onnx: GatherElements(x, x),
                   GatherElements, Mul, GatherElements over int64, hostile
                   value names) without the attributes the fuzzer invented,
                   which the importer now refuses: the same compile, so the
                   allocation-failure test still reaches the simplifier.
  long_chain.onnx  40 chained elementwise ops over float32 [2, 8], one fused
                   function: `compile --stats` shortens its op list.
  softmax_row.onnx Softmax over float32 [1, 32000]: its exponentials (128 KB)
                   live in the function's workspace after the arena
  dynamic_batch.onnx Relu over float32 [batch, 4] (a symbolic dim):
                   `compile` refuses it naming the dim, `--dim batch=N` binds it.
  sin_int32.onnx   Sin of an int32 input, which Sin does not take: errors
                   name the node and the dtype, not a "dynamic shape".
  two_inputs.onnx  d = a - b, s = a + b over float32 [2, 3] (the order of the
                   inputs matters): unit/test_api_calls binds inputs by name.

Run with Debian's /usr/bin/python3 (it has onnx):
  tests/models/small/gen_small_models.py tests/models/small
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save


def attention():
    rng = np.random.default_rng(7)
    t, d = 6, 8
    inits, nodes = [], []

    def const(name, shape):
        inits.append(numpy_helper.from_array(
            rng.uniform(-1, 1, shape).astype(np.float32), name))
        return name

    for p in "qkv":
        nodes.append(helper.make_node("MatMul", ["x", const("w" + p, (d, d))], [p + "0"]))
        nodes.append(helper.make_node("Add", [p + "0", const("b" + p, (d,))], [p]))
    nodes += [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
        helper.make_node("MatMul", ["q", "kt"], ["s0"]),
        helper.make_node("Mul", ["s0", const("scale", ())], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["o"]),
        helper.make_node("Relu", ["o"], ["y"]),
    ]
    g = helper.make_graph(
        nodes, "attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [t, d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [t, d])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def gather_chain(regression):
    import onnx
    m = onnx.load(regression)
    for n in m.graph.node:
        keep = [a for a in n.attribute if a.name == "axis"]
        del n.attribute[:]
        n.attribute.extend(keep)
    return m


def two_inputs():
    v = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3])
    g = helper.make_graph([helper.make_node("Sub", ["a", "b"], ["d"]),
                           helper.make_node("Add", ["a", "b"], ["s"])],
                          "two_inputs", [v("a"), v("b")], [v("d"), v("s")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def softmax_row():
    v = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 32000])
    g = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
                          "softmax_row", [v("x")], [v("y")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def long_chain(n=40):
    v = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 8])
    ops = ["Add", "Mul", "Sub"]
    nodes = [helper.make_node(ops[i % 3], ["x" if i == 0 else "t%d" % (i - 1), "c"],
                              ["y" if i == n - 1 else "t%d" % i]) for i in range(n)]
    c = helper.make_tensor("c", TensorProto.FLOAT, [1], [1.5])
    g = helper.make_graph(nodes, "long_chain", [v("x")], [v("y")], [c])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def dynamic_batch():
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "dynamic_batch",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def sin_int32():
    g = helper.make_graph([helper.make_node("Sin", ["x"], ["y"], name="sin_of_int")], "sin_int32",
                          [helper.make_tensor_value_info("x", TensorProto.INT32, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    save(attention(), out + "/attention.onnx")
    save(softmax_row(), out + "/softmax_row.onnx")
    save(two_inputs(), out + "/two_inputs.onnx")
    save(long_chain(), out + "/long_chain.onnx")
    save(dynamic_batch(), out + "/dynamic_batch.onnx")
    save(sin_int32(), out + "/sin_int32.onnx")
    here = __file__.rsplit("/", 1)[0]
    save(gather_chain(here + "/../../fuzz/regressions/pipeline_models/"
                      "gather_elements_oom_simplify.onnx"), out + "/gather_chain.onnx")


if __name__ == "__main__":
    main()
