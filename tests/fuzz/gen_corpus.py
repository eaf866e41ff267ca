#!/usr/bin/python3
"""Write the seed corpus of the ONNX import fuzzer: small valid models.

    /usr/bin/python3 tests/fuzz/gen_corpus.py [--out tests/fuzz/corpus/onnx_import]

Each seed is a few hundred bytes to a few KB and touches a different part of
the importer: op families, attribute forms of old opsets, Constant nodes,
model-local functions, symbolic dims, integer/bool/half dtypes.  libFuzzer
mutates them; small seeds keep its executions fast.  Deterministic output.
"""

import argparse
import os
import sys

import numpy as np
from onnx import AttributeProto, TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def vi(name, shape, dt=F):
    return helper.make_tensor_value_info(name, dt, shape)


def arr(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def rnd(name, shape, seed):
    r = np.random.RandomState(seed)
    return arr(name, r.uniform(-1, 1, shape).astype(np.float32))


def model(nodes, inputs, outputs, inits=(), opset=13, functions=(), extra_opsets=()):
    g = helper.make_graph(nodes, "seed", inputs, outputs, initializer=list(inits))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(g, opset_imports=ops, functions=list(functions))
    m.ir_version = 8
    return m


N = helper.make_node
SEEDS = {}


def seed(fn):
    SEEDS[fn.__name__] = fn
    return fn


@seed
def conv_net():
    nodes = [N("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
             N("Relu", ["c"], ["r"]),
             N("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             N("GlobalAveragePool", ["p"], ["g"]),
             N("Flatten", ["g"], ["f"], axis=1),
             N("Gemm", ["f", "Wf", "Bf"], ["y"], transB=1)]
    inits = [rnd("W", [3, 2, 3, 3], 1), rnd("B", [3], 2), rnd("Wf", [4, 3], 3), rnd("Bf", [4], 4)]
    return model(nodes, [vi("x", [1, 2, 4, 4])], [vi("y", [1, 4])], inits)


@seed
def conv_variants():
    nodes = [N("Conv", ["x", "Wd"], ["d"], group=2, auto_pad="SAME_UPPER", dilations=[1, 2]),
             N("ConvTranspose", ["d", "Wt"], ["t"], strides=[2, 2]),
             N("AveragePool", ["t"], ["y"], kernel_shape=[3, 3], ceil_mode=1,
               count_include_pad=1, pads=[1, 1, 1, 1])]
    inits = [rnd("Wd", [2, 1, 3, 3], 5), rnd("Wt", [2, 1, 2, 2], 6)]
    return model(nodes, [vi("x", [1, 2, 5, 5])], [vi("y", None)], inits)


@seed
def norm_net():
    nodes = [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"], epsilon=1e-5),
             N("InstanceNormalization", ["bn", "s", "b"], ["inorm"]),
             N("LayerNormalization", ["inorm", "ls", "lb"], ["ln"], axis=-1),
             N("Softmax", ["ln"], ["sm"], axis=1),
             N("LogSoftmax", ["sm"], ["y"], axis=-1)]
    inits = [rnd("s", [2], 7), rnd("b", [2], 8), rnd("m", [2], 9),
             arr("v", np.ones(2, np.float32)), rnd("ls", [3], 10), rnd("lb", [3], 11)]
    return model(nodes, [vi("x", [1, 2, 3])], [vi("y", [1, 2, 3])], inits, opset=17)


@seed
def matmul_attention():
    nodes = [N("MatMul", ["x", "Wq"], ["q"]),
             N("Transpose", ["q"], ["qt"], perm=[0, 2, 1]),
             N("MatMul", ["q", "qt"], ["s"]),
             N("Div", ["s", "scale"], ["sd"]),
             N("Softmax", ["sd"], ["p"], axis=-1),
             N("MatMul", ["p", "q"], ["o"]),
             N("Add", ["o", "x"], ["y"])]
    inits = [rnd("Wq", [4, 4], 12), arr("scale", np.array(2.0, np.float32))]
    return model(nodes, [vi("x", ["batch", 3, 4])], [vi("y", ["batch", 3, 4])], inits)


@seed
def shape_ops():
    nodes = [N("Shape", ["x"], ["sh"]),
             N("Gather", ["sh", "i0"], ["d0"], axis=0),
             N("Unsqueeze", ["d0", "ax0"], ["d0u"]),
             N("Concat", ["d0u", "m1"], ["newshape"], axis=0),
             N("Reshape", ["x", "newshape"], ["r"]),
             N("Slice", ["r", "st", "en", "axs", "stp"], ["sl"]),
             N("Squeeze", ["sl", "ax0"], ["sq"]),
             N("Expand", ["sq", "eshape"], ["ex"]),
             N("Tile", ["ex", "reps"], ["y"])]
    inits = [arr("i0", np.array(0, np.int64)), arr("ax0", np.array([0], np.int64)),
             arr("m1", np.array([-1], np.int64)), arr("st", np.array([0, -1], np.int64)),
             arr("en", np.array([1, -100], np.int64)), arr("axs", np.array([0, 1], np.int64)),
             arr("stp", np.array([1, -2], np.int64)), arr("eshape", np.array([2, 1], np.int64)),
             arr("reps", np.array([1, 2], np.int64))]
    return model(nodes, [vi("x", [1, 2, 3])], [vi("y", None)], inits)


@seed
def elementwise_zoo():
    nodes = [N("Sigmoid", ["x"], ["a"]), N("Tanh", ["a"], ["b"]), N("Erf", ["b"], ["c"]),
             N("Clip", ["c", "lo", "hi"], ["d"]), N("LeakyRelu", ["d"], ["e"], alpha=0.2),
             N("HardSwish", ["e"], ["f"]), N("Greater", ["f", "lo"], ["g"]),
             N("Where", ["g", "f", "x"], ["h"]), N("Pow", ["h", "two"], ["i"]),
             N("Sqrt", ["i"], ["j"]), N("Max", ["j", "x", "lo"], ["k"]),
             N("Cast", ["k"], ["ki"], to=TensorProto.INT32),
             N("Cast", ["ki"], ["y"], to=TensorProto.FLOAT)]
    inits = [arr("lo", np.array(-0.5, np.float32)), arr("hi", np.array(0.5, np.float32)),
             arr("two", np.array(2.0, np.float32))]
    return model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])], inits)


