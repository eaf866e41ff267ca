/* The start of every emitted module: includes, portability macros, vector
 * types and the helper functions the code below uses (only those). */
#include <string.h>

#include "codegen/c_internal.h"
#include "codegen/embed.h"

static const char *const header_text =
    "#include <math.h>\n"
    "#include <stdint.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "\n"
    "#include \"smelt_rt.h\"\n"
    "\n"
    "#if defined(__GNUC__) && !defined(__clang__)\n"
    "/* GCC 12 with AVX-512 turns `c ? p[i] : x` in an if-converted loop into\n"
    " * a blend from an unconditional load, which faults when the guard was\n"
    " * keeping i outside p (padding).  Keep guarded loads guarded. */\n"
    "#pragma GCC optimize(\"no-tree-loop-if-convert\")\n"
    "#endif\n"
    "\n"
    "#define SMELT_PRAGMA_(x) _Pragma(#x)\n"
    "#if defined(__clang__)\n"
    "/* ivdep is a hint: not vectorising a loop is not a warning */\n"
    "#pragma clang diagnostic ignored \"-Wpass-failed\"\n"
    "#define SMELT_IVDEP SMELT_PRAGMA_(clang loop vectorize(assume_safety))\n"
    "#define SMELT_UNROLL(n) SMELT_PRAGMA_(unroll n)\n"
    "#elif defined(__GNUC__) && __GNUC__ >= 8\n"
    "#define SMELT_IVDEP SMELT_PRAGMA_(GCC ivdep)\n"
    "#define SMELT_UNROLL(n) SMELT_PRAGMA_(GCC unroll n)\n"
    "#else\n"
    "#define SMELT_IVDEP\n"
    "#define SMELT_UNROLL(n)\n"
    "#endif\n"
    "#if defined(__GNUC__)\n"
    "#define SMELT_ALIGN64 __attribute__((aligned(64)))\n"
    "#else\n"
    "#define SMELT_ALIGN64\n"
    "#endif\n\n";

typedef struct helper_text {
    cg_helper id;
    cg_helper needs; /* another helper this one calls (CG_H_COUNT_: none) */
    const char *text;
} helper_text;

