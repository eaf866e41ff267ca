/* Indexing and data movement: Slice, Gather, GatherElements, ScatterND, Pad,
 * Trilu, NonZero, OneHot, DepthToSpace, SpaceToDepth.
 *
 * The kernels move elements as raw bytes (smelt_dtype_size each), so every
 * fixed-size dtype works the same way; only ScatterND's reductions and
 * NonZero's test look at values.
 */
#include <string.h>

#include "ops/data.h"
#include "ops/op.h"

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

/* ---- Slice ------------------------------------------------------------------------ */

/* Per data dim: first element, step and element count of the slice.
 * count is GR_DIM_UNKNOWN (or a symbol) when it cannot be known yet. */
typedef struct slice_plan {
    int64_t start[SMELT_MAX_RANK], step[SMELT_MAX_RANK], count[SMELT_MAX_RANK];
} slice_plan;

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
        stride[d] = p.step[d] * xs[d];
    }
    strided_copy(out[0].data, x->data, smelt_dtype_size(x->dtype), x->rank, out[0].dims, base,
                 stride);
    return SMELT_OK;
}

const op_def op_def_SLICE = {
    .import = slice_import, .infer = slice_infer, .eval = slice_eval,
    .min_inputs = 1, .max_inputs = 5, .min_outputs = 1, .max_outputs = 1,
};

/* ---- Gather ----------------------------------------------------------------------- */

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

const op_def op_def_GATHER = {
    .import = gather_import, .infer = gather_infer, .eval = gather_eval,
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
    .import = gather_import, .infer = gather_elements_infer, .eval = gather_elements_eval,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
};

/* ---- ScatterND ---------------------------------------------------------------------- */

static smelt_status scatter_nd_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    op_scatter_nd_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    const char *s;
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_string(ctx, node, "reduction", "none", &s));
    for (int i = 0; i < (int)SMELT_ARRAY_LEN(names); i++) {
        if (strcmp(s, names[i]) == 0) {
            a->reduction = (op_scatter_reduction)i;
            return SMELT_OK;
        }
    }
    return op_errf(ctx, node, SMELT_ERR_ATTR,
                   "unknown reduction '%s' (expected none, add, mul, max or min)", s);
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

const op_def op_def_SCATTER_ND = {
    .import = scatter_nd_import, .infer = scatter_nd_infer, .eval = scatter_nd_eval,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
};

/* ---- Pad -------------------------------------------------------------------------- */

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
                       "unknown mode '%s' (expected constant, reflect, edge or wrap)", mode);
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

const op_def op_def_PAD = {
    .import = pad_import, .infer = pad_infer, .eval = pad_eval,
    .min_inputs = 1, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
};

/* ---- Trilu ------------------------------------------------------------------------ */

static smelt_status trilu_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_trilu_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    int64_t upper;
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_int(ctx, node, "upper", 1, &upper));
    a->upper = upper != 0;
    return SMELT_OK;
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

const op_def op_def_TRILU = {
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

const op_def op_def_NON_ZERO = {
    .infer = non_zero_infer, .eval = non_zero_eval,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};

/* ---- OneHot ----------------------------------------------------------------------- */

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

const op_def op_def_ONE_HOT = {
    .import = one_hot_import, .infer = one_hot_infer, .eval = one_hot_eval,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
};

/* ---- DepthToSpace / SpaceToDepth --------------------------------------------------- */

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
    if (node->op == OP_DEPTH_TO_SPACE && strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "unknown mode '%s' (expected DCR or CRD)",
                       mode);
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
    int64_t b, c = x->dims[1];
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

const op_def op_def_DEPTH_TO_SPACE = {
    .import = block_import, .infer = depth_to_space_infer, .eval = depth_to_space_eval,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};

static smelt_status space_to_depth_infer(smelt_ctx *ctx, const gr_node *node,
                                         const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    int64_t b;
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
    /* output viewed as [N, b, b, C, H/b, W/b] */
    int64_t dims[6] = {n, b, b, c, h / b, w / b};
    int64_t stride[6] = {c * h * w, w, 1, h * w, b * w, b};
    strided_copy(out[0].data, x->data, smelt_dtype_size(x->dtype), 6, dims, 0, stride);
    return SMELT_OK;
}

const op_def op_def_SPACE_TO_DEPTH = {
    .import = block_import, .infer = space_to_depth_infer, .eval = space_to_depth_eval,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};
