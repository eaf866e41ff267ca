/* Shape manipulation: Identity, Dropout (inference), Flatten, Reshape,
 * Transpose, Squeeze, Unsqueeze, Shape, Size, Expand, Tile, Concat, Split,
 * ConstantOfShape, Range.
 *
 * The kernels move elements without looking at them (memcpy of
 * smelt_dtype_size bytes), so one code path serves every dtype. */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "te/te.h"
#include "ops/shape.h"

#define COPY_MAX_DIMS (2 * SMELT_MAX_RANK) /* Tile views rank r as 2r dims */

/* ---- helpers --------------------------------------------------------------- */

static const char *input_name(const gr_node *node, int i)
{
    return i < node->n_inputs && node->inputs[i] ? node->inputs[i]->name : "?";
}

/* Data movement needs a fixed element size: every dtype but string. */
static smelt_status check_movable(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *t,
                                  int i)
{
    if (smelt_dtype_size(t->dtype) == 0)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "input '%s' has unsupported dtype %s",
                       input_name(node, i), smelt_dtype_name(t->dtype));
    return SMELT_OK;
}

static smelt_status require_input(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, int i, const char *role,
                                  const smelt_tensor **out)
{
    *out = op_input(node, in, i);
    if (!*out) return op_errf(ctx, node, SMELT_ERR_MODEL, "input %d (%s) is missing", i, role);
    return SMELT_OK;
}

/* Read a shape-giving input's values; `role` names it in messages. */
static smelt_status read_ints(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *t,
                              int i, const char *role, int64_t *vals, int max, int *count)
{
    char what[192];
    snprintf(what, sizeof what, "%s input '%s'", role, input_name(node, i));
    return op_read_ints(ctx, node, t, what, vals, max, count);
}

/* Element count of a 1-D shape-giving input whose data is unknown, or -1. */
static int64_t static_length(const smelt_tensor *t)
{
    return t->rank == 1 && t->dims[0] >= 0 ? t->dims[0] : t->rank == 0 ? 1 : -1;
}

static void copy_bytes(smelt_tensor *dst, const smelt_tensor *src)
{
    size_t a = smelt_tensor_nbytes(dst), b = smelt_tensor_nbytes(src);
    size_t n = a < b ? a : b;
    if (n) memcpy(dst->data, src->data, n);
}

/* Product of dims[from, to): static when all are; the one symbolic dim when
 * the rest multiply to 1; 0 when a static dim is 0; else unknown. */
static smelt_status dims_product(smelt_ctx *ctx, const gr_node *node, const int64_t *dims,
                                 int from, int to, int64_t *out)
{
    int64_t p = 1, sym = 0;
    int nsym = 0;
    for (int i = from; i < to; i++) {
        if (dims[i] < 0) {
            nsym++;
            sym = dims[i];
        } else if (smelt_mul_overflow_i64(p, dims[i], &p)) {
            return op_errf(ctx, node, SMELT_ERR_LIMIT, "the product of dims overflows int64");
        }
    }
    *out = p == 0 ? 0 : nsym == 0 ? p : nsym == 1 && p == 1 ? sym : GR_DIM_UNKNOWN;
    return SMELT_OK;
}

/* Static product of dims[from, to) (eval time: dims are static). */
static int64_t static_product(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= dims[i];
    return p;
}

/* "2, ?, 4": symbolic dims as ?, and position minus_one (if >= 0) as -1. */
static void format_dims(const int64_t *dims, int rank, int minus_one, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < rank && len < size; i++) {
        const char *sep = i ? ", " : "";
        int w = i == minus_one ? snprintf(buf + len, size - len, "%s-1", sep)
                : dims[i] >= 0 ? snprintf(buf + len, size - len, "%s%lld", sep, (long long)dims[i])
                               : snprintf(buf + len, size - len, "%s?", sep);
        if (w < 0) break;
        len += (size_t)w;
    }
}

/* ---- compute helpers (te) ----------------------------------------------------- */

static smelt_status compute_status(const op_compute_args *a, const te_tensor *t)
{
    if (t) return SMELT_OK;
    smelt_status s = smelt_ctx_status(a->ctx);
    return s != SMELT_OK ? s : op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
}

/* The one output, shaped as infer said, computed by body. */
static smelt_status compute_output(op_compute_args *a, te_body_fn body, void *user)
{
    const smelt_tensor *ot = &a->out_type[0];
    a->out[0] = te_compute(a->te, "y", ot->dtype, ot->rank, ot->dims, body, user, "injective");
    return compute_status(a, a->out[0]);
}

/* An element of `dt` with the value of element 0 of t (any dtype). */
static ir_expr *const_like(ir_builder *b, smelt_dtype dt, const smelt_tensor *t)
{
    if (op_dtype_is_float(dt)) return ir_const_float(b, dt, op_get_f64(t, 0));
    return ir_const_int(b, dt, op_get_i64(t, 0));
}

/* out[idx] = x[the element at the same row-major offset]: Reshape, Flatten,
 * Squeeze, Unsqueeze.  Size-1 dims read index 0; the other dims are matched
 * in runs of equal products, so only dims that really merge or split cost a
 * floordiv/floormod, and inserting or removing 1s costs nothing. */
typedef struct reshape_map {
    const te_tensor *x;
    const smelt_tensor *out;
} reshape_map;

/* Non-1 dims of a shape (their positions). */
static int non_unit_dims(const int64_t *dims, int rank, int *pos)
{
    int n = 0;
    for (int d = 0; d < rank; d++)
        if (dims[d] != 1) pos[n++] = d;
    return n;
}

/* One run: output dims os[0..no) and x dims xs[0..nx) with equal products.
 * The run's flat offset from the output index, unravelled into x's dims. */
static void reshape_run(ir_builder *b, const reshape_map *m, ir_expr *const *idx,
                        const int *os, int no, const int *xs, int nx, ir_expr **xi)
{
    ir_expr *flat = idx[os[0]];
    for (int j = 1; j < no; j++)
        flat = ir_add(b, ir_mul(b, flat, ir_int(b, m->out->dims[os[j]])), idx[os[j]]);
    for (int j = nx - 1; j > 0; j--) {
        ir_expr *dim = ir_int(b, m->x->buf->shape[xs[j]]);
        xi[xs[j]] = ir_binary(b, IR_FLOORMOD, flat, dim);
        flat = ir_binary(b, IR_FLOORDIV, flat, dim);
    }
    xi[xs[0]] = flat;
}

static ir_expr *reshape_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const reshape_map *m = user;
    const int64_t *xd = m->x->buf->shape, *od = m->out->dims;
    ir_expr *xi[SMELT_MAX_RANK];
    int xs[SMELT_MAX_RANK], os[SMELT_MAX_RANK];
    for (int d = 0; d < m->x->buf->rank; d++) xi[d] = ir_int(&g->b, 0);
    int nx = non_unit_dims(xd, m->x->buf->rank, xs), no = non_unit_dims(od, m->out->rank, os);
    if (static_product(xd, 0, m->x->buf->rank) == 0) return te_read(g, m->x, xi); /* never read */
    int p = 0, q = 0;
    while (p < nx && q < no) {
        int p0 = p, q0 = q;
        int64_t px = xd[xs[p++]], po = od[os[q++]];
        while (px != po) {
            if (px < po && p < nx)
                px *= xd[xs[p++]];
            else if (po < px && q < no)
                po *= od[os[q++]];
            else
                break; /* counts disagree: infer rules this out */
        }
        reshape_run(&g->b, m, idx, os + q0, q - q0, xs + p0, p - p0, xi);
    }
    return te_read(g, m->x, xi);
}

static smelt_status reshape_compute(op_compute_args *a)
{
    reshape_map m = {a->in[0], &a->out_type[0]};
    return compute_output(a, reshape_body, &m);
}

/* One run of n elements read with a source stride (in elements). */
static void copy_row(char *dst, const char *src, size_t es, int64_t n, int64_t stride)
{
    if (stride == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1:
        for (int64_t j = 0; j < n; j++) ((uint8_t *)dst)[j] = ((const uint8_t *)src)[j * stride];
        break;
    case 2:
        for (int64_t j = 0; j < n; j++)
            ((uint16_t *)dst)[j] = ((const uint16_t *)src)[j * stride];
        break;
    case 4:
        for (int64_t j = 0; j < n; j++)
            ((uint32_t *)dst)[j] = ((const uint32_t *)src)[j * stride];
        break;
    case 8:
        for (int64_t j = 0; j < n; j++)
            ((uint64_t *)dst)[j] = ((const uint64_t *)src)[j * stride];
        break;
    default:
        for (int64_t j = 0; j < n; j++)
            memcpy(dst + (size_t)j * es, src + (size_t)(j * stride) * es, es);
        break;
    }
}

