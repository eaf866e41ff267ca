/* A direct interpreter for tensor expressions.
 *
 * Evaluates every compute of a te graph element by element, without any
 * schedule.  It checks compute definitions against the reference kernels
 * independently of lowering and code generation (smelt check --te), so a
 * mismatch there is a compute bug, not a schedule or codegen bug.
 */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "smelt_lowbit.h"
#include "te/te.h"
#include "tir/interp.h"
#include "tir/scalar.h"

typedef struct ev_val {
    double f;
    int64_t i;
} ev_val;

typedef struct ev_env {
    const ir_var *vars[64];
    int64_t vals[64];
    int n;
} ev_env;

typedef struct ev_ctx {
    smelt_ctx *ctx;
    const te_graph *g;
    smelt_tensor *data; /* one per te tensor */
    bool failed;
} ev_ctx;

static bool is_float(smelt_dtype dt) { return op_dtype_is_float(dt); }

static int64_t wrap_int(smelt_dtype dt, int64_t v)
{
    switch (dt) {
    case SMELT_DT_INT8: return (int8_t)v;
    case SMELT_DT_INT16: return (int16_t)v;
    case SMELT_DT_INT32: return (int32_t)v;
    case SMELT_DT_UINT8: return (uint8_t)v;
    case SMELT_DT_UINT16: return (uint16_t)v;
    case SMELT_DT_UINT32: return (uint32_t)v;
    case SMELT_DT_BOOL: return v != 0;
    default: /* a low-bit type: a 4/2-bit integer, or a float8/float4 code */
        if (smelt_dtype_is_lowbit_int(dt)) return smelt_lb_wrap_int((int)dt, v);
        return smelt_dtype_is_lowbit(dt) ? (uint8_t)v : v;
    }
}

/* Round a double result to the precision of dt, as C code would. */
static double round_float(smelt_dtype dt, double v)
{
    switch (dt) {
    case SMELT_DT_FLOAT32: return (float)v;
    case SMELT_DT_FLOAT16: return smelt_f16_to_f32(smelt_f32_to_f16((float)v));
    case SMELT_DT_BFLOAT16: return smelt_bf16_to_f32(smelt_f32_to_bf16((float)v));
    default: return v;
    }
}

static ev_val mk(smelt_dtype dt, double f, int64_t i)
{
    ev_val v;
    if (is_float(dt)) {
        v.f = round_float(dt, f);
        v.i = 0;
    } else {
        v.i = wrap_int(dt, i);
        v.f = 0;
    }
    return v;
}

static ev_val eval(ev_ctx *ec, const ir_expr *e, ev_env *env);

static double as_f(const ir_expr *e, ev_val v) { return is_float(e->dtype) ? v.f : (double)v.i; }

