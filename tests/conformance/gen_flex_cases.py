#!/usr/bin/env python3
"""FlexAttention (ai.onnx.preview 1) cases beyond its node tests, in the ONNX
backend-test layout, expected values from onnx's reference implementation
(onnx.reference, onnx 1.23): modifier bodies that read outer values
(captures), grouped-query heads under a modifier, softmax_precision double
with float inputs, a scale with a modifier that is not a shift (the node
tests' score_mod adds a constant, which the softmax cancels), a score_mod
giving float16 (cast back to the softmax type).

Run by ctest (conformance/flex_cases_reference and _compiled: compiled code
copies the bodies into the graph, passes/expand_flex.c).
"""
import argparse
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

F, D = TensorProto.FLOAT, TensorProto.DOUBLE
NP = {F: np.float32, D: np.float64}


def body(name, nodes, dt, inputs=("s",), output="o", inits=()):
    return helper.make_graph(nodes, name, [helper.make_tensor_value_info(i, dt, None) for i in inputs],
                             [helper.make_tensor_value_info(output, dt, None)],
                             initializer=list(inits))


def write_case(out, name, node, inputs, extra_nodes=(), inits=(), oracle_node=None):
    """inputs: (name, array); Y's expected value from onnx's reference, run
    on oracle_node when given (the same bodies with the outer values they
    read as their own initializers: onnx's reference does not pass outer
    values into FlexAttention's bodies)."""
    d = os.path.join(out, "test_" + name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    vi = lambda n, a: helper.make_tensor_value_info(
        n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
    graph = helper.make_graph(list(extra_nodes) + [node], name, [vi(n, a) for n, a in inputs],
                              [helper.make_tensor_value_info("Y", helper.np_dtype_to_tensor_dtype(
                                  inputs[0][1].dtype), None)], initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26),
                                                    helper.make_opsetid("ai.onnx.preview", 1)])
    model.ir_version = 10
    oracle = model
    if oracle_node is not None:
        oracle = onnx.ModelProto()
        oracle.CopyFrom(model)
        oracle.graph.node[len(oracle.graph.node) - 1].CopyFrom(oracle_node)
    feeds = {n: a for n, a in inputs if n in ("Q", "K", "V")}
    y = ReferenceEvaluator(oracle).run(None, feeds)[0]
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (n, a) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "Y").SerializeToString())


def qkv(rng, b, hq, hkv, l, s, e, ev, dt=np.float32):
    return [("Q", rng.standard_normal((b, hq, l, e)).astype(dt)),
            ("K", rng.standard_normal((b, hkv, s, e)).astype(dt)),
            ("V", rng.standard_normal((b, hkv, s, ev)).astype(dt))]


def flex(**kw):
    return helper.make_node("FlexAttention", ["Q", "K", "V"], ["Y"], domain="ai.onnx.preview",
                            name="flex", **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    rng = np.random.default_rng(7)

    # prob_mod weighting each key by a model input (a capture of the body)
    w = rng.uniform(0, 2, (1, 1, 1, 5)).astype(np.float32)
    ins = qkv(rng, 2, 2, 2, 3, 5, 4, 4) + [("w", w)]
    mul = [helper.make_node("Mul", ["s", "w"], ["o"])]
    write_case(args.out, "prob_mod_captures_input", flex(prob_mod=body("pm", mul, F)), ins,
               oracle_node=flex(prob_mod=body("pm", mul, F,
                                              inits=[numpy_helper.from_array(w, "w")])))

    # grouped-query heads (4 query heads on 2 key/value heads) under a causal
    # score_mod whose mask is an initializer of the outer graph
    mask = np.tril(np.ones((4, 6), bool), 2)
    inits = [numpy_helper.from_array(mask, "mask"),
             numpy_helper.from_array(np.array(-np.inf, np.float32), "ninf")]
    where = [helper.make_node("Where", ["mask", "s", "ninf"], ["o"])]
    write_case(args.out, "gqa_masked_score_mod", flex(score_mod=body("sm", where, F)),
               qkv(rng, 1, 4, 2, 4, 6, 8, 3), inits=inits,
               oracle_node=flex(score_mod=body("sm", where, F, inits=inits)))

    # softmax in double for float inputs: the bodies see doubles
    sm = body("sm", [helper.make_node("Mul", ["s", "two"], ["o"])], D,
              inits=[numpy_helper.from_array(np.array(2.0, np.float64), "two")])
    write_case(args.out, "softmax_precision_double",
               flex(score_mod=sm, softmax_precision=int(D)), qkv(rng, 1, 2, 2, 3, 4, 4, 2))

    # a scale and a soft cap (tanh: not a shift), then a prob_mod
    sm = body("sm", [helper.make_node("Tanh", ["s"], ["t"]),
                     helper.make_node("Mul", ["t", "cap"], ["o"])], F,
              inits=[numpy_helper.from_array(np.array(3.0, np.float32), "cap")])
    pm = body("pm", [helper.make_node("Sqrt", ["s"], ["o"])], F)
    write_case(args.out, "scale_soft_cap_prob_mod", flex(scale=0.9, score_mod=sm, prob_mod=pm),
               qkv(rng, 2, 1, 1, 4, 4, 4, 5))

    # a score_mod giving float16: cast back to the softmax type (float32)
    half = helper.make_graph([helper.make_node("Cast", ["s"], ["h"], to=TensorProto.FLOAT16),
                              helper.make_node("Add", ["h", "h"], ["o"])], "sm",
                             [helper.make_tensor_value_info("s", F, None)],
                             [helper.make_tensor_value_info("o", TensorProto.FLOAT16, None)])
    write_case(args.out, "score_mod_gives_float16", flex(score_mod=half),
               qkv(rng, 1, 2, 2, 3, 4, 4, 4))

    # double inputs with a modifier
    pm = body("pm", [helper.make_node("Neg", ["s"], ["o"])], D)
    write_case(args.out, "double_prob_mod", flex(prob_mod=pm),
               qkv(rng, 1, 3, 1, 2, 3, 4, 4, np.float64))


if __name__ == "__main__":
    main()