/* dst (dense, row-major over dims) [idx] = src[sum idx[i] * strides[i]].
 * Size-1 dims are dropped and dims that are contiguous in src merged, so
 * the inner loop runs as long as possible. */
static void copy_strided(void *dst, const void *src, size_t es, int rank, const int64_t *dims,
                         const int64_t *strides)
{
    int64_t d[COPY_MAX_DIMS], s[COPY_MAX_DIMS];
    int r = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0) return;
        if (dims[i] == 1) continue;
        if (r > 0 && s[r - 1] == strides[i] * dims[i]) {
            d[r - 1] *= dims[i];
            s[r - 1] = strides[i];
            continue;
        }
        d[r] = dims[i];
        s[r] = strides[i];
        r++;
    }
    if (r == 0) {
        memcpy(dst, src, es);
        return;
    }
    int64_t idx[COPY_MAX_DIMS] = {0}, off = 0, n = d[r - 1];
    char *o = dst;
    for (;;) {
        copy_row(o, (const char *)src + (size_t)off * es, es, n, s[r - 1]);
        o += (size_t)n * es;
        int i = r - 2;
        for (; i >= 0; i--) {
            off += s[i];
            if (++idx[i] < d[i]) break;
            off -= s[i] * d[i];
            idx[i] = 0;
        }
        if (i < 0) break;
    }
}

/* Shared by ops whose output is the input's bytes under another shape. */
static smelt_status eval_copy(smelt_ctx *ctx, const gr_node *node,
                              const smelt_tensor *const *in, smelt_tensor *out)
{
    copy_bytes(&out[0], in[0]);
    return SMELT_OK;
}

/* ---- Identity ---------------------------------------------------------------- */

/* Identity-14 and later pass sequences (and optionals) on whole. */
static smelt_status identity_infer(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    if (smelt_dtype_is_container(in[0]->dtype)) {
        op_copy_shape(&out[0], in[0]);
        return SMELT_OK;
    }
    SMELT_TRY(check_movable(ctx, node, in[0], 0));
    op_copy_shape(&out[0], in[0]);
    return SMELT_OK;
}

static ir_expr *identity_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return te_read(g, user, idx);
}

static smelt_status identity_compute(op_compute_args *a)
{
    const te_tensor *x = a->in[0];
    a->out[0] = te_compute(a->te, "y", x->buf->dtype, x->buf->rank, x->buf->shape,
                           identity_body, (void *)x, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

static smelt_status identity_eval(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    if (!smelt_dtype_is_container(in[0]->dtype)) return eval_copy(ctx, node, in, out);
    return smelt_value_copy(in[0], &out[0]) ? SMELT_OK
                                            : op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
}

const op_def op_def_IDENTITY = {
    .compute = identity_compute,
    .infer = identity_infer, .eval = identity_eval, .min_inputs = 1,
    .max_inputs = 1,         .min_outputs = 1,  .max_outputs = 1,
    .flags = OP_FLAG_CONTAINERS,
};

/* ---- Dropout (inference only) ----------------------------------------------- */

typedef struct dropout_attrs {
    bool mask_is_bool; /* opset >= 10; before, the mask had the input's dtype */
} dropout_attrs;

/* Inference drops nothing whatever ratio (until opset 11) and seed say;
 * training is an input from opset 12 (dropout_check_mode). */
OP_ATTRS(DROPOUT) = {{"is_test", 0, 6}, {"ratio", 0, 11}, {"seed", 12, 0}, {NULL, 0, 0}};

/* Before opset 7, an explicit is_test=0 asked for training (random drops). */
static smelt_status dropout_check_is_test(smelt_ctx *ctx, const gr_graph *g,
                                          const gr_node *node)
{
    bool is_test;
    float ratio;
    if (g->opset >= 7) return SMELT_OK;
    SMELT_TRY(op_attr_bool(ctx, node, "is_test", true, &is_test));
    SMELT_TRY(op_attr_float(ctx, node, "ratio", 0.5f, &ratio));
    if (!is_test && ratio != 0.0f)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                       "attribute 'is_test' is 0 (training mode, random dropout), which is "
                       "not supported");
    return SMELT_OK;
}

static smelt_status dropout_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    SMELT_TRY(dropout_check_is_test(ctx, g, node));
    dropout_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    a->mask_is_bool = g->opset >= 10;
    return SMELT_OK;
}

/* Training mode drops at random; only ratio 0 (nothing dropped) is
 * deterministic and so supported. */
static smelt_status dropout_check_mode(smelt_ctx *ctx, const gr_node *node,
                                       const smelt_tensor *const *in)
{
    const smelt_tensor *mode = op_input(node, in, 2), *ratio = op_input(node, in, 1);
    if (!mode || !mode->data || op_numel(mode) != 1 || op_get_i64(mode, 0) == 0)
        return SMELT_OK;
    if (ratio && !ratio->data) return SMELT_OK; /* decided at run time */
    if (ratio && op_numel(ratio) == 1 && op_get_f64(ratio, 0) == 0.0) return SMELT_OK;
    return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                   "training_mode=true with a nonzero ratio is not supported (random dropout)");
}

static smelt_status dropout_infer(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const dropout_attrs *a = node->op_attrs;
    SMELT_TRY(check_movable(ctx, node, in[0], 0));
    SMELT_TRY(dropout_check_mode(ctx, node, in));
    op_copy_shape(&out[0], in[0]);
    if (node->n_outputs > 1) {
        op_copy_shape(&out[1], in[0]);
        if (!a || a->mask_is_bool) out[1].dtype = SMELT_DT_BOOL;
    }
    return SMELT_OK;
}

static smelt_status dropout_eval(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(dropout_check_mode(ctx, node, in));
    copy_bytes(&out[0], in[0]);
    if (node->n_outputs > 1 && out[1].data) { /* nothing is dropped: mask all true */
        int64_t n = op_numel(&out[1]);
        for (int64_t i = 0; i < n; i++) op_set_f64(&out[1], i, 1.0);
    }
    return SMELT_OK;
}

static ir_expr *one_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const smelt_dtype *dt = user;
    if (op_dtype_is_float(*dt)) return ir_const_float(&g->b, *dt, 1.0);
    return ir_const_int(&g->b, *dt, 1);
}

/* A training_mode known only at run time: copying x through would be wrong
 * whenever it is true, and compiled code cannot draw the masks; only a
 * constant ratio of 0 makes both modes the identity. */
static smelt_status dropout_check_runtime_mode(op_compute_args *a)
{
    const gr_node *n = a->node;
    if (n->n_inputs < 3 || !n->inputs[2] || op_input(n, a->in_const, 2)) return SMELT_OK;
    const smelt_tensor *ratio = op_input(n, a->in_const, 1);
    if (ratio && op_numel(ratio) == 1 && op_get_f64(ratio, 0) == 0.0) return SMELT_OK;
    return op_errf(a->ctx, n, SMELT_ERR_UNSUPPORTED,
                   "training_mode input '%s' is only known at run time: compiled code cannot "
                   "draw the random masks of training mode (make it a constant false, or the "
                   "ratio a constant 0)", input_name(n, 2));
}

/* Inference: y = x and a mask of ones. */
static smelt_status dropout_compute(op_compute_args *a)
{
    SMELT_TRY(dropout_check_runtime_mode(a));
    const smelt_tensor *mode = op_input(a->node, a->in_const, 2);
    bool training = mode && op_numel(mode) == 1 && op_get_i64(mode, 0) != 0;
    if (training && op_input(a->node, a->in_const, 1) == NULL && a->node->n_inputs > 1 &&
        a->node->inputs[1])
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "ratio input '%s' must be a constant to compile with training_mode=true",
                       input_name(a->node, 1));
    SMELT_TRY(dropout_check_mode(a->ctx, a->node, a->in_const));
    SMELT_TRY(compute_output(a, identity_body, a->in[0]));
    if (a->node->n_outputs < 2 || !a->node->outputs[1]) return SMELT_OK;
    const smelt_tensor *mt = &a->out_type[1];
    smelt_dtype dt = mt->dtype;
    a->out[1] = te_compute(a->te, "mask", dt, mt->rank, mt->dims, one_body, &dt, "injective");
    return compute_status(a, a->out[1]);
}

