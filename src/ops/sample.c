/* Sampling at computed positions: GridSample (opsets 16-28) and AffineGrid
 * (20-28).
 *
 * GridSample reads X (N, C, D1..Dr) at the positions of grid (N, O1..Or, r),
 * whose last axis holds normalised coordinates in reverse axis order (x of
 * the last axis first).  It follows onnx's reference implementation (after
 * PyTorch's grid_sampler): a coordinate is denormalised in the grid's type
 * (align_corners: -1..1 spans the centres of the end pixels, else their
 * outer edges), rounded half to even for nearest, moved inside the borders
 * by border/reflection padding when it lies outside them; linear takes 2
 * taps and cubic 4 taps per axis (Keys' kernel, A = -0.75), each tap
 * fetched through the padding again (zeros: 0 outside; border: clamped;
 * reflection: reflected, truncated), combined axis by axis from the last.
 * Opsets 16-19 name the modes bilinear/bicubic and take 4-D X only.
 *
 * AffineGrid builds the grid of GridSample for theta (N, 2, 3) or (N, 3, 4)
 * and size (N, C, H, W) or (N, C, D, H, W): each output position's base
 * coordinates (x, y[, z], 1) times theta's rows, computed in double.
 *
 * Both reference kernels compute in double and round once at the output;
 * the compute definitions build the same expressions in float64. */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "ops/resize.h"
#include "te/te.h"

static const smelt_dtype k_floats_16[] = {SMELT_DT_FLOAT16, SMELT_DT_FLOAT32, SMELT_DT_FLOAT64,
                                          SMELT_DT_UNDEFINED};
static const smelt_dtype k_floats_22[] = {SMELT_DT_FLOAT16, SMELT_DT_FLOAT32, SMELT_DT_FLOAT64,
                                          SMELT_DT_BFLOAT16, SMELT_DT_UNDEFINED};

static smelt_status check_float(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t, int i,
                                int64_t bf16_from, int64_t opset)
{
    char what[160];
    snprintf(what, sizeof what, "input '%s'",
             i < n->n_inputs && n->inputs[i] ? n->inputs[i]->name : "?");
    return op_check_dtype(ctx, n, t, what, opset >= bf16_from ? k_floats_22 : k_floats_16);
}

static smelt_status compute_done(op_compute_args *a, int i, te_tensor *t)
{
    a->out[i] = t;
    if (t) return SMELT_OK;
    smelt_status s = smelt_ctx_status(a->ctx);
    return s != SMELT_OK ? s : smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
}

/* v rounded to dt (float16/bfloat16 through float32), as arithmetic in dt rounds. */
static double round_to(smelt_dtype dt, double v)
{
    switch (dt) {
    case SMELT_DT_FLOAT32: return (float)v;
    case SMELT_DT_FLOAT16: return smelt_f16_to_f32(smelt_f32_to_f16((float)v));
    case SMELT_DT_BFLOAT16: return smelt_bf16_to_f32(smelt_f32_to_bf16((float)v));
    default: return v;
    }
}

static ir_expr *f64(ir_builder *b, double v) { return ir_const_float(b, SMELT_DT_FLOAT64, v); }

/* ==== GridSample ================================================================= */

typedef enum gs_mode { GS_LINEAR, GS_NEAREST, GS_CUBIC } gs_mode;
typedef enum gs_pad { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_pad;
/* Keys' coefficient of GridSample's cubic mode (PyTorch's and onnx's) */
#define GS_CUBIC_A (-0.75)

typedef struct op_grid_sample_attrs {
    gs_mode mode;
    gs_pad pad;
    bool align_corners;
    int64_t opset;
} op_grid_sample_attrs;

OP_ATTRS(GRID_SAMPLE) = {
    {"align_corners", 0, 0}, {"mode", 0, 0}, {"padding_mode", 0, 0}, {NULL, 0, 0}};

static smelt_status gs_parse_mode(smelt_ctx *ctx, const gr_node *node, int64_t opset,
                                  gs_mode *out)
{
    bool old = opset < 20; /* GridSample-16 names the modes after 2-D */
    const char *m, *lin = old ? "bilinear" : "linear", *cub = old ? "bicubic" : "cubic";
    SMELT_TRY(op_attr_string(ctx, node, "mode", lin, &m));
    if (strcmp(m, lin) == 0) *out = GS_LINEAR;
    else if (strcmp(m, "nearest") == 0) *out = GS_NEAREST;
    else if (strcmp(m, cub) == 0) *out = GS_CUBIC;
    else
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'mode' is \"%s\"; expected \"%s\", \"nearest\" or \"%s\"", m,
                       lin, cub);
    return SMELT_OK;
}

static smelt_status grid_sample_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_grid_sample_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    a->opset = g->opset;
    SMELT_TRY(gs_parse_mode(ctx, node, g->opset, &a->mode));
    const char *p;
    SMELT_TRY(op_attr_string(ctx, node, "padding_mode", "zeros", &p));
    if (strcmp(p, "zeros") == 0) a->pad = GS_ZEROS;
    else if (strcmp(p, "border") == 0) a->pad = GS_BORDER;
    else if (strcmp(p, "reflection") == 0) a->pad = GS_REFLECTION;
    else
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'padding_mode' is \"%s\"; expected \"zeros\", \"border\" or "
                       "\"reflection\"",
                       p);
    return op_attr_bool(ctx, node, "align_corners", false, &a->align_corners);
}

static smelt_status grid_sample_infer(smelt_ctx *ctx, const gr_node *node,
                                      const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_grid_sample_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *grid = in[1];
    SMELT_TRY(check_float(ctx, node, x, 0, 22, a->opset));
    SMELT_TRY(check_float(ctx, node, grid, 1, 22, a->opset));
    int r = x->rank - 2;
    if (x->rank < 3 || (a->opset < 20 && x->rank != 4))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "X has rank %d; expected %s", x->rank,
                       a->opset < 20 ? "4 before opset 20" : "at least 3");
    if (grid->rank != x->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "grid has rank %d; expected X's rank %d",
                       grid->rank, x->rank);
    int64_t last = grid->dims[grid->rank - 1];
    if (last >= 0 && last != r)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "grid's last dim is %lld; expected %d (X's spatial rank)", (long long)last,
                       r);
    if (x->dims[0] >= 0 && grid->dims[0] >= 0 && x->dims[0] != grid->dims[0])
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "grid's batch is %lld; X's is %lld",
                       (long long)grid->dims[0], (long long)x->dims[0]);
    out[0].dtype = x->dtype;
    out[0].rank = x->rank;
    out[0].dims[0] = x->dims[0];
    out[0].dims[1] = x->dims[1];
    for (int d = 0; d < r; d++) out[0].dims[2 + d] = grid->dims[1 + d];
    return SMELT_OK;
}

/* -- reference -- */

/* The borders a coordinate of an axis of len pixels is kept within. */
static void gs_bounds(int64_t len, bool align, double *lo, double *hi)
{
    *lo = align ? 0.0 : -0.5;
    *hi = align ? (double)len - 1.0 : (double)len - 0.5;
}

/* x reflected at the nearer border until inside [lo, hi] (onnx's _gs_reflect);
 * a one-pixel axis with align_corners has no room: lo. */
static double gs_reflect(double x, double lo, double hi)
{
    double rng = hi - lo;
    if (rng <= 0.0) return lo;
    if (!(x < lo) && !(x > hi)) return x;
    double dx = x < lo ? lo - x : x - hi;
    double n = floor(dx / rng), r = dx - n * rng;
    bool even = n - 2.0 * floor(n * 0.5) == 0.0;
    if (x < lo) return even ? lo + r : hi - r;
    return even ? hi - r : lo + r;
}

