/* CenterCropPad (opsets 18-28): each of `axes` (all when absent) cropped or
 * zero-padded to the length in input `shape`, centred as onnx's reference
 * does (an odd difference leaves the extra element at the end).  The shape
 * must be known to know the output (a constant, or a model input compiled
 * code specialises on).  Output element i of an axis reads input i + off,
 * off = (dim - len) / 2 when cropping and -((len - dim) / 2) when padding;
 * outside the input it is 0. */
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

typedef struct op_center_crop_pad_attrs {
    int n_axes; /* -1: all */
    int64_t axes[SMELT_MAX_RANK];
} op_center_crop_pad_attrs;

OP_ATTRS(CENTER_CROP_PAD) = {{"axes", 0, 0}, {NULL, 0, 0}};

static smelt_status ccp_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_center_crop_pad_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    const int64_t *axes;
    SMELT_TRY(op_attr_ints(ctx, node, "axes", &a->n_axes, &axes));
    if (a->n_axes > SMELT_MAX_RANK)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'axes' has %d values; at most %d",
                       a->n_axes, SMELT_MAX_RANK);
    for (int i = 0; i < a->n_axes; i++) a->axes[i] = axes[i];
    return SMELT_OK;
}

/* The axis each shape entry applies to, normalised; count = shape's length. */
static smelt_status ccp_axes(smelt_ctx *ctx, const gr_node *node, int rank, int count,
                             int *axis_of)
{
    const op_center_crop_pad_attrs *a = node->op_attrs;
    int n = a->n_axes < 0 ? rank : a->n_axes;
    if (count != n)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "shape has %d values for %d axes", count, n);
    bool seen[SMELT_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (a->n_axes < 0) axis_of[i] = i;
        else SMELT_TRY(op_norm_axis(ctx, node, a->axes[i], rank, &axis_of[i]));
        if (seen[axis_of[i]])
            return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'axes' repeats axis %d",
                           axis_of[i]);
        seen[axis_of[i]] = true;
    }
    return SMELT_OK;
}

static smelt_status ccp_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *shape = in[1];
    static const smelt_dtype k_ints[] = {SMELT_DT_INT32, SMELT_DT_INT64, SMELT_DT_UNDEFINED};
    SMELT_TRY(op_check_dtype(ctx, node, shape, "input 'shape'", k_ints));
    if (shape->rank != 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "shape has rank %d; expected 1", shape->rank);
    op_copy_shape(&out[0], x);
    int n = (int)shape->dims[0], axis_of[SMELT_MAX_RANK];
    if (shape->dims[0] < 0) {
        const op_center_crop_pad_attrs *a = node->op_attrs;
        for (int i = 0; i < (a->n_axes < 0 ? x->rank : a->n_axes); i++) {
            int ax;
            SMELT_TRY(op_norm_axis(ctx, node, a->n_axes < 0 ? i : a->axes[i], x->rank, &ax));
            out[0].dims[ax] = GR_DIM_UNKNOWN;
        }
        return SMELT_OK;
    }
    SMELT_TRY(ccp_axes(ctx, node, x->rank, n, axis_of));
    for (int i = 0; i < n; i++) {
        int64_t len = shape->data ? op_get_i64(shape, i) : GR_DIM_UNKNOWN;
        if (shape->data && len < 0)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "shape[%d] is %lld; expected >= 0", i,
                           (long long)len);
        out[0].dims[axis_of[i]] = len;
    }
    return SMELT_OK;
}

/* off per axis: output index i reads input index i + off. */
static void ccp_offsets(const smelt_tensor *x, const smelt_tensor *y, int64_t *off)
{
    for (int d = 0; d < x->rank; d++) {
        int64_t dim = x->dims[d], len = y->dims[d];
        off[d] = len <= dim ? (dim - len) / 2 : -((len - dim) / 2);
    }
}

static smelt_status ccp_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    (void)ctx, (void)node;
    const smelt_tensor *x = in[0];
    smelt_tensor *y = &out[0];
    int64_t off[SMELT_MAX_RANK], idx[SMELT_MAX_RANK] = {0}, xs[SMELT_MAX_RANK];
    ccp_offsets(x, y, off);
    op_strides(x, xs);
    size_t es = smelt_dtype_size(x->dtype);
    int64_t n = op_numel(y);
    for (int64_t i = 0; i < n; i++, op_next_index(idx, y->dims, y->rank)) {
        int64_t src = 0;
        bool inside = true;
        for (int d = 0; d < x->rank && inside; d++) {
            int64_t s = idx[d] + off[d];
            inside = s >= 0 && s < x->dims[d];
            src += s * xs[d];
        }
        if (inside) /* outside stays 0: outputs come zeroed */
            memcpy((char *)y->data + (size_t)i * es, (const char *)x->data + (size_t)src * es, es);
    }
    return SMELT_OK;
}

typedef struct ccp_te {
    const te_tensor *x;
    int64_t off[SMELT_MAX_RANK], out[SMELT_MAX_RANK];
} ccp_te;

static ir_expr *ccp_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const ccp_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *xi[SMELT_MAX_RANK], *inside = NULL;
    for (int d = 0; d < s->x->n_axes; d++) {
        xi[d] = ir_add(b, idx[d], ir_int(b, s->off[d]));
        int64_t dim = s->x->buf->shape[d];
        if (s->out[d] <= dim) continue; /* cropping (or equal): always inside */
        ir_expr *in = ir_binary(b, IR_AND, ir_binary(b, IR_GE, xi[d], ir_int(b, 0)),
                                ir_binary(b, IR_LT, xi[d], ir_int(b, dim)));
        inside = inside ? ir_binary(b, IR_AND, inside, in) : in;
        xi[d] = ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, xi[d], ir_int(b, 0)),
                          ir_int(b, dim > 0 ? dim - 1 : 0));
    }
    ir_expr *v = te_read(g, s->x, xi);
    smelt_dtype dt = s->x->buf->dtype;
    ir_expr *zero = op_dtype_is_float(dt) ? ir_const_float(b, dt, 0.0) : ir_const_int(b, dt, 0);
    return inside ? ir_select(b, inside, v, zero) : v;
}

static smelt_status ccp_compute(op_compute_args *a)
{
    ccp_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    const smelt_tensor *o = &a->out_type[0];
    s->x = a->in[0];
    for (int d = 0; d < o->rank; d++) {
        if (s->x->buf->shape[d] == 0 && o->dims[d] > 0)
            return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                           "padding an empty axis has no compiled form");
        int64_t dim = s->x->buf->shape[d], len = o->dims[d];
        s->off[d] = len <= dim ? (dim - len) / 2 : -((len - dim) / 2);
        s->out[d] = len;
    }
    a->out[0] = te_compute(a->te, "y", o->dtype, o->rank, o->dims, ccp_body, s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_CENTER_CROP_PAD = {
    .compute = ccp_compute, .import = ccp_import, .infer = ccp_infer, .eval = ccp_eval,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
};
