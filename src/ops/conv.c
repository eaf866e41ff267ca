/* Convolution family: Conv and ConvTranspose.
 *
 * Attribute parsing and window geometry (auto_pad, ceil_mode, output sizes)
 * also serve the pools (pool.c).  The reference kernels are direct
 * convolutions normalised to 3 spatial dims; for each (output channel, input
 * channel, kernel position) they clamp the range of valid output rows and
 * columns once, so the innermost loop is a plain strided row update with no
 * per-element bounds test.  Sums are accumulated in double.
 */
#include <string.h>

#include "ops/conv.h"

#define ATTR_VALUE_MAX INT32_MAX /* keeps all geometry arithmetic far from overflow */

static const smelt_dtype k_conv_dtypes[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_FLOAT16,
                                            SMELT_DT_BFLOAT16, SMELT_DT_UNDEFINED};

static const char *input_name(const gr_node *node, int i)
{
    return i < node->n_inputs && node->inputs[i] ? node->inputs[i]->name : "";
}

static int64_t div_floor(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t div_ceil(int64_t a, int64_t b) { return -div_floor(-a, b); }

/* ---- attributes ---------------------------------------------------------- */

void op_conv_attrs_init(op_conv_attrs *a)
{
    memset(a, 0, sizeof *a);
    a->group = 1;
}

const char *op_auto_pad_name(op_auto_pad p)
{
    switch (p) {
    case OP_AUTO_PAD_NOTSET: return "NOTSET";
    case OP_AUTO_PAD_SAME_UPPER: return "SAME_UPPER";
    case OP_AUTO_PAD_SAME_LOWER: return "SAME_LOWER";
    case OP_AUTO_PAD_VALID: return "VALID";
    }
    return "?";
}

static smelt_status parse_auto_pad(smelt_ctx *ctx, const gr_node *node, op_auto_pad *out)
{
    const char *s;
    SMELT_TRY(op_attr_string(ctx, node, "auto_pad", "NOTSET", &s));
    for (op_auto_pad p = OP_AUTO_PAD_NOTSET; p <= OP_AUTO_PAD_VALID; p++) {
        if (strcmp(s, op_auto_pad_name(p)) == 0) {
            *out = p;
            return SMELT_OK;
        }
    }
    return op_errf(ctx, node, SMELT_ERR_ATTR,
                   "attribute 'auto_pad' has unknown value '%s' (expected NOTSET, SAME_UPPER, "
                   "SAME_LOWER or VALID)", s);
}

/* An ints attribute of at most `max` values, each in [min_value, ATTR_VALUE_MAX].
 * *count = -1 when absent; an empty list also means "defaults". */
static smelt_status read_int_list(smelt_ctx *ctx, const gr_node *node, const char *name, int max,
                                  int64_t min_value, int *count, int64_t *dst)
{
    const int64_t *vals;
    SMELT_TRY(op_attr_ints(ctx, node, name, count, &vals));
    if (*count > max)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute '%s' has %d values; at most %d are supported", name, *count,
                       max);
    for (int i = 0; i < *count; i++) {
        if (vals[i] < min_value || vals[i] > ATTR_VALUE_MAX)
            return op_errf(ctx, node, SMELT_ERR_ATTR,
                           "attribute '%s' has value %lld at position %d; expected %lld to %d",
                           name, (long long)vals[i], i, (long long)min_value, ATTR_VALUE_MAX);
        dst[i] = vals[i];
    }
    return SMELT_OK;
}

smelt_status op_conv_window_import(smelt_ctx *ctx, const gr_node *node, bool kernel_required,
                                   op_conv_window_attrs *out)
{
    memset(out, 0, sizeof *out);
    SMELT_TRY(parse_auto_pad(ctx, node, &out->auto_pad));
    SMELT_TRY(read_int_list(ctx, node, "kernel_shape", OP_CONV_MAX_SPATIAL, 1,
                            &out->n_kernel_shape, out->kernel_shape));
    SMELT_TRY(read_int_list(ctx, node, "strides", OP_CONV_MAX_SPATIAL, 1, &out->n_strides,
                            out->strides));
    SMELT_TRY(read_int_list(ctx, node, "dilations", OP_CONV_MAX_SPATIAL, 1, &out->n_dilations,
                            out->dilations));
    SMELT_TRY(read_int_list(ctx, node, "pads", 2 * OP_CONV_MAX_SPATIAL, 0, &out->n_pads,
                            out->pads));
    if (kernel_required && out->n_kernel_shape <= 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'kernel_shape' is required");
    if (out->n_pads > 0 && out->n_pads % 2 != 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'pads' has %d values; expected two per spatial dim",
                       out->n_pads);
    return SMELT_OK;
}

#define CONV_WINDOW {"auto_pad", 0, 0}, {"kernel_shape", 0, 0}, {"strides", 0, 0}, {"dilations", 0, 0}, {"pads", 0, 0}
OP_ATTRS(CONV) = {CONV_WINDOW, {"group", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(CONV_TRANSPOSE) = {CONV_WINDOW, {"group", 0, 0}, {"output_padding", 0, 0}, {"output_shape", 0, 0}, {NULL, 0, 0}};
#undef CONV_WINDOW

static smelt_status conv_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_conv_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    op_conv_attrs_init(a);
    SMELT_TRY(op_conv_window_import(ctx, node, false, &a->win));
    SMELT_TRY(op_attr_int(ctx, node, "group", 1, &a->group));
    if (a->group < 1 || a->group > ATTR_VALUE_MAX)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'group' is %lld; expected 1 to %d",
                       (long long)a->group, ATTR_VALUE_MAX);
    if (node->op != OP_CONV_TRANSPOSE) return SMELT_OK;
    SMELT_TRY(read_int_list(ctx, node, "output_padding", OP_CONV_MAX_SPATIAL, 0,
                            &a->n_output_padding, a->output_padding));
    /* Some exporters write output_shape with the N and C dims: keep the spatial tail. */
    int64_t shape[SMELT_MAX_RANK];
    int n;
    SMELT_TRY(read_int_list(ctx, node, "output_shape", SMELT_MAX_RANK, 0, &n, shape));
    a->n_output_shape = n;
    if (n > 0) memcpy(a->output_shape, shape, sizeof(int64_t) * (size_t)n);
    return SMELT_OK;
}

/* ---- geometry ------------------------------------------------------------- */

static smelt_status check_count(smelt_ctx *ctx, const gr_node *node, const char *name, int count,
                                int expected)
{
    if (count > 0 && count != expected)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute '%s' has %d values, expected %d for input '%s' with %d "
                       "spatial dims",
                       name, count, expected, input_name(node, 0),
                       strcmp(name, "pads") == 0 ? expected / 2 : expected);
    return SMELT_OK;
}

