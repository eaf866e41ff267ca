/* Broadcasting binary and variadic ops: arithmetic, Min/Max/Sum/Mean,
 * comparisons, logic, PRelu and Where.
 *
 * All kernels walk the output through a broadcast plan: dims of size 1 are
 * dropped and adjacent dims that are contiguous for every input are merged,
 * so the same-shape case is one flat loop and a bias add is long rows.  Each
 * row is handed to a typed row function: f32 has direct loops, other floats
 * compute in double, integers compute exactly in int64/uint64 with wrapping
 * (two's complement) arithmetic and runtime errors for division by zero.
 */
#include <math.h>
#include <string.h>

#include "ops/binary.h"
#include "ops/elementwise.h"
#include "te/te.h"

/* ---- dtype sets ---------------------------------------------------------- */

#define FLOAT_TYPES SMELT_DT_FLOAT16, SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_BFLOAT16
#define INT_TYPES                                                                           \
    SMELT_DT_INT8, SMELT_DT_INT16, SMELT_DT_INT32, SMELT_DT_INT64, SMELT_DT_UINT8,         \
        SMELT_DT_UINT16, SMELT_DT_UINT32, SMELT_DT_UINT64

static const smelt_dtype k_floats[] = {FLOAT_TYPES, SMELT_DT_UNDEFINED};
static const smelt_dtype k_numeric[] = {FLOAT_TYPES, INT_TYPES, SMELT_DT_UNDEFINED};
static const smelt_dtype k_numeric_or_bool[] = {FLOAT_TYPES, INT_TYPES, SMELT_DT_BOOL,
                                                SMELT_DT_UNDEFINED};
static const smelt_dtype k_bool[] = {SMELT_DT_BOOL, SMELT_DT_UNDEFINED};
static const smelt_dtype k_where_values[] = {FLOAT_TYPES, INT_TYPES, SMELT_DT_BOOL,
                                             SMELT_DT_COMPLEX64, SMELT_DT_COMPLEX128,
                                             SMELT_DT_UNDEFINED};

static bool dtype_is_unsigned(smelt_dtype dt)
{
    return dt == SMELT_DT_UINT8 || dt == SMELT_DT_UINT16 || dt == SMELT_DT_UINT32 ||
           dt == SMELT_DT_UINT64;
}

/* ---- the operations ----------------------------------------------------------- */

typedef enum bin_kind {
    BIN_ADD,
    BIN_SUB,
    BIN_MUL,
    BIN_DIV,
    BIN_MOD,  /* result has the sign of the divisor (Python %) */
    BIN_FMOD, /* result has the sign of the dividend (C fmod / %) */
    BIN_POW,
    BIN_PRELU,
    BIN_MIN,
    BIN_MAX,
    BIN_EQ,
    BIN_LT,
    BIN_LE,
    BIN_GT,
    BIN_GE,
    BIN_AND,
    BIN_OR,
    BIN_XOR,
} bin_kind;

static const op_binary_attrs k_default_attrs;

static const op_binary_attrs *attrs_of(const gr_node *n)
{
    return n->op_attrs ? n->op_attrs : &k_default_attrs;
}

static bin_kind kind_of(const gr_node *n)
{
    switch (n->op) {
    case OP_ADD:
    case OP_SUM:
    case OP_MEAN: return BIN_ADD;
    case OP_SUB: return BIN_SUB;
    case OP_MUL: return BIN_MUL;
    case OP_DIV: return BIN_DIV;
    case OP_MOD: return attrs_of(n)->fmod ? BIN_FMOD : BIN_MOD;
    case OP_POW: return BIN_POW;
    case OP_PRELU: return BIN_PRELU;
    case OP_MIN: return BIN_MIN;
    case OP_MAX: return BIN_MAX;
    case OP_EQUAL: return BIN_EQ;
    case OP_LESS: return BIN_LT;
    case OP_LESS_OR_EQUAL: return BIN_LE;
    case OP_GREATER: return BIN_GT;
    case OP_GREATER_OR_EQUAL: return BIN_GE;
    case OP_AND: return BIN_AND;
    case OP_OR: return BIN_OR;
    default: return BIN_XOR;
    }
}

static bool kind_is_compare(bin_kind k) { return k >= BIN_EQ && k <= BIN_GE; }
static bool kind_is_logic(bin_kind k) { return k >= BIN_AND; }

/* NaN propagates through Min/Max, as numpy's minimum/maximum do. */
static double float_op(bin_kind k, double a, double b)
{
    switch (k) {
    case BIN_ADD: return a + b;
    case BIN_SUB: return a - b;
    case BIN_MUL: return a * b;
    case BIN_DIV: return a / b;
    case BIN_FMOD: return fmod(a, b);
    case BIN_MOD: { /* numpy's mod (Mod-28's fmod=0): a zero takes b's sign */
        double r = fmod(a, b);
        if (r == 0) return copysign(0.0, b);
        return (r < 0) != (b < 0) ? r + b : r;
    }
    case BIN_POW: return pow(a, b);
    case BIN_PRELU: return a < 0 ? a * b : a;
    case BIN_MIN: return isnan(a) ? a : isnan(b) ? b : a < b ? a : b;
    case BIN_MAX: return isnan(a) ? a : isnan(b) ? b : a > b ? a : b;
    default: return 0.0;
    }
}

static bool float_cmp(bin_kind k, double a, double b)
{
    switch (k) {
    case BIN_EQ: return a == b;
    case BIN_LT: return a < b;
    case BIN_LE: return a <= b;
    case BIN_GT: return a > b;
    default: return a >= b;
    }
}

static bool int_cmp(bin_kind k, int64_t a, int64_t b)
{
    switch (k) {
    case BIN_EQ: return a == b;
    case BIN_LT: return a < b;
    case BIN_LE: return a <= b;
    case BIN_GT: return a > b;
    default: return a >= b;
    }
}

static bool uint_cmp(bin_kind k, uint64_t a, uint64_t b)
{
    switch (k) {
    case BIN_EQ: return a == b;
    case BIN_LT: return a < b;
    case BIN_LE: return a <= b;
    case BIN_GT: return a > b;
    default: return a >= b;
    }
}

static bool logic_op(bin_kind k, bool a, bool b)
{
    return k == BIN_AND ? a && b : k == BIN_OR ? a || b : a != b;
}

/* Errors found inside the row loops; reported once the loop is done. */
static const char *const k_err_div_zero = "integer division by zero";
static const char *const k_err_div_overflow =
    "integer division overflow (the minimum value divided by -1)";

/* Wrapping arithmetic goes through uint64 so signed overflow is never UB;
 * bits is the dtype width, to detect MIN / -1 of that dtype. */
