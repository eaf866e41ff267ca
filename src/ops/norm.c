/* Normalization and softmax: BatchNormalization, InstanceNormalization,
 * GroupNormalization, MeanVarianceNormalization, LpNormalization,
 * LayerNormalization, RMSNormalization, Softmax, LogSoftmax, Hardmax.
 *
 * The kernels compute in double.  Softmax, LayerNorm and InstanceNorm load
 * the input into a double scratch buffer with a typed loop (so float32 never
 * goes through the per-element generic accessors) and store it back the same
 * way; BatchNorm, the hottest of them in CNNs, streams float32 directly.
 *
 * The compute definitions (te) work in float32 (float64 for double inputs
 * or a float64 LayerNorm stash_type): per-row statistics are reduction
 * stages shaped like X with the reduced dims set to 1 (max and exp-sum for
 * softmax; sum, mean, squared deviations and 1/std for the normalizations),
 * followed by one elementwise output stage. */
#include <math.h>
#include <string.h>

#include "ops/norm.h"
#include "ops/op.h"
#include "te/te.h"

static const smelt_dtype k_float_types[] = {SMELT_DT_FLOAT16, SMELT_DT_FLOAT32,
                                            SMELT_DT_FLOAT64, SMELT_DT_BFLOAT16,
                                            SMELT_DT_UNDEFINED};

/* ---- helpers ----------------------------------------------------------------- */

static double *f64_scratch(smelt_ctx *ctx, const gr_node *n, int64_t count)
{
    double *p = smelt_alloc((size_t)(count > 0 ? count : 1) * sizeof(double));
    if (!p)
        op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory for a scratch buffer of %lld values",
                (long long)count);
    return p;
}

static void load_f64(const smelt_tensor *t, double *dst)
{
    int64_t n = op_numel(t);
    if (t->dtype == SMELT_DT_FLOAT32) {
        const float *src = t->data;
        for (int64_t i = 0; i < n; i++) dst[i] = src[i];
    } else if (t->dtype == SMELT_DT_FLOAT64) {
        if (n > 0) memcpy(dst, t->data, (size_t)n * sizeof *dst);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = op_get_f64(t, i);
    }
}

static void store_f64(smelt_tensor *t, const double *src)
{
    int64_t n = op_numel(t);
    if (t->dtype == SMELT_DT_FLOAT32) {
        float *dst = t->data;
        for (int64_t i = 0; i < n; i++) dst[i] = (float)src[i];
    } else if (t->dtype == SMELT_DT_FLOAT64) {
        if (n > 0) memcpy(t->data, src, (size_t)n * sizeof *src);
    } else {
        for (int64_t i = 0; i < n; i++) op_set_f64(t, i, src[i]);
    }
}

/* "(2, 3, ?)" for messages; symbolic dims print as '?'. */
static const char *dims_str(const smelt_tensor *t, char *buf, size_t size)
{
    size_t len = 0;
    len += (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < t->rank && len < size; i++) {
        const char *sep = i ? ", " : "";
        if (t->dims[i] >= 0)
            len += (size_t)snprintf(buf + len, size - len, "%s%lld", sep, (long long)t->dims[i]);
        else
            len += (size_t)snprintf(buf + len, size - len, "%s?", sep);
    }
    if (len < size) snprintf(buf + len, size - len, ")");
    return buf;
}

static const char *input_name(const gr_node *n, int i)
{
    return i < n->n_inputs && n->inputs[i] ? n->inputs[i]->name : "?";
}

static bool dims_conflict(int64_t a, int64_t b)
{
    return a >= 0 && b >= 0 && a != b;
}

static int64_t dims_product(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= dims[i];
    return p;
}

static smelt_status check_float_input(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                                      int i)
{
    char what[160];
    snprintf(what, sizeof what, "input '%s'", input_name(n, i));
    return op_check_dtype(ctx, n, t, what, k_float_types);
}

/* A per-channel parameter: 1-D with C elements. */
static smelt_status check_channel_param(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *p,
                                        int i, int64_t channels)
{
    SMELT_TRY(check_float_input(ctx, n, p, i));
    if (p->rank != 1)
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "input '%s' has rank %d, expected 1 (one value per channel)",
                       input_name(n, i), p->rank);
    if (dims_conflict(p->dims[0], channels))
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "input '%s' has %lld elements, expected %lld (the channels of X)",
                       input_name(n, i), (long long)p->dims[0], (long long)channels);
    return SMELT_OK;
}

static smelt_status check_rank_at_least(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *x,
                                        int min_rank, const char *layout)
{
    if (x->rank < min_rank)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has rank %d, expected at least %d (%s)",
                       input_name(n, 0), x->rank, min_rank, layout);
    return SMELT_OK;
}

static bool has_output(const gr_node *n, int i)
{
    return i < n->n_outputs && n->outputs[i] != NULL;
}

/* ---- compute helpers (tensor expressions) ------------------------------------------
 * Each op normalizes over a span of dims [lo, hi) of X ("rows"); per-row
 * statistics are stages shaped like X with the span's dims set to 1. */

typedef struct norm_span {
    int lo, hi;
    unsigned mask; /* when nonzero, the dims d with bit d set instead of [lo, hi) */
} norm_span;

static bool span_has(norm_span s, int d)
{
    return s.mask ? (s.mask >> d) & 1u : d >= s.lo && d < s.hi;
}

/* float16/bfloat16 compute in float32 and round once at the end. */
static smelt_dtype compute_dtype(smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT64 ? SMELT_DT_FLOAT64 : SMELT_DT_FLOAT32;
}

static ir_expr *fconst(te_graph *g, smelt_dtype dt, double v)
{
    return ir_const_float(&g->b, dt, v);
}

static ir_expr *call1(te_graph *g, ir_call_op op, ir_expr *x)
{
    return ir_call(&g->b, op, x ? x->dtype : SMELT_DT_FLOAT32, 1, &x);
}

static ir_expr *read_as(te_graph *g, const te_tensor *t, ir_expr *const *idx, smelt_dtype dt)
{
    return ir_cast(&g->b, dt, te_read(g, t, idx));
}

static void row_shape(const te_tensor *x, norm_span s, int64_t *shape)
{
    for (int d = 0; d < x->n_axes; d++)
        shape[d] = span_has(s, d) ? 1 : x->buf->shape[d];
}

static int64_t row_length(const te_tensor *x, norm_span s)
{
    int64_t n = 1;
    for (int d = 0; d < x->n_axes; d++)
        if (span_has(s, d)) n *= x->buf->shape[d];
    return n;
}

/* A per-row stage t read at the full index idx of X. */
static ir_expr *read_row(te_graph *g, const te_tensor *t, norm_span s, ir_expr *const *idx)
{
    ir_expr *ri[SMELT_MAX_RANK];
    for (int d = 0; d < t->n_axes; d++) ri[d] = span_has(s, d) ? ir_int(&g->b, 0) : idx[d];
    return te_read(g, t, ri);
}

/* A reduction of elem(full index of X) over the span, one value per row. */
typedef ir_expr *(*row_elem_fn)(te_graph *g, ir_expr *const *idx, void *user);

typedef struct row_reduce {
    const te_tensor *x;
    norm_span span;
    ir_reduce_op op;
    smelt_dtype dt;
    row_elem_fn elem;
    void *user;
} row_reduce;

static ir_expr *row_reduce_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const row_reduce *r = user;
    ir_axis axes[SMELT_MAX_RANK];
    ir_expr *full[SMELT_MAX_RANK] = {0};
    int n = 0;
    for (int d = 0; d < r->x->n_axes; d++) {
        if (!span_has(r->span, d)) {
            full[d] = idx[d];
            continue;
        }
        char name[16];
        snprintf(name, sizeof name, "r%d", n);
        axes[n] = te_reduce_axis(g, name, r->x->buf->shape[d]);
        full[d] = ir_var_ref(&g->b, axes[n].var);
        n++;
    }
    ir_expr *e = r->elem(g, full, r->user);
    return n ? te_reduce(g, r->op, e, n, axes) : e; /* an empty span: the element itself */
}

static te_tensor *row_reduce_stage(te_graph *g, const char *name, row_reduce *r)
{
    int64_t shape[SMELT_MAX_RANK];
    row_shape(r->x, r->span, shape);
    return te_compute(g, name, r->dt, r->x->n_axes, shape, row_reduce_body, r, "reduce");
}

/* Mean and 1/sqrt(var + eps) per row: sum, mean, sum of squared deviations
 * (two passes, as the reference), inverse standard deviation. */
typedef struct row_stats {
    const te_tensor *x;
    norm_span span;
    smelt_dtype dt;
    double count, eps;
    te_tensor *sum, *mean, *sq_sum, *inv_std;
} row_stats;

static ir_expr *stats_x_elem(te_graph *g, ir_expr *const *idx, void *user)
{
    const row_stats *s = user;
    return read_as(g, s->x, idx, s->dt);
}

static ir_expr *stats_sq_elem(te_graph *g, ir_expr *const *idx, void *user)
{
    const row_stats *s = user;
    ir_expr *dev = ir_sub(&g->b, read_as(g, s->x, idx, s->dt), read_row(g, s->mean, s->span, idx));
    return ir_mul(&g->b, dev, dev);
}

