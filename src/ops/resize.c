/* Resampling: Resize (opsets 10, 11, 13, 18, 19) and the deprecated Upsample.
 *
 * Both share one kernel.  Each output coordinate of each axis is mapped back
 * to an input coordinate (the coordinate transformation mode) and turned into
 * at most 4 taps (input index, weight) for that axis, or, antialiasing a
 * shrink, the linear/cubic kernel widened by 1 / scale (up to 32 taps); an
 * output element is the sum over the product of its axes' taps.  Indices
 * outside the input are clamped to the edge, as the ONNX reference does.
 * keep_aspect_ratio_policy gives every resized axis one scale (the smallest
 * or largest of those the sizes ask for).
 */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "ops/resize.h"
#include "te/te.h"
#include "tir/scalar.h"

/* 4 without antialiasing; antialiasing a shrink by scale s takes about
 * 2 / s (linear) or 4 / s (cubic) taps, refused beyond this */
#define RESIZE_MAX_TAPS 32

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
    return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute '%s' is '%s', which is not implemented",
                   attr, s);
}

static smelt_status parse_mode(smelt_ctx *ctx, const gr_node *node, op_resize_attrs *a)
{
    /* "bilinear" is Upsample-1's spelling of linear */
    static const char *const names[] = {"nearest", "linear", "cubic", "bilinear"};
    int m = 0;
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
    int c = 0, n = 0;
    bool antialias;
    SMELT_TRY(parse_choice(ctx, node, "coordinate_transformation_mode", "half_pixel", coords,
                           (int)SMELT_ARRAY_LEN(coords), &c));
    SMELT_TRY(parse_choice(ctx, node, "nearest_mode", "round_prefer_floor", nearest,
                           (int)SMELT_ARRAY_LEN(nearest), &n));
    a->coord = (op_resize_coord)c;
    a->nearest = (op_resize_nearest)n;
    SMELT_TRY(op_attr_float(ctx, node, "cubic_coeff_a", -0.75f, &a->cubic_coeff_a));
    SMELT_TRY(op_attr_bool(ctx, node, "exclude_outside", false, &a->exclude_outside));
    SMELT_TRY(op_attr_float(ctx, node, "extrapolation_value", 0.0f, &a->extrapolation_value));

    SMELT_TRY(op_attr_bool(ctx, node, "antialias", false, &antialias));
    if (antialias && a->mode == OP_RESIZE_NEAREST)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'antialias' is 1 with mode nearest; antialiasing is defined "
                       "for the linear and cubic modes");
    a->antialias = antialias;
    static const char *const policies[] = {"stretch", "not_larger", "not_smaller"};
    int policy = 0;
    SMELT_TRY(parse_choice(ctx, node, "keep_aspect_ratio_policy", "stretch", policies, 3, &policy));
    a->policy = (op_resize_policy)policy;
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

/* Resize-10 has only mode; parse_resize11 reads the rest */
OP_ATTRS(RESIZE) = {{"mode", 0, 0},
                    {"coordinate_transformation_mode", 11, 0},
                    {"nearest_mode", 11, 0},
                    {"cubic_coeff_a", 11, 0},
                    {"exclude_outside", 11, 0},
                    {"extrapolation_value", 11, 0},
                    {"antialias", 18, 0},
                    {"keep_aspect_ratio_policy", 18, 0},
                    {"axes", 18, 0},
                    {NULL, 0, 0}};

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

/* scales became an input at opset 9; Upsample-1's height_scale and
 * width_scale are not implemented (ops.def starts at opset 7) */
OP_ATTRS(UPSAMPLE) = {{"mode", 0, 0}, {"scales", 0, 8}, {NULL, 0, 0}};

static smelt_status upsample_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_resize_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(parse_mode(ctx, node, a));
    if (a->mode == OP_RESIZE_CUBIC)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'mode' is 'cubic'; Upsample supports nearest and linear");
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

/* keep_aspect_ratio_policy: every resized axis takes the smallest or the
 * largest of their scales, and its size is scale * dim rounded half up
 * (the coordinate transform uses the unrounded length, as the reference). */
static smelt_status apply_policy(smelt_ctx *ctx, const gr_node *node, const resize_inputs *r,
                                 const int *axis_of, int n, resize_params *p)
{
    const op_resize_attrs *a = node->op_attrs;
    if (a->policy == OP_RESIZE_STRETCH || n == 0) return SMELT_OK;
    double s = p->scale[axis_of[0]];
    for (int i = 1; i < n; i++) {
        double t = p->scale[axis_of[i]];
        s = a->policy == OP_RESIZE_NOT_LARGER ? fmin(s, t) : fmax(s, t);
    }
    for (int i = 0; i < n; i++) {
        int d = axis_of[i];
        if (r->x->dims[d] < 0)
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "keep_aspect_ratio_policy needs the input's dims known (axis %d)", d);
        double size = floor(s * (double)r->x->dims[d] + 0.5);
        if (size > (double)SMELT_LIMIT_TENSOR_ELEMS)
            return op_errf(ctx, node, SMELT_ERR_LIMIT, "axis %d would exceed the element limit", d);
        p->scale[d] = s;
        p->resized[d] = s * (double)r->x->dims[d];
        p->out[d] = (int64_t)size;
    }
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
    return apply_policy(ctx, node, r, axis_of, n, p);
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
        if (!(s > 0.0) || isinf(s)) /* inf * a zero-size axis would be NaN */
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "scale %g for axis %d must be positive and finite", s, d);
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

