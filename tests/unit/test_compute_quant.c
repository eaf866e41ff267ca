/* Compute definitions of the quantization family (quant.c) checked against
 * the reference kernels: each case runs one node through exec_node
 * (reference) and exec_node_te (tensor expressions, interpreted) on
 * pseudo-random inputs, then lowered under the default schedule and random
 * legal ones (tir interpreter); integer outputs must match exactly.  The
 * reference kernels themselves are checked against onnx's reference
 * implementation by the node tests (conformance/current_onnx_*,
 * conformance/quant_cases_*).  Also: the errors for inputs and attributes
 * smelt refuses name node, op and the problem. */
#include "op_test_util.h"

enum { FILL_DATA, FILL_SCALE };

/* Data: floats in [-40, 40) (so quantization saturates), integers over the
 * whole 8-bit range, +-3000 for 16 and 32 bits.  Scales in [0.05, 0.55). */
static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    uint32_t r = opt_random(state);
    double u = (double)r / 4294967296.0;
    if (kind == FILL_SCALE)
        op_set_f64(t, i, 0.05 + 0.5 * u);
    else if (smelt_dtype_is_lowbit_float(t->dtype)) /* any code: NaN, Inf, -0 too */
        ((uint8_t *)t->data)[i] = (uint8_t)(r & (t->dtype == SMELT_DT_FLOAT4E2M1 ? 0x0F : 0xFF));
    else if (smelt_dtype_is_lowbit_int(t->dtype)) /* the whole range: op_set_i64 wraps */
        op_set_i64(t, i, (int64_t)(r % 16));
    else if (t->dtype == I8)
        op_set_i64(t, i, (int64_t)(r % 256) - 128);
    else if (t->dtype == U8)
        op_set_i64(t, i, (int64_t)(r % 256));
    else if (op_dtype_is_int(t->dtype))
        op_set_i64(t, i, (int64_t)(r % 6001) - (t->dtype == U16 ? 0 : 3000));
    else
        op_set_f64(t, i, 80.0 * u - 40.0);
}

static const opt_suite k_suite = {
    .seed = 4242, .fill = fill, .tols = OPT_TOLS_ACCUMULATE, .random_schedules = 3};

#define T OPT_X
#define S(type, r, ...) OPT_XF(type, FILL_SCALE, r, __VA_ARGS__)
#define AXIS(v) OPT_AI("axis", v)
#define BLOCK(v) OPT_AI("block_size", v)

