/* FlexAttention (ai.onnx.preview 1): scaled dot-product attention over
 * rank-4 Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev] with two
 * optional modifier bodies: score_mod on the scores before the softmax,
 * prob_mod on the probabilities after it.  Query head h reads K/V head
 * h / (Hq / Hkv).  Rounded where onnx's reference rounds: the scale's square
 * root in float32 then in the input type, Q and K times it in the input
 * type, Q K^T in the input type, then the softmax type (float32, double for
 * double inputs, or softmax_precision), the softmax and P V in that type,
 * Y in V's type (sums in double in between).
 *
 * The reference executor runs the bodies between the steps here
 * (exec/control.c).  Without bodies the node compiles (flex_compute: the
 * same steps as stages); with them passes/expand_flex.c makes the steps
 * nodes of their own (smelt.FlexScores, the bodies' nodes, Softmax,
 * smelt.FlexOutput) before compiling; bodies it cannot copy are refused
 * naming the node (lower/control.c). */
#include <math.h>
#include <string.h>

#include "ops/control.h"
#include "te/te.h"

OP_ATTRS(PREVIEW_FLEX_ATTENTION) = {{"prob_mod", 0, 0},
                                    {"scale", 0, 0},
                                    {"score_mod", 0, 0},
                                    {"softmax_precision", 0, 0},
                                    {NULL, 0, 0}};

static smelt_status modifier(smelt_ctx *ctx, const gr_node *n, const char *name, gr_graph **out)
{
    const gr_attr *a = gr_node_attr(n, name);
    *out = NULL;
    if (!a) return SMELT_OK;
    if (a->type != GR_ATTR_GRAPH || !a->g)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' must be a graph", name);
    if (a->g->n_formal != 1 || a->g->outputs.len != 1)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "'%s' has %d inputs and %d outputs, expected 1 "
                       "and 1", name, a->g->n_formal, a->g->outputs.len);
    *out = a->g;
    return SMELT_OK;
}

/* softmax_precision: a float type (TensorProto codes are smelt's dtypes). */
static smelt_status read_precision(smelt_ctx *ctx, const gr_node *n, ctl_attrs *a)
{
    int64_t p;
    a->softmax_type = SMELT_DT_UNDEFINED;
    if (!gr_node_attr(n, "softmax_precision")) return SMELT_OK;
    SMELT_TRY(op_attr_int(ctx, n, "softmax_precision", 0, &p));
    if (p != SMELT_DT_FLOAT32 && p != SMELT_DT_FLOAT16 && p != SMELT_DT_BFLOAT16 &&
        p != SMELT_DT_FLOAT64)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "softmax_precision %lld is not float, float16, "
                       "bfloat16 or double", (long long)p);
    a->softmax_type = (smelt_dtype)p;
    return SMELT_OK;
}

/* Does node input i feed a capture of one of the bodies? */
static bool feeds_a_body(const gr_node *n, int i, const ctl_attrs *a)
{
    (void)n;
    const gr_graph *bodies[2] = {a->score_mod, a->prob_mod};
    for (int k = 0; k < 2; k++)
        for (int j = 0; bodies[k] && j < bodies[k]->inputs.len; j++)
            if (ctl_body_input_source(bodies[k], j) == i) return true;
    return false;
}

static smelt_status flex_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    ctl_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(modifier(ctx, n, "score_mod", &a->score_mod));
    SMELT_TRY(modifier(ctx, n, "prob_mod", &a->prob_mod));
    a->n_explicit = 3;
    for (int i = 3; i < n->n_inputs; i++) /* past Q, K, V: the bodies' captures */
        if (!feeds_a_body(n, i, a))
            return op_errf(ctx, n, SMELT_ERR_MODEL, "has %d inputs, expected 3 (Q, K, V)",
                           n->n_inputs);
    for (int i = 0; i < 3; i++)
        if (i >= n->n_inputs || !n->inputs[i])
            return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d (%s) is missing", i,
                           i == 0 ? "Q" : i == 1 ? "K" : "V");
    float scale;
    SMELT_TRY(op_attr_float(ctx, n, "scale", NAN, &scale));
    a->scale = scale;
    return read_precision(ctx, n, a);
}

smelt_dtype flex_softmax_type(const gr_node *n, smelt_dtype input)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    if (a->softmax_type) return a->softmax_type;
    return input == SMELT_DT_FLOAT64 ? SMELT_DT_FLOAT64 : SMELT_DT_FLOAT32;
}

