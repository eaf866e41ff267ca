/* Reductions (Reduce*, ArgMax, ArgMin), TopK and CumSum: attribute import,
 * shape inference and reference kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "ops/reduce.h"

/* Axes lists are at most this long (duplicates allowed, so more than rank). */
#define REDUCE_MAX_AXES 64

static const smelt_dtype reduce_dtypes[] = {
    SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_FLOAT16, SMELT_DT_BFLOAT16,
    SMELT_DT_INT8,    SMELT_DT_INT16,   SMELT_DT_INT32,   SMELT_DT_INT64,
    SMELT_DT_UINT8,   SMELT_DT_UINT16,  SMELT_DT_UINT32,  SMELT_DT_UINT64,
    SMELT_DT_UNDEFINED,
};

/* ArgMax/ArgMin/TopK also order bools. */
static const smelt_dtype ordered_dtypes[] = {
    SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_FLOAT16, SMELT_DT_BFLOAT16,
    SMELT_DT_INT8,    SMELT_DT_INT16,   SMELT_DT_INT32,   SMELT_DT_INT64,
    SMELT_DT_UINT8,   SMELT_DT_UINT16,  SMELT_DT_UINT32,  SMELT_DT_UINT64,
    SMELT_DT_BOOL,    SMELT_DT_UNDEFINED,
};

static const char *input_name(const gr_node *node, int i)
{
    return i < node->n_inputs && node->inputs[i] ? node->inputs[i]->name : "?";
}

static bool dtype_is_signed_int(smelt_dtype dt)
{
    return dt == SMELT_DT_INT8 || dt == SMELT_DT_INT16 || dt == SMELT_DT_INT32 ||
           dt == SMELT_DT_INT64;
}

/* Smallest / largest value of an integer dtype, as int64 bits (unsigned
 * maxima wrap, and are compared as unsigned). */
static int64_t int_dtype_min(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_DT_INT8: return INT8_MIN;
    case SMELT_DT_INT16: return INT16_MIN;
    case SMELT_DT_INT32: return INT32_MIN;
    case SMELT_DT_INT64: return INT64_MIN;
    default: return 0;
    }
}

static int64_t int_dtype_max(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_DT_INT8: return INT8_MAX;
    case SMELT_DT_INT16: return INT16_MAX;
    case SMELT_DT_INT32: return INT32_MAX;
    case SMELT_DT_INT64: return INT64_MAX;
    case SMELT_DT_UINT8: return UINT8_MAX;
    case SMELT_DT_UINT16: return UINT16_MAX;
    case SMELT_DT_UINT32: return UINT32_MAX;
    case SMELT_DT_UINT64: return -1; /* UINT64_MAX */
    default: return 1;               /* bool */
    }
}

/* Product of dims [from, to) of a static shape. */
static int64_t dims_product(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= dims[i];
    return p;
}

/* A key whose unsigned order is the value order of element i, for every
 * dtype: floats by sign-magnitude flip (-0 == +0), signed ints by offset.
 * NaN sorts above everything when nan_high, else below everything. */
static uint64_t order_key(const smelt_tensor *t, int64_t i, bool nan_high)
{
    if (op_dtype_is_float(t->dtype)) {
        double d = t->dtype == SMELT_DT_FLOAT32 ? ((const float *)t->data)[i] : op_get_f64(t, i);
        if (isnan(d)) return nan_high ? UINT64_MAX : 0;
        if (d == 0) d = 0;
        uint64_t b;
        memcpy(&b, &d, sizeof b);
        return (b >> 63) ? ~b : b | (1ull << 63);
    }
    uint64_t u = (uint64_t)op_get_i64(t, i);
    return dtype_is_signed_int(t->dtype) ? u ^ (1ull << 63) : u;
}

/* ======================================================================
 * Reduce*
 * ====================================================================== */

