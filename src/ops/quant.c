/* Quantization family: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
 *
 * Arithmetic follows the ONNX reference implementation (onnx/reference/ops)
 * operation by operation, so results are bit-exact with it:
 *   quantize    y = clamp(rint(x / scale) + zp, qmin, qmax), the division in
 *               the precision attribute's type, else numpy's promotion of x
 *               and scale (float64 for int32 x); rint rounds half to even.
 *   dequantize  y = float32(x - zp) * float32(scale), rounded once to the
 *               output type.
 *   requantize  (QLinear*) y = clamp(rint(acc * m + zp), qmin, qmax) in
 *               double, m = a_scale * b_scale / y_scale in the scales' type.
 *   integer products accumulate (x - x_zp) * (w - w_zp) in int32.
 * The reference kernels shift the integer operands by their zero points into
 * int32 (matrix products) or float64 (convolutions, exact: every partial sum
 * is an integer far below 2^53) tensors and reuse MatMul's and Conv's
 * reference kernels.  The compute definitions do the same with int32 stages
 * ("x_shift", "w_shift") under the MatMul/Conv reduce stage, then an
 * elementwise requantization stage.
 *
 * Scales and zero points are per tensor (rank 0, or one element), per axis
 * (1-D along `axis`) or blocked (block_size: x's shape with the axis divided
 * by the block, rounded up).
 *
 * Low-bit types (include/smelt_lowbit.h): int4/uint4/int2/uint2 take the
 * integer formula with their ranges.  float8 and float4 follow ONNX's float
 * formula: quantize y = encode(x / scale + zp) (saturating unless saturate=0
 * for float8; float4 always saturates), dequantize
 * y = (decode(x) - decode(zp)) * scale in float32.  The compiled code
 * converts with the same header's functions. */
#include <math.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/linalg.h"
#include "ops/op.h"
#include "ops/quant.h"
#include "smelt_lowbit.h"
#include "te/te.h"

extern const op_def op_def_CONV, op_def_MATMUL;

static const smelt_dtype k_scale_types[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT16, SMELT_DT_BFLOAT16,
                                            SMELT_DT_UNDEFINED};
#define LOWBIT_QUANT_TYPES                                                                   \
    SMELT_DT_UINT4, SMELT_DT_INT4, SMELT_DT_UINT2, SMELT_DT_INT2, SMELT_DT_FLOAT8E4M3FN,       \
        SMELT_DT_FLOAT8E4M3FNUZ, SMELT_DT_FLOAT8E5M2, SMELT_DT_FLOAT8E5M2FNUZ,                 \
        SMELT_DT_FLOAT4E2M1
static const smelt_dtype k_quant_types[] = {SMELT_DT_UINT8,     SMELT_DT_INT8, SMELT_DT_UINT16,
                                            SMELT_DT_INT16,     LOWBIT_QUANT_TYPES,
                                            SMELT_DT_UNDEFINED};
static const smelt_dtype k_dequant_types[] = {SMELT_DT_UINT8,  SMELT_DT_INT8,
                                              SMELT_DT_UINT16, SMELT_DT_INT16,
                                              SMELT_DT_INT32,  LOWBIT_QUANT_TYPES,
                                              SMELT_DT_UNDEFINED};
static const smelt_dtype k_quant_in_types[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT16, SMELT_DT_BFLOAT16,
                                               SMELT_DT_INT32, SMELT_DT_UNDEFINED};
static const smelt_dtype k_int8_types[] = {SMELT_DT_UINT8, SMELT_DT_INT8, SMELT_DT_UNDEFINED};
static const smelt_dtype k_f32_only[] = {SMELT_DT_FLOAT32, SMELT_DT_UNDEFINED};

static const char *input_name(const gr_node *node, int i)
{
    return i < node->n_inputs && node->inputs[i] ? node->inputs[i]->name : "";
}

static void quant_range(smelt_dtype dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case SMELT_DT_INT8: *lo = INT8_MIN, *hi = INT8_MAX; return;
    case SMELT_DT_UINT16: *lo = 0, *hi = UINT16_MAX; return;
    case SMELT_DT_INT16: *lo = INT16_MIN, *hi = INT16_MAX; return;
    case SMELT_DT_INT4: *lo = -8, *hi = 7; return;
    case SMELT_DT_UINT4: *lo = 0, *hi = 15; return;
    case SMELT_DT_INT2: *lo = -2, *hi = 1; return;
    case SMELT_DT_UINT2: *lo = 0, *hi = 3; return;
    default: *lo = 0, *hi = UINT8_MAX; return;
    }
}

static bool dtype_in(smelt_dtype dt, const smelt_dtype *list)
{
    for (; *list != SMELT_DT_UNDEFINED; list++)
        if (*list == dt) return true;
    return false;
}

/* Rounds a float to the nearest value of dt (float16/bfloat16: once). */
static float round_to(smelt_dtype dt, float v)
{
    if (dt == SMELT_DT_FLOAT16) return smelt_f16_to_f32(smelt_f32_to_f16(v));
    if (dt == SMELT_DT_BFLOAT16) return smelt_bf16_to_f32(smelt_f32_to_bf16(v));
    return v;
}

/* ---- attributes ------------------------------------------------------------------ */

typedef op_quant_attrs quant_attrs;

OP_ATTRS(QUANTIZE_LINEAR) = {{"axis", 13, 0},         {"saturate", 19, 0}, {"block_size", 21, 0},
                             {"output_dtype", 21, 0}, {"precision", 23, 0}, {NULL, 0, 0}};
OP_ATTRS(DEQUANTIZE_LINEAR) = {{"axis", 13, 0}, {"block_size", 21, 0}, {"output_dtype", 23, 0},
                               {NULL, 0, 0}};

static smelt_status dtype_attr(smelt_ctx *ctx, const gr_node *node, const char *name,
                               const smelt_dtype *allowed, const char *allowed_text,
                               smelt_dtype *out)
{
    int64_t v;
    SMELT_TRY(op_attr_int(ctx, node, name, 0, &v));
    *out = SMELT_DT_UNDEFINED;
    if (v == 0) return SMELT_OK;
    if (v > 0 && v < SMELT_DT_COUNT_ && dtype_in((smelt_dtype)v, allowed)) {
        *out = (smelt_dtype)v;
        return SMELT_OK;
    }
    return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                   "attribute '%s' is %lld; smelt implements %s",
                   name, (long long)v, allowed_text);
}

static smelt_status quant_attrs_import(smelt_ctx *ctx, gr_graph *g, gr_node *node, bool quantize)
{
    quant_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_int(ctx, node, "axis", 1, &a->axis));
    SMELT_TRY(op_attr_int(ctx, node, "block_size", 0, &a->block_size));
    if (a->block_size < 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'block_size' is %lld; expected >= 0",
                       (long long)a->block_size);
    if (!quantize)
        return dtype_attr(ctx, node, "output_dtype", k_scale_types, "float, float16 and bfloat16",
                          &a->output_dtype);
    SMELT_TRY(op_attr_bool(ctx, node, "saturate", true, &a->saturate));
    SMELT_TRY(dtype_attr(ctx, node, "output_dtype", k_quant_types,
                         "uint8, int8, uint16, int16, uint4, int4, uint2, int2, float8e4m3fn, "
                         "float8e4m3fnuz, float8e5m2, float8e5m2fnuz and float4e2m1",
                         &a->output_dtype));
    return dtype_attr(ctx, node, "precision", k_scale_types, "float, float16 and bfloat16",
                      &a->precision);
}

static smelt_status quantize_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    return quant_attrs_import(ctx, g, node, true);
}

static smelt_status dequantize_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    return quant_attrs_import(ctx, g, node, false);
}

/* ---- where a scale / zero point applies ----------------------------------------- */

typedef enum qp_kind { QP_TENSOR, QP_AXIS, QP_BLOCK } qp_kind;

typedef struct qparam_map {
    qp_kind kind;
    int axis;
    int64_t block;
} qparam_map;

static bool is_per_tensor(const smelt_tensor *p)
{
    return p->rank == 0 || (p->rank == 1 && p->dims[0] == 1);
}

