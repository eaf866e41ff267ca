/* Reductions (Reduce*, ArgMax, ArgMin), TopK and CumSum: attribute import,
 * shape inference and reference kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "te/te.h"

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
 * Compute helpers (te)
 * ====================================================================== */

/* At most this many candidate results chosen among at run time (readings
 * of run-time Reduce axes; CumSum's axes). */
#define REDUCE_MAX_CHOICES 16
_Static_assert(SMELT_MAX_RANK <= REDUCE_MAX_CHOICES, "CumSum offers one choice per axis");

/* The static type of a te tensor, for the shape helpers of this file. */
static smelt_tensor tensor_type_of(const te_tensor *t)
{
    smelt_tensor r = {.dtype = t->buf->dtype, .rank = t->buf->rank};
    for (int d = 0; d < r.rank; d++) r.dims[d] = t->buf->shape[d];
    return r;
}

static smelt_status compute_status(const op_compute_args *a, const te_tensor *t)
{
    if (t) return SMELT_OK;
    smelt_status s = smelt_ctx_status(a->ctx);
    return s != SMELT_OK ? s : op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
}

/* float16/bfloat16 accumulate in float32: rounding each partial sum to 16
 * bits would lose the result. */
static smelt_dtype float_acc_dtype(smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16 ? SMELT_DT_FLOAT32 : dt;
}

static ir_expr *zero_of(ir_builder *b, smelt_dtype dt)
{
    return op_dtype_is_float(dt) ? ir_const_float(b, dt, 0.0) : ir_const_int(b, dt, 0);
}

static ir_expr *is_finite(ir_builder *b, ir_expr *v)
{
    ir_expr *inf = ir_call(b, IR_CALL_ISINF, SMELT_DT_BOOL, 1, &v);
    ir_expr *nan = ir_call(b, IR_CALL_ISNAN, SMELT_DT_BOOL, 1, &v);
    return ir_not(b, ir_binary(b, IR_OR, inf, nan));
}

/* Element i of a rank-0 or 1-D integer input, as int64. */
static ir_expr *read_i64(te_graph *g, const te_tensor *t, int64_t i)
{
    ir_expr *at = ir_int(&g->b, i);
    return ir_cast(&g->b, SMELT_DT_INT64, te_read(g, t, &at));
}

/* The axis value `v` (maybe negative) names axis d of a rank-`rank` tensor. */
static ir_expr *names_axis(ir_builder *b, ir_expr *v, int d, int rank)
{
    return ir_binary(b, IR_OR, ir_binary(b, IR_EQ, v, ir_int(b, d)),
                     ir_binary(b, IR_EQ, v, ir_int(b, d - rank)));
}

static void stage_name(char *buf, size_t size, const char *base, const char *suffix)
{
    snprintf(buf, size, "%s%s", base, suffix);
}

/* A choice among same-typed tensors made at run time: choice[i] where
 * cond[i] holds first, else the last one.  Used when a shape-giving input
 * (axes, axis) is known only at run time. */
typedef struct choice_set {
    te_tensor *choice[REDUCE_MAX_CHOICES];
    ir_expr *cond[REDUCE_MAX_CHOICES];
    int n;
} choice_set;

static ir_expr *choice_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const choice_set *c = user;
    ir_expr *e = te_read(g, c->choice[c->n - 1], idx);
    for (int i = c->n - 2; i >= 0; i--)
        e = ir_select(&g->b, c->cond[i], te_read(g, c->choice[i], idx), e);
    return e;
}

static te_tensor *choice_compute(op_compute_args *a, choice_set *c)
{
    const smelt_tensor *ot = &a->out_type[0];
    return te_compute(a->te, "y", ot->dtype, ot->rank, ot->dims, choice_body, c, "injective");
}

/* How a reduction's output reads x: per x axis, reduced (read at a reduce
 * axis) or kept (read at output axis out_axis). */
typedef struct reduce_map {
    int rank; /* x's */
    bool reduced[SMELT_MAX_RANK];
    int out_axis[SMELT_MAX_RANK];
} reduce_map;

static void reduce_map_init(reduce_map *m, int rank, const bool *mask, bool keepdims)
{
    m->rank = rank;
    for (int d = 0, o = 0; d < rank; d++) {
        m->reduced[d] = mask[d];
        m->out_axis[d] = keepdims ? d : mask[d] ? -1 : o++;
    }
}

