/* Losses: NegativeLogLikelihoodLoss (opsets 12-28) and SoftmaxCrossEntropyLoss
 * (12-28).
 *
 * X is (N, C, d1..dk), the target (N, d1..dk) holds class indices.  Each
 * sample's loss is -X[n, t, d...] * w, w = weight[t] (1 without weights); a
 * sample whose target equals ignore_index has loss 0 and weight 0.  Any
 * other target outside [0, C) is refused (at run time in compiled code, by
 * a check stage).  Reductions: none (the per-sample losses), sum, mean (the
 * sum divided by the sum of the samples' weights, i.e. the number of
 * samples not ignored when there are no weights).  SoftmaxCrossEntropyLoss
 * is NegativeLogLikelihoodLoss of LogSoftmax(X) over axis 1, which is its
 * optional second output log_prob.
 *
 * The reference kernel computes in double; the compute definition in
 * float32 (float64 for double inputs), rounding once at the outputs. */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

enum { LOSS_NONE, LOSS_SUM, LOSS_MEAN };

typedef struct op_loss_attrs {
    int64_t opset;
    int reduction;
    bool has_ignore;
    int64_t ignore_index;
} op_loss_attrs;

/* ---- import and shapes -------------------------------------------------------------- */

OP_ATTRS(NEGATIVE_LOG_LIKELIHOOD_LOSS) = {
    {"ignore_index", 0, 0}, {"reduction", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(SOFTMAX_CROSS_ENTROPY_LOSS) = {
    {"ignore_index", 0, 0}, {"reduction", 0, 0}, {NULL, 0, 0}};

static smelt_status loss_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_loss_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    const char *r;
    a->opset = g->opset;
    SMELT_TRY(op_attr_string(ctx, node, "reduction", "mean", &r));
    if (strcmp(r, "none") == 0) a->reduction = LOSS_NONE;
    else if (strcmp(r, "sum") == 0) a->reduction = LOSS_SUM;
    else if (strcmp(r, "mean") == 0) a->reduction = LOSS_MEAN;
    else
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'reduction' is \"%s\"; expected \"none\", \"sum\" or \"mean\"", r);
    a->has_ignore = gr_node_attr(node, "ignore_index") != NULL;
    return op_attr_int(ctx, node, "ignore_index", 0, &a->ignore_index);
}

static const char *loss_in_name(const gr_node *n, int i)
{
    return i < n->n_inputs && n->inputs[i] ? n->inputs[i]->name : "?";
}

/* bfloat16 arrived later than the other float types: NegativeLogLikelihoodLoss-22,
 * SoftmaxCrossEntropyLoss-13. */
static smelt_status loss_check_dtype(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *x)
{
    static const smelt_dtype floats[] = {SMELT_DT_FLOAT16, SMELT_DT_FLOAT32, SMELT_DT_FLOAT64,
                                         SMELT_DT_BFLOAT16, SMELT_DT_UNDEFINED};
    const op_loss_attrs *a = n->op_attrs;
    int bf16_since = n->op == OP_NEGATIVE_LOG_LIKELIHOOD_LOSS ? 22 : 13;
    char what[160];
    snprintf(what, sizeof what, "input '%s'", loss_in_name(n, 0));
    if (x->dtype == SMELT_DT_BFLOAT16 && a->opset < bf16_since)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                       "%s has dtype bfloat16, which %s takes from opset %d on (the model's: %lld)",
                       what, n->op_type, bf16_since, (long long)a->opset);
    return op_check_dtype(ctx, n, x, what, floats);
}

