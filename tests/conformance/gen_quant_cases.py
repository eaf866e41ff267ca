#!/usr/bin/env python3
"""Node tests for the quantization ops (issue #10) that the ONNX node tests
leave out, in the ONNX backend-test layout (<case>/model.onnx,
<case>/test_data_set_0/*.pb): rounding ties and saturation of every integer
type, float16 scales, int32 inputs, output_dtype and precision, blocks with
a remainder, per-channel convolutions with strides, padding, dilations and
groups, per-column matrix products, constant weights.

Expected outputs come from onnx's reference implementation
(onnx.reference.ReferenceEvaluator, numpy), except where it departs from the
spec: its numpy broadcasting does not implement MatMulInteger's per-row zero
point (a 1-D a_zero_point of M values), and its cast of rint(x / scale) to
int32 wraps values beyond int32 instead of saturating them; those expected
values are written out in numpy below.  Run by ctest (conformance/quant_cases_*) with the pyenv python3
(onnx 1.23.2 from scripts/setup.sh).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

RNG = np.random.default_rng(20260510)


def write_case(out, name, opset, node, inputs, consts=(), expected=None):
    """inputs: list of (name, array); those named in consts become
    initializers.  Outputs come from the reference evaluator unless given."""
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    vi = lambda n, a: helper.make_tensor_value_info(
        n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
    feeds = [(n, a) for n, a in inputs if n not in consts]
    inits = [numpy_helper.from_array(a, n) for n, a in inputs if n in consts]
    outs = [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in node.output]
    graph = helper.make_graph([node], name, [vi(n, a) for n, a in feeds], outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    if expected is None:
        expected = ReferenceEvaluator(model).run(None, dict(feeds))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (n, a) in enumerate(feeds):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for i, (n, a) in enumerate(zip(node.output, expected)):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a), n).SerializeToString())


def ints(dtype, shape, lo=None, hi=None):
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return RNG.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def floats(shape, scale=1.0, dtype=np.float32):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


TIES = np.array([-1e10, -300.5, -130.5, -2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 3.5, 126.5,
                 127.5, 128.5, 254.5, 255.5, 32767.5, 65535.5, 1e10], np.float32)


def quantize_cases(out):
    for dt in (np.uint8, np.int8, np.uint16, np.int16):
        name = "quant_quantize_ties_saturate_%s" % np.dtype(dt).name
        # in float64: the reference's cast to int32 wraps +-1e10 instead of saturating
        want = np.clip(np.rint(TIES.astype(np.float64)) + 3, np.iinfo(dt).min, np.iinfo(dt).max)
        write_case(out, name, 21, node("QuantizeLinear", ["x", "s", "z"]),
                   [("x", TIES), ("s", np.array(1.0, np.float32)), ("z", np.array(3, dt))],
                   expected=[want.astype(dt)])
    x = floats((2, 3, 4), 20.0, np.float16)
    write_case(out, "quant_quantize_axis_f16_scale", 21,
               node("QuantizeLinear", ["x", "s", "z"], axis=1),
               [("x", x), ("s", np.array([0.25, 0.1, 0.3], np.float16)),
                ("z", np.array([-3, 0, 5], np.int8))])
    write_case(out, "quant_quantize_int32_x", 21, node("QuantizeLinear", ["x", "s", "z"]),
               [("x", ints(np.int32, (7,), -100000, 100000)), ("s", np.array(3.3, np.float32)),
                ("z", np.array(-7, np.int16))])
    write_case(out, "quant_quantize_output_dtype_int8", 21,
               node("QuantizeLinear", ["x", "s"], output_dtype=TensorProto.INT8),
               [("x", floats((3, 5), 40.0)), ("s", np.array(0.5, np.float32))])
    write_case(out, "quant_quantize_precision_f16", 23,
               node("QuantizeLinear", ["x", "s", "z"], precision=TensorProto.FLOAT16),
               [("x", floats((4, 6), 30.0)), ("s", np.array(0.37, np.float32)),
                ("z", np.array(128, np.uint8))])
    write_case(out, "quant_quantize_blocked_remainder", 21,
               node("QuantizeLinear", ["x", "s", "z"], axis=0, block_size=2),
               [("x", floats((5, 4), 10.0)), ("s", floats((3, 4), 0.05) ** 2 + 0.01),
                ("z", ints(np.uint8, (3, 4)))])
    write_case(out, "quant_quantize_axis_const", 21,
               node("QuantizeLinear", ["x", "s", "z"], axis=-1),
               [("x", floats((3, 4), 5.0)), ("s", np.array([0.1, 0.2, 0.05, 0.3], np.float32)),
                ("z", np.array([0, -10, 10, 127], np.int8))], consts=("s", "z"))


def dequantize_cases(out):
    write_case(out, "quant_dequantize_int32", 21, node("DequantizeLinear", ["x", "s", "z"]),
               [("x", ints(np.int32, (9,), -(1 << 23), 1 << 23)),
                ("s", np.array(0.0123, np.float32)), ("z", np.array(-1000, np.int32))])
    write_case(out, "quant_dequantize_axis_f16", 21,
               node("DequantizeLinear", ["x", "s", "z"], axis=0),
               [("x", ints(np.uint8, (3, 5))), ("s", np.array([0.01, 0.5, 3.0], np.float16)),
                ("z", np.array([0, 128, 255], np.uint8))])
    write_case(out, "quant_dequantize_output_dtype_f16", 23,
               node("DequantizeLinear", ["x", "s"], output_dtype=TensorProto.FLOAT16),
               [("x", ints(np.int16, (4, 3))), ("s", np.array(0.0007, np.float32))])
    write_case(out, "quant_dequantize_blocked_remainder", 21,
               node("DequantizeLinear", ["x", "s", "z"], axis=1, block_size=3),
               [("x", ints(np.int8, (2, 7))), ("s", floats((2, 3), 0.1) ** 2 + 0.01),
                ("z", ints(np.int8, (2, 3), -5, 5))])


def integer_product_cases(out):
    a = ints(np.uint8, (2, 3, 4))
    b = ints(np.int8, (4, 5))
    azp = ints(np.uint8, (2, 3, 1))
    bzp = ints(np.int8, (5,))
    write_case(out, "quant_matmulinteger_zero_points", 10,
               node("MatMulInteger", ["a", "b", "azp", "bzp"]),
               [("a", a), ("b", b), ("azp", azp), ("bzp", bzp)])
    # spec: a 1-D a_zero_point of a 2-D A holds one value per row
    a2, b2 = ints(np.int8, (3, 6)), ints(np.uint8, (6, 4))
    azp2, bzp2 = ints(np.int8, (3,)), ints(np.uint8, (4,))
    want = (a2.astype(np.int32) - azp2[:, None]) @ (b2.astype(np.int32) - bzp2)
    write_case(out, "quant_matmulinteger_per_row", 10,
               node("MatMulInteger", ["a", "b", "azp", "bzp"]),
               [("a", a2), ("b", b2), ("azp", azp2), ("bzp", bzp2)],
               expected=[want.astype(np.int32)])
    write_case(out, "quant_matmulinteger_const_b", 10, node("MatMulInteger", ["a", "b", "azp", "bzp"]),
               [("a", ints(np.uint8, (5, 16))), ("b", ints(np.int8, (16, 7))),
                ("azp", np.array(131, np.uint8)), ("bzp", ints(np.int8, (7,), -3, 3))],
               consts=("b", "bzp"))
    write_case(out, "quant_qlinearmatmul_per_column", 21,
               node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"]),
               [("a", ints(np.int8, (2, 3, 8))), ("as", np.array(0.02, np.float32)),
                ("az", np.array(3, np.int8)), ("b", ints(np.int8, (8, 5))),
                ("bs", np.array([0.01, 0.02, 0.005, 0.03, 0.015], np.float32)),
                ("bz", np.array([0, 1, -2, 0, 5], np.int8)), ("ys", np.array(0.05, np.float32)),
                ("yz", np.array(120, np.uint8))])


def conv_cases(out):
    x = ints(np.uint8, (2, 4, 7, 6))
    w = ints(np.int8, (6, 2, 3, 3), -20, 20)
    write_case(out, "quant_convinteger_per_channel_group", 10,
               node("ConvInteger", ["x", "w", "xz", "wz"], group=2, strides=[2, 1],
                    pads=[1, 0, 1, 2]),
               [("x", x), ("w", w), ("xz", np.array(100, np.uint8)), ("wz", ints(np.int8, (6,), -3, 3))])
    xq = ints(np.int8, (1, 3, 9, 8))
    wq = ints(np.int8, (4, 3, 3, 2), -30, 30)
    inputs = [("x", xq), ("xs", np.array(0.04, np.float32)), ("xz", np.array(-5, np.int8)),
              ("w", wq), ("ws", np.array([0.01, 0.003, 0.02, 0.008], np.float32)),
              ("wz", np.zeros(4, np.int8)), ("ys", np.array(0.11, np.float32)),
              ("yz", np.array(-10, np.int8)), ("b", ints(np.int32, (4,), -3000, 3000))]
    qconv = lambda **kw: node("QLinearConv", [n for n, _ in inputs], **kw)
    write_case(out, "quant_qlinearconv_per_channel_bias", 10,
               qconv(dilations=[2, 1], pads=[1, 1, 1, 1]), inputs)
    write_case(out, "quant_qlinearconv_const_weights", 10, qconv(strides=[2, 2]), inputs,
               consts=("w", "ws", "wz", "b", "xs", "xz", "ys", "yz"))
    write_case(out, "quant_qlinearconv_same_upper", 10,
               node("QLinearConv", [n for n, _ in inputs[:8]], auto_pad="SAME_UPPER"),
               inputs[:8])


def qconv_kernel_case(out, name, x, xz, w, wz, ws, yz, ys=0.07, xs=0.05, bias=True, **attrs):
    """A QLinearConv whose weights, scales, zero points and bias are
    initializers: compiled, it runs the int8 micro-kernels
    (codegen/uk/qgemm_u8s8.c), whose results must equal the reference's."""
    co = w.shape[0]
    inputs = [("x", x), ("xs", np.array(xs, np.float32)), ("xz", np.array(xz, x.dtype)),
              ("w", w), ("ws", np.asarray(ws, np.float32)), ("wz", np.asarray(wz, w.dtype)),
              ("ys", np.array(ys, np.float32)), ("yz", np.array(yz, np.asarray(yz).dtype))]
    if bias:
        inputs.append(("b", ints(np.int32, (co,), -20000, 20000)))
    write_case(out, name, 10, node("QLinearConv", [n for n, _ in inputs], **attrs), inputs,
               consts=tuple(n for n, _ in inputs if n != "x"))