static ir_expr *stats_mean_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const row_stats *s = user;
    return ir_binary(&g->b, IR_DIV, te_read(g, s->sum, idx), fconst(g, s->dt, s->count));
}

static ir_expr *stats_inv_std_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const row_stats *s = user;
    ir_expr *var = ir_binary(&g->b, IR_DIV, te_read(g, s->sq_sum, idx), fconst(g, s->dt, s->count));
    ir_expr *std = call1(g, IR_CALL_SQRT, ir_add(&g->b, var, fconst(g, s->dt, s->eps)));
    return ir_binary(&g->b, IR_DIV, fconst(g, s->dt, 1.0), std);
}

static smelt_status row_stats_build(op_compute_args *a, row_stats *s)
{
    te_graph *g = a->te;
    int64_t shape[SMELT_MAX_RANK], len = row_length(s->x, s->span);
    s->count = len > 0 ? (double)len : 1.0; /* an empty row: mean 0, as the reference */
    row_shape(s->x, s->span, shape);
    row_reduce sum = {s->x, s->span, IR_REDUCE_SUM, s->dt, stats_x_elem, s};
    row_reduce sq = {s->x, s->span, IR_REDUCE_SUM, s->dt, stats_sq_elem, s};
    int rank = s->x->n_axes;
    if (!(s->sum = row_reduce_stage(g, "x_sum", &sum))) return smelt_ctx_status(a->ctx);
    s->mean = te_compute(g, "x_mean", s->dt, rank, shape, stats_mean_body, s, "injective");
    if (!s->mean) return smelt_ctx_status(a->ctx);
    if (!(s->sq_sum = row_reduce_stage(g, "x_sq_sum", &sq))) return smelt_ctx_status(a->ctx);
    s->inv_std = te_compute(g, "x_inv_std", s->dt, rank, shape, stats_inv_std_body, s,
                            "injective");
    return s->inv_std ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* How scale/bias/mean/var parameters line up with X. */
typedef enum param_layout {
    PARAM_CHANNEL,  /* 1-D, one value per channel (dim 1) */
    PARAM_TRAILING, /* numpy-broadcast against X's trailing dims */
} param_layout;

static ir_expr *read_param(te_graph *g, const te_tensor *p, param_layout layout,
                           ir_expr *const *idx, int x_rank, smelt_dtype dt)
{
    ir_expr *pi[SMELT_MAX_RANK];
    if (layout == PARAM_CHANNEL) {
        pi[0] = idx[1];
    } else {
        for (int d = 0; d < p->n_axes; d++)
            pi[d] = p->buf->shape[d] == 1 ? ir_int(&g->b, 0) : idx[x_rank - p->n_axes + d];
    }
    return read_as(g, p, pi, dt);
}

/* y = (x - mean) * inv_std * scale + bias with per-row statistics. */
typedef struct affine_norm {
    const row_stats *stats;
    const te_tensor *scale, *bias; /* bias may be NULL */
    param_layout layout;
} affine_norm;

static ir_expr *affine_norm_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const affine_norm *an = user;
    const row_stats *s = an->stats;
    int rank = s->x->n_axes;
    ir_expr *dev = ir_sub(&g->b, read_as(g, s->x, idx, s->dt), read_row(g, s->mean, s->span, idx));
    ir_expr *y = ir_mul(&g->b, dev, read_row(g, s->inv_std, s->span, idx));
    y = ir_mul(&g->b, y, read_param(g, an->scale, an->layout, idx, rank, s->dt));
    if (an->bias) y = ir_add(&g->b, y, read_param(g, an->bias, an->layout, idx, rank, s->dt));
    return y;
}

static smelt_status affine_norm_output(op_compute_args *a, affine_norm *an)
{
    const te_tensor *x = an->stats->x;
    a->out[0] = te_compute(a->te, "y", a->out_type[0].dtype, x->n_axes, x->buf->shape,
                           affine_norm_body, an, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

static ir_expr *copy_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return te_read(g, user, idx); /* te_compute casts to the stage's dtype */
}

/* Output i as stage t in the output's dtype (t itself when it already has it). */
static smelt_status stats_output(op_compute_args *a, int i, const char *name, te_tensor *t)
{
    if (!has_output(a->node, i)) return SMELT_OK;
    smelt_dtype dt = a->out_type[i].dtype;
    a->out[i] = t->buf->dtype == dt ? t
                                    : te_compute(a->te, name, dt, t->n_axes, t->buf->shape,
                                                 copy_body, t, "injective");
    return a->out[i] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* ---- BatchNormalization -------------------------------------------------------- */

/* momentum only updates the running statistics (training_mode=1). */
OP_ATTRS(BATCH_NORMALIZATION) = {{"epsilon", 0, 0},         {"momentum", 0, 0},
                                 {"is_test", 0, 6},   {"spatial", 0, 8},
                                 {"training_mode", 14, 0}, {NULL, 0, 0}};

/* Before opset 7, is_test=0 asked for training: statistics of the batch. */
static smelt_status batchnorm_check_is_test(smelt_ctx *ctx, const gr_graph *g,
                                            const gr_node *node)
{
    bool is_test;
    if (g->opset >= 7) return SMELT_OK;
    SMELT_TRY(op_attr_bool(ctx, node, "is_test", true, &is_test));
    if (!is_test)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                       "attribute 'is_test' is 0 (training mode), which is not supported");
    return SMELT_OK;
}

static smelt_status batchnorm_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_batchnorm_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(op_attr_float(ctx, node, "epsilon", 1e-5f, &a->epsilon));
    SMELT_TRY(op_attr_float(ctx, node, "momentum", 0.9f, &a->momentum));
    SMELT_TRY(batchnorm_check_is_test(ctx, g, node));
    bool extra_outputs = false;
    for (int i = 1; i < node->n_outputs; i++) extra_outputs |= has_output(node, i);
    if (g->opset < 9) {
        bool spatial;
        SMELT_TRY(op_attr_bool(ctx, node, "spatial", true, &spatial));
        a->per_activation = !spatial;
    }
    if (g->opset < 14) {
        /* Older forms signal training through their extra outputs. */
        if (extra_outputs)
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "training outputs (mean, var, saved_mean, saved_var) of opset %lld "
                           "are not supported; only the inference output Y",
                           (long long)g->opset);
        return SMELT_OK;
    }
    if (node->n_outputs > 3)
        return op_errf(ctx, node, SMELT_ERR_MODEL, "has %d outputs; opset %lld allows at most 3",
                       node->n_outputs, (long long)g->opset);
    SMELT_TRY(op_attr_bool(ctx, node, "training_mode", false, &a->training));
    if (!a->training && extra_outputs)
        return op_errf(ctx, node, SMELT_ERR_MODEL,
                       "outputs running_mean and running_var exist only with training_mode=1");
    return SMELT_OK;
}

/* The old spatial=0 form takes parameters shaped like one sample: (C, D1..Dn). */
static smelt_status check_per_activation_param(smelt_ctx *ctx, const gr_node *n,
                                               const smelt_tensor *p, int i,
                                               const smelt_tensor *x)
{
    SMELT_TRY(check_float_input(ctx, n, p, i));
    bool ok = p->rank == x->rank - 1;
    for (int d = 0; ok && d < p->rank; d++) ok = !dims_conflict(p->dims[d], x->dims[d + 1]);
    if (ok) return SMELT_OK;
    char pb[160], xb[160];
    return op_errf(ctx, n, SMELT_ERR_SHAPE,
                   "input '%s' has shape %s, expected (C) or the shape of one sample of '%s' "
                   "%s (spatial=0)",
                   input_name(n, i), dims_str(p, pb, sizeof pb), input_name(n, 0),
                   dims_str(x, xb, sizeof xb));
}

static smelt_status batchnorm_infer(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_batchnorm_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    SMELT_TRY(check_float_input(ctx, node, x, 0));
    SMELT_TRY(check_rank_at_least(ctx, node, x, 2, "N x C x D1 x ..."));
    for (int i = 1; i < 5; i++) {
        const smelt_tensor *p = in[i];
        if (a->per_activation && p->rank != 1)
            SMELT_TRY(check_per_activation_param(ctx, node, p, i, x));
        else
            SMELT_TRY(check_channel_param(ctx, node, p, i, x->dims[1]));
    }
    op_copy_shape(&out[0], x);
    for (int i = 1; i < node->n_outputs && i < 3; i++) {
        op_copy_shape(&out[i], in[i + 2]); /* running mean/var: like the given ones */
        out[i].rank = 1;
        out[i].dims[0] = x->dims[1];
    }
    return SMELT_OK;
}

/* Mean and (population) variance per channel over all axes but 1. */
static void batch_stats(const smelt_tensor *x, int64_t n, int64_t c, int64_t inner, double *mean,
                        double *var)
{
    int64_t count = n * inner;
    for (int64_t ci = 0; ci < c; ci++) {
        double sum = 0, sq = 0;
        for (int64_t ni = 0; ni < n; ni++)
            for (int64_t s = 0; s < inner; s++) sum += op_get_f64(x, (ni * c + ci) * inner + s);
        double m = count > 0 ? sum / (double)count : 0.0;
        for (int64_t ni = 0; ni < n; ni++)
            for (int64_t s = 0; s < inner; s++) {
                double d = op_get_f64(x, (ni * c + ci) * inner + s) - m;
                sq += d * d;
            }
        mean[ci] = m;
        var[ci] = count > 0 ? sq / (double)count : 0.0;
    }
}

