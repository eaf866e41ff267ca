/* Spectral ops: DFT (opsets 17-28: axis an attribute until 19, an input
 * from 20), STFT (17-28) and MelWeightMatrix (17-28).
 *
 * The transforms are the plain O(n^2) sums of their definitions, in the
 * reference (double) and in the compute (one float64 reduction per output
 * element), not FFTs:
 *
 *   y[k] = scale * sum_{n < N} v(n) * exp(sign * 2 pi j * ((k n) mod N) / N)
 *
 * with sign -1 and scale 1 forward, +1 and 1/N inverse.  v(n) is the input
 * at n, zero past its end (dft_length pads or truncates).  The inverse of a
 * one-sided spectrum (IRFFT) reads v(n) = x[n] for n <= N/2 and conj(x[N - n])
 * above, and keeps the real part: numpy's irfft, which ignores the imaginary
 * parts of the 0 and N/2 terms, gives the same.  The sizes (dft_length,
 * axis, frame_step, frame_length) must be known to know the shapes:
 * constants, or model inputs compiled code specialises on.
 * MelWeightMatrix depends on its scalar inputs only: its reference follows
 * onnx's reference operation by operation, and compiled code has it only
 * where those inputs are known (then the matrix is folded). */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

static const double k_pi = 3.14159265358979323846;

static const smelt_dtype k_float_types[] = {SMELT_DT_FLOAT16, SMELT_DT_FLOAT32, SMELT_DT_FLOAT64,
                                            SMELT_DT_BFLOAT16, SMELT_DT_UNDEFINED};
static const smelt_dtype k_index_types[] = {SMELT_DT_INT32, SMELT_DT_INT64, SMELT_DT_UNDEFINED};

/* A scalar integer input whose value must be known. */
static smelt_status read_scalar_int(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *t,
                                    const char *what, bool *known, int64_t *v)
{
    *known = false;
    SMELT_TRY(op_check_dtype(ctx, node, t, what, k_index_types));
    if (t->rank > 1 || (t->rank == 1 && t->dims[0] != 1))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "%s must be a scalar", what);
    if (!t->data) return SMELT_OK;
    *known = true;
    *v = op_get_i64(t, 0);
    return SMELT_OK;
}

/* ---- the transform of one line ---------------------------------------------------- */

typedef struct dft_line {
    int64_t n;    /* transform length N */
    int64_t len;  /* input values along the axis */
    bool inverse, irfft;
} dft_line;

/* v(n): the input line (re, im: `len` values) as the transform reads it. */
static void line_value(const dft_line *l, const double *re, const double *im, int64_t n,
                       double *vr, double *vi)
{
    int64_t m = n;
    bool conj = false;
    if (l->irfft && n > l->n / 2) {
        m = l->n - n;
        conj = true;
    }
    *vr = m < l->len ? re[m] : 0.0;
    *vi = m < l->len ? (conj ? -im[m] : im[m]) : 0.0;
}

static void line_transform(const dft_line *l, const double *re, const double *im, int64_t k,
                           double *yr, double *yi)
{
    double sr = 0, si = 0, sign = l->inverse ? 1.0 : -1.0;
    for (int64_t n = 0; n < l->n; n++) {
        double vr, vi;
        line_value(l, re, im, n, &vr, &vi);
        double th = 2.0 * k_pi * (double)((k * n) % l->n) / (double)l->n;
        double c = cos(th), s = sign * sin(th);
        sr += vr * c - vi * s;
        si += vr * s + vi * c;
    }
    double scale = l->inverse ? 1.0 / (double)l->n : 1.0;
    *yr = sr * scale;
    *yi = si * scale;
}

/* The compute's term for one n of output k: Re or Im of v(n) * w(k n). */
static ir_expr *c64(ir_builder *b, double v) { return ir_const_float(b, SMELT_DT_FLOAT64, v); }

static ir_expr *twiddle_term(ir_builder *b, ir_expr *vr, ir_expr *vi, ir_expr *k, ir_expr *n,
                             int64_t len, bool inverse, bool want_im)
{
    ir_expr *kn = ir_binary(b, IR_FLOORMOD, ir_mul(b, k, n), ir_int(b, len));
    ir_expr *th = ir_mul(b, ir_cast(b, SMELT_DT_FLOAT64, kn), c64(b, 2.0 * k_pi / (double)len));
    ir_expr *c = ir_call(b, IR_CALL_COS, SMELT_DT_FLOAT64, 1, &th);
    ir_expr *s = ir_call(b, IR_CALL_SIN, SMELT_DT_FLOAT64, 1, &th);
    if (!inverse) s = ir_mul(b, c64(b, -1.0), s);
    if (want_im) return ir_add(b, ir_mul(b, vr, s), ir_mul(b, vi, c));
    return ir_sub(b, ir_mul(b, vr, c), ir_mul(b, vi, s));
}