def kernel_cases(out):
    """Shapes that do not fit the kernels' blocks (K not a multiple of 4,
    output channels not a multiple of 4 or 8, pixels not a multiple of 8,
    16 or 32), several tasks of rows and pixels, zero points at both ends of
    their ranges, groups, strides, dilations, padding; 7-bit weights
    (vpmaddubsw) and full 8-bit ones (vpmaddwd, where vpmaddubsw could
    saturate), s8 and u8 activations and outputs, u8 weights with zero
    points."""
    u8 = lambda v: np.array(v, np.uint8)
    i8 = lambda v: np.array(v, np.int8)
    qconv_kernel_case(out, "quant_kernel_k_tail_7bit", ints(np.uint8, (1, 5, 9, 11)), u8(0),
                      ints(np.int8, (13, 5, 3, 3), -64, 63), np.zeros(13, np.int8),
                      RNG.uniform(0.002, 0.02, 13), u8(255), pads=[1, 1, 1, 1])
    qconv_kernel_case(out, "quant_kernel_8bit_stride_dilation", ints(np.uint8, (1, 6, 12, 13)),
                      u8(255), ints(np.int8, (11, 6, 3, 2)), i8(0), 0.004, u8(0), ys=0.3,
                      strides=[2, 1], dilations=[2, 1], pads=[2, 0, 1, 3])
    qconv_kernel_case(out, "quant_kernel_s8_groups", ints(np.int8, (1, 6, 8, 7)), i8(-128),
                      ints(np.int8, (18, 3, 3, 3), -100, 100), np.zeros(18, np.int8),
                      RNG.uniform(0.001, 0.01, 18), i8(-128), group=2, strides=[2, 1],
                      pads=[0, 1, 1, 0])
    qconv_kernel_case(out, "quant_kernel_s8_zp_max", ints(np.int8, (1, 3, 5, 5)), i8(127),
                      ints(np.int8, (9, 3, 2, 2), -64, 63), i8(0), 0.01, i8(127), bias=False)
    wz = ints(np.uint8, (10,), 100, 150)
    wu = np.clip(wz[:, None, None, None].astype(np.int64) + ints(np.int8, (10, 4, 3, 3)).astype(np.int64),
                 0, 255).astype(np.uint8)
    qconv_kernel_case(out, "quant_kernel_u8_weights_zp", ints(np.uint8, (1, 4, 6, 9)), u8(17), wu, wz,
                      RNG.uniform(0.002, 0.02, 10), u8(128), pads=[1, 2, 1, 0])
    # rows of 37 pixels: panels of 16 inside the image (the pack's
    # shuffles) and across its padded edges (element by element)
    qconv_kernel_case(out, "quant_kernel_wide_rows", ints(np.uint8, (1, 5, 20, 37)), u8(9),
                      ints(np.int8, (8, 5, 3, 3), -64, 63), np.zeros(8, np.int8),
                      RNG.uniform(0.002, 0.02, 8), u8(100), pads=[1, 2, 1, 2], dilations=[1, 2])
    qconv_kernel_case(out, "quant_kernel_tasks_batch", ints(np.uint8, (2, 19, 15, 15)), u8(3),
                      ints(np.int8, (70, 19, 1, 1), -64, 64), np.zeros(70, np.int8),
                      RNG.uniform(0.002, 0.02, 70), u8(40))
    # many pixel tasks over two row chunks per group (65 rows), s8 activations
    # (flipped), stride 2, padding on two sides only: the pack's row runs
    # start and end in padding
    qconv_kernel_case(out, "quant_kernel_s8_groups_stride2_tasks", ints(np.int8, (1, 8, 40, 36)),
                      i8(-5), ints(np.int8, (130, 4, 3, 3), -64, 63), np.zeros(130, np.int8),
                      RNG.uniform(0.002, 0.02, 130), i8(3), group=2, strides=[2, 2],
                      pads=[1, 0, 1, 2])