static smelt_status check_window_counts(smelt_ctx *ctx, const gr_node *node,
                                        const op_conv_window_attrs *a, int n_spatial)
{
    SMELT_TRY(check_count(ctx, node, "kernel_shape", a->n_kernel_shape, n_spatial));
    SMELT_TRY(check_count(ctx, node, "strides", a->n_strides, n_spatial));
    SMELT_TRY(check_count(ctx, node, "dilations", a->n_dilations, n_spatial));
    if (a->auto_pad == OP_AUTO_PAD_NOTSET)
        SMELT_TRY(check_count(ctx, node, "pads", a->n_pads, 2 * n_spatial));
    return SMELT_OK;
}

/* Fill everything but out[] from the attributes (pads: explicit ones only). */
static void window_from_attrs(const op_conv_window_attrs *a, int n_spatial, const int64_t *in,
                              const int64_t *kernel, op_conv_window *w)
{
    bool explicit_pads = a->auto_pad == OP_AUTO_PAD_NOTSET && a->n_pads > 0;
    memset(w, 0, sizeof *w);
    w->n_spatial = n_spatial;
    for (int i = 0; i < n_spatial; i++) {
        w->in[i] = in[i];
        w->kernel[i] = a->n_kernel_shape > 0 ? a->kernel_shape[i] : kernel[i];
        w->stride[i] = a->n_strides > 0 ? a->strides[i] : 1;
        w->dilation[i] = a->n_dilations > 0 ? a->dilations[i] : 1;
        w->pad_begin[i] = explicit_pads ? a->pads[i] : 0;
        w->pad_end[i] = explicit_pads ? a->pads[n_spatial + i] : 0;
    }
}

/* Checks a static input size and kernel size of axis i; *known false when
 * either is symbolic. */
static smelt_status axis_sizes(smelt_ctx *ctx, const gr_node *node, const op_conv_window *w,
                               int i, bool *known)
{
    *known = w->in[i] >= 0 && w->kernel[i] >= 0;
    if (!*known) return SMELT_OK;
    if (w->in[i] > SMELT_LIMIT_TENSOR_ELEMS)
        return op_errf(ctx, node, SMELT_ERR_LIMIT,
                       "spatial dim %d of input '%s' is %lld, above the limit %lld", i,
                       input_name(node, 0), (long long)w->in[i],
                       (long long)SMELT_LIMIT_TENSOR_ELEMS);
    if (w->kernel[i] < 1 || w->kernel[i] > ATTR_VALUE_MAX)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "kernel size of spatial dim %d is %lld", i,
                       (long long)w->kernel[i]);
    return SMELT_OK;
}

static int64_t dilated_kernel(const op_conv_window *w, int i)
{
    return w->dilation[i] * (w->kernel[i] - 1) + 1;
}

/* SAME_UPPER puts the odd padding unit at the end, SAME_LOWER at the start. */
static void split_same_padding(op_auto_pad p, int64_t total, int64_t *begin, int64_t *end)
{
    *begin = p == OP_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
    *end = total - *begin;
}

