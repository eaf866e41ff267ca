/* The tir interpreter (see interp.h). */
#include <math.h>
#include <string.h>

#include "tir/interp.h"
#include "tir/scalar.h"
/* the int8 micro-kernels' own source (the same text generated code carries) */
#include "codegen/uk/qgemm_u8s8.c"
#include "codegen/uk_roialign_f32.h"

/* ---- values ---- */

tir_value tir_value_int(smelt_dtype dt, int64_t v)
{
    return (tir_value){dt, tir_wrap_int(dt, (uint64_t)v), 0};
}

tir_value tir_value_float(smelt_dtype dt, double v) { return (tir_value){dt, 0, tir_round_float(dt, v)}; }

double tir_value_to_double(tir_value v)
{
    if (tir_dtype_is_float(v.dtype)) return v.f;
    return v.dtype == SMELT_DT_UINT64 ? (double)(uint64_t)v.i : (double)v.i;
}

static tir_value float_to_int(smelt_dtype dt, double f)
{
    if (dt == SMELT_DT_BOOL) return tir_value_int(dt, f != 0);
    if (isnan(f)) return tir_value_int(dt, 0);
    double t = trunc(f);
    if (dt == SMELT_DT_UINT64) {
        if (t <= 0) return tir_value_int(dt, 0);
        return tir_value_int(dt, t >= 18446744073709551615.0 ? -1 : (int64_t)(uint64_t)t);
    }
    /* Out-of-range conversions are undefined in C: saturate. */
    double lo = (double)tir_dtype_min(dt), hi = (double)tir_dtype_max(dt);
    if (t <= lo) return tir_value_int(dt, tir_dtype_min(dt));
    if (t >= hi) return tir_value_int(dt, tir_dtype_max(dt));
    return tir_value_int(dt, (int64_t)t);
}

static tir_value cast_value(tir_value v, smelt_dtype dt)
{
    if (v.dtype == dt) return v;
    bool from_float = tir_dtype_is_float(v.dtype);
    if (tir_dtype_is_int(dt)) return from_float ? float_to_int(dt, v.f) : tir_value_int(dt, v.i);
    if (from_float) return tir_value_float(dt, v.f);
    bool u = v.dtype == SMELT_DT_UINT64;
    if (dt == SMELT_DT_FLOAT64) return tir_value_float(dt, u ? (double)(uint64_t)v.i : (double)v.i);
    /* Convert once to float (no double rounding through double). */
    return tir_value_float(dt, u ? (float)(uint64_t)v.i : (float)v.i);
}

static bool truthy(tir_value v) { return tir_dtype_is_float(v.dtype) ? v.f != 0 : v.i != 0; }

/* ---- environment ---- */

void tir_interp_init(tir_interp *it, smelt_ctx *ctx)
{
    memset(it, 0, sizeof *it);
    it->ctx = ctx;
}

void tir_interp_fini(tir_interp *it)
{
    for (int i = 0; i < it->n_bufs; i++)
        if (it->bufs[i].owned) smelt_free(it->bufs[i].data);
    smelt_free(it->vars);
    smelt_free(it->bufs);
    memset(it, 0, sizeof *it);
}

static bool grow(void **items, int *cap, int len, size_t elem)
{
    if (len < *cap) return true;
    int ncap = *cap ? *cap * 2 : 16;
    void *p = smelt_realloc(*items, elem * (size_t)*cap, elem * (size_t)ncap);
    if (!p) return false;
    *items = p;
    *cap = ncap;
    return true;
}

static smelt_status push_var(tir_interp *it, const ir_var *v, tir_value val)
{
    if (!grow((void **)&it->vars, &it->cap_vars, it->n_vars, sizeof(tir_interp_var)))
        return smelt_errf(it->ctx, SMELT_ERR_NOMEM, "tir interpreter: out of memory");
    it->vars[it->n_vars++] = (tir_interp_var){v, val};
    return SMELT_OK;
}

smelt_status tir_interp_set_var(tir_interp *it, const ir_var *v, tir_value val)
{
    return push_var(it, v, cast_value(val, v->dtype));
}

static smelt_status push_buf(tir_interp *it, tir_interp_buf b)
{
    if (!grow((void **)&it->bufs, &it->cap_bufs, it->n_bufs, sizeof(tir_interp_buf)))
        return smelt_errf(it->ctx, SMELT_ERR_NOMEM, "tir interpreter: out of memory");
    it->bufs[it->n_bufs++] = b;
    return SMELT_OK;
}

smelt_status tir_interp_bind_buffer(tir_interp *it, const ir_buffer *buf, void *data, int64_t n_elems)
{
    if (!buf || (!data && n_elems > 0) || n_elems < 0)
        return smelt_errf(it->ctx, SMELT_ERR_ARG, "tir interpreter: bad buffer binding");
    return push_buf(it, (tir_interp_buf){buf, data, n_elems, false});
}

static const tir_interp_buf *find_buf(const tir_interp *it, const ir_buffer *buf)
{
    for (int i = it->n_bufs - 1; i >= 0; i--)
        if (it->bufs[i].buf == buf) return &it->bufs[i];
    return NULL;
}

/* ---- memory ---- */

