#!/usr/bin/env python3
"""Writes the seed recipes of tests/fuzz/fuzz_pipeline.c into
tests/fuzz/corpus/pipeline/ (the byte layout is described at the top of
that file).  Op and attribute indices are read from src/ops/ops.def and the
harness's ATTRS table, so the seeds follow both."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OPS = ["Constant"] + re.findall(r'^OP\(\w+, "(\w+)"', open(os.path.join(ROOT, "src/ops/ops.def")).read(), re.M)
HARNESS = open(os.path.join(ROOT, "tests/fuzz/fuzz_pipeline.c")).read()
ATTRS = re.findall(r'\{"(\w+)", (AK_\w+),', HARNESS)
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
