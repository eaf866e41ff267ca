/* Layout family: the internal ops of the blocked layout NCHW[x]c (see
 * layout.h), LayoutTransform and ConvNCHWc.  Both are made by the
 * alter_layout pass and refused by the importer (OP_FLAG_INTERNAL).
 *
 * The reference kernels are plain loops over output elements (the oracle of
 * the compiled forms); ConvNCHWc sums in double like Conv's.
 */
#include <string.h>

#include "ops/layout.h"

#define BLOCK_MAX 4096 /* far above any vector width; keeps index arithmetic small */

static const char *input_name(const gr_node *node, int i)
{
    return i < node->n_inputs && node->inputs[i] ? node->inputs[i]->name : "";
}

/* ---- LayoutTransform ------------------------------------------------------ */

static smelt_status read_block(smelt_ctx *ctx, const gr_node *node, const char *name,
                               int64_t *out)
{
    SMELT_TRY(op_attr_int(ctx, node, name, -1, out));
    if (*out < 0 || *out > BLOCK_MAX)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute '%s' is %lld; expected 0 (plain NCHW) to %d (NCHW[b]c)", name,
                       (long long)*out, BLOCK_MAX);
    return SMELT_OK;
}

static smelt_status transform_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_layout_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(read_block(ctx, node, "src_block", &a->src_block));
    return read_block(ctx, node, "dst_block", &a->dst_block);
}

/* Channel count of x, a tensor in layout `block`; it must be static. */
static smelt_status layout_channels(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                    int64_t block, int64_t *c)
{
    int min_rank = block ? 4 : 3;
    if (x->rank < min_rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input '%s' has rank %d; layout %s needs at least %d (N, C, spatial%s)",
                       input_name(node, 0), x->rank, block ? "NCHW[b]c" : "NCHW", min_rank,
                       block ? ", block" : "");
    if (block && x->dims[x->rank - 1] != block)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input '%s' has last dim %lld; expected the block %lld",
                       input_name(node, 0), (long long)x->dims[x->rank - 1], (long long)block);
    if (x->dims[1] < 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input '%s' has a symbolic channel dim; blocking needs it static",
                       input_name(node, 0));
    *c = x->dims[1] * (block ? block : 1);
    return SMELT_OK;
}

static smelt_status transform_infer(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_layout_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int64_t c = 0;
    if (!a) return op_errf(ctx, node, SMELT_ERR_INTERNAL, "attributes were not imported");
    SMELT_TRY(layout_channels(ctx, node, x, a->src_block, &c));
    if (a->dst_block && c % a->dst_block != 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input '%s' has %lld channels, not divisible by the block %lld",
                       input_name(node, 0), (long long)c, (long long)a->dst_block);
    int spatial = x->rank - (a->src_block ? 3 : 2);
    if (2 + spatial + (a->dst_block ? 1 : 0) > SMELT_MAX_RANK)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' has too many dims to block",
                       input_name(node, 0));
    out[0].dtype = x->dtype;
    out[0].rank = 2 + spatial + (a->dst_block ? 1 : 0);
    out[0].dims[0] = x->dims[0];
    out[0].dims[1] = a->dst_block ? c / a->dst_block : c;
    for (int d = 0; d < spatial; d++) out[0].dims[2 + d] = x->dims[2 + d];
    if (a->dst_block) out[0].dims[out[0].rank - 1] = a->dst_block;
    return SMELT_OK;
}

/* The input index an output index o reads: the channel c = o[1] (plain) or
 * o[1]*dst + o[last] (blocked), placed by the source layout. */
static void transform_source(const op_layout_attrs *a, int out_rank, const int64_t *o,
                             int in_rank, int64_t *i)
{
    int spatial = out_rank - (a->dst_block ? 3 : 2);
    int64_t c = a->dst_block ? o[1] * a->dst_block + o[out_rank - 1] : o[1];
    i[0] = o[0];
    i[1] = a->src_block ? c / a->src_block : c;
    for (int d = 0; d < spatial; d++) i[2 + d] = o[2 + d];
    if (a->src_block) i[in_rank - 1] = c % a->src_block;
}