/* The normalised coordinate g of an axis of len pixels in pixel units,
 * computed in the grid's type gt. */
static double gs_denorm(smelt_dtype gt, double g, int64_t len, bool align)
{
    double p1 = round_to(gt, g + 1.0);
    if (align) return round_to(gt, round_to(gt, p1 / 2.0) * (double)(len - 1));
    return round_to(gt, round_to(gt, p1 * (double)len - 1.0) / 2.0);
}

/* The coordinate after nearest's rounding and the coordinate padding. */
static double gs_coord(const op_grid_sample_attrs *a, smelt_dtype gt, double g, int64_t len)
{
    double lo, hi, x = gs_denorm(gt, g, len, a->align_corners);
    gs_bounds(len, a->align_corners, &lo, &hi);
    if (a->mode == GS_NEAREST) x = nearbyint(x);
    if (x < lo || x > hi) {
        if (a->pad == GS_BORDER) x = x < 0.0 ? 0.0 : x > (double)(len - 1) ? (double)(len - 1) : x;
        else if (a->pad == GS_REFLECTION) x = gs_reflect(x, lo, hi);
    }
    return x;
}

typedef struct gs_taps {
    int n;
    int64_t idx[4];
    bool valid[4];
    double w[4];
} gs_taps;

/* A tap at position p (a whole number, or a padded nearest coordinate)
 * through the padding: its index inside the axis and whether it reads X. */
static void gs_fetch(const op_grid_sample_attrs *a, double p, int64_t len, int64_t *idx,
                     bool *valid)
{
    double lo, hi;
    gs_bounds(len, a->align_corners, &lo, &hi);
    double q = a->pad == GS_REFLECTION ? gs_reflect(p, lo, hi) : p;
    *valid = a->pad != GS_ZEROS || (q >= 0.0 && q < (double)len);
    double c = q >= 0.0 ? q : 0.0; /* NaN goes to 0 as well */
    c = c <= (double)(len - 1) ? c : (double)(len - 1);
    *idx = (int64_t)c;
}

static void gs_make_taps(const op_grid_sample_attrs *a, double x, int64_t len, gs_taps *t)
{
    if (a->mode == GS_NEAREST) {
        t->n = 1;
        t->w[0] = 1.0;
        gs_fetch(a, x, len, &t->idx[0], &t->valid[0]);
        return;
    }
    double x0 = floor(x), frac = x - x0;
    int first = a->mode == GS_LINEAR ? 0 : -1;
    if (a->mode == GS_LINEAR) {
        t->n = 2;
        t->w[0] = 1.0 - frac;
        t->w[1] = frac;
    } else {
        t->n = 4;
        op_cubic_weights(frac, GS_CUBIC_A, t->w);
    }
    for (int k = 0; k < t->n; k++) gs_fetch(a, x0 + first + k, len, &t->idx[k], &t->valid[k]);
}

typedef struct gs_eval {
    const op_grid_sample_attrs *a;
    const smelt_tensor *x;
    gs_taps taps[SMELT_MAX_RANK];
    int r;
} gs_eval;

/* Sum over axis d's taps of weight x the interpolation over the axes after
 * d; off: X's offset so far, valid: every tap so far reads X. */
static double gs_interp(const gs_eval *e, int d, int64_t off, bool valid)
{
    if (d == e->r) return valid ? op_get_f64(e->x, off) : 0.0;
    const gs_taps *t = &e->taps[d];
    int64_t stride = 1;
    for (int k = d + 1; k < e->r; k++) stride *= e->x->dims[2 + k];
    double acc = 0.0;
    for (int k = 0; k < t->n; k++) {
        double v = gs_interp(e, d + 1, off + t->idx[k] * stride, valid && t->valid[k]);
        if (t->n == 1) return v;
        acc = k == 0 ? t->w[k] * v : acc + t->w[k] * v;
    }
    return acc;
}

static smelt_status grid_sample_eval(smelt_ctx *ctx, const gr_node *node,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx;
    gs_eval e = {.a = node->op_attrs, .x = in[0], .r = in[0]->rank - 2};
    const smelt_tensor *grid = in[1];
    smelt_tensor *y = &out[0];
    int64_t n_pos = 1, plane = 1;
    for (int d = 0; d < e.r; d++) n_pos *= y->dims[2 + d], plane *= e.x->dims[2 + d];
    for (int64_t n = 0; n < y->dims[0]; n++) {
        for (int64_t p = 0; p < n_pos; p++) {
            const int64_t g0 = (n * n_pos + p) * e.r;
            for (int d = 0; d < e.r; d++) {
                int64_t len = e.x->dims[2 + d];
                double g = op_get_f64(grid, g0 + (e.r - 1 - d));
                gs_make_taps(e.a, gs_coord(e.a, grid->dtype, g, len), len, &e.taps[d]);
            }
            for (int64_t c = 0; c < y->dims[1]; c++) {
                int64_t base = (n * y->dims[1] + c) * plane;
                op_set_f64(y, (n * y->dims[1] + c) * n_pos + p, gs_interp(&e, 0, base, true));
            }
        }
    }
    return SMELT_OK;
}

/* -- compute: stage coord [N, O1..Or, r] holds each axis's padded
 * coordinate, stages tap_idx / tap_w [N, O1..Or, r, T] each tap's index
 * (-1: reads 0) and weight, and y the interpolation reading them (one
 * expression would repeat the coordinate in every tap of every axis). -- */

typedef struct gs_te {
    const op_grid_sample_attrs *a;
    const te_tensor *x, *grid, *coord, *idx, *w;
    int r, taps;
} gs_te;

static ir_expr *te_clamp(ir_builder *b, ir_expr *v, double lo, double hi)
{
    v = ir_select(b, ir_binary(b, IR_GE, v, f64(b, lo)), v, f64(b, lo)); /* NaN -> lo */
    return ir_select(b, ir_binary(b, IR_LE, v, f64(b, hi)), v, f64(b, hi));
}

static ir_expr *te_floor(ir_builder *b, ir_expr *v)
{
    return ir_call(b, IR_CALL_FLOOR, SMELT_DT_FLOAT64, 1, &v);
}

static ir_expr *te_even(ir_builder *b, ir_expr *n)
{
    ir_expr *half = te_floor(b, ir_mul(b, n, f64(b, 0.5)));
    return ir_binary(b, IR_EQ, ir_sub(b, n, ir_mul(b, f64(b, 2.0), half)), f64(b, 0.0));
}

/* gs_reflect as an expression. */
static ir_expr *te_reflect(ir_builder *b, ir_expr *x, double lo, double hi)
{
    double rng = hi - lo;
    if (rng <= 0.0) return f64(b, lo);
    ir_expr *below = ir_binary(b, IR_LT, x, f64(b, lo));
    ir_expr *above = ir_binary(b, IR_GT, x, f64(b, hi));
    ir_expr *dx = ir_select(b, below, ir_sub(b, f64(b, lo), x), ir_sub(b, x, f64(b, hi)));
    ir_expr *n = te_floor(b, ir_binary(b, IR_DIV, dx, f64(b, rng)));
    ir_expr *r = ir_sub(b, dx, ir_mul(b, n, f64(b, rng)));
    ir_expr *even = te_even(b, n);
    ir_expr *from_lo = ir_add(b, f64(b, lo), r), *from_hi = ir_sub(b, f64(b, hi), r);
    ir_expr *moved = ir_select(b, below, ir_select(b, even, from_lo, from_hi),
                               ir_select(b, even, from_hi, from_lo));
    return ir_select(b, ir_binary(b, IR_OR, below, above), moved, x);
}