static smelt_status check_blocked(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                  const smelt_tensor *s, const qparam_map *m)
{
    if (s->rank != x->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "blocked quantization (block_size %lld): input '%s' has rank %d, expected "
                       "%d like x",
                       (long long)m->block, input_name(node, 1), s->rank, x->rank);
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] < 0 || s->dims[d] < 0) continue;
        int64_t want = d == m->axis ? (x->dims[d] + m->block - 1) / m->block : x->dims[d];
        if (s->dims[d] != want)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "blocked quantization (block_size %lld, axis %d): input '%s' has %lld "
                           "at dim %d, expected %lld",
                           (long long)m->block, m->axis, input_name(node, 1),
                           (long long)s->dims[d], d, (long long)want);
    }
    return SMELT_OK;
}

/* How scale s (and zero point zp, same shape) map onto x. */
static smelt_status qparam_map_of(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                  const smelt_tensor *s, const smelt_tensor *zp,
                                  const quant_attrs *a, qparam_map *m)
{
    memset(m, 0, sizeof *m);
    bool same = zp && zp->rank == s->rank &&
                !memcmp(zp->dims, s->dims, sizeof(int64_t) * (size_t)s->rank);
    if (zp && !same && !(is_per_tensor(zp) && is_per_tensor(s))) /* [] and [1] both per tensor */
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "zero point '%s' and scale '%s' have different shapes", input_name(node, 2),
                       input_name(node, 1));
    if (a->block_size == 0 && is_per_tensor(s)) return SMELT_OK;
    if (x->rank == 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input x '%s' is a scalar but scale '%s' is not per tensor",
                       input_name(node, 0), input_name(node, 1));
    SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &m->axis));
    if (a->block_size > 0) {
        m->kind = QP_BLOCK;
        m->block = a->block_size;
        return check_blocked(ctx, node, x, s, m);
    }
    m->kind = QP_AXIS;
    int64_t n = x->dims[m->axis];
    if (s->rank != 1 || (n >= 0 && s->dims[0] >= 0 && s->dims[0] != n))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "per-axis scale '%s' has rank %d and %lld elements; expected 1-D with "
                       "%lld (dim %d of x '%s')",
                       input_name(node, 1), s->rank, (long long)(s->rank ? s->dims[0] : 1),
                       (long long)n, m->axis, input_name(node, 0));
    return SMELT_OK;
}

/* Flat offset into the scale of x's element at multi-index idx. */
static int64_t qparam_offset(const qparam_map *m, const smelt_tensor *s, const int64_t *idx)
{
    if (m->kind == QP_TENSOR) return 0;
    if (m->kind == QP_AXIS) return idx[m->axis];
    int64_t off = 0;
    for (int d = 0; d < s->rank; d++)
        off = off * s->dims[d] + (d == m->axis ? idx[d] / m->block : idx[d]);
    return off;
}

static ir_expr *qparam_read(te_graph *g, const qparam_map *m, const te_tensor *p,
                            ir_expr *const *idx)
{
    ir_expr *pi[SMELT_MAX_RANK];
    for (int d = 0; d < p->n_axes; d++) {
        if (m->kind == QP_TENSOR)
            pi[d] = ir_int(&g->b, 0);
        else if (m->kind == QP_AXIS)
            pi[d] = idx[m->axis];
        else
            pi[d] = d == m->axis ? ir_binary(&g->b, IR_FLOORDIV, idx[d], ir_int(&g->b, m->block))
                                 : idx[d];
    }
    return te_read(g, p, pi);
}

/* ---- QuantizeLinear ---------------------------------------------------------------- */

typedef struct quantize_types {
    smelt_dtype div;  /* type of x / scale */
    smelt_dtype wide; /* type of rint(...) + zp: float32, or float64 */
    smelt_dtype out;
} quantize_types;

static smelt_dtype wider_float(smelt_dtype a, smelt_dtype b)
{
    return a == b ? a : SMELT_DT_FLOAT32;
}

static smelt_status quantize_check(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, qparam_map *m,
                                   quantize_types *t)
{
    const quant_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *s = in[1], *zp = op_input(node, in, 2);
    SMELT_TRY(op_check_dtype(ctx, node, x, "input x", k_quant_in_types));
    SMELT_TRY(op_check_dtype(ctx, node, s, "input y_scale", k_scale_types));
    t->out = a->output_dtype ? a->output_dtype : SMELT_DT_UINT8;
    if (zp) {
        SMELT_TRY(op_check_dtype(ctx, node, zp, "input y_zero_point", k_quant_types));
        if (a->output_dtype && a->output_dtype != zp->dtype)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "attribute 'output_dtype' is %s but y_zero_point '%s' is %s",
                           smelt_dtype_name(a->output_dtype), input_name(node, 2),
                           smelt_dtype_name(zp->dtype));
        t->out = zp->dtype;
    }
    if (a->precision)
        t->div = a->precision;
    else
        t->div = x->dtype == SMELT_DT_INT32 ? SMELT_DT_FLOAT64 : wider_float(x->dtype, s->dtype);
    t->wide = t->div == SMELT_DT_FLOAT64 ? SMELT_DT_FLOAT64 : SMELT_DT_FLOAT32;
    return qparam_map_of(ctx, node, x, s, zp, a, m);
}

static smelt_status quantize_infer(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    qparam_map m;
    quantize_types t;
    SMELT_TRY(quantize_check(ctx, node, in, &m, &t));
    op_copy_shape(&out[0], in[0]);
    out[0].dtype = t.out;
    return SMELT_OK;
}

/* clamp(v, lo, hi) as the compiled code computes it (a NaN gives lo). */
static double clamp_like_ir(double v, double lo, double hi)
{
    v = v > lo ? v : lo;
    return v < hi ? v : hi;
}

static double quotient(const quantize_types *t, double x, double s);

static double quantize_one(const quantize_types *t, double x, double s, double zp, int64_t lo,
                           int64_t hi)
{
    double v = nearbyint(quotient(t, x, s)) + zp;
    if (t->wide == SMELT_DT_FLOAT32) v = (float)v;
    return clamp_like_ir(v, (double)lo, (double)hi);
}

/* The quotient in the division's type. */
static double quotient(const quantize_types *t, double x, double s)
{
    if (t->div == SMELT_DT_FLOAT64) return x / s;
    return round_to(t->div, round_to(t->div, (float)x) / round_to(t->div, (float)s));
}

/* float8/float4 output: encode(q + zp), the sum in the wide type (float32
 * unless the division is in float64); the result is the code. */
static int quantize_float_one(const quantize_types *t, double x, double s, const double *zp,
                              int mode)
{
    double q = quotient(t, x, s);
    if (zp) q = t->wide == SMELT_DT_FLOAT32 ? (double)((float)q + (float)*zp) : q + *zp;
    return smelt_lowbit_encode((int)t->out, q, mode);
}

static smelt_status quantize_eval(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *s = in[1], *zp = op_input(node, in, 2);
    qparam_map m;
    quantize_types t;
    SMELT_TRY(quantize_check(ctx, node, in, &m, &t));
    int64_t lo, hi, idx[SMELT_MAX_RANK] = {0}, n = op_numel(x);
    quant_range(t.out, &lo, &hi);
    bool to_float = smelt_dtype_is_lowbit_float(t.out);
    int mode = ((const quant_attrs *)node->op_attrs)->saturate ? SMELT_LB_SATURATE : 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t o = qparam_offset(&m, s, idx);
        if (to_float) {
            double z = zp ? op_get_f64(zp, o) : 0.0;
            ((uint8_t *)out[0].data)[i] = (uint8_t)quantize_float_one(
                &t, op_get_f64(x, i), op_get_f64(s, o), zp ? &z : NULL, mode);
        } else {
            double z = zp ? (double)op_get_i64(zp, o) : 0.0;
            op_set_i64(&out[0], i,
                       (int64_t)quantize_one(&t, op_get_f64(x, i), op_get_f64(s, o), z, lo, hi));
        }
        op_next_index(idx, x->dims, x->rank);
    }
    return SMELT_OK;
}

typedef struct quantize_te {
    const te_tensor *x, *s, *zp;
    qparam_map m;
    quantize_types t;
    int mode; /* float8: SMELT_LB_SATURATE or 0 */
} quantize_te;

