/* The int8 micro-kernels (issue #10, docs/quantization.md): the convolution
 * (smelt_uk_qpack_u8, smelt_uk_qgemm_u8s8: QLinearConv; smelt_uk_qdwconv_u8:
 * depthwise QLinearConv), the matrix product with a constant B
 * (smelt_uk_qmatmul_u8s8: MatMulInteger, QLinearMatMul), DynamicQuantizeLinear's
 * y (smelt_uk_dynq_u8) and the add of two quantized tensors (smelt_uk_qadd_u8:
 * smelt.QLinearAdd).
 *
 * This file is C99 text that the code generator copies into a module
 * (embedded at build time, microkernel.c) and that the loop-IR interpreter
 * includes as C (tir/interp.c), so both run the same source; which branch
 * compiles depends on the ISA macros of the compiler that builds it:
 *
 *   AVX-512 VNNI (+VL) or AVX-VNNI   vpdpbusd on 256-bit vectors: u8 x s8,
 *                                    four products per int32 lane, exact
 *   AVX2                             vpmaddubsw + vpmaddwd where the weights
 *                                    cannot saturate 16 bits (safe16, checked
 *                                    at compile time), else u8 and s8 widened
 *                                    to 16 bits and vpmaddwd: exact either way
 *   anything else                    scalar C
 *
 * Layouts (made by smelt_uk_qpack_u8 at run time and ops/quant_fast.c at
 * compile time):
 *   Bp [Pp/16][K4][16][4] u8  the im2col matrix in panels of 16 pixels (one
 *                       register block's columns, read contiguously), four
 *                       consecutive k of one pixel in a 32-bit word
 *                       (k = (c * KH + kh) * KW + kw)
 *   Ap [Mpad][K4][4] s8 the weights minus their zero point, same k order
 * The products are sum_k Bp * Ap; comp[m] (compile time) adds the bias and
 * -x_zp * sum_k Ap, so the accumulator equals ONNX's
 * sum (x - x_zp) * (w - w_zp) + bias; the epilogue requantizes it as the
 * reference kernel does: rint(double(acc) * mult[m] + y_zp), saturated. */
#ifndef SMELT_UK_QGEMM_U8S8_C /* every kernel carries this text; a module gets it once */
#define SMELT_UK_QGEMM_U8S8_C
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#if defined(__GNUC__)
/* the file carries every kernel; a module calls some (AOT packages build
 * with -Wall -Werror) */
#define SMELT_UKQ_KERNEL static __attribute__((unused))
#define SMELT_UKQ_INLINE static inline __attribute__((always_inline, unused))
/* keeps x * m and + zp two roundings (no FMA contraction), as in the reference */
#define SMELT_UKQ_NOFMA(x) __asm__("" : "+m"(x))
#if defined(__clang__)
#define SMELT_UKQ_NOIPA
#else
#define SMELT_UKQ_NOIPA __attribute__((noipa))
#endif
#else
#define SMELT_UKQ_NOIPA
#define SMELT_UKQ_KERNEL static
#define SMELT_UKQ_INLINE static inline
#define SMELT_UKQ_NOFMA(x) (void)0
#endif

/* Rows of one register block and pixels of one column block: the packed
 * weights have a multiple of 8 rows and the packed pixels a multiple of 32
 * (ops/quant_fast.c), so blocks never cross them. */
#define SMELT_UKQ_ROWS 4
#define SMELT_UKQ_COLS 16
/* the byte of Bp holding k = 4 * k4 + e of pixel p */
#define SMELT_UKQ_AT(k4, p, e) ((((p) >> 4) * K4 + (k4)) * 64 + ((p) & 15) * 4 + (e))

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Where the four k of one k4 step read x: per e, the channel plane's row
 * offset terms, or valid 0 past K. */
typedef struct smelt_ukq_taps {
    const uint8_t *plane[4];
    int64_t kh[4], kw[4];
    int valid[4];
} smelt_ukq_taps;

/* Pixels the pack reads per tap before interleaving them (a multiple of
 * 16: whole panels). */
#define SMELT_UKQ_RUN 256

/* dst[0, n) = src[0, n) (n at most a few hundred): 16 bytes at a time, the
 * last 16 overlapping; a libc call per row segment cost more than the copy. */
SMELT_UKQ_INLINE void smelt_ukq_copy(uint8_t *dst, const uint8_t *src, int64_t n)
{
#if defined(__SSE2__)
    if (n >= 16) {
        int64_t i = 0;
        for (; i + 16 <= n; i += 16)
            _mm_storeu_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
        if (i < n)
            _mm_storeu_si128((__m128i *)(dst + n - 16), _mm_loadu_si128((const __m128i *)(src + n - 16)));
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) dst[i] = src[i];
}

/* Tap e's bytes of output pixels [p, p + n) into s, not yet flipped:
 * whole output-row segments at a time, the part inside the image copied in
 * one piece at stride 1; zf (x_zp unflipped) where the window reads
 * padding, past K or past P. */
SMELT_UKQ_INLINE void smelt_ukq_tap_run(uint8_t *s, const smelt_ukq_taps *tp, int e, int64_t p,
                                        int64_t n, int64_t P, int64_t H, int64_t W, int64_t Wo,
                                        int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                                        int64_t dh, int64_t dw, uint8_t zf)
{
    if (!tp->valid[e]) { /* past K */
        memset(s, zf, (size_t)n);
        return;
    }
    int64_t j = 0, oh = p / Wo, ow = p % Wo;
    while (j < n && p + j < P) {
        int64_t m = Wo - ow < n - j ? Wo - ow : n - j;
        if (m > P - p - j) m = P - p - j;
        int64_t ih = oh * sh - ph + tp->kh[e] * dh, iw = ow * sw - pw + tp->kw[e] * dw;
        if (ih < 0 || ih >= H) {
            memset(s + j, zf, (size_t)m);
        } else if (sw == 1) { /* inside the image: i in [a, b) */
            const uint8_t *row = tp->plane[e] + ih * W;
            int64_t a = iw < 0 ? (-iw < m ? -iw : m) : 0;
            int64_t b = W - iw < m ? W - iw : m;
            if (b < a) b = a;
            for (int64_t i = 0; i < a; i++) s[j + i] = zf;
            smelt_ukq_copy(s + j + a, row + iw + a, b - a);
            for (int64_t i = b; i < m; i++) s[j + i] = zf;
        } else {
            const uint8_t *row = tp->plane[e] + ih * W;
            for (int64_t i = 0; i < m; i++, iw += sw) s[j + i] = iw >= 0 && iw < W ? row[iw] : zf;
        }
        j += m;
        ow = 0;
        oh++;
    }
    if (j < n) memset(s + j, zf, (size_t)(n - j)); /* past P */
}

