/* Unary elementwise ops: hand-computed results and error messages. */
#include <float.h>

#include "op_test_util.h"
#include "ops/elementwise.h"

/* The registry must hand out this family's definitions (it links them weakly). */
extern const op_def op_def_RELU;

/* inputs x0, x1, ...; output y */
static const opt_names k_names = {"n0", "x%d", "y"};

/* Runs t's op on the float32 vector xs and checks the output against want
 * (NaN wants NaN) within an absolute tol; finishes t. */
static void check_f32(opt_node *t, const float *xs, const float *want, int n, double tol)
{
    smelt_tensor x = opt_vec(F32, n, xs);
    CHECK(opt_run(t, &x, 1) == SMELT_OK);
    CHECK(t->out[0].dtype == F32 && t->out[0].rank == 1 && t->out[0].dims[0] == n);
    OPT_EXPECT_F32(&t->out[0], want, n, OPT_ABS(tol));
    opt_fini(t);
}

static void unary_f32(op_kind op, const float *xs, const float *want, int n, double tol)
{
    opt_node h;
    opt_init(&h, &k_names, op, 17, 1, 1);
    check_f32(&h, xs, want, n, tol);
}

/* ---- tests ---- */

static void test_activations(void)
{
    float x[] = {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f};
    unary_f32(OP_RELU, x, (float[]){0, 0, 0, 0.5f, 3}, 5, 0);
    unary_f32(OP_SIGMOID, (float[]){-1000, 0, 1000, 1}, (float[]){0, 0.5f, 1, 0.7310586f}, 4, 1e-7);
    unary_f32(OP_SOFTPLUS, (float[]){-1000, 0, 1000}, (float[]){0, (float)log(2.0), 1000}, 3, 1e-6);
    unary_f32(OP_SOFTSIGN, (float[]){-1, 3}, (float[]){-0.5f, 0.75f}, 2, 1e-7);
    unary_f32(OP_ERF, (float[]){0, 1}, (float[]){0, 0.8427008f}, 2, 1e-7);
    unary_f32(OP_HARD_SWISH, (float[]){-4, 0, 1, 4}, (float[]){0, 0, 2.0f / 3, 4}, 4, 1e-6);

    opt_node h;
    opt_init(&h, &k_names, OP_LEAKY_RELU, 16, 1, 1);
    check_f32(&h, x, (float[]){-0.02f, -0.005f, 0, 0.5f, 3}, 5, 1e-7);

    opt_init(&h, &k_names, OP_LEAKY_RELU, 16, 1, 1);
    opt_attr_float(&h, "alpha", 0.5f);
    check_f32(&h, x, (float[]){-1, -0.25f, 0, 0.5f, 3}, 5, 0);

    opt_init(&h, &k_names, OP_ELU, 6, 1, 1);
    opt_attr_float(&h, "alpha", 2.0f);
    check_f32(&h, (float[]){-1, 1}, (float[]){2 * (float)expm1(-1.0), 1}, 2, 1e-6);

    opt_init(&h, &k_names, OP_SELU, 6, 1, 1);
    check_f32(&h, (float[]){-1, 2},
              (float[]){(float)(1.0507009873554805 * 1.6732632423543772 * expm1(-1.0)),
                        2 * 1.0507009873554805f},
              2, 1e-6);

    opt_init(&h, &k_names, OP_CELU, 12, 1, 1);
    opt_attr_float(&h, "alpha", 2.0f);
    check_f32(&h, (float[]){-2, 3}, (float[]){2 * (float)expm1(-1.0), 3}, 2, 1e-6);

    opt_init(&h, &k_names, OP_THRESHOLDED_RELU, 10, 1, 1);
    check_f32(&h, (float[]){0.5f, 1.0f, 1.5f}, (float[]){0, 0, 1.5f}, 3, 0);

    opt_init(&h, &k_names, OP_HARD_SIGMOID, 6, 1, 1);
    opt_attr_float(&h, "alpha", 0.5f);
    opt_attr_float(&h, "beta", 0.6f);
    check_f32(&h, (float[]){-2, 0, 2}, (float[]){0, 0.6f, 1}, 3, 1e-7);

    opt_init(&h, &k_names, OP_GELU, 20, 1, 1);
    check_f32(&h, (float[]){-1, 0, 1}, (float[]){-0.15865525f, 0, 0.84134475f}, 3, 1e-6);

    opt_init(&h, &k_names, OP_GELU, 20, 1, 1);
    opt_attr_string(&h, "approximate", "tanh");
    check_f32(&h, (float[]){1}, (float[]){0.8411920f}, 1, 1e-6);
}