static tir_value read_elem(smelt_dtype dt, const void *data, int64_t i)
{
    switch (dt) {
    case SMELT_DT_FLOAT32: return tir_value_float(dt, ((const float *)data)[i]);
    case SMELT_DT_FLOAT64: return tir_value_float(dt, ((const double *)data)[i]);
    case SMELT_DT_FLOAT16: return tir_value_float(dt, smelt_f16_to_f32(((const uint16_t *)data)[i]));
    case SMELT_DT_BFLOAT16: return tir_value_float(dt, smelt_bf16_to_f32(((const uint16_t *)data)[i]));
    case SMELT_DT_BOOL:
    case SMELT_DT_UINT8: return tir_value_int(dt, ((const uint8_t *)data)[i]);
    case SMELT_DT_INT8: return tir_value_int(dt, ((const int8_t *)data)[i]);
    case SMELT_DT_UINT16: return tir_value_int(dt, ((const uint16_t *)data)[i]);
    case SMELT_DT_INT16: return tir_value_int(dt, ((const int16_t *)data)[i]);
    case SMELT_DT_UINT32: return tir_value_int(dt, ((const uint32_t *)data)[i]);
    case SMELT_DT_INT32: return tir_value_int(dt, ((const int32_t *)data)[i]);
    case SMELT_DT_UINT64: return tir_value_int(dt, (int64_t)((const uint64_t *)data)[i]);
    case SMELT_DT_INT4:
    case SMELT_DT_INT2: return tir_value_int(dt, ((const int8_t *)data)[i]);
    default:
        if (smelt_dtype_is_lowbit(dt)) return tir_value_int(dt, ((const uint8_t *)data)[i]);
        return tir_value_int(dt, ((const int64_t *)data)[i]);
    }
}

static void write_elem(tir_value v, void *data, int64_t i)
{
    switch (v.dtype) {
    case SMELT_DT_FLOAT32: ((float *)data)[i] = (float)v.f; break;
    case SMELT_DT_FLOAT64: ((double *)data)[i] = v.f; break;
    case SMELT_DT_FLOAT16: ((uint16_t *)data)[i] = smelt_f32_to_f16((float)v.f); break;
    case SMELT_DT_BFLOAT16: ((uint16_t *)data)[i] = smelt_f32_to_bf16((float)v.f); break;
    case SMELT_DT_BOOL:
    case SMELT_DT_UINT8:
    case SMELT_DT_INT8: ((uint8_t *)data)[i] = (uint8_t)v.i; break;
    case SMELT_DT_UINT16:
    case SMELT_DT_INT16: ((uint16_t *)data)[i] = (uint16_t)v.i; break;
    case SMELT_DT_UINT32:
    case SMELT_DT_INT32: ((uint32_t *)data)[i] = (uint32_t)v.i; break;
    default:
        if (smelt_dtype_is_lowbit(v.dtype))
            ((uint8_t *)data)[i] = (uint8_t)v.i;
        else
            ((uint64_t *)data)[i] = (uint64_t)v.i;
        break;
    }
}

/* Element offset of an access; checks every index against the buffer. */
static smelt_status flat_offset(tir_interp *it, const tir_interp_buf *bb, int n, ir_expr *const *idx,
                                int64_t *out)
{
    const ir_buffer *buf = bb->buf;
    bool multi = n == buf->rank && n != 1;
    if (!multi && n != 1)
        return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: %d indices into rank-%d buffer '%s'",
                          n, buf->rank, buf->name);
    int64_t off = 0;
    for (int d = 0; d < n; d++) {
        tir_value v;
        SMELT_TRY(tir_interp_eval(it, idx[d], &v));
        int64_t i = cast_value(v, SMELT_DT_INT64).i, dim = multi ? buf->shape[d] : bb->n_elems;
        if (i < 0 || i >= dim)
            return smelt_errf(it->ctx, SMELT_ERR_RUNTIME,
                              "tir interpreter: index %lld out of range [0, %lld) in dim %d of '%s'",
                              (long long)i, (long long)dim, d, buf->name);
        off = multi ? off * dim + i : i;
    }
    if (off >= bb->n_elems)
        return smelt_errf(it->ctx, SMELT_ERR_RUNTIME, "tir interpreter: element %lld outside '%s' (%lld elements)",
                          (long long)off, buf->name, (long long)bb->n_elems);
    *out = off;
    return SMELT_OK;
}

static smelt_status access(tir_interp *it, const ir_buffer *buf, int n, ir_expr *const *idx,
                           const tir_interp_buf **bb, int64_t *off)
{
    *bb = find_buf(it, buf);
    if (!*bb) return smelt_errf(it->ctx, SMELT_ERR_ARG, "tir interpreter: buffer '%s' is not bound", buf->name);
    return flat_offset(it, *bb, n, idx, off);
}

/* ---- expressions ---- */

static double float_binary(ir_kind k, double a, double b)
{
    switch (k) {
    case IR_ADD: return a + b;
    case IR_SUB: return a - b;
    case IR_MUL: return a * b;
    case IR_DIV: return a / b;
    case IR_MOD: return fmod(a, b);
    case IR_FLOORDIV: return floor(a / b);
    case IR_FLOORMOD: return a - floor(a / b) * b;
    /* the emitted C's semantics (codegen.h): with a NaN operand, b */
    case IR_MIN: return a < b ? a : b;
    case IR_MAX: return a > b ? a : b;
    case IR_EQ: return a == b;
    case IR_NE: return a != b;
    case IR_LT: return a < b;
    case IR_LE: return a <= b;
    case IR_GT: return a > b;
    case IR_GE: return a >= b;
    case IR_AND: return a != 0 && b != 0;
    default: return a != 0 || b != 0;
    }
}

static smelt_status eval_binary(tir_interp *it, const ir_expr *e, tir_value *out)
{
    tir_value a, b;
    SMELT_TRY(tir_interp_eval(it, e->bin.a, &a));
    if (e->kind == IR_AND || e->kind == IR_OR) {
        if (truthy(a) == (e->kind == IR_OR)) return *out = tir_value_int(e->dtype, truthy(a)), SMELT_OK;
        SMELT_TRY(tir_interp_eval(it, e->bin.b, &b));
        return *out = tir_value_int(e->dtype, truthy(b)), SMELT_OK;
    }
    SMELT_TRY(tir_interp_eval(it, e->bin.b, &b));
    smelt_dtype dt = a.dtype;
    b = cast_value(b, dt);
    if (tir_dtype_is_float(dt)) {
        double r = float_binary(e->kind, a.f, b.f);
        *out = tir_dtype_is_float(e->dtype) ? tir_value_float(e->dtype, r) : tir_value_int(e->dtype, r != 0);
        return SMELT_OK;
    }
    int64_t r;
    if (!tir_fold_int(e->kind, dt, a.i, b.i, &r))
        return smelt_errf(it->ctx, SMELT_ERR_RUNTIME, "tir interpreter: integer %s by zero",
                          ir_kind_name(e->kind));
    *out = tir_value_int(e->dtype, r);
    return SMELT_OK;
}

