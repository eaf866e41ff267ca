/* Unary elementwise ops: activations, math functions, float tests, casts.
 *
 * Every float op is one scalar function over double (the most accurate
 * oracle: the result is rounded once, to the output dtype).  Kernels apply
 * it with typed loops for f32/f64 and through the generic accessors for
 * f16/bf16.  Integer inputs (where ONNX allows them) use exact integer
 * functions instead of a detour through double.
 */
#include <float.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "ops/elementwise.h"
#include "smelt_lowbit.h"
#include "te/te.h"

/* ---- dtype sets ---------------------------------------------------------- */

#define FLOAT_TYPES SMELT_DT_FLOAT16, SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_BFLOAT16
#define SIGNED_TYPES SMELT_DT_INT8, SMELT_DT_INT16, SMELT_DT_INT32, SMELT_DT_INT64
#define UNSIGNED_TYPES SMELT_DT_UINT8, SMELT_DT_UINT16, SMELT_DT_UINT32, SMELT_DT_UINT64

static const smelt_dtype k_floats[] = {FLOAT_TYPES, SMELT_DT_UNDEFINED};
static const smelt_dtype k_signed_or_float[] = {FLOAT_TYPES, SIGNED_TYPES, SMELT_DT_UNDEFINED};
static const smelt_dtype k_numeric[] = {FLOAT_TYPES, SIGNED_TYPES, UNSIGNED_TYPES,
                                        SMELT_DT_UNDEFINED};
static const smelt_dtype k_bool[] = {SMELT_DT_BOOL, SMELT_DT_UNDEFINED};
#define LOWBIT_TYPES                                                                        \
    SMELT_DT_FLOAT8E4M3FN, SMELT_DT_FLOAT8E4M3FNUZ, SMELT_DT_FLOAT8E5M2,                      \
        SMELT_DT_FLOAT8E5M2FNUZ, SMELT_DT_UINT4, SMELT_DT_INT4, SMELT_DT_FLOAT4E2M1,          \
        SMELT_DT_FLOAT8E8M0, SMELT_DT_UINT2, SMELT_DT_INT2
static const smelt_dtype k_castable[] = {FLOAT_TYPES,   SIGNED_TYPES,  UNSIGNED_TYPES,
                                         SMELT_DT_BOOL, LOWBIT_TYPES, SMELT_DT_UNDEFINED};

static bool dtype_is_unsigned(smelt_dtype dt)
{
    return dt == SMELT_DT_UINT8 || dt == SMELT_DT_UINT16 || dt == SMELT_DT_UINT32 ||
           dt == SMELT_DT_UINT64;
}

/* ---- stores with a single rounding ------------------------------------------ */

/* Round to float with round-to-odd, so that a second rounding to f16/bf16
 * gives the correctly rounded result of the double (no double rounding). */
static float f64_to_f32_round_odd(double d)
{
    float f = (float)d;
    if (!isfinite(f) || (double)f == d) return f;
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f); /* truncate toward zero */
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits |= 1;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void store_f64(smelt_tensor *t, int64_t i, double v)
{
    if (t->dtype == SMELT_DT_FLOAT16)
        ((uint16_t *)t->data)[i] = smelt_f32_to_f16(f64_to_f32_round_odd(v));
    else if (t->dtype == SMELT_DT_BFLOAT16)
        ((uint16_t *)t->data)[i] = smelt_f32_to_bf16(f64_to_f32_round_odd(v));
    else
        op_set_f64(t, i, v);
}

/* ---- scalar functions ---------------------------------------------------------- */

typedef double (*unary_f64_fn)(double x, const op_unary_attrs *a);
typedef int64_t (*unary_i64_fn)(int64_t x);
typedef uint64_t (*unary_u64_fn)(uint64_t x);

/* Comparisons are written so that NaN falls through to x (NaN in, NaN out). */
static double relu_f(double x, const op_unary_attrs *a) { (void)a; return x < 0 ? 0.0 : x; }
static double leaky_relu_f(double x, const op_unary_attrs *a) { return x < 0 ? a->alpha * x : x; }
static double elu_f(double x, const op_unary_attrs *a) { return x < 0 ? a->alpha * expm1(x) : x; }
static double selu_f(double x, const op_unary_attrs *a)
{
    return x <= 0 ? a->gamma * a->alpha * expm1(x) : a->gamma * x;
}
static double celu_f(double x, const op_unary_attrs *a)
{
    return x < 0 ? a->alpha * expm1(x / a->alpha) : x;
}
static double thresholded_relu_f(double x, const op_unary_attrs *a)
{
    return x > a->alpha ? x : 0.0;
}
static double clamp01(double v) { return v < 0 ? 0.0 : v > 1 ? 1.0 : v; }
static double hard_sigmoid_f(double x, const op_unary_attrs *a)
{
    return clamp01(a->alpha * x + a->beta);
}
static double hard_swish_f(double x, const op_unary_attrs *a)
{
    return x * clamp01(a->alpha * x + a->beta);
}
static double sigmoid_f(double x, const op_unary_attrs *a)
{
    (void)a;
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x); /* no overflow for very negative x */
    return e / (1.0 + e);
}
static double softplus_f(double x, const op_unary_attrs *a)
{
    (void)a;
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}
static double softsign_f(double x, const op_unary_attrs *a) { (void)a; return x / (1.0 + fabs(x)); }
static double gelu_f(double x, const op_unary_attrs *a)
{
    if (a->gelu_tanh) {
        const double k = 0.79788456080286535588; /* sqrt(2/pi) */
        return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
    }
    return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
}
static double tanh_f(double x, const op_unary_attrs *a) { (void)a; return tanh(x); }
static double erf_f(double x, const op_unary_attrs *a) { (void)a; return erf(x); }
static double exp_f(double x, const op_unary_attrs *a) { (void)a; return exp(x); }
static double log_f(double x, const op_unary_attrs *a) { (void)a; return log(x); }
static double sqrt_f(double x, const op_unary_attrs *a) { (void)a; return sqrt(x); }
static double reciprocal_f(double x, const op_unary_attrs *a) { (void)a; return 1.0 / x; }
static double neg_f(double x, const op_unary_attrs *a) { (void)a; return -x; }
static double abs_f(double x, const op_unary_attrs *a) { (void)a; return fabs(x); }
static double floor_f(double x, const op_unary_attrs *a) { (void)a; return floor(x); }
static double ceil_f(double x, const op_unary_attrs *a) { (void)a; return ceil(x); }
/* nearbyint in the default rounding mode rounds halves to even, as ONNX asks. */
static double round_f(double x, const op_unary_attrs *a) { (void)a; return nearbyint(x); }
static double sign_f(double x, const op_unary_attrs *a)
{
    (void)a;
    return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
}
static double mish_f(double x, const op_unary_attrs *a) { return x * tanh(softplus_f(x, a)); }
static double swish_f(double x, const op_unary_attrs *a) { return x / (1.0 + exp(-a->alpha * x)); }
static double shrink_f(double x, const op_unary_attrs *a)
{
    return x < -a->alpha ? x + a->beta : x > a->alpha ? x - a->beta : 0.0;
}
static double sin_f(double x, const op_unary_attrs *a) { (void)a; return sin(x); }
static double cos_f(double x, const op_unary_attrs *a) { (void)a; return cos(x); }
static double tan_f(double x, const op_unary_attrs *a) { (void)a; return tan(x); }
static double asin_f(double x, const op_unary_attrs *a) { (void)a; return asin(x); }
static double acos_f(double x, const op_unary_attrs *a) { (void)a; return acos(x); }
static double atan_f(double x, const op_unary_attrs *a) { (void)a; return atan(x); }
static double sinh_f(double x, const op_unary_attrs *a) { (void)a; return sinh(x); }
static double cosh_f(double x, const op_unary_attrs *a) { (void)a; return cosh(x); }
static double asinh_f(double x, const op_unary_attrs *a) { (void)a; return asinh(x); }
static double acosh_f(double x, const op_unary_attrs *a) { (void)a; return acosh(x); }
static double atanh_f(double x, const op_unary_attrs *a) { (void)a; return atanh(x); }

