/* Indexing and data movement: Slice, Gather, GatherElements, ScatterND, Pad,
 * Trilu, NonZero, OneHot, DepthToSpace, SpaceToDepth, EyeLike, ReverseSequence,
 * GatherND, ScatterElements.
 *
 * The kernels move elements as raw bytes (smelt_dtype_size each), so every
 * fixed-size dtype works the same way; only ScatterND's reductions and
 * NonZero's test look at values.  The compute definitions (compiled path)
 * are index maps: plain loads, exact for every dtype.
 */
#include <string.h>

#include "ops/data.h"
#include "ops/op.h"
#include "te/te.h"

static const smelt_dtype k_index_dtypes[] = {SMELT_DT_INT32, SMELT_DT_INT64, SMELT_DT_UNDEFINED};

/* ---- shared helpers ------------------------------------------------------------ */

static const char *input_name(const gr_node *n, int i)
{
    return i < n->n_inputs && n->inputs[i] ? n->inputs[i]->name : "?";
}

/* Byte-copying kernels need a fixed element size (no strings). */
static smelt_status check_movable(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                                  int index)
{
    if (smelt_dtype_size(t->dtype) == 0)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "input '%s' has unsupported dtype %s",
                       input_name(n, index), smelt_dtype_name(t->dtype));
    return SMELT_OK;
}

static smelt_status require_input(smelt_ctx *ctx, const gr_node *n,
                                  const smelt_tensor *const *in, int i, const char *what,
                                  const smelt_tensor **out)
{
    *out = op_input(n, in, i);
    if (!*out)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d (%s) is required", i, what);
    return SMELT_OK;
}

/* Wrap a possibly negative index into [0, dim); false when out of range. */
static bool wrap_index(int64_t idx, int64_t dim, int64_t *out)
{
    if (idx < 0) idx += dim; /* idx >= INT64_MIN and dim >= 0: no overflow */
    if (idx < 0 || idx >= dim) return false;
    *out = idx;
    return true;
}

static int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int64_t product(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= dims[i];
    return p;
}

/* dst[o] = src[base + sum_d idx_d * stride_d] over every multi-index of dims
 * (row-major o).  Rows whose innermost stride is 1 are copied in one go. */
static void strided_copy(char *dst, const char *src, size_t esz, int rank,
                         const int64_t *dims, int64_t base, const int64_t *stride)
{
    if (product(dims, 0, rank) == 0) return;
    if (rank == 0) {
        memcpy(dst, src + base * (int64_t)esz, esz);
        return;
    }
    int64_t idx[SMELT_MAX_RANK] = {0};
    int64_t row = dims[rank - 1], last = stride[rank - 1];
    do {
        int64_t off = base;
        for (int d = 0; d < rank - 1; d++) off += idx[d] * stride[d];
        if (last == 1) {
            memcpy(dst, src + off * (int64_t)esz, (size_t)row * esz);
        } else {
            for (int64_t j = 0; j < row; j++)
                memcpy(dst + j * (int64_t)esz, src + (off + j * last) * (int64_t)esz, esz);
        }
        dst += row * (int64_t)esz;
    } while (op_next_index(idx, dims, rank - 1));
}

/* A small element buffer big enough and aligned for any fixed-size dtype. */
typedef union elem_buf {
    double d;
    int64_t i;
    unsigned char bytes[16];
} elem_buf;

/* Element 0 of `src` converted to `dtype`, exactly when the dtypes agree. */
static void convert_scalar(const smelt_tensor *src, smelt_dtype dtype, elem_buf *buf)
{
    memset(buf, 0, sizeof *buf);
    if (src->dtype == dtype) {
        memcpy(buf->bytes, src->data, smelt_dtype_size(dtype));
        return;
    }
    smelt_tensor tmp = {.dtype = dtype, .rank = 0, .data = buf->bytes};
    if (op_dtype_is_float(src->dtype) || op_dtype_is_float(dtype))
        op_set_f64(&tmp, 0, op_get_f64(src, 0));
    else
        op_set_i64(&tmp, 0, op_get_i64(src, 0));
}

/* Whether element i of t is non-zero (-0.0 counts as zero, NaN as non-zero). */
static bool elem_is_nonzero(const smelt_tensor *t, int64_t i)
{
    if (op_dtype_is_float(t->dtype)) return op_get_f64(t, i) != 0.0;
    size_t esz = smelt_dtype_size(t->dtype);
    const unsigned char *p = (const unsigned char *)t->data + (size_t)i * esz;
    for (size_t b = 0; b < esz; b++)
        if (p[b]) return true;
    return false;
}

static smelt_status import_axis(smelt_ctx *ctx, gr_graph *g, gr_node *node, int64_t def)
{
    op_axis_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    return op_attr_int(ctx, node, "axis", def, &a->axis);
}

static int64_t attr_axis(const gr_node *node, int64_t def)
{
    const op_axis_attrs *a = node->op_attrs;
    return a ? a->axis : def;
}

/* ---- compute helpers (tensor expressions) ------------------------------------------
 * Index maps for the compiled path.  Parameters that only move indices
 * (Slice's starts, Pad's pads, Trilu's k) fold to immediates when they are
 * compile-time constants and are otherwise loaded at run time: the output
 * shape is static either way.  Every computed source index either stays in
 * range by construction or is clamped / guarded, so generated code never
 * reads outside a tensor. */

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
    return product(t->buf->shape, 0, t->buf->rank);
}

/* The node's inputs as the plan functions take them: constants with their
 * contents, the others as types without data. */
static void compute_inputs(const op_compute_args *a, smelt_tensor *types,
                           const smelt_tensor **tin, int max)
{
    for (int i = 0; i < max; i++) {
        tin[i] = NULL;
        if (i >= a->node->n_inputs || !a->in[i]) continue;
        if (a->in_const[i]) {
            tin[i] = a->in_const[i];
            continue;
        }
        types[i] = placeholder_type(a->in[i]);
        tin[i] = &types[i];
    }
}

/* Input i's placeholder and constant contents; NULL when omitted / not constant. */
static const te_tensor *in_at(const op_compute_args *a, int i)
{
    return i < a->node->n_inputs ? a->in[i] : NULL;
}

static const smelt_tensor *const_at(const op_compute_args *a, int i)
{
    return i < a->node->n_inputs ? a->in_const[i] : NULL;
}

/* Omitted inputs count as known. */
static bool input_is_const(const op_compute_args *a, int i)
{
    return !in_at(a, i) || const_at(a, i);
}

static ir_expr *zero_of(ir_builder *b, smelt_dtype dt)
{
    return op_dtype_is_float(dt) ? ir_const_float(b, dt, 0.0) : ir_const_int(b, dt, 0);
}

static ir_expr *clamp_expr(ir_builder *b, ir_expr *v, int64_t lo, int64_t hi)
{
    return ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, v, ir_int(b, lo)), ir_int(b, hi));
}

/* v < 0 ? v + dim : v (no overflow: v < 0 and dim >= 0). */
static ir_expr *wrap_expr(ir_builder *b, ir_expr *v, int64_t dim)
{
    return ir_select(b, ir_binary(b, IR_LT, v, ir_int(b, 0)), ir_add(b, v, ir_int(b, dim)), v);
}

/* Element `flat` (row-major) of t, loaded. */
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

/* Element j of an integer parameter as int64: an immediate when constant. */
static ir_expr *int_param(te_graph *g, const te_tensor *t, const smelt_tensor *c, int64_t j)
{
    if (c) return ir_int(&g->b, op_get_i64(c, j));
    return ir_cast(&g->b, SMELT_DT_INT64, read_flat(g, t, j));
}

/* A per-axis parameter list (Slice's starts and steps, Pad's pads): entry j
 * applies to data axis axes[j], or to axis j when there is no axes input. */
typedef struct axis_params {
    const te_tensor *axes;       /* NULL: entry j is axis j */
    const smelt_tensor *axes_c;  /* its contents when constant */
    int n;                       /* number of entries */
    int rank;                    /* data rank, for negative axes */
} axis_params;

/* Whether entry j applies to axis d: a BOOL immediate when known. */
static ir_expr *entry_is_axis(te_graph *g, const axis_params *p, int j, int d)
{
    ir_builder *b = &g->b;
    if (!p->axes) return ir_const_int(b, SMELT_DT_BOOL, j == d);
    if (p->axes_c) {
        int64_t ax = op_get_i64(p->axes_c, j);
        return ir_const_int(b, SMELT_DT_BOOL, (ax < 0 ? ax + p->rank : ax) == d);
    }
    ir_expr *ax = wrap_expr(b, int_param(g, p->axes, NULL, j), p->rank);
    return ir_binary(b, IR_EQ, ax, ir_int(b, d));
}

/* vals[offset + j] of the entry j that applies to axis d, else def. */
static ir_expr *axis_param(te_graph *g, const axis_params *p, const te_tensor *vals,
                           const smelt_tensor *vals_c, int offset, int d, ir_expr *def)
{
    ir_expr *v = def;
    for (int j = 0; j < p->n; j++) {
        ir_expr *hit = entry_is_axis(g, p, j, d);
        if (!hit) return NULL;
        ir_expr *val = int_param(g, vals, vals_c, offset + j);
        if (hit->kind == IR_INT)
            v = hit->i ? val : v;
        else
            v = ir_select(&g->b, hit, val, v);
    }
    return v;
}

static ir_expr *zero_body(te_graph *g, ir_expr *const *idx, void *user)
{
    (void)idx;
    return zero_of(&g->b, *(const smelt_dtype *)user);
}

/* An output without elements reads nothing; no index map is built (it could
 * divide by an empty axis). */
static smelt_status empty_compute(op_compute_args *a)
{
    const smelt_tensor *o = &a->out_type[0];
    smelt_dtype dt = o->dtype;
    te_tensor *y = te_compute(a->te, "y", dt, o->rank, o->dims, zero_body, &dt, "injective");
    return compute_done(a, y);
}

static bool output_is_empty(const op_compute_args *a)
{
    return op_numel(&a->out_type[0]) == 0;
}

/* ---- Slice ------------------------------------------------------------------------ */

/* Per data dim: first element, step and element count of the slice.
 * count is GR_DIM_UNKNOWN (or a symbol) when it cannot be known yet. */
typedef struct slice_plan {
    int64_t start[SMELT_MAX_RANK], step[SMELT_MAX_RANK], count[SMELT_MAX_RANK];
} slice_plan;

OP_ATTRS(SLICE) = {{"starts", 0, 9}, {"ends", 0, 9}, {"axes", 0, 9}, {NULL, 0, 0}};

static smelt_status slice_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    if (g->opset >= 10) return SMELT_OK;
    static const char *const names[] = {"starts", "ends", "axes"};
    for (int k = 0; k < 3; k++) {
        int count;
        const int64_t *vals;
        SMELT_TRY(op_attr_ints(ctx, node, names[k], &count, &vals));
        if (count < 0) {
            if (k == 2) break;
            return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute '%s' is required",
                           names[k]);
        }
        SMELT_TRY(op_set_input_ints(ctx, g, node, k + 1, vals, count));
    }
    return SMELT_OK;
}

/* Clamp start/end per the ONNX rules and count the selected elements. */
static void slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step,
                       int64_t *first, int64_t *count)
{
    if (dim == 0) { /* nothing to select (the negative-step clamp below needs dim > 0) */
        *first = 0;
        *count = 0;
        return;
    }
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
        start = clamp_i64(start, 0, dim);
        end = clamp_i64(end, 0, dim);
        *count = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
        start = clamp_i64(start, 0, dim - 1);
        end = clamp_i64(end, -1, dim - 1);
        uint64_t mag = (uint64_t)0 - (uint64_t)step; /* |step|, defined for INT64_MIN */
        *count = start > end ? (int64_t)((uint64_t)(start - end - 1) / mag) + 1 : 0;
    }
    *first = start;
}

/* Dims touched by the slice when its parameters are not known yet. */
static void slice_mark_unknown(const smelt_tensor *x, const smelt_tensor *starts,
                               const smelt_tensor *axes, slice_plan *p)
{
    int64_t ax[SMELT_MAX_RANK];
    int n = 0;
    if (axes && axes->data && op_numel(axes) <= SMELT_MAX_RANK) {
        n = (int)op_numel(axes);
        for (int i = 0; i < n; i++) ax[i] = op_get_i64(axes, i);
    } else if (!axes && starts->rank == 1 && starts->dims[0] >= 0 &&
               starts->dims[0] <= x->rank) {
        n = (int)starts->dims[0];
        for (int i = 0; i < n; i++) ax[i] = i;
    } else {
        n = x->rank;
        for (int i = 0; i < n; i++) ax[i] = i;
    }
    for (int i = 0; i < n; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + x->rank : ax[i];
        if (a >= 0 && a < x->rank) p->count[a] = GR_DIM_UNKNOWN;
    }
}

static smelt_status slice_read(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *t,
                               const char *what, int n_expected, int64_t *vals)
{
    int count;
    SMELT_TRY(op_check_dtype(ctx, node, t, what, k_index_dtypes));
    SMELT_TRY(op_read_ints(ctx, node, t, what, vals, SMELT_MAX_RANK, &count));
    if (count != n_expected)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "%s has %d values, expected %d (one per "
                       "entry of 'starts')", what, count, n_expected);
    return SMELT_OK;
}

/* Parameters known only at run time: what can be checked now must be, as
 * the compiled code indexes them by entry of 'starts' (fuzz_pipeline found
 * constant axes shorter than non-constant starts). */
