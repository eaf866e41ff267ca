/* ONNX's low-bit element types: float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ,
 * E8M0), float4 (E2M1) and int4/uint4/int2/uint2.
 *
 * smelt stores every one of them one element per byte: a float8/float4 value
 * is its code (float4 in the low 4 bits), an int4/int2 value is the integer
 * itself (int8_t, sign-extended; uint4/uint2 in uint8_t).  Packing two or
 * four elements to a byte happens only where ONNX data enters or leaves
 * (TensorProto initializers and tensor files).
 *
 * This one header is the only implementation of the conversions: the
 * compiler and reference executor include it, and generated C embeds it, so
 * both paths round alike; applications may include it too (installed).
 * C99, static inline, no dependencies but <stdint.h>/<string.h>.  The dtype
 * arguments are ONNX TensorProto.DataType values (equal to smelt_dtype);
 * compilers fold them when they are constant.
 */
#ifndef SMELT_LOWBIT_H
#define SMELT_LOWBIT_H

#include <stdint.h>
#include <string.h>

enum {
    SMELT_LB_E4M3FN = 17,
    SMELT_LB_E4M3FNUZ = 18,
    SMELT_LB_E5M2 = 19,
    SMELT_LB_E5M2FNUZ = 20,
    SMELT_LB_UINT4 = 21,
    SMELT_LB_INT4 = 22,
    SMELT_LB_E2M1 = 23,
    SMELT_LB_E8M0 = 24,
    SMELT_LB_UINT2 = 25,
    SMELT_LB_INT2 = 26
};

/* Encoding modes: bit 0 saturate; bits 1-2 E8M0's rounding. */
#define SMELT_LB_SATURATE 1
#define SMELT_LB_ROUND_UP 0
#define SMELT_LB_ROUND_DOWN 2
#define SMELT_LB_ROUND_NEAREST 4

/* A sign-magnitude float format with bias 2^(E-1)-1 or, for FNUZ, 2^(E-1). */
typedef struct smelt_lb_format {
    int mbits, bias, sign_bit;
    unsigned max_mag;  /* magnitude code of the largest finite value */
    unsigned over_mag; /* magnitude code of an overflow without saturation */
    unsigned nan_mag;  /* magnitude code of NaN */
    int uz;            /* FNUZ: one NaN (the sign bit alone), no -0, unsigned NaN */
} smelt_lb_format;

static inline smelt_lb_format smelt_lb_format_of(int dtype)
{
    smelt_lb_format f = {3, 7, 7, 0x7E, 0x7F, 0x7F, 0}; /* E4M3FN */
    if (dtype == SMELT_LB_E4M3FNUZ) {
        f.bias = 8;
        f.max_mag = 0x7F;
        f.uz = 1;
    } else if (dtype == SMELT_LB_E5M2) {
        f.mbits = 2;
        f.bias = 15;
        f.max_mag = 0x7B;
        f.over_mag = 0x7C; /* infinity */
        f.nan_mag = 0x7E;
    } else if (dtype == SMELT_LB_E5M2FNUZ) {
        f.mbits = 2;
        f.bias = 16;
        f.max_mag = 0x7F;
        f.uz = 1;
    } else if (dtype == SMELT_LB_E2M1) { /* no NaN, no infinity: always saturates */
        f.mbits = 1;
        f.bias = 1;
        f.sign_bit = 3;
        f.max_mag = 7;
        f.over_mag = 7;
        f.nan_mag = 7; /* ONNX: NaN -> +6 */
    }
    return f;
}

static inline float smelt_lb_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* float8 / float4 code -> float (exact: every value is a float32). */
static inline float smelt_lowbit_decode(int dtype, unsigned code)
{
    if (dtype == SMELT_LB_E8M0) /* 2^(code - 127); 0xFF is NaN */
        return code == 0xFF ? smelt_lb_bits_f32(0x7FC00000u)
               : code ? smelt_lb_bits_f32((uint32_t)code << 23)
                      : smelt_lb_bits_f32(0x00400000u);
    smelt_lb_format f = smelt_lb_format_of(dtype);
    unsigned sign = (code >> f.sign_bit) & 1u, mag = code & ((1u << f.sign_bit) - 1u);
    uint32_t sbit = (uint32_t)sign << 31;
    if (f.uz && sign && !mag) return smelt_lb_bits_f32(0xFFC00000u); /* the one NaN (code 0x80) */
    if (dtype == SMELT_LB_E4M3FN && mag == 0x7F) return smelt_lb_bits_f32(sbit | 0x7FC00000u);
    if (dtype == SMELT_LB_E5M2 && mag >= 0x7C)
        return smelt_lb_bits_f32(sbit | (mag == 0x7C ? 0x7F800000u : 0x7FC00000u));
    unsigned e = mag >> f.mbits, m = mag & ((1u << f.mbits) - 1u);
    if (e) return smelt_lb_bits_f32(sbit | (uint32_t)(e - f.bias + 127) << 23 |
                                    (uint32_t)m << (23 - f.mbits));
    /* subnormal: m * 2^(1 - bias - mbits) */
    float v = (float)m * smelt_lb_bits_f32((uint32_t)(1 - f.bias - f.mbits + 127) << 23);
    return sbit ? -v : v;
}