/* One reduce axis per reduced x axis (r0, r1, ...); returns their count. */
static int reduce_map_axes(te_graph *g, const reduce_map *m, const int64_t *xdims, ir_axis *red)
{
    int n = 0;
    for (int d = 0; d < m->rank; d++) {
        if (!m->reduced[d]) continue;
        char name[16];
        snprintf(name, sizeof name, "r%d", n);
        red[n++] = te_reduce_axis(g, name, xdims[d]);
    }
    return n;
}

/* x at output index idx, its reduced axes at the reduce axes red. */
static ir_expr *reduce_map_read(te_graph *g, const te_tensor *x, const reduce_map *m,
                                ir_expr *const *idx, const ir_axis *red)
{
    ir_expr *xi[SMELT_MAX_RANK];
    for (int d = 0, r = 0; d < m->rank; d++)
        xi[d] = m->reduced[d] ? ir_var_ref(&g->b, red[r++].var) : idx[m->out_axis[d]];
    return te_read(g, x, xi);
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

/* axes became an input at opset 13 for ReduceSum, 18 for the others */
#define REDUCE_ATTRS(AXES_UNTIL) {"keepdims", 0, 0}, {"axes", 0, AXES_UNTIL}, \
    {"noop_with_empty_axes", AXES_UNTIL + 1, 0}, {NULL, 0, 0}
OP_ATTRS(REDUCE_SUM) = {REDUCE_ATTRS(12)};
OP_ATTRS(REDUCE_MEAN) = {REDUCE_ATTRS(17)};
OP_ATTRS(REDUCE_MAX) = {REDUCE_ATTRS(17)};
OP_ATTRS(REDUCE_MIN) = {REDUCE_ATTRS(17)};
OP_ATTRS(REDUCE_PROD) = {REDUCE_ATTRS(17)};
OP_ATTRS(REDUCE_L1) = {REDUCE_ATTRS(17)};
OP_ATTRS(REDUCE_L2) = {REDUCE_ATTRS(17)};
OP_ATTRS(REDUCE_SUM_SQUARE) = {REDUCE_ATTRS(17)};
OP_ATTRS(REDUCE_LOG_SUM) = {REDUCE_ATTRS(17)};
OP_ATTRS(REDUCE_LOG_SUM_EXP) = {REDUCE_ATTRS(17)};
#undef REDUCE_ATTRS

static smelt_status reduce_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_reduce_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_bool(ctx, node, "keepdims", true, &a->keepdims));
    SMELT_TRY(op_attr_bool(ctx, node, "noop_with_empty_axes", false, &a->noop_with_empty_axes));
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
    /* bools have a maximum and a minimum (any, all), not the other reductions */
    bool ordered = node->op == OP_REDUCE_MAX || node->op == OP_REDUCE_MIN;
    SMELT_TRY(op_check_dtype(ctx, node, x, what, ordered ? ordered_dtypes : reduce_dtypes));
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

/* ---- Reduce* compute ---------------------------------------------------------
 * One reduce stage over the reduced axes, then an elementwise finish (mean,
 * sqrt, log, or the cast back from the accumulation dtype) where needed.
 * LogSumExp is max, then sum(exp(x - max)), then log(sum) + max. */

typedef struct reduce_stage {
    const te_tensor *x;
    const reduce_map *map;
    reduce_kind kind; /* what each element contributes */
    ir_reduce_op op;
    smelt_dtype acc;        /* accumulation dtype */
    const te_tensor *shift; /* RK_SUM_EXP: the per-output max */
} reduce_stage;

typedef struct reduce_finish {
    const te_tensor *acc, *shift;
    reduce_kind kind;
    int64_t count;   /* elements folded into each output */
    smelt_dtype out; /* the output's dtype */
} reduce_finish;

/* Integers accumulate in their own dtype (wrapping as the reference does),
 * except where the reference leaves the integers (L2, logs: float64) or
 * divides afterwards (mean: int64, so the sum does not wrap first). */
static smelt_dtype reduce_acc_dtype(reduce_kind k, smelt_dtype dt)
{
    if (op_dtype_is_float(dt)) return float_acc_dtype(dt);
    if (dt == SMELT_DT_BOOL) return SMELT_DT_UINT8; /* max/min: the identities 0 and 255 */
    if (k == RK_L2 || k == RK_LOG_SUM || k == RK_LOG_SUM_EXP) return SMELT_DT_FLOAT64;
    if (k == RK_MEAN && dt != SMELT_DT_UINT64) return SMELT_DT_INT64;
    return dt;
}