static smelt_status slice_check_runtime(smelt_ctx *ctx, const gr_node *node,
                                        const smelt_tensor *x, const smelt_tensor *const *in)
{
    static const char *const what[5] = {"", "starts", "ends", "axes", "steps"};
    const smelt_tensor *starts = in[1];
    for (int i = 1; i <= 4; i++) {
        const smelt_tensor *t = op_input(node, in, i);
        if (!t) continue;
        if (t->rank != 1)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' must be 1-D, not rank %d",
                           what[i], t->rank);
        if (t->dims[0] >= 0 && starts->dims[0] >= 0 && t->dims[0] != starts->dims[0])
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' has %lld values, expected "
                           "%lld (one per entry of 'starts')", what[i],
                           (long long)t->dims[0], (long long)starts->dims[0]);
    }
    if (starts->dims[0] > x->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input 'starts' has %lld values for an input "
                       "of rank %d", (long long)starts->dims[0], x->rank);
    const smelt_tensor *axes = op_input(node, in, 3);
    bool seen[SMELT_MAX_RANK] = {false};
    for (int64_t i = 0; axes && axes->data && i < op_numel(axes); i++) {
        int a;
        SMELT_TRY(op_norm_axis(ctx, node, op_get_i64(axes, i), x->rank, &a));
        if (seen[a]) return op_errf(ctx, node, SMELT_ERR_ATTR, "axis %d is sliced twice", a);
        seen[a] = true;
    }
    return SMELT_OK;
}

static smelt_status slice_plan_make(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, slice_plan *p)
{
    const smelt_tensor *x = in[0], *starts, *ends;
    SMELT_TRY(require_input(ctx, node, in, 1, "starts", &starts));
    SMELT_TRY(require_input(ctx, node, in, 2, "ends", &ends));
    const smelt_tensor *axes = op_input(node, in, 3), *steps = op_input(node, in, 4);
    for (int d = 0; d < x->rank; d++) {
        p->start[d] = 0;
        p->step[d] = 1;
        p->count[d] = x->dims[d];
    }
    if (!starts->data || !ends->data || (axes && !axes->data) || (steps && !steps->data)) {
        SMELT_TRY(slice_check_runtime(ctx, node, x, in));
        slice_mark_unknown(x, starts, axes, p);
        return SMELT_OK;
    }
    int64_t st[SMELT_MAX_RANK], en[SMELT_MAX_RANK], ax[SMELT_MAX_RANK], sp[SMELT_MAX_RANK];
    int n;
    SMELT_TRY(op_check_dtype(ctx, node, starts, "input 'starts'", k_index_dtypes));
    SMELT_TRY(op_read_ints(ctx, node, starts, "input 'starts'", st, SMELT_MAX_RANK, &n));
    SMELT_TRY(slice_read(ctx, node, ends, "input 'ends'", n, en));
    if (axes) SMELT_TRY(slice_read(ctx, node, axes, "input 'axes'", n, ax));
    if (steps) SMELT_TRY(slice_read(ctx, node, steps, "input 'steps'", n, sp));
    bool seen[SMELT_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        int a;
        SMELT_TRY(op_norm_axis(ctx, node, axes ? ax[i] : i, x->rank, &a));
        if (seen[a])
            return op_errf(ctx, node, SMELT_ERR_ATTR, "axis %d is sliced twice", a);
        seen[a] = true;
        int64_t step = steps ? sp[i] : 1;
        if (step == 0) return op_errf(ctx, node, SMELT_ERR_ATTR, "step of axis %d is 0", a);
        p->step[a] = step;
        int64_t dim = x->dims[a];
        if (dim >= 0) {
            slice_axis(dim, st[i], en[i], step, &p->start[a], &p->count[a]);
        } else {
            /* symbolic dim: only the whole-axis slice keeps its symbol */
            bool whole = st[i] == 0 && step == 1 && en[i] >= INT32_MAX;
            p->count[a] = whole ? dim : GR_DIM_UNKNOWN;
        }
    }
    return SMELT_OK;
}

static smelt_status slice_infer(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    slice_plan p;
    SMELT_TRY(check_movable(ctx, node, in[0], 0));
    if (in[0]->rank < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' is a scalar; it cannot be sliced",
                       input_name(node, 0));
    SMELT_TRY(slice_plan_make(ctx, node, in, &p));
    op_copy_shape(&out[0], in[0]);
    for (int d = 0; d < in[0]->rank; d++) out[0].dims[d] = p.count[d];
    return SMELT_OK;
}

static smelt_status slice_eval(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    slice_plan p;
    SMELT_TRY(slice_plan_make(ctx, node, in, &p));
    int64_t xs[SMELT_MAX_RANK], stride[SMELT_MAX_RANK], base = 0;
    op_strides(x, xs);
    for (int d = 0; d < x->rank; d++) {
        base += p.start[d] * xs[d];
        /* one element or none along d: its step never applies (and a huge
         * step would overflow) */
        stride[d] = p.count[d] > 1 ? p.step[d] * xs[d] : 0;
    }
    strided_copy(out[0].data, x->data, smelt_dtype_size(x->dtype), x->rank, out[0].dims, base,
                 stride);
    return SMELT_OK;
}

/* Source index on each axis: first + i * step. */
typedef struct slice_te {
    const te_tensor *x;
    ir_expr *first[SMELT_MAX_RANK], *step[SMELT_MAX_RANK];
    bool clamp; /* run-time parameters: keep the index in range whatever they are */
} slice_te;

static ir_expr *slice_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const slice_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *src[SMELT_MAX_RANK];
    for (int d = 0; d < s->x->n_axes; d++) {
        bool unit = ir_is_int(s->first[d], 0) && ir_is_int(s->step[d], 1);
        src[d] = unit ? idx[d] : ir_add(b, s->first[d], ir_mul(b, idx[d], s->step[d]));
        if (s->clamp) src[d] = clamp_expr(b, src[d], 0, s->x->buf->shape[d] - 1);
    }
    return te_read(g, s->x, src);
}

/* The ONNX start clamping, evaluated at run time. */
static ir_expr *slice_runtime_first(ir_builder *b, ir_expr *start, ir_expr *step, int64_t dim)
{
    ir_expr *s = wrap_expr(b, start, dim);
    ir_expr *forward = clamp_expr(b, s, 0, dim), *backward = clamp_expr(b, s, 0, dim - 1);
    return ir_select(b, ir_binary(b, IR_GT, step, ir_int(b, 0)), forward, backward);
}

static void slice_runtime(op_compute_args *a, slice_te *s)
{
    te_graph *g = a->te;
    const te_tensor *starts = in_at(a, 1), *axes = in_at(a, 3), *steps = in_at(a, 4);
    axis_params p = {axes, const_at(a, 3), (int)placeholder_numel(starts), s->x->n_axes};
    for (int d = 0; d < s->x->n_axes; d++) {
        ir_expr *start = axis_param(g, &p, starts, const_at(a, 1), 0, d, ir_int(&g->b, 0));
        ir_expr *step = steps ? axis_param(g, &p, steps, const_at(a, 4), 0, d, ir_int(&g->b, 1))
                              : ir_int(&g->b, 1);
        s->step[d] = step;
        s->first[d] = slice_runtime_first(&g->b, start, step, s->x->buf->shape[d]);
    }
    s->clamp = true;
}

static smelt_status slice_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    slice_te s = {.x = a->in[0]};
    const smelt_tensor *o = &a->out_type[0];
    if (input_is_const(a, 1) && input_is_const(a, 2) && input_is_const(a, 3) &&
        input_is_const(a, 4)) {
        smelt_tensor types[5];
        const smelt_tensor *tin[5];
        slice_plan p;
        compute_inputs(a, types, tin, 5);
        SMELT_TRY(slice_plan_make(a->ctx, a->node, tin, &p));
        for (int d = 0; d < s.x->n_axes; d++) {
            s.first[d] = ir_int(&a->te->b, p.start[d]);
            s.step[d] = ir_int(&a->te->b, p.step[d]);
        }
    } else {
        slice_runtime(a, &s);
    }
    te_tensor *y = te_compute(a->te, "y", o->dtype, o->rank, o->dims, slice_body, &s, "injective");
    return compute_done(a, y);
}

const op_def op_def_SLICE = {
    .compute = slice_compute,
    .import = slice_import, .infer = slice_infer, .eval = slice_eval,
    .min_inputs = 1, .max_inputs = 5, .min_outputs = 1, .max_outputs = 1,
};

/* ---- Gather ----------------------------------------------------------------------- */

OP_ATTRS(GATHER) = {{"axis", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(GATHER_ELEMENTS) = {{"axis", 0, 0}, {NULL, 0, 0}};

static smelt_status gather_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    return import_axis(ctx, g, node, 0);
}

static smelt_status gather_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1];
    int axis;
    SMELT_TRY(check_movable(ctx, node, x, 0));
    SMELT_TRY(op_check_dtype(ctx, node, ind, "input 'indices'", k_index_dtypes));
    if (x->rank < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' must have rank >= 1",
                       input_name(node, 0));
    SMELT_TRY(op_norm_axis(ctx, node, attr_axis(node, 0), x->rank, &axis));
    int rank = x->rank - 1 + ind->rank;
    if (rank > SMELT_MAX_RANK)
        return op_errf(ctx, node, SMELT_ERR_LIMIT, "output rank %d exceeds the maximum %d",
                       rank, SMELT_MAX_RANK);
    out[0].dtype = x->dtype;
    out[0].rank = rank;
    int k = 0;
    for (int d = 0; d < axis; d++) out[0].dims[k++] = x->dims[d];
    for (int d = 0; d < ind->rank; d++) out[0].dims[k++] = ind->dims[d];
    for (int d = axis + 1; d < x->rank; d++) out[0].dims[k++] = x->dims[d];
    return SMELT_OK;
}

static smelt_status gather_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1];
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, attr_axis(node, 0), x->rank, &axis));
    size_t esz = smelt_dtype_size(x->dtype);
    int64_t outer = product(x->dims, 0, axis), dim = x->dims[axis];
    int64_t inner = product(x->dims, axis + 1, x->rank), n_idx = op_numel(ind);
    size_t row = (size_t)inner * esz;
    const char *src = x->data;
    char *dst = out[0].data;
    for (int64_t i = 0; i < n_idx; i++) {
        int64_t raw = op_get_i64(ind, i), k;
        if (!wrap_index(raw, dim, &k))
            return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                           "index %lld at position %lld is out of range for axis %d of size "
                           "%lld", (long long)raw, (long long)i, axis, (long long)dim);
        for (int64_t o = 0; o < outer && row > 0; o++)
            memcpy(dst + (size_t)(o * n_idx + i) * row, src + (size_t)(o * dim + k) * row,
                   row);
    }
    return SMELT_OK;
}

typedef struct gather_te {
    const te_tensor *x, *ind;
    int axis;
} gather_te;

/* The data index an index value selects.  The reference rejects an
 * out-of-range index at run time; compiled code reports it through a check
 * stage (index_check) and still clamps here, so no read can leave the tensor
 * and the gather's own loops stay free of branches. */
static ir_expr *gather_source(ir_builder *b, ir_expr *raw, int64_t dim)
{
    return clamp_expr(b, wrap_expr(b, ir_cast(b, SMELT_DT_INT64, raw), dim), 0, dim - 1);
}

static ir_expr *gather_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gather_te *s = user;
    int q = s->ind->n_axes, r = s->x->n_axes, axis = s->axis;
    ir_expr *ii[SMELT_MAX_RANK], *xi[SMELT_MAX_RANK];
    for (int k = 0; k < q; k++) ii[k] = idx[axis + k];
    for (int d = 0; d < axis; d++) xi[d] = idx[d];
    xi[axis] = gather_source(&g->b, te_read(g, s->ind, ii), s->x->buf->shape[axis]);
    for (int d = axis + 1; d < r; d++) xi[d] = idx[d + q - 1];
    return te_read(g, s->x, xi);
}

static ir_expr *gather_elements_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gather_te *s = user;
    ir_expr *xi[SMELT_MAX_RANK];
    for (int d = 0; d < s->x->n_axes; d++) xi[d] = idx[d];
    xi[s->axis] = gather_source(&g->b, te_read(g, s->ind, idx), s->x->buf->shape[s->axis]);
    return te_read(g, s->x, xi);
}

/* ---- run-time index checks ----------------------------------------------------------
 * One check stage per index tensor (per component for ScatterND): a serial
 * pass over the indices, reporting the first one outside [-dim, dim) with the
 * reference kernel's message.  Constant indices all in range need none. */
typedef struct index_check {
    const te_tensor *ind;
    int component; /* ScatterND: the index tuple's entry, else -1 */
} index_check;

static ir_expr *index_check_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const index_check *c = user;
    ir_expr *ii[SMELT_MAX_RANK];
    int n = c->ind->n_axes;
    for (int d = 0; d < n; d++) ii[d] = d < n - 1 || c->component < 0 ? idx[d] : NULL;
    if (c->component >= 0) ii[n - 1] = ir_int(&g->b, c->component);
    return ir_cast(&g->b, SMELT_DT_INT64, te_read(g, c->ind, ii));
}

static bool const_indices_in_range(const smelt_tensor *ind, int component, int64_t dim)
{
    int64_t n = op_numel(ind), k = component >= 0 ? ind->dims[ind->rank - 1] : 1;
    for (int64_t i = component >= 0 ? component : 0; i < n; i += k) {
        int64_t w;
        if (!wrap_index(op_get_i64(ind, i), dim, &w)) return false;
    }
    return true;
}