/* 16 pixels of four taps (runs t0..t3, flipped by f) interleaved into one
 * panel row: dst[j * 4 + e] = te[j] ^ f. */
SMELT_UKQ_INLINE void smelt_ukq_interleave16(uint8_t *dst, const uint8_t *t0, const uint8_t *t1,
                                             const uint8_t *t2, const uint8_t *t3, uint8_t f)
{
#if defined(__SSE2__)
    const __m128i fl = _mm_set1_epi8((char)f);
    __m128i a0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)t0), fl);
    __m128i a1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)t1), fl);
    __m128i a2 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)t2), fl);
    __m128i a3 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)t3), fl);
    __m128i u0 = _mm_unpacklo_epi8(a0, a1), u1 = _mm_unpackhi_epi8(a0, a1);
    __m128i u2 = _mm_unpacklo_epi8(a2, a3), u3 = _mm_unpackhi_epi8(a2, a3);
    _mm_storeu_si128((__m128i *)dst, _mm_unpacklo_epi16(u0, u2));
    _mm_storeu_si128((__m128i *)(dst + 16), _mm_unpackhi_epi16(u0, u2));
    _mm_storeu_si128((__m128i *)(dst + 32), _mm_unpacklo_epi16(u1, u3));
    _mm_storeu_si128((__m128i *)(dst + 48), _mm_unpackhi_epi16(u1, u3));
#else
    for (int j = 0; j < 16; j++) {
        dst[j * 4 + 0] = (uint8_t)(t0[j] ^ f);
        dst[j * 4 + 1] = (uint8_t)(t1[j] ^ f);
        dst[j * 4 + 2] = (uint8_t)(t2[j] ^ f);
        dst[j * 4 + 3] = (uint8_t)(t3[j] ^ f);
    }
#endif
}

/* Bp at (k4, p, e) = SMELT_UKQ_AT(k4, p, e) for k4 in [t * KT, t * KT + KT)
 * (clipped to K4): x at k = 4 * k4 + e of output pixel p = oh * Wo + ow,
 * x_zp where the window reads padding, past K or past P (the weights are 0
 * there or the pixel is not stored).  flip = 0x80 turns s8 into u8 (x_zp
 * flipped too).  Each tap's bytes for SMELT_UKQ_RUN pixels are gathered
 * first (row segments, copied whole at stride 1), then interleaved panel
 * by panel: gathering each panel's 16 bytes element by element wherever a
 * panel met padding or a row's end made the pack of a 3x3 conv half as
 * long as its product. */
SMELT_UKQ_KERNEL void smelt_uk_qpack_u8(uint8_t *Bp, const void *X, int64_t t, int64_t KT, int64_t K4,
                              int64_t K, int64_t P, int64_t Pp, int64_t H, int64_t W, int64_t KH,
                              int64_t KW, int64_t Wo, int64_t sh, int64_t sw, int64_t ph,
                              int64_t pw, int64_t dh, int64_t dw, int64_t xz, int64_t flip)
{
    const uint8_t *x = (const uint8_t *)X;
    const uint8_t f = (uint8_t)flip, zf = (uint8_t)((uint8_t)xz ^ f);
    int64_t k4_end = t * KT + KT < K4 ? t * KT + KT : K4;
    uint8_t run[4][SMELT_UKQ_RUN];
    for (int64_t k4 = t * KT; k4 < k4_end; k4++) {
        smelt_ukq_taps tp;
        for (int e = 0; e < 4; e++) {
            int64_t k = 4 * k4 + e;
            tp.valid[e] = k < K;
            tp.plane[e] = x + (k < K ? k / (KH * KW) : 0) * H * W;
            tp.kh[e] = k / KW % KH;
            tp.kw[e] = k % KW;
        }
        for (int64_t pc = 0; pc < Pp; pc += SMELT_UKQ_RUN) {
            int64_t n = Pp - pc < SMELT_UKQ_RUN ? Pp - pc : SMELT_UKQ_RUN;
            for (int e = 0; e < 4; e++)
                smelt_ukq_tap_run(run[e], &tp, e, pc, n, P, H, W, Wo, sh, sw, ph, pw, dh, dw, zf);
            for (int64_t q = 0; q < n; q += 16)
                smelt_ukq_interleave16(Bp + SMELT_UKQ_AT(k4, pc + q, 0), run[0] + q, run[1] + q,
                                       run[2] + q, run[3] + q, f);
        }
    }
}

/* acc + comp requantized: rint(double(acc + comp) * mult + zp) in [lo, hi]
 * (the int32 sum wraps, as the reference's does). */
SMELT_UKQ_INLINE int64_t smelt_ukq_requant(int32_t acc, int32_t comp, double mult, int64_t zp,
                                           int64_t lo, int64_t hi)
{
    int32_t v = (int32_t)((uint32_t)acc + (uint32_t)comp);
    double r = (double)v * mult;
    SMELT_UKQ_NOFMA(r);
    r = rint(r + (double)zp);
    if (r < (double)lo) r = (double)lo;
    if (r > (double)hi) r = (double)hi;
    return (int64_t)r;
}

SMELT_UKQ_INLINE void smelt_ukq_store(void *Y, int64_t i, int64_t v, int64_t lo)
{
    if (lo < 0) ((int8_t *)Y)[i] = (int8_t)v;
    else ((uint8_t *)Y)[i] = (uint8_t)v;
}

/* Rows [m, m + ROWS) x pixels [p, p + COLS), plain C (other ISAs). */
SMELT_UKQ_INLINE void smelt_ukq_block_c(void *Y, const uint8_t *Bp, const int8_t *Ap,
                                        const int32_t *comp, const double *mult, int64_t m,
                                        int64_t p, int64_t M, int64_t P, int64_t Pp, int64_t K4,
                                        int64_t yz, int64_t lo, int64_t hi)
{
    (void)Pp; /* the panels' layout needs K4 only */
    for (int64_t r = m; r < m + SMELT_UKQ_ROWS && r < M; r++)
        for (int64_t j = p; j < p + SMELT_UKQ_COLS && j < P; j++) {
            int32_t acc = 0;
            for (int64_t k4 = 0; k4 < K4; k4++)
                for (int e = 0; e < 4; e++)
                    acc += (int32_t)Bp[SMELT_UKQ_AT(k4, j, e)] * (int32_t)Ap[(r * K4 + k4) * 4 + e];
            smelt_ukq_store(Y, r * P + j, smelt_ukq_requant(acc, comp[r], mult[r], yz, lo, hi), lo);
        }
}