const op_def op_def_DROPOUT = {
    .compute = dropout_compute,
    .import = dropout_import, .infer = dropout_infer, .eval = dropout_eval,
    .min_inputs = 1,          .max_inputs = 3,       .min_outputs = 1, .max_outputs = 2,
};

/* ---- Flatten -------------------------------------------------------------------- */

static smelt_status axis_import(smelt_ctx *ctx, gr_graph *g, gr_node *node, int64_t def)
{
    op_axis_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    return op_attr_int(ctx, node, "axis", def, &a->axis);
}

OP_ATTRS(FLATTEN) = {{"axis", 0, 0}, {NULL, 0, 0}};

static smelt_status flatten_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    return axis_import(ctx, g, node, 1);
}

static smelt_status flatten_infer(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_axis_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    SMELT_TRY(check_movable(ctx, node, x, 0));
    int64_t axis = a ? a->axis : 1;
    if (axis < -x->rank || axis > x->rank)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "axis %lld is out of range [%d, %d]",
                       (long long)axis, -x->rank, x->rank);
    int ax = (int)(axis < 0 ? axis + x->rank : axis);
    out[0].dtype = x->dtype;
    out[0].rank = 2;
    SMELT_TRY(dims_product(ctx, node, x->dims, 0, ax, &out[0].dims[0]));
    SMELT_TRY(dims_product(ctx, node, x->dims, ax, x->rank, &out[0].dims[1]));
    return SMELT_OK;
}

const op_def op_def_FLATTEN = {
    .compute = reshape_compute,
    .import = flatten_import, .infer = flatten_infer, .eval = eval_copy,
    .min_inputs = 1,          .max_inputs = 1,       .min_outputs = 1, .max_outputs = 1,
};

/* ---- Reshape -------------------------------------------------------------------- */

OP_ATTRS(RESHAPE) = {{"shape", 0, 4}, {"allowzero", 14, 0}, {NULL, 0, 0}};

static smelt_status reshape_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_reshape_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_bool(ctx, node, "allowzero", false, &a->allowzero));
    if (g->opset < 5) { /* shape was an attribute before opset 5 */
        int n;
        const int64_t *shape;
        SMELT_TRY(op_attr_ints(ctx, node, "shape", &n, &shape));
        if (n < 0) return op_errf(ctx, node, SMELT_ERR_ATTR, "missing required attribute 'shape'");
        SMELT_TRY(op_set_input_ints(ctx, g, node, 1, shape, n));
    }
    return SMELT_OK;
}

/* The -1 dim: input element count over the other output dims.  Symbolic
 * dims copied through (0 entries, or equal symbols) cancel out, so
 * [N, S, 12, 64] -> [0, 0, -1] gives 768 even with N, S symbolic. */
static smelt_status reshape_infer_minus_one(smelt_ctx *ctx, const gr_node *node,
                                            const smelt_tensor *x, const int64_t *dims,
                                            int rank, int neg, int64_t *out)
{
    int64_t num_syms[SMELT_MAX_RANK], num = 1, den = 1;
    int n_syms = 0;
    for (int i = 0; i < x->rank; i++) {
        if (x->dims[i] < 0)
            num_syms[n_syms++] = x->dims[i];
        else if (smelt_mul_overflow_i64(num, x->dims[i], &num))
            return op_errf(ctx, node, SMELT_ERR_LIMIT, "input element count overflows int64");
    }
    *out = GR_DIM_UNKNOWN;
    for (int j = 0; j < rank; j++) {
        if (j == neg) continue;
        if (dims[j] >= 0) {
            if (smelt_mul_overflow_i64(den, dims[j], &den))
                return op_errf(ctx, node, SMELT_ERR_LIMIT, "target shape overflows int64");
            continue;
        }
        int k = 0;
        while (k < n_syms && (num_syms[k] != dims[j] || dims[j] == GR_DIM_UNKNOWN)) k++;
        if (k == n_syms) return SMELT_OK; /* a symbol that does not cancel */
        num_syms[k] = num_syms[--n_syms];
    }
    if (num == 0 && den != 0) {
        *out = 0;
    } else if (n_syms == 1 && num == den) {
        *out = num_syms[0];
    } else if (n_syms == 0) {
        if (den == 0 || num % den != 0) {
            char buf[160];
            format_dims(dims, rank, neg, buf, sizeof buf);
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "cannot infer the -1 in shape [%s] for input '%s' of %lld elements",
                           buf, input_name(node, 0), (long long)num);
        }
        *out = num / den;
    }
    return SMELT_OK;
}

/* Fully static shapes must agree on the element count. */
static smelt_status reshape_check_count(smelt_ctx *ctx, const gr_node *node,
                                        const smelt_tensor *x, const smelt_tensor *o)
{
    int64_t a = -1, b = -1;
    SMELT_TRY(dims_product(ctx, node, x->dims, 0, x->rank, &a));
    SMELT_TRY(dims_product(ctx, node, o->dims, 0, o->rank, &b));
    if (a >= 0 && b >= 0 && a != b) {
        char xs[160], os[160];
        format_dims(x->dims, x->rank, -1, xs, sizeof xs);
        format_dims(o->dims, o->rank, -1, os, sizeof os);
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "cannot reshape input '%s' of shape [%s] (%lld elements) to [%s] (%lld "
                       "elements)",
                       input_name(node, 0), xs, (long long)a, os, (long long)b);
    }
    return SMELT_OK;
}

static smelt_status reshape_infer(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_reshape_attrs *a = node->op_attrs;
    bool allowzero = a && a->allowzero;
    const smelt_tensor *x = in[0], *shape;
    SMELT_TRY(check_movable(ctx, node, x, 0));
    SMELT_TRY(require_input(ctx, node, in, 1, "shape", &shape));
    out[0].dtype = x->dtype;
    if (!shape->data) { /* rank known from the shape input's length */
        int64_t n = static_length(shape);
        if (n < 0 || n > SMELT_MAX_RANK)
            return read_ints(ctx, node, shape, 1, "shape", NULL, 0, NULL);
        out[0].rank = (int)n;
        for (int i = 0; i < n; i++) out[0].dims[i] = GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    int64_t v[SMELT_MAX_RANK];
    int n, neg = -1;
    bool has_zero = false;
    SMELT_TRY(read_ints(ctx, node, shape, 1, "shape", v, SMELT_MAX_RANK, &n));
    for (int i = 0; i < n; i++) {
        out[0].dims[i] = v[i];
        if (v[i] == -1) {
            if (neg >= 0)
                return op_errf(ctx, node, SMELT_ERR_SHAPE, "shape has more than one -1");
            neg = i;
        } else if (v[i] < -1) {
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "shape[%d] = %lld is invalid", i,
                           (long long)v[i]);
        } else if (v[i] == 0) {
            has_zero = true;
            if (allowzero) continue;
            if (i >= x->rank)
                return op_errf(ctx, node, SMELT_ERR_SHAPE,
                               "shape[%d] = 0 copies input dim %d, but input '%s' has rank %d",
                               i, i, input_name(node, 0), x->rank);
            out[0].dims[i] = x->dims[i];
        }
    }
    if (allowzero && has_zero && neg >= 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "shape has both 0 and -1, which allowzero=1 does not allow");
    out[0].rank = n;
    if (neg >= 0)
        SMELT_TRY(reshape_infer_minus_one(ctx, node, x, out[0].dims, n, neg, &out[0].dims[neg]));
    return reshape_check_count(ctx, node, x, &out[0]);
}

const op_def op_def_RESHAPE = {
    .compute = reshape_compute,
    .import = reshape_import, .infer = reshape_infer, .eval = eval_copy,
    .min_inputs = 1, /* opset < 5: the shape attribute */
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- Transpose ------------------------------------------------------------------ */

OP_ATTRS(TRANSPOSE) = {{"perm", 0, 0}, {NULL, 0, 0}};

static smelt_status transpose_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    int n;
    const int64_t *perm;
    SMELT_TRY(op_attr_ints(ctx, node, "perm", &n, &perm));
    if (n > SMELT_MAX_RANK)
        return op_errf(ctx, node, SMELT_ERR_LIMIT, "perm has %d entries, at most %d supported",
                       n, SMELT_MAX_RANK);
    op_transpose_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    a->n_perm = n;
    if (n > 0) memcpy(a->perm, perm, sizeof(int64_t) * (size_t)n);
    return SMELT_OK;
}

