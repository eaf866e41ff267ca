/* Scalar expressions: loop IR -> C expression text.
 *
 * Every node is fully parenthesised; the C is read through the golden tests
 * and --dump-ir=c, not written by hand.  Values of float16/bfloat16 are
 * carried as float and rounded after each operation that produces one, so
 * results match element-wise float16 arithmetic.
 */
#include <math.h>
#include <string.h>

#include "codegen/c_internal.h"

/* ---- types ---- */

const char *cg_storage_type(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_DT_FLOAT32: return "float";
    case SMELT_DT_FLOAT64: return "double";
    case SMELT_DT_FLOAT16:
    case SMELT_DT_BFLOAT16:
    case SMELT_DT_UINT16: return "uint16_t";
    case SMELT_DT_INT8: return "int8_t";
    case SMELT_DT_UINT8:
    case SMELT_DT_BOOL: return "uint8_t";
    case SMELT_DT_INT16: return "int16_t";
    case SMELT_DT_INT32: return "int32_t";
    case SMELT_DT_UINT32: return "uint32_t";
    case SMELT_DT_INT64: return "int64_t";
    case SMELT_DT_UINT64: return "uint64_t";
    case SMELT_DT_INT4:
    case SMELT_DT_INT2: return "int8_t";
    default: return smelt_dtype_is_lowbit(dt) ? "uint8_t" : NULL; /* a code, or uint4/uint2 */
    }
}

const char *cg_value_type(smelt_dtype dt)
{
    if (dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16) return "float";
    if (dt == SMELT_DT_BOOL) return "int";
    return cg_storage_type(dt);
}

bool cg_dtype_is_float(smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT32 || dt == SMELT_DT_FLOAT64 || dt == SMELT_DT_FLOAT16 ||
           dt == SMELT_DT_BFLOAT16;
}

bool cg_dtype_is_signed_int(smelt_dtype dt)
{
    return dt == SMELT_DT_INT8 || dt == SMELT_DT_INT16 || dt == SMELT_DT_INT32 ||
           dt == SMELT_DT_INT64 || dt == SMELT_DT_INT4 || dt == SMELT_DT_INT2;
}

bool cg_dtype_is_unsigned_int(smelt_dtype dt)
{
    return dt == SMELT_DT_UINT8 || dt == SMELT_DT_UINT16 || dt == SMELT_DT_UINT32 ||
           dt == SMELT_DT_UINT64 || dt == SMELT_DT_UINT4 || dt == SMELT_DT_UINT2;
}

static bool is_half(smelt_dtype dt) { return dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16; }

/* Suffix of the per-type min/max helpers. */
static const char *type_suffix(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_DT_FLOAT32:
    case SMELT_DT_FLOAT16:
    case SMELT_DT_BFLOAT16: return "f32";
    case SMELT_DT_FLOAT64: return "f64";
    case SMELT_DT_INT8: return "i8";
    case SMELT_DT_UINT8: return "u8";
    case SMELT_DT_INT16: return "i16";
    case SMELT_DT_UINT16: return "u16";
    case SMELT_DT_INT32: return "i32";
    case SMELT_DT_UINT32: return "u32";
    case SMELT_DT_INT64: return "i64";
    case SMELT_DT_UINT64: return "u64";
    default: return NULL;
    }
}

/* ---- constants ---- */

static void emit_int_const(int64_t v, smelt_dtype dt, smelt_strbuf *out)
{
    if (cg_dtype_is_float(dt)) {
        smelt_strbuf_printf(out, "%s%lld.0%s%s", v < 0 ? "(" : "", (long long)v,
                            dt == SMELT_DT_FLOAT64 ? "" : "f", v < 0 ? ")" : "");
        return;
    }
    switch (dt) {
    case SMELT_DT_UINT64: smelt_strbuf_printf(out, "UINT64_C(%llu)", (unsigned long long)v); return;
    case SMELT_DT_UINT32: smelt_strbuf_printf(out, "%uu", (unsigned)v); return;
    case SMELT_DT_BOOL: smelt_strbuf_append(out, v ? "1" : "0"); return;
    default: break;
    }
    if (v == INT64_MIN)
        smelt_strbuf_append(out, "(-INT64_C(9223372036854775807) - 1)");
    else if (v < -2147483647 || v > 2147483647)
        smelt_strbuf_printf(out, v < 0 ? "(-INT64_C(%lld))" : "INT64_C(%lld)", (long long)(v < 0 ? -v : v));
    else
        smelt_strbuf_printf(out, v < 0 ? "(%lld)" : "%lld", (long long)v);
}