static const opt_case k_quantize_cases[] = {
    {"quantize per tensor u8", OP_QUANTIZE_LINEAR, 13, "y", 3, 0,
     {T(F32, 3, 2, 3, 5), S(F32, 0, 0), T(U8, 0, 0)}, {{0}}},
    {"quantize no zero point (u8)", OP_QUANTIZE_LINEAR, 10, "y", 2, 0,
     {T(F32, 2, 4, 6), S(F32, 0, 0)}, {{0}}},
    {"quantize per axis i8", OP_QUANTIZE_LINEAR, 13, "y", 3, 1,
     {T(F32, 4, 2, 3, 4, 5), S(F32, 1, 3), T(I8, 1, 3)}, {AXIS(1)}},
    {"quantize per last axis f16 -> i16", OP_QUANTIZE_LINEAR, 21, "y", 3, 1,
     {T(F16, 2, 3, 7), S(F16, 1, 7), T(I16, 1, 7)}, {AXIS(-1)}},
    {"quantize bf16 -> u16", OP_QUANTIZE_LINEAR, 21, "y", 3, 0,
     {T(BF16, 2, 5, 4), S(BF16, 1, 1), T(U16, 1, 1)}, {{0}}},
    {"quantize int32 x", OP_QUANTIZE_LINEAR, 19, "y", 3, 0,
     {T(I32, 1, 17), S(F32, 0, 0), T(I8, 0, 0)}, {{0}}},
    {"quantize blocked", OP_QUANTIZE_LINEAR, 21, "y", 3, 2,
     {T(F32, 3, 2, 5, 3), S(F32, 3, 2, 3, 3), T(I8, 3, 2, 3, 3)}, {AXIS(1), BLOCK(2)}},
    {"quantize output_dtype int16", OP_QUANTIZE_LINEAR, 21, "y", 2, 1,
     {T(F32, 2, 3, 4), S(F32, 0, 0)}, {OPT_AI("output_dtype", I16)}},
    {"quantize precision f16", OP_QUANTIZE_LINEAR, 23, "y", 3, 1,
     {T(F32, 2, 3, 4), S(F32, 0, 0), T(U8, 0, 0)}, {OPT_AI("precision", F16)}},
    {"quantize constant per-axis params", OP_QUANTIZE_LINEAR, 13, "y", 3, 1,
     {T(F32, 3, 2, 3, 4), OPT_CONST1(F32, 0.1, 0.25, 0.5), OPT_CONST1(I8, -5, 0, 100)}, {AXIS(1)}},
    /* ONNX's low-bit types: float8/float4 codes, 4- and 2-bit integers */
    {"quantize e4m3fn saturate", OP_QUANTIZE_LINEAR, 21, "y", 3, 0,
     {T(F32, 2, 4, 8), S(F32, 0, 0), T(SMELT_DT_FLOAT8E4M3FN, 1, 1)}, {{0}}},
    {"quantize e4m3fn no saturate", OP_QUANTIZE_LINEAR, 21, "y", 3, 1,
     {T(F32, 2, 4, 8), S(F32, 0, 0), T(SMELT_DT_FLOAT8E4M3FN, 0, 0)}, {OPT_AI("saturate", 0)}},
    {"quantize e5m2 per axis no saturate", OP_QUANTIZE_LINEAR, 21, "y", 3, 2,
     {T(F32, 2, 3, 8), S(F32, 1, 3), T(SMELT_DT_FLOAT8E5M2, 1, 3)},
     {AXIS(0), OPT_AI("saturate", 0)}},
    {"quantize output_dtype e4m3fnuz", OP_QUANTIZE_LINEAR, 21, "y", 2, 1,
     {T(F32, 2, 3, 8), S(F32, 0, 0)}, {OPT_AI("output_dtype", SMELT_DT_FLOAT8E4M3FNUZ)}},
    {"quantize e5m2fnuz f16", OP_QUANTIZE_LINEAR, 21, "y", 3, 0,
     {T(F16, 2, 3, 8), S(F16, 0, 0), T(SMELT_DT_FLOAT8E5M2FNUZ, 0, 0)}, {{0}}},
    {"quantize float4e2m1", OP_QUANTIZE_LINEAR, 21, "y", 3, 0,
     {T(F32, 2, 3, 8), S(F32, 0, 0), T(SMELT_DT_FLOAT4E2M1, 0, 0)}, {{0}}},
    {"quantize int4 per axis", OP_QUANTIZE_LINEAR, 21, "y", 3, 1,
     {T(F32, 2, 3, 7), S(F32, 1, 3), T(SMELT_DT_INT4, 1, 3)}, {AXIS(0)}},
    {"quantize uint4", OP_QUANTIZE_LINEAR, 21, "y", 3, 0,
     {T(F32, 1, 9), S(F32, 0, 0), T(SMELT_DT_UINT4, 0, 0)}, {{0}}},
    {"quantize int2 blocked", OP_QUANTIZE_LINEAR, 21, "y", 3, 2,
     {T(F32, 2, 3, 6), S(F32, 2, 3, 2), T(SMELT_DT_INT2, 2, 3, 2)}, {AXIS(1), BLOCK(3)}},
    {"quantize uint2 output_dtype", OP_QUANTIZE_LINEAR, 21, "y", 2, 1,
     {T(F32, 1, 9), S(F32, 0, 0)}, {OPT_AI("output_dtype", SMELT_DT_UINT2)}},
};