/* Two dims that must agree (unknown ones agree with anything). */
static bool agree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

smelt_status flex_check(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *q,
                        const smelt_tensor *k, const smelt_tensor *v)
{
    static const smelt_dtype types[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_FLOAT16,
                                        SMELT_DT_BFLOAT16, SMELT_DT_UNDEFINED};
    SMELT_TRY(op_check_dtype(ctx, n, q, "Q", types));
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "Q, K and V are %s, %s and %s: one type expected",
                       smelt_dtype_name(q->dtype), smelt_dtype_name(k->dtype),
                       smelt_dtype_name(v->dtype));
    if (q->rank != 4 || k->rank != 4 || v->rank != 4)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "Q, K and V must have rank 4, got %d, %d and %d",
                       q->rank, k->rank, v->rank);
    if (!agree(q->dims[0], k->dims[0]) || !agree(q->dims[0], v->dims[0]))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "the batch sizes of Q, K and V differ");
    if (!agree(k->dims[1], v->dims[1]) || !agree(k->dims[2], v->dims[2]))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "K and V must have the same heads and length");
    if (!agree(q->dims[3], k->dims[3]))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "Q and K have head sizes %lld and %lld",
                       (long long)q->dims[3], (long long)k->dims[3]);
    int64_t hq = q->dims[1], hkv = k->dims[1];
    if (hq >= 0 && hkv >= 0 && (hkv == 0 || hq % hkv != 0))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "%lld query heads are not a multiple of %lld "
                       "key/value heads", (long long)hq, (long long)hkv);
    return SMELT_OK;
}

void flex_scores_shape(const gr_node *n, const smelt_tensor *q, const smelt_tensor *k,
                       smelt_tensor *scores)
{
    memset(scores, 0, sizeof *scores);
    scores->dtype = flex_softmax_type(n, q->dtype);
    scores->rank = 4;
    int64_t dims[4] = {q->dims[0], q->dims[1], q->dims[2], k->dims[2]};
    memcpy(scores->dims, dims, sizeof dims);
}

void flex_output_shape(const smelt_tensor *q, const smelt_tensor *v, smelt_tensor *y)
{
    memset(y, 0, sizeof *y);
    y->dtype = v->dtype;
    y->rank = 4;
    int64_t dims[4] = {q->dims[0], q->dims[1], q->dims[2], v->dims[3]};
    memcpy(y->dims, dims, sizeof dims);
}

static double round_to(smelt_dtype dt, double v)
{
    uint64_t cell[2] = {0, 0};
    smelt_tensor t = {.dtype = dt, .rank = 0, .data = cell};
    op_set_f64(&t, 0, v);
    return op_get_f64(&t, 0);
}

/* Element [b, h, i, j] of a rank-4 tensor. */
static double at4(const smelt_tensor *t, int64_t b, int64_t h, int64_t i, int64_t j)
{
    const int64_t *d = t->dims;
    return op_get_f64(t, ((b * d[1] + h) * d[2] + i) * d[3] + j);
}

static int64_t offset4(const smelt_tensor *t, int64_t b, int64_t h, int64_t i, int64_t j)
{
    const int64_t *d = t->dims;
    return ((b * d[1] + h) * d[2] + i) * d[3] + j;
}

void flex_scores(const gr_node *n, const smelt_tensor *q, const smelt_tensor *k,
                 smelt_tensor *scores)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    int64_t heads = q->dims[1], group = heads / k->dims[1], e = q->dims[3];
    double scale = isnan(a->scale) ? 1.0 / sqrt((double)e) : a->scale;
    double root = round_to(q->dtype, (double)sqrtf((float)scale));
    for (int64_t b = 0; b < q->dims[0]; b++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < q->dims[2]; i++)
                for (int64_t j = 0; j < k->dims[2]; j++) {
                    double dot = 0;
                    for (int64_t c = 0; c < e; c++)
                        dot += round_to(q->dtype, at4(q, b, h, i, c) * root) *
                               round_to(q->dtype, at4(k, b, h / group, j, c) * root);
                    op_set_f64(scores, offset4(scores, b, h, i, j), round_to(q->dtype, dot));
                }
}