/* cast(clamp(float(rint(q)) + zp, lo, hi)) with q in the division's type. */
static ir_expr *saturate_round(te_graph *g, ir_expr *q, ir_expr *zp, smelt_dtype wide,
                               smelt_dtype out)
{
    ir_builder *b = &g->b;
    int64_t lo, hi;
    if (!q) return NULL; /* the builder failed (out of memory): it says so */
    quant_range(out, &lo, &hi);
    ir_expr *v = ir_cast(b, wide, ir_call(b, IR_CALL_ROUND, q->dtype, 1, &q));
    if (zp) v = ir_add(b, v, ir_cast(b, wide, zp));
    v = ir_binary(b, IR_MAX, v, ir_const_float(b, wide, (double)lo));
    v = ir_binary(b, IR_MIN, v, ir_const_float(b, wide, (double)hi));
    if (!smelt_dtype_is_lowbit(out)) return ir_cast(b, out, v);
    /* in range and integral already: the encoding is exact */
    ir_expr *args[2] = {v, ir_const_int(b, SMELT_DT_INT32, SMELT_LB_SATURATE)};
    return ir_call(b, IR_CALL_LB_ENCODE, out, 2, args);
}

/* encode(q + zp) for a float8/float4 output. */
static ir_expr *encode_float(te_graph *g, ir_expr *q, ir_expr *zp, const quantize_te *d)
{
    ir_builder *b = &g->b;
    ir_expr *v = ir_cast(b, d->t.wide, q);
    if (zp) {
        ir_expr *z = ir_call(b, IR_CALL_LB_DECODE, SMELT_DT_FLOAT32, 1, &zp);
        v = ir_add(b, v, ir_cast(b, d->t.wide, z));
    }
    ir_expr *args[2] = {v, ir_const_int(b, SMELT_DT_INT32, d->mode)};
    return ir_call(b, IR_CALL_LB_ENCODE, d->t.out, 2, args);
}

static ir_expr *quantize_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const quantize_te *d = user;
    ir_builder *b = &g->b;
    ir_expr *x = ir_cast(b, d->t.div, te_read(g, d->x, idx));
    ir_expr *s = ir_cast(b, d->t.div, qparam_read(g, &d->m, d->s, idx));
    ir_expr *zp = d->zp ? qparam_read(g, &d->m, d->zp, idx) : NULL;
    ir_expr *q = ir_binary(b, IR_DIV, x, s);
    if (smelt_dtype_is_lowbit_float(d->t.out)) return encode_float(g, q, zp, d);
    return saturate_round(g, q, zp, d->t.wide, d->t.out);
}

static smelt_tensor te_type(const te_tensor *t) { return op_conv_te_type(t); }