@seed
def old_opset_attrs():
    # attribute forms that newer opsets moved to inputs
    nodes = [N("Clip", ["x"], ["c"], min=-1.0, max=1.0),
             N("Pad", ["c"], ["p"], pads=[0, 1, 0, 1], mode="constant", value=0.5),
             N("ReduceMean", ["p"], ["rm"], axes=[1], keepdims=1),
             N("Split", ["p"], ["s0", "s1"], axis=1, split=[2, 2]),
             N("Squeeze", ["rm"], ["sq"], axes=[1]),
             N("Unsqueeze", ["sq"], ["un"], axes=[0]),
             N("Upsample", ["s0"], ["up"], scales=[1.0, 2.0], mode="nearest"),
             N("Relu", ["up"], ["y"])]
    return model(nodes, [vi("x", [2, 2])], [vi("y", None), vi("un", None), vi("s1", None)],
                 opset=7)


@seed
def reduce_opset18():
    nodes = [N("ReduceSum", ["x", "axes"], ["s"], keepdims=0),
             N("ReduceMax", ["x", "axes"], ["m"]),
             N("ReduceLogSumExp", ["x"], ["l"]),
             N("ArgMax", ["x"], ["am"], axis=1, keepdims=0),
             N("TopK", ["x", "k"], ["tv", "ti"], axis=-1),
             N("CumSum", ["x", "cax"], ["y"])]
    inits = [arr("axes", np.array([1], np.int64)), arr("k", np.array([2], np.int64)),
             arr("cax", np.array(1, np.int64))]
    return model(nodes, [vi("x", [2, 3])],
                 [vi("y", None), vi("s", None), vi("m", None), vi("l", None),
                  vi("am", None, I64), vi("tv", None), vi("ti", None, I64)], inits, opset=18)


@seed
def constants():
    nodes = [N("Constant", [], ["c1"], value=arr("v", np.array([[1.0, 2.0]], np.float32))),
             N("Constant", [], ["c2"], value_floats=[0.5, -0.5]),
             N("Constant", [], ["c3"], value_ints=[2, 1]),
             N("Constant", [], ["c4"], value_float=3.0),
             N("Add", ["x", "c1"], ["a"]), N("Mul", ["a", "c2"], ["b"]),
             N("Reshape", ["b", "c3"], ["r"]), N("Sub", ["r", "c4"], ["y"])]
    return model(nodes, [vi("x", [1, 2])], [vi("y", [2, 1])])