/* Integer forms wrap like two's complement (Neg/Abs of the minimum stay the
 * minimum after truncation to the dtype) without signed-overflow UB. */
static int64_t relu_i(int64_t x) { return x < 0 ? 0 : x; }
static int64_t neg_i(int64_t x) { return (int64_t)(0u - (uint64_t)x); }
static int64_t abs_i(int64_t x) { return x < 0 ? neg_i(x) : x; }
static int64_t sign_i(int64_t x) { return (x > 0) - (x < 0); }
static uint64_t abs_u(uint64_t x) { return x; }
static uint64_t sign_u(uint64_t x) { return x != 0; }

/* fi/fu NULL: integer inputs (if allowed) go through f and are truncated. */
typedef struct unary_op {
    unary_f64_fn f;
    unary_i64_fn fi;
    unary_u64_fn fu;
    const smelt_dtype *types;
} unary_op;

static const unary_op g_unary[OP_COUNT_] = {
    [OP_RELU] = {relu_f, relu_i, NULL, k_signed_or_float},
    [OP_LEAKY_RELU] = {leaky_relu_f, NULL, NULL, k_floats},
    [OP_ELU] = {elu_f, NULL, NULL, k_floats},
    [OP_SELU] = {selu_f, NULL, NULL, k_floats},
    [OP_CELU] = {celu_f, NULL, NULL, k_floats},
    [OP_THRESHOLDED_RELU] = {thresholded_relu_f, NULL, NULL, k_floats},
    [OP_SIGMOID] = {sigmoid_f, NULL, NULL, k_floats},
    [OP_HARD_SIGMOID] = {hard_sigmoid_f, NULL, NULL, k_floats},
    [OP_HARD_SWISH] = {hard_swish_f, NULL, NULL, k_floats},
    [OP_SOFTPLUS] = {softplus_f, NULL, NULL, k_floats},
    [OP_SOFTSIGN] = {softsign_f, NULL, NULL, k_floats},
    [OP_TANH] = {tanh_f, NULL, NULL, k_floats},
    [OP_ERF] = {erf_f, NULL, NULL, k_numeric},
    [OP_GELU] = {gelu_f, NULL, NULL, k_floats},
    [OP_EXP] = {exp_f, NULL, NULL, k_floats},
    [OP_LOG] = {log_f, NULL, NULL, k_floats},
    [OP_SQRT] = {sqrt_f, NULL, NULL, k_floats},
    [OP_RECIPROCAL] = {reciprocal_f, NULL, NULL, k_floats},
    [OP_NEG] = {neg_f, neg_i, NULL, k_signed_or_float},
    [OP_ABS] = {abs_f, abs_i, abs_u, k_numeric},
    [OP_FLOOR] = {floor_f, NULL, NULL, k_floats},
    [OP_CEIL] = {ceil_f, NULL, NULL, k_floats},
    [OP_ROUND] = {round_f, NULL, NULL, k_floats},
    [OP_SIGN] = {sign_f, sign_i, sign_u, k_numeric},
    [OP_MISH] = {mish_f, NULL, NULL, k_floats},
    [OP_SWISH] = {swish_f, NULL, NULL, k_floats},
    [OP_SHRINK] = {shrink_f, NULL, NULL, k_floats},
    [OP_SIN] = {sin_f, NULL, NULL, k_floats},
    [OP_COS] = {cos_f, NULL, NULL, k_floats},
    [OP_TAN] = {tan_f, NULL, NULL, k_floats},
    [OP_ASIN] = {asin_f, NULL, NULL, k_floats},
    [OP_ACOS] = {acos_f, NULL, NULL, k_floats},
    [OP_ATAN] = {atan_f, NULL, NULL, k_floats},
    [OP_SINH] = {sinh_f, NULL, NULL, k_floats},
    [OP_COSH] = {cosh_f, NULL, NULL, k_floats},
    [OP_ASINH] = {asinh_f, NULL, NULL, k_floats},
    [OP_ACOSH] = {acosh_f, NULL, NULL, k_floats},
    [OP_ATANH] = {atanh_f, NULL, NULL, k_floats},
};

/* ---- import ------------------------------------------------------------------------ */

static const op_unary_attrs k_no_attrs;

static const op_unary_attrs *attrs_of(const gr_node *n)
{
    return n->op_attrs ? n->op_attrs : &k_no_attrs;
}

static smelt_status read_alpha(smelt_ctx *ctx, const gr_node *n, float def, op_unary_attrs *a)
{
    float v;
    SMELT_TRY(op_attr_float(ctx, n, "alpha", def, &v));
    a->alpha = v;
    return SMELT_OK;
}

static smelt_status import_selu(smelt_ctx *ctx, const gr_node *n, op_unary_attrs *a)
{
    float gamma;
    SMELT_TRY(read_alpha(ctx, n, 1.67326319217681884765625f, a));
    SMELT_TRY(op_attr_float(ctx, n, "gamma", 1.05070102214813232421875f, &gamma));
    a->gamma = gamma;
    return SMELT_OK;
}

static smelt_status import_hard_sigmoid(smelt_ctx *ctx, const gr_node *n, op_unary_attrs *a)
{
    float beta;
    SMELT_TRY(read_alpha(ctx, n, 0.2f, a));
    SMELT_TRY(op_attr_float(ctx, n, "beta", 0.5f, &beta));
    a->beta = beta;
    return SMELT_OK;
}

static smelt_status import_celu(smelt_ctx *ctx, const gr_node *n, op_unary_attrs *a)
{
    SMELT_TRY(read_alpha(ctx, n, 1.0f, a));
    if (a->alpha == 0)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'alpha' must be non-zero");
    return SMELT_OK;
}

static smelt_status import_gelu(smelt_ctx *ctx, const gr_node *n, op_unary_attrs *a)
{
    const char *mode;
    SMELT_TRY(op_attr_string(ctx, n, "approximate", "none", &mode));
    if (strcmp(mode, "tanh") == 0)
        a->gelu_tanh = true;
    else if (strcmp(mode, "none") != 0)
        return op_errf(ctx, n, SMELT_ERR_ATTR,
                       "attribute 'approximate' is '%s', expected 'none' or 'tanh'", mode);
    return SMELT_OK;
}

static smelt_status import_is_inf(smelt_ctx *ctx, const gr_node *n, op_unary_attrs *a)
{
    SMELT_TRY(op_attr_bool(ctx, n, "detect_negative", true, &a->detect_neg));
    return op_attr_bool(ctx, n, "detect_positive", true, &a->detect_pos);
}

/* saturate (Cast-19) shapes conversions to the float8 types, round_mode
 * (Cast-24) those to E8M0; other targets ignore both, as ONNX says. */