static smelt_status quantize_compute(op_compute_args *a)
{
    quantize_te *d = smelt_arena_alloc(&a->te->arena, sizeof *d);
    if (!d) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    smelt_tensor types[3];
    const smelt_tensor *in[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3 && i < a->node->n_inputs; i++)
        if (a->in[i]) types[i] = te_type(a->in[i]), in[i] = &types[i];
    SMELT_TRY(quantize_check(a->ctx, a->node, in, &d->m, &d->t));
    d->mode = ((const quant_attrs *)a->node->op_attrs)->saturate ? SMELT_LB_SATURATE : 0;
    d->x = a->in[0];
    d->s = a->in[1];
    d->zp = in[2] ? a->in[2] : NULL;
    const smelt_tensor *y = &a->out_type[0];
    a->out[0] = te_compute(a->te, "y", y->dtype, y->rank, y->dims, quantize_body, d, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_QUANTIZE_LINEAR = {
    .compute = quantize_compute,
    .import = quantize_import,
    .infer = quantize_infer,
    .eval = quantize_eval,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- DequantizeLinear ------------------------------------------------------------ */

static smelt_status dequantize_check(smelt_ctx *ctx, const gr_node *node,
                                     const smelt_tensor *const *in, qparam_map *m,
                                     smelt_dtype *out_dt)
{
    const quant_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *s = in[1], *zp = op_input(node, in, 2);
    SMELT_TRY(op_check_dtype(ctx, node, x, "input x", k_dequant_types));
    SMELT_TRY(op_check_dtype(ctx, node, s, "input x_scale", k_scale_types));
    if (zp && zp->dtype != x->dtype)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "x_zero_point '%s' has dtype %s, expected %s like x '%s'",
                       input_name(node, 2), smelt_dtype_name(zp->dtype),
                       smelt_dtype_name(x->dtype), input_name(node, 0));
    *out_dt = a->output_dtype ? a->output_dtype : s->dtype;
    return qparam_map_of(ctx, node, x, s, zp, a, m);
}

static smelt_status dequantize_infer(smelt_ctx *ctx, const gr_node *node,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    qparam_map m;
    smelt_dtype dt = SMELT_DT_UNDEFINED;
    SMELT_TRY(dequantize_check(ctx, node, in, &m, &dt));
    op_copy_shape(&out[0], in[0]);
    out[0].dtype = dt;
    return SMELT_OK;
}

static smelt_status dequantize_eval(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *s = in[1], *zp = op_input(node, in, 2);
    qparam_map m;
    smelt_dtype dt = SMELT_DT_UNDEFINED;
    SMELT_TRY(dequantize_check(ctx, node, in, &m, &dt));
    int64_t idx[SMELT_MAX_RANK] = {0}, n = op_numel(x);
    for (int64_t i = 0; i < n; i++) {
        int64_t o = qparam_offset(&m, s, idx);
        float y;
        if (smelt_dtype_is_lowbit_float(x->dtype)) { /* -0 - 0 stays -0, NaN stays NaN */
            float v = (float)op_get_f64(x, i) - (zp ? (float)op_get_f64(zp, o) : 0.0f);
            y = v * (float)op_get_f64(s, o);
        } else {
            int64_t v = op_get_i64(x, i) - (zp ? op_get_i64(zp, o) : 0);
            y = (float)v * (float)op_get_f64(s, o);
        }
        op_set_f64(&out[0], i, round_to(dt, y));
        op_next_index(idx, x->dims, x->rank);
    }
    return SMELT_OK;
}

typedef struct dequantize_te {
    const te_tensor *x, *s, *zp;
    qparam_map m;
} dequantize_te;

static ir_expr *dequantize_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const dequantize_te *d = user;
    ir_builder *b = &g->b;
    if (smelt_dtype_is_lowbit_float(d->x->buf->dtype)) {
        ir_expr *x = te_read(g, d->x, idx);
        ir_expr *v = ir_call(b, IR_CALL_LB_DECODE, SMELT_DT_FLOAT32, 1, &x);
        if (d->zp) {
            ir_expr *z = qparam_read(g, &d->m, d->zp, idx);
            v = ir_sub(b, v, ir_call(b, IR_CALL_LB_DECODE, SMELT_DT_FLOAT32, 1, &z));
        }
        return ir_mul(b, v, ir_cast(b, SMELT_DT_FLOAT32, qparam_read(g, &d->m, d->s, idx)));
    }
    /* int32 x minus an int32 zero point needs 64 bits */
    smelt_dtype diff_dt = d->x->buf->dtype == SMELT_DT_INT32 ? SMELT_DT_INT64 : SMELT_DT_INT32;
    ir_expr *v = ir_cast(b, diff_dt, te_read(g, d->x, idx));
    if (d->zp) v = ir_sub(b, v, ir_cast(b, diff_dt, qparam_read(g, &d->m, d->zp, idx)));
    ir_expr *s = ir_cast(b, SMELT_DT_FLOAT32, qparam_read(g, &d->m, d->s, idx));
    return ir_mul(b, ir_cast(b, SMELT_DT_FLOAT32, v), s); /* te_compute rounds to y's type */
}

static smelt_status dequantize_compute(op_compute_args *a)
{
    dequantize_te *d = smelt_arena_alloc(&a->te->arena, sizeof *d);
    if (!d) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    smelt_tensor types[3];
    const smelt_tensor *in[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3 && i < a->node->n_inputs; i++)
        if (a->in[i]) types[i] = te_type(a->in[i]), in[i] = &types[i];
    smelt_dtype dt = SMELT_DT_UNDEFINED;
    SMELT_TRY(dequantize_check(a->ctx, a->node, in, &d->m, &dt));
    d->x = a->in[0];
    d->s = a->in[1];
    d->zp = in[2] ? a->in[2] : NULL;
    const smelt_tensor *y = &a->out_type[0];
    a->out[0] = te_compute(a->te, "y", y->dtype, y->rank, y->dims, dequantize_body, d, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_DEQUANTIZE_LINEAR = {
    .compute = dequantize_compute,
    .import = dequantize_import,
    .infer = dequantize_infer,
    .eval = dequantize_eval,
    /* constant weights stay quantized until passes/fuse_qdq.c has seen them */
    .flags = OP_FLAG_FOLD_LATE,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- DynamicQuantizeLinear ---------------------------------------------------------
 * uint8 with the range [min(0, min x), max(0, max x)]:
 *   scale = (max - min, or 1 when 0) / 255, zp = rint(clamp(0 - min / scale, 0, 255)),
 *   y = clamp(rint(x / scale) + zp, 0, 255), all in float32. */

static smelt_status dynamic_quantize_infer(smelt_ctx *ctx, const gr_node *node,
                                           const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(op_check_dtype(ctx, node, in[0], "input x", k_f32_only));
    op_copy_shape(&out[0], in[0]);
    out[0].dtype = SMELT_DT_UINT8;
    out[1] = (smelt_tensor){.dtype = SMELT_DT_FLOAT32, .rank = 0};
    out[2] = (smelt_tensor){.dtype = SMELT_DT_UINT8, .rank = 0};
    return SMELT_OK;
}

static float dynamic_scale(float lo, float hi) { return (hi == lo ? 1.0f : hi - lo) / 255.0f; }

static float dynamic_zero_point(float lo, float scale)
{
    return nearbyintf((float)clamp_like_ir(0.0f - lo / scale, 0.0, 255.0));
}

static smelt_status dynamic_quantize_eval(smelt_ctx *ctx, const gr_node *node,
                                          const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx, (void)node;
    const float *x = in[0]->data;
    int64_t n = op_numel(in[0]);
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    float scale = dynamic_scale(lo, hi), zp = dynamic_zero_point(lo, scale);
    uint8_t *y = out[0].data;
    for (int64_t i = 0; i < n; i++)
        y[i] = (uint8_t)clamp_like_ir((float)(nearbyintf(x[i] / scale) + zp), 0.0, 255.0);
    *(float *)out[1].data = scale;
    *(uint8_t *)out[2].data = (uint8_t)zp;
    return SMELT_OK;
}

typedef struct dynamic_te {
    const te_tensor *x, *lo, *hi, *scale, *zp;
} dynamic_te;

static ir_expr *dynamic_extreme(te_graph *g, const te_tensor *x, ir_reduce_op op)
{
    ir_axis axes[SMELT_MAX_RANK];
    ir_expr *xi[SMELT_MAX_RANK];
    static const char *const names[] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"};
    _Static_assert(SMELT_ARRAY_LEN(names) == SMELT_MAX_RANK, "one reduce axis name per dim");
    for (int d = 0; d < x->n_axes; d++) {
        axes[d] = te_reduce_axis(g, names[d], x->buf->shape[d]);
        xi[d] = ir_var_ref(&g->b, axes[d].var);
    }
    return te_reduce(g, op, te_read(g, x, xi), x->n_axes, axes);
}

static ir_expr *dynamic_min_body(te_graph *g, ir_expr *const *idx, void *user)
{
    (void)idx;
    return dynamic_extreme(g, ((const dynamic_te *)user)->x, IR_REDUCE_MIN);
}

static ir_expr *dynamic_max_body(te_graph *g, ir_expr *const *idx, void *user)
{
    (void)idx;
    return dynamic_extreme(g, ((const dynamic_te *)user)->x, IR_REDUCE_MAX);
}

static ir_expr *f32c(te_graph *g, double v) { return ir_const_float(&g->b, SMELT_DT_FLOAT32, v); }

/* The range includes 0: min(0, min x) and max(0, max x). */
static ir_expr *range_end(te_graph *g, const te_tensor *t, ir_kind k)
{
    return ir_binary(&g->b, k, te_read(g, t, NULL), f32c(g, 0.0));
}

static ir_expr *dynamic_scale_body(te_graph *g, ir_expr *const *idx, void *user)
{
    (void)idx;
    const dynamic_te *d = user;
    ir_builder *b = &g->b;
    ir_expr *lo = range_end(g, d->lo, IR_MIN), *hi = range_end(g, d->hi, IR_MAX);
    ir_expr *span = ir_select(b, ir_binary(b, IR_EQ, hi, lo), f32c(g, 1.0), ir_sub(b, hi, lo));
    return ir_binary(b, IR_DIV, span, f32c(g, 255.0));
}

static ir_expr *dynamic_zp_body(te_graph *g, ir_expr *const *idx, void *user)
{
    (void)idx;
    const dynamic_te *d = user;
    ir_builder *b = &g->b;
    ir_expr *lo = range_end(g, d->lo, IR_MIN);
    ir_expr *z = ir_sub(b, f32c(g, 0.0), ir_binary(b, IR_DIV, lo, te_read(g, d->scale, NULL)));
    z = ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, z, f32c(g, 0.0)), f32c(g, 255.0));
    return ir_call(b, IR_CALL_ROUND, SMELT_DT_FLOAT32, 1, &z);
}

static ir_expr *dynamic_y_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const dynamic_te *d = user;
    ir_expr *q = ir_binary(&g->b, IR_DIV, te_read(g, d->x, idx), te_read(g, d->scale, NULL));
    return saturate_round(g, q, te_read(g, d->zp, NULL), SMELT_DT_FLOAT32, SMELT_DT_UINT8);
}

static ir_expr *dynamic_zp_out_body(te_graph *g, ir_expr *const *idx, void *user)
{
    (void)idx;
    return ir_cast(&g->b, SMELT_DT_UINT8, te_read(g, ((const dynamic_te *)user)->zp, NULL));
}

/* y through smelt.dynq_u8 (one vectorised pass for the range, one to
 * quantize; the generic stage converts float to u8 one value at a time). */
static ir_stmt *build_dynq(te_graph *g, ir_buffer *out, void *user)
{
    const te_tensor *x = user;
    ir_builder *b = &g->b;
    int64_t n = 1;
    for (int d = 0; d < x->n_axes; d++) n *= x->buf->shape[d];
    ir_call_arg args[3] = {{out, ir_int(b, 0)}, {x->buf, ir_int(b, 0)}, {NULL, ir_int(b, n)}};
    ir_stmt *s = ir_call_stmt(b, "smelt.dynq_u8", 3, args);
    return b->failed ? NULL : s;
}

static te_tensor *dynamic_y_stage(op_compute_args *a, dynamic_te *d)
{
    const smelt_tensor *y = &a->out_type[0];
    if (d->x->kind != TE_PLACEHOLDER)
        return te_compute(a->te, "y", SMELT_DT_UINT8, y->rank, y->dims, dynamic_y_body, d, "injective");
    te_tensor *inputs[1] = {(te_tensor *)d->x};
    return te_extern_stage(a->te, "y", SMELT_DT_UINT8, y->rank, y->dims, 1, inputs, build_dynq,
                           (void *)d->x, "dynq_u8", 2.0 * (double)op_numel(y));
}

static smelt_status dynamic_quantize_compute(op_compute_args *a)
{
    te_graph *g = a->te;
    dynamic_te *d = smelt_arena_alloc(&g->arena, sizeof *d);
    if (!d) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    d->x = a->in[0];
    const int64_t *no_dims = NULL;
    d->lo = te_compute(g, "x_min", SMELT_DT_FLOAT32, 0, no_dims, dynamic_min_body, d, "reduce");
    d->hi = d->lo ? te_compute(g, "x_max", SMELT_DT_FLOAT32, 0, no_dims, dynamic_max_body, d,
                               "reduce")
                  : NULL;
    d->scale = d->hi ? te_compute(g, "y_scale", SMELT_DT_FLOAT32, 0, no_dims, dynamic_scale_body,
                                  d, "injective")
                     : NULL;
    d->zp = d->scale ? te_compute(g, "zp_f", SMELT_DT_FLOAT32, 0, no_dims, dynamic_zp_body, d,
                                  "injective")
                     : NULL;
    a->out[0] = d->zp ? dynamic_y_stage(a, d) : NULL;
    a->out[1] = (te_tensor *)d->scale;
    a->out[2] = a->out[0] ? te_compute(g, "y_zero_point", SMELT_DT_UINT8, 0, no_dims,
                                       dynamic_zp_out_body, d, "injective")
                          : NULL;
    return a->out[2] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_DYNAMIC_QUANTIZE_LINEAR = {
    .compute = dynamic_quantize_compute,
    .infer = dynamic_quantize_infer,
    .eval = dynamic_quantize_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 3,
    .max_outputs = 3,
};

/* ---- integer operands shifted by their zero points ------------------------------------
 * A zero point (or scale) of a matrix product is per tensor, per row of A
 * (1-D [M], as [M, 1]) or per column of B (1-D [N]), or any shape that
 * broadcasts to its operand (e.g. [D1, D2, M, 1]).  One of a convolution is
 * per tensor, or for W per output channel (1-D [M]). */

typedef struct operand_param {
    const smelt_tensor *p; /* NULL: none */
    int rank;              /* view: p's dims as broadcast against the operand */
    int64_t dims[SMELT_MAX_RANK];
} operand_param;

/* The view of param p over an operand of `rank`; per_row: a 1-D param is
 * one value per row (A's zero point), else it broadcasts from the right. */
static smelt_status param_view(smelt_ctx *ctx, const gr_node *node, int input,
                               const smelt_tensor *p, const smelt_tensor *operand, bool per_row,
                               operand_param *v)
{
    memset(v, 0, sizeof *v);
    v->p = p;
    if (!p) return SMELT_OK;
    v->rank = p->rank;
    memcpy(v->dims, p->dims, sizeof(int64_t) * (size_t)p->rank);
    if (per_row && p->rank == 1 && operand->rank >= 2 && op_numel(p) != 1)
        v->dims[v->rank++] = 1;
    bool ok = v->rank <= operand->rank;
    for (int d = 0; ok && d < v->rank; d++) {
        int64_t pd = v->dims[v->rank - 1 - d], od = operand->dims[operand->rank - 1 - d];
        ok = pd == 1 || pd < 0 || od < 0 || pd == od;
    }
    if (!ok)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input '%s' (rank %d) does not broadcast to its operand of rank %d: "
                       "expected a scalar, a 1-D per-%s vector or a broadcastable shape",
                       input_name(node, input), p->rank, operand->rank,
                       per_row ? "row" : "column");
    return SMELT_OK;
}

/* Per output channel of a convolution's W, or per tensor. */
static smelt_status channel_param(smelt_ctx *ctx, const gr_node *node, int input,
                                  const smelt_tensor *p, const smelt_tensor *w, bool allow_channel,
                                  operand_param *v)
{
    memset(v, 0, sizeof *v);
    v->p = p;
    if (!p || is_per_tensor(p)) return SMELT_OK;
    if (!allow_channel || p->rank != 1 || (p->dims[0] >= 0 && w->dims[0] >= 0 && p->dims[0] != w->dims[0]))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input '%s' must be a scalar%s", input_name(node, input),
                       allow_channel ? " or 1-D with one value per output channel" : "");
    v->rank = w->rank;
    for (int d = 0; d < w->rank; d++) v->dims[d] = d == 0 ? p->dims[0] : 1;
    return SMELT_OK;
}