static smelt_status loss_check(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in)
{
    static const smelt_dtype ints[] = {SMELT_DT_INT32, SMELT_DT_INT64, SMELT_DT_UNDEFINED};
    const smelt_tensor *x = in[0], *t = in[1], *w = op_input(n, in, 2);
    char what[160];
    SMELT_TRY(loss_check_dtype(ctx, n, x));
    snprintf(what, sizeof what, "input '%s'", loss_in_name(n, 1));
    SMELT_TRY(op_check_dtype(ctx, n, t, what, ints));
    if (x->rank < 2)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has rank %d, expected (N, C, ...)",
                       loss_in_name(n, 0), x->rank);
    if (t->rank != x->rank - 1)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "target has rank %d, expected %d (N, d1, ...)",
                       t->rank, x->rank - 1);
    for (int d = 0; d < t->rank; d++) {
        int64_t want = x->dims[d == 0 ? 0 : d + 1];
        if (t->dims[d] >= 0 && want >= 0 && t->dims[d] != want)
            return op_errf(ctx, n, SMELT_ERR_SHAPE, "target dim %d is %lld, expected %lld", d,
                           (long long)t->dims[d], (long long)want);
    }
    if (!w) return SMELT_OK;
    if (w->dtype != x->dtype || w->rank != 1 ||
        (w->dims[0] >= 0 && x->dims[1] >= 0 && w->dims[0] != x->dims[1]))
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "weight must be a 1-D tensor of X's type with C = %lld elements",
                       (long long)x->dims[1]);
    return SMELT_OK;
}

static smelt_status loss_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    const op_loss_attrs *a = node->op_attrs;
    SMELT_TRY(loss_check(ctx, node, in));
    if (a->reduction == LOSS_NONE) {
        op_copy_shape(&out[0], in[1]);
    } else {
        out[0].rank = 0;
    }
    out[0].dtype = in[0]->dtype;
    if (node->n_outputs > 1) op_copy_shape(&out[1], in[0]);
    return SMELT_OK;
}

/* ---- reference kernel --------------------------------------------------------------- */

typedef struct loss_geom {
    int64_t n, c, inner; /* X as (N, C, inner) */
} loss_geom;

static loss_geom geom_of(const smelt_tensor *x)
{
    loss_geom g = {x->dims[0], x->dims[1], 1};
    for (int d = 2; d < x->rank; d++) g.inner *= x->dims[d];
    return g;
}

/* log_softmax over C of X, into lp (double, X's layout) */
static void log_softmax_c(const smelt_tensor *x, loss_geom g, double *lp)
{
    for (int64_t i = 0; i < g.n; i++)
        for (int64_t k = 0; k < g.inner; k++) {
            int64_t base = i * g.c * g.inner + k;
            double max = -INFINITY, sum = 0;
            for (int64_t c = 0; c < g.c; c++) max = fmax(max, op_get_f64(x, base + c * g.inner));
            for (int64_t c = 0; c < g.c; c++) sum += exp(op_get_f64(x, base + c * g.inner) - max);
            for (int64_t c = 0; c < g.c; c++)
                lp[base + c * g.inner] = op_get_f64(x, base + c * g.inner) - max - log(sum);
        }
}

static smelt_status loss_reduce(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                                const double *lp, loss_geom g, smelt_tensor *out)
{
    const op_loss_attrs *a = node->op_attrs;
    const smelt_tensor *t = in[1], *w = op_input(node, in, 2);
    double sum = 0, wsum = 0;
    for (int64_t i = 0; i < g.n; i++)
        for (int64_t k = 0; k < g.inner; k++) {
            int64_t pos = i * g.inner + k, c = op_get_i64(t, pos);
            double loss = 0, weight = 0;
            if (!(a->has_ignore && c == a->ignore_index)) {
                if (c < 0 || c >= g.c)
                    return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                                   "target %lld at position %lld is out of range for %lld classes",
                                   (long long)c, (long long)pos, (long long)g.c);
                weight = w ? op_get_f64(w, c) : 1.0;
                loss = -lp[(i * g.c + c) * g.inner + k] * weight;
            }
            if (a->reduction == LOSS_NONE) op_set_f64(&out[0], pos, loss);
            sum += loss;
            wsum += weight;
        }
    if (a->reduction == LOSS_SUM) op_set_f64(&out[0], 0, sum);
    if (a->reduction == LOSS_MEAN) op_set_f64(&out[0], 0, sum / wsum);
    return SMELT_OK;
}

