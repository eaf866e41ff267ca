/* DeformConv (opsets 19-28), 2-D: a convolution whose taps sample X at
 * learned offsets,
 *
 *   y[n, m, i, j] = B[m] + sum over the group's channels c and taps (u, v) of
 *       W[m, c, u, v] * mask[n, g, u, v, i, j] * X~[n, c](p, q),
 *   p = i * stride_h - pad_top + u * dilation_h + offset[n, g, u, v, 0, i, j]
 *   q = j * stride_w - pad_left + v * dilation_w + offset[n, g, u, v, 1, i, j]
 *
 * g the offset group of channel c; X~ bilinear interpolation of the plane
 * that reads 0 outside it (GridSample with align_corners and zero padding,
 * as onnx's reference samples).  offset is (N, G * kH * kW * 2, oH, oW),
 * mask (N, G * kH * kW, oH, oW), all 1 when absent.  Positions and weights
 * are computed in double. */
#include <math.h>

#include "ops/op.h"
#include "te/te.h"

#define DC_RANK 4

typedef struct op_deform_attrs {
    int n_dil, n_kernel, n_pads, n_strides;
    const int64_t *dil, *kernel, *pads, *strides;
    int64_t group, offset_group;
} op_deform_attrs;

OP_ATTRS(DEFORM_CONV) = {{"dilations", 0, 0},    {"group", 0, 0},   {"kernel_shape", 0, 0},
                         {"offset_group", 0, 0}, {"pads", 0, 0},    {"strides", 0, 0},
                         {NULL, 0, 0}};

static smelt_status deform_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_deform_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(op_attr_ints(ctx, node, "dilations", &a->n_dil, &a->dil));
    SMELT_TRY(op_attr_ints(ctx, node, "kernel_shape", &a->n_kernel, &a->kernel));
    SMELT_TRY(op_attr_ints(ctx, node, "pads", &a->n_pads, &a->pads));
    SMELT_TRY(op_attr_ints(ctx, node, "strides", &a->n_strides, &a->strides));
    SMELT_TRY(op_attr_int(ctx, node, "group", 1, &a->group));
    SMELT_TRY(op_attr_int(ctx, node, "offset_group", 1, &a->offset_group));
    if (a->group < 1 || a->offset_group < 1)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "group %lld and offset_group %lld must be >= 1",
                       (long long)a->group, (long long)a->offset_group);
    return SMELT_OK;
}

/* Everything one node computes with, from its attributes and input shapes. */
typedef struct dc_geom {
    int64_t n, c, h, w;      /* X */
    int64_t m, cg, kh, kw;   /* W: out channels, channels per group, kernel */
    int64_t oh, ow;          /* y */
    int64_t sh, sw, dh, dw, ph, pw;
    int64_t group, og, c_per_og;
    bool bias, mask;
} dc_geom;

static smelt_status dc_window(smelt_ctx *ctx, const gr_node *node, dc_geom *d)
{
    const op_deform_attrs *a = node->op_attrs;
    if ((a->n_kernel > 0 && a->n_kernel != 2) || (a->n_strides > 0 && a->n_strides != 2) ||
        (a->n_dil > 0 && a->n_dil != 2) || (a->n_pads > 0 && a->n_pads != 4))
        return op_errf(ctx, node, SMELT_ERR_ATTR, "kernel_shape, strides and dilations need 2 "
                       "values and pads 4 (2-D DeformConv)");
    if (a->n_kernel > 0 && (a->kernel[0] != d->kh || a->kernel[1] != d->kw))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "kernel_shape (%lld, %lld) disagrees with W's "
                       "(%lld, %lld)", (long long)a->kernel[0], (long long)a->kernel[1],
                       (long long)d->kh, (long long)d->kw);
    d->sh = a->n_strides > 0 ? a->strides[0] : 1;
    d->sw = a->n_strides > 0 ? a->strides[1] : 1;
    d->dh = a->n_dil > 0 ? a->dil[0] : 1;
    d->dw = a->n_dil > 0 ? a->dil[1] : 1;
    d->ph = a->n_pads > 0 ? a->pads[0] : 0;
    d->pw = a->n_pads > 0 ? a->pads[1] : 0;
    int64_t pb = a->n_pads > 0 ? a->pads[2] : 0, pr = a->n_pads > 0 ? a->pads[3] : 0;
    if (d->sh < 1 || d->sw < 1 || d->dh < 1 || d->dw < 1 || d->ph < 0 || d->pw < 0 || pb < 0 ||
        pr < 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "strides and dilations must be >= 1, pads >= 0");
    int64_t span_h = d->h + d->ph + pb - (d->kh - 1) * d->dh - 1;
    int64_t span_w = d->w + d->pw + pr - (d->kw - 1) * d->dw - 1;
    d->oh = span_h < 0 ? 0 : span_h / d->sh + 1;
    d->ow = span_w < 0 ? 0 : span_w / d->sw + 1;
    return SMELT_OK;
}