static void test_math(void)
{
    unary_f32(OP_ROUND, (float[]){0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.3f, -2.7f},
              (float[]){0, 2, 2, -0.0f, -2, 2, -3}, 7, 0);
    unary_f32(OP_SIGN, (float[]){-3, 0, 2, NAN}, (float[]){-1, 0, 1, NAN}, 4, 0);
    unary_f32(OP_FLOOR, (float[]){-1.5f, 1.5f}, (float[]){-2, 1}, 2, 0);
    unary_f32(OP_CEIL, (float[]){-1.5f, 1.5f}, (float[]){-1, 2}, 2, 0);
    unary_f32(OP_RECIPROCAL, (float[]){4, -0.5f}, (float[]){0.25f, -2}, 2, 0);
    unary_f32(OP_SQRT, (float[]){4, -1}, (float[]){2, NAN}, 2, 0);
    unary_f32(OP_LOG, (float[]){1, (float)M_E}, (float[]){0, 1}, 2, 1e-7);
    unary_f32(OP_EXP, (float[]){0, 1}, (float[]){1, (float)M_E}, 2, 1e-6);
    unary_f32(OP_NEG, (float[]){1, -2}, (float[]){-1, 2}, 2, 0);
    unary_f32(OP_ABS, (float[]){-1, 2}, (float[]){1, 2}, 2, 0);
    unary_f32(OP_TANH, (float[]){0, 1000}, (float[]){0, 1}, 2, 0);
    unary_f32(OP_SIN, (float[]){0}, (float[]){0}, 1, 0);
    unary_f32(OP_COS, (float[]){0}, (float[]){1}, 1, 0);
    /* Mish, Swish, Shrink (added for issue #14) */
    unary_f32(OP_MISH, (float[]){0, 1, -30}, (float[]){0, 0.8650984f, 0}, 3, 1e-6);
    {
        opt_node h;
        opt_init(&h, &k_names, OP_SWISH, 24, 1, 1);
        opt_attr_float(&h, "alpha", 2.0f);
        check_f32(&h, (float[]){0, 1}, (float[]){0, 0.8807971f}, 2, 1e-6);
        opt_init(&h, &k_names, OP_SHRINK, 9, 1, 1);
        opt_attr_float(&h, "lambd", 1.0f);
        opt_attr_float(&h, "bias", 0.5f);
        check_f32(&h, (float[]){-2, -1, 0.5f, 1.5f}, (float[]){-1.5f, 0, 0, 1}, 4, 0);
    }
    /* trigonometric and hyperbolic functions (added for issue #14) */
    unary_f32(OP_TAN, (float[]){0, 0.5f}, (float[]){0, 0.5463025f}, 2, 1e-7);
    unary_f32(OP_ASIN, (float[]){0.5f, 2}, (float[]){0.5235988f, NAN}, 2, 1e-7);
    unary_f32(OP_ACOS, (float[]){0.5f, -1}, (float[]){1.0471976f, 3.1415927f}, 2, 1e-7);
    unary_f32(OP_ATAN, (float[]){1, INFINITY}, (float[]){0.7853982f, 1.5707964f}, 2, 1e-7);
    unary_f32(OP_SINH, (float[]){1, -1}, (float[]){1.1752012f, -1.1752012f}, 2, 1e-7);
    unary_f32(OP_COSH, (float[]){1, 0}, (float[]){1.5430806348f, 1}, 2, 1e-7);
    unary_f32(OP_ASINH, (float[]){1, 0}, (float[]){0.8813736f, 0}, 2, 1e-7);
    unary_f32(OP_ACOSH, (float[]){2, 0.5f}, (float[]){1.3169579f, NAN}, 2, 1e-7);
    unary_f32(OP_ATANH, (float[]){0.5f, 1}, (float[]){0.5493061f, INFINITY}, 2, 1e-7);
}