static int64_t signed_op(bin_kind k, int64_t a, int64_t b, int bits, const char **err)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (k) {
    case BIN_ADD: return (int64_t)(ua + ub);
    case BIN_SUB: return (int64_t)(ua - ub);
    case BIN_MUL: return (int64_t)(ua * ub);
    case BIN_DIV:
        if (b == 0) *err = k_err_div_zero;
        else if (b == -1 && a == (int64_t)(UINT64_MAX << (bits - 1))) *err = k_err_div_overflow;
        return *err ? 0 : a / b;
    case BIN_MOD:
    case BIN_FMOD: {
        if (b == 0) {
            *err = k_err_div_zero;
            return 0;
        }
        int64_t r = b == -1 ? 0 : a % b; /* INT64_MIN % -1 is UB in C */
        if (k == BIN_MOD && r != 0 && (r < 0) != (b < 0)) r += b;
        return r;
    }
    case BIN_PRELU: return a < 0 ? (int64_t)(ua * ub) : a;
    case BIN_MIN: return a < b ? a : b;
    case BIN_MAX: return a > b ? a : b;
    default: return 0;
    }
}

static uint64_t unsigned_op(bin_kind k, uint64_t a, uint64_t b, const char **err)
{
    switch (k) {
    case BIN_ADD: return a + b;
    case BIN_SUB: return a - b;
    case BIN_MUL: return a * b;
    case BIN_DIV:
    case BIN_MOD:
    case BIN_FMOD:
        if (b == 0) {
            *err = k_err_div_zero;
            return 0;
        }
        return k == BIN_DIV ? a / b : a % b;
    case BIN_PRELU: return a;
    case BIN_MIN: return a < b ? a : b;
    case BIN_MAX: return a > b ? a : b;
    default: return 0;
    }
}

/* ---- half-precision stores with a single rounding --------------------------------- */

/* Round to float with round-to-odd, so that rounding again to f16/bf16 gives
 * the correctly rounded double (no double rounding). */