#if defined(__AVX2__)
/* Eight accumulators of row m requantized to eight outputs at Y + off
 * (n < 8: the first n). */
SMELT_UKQ_INLINE void smelt_ukq_store8(void *Y, int64_t off, int n, __m256i acc, int32_t comp,
                                       double mult, int64_t zp, int64_t lo, int64_t hi)
{
    __m256i v = _mm256_add_epi32(acc, _mm256_set1_epi32(comp));
    __m256d m = _mm256_set1_pd(mult), z = _mm256_set1_pd((double)zp);
    __m256d l = _mm256_set1_pd((double)lo), h = _mm256_set1_pd((double)hi);
    __m256d d0 = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(v)), m);
    __m256d d1 = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(v, 1)), m);
    __asm__("" : "+x"(d0), "+x"(d1)); /* no FMA contraction with the + zp */
    d0 = _mm256_round_pd(_mm256_add_pd(d0, z), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    d1 = _mm256_round_pd(_mm256_add_pd(d1, z), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    d0 = _mm256_min_pd(_mm256_max_pd(d0, l), h);
    d1 = _mm256_min_pd(_mm256_max_pd(d1, l), h);
    __m128i w16 = _mm_packs_epi32(_mm256_cvtpd_epi32(d0), _mm256_cvtpd_epi32(d1));
    __m128i w8 = lo < 0 ? _mm_packs_epi16(w16, w16) : _mm_packus_epi16(w16, w16);
    uint8_t *y = (uint8_t *)Y + off;
    if (n == 8) {
        _mm_storel_epi64((__m128i *)y, w8);
    } else {
        uint8_t tmp[16];
        _mm_storeu_si128((__m128i *)tmp, w8);
        memcpy(y, tmp, (size_t)n);
    }
}

/* One register block: ROWS (4) rows x COLS pixels (two vectors of 8
 * int32), then the epilogue.  safe16 (a constant once inlined) selects
 * vpmaddubsw.  The eight accumulators are named variables (as an array GCC
 * kept some of them on the stack). */
#if (defined(__AVX512VNNI__) && defined(__AVX512VL__))
#define SMELT_UKQ_DOT(acc, b, a) acc = _mm256_dpbusd_epi32(acc, b, a)
#elif defined(__AVXVNNI__)
#define SMELT_UKQ_DOT(acc, b, a) acc = _mm256_dpbusd_avx_epi32(acc, b, a)
#else
/* vpmaddubsw adds two u8 x s8 products in 16 bits (saturating: safe16 only) */
#define SMELT_UKQ_DOT(acc, b, a) \
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(b, a), ones))
/* exact: even k (k0, k2) and odd k (k1, k3) as 16-bit lanes, vpmaddwd */
#define SMELT_UKQ_DOT16(acc, e, o, ae, ao) \
    acc = _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(e, ae), _mm256_madd_epi16(o, ao)))
#endif
#define SMELT_UKQ_BCAST(r) _mm256_set1_epi32(smelt_ukq_word(a + (r) * K4 * 4 + k4 * 4))
/* the exact AVX2 row: the weights' even and odd bytes sign-extended to 16 bits */
#define SMELT_UKQ_ROW16(acc0, acc1, r)                                                 \
    do {                                                                               \
        __m256i w_ = SMELT_UKQ_BCAST(r);                                               \
        __m256i ae_ = _mm256_srai_epi16(_mm256_slli_epi16(w_, 8), 8), ao_ = _mm256_srai_epi16(w_, 8); \
        SMELT_UKQ_DOT16(acc0, e0, o0, ae_, ao_);                                       \
        SMELT_UKQ_DOT16(acc1, e1, o1, ae_, ao_);                                       \
        __asm__("" : "+x"(acc0), "+x"(acc1));                                          \
    } while (0)
/* One row of the block; the empty asm keeps the row's two accumulators in
 * registers there: with constant arguments GCC otherwise hoisted every row's
 * broadcast and product, ran out of the 16 registers and carried two
 * accumulators through the stack (a store-to-load chain per k step, half
 * the kernel's time). */
#define SMELT_UKQ_ROW(acc0, acc1, r)                                   \
    do {                                                               \
        __m256i a_ = SMELT_UKQ_BCAST(r);                               \
        SMELT_UKQ_DOT(acc0, b0, a_);                                   \
        SMELT_UKQ_DOT(acc1, b1, a_);                                   \
        __asm__("" : "+x"(acc0), "+x"(acc1));                          \
    } while (0)

SMELT_UKQ_INLINE int32_t smelt_ukq_word(const int8_t *p)
{
    int32_t w;
    memcpy(&w, p, 4);
    return w;
}

SMELT_UKQ_INLINE void smelt_ukq_block_avx2(void *Y, const uint8_t *Bp, const int8_t *Ap,
                                           const int32_t *comp, const double *mult, int64_t m,
                                           int64_t p, int64_t M, int64_t P, int64_t Pp,
                                           int64_t K4, int64_t yz, int64_t lo, int64_t hi,
                                           const int safe16)
{
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
            c30 = c00, c31 = c00;
    const uint8_t *b = Bp + SMELT_UKQ_AT(0, p, 0);
    (void)Pp;
    const int8_t *a = Ap + m * K4 * 4;
#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__)
    (void)safe16;
    for (int64_t k4 = 0; k4 < K4; k4++, b += 64) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
        SMELT_UKQ_ROW(c00, c01, 0);
        SMELT_UKQ_ROW(c10, c11, 1);
        SMELT_UKQ_ROW(c20, c21, 2);
        SMELT_UKQ_ROW(c30, c31, 3);
    }