static ir_reduce_op reduce_op_of(reduce_kind k)
{
    switch (k) {
    case RK_PROD: return IR_REDUCE_PROD;
    case RK_MAX:
    case RK_LOG_SUM_EXP: return IR_REDUCE_MAX;
    case RK_MIN: return IR_REDUCE_MIN;
    default: return IR_REDUCE_SUM;
    }
}

/* What element v contributes, in the accumulation dtype. */
static ir_expr *reduce_term(te_graph *g, const reduce_stage *s, ir_expr *v, ir_expr *const *idx)
{
    ir_builder *b = &g->b;
    v = ir_cast(b, s->acc, v);
    switch (s->kind) {
    case RK_L1: return ir_call(b, IR_CALL_ABS, s->acc, 1, &v);
    case RK_L2:
    case RK_SUM_SQUARE: return ir_mul(b, v, v);
    case RK_SUM_EXP: {
        /* an infinite max (all -inf, or +inf present) shifts by 0, as the reference */
        ir_expr *m = te_read(g, s->shift, idx);
        ir_expr *shift = ir_select(b, is_finite(b, m), m, zero_of(b, s->acc));
        ir_expr *d = ir_sub(b, v, shift);
        return ir_call(b, IR_CALL_EXP, s->acc, 1, &d);
    }
    default: return v;
    }
}

static ir_expr *reduce_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const reduce_stage *s = user;
    ir_axis red[SMELT_MAX_RANK];
    int n = reduce_map_axes(g, s->map, s->x->buf->shape, red);
    ir_expr *term = reduce_term(g, s, reduce_map_read(g, s->x, s->map, idx, red), idx);
    return n ? te_reduce(g, s->op, term, n, red) : term;
}

static ir_expr *reduce_finish_value(te_graph *g, const reduce_finish *f, ir_expr *const *idx)
{
    ir_builder *b = &g->b;
    ir_expr *a = te_read(g, f->acc, idx);
    if (!a) return NULL;
    smelt_dtype dt = a->dtype;
    switch (f->kind) {
    case RK_MEAN:
        if (op_dtype_is_float(dt))
            return ir_binary(b, IR_DIV, a, ir_const_float(b, dt, (double)f->count));
        if (f->count == 0) return ir_const_int(b, dt, 0);
        return ir_binary(b, IR_DIV, a, ir_const_int(b, dt, f->count));
    case RK_L2: return ir_call(b, IR_CALL_SQRT, dt, 1, &a);
    case RK_LOG_SUM: return ir_call(b, IR_CALL_LOG, dt, 1, &a);
    case RK_LOG_SUM_EXP: {
        ir_expr *m = te_read(g, f->shift, idx);
        ir_expr *lse = ir_add(b, ir_call(b, IR_CALL_LOG, dt, 1, &a), m);
        return ir_select(b, is_finite(b, m), lse, m);
    }
    default: return a;
    }
}

/* The finished value in the output's dtype: a float64 result (L2, logs of
 * integers) converts as the reference's does (saturating to int64, then
 * wrapping; NaN 0), not as a cast, which saturates to the narrow type
 * (ReduceLogSum of int8 zeros, log 0 = -inf, gave -128 against 0). */
static ir_expr *reduce_finish_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const reduce_finish *f = user;
    ir_expr *v = reduce_finish_value(g, f, idx);
    if (v && op_dtype_is_float(v->dtype) && !op_dtype_is_float(f->out))
        return op_float_to_int_expr(&g->b, f->out, v);
    return v;
}

/* The stages of one reduction of x under map; the last is named "y"+suffix. */
static te_tensor *reduce_build(op_compute_args *a, const reduce_map *map, const char *suffix)
{
    te_graph *g = a->te;
    const te_tensor *x = a->in[0];
    const smelt_tensor *ot = &a->out_type[0];
    reduce_kind k = reduce_kind_of(a->node->op);
    smelt_dtype acc = reduce_acc_dtype(k, x->buf->dtype);
    reduce_stage st = {x, map, k, reduce_op_of(k), acc, NULL};
    reduce_finish fin = {NULL, NULL, k, 1, ot->dtype};
    const char *tag = "reduce";
    char name[32];
    if (k == RK_LOG_SUM_EXP) {
        st.kind = RK_MAX;
        stage_name(name, sizeof name, "y_max", suffix);
        st.shift = te_compute(g, name, acc, ot->rank, ot->dims, reduce_body, &st, tag);
        if (!st.shift) return NULL;
        fin.shift = st.shift;
        st.kind = RK_SUM_EXP;
        st.op = IR_REDUCE_SUM;
    }
    bool finish = k == RK_MEAN || k == RK_L2 || k == RK_LOG_SUM || k == RK_LOG_SUM_EXP ||
                  acc != ot->dtype;
    stage_name(name, sizeof name, finish ? "y_acc" : "y", suffix);
    te_tensor *t = te_compute(g, name, acc, ot->rank, ot->dims, reduce_body, &st, tag);
    if (!t || !finish) return t;
    fin.acc = t;
    for (int d = 0; d < map->rank; d++)
        if (map->reduced[d]) fin.count *= x->buf->shape[d];
    stage_name(name, sizeof name, "y", suffix);
    return te_compute(g, name, ot->dtype, ot->rank, ot->dims, reduce_finish_body, &fin,
                      "injective");
}