static const helper_text helpers[] = {
    {CG_H_DIV_I64, CG_H_COUNT_,
     "/* C division; x / 0 = 0 and INT64_MIN / -1 wraps instead of trapping. */\n"
     "static inline int64_t smelt_div_i64(int64_t a, int64_t b)\n{\n"
     "    if (b == 0) return 0;\n"
     "    if (b == -1) return (int64_t)(0 - (uint64_t)a);\n"
     "    return a / b;\n}\n\n"},
    {CG_H_MOD_I64, CG_H_COUNT_,
     "static inline int64_t smelt_mod_i64(int64_t a, int64_t b)\n{\n"
     "    return (b == 0 || b == -1) ? 0 : a % b;\n}\n\n"},
    {CG_H_DIV_U64, CG_H_COUNT_,
     "static inline uint64_t smelt_div_u64(uint64_t a, uint64_t b) { return b ? a / b : 0; }\n\n"},
    {CG_H_MOD_U64, CG_H_COUNT_,
     "static inline uint64_t smelt_mod_u64(uint64_t a, uint64_t b) { return b ? a % b : 0; }\n\n"},
    {CG_H_FLOORDIV_I64, CG_H_COUNT_,
     "/* Division rounding to -inf (x / 0 = 0). */\n"
     "static inline int64_t smelt_floordiv_i64(int64_t a, int64_t b)\n{\n"
     "    int64_t q;\n"
     "    if (b == 0) return 0;\n"
     "    if (b == -1) return (int64_t)(0 - (uint64_t)a);\n"
     "    q = a / b;\n"
     "    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}\n\n"},
    {CG_H_FLOORMOD_I64, CG_H_COUNT_,
     "/* Remainder with the sign of the divisor (x mod 0 = 0). */\n"
     "static inline int64_t smelt_floormod_i64(int64_t a, int64_t b)\n{\n"
     "    int64_t r;\n"
     "    if (b == 0 || b == -1) return 0;\n"
     "    r = a % b;\n"
     "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n\n"},
    {CG_H_FLOORMOD_F32, CG_H_COUNT_,
     "static inline float smelt_floormod_f32(float a, float b)\n{\n"
     "    float r = fmodf(a, b);\n"
     "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n\n"},
    {CG_H_FLOORMOD_F64, CG_H_COUNT_,
     "static inline double smelt_floormod_f64(double a, double b)\n{\n"
     "    double r = fmod(a, b);\n"
     "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n\n"},
    {CG_H_F2I, CG_H_COUNT_,
     "/* float -> integer saturating to [lo, hi], NaN -> 0 (never undefined). */\n"
     "static inline int64_t smelt_f2i(double x, int64_t lo, int64_t hi)\n{\n"
     "    if (x != x) return 0;\n"
     "    if (x <= (double)lo) return lo;\n"
     "    if (x >= (double)hi) return hi;\n"
     "    return (int64_t)x;\n}\n\n"},
    {CG_H_F2U64, CG_H_COUNT_,
     "static inline uint64_t smelt_f2u64(double x)\n{\n"
     "    if (x != x || x <= 0) return 0;\n"
     "    if (x >= 18446744073709551616.0) return UINT64_MAX;\n"
     "    return (uint64_t)x;\n}\n\n"},
    {CG_H_ABS_I64, CG_H_COUNT_,
     "static inline int64_t smelt_abs_i64(int64_t a) { return a < 0 ? (int64_t)(0 - (uint64_t)a) : a; }\n\n"},
    {CG_H_SHIFT, CG_H_COUNT_,
     "/* Shifts by any count (ONNX BitShift): past the width, 0 or the sign. */\n"
     "static inline uint64_t smelt_shl(uint64_t a, uint64_t n) { return n >= 64 ? 0 : a << n; }\n"
     "static inline uint64_t smelt_shr_u(uint64_t a, uint64_t n) { return n >= 64 ? 0 : a >> n; }\n"
     "static inline int64_t smelt_shr_i(int64_t a, uint64_t n) { return a >> (n > 63 ? 63 : n); }\n\n"},
    {CG_H_IPOW_U64, CG_H_COUNT_,
     "/* Integer pow: the power modulo 2^64 (ir_ipow_u64). */\n"
     "static inline uint64_t smelt_ipow_u64(uint64_t b, uint64_t e)\n{\n"
     "    uint64_t r = 1;\n"
     "    for (; e; e >>= 1, b *= b)\n"
     "        if (e & 1) r *= b;\n"
     "    return r;\n}\n\n"},
    {CG_H_F16, CG_H_COUNT_,
     "/* IEEE half precision <-> float, rounding to nearest even (F16C's\n"
     " * conversions where the target has them: one instruction each). */\n"
     "#if defined(__F16C__)\n"
     "#include <immintrin.h>\n"
     "static inline float smelt_f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }\n"
     "static inline uint16_t smelt_f32_to_f16(float f) { return (uint16_t)_cvtss_sh(f, 0); }\n"
     "#else\n"
     "static inline float smelt_f16_to_f32(uint16_t h)\n{\n"
     "    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;\n"
     "    float f;\n"
     "    if (exp == 0 && mant == 0) {\n"
     "        bits = sign;\n"
     "    } else if (exp == 0) { /* subnormal */\n"
     "        exp = 127 - 15 + 1;\n"
     "        while (!(mant & 0x400u)) {\n"
     "            mant <<= 1;\n"
     "            exp--;\n"
     "        }\n"
     "        bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);\n"
     "    } else if (exp == 31) {\n"
     "        bits = sign | 0x7f800000u | (mant << 13);\n"
     "    } else {\n"
     "        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);\n"
     "    }\n"
     "    memcpy(&f, &bits, 4);\n"
     "    return f;\n}\n\n"
     "static inline uint16_t smelt_f32_to_f16(float f)\n{\n"
     "    uint32_t x, sign, mant, half, rem;\n"
     "    int32_t e;\n"
     "    memcpy(&x, &f, 4);\n"
     "    sign = (x >> 16) & 0x8000u;\n"
     "    mant = x & 0x7fffffu;\n"
     "    if (((x >> 23) & 0xffu) == 0xffu) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));\n"
     "    e = (int32_t)((x >> 23) & 0xffu) - 127 + 15;\n"
     "    if (e >= 31) return (uint16_t)(sign | 0x7c00u);\n"
     "    if (e <= 0) {\n"
     "        uint32_t shift, mid;\n"
     "        if (e < -10) return (uint16_t)sign;\n"
     "        mant |= 0x800000u;\n"
     "        shift = (uint32_t)(14 - e);\n"
     "        half = mant >> shift;\n"
     "        rem = mant & ((1u << shift) - 1);\n"
     "        mid = 1u << (shift - 1);\n"
     "        if (rem > mid || (rem == mid && (half & 1u))) half++;\n"
     "        return (uint16_t)(sign | half);\n"
     "    }\n"
     "    half = sign | ((uint32_t)e << 10) | (mant >> 13);\n"
     "    rem = mant & 0x1fffu;\n"
     "    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++; /* may carry into exp */\n"
     "    return (uint16_t)half;\n}\n"
     "#endif\n\n"
     "static inline float smelt_round_f16(float f) { return smelt_f16_to_f32(smelt_f32_to_f16(f)); }\n\n"},
    {CG_H_BF16, CG_H_COUNT_,
     "/* bfloat16 <-> float, rounding to nearest even; NaN stays NaN. */\n"
     "static inline float smelt_bf16_to_f32(uint16_t h)\n{\n"
     "    uint32_t bits = (uint32_t)h << 16;\n"
     "    float f;\n"
     "    memcpy(&f, &bits, 4);\n"
     "    return f;\n}\n\n"
     "static inline uint16_t smelt_f32_to_bf16(float f)\n{\n"
     "    uint32_t x;\n"
     "    memcpy(&x, &f, 4);\n"
     "    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);\n"
     "    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);\n}\n\n"
     "static inline float smelt_round_bf16(float f) { return smelt_bf16_to_f32(smelt_f32_to_bf16(f)); }\n\n"},
    {CG_H_F64_ODD, CG_H_COUNT_,
     "/* double -> float rounding to odd: a second rounding to half precision\n"
     " * then equals rounding the double once. */\n"
     "static inline float smelt_f64_to_f32_odd(double d)\n{\n"
     "    float f = (float)d;\n"
     "    uint32_t bits;\n"
     "    if (f - f != 0 || (double)f == d) return f; /* inf, nan or exact */\n"
     "    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);\n"
     "    memcpy(&bits, &f, 4);\n"
     "    bits |= 1u;\n"
     "    memcpy(&f, &bits, 4);\n"
     "    return f;\n}\n\n"},
    {CG_H_CLAMPI, CG_H_COUNT_,
     "/* For loads vector code evaluates speculatively (the lanes a select or\n"
     " * && discards): any index in [0, n) is safe, its value is not used. */\n"
     "static inline int64_t smelt_clampi_(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }\n\n"},
    {CG_H_SHUFFLE2, CG_H_COUNT_,
     "/* Lanes of a and b (b's numbered from the lane count on) picked by\n"
     " * constant indices; MT is the mask vector type GCC's builtin wants. */\n"
     "#if defined(__clang__)\n"
     "#define SMELT_SHUF2_(MT, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)\n"
     "#else\n"
     "#define SMELT_SHUF2_(MT, a, b, ...) __builtin_shuffle(a, b, (MT){__VA_ARGS__})\n"
     "#endif\n\n"},
    {CG_H_ALLOC64, CG_H_COUNT_,
     "/* 64-byte aligned heap temporaries (C99 has no aligned_alloc). */\n"
     "static inline void *smelt_alloc64_(size_t bytes)\n{\n"
     "    unsigned char *raw = (unsigned char *)malloc(bytes + 64 + sizeof(void *)), *p;\n"
     "    if (!raw) return NULL;\n"
     "    p = (unsigned char *)(((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63);\n"
     "    memcpy(p - sizeof(void *), &raw, sizeof raw);\n"
     "    return p;\n}\n\n"
     "static inline void smelt_free64_(void *p)\n{\n"
     "    void *raw;\n"
     "    memcpy(&raw, (unsigned char *)p - sizeof(void *), sizeof raw);\n"
     "    free(raw);\n}\n\n"},
    {CG_H_PARALLEL, CG_H_COUNT_,
     "/* Through the pool's head, so the module needs no runtime symbol. */\n"
     "static inline void smelt_par_(smelt_rt_pool *pool, int64_t n, smelt_rt_task_fn fn, void *cl)\n{\n"
     "    if (n <= 0) return;\n"
     "    if (pool)\n"
     "        ((const smelt_rt_pool_head *)(const void *)pool)->parallel_for(pool, n, fn, cl);\n"
     "    else\n"
     "        fn(cl, 0, n);\n}\n\n"},
    {CG_H_SETERR, CG_H_COUNT_,
     "static inline void smelt_seterr_(int *flag)\n{\n"
     "#if defined(__GNUC__)\n"
     "    __atomic_store_n(flag, 1, __ATOMIC_RELAXED);\n"
     "#else\n"
     "    *flag = 1;\n"
     "#endif\n}\n\n"},
    {CG_H_CHECK_FAIL, CG_H_COUNT_,
     "/* A failed run-time check: keep the first site, and in it the lowest\n"
     " * position, whichever thread gets here first. */\n"
     "static void smelt_check_fail_(smelt_rt_run_error *r, int site, int64_t value, int64_t pos)\n{\n"
     "#if defined(__GNUC__)\n"
     "    while (__atomic_exchange_n(&r->lock, 1, __ATOMIC_ACQUIRE))\n"
     "        ;\n"
     "#endif\n"
     "    if (r->site < 0 || site < r->site || (site == r->site && pos < r->position)) {\n"
     "        r->site = site;\n"
     "        r->value = value;\n"
     "        r->position = pos;\n"
     "    }\n"
     "#if defined(__GNUC__)\n"
     "    __atomic_store_n(&r->lock, 0, __ATOMIC_RELEASE);\n"
     "#endif\n}\n\n"},
    {CG_H_LOWBIT, CG_H_COUNT_, NULL}, /* the embedded include/smelt_lowbit.h */
    {CG_H_FDIVC_I64, CG_H_FLOORDIV_I64,
     "/* floordiv by a constant c > 0 (GPU kernels): unsigned 32-bit arithmetic when\n"
     " * 0 <= a < 2^31 (a multiply and a shift: every index of a tile's copy), else\n"
     " * the general helper. */\n"
     "static inline int64_t smelt_fdivc_i64(int64_t a, int64_t c)\n{\n"
     "    if ((uint64_t)a < (uint64_t)0x80000000u) return (int64_t)((uint32_t)a / (uint32_t)c);\n"
     "    return smelt_floordiv_i64(a, c);\n}\n\n"},
    {CG_H_FMODC_I64, CG_H_FLOORMOD_I64,
     "static inline int64_t smelt_fmodc_i64(int64_t a, int64_t c)\n{\n"
     "    if ((uint64_t)a < (uint64_t)0x80000000u) return (int64_t)((uint32_t)a % (uint32_t)c);\n"
     "    return smelt_floormod_i64(a, c);\n}\n\n"},
};