/* ---- DFT ---------------------------------------------------------------------------- */

OP_ATTRS(DFT) = {{"axis", 17, 19}, {"inverse", 0, 0}, {"onesided", 0, 0}, {NULL, 0, 0}};

typedef struct op_dft_attrs {
    bool inverse, onesided, axis_input; /* axis_input: DFT-20's axis input */
    int64_t axis;                       /* DFT-17's attribute */
} op_dft_attrs;

static smelt_status dft_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_dft_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(op_attr_bool(ctx, node, "inverse", false, &a->inverse));
    SMELT_TRY(op_attr_bool(ctx, node, "onesided", false, &a->onesided));
    a->axis_input = g->opset >= 20;
    return op_attr_int(ctx, node, "axis", 1, &a->axis);
}

typedef struct dft_plan {
    int axis, rank;
    int64_t out_len; /* along the axis */
    int comps;       /* output's last dim: 1 (IRFFT) or 2 */
    dft_line line;
    bool known;      /* N known (else the output's axis is unknown) */
} dft_plan;

static smelt_status dft_plan_make(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                  const smelt_tensor *len_t, const smelt_tensor *axis_t,
                                  dft_plan *p)
{
    const op_dft_attrs *a = node->op_attrs;
    memset(p, 0, sizeof *p);
    SMELT_TRY(op_check_dtype(ctx, node, x, "input", k_float_types));
    int r = x->rank;
    if (r < 2 || (x->dims[r - 1] >= 0 && x->dims[r - 1] != 1 && x->dims[r - 1] != 2))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input has rank %d and last dim %lld; expected rank >= 2 and a last dim "
                       "of 1 (real) or 2 (complex)", r, r ? (long long)x->dims[r - 1] : 0LL);
    int64_t axis = a->axis;
    if (a->axis_input) {
        axis = -2;
        if (axis_t) {
            bool known;
            SMELT_TRY(read_scalar_int(ctx, node, axis_t, "axis", &known, &axis));
            if (!known)
                return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                               "the axis input must be known (a constant, or a model input "
                               "compiled code specialises on)");
        }
    }
    if (axis < -r || axis > r - 2 || axis == -1)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "axis %lld is out of range [%d, -2] and [0, %d] for rank %d",
                       (long long)axis, -r, r - 2, r);
    p->axis = (int)(axis < 0 ? axis + r : axis);
    p->rank = r;
    p->line.inverse = a->inverse;
    p->line.irfft = a->inverse && a->onesided;
    p->line.len = x->dims[p->axis];
    p->comps = p->line.irfft ? 1 : 2;
    bool known = false;
    if (len_t) {
        SMELT_TRY(read_scalar_int(ctx, node, len_t, "dft_length", &known, &p->line.n));
        if (!known)
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "dft_length must be known (a constant, or a model input compiled "
                           "code specialises on)");
    } else if (p->line.len >= 0) {
        known = true;
        p->line.n = p->line.irfft ? 2 * (p->line.len - 1) : p->line.len;
    }
    p->known = known;
    if (known && p->line.n < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "the transform length is %lld; expected >= 1",
                       (long long)p->line.n);
    p->out_len = !known ? GR_DIM_UNKNOWN
                 : a->onesided && !a->inverse ? p->line.n / 2 + 1
                                              : p->line.n;
    return SMELT_OK;
}

static smelt_status dft_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    dft_plan p;
    SMELT_TRY(dft_plan_make(ctx, node, in[0], op_input(node, in, 1), op_input(node, in, 2), &p));
    op_copy_shape(&out[0], in[0]);
    out[0].dims[p.axis] = p.out_len;
    out[0].dims[p.rank - 1] = p.comps;
    return SMELT_OK;
}