static ir_expr *copy_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return te_read(g, user, idx);
}

/* Readings of run-time axes with keepdims=0, found by matching the output
 * dims against x's.  Size-1 axes read the same reduced or not, so readings
 * that differ only there count once. */
typedef struct reduce_search {
    const smelt_tensor *x, *out;
    bool mask[SMELT_MAX_RANK];
    reduce_map maps[REDUCE_MAX_CHOICES];
    int n;
    bool too_many;
} reduce_search;

static bool reduce_search_known(const reduce_search *s)
{
    for (int i = 0; i < s->n; i++) {
        bool same = true;
        for (int d = 0; d < s->x->rank && same; d++)
            same = s->x->dims[d] == 1 || s->maps[i].reduced[d] == s->mask[d];
        if (same) return true;
    }
    return false;
}

static void reduce_search_from(reduce_search *s, int d, int o)
{
    const smelt_tensor *x = s->x, *out = s->out;
    if (d == x->rank) {
        if (o != out->rank || reduce_search_known(s)) return;
        if (s->n == REDUCE_MAX_CHOICES) {
            s->too_many = true;
            return;
        }
        reduce_map_init(&s->maps[s->n++], x->rank, s->mask, false);
        return;
    }
    if (o < out->rank && x->dims[d] == out->dims[o]) {
        s->mask[d] = false;
        reduce_search_from(s, d + 1, o + 1);
    }
    if (x->rank - d - 1 >= out->rank - o) {
        s->mask[d] = true;
        reduce_search_from(s, d + 1, o);
    }
}

/* Run-time axes input t holds the reduced axes of map (on x's non-1 axes). */
static ir_expr *reduce_axes_match(te_graph *g, const te_tensor *t, const smelt_tensor *x,
                                  const reduce_map *map)
{
    ir_builder *b = &g->b;
    int64_t n = t->buf->rank ? t->buf->shape[0] : 1;
    ir_expr *all = ir_const_int(b, SMELT_DT_BOOL, 1);
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] == 1) continue;
        ir_expr *listed = ir_const_int(b, SMELT_DT_BOOL, 0);
        for (int64_t j = 0; j < n; j++)
            listed = ir_binary(b, IR_OR, listed, names_axis(b, read_i64(g, t, j), d, x->rank));
        all = ir_binary(b, IR_AND, all, map->reduced[d] ? listed : ir_not(b, listed));
    }
    return all;
}

/* Axes known only at run time (their output type came from the run-time
 * values): the output dims tell which axes are reduced, up to size-1 axes;
 * with keepdims=0 they may leave a choice ([3,2,2] -> [3,2]), made at run
 * time among all the candidate reductions. */
static smelt_status reduce_compute_runtime_axes(op_compute_args *a)
{
    smelt_tensor x = tensor_type_of(a->in[0]);
    const smelt_tensor *out = &a->out_type[0];
    reduce_search s = {.x = &x, .out = out};
    if (reduce_attrs(a->node)->keepdims) {
        if (out->rank == x.rank)
            for (int d = 0; d < x.rank; d++) s.mask[d] = x.dims[d] != out->dims[d];
        reduce_map_init(&s.maps[0], x.rank, s.mask, true);
        s.n = out->rank == x.rank;
    } else {
        reduce_search_from(&s, 0, 0);
    }
    if (s.too_many || a->in[1]->buf->rank > 1)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "axes input '%s' must be a constant to compile", input_name(a->node, 1));
    if (s.n == 0)
        return op_errf(a->ctx, a->node, SMELT_ERR_INTERNAL,
                       "output type does not match any reduction of the input");
    if (s.n == 1) {
        a->out[0] = reduce_build(a, &s.maps[0], "");
        return compute_status(a, a->out[0]);
    }
    choice_set c = {.n = s.n};
    for (int i = 0; i < s.n; i++) {
        char suffix[16];
        snprintf(suffix, sizeof suffix, "_c%d", i);
        c.choice[i] = reduce_build(a, &s.maps[i], suffix);
        if (!c.choice[i]) return compute_status(a, NULL);
        c.cond[i] = reduce_axes_match(a->te, a->in[1], &x, &s.maps[i]);
    }
    a->out[0] = choice_compute(a, &c);
    return compute_status(a, a->out[0]);
}