/* float32 math through the float functions generated C code calls. */
static double call_f32(ir_call_op op, float x, float y)
{
    switch (op) {
    case IR_CALL_EXP: return expf(x);
    case IR_CALL_LOG: return logf(x);
    case IR_CALL_SQRT: return sqrtf(x);
    case IR_CALL_TANH: return tanhf(x);
    case IR_CALL_ERF: return erff(x);
    case IR_CALL_POW: return powf(x, y);
    case IR_CALL_SIN: return sinf(x);
    case IR_CALL_COS: return cosf(x);
    case IR_CALL_FMOD: return fmodf(x, y);
    case IR_CALL_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case IR_CALL_TAN: return tanf(x);
    case IR_CALL_ASIN: return asinf(x);
    case IR_CALL_ACOS: return acosf(x);
    case IR_CALL_ATAN: return atanf(x);
    case IR_CALL_SINH: return sinhf(x);
    case IR_CALL_COSH: return coshf(x);
    case IR_CALL_ASINH: return asinhf(x);
    case IR_CALL_ACOSH: return acoshf(x);
    case IR_CALL_ATANH: return atanhf(x);
    default: return tir_call_f64(op, x, y);
    }
}

static smelt_status eval_call(tir_interp *it, const ir_expr *e, tir_value *out)
{
    tir_value args[3] = {{0}, {0}, {0}};
    for (int i = 0; i < e->call.n; i++) SMELT_TRY(tir_interp_eval(it, e->call.args[i], &args[i]));
    if (e->call.n == 0) return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: call without args");
    if (e->call.op == IR_CALL_LB_DECODE) {
        *out = tir_value_float(e->dtype, tir_lowbit_decode(args[0].dtype, args[0].i));
        return SMELT_OK;
    }
    if (e->call.op == IR_CALL_BITCAST) {
        double f;
        int64_t i;
        tir_bitcast(args[0].dtype, args[0].f, args[0].i, e->dtype, &f, &i);
        *out = tir_dtype_is_float(e->dtype) ? tir_value_float(e->dtype, f) : tir_value_int(e->dtype, i);
        return SMELT_OK;
    }
    if (e->call.op == IR_CALL_LB_ENCODE) {
        bool f = tir_dtype_is_float(args[0].dtype);
        *out = tir_value_int(e->dtype, tir_lowbit_encode(e->dtype, f, args[0].f, args[0].i, (int)args[1].i));
        return SMELT_OK;
    }
    if (!tir_dtype_is_float(args[0].dtype) && e->call.op == IR_CALL_ABS && tir_dtype_is_int(e->dtype)) {
        *out = tir_value_int(e->dtype, args[0].i < 0 ? (int64_t)(0 - (uint64_t)args[0].i) : args[0].i);
        return SMELT_OK;
    }
    if (e->call.op == IR_CALL_POW && tir_dtype_is_int(e->dtype) && !tir_dtype_is_float(args[0].dtype) &&
        !tir_dtype_is_float(args[1].dtype)) {
        *out = tir_value_int(e->dtype, (int64_t)ir_ipow_u64((uint64_t)args[0].i, (uint64_t)args[1].i));
        return SMELT_OK;
    }
    double x = tir_value_to_double(args[0]), y = e->call.n > 1 ? tir_value_to_double(args[1]) : 0;
    bool f32 = args[0].dtype == SMELT_DT_FLOAT32 || args[0].dtype == SMELT_DT_FLOAT16 ||
               args[0].dtype == SMELT_DT_BFLOAT16;
    double r = f32 ? call_f32(e->call.op, (float)x, (float)y) : tir_call_f64(e->call.op, x, y);
    *out = cast_value(tir_value_float(SMELT_DT_FLOAT64, r), e->dtype);
    return SMELT_OK;
}

static tir_value reduce_identity(ir_reduce_op op, smelt_dtype dt)
{
    bool f = tir_dtype_is_float(dt);
    switch (op) {
    case IR_REDUCE_SUM: return f ? tir_value_float(dt, 0) : tir_value_int(dt, 0);
    case IR_REDUCE_PROD: return f ? tir_value_float(dt, 1) : tir_value_int(dt, 1);
    case IR_REDUCE_MAX: return f ? tir_value_float(dt, -INFINITY) : tir_value_int(dt, tir_dtype_min(dt));
    default: return f ? tir_value_float(dt, INFINITY) : tir_value_int(dt, tir_dtype_max(dt));
    }
}

static tir_value reduce_combine(ir_reduce_op op, tir_value acc, tir_value v)
{
    static const ir_kind kinds[] = {[IR_REDUCE_SUM] = IR_ADD, [IR_REDUCE_PROD] = IR_MUL,
                                    [IR_REDUCE_MAX] = IR_MAX, [IR_REDUCE_MIN] = IR_MIN};
    v = cast_value(v, acc.dtype);
    if (tir_dtype_is_float(acc.dtype)) return tir_value_float(acc.dtype, float_binary(kinds[op], acc.f, v.f));
    int64_t r = 0;
    tir_fold_int(kinds[op], acc.dtype, acc.i, v.i, &r);
    return tir_value_int(acc.dtype, r);
}