/* gs_coord as an expression: the denormalisation in the grid's type gt. */
static ir_expr *te_coord(ir_builder *b, const op_grid_sample_attrs *a, ir_expr *g, int64_t len)
{
    smelt_dtype gt = g->dtype;
    ir_expr *p1 = ir_add(b, g, ir_const_float(b, gt, 1.0)), *x;
    if (a->align_corners)
        x = ir_mul(b, ir_binary(b, IR_DIV, p1, ir_const_float(b, gt, 2.0)),
                   ir_const_float(b, gt, (double)(len - 1)));
    else
        x = ir_binary(b, IR_DIV,
                      ir_sub(b, ir_mul(b, p1, ir_const_float(b, gt, (double)len)),
                             ir_const_float(b, gt, 1.0)),
                      ir_const_float(b, gt, 2.0));
    x = ir_cast(b, SMELT_DT_FLOAT64, x);
    if (a->mode == GS_NEAREST) x = ir_call(b, IR_CALL_ROUND, SMELT_DT_FLOAT64, 1, &x);
    if (a->pad == GS_ZEROS) return x;
    double lo, hi;
    gs_bounds(len, a->align_corners, &lo, &hi);
    ir_expr *outside = ir_binary(b, IR_OR, ir_binary(b, IR_LT, x, f64(b, lo)),
                                 ir_binary(b, IR_GT, x, f64(b, hi)));
    ir_expr *moved = a->pad == GS_BORDER ? te_clamp(b, x, 0.0, (double)(len - 1))
                                         : te_reflect(b, x, lo, hi);
    return ir_select(b, outside, moved, x);
}

static ir_expr *gs_coord_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gs_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *gi[SMELT_MAX_RANK];
    for (int j = 0; j <= s->r; j++) gi[j] = idx[j];
    /* axis d reads grid component r - 1 - d: one select over the axes */
    ir_expr *v = NULL;
    for (int d = s->r - 1; d >= 0; d--) {
        gi[s->r + 1] = ir_int(b, s->r - 1 - d);
        ir_expr *c = te_coord(b, s->a, te_read(g, s->grid, gi), s->x->buf->shape[2 + d]);
        v = v ? ir_select(b, ir_binary(b, IR_EQ, idx[s->r + 1], ir_int(b, d)), c, v) : c;
    }
    return v;
}

/* The tap's position along axis d (of len pixels) from the coordinate c. */
static ir_expr *gs_tap_pos(ir_builder *b, const gs_te *s, ir_expr *c, ir_expr *k)
{
    if (s->a->mode == GS_NEAREST) return c;
    ir_expr *first = f64(b, s->a->mode == GS_LINEAR ? 0.0 : -1.0);
    return ir_add(b, ir_add(b, te_floor(b, c), first), ir_cast(b, SMELT_DT_FLOAT64, k));
}

/* gs_fetch as an expression: the tap's index, -1 when it reads 0. */
static ir_expr *gs_tap_index(ir_builder *b, const gs_te *s, ir_expr *p, int64_t len)
{
    double lo, hi;
    gs_bounds(len, s->a->align_corners, &lo, &hi);
    ir_expr *q = s->a->pad == GS_REFLECTION ? te_reflect(b, p, lo, hi) : p;
    ir_expr *i = ir_cast(b, SMELT_DT_INT64, te_clamp(b, q, 0.0, (double)(len - 1)));
    if (s->a->pad != GS_ZEROS) return i;
    ir_expr *valid = ir_binary(b, IR_AND, ir_binary(b, IR_GE, q, f64(b, 0.0)),
                               ir_binary(b, IR_LT, q, f64(b, (double)len)));
    return ir_select(b, valid, i, ir_int(b, -1));
}

static ir_expr *gs_idx_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gs_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *ci[SMELT_MAX_RANK];
    for (int j = 0; j <= s->r + 1; j++) ci[j] = idx[j];
    ir_expr *c = te_read(g, s->coord, ci);
    ir_expr *v = NULL;
    for (int d = s->r - 1; d >= 0; d--) { /* the axis's length is a constant per axis */
        ir_expr *t = gs_tap_index(b, s, gs_tap_pos(b, s, c, idx[s->r + 2]),
                                  s->x->buf->shape[2 + d]);
        v = v ? ir_select(b, ir_binary(b, IR_EQ, idx[s->r + 1], ir_int(b, d)), t, v) : t;
    }
    return v;
}

/* Keys' weight of tap k (0..3) at fraction t, as op_cubic_weights: the
 * outer piece at t + 1 and 2 - t, the inner one at t and 1 - t. */
static ir_expr *gs_cubic_w(ir_builder *b, ir_expr *t, int k)
{
    ir_expr *one = f64(b, 1.0);
    ir_expr *d = k == 0 ? ir_add(b, t, one) : k == 1 ? t : k == 2 ? ir_sub(b, one, t)
                                                           : ir_sub(b, f64(b, 2.0), t);
    return op_te_cubic(b, GS_CUBIC_A, d, k == 1 || k == 2);
}

static ir_expr *gs_w_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gs_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *ci[SMELT_MAX_RANK];
    for (int j = 0; j <= s->r + 1; j++) ci[j] = idx[j];
    ir_expr *c = te_read(g, s->coord, ci);
    ir_expr *t = ir_sub(b, c, te_floor(b, c)), *k = idx[s->r + 2];
    if (s->a->mode == GS_LINEAR) /* 1 - t, t */
        return ir_select(b, ir_binary(b, IR_EQ, k, ir_int(b, 0)), ir_sub(b, f64(b, 1.0), t), t);
    ir_expr *v = gs_cubic_w(b, t, 3);
    for (int j = 2; j >= 0; j--)
        v = ir_select(b, ir_binary(b, IR_EQ, k, ir_int(b, j)), gs_cubic_w(b, t, j), v);
    return v;
}

typedef struct gs_interp_te {
    ir_expr *xi[SMELT_MAX_RANK], *ti[SMELT_MAX_RANK + 1];
} gs_interp_te;

/* gs_interp as an expression over the tap stages; valid: every tap so far
 * reads X (NULL: no zeros padding). */
static ir_expr *te_interp(te_graph *g, const gs_te *s, gs_interp_te *e, int d, ir_expr *valid)
{
    ir_builder *b = &g->b;
    if (d == s->r) {
        ir_expr *v = ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->x, e->xi));
        return valid ? ir_select(b, valid, v, f64(b, 0.0)) : v;
    }
    ir_expr *acc = NULL;
    for (int k = 0; k < s->taps; k++) {
        e->ti[s->r + 1] = ir_int(b, d);
        e->ti[s->r + 2] = ir_int(b, k);
        ir_expr *i = te_read(g, s->idx, e->ti), *vk = valid;
        if (s->a->pad == GS_ZEROS) {
            ir_expr *ok = ir_binary(b, IR_GE, i, ir_int(b, 0));
            vk = valid ? ir_binary(b, IR_AND, valid, ok) : ok;
            i = ir_binary(b, IR_MAX, i, ir_int(b, 0));
        }
        ir_expr *w = s->taps > 1 ? te_read(g, s->w, e->ti) : NULL;
        e->xi[2 + d] = i;
        ir_expr *v = te_interp(g, s, e, d + 1, vk);
        if (!w) return v;
        v = ir_mul(b, w, v);
        acc = acc ? ir_add(b, acc, v) : v;
    }
    return acc;
}