static smelt_status resolve_forward_axis(smelt_ctx *ctx, const gr_node *node, op_auto_pad pad,
                                         bool ceil_mode, int i, op_conv_window *w)
{
    bool known;
    SMELT_TRY(axis_sizes(ctx, node, w, i, &known));
    if (!known) {
        w->out[i] = GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    int64_t in = w->in[i], s = w->stride[i], dk = dilated_kernel(w, i);
    if (pad == OP_AUTO_PAD_SAME_UPPER || pad == OP_AUTO_PAD_SAME_LOWER) {
        w->out[i] = div_ceil(in, s);
        int64_t total = (w->out[i] - 1) * s + dk - in;
        split_same_padding(pad, total > 0 ? total : 0, &w->pad_begin[i], &w->pad_end[i]);
        return SMELT_OK;
    }
    int64_t span = in + w->pad_begin[i] + w->pad_end[i] - dk;
    if (span < 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "spatial dim %d: input size %lld plus pads %lld+%lld is smaller than the "
                       "kernel extent %lld (kernel %lld, dilation %lld)",
                       i, (long long)in, (long long)w->pad_begin[i], (long long)w->pad_end[i],
                       (long long)dk, (long long)w->kernel[i], (long long)w->dilation[i]);
    w->out[i] = (ceil_mode ? div_ceil(span, s) : span / s) + 1;
    /* ceil_mode: the last window must start inside the input or its left padding. */
    if (ceil_mode && (w->out[i] - 1) * s >= in + w->pad_begin[i]) w->out[i]--;
    return SMELT_OK;
}

smelt_status op_conv_window_resolve(smelt_ctx *ctx, const gr_node *node,
                                    const op_conv_window_attrs *a, int n_spatial,
                                    const int64_t *in, const int64_t *kernel, bool ceil_mode,
                                    op_conv_window *out)
{
    SMELT_TRY(check_window_counts(ctx, node, a, n_spatial));
    if (a->n_kernel_shape <= 0 && !kernel)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'kernel_shape' is required");
    window_from_attrs(a, n_spatial, in, kernel, out);
    for (int i = 0; i < n_spatial; i++)
        SMELT_TRY(resolve_forward_axis(ctx, node, a->auto_pad, ceil_mode, i, out));
    return SMELT_OK;
}

/* ConvTranspose axis i: out = stride*(in-1) + dk - pad_begin - pad_end. */
static smelt_status resolve_transpose_axis(smelt_ctx *ctx, const gr_node *node,
                                           const op_conv_attrs *a, int i, op_conv_window *w)
{
    int ns = w->n_spatial;
    int64_t s = w->stride[i], d = w->dilation[i];
    int64_t out_pad = a->n_output_padding > 0 ? a->output_padding[i] : 0;
    bool has_shape = a->n_output_shape > 0;
    int64_t target = has_shape ? a->output_shape[a->n_output_shape - ns + i] : 0;
    if (out_pad >= s && out_pad >= d)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'output_padding' is %lld for spatial dim %d; it must be less "
                       "than the stride (%lld) or the dilation (%lld)",
                       (long long)out_pad, i, (long long)s, (long long)d);
    bool known;
    SMELT_TRY(axis_sizes(ctx, node, w, i, &known));
    if (!known) {
        w->out[i] = has_shape ? target : GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    int64_t full; /* stride*(in-1) + dk: the output before any padding */
    if (smelt_mul_overflow_i64(s, w->in[i] - 1, &full) ||
        smelt_add_overflow_i64(full, dilated_kernel(w, i), &full))
        return op_errf(ctx, node, SMELT_ERR_LIMIT, "output size of spatial dim %d overflows", i);
    bool same = a->win.auto_pad == OP_AUTO_PAD_SAME_UPPER ||
                a->win.auto_pad == OP_AUTO_PAD_SAME_LOWER;
    if (!has_shape && !same) { /* explicit pads (zero for VALID) */
        w->pad_end[i] -= out_pad;
        w->out[i] = full - w->pad_begin[i] - w->pad_end[i];
    } else {
        if (!has_shape && smelt_mul_overflow_i64(w->in[i], s, &target))
            return op_errf(ctx, node, SMELT_ERR_LIMIT, "output size of spatial dim %d overflows",
                           i);
        /* Pads derived from the wanted size; a negative total (output larger
         * than the full result) extends the end, like output_padding. */
        int64_t total = full + out_pad - target;
        w->pad_begin[i] = 0;
        if (total > 0) {
            int64_t unused_end;
            split_same_padding(a->win.auto_pad == OP_AUTO_PAD_SAME_UPPER
                                   ? OP_AUTO_PAD_SAME_UPPER : OP_AUTO_PAD_SAME_LOWER,
                               total, &w->pad_begin[i], &unused_end);
        }
        w->pad_end[i] = full - w->pad_begin[i] - target;
        w->out[i] = target;
    }
    if (w->out[i] < 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "spatial dim %d: output size would be %lld (input %lld, pads %lld+%lld)",
                       i, (long long)w->out[i], (long long)w->in[i], (long long)w->pad_begin[i],
                       (long long)(w->pad_end[i] + out_pad));
    return SMELT_OK;
}

static smelt_status resolve_transpose_window(smelt_ctx *ctx, const gr_node *node,
                                             const op_conv_attrs *a, int n_spatial,
                                             const int64_t *in, const int64_t *kernel,
                                             op_conv_window *w)
{
    SMELT_TRY(check_window_counts(ctx, node, &a->win, n_spatial));
    SMELT_TRY(check_count(ctx, node, "output_padding", a->n_output_padding, n_spatial));
    if (a->n_output_shape > 0 && a->n_output_shape != n_spatial &&
        a->n_output_shape != n_spatial + 2)
        SMELT_TRY(check_count(ctx, node, "output_shape", a->n_output_shape, n_spatial));
    window_from_attrs(&a->win, n_spatial, in, kernel, w);
    for (int i = 0; i < n_spatial; i++) SMELT_TRY(resolve_transpose_axis(ctx, node, a, i, w));
    return SMELT_OK;
}

/* Channels: Conv W is [M, C/group, k...]; ConvTranspose W is [C, M/group, k...]. */
static smelt_status resolve_channels(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                     const smelt_tensor *w, op_conv_shape *cs)
{
    int64_t c = x->dims[1], w0 = w->dims[0], w1 = w->dims[1], g = cs->group;
    if (!cs->transpose) {
        if (w0 >= 0 && w0 % g != 0)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "input W '%s' has %lld output channels, not divisible by group %lld",
                           input_name(node, 1), (long long)w0, (long long)g);
        if (c >= 0 && w1 >= 0 && c != w1 * g)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "input X '%s' has %lld channels, but W '%s' (dim 1 = %lld) with group "
                           "%lld expects %lld",
                           input_name(node, 0), (long long)c, input_name(node, 1), (long long)w1,
                           (long long)g, (long long)(w1 * g));
        cs->out_channels = w0;
        return SMELT_OK;
    }
    if (c >= 0 && w0 >= 0 && c != w0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input X '%s' has %lld channels, but W '%s' has %lld (dim 0)",
                       input_name(node, 0), (long long)c, input_name(node, 1), (long long)w0);
    if (c >= 0 && c % g != 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input X '%s' has %lld channels, not divisible by group %lld",
                       input_name(node, 0), (long long)c, (long long)g);
    if (w1 < 0)
        cs->out_channels = g == 1 ? w1 : GR_DIM_UNKNOWN;
    else if (smelt_mul_overflow_i64(w1, g, &cs->out_channels))
        return op_errf(ctx, node, SMELT_ERR_LIMIT, "output channel count overflows");
    return SMELT_OK;
}