static smelt_status add_index_check(op_compute_args *a, int component, int64_t dim,
                                    const char *message)
{
    const te_tensor *ind = a->in[1];
    const smelt_tensor *c = const_at(a, 1);
    if (c && const_indices_in_range(c, component, dim)) return SMELT_OK;
    ir_builder *b = &a->te->b;
    ir_var *v = ir_var_new(b, "v", SMELT_DT_INT64);
    ir_expr *vr = ir_var_ref(b, v);
    ir_expr *ok = ir_binary(b, IR_AND, ir_binary(b, IR_GE, vr, ir_int(b, -dim)),
                            ir_binary(b, IR_LT, vr, ir_int(b, dim)));
    index_check ic = {.ind = ind, .component = component};
    int rank = component >= 0 ? ind->n_axes - 1 : ind->n_axes;
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type, .message = message};
    char name[32];
    if (component >= 0) snprintf(name, sizeof name, "check%d", component);
    else snprintf(name, sizeof name, "check");
    te_tensor *t = te_check_compute(a->te, name, rank, ind->buf->shape, index_check_body, &ic,
                                    v, ok, &site);
    return t ? SMELT_OK : compute_done(a, NULL);
}

static smelt_status gather_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    gather_te s = {.x = a->in[0], .ind = a->in[1]};
    SMELT_TRY(op_norm_axis(a->ctx, a->node, attr_axis(a->node, 0), s.x->n_axes, &s.axis));
    if (s.x->buf->shape[s.axis] == 0)
        return op_errf(a->ctx, a->node, SMELT_ERR_SHAPE,
                       "cannot gather from axis %d of size 0", s.axis);
    char msg[160];
    int64_t dim = s.x->buf->shape[s.axis];
    snprintf(msg, sizeof msg, "index {value} at position {position} is out of range for axis %d "
             "of size %lld", s.axis, (long long)dim);
    SMELT_TRY(add_index_check(a, -1, dim, msg));
    const smelt_tensor *o = &a->out_type[0];
    te_body_fn body = a->node->op == OP_GATHER ? gather_body : gather_elements_body;
    te_tensor *y = te_compute(a->te, "y", o->dtype, o->rank, o->dims, body, &s, "injective");
    return compute_done(a, y);
}

const op_def op_def_GATHER = {
    .compute = gather_compute,
    .import = gather_import, .infer = gather_infer, .eval = gather_eval,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
};

/* ---- ArrayFeatureExtractor (ai.onnx.ml 1) -------------------------------------------
 * Z[..., j] = X[..., Y.flat[j]]: a gather along X's last axis by the flattened indices;
 * a 1-D X gives [1, n].  Indices wrap from the back as onnx's reference (numpy) does,
 * others are refused as Gather refuses them. */

static const smelt_dtype k_afe_dtypes[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_INT64,
                                           SMELT_DT_INT32, SMELT_DT_UNDEFINED};
static const smelt_dtype k_afe_index_dtypes[] = {SMELT_DT_INT64, SMELT_DT_UNDEFINED};

static smelt_status afe_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1];
    SMELT_TRY(op_check_dtype(ctx, node, x, "input 'X'", k_afe_dtypes));
    SMELT_TRY(op_check_dtype(ctx, node, ind, "input 'Y'", k_afe_index_dtypes));
    if (x->rank < 1) return op_errf(ctx, node, SMELT_ERR_SHAPE, "input 'X' is a scalar");
    int64_t n = 1;
    for (int d = 0; d < ind->rank; d++)
        n = GR_DIM_IS_STATIC(ind->dims[d]) && GR_DIM_IS_STATIC(n) ? n * ind->dims[d]
                                                                  : GR_DIM_UNKNOWN;
    out[0].dtype = x->dtype;
    out[0].rank = x->rank == 1 ? 2 : x->rank;
    for (int d = 0; d < x->rank - 1; d++) out[0].dims[d] = x->dims[d];
    if (x->rank == 1) out[0].dims[0] = 1;
    out[0].dims[out[0].rank - 1] = n;
    return SMELT_OK;
}

static smelt_status afe_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1];
    int axis = x->rank - 1;
    int64_t len = x->dims[axis], rows = product(x->dims, 0, axis), n = op_numel(ind);
    size_t esz = smelt_dtype_size(x->dtype);
    for (int64_t j = 0; j < n; j++) {
        int64_t raw = op_get_i64(ind, j), k;
        if (!wrap_index(raw, len, &k))
            return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                           "index %lld at position %lld is out of range for axis %d of size "
                           "%lld", (long long)raw, (long long)j, axis, (long long)len);
        for (int64_t r = 0; r < rows; r++)
            memcpy((char *)out[0].data + (size_t)(r * n + j) * esz,
                   (const char *)x->data + (size_t)(r * len + k) * esz, esz);
    }
    return SMELT_OK;
}

/* Output element [rows..., j]: X at [rows..., source of Y.flat[j]]. */
static ir_expr *afe_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gather_te *s = user;
    ir_builder *b = &g->b;
    int r = s->x->n_axes, q = s->ind->n_axes, out_last = r == 1 ? 1 : r - 1;
    ir_expr *yi[SMELT_MAX_RANK], *xi[SMELT_MAX_RANK], *j = idx[out_last];
    for (int d = q - 1; d >= 0; d--) { /* Y's multi-index of the flat position j */
        ir_expr *dim = ir_int(b, s->ind->buf->shape[d]);
        yi[d] = d ? ir_binary(b, IR_MOD, j, dim) : j;
        if (d) j = ir_binary(b, IR_DIV, j, dim);
    }
    for (int d = 0; d < r - 1; d++) xi[d] = idx[d];
    xi[r - 1] = gather_source(b, te_read(g, s->ind, yi), s->x->buf->shape[r - 1]);
    return te_read(g, s->x, xi);
}

static smelt_status afe_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    gather_te s = {.x = a->in[0], .ind = a->in[1], .axis = a->in[0]->n_axes - 1};
    int64_t dim = s.x->buf->shape[s.axis];
    if (dim == 0)
        return op_errf(a->ctx, a->node, SMELT_ERR_SHAPE, "cannot gather from axis %d of size 0",
                       s.axis);
    char msg[160];
    snprintf(msg, sizeof msg, "index {value} at position {position} is out of range for axis %d "
             "of size %lld", s.axis, (long long)dim);
    SMELT_TRY(add_index_check(a, -1, dim, msg));
    const smelt_tensor *o = &a->out_type[0];
    return compute_done(a, te_compute(a->te, "z", o->dtype, o->rank, o->dims, afe_body, &s,
                                      "injective"));
}

const op_def op_def_ML_ARRAY_FEATURE_EXTRACTOR = {
    .compute = afe_compute, .infer = afe_infer, .eval = afe_eval,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
};

/* ---- GatherElements ----------------------------------------------------------------- */

static smelt_status gather_elements_infer(smelt_ctx *ctx, const gr_node *node,
                                          const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1];
    int axis;
    SMELT_TRY(check_movable(ctx, node, x, 0));
    SMELT_TRY(op_check_dtype(ctx, node, ind, "input 'indices'", k_index_dtypes));
    if (x->rank < 1 || ind->rank != x->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "inputs 'data' and 'indices' must have the same rank >= 1, got %d and "
                       "%d", x->rank, ind->rank);
    SMELT_TRY(op_norm_axis(ctx, node, attr_axis(node, 0), x->rank, &axis));
    for (int d = 0; d < x->rank; d++) {
        if (d == axis || x->dims[d] < 0 || ind->dims[d] < 0) continue;
        if (ind->dims[d] > x->dims[d])
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "'indices' dim %d (%lld) is larger than 'data' dim %d (%lld)", d,
                           (long long)ind->dims[d], d, (long long)x->dims[d]);
    }
    op_copy_shape(&out[0], ind);
    out[0].dtype = x->dtype;
    return SMELT_OK;
}

static smelt_status gather_elements_eval(smelt_ctx *ctx, const gr_node *node,
                                         const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1];
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, attr_axis(node, 0), x->rank, &axis));
    int64_t n = op_numel(ind);
    if (n == 0) return SMELT_OK;
    size_t esz = smelt_dtype_size(x->dtype);
    int64_t xs[SMELT_MAX_RANK], idx[SMELT_MAX_RANK] = {0};
    op_strides(x, xs);
    for (int64_t i = 0; i < n; i++) {
        int64_t raw = op_get_i64(ind, i), k, off = 0;
        if (!wrap_index(raw, x->dims[axis], &k))
            return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                           "index %lld at position %lld is out of range for axis %d of size "
                           "%lld", (long long)raw, (long long)i, axis, (long long)x->dims[axis]);
        for (int d = 0; d < x->rank; d++) off += (d == axis ? k : idx[d]) * xs[d];
        memcpy((char *)out[0].data + (size_t)i * esz, (const char *)x->data + (size_t)off * esz,
               esz);
        op_next_index(idx, ind->dims, ind->rank);
    }
    return SMELT_OK;
}

const op_def op_def_GATHER_ELEMENTS = {
    .compute = gather_compute,
    .import = gather_import, .infer = gather_elements_infer, .eval = gather_elements_eval,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
};

/* ---- ScatterND ---------------------------------------------------------------------- */

OP_ATTRS(SCATTER_ND) = {{"reduction", 16, 0}, {NULL, 0, 0}};

static smelt_status import_reduction(smelt_ctx *ctx, gr_node *node, op_scatter_reduction *out)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *s;
    SMELT_TRY(op_attr_string(ctx, node, "reduction", "none", &s));
    for (int i = 0; i < (int)SMELT_ARRAY_LEN(names); i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (op_scatter_reduction)i;
            return SMELT_OK;
        }
    }
    return op_errf(ctx, node, SMELT_ERR_ATTR,
                   "attribute 'reduction' is '%s', expected none, add, mul, max or min", s);
}

static smelt_status scatter_nd_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_scatter_nd_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    return import_reduction(ctx, node, &a->reduction);
}

static smelt_status scatter_nd_infer(smelt_ctx *ctx, const gr_node *node,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1], *upd = in[2];
    SMELT_TRY(check_movable(ctx, node, x, 0));
    SMELT_TRY(op_check_dtype(ctx, node, ind, "input 'indices'", k_index_dtypes));
    if (upd->dtype != x->dtype)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "'updates' has dtype %s but 'data' has %s",
                       smelt_dtype_name(upd->dtype), smelt_dtype_name(x->dtype));
    if (x->rank < 1 || ind->rank < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "'data' and 'indices' must have rank >= 1");
    int64_t k = ind->dims[ind->rank - 1];
    if (k >= 0 && k > x->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "last dim of 'indices' (%lld) exceeds the rank of 'data' (%d)",
                       (long long)k, x->rank);
    if (k >= 0) {
        int want = ind->rank - 1 + x->rank - (int)k;
        if (upd->rank != want)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "'updates' has rank %d, expected %d",
                           upd->rank, want);
        for (int d = 0; d < want; d++) {
            int64_t e = d < ind->rank - 1 ? ind->dims[d] : x->dims[k + d - (ind->rank - 1)];
            if (e >= 0 && upd->dims[d] >= 0 && e != upd->dims[d])
                return op_errf(ctx, node, SMELT_ERR_SHAPE,
                               "'updates' dim %d is %lld, expected %lld", d,
                               (long long)upd->dims[d], (long long)e);
        }
    }
    op_copy_shape(&out[0], x);
    return SMELT_OK;
}

/* Combine one element in place: dst = dst (op) src, in the tensor's dtype. */
static void scatter_combine(smelt_tensor *dst, int64_t di, const smelt_tensor *src, int64_t si,
                            op_scatter_reduction r)
{
    if (op_dtype_is_float(dst->dtype)) {
        double a = op_get_f64(dst, di), b = op_get_f64(src, si), v = a;
        if (r == OP_SCATTER_ADD) v = a + b;
        else if (r == OP_SCATTER_MUL) v = a * b;
        else if (r == OP_SCATTER_MAX) v = b > a ? b : a;
        else if (r == OP_SCATTER_MIN) v = b < a ? b : a;
        op_set_f64(dst, di, v);
        return;
    }
    int64_t a = op_get_i64(dst, di), b = op_get_i64(src, si), v = a;
    bool ua = dst->dtype == SMELT_DT_UINT64; /* compare as unsigned */
    if (r == OP_SCATTER_ADD) v = (int64_t)((uint64_t)a + (uint64_t)b);
    else if (r == OP_SCATTER_MUL) v = (int64_t)((uint64_t)a * (uint64_t)b);
    else if (r == OP_SCATTER_MAX) v = (ua ? (uint64_t)b > (uint64_t)a : b > a) ? b : a;
    else if (r == OP_SCATTER_MIN) v = (ua ? (uint64_t)b < (uint64_t)a : b < a) ? b : a;
    op_set_i64(dst, di, v);
}

static smelt_status scatter_nd_eval(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1], *upd = in[2];
    const op_scatter_nd_attrs *a = node->op_attrs;
    op_scatter_reduction red = a ? a->reduction : OP_SCATTER_NONE;
    size_t esz = smelt_dtype_size(x->dtype);
    if (op_numel(x) > 0) /* empty tensors may have NULL data */
        memcpy(out[0].data, x->data, (size_t)op_numel(x) * esz);
    int k = (int)ind->dims[ind->rank - 1];
    int64_t xs[SMELT_MAX_RANK];
    op_strides(x, xs);
    int64_t n_upd = product(ind->dims, 0, ind->rank - 1), slice = product(x->dims, k, x->rank);
    for (int64_t u = 0; u < n_upd; u++) {
        int64_t off = 0;
        for (int j = 0; j < k; j++) {
            int64_t raw = op_get_i64(ind, u * k + j), w;
            if (!wrap_index(raw, x->dims[j], &w))
                return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                               "index %lld (update %lld, component %d) is out of range for "
                               "'data' dim %d of size %lld", (long long)raw, (long long)u, j,
                               j, (long long)x->dims[j]);
            off += w * xs[j];
        }
        if (slice == 0) continue;
        if (red == OP_SCATTER_NONE) {
            memcpy((char *)out[0].data + (size_t)off * esz,
                   (const char *)upd->data + (size_t)(u * slice) * esz, (size_t)slice * esz);
            continue;
        }
        for (int64_t e = 0; e < slice; e++)
            scatter_combine(&out[0], off + e, upd, u * slice + e, red);
    }
    return SMELT_OK;
}

