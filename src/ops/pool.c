/* Pooling family: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, LRN,
 * and MaxUnpool (at the end).
 *
 * The reference kernels work one (batch, channel) plane at a time: the plane
 * is converted to double once (exact for every supported dtype), pooled with
 * windows normalised to 3 spatial dims, and stored back.  The valid tap range
 * of every output position is computed once per axis, so the window loops
 * carry no bounds tests.
 */
#include <math.h>
#include <string.h>

#include "ops/pool.h"

static const smelt_dtype k_float_dtypes[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_FLOAT16,
                                             SMELT_DT_BFLOAT16, SMELT_DT_UNDEFINED};
static const smelt_dtype k_max_pool_dtypes[] = {SMELT_DT_FLOAT32,  SMELT_DT_FLOAT64,
                                                SMELT_DT_FLOAT16,  SMELT_DT_BFLOAT16,
                                                SMELT_DT_INT8,     SMELT_DT_UINT8,
                                                SMELT_DT_UNDEFINED};

static const char *input_name(const gr_node *node)
{
    return node->n_inputs > 0 && node->inputs[0] ? node->inputs[0]->name : "";
}

static smelt_status check_rank(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                               int min_rank)
{
    if (x->rank < min_rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input X '%s' has rank %d, expected at least %d (N, C%s)",
                       input_name(node), x->rank, min_rank,
                       min_rank > 2 ? ", spatial dims..." : "");
    return SMELT_OK;
}

/* ---- import ------------------------------------------------------------------ */

/* op_conv_window_import reads the window; the opsets that added an
 * attribute are where ONNX did. */
OP_ATTRS(MAX_POOL) = {{"auto_pad", 0, 0},        {"kernel_shape", 0, 0},   {"strides", 0, 0},
                      {"pads", 0, 0},            {"dilations", 10, 0},  {"ceil_mode", 10, 0},
                      {"storage_order", 8, 0}, {NULL, 0, 0}};
OP_ATTRS(AVERAGE_POOL) = {{"auto_pad", 0, 0},       {"kernel_shape", 0, 0},          {"strides", 0, 0},
                          {"pads", 0, 0},           {"dilations", 19, 0},         {"ceil_mode", 10, 0},
                          {"count_include_pad", 7, 0}, {NULL, 0, 0}};
OP_ATTRS(LP_POOL) = {{"auto_pad", 0, 0}, {"kernel_shape", 0, 0}, {"strides", 0, 0},
                     {"pads", 0, 0},     {"dilations", 18, 0},   {"ceil_mode", 18, 0},
                     {"p", 0, 0},        {NULL, 0, 0}};
OP_ATTRS(GLOBAL_LP_POOL) = {{"p", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(LRN) = {{"alpha", 0, 0}, {"beta", 0, 0}, {"bias", 0, 0}, {"size", 0, 0}, {NULL, 0, 0}};

/* LpPool's p: a positive integer (opset 1 had a float; 2 either way) */
static smelt_status import_p(smelt_ctx *ctx, const gr_node *node, int64_t *p)
{
    const gr_attr *at = gr_node_attr(node, "p");
    if (at && at->type == GR_ATTR_FLOAT) {
        float f;
        SMELT_TRY(op_attr_float(ctx, node, "p", 2.0f, &f));
        if (f != (float)(int64_t)f)
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "attribute 'p' is %g; only integer p is implemented", (double)f);
        *p = (int64_t)f;
    } else {
        SMELT_TRY(op_attr_int(ctx, node, "p", 2, p));
    }
    if (*p < 1)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'p' is %lld, must be >= 1",
                       (long long)*p);
    return SMELT_OK;
}

static smelt_status pool_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_pool_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_conv_window_import(ctx, node, true, &a->win));
    SMELT_TRY(op_attr_bool(ctx, node, "ceil_mode", false, &a->ceil_mode));
    if (node->op == OP_AVERAGE_POOL)
        SMELT_TRY(op_attr_bool(ctx, node, "count_include_pad", false, &a->count_include_pad));
    if (node->op == OP_MAX_POOL)
        SMELT_TRY(op_attr_bool(ctx, node, "storage_order", false, &a->column_major_indices));
    if (node->op == OP_LP_POOL) SMELT_TRY(import_p(ctx, node, &a->p));
    return SMELT_OK;
}

static smelt_status global_lp_pool_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_pool_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    return import_p(ctx, node, &a->p);
}

static smelt_status lrn_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_lrn_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_float(ctx, node, "alpha", 1e-4f, &a->alpha));
    SMELT_TRY(op_attr_float(ctx, node, "beta", 0.75f, &a->beta));
    SMELT_TRY(op_attr_float(ctx, node, "bias", 1.0f, &a->bias));
    SMELT_TRY(op_attr_int(ctx, node, "size", -1, &a->size));
    if (!gr_node_attr(node, "size"))
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'size' is required");
    if (a->size < 1 || a->size > INT32_MAX)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'size' is %lld; expected >= 1",
                       (long long)a->size);
    return SMELT_OK;
}

/* ---- shape inference ------------------------------------------------------- */

smelt_status op_pool_resolve(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                             op_conv_window *out)
{
    const op_pool_attrs *a = node->op_attrs;
    if (!a) return op_errf(ctx, node, SMELT_ERR_INTERNAL, "attributes were not imported");
    SMELT_TRY(check_rank(ctx, node, x, 3));
    return op_conv_window_resolve(ctx, node, &a->win, x->rank - 2, x->dims + 2, NULL,
                                  a->ceil_mode, out);
}

static smelt_status pool_infer(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    SMELT_TRY(op_check_dtype(ctx, node, x, "input X",
                             node->op == OP_MAX_POOL ? k_max_pool_dtypes : k_float_dtypes));
    op_conv_window win;
    SMELT_TRY(op_pool_resolve(ctx, node, x, &win));
    op_copy_shape(&out[0], x);
    for (int i = 0; i < win.n_spatial; i++) out[0].dims[2 + i] = win.out[i];
    if (node->n_outputs > 1) { /* MaxPool Indices */
        op_copy_shape(&out[1], &out[0]);
        out[1].dtype = SMELT_DT_INT64;
    }
    return SMELT_OK;
}

static smelt_status global_pool_infer(smelt_ctx *ctx, const gr_node *node,
                                      const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(op_check_dtype(ctx, node, in[0], "input X", k_float_dtypes));
    SMELT_TRY(check_rank(ctx, node, in[0], 3));
    op_copy_shape(&out[0], in[0]);
    for (int i = 2; i < out[0].rank; i++) out[0].dims[i] = 1;
    return SMELT_OK;
}

