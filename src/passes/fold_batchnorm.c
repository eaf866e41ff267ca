/* Per-channel affine ops after a Conv, Gemm or MatMul with constant weights
 * folded into those weights and the bias:
 *   BatchNormalization (inference): y = x*s + (b - mean*s), s = gamma/sqrt(var+eps)
 *   Mul / Add / Sub by a constant that varies along the channel axis only.
 * The producer then writes the consumer's output value itself (so graph output
 * names stay), and new weight constants are made (weights may be shared). */
#include <math.h>
#include <string.h>

#include "ops/linalg.h"
#include "ops/norm.h"
#include "ops/op.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

typedef struct channel_affine {
    int64_t m;            /* channels */
    double *scale, *shift;
    double *stats; /* 3*m scratch for BatchNormalization's bias, mean, var */
    bool has_shift;
} channel_affine;

/* c's values along axis `axis` of a rank-`rank` result with m channels, when
 * c is constant, float32 and constant along every other axis. */
static bool channel_values(const gr_value *c, int rank, int axis, int64_t m, double *out)
{
    if (!c || !c->constant || c->dtype != SMELT_DT_FLOAT32 || c->rank > rank) return false;
    int64_t along = 1;
    for (int j = 0; j < c->rank; j++) {
        int i = rank - c->rank + j;
        if (c->dims[j] == 1) continue;
        if (i != axis || c->dims[j] != m) return false;
        along = m;
    }
    for (int64_t k = 0; k < m; k++) out[k] = op_get_f64(c->constant, along == 1 ? 0 : k);
    return true;
}

/* BatchNormalization's parameters: [m] float32 constants. */
static bool bn_values(const gr_value *v, int64_t m, double *out)
{
    if (!v || !v->constant || v->dtype != SMELT_DT_FLOAT32 || v->rank != 1 || v->dims[0] != m)
        return false;
    for (int64_t k = 0; k < m; k++) out[k] = op_get_f64(v->constant, k);
    return true;
}

static bool batchnorm_affine(const gr_node *bn, channel_affine *a)
{
    const op_batchnorm_attrs *at = bn->op_attrs;
    if (!at || at->training || at->per_activation || bn->n_inputs < 5) return false;
    for (int k = 1; k < bn->n_outputs; k++)
        if (bn->outputs[k]) return false;
    double *bias = a->stats, *mean = a->stats + a->m, *var = a->stats + 2 * a->m;
    bool ok = bn_values(bn->inputs[1], a->m, a->scale) && bn_values(bn->inputs[2], a->m, bias) &&
              bn_values(bn->inputs[3], a->m, mean) && bn_values(bn->inputs[4], a->m, var);
    for (int64_t k = 0; ok && k < a->m; k++) {
        a->scale[k] /= sqrt(var[k] + (double)at->epsilon);
        a->shift[k] = bias[k] - mean[k] * a->scale[k];
    }
    a->has_shift = true;
    return ok;
}

/* The consumer as y = x*scale + shift per channel; x is its input `xi`. */
static bool consumer_affine(const gr_node *n, const gr_value *x, int axis, channel_affine *a)
{
    int rank = x->rank;
    if (n->op == OP_BATCH_NORMALIZATION) return axis == 1 && n->inputs[0] == x &&
                                                batchnorm_affine(n, a);
    if (n->n_inputs != 2 || n->n_outputs != 1) return false;
    int xi = n->inputs[0] == x ? 0 : 1;
    const gr_value *c = n->inputs[1 - xi];
    if (n->inputs[xi] != x || c == x) return false;
    for (int64_t k = 0; k < a->m; k++) a->scale[k] = 1, a->shift[k] = 0;
    switch (n->op) {
    case OP_MUL: return channel_values(c, rank, axis, a->m, a->scale);
    case OP_ADD: return (a->has_shift = channel_values(c, rank, axis, a->m, a->shift));
    case OP_SUB:
        if (xi != 0 || !channel_values(c, rank, axis, a->m, a->shift)) return false;
        for (int64_t k = 0; k < a->m; k++) a->shift[k] = -a->shift[k];
        return (a->has_shift = true);
    default: return false;
    }
}

/* w scaled along its axis `axis` (outer index for Conv, column for MatMul). */
static gr_value *scaled_weights(smelt_ctx *ctx, gr_graph *g, const gr_value *w, int axis,
                                const channel_affine *a)
{
    int64_t n = gr_value_numel(w), inner = 1;
    for (int d = axis + 1; d < w->rank; d++) inner *= w->dims[d];
    float *data = smelt_alloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!data) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory"), NULL;
    const float *src = w->constant->data;
    for (int64_t i = 0; i < n; i++) data[i] = (float)(src[i] * a->scale[(i / inner) % a->m]);
    gr_value *v = pu_const_f32(ctx, g, w->name, w->rank, w->dims, data);
    smelt_free(data);
    return v;
}