_Static_assert(SMELT_ARRAY_LEN(helpers) == CG_H_COUNT_, "one text per helper");

/* ---- vector types ---- */

typedef struct vec_names {
    smelt_dtype dt;
    int lanes;
    const char *v, *u, *m;
} vec_names;

static const vec_names vec_types[] = {
    {SMELT_DT_FLOAT32, 4, "smelt_f32x4", "smelt_f32x4u", "smelt_i32x4"},
    {SMELT_DT_FLOAT32, 8, "smelt_f32x8", "smelt_f32x8u", "smelt_i32x8"},
    {SMELT_DT_FLOAT32, 16, "smelt_f32x16", "smelt_f32x16u", "smelt_i32x16"},
    {SMELT_DT_FLOAT64, 2, "smelt_f64x2", "smelt_f64x2u", "smelt_i64x2"},
    {SMELT_DT_FLOAT64, 4, "smelt_f64x4", "smelt_f64x4u", "smelt_i64x4"},
    {SMELT_DT_FLOAT64, 8, "smelt_f64x8", "smelt_f64x8u", "smelt_i64x8"},
};

const char *cg_vec_type(smelt_dtype dt, int lanes, char kind)
{
    for (size_t i = 0; i < SMELT_ARRAY_LEN(vec_types); i++)
        if (vec_types[i].dt == dt && vec_types[i].lanes == lanes)
            return kind == 'u' ? vec_types[i].u : kind == 'm' ? vec_types[i].m : vec_types[i].v;
    return "?";
}