/* ScatterND as a gather: output element i takes the updates whose index
 * tuple equals i's first k indices.  No write position depends on data, so
 * nothing can land outside the output (an out-of-range index, a run-time
 * error in the reference, simply matches nothing).  The cost is a pass over
 * all updates per output row. */
typedef struct scatter_te {
    const te_tensor *x, *ind, *upd;
    const te_tensor *hits; /* per output row (none) or element (reductions) */
    int k;                 /* length of an index tuple */
    int nb;                /* batch dims of indices (its rank - 1) */
    op_scatter_reduction red;
    smelt_dtype acc_dt;    /* reductions: f16/bf16 combine in f32 */
} scatter_te;

static void scatter_batch_axes(te_graph *g, const scatter_te *s, ir_axis *u, ir_expr **uref)
{
    for (int j = 0; j < s->nb; j++) {
        char name[16];
        snprintf(name, sizeof name, "u%d", j);
        u[j] = te_reduce_axis(g, name, s->ind->buf->shape[j]);
        uref[j] = ir_var_ref(&g->b, u[j].var);
    }
}

/* Whether update u's index tuple addresses the row whose leading indices are idx. */
static ir_expr *scatter_match(te_graph *g, const scatter_te *s, ir_expr *const *u,
                              ir_expr *const *idx)
{
    ir_builder *b = &g->b;
    ir_expr *all = ir_const_int(b, SMELT_DT_BOOL, 1), *ii[SMELT_MAX_RANK];
    for (int j = 0; j < s->nb; j++) ii[j] = u[j];
    for (int j = 0; j < s->k; j++) {
        ii[s->nb] = ir_int(b, j);
        ir_expr *v = ir_cast(b, SMELT_DT_INT64, te_read(g, s->ind, ii));
        ir_expr *eq = ir_binary(b, IR_EQ, wrap_expr(b, v, s->x->buf->shape[j]), idx[j]);
        all = j == 0 ? eq : ir_binary(b, IR_AND, all, eq);
    }
    return all;
}

static ir_expr *scatter_reduce(te_graph *g, const scatter_te *s, ir_reduce_op op, ir_expr *src,
                               const ir_axis *u)
{
    return s->nb > 0 ? te_reduce(g, op, src, s->nb, u) : src;
}

/* reduction none: the flat batch index of the last update of the row, or -1
 * (later updates overwrite earlier ones, as in the reference). */
static ir_expr *scatter_last_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const scatter_te *s = user;
    ir_builder *b = &g->b;
    ir_axis u[SMELT_MAX_RANK];
    ir_expr *uref[SMELT_MAX_RANK], *flat = ir_int(b, 0);
    scatter_batch_axes(g, s, u, uref);
    for (int j = 0; j < s->nb; j++)
        flat = ir_add(b, ir_mul(b, flat, ir_int(b, s->ind->buf->shape[j])), uref[j]);
    ir_expr *src = ir_select(b, scatter_match(g, s, uref, idx), flat, ir_int(b, -1));
    return scatter_reduce(g, s, IR_REDUCE_MAX, src, u);
}

static ir_expr *scatter_replace_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const scatter_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *last = te_read(g, s->hits, idx), *ui[SMELT_MAX_RANK], *rest = last;
    for (int j = s->nb - 1; j > 0; j--) { /* unflatten the batch index */
        ir_expr *n = ir_int(b, s->ind->buf->shape[j]);
        ui[j] = ir_binary(b, IR_FLOORMOD, rest, n);
        rest = ir_binary(b, IR_FLOORDIV, rest, n);
    }
    if (s->nb > 0) ui[0] = rest;
    for (int d = s->k; d < s->x->n_axes; d++) ui[s->nb + d - s->k] = idx[d];
    /* the updates load runs only when last >= 0, i.e. is a valid update */
    return ir_select(b, ir_binary(b, IR_GE, last, ir_int(b, 0)), te_read(g, s->upd, ui),
                     te_read(g, s->x, idx));
}

static ir_reduce_op scatter_reduce_op(op_scatter_reduction r)
{
    switch (r) {
    case OP_SCATTER_MUL: return IR_REDUCE_PROD;
    case OP_SCATTER_MAX: return IR_REDUCE_MAX;
    case OP_SCATTER_MIN: return IR_REDUCE_MIN;
    default: return IR_REDUCE_SUM;
    }
}

/* reductions: all matching updates of an element combined (identity if none) */
static ir_expr *scatter_combined_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const scatter_te *s = user;
    ir_builder *b = &g->b;
    ir_axis u[SMELT_MAX_RANK];
    ir_expr *uref[SMELT_MAX_RANK], *ui[SMELT_MAX_RANK];
    scatter_batch_axes(g, s, u, uref);
    for (int j = 0; j < s->nb; j++) ui[j] = uref[j];
    for (int d = s->k; d < s->x->n_axes; d++) ui[s->nb + d - s->k] = idx[d];
    ir_reduce_op op = scatter_reduce_op(s->red);
    ir_expr *val = ir_cast(b, s->acc_dt, te_read(g, s->upd, ui));
    ir_expr *src = ir_select(b, scatter_match(g, s, uref, idx), val,
                             te_reduce_identity(g, op, s->acc_dt));
    return scatter_reduce(g, s, op, src, u);
}

static ir_expr *scatter_apply_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const scatter_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *x = ir_cast(b, s->acc_dt, te_read(g, s->x, idx)), *c = te_read(g, s->hits, idx);
    switch (s->red) {
    case OP_SCATTER_MUL: return ir_mul(b, x, c);
    case OP_SCATTER_MAX: return ir_binary(b, IR_MAX, x, c);
    case OP_SCATTER_MIN: return ir_binary(b, IR_MIN, x, c);
    default: return ir_add(b, x, c);
    }
}

static smelt_status scatter_nd_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    const op_scatter_nd_attrs *at = a->node->op_attrs;
    scatter_te s = {.x = a->in[0], .ind = a->in[1], .upd = a->in[2]};
    s.nb = s.ind->n_axes - 1;
    s.k = (int)s.ind->buf->shape[s.nb];
    s.red = at ? at->reduction : OP_SCATTER_NONE;
    smelt_dtype dt = s.x->buf->dtype;
    s.acc_dt = dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16 ? SMELT_DT_FLOAT32 : dt;
    const int64_t *shape = s.x->buf->shape;
    int rank = s.x->n_axes;
    for (int j = 0; j < s.k; j++) {
        char msg[160];
        snprintf(msg, sizeof msg, "index {value} (update {position}, component %d) is out of "
                 "range for 'data' dim %d of size %lld", j, j, (long long)shape[j]);
        SMELT_TRY(add_index_check(a, j, shape[j], msg));
    }
    if (s.red == OP_SCATTER_NONE) {
        s.hits = te_compute(a->te, "y_last", SMELT_DT_INT64, s.k, shape, scatter_last_body, &s,
                            s.nb > 0 ? "reduce" : "injective");
        if (!s.hits) return compute_done(a, NULL);
        te_tensor *y = te_compute(a->te, "y", dt, rank, shape, scatter_replace_body, &s,
                                  "injective");
        return compute_done(a, y);
    }
    s.hits = te_compute(a->te, "y_upd", s.acc_dt, rank, shape, scatter_combined_body, &s,
                        s.nb > 0 ? "reduce" : "injective");
    if (!s.hits) return compute_done(a, NULL);
    te_tensor *y = te_compute(a->te, "y", dt, rank, shape, scatter_apply_body, &s, "injective");
    return compute_done(a, y);
}

const op_def op_def_SCATTER_ND = {
    .compute = scatter_nd_compute,
    .import = scatter_nd_import, .infer = scatter_nd_infer, .eval = scatter_nd_eval,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
};

/* ---- EyeLike -----------------------------------------------------------------------
 * A 2-D tensor shaped like X with ones on diagonal k (y[i][j] = j - i == k),
 * of the element type 'dtype' (default: X's). */

OP_ATTRS(EYE_LIKE) = {{"dtype", 0, 0}, {"k", 0, 0}, {NULL, 0, 0}};

static smelt_status eye_like_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_eye_like_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    int64_t dt;
    SMELT_TRY(op_attr_int(ctx, node, "k", 0, &a->k));
    SMELT_TRY(op_attr_int(ctx, node, "dtype", SMELT_DT_UNDEFINED, &dt));
    if (dt != SMELT_DT_UNDEFINED &&
        (dt < 0 || dt >= SMELT_DT_COUNT_ || smelt_dtype_size((smelt_dtype)dt) == 0 ||
         dt == SMELT_DT_COMPLEX64 || dt == SMELT_DT_COMPLEX128))
        return op_errf(ctx, node, dt > SMELT_DT_UNDEFINED && dt <= 26 ? SMELT_ERR_UNSUPPORTED
                                                                       : SMELT_ERR_ATTR,
                       "attribute 'dtype' is %lld, not an element type EyeLike supports",
                       (long long)dt);
    a->dtype = (smelt_dtype)dt;
    return SMELT_OK;
}

static smelt_status eye_like_infer(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_eye_like_attrs *a = node->op_attrs;
    if (in[0]->rank != 2)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' has rank %d, expected 2",
                       input_name(node, 0), in[0]->rank);
    smelt_dtype dt = a->dtype != SMELT_DT_UNDEFINED ? a->dtype : in[0]->dtype;
    if (smelt_dtype_size(dt) == 0 || dt == SMELT_DT_COMPLEX64 || dt == SMELT_DT_COMPLEX128)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "element type %s is not supported",
                       smelt_dtype_name(dt));
    op_copy_shape(&out[0], in[0]);
    out[0].dtype = dt;
    return SMELT_OK;
}

static smelt_status eye_like_eval(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx;
    const op_eye_like_attrs *a = node->op_attrs;
    int64_t rows = in[0]->dims[0], cols = in[0]->dims[1];
    if (rows * cols > 0)
        memset(out[0].data, 0, (size_t)(rows * cols) * smelt_dtype_size(out[0].dtype));
    for (int64_t i = 0; i < rows; i++) {
        if (a->k < cols && a->k >= -i && i + a->k < cols) { /* j = i + k in [0, cols) */
            if (op_dtype_is_float(out[0].dtype)) op_set_f64(&out[0], i * cols + i + a->k, 1.0);
            else op_set_i64(&out[0], i * cols + i + a->k, 1);
        }
    }
    return SMELT_OK;
}

static ir_expr *eye_like_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const op_eye_like_attrs *a = user;
    ir_builder *b = &g->b;
    smelt_dtype dt = a->dtype;
    ir_expr *on = ir_binary(b, IR_EQ, ir_sub(b, idx[1], idx[0]), ir_int(b, a->k));
    ir_expr *one = op_dtype_is_float(dt) ? ir_const_float(b, dt, 1.0) : ir_const_int(b, dt, 1);
    return ir_select(b, on, one, zero_of(b, dt));
}

static smelt_status eye_like_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    const smelt_tensor *o = &a->out_type[0];
    op_eye_like_attrs at = *(const op_eye_like_attrs *)a->node->op_attrs;
    at.dtype = o->dtype;
    /* |k| beyond the dims: no diagonal; clamped so k stays a small immediate */
    at.k = clamp_i64(at.k, -o->dims[0] - 1, o->dims[1] + 1);
    te_tensor *y = te_compute(a->te, "y", o->dtype, o->rank, o->dims, eye_like_body, &at,
                              "injective");
    return compute_done(a, y);
}

const op_def op_def_EYE_LIKE = {
    .compute = eye_like_compute,
    .import = eye_like_import, .infer = eye_like_infer, .eval = eye_like_eval,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};

/* ---- ReverseSequence ---------------------------------------------------------------
 * For each batch entry b, the first sequence_lens[b] steps along time_axis
 * reversed, the rest copied. */

OP_ATTRS(REVERSE_SEQUENCE) = {{"batch_axis", 0, 0}, {"time_axis", 0, 0}, {NULL, 0, 0}};

static smelt_status reverse_sequence_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_reverse_sequence_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_int(ctx, node, "batch_axis", 1, &a->batch_axis));
    SMELT_TRY(op_attr_int(ctx, node, "time_axis", 0, &a->time_axis));
    if ((a->batch_axis != 0 && a->batch_axis != 1) || (a->time_axis != 0 && a->time_axis != 1) ||
        a->batch_axis == a->time_axis)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attributes 'batch_axis' (%lld) and 'time_axis' (%lld) must be 0 and 1 "
                       "in some order", (long long)a->batch_axis, (long long)a->time_axis);
    return SMELT_OK;
}

static smelt_status reverse_sequence_infer(smelt_ctx *ctx, const gr_node *node,
                                           const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_reverse_sequence_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *lens = in[1];
    SMELT_TRY(check_movable(ctx, node, x, 0));
    static const smelt_dtype i64[] = {SMELT_DT_INT64, SMELT_DT_UNDEFINED};
    SMELT_TRY(op_check_dtype(ctx, node, lens, "input 'sequence_lens'", i64));
    if (x->rank < 2)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' has rank %d, expected >= 2",
                       input_name(node, 0), x->rank);
    int64_t batch = x->dims[a->batch_axis];
    if (lens->rank != 1 || (lens->dims[0] >= 0 && batch >= 0 && lens->dims[0] != batch))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input 'sequence_lens' must be 1-D with %lld elements (the batch)",
                       (long long)batch);
    op_copy_shape(&out[0], x);
    return SMELT_OK;
}

