/* The QDQ form of a quantized convolution or matrix product, as
 * onnxruntime.quantization's quantize_static writes it, becomes one integer
 * operator:
 *
 *   DequantizeLinear(x_q, xs, xz) ----------------.
 *   DequantizeLinear(w_q, ws, wz)  (constant) ----+-> Conv -> QuantizeLinear(ys, yz) -> y_q
 *   DequantizeLinear(b_q, xs*ws)   (optional) ----'
 *
 *   => QLinearConv(x_q, xs, xz, w_q, ws, wz, ys, yz, b_q) -> y_q
 *
 * and likewise DequantizeLinear(a_q) @ DequantizeLinear(w_q [K, N] const,
 * per tensor or per column) -> QuantizeLinear => QLinearMatMul, and
 * DequantizeLinear -> MaxPool -> QuantizeLinear with the same parameters =>
 * MaxPool on the 8-bit tensor, and a Gemm (DequantizeLinear(a_q [M, K]) times
 * constant 8-bit weights, transB or not, an int32 bias as for Conv, alpha
 * and beta 1) => MatMulInteger(a_q, w_q as [K, N]) + b_q, cast to float32,
 * times a_s * w_s[n], into the same QuantizeLinear: the integer product
 * runs the int8 matrix kernel and the float tail fuses into its epilogue;
 * the requantization rounds in float32 where QLinear* round in double, so
 * as with Conv a value on a rounding boundary may land on the neighbouring
 * step.  A Relu between the Conv (MatMul) and the
 * QuantizeLinear becomes an integer Max with the output zero point, which
 * fuse_ops puts into the integer op's epilogue (exact).
 *
 * QLinearConv accumulates (x_q - xz) * (w_q - wz) in int32, adds the int32
 * bias and requantizes in its epilogue (ops/quant.c), so the int8 weights
 * stay int8 and no float tensor is made between the two quantized values.
 * Conditions: xs, xz, ys, yz per tensor; ws, wz per tensor or per output
 * channel (axis 0); w_q, the scales and zero points constant; the bias
 * int32 with a zero zero point and a scale equal (in float32) to xs * ws,
 * which makes b_q exactly the bias in accumulator units; the Conv's output
 * read by the QuantizeLinear only.  Results change only where the float
 * convolution's rounding and the integer one's fall on different sides of a
 * rounding boundary of the output quantization: at most one step.
 * Runs before fold_constants, which would turn DequantizeLinear(w_q) into
 * float weights (DequantizeLinear is OP_FLAG_FOLD_LATE, so shape inference
 * leaves it alone). */
#include <string.h>

#include "ops/linalg.h"
#include "ops/op.h"
#include "ops/quant.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

static bool is_const(const gr_value *v) { return v && v->constant; }

static bool const_f32_per_tensor(const gr_value *v)
{
    return is_const(v) && v->dtype == SMELT_DT_FLOAT32 && v->rank <= 1 && gr_value_numel(v) == 1;
}

static bool int8_dtype(smelt_dtype dt) { return dt == SMELT_DT_UINT8 || dt == SMELT_DT_INT8; }

/* A DequantizeLinear (or QuantizeLinear) whose scale and zero point apply
 * per tensor or along `axis` only, without blocks or type overrides. */
static const gr_node *plain_qdq(const gr_value *v, op_kind kind)
{
    const gr_node *n = pu_producer(v, kind);
    if (!n) return NULL;
    const op_quant_attrs *a = n->op_attrs;
    bool plain = a && a->block_size == 0 && a->precision == SMELT_DT_UNDEFINED &&
                 (a->output_dtype == SMELT_DT_UNDEFINED || a->output_dtype == v->dtype);
    return plain ? n : NULL;
}

static const gr_value *input(const gr_node *n, int i) { return i < n->n_inputs ? n->inputs[i] : NULL; }