static const opt_case k_dequantize_cases[] = {
    {"dequantize u8 per tensor", OP_DEQUANTIZE_LINEAR, 13, "y", 3, 0,
     {T(U8, 3, 2, 3, 5), S(F32, 0, 0), T(U8, 0, 0)}, {{0}}},
    {"dequantize i8 no zero point", OP_DEQUANTIZE_LINEAR, 10, "y", 2, 0,
     {T(I8, 1, 9), S(F32, 1, 1)}, {{0}}},
    {"dequantize i8 per axis", OP_DEQUANTIZE_LINEAR, 13, "y", 3, 1,
     {T(I8, 3, 4, 3, 2), S(F32, 1, 4), T(I8, 1, 4)}, {AXIS(0)}},
    {"dequantize i16 blocked", OP_DEQUANTIZE_LINEAR, 21, "y", 3, 2,
     {T(I16, 2, 3, 7), S(F32, 2, 3, 3), T(I16, 2, 3, 3)}, {AXIS(1), BLOCK(3)}},
    {"dequantize i32", OP_DEQUANTIZE_LINEAR, 13, "y", 3, 0,
     {T(I32, 1, 11), S(F32, 0, 0), T(I32, 0, 0)}, {{0}}},
    {"dequantize u16 f16 scale", OP_DEQUANTIZE_LINEAR, 21, "y", 3, 1,
     {T(U16, 2, 3, 4), S(F16, 1, 4), T(U16, 1, 4)}, {AXIS(1)}},
    {"dequantize bf16 scale", OP_DEQUANTIZE_LINEAR, 19, "y", 3, 0,
     {T(U8, 2, 3, 4), S(BF16, 0, 0), T(U8, 0, 0)}, {{0}}},
    {"dequantize output_dtype f16", OP_DEQUANTIZE_LINEAR, 23, "y", 3, 1,
     {T(I8, 2, 3, 4), S(F32, 0, 0), T(I8, 0, 0)}, {OPT_AI("output_dtype", F16)}},
    {"dequantize e4m3fn zero point", OP_DEQUANTIZE_LINEAR, 21, "y", 3, 0,
     {T(SMELT_DT_FLOAT8E4M3FN, 2, 8, 8), S(F32, 0, 0), T(SMELT_DT_FLOAT8E4M3FN, 1, 1)}, {{0}}},
    {"dequantize e4m3fnuz per axis", OP_DEQUANTIZE_LINEAR, 21, "y", 3, 1,
     {T(SMELT_DT_FLOAT8E4M3FNUZ, 2, 4, 8), S(F32, 1, 4), T(SMELT_DT_FLOAT8E4M3FNUZ, 1, 4)},
     {AXIS(0)}},
    {"dequantize e5m2 f16 output", OP_DEQUANTIZE_LINEAR, 23, "y", 2, 1,
     {T(SMELT_DT_FLOAT8E5M2, 2, 8, 8), S(F32, 0, 0)}, {OPT_AI("output_dtype", F16)}},
    {"dequantize e5m2fnuz", OP_DEQUANTIZE_LINEAR, 21, "y", 2, 0,
     {T(SMELT_DT_FLOAT8E5M2FNUZ, 2, 8, 8), S(F32, 0, 0)}, {{0}}},
    {"dequantize float4e2m1", OP_DEQUANTIZE_LINEAR, 21, "y", 3, 0,
     {T(SMELT_DT_FLOAT4E2M1, 1, 16), S(F32, 0, 0), T(SMELT_DT_FLOAT4E2M1, 0, 0)}, {{0}}},
    {"dequantize int4 per axis", OP_DEQUANTIZE_LINEAR, 21, "y", 3, 1,
     {T(SMELT_DT_INT4, 2, 3, 5), S(F32, 1, 3), T(SMELT_DT_INT4, 1, 3)}, {AXIS(0)}},
    {"dequantize uint4 scalar zp [1]", OP_DEQUANTIZE_LINEAR, 21, "y", 3, 0,
     {T(SMELT_DT_UINT4, 1, 7), S(F32, 0, 0), T(SMELT_DT_UINT4, 1, 1)}, {{0}}},
    {"dequantize int2, uint2", OP_DEQUANTIZE_LINEAR, 21, "y", 3, 0,
     {T(SMELT_DT_INT2, 1, 9), S(F32, 1, 1), T(SMELT_DT_INT2, 0, 0)}, {{0}}},
    {"dequantize uint2 blocked", OP_DEQUANTIZE_LINEAR, 21, "y", 3, 2,
     {T(SMELT_DT_UINT2, 2, 3, 6), S(F32, 2, 3, 2), T(SMELT_DT_UINT2, 2, 3, 2)},
     {AXIS(1), BLOCK(3)}},
};

static const opt_case k_dynamic_cases[] = {
    {"dynamic quantize 3-D", OP_DYNAMIC_QUANTIZE_LINEAR, 11, "yyy", 1, 0, {T(F32, 3, 3, 4, 5)},
     {{0}}},
    {"dynamic quantize 1-D", OP_DYNAMIC_QUANTIZE_LINEAR, 11, "yyy", 1, 0, {T(F32, 1, 7)}, {{0}}},
    {"dynamic quantize positive", OP_DYNAMIC_QUANTIZE_LINEAR, 11, "yyy", 1, 0,
     {S(F32, 2, 4, 4)}, {{0}}},
};