typedef enum reduce_kind {
    RK_SUM,
    RK_MEAN,
    RK_MAX,
    RK_MIN,
    RK_PROD,
    RK_L1,
    RK_L2,
    RK_SUM_SQUARE,
    RK_LOG_SUM,
    RK_LOG_SUM_EXP,
    RK_SUM_EXP, /* internal: second pass of LogSumExp, sum of exp(x - shift) */
} reduce_kind;

static reduce_kind reduce_kind_of(op_kind op)
{
    switch (op) {
    case OP_REDUCE_MEAN: return RK_MEAN;
    case OP_REDUCE_MAX: return RK_MAX;
    case OP_REDUCE_MIN: return RK_MIN;
    case OP_REDUCE_PROD: return RK_PROD;
    case OP_REDUCE_L1: return RK_L1;
    case OP_REDUCE_L2: return RK_L2;
    case OP_REDUCE_SUM_SQUARE: return RK_SUM_SQUARE;
    case OP_REDUCE_LOG_SUM: return RK_LOG_SUM;
    case OP_REDUCE_LOG_SUM_EXP: return RK_LOG_SUM_EXP;
    default: return RK_SUM;
    }
}

static const op_reduce_attrs *reduce_attrs(const gr_node *node)
{
    static const op_reduce_attrs defaults = {.keepdims = true};
    return node->op_attrs ? node->op_attrs : &defaults;
}

static smelt_status reduce_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    int64_t keepdims, noop;
    SMELT_TRY(op_attr_int(ctx, node, "keepdims", 1, &keepdims));
    SMELT_TRY(op_attr_int(ctx, node, "noop_with_empty_axes", 0, &noop));
    op_reduce_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    a->keepdims = keepdims != 0;
    a->noop_with_empty_axes = noop != 0;
    /* axes became an input at opset 13 for ReduceSum, 18 for the others */
    int axes_input_opset = node->op == OP_REDUCE_SUM ? 13 : 18;
    if (g->opset < axes_input_opset) {
        int n;
        const int64_t *axes;
        SMELT_TRY(op_attr_ints(ctx, node, "axes", &n, &axes));
        if (n > 0) SMELT_TRY(op_set_input_ints(ctx, g, node, 1, axes, n));
    }
    return SMELT_OK;
}

typedef struct reduce_plan {
    bool noop;                 /* output = input */
    bool mask[SMELT_MAX_RANK]; /* axes reduced */
} reduce_plan;

/* The axes input counts as empty when its shape says so, even without data. */
static bool axes_empty(const smelt_tensor *axes)
{
    return !axes || (op_dims_static(axes) && op_numel(axes) == 0);
}

static smelt_status reduce_plan_make(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                     const smelt_tensor *axes, reduce_plan *p)
{
    memset(p, 0, sizeof *p);
    if (axes_empty(axes)) {
        p->noop = reduce_attrs(node)->noop_with_empty_axes;
        for (int i = 0; i < x->rank; i++) p->mask[i] = !p->noop;
        return SMELT_OK;
    }
    char what[160];
    snprintf(what, sizeof what, "axes input '%s'", input_name(node, 1));
    int64_t vals[REDUCE_MAX_AXES];
    int n;
    SMELT_TRY(op_read_ints(ctx, node, axes, what, vals, REDUCE_MAX_AXES, &n));
    for (int k = 0; k < n; k++) {
        int ax;
        SMELT_TRY(op_norm_axis(ctx, node, vals[k], x->rank, &ax));
        p->mask[ax] = true;
    }
    return SMELT_OK;
}

/* Axes without data at compile time: the rank may still be known. */
static smelt_status reduce_infer_unknown_axes(smelt_ctx *ctx, const gr_node *node,
                                              const smelt_tensor *x, const smelt_tensor *axes,
                                              smelt_tensor *out)
{
    int rank = x->rank;
    if (!reduce_attrs(node)->keepdims) {
        if (!op_dims_static(axes) || op_numel(axes) > x->rank)
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "axes input '%s' must be known at compile time when keepdims=0",
                           input_name(node, 1));
        rank = x->rank - (int)op_numel(axes);
    }
    out->rank = rank;
    for (int i = 0; i < rank; i++)
        out->dims[i] = rank == x->rank && x->dims[i] == 1 ? 1 : GR_DIM_UNKNOWN;
    return SMELT_OK;
}

