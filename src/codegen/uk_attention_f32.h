/* smelt.attention_f32: scaled dot-product attention for one block of query
 * rows of one (batch, head), a micro-kernel the FusedAttention op's extern
 * stage calls (ops/fused_attention.c).  This file is C99 text embedded into
 * generated code (CMakeLists.txt, codegen/microkernel.c); it is not compiled
 * into smelt itself.
 *
 *   O[r, c] = sum_j softmax_j(s[r, j]) V[j, c],
 *   s[r, j] = scale * sum_d Q[r, d] K[j, d], then the mask:
 *     mask_mode 1: s += M[r, j] (float); 2: s = M[r, j] ? fill : s;
 *     3: s = M[r, j] ? s : fill (bool); causal_shift >= 0: s = -inf where
 *     key j > q0 + r + causal_shift.
 *
 * The keys are streamed in blocks (kblock keys) with an online softmax
 * (FlashAttention): each row keeps its running max m, sum l and output
 * accumulator; a new block with max m' rescales them by exp(m - m'), so the
 * rows x keys scores exist one block at a time.  A block of K is packed
 * transposed ([D][keys], padded to whole register tiles) and one of V with
 * its columns padded, once per block for all the rows; S = Q K^T and O += P V
 * run ROWS x 2 vector register tiles (6 x 2 x 8 floats on AVX2: 12 of 16 ymm).
 * A single query row (decoding) reads K and V in place: dot products along
 * D, then P V along V's rows.  exp is the prelude's polynomial (smelt_vexp,
 * within 1.07 ulp) on this file's vector type.  A row whose every score is
 * -inf ends with l = 0 and gives NaN, as Softmax of that row does, or zeros
 * with masked_zero (ONNX Attention's fully-masked-row guard). */
#if defined(__AVX512F__)
#define SMELT_UKA_LANES 16
#define SMELT_UKA_ROWS 8
#elif defined(__AVX__)
#define SMELT_UKA_LANES 8
#define SMELT_UKA_ROWS 6
#else
#define SMELT_UKA_LANES 4
#define SMELT_UKA_ROWS 4
#endif
#define SMELT_UKA_TILE (2 * SMELT_UKA_LANES) /* columns of one register tile */
typedef float smelt_uka_v __attribute__((vector_size(SMELT_UKA_LANES * 4), aligned(4), may_alias));
typedef int32_t smelt_uka_m __attribute__((vector_size(SMELT_UKA_LANES * 4)));
#if defined(__GNUC__)
#define SMELT_UKA_INLINE static inline __attribute__((always_inline))
#else
#define SMELT_UKA_INLINE static inline
#endif

static inline smelt_uka_v smelt_uka_sel(smelt_uka_m m, smelt_uka_v a, smelt_uka_v b)
{
    return (smelt_uka_v)((m & (smelt_uka_m)a) | (~m & (smelt_uka_m)b));
}

/* exp(x) for x <= 0 (scores minus their running max); -inf gives 0. */
static inline smelt_uka_v smelt_uka_exp(smelt_uka_v x)
{
    const smelt_uka_v zero = {0};
    const smelt_uka_v c = smelt_uka_sel((smelt_uka_m)(x < -104.0f), zero - 104.0f, x);
    const smelt_uka_v t = c * 1.44269504f + 12582912.0f;
    const smelt_uka_v n = t - 12582912.0f;
    smelt_uka_v r = c - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    const smelt_uka_v q =
        (((0.00139345345f * r + 0.00836376939f) * r + 0.0416664556f) * r + 0.166665733f) * r + 0.5f;
    const smelt_uka_v p = (r * r) * q + r + 1.0f;
    const smelt_uka_m ni = (smelt_uka_m)t - 0x4b400000, n1 = ni >> 1, n2 = ni - n1;
    return p * (smelt_uka_v)((n1 + 127) << 23) * (smelt_uka_v)((n2 + 127) << 23);
}

/* The masked, scaled score of key j (block-relative jj) of row r. */
static inline float smelt_uka_score(float s, const void *M, int64_t r, int64_t j, int64_t m_rs,
                                    int64_t m_cs, int64_t mask_mode, float fill)
{
    if (mask_mode == 1) return s + ((const float *)M)[r * m_rs + j * m_cs];
    if (mask_mode >= 2) {
        int on = ((const unsigned char *)M)[r * m_rs + j * m_cs] != 0;
        return on == (mask_mode == 2) ? fill : s;
    }
    return s;
}

/* Row r's scores s[0..kp) (kn valid, the rest padding): scale, mask,
 * online-softmax update of m, l; s becomes P; returns the factor
 * exp(m_old - m_new) the row's accumulator takes. */