static smelt_status lrn_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    SMELT_TRY(op_check_dtype(ctx, node, in[0], "input X", k_float_dtypes));
    SMELT_TRY(check_rank(ctx, node, in[0], 2));
    op_copy_shape(&out[0], in[0]);
    return SMELT_OK;
}

/* ---- MaxPool / AveragePool kernels ------------------------------------------ */

/* A resolved window normalised to 3 spatial dims (leading dims of size 1),
 * with per-axis tables over output positions o:
 *   taps [lo, hi)  kernel taps that land inside the input
 *   padded         taps that land inside the input or its pads
 *                  (AveragePool's count_include_pad divisor; the ceil_mode
 *                  overhang beyond the end pad is not counted). */
typedef struct pool_plan {
    int64_t planes; /* N * C */
    int64_t in[3], out[3], s[3], d[3], pb[3];
    int64_t in_plane, out_plane;
    int64_t *lo[3], *hi[3], *padded[3];
    int64_t *tables; /* owns the per-axis arrays */
} pool_plan;

static smelt_status plan_init(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                              const op_conv_window *w, pool_plan *p)
{
    memset(p, 0, sizeof *p);
    if (w->n_spatial > OP_CONV_MAX_SPATIAL_EVAL)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                       "%d spatial dims; the reference kernel supports at most %d",
                       w->n_spatial, OP_CONV_MAX_SPATIAL_EVAL);
    int64_t k[3], pe[3];
    int lead = 3 - w->n_spatial;
    for (int i = 0; i < 3; i++) {
        int j = i - lead;
        p->in[i] = j >= 0 ? w->in[j] : 1;
        p->out[i] = j >= 0 ? w->out[j] : 1;
        p->s[i] = j >= 0 ? w->stride[j] : 1;
        p->d[i] = j >= 0 ? w->dilation[j] : 1;
        p->pb[i] = j >= 0 ? w->pad_begin[j] : 0;
        pe[i] = j >= 0 ? w->pad_end[j] : 0;
        k[i] = j >= 0 ? w->kernel[j] : 1;
    }
    p->planes = x->dims[0] * x->dims[1];
    p->in_plane = p->in[0] * p->in[1] * p->in[2];
    p->out_plane = p->out[0] * p->out[1] * p->out[2];
    int64_t total = 3 * (p->out[0] + p->out[1] + p->out[2]);
    p->tables = smelt_alloc(sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
    if (!p->tables) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    int64_t *t = p->tables;
    for (int i = 0; i < 3; i++) {
        p->lo[i] = t;
        p->hi[i] = t + p->out[i];
        p->padded[i] = t + 2 * p->out[i];
        t += 3 * p->out[i];
        for (int64_t o = 0; o < p->out[i]; o++) {
            int64_t start = o * p->s[i] - p->pb[i], plo, phi;
            op_conv_valid_range(k[i], p->in[i], p->d[i], start, &p->lo[i][o], &p->hi[i][o]);
            op_conv_valid_range(k[i], p->in[i] + p->pb[i] + pe[i], p->d[i], start + p->pb[i],
                                &plo, &phi);
            p->padded[i][o] = phi - plo;
        }
    }
    return SMELT_OK;
}

static void plan_fini(pool_plan *p) { smelt_free(p->tables); }

/* Input coordinate of tap k of output position o on axis i. */
static int64_t tap_pos(const pool_plan *p, int i, int64_t o, int64_t k)
{
    return o * p->s[i] - p->pb[i] + k * p->d[i];
}

/* Max over each window of plane x into y; idx (may be NULL) receives the
 * flat index in X of the first maximum, offset by `base`. */
static void max_pool_plane(const pool_plan *p, const double *x, double *y, int64_t *idx,
                           int64_t base, bool column_major)
{
    int64_t oi = 0;
    for (int64_t o0 = 0; o0 < p->out[0]; o0++) {
        for (int64_t o1 = 0; o1 < p->out[1]; o1++) {
            for (int64_t o2 = 0; o2 < p->out[2]; o2++, oi++) {
                double best = -INFINITY;
                int64_t b0 = -1, b1 = 0, b2 = 0;
                for (int64_t k0 = p->lo[0][o0]; k0 < p->hi[0][o0]; k0++) {
                    int64_t i0 = tap_pos(p, 0, o0, k0);
                    for (int64_t k1 = p->lo[1][o1]; k1 < p->hi[1][o1]; k1++) {
                        int64_t i1 = tap_pos(p, 1, o1, k1);
                        const double *row = x + (i0 * p->in[1] + i1) * p->in[2];
                        for (int64_t k2 = p->lo[2][o2]; k2 < p->hi[2][o2]; k2++) {
                            int64_t i2 = tap_pos(p, 2, o2, k2);
                            if (b0 < 0 || row[i2] > best) {
                                best = row[i2];
                                b0 = i0, b1 = i1, b2 = i2;
                            }
                        }
                    }
                }
                y[oi] = best;
                if (!idx) continue;
                if (b0 < 0) /* window entirely in padding */
                    idx[oi] = -1;
                else
                    idx[oi] = base + (column_major
                                          ? b0 + p->in[0] * (b1 + p->in[1] * b2)
                                          : (b0 * p->in[1] + b1) * p->in[2] + b2);
            }
        }
    }
}

static void average_pool_plane(const pool_plan *p, const double *x, double *y,
                               bool count_include_pad)
{
    int64_t oi = 0;
    for (int64_t o0 = 0; o0 < p->out[0]; o0++) {
        for (int64_t o1 = 0; o1 < p->out[1]; o1++) {
            for (int64_t o2 = 0; o2 < p->out[2]; o2++, oi++) {
                double sum = 0.0;
                for (int64_t k0 = p->lo[0][o0]; k0 < p->hi[0][o0]; k0++) {
                    int64_t i0 = tap_pos(p, 0, o0, k0);
                    for (int64_t k1 = p->lo[1][o1]; k1 < p->hi[1][o1]; k1++) {
                        int64_t i1 = tap_pos(p, 1, o1, k1);
                        const double *row = x + (i0 * p->in[1] + i1) * p->in[2];
                        for (int64_t k2 = p->lo[2][o2]; k2 < p->hi[2][o2]; k2++)
                            sum += row[tap_pos(p, 2, o2, k2)];
                    }
                }
                int64_t count = 1;
                for (int i = 0; i < 3; i++) {
                    int64_t o = i == 0 ? o0 : i == 1 ? o1 : o2;
                    count *= count_include_pad ? p->padded[i][o] : p->hi[i][o] - p->lo[i][o];
                }
                y[oi] = count > 0 ? sum / (double)count : NAN;
            }
        }
    }
}