static smelt_status import_float8_options(smelt_ctx *ctx, const gr_node *n, op_unary_attrs *a)
{
    bool saturate;
    const char *round;
    SMELT_TRY(op_attr_bool(ctx, n, "saturate", true, &saturate));
    SMELT_TRY(op_attr_string(ctx, n, "round_mode", "up", &round));
    int mode = saturate ? SMELT_LB_SATURATE : 0;
    if (strcmp(round, "down") == 0)
        mode |= SMELT_LB_ROUND_DOWN;
    else if (strcmp(round, "nearest") == 0)
        mode |= SMELT_LB_ROUND_NEAREST;
    else if (strcmp(round, "up") != 0)
        return op_errf(ctx, n, SMELT_ERR_ATTR,
                       "attribute 'round_mode' is '%s', expected up, down or nearest", round);
    a->lowbit_mode = mode;
    return SMELT_OK;
}

/* Cast-1 names the target type with a string ("FLOAT", "int64"...). */
static int dtype_from_name(const char *s)
{
    static const struct { const char *name; smelt_dtype dt; } names[] = {
        {"FLOAT", SMELT_DT_FLOAT32},   {"UINT8", SMELT_DT_UINT8},     {"INT8", SMELT_DT_INT8},
        {"UINT16", SMELT_DT_UINT16},   {"INT16", SMELT_DT_INT16},     {"INT32", SMELT_DT_INT32},
        {"INT64", SMELT_DT_INT64},     {"STRING", SMELT_DT_STRING},   {"BOOL", SMELT_DT_BOOL},
        {"FLOAT16", SMELT_DT_FLOAT16}, {"DOUBLE", SMELT_DT_FLOAT64},  {"UINT32", SMELT_DT_UINT32},
        {"UINT64", SMELT_DT_UINT64},   {"BFLOAT16", SMELT_DT_BFLOAT16},
        {"FLOAT8E4M3FN", SMELT_DT_FLOAT8E4M3FN}, {"FLOAT8E4M3FNUZ", SMELT_DT_FLOAT8E4M3FNUZ},
        {"FLOAT8E5M2", SMELT_DT_FLOAT8E5M2}, {"FLOAT8E5M2FNUZ", SMELT_DT_FLOAT8E5M2FNUZ},
        {"UINT4", SMELT_DT_UINT4},     {"INT4", SMELT_DT_INT4},
        {"FLOAT4E2M1", SMELT_DT_FLOAT4E2M1}, {"FLOAT8E8M0", SMELT_DT_FLOAT8E8M0},
        {"UINT2", SMELT_DT_UINT2},     {"INT2", SMELT_DT_INT2},
    };
    for (size_t i = 0; i < SMELT_ARRAY_LEN(names); i++)
        if (strcasecmp(s, names[i].name) == 0) return names[i].dt;
    return -1;
}

static smelt_status import_cast(smelt_ctx *ctx, const gr_node *n, op_unary_attrs *a)
{
    const gr_attr *attr = gr_node_attr(n, "to");
    if (!attr) return op_errf(ctx, n, SMELT_ERR_ATTR, "missing required attribute 'to'");
    int64_t to;
    if (attr->type == GR_ATTR_STRING) {
        to = dtype_from_name(attr->s);
        if (to < 0)
            return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'to' names unknown type '%s'",
                           attr->s);
    } else {
        SMELT_TRY(op_attr_int(ctx, n, "to", 0, &to));
    }
    if (to == SMELT_DT_STRING)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "casting to string is not supported");
    if (to == SMELT_DT_COMPLEX64 || to == SMELT_DT_COMPLEX128)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "casting to %s is not supported",
                       smelt_dtype_name((smelt_dtype)to));
    /* ONNX's 6-bit floats (TensorProto.DataType 27, 28): real types smelt has
     * no representation for, so a refusal, not a bad model */
    if (to == 27 || to == 28)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                       "attribute 'to' is %lld (%s): casting to this element type is not "
                       "implemented", (long long)to, to == 27 ? "FLOAT6E2M3" : "FLOAT6E3M2");
    if (to <= SMELT_DT_UNDEFINED || to >= SMELT_DT_COUNT_)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'to' is %lld, not a known dtype",
                       (long long)to);
    a->to = (smelt_dtype)to;
    return import_float8_options(ctx, n, a);
}

static smelt_status cast_like_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    op_unary_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    return import_float8_options(ctx, n, a);
}

/* Clip before opset 11 gives min/max as attributes: turn them into inputs. */
static smelt_status import_clip(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    if (g->opset >= 11) return SMELT_OK;
    static const char *const names[2] = {"min", "max"};
    for (int k = 0; k < 2; k++) {
        if (!gr_node_attr(n, names[k])) continue;
        float v;
        SMELT_TRY(op_attr_float(ctx, n, names[k], 0.0f, &v));
        SMELT_TRY(op_set_input_float_scalar(ctx, g, n, 1 + k, v));
    }
    return SMELT_OK;
}