static smelt_status loss_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    SMELT_TRY(loss_check(ctx, node, in));
    const smelt_tensor *x = in[0];
    loss_geom g = geom_of(x);
    int64_t n = op_numel(x);
    double *lp = smelt_alloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!lp) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory for %lld values", (long long)n);
    if (node->op == OP_SOFTMAX_CROSS_ENTROPY_LOSS) {
        log_softmax_c(x, g, lp);
        if (node->n_outputs > 1 && node->outputs[1])
            for (int64_t i = 0; i < n; i++) op_set_f64(&out[1], i, lp[i]);
    } else {
        for (int64_t i = 0; i < n; i++) lp[i] = op_get_f64(x, i);
    }
    smelt_status st = loss_reduce(ctx, node, in, lp, g, out);
    smelt_free(lp);
    return st;
}

/* ---- compute definition --------------------------------------------------------------
 * Stages: (SoftmaxCrossEntropyLoss) lp_max, lp_sum over C and log_prob;
 * the per-sample loss and weight (shaped like the target); the sums; the
 * output.  The target is clamped into [0, C) where it is read as an index;
 * a check stage refuses targets out of range that are not ignore_index. */

typedef struct loss_te {
    const op_loss_attrs *a;
    const te_tensor *x, *t, *w;
    te_tensor *lp_max, *lp_sum, *lp, *loss, *weight, *loss_sum, *weight_sum;
    int64_t classes;
    int rank; /* X's */
    smelt_dtype dt;
} loss_te;

/* X's index with class c at axis 1 from a target-shaped index */
static void x_index(ir_expr *const *tidx, int xrank, ir_expr *c, ir_expr **xi)
{
    xi[0] = tidx[0];
    xi[1] = c;
    for (int d = 2; d < xrank; d++) xi[d] = tidx[d - 1];
}

static ir_expr *lp_reduce_body(te_graph *g, ir_expr *const *idx, void *user, bool max)
{
    loss_te *s = user;
    ir_axis ax = te_reduce_axis(g, "c", s->classes);
    ir_expr *xi[SMELT_MAX_RANK];
    for (int d = 0; d < s->rank; d++) xi[d] = idx[d];
    xi[1] = ir_var_ref(&g->b, ax.var);
    ir_expr *v = ir_cast(&g->b, s->dt, te_read(g, s->x, xi));
    if (!max) {
        ir_expr *m = te_read(g, s->lp_max, idx);
        ir_expr *d = ir_sub(&g->b, v, m);
        v = ir_call(&g->b, IR_CALL_EXP, s->dt, 1, &d);
    }
    return te_reduce(g, max ? IR_REDUCE_MAX : IR_REDUCE_SUM, v, 1, &ax);
}

static ir_expr *lp_max_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return lp_reduce_body(g, idx, user, true);
}

static ir_expr *lp_sum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return lp_reduce_body(g, idx, user, false);
}

static ir_expr *log_prob_body(te_graph *g, ir_expr *const *idx, void *user)
{
    loss_te *s = user;
    ir_expr *ri[SMELT_MAX_RANK];
    for (int d = 0; d < s->rank; d++) ri[d] = d == 1 ? ir_int(&g->b, 0) : idx[d];
    ir_expr *sum = te_read(g, s->lp_sum, ri);
    ir_expr *shifted = ir_sub(&g->b, ir_cast(&g->b, s->dt, te_read(g, s->x, idx)),
                              te_read(g, s->lp_max, ri));
    return ir_sub(&g->b, shifted, ir_call(&g->b, IR_CALL_LOG, s->dt, 1, &sum));
}