/* |v|^p, exactly for the common p */
static double abs_pow(double v, int64_t p)
{
    v = fabs(v);
    return p == 1 ? v : p == 2 ? v * v : pow(v, (double)p);
}

static double root(double sum, int64_t p)
{
    return p == 1 ? sum : p == 2 ? sqrt(sum) : pow(sum, 1.0 / (double)p);
}

static void lp_pool_plane(const pool_plan *pl, const double *x, double *y, int64_t p)
{
    int64_t oi = 0;
    for (int64_t o0 = 0; o0 < pl->out[0]; o0++)
        for (int64_t o1 = 0; o1 < pl->out[1]; o1++)
            for (int64_t o2 = 0; o2 < pl->out[2]; o2++, oi++) {
                double sum = 0.0;
                for (int64_t k0 = pl->lo[0][o0]; k0 < pl->hi[0][o0]; k0++) {
                    int64_t i0 = tap_pos(pl, 0, o0, k0);
                    for (int64_t k1 = pl->lo[1][o1]; k1 < pl->hi[1][o1]; k1++) {
                        int64_t i1 = tap_pos(pl, 1, o1, k1);
                        const double *row = x + (i0 * pl->in[1] + i1) * pl->in[2];
                        for (int64_t k2 = pl->lo[2][o2]; k2 < pl->hi[2][o2]; k2++)
                            sum += abs_pow(row[tap_pos(pl, 2, o2, k2)], p);
                    }
                }
                y[oi] = root(sum, p);
            }
}

static smelt_status pool_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const op_pool_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    op_conv_window win;
    pool_plan p;
    SMELT_TRY(op_pool_resolve(ctx, node, x, &win));
    SMELT_TRY(plan_init(ctx, node, x, &win, &p));
    int64_t *indices = node->n_outputs > 1 ? out[1].data : NULL;
    double *xbuf = smelt_alloc(sizeof(double) * (size_t)(p.in_plane > 0 ? p.in_plane : 1));
    double *ybuf = smelt_alloc(sizeof(double) * (size_t)(p.out_plane > 0 ? p.out_plane : 1));
    smelt_status st = SMELT_OK;
    if (!xbuf || !ybuf) st = op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t c = 0; st == SMELT_OK && c < p.planes; c++) {
        op_conv_load_f64(x, c * p.in_plane, p.in_plane, xbuf);
        if (node->op == OP_MAX_POOL)
            max_pool_plane(&p, xbuf, ybuf, indices ? indices + c * p.out_plane : NULL,
                           c * p.in_plane, a->column_major_indices);
        else if (node->op == OP_LP_POOL)
            lp_pool_plane(&p, xbuf, ybuf, a->p);
        else
            average_pool_plane(&p, xbuf, ybuf, a->count_include_pad);
        op_conv_store_f64(&out[0], c * p.out_plane, p.out_plane, ybuf);
    }
    smelt_free(xbuf);
    smelt_free(ybuf);
    plan_fini(&p);
    return st;
}

/* ---- global pools ------------------------------------------------------------ */

static smelt_status global_pool_eval(smelt_ctx *ctx, const gr_node *node,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    int64_t planes = x->dims[0] * x->dims[1], plane = 1;
    for (int i = 2; i < x->rank; i++) plane *= x->dims[i];
    double *buf = smelt_alloc(sizeof(double) * (size_t)(plane > 0 ? plane : 1));
    if (!buf) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    bool is_max = node->op == OP_GLOBAL_MAX_POOL, is_lp = node->op == OP_GLOBAL_LP_POOL;
    int64_t p = is_lp ? ((const op_pool_attrs *)node->op_attrs)->p : 1;
    for (int64_t c = 0; c < planes; c++) {
        op_conv_load_f64(x, c * plane, plane, buf);
        double r = is_max ? -INFINITY : 0.0;
        for (int64_t i = 0; i < plane; i++) {
            if (is_max)
                r = i == 0 || buf[i] > r ? buf[i] : r;
            else
                r += is_lp ? abs_pow(buf[i], p) : buf[i];
        }
        if (is_lp) r = root(r, p);
        else if (!is_max) r = plane > 0 ? r / (double)plane : NAN;
        op_conv_store_f64(&out[0], c, 1, &r);
    }
    smelt_free(buf);
    return SMELT_OK;
}

/* ---- LRN ------------------------------------------------------------------------ */

/* Normalise the C planes of one batch item (x, y: C * plane values). */
static void lrn_item(const op_lrn_attrs *a, int64_t channels, int64_t plane, const double *x,
                     double *y, double *sq)
{
    int64_t before = (a->size - 1) / 2, after = a->size - 1 - before; /* floor, ceil */
    double scale = (double)a->alpha / (double)a->size;
    for (int64_t c = 0; c < channels; c++) {
        int64_t first = c - before > 0 ? c - before : 0;
        int64_t last = c + after < channels - 1 ? c + after : channels - 1;
        memset(sq, 0, sizeof(double) * (size_t)plane);
        for (int64_t j = first; j <= last; j++) {
            const double *xj = x + j * plane;
            for (int64_t i = 0; i < plane; i++) sq[i] += xj[i] * xj[i];
        }
        const double *xc = x + c * plane;
        double *yc = y + c * plane;
        for (int64_t i = 0; i < plane; i++)
            yc[i] = xc[i] / pow((double)a->bias + scale * sq[i], (double)a->beta);
    }
}

static smelt_status lrn_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    int64_t channels = x->dims[1], plane = 1;
    for (int i = 2; i < x->rank; i++) plane *= x->dims[i];
    int64_t item = channels * plane;
    if (item == 0) return SMELT_OK;
    double *xbuf = smelt_alloc(sizeof(double) * (size_t)item);
    double *ybuf = smelt_alloc(sizeof(double) * (size_t)item);
    double *sq = smelt_alloc(sizeof(double) * (size_t)plane);
    smelt_status st = SMELT_OK;
    if (!xbuf || !ybuf || !sq) st = op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t n = 0; st == SMELT_OK && n < x->dims[0]; n++) {
        op_conv_load_f64(x, n * item, item, xbuf);
        lrn_item(node->op_attrs, channels, plane, xbuf, ybuf, sq);
        op_conv_store_f64(&out[0], n * item, item, ybuf);
    }
    smelt_free(xbuf);
    smelt_free(ybuf);
    smelt_free(sq);
    return st;
}