static float f64_to_f32_round_odd(double d)
{
    float f = (float)d;
    if (!isfinite(f) || (double)f == d) return f;
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits |= 1;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void store_f64(smelt_tensor *t, int64_t i, double v)
{
    if (t->dtype == SMELT_DT_FLOAT16)
        ((uint16_t *)t->data)[i] = smelt_f32_to_f16(f64_to_f32_round_odd(v));
    else if (t->dtype == SMELT_DT_BFLOAT16)
        ((uint16_t *)t->data)[i] = smelt_f32_to_bf16(f64_to_f32_round_odd(v));
    else
        op_set_f64(t, i, v);
}

/* ---- broadcast plan ------------------------------------------------------------------ */

#define BC_MAX_INPUTS 3

typedef struct bc_plan {
    int rank, n_in;
    int64_t dims[SMELT_MAX_RANK];
    int64_t strides[BC_MAX_INPUTS][SMELT_MAX_RANK]; /* 0 along broadcast dims */
} bc_plan;

/* One innermost run: n elements, input k at off[k] advancing by step[k],
 * output contiguous from out. */
typedef struct bc_row {
    int64_t n, out;
    int64_t off[BC_MAX_INPUTS], step[BC_MAX_INPUTS];
} bc_row;

typedef void (*bc_row_fn)(void *job, const bc_row *row);

static bool bc_mergeable(const bc_plan *p, const int64_t *s, int64_t dim)
{
    for (int k = 0; k < p->n_in; k++)
        if (p->strides[k][p->rank - 1] != s[k] * dim) return false;
    return true;
}

/* False if an input does not broadcast to out (infer should have caught it). */
static bool bc_plan_init(bc_plan *p, const smelt_tensor *out, const smelt_tensor *const *ins,
                         int n_in)
{
    int64_t in_strides[BC_MAX_INPUTS][SMELT_MAX_RANK];
    p->rank = 0;
    p->n_in = n_in;
    for (int k = 0; k < n_in; k++) {
        if (ins[k]->rank > out->rank) return false;
        op_strides(ins[k], in_strides[k]);
    }
    for (int d = 0; d < out->rank; d++) {
        int64_t dim = out->dims[d], s[BC_MAX_INPUTS];
        for (int k = 0; k < n_in; k++) {
            int id = d - (out->rank - ins[k]->rank);
            int64_t in_dim = id < 0 ? 1 : ins[k]->dims[id];
            if (in_dim != 1 && in_dim != dim) return false;
            s[k] = in_dim == 1 ? 0 : in_strides[k][id];
        }
        if (dim == 1) continue; /* moves no offset */
        if (p->rank > 0 && bc_mergeable(p, s, dim)) {
            p->dims[p->rank - 1] *= dim;
            for (int k = 0; k < n_in; k++) p->strides[k][p->rank - 1] = s[k];
        } else {
            p->dims[p->rank] = dim;
            for (int k = 0; k < n_in; k++) p->strides[k][p->rank] = s[k];
            p->rank++;
        }
    }
    return true;
}

/* Calls fn once per innermost row, in output order.  Output must be non-empty. */
static void bc_for_each_row(const bc_plan *p, bc_row_fn fn, void *job)
{
    int outer = p->rank > 0 ? p->rank - 1 : 0;
    int64_t idx[SMELT_MAX_RANK] = {0};
    bc_row r;
    memset(&r, 0, sizeof r);
    r.n = p->rank > 0 ? p->dims[p->rank - 1] : 1;
    for (int k = 0; k < p->n_in; k++) r.step[k] = p->rank > 0 ? p->strides[k][p->rank - 1] : 0;
    for (;;) {
        fn(job, &r);
        r.out += r.n;
        int d = outer - 1;
        for (; d >= 0; d--) {
            for (int k = 0; k < p->n_in; k++) r.off[k] += p->strides[k][d];
            if (++idx[d] < p->dims[d]) break;
            for (int k = 0; k < p->n_in; k++) r.off[k] -= p->strides[k][d] * p->dims[d];
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

/* ---- row kernels -------------------------------------------------------------------- */

typedef struct bin_job {
    bin_kind kind;
    const smelt_tensor *a, *b;
    smelt_tensor *out; /* may alias a (variadic ops accumulate in place) */
    int bits;          /* width of a signed integer dtype */
    const char *err;
} bin_job;

static void row_f32_arith(void *job, const bc_row *r)
{
    const bin_job *j = job;
    const float *a = (const float *)j->a->data + r->off[0];
    const float *b = (const float *)j->b->data + r->off[1];
    float *o = (float *)j->out->data + r->out;
    int64_t sa = r->step[0], sb = r->step[1], n = r->n;
    switch (j->kind) {
    case BIN_ADD:
        for (int64_t i = 0; i < n; i++) o[i] = a[i * sa] + b[i * sb];
        break;
    case BIN_SUB:
        for (int64_t i = 0; i < n; i++) o[i] = a[i * sa] - b[i * sb];
        break;
    case BIN_MUL:
        for (int64_t i = 0; i < n; i++) o[i] = a[i * sa] * b[i * sb];
        break;
    case BIN_DIV:
        for (int64_t i = 0; i < n; i++) o[i] = a[i * sa] / b[i * sb];
        break;
    default:
        for (int64_t i = 0; i < n; i++) o[i] = (float)float_op(j->kind, a[i * sa], b[i * sb]);
        break;
    }
}

static void row_f32_cmp(void *job, const bc_row *r)
{
    const bin_job *j = job;
    const float *a = (const float *)j->a->data + r->off[0];
    const float *b = (const float *)j->b->data + r->off[1];
    uint8_t *o = (uint8_t *)j->out->data + r->out;
    for (int64_t i = 0; i < r->n; i++)
        o[i] = float_cmp(j->kind, a[i * r->step[0]], b[i * r->step[1]]);
}

static void row_float(void *job, const bc_row *r)
{
    const bin_job *j = job;
    bool cmp = kind_is_compare(j->kind);
    for (int64_t i = 0; i < r->n; i++) {
        double a = op_get_f64(j->a, r->off[0] + i * r->step[0]);
        double b = op_get_f64(j->b, r->off[1] + i * r->step[1]);
        if (cmp)
            ((uint8_t *)j->out->data)[r->out + i] = float_cmp(j->kind, a, b);
        else
            store_f64(j->out, r->out + i, float_op(j->kind, a, b));
    }
}

static void row_signed(void *job, const bc_row *r)
{
    bin_job *j = job;
    bool cmp = kind_is_compare(j->kind);
    for (int64_t i = 0; i < r->n && !j->err; i++) {
        int64_t a = op_get_i64(j->a, r->off[0] + i * r->step[0]);
        int64_t b = op_get_i64(j->b, r->off[1] + i * r->step[1]);
        if (cmp)
            ((uint8_t *)j->out->data)[r->out + i] = int_cmp(j->kind, a, b);
        else
            op_set_i64(j->out, r->out + i, signed_op(j->kind, a, b, j->bits, &j->err));
    }
}

static void row_unsigned(void *job, const bc_row *r)
{
    bin_job *j = job;
    bool cmp = kind_is_compare(j->kind);
    for (int64_t i = 0; i < r->n && !j->err; i++) {
        uint64_t a = (uint64_t)op_get_i64(j->a, r->off[0] + i * r->step[0]);
        uint64_t b = (uint64_t)op_get_i64(j->b, r->off[1] + i * r->step[1]);
        if (cmp)
            ((uint8_t *)j->out->data)[r->out + i] = uint_cmp(j->kind, a, b);
        else
            op_set_i64(j->out, r->out + i, (int64_t)unsigned_op(j->kind, a, b, &j->err));
    }
}

static void row_logic(void *job, const bc_row *r)
{
    const bin_job *j = job;
    const uint8_t *a = (const uint8_t *)j->a->data + r->off[0];
    const uint8_t *b = (const uint8_t *)j->b->data + r->off[1];
    uint8_t *o = (uint8_t *)j->out->data + r->out;
    for (int64_t i = 0; i < r->n; i++)
        o[i] = logic_op(j->kind, a[i * r->step[0]] != 0, b[i * r->step[1]] != 0);
}

/* Pow with mixed dtypes.  Integer base: a non-negative integer exponent is
 * an exact wrapped power; otherwise the double result is truncated
 * (saturating), like numpy's power(...).astype(base dtype). */
static void row_pow(void *job, const bc_row *r)
{
    const bin_job *j = job;
    bool int_base = !op_dtype_is_float(j->a->dtype);
    bool int_exp = !op_dtype_is_float(j->b->dtype);
    bool unsigned_exp = dtype_is_unsigned(j->b->dtype);
    for (int64_t i = 0; i < r->n; i++) {
        int64_t ia = r->off[0] + i * r->step[0], ib = r->off[1] + i * r->step[1];
        int64_t io = r->out + i;
        if (int_base && int_exp) {
            int64_t e = op_get_i64(j->b, ib);
            if (unsigned_exp || e >= 0) {
                op_set_i64(j->out, io,
                           (int64_t)ir_ipow_u64((uint64_t)op_get_i64(j->a, ia), (uint64_t)e));
                continue;
            }
        }
        store_f64(j->out, io, pow(op_get_f64(j->a, ia), op_get_f64(j->b, ib)));
    }
}

static bc_row_fn pick_row_fn(bin_kind k, const smelt_tensor *a, const smelt_tensor *b)
{
    bool f32 = a->dtype == SMELT_DT_FLOAT32 && b->dtype == SMELT_DT_FLOAT32;
    if (kind_is_logic(k)) return row_logic;
    if (k == BIN_POW && !f32) return row_pow;
    if (f32) return kind_is_compare(k) ? row_f32_cmp : row_f32_arith;
    if (op_dtype_is_float(a->dtype)) return row_float;
    if (dtype_is_unsigned(a->dtype)) return row_unsigned;
    return row_signed; /* signed integers and bool (Equal) */
}

static smelt_status apply_binary(smelt_ctx *ctx, const gr_node *n, bin_kind kind,
                                 const smelt_tensor *a, const smelt_tensor *b,
                                 smelt_tensor *out)
{
    const smelt_tensor *ins[2] = {a, b};
    bc_plan plan;
    if (!bc_plan_init(&plan, out, ins, 2))
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "input shapes do not broadcast to the output");
    if (op_numel(out) == 0) return SMELT_OK;
    bin_job job = {.kind = kind, .a = a, .b = b, .out = out,
                   .bits = (int)(8 * smelt_dtype_size(a->dtype))};
    bc_for_each_row(&plan, pick_row_fn(kind, a, b), &job);
    if (job.err) return op_errf(ctx, n, SMELT_ERR_RUNTIME, "%s", job.err);
    return SMELT_OK;
}

/* Where: a byte copy from X or Y per element, typed by element size. */
typedef struct where_job {
    const smelt_tensor *cond, *x, *y;
    smelt_tensor *out;
    size_t elem;
} where_job;

#define WHERE_ROW(T)                                                                        \
    do {                                                                                    \
        const T *x = (const T *)j->x->data + r->off[1];                                     \
        const T *y = (const T *)j->y->data + r->off[2];                                     \
        T *o = (T *)j->out->data + r->out;                                                  \
        for (int64_t i = 0; i < r->n; i++)                                                  \
            o[i] = c[i * r->step[0]] ? x[i * r->step[1]] : y[i * r->step[2]];               \
    } while (0)

static void row_where(void *job, const bc_row *r)
{
    const where_job *j = job;
    const uint8_t *c = (const uint8_t *)j->cond->data + r->off[0];
    switch (j->elem) {
    case 1: WHERE_ROW(uint8_t); break;
    case 2: WHERE_ROW(uint16_t); break;
    case 4: WHERE_ROW(uint32_t); break;
    case 8: WHERE_ROW(uint64_t); break;
    default: {
        const char *x = (const char *)j->x->data, *y = (const char *)j->y->data;
        char *o = (char *)j->out->data;
        for (int64_t i = 0; i < r->n; i++) {
            const char *src = c[i * r->step[0]]
                                  ? x + (r->off[1] + i * r->step[1]) * (int64_t)j->elem
                                  : y + (r->off[2] + i * r->step[2]) * (int64_t)j->elem;
            memcpy(o + (r->out + i) * (int64_t)j->elem, src, j->elem);
        }
        break;
    }
    }
}

/* ---- import ---------------------------------------------------------------------------- */

/* Before opset 7, broadcasting was opt-in (broadcast=1), optionally aligned
 * at `axis`; axis without broadcast has no effect. */
#define LEGACY_BROADCAST {"broadcast", 0, 6}, {"axis", 0, 6}
OP_ATTRS(ADD) = {LEGACY_BROADCAST, {NULL, 0, 0}};
OP_ATTRS(SUB) = {LEGACY_BROADCAST, {NULL, 0, 0}};
OP_ATTRS(MUL) = {LEGACY_BROADCAST, {NULL, 0, 0}};
OP_ATTRS(DIV) = {LEGACY_BROADCAST, {NULL, 0, 0}};
OP_ATTRS(POW) = {LEGACY_BROADCAST, {NULL, 0, 0}};
OP_ATTRS(EQUAL) = {LEGACY_BROADCAST, {NULL, 0, 0}};
OP_ATTRS(LESS) = {LEGACY_BROADCAST, {NULL, 0, 0}};
OP_ATTRS(GREATER) = {LEGACY_BROADCAST, {NULL, 0, 0}};
OP_ATTRS(AND) = {LEGACY_BROADCAST, {NULL, 0, 0}};
OP_ATTRS(OR) = {LEGACY_BROADCAST, {NULL, 0, 0}};
OP_ATTRS(XOR) = {LEGACY_BROADCAST, {NULL, 0, 0}};
#undef LEGACY_BROADCAST
OP_ATTRS(MOD) = {{"fmod", 0, 0}, {NULL, 0, 0}};

static smelt_status binary_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    op_binary_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    if (n->op == OP_MOD) {
        SMELT_TRY(op_attr_bool(ctx, n, "fmod", false, &a->fmod));
        /* Mod-28 defines fmod=0 for floats (numpy's mod); earlier versions
         * require fmod=1 there */
        a->float_mod = g->opset >= 28;
    }
    if (g->opset < 7 && n->op == OP_PRELU) a->legacy_channel_slope = true;
    if (g->opset < 7) {
        bool broadcast;
        SMELT_TRY(op_attr_bool(ctx, n, "broadcast", false, &broadcast));
        if (broadcast && gr_node_attr(n, "axis")) {
            SMELT_TRY(op_attr_int(ctx, n, "axis", 0, &a->legacy_axis));
            a->has_legacy_axis = true;
        }
    }
    return SMELT_OK;
}

/* ---- infer helpers -------------------------------------------------------------------- */

static const char *input_name(const gr_node *n, int i)
{
    return i < n->n_inputs && n->inputs[i] ? n->inputs[i]->name : "?";
}

static void format_dims(const smelt_tensor *t, char *buf, size_t size)
{
    size_t len = 0;
    len += (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < t->rank && len < size; d++) {
        if (t->dims[d] >= 0)
            len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? "," : "",
                                    (long long)t->dims[d]);
        else
            len += (size_t)snprintf(buf + len, size - len, "%s?", d ? "," : "");
    }
    if (len < size) snprintf(buf + len, size - len, "]");
}

static smelt_status need_inputs(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                int count)
{
    if (count < 1) return op_errf(ctx, n, SMELT_ERR_MODEL, "needs at least one input");
    for (int i = 0; i < count; i++)
        if (!op_input(n, in, i))
            return op_errf(ctx, n, SMELT_ERR_MODEL, "required input %d is missing", i);
    return SMELT_OK;
}

/* Opset < 7 'axis' broadcasting: B lines up with A's dims from `axis` on,
 * which is numpy broadcasting of B padded with trailing 1s.  Old PRelu's
 * per-channel slope is the same thing at axis 1. */
static smelt_status legacy_axis_view(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *a,
                                     const smelt_tensor *b, smelt_tensor *view)
{
    int64_t given = attrs_of(n)->has_legacy_axis ? attrs_of(n)->legacy_axis : 1;
    int64_t axis = given < 0 ? given + a->rank : given;
    if (axis < 0 || axis > a->rank || b->rank > a->rank - axis)
        return op_errf(ctx, n, SMELT_ERR_ATTR,
                       "attribute 'axis' (%lld) does not place input '%s' of rank %d inside "
                       "input '%s' of rank %d", (long long)given,
                       input_name(n, 1), b->rank, input_name(n, 0), a->rank);
    *view = *b;
    view->rank = (int)(a->rank - axis);
    for (int d = b->rank; d < view->rank; d++) view->dims[d] = 1;
    return SMELT_OK;
}

/* The two operands of a binary op; B possibly re-shaped by a legacy axis. */
static smelt_status operands(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                             const smelt_tensor *ops[2], smelt_tensor *b_view)
{
    SMELT_TRY(need_inputs(ctx, n, in, 2));
    ops[0] = in[0];
    ops[1] = in[1];
    const op_binary_attrs *at = attrs_of(n);
    bool channel_slope = at->legacy_channel_slope && in[1]->rank == 1 && in[0]->rank >= 2;
    if (at->has_legacy_axis || channel_slope) {
        SMELT_TRY(legacy_axis_view(ctx, n, in[0], in[1], b_view));
        ops[1] = b_view;
    }
    return SMELT_OK;
}

static smelt_status check_dtype_of(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                                   int i, const smelt_dtype *allowed)
{
    char what[160];
    snprintf(what, sizeof what, "input '%s'", input_name(n, i));
    return op_check_dtype(ctx, n, t, what, allowed);
}

/* ts[first..first+count) must all have ts[first]'s dtype, which must be allowed. */
static smelt_status check_same_dtype(smelt_ctx *ctx, const gr_node *n,
                                     const smelt_tensor *const *ts, int first, int count,
                                     const smelt_dtype *allowed)
{
    SMELT_TRY(check_dtype_of(ctx, n, ts[first], first, allowed));
    for (int k = first + 1; k < first + count; k++)
        if (ts[k]->dtype != ts[first]->dtype)
            return op_errf(ctx, n, SMELT_ERR_SHAPE,
                           "input '%s' has dtype %s, expected %s like input '%s'",
                           input_name(n, k), smelt_dtype_name(ts[k]->dtype),
                           smelt_dtype_name(ts[first]->dtype), input_name(n, first));
    return SMELT_OK;
}

/* First aligned dim (in the broadcast result) where a and b cannot broadcast, or -1. */
static int incompatible_dim(const smelt_tensor *a, const smelt_tensor *b)
{
    int rank = a->rank > b->rank ? a->rank : b->rank;
    for (int d = 0; d < rank; d++) {
        int ia = d - (rank - a->rank), ib = d - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da >= 0 && db >= 0 && da != db && da != 1 && db != 1) return d;
    }
    return -1;
}