static int resize_axis_taps(const op_resize_attrs *a, double scale);

/* Antialiasing a strong shrink would take more taps than the kernels hold. */
static smelt_status check_taps(smelt_ctx *ctx, const gr_node *node, int rank,
                               const resize_params *p)
{
    const op_resize_attrs *a = node->op_attrs;
    for (int d = 0; d < rank; d++) {
        int n = resize_axis_taps(a, p->scale[d]);
        if (n > RESIZE_MAX_TAPS)
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "antialiasing axis %d at scale %g takes %d taps; at most %d are "
                           "implemented", d, p->scale[d], n, RESIZE_MAX_TAPS);
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
    return check_taps(ctx, node, r.x->rank, p);
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

void op_cubic_weights(double r, double A, double w[4])
{
    double d[4] = {1.0 + r, r, 1.0 - r, 2.0 - r};
    for (int i = 0; i < 4; i++) {
        double t = d[i];
        w[i] = t <= 1.0 ? ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0
                        : ((A * t - 5.0 * A) * t + 8.0 * A) * t - 4.0 * A;
    }
}

/* Antialiasing (linear and cubic): the kernel stretched by 1 / min(scale, 1)
 * over taps first .. first + n - 1 around src, normalised to sum 1.  As the
 * reference: an integral src counts as ratio 1 from the index below it;
 * taps start at floor(-support / s) + 1 from that index, n = 2 - 2 * start. */
static int antialias_start(op_resize_mode mode, double scale)
{
    double s = scale < 1.0 ? scale : 1.0;
    return (int)floor((mode == OP_RESIZE_CUBIC ? -2.0 : -1.0) / s) + 1;
}

static int resize_axis_taps(const op_resize_attrs *a, double scale)
{
    if (a->mode == OP_RESIZE_NEAREST) return 1;
    if (a->antialias) return 2 - 2 * antialias_start(a->mode, scale);
    return a->mode == OP_RESIZE_CUBIC ? 4 : 2;
}

static double antialias_weight(op_resize_mode mode, double A, double x)
{
    x = fabs(x);
    if (mode == OP_RESIZE_LINEAR) return x < 1.0 ? 1.0 - x : 0.0;
    double x2 = x * x, x3 = x * x2;
    if (x <= 1.0) return (A + 2.0) * x3 - (A + 3.0) * x2 + 1.0;
    if (x < 2.0) return A * x3 - 5.0 * A * x2 + 8.0 * A * x - 4.0 * A;
    return 0.0;
}

static void antialias_taps(const op_resize_attrs *a, double src, double scale, int64_t *idx,
                           resize_taps *t)
{
    double lo = floor(src), ratio = src - lo, s = scale < 1.0 ? scale : 1.0, sum = 0.0;
    if (ratio == 0.0) {
        lo -= 1.0;
        ratio = 1.0;
    }
    int start = antialias_start(a->mode, scale);
    t->n = 2 - 2 * start;
    for (int i = 0; i < t->n; i++) {
        idx[i] = (int64_t)lo + start + i;
        t->w[i] = antialias_weight(a->mode, a->cubic_coeff_a, s * ((double)(start + i) - ratio));
        sum += t->w[i];
    }
    for (int i = 0; i < t->n; i++) t->w[i] /= sum;
}

static void resize_make_taps(const op_resize_attrs *a, double src, int64_t in, double scale,
                             int64_t stride, resize_taps *t)
{
    double lo = floor(src), r = src - lo;
    int64_t first = (int64_t)lo, idx[RESIZE_MAX_TAPS];
    t->n = 0;
    if (a->antialias) {
        antialias_taps(a, src, scale, idx, t);
    } else if (a->mode == OP_RESIZE_NEAREST) {
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
        op_cubic_weights(r, a->cubic_coeff_a, t->w);
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

/* The range of an integer dtype (not bool or the 4/2-bit ones) as doubles;
 * false for other dtypes.  The ends of the 64-bit types round up to 2^63 and
 * 2^64, which the saturating conversions after the clamp take. */
static bool int_range(smelt_dtype dt, double *lo, double *hi)
{
    if (!tir_dtype_is_int(dt) || dt == SMELT_DT_BOOL || smelt_dtype_is_lowbit(dt)) return false;
    *lo = dt == SMELT_DT_UINT64 ? 0.0 : (double)tir_dtype_min(dt);
    *hi = dt == SMELT_DT_UINT64 ? 0x1p64 : (double)tir_dtype_max(dt);
    return true;
}

/* Integer outputs round half to even and saturate to their dtype, as ONNX's
 * reference (numpy_helper.saturate_cast: np.round, np.clip): a cubic
 * overshoot below 0 gave 255 in uint8 (wrapped), and a linear tie at .5
 * rounded away from zero. */
static void store(smelt_tensor *y, int64_t i, double v)
{
    double lo, hi;
    if (y->dtype == SMELT_DT_FLOAT32) {
        ((float *)y->data)[i] = (float)v;
    } else if (int_range(y->dtype, &lo, &hi)) {
        v = rint(v); /* the default rounding mode: half to even */
        op_set_f64(y, i, v < lo ? lo : v > hi ? hi : v);
    } else {
        op_set_f64(y, i, op_dtype_is_float(y->dtype) ? v : rint(v));
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
    for (int d = 0; d < outer; d++) cap *= (size_t)resize_axis_taps(a, p.scale[d]);
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

/* ---- compute (tensor expressions) --------------------------------------------------
 * The same arithmetic as the kernel, as expressions of the output index:
 * per axis, the source coordinate (float64, evaluated in the reference's
 * operation order so nearest rounding agrees), its taps (indices clamped
 * into the axis, as the reference clamps) and weights; the output is the
 * sum over the taps' combinations.  Scales and roi fold to immediates when
 * they are compile-time constants and are loaded otherwise; sizes always
 * come from the static output shape. */

typedef struct resize_te {
    const op_resize_attrs *a;
    const te_tensor *x;
    int64_t in[SMELT_MAX_RANK], out[SMELT_MAX_RANK];
    /* float64 per axis: immediates when known */
    ir_expr *scale[SMELT_MAX_RANK], *resized[SMELT_MAX_RANK];
    ir_expr *roi_lo[SMELT_MAX_RANK], *roi_hi[SMELT_MAX_RANK];
    bool identity[SMELT_MAX_RANK]; /* known to read input i at output i */
    /* antialias: per axis, tables [out, taps] of input index and weight made
     * at compile time by the reference's resize_make_taps (NULL: none) */
    const te_tensor *aa_idx[SMELT_MAX_RANK], *aa_w[SMELT_MAX_RANK];
    int aa_n[SMELT_MAX_RANK];
    smelt_dtype acc_dt;            /* weighted sums */
} resize_te;

/* Taps of one axis for one output coordinate. */
typedef struct resize_te_taps {
    int n;
    ir_expr *idx[RESIZE_MAX_TAPS]; /* int64, inside the axis */
    ir_expr *w[RESIZE_MAX_TAPS];   /* float64; NULL: the single tap of weight 1 */
} resize_te_taps;

static smelt_status compute_done(op_compute_args *a, te_tensor *t)
{
    a->out[0] = t;
    if (t) return SMELT_OK;
    smelt_status s = smelt_ctx_status(a->ctx);
    return s != SMELT_OK ? s : smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
}

static smelt_tensor placeholder_type(const te_tensor *t)
{
    smelt_tensor r;
    memset(&r, 0, sizeof r);
    r.dtype = t->buf->dtype;
    r.rank = t->buf->rank;
    for (int d = 0; d < r.rank; d++) r.dims[d] = t->buf->shape[d];
    return r;
}

static int64_t placeholder_numel(const te_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->buf->rank; d++) n *= t->buf->shape[d];
    return n;
}

/* Element `flat` (row-major) of a small parameter tensor, loaded. */
static ir_expr *read_flat(te_graph *g, const te_tensor *t, int64_t flat)
{
    ir_expr *idx[SMELT_MAX_RANK];
    for (int d = t->buf->rank - 1; d >= 0; d--) {
        int64_t n = t->buf->shape[d];
        idx[d] = ir_int(&g->b, n > 0 ? flat % n : 0);
        flat = n > 0 ? flat / n : 0;
    }
    return te_read(g, t, idx);
}

static ir_expr *resize_zero_body(te_graph *g, ir_expr *const *idx, void *user)
{
    smelt_dtype dt = *(const smelt_dtype *)user;
    (void)idx;
    return op_dtype_is_float(dt) ? ir_const_float(&g->b, dt, 0.0) : ir_const_int(&g->b, dt, 0);
}

static ir_expr *f64(ir_builder *b, double v) { return ir_const_float(b, SMELT_DT_FLOAT64, v); }

static bool is_f64_imm(const ir_expr *e) { return e && e->kind == IR_FLOAT; }

/* Float arithmetic that folds immediates, so known parameters leave no
 * run-time work behind. */
static ir_expr *f_bin(ir_builder *b, ir_kind k, ir_expr *x, ir_expr *y)
{
    if (is_f64_imm(x) && is_f64_imm(y)) {
        switch (k) {
        case IR_ADD: return f64(b, x->f + y->f);
        case IR_SUB: return f64(b, x->f - y->f);
        case IR_MUL: return f64(b, x->f * y->f);
        case IR_DIV: return f64(b, x->f / y->f);
        case IR_EQ: return ir_const_int(b, SMELT_DT_BOOL, x->f == y->f);
        case IR_LT: return ir_const_int(b, SMELT_DT_BOOL, x->f < y->f);
        case IR_GT: return ir_const_int(b, SMELT_DT_BOOL, x->f > y->f);
        default: break;
        }
    }
    return ir_binary(b, k, x, y);
}

static ir_expr *f_select(ir_builder *b, ir_expr *cond, ir_expr *t, ir_expr *f)
{
    if (cond && cond->kind == IR_INT) return cond->i ? t : f;
    return ir_select(b, cond, t, f);
}

static ir_expr *f_call(ir_builder *b, ir_call_op op, ir_expr *x)
{
    if (is_f64_imm(x) && (op == IR_CALL_FLOOR || op == IR_CALL_CEIL))
        return f64(b, op == IR_CALL_FLOOR ? floor(x->f) : ceil(x->f));
    return ir_call(b, op, SMELT_DT_FLOAT64, 1, &x);
}

/* (x + 0.5) / scale: the half-pixel family's shared part. */
static ir_expr *resize_te_shifted(ir_builder *b, const resize_te *r, int d, ir_expr *x)
{
    return f_bin(b, IR_DIV, f_bin(b, IR_ADD, x, f64(b, 0.5)), r->scale[d]);
}

static ir_expr *resize_te_crop_source(ir_builder *b, const resize_te *r, int d, ir_expr *x)
{
    ir_expr *lo = r->roi_lo[d], *hi = r->roi_hi[d], *one = f64(b, 1.0);
    ir_expr *in_m1 = f64(b, (double)(r->in[d] - 1));
    ir_expr *center = f_bin(b, IR_MUL, f_bin(b, IR_MUL, f64(b, 0.5), f_bin(b, IR_ADD, lo, hi)),
                            in_m1);
    ir_expr *span = f_bin(b, IR_MUL, f_bin(b, IR_MUL, x, f_bin(b, IR_SUB, hi, lo)), in_m1);
    ir_expr *moved = f_bin(b, IR_ADD, f_bin(b, IR_DIV, span, f_bin(b, IR_SUB, r->resized[d], one)),
                           f_bin(b, IR_MUL, lo, in_m1));
    return f_select(b, f_bin(b, IR_EQ, r->resized[d], one), center, moved);
}

/* resize_source_coord as an expression, in the same operation order. */
static ir_expr *resize_te_source(ir_builder *b, const resize_te *r, int d, ir_expr *x)
{
    ir_expr *resized = r->resized[d], *half = f64(b, 0.5), *one = f64(b, 1.0);
    switch (r->a->coord) {
    case OP_RESIZE_HALF_PIXEL: return f_bin(b, IR_SUB, resize_te_shifted(b, r, d, x), half);
    case OP_RESIZE_HALF_PIXEL_SYMMETRIC: {
        ir_expr *adjust = f_bin(b, IR_DIV, f64(b, (double)r->out[d]), resized);
        ir_expr *center = f64(b, (double)r->in[d] / 2.0);
        ir_expr *shift = f_bin(b, IR_MUL, center, f_bin(b, IR_SUB, one, adjust));
        return f_bin(b, IR_SUB, f_bin(b, IR_ADD, shift, resize_te_shifted(b, r, d, x)), half);
    }
    case OP_RESIZE_PYTORCH_HALF_PIXEL:
        return f_select(b, f_bin(b, IR_GT, resized, one),
                        f_bin(b, IR_SUB, resize_te_shifted(b, r, d, x), half), f64(b, 0.0));
    case OP_RESIZE_ALIGN_CORNERS: {
        ir_expr *in_m1 = f64(b, (double)(r->in[d] - 1));
        ir_expr *moved =
            f_bin(b, IR_DIV, f_bin(b, IR_MUL, x, in_m1), f_bin(b, IR_SUB, resized, one));
        return f_select(b, f_bin(b, IR_EQ, resized, one), f64(b, 0.0), moved);
    }
    case OP_RESIZE_ASYMMETRIC: break;
    case OP_RESIZE_TF_HALF_PIXEL_FOR_NN: return resize_te_shifted(b, r, d, x);
    case OP_RESIZE_TF_CROP_AND_RESIZE: return resize_te_crop_source(b, r, d, x);
    }
    return f_bin(b, IR_DIV, x, r->scale[d]);
}

/* A float position as an index of the axis: clamped in the float domain
 * first (converting a NaN or huge double is undefined in C), like the
 * reference's edge clamp. */
static ir_expr *resize_te_index(ir_builder *b, ir_expr *pos, int64_t in)
{
    ir_expr *c = ir_binary(b, IR_MAX, pos, f64(b, 0.0));
    c = ir_binary(b, IR_MIN, c, f64(b, (double)(in - 1)));
    return ir_cast(b, SMELT_DT_INT64, c);
}

/* nearest_index as an expression. */
static ir_expr *resize_te_nearest(ir_builder *b, const resize_te *r, int d, ir_expr *src)
{
    ir_expr *lo = f_call(b, IR_CALL_FLOOR, src), *up = f_call(b, IR_CALL_CEIL, src);
    ir_expr *frac = f_bin(b, IR_SUB, src, lo), *half = f64(b, 0.5);
    switch (r->a->nearest) {
    case OP_RESIZE_ROUND_PREFER_FLOOR: return f_select(b, f_bin(b, IR_GT, frac, half), up, lo);
    case OP_RESIZE_ROUND_PREFER_CEIL:
        return f_select(b, ir_binary(b, IR_GE, frac, half), up, lo);
    case OP_RESIZE_FLOOR: return lo;
    case OP_RESIZE_CEIL: return up;
    case OP_RESIZE_SIMPLE: return f_select(b, f_bin(b, IR_LT, r->scale[d], f64(b, 1.0)), up, lo);
    }
    return lo;
}

ir_expr *op_te_cubic(ir_builder *b, double A, ir_expr *t, bool near)
{
    if (near) {
        ir_expr *p = ir_sub(b, ir_mul(b, f64(b, A + 2.0), t), f64(b, A + 3.0));
        return ir_add(b, ir_mul(b, ir_mul(b, p, t), t), f64(b, 1.0));
    }
    ir_expr *p = ir_sub(b, ir_mul(b, f64(b, A), t), f64(b, 5.0 * A));
    p = ir_add(b, ir_mul(b, p, t), f64(b, 8.0 * A));
    return ir_sub(b, ir_mul(b, p, t), f64(b, 4.0 * A));
}

/* exclude_outside: taps outside the axis get weight 0, the rest are
 * renormalised (when their sum is not 0), as resize_make_taps does. */
static void resize_te_exclude(ir_builder *b, ir_expr *lo, int first, int64_t in,
                              resize_te_taps *t)
{
    ir_expr *sum = NULL, *zero = f64(b, 0.0);
    for (int i = 0; i < t->n; i++) {
        ir_expr *pos = ir_add(b, lo, f64(b, (double)(first + i)));
        ir_expr *inside = ir_binary(b, IR_AND, ir_binary(b, IR_GE, pos, zero),
                                    ir_binary(b, IR_LT, pos, f64(b, (double)in)));
        t->w[i] = ir_select(b, inside, t->w[i], zero);
        sum = sum ? ir_add(b, sum, t->w[i]) : t->w[i];
    }
    ir_expr *nonzero = ir_binary(b, IR_NE, sum, zero);
    for (int i = 0; i < t->n; i++)
        t->w[i] = ir_select(b, nonzero, ir_binary(b, IR_DIV, t->w[i], sum), t->w[i]);
}

static void resize_te_make_taps(ir_builder *b, const resize_te *r, int d, ir_expr *i,
                                resize_te_taps *t)
{
    int64_t in = r->in[d];
    t->n = 1;
    t->w[0] = NULL;
    if (r->identity[d]) {
        t->idx[0] = i;
        return;
    }
    ir_expr *src = resize_te_source(b, r, d, ir_cast(b, SMELT_DT_FLOAT64, i));
    if (r->a->mode == OP_RESIZE_NEAREST) {
        t->idx[0] = resize_te_index(b, resize_te_nearest(b, r, d, src), in);
        return;
    }
    ir_expr *lo = f_call(b, IR_CALL_FLOOR, src), *frac = f_bin(b, IR_SUB, src, lo);
    ir_expr *one = f64(b, 1.0);
    int first = r->a->mode == OP_RESIZE_LINEAR ? 0 : -1;
    if (r->a->mode == OP_RESIZE_LINEAR) {
        t->n = 2;
        t->w[0] = f_bin(b, IR_SUB, one, frac);
        t->w[1] = frac;
    } else {
        double A = r->a->cubic_coeff_a;
        ir_expr *d0 = f_bin(b, IR_ADD, one, frac);
        t->n = 4;
        /* only 1 + frac can reach the kernel's knot at 1 (when frac == 0) */
        t->w[0] = f_select(b, ir_binary(b, IR_LE, d0, one), op_te_cubic(b, A, d0, true),
                           op_te_cubic(b, A, d0, false));
        t->w[1] = op_te_cubic(b, A, frac, true);
        t->w[2] = op_te_cubic(b, A, f_bin(b, IR_SUB, one, frac), true);
        t->w[3] = op_te_cubic(b, A, f_bin(b, IR_SUB, f64(b, 2.0), frac), false);
    }
    for (int k = 0; k < t->n; k++)
        t->idx[k] = resize_te_index(b, f_bin(b, IR_ADD, lo, f64(b, (double)(first + k))), in);
    if (r->a->exclude_outside) resize_te_exclude(b, lo, first, in, t);
}

/* tf_crop_and_resize: whether the element's source lies inside the input
 * on every axis (else it takes the extrapolation value). */
static ir_expr *resize_te_inside(ir_builder *b, const resize_te *r, ir_expr *const *idx)
{
    ir_expr *all = NULL;
    for (int d = 0; d < r->x->n_axes; d++) {
        if (r->identity[d]) continue;
        ir_expr *src = resize_te_source(b, r, d, ir_cast(b, SMELT_DT_FLOAT64, idx[d]));
        ir_expr *in = ir_binary(b, IR_AND, ir_binary(b, IR_GE, src, f64(b, 0.0)),
                                ir_binary(b, IR_LE, src, f64(b, (double)(r->in[d] - 1))));
        all = all ? ir_binary(b, IR_AND, all, in) : in;
    }
    return all;
}

/* Integer outputs as store() makes them: half to even, saturated to the
 * dtype (other dtypes through int64, as op_set_f64 converts). */
static ir_expr *resize_te_to_int(ir_builder *b, ir_expr *v, smelt_dtype dt)
{
    ir_expr *rounded = f_call(b, IR_CALL_ROUND, v);
    double lo, hi;
    bool ranged = int_range(dt, &lo, &hi);
    if (!ranged) lo = -0x1p63, hi = 0x1p63 - 1024.0;
    rounded = ir_binary(b, IR_MAX, rounded, f64(b, lo));
    rounded = ir_binary(b, IR_MIN, rounded, f64(b, hi));
    return ranged ? ir_cast(b, dt, rounded) : ir_cast(b, dt, ir_cast(b, SMELT_DT_INT64, rounded));
}

/* w * v, or v when the weight is the implicit 1. */
static ir_expr *resize_te_weigh(ir_builder *b, smelt_dtype dt, ir_expr *w, ir_expr *v)
{
    return w ? ir_mul(b, ir_cast(b, dt, w), v) : v;
}

/* The weighted sum over every combination of the axes' taps, in the
 * kernel's order (rows of the outer axes, each a sum over the last axis's
 * taps), so float64 sums round exactly as the reference's do. */
static ir_expr *resize_te_sum(te_graph *g, const resize_te *r, const resize_te_taps *taps)
{
    ir_builder *b = &g->b;
    int rank = r->x->n_axes, last = rank - 1, pick[SMELT_MAX_RANK] = {0};
    ir_expr *acc = NULL, *xi[SMELT_MAX_RANK];
    for (;;) {
        ir_expr *row_w = NULL, *inner = NULL;
        for (int d = 0; d < last; d++) {
            xi[d] = taps[d].idx[pick[d]];
            ir_expr *wd = taps[d].w[pick[d]];
            if (wd) row_w = row_w ? ir_mul(b, row_w, wd) : wd;
        }
        for (int k = 0; k < (rank ? taps[last].n : 1); k++) {
            if (rank) xi[last] = taps[last].idx[k];
            ir_expr *v = ir_cast(b, r->acc_dt, te_read(g, r->x, xi));
            v = resize_te_weigh(b, r->acc_dt, rank ? taps[last].w[k] : NULL, v);
            inner = inner ? ir_add(b, inner, v) : v;
        }
        inner = resize_te_weigh(b, r->acc_dt, row_w, inner);
        acc = acc ? ir_add(b, acc, inner) : inner;
        int d = last - 1;
        while (d >= 0 && ++pick[d] == taps[d].n) pick[d--] = 0;
        if (d < 0) break;
    }
    return acc;
}

/* Taps read from an antialiased axis's tables at output coordinate i. */
static void resize_te_table_taps(te_graph *g, const resize_te *r, int d, ir_expr *i,
                                 resize_te_taps *t)
{
    t->n = r->aa_n[d];
    for (int k = 0; k < t->n; k++) {
        ir_expr *at[2] = {i, ir_int(&g->b, k)};
        t->idx[k] = te_read(g, r->aa_idx[d], at);
        t->w[k] = te_read(g, r->aa_w[d], at);
    }
}

/* A te constant [rows, cols] of dt holding data (owned by the graph after). */
static te_tensor *resize_te_table(op_compute_args *a, const char *name, smelt_dtype dt,
                                  int64_t rows, int64_t cols, void *data)
{
    int64_t shape[2] = {rows, cols};
    return te_const_tensor(a->te, name, dt, 2, shape, data);
}

/* Antialiasing: the taps of every output coordinate of axis d as tables,
 * by the reference's own code (the weights are normalised sums of a
 * kernel: as expressions they grew with the square of the taps). */
static smelt_status resize_te_aa_tables(op_compute_args *a, resize_te *r, const resize_params *p,
                                        int d)
{
    int n = resize_axis_taps(r->a, p->scale[d]);
    int64_t out = r->out[d], in = r->in[d];
    int64_t *idx = smelt_calloc((size_t)(out * n), sizeof *idx);
    double *w = smelt_calloc((size_t)(out * n), sizeof *w);
    if (!idx || !w) {
        smelt_free(idx);
        smelt_free(w);
        return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory for resize taps");
    }
    for (int64_t o = 0; o < out; o++) {
        resize_taps t = {0};
        double src = resize_source_coord(r->a, p, d, (double)o, in, out);
        if (fabs(src) < 0x1p62) resize_make_taps(r->a, src, in, p->scale[d], 1, &t);
        for (int k = 0; k < t.n && k < n; k++) { /* n == 0: outside the crop */
            idx[o * n + k] = t.off[k];
            w[o * n + k] = t.w[k];
        }
    }
    char name[32];
    snprintf(name, sizeof name, "aa_idx%d", d);
    r->aa_idx[d] = resize_te_table(a, name, SMELT_DT_INT64, out, n, idx);
    snprintf(name, sizeof name, "aa_w%d", d);
    r->aa_w[d] = r->aa_idx[d] ? resize_te_table(a, name, SMELT_DT_FLOAT64, out, n, w) : NULL;
    if (!r->aa_idx[d]) smelt_free(w);
    r->aa_n[d] = n;
    if (!r->aa_w[d]) return compute_done(a, NULL);
    return SMELT_OK;
}

static ir_expr *resize_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const resize_te *r = user;
    ir_builder *b = &g->b;
    smelt_dtype dt = r->x->buf->dtype;
    resize_te_taps taps[SMELT_MAX_RANK];
    bool copy = true; /* a single tap everywhere: an exact copy, for every dtype */
    for (int d = 0; d < r->x->n_axes; d++) {
        if (r->aa_w[d]) {
            resize_te_table_taps(g, r, d, idx[d], &taps[d]);
        } else {
            resize_te_make_taps(b, r, d, idx[d], &taps[d]);
        }
        copy = copy && taps[d].n == 1 && !taps[d].w[0];
    }
    ir_expr *v;
    if (copy) {
        ir_expr *xi[SMELT_MAX_RANK];
        for (int d = 0; d < r->x->n_axes; d++) xi[d] = taps[d].idx[0];
        v = te_read(g, r->x, xi);
    } else {
        v = resize_te_sum(g, r, taps);
        v = op_dtype_is_float(dt) ? ir_cast(b, dt, v) : resize_te_to_int(b, v, dt);
    }
    if (r->a->coord != OP_RESIZE_TF_CROP_AND_RESIZE) return v;
    ir_expr *inside = resize_te_inside(b, r, idx);
    if (!inside) return v;
    ir_expr *extra = ir_cast(b, dt, f64(b, r->a->extrapolation_value));
    return f_select(b, inside, v, extra);
}

/* Known at compile time to read input coordinate i at output coordinate i. */
static bool resize_axis_is_identity(const op_resize_attrs *a, const resize_params *p, int d,
                                    int64_t in, int64_t out)
{
    if (in != out) return false;
    for (int64_t x = 0; x < out; x++) {
        double src = resize_source_coord(a, p, d, (double)x, in, out);
        if (!(fabs(src) < 0x1p62)) return false;
        if (a->coord == OP_RESIZE_TF_CROP_AND_RESIZE && (src < 0.0 || src > (double)(in - 1)))
            return false;
        if (a->mode == OP_RESIZE_NEAREST ? nearest_index(a->nearest, src, p->scale[d]) != x
                                         : src != (double)x)
            return false;
    }
    return true;
}

/* The per-axis parameters as expressions: immediates from p where known;
 * sizes not known at compile time come from the static output shape, scales
 * and roi are loaded.  Returns whether everything is known (p then holds
 * the final values). */
static bool resize_te_params(op_compute_args *a, resize_te *r, resize_params *p,
                             const int *axis_of, int n)
{
    te_graph *g = a->te;
    ir_builder *b = &g->b;
    bool upsample = a->node->op == OP_UPSAMPLE, known = true;
    int si = upsample ? 1 : 2;
    const smelt_tensor *tin_scales = si < a->node->n_inputs ? a->in_const[si] : NULL;
    const te_tensor *scales = si < a->node->n_inputs ? a->in[si] : NULL;
    const te_tensor *sizes = !upsample && a->node->n_inputs > 3 ? a->in[3] : NULL;
    const te_tensor *roi = !upsample && a->node->n_inputs > 1 ? a->in[1] : NULL;
    if (sizes && placeholder_numel(sizes) == 0) sizes = NULL;
    if (scales && placeholder_numel(scales) == 0) scales = NULL;
    if (roi && placeholder_numel(roi) == 0) roi = NULL;
    if (sizes && !a->in_const[3]) {
        for (int d = 0; d < r->x->n_axes; d++) {
            p->scale[d] = r->in[d] > 0 ? (double)r->out[d] / (double)r->in[d] : 1.0;
            p->resized[d] = (double)r->out[d];
        }
    }
    for (int d = 0; d < r->x->n_axes; d++) {
        r->scale[d] = f64(b, p->scale[d]);
        r->resized[d] = f64(b, p->resized[d]);
        r->roi_lo[d] = f64(b, p->roi_lo[d]);
        r->roi_hi[d] = f64(b, p->roi_hi[d]);
    }
    if (!sizes && scales && !tin_scales) {
        known = false;
        for (int j = 0; j < n; j++) {
            int d = axis_of[j];
            r->scale[d] = ir_cast(b, SMELT_DT_FLOAT64, read_flat(g, scales, j));
            r->resized[d] = ir_mul(b, r->scale[d], f64(b, (double)r->in[d]));
        }
    }
    if (r->a->coord == OP_RESIZE_TF_CROP_AND_RESIZE && roi && !a->in_const[1]) {
        known = false;
        for (int j = 0; j < n; j++) {
            int d = axis_of[j];
            r->roi_lo[d] = ir_cast(b, SMELT_DT_FLOAT64, read_flat(g, roi, j));
            r->roi_hi[d] = ir_cast(b, SMELT_DT_FLOAT64, read_flat(g, roi, n + j));
        }
    }
    return known;
}

static smelt_status resize_compute(op_compute_args *a)
{
    const smelt_tensor *o = &a->out_type[0];
    const op_resize_attrs *at = a->node->op_attrs;
    resize_te r = {.a = at, .x = a->in[0]};
    smelt_dtype dt = r.x->buf->dtype;
    if (!at) return op_errf(a->ctx, a->node, SMELT_ERR_INTERNAL, "attributes were not imported");
    if (op_numel(o) == 0) {
        te_tensor *y = te_compute(a->te, "y", dt, o->rank, o->dims, resize_zero_body, &dt,
                                  "injective");
        return compute_done(a, y);
    }
    for (int d = 0; d < r.x->n_axes; d++) {
        r.in[d] = r.x->buf->shape[d];
        r.out[d] = o->dims[d];
        if (r.in[d] == 0)
            return op_errf(a->ctx, a->node, SMELT_ERR_SHAPE,
                           "cannot resize empty axis %d to size %lld", d, (long long)r.out[d]);
    }
    smelt_tensor types[4];
    const smelt_tensor *tin[4];
    resize_params p;
    int axis_of[SMELT_MAX_RANK], n;
    for (int i = 0; i < 4; i++) {
        tin[i] = NULL;
        if (i >= a->node->n_inputs || !a->in[i]) continue;
        tin[i] = a->in_const[i] ? a->in_const[i] : &types[i];
        if (!a->in_const[i]) types[i] = placeholder_type(a->in[i]);
    }
    SMELT_TRY(resize_params_make(a->ctx, a->node, tin, &p));
    SMELT_TRY(resize_axes(a->ctx, a->node, r.x->n_axes, axis_of, &n));
    bool known = resize_te_params(a, &r, &p, axis_of, n);
    if ((at->antialias || at->policy != OP_RESIZE_STRETCH) && !known)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "compiled Resize with antialias or keep_aspect_ratio_policy needs its "
                       "scales or sizes known at compile time (constants, or model inputs "
                       "compiled code specialises on)");
    int64_t terms = 1; /* antialias: one term per combination of the axes' taps */
    for (int d = 0; d < r.x->n_axes; d++) terms *= resize_axis_taps(at, p.scale[d]);
    if (at->antialias && terms > 1024)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "compiled Resize sums at most 1024 taps per element (%lld here)",
                       (long long)terms);
    for (int d = 0; d < r.x->n_axes; d++) {
        r.identity[d] = known && resize_axis_is_identity(at, &p, d, r.in[d], r.out[d]);
        if (at->antialias && !r.identity[d]) SMELT_TRY(resize_te_aa_tables(a, &r, &p, d));
    }
    r.acc_dt = dt == SMELT_DT_FLOAT32 || dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16
                   ? SMELT_DT_FLOAT32
                   : SMELT_DT_FLOAT64;
    te_tensor *y = te_compute(a->te, "y", dt, o->rank, o->dims, resize_body, &r, "injective");
    return compute_done(a, y);
}

const op_def op_def_RESIZE = {
    .compute = resize_compute,
    .import = resize_import, .infer = resize_infer, .eval = resize_eval,
    .min_inputs = 1, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
};

const op_def op_def_UPSAMPLE = {
    .compute = resize_compute,
    .import = upsample_import, .infer = resize_infer, .eval = resize_eval,
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
};