/* The attributes each op's import reads (ops.def gives the opsets). */
OP_ATTRS(LEAKY_RELU) = {{"alpha", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(ELU) = {{"alpha", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(SELU) = {{"alpha", 0, 0}, {"gamma", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(CELU) = {{"alpha", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(THRESHOLDED_RELU) = {{"alpha", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(CLIP) = {{"min", 0, 10}, {"max", 0, 10}, {NULL, 0, 0}}; /* inputs from opset 11 */
OP_ATTRS(HARD_SIGMOID) = {{"alpha", 0, 0}, {"beta", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(GELU) = {{"approximate", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(SWISH) = {{"alpha", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(SHRINK) = {{"bias", 0, 0}, {"lambd", 0, 0}, {NULL, 0, 0}}; /* alpha, beta */
OP_ATTRS(IS_INF) = {{"detect_negative", 0, 0}, {"detect_positive", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(CAST) = {{"to", 0, 0}, {"saturate", 19, 0}, {"round_mode", 24, 0}, {NULL, 0, 0}};
OP_ATTRS(CAST_LIKE) = {{"saturate", 19, 0}, {"round_mode", 24, 0}, {NULL, 0, 0}};

static smelt_status unary_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    if (n->op == OP_CLIP) return import_clip(ctx, g, n);
    op_unary_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    switch (n->op) {
    case OP_LEAKY_RELU: return read_alpha(ctx, n, 0.01f, a);
    case OP_ELU: return read_alpha(ctx, n, 1.0f, a);
    case OP_THRESHOLDED_RELU: return read_alpha(ctx, n, 1.0f, a);
    case OP_CELU: return import_celu(ctx, n, a);
    case OP_SELU: return import_selu(ctx, n, a);
    case OP_HARD_SIGMOID: return import_hard_sigmoid(ctx, n, a);
    case OP_HARD_SWISH:
        a->alpha = 1.0 / 6.0;
        a->beta = 0.5;
        return SMELT_OK;
    case OP_GELU: return import_gelu(ctx, n, a);
    case OP_SWISH: return read_alpha(ctx, n, 1.0f, a);
    case OP_SHRINK: {
        float lambd, bias;
        SMELT_TRY(op_attr_float(ctx, n, "lambd", 0.5f, &lambd));
        SMELT_TRY(op_attr_float(ctx, n, "bias", 0.0f, &bias));
        a->alpha = lambd;
        a->beta = bias;
        return SMELT_OK;
    }
    case OP_IS_INF: return import_is_inf(ctx, n, a);
    case OP_CAST: return import_cast(ctx, n, a);
    default: return SMELT_OK;
    }
}

/* ---- infer --------------------------------------------------------------------------- */

static const char *input_name(const gr_node *n, int i)
{
    return i < n->n_inputs && n->inputs[i] ? n->inputs[i]->name : "?";
}

static smelt_status need_input(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               int i, const smelt_tensor **out)
{
    *out = op_input(n, in, i);
    if (!*out) return op_errf(ctx, n, SMELT_ERR_MODEL, "required input %d is missing", i);
    return SMELT_OK;
}

static smelt_status check_input_dtype(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                                      int i, const smelt_dtype *allowed)
{
    char what[160];
    snprintf(what, sizeof what, "input '%s'", input_name(n, i));
    return op_check_dtype(ctx, n, t, what, allowed);
}

static smelt_status unary_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    const smelt_tensor *x;
    SMELT_TRY(need_input(ctx, n, in, 0, &x));
    SMELT_TRY(check_input_dtype(ctx, n, x, 0, g_unary[n->op].types));
    op_copy_shape(&out[0], x);
    return SMELT_OK;
}

static smelt_status not_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const smelt_tensor *x;
    SMELT_TRY(need_input(ctx, n, in, 0, &x));
    SMELT_TRY(check_input_dtype(ctx, n, x, 0, k_bool));
    op_copy_shape(&out[0], x);
    return SMELT_OK;
}

/* IsNaN, IsInf: float in, bool out. */
static smelt_status float_test_infer(smelt_ctx *ctx, const gr_node *n,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x;
    SMELT_TRY(need_input(ctx, n, in, 0, &x));
    SMELT_TRY(check_input_dtype(ctx, n, x, 0, k_floats));
    op_copy_shape(&out[0], x);
    out[0].dtype = SMELT_DT_BOOL;
    return SMELT_OK;
}

static smelt_status check_castable(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t, int i)
{
    if (t->dtype == SMELT_DT_STRING)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                       "input '%s' is a string tensor; casts from string are not supported",
                       input_name(n, i));
    return check_input_dtype(ctx, n, t, i, k_castable);
}

static smelt_status cast_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    const smelt_tensor *x;
    SMELT_TRY(need_input(ctx, n, in, 0, &x));
    SMELT_TRY(check_castable(ctx, n, x, 0));
    smelt_dtype to = attrs_of(n)->to;
    if (to == SMELT_DT_UNDEFINED)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "missing required attribute 'to'");
    op_copy_shape(&out[0], x);
    out[0].dtype = to;
    return SMELT_OK;
}

static smelt_status cast_like_infer(smelt_ctx *ctx, const gr_node *n,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x, *like;
    SMELT_TRY(need_input(ctx, n, in, 0, &x));
    SMELT_TRY(need_input(ctx, n, in, 1, &like));
    SMELT_TRY(check_castable(ctx, n, x, 0));
    if (like->dtype == SMELT_DT_STRING)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                       "input '%s' is a string tensor; casting to string is not supported",
                       input_name(n, 1));
    SMELT_TRY(check_input_dtype(ctx, n, like, 1, k_castable));
    op_copy_shape(&out[0], x);
    out[0].dtype = like->dtype;
    return SMELT_OK;
}

static bool is_known_non_scalar(const smelt_tensor *t)
{
    return op_dims_static(t) && op_numel(t) != 1;
}

/* Clip bounds: scalars of X's dtype.  A float32 bound is also accepted for
 * any float X: that is what the opset < 11 attributes are normalised to. */
static smelt_status check_clip_bound(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *x,
                                     const smelt_tensor *b, int i)
{
    bool f32_for_float = b->dtype == SMELT_DT_FLOAT32 && op_dtype_is_float(x->dtype);
    if (b->dtype != x->dtype && !f32_for_float)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has dtype %s, expected %s like '%s'",
                       input_name(n, i), smelt_dtype_name(b->dtype),
                       smelt_dtype_name(x->dtype), input_name(n, 0));
    if (is_known_non_scalar(b))
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "input '%s' must be a scalar, but has %lld elements", input_name(n, i),
                       (long long)op_numel(b));
    return SMELT_OK;
}

static smelt_status clip_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    const smelt_tensor *x;
    SMELT_TRY(need_input(ctx, n, in, 0, &x));
    SMELT_TRY(check_input_dtype(ctx, n, x, 0, k_numeric));
    for (int i = 1; i <= 2; i++) {
        const smelt_tensor *b = op_input(n, in, i);
        if (b) SMELT_TRY(check_clip_bound(ctx, n, x, b, i));
    }
    op_copy_shape(&out[0], x);
    return SMELT_OK;
}

/* ---- eval ------------------------------------------------------------------------------ */

static void unary_apply_f32(const unary_op *u, const op_unary_attrs *a, const float *x, float *y,
                            int64_t count)
{
    for (int64_t i = 0; i < count; i++) y[i] = (float)u->f(x[i], a);
}

static void unary_apply_f64(const unary_op *u, const op_unary_attrs *a, const double *x,
                            double *y, int64_t count)
{
    for (int64_t i = 0; i < count; i++) y[i] = u->f(x[i], a);
}

static void unary_apply_generic(const unary_op *u, const op_unary_attrs *a,
                                const smelt_tensor *x, smelt_tensor *y, int64_t count)
{
    bool is_float = op_dtype_is_float(x->dtype);
    bool is_unsigned = dtype_is_unsigned(x->dtype);
    for (int64_t i = 0; i < count; i++) {
        if (!is_float && is_unsigned && u->fu)
            op_set_i64(y, i, (int64_t)u->fu((uint64_t)op_get_i64(x, i)));
        else if (!is_float && !is_unsigned && u->fi)
            op_set_i64(y, i, u->fi(op_get_i64(x, i)));
        else
            store_f64(y, i, u->f(op_get_f64(x, i), a));
    }
}

static smelt_status unary_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    (void)ctx;
    const unary_op *u = &g_unary[n->op];
    const op_unary_attrs *a = attrs_of(n);
    const smelt_tensor *x = in[0];
    int64_t count = op_numel(x);
    if (x->dtype == SMELT_DT_FLOAT32)
        unary_apply_f32(u, a, x->data, out[0].data, count);
    else if (x->dtype == SMELT_DT_FLOAT64)
        unary_apply_f64(u, a, x->data, out[0].data, count);
    else
        unary_apply_generic(u, a, x, &out[0], count);
    return SMELT_OK;
}

static smelt_status not_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    (void)ctx;
    (void)n;
    const uint8_t *x = in[0]->data;
    uint8_t *y = out[0].data;
    int64_t count = op_numel(in[0]);
    for (int64_t i = 0; i < count; i++) y[i] = !x[i];
    return SMELT_OK;
}

static smelt_status is_nan_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    (void)ctx;
    (void)n;
    uint8_t *y = out[0].data;
    int64_t count = op_numel(in[0]);
    for (int64_t i = 0; i < count; i++) y[i] = isnan(op_get_f64(in[0], i));
    return SMELT_OK;
}

static smelt_status is_inf_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    (void)ctx;
    const op_unary_attrs *a = attrs_of(n);
    uint8_t *y = out[0].data;
    int64_t count = op_numel(in[0]);
    for (int64_t i = 0; i < count; i++) {
        double v = op_get_f64(in[0], i);
        y[i] = isinf(v) && (v > 0 ? a->detect_pos : a->detect_neg);
    }
    return SMELT_OK;
}

/* ---- Clip ---- */

static smelt_status clip_bound(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               int i, const smelt_tensor **out)
{
    *out = op_input(n, in, i);
    if (*out && op_numel(*out) != 1)
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "input '%s' must be a scalar, but has %lld elements", input_name(n, i),
                       (long long)op_numel(*out));
    return SMELT_OK;
}

/* x < lo ? lo : x keeps NaN; when lo > hi every value becomes hi (ONNX rule). */
static void clip_float(const smelt_tensor *x, smelt_tensor *y, double lo, double hi)
{
    int64_t count = op_numel(x);
    if (x->dtype == SMELT_DT_FLOAT32) {
        const float *xs = x->data;
        float *ys = y->data, l = (float)lo, h = (float)hi;
        for (int64_t i = 0; i < count; i++) {
            float v = xs[i] < l ? l : xs[i];
            ys[i] = v > h ? h : v;
        }
        return;
    }
    for (int64_t i = 0; i < count; i++) {
        double v = op_get_f64(x, i);
        v = v < lo ? lo : v;
        store_f64(y, i, v > hi ? hi : v);
    }
}

static void clip_signed(const smelt_tensor *x, smelt_tensor *y, const smelt_tensor *lo_t,
                        const smelt_tensor *hi_t)
{
    int64_t lo = lo_t ? op_get_i64(lo_t, 0) : INT64_MIN,
            hi = hi_t ? op_get_i64(hi_t, 0) : INT64_MAX;
    int64_t count = op_numel(x);
    for (int64_t i = 0; i < count; i++) {
        int64_t v = op_get_i64(x, i);
        v = v < lo ? lo : v;
        op_set_i64(y, i, v > hi ? hi : v);
    }
}

static void clip_unsigned(const smelt_tensor *x, smelt_tensor *y, const smelt_tensor *lo_t,
                          const smelt_tensor *hi_t)
{
    uint64_t lo = lo_t ? (uint64_t)op_get_i64(lo_t, 0) : 0;
    uint64_t hi = hi_t ? (uint64_t)op_get_i64(hi_t, 0) : UINT64_MAX;
    int64_t count = op_numel(x);
    for (int64_t i = 0; i < count; i++) {
        uint64_t v = (uint64_t)op_get_i64(x, i);
        v = v < lo ? lo : v;
        op_set_i64(y, i, (int64_t)(v > hi ? hi : v));
    }
}

static smelt_status clip_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *lo, *hi;
    SMELT_TRY(clip_bound(ctx, n, in, 1, &lo));
    SMELT_TRY(clip_bound(ctx, n, in, 2, &hi));
    if (op_dtype_is_float(x->dtype))
        clip_float(x, &out[0], lo ? op_get_f64(lo, 0) : -INFINITY,
                   hi ? op_get_f64(hi, 0) : INFINITY);
    else if (dtype_is_unsigned(x->dtype))
        clip_unsigned(x, &out[0], lo, hi);
    else
        clip_signed(x, &out[0], lo, hi);
    return SMELT_OK;
}

/* ---- Cast ---- */

static void cast_f32_to_f16(const float *x, uint16_t *y, int64_t count)
{
    for (int64_t i = 0; i < count; i++) y[i] = smelt_f32_to_f16(x[i]);
}

static void cast_f16_to_f32(const uint16_t *x, float *y, int64_t count)
{
    for (int64_t i = 0; i < count; i++) y[i] = smelt_f16_to_f32(x[i]);
}

static bool is_floatish(smelt_dtype dt)
{
    return op_dtype_is_float(dt) || smelt_dtype_is_lowbit_float(dt);
}

/* Float -> int saturates (NaN -> 0) instead of hitting UB; int -> int wraps
 * like a C conversion; anything -> bool is "!= 0". */
static void cast_generic(const smelt_tensor *x, smelt_tensor *y, int64_t count)
{
    bool via_float = is_floatish(x->dtype) || op_dtype_is_float(y->dtype);
    for (int64_t i = 0; i < count; i++) {
        if (via_float)
            store_f64(y, i, op_get_f64(x, i));
        else
            op_set_i64(y, i, op_get_i64(x, i));
    }
}

/* To a low-bit type: floats (and float8/float4 values) through the
 * encoder with the node's saturate/round_mode, integers wrap or convert. */
static void cast_to_lowbit(const smelt_tensor *x, smelt_tensor *y, int64_t count, int mode)
{
    bool wrap = !is_floatish(x->dtype) && smelt_dtype_is_lowbit_int(y->dtype);
    uint8_t *out = y->data;
    for (int64_t i = 0; i < count; i++) {
        if (wrap) /* integer -> 4/2-bit integer: the low bits, like other narrowing */
            out[i] = (uint8_t)smelt_lb_wrap_int((int)y->dtype, op_get_i64(x, i));
        else /* through double (uint64 included) */
            out[i] = (uint8_t)smelt_lowbit_encode((int)y->dtype, op_get_f64(x, i), mode);
    }
}

static smelt_status cast_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    (void)ctx;
    const smelt_tensor *x = in[0];
    smelt_tensor *y = &out[0];
    int64_t count = op_numel(x);
    if (count == 0) return SMELT_OK;
    if (x->dtype == y->dtype)
        memcpy(y->data, x->data, (size_t)count * smelt_dtype_size(x->dtype));
    else if (x->dtype == SMELT_DT_FLOAT32 && y->dtype == SMELT_DT_FLOAT16)
        cast_f32_to_f16(x->data, y->data, count);
    else if (x->dtype == SMELT_DT_FLOAT16 && y->dtype == SMELT_DT_FLOAT32)
        cast_f16_to_f32(x->data, y->data, count);
    else if (smelt_dtype_is_lowbit(y->dtype))
        cast_to_lowbit(x, y, count, attrs_of(n)->lowbit_mode);
    else
        cast_generic(x, y, count);
    return SMELT_OK;
}

/* ---- compute (te) -------------------------------------------------------------------------
 * Float ops compute in float32 for float16/bfloat16 (or in their own dtype)
 * and convert once at the end, as the reference rounds once.  Comparisons
 * are written so that NaN falls through to x, like the scalar functions. */

static smelt_dtype compute_dtype(smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16 ? SMELT_DT_FLOAT32 : dt;
}

static ir_expr *fconst(ir_builder *b, const ir_expr *like, double v)
{
    return ir_const_float(b, like->dtype, v);
}

static ir_expr *call1(ir_builder *b, ir_call_op op, ir_expr *x)
{
    return x ? ir_call(b, op, x->dtype, 1, &x) : (b->failed = true, NULL);
}

static ir_expr *bin(ir_builder *b, ir_kind k, ir_expr *x, ir_expr *y)
{
    return ir_binary(b, k, x, y);
}

ir_expr *op_float_to_int_expr(ir_builder *b, smelt_dtype to, ir_expr *x)
{
    if (!x) return b->failed = true, NULL;
    if (to == SMELT_DT_BOOL) return ir_cast(b, to, x);
    if (to == SMELT_DT_UINT64) /* negatives and NaN give 0 */
        return ir_select(b, bin(b, IR_GT, x, fconst(b, x, 0.0)), ir_cast(b, to, x),
                         ir_const_int(b, to, 0));
    /* a float -> int64 cast saturates (NaN -> 0); int64 -> narrower wraps */
    return ir_cast(b, to, ir_cast(b, SMELT_DT_INT64, x));
}

/* Any dtype to `to`: float -> integer with the reference's conversion. */
static ir_expr *convert(ir_builder *b, smelt_dtype to, ir_expr *x)
{
    if (x && op_dtype_is_float(x->dtype) && !op_dtype_is_float(to))
        return op_float_to_int_expr(b, to, x);
    return ir_cast(b, to, x);
}

/* `v < lo ? lo : v`, then `v > hi ? hi : v` (IR_MAX(a, b) is `a > b ? a : b`,
 * so NaN passes through); either bound may be absent (NULL). */
static ir_expr *clamp(ir_builder *b, ir_expr *v, ir_expr *lo, ir_expr *hi)
{
    if (lo) v = bin(b, IR_MAX, lo, v);
    if (hi) v = bin(b, IR_MIN, hi, v);
    return v;
}

typedef ir_expr *(*unary_te_fn)(ir_builder *b, ir_expr *x, const op_unary_attrs *a);

/* IR_MAX(0, x) is `0 > x ? 0 : x`: NaN stays NaN, as in the reference. */
static ir_expr *relu_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    (void)a;
    return op_dtype_is_float(x->dtype) ? bin(b, IR_MAX, fconst(b, x, 0.0), x)
                                       : bin(b, IR_MAX, ir_const_int(b, x->dtype, 0), x);
}