static smelt_status transform_eval(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_layout_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    size_t es = smelt_dtype_size(x->dtype);
    if (es == 0 || x->dtype == SMELT_DT_STRING)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "dtype %s cannot be re-laid out",
                       smelt_dtype_name(x->dtype));
    if (op_numel(&out[0]) == 0) return SMELT_OK;
    int64_t xs[SMELT_MAX_RANK], o[SMELT_MAX_RANK] = {0}, i[SMELT_MAX_RANK];
    op_strides(x, xs);
    int64_t k = 0;
    do {
        transform_source(a, out[0].rank, o, x->rank, i);
        int64_t off = 0;
        for (int d = 0; d < x->rank; d++) off += i[d] * xs[d];
        memcpy((char *)out[0].data + (size_t)k * es, (const char *)x->data + (size_t)off * es, es);
        k++;
    } while (op_next_index(o, out[0].dims, out[0].rank));
    return SMELT_OK;
}

static ir_expr *transform_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gr_node *node = ((void *const *)user)[0];
    const te_tensor *x = ((void *const *)user)[1];
    const op_layout_attrs *a = node->op_attrs;
    ir_builder *b = &g->b;
    int in_rank = x->n_axes, out_rank = in_rank + (a->dst_block ? 1 : 0) - (a->src_block ? 1 : 0);
    int spatial = out_rank - (a->dst_block ? 3 : 2);
    ir_expr *c = a->dst_block ? op_conv_affine(b, idx[1], a->dst_block, 0) : idx[1];
    if (a->dst_block) c = ir_add(b, c, idx[out_rank - 1]);
    ir_expr *i[SMELT_MAX_RANK];
    i[0] = idx[0];
    i[1] = a->src_block > 1 ? ir_binary(b, IR_FLOORDIV, c, ir_int(b, a->src_block)) : c;
    for (int d = 0; d < spatial; d++) i[2 + d] = idx[2 + d];
    if (a->src_block)
        i[in_rank - 1] = a->src_block > 1 ? ir_binary(b, IR_FLOORMOD, c, ir_int(b, a->src_block))
                                          : ir_int(b, 0);
    return te_read(g, x, i);
}

static smelt_status transform_compute(op_compute_args *a)
{
    const smelt_tensor *y = &a->out_type[0];
    void **user = smelt_arena_alloc(&a->te->arena, 2 * sizeof *user);
    if (!user) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    user[0] = (void *)a->node;
    user[1] = a->in[0];
    a->out[0] = te_compute(a->te, "y", y->dtype, y->rank, y->dims, transform_body, user,
                           "layout");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* ---- ConvNCHWc ------------------------------------------------------------ */

static smelt_status nchwc_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_conv_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    op_conv_attrs_init(a);
    SMELT_TRY(op_conv_window_import(ctx, node, false, &a->win));
    SMELT_TRY(op_attr_int(ctx, node, "group", 1, &a->group));
    if (a->group < 1 || a->group > INT32_MAX)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'group' is %lld; expected 1 to %d",
                       (long long)a->group, INT32_MAX);
    return SMELT_OK;
}

static smelt_status static_dims(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *t,
                                int i, const char *what)
{
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] < 0 || (d > 0 && t->dims[d] == 0))
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "input %s '%s' needs static non-empty dims (dim %d is %lld)", what,
                           input_name(node, i), d, (long long)t->dims[d]);
    return SMELT_OK;
}

/* Channels and blocks of X and W: group 1 or depthwise. */
static smelt_status nchwc_channels(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                   const smelt_tensor *w, int64_t group, op_nchwc_shape *s)
{
    s->in_block = x->rank == 5 ? x->dims[4] : 1;
    s->out_block = w->dims[5];
    s->in_channels = x->dims[1] * s->in_block;
    s->out_channels = w->dims[0] * s->out_block;
    if (group == 1) {
        if (w->dims[4] != s->in_block || w->dims[1] * w->dims[4] != s->in_channels)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "input W '%s' [%lld, %lld, _, _, %lld, _] does not pack %lld input "
                           "channels in blocks of %lld",
                           input_name(node, 1), (long long)w->dims[0], (long long)w->dims[1],
                           (long long)w->dims[4], (long long)s->in_channels,
                           (long long)s->in_block);
        return SMELT_OK;
    }
    s->depthwise = true;
    if (group != s->in_channels || s->out_channels != s->in_channels || w->dims[1] != 1 ||
        w->dims[4] != 1 || s->out_block != s->in_block)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "group %lld: only group 1 and depthwise (group = %lld input channels = "
                       "output channels, W [C/b, 1, KH, KW, 1, b] with b the input block %lld) "
                       "are supported",
                       (long long)group, (long long)s->in_channels, (long long)s->in_block);
    return SMELT_OK;
}