static void emit_float_const(double v, smelt_dtype dt, smelt_strbuf *out)
{
    bool dbl = dt == SMELT_DT_FLOAT64;
    if (isnan(v)) {
        smelt_strbuf_append(out, dbl ? "((double)NAN)" : "NAN");
        return;
    }
    if (isinf(v)) {
        smelt_strbuf_append(out, v < 0 ? (dbl ? "(-(double)INFINITY)" : "(-INFINITY)")
                                       : (dbl ? "((double)INFINITY)" : "INFINITY"));
        return;
    }
    if (!cg_dtype_is_float(dt)) { /* a float immediate of an integer dtype */
        emit_int_const((int64_t)v, dt, out);
        return;
    }
    char buf[64];
    snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", dbl ? v : (double)(float)v);
    bool has_point = strpbrk(buf, ".e") != NULL;
    bool neg = buf[0] == '-';
    smelt_strbuf_printf(out, "%s%s%s%s%s", neg ? "(" : "", buf, has_point ? "" : ".0",
                        dbl ? "" : "f", neg ? ")" : "");
}

/* ---- variables and elements ---- */

static void emit_var(cg_emitter *e, const ir_var *v, smelt_strbuf *out)
{
    if (e->lane_var == v && e->lane > 0) {
        smelt_strbuf_append(out, "(");
        cg_var_name(e, v, out);
        smelt_strbuf_printf(out, " + %d)", e->lane);
        return;
    }
    cg_var_name(e, v, out);
}

void cg_element(cg_emitter *e, const ir_buffer *buf, const ir_expr *index, smelt_strbuf *out)
{
    const cg_bufinfo *bi = cg_buf(e, buf);
    smelt_strbuf_append(out, bi ? bi->name : "?");
    smelt_strbuf_append(out, "[");
    cg_expr(e, index, CG_INDEX, out);
    smelt_strbuf_append(out, "]");
}

int64_t cg_buffer_elems(const ir_buffer *b)
{
    int64_t n = 1;
    for (int i = 0; i < b->rank; i++)
        if (b->shape[i] < 0 || smelt_mul_overflow_i64(n, b->shape[i], &n)) return -1;
    return n;
}

/* buf[smelt_clampi_(index, n)]: a load that cannot fault. */
static void clamped_element(cg_emitter *e, const ir_buffer *buf, const ir_expr *index, smelt_strbuf *out)
{
    const cg_bufinfo *bi = cg_buf(e, buf);
    int64_t n = cg_buffer_elems(buf);
    e->helpers[CG_H_CLAMPI] = true;
    smelt_strbuf_printf(out, "%s[smelt_clampi_(", bi ? bi->name : "?");
    cg_expr(e, index, CG_INDEX, out);
    smelt_strbuf_printf(out, ", %lld)]", (long long)(n > 0 ? n : 1));
}

static void load_element(cg_emitter *e, const ir_buffer *buf, const ir_expr *index, smelt_strbuf *out)
{
    if (e->clamp_loads)
        clamped_element(e, buf, index, out);
    else
        cg_element(e, buf, index, out);
}

static void emit_load(cg_emitter *e, const ir_expr *x, smelt_strbuf *out)
{
    if (x->load.n != 1) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: load from '%s' has %d indices (not flattened)",
                x->load.buf->name, x->load.n);
        return;
    }
    smelt_dtype dt = x->load.buf->dtype;
    if (dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16) {
        e->helpers[dt == SMELT_DT_FLOAT16 ? CG_H_F16 : CG_H_BF16] = true;
        smelt_strbuf_append(out, dt == SMELT_DT_FLOAT16 ? "smelt_f16_to_f32(" : "smelt_bf16_to_f32(");
        load_element(e, x->load.buf, x->load.idx[0], out);
        smelt_strbuf_append(out, ")");
        return;
    }
    load_element(e, x->load.buf, x->load.idx[0], out);
}

/* ---- rounding of half-precision results ---- */

static void open_round(cg_emitter *e, smelt_dtype dt, smelt_strbuf *out)
{
    if (!is_half(dt)) return;
    e->helpers[dt == SMELT_DT_FLOAT16 ? CG_H_F16 : CG_H_BF16] = true;
    smelt_strbuf_append(out, dt == SMELT_DT_FLOAT16 ? "smelt_round_f16(" : "smelt_round_bf16(");
}

static void close_round(smelt_dtype dt, smelt_strbuf *out)
{
    if (is_half(dt)) smelt_strbuf_append(out, ")");
}

/* ---- casts ---- */

static void emit_cast_to_int(cg_emitter *e, smelt_dtype to, const ir_expr *a, smelt_strbuf *out)
{
    static const struct {
        smelt_dtype dt;
        const char *lo, *hi;
    } ranges[] = {
        {SMELT_DT_INT8, "-128", "127"},
        {SMELT_DT_UINT8, "0", "255"},
        {SMELT_DT_INT16, "-32768", "32767"},
        {SMELT_DT_UINT16, "0", "65535"},
        {SMELT_DT_INT32, "(-2147483647 - 1)", "2147483647"},
        {SMELT_DT_UINT32, "0", "INT64_C(4294967295)"},
        {SMELT_DT_INT64, "INT64_MIN", "INT64_MAX"},
    };
    if (to == SMELT_DT_UINT64) {
        e->helpers[CG_H_F2U64] = true;
        smelt_strbuf_append(out, "smelt_f2u64((double)(");
        cg_expr(e, a, CG_VALUE, out);
        smelt_strbuf_append(out, "))");
        return;
    }
    for (size_t i = 0; i < SMELT_ARRAY_LEN(ranges); i++) {
        if (ranges[i].dt != to) continue;
        e->helpers[CG_H_F2I] = true;
        smelt_strbuf_printf(out, "((%s)smelt_f2i((double)(", cg_storage_type(to));
        cg_expr(e, a, CG_VALUE, out);
        smelt_strbuf_printf(out, "), %s, %s))", ranges[i].lo, ranges[i].hi);
        return;
    }
    cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: cast to %s is not supported", smelt_dtype_name(to));
}