/* kernel_shape, when given, must agree with W's static spatial dims. */
static smelt_status check_kernel_matches_w(smelt_ctx *ctx, const gr_node *node,
                                           const smelt_tensor *w, const op_conv_window *win)
{
    for (int i = 0; i < win->n_spatial; i++) {
        int64_t wd = w->dims[2 + i];
        if (wd >= 0 && wd != win->kernel[i])
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "attribute 'kernel_shape' is %lld for spatial dim %d, but W '%s' has "
                           "%lld",
                           (long long)win->kernel[i], i, input_name(node, 1), (long long)wd);
    }
    return SMELT_OK;
}

smelt_status op_conv_resolve(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                             const smelt_tensor *w, op_conv_shape *out)
{
    const op_conv_attrs *a = node->op_attrs;
    if (!a) return op_errf(ctx, node, SMELT_ERR_INTERNAL, "attributes were not imported");
    if (x->rank < 3)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input X '%s' has rank %d, expected at least 3 (N, C, spatial dims...)",
                       input_name(node, 0), x->rank);
    if (w->rank != x->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input W '%s' has rank %d, expected %d like input X '%s'",
                       input_name(node, 1), w->rank, x->rank, input_name(node, 0));
    memset(out, 0, sizeof *out);
    out->transpose = node->op == OP_CONV_TRANSPOSE;
    out->batch = x->dims[0];
    out->in_channels = x->dims[1];
    out->group = a->group;
    SMELT_TRY(resolve_channels(ctx, node, x, w, out));
    int ns = x->rank - 2;
    if (out->transpose)
        SMELT_TRY(resolve_transpose_window(ctx, node, a, ns, x->dims + 2, w->dims + 2, &out->win));
    else
        SMELT_TRY(op_conv_window_resolve(ctx, node, &a->win, ns, x->dims + 2, w->dims + 2, false,
                                         &out->win));
    return check_kernel_matches_w(ctx, node, w, &out->win);
}

/* ---- shape inference ------------------------------------------------------- */

static smelt_status check_bias(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                               const smelt_tensor *b, int64_t out_channels)
{
    if (b->dtype != x->dtype)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input B '%s' has dtype %s, expected %s",
                       input_name(node, 2), smelt_dtype_name(b->dtype),
                       smelt_dtype_name(x->dtype));
    if (b->rank != 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input B '%s' has rank %d, expected 1",
                       input_name(node, 2), b->rank);
    if (b->dims[0] >= 0 && out_channels >= 0 && b->dims[0] != out_channels)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input B '%s' has %lld elements, expected %lld (one per output channel)",
                       input_name(node, 2), (long long)b->dims[0], (long long)out_channels);
    return SMELT_OK;
}

static smelt_status conv_infer(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *w = in[1], *b = op_input(node, in, 2);
    SMELT_TRY(op_check_dtype(ctx, node, x, "input X", k_conv_dtypes));
    if (w->dtype != x->dtype)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input W '%s' has dtype %s, expected %s",
                       input_name(node, 1), smelt_dtype_name(w->dtype),
                       smelt_dtype_name(x->dtype));
    op_conv_shape cs;
    SMELT_TRY(op_conv_resolve(ctx, node, x, w, &cs));
    if (b) SMELT_TRY(check_bias(ctx, node, x, b, cs.out_channels));
    out[0].dtype = x->dtype;
    out[0].rank = x->rank;
    out[0].dims[0] = cs.batch;
    out[0].dims[1] = cs.out_channels;
    for (int i = 0; i < cs.win.n_spatial; i++) out[0].dims[2 + i] = cs.win.out[i];
    return SMELT_OK;
}

/* ---- element conversion (shared with pool.c) ------------------------------------ */

void op_conv_load_f64(const smelt_tensor *t, int64_t off, int64_t n, double *dst)
{
    switch (t->dtype) {
    case SMELT_DT_FLOAT32: {
        const float *p = (const float *)t->data + off;
        for (int64_t i = 0; i < n; i++) dst[i] = p[i];
        break;
    }
    case SMELT_DT_FLOAT64:
        memcpy(dst, (const double *)t->data + off, sizeof(double) * (size_t)n);
        break;
    case SMELT_DT_FLOAT16: {
        const uint16_t *p = (const uint16_t *)t->data + off;
        for (int64_t i = 0; i < n; i++) dst[i] = smelt_f16_to_f32(p[i]);
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++) dst[i] = op_get_f64(t, off + i);
        break;
    }
}