static smelt_status transpose_perm(smelt_ctx *ctx, const gr_node *node, int rank, int *perm)
{
    const op_transpose_attrs *a = node->op_attrs;
    if (!a || a->n_perm < 0) {
        for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
        return SMELT_OK;
    }
    if (a->n_perm != rank)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "perm has %d entries but input '%s' has rank %d",
                       a->n_perm, input_name(node, 0), rank);
    bool seen[SMELT_MAX_RANK] = {false};
    for (int i = 0; i < rank; i++) {
        int64_t p = a->perm[i];
        if (p < 0 || p >= rank || seen[p])
            return op_errf(ctx, node, SMELT_ERR_ATTR,
                           "perm is not a permutation of 0..%d (entry %d is %lld)", rank - 1, i,
                           (long long)p);
        seen[p] = true;
        perm[i] = (int)p;
    }
    return SMELT_OK;
}

static smelt_status transpose_infer(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    SMELT_TRY(check_movable(ctx, node, x, 0));
    int perm[SMELT_MAX_RANK];
    SMELT_TRY(transpose_perm(ctx, node, x->rank, perm));
    out[0].dtype = x->dtype;
    out[0].rank = x->rank;
    for (int i = 0; i < x->rank; i++) out[0].dims[i] = x->dims[perm[i]];
    return SMELT_OK;
}

static smelt_status transpose_eval(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    int perm[SMELT_MAX_RANK];
    SMELT_TRY(transpose_perm(ctx, node, x->rank, perm));
    int64_t xs[SMELT_MAX_RANK], src[SMELT_MAX_RANK];
    op_strides(x, xs);
    for (int i = 0; i < x->rank; i++) src[i] = xs[perm[i]];
    copy_strided(out[0].data, x->data, smelt_dtype_size(x->dtype), out[0].rank, out[0].dims,
                 src);
    return SMELT_OK;
}

typedef struct transpose_map {
    const te_tensor *x;
    int perm[SMELT_MAX_RANK];
} transpose_map;

/* y[i0, i1, ...] = x[...] with x's axis perm[d] at output index d */
static ir_expr *transpose_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const transpose_map *m = user;
    ir_expr *xi[SMELT_MAX_RANK];
    for (int d = 0; d < m->x->buf->rank; d++) xi[m->perm[d]] = idx[d];
    return te_read(g, m->x, xi);
}

static smelt_status transpose_compute(op_compute_args *a)
{
    transpose_map m = {a->in[0], {0}};
    SMELT_TRY(transpose_perm(a->ctx, a->node, m.x->buf->rank, m.perm));
    return compute_output(a, transpose_body, &m);
}

const op_def op_def_TRANSPOSE = {
    .compute = transpose_compute,
    .import = transpose_import, .infer = transpose_infer, .eval = transpose_eval,
    .min_inputs = 1,            .max_inputs = 1,         .min_outputs = 1, .max_outputs = 1,
};

/* ---- Squeeze, Unsqueeze ----------------------------------------------------------- */

/* axes moved from attribute to input 1 at opset 13 */
OP_ATTRS(SQUEEZE) = {{"axes", 0, 12}, {NULL, 0, 0}};
OP_ATTRS(UNSQUEEZE) = {{"axes", 0, 12}, {NULL, 0, 0}};

static smelt_status axes_attr_to_input(smelt_ctx *ctx, gr_graph *g, gr_node *node,
                                       bool required)
{
    if (g->opset >= 13) return SMELT_OK;
    int n;
    const int64_t *axes;
    SMELT_TRY(op_attr_ints(ctx, node, "axes", &n, &axes));
    if (n < 0 && required)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "missing required attribute 'axes'");
    if (n < 0) return SMELT_OK;
    return op_set_input_ints(ctx, g, node, 1, axes, n);
}

static smelt_status squeeze_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    return axes_attr_to_input(ctx, g, node, false);
}

static smelt_status unsqueeze_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    return axes_attr_to_input(ctx, g, node, true);
}

/* Which axes of x to drop; error if one of them is statically not 1. */
static smelt_status squeeze_mask(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                 const smelt_tensor *axes, bool *drop)
{
    memset(drop, 0, sizeof(bool) * SMELT_MAX_RANK);
    if (!axes) {
        for (int i = 0; i < x->rank; i++) {
            if (x->dims[i] < 0)
                return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                               "without 'axes', cannot tell whether symbolic dim %d of input "
                               "'%s' is 1",
                               i, input_name(node, 0));
            drop[i] = x->dims[i] == 1;
        }
        return SMELT_OK;
    }
    int64_t v[SMELT_MAX_RANK];
    int n;
    SMELT_TRY(read_ints(ctx, node, axes, 1, "axes", v, SMELT_MAX_RANK, &n));
    for (int k = 0; k < n; k++) {
        int ax;
        SMELT_TRY(op_norm_axis(ctx, node, v[k], x->rank, &ax));
        if (drop[ax])
            return op_errf(ctx, node, SMELT_ERR_ATTR, "axis %d is listed twice", ax);
        if (x->dims[ax] >= 0 && x->dims[ax] != 1)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "cannot squeeze axis %d of input '%s': its size is %lld, not 1", ax,
                           input_name(node, 0), (long long)x->dims[ax]);
        drop[ax] = true;
    }
    return SMELT_OK;
}

static smelt_status squeeze_infer(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *axes = op_input(node, in, 1);
    SMELT_TRY(check_movable(ctx, node, x, 0));
    out[0].dtype = x->dtype;
    if (axes && !axes->data) {
        int64_t n = static_length(axes);
        if (n < 0 || n > x->rank) return read_ints(ctx, node, axes, 1, "axes", NULL, 0, NULL);
        out[0].rank = x->rank - (int)n;
        for (int i = 0; i < out[0].rank; i++) out[0].dims[i] = GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    bool drop[SMELT_MAX_RANK];
    SMELT_TRY(squeeze_mask(ctx, node, x, axes, drop));
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i]) out[0].dims[r++] = x->dims[i];
    out[0].rank = r;
    return SMELT_OK;
}

static smelt_status unsqueeze_infer(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *axes;
    SMELT_TRY(check_movable(ctx, node, x, 0));
    SMELT_TRY(require_input(ctx, node, in, 1, "axes", &axes));
    out[0].dtype = x->dtype;
    int64_t n = axes->data ? op_numel(axes) : static_length(axes);
    if (n < 0) return read_ints(ctx, node, axes, 1, "axes", NULL, 0, NULL);
    if (x->rank + n > SMELT_MAX_RANK)
        return op_errf(ctx, node, SMELT_ERR_LIMIT, "output rank %lld exceeds the maximum %d",
                       (long long)(x->rank + n), SMELT_MAX_RANK);
    int rank = x->rank + (int)n;
    out[0].rank = rank;
    if (!axes->data) {
        for (int i = 0; i < rank; i++) out[0].dims[i] = GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    int64_t v[SMELT_MAX_RANK];
    int count;
    bool added[SMELT_MAX_RANK] = {false};
    SMELT_TRY(read_ints(ctx, node, axes, 1, "axes", v, SMELT_MAX_RANK, &count));
    for (int k = 0; k < count; k++) {
        int ax;
        SMELT_TRY(op_norm_axis(ctx, node, v[k], rank, &ax));
        if (added[ax]) return op_errf(ctx, node, SMELT_ERR_ATTR, "axis %d is listed twice", ax);
        added[ax] = true;
    }
    for (int i = 0, j = 0; i < rank; i++) out[0].dims[i] = added[i] ? 1 : x->dims[j++];
    return SMELT_OK;
}

const op_def op_def_SQUEEZE = {
    .compute = reshape_compute,
    .import = squeeze_import, .infer = squeeze_infer, .eval = eval_copy,
    .min_inputs = 1,          .max_inputs = 2,       .min_outputs = 1, .max_outputs = 1,
};

const op_def op_def_UNSQUEEZE = {
    .compute = reshape_compute,
    .import = unsqueeze_import, .infer = unsqueeze_infer, .eval = eval_copy,
    .min_inputs = 1,            .max_inputs = 2,         .min_outputs = 1, .max_outputs = 1,
};

/* ---- Shape, Size ------------------------------------------------------------------ */

OP_ATTRS(SHAPE) = {{"start", 15, 0}, {"end", 15, 0}, {NULL, 0, 0}};

static smelt_status shape_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_shape_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    a->has_end = gr_node_attr(node, "end") != NULL;
    SMELT_TRY(op_attr_int(ctx, node, "start", 0, &a->start));
    return op_attr_int(ctx, node, "end", 0, &a->end);
}