static void emit_cast(cg_emitter *e, const ir_expr *x, smelt_strbuf *out)
{
    smelt_dtype to = x->dtype, from = x->bin.a->dtype;
    const ir_expr *a = x->bin.a;
    if (to != from && (smelt_dtype_is_lowbit_float(from) || smelt_dtype_is_lowbit(to))) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: a plain cast %s -> %s (low-bit values convert "
                "through lowbit_decode/encode)", smelt_dtype_name(from), smelt_dtype_name(to));
        return;
    }
    if (to == from) {
        cg_expr(e, a, CG_VALUE, out);
    } else if (to == SMELT_DT_BOOL) {
        smelt_strbuf_append(out, "((");
        cg_expr(e, a, CG_VALUE, out);
        smelt_strbuf_append(out, ") != 0)");
    } else if (cg_dtype_is_float(from) && !cg_dtype_is_float(to)) {
        emit_cast_to_int(e, to, a, out);
    } else if (is_half(to) && from != SMELT_DT_FLOAT32 && !is_half(from) && from != SMELT_DT_BOOL) {
        /* double or a wide integer -> half: one rounding, via round-to-odd */
        e->helpers[CG_H_F64_ODD] = true;
        open_round(e, to, out);
        smelt_strbuf_append(out, "smelt_f64_to_f32_odd((double)(");
        cg_expr(e, a, CG_VALUE, out);
        smelt_strbuf_append(out, "))");
        close_round(to, out);
    } else {
        /* int/bool -> anything, float -> float: C conversions are defined
         * (IEEE), then round to half precision if needed. */
        open_round(e, to, out);
        smelt_strbuf_printf(out, "((%s)(", cg_value_type(to));
        if (from == SMELT_DT_BOOL) smelt_strbuf_append(out, "(");
        cg_expr(e, a, CG_VALUE, out);
        if (from == SMELT_DT_BOOL) smelt_strbuf_append(out, ") != 0");
        smelt_strbuf_append(out, "))");
        close_round(to, out);
    }
}

/* ---- math calls ---- */

static const char *math_name(ir_call_op op)
{
    switch (op) {
    case IR_CALL_EXP: return "exp";
    case IR_CALL_LOG: return "log";
    case IR_CALL_SQRT: return "sqrt";
    case IR_CALL_TANH: return "tanh";
    case IR_CALL_ERF: return "erf";
    case IR_CALL_POW: return "pow";
    case IR_CALL_ABS: return "fabs";
    case IR_CALL_FLOOR: return "floor";
    case IR_CALL_CEIL: return "ceil";
    case IR_CALL_ROUND: return "rint"; /* half to even in the default rounding mode */
    case IR_CALL_SIN: return "sin";
    case IR_CALL_COS: return "cos";
    case IR_CALL_FMOD: return "fmod";
    case IR_CALL_TAN: return "tan";
    case IR_CALL_ASIN: return "asin";
    case IR_CALL_ACOS: return "acos";
    case IR_CALL_ATAN: return "atan";
    case IR_CALL_SINH: return "sinh";
    case IR_CALL_COSH: return "cosh";
    case IR_CALL_ASINH: return "asinh";
    case IR_CALL_ACOSH: return "acosh";
    case IR_CALL_ATANH: return "atanh";
    default: return NULL;
    }
}

static int call_arity(ir_call_op op)
{
    return op == IR_CALL_POW || op == IR_CALL_FMOD || op == IR_CALL_LB_ENCODE ? 2 : 1;
}