/* ---- compute definitions ---------------------------------------------------
 *
 *   MaxPool:     y[n, c, o...] = max over taps k... of x[n, c, o*s - pad + k*d]
 *                (taps in the padding take max's identity)
 *   AveragePool: sum over the same taps (padding reads 0) divided by the
 *                number of taps inside the input (count_include_pad: inside
 *                the padded input), an expression of o per axis
 *   Global*Pool: the same over the whole plane
 *   LRN:         y = x / (bias + alpha/size * sum of x^2 over the channel
 *                window)^beta
 * Sums run in float32 for float16/bfloat16 inputs (op_conv_acc_dtype) and
 * round once in an elementwise epilogue stage.
 */

typedef struct pool_def {
    const te_tensor *x;
    const te_tensor *acc; /* the reduce stage, for the epilogue */
    const te_tensor *argmax; /* MaxPool Indices: first row-major position of the max */
    bool column_major;
    op_conv_window win;
    smelt_dtype acc_dt;
    bool count_include_pad;
    int64_t lp; /* LpPool, GlobalLpPool: p; else 0 */
    const op_lrn_attrs *lrn;
} pool_def;

static pool_def *pool_def_new(op_compute_args *a)
{
    pool_def *d = smelt_arena_alloc(&a->te->arena, sizeof *d);
    if (!d) {
        op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    d->x = a->in[0];
    d->acc_dt = op_conv_acc_dtype(d->x->buf->dtype);
    return d;
}

/* The window's taps over x for output idx: pos (input coords) and the
 * in-bounds guard; axes receive the kernel reduce axes. */
static ir_expr *window_taps(te_graph *g, const pool_def *d, ir_expr *const *idx, ir_axis *axes,
                            ir_expr **xi)
{
    op_conv_spatial_axes(g, d->win.n_spatial, d->win.kernel, axes);
    xi[0] = idx[0];
    xi[1] = idx[1];
    return op_conv_window_taps(g, &d->win, idx + 2, axes, xi + 2);
}

static ir_expr *max_pool_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const pool_def *d = user;
    ir_axis axes[OP_CONV_MAX_SPATIAL];
    ir_expr *xi[SMELT_MAX_RANK];
    ir_expr *cond = window_taps(g, d, idx, axes, xi);
    ir_expr *v = te_read(g, d->x, xi);
    smelt_dtype dt = d->x->buf->dtype;
    if (cond) v = ir_select(&g->b, cond, v, te_reduce_identity(g, IR_REDUCE_MAX, dt));
    return te_reduce(g, IR_REDUCE_MAX, v, d->win.n_spatial, axes);
}

/* LpPool's |v|^p (p >= 1) in the accumulation dtype */
static ir_expr *abs_pow_te(ir_builder *b, ir_expr *v, int64_t p)
{
    ir_expr *a = ir_call(b, IR_CALL_ABS, v->dtype, 1, &v);
    if (p == 1) return a;
    if (p == 2) return ir_mul(b, v, v);
    ir_expr *args[2] = {a, ir_const_float(b, v->dtype, (double)p)};
    return ir_call(b, IR_CALL_POW, v->dtype, 2, args);
}

static ir_expr *lp_root_te(ir_builder *b, ir_expr *sum, int64_t p)
{
    if (p == 1) return sum;
    if (p == 2) return ir_call(b, IR_CALL_SQRT, sum->dtype, 1, &sum);
    ir_expr *args[2] = {sum, ir_const_float(b, sum->dtype, 1.0 / (double)p)};
    return ir_call(b, IR_CALL_POW, sum->dtype, 2, args);
}

static ir_expr *window_sum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const pool_def *d = user;
    ir_axis axes[OP_CONV_MAX_SPATIAL];
    ir_expr *xi[SMELT_MAX_RANK];
    ir_expr *cond = window_taps(g, d, idx, axes, xi);
    ir_expr *v = ir_cast(&g->b, d->acc_dt, te_read(g, d->x, xi));
    if (d->lp) v = abs_pow_te(&g->b, v, d->lp);
    if (cond) v = ir_select(&g->b, cond, v, ir_const_float(&g->b, d->acc_dt, 0.0));
    return te_reduce(g, IR_REDUCE_SUM, v, d->win.n_spatial, axes);
}

/* ceil(a / d) for d >= 1. */
static ir_expr *ceil_div(ir_builder *b, ir_expr *a, int64_t d)
{
    if (d == 1) return a;
    return ir_binary(b, IR_FLOORDIV, ir_add(b, a, ir_int(b, d - 1)), ir_int(b, d));
}

static ir_expr *floor_div(ir_builder *b, ir_expr *a, int64_t d)
{
    return d == 1 ? a : ir_binary(b, IR_FLOORDIV, a, ir_int(b, d));
}

/* How many taps of output position o on axis i land in [lo, hi): taps k in
 * [0, K) with lo <= start + k*d < hi, start = o*s - pad_begin. */
static ir_expr *taps_inside(ir_builder *b, const op_conv_window *w, int i, ir_expr *o,
                            int64_t lo, int64_t hi)
{
    int64_t k = w->kernel[i], d = w->dilation[i], s = w->stride[i], pb = w->pad_begin[i];
    int64_t first_start = -pb, last_start = (w->out[i] - 1) * s - pb;
    if (first_start >= lo && last_start + (k - 1) * d < hi) return ir_int(b, k); /* never clipped */
    ir_expr *start = op_conv_affine(b, o, s, -pb);
    ir_expr *first = ir_binary(b, IR_MAX, ir_int(b, 0),
                               ceil_div(b, ir_sub(b, ir_int(b, lo), start), d));
    ir_expr *last = ir_binary(b, IR_MIN, ir_int(b, k - 1),
                              floor_div(b, ir_sub(b, ir_int(b, hi - 1), start), d));
    ir_expr *count = ir_add(b, ir_sub(b, last, first), ir_int(b, 1));
    return ir_binary(b, IR_MAX, ir_int(b, 0), count);
}

static ir_expr *lp_pool_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const pool_def *d = user;
    return ir_cast(&g->b, d->x->buf->dtype, lp_root_te(&g->b, te_read(g, d->acc, idx), d->lp));
}