static smelt_status reduce_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *axes = op_input(node, in, 1);
    char what[160];
    snprintf(what, sizeof what, "input '%s'", input_name(node, 0));
    SMELT_TRY(op_check_dtype(ctx, node, x, what, reduce_dtypes));
    out[0].dtype = x->dtype;
    if (!axes_empty(axes) && !axes->data)
        return reduce_infer_unknown_axes(ctx, node, x, axes, &out[0]);
    reduce_plan p;
    SMELT_TRY(reduce_plan_make(ctx, node, x, axes, &p));
    bool keep = reduce_attrs(node)->keepdims;
    int r = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!p.mask[i])
            out[0].dims[r++] = x->dims[i];
        else if (keep)
            out[0].dims[r++] = 1;
    }
    out[0].rank = r;
    return SMELT_OK;
}

/* Walks x row by row (runs along its last axis) and calls combine on each
 * row with the output offset of its first element; ostr maps an input axis
 * to its output stride (0 on reduced axes). */
typedef struct reduce_walk {
    const smelt_tensor *x;
    int64_t ostr[SMELT_MAX_RANK];
    int64_t row_len, row_ostride;
} reduce_walk;

static void reduce_walk_init(reduce_walk *w, const smelt_tensor *x, const reduce_plan *p)
{
    w->x = x;
    int64_t s = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        w->ostr[i] = p->mask[i] ? 0 : s;
        if (!p->mask[i]) s *= x->dims[i];
    }
    w->row_len = x->rank ? x->dims[x->rank - 1] : 1;
    w->row_ostride = x->rank ? w->ostr[x->rank - 1] : 0;
}

/* Advance the outer (all but last axis) odometer; updates the output offset. */
static void reduce_walk_next(const reduce_walk *w, int64_t *idx, int64_t *ooff)
{
    for (int i = w->x->rank - 2; i >= 0; i--) {
        *ooff += w->ostr[i];
        if (++idx[i] < w->x->dims[i]) return;
        *ooff -= w->ostr[i] * w->x->dims[i];
        idx[i] = 0;
    }
}

static void load_row_f64(const smelt_tensor *x, int64_t start, int64_t n, double *row)
{
    if (x->dtype == SMELT_DT_FLOAT32) {
        const float *src = (const float *)x->data + start;
        for (int64_t j = 0; j < n; j++) row[j] = src[j];
    } else {
        for (int64_t j = 0; j < n; j++) row[j] = op_get_f64(x, start + j);
    }
}

/* acc[j*s] (+)= row[j] for one row; shift is LogSumExp's per-output max. */
static void combine_row_f64(reduce_kind k, double *acc, int64_t s, const double *row, int64_t n,
                            const double *shift)
{
    switch (k) {
    case RK_SUM:
    case RK_MEAN:
    case RK_LOG_SUM:
        for (int64_t j = 0; j < n; j++) acc[j * s] += row[j];
        break;
    case RK_L1:
        for (int64_t j = 0; j < n; j++) acc[j * s] += fabs(row[j]);
        break;
    case RK_L2:
    case RK_SUM_SQUARE:
        for (int64_t j = 0; j < n; j++) acc[j * s] += row[j] * row[j];
        break;
    case RK_PROD:
        for (int64_t j = 0; j < n; j++) acc[j * s] *= row[j];
        break;
    case RK_MAX:
    case RK_LOG_SUM_EXP: /* first pass: the max */
        for (int64_t j = 0; j < n; j++)
            if (row[j] > acc[j * s] || isnan(row[j])) acc[j * s] = row[j];
        break;
    case RK_MIN:
        for (int64_t j = 0; j < n; j++)
            if (row[j] < acc[j * s] || isnan(row[j])) acc[j * s] = row[j];
        break;
    case RK_SUM_EXP:
        for (int64_t j = 0; j < n; j++) {
            double m = shift[j * s];
            acc[j * s] += exp(row[j] - (isfinite(m) ? m : 0.0));
        }
        break;
    }
}