/* The low-bit conversions of include/smelt_lowbit.h (embedded in the prelude). */
static void emit_lowbit_call(cg_emitter *e, const ir_expr *x, smelt_strbuf *out)
{
    const ir_expr *a = x->call.args[0];
    e->helpers[CG_H_LOWBIT] = true;
    if (x->call.op == IR_CALL_LB_DECODE) {
        smelt_strbuf_printf(out, "smelt_lowbit_decode(%d, (unsigned)(", (int)a->dtype);
        cg_expr(e, a, CG_VALUE, out);
        smelt_strbuf_append(out, "))");
        return;
    }
    const ir_expr *mode = x->call.args[1];
    if (mode->kind != IR_INT) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: lowbit_encode with a non-constant mode");
        return;
    }
    bool wrap = !cg_dtype_is_float(a->dtype) && smelt_dtype_is_lowbit_int(x->dtype);
    smelt_strbuf_printf(out, "((%s)", cg_storage_type(x->dtype));
    if (wrap)
        smelt_strbuf_printf(out, "smelt_lb_wrap_int(%d, (int64_t)(", (int)x->dtype);
    else
        smelt_strbuf_printf(out, "smelt_lowbit_encode(%d, (double)(", (int)x->dtype);
    cg_expr(e, a, CG_VALUE, out);
    if (wrap)
        smelt_strbuf_append(out, ")))");
    else
        smelt_strbuf_printf(out, "), %d))", (int)mode->i);
}

void cg_math_call_text(ir_call_op op, smelt_dtype dt, const char *a0, const char *a1,
                       smelt_strbuf *out)
{
    bool dbl = dt == SMELT_DT_FLOAT64;
    const char *suf = dbl ? "" : "f";
    switch (op) {
    case IR_CALL_SIGMOID:
        smelt_strbuf_printf(out, "(1.0%s / (1.0%s + exp%s(-(%s))))", suf, suf, suf, a0);
        return;
    case IR_CALL_ISNAN: smelt_strbuf_printf(out, "(isnan(%s) != 0)", a0); return;
    case IR_CALL_ISINF: smelt_strbuf_printf(out, "(isinf(%s) != 0)", a0); return;
    default: break;
    }
    if (a1)
        smelt_strbuf_printf(out, "%s%s(%s, %s)", math_name(op), suf, a0, a1);
    else
        smelt_strbuf_printf(out, "%s%s(%s)", math_name(op), suf, a0);
}

static bool expr_to_text(cg_emitter *e, const ir_expr *x, smelt_strbuf *tmp)
{
    smelt_strbuf_init(tmp);
    cg_expr(e, x, CG_VALUE, tmp);
    return !tmp->failed;
}

static void emit_float_call(cg_emitter *e, const ir_expr *x, smelt_dtype arg_dt, smelt_strbuf *out)
{
    smelt_strbuf a0, a1;
    expr_to_text(e, x->call.args[0], &a0);
    if (x->call.n > 1) expr_to_text(e, x->call.args[1], &a1);
    bool round = is_half(x->dtype) && x->call.op != IR_CALL_ISNAN && x->call.op != IR_CALL_ISINF;
    if (round) open_round(e, x->dtype, out);
    cg_math_call_text(x->call.op, arg_dt, smelt_strbuf_cstr(&a0),
                      x->call.n > 1 ? smelt_strbuf_cstr(&a1) : NULL, out);
    if (round) close_round(x->dtype, out);
    cg_sb_done(e, &a0);
    if (x->call.n > 1) cg_sb_done(e, &a1);
}

/* Integer arguments: abs and pow (wrapped) exactly, isnan/isinf are false,
 * the rest through double and back (saturating). */
static void emit_int_call(cg_emitter *e, const ir_expr *x, smelt_strbuf *out)
{
    ir_call_op op = x->call.op;
    if (op == IR_CALL_ISNAN || op == IR_CALL_ISINF) {
        smelt_strbuf_append(out, "0");
        return;
    }
    if (op == IR_CALL_ABS) {
        e->helpers[CG_H_ABS_I64] = true;
        smelt_strbuf_printf(out, "((%s)smelt_abs_i64((int64_t)(", cg_value_type(x->dtype));
        cg_expr(e, x->call.args[0], CG_VALUE, out);
        smelt_strbuf_append(out, ")))");
        return;
    }
    if (op == IR_CALL_FLOOR || op == IR_CALL_CEIL || op == IR_CALL_ROUND) {
        cg_expr(e, x->call.args[0], CG_VALUE, out); /* already integral */
        return;
    }
    if (op == IR_CALL_POW) {
        e->helpers[CG_H_IPOW_U64] = true;
        smelt_strbuf_printf(out, "((%s)smelt_ipow_u64((uint64_t)(", cg_value_type(x->dtype));
        cg_expr(e, x->call.args[0], CG_VALUE, out);
        smelt_strbuf_append(out, "), (uint64_t)(");
        cg_expr(e, x->call.args[1], CG_VALUE, out);
        smelt_strbuf_append(out, ")))");
        return;
    }
    smelt_strbuf a0, a1;
    smelt_strbuf_init(&a0);
    smelt_strbuf_init(&a1);
    smelt_strbuf_append(&a0, "(double)(");
    cg_expr(e, x->call.args[0], CG_VALUE, &a0);
    smelt_strbuf_append(&a0, ")");
    if (x->call.n > 1) {
        smelt_strbuf_append(&a1, "(double)(");
        cg_expr(e, x->call.args[1], CG_VALUE, &a1);
        smelt_strbuf_append(&a1, ")");
    }
    smelt_strbuf d;
    smelt_strbuf_init(&d);
    cg_math_call_text(op, SMELT_DT_FLOAT64, smelt_strbuf_cstr(&a0),
                      x->call.n > 1 ? smelt_strbuf_cstr(&a1) : NULL, &d);
    /* Reuse the cast path on a synthetic text: saturating conversion. */
    if (x->dtype == SMELT_DT_UINT64) {
        e->helpers[CG_H_F2U64] = true;
        smelt_strbuf_printf(out, "smelt_f2u64(%s)", smelt_strbuf_cstr(&d));
    } else {
        e->helpers[CG_H_F2I] = true;
        smelt_strbuf_printf(out, "((%s)smelt_f2i(%s, INT64_MIN, INT64_MAX))", cg_value_type(x->dtype),
                            smelt_strbuf_cstr(&d));
    }
    cg_sb_done(e, &a0);
    cg_sb_done(e, &a1);
    cg_sb_done(e, &d);
}