/* Integer lanes of float <-> integer conversions in vector loops. */
static const struct {
    smelt_dtype dt;
    const char *ctype, *prefix;
    int size;
} cvt_types[] = {
    {SMELT_DT_INT8, "int8_t", "i8", 1},    {SMELT_DT_UINT8, "uint8_t", "u8", 1},
    {SMELT_DT_INT16, "int16_t", "i16", 2}, {SMELT_DT_UINT16, "uint16_t", "u16", 2},
    {SMELT_DT_INT32, "int32_t", "i32", 4},
};

_Static_assert(SMELT_ARRAY_LEN(cvt_types) == sizeof(((cg_emitter *)0)->vec_cvt_lanes) / sizeof(unsigned),
               "a lane mask per conversion type");

int cg_cvt_index(smelt_dtype dt)
{
    for (size_t i = 0; i < SMELT_ARRAY_LEN(cvt_types); i++)
        if (cvt_types[i].dt == dt) return (int)i;
    return -1;
}

/* smelt_cvt_<t>x<lanes>[u]: names of at most 16 lanes, in static storage */
const char *cg_cvt_type(smelt_dtype dt, int lanes, bool unaligned)
{
    static char names[SMELT_ARRAY_LEN(cvt_types)][5][2][24];
    int k = cg_cvt_index(dt), l = lanes == 2 ? 0 : lanes == 4 ? 1 : lanes == 8 ? 2 : lanes == 16 ? 3 : 4;
    if (k < 0 || l == 4) return "?";
    char *n = names[k][l][unaligned];
    if (!n[0]) snprintf(n, sizeof names[0][0][0], "smelt_cvt_%sx%d%s", cvt_types[k].prefix, lanes, unaligned ? "u" : "");
    return n;
}

static void emit_cvt_typedefs(const cg_emitter *e, smelt_strbuf *out)
{
    for (size_t i = 0; i < SMELT_ARRAY_LEN(cvt_types); i++)
        for (int lanes = 2; lanes <= 16; lanes *= 2) {
            if (!(e->vec_cvt_lanes[i] & (1u << lanes))) continue;
            int bytes = lanes * cvt_types[i].size;
            smelt_strbuf_printf(out, "typedef %s %s __attribute__((vector_size(%d)));\n", cvt_types[i].ctype,
                                cg_cvt_type(cvt_types[i].dt, lanes, false), bytes);
            smelt_strbuf_printf(out, "typedef %s %s __attribute__((vector_size(%d), aligned(%d), may_alias));\n",
                                cvt_types[i].ctype, cg_cvt_type(cvt_types[i].dt, lanes, true), bytes,
                                cvt_types[i].size);
        }
}