/* Loop over reduce axes [axis, n_axes) accumulating into *acc. */
static smelt_status eval_reduce_axes(tir_interp *it, const ir_expr *e, int axis, tir_value *acc)
{
    if (axis == e->reduce.n_axes) {
        tir_value v;
        SMELT_TRY(tir_interp_eval(it, e->reduce.src, &v));
        *acc = reduce_combine(e->reduce.op, *acc, v);
        return SMELT_OK;
    }
    const ir_axis *ax = &e->reduce.axes[axis];
    int slot = it->n_vars;
    SMELT_TRY(push_var(it, ax->var, tir_value_int(ax->var->dtype, 0)));
    smelt_status st = SMELT_OK;
    for (int64_t i = 0; i < ax->extent && st == SMELT_OK; i++) {
        it->vars[slot].val = tir_value_int(ax->var->dtype, i);
        st = eval_reduce_axes(it, e, axis + 1, acc);
    }
    it->n_vars = slot;
    return st;
}

static smelt_status eval_var(tir_interp *it, const ir_expr *e, tir_value *out)
{
    for (int i = it->n_vars - 1; i >= 0; i--)
        if (it->vars[i].var == e->var) return *out = it->vars[i].val, SMELT_OK;
    return smelt_errf(it->ctx, SMELT_ERR_ARG, "tir interpreter: variable '%s' has no value", e->var->name);
}

smelt_status tir_interp_eval(tir_interp *it, const ir_expr *e, tir_value *out)
{
    if (!e) return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: null expression");
    switch (e->kind) {
    case IR_INT: *out = tir_value_int(e->dtype, e->i); return SMELT_OK;
    case IR_FLOAT: *out = tir_value_float(e->dtype, e->f); return SMELT_OK;
    case IR_VAR: return eval_var(it, e, out);
    case IR_NOT: {
        tir_value a;
        SMELT_TRY(tir_interp_eval(it, e->bin.a, &a));
        *out = tir_value_int(e->dtype, !truthy(a));
        return SMELT_OK;
    }
    case IR_CAST: {
        tir_value a;
        SMELT_TRY(tir_interp_eval(it, e->bin.a, &a));
        *out = cast_value(a, e->dtype);
        return SMELT_OK;
    }
    case IR_SELECT: {
        tir_value c;
        SMELT_TRY(tir_interp_eval(it, e->select.cond, &c));
        SMELT_TRY(tir_interp_eval(it, truthy(c) ? e->select.t : e->select.f, out));
        *out = cast_value(*out, e->dtype);
        return SMELT_OK;
    }
    case IR_CALL: return eval_call(it, e, out);
    case IR_LOAD: {
        const tir_interp_buf *bb;
        int64_t off;
        SMELT_TRY(access(it, e->load.buf, e->load.n, e->load.idx, &bb, &off));
        *out = read_elem(bb->buf->dtype, bb->data, off);
        return SMELT_OK;
    }
    case IR_REDUCE:
        *out = reduce_identity(e->reduce.op, e->dtype);
        return eval_reduce_axes(it, e, 0, out);
    default: return eval_binary(it, e, out);
    }
}

/* ---- statements ---- */

static smelt_status run_for(tir_interp *it, const ir_stmt *s)
{
    tir_value mn, ex;
    SMELT_TRY(tir_interp_eval(it, s->for_.min, &mn));
    SMELT_TRY(tir_interp_eval(it, s->for_.extent, &ex));
    int64_t lo = cast_value(mn, SMELT_DT_INT64).i, n = cast_value(ex, SMELT_DT_INT64).i;
    int slot = it->n_vars;
    SMELT_TRY(push_var(it, s->for_.var, tir_value_int(s->for_.var->dtype, lo)));
    smelt_status st = SMELT_OK;
    for (int64_t i = 0; i < n && st == SMELT_OK; i++) {
        it->vars[slot].val = tir_value_int(s->for_.var->dtype, (int64_t)((uint64_t)lo + (uint64_t)i));
        st = tir_interp_run(it, s->for_.body);
    }
    it->n_vars = slot;
    return st;
}

static smelt_status run_store(tir_interp *it, const ir_stmt *s)
{
    const tir_interp_buf *bb;
    int64_t off;
    tir_value v;
    SMELT_TRY(tir_interp_eval(it, s->store.value, &v));
    SMELT_TRY(access(it, s->store.buf, s->store.n, s->store.idx, &bb, &off));
    write_elem(cast_value(v, bb->buf->dtype), bb->data, off);
    return SMELT_OK;
}

static smelt_status run_allocate(tir_interp *it, const ir_stmt *s)
{
    const ir_buffer *buf = s->alloc.buf;
    int64_t n = 1;
    for (int d = 0; d < buf->rank; d++)
        if (buf->shape[d] < 0 || smelt_mul_overflow_i64(n, buf->shape[d], &n) || n > SMELT_LIMIT_TENSOR_ELEMS)
            return smelt_errf(it->ctx, SMELT_ERR_LIMIT, "tir interpreter: buffer '%s' is too large", buf->name);
    size_t size = smelt_dtype_size(buf->dtype);
    void *data = smelt_calloc((size_t)(n ? n : 1), size ? size : 1);
    if (!data) return smelt_errf(it->ctx, SMELT_ERR_NOMEM, "tir interpreter: out of memory for '%s'", buf->name);
    int mark = it->n_bufs;
    smelt_status st = push_buf(it, (tir_interp_buf){buf, data, n, true});
    if (st != SMELT_OK) {
        smelt_free(data);
        return st;
    }
    st = tir_interp_run(it, s->alloc.body);
    smelt_free(data);
    it->n_bufs = mark;
    return st;
}

/* ---- micro-kernels ---- */

/* Element base + off of a call's buffer argument, bounds-checked. */
static smelt_status kernel_index(tir_interp *it, const tir_interp_buf *bb, int64_t base, int64_t off,
                                 int64_t *i)
{
    *i = base + off;
    if (*i >= 0 && *i < bb->n_elems) return SMELT_OK;
    return smelt_errf(it->ctx, SMELT_ERR_RUNTIME,
                      "tir interpreter: micro-kernel access %lld outside '%s' (%lld elements)",
                      (long long)*i, bb->buf->name, (long long)bb->n_elems);
}