static int64_t floordiv_i(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static ev_val eval_arith(ev_ctx *ec, const ir_expr *e, ev_val a, ev_val b)
{
    smelt_dtype dt = e->dtype;
    bool fl = is_float(dt);
    uint64_t ua = (uint64_t)a.i, ub = (uint64_t)b.i;
    switch (e->kind) {
    case IR_ADD: return mk(dt, a.f + b.f, (int64_t)(ua + ub));
    case IR_SUB: return mk(dt, a.f - b.f, (int64_t)(ua - ub));
    case IR_MUL: return mk(dt, a.f * b.f, (int64_t)(ua * ub));
    case IR_MIN: return fl ? mk(dt, a.f < b.f ? a.f : b.f, 0) : mk(dt, 0, a.i < b.i ? a.i : b.i);
    case IR_MAX: return fl ? mk(dt, a.f > b.f ? a.f : b.f, 0) : mk(dt, 0, a.i > b.i ? a.i : b.i);
    case IR_BITAND:
    case IR_BITOR:
    case IR_BITXOR:
    case IR_SHL:
    case IR_SHR: {
        int64_t r = 0;
        tir_fold_int(e->kind, dt, a.i, b.i, &r); /* never fails for these kinds */
        return mk(dt, 0, r);
    }
    default: break;
    }
    if (fl) {
        switch (e->kind) {
        case IR_DIV: return mk(dt, a.f / b.f, 0);
        case IR_FLOORDIV: return mk(dt, floor(a.f / b.f), 0);
        case IR_FLOORMOD: return mk(dt, a.f - floor(a.f / b.f) * b.f, 0);
        default: return mk(dt, fmod(a.f, b.f), 0);
        }
    }
    if (b.i == 0 || (b.i == -1 && a.i == INT64_MIN)) {
        smelt_errf(ec->ctx, SMELT_ERR_RUNTIME, "te eval: integer division by zero");
        ec->failed = true;
        return mk(dt, 0, 0);
    }
    switch (e->kind) {
    case IR_DIV: return mk(dt, 0, a.i / b.i);
    case IR_MOD: return mk(dt, 0, a.i % b.i);
    case IR_FLOORDIV: return mk(dt, 0, floordiv_i(a.i, b.i));
    default: return mk(dt, 0, a.i - floordiv_i(a.i, b.i) * b.i);
    }
}

static ev_val eval_compare(const ir_expr *e, ev_val a, ev_val b)
{
    const ir_expr *x = e->bin.a;
    bool fl = is_float(x->dtype), r = false;
    double fa = a.f, fb = b.f;
    int64_t ia = a.i, ib = b.i;
    switch (e->kind) {
    case IR_EQ: r = fl ? fa == fb : ia == ib; break;
    case IR_NE: r = fl ? fa != fb : ia != ib; break;
    case IR_LT: r = fl ? fa < fb : ia < ib; break;
    case IR_LE: r = fl ? fa <= fb : ia <= ib; break;
    case IR_GT: r = fl ? fa > fb : ia > ib; break;
    case IR_GE: r = fl ? fa >= fb : ia >= ib; break;
    case IR_AND: r = ia && ib; break;
    case IR_OR: r = ia || ib; break;
    default: break;
    }
    return mk(SMELT_DT_BOOL, 0, r);
}

static ev_val eval_call(ev_ctx *ec, const ir_expr *e, ev_env *env)
{
    ev_val a = e->call.n > 0 ? eval(ec, e->call.args[0], env) : mk(SMELT_DT_FLOAT64, 0, 0);
    ev_val b = e->call.n > 1 ? eval(ec, e->call.args[1], env) : mk(SMELT_DT_FLOAT64, 0, 0);
    double x = e->call.n > 0 ? as_f(e->call.args[0], a) : 0;
    double y = e->call.n > 1 ? as_f(e->call.args[1], b) : 0;
    if (e->call.op == IR_CALL_LB_DECODE)
        return mk(e->dtype, tir_lowbit_decode(e->call.args[0]->dtype, a.i), 0);
    if (e->call.op == IR_CALL_BITCAST) {
        double f;
        int64_t i;
        tir_bitcast(e->call.args[0]->dtype, a.f, a.i, e->dtype, &f, &i);
        return mk(e->dtype, f, i);
    }
    if (e->call.op == IR_CALL_LB_ENCODE)
        return mk(e->dtype, 0,
                  tir_lowbit_encode(e->dtype, is_float(e->call.args[0]->dtype), a.f, a.i, (int)b.i));
    if (!is_float(e->dtype)) {
        if (e->call.op == IR_CALL_ABS) return mk(e->dtype, 0, a.i < 0 ? -a.i : a.i);
        if (e->call.op == IR_CALL_POW && !is_float(e->call.args[0]->dtype) &&
            !is_float(e->call.args[1]->dtype))
            return mk(e->dtype, 0, (int64_t)ir_ipow_u64((uint64_t)a.i, (uint64_t)b.i));
        double r = tir_call_f64(e->call.op, x, y);
        return mk(e->dtype, 0, r != r ? 0 : (int64_t)r);
    }
    return mk(e->dtype, tir_call_f64(e->call.op, x, y), 0);
}

static ev_val eval_cast(const ir_expr *e, ev_val a)
{
    smelt_dtype from = e->bin.a->dtype, to = e->dtype;
    if (is_float(to)) return mk(to, is_float(from) ? a.f : (double)a.i, 0);
    if (to == SMELT_DT_BOOL) return mk(to, 0, is_float(from) ? a.f != 0 : a.i != 0);
    if (!is_float(from)) return mk(to, 0, a.i);
    double f = a.f;
    int64_t i = f != f ? 0 : f >= 9.2e18 ? INT64_MAX : f <= -9.2e18 ? INT64_MIN : (int64_t)f;
    return mk(to, 0, i);
}

static ev_val eval_load(ev_ctx *ec, const ir_expr *e, ev_env *env)
{
    const te_tensor *t = te_tensor_of(ec->g, e->load.buf);
    if (!t) {
        smelt_errf(ec->ctx, SMELT_ERR_INTERNAL, "te eval: load of unknown tensor '%s'",
                   e->load.buf->name);
        ec->failed = true;
        return mk(e->dtype, 0, 0);
    }
    int64_t off = 0;
    for (int d = 0; d < e->load.n; d++) {
        int64_t i = eval(ec, e->load.idx[d], env).i;
        if (i < 0 || i >= t->buf->shape[d]) {
            smelt_errf(ec->ctx, SMELT_ERR_RUNTIME,
                       "te eval: index %lld out of range [0, %lld) in dim %d of '%s'",
                       (long long)i, (long long)t->buf->shape[d], d, t->buf->name);
            ec->failed = true;
            return mk(e->dtype, 0, 0);
        }
        off = off * t->buf->shape[d] + i;
    }
    const smelt_tensor *data = &ec->data[t->index];
    if (smelt_dtype_is_lowbit_float(data->dtype)) /* the code, as the IR sees it */
        return mk(e->dtype, 0, ((const uint8_t *)data->data)[off]);
    if (is_float(e->dtype)) return mk(e->dtype, op_get_f64(data, off), 0);
    return mk(e->dtype, 0, op_get_i64(data, off));
}

static ev_val eval_reduce(ev_ctx *ec, const ir_expr *e, ev_env *env);

static ev_val eval(ev_ctx *ec, const ir_expr *e, ev_env *env)
{
    if (ec->failed) return mk(e->dtype, 0, 0);
    switch (e->kind) {
    case IR_INT: return mk(e->dtype, (double)e->i, e->i);
    case IR_FLOAT: return mk(e->dtype, e->f, (int64_t)0);
    case IR_VAR:
        for (int i = env->n - 1; i >= 0; i--)
            if (env->vars[i] == e->var) return mk(e->dtype, (double)env->vals[i], env->vals[i]);
        smelt_errf(ec->ctx, SMELT_ERR_INTERNAL, "te eval: unbound variable '%s'", e->var->name);
        ec->failed = true;
        return mk(e->dtype, 0, 0);
    case IR_NOT: return mk(SMELT_DT_BOOL, 0, !eval(ec, e->bin.a, env).i);
    case IR_CAST: return eval_cast(e, eval(ec, e->bin.a, env));
    case IR_SELECT:
        return eval(ec, e->select.cond, env).i ? eval(ec, e->select.t, env)
                                               : eval(ec, e->select.f, env);
    case IR_CALL: return eval_call(ec, e, env);
    case IR_LOAD: return eval_load(ec, e, env);
    case IR_REDUCE: return eval_reduce(ec, e, env);
    case IR_EQ:
    case IR_NE:
    case IR_LT:
    case IR_LE:
    case IR_GT:
    case IR_GE: return eval_compare(e, eval(ec, e->bin.a, env), eval(ec, e->bin.b, env));
    case IR_AND: /* short-circuit, like the emitted C */
        return eval(ec, e->bin.a, env).i ? mk(SMELT_DT_BOOL, 0, eval(ec, e->bin.b, env).i != 0)
                                         : mk(SMELT_DT_BOOL, 0, 0);
    case IR_OR:
        return eval(ec, e->bin.a, env).i ? mk(SMELT_DT_BOOL, 0, 1)
                                         : mk(SMELT_DT_BOOL, 0, eval(ec, e->bin.b, env).i != 0);
    default: return eval_arith(ec, e, eval(ec, e->bin.a, env), eval(ec, e->bin.b, env));
    }
}

/* Largest (max=true) or smallest value of an integer dtype. */
static int64_t int_limit(smelt_dtype dt, bool max)
{
    switch (dt) {
    case SMELT_DT_INT8: return max ? INT8_MAX : INT8_MIN;
    case SMELT_DT_INT16: return max ? INT16_MAX : INT16_MIN;
    case SMELT_DT_INT32: return max ? INT32_MAX : INT32_MIN;
    case SMELT_DT_INT64: return max ? INT64_MAX : INT64_MIN;
    case SMELT_DT_UINT8: return max ? UINT8_MAX : 0;
    case SMELT_DT_UINT16: return max ? UINT16_MAX : 0;
    case SMELT_DT_UINT32: return max ? UINT32_MAX : 0;
    case SMELT_DT_BOOL: return max ? 1 : 0;
    default: return max ? -1 : 0; /* uint64: all ones */
    }
}

static ev_val reduce_combine(const ir_expr *e, ev_val acc, ev_val v)
{
    smelt_dtype dt = e->dtype;
    bool fl = is_float(dt);
    switch (e->reduce.op) {
    case IR_REDUCE_SUM: return fl ? mk(dt, acc.f + v.f, 0) : mk(dt, 0, (int64_t)((uint64_t)acc.i + (uint64_t)v.i));
    case IR_REDUCE_PROD: return fl ? mk(dt, acc.f * v.f, 0) : mk(dt, 0, (int64_t)((uint64_t)acc.i * (uint64_t)v.i));
    case IR_REDUCE_MAX: return fl ? (v.f > acc.f ? v : acc) : (v.i > acc.i ? v : acc);
    case IR_REDUCE_MIN: return fl ? (v.f < acc.f ? v : acc) : (v.i < acc.i ? v : acc);
    }
    return acc;
}

/* Computed here rather than through te_reduce_identity, which would build
 * IR nodes in the graph on every evaluation. */
static ev_val reduce_identity(ir_reduce_op op, smelt_dtype dt)
{
    bool fl = is_float(dt);
    switch (op) {
    case IR_REDUCE_SUM: return mk(dt, 0, 0);
    case IR_REDUCE_PROD: return mk(dt, 1, 1);
    case IR_REDUCE_MAX: return fl ? mk(dt, -INFINITY, 0) : mk(dt, 0, int_limit(dt, false));
    case IR_REDUCE_MIN: return fl ? mk(dt, INFINITY, 0) : mk(dt, 0, int_limit(dt, true));
    }
    return mk(dt, 0, 0);
}

static ev_val eval_reduce(ev_ctx *ec, const ir_expr *e, ev_env *env)
{
    ev_val acc = reduce_identity(e->reduce.op, e->dtype);
    int n = e->reduce.n_axes, base = env->n;
    if (base + n > 64) {
        smelt_errf(ec->ctx, SMELT_ERR_INTERNAL, "te eval: too many nested axes");
        ec->failed = true;
        return acc;
    }
    int64_t idx[SMELT_MAX_RANK] = {0};
    for (int a = 0; a < n; a++) {
        if (e->reduce.axes[a].extent == 0) return acc;
        env->vars[base + a] = e->reduce.axes[a].var;
    }
    env->n = base + n;
    for (;;) {
        for (int a = 0; a < n; a++) env->vals[base + a] = idx[a];
        acc = reduce_combine(e, acc, eval(ec, e->reduce.src, env));
        if (ec->failed) break;
        int a = n - 1;
        while (a >= 0 && ++idx[a] == e->reduce.axes[a].extent) idx[a--] = 0;
        if (a < 0) break;
    }
    env->n = base;
    return acc;
}

static void store(smelt_tensor *t, int64_t off, const ir_expr *body, ev_val v)
{
    if (smelt_dtype_is_lowbit_float(t->dtype)) {
        ((uint8_t *)t->data)[off] = (uint8_t)v.i;
    } else if (is_float(t->dtype)) {
        op_set_f64(t, off, is_float(body->dtype) ? v.f : (double)v.i);
    } else {
        op_set_i64(t, off, is_float(body->dtype) ? (int64_t)v.f : v.i);
    }
}

static smelt_status eval_compute(ev_ctx *ec, const te_tensor *t)
{
    smelt_tensor *out = &ec->data[t->index];
    int64_t numel = op_numel(out);
    ev_env env = {.n = t->n_axes};
    for (int d = 0; d < t->n_axes; d++) env.vars[d] = t->axes[d].var;
    int64_t idx[SMELT_MAX_RANK] = {0};
    for (int64_t off = 0; off < numel && !ec->failed; off++) {
        for (int d = 0; d < t->n_axes; d++) env.vals[d] = idx[d];
        store(out, off, t->body, eval(ec, t->body, &env));
        op_next_index(idx, out->dims, out->rank);
    }
    return ec->failed ? smelt_ctx_status(ec->ctx) : SMELT_OK;
}

/* Every point of a check stage's domain, in row-major order: the first
 * failure is the error, as in the reference kernels. */
static smelt_status eval_check(ev_ctx *ec, const te_tensor *t)
{
    const te_check *c = t->check;
    int64_t numel = 1, idx[SMELT_MAX_RANK] = {0};
    for (int d = 0; d < t->n_axes; d++) numel *= t->buf->shape[d];
    ev_env env = {.n = t->n_axes + 1};
    for (int d = 0; d < t->n_axes; d++) env.vars[d] = t->axes[d].var;
    env.vars[t->n_axes] = c->value;
    for (int64_t pos = 0; pos < numel && !ec->failed; pos++) {
        for (int d = 0; d < t->n_axes; d++) env.vals[d] = idx[d];
        env.vals[t->n_axes] = 0;
        int64_t v = eval(ec, t->body, &env).i;
        env.vals[t->n_axes] = v;
        if (!ec->failed && !eval(ec, c->ok, &env).i) {
            char msg[768];
            ir_check_format(&c->site, v, pos, msg, sizeof msg);
            return smelt_errf(ec->ctx, SMELT_ERR_RUNTIME, "%s", msg);
        }
        op_next_index(idx, t->buf->shape, t->n_axes);
    }
    return ec->failed ? smelt_ctx_status(ec->ctx) : SMELT_OK;
}

/* An extern stage's statement through the tir interpreter, over the
 * inputs' and the output's data. */
static smelt_status eval_extern(ev_ctx *ec, const te_tensor *t)
{
    tir_interp it;
    tir_interp_init(&it, ec->ctx);
    smelt_status s = SMELT_OK;
    for (int i = 0; s == SMELT_OK && i < t->ext->n_inputs; i++) {
        const te_tensor *in = t->ext->inputs[i];
        s = tir_interp_bind_buffer(&it, in->buf, ec->data[in->index].data, op_numel(&ec->data[in->index]));
    }
    smelt_tensor *out = &ec->data[t->index];
    if (s == SMELT_OK) s = tir_interp_bind_buffer(&it, t->buf, out->data, op_numel(out));
    if (s == SMELT_OK) s = tir_interp_run(&it, t->ext->body);
    tir_interp_fini(&it);
    return s;
}

smelt_status te_eval_graph(smelt_ctx *ctx, const te_graph *g, smelt_tensor *data)
{
    ev_ctx ec = {ctx, g, data, false};
    for (int i = 0; i < g->consts.len; i++) { /* placeholders whose contents g holds */
        const te_const *c = g->consts.items[i];
        smelt_tensor *d = &data[c->t->index];
        d->dtype = c->t->buf->dtype;
        d->rank = c->t->buf->rank;
        for (int k = 0; k < d->rank; k++) d->dims[k] = c->t->buf->shape[k];
        d->data = c->data; /* not the caller's to free: placeholders are not */
    }
    for (int i = 0; i < g->tensors.len; i++) {
        const te_tensor *t = g->tensors.items[i];
        if (t->kind == TE_PLACEHOLDER) continue;
        smelt_tensor *out = &data[i];
        out->dtype = t->buf->dtype;
        out->rank = t->buf->rank;
        for (int d = 0; d < out->rank; d++) out->dims[d] = t->buf->shape[d];
        int64_t numel = op_numel(out);
        out->data = smelt_calloc(numel ? (size_t)numel : 1, smelt_dtype_size(out->dtype));
        if (!out->data) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        if (t->ext) SMELT_TRY(eval_extern(&ec, t));
        else SMELT_TRY(t->check ? eval_check(&ec, t) : eval_compute(&ec, t));
    }
    return SMELT_OK;
}