#define MMI(what, a, b, az, bz) {what, OP_MATMUL_INTEGER, 10, "y", 4, 0, {a, b, az, bz}, {{0}}}

static const opt_case k_product_cases[] = {
    {"matmulinteger no zero points", OP_MATMUL_INTEGER, 10, "y", 2, 0,
     {T(U8, 2, 3, 4), T(I8, 2, 4, 5)}, {{0}}},
    MMI("matmulinteger scalar zero points", T(U8, 3, 2, 3, 4), T(U8, 2, 4, 5), T(U8, 0, 0),
        T(U8, 0, 0)),
    MMI("matmulinteger per row and column", T(I8, 2, 3, 6), T(U8, 2, 6, 4), T(I8, 1, 3),
        T(U8, 1, 4)),
    MMI("matmulinteger batch broadcast", T(U8, 4, 2, 1, 3, 4), T(I8, 3, 3, 4, 5),
        T(U8, 4, 2, 1, 3, 1), T(I8, 1, 5)),
    MMI("matmulinteger 1-D a", T(U8, 1, 4), T(I8, 2, 4, 5), T(U8, 0, 0), T(I8, 1, 5)),
    MMI("matmulinteger omitted a zero point", T(U8, 2, 3, 4), T(I8, 2, 4, 5), OPT_NONE,
        T(I8, 1, 1)),
    {"qlinearmatmul 2-D", OP_QLINEAR_MATMUL, 10, "y", 8, 0,
     {T(U8, 2, 3, 8), S(F32, 0, 0), T(U8, 0, 0), T(I8, 2, 8, 5), S(F32, 0, 0), T(I8, 0, 0),
      S(F32, 0, 0), T(U8, 0, 0)},
     {{0}}},
    {"qlinearmatmul 3-D per column f16 scales", OP_QLINEAR_MATMUL, 21, "y", 8, 0,
     {T(I8, 3, 2, 3, 8), S(F16, 1, 3), T(I8, 1, 3), T(I8, 2, 8, 5), S(F16, 1, 5), T(I8, 1, 5),
      S(F16, 0, 0), T(I8, 0, 0)},
     {{0}}},
};

#define PADS(...) OPT_AINTS("pads", 4, __VA_ARGS__)
#define STRIDES(...) OPT_AINTS("strides", 2, __VA_ARGS__)
#define GROUP(g) OPT_AI("group", g)

static const opt_case k_conv_cases[] = {
    {"convinteger basic", OP_CONV_INTEGER, 10, "y", 2, 0, {T(U8, 4, 1, 2, 5, 5), T(U8, 4, 3, 2, 3, 3)},
     {{0}}},
    {"convinteger per channel, group, strides, pads", OP_CONV_INTEGER, 10, "y", 4, 3,
     {T(U8, 4, 2, 4, 6, 7), T(I8, 4, 6, 2, 3, 3), T(U8, 0, 0), T(I8, 1, 6)},
     {GROUP(2), STRIDES(2, 1), PADS(1, 0, 1, 2)}},
    {"convinteger 1-D", OP_CONV_INTEGER, 10, "y", 3, 0,
     {T(I8, 3, 1, 3, 9), T(I8, 3, 2, 3, 4), T(I8, 1, 1)}, {{0}}},
    {"qlinearconv per channel with bias", OP_QLINEAR_CONV, 10, "y", 9, 1,
     {T(U8, 4, 1, 3, 6, 6), S(F32, 0, 0), T(U8, 0, 0), T(I8, 4, 4, 3, 3, 3), S(F32, 1, 4),
      T(I8, 1, 4), S(F32, 0, 0), T(U8, 0, 0), T(I32, 1, 4)},
     {PADS(1, 1, 1, 1)}},
    {"qlinearconv depthwise no bias", OP_QLINEAR_CONV, 10, "y", 8, 2,
     {T(I8, 4, 2, 3, 5, 5), S(F32, 0, 0), T(I8, 0, 0), T(I8, 4, 3, 1, 3, 3), S(F32, 0, 0),
      T(I8, 0, 0), S(F32, 0, 0), T(I8, 0, 0)},
     {GROUP(3), STRIDES(2, 2)}},
    {"qlinearconv constant weights", OP_QLINEAR_CONV, 10, "y", 9, 0,
     {T(U8, 4, 1, 2, 4, 4), S(F32, 0, 0), T(U8, 0, 0),
      OPT_CONST(I8, OPT_VALS(1, -2, 3, 4, 5, -6, 7, 8, -128, 127, 0, 1, 2, 3, 4, 5), 4, 2, 2, 2, 2),
      OPT_CONST1(F32, 0.01, 0.3), OPT_CONST1(I8, 0, 3), OPT_CONST0(F32, 0.2),
      OPT_CONST0(U8, 128), OPT_CONST1(I32, -500, 7000)},
     {{0}}},
    /* internal (fuse_qdq's): its reference against the smelt.qadd_u8 kernel's
     * plain C branch (the tir interpreter runs the kernel's source) */
    {"smelt.qlinearadd u8 + s8 -> u8", OP_QLINEAR_ADD, 0, "y", 8, 0,
     {T(U8, 3, 2, 3, 9), OPT_CONST0(F32, 0.05), OPT_CONST0(U8, 3), T(I8, 3, 2, 3, 9),
      OPT_CONST0(F32, 0.02), OPT_CONST0(I8, -7), OPT_CONST0(F32, 0.04), OPT_CONST0(U8, 250)},
     {{0}}},
    {"smelt.qlinearadd -> s8", OP_QLINEAR_ADD, 0, "y", 8, 0,
     {T(I8, 2, 5, 13), OPT_CONST0(F32, 0.1), OPT_CONST0(I8, 127), T(I8, 2, 5, 13),
      OPT_CONST0(F32, 0.3), OPT_CONST0(I8, -128), OPT_CONST0(F32, 0.2), OPT_CONST0(I8, -3)},
     {{0}}},
};

