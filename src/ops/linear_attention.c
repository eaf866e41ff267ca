/* LinearAttention (opsets 27-28): attention as a recurrent state per
 * key/value head, S (d_k x d_v), updated token by token:
 *
 *   linear       S = S + k v^T
 *   gated        S = exp(g) S + k v^T           (g per head or per key dim)
 *   delta        S = S + k (beta (v - S^T k))^T
 *   gated_delta  S = exp(g) S, then as delta
 *   o = scale q^T S   (query heads share their group's S: GQA/MQA)
 *
 * q, k, v, decay and beta are packed (B, T, heads * dim); past and present
 * state (B, H_kv, d_k, d_v).  chunk_size only tunes chunked algorithms and
 * changes nothing here.  The reference runs the recurrence in double, the
 * order of onnx's reference.  Reference only: the delta rules make each
 * state depend on the previous one through a read of it, which is no
 * tensor expression; compiled code refuses the node, naming it. */
#include <math.h>
#include <string.h>

#include "ops/op.h"

OP_ATTRS(LINEAR_ATTENTION) = {{"chunk_size", 0, 0}, {"kv_num_heads", 0, 0},
                              {"q_num_heads", 0, 0}, {"scale", 0, 0},
                              {"update_rule", 0, 0}, {NULL, 0, 0}};

typedef struct op_linear_attention_attrs {
    int64_t hq, hkv;
    float scale;
    bool gated, delta;
} op_linear_attention_attrs;

static smelt_status linear_attention_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_linear_attention_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    int64_t chunk;
    const char *rule;
    SMELT_TRY(op_attr_int(ctx, node, "chunk_size", 64, &chunk));
    SMELT_TRY(op_attr_int(ctx, node, "q_num_heads", 0, &a->hq));
    SMELT_TRY(op_attr_int(ctx, node, "kv_num_heads", 0, &a->hkv));
    SMELT_TRY(op_attr_float(ctx, node, "scale", 0.0f, &a->scale));
    SMELT_TRY(op_attr_string(ctx, node, "update_rule", "gated_delta", &rule));
    if (!gr_node_attr(node, "q_num_heads") || !gr_node_attr(node, "kv_num_heads"))
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attributes 'q_num_heads' and 'kv_num_heads' are required");
    if (a->hq <= 0 || a->hkv <= 0 || a->hq % a->hkv != 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "q_num_heads %lld must be a positive multiple of kv_num_heads %lld",
                       (long long)a->hq, (long long)a->hkv);
    if (chunk < 1)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'chunk_size' is %lld; expected >= 1",
                       (long long)chunk);
    static const char *const rules[] = {"linear", "gated", "delta", "gated_delta"};
    for (int i = 0; i < 4; i++)
        if (strcmp(rule, rules[i]) == 0) {
            a->gated = i == 1 || i == 3;
            a->delta = i >= 2;
            return SMELT_OK;
        }
    return op_errf(ctx, node, SMELT_ERR_ATTR,
                   "attribute 'update_rule' is \"%s\"; expected linear, gated, delta or "
                   "gated_delta", rule);
}

/* Sizes of one node: batch, tokens, key and value dims, decay width. */
typedef struct la_dims {
    int64_t b, t, dk, dv, decay_w, beta_w;
} la_dims;