/* Multidirectional broadcast of ts[0..count) (inputs 0..count-1) into out. */
static smelt_status broadcast_all(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *ts,
                                  int count, smelt_tensor *out)
{
    smelt_tensor acc;
    memset(&acc, 0, sizeof acc);
    op_copy_shape(&acc, ts[0]);
    for (int k = 1; k < count; k++) {
        int d = incompatible_dim(&acc, ts[k]);
        if (d >= 0) {
            char sa[128], sb[128];
            format_dims(&acc, sa, sizeof sa);
            format_dims(ts[k], sb, sizeof sb);
            if (k == 1)
                return op_errf(ctx, n, SMELT_ERR_SHAPE,
                               "cannot broadcast input '%s' %s with input '%s' %s (dim %d)",
                               input_name(n, 0), sa, input_name(n, 1), sb, d);
            return op_errf(ctx, n, SMELT_ERR_SHAPE,
                           "cannot broadcast input '%s' %s with the shape %s of the inputs "
                           "before it (dim %d)", input_name(n, k), sb, sa, d);
        }
        SMELT_TRY(op_broadcast(ctx, n, &acc, ts[k], &acc));
    }
    out->rank = acc.rank;
    memcpy(out->dims, acc.dims, sizeof out->dims);
    return SMELT_OK;
}