/* [start, end) clamped to [0, rank] as the spec says. */
static void shape_range(const gr_node *node, int rank, int64_t *start, int64_t *end)
{
    const op_shape_attrs *a = node->op_attrs;
    int64_t s = a ? a->start : 0, e = a && a->has_end ? a->end : rank;
    if (s < 0) s += rank;
    if (e < 0) e += rank;
    *start = s < 0 ? 0 : s > rank ? rank : s;
    *end = e < 0 ? 0 : e > rank ? rank : e;
    if (*end < *start) *end = *start;
}

static smelt_status shape_infer(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    int64_t s, e;
    shape_range(node, in[0]->rank, &s, &e);
    out[0].dtype = SMELT_DT_INT64;
    out[0].rank = 1;
    out[0].dims[0] = e - s;
    return SMELT_OK;
}

static smelt_status shape_eval(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    int64_t s, e;
    shape_range(node, in[0]->rank, &s, &e);
    for (int64_t i = s; i < e; i++) ((int64_t *)out[0].data)[i - s] = in[0]->dims[i];
    return SMELT_OK;
}

/* The values are the input's static dims: a select chain over the index. */
typedef struct shape_values {
    const int64_t *dims;
    int64_t n;
} shape_values;

static ir_expr *shape_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const shape_values *v = user;
    ir_builder *b = &g->b;
    if (v->n == 0) return ir_int(b, 0); /* no elements */
    ir_expr *e = ir_int(b, v->dims[v->n - 1]);
    for (int64_t i = v->n - 2; i >= 0; i--)
        e = ir_select(b, ir_binary(b, IR_EQ, idx[0], ir_int(b, i)), ir_int(b, v->dims[i]), e);
    return e;
}

static smelt_status shape_compute(op_compute_args *a)
{
    const ir_buffer *x = a->in[0]->buf;
    int64_t s, e;
    shape_range(a->node, x->rank, &s, &e);
    shape_values v = {x->shape + s, e - s};
    return compute_output(a, shape_body, &v);
}

const op_def op_def_SHAPE = {
    .compute = shape_compute,
    .import = shape_import,
    .infer = shape_infer,
    .eval = shape_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = OP_FLAG_SHAPE_ONLY,
};

static smelt_status size_infer(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    out[0].dtype = SMELT_DT_INT64;
    out[0].rank = 0;
    return SMELT_OK;
}

static smelt_status size_eval(smelt_ctx *ctx, const gr_node *node,
                              const smelt_tensor *const *in, smelt_tensor *out)
{
    *(int64_t *)out[0].data = op_numel(in[0]);
    return SMELT_OK;
}

static ir_expr *size_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const ir_buffer *x = user;
    return ir_int(&g->b, static_product(x->shape, 0, x->rank));
}

static smelt_status size_compute(op_compute_args *a)
{
    return compute_output(a, size_body, a->in[0]->buf);
}

const op_def op_def_SIZE = {
    .compute = size_compute,
    .infer = size_infer,
    .eval = size_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = OP_FLAG_SHAPE_ONLY,
};

/* ---- Expand ------------------------------------------------------------------------ */

static smelt_status expand_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *shape;
    SMELT_TRY(check_movable(ctx, node, x, 0));
    SMELT_TRY(require_input(ctx, node, in, 1, "shape", &shape));
    out[0].dtype = x->dtype;
    smelt_tensor target = {.dtype = SMELT_DT_INT64};
    if (!shape->data) {
        int64_t n = static_length(shape);
        if (n < 0 || n > SMELT_MAX_RANK)
            return read_ints(ctx, node, shape, 1, "shape", NULL, 0, NULL);
        /* a target dim may be 1 (keep x's) or x's size: only x's static
         * non-1 dims are certain */
        out[0].rank = x->rank > n ? x->rank : (int)n;
        for (int i = 0; i < out[0].rank; i++) {
            int xi = i - (out[0].rank - x->rank);
            bool certain = xi >= 0 && x->dims[xi] >= 0 && x->dims[xi] != 1;
            out[0].dims[i] = certain ? x->dims[xi] : GR_DIM_UNKNOWN;
        }
        return SMELT_OK;
    }
    int n;
    SMELT_TRY(read_ints(ctx, node, shape, 1, "shape", target.dims, SMELT_MAX_RANK, &n));
    target.rank = n;
    for (int i = 0; i < n; i++)
        if (target.dims[i] < 0)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "shape[%d] = %lld is negative", i,
                           (long long)target.dims[i]);
    return op_broadcast(ctx, node, x, &target, &out[0]);
}

static smelt_status expand_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    int64_t xs[SMELT_MAX_RANK], src[SMELT_MAX_RANK];
    op_strides(x, xs);
    int lead = out[0].rank - x->rank;
    for (int i = 0; i < out[0].rank; i++) {
        int xi = i - lead;
        src[i] = xi < 0 || x->dims[xi] == 1 ? 0 : xs[xi];
    }
    copy_strided(out[0].data, x->data, smelt_dtype_size(x->dtype), out[0].rank, out[0].dims,
                 src);
    return SMELT_OK;
}

typedef struct expand_map {
    const te_tensor *x;
    int lead; /* output dims before x's first (numpy alignment from the right) */
} expand_map;

/* Broadcast: x's size-1 dims read index 0. */
static ir_expr *expand_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const expand_map *m = user;
    ir_expr *xi[SMELT_MAX_RANK];
    for (int d = 0; d < m->x->buf->rank; d++)
        xi[d] = m->x->buf->shape[d] == 1 ? ir_int(&g->b, 0) : idx[d + m->lead];
    return te_read(g, m->x, xi);
}

static smelt_status expand_compute(op_compute_args *a)
{
    expand_map m = {a->in[0], a->out_type[0].rank - a->in[0]->buf->rank};
    return compute_output(a, expand_body, &m);
}

const op_def op_def_EXPAND = {
    .compute = expand_compute,
    .infer = expand_infer, .eval = expand_eval, .min_inputs = 2,
    .max_inputs = 2,       .min_outputs = 1,    .max_outputs = 1,
};

/* ---- Tile ------------------------------------------------------------------------ */

static smelt_status tile_repeats(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                 const smelt_tensor *reps, int64_t *r)
{
    int n;
    SMELT_TRY(read_ints(ctx, node, reps, 1, "repeats", r, SMELT_MAX_RANK, &n));
    if (n != x->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "repeats has %d values but input '%s' has rank %d", n,
                       input_name(node, 0), x->rank);
    for (int i = 0; i < n; i++)
        if (r[i] < 0)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "repeats[%d] = %lld is negative", i,
                           (long long)r[i]);
    return SMELT_OK;
}

static smelt_status tile_infer(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *reps;
    SMELT_TRY(check_movable(ctx, node, x, 0));
    SMELT_TRY(require_input(ctx, node, in, 1, "repeats", &reps));
    out[0].dtype = x->dtype;
    out[0].rank = x->rank;
    if (!reps->data) {
        for (int i = 0; i < x->rank; i++) out[0].dims[i] = GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    int64_t r[SMELT_MAX_RANK];
    SMELT_TRY(tile_repeats(ctx, node, x, reps, r));
    for (int i = 0; i < x->rank; i++) {
        int64_t d = x->dims[i];
        if (d < 0)
            out[0].dims[i] = r[i] == 1 ? d : r[i] == 0 ? 0 : GR_DIM_UNKNOWN;
        else if (smelt_mul_overflow_i64(d, r[i], &out[0].dims[i]))
            return op_errf(ctx, node, SMELT_ERR_LIMIT, "tiled dim %d overflows int64", i);
    }
    return SMELT_OK;
}

/* Output axis i of size rep*d is viewed as two axes [rep][d]; the rep axis
 * has source stride 0. */
static smelt_status tile_eval(smelt_ctx *ctx, const gr_node *node,
                              const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    int64_t r[SMELT_MAX_RANK], xs[SMELT_MAX_RANK];
    SMELT_TRY(tile_repeats(ctx, node, x, in[1], r));
    if (op_numel(&out[0]) == 0) return SMELT_OK; /* huge repeats of nothing: no strides to walk */
    op_strides(x, xs);
    int64_t dims[COPY_MAX_DIMS], src[COPY_MAX_DIMS];
    for (int i = 0; i < x->rank; i++) {
        dims[2 * i] = r[i];
        src[2 * i] = 0;
        dims[2 * i + 1] = x->dims[i];
        src[2 * i + 1] = xs[i];
    }
    copy_strided(out[0].data, x->data, smelt_dtype_size(x->dtype), 2 * x->rank, dims, src);
    return SMELT_OK;
}

typedef struct tile_map {
    const te_tensor *x;
    const int64_t *out_dims;
} tile_map;

/* The repeats are implied by the output dims: x[i mod dim] where repeated. */
static ir_expr *tile_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const tile_map *m = user;
    ir_builder *b = &g->b;
    ir_expr *xi[SMELT_MAX_RANK];
    for (int d = 0; d < m->x->buf->rank; d++) {
        int64_t dim = m->x->buf->shape[d];
        xi[d] = dim == m->out_dims[d] ? idx[d]
                : dim <= 1            ? ir_int(b, 0)
                                      : ir_binary(b, IR_FLOORMOD, idx[d], ir_int(b, dim));
    }
    return te_read(g, m->x, xi);
}

