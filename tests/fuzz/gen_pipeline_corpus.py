#!/usr/bin/env python3
"""Writes the seed recipes of tests/fuzz/fuzz_pipeline.c into
tests/fuzz/corpus/pipeline/ (the byte layout is described at the top of
that file).  Op and attribute indices are read from src/ops/ops.def and the
generator's ATTRS table (recipe_model.c), so the seeds follow both.  The
same seeds serve the differential harness (tests/fuzz/corpus/differential/).

Patterns (recipe_patterns.c: the quantization and recurrent ops as whole
subgraphs) are written as their op byte, a mood byte and the choice bytes
they read, in the order they read them; a pattern ends its recipe, as the
bytes after it would be read by the pattern once it changes."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OPS = ["Constant"] + re.findall(r'^OP\(\w+, "(\w+)"', open(os.path.join(ROOT, "src/ops/ops.def")).read(), re.M)
GENERATOR = open(os.path.join(ROOT, "tests/fuzz/recipe_model.c")).read()
PATTERN_FIRST = int(re.search(r"#define RECIPE_PATTERN_FIRST (\d+)", open(os.path.join(ROOT, "tests/fuzz/recipe_gen.h")).read()).group(1))
PATTERNS = ["qdq", "dynamic_quant", "matmul_integer", "qlinear_matmul", "conv_integer",
            "qlinear_conv", "qdq_conv", "qdq_matmul", "qdq_maxpool", "recurrent"]
ATTRS = re.findall(r'\{"(\w+)", (AK_\w+),', GENERATOR)
DIMS = {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 8: 5, 16: 7}
DTYPES = {"float": 0, "int64": 3, "int32": 4, "bool": 5, "float16": 6, "int8": 7, "uint8": 8,
          "double": 9, "bfloat16": 10}
FLOATS = [0.0, 0.5, 1.0, 2.0, -1.0, 1e-5, 3.0, 0.1, -0.5, 1e30, 6.0, 1.5]
OPSETS = {7: 0, 9: 1, 11: 2, 13: 3, 17: 4, 18: 5}
TARGETS = {"generic": 0, "avx2": 1, "avx512": 2}


class Recipe:
    def __init__(self, dims, opset=13, target="avx2", inputs=(("float", 0),), hostile=None):
        flags = OPSETS[opset] | TARGETS[target] << 3
        if hostile is not None:
            flags |= 1 << 5 | hostile << 6
        self.b = [flags, len(dims)] + [DIMS[d] for d in dims]
        self.rank = len(dims)
        self.b.append(len(inputs) - 1)
        for dt, variant in inputs:
            self.b += [DTYPES[dt], variant]
        self.n_values = len(inputs)

    def v(self, k):
        """An earlier value by index (inputs first, then constants and outputs in order)."""
        return ("v", k)

    def const(self, kind, *extra):
        return ("c", kind, extra)

    def node(self, op, ins, outs=1, **attrs):
        self.b += [OPS.index(op), len(ins), outs]
        for i in ins:
            if i is None:
                self.b.append(255)
            elif i[0] == "v":
                self.b.append(self.n_values - 1 - i[1])
            else:
                self.b += [200 + i[1]] + list(i[2])
                self.n_values += 1
        first_out = self.n_values
        self.n_values += outs
        self.b.append(len(attrs))
        for name, val in attrs.items():
            idx = [a[0] for a in ATTRS].index(name)
            kind = ATTRS[idx][1]
            self.b.append(idx)
            if kind == "AK_INT":
                self.b.append(val + 4)
            elif kind in ("AK_BOOL",):
                self.b.append(val)
            elif kind == "AK_FLOAT":
                self.b.append(FLOATS.index(val))
            elif kind == "AK_INTS":
                self.b += [len(val)] + [x + 4 for x in val]
            elif kind == "AK_PERM":
                self.b += val  # shuffle bytes
            elif kind == "AK_STRING":
                self.b.append(val)  # index into the attribute's choices
            elif kind == "AK_DTYPE":
                self.b.append(DTYPES[val])
            else:
                raise ValueError(kind)
        return ("v", first_out)

    def pattern(self, kind, choices, flaw=None):
        """A pattern of recipe_patterns.c as the recipe's last node; returns
        the recipe's bytes (choices the pattern reads past them are 0)."""
        mood = [0] if flaw is None else [7, flaw]
        self.b += [PATTERN_FIRST + PATTERNS.index(kind)] + mood + list(choices)
        return bytes(self.b)

    def bytes(self, two_outputs=False):
        return bytes(self.b + [255, 1 if two_outputs else 0])