void op_conv_store_f64(smelt_tensor *t, int64_t off, int64_t n, const double *src)
{
    switch (t->dtype) {
    case SMELT_DT_FLOAT32: {
        float *p = (float *)t->data + off;
        for (int64_t i = 0; i < n; i++) p[i] = (float)src[i];
        break;
    }
    case SMELT_DT_FLOAT64:
        memcpy((double *)t->data + off, src, sizeof(double) * (size_t)n);
        break;
    default:
        for (int64_t i = 0; i < n; i++) op_set_f64(t, off + i, src[i]);
        break;
    }
}

/* ---- reference kernels ---------------------------------------------------- */

/* The geometry normalised to exactly 3 spatial dims (leading dims of size 1). */
typedef struct conv_plan {
    int64_t batch, in_ch, out_ch, group;
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
    int64_t in_plane, out_plane, k_vol;
} conv_plan;

static smelt_status plan_make(smelt_ctx *ctx, const gr_node *node, const op_conv_shape *cs,
                              conv_plan *p)
{
    const op_conv_window *w = &cs->win;
    if (w->n_spatial > OP_CONV_MAX_SPATIAL_EVAL)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                       "%d spatial dims; the reference kernel supports at most %d",
                       w->n_spatial, OP_CONV_MAX_SPATIAL_EVAL);
    memset(p, 0, sizeof *p);
    p->batch = cs->batch;
    p->in_ch = cs->in_channels;
    p->out_ch = cs->out_channels;
    p->group = cs->group;
    int lead = 3 - w->n_spatial;
    for (int i = 0; i < 3; i++) {
        int j = i - lead;
        p->in[i] = j >= 0 ? w->in[j] : 1;
        p->out[i] = j >= 0 ? w->out[j] : 1;
        p->k[i] = j >= 0 ? w->kernel[j] : 1;
        p->s[i] = j >= 0 ? w->stride[j] : 1;
        p->d[i] = j >= 0 ? w->dilation[j] : 1;
        p->p[i] = j >= 0 ? w->pad_begin[j] : 0;
    }
    /* A pointwise window over identical in/out sizes is one long row. */
    bool pointwise = true;
    for (int i = 0; i < 3; i++)
        pointwise = pointwise && p->k[i] == 1 && p->s[i] == 1 && p->p[i] == 0 &&
                    p->in[i] == p->out[i];
    if (pointwise) {
        p->in[2] = p->out[2] = p->in[0] * p->in[1] * p->in[2];
        p->in[0] = p->in[1] = p->out[0] = p->out[1] = 1;
    }
    p->in_plane = p->in[0] * p->in[1] * p->in[2];
    p->out_plane = p->out[0] * p->out[1] * p->out[2];
    p->k_vol = p->k[0] * p->k[1] * p->k[2];
    return SMELT_OK;
}

void op_conv_valid_range(int64_t na, int64_t nb, int64_t s, int64_t off, int64_t *lo,
                         int64_t *hi)
{
    int64_t l = div_ceil(-off, s), h = div_floor(nb - 1 - off, s) + 1;
    *lo = l > 0 ? l : 0;
    *hi = h < na ? h : na;
    if (*hi < *lo) *hi = *lo;
}

/* Inputs as float32 or float64 arrays (float16/bfloat16 are converted). */
typedef struct conv_operands {
    bool f64;
    const void *x, *w;
    float *owned_x, *owned_w;
} conv_operands;

static float *copy_as_f32(const smelt_tensor *t)
{
    int64_t n = op_numel(t);
    float *p = smelt_alloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (p)
        for (int64_t i = 0; i < n; i++) p[i] = (float)op_get_f64(t, i);
    return p;
}

static smelt_status operands_init(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                  const smelt_tensor *w, conv_operands *ops)
{
    memset(ops, 0, sizeof *ops);
    ops->f64 = x->dtype == SMELT_DT_FLOAT64;
    ops->x = x->data;
    ops->w = w->data;
    if (x->dtype == SMELT_DT_FLOAT32 || ops->f64) return SMELT_OK;
    ops->x = ops->owned_x = copy_as_f32(x);
    ops->w = ops->owned_w = copy_as_f32(w);
    if (!ops->owned_x || !ops->owned_w)
        return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory converting inputs to float32");
    return SMELT_OK;
}

static void operands_fini(conv_operands *ops)
{
    smelt_free(ops->owned_x);
    smelt_free(ops->owned_w);
}

static double weight_at(const conv_operands *ops, int64_t i)
{
    return ops->f64 ? ((const double *)ops->w)[i] : ((const float *)ops->w)[i];
}

/* acc[j] += w * x[xi + j*xs]: one output row of a forward convolution. */
static void row_gather(const conv_operands *ops, double *acc, int64_t xi, int64_t xs, int64_t n,
                       double w)
{
    if (ops->f64) {
        const double *x = (const double *)ops->x + xi;
        for (int64_t j = 0; j < n; j++) acc[j] += w * x[j * xs];
    } else if (xs == 1) {
        const float *x = (const float *)ops->x + xi;
        for (int64_t j = 0; j < n; j++) acc[j] += w * x[j];
    } else {
        const float *x = (const float *)ops->x + xi;
        for (int64_t j = 0; j < n; j++) acc[j] += w * x[j * xs];
    }
}

/* acc[j*as] += w * x[xi + j]: one input row of a transposed convolution. */
static void row_scatter(const conv_operands *ops, double *acc, int64_t as, int64_t xi, int64_t n,
                        double w)
{
    if (ops->f64) {
        const double *x = (const double *)ops->x + xi;
        for (int64_t j = 0; j < n; j++) acc[j * as] += w * x[j];
    } else {
        const float *x = (const float *)ops->x + xi;
        for (int64_t j = 0; j < n; j++) acc[j * as] += w * x[j];
    }
}