static smelt_status tile_compute(op_compute_args *a)
{
    tile_map m = {a->in[0], a->out_type[0].dims};
    return compute_output(a, tile_body, &m);
}

const op_def op_def_TILE = {
    .compute = tile_compute,
    .infer = tile_infer, .eval = tile_eval, .min_inputs = 2,
    .max_inputs = 2,     .min_outputs = 1,  .max_outputs = 1,
};

/* ---- Concat ----------------------------------------------------------------------- */

OP_ATTRS(CONCAT) = {{"axis", 0, 0}, {NULL, 0, 0}};

static smelt_status concat_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    if (g->opset >= 4 && !gr_node_attr(node, "axis"))
        return op_errf(ctx, node, SMELT_ERR_ATTR, "missing required attribute 'axis'");
    return axis_import(ctx, g, node, 1); /* opset < 4 defaulted to 1 */
}

/* Merge a non-axis dim of two inputs: equal, or a static one over a symbol. */
static smelt_status concat_merge_dim(smelt_ctx *ctx, const gr_node *node, int k, int d,
                                     int64_t *acc, int64_t v)
{
    if (*acc == v || v < 0) return SMELT_OK;
    if (*acc < 0) {
        *acc = v;
        return SMELT_OK;
    }
    return op_errf(ctx, node, SMELT_ERR_SHAPE,
                   "input '%s' has size %lld in dim %d, but input '%s' has %lld",
                   input_name(node, k), (long long)v, d, input_name(node, 0), (long long)*acc);
}

static smelt_status concat_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_axis_attrs *a = node->op_attrs;
    const smelt_tensor *x0 = in[0];
    SMELT_TRY(check_movable(ctx, node, x0, 0));
    if (x0->rank < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' is a scalar; cannot concatenate",
                       input_name(node, 0));
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, a ? a->axis : 1, x0->rank, &axis));
    op_copy_shape(&out[0], x0);
    int64_t sum = 0; /* static part of the axis size */
    int n_sym = 0;
    int64_t sym = 0;
    for (int k = 0; k < node->n_inputs; k++) {
        const smelt_tensor *x = in[k];
        if (!x) return op_errf(ctx, node, SMELT_ERR_MODEL, "input %d is missing", k);
        if (x->dtype != x0->dtype || x->rank != x0->rank)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "input '%s' is %s of rank %d, but input '%s' is %s of rank %d",
                           input_name(node, k), smelt_dtype_name(x->dtype), x->rank,
                           input_name(node, 0), smelt_dtype_name(x0->dtype), x0->rank);
        for (int d = 0; d < x->rank; d++)
            if (d != axis)
                SMELT_TRY(concat_merge_dim(ctx, node, k, d, &out[0].dims[d], x->dims[d]));
        if (x->dims[axis] < 0) {
            n_sym++;
            sym = x->dims[axis];
        } else if (smelt_add_overflow_i64(sum, x->dims[axis], &sum)) {
            return op_errf(ctx, node, SMELT_ERR_LIMIT, "concatenated size overflows int64");
        }
    }
    out[0].dims[axis] = n_sym == 0 ? sum : n_sym == 1 && sum == 0 ? sym : GR_DIM_UNKNOWN;
    return SMELT_OK;
}

static smelt_status concat_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_axis_attrs *a = node->op_attrs;
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, a ? a->axis : 1, out[0].rank, &axis));
    size_t es = smelt_dtype_size(out[0].dtype);
    int64_t outer = static_product(out[0].dims, 0, axis);
    size_t inner = (size_t)static_product(out[0].dims, axis + 1, out[0].rank) * es;
    char *dst = out[0].data;
    for (int64_t o = 0; o < outer; o++) {
        for (int k = 0; k < node->n_inputs; k++) {
            size_t chunk = (size_t)in[k]->dims[axis] * inner;
            if (chunk) memcpy(dst, (const char *)in[k]->data + (size_t)o * chunk, chunk);
            dst += chunk;
        }
    }
    return SMELT_OK;
}

typedef struct concat_map {
    te_tensor *const *in;
    int n, axis;
} concat_map;

/* An input's extent along the axis: the run's (te_rt_extent) when it
 * follows a run-time dim, else its static one. */
static ir_expr *axis_extent(te_graph *g, const te_tensor *t, int axis)
{
    ir_expr *e = te_rt_extent(g, t->buf->shape[axis]);
    return e ? e : ir_int(&g->b, t->buf->shape[axis]);
}

/* in[k] at the output index shifted back by `start` along the axis, kept
 * at most `last` when given: the rows past a run's length are padding the
 * last input would read past its end, and an input laid out at the run's
 * dims (a model input, lower/program.c) has no rows past its run length at
 * all, so even a branch the select does not take must index inside it. */
static ir_expr *read_shifted(te_graph *g, const te_tensor *t, ir_expr *const *idx, int axis,
                             ir_expr *start, ir_expr *last)
{
    ir_expr *xi[SMELT_MAX_RANK] = {0};
    for (int d = 0; d < t->buf->rank; d++) xi[d] = idx[d];
    xi[axis] = ir_sub(&g->b, idx[axis], start);
    if (last) xi[axis] = ir_binary(&g->b, IR_MIN, xi[axis], last);
    return te_read(g, t, xi);
}

/* select(i < end0, in0[i], select(i < end1, in1[i - end0], ...)) along the
 * axis; empty inputs drop out.  An input whose extent follows a run-time
 * dim moves the later inputs' start at run time (a key/value cache's
 * Concat(past, new)); each input's index then stays below its run-time
 * extent, and the last one's below its own. */
static ir_expr *concat_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const concat_map *m = user;
    ir_expr *start[64] = {0}, *end = ir_int(&g->b, 0);
    bool rt = false;
    int last = 0;
    for (int k = 0; k < m->n; k++) {
        start[k] = end;
        rt = rt || te_rt_extent(g, m->in[k]->buf->shape[m->axis]);
        end = ir_add(&g->b, end, axis_extent(g, m->in[k], m->axis));
        if (m->in[k]->buf->shape[m->axis] > 0) last = k;
    }
    ir_expr *one = ir_int(&g->b, 1);
    ir_expr *e = read_shifted(g, m->in[last], idx, m->axis, start[last],
                              rt ? ir_sub(&g->b, axis_extent(g, m->in[last], m->axis), one) : NULL);
    for (int k = last - 1; k >= 0; k--) {
        if (m->in[k]->buf->shape[m->axis] == 0) continue;
        ir_expr *in_k = ir_binary(&g->b, IR_LT, idx[m->axis], start[k + 1]);
        ir_expr *ext = te_rt_extent(g, m->in[k]->buf->shape[m->axis]);
        ir_expr *keep = ext ? ir_sub(&g->b, ext, one) : NULL;
        e = ir_select(&g->b, in_k, read_shifted(g, m->in[k], idx, m->axis, start[k], keep), e);
    }
    return e;
}

static smelt_status concat_compute(op_compute_args *a)
{
    const op_axis_attrs *at = a->node->op_attrs;
    concat_map m = {a->in, a->node->n_inputs, 0};
    if (m.n > 64)
        return op_errf(a->ctx, a->node, SMELT_ERR_LIMIT, "too many inputs to compile (%d)", m.n);
    for (int k = 0; k < m.n; k++)
        if (!a->in[k]) return op_errf(a->ctx, a->node, SMELT_ERR_MODEL, "input %d is missing", k);
    SMELT_TRY(op_norm_axis(a->ctx, a->node, at ? at->axis : 1, a->out_type[0].rank, &m.axis));
    return compute_output(a, concat_body, &m);
}

const op_def op_def_CONCAT = {
    .compute = concat_compute,
    .import = concat_import, .infer = concat_infer, .eval = concat_eval,
    .min_inputs = 1,         .max_inputs = -1,     .min_outputs = 1, .max_outputs = 1,
};