smelt_status op_conv_nchwc_resolve(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                   const smelt_tensor *w, op_nchwc_shape *out)
{
    const op_conv_attrs *a = node->op_attrs;
    if (!a) return op_errf(ctx, node, SMELT_ERR_INTERNAL, "attributes were not imported");
    if (x->rank != 4 && x->rank != 5)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input X '%s' has rank %d; expected [N, C, H, W] or [N, C/b, H, W, b]",
                       input_name(node, 0), x->rank);
    if (w->rank != 6)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input W '%s' has rank %d; expected 6 (packed [Co/ob, Ci/ib, KH, KW, ib, "
                       "ob])",
                       input_name(node, 1), w->rank);
    SMELT_TRY(static_dims(ctx, node, x, 0, "X"));
    SMELT_TRY(static_dims(ctx, node, w, 1, "W"));
    memset(out, 0, sizeof *out);
    out->batch = x->dims[0];
    SMELT_TRY(nchwc_channels(ctx, node, x, w, a->group, out));
    SMELT_TRY(op_conv_window_resolve(ctx, node, &a->win, 2, x->dims + 2, w->dims + 2, false,
                                     &out->win));
    for (int i = 0; i < 2; i++)
        if (a->win.n_kernel_shape > 0 && a->win.kernel_shape[i] != w->dims[2 + i])
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "attribute 'kernel_shape' is %lld for spatial dim %d, but W '%s' has "
                           "%lld",
                           (long long)a->win.kernel_shape[i], i, input_name(node, 1),
                           (long long)w->dims[2 + i]);
    return SMELT_OK;
}

static smelt_status check_f32(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *t, int i)
{
    if (t->dtype != SMELT_DT_FLOAT32)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' has dtype %s; ConvNCHWc is float32",
                       input_name(node, i), smelt_dtype_name(t->dtype));
    return SMELT_OK;
}

static smelt_status nchwc_infer(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *w = in[1], *b = op_input(node, in, 2);
    SMELT_TRY(check_f32(ctx, node, x, 0));
    SMELT_TRY(check_f32(ctx, node, w, 1));
    op_nchwc_shape s;
    SMELT_TRY(op_conv_nchwc_resolve(ctx, node, x, w, &s));
    if (b) {
        SMELT_TRY(check_f32(ctx, node, b, 2));
        if (b->rank != 2 || b->dims[0] != w->dims[0] || b->dims[1] != s.out_block)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "input B '%s' must be [%lld, %lld] (output channels in blocks)",
                           input_name(node, 2), (long long)w->dims[0], (long long)s.out_block);
    }
    out[0].dtype = SMELT_DT_FLOAT32;
    out[0].rank = 5;
    out[0].dims[0] = s.batch;
    out[0].dims[1] = s.out_channels / s.out_block;
    out[0].dims[2] = s.win.out[0];
    out[0].dims[3] = s.win.out[1];
    out[0].dims[4] = s.out_block;
    return SMELT_OK;
}

/* x[n, c, ih, iw] of a tensor in blocks of ib (ib = 1 also reads plain NCHW:
 * the same memory). */
static float nchwc_x(const smelt_tensor *x, const op_nchwc_shape *s, int64_t n, int64_t c,
                     int64_t ih, int64_t iw)
{
    int64_t ib = s->in_block, h = s->win.in[0], w = s->win.in[1];
    int64_t off = (((n * (s->in_channels / ib) + c / ib) * h + ih) * w + iw) * ib + c % ib;
    return ((const float *)x->data)[off];
}