static smelt_status dc_geometry(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                                int n_in, dc_geom *d)
{
    const op_deform_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *wt = in[1], *off = in[2];
    const smelt_tensor *b = n_in > 3 ? in[3] : NULL, *mk = n_in > 4 ? in[4] : NULL;
    if (x->rank != DC_RANK || wt->rank != DC_RANK || off->rank != DC_RANK)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "X, W and offset have ranks %d, %d, %d: "
                       "only 2-D DeformConv (rank 4) is implemented", x->rank, wt->rank,
                       off->rank);
    *d = (dc_geom){.n = x->dims[0], .c = x->dims[1], .h = x->dims[2], .w = x->dims[3],
                   .m = wt->dims[0], .cg = wt->dims[1], .kh = wt->dims[2], .kw = wt->dims[3],
                   .group = a->group, .og = a->offset_group, .bias = b != NULL, .mask = mk != NULL};
    for (int i = 0; i < DC_RANK; i++)
        if (x->dims[i] < 0 || wt->dims[i] < 0)
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "X and W need static shapes");
    if (d->c != d->cg * d->group || d->m % d->group != 0 || d->c % d->og != 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "X has %lld channels, W is (%lld, %lld, ...), group %lld, offset_group "
                       "%lld: expected C = W.dims[1] x group, M and C divisible by the groups",
                       (long long)d->c, (long long)d->m, (long long)d->cg, (long long)d->group,
                       (long long)d->og);
    d->c_per_og = d->c / d->og;
    SMELT_TRY(dc_window(ctx, node, d));
    int64_t taps = d->kh * d->kw;
    if (off->dims[0] != d->n || off->dims[1] != d->og * taps * 2 || off->dims[2] != d->oh ||
        off->dims[3] != d->ow)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "offset is (%lld, %lld, %lld, %lld); expected "
                       "(%lld, %lld, %lld, %lld)", (long long)off->dims[0], (long long)off->dims[1],
                       (long long)off->dims[2], (long long)off->dims[3], (long long)d->n,
                       (long long)(d->og * taps * 2), (long long)d->oh, (long long)d->ow);
    if (b && (b->rank != 1 || b->dims[0] != d->m))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "B must be (%lld)", (long long)d->m);
    if (mk && (mk->rank != DC_RANK || mk->dims[0] != d->n || mk->dims[1] != d->og * taps ||
               mk->dims[2] != d->oh || mk->dims[3] != d->ow))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "mask must be (%lld, %lld, %lld, %lld)",
                       (long long)d->n, (long long)(d->og * taps), (long long)d->oh,
                       (long long)d->ow);
    return SMELT_OK;
}

static const smelt_dtype k_floats[] = {SMELT_DT_FLOAT16, SMELT_DT_FLOAT32, SMELT_DT_FLOAT64,
                                       SMELT_DT_UNDEFINED};