/* bias' = bias*scale + shift, as a [m] constant; bias may be NULL. */
static gr_value *new_bias(smelt_ctx *ctx, gr_graph *g, const gr_value *bias, const char *hint,
                          const channel_affine *a)
{
    float *data = smelt_alloc(sizeof(float) * (size_t)a->m);
    if (!data) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory"), NULL;
    int64_t nb = bias ? gr_value_numel(bias) : 0;
    for (int64_t k = 0; k < a->m; k++) {
        double b = bias ? op_get_f64(bias->constant, nb == 1 ? 0 : k) : 0.0;
        data[k] = (float)(b * a->scale[k] + a->shift[k]);
    }
    gr_value *v = pu_const_f32(ctx, g, hint, 1, &a->m, data);
    smelt_free(data);
    return v;
}

static bool const_f32(const gr_value *v)
{
    return v && v->constant && v->dtype == SMELT_DT_FLOAT32;
}

/* A bias input usable as per-channel values: absent, one value, or [m]
 * (Gemm: [1,m] too). */
static bool bias_ok(const gr_value *b, int64_t m)
{
    if (!b) return true;
    if (!const_f32(b)) return false;
    int64_t n = gr_value_numel(b);
    return n == 1 || (n == m && b->dims[b->rank - 1] == m);
}

/* Which producers can absorb an affine, along which output axis. */
static bool producer_axis(const gr_node *p, int64_t *m, int *axis, int *w_axis)
{
    const gr_value *y = p->outputs[0], *w = p->n_inputs > 1 ? p->inputs[1] : NULL;
    if (!y || y->dtype != SMELT_DT_FLOAT32 || y->rank < 2 || !const_f32(w)) return false;
    if (p->op == OP_CONV) {
        *axis = 1, *w_axis = 0, *m = w->dims[0];
        return p->n_outputs == 1 && bias_ok(p->n_inputs > 2 ? p->inputs[2] : NULL, *m);
    }
    *axis = y->rank - 1, *m = y->dims[y->rank - 1];
    if (p->op == OP_MATMUL) {
        *w_axis = 1;
        return w->rank == 2;
    }
    if (p->op != OP_GEMM) return false;
    const op_gemm_attrs *at = p->op_attrs;
    *w_axis = at->trans_b ? 0 : 1;
    return at->beta == 1.0f && bias_ok(p->n_inputs > 2 ? p->inputs[2] : NULL, *m);
}

static smelt_status apply(smelt_ctx *ctx, gr_graph *g, gr_node *p, gr_node *n, int w_axis,
                          const channel_affine *a)
{
    gr_value *w = scaled_weights(ctx, g, p->inputs[1], w_axis, a);
    if (!w) return smelt_ctx_status(ctx);
    p->inputs[1] = w;
    if (p->op != OP_MATMUL) {
        gr_value *old = p->n_inputs > 2 ? p->inputs[2] : NULL;
        gr_value *b = new_bias(ctx, g, old, p->name, a);
        if (!b) return smelt_ctx_status(ctx);
        SMELT_TRY(gr_node_set_input(ctx, g, p, 2, b));
    }
    pu_take_output(p, 0, n->outputs[0]);
    pu_detach(n);
    return SMELT_OK;
}

static bool absorber(const gr_value *v)
{
    return v && v->producer &&
           (v->producer->op == OP_CONV || v->producer->op == OP_GEMM || v->producer->op == OP_MATMUL);
}

static smelt_status try_fold(smelt_ctx *ctx, gr_graph *g, gr_node *n, const int *uses)
{
    gr_value *x = n->n_inputs ? n->inputs[0] : NULL;
    if (n->op != OP_BATCH_NORMALIZATION && n->op != OP_SUB && n->n_inputs == 2 &&
        !absorber(x) && absorber(n->inputs[1]))
        x = n->inputs[1];
    gr_node *p = x ? x->producer : NULL;
    int64_t m;
    int axis, w_axis;
    if (!p || x->is_output || uses[x->id] != 1 || !n->outputs[0] ||
        !pu_same_type(x, n->outputs[0]) || !producer_axis(p, &m, &axis, &w_axis) || m < 1)
        return SMELT_OK;
    /* one allocation: a refused one fails the pass instead of skipping the fold */
    double *buf = smelt_calloc((size_t)m * 5, sizeof *buf);
    if (!buf) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    channel_affine a = {m, buf, buf + m, buf + 2 * m, false};
    smelt_status s = SMELT_OK;
    if (consumer_affine(n, x, axis, &a) && !(p->op == OP_MATMUL && a.has_shift))
        s = apply(ctx, g, p, n, w_axis, &a);
    smelt_free(buf);
    return s;
}

smelt_status pass_fold_batchnorm(smelt_ctx *ctx, gr_graph *g)
{
    int *uses = pu_use_counts(g);
    if (!uses) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_status s = SMELT_OK;
    for (int i = 0; s == SMELT_OK && i < g->nodes.len; i++) {
        gr_node *n = g->nodes.items[i];
        if (n->op == OP_BATCH_NORMALIZATION || n->op == OP_MUL || n->op == OP_ADD ||
            n->op == OP_SUB)
            s = try_fold(ctx, g, n, uses);
    }
    smelt_free(uses);
    return s == SMELT_OK ? pu_finish(ctx, g) : s;
}