#else
    const __m256i ones = _mm256_set1_epi16(1), low = _mm256_set1_epi16(0xff);
    if (safe16) {
        for (int64_t k4 = 0; k4 < K4; k4++, b += 64) {
            __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
            __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
            SMELT_UKQ_ROW(c00, c01, 0);
            SMELT_UKQ_ROW(c10, c11, 1);
            SMELT_UKQ_ROW(c20, c21, 2);
            SMELT_UKQ_ROW(c30, c31, 3);
        }
    } else {
        for (int64_t k4 = 0; k4 < K4; k4++, b += 64) {
            __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
            __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
            __m256i e0 = _mm256_and_si256(b0, low), o0 = _mm256_srli_epi16(b0, 8);
            __m256i e1 = _mm256_and_si256(b1, low), o1 = _mm256_srli_epi16(b1, 8);
            SMELT_UKQ_ROW16(c00, c01, 0);
            SMELT_UKQ_ROW16(c10, c11, 1);
            SMELT_UKQ_ROW16(c20, c21, 2);
            SMELT_UKQ_ROW16(c30, c31, 3);
        }
    }
#endif
    __m256i c[SMELT_UKQ_ROWS][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
    for (int r = 0; r < SMELT_UKQ_ROWS && m + r < M; r++)
        for (int v = 0; v < 2; v++) {
            int64_t j = p + 8 * v, n = P - j < 8 ? P - j : 8;
            if (n > 0)
                smelt_ukq_store8(Y, (m + r) * P + j, (int)n, c[r][v], comp[m + r], mult[m + r], yz,
                                 lo, hi);
        }
}
#endif

/* Y[m * P + p] (u8, or s8 when lo < 0) for the rows and pixels of task t:
 * row chunk t / n_pt of MT rows, pixel chunk t % n_pt of PT pixels (MT a
 * multiple of 8, PT of 32), clipped to Mpad and Pp; stores only m < M,
 * p < P.  safe16: no pair of weights of a row can saturate vpmaddubsw. */
SMELT_UKQ_KERNEL void smelt_uk_qgemm_u8s8(void *Y, const uint8_t *Bp, const int8_t *Ap, const int32_t *comp,
                                const double *mult, int64_t t, int64_t n_pt, int64_t MT, int64_t PT,
                                int64_t M, int64_t Mpad, int64_t P, int64_t Pp, int64_t K4,
                                int64_t yz, int64_t lo, int64_t hi, int64_t safe16)
{
    int64_t m0 = t / n_pt * MT, p0 = t % n_pt * PT;
    int64_t m1 = m0 + MT < Mpad ? m0 + MT : Mpad, p1 = p0 + PT < Pp ? p0 + PT : Pp;
    if (m1 > M) m1 = M; /* rows past M are padding: no block starts there */
    for (int64_t p = p0; p < p1 && p < P; p += SMELT_UKQ_COLS)
        for (int64_t m = m0; m < m1; m += SMELT_UKQ_ROWS) {
#if defined(__AVX2__)
            if (safe16)
                smelt_ukq_block_avx2(Y, Bp, Ap, comp, mult, m, p, M, P, Pp, K4, yz, lo, hi, 1);
            else
                smelt_ukq_block_avx2(Y, Bp, Ap, comp, mult, m, p, M, P, Pp, K4, yz, lo, hi, 0);
#else
            (void)safe16;
            smelt_ukq_block_c(Y, Bp, Ap, comp, mult, m, p, M, P, Pp, K4, yz, lo, hi);
#endif
        }
}

/* ---- smelt.qmatmul_u8s8: A (run time, u8 or s8) @ B (constant, packed s8) ---- */

/* MatMulInteger and QLinearMatMul with a constant B (ops/quant_fast.c):
 *   Bq [Npad/16][K4][16][4] s8  B minus its zero point, in panels of 16
 *                       columns (one register block's), four consecutive k
 *                       of one column in a 32-bit word; zeros past K and N
 *   colsum [Npad] int32 sum_k Bq of each column
 * A [M][K] (row-major, read in place) is u8, or s8 turned into u8 by
 * flipping the sign bit (flip = 1, its zero point + 128 too).  Then
 * sum_k (a - a_zp) * Bq = acc - a_zp * colsum, with a_zp read at run time
 * (DynamicQuantizeLinear computes it).  The register block is the
 * convolution's transposed: four rows of A broadcast, 16 columns of Bq. */

/* four bytes of A as one word, flipped */
SMELT_UKQ_INLINE int32_t smelt_ukq_aword(const uint8_t *p, uint32_t flip)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return (int32_t)(w ^ flip);
}

/* The epilogue of one output value: acc - z * colsum (wrapping, as the
 * reference's int32 sum), stored as int32 (requant 0) or requantized. */
SMELT_UKQ_INLINE void smelt_ukq_mm_store1(void *Y, int64_t i, int32_t acc, int32_t colsum, int32_t z,
                                          const double *mult, int64_t n, int64_t yz, int64_t lo,
                                          int64_t hi, int64_t requant)
{
    int32_t comp = (int32_t)(0u - (uint32_t)z * (uint32_t)colsum);
    if (requant)
        smelt_ukq_store(Y, i, smelt_ukq_requant(acc, comp, mult[n], yz, lo, hi), lo);
    else
        ((int32_t *)Y)[i] = (int32_t)((uint32_t)acc + (uint32_t)comp);
}

/* Rows [m, m + 4) x columns [n, n + 16), plain C (other ISAs). */
SMELT_UKQ_INLINE void smelt_ukq_mm_block_c(void *Y, const uint8_t *A, const int8_t *Bq,
                                           const int32_t *colsum, const double *mult, int32_t z,
                                           int64_t m, int64_t n, int64_t M, int64_t N, int64_t K,
                                           int64_t K4, uint8_t flip, int64_t yz, int64_t lo,
                                           int64_t hi, int64_t requant)
{
    for (int64_t r = m; r < m + SMELT_UKQ_ROWS && r < M; r++)
        for (int64_t j = n; j < n + SMELT_UKQ_COLS && j < N; j++) {
            int32_t acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += (int32_t)(uint8_t)(A[r * K + k] ^ flip) * (int32_t)Bq[SMELT_UKQ_AT(k / 4, j, k % 4)];
            smelt_ukq_mm_store1(Y, r * N + j, acc, colsum[j], z, mult, j, yz, lo, hi, requant);
        }
}

#if defined(__AVX2__)
/* Eight accumulators of one row (columns n .. n + 7, the first cnt
 * stored): + comp, then int32 or requantized with per-column multipliers. */