static ir_expr *average_pool_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const pool_def *d = user;
    ir_builder *b = &g->b;
    const op_conv_window *w = &d->win;
    ir_expr *count = NULL;
    for (int i = 0; i < w->n_spatial; i++) {
        int64_t lo = d->count_include_pad ? -w->pad_begin[i] : 0;
        int64_t hi = d->count_include_pad ? w->in[i] + w->pad_end[i] : w->in[i];
        ir_expr *n = taps_inside(b, w, i, idx[2 + i], lo, hi);
        count = count ? ir_mul(b, count, n) : n;
    }
    ir_expr *sum = te_read(g, d->acc, idx);
    ir_expr *avg = ir_binary(b, IR_DIV, sum, ir_cast(b, d->acc_dt, count ? count : ir_int(b, 1)));
    return ir_cast(b, d->x->buf->dtype, avg);
}

/* MaxPool Indices: the first window position (row-major order, as the
 * reference scans) holding the maximum, as a flat index into x; -1 when the
 * window lies entirely in padding.  Stage 1 takes the smallest row-major
 * position equal to the max; stage 2 maps "none" to -1 and, for
 * storage_order=1, re-flattens the spatial part column-major. */
static ir_expr *row_major_position(ir_builder *b, const te_tensor *x, ir_expr *const *xi)
{
    ir_expr *pos = xi[0];
    for (int d = 1; d < x->buf->rank; d++)
        pos = ir_add(b, ir_mul(b, pos, ir_int(b, x->buf->shape[d])), xi[d]);
    return pos;
}

static ir_expr *argmax_pos_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const pool_def *d = user;
    ir_builder *b = &g->b;
    ir_axis axes[OP_CONV_MAX_SPATIAL];
    ir_expr *xi[SMELT_MAX_RANK];
    ir_expr *cond = window_taps(g, d, idx, axes, xi);
    ir_expr *hit = ir_binary(b, IR_EQ, te_read(g, d->x, xi), te_read(g, d->acc, idx));
    if (cond) hit = ir_select(b, cond, hit, ir_const_int(b, SMELT_DT_BOOL, 0)); /* guarded load */
    ir_expr *none = ir_int(b, INT64_MAX);
    return te_reduce(g, IR_REDUCE_MIN, ir_select(b, hit, row_major_position(b, d->x, xi), none),
                     d->win.n_spatial, axes);
}

static ir_expr *indices_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const pool_def *d = user;
    ir_builder *b = &g->b;
    ir_expr *pos = te_read(g, d->argmax, idx);
    ir_expr *flat = pos;
    if (d->column_major) {
        const int64_t *shape = d->x->buf->shape;
        int rank = d->x->buf->rank;
        int64_t plane = 1;
        for (int k = 2; k < rank; k++) plane *= shape[k];
        ir_expr *in_plane = ir_binary(b, IR_FLOORMOD, pos, ir_int(b, plane));
        ir_expr *base = ir_sub(b, pos, in_plane);
        ir_expr *col = ir_int(b, 0), *rest = in_plane;
        /* coords from the last axis up; column-major weights from the first */
        int64_t weight[SMELT_MAX_RANK];
        int64_t w = 1;
        for (int k = 2; k < rank; k++) {
            weight[k] = w;
            w *= shape[k];
        }
        for (int k = rank - 1; k >= 2; k--) {
            ir_expr *coord = ir_binary(b, IR_FLOORMOD, rest, ir_int(b, shape[k]));
            rest = ir_binary(b, IR_FLOORDIV, rest, ir_int(b, shape[k]));
            col = ir_add(b, col, ir_mul(b, coord, ir_int(b, weight[k])));
        }
        flat = ir_add(b, base, col);
    }
    return ir_select(b, ir_binary(b, IR_EQ, pos, ir_int(b, INT64_MAX)), ir_int(b, -1), flat);
}

static smelt_status max_pool_indices(op_compute_args *a, pool_def *d, te_tensor *y)
{
    const smelt_tensor *it = &a->out_type[1];
    d->acc = y;
    d->column_major = ((const op_pool_attrs *)a->node->op_attrs)->column_major_indices;
    d->argmax = te_compute(a->te, "argmax_pos", SMELT_DT_INT64, it->rank, it->dims,
                           argmax_pos_body, d, "pool");
    if (!d->argmax) return smelt_ctx_status(a->ctx);
    a->out[1] = te_compute(a->te, "indices", SMELT_DT_INT64, it->rank, it->dims, indices_body, d,
                           "injective");
    return a->out[1] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* Does node request MaxPool's optional Indices output? */
static bool wants_indices(const gr_node *node)
{
    return node->n_outputs > 1 && node->outputs[1];
}

static smelt_status pool_compute(op_compute_args *a)
{
    const smelt_tensor *y = &a->out_type[0];
    pool_def *d = pool_def_new(a);
    if (!d) return smelt_ctx_status(a->ctx);
    smelt_tensor xt = op_conv_te_type(d->x);
    SMELT_TRY(op_pool_resolve(a->ctx, a->node, &xt, &d->win));
    d->count_include_pad = ((const op_pool_attrs *)a->node->op_attrs)->count_include_pad;
    te_tensor *t;
    if (a->node->op == OP_LP_POOL) { /* a generic reduction, not the pool rule's window sum */
        d->lp = ((const op_pool_attrs *)a->node->op_attrs)->p;
        t = te_compute(a->te, "sum", d->acc_dt, y->rank, y->dims, window_sum_body, d, "reduce");
        d->acc = t;
        if (t) t = te_compute(a->te, "y", y->dtype, y->rank, y->dims, lp_pool_body, d, "injective");
    } else if (a->node->op == OP_MAX_POOL) {
        t = te_compute(a->te, "y", y->dtype, y->rank, y->dims, max_pool_body, d, "pool");
        if (t && wants_indices(a->node)) SMELT_TRY(max_pool_indices(a, d, t));
    } else {
        t = te_compute(a->te, "sum", d->acc_dt, y->rank, y->dims, window_sum_body, d, "pool");
        d->acc = t;
        if (t)
            t = te_compute(a->te, "y", y->dtype, y->rank, y->dims, average_pool_body, d,
                           "injective");
    }
    a->out[0] = t;
    return t ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* Global pools: the window is the whole plane; output spatial indices are 0.
 * Max reduces in x's own dtype (exact); sums in the accumulation dtype. */
static ir_expr *global_body(te_graph *g, ir_expr *const *idx, const pool_def *d,
                            ir_reduce_op op)
{
    int ns = d->x->buf->rank - 2;
    ir_axis axes[OP_CONV_MAX_SPATIAL];
    ir_expr *xi[SMELT_MAX_RANK];
    op_conv_spatial_axes(g, ns, d->x->buf->shape + 2, axes);
    xi[0] = idx[0];
    xi[1] = idx[1];
    for (int i = 0; i < ns; i++) xi[2 + i] = ir_var_ref(&g->b, axes[i].var);
    ir_expr *v = te_read(g, d->x, xi);
    if (op == IR_REDUCE_SUM) v = ir_cast(&g->b, d->acc_dt, v);
    if (d->lp) v = abs_pow_te(&g->b, v, d->lp);
    return te_reduce(g, op, v, ns, axes);
}

static ir_expr *global_max_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return global_body(g, idx, user, IR_REDUCE_MAX);
}

static ir_expr *global_sum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return global_body(g, idx, user, IR_REDUCE_SUM);
}