static ir_expr *grid_sample_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gs_te *s = user;
    gs_interp_te e;
    e.xi[0] = idx[0];
    e.xi[1] = idx[1];
    e.ti[0] = idx[0];
    for (int d = 0; d < s->r; d++) e.ti[1 + d] = idx[2 + d];
    return ir_cast(&g->b, s->x->buf->dtype, te_interp(g, s, &e, 0, NULL));
}

static smelt_status grid_sample_compute(op_compute_args *a)
{
    gs_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    const op_grid_sample_attrs *at = a->node->op_attrs;
    *s = (gs_te){.a = at, .x = a->in[0], .grid = a->in[1], .r = a->in[0]->n_axes - 2,
                 .taps = at->mode == GS_NEAREST ? 1 : at->mode == GS_LINEAR ? 2 : 4};
    const smelt_tensor *o = &a->out_type[0];
    int64_t shape[SMELT_MAX_RANK + 1];
    shape[0] = o->dims[0];
    for (int d = 0; d < s->r; d++) shape[1 + d] = o->dims[2 + d];
    shape[s->r + 1] = s->r;
    shape[s->r + 2] = s->taps;
    te_graph *g = a->te;
    if (!(s->coord = te_compute(g, "coord", SMELT_DT_FLOAT64, s->r + 2, shape, gs_coord_body, s,
                                "injective")) ||
        !(s->idx = te_compute(g, "tap_idx", SMELT_DT_INT64, s->r + 3, shape, gs_idx_body, s,
                              "injective")) ||
        (s->taps > 1 && !(s->w = te_compute(g, "tap_w", SMELT_DT_FLOAT64, s->r + 3, shape,
                                            gs_w_body, s, "injective"))))
        return compute_done(a, 0, NULL);
    return compute_done(a, 0,
                        te_compute(g, "y", o->dtype, o->rank, o->dims, grid_sample_body, s,
                                   "injective"));
}

const op_def op_def_GRID_SAMPLE = {
    .compute = grid_sample_compute, .import = grid_sample_import, .infer = grid_sample_infer,
    .eval = grid_sample_eval, .min_inputs = 2, .max_inputs = 2, .min_outputs = 1,
    .max_outputs = 1,
};

/* ==== AffineGrid ================================================================= */

typedef struct op_affine_grid_attrs {
    bool align_corners;
} op_affine_grid_attrs;

OP_ATTRS(AFFINE_GRID) = {{"align_corners", 0, 0}, {NULL, 0, 0}};

static smelt_status affine_grid_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_affine_grid_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    return op_attr_bool(ctx, node, "align_corners", false, &a->align_corners);
}

static smelt_status affine_grid_infer(smelt_ctx *ctx, const gr_node *node,
                                      const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *theta = in[0], *size = in[1];
    SMELT_TRY(check_float(ctx, node, theta, 0, 20, 20));
    static const smelt_dtype k_i64[] = {SMELT_DT_INT64, SMELT_DT_UNDEFINED};
    SMELT_TRY(op_check_dtype(ctx, node, size, "input 'size'", k_i64));
    if (size->rank != 1 || (size->dims[0] >= 0 && size->dims[0] != 4 && size->dims[0] != 5))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "size must be a 1-D tensor of 4 or 5 values");
    int r = size->dims[0] >= 0 ? (int)size->dims[0] - 2 : -1;
    if (theta->rank != 3)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "theta has rank %d; expected 3", theta->rank);
    if (r < 0) r = theta->dims[1] >= 0 ? (int)theta->dims[1] : -1;
    if (r != 2 && r != 3)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                       "the number of spatial dims is not known (size's length and theta's "
                       "shape are symbolic)");
    if ((theta->dims[1] >= 0 && theta->dims[1] != r) ||
        (theta->dims[2] >= 0 && theta->dims[2] != r + 1))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "theta has shape (N, %lld, %lld); expected (N, %d, %d) for %d spatial dims",
                       (long long)theta->dims[1], (long long)theta->dims[2], r, r + 1, r);
    out[0].dtype = theta->dtype;
    out[0].rank = r + 2;
    out[0].dims[0] = theta->dims[0];
    for (int d = 0; d < r; d++) out[0].dims[1 + d] = GR_DIM_UNKNOWN;
    out[0].dims[r + 1] = r;
    if (size->data) {
        for (int d = 0; d < r; d++) {
            int64_t v = op_get_i64(size, 2 + d);
            if (v < 0)
                return op_errf(ctx, node, SMELT_ERR_SHAPE, "size[%d] is %lld; expected >= 0",
                               2 + d, (long long)v);
            out[0].dims[1 + d] = v;
        }
        int64_t n = op_get_i64(size, 0);
        if (theta->dims[0] >= 0 && n != theta->dims[0])
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "size[0] is %lld; theta's batch is %lld",
                           (long long)n, (long long)theta->dims[0]);
    }
    return SMELT_OK;
}

/* The base coordinate of position i along an axis of len pixels. */
static double ag_base(int64_t i, int64_t len, bool align)
{
    if (align) return len > 1 ? -1.0 + (double)i * (2.0 / (double)(len - 1)) : -1.0;
    double step = 2.0 / (double)len;
    return -1.0 + step / 2.0 + (double)i * step;
}

static smelt_status affine_grid_eval(smelt_ctx *ctx, const gr_node *node,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx;
    const op_affine_grid_attrs *a = node->op_attrs;
    const smelt_tensor *theta = in[0];
    smelt_tensor *y = &out[0];
    int r = y->rank - 2;
    int64_t idx[SMELT_MAX_RANK] = {0}, n = op_numel(y);
    for (int64_t i = 0; i < n; i++, op_next_index(idx, y->dims, y->rank)) {
        int64_t k = idx[r + 1], row = (idx[0] * r + k) * (r + 1);
        double acc = 0.0;
        for (int j = 0; j < r; j++) { /* component j: x of the last axis first */
            int d = r - 1 - j;
            acc += op_get_f64(theta, row + j) * ag_base(idx[1 + d], y->dims[1 + d], a->align_corners);
        }
        op_set_f64(y, i, acc + op_get_f64(theta, row + r));
    }
    return SMELT_OK;
}

typedef struct ag_te {
    const op_affine_grid_attrs *a;
    const te_tensor *theta;
    const int64_t *dims;
    int r;
} ag_te;

static ir_expr *te_base(ir_builder *b, ir_expr *i, int64_t len, bool align)
{
    ir_expr *fi = ir_cast(b, SMELT_DT_FLOAT64, i);
    if (align)
        return len > 1 ? ir_add(b, f64(b, -1.0), ir_mul(b, fi, f64(b, 2.0 / (double)(len - 1))))
                       : f64(b, -1.0);
    double step = 2.0 / (double)len;
    return ir_add(b, f64(b, -1.0 + step / 2.0), ir_mul(b, fi, f64(b, step)));
}

static ir_expr *affine_grid_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const ag_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *ti[3] = {idx[0], idx[s->r + 1], NULL}, *acc = f64(b, 0.0);
    for (int j = 0; j < s->r; j++) {
        int d = s->r - 1 - j;
        ti[2] = ir_int(b, j);
        ir_expr *t = ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->theta, ti));
        acc = ir_add(b, acc, ir_mul(b, t, te_base(b, idx[1 + d], s->dims[1 + d], s->a->align_corners)));
    }
    ti[2] = ir_int(b, s->r);
    acc = ir_add(b, acc, ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->theta, ti)));
    return ir_cast(b, s->theta->buf->dtype, acc);
}