/* ---- infer ------------------------------------------------------------------------------- */

/* Add, Sub, Mul, Div, Mod */
static smelt_status arith_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    const smelt_tensor *ops[2];
    smelt_tensor b_view;
    SMELT_TRY(operands(ctx, n, in, ops, &b_view));
    SMELT_TRY(check_same_dtype(ctx, n, ops, 0, 2, k_numeric));
    if (n->op == OP_MOD && op_dtype_is_float(ops[0]->dtype) && !attrs_of(n)->fmod &&
        !attrs_of(n)->float_mod)
        return op_errf(ctx, n, SMELT_ERR_ATTR,
                       "attribute 'fmod' must be 1 for floating-point inputs before opset "
                       "28 (dtype %s)",
                       smelt_dtype_name(ops[0]->dtype));
    SMELT_TRY(broadcast_all(ctx, n, ops, 2, &out[0]));
    out[0].dtype = ops[0]->dtype;
    return SMELT_OK;
}

/* Base and exponent may differ in dtype; the result has the base's. */
static smelt_status pow_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const smelt_tensor *ops[2];
    smelt_tensor b_view;
    SMELT_TRY(operands(ctx, n, in, ops, &b_view));
    SMELT_TRY(check_dtype_of(ctx, n, ops[0], 0, k_numeric));
    SMELT_TRY(check_dtype_of(ctx, n, ops[1], 1, k_numeric));
    SMELT_TRY(broadcast_all(ctx, n, ops, 2, &out[0]));
    out[0].dtype = ops[0]->dtype;
    return SMELT_OK;
}

/* Equal, Less, LessOrEqual, Greater, GreaterOrEqual */
static smelt_status compare_infer(smelt_ctx *ctx, const gr_node *n,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *ops[2];
    smelt_tensor b_view;
    SMELT_TRY(operands(ctx, n, in, ops, &b_view));
    SMELT_TRY(check_same_dtype(ctx, n, ops, 0, 2,
                               n->op == OP_EQUAL ? k_numeric_or_bool : k_numeric));
    SMELT_TRY(broadcast_all(ctx, n, ops, 2, &out[0]));
    out[0].dtype = SMELT_DT_BOOL;
    return SMELT_OK;
}

/* And, Or, Xor */
static smelt_status logic_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    const smelt_tensor *ops[2];
    smelt_tensor b_view;
    SMELT_TRY(operands(ctx, n, in, ops, &b_view));
    SMELT_TRY(check_same_dtype(ctx, n, ops, 0, 2, k_bool));
    SMELT_TRY(broadcast_all(ctx, n, ops, 2, &out[0]));
    out[0].dtype = SMELT_DT_BOOL;
    return SMELT_OK;
}

static bool same_dims(const smelt_tensor *a, const smelt_tensor *b)
{
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d] && a->dims[d] >= 0 && b->dims[d] >= 0) return false;
    return true;
}

/* The slope broadcasts to X, never the other way (unidirectional). */
static smelt_status prelu_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    const smelt_tensor *ops[2];
    smelt_tensor b_view, joint;
    SMELT_TRY(operands(ctx, n, in, ops, &b_view));
    SMELT_TRY(check_same_dtype(ctx, n, ops, 0, 2, k_numeric));
    memset(&joint, 0, sizeof joint);
    SMELT_TRY(broadcast_all(ctx, n, ops, 2, &joint));
    if (!same_dims(&joint, ops[0])) {
        char sx[128], ss[128];
        format_dims(ops[0], sx, sizeof sx);
        format_dims(ops[1], ss, sizeof ss);
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "slope '%s' %s does not broadcast to the shape %s of input '%s'",
                       input_name(n, 1), ss, sx, input_name(n, 0));
    }
    op_copy_shape(&out[0], ops[0]);
    return SMELT_OK;
}

/* Min, Max, Sum, Mean: 1..N inputs of one dtype, all broadcast together. */
static smelt_status variadic_infer(smelt_ctx *ctx, const gr_node *n,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(need_inputs(ctx, n, in, n->n_inputs));
    bool float_only = n->op == OP_SUM || n->op == OP_MEAN;
    SMELT_TRY(check_same_dtype(ctx, n, in, 0, n->n_inputs, float_only ? k_floats : k_numeric));
    SMELT_TRY(broadcast_all(ctx, n, in, n->n_inputs, &out[0]));
    out[0].dtype = in[0]->dtype;
    return SMELT_OK;
}

static smelt_status where_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    SMELT_TRY(need_inputs(ctx, n, in, 3));
    SMELT_TRY(check_dtype_of(ctx, n, in[0], 0, k_bool));
    SMELT_TRY(check_same_dtype(ctx, n, in, 1, 2, k_where_values));
    SMELT_TRY(broadcast_all(ctx, n, in, 3, &out[0]));
    out[0].dtype = in[1]->dtype;
    return SMELT_OK;
}

/* ---- eval ---------------------------------------------------------------------------------- */