static void reduce_pass_f64(const reduce_walk *w, reduce_kind k, double *acc, double *row,
                            const double *shift)
{
    int64_t numel = op_numel(w->x);
    int64_t rows = w->row_len ? numel / w->row_len : 0;
    int64_t idx[SMELT_MAX_RANK] = {0}, ooff = 0;
    for (int64_t r = 0; r < rows; r++) {
        load_row_f64(w->x, r * w->row_len, w->row_len, row);
        combine_row_f64(k, acc + ooff, w->row_ostride, row, w->row_len,
                        shift ? shift + ooff : NULL);
        reduce_walk_next(w, idx, &ooff);
    }
}

static double reduce_init_f64(reduce_kind k)
{
    switch (k) {
    case RK_PROD: return 1.0;
    case RK_MAX:
    case RK_LOG_SUM_EXP: return -INFINITY;
    case RK_MIN: return INFINITY;
    default: return 0.0;
    }
}

static double reduce_finish_f64(reduce_kind k, double acc, double shift, int64_t count)
{
    switch (k) {
    case RK_MEAN: return acc / (double)count;
    case RK_L2: return sqrt(acc);
    case RK_LOG_SUM: return log(acc);
    case RK_LOG_SUM_EXP: return isfinite(shift) ? log(acc) + shift : shift;
    default: return acc;
    }
}

static smelt_status reduce_eval_f64(smelt_ctx *ctx, const gr_node *node, const reduce_walk *w,
                                    reduce_kind k, int64_t count, smelt_tensor *out)
{
    int64_t n_out = op_numel(out);
    bool lse = k == RK_LOG_SUM_EXP;
    double *acc = smelt_alloc((size_t)n_out * sizeof(double));
    double *shift = lse ? smelt_alloc((size_t)n_out * sizeof(double)) : NULL;
    double *row = smelt_alloc((size_t)(w->row_len ? w->row_len : 1) * sizeof(double));
    if (!acc || !row || (lse && !shift)) {
        smelt_free(acc);
        smelt_free(shift);
        smelt_free(row);
        return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory for the reduction");
    }
    double init = reduce_init_f64(k);
    for (int64_t o = 0; o < n_out; o++) acc[o] = init;
    reduce_pass_f64(w, k, acc, row, NULL);
    if (lse) {
        memcpy(shift, acc, (size_t)n_out * sizeof(double));
        for (int64_t o = 0; o < n_out; o++) acc[o] = 0.0;
        reduce_pass_f64(w, RK_SUM_EXP, acc, row, shift);
    }
    for (int64_t o = 0; o < n_out; o++) {
        double v = reduce_finish_f64(k, acc[o], lse ? shift[o] : 0.0, count);
        if (out->dtype == SMELT_DT_FLOAT32)
            ((float *)out->data)[o] = (float)v;
        else
            op_set_f64(out, o, v);
    }
    smelt_free(acc);
    smelt_free(shift);
    smelt_free(row);
    return SMELT_OK;
}

/* Integer reductions: exact int64 accumulation with wrap-around (unsigned
 * arithmetic), comparisons signed or unsigned per dtype. */
static void combine_i64(reduce_kind k, bool is_signed, int64_t *acc, int64_t v)
{
    uint64_t a = (uint64_t)*acc, u = (uint64_t)v;
    switch (k) {
    case RK_PROD: a *= u; break;
    case RK_L1: a += is_signed && v < 0 ? 0 - u : u; break;
    case RK_SUM_SQUARE: a += u * u; break;
    case RK_MAX:
        if (is_signed ? v > *acc : u > a) a = u;
        break;
    case RK_MIN:
        if (is_signed ? v < *acc : u < a) a = u;
        break;
    default: a += u; break; /* sum, mean */
    }
    *acc = (int64_t)a;
}