/* |x| = m * 2^exp2 -> magnitude code, rounding to nearest even; a result past
 * max_mag is returned as is (the caller saturates or overflows). */
static inline uint64_t smelt_lb_round_mag(const smelt_lb_format *f, uint64_t m, int exp2)
{
    int emin = 1 - f->bias, lead = exp2 + 52; /* exponent of m's leading bit */
    int k = (lead > emin ? lead : emin) - f->mbits; /* exponent of one unit in the result */
    int s = k - exp2;                               /* >= 49: bits of m below the unit */
    if (s > 54) return 0;                           /* below half the smallest unit */
    uint64_t q = m >> s, rem = m & ((UINT64_C(1) << s) - 1), half = UINT64_C(1) << (s - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    /* above the subnormal range the binade index joins the mantissa; a carry
     * out of the mantissa moves into the exponent by itself */
    return ((uint64_t)(k - (emin - f->mbits)) << f->mbits) + q;
}

/* float -> float8/float4 code.  NaN/Inf/overflow follow ONNX's Cast tables;
 * `mode & SMELT_LB_SATURATE` clamps out-of-range values to +-max. */
static inline unsigned smelt_lb_encode_float(int dtype, double x, int mode)
{
    smelt_lb_format f = smelt_lb_format_of(dtype);
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    unsigned sign = (unsigned)(bits >> 63);
    uint64_t mag = bits & UINT64_C(0x7FFFFFFFFFFFFFFF);
    unsigned smask = sign << f.sign_bit;
    int saturate = (mode & SMELT_LB_SATURATE) || dtype == SMELT_LB_E2M1;
    if (mag > UINT64_C(0x7FF0000000000000)) /* NaN */
        return f.uz ? 0x80u : dtype == SMELT_LB_E2M1 ? f.max_mag : smask | f.nan_mag;
    uint64_t q = f.max_mag + 1u; /* infinity: past max */
    if (mag < UINT64_C(0x7FF0000000000000)) {
        int e = (int)(mag >> 52);
        uint64_t m = mag & ((UINT64_C(1) << 52) - 1);
        if (e) m |= UINT64_C(1) << 52;
        q = smelt_lb_round_mag(&f, m, (e ? e : 1) - 1075);
    }
    if (q > f.max_mag) return saturate ? smask | f.max_mag : f.uz ? 0x80u : smask | f.over_mag;
    if (q == 0 && f.uz) return 0; /* no negative zero: -0 is the NaN */
    return smask | (unsigned)q;
}

/* float -> E8M0 (2^(code - 127)), the exponent of x rounded as `mode` says;
 * the sign is ignored (ONNX leaves negative inputs unspecified). */
static inline unsigned smelt_lb_encode_e8m0(float x, int mode)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    unsigned e = (b >> 23) & 0xFFu;
    int saturate = mode & SMELT_LB_SATURATE;
    if (e == 0xFF) return (b & 0x7FFFFFu) || !saturate ? 0xFFu : 0xFEu; /* NaN; Inf */
    int up;
    if (mode & SMELT_LB_ROUND_NEAREST) /* as onnx's to_float8e8m0: a tie rounds up unless e is 0 */
        up = (b & 0x400000u) && ((b & 0x3FFFFFu) || e > 0);
    else if (mode & SMELT_LB_ROUND_DOWN)
        up = 0;
    else
        up = (b & 0x7FFFFFu) != 0;
    if (up && saturate && e == 0xFE) up = 0;
    return e + (unsigned)up;
}

/* float -> int4/uint4/int2/uint2: truncation toward zero, then the low bits
 * (an out-of-range float is undefined in ONNX; NaN and Inf give 0). */
static inline int smelt_lb_wrap_int(int dtype, int64_t v)
{
    int bits = dtype == SMELT_LB_INT4 || dtype == SMELT_LB_UINT4 ? 4 : 2;
    int low = (int)(v & ((1 << bits) - 1));
    int is_signed = dtype == SMELT_LB_INT4 || dtype == SMELT_LB_INT2;
    return is_signed && low >= 1 << (bits - 1) ? low - (1 << bits) : low;
}

static inline int64_t smelt_lb_trunc_i64(double x)
{
    return x != x || x >= 9.2233720368547758e18 || x <= -9.2233720368547758e18 ? 0 : (int64_t)x;
}

/* float -> any low-bit type: the stored byte (a code, or an int4/int2 value). */
static inline int smelt_lowbit_encode(int dtype, double x, int mode)
{
    switch (dtype) {
    case SMELT_LB_E8M0: return (int)smelt_lb_encode_e8m0((float)x, mode);
    case SMELT_LB_UINT4:
    case SMELT_LB_INT4:
    case SMELT_LB_UINT2:
    case SMELT_LB_INT2: return smelt_lb_wrap_int(dtype, smelt_lb_trunc_i64(x));
    default: return (int)smelt_lb_encode_float(dtype, x, mode);
    }
}

#endif