/* A float32 element at base + off of a call's buffer argument, bounds-checked. */
static smelt_status kernel_elem(tir_interp *it, const tir_interp_buf *bb, int64_t base, int64_t off,
                                float **out)
{
    int64_t i;
    SMELT_TRY(kernel_index(it, bb, base, off, &i));
    *out = (float *)bb->data + i;
    return SMELT_OK;
}

/* smelt.gemm_f32(C, A, B, M, N, K, ldc, lda_i, lda_k, ldb_k, ldb_j):
 * C[i*ldc+j] += A[i*lda_i+k*lda_k] * B[k*ldb_k+j*ldb_j], k innermost, one
 * float rounding per operation like the loop nest it replaces. */
static smelt_status run_gemm_f32(tir_interp *it, const ir_stmt *s)
{
    if (s->call.n != 11)
        return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: smelt.gemm_f32 takes 11 arguments");
    const tir_interp_buf *bb[3];
    int64_t v[11];
    for (int a = 0; a < 11; a++) {
        const ir_call_arg *arg = &s->call.args[a];
        if ((a < 3) != (arg->buf != NULL) || (arg->buf && arg->buf->dtype != SMELT_DT_FLOAT32))
            return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: bad smelt.gemm_f32 argument %d", a);
        tir_value x;
        SMELT_TRY(tir_interp_eval(it, arg->index, &x));
        v[a] = cast_value(x, SMELT_DT_INT64).i;
        if (a < 3 && !(bb[a] = find_buf(it, arg->buf)))
            return smelt_errf(it->ctx, SMELT_ERR_ARG, "tir interpreter: buffer '%s' is not bound", arg->buf->name);
    }
    for (int64_t i = 0; i < v[3]; i++)
        for (int64_t j = 0; j < v[4]; j++) {
            float *c = NULL, *pa = NULL, *pb = NULL;
            SMELT_TRY(kernel_elem(it, bb[0], v[0], i * v[6] + j, &c));
            for (int64_t k = 0; k < v[5]; k++) {
                SMELT_TRY(kernel_elem(it, bb[1], v[1], i * v[7] + k * v[8], &pa));
                SMELT_TRY(kernel_elem(it, bb[2], v[2], k * v[9] + j * v[10], &pb));
                float prod = *pa * *pb;
                *c = *c + prod;
            }
        }
    return SMELT_OK;
}

/* smelt.transpose_f32(dst, src, M, N, ldd, lds): dst[i*ldd+j] = src[i+j*lds]. */
static smelt_status run_transpose_f32(tir_interp *it, const ir_stmt *s)
{
    if (s->call.n != 6)
        return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: smelt.transpose_f32 takes 6 arguments");
    const tir_interp_buf *bb[2];
    int64_t v[6];
    for (int a = 0; a < 6; a++) {
        const ir_call_arg *arg = &s->call.args[a];
        if ((a < 2) != (arg->buf != NULL) || (arg->buf && arg->buf->dtype != SMELT_DT_FLOAT32))
            return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: bad smelt.transpose_f32 argument %d", a);
        tir_value x;
        SMELT_TRY(tir_interp_eval(it, arg->index, &x));
        v[a] = cast_value(x, SMELT_DT_INT64).i;
        if (a < 2 && !(bb[a] = find_buf(it, arg->buf)))
            return smelt_errf(it->ctx, SMELT_ERR_ARG, "tir interpreter: buffer '%s' is not bound", arg->buf->name);
    }
    for (int64_t i = 0; i < v[2]; i++)
        for (int64_t j = 0; j < v[3]; j++) {
            float *d = NULL, *src = NULL;
            SMELT_TRY(kernel_elem(it, bb[0], v[0], i * v[4] + j, &d));
            SMELT_TRY(kernel_elem(it, bb[1], v[1], i + j * v[5], &src));
            *d = *src;
        }
    return SMELT_OK;
}

/* A call's arguments: buffer pointers (element index applied) for the
 * first n_bufs, int64 values for the rest; each buffer must hold at least
 * need[i] elements from its index (computed by the caller's check). */
typedef struct kernel_args {
    void *ptr[6];
    int64_t room[6]; /* elements from the pointer to the buffer's end */
    int64_t v[26];
} kernel_args;

static smelt_status read_kernel_args(tir_interp *it, const ir_stmt *s, int n, int n_bufs,
                                     kernel_args *ka)
{
    if (s->call.n != n)
        return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: %s takes %d arguments",
                          s->call.kernel, n);
    for (int a = 0; a < n; a++) {
        const ir_call_arg *arg = &s->call.args[a];
        if ((a < n_bufs) != (arg->buf != NULL))
            return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: bad %s argument %d",
                              s->call.kernel, a);
        tir_value x;
        SMELT_TRY(tir_interp_eval(it, arg->index, &x));
        ka->v[a] = cast_value(x, SMELT_DT_INT64).i;
        if (a >= n_bufs) continue;
        const tir_interp_buf *bb = find_buf(it, arg->buf);
        if (!bb) return smelt_errf(it->ctx, SMELT_ERR_ARG, "tir interpreter: buffer '%s' is not bound", arg->buf->name);
        if (ka->v[a] < 0 || ka->v[a] > bb->n_elems)
            return smelt_errf(it->ctx, SMELT_ERR_RUNTIME, "tir interpreter: %s argument %d outside '%s'",
                              s->call.kernel, a, arg->buf->name);
        ka->ptr[a] = (char *)bb->data + ka->v[a] * (int64_t)smelt_dtype_size(bb->buf->dtype);
        ka->room[a] = bb->n_elems - ka->v[a];
    }
    return SMELT_OK;
}