static void emit_vector_typedefs(const cg_emitter *e, smelt_strbuf *out)
{
    bool any = false;
    for (size_t i = 0; i < SMELT_ARRAY_LEN(vec_types); i++) {
        const vec_names *vn = &vec_types[i];
        unsigned used = vn->dt == SMELT_DT_FLOAT32 ? e->vec_f32_lanes : e->vec_f64_lanes;
        if (!(used & (1u << vn->lanes))) continue;
        bool f32 = vn->dt == SMELT_DT_FLOAT32;
        int bytes = vn->lanes * (f32 ? 4 : 8);
        if (!any) smelt_strbuf_append(out, "/* GCC vector extensions; the u types are unaligned loads/stores. */\n");
        any = true;
        smelt_strbuf_printf(out, "typedef %s %s __attribute__((vector_size(%d)));\n", f32 ? "float" : "double",
                            vn->v, bytes);
        smelt_strbuf_printf(out, "typedef %s %s __attribute__((vector_size(%d), aligned(%d), may_alias));\n",
                            f32 ? "float" : "double", vn->u, bytes, f32 ? 4 : 8);
        smelt_strbuf_printf(out, "typedef %s %s __attribute__((vector_size(%d)));\n",
                            f32 ? "int32_t" : "int64_t", vn->m, bytes);
    }
    emit_cvt_typedefs(e, out);
    if (any) smelt_strbuf_append(out, "\n");
}

/* ---- vector math ----
 * exp, tanh, erf and sigmoid over float32 lanes for vectorised loops (scalar
 * code calls libm).  Range reduction + polynomials whose coefficients were
 * fitted by least squares at Chebyshev nodes of the interval, weighted for
 * relative error, and rounded to float.  Against the double-precision libm
 * function, over all 2^32 floats: exp within 1.07 ulp, tanh 1.33, erf 1.17,
 * sigmoid (1 / (1 + exp(-x)) as in scalar code) 2.48; the bounds and their
 * reasons are in tests/unit/test_codegen_math.c.  NaN stays NaN, +-inf and
 * overflow/underflow give what libm gives, subnormal results are rounded
 * once.  Only vector arithmetic, comparisons and bit casts (GCC and clang);
 * vectors pass by pointer, so no function has a vector argument (no ABI
 * dependence on -mavx*).  In the templates $V is the vector type, $M its mask type, $N the suffix. */

static const char vmath_select_text[] =
    "/* (m ? a : b) per lane; m is -1 or 0 in each lane. */\n"
    "#define SMELT_VSEL_(V, M, m, a, b) ((V)(((m) & (M)(a)) | (~(m) & (M)(b))))\n\n";

/* Emitted when vector math or float32 vector min/max is. */
static const char vx86_text[] =
    "/* Where the compiler targets x86 vector extensions: one instruction for\n"
    " * min/max (the second operand when one is NaN) and for p * 2^n rounded\n"
    " * once (AVX-512 scalef), each giving what the portable form gives. */\n"
    "#if defined(__SSE__) || defined(__AVX__) || defined(__AVX512F__)\n"
    "#include <immintrin.h>\n"
    "#endif\n"
    "#if defined(__SSE__)\n"
    "#define SMELT_VMIN_f32x4(a, b) ((smelt_f32x4)_mm_min_ps((__m128)(a), (__m128)(b)))\n"
    "#define SMELT_VMAX_f32x4(a, b) ((smelt_f32x4)_mm_max_ps((__m128)(a), (__m128)(b)))\n"
    "#endif\n"
    "#if defined(__AVX__)\n"
    "#define SMELT_VMIN_f32x8(a, b) ((smelt_f32x8)_mm256_min_ps((__m256)(a), (__m256)(b)))\n"
    "#define SMELT_VMAX_f32x8(a, b) ((smelt_f32x8)_mm256_max_ps((__m256)(a), (__m256)(b)))\n"
    "#endif\n"
    "#if defined(__AVX512F__)\n"
    "#define SMELT_VMIN_f32x16(a, b) ((smelt_f32x16)_mm512_min_ps((__m512)(a), (__m512)(b)))\n"
    "#define SMELT_VMAX_f32x16(a, b) ((smelt_f32x16)_mm512_max_ps((__m512)(a), (__m512)(b)))\n"
    "#define SMELT_VSCALEF_f32x16(p, n) ((smelt_f32x16)_mm512_scalef_ps((__m512)(p), (__m512)(n)))\n"
    "#endif\n"
    "#if defined(__AVX512F__) && defined(__AVX512VL__)\n"
    "#define SMELT_VSCALEF_f32x8(p, n) ((smelt_f32x8)_mm256_scalef_ps((__m256)(p), (__m256)(n)))\n"
    "#define SMELT_VSCALEF_f32x4(p, n) ((smelt_f32x4)_mm_scalef_ps((__m128)(p), (__m128)(n)))\n"
    "#endif\n\n";