static smelt_status binary_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    const smelt_tensor *ops[2];
    smelt_tensor b_view;
    SMELT_TRY(operands(ctx, n, in, ops, &b_view));
    return apply_binary(ctx, n, kind_of(n), ops[0], ops[1], &out[0]);
}

static void divide_all(smelt_tensor *t, int divisor)
{
    int64_t count = op_numel(t);
    if (t->dtype == SMELT_DT_FLOAT32) {
        float *d = t->data;
        for (int64_t i = 0; i < count; i++) d[i] /= (float)divisor;
        return;
    }
    for (int64_t i = 0; i < count; i++) store_f64(t, i, op_get_f64(t, i) / divisor);
}

/* Accumulates pairwise into the output: out = in0 op in1, then out op= ink. */
static smelt_status variadic_eval(smelt_ctx *ctx, const gr_node *n,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    int count = n->n_inputs;
    if (count == 1) { /* infer made the output the input's shape */
        memcpy(out[0].data, in[0]->data, (size_t)op_numel(in[0]) * smelt_dtype_size(in[0]->dtype));
        return SMELT_OK;
    }
    bin_kind kind = kind_of(n);
    SMELT_TRY(apply_binary(ctx, n, kind, in[0], in[1], &out[0]));
    for (int k = 2; k < count; k++) SMELT_TRY(apply_binary(ctx, n, kind, &out[0], in[k], &out[0]));
    if (n->op == OP_MEAN) divide_all(&out[0], count);
    return SMELT_OK;
}

static smelt_status where_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    bc_plan plan;
    if (!bc_plan_init(&plan, &out[0], in, 3))
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "input shapes do not broadcast to the output");
    if (op_numel(&out[0]) == 0) return SMELT_OK;
    where_job job = {in[0], in[1], in[2], &out[0], smelt_dtype_size(in[1]->dtype)};
    bc_for_each_row(&plan, row_where, &job);
    return SMELT_OK;
}

/* ---- compute (te) ---------------------------------------------------------------------------
 * Each input is read with numpy broadcasting: its dims line up with the
 * output's from output dim `first` on (rank difference, or a legacy axis),
 * and a size-1 dim reads index 0.  Float16/bfloat16 compute in float32 and
 * round once at the end, as the reference rounds once. */

#define TE_MAX_INPUTS 64

typedef struct bin_te {
    bin_kind kind;
    int n_in;
    const te_tensor *in[TE_MAX_INPUTS];
    int first[TE_MAX_INPUTS]; /* output dim of each input's dim 0 */
    smelt_dtype out;
    bool mean; /* Mean: divide the sum by the input count */
} bin_te;

static smelt_dtype compute_dtype(smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16 ? SMELT_DT_FLOAT32 : dt;
}

static ir_expr *read_broadcast(te_graph *g, const bin_te *bt, int k, ir_expr *const *idx)
{
    const te_tensor *t = bt->in[k];
    ir_expr *at[SMELT_MAX_RANK];
    for (int d = 0; d < t->n_axes; d++)
        at[d] = t->buf->shape[d] == 1 ? ir_int(&g->b, 0) : idx[bt->first[k] + d];
    return te_read(g, t, at);
}

/* The element in the dtype to compute in. */
static ir_expr *read_work(te_graph *g, const bin_te *bt, int k, ir_expr *const *idx)
{
    return ir_cast(&g->b, compute_dtype(bt->in[k]->buf->dtype), read_broadcast(g, bt, k, idx));
}

static ir_expr *zero_like(ir_builder *b, const ir_expr *x)
{
    return op_dtype_is_float(x->dtype) ? ir_const_float(b, x->dtype, 0.0)
                                       : ir_const_int(b, x->dtype, 0);
}

/* Python's %: the remainder takes the divisor's sign.  x % -1 is 0 (C's
 * INT_MIN % -1 is undefined). */
static ir_expr *int_mod_te(ir_builder *b, ir_expr *x, ir_expr *y)
{
    ir_expr *zero = zero_like(b, x);
    if (op_dtype_is_float(x->dtype)) {
        /* numpy's mod: fmod, moved into the divisor's sign; a zero takes
         * the divisor's sign (Mod-28, fmod=0) */
        ir_expr *args[2] = {x, y};
        ir_expr *r = ir_call(b, IR_CALL_FMOD, x->dtype, 2, args);
        ir_expr *y_neg = ir_binary(b, IR_LT, y, zero);
        ir_expr *signs_differ = ir_binary(b, IR_NE, ir_binary(b, IR_LT, r, zero), y_neg);
        ir_expr *moved = ir_select(b, signs_differ, ir_add(b, r, y), r);
        ir_expr *signed_zero =
            ir_select(b, y_neg, ir_const_float(b, x->dtype, -0.0), zero);
        return ir_select(b, ir_binary(b, IR_EQ, r, zero), signed_zero, moved);
    }
    if (dtype_is_unsigned(x->dtype)) return ir_binary(b, IR_MOD, x, y);
    ir_expr *minus_one = ir_const_int(b, y->dtype, -1);
    ir_expr *r =
        ir_select(b, ir_binary(b, IR_EQ, y, minus_one), zero, ir_binary(b, IR_MOD, x, y));
    ir_expr *signs_differ = ir_binary(b, IR_NE, ir_binary(b, IR_LT, r, zero),
                                      ir_binary(b, IR_LT, y, zero));
    ir_expr *fix = ir_binary(b, IR_AND, ir_binary(b, IR_NE, r, zero), signs_differ);
    return ir_select(b, fix, ir_add(b, r, y), r);
}

/* C's fmod / %: the remainder takes the dividend's sign. */
static ir_expr *fmod_te(ir_builder *b, ir_expr *x, ir_expr *y)
{
    if (!op_dtype_is_float(x->dtype)) {
        if (dtype_is_unsigned(x->dtype)) return ir_binary(b, IR_MOD, x, y);
        ir_expr *minus_one = ir_const_int(b, y->dtype, -1);
        return ir_select(b, ir_binary(b, IR_EQ, y, minus_one), zero_like(b, x),
                         ir_binary(b, IR_MOD, x, y));
    }
    ir_expr *args[2] = {x, y};
    return ir_call(b, IR_CALL_FMOD, x->dtype, 2, args);
}

/* NaN-propagating min/max of acc and y.  IR_MIN(y, acc) is `y < acc ? y :
 * acc`, which keeps a NaN acc; a NaN y is caught first. */
static ir_expr *minmax_te(ir_builder *b, bin_kind k, ir_expr *acc, ir_expr *y)
{
    ir_expr *m = ir_binary(b, k == BIN_MIN ? IR_MIN : IR_MAX, y, acc);
    if (!op_dtype_is_float(y->dtype)) return m;
    return ir_select(b, ir_call(b, IR_CALL_ISNAN, SMELT_DT_BOOL, 1, &y), y, m);
}