static smelt_status la_dims_make(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, la_dims *d)
{
    static const smelt_dtype k_floats[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT16, SMELT_DT_BFLOAT16,
                                           SMELT_DT_UNDEFINED};
    const op_linear_attention_attrs *a = node->op_attrs;
    const smelt_tensor *q = in[0], *k = in[1], *v = in[2], *past = op_input(node, in, 3),
                       *decay = op_input(node, in, 4), *beta = op_input(node, in, 5);
    static const char *const names[] = {"query", "key", "value", "past_state", "decay", "beta"};
    for (int i = 0; i < 6; i++) {
        const smelt_tensor *t = op_input(node, in, i);
        if (t) SMELT_TRY(op_check_dtype(ctx, node, t, names[i], k_floats));
        if (t && i != 3 && t->rank != 3)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "%s must be rank 3 (B, T, heads * dim)",
                           names[i]);
        if (t && i != 3 && t->dtype != q->dtype)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "%s is %s and query %s", names[i],
                           smelt_dtype_name(t->dtype), smelt_dtype_name(q->dtype));
    }
    if (a->gated != (decay != NULL) || a->delta != (beta != NULL))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "this update_rule %s decay and %s beta", a->gated ? "needs" : "takes no",
                       a->delta ? "needs" : "takes no");
    memset(d, 0, sizeof *d);
    d->b = q->dims[0];
    d->t = q->dims[1];
    if (q->dims[2] % a->hq || k->dims[2] % a->hkv || v->dims[2] % a->hkv)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "the last dims of query (%lld), key (%lld) and value (%lld) must divide "
                       "into %lld, %lld and %lld heads", (long long)q->dims[2],
                       (long long)k->dims[2], (long long)v->dims[2], (long long)a->hq,
                       (long long)a->hkv, (long long)a->hkv);
    d->dk = q->dims[2] / a->hq;
    d->dv = v->dims[2] / a->hkv;
    if (k->dims[2] != a->hkv * d->dk || k->dims[0] != d->b || v->dims[0] != d->b ||
        k->dims[1] != d->t || v->dims[1] != d->t)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "key must be (B, T, kv_num_heads * d_k) and value (B, T, ...) with "
                       "query's B and T");
    if (decay) {
        d->decay_w = decay->dims[2];
        if ((d->decay_w != a->hkv && d->decay_w != a->hkv * d->dk) || decay->dims[0] != d->b ||
            decay->dims[1] != d->t)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "decay must be (B, T, kv_num_heads) or (B, T, kv_num_heads * d_k)");
    }
    if (beta) {
        d->beta_w = beta->dims[2];
        if ((d->beta_w != a->hkv && d->beta_w != 1) || beta->dims[0] != d->b ||
            beta->dims[1] != d->t)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "beta must be (B, T, kv_num_heads) or (B, T, 1)");
    }
    if (past && (past->rank != 4 || past->dims[0] != d->b || past->dims[1] != a->hkv ||
                 past->dims[2] != d->dk || past->dims[3] != d->dv))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "past_state must be (B, kv_num_heads, d_k, d_v) = (%lld, %lld, %lld, %lld)",
                       (long long)d->b, (long long)a->hkv, (long long)d->dk, (long long)d->dv);
    return SMELT_OK;
}

static smelt_status linear_attention_infer(smelt_ctx *ctx, const gr_node *node,
                                           const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_linear_attention_attrs *a = node->op_attrs;
    for (int i = 0; i < node->n_inputs; i++) {
        const smelt_tensor *t = op_input(node, in, i);
        if (t && !op_dims_static(t))
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "LinearAttention needs its inputs' dims known");
    }
    la_dims d;
    SMELT_TRY(la_dims_make(ctx, node, in, &d));
    const smelt_tensor *past = op_input(node, in, 3);
    out[0].dtype = in[0]->dtype;
    out[0].rank = 3;
    out[0].dims[0] = d.b;
    out[0].dims[1] = d.t;
    out[0].dims[2] = a->hq * d.dv;
    if (node->n_outputs > 1) {
        out[1].dtype = past ? past->dtype : in[0]->dtype;
        out[1].rank = 4;
        out[1].dims[0] = d.b;
        out[1].dims[1] = a->hkv;
        out[1].dims[2] = d.dk;
        out[1].dims[3] = d.dv;
    }
    return SMELT_OK;
}