static float smelt_uka_softmax_row(float *s, int64_t kn, int64_t kp, int64_t r, int64_t i_abs,
                                   int64_t j0, const void *M, int64_t m_rs, int64_t m_cs,
                                   int64_t mask_mode, float fill, float scale, int64_t causal_shift,
                                   float *m, float *l)
{
    int64_t valid = kn; /* keys past the causal frontier are -inf */
    if (causal_shift >= 0 && i_abs + causal_shift + 1 - j0 < valid)
        valid = i_abs + causal_shift + 1 - j0 > 0 ? i_abs + causal_shift + 1 - j0 : 0;
    int64_t jj = 0;
    if (mask_mode == 0 || (mask_mode == 1 && m_cs == 1)) { /* whole vectors: scale (+ mask) */
        const float *mr = mask_mode ? (const float *)M + r * m_rs + j0 : NULL;
        for (; jj + SMELT_UKA_LANES <= valid; jj += SMELT_UKA_LANES) {
            smelt_uka_v x = *(smelt_uka_v *)&s[jj] * scale;
            if (mr) x += *(const smelt_uka_v *)&mr[jj];
            *(smelt_uka_v *)&s[jj] = x;
        }
    }
    for (; jj < valid; jj++)
        s[jj] = smelt_uka_score(s[jj] * scale, M, r, j0 + jj, m_rs, m_cs, mask_mode, fill);
    for (jj = valid; jj < kp; jj++) s[jj] = -INFINITY;
    smelt_uka_v vmax = *(smelt_uka_v *)&s[0];
    for (jj = SMELT_UKA_LANES; jj < kp; jj += SMELT_UKA_LANES) {
        smelt_uka_v x = *(smelt_uka_v *)&s[jj];
        vmax = smelt_uka_sel((smelt_uka_m)(x > vmax), x, vmax);
    }
    float bm = -INFINITY;
    for (int k = 0; k < SMELT_UKA_LANES; k++) bm = vmax[k] > bm ? vmax[k] : bm;
    float m_new = bm > *m ? bm : *m;
    if (m_new == -INFINITY) { /* nothing unmasked yet: no contribution */
        for (jj = 0; jj < kp; jj++) s[jj] = 0.0f;
        return 1.0f;
    }
    float alpha = expf(*m - m_new);
    smelt_uka_v sum = {0};
    for (jj = 0; jj < kp; jj += SMELT_UKA_LANES) {
        smelt_uka_v p = smelt_uka_exp(*(smelt_uka_v *)&s[jj] - m_new);
        *(smelt_uka_v *)&s[jj] = p;
        sum += p;
    }
    float total = 0.0f;
    for (int k = 0; k < SMELT_UKA_LANES; k++) total += sum[k];
    *m = m_new;
    *l = *l * alpha + total;
    return alpha;
}

/* S[r][c..c+TILE) = sum_d Q[(r0+r)*q_rs + d] Kt[d*kp + c..] for r < rows. */
SMELT_UKA_INLINE void smelt_uka_qk_tile(float *S, const float *Q, const float *Kt, const int rows,
                                        int64_t c, int64_t D, int64_t kp, int64_t q_rs)
{
    smelt_uka_v acc[SMELT_UKA_ROWS][2];
    for (int r = 0; r < rows; r++) acc[r][0] = acc[r][1] = (smelt_uka_v){0};
    for (int64_t d = 0; d < D; d++) {
        smelt_uka_v b0 = *(const smelt_uka_v *)&Kt[d * kp + c];
        smelt_uka_v b1 = *(const smelt_uka_v *)&Kt[d * kp + c + SMELT_UKA_LANES];
        for (int r = 0; r < rows; r++) {
            float a = Q[r * q_rs + d];
            acc[r][0] += a * b0;
            acc[r][1] += a * b1;
        }
    }
    for (int r = 0; r < rows; r++) {
        *(smelt_uka_v *)&S[r * kp + c] = acc[r][0];
        *(smelt_uka_v *)&S[r * kp + c + SMELT_UKA_LANES] = acc[r][1];
    }
}

