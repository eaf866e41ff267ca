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
 * order of onnx's reference.  Compiled code runs the same recurrence as one
 * extern stage (te.h: the delta rules read the previous state, which no
 * tensor expression says), in float32, a parallel task per (batch, kv head)
 * holding its state in a temporary; the stage writes the output and the
 * final state into one flat buffer that two copies split. */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

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

/* ---- compiled: one extern stage ----
 * la[0 .. B*T*Hq*dv) holds the output (B, T, Hq * dv), la[B*T*Hq*dv ..)
 * the final state (B, Hkv, dk, dv). */

enum { LA_Q, LA_K, LA_V, LA_PAST, LA_DECAY, LA_BETA, LA_INPUTS };

typedef struct la_build {
    const op_linear_attention_attrs *a;
    la_dims d;
    float scale;
    const te_tensor *in[LA_INPUTS]; /* NULL: omitted */
} la_build;

typedef struct la_ctx {
    const la_build *lb;
    ir_builder *b;
    ir_buffer *la, *S, *u, *acc; /* the stage's buffer; state, update, sums */
    ir_expr *bv, *h, *t;         /* batch, kv head, token */
} la_ctx;

static ir_expr *la_int(const la_ctx *c, int64_t v) { return ir_int(c->b, v); }

/* Input i at idx (its rank's indices) as float32. */
static ir_expr *la_in(const la_ctx *c, int i, ir_expr *const *idx)
{
    ir_buffer *buf = c->lb->in[i]->buf;
    return ir_cast(c->b, SMELT_DT_FLOAT32, ir_load(c->b, buf, buf->rank, idx));
}

/* Column col of token t's row of a (B, T, width) input. */
static ir_expr *la_tok(const la_ctx *c, int i, ir_expr *col)
{
    ir_expr *idx[3] = {c->bv, c->t, col};
    return la_in(c, i, idx);
}

static ir_expr *la_get(const la_ctx *c, ir_buffer *buf, ir_expr *i)
{
    return ir_load(c->b, buf, 1, &i);
}

static ir_stmt *la_set(const la_ctx *c, ir_buffer *buf, ir_expr *i, ir_expr *v)
{
    return ir_store(c->b, buf, 1, &i, v);
}

static ir_stmt *la_loop(const la_ctx *c, ir_var *v, int64_t n, ir_stmt *body)
{
    return ir_for(c->b, v, la_int(c, 0), la_int(c, n), IR_FOR_SERIAL, body);
}

/* la's index of the output's column col at (b, t) */
static ir_expr *la_out_index(const la_ctx *c, ir_expr *col)
{
    ir_builder *b = c->b;
    const la_dims *d = &c->lb->d;
    ir_expr *row = ir_add(b, ir_mul(b, c->bv, la_int(c, d->t)), c->t);
    return ir_add(b, ir_mul(b, row, la_int(c, c->lb->a->hq * d->dv)), col);
}

/* S[i * dv + m] */
static ir_expr *la_s_index(const la_ctx *c, ir_expr *i, ir_expr *m)
{
    return ir_add(c->b, ir_mul(c->b, i, la_int(c, c->lb->d.dv)), m);
}

/* gated: S[i, :] *= exp(decay) (one decay per head or per key dim) */
static ir_stmt *la_decay(const la_ctx *c)
{
    ir_builder *b = c->b;
    const la_dims *d = &c->lb->d;
    ir_var *i = ir_var_new(b, "la_i", SMELT_DT_INT64), *m = ir_var_new(b, "la_m", SMELT_DT_INT64);
    ir_var *g = ir_var_new(b, "la_g", SMELT_DT_FLOAT32);
    ir_expr *iv = ir_var_ref(b, i), *mv = ir_var_ref(b, m);
    ir_expr *col = d->decay_w == c->lb->a->hkv
                       ? c->h
                       : ir_add(b, ir_mul(b, c->h, la_int(c, d->dk)), iv);
    ir_expr *decay = la_tok(c, LA_DECAY, col);
    ir_expr *e = ir_call(b, IR_CALL_EXP, SMELT_DT_FLOAT32, 1, &decay);
    ir_expr *si = la_s_index(c, iv, mv);
    ir_stmt *scale = la_set(c, c->S, si, ir_mul(b, la_get(c, c->S, si), ir_var_ref(b, g)));
    return la_loop(c, i, d->dk, ir_let(b, g, e, la_loop(c, m, d->dv, scale)));
}