static smelt_status kernel_room(tir_interp *it, const ir_stmt *s, const kernel_args *ka, int a,
                                int64_t need)
{
    if (need <= ka->room[a]) return SMELT_OK;
    return smelt_errf(it->ctx, SMELT_ERR_RUNTIME, "tir interpreter: %s reads or writes %lld elements "
                      "of argument %d where %lld remain", s->call.kernel, (long long)need, a,
                      (long long)ka->room[a]);
}

/* smelt.qpack_u8(Bp, X, t, KT, K4, K, P, Pp, H, W, KH, KW, Wo, sh, sw, ph, pw, dh, dw, xz, flip) */
static smelt_status run_qpack_u8(tir_interp *it, const ir_stmt *s)
{
    kernel_args ka;
    SMELT_TRY(read_kernel_args(it, s, 21, 2, &ka));
    const int64_t *v = ka.v;
    int64_t khw = v[10] * v[11], channels = khw > 0 ? (v[5] + khw - 1) / khw : 0;
    SMELT_TRY(kernel_room(it, s, &ka, 0, v[4] * v[7] * 4));
    SMELT_TRY(kernel_room(it, s, &ka, 1, channels * v[8] * v[9]));
    smelt_uk_qpack_u8(ka.ptr[0], ka.ptr[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10],
                      v[11], v[12], v[13], v[14], v[15], v[16], v[17], v[18], v[19], v[20]);
    return SMELT_OK;
}

/* smelt.qgemm_u8s8(Y, Bp, Ap, comp, mult, t, n_pt, MT, PT, M, Mpad, P, Pp, K4, yz, lo, hi, safe16) */
static smelt_status run_qgemm_u8s8(tir_interp *it, const ir_stmt *s)
{
    kernel_args ka;
    SMELT_TRY(read_kernel_args(it, s, 18, 5, &ka));
    const int64_t *v = ka.v;
    SMELT_TRY(kernel_room(it, s, &ka, 0, v[9] * v[11]));
    SMELT_TRY(kernel_room(it, s, &ka, 1, v[13] * v[12] * 4));
    SMELT_TRY(kernel_room(it, s, &ka, 2, v[10] * v[13] * 4));
    SMELT_TRY(kernel_room(it, s, &ka, 3, v[10]));
    SMELT_TRY(kernel_room(it, s, &ka, 4, v[10]));
    smelt_uk_qgemm_u8s8(ka.ptr[0], ka.ptr[1], ka.ptr[2], ka.ptr[3], ka.ptr[4], v[5], v[6], v[7], v[8],
                        v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[16], v[17]);
    return SMELT_OK;
}

/* smelt.qmatmul_u8s8(Y, A, Bq, colsum, mult, Az, t, n_nt, MT, NT, M, N, K, flip, yz, lo, hi,
 *                    requant, safe16) */
static smelt_status run_qmatmul_u8s8(tir_interp *it, const ir_stmt *s)
{
    kernel_args ka;
    SMELT_TRY(read_kernel_args(it, s, 19, 6, &ka));
    const int64_t *v = ka.v;
    int64_t M = v[10], N = v[11], K = v[12], Npad = (N + 15) / 16 * 16;
    SMELT_TRY(kernel_room(it, s, &ka, 0, M * N));
    SMELT_TRY(kernel_room(it, s, &ka, 1, M * K));
    SMELT_TRY(kernel_room(it, s, &ka, 2, Npad * ((K + 3) / 4) * 4));
    SMELT_TRY(kernel_room(it, s, &ka, 3, Npad));
    if (v[17]) SMELT_TRY(kernel_room(it, s, &ka, 4, Npad));
    SMELT_TRY(kernel_room(it, s, &ka, 5, 1));
    smelt_uk_qmatmul_u8s8(ka.ptr[0], ka.ptr[1], ka.ptr[2], ka.ptr[3], ka.ptr[4], ka.ptr[5], v[6], v[7],
                          v[8], v[9], M, N, K, v[13], v[14], v[15], v[16], v[17], v[18]);
    return SMELT_OK;
}

/* smelt.qdwconv_u8(Y, X, W16, comp, mult, tmp, t, CT, C, H, W, KH, KW, Ho, Wo, sh, sw, ph, pw, dh,
 *                  dw, xz, flip, yz, lo, hi) */
static smelt_status run_qdwconv_u8(tir_interp *it, const ir_stmt *s)
{
    kernel_args ka;
    SMELT_TRY(read_kernel_args(it, s, 26, 6, &ka));
    const int64_t *v = ka.v;
    int64_t C = v[8], H = v[9], W = v[10], KH = v[11], KW = v[12], Ho = v[13], Wo = v[14];
    int64_t sh = v[15], sw = v[16], dh = v[19], dw = v[20], CT = v[7], t = v[6];
    if (sw < 1 || KH < 1 || KW < 1 || Ho < 1 || Wo < 1 || CT < 1)
        return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: bad %s geometry", s->call.kernel);
    int64_t slice = sw * ((Ho - 1) * sh + (KH - 1) * dh + 1) * (Wo + 16 + (KW - 1) * dw / sw);
    SMELT_TRY(kernel_room(it, s, &ka, 0, C * Ho * Wo));
    SMELT_TRY(kernel_room(it, s, &ka, 1, C * H * W));
    SMELT_TRY(kernel_room(it, s, &ka, 2, C * ((KH * KW + 1) / 2) * 2));
    SMELT_TRY(kernel_room(it, s, &ka, 3, C));
    SMELT_TRY(kernel_room(it, s, &ka, 4, C));
    SMELT_TRY(kernel_room(it, s, &ka, 5, (t + 1) * slice));
    smelt_uk_qdwconv_u8(ka.ptr[0], ka.ptr[1], ka.ptr[2], ka.ptr[3], ka.ptr[4], ka.ptr[5], t, CT, C, H, W,
                        KH, KW, Ho, Wo, sh, sw, v[17], v[18], dh, dw, v[21], v[22], v[23], v[24], v[25]);
    return SMELT_OK;
}