/* ---- Split ---------------------------------------------------------------------- */

OP_ATTRS(SPLIT) = {{"axis", 0, 0}, {"split", 0, 12}, {"num_outputs", 18, 0}, {NULL, 0, 0}};

static smelt_status split_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_split_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_int(ctx, node, "axis", 0, &a->axis));
    if (g->opset >= 18) SMELT_TRY(op_attr_int(ctx, node, "num_outputs", 0, &a->num_outputs));
    if (g->opset < 13) { /* split was an attribute before opset 13 */
        int n;
        const int64_t *split;
        SMELT_TRY(op_attr_ints(ctx, node, "split", &n, &split));
        if (n > 0) SMELT_TRY(op_set_input_ints(ctx, g, node, 1, split, n));
    }
    return SMELT_OK;
}

/* sizes[j] along the axis for each of the n outputs (GR_DIM_UNKNOWN when
 * they cannot be known yet). */
static smelt_status split_sizes_given(smelt_ctx *ctx, const gr_node *node, int64_t dim,
                                      const smelt_tensor *split, int n, int64_t *sizes)
{
    if (!split->data) {
        for (int j = 0; j < n; j++) sizes[j] = GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    int count;
    SMELT_TRY(read_ints(ctx, node, split, 1, "split", sizes, n, &count));
    if (count != n)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "split has %d values for %d outputs", count,
                       n);
    int64_t sum = 0;
    for (int j = 0; j < n; j++) {
        if (sizes[j] < 0)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "split[%d] = %lld is negative", j,
                           (long long)sizes[j]);
        if (smelt_add_overflow_i64(sum, sizes[j], &sum))
            return op_errf(ctx, node, SMELT_ERR_LIMIT, "split sizes overflow int64");
    }
    if (dim >= 0 && sum != dim)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "split sizes add up to %lld, but the axis has size %lld", (long long)sum,
                       (long long)dim);
    return SMELT_OK;
}

static smelt_status split_sizes(smelt_ctx *ctx, const gr_node *node, int64_t dim,
                                const smelt_tensor *split, int n, int64_t *sizes)
{
    const op_split_attrs *a = node->op_attrs;
    int64_t num_outputs = a ? a->num_outputs : 0;
    if (split) return split_sizes_given(ctx, node, dim, split, n, sizes);
    if (num_outputs != 0 && num_outputs != n)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "num_outputs is %lld but the node has %d outputs",
                       (long long)num_outputs, n);
    if (dim < 0) {
        for (int j = 0; j < n; j++) sizes[j] = n == 1 ? dim : GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    /* num_outputs (opset 18) allows a smaller last chunk; otherwise equal parts */
    int64_t chunk = num_outputs ? (dim + n - 1) / n : dim / n;
    int64_t last = dim - chunk * (n - 1);
    if ((!num_outputs && dim % n != 0) || last < 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "cannot split an axis of size %lld into %d %s",
                       (long long)dim, n, num_outputs ? "chunks" : "equal parts");
    for (int j = 0; j < n; j++) sizes[j] = j == n - 1 ? last : chunk;
    return SMELT_OK;
}

static smelt_status split_prepare(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, int *axis, int64_t **sizes)
{
    const op_split_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    *sizes = NULL;
    if (x->rank < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' is a scalar; cannot split",
                       input_name(node, 0));
    SMELT_TRY(op_norm_axis(ctx, node, a ? a->axis : 0, x->rank, axis));
    int n = node->n_outputs;
    *sizes = smelt_alloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!*sizes) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    return split_sizes(ctx, node, x->dims[*axis], op_input(node, in, 1), n, *sizes);
}

static smelt_status split_infer(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(check_movable(ctx, node, in[0], 0));
    int axis;
    int64_t *sizes;
    smelt_status s = split_prepare(ctx, node, in, &axis, &sizes);
    for (int j = 0; s == SMELT_OK && j < node->n_outputs; j++) {
        op_copy_shape(&out[j], in[0]);
        out[j].dims[axis] = sizes[j];
    }
    smelt_free(sizes);
    return s;
}

static smelt_status split_eval(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    int axis;
    int64_t *sizes;
    smelt_status s = split_prepare(ctx, node, in, &axis, &sizes);
    if (s != SMELT_OK) {
        smelt_free(sizes);
        return s;
    }
    size_t es = smelt_dtype_size(x->dtype);
    int64_t outer = static_product(x->dims, 0, axis);
    size_t inner = (size_t)static_product(x->dims, axis + 1, x->rank) * es;
    const char *src = x->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int j = 0; j < node->n_outputs; j++) {
            size_t chunk = (size_t)sizes[j] * inner;
            if (out[j].data && chunk) memcpy((char *)out[j].data + (size_t)o * chunk, src, chunk);
            src += chunk;
        }
    }
    smelt_free(sizes);
    return SMELT_OK;
}

typedef struct split_part {
    const te_tensor *x;
    int axis;
    int64_t offset; /* of this output along the axis */
} split_part;

static ir_expr *split_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const split_part *p = user;
    ir_expr *xi[SMELT_MAX_RANK];
    for (int d = 0; d < p->x->buf->rank; d++) xi[d] = idx[d];
    if (p->offset) xi[p->axis] = ir_add(&g->b, idx[p->axis], ir_int(&g->b, p->offset));
    return te_read(g, p->x, xi);
}

/* One compute per output, each reading x from its offset; the sizes are
 * the outputs' dims along the axis (infer has checked them). */
static smelt_status split_compute(op_compute_args *a)
{
    const op_split_attrs *at = a->node->op_attrs;
    split_part p = {a->in[0], 0, 0};
    SMELT_TRY(op_norm_axis(a->ctx, a->node, at ? at->axis : 0, p.x->buf->rank, &p.axis));
    for (int j = 0; j < a->node->n_outputs; j++) {
        const smelt_tensor *ot = &a->out_type[j];
        if (a->node->outputs[j]) {
            char name[24];
            snprintf(name, sizeof name, "y%d", j);
            a->out[j] = te_compute(a->te, name, ot->dtype, ot->rank, ot->dims, split_body, &p,
                                   "injective");
            SMELT_TRY(compute_status(a, a->out[j]));
        }
        p.offset += ot->dims[p.axis];
    }
    return SMELT_OK;
}

const op_def op_def_SPLIT = {
    .compute = split_compute,
    .import = split_import, .infer = split_infer, .eval = split_eval,
    .min_inputs = 1,        .max_inputs = 2,      .min_outputs = 1, .max_outputs = -1,
};

/* ---- ConstantOfShape ----------------------------------------------------------------- */

OP_ATTRS(CONSTANT_OF_SHAPE) = {{"value", 0, 0}, {NULL, 0, 0}};

static smelt_status constant_of_shape_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    const smelt_tensor *value;
    SMELT_TRY(op_attr_tensor(ctx, node, "value", &value));
    if (value && op_numel(value) != 1)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'value' has %lld elements, expected 1",
                       (long long)op_numel(value));
    if (value && smelt_dtype_size(value->dtype) == 0)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                       "attribute 'value' has unsupported dtype %s",
                       smelt_dtype_name(value->dtype));
    op_constant_of_shape_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    a->value = value;
    return SMELT_OK;
}

static smelt_status constant_of_shape_infer(smelt_ctx *ctx, const gr_node *node,
                                            const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_constant_of_shape_attrs *a = node->op_attrs;
    const smelt_tensor *shape = in[0];
    out[0].dtype = a && a->value ? a->value->dtype : SMELT_DT_FLOAT32;
    if (!shape->data) {
        int64_t n = static_length(shape);
        if (n < 0 || n > SMELT_MAX_RANK)
            return read_ints(ctx, node, shape, 0, "shape", NULL, 0, NULL);
        out[0].rank = (int)n;
        for (int i = 0; i < n; i++) out[0].dims[i] = GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    int n;
    SMELT_TRY(read_ints(ctx, node, shape, 0, "shape", out[0].dims, SMELT_MAX_RANK, &n));
    out[0].rank = n;
    int64_t total = 1;
    for (int i = 0; i < n; i++) {
        if (out[0].dims[i] < 0)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "shape[%d] = %lld is negative", i,
                           (long long)out[0].dims[i]);
        if (smelt_mul_overflow_i64(total, out[0].dims[i], &total) ||
            total > SMELT_LIMIT_TENSOR_ELEMS)
            return op_errf(ctx, node, SMELT_ERR_LIMIT,
                           "output has more than the limit of %lld elements",
                           (long long)SMELT_LIMIT_TENSOR_ELEMS);
    }
    return SMELT_OK;
}