static smelt_status affine_grid_compute(op_compute_args *a)
{
    ag_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    const smelt_tensor *o = &a->out_type[0];
    *s = (ag_te){.a = a->node->op_attrs, .theta = a->in[0], .dims = o->dims, .r = o->rank - 2};
    return compute_done(a, 0,
                        te_compute(a->te, "grid", o->dtype, o->rank, o->dims, affine_grid_body, s,
                                   "injective"));
}

const op_def op_def_AFFINE_GRID = {
    .compute = affine_grid_compute, .import = affine_grid_import, .infer = affine_grid_infer,
    .eval = affine_grid_eval, .min_inputs = 2, .max_inputs = 2, .min_outputs = 1,
    .max_outputs = 1,
};

/* ==== RoiAlign ==================================================================== */

/* RoiAlign (opsets 10-28) after onnx's reference (and ONNX Runtime's
 * kernel): each bin of a region of interest averages (or takes the maximum
 * of) grid_h x grid_w bilinear samples, grid = sampling_ratio, or when it is
 * 0 ceil(roi size / bins), which depends on the data.  A sample more than
 * one pixel outside the image is 0; max mode takes the maximum of the four
 * weighted corners, as the reference does.  Opsets 10-15 have no
 * coordinate_transformation_mode and behave as output_half_pixel. */

/* per bin: a region's size over its bins when sampling_ratio is 0 (a bad
 * region must not make the reference loop for hours) */
#define ROI_MAX_SAMPLES (1 << 24)

typedef struct op_roi_align_attrs {
    bool max, half_pixel;
    int64_t out_h, out_w, sampling_ratio, opset;
    float spatial_scale;
} op_roi_align_attrs;

OP_ATTRS(ROI_ALIGN) = {{"coordinate_transformation_mode", 16, 0},
                       {"mode", 0, 0},
                       {"output_height", 0, 0},
                       {"output_width", 0, 0},
                       {"sampling_ratio", 0, 0},
                       {"spatial_scale", 0, 0},
                       {NULL, 0, 0}};

static smelt_status roi_align_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_roi_align_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    const char *m, *c;
    SMELT_TRY(op_attr_string(ctx, node, "mode", "avg", &m));
    if (strcmp(m, "avg") != 0 && strcmp(m, "max") != 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'mode' is \"%s\"; expected \"avg\" or \"max\"", m);
    a->max = strcmp(m, "max") == 0;
    a->opset = g->opset;
    SMELT_TRY(op_attr_string(ctx, node, "coordinate_transformation_mode",
                             g->opset >= 16 ? "half_pixel" : "output_half_pixel", &c));
    if (strcmp(c, "half_pixel") != 0 && strcmp(c, "output_half_pixel") != 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'coordinate_transformation_mode' is \"%s\"; expected "
                       "\"half_pixel\" or \"output_half_pixel\"",
                       c);
    a->half_pixel = strcmp(c, "half_pixel") == 0;
    SMELT_TRY(op_attr_int(ctx, node, "output_height", 1, &a->out_h));
    SMELT_TRY(op_attr_int(ctx, node, "output_width", 1, &a->out_w));
    SMELT_TRY(op_attr_int(ctx, node, "sampling_ratio", 0, &a->sampling_ratio));
    SMELT_TRY(op_attr_float(ctx, node, "spatial_scale", 1.0f, &a->spatial_scale));
    if (a->out_h < 1 || a->out_w < 1)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'output_height'/'output_width' is %lld x %lld; expected >= 1",
                       (long long)a->out_h, (long long)a->out_w);
    if (a->sampling_ratio < 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'sampling_ratio' is %lld; expected >= 0",
                       (long long)a->sampling_ratio);
    return SMELT_OK;
}

static smelt_status roi_align_infer(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_roi_align_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *rois = in[1], *bi = in[2];
    SMELT_TRY(check_float(ctx, node, x, 0, 22, a->opset));
    SMELT_TRY(check_float(ctx, node, rois, 1, 22, a->opset));
    static const smelt_dtype k_i64[] = {SMELT_DT_INT64, SMELT_DT_UNDEFINED};
    SMELT_TRY(op_check_dtype(ctx, node, bi, "input 'batch_indices'", k_i64));
    if (x->rank != 4 || rois->rank != 2 || bi->rank != 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "X, rois and batch_indices have ranks %d, %d, %d; expected 4, 2, 1",
                       x->rank, rois->rank, bi->rank);
    if (rois->dims[1] >= 0 && rois->dims[1] != 4)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "rois has %lld columns; expected 4",
                       (long long)rois->dims[1]);
    if (rois->dims[0] >= 0 && bi->dims[0] >= 0 && rois->dims[0] != bi->dims[0])
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "rois has %lld rows, batch_indices %lld",
                       (long long)rois->dims[0], (long long)bi->dims[0]);
    out[0].dtype = x->dtype;
    out[0].rank = 4;
    out[0].dims[0] = bi->dims[0];
    out[0].dims[1] = x->dims[1];
    out[0].dims[2] = a->out_h;
    out[0].dims[3] = a->out_w;
    return SMELT_OK;
}

/* One region's geometry along an axis: its start, bin size and samples per bin. */
typedef struct roi_axis {
    double start, bin;
    int64_t grid;
} roi_axis;

static roi_axis roi_axis_of(const op_roi_align_attrs *a, double lo, double hi, int64_t bins)
{
    double off = a->half_pixel ? 0.5 : 0.0, scale = a->spatial_scale;
    roi_axis r = {.start = lo * scale - off};
    double size = (hi * scale - off) - r.start;
    if (!a->half_pixel) size = size > 1.0 ? size : 1.0;
    r.bin = size / (double)bins;
    double g = a->sampling_ratio > 0 ? (double)a->sampling_ratio : ceil(size / (double)bins);
    r.grid = g >= 0.0 ? (g < 1e9 ? (int64_t)g : (int64_t)1e9) : 0; /* NaN -> 0 */
    return r;
}

/* A sample's position along an axis of len pixels: its low index and weight
 * of the high one (lerp), clamped as the reference does; false when the
 * sample lies more than a pixel outside. */
static bool roi_sample(double p, int64_t len, int64_t *low, int64_t *high, double *l)
{
    if (!(p >= -1.0 && p <= (double)len)) return false;
    p = p > 0.0 ? p : 0.0;
    double f = floor(p);
    if (f >= (double)(len - 1)) {
        *low = *high = len - 1;
        *l = 0.0;
    } else {
        *low = (int64_t)f;
        *high = *low + 1;
        *l = p - f;
    }
    return true;
}

static smelt_status roi_batch_index(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *bi,
                                    int64_t r, int64_t n, int64_t *out)
{
    *out = op_get_i64(bi, r);
    if (*out < 0 || *out >= n)
        return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                       "batch index %lld at position %lld is out of range for %lld images",
                       (long long)*out, (long long)r, (long long)n);
    return SMELT_OK;
}