static void test_double_and_half(void)
{
    opt_node h;
    double xd[] = {-1.5, 2.25};
    opt_init(&h, &k_names, OP_ABS, 13, 1, 1);
    smelt_tensor x = opt_vec(F64, 2, xd);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    CHECK(h.out[0].dtype == F64 && ((double *)h.out[0].data)[0] == 1.5);
    opt_fini(&h);

    uint16_t xh[] = {smelt_f32_to_f16(-2.0f), smelt_f32_to_f16(0.5f)};
    opt_init(&h, &k_names, OP_RELU, 14, 1, 1);
    x = opt_vec(F16, 2, xh);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    CHECK(h.out[0].dtype == F16);
    CHECK(smelt_f16_to_f32(((uint16_t *)h.out[0].data)[0]) == 0.0f);
    CHECK(smelt_f16_to_f32(((uint16_t *)h.out[0].data)[1]) == 0.5f);
    opt_fini(&h);
}

static void test_integers(void)
{
    opt_node h;
    int8_t xi[] = {-128, -3, 0, 5};
    smelt_tensor x = opt_vec(I8, 4, xi);

    opt_init(&h, &k_names, OP_ABS, 13, 1, 1);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    int8_t *y = h.out[0].data;
    CHECK(y[0] == -128 && y[1] == 3 && y[2] == 0 && y[3] == 5); /* wraps like numpy */
    opt_fini(&h);

    opt_init(&h, &k_names, OP_NEG, 13, 1, 1);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    y = h.out[0].data;
    CHECK(y[0] == -128 && y[1] == 3 && y[3] == -5);
    opt_fini(&h);

    opt_init(&h, &k_names, OP_RELU, 14, 1, 1);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    y = h.out[0].data;
    CHECK(y[0] == 0 && y[1] == 0 && y[3] == 5);
    opt_fini(&h);

    uint64_t xu[] = {0, UINT64_MAX};
    opt_init(&h, &k_names, OP_SIGN, 13, 1, 1);
    x = opt_vec(U64, 2, xu);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    CHECK(((uint64_t *)h.out[0].data)[0] == 0 && ((uint64_t *)h.out[0].data)[1] == 1);
    opt_fini(&h);

    opt_init(&h, &k_names, OP_ABS, 13, 1, 1);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    CHECK(((uint64_t *)h.out[0].data)[1] == UINT64_MAX);
    opt_fini(&h);
}