static ir_expr *leaky_relu_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    ir_expr *neg = ir_mul(b, fconst(b, x, a->alpha), x);
    return ir_select(b, bin(b, IR_LT, x, fconst(b, x, 0.0)), neg, x);
}

/* exp(x) - 1 (the IR has no expm1); used where x < 0, so the absolute
 * error is that of exp's rounding below 1, though tiny results lose
 * relative precision. */
static ir_expr *expm1_te(ir_builder *b, ir_expr *x)
{
    return ir_sub(b, call1(b, IR_CALL_EXP, x), fconst(b, x, 1.0));
}

static ir_expr *elu_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    ir_expr *neg = ir_mul(b, fconst(b, x, a->alpha), expm1_te(b, x));
    return ir_select(b, bin(b, IR_LT, x, fconst(b, x, 0.0)), neg, x);
}

static ir_expr *selu_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    ir_expr *neg = ir_mul(b, fconst(b, x, a->gamma * a->alpha), expm1_te(b, x));
    return ir_select(b, bin(b, IR_LE, x, fconst(b, x, 0.0)), neg,
                     ir_mul(b, fconst(b, x, a->gamma), x));
}

static ir_expr *celu_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    ir_expr *scaled = bin(b, IR_DIV, x, fconst(b, x, a->alpha));
    ir_expr *neg = ir_mul(b, fconst(b, x, a->alpha), expm1_te(b, scaled));
    return ir_select(b, bin(b, IR_LT, x, fconst(b, x, 0.0)), neg, x);
}