static void write_running_stat(smelt_tensor *out, const smelt_tensor *given, const double *batch,
                               double momentum, int64_t c)
{
    if (!out->data) return;
    for (int64_t ci = 0; ci < c; ci++)
        op_set_f64(out, ci, op_get_f64(given, ci) * momentum + batch[ci] * (1.0 - momentum));
}

/* y = (x - mean[k]) * gain[k] + bias[k], k = channel or channel*inner + s. */
static void batchnorm_apply(const smelt_tensor *x, smelt_tensor *y, int64_t n, int64_t c,
                            int64_t inner, bool per_act, const double *mean, const double *gain,
                            const double *bias)
{
    if (x->dtype == SMELT_DT_FLOAT32 && !per_act) {
        const float *xs = x->data;
        float *ys = y->data;
        for (int64_t ni = 0; ni < n; ni++)
            for (int64_t ci = 0; ci < c; ci++) {
                const float *xp = xs + (ni * c + ci) * inner;
                float *yp = ys + (ni * c + ci) * inner;
                double m = mean[ci], g = gain[ci], b = bias[ci];
                for (int64_t s = 0; s < inner; s++) yp[s] = (float)((xp[s] - m) * g + b);
            }
        return;
    }
    for (int64_t ni = 0; ni < n; ni++)
        for (int64_t ci = 0; ci < c; ci++)
            for (int64_t s = 0; s < inner; s++) {
                int64_t i = (ni * c + ci) * inner + s, k = per_act ? ci * inner + s : ci;
                op_set_f64(y, i, (op_get_f64(x, i) - mean[k]) * gain[k] + bias[k]);
            }
}

static smelt_status batchnorm_eval(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_batchnorm_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int64_t n = x->dims[0], c = x->dims[1], inner = dims_product(x->dims, 2, x->rank);
    int64_t p = op_numel(in[1]);
    bool per_act = a->per_activation && p == c * inner && inner != 1;
    for (int i = 1; i < 5; i++)
        if (op_numel(in[i]) != (per_act ? c * inner : c))
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "input '%s' has %lld elements, expected %lld", input_name(node, i),
                           (long long)op_numel(in[i]), (long long)(per_act ? c * inner : c));
    double *buf = f64_scratch(ctx, node, 4 * p);
    if (!buf) return SMELT_ERR_NOMEM;
    double *gain = buf, *bias = buf + p, *mean = buf + 2 * p, *var = buf + 3 * p;
    load_f64(in[1], gain);
    load_f64(in[2], bias);
    if (a->training) {
        batch_stats(x, n, c, inner, mean, var);
        if (node->n_outputs > 1) write_running_stat(&out[1], in[3], mean, a->momentum, c);
        if (node->n_outputs > 2) write_running_stat(&out[2], in[4], var, a->momentum, c);
    } else {
        load_f64(in[3], mean);
        load_f64(in[4], var);
    }
    for (int64_t k = 0; k < p; k++) gain[k] /= sqrt(var[k] + a->epsilon);
    batchnorm_apply(x, &out[0], n, c, inner, per_act, mean, gain, bias);
    smelt_free(buf);
    return SMELT_OK;
}

/* Inference form: y = (x - mean) * (scale / sqrt(var + eps)) + bias, with the
 * parameters per channel, or per activation in the old spatial=0 form. */
typedef struct batchnorm_te {
    const te_tensor *x, *scale, *bias, *mean, *var;
    param_layout layout;
    smelt_dtype dt;
    double eps;
} batchnorm_te;

static ir_expr *batchnorm_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const batchnorm_te *bn = user;
    int rank = bn->x->n_axes;
    smelt_dtype dt = bn->dt;
    ir_expr *scale = read_param(g, bn->scale, bn->layout, idx, rank, dt);
    ir_expr *bias = read_param(g, bn->bias, bn->layout, idx, rank, dt);
    ir_expr *mean = read_param(g, bn->mean, bn->layout, idx, rank, dt);
    ir_expr *var = read_param(g, bn->var, bn->layout, idx, rank, dt);
    ir_expr *std = call1(g, IR_CALL_SQRT, ir_add(&g->b, var, fconst(g, dt, bn->eps)));
    ir_expr *gain = ir_binary(&g->b, IR_DIV, scale, std);
    ir_expr *dev = ir_sub(&g->b, read_as(g, bn->x, idx, dt), mean);
    return ir_add(&g->b, ir_mul(&g->b, dev, gain), bias);
}

/* Training mode: per-channel batch statistics over N and the spatial dims
 * (population variance, two passes like the reference), then the same
 * normalisation; running stats blend the given ones with the batch's. */
typedef struct bn_stats {
    const te_tensor *x, *mean, *given;
    smelt_dtype dt;
    double count, momentum;
} bn_stats;

static ir_expr *bn_reduce_over_batch(te_graph *g, ir_expr *const *idx, const bn_stats *st,
                                     bool squares)
{
    ir_builder *b = &g->b;
    int rank = st->x->n_axes;
    ir_axis r[SMELT_MAX_RANK];
    ir_expr *xi[SMELT_MAX_RANK];
    int nr = 0;
    for (int d = 0; d < rank; d++) {
        if (d == 1) {
            xi[d] = idx[0];
            continue;
        }
        char name[16];
        snprintf(name, sizeof name, "rb%d", d);
        r[nr] = te_reduce_axis(g, name, st->x->buf->shape[d]);
        xi[d] = ir_var_ref(b, r[nr++].var);
    }
    ir_expr *v = read_as(g, st->x, xi, st->dt);
    if (squares) {
        ir_expr *c[1] = {idx[0]};
        ir_expr *dev = ir_sub(b, v, te_read(g, st->mean, c));
        v = ir_mul(b, dev, dev);
    }
    return te_reduce(g, IR_REDUCE_SUM, v, nr, r);
}

static ir_expr *bn_sum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return bn_reduce_over_batch(g, idx, user, false);
}

static ir_expr *bn_sqsum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return bn_reduce_over_batch(g, idx, user, true);
}

typedef struct bn_div {
    const te_tensor *sum;
    smelt_dtype dt;
    double count;
} bn_div;

static ir_expr *bn_div_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const bn_div *d = user;
    return ir_binary(&g->b, IR_DIV, te_read(g, d->sum, idx), fconst(g, d->dt, d->count));
}

typedef struct bn_blend {
    const te_tensor *given, *batch;
    smelt_dtype dt, out_dt;
    double momentum;
} bn_blend;

static ir_expr *bn_blend_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const bn_blend *bl = user;
    ir_expr *given = ir_mul(&g->b, read_as(g, bl->given, idx, bl->dt), fconst(g, bl->dt, bl->momentum));
    ir_expr *batch = ir_mul(&g->b, te_read(g, bl->batch, idx), fconst(g, bl->dt, 1.0 - bl->momentum));
    return ir_cast(&g->b, bl->out_dt, ir_add(&g->b, given, batch));
}

static te_tensor *bn_stage(op_compute_args *a, const char *name, smelt_dtype dt, te_body_fn fn,
                           void *user, const char *tag)
{
    int64_t c = a->in[0]->buf->shape[1];
    return te_compute(a->te, name, dt, 1, &c, fn, user, tag);
}

static smelt_status batchnorm_training_compute(op_compute_args *a, batchnorm_te *bn,
                                               double momentum)
{
    const te_tensor *x = a->in[0];
    if (bn->layout != PARAM_CHANNEL || x->n_axes < 2)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "training mode with per-activation parameters has no compiled form");
    double count = (double)(op_numel(&a->out_type[0]) / x->buf->shape[1]);
    bn_stats *st = smelt_arena_alloc(&a->te->arena, sizeof *st);
    bn_div *dm = smelt_arena_alloc(&a->te->arena, sizeof *dm), *dv = smelt_arena_alloc(&a->te->arena, sizeof *dv);
    bn_blend *bl = smelt_arena_alloc(&a->te->arena, sizeof *bl * 2);
    if (!st || !dm || !dv || !bl) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
    *st = (bn_stats){x, NULL, NULL, bn->dt, count, momentum};
    te_tensor *sum = bn_stage(a, "batch_sum", bn->dt, bn_sum_body, st, "reduce");
    *dm = (bn_div){sum, bn->dt, count};
    te_tensor *mean = sum ? bn_stage(a, "batch_mean", bn->dt, bn_div_body, dm, NULL) : NULL;
    st->mean = mean;
    te_tensor *sq = mean ? bn_stage(a, "batch_sqsum", bn->dt, bn_sqsum_body, st, "reduce") : NULL;
    *dv = (bn_div){sq, bn->dt, count};
    te_tensor *var = sq ? bn_stage(a, "batch_var", bn->dt, bn_div_body, dv, NULL) : NULL;
    if (!var) return smelt_ctx_status(a->ctx);
    bn->mean = mean;
    bn->var = var;
    a->out[0] = te_compute(a->te, "y", a->out_type[0].dtype, x->n_axes, x->buf->shape,
                           batchnorm_body, bn, "injective");
    const te_tensor *batch[2] = {mean, var};
    for (int k = 0; k < 2; k++) {
        if (a->node->n_outputs <= k + 1 || !a->node->outputs[k + 1]) continue;
        bl[k] = (bn_blend){a->in[3 + k], batch[k], bn->dt, a->out_type[k + 1].dtype, momentum};
        a->out[k + 1] = bn_stage(a, k ? "running_var" : "running_mean", a->out_type[k + 1].dtype,
                                 bn_blend_body, &bl[k], NULL);
        if (!a->out[k + 1]) return smelt_ctx_status(a->ctx);
    }
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