static smelt_status dft_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    dft_plan p;
    SMELT_TRY(dft_plan_make(ctx, node, x, op_input(node, in, 1), op_input(node, in, 2), &p));
    int64_t len = p.line.len, cin = x->dims[p.rank - 1], xs[SMELT_MAX_RANK], ys[SMELT_MAX_RANK];
    op_strides(x, xs);
    op_strides(&out[0], ys);
    double *re = smelt_calloc((size_t)(len ? len : 1) * 2, sizeof *re);
    if (!re) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    double *im = re + (len ? len : 1);
    /* one line per index of the other axes (axis and the last at 0) */
    smelt_tensor lines = {.rank = p.rank};
    for (int d = 0; d < p.rank; d++)
        lines.dims[d] = d == p.axis || d == p.rank - 1 ? 1 : x->dims[d];
    int64_t idx[SMELT_MAX_RANK] = {0};
    for (int64_t l = 0, nl = op_numel(&lines); l < nl; l++, op_next_index(idx, lines.dims, p.rank)) {
        int64_t xo = 0, yo = 0;
        for (int d = 0; d < p.rank; d++) xo += idx[d] * xs[d], yo += idx[d] * ys[d];
        for (int64_t n = 0; n < len; n++) {
            re[n] = op_get_f64(x, xo + n * xs[p.axis]);
            im[n] = cin == 2 ? op_get_f64(x, xo + n * xs[p.axis] + 1) : 0.0;
        }
        for (int64_t k = 0; k < p.out_len; k++) {
            double yr, yi;
            line_transform(&p.line, re, im, k, &yr, &yi);
            op_set_f64(&out[0], yo + k * ys[p.axis], yr);
            if (p.comps == 2) op_set_f64(&out[0], yo + k * ys[p.axis] + 1, yi);
        }
    }
    smelt_free(re);
    return SMELT_OK;
}

typedef struct dft_te {
    dft_plan p;
    const te_tensor *x;
} dft_te;

/* x at transform index n of this output's line (real, imaginary). */
static void dft_read(te_graph *g, const dft_te *s, ir_expr *const *idx, ir_expr *n, ir_expr **vr,
                     ir_expr **vi)
{
    ir_builder *b = &g->b;
    const dft_line *l = &s->p.line;
    ir_expr *m = n, *conj = NULL;
    if (l->irfft) {
        conj = ir_binary(b, IR_GT, n, ir_int(b, l->n / 2));
        m = ir_select(b, conj, ir_sub(b, ir_int(b, l->n), n), n);
    }
    ir_expr *inside = ir_binary(b, IR_LT, m, ir_int(b, l->len));
    ir_expr *xi[SMELT_MAX_RANK];
    for (int d = 0; d < s->p.rank; d++) xi[d] = idx[d];
    xi[s->p.axis] = ir_binary(b, IR_MIN, m, ir_int(b, l->len - 1));
    xi[s->p.rank - 1] = ir_int(b, 0);
    *vr = ir_select(b, inside, ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->x, xi)), c64(b, 0.0));
    if (s->x->buf->shape[s->p.rank - 1] == 1) {
        *vi = c64(b, 0.0);
        return;
    }
    xi[s->p.rank - 1] = ir_int(b, 1);
    ir_expr *im = ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->x, xi));
    if (conj) im = ir_select(b, conj, ir_mul(b, c64(b, -1.0), im), im);
    *vi = ir_select(b, inside, im, c64(b, 0.0));
}

static ir_expr *dft_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const dft_te *s = user;
    ir_builder *b = &g->b;
    const dft_line *l = &s->p.line;
    ir_axis r = te_reduce_axis(g, "n", l->n);
    ir_expr *n = ir_var_ref(b, r.var), *vr, *vi;
    dft_read(g, s, idx, n, &vr, &vi);
    ir_expr *k = idx[s->p.axis];
    ir_expr *re = twiddle_term(b, vr, vi, k, n, l->n, l->inverse, false);
    ir_expr *term = re;
    if (s->p.comps == 2) {
        ir_expr *im = twiddle_term(b, vr, vi, k, n, l->n, l->inverse, true);
        term = ir_select(b, ir_binary(b, IR_EQ, idx[s->p.rank - 1], ir_int(b, 0)), re, im);
    }
    return te_reduce(g, IR_REDUCE_SUM, term, 1, &r);
}

/* The float64 sums scaled (inverse) and rounded to the output type. */
typedef struct finish_te {
    const te_tensor *acc;
    double scale;
    smelt_dtype dt;
} finish_te;