static ir_expr *logic_te(ir_builder *b, bin_kind k, ir_expr *x, ir_expr *y)
{
    ir_kind ik = k == BIN_AND ? IR_AND : k == BIN_OR ? IR_OR : IR_NE;
    return ir_binary(b, ik, x, y);
}

static ir_expr *compare_te(ir_builder *b, bin_kind k, ir_expr *x, ir_expr *y)
{
    static const ir_kind kinds[] = {[BIN_EQ] = IR_EQ, [BIN_LT] = IR_LT, [BIN_LE] = IR_LE,
                                    [BIN_GT] = IR_GT, [BIN_GE] = IR_GE};
    return ir_binary(b, kinds[k], x, y);
}

/* x op y in the work dtype (arithmetic, Mod, PRelu, Min/Max). */
static ir_expr *arith_te(ir_builder *b, bin_kind k, ir_expr *x, ir_expr *y)
{
    if (!x || !y) return b->failed = true, NULL;
    switch (k) {
    case BIN_ADD: return ir_add(b, x, y);
    case BIN_SUB: return ir_sub(b, x, y);
    case BIN_MUL: return ir_mul(b, x, y);
    case BIN_DIV: return ir_binary(b, IR_DIV, x, y);
    case BIN_MOD: return int_mod_te(b, x, y);
    case BIN_FMOD: return fmod_te(b, x, y);
    case BIN_PRELU:
        return ir_select(b, ir_binary(b, IR_LT, x, zero_like(b, x)), ir_mul(b, x, y), x);
    case BIN_MIN:
    case BIN_MAX: return minmax_te(b, k, x, y);
    default: return b->failed = true, NULL;
    }
}

static ir_expr *binary_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const bin_te *bt = user;
    ir_builder *b = &g->b;
    ir_expr *x = read_work(g, bt, 0, idx), *y = read_work(g, bt, 1, idx);
    if (!x || !y) return b->failed = true, NULL;
    if (kind_is_logic(bt->kind)) return logic_te(b, bt->kind, x, y);
    if (kind_is_compare(bt->kind)) return compare_te(b, bt->kind, x, y);
    return ir_cast(b, bt->out, arith_te(b, bt->kind, x, y));
}

/* Sum, Mean, Min, Max: a left fold over the inputs, as the reference
 * accumulates; Mean divides at the end. */
static ir_expr *variadic_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const bin_te *bt = user;
    ir_builder *b = &g->b;
    ir_expr *acc = read_work(g, bt, 0, idx);
    for (int k = 1; k < bt->n_in && acc; k++)
        acc = arith_te(b, bt->kind, acc, read_work(g, bt, k, idx));
    if (acc && bt->mean && bt->n_in > 1)
        acc = ir_binary(b, IR_DIV, acc, ir_const_float(b, acc->dtype, bt->n_in));
    return ir_cast(b, bt->out, acc);
}

/* pow over double, converted to the output dtype (integers saturate, as
 * the reference stores a double). */
static ir_expr *pow_double(ir_builder *b, smelt_dtype out, ir_expr *base, ir_expr *exp)
{
    ir_expr *args[2] = {ir_cast(b, SMELT_DT_FLOAT64, base), ir_cast(b, SMELT_DT_FLOAT64, exp)};
    ir_expr *p = ir_call(b, IR_CALL_POW, SMELT_DT_FLOAT64, 2, args);
    return op_dtype_is_float(out) ? ir_cast(b, out, p) : op_float_to_int_expr(b, out, p);
}

/* Integer base and exponent, as the reference (row_pow): a non-negative
 * exponent gives the wrapped power (numpy's, and ONNX's reference), a
 * negative one the saturated double result. */
static ir_expr *pow_integer(ir_builder *b, smelt_dtype out, ir_expr *base, ir_expr *exp)
{
    ir_expr *args[2] = {ir_cast(b, SMELT_DT_UINT64, base), ir_cast(b, SMELT_DT_UINT64, exp)};
    ir_expr *wrapped = ir_cast(b, out, ir_call(b, IR_CALL_POW, SMELT_DT_UINT64, 2, args));
    if (dtype_is_unsigned(exp->dtype)) return wrapped;
    ir_expr *zero = ir_const_int(b, exp->dtype, 0);
    return ir_select(b, ir_binary(b, IR_GE, exp, zero), wrapped, pow_double(b, out, base, exp));
}

/* Pow: same-dtype floats compute in that dtype, integers as pow_integer,
 * mixed dtypes through double. */
static ir_expr *pow_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const bin_te *bt = user;
    ir_builder *b = &g->b;
    ir_expr *args[2] = {read_work(g, bt, 0, idx), read_work(g, bt, 1, idx)};
    if (!args[0] || !args[1]) return b->failed = true, NULL;
    bool int_base = !op_dtype_is_float(args[0]->dtype), int_exp = !op_dtype_is_float(args[1]->dtype);
    if (int_base && int_exp) return pow_integer(b, bt->out, args[0], args[1]);
    if (args[0]->dtype != args[1]->dtype || int_base) return pow_double(b, bt->out, args[0], args[1]);
    return ir_cast(b, bt->out, ir_call(b, IR_CALL_POW, args[0]->dtype, 2, args));
}

static ir_expr *where_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const bin_te *bt = user;
    return ir_select(&g->b, read_broadcast(g, bt, 0, idx), read_broadcast(g, bt, 1, idx),
                     read_broadcast(g, bt, 2, idx));
}

/* A type-only view of a placeholder, for the shared broadcast helpers. */
static void placeholder_type(const te_tensor *t, smelt_tensor *out)
{
    memset(out, 0, sizeof *out);
    out->dtype = t->buf->dtype;
    out->rank = t->buf->rank;
    memcpy(out->dims, t->buf->shape, sizeof(int64_t) * (size_t)t->buf->rank);
}

static smelt_status bin_te_init(op_compute_args *a, int n_in, bin_te *bt)
{
    const gr_node *n = a->node;
    memset(bt, 0, sizeof *bt);
    bt->kind = kind_of(n);
    bt->n_in = n_in;
    bt->out = a->out_type[0].dtype;
    bt->mean = n->op == OP_MEAN;
    for (int k = 0; k < n_in; k++) {
        const te_tensor *t = a->in[k];
        if (!t) return op_errf(a->ctx, n, SMELT_ERR_MODEL, "required input %d is missing", k);
        smelt_dtype dt = t->buf->dtype;
        if (dt == SMELT_DT_COMPLEX64 || dt == SMELT_DT_COMPLEX128)
            return op_errf(a->ctx, n, SMELT_ERR_UNSUPPORTED,
                           "input %d is %s; complex tensors have no compiled form", k,
                           smelt_dtype_name(dt));
        bt->in[k] = t;
        bt->first[k] = a->out_type[0].rank - t->n_axes;
    }
    return SMELT_OK;
}