def ints(vals):
    """A 1-D int64 constant (kind 3)."""
    return ("c", 3, tuple([len(vals)] + [x + 4 for x in vals]))


def seeds():
    out = {}
    r = Recipe([1, 3, 8, 8], opset=13)
    w = ("c", 0, (5, 3, 2, 2))  # float conv weight [4,3,3,3]
    c = r.node("Conv", [r.v(0), w], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    c = r.node("Relu", [c])
    c = r.node("MaxPool", [c], kernel_shape=[2, 2], strides=[2, 2])
    r.node("GlobalAveragePool", [c])
    out["conv_relu_pool"] = r.bytes()

    r = Recipe([2, 4, 8], opset=13, inputs=(("float", 0), ("float", 0)))
    a = r.node("MatMul", [r.v(0), ("c", 0, (4, 2, 5, 5))])  # float [8,8]
    a = r.node("Add", [a, r.v(1)])
    a = r.node("Softmax", [a], axis=-1)
    r.node("LayerNormalization", [a, ("c", 0, (4, 1, 5)), ("c", 0, (4, 1, 5))], axis=-1)
    out["matmul_softmax_norm"] = r.bytes()

    r = Recipe([2, 3, 4, 5], opset=13)
    a = r.node("Transpose", [r.v(0)], perm=[1, 0, 2])
    a = r.node("Reshape", [a, ints([6, -1])])
    a = r.node("ReduceSum", [a, ints([1])], keepdims=0)
    r.node("Sigmoid", [a])
    out["transpose_reshape_reduce"] = r.bytes()

    r = Recipe([4, 8], opset=13, inputs=(("float", 0), ("float", 1)))
    a = r.node("Mul", [r.v(0), r.v(1)])
    b = r.node("Sub", [a, ("c", 2, (0,))])
    c = r.node("Div", [b, ("c", 0, (1, 1))])
    d = r.node("Max", [c, r.v(0), b])
    e = r.node("Where", [("c", 16, (0,)), d, a])
    r.node("Clip", [e, ("c", 2, (2,)), ("c", 2, (2,))])
    out["elementwise_zoo"] = r.bytes(two_outputs=True)

    r = Recipe([1, 4, 8, 8], opset=18)
    a = r.node("Pad", [r.v(0), ints([0, 0, 1, 1, 0, 0, 1, 1])], mode=1)
    a = r.node("Slice", [a, ints([1, 1]), ints([9, 9]), ints([2, 3])])
    a = r.node("Concat", [a, r.v(0)], axis=1)
    r.node("Split", [a, ints([4, 4])], outs=2, axis=1)
    out["pad_slice_concat_split"] = r.bytes(two_outputs=True)

    r = Recipe([3, 4], opset=13, inputs=(("int64", 0), ("float", 0)))
    a = r.node("Cast", [r.v(0)], to="float")
    a = r.node("Gather", [r.v(1), ("c", 1, (5,))], axis=0)
    b = r.node("ArgMax", [r.v(1)], axis=1, keepdims=1)
    r.node("CumSum", [r.v(1), ("c", 1, (4,))])
    out["cast_gather_argmax_cumsum"] = r.bytes(two_outputs=True)

    r = Recipe([1, 2, 4, 4], opset=13)
    a = r.node("Resize", [r.v(0), None, ("c", 4, (4, 1, 3))], mode=4)
    a = r.node("DepthToSpace", [r.v(0)], blocksize=1)
    a = r.node("AveragePool", [r.v(0)], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)
    r.node("BatchNormalization", [a] + [("c", 6, (4, 1, 1))] * 4)
    out["resize_pool_batchnorm"] = r.bytes()

    r = Recipe([2, 3], opset=13)
    a = r.node("Gemm", [r.v(0), ("c", 0, (4, 2, 2, 2)), ("c", 2, (2,))], transB=1, alpha=0.5)
    a = r.node("Expand", [a, ints([2, 2, 3])])
    a = r.node("Tile", [a, ints([1, 2, 1])])
    r.node("Einsum", [a], equation=2)
    out["gemm_expand_tile_einsum"] = r.bytes()

    for k in range(4):
        r = Recipe([2, 3], opset=13, hostile=k, inputs=(("float", 0), ("float", 0)))
        a = r.node("Add", [r.v(0), r.v(1)])
        a = r.node("Relu", [a])
        r.node("Mul", [a, r.v(1)])
        out["hostile_names_%d" % k] = r.bytes(two_outputs=True)

    r = Recipe([1, 2, 5], opset=7, target="generic")
    a = r.node("Clip", [r.v(0)], min=-1.0, max=1.0)
    a = r.node("Squeeze", [a], axes=[0])
    r.node("Unsqueeze", [a], axes=[0])
    out["opset7_attrs"] = r.bytes()

    r = Recipe([4], opset=13, target="avx512")
    a = r.node("Shape", [r.v(0)])
    a = r.node("ConstantOfShape", [a])
    r.node("Range", [("c", 2, (2,)), ("c", 2, (2,)), ("c", 2, (2,))])
    out["shape_constantofshape_range"] = r.bytes()
    out.update(pattern_seeds())
    return out


def pattern_seeds():
    """The quantization and recurrent patterns, valid, then a few flawed."""
    out = {}
    p = lambda dims, kind, choices, opset=13, flaw=None, target="avx2": \
        Recipe(dims, opset=opset, target=target).pattern(kind, choices, flaw)
    # per tensor, int8 with a zero point
    out["q_qdq_per_tensor"] = p([2, 3, 4], "qdq", [0, 1, 1, 3, 2, 1])
    # per axis (-3 of rank 4), uint8, four scales and zero points
    out["q_qdq_per_axis"] = p([1, 4, 3, 3], "qdq", [0, 0, 1, 1, 0, 3, 1, 4, 2, 6, 0, 7, 4, 1])
    out["q_dynamic_quant"] = p([3, 5], "dynamic_quant", [])
    # [2,3,4] x [4,5]: uint8 x int8, scalar a_zp, per-column b_zp
    out["q_matmul_integer"] = p([2], "matmul_integer", [1, 1, 2, 3, 4, 0, 3, 1, 1, 1, 2, 2, 0, 1, 2, 3, 4])
    # [2,4] x [4,3], per-column b scales
    out["q_qlinear_matmul"] = p([2], "qlinear_matmul", [0, 0, 1, 3, 2, 1, 2, 0, 0, 1, 1, 0, 3, 1, 5, 2, 1, 4, 2])
    # 3x2 kernel, stride 2 along W, asymmetric pads
    out["q_conv_integer"] = p([2], "conv_integer", [0, 2, 2, 3, 0, 1, 2, 0, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1,
                                                    0, 3, 1, 1, 1, 1, 1, 2], target="generic")
    # depthwise 3x3, per-channel weight scales, int32 bias
    out["q_qlinear_conv_depthwise"] = p([2], "qlinear_conv", [0, 3, 1, 1, 1, 0, 2, 0, 1, 1, 1, 2, 0, 1, 1, 1,
                                                              0, 0, 1, 2, 2, 1, 1, 1, 2, 3, 2, 4, 0, 5, 1,
                                                              0, 3, 1, 1], target="avx512")
    # fuse_qdq's exact form: per-channel int8 weights, bias scale xs*ws
    out["q_qdq_conv_exact"] = p([2], "qdq_conv", [6, 0, 1, 2, 2, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1,
                                                  0, 3, 1, 1, 3, 0, 4, 0, 1, 1, 0, 2, 1])
    # with a Relu before the output QuantizeLinear, uint8 weights, no bias
    out["q_qdq_conv_relu"] = p([2], "qdq_conv", [5, 0, 1, 2, 2, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1,
                                                 0, 3, 1, 0, 0, 3, 1, 0, 1, 2, 1])
    out["q_qdq_matmul_exact"] = p([2], "qdq_matmul", [6, 1, 0, 1, 3, 2, 1, 3, 0, 1, 3, 0, 4, 0, 5, 0, 1, 4, 0])
    out["q_qdq_maxpool"] = p([2], "qdq_maxpool", [6, 0, 1, 2, 2, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0,
                                                  0, 3, 1])
    # bidirectional LSTM with B, sequence_lens, initial_h, initial_c and P; Y, Y_h, Y_c
    out["r_lstm_bidirectional"] = p([2], "recurrent", [2, 2, 1, 2, 3, 2, 0x1f, 2, 0, 1, 6, 1, 1, 1, 1])
    # batch-first reverse GRU, linear_before_reset, Sigmoid/Relu, clip 2.5
    out["r_gru_layout_reverse"] = p([2], "recurrent", [1, 3, 2, 0, 1, 1, 0, 5, 2, 1, 1, 0, 0, 2, 0, 2, 1],
                                    opset=17)
    # RNN with sequence_lens and only Y_h, hidden_size left to W
    out["r_rnn_seq_lens_yh"] = p([2], "recurrent", [0, 3, 2, 1, 2, 0, 2, 3, 1, 0, 1, 0, 0, 1, 1],
                                 target="generic")
    # a Conv's output through QDQ (the pattern reads the latest value)
    r = Recipe([1, 3, 8, 8], opset=13)
    c = r.node("Conv", [r.v(0), ("c", 0, (5, 3, 2, 2))], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    r.node("Relu", [c])
    out["q_conv_relu_then_qdq"] = r.pattern("qdq", [2, 0, 1, 0, 3, 1, 1])
    # flawed: a NaN scale, weights of the wrong shape, a wrong hidden_size, a per-channel
    # length one too long, an axis past the rank
    out["bad_qdq_nan_scale"] = p([2, 3], "qdq", [0, 1, 1, 1, 1, 1], flaw=0)
    out["bad_matmul_integer_shape"] = p([2], "matmul_integer", [0, 1, 1, 1, 1], flaw=4)
    out["bad_lstm_hidden_size"] = p([2], "recurrent", [2, 1, 0, 1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1], flaw=6)
    out["bad_qlinear_conv_length"] = p([2], "qlinear_conv", [0, 1, 1, 1, 0, 0] + [0] * 12 + [1] * 5, flaw=2)
    out["bad_qdq_axis"] = p([2, 3], "qdq", [0, 1, 1], flaw=3)
    # the generator's own conversions (UBSan found both): a 1e30 scale, and int8 zero
    # points written as uint8
    out["bad_qdq_huge_scale"] = p([2, 3], "qdq", [0, 1, 1, 5, 1, 1], flaw=0)
    out["bad_qdq_zero_point_dtype"] = p([2, 3], "qdq", [0, 1, 1, 3, 1, 1], flaw=1)
    return out


def main():
    dest = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests/fuzz/corpus/pipeline")
    os.makedirs(dest, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(dest, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(seeds()), dest))


if __name__ == "__main__":
    main()