static smelt_status reduce_compute(op_compute_args *a)
{
    const te_tensor *x = a->in[0];
    smelt_tensor xt = tensor_type_of(x), axes_type;
    const smelt_tensor *axes = NULL;
    if (a->in[1]) {
        axes_type = tensor_type_of(a->in[1]);
        axes = a->in_const[1] ? a->in_const[1] : &axes_type;
    }
    if (axes && !axes->data && !axes_empty(axes)) return reduce_compute_runtime_axes(a);
    reduce_plan p;
    SMELT_TRY(reduce_plan_make(a->ctx, a->node, &xt, axes, &p));
    if (p.noop) {
        a->out[0] = te_compute(a->te, "y", xt.dtype, xt.rank, xt.dims, copy_body, (void *)x,
                               "injective");
    } else {
        reduce_map m;
        reduce_map_init(&m, xt.rank, p.mask, reduce_attrs(a->node)->keepdims);
        a->out[0] = reduce_build(a, &m, "");
    }
    return compute_status(a, a->out[0]);
}

#define REDUCE_DEF                                                                       \
    {                                                                                    \
        .compute = reduce_compute, .import = reduce_import, .infer = reduce_infer,       \
        .eval = reduce_eval,                                                             \
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

OP_ATTRS(ARG_MAX) = {{"axis", 0, 0}, {"keepdims", 0, 0}, {"select_last_index", 12, 0}, {NULL, 0, 0}};
OP_ATTRS(ARG_MIN) = {{"axis", 0, 0}, {"keepdims", 0, 0}, {"select_last_index", 12, 0}, {NULL, 0, 0}};

static smelt_status arg_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_arg_reduce_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_int(ctx, node, "axis", 0, &a->axis));
    SMELT_TRY(op_attr_bool(ctx, node, "keepdims", true, &a->keepdims));
    return op_attr_bool(ctx, node, "select_last_index", false, &a->select_last_index);
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

/* ArgMax/ArgMin in two reductions: the best value along the axis, then the
 * first (or last) position holding it, as a min (max) over
 * select(x == best, k, past-the-end).  A NaN is the best for both, as in
 * the reference (and numpy): for floats a third reduction says whether the
 * axis holds one, and then the positions sought are the NaNs' (no x equals
 * a NaN best, so the past-the-end index came out: 4 of 4, or -1). */
typedef struct arg_stage {
    const te_tensor *x, *best, *any_nan;
    reduce_map map;
    bool is_max, last;
} arg_stage;

/* x along the reduced axis at output idx; red: that axis. */
static ir_expr *arg_read(te_graph *g, const arg_stage *s, ir_expr *const *idx, ir_axis *red)
{
    reduce_map_axes(g, &s->map, s->x->buf->shape, red);
    return reduce_map_read(g, s->x, &s->map, idx, red);
}

static ir_expr *arg_nan_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const arg_stage *s = user;
    ir_builder *b = &g->b;
    ir_axis red[1];
    ir_expr *v = arg_read(g, s, idx, red);
    ir_expr *nan = ir_call(b, IR_CALL_ISNAN, SMELT_DT_BOOL, 1, &v);
    ir_expr *flag = ir_select(b, nan, ir_const_int(b, SMELT_DT_INT32, 1),
                              ir_const_int(b, SMELT_DT_INT32, 0));
    return te_reduce(g, IR_REDUCE_MAX, flag, 1, red);
}

static ir_expr *arg_best_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const arg_stage *s = user;
    ir_axis red[1];
    ir_expr *v = arg_read(g, s, idx, red);
    return te_reduce(g, s->is_max ? IR_REDUCE_MAX : IR_REDUCE_MIN, v, 1, red);
}

static ir_expr *arg_index_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const arg_stage *s = user;
    ir_builder *b = &g->b;
    ir_axis red[1];
    ir_expr *v = arg_read(g, s, idx, red);
    ir_expr *hit = ir_binary(b, IR_EQ, v, te_read(g, s->best, idx));
    if (s->any_nan) {
        ir_expr *nan = ir_call(b, IR_CALL_ISNAN, SMELT_DT_BOOL, 1, &v);
        ir_expr *any = ir_binary(b, IR_NE, te_read(g, s->any_nan, idx),
                                 ir_const_int(b, SMELT_DT_INT32, 0));
        hit = ir_select(b, any, nan, hit);
    }
    ir_expr *none = ir_int(b, s->last ? -1 : red[0].extent);
    ir_expr *k = ir_select(b, hit, ir_var_ref(b, red[0].var), none);
    return te_reduce(g, s->last ? IR_REDUCE_MAX : IR_REDUCE_MIN, k, 1, red);
}