/* Offset into the param of the operand element at multi-index idx. */
static int64_t param_offset(const operand_param *v, const smelt_tensor *operand,
                            const int64_t *idx)
{
    int64_t off = 0;
    for (int d = 0; d < v->rank; d++) {
        int64_t dim = v->dims[d], i = idx[operand->rank - v->rank + d];
        off = off * dim + (dim == 1 ? 0 : i);
    }
    return off;
}

/* p[...] at the operand's multi-index idx: the view's dim d is operand dim
 * lead + d, and p's dims are the view's first ones (a per-row view appends a
 * 1, a per-channel view of a 1-D param adds trailing 1s). */
static ir_expr *param_read(te_graph *g, const operand_param *v, const te_tensor *p,
                           int operand_rank, ir_expr *const *idx)
{
    ir_expr *pi[SMELT_MAX_RANK];
    int lead = operand_rank - v->rank;
    for (int d = 0; d < p->n_axes; d++)
        pi[d] = p->buf->shape[d] == 1 ? ir_int(&g->b, 0) : idx[lead + d];
    return te_read(g, p, pi);
}

/* operand - zero point as dt, int32 or float64 (a new tensor owning its data). */
static smelt_status shifted_operand(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *t,
                                    const operand_param *zp, smelt_dtype dt, smelt_tensor *out)
{
    *out = (smelt_tensor){.dtype = dt, .rank = t->rank};
    memcpy(out->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
    int64_t n = op_numel(t), idx[SMELT_MAX_RANK] = {0};
    out->data = smelt_calloc((size_t)(n > 0 ? n : 1), smelt_dtype_size(dt));
    if (!out->data) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        int64_t z = zp->p ? op_get_i64(zp->p, param_offset(zp, t, idx)) : 0;
        if (dt == SMELT_DT_FLOAT64)
            ((double *)out->data)[i] = (double)(op_get_i64(t, i) - z);
        else
            op_set_i64(out, i, op_get_i64(t, i) - z);
        op_next_index(idx, t->dims, t->rank);
    }
    return SMELT_OK;
}

typedef struct shift_te {
    const te_tensor *t, *zp;
    operand_param view;
    int rank;
} shift_te;

static ir_expr *shift_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const shift_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *v = ir_cast(b, SMELT_DT_INT32, te_read(g, s->t, idx));
    if (!s->zp) return v;
    return ir_sub(b, v, ir_cast(b, SMELT_DT_INT32, param_read(g, &s->view, s->zp, s->rank, idx)));
}

/* The int32 stage `name` = t - zp (t itself cast when there is no zero point). */
static te_tensor *shift_stage(op_compute_args *a, const char *name, const te_tensor *t,
                              const te_tensor *zp, const operand_param *view)
{
    shift_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory"), NULL;
    *s = (shift_te){.t = t, .zp = view->p ? zp : NULL, .view = *view, .rank = t->n_axes};
    return te_compute(a->te, name, SMELT_DT_INT32, t->n_axes, t->buf->shape, shift_body, s,
                      "injective");
}

static int64_t requantize(int64_t acc, double mult, int64_t zp, int64_t lo, int64_t hi)
{
    return (int64_t)clamp_like_ir(nearbyint((double)acc * mult + (double)zp), (double)lo,
                                  (double)hi);
}

/* a_scale * b_scale / y_scale in the scales' type. */
double op_quant_multiplier(smelt_dtype dt, double a, double b, double y)
{
    return round_to(dt, round_to(dt, (float)a * (float)b) / (float)y);
}

static ir_expr *requant_expr(te_graph *g, ir_expr *acc, ir_expr *as, ir_expr *bs, ir_expr *ys,
                             ir_expr *zp, smelt_dtype out)
{
    ir_builder *b = &g->b;
    ir_expr *m = ir_binary(b, IR_DIV, ir_mul(b, as, bs), ys);
    ir_expr *v = ir_mul(b, ir_cast(b, SMELT_DT_FLOAT64, acc), ir_cast(b, SMELT_DT_FLOAT64, m));
    if (zp) v = ir_add(b, v, ir_cast(b, SMELT_DT_FLOAT64, zp));
    int64_t lo, hi;
    quant_range(out, &lo, &hi);
    v = ir_call(b, IR_CALL_ROUND, SMELT_DT_FLOAT64, 1, &v);
    v = ir_binary(b, IR_MAX, v, ir_const_float(b, SMELT_DT_FLOAT64, (double)lo));
    v = ir_binary(b, IR_MIN, v, ir_const_float(b, SMELT_DT_FLOAT64, (double)hi));
    return ir_cast(b, out, v);
}

static smelt_status check_zero_point(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                                     int zp, int of)
{
    const smelt_tensor *z = op_input(node, in, zp);
    if (z && z->dtype != in[of]->dtype)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "zero point '%s' has dtype %s, expected %s like '%s'",
                       input_name(node, zp), smelt_dtype_name(z->dtype),
                       smelt_dtype_name(in[of]->dtype), input_name(node, of));
    return SMELT_OK;
}