static ir_expr *global_mean_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const pool_def *d = user;
    int64_t plane = 1;
    for (int i = 2; i < d->x->buf->rank; i++) plane *= d->x->buf->shape[i];
    ir_expr *sum = te_read(g, d->acc, idx);
    ir_expr *mean = ir_binary(&g->b, IR_DIV, sum, ir_const_float(&g->b, d->acc_dt, (double)plane));
    return ir_cast(&g->b, d->x->buf->dtype, mean);
}

static smelt_status global_pool_compute(op_compute_args *a)
{
    const smelt_tensor *y = &a->out_type[0];
    pool_def *d = pool_def_new(a);
    if (!d) return smelt_ctx_status(a->ctx);
    te_tensor *t;
    if (a->node->op == OP_GLOBAL_MAX_POOL) {
        t = te_compute(a->te, "y", y->dtype, y->rank, y->dims, global_max_body, d, "reduce");
    } else {
        if (a->node->op == OP_GLOBAL_LP_POOL) d->lp = ((const op_pool_attrs *)a->node->op_attrs)->p;
        t = te_compute(a->te, "sum", d->acc_dt, y->rank, y->dims, global_sum_body, d, "reduce");
        d->acc = t;
        if (t)
            t = te_compute(a->te, "y", y->dtype, y->rank, y->dims,
                           d->lp ? lp_pool_body : global_mean_body, d, "injective");
    }
    a->out[0] = t;
    return t ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* LRN: the sum of squares over channels c - before .. c + after (clipped). */
static ir_expr *lrn_square_sum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const pool_def *d = user;
    ir_builder *b = &g->b;
    int rank = d->x->buf->rank;
    int64_t before = (d->lrn->size - 1) / 2, after = d->lrn->size - 1 - before;
    ir_axis r = te_reduce_axis(g, "rc", d->lrn->size);
    ir_expr *xi[SMELT_MAX_RANK];
    for (int i = 0; i < rank; i++) xi[i] = idx[i];
    xi[1] = ir_add(b, op_conv_affine(b, idx[1], 1, -before), ir_var_ref(b, r.var));
    ir_expr *cond = NULL;
    if (before > 0) cond = op_conv_and(b, cond, ir_binary(b, IR_GE, xi[1], ir_int(b, 0)));
    if (after > 0)
        cond = op_conv_and(b, cond, ir_binary(b, IR_LT, xi[1], ir_int(b, d->x->buf->shape[1])));
    ir_expr *v = ir_cast(b, d->acc_dt, te_read(g, d->x, xi));
    v = ir_mul(b, v, v);
    if (cond) v = ir_select(b, cond, v, ir_const_float(b, d->acc_dt, 0.0));
    return te_reduce(g, IR_REDUCE_SUM, v, 1, &r);
}

static ir_expr *lrn_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const pool_def *d = user;
    ir_builder *b = &g->b;
    smelt_dtype dt = d->acc_dt;
    double scale = (double)d->lrn->alpha / (double)d->lrn->size;
    ir_expr *base = ir_add(b, ir_const_float(b, dt, d->lrn->bias),
                           ir_mul(b, ir_const_float(b, dt, scale), te_read(g, d->acc, idx)));
    ir_expr *args[2] = {base, ir_const_float(b, dt, d->lrn->beta)};
    ir_expr *x = ir_cast(b, dt, te_read(g, d->x, idx));
    ir_expr *y = ir_binary(b, IR_DIV, x, ir_call(b, IR_CALL_POW, dt, 2, args));
    return ir_cast(b, d->x->buf->dtype, y);
}