SMELT_UKQ_INLINE void smelt_ukq_mm_store8(void *Y, int64_t off, int cnt, __m256i acc, __m256i comp,
                                          const double *mult, int64_t yz, int64_t lo, int64_t hi,
                                          int64_t requant)
{
    __m256i v = _mm256_add_epi32(acc, comp);
    if (!requant) {
        int32_t *y = (int32_t *)Y + off;
        if (cnt == 8) {
            _mm256_storeu_si256((__m256i *)y, v);
        } else {
            int32_t tmp[8];
            _mm256_storeu_si256((__m256i *)tmp, v);
            memcpy(y, tmp, (size_t)cnt * sizeof *y);
        }
        return;
    }
    __m256d z = _mm256_set1_pd((double)yz), l = _mm256_set1_pd((double)lo), h = _mm256_set1_pd((double)hi);
    __m256d d0 = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(v)), _mm256_loadu_pd(mult));
    __m256d d1 = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(v, 1)), _mm256_loadu_pd(mult + 4));
    __asm__("" : "+x"(d0), "+x"(d1)); /* no FMA contraction with the + zp */
    d0 = _mm256_round_pd(_mm256_add_pd(d0, z), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    d1 = _mm256_round_pd(_mm256_add_pd(d1, z), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    d0 = _mm256_min_pd(_mm256_max_pd(d0, l), h);
    d1 = _mm256_min_pd(_mm256_max_pd(d1, l), h);
    __m128i w16 = _mm_packs_epi32(_mm256_cvtpd_epi32(d0), _mm256_cvtpd_epi32(d1));
    __m128i w8 = lo < 0 ? _mm_packs_epi16(w16, w16) : _mm_packus_epi16(w16, w16);
    uint8_t *y = (uint8_t *)Y + off;
    if (cnt == 8) {
        _mm_storel_epi64((__m128i *)y, w8);
    } else {
        uint8_t tmp[16];
        _mm_storeu_si128((__m128i *)tmp, w8);
        memcpy(y, tmp, (size_t)cnt);
    }
}

/* One row of A (word w broadcast) against the panel's two vectors b0, b1;
 * the empty asm keeps the accumulators in registers (see SMELT_UKQ_ROW). */
#define SMELT_UKQ_MMROW(acc0, acc1, w)                                 \
    do {                                                               \
        __m256i a_ = _mm256_set1_epi32(w);                             \
        SMELT_UKQ_DOT(acc0, a_, b0);                                   \
        SMELT_UKQ_DOT(acc1, a_, b1);                                   \
        __asm__("" : "+x"(acc0), "+x"(acc1));                          \
    } while (0)
/* the exact AVX2 row: A's even and odd bytes zero-extended to 16 bits
 * against B's sign-extended ones (be0, bo0, be1, bo1) */
#define SMELT_UKQ_MMROW16(acc0, acc1, w)                                                        \
    do {                                                                                        \
        __m256i w_ = _mm256_set1_epi32(w);                                                      \
        __m256i ae_ = _mm256_and_si256(w_, low), ao_ = _mm256_srli_epi16(w_, 8);                \
        SMELT_UKQ_DOT16(acc0, be0, bo0, ae_, ao_);                                              \
        SMELT_UKQ_DOT16(acc1, be1, bo1, ae_, ao_);                                              \
        __asm__("" : "+x"(acc0), "+x"(acc1));                                                   \
    } while (0)
/* one k4 step of the block: the panel's 64 bytes at b, four rows' words at p0..p3 */
#define SMELT_UKQ_MMSTEP(ROW, PREP, p0, p1, p2, p3)                             \
    do {                                                                        \
        __m256i b0 = _mm256_loadu_si256((const __m256i *)b);                    \
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));             \
        PREP;                                                                   \
        ROW(c00, c01, smelt_ukq_aword(p0, flip));                               \
        ROW(c10, c11, smelt_ukq_aword(p1, flip));                               \
        ROW(c20, c21, smelt_ukq_aword(p2, flip));                               \
        ROW(c30, c31, smelt_ukq_aword(p3, flip));                               \
    } while (0)
/* all k: whole words read in place, the last (K % 4) bytes from tail */
#define SMELT_UKQ_MMLOOP(ROW, PREP)                                                        \
    do {                                                                                   \
        const int8_t *b = bq;                                                              \
        for (int64_t k = 0; k < K4f * 4; k += 4, b += 64)                                  \
            SMELT_UKQ_MMSTEP(ROW, PREP, r0 + k, r1 + k, r2 + k, r3 + k);                   \
        if (K4f < K4) SMELT_UKQ_MMSTEP(ROW, PREP, tail[0], tail[1], tail[2], tail[3]);     \
    } while (0)
#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__)
#define SMELT_UKQ_MM_PREP16 (void)0
#else
/* (a macro argument: declarations without top-level commas) */
#define SMELT_UKQ_MM_PREP16                                           \
    __m256i be0 = _mm256_srai_epi16(_mm256_slli_epi16(b0, 8), 8);     \
    __m256i bo0 = _mm256_srai_epi16(b0, 8);                           \
    __m256i be1 = _mm256_srai_epi16(_mm256_slli_epi16(b1, 8), 8);     \
    __m256i bo1 = _mm256_srai_epi16(b1, 8)
#endif