static void test_clip(void)
{
    opt_node h;
    float xs[] = {-3, -1, 0, 2, NAN};
    float lo = -2, hi = 1;
    smelt_tensor in[3] = {opt_vec(F32, 5, xs), opt_tensor(F32, 0, NULL, &lo),
                          opt_tensor(F32, 0, NULL, &hi)};
    opt_init(&h, &k_names, OP_CLIP, 13, 3, 1);
    CHECK(opt_run(&h, in, 3) == SMELT_OK);
    float *y = h.out[0].data;
    CHECK(y[0] == -2 && y[1] == -1 && y[2] == 0 && y[3] == 1 && isnan(y[4]));
    opt_fini(&h);

    /* max only: input 1 omitted */
    opt_init(&h, &k_names, OP_CLIP, 13, 3, 1);
    opt_omit_input(&h, 1);
    smelt_tensor max_only[3] = {in[0], {0}, in[2]};
    CHECK(opt_run(&h, max_only, 3) == SMELT_OK);
    y = h.out[0].data;
    CHECK(y[0] == -3 && y[3] == 1);
    opt_fini(&h);

    /* min > max: everything becomes max */
    float big = 5;
    smelt_tensor crossed[3] = {in[0], opt_tensor(F32, 0, NULL, &big), in[2]};
    opt_init(&h, &k_names, OP_CLIP, 13, 3, 1);
    CHECK(opt_run(&h, crossed, 3) == SMELT_OK);
    CHECK(((float *)h.out[0].data)[0] == 1 && ((float *)h.out[0].data)[3] == 1);
    opt_fini(&h);

    /* opset 6: min/max attributes become inputs */
    opt_init(&h, &k_names, OP_CLIP, 6, 1, 1);
    opt_attr_float(&h, "min", -0.5f);
    opt_attr_float(&h, "max", 0.5f);
    CHECK(opt_run(&h, in, 1) == SMELT_OK);
    CHECK(h.node->n_inputs == 3);
    y = h.out[0].data;
    CHECK(y && y[0] == -0.5f && y[2] == 0 && y[3] == 0.5f);
    opt_fini(&h);

    /* opset 6 with only max: input 1 stays omitted */
    opt_init(&h, &k_names, OP_CLIP, 6, 1, 1);
    opt_attr_float(&h, "max", 0.5f);
    CHECK(opt_run(&h, in, 1) == SMELT_OK);
    CHECK(h.node->n_inputs == 3 && h.node->inputs[1] == NULL);
    CHECK(((float *)h.out[0].data)[0] == -3 && ((float *)h.out[0].data)[3] == 0.5f);
    opt_fini(&h);

    int8_t xi[] = {-128, 0, 127}, ilo = -5, ihi = 100;
    smelt_tensor iin[3] = {opt_vec(I8, 3, xi), opt_tensor(I8, 0, NULL, &ilo),
                           opt_tensor(I8, 0, NULL, &ihi)};
    opt_init(&h, &k_names, OP_CLIP, 13, 3, 1);
    CHECK(opt_run(&h, iin, 3) == SMELT_OK);
    int8_t *yi = h.out[0].data;
    CHECK(yi[0] == -5 && yi[1] == 0 && yi[2] == 100);
    opt_fini(&h);

    /* errors: bound dtype, bound shape */
    smelt_tensor bad[3] = {iin[0], in[1], {0}};
    opt_init(&h, &k_names, OP_CLIP, 13, 2, 1);
    CHECK(opt_run(&h, bad, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "input 'x1' has dtype f32, expected i8");
    opt_fini(&h);

    float two[2] = {0, 1};
    smelt_tensor wide[2] = {in[0], opt_vec(F32, 2, two)};
    opt_init(&h, &k_names, OP_CLIP, 13, 2, 1);
    CHECK(opt_run(&h, wide, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "must be a scalar");
    opt_fini(&h);
}

static void test_cast(void)
{
    opt_node h;
    float xs[] = {1.5f, -2.75f, NAN, 1e10f, -1e10f, 0.0f};
    smelt_tensor x = opt_vec(F32, 6, xs);

    opt_init(&h, &k_names, OP_CAST, 13, 1, 1);
    opt_attr_int(&h, "to", I32);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    int32_t *yi = h.out[0].data;
    CHECK(h.out[0].dtype == I32);
    CHECK(yi[0] == 1 && yi[1] == -2 && yi[2] == 0 && yi[5] == 0); /* truncation, NaN -> 0 */
    opt_fini(&h);

    opt_init(&h, &k_names, OP_CAST, 13, 1, 1);
    opt_attr_int(&h, "to", BOOL);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    uint8_t *yb = h.out[0].data;
    CHECK(yb[0] == 1 && yb[2] == 1 && yb[5] == 0);
    opt_fini(&h);

    opt_init(&h, &k_names, OP_CAST, 13, 1, 1);
    opt_attr_int(&h, "to", F16);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    uint16_t *yh = h.out[0].data;
    CHECK(smelt_f16_to_f32(yh[0]) == 1.5f && smelt_f16_to_f32(yh[1]) == -2.75f);
    CHECK(isnan(smelt_f16_to_f32(yh[2])) && isinf(smelt_f16_to_f32(yh[3])));
    opt_fini(&h);

    /* double -> f16 rounds once: 1 + 2^-11 + 2^-40 is just above the halfway
     * point between two halves; a detour through float would round to even. */
    double xd[] = {1.0 + ldexp(1, -11) + ldexp(1, -40)};
    opt_init(&h, &k_names, OP_CAST, 13, 1, 1);
    opt_attr_int(&h, "to", F16);
    x = opt_vec(F64, 1, xd);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    CHECK(smelt_f16_to_f32(((uint16_t *)h.out[0].data)[0]) == 1.0f + 1.0f / 1024);
    opt_fini(&h);

    int64_t xl[] = {300, -1, INT64_MIN};
    opt_init(&h, &k_names, OP_CAST, 13, 1, 1);
    opt_attr_int(&h, "to", U8);
    x = opt_vec(I64, 3, xl);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    uint8_t *yu = h.out[0].data;
    CHECK(yu[0] == 44 && yu[1] == 255 && yu[2] == 0); /* wraps */
    opt_fini(&h);

    uint8_t xb[] = {1, 0};
    opt_init(&h, &k_names, OP_CAST, 1, 1, 1);
    opt_attr_string(&h, "to", "FLOAT"); /* Cast-1 form */
    x = opt_vec(BOOL, 2, xb);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    CHECK(h.out[0].dtype == F32 && ((float *)h.out[0].data)[0] == 1.0f);
    opt_fini(&h);

    float like = 0;
    smelt_tensor cl[2] = {opt_vec(I64, 2, xl), opt_tensor(F32, 0, NULL, &like)};
    opt_init(&h, &k_names, OP_CAST_LIKE, 15, 2, 1);
    CHECK(opt_run(&h, cl, 2) == SMELT_OK);
    CHECK(h.out[0].dtype == F32 && h.out[0].dims[0] == 2);
    CHECK(((float *)h.out[0].data)[0] == 300.0f && ((float *)h.out[0].data)[1] == -1.0f);
    opt_fini(&h);

    /* errors */
    opt_init(&h, &k_names, OP_CAST, 13, 1, 1);
    opt_attr_int(&h, "to", SMELT_DT_STRING);
    CHECK(opt_run(&h, &x, 1) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "node 'n0' (Cast): casting to string");
    opt_fini(&h);

    opt_init(&h, &k_names, OP_CAST, 13, 1, 1);
    CHECK(opt_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "missing required attribute 'to'");
    opt_fini(&h);

    opt_init(&h, &k_names, OP_CAST, 13, 1, 1);
    opt_attr_int(&h, "to", 99);
    CHECK(opt_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "'to' is 99");
    opt_fini(&h);

    /* ONNX's 6-bit floats: real types smelt lacks (17..26 cast: test_cast_lowbit) */
    opt_init(&h, &k_names, OP_CAST, 25, 1, 1);
    opt_attr_int(&h, "to", 27);
    CHECK(opt_run(&h, &x, 1) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "'to' is 27 (FLOAT6E2M3): casting to this");
    opt_fini(&h);
    opt_init(&h, &k_names, OP_CAST, 25, 1, 1);
    opt_attr_int(&h, "to", 29);
    CHECK(opt_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "'to' is 29, not a known dtype");
    opt_fini(&h);

    opt_init(&h, &k_names, OP_CAST, 25, 1, 1);
    opt_attr_int(&h, "to", SMELT_DT_FLOAT8E8M0);
    opt_attr_string(&h, "round_mode", "odd");
    CHECK(opt_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "'round_mode' is 'odd'");
    opt_fini(&h);
}

/* Cast's reference kernel to ONNX's low-bit types: spec values (the
 * conversions themselves are checked against ml_dtypes by check_lowbit.py). */
static uint8_t cast_one_code(smelt_dtype to, float v, int64_t saturate, const char *round)
{
    opt_node h;
    smelt_tensor x = opt_vec(F32, 1, &v);
    opt_init(&h, &k_names, OP_CAST, 25, 1, 1);
    opt_attr_int(&h, "to", to);
    opt_attr_int(&h, "saturate", saturate);
    if (round) opt_attr_string(&h, "round_mode", round);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    CHECK(h.out[0].dtype == to && h.out[0].rank == 1 && h.out[0].dims[0] == 1);
    uint8_t code = *(const uint8_t *)h.out[0].data;
    opt_fini(&h);
    return code;
}

static void test_cast_lowbit(void)
{
    /* E4M3FN: 448 is the largest value; 464 is the tie with the NaN code */
    CHECK(cast_one_code(SMELT_DT_FLOAT8E4M3FN, 464.0f, 0, NULL) == 0x7E);
    CHECK(cast_one_code(SMELT_DT_FLOAT8E4M3FN, 470.0f, 0, NULL) == 0x7F);  /* NaN */
    CHECK(cast_one_code(SMELT_DT_FLOAT8E4M3FN, 470.0f, 1, NULL) == 0x7E);  /* saturated */
    CHECK(cast_one_code(SMELT_DT_FLOAT8E4M3FN, -INFINITY, 1, NULL) == 0xFE);
    CHECK(cast_one_code(SMELT_DT_FLOAT8E4M3FN, -INFINITY, 0, NULL) == 0xFF);
    CHECK(cast_one_code(SMELT_DT_FLOAT8E4M3FN, -0.0f, 1, NULL) == 0x80);
    CHECK(cast_one_code(SMELT_DT_FLOAT8E4M3FNUZ, -0.0f, 1, NULL) == 0x00); /* no -0 */
    CHECK(cast_one_code(SMELT_DT_FLOAT8E4M3FNUZ, NAN, 1, NULL) == 0x80);
    CHECK(cast_one_code(SMELT_DT_FLOAT8E5M2, INFINITY, 0, NULL) == 0x7C);   /* Inf */
    CHECK(cast_one_code(SMELT_DT_FLOAT8E5M2, 1e6f, 1, NULL) == 0x7B);       /* 57344 */
    CHECK(cast_one_code(SMELT_DT_FLOAT8E5M2FNUZ, 1e6f, 0, NULL) == 0x80);   /* NaN */
    /* subnormal ties to even: 2^-9 and 3 * 2^-10 in E4M3FN (unit 2^-9) */
    CHECK(cast_one_code(SMELT_DT_FLOAT8E4M3FN, 0x1p-10f, 1, NULL) == 0x00);
    CHECK(cast_one_code(SMELT_DT_FLOAT8E4M3FN, 0x3p-10f, 1, NULL) == 0x02);
    /* float4 E2M1: +-6 at most, NaN -> +6 (ONNX's float4 spec) */
    CHECK(cast_one_code(SMELT_DT_FLOAT4E2M1, 5.0f, 1, NULL) == 0x6);       /* tie 4|6 -> 4 */
    CHECK(cast_one_code(SMELT_DT_FLOAT4E2M1, -100.0f, 0, NULL) == 0xF);
    CHECK(cast_one_code(SMELT_DT_FLOAT4E2M1, NAN, 1, NULL) == 0x7);
    /* E8M0: 3 = 1.5 * 2^1 -> 2^2 up, 2^1 down, 2^2 nearest */
    CHECK(cast_one_code(SMELT_DT_FLOAT8E8M0, 3.0f, 1, "up") == 129);
    CHECK(cast_one_code(SMELT_DT_FLOAT8E8M0, 3.0f, 1, "down") == 128);
    CHECK(cast_one_code(SMELT_DT_FLOAT8E8M0, 3.0f, 1, "nearest") == 129);
    CHECK(cast_one_code(SMELT_DT_FLOAT8E8M0, INFINITY, 1, "up") == 0xFE);
    /* 4- and 2-bit integers: truncation, then the low bits */
    CHECK((int8_t)cast_one_code(SMELT_DT_INT4, 7.9f, 1, NULL) == 7);
    CHECK((int8_t)cast_one_code(SMELT_DT_INT4, 9.0f, 1, NULL) == -7);
    CHECK(cast_one_code(SMELT_DT_UINT4, -1.0f, 1, NULL) == 15);
    CHECK((int8_t)cast_one_code(SMELT_DT_INT2, 2.0f, 1, NULL) == -2);
    CHECK(cast_one_code(SMELT_DT_UINT2, 5.0f, 1, NULL) == 1);

    /* uint64 past 2^63 is positive (it once went through int64) */
    opt_node h;
    uint64_t big = (uint64_t)1 << 63;
    smelt_tensor x = opt_vec(U64, 1, &big);
    opt_init(&h, &k_names, OP_CAST, 25, 1, 1);
    opt_attr_int(&h, "to", SMELT_DT_FLOAT8E4M3FN);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    CHECK(*(const uint8_t *)h.out[0].data == 0x7E);
    opt_fini(&h);
}

static void test_logic_and_tests(void)
{
    opt_node h;
    float xs[] = {-INFINITY, 1, INFINITY, NAN};
    smelt_tensor x = opt_vec(F32, 4, xs);

    opt_init(&h, &k_names, OP_IS_INF, 10, 1, 1);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    uint8_t *y = h.out[0].data;
    CHECK(h.out[0].dtype == BOOL && y[0] && !y[1] && y[2] && !y[3]);
    opt_fini(&h);

    opt_init(&h, &k_names, OP_IS_INF, 10, 1, 1);
    opt_attr_int(&h, "detect_negative", 0);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    y = h.out[0].data;
    CHECK(!y[0] && y[2]);
    opt_fini(&h);

    opt_init(&h, &k_names, OP_IS_NAN, 13, 1, 1);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    y = h.out[0].data;
    CHECK(!y[0] && !y[2] && y[3]);
    opt_fini(&h);

    uint8_t b[] = {1, 0};
    opt_init(&h, &k_names, OP_NOT, 1, 1, 1);
    x = opt_vec(BOOL, 2, b);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    y = h.out[0].data;
    CHECK(y[0] == 0 && y[1] == 1);
    opt_fini(&h);
}

static void test_shapes_and_errors(void)
{
    opt_node h;
    /* symbolic dims pass through; empty tensors work */
    int64_t dims[3] = {GR_DIM_SYM(0), 0, 4};
    opt_init(&h, &k_names, OP_TANH, 13, 1, 1);
    smelt_tensor x = opt_tensor(F32, 3, dims, NULL);
    const smelt_tensor *in[1] = {&x};
    smelt_tensor out;
    memset(&out, 0, sizeof out);
    CHECK(op_get(OP_TANH)->def->infer(h.ctx, h.node, in, &out) == SMELT_OK);
    CHECK(out.rank == 3 && out.dims[0] == GR_DIM_SYM(0) && out.dims[2] == 4);
    opt_fini(&h);

    int64_t zero = 0;
    opt_init(&h, &k_names, OP_SIGMOID, 13, 1, 1);
    x = opt_tensor(F32, 1, &zero, &zero);
    CHECK(opt_run(&h, &x, 1) == SMELT_OK);
    opt_fini(&h);

    uint8_t u[] = {1};
    opt_init(&h, &k_names, OP_RELU, 14, 1, 1);
    x = opt_vec(U8, 1, u);
    CHECK(opt_run(&h, &x, 1) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx),
                       "node 'n0' (Relu): input 'x0' has unsupported dtype u8");
    opt_fini(&h);

    opt_init(&h, &k_names, OP_GELU, 20, 1, 1);
    opt_attr_string(&h, "approximate", "fast");
    CHECK(opt_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "'approximate' is 'fast'");
    opt_fini(&h);

    opt_init(&h, &k_names, OP_LEAKY_RELU, 16, 1, 1);
    opt_attr_string(&h, "alpha", "big");
    CHECK(opt_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "attribute 'alpha' has type string");
    opt_fini(&h);

    opt_init(&h, &k_names, OP_CELU, 12, 1, 1);
    opt_attr_float(&h, "alpha", 0.0f);
    CHECK(opt_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "'alpha' must be non-zero");
    opt_fini(&h);

    opt_check_family_defined("elementwise");
}

int main(void)
{
    CHECK(op_get(OP_RELU)->def == &op_def_RELU);
    test_activations();
    test_math();
    test_double_and_half();
    test_integers();
    test_clip();
    test_cast();
    test_cast_lowbit();
    test_logic_and_tests();
    test_shapes_and_errors();
    TEST_MAIN_END();
}