static const char *const vmath_text[CG_VM_COUNT_] = {
    [CG_VM_EXP] =
        "/* exp: x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, n*hi exact),\n"
        " * exp(r) = 1 + r + r^2 q(r), times 2^n rounded once (scalef, or two\n"
        " * halves that are normal floats), so a subnormal result is rounded once.\n"
        " * x is clamped to [-104, 89], where exp is 0 and inf in float; the clamps\n"
        " * let NaN through (comparisons with it are false; MINPS/MAXPS return\n"
        " * their second operand), and the arithmetic keeps it NaN. */\n"
        "static inline void smelt_vexp_$N($V *io)\n{\n"
        "    const $V zero = {0}, x = *io;\n"
        "#ifdef SMELT_VMIN_$N\n"
        "    const $V c = SMELT_VMAX_$N(zero - 104.0f, SMELT_VMIN_$N(zero + 89.0f, x));\n"
        "#else\n"
        "    $M m = ($M)(x > 89.0f);\n"
        "    $V c = SMELT_VSEL_($V, $M, m, zero + 89.0f, x);\n"
        "    m = ($M)(c < -104.0f);\n"
        "    c = SMELT_VSEL_($V, $M, m, zero - 104.0f, c);\n"
        "#endif\n"
        "    /* n = round(c / ln2): adding 1.5 * 2^23 leaves n in the low mantissa bits */\n"
        "    const $V t = c * 1.44269504f + 12582912.0f;\n"
        "    const $V n = t - 12582912.0f;\n"
        "    $V r = c - n * 0.693359375f;\n"
        "    r = r - n * -2.12194440e-4f;\n"
        "    const $V q = (((0.00139345345f * r + 0.00836376939f) * r + 0.0416664556f) * r + 0.166665733f) * r + 0.5f;\n"
        "    const $V p = (r * r) * q + r + 1.0f;\n"
        "#ifdef SMELT_VSCALEF_$N\n"
        "    *io = SMELT_VSCALEF_$N(p, n);\n"
        "#else\n"
        "    const $M ni = ($M)t - 0x4b400000, n1 = ni >> 1, n2 = ni - n1;\n"
        "    *io = p * ($V)((n1 + 127) << 23) * ($V)((n2 + 127) << 23);\n"
        "#endif\n"
        "}\n\n",
    [CG_VM_TANH] =
        "/* tanh: sign(x) (1 - 2 / (exp(2|x|) + 1)), which is 1 once exp\n"
        " * overflows; below |x| = 0.625, where that form cancels, x + x^3 P(x^2). */\n"
        "static inline void smelt_vtanh_$N($V *io)\n{\n"
        "    const $V x = *io;\n"
        "    const $M sign = ($M)x & (-2147483647 - 1);\n"
        "    const $V a = ($V)(($M)x & 2147483647);\n"
        "    $V e = a + a;\n"
        "    smelt_vexp_$N(&e);\n"
        "    const $V big = ($V)(($M)(1.0f - 2.0f / (e + 1.0f)) | sign);\n"
        "    const $V u = x * x;\n"
        "    const $V q = (((-0.00571896276f * u + 0.0206531249f) * u - 0.0537446588f) * u + 0.133315131f) * u\n"
        "                 - 0.333332866f;\n"
        "    const $V small = x + x * u * q;\n"
        "    const $M m = ($M)(a < 0.625f);\n"
        "    *io = SMELT_VSEL_($V, $M, m, small, big);\n}\n\n",
    [CG_VM_ERF] =
        "/* erf: below |x| = 1, x + x P(x^2); above, sign(x) (1 - exp(-x^2) Q(t))\n"
        " * with t = 1 / (1 + |x|) and Q ~ erfc(x) exp(x^2), |x| clamped to 4\n"
        " * (erf is 1 in float from 3.84). */\n"
        "static inline void smelt_verf_$N($V *io)\n{\n"
        "    const $V zero = {0}, x = *io;\n"
        "    const $M sign = ($M)x & (-2147483647 - 1);\n"
        "    const $V a = ($V)(($M)x & 2147483647);\n"
        "    $M m = ($M)(a > 4.0f);\n"
        "    const $V c = SMELT_VSEL_($V, $M, m, zero + 4.0f, a);\n"
        "    const $V t = 1.0f / (1.0f + c);\n"
        "    const $V q = ((((((-0.662681401f * t + 1.44663107f) * t - 0.7637766f) * t - 0.549176812f) * t\n"
        "                    + 0.400837779f) * t + 0.540055871f) * t + 0.566668451f) * t - 0.000104181687f;\n"
        "    $V e = -(c * c);\n"
        "    smelt_vexp_$N(&e);\n"
        "    const $V big = ($V)(($M)(1.0f - e * q) | sign);\n"
        "    const $V u = x * x;\n"
        "    const $V p = (((((7.93349391e-05f * u - 0.00080348464f) * u + 0.00519121857f) * u - 0.0268553998f) * u\n"
        "                   + 0.112836257f) * u - 0.376126289f) * u + 0.128379166f;\n"
        "    const $V small = x + x * p;\n"
        "    m = ($M)(a < 1.0f);\n"
        "    *io = SMELT_VSEL_($V, $M, m, small, big);\n}\n\n",
    [CG_VM_SIGMOID] =
        "/* sigmoid: 1 / (1 + exp(-x)), the scalar code's formula. */\n"
        "static inline void smelt_vsigmoid_$N($V *io)\n{\n"
        "    $V e = -*io;\n"
        "    smelt_vexp_$N(&e);\n"
        "    *io = 1.0f / (1.0f + e);\n}\n\n",
};