/* A[r][c..] = A[r][c..] * alpha[r] + sum_j P[r*kp + j] Vp[j*vp + c..]. */
SMELT_UKA_INLINE void smelt_uka_pv_tile(float *A, const float *P, const float *Vp,
                                        const float *alpha, const int rows, int64_t c, int64_t kn,
                                        int64_t kp, int64_t vp)
{
    smelt_uka_v acc[SMELT_UKA_ROWS][2];
    for (int r = 0; r < rows; r++) {
        acc[r][0] = *(const smelt_uka_v *)&A[r * vp + c] * alpha[r];
        acc[r][1] = *(const smelt_uka_v *)&A[r * vp + c + SMELT_UKA_LANES] * alpha[r];
    }
    for (int64_t j = 0; j < kn; j++) {
        smelt_uka_v b0 = *(const smelt_uka_v *)&Vp[j * vp + c];
        smelt_uka_v b1 = *(const smelt_uka_v *)&Vp[j * vp + c + SMELT_UKA_LANES];
        for (int r = 0; r < rows; r++) {
            float p = P[r * kp + j];
            acc[r][0] += p * b0;
            acc[r][1] += p * b1;
        }
    }
    for (int r = 0; r < rows; r++) {
        *(smelt_uka_v *)&A[r * vp + c] = acc[r][0];
        *(smelt_uka_v *)&A[r * vp + c + SMELT_UKA_LANES] = acc[r][1];
    }
}

/* Both products of one block of up to ROWS rows, rows a constant once inlined. */
SMELT_UKA_INLINE void smelt_uka_rows(const int rows, float *S, float *A, const float *Q,
                                     const float *Kt, const float *Vp, int64_t r0, int64_t q0,
                                     int64_t j0, int64_t kn, int64_t kp, int64_t vp, int64_t D,
                                     int64_t q_rs, const void *M, int64_t m_rs, int64_t m_cs,
                                     int64_t mask_mode, float fill, float scale,
                                     int64_t causal_shift, float *m, float *l)
{
    float alpha[SMELT_UKA_ROWS];
    for (int64_t c = 0; c < kp; c += SMELT_UKA_TILE)
        smelt_uka_qk_tile(S, Q + r0 * q_rs, Kt, rows, c, D, kp, q_rs);
    for (int r = 0; r < rows; r++)
        alpha[r] = smelt_uka_softmax_row(S + r * kp, kn, kp, r0 + r, q0 + r0 + r, j0, M, m_rs,
                                         m_cs, mask_mode, fill, scale, causal_shift, &m[r0 + r],
                                         &l[r0 + r]);
    for (int64_t c = 0; c < vp; c += SMELT_UKA_TILE)
        smelt_uka_pv_tile(A + r0 * vp, S, Vp, alpha, rows, c, kn, kp, vp);
}

#if SMELT_UKA_LANES == 8 && defined(__GNUC__) && !defined(__clang__) /* __builtin_shuffle */
/* Kt[d*kp + j] = K[j*k_rs + d] for an 8 x 8 tile, transposed in registers
 * (pairs interleaved, then pairs of pairs, then 128-bit halves). */
static inline void smelt_uka_tr8(float *Kt, const float *K, int64_t kp, int64_t k_rs)
{
    typedef int32_t smelt_uka_i8 __attribute__((vector_size(32)));
    smelt_uka_v r[8], t[8], u[8];
    for (int k = 0; k < 8; k++) r[k] = *(const smelt_uka_v *)&K[k * k_rs];
    for (int k = 0; k < 8; k += 2) {
        t[k] = __builtin_shuffle(r[k], r[k + 1], (smelt_uka_i8){0, 8, 1, 9, 4, 12, 5, 13});
        t[k + 1] = __builtin_shuffle(r[k], r[k + 1], (smelt_uka_i8){2, 10, 3, 11, 6, 14, 7, 15});
    }
    for (int k = 0; k < 8; k += 4) {
        u[k] = __builtin_shuffle(t[k], t[k + 2], (smelt_uka_i8){0, 1, 8, 9, 4, 5, 12, 13});
        u[k + 1] = __builtin_shuffle(t[k], t[k + 2], (smelt_uka_i8){2, 3, 10, 11, 6, 7, 14, 15});
        u[k + 2] = __builtin_shuffle(t[k + 1], t[k + 3], (smelt_uka_i8){0, 1, 8, 9, 4, 5, 12, 13});
        u[k + 3] = __builtin_shuffle(t[k + 1], t[k + 3], (smelt_uka_i8){2, 3, 10, 11, 6, 7, 14, 15});
    }
    for (int k = 0; k < 4; k++) {
        *(smelt_uka_v *)&Kt[k * kp] = __builtin_shuffle(u[k], u[k + 4], (smelt_uka_i8){0, 1, 2, 3, 8, 9, 10, 11});
        *(smelt_uka_v *)&Kt[(k + 4) * kp] = __builtin_shuffle(u[k], u[k + 4], (smelt_uka_i8){4, 5, 6, 7, 12, 13, 14, 15});
    }
}
#define SMELT_UKA_TR8 1
#endif