/* The bin (ph, pw) of channel plane `plane` of region geometry ry, rx. */
static double roi_bin(const op_roi_align_attrs *a, const smelt_tensor *x, int64_t plane,
                      const roi_axis *ry, const roi_axis *rx, int64_t ph, int64_t pw)
{
    int64_t h = x->dims[2], w = x->dims[3];
    double acc = 0.0;
    bool any = false;
    for (int64_t iy = 0; iy < ry->grid; iy++) {
        double py = ry->start + (double)ph * ry->bin + ((double)iy + 0.5) * ry->bin / (double)ry->grid;
        for (int64_t ix = 0; ix < rx->grid; ix++) {
            double px = rx->start + (double)pw * rx->bin + ((double)ix + 0.5) * rx->bin / (double)rx->grid;
            int64_t y0, y1, x0, x1;
            double ly, lx, v[4] = {0, 0, 0, 0};
            if (roi_sample(py, h, &y0, &y1, &ly) && roi_sample(px, w, &x0, &x1, &lx)) {
                double hy = 1.0 - ly, hx = 1.0 - lx;
                v[0] = hy * hx * op_get_f64(x, plane + y0 * w + x0);
                v[1] = hy * lx * op_get_f64(x, plane + y0 * w + x1);
                v[2] = ly * hx * op_get_f64(x, plane + y1 * w + x0);
                v[3] = ly * lx * op_get_f64(x, plane + y1 * w + x1);
            }
            if (!a->max) {
                acc += v[0] + v[1] + v[2] + v[3];
                continue;
            }
            double m = v[0];
            for (int k = 1; k < 4; k++) m = v[k] > m ? v[k] : m;
            acc = any && !(m > acc) ? acc : m;
            any = true;
        }
    }
    if (a->max) return acc;
    int64_t count = ry->grid * rx->grid;
    return acc / (double)(count > 1 ? count : 1);
}

static smelt_status roi_align_eval(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_roi_align_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *rois = in[1], *bi = in[2];
    smelt_tensor *y = &out[0];
    int64_t c_n = x->dims[1], plane = x->dims[2] * x->dims[3];
    for (int64_t r = 0; r < y->dims[0]; r++) {
        int64_t b;
        SMELT_TRY(roi_batch_index(ctx, node, bi, r, x->dims[0], &b));
        roi_axis rx = roi_axis_of(a, op_get_f64(rois, r * 4 + 0), op_get_f64(rois, r * 4 + 2), a->out_w);
        roi_axis ry = roi_axis_of(a, op_get_f64(rois, r * 4 + 1), op_get_f64(rois, r * 4 + 3), a->out_h);
        if ((double)ry.grid * (double)rx.grid > (double)ROI_MAX_SAMPLES)
            return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                           "region %lld needs %lld x %lld samples per bin; at most %d are taken",
                           (long long)r, (long long)ry.grid, (long long)rx.grid, ROI_MAX_SAMPLES);
        for (int64_t c = 0; c < c_n; c++)
            for (int64_t ph = 0; ph < a->out_h; ph++)
                for (int64_t pw = 0; pw < a->out_w; pw++)
                    op_set_f64(y, ((r * c_n + c) * a->out_h + ph) * a->out_w + pw,
                               roi_bin(a, x, (b * c_n + c) * plane, &ry, &rx, ph, pw));
    }
    return SMELT_OK;
}

/* -- compute: stage acc reduces the bin's samples (a data-dependent count
 * when sampling_ratio is 0: the reduction runs to a bound and masks the
 * rest; a check stage refuses regions needing more), stage y divides. -- */

typedef struct roi_te_axis {
    ir_expr *start, *bin, *grid; /* grid: float64, a whole number */
} roi_te_axis;

typedef struct roi_te {
    const op_roi_align_attrs *a;
    const te_tensor *x, *rois, *bi, *acc;
    int64_t bound_h, bound_w; /* the reduction's extents */
    /* per axis (0: y, 1: x), per region, bin and sample: the low pixel
     * (ROI_OUTSIDE, ROI_PAST_GRID) and the weight of the high one */
    const te_tensor *low[2], *l[2];
} roi_te;

/* A sample more than a pixel outside the image (value 0), and one past the
 * region's grid (sampling_ratio 0: adds nothing). */
#define ROI_OUTSIDE (-1)
#define ROI_PAST_GRID (-2)

static ir_expr *roi_read(te_graph *g, const roi_te *s, ir_expr *r, int col)
{
    ir_expr *i[2] = {r, ir_int(&g->b, col)};
    return ir_cast(&g->b, SMELT_DT_FLOAT64, te_read(g, s->rois, i));
}

static roi_te_axis roi_te_axis_of(te_graph *g, const roi_te *s, ir_expr *r, int col, int64_t bins)
{
    ir_builder *b = &g->b;
    const op_roi_align_attrs *a = s->a;
    ir_expr *scale = f64(b, (double)a->spatial_scale), *off = f64(b, a->half_pixel ? 0.5 : 0.0);
    roi_te_axis t;
    t.start = ir_sub(b, ir_mul(b, roi_read(g, s, r, col), scale), off);
    ir_expr *size = ir_sub(b, ir_sub(b, ir_mul(b, roi_read(g, s, r, col + 2), scale), off), t.start);
    if (!a->half_pixel)
        size = ir_select(b, ir_binary(b, IR_GT, size, f64(b, 1.0)), size, f64(b, 1.0));
    t.bin = ir_binary(b, IR_DIV, size, f64(b, (double)bins));
    if (a->sampling_ratio > 0) {
        t.grid = f64(b, (double)a->sampling_ratio);
    } else {
        ir_expr *q = ir_binary(b, IR_DIV, size, f64(b, (double)bins));
        t.grid = ir_call(b, IR_CALL_CEIL, SMELT_DT_FLOAT64, 1, &q);
        t.grid = ir_select(b, ir_binary(b, IR_GE, t.grid, f64(b, 0.0)), t.grid, f64(b, 0.0));
    }
    return t;
}

/* The sample position along an axis (roi_bin's py / px). */
static ir_expr *roi_te_pos(ir_builder *b, const roi_te_axis *t, ir_expr *bin_i, ir_expr *i)
{
    ir_expr *k = ir_add(b, ir_cast(b, SMELT_DT_FLOAT64, i), f64(b, 0.5));
    return ir_add(b, ir_add(b, t->start, ir_mul(b, ir_cast(b, SMELT_DT_FLOAT64, bin_i), t->bin)),
                  ir_binary(b, IR_DIV, ir_mul(b, k, t->bin), t->grid));
}

typedef struct roi_te_sample {
    ir_expr *inside, *low, *high, *l; /* low/high int64, l float64 */
} roi_te_sample;

/* roi_sample as expressions. */
static roi_te_sample roi_te_sample_of(ir_builder *b, ir_expr *p, int64_t len)
{
    roi_te_sample s;
    s.inside = ir_binary(b, IR_AND, ir_binary(b, IR_GE, p, f64(b, -1.0)),
                         ir_binary(b, IR_LE, p, f64(b, (double)len)));
    ir_expr *q = ir_select(b, ir_binary(b, IR_GT, p, f64(b, 0.0)), p, f64(b, 0.0)); /* NaN -> 0 */
    q = ir_select(b, ir_binary(b, IR_LE, q, f64(b, (double)len)), q, f64(b, (double)len));
    ir_expr *f = ir_call(b, IR_CALL_FLOOR, SMELT_DT_FLOAT64, 1, &q);
    ir_expr *edge = ir_binary(b, IR_GE, f, f64(b, (double)(len - 1)));
    ir_expr *last = ir_int(b, len - 1), *lo = ir_cast(b, SMELT_DT_INT64, f);
    s.low = ir_select(b, edge, last, lo);
    s.high = ir_select(b, edge, last, ir_add(b, lo, ir_int(b, 1)));
    s.l = ir_select(b, edge, f64(b, 0.0), ir_sub(b, q, f));
    return s;
}

static ir_expr *roi_te_batch(te_graph *g, const roi_te *s, ir_expr *r)
{
    ir_builder *b = &g->b;
    ir_expr *v = ir_cast(b, SMELT_DT_INT64, te_read(g, s->bi, &r));
    int64_t n = s->x->buf->shape[0];
    v = ir_binary(b, IR_MAX, v, ir_int(b, 0)); /* the check stage refuses what this clamps */
    return ir_binary(b, IR_MIN, v, ir_int(b, n - 1));
}