/* Each present node input's type as te sees it (in[i] NULL when omitted). */
static void te_input_types(const op_compute_args *a, smelt_tensor *types, const smelt_tensor **in)
{
    for (int i = 0; i < a->node->n_inputs; i++) {
        in[i] = NULL;
        if (a->node->inputs[i] && a->in[i]) types[i] = te_type(a->in[i]), in[i] = &types[i];
    }
}

/* ---- MatMulInteger, QLinearMatMul ----------------------------------------------------- */

/* Operand views of a matrix product: A's params per row, B's per column. */
typedef struct product_params {
    operand_param a_zp, b_zp, a_scale, b_scale;
    int ia, ib; /* input positions of A and B */
} product_params;

/* Multi-indices into A (ia_idx) and B (ib_idx) of output element oidx, with
 * the contracted index 0 (no param varies along it). */
static void operand_indices(int ra, int rb, int out_rank, const int64_t *oidx, int64_t *ai,
                            int64_t *bi)
{
    int ob = out_rank - (ra >= 2) - (rb >= 2);
    memset(ai, 0, sizeof(int64_t) * SMELT_MAX_RANK);
    memset(bi, 0, sizeof(int64_t) * SMELT_MAX_RANK);
    for (int d = 0; d < ra - 2; d++) ai[d] = oidx[ob - (ra - 2) + d];
    for (int d = 0; d < rb - 2; d++) bi[d] = oidx[ob - (rb - 2) + d];
    if (ra >= 2) ai[ra - 2] = oidx[ob];
    if (rb >= 2) bi[rb - 1] = oidx[out_rank - 1];
}

static void operand_index_exprs(te_graph *g, int ra, int rb, int out_rank, ir_expr *const *oidx,
                                ir_expr **ai, ir_expr **bi)
{
    int ob = out_rank - (ra >= 2) - (rb >= 2);
    for (int d = 0; d < SMELT_MAX_RANK; d++) ai[d] = bi[d] = ir_int(&g->b, 0);
    for (int d = 0; d < ra - 2; d++) ai[d] = oidx[ob - (ra - 2) + d];
    for (int d = 0; d < rb - 2; d++) bi[d] = oidx[ob - (rb - 2) + d];
    if (ra >= 2) ai[ra - 2] = oidx[ob];
    if (rb >= 2) bi[rb - 1] = oidx[out_rank - 1];
}

/* Integer inputs, zero points of the same dtype, param views and the
 * output shape (dtype int32). */
static smelt_status product_check(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, int a_zp, int b_zp,
                                  product_params *pp, smelt_tensor *out)
{
    SMELT_TRY(op_check_dtype(ctx, node, in[pp->ia], "input A", k_int8_types));
    SMELT_TRY(op_check_dtype(ctx, node, in[pp->ib], "input B", k_int8_types));
    SMELT_TRY(check_zero_point(ctx, node, in, a_zp, pp->ia));
    SMELT_TRY(check_zero_point(ctx, node, in, b_zp, pp->ib));
    SMELT_TRY(param_view(ctx, node, a_zp, op_input(node, in, a_zp), in[pp->ia], true, &pp->a_zp));
    SMELT_TRY(param_view(ctx, node, b_zp, op_input(node, in, b_zp), in[pp->ib], false, &pp->b_zp));
    SMELT_TRY(op_matmul_shape(ctx, node, in[pp->ia], in[pp->ib], out));
    out->dtype = SMELT_DT_INT32;
    return SMELT_OK;
}

/* acc = (A - a_zp) @ (B - b_zp) as int32 through MatMul's reference kernel. */
static smelt_status product_eval(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, const product_params *pp,
                                 smelt_tensor *acc)
{
    smelt_tensor a = {0}, b = {0};
    smelt_status st = shifted_operand(ctx, node, in[pp->ia], &pp->a_zp, SMELT_DT_INT32, &a);
    if (st == SMELT_OK) st = shifted_operand(ctx, node, in[pp->ib], &pp->b_zp, SMELT_DT_INT32, &b);
    if (st == SMELT_OK) st = op_def_MATMUL.eval(ctx, node, (const smelt_tensor *[]){&a, &b}, acc);
    smelt_free(a.data);
    smelt_free(b.data);
    return st;
}

static te_tensor *product_compute_sum(op_compute_args *a, const product_params *pp, int a_zp,
                                      int b_zp, const char *name)
{
    te_tensor *as = shift_stage(a, "a_shift", a->in[pp->ia], a->in[a_zp], &pp->a_zp);
    te_tensor *bs = as ? shift_stage(a, "b_shift", a->in[pp->ib], a->in[b_zp], &pp->b_zp) : NULL;
    return bs ? op_matmul_te_sum(a, as, bs, SMELT_DT_INT32, name) : NULL;
}

static smelt_status matmul_integer_infer(smelt_ctx *ctx, const gr_node *node,
                                         const smelt_tensor *const *in, smelt_tensor *out)
{
    product_params pp = {.ia = 0, .ib = 1};
    return product_check(ctx, node, in, 2, 3, &pp, &out[0]);
}

static smelt_status matmul_integer_eval(smelt_ctx *ctx, const gr_node *node,
                                        const smelt_tensor *const *in, smelt_tensor *out)
{
    product_params pp = {.ia = 0, .ib = 1};
    smelt_tensor shape;
    SMELT_TRY(product_check(ctx, node, in, 2, 3, &pp, &shape));
    return product_eval(ctx, node, in, &pp, &out[0]);
}

static smelt_status matmul_integer_compute(op_compute_args *a)
{
    smelt_tensor types[4], shape;
    const smelt_tensor *in[4];
    te_input_types(a, types, in);
    product_params pp = {.ia = 0, .ib = 1};
    SMELT_TRY(product_check(a->ctx, a->node, in, 2, 3, &pp, &shape));
    SMELT_TRY(op_matmul_integer_fast(a, &a->out[0])); /* constant B: int8 micro-kernel */
    if (a->out[0]) return SMELT_OK;
    a->out[0] = product_compute_sum(a, &pp, 2, 3, "y");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_MATMUL_INTEGER = {
    .compute = matmul_integer_compute,
    .infer = matmul_integer_infer,
    .eval = matmul_integer_eval,
    .min_inputs = 2,
    .max_inputs = 4,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* QLinearMatMul inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point,
 * y_scale, y_zero_point. */
enum { QM_A, QM_AS, QM_AZ, QM_B, QM_BS, QM_BZ, QM_YS, QM_YZ };

static smelt_status requant_scales_check(smelt_ctx *ctx, const gr_node *node,
                                         const smelt_tensor *const *in, int as, int bs, int ys,
                                         int yz)
{
    SMELT_TRY(op_check_dtype(ctx, node, in[as], "the first scale", k_scale_types));
    const int scales[2] = {bs, ys};
    for (int i = 0; i < 2; i++)
        if (in[scales[i]]->dtype != in[as]->dtype)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "scale '%s' has dtype %s, expected %s like '%s'",
                           input_name(node, scales[i]), smelt_dtype_name(in[scales[i]]->dtype),
                           smelt_dtype_name(in[as]->dtype), input_name(node, as));
    SMELT_TRY(op_check_dtype(ctx, node, in[yz], "input y_zero_point", k_int8_types));
    const int per_tensor[2] = {ys, yz};
    for (int i = 0; i < 2; i++)
        if (!is_per_tensor(in[per_tensor[i]]))
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "input '%s' is not a scalar; smelt implements a per-tensor output "
                           "scale and zero point",
                           input_name(node, per_tensor[i]));
    return SMELT_OK;
}

static smelt_status qlinear_matmul_check(smelt_ctx *ctx, const gr_node *node,
                                         const smelt_tensor *const *in, product_params *pp,
                                         smelt_tensor *out)
{
    *pp = (product_params){.ia = QM_A, .ib = QM_B};
    SMELT_TRY(product_check(ctx, node, in, QM_AZ, QM_BZ, pp, out));
    SMELT_TRY(requant_scales_check(ctx, node, in, QM_AS, QM_BS, QM_YS, QM_YZ));
    SMELT_TRY(param_view(ctx, node, QM_AS, in[QM_AS], in[QM_A], true, &pp->a_scale));
    SMELT_TRY(param_view(ctx, node, QM_BS, in[QM_BS], in[QM_B], false, &pp->b_scale));
    out->dtype = in[QM_YZ]->dtype;
    return SMELT_OK;
}