static smelt_status reverse_sequence_eval(smelt_ctx *ctx, const gr_node *node,
                                          const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_reverse_sequence_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *lens = in[1];
    int ba = (int)a->batch_axis, ta = (int)a->time_axis;
    int64_t steps = x->dims[ta], n = op_numel(x), xs[SMELT_MAX_RANK], idx[SMELT_MAX_RANK] = {0};
    size_t esz = smelt_dtype_size(x->dtype);
    for (int64_t b = 0; b < x->dims[ba]; b++) {
        int64_t len = op_get_i64(lens, b);
        if (len < 0 || len > steps)
            return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                           "sequence length %lld at position %lld is out of range [0, %lld]",
                           (long long)len, (long long)b, (long long)steps);
    }
    op_strides(x, xs);
    for (int64_t i = 0; i < n; i++) {
        int64_t len = op_get_i64(lens, idx[ba]), t = idx[ta];
        int64_t src = i + (t < len ? (len - 1 - 2 * t) * xs[ta] : 0);
        memcpy((char *)out[0].data + (size_t)i * esz, (const char *)x->data + (size_t)src * esz,
               esz);
        op_next_index(idx, x->dims, x->rank);
    }
    return SMELT_OK;
}

typedef struct reverse_sequence_te {
    const te_tensor *x, *lens;
    int ba, ta;
} reverse_sequence_te;

static ir_expr *reverse_sequence_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const reverse_sequence_te *s = user;
    ir_builder *b = &g->b;
    int64_t steps = s->x->buf->shape[s->ta];
    ir_expr *li[1] = {idx[s->ba]}, *xi[SMELT_MAX_RANK];
    /* clamped like the indices of Gather: the check stage reports bad lengths */
    ir_expr *len = clamp_expr(b, te_read(g, s->lens, li), 0, steps);
    ir_expr *t = idx[s->ta];
    for (int d = 0; d < s->x->n_axes; d++) xi[d] = idx[d];
    xi[s->ta] = ir_select(b, ir_binary(b, IR_LT, t, len),
                          ir_sub(b, ir_sub(b, len, ir_int(b, 1)), t), t);
    return te_read(g, s->x, xi);
}

static ir_expr *lens_check_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return te_read(g, user, idx);
}

static smelt_status reverse_sequence_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    const op_reverse_sequence_attrs *at = a->node->op_attrs;
    reverse_sequence_te s = {.x = a->in[0], .lens = a->in[1], .ba = (int)at->batch_axis,
                             .ta = (int)at->time_axis};
    int64_t steps = s.x->buf->shape[s.ta];
    const smelt_tensor *c = const_at(a, 1);
    bool ok = c != NULL;
    for (int64_t i = 0; c && i < op_numel(c); i++)
        ok = ok && op_get_i64(c, i) >= 0 && op_get_i64(c, i) <= steps;
    if (!ok) {
        ir_builder *b = &a->te->b;
        ir_var *v = ir_var_new(b, "v", SMELT_DT_INT64);
        ir_expr *vr = ir_var_ref(b, v);
        ir_expr *cond = ir_binary(b, IR_AND, ir_binary(b, IR_GE, vr, ir_int(b, 0)),
                                  ir_binary(b, IR_LE, vr, ir_int(b, steps)));
        char msg[120];
        snprintf(msg, sizeof msg, "sequence length {value} at position {position} is out of "
                 "range [0, %lld]", (long long)steps);
        ir_check_site site = {.node = a->node->name, .op = a->node->op_type, .message = msg};
        if (!te_check_compute(a->te, "check", 1, s.lens->buf->shape, lens_check_body,
                              (void *)s.lens, v, cond, &site))
            return compute_done(a, NULL);
    }
    const smelt_tensor *o = &a->out_type[0];
    te_tensor *y = te_compute(a->te, "y", o->dtype, o->rank, o->dims, reverse_sequence_body, &s,
                              "injective");
    return compute_done(a, y);
}

const op_def op_def_REVERSE_SEQUENCE = {
    .compute = reverse_sequence_compute,
    .import = reverse_sequence_import, .infer = reverse_sequence_infer,
    .eval = reverse_sequence_eval,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
};

/* ---- GatherND ----------------------------------------------------------------------
 * y[b..., i..., t...] = data[b..., ind[b..., i..., 0..k-1], t...]: the first
 * batch_dims axes are shared by data and indices, an index tuple of length
 * k = indices' last dim addresses the next k data axes. */

OP_ATTRS(GATHER_ND) = {{"batch_dims", 12, 0}, {NULL, 0, 0}};

static smelt_status gather_nd_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_gather_nd_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_int(ctx, node, "batch_dims", 0, &a->batch_dims));
    if (a->batch_dims < 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'batch_dims' is %lld, must be >= 0",
                       (long long)a->batch_dims);
    return SMELT_OK;
}

static int gather_nd_batch(const gr_node *node)
{
    const op_gather_nd_attrs *a = node->op_attrs;
    return a ? (int)a->batch_dims : 0;
}

static smelt_status gather_nd_infer(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1];
    int b = gather_nd_batch(node);
    SMELT_TRY(check_movable(ctx, node, x, 0));
    SMELT_TRY(op_check_dtype(ctx, node, ind, "input 'indices'", k_index_dtypes));
    if (x->rank < 1 || ind->rank < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "'data' and 'indices' must have rank >= 1");
    if (b >= x->rank || b >= ind->rank)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'batch_dims' (%d) must be less than the ranks of 'data' (%d) "
                       "and 'indices' (%d)", b, x->rank, ind->rank);
    int64_t k = ind->dims[ind->rank - 1];
    if (k < 0)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                       "the last dim of 'indices' must be known at compile time");
    if (k < 1 || b + k > x->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "the last dim of 'indices' (%lld) must be in 1..%d (rank of 'data' "
                       "minus batch_dims)", (long long)k, x->rank - b);
    for (int d = 0; d < b; d++)
        if (x->dims[d] >= 0 && ind->dims[d] >= 0 && x->dims[d] != ind->dims[d])
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "batch dim %d differs: 'data' has %lld, 'indices' %lld", d,
                           (long long)x->dims[d], (long long)ind->dims[d]);
    int rank = ind->rank - 1 + x->rank - b - (int)k;
    if (rank > SMELT_MAX_RANK)
        return op_errf(ctx, node, SMELT_ERR_LIMIT, "output rank %d exceeds the maximum %d",
                       rank, SMELT_MAX_RANK);
    out[0].dtype = x->dtype;
    out[0].rank = rank;
    int r = 0;
    for (int d = 0; d < ind->rank - 1; d++) out[0].dims[r++] = ind->dims[d];
    for (int d = b + (int)k; d < x->rank; d++) out[0].dims[r++] = x->dims[d];
    return SMELT_OK;
}

static smelt_status gather_nd_eval(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1];
    int b = gather_nd_batch(node), k = (int)ind->dims[ind->rank - 1];
    size_t esz = smelt_dtype_size(x->dtype);
    int64_t xs[SMELT_MAX_RANK];
    op_strides(x, xs);
    /* tuples: all of indices but its last axis; per batch, tuples_per_batch */
    int64_t n_tuples = product(ind->dims, 0, ind->rank - 1);
    int64_t per_batch = product(ind->dims, b, ind->rank - 1);
    int64_t slice = product(x->dims, b + k, x->rank), batch_stride = b > 0 ? xs[b - 1] : 0;
    for (int64_t t = 0; t < n_tuples; t++) {
        int64_t off = per_batch > 0 ? (t / per_batch) * batch_stride : 0;
        for (int j = 0; j < k; j++) {
            int64_t raw = op_get_i64(ind, t * k + j), w;
            if (!wrap_index(raw, x->dims[b + j], &w))
                return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                               "index %lld (tuple %lld, component %d) is out of range for "
                               "'data' dim %d of size %lld", (long long)raw, (long long)t, j,
                               b + j, (long long)x->dims[b + j]);
            off += w * xs[b + j];
        }
        if (slice > 0)
            memcpy((char *)out[0].data + (size_t)(t * slice) * esz,
                   (const char *)x->data + (size_t)off * esz, (size_t)slice * esz);
    }
    return SMELT_OK;
}

typedef struct gather_nd_te {
    const te_tensor *x, *ind;
    int b, k;
} gather_nd_te;

static ir_expr *gather_nd_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gather_nd_te *s = user;
    ir_builder *b = &g->b;
    int nq = s->ind->n_axes - 1; /* output axes that walk the tuples */
    ir_expr *ii[SMELT_MAX_RANK], *xi[SMELT_MAX_RANK];
    for (int d = 0; d < nq; d++) ii[d] = idx[d];
    for (int d = 0; d < s->b; d++) xi[d] = idx[d];
    for (int j = 0; j < s->k; j++) {
        ii[nq] = ir_int(b, j);
        xi[s->b + j] = gather_source(b, te_read(g, s->ind, ii), s->x->buf->shape[s->b + j]);
    }
    for (int d = s->b + s->k; d < s->x->n_axes; d++) xi[d] = idx[nq + d - s->b - s->k];
    return te_read(g, s->x, xi);
}

static smelt_status gather_nd_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    gather_nd_te s = {.x = a->in[0], .ind = a->in[1], .b = gather_nd_batch(a->node)};
    s.k = (int)s.ind->buf->shape[s.ind->n_axes - 1];
    for (int j = 0; j < s.k; j++) {
        int64_t dim = s.x->buf->shape[s.b + j];
        if (dim == 0)
            return op_errf(a->ctx, a->node, SMELT_ERR_SHAPE,
                           "cannot gather from 'data' dim %d of size 0", s.b + j);
        char msg[160];
        snprintf(msg, sizeof msg, "index {value} (tuple {position}, component %d) is out of "
                 "range for 'data' dim %d of size %lld", j, s.b + j, (long long)dim);
        SMELT_TRY(add_index_check(a, j, dim, msg));
    }
    const smelt_tensor *o = &a->out_type[0];
    te_tensor *y = te_compute(a->te, "y", o->dtype, o->rank, o->dims, gather_nd_body, &s,
                              "injective");
    return compute_done(a, y);
}

const op_def op_def_GATHER_ND = {
    .compute = gather_nd_compute,
    .import = gather_nd_import, .infer = gather_nd_infer, .eval = gather_nd_eval,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
};

/* ---- ScatterElements ----------------------------------------------------------------
 * out = data; then for every position p of indices:
 * out[p with p[axis] = indices[p]] (op)= updates[p]. */

OP_ATTRS(SCATTER_ELEMENTS) = {{"axis", 0, 0}, {"reduction", 16, 0}, {NULL, 0, 0}};

static smelt_status scatter_elements_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_scatter_elements_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_int(ctx, node, "axis", 0, &a->axis));
    return import_reduction(ctx, node, &a->reduction);
}

static const op_scatter_elements_attrs *scatter_elements_attrs(const gr_node *node)
{
    static const op_scatter_elements_attrs none = {.axis = 0, .reduction = OP_SCATTER_NONE};
    return node->op_attrs ? node->op_attrs : &none;
}

static smelt_status scatter_elements_infer(smelt_ctx *ctx, const gr_node *node,
                                           const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1], *upd = in[2];
    int axis;
    SMELT_TRY(check_movable(ctx, node, x, 0));
    SMELT_TRY(op_check_dtype(ctx, node, ind, "input 'indices'", k_index_dtypes));
    if (upd->dtype != x->dtype)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "'updates' has dtype %s but 'data' has %s",
                       smelt_dtype_name(upd->dtype), smelt_dtype_name(x->dtype));
    if (x->rank < 1 || ind->rank != x->rank || upd->rank != x->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "'data', 'indices' and 'updates' must have the same rank >= 1, got %d, "
                       "%d and %d", x->rank, ind->rank, upd->rank);
    SMELT_TRY(op_norm_axis(ctx, node, scatter_elements_attrs(node)->axis, x->rank, &axis));
    for (int d = 0; d < x->rank; d++) {
        if (ind->dims[d] >= 0 && upd->dims[d] >= 0 && ind->dims[d] != upd->dims[d])
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "'indices' and 'updates' differ in dim %d (%lld and %lld)", d,
                           (long long)ind->dims[d], (long long)upd->dims[d]);
        if (d != axis && ind->dims[d] >= 0 && x->dims[d] >= 0 && ind->dims[d] > x->dims[d])
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "'indices' dim %d (%lld) is larger than 'data' dim %d (%lld)", d,
                           (long long)ind->dims[d], d, (long long)x->dims[d]);
    }
    op_copy_shape(&out[0], x);
    return SMELT_OK;
}

static smelt_status scatter_elements_eval(smelt_ctx *ctx, const gr_node *node,
                                          const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *ind = in[1], *upd = in[2];
    const op_scatter_elements_attrs *a = scatter_elements_attrs(node);
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &axis));
    size_t esz = smelt_dtype_size(x->dtype);
    if (op_numel(x) > 0) memcpy(out[0].data, x->data, (size_t)op_numel(x) * esz);
    int64_t n = op_numel(ind);
    if (n == 0) return SMELT_OK;
    int64_t xs[SMELT_MAX_RANK], idx[SMELT_MAX_RANK] = {0};
    op_strides(x, xs);
    for (int64_t i = 0; i < n; i++) {
        int64_t raw = op_get_i64(ind, i), k, off = 0;
        if (!wrap_index(raw, x->dims[axis], &k))
            return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                           "index %lld at position %lld is out of range for axis %d of size "
                           "%lld", (long long)raw, (long long)i, axis, (long long)x->dims[axis]);
        for (int d = 0; d < x->rank; d++) off += (d == axis ? k : idx[d]) * xs[d];
        if (a->reduction == OP_SCATTER_NONE)
            memcpy((char *)out[0].data + (size_t)off * esz, (const char *)upd->data + (size_t)i * esz,
                   esz);
        else
            scatter_combine(&out[0], off, upd, i, a->reduction);
        op_next_index(idx, ind->dims, ind->rank);
    }
    return SMELT_OK;
}