SMELT_UKQ_INLINE void smelt_ukq_mm_block_avx2(void *Y, const uint8_t *A, const int8_t *Bq,
                                              const int32_t *colsum, const double *mult, int32_t z,
                                              int64_t m, int64_t n, int64_t M, int64_t N, int64_t K,
                                              int64_t K4, uint32_t flip, int64_t yz, int64_t lo,
                                              int64_t hi, int64_t requant, const int safe16)
{
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
            c30 = c00, c31 = c00;
    /* rows past M repeat the last row (read, never stored) */
    const uint8_t *r0 = A + m * K, *r1 = A + (m + 1 < M ? m + 1 : M - 1) * K;
    const uint8_t *r2 = A + (m + 2 < M ? m + 2 : M - 1) * K, *r3 = A + (m + 3 < M ? m + 3 : M - 1) * K;
    const int8_t *bq = Bq + (n >> 4) * K4 * 64;
    const int64_t K4f = K / 4;
    uint8_t tail[4][4] = {{0}};
    if (K4f < K4) {
        memcpy(tail[0], r0 + K4f * 4, (size_t)(K - K4f * 4));
        memcpy(tail[1], r1 + K4f * 4, (size_t)(K - K4f * 4));
        memcpy(tail[2], r2 + K4f * 4, (size_t)(K - K4f * 4));
        memcpy(tail[3], r3 + K4f * 4, (size_t)(K - K4f * 4));
    }
#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__)
    (void)safe16;
    SMELT_UKQ_MMLOOP(SMELT_UKQ_MMROW, (void)0);
#else
    const __m256i ones = _mm256_set1_epi16(1), low = _mm256_set1_epi16(0xff);
    if (safe16) {
        (void)low;
        SMELT_UKQ_MMLOOP(SMELT_UKQ_MMROW, (void)0);
    } else {
        (void)ones;
        SMELT_UKQ_MMLOOP(SMELT_UKQ_MMROW16, SMELT_UKQ_MM_PREP16);
    }
#endif
    const __m256i nz = _mm256_set1_epi32((int32_t)(0u - (uint32_t)z));
    const __m256i comp0 = _mm256_mullo_epi32(nz, _mm256_loadu_si256((const __m256i *)(colsum + n)));
    const __m256i comp1 = _mm256_mullo_epi32(nz, _mm256_loadu_si256((const __m256i *)(colsum + n + 8)));
    __m256i c[SMELT_UKQ_ROWS][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
    for (int r = 0; r < SMELT_UKQ_ROWS && m + r < M; r++)
        for (int v = 0; v < 2; v++) {
            int64_t j = n + 8 * v, cnt = N - j < 8 ? N - j : 8;
            if (cnt > 0)
                smelt_ukq_mm_store8(Y, (m + r) * N + j, (int)cnt, c[r][v], v ? comp1 : comp0,
                                    mult + j, yz, lo, hi, requant);
        }
}
#endif

/* Y [M][N] (int32 when requant is 0, else u8, or s8 when lo < 0) for the
 * rows and columns of task t: row chunk t / n_nt of MT rows (a multiple of
 * 4), column chunk t % n_nt of NT columns (a multiple of 16).  Az: A's zero
 * point (one value of A's type); colsum and mult (requant only) hold Npad
 * values.  safe16: no pair of B's values can saturate vpmaddubsw. */
SMELT_UKQ_KERNEL void smelt_uk_qmatmul_u8s8(void *Y, const void *A, const int8_t *Bq,
                                           const int32_t *colsum, const double *mult, const void *Az,
                                           int64_t t, int64_t n_nt, int64_t MT, int64_t NT,
                                           int64_t M, int64_t N, int64_t K, int64_t flip,
                                           int64_t yz, int64_t lo, int64_t hi, int64_t requant,
                                           int64_t safe16)
{
    const uint8_t *a = (const uint8_t *)A;
    int32_t z = flip ? (int32_t)*(const int8_t *)Az + 128 : (int32_t)*(const uint8_t *)Az;
    int64_t K4 = (K + 3) / 4, m0 = t / n_nt * MT, n0 = t % n_nt * NT;
    int64_t m1 = m0 + MT < M ? m0 + MT : M, n1 = n0 + NT < N ? n0 + NT : N;
    for (int64_t n = n0; n < n1; n += SMELT_UKQ_COLS)
        for (int64_t m = m0; m < m1; m += SMELT_UKQ_ROWS) {
#if defined(__AVX2__)
            if (safe16)
                smelt_ukq_mm_block_avx2(Y, a, Bq, colsum, mult, z, m, n, M, N, K, K4,
                                        flip ? 0x80808080u : 0u, yz, lo, hi, requant, 1);
            else
                smelt_ukq_mm_block_avx2(Y, a, Bq, colsum, mult, z, m, n, M, N, K, K4,
                                        flip ? 0x80808080u : 0u, yz, lo, hi, requant, 0);
#else
            (void)safe16;
            smelt_ukq_mm_block_c(Y, a, Bq, colsum, mult, z, m, n, M, N, K, K4, flip ? 0x80 : 0, yz,
                                 lo, hi, requant);
#endif
        }
}

/* ---- smelt.qdwconv_u8: depthwise QLinearConv (one input channel per output) ---- */

/* Per channel: the input plane with x_zp padding, split into sw column
 * phases (phase p holds padded columns p, p + sw, ...; Wq bytes a row, the
 * last ones slack), so that each tap reads consecutive bytes for
 * consecutive outputs whatever the stride and dilation.  Two taps' bytes
 * are interleaved, widened to 16 bits and multiplied with vpmaddwd against
 * the pair (w'[2i], w'[2i + 1]) (w' = w - w_zp in [-255, 255]): exact for
 * every 8-bit operand.  comp[c] = bias - x_zp * sum w' cancels the x_zp
 * that padding holds.  W16 [C][TP][2] int16, TP = ceil(KH * KW / 2). */

/* rows and bytes per row of one phase: the padded rows the windows read,
 * and the columns of 16 outputs past the last one plus the widest tap */
#define SMELT_UKQ_DW_HP ((Ho - 1) * sh + (KH - 1) * dh + 1)
#define SMELT_UKQ_DW_WQ (Wo + 16 + (KW - 1) * dw / sw)

/* Stride 2: input columns from pw & 1 (whose phase column is even) split 32
 * at a time into the two phases (even and odd bytes, SSE2) while both phase
 * rows have room; returns the end of the columns written, from pw & 1 (the
 * caller writes the others byte by byte, as it did all of them when that
 * was most of a stride-2 depthwise conv's time). */
SMELT_UKQ_INLINE int64_t smelt_ukq_dw_split2(uint8_t *ph0, uint8_t *ph1, const uint8_t *row,
                                             int64_t W, int64_t Wq, int64_t pw, uint8_t f)
{
#if defined(__SSE2__)
    int64_t c = pw & 1, c_end = c; /* column c goes to phase 0, c + 1 to phase 1, at (c + pw) / 2 */
    const __m128i m = _mm_set1_epi16(0x00ff), fl = _mm_set1_epi8((char)f);
    for (; c + 32 <= W && (c + pw) / 2 + 16 <= Wq; c += 32) {
        __m128i a = _mm_loadu_si128((const __m128i *)(row + c));
        __m128i b = _mm_loadu_si128((const __m128i *)(row + c + 16));
        __m128i ev = _mm_packus_epi16(_mm_and_si128(a, m), _mm_and_si128(b, m));
        __m128i od = _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8));
        int64_t q = (c + pw) / 2;
        _mm_storeu_si128((__m128i *)(ph0 + q), _mm_xor_si128(ev, fl));
        _mm_storeu_si128((__m128i *)(ph1 + q), _mm_xor_si128(od, fl));
        c_end = c + 32;
    }
    return c_end;
#else
    (void)ph0, (void)ph1, (void)row, (void)W, (void)Wq, (void)f;
    return pw & 1;
#endif
}