static smelt_status batchnorm_compute(op_compute_args *a)
{
    const op_batchnorm_attrs *at = a->node->op_attrs;
    const te_tensor *x = a->in[0];
    batchnorm_te bn = {x,
                       a->in[1],
                       a->in[2],
                       a->in[3],
                       a->in[4],
                       a->in[1]->n_axes == 1 ? PARAM_CHANNEL : PARAM_TRAILING,
                       compute_dtype(x->buf->dtype),
                       at->epsilon};
    if (at->training) {
        batchnorm_te *held = smelt_arena_alloc(&a->te->arena, sizeof *held);
        if (!held) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
        *held = bn;
        return batchnorm_training_compute(a, held, at->momentum);
    }
    a->out[0] = te_compute(a->te, "y", a->out_type[0].dtype, x->n_axes, x->buf->shape,
                           batchnorm_body, &bn, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_BATCH_NORMALIZATION = {
    .compute = batchnorm_compute,
    .import = batchnorm_import,
    .infer = batchnorm_infer,
    .eval = batchnorm_eval,
    .min_inputs = 5,
    .max_inputs = 5,
    .min_outputs = 1,
    .max_outputs = 5,
};

/* ---- InstanceNormalization ------------------------------------------------------ */

OP_ATTRS(INSTANCE_NORMALIZATION) = {{"epsilon", 0, 0}, {NULL, 0, 0}};

static smelt_status instancenorm_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_instancenorm_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    return op_attr_float(ctx, node, "epsilon", 1e-5f, &a->epsilon);
}

static smelt_status instancenorm_infer(smelt_ctx *ctx, const gr_node *node,
                                       const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    SMELT_TRY(check_float_input(ctx, node, x, 0));
    SMELT_TRY(check_rank_at_least(ctx, node, x, 3, "N x C x D1 x ..."));
    SMELT_TRY(check_channel_param(ctx, node, in[1], 1, x->dims[1]));
    SMELT_TRY(check_channel_param(ctx, node, in[2], 2, x->dims[1]));
    op_copy_shape(&out[0], x);
    return SMELT_OK;
}

/* Normalise row[0..len) in place to zero mean, unit variance; returns the
 * mean and 1/sqrt(var + eps). */
static void standardize(double *row, int64_t len, double eps, double *mean_out, double *inv_out)
{
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < len; j++) sum += row[j];
    double mean = len > 0 ? sum / (double)len : 0.0;
    for (int64_t j = 0; j < len; j++) {
        row[j] -= mean;
        sq += row[j] * row[j];
    }
    double inv = 1.0 / sqrt((len > 0 ? sq / (double)len : 0.0) + eps);
    for (int64_t j = 0; j < len; j++) row[j] *= inv;
    *mean_out = mean;
    *inv_out = inv;
}

static smelt_status instancenorm_eval(smelt_ctx *ctx, const gr_node *node,
                                      const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_instancenorm_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int64_t n = x->dims[0], c = x->dims[1], inner = dims_product(x->dims, 2, x->rank);
    double *xd = f64_scratch(ctx, node, op_numel(x));
    if (!xd) return SMELT_ERR_NOMEM;
    load_f64(x, xd);
    for (int64_t ni = 0; ni < n; ni++)
        for (int64_t ci = 0; ci < c; ci++) {
            double *row = xd + (ni * c + ci) * inner, mean, inv;
            standardize(row, inner, a->epsilon, &mean, &inv);
            double scale = op_get_f64(in[1], ci), bias = op_get_f64(in[2], ci);
            for (int64_t s = 0; s < inner; s++) row[s] = row[s] * scale + bias;
        }
    store_f64(&out[0], xd);
    smelt_free(xd);
    return SMELT_OK;
}

static smelt_status instancenorm_compute(op_compute_args *a)
{
    const op_instancenorm_attrs *at = a->node->op_attrs;
    const te_tensor *x = a->in[0];
    row_stats s = {.x = x,
                   .span = {.lo = 2, .hi = x->n_axes},
                   .dt = compute_dtype(x->buf->dtype),
                   .eps = at->epsilon};
    SMELT_TRY(row_stats_build(a, &s));
    affine_norm an = {&s, a->in[1], a->in[2], PARAM_CHANNEL};
    return affine_norm_output(a, &an);
}

const op_def op_def_INSTANCE_NORMALIZATION = {
    .compute = instancenorm_compute,
    .import = instancenorm_import,
    .infer = instancenorm_infer,
    .eval = instancenorm_eval,
    .min_inputs = 3,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- GroupNormalization ------------------------------------------------------------
 * The C channels of X [N, C, D...] form num_groups groups of C/G consecutive
 * channels; each (n, group) is standardised over its channels and spatial
 * elements, then scaled per channel (opset 21; per group before, in opsets
 * 18-20).  A group is not an axis of X, so the statistics are stages of shape
 * [N, G] reduced over (channel in group, spatial...). */

OP_ATTRS(GROUP_NORMALIZATION) = {
    {"epsilon", 0, 0}, {"num_groups", 0, 0}, {"stash_type", 21, 0}, {NULL, 0, 0}};

static smelt_status groupnorm_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_groupnorm_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    int64_t stash;
    SMELT_TRY(op_attr_float(ctx, node, "epsilon", 1e-5f, &a->epsilon));
    if (!gr_node_attr(node, "num_groups"))
        return op_errf(ctx, node, SMELT_ERR_ATTR, "missing required attribute 'num_groups'");
    SMELT_TRY(op_attr_int(ctx, node, "num_groups", 1, &a->num_groups));
    if (a->num_groups < 1)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'num_groups' is %lld, must be >= 1",
                       (long long)a->num_groups);
    /* stash_type: the precision of the statistics; smelt computes them in
     * float32 (float64 for float64 inputs), at least as precise as any */
    SMELT_TRY(op_attr_int(ctx, node, "stash_type", SMELT_DT_FLOAT32, &stash));
    if (stash != SMELT_DT_FLOAT32 && stash != SMELT_DT_FLOAT64 && stash != SMELT_DT_FLOAT16 &&
        stash != SMELT_DT_BFLOAT16)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'stash_type' is %lld, not a floating-point type",
                       (long long)stash);
    a->per_group_params = g->opset < 21;
    return SMELT_OK;
}

static smelt_status groupnorm_infer(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_groupnorm_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    SMELT_TRY(check_float_input(ctx, node, x, 0));
    SMELT_TRY(check_rank_at_least(ctx, node, x, 3, "N x C x D1 x ..."));
    int64_t c = x->dims[1], n_params = a->per_group_params ? a->num_groups : c;
    if (c >= 0 && c % a->num_groups != 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "the channels of X (%lld) are not a multiple of num_groups (%lld)",
                       (long long)c, (long long)a->num_groups);
    for (int i = 1; i <= 2; i++) {
        SMELT_TRY(check_float_input(ctx, node, in[i], i));
        if (in[i]->rank != 1 || dims_conflict(in[i]->dims[0], n_params))
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "input '%s' must be 1-D with %lld elements (one per %s)",
                           input_name(node, i), (long long)n_params,
                           a->per_group_params ? "group" : "channel");
    }
    op_copy_shape(&out[0], x);
    return SMELT_OK;
}

static smelt_status groupnorm_eval(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_groupnorm_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int64_t n = x->dims[0], c = x->dims[1], g = a->num_groups, cg = c / g;
    int64_t inner = dims_product(x->dims, 2, x->rank);
    double *xd = f64_scratch(ctx, node, op_numel(x));
    if (!xd) return SMELT_ERR_NOMEM;
    load_f64(x, xd);
    for (int64_t ni = 0; ni < n; ni++)
        for (int64_t gi = 0; gi < g; gi++) {
            double *row = xd + (ni * c + gi * cg) * inner, mean, inv;
            standardize(row, cg * inner, a->epsilon, &mean, &inv);
            for (int64_t k = 0; k < cg; k++) {
                int64_t p = a->per_group_params ? gi : gi * cg + k;
                double scale = op_get_f64(in[1], p), bias = op_get_f64(in[2], p);
                for (int64_t s = 0; s < inner; s++)
                    row[k * inner + s] = row[k * inner + s] * scale + bias;
            }
        }
    store_f64(&out[0], xd);
    smelt_free(xd);
    return SMELT_OK;
}

typedef struct groupnorm_te {
    const te_tensor *x, *scale, *bias;
    int64_t cg; /* channels per group */
    bool per_group;
    smelt_dtype dt;
    double count, eps;
    te_tensor *sum, *mean, *sq_sum, *inv_std;
    bool squares; /* the reduction being built: squared deviations */
} groupnorm_te;