static smelt_status reduce_eval_i64(smelt_ctx *ctx, const gr_node *node, const reduce_walk *w,
                                    reduce_kind k, int64_t count, smelt_tensor *out)
{
    const smelt_tensor *x = w->x;
    int64_t n_out = op_numel(out);
    int64_t *acc = smelt_alloc((size_t)n_out * sizeof(int64_t));
    if (!acc) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory for the reduction");
    int64_t init = k == RK_PROD  ? 1
                   : k == RK_MAX ? int_dtype_min(x->dtype)
                   : k == RK_MIN ? int_dtype_max(x->dtype)
                                 : 0;
    for (int64_t o = 0; o < n_out; o++) acc[o] = init;
    bool is_signed = dtype_is_signed_int(x->dtype);
    int64_t numel = op_numel(x);
    int64_t rows = w->row_len ? numel / w->row_len : 0;
    int64_t idx[SMELT_MAX_RANK] = {0}, ooff = 0;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < w->row_len; j++)
            combine_i64(k, is_signed, &acc[ooff + j * w->row_ostride],
                        op_get_i64(x, r * w->row_len + j));
        reduce_walk_next(w, idx, &ooff);
    }
    for (int64_t o = 0; o < n_out; o++) {
        int64_t v = acc[o];
        if (k == RK_MEAN)
            v = count == 0 ? 0 : is_signed ? v / count : (int64_t)((uint64_t)v / (uint64_t)count);
        op_set_i64(out, o, v);
    }
    smelt_free(acc);
    return SMELT_OK;
}

static smelt_status reduce_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    reduce_plan p;
    SMELT_TRY(reduce_plan_make(ctx, node, x, op_input(node, in, 1), &p));
    if (p.noop) {
        size_t nbytes = smelt_tensor_nbytes(x);
        if (nbytes) memcpy(out[0].data, x->data, nbytes);
        return SMELT_OK;
    }
    if (op_numel(&out[0]) == 0) return SMELT_OK;
    int64_t count = 1; /* elements folded into each output */
    for (int i = 0; i < x->rank; i++)
        if (p.mask[i]) count *= x->dims[i];
    reduce_walk w;
    reduce_walk_init(&w, x, &p);
    reduce_kind k = reduce_kind_of(node->op);
    bool exact_int = !op_dtype_is_float(x->dtype) && k != RK_L2 && k != RK_LOG_SUM &&
                     k != RK_LOG_SUM_EXP;
    return exact_int ? reduce_eval_i64(ctx, node, &w, k, count, &out[0])
                     : reduce_eval_f64(ctx, node, &w, k, count, &out[0]);
}

#define REDUCE_DEF                                                                       \
    {                                                                                    \
        .import = reduce_import, .infer = reduce_infer, .eval = reduce_eval,             \
        .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,            \
    }
const op_def op_def_REDUCE_MEAN = REDUCE_DEF;
const op_def op_def_REDUCE_SUM = REDUCE_DEF;
const op_def op_def_REDUCE_MAX = REDUCE_DEF;
const op_def op_def_REDUCE_MIN = REDUCE_DEF;
const op_def op_def_REDUCE_PROD = REDUCE_DEF;
const op_def op_def_REDUCE_L1 = REDUCE_DEF;
const op_def op_def_REDUCE_L2 = REDUCE_DEF;
const op_def op_def_REDUCE_SUM_SQUARE = REDUCE_DEF;
const op_def op_def_REDUCE_LOG_SUM = REDUCE_DEF;
const op_def op_def_REDUCE_LOG_SUM_EXP = REDUCE_DEF;

/* ======================================================================
 * ArgMax, ArgMin
 * ====================================================================== */