/* As ScatterND's, a gather: output element i takes the updates at the
 * positions p of indices with p = i off the axis and indices[p] = i[axis],
 * found by a pass over indices' axis (no write depends on data). */
typedef struct scatter_el_te {
    const te_tensor *x, *ind, *upd, *hits;
    int axis;
    op_scatter_reduction red;
    smelt_dtype acc_dt;
} scatter_el_te;

/* Whether i (with i[axis] replaced by r) is a position of indices whose
 * value addresses i[axis]; `then` is evaluated only when it is. */
static ir_expr *scatter_el_when(te_graph *g, const scatter_el_te *s, ir_expr *const *idx,
                                ir_expr *r, ir_expr *then, ir_expr *otherwise)
{
    ir_builder *b = &g->b;
    ir_expr *pi[SMELT_MAX_RANK], *inside = NULL;
    for (int d = 0; d < s->x->n_axes; d++) {
        pi[d] = d == s->axis ? r : idx[d];
        if (d == s->axis || s->ind->buf->shape[d] >= s->x->buf->shape[d]) continue;
        ir_expr *lt = ir_binary(b, IR_LT, idx[d], ir_int(b, s->ind->buf->shape[d]));
        inside = inside ? ir_binary(b, IR_AND, inside, lt) : lt;
    }
    ir_expr *v = ir_cast(b, SMELT_DT_INT64, te_read(g, s->ind, pi));
    ir_expr *eq = ir_binary(b, IR_EQ, wrap_expr(b, v, s->x->buf->shape[s->axis]), idx[s->axis]);
    ir_expr *hit = ir_select(b, eq, then, otherwise);
    return inside ? ir_select(b, inside, hit, otherwise) : hit;
}

static ir_expr *scatter_el_upd(te_graph *g, const scatter_el_te *s, ir_expr *const *idx,
                               ir_expr *r)
{
    ir_expr *pi[SMELT_MAX_RANK];
    for (int d = 0; d < s->x->n_axes; d++) pi[d] = d == s->axis ? r : idx[d];
    return te_read(g, s->upd, pi);
}

/* reduction none: the last position along the axis that writes i, or -1 */
static ir_expr *scatter_el_last_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const scatter_el_te *s = user;
    ir_axis r = te_reduce_axis(g, "r", s->ind->buf->shape[s->axis]);
    ir_expr *rv = ir_var_ref(&g->b, r.var);
    ir_expr *src = scatter_el_when(g, s, idx, rv, rv, ir_int(&g->b, -1));
    return te_reduce(g, IR_REDUCE_MAX, src, 1, &r);
}

static ir_expr *scatter_el_replace_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const scatter_el_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *last = te_read(g, s->hits, idx);
    return ir_select(b, ir_binary(b, IR_GE, last, ir_int(b, 0)), scatter_el_upd(g, s, idx, last),
                     te_read(g, s->x, idx));
}

static ir_expr *scatter_el_combined_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const scatter_el_te *s = user;
    ir_builder *b = &g->b;
    ir_reduce_op op = scatter_reduce_op(s->red);
    ir_axis r = te_reduce_axis(g, "r", s->ind->buf->shape[s->axis]);
    ir_expr *rv = ir_var_ref(b, r.var);
    ir_expr *val = ir_cast(b, s->acc_dt, scatter_el_upd(g, s, idx, rv));
    ir_expr *src = scatter_el_when(g, s, idx, rv, val, te_reduce_identity(g, op, s->acc_dt));
    return te_reduce(g, op, src, 1, &r);
}

static ir_expr *scatter_el_apply_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const scatter_el_te *s = user;
    scatter_te t = {.x = s->x, .hits = s->hits, .red = s->red, .acc_dt = s->acc_dt};
    return scatter_apply_body(g, idx, &t);
}

static ir_expr *copy_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return te_read(g, user, idx);
}

static smelt_status scatter_elements_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    const op_scatter_elements_attrs *at = scatter_elements_attrs(a->node);
    scatter_el_te s = {.x = a->in[0], .ind = a->in[1], .upd = a->in[2], .red = at->reduction};
    SMELT_TRY(op_norm_axis(a->ctx, a->node, at->axis, s.x->n_axes, &s.axis));
    smelt_dtype dt = s.x->buf->dtype;
    s.acc_dt = dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16 ? SMELT_DT_FLOAT32 : dt;
    const int64_t *shape = s.x->buf->shape;
    int rank = s.x->n_axes;
    int64_t dim = shape[s.axis];
    char msg[160];
    snprintf(msg, sizeof msg, "index {value} at position {position} is out of range for axis %d "
             "of size %lld", s.axis, (long long)dim);
    SMELT_TRY(add_index_check(a, -1, dim, msg));
    if (placeholder_numel(s.ind) == 0) { /* nothing scattered: a copy */
        te_tensor *y = te_compute(a->te, "y", dt, rank, shape, copy_body, (void *)s.x,
                                  "injective");
        return compute_done(a, y);
    }
    if (s.red == OP_SCATTER_NONE) {
        s.hits = te_compute(a->te, "y_last", SMELT_DT_INT64, rank, shape, scatter_el_last_body,
                            &s, "reduce");
        if (!s.hits) return compute_done(a, NULL);
        te_tensor *y = te_compute(a->te, "y", dt, rank, shape, scatter_el_replace_body, &s,
                                  "injective");
        return compute_done(a, y);
    }
    s.hits = te_compute(a->te, "y_upd", s.acc_dt, rank, shape, scatter_el_combined_body, &s,
                        "reduce");
    if (!s.hits) return compute_done(a, NULL);
    te_tensor *y = te_compute(a->te, "y", dt, rank, shape, scatter_el_apply_body, &s,
                              "injective");
    return compute_done(a, y);
}

const op_def op_def_SCATTER_ELEMENTS = {
    .compute = scatter_elements_compute,
    .import = scatter_elements_import, .infer = scatter_elements_infer,
    .eval = scatter_elements_eval,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
};

/* Scatter (opsets 9-10, deprecated): ScatterElements without reductions. */
OP_ATTRS(SCATTER) = {{"axis", 0, 0}, {NULL, 0, 0}};

const op_def op_def_SCATTER = {
    .compute = scatter_elements_compute,
    .import = scatter_elements_import, .infer = scatter_elements_infer,
    .eval = scatter_elements_eval,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
};

/* ---- Pad -------------------------------------------------------------------------- */

/* pads and value became inputs at opset 11 (pads was paddings in Pad-1) */
OP_ATTRS(PAD) = {{"mode", 0, 0}, {"paddings", 0, 1}, {"pads", 2, 10}, {"value", 0, 10}, {NULL, 0, 0}};

static smelt_status pad_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    static const char *const names[] = {"constant", "reflect", "edge", "wrap"};
    op_pad_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    const char *mode;
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_string(ctx, node, "mode", "constant", &mode));
    int m = -1;
    for (int i = 0; i < (int)SMELT_ARRAY_LEN(names); i++)
        if (strcmp(mode, names[i]) == 0) m = i;
    if (m < 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'mode' is '%s', expected constant, reflect, edge or wrap",
                       mode);
    a->mode = (op_pad_mode)m;
    if (g->opset >= 11) return SMELT_OK;
    int count;
    const int64_t *pads;
    float value;
    SMELT_TRY(op_attr_ints(ctx, node, g->opset < 2 ? "paddings" : "pads", &count, &pads));
    if (count < 0) return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'pads' is required");
    SMELT_TRY(op_attr_float(ctx, node, "value", 0.0f, &value));
    SMELT_TRY(op_set_input_ints(ctx, g, node, 1, pads, count));
    return op_set_input_float_scalar(ctx, g, node, 2, value);
}

/* Per data dim: elements added before (begin) and after (end); negative crops. */
typedef struct pad_plan {
    int64_t begin[SMELT_MAX_RANK], end[SMELT_MAX_RANK];
    bool known[SMELT_MAX_RANK];
} pad_plan;

static smelt_status pad_plan_axes(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                  const smelt_tensor *axes, int *axis_of, int *n)
{
    if (!axes) {
        *n = x->rank;
        for (int i = 0; i < x->rank; i++) axis_of[i] = i;
        return SMELT_OK;
    }
    int64_t ax[SMELT_MAX_RANK];
    SMELT_TRY(op_check_dtype(ctx, node, axes, "input 'axes'", k_index_dtypes));
    SMELT_TRY(op_read_ints(ctx, node, axes, "input 'axes'", ax, SMELT_MAX_RANK, n));
    bool seen[SMELT_MAX_RANK] = {false};
    for (int i = 0; i < *n; i++) {
        SMELT_TRY(op_norm_axis(ctx, node, ax[i], x->rank, &axis_of[i]));
        if (seen[axis_of[i]])
            return op_errf(ctx, node, SMELT_ERR_ATTR, "axis %d is padded twice", axis_of[i]);
        seen[axis_of[i]] = true;
    }
    return SMELT_OK;
}

static smelt_status pad_plan_make(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, pad_plan *p)
{
    const smelt_tensor *x = in[0], *pads, *axes = op_input(node, in, 3);
    SMELT_TRY(require_input(ctx, node, in, 1, "pads", &pads));
    SMELT_TRY(op_check_dtype(ctx, node, pads, "input 'pads'", k_index_dtypes));
    for (int d = 0; d < x->rank; d++) {
        p->begin[d] = p->end[d] = 0;
        p->known[d] = true;
    }
    if (!pads->data || (axes && !axes->data)) {
        for (int d = 0; d < x->rank; d++) p->known[d] = false;
        return SMELT_OK;
    }
    int axis_of[SMELT_MAX_RANK], n, count;
    int64_t v[2 * SMELT_MAX_RANK];
    SMELT_TRY(pad_plan_axes(ctx, node, x, axes, axis_of, &n));
    SMELT_TRY(op_read_ints(ctx, node, pads, "input 'pads'", v, 2 * SMELT_MAX_RANK, &count));
    if (count != 2 * n)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "'pads' has %d values, expected %d (2 per "
                       "padded axis)", count, 2 * n);
    for (int i = 0; i < n; i++) {
        p->begin[axis_of[i]] = v[i];
        p->end[axis_of[i]] = v[n + i];
    }
    return SMELT_OK;
}

static smelt_status pad_out_dim(smelt_ctx *ctx, const gr_node *node, op_pad_mode mode,
                                const pad_plan *p, int d, int64_t dim, int64_t *out)
{
    int64_t b = p->begin[d], e = p->end[d], r;
    if (!p->known[d]) {
        *out = GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    if (dim < 0) { /* symbolic */
        *out = b == 0 && e == 0 ? dim : GR_DIM_UNKNOWN;
        return SMELT_OK;
    }
    if (smelt_add_overflow_i64(dim, b, &r) || smelt_add_overflow_i64(r, e, &r) || r < 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "pads %lld and %lld on axis %d of size %lld give an invalid size",
                       (long long)b, (long long)e, d, (long long)dim);
    if (mode != OP_PAD_CONSTANT && dim == 0 && (b > 0 || e > 0))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "cannot pad empty axis %d in this mode", d);
    *out = r;
    return SMELT_OK;
}

static smelt_status pad_infer(smelt_ctx *ctx, const gr_node *node,
                              const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_pad_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *value = op_input(node, in, 2);
    pad_plan p;
    SMELT_TRY(check_movable(ctx, node, x, 0));
    if (value && op_dims_static(value) && op_numel(value) > 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "'constant_value' must be a scalar");
    SMELT_TRY(pad_plan_make(ctx, node, in, &p));
    op_copy_shape(&out[0], x);
    for (int d = 0; d < x->rank; d++)
        SMELT_TRY(pad_out_dim(ctx, node, a ? a->mode : OP_PAD_CONSTANT, &p, d, x->dims[d],
                              &out[0].dims[d]));
    return SMELT_OK;
}

/* Source coordinate for padded coordinate c of an axis of size n; -1 means
 * "the constant value". */
static int64_t pad_source(op_pad_mode mode, int64_t c, int64_t n)
{
    if (c >= 0 && c < n) return c;
    switch (mode) {
    case OP_PAD_CONSTANT: return -1;
    case OP_PAD_EDGE: return c < 0 ? 0 : n - 1;
    case OP_PAD_WRAP: {
        int64_t m = c % n;
        return m < 0 ? m + n : m;
    }
    case OP_PAD_REFLECT: {
        if (n == 1) return 0;
        int64_t period = 2 * (n - 1), m = c % period;
        if (m < 0) m += period;
        return m < n ? m : period - m;
    }
    }
    return -1;
}

static smelt_status pad_eval(smelt_ctx *ctx, const gr_node *node,
                             const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_pad_attrs *a = node->op_attrs;
    op_pad_mode mode = a ? a->mode : OP_PAD_CONSTANT;
    const smelt_tensor *x = in[0], *value = op_input(node, in, 2);
    pad_plan p;
    SMELT_TRY(pad_plan_make(ctx, node, in, &p));
    size_t esz = smelt_dtype_size(x->dtype);
    elem_buf fill;
    memset(&fill, 0, sizeof fill);
    if (value && op_numel(value) == 1) convert_scalar(value, x->dtype, &fill);
    int rank = x->rank;
    int64_t n = op_numel(&out[0]), xs[SMELT_MAX_RANK], idx[SMELT_MAX_RANK] = {0};
    op_strides(x, xs);
    char *dst = out[0].data;
    for (int64_t o = 0; o < n; o++, dst += esz) {
        int64_t off = 0;
        for (int d = 0; d < rank && off >= 0; d++) {
            int64_t s = pad_source(mode, idx[d] - p.begin[d], x->dims[d]);
            off = s < 0 ? -1 : off + s * xs[d];
        }
        memcpy(dst, off < 0 ? fill.bytes : (const unsigned char *)x->data + (size_t)off * esz,
               esz);
        op_next_index(idx, out[0].dims, rank);
    }
    return SMELT_OK;
}