/* x_q's DequantizeLinear: per tensor, an 8-bit zero point. */
static const gr_node *activation_dq(const gr_value *xd)
{
    const gr_node *dq = plain_qdq(xd, OP_DEQUANTIZE_LINEAR);
    if (!dq || xd->dtype != SMELT_DT_FLOAT32) return NULL;
    const gr_value *zp = input(dq, 2);
    bool ok = const_f32_per_tensor(dq->inputs[1]) && is_const(zp) && zp->rank <= 1 &&
              gr_value_numel(zp) == 1 && int8_dtype(zp->dtype);
    return ok ? dq : NULL;
}

/* A [m] or one-value constant, as for the output channels of a weight. */
static bool per_channel_shape(const gr_value *v, int64_t m)
{
    return v->rank <= 1 && (gr_value_numel(v) == 1 || (v->rank == 1 && v->dims[0] == m));
}

/* w_q's DequantizeLinear: constant 8-bit weights, scales per tensor or per
 * output channel (axis 0), a zero point of the same shape. */
static const gr_node *weight_dq(const gr_value *wd)
{
    const gr_node *dq = plain_qdq(wd, OP_DEQUANTIZE_LINEAR);
    if (!dq || wd->dtype != SMELT_DT_FLOAT32 || wd->rank < 3) return NULL;
    const gr_value *w = dq->inputs[0], *s = dq->inputs[1], *zp = input(dq, 2);
    const op_quant_attrs *a = dq->op_attrs;
    int64_t m = w->dims[0];
    bool ok = is_const(w) && int8_dtype(w->dtype) && is_const(s) && s->dtype == SMELT_DT_FLOAT32 &&
              per_channel_shape(s, m) && is_const(zp) && zp->dtype == w->dtype &&
              zp->rank == s->rank && gr_value_numel(zp) == gr_value_numel(s) &&
              (gr_value_numel(s) == 1 || a->axis == 0 || a->axis == -w->rank);
    return ok ? dq : NULL;
}

/* The bias' DequantizeLinear when b_q is exactly the bias in accumulator
 * units: int32 [m], zero point 0, scale[k] == float(xs * ws[k]). */
static const gr_node *bias_dq(const gr_value *bd, const gr_node *x_dq, const gr_node *w_dq,
                              int64_t m)
{
    const gr_node *dq = plain_qdq(bd, OP_DEQUANTIZE_LINEAR);
    if (!dq || bd->dtype != SMELT_DT_FLOAT32) return NULL;
    const gr_value *b = dq->inputs[0], *s = dq->inputs[1], *zp = input(dq, 2);
    if (!is_const(b) || b->dtype != SMELT_DT_INT32 || b->rank != 1 || b->dims[0] != m ||
        !is_const(s) || s->dtype != SMELT_DT_FLOAT32 || !per_channel_shape(s, m) ||
        (zp && !pu_const_all(zp, 0.0)))
        return NULL;
    const gr_value *ws = w_dq->inputs[1];
    float xs = (float)op_get_f64(x_dq->inputs[1]->constant, 0);
    int64_t ns = gr_value_numel(s), nw = gr_value_numel(ws);
    for (int64_t k = 0; k < m; k++) {
        float want = xs * (float)op_get_f64(ws->constant, nw == 1 ? 0 : k);
        if ((float)op_get_f64(s->constant, ns == 1 ? 0 : k) != want) return NULL;
    }
    return dq;
}

/* The output QuantizeLinear: per tensor, an 8-bit zero point given. */
static bool output_q_ok(const gr_node *q)
{
    const op_quant_attrs *a = q->op_attrs;
    const gr_value *zp = input(q, 2);
    return a && a->block_size == 0 && a->precision == SMELT_DT_UNDEFINED &&
           const_f32_per_tensor(q->inputs[1]) && is_const(zp) && zp->rank <= 1 &&
           gr_value_numel(zp) == 1 && int8_dtype(zp->dtype);
}