/* ---- refusals ---- */

static void expect_error(opt_node *f, smelt_status st, smelt_status want, const char *needle,
                         const char *op)
{
    if (st != want) fprintf(stderr, "status %d, expected %d: %s\n", st, want, opt_message(f));
    CHECK(st == want);
    CHECK_STR_CONTAINS(opt_message(f), needle);
    CHECK_STR_CONTAINS(opt_message(f), "node 'n0'");
    CHECK_STR_CONTAINS(opt_message(f), op);
}

static void test_refusals(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_QUANTIZE_LINEAR, 21, 2, 1);
    opt_attr_int(&f, "output_dtype", SMELT_DT_FLOAT8E8M0); /* a scale type, not quantized */
    expect_error(&f, opt_import(&f), SMELT_ERR_UNSUPPORTED, "attribute 'output_dtype' is 24",
                 "(QuantizeLinear)");
    opt_fini(&f);

    const int64_t d23[] = {2, 3}, d4[] = {4};
    smelt_tensor x = opt_tensor(F32, 2, d23, NULL), s = opt_tensor(F32, 1, d4, NULL);
    smelt_tensor z = opt_tensor(I8, 1, d4, NULL), zu = opt_tensor(U8, 1, d4, NULL);
    opt_init(&f, NULL, OP_QUANTIZE_LINEAR, 13, 3, 1);
    CHECK(opt_import(&f) == SMELT_OK);
    expect_error(&f, opt_infer(&f, (smelt_tensor[]){x, s, z}, 3), SMELT_ERR_SHAPE,
                 "per-axis scale 'in1' has rank 1 and 4 elements; expected 1-D with 3", "(QuantizeLinear)");
    opt_fini(&f);

    opt_init(&f, NULL, OP_QUANTIZE_LINEAR, 21, 3, 1);
    opt_attr_int(&f, "output_dtype", U8);
    CHECK(opt_import(&f) == SMELT_OK);
    smelt_tensor s1 = opt_tensor(F32, 0, NULL, NULL), z1 = opt_tensor(I8, 0, NULL, NULL);
    expect_error(&f, opt_infer(&f, (smelt_tensor[]){x, s1, z1}, 3), SMELT_ERR_SHAPE,
                 "attribute 'output_dtype' is u8 but y_zero_point 'in2' is i8",
                 "(QuantizeLinear)");
    opt_fini(&f);

    opt_init(&f, NULL, OP_DEQUANTIZE_LINEAR, 13, 3, 1);
    CHECK(opt_import(&f) == SMELT_OK);
    smelt_tensor xi = opt_tensor(I8, 1, d4, NULL);
    expect_error(&f, opt_infer(&f, (smelt_tensor[]){xi, s, zu}, 3), SMELT_ERR_SHAPE,
                 "x_zero_point 'in2' has dtype u8, expected i8", "(DequantizeLinear)");
    opt_fini(&f);

    opt_init(&f, NULL, OP_DEQUANTIZE_LINEAR, 21, 3, 1);
    opt_attr_int(&f, "block_size", -2);
    expect_error(&f, opt_import(&f), SMELT_ERR_ATTR, "attribute 'block_size' is -2",
                 "(DequantizeLinear)");
    opt_fini(&f);

    /* a per-row y_scale of QLinearMatMul is not implemented */
    const int64_t d34[] = {3, 4}, d45[] = {4, 5}, d3[] = {3};
    smelt_tensor a = opt_tensor(U8, 2, d34, NULL), b = opt_tensor(U8, 2, d45, NULL);
    smelt_tensor sc = opt_tensor(F32, 0, NULL, NULL), zp = opt_tensor(U8, 0, NULL, NULL);
    smelt_tensor ys = opt_tensor(F32, 1, d3, NULL);
    opt_init(&f, NULL, OP_QLINEAR_MATMUL, 10, 8, 1);
    CHECK(opt_import(&f) == SMELT_OK);
    expect_error(&f, opt_infer(&f, (smelt_tensor[]){a, sc, zp, b, sc, zp, ys, zp}, 8),
                 SMELT_ERR_UNSUPPORTED, "input 'in6' is not a scalar", "(QLinearMatMul)");
    opt_fini(&f);

    /* MatMulInteger's float inputs and a zero point that fits neither rows nor columns */
    opt_init(&f, NULL, OP_MATMUL_INTEGER, 10, 4, 1);
    CHECK(opt_import(&f) == SMELT_OK);
    smelt_tensor af = opt_tensor(F32, 2, d34, NULL);
    expect_error(&f, opt_infer(&f, (smelt_tensor[]){af, b}, 2), SMELT_ERR_UNSUPPORTED, "input A",
                 "(MatMulInteger)");
    opt_fini(&f);
    opt_init(&f, NULL, OP_MATMUL_INTEGER, 10, 4, 1);
    CHECK(opt_import(&f) == SMELT_OK);
    const int64_t d7[] = {7};
    smelt_tensor bad_zp = opt_tensor(U8, 1, d7, NULL);
    expect_error(&f, opt_infer(&f, (smelt_tensor[]){a, b, zp, bad_zp}, 4), SMELT_ERR_SHAPE,
                 "input 'in3' (rank 1) does not broadcast", "(MatMulInteger)");
    opt_fini(&f);

    /* QLinearConv: w_scale with the wrong channel count */
    const int64_t dx[] = {1, 2, 4, 4}, dw[] = {3, 2, 3, 3}, d5[] = {5};
    smelt_tensor cx = opt_tensor(U8, 4, dx, NULL), cw = opt_tensor(I8, 4, dw, NULL);
    smelt_tensor ws = opt_tensor(F32, 1, d5, NULL), wz = opt_tensor(I8, 0, NULL, NULL);
    opt_init(&f, NULL, OP_QLINEAR_CONV, 10, 8, 1);
    CHECK(opt_import(&f) == SMELT_OK);
    expect_error(&f, opt_infer(&f, (smelt_tensor[]){cx, sc, zp, cw, ws, wz, sc, zp}, 8),
                 SMELT_ERR_SHAPE, "input 'in4' must be a scalar or 1-D with one value per output channel",
                 "(QLinearConv)");
    opt_fini(&f);
}

int main(void)
{
    opt_check_cases(&k_suite, k_quantize_cases, SMELT_ARRAY_LEN(k_quantize_cases));
    opt_check_cases(&k_suite, k_dequantize_cases, SMELT_ARRAY_LEN(k_dequantize_cases));
    opt_check_cases(&k_suite, k_dynamic_cases, SMELT_ARRAY_LEN(k_dynamic_cases));
    opt_check_cases(&k_suite, k_product_cases, SMELT_ARRAY_LEN(k_product_cases));
    opt_check_cases(&k_suite, k_conv_cases, SMELT_ARRAY_LEN(k_conv_cases));
    test_refusals();
    opt_check_family_defined("quant");
    TEST_MAIN_END();
}