/* The bits of a float as an unsigned integer and back go through a
 * union (C99 defines reading another member as reinterpreting the bytes);
 * integers of one width convert with the same bits, bool reads a byte. */
static void emit_bitcast(cg_emitter *e, const ir_expr *x, smelt_strbuf *out)
{
    const ir_expr *a = x->call.args[0];
    smelt_dtype from = a->dtype, to = x->dtype;
    if (is_half(from) || is_half(to)) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: bitcast of a 16-bit float");
        return;
    }
    bool ff = cg_dtype_is_float(from), tf = cg_dtype_is_float(to);
    const char *ut = cg_storage_type(ff ? (from == SMELT_DT_FLOAT32 ? SMELT_DT_UINT32 : SMELT_DT_UINT64)
                                        : (to == SMELT_DT_FLOAT32 ? SMELT_DT_UINT32 : SMELT_DT_UINT64));
    if (ff) /* float -> its bits -> the integer type */
        smelt_strbuf_printf(out, "((%s)(((union { %s f; %s u; }){ .f = (", cg_storage_type(to),
                            cg_storage_type(from), ut);
    else if (tf) /* integer -> unsigned of the width -> the float */
        smelt_strbuf_printf(out, "(((union { %s u; %s f; }){ .u = (%s)(", ut, cg_storage_type(to), ut);
    else if (to == SMELT_DT_BOOL)
        smelt_strbuf_append(out, "((uint8_t)(");
    else
        smelt_strbuf_printf(out, "((%s)(", cg_storage_type(to));
    cg_expr(e, a, CG_VALUE, out);
    if (ff)
        smelt_strbuf_append(out, ") }).u))");
    else if (tf)
        smelt_strbuf_append(out, ") }).f)");
    else if (to == SMELT_DT_BOOL)
        smelt_strbuf_append(out, ") != 0)");
    else
        smelt_strbuf_append(out, "))");
}

static void emit_call(cg_emitter *e, const ir_expr *x, smelt_strbuf *out)
{
    ir_call_op op = x->call.op;
    if ((unsigned)op >= IR_CALL_COUNT_ || x->call.n != call_arity(op)) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: call %s with %d arguments",
                (unsigned)op < IR_CALL_COUNT_ ? ir_call_name(op) : "?", x->call.n);
        return;
    }
    if (op == IR_CALL_LB_DECODE || op == IR_CALL_LB_ENCODE) {
        emit_lowbit_call(e, x, out);
        return;
    }
    if (op == IR_CALL_BITCAST) {
        emit_bitcast(e, x, out);
        return;
    }
    smelt_dtype arg_dt = x->call.args[0]->dtype;
    if (cg_dtype_is_float(arg_dt))
        emit_float_call(e, x, arg_dt == SMELT_DT_FLOAT64 ? SMELT_DT_FLOAT64 : SMELT_DT_FLOAT32, out);
    else
        emit_int_call(e, x, out);
}

/* ---- arithmetic ---- */

static const char *op_text(ir_kind k)
{
    switch (k) {
    case IR_ADD: return "+";
    case IR_SUB: return "-";
    case IR_MUL: return "*";
    case IR_DIV: return "/";
    case IR_MOD: return "%";
    case IR_EQ: return "==";
    case IR_NE: return "!=";
    case IR_LT: return "<";
    case IR_LE: return "<=";
    case IR_GT: return ">";
    case IR_GE: return ">=";
    case IR_AND: return "&&";
    case IR_OR: return "||";
    default: return NULL;
    }
}

static void emit_binop(cg_emitter *e, const ir_expr *x, const char *op, const char *operand_cast,
                       cg_ctx_kind ctx, smelt_strbuf *out)
{
    smelt_strbuf_append(out, "(");
    if (operand_cast) smelt_strbuf_printf(out, "(%s)", operand_cast);
    cg_expr(e, x->bin.a, ctx, out);
    smelt_strbuf_printf(out, " %s ", op);
    if (operand_cast) smelt_strbuf_printf(out, "(%s)", operand_cast);
    cg_expr(e, x->bin.b, ctx, out);
    smelt_strbuf_append(out, ")");
}