/* x at [n, g * cg + c', s...] in the compute dtype; c' and s are reduce axes */
static ir_expr *groupnorm_reduce_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const groupnorm_te *s = user;
    ir_builder *b = &g->b;
    int rank = s->x->n_axes;
    ir_axis axes[SMELT_MAX_RANK];
    ir_expr *xi[SMELT_MAX_RANK];
    axes[0] = te_reduce_axis(g, "r0", s->cg);
    xi[0] = idx[0];
    xi[1] = ir_add(b, ir_mul(b, idx[1], ir_int(b, s->cg)), ir_var_ref(b, axes[0].var));
    for (int d = 2; d < rank; d++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", d - 1);
        axes[d - 1] = te_reduce_axis(g, name, s->x->buf->shape[d]);
        xi[d] = ir_var_ref(b, axes[d - 1].var);
    }
    ir_expr *v = ir_cast(b, s->dt, te_read(g, s->x, xi));
    if (s->squares) {
        ir_expr *dev = ir_sub(b, v, te_read(g, s->mean, idx));
        v = ir_mul(b, dev, dev);
    }
    return te_reduce(g, IR_REDUCE_SUM, v, rank - 1, axes);
}

static ir_expr *groupnorm_mean_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const groupnorm_te *s = user;
    return ir_binary(&g->b, IR_DIV, te_read(g, s->sum, idx), fconst(g, s->dt, s->count));
}

static ir_expr *groupnorm_inv_std_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const groupnorm_te *s = user;
    ir_expr *var = ir_binary(&g->b, IR_DIV, te_read(g, s->sq_sum, idx), fconst(g, s->dt, s->count));
    ir_expr *std = call1(g, IR_CALL_SQRT, ir_add(&g->b, var, fconst(g, s->dt, s->eps)));
    return ir_binary(&g->b, IR_DIV, fconst(g, s->dt, 1.0), std);
}

static ir_expr *groupnorm_out_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const groupnorm_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *gi[2] = {idx[0], ir_binary(b, IR_FLOORDIV, idx[1], ir_int(b, s->cg))};
    ir_expr *pi[1] = {s->per_group ? gi[1] : idx[1]};
    ir_expr *dev = ir_sub(b, read_as(g, s->x, idx, s->dt), te_read(g, s->mean, gi));
    ir_expr *y = ir_mul(b, dev, te_read(g, s->inv_std, gi));
    y = ir_mul(b, y, read_as(g, s->scale, pi, s->dt));
    return ir_add(b, y, read_as(g, s->bias, pi, s->dt));
}

static smelt_status groupnorm_compute(op_compute_args *a)
{
    const op_groupnorm_attrs *at = a->node->op_attrs;
    const te_tensor *x = a->in[0];
    te_graph *g = a->te;
    int64_t groups = at->num_groups, stat_shape[2] = {x->buf->shape[0], groups};
    groupnorm_te s = {.x = x, .scale = a->in[1], .bias = a->in[2],
                      .cg = x->buf->shape[1] / groups, .per_group = at->per_group_params,
                      .dt = compute_dtype(x->buf->dtype), .eps = at->epsilon};
    int64_t len = s.cg * dims_product(x->buf->shape, 2, x->n_axes);
    s.count = len > 0 ? (double)len : 1.0;
    if (!(s.sum = te_compute(g, "x_sum", s.dt, 2, stat_shape, groupnorm_reduce_body, &s,
                             "reduce")))
        return smelt_ctx_status(a->ctx);
    if (!(s.mean = te_compute(g, "x_mean", s.dt, 2, stat_shape, groupnorm_mean_body, &s,
                              "injective")))
        return smelt_ctx_status(a->ctx);
    s.squares = true;
    if (!(s.sq_sum = te_compute(g, "x_sq_sum", s.dt, 2, stat_shape, groupnorm_reduce_body, &s,
                                "reduce")))
        return smelt_ctx_status(a->ctx);
    if (!(s.inv_std = te_compute(g, "x_inv_std", s.dt, 2, stat_shape, groupnorm_inv_std_body,
                                 &s, "injective")))
        return smelt_ctx_status(a->ctx);
    a->out[0] = te_compute(g, "y", a->out_type[0].dtype, x->n_axes, x->buf->shape,
                           groupnorm_out_body, &s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_GROUP_NORMALIZATION = {
    .compute = groupnorm_compute,
    .import = groupnorm_import,
    .infer = groupnorm_infer,
    .eval = groupnorm_eval,
    .min_inputs = 3,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- MeanVarianceNormalization ----------------------------------------------------
 * y = (x - mean) / (sqrt(var) + 1e-9) over the dims in 'axes' (default 0, 2,
 * 3), as the op's ONNX function body; the variance is computed as the mean
 * squared deviation (the body's E[x^2] - E[x]^2 can go negative by rounding). */

OP_ATTRS(MEAN_VARIANCE_NORMALIZATION) = {{"axes", 0, 0}, {NULL, 0, 0}};

#define MVN_EPSILON 1e-9

static smelt_status mvn_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_mvn_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    const gr_attr *at = gr_node_attr(node, "axes");
    if (!at) {
        a->n_axes = 3;
        a->axes[0] = 0, a->axes[1] = 2, a->axes[2] = 3;
        return SMELT_OK;
    }
    if (at->type != GR_ATTR_INTS || at->n > SMELT_MAX_RANK)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'axes' must be a list of at most %d "
                       "ints", SMELT_MAX_RANK);
    a->n_axes = at->n;
    for (int i = 0; i < at->n; i++) a->axes[i] = at->ints[i];
    return SMELT_OK;
}

/* The bit mask of the normalised dims of a rank-`rank` input. */
static smelt_status mvn_mask(smelt_ctx *ctx, const gr_node *node, int rank, unsigned *mask)
{
    const op_mvn_attrs *a = node->op_attrs;
    *mask = 0;
    for (int i = 0; i < a->n_axes; i++) {
        int d;
        SMELT_TRY(op_norm_axis(ctx, node, a->axes[i], rank, &d));
        if (*mask & (1u << d))
            return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'axes' repeats axis %d", d);
        *mask |= 1u << d;
    }
    return SMELT_OK;
}

static smelt_status mvn_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    unsigned mask;
    SMELT_TRY(check_float_input(ctx, node, in[0], 0));
    SMELT_TRY(mvn_mask(ctx, node, in[0]->rank, &mask));
    op_copy_shape(&out[0], in[0]);
    return SMELT_OK;
}

static smelt_status mvn_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    unsigned mask;
    SMELT_TRY(mvn_mask(ctx, node, x->rank, &mask));
    int64_t n = op_numel(x), st[SMELT_MAX_RANK], rows = 1, len = 1;
    op_strides(x, st);
    /* row index of an element: its multi-index with the masked dims dropped */
    int64_t rdims[SMELT_MAX_RANK], rst[SMELT_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        rdims[d] = mask & (1u << d) ? 1 : x->dims[d];
        if (mask & (1u << d)) len *= x->dims[d];
        else rows *= x->dims[d];
    }
    for (int d = x->rank - 1, acc = 1; d >= 0; d--) {
        rst[d] = acc;
        acc *= (int)rdims[d];
    }
    double *xd = f64_scratch(ctx, node, n), *sum = f64_scratch(ctx, node, rows > 0 ? rows : 1);
    double *sq = f64_scratch(ctx, node, rows > 0 ? rows : 1);
    if (!xd || !sum || !sq) {
        smelt_free(xd), smelt_free(sum), smelt_free(sq);
        return SMELT_ERR_NOMEM;
    }
    load_f64(x, xd);
    memset(sum, 0, sizeof *sum * (size_t)(rows > 0 ? rows : 1));
    memset(sq, 0, sizeof *sq * (size_t)(rows > 0 ? rows : 1));
    int64_t idx[SMELT_MAX_RANK] = {0};
    for (int pass = 0; pass < 3; pass++) {
        memset(idx, 0, sizeof idx);
        for (int64_t i = 0; i < n; i++) {
            int64_t r = 0;
            for (int d = 0; d < x->rank; d++)
                if (!(mask & (1u << d))) r += idx[d] * rst[d];
            double m = pass ? sum[r] / (double)len : 0.0;
            if (pass == 0) sum[r] += xd[i];
            else if (pass == 1) sq[r] += (xd[i] - m) * (xd[i] - m);
            else xd[i] = (xd[i] - m) / (sqrt(sq[r] / (double)len) + MVN_EPSILON);
            op_next_index(idx, x->dims, x->rank);
        }
    }
    (void)st;
    store_f64(&out[0], xd);
    smelt_free(xd), smelt_free(sum), smelt_free(sq);
    return SMELT_OK;
}

static ir_expr *mvn_out_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const row_stats *s = user;
    ir_builder *b = &g->b;
    ir_expr *dev = ir_sub(b, read_as(g, s->x, idx, s->dt), read_row(g, s->mean, s->span, idx));
    ir_expr *var = ir_binary(b, IR_DIV, read_row(g, s->sq_sum, s->span, idx),
                             fconst(g, s->dt, s->count));
    ir_expr *den = ir_add(b, call1(g, IR_CALL_SQRT, var), fconst(g, s->dt, MVN_EPSILON));
    return ir_binary(b, IR_DIV, dev, den);
}