static smelt_status lrn_compute(op_compute_args *a)
{
    const smelt_tensor *y = &a->out_type[0];
    pool_def *d = pool_def_new(a);
    if (!d) return smelt_ctx_status(a->ctx);
    d->lrn = a->node->op_attrs;
    te_tensor *t = te_compute(a->te, "sqsum", d->acc_dt, y->rank, y->dims, lrn_square_sum_body,
                              d, "reduce");
    d->acc = t;
    if (t) t = te_compute(a->te, "y", y->dtype, y->rank, y->dims, lrn_body, d, "injective");
    a->out[0] = t;
    return t ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* ---- op table entries ------------------------------------------------------------- */

const op_def op_def_MAX_POOL = {
    .compute = pool_compute,
    .import = pool_import,
    .infer = pool_infer,
    .eval = pool_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 2,
};

const op_def op_def_AVERAGE_POOL = {
    .compute = pool_compute,
    .import = pool_import,
    .infer = pool_infer,
    .eval = pool_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

const op_def op_def_GLOBAL_AVERAGE_POOL = {
    .compute = global_pool_compute,
    .infer = global_pool_infer,
    .eval = global_pool_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

const op_def op_def_GLOBAL_MAX_POOL = {
    .compute = global_pool_compute,
    .infer = global_pool_infer,
    .eval = global_pool_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

const op_def op_def_LRN = {
    .compute = lrn_compute,
    .import = lrn_import,
    .infer = lrn_infer,
    .eval = lrn_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

const op_def op_def_LP_POOL = {
    .compute = pool_compute,
    .import = pool_import,
    .infer = pool_infer,
    .eval = pool_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

const op_def op_def_GLOBAL_LP_POOL = {
    .compute = global_pool_compute,
    .import = global_lp_pool_import,
    .infer = global_pool_infer,
    .eval = global_pool_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- MaxUnpool (opsets 9-28) -----------------------------------------------------
 * Y is zero except at I's positions, which receive X's values.  As ONNX's
 * reference implementation (and its node tests) define it, I indexes the
 * flattened tensor of the inferred shape (N, C, (in - 1) * stride - pads +
 * kernel...), and output_shape, when given, only pads that tensor with zeros
 * at the end of each axis.  The reference scatters (a later X element wins a
 * shared position); the compute gathers from the X positions whose window
 * covers an output position, taking the last that points there, and checks
 * at run time that every index lies in its element's window and plane (what
 * MaxPool produces), so no value is dropped silently. */

OP_ATTRS(MAX_UNPOOL) = {{"kernel_shape", 0, 0}, {"pads", 0, 0}, {"strides", 0, 0}, {NULL, 0, 0}};

typedef struct op_unpool_attrs {
    int n;
    int64_t kernel[SMELT_MAX_RANK], stride[SMELT_MAX_RANK], pad_sum[SMELT_MAX_RANK];
    int64_t pad_begin[SMELT_MAX_RANK];
    bool bf16_ok; /* opset >= 22 */
} op_unpool_attrs;

static smelt_status unpool_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_unpool_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    int nk, ns, np;
    const int64_t *k, *s, *p;
    SMELT_TRY(op_attr_ints(ctx, node, "kernel_shape", &nk, &k));
    SMELT_TRY(op_attr_ints(ctx, node, "strides", &ns, &s));
    SMELT_TRY(op_attr_ints(ctx, node, "pads", &np, &p));
    if (nk < 1 || nk > SMELT_MAX_RANK - 2)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'kernel_shape' is required, with 1 to %d values",
                       SMELT_MAX_RANK - 2);
    if ((ns >= 0 && ns != nk) || (np >= 0 && np != 2 * nk))
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "'strides' needs %d values and 'pads' %d (got %d and %d)", nk, 2 * nk,
                       ns, np);
    a->n = nk;
    for (int d = 0; d < nk; d++) {
        a->kernel[d] = k[d];
        a->stride[d] = ns > 0 ? s[d] : 1;
        a->pad_begin[d] = np > 0 ? p[d] : 0;
        a->pad_sum[d] = np > 0 ? p[d] + p[nk + d] : 0;
        if (a->kernel[d] < 1 || a->stride[d] < 1 || a->pad_begin[d] < 0 || a->pad_sum[d] < 0)
            return op_errf(ctx, node, SMELT_ERR_ATTR,
                           "axis %d: kernel %lld, stride %lld, pads %lld/%lld; expected "
                           "positive kernel and stride and pads >= 0",
                           d, (long long)a->kernel[d], (long long)a->stride[d],
                           (long long)a->pad_begin[d], (long long)(a->pad_sum[d] - a->pad_begin[d]));
    }
    a->bf16_ok = g->opset >= 22;
    return SMELT_OK;
}

/* The shape the indices refer to: (N, C, (in - 1) * stride - pads + kernel...). */
static void unpool_inferred_dims(const op_unpool_attrs *a, const smelt_tensor *x, int64_t *dims)
{
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int d = 0; d < a->n; d++)
        dims[2 + d] = x->dims[2 + d] < 0 ? GR_DIM_UNKNOWN
                                         : (x->dims[2 + d] - 1) * a->stride[d] - a->pad_sum[d] +
                                               a->kernel[d];
}

static smelt_status unpool_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_unpool_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *ind = in[1], *oshape = op_input(node, in, 2);
    SMELT_TRY(op_check_dtype(ctx, node, x, "input X", k_float_dtypes));
    if (!a->bf16_ok && x->dtype == SMELT_DT_BFLOAT16)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input X is bfloat16, which MaxUnpool "
                       "takes from opset 22");
    static const smelt_dtype k_i64[] = {SMELT_DT_INT64, SMELT_DT_UNDEFINED};
    SMELT_TRY(op_check_dtype(ctx, node, ind, "input I", k_i64));
    if (x->rank != a->n + 2 || ind->rank != x->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "X has rank %d and I rank %d; kernel_shape has %d values, so both need "
                       "rank %d", x->rank, ind->rank, a->n, a->n + 2);
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] >= 0 && ind->dims[d] >= 0 && x->dims[d] != ind->dims[d])
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "X and I differ in axis %d", d);
    out[0].dtype = x->dtype;
    out[0].rank = x->rank;
    unpool_inferred_dims(a, x, out[0].dims);
    for (int d = 2; d < x->rank; d++)
        if (out[0].dims[d] != GR_DIM_UNKNOWN && out[0].dims[d] < 1)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "the unpooled axis %d would have %lld "
                           "elements", d, (long long)out[0].dims[d]);
    if (!oshape) return SMELT_OK;
    if (!oshape->data) {
        for (int d = 0; d < x->rank; d++) out[0].dims[d] = GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    int64_t want[SMELT_MAX_RANK];
    int count;
    SMELT_TRY(op_read_ints(ctx, node, oshape, "output_shape", want, SMELT_MAX_RANK, &count));
    if (count != x->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "output_shape has %d values; expected %d",
                       count, x->rank);
    for (int d = 0; d < x->rank; d++) {
        if (out[0].dims[d] >= 0 && want[d] < out[0].dims[d])
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "output_shape[%d] is %lld, smaller than the unpooled %lld", d,
                           (long long)want[d], (long long)out[0].dims[d]);
        out[0].dims[d] = want[d];
    }
    return SMELT_OK;
}

static smelt_status unpool_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1];
    smelt_tensor inf = {.dtype = x->dtype, .rank = x->rank};
    unpool_inferred_dims(node->op_attrs, x, inf.dims);
    int64_t n = op_numel(&inf), ostr[SMELT_MAX_RANK];
    double *y = smelt_calloc(n ? (size_t)n : 1, sizeof *y);
    if (!y) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < op_numel(x); i++) {
        int64_t p = op_get_i64(ind, i);
        if (p < 0 || p >= n) {
            smelt_free(y);
            return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                           "index %lld at position %lld is outside the unpooled tensor of %lld "
                           "elements", (long long)p, (long long)i, (long long)n);
        }
        y[p] = op_get_f64(x, i);
    }
    op_strides(&out[0], ostr);
    int64_t idx[SMELT_MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++, op_next_index(idx, inf.dims, inf.rank)) {
        int64_t o = 0;
        for (int d = 0; d < inf.rank; d++) o += idx[d] * ostr[d];
        op_set_f64(&out[0], o, y[i]);
    }
    smelt_free(y);
    return SMELT_OK;
}

typedef struct unpool_te {
    const op_unpool_attrs *a;
    const te_tensor *x, *ind;
    int64_t inf[SMELT_MAX_RANK];
    int rank;
} unpool_te;

static ir_expr *iconst(ir_builder *b, int64_t v) { return ir_int(b, v); }

/* Flat index of multi-index idx in dims (int64 expressions). */
static ir_expr *flat_of(ir_builder *b, ir_expr *const *idx, const int64_t *dims, int rank)
{
    ir_expr *f = iconst(b, 0);
    for (int d = 0; d < rank; d++) f = ir_add(b, ir_mul(b, f, iconst(b, dims[d])), idx[d]);
    return f;
}