/* Adds the contribution of input plane x_plane through kernel w_off to the
 * output plane acc of a forward convolution. */
static void conv_forward_plane(const conv_plan *p, const conv_operands *ops, int64_t x_plane,
                               int64_t w_off, double *acc)
{
    int64_t kidx = 0;
    for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
        int64_t off0 = k0 * p->d[0] - p->p[0], lo0, hi0;
        op_conv_valid_range(p->out[0], p->in[0], p->s[0], off0, &lo0, &hi0);
        for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
            int64_t off1 = k1 * p->d[1] - p->p[1], lo1, hi1;
            op_conv_valid_range(p->out[1], p->in[1], p->s[1], off1, &lo1, &hi1);
            for (int64_t k2 = 0; k2 < p->k[2]; k2++, kidx++) {
                int64_t off2 = k2 * p->d[2] - p->p[2], lo2, hi2;
                op_conv_valid_range(p->out[2], p->in[2], p->s[2], off2, &lo2, &hi2);
                if (hi2 == lo2) continue;
                double wv = weight_at(ops, w_off + kidx);
                for (int64_t o0 = lo0; o0 < hi0; o0++) {
                    int64_t i0 = o0 * p->s[0] + off0;
                    for (int64_t o1 = lo1; o1 < hi1; o1++) {
                        int64_t i1 = o1 * p->s[1] + off1;
                        int64_t xi = x_plane + (i0 * p->in[1] + i1) * p->in[2] +
                                     lo2 * p->s[2] + off2;
                        row_gather(ops, acc + (o0 * p->out[1] + o1) * p->out[2] + lo2, xi,
                                   p->s[2], hi2 - lo2, wv);
                    }
                }
            }
        }
    }
}

/* Same for a transposed convolution: input positions scatter to outputs. */
static void conv_transpose_plane(const conv_plan *p, const conv_operands *ops, int64_t x_plane,
                                 int64_t w_off, double *acc)
{
    int64_t kidx = 0;
    for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
        int64_t off0 = k0 * p->d[0] - p->p[0], lo0, hi0;
        op_conv_valid_range(p->in[0], p->out[0], p->s[0], off0, &lo0, &hi0);
        for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
            int64_t off1 = k1 * p->d[1] - p->p[1], lo1, hi1;
            op_conv_valid_range(p->in[1], p->out[1], p->s[1], off1, &lo1, &hi1);
            for (int64_t k2 = 0; k2 < p->k[2]; k2++, kidx++) {
                int64_t off2 = k2 * p->d[2] - p->p[2], lo2, hi2;
                op_conv_valid_range(p->in[2], p->out[2], p->s[2], off2, &lo2, &hi2);
                if (hi2 == lo2) continue;
                double wv = weight_at(ops, w_off + kidx);
                for (int64_t i0 = lo0; i0 < hi0; i0++) {
                    int64_t o0 = i0 * p->s[0] + off0;
                    for (int64_t i1 = lo1; i1 < hi1; i1++) {
                        int64_t o1 = i1 * p->s[1] + off1;
                        int64_t ai = (o0 * p->out[1] + o1) * p->out[2] + lo2 * p->s[2] + off2;
                        int64_t xi = x_plane + (i0 * p->in[1] + i1) * p->in[2] + lo2;
                        row_scatter(ops, acc + ai, p->s[2], xi, hi2 - lo2, wv);
                    }
                }
            }
        }
    }
}

/* Accumulate output channel m of batch n into acc (zeroed by the caller). */
static void conv_channel(const conv_plan *p, const conv_operands *ops, bool transpose,
                         int64_t n, int64_t m, double *acc)
{
    int64_t cg = p->in_ch / p->group, mg = p->out_ch / p->group, g = m / mg;
    for (int64_t ci = 0; ci < cg; ci++) {
        int64_t c = g * cg + ci;
        int64_t x_plane = (n * p->in_ch + c) * p->in_plane;
        if (transpose)
            conv_transpose_plane(p, ops, x_plane, (c * mg + m % mg) * p->k_vol, acc);
        else
            conv_forward_plane(p, ops, x_plane, (m * cg + ci) * p->k_vol, acc);
    }
}

static smelt_status conv_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *w = in[1], *b = op_input(node, in, 2);
    op_conv_shape cs;
    conv_plan p;
    SMELT_TRY(op_conv_resolve(ctx, node, x, w, &cs));
    SMELT_TRY(plan_make(ctx, node, &cs, &p));
    if (op_numel(&out[0]) == 0) return SMELT_OK;
    conv_operands ops;
    smelt_status st = operands_init(ctx, node, x, w, &ops);
    double *acc = st == SMELT_OK ? smelt_alloc(sizeof(double) * (size_t)p.out_plane) : NULL;
    if (st == SMELT_OK && !acc) st = op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t n = 0; st == SMELT_OK && n < p.batch; n++) {
        for (int64_t m = 0; m < p.out_ch; m++) {
            double bias = b ? op_get_f64(b, m) : 0.0;
            for (int64_t i = 0; i < p.out_plane; i++) acc[i] = bias;
            conv_channel(&p, &ops, cs.transpose, n, m, acc);
            op_conv_store_f64(&out[0], (n * p.out_ch + m) * p.out_plane, p.out_plane, acc);
        }
    }
    smelt_free(acc);
    operands_fini(&ops);
    return st;
}