/* +, -, * with the wrap-around semantics of the dtype (see codegen.h). */
static void emit_wrapping(cg_emitter *e, const ir_expr *x, cg_ctx_kind ctx, smelt_strbuf *out)
{
    smelt_dtype dt = x->dtype;
    const char *op = op_text(x->kind);
    const char *wide = NULL; /* unsigned type to compute in */
    if (dt == SMELT_DT_INT8 || dt == SMELT_DT_INT16 || dt == SMELT_DT_UINT8 || dt == SMELT_DT_UINT16)
        wide = "uint32_t";
    else if (dt == SMELT_DT_INT32 && ctx == CG_VALUE)
        wide = "uint32_t";
    else if (dt == SMELT_DT_INT64 && ctx == CG_VALUE)
        wide = "uint64_t";
    if (!wide) { /* floats, unsigned 32/64, index arithmetic */
        open_round(e, dt, out);
        emit_binop(e, x, op, NULL, ctx, out);
        close_round(dt, out);
        return;
    }
    smelt_strbuf_printf(out, "((%s)", cg_storage_type(dt));
    emit_binop(e, x, op, wide, ctx, out);
    smelt_strbuf_append(out, ")");
}

/* A divisor that C's / and % handle without a helper: a constant other
 * than 0 and -1. */
static bool plain_divisor(const ir_expr *b)
{
    return b->kind == IR_INT && b->i != 0 && b->i != -1;
}

static void emit_helper_binop(cg_emitter *e, const ir_expr *x, cg_helper h, const char *name,
                              const char *arg_type, cg_ctx_kind ctx, smelt_strbuf *out)
{
    e->helpers[h] = true;
    smelt_strbuf_printf(out, "((%s)%s((%s)", cg_value_type(x->dtype), name, arg_type);
    cg_expr(e, x->bin.a, ctx, out);
    smelt_strbuf_printf(out, ", (%s)", arg_type);
    cg_expr(e, x->bin.b, ctx, out);
    smelt_strbuf_append(out, "))");
}

/* GPU kernels' floordiv/floormod of a signed 32/64-bit value by a power of
 * two 2^k (k returned, else -1): a shift and a mask, where the helper
 * functions cost a division's fix-ups in every index (the kernel compilers
 * shift signed values arithmetically). */
static int pow2_shift(const cg_emitter *e, const ir_expr *x)
{
    const ir_expr *d = x->bin.b;
    if (!e->gpu || (x->dtype != SMELT_DT_INT64 && x->dtype != SMELT_DT_INT32) || d->kind != IR_INT ||
        d->i < 2 || (d->i & (d->i - 1)) != 0)
        return -1;
    int k = 0;
    while (((int64_t)1 << k) < d->i) k++;
    return k;
}

/* GPU kernels' floordiv/floormod of a signed 32/64-bit value by another
 * constant c in [3, 2^31): smelt_fdivc_i64 / smelt_fmodc_i64. */
static bool const_divisor(const cg_emitter *e, const ir_expr *x)
{
    const ir_expr *d = x->bin.b;
    return e->gpu && (x->dtype == SMELT_DT_INT64 || x->dtype == SMELT_DT_INT32) && d->kind == IR_INT &&
           d->i > 2 && d->i < ((int64_t)1 << 31);
}

static void emit_int_division(cg_emitter *e, const ir_expr *x, cg_ctx_kind ctx, smelt_strbuf *out)
{
    bool u = cg_dtype_is_unsigned_int(x->dtype) || x->dtype == SMELT_DT_BOOL;
    const char *at = u ? "uint64_t" : "int64_t";
    switch (x->kind) {
    case IR_DIV:
    case IR_MOD:
        if (plain_divisor(x->bin.b)) {
            smelt_strbuf_printf(out, "((%s)", cg_value_type(x->dtype));
            emit_binop(e, x, op_text(x->kind), NULL, ctx, out);
            smelt_strbuf_append(out, ")");
        } else if (x->kind == IR_DIV) {
            emit_helper_binop(e, x, u ? CG_H_DIV_U64 : CG_H_DIV_I64, u ? "smelt_div_u64" : "smelt_div_i64",
                              at, ctx, out);
        } else {
            emit_helper_binop(e, x, u ? CG_H_MOD_U64 : CG_H_MOD_I64, u ? "smelt_mod_u64" : "smelt_mod_i64",
                              at, ctx, out);
        }
        return;
    case IR_FLOORDIV:
        if (pow2_shift(e, x) >= 0) { /* GPU kernels: an arithmetic shift rounds to -inf */
            smelt_strbuf_printf(out, "((%s)(((int64_t)", cg_value_type(x->dtype));
            cg_expr(e, x->bin.a, ctx, out);
            smelt_strbuf_printf(out, ") >> %d))", pow2_shift(e, x));
        } else if (const_divisor(e, x)) {
            emit_helper_binop(e, x, CG_H_FDIVC_I64, "smelt_fdivc_i64", at, ctx, out);
        } else if (u)
            emit_helper_binop(e, x, CG_H_DIV_U64, "smelt_div_u64", at, ctx, out);
        else
            emit_helper_binop(e, x, CG_H_FLOORDIV_I64, "smelt_floordiv_i64", at, ctx, out);
        return;
    default: /* IR_FLOORMOD */
        if (pow2_shift(e, x) >= 0) { /* two's complement: the low bits are the remainder */
            smelt_strbuf_printf(out, "((%s)(((int64_t)", cg_value_type(x->dtype));
            cg_expr(e, x->bin.a, ctx, out);
            smelt_strbuf_printf(out, ") & %lld))", (long long)(x->bin.b->i - 1));
        } else if (const_divisor(e, x)) {
            emit_helper_binop(e, x, CG_H_FMODC_I64, "smelt_fmodc_i64", at, ctx, out);
        } else if (u)
            emit_helper_binop(e, x, CG_H_MOD_U64, "smelt_mod_u64", at, ctx, out);
        else
            emit_helper_binop(e, x, CG_H_FLOORMOD_I64, "smelt_floormod_i64", at, ctx, out);
        return;
    }
}