/* One output element: channel m at (oh, ow) of batch n. */
static double nchwc_point(const smelt_tensor *x, const smelt_tensor *w, const op_nchwc_shape *s,
                          int64_t n, int64_t m, int64_t oh, int64_t ow)
{
    const op_conv_window *win = &s->win;
    int64_t ob = s->out_block, ib = s->in_block, kh = win->kernel[0], kw = win->kernel[1];
    int64_t ci_lo = s->depthwise ? m : 0, ci_hi = s->depthwise ? m + 1 : s->in_channels;
    const float *wd = w->data;
    double acc = 0;
    for (int64_t c = ci_lo; c < ci_hi; c++) {
        int64_t wc = s->depthwise ? 0 : c; /* packed W's input channel */
        for (int64_t ky = 0; ky < kh; ky++) {
            int64_t ih = oh * win->stride[0] - win->pad_begin[0] + ky * win->dilation[0];
            if (ih < 0 || ih >= win->in[0]) continue;
            for (int64_t kx = 0; kx < kw; kx++) {
                int64_t iw = ow * win->stride[1] - win->pad_begin[1] + kx * win->dilation[1];
                if (iw < 0 || iw >= win->in[1]) continue;
                int64_t wib = s->depthwise ? 1 : ib;
                int64_t woff = ((((m / ob) * w->dims[1] + wc / wib) * kh + ky) * kw + kx) * wib;
                woff = (woff + wc % wib) * ob + m % ob;
                acc += (double)nchwc_x(x, s, n, c, ih, iw) * wd[woff];
            }
        }
    }
    return acc;
}

static smelt_status nchwc_eval(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *w = in[1], *b = op_input(node, in, 2);
    op_nchwc_shape s;
    SMELT_TRY(op_conv_nchwc_resolve(ctx, node, x, w, &s));
    float *y = out[0].data;
    const float *bias = b ? b->data : NULL;
    int64_t ob = s.out_block, oh_n = s.win.out[0], ow_n = s.win.out[1], k = 0;
    for (int64_t n = 0; n < s.batch; n++)
        for (int64_t mb = 0; mb < s.out_channels / ob; mb++)
            for (int64_t oh = 0; oh < oh_n; oh++)
                for (int64_t ow = 0; ow < ow_n; ow++)
                    for (int64_t j = 0; j < ob; j++, k++) {
                        int64_t m = mb * ob + j;
                        double v = nchwc_point(x, w, &s, n, m, oh, ow);
                        y[k] = (float)(v + (bias ? bias[m] : 0.0));
                    }
    return SMELT_OK;
}

/* ---- ConvNCHWc compute -------------------------------------------------------
 *   y[n, co, oh, ow, j] = b[co, j] + sum over rc, ry, rx, ri of
 *       x[n, rc, oh*s - pad + ry*d, ow*s - pad + rx*d, ri] * w[co, rc, ry, rx, ri, j]
 *   depthwise: no rc/ri; x[n, co, .., .., j] * w[co, 0, ry, rx, 0, j]
 * The sum is the stage tagged "conv_nchwc" (the default schedule's blocked
 * anchor); the bias an elementwise epilogue stage. */

typedef struct nchwc_def {
    const te_tensor *x, *w, *bias, *sum;
    op_nchwc_shape s;
} nchwc_def;

static ir_expr *nchwc_sum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const nchwc_def *d = user;
    ir_builder *b = &g->b;
    const op_nchwc_shape *s = &d->s;
    ir_axis axes[4], k[2];
    int na = 0;
    bool has_rc = !s->depthwise, has_ri = !s->depthwise && s->in_block > 1;
    if (has_rc) axes[na++] = te_reduce_axis(g, "rc", s->in_channels / s->in_block);
    op_conv_spatial_axes(g, 2, s->win.kernel, k);
    axes[na++] = k[0];
    axes[na++] = k[1];
    if (has_ri) axes[na++] = te_reduce_axis(g, "ri", s->in_block);
    ir_expr *rc = has_rc ? ir_var_ref(b, axes[0].var) : NULL;
    ir_expr *ri = has_ri ? ir_var_ref(b, axes[na - 1].var) : ir_int(b, 0);
    ir_expr *xi[5], *wi[6];
    xi[0] = idx[0];
    xi[1] = s->depthwise ? idx[1] : rc;
    ir_expr *cond = op_conv_window_taps(g, &s->win, idx + 2, k, xi + 2);
    if (d->x->n_axes == 5) xi[4] = s->depthwise ? idx[4] : ri;
    wi[0] = idx[1];
    wi[1] = s->depthwise ? ir_int(b, 0) : rc;
    wi[2] = ir_var_ref(b, k[0].var);
    wi[3] = ir_var_ref(b, k[1].var);
    wi[4] = s->depthwise ? ir_int(b, 0) : ri;
    wi[5] = idx[4];
    ir_expr *xv = te_read(g, d->x, xi);
    if (cond) xv = ir_select(b, cond, xv, ir_const_float(b, SMELT_DT_FLOAT32, 0.0));
    return te_reduce(g, IR_REDUCE_SUM, ir_mul(b, xv, te_read(g, d->w, wi)), na, axes);
}