static ir_expr *finish_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const finish_te *f = user;
    ir_expr *v = te_read(g, f->acc, idx);
    if (f->scale != 1.0) v = ir_mul(&g->b, v, c64(&g->b, f->scale));
    return ir_cast(&g->b, f->dt, v);
}

/* A float64 reduction stage by `body`, then the finish into the output. */
static smelt_status sum_then_finish(op_compute_args *a, te_body_fn body, void *user, double scale)
{
    const smelt_tensor *o = &a->out_type[0];
    finish_te *f = smelt_arena_alloc(&a->te->arena, sizeof *f);
    if (!f) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    f->acc = te_compute(a->te, "y_acc", SMELT_DT_FLOAT64, o->rank, o->dims, body, user, "reduce");
    if (!f->acc) return smelt_ctx_status(a->ctx);
    f->scale = scale;
    f->dt = o->dtype;
    a->out[0] = te_compute(a->te, "y", o->dtype, o->rank, o->dims, finish_body, f, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

static smelt_status dft_compute(op_compute_args *a)
{
    dft_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    smelt_tensor xt = {.dtype = a->in[0]->buf->dtype, .rank = a->in[0]->n_axes};
    for (int d = 0; d < xt.rank; d++) xt.dims[d] = a->in[0]->buf->shape[d];
    const smelt_tensor *len_t = a->node->n_inputs > 1 && a->in[1] ? a->in_const[1] : NULL;
    const smelt_tensor *axis_t = a->node->n_inputs > 2 && a->in[2] ? a->in_const[2] : NULL;
    if ((a->node->n_inputs > 1 && a->in[1] && !len_t) || (a->node->n_inputs > 2 && a->in[2] && !axis_t))
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "dft_length and axis must be known at compile time");
    SMELT_TRY(dft_plan_make(a->ctx, a->node, &xt, len_t, axis_t, &s->p));
    if (s->p.line.len < 1)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "compiled DFT needs a non-empty signal axis");
    s->x = a->in[0];
    return sum_then_finish(a, dft_body, s, s->p.line.inverse ? 1.0 / (double)s->p.line.n : 1.0);
}

const op_def op_def_DFT = {
    .compute = dft_compute, .import = dft_import, .infer = dft_infer, .eval = dft_eval,
    .min_inputs = 1, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
};

/* ---- STFT --------------------------------------------------------------------------- */

OP_ATTRS(STFT) = {{"onesided", 0, 0}, {NULL, 0, 0}};

typedef struct op_stft_attrs {
    bool onesided;
} op_stft_attrs;

static smelt_status stft_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_stft_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    return op_attr_bool(ctx, node, "onesided", true, &a->onesided);
}

typedef struct stft_plan {
    int64_t step, frame, frames, bins;
    bool known;
} stft_plan;

static smelt_status stft_plan_make(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, stft_plan *p)
{
    const smelt_tensor *x = in[0], *step_t = in[1], *win = op_input(node, in, 2),
                       *len_t = op_input(node, in, 3);
    memset(p, 0, sizeof *p);
    SMELT_TRY(op_check_dtype(ctx, node, x, "signal", k_float_types));
    if (x->rank != 3 || (x->dims[2] >= 0 && x->dims[2] != 1 && x->dims[2] != 2))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "signal must be [batch][length][1 or 2] (rank %d)", x->rank);
    bool step_known, len_known = false;
    SMELT_TRY(read_scalar_int(ctx, node, step_t, "frame_step", &step_known, &p->step));
    if (win) {
        SMELT_TRY(op_check_dtype(ctx, node, win, "window", k_float_types));
        if (win->rank != 1)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "window must be 1-D (rank %d)", win->rank);
    }
    if (len_t) SMELT_TRY(read_scalar_int(ctx, node, len_t, "frame_length", &len_known, &p->frame));
    if (len_t && !len_known) return SMELT_OK;
    if (!len_t) {
        p->frame = win ? win->dims[0] : x->dims[1];
        if (p->frame < 0) return SMELT_OK;
    }
    if (win && win->dims[0] >= 0 && win->dims[0] != p->frame)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "window has %lld values; frame_length is %lld",
                       (long long)win->dims[0], (long long)p->frame);
    if (!step_known || x->dims[1] < 0) return SMELT_OK;
    if (p->step < 1 || p->frame < 1 || p->frame > x->dims[1])
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "frame_step %lld and frame_length %lld for a signal of %lld; expected "
                       "a positive step and 1 <= frame_length <= signal length",
                       (long long)p->step, (long long)p->frame, (long long)x->dims[1]);
    p->frames = (x->dims[1] - p->frame) / p->step + 1;
    p->bins = ((const op_stft_attrs *)node->op_attrs)->onesided ? p->frame / 2 + 1 : p->frame;
    p->known = true;
    return SMELT_OK;
}