static smelt_status arg_compute(op_compute_args *a)
{
    const op_arg_reduce_attrs *at = arg_attrs(a->node);
    const te_tensor *x = a->in[0];
    const smelt_tensor *ot = &a->out_type[0];
    int axis;
    SMELT_TRY(op_norm_axis(a->ctx, a->node, at->axis, x->buf->rank, &axis));
    bool mask[SMELT_MAX_RANK] = {false};
    mask[axis] = true;
    arg_stage s = {.x = x, .is_max = a->node->op == OP_ARG_MAX, .last = at->select_last_index};
    reduce_map_init(&s.map, x->buf->rank, mask, at->keepdims);
    s.best = te_compute(a->te, "y_best", x->buf->dtype, ot->rank, ot->dims, arg_best_body, &s,
                        "reduce");
    if (!s.best) return compute_status(a, NULL);
    if (op_dtype_is_float(x->buf->dtype)) {
        s.any_nan = te_compute(a->te, "y_nan", SMELT_DT_INT32, ot->rank, ot->dims, arg_nan_body, &s,
                               "reduce");
        if (!s.any_nan) return compute_status(a, NULL);
    }
    a->out[0] = te_compute(a->te, "y", SMELT_DT_INT64, ot->rank, ot->dims, arg_index_body, &s,
                           "reduce");
    return compute_status(a, a->out[0]);
}

#define ARG_DEF                                                                          \
    {                                                                                    \
        .compute = arg_compute, .import = arg_import, .infer = arg_infer,                \
        .eval = arg_eval, .min_inputs = 1,                                               \
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

/* sorted=0 leaves the order to the implementation: sorted is one. */
OP_ATTRS(TOP_K) = {{"axis", 0, 0}, {"k", 0, 9}, {"largest", 11, 0}, {"sorted", 11, 0}, {NULL, 0, 0}};

static smelt_status topk_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_topk_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_int(ctx, node, "axis", -1, &a->axis));
    SMELT_TRY(op_attr_bool(ctx, node, "largest", true, &a->largest));
    SMELT_TRY(op_attr_bool(ctx, node, "sorted", true, &a->sorted));
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

/* TopK as tensor expressions, without sorting: an element's rank is the
 * number of elements that come before it (greater, or equal at a lower
 * index); output j is the element whose rank is j.  O(n^2) along the axis,
 * which is fine for the short axes TopK sees in practice.  The order is the
 * reference's total order: NaN above everything (first when largest, last
 * otherwise), NaNs equal to each other; with IEEE comparisons NaNs took
 * ranks twice or never, and a rank held by several elements summed their
 * indices (an index of 6 along an axis of 4). */
typedef struct topk_args {
    te_tensor *x, *rank, *idx;
    int axis;
    int64_t n;
    bool largest;
} topk_args;

static ir_expr *topk_rank_body(te_graph *g, ir_expr *const *idx, void *user)
{
    topk_args *a = user;
    ir_builder *b = &g->b;
    ir_axis m = te_reduce_axis(g, "rm", a->n);
    ir_expr *other[SMELT_MAX_RANK];
    for (int d = 0; d < a->x->buf->rank; d++) other[d] = idx[d];
    ir_expr *mv = ir_var_ref(b, m.var);
    other[a->axis] = mv;
    ir_expr *xo = te_read(g, a->x, other), *xs = te_read(g, a->x, idx);
    ir_expr *better = ir_binary(b, a->largest ? IR_GT : IR_LT, xo, xs);
    ir_expr *equal = ir_binary(b, IR_EQ, xo, xs);
    if (xo && op_dtype_is_float(xo->dtype)) {
        ir_expr *nan_o = ir_call(b, IR_CALL_ISNAN, SMELT_DT_BOOL, 1, &xo);
        ir_expr *nan_s = ir_call(b, IR_CALL_ISNAN, SMELT_DT_BOOL, 1, &xs);
        ir_expr *nan_wins = a->largest ? ir_binary(b, IR_AND, nan_o, ir_not(b, nan_s))
                                       : ir_binary(b, IR_AND, nan_s, ir_not(b, nan_o));
        better = ir_binary(b, IR_OR, better, nan_wins);
        equal = ir_binary(b, IR_OR, equal, ir_binary(b, IR_AND, nan_o, nan_s));
    }
    ir_expr *before = ir_binary(b, IR_OR, better,
                                ir_binary(b, IR_AND, equal, ir_binary(b, IR_LT, mv, idx[a->axis])));
    ir_expr *one = ir_select(b, before, ir_int(b, 1), ir_int(b, 0));
    return te_reduce(g, IR_REDUCE_SUM, one, 1, &m);
}