void flex_softmax(smelt_tensor *scores)
{
    int64_t len = scores->dims[3], rows = op_numel(scores) / (len ? len : 1);
    for (int64_t r = 0; len && r < rows; r++) {
        double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < len; j++) top = fmax(top, op_get_f64(scores, r * len + j));
        for (int64_t j = 0; j < len; j++) {
            double e = round_to(scores->dtype, exp(op_get_f64(scores, r * len + j) - top));
            op_set_f64(scores, r * len + j, e);
            sum += e;
        }
        sum = round_to(scores->dtype, sum);
        for (int64_t j = 0; j < len; j++)
            op_set_f64(scores, r * len + j, op_get_f64(scores, r * len + j) / sum);
    }
}

void flex_output(const smelt_tensor *probs, const smelt_tensor *v, smelt_tensor *y)
{
    int64_t group = probs->dims[1] / v->dims[1];
    for (int64_t b = 0; b < y->dims[0]; b++)
        for (int64_t h = 0; h < y->dims[1]; h++)
            for (int64_t i = 0; i < y->dims[2]; i++)
                for (int64_t c = 0; c < y->dims[3]; c++) {
                    double sum = 0;
                    for (int64_t j = 0; j < v->dims[2]; j++)
                        sum += at4(probs, b, h, i, j) *
                               round_to(probs->dtype, at4(v, b, h / group, j, c));
                    op_set_f64(y, offset4(y, b, h, i, c), round_to(probs->dtype, sum));
                }
}

/* The output's type; the bodies are inferred on the scores' type. */
static smelt_status flex_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    SMELT_TRY(flex_check(ctx, n, in[0], in[1], in[2]));
    smelt_tensor scores;
    flex_scores_shape(n, in[0], in[1], &scores);
    if (a->score_mod) SMELT_TRY(ctl_infer_body(ctx, n, a->score_mod, in, &scores));
    if (a->prob_mod) SMELT_TRY(ctl_infer_body(ctx, n, a->prob_mod, in, &scores));
    flex_output_shape(in[0], in[2], &out[0]);
    return SMELT_OK;
}

/* ---- compiled, without modifier bodies ----
 * Stages: qs, ks (Q, K times the root in their type), acc (Q K^T in
 * double), scores (in the input type, then the softmax type), top (row
 * maxima), ex (exponentials in the softmax type), sum (in double), p (the
 * probabilities in the softmax type), y_acc (P V in double), y (the softmax
 * type, then V's).  A reduction stage's body is its reduction alone. */

typedef struct flex_te {
    const te_tensor *q, *k, *v, *a, *b; /* a, b: the stage(s) a body reads */
    smelt_dtype soft;
    double root;
    int64_t group;
} flex_te;

static ir_expr *f64(te_graph *g, const te_tensor *t, ir_expr *const *idx)
{
    return ir_cast(&g->b, SMELT_DT_FLOAT64, te_read(g, t, idx));
}

static ir_expr *scaled_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const flex_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *x = ir_mul(b, f64(g, s->a, idx), ir_const_float(b, SMELT_DT_FLOAT64, s->root));
    return ir_cast(b, s->a->buf->dtype, x);
}

/* K/V head of query head h */
static ir_expr *kv_head(ir_builder *b, const flex_te *s, ir_expr *h)
{
    return s->group == 1 ? h : ir_binary(b, IR_DIV, h, ir_int(b, s->group));
}

static ir_expr *dot_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const flex_te *s = user;
    ir_builder *b = &g->b;
    ir_axis c = te_reduce_axis(g, "c", s->a->buf->shape[3]);
    ir_expr *cv = ir_var_ref(b, c.var);
    ir_expr *qi[4] = {idx[0], idx[1], idx[2], cv};
    ir_expr *ki[4] = {idx[0], kv_head(b, s, idx[1]), idx[3], cv};
    return te_reduce(g, IR_REDUCE_SUM, ir_mul(b, f64(g, s->a, qi), f64(g, s->b, ki)), 1, &c);
}

static ir_expr *round_scores_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const flex_te *s = user;
    return ir_cast(&g->b, s->soft, ir_cast(&g->b, s->q->buf->dtype, te_read(g, s->a, idx)));
}