static smelt_status stft_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    stft_plan p;
    SMELT_TRY(stft_plan_make(ctx, node, in, &p));
    out[0].dtype = in[0]->dtype;
    out[0].rank = 4;
    out[0].dims[0] = in[0]->dims[0];
    out[0].dims[1] = p.known ? p.frames : GR_DIM_UNKNOWN;
    out[0].dims[2] = p.known ? p.bins : GR_DIM_UNKNOWN;
    out[0].dims[3] = 2;
    return SMELT_OK;
}

static smelt_status stft_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *win = op_input(node, in, 2);
    stft_plan p;
    SMELT_TRY(stft_plan_make(ctx, node, in, &p));
    int64_t cin = x->dims[2], len = x->dims[1];
    double *re = smelt_calloc((size_t)p.frame * 2, sizeof *re);
    if (!re) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    double *im = re + p.frame;
    dft_line l = {.n = p.frame, .len = p.frame};
    for (int64_t b = 0; b < x->dims[0]; b++) {
        for (int64_t f = 0; f < p.frames; f++) {
            for (int64_t n = 0; n < p.frame; n++) {
                int64_t at = (b * len + f * p.step + n) * cin;
                double w = win ? op_get_f64(win, n) : 1.0;
                re[n] = op_get_f64(x, at) * w;
                im[n] = cin == 2 ? op_get_f64(x, at + 1) * w : 0.0;
            }
            for (int64_t k = 0; k < p.bins; k++) {
                double yr, yi;
                line_transform(&l, re, im, k, &yr, &yi);
                int64_t o = ((b * p.frames + f) * p.bins + k) * 2;
                op_set_f64(&out[0], o, yr);
                op_set_f64(&out[0], o + 1, yi);
            }
        }
    }
    smelt_free(re);
    return SMELT_OK;
}

typedef struct stft_te {
    stft_plan p;
    const te_tensor *x, *win;
} stft_te;

static ir_expr *stft_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const stft_te *s = user;
    ir_builder *b = &g->b;
    ir_axis r = te_reduce_axis(g, "n", s->p.frame);
    ir_expr *n = ir_var_ref(b, r.var);
    ir_expr *xi[3] = {idx[0], ir_add(b, ir_mul(b, idx[1], ir_int(b, s->p.step)), n), ir_int(b, 0)};
    ir_expr *w = s->win ? ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->win, &n)) : c64(b, 1.0);
    ir_expr *vr = ir_mul(b, ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->x, xi)), w), *vi = c64(b, 0.0);
    if (s->x->buf->shape[2] == 2) {
        xi[2] = ir_int(b, 1);
        vi = ir_mul(b, ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->x, xi)), w);
    }
    ir_expr *re = twiddle_term(b, vr, vi, idx[2], n, s->p.frame, false, false);
    ir_expr *im = twiddle_term(b, vr, vi, idx[2], n, s->p.frame, false, true);
    ir_expr *term = ir_select(b, ir_binary(b, IR_EQ, idx[3], ir_int(b, 0)), re, im);
    return te_reduce(g, IR_REDUCE_SUM, term, 1, &r);
}

static smelt_status stft_compute(op_compute_args *a)
{
    stft_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    const smelt_tensor *in[4] = {NULL, NULL, NULL, NULL};
    smelt_tensor xt = {.dtype = a->in[0]->buf->dtype, .rank = 3}, wt = {.rank = 1};
    for (int d = 0; d < 3; d++) xt.dims[d] = a->in[0]->buf->shape[d];
    in[0] = &xt;
    in[1] = a->in_const[1];
    bool has_win = a->node->n_inputs > 2 && a->in[2];
    if (has_win) {
        wt.dtype = a->in[2]->buf->dtype;
        wt.dims[0] = a->in[2]->buf->shape[0];
        in[2] = &wt;
    }
    bool has_len = a->node->n_inputs > 3 && a->in[3];
    if (has_len) in[3] = a->in_const[3];
    if (!in[1] || (has_len && !in[3]))
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "frame_step and frame_length must be known at compile time");
    SMELT_TRY(stft_plan_make(a->ctx, a->node, in, &s->p));
    s->x = a->in[0];
    s->win = has_win ? a->in[2] : NULL;
    return sum_then_finish(a, stft_body, s, 1.0);
}