static ir_expr *target_at(te_graph *g, const loss_te *s, ir_expr *const *idx)
{
    return ir_cast(&g->b, SMELT_DT_INT64, te_read(g, s->t, idx));
}

static ir_expr *not_ignored(te_graph *g, const loss_te *s, ir_expr *c)
{
    if (!s->a->has_ignore) return ir_const_int(&g->b, SMELT_DT_BOOL, 1);
    return ir_binary(&g->b, IR_NE, c, ir_int(&g->b, s->a->ignore_index));
}

static ir_expr *clamped_class(te_graph *g, const loss_te *s, ir_expr *c)
{
    return ir_binary(&g->b, IR_MIN, ir_binary(&g->b, IR_MAX, c, ir_int(&g->b, 0)),
                     ir_int(&g->b, s->classes - 1));
}

/* the sample's weight: weight[t] (or 1), 0 when ignored */
static ir_expr *weight_body(te_graph *g, ir_expr *const *idx, void *user)
{
    loss_te *s = user;
    ir_expr *c = target_at(g, s, idx), *cc = clamped_class(g, s, c);
    ir_expr *w = s->w ? ir_cast(&g->b, s->dt, te_read(g, s->w, &cc)) : ir_const_float(&g->b, s->dt, 1);
    return ir_select(&g->b, not_ignored(g, s, c), w, ir_const_float(&g->b, s->dt, 0));
}

static ir_expr *loss_body(te_graph *g, ir_expr *const *idx, void *user)
{
    loss_te *s = user;
    ir_expr *c = target_at(g, s, idx), *xi[SMELT_MAX_RANK];
    x_index(idx, s->rank, clamped_class(g, s, c), xi);
    ir_expr *v = ir_cast(&g->b, s->dt, te_read(g, s->lp ? s->lp : s->x, xi));
    ir_expr *w = te_read(g, s->weight, idx);
    return ir_mul(&g->b, ir_sub(&g->b, ir_const_float(&g->b, s->dt, 0), v), w);
}

static ir_expr *total_body(te_graph *g, ir_expr *const *idx, void *user, const te_tensor *t)
{
    (void)idx, (void)user;
    ir_axis ax[SMELT_MAX_RANK];
    ir_expr *ti[SMELT_MAX_RANK];
    for (int d = 0; d < t->n_axes; d++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", d);
        ax[d] = te_reduce_axis(g, name, t->buf->shape[d]);
        ti[d] = ir_var_ref(&g->b, ax[d].var);
    }
    return te_reduce(g, IR_REDUCE_SUM, te_read(g, t, ti), t->n_axes, ax);
}

static ir_expr *loss_sum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return total_body(g, idx, user, ((loss_te *)user)->loss);
}

static ir_expr *weight_sum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return total_body(g, idx, user, ((loss_te *)user)->weight);
}

static ir_expr *output_body(te_graph *g, ir_expr *const *idx, void *user)
{
    loss_te *s = user;
    if (s->a->reduction == LOSS_NONE) return te_read(g, s->loss, idx);
    ir_expr *sum = te_read(g, s->loss_sum, idx);
    if (s->a->reduction == LOSS_SUM) return sum;
    return ir_binary(&g->b, IR_DIV, sum, te_read(g, s->weight_sum, idx));
}

static ir_expr *target_check_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return target_at(g, user, idx);
}

static smelt_status loss_target_check(op_compute_args *a, loss_te *s)
{
    ir_builder *b = &a->te->b;
    ir_var *v = ir_var_new(b, "v", SMELT_DT_INT64);
    ir_expr *vr = ir_var_ref(b, v);
    ir_expr *ok = ir_binary(b, IR_AND, ir_binary(b, IR_GE, vr, ir_int(b, 0)),
                            ir_binary(b, IR_LT, vr, ir_int(b, s->classes)));
    if (s->a->has_ignore)
        ok = ir_binary(b, IR_OR, ir_binary(b, IR_EQ, vr, ir_int(b, s->a->ignore_index)), ok);
    char msg[160];
    snprintf(msg, sizeof msg, "target {value} at position {position} is out of range for %lld "
             "classes", (long long)s->classes);
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type, .message = msg};
    te_tensor *t = te_check_compute(a->te, "check", s->t->n_axes, s->t->buf->shape,
                                    target_check_body, s, v, ok, &site);
    return t ? SMELT_OK : smelt_ctx_status(a->ctx);
}