static ir_expr *topk_index_body(te_graph *g, ir_expr *const *idx, void *user)
{
    topk_args *a = user;
    ir_builder *b = &g->b;
    ir_axis m = te_reduce_axis(g, "rm", a->n);
    ir_expr *at[SMELT_MAX_RANK];
    for (int d = 0; d < a->x->buf->rank; d++) at[d] = idx[d];
    ir_expr *mv = ir_var_ref(b, m.var);
    at[a->axis] = mv;
    ir_expr *hit = ir_binary(b, IR_EQ, te_read(g, a->rank, at), idx[a->axis]);
    return te_reduce(g, IR_REDUCE_SUM, ir_select(b, hit, mv, ir_int(b, 0)), 1, &m);
}

static ir_expr *topk_value_body(te_graph *g, ir_expr *const *idx, void *user)
{
    topk_args *a = user;
    ir_expr *at[SMELT_MAX_RANK];
    for (int d = 0; d < a->x->buf->rank; d++) at[d] = idx[d];
    at[a->axis] = te_read(g, a->idx, idx);
    return te_read(g, a->x, at);
}

static smelt_status topk_compute(op_compute_args *ca)
{
    topk_args *a = smelt_arena_alloc(&ca->te->arena, sizeof *a);
    if (!a) return smelt_errf(ca->ctx, SMELT_ERR_NOMEM, "out of memory");
    const op_topk_attrs *at = topk_attrs(ca->node);
    a->x = ca->in[0];
    SMELT_TRY(op_norm_axis(ca->ctx, ca->node, at->axis, a->x->buf->rank, &a->axis));
    a->n = a->x->buf->shape[a->axis];
    a->largest = at->largest;
    /* the indices have the values' shape: out_type[1] is only there (and
     * typed) when the node has its second output */
    const smelt_tensor *vt = &ca->out_type[0];
    a->rank = te_compute(ca->te, "rank", SMELT_DT_INT64, a->x->buf->rank, a->x->buf->shape,
                         topk_rank_body, a, "reduce");
    if (a->rank)
        a->idx = te_compute(ca->te, "indices", SMELT_DT_INT64, vt->rank, vt->dims, topk_index_body,
                            a, "reduce");
    if (a->idx)
        ca->out[0] = te_compute(ca->te, "values", vt->dtype, vt->rank, vt->dims, topk_value_body,
                                a, "injective");
    if (ca->node->n_outputs > 1) ca->out[1] = a->idx;
    return ca->out[0] ? SMELT_OK : smelt_ctx_status(ca->ctx);
}

const op_def op_def_TOP_K = {
    .compute = topk_compute,
    .import = topk_import, .infer = topk_infer, .eval = topk_eval,
    .min_inputs = 1,       .max_inputs = 2,     .min_outputs = 1, .max_outputs = 2,
};

/* ======================================================================
 * CumSum, CumProd
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

OP_ATTRS(CUM_SUM) = {{"exclusive", 0, 0}, {"reverse", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(CUM_PROD) = {{"exclusive", 0, 0}, {"reverse", 0, 0}, {NULL, 0, 0}};

static smelt_status cumsum_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_cumsum_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_bool(ctx, node, "exclusive", false, &a->exclusive));
    return op_attr_bool(ctx, node, "reverse", false, &a->reverse);
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
    bool is_float = op_dtype_is_float(x->dtype), prod = node->op == OP_CUM_PROD;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            double facc = prod ? 1.0 : 0.0;
            uint64_t iacc = prod; /* wraps like the integer dtype would */
            for (int64_t t = 0; t < n; t++) {
                int64_t j = a->reverse ? n - 1 - t : t;
                int64_t off = (o * n + j) * inner + i;
                if (is_float) {
                    double v = op_get_f64(x, off);
                    if (!a->exclusive) facc = prod ? facc * v : facc + v;
                    op_set_f64(&out[0], off, facc);
                    if (a->exclusive) facc = prod ? facc * v : facc + v;
                } else {
                    uint64_t v = (uint64_t)op_get_i64(x, off);
                    if (!a->exclusive) iacc = prod ? iacc * v : iacc + v;
                    op_set_i64(&out[0], off, (int64_t)iacc);
                    if (a->exclusive) iacc = prod ? iacc * v : iacc + v;
                }
            }
        }
    }
    return SMELT_OK;
}