static ir_expr *row_reduce_body(te_graph *g, ir_expr *const *idx, void *user, ir_reduce_op op)
{
    const flex_te *s = user;
    ir_axis j = te_reduce_axis(g, "j", s->a->buf->shape[3]);
    ir_expr *at[4] = {idx[0], idx[1], idx[2], ir_var_ref(&g->b, j.var)};
    ir_expr *x = op == IR_REDUCE_MAX ? te_read(g, s->a, at) : f64(g, s->a, at);
    return te_reduce(g, op, x, 1, &j);
}

static ir_expr *top_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return row_reduce_body(g, idx, user, IR_REDUCE_MAX);
}

static ir_expr *sum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return row_reduce_body(g, idx, user, IR_REDUCE_SUM);
}

static ir_expr *exp_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const flex_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *d = ir_sub(b, f64(g, s->a, idx), f64(g, s->b, idx)); /* b: top, 3 indices */
    return ir_cast(b, s->soft, ir_call(b, IR_CALL_EXP, SMELT_DT_FLOAT64, 1, &d));
}

static ir_expr *prob_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const flex_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *sum = ir_cast(b, SMELT_DT_FLOAT64, ir_cast(b, s->soft, te_read(g, s->b, idx)));
    return ir_cast(b, s->soft, ir_binary(b, IR_DIV, f64(g, s->a, idx), sum));
}

static ir_expr *pv_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const flex_te *s = user;
    ir_builder *b = &g->b;
    ir_axis j = te_reduce_axis(g, "j", s->v->buf->shape[2]);
    ir_expr *jv = ir_var_ref(b, j.var);
    ir_expr *pi[4] = {idx[0], idx[1], idx[2], jv};
    ir_expr *vi[4] = {idx[0], kv_head(b, s, idx[1]), jv, idx[3]};
    ir_expr *v = ir_cast(b, SMELT_DT_FLOAT64, ir_cast(b, s->soft, te_read(g, s->v, vi)));
    return te_reduce(g, IR_REDUCE_SUM, ir_mul(b, f64(g, s->a, pi), v), 1, &j);
}

static ir_expr *output_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const flex_te *s = user;
    return ir_cast(&g->b, s->v->buf->dtype, ir_cast(&g->b, s->soft, te_read(g, s->a, idx)));
}

static te_tensor *stage(op_compute_args *c, const char *name, smelt_dtype dt, const int64_t *dims,
                        int rank, te_body_fn body, flex_te *s, const char *tag)
{
    return te_compute(c->te, name, dt, rank, dims, body, s, tag);
}

/* qs, ks, acc, scores: the scores in the softmax type (s: q, k, soft, group, root). */
static te_tensor *scores_stages(op_compute_args *c, flex_te *s)
{
    const ctl_attrs *a = ctl_attrs_of(c->node);
    const int64_t *qd = s->q->buf->shape, *kd = s->k->buf->shape;
    s->group = qd[1] / kd[1];
    double scale = isnan(a->scale) ? 1.0 / sqrt((double)qd[3]) : a->scale;
    s->root = round_to(s->q->buf->dtype, (double)sqrtf((float)scale));
    int64_t sd[4] = {qd[0], qd[1], qd[2], kd[2]};
    s->a = s->q;
    te_tensor *qs = stage(c, "qs", s->q->buf->dtype, qd, 4, scaled_body, s, "injective");
    s->a = s->k;
    te_tensor *ks = qs ? stage(c, "ks", s->k->buf->dtype, kd, 4, scaled_body, s, "injective") : NULL;
    s->a = qs, s->b = ks;
    te_tensor *acc = ks ? stage(c, "acc", SMELT_DT_FLOAT64, sd, 4, dot_body, s, "reduce") : NULL;
    s->a = acc;
    return acc ? stage(c, "scores", s->soft, sd, 4, round_scores_body, s, "injective") : NULL;
}

/* y_acc, y: P V in V's type (s: v, soft, group; p the probabilities). */
static te_tensor *output_stages(op_compute_args *c, flex_te *s, const te_tensor *p)
{
    const int64_t *pd = p->buf->shape, *vd = s->v->buf->shape;
    int64_t yd[4] = {pd[0], pd[1], pd[2], vd[3]};
    s->group = pd[1] / vd[1];
    s->a = p;
    te_tensor *y_acc = stage(c, "y_acc", SMELT_DT_FLOAT64, yd, 4, pv_body, s, "reduce");
    s->a = y_acc;
    return y_acc ? stage(c, "y", s->v->buf->dtype, yd, 4, output_body, s, "injective") : NULL;
}