/* The integer node's result becomes q's output value; with a Relu between
 * them, Max(result, y_zero_point) does: Quantize is non-decreasing and maps
 * 0 to the zero point, so Quantize(Relu(v)) = Max(Quantize(v), zp). */
static smelt_status place_output(smelt_ctx *ctx, gr_graph *g, gr_node *anchor, gr_node *q,
                                 bool relu)
{
    if (relu) {
        gr_value *t = anchor->outputs[0], *y = q->outputs[0];
        t->dtype = y->dtype; /* fresh: typed here, as infer_shapes would */
        t->rank = y->rank;
        memcpy(t->dims, y->dims, sizeof(int64_t) * (size_t)y->rank);
        gr_value *ins[2] = {t, q->inputs[2]};
        anchor = pu_node_new(ctx, g, q->name, OP_MAX, ins, 2, 1);
        if (!anchor) return smelt_ctx_status(ctx);
        SMELT_TRY(pu_node_import(ctx, g, anchor));
    }
    pu_take_output(anchor, 0, q->outputs[0]);
    pu_detach(q);
    return SMELT_OK;
}

static smelt_status rewrite_conv(smelt_ctx *ctx, gr_graph *g, gr_node *conv, gr_node *q,
                                 bool relu, const gr_node *x_dq, const gr_node *w_dq,
                                 const gr_node *b_dq)
{
    gr_value *ins[9] = {x_dq->inputs[0], x_dq->inputs[1], x_dq->inputs[2],
                        w_dq->inputs[0], w_dq->inputs[1], w_dq->inputs[2],
                        q->inputs[1],    q->inputs[2],    b_dq ? b_dq->inputs[0] : NULL};
    gr_node *qc = pu_node_new(ctx, g, conv->name, OP_QLINEAR_CONV, ins, b_dq ? 9 : 8, 1);
    if (!qc) return smelt_ctx_status(ctx);
    qc->n_attrs = conv->n_attrs; /* Conv's attributes are QLinearConv's */
    qc->attrs = conv->attrs;
    SMELT_TRY(pu_node_import(ctx, g, qc));
    return place_output(ctx, g, qc, q, relu);
}

/* The DequantizeLinear of 2-D constant 8-bit weights, scales per tensor or
 * per output column along `axis` (MatMul's B [K, N]: 1; Gemm's B: 0 with
 * transB, else 1). */
static const gr_node *weight2d_dq(const gr_value *wd, int axis)
{
    const gr_node *dq = plain_qdq(wd, OP_DEQUANTIZE_LINEAR);
    if (!dq || wd->dtype != SMELT_DT_FLOAT32 || wd->rank != 2) return NULL;
    const gr_value *w = dq->inputs[0], *s = dq->inputs[1], *zp = input(dq, 2);
    const op_quant_attrs *a = dq->op_attrs;
    bool ok = is_const(w) && int8_dtype(w->dtype) && is_const(s) && s->dtype == SMELT_DT_FLOAT32 &&
              per_channel_shape(s, w->dims[axis]) && is_const(zp) && zp->dtype == w->dtype &&
              zp->rank == s->rank && gr_value_numel(zp) == gr_value_numel(s) &&
              (gr_value_numel(s) == 1 || a->axis == axis || a->axis == axis - 2);
    return ok ? dq : NULL;
}

static const gr_node *matmul_weight_dq(const gr_value *wd) { return weight2d_dq(wd, 1); }

/* DequantizeLinear(a_q) @ DequantizeLinear(w_q) -> QuantizeLinear
 * => QLinearMatMul(a_q, as, az, w_q, ws, wz, ys, yz). */