static smelt_status qlinear_matmul_infer(smelt_ctx *ctx, const gr_node *node,
                                         const smelt_tensor *const *in, smelt_tensor *out)
{
    product_params pp;
    return qlinear_matmul_check(ctx, node, in, &pp, &out[0]);
}

static smelt_status qlinear_matmul_eval(smelt_ctx *ctx, const gr_node *node,
                                        const smelt_tensor *const *in, smelt_tensor *out)
{
    product_params pp;
    smelt_tensor acc;
    SMELT_TRY(qlinear_matmul_check(ctx, node, in, &pp, &acc));
    acc.dtype = SMELT_DT_INT32;
    acc.data = smelt_calloc((size_t)(op_numel(&acc) > 0 ? op_numel(&acc) : 1), sizeof(int32_t));
    if (!acc.data) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    smelt_status st = product_eval(ctx, node, in, &pp, &acc);
    const smelt_tensor *a = in[QM_A], *b = in[QM_B];
    int64_t lo, hi, oidx[SMELT_MAX_RANK] = {0}, ai[SMELT_MAX_RANK], bi[SMELT_MAX_RANK];
    quant_range(out[0].dtype, &lo, &hi);
    double ys = op_get_f64(in[QM_YS], 0);
    int64_t yz = op_get_i64(in[QM_YZ], 0);
    for (int64_t i = 0; st == SMELT_OK && i < op_numel(&acc); i++) {
        operand_indices(a->rank, b->rank, acc.rank, oidx, ai, bi);
        double as = op_get_f64(in[QM_AS], param_offset(&pp.a_scale, a, ai));
        double bs = op_get_f64(in[QM_BS], param_offset(&pp.b_scale, b, bi));
        double m = op_quant_multiplier(in[QM_AS]->dtype, as, bs, ys);
        op_set_i64(&out[0], i, requantize(((int32_t *)acc.data)[i], m, yz, lo, hi));
        op_next_index(oidx, acc.dims, acc.rank);
    }
    smelt_free(acc.data);
    return st;
}

typedef struct qmatmul_te {
    const te_tensor *acc, *a_scale, *b_scale, *y_scale, *y_zp;
    product_params pp;
    int ra, rb, out_rank;
} qmatmul_te;

static ir_expr *qlinear_matmul_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const qmatmul_te *d = user;
    ir_expr *ai[SMELT_MAX_RANK], *bi[SMELT_MAX_RANK], *zero[SMELT_MAX_RANK] = {0};
    operand_index_exprs(g, d->ra, d->rb, d->out_rank, idx, ai, bi);
    for (int i = 0; i < SMELT_MAX_RANK; i++) zero[i] = ir_int(&g->b, 0);
    ir_expr *as = param_read(g, &d->pp.a_scale, d->a_scale, d->ra, ai);
    ir_expr *bs = param_read(g, &d->pp.b_scale, d->b_scale, d->rb, bi);
    ir_expr *ys = te_read(g, d->y_scale, zero), *yz = te_read(g, d->y_zp, zero);
    return requant_expr(g, te_read(g, d->acc, idx), as, bs, ys, yz, d->y_zp->buf->dtype);
}