static smelt_status deform_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                                 smelt_tensor *out)
{
    SMELT_TRY(op_check_dtype(ctx, node, in[0], "X", k_floats));
    for (int i = 1; i < node->n_inputs; i++)
        if (in[i] && in[i]->dtype != in[0]->dtype)
            return op_errf(ctx, node, SMELT_ERR_MODEL, "input %d is %s, X is %s", i,
                           smelt_dtype_name(in[i]->dtype), smelt_dtype_name(in[0]->dtype));
    dc_geom d;
    SMELT_TRY(dc_geometry(ctx, node, in, node->n_inputs, &d));
    out[0].dtype = in[0]->dtype;
    out[0].rank = DC_RANK;
    out[0].dims[0] = d.n;
    out[0].dims[1] = d.m;
    out[0].dims[2] = d.oh;
    out[0].dims[3] = d.ow;
    return SMELT_OK;
}

/* ---- reference ---- */

static double dc_pixel(const smelt_tensor *x, int64_t plane, const dc_geom *d, int64_t y, int64_t xx)
{
    if (y < 0 || y >= d->h || xx < 0 || xx >= d->w) return 0.0;
    return op_get_f64(x, plane + y * d->w + xx);
}

static double dc_bilinear(const smelt_tensor *x, int64_t plane, const dc_geom *d, double p, double q)
{
    if (!isfinite(p) || !isfinite(q) || p <= -1 || q <= -1 || p >= (double)d->h ||
        q >= (double)d->w)
        return 0.0; /* no corner inside (and no overflow in floor's cast) */
    double fp = floor(p), fq = floor(q), lp = p - fp, lq = q - fq;
    int64_t y0 = (int64_t)fp, x0 = (int64_t)fq;
    return (1 - lp) * (1 - lq) * dc_pixel(x, plane, d, y0, x0) +
           (1 - lp) * lq * dc_pixel(x, plane, d, y0, x0 + 1) +
           lp * (1 - lq) * dc_pixel(x, plane, d, y0 + 1, x0) +
           lp * lq * dc_pixel(x, plane, d, y0 + 1, x0 + 1);
}

static smelt_status deform_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    dc_geom d;
    SMELT_TRY(dc_geometry(ctx, node, in, node->n_inputs, &d));
    const smelt_tensor *x = in[0], *wt = in[1], *off = in[2];
    const smelt_tensor *b = node->n_inputs > 3 ? in[3] : NULL, *mk = node->n_inputs > 4 ? in[4] : NULL;
    int64_t taps = d.kh * d.kw, m_per_g = d.m / d.group, plane_o = d.oh * d.ow;
    for (int64_t n = 0; n < d.n; n++)
        for (int64_t m = 0; m < d.m; m++)
            for (int64_t i = 0; i < d.oh; i++)
                for (int64_t j = 0; j < d.ow; j++) {
                    double acc = b ? op_get_f64(b, m) : 0.0;
                    for (int64_t rc = 0; rc < d.cg; rc++) {
                        int64_t c = m / m_per_g * d.cg + rc, g = c / d.c_per_og;
                        int64_t plane = (n * d.c + c) * d.h * d.w;
                        for (int64_t t = 0; t < taps; t++) {
                            int64_t u = t / d.kw, v = t % d.kw, at = i * d.ow + j;
                            int64_t oc = (n * d.og + g) * taps * 2 + t * 2;
                            double p = (double)(i * d.sh - d.ph + u * d.dh) +
                                       op_get_f64(off, oc * plane_o + at);
                            double q = (double)(j * d.sw - d.pw + v * d.dw) +
                                       op_get_f64(off, (oc + 1) * plane_o + at);
                            double s = mk ? op_get_f64(mk, ((n * d.og + g) * taps + t) * plane_o + at)
                                          : 1.0;
                            acc += op_get_f64(wt, (m * d.cg + rc) * taps + t) * s *
                                   dc_bilinear(x, plane, &d, p, q);
                        }
                    }
                    op_set_f64(&out[0], ((n * d.m + m) * d.oh + i) * d.ow + j, acc);
                }
    return SMELT_OK;
}

/* ---- compute ---- */

typedef struct dc_te {
    dc_geom d;
    const te_tensor *x, *w, *off, *b, *mask;
} dc_te;

static ir_expr *f64(ir_builder *b, double v) { return ir_const_float(b, SMELT_DT_FLOAT64, v); }