static smelt_status try_fuse_matmul(smelt_ctx *ctx, gr_graph *g, gr_node *mm, gr_node *q,
                                    bool relu, bool *fused)
{
    const gr_node *a_dq = activation_dq(mm->inputs[0]);
    const gr_node *w_dq = matmul_weight_dq(mm->inputs[1]);
    if (!a_dq || !w_dq) return SMELT_OK;
    gr_value *ins[8] = {a_dq->inputs[0], a_dq->inputs[1], a_dq->inputs[2], w_dq->inputs[0],
                        w_dq->inputs[1], w_dq->inputs[2], q->inputs[1],    q->inputs[2]};
    gr_node *qm = pu_node_new(ctx, g, mm->name, OP_QLINEAR_MATMUL, ins, 8, 1);
    if (!qm) return smelt_ctx_status(ctx);
    SMELT_TRY(pu_node_import(ctx, g, qm));
    *fused = true;
    return place_output(ctx, g, qm, q, relu);
}

/* A new node of kind on ins, typed by its shape inference; NULL on error. */
static gr_value *new_op(smelt_ctx *ctx, gr_graph *g, const gr_node *from, const char *suffix, op_kind kind,
                        gr_value *const *ins, int n_in, int64_t cast_to)
{
    char *name = smelt_arena_printf(&g->arena, "%s_%s", from->name, suffix);
    if (!name) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory"), NULL;
    gr_node *n = pu_node_new(ctx, g, name, kind, ins, n_in, 1);
    if (!n) return NULL;
    if (kind == OP_CAST && pu_attr_int(ctx, g, n, "to", cast_to) != SMELT_OK) return NULL;
    if (pu_node_import(ctx, g, n) != SMELT_OK || pu_infer_node(ctx, n, "fuse_qdq") != SMELT_OK) return NULL;
    return n->outputs[0];
}

/* w_q [N, K] as a [K, N] constant (MatMulInteger's B). */
static gr_value *transposed(smelt_ctx *ctx, gr_graph *g, const gr_value *w)
{
    int64_t n = w->dims[0], k = w->dims[1], dims[2] = {k, n};
    const uint8_t *src = w->constant->data; /* int8 or uint8: bytes */
    uint8_t *t = smelt_alloc((size_t)(n * k) + 1);
    if (!t) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory"), NULL;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < k; j++) t[j * n + i] = src[i * k + j];
    gr_value *v = pu_const(ctx, g, "gemm_bt", w->dtype, 2, dims, t);
    smelt_free(t);
    return v;
}

/* a_s * w_s[n] for the n output columns, in float32 (the bias' scale). */
static gr_value *column_scales(smelt_ctx *ctx, gr_graph *g, const gr_node *a_dq, const gr_node *w_dq, int64_t n)
{
    const gr_value *ws = w_dq->inputs[1];
    int64_t nw = gr_value_numel(ws);
    float as = (float)op_get_f64(a_dq->inputs[1]->constant, 0);
    float *s = smelt_alloc(sizeof(float) * (size_t)n + 1);
    if (!s) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory"), NULL;
    for (int64_t k = 0; k < n; k++) s[k] = as * (float)op_get_f64(ws->constant, nw == 1 ? 0 : k);
    gr_value *v = pu_const_f32(ctx, g, "gemm_scale", 1, &n, s);
    smelt_free(s);
    return v;
}

/* Gemm(DequantizeLinear(a_q), DequantizeLinear(w_q) [, DequantizeLinear(b_q)])
 * -> [Relu ->] QuantizeLinear => the QuantizeLinear (Relu) reads
 * Cast(MatMulInteger(a_q, w_q [K, N], az, wz) [+ b_q]) * (a_s * w_s). */
