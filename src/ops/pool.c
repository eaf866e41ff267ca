/* Pooling family: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, LRN.
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

static smelt_status attr_bool(smelt_ctx *ctx, const gr_node *node, const char *name, bool *out)
{
    int64_t v;
    SMELT_TRY(op_attr_int(ctx, node, name, 0, &v));
    if (v != 0 && v != 1)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute '%s' is %lld; expected 0 or 1",
                       name, (long long)v);
    *out = v != 0;
    return SMELT_OK;
}

static smelt_status pool_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_pool_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_conv_window_import(ctx, node, true, &a->win));
    SMELT_TRY(attr_bool(ctx, node, "ceil_mode", &a->ceil_mode));
    if (node->op == OP_AVERAGE_POOL)
        SMELT_TRY(attr_bool(ctx, node, "count_include_pad", &a->count_include_pad));
    if (node->op == OP_MAX_POOL)
        SMELT_TRY(attr_bool(ctx, node, "storage_order", &a->column_major_indices));
    return SMELT_OK;
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
    bool is_max = node->op == OP_GLOBAL_MAX_POOL;
    for (int64_t c = 0; c < planes; c++) {
        op_conv_load_f64(x, c * plane, plane, buf);
        double r = is_max ? -INFINITY : 0.0;
        for (int64_t i = 0; i < plane; i++) {
            if (is_max)
                r = i == 0 || buf[i] > r ? buf[i] : r;
            else
                r += buf[i];
        }
        if (!is_max) r = plane > 0 ? r / (double)plane : NAN;
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

/* ---- op table entries ------------------------------------------------------------- */

const op_def op_def_MAX_POOL = {
    .import = pool_import,
    .infer = pool_infer,
    .eval = pool_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 2,
};

const op_def op_def_AVERAGE_POOL = {
    .import = pool_import,
    .infer = pool_infer,
    .eval = pool_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

const op_def op_def_GLOBAL_AVERAGE_POOL = {
    .infer = global_pool_infer,
    .eval = global_pool_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

const op_def op_def_GLOBAL_MAX_POOL = {
    .infer = global_pool_infer,
    .eval = global_pool_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

const op_def op_def_LRN = {
    .import = lrn_import,
    .infer = lrn_infer,
    .eval = lrn_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};
