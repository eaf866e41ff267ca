/* Resampling: Resize (opsets 10, 11, 13, 18) and the deprecated Upsample.
 *
 * Both share one kernel.  Each output coordinate of each axis is mapped back
 * to an input coordinate (the coordinate transformation mode) and turned into
 * at most 4 taps (input index, weight) for that axis; an output element is the
 * sum over the product of its axes' taps.  Indices outside the input are
 * clamped to the edge, as the ONNX reference does.
 */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "ops/resize.h"

#define RESIZE_MAX_TAPS 4

/* ---- import ----------------------------------------------------------------------- */

static smelt_status parse_choice(smelt_ctx *ctx, const gr_node *node, const char *attr,
                                 const char *def, const char *const *names, int n_names,
                                 int *out)
{
    const char *s;
    SMELT_TRY(op_attr_string(ctx, node, attr, def, &s));
    for (int i = 0; i < n_names; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return SMELT_OK;
        }
    }
    return op_errf(ctx, node, SMELT_ERR_ATTR, "unknown %s '%s'", attr, s);
}

static smelt_status parse_mode(smelt_ctx *ctx, const gr_node *node, op_resize_attrs *a)
{
    /* "bilinear" is Upsample-1's spelling of linear */
    static const char *const names[] = {"nearest", "linear", "cubic", "bilinear"};
    int m;
    SMELT_TRY(parse_choice(ctx, node, "mode", "nearest", names, 4, &m));
    a->mode = m == 3 ? OP_RESIZE_LINEAR : (op_resize_mode)m;
    return SMELT_OK;
}

/* Resize-11+ attributes beyond the mode. */
static smelt_status parse_resize11(smelt_ctx *ctx, const gr_node *node, op_resize_attrs *a)
{
    static const char *const coords[] = {"half_pixel",    "half_pixel_symmetric",
                                         "pytorch_half_pixel", "align_corners",
                                         "asymmetric",    "tf_half_pixel_for_nn",
                                         "tf_crop_and_resize"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};
    int c, n;
    int64_t exclude, antialias;
    SMELT_TRY(parse_choice(ctx, node, "coordinate_transformation_mode", "half_pixel", coords,
                           (int)SMELT_ARRAY_LEN(coords), &c));
    SMELT_TRY(parse_choice(ctx, node, "nearest_mode", "round_prefer_floor", nearest,
                           (int)SMELT_ARRAY_LEN(nearest), &n));
    a->coord = (op_resize_coord)c;
    a->nearest = (op_resize_nearest)n;
    SMELT_TRY(op_attr_float(ctx, node, "cubic_coeff_a", -0.75f, &a->cubic_coeff_a));
    SMELT_TRY(op_attr_int(ctx, node, "exclude_outside", 0, &exclude));
    SMELT_TRY(op_attr_float(ctx, node, "extrapolation_value", 0.0f, &a->extrapolation_value));
    a->exclude_outside = exclude != 0;

    SMELT_TRY(op_attr_int(ctx, node, "antialias", 0, &antialias));
    if (antialias != 0)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "antialias=1 is not supported");
    const char *policy;
    SMELT_TRY(op_attr_string(ctx, node, "keep_aspect_ratio_policy", "stretch", &policy));
    if (strcmp(policy, "stretch") != 0)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                       "keep_aspect_ratio_policy '%s' is not supported (only 'stretch')",
                       policy);
    int count;
    const int64_t *axes;
    SMELT_TRY(op_attr_ints(ctx, node, "axes", &count, &axes));
    if (count > SMELT_MAX_RANK)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'axes' has %d entries, at most "
                       "%d allowed", count, SMELT_MAX_RANK);
    a->n_axes = count > 0 ? count : 0;
    for (int i = 0; i < a->n_axes; i++) a->axes[i] = axes[i];
    return SMELT_OK;
}

static smelt_status resize_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_resize_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(parse_mode(ctx, node, a));
    if (g->opset >= 11) return parse_resize11(ctx, node, a);
    /* Resize-10: X, scales -> X, (no roi), scales */
    a->coord = OP_RESIZE_ASYMMETRIC;
    a->nearest = OP_RESIZE_SIMPLE;
    a->cubic_coeff_a = -0.75f;
    gr_value *scales = node->n_inputs > 1 ? node->inputs[1] : NULL;
    if (!scales) return op_errf(ctx, node, SMELT_ERR_MODEL, "input 1 (scales) is required");
    node->inputs[1] = NULL;
    return gr_node_set_input(ctx, g, node, 2, scales);
}