def qdwconv_kernel_cases(out):
    """Depthwise QLinearConvs (group = channels): the smelt.qdwconv_u8
    kernel.  Output rows not a multiple of 8 or 16, strides, dilations,
    asymmetric padding, odd and even tap counts, batch 2, zero points at
    both ends of their ranges, s8 and u8 activations and outputs, full
    8-bit s8 weights and u8 weights with per-channel zero points,
    per-channel scales."""
    u8 = lambda v: np.array(v, np.uint8)
    i8 = lambda v: np.array(v, np.int8)
    qconv_kernel_case(out, "quant_kernel_dw_3x3_pad", ints(np.uint8, (1, 19, 13, 21)), u8(255),
                      ints(np.int8, (19, 1, 3, 3)), np.zeros(19, np.int8), RNG.uniform(0.002, 0.02, 19),
                      u8(0), ys=0.3, group=19, pads=[1, 1, 1, 1])
    qconv_kernel_case(out, "quant_kernel_dw_s8_stride2_asym", ints(np.int8, (2, 10, 14, 17)), i8(-128),
                      ints(np.int8, (10, 1, 3, 3), -100, 100), np.zeros(10, np.int8),
                      RNG.uniform(0.002, 0.02, 10), i8(127), group=10, strides=[2, 2], pads=[0, 1, 1, 0])
    wz = ints(np.uint8, (8,), 100, 150)
    wu = np.clip(wz[:, None, None, None].astype(np.int64) + ints(np.int8, (8, 1, 5, 5)).astype(np.int64),
                 0, 255).astype(np.uint8)
    qconv_kernel_case(out, "quant_kernel_dw_u8_weights_dilated", ints(np.uint8, (1, 8, 20, 40)), u8(0),
                      wu, wz, RNG.uniform(0.002, 0.02, 8), u8(255), group=8, strides=[1, 2],
                      dilations=[2, 2], pads=[4, 4, 4, 4])
    qconv_kernel_case(out, "quant_kernel_dw_s8_2x2_zp_max", ints(np.int8, (1, 3, 6, 9)), i8(127),
                      ints(np.int8, (3, 1, 2, 2)), i8(0), 0.01, i8(-128), group=3, bias=False)
    # stride 2 over rows of 77 and 70: the phases split 32 columns at a time
    # (SSE2) from column 1 (odd left padding, s8 flipped) or 0 (even), the
    # rest byte by byte
    qconv_kernel_case(out, "quant_kernel_dw_s8_stride2_wide", ints(np.int8, (1, 5, 7, 77)), i8(-3),
                      ints(np.int8, (5, 1, 3, 3), -100, 100), np.zeros(5, np.int8),
                      RNG.uniform(0.002, 0.02, 5), i8(4), group=5, strides=[2, 2], pads=[1, 1, 1, 1])
    qconv_kernel_case(out, "quant_kernel_dw_u8_stride2_wide_pad2", ints(np.uint8, (1, 4, 6, 70)), u8(7),
                      ints(np.int8, (4, 1, 5, 5)), np.zeros(4, np.int8), RNG.uniform(0.002, 0.02, 4),
                      u8(120), group=4, strides=[2, 2], pads=[2, 2, 2, 2])