/* ---- compute definitions ---------------------------------------------------
 *
 *   Conv:          y[n, m, o...] = b[m] + sum over rc, k... of
 *                      x[n, g*Cg + rc, o*s - pad + k*d] * w[m, rc, k...]
 *                  (g = m / Mg; taps in the padding read as 0)
 *   ConvTranspose: y[n, m, o...] = b[m] + sum over rc, k... of
 *                      x[n, g*Cg + rc, (o + pad - k*d) / s] * w[g*Cg + rc, m % Mg, k...]
 *                  over the taps where o + pad - k*d is a multiple of s that
 *                  lands inside x: the gather form of the scatter definition.
 * The sum is one reduce stage; bias and the float16/bfloat16 rounding are an
 * elementwise epilogue stage.
 */

smelt_tensor op_conv_te_type(const te_tensor *t)
{
    smelt_tensor type = {.dtype = t->buf->dtype, .rank = t->buf->rank};
    memcpy(type.dims, t->buf->shape, sizeof(int64_t) * (size_t)type.rank);
    return type;
}

smelt_dtype op_conv_acc_dtype(smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16 ? SMELT_DT_FLOAT32 : dt;
}

void op_conv_spatial_axes(te_graph *g, int n_spatial, const int64_t *extents, ir_axis *axes)
{
    static const char *const names[OP_CONV_MAX_SPATIAL] = {"rx", "ry", "rz", "rw", "rv", "ru"};
    for (int i = 0; i < n_spatial; i++)
        axes[i] = te_reduce_axis(g, names[n_spatial - 1 - i], extents[i]);
}

ir_expr *op_conv_affine(ir_builder *b, ir_expr *e, int64_t scale, int64_t offset)
{
    if (scale != 1) e = ir_mul(b, e, ir_int(b, scale));
    if (offset > 0) e = ir_add(b, e, ir_int(b, offset));
    if (offset < 0) e = ir_sub(b, e, ir_int(b, -offset));
    return e;
}

ir_expr *op_conv_and(ir_builder *b, ir_expr *a, ir_expr *c)
{
    return a ? ir_binary(b, IR_AND, a, c) : c;
}

ir_expr *op_conv_window_taps(te_graph *g, const op_conv_window *w, ir_expr *const *o,
                             const ir_axis *k, ir_expr **pos)
{
    ir_builder *b = &g->b;
    ir_expr *cond = NULL;
    for (int i = 0; i < w->n_spatial; i++) {
        ir_expr *start = op_conv_affine(b, o[i], w->stride[i], -w->pad_begin[i]);
        ir_expr *tap = op_conv_affine(b, ir_var_ref(b, k[i].var), w->dilation[i], 0);
        pos[i] = ir_add(b, start, tap);
        /* positions grow with o and k: check the extremes once, here */
        int64_t last = (w->out[i] - 1) * w->stride[i] - w->pad_begin[i] +
                       (w->kernel[i] - 1) * w->dilation[i];
        if (w->pad_begin[i] > 0)
            cond = op_conv_and(b, cond, ir_binary(b, IR_GE, pos[i], ir_int(b, 0)));
        if (last >= w->in[i])
            cond = op_conv_and(b, cond, ir_binary(b, IR_LT, pos[i], ir_int(b, w->in[i])));
    }
    return cond;
}

typedef struct conv_def {
    const te_tensor *x, *w, *bias;
    const te_tensor *sum; /* the reduce stage, for the epilogue */
    op_conv_shape cs;
    smelt_dtype acc_dt;
} conv_def;

/* Input channel of reduce index rc for output channel m: g*Cg + rc. */
static ir_expr *group_channel(ir_builder *b, const op_conv_shape *cs, ir_expr *m, ir_expr *rc)
{
    if (cs->group == 1) return rc;
    int64_t cg = cs->in_channels / cs->group, mg = cs->out_channels / cs->group;
    ir_expr *g = mg == 1 ? m : ir_binary(b, IR_FLOORDIV, m, ir_int(b, mg));
    return ir_add(b, op_conv_affine(b, g, cg, 0), rc);
}

/* The reduce axes (rc, kernel taps...) of a convolution. */
static int conv_axes(te_graph *g, const conv_def *d, ir_axis *axes)
{
    const op_conv_window *win = &d->cs.win;
    int64_t reduced_ch = d->cs.transpose ? d->cs.in_channels / d->cs.group : d->w->buf->shape[1];
    axes[0] = te_reduce_axis(g, "rc", reduced_ch);
    op_conv_spatial_axes(g, win->n_spatial, win->kernel, axes + 1);
    return 1 + win->n_spatial;
}

/* sum(select(cond, x[xi], 0) * w[wi]) in the accumulation dtype. */
static ir_expr *conv_sum(te_graph *g, const conv_def *d, ir_expr *cond, ir_expr *const *xi,
                         ir_expr *const *wi, int n_axes, const ir_axis *axes)
{
    ir_builder *b = &g->b;
    ir_expr *xv = ir_cast(b, d->acc_dt, te_read(g, d->x, xi));
    if (cond) xv = ir_select(b, cond, xv, te_reduce_identity(g, IR_REDUCE_SUM, d->acc_dt));
    ir_expr *wv = ir_cast(b, d->acc_dt, te_read(g, d->w, wi));
    return te_reduce(g, IR_REDUCE_SUM, ir_mul(b, xv, wv), n_axes, axes);
}