/* X[n, c](y, x) as double, 0 outside the plane (the read itself clamped). */
static ir_expr *dc_te_pixel(te_graph *g, const dc_te *s, ir_expr *n, ir_expr *c, ir_expr *y,
                            ir_expr *x)
{
    ir_builder *b = &g->b;
    ir_expr *in = ir_binary(b, IR_AND, ir_binary(b, IR_AND, ir_binary(b, IR_GE, y, ir_int(b, 0)),
                                                 ir_binary(b, IR_LT, y, ir_int(b, s->d.h))),
                            ir_binary(b, IR_AND, ir_binary(b, IR_GE, x, ir_int(b, 0)),
                                      ir_binary(b, IR_LT, x, ir_int(b, s->d.w))));
    ir_expr *yc = ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, y, ir_int(b, 0)), ir_int(b, s->d.h - 1));
    ir_expr *xc = ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, x, ir_int(b, 0)), ir_int(b, s->d.w - 1));
    ir_expr *xi[DC_RANK] = {n, c, yc, xc};
    return ir_select(b, in, ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->x, xi)), f64(b, 0.0));
}

/* A position clamped to [-1, len] (NaN to -1): outside it no corner is
 * inside, and the floor's integer stays small. */
static ir_expr *dc_te_clamp(ir_builder *b, ir_expr *p, int64_t len)
{
    p = ir_select(b, ir_binary(b, IR_GE, p, f64(b, -1.0)), p, f64(b, -1.0));
    return ir_select(b, ir_binary(b, IR_LE, p, f64(b, (double)len)), p, f64(b, (double)len));
}

static ir_expr *dc_te_bilinear(te_graph *g, const dc_te *s, ir_expr *n, ir_expr *c, ir_expr *p,
                               ir_expr *q)
{
    ir_builder *b = &g->b;
    p = dc_te_clamp(b, p, s->d.h);
    q = dc_te_clamp(b, q, s->d.w);
    ir_expr *fp = ir_call(b, IR_CALL_FLOOR, SMELT_DT_FLOAT64, 1, &p);
    ir_expr *fq = ir_call(b, IR_CALL_FLOOR, SMELT_DT_FLOAT64, 1, &q);
    ir_expr *lp = ir_sub(b, p, fp), *lq = ir_sub(b, q, fq), *one = f64(b, 1.0);
    ir_expr *wp[2] = {ir_sub(b, one, lp), lp}, *wq[2] = {ir_sub(b, one, lq), lq};
    ir_expr *y0 = ir_cast(b, SMELT_DT_INT64, fp), *x0 = ir_cast(b, SMELT_DT_INT64, fq);
    ir_expr *v = NULL;
    for (int k = 0; k < 4; k++) {
        ir_expr *y = k / 2 ? ir_add(b, y0, ir_int(b, 1)) : y0;
        ir_expr *x = k % 2 ? ir_add(b, x0, ir_int(b, 1)) : x0;
        ir_expr *t = ir_mul(b, ir_mul(b, wp[k / 2], wq[k % 2]), dc_te_pixel(g, s, n, c, y, x));
        v = v ? ir_add(b, v, t) : t;
    }
    return v;
}