/* smelt.dynq_u8(Y, X, n) */
static smelt_status run_dynq_u8(tir_interp *it, const ir_stmt *s)
{
    kernel_args ka;
    SMELT_TRY(read_kernel_args(it, s, 3, 2, &ka));
    SMELT_TRY(kernel_room(it, s, &ka, 0, ka.v[2]));
    SMELT_TRY(kernel_room(it, s, &ka, 1, ka.v[2]));
    smelt_uk_dynq_u8(ka.ptr[0], ka.ptr[1], ka.v[2]);
    return SMELT_OK;
}

/* smelt.qadd_u8(Y, A, B, prm, t, chunk, n, a_signed, b_signed, y_signed) */
static smelt_status run_qadd_u8(tir_interp *it, const ir_stmt *s)
{
    kernel_args ka;
    SMELT_TRY(read_kernel_args(it, s, 10, 4, &ka));
    const int64_t *v = ka.v;
    for (int a = 0; a < 3; a++) SMELT_TRY(kernel_room(it, s, &ka, a, v[6]));
    SMELT_TRY(kernel_room(it, s, &ka, 3, 6));
    smelt_uk_qadd_u8(ka.ptr[0], ka.ptr[1], ka.ptr[2], ka.ptr[3], v[4], v[5], v[6], v[7], v[8], v[9]);
    return SMELT_OK;
}

/* smelt.roialign_f32(Y, X, roi, acc, C, H, W, oh, ow, ratio, half_pixel, max, bound_h,
 * bound_w, scale): the kernel's own text (codegen/uk_roialign_f32.h) */
static smelt_status run_roialign_f32(tir_interp *it, const ir_stmt *s)
{
    kernel_args ka;
    SMELT_TRY(read_kernel_args(it, s, 15, 4, &ka));
    const int64_t *v = ka.v;
    tir_value scale;
    SMELT_TRY(tir_interp_eval(it, s->call.args[14].index, &scale));
    SMELT_TRY(kernel_room(it, s, &ka, 0, v[4] * v[7] * v[8]));
    SMELT_TRY(kernel_room(it, s, &ka, 1, v[4] * v[5] * v[6]));
    SMELT_TRY(kernel_room(it, s, &ka, 2, 4));
    SMELT_TRY(kernel_room(it, s, &ka, 3, v[4]));
    smelt_uk_roialign_f32(ka.ptr[0], ka.ptr[1], ka.ptr[2], ka.ptr[3], v[4], v[5], v[6], v[7], v[8],
                          v[9], v[10], v[11], v[12], v[13], tir_value_to_double(scale));
    return SMELT_OK;
}

/* A call argument: the bound buffer (buffer arguments) or the value. */
static smelt_status call_arg(tir_interp *it, const ir_stmt *s, int a, const tir_interp_buf **bb,
                             tir_value *v)
{
    const ir_call_arg *arg = &s->call.args[a];
    SMELT_TRY(tir_interp_eval(it, arg->index, v));
    if (arg->buf && !(*bb = find_buf(it, arg->buf)))
        return smelt_errf(it->ctx, SMELT_ERR_ARG, "tir interpreter: buffer '%s' is not bound", arg->buf->name);
    return SMELT_OK;
}

/* Element base + off of a call's buffer argument as a double, bounds-checked. */
static smelt_status kernel_read(tir_interp *it, const tir_interp_buf *bb, int64_t base, int64_t off,
                                double *out)
{
    int64_t i;
    SMELT_TRY(kernel_index(it, bb, base, off, &i));
    *out = tir_value_to_double(read_elem(bb->buf->dtype, bb->data, i));
    return SMELT_OK;
}

enum { ATT_O, ATT_Q, ATT_K, ATT_V, ATT_M, ATT_ROWS, ATT_Q0, ATT_NKV, ATT_D, ATT_DV, ATT_Q_RS,
       ATT_K_RS, ATT_K_CS, ATT_V_RS, ATT_O_RS, ATT_M_RS, ATT_M_CS, ATT_MODE, ATT_FILL, ATT_SCALE,
       ATT_CAUSAL, ATT_KBLOCK, ATT_MASKED_ZERO, ATT_NARGS };

/* One row's scores, masked (the micro-kernel's meaning, in double). */
static smelt_status attention_scores(tir_interp *it, const tir_interp_buf *const *bb,
                                     const int64_t *base, const double *v, int64_t r, double *p)
{
    for (int64_t j = 0; j < (int64_t)v[ATT_NKV]; j++) {
        double s = 0, x = 0, y = 0;
        for (int64_t d = 0; d < (int64_t)v[ATT_D]; d++) {
            SMELT_TRY(kernel_read(it, bb[ATT_Q], base[ATT_Q], r * (int64_t)v[ATT_Q_RS] + d, &x));
            SMELT_TRY(kernel_read(it, bb[ATT_K], base[ATT_K],
                                  j * (int64_t)v[ATT_K_RS] + d * (int64_t)v[ATT_K_CS], &y));
            s += x * y;
        }
        s *= v[ATT_SCALE];
        if (v[ATT_MODE] != 0) {
            SMELT_TRY(kernel_read(it, bb[ATT_M], base[ATT_M],
                                  r * (int64_t)v[ATT_M_RS] + j * (int64_t)v[ATT_M_CS], &x));
            if (v[ATT_MODE] == 1) s += x;
            else if ((x != 0) == (v[ATT_MODE] == 2)) s = v[ATT_FILL];
        }
        if (v[ATT_CAUSAL] >= 0 && j > (int64_t)(v[ATT_Q0] + v[ATT_CAUSAL]) + r) s = -INFINITY;
        p[j] = s;
    }
    return SMELT_OK;
}

/* smelt.attention_f32 (codegen/uk_attention_f32.h): per row, softmax of the
 * masked scores times V, in double (the kernel's streaming is a schedule of
 * this; tests compare within float tolerance). */