static void emit_float_division(cg_emitter *e, const ir_expr *x, smelt_strbuf *out)
{
    smelt_dtype dt = x->dtype;
    bool dbl = dt == SMELT_DT_FLOAT64;
    open_round(e, dt, out);
    switch (x->kind) {
    case IR_DIV: emit_binop(e, x, "/", NULL, CG_VALUE, out); break;
    case IR_MOD: /* C fmod: the sign of the dividend */
        smelt_strbuf_append(out, dbl ? "fmod(" : "fmodf(");
        cg_expr(e, x->bin.a, CG_VALUE, out);
        smelt_strbuf_append(out, ", ");
        cg_expr(e, x->bin.b, CG_VALUE, out);
        smelt_strbuf_append(out, ")");
        break;
    case IR_FLOORDIV:
        smelt_strbuf_append(out, dbl ? "floor(" : "floorf(");
        emit_binop(e, x, "/", NULL, CG_VALUE, out);
        smelt_strbuf_append(out, ")");
        break;
    default: /* FLOORMOD: the sign of the divisor */
        e->helpers[dbl ? CG_H_FLOORMOD_F64 : CG_H_FLOORMOD_F32] = true;
        smelt_strbuf_append(out, dbl ? "smelt_floormod_f64(" : "smelt_floormod_f32(");
        cg_expr(e, x->bin.a, CG_VALUE, out);
        smelt_strbuf_append(out, ", ");
        cg_expr(e, x->bin.b, CG_VALUE, out);
        smelt_strbuf_append(out, ")");
        break;
    }
    close_round(dt, out);
}

static void emit_minmax(cg_emitter *e, const ir_expr *x, cg_ctx_kind ctx, smelt_strbuf *out)
{
    smelt_dtype dt = x->dtype;
    if (dt == SMELT_DT_BOOL) { /* min = and, max = or */
        emit_binop(e, x, x->kind == IR_MIN ? "&&" : "||", NULL, ctx, out);
        return;
    }
    const char *suf = type_suffix(dt);
    if (!suf) {
        cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: min/max of %s", smelt_dtype_name(dt));
        return;
    }
    smelt_dtype helper_dt = is_half(dt) ? SMELT_DT_FLOAT32 : dt;
    if (x->kind == IR_MIN)
        e->min_dtypes |= 1u << helper_dt;
    else
        e->max_dtypes |= 1u << helper_dt;
    smelt_strbuf_printf(out, "smelt_%s_%s(", x->kind == IR_MIN ? "min" : "max", suf);
    cg_expr(e, x->bin.a, ctx, out);
    smelt_strbuf_append(out, ", ");
    cg_expr(e, x->bin.b, ctx, out);
    smelt_strbuf_append(out, ")");
}

/* Bitwise ops on the operands widened to 64 bits (signed ones sign-extended),
 * the result cast back to the dtype (its low bits). */
static void emit_bitwise(cg_emitter *e, const ir_expr *x, cg_ctx_kind ctx, smelt_strbuf *out)
{
    bool u = cg_dtype_is_unsigned_int(x->dtype);
    if (!cg_dtype_is_signed_int(x->dtype) && !u) {
        cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: bitwise %s of %s", ir_kind_name(x->kind),
                smelt_dtype_name(x->dtype));
        return;
    }
    const char *wide = u ? "uint64_t" : "int64_t";
    if (x->kind == IR_SHL || x->kind == IR_SHR) {
        e->helpers[CG_H_SHIFT] = true;
        const char *fn = x->kind == IR_SHL ? "smelt_shl" : u ? "smelt_shr_u" : "smelt_shr_i";
        smelt_strbuf_printf(out, "((%s)%s((%s)(%s)", cg_value_type(x->dtype), fn,
                            x->kind == IR_SHL ? "uint64_t" : wide, wide);
        cg_expr(e, x->bin.a, ctx, out);
        smelt_strbuf_printf(out, ", (uint64_t)(%s)", wide);
        cg_expr(e, x->bin.b, ctx, out);
        smelt_strbuf_append(out, "))");
        return;
    }
    const char *op = x->kind == IR_BITAND ? "&" : x->kind == IR_BITOR ? "|" : "^";
    smelt_strbuf_printf(out, "((%s)((%s)", cg_value_type(x->dtype), wide);
    cg_expr(e, x->bin.a, ctx, out);
    smelt_strbuf_printf(out, " %s (%s)", op, wide);
    cg_expr(e, x->bin.b, ctx, out);
    smelt_strbuf_append(out, "))");
}