static ir_expr *thresholded_relu_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    return ir_select(b, bin(b, IR_GT, x, fconst(b, x, a->alpha)), x, fconst(b, x, 0.0));
}

static ir_expr *hard_sigmoid_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    ir_expr *v = ir_add(b, ir_mul(b, fconst(b, x, a->alpha), x), fconst(b, x, a->beta));
    return clamp(b, v, fconst(b, x, 0.0), fconst(b, x, 1.0));
}

static ir_expr *hard_swish_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    return ir_mul(b, x, hard_sigmoid_te(b, x, a));
}

static ir_expr *sigmoid_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    (void)a;
    return call1(b, IR_CALL_SIGMOID, x);
}

/* max(x, 0) + log(1 + exp(-|x|)): no overflow for large |x| */
static ir_expr *softplus_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    (void)a;
    ir_expr *e = call1(b, IR_CALL_EXP, ir_mul(b, call1(b, IR_CALL_ABS, x), fconst(b, x, -1.0)));
    ir_expr *tail = call1(b, IR_CALL_LOG, ir_add(b, fconst(b, x, 1.0), e));
    return ir_add(b, bin(b, IR_MAX, fconst(b, x, 0.0), x), tail);
}

/* x * tanh(softplus(x)) = x * n / (n + 2) with n = e^x (e^x + 2), which
 * keeps its precision for negative x (log(1 + e^x) in float32 does not);
 * above 20 the factor is 1 in float32 and float64 alike to within an ulp,
 * and e^x would overflow n */
static ir_expr *mish_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    (void)a;
    ir_expr *e = call1(b, IR_CALL_EXP, x);
    ir_expr *n = ir_mul(b, e, ir_add(b, e, fconst(b, x, 2.0)));
    ir_expr *y = ir_mul(b, x, ir_binary(b, IR_DIV, n, ir_add(b, n, fconst(b, x, 2.0))));
    return ir_select(b, bin(b, IR_GT, x, fconst(b, x, 20.0)), x, y);
}

/* x * sigmoid(alpha * x) */
static ir_expr *swish_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    return ir_mul(b, x, call1(b, IR_CALL_SIGMOID, ir_mul(b, fconst(b, x, a->alpha), x)));
}

/* x < -lambd ? x + bias : x > lambd ? x - bias : 0 (lambd = alpha, bias = beta) */
static ir_expr *shrink_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    ir_expr *hi = ir_select(b, bin(b, IR_GT, x, fconst(b, x, a->alpha)),
                            ir_sub(b, x, fconst(b, x, a->beta)), fconst(b, x, 0.0));
    return ir_select(b, bin(b, IR_LT, x, fconst(b, x, -a->alpha)),
                     ir_add(b, x, fconst(b, x, a->beta)), hi);
}

static ir_expr *softsign_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    (void)a;
    return bin(b, IR_DIV, x, ir_add(b, fconst(b, x, 1.0), call1(b, IR_CALL_ABS, x)));
}

static ir_expr *gelu_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    ir_expr *inner;
    if (a->gelu_tanh) {
        ir_expr *cube = ir_mul(b, ir_mul(b, x, x), x);
        ir_expr *arg = ir_add(b, x, ir_mul(b, fconst(b, x, 0.044715), cube));
        inner = call1(b, IR_CALL_TANH, ir_mul(b, fconst(b, x, 0.79788456080286535588), arg));
    } else {
        inner = call1(b, IR_CALL_ERF, ir_mul(b, x, fconst(b, x, 0.70710678118654752440)));
    }
    ir_expr *half_x = ir_mul(b, fconst(b, x, 0.5), x);
    return ir_mul(b, half_x, ir_add(b, fconst(b, x, 1.0), inner));
}

static ir_expr *reciprocal_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    (void)a;
    return bin(b, IR_DIV, fconst(b, x, 1.0), x);
}

/* Integers wrap (the minimum stays the minimum); floats flip the sign of zero too. */
static ir_expr *neg_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    (void)a;
    if (op_dtype_is_float(x->dtype)) return ir_mul(b, x, fconst(b, x, -1.0));
    return ir_sub(b, ir_const_int(b, x->dtype, 0), x);
}

static bool dtype_is_signed_int(smelt_dtype dt)
{
    return op_dtype_is_int(dt) && !dtype_is_unsigned(dt);
}

static ir_expr *abs_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    if (op_dtype_is_float(x->dtype)) return call1(b, IR_CALL_ABS, x);
    if (!dtype_is_signed_int(x->dtype)) return x;
    return ir_select(b, bin(b, IR_LT, x, ir_const_int(b, x->dtype, 0)), neg_te(b, x, a), x);
}

/* 1, -1, or x itself (zeros and NaN) */
static ir_expr *sign_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    (void)a;
    smelt_dtype dt = x->dtype;
    bool fl = op_dtype_is_float(dt);
    ir_expr *zero = fl ? fconst(b, x, 0.0) : ir_const_int(b, dt, 0);
    ir_expr *one = fl ? fconst(b, x, 1.0) : ir_const_int(b, dt, 1);
    if (dtype_is_unsigned(dt)) return ir_select(b, bin(b, IR_NE, x, zero), one, zero);
    ir_expr *minus_one = fl ? fconst(b, x, -1.0) : ir_const_int(b, dt, -1);
    ir_expr *neg = ir_select(b, bin(b, IR_LT, x, zero), minus_one, x);
    return ir_select(b, bin(b, IR_GT, x, zero), one, neg);
}