static smelt_status try_fuse_gemm(smelt_ctx *ctx, gr_graph *g, gr_node *gemm, gr_node *q, gr_node *relu,
                                  bool *fused)
{
    const op_gemm_attrs *ga = gemm->op_attrs;
    const gr_node *a_dq = activation_dq(gemm->inputs[0]);
    const gr_node *w_dq = ga ? weight2d_dq(gemm->inputs[1], ga->trans_b ? 0 : 1) : NULL;
    if (!a_dq || !w_dq || ga->alpha != 1.0f || ga->trans_a || gemm->inputs[0]->rank != 2) return SMELT_OK;
    gr_value *w = w_dq->inputs[0];
    int64_t n = w->dims[ga->trans_b ? 0 : 1];
    const gr_value *bd = input(gemm, 2);
    const gr_node *b_dq = bd ? bias_dq(bd, a_dq, w_dq, n) : NULL;
    if (bd && (!b_dq || ga->beta != 1.0f)) return SMELT_OK;
    gr_value *bt = ga->trans_b ? transposed(ctx, g, w) : w, *scale = column_scales(ctx, g, a_dq, w_dq, n);
    if (!bt || !scale) return smelt_ctx_status(ctx);
    gr_value *mi[4] = {a_dq->inputs[0], bt, a_dq->inputs[2], w_dq->inputs[2]};
    gr_value *acc = new_op(ctx, g, gemm, "mmi", OP_MATMUL_INTEGER, mi, 4, 0);
    if (acc && b_dq) acc = new_op(ctx, g, gemm, "bias", OP_ADD, (gr_value *[]){acc, b_dq->inputs[0]}, 2, 0);
    gr_value *f = acc ? new_op(ctx, g, gemm, "cast", OP_CAST, &acc, 1, 1 /* FLOAT */) : NULL;
    gr_value *y = f ? new_op(ctx, g, gemm, "scale", OP_MUL, (gr_value *[]){f, scale}, 2, 0) : NULL;
    if (y && relu) y = new_op(ctx, g, gemm, "relu", OP_RELU, &y, 1, 0);
    if (!y) return smelt_ctx_status(ctx);
    *fused = true;
    return gr_node_set_input(ctx, g, q, 0, y);
}

/* v1 and v2 are constants holding one and the same value. */
static bool same_scalar(const gr_value *v1, const gr_value *v2)
{
    double a, b;
    return v1->dtype == v2->dtype && pu_const_scalar(v1, &a) && pu_const_scalar(v2, &b) && a == b;
}

/* QuantizeLinear(MaxPool(DequantizeLinear(x_q))) with the same scale (> 0)
 * and zero point => MaxPool(x_q): the maximum commutes with the increasing
 * dequantization and Quantize(Dequantize(v)) is v, so the activations stay
 * 8-bit between a quantized conv and the next (exact). */
static smelt_status try_int8_maxpool(smelt_ctx *ctx, gr_graph *g, gr_node *mp, gr_node *q,
                                     bool *fused)
{
    const gr_node *dq = activation_dq(mp->inputs[0]);
    double scale;
    if (!dq || (mp->n_outputs > 1 && mp->outputs[1])) return SMELT_OK; /* no Indices */
    if (!pu_const_scalar(dq->inputs[1], &scale) || !(scale > 0) ||
        !same_scalar(dq->inputs[1], q->inputs[1]) || !same_scalar(dq->inputs[2], q->inputs[2]))
        return SMELT_OK;
    gr_node *pool = pu_node_new(ctx, g, mp->name, OP_MAX_POOL, &dq->inputs[0], 1, 1);
    if (!pool) return smelt_ctx_status(ctx);
    pool->n_attrs = mp->n_attrs; /* the same window */
    pool->attrs = mp->attrs;
    SMELT_TRY(pu_node_import(ctx, g, pool));
    pu_take_output(pool, 0, q->outputs[0]);
    pu_detach(q);
    *fused = true;
    return SMELT_OK;
}

static bool same_static_shape(const gr_value *a, const gr_value *b)
{
    if (a->rank < 0 || a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] < 0 || a->dims[d] != b->dims[d]) return false;
    return true;
}

/* QuantizeLinear(DequantizeLinear(a_q) + DequantizeLinear(b_q)) of two
 * 8-bit tensors of one shape, all per tensor => smelt.QLinearAdd(a_q, ...,
 * b_q, ...): the same float32 arithmetic in one vectorised kernel, so a
 * residual connection reads and writes 8-bit tensors (exact). */