/* Phase p's columns q < Wq that read input columns [c_lo, c_hi) (c_lo >= 0):
 * phase column q reads input column q * sw + p - pw. */
SMELT_UKQ_INLINE void smelt_ukq_dw_phase_cols(uint8_t *dst, const uint8_t *row, int64_t c_lo,
                                              int64_t c_hi, int64_t p, int64_t sw, int64_t pw,
                                              int64_t Wq, uint8_t f)
{
    int64_t q = c_lo + pw - p;
    q = q <= 0 ? 0 : (q + sw - 1) / sw;
    for (int64_t col = q * sw + p - pw; q < Wq && col < c_hi; q++, col += sw)
        dst[q] = (uint8_t)(row[col] ^ f);
}

/* The phases of channel plane x (flipped) into tmp. */
SMELT_UKQ_INLINE void smelt_ukq_dw_phases(uint8_t *tmp, const uint8_t *x, int64_t H, int64_t W,
                                          int64_t Hp, int64_t Wq, int64_t sw, int64_t ph, int64_t pw,
                                          uint8_t z, uint8_t f)
{
    memset(tmp, z, (size_t)(sw * Hp * Wq));
    for (int64_t r = 0; r < Hp; r++) {
        int64_t ih = r - ph;
        if (ih < 0 || ih >= H) continue;
        const uint8_t *row = x + ih * W;
        if (sw == 1) { /* one phase: the row shifted by pw, copied in runs */
            int64_t q0 = pw > 0 ? pw : 0, c0 = q0 - pw, cnt = W - c0 < Wq - q0 ? W - c0 : Wq - q0;
            uint8_t *dst = tmp + r * Wq + q0;
            if (cnt > 0 && !f) memcpy(dst, row + c0, (size_t)cnt);
            else
                for (int64_t q = 0; q < cnt; q++) dst[q] = (uint8_t)(row[c0 + q] ^ f);
            continue;
        }
        int64_t s_lo = pw & 1, s_hi = sw == 2 ? smelt_ukq_dw_split2(tmp + r * Wq, tmp + (Hp + r) * Wq,
                                                                   row, W, Wq, pw, f) : s_lo;
        for (int64_t p = 0; p < sw; p++) {
            uint8_t *dst = tmp + (p * Hp + r) * Wq;
            smelt_ukq_dw_phase_cols(dst, row, 0, s_lo, p, sw, pw, Wq, f);
            smelt_ukq_dw_phase_cols(dst, row, s_hi, W, p, sw, pw, Wq, f);
        }
    }
}

/* Y (channel-major [C][Ho][Wo], u8 or s8 when lo < 0) for channels
 * [t * CT, t * CT + CT) of one image X [C][H][W]; tmp holds one channel's
 * phases per task. */
SMELT_UKQ_KERNEL void smelt_uk_qdwconv_u8(void *Y, const void *X, const int16_t *W16, const int32_t *comp,
                                         const double *mult, uint8_t *tmp, int64_t t, int64_t CT,
                                         int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                                         int64_t Ho, int64_t Wo, int64_t sh, int64_t sw, int64_t ph,
                                         int64_t pw, int64_t dh, int64_t dw, int64_t xz, int64_t flip,
                                         int64_t yz, int64_t lo, int64_t hi)
{
    const int64_t Hp = SMELT_UKQ_DW_HP, Wq = SMELT_UKQ_DW_WQ, T = KH * KW, TP = (T + 1) / 2;
    const uint8_t z = (uint8_t)xz, f = (uint8_t)flip;
    uint8_t *ph_buf = tmp + t * sw * Hp * Wq;
    int64_t c1 = t * CT + CT < C ? t * CT + CT : C;
    for (int64_t c = t * CT; c < c1; c++) {
        const uint8_t *x = (const uint8_t *)X + c * H * W;
        const int16_t *w = W16 + c * TP * 2;
        smelt_ukq_dw_phases(ph_buf, x, H, W, Hp, Wq, sw, ph, pw, z, f);
#if defined(__AVX2__)
        /* tap i reads ph_buf + base[i] + oh * sh * Wq + ow */
        int64_t base[64];
        int64_t nt = T < 64 ? T : 64;
        for (int64_t i = 0; i < nt; i++) {
            int64_t kh = i / KW, kw = i % KW;
            base[i] = ((kw * dw) % sw * Hp + kh * dh) * Wq + (kw * dw) / sw;
        }
        if (T <= 64) {
            for (int64_t oh = 0; oh < Ho; oh++) {
                const uint8_t *rowp = ph_buf + oh * sh * Wq;
                for (int64_t ow = 0; ow < Wo; ow += 16) {
                    __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0;
                    for (int64_t i = 0; i < TP; i++) {
                        const uint8_t *pa = rowp + base[2 * i] + ow;
                        const uint8_t *pb = 2 * i + 1 < T ? rowp + base[2 * i + 1] + ow : pa;
                        __m128i va = _mm_loadu_si128((const __m128i *)pa);
                        __m128i vb = _mm_loadu_si128((const __m128i *)pb);
                        int32_t pair;
                        memcpy(&pair, w + 2 * i, 4);
                        __m256i wp = _mm256_set1_epi32(pair);
                        __m256i l16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(va, vb));
                        __m256i h16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(va, vb));
                        acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(l16, wp));
                        acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(h16, wp));
                    }
                    int64_t off = (c * Ho + oh) * Wo + ow, n = Wo - ow;
                    smelt_ukq_store8(Y, off, n < 8 ? (int)n : 8, acc0, comp[c], mult[c], yz, lo, hi);
                    if (n > 8)
                        smelt_ukq_store8(Y, off + 8, n < 16 ? (int)n - 8 : 8, acc1, comp[c], mult[c], yz,
                                         lo, hi);
                }
            }
            continue;
        }
#endif
        /* plain C: tap by tap from the phases */
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                int32_t acc = 0;
                for (int64_t i = 0; i < T; i++) {
                    int64_t kh = i / KW, kw = i % KW;
                    int64_t at = ((kw * dw) % sw * Hp + oh * sh + kh * dh) * Wq + ow + (kw * dw) / sw;
                    acc += (int32_t)ph_buf[at] * (int32_t)w[i];
                }
                smelt_ukq_store(Y, (c * Ho + oh) * Wo + ow,
                                smelt_ukq_requant(acc, comp[c], mult[c], yz, lo, hi), lo);
            }
    }
}

/* ---- smelt.dynq_u8: DynamicQuantizeLinear's y ---- */