/* The sample tables (tag "table": computed once per region, bin and
 * sample, not per channel, where the sums read them).  user: the table's
 * axis, and whether it gives the low pixel or the weight. */
typedef struct roi_table {
    const roi_te *s;
    int axis; /* 0: y (rois columns 1 and 3), 1: x (0 and 2) */
    bool low;
} roi_table;

static ir_expr *roi_table_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const roi_table *t = user;
    const roi_te *s = t->s;
    ir_builder *b = &g->b;
    int64_t bins = t->axis ? s->a->out_w : s->a->out_h, len = s->x->buf->shape[2 + t->axis];
    roi_te_axis ta = roi_te_axis_of(g, s, idx[0], t->axis ? 0 : 1, bins);
    roi_te_sample smp = roi_te_sample_of(b, roi_te_pos(b, &ta, idx[1], idx[2]), len);
    if (!t->low) return smp.l;
    ir_expr *low = ir_select(b, smp.inside, smp.low, ir_int(b, ROI_OUTSIDE));
    if (s->a->sampling_ratio > 0) return low;
    ir_expr *in_grid = ir_binary(b, IR_LT, ir_cast(b, SMELT_DT_FLOAT64, idx[2]), ta.grid);
    return ir_select(b, in_grid, low, ir_int(b, ROI_PAST_GRID));
}

static te_tensor *roi_add_table(op_compute_args *a, const roi_te *s, int axis, bool low)
{
    roi_table *t = smelt_arena_alloc(&a->te->arena, sizeof *t);
    if (!t) return NULL;
    *t = (roi_table){s, axis, low};
    const smelt_tensor *o = &a->out_type[0];
    int64_t dims[3] = {o->dims[0], axis ? s->a->out_w : s->a->out_h, axis ? s->bound_w : s->bound_h};
    char name[16];
    snprintf(name, sizeof name, "%s_%c", low ? "low" : "w", axis ? 'x' : 'y');
    return te_compute(a->te, name, low ? SMELT_DT_INT64 : SMELT_DT_FLOAT64, 3, dims, roi_table_body,
                      t, "table");
}

/* One sample's value from the tables: the sum of the weighted corners
 * (avg) or their maximum; 0 outside the image, the reduction's identity
 * past the grid. */
static ir_expr *roi_te_value(te_graph *g, const roi_te *s, ir_expr *const *idx, ir_expr *iy,
                             ir_expr *ix, ir_reduce_op op)
{
    ir_builder *b = &g->b;
    ir_expr *ty[3] = {idx[0], idx[2], iy}, *tx[3] = {idx[0], idx[3], ix};
    ir_expr *lo_y = te_read(g, s->low[0], ty), *lo_x = te_read(g, s->low[1], tx);
    ir_expr *ly = te_read(g, s->l[0], ty), *lx = te_read(g, s->l[1], tx);
    ir_expr *last_y = ir_int(b, s->x->buf->shape[2] - 1), *last_x = ir_int(b, s->x->buf->shape[3] - 1);
    ir_expr *one = f64(b, 1.0), *zero_i = ir_int(b, 0);
    ir_expr *wy[2] = {ir_sub(b, one, ly), ly}, *wx[2] = {ir_sub(b, one, lx), lx};
    /* clamped into the image: outside samples read pixel 0 and are dropped */
    ir_expr *y0 = ir_binary(b, IR_MAX, lo_y, zero_i), *x0 = ir_binary(b, IR_MAX, lo_x, zero_i);
    ir_expr *iyv[2] = {y0, ir_binary(b, IR_MIN, ir_add(b, y0, ir_int(b, 1)), last_y)};
    ir_expr *ixv[2] = {x0, ir_binary(b, IR_MIN, ir_add(b, x0, ir_int(b, 1)), last_x)};
    ir_expr *xi[4] = {roi_te_batch(g, s, idx[0]), idx[1]};
    ir_expr *v = NULL;
    for (int k = 0; k < 4; k++) {
        xi[2] = iyv[k / 2];
        xi[3] = ixv[k % 2];
        ir_expr *t = ir_mul(b, ir_mul(b, wy[k / 2], wx[k % 2]),
                            ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->x, xi)));
        if (!v) v = t;
        else if (s->a->max) v = ir_select(b, ir_binary(b, IR_GT, t, v), t, v);
        else v = ir_add(b, v, t);
    }
    ir_expr *outside = ir_binary(b, IR_OR, ir_binary(b, IR_EQ, lo_y, ir_int(b, ROI_OUTSIDE)),
                                 ir_binary(b, IR_EQ, lo_x, ir_int(b, ROI_OUTSIDE)));
    v = ir_select(b, outside, f64(b, 0.0), v);
    if (s->a->sampling_ratio > 0) return v;
    ir_expr *past = ir_binary(b, IR_OR, ir_binary(b, IR_EQ, lo_y, ir_int(b, ROI_PAST_GRID)),
                              ir_binary(b, IR_EQ, lo_x, ir_int(b, ROI_PAST_GRID)));
    return ir_select(b, past, te_reduce_identity(g, op, SMELT_DT_FLOAT64), v);
}

/* acc [region, bin y, bin x, channel]: channels innermost, so a sample's
 * pixels and weights are worked out once for all channels. */
static ir_expr *roi_acc_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const roi_te *s = user;
    ir_axis ax[2] = {te_reduce_axis(g, "iy", s->bound_h), te_reduce_axis(g, "ix", s->bound_w)};
    ir_reduce_op op = s->a->max ? IR_REDUCE_MAX : IR_REDUCE_SUM;
    ir_expr *nchw[4] = {idx[0], idx[3], idx[1], idx[2]};
    ir_expr *v = roi_te_value(g, s, nchw, ir_var_ref(&g->b, ax[0].var), ir_var_ref(&g->b, ax[1].var), op);
    return te_reduce(g, op, v, 2, ax);
}

static ir_expr *roi_y_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const roi_te *s = user;
    ir_builder *b = &g->b;
    roi_te_axis ty = roi_te_axis_of(g, s, idx[0], 1, s->a->out_h);
    roi_te_axis tx = roi_te_axis_of(g, s, idx[0], 0, s->a->out_w);
    ir_expr *at[4] = {idx[0], idx[2], idx[3], idx[1]};
    ir_expr *count = ir_mul(b, ty.grid, tx.grid), *acc = te_read(g, s->acc, at);
    ir_expr *v;
    if (s->a->max) /* no samples: 0 */
        v = ir_select(b, ir_binary(b, IR_GT, count, f64(b, 0.0)), acc, f64(b, 0.0));
    else
        v = ir_binary(b, IR_DIV, acc,
                      ir_select(b, ir_binary(b, IR_GT, count, f64(b, 1.0)), count, f64(b, 1.0)));
    return ir_cast(b, s->x->buf->dtype, v);
}

static ir_expr *roi_batch_check_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const roi_te *s = user;
    return ir_cast(&g->b, SMELT_DT_INT64, te_read(g, s->bi, idx));
}

typedef struct roi_grid_check {
    const roi_te *s;
    bool height;
} roi_grid_check;