/* A 1-D float32 constant as input `index` (op_set_input_* has no float list). */
static smelt_status set_input_floats(smelt_ctx *ctx, gr_graph *g, gr_node *node, int index,
                                     const float *vals, int count)
{
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    float *d = smelt_calloc(count > 0 ? (size_t)count : 1, sizeof(float));
    if (!t || !d) {
        smelt_free(t);
        smelt_free(d);
        return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    }
    if (count > 0) memcpy(d, vals, (size_t)count * sizeof *d);
    t->dtype = SMELT_DT_FLOAT32;
    t->rank = 1;
    t->dims[0] = count;
    t->data = d;
    gr_value *v = gr_graph_add_constant(ctx, g, "scales", t);
    if (!v) return smelt_ctx_status(ctx);
    return gr_node_set_input(ctx, g, node, index, v);
}

static smelt_status upsample_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_resize_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(parse_mode(ctx, node, a));
    if (a->mode == OP_RESIZE_CUBIC)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "unknown mode 'cubic' (Upsample supports nearest and linear)");
    a->coord = OP_RESIZE_ASYMMETRIC;
    a->nearest = OP_RESIZE_SIMPLE;
    a->cubic_coeff_a = -0.75f;
    if (g->opset >= 9) return SMELT_OK;
    int count;
    const float *scales;
    SMELT_TRY(op_attr_floats(ctx, node, "scales", &count, &scales));
    if (count < 0) return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'scales' is required");
    return set_input_floats(ctx, g, node, 1, scales, count);
}

/* ---- parameters: output size, scale and roi per axis --------------------------------- */

typedef struct resize_params {
    int64_t out[SMELT_MAX_RANK]; /* GR_DIM_UNKNOWN when not known yet */
    double scale[SMELT_MAX_RANK];
    double resized[SMELT_MAX_RANK]; /* output length the coordinate transform uses */
    double roi_lo[SMELT_MAX_RANK], roi_hi[SMELT_MAX_RANK];
} resize_params;

typedef struct resize_inputs {
    const smelt_tensor *x, *roi, *scales, *sizes; /* NULL when absent or empty */
} resize_inputs;

static const smelt_tensor *non_empty(const smelt_tensor *t)
{
    return t && !(op_dims_static(t) && op_numel(t) == 0) ? t : NULL;
}

static resize_inputs resize_get_inputs(const gr_node *node, const smelt_tensor *const *in)
{
    resize_inputs r = {.x = in[0]};
    if (node->op == OP_UPSAMPLE) {
        r.scales = non_empty(op_input(node, in, 1));
    } else {
        r.roi = non_empty(op_input(node, in, 1));
        r.scales = non_empty(op_input(node, in, 2));
        r.sizes = non_empty(op_input(node, in, 3));
    }
    return r;
}

/* The data axes that scales/sizes/roi entries refer to. */
static smelt_status resize_axes(smelt_ctx *ctx, const gr_node *node, int rank, int *axis_of,
                                int *n)
{
    const op_resize_attrs *a = node->op_attrs;
    if (!a->n_axes) {
        *n = rank;
        for (int i = 0; i < rank; i++) axis_of[i] = i;
        return SMELT_OK;
    }
    bool seen[SMELT_MAX_RANK] = {false};
    *n = a->n_axes;
    for (int i = 0; i < a->n_axes; i++) {
        SMELT_TRY(op_norm_axis(ctx, node, a->axes[i], rank, &axis_of[i]));
        if (seen[axis_of[i]])
            return op_errf(ctx, node, SMELT_ERR_ATTR, "axis %d appears twice in 'axes'",
                           axis_of[i]);
        seen[axis_of[i]] = true;
    }
    return SMELT_OK;
}

static smelt_status read_count(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *t,
                               const char *what, int expected)
{
    int64_t n = op_numel(t);
    if (t->rank != 1 || n != expected)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input '%s' must be 1-D with %d values (one per resized axis), got %lld",
                       what, expected, (long long)n);
    return SMELT_OK;
}