def qmatmul_kernel_cases(out):
    """MatMulInteger and QLinearMatMul with a constant B: compiled, they run
    the int8 matrix-product micro-kernel (smelt_uk_qmatmul_u8s8), whose
    results must equal the reference's exactly.  K and N not multiples of
    the blocks (4 and 16), rows not a multiple of 4, several tasks of rows
    and columns, A's zero point constant, absent or a graph input (run
    time, as DynamicQuantizeLinear gives it) at both ends of its range,
    B's per tensor or per column, 7-bit B (vpmaddubsw) and full 8-bit B
    (vpmaddwd), u8 B with zero points, s8 and u8 A and outputs, per-column
    scales."""
    u8 = lambda v: np.array(v, np.uint8)
    i8 = lambda v: np.array(v, np.int8)
    mmi = lambda name, a, azp, b, bzp, consts=("b", "bzp"): write_case(
        out, name, 10, node("MatMulInteger", ["a", "b", "azp", "bzp"]),
        [("a", a), ("b", b), ("azp", azp), ("bzp", bzp)], consts=consts)
    mmi("quant_kernel_mm_k_tail_7bit", ints(np.uint8, (3, 7, 37)), u8(255),
        ints(np.int8, (37, 45), -60, 60), ints(np.int8, (45,), -3, 3), consts=("b", "bzp", "azp"))
    mmi("quant_kernel_mm_s8_8bit_runtime_zp", ints(np.int8, (5, 70)), i8(-128), ints(np.int8, (70, 33)),
        i8(0))
    mmi("quant_kernel_mm_s8_zp_max", ints(np.int8, (2, 3, 12)), i8(127), ints(np.int8, (12, 16), -100, 100),
        i8(5))
    bz = ints(np.uint8, (40,), 100, 150)
    bu = np.clip(bz[None, :].astype(np.int64) + ints(np.int8, (29, 40)).astype(np.int64), 0, 255).astype(np.uint8)
    mmi("quant_kernel_mm_u8_weights_zp_tasks", ints(np.uint8, (150, 29)), u8(0), bu, bz)
    write_case(out, "quant_kernel_mm_no_zero_points", 10, node("MatMulInteger", ["a", "b"]),
               [("a", ints(np.uint8, (9, 8))), ("b", ints(np.int8, (8, 20)))], consts=("b",))

    def qmm(name, a, az, b, bz, bs, yz, as_=0.02, ys=0.9):
        inputs = [("a", a), ("as", np.array(as_, np.float32)), ("az", az), ("b", b),
                  ("bs", np.asarray(bs, np.float32)), ("bz", bz), ("ys", np.array(ys, np.float32)),
                  ("yz", yz)]
        write_case(out, name, 10, node("QLinearMatMul", [n for n, _ in inputs]), inputs,
                   consts=tuple(n for n, _ in inputs if n != "a"))
    qmm("quant_kernel_qmm_per_column_tasks", ints(np.uint8, (2, 67, 19)), u8(3),
        ints(np.int8, (19, 150), -60, 60), ints(np.int8, (150,), -2, 2), RNG.uniform(0.002, 0.02, 150),
        u8(0), ys=0.3)
    qmm("quant_kernel_qmm_s8_saturate", ints(np.int8, (6, 41)), i8(-128), ints(np.int8, (41, 23)),
        i8(0), 0.01, i8(127), ys=0.5)
    qmm("quant_kernel_qmm_u8_weights_s8_out", ints(np.int8, (4, 29)), i8(127), bu[:, :7].copy(),
        bz[:7].copy(), RNG.uniform(0.002, 0.02, 7), i8(-128), ys=0.2)
    qmm("quant_kernel_qmm_yz_max", ints(np.uint8, (3, 64)), u8(128), ints(np.int8, (64, 17), -64, 63),
        i8(1), 0.005, u8(255), ys=0.4)