static smelt_status constant_of_shape_eval(smelt_ctx *ctx, const gr_node *node,
                                           const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_constant_of_shape_attrs *a = node->op_attrs;
    if (!a || !a->value) return SMELT_OK; /* float 0: the output comes zeroed */
    size_t es = smelt_dtype_size(out[0].dtype);
    int64_t n = op_numel(&out[0]);
    char *dst = out[0].data;
    for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * es, a->value->data, es);
    return SMELT_OK;
}

typedef struct fill_value {
    smelt_dtype dt;
    const smelt_tensor *value; /* NULL: zero */
} fill_value;

static ir_expr *fill_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const fill_value *f = user;
    if (!f->value) return op_dtype_is_float(f->dt) ? ir_const_float(&g->b, f->dt, 0.0)
                                                   : ir_const_int(&g->b, f->dt, 0);
    return const_like(&g->b, f->dt, f->value);
}

static smelt_status constant_of_shape_compute(op_compute_args *a)
{
    const op_constant_of_shape_attrs *at = a->node->op_attrs;
    fill_value f = {a->out_type[0].dtype, at ? at->value : NULL};
    return compute_output(a, fill_body, &f);
}

const op_def op_def_CONSTANT_OF_SHAPE = {
    .compute = constant_of_shape_compute,
    .import = constant_of_shape_import,
    .infer = constant_of_shape_infer,
    .eval = constant_of_shape_eval,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- Range ---------------------------------------------------------------------------- */

/* Range-27 adds float16/bfloat16, whose values are computed in stash_type
 * (float or double: each value start + i * delta rounded to it, then to the
 * 16-bit type); it has no effect on the other types. */
OP_ATTRS(RANGE) = {{"stash_type", 27, 0}, {NULL, 0, 0}};

typedef struct op_range_attrs {
    smelt_dtype stash; /* FLOAT32 or FLOAT64 */
    bool half_types;   /* opset >= 27: float16/bfloat16 allowed */
} op_range_attrs;

static smelt_status range_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_range_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    int64_t stash;
    SMELT_TRY(op_attr_int(ctx, node, "stash_type", SMELT_DT_FLOAT32, &stash));
    if (stash != SMELT_DT_FLOAT32 && stash != SMELT_DT_FLOAT64)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'stash_type' is %lld; expected 1 (float) or 11 (double)",
                       (long long)stash);
    a->stash = (smelt_dtype)stash;
    a->half_types = g->opset >= 27;
    return SMELT_OK;
}

static const smelt_dtype range_dtypes[] = {
    SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_INT16,
    SMELT_DT_INT32,   SMELT_DT_INT64,   SMELT_DT_UNDEFINED,
};
static const smelt_dtype range_dtypes_27[] = {
    SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_INT16,    SMELT_DT_INT32,
    SMELT_DT_INT64,   SMELT_DT_FLOAT16, SMELT_DT_BFLOAT16, SMELT_DT_UNDEFINED,
};

/* The dtype a float range's values are computed in. */
static smelt_dtype range_work_dtype(const gr_node *node, smelt_dtype dt)
{
    if (dt != SMELT_DT_FLOAT16 && dt != SMELT_DT_BFLOAT16) return SMELT_DT_FLOAT64;
    return ((const op_range_attrs *)node->op_attrs)->stash;
}

static smelt_status range_check_inputs(smelt_ctx *ctx, const gr_node *node,
                                       const smelt_tensor *const *in)
{
    static const char *const roles[] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; i++) {
        const smelt_tensor *t;
        SMELT_TRY(require_input(ctx, node, in, i, roles[i], &t));
        char what[192];
        snprintf(what, sizeof what, "%s input '%s'", roles[i], input_name(node, i));
        bool half_ok = ((const op_range_attrs *)node->op_attrs)->half_types;
        SMELT_TRY(op_check_dtype(ctx, node, t, what, half_ok ? range_dtypes_27 : range_dtypes));
        if (t->dtype != in[0]->dtype)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "%s is %s but start is %s", what,
                           smelt_dtype_name(t->dtype), smelt_dtype_name(in[0]->dtype));
        if (op_dims_static(t) && op_numel(t) != 1)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "%s must be a scalar, got %lld elements",
                           what, (long long)op_numel(t));
    }
    return SMELT_OK;
}

/* Output length max(ceil((limit - start) / delta), 0), exact for integers. */
static smelt_status range_length(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, int64_t *len)
{
    double n;
    if (op_dtype_is_float(in[0]->dtype)) {
        double s = op_get_f64(in[0], 0), l = op_get_f64(in[1], 0), d = op_get_f64(in[2], 0);
        if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d))
            return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                           "start %g, limit %g, delta %g do not give a finite range", s, l, d);
        n = ceil((l - s) / d);
    } else {
        __int128 s = op_get_i64(in[0], 0), l = op_get_i64(in[1], 0), d = op_get_i64(in[2], 0);
        if (d == 0) return op_errf(ctx, node, SMELT_ERR_RUNTIME, "delta is 0");
        __int128 diff = l - s;
        __int128 q = d > 0 ? (diff <= 0 ? 0 : (diff + d - 1) / d)
                           : (diff >= 0 ? 0 : (-diff + -d - 1) / -d);
        n = (double)q;
    }
    if (n > (double)SMELT_LIMIT_TENSOR_ELEMS)
        return op_errf(ctx, node, SMELT_ERR_LIMIT,
                       "range of %.0f elements exceeds the limit of %lld",
                       n, (long long)SMELT_LIMIT_TENSOR_ELEMS);
    *len = n > 0 ? (int64_t)n : 0;
    return SMELT_OK;
}

static smelt_status range_infer(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(range_check_inputs(ctx, node, in));
    out[0].dtype = in[0]->dtype;
    out[0].rank = 1;
    out[0].dims[0] = GR_DIM_UNKNOWN;
    if (in[0]->data && in[1]->data && in[2]->data)
        SMELT_TRY(range_length(ctx, node, in, &out[0].dims[0]));
    return SMELT_OK;
}

static smelt_status range_eval(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    int64_t n = op_numel(&out[0]);
    if (op_dtype_is_float(in[0]->dtype)) {
        double s = op_get_f64(in[0], 0), d = op_get_f64(in[2], 0);
        if (range_work_dtype(node, in[0]->dtype) == SMELT_DT_FLOAT32)
            for (int64_t i = 0; i < n; i++)
                op_set_f64(&out[0], i, (float)((float)s + (float)i * (float)d));
        else
            for (int64_t i = 0; i < n; i++) op_set_f64(&out[0], i, s + (double)i * d);
    } else {
        uint64_t s = (uint64_t)op_get_i64(in[0], 0), d = (uint64_t)op_get_i64(in[2], 0);
        for (int64_t i = 0; i < n; i++) op_set_i64(&out[0], i, (int64_t)(s + (uint64_t)i * d));
    }
    return SMELT_OK;
}

typedef struct range_inputs {
    const te_tensor *start, *delta;
    smelt_dtype work; /* of floats */
} range_inputs;

static ir_expr *read_scalar(te_graph *g, const te_tensor *t)
{
    ir_expr *zero = ir_int(&g->b, 0);
    return te_read(g, t, &zero); /* rank 0, or one element */
}

/* start + i * delta, reading start and delta (constants or not).  Floats
 * are computed in float64 (16-bit floats: in stash_type) and rounded to
 * the output once, as the reference does; integers wrap in their dtype. */
static ir_expr *range_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const range_inputs *r = user;
    ir_builder *b = &g->b;
    smelt_dtype dt = r->start->buf->dtype;
    smelt_dtype wide = op_dtype_is_float(dt) ? r->work : dt;
    ir_expr *start = ir_cast(b, wide, read_scalar(g, r->start));
    ir_expr *delta = ir_cast(b, wide, read_scalar(g, r->delta));
    return ir_add(b, start, ir_mul(b, ir_cast(b, wide, idx[0]), delta));
}

static smelt_status range_compute(op_compute_args *a)
{
    range_inputs r = {a->in[0], a->in[2], range_work_dtype(a->node, a->in[0]->buf->dtype)};
    return compute_output(a, range_body, &r);
}

const op_def op_def_RANGE = {
    .compute = range_compute, .import = range_import,
    .infer = range_infer, .eval = range_eval, .min_inputs = 3,
    .max_inputs = 3,      .min_outputs = 1,   .max_outputs = 1,
};
