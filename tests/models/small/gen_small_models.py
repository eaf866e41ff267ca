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
  resize_scales.onnx Resize (nearest) of X float32 [1, 1, 2, 3] by an input
                   scales float32 [4], then the sum of X added: the scales
                   set the output's shape, X is data.  unit/test_specialize:
                   runs bind the scales only, so new X values reuse the
                   specialisation and the Resize runs in generated code.
  half_conv.onnx   a float16 3x3 Conv (constant weights and bias), Relu, and a
                   MatMul by a constant: passes/widen_half.c computes both
                   products in float32 between Casts; unit/
                   test_alloc_fail_compile_half refuses each allocation of
                   its compile in turn.
  sin_int32.onnx   Sin of an int32 input, which Sin does not take: errors
                   name the node and the dtype, not a "dynamic shape".
  two_inputs.onnx  d = a - b, s = a + b over float32 [2, 3] (the order of the
                   inputs matters): unit/test_api_calls binds inputs by name.
  seq_block.onnx   a BERT-like encoder block over a symbolic length "seq": ids
                   int64 [1, seq] -> word + position embeddings (positions
                   sliced to the length through Shape), LayerNormalization, a
                   2-head attention whose head split/merge Reshapes take their
                   shapes from Shape(ids), an additive mask float32
                   [1, 1, 1, seq], a GELU (Erf) MLP, residuals; outputs the
                   hidden states [1, seq, 16], a pooled first row (Gather of
                   row 0) and the sum over the length.  unit/test_rt_dims
                   compiles it once for seq = 1..64 (run-time dims).
  seq_mean.onnx    ReduceMean over a symbolic length: refused as a run-time dim
                   (the mean divides by the length), naming the node.
  seq_twice.onnx   Concat of x [1, seq, 4] with itself along seq: a dim of
                   2 x seq, refused as a run-time dim.
  seq_posmean.onnx x [1, seq, 4] times the mean of the positions 0..seq-1 (a
                   constant arange sliced to the length through Shape): a value
                   computed from the length, so a run-time seq is refused.
  kv_cache.onnx    one decoding step of 2-head attention (width 8) with a
                   key/value cache: x [1, 1, 8], past_key/past_value
                   [1, 2, past, 4]; outputs y
                   [1, 1, 8] and present_key/present_value [1, 2, past + 1, 4]
                   (Concat along the run-time dim): dims that follow past at
                   a distance (unit/test_rt_dims).
  kv_cache_mask.onnx  kv_cache with an attention_mask [1, total] (1 keep, 0
                   drop, added to the scores as (mask - 1) * 1e4): its own
                   symbol, which is past + 1 (smelt_model_tie_dim).
  seq_shift.onnx   x [1, seq, 4] without its first row ([1, seq - 1, 4]): a
                   range must start where seq - 1 is at least 1.
  batch_seq.onnx   x [2, seq, 8] (a batch of 2 before the length: laid out
                   at the run's dims, not staged, where the accesses allow)
                   times a constant [8, 16], Relu, and x * 2: y [2, seq, 16],
                   z [2, seq, 8].
  seq_at.onnx      a sequence of float32 tensors in: its length, and Relu of
                   its last element (SequenceAt -1).  unit/test_sequence_values
                   feeds it well-formed and malformed sequences.

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


def resize_scales():
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["r"], mode="nearest", name="resize"),
             helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=1, name="x_sum"),
             helper.make_node("Add", ["r", "s"], ["y"], name="add")]
    g = helper.make_graph(nodes, "resize_scales",
                          [helper.make_tensor_value_info("x", f, [1, 1, 2, 3]),
                           helper.make_tensor_value_info("scales", f, [4])],
                          [helper.make_tensor_value_info("y", f, None)],
                          [numpy_helper.from_array(np.array([2, 3], np.int64), "axes")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def half_conv():
    h = TensorProto.FLOAT16
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array((rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float16), "w"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float16), "b"),
             numpy_helper.from_array((rng.standard_normal((6, 5)) * 0.3).astype(np.float16), "m")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "m"], ["y"], name="matmul")]
    g = helper.make_graph(nodes, "half_conv", [helper.make_tensor_value_info("x", h, [1, 3, 6, 6])],
                          [helper.make_tensor_value_info("y", h, [1, 4, 6, 5])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def sin_int32():
    g = helper.make_graph([helper.make_node("Sin", ["x"], ["y"], name="sin_of_int")], "sin_int32",
                          [helper.make_tensor_value_info("x", TensorProto.INT32, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def seq_block():
    rng = np.random.default_rng(11)
    vocab, max_pos, h, heads, ffn = 50, 64, 16, 2, 32
    d = h // heads
    inits = []

    def const(name, shape, scale=0.5):
        inits.append(numpy_helper.from_array(
            rng.uniform(-scale, scale, shape).astype(np.float32), name))
        return name

    def ints(name, values):
        inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    n = helper.make_node
    nodes = [
        n("Gather", [const("word", (vocab, h)), "ids"], ["we"]),
        n("Shape", ["ids"], ["ids_shape"]),
        n("Gather", ["ids_shape", ints("one", 1)], ["len"], axis=0),
        n("Unsqueeze", ["len", ints("ax0", [0])], ["len1"]),
        n("Slice", [ints("positions", [list(range(max_pos))]), ints("zero1", [0]), "len1",
                    ints("ax1", [1])], ["pos_ids"]),
        n("Gather", [const("pos", (max_pos, h)), "pos_ids"], ["pe"]),
        n("Add", ["we", "pe"], ["x"]),
        n("LayerNormalization", ["x", const("ln_s", (h,)), const("ln_b", (h,))], ["xn"],
          axis=-1, epsilon=1e-5),
        n("Concat", [ints("c1", [1]), "len1", ints("c_heads", [heads]), ints("c_d", [d])],
          ["split_shape"], axis=0),
        n("Concat", [ints("c1b", [1]), "len1", ints("c_h", [h])], ["merge_shape"], axis=0),
    ]
    for p in "qkv":
        nodes += [n("MatMul", ["xn", const("w" + p, (h, h))], [p + "0"]),
                  n("Add", [p + "0", const("b" + p, (h,))], [p + "1"]),
                  n("Reshape", [p + "1", "split_shape"], [p + "4"])]
    nodes += [
        n("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
        n("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        n("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
        n("MatMul", ["qh", "kt"], ["s0"]),
        n("Mul", ["s0", const("scale", ())], ["s1"]),
        n("Add", ["s1", "mask"], ["s2"]),
        n("Softmax", ["s2"], ["p"], axis=-1),
        n("MatMul", ["p", "vh"], ["ctx4"]),
        n("Transpose", ["ctx4"], ["ctx_t"], perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx_t", "merge_shape"], ["ctx"]),
        n("MatMul", ["ctx", const("wo", (h, h))], ["o0"]),
        n("Add", ["o0", const("bo", (h,))], ["o1"]),
        n("Add", ["x", "o1"], ["y"]),
        n("MatMul", ["y", const("w1", (h, ffn))], ["f0"]),
        n("Add", ["f0", const("b1", (ffn,))], ["f1"]),
        n("Div", ["f1", const("sqrt2", (), 0) ], ["f2"]),
        n("Erf", ["f2"], ["f3"]),
        n("Add", ["f3", const("one_f", (), 0)], ["f4"]),
        n("Mul", ["f1", "f4"], ["f5"]),
        n("Mul", ["f5", const("half", (), 0)], ["f6"]),
        n("MatMul", ["f6", const("w2", (ffn, h))], ["f7"]),
        n("Add", ["f7", const("b2", (h,))], ["f8"]),
        n("Add", ["y", "f8"], ["hidden"]),
        n("Gather", ["hidden", ints("row0", 0)], ["first"], axis=1),
        n("MatMul", ["first", const("wp", (h, h))], ["pool0"]),
        n("Tanh", ["pool0"], ["pooled"]),
        n("ReduceSum", ["hidden", ints("ax_seq", [1])], ["total"], keepdims=0),
    ]
    for name, value in (("sqrt2", 2 ** 0.5), ("one_f", 1.0), ("half", 0.5)):
        for t in inits:
            if t.name == name:
                t.CopyFrom(numpy_helper.from_array(np.array(value, dtype=np.float32), name))
    f = TensorProto.FLOAT
    g = helper.make_graph(
        nodes, "seq_block",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, "seq"]),
         helper.make_tensor_value_info("mask", f, [1, 1, 1, "seq"])],
        [helper.make_tensor_value_info("hidden", f, [1, "seq", h]),
         helper.make_tensor_value_info("pooled", f, [1, h]),
         helper.make_tensor_value_info("total", f, [1, h])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="gen_small_models.py")


def seq_mean():
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("ReduceMean", ["r", "axes"], ["y"], name="mean_over_seq", keepdims=0)],
        "seq_mean", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [axes])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)],
                             producer_name="gen_small_models.py")


def seq_twice():
    g = helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], ["y"], name="twice", axis=1)],
        "seq_twice", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "2seq", 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def seq_posmean():
    f = TensorProto.FLOAT
    arange = np.arange(64, dtype=np.float32).reshape(1, 64)
    inits = [numpy_helper.from_array(arange, "positions"),
             numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "ax0"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "zero"),
             numpy_helper.from_array(np.array([1], dtype=np.int64), "ax1")]
    n = helper.make_node
    g = helper.make_graph([
        n("Shape", ["x"], ["shape"]),
        n("Gather", ["shape", "one"], ["len"], axis=0),
        n("Unsqueeze", ["len", "ax0"], ["len1"]),
        n("Slice", ["positions", "zero", "len1", "ax1"], ["pos"]),
        n("ReduceMean", ["pos"], ["mean"], name="mean_position", keepdims=1),
        n("Mul", ["x", "mean"], ["y"], name="scale_by_mean"),
    ], "seq_posmean", [helper.make_tensor_value_info("x", f, [1, "seq", 4])],
        [helper.make_tensor_value_info("y", f, [1, "seq", 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def kv_cache(mask=False):
    rng = np.random.default_rng(11)
    f, heads, hd = TensorProto.FLOAT, 2, 4
    width = heads * hd
    inits = [numpy_helper.from_array(rng.uniform(-1, 1, (width, width)).astype(np.float32), "w" + p)
             for p in "qkv"]
    inits += [numpy_helper.from_array(np.array([1, 1, heads, hd], np.int64), "split_heads"),
              numpy_helper.from_array(np.array([1, 1, width], np.int64), "merge_heads"),
              numpy_helper.from_array(np.array(0.5, np.float32), "scale")]
    n = helper.make_node
    nodes = []
    for p in "qkv":
        nodes += [n("MatMul", ["x", "w" + p], [p + "_flat"], name=p + "_proj"),
                  n("Reshape", [p + "_flat", "split_heads"], [p + "_split"], name=p + "_split"),
                  n("Transpose", [p + "_split"], [p + "_heads"], name=p + "_heads", perm=[0, 2, 1, 3])]
    nodes += [
        n("Concat", ["past_key", "k_heads"], ["present_key"], name="append_key", axis=2),
        n("Concat", ["past_value", "v_heads"], ["present_value"], name="append_value", axis=2),
        n("Transpose", ["present_key"], ["keys_t"], name="keys_t", perm=[0, 1, 3, 2]),
        n("MatMul", ["q_heads", "keys_t"], ["scores_raw"], name="scores"),
        n("Mul", ["scores_raw", "scale"], ["scores_scaled"], name="scale_scores"),
    ]
    if mask:  # attention_mask [1, total] (1 keep, 0 drop): scores + (mask - 1) * 1e4
        inits += [numpy_helper.from_array(np.array(1.0, np.float32), "one"),
                  numpy_helper.from_array(np.array(1e4, np.float32), "big"),
                  numpy_helper.from_array(np.array([1, 1, 1, -1], np.int64), "mask_shape")]
        nodes += [n("Sub", ["attention_mask", "one"], ["mask_off"], name="mask_off"),
                  n("Mul", ["mask_off", "big"], ["mask_add"], name="mask_add"),
                  n("Reshape", ["mask_add", "mask_shape"], ["mask_4d"], name="mask_4d"),
                  n("Add", ["scores_scaled", "mask_4d"], ["scores_masked"], name="mask_scores")]
    nodes += [
        n("Softmax", ["scores_masked" if mask else "scores_scaled"], ["probs"], name="probs", axis=-1),
        n("MatMul", ["probs", "present_value"], ["ctx_heads"], name="context"),
        n("Transpose", ["ctx_heads"], ["ctx_split"], name="ctx_merge", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx_split", "merge_heads"], ["y"], name="y"),
    ]
    kv = lambda name, length: helper.make_tensor_value_info(name, f, [1, heads, length, hd])  # noqa: E731
    inputs = [helper.make_tensor_value_info("x", f, [1, 1, width]), kv("past_key", "past"),
              kv("past_value", "past")]
    if mask:
        inputs.append(helper.make_tensor_value_info("attention_mask", f, [1, "total"]))
    g = helper.make_graph(
        nodes, "kv_cache_mask" if mask else "kv_cache", inputs,
        [helper.make_tensor_value_info("y", f, [1, 1, width]), kv("present_key", "present"),
         kv("present_value", "present")], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="gen_small_models.py")


def seq_shift():
    g = helper.make_graph(
        [helper.make_node("Slice", ["x", "one", "big", "one"], ["y"], name="drop_first")],
        "seq_shift", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "shorter", 4])],
        [numpy_helper.from_array(np.array([1], np.int64), "one"),
         numpy_helper.from_array(np.array([1 << 40], np.int64), "big")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="gen_small_models.py")


def batch_seq():
    rng = np.random.default_rng(5)
    f = TensorProto.FLOAT
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"], name="project"),
         helper.make_node("Relu", ["xw"], ["y"], name="relu"),
         helper.make_node("Mul", ["x", "two"], ["z"], name="double")],
        "batch_seq", [helper.make_tensor_value_info("x", f, [2, "seq", 8])],
        [helper.make_tensor_value_info("y", f, [2, "seq", 16]),
         helper.make_tensor_value_info("z", f, [2, "seq", 8])],
        [numpy_helper.from_array(rng.uniform(-1, 1, (8, 16)).astype(np.float32), "w"),
         numpy_helper.from_array(np.array(2.0, np.float32), "two")])
def seq_at():
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    last = numpy_helper.from_array(np.array(-1, dtype=np.int64), "last")
    g = helper.make_graph([
        helper.make_node("SequenceLength", ["s"], ["n"], name="len"),
        helper.make_node("SequenceAt", ["s", "last"], ["t"], name="at"),
        helper.make_node("Relu", ["t"], ["y"], name="relu"),
    ], "seq_at", [helper.make_value_info("s", seq)],
        [helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [last])
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
    save(resize_scales(), out + "/resize_scales.onnx")
    save(half_conv(), out + "/half_conv.onnx")
    save(seq_block(), out + "/seq_block.onnx")
    save(seq_mean(), out + "/seq_mean.onnx")
    save(seq_twice(), out + "/seq_twice.onnx")
    save(seq_posmean(), out + "/seq_posmean.onnx")
    save(kv_cache(), out + "/kv_cache.onnx")
    save(kv_cache(mask=True), out + "/kv_cache_mask.onnx")
    save(seq_shift(), out + "/seq_shift.onnx")
    save(batch_seq(), out + "/batch_seq.onnx")
    save(seq_at(), out + "/seq_at.onnx")
    here = __file__.rsplit("/", 1)[0]
    save(gather_chain(here + "/../../fuzz/regressions/pipeline_models/"
                      "gather_elements_oom_simplify.onnx"), out + "/gather_chain.onnx")


if __name__ == "__main__":
    main()