/* One key block of K (kn keys from K) packed as Kt[d][j], j padded to kp
 * with zeros. */
static void smelt_uka_pack_kt(float *Kt, const float *K, int64_t kn, int64_t kp, int64_t D,
                              int64_t k_rs, int64_t k_cs)
{
    int64_t j8 = 0, d8 = 0;
#ifdef SMELT_UKA_TR8
    if (k_cs == 1) { /* 8 x 8 tiles where they fit, the rest element by element */
        j8 = kn / 8 * 8, d8 = D / 8 * 8;
        for (int64_t j = 0; j < j8; j += 8)
            for (int64_t d = 0; d < d8; d += 8) smelt_uka_tr8(&Kt[d * kp + j], &K[j * k_rs + d], kp, k_rs);
    }
#endif
    for (int64_t d = 0; d < D; d++) {
        for (int64_t j = d < d8 ? j8 : 0; j < kn; j++) Kt[d * kp + j] = K[j * k_rs + d * k_cs];
        for (int64_t j = kn; j < kp; j++) Kt[d * kp + j] = 0.0f;
    }
}

/* Rows [0, rows) of O, many rows: K and V packed per key block. */
static void smelt_uka_block(float *O, const float *Q, const float *K, const float *V,
                            const void *M, int64_t rows, int64_t q0, int64_t nkv, int64_t D,
                            int64_t Dv, int64_t q_rs, int64_t k_rs, int64_t k_cs, int64_t v_rs,
                            int64_t o_rs, int64_t m_rs, int64_t m_cs, int64_t mask_mode,
                            float fill, float scale, int64_t causal_shift, int64_t kblock,
                            int64_t masked_zero)
{
    const int64_t kb = (kblock + SMELT_UKA_TILE - 1) / SMELT_UKA_TILE * SMELT_UKA_TILE;
    const int64_t vp = (Dv + SMELT_UKA_TILE - 1) / SMELT_UKA_TILE * SMELT_UKA_TILE;
    float Kt[D * kb], Vp[kb * vp], S[SMELT_UKA_ROWS * kb], A[rows * vp], m[rows], l[rows];
    for (int64_t i = 0; i < rows * vp; i++) A[i] = 0.0f;
    for (int64_t r = 0; r < rows; r++) m[r] = -INFINITY, l[r] = 0.0f;
    int64_t end = nkv; /* keys past the last row's causal frontier: masked for all rows */
    if (causal_shift >= 0 && q0 + rows + causal_shift < end) end = q0 + rows + causal_shift;
    for (int64_t j0 = 0; j0 < end; j0 += kb) {
        const int64_t kn = end - j0 < kb ? end - j0 : kb;
        const int64_t kp = (kn + SMELT_UKA_TILE - 1) / SMELT_UKA_TILE * SMELT_UKA_TILE;
        smelt_uka_pack_kt(Kt, K + j0 * k_rs, kn, kp, D, k_rs, k_cs);
        for (int64_t j = 0; j < kn; j++) {
            for (int64_t c = 0; c < Dv; c++) Vp[j * vp + c] = V[(j0 + j) * v_rs + c];
            for (int64_t c = Dv; c < vp; c++) Vp[j * vp + c] = 0.0f;
        }
        int64_t r0 = 0;
        for (; r0 + SMELT_UKA_ROWS <= rows; r0 += SMELT_UKA_ROWS)
            smelt_uka_rows(SMELT_UKA_ROWS, S, A, Q, Kt, Vp, r0, q0, j0, kn, kp, vp, D, q_rs, M,
                           m_rs, m_cs, mask_mode, fill, scale, causal_shift, m, l);
        switch (rows - r0) { /* the rows below the blocks: a smaller block, still in vectors */
#define SMELT_UKA_REST(n)                                                                         \
    case n:                                                                                       \
        smelt_uka_rows(n, S, A, Q, Kt, Vp, r0, q0, j0, kn, kp, vp, D, q_rs, M, m_rs, m_cs,        \
                       mask_mode, fill, scale, causal_shift, m, l);                               \
        break;
            SMELT_UKA_REST(1)
            SMELT_UKA_REST(2)
            SMELT_UKA_REST(3)
#if SMELT_UKA_ROWS > 4
            SMELT_UKA_REST(4)
            SMELT_UKA_REST(5)
#endif
#if SMELT_UKA_ROWS > 6
            SMELT_UKA_REST(6)
            SMELT_UKA_REST(7)
#endif
#undef SMELT_UKA_REST
        default: break;
        }
    }
    for (int64_t r = 0; r < rows; r++) {
        const int zero = l[r] == 0.0f && masked_zero;
        for (int64_t c = 0; c < Dv; c++) O[r * o_rs + c] = zero ? 0.0f : A[r * vp + c] / l[r];
    }
}