static ir_expr *nchwc_bias_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const nchwc_def *d = user;
    ir_expr *bi[2] = {idx[1], idx[4]};
    return ir_add(&g->b, te_read(g, d->sum, idx), te_read(g, d->bias, bi));
}

/* A 3x3 stride-1 group-1 conv with constant weights: the Winograd rewrite
 * (sched/winograd.c) may replace its sum stage when a schedule asks. */
static smelt_status nchwc_winograd_info(op_compute_args *a, const nchwc_def *d, te_tensor *sum)
{
    const op_nchwc_shape *s = &d->s;
    const smelt_tensor *wc = a->in_const ? a->in_const[1] : NULL;
    if (s->depthwise || !wc || !wc->data || wc->dtype != SMELT_DT_FLOAT32 ||
        d->x->buf->dtype != SMELT_DT_FLOAT32)
        return SMELT_OK;
    for (int i = 0; i < 2; i++)
        if (s->win.kernel[i] != 3 || s->win.stride[i] != 1 || s->win.dilation[i] != 1)
            return SMELT_OK;
    te_conv2d_info *c = smelt_arena_alloc(&a->te->arena, sizeof *c);
    if (!c) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    *c = (te_conv2d_info){
        .x = d->x,
        .w = d->w,
        .w_data = wc->data,
        .batch = s->batch,
        .in_channels = s->in_channels,
        .out_channels = s->out_channels,
        .in_block = s->in_block,
        .out_block = s->out_block,
        .in_h = s->win.in[0],
        .in_w = s->win.in[1],
        .out_h = s->win.out[0],
        .out_w = s->win.out[1],
        .pad_top = s->win.pad_begin[0],
        .pad_left = s->win.pad_begin[1],
    };
    sum->conv2d = c;
    return SMELT_OK;
}

static smelt_status nchwc_compute(op_compute_args *a)
{
    const smelt_tensor *y = &a->out_type[0];
    nchwc_def *d = smelt_arena_alloc(&a->te->arena, sizeof *d);
    if (!d) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    d->x = a->in[0];
    d->w = a->in[1];
    d->bias = a->node->n_inputs > 2 ? a->in[2] : NULL;
    smelt_tensor xt = op_conv_te_type(d->x), wt = op_conv_te_type(d->w);
    SMELT_TRY(op_conv_nchwc_resolve(a->ctx, a->node, &xt, &wt, &d->s));
    te_tensor *sum = te_compute(a->te, d->bias ? "conv" : "y", SMELT_DT_FLOAT32, y->rank, y->dims,
                                nchwc_sum_body, d, "conv_nchwc");
    if (sum) SMELT_TRY(nchwc_winograd_info(a, d, sum));
    if (sum && d->bias) {
        d->sum = sum;
        sum = te_compute(a->te, "y", SMELT_DT_FLOAT32, y->rank, y->dims, nchwc_bias_body, d,
                         "injective");
    }
    a->out[0] = sum;
    return sum ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_LAYOUT_TRANSFORM = {
    .compute = transform_compute,
    .import = transform_import,
    .infer = transform_infer,
    .eval = transform_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = OP_FLAG_INTERNAL,
};

const op_def op_def_CONV_NCHWC = {
    .compute = nchwc_compute,
    .import = nchwc_import,
    .infer = nchwc_infer,
    .eval = nchwc_eval,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = OP_FLAG_INTERNAL,
};