/* CumSum (CumProd) as a sum (product) over the whole axis of the elements at
 * positions k <= i (k < i exclusive; k >= i, k > i reversed). */
typedef struct cumsum_stage {
    const te_tensor *x;
    int axis;
    bool exclusive, reverse, prod;
    smelt_dtype acc;
} cumsum_stage;

static ir_expr *cumsum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const cumsum_stage *s = user;
    ir_builder *b = &g->b;
    ir_axis k = te_reduce_axis(g, "k", s->x->buf->shape[s->axis]);
    ir_expr *kv = ir_var_ref(b, k.var), *xi[SMELT_MAX_RANK];
    for (int d = 0; d < s->x->buf->rank; d++) xi[d] = d == s->axis ? kv : idx[d];
    ir_kind cmp = s->reverse ? (s->exclusive ? IR_GT : IR_GE) : (s->exclusive ? IR_LT : IR_LE);
    ir_expr *v = ir_cast(b, s->acc, te_read(g, s->x, xi));
    ir_reduce_op op = s->prod ? IR_REDUCE_PROD : IR_REDUCE_SUM;
    ir_expr *term = ir_select(b, ir_binary(b, cmp, kv, idx[s->axis]), v,
                              te_reduce_identity(g, op, s->acc));
    return te_reduce(g, op, term, 1, &k);
}

/* The cumulative sum along one axis; the last stage is named "y"+suffix. */
static te_tensor *cumsum_build(op_compute_args *a, int axis, const char *suffix)
{
    const op_cumsum_attrs *at = cumsum_attrs(a->node);
    const te_tensor *x = a->in[0];
    const smelt_tensor *ot = &a->out_type[0];
    cumsum_stage s = {x, axis, at->exclusive, at->reverse, a->node->op == OP_CUM_PROD,
                      float_acc_dtype(x->buf->dtype)};
    bool cast = s.acc != ot->dtype;
    char name[32];
    stage_name(name, sizeof name, cast ? "y_acc" : "y", suffix);
    te_tensor *t = te_compute(a->te, name, s.acc, ot->rank, ot->dims, cumsum_body, &s, "reduce");
    if (!t || !cast) return t;
    stage_name(name, sizeof name, "y", suffix);
    return te_compute(a->te, name, ot->dtype, ot->rank, ot->dims, copy_body, t, "injective");
}

/* An axis known only at run time (and not implied by rank 1): the sum along
 * every axis, one chosen at run time. */
static smelt_status cumsum_compute(op_compute_args *a)
{
    const te_tensor *x = a->in[0];
    int rank = x->buf->rank, axis = 0;
    if (a->in_const[1]) {
        smelt_tensor xt = tensor_type_of(x);
        SMELT_TRY(cumsum_axis(a->ctx, a->node, &xt, a->in_const[1], &axis));
    }
    if (a->in_const[1] || rank == 1) {
        a->out[0] = cumsum_build(a, axis, "");
        return compute_status(a, a->out[0]);
    }
    if (a->in[1]->buf->rank > 1)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "axis input '%s' must be a constant to compile", input_name(a->node, 1));
    choice_set c = {.n = rank};
    ir_expr *value = read_i64(a->te, a->in[1], 0);
    for (int d = 0; d < rank; d++) {
        char suffix[16];
        snprintf(suffix, sizeof suffix, "_c%d", d);
        c.choice[d] = cumsum_build(a, d, suffix);
        if (!c.choice[d]) return compute_status(a, NULL);
        c.cond[d] = names_axis(&a->te->b, value, d, rank);
    }
    a->out[0] = choice_compute(a, &c);
    return compute_status(a, a->out[0]);
}

const op_def op_def_CUM_SUM = {
    .compute = cumsum_compute,
    .import = cumsum_import, .infer = cumsum_infer, .eval = cumsum_eval,
    .min_inputs = 2,         .max_inputs = 2,       .min_outputs = 1, .max_outputs = 1,
};

const op_def op_def_CUM_PROD = {
    .compute = cumsum_compute,
    .import = cumsum_import, .infer = cumsum_infer, .eval = cumsum_eval,
    .min_inputs = 2,         .max_inputs = 2,       .min_outputs = 1, .max_outputs = 1,
};