static smelt_status params_from_sizes(smelt_ctx *ctx, const gr_node *node,
                                      const resize_inputs *r, const int *axis_of, int n,
                                      resize_params *p)
{
    if (r->sizes->dtype != SMELT_DT_INT64)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input 'sizes' must be int64, got %s",
                       smelt_dtype_name(r->sizes->dtype));
    if (!r->sizes->data) {
        for (int i = 0; i < n; i++) p->out[axis_of[i]] = GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    SMELT_TRY(read_count(ctx, node, r->sizes, "sizes", n));
    for (int i = 0; i < n; i++) {
        int d = axis_of[i];
        int64_t size = ((const int64_t *)r->sizes->data)[i], dim = r->x->dims[d];
        if (size < 0 || size > SMELT_LIMIT_TENSOR_ELEMS)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "size %lld for axis %d is invalid",
                           (long long)size, d);
        p->out[d] = size;
        p->scale[d] = dim > 0 ? (double)size / (double)dim : 1.0;
        p->resized[d] = (double)size;
    }
    return SMELT_OK;
}

static smelt_status params_from_scales(smelt_ctx *ctx, const gr_node *node,
                                       const resize_inputs *r, const int *axis_of, int n,
                                       resize_params *p)
{
    if (!op_dtype_is_float(r->scales->dtype))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input 'scales' must be float, got %s",
                       smelt_dtype_name(r->scales->dtype));
    if (!r->scales->data) {
        for (int i = 0; i < n; i++) p->out[axis_of[i]] = GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    SMELT_TRY(read_count(ctx, node, r->scales, "scales", n));
    for (int i = 0; i < n; i++) {
        int d = axis_of[i];
        double s = op_get_f64(r->scales, i), dim = (double)r->x->dims[d];
        if (!(s > 0.0))
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "scale %g for axis %d must be positive",
                           s, d);
        p->scale[d] = s;
        p->resized[d] = s * dim; /* unrounded, as the ONNX reference */
        if (r->x->dims[d] < 0) { /* symbolic: only a scale of 1 keeps it */
            p->out[d] = s == 1.0 ? r->x->dims[d] : GR_DIM_UNKNOWN;
            continue;
        }
        double size = floor(dim * s);
        if (size > (double)SMELT_LIMIT_TENSOR_ELEMS)
            return op_errf(ctx, node, SMELT_ERR_LIMIT,
                           "scale %g makes axis %d larger than the element limit", s, d);
        p->out[d] = (int64_t)size;
    }
    return SMELT_OK;
}

static smelt_status params_roi(smelt_ctx *ctx, const gr_node *node, const resize_inputs *r,
                               const int *axis_of, int n, resize_params *p)
{
    if (!r->roi)
        return op_errf(ctx, node, SMELT_ERR_MODEL,
                       "input 'roi' is required by coordinate_transformation_mode "
                       "tf_crop_and_resize");
    if (!op_dtype_is_float(r->roi->dtype))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input 'roi' must be float, got %s",
                       smelt_dtype_name(r->roi->dtype));
    if (!r->roi->data) return SMELT_OK; /* only the kernel needs the values */
    SMELT_TRY(read_count(ctx, node, r->roi, "roi", 2 * n));
    for (int i = 0; i < n; i++) {
        p->roi_lo[axis_of[i]] = op_get_f64(r->roi, i);
        p->roi_hi[axis_of[i]] = op_get_f64(r->roi, n + i);
    }
    return SMELT_OK;
}