static smelt_status mvn_compute(op_compute_args *a)
{
    const te_tensor *x = a->in[0];
    unsigned mask;
    SMELT_TRY(mvn_mask(a->ctx, a->node, x->n_axes, &mask));
    row_stats s = {.x = x, .span = {.mask = mask}, .dt = compute_dtype(x->buf->dtype),
                   .eps = 0.0};
    SMELT_TRY(row_stats_build(a, &s));
    a->out[0] = te_compute(a->te, "y", a->out_type[0].dtype, x->n_axes, x->buf->shape,
                           mvn_out_body, &s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_MEAN_VARIANCE_NORMALIZATION = {
    .compute = mvn_compute,
    .import = mvn_import,
    .infer = mvn_infer,
    .eval = mvn_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- LpNormalization ----------------------------------------------------------------
 * y = x / ||x||_p along one axis, p 1 or 2; where the norm is 0, y is 0 (as
 * ONNX's reference and node tests have it, not 0 / 0). */

OP_ATTRS(LP_NORMALIZATION) = {{"axis", 0, 0}, {"p", 0, 0}, {NULL, 0, 0}};

static smelt_status lpnorm_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_lpnorm_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(op_attr_int(ctx, node, "axis", -1, &a->axis));
    SMELT_TRY(op_attr_int(ctx, node, "p", 2, &a->p));
    if (a->p != 1 && a->p != 2)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'p' is %lld, expected 1 or 2",
                       (long long)a->p);
    return SMELT_OK;
}

static smelt_status lpnorm_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_lpnorm_attrs *a = node->op_attrs;
    int axis;
    SMELT_TRY(check_float_input(ctx, node, in[0], 0));
    SMELT_TRY(op_norm_axis(ctx, node, a->axis, in[0]->rank, &axis));
    op_copy_shape(&out[0], in[0]);
    return SMELT_OK;
}

static smelt_status lpnorm_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_lpnorm_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &axis));
    int64_t outer = dims_product(x->dims, 0, axis), len = x->dims[axis];
    int64_t inner = dims_product(x->dims, axis + 1, x->rank);
    double *xd = f64_scratch(ctx, node, op_numel(x));
    if (!xd) return SMELT_ERR_NOMEM;
    load_f64(x, xd);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double *row = xd + o * len * inner + i, norm = 0;
            for (int64_t k = 0; k < len; k++)
                norm += a->p == 1 ? fabs(row[k * inner]) : row[k * inner] * row[k * inner];
            if (a->p == 2) norm = sqrt(norm);
            for (int64_t k = 0; k < len; k++) row[k * inner] = norm == 0 ? 0 : row[k * inner] / norm;
        }
    store_f64(&out[0], xd);
    smelt_free(xd);
    return SMELT_OK;
}

typedef struct lpnorm_te {
    const te_tensor *x, *norm;
    norm_span span;
    int64_t p;
    smelt_dtype dt;
} lpnorm_te;

static ir_expr *lpnorm_elem(te_graph *g, ir_expr *const *idx, void *user)
{
    const lpnorm_te *s = user;
    ir_expr *v = read_as(g, s->x, idx, s->dt);
    return s->p == 1 ? call1(g, IR_CALL_ABS, v) : ir_mul(&g->b, v, v);
}

static ir_expr *lpnorm_out_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const lpnorm_te *s = user;
    ir_expr *n = read_row(g, s->norm, s->span, idx);
    if (s->p == 2) n = call1(g, IR_CALL_SQRT, n);
    ir_expr *zero = fconst(g, s->dt, 0.0);
    return ir_select(&g->b, ir_binary(&g->b, IR_EQ, n, zero), zero,
                     ir_binary(&g->b, IR_DIV, read_as(g, s->x, idx, s->dt), n));
}

static smelt_status lpnorm_compute(op_compute_args *a)
{
    const op_lpnorm_attrs *at = a->node->op_attrs;
    const te_tensor *x = a->in[0];
    int axis;
    SMELT_TRY(op_norm_axis(a->ctx, a->node, at->axis, x->n_axes, &axis));
    lpnorm_te s = {.x = x, .span = {.lo = axis, .hi = axis + 1}, .p = at->p,
                   .dt = compute_dtype(x->buf->dtype)};
    row_reduce r = {x, s.span, IR_REDUCE_SUM, s.dt, lpnorm_elem, &s};
    if (!(s.norm = row_reduce_stage(a->te, "x_norm", &r))) return smelt_ctx_status(a->ctx);
    a->out[0] = te_compute(a->te, "y", a->out_type[0].dtype, x->n_axes, x->buf->shape,
                           lpnorm_out_body, &s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_LP_NORMALIZATION = {
    .compute = lpnorm_compute,
    .import = lpnorm_import,
    .infer = lpnorm_infer,
    .eval = lpnorm_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- LayerNormalization --------------------------------------------------------- */

OP_ATTRS(LAYER_NORMALIZATION) = {{"axis", 0, 0}, {"epsilon", 0, 0}, {"stash_type", 0, 0}, {NULL, 0, 0}};

static smelt_status layernorm_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_layernorm_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    int64_t stash;
    SMELT_TRY(op_attr_int(ctx, node, "axis", -1, &a->axis));
    SMELT_TRY(op_attr_float(ctx, node, "epsilon", 1e-5f, &a->epsilon));
    SMELT_TRY(op_attr_int(ctx, node, "stash_type", SMELT_DT_FLOAT32, &stash));
    if (stash != SMELT_DT_FLOAT32 && stash != SMELT_DT_FLOAT64 && stash != SMELT_DT_FLOAT16 &&
        stash != SMELT_DT_BFLOAT16)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'stash_type' is %lld, not a floating-point type (expected "
                       "1 = float, 16 = bfloat16, ...)",
                       (long long)stash);
    a->stash_type = (smelt_dtype)stash;
    return SMELT_OK;
}

/* Scale and B broadcast unidirectionally to X.dims[axis:]. */
static smelt_status check_layernorm_param(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *p,
                                          int i, const smelt_tensor *x, int axis)
{
    SMELT_TRY(check_float_input(ctx, n, p, i));
    int norm_rank = x->rank - axis;
    bool ok = p->rank <= norm_rank;
    for (int d = 0; ok && d < p->rank; d++) {
        int64_t pd = p->dims[d], xd = x->dims[x->rank - p->rank + d];
        ok = pd == 1 || !dims_conflict(pd, xd);
    }
    if (ok) return SMELT_OK;
    char pb[160], xb[160];
    smelt_tensor norm = {.rank = norm_rank};
    memcpy(norm.dims, x->dims + axis, sizeof(int64_t) * (size_t)norm_rank);
    return op_errf(ctx, n, SMELT_ERR_SHAPE,
                   "input '%s' of shape %s does not broadcast to the normalized shape %s",
                   input_name(n, i), dims_str(p, pb, sizeof pb), dims_str(&norm, xb, sizeof xb));
}

static smelt_status layernorm_infer(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_layernorm_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int axis;
    SMELT_TRY(check_float_input(ctx, node, x, 0));
    SMELT_TRY(check_rank_at_least(ctx, node, x, 1, "the normalized axes must exist"));
    SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &axis));
    SMELT_TRY(check_layernorm_param(ctx, node, in[1], 1, x, axis));
    const smelt_tensor *bias = op_input(node, in, 2);
    if (bias) SMELT_TRY(check_layernorm_param(ctx, node, bias, 2, x, axis));
    op_copy_shape(&out[0], x);
    for (int i = 1; i < node->n_outputs && i < 3; i++) {
        op_copy_shape(&out[i], x);
        out[i].dtype = a->stash_type;
        for (int d = axis; d < x->rank; d++) out[i].dims[d] = 1;
    }
    return SMELT_OK;
}

/* The values of p broadcast to the normalized shape X.dims[axis:], row-major. */
static void expand_param(const smelt_tensor *p, const smelt_tensor *x, int axis, double *dst)
{
    smelt_tensor norm = {.rank = x->rank - axis};
    memcpy(norm.dims, x->dims + axis, sizeof(int64_t) * (size_t)norm.rank);
    int64_t idx[SMELT_MAX_RANK] = {0}, count = op_numel(&norm);
    for (int64_t j = 0; j < count; j++) {
        dst[j] = op_get_f64(p, op_broadcast_offset(p, &norm, idx));
        op_next_index(idx, norm.dims, norm.rank);
    }
}

static smelt_status layernorm_eval(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_layernorm_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *bias = op_input(node, in, 2);
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &axis));
    SMELT_TRY(check_layernorm_param(ctx, node, in[1], 1, x, axis));
    if (bias) SMELT_TRY(check_layernorm_param(ctx, node, bias, 2, x, axis));
    int64_t rows = dims_product(x->dims, 0, axis), cols = dims_product(x->dims, axis, x->rank);
    double *xd = f64_scratch(ctx, node, op_numel(x)), *wb = f64_scratch(ctx, node, 2 * cols);
    if (!xd || !wb) {
        smelt_free(xd);
        smelt_free(wb);
        return SMELT_ERR_NOMEM;
    }
    double *w = wb, *b = wb + cols;
    load_f64(x, xd);
    expand_param(in[1], x, axis, w);
    if (bias) expand_param(bias, x, axis, b);
    else memset(b, 0, (size_t)cols * sizeof *b);
    smelt_tensor *mean_out = node->n_outputs > 1 && out[1].data ? &out[1] : NULL;
    smelt_tensor *inv_out = node->n_outputs > 2 && out[2].data ? &out[2] : NULL;
    for (int64_t r = 0; r < rows; r++) {
        double *row = xd + r * cols, mean, inv;
        standardize(row, cols, a->epsilon, &mean, &inv);
        for (int64_t j = 0; j < cols; j++) row[j] = row[j] * w[j] + b[j];
        if (mean_out) op_set_f64(mean_out, r, mean);
        if (inv_out) op_set_f64(inv_out, r, inv);
    }
    store_f64(&out[0], xd);
    smelt_free(xd);
    smelt_free(wb);
    return SMELT_OK;
}