/* sum over rc, u, v of W * mask * X~, in double */
static ir_expr *dc_sum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const dc_te *s = user;
    const dc_geom *d = &s->d;
    ir_builder *b = &g->b;
    ir_axis ax[3] = {te_reduce_axis(g, "rc", d->cg), te_reduce_axis(g, "ry", d->kh),
                     te_reduce_axis(g, "rx", d->kw)};
    ir_expr *rc = ir_var_ref(b, ax[0].var), *u = ir_var_ref(b, ax[1].var);
    ir_expr *v = ir_var_ref(b, ax[2].var), *n = idx[0], *m = idx[1], *i = idx[2], *j = idx[3];
    int64_t m_per_g = d->m / d->group, taps = d->kh * d->kw;
    ir_expr *grp = m_per_g == 1 ? m : ir_binary(b, IR_FLOORDIV, m, ir_int(b, m_per_g));
    ir_expr *c = ir_add(b, ir_mul(b, grp, ir_int(b, d->cg)), rc);
    ir_expr *og = ir_binary(b, IR_FLOORDIV, c, ir_int(b, d->c_per_og));
    ir_expr *t = ir_add(b, ir_mul(b, u, ir_int(b, d->kw)), v);
    ir_expr *ch = ir_add(b, ir_mul(b, ir_add(b, ir_mul(b, og, ir_int(b, taps)), t), ir_int(b, 2)),
                         ir_int(b, 0));
    ir_expr *oi[DC_RANK] = {n, ch, i, j};
    ir_expr *dp = ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->off, oi));
    oi[1] = ir_add(b, ch, ir_int(b, 1));
    ir_expr *dq = ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->off, oi));
    ir_expr *p0 = ir_add(b, ir_sub(b, ir_mul(b, i, ir_int(b, d->sh)), ir_int(b, d->ph)),
                         ir_mul(b, u, ir_int(b, d->dh)));
    ir_expr *q0 = ir_add(b, ir_sub(b, ir_mul(b, j, ir_int(b, d->sw)), ir_int(b, d->pw)),
                         ir_mul(b, v, ir_int(b, d->dw)));
    ir_expr *p = ir_add(b, ir_cast(b, SMELT_DT_FLOAT64, p0), dp);
    ir_expr *q = ir_add(b, ir_cast(b, SMELT_DT_FLOAT64, q0), dq);
    ir_expr *wi[DC_RANK] = {m, rc, u, v};
    ir_expr *term = ir_mul(b, ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->w, wi)),
                           dc_te_bilinear(g, s, n, c, p, q));
    if (s->mask) {
        ir_expr *mi[DC_RANK] = {n, ir_add(b, ir_mul(b, og, ir_int(b, taps)), t), i, j};
        term = ir_mul(b, term, ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->mask, mi)));
    }
    return te_reduce(g, IR_REDUCE_SUM, term, 3, ax);
}

typedef struct dc_out {
    const dc_te *s;
    const te_tensor *sum;
    smelt_dtype dt;
} dc_out;

static ir_expr *dc_out_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const dc_out *o = user;
    ir_builder *b = &g->b;
    ir_expr *v = te_read(g, o->sum, idx);
    if (o->s->b) v = ir_add(b, v, ir_cast(b, SMELT_DT_FLOAT64, te_read(g, o->s->b, &idx[1])));
    return ir_cast(b, o->dt, v);
}

static smelt_status deform_compute(op_compute_args *a)
{
    dc_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    dc_out *o = smelt_arena_alloc(&a->te->arena, sizeof *o);
    if (!s || !o) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    smelt_tensor t[5] = {{0}};
    const smelt_tensor *types[5] = {0};
    for (int i = 0; i < a->node->n_inputs && i < 5; i++) {
        if (!a->in[i]) continue;
        const ir_buffer *buf = a->in[i]->buf;
        t[i] = (smelt_tensor){.dtype = buf->dtype, .rank = buf->rank};
        for (int k = 0; k < buf->rank; k++) t[i].dims[k] = buf->shape[k];
        types[i] = &t[i];
    }
    SMELT_TRY(dc_geometry(a->ctx, a->node, types, a->node->n_inputs, &s->d));
    s->x = a->in[0];
    s->w = a->in[1];
    s->off = a->in[2];
    s->b = a->node->n_inputs > 3 ? a->in[3] : NULL;
    s->mask = a->node->n_inputs > 4 ? a->in[4] : NULL;
    const smelt_tensor *y = &a->out_type[0];
    te_tensor *sum = te_compute(a->te, "acc", SMELT_DT_FLOAT64, y->rank, y->dims, dc_sum_body, s,
                                "reduce");
    if (!sum) return smelt_ctx_status(a->ctx);
    *o = (dc_out){.s = s, .sum = sum, .dt = y->dtype};
    a->out[0] = te_compute(a->te, "y", y->dtype, y->rank, y->dims, dc_out_body, o, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_DEFORM_CONV = {
    .compute = deform_compute, .import = deform_import, .infer = deform_infer,
    .eval = deform_eval, .min_inputs = 3, .max_inputs = 5, .min_outputs = 1, .max_outputs = 1,
};