const char *cg_vmath_name(ir_call_op op, cg_vmath *which)
{
    static const struct {
        ir_call_op op;
        cg_vmath vm;
        const char *name;
    } map[] = {
        {IR_CALL_EXP, CG_VM_EXP, "smelt_vexp"},
        {IR_CALL_TANH, CG_VM_TANH, "smelt_vtanh"},
        {IR_CALL_ERF, CG_VM_ERF, "smelt_verf"},
        {IR_CALL_SIGMOID, CG_VM_SIGMOID, "smelt_vsigmoid"},
    };
    for (size_t i = 0; i < SMELT_ARRAY_LEN(map); i++)
        if (map[i].op == op) {
            *which = map[i].vm;
            return map[i].name;
        }
    return NULL;
}

/* text with $V, $M and $N replaced by the names of one vector type */
static void append_template(smelt_strbuf *out, const char *text, const char *vt, const char *mt,
                            const char *suffix)
{
    const char *p = text, *d;
    while ((d = strchr(p, '$')) != NULL) {
        smelt_strbuf_appendn(out, p, (size_t)(d - p));
        smelt_strbuf_append(out, d[1] == 'V' ? vt : d[1] == 'M' ? mt : suffix);
        p = d + 2;
    }
    smelt_strbuf_append(out, p);
}

/* float32 vector min/max where vx86_text maps no instruction: the blend
 * `a < b ? a : b` per lane (the second operand when unordered), as MINPS. */
static const char vminmax_portable_text[] =
    "#ifndef SMELT_VMIN_$N\n"
    "#define SMELT_VMIN_$N(a, b) (($V)((($M)((a) < (b)) & ($M)(a)) | (~($M)((a) < (b)) & ($M)(b))))\n"
    "#endif\n"
    "#ifndef SMELT_VMAX_$N\n"
    "#define SMELT_VMAX_$N(a, b) (($V)((($M)((a) > (b)) & ($M)(a)) | (~($M)((a) > (b)) & ($M)(b))))\n"
    "#endif\n";

static void emit_vector_math(const cg_emitter *e, smelt_strbuf *out)
{
    unsigned lanes_used[CG_VM_COUNT_], any = 0;
    memcpy(lanes_used, e->vmath_lanes, sizeof lanes_used);
    for (int i = 0; i < CG_VM_COUNT_; i++) { /* the others are built on exp */
        if (i != CG_VM_EXP) lanes_used[CG_VM_EXP] |= lanes_used[i];
        any |= lanes_used[i];
    }
    /* elsewhere (NEON) the portable forms: fmin/fmax would return the
     * non-NaN operand, not the second as `a < b ? a : b` does */
    if ((any || e->vminmax_f32) && e->target->x86_vector_ops) smelt_strbuf_append(out, vx86_text);
    if (any || e->vminmax_f32) {
        for (int lanes = 4; lanes <= 16; lanes *= 2) {
            char suffix[16];
            snprintf(suffix, sizeof suffix, "f32x%d", lanes);
            append_template(out, vminmax_portable_text, cg_vec_type(SMELT_DT_FLOAT32, lanes, 'v'),
                            cg_vec_type(SMELT_DT_FLOAT32, lanes, 'm'), suffix);
        }
        smelt_strbuf_append(out, "\n");
    }
    if (!any) return;
    smelt_strbuf_append(out, vmath_select_text);
    for (int lanes = 4; lanes <= 16; lanes *= 2) {
        char suffix[16];
        snprintf(suffix, sizeof suffix, "f32x%d", lanes);
        for (int i = 0; i < CG_VM_COUNT_; i++)
            if (lanes_used[i] & (1u << lanes))
                append_template(out, vmath_text[i], cg_vec_type(SMELT_DT_FLOAT32, lanes, 'v'),
                                cg_vec_type(SMELT_DT_FLOAT32, lanes, 'm'), suffix);
    }
}

/* ---- min/max ---- */

static void emit_minmax_helpers(const cg_emitter *e, smelt_strbuf *out)
{
    static const struct {
        smelt_dtype dt;
        const char *suffix, *type;
    } types[] = {
        {SMELT_DT_FLOAT32, "f32", "float"},  {SMELT_DT_FLOAT64, "f64", "double"},
        {SMELT_DT_INT8, "i8", "int8_t"},     {SMELT_DT_UINT8, "u8", "uint8_t"},
        {SMELT_DT_INT16, "i16", "int16_t"},  {SMELT_DT_UINT16, "u16", "uint16_t"},
        {SMELT_DT_INT32, "i32", "int32_t"},  {SMELT_DT_UINT32, "u32", "uint32_t"},
        {SMELT_DT_INT64, "i64", "int64_t"},  {SMELT_DT_UINT64, "u64", "uint64_t"},
    };
    for (size_t i = 0; i < SMELT_ARRAY_LEN(types); i++) {
        unsigned bit = 1u << types[i].dt;
        const char *t = types[i].type, *s = types[i].suffix;
        if (e->min_dtypes & bit)
            smelt_strbuf_printf(out, "static inline %s smelt_min_%s(%s a, %s b) { return a < b ? a : b; }\n",
                                t, s, t, t);
        if (e->max_dtypes & bit)
            smelt_strbuf_printf(out, "static inline %s smelt_max_%s(%s a, %s b) { return a > b ? a : b; }\n",
                                t, s, t, t);
    }
    if (e->min_dtypes | e->max_dtypes) smelt_strbuf_append(out, "\n");
}