static const op_arg_reduce_attrs *arg_attrs(const gr_node *node)
{
    static const op_arg_reduce_attrs defaults = {.keepdims = true};
    return node->op_attrs ? node->op_attrs : &defaults;
}

static smelt_status arg_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    int64_t axis, keepdims, last;
    SMELT_TRY(op_attr_int(ctx, node, "axis", 0, &axis));
    SMELT_TRY(op_attr_int(ctx, node, "keepdims", 1, &keepdims));
    SMELT_TRY(op_attr_int(ctx, node, "select_last_index", 0, &last));
    op_arg_reduce_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    a->axis = axis;
    a->keepdims = keepdims != 0;
    a->select_last_index = last != 0;
    return SMELT_OK;
}

static smelt_status arg_infer(smelt_ctx *ctx, const gr_node *node,
                              const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_arg_reduce_attrs *a = arg_attrs(node);
    const smelt_tensor *x = in[0];
    char what[160];
    snprintf(what, sizeof what, "input '%s'", input_name(node, 0));
    SMELT_TRY(op_check_dtype(ctx, node, x, what, ordered_dtypes));
    if (x->rank < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' is a scalar, expected rank >= 1",
                       input_name(node, 0));
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &axis));
    out[0].dtype = SMELT_DT_INT64;
    int r = 0;
    for (int i = 0; i < x->rank; i++) {
        if (i != axis)
            out[0].dims[r++] = x->dims[i];
        else if (a->keepdims)
            out[0].dims[r++] = 1;
    }
    out[0].rank = r;
    return SMELT_OK;
}

static smelt_status arg_eval(smelt_ctx *ctx, const gr_node *node,
                             const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_arg_reduce_attrs *a = arg_attrs(node);
    const smelt_tensor *x = in[0];
    bool is_max = node->op == OP_ARG_MAX;
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &axis));
    int64_t outer = dims_product(x->dims, 0, axis), n = x->dims[axis];
    int64_t inner = dims_product(x->dims, axis + 1, x->rank);
    if (n == 0 && outer * inner > 0)
        return op_errf(ctx, node, SMELT_ERR_RUNTIME, "cannot take the %s of an empty axis %d",
                       is_max ? "argmax" : "argmin", axis);
    int64_t *dst = out[0].data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i, best_k = 0;
            uint64_t best = order_key(x, base, is_max);
            for (int64_t k = 1; k < n; k++) {
                uint64_t key = order_key(x, base + k * inner, is_max);
                bool better = is_max ? key > best : key < best;
                if (better || (a->select_last_index && key == best)) {
                    best = key;
                    best_k = k;
                }
            }
            dst[o * inner + i] = best_k;
        }
    }
    return SMELT_OK;
}

#define ARG_DEF                                                                          \
    {                                                                                    \
        .import = arg_import, .infer = arg_infer, .eval = arg_eval, .min_inputs = 1,     \
        .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,                             \
    }
const op_def op_def_ARG_MAX = ARG_DEF;
const op_def op_def_ARG_MIN = ARG_DEF;

/* ======================================================================
 * TopK
 * ====================================================================== */

static const op_topk_attrs *topk_attrs(const gr_node *node)
{
    static const op_topk_attrs defaults = {.axis = -1, .largest = true, .sorted = true};
    return node->op_attrs ? node->op_attrs : &defaults;
}

static smelt_status topk_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    int64_t axis, largest, sorted;
    SMELT_TRY(op_attr_int(ctx, node, "axis", -1, &axis));
    SMELT_TRY(op_attr_int(ctx, node, "largest", 1, &largest));
    SMELT_TRY(op_attr_int(ctx, node, "sorted", 1, &sorted));
    op_topk_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    a->axis = axis;
    a->largest = largest != 0;
    a->sorted = sorted != 0;
    if (g->opset < 10) { /* k was an attribute before opset 10 */
        if (!gr_node_attr(node, "k"))
            return op_errf(ctx, node, SMELT_ERR_ATTR, "missing required attribute 'k'");
        int64_t k;
        SMELT_TRY(op_attr_int(ctx, node, "k", 0, &k));
        SMELT_TRY(op_set_input_ints(ctx, g, node, 1, &k, 1));
    }
    return SMELT_OK;
}