/* Per axis: c = i - begin is the coordinate in x; lo / hi say whether c can
 * fall below 0 / reach the axis size (false when the pads prove otherwise). */
typedef struct pad_te {
    const te_tensor *x;
    op_pad_mode mode;
    ir_expr *begin[SMELT_MAX_RANK];
    bool lo[SMELT_MAX_RANK], hi[SMELT_MAX_RANK];
    ir_expr *value; /* constant mode: the fill, in x's dtype */
} pad_te;

/* Mirror c into [0, n) without repeating the edge: period 2(n-1). */
static ir_expr *pad_reflect(ir_builder *b, ir_expr *c, int64_t n)
{
    if (n == 1) return ir_int(b, 0);
    int64_t period = 2 * (n - 1);
    ir_expr *m = ir_binary(b, IR_FLOORMOD, c, ir_int(b, period));
    return ir_binary(b, IR_MIN, m, ir_sub(b, ir_int(b, period), m));
}

/* x's coordinate on axis d; *inside collects the constant mode's bounds test. */
static ir_expr *pad_source_expr(ir_builder *b, const pad_te *s, int d, ir_expr *i,
                                ir_expr **inside)
{
    int64_t n = s->x->buf->shape[d];
    ir_expr *c = ir_is_int(s->begin[d], 0) ? i : ir_sub(b, i, s->begin[d]);
    if (!s->lo[d] && !s->hi[d]) return c;
    switch (s->mode) {
    case OP_PAD_CONSTANT: {
        ir_expr *lo = s->lo[d] ? ir_binary(b, IR_GE, c, ir_int(b, 0)) : NULL;
        ir_expr *hi = s->hi[d] ? ir_binary(b, IR_LT, c, ir_int(b, n)) : NULL;
        ir_expr *in = lo && hi ? ir_binary(b, IR_AND, lo, hi) : lo ? lo : hi;
        *inside = *inside ? ir_binary(b, IR_AND, *inside, in) : in;
        return c;
    }
    case OP_PAD_EDGE:
        if (s->lo[d]) c = ir_binary(b, IR_MAX, c, ir_int(b, 0));
        if (s->hi[d]) c = ir_binary(b, IR_MIN, c, ir_int(b, n - 1));
        return c;
    case OP_PAD_WRAP: return ir_binary(b, IR_FLOORMOD, c, ir_int(b, n));
    case OP_PAD_REFLECT: return pad_reflect(b, c, n);
    }
    return c;
}

static ir_expr *pad_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const pad_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *src[SMELT_MAX_RANK] = {0}, *inside = NULL;
    if (s->mode == OP_PAD_CONSTANT && placeholder_numel(s->x) == 0) return s->value;
    for (int d = 0; d < s->x->n_axes; d++) src[d] = pad_source_expr(b, s, d, idx[d], &inside);
    ir_expr *v = te_read(g, s->x, src);
    /* the load is evaluated only inside x: a guarded read, not a clamp */
    return inside ? ir_select(b, inside, v, s->value) : v;
}

static void pad_runtime(op_compute_args *a, pad_te *s)
{
    const te_tensor *pads = a->in[1], *axes = in_at(a, 3);
    int n = axes ? (int)placeholder_numel(axes) : s->x->n_axes;
    axis_params p = {axes, const_at(a, 3), n, s->x->n_axes};
    for (int d = 0; d < s->x->n_axes; d++) {
        s->begin[d] = axis_param(a->te, &p, pads, const_at(a, 1), 0, d, ir_int(&a->te->b, 0));
        s->lo[d] = s->hi[d] = true;
    }
}

static smelt_status pad_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    const op_pad_attrs *at = a->node->op_attrs;
    pad_te s = {.x = a->in[0], .mode = at ? at->mode : OP_PAD_CONSTANT};
    ir_builder *b = &a->te->b;
    smelt_dtype dt = s.x->buf->dtype;
    const te_tensor *value = in_at(a, 2);
    s.value = value && placeholder_numel(value) == 1 ? ir_cast(b, dt, read_flat(a->te, value, 0))
                                            : zero_of(b, dt);
    if (input_is_const(a, 1) && input_is_const(a, 3)) {
        smelt_tensor types[4];
        const smelt_tensor *tin[4];
        pad_plan p;
        compute_inputs(a, types, tin, 4);
        SMELT_TRY(pad_plan_make(a->ctx, a->node, tin, &p));
        for (int d = 0; d < s.x->n_axes; d++) {
            s.begin[d] = ir_int(b, p.begin[d]);
            s.lo[d] = p.begin[d] > 0;
            s.hi[d] = p.end[d] > 0;
        }
    } else {
        pad_runtime(a, &s);
    }
    const smelt_tensor *o = &a->out_type[0];
    te_tensor *y = te_compute(a->te, "y", o->dtype, o->rank, o->dims, pad_body, &s, "injective");
    return compute_done(a, y);
}

const op_def op_def_PAD = {
    .compute = pad_compute,
    .import = pad_import, .infer = pad_infer, .eval = pad_eval,
    .min_inputs = 1, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
};

/* ---- Trilu ------------------------------------------------------------------------ */

OP_ATTRS(TRILU) = {{"upper", 0, 0}, {NULL, 0, 0}};

static smelt_status trilu_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_trilu_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    return op_attr_bool(ctx, node, "upper", true, &a->upper);
}

static smelt_status trilu_infer(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *k = op_input(node, in, 1);
    SMELT_TRY(check_movable(ctx, node, in[0], 0));
    if (in[0]->rank < 2)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' has rank %d, expected >= 2",
                       input_name(node, 0), in[0]->rank);
    if (k) {
        SMELT_TRY(op_check_dtype(ctx, node, k, "input 'k'", k_index_dtypes));
        if (op_dims_static(k) && op_numel(k) != 1)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "input 'k' must be a scalar");
    }
    op_copy_shape(&out[0], in[0]);
    return SMELT_OK;
}

static smelt_status trilu_eval(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_trilu_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *kt = op_input(node, in, 1);
    bool upper = a ? a->upper : true;
    size_t esz = smelt_dtype_size(x->dtype);
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    int64_t mats = product(x->dims, 0, x->rank - 2);
    /* clamping k keeps i + k from overflowing without changing the result */
    int64_t k = kt ? clamp_i64(op_get_i64(kt, 0), -rows - 1, cols + 1) : 0;
    for (int64_t m = 0; m < mats; m++) {
        for (int64_t i = 0; i < rows; i++) {
            /* keep columns [lo, hi): upper j >= i + k, lower j <= i + k */
            int64_t lo = upper ? clamp_i64(i + k, 0, cols) : 0;
            int64_t hi = upper ? cols : clamp_i64(i + k + 1, 0, cols);
            size_t row = (size_t)((m * rows + i) * cols);
            if (hi > lo)
                memcpy((char *)out[0].data + (row + (size_t)lo) * esz,
                       (const char *)x->data + (row + (size_t)lo) * esz,
                       (size_t)(hi - lo) * esz);
        }
    }
    return SMELT_OK;
}

typedef struct trilu_te {
    const te_tensor *x;
    ir_expr *k; /* int64 diagonal offset */
    bool upper;
} trilu_te;

static ir_expr *trilu_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const trilu_te *s = user;
    ir_builder *b = &g->b;
    int r = s->x->n_axes;
    /* j - i is small, so comparing it with k cannot overflow (i + k could) */
    ir_expr *diag = ir_sub(b, idx[r - 1], idx[r - 2]);
    ir_expr *keep = ir_binary(b, s->upper ? IR_GE : IR_LE, diag, s->k);
    return ir_select(b, keep, te_read(g, s->x, idx), zero_of(b, s->x->buf->dtype));
}

static smelt_status trilu_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    const op_trilu_attrs *at = a->node->op_attrs;
    trilu_te s = {.x = a->in[0], .upper = at ? at->upper : true};
    const te_tensor *k = in_at(a, 1);
    s.k = k ? int_param(a->te, k, const_at(a, 1), 0) : ir_int(&a->te->b, 0);
    const smelt_tensor *o = &a->out_type[0];
    te_tensor *y = te_compute(a->te, "y", o->dtype, o->rank, o->dims, trilu_body, &s, "injective");
    return compute_done(a, y);
}

const op_def op_def_TRILU = {
    .compute = trilu_compute,
    .import = trilu_import, .infer = trilu_infer, .eval = trilu_eval,
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
};

/* ---- NonZero ---------------------------------------------------------------------- */

static smelt_status non_zero_infer(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    SMELT_TRY(check_movable(ctx, node, x, 0));
    out[0].dtype = SMELT_DT_INT64;
    out[0].rank = 2;
    out[0].dims[0] = x->rank; /* a scalar gives (0, N), unlike numpy */
    out[0].dims[1] = GR_DIM_UNKNOWN;
    if (x->data) {
        int64_t n = op_numel(x), nnz = 0;
        for (int64_t i = 0; i < n; i++) nnz += elem_is_nonzero(x, i);
        out[0].dims[1] = nnz;
    }
    return SMELT_OK;
}

static smelt_status non_zero_eval(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    int64_t n = op_numel(x), nnz = out[0].dims[1], col = 0, idx[SMELT_MAX_RANK] = {0};
    int64_t *dst = out[0].data;
    for (int64_t i = 0; i < n; i++) {
        if (elem_is_nonzero(x, i)) {
            if (col >= nnz)
                return op_errf(ctx, node, SMELT_ERR_INTERNAL, "output has too few columns");
            for (int d = 0; d < x->rank; d++) dst[d * nnz + col] = idx[d];
            col++;
        }
        op_next_index(idx, x->dims, x->rank);
    }
    return SMELT_OK;
}

/* The columns NonZero can give: every element of x (static dims). */
static int64_t non_zero_count_bound(const gr_node *n, int out, int dim)
{
    int64_t numel = gr_value_numel(n->inputs[0]);
    return out == 0 && dim == 1 && numel >= 0 ? numel : -1;
}

/* smelt.nonzero's element test: 0 bytes, 1 float32, 2 float64, 3 16-bit
 * floats; -1 for the types it does not take (other floats). */
static int non_zero_kind(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_DT_FLOAT32: return 1;
    case SMELT_DT_FLOAT64: return 2;
    case SMELT_DT_FLOAT16:
    case SMELT_DT_BFLOAT16: return 3;
    default: return op_dtype_is_float(dt) || !smelt_dtype_size(dt) ? -1 : 0;
    }
}

typedef struct non_zero_build {
    const te_tensor *x, *dims, *rt_dims;
    int rt, kind;
    int64_t bound;
} non_zero_build;

static ir_stmt *build_non_zero(te_graph *g, ir_buffer *out, void *user)
{
    const non_zero_build *nz = user;
    ir_builder *b = &g->b;
    const ir_buffer *x = nz->x->buf;
    int64_t n = 1;
    for (int d = 0; d < x->rank; d++) n *= x->shape[d];
    ir_expr *zero = ir_int(b, 0);
    ir_call_arg args[9] = {
        {out, zero},
        {nz->rt_dims->buf, ir_int(b, nz->rt)},
        {nz->x->buf, zero},
        {nz->dims->buf, zero},
        {NULL, ir_int(b, nz->kind)},
        {NULL, ir_int(b, (int64_t)smelt_dtype_size(x->dtype))},
        {NULL, ir_int(b, n)},
        {NULL, ir_int(b, x->rank)},
        {NULL, ir_int(b, nz->bound)},
    };
    return ir_call_stmt(b, "smelt.nonzero", 9, args);
}

/* Compiled: the columns at the bound the graph was laid out with, their
 * count a run-time dim smelt.nonzero writes (api/specialize.c,
 * "Data-dependent counts"). */
static smelt_status non_zero_compute(op_compute_args *a)
{
    te_tensor *x = a->in[0], *rt_dims;
    const smelt_tensor *y = &a->out_type[0];
    non_zero_build *nz = smelt_arena_alloc(&a->te->arena, sizeof *nz);
    if (!nz) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
    *nz = (non_zero_build){.x = x, .kind = non_zero_kind(x->buf->dtype), .bound = y->dims[1]};
    SMELT_TRY(op_count_slot(a, y->dims[1], &rt_dims, &nz->rt));
    nz->rt_dims = rt_dims;
    if (nz->kind < 0)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED, "compiled code finds the "
                       "non-zero elements of %s tensors not yet; the reference executor runs it "
                       "(--reference)", smelt_dtype_name(x->buf->dtype));
    int64_t rank = x->buf->rank > 0 ? x->buf->rank : 1;
    int64_t *dims = smelt_alloc(sizeof *dims * (size_t)rank);
    if (!dims) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
    dims[0] = 1;
    for (int d = 0; d < x->buf->rank; d++) dims[d] = x->buf->shape[d];
    te_tensor *dims_t = te_const_tensor(a->te, "nonzero_dims", SMELT_DT_INT64, 1, &rank, dims);
    if (!dims_t) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
    nz->dims = dims_t;
    te_tensor *inputs[3] = {x, dims_t, rt_dims};
    a->out[0] = te_extern_stage(a->te, "nonzero", SMELT_DT_INT64, y->rank, y->dims, 3, inputs,
                                build_non_zero, nz, "nonzero", (double)nz->bound);
    if (a->out[0]) te_extern_set_rt_ok(a->out[0]);
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_NON_ZERO = {
    .compute = non_zero_compute, .infer = non_zero_infer, .eval = non_zero_eval,
    .count_bound = non_zero_count_bound,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};

/* ---- OneHot ----------------------------------------------------------------------- */