/* Y[n, c, o...]: over the candidate X positions i (window covering o) in
 * X's row-major order, the last whose index is o's flat position. */
static ir_expr *unpool_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const unpool_te *s = user;
    ir_builder *b = &g->b;
    int r = s->rank, ns = r - 2;
    smelt_dtype dt = s->x->buf->dtype;
    ir_expr *inside = NULL;
    for (int d = 0; d < r; d++) { /* output_shape may pad any axis */
        ir_expr *lt = ir_binary(b, IR_LT, idx[d], iconst(b, s->inf[d]));
        inside = inside ? ir_binary(b, IR_AND, inside, lt) : lt;
    }
    ir_expr *target = flat_of(b, idx, s->inf, r);
    int64_t span[SMELT_MAX_RANK], combos = 1;
    for (int d = 0; d < ns; d++) {
        span[d] = (s->a->kernel[d] + s->a->stride[d] - 1) / s->a->stride[d];
        combos *= span[d];
    }
    ir_expr *v = ir_const_float(b, dt, 0.0);
    for (int64_t c = 0; c < combos; c++) {
        /* offset j_d counts down from span - 1, so i_d = top_d - j_d rises */
        int64_t rest = c, j[SMELT_MAX_RANK];
        for (int d = ns - 1; d >= 0; d--) {
            j[d] = span[d] - 1 - rest % span[d];
            rest /= span[d];
        }
        ir_expr *xi[SMELT_MAX_RANK], *ok = NULL;
        for (int d = 0; d < 2; d++)
            xi[d] = ir_binary(b, IR_MIN, idx[d], iconst(b, s->inf[d] - 1));
        for (int d = 0; d < ns; d++) {
            ir_expr *top = ir_binary(b, IR_FLOORDIV, ir_add(b, idx[2 + d], iconst(b, s->a->pad_begin[d])),
                                     iconst(b, s->a->stride[d]));
            ir_expr *i = ir_sub(b, top, iconst(b, j[d]));
            /* o + pad - i * stride < kernel: o lies in i's window */
            ir_expr *in_win = ir_binary(
                b, IR_LT, ir_sub(b, ir_add(b, idx[2 + d], iconst(b, s->a->pad_begin[d])),
                                 ir_mul(b, i, iconst(b, s->a->stride[d]))),
                iconst(b, s->a->kernel[d]));
            int64_t xd = s->x->buf->shape[2 + d];
            ir_expr *fits = ir_binary(b, IR_AND, ir_binary(b, IR_GE, i, iconst(b, 0)),
                                      ir_binary(b, IR_LT, i, iconst(b, xd)));
            fits = ir_binary(b, IR_AND, fits, in_win);
            ok = ok ? ir_binary(b, IR_AND, ok, fits) : fits;
            xi[2 + d] = ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, i, iconst(b, 0)), iconst(b, xd - 1));
        }
        ir_expr *hit = ir_binary(b, IR_EQ, te_read(g, s->ind, xi), target);
        v = ir_select(b, ir_binary(b, IR_AND, ok, hit), te_read(g, s->x, xi), v);
    }
    return inside ? ir_select(b, inside, v, ir_const_float(b, dt, 0.0)) : v;
}

/* Each index must point into its own element's window and plane. */
static ir_expr *unpool_check_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const unpool_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *p = te_read(g, s->ind, idx);
    ir_expr *ok = NULL;
    int r = s->rank;
    ir_expr *rest = p;
    for (int d = r - 1; d >= 0; d--) {
        ir_expr *coord = ir_binary(b, IR_FLOORMOD, rest, iconst(b, s->inf[d]));
        rest = ir_binary(b, IR_FLOORDIV, rest, iconst(b, s->inf[d]));
        ir_expr *good;
        if (d < 2) {
            good = ir_binary(b, IR_EQ, coord, idx[d]);
        } else {
            ir_expr *off = ir_sub(b, ir_add(b, coord, iconst(b, s->a->pad_begin[d - 2])),
                                  ir_mul(b, idx[d], iconst(b, s->a->stride[d - 2])));
            good = ir_binary(b, IR_AND, ir_binary(b, IR_GE, off, iconst(b, 0)),
                             ir_binary(b, IR_LT, off, iconst(b, s->a->kernel[d - 2])));
        }
        ok = ok ? ir_binary(b, IR_AND, ok, good) : good;
    }
    ok = ir_binary(b, IR_AND, ok, ir_binary(b, IR_EQ, rest, iconst(b, 0)));
    ok = ir_binary(b, IR_AND, ok, ir_binary(b, IR_GE, p, iconst(b, 0)));
    return ir_select(b, ok, p, iconst(b, -1));
}

static smelt_status unpool_compute(op_compute_args *a)
{
    unpool_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    s->a = a->node->op_attrs;
    s->x = a->in[0];
    s->ind = a->in[1];
    s->rank = s->x->n_axes;
    smelt_tensor xt = {.dtype = s->x->buf->dtype, .rank = s->rank};
    for (int d = 0; d < s->rank; d++) xt.dims[d] = s->x->buf->shape[d];
    unpool_inferred_dims(s->a, &xt, s->inf);
    int64_t combos = 1;
    for (int d = 0; d < s->a->n; d++)
        combos *= (s->a->kernel[d] + s->a->stride[d] - 1) / s->a->stride[d];
    if (combos > 64)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "compiled MaxUnpool takes windows overlapping at most 64 inputs per "
                       "output position (%lld here)", (long long)combos);
    ir_builder *b = &a->te->b;
    ir_var *v = ir_var_new(b, "i", SMELT_DT_INT64);
    ir_expr *ok = ir_binary(b, IR_GE, ir_var_ref(b, v), iconst(b, 0));
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type,
                          .message = "index at position {position} is outside its element's "
                                     "pooling window (compiled MaxUnpool takes MaxPool's indices)"};
    if (!te_check_compute(a->te, "check", s->rank, s->ind->buf->shape, unpool_check_body, s, v,
                          ok, &site))
        return smelt_ctx_status(a->ctx) ? smelt_ctx_status(a->ctx) : SMELT_ERR_NOMEM;
    const smelt_tensor *o = &a->out_type[0];
    a->out[0] = te_compute(a->te, "y", o->dtype, o->rank, o->dims, unpool_body, s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_MAX_UNPOOL = {
    .compute = unpool_compute, .import = unpool_import, .infer = unpool_infer,
    .eval = unpool_eval, .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
};