static smelt_status resize_params_make(smelt_ctx *ctx, const gr_node *node,
                                       const smelt_tensor *const *in, resize_params *p)
{
    const op_resize_attrs *a = node->op_attrs;
    resize_inputs r = resize_get_inputs(node, in);
    int axis_of[SMELT_MAX_RANK], n;
    if (!a) return op_errf(ctx, node, SMELT_ERR_INTERNAL, "attributes were not imported");
    if (smelt_dtype_size(r.x->dtype) == 0)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "input 'X' has unsupported dtype %s",
                       smelt_dtype_name(r.x->dtype));
    SMELT_TRY(resize_axes(ctx, node, r.x->rank, axis_of, &n));
    for (int d = 0; d < r.x->rank; d++) {
        p->out[d] = r.x->dims[d];
        p->scale[d] = 1.0;
        p->resized[d] = (double)r.x->dims[d];
        p->roi_lo[d] = 0.0;
        p->roi_hi[d] = 1.0;
    }
    if (r.scales && r.sizes)
        return op_errf(ctx, node, SMELT_ERR_MODEL,
                       "only one of 'scales' and 'sizes' may be given");
    if (r.sizes) {
        SMELT_TRY(params_from_sizes(ctx, node, &r, axis_of, n, p));
    } else if (r.scales) {
        SMELT_TRY(params_from_scales(ctx, node, &r, axis_of, n, p));
    } else {
        return op_errf(ctx, node, SMELT_ERR_MODEL, "one of 'scales' and 'sizes' is required");
    }
    if (a->coord == OP_RESIZE_TF_CROP_AND_RESIZE)
        SMELT_TRY(params_roi(ctx, node, &r, axis_of, n, p));
    return SMELT_OK;
}

static smelt_status resize_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    resize_params p;
    SMELT_TRY(resize_params_make(ctx, node, in, &p));
    op_copy_shape(&out[0], in[0]);
    for (int d = 0; d < in[0]->rank; d++) out[0].dims[d] = p.out[d];
    return SMELT_OK;
}

/* ---- taps ------------------------------------------------------------------------- */

/* Input-element offsets and weights for one output coordinate of one axis;
 * n == 0 means "outside the crop": the extrapolation value. */
typedef struct resize_taps {
    int n;
    int64_t off[RESIZE_MAX_TAPS];
    double w[RESIZE_MAX_TAPS];
} resize_taps;

/* The input coordinate that output coordinate x of an axis maps back to. */
static double resize_source_coord(const op_resize_attrs *a, const resize_params *p, int d,
                                  double x, int64_t in, int64_t out)
{
    double scale = p->scale[d], resized = p->resized[d], roi_lo = p->roi_lo[d],
           roi_hi = p->roi_hi[d];
    switch (a->coord) {
    case OP_RESIZE_HALF_PIXEL: return (x + 0.5) / scale - 0.5;
    case OP_RESIZE_HALF_PIXEL_SYMMETRIC: {
        double adjust = (double)out / resized, center = (double)in / 2.0;
        return center * (1.0 - adjust) + (x + 0.5) / scale - 0.5;
    }
    case OP_RESIZE_PYTORCH_HALF_PIXEL: return resized > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
    case OP_RESIZE_ALIGN_CORNERS:
        return resized == 1.0 ? 0.0 : x * (double)(in - 1) / (resized - 1.0);
    case OP_RESIZE_ASYMMETRIC: return x / scale;
    case OP_RESIZE_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / scale;
    case OP_RESIZE_TF_CROP_AND_RESIZE:
        if (resized == 1.0) return 0.5 * (roi_lo + roi_hi) * (double)(in - 1);
        return x * (roi_hi - roi_lo) * (double)(in - 1) / (resized - 1.0) +
               roi_lo * (double)(in - 1);
    }
    return x / scale;
}

static int64_t nearest_index(op_resize_nearest mode, double src, double scale)
{
    double lo = floor(src), r = src - lo;
    if (r == 0.0) return (int64_t)lo;
    switch (mode) {
    case OP_RESIZE_ROUND_PREFER_FLOOR: return (int64_t)lo + (r > 0.5);
    case OP_RESIZE_ROUND_PREFER_CEIL: return (int64_t)lo + (r >= 0.5);
    case OP_RESIZE_FLOOR: return (int64_t)lo;
    case OP_RESIZE_CEIL: return (int64_t)lo + 1;
    case OP_RESIZE_SIMPLE: return (int64_t)lo + (scale < 1.0);
    }
    return (int64_t)lo;
}

static void cubic_weights(double r, double A, double w[4])
{
    /* Keys' cubic convolution at distances 1+r, r, 1-r, 2-r */
    double d[4] = {1.0 + r, r, 1.0 - r, 2.0 - r};
    for (int i = 0; i < 4; i++) {
        double t = d[i];
        w[i] = t <= 1.0 ? ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0
                        : ((A * t - 5.0 * A) * t + 8.0 * A) * t - 4.0 * A;
    }
}