OP_ATTRS(ONE_HOT) = {{"axis", 0, 0}, {NULL, 0, 0}};

static smelt_status one_hot_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    return import_axis(ctx, g, node, -1);
}

static smelt_status one_hot_infer(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *ind = in[0], *depth = in[1], *values = in[2];
    SMELT_TRY(check_movable(ctx, node, values, 2));
    if (!op_dtype_is_int(ind->dtype) && !op_dtype_is_float(ind->dtype))
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "input 'indices' has dtype %s",
                       smelt_dtype_name(ind->dtype));
    if (!op_dtype_is_int(depth->dtype) && !op_dtype_is_float(depth->dtype))
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "input 'depth' has dtype %s",
                       smelt_dtype_name(depth->dtype));
    if (op_dims_static(depth) && op_numel(depth) != 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "'depth' must have exactly one element");
    if (values->rank != 1 || (values->dims[0] >= 0 && values->dims[0] != 2))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "'values' must be a 1-D tensor of 2 elements [off, on]");
    if (ind->rank + 1 > SMELT_MAX_RANK)
        return op_errf(ctx, node, SMELT_ERR_LIMIT, "output rank exceeds the maximum %d",
                       SMELT_MAX_RANK);
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, attr_axis(node, -1), ind->rank + 1, &axis));
    int64_t d = GR_DIM_UNKNOWN;
    if (depth->data) {
        d = op_get_i64(depth, 0); /* any numeric dtype; floats truncate */
        if (d < 1)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "'depth' is %lld, must be positive",
                           (long long)d);
    }
    out[0].dtype = values->dtype;
    out[0].rank = ind->rank + 1;
    for (int i = 0, k = 0; i < out[0].rank; i++)
        out[0].dims[i] = i == axis ? d : ind->dims[k++];
    return SMELT_OK;
}

static smelt_status one_hot_eval(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *ind = in[0], *values = in[2];
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, attr_axis(node, -1), ind->rank + 1, &axis));
    size_t esz = smelt_dtype_size(values->dtype);
    const char *off_v = values->data, *on_v = off_v + esz;
    int64_t depth = out[0].dims[axis], total = op_numel(&out[0]);
    int64_t outer = product(ind->dims, 0, axis), inner = product(ind->dims, axis, ind->rank);
    char *dst = out[0].data;
    for (int64_t i = 0; i < total; i++) memcpy(dst + (size_t)i * esz, off_v, esz);
    /* output viewed as [outer, depth, inner] */
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < inner; j++) {
            int64_t raw = op_get_i64(ind, o * inner + j), k; /* floats truncate */
            if (!wrap_index(raw, depth, &k)) continue; /* out of range: all off */
            memcpy(dst + (size_t)((o * depth + k) * inner + j) * esz, on_v, esz);
        }
    }
    return SMELT_OK;
}

typedef struct one_hot_te {
    const te_tensor *ind, *values;
    int axis;
    int64_t depth;
} one_hot_te;

/* An index value as int64; floats truncate like the reference, after a clamp
 * (far beyond any depth) that keeps the conversion defined in C. */
static ir_expr *one_hot_index(ir_builder *b, ir_expr *raw)
{
    if (!op_dtype_is_float(raw->dtype)) return ir_cast(b, SMELT_DT_INT64, raw);
    ir_expr *f = ir_cast(b, SMELT_DT_FLOAT64, raw);
    f = ir_binary(b, IR_MAX, f, ir_const_float(b, SMELT_DT_FLOAT64, -0x1p62));
    f = ir_binary(b, IR_MIN, f, ir_const_float(b, SMELT_DT_FLOAT64, 0x1p62));
    return ir_cast(b, SMELT_DT_INT64, f);
}

/* out[..., j (at axis), ...] = j == wrap(indices[...]) ? on : off; an index
 * out of range matches no j, so the row stays "off" as in the reference. */
static ir_expr *one_hot_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const one_hot_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *ii[SMELT_MAX_RANK];
    for (int d = 0, k = 0; d <= s->ind->n_axes; d++)
        if (d != s->axis) ii[k++] = idx[d];
    ir_expr *k = wrap_expr(b, one_hot_index(b, te_read(g, s->ind, ii)), s->depth);
    ir_expr *off = ir_int(b, 0), *on = ir_int(b, 1);
    return ir_select(b, ir_binary(b, IR_EQ, k, idx[s->axis]), te_read(g, s->values, &on),
                     te_read(g, s->values, &off));
}

static smelt_status one_hot_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    one_hot_te s = {.ind = a->in[0], .values = a->in[2]};
    const smelt_tensor *o = &a->out_type[0];
    SMELT_TRY(op_norm_axis(a->ctx, a->node, attr_axis(a->node, -1), o->rank, &s.axis));
    s.depth = o->dims[s.axis];
    te_tensor *y = te_compute(a->te, "y", o->dtype, o->rank, o->dims, one_hot_body, &s,
                              "injective");
    return compute_done(a, y);
}

const op_def op_def_ONE_HOT = {
    .compute = one_hot_compute,
    .import = one_hot_import, .infer = one_hot_infer, .eval = one_hot_eval,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
};

/* ---- DepthToSpace / SpaceToDepth --------------------------------------------------- */

/* mode came to DepthToSpace at opset 11, to SpaceToDepth at 28 */
OP_ATTRS(DEPTH_TO_SPACE) = {{"blocksize", 0, 0}, {"mode", 11, 0}, {NULL, 0, 0}};
OP_ATTRS(SPACE_TO_DEPTH) = {{"blocksize", 0, 0}, {"mode", 28, 0}, {NULL, 0, 0}};

static smelt_status block_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_block_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    const char *mode;
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_int(ctx, node, "blocksize", 0, &a->blocksize));
    if (a->blocksize < 1 || a->blocksize > INT32_MAX)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'blocksize' is %lld, must be a positive integer",
                       (long long)a->blocksize);
    SMELT_TRY(op_attr_string(ctx, node, "mode", "DCR", &mode));
    if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'mode' is '%s', expected DCR or CRD", mode);
    a->crd = strcmp(mode, "CRD") == 0;
    return SMELT_OK;
}

static smelt_status block_check(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                int64_t *b)
{
    const op_block_attrs *a = node->op_attrs;
    SMELT_TRY(check_movable(ctx, node, x, 0));
    if (!a) return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'blocksize' is required");
    if (x->rank != 4)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' has rank %d, expected 4",
                       input_name(node, 0), x->rank);
    *b = a->blocksize;
    return SMELT_OK;
}

static int64_t mul_dim(int64_t dim, int64_t b, bool *overflow)
{
    int64_t r;
    if (dim < 0) return GR_DIM_UNKNOWN;
    if (smelt_mul_overflow_i64(dim, b, &r)) *overflow = true;
    return r;
}

static smelt_status depth_to_space_infer(smelt_ctx *ctx, const gr_node *node,
                                         const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    int64_t b = 1, c = x->dims[1];
    bool overflow = false;
    SMELT_TRY(block_check(ctx, node, x, &b));
    if (c >= 0 && c % (b * b) != 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "channels (%lld) are not divisible by blocksize^2 (%lld)", (long long)c,
                       (long long)(b * b));
    op_copy_shape(&out[0], x);
    out[0].dims[1] = c >= 0 ? c / (b * b) : GR_DIM_UNKNOWN;
    out[0].dims[2] = mul_dim(x->dims[2], b, &overflow);
    out[0].dims[3] = mul_dim(x->dims[3], b, &overflow);
    if (overflow) return op_errf(ctx, node, SMELT_ERR_LIMIT, "output size overflows");
    return SMELT_OK;
}

static smelt_status depth_to_space_eval(smelt_ctx *ctx, const gr_node *node,
                                        const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_block_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int64_t b = a->blocksize, n = x->dims[0], h = x->dims[2], w = x->dims[3];
    int64_t c = x->dims[1] / (b * b), hw = h * w;
    /* output viewed as [N, C', H, b, W, b]; strides say where each index reads */
    int64_t dims[6] = {n, c, h, b, w, b};
    int64_t stride[6] = {x->dims[1] * hw, a->crd ? b * b * hw : hw, w,
                         a->crd ? b * hw : b * c * hw, 1, a->crd ? hw : c * hw};
    strided_copy(out[0].data, x->data, smelt_dtype_size(x->dtype), 6, dims, 0, stride);
    return SMELT_OK;
}

typedef struct block_te {
    const te_tensor *x;
    int64_t b, c; /* blocksize; channels of the output (DepthToSpace) or input (SpaceToDepth) */
    bool crd;
} block_te;

/* y[n, c, h, w] = x[n, ch, h / b, w / b] with ch from c and the offsets
 * (h mod b, w mod b): DCR puts the offsets outermost, CRD innermost. */
static ir_expr *depth_to_space_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const block_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *bs = ir_int(b, s->b);
    ir_expr *hb = ir_binary(b, IR_FLOORMOD, idx[2], bs);
    ir_expr *wb = ir_binary(b, IR_FLOORMOD, idx[3], bs);
    ir_expr *offset = ir_add(b, ir_mul(b, hb, bs), wb), *ch;
    if (s->crd)
        ch = ir_add(b, ir_mul(b, idx[1], ir_int(b, s->b * s->b)), offset);
    else
        ch = ir_add(b, ir_mul(b, offset, ir_int(b, s->c)), idx[1]);
    ir_expr *xi[4] = {idx[0], ch, ir_binary(b, IR_FLOORDIV, idx[2], bs),
                      ir_binary(b, IR_FLOORDIV, idx[3], bs)};
    return te_read(g, s->x, xi);
}

/* y[n, ch, h, w] = x[n, c, h * b + bh, w * b + bw] with ch = (bh * b + bw) * C + c
 * (DCR: offsets outermost) or c * b * b + bh * b + bw (CRD: innermost). */
static ir_expr *space_to_depth_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const block_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *bs = ir_int(b, s->b), *c, *offset;
    if (s->crd) {
        ir_expr *bb = ir_int(b, s->b * s->b);
        c = ir_binary(b, IR_FLOORDIV, idx[1], bb);
        offset = ir_binary(b, IR_FLOORMOD, idx[1], bb);
    } else {
        ir_expr *cs = ir_int(b, s->c);
        c = ir_binary(b, IR_FLOORMOD, idx[1], cs);
        offset = ir_binary(b, IR_FLOORDIV, idx[1], cs);
    }
    ir_expr *bh = ir_binary(b, IR_FLOORDIV, offset, bs);
    ir_expr *bw = ir_binary(b, IR_FLOORMOD, offset, bs);
    ir_expr *xi[4] = {idx[0], c, ir_add(b, ir_mul(b, idx[2], bs), bh),
                      ir_add(b, ir_mul(b, idx[3], bs), bw)};
    return te_read(g, s->x, xi);
}

static smelt_status block_compute(op_compute_args *a)
{
    if (output_is_empty(a)) return empty_compute(a);
    const op_block_attrs *at = a->node->op_attrs;
    const smelt_tensor *o = &a->out_type[0];
    bool to_space = a->node->op == OP_DEPTH_TO_SPACE;
    block_te s = {.x = a->in[0], .b = at->blocksize, .crd = at->crd};
    s.c = to_space ? o->dims[1] : s.x->buf->shape[1];
    te_tensor *y = te_compute(a->te, "y", o->dtype, o->rank, o->dims,
                              to_space ? depth_to_space_body : space_to_depth_body, &s,
                              "injective");
    return compute_done(a, y);
}

const op_def op_def_DEPTH_TO_SPACE = {
    .compute = block_compute,
    .import = block_import, .infer = depth_to_space_infer, .eval = depth_to_space_eval,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};

static smelt_status space_to_depth_infer(smelt_ctx *ctx, const gr_node *node,
                                         const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    int64_t b = 1;
    bool overflow = false;
    SMELT_TRY(block_check(ctx, node, x, &b));
    for (int d = 2; d < 4; d++)
        if (x->dims[d] >= 0 && x->dims[d] % b != 0)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "spatial dim %d (%lld) is not divisible by blocksize %lld", d,
                           (long long)x->dims[d], (long long)b);
    op_copy_shape(&out[0], x);
    out[0].dims[1] = mul_dim(mul_dim(x->dims[1], b, &overflow), b, &overflow);
    out[0].dims[2] = x->dims[2] >= 0 ? x->dims[2] / b : GR_DIM_UNKNOWN;
    out[0].dims[3] = x->dims[3] >= 0 ? x->dims[3] / b : GR_DIM_UNKNOWN;
    if (overflow) return op_errf(ctx, node, SMELT_ERR_LIMIT, "output size overflows");
    return SMELT_OK;
}

static smelt_status space_to_depth_eval(smelt_ctx *ctx, const gr_node *node,
                                        const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_block_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int64_t b = a->blocksize, n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    /* output viewed as [N, b, b, C, H/b, W/b] (DCR) or [N, C, b, b, H/b, W/b] (CRD) */
    int64_t dcr_dims[6] = {n, b, b, c, h / b, w / b};
    int64_t dcr_stride[6] = {c * h * w, w, 1, h * w, b * w, b};
    int64_t crd_dims[6] = {n, c, b, b, h / b, w / b};
    int64_t crd_stride[6] = {c * h * w, h * w, w, 1, b * w, b};
    const int64_t *dims = a->crd ? crd_dims : dcr_dims;
    const int64_t *stride = a->crd ? crd_stride : dcr_stride;
    strided_copy(out[0].data, x->data, smelt_dtype_size(x->dtype), 6, dims, 0, stride);
    return SMELT_OK;
}

const op_def op_def_SPACE_TO_DEPTH = {
    .compute = block_compute,
    .import = block_import, .infer = space_to_depth_infer, .eval = space_to_depth_eval,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};