#define CALL_TE(NAME, OP)                                                                   \
    static ir_expr *NAME##_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)            \
    {                                                                                       \
        (void)a;                                                                            \
        return call1(b, OP, x);                                                             \
    }
CALL_TE(tanh, IR_CALL_TANH)
CALL_TE(erf, IR_CALL_ERF)
CALL_TE(exp, IR_CALL_EXP)
CALL_TE(log, IR_CALL_LOG)
CALL_TE(sqrt, IR_CALL_SQRT)
CALL_TE(floor, IR_CALL_FLOOR)
CALL_TE(ceil, IR_CALL_CEIL)
CALL_TE(round, IR_CALL_ROUND)
CALL_TE(sin, IR_CALL_SIN)
CALL_TE(cos, IR_CALL_COS)
CALL_TE(tan, IR_CALL_TAN)
CALL_TE(asin, IR_CALL_ASIN)
CALL_TE(acos, IR_CALL_ACOS)
CALL_TE(atan, IR_CALL_ATAN)
CALL_TE(sinh, IR_CALL_SINH)
CALL_TE(cosh, IR_CALL_COSH)
CALL_TE(asinh, IR_CALL_ASINH)
CALL_TE(acosh, IR_CALL_ACOSH)
CALL_TE(atanh, IR_CALL_ATANH)
#undef CALL_TE

/* int_ok: integer inputs use the function exactly; otherwise they go
 * through double and back, like the reference (Erf). */
static const struct {
    unary_te_fn fn;
    bool int_ok;
} g_unary_te[OP_COUNT_] = {
    [OP_RELU] = {relu_te, true},
    [OP_LEAKY_RELU] = {leaky_relu_te, false},
    [OP_ELU] = {elu_te, false},
    [OP_SELU] = {selu_te, false},
    [OP_CELU] = {celu_te, false},
    [OP_THRESHOLDED_RELU] = {thresholded_relu_te, false},
    [OP_SIGMOID] = {sigmoid_te, false},
    [OP_HARD_SIGMOID] = {hard_sigmoid_te, false},
    [OP_HARD_SWISH] = {hard_swish_te, false},
    [OP_SOFTPLUS] = {softplus_te, false},
    [OP_MISH] = {mish_te, false},
    [OP_SWISH] = {swish_te, false},
    [OP_SHRINK] = {shrink_te, false},
    [OP_SOFTSIGN] = {softsign_te, false},
    [OP_TANH] = {tanh_te, false},
    [OP_ERF] = {erf_te, false},
    [OP_GELU] = {gelu_te, false},
    [OP_EXP] = {exp_te, false},
    [OP_LOG] = {log_te, false},
    [OP_SQRT] = {sqrt_te, false},
    [OP_RECIPROCAL] = {reciprocal_te, false},
    [OP_NEG] = {neg_te, true},
    [OP_ABS] = {abs_te, true},
    [OP_FLOOR] = {floor_te, false},
    [OP_CEIL] = {ceil_te, false},
    [OP_ROUND] = {round_te, false},
    [OP_SIGN] = {sign_te, true},
    [OP_SIN] = {sin_te, false},
    [OP_COS] = {cos_te, false},
    [OP_TAN] = {tan_te, false},
    [OP_ASIN] = {asin_te, false},
    [OP_ACOS] = {acos_te, false},
    [OP_ATAN] = {atan_te, false},
    [OP_SINH] = {sinh_te, false},
    [OP_COSH] = {cosh_te, false},
    [OP_ASINH] = {asinh_te, false},
    [OP_ACOSH] = {acosh_te, false},
    [OP_ATANH] = {atanh_te, false},
};

/* One element of y = fn(x): x converted to `work`, the result to `out`. */
typedef struct unary_te {
    const te_tensor *x;
    unary_te_fn fn;
    const op_unary_attrs *attrs;
    smelt_dtype work, out;
} unary_te;

static ir_expr *unary_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const unary_te *u = user;
    ir_expr *x = ir_cast(&g->b, u->work, te_read(g, u->x, idx));
    return convert(&g->b, u->out, x ? u->fn(&g->b, x, u->attrs) : NULL);
}

static smelt_status unary_te_make(op_compute_args *a, unary_te_fn fn, smelt_dtype work)
{
    const te_tensor *x = a->in[0];
    unary_te u = {x, fn, attrs_of(a->node), work, a->out_type[0].dtype};
    a->out[0] = te_compute(a->te, "y", u.out, x->n_axes, x->buf->shape, unary_body, &u,
                           "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

static smelt_status unary_compute(op_compute_args *a)
{
    smelt_dtype dt = a->in[0]->buf->dtype;
    bool exact_int = !op_dtype_is_float(dt) && g_unary_te[a->node->op].int_ok;
    smelt_dtype work = op_dtype_is_float(dt) || exact_int ? compute_dtype(dt) : SMELT_DT_FLOAT64;
    return unary_te_make(a, g_unary_te[a->node->op].fn, work);
}

static ir_expr *not_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    (void)a;
    return ir_not(b, x);
}

static smelt_status not_compute(op_compute_args *a)
{
    return unary_te_make(a, not_te, SMELT_DT_BOOL);
}

static ir_expr *is_nan_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    (void)a;
    return ir_call(b, IR_CALL_ISNAN, SMELT_DT_BOOL, 1, &x);
}

static ir_expr *is_inf_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    if (a->detect_pos && a->detect_neg) return ir_call(b, IR_CALL_ISINF, SMELT_DT_BOOL, 1, &x);
    if (a->detect_pos) return bin(b, IR_EQ, x, fconst(b, x, INFINITY));
    if (a->detect_neg) return bin(b, IR_EQ, x, fconst(b, x, -INFINITY));
    return ir_const_int(b, SMELT_DT_BOOL, 0);
}

static smelt_status float_test_compute(op_compute_args *a)
{
    unary_te_fn fn = a->node->op == OP_IS_NAN ? is_nan_te : is_inf_te;
    return unary_te_make(a, fn, compute_dtype(a->in[0]->buf->dtype));
}

/* ---- Clip: bounds from constants (immediates) or scalar inputs (loads) ---- */

typedef struct clip_te {
    const te_tensor *x, *bound_t[2];
    const smelt_tensor *bound_c[2];
    smelt_dtype work;
} clip_te;

static ir_expr *clip_bound_expr(te_graph *g, const clip_te *c, int k)
{
    ir_builder *b = &g->b;
    if (c->bound_c[k]) {
        const smelt_tensor *t = c->bound_c[k];
        if (op_dtype_is_float(c->work)) return ir_const_float(b, c->work, op_get_f64(t, 0));
        return ir_const_int(b, c->work, op_get_i64(t, 0));
    }
    if (!c->bound_t[k]) return NULL;
    ir_expr *zeros[SMELT_MAX_RANK];
    for (int d = 0; d < c->bound_t[k]->n_axes; d++) zeros[d] = ir_int(b, 0);
    return ir_cast(b, c->work, te_read(g, c->bound_t[k], zeros));
}

static ir_expr *clip_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const clip_te *c = user;
    ir_expr *x = ir_cast(&g->b, c->work, te_read(g, c->x, idx));
    ir_expr *v = clamp(&g->b, x, clip_bound_expr(g, c, 0), clip_bound_expr(g, c, 1));
    return ir_cast(&g->b, c->x->buf->dtype, v);
}