/* A region's samples per bin along one axis (int64, capped at 1e9). */
static ir_expr *roi_grid_check_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const roi_grid_check *c = user;
    ir_builder *b = &g->b;
    roi_te_axis t = c->height ? roi_te_axis_of(g, c->s, idx[0], 1, c->s->a->out_h)
                              : roi_te_axis_of(g, c->s, idx[0], 0, c->s->a->out_w);
    ir_expr *big = f64(b, 1e9);
    return ir_cast(b, SMELT_DT_INT64,
                   ir_select(b, ir_binary(b, IR_LE, t.grid, big), t.grid, big));
}

static smelt_status roi_add_grid_check(op_compute_args *a, const roi_te *s, bool height)
{
    ir_builder *b = &a->te->b;
    roi_grid_check *c = smelt_arena_alloc(&a->te->arena, sizeof *c);
    if (!c) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    *c = (roi_grid_check){s, height};
    int64_t rois = s->bi->buf->shape[0], bound = height ? s->bound_h : s->bound_w;
    ir_var *v = ir_var_new(b, "g", SMELT_DT_INT64);
    ir_expr *ok = ir_binary(b, IR_LE, ir_var_ref(b, v), ir_int(b, bound));
    char msg[240];
    snprintf(msg, sizeof msg, "region {position} needs {value} samples per bin along its %s; "
             "compiled code with sampling_ratio 0 takes at most %lld (regions up to the image's "
             "size plus one pixel)", height ? "height" : "width", (long long)bound);
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type, .message = msg};
    return te_check_compute(a->te, height ? "check_grid_h" : "check_grid_w", 1, &rois,
                            roi_grid_check_body, c, v, ok, &site)
               ? SMELT_OK
               : smelt_ctx_status(a->ctx);
}

static smelt_status roi_checks(op_compute_args *a, roi_te *s)
{
    ir_builder *b = &a->te->b;
    int64_t rois = s->bi->buf->shape[0];
    ir_var *v = ir_var_new(b, "v", SMELT_DT_INT64);
    ir_expr *vr = ir_var_ref(b, v);
    ir_expr *ok = ir_binary(b, IR_AND, ir_binary(b, IR_GE, vr, ir_int(b, 0)),
                            ir_binary(b, IR_LT, vr, ir_int(b, s->x->buf->shape[0])));
    char msg[200];
    snprintf(msg, sizeof msg, "batch index {value} at position {position} is out of range for "
             "%lld images", (long long)s->x->buf->shape[0]);
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type, .message = msg};
    if (!te_check_compute(a->te, "check_batch", 1, &rois, roi_batch_check_body, s, v, ok, &site))
        return smelt_ctx_status(a->ctx);
    if (s->a->sampling_ratio > 0) return SMELT_OK;
    SMELT_TRY(roi_add_grid_check(a, s, true));
    return roi_add_grid_check(a, s, false);
}

/* Samples per bin a region up to one pixel larger than the image needs. */
static int64_t roi_bound(const op_roi_align_attrs *a, int64_t len, int64_t bins)
{
    if (a->sampling_ratio > 0) return a->sampling_ratio;
    int64_t g = (int64_t)ceil(((double)len + 1.0) / (double)bins);
    return g > 1 ? g : 1;
}

/* float32: per region (in parallel, over the run's regions when their count
 * is a run-time dim) a call of smelt.roialign_f32 on its image, which works
 * a sample's pixels and weights out once for all channels. */
static ir_stmt *build_roi_align(te_graph *g, ir_buffer *out, void *user)
{
    const roi_te *s = user;
    ir_builder *b = &g->b;
    const op_roi_align_attrs *at = s->a;
    const int64_t *xs = s->x->buf->shape;
    int64_t rois = out->shape[0], c = xs[1], plane = xs[2] * xs[3], per = c * at->out_h * at->out_w;
    ir_expr *rows = te_rt_extent(g, rois);
    ir_var *r = ir_var_new(b, "roi", SMELT_DT_INT64);
    ir_expr *rv = ir_var_ref(b, r);
    ir_buffer *acc = ir_buffer_new(b, "roi_acc", SMELT_DT_FLOAT64, 1, &c, IR_BUF_TEMP);
    if (!acc) return NULL;
    ir_expr *image = ir_mul(b, roi_te_batch(g, s, rv), ir_int(b, c * plane));
    ir_call_arg args[15] = {
        {out, ir_mul(b, rv, ir_int(b, per))},
        {s->x->buf, image},
        {s->rois->buf, ir_mul(b, rv, ir_int(b, 4))},
        {acc, ir_int(b, 0)},
        {NULL, ir_int(b, c)},
        {NULL, ir_int(b, xs[2])},
        {NULL, ir_int(b, xs[3])},
        {NULL, ir_int(b, at->out_h)},
        {NULL, ir_int(b, at->out_w)},
        {NULL, ir_int(b, at->sampling_ratio)},
        {NULL, ir_int(b, at->half_pixel)},
        {NULL, ir_int(b, at->max)},
        {NULL, ir_int(b, s->bound_h)},
        {NULL, ir_int(b, s->bound_w)},
        {NULL, f64(b, (double)at->spatial_scale)},
    };
    ir_stmt *call = ir_allocate(b, acc, ir_call_stmt(b, "smelt.roialign_f32", 15, args));
    return ir_for(b, r, ir_int(b, 0), rows ? rows : ir_int(b, rois),
                  rois > 1 ? IR_FOR_PARALLEL : IR_FOR_SERIAL, call);
}

static smelt_status roi_align_compute(op_compute_args *a)
{
    roi_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    const op_roi_align_attrs *at = a->node->op_attrs;
    *s = (roi_te){.a = at, .x = a->in[0], .rois = a->in[1], .bi = a->in[2]};
    if (s->x->buf->shape[0] < 1 || s->x->buf->shape[2] < 1 || s->x->buf->shape[3] < 1)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "compiled RoiAlign needs a non-empty image batch");
    s->bound_h = roi_bound(at, s->x->buf->shape[2], at->out_h);
    s->bound_w = roi_bound(at, s->x->buf->shape[3], at->out_w);
    SMELT_TRY(roi_checks(a, s));
    const smelt_tensor *o = &a->out_type[0];
    if (s->x->buf->dtype == SMELT_DT_FLOAT32 && s->rois->buf->dtype == SMELT_DT_FLOAT32) {
        te_tensor *inputs[3] = {a->in[0], a->in[1], a->in[2]};
        double flops = 8.0 * (double)op_numel(o) * (double)(s->bound_h * s->bound_w);
        a->out[0] = te_extern_stage(a->te, "roialign", SMELT_DT_FLOAT32, 4, o->dims, 3, inputs,
                                    build_roi_align, s, "roialign", flops);
        if (a->out[0]) te_extern_set_rt_ok(a->out[0]);
        return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
    }
    for (int axis = 0; axis < 2; axis++) {
        s->low[axis] = roi_add_table(a, s, axis, true);
        s->l[axis] = roi_add_table(a, s, axis, false);
        if (!s->low[axis] || !s->l[axis]) return compute_done(a, 0, NULL);
    }
    int64_t acc_dims[4] = {o->dims[0], o->dims[2], o->dims[3], o->dims[1]};
    s->acc = te_compute(a->te, "acc", SMELT_DT_FLOAT64, 4, acc_dims, roi_acc_body, s, "reduce");
    if (!s->acc) return compute_done(a, 0, NULL);
    return compute_done(a, 0, te_compute(a->te, "y", o->dtype, 4, o->dims, roi_y_body, s,
                                          "injective"));
}

const op_def op_def_ROI_ALIGN = {
    .compute = roi_align_compute, .import = roi_align_import, .infer = roi_align_infer,
    .eval = roi_align_eval, .min_inputs = 3, .max_inputs = 3, .min_outputs = 1,
    .max_outputs = 1,
};