const op_def op_def_STFT = {
    .compute = stft_compute, .import = stft_import, .infer = stft_infer, .eval = stft_eval,
    .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
};

/* ---- MelWeightMatrix ---------------------------------------------------------------- */

OP_ATTRS(MEL_WEIGHT_MATRIX) = {{"output_datatype", 0, 0}, {NULL, 0, 0}};

typedef struct op_mel_attrs {
    smelt_dtype dt;
} op_mel_attrs;

static smelt_status mel_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_mel_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    int64_t t;
    SMELT_TRY(op_attr_int(ctx, node, "output_datatype", SMELT_DT_FLOAT32, &t));
    static const smelt_dtype k_out[] = {
        SMELT_DT_UINT8, SMELT_DT_UINT16, SMELT_DT_UINT32, SMELT_DT_UINT64,  SMELT_DT_INT8,
        SMELT_DT_INT16, SMELT_DT_INT32,  SMELT_DT_INT64,  SMELT_DT_FLOAT16, SMELT_DT_FLOAT32,
        SMELT_DT_FLOAT64, SMELT_DT_BFLOAT16};
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_out); i++)
        if (t == (int64_t)k_out[i]) {
            a->dt = k_out[i];
            return SMELT_OK;
        }
    return op_errf(ctx, node, SMELT_ERR_ATTR,
                   "attribute 'output_datatype' is %lld; expected a numeric type of T3 (an "
                   "integer, float16, float, double or bfloat16)", (long long)t);
}

static smelt_status mel_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    static const char *const names[] = {"num_mel_bins", "dft_length", "sample_rate",
                                        "lower_edge_hertz", "upper_edge_hertz"};
    int64_t v[3] = {0, 0, 0};
    bool known = true;
    for (int i = 0; i < 5; i++) {
        if (in[i]->rank > 1 || (in[i]->rank == 1 && in[i]->dims[0] != 1))
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "%s must be a scalar", names[i]);
        if (i < 3) {
            bool k;
            SMELT_TRY(read_scalar_int(ctx, node, in[i], names[i], &k, &v[i]));
            known = known && k;
        } else {
            SMELT_TRY(op_check_dtype(ctx, node, in[i], names[i], k_float_types));
        }
    }
    if (known && (v[0] < 1 || v[1] < 1 || v[2] < 1))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "num_mel_bins %lld, dft_length %lld, sample_rate %lld; expected positive",
                       (long long)v[0], (long long)v[1], (long long)v[2]);
    out[0].dtype = ((const op_mel_attrs *)node->op_attrs)->dt;
    out[0].rank = 2;
    out[0].dims[0] = known ? v[1] / 2 + 1 : GR_DIM_UNKNOWN;
    out[0].dims[1] = known ? v[0] : GR_DIM_UNKNOWN;
    return SMELT_OK;
}

/* hertz -> mel as onnx's reference computes it: log1p and the scaling in
 * the edges' own type (float for 16- and 32-bit floats), the division by
 * log(10) in double. */
static double mel_of(const smelt_tensor *t)
{
    double hz = op_get_f64(t, 0);
    if (t->dtype == SMELT_DT_FLOAT64) return 2595.0 * log1p(hz / 700.0) / log(10.0);
    float m = 2595.0f * log1pf((float)hz / 700.0f);
    return (double)m / log(10.0);
}

static smelt_status mel_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    int64_t bins = op_get_i64(in[0], 0), dft = op_get_i64(in[1], 0), rate = op_get_i64(in[2], 0);
    int64_t rows = dft / 2 + 1, *edge = smelt_calloc((size_t)bins + 2, sizeof *edge);
    if (!edge) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    double lo = mel_of(in[3]), hi = mel_of(in[4]), step = (hi - lo) / (double)(bins + 2);
    for (int64_t i = 0; i < bins + 2; i++) {
        double hz = 700.0 * expm1(((double)i * step + lo) / 2595.0 * log(10.0));
        edge[i] = (int64_t)floor((double)(dft + 1) * hz / (double)rate);
    }
    smelt_status st = SMELT_OK;
    for (int64_t i = 0; i < bins && st == SMELT_OK; i++) {
        int64_t l = edge[i], c = edge[i + 1], h = edge[i + 2];
        if (l < 0 || l > c || c > h || c >= rows || h > rows) {
            st = op_errf(ctx, node, SMELT_ERR_RUNTIME,
                         "mel band %lld spans spectrogram bins %lld..%lld..%lld, outside the "
                         "%lld bins of a %lld-point DFT (check the edges and sample_rate)",
                         (long long)i, (long long)l, (long long)c, (long long)h, (long long)rows,
                         (long long)dft);
            break;
        }
        if (c == l) {
            op_set_f64(&out[0], c * bins + i, 1.0);
        } else {
            for (int64_t j = l; j <= c; j++)
                op_set_f64(&out[0], j * bins + i, (double)(j - l) / (double)(c - l));
        }
        for (int64_t j = c; j < h; j++)
            op_set_f64(&out[0], j * bins + i, (double)(h - j) / (double)(h - c));
    }
    smelt_free(edge);
    return st;
}