/* k from the K input; *known false when its data is not available yet. */
static smelt_status topk_read_k(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *kt,
                                int64_t dim, int64_t *k, bool *known)
{
    *known = false;
    if (!kt) return op_errf(ctx, node, SMELT_ERR_MODEL, "input 'K' is missing");
    if (!kt->data) return SMELT_OK;
    char what[160];
    snprintf(what, sizeof what, "input K '%s'", input_name(node, 1));
    int n;
    SMELT_TRY(op_read_ints(ctx, node, kt, what, k, 1, &n));
    if (n != 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "%s must hold exactly one value, got %d",
                       what, n);
    if (*k < 0 || (dim >= 0 && *k > dim))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "k = %lld is out of range [0, %lld]",
                       (long long)*k, (long long)dim);
    *known = true;
    return SMELT_OK;
}

static smelt_status topk_infer(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    char what[160];
    snprintf(what, sizeof what, "input '%s'", input_name(node, 0));
    SMELT_TRY(op_check_dtype(ctx, node, x, what, ordered_dtypes));
    if (x->rank < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' is a scalar, expected rank >= 1",
                       input_name(node, 0));
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, topk_attrs(node)->axis, x->rank, &axis));
    int64_t k;
    bool known;
    SMELT_TRY(topk_read_k(ctx, node, op_input(node, in, 1), x->dims[axis], &k, &known));
    for (int o = 0; o < node->n_outputs && o < 2; o++) {
        op_copy_shape(&out[o], x);
        out[o].dims[axis] = known ? k : GR_DIM_UNKNOWN;
    }
    if (node->n_outputs > 1) out[1].dtype = SMELT_DT_INT64;
    return SMELT_OK;
}

typedef struct topk_item {
    uint64_t key; /* ascending = the order wanted */
    int64_t idx;
} topk_item;

static int topk_item_cmp(const void *pa, const void *pb)
{
    const topk_item *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static smelt_status topk_eval(smelt_ctx *ctx, const gr_node *node,
                              const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_topk_attrs *a = topk_attrs(node);
    const smelt_tensor *x = in[0];
    int axis;
    SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &axis));
    int64_t n = x->dims[axis], k;
    bool known;
    SMELT_TRY(topk_read_k(ctx, node, op_input(node, in, 1), n, &k, &known));
    int64_t outer = dims_product(x->dims, 0, axis);
    int64_t inner = dims_product(x->dims, axis + 1, x->rank);
    if (k == 0 || outer * inner == 0) return SMELT_OK;
    topk_item *items = smelt_alloc((size_t)n * sizeof *items);
    if (!items) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory for TopK");
    size_t es = smelt_dtype_size(x->dtype);
    char *values = out[0].data;
    int64_t *indices = node->n_outputs > 1 ? out[1].data : NULL;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            for (int64_t j = 0; j < n; j++) {
                uint64_t key = order_key(x, base + j * inner, true);
                items[j].key = a->largest ? ~key : key;
                items[j].idx = j;
            }
            /* sorted=0 leaves the order free; sorting anyway is deterministic */
            qsort(items, (size_t)n, sizeof *items, topk_item_cmp);
            for (int64_t j = 0; j < k; j++) {
                int64_t dst = (o * k + j) * inner + i, src = base + items[j].idx * inner;
                if (values)
                    memcpy(values + dst * (int64_t)es, (const char *)x->data + src * (int64_t)es,
                           es);
                if (indices) indices[dst] = items[j].idx;
            }
        }
    }
    smelt_free(items);
    return SMELT_OK;
}