static smelt_status try_qlinear_add(smelt_ctx *ctx, gr_graph *g, gr_node *add, gr_node *q,
                                    bool relu, bool *fused)
{
    const gr_node *da = activation_dq(add->inputs[0]), *db = activation_dq(input(add, 1));
    if (!da || !db || !same_static_shape(da->inputs[0], db->inputs[0]) ||
        !same_static_shape(da->inputs[0], q->outputs[0]))
        return SMELT_OK;
    gr_value *ins[8] = {da->inputs[0], da->inputs[1], da->inputs[2], db->inputs[0],
                        db->inputs[1], db->inputs[2], q->inputs[1],  q->inputs[2]};
    gr_node *qa = pu_node_new(ctx, g, add->name, OP_QLINEAR_ADD, ins, 8, 1);
    if (!qa) return smelt_ctx_status(ctx);
    SMELT_TRY(pu_node_import(ctx, g, qa));
    *fused = true;
    return place_output(ctx, g, qa, q, relu);
}

static smelt_status try_fuse(smelt_ctx *ctx, gr_graph *g, gr_node *q, const int *uses,
                             bool *fused)
{
    gr_value *y = q->inputs[0];
    if (!y || y->is_output || uses[y->id] != 1 || y->dtype != SMELT_DT_FLOAT32 ||
        !output_q_ok(q) || !q->outputs[0])
        return SMELT_OK;
    gr_node *mp = pu_producer(y, OP_MAX_POOL);
    if (mp) return try_int8_maxpool(ctx, g, mp, q, fused);
    gr_node *relu = pu_producer(y, OP_RELU);
    if (relu) { /* the anchor's result must reach the Relu only */
        y = relu->inputs[0];
        if (y->is_output || uses[y->id] != 1 || y->dtype != SMELT_DT_FLOAT32) return SMELT_OK;
    }
    gr_node *mm = pu_producer(y, OP_MATMUL);
    if (mm) return try_fuse_matmul(ctx, g, mm, q, relu != NULL, fused);
    gr_node *gemm = pu_producer(y, OP_GEMM);
    if (gemm) return try_fuse_gemm(ctx, g, gemm, q, relu, fused);
    gr_node *add = pu_producer(y, OP_ADD);
    if (add) return try_qlinear_add(ctx, g, add, q, relu != NULL, fused);
    gr_node *conv = pu_producer(y, OP_CONV);
    if (!conv) return SMELT_OK;
    const gr_node *x_dq = activation_dq(conv->inputs[0]);
    const gr_node *w_dq = weight_dq(conv->inputs[1]);
    if (!x_dq || !w_dq) return SMELT_OK;
    const gr_value *bd = input(conv, 2);
    const gr_node *b_dq = bd ? bias_dq(bd, x_dq, w_dq, w_dq->inputs[0]->dims[0]) : NULL;
    if (bd && !b_dq) return SMELT_OK;
    *fused = true;
    return rewrite_conv(ctx, g, conv, q, relu != NULL, x_dq, w_dq, b_dq);
}

smelt_status pass_fuse_qdq(smelt_ctx *ctx, gr_graph *g)
{
    int *uses = pu_use_counts(g);
    if (!uses) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_status s = SMELT_OK;
    bool fused = false;
    int n_nodes = g->nodes.len; /* the nodes this pass adds are not candidates */
    for (int i = 0; s == SMELT_OK && i < n_nodes; i++) {
        gr_node *n = g->nodes.items[i];
        if (n->op == OP_QUANTIZE_LINEAR) s = try_fuse(ctx, g, n, uses, &fused);
    }
    smelt_free(uses);
    /* sweeping only after a rewrite leaves other dead nodes to eliminate_dead */
    return s == SMELT_OK && fused ? pu_finish(ctx, g) : s;
}