/* Statistics in the stash type's precision (at least float32). */
static smelt_status layernorm_compute(op_compute_args *a)
{
    const op_layernorm_attrs *at = a->node->op_attrs;
    const te_tensor *x = a->in[0];
    int axis;
    SMELT_TRY(op_norm_axis(a->ctx, a->node, at->axis, x->n_axes, &axis));
    bool wide = x->buf->dtype == SMELT_DT_FLOAT64 || at->stash_type == SMELT_DT_FLOAT64;
    row_stats s = {.x = x,
                   .span = {.lo = axis, .hi = x->n_axes},
                   .dt = wide ? SMELT_DT_FLOAT64 : SMELT_DT_FLOAT32,
                   .eps = at->epsilon};
    SMELT_TRY(row_stats_build(a, &s));
    const te_tensor *bias = a->node->n_inputs > 2 ? a->in[2] : NULL;
    affine_norm an = {&s, a->in[1], bias, PARAM_TRAILING};
    SMELT_TRY(affine_norm_output(a, &an));
    SMELT_TRY(stats_output(a, 1, "mean", s.mean));
    return stats_output(a, 2, "inv_std_dev", s.inv_std);
}

const op_def op_def_LAYER_NORMALIZATION = {
    .compute = layernorm_compute,
    .import = layernorm_import,
    .infer = layernorm_infer,
    .eval = layernorm_eval,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 3,
};

/* ---- RMSNormalization ----------------------------------------------------------------
 * y = x / sqrt(mean(x^2 over X.dims[axis:]) + epsilon) * scale (opset 23),
 * the statistic in the stash type's precision (at least float32). */

OP_ATTRS(RMS_NORMALIZATION) = {{"axis", 0, 0}, {"epsilon", 0, 0}, {"stash_type", 0, 0}, {NULL, 0, 0}};

static smelt_status rmsnorm_infer(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_layernorm_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int axis;
    SMELT_TRY(check_float_input(ctx, node, x, 0));
    SMELT_TRY(check_rank_at_least(ctx, node, x, 1, "the normalized axes must exist"));
    SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &axis));
    SMELT_TRY(check_layernorm_param(ctx, node, in[1], 1, x, axis));
    op_copy_shape(&out[0], x);
    return SMELT_OK;
}

static smelt_status rmsnorm_eval(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_layernorm_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &axis));
    int64_t rows = dims_product(x->dims, 0, axis), cols = dims_product(x->dims, axis, x->rank);
    double *xd = f64_scratch(ctx, node, op_numel(x)), *w = f64_scratch(ctx, node, cols);
    if (!xd || !w) {
        smelt_free(xd);
        smelt_free(w);
        return SMELT_ERR_NOMEM;
    }
    load_f64(x, xd);
    expand_param(in[1], x, axis, w);
    for (int64_t r = 0; r < rows; r++) {
        double *row = xd + r * cols, sq = 0;
        for (int64_t j = 0; j < cols; j++) sq += row[j] * row[j];
        double inv = 1.0 / sqrt((cols > 0 ? sq / (double)cols : 0.0) + a->epsilon);
        for (int64_t j = 0; j < cols; j++) row[j] = row[j] * inv * w[j];
    }
    store_f64(&out[0], xd);
    smelt_free(xd);
    smelt_free(w);
    return SMELT_OK;
}

typedef struct rmsnorm_te {
    const te_tensor *x, *scale, *sq_sum;
    norm_span span;
    smelt_dtype dt;
    double count, eps;
} rmsnorm_te;

static ir_expr *rmsnorm_sq_elem(te_graph *g, ir_expr *const *idx, void *user)
{
    const rmsnorm_te *s = user;
    ir_expr *v = read_as(g, s->x, idx, s->dt);
    return ir_mul(&g->b, v, v);
}

static ir_expr *rmsnorm_out_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const rmsnorm_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *ms = ir_binary(b, IR_DIV, read_row(g, s->sq_sum, s->span, idx),
                            fconst(g, s->dt, s->count));
    ir_expr *rms = call1(g, IR_CALL_SQRT, ir_add(b, ms, fconst(g, s->dt, s->eps)));
    ir_expr *y = ir_binary(b, IR_DIV, read_as(g, s->x, idx, s->dt), rms);
    return ir_mul(b, y, read_param(g, s->scale, PARAM_TRAILING, idx, s->x->n_axes, s->dt));
}