static smelt_status run_attention_f32(tir_interp *it, const ir_stmt *s)
{
    if (s->call.n != ATT_NARGS)
        return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: smelt.attention_f32 takes %d arguments", ATT_NARGS);
    const tir_interp_buf *bb[ATT_M + 1] = {NULL};
    int64_t base[ATT_M + 1] = {0};
    double v[ATT_NARGS] = {0};
    for (int a = 0; a < ATT_NARGS; a++) {
        tir_value x;
        if ((a <= ATT_M) != (s->call.args[a].buf != NULL))
            return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: bad smelt.attention_f32 argument %d", a);
        SMELT_TRY(call_arg(it, s, a, a <= ATT_M ? &bb[a] : NULL, &x));
        if (a <= ATT_M) base[a] = cast_value(x, SMELT_DT_INT64).i;
        else v[a] = tir_value_to_double(x);
    }
    double *p = smelt_alloc(sizeof *p * (size_t)(v[ATT_NKV] > 0 ? v[ATT_NKV] : 1));
    if (!p) return smelt_errf(it->ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_status st = SMELT_OK;
    for (int64_t r = 0; st == SMELT_OK && r < (int64_t)v[ATT_ROWS]; r++) {
        st = attention_scores(it, bb, base, v, r, p);
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < (int64_t)v[ATT_NKV]; j++) mx = p[j] > mx ? p[j] : mx;
        bool zero = mx == -INFINITY && v[ATT_MASKED_ZERO] != 0;
        for (int64_t j = 0; j < (int64_t)v[ATT_NKV]; j++) sum += p[j] = zero ? 0 : exp(p[j] - mx);
        if (zero) sum = 1;
        for (int64_t c = 0; st == SMELT_OK && c < (int64_t)v[ATT_DV]; c++) {
            double acc = 0, x = 0;
            for (int64_t j = 0; st == SMELT_OK && j < (int64_t)v[ATT_NKV]; j++) {
                st = kernel_read(it, bb[ATT_V], base[ATT_V], j * (int64_t)v[ATT_V_RS] + c, &x);
                acc += p[j] * x;
            }
            float *o = NULL;
            if (st == SMELT_OK) st = kernel_elem(it, bb[ATT_O], base[ATT_O], r * (int64_t)v[ATT_O_RS] + c, &o);
            if (st == SMELT_OK) *o = (float)(acc / sum);
        }
    }
    smelt_free(p);
    return st;
}

/* A failed check is the run's error, as in compiled code and the reference. */
static smelt_status run_check(tir_interp *it, const ir_stmt *s)
{
    tir_value ok, v, pos;
    SMELT_TRY(tir_interp_eval(it, s->check.cond, &ok));
    if (truthy(ok)) return SMELT_OK;
    SMELT_TRY(tir_interp_eval(it, s->check.value, &v));
    SMELT_TRY(tir_interp_eval(it, s->check.position, &pos));
    char msg[768];
    ir_check_format(s->check.site, cast_value(v, SMELT_DT_INT64).i,
                    cast_value(pos, SMELT_DT_INT64).i, msg, sizeof msg);
    return smelt_errf(it->ctx, SMELT_ERR_RUNTIME, "%s", msg);
}

smelt_status tir_interp_run(tir_interp *it, const ir_stmt *s)
{
    if (!s) return SMELT_OK;
    if (it->max_steps > 0 && ++it->steps > it->max_steps)
        return smelt_errf(it->ctx, SMELT_ERR_LIMIT, "tir interpreter: more than %lld steps",
                          (long long)it->max_steps);
    switch (s->kind) {
    case IR_STMT_FOR: return run_for(it, s);
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++) SMELT_TRY(tir_interp_run(it, s->seq.items[i]));
        return SMELT_OK;
    case IR_STMT_LET: {
        tir_value v;
        SMELT_TRY(tir_interp_eval(it, s->let.value, &v));
        int slot = it->n_vars;
        SMELT_TRY(tir_interp_set_var(it, s->let.var, v));
        smelt_status st = tir_interp_run(it, s->let.body);
        it->n_vars = slot;
        return st;
    }
    case IR_STMT_STORE: return run_store(it, s);
    case IR_STMT_ALLOCATE: return run_allocate(it, s);
    case IR_STMT_IF: {
        tir_value c;
        SMELT_TRY(tir_interp_eval(it, s->if_.cond, &c));
        return tir_interp_run(it, truthy(c) ? s->if_.then_ : s->if_.else_);
    }
    case IR_STMT_CHECK: return run_check(it, s);
    case IR_STMT_CALL:
        if (!strcmp(s->call.kernel, "smelt.gemm_f32")) return run_gemm_f32(it, s);
        if (!strcmp(s->call.kernel, "smelt.transpose_f32")) return run_transpose_f32(it, s);
        if (!strcmp(s->call.kernel, "smelt.qpack_u8")) return run_qpack_u8(it, s);
        if (!strcmp(s->call.kernel, "smelt.qgemm_u8s8")) return run_qgemm_u8s8(it, s);
        if (!strcmp(s->call.kernel, "smelt.qmatmul_u8s8")) return run_qmatmul_u8s8(it, s);
        if (!strcmp(s->call.kernel, "smelt.qdwconv_u8")) return run_qdwconv_u8(it, s);
        if (!strcmp(s->call.kernel, "smelt.dynq_u8")) return run_dynq_u8(it, s);
        if (!strcmp(s->call.kernel, "smelt.qadd_u8")) return run_qadd_u8(it, s);
        if (!strcmp(s->call.kernel, "smelt.attention_f32")) return run_attention_f32(it, s);
        if (!strcmp(s->call.kernel, "smelt.roialign_f32")) return run_roialign_f32(it, s);
        return smelt_errf(it->ctx, SMELT_ERR_UNSUPPORTED, "tir interpreter: micro-kernel call '%s' not supported",
                          s->call.kernel);
    default: return smelt_errf(it->ctx, SMELT_ERR_INTERNAL, "tir interpreter: unknown statement");
    }
}