static void resize_make_taps(const op_resize_attrs *a, double src, int64_t in, double scale,
                             int64_t stride, resize_taps *t)
{
    double lo = floor(src), r = src - lo;
    int64_t first = (int64_t)lo, idx[RESIZE_MAX_TAPS];
    t->n = 0;
    if (a->mode == OP_RESIZE_NEAREST) {
        idx[0] = nearest_index(a->nearest, src, scale);
        t->w[0] = 1.0;
        t->n = 1;
    } else if (r == 0.0) {
        idx[0] = first;
        t->w[0] = 1.0;
        t->n = 1;
    } else if (a->mode == OP_RESIZE_LINEAR) {
        idx[0] = first;
        idx[1] = first + 1;
        t->w[0] = 1.0 - r;
        t->w[1] = r;
        t->n = 2;
    } else {
        for (int i = 0; i < 4; i++) idx[i] = first - 1 + i;
        cubic_weights(r, a->cubic_coeff_a, t->w);
        t->n = 4;
    }
    double sum = 0.0;
    for (int i = 0; i < t->n; i++) {
        if (a->exclude_outside && a->mode != OP_RESIZE_NEAREST && (idx[i] < 0 || idx[i] >= in))
            t->w[i] = 0.0;
        sum += t->w[i];
        int64_t k = idx[i] < 0 ? 0 : idx[i] >= in ? in - 1 : idx[i];
        t->off[i] = k * stride;
    }
    if (a->exclude_outside && sum != 0.0)
        for (int i = 0; i < t->n; i++) t->w[i] /= sum;
}

/* Taps for every output coordinate of every axis, in one allocation. */
static smelt_status resize_build_taps(smelt_ctx *ctx, const gr_node *node,
                                      const smelt_tensor *x, const smelt_tensor *y,
                                      const resize_params *p, resize_taps **table,
                                      resize_taps **storage)
{
    const op_resize_attrs *a = node->op_attrs;
    int64_t total = 0, xs[SMELT_MAX_RANK];
    for (int d = 0; d < y->rank; d++) total += y->dims[d];
    *storage = smelt_calloc(total > 0 ? (size_t)total : 1, sizeof(resize_taps));
    if (!*storage) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory for resize taps");
    op_strides(x, xs);
    resize_taps *t = *storage;
    for (int d = 0; d < y->rank; d++) {
        table[d] = t;
        int64_t in = x->dims[d];
        for (int64_t o = 0; o < y->dims[d]; o++, t++) {
            double src = resize_source_coord(a, p, d, (double)o, in, y->dims[d]);
            bool crop = a->coord == OP_RESIZE_TF_CROP_AND_RESIZE;
            if ((crop && (src < 0.0 || src > (double)(in - 1))) || !(fabs(src) < 0x1p62))
                continue; /* n = 0: extrapolate (also for a NaN or huge roi) */
            resize_make_taps(a, src, in, p->scale[d], xs[d], t);
        }
    }
    return SMELT_OK;
}

/* ---- kernel ----------------------------------------------------------------------- */

/* What one output row (fixed indices on all axes but the last) reads: the
 * product of its outer axes' taps as (offset, weight) pairs.  n == 0 means
 * the row lies outside the crop. */
typedef struct resize_row {
    int n;
    int64_t *off;
    double *w;
} resize_row;

static int resize_max_taps(op_resize_mode mode)
{
    return mode == OP_RESIZE_CUBIC ? 4 : mode == OP_RESIZE_LINEAR ? 2 : 1;
}

static void resize_row_make(resize_taps *const *table, const int64_t *idx, int outer,
                            resize_row *row)
{
    row->n = 1;
    row->off[0] = 0;
    row->w[0] = 1.0;
    for (int d = 0; d < outer; d++) {
        const resize_taps *t = &table[d][idx[d]];
        if (t->n == 0) {
            row->n = 0;
            return;
        }
        /* expand in place, last entry first, so nothing is overwritten unread */
        for (int i = row->n - 1; i >= 0; i--) {
            int64_t off = row->off[i];
            double w = row->w[i];
            for (int k = t->n - 1; k >= 0; k--) {
                row->off[i * t->n + k] = off + t->off[k];
                row->w[i * t->n + k] = w * t->w[k];
            }
        }
        row->n *= t->n;
    }
}

/* Weighted sum of one output element: outer row combinations times the
 * last axis's taps. */