static smelt_status bin_te_finish(op_compute_args *a, te_body_fn body, bin_te *bt)
{
    const smelt_tensor *ot = &a->out_type[0];
    a->out[0] = te_compute(a->te, "y", ot->dtype, ot->rank, ot->dims, body, bt, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* ---- integer division by zero ----------------------------------------------------
 * The reference fails on a zero divisor; compiled code keeps its guarded
 * division (no trap) and reports the zero through a check stage: a serial
 * pass over the divisor.  A constant divisor without zeros needs none. */
static ir_expr *divisor_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return ir_cast(&g->b, SMELT_DT_INT64, te_read(g, (const te_tensor *)user, idx));
}

static bool const_has(const smelt_tensor *t, int64_t v)
{
    for (int64_t i = 0; i < op_numel(t); i++)
        if (op_get_i64(t, i) == v) return true;
    return false;
}

static smelt_status add_divisor_check(op_compute_args *a, const bin_te *bt)
{
    bool divides = bt->kind == BIN_DIV || bt->kind == BIN_MOD || bt->kind == BIN_FMOD;
    if (!divides || op_dtype_is_float(bt->in[1]->buf->dtype) || op_numel(&a->out_type[0]) == 0)
        return SMELT_OK;
    if (a->in_const[1] && !const_has(a->in_const[1], 0)) return SMELT_OK;
    ir_builder *b = &a->te->b;
    ir_var *v = ir_var_new(b, "v", SMELT_DT_INT64);
    ir_expr *ok = ir_binary(b, IR_NE, ir_var_ref(b, v), ir_int(b, 0));
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type,
                          .message = k_err_div_zero};
    const te_tensor *d = bt->in[1];
    te_tensor *t = te_check_compute(a->te, "check", d->n_axes, d->buf->shape, divisor_body,
                                    (void *)d, v, ok, &site);
    return t ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* ---- signed integer division overflow --------------------------------------------
 * MIN / -1 does not fit the dtype: the reference fails, compiled code reports
 * it through a check stage over the broadcast output (a flag per element). */
static ir_expr *div_overflow_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const bin_te *bt = user;
    ir_builder *b = &g->b;
    smelt_dtype dt = bt->in[0]->buf->dtype;
    int bits = (int)smelt_dtype_size(dt) * 8;
    ir_expr *x = read_broadcast(g, bt, 0, idx), *y = read_broadcast(g, bt, 1, idx);
    ir_expr *is_min = ir_binary(b, IR_EQ, x, ir_const_int(b, dt, (int64_t)(UINT64_MAX << (bits - 1))));
    ir_expr *by_minus_one = ir_binary(b, IR_EQ, y, ir_const_int(b, dt, -1));
    return ir_select(b, ir_binary(b, IR_AND, is_min, by_minus_one), ir_int(b, 1), ir_int(b, 0));
}

static smelt_status add_overflow_check(op_compute_args *a, bin_te *bt)
{
    smelt_dtype dt = bt->in[0]->buf->dtype;
    if (bt->kind != BIN_DIV || op_dtype_is_float(dt) || dtype_is_unsigned(dt) ||
        op_numel(&a->out_type[0]) == 0)
        return SMELT_OK;
    if (a->in_const[1] && !const_has(a->in_const[1], -1)) return SMELT_OK;
    ir_builder *b = &a->te->b;
    ir_var *v = ir_var_new(b, "v", SMELT_DT_INT64);
    ir_expr *ok = ir_binary(b, IR_EQ, ir_var_ref(b, v), ir_int(b, 0));
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type,
                          .message = k_err_div_overflow};
    const smelt_tensor *ot = &a->out_type[0];
    te_tensor *t = te_check_compute(a->te, "check_overflow", ot->rank, ot->dims, div_overflow_body,
                                    bt, v, ok, &site);
    return t ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* Two operands; B may line up at a legacy (opset < 7) axis instead of the end. */
static smelt_status binary_compute(op_compute_args *a)
{
    bin_te bt;
    SMELT_TRY(bin_te_init(a, 2, &bt));
    smelt_tensor types[2], b_view;
    const smelt_tensor *type_ptrs[2] = {&types[0], &types[1]}, *ops[2];
    for (int k = 0; k < 2; k++) placeholder_type(bt.in[k], &types[k]);
    SMELT_TRY(operands(a->ctx, a->node, type_ptrs, ops, &b_view));
    bt.first[1] = a->out_type[0].rank - ops[1]->rank;
    SMELT_TRY(add_divisor_check(a, &bt));
    SMELT_TRY(add_overflow_check(a, &bt));
    return bin_te_finish(a, a->node->op == OP_POW ? pow_body : binary_body, &bt);
}

static smelt_status variadic_compute(op_compute_args *a)
{
    bin_te bt;
    if (a->node->n_inputs > TE_MAX_INPUTS)
        return op_errf(a->ctx, a->node, SMELT_ERR_LIMIT, "more than %d inputs to compile",
                       TE_MAX_INPUTS);
    SMELT_TRY(bin_te_init(a, a->node->n_inputs, &bt));
    return bin_te_finish(a, variadic_body, &bt);
}

static smelt_status where_compute(op_compute_args *a)
{
    bin_te bt;
    SMELT_TRY(bin_te_init(a, 3, &bt));
    return bin_te_finish(a, where_body, &bt);
}

/* ---- op table ------------------------------------------------------------------------------ */

#define BINARY_DEF(ENUM, INFER, EVAL, COMPUTE, MIN_IN, MAX_IN)                               \
    const op_def op_def_##ENUM = {.compute = COMPUTE, .import = binary_import, .infer = INFER, \
                                  .eval = EVAL, .min_inputs = MIN_IN, .max_inputs = MAX_IN,  \
                                  .min_outputs = 1, .max_outputs = 1}

BINARY_DEF(ADD, arith_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(SUB, arith_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(MUL, arith_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(DIV, arith_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(MOD, arith_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(POW, pow_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(PRELU, prelu_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(MIN, variadic_infer, variadic_eval, variadic_compute, 1, -1);
BINARY_DEF(MAX, variadic_infer, variadic_eval, variadic_compute, 1, -1);
BINARY_DEF(SUM, variadic_infer, variadic_eval, variadic_compute, 1, -1);
BINARY_DEF(MEAN, variadic_infer, variadic_eval, variadic_compute, 1, -1);
BINARY_DEF(EQUAL, compare_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(LESS, compare_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(LESS_OR_EQUAL, compare_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(GREATER, compare_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(GREATER_OR_EQUAL, compare_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(AND, logic_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(OR, logic_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(XOR, logic_infer, binary_eval, binary_compute, 2, 2);
BINARY_DEF(WHERE, where_infer, where_eval, where_compute, 3, 3);