static smelt_status flex_compute(op_compute_args *c)
{
    const ctl_attrs *a = ctl_attrs_of(c->node);
    if (a->score_mod || a->prob_mod) /* expand_flex made them nodes, or lowering refused */
        return op_errf(c->ctx, c->node, SMELT_ERR_INTERNAL, "modifier bodies reached compute");
    flex_te s = {.q = c->in[0], .k = c->in[1], .v = c->in[2]};
    s.soft = flex_softmax_type(c->node, s.q->buf->dtype);
    te_tensor *scores = scores_stages(c, &s);
    const int64_t *sd = scores ? scores->buf->shape : NULL;
    s.a = scores;
    te_tensor *top = scores ? stage(c, "top", s.soft, sd, 3, top_body, &s, "reduce") : NULL;
    s.b = top;
    te_tensor *ex = top ? stage(c, "ex", s.soft, sd, 4, exp_body, &s, "injective") : NULL;
    s.a = ex;
    te_tensor *sum = ex ? stage(c, "sum", SMELT_DT_FLOAT64, sd, 3, sum_body, &s, "reduce") : NULL;
    s.b = sum;
    te_tensor *p = sum ? stage(c, "p", s.soft, sd, 4, prob_body, &s, "injective") : NULL;
    c->out[0] = p ? output_stages(c, &s, p) : NULL;
    return c->out[0] ? SMELT_OK : smelt_ctx_status(c->ctx);
}

/* ---- smelt.FlexScores, smelt.FlexOutput (internal) ----
 * A FlexAttention with modifier bodies as ordinary nodes around them
 * (passes/expand_flex.c): FlexScores (Q, K) -> the scores in the softmax
 * type, FlexOutput (P, V) -> Y.  op_attrs: the FlexAttention's. */

static smelt_status scores_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                 smelt_tensor *out)
{
    SMELT_TRY(flex_check(ctx, n, in[0], in[1], in[1]));
    flex_scores_shape(n, in[0], in[1], &out[0]);
    return SMELT_OK;
}

static smelt_status scores_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    (void)ctx;
    flex_scores(n, in[0], in[1], &out[0]);
    return SMELT_OK;
}

static smelt_status scores_compute(op_compute_args *c)
{
    flex_te s = {.q = c->in[0], .k = c->in[1]};
    s.soft = flex_softmax_type(c->node, s.q->buf->dtype);
    c->out[0] = scores_stages(c, &s);
    return c->out[0] ? SMELT_OK : smelt_ctx_status(c->ctx);
}

static smelt_status output_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                 smelt_tensor *out)
{
    const smelt_tensor *p = in[0], *v = in[1];
    if (p->rank != 4 || v->rank != 4 || !op_dtype_is_float(p->dtype) ||
        !op_dtype_is_float(v->dtype) || v->dims[1] <= 0 || p->dims[1] % v->dims[1] != 0 ||
        p->dims[3] != v->dims[2])
        return op_errf(ctx, n, SMELT_ERR_INTERNAL, "probabilities and V do not fit");
    flex_output_shape(p, v, &out[0]);
    return SMELT_OK;
}

static smelt_status output_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    (void)ctx;
    (void)n;
    flex_output(in[0], in[1], &out[0]);
    return SMELT_OK;
}

static smelt_status output_compute(op_compute_args *c)
{
    flex_te s = {.v = c->in[1], .soft = c->in[0]->buf->dtype};
    c->out[0] = output_stages(c, &s, c->in[0]);
    return c->out[0] ? SMELT_OK : smelt_ctx_status(c->ctx);
}

const op_def op_def_FLEX_SCORES = {
    .compute = scores_compute, .infer = scores_infer, .eval = scores_eval,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .flags = OP_FLAG_INTERNAL,
};
const op_def op_def_FLEX_OUTPUT = {
    .compute = output_compute, .infer = output_infer, .eval = output_eval,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .flags = OP_FLAG_INTERNAL,
};

/* exec/control.c runs it (eval is never called for OP_FLAG_SUBGRAPHS ops). */
const op_def op_def_PREVIEW_FLEX_ATTENTION = {
    .compute = flex_compute, .import = flex_import, .infer = flex_infer,
    .min_inputs = 3, .max_inputs = -1, .min_outputs = 1, .max_outputs = 1,
    .flags = OP_FLAG_SUBGRAPHS,
};