/* One query row (decoding, M = 1): scores as dot products along K's rows,
 * then P V along V's rows; nothing packed. */
static void smelt_uka_row(float *O, const float *Q, const float *K, const float *V,
                          const void *M, int64_t q0, int64_t nkv, int64_t D, int64_t Dv,
                          int64_t k_rs, int64_t v_rs, int64_t m_cs, int64_t mask_mode,
                          float fill, float scale, int64_t causal_shift, int64_t kblock,
                          int64_t masked_zero)
{
    const int64_t kb = (kblock + SMELT_UKA_LANES - 1) / SMELT_UKA_LANES * SMELT_UKA_LANES;
    const int64_t Dl = D / SMELT_UKA_LANES * SMELT_UKA_LANES;
    const int64_t Dvl = Dv / SMELT_UKA_LANES * SMELT_UKA_LANES;
    float s[kb], A[Dv], m = -INFINITY, l = 0.0f;
    for (int64_t c = 0; c < Dv; c++) A[c] = 0.0f;
    int64_t end = nkv;
    if (causal_shift >= 0 && q0 + 1 + causal_shift < end) end = q0 + 1 + causal_shift;
    for (int64_t j0 = 0; j0 < end; j0 += kb) {
        const int64_t kn = end - j0 < kb ? end - j0 : kb;
        const int64_t kp = (kn + SMELT_UKA_LANES - 1) / SMELT_UKA_LANES * SMELT_UKA_LANES;
        for (int64_t j = 0; j < kn; j++) {
            const float *k = K + (j0 + j) * k_rs;
            smelt_uka_v acc = {0};
            for (int64_t d = 0; d < Dl; d += SMELT_UKA_LANES)
                acc += *(const smelt_uka_v *)&Q[d] * *(const smelt_uka_v *)&k[d];
            float dot = 0.0f;
            for (int k2 = 0; k2 < SMELT_UKA_LANES; k2++) dot += acc[k2];
            for (int64_t d = Dl; d < D; d++) dot += Q[d] * k[d];
            s[j] = dot;
        }
        float alpha = smelt_uka_softmax_row(s, kn, kp, 0, q0, j0, M, 0, m_cs, mask_mode, fill,
                                            scale, causal_shift, &m, &l);
        for (int64_t c = 0; c < Dv; c++) A[c] *= alpha;
        for (int64_t j = 0; j < kn; j++) {
            const float *v = V + (j0 + j) * v_rs;
            const float p = s[j];
            for (int64_t c = 0; c < Dvl; c += SMELT_UKA_LANES)
                *(smelt_uka_v *)&A[c] += p * *(const smelt_uka_v *)&v[c];
            for (int64_t c = Dvl; c < Dv; c++) A[c] += p * v[c];
        }
    }
    const int zero = l == 0.0f && masked_zero;
    for (int64_t c = 0; c < Dv; c++) O[c] = zero ? 0.0f : A[c] / l;
}

/* The micro-kernel: rows query rows from absolute row q0 of one (batch, head).
 * Q, K, V, O, M point at that row / key 0; strides in elements (columns of
 * Q, V and O contiguous); M's type follows mask_mode (float, or bytes);
 * masked_zero: a row with every score -inf gives zeros (else NaN). */
static void smelt_uk_attention_f32(float *O, const float *Q, const float *K, const float *V,
                                   const void *M, int64_t rows, int64_t q0, int64_t nkv, int64_t D,
                                   int64_t Dv, int64_t q_rs, int64_t k_rs, int64_t k_cs,
                                   int64_t v_rs, int64_t o_rs, int64_t m_rs, int64_t m_cs,
                                   int64_t mask_mode, float fill, float scale,
                                   int64_t causal_shift, int64_t kblock, int64_t masked_zero)
{
    if (rows == 1 && k_cs == 1)
        smelt_uka_row(O, Q, K, V, M, q0, nkv, D, Dv, k_rs, v_rs, m_cs, mask_mode, fill, scale,
                      causal_shift, kblock, masked_zero);
    else
        smelt_uka_block(O, Q, K, V, M, rows, q0, nkv, D, Dv, q_rs, k_rs, k_cs, v_rs, o_rs, m_rs,
                        m_cs, mask_mode, fill, scale, causal_shift, kblock, masked_zero);
}