/* For each key dim i, x_i = column base + i of the input's token row, and
 * for each value dim m: acc[m] += x_i S[i, m] (into_state false), or
 * S[i, m] += x_i u[m] (true). */
static ir_stmt *la_each_key(const la_ctx *c, int input, ir_expr *base, bool into_state)
{
    ir_builder *b = c->b;
    const la_dims *d = &c->lb->d;
    ir_var *i = ir_var_new(b, "la_i", SMELT_DT_INT64), *m = ir_var_new(b, "la_m", SMELT_DT_INT64);
    ir_var *x = ir_var_new(b, "la_x", SMELT_DT_FLOAT32);
    ir_expr *iv = ir_var_ref(b, i), *mv = ir_var_ref(b, m), *si = la_s_index(c, iv, mv);
    ir_buffer *dst = into_state ? c->S : c->acc, *src = into_state ? c->u : c->S;
    ir_expr *at = into_state ? si : mv, *from = into_state ? mv : si;
    ir_expr *sum = ir_add(b, la_get(c, dst, at), ir_mul(b, ir_var_ref(b, x), la_get(c, src, from)));
    return la_loop(c, i, d->dk, ir_let(b, x, la_tok(c, input, ir_add(b, base, iv)),
                                       la_loop(c, m, d->dv, la_set(c, dst, at, sum))));
}

/* acc[m] = sum_i x_i S[i, m], x_i = column base + i of the input's token row */
static ir_stmt *la_row_product(const la_ctx *c, int input, ir_expr *base)
{
    ir_builder *b = c->b;
    ir_var *m = ir_var_new(b, "la_m", SMELT_DT_INT64);
    ir_stmt *zero = la_loop(c, m, c->lb->d.dv, la_set(c, c->acc, ir_var_ref(b, m),
                                                      ir_const_float(b, SMELT_DT_FLOAT32, 0)));
    return ir_seq2(b, zero, la_each_key(c, input, base, false));
}

/* u = v_t, or for the delta rules beta (v_t - S^T k_t); then S += k_t u^T */
static ir_stmt *la_update(const la_ctx *c)
{
    ir_builder *b = c->b;
    const la_build *lb = c->lb;
    const la_dims *d = &lb->d;
    ir_var *m = ir_var_new(b, "la_m", SMELT_DT_INT64), *bt = ir_var_new(b, "la_beta", SMELT_DT_FLOAT32);
    ir_expr *mv = ir_var_ref(b, m);
    ir_expr *kbase = ir_mul(b, c->h, la_int(c, d->dk));
    ir_expr *vm = la_tok(c, LA_V, ir_add(b, ir_mul(b, c->h, la_int(c, d->dv)), mv));
    ir_stmt *u;
    if (lb->a->delta) {
        ir_expr *beta = la_tok(c, LA_BETA, d->beta_w == 1 ? la_int(c, 0) : c->h);
        ir_expr *r = ir_mul(b, ir_var_ref(b, bt), ir_sub(b, vm, la_get(c, c->acc, mv)));
        u = ir_seq2(b, la_row_product(c, LA_K, kbase),
                    ir_let(b, bt, beta, la_loop(c, m, d->dv, la_set(c, c->u, mv, r))));
    } else {
        u = la_loop(c, m, d->dv, la_set(c, c->u, mv, vm));
    }
    return ir_seq2(b, u, la_each_key(c, LA_K, kbase, true));
}