/* The compute: the integer inputs known (they give the shape), the edges
 * read at run time.  mel_of and the band edges as expressions; log1p and
 * expm1 become log(1 + x) and exp(x) - 1 in double, which round differently
 * only far below float's precision (an edge could move only where
 * (dft_length + 1) * hz / sample_rate lies that close to an integer).
 * Values: 1 at the band's center, rising from its left edge, falling to its
 * right edge, 0 elsewhere: what the reference's writes leave. */
typedef struct mel_te {
    const te_tensor *lo, *hi;
    int64_t bins, dft, rate, rows;
    smelt_dtype dt; /* the output's */
} mel_te;

static ir_expr *mel_te_of(te_graph *g, const te_tensor *t)
{
    ir_builder *b = &g->b;
    ir_expr *zero = ir_int(b, 0), *hz = te_read(g, t, t->n_axes ? &zero : NULL);
    if (t->buf->dtype == SMELT_DT_FLOAT64) {
        ir_expr *l = ir_add(b, c64(b, 1.0), ir_binary(b, IR_DIV, hz, c64(b, 700.0)));
        l = ir_call(b, IR_CALL_LOG, SMELT_DT_FLOAT64, 1, &l);
        return ir_binary(b, IR_DIV, ir_mul(b, c64(b, 2595.0), l), c64(b, log(10.0)));
    }
    ir_expr *f = ir_binary(b, IR_DIV, ir_cast(b, SMELT_DT_FLOAT32, hz),
                           ir_const_float(b, SMELT_DT_FLOAT32, 700.0));
    ir_expr *l = ir_add(b, c64(b, 1.0), ir_cast(b, SMELT_DT_FLOAT64, f));
    l = ir_cast(b, SMELT_DT_FLOAT32, ir_call(b, IR_CALL_LOG, SMELT_DT_FLOAT64, 1, &l));
    ir_expr *m = ir_mul(b, ir_const_float(b, SMELT_DT_FLOAT32, 2595.0), l);
    return ir_binary(b, IR_DIV, ir_cast(b, SMELT_DT_FLOAT64, m), c64(b, log(10.0)));
}

/* Spectrogram bin of band edge k (an int64 expression). */
static ir_expr *mel_te_edge(te_graph *g, const mel_te *s, ir_expr *k)
{
    ir_builder *b = &g->b;
    ir_expr *lo = mel_te_of(g, s->lo), *hi = mel_te_of(g, s->hi);
    ir_expr *step = ir_binary(b, IR_DIV, ir_sub(b, hi, lo), c64(b, (double)(s->bins + 2)));
    ir_expr *mel = ir_add(b, ir_mul(b, ir_cast(b, SMELT_DT_FLOAT64, k), step), lo);
    ir_expr *e = ir_mul(b, ir_binary(b, IR_DIV, mel, c64(b, 2595.0)), c64(b, log(10.0)));
    e = ir_call(b, IR_CALL_EXP, SMELT_DT_FLOAT64, 1, &e);
    ir_expr *hz = ir_mul(b, c64(b, 700.0), ir_sub(b, e, c64(b, 1.0)));
    ir_expr *bin = ir_binary(b, IR_DIV, ir_mul(b, c64(b, (double)(s->dft + 1)), hz),
                             c64(b, (double)s->rate));
    bin = ir_call(b, IR_CALL_FLOOR, SMELT_DT_FLOAT64, 1, &bin);
    /* clamped before the conversion (a NaN or huge edge is caught by the check) */
    bin = ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, bin, c64(b, -1.0)), c64(b, (double)s->rows + 1));
    return ir_cast(b, SMELT_DT_INT64, bin);
}