/* One (batch, kv head)'s state through token t. */
static void la_step(const op_linear_attention_attrs *a, const la_dims *d,
                    const smelt_tensor *const *in, int64_t b, int64_t h, int64_t t, double *s,
                    double *tmp)
{
    const smelt_tensor *k = in[1], *v = in[2], *decay = in[4], *beta = in[5];
    int64_t kb = (b * d->t + t) * a->hkv * d->dk + h * d->dk;
    int64_t vb = (b * d->t + t) * a->hkv * d->dv + h * d->dv;
    if (a->gated)
        for (int64_t i = 0; i < d->dk; i++) {
            int64_t gi = (b * d->t + t) * d->decay_w + (d->decay_w == a->hkv ? h : h * d->dk + i);
            double g = exp(op_get_f64(decay, gi));
            for (int64_t m = 0; m < d->dv; m++) s[i * d->dv + m] *= g;
        }
    for (int64_t m = 0; m < d->dv; m++) tmp[m] = op_get_f64(v, vb + m);
    if (a->delta) {
        double bt = op_get_f64(beta, (b * d->t + t) * d->beta_w + (d->beta_w == 1 ? 0 : h));
        for (int64_t m = 0; m < d->dv; m++) {
            double r = 0;
            for (int64_t i = 0; i < d->dk; i++) r += s[i * d->dv + m] * op_get_f64(k, kb + i);
            tmp[m] = bt * (tmp[m] - r);
        }
    }
    for (int64_t i = 0; i < d->dk; i++) {
        double ki = op_get_f64(k, kb + i);
        for (int64_t m = 0; m < d->dv; m++) s[i * d->dv + m] += ki * tmp[m];
    }
}

static smelt_status linear_attention_eval(smelt_ctx *ctx, const gr_node *node,
                                          const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_linear_attention_attrs *a = node->op_attrs;
    const smelt_tensor *all[6];
    for (int i = 0; i < 6; i++) all[i] = op_input(node, in, i);
    la_dims d;
    SMELT_TRY(la_dims_make(ctx, node, in, &d));
    double scale = a->scale != 0.0f ? (double)a->scale : 1.0 / sqrt((double)d.dk);
    size_t n = (size_t)(d.dk * d.dv);
    double *s = smelt_calloc(n + (size_t)d.dv + 1, sizeof *s);
    if (!s) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    double *tmp = s + n;
    int64_t group = a->hq / a->hkv;
    for (int64_t b = 0; b < d.b; b++) {
        for (int64_t h = 0; h < a->hkv; h++) {
            int64_t sb = (b * a->hkv + h) * (int64_t)n;
            for (size_t e = 0; e < n; e++) s[e] = all[3] ? op_get_f64(all[3], sb + (int64_t)e) : 0;
            for (int64_t t = 0; t < d.t; t++) {
                la_step(a, &d, all, b, h, t, s, tmp);
                for (int64_t hq = h * group; hq < (h + 1) * group; hq++) {
                    int64_t qb = (b * d.t + t) * a->hq * d.dk + hq * d.dk;
                    int64_t ob = (b * d.t + t) * a->hq * d.dv + hq * d.dv;
                    for (int64_t m = 0; m < d.dv; m++) {
                        double o = 0;
                        for (int64_t i = 0; i < d.dk; i++)
                            o += op_get_f64(all[0], qb + i) * s[i * d.dv + m];
                        op_set_f64(&out[0], ob + m, scale * o);
                    }
                }
            }
            if (node->n_outputs > 1 && node->outputs[1])
                for (size_t e = 0; e < n; e++) op_set_f64(&out[1], sb + (int64_t)e, s[e]);
        }
    }
    smelt_free(s);
    return SMELT_OK;
}

static smelt_status linear_attention_compute(op_compute_args *a)
{
    return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                   "compiled LinearAttention is not implemented (its recurrence reads the "
                   "previous state); use the reference executor (--reference)");
}

const op_def op_def_LINEAR_ATTENTION = {
    .compute = linear_attention_compute, .import = linear_attention_import,
    .infer = linear_attention_infer, .eval = linear_attention_eval, .min_inputs = 3,
    .max_inputs = 6, .min_outputs = 1, .max_outputs = 2,
};