static smelt_status clip_compute(op_compute_args *a)
{
    const te_tensor *x = a->in[0];
    clip_te c = {.x = x, .work = compute_dtype(x->buf->dtype)};
    for (int k = 0; k < 2; k++) {
        int i = 1 + k;
        if (i >= a->node->n_inputs || !a->in[i]) continue;
        const ir_buffer *bound = a->in[i]->buf;
        int64_t numel = 1;
        for (int d = 0; d < bound->rank; d++) numel *= bound->shape[d];
        if (numel != 1)
            return op_errf(a->ctx, a->node, SMELT_ERR_SHAPE,
                           "input '%s' must be a scalar, but has %lld elements",
                           input_name(a->node, i), (long long)numel);
        c.bound_t[k] = a->in[i];
        c.bound_c[k] = a->in_const[i];
    }
    a->out[0] = te_compute(a->te, "y", x->buf->dtype, x->n_axes, x->buf->shape, clip_body, &c,
                           "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* ---- Cast, CastLike ---- */

static ir_expr *identity_te(ir_builder *b, ir_expr *x, const op_unary_attrs *a)
{
    (void)b;
    (void)a;
    return x;
}

/* Low-bit values convert only through the lowbit calls: a float8/float4
 * code is decoded to float32 first, a low-bit result encoded from the value
 * (floats with the node's saturate/round_mode; integers of a 4/2-bit
 * target wrap). */
typedef struct cast_te {
    const te_tensor *x;
    smelt_dtype to;
    int mode;
} cast_te;

static ir_expr *cast_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const cast_te *c = user;
    ir_builder *b = &g->b;
    ir_expr *x = te_read(g, c->x, idx);
    if (!x || x->dtype == c->to) return x; /* the same type: the code unchanged (NaN payloads) */
    if (smelt_dtype_is_lowbit_float(x->dtype))
        x = ir_call(b, IR_CALL_LB_DECODE, SMELT_DT_FLOAT32, 1, &x);
    if (!x) return NULL;
    if (smelt_dtype_is_lowbit(c->to)) {
        if (x->dtype == SMELT_DT_BOOL) x = ir_cast(b, SMELT_DT_INT32, x);
        ir_expr *args[2] = {x, ir_const_int(b, SMELT_DT_INT32, c->mode)};
        return ir_call(b, IR_CALL_LB_ENCODE, c->to, 2, args);
    }
    return convert(b, c->to, x);
}

static smelt_status cast_compute(op_compute_args *a)
{
    const te_tensor *x = a->in[0];
    smelt_dtype to = a->out_type[0].dtype, from = x->buf->dtype;
    if (!smelt_dtype_is_lowbit(to) && !smelt_dtype_is_lowbit(from))
        return unary_te_make(a, identity_te, from);
    cast_te c = {x, to, attrs_of(a->node)->lowbit_mode};
    a->out[0] = te_compute(a->te, "y", to, x->n_axes, x->buf->shape, cast_body, &c, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* ---- op table ---------------------------------------------------------------------------- */

#define UNARY_DEF(ENUM, INFER, EVAL, COMPUTE)                                               \
    const op_def op_def_##ENUM = {.compute = COMPUTE, .import = unary_import, .infer = INFER, \
                                  .eval = EVAL, .min_inputs = 1, .max_inputs = 1,            \
                                  .min_outputs = 1, .max_outputs = 1}

UNARY_DEF(RELU, unary_infer, unary_eval, unary_compute);
UNARY_DEF(LEAKY_RELU, unary_infer, unary_eval, unary_compute);
UNARY_DEF(ELU, unary_infer, unary_eval, unary_compute);
UNARY_DEF(SELU, unary_infer, unary_eval, unary_compute);
UNARY_DEF(CELU, unary_infer, unary_eval, unary_compute);
UNARY_DEF(THRESHOLDED_RELU, unary_infer, unary_eval, unary_compute);
UNARY_DEF(SIGMOID, unary_infer, unary_eval, unary_compute);
UNARY_DEF(HARD_SIGMOID, unary_infer, unary_eval, unary_compute);
UNARY_DEF(HARD_SWISH, unary_infer, unary_eval, unary_compute);
UNARY_DEF(SOFTPLUS, unary_infer, unary_eval, unary_compute);
UNARY_DEF(SOFTSIGN, unary_infer, unary_eval, unary_compute);
UNARY_DEF(TANH, unary_infer, unary_eval, unary_compute);
UNARY_DEF(ERF, unary_infer, unary_eval, unary_compute);
UNARY_DEF(GELU, unary_infer, unary_eval, unary_compute);
UNARY_DEF(EXP, unary_infer, unary_eval, unary_compute);
UNARY_DEF(LOG, unary_infer, unary_eval, unary_compute);
UNARY_DEF(SQRT, unary_infer, unary_eval, unary_compute);
UNARY_DEF(RECIPROCAL, unary_infer, unary_eval, unary_compute);
UNARY_DEF(NEG, unary_infer, unary_eval, unary_compute);
UNARY_DEF(ABS, unary_infer, unary_eval, unary_compute);
UNARY_DEF(FLOOR, unary_infer, unary_eval, unary_compute);
UNARY_DEF(CEIL, unary_infer, unary_eval, unary_compute);
UNARY_DEF(ROUND, unary_infer, unary_eval, unary_compute);
UNARY_DEF(SIGN, unary_infer, unary_eval, unary_compute);
UNARY_DEF(MISH, unary_infer, unary_eval, unary_compute);
UNARY_DEF(SWISH, unary_infer, unary_eval, unary_compute);
UNARY_DEF(SHRINK, unary_infer, unary_eval, unary_compute);
UNARY_DEF(SIN, unary_infer, unary_eval, unary_compute);
UNARY_DEF(COS, unary_infer, unary_eval, unary_compute);
UNARY_DEF(TAN, unary_infer, unary_eval, unary_compute);
UNARY_DEF(ASIN, unary_infer, unary_eval, unary_compute);
UNARY_DEF(ACOS, unary_infer, unary_eval, unary_compute);
UNARY_DEF(ATAN, unary_infer, unary_eval, unary_compute);
UNARY_DEF(SINH, unary_infer, unary_eval, unary_compute);
UNARY_DEF(COSH, unary_infer, unary_eval, unary_compute);
UNARY_DEF(ASINH, unary_infer, unary_eval, unary_compute);
UNARY_DEF(ACOSH, unary_infer, unary_eval, unary_compute);
UNARY_DEF(ATANH, unary_infer, unary_eval, unary_compute);
UNARY_DEF(NOT, not_infer, not_eval, not_compute);
UNARY_DEF(IS_NAN, float_test_infer, is_nan_eval, float_test_compute);
UNARY_DEF(IS_INF, float_test_infer, is_inf_eval, float_test_compute);
UNARY_DEF(CAST, cast_infer, cast_eval, cast_compute);

const op_def op_def_CLIP = {.compute = clip_compute, .import = unary_import,
                            .infer = clip_infer,     .eval = clip_eval,
                            .min_inputs = 1,         .max_inputs = 3,
                            .min_outputs = 1,        .max_outputs = 1};
const op_def op_def_CAST_LIKE = {.compute = cast_compute, .import = cast_like_import,
                                 .infer = cast_like_infer, .eval = cast_eval,
                                 .min_inputs = 2,          .max_inputs = 2,
                                 .min_outputs = 1,         .max_outputs = 1};
