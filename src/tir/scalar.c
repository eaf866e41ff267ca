/* Scalar semantics of tir values (see scalar.h). */
#include <math.h>
#include <string.h>

#include "smelt_lowbit.h"
#include "tir/scalar.h"

bool tir_dtype_is_int(smelt_dtype dt) { return tir_dtype_bits(dt) > 0 && !tir_dtype_is_float(dt); }

bool tir_dtype_is_float(smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16 || dt == SMELT_DT_FLOAT32 ||
           dt == SMELT_DT_FLOAT64;
}

bool tir_dtype_is_unsigned(smelt_dtype dt)
{
    return dt == SMELT_DT_UINT8 || dt == SMELT_DT_UINT16 || dt == SMELT_DT_UINT32 ||
           dt == SMELT_DT_UINT64 || dt == SMELT_DT_BOOL ||
           (smelt_dtype_is_lowbit(dt) && dt != SMELT_DT_INT4 && dt != SMELT_DT_INT2);
}

int tir_dtype_bits(smelt_dtype dt)
{
    if (dt == SMELT_DT_BOOL) return 1;
    if (dt == SMELT_DT_COMPLEX64 || dt == SMELT_DT_COMPLEX128) return 0; /* not a scalar */
    /* low-bit types take a byte: a float8/float4 code or a 4/2-bit integer */
    return 8 * (int)smelt_dtype_size(dt);
}

int64_t tir_dtype_min(smelt_dtype dt)
{
    int bits = tir_dtype_bits(dt);
    if (dt == SMELT_DT_UINT64 || bits == 64) return INT64_MIN;
    if (tir_dtype_is_unsigned(dt) || bits == 0) return 0;
    return -((int64_t)1 << (bits - 1));
}

int64_t tir_dtype_max(smelt_dtype dt)
{
    int bits = tir_dtype_bits(dt);
    if (bits == 64 || bits == 0) return INT64_MAX;
    if (tir_dtype_is_unsigned(dt)) return ((int64_t)1 << bits) - 1;
    return ((int64_t)1 << (bits - 1)) - 1;
}

int64_t tir_wrap_int(smelt_dtype dt, uint64_t v)
{
    switch (dt) {
    case SMELT_DT_BOOL: return v != 0;
    case SMELT_DT_INT8: return (int8_t)(uint8_t)v;
    case SMELT_DT_UINT8: return (uint8_t)v;
    case SMELT_DT_INT16: return (int16_t)(uint16_t)v;
    case SMELT_DT_UINT16: return (uint16_t)v;
    case SMELT_DT_INT32: return (int32_t)(uint32_t)v;
    case SMELT_DT_UINT32: return (uint32_t)v;
    case SMELT_DT_INT4:
    case SMELT_DT_UINT4:
    case SMELT_DT_INT2:
    case SMELT_DT_UINT2: return smelt_lb_wrap_int((int)dt, (int64_t)v);
    default: return smelt_dtype_is_lowbit(dt) ? (uint8_t)v : (int64_t)v;
    }
}

double tir_round_float(smelt_dtype dt, double v)
{
    switch (dt) {
    case SMELT_DT_FLOAT32: return (float)v;
    case SMELT_DT_FLOAT16: return smelt_f16_to_f32(smelt_f32_to_f16((float)v));
    case SMELT_DT_BFLOAT16: return smelt_bf16_to_f32(smelt_f32_to_bf16((float)v));
    default: return v;
    }
}