/* 0 where band i's edges fit the spectrogram (as the reference requires), else 1. */
static ir_expr *mel_check_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const mel_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *l = mel_te_edge(g, s, idx[0]), *c = mel_te_edge(g, s, ir_add(b, idx[0], ir_int(b, 1)));
    ir_expr *h = mel_te_edge(g, s, ir_add(b, idx[0], ir_int(b, 2)));
    ir_expr *ok = ir_binary(b, IR_AND, ir_binary(b, IR_GE, l, ir_int(b, 0)),
                            ir_binary(b, IR_LE, l, c));
    ok = ir_binary(b, IR_AND, ok, ir_binary(b, IR_LE, c, h));
    ok = ir_binary(b, IR_AND, ok, ir_binary(b, IR_LT, c, ir_int(b, s->rows)));
    ok = ir_binary(b, IR_AND, ok, ir_binary(b, IR_LE, h, ir_int(b, s->rows)));
    return ir_select(b, ok, ir_int(b, 0), ir_int(b, 1));
}

static ir_expr *mel_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const mel_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *j = idx[0], *i = idx[1];
    ir_expr *l = mel_te_edge(g, s, i), *c = mel_te_edge(g, s, ir_add(b, i, ir_int(b, 1)));
    ir_expr *h = mel_te_edge(g, s, ir_add(b, i, ir_int(b, 2)));
    ir_expr *fj = ir_cast(b, SMELT_DT_FLOAT64, j), *fl = ir_cast(b, SMELT_DT_FLOAT64, l);
    ir_expr *fc = ir_cast(b, SMELT_DT_FLOAT64, c), *fh = ir_cast(b, SMELT_DT_FLOAT64, h);
    ir_expr *rise = ir_binary(b, IR_DIV, ir_sub(b, fj, fl), ir_sub(b, fc, fl));
    ir_expr *fall = ir_binary(b, IR_DIV, ir_sub(b, fh, fj), ir_sub(b, fh, fc));
    ir_expr *in_rise = ir_binary(b, IR_AND, ir_binary(b, IR_LE, l, j), ir_binary(b, IR_LT, j, c));
    ir_expr *in_fall = ir_binary(b, IR_AND, ir_binary(b, IR_LT, c, j), ir_binary(b, IR_LT, j, h));
    ir_expr *v = ir_select(b, in_fall, fall, c64(b, 0.0));
    v = ir_select(b, in_rise, rise, v);
    v = ir_select(b, ir_binary(b, IR_EQ, j, c), c64(b, 1.0), v);
    return ir_cast(b, s->dt, v);
}

static smelt_status mel_compute(op_compute_args *a)
{
    for (int i = 0; i < 3; i++)
        if (!a->in_const[i])
            return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                           "num_mel_bins, dft_length and sample_rate must be known at compile "
                           "time (constants, or model inputs compiled code specialises on)");
    mel_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    *s = (mel_te){a->in[3], a->in[4], op_get_i64(a->in_const[0], 0),
                  op_get_i64(a->in_const[1], 0), op_get_i64(a->in_const[2], 0), 0,
                  SMELT_DT_UNDEFINED};
    s->rows = s->dft / 2 + 1;
    s->dt = a->out_type[0].dtype;
    ir_builder *b = &a->te->b;
    ir_var *v = ir_var_new(b, "bad", SMELT_DT_INT64);
    ir_expr *ok = ir_binary(b, IR_EQ, ir_var_ref(b, v), ir_int(b, 0));
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type,
                          .message = "mel band {position} spans spectrogram bins outside the "
                                     "one-sided DFT (check the edges and sample_rate)"};
    int64_t bins = s->bins;
    if (!te_check_compute(a->te, "check", 1, &bins, mel_check_body, s, v, ok, &site))
        return smelt_ctx_status(a->ctx) ? smelt_ctx_status(a->ctx) : SMELT_ERR_NOMEM;
    const smelt_tensor *o = &a->out_type[0];
    a->out[0] = te_compute(a->te, "y", o->dtype, o->rank, o->dims, mel_body, s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_MEL_WEIGHT_MATRIX = {
    .compute = mel_compute, .import = mel_import, .infer = mel_infer, .eval = mel_eval,
    .min_inputs = 5, .max_inputs = 5, .min_outputs = 1, .max_outputs = 1,
};