@seed
def local_function():
    # LeakyRelu's alpha refers to the caller's "slope" (absent on the 2nd call)
    alpha = AttributeProto()
    alpha.name, alpha.ref_attr_name, alpha.type = "alpha", "slope", AttributeProto.FLOAT
    body = [N("Mul", ["a", "a"], ["sq"]), N("LeakyRelu", ["sq"], ["b"]),
            N("Constant", [], ["k"], value_float=1.0)]
    body[1].attribute.append(alpha)
    f = helper.make_function("local", "SqLeaky", ["a"], ["b"], body,
                             [helper.make_opsetid("", 13)], attributes=["slope"])
    nodes = [N("SqLeaky", ["x"], ["h"], domain="local", slope=0.3),
             N("SqLeaky", ["h"], ["y"], domain="local")]
    return model(nodes, [vi("x", [2])], [vi("y", [2])], functions=[f],
                 extra_opsets=[("local", 1)])


@seed
def data_ops():
    nodes = [N("GatherElements", ["x", "gi"], ["ge"], axis=1),
             N("ScatterND", ["x", "si", "su"], ["sc"]),
             N("Trilu", ["sc"], ["tr"], upper=0),
             N("Einsum", ["tr", "ge"], ["es"], equation="ij,kj->ik"),
             N("DepthToSpace", ["x4"], ["ds"], blocksize=2, mode="CRD"),
             N("SpaceToDepth", ["ds"], ["sd"], blocksize=2),
             N("Pad", ["x", "pads"], ["pr"], mode="reflect"),
             N("NonZero", ["x"], ["nz"]),
             N("OneHot", ["oi", "depth", "ov"], ["oh"], axis=-1),
             N("Range", ["r0", "r1", "r2"], ["rg"]),
             N("ConstantOfShape", ["csh"], ["cs"], value=arr("cv", np.array([7], np.int64)))]
    inits = [arr("gi", np.array([[0, 1, 1], [2, 0, 0]], np.int64)),
             arr("si", np.array([[1, 0]], np.int64)), arr("su", np.array([9.0], np.float32)),
             arr("pads", np.array([0, 1, 0, 1], np.int64)),
             arr("oi", np.array([0, 2], np.int64)), arr("depth", np.array(3, np.int64)),
             arr("ov", np.array([0.0, 1.0], np.float32)),
             arr("r0", np.array(0, np.int64)), arr("r1", np.array(5, np.int64)),
             arr("r2", np.array(2, np.int64)), arr("csh", np.array([2, 2], np.int64))]
    outs = [vi("es", None), vi("sd", None), vi("pr", None), vi("nz", None, I64),
            vi("oh", None), vi("rg", None, I64), vi("cs", None, I64)]
    return model(nodes, [vi("x", [2, 3]), vi("x4", [1, 4, 1, 2])], outs, inits)


@seed
def resize_ops():
    nodes = [N("Resize", ["x", "", "scales"], ["a"], mode="nearest"),
             N("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
               coordinate_transformation_mode="align_corners")]
    inits = [arr("scales", np.array([1, 1, 2, 2], np.float32)),
             arr("sizes", np.array([1, 1, 3, 5], np.int64))]
    return model(nodes, [vi("x", [1, 1, 2, 2])], [vi("a", None), vi("y", None)], inits)


@seed
def dtypes():
    nodes = [N("Cast", ["h"], ["hf"], to=F), N("Add", ["hf", "x"], ["a"]),
             N("Cast", ["a"], ["bf"], to=TensorProto.BFLOAT16),
             N("Cast", ["bf"], ["b"], to=F),
             N("Equal", ["i8", "i8"], ["eq"]), N("Not", ["eq"], ["ne"]),
             N("And", ["eq", "ne"], ["y"]), N("Identity", ["b"], ["z"])]
    inits = [arr("h", np.array([1.5, -2.0], np.float16)),
             arr("i8", np.array([1, -1], np.int8))]
    return model(nodes, [vi("x", [2])], [vi("y", [2], TensorProto.BOOL), vi("z", [2])], inits)


@seed
def unsorted_and_shared():
    # nodes out of order; an initializer that is also a graph input (a default)
    nodes = [N("Add", ["t", "w"], ["y"]), N("Relu", ["x"], ["t"])]
    inits = [rnd("w", [3], 13)]
    return model(nodes, [vi("x", [3]), vi("w", [3])], [vi("y", [3])], inits)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "corpus", "onnx_import"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, fn in SEEDS.items():
        data = fn().SerializeToString()
        with open(os.path.join(args.out, f"seed_{name}.onnx"), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