int64_t tir_floordiv_i64(int64_t a, int64_t b)
{
    if (b == -1) return (int64_t)(0 - (uint64_t)a); /* wraps for INT64_MIN */
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

int64_t tir_floormod_i64(int64_t a, int64_t b)
{
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

/* Ordering of two canonical integers of dtype dt: -1, 0, 1. */
static int int_cmp(smelt_dtype dt, int64_t a, int64_t b)
{
    if (dt == SMELT_DT_UINT64) return (uint64_t)a < (uint64_t)b ? -1 : (uint64_t)a > (uint64_t)b;
    return a < b ? -1 : a > b;
}

static bool fold_int_div(ir_kind k, smelt_dtype dt, int64_t a, int64_t b, int64_t *out)
{
    if (b == 0) return false;
    if (tir_dtype_is_unsigned(dt)) {
        uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
        bool quot = k == IR_DIV || k == IR_FLOORDIV;
        *out = tir_wrap_int(dt, quot ? ua / ub : ua % ub);
        return true;
    }
    switch (k) {
    case IR_DIV: *out = b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b; break;
    case IR_MOD: *out = b == -1 ? 0 : a % b; break;
    case IR_FLOORDIV: *out = tir_floordiv_i64(a, b); break;
    default: *out = tir_floormod_i64(a, b); break;
    }
    *out = tir_wrap_int(dt, (uint64_t)*out);
    return true;
}

/* a >> count (see IR_SHR); a canonical value of dt (signed ones sign-extended,
 * so a count >= the width and < 64 already fills with the sign) */
int64_t tir_shr_int(smelt_dtype dt, int64_t a, uint64_t count)
{
    if (tir_dtype_is_unsigned(dt)) return count >= 64 ? 0 : tir_wrap_int(dt, (uint64_t)a >> count);
    return a >> (count > 63 ? 63 : count); /* arithmetic on the targets smelt supports */
}

bool tir_fold_int(ir_kind k, smelt_dtype dt, int64_t a, int64_t b, int64_t *out)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int c = int_cmp(dt, a, b);
    switch (k) {
    case IR_ADD: *out = tir_wrap_int(dt, ua + ub); return true;
    case IR_SUB: *out = tir_wrap_int(dt, ua - ub); return true;
    case IR_MUL: *out = tir_wrap_int(dt, ua * ub); return true;
    case IR_DIV:
    case IR_MOD:
    case IR_FLOORDIV:
    case IR_FLOORMOD: return fold_int_div(k, dt, a, b, out);
    case IR_MIN: *out = c <= 0 ? a : b; return true;
    case IR_MAX: *out = c >= 0 ? a : b; return true;
    case IR_BITAND: *out = tir_wrap_int(dt, ua & ub); return true;
    case IR_BITOR: *out = tir_wrap_int(dt, ua | ub); return true;
    case IR_BITXOR: *out = tir_wrap_int(dt, ua ^ ub); return true;
    case IR_SHL: *out = tir_wrap_int(dt, ub >= 64 ? 0 : ua << ub); return true;
    case IR_SHR: *out = tir_shr_int(dt, a, ub); return true;
    case IR_EQ: *out = c == 0; return true;
    case IR_NE: *out = c != 0; return true;
    case IR_LT: *out = c < 0; return true;
    case IR_LE: *out = c <= 0; return true;
    case IR_GT: *out = c > 0; return true;
    case IR_GE: *out = c >= 0; return true;
    case IR_AND: *out = a != 0 && b != 0; return true;
    case IR_OR: *out = a != 0 || b != 0; return true;
    default: return false;
    }
}

static bool fold_float_minmax(ir_kind k, double a, double b, double *out)
{
    if (isnan(a) || isnan(b)) return false;
    if (a == b && signbit(a) != signbit(b)) return false; /* -0 vs +0: codegen-dependent */
    *out = (k == IR_MIN) == (a < b) ? a : b;
    return true;
}

static bool fold_float_arith(ir_kind k, smelt_dtype dt, double a, double b, double *out)
{
    if (dt == SMELT_DT_FLOAT32) {
        float fa = (float)a, fb = (float)b;
        switch (k) {
        case IR_ADD: *out = fa + fb; return true;
        case IR_SUB: *out = fa - fb; return true;
        case IR_MUL: *out = fa * fb; return true;
        case IR_DIV: *out = fa / fb; return true;
        default: return false;
        }
    }
    switch (k) {
    case IR_ADD: *out = a + b; return true;
    case IR_SUB: *out = a - b; return true;
    case IR_MUL: *out = a * b; return true;
    case IR_DIV: *out = a / b; return true;
    default: return false;
    }
}

bool tir_fold_float(ir_kind k, smelt_dtype dt, double a, double b, double *out)
{
    switch (k) {
    case IR_EQ: *out = a == b; return true;
    case IR_NE: *out = a != b; return true;
    case IR_LT: *out = a < b; return true;
    case IR_LE: *out = a <= b; return true;
    case IR_GT: *out = a > b; return true;
    case IR_GE: *out = a >= b; return true;
    case IR_MIN:
    case IR_MAX: return fold_float_minmax(k, a, b, out);
    default: break;
    }
    /* f16/bf16 arithmetic is codegen-dependent (computed in f32 or not). */
    if (dt != SMELT_DT_FLOAT32 && dt != SMELT_DT_FLOAT64) return false;
    if (k == IR_DIV && b == 0) return false;
    return fold_float_arith(k, dt, a, b, out);
}

int64_t tir_lowbit_encode(smelt_dtype to, bool arg_is_float, double f, int64_t i, int mode)
{
    if (!arg_is_float && smelt_dtype_is_lowbit_int(to)) return smelt_lb_wrap_int((int)to, i);
    return smelt_lowbit_encode((int)to, arg_is_float ? f : (double)i, mode);
}

double tir_lowbit_decode(smelt_dtype from, int64_t code)
{
    return smelt_lowbit_decode((int)from, (unsigned)(code & 0xFF));
}

static uint64_t bits_of(smelt_dtype dt, double f, int64_t i)
{
    switch (dt) {
    case SMELT_DT_FLOAT32: {
        float v = (float)f;
        uint32_t b;
        memcpy(&b, &v, sizeof b);
        return b;
    }
    case SMELT_DT_FLOAT64: {
        uint64_t b;
        memcpy(&b, &f, sizeof b);
        return b;
    }
    case SMELT_DT_FLOAT16: return smelt_f32_to_f16((float)f);
    case SMELT_DT_BFLOAT16: return smelt_f32_to_bf16((float)f);
    default: return (uint64_t)i; /* masked to the width by the reader */
    }
}

void tir_bitcast(smelt_dtype from, double f, int64_t i, smelt_dtype to, double *fo, int64_t *io)
{
    uint64_t b = bits_of(from, f, i);
    *fo = 0;
    *io = 0;
    switch (to) {
    case SMELT_DT_FLOAT32: {
        uint32_t w = (uint32_t)b;
        float v;
        memcpy(&v, &w, sizeof v);
        *fo = v;
        return;
    }
    case SMELT_DT_FLOAT64: memcpy(fo, &b, sizeof *fo); return;
    case SMELT_DT_FLOAT16: *fo = smelt_f16_to_f32((uint16_t)b); return;
    case SMELT_DT_BFLOAT16: *fo = smelt_bf16_to_f32((uint16_t)b); return;
    case SMELT_DT_BOOL: *io = (b & 0xFF) != 0; return;
    default: *io = tir_wrap_int(to, b); return;
    }
}

double tir_call_f64(ir_call_op op, double x, double y)
{
    switch (op) {
    case IR_CALL_EXP: return exp(x);
    case IR_CALL_LOG: return log(x);
    case IR_CALL_SQRT: return sqrt(x);
    case IR_CALL_TANH: return tanh(x);
    case IR_CALL_ERF: return erf(x);
    case IR_CALL_POW: return pow(x, y);
    case IR_CALL_ABS: return fabs(x);
    case IR_CALL_FLOOR: return floor(x);
    case IR_CALL_CEIL: return ceil(x);
    case IR_CALL_ROUND: return nearbyint(x);
    case IR_CALL_SIN: return sin(x);
    case IR_CALL_COS: return cos(x);
    case IR_CALL_FMOD: return fmod(x, y);
    case IR_CALL_ISNAN: return isnan(x) ? 1 : 0;
    case IR_CALL_ISINF: return isinf(x) ? 1 : 0;
    case IR_CALL_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case IR_CALL_TAN: return tan(x);
    case IR_CALL_ASIN: return asin(x);
    case IR_CALL_ACOS: return acos(x);
    case IR_CALL_ATAN: return atan(x);
    case IR_CALL_SINH: return sinh(x);
    case IR_CALL_COSH: return cosh(x);
    case IR_CALL_ASINH: return asinh(x);
    case IR_CALL_ACOSH: return acosh(x);
    case IR_CALL_ATANH: return atanh(x);
    default: return NAN;
    }
}