def qadd_case(out, name, a, az, b, bz, yz, as_=0.05, bs=0.03, ys=0.07, relu=False):
    """QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b)) (+ Relu):
    fuse_qdq makes it one smelt.QLinearAdd (a vectorised kernel) computing
    the same float32 arithmetic, so the outputs must match exactly."""
    nodes = [node("DequantizeLinear", ["a", "as", "az"], ["da"]),
             node("DequantizeLinear", ["b", "bs", "bz"], ["db"]),
             node("Add", ["da", "db"], ["s"])]
    if relu:
        nodes.append(node("Relu", ["s"], ["r"]))
    nodes.append(node("QuantizeLinear", ["r" if relu else "s", "ys", "yz"], ["y"]))
    consts = {"as": np.array(as_, np.float32), "az": az, "bs": np.array(bs, np.float32), "bz": bz,
              "ys": np.array(ys, np.float32), "yz": yz}
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    vi = lambda n, x: helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))
    graph = helper.make_graph(nodes, name, [vi("a", a), vi("b", b)],
                              [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
                              [numpy_helper.from_array(v, k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    expected = ReferenceEvaluator(model).run(None, {"a": a, "b": b})
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (n, x) in enumerate((("a", a), ("b", b))):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(x, n).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.asarray(expected[0]), "y").SerializeToString())


def qadd_cases(out):
    """Adds of quantized tensors: u8 and s8 operands and results, zero points
    at the ends of their ranges, saturation on both sides, a Relu, a tail
    shorter than a vector, several parallel tasks."""
    u8 = lambda v: np.array(v, np.uint8)
    i8 = lambda v: np.array(v, np.int8)
    qadd_case(out, "quant_qadd_u8_tail", ints(np.uint8, (1, 3, 5, 7)), u8(0), ints(np.uint8, (1, 3, 5, 7)),
              u8(255), u8(128))
    qadd_case(out, "quant_qadd_mixed_saturate", ints(np.int8, (2, 5, 9)), i8(100),
              ints(np.uint8, (2, 5, 9)), u8(3), i8(-128), ys=0.05)
    qadd_case(out, "quant_qadd_relu_tasks", ints(np.uint8, (2, 3, 70, 80)), u8(128),
              ints(np.uint8, (2, 3, 70, 80)), u8(100), u8(0), as_=0.02, bs=0.1, ys=0.05, relu=True)


def dynamic_cases(out):
    write_case(out, "quant_dynamicquantizelinear_random", 11,
               node("DynamicQuantizeLinear", ["x"], ["y", "ys", "yz"]),
               [("x", floats((3, 5, 7), 4.0) + 1.0)])
    # the vectorised kernel (smelt.dynq_u8): a range that starts at 0 (all
    # positive), one that ends at 0 (all negative), a tail of 3 past the vectors
    write_case(out, "quant_dynamicquantizelinear_positive", 11,
               node("DynamicQuantizeLinear", ["x"], ["y", "ys", "yz"]),
               [("x", np.abs(floats((7, 29), 3.0)))])
    write_case(out, "quant_dynamicquantizelinear_negative", 11,
               node("DynamicQuantizeLinear", ["x"], ["y", "ys", "yz"]),
               [("x", -np.abs(floats((1, 128, 19), 0.5)))])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    for cases in (quantize_cases, dequantize_cases, integer_product_cases, conv_cases,
                  kernel_cases, qdwconv_kernel_cases, qmatmul_kernel_cases, qadd_cases, dynamic_cases):
        cases(args.out)
    print("gen_quant_cases: wrote the quantization node tests to %s" % args.out)


if __name__ == "__main__":
    main()