static const char *helper_source(const helper_text *h)
{
    if (h->text) return h->text;
    const cg_embedded_file *f = cg_runtime_file("smelt_lowbit.h");
    return f ? (const char *)f->data : "#error smelt_lowbit.h is not embedded\n";
}

void cg_prelude(cg_emitter *e, smelt_strbuf *out)
{
    smelt_strbuf_printf(out, "/* Generated by smelt for target %s%s. Do not edit. */\n", e->target->name,
                        e->target->native ? " (host)" : "");
    smelt_strbuf_append(out, header_text);
    emit_vector_typedefs(e, out);
    bool need[CG_H_COUNT_];
    memcpy(need, e->helpers, sizeof need);
    for (int i = 0; i < CG_H_COUNT_; i++)
        if (need[i] && helpers[i].needs != CG_H_COUNT_) need[helpers[i].needs] = true;
    for (int i = 0; i < CG_H_COUNT_; i++) {
        SMELT_ASSERT(helpers[i].id == (cg_helper)i);
        if (need[i]) smelt_strbuf_append(out, helper_source(&helpers[i]));
    }
    emit_minmax_helpers(e, out);
    emit_vector_math(e, out);
    for (int i = 0; i < e->n_microkernels; i++) {
        smelt_strbuf_append(out, "/* micro-kernel ");
        cg_append_comment_text(out, e->microkernels[i]->name, 80);
        smelt_strbuf_append(out, " */\n");
        smelt_strbuf_append(out, cg_microkernel_text(e->microkernels[i]));
        smelt_strbuf_append(out, "\n");
    }
}

/* ---- GPU kernels' helpers ---- */

/* What a helper GPU kernels cannot have is needed for, for the refusal. */
static const char *gpu_missing_helper(cg_helper h)
{
    switch (h) {
    case CG_H_F16: return "float16 arithmetic";
    case CG_H_BF16: return "bfloat16 arithmetic";
    case CG_H_F64_ODD: return "float64 to float16 rounding";
    case CG_H_LOWBIT: return "float8/float4/int4 types";
    case CG_H_SHUFFLE2: return "vector shuffles";
    case CG_H_ALLOC64: return "heap temporaries";
    case CG_H_PARALLEL: return "thread-pool loops";
    case CG_H_SETERR:
    case CG_H_CHECK_FAIL: return "run-time data checks";
    default: return NULL;
    }
}

const char *cg_gpu_unsupported_helper(const cg_emitter *e)
{
    for (int i = 0; i < CG_H_COUNT_; i++)
        if (e->helpers[i] && gpu_missing_helper((cg_helper)i)) return gpu_missing_helper((cg_helper)i);
    return NULL;
}

/* text with every "static inline " replaced by fn_qual and a blank. */
static void append_qualified(smelt_strbuf *out, const char *text, const char *fn_qual)
{
    static const char from[] = "static inline ";
    for (const char *q = text; *q;) {
        const char *hit = strstr(q, from);
        if (!hit) {
            smelt_strbuf_append(out, q);
            return;
        }
        smelt_strbuf_appendn(out, q, (size_t)(hit - q));
        smelt_strbuf_printf(out, "%s ", fn_qual);
        q = hit + sizeof from - 1;
    }
}

void cg_gpu_prelude_helpers(cg_emitter *e, const char *fn_qual, smelt_strbuf *out)
{
    bool need[CG_H_COUNT_];
    memcpy(need, e->helpers, sizeof need);
    for (int i = 0; i < CG_H_COUNT_; i++)
        if (need[i] && helpers[i].needs != CG_H_COUNT_) need[helpers[i].needs] = true;
    for (int i = 0; i < CG_H_COUNT_; i++) {
        if (!need[i]) continue;
        const char *missing = gpu_missing_helper((cg_helper)i);
        if (missing) {
            cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: the model needs %s, which GPU kernels "
                    "(target '%s') do not support yet", missing, e->target->name);
            return;
        }
        append_qualified(out, helpers[i].text, fn_qual);
    }
    smelt_strbuf tmp;
    smelt_strbuf_init(&tmp);
    emit_minmax_helpers(e, &tmp);
    append_qualified(out, smelt_strbuf_cstr(&tmp), fn_qual);
    cg_sb_done(e, &tmp);
}