static smelt_status rmsnorm_compute(op_compute_args *a)
{
    const op_layernorm_attrs *at = a->node->op_attrs;
    const te_tensor *x = a->in[0];
    int axis;
    SMELT_TRY(op_norm_axis(a->ctx, a->node, at->axis, x->n_axes, &axis));
    bool wide = x->buf->dtype == SMELT_DT_FLOAT64 || at->stash_type == SMELT_DT_FLOAT64;
    rmsnorm_te s = {.x = x, .scale = a->in[1], .span = {.lo = axis, .hi = x->n_axes},
                    .dt = wide ? SMELT_DT_FLOAT64 : SMELT_DT_FLOAT32, .eps = at->epsilon};
    int64_t len = row_length(x, s.span);
    s.count = len > 0 ? (double)len : 1.0;
    row_reduce r = {x, s.span, IR_REDUCE_SUM, s.dt, rmsnorm_sq_elem, &s};
    if (!(s.sq_sum = row_reduce_stage(a->te, "x_sq_sum", &r))) return smelt_ctx_status(a->ctx);
    a->out[0] = te_compute(a->te, "y", a->out_type[0].dtype, x->n_axes, x->buf->shape,
                           rmsnorm_out_body, &s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_RMS_NORMALIZATION = {
    .compute = rmsnorm_compute,
    .import = layernorm_import,
    .infer = rmsnorm_infer,
    .eval = rmsnorm_eval,
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- Softmax, LogSoftmax ---------------------------------------------------------- */

OP_ATTRS(SOFTMAX) = {{"axis", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(LOG_SOFTMAX) = {{"axis", 0, 0}, {NULL, 0, 0}};

static smelt_status softmax_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_softmax_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    a->coerce_2d = g->opset < 13;
    return op_attr_int(ctx, node, "axis", a->coerce_2d ? 1 : -1, &a->axis);
}

/* The axis in [0, rank); in the 2-D form also rank itself (nothing to the right). */
static smelt_status softmax_axis(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                 int *axis)
{
    const op_softmax_attrs *a = node->op_attrs;
    if (a->coerce_2d && (a->axis == x->rank || (x->rank == 0 && a->axis == -1))) {
        *axis = x->rank;
        return SMELT_OK;
    }
    if (x->rank == 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' is a scalar; expected rank >= 1",
                       input_name(node, 0));
    return op_norm_axis(ctx, node, a->axis, x->rank, axis);
}

static smelt_status softmax_infer(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    int axis;
    SMELT_TRY(check_float_input(ctx, node, in[0], 0));
    SMELT_TRY(softmax_axis(ctx, node, in[0], &axis));
    op_copy_shape(&out[0], in[0]);
    return SMELT_OK;
}

/* Softmax of the n values x[0], x[stride], ...; exp(x - max) / sum for stability. */
static void softmax_line(double *x, int64_t n, int64_t stride, bool log_form)
{
    double max = -INFINITY, sum = 0;
    for (int64_t k = 0; k < n; k++)
        if (x[k * stride] > max) max = x[k * stride];
    for (int64_t k = 0; k < n; k++) {
        double e = exp(x[k * stride] - max);
        sum += e;
        if (!log_form) x[k * stride] = e;
    }
    double log_sum = log(sum);
    for (int64_t k = 0; k < n; k++) {
        double *v = &x[k * stride];
        *v = log_form ? *v - max - log_sum : *v / sum;
    }
}

static smelt_status softmax_common_eval(smelt_ctx *ctx, const gr_node *node,
                                        const smelt_tensor *x, smelt_tensor *y, bool log_form)
{
    const op_softmax_attrs *a = node->op_attrs;
    int axis;
    SMELT_TRY(softmax_axis(ctx, node, x, &axis));
    int64_t outer = dims_product(x->dims, 0, axis), n, inner;
    if (a->coerce_2d) {
        n = dims_product(x->dims, axis, x->rank);
        inner = 1;
    } else {
        n = x->dims[axis];
        inner = dims_product(x->dims, axis + 1, x->rank);
    }
    double *xd = f64_scratch(ctx, node, op_numel(x));
    if (!xd) return SMELT_ERR_NOMEM;
    load_f64(x, xd);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            softmax_line(xd + o * n * inner + i, n, inner, log_form);
    store_f64(y, xd);
    smelt_free(xd);
    return SMELT_OK;
}

static smelt_status softmax_eval(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    return softmax_common_eval(ctx, node, in[0], &out[0], false);
}

static smelt_status log_softmax_eval(smelt_ctx *ctx, const gr_node *node,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    return softmax_common_eval(ctx, node, in[0], &out[0], true);
}

/* Softmax: the row max, e = exp(x - max), the row sum of e, then e / sum;
 * e is a stage of its own, read by the sum and the output, so a schedule
 * can compute each exponential once.  LogSoftmax: the row max, the sum of
 * exp(x - max), then x - max - log(sum).  Rows are the single axis, or dims
 * [axis, rank) in the 2-D form. */
typedef struct softmax_te {
    const te_tensor *x;
    te_tensor *max, *exp, *sum;
    norm_span span;
    smelt_dtype dt;
    bool log_form;
} softmax_te;

static ir_expr *softmax_x_elem(te_graph *g, ir_expr *const *idx, void *user)
{
    const softmax_te *s = user;
    return read_as(g, s->x, idx, s->dt);
}

static ir_expr *softmax_shifted(te_graph *g, ir_expr *const *idx, const softmax_te *s)
{
    return ir_sub(&g->b, read_as(g, s->x, idx, s->dt), read_row(g, s->max, s->span, idx));
}

static ir_expr *softmax_exp_elem(te_graph *g, ir_expr *const *idx, void *user)
{
    return call1(g, IR_CALL_EXP, softmax_shifted(g, idx, user));
}

static ir_expr *softmax_out_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const softmax_te *s = user;
    ir_expr *sum = read_row(g, s->sum, s->span, idx);
    if (s->log_form) return ir_sub(&g->b, softmax_shifted(g, idx, s), call1(g, IR_CALL_LOG, sum));
    return ir_binary(&g->b, IR_DIV, te_read(g, s->exp, idx), sum);
}

static ir_expr *softmax_exp_read(te_graph *g, ir_expr *const *idx, void *user)
{
    const softmax_te *s = user;
    return te_read(g, s->exp, idx);
}

static smelt_status softmax_common_compute(op_compute_args *a, bool log_form)
{
    const op_softmax_attrs *at = a->node->op_attrs;
    const te_tensor *x = a->in[0];
    smelt_tensor xt = {.dtype = x->buf->dtype, .rank = x->n_axes};
    memcpy(xt.dims, x->buf->shape, sizeof(int64_t) * (size_t)x->n_axes);
    int axis;
    SMELT_TRY(softmax_axis(a->ctx, a->node, &xt, &axis));
    norm_span span = {.lo = axis, .hi = at->coerce_2d ? x->n_axes : axis + 1};
    softmax_te s = {x, NULL, NULL, NULL, span, compute_dtype(x->buf->dtype), log_form};
    row_reduce max = {x, span, IR_REDUCE_MAX, s.dt, softmax_x_elem, &s};
    row_reduce sum = {x, span, IR_REDUCE_SUM, s.dt, log_form ? softmax_exp_elem : softmax_exp_read, &s};
    if (!(s.max = row_reduce_stage(a->te, "y_max", &max))) return smelt_ctx_status(a->ctx);
    if (!log_form && !(s.exp = te_compute(a->te, "y_exp", s.dt, x->n_axes, x->buf->shape,
                                          softmax_exp_elem, &s, "injective")))
        return smelt_ctx_status(a->ctx);
    if (!(s.sum = row_reduce_stage(a->te, "y_sum", &sum))) return smelt_ctx_status(a->ctx);
    a->out[0] = te_compute(a->te, "y", a->out_type[0].dtype, x->n_axes, x->buf->shape,
                           softmax_out_body, &s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

static smelt_status softmax_compute(op_compute_args *a)
{
    return softmax_common_compute(a, false);
}

static smelt_status log_softmax_compute(op_compute_args *a)
{
    return softmax_common_compute(a, true);
}

const op_def op_def_SOFTMAX = {
    .compute = softmax_compute,
    .import = softmax_import,
    .infer = softmax_infer,
    .eval = softmax_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

const op_def op_def_LOG_SOFTMAX = {
    .compute = log_softmax_compute,
    .import = softmax_import,
    .infer = softmax_infer,
    .eval = log_softmax_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- Hardmax ------------------------------------------------------------------------
 * 1 at the first maximum of each row (numpy's argmax: the first NaN, if
 * any, is the maximum), 0 elsewhere; rows as Softmax's (2-D form before
 * opset 13). */

OP_ATTRS(HARDMAX) = {{"axis", 0, 0}, {NULL, 0, 0}};

static void hardmax_line(double *x, int64_t n, int64_t stride)
{
    int64_t best = 0;
    for (int64_t k = 1; k < n && !isnan(x[0]); k++) {
        double v = x[k * stride], b = x[best * stride];
        if (isnan(v) || (!isnan(b) && v > b)) {
            best = k;
            if (isnan(v)) break;
        }
    }
    for (int64_t k = 0; k < n; k++) x[k * stride] = k == best ? 1.0 : 0.0;
}

static smelt_status hardmax_eval(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_softmax_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int axis;
    SMELT_TRY(softmax_axis(ctx, node, x, &axis));
    int64_t outer = dims_product(x->dims, 0, axis), n, inner;
    if (a->coerce_2d) {
        n = dims_product(x->dims, axis, x->rank);
        inner = 1;
    } else {
        n = x->dims[axis];
        inner = dims_product(x->dims, axis + 1, x->rank);
    }
    double *xd = f64_scratch(ctx, node, op_numel(x));
    if (!xd) return SMELT_ERR_NOMEM;
    load_f64(x, xd);
    for (int64_t o = 0; o < outer && n > 0; o++)
        for (int64_t i = 0; i < inner; i++) hardmax_line(xd + o * n * inner + i, n, inner);
    store_f64(&out[0], xd);
    smelt_free(xd);
    return SMELT_OK;
}

typedef struct hardmax_te {
    const te_tensor *x;
    te_tensor *max, *first_max, *first_nan;
    norm_span span;
    smelt_dtype dt;
} hardmax_te;

/* The row-major position of idx within its row (the span's dims). */
static ir_expr *hardmax_pos(te_graph *g, const hardmax_te *s, ir_expr *const *idx)
{
    ir_builder *b = &g->b;
    ir_expr *pos = ir_int(b, 0);
    for (int d = s->span.lo; d < s->span.hi; d++)
        pos = ir_add(b, ir_mul(b, pos, ir_int(b, s->x->buf->shape[d])), idx[d]);
    return pos;
}

static ir_expr *hardmax_x_elem(te_graph *g, ir_expr *const *idx, void *user)
{
    const hardmax_te *s = user;
    return read_as(g, s->x, idx, s->dt);
}

static ir_expr *hardmax_max_pos_elem(te_graph *g, ir_expr *const *idx, void *user)
{
    const hardmax_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *is_max = ir_binary(b, IR_EQ, read_as(g, s->x, idx, s->dt),
                                read_row(g, s->max, s->span, idx));
    return ir_select(b, is_max, hardmax_pos(g, s, idx), ir_int(b, INT64_MAX));
}

static ir_expr *hardmax_nan_pos_elem(te_graph *g, ir_expr *const *idx, void *user)
{
    const hardmax_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *v = read_as(g, s->x, idx, s->dt);
    ir_expr *nan = ir_call(b, IR_CALL_ISNAN, SMELT_DT_BOOL, 1, &v);
    return ir_select(b, nan, hardmax_pos(g, s, idx), ir_int(b, INT64_MAX));
}

static ir_expr *hardmax_out_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const hardmax_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *nan = read_row(g, s->first_nan, s->span, idx);
    ir_expr *first = ir_select(b, ir_binary(b, IR_LT, nan, ir_int(b, INT64_MAX)), nan,
                               read_row(g, s->first_max, s->span, idx));
    return ir_select(b, ir_binary(b, IR_EQ, hardmax_pos(g, s, idx), first), fconst(g, s->dt, 1.0),
                     fconst(g, s->dt, 0.0));
}

static smelt_status hardmax_compute(op_compute_args *a)
{
    const op_softmax_attrs *at = a->node->op_attrs;
    const te_tensor *x = a->in[0];
    smelt_tensor xt = {.dtype = x->buf->dtype, .rank = x->n_axes};
    memcpy(xt.dims, x->buf->shape, sizeof(int64_t) * (size_t)x->n_axes);
    int axis;
    SMELT_TRY(softmax_axis(a->ctx, a->node, &xt, &axis));
    hardmax_te s = {.x = x, .span = {.lo = axis, .hi = at->coerce_2d ? x->n_axes : axis + 1},
                    .dt = compute_dtype(x->buf->dtype)};
    row_reduce max = {x, s.span, IR_REDUCE_MAX, s.dt, hardmax_x_elem, &s};
    row_reduce first_max = {x, s.span, IR_REDUCE_MIN, SMELT_DT_INT64, hardmax_max_pos_elem, &s};
    row_reduce first_nan = {x, s.span, IR_REDUCE_MIN, SMELT_DT_INT64, hardmax_nan_pos_elem, &s};
    if (!(s.max = row_reduce_stage(a->te, "y_max", &max))) return smelt_ctx_status(a->ctx);
    if (!(s.first_max = row_reduce_stage(a->te, "y_first", &first_max)))
        return smelt_ctx_status(a->ctx);
    if (!(s.first_nan = row_reduce_stage(a->te, "y_first_nan", &first_nan)))
        return smelt_ctx_status(a->ctx);
    a->out[0] = te_compute(a->te, "y", a->out_type[0].dtype, x->n_axes, x->buf->shape,
                           hardmax_out_body, &s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_HARDMAX = {
    .compute = hardmax_compute,
    .import = softmax_import,
    .infer = softmax_infer,
    .eval = hardmax_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};