static smelt_status loss_log_prob(op_compute_args *a, loss_te *s)
{
    int64_t row[SMELT_MAX_RANK];
    memcpy(row, s->x->buf->shape, sizeof(int64_t) * (size_t)s->rank);
    row[1] = 1;
    if (!(s->lp_max = te_compute(a->te, "lp_max", s->dt, s->rank, row, lp_max_body, s, "reduce")) ||
        !(s->lp_sum = te_compute(a->te, "lp_sum", s->dt, s->rank, row, lp_sum_body, s, "reduce")) ||
        !(s->lp = te_compute(a->te, "log_prob", a->out_type[0].dtype, s->rank, s->x->buf->shape,
                             log_prob_body, s, "injective")))
        return smelt_ctx_status(a->ctx);
    if (a->node->n_outputs > 1 && a->node->outputs[1]) a->out[1] = s->lp;
    return SMELT_OK;
}

static smelt_status loss_compute(op_compute_args *a)
{
    const gr_node *n = a->node;
    loss_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, n, SMELT_ERR_NOMEM, "out of memory");
    memset(s, 0, sizeof *s);
    s->a = n->op_attrs;
    s->x = a->in[0], s->t = a->in[1], s->w = n->n_inputs > 2 ? a->in[2] : NULL;
    s->rank = s->x->n_axes;
    s->classes = s->x->buf->shape[1];
    s->dt = s->x->buf->dtype == SMELT_DT_FLOAT64 ? SMELT_DT_FLOAT64 : SMELT_DT_FLOAT32;
    if (s->classes == 0)
        return op_errf(a->ctx, n, SMELT_ERR_UNSUPPORTED, "input '%s' has no classes",
                       loss_in_name(n, 0));
    const smelt_tensor *ot = &a->out_type[0];
    const int64_t *tshape = s->t->buf->shape, scalar[1] = {1};
    int trank = s->t->n_axes;
    SMELT_TRY(loss_target_check(a, s));
    if (n->op == OP_SOFTMAX_CROSS_ENTROPY_LOSS) SMELT_TRY(loss_log_prob(a, s));
    if (!(s->weight = te_compute(a->te, "weight", s->dt, trank, tshape, weight_body, s,
                                 "injective")) ||
        !(s->loss = te_compute(a->te, "loss", s->dt, trank, tshape, loss_body, s, "injective")))
        return smelt_ctx_status(a->ctx);
    if (s->a->reduction != LOSS_NONE &&
        !(s->loss_sum = te_compute(a->te, "loss_sum", s->dt, 0, scalar, loss_sum_body, s, "reduce")))
        return smelt_ctx_status(a->ctx);
    if (s->a->reduction == LOSS_MEAN &&
        !(s->weight_sum = te_compute(a->te, "weight_sum", s->dt, 0, scalar, weight_sum_body, s,
                                     "reduce")))
        return smelt_ctx_status(a->ctx);
    a->out[0] = te_compute(a->te, "y", ot->dtype, ot->rank, ot->dims, output_body, s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_NEGATIVE_LOG_LIKELIHOOD_LOSS = {
    .compute = loss_compute,
    .import = loss_import,
    .infer = loss_infer,
    .eval = loss_eval,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
};

const op_def op_def_SOFTMAX_CROSS_ENTROPY_LOSS = {
    .compute = loss_compute,
    .import = loss_import,
    .infer = loss_infer,
    .eval = loss_eval,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 2,
};