const op_def op_def_TOP_K = {
    .import = topk_import, .infer = topk_infer, .eval = topk_eval,
    .min_inputs = 1,       .max_inputs = 2,     .min_outputs = 1, .max_outputs = 2,
};

/* ======================================================================
 * CumSum
 * ====================================================================== */

static const smelt_dtype cumsum_dtypes[] = {
    SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_FLOAT16, SMELT_DT_BFLOAT16,
    SMELT_DT_INT32,   SMELT_DT_INT64,   SMELT_DT_UINT32,  SMELT_DT_UINT64,
    SMELT_DT_UNDEFINED,
};

static const op_cumsum_attrs *cumsum_attrs(const gr_node *node)
{
    static const op_cumsum_attrs defaults = {0};
    return node->op_attrs ? node->op_attrs : &defaults;
}

static smelt_status cumsum_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    int64_t exclusive, reverse;
    SMELT_TRY(op_attr_int(ctx, node, "exclusive", 0, &exclusive));
    SMELT_TRY(op_attr_int(ctx, node, "reverse", 0, &reverse));
    op_cumsum_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    a->exclusive = exclusive != 0;
    a->reverse = reverse != 0;
    return SMELT_OK;
}

static smelt_status cumsum_axis(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                const smelt_tensor *at, int *axis)
{
    if (!at) return op_errf(ctx, node, SMELT_ERR_MODEL, "input 'axis' is missing");
    char what[160];
    snprintf(what, sizeof what, "axis input '%s'", input_name(node, 1));
    int64_t v;
    int n;
    SMELT_TRY(op_read_ints(ctx, node, at, what, &v, 1, &n));
    if (n != 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "%s must hold exactly one value", what);
    return op_norm_axis(ctx, node, v, x->rank, axis);
}

static smelt_status cumsum_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0], *at = op_input(node, in, 1);
    char what[160];
    snprintf(what, sizeof what, "input '%s'", input_name(node, 0));
    SMELT_TRY(op_check_dtype(ctx, node, x, what, cumsum_dtypes));
    if (x->rank < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' is a scalar, expected rank >= 1",
                       input_name(node, 0));
    if (!at) return op_errf(ctx, node, SMELT_ERR_MODEL, "input 'axis' is missing");
    if (at->data) {
        int axis;
        SMELT_TRY(cumsum_axis(ctx, node, x, at, &axis));
    }
    op_copy_shape(&out[0], x);
    return SMELT_OK;
}

static smelt_status cumsum_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_cumsum_attrs *a = cumsum_attrs(node);
    const smelt_tensor *x = in[0];
    int axis;
    SMELT_TRY(cumsum_axis(ctx, node, x, op_input(node, in, 1), &axis));
    int64_t outer = dims_product(x->dims, 0, axis), n = x->dims[axis];
    int64_t inner = dims_product(x->dims, axis + 1, x->rank);
    bool is_float = op_dtype_is_float(x->dtype);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            double facc = 0.0;
            uint64_t iacc = 0; /* wraps like the integer dtype would */
            for (int64_t t = 0; t < n; t++) {
                int64_t j = a->reverse ? n - 1 - t : t;
                int64_t off = (o * n + j) * inner + i;
                if (is_float) {
                    double v = op_get_f64(x, off);
                    if (!a->exclusive) facc += v;
                    op_set_f64(&out[0], off, facc);
                    if (a->exclusive) facc += v;
                } else {
                    uint64_t v = (uint64_t)op_get_i64(x, off);
                    if (!a->exclusive) iacc += v;
                    op_set_i64(&out[0], off, (int64_t)iacc);
                    if (a->exclusive) iacc += v;
                }
            }
        }
    }
    return SMELT_OK;
}

const op_def op_def_CUM_SUM = {
    .import = cumsum_import, .infer = cumsum_infer, .eval = cumsum_eval,
    .min_inputs = 2,         .max_inputs = 2,       .min_outputs = 1, .max_outputs = 1,
};