/* o = scale q^T S for every query head of the group */
static ir_stmt *la_outputs(const la_ctx *c)
{
    ir_builder *b = c->b;
    const la_build *lb = c->lb;
    const la_dims *d = &lb->d;
    int64_t hq = lb->a->hq, group = hq / lb->a->hkv;
    ir_var *g = ir_var_new(b, "la_q", SMELT_DT_INT64), *m = ir_var_new(b, "la_m", SMELT_DT_INT64);
    ir_expr *head = ir_add(b, ir_mul(b, c->h, la_int(c, group)), ir_var_ref(b, g));
    ir_expr *qbase = ir_mul(b, head, la_int(c, d->dk));
    ir_expr *mv = ir_var_ref(b, m);
    ir_expr *o = la_out_index(c, ir_add(b, ir_mul(b, head, la_int(c, d->dv)), mv));
    ir_expr *val = ir_mul(b, la_get(c, c->acc, mv), ir_const_float(b, SMELT_DT_FLOAT32, lb->scale));
    ir_stmt *store = la_loop(c, m, d->dv, la_set(c, c->la, o, val));
    return la_loop(c, g, group, ir_seq2(b, la_row_product(c, LA_Q, qbase), store));
}

/* The state of (b, h) from past_state (or zeros), and back into la. */
static ir_stmt *la_state_io(const la_ctx *c, bool out)
{
    ir_builder *b = c->b;
    const la_dims *d = &c->lb->d;
    ir_var *i = ir_var_new(b, "la_i", SMELT_DT_INT64), *m = ir_var_new(b, "la_m", SMELT_DT_INT64);
    ir_expr *iv = ir_var_ref(b, i), *mv = ir_var_ref(b, m), *si = la_s_index(c, iv, mv);
    ir_stmt *copy;
    if (out) {
        ir_expr *task = ir_add(b, ir_mul(b, c->bv, la_int(c, c->lb->a->hkv)), c->h);
        ir_expr *at = ir_add(b, ir_mul(b, task, la_int(c, d->dk * d->dv)), si);
        int64_t y_elems = d->b * d->t * c->lb->a->hq * d->dv;
        copy = la_set(c, c->la, ir_add(b, at, la_int(c, y_elems)), la_get(c, c->S, si));
    } else {
        ir_expr *idx[4] = {c->bv, c->h, iv, mv};
        copy = la_set(c, c->S, si, c->lb->in[LA_PAST] ? la_in(c, LA_PAST, idx)
                                                      : ir_const_float(b, SMELT_DT_FLOAT32, 0));
    }
    return la_loop(c, i, d->dk, la_loop(c, m, d->dv, copy));
}

static ir_buffer *la_temp(ir_builder *b, const char *name, int64_t n)
{
    return ir_buffer_new(b, name, SMELT_DT_FLOAT32, 1, &n, IR_BUF_TEMP);
}

static ir_stmt *build_linear_attention(te_graph *g, ir_buffer *out, void *user)
{
    const la_build *lb = user;
    ir_builder *b = &g->b;
    const la_dims *d = &lb->d;
    int64_t hkv = lb->a->hkv, tasks = d->b * hkv;
    ir_var *p = ir_var_new(b, "la_task", SMELT_DT_INT64), *t = ir_var_new(b, "la_t", SMELT_DT_INT64);
    ir_expr *pv = ir_var_ref(b, p);
    la_ctx c = {.lb = lb, .b = b, .la = out, .t = ir_var_ref(b, t),
                .bv = ir_binary(b, IR_DIV, pv, ir_int(b, hkv)),
                .h = ir_binary(b, IR_MOD, pv, ir_int(b, hkv))};
    c.S = la_temp(b, "la_state", d->dk * d->dv);
    c.u = la_temp(b, "la_update", d->dv);
    c.acc = la_temp(b, "la_sum", d->dv);
    ir_stmt *step = ir_seq2(b, lb->a->gated ? la_decay(&c) : NULL, la_update(&c));
    step = ir_seq2(b, step, la_outputs(&c));
    ir_stmt *items[3] = {la_state_io(&c, false), la_loop(&c, t, d->t, step), la_state_io(&c, true)};
    ir_stmt *body = ir_seq(b, 3, items);
    body = ir_allocate(b, c.S, ir_allocate(b, c.u, ir_allocate(b, c.acc, body)));
    body = ir_for(b, p, ir_int(b, 0), ir_int(b, tasks), tasks > 1 ? IR_FOR_PARALLEL : IR_FOR_SERIAL,
                  body);
    return b->failed ? NULL : body;
}