/* y = clamp(rint(x / scale) + zp, 0, 255) with DynamicQuantizeLinear's
 * float32 scale and zero point from the range [min(0, min x), max(0, max
 * x)] (NaN skipped, as the reference's compares do), all in float32 as the
 * reference kernel computes them.  One call for all n values: the range
 * needs every value before the first is quantized. */
/* (no inlining or cloning for a constant n: GCC 12 -O3 -mavx2 then warned,
 * as an error in AOT packages, of undefined behaviour in the tail loops) */
SMELT_UKQ_KERNEL SMELT_UKQ_NOIPA void smelt_uk_dynq_u8(uint8_t *Y, const float *X, int64_t n)
{
    float lo = 0.0f, hi = 0.0f;
    int64_t i = 0;
#if defined(__AVX2__)
    __m256 vlo = _mm256_setzero_ps(), vhi = vlo;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(X + i);
        vlo = _mm256_min_ps(x, vlo); /* NaN x: the second operand */
        vhi = _mm256_max_ps(x, vhi);
    }
    float l8[8], h8[8];
    _mm256_storeu_ps(l8, vlo);
    _mm256_storeu_ps(h8, vhi);
    for (int j = 0; j < 8; j++) {
        lo = l8[j] < lo ? l8[j] : lo;
        hi = h8[j] > hi ? h8[j] : hi;
    }
#endif
    for (int64_t j = i; j < n; j++) {
        lo = X[j] < lo ? X[j] : lo;
        hi = X[j] > hi ? X[j] : hi;
    }
    float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
    float z = 0.0f - lo / scale;
    z = z > 0.0f ? z : 0.0f;
    z = rintf(z < 255.0f ? z : 255.0f);
    i = 0;
#if defined(__AVX2__)
    const __m256 vs = _mm256_set1_ps(scale), vz = _mm256_set1_ps(z);
    const __m256 v0 = _mm256_setzero_ps(), v255 = _mm256_set1_ps(255.0f);
    for (; i + 8 <= n; i += 8) {
        __m256 q = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(X + i), vs),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(q, vz), v0), v255); /* NaN: 0 */
        __m256i v = _mm256_cvtps_epi32(q);
        __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        _mm_storel_epi64((__m128i *)(Y + i), _mm_packus_epi16(w16, w16));
    }
#endif
    for (; i < n; i++) {
        float q = rintf(X[i] / scale) + z;
        q = q > 0.0f ? q : 0.0f; /* NaN: 0 */
        Y[i] = (uint8_t)(q < 255.0f ? q : 255.0f);
    }
}

/* ---- smelt.qadd_u8: Add of two quantized tensors (QLinearAdd) ---- */

/* One element of QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b))
 * in float32 as those ops compute it: (float)(v - zp) * scale, the sum,
 * rint(sum / y_scale) + y_zp saturated (NaN -> lo).  prm = {a_scale, a_zp,
 * b_scale, b_zp, y_scale, y_zp}. */
SMELT_UKQ_INLINE int64_t smelt_ukq_add1(int32_t a, int32_t b, const float *prm, float lo, float hi)
{
    float da = (float)(a - (int32_t)prm[1]) * prm[0];
    float db = (float)(b - (int32_t)prm[3]) * prm[2];
    SMELT_UKQ_NOFMA(da);
    SMELT_UKQ_NOFMA(db);
    float q = rintf((da + db) / prm[4]) + prm[5];
    q = q > lo ? q : lo;
    q = q < hi ? q : hi;
    return (int64_t)q;
}

SMELT_UKQ_INLINE int32_t smelt_ukq_load8(const void *p, int64_t i, int is_signed)
{
    return is_signed ? (int32_t)((const int8_t *)p)[i] : (int32_t)((const uint8_t *)p)[i];
}

/* Y[i] for i in [t * chunk, t * chunk + chunk) (clipped to n), each operand
 * and the result u8 or s8 (the *_signed flags). */
SMELT_UKQ_KERNEL void smelt_uk_qadd_u8(void *Y, const void *A, const void *B, const float *prm, int64_t t,
                             int64_t chunk, int64_t n, int64_t a_signed, int64_t b_signed,
                             int64_t y_signed)
{
    int64_t i = t * chunk, end = i + chunk < n ? i + chunk : n;
    float lo = y_signed ? -128.0f : 0.0f, hi = y_signed ? 127.0f : 255.0f;
#if defined(__AVX2__)
    const __m256i za = _mm256_set1_epi32((int32_t)prm[1]), zb = _mm256_set1_epi32((int32_t)prm[3]);
    const __m256 sa = _mm256_set1_ps(prm[0]), sb = _mm256_set1_ps(prm[2]), sy = _mm256_set1_ps(prm[4]);
    const __m256 zy = _mm256_set1_ps(prm[5]), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    for (; i + 8 <= end; i += 8) {
        __m128i ra = _mm_loadl_epi64((const __m128i *)((const uint8_t *)A + i));
        __m128i rb = _mm_loadl_epi64((const __m128i *)((const uint8_t *)B + i));
        __m256i xa = a_signed ? _mm256_cvtepi8_epi32(ra) : _mm256_cvtepu8_epi32(ra);
        __m256i xb = b_signed ? _mm256_cvtepi8_epi32(rb) : _mm256_cvtepu8_epi32(rb);
        __m256 da = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(xa, za)), sa);
        __m256 db = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(xb, zb)), sb);
        __asm__("" : "+x"(da), "+x"(db)); /* no FMA contraction with the sum */
        __m256 q = _mm256_div_ps(_mm256_add_ps(da, db), sy);
        q = _mm256_add_ps(_mm256_round_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zy);
        q = _mm256_min_ps(_mm256_max_ps(q, vlo), vhi); /* max_ps(NaN, lo) is lo */
        __m256i v = _mm256_cvtps_epi32(q);
        __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        __m128i w8 = y_signed ? _mm_packs_epi16(w16, w16) : _mm_packus_epi16(w16, w16);
        _mm_storel_epi64((__m128i *)((uint8_t *)Y + i), w8);
    }
#endif
    for (; i < end; i++) {
        int64_t v = smelt_ukq_add1(smelt_ukq_load8(A, i, (int)a_signed), smelt_ukq_load8(B, i, (int)b_signed),
                                   prm, lo, hi);
        if (y_signed) ((int8_t *)Y)[i] = (int8_t)v;
        else ((uint8_t *)Y)[i] = (uint8_t)v;
    }
}

#endif