static ir_expr *conv_forward_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const conv_def *d = user;
    ir_builder *b = &g->b;
    int ns = d->cs.win.n_spatial;
    ir_axis axes[1 + OP_CONV_MAX_SPATIAL];
    int n_axes = conv_axes(g, d, axes);
    ir_expr *xi[SMELT_MAX_RANK], *wi[SMELT_MAX_RANK];
    ir_expr *rc = ir_var_ref(b, axes[0].var);
    xi[0] = idx[0];
    xi[1] = group_channel(b, &d->cs, idx[1], rc);
    wi[0] = idx[1];
    wi[1] = rc;
    ir_expr *cond = op_conv_window_taps(g, &d->cs.win, idx + 2, axes + 1, xi + 2);
    for (int i = 0; i < ns; i++) wi[2 + i] = ir_var_ref(b, axes[1 + i].var);
    return conv_sum(g, d, cond, xi, wi, n_axes, axes);
}

/* Input coordinate read by output o through tap k on axis i of a transposed
 * convolution, and its validity (added to *cond unless always true). */
static ir_expr *transpose_tap(ir_builder *b, const op_conv_window *w, int i, ir_expr *o,
                              ir_expr *k, ir_expr **cond)
{
    int64_t s = w->stride[i];
    ir_expr *t = ir_sub(b, op_conv_affine(b, o, 1, w->pad_begin[i]),
                        op_conv_affine(b, k, w->dilation[i], 0));
    ir_expr *q = s == 1 ? t : ir_binary(b, IR_FLOORDIV, t, ir_int(b, s));
    int64_t t_min = w->pad_begin[i] - (w->kernel[i] - 1) * w->dilation[i];
    int64_t t_max = w->out[i] - 1 + w->pad_begin[i];
    if (t_min < 0) *cond = op_conv_and(b, *cond, ir_binary(b, IR_GE, t, ir_int(b, 0)));
    if (s > 1) {
        ir_expr *rem = ir_binary(b, IR_FLOORMOD, t, ir_int(b, s));
        *cond = op_conv_and(b, *cond, ir_binary(b, IR_EQ, rem, ir_int(b, 0)));
    }
    if (div_floor(t_max, s) >= w->in[i])
        *cond = op_conv_and(b, *cond, ir_binary(b, IR_LT, q, ir_int(b, w->in[i])));
    return q;
}

static ir_expr *conv_transpose_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const conv_def *d = user;
    ir_builder *b = &g->b;
    int ns = d->cs.win.n_spatial;
    ir_axis axes[1 + OP_CONV_MAX_SPATIAL];
    int n_axes = conv_axes(g, d, axes);
    ir_expr *xi[SMELT_MAX_RANK], *wi[SMELT_MAX_RANK], *cond = NULL;
    ir_expr *ic = group_channel(b, &d->cs, idx[1], ir_var_ref(b, axes[0].var));
    int64_t mg = d->cs.out_channels / d->cs.group;
    xi[0] = idx[0];
    xi[1] = ic;
    wi[0] = ic;
    if (d->cs.group == 1)
        wi[1] = idx[1];
    else
        wi[1] = mg == 1 ? ir_int(b, 0) : ir_binary(b, IR_FLOORMOD, idx[1], ir_int(b, mg));
    for (int i = 0; i < ns; i++) {
        wi[2 + i] = ir_var_ref(b, axes[1 + i].var);
        xi[2 + i] = transpose_tap(b, &d->cs.win, i, idx[2 + i], wi[2 + i], &cond);
    }
    return conv_sum(g, d, cond, xi, wi, n_axes, axes);
}

static ir_expr *conv_epilogue_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const conv_def *d = user;
    ir_builder *b = &g->b;
    ir_expr *v = te_read(g, d->sum, idx);
    if (d->bias) v = ir_add(b, v, ir_cast(b, d->acc_dt, te_read(g, d->bias, &idx[1])));
    return ir_cast(b, d->x->buf->dtype, v);
}

te_tensor *op_conv_te_sum(op_compute_args *a, const te_tensor *x, const te_tensor *w,
                          smelt_dtype acc_dt, const char *name)
{
    const smelt_tensor *y = &a->out_type[0];
    conv_def *d = smelt_arena_alloc(&a->te->arena, sizeof *d);
    if (!d) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory"), NULL;
    memset(d, 0, sizeof *d);
    d->x = x;
    d->w = w;
    d->acc_dt = acc_dt;
    smelt_tensor xt = op_conv_te_type(x), wt = op_conv_te_type(w);
    if (op_conv_resolve(a->ctx, a->node, &xt, &wt, &d->cs) != SMELT_OK) return NULL;
    return te_compute(a->te, name, acc_dt, y->rank, y->dims,
                      d->cs.transpose ? conv_transpose_body : conv_forward_body, d, "conv");
}

static smelt_status conv_compute(op_compute_args *a)
{
    const smelt_tensor *y = &a->out_type[0];
    conv_def *d = smelt_arena_alloc(&a->te->arena, sizeof *d);
    if (!d) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    d->x = a->in[0];
    d->bias = a->node->n_inputs > 2 ? a->in[2] : NULL;
    d->acc_dt = op_conv_acc_dtype(y->dtype);
    bool epilogue = d->bias || d->acc_dt != y->dtype;
    te_tensor *sum = op_conv_te_sum(a, a->in[0], a->in[1], d->acc_dt, epilogue ? "conv" : "y");
    if (sum && epilogue) {
        d->sum = sum;
        sum = te_compute(a->te, "y", y->dtype, y->rank, y->dims, conv_epilogue_body, d,
                         "injective");
    }
    a->out[0] = sum;
    return sum ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_CONV = {
    .compute = conv_compute,
    .import = conv_import,
    .infer = conv_infer,
    .eval = conv_eval,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
};

const op_def op_def_CONV_TRANSPOSE = {
    .compute = conv_compute,
    .import = conv_import,
    .infer = conv_infer,
    .eval = conv_eval,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
};