static double resize_sum_f32(const float *x, const resize_row *row, const resize_taps *t)
{
    double acc = 0.0;
    for (int c = 0; c < row->n; c++) {
        const float *base = x + row->off[c];
        double s = 0.0;
        for (int k = 0; k < t->n; k++) s += t->w[k] * base[t->off[k]];
        acc += row->w[c] * s;
    }
    return acc;
}

static double resize_sum_any(const smelt_tensor *x, const resize_row *row,
                             const resize_taps *t)
{
    double acc = 0.0;
    for (int c = 0; c < row->n; c++) {
        double s = 0.0;
        for (int k = 0; k < t->n; k++) s += t->w[k] * op_get_f64(x, row->off[c] + t->off[k]);
        acc += row->w[c] * s;
    }
    return acc;
}

static void store(smelt_tensor *y, int64_t i, double v)
{
    if (y->dtype == SMELT_DT_FLOAT32) {
        ((float *)y->data)[i] = (float)v;
    } else {
        /* integer outputs round to nearest rather than truncate */
        op_set_f64(y, i, op_dtype_is_float(y->dtype) ? v : round(v));
    }
}

/* One output row of `len` elements starting at element `o0`. */
static void resize_row_eval(const op_resize_attrs *a, const smelt_tensor *x, smelt_tensor *y,
                            const resize_row *row, const resize_taps *inner, int64_t o0,
                            int64_t len)
{
    bool f32 = x->dtype == SMELT_DT_FLOAT32;
    size_t esz = smelt_dtype_size(x->dtype);
    for (int64_t j = 0; j < len; j++) {
        const resize_taps *t = &inner[j];
        int64_t o = o0 + j;
        if (row->n == 0 || t->n == 0) {
            store(y, o, a->extrapolation_value);
        } else if (a->mode == OP_RESIZE_NEAREST) { /* a single tap: copy exactly */
            int64_t off = row->off[0] + t->off[0];
            if (f32)
                ((float *)y->data)[o] = ((const float *)x->data)[off];
            else
                memcpy((char *)y->data + (size_t)o * esz,
                       (const char *)x->data + (size_t)off * esz, esz);
        } else if (f32) {
            ((float *)y->data)[o] = (float)resize_sum_f32(x->data, row, t);
        } else {
            store(y, o, resize_sum_any(x, row, t));
        }
    }
}

static smelt_status resize_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_resize_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    smelt_tensor *y = &out[0];
    int rank = x->rank;
    if (op_numel(y) == 0) return SMELT_OK;
    for (int d = 0; d < rank; d++)
        if (x->dims[d] == 0)
            return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                           "cannot resize empty axis %d to size %lld", d, (long long)y->dims[d]);
    if (rank == 0) {
        memcpy(y->data, x->data, smelt_dtype_size(x->dtype));
        return SMELT_OK;
    }
    resize_params p;
    resize_taps *table[SMELT_MAX_RANK], *storage;
    SMELT_TRY(resize_params_make(ctx, node, in, &p));
    SMELT_TRY(resize_build_taps(ctx, node, x, y, &p, table, &storage));
    int outer = rank - 1;
    size_t cap = 1;
    for (int d = 0; d < outer; d++) cap *= (size_t)resize_max_taps(a->mode);
    resize_row row = {.off = smelt_calloc(cap, sizeof(int64_t)),
                      .w = smelt_calloc(cap, sizeof(double))};
    if (!row.off || !row.w) {
        smelt_free(row.off);
        smelt_free(row.w);
        smelt_free(storage);
        return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory for resize taps");
    }
    int64_t idx[SMELT_MAX_RANK] = {0}, len = y->dims[outer], o0 = 0;
    do {
        resize_row_make(table, idx, outer, &row);
        resize_row_eval(a, x, y, &row, table[outer], o0, len);
        o0 += len;
    } while (op_next_index(idx, y->dims, outer));
    smelt_free(row.off);
    smelt_free(row.w);
    smelt_free(storage);
    return SMELT_OK;
}

const op_def op_def_RESIZE = {
    .import = resize_import, .infer = resize_infer, .eval = resize_eval,
    .min_inputs = 1, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
};

const op_def op_def_UPSAMPLE = {
    .import = upsample_import, .infer = resize_infer, .eval = resize_eval,
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
};