typedef struct la_split {
    const te_tensor *la;
    int64_t offset;
    smelt_tensor type; /* the output's */
} la_split;

/* An output's element: la at offset + its row-major index. */
static ir_expr *la_split_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const la_split *sp = user;
    ir_builder *b = &g->b;
    ir_expr *flat = ir_int(b, sp->offset);
    int64_t stride = 1;
    for (int d = sp->type.rank - 1; d >= 0; d--) {
        flat = ir_add(b, flat, ir_mul(b, idx[d], ir_int(b, stride)));
        stride *= sp->type.dims[d];
    }
    return ir_cast(b, sp->type.dtype, te_read(g, sp->la, &flat));
}

static smelt_status la_fail(op_compute_args *a)
{
    return smelt_ctx_status(a->ctx) != SMELT_OK ? smelt_ctx_status(a->ctx)
                                                 : smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
}

static smelt_status linear_attention_compute(op_compute_args *a)
{
    const gr_node *n = a->node;
    la_build *lb = smelt_arena_alloc(&a->te->arena, sizeof *lb);
    if (!lb) return la_fail(a);
    memset(lb, 0, sizeof *lb);
    lb->a = n->op_attrs;
    smelt_tensor types[LA_INPUTS];
    const smelt_tensor *in[LA_INPUTS] = {NULL};
    te_tensor *inputs[LA_INPUTS];
    int n_in = 0;
    for (int i = 0; i < LA_INPUTS && i < n->n_inputs; i++) {
        if (!a->in[i]) continue;
        const ir_buffer *buf = a->in[i]->buf;
        types[i] = (smelt_tensor){.dtype = buf->dtype, .rank = buf->rank};
        memcpy(types[i].dims, buf->shape, sizeof(int64_t) * (size_t)buf->rank);
        in[i] = &types[i];
        lb->in[i] = a->in[i];
        inputs[n_in++] = a->in[i];
    }
    SMELT_TRY(la_dims_make(a->ctx, n, in, &lb->d));
    const la_dims *d = &lb->d;
    if (d->b == 0 || d->t == 0 || d->dk == 0 || d->dv == 0)
        return op_errf(a->ctx, n, SMELT_ERR_UNSUPPORTED, "empty tensors (a zero dim) are not "
                       "compiled for LinearAttention");
    lb->scale = lb->a->scale != 0.0f ? lb->a->scale : (float)(1.0 / sqrt((double)d->dk));
    int64_t y_elems = d->b * d->t * lb->a->hq * d->dv;
    int64_t total = y_elems + d->b * lb->a->hkv * d->dk * d->dv;
    double flops = 4.0 * (double)(d->b * d->t) * (double)(lb->a->hq + 2 * lb->a->hkv) *
                   (double)(d->dk * d->dv);
    te_tensor *la = te_extern_stage(a->te, "la", SMELT_DT_FLOAT32, 1, &total, n_in, inputs,
                                    build_linear_attention, lb, "linear_attention", flops);
    if (!la) return la_fail(a);
    static const char *const names[2] = {"y", "present_state"};
    for (int o = 0; o < n->n_outputs && o < 2; o++) {
        if (!n->outputs[o]) continue;
        la_split *sp = smelt_arena_alloc(&a->te->arena, sizeof *sp);
        if (!sp) return la_fail(a);
        *sp = (la_split){.la = la, .offset = o ? y_elems : 0, .type = a->out_type[o]};
        a->out[o] = te_compute(a->te, names[o], sp->type.dtype, sp->type.rank, sp->type.dims,
                               la_split_body, sp, "injective");
        if (!a->out[o]) return la_fail(a);
    }
    return SMELT_OK;
}

const op_def op_def_LINEAR_ATTENTION = {
    .compute = linear_attention_compute, .import = linear_attention_import,
    .infer = linear_attention_infer, .eval = linear_attention_eval, .min_inputs = 3,
    .max_inputs = 6, .min_outputs = 1, .max_outputs = 2,
};