static smelt_status qlinear_matmul_compute(op_compute_args *a)
{
    smelt_tensor types[8], shape;
    const smelt_tensor *in[8];
    te_input_types(a, types, in);
    qmatmul_te *d = smelt_arena_alloc(&a->te->arena, sizeof *d);
    if (!d) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    SMELT_TRY(qlinear_matmul_check(a->ctx, a->node, in, &d->pp, &shape));
    SMELT_TRY(op_qlinear_matmul_fast(a, &a->out[0])); /* constant B: int8 micro-kernel */
    if (a->out[0]) return SMELT_OK;
    d->acc = product_compute_sum(a, &d->pp, QM_AZ, QM_BZ, "acc");
    if (!d->acc) return smelt_ctx_status(a->ctx);
    d->a_scale = a->in[QM_AS];
    d->b_scale = a->in[QM_BS];
    d->y_scale = a->in[QM_YS];
    d->y_zp = a->in[QM_YZ];
    d->ra = in[QM_A]->rank;
    d->rb = in[QM_B]->rank;
    d->out_rank = shape.rank;
    const smelt_tensor *y = &a->out_type[0];
    a->out[0] = te_compute(a->te, "y", y->dtype, y->rank, y->dims, qlinear_matmul_body, d,
                           "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_QLINEAR_MATMUL = {
    .compute = qlinear_matmul_compute,
    .infer = qlinear_matmul_infer,
    .eval = qlinear_matmul_eval,
    .min_inputs = 8,
    .max_inputs = 8,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- ConvInteger, QLinearConv --------------------------------------------------------- */

#define CONV_ATTRS {"auto_pad", 0, 0}, {"kernel_shape", 0, 0}, {"strides", 0, 0}, {"dilations", 0, 0}, {"pads", 0, 0}, {"group", 0, 0}
OP_ATTRS(CONV_INTEGER) = {CONV_ATTRS, {NULL, 0, 0}};
OP_ATTRS(QLINEAR_CONV) = {CONV_ATTRS, {NULL, 0, 0}};
#undef CONV_ATTRS

/* Conv's attributes, parsed by Conv's import. */
static smelt_status conv_like_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    return op_def_CONV.import(ctx, g, node);
}

typedef struct conv_params {
    int ix, iw;
    operand_param x_zp, w_zp, w_scale;
} conv_params;

static smelt_status conv_like_check(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, int x_zp, int w_zp,
                                    conv_params *cp, smelt_tensor *out)
{
    const smelt_tensor *x = in[cp->ix], *w = in[cp->iw];
    SMELT_TRY(op_check_dtype(ctx, node, x, "input x", k_int8_types));
    SMELT_TRY(op_check_dtype(ctx, node, w, "input w", k_int8_types));
    SMELT_TRY(check_zero_point(ctx, node, in, x_zp, cp->ix));
    SMELT_TRY(check_zero_point(ctx, node, in, w_zp, cp->iw));
    op_conv_shape cs;
    SMELT_TRY(op_conv_resolve(ctx, node, x, w, &cs));
    SMELT_TRY(channel_param(ctx, node, x_zp, op_input(node, in, x_zp), w, false, &cp->x_zp));
    SMELT_TRY(channel_param(ctx, node, w_zp, op_input(node, in, w_zp), w, true, &cp->w_zp));
    *out = (smelt_tensor){.dtype = SMELT_DT_INT32, .rank = x->rank};
    out->dims[0] = cs.batch;
    out->dims[1] = cs.out_channels;
    for (int i = 0; i < cs.win.n_spatial; i++) out->dims[2 + i] = cs.win.out[i];
    return SMELT_OK;
}

/* acc = conv(x - x_zp, w - w_zp) through Conv's reference kernel in float64
 * (exact: the products and sums are integers below 2^53), as int32. */
static smelt_status conv_like_eval(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, const conv_params *cp,
                                   smelt_tensor *acc)
{
    smelt_tensor x = {0}, w = {0}, y = *acc;
    y.dtype = SMELT_DT_FLOAT64;
    int64_t n = op_numel(acc);
    y.data = smelt_calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    smelt_status st = y.data ? SMELT_OK : op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    if (st == SMELT_OK)
        st = shifted_operand(ctx, node, in[cp->ix], &cp->x_zp, SMELT_DT_FLOAT64, &x);
    if (st == SMELT_OK)
        st = shifted_operand(ctx, node, in[cp->iw], &cp->w_zp, SMELT_DT_FLOAT64, &w);
    if (st == SMELT_OK)
        st = op_def_CONV.eval(ctx, node, (const smelt_tensor *[]){&x, &w, NULL}, &y);
    for (int64_t i = 0; st == SMELT_OK && i < n; i++)
        ((int32_t *)acc->data)[i] = (int32_t)(uint32_t)(int64_t)((double *)y.data)[i];
    smelt_free(x.data);
    smelt_free(w.data);
    smelt_free(y.data);
    return st;
}

static te_tensor *conv_like_compute_sum(op_compute_args *a, const conv_params *cp, int x_zp,
                                        int w_zp, const char *name)
{
    te_tensor *xs = shift_stage(a, "x_shift", a->in[cp->ix], a->in[x_zp], &cp->x_zp);
    te_tensor *ws = xs ? shift_stage(a, "w_shift", a->in[cp->iw], a->in[w_zp], &cp->w_zp) : NULL;
    return ws ? op_conv_te_sum(a, xs, ws, SMELT_DT_INT32, name) : NULL;
}

static smelt_status conv_integer_infer(smelt_ctx *ctx, const gr_node *node,
                                       const smelt_tensor *const *in, smelt_tensor *out)
{
    conv_params cp = {.ix = 0, .iw = 1};
    return conv_like_check(ctx, node, in, 2, 3, &cp, &out[0]);
}

static smelt_status conv_integer_eval(smelt_ctx *ctx, const gr_node *node,
                                      const smelt_tensor *const *in, smelt_tensor *out)
{
    conv_params cp = {.ix = 0, .iw = 1};
    smelt_tensor shape;
    SMELT_TRY(conv_like_check(ctx, node, in, 2, 3, &cp, &shape));
    return conv_like_eval(ctx, node, in, &cp, &out[0]);
}

static smelt_status conv_integer_compute(op_compute_args *a)
{
    smelt_tensor types[4], shape;
    const smelt_tensor *in[4];
    te_input_types(a, types, in);
    conv_params cp = {.ix = 0, .iw = 1};
    SMELT_TRY(conv_like_check(a->ctx, a->node, in, 2, 3, &cp, &shape));
    a->out[0] = conv_like_compute_sum(a, &cp, 2, 3, "y");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_CONV_INTEGER = {
    .compute = conv_integer_compute,
    .import = conv_like_import,
    .infer = conv_integer_infer,
    .eval = conv_integer_eval,
    .min_inputs = 2,
    .max_inputs = 4,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* QLinearConv inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point,
 * y_scale, y_zero_point, B. */
enum { QC_X, QC_XS, QC_XZ, QC_W, QC_WS, QC_WZ, QC_YS, QC_YZ, QC_B };

static smelt_status qlinear_conv_check(smelt_ctx *ctx, const gr_node *node,
                                       const smelt_tensor *const *in, conv_params *cp,
                                       smelt_tensor *out)
{
    *cp = (conv_params){.ix = QC_X, .iw = QC_W};
    SMELT_TRY(conv_like_check(ctx, node, in, QC_XZ, QC_WZ, cp, out));
    SMELT_TRY(requant_scales_check(ctx, node, in, QC_XS, QC_WS, QC_YS, QC_YZ));
    if (!is_per_tensor(in[QC_XS]))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input x_scale '%s' must be a scalar",
                       input_name(node, QC_XS));
    SMELT_TRY(channel_param(ctx, node, QC_WS, in[QC_WS], in[QC_W], true, &cp->w_scale));
    const smelt_tensor *b = op_input(node, in, QC_B);
    if (b && (b->dtype != SMELT_DT_INT32 || b->rank != 1 ||
              (b->dims[0] >= 0 && out->dims[1] >= 0 && b->dims[0] != out->dims[1])))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input B '%s' must be int32 1-D with one value per output channel",
                       input_name(node, QC_B));
    out->dtype = in[QC_YZ]->dtype;
    return SMELT_OK;
}

static smelt_status qlinear_conv_infer(smelt_ctx *ctx, const gr_node *node,
                                       const smelt_tensor *const *in, smelt_tensor *out)
{
    conv_params cp;
    return qlinear_conv_check(ctx, node, in, &cp, &out[0]);
}

static smelt_status qlinear_conv_eval(smelt_ctx *ctx, const gr_node *node,
                                      const smelt_tensor *const *in, smelt_tensor *out)
{
    conv_params cp;
    smelt_tensor acc;
    SMELT_TRY(qlinear_conv_check(ctx, node, in, &cp, &acc));
    acc.dtype = SMELT_DT_INT32;
    int64_t n = op_numel(&acc), plane = acc.dims[0] > 0 && acc.dims[1] > 0 ? n / acc.dims[0] / acc.dims[1] : 0;
    acc.data = smelt_calloc((size_t)(n > 0 ? n : 1), sizeof(int32_t));
    if (!acc.data) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    smelt_status st = conv_like_eval(ctx, node, in, &cp, &acc);
    const smelt_tensor *b = op_input(node, in, QC_B);
    int64_t lo, hi;
    quant_range(out[0].dtype, &lo, &hi);
    double xs = op_get_f64(in[QC_XS], 0), ys = op_get_f64(in[QC_YS], 0);
    int64_t yz = op_get_i64(in[QC_YZ], 0);
    for (int64_t i = 0; st == SMELT_OK && i < n; i++) {
        int64_t m = i / plane % acc.dims[1];
        int64_t widx[SMELT_MAX_RANK] = {m};
        double ws = op_get_f64(in[QC_WS], param_offset(&cp.w_scale, in[QC_W], widx));
        int32_t v = (int32_t)((uint32_t)((int32_t *)acc.data)[i] + (uint32_t)(b ? op_get_i64(b, m) : 0));
        double mult = op_quant_multiplier(in[QC_XS]->dtype, xs, ws, ys);
        op_set_i64(&out[0], i, requantize(v, mult, yz, lo, hi));
    }
    smelt_free(acc.data);
    return st;
}

typedef struct qconv_te {
    const te_tensor *acc, *x_scale, *w_scale, *y_scale, *y_zp, *bias;
    conv_params cp;
    int w_rank;
} qconv_te;

static ir_expr *qlinear_conv_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const qconv_te *d = user;
    ir_builder *b = &g->b;
    ir_expr *zero[SMELT_MAX_RANK], *widx[SMELT_MAX_RANK];
    for (int i = 0; i < SMELT_MAX_RANK; i++) zero[i] = widx[i] = ir_int(b, 0);
    widx[0] = idx[1];
    ir_expr *acc = te_read(g, d->acc, idx);
    if (d->bias) acc = ir_add(b, acc, te_read(g, d->bias, &idx[1]));
    ir_expr *ws = param_read(g, &d->cp.w_scale, d->w_scale, d->w_rank, widx);
    return requant_expr(g, acc, te_read(g, d->x_scale, zero), ws, te_read(g, d->y_scale, zero),
                        te_read(g, d->y_zp, zero), d->y_zp->buf->dtype);
}

static smelt_status qlinear_conv_compute(op_compute_args *a)
{
    smelt_tensor types[9], shape;
    const smelt_tensor *in[9];
    te_input_types(a, types, in);
    qconv_te *d = smelt_arena_alloc(&a->te->arena, sizeof *d);
    if (!d) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    SMELT_TRY(qlinear_conv_check(a->ctx, a->node, in, &d->cp, &shape));
    SMELT_TRY(op_qlinear_conv_fast(a, &a->out[0])); /* constant weights: int8 micro-kernels */
    if (a->out[0]) return SMELT_OK;
    d->acc = conv_like_compute_sum(a, &d->cp, QC_XZ, QC_WZ, "conv");
    if (!d->acc) return smelt_ctx_status(a->ctx);
    d->x_scale = a->in[QC_XS];
    d->w_scale = a->in[QC_WS];
    d->y_scale = a->in[QC_YS];
    d->y_zp = a->in[QC_YZ];
    d->bias = a->node->n_inputs > QC_B && in[QC_B] ? a->in[QC_B] : NULL;
    d->w_rank = in[QC_W]->rank;
    const smelt_tensor *y = &a->out_type[0];
    a->out[0] = te_compute(a->te, "y", y->dtype, y->rank, y->dims, qlinear_conv_body, d,
                           "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_QLINEAR_CONV = {
    .compute = qlinear_conv_compute,
    .import = conv_like_import,
    .infer = qlinear_conv_infer,
    .eval = qlinear_conv_eval,
    .min_inputs = 8,
    .max_inputs = 9,
    .min_outputs = 1,
    .max_outputs = 1,
};