static void emit_compare(cg_emitter *e, const ir_expr *x, cg_ctx_kind ctx, smelt_strbuf *out)
{
    /* Comparisons of int64 are almost always index guards: index context. */
    smelt_dtype od = x->bin.a->dtype;
    cg_ctx_kind sub = od == SMELT_DT_INT64 ? CG_INDEX : ctx;
    if (x->kind == IR_AND || x->kind == IR_OR) sub = ctx;
    emit_binop(e, x, op_text(x->kind), NULL, sub, out);
}

static void emit_select(cg_emitter *e, const ir_expr *x, cg_ctx_kind ctx, smelt_strbuf *out)
{
    smelt_strbuf_append(out, "(");
    cg_expr(e, x->select.cond, ctx, out);
    smelt_strbuf_append(out, " ? ");
    cg_expr(e, x->select.t, ctx, out);
    smelt_strbuf_append(out, " : ");
    cg_expr(e, x->select.f, ctx, out);
    smelt_strbuf_append(out, ")");
}

static void emit_arith(cg_emitter *e, const ir_expr *x, cg_ctx_kind ctx, smelt_strbuf *out)
{
    switch (x->kind) {
    case IR_ADD:
    case IR_SUB:
    case IR_MUL: emit_wrapping(e, x, ctx, out); return;
    case IR_DIV:
    case IR_MOD:
    case IR_FLOORDIV:
    case IR_FLOORMOD:
        if (cg_dtype_is_float(x->dtype))
            emit_float_division(e, x, out);
        else
            emit_int_division(e, x, ctx, out);
        return;
    case IR_MIN:
    case IR_MAX: emit_minmax(e, x, ctx, out); return;
    case IR_BITAND:
    case IR_BITOR:
    case IR_BITXOR:
    case IR_SHL:
    case IR_SHR: emit_bitwise(e, x, ctx, out); return;
    default: emit_compare(e, x, ctx, out); return;
    }
}

void cg_expr(cg_emitter *e, const ir_expr *x, cg_ctx_kind ctx, smelt_strbuf *out)
{
    if (!x) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: NULL expression");
        return;
    }
    if (x->dtype != SMELT_DT_BOOL && !cg_value_type(x->dtype)) {
        cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: expressions of type %s are not supported",
                smelt_dtype_name(x->dtype));
        return;
    }
    switch (x->kind) {
    case IR_INT: emit_int_const(x->i, x->dtype, out); return;
    case IR_FLOAT: emit_float_const(x->f, x->dtype, out); return;
    case IR_VAR: emit_var(e, x->var, out); return;
    case IR_NOT:
        smelt_strbuf_append(out, "(!");
        cg_expr(e, x->bin.a, ctx, out);
        smelt_strbuf_append(out, ")");
        return;
    case IR_SELECT: emit_select(e, x, ctx, out); return;
    case IR_CAST: emit_cast(e, x, out); return;
    case IR_CALL: emit_call(e, x, out); return;
    case IR_LOAD: emit_load(e, x, out); return;
    case IR_REDUCE:
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: a reduction reached code generation (not lowered)");
        return;
    default:
        if (x->kind >= IR_ADD && x->kind <= IR_OR) {
            emit_arith(e, x, ctx, out);
            return;
        }
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: unknown expression kind %d", (int)x->kind);
    }
}

void cg_store_value(cg_emitter *e, const ir_expr *value, smelt_dtype dt, smelt_strbuf *out)
{
    if (dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16) {
        e->helpers[dt == SMELT_DT_FLOAT16 ? CG_H_F16 : CG_H_BF16] = true;
        smelt_strbuf_append(out, dt == SMELT_DT_FLOAT16 ? "smelt_f32_to_f16((float)(" : "smelt_f32_to_bf16((float)(");
        cg_expr(e, value, CG_VALUE, out);
        smelt_strbuf_append(out, "))");
    } else if (dt == SMELT_DT_BOOL) {
        smelt_strbuf_append(out, "(uint8_t)((");
        cg_expr(e, value, CG_VALUE, out);
        smelt_strbuf_append(out, ") != 0)");
    } else {
        cg_expr(e, value, CG_VALUE, out);
    }
}
