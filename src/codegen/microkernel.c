/* The built-in micro-kernel table (filled by tensorize's kernels). */
#include <string.h>

#include "base/base.h"
#include "codegen/embed.h"
#include "codegen/microkernel.h"
#include "codegen/target.h"

/* C[i*ldc + j] += sum_k A[i*lda_i + k*lda_k] * B[k*ldb_k + j*ldb_j] for
 * i < M, j < N, k < K (tensorize's smelt.gemm_f32).  With ldb_j == 1,
 * blocks of ROWS x VECS vectors of C (8 x 3 x 16 lanes on AVX-512, as the
 * default schedule tiles; 6 x 2 x 8 on AVX2; 4 x 2 x 4 otherwise) stay in
 * vector accumulators across k, B read a vector at a time and A broadcast;
 * the rows below the blocks (M not a multiple of ROWS) take a block of
 * fewer rows, still in vectors (as a plain loop, 4 of 1024 rows took 17% of a
 * 1024^3 product: one latency-bound chain per element); columns right of
 * the blocks and other strides take the plain loop.  Each C element accumulates
 * in k order, like the loop nest it replaces.  128 x 768 x 768 on one Zen 5
 * core (AVX-512): 253 GFLOP/s, the FMA peak (the 4 x 8 scalar blocks before
 * it: 41). */
#define GEMM_EDGE_SOURCE \
    "static void smelt_uk_gemm_f32_edge(float *C, const float *A, const float *B, int64_t i0,\n" \
    "    int64_t i1, int64_t j0, int64_t j1, int64_t K, int64_t ldc, int64_t lda_i,\n"           \
    "    int64_t lda_k, int64_t ldb_k, int64_t ldb_j)\n"                                         \
    "{\n"                                                                                        \
    "    for (int64_t i = i0; i < i1; i++)\n"                                                    \
    "        for (int64_t j = j0; j < j1; j++) {\n"                                              \
    "            float acc = C[i * ldc + j];\n"                                                  \
    "            for (int64_t k = 0; k < K; k++)\n"                                              \
    "                acc += A[i * lda_i + k * lda_k] * B[k * ldb_k + j * ldb_j];\n"              \
    "            C[i * ldc + j] = acc;\n"                                                        \
    "        }\n"                                                                                \
    "}\n"                                                                                        \
    "\n"

#define GEMM_X86_BLOCK \
    "/* register block: ROWS x VECS vectors of LANES floats (24 of 32 zmm, 12 of\n"              \
    " * 16 ymm, 8 of 16 xmm) */\n"                                                               \
    "#if defined(__AVX512F__)\n"                                                                 \
    "#define SMELT_UK_LANES 16\n"                                                                \
    "#define SMELT_UK_ROWS 8\n"                                                                  \
    "#define SMELT_UK_VECS 3\n"                                                                  \
    "#define SMELT_UK_WIDE 6\n"                                                                  \
    "#elif defined(__AVX2__)\n"                                                                  \
    "#define SMELT_UK_LANES 8\n"                                                                 \
    "#define SMELT_UK_ROWS 6\n"                                                                  \
    "#define SMELT_UK_VECS 2\n"                                                                  \
    "#define SMELT_UK_WIDE 4\n"                                                                  \
    "#else\n"                                                                                    \
    "#define SMELT_UK_LANES 4\n"                                                                 \
    "#define SMELT_UK_ROWS 4\n"                                                                  \
    "#define SMELT_UK_VECS 2\n"                                                                  \
    "#define SMELT_UK_WIDE 4\n"                                                                  \
    "#endif\n"

/* NEON: 32 registers of 4 floats.  A's values need registers of their own
 * (no FMA with a broadcast memory operand as on x86), and GCC loads a k
 * step's A values up front: 8 x 3 (24 accumulators + 3 B + 8 A) spilled 3
 * accumulators to the stack every k step; 6 x 3 (18 + 3 + 6) does not
 * (unit/test_target_aarch64 checks the assembly). */
#define GEMM_NEON_BLOCK \
    "/* register block: ROWS x VECS vectors of LANES floats (18 + 3 B + 6 A of 32 NEON registers) */\n" \
    "#define SMELT_UK_LANES 4\n" \
    "#define SMELT_UK_ROWS 6\n" \
    "#define SMELT_UK_VECS 3\n" \
    "#define SMELT_UK_WIDE 6\n"

#define GEMM_BODY_SOURCE \
    "typedef float smelt_uk_f32v __attribute__((vector_size(SMELT_UK_LANES * 4), aligned(4), may_alias));\n" \
    "/* WIDE blocks tile the column blocks (Nb is a multiple of VECS vectors) */\n" \
    "#if SMELT_UK_WIDE % SMELT_UK_VECS != 0\n" \
    "#error SMELT_UK_WIDE must be a multiple of SMELT_UK_VECS\n" \
    "#endif\n" \
    "\n"                                                                                         \
    "/* ROWS rows (a constant once inlined) x VECS vectors of C from column j */\n" \
    "#if defined(__GNUC__)\n" \
    "#define SMELT_UK_INLINE static inline __attribute__((always_inline))\n" \
    "#else\n" \
    "#define SMELT_UK_INLINE static inline\n" \
    "#endif\n" \
    "SMELT_UK_INLINE void smelt_uk_gemm_f32_block(float *C, const float *A, const float *B,\n" \
    "    const int rows, const int vecs, int64_t i, int64_t j, int64_t K, int64_t ldc,\n" \
    "    int64_t lda_i, int64_t lda_k, int64_t ldb_k)\n" \
    "{\n" \
    "    smelt_uk_f32v acc[SMELT_UK_ROWS][SMELT_UK_WIDE], b[SMELT_UK_WIDE];\n" \
    "    for (int r = 0; r < rows; r++)\n" \
    "        for (int v = 0; v < vecs; v++)\n" \
    "            acc[r][v] = *(const smelt_uk_f32v *)&C[(i + r) * ldc + j + v * SMELT_UK_LANES];\n" \
    "    for (int64_t k = 0; k < K; k++) {\n" \
    "        for (int v = 0; v < vecs; v++)\n" \
    "            b[v] = *(const smelt_uk_f32v *)&B[k * ldb_k + j + v * SMELT_UK_LANES];\n" \
    "        for (int r = 0; r < rows; r++) {\n" \
    "            float a = A[(i + r) * lda_i + k * lda_k];\n" \
    "            for (int v = 0; v < vecs; v++) acc[r][v] += a * b[v];\n" \
    "        }\n" \
    "    }\n" \
    "    for (int r = 0; r < rows; r++)\n" \
    "        for (int v = 0; v < vecs; v++)\n" \
    "            *(smelt_uk_f32v *)&C[(i + r) * ldc + j + v * SMELT_UK_LANES] = acc[r][v];\n" \
    "}\n" \
    "\n" \
    "/* The rest rows (fewer than ROWS) from column j0 to Nb: one or two rows\n" \
    " * in blocks of WIDE vectors first (a block of VECS would keep 2 or 4\n" \
    " * accumulators, each FMA waiting for the last: an RNN's recurrent product\n" \
    " * over a batch of 2 ran latency-bound), then blocks of VECS. */\n" \
    "static void smelt_uk_gemm_f32_rest(float *C, const float *A, const float *B, int rest,\n" \
    "    int64_t Mb, int64_t Nb, int64_t K, int64_t ldc, int64_t lda_i, int64_t lda_k, int64_t ldb_k)\n" \
    "{\n" \
    "    const int64_t nb = SMELT_UK_LANES * SMELT_UK_VECS, nw = SMELT_UK_LANES * SMELT_UK_WIDE;\n" \
    "    int64_t j = 0;\n" \
    "    for (; rest <= 2 && j + nw <= Nb; j += nw) {\n" \
    "        if (rest == 1) smelt_uk_gemm_f32_block(C, A, B, 1, SMELT_UK_WIDE, Mb, j, K, ldc, lda_i, lda_k, ldb_k);\n" \
    "        else smelt_uk_gemm_f32_block(C, A, B, 2, SMELT_UK_WIDE, Mb, j, K, ldc, lda_i, lda_k, ldb_k);\n" \
    "    }\n" \
    "    for (; j < Nb; j += nb) {\n" \
    "        switch (rest) {\n" \
    "        case 1: smelt_uk_gemm_f32_block(C, A, B, 1, SMELT_UK_VECS, Mb, j, K, ldc, lda_i, lda_k, ldb_k); break;\n" \
    "        case 2: smelt_uk_gemm_f32_block(C, A, B, 2, SMELT_UK_VECS, Mb, j, K, ldc, lda_i, lda_k, ldb_k); break;\n" \
    "        case 3: smelt_uk_gemm_f32_block(C, A, B, 3, SMELT_UK_VECS, Mb, j, K, ldc, lda_i, lda_k, ldb_k); break;\n" \
    "#if SMELT_UK_ROWS > 4\n" \
    "        case 4: smelt_uk_gemm_f32_block(C, A, B, 4, SMELT_UK_VECS, Mb, j, K, ldc, lda_i, lda_k, ldb_k); break;\n" \
    "        case 5: smelt_uk_gemm_f32_block(C, A, B, 5, SMELT_UK_VECS, Mb, j, K, ldc, lda_i, lda_k, ldb_k); break;\n" \
    "#endif\n" \
    "#if SMELT_UK_ROWS > 6\n" \
    "        case 6: smelt_uk_gemm_f32_block(C, A, B, 6, SMELT_UK_VECS, Mb, j, K, ldc, lda_i, lda_k, ldb_k); break;\n" \
    "        case 7: smelt_uk_gemm_f32_block(C, A, B, 7, SMELT_UK_VECS, Mb, j, K, ldc, lda_i, lda_k, ldb_k); break;\n" \
    "#endif\n" \
    "        default: break;\n" \
    "        }\n" \
    "    }\n" \
    "}\n" \
    "\n" \
    "/* C[i*ldc+j] += sum_k A[i*lda_i+k*lda_k] * B[k*ldb_k+j*ldb_j] */\n" \
    "static void smelt_uk_gemm_f32(float *C, const float *A, const float *B, int64_t M,\n" \
    "    int64_t N, int64_t K, int64_t ldc, int64_t lda_i, int64_t lda_k, int64_t ldb_k,\n" \
    "    int64_t ldb_j)\n" \
    "{\n" \
    "    const int64_t nb = SMELT_UK_LANES * SMELT_UK_VECS;\n" \
    "    int64_t Mb = ldb_j == 1 ? M / SMELT_UK_ROWS * SMELT_UK_ROWS : 0;\n" \
    "    int64_t Nb = ldb_j == 1 ? N / nb * nb : 0;\n" \
    "    int rest = Nb ? (int)(M - Mb) : 0;\n" \
    "    for (int64_t j = 0; j < Nb; j += nb)\n" \
    "        for (int64_t i = 0; i < Mb; i += SMELT_UK_ROWS)\n" \
    "            smelt_uk_gemm_f32_block(C, A, B, SMELT_UK_ROWS, SMELT_UK_VECS, i, j, K, ldc, lda_i, lda_k, ldb_k);\n" \
    "    /* the rows below the blocks: blocks of fewer rows, still in vectors */\n" \
    "    if (rest) smelt_uk_gemm_f32_rest(C, A, B, rest, Mb, Nb, K, ldc, lda_i, lda_k, ldb_k);\n" \
    "    /* the columns right of the blocks (all rows), then, without blocks, all */\n" \
    "    smelt_uk_gemm_f32_edge(C, A, B, 0, M, Nb, N, K, ldc, lda_i, lda_k, ldb_k, ldb_j);\n" \
    "}\n"

#define GEMM_F32_SOURCE GEMM_EDGE_SOURCE GEMM_X86_BLOCK GEMM_BODY_SOURCE
#define GEMM_F32_NEON_SOURCE GEMM_EDGE_SOURCE GEMM_NEON_BLOCK GEMM_BODY_SOURCE

/* dst[i*ldd + j] = src[i + j*lds] for i < M, j < N (tensorize's
 * smelt.transpose_f32: the layout conversions NCHW <-> NCHW[b]c move
 * blocks of this shape).  T x T tiles are transposed in registers, read
 * along src's contiguous axis and written along dst's (16 x 16 on AVX-512,
 * 8 x 8 on AVX2, 4 x 4 otherwise); edges take smaller tiles, then scalars.
 * A pure data move: exact.  32 x 112 x 112 floats NCHW16c -> NCHW on one
 * Zen 4 core: 0.05 ms, memcpy's speed (the element-wise gather: 0.44);
 * 40 x 28 x 28 in blocks of 8: 4-9 us (the gather: 7-9). */
#define TRANSPOSE_F32_SOURCE \
    "/* dst[i*ldd + j] = src[i + j*lds] for i < M, j < N */\n" \
    "typedef float smelt_uk_tr16_v __attribute__((vector_size(64), aligned(4), may_alias));\n" \
    "typedef float smelt_uk_tr8_v __attribute__((vector_size(32), aligned(4), may_alias));\n" \
    "typedef float smelt_uk_tr4_v __attribute__((vector_size(16), aligned(4), may_alias));\n" \
    "typedef int32_t smelt_uk_tr16_i __attribute__((vector_size(64)));\n" \
    "typedef int32_t smelt_uk_tr8_i __attribute__((vector_size(32)));\n" \
    "typedef int32_t smelt_uk_tr4_i __attribute__((vector_size(16)));\n" \
    "#if defined(__has_builtin)\n" \
    "#if __has_builtin(__builtin_shufflevector)\n" \
    "#define SMELT_UK_TR_SHUF(T, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)\n" \
    "#endif\n" \
    "#endif\n" \
    "#ifndef SMELT_UK_TR_SHUF\n" \
    "#define SMELT_UK_TR_SHUF(T, a, b, ...) __builtin_shuffle(a, b, (smelt_uk_tr##T##_i){__VA_ARGS__})\n" \
    "#endif\n" \
    "/* Kept out of their callers: inlined, the tiles spill, and with constant\n" \
    " * strides GCC turns the row loads into a memcpy to the stack. */\n" \
    "#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8\n" \
    "#define SMELT_UK_TR_NOINLINE __attribute__((noipa))\n" \
    "#elif defined(__GNUC__)\n" \
    "#define SMELT_UK_TR_NOINLINE __attribute__((noinline))\n" \
    "#else\n" \
    "#define SMELT_UK_TR_NOINLINE\n" \
    "#endif\n" \
    "#define SMELT_UK_TR16_LO 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23\n" \
    "#define SMELT_UK_TR16_HI 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31\n" \
    "#define SMELT_UK_TR8_LO 0, 8, 1, 9, 2, 10, 3, 11\n" \
    "#define SMELT_UK_TR8_HI 4, 12, 5, 13, 6, 14, 7, 15\n" \
    "#define SMELT_UK_TR4_LO 0, 4, 1, 5\n" \
    "#define SMELT_UK_TR4_HI 2, 6, 3, 7\n" \
    "/* One T x T tile in registers: log2(T) rounds of interleaving row k with\n" \
    " * row k + T/2 (a perfect shuffle) transpose it. */\n" \
    "#define SMELT_UK_TR_TILE(T, LOGT)                                                        \\\n" \
    "static SMELT_UK_TR_NOINLINE void smelt_uk_tr##T(float *d, const float *s, int64_t ldd, int64_t lds)          \\\n" \
    "{                                                                                        \\\n" \
    "    smelt_uk_tr##T##_v r[T], t[T];                                                      \\\n" \
    "    for (int k = 0; k < T; k++) r[k] = *(const smelt_uk_tr##T##_v *)(s + k * lds);      \\\n" \
    "    for (int round = 0; round < LOGT; round++) {                                         \\\n" \
    "        for (int k = 0; k < T / 2; k++) {                                                \\\n" \
    "            t[2 * k] = SMELT_UK_TR_SHUF(T, r[k], r[k + T / 2], SMELT_UK_TR##T##_LO);     \\\n" \
    "            t[2 * k + 1] = SMELT_UK_TR_SHUF(T, r[k], r[k + T / 2], SMELT_UK_TR##T##_HI); \\\n" \
    "        }                                                                                \\\n" \
    "        for (int k = 0; k < T; k++) r[k] = t[k];                                         \\\n" \
    "    }                                                                                    \\\n" \
    "    for (int k = 0; k < T; k++) *(smelt_uk_tr##T##_v *)(d + k * ldd) = r[k];            \\\n" \
    "}\n" \
    "SMELT_UK_TR_TILE(16, 4)\n" \
    "/* 8 x 8 with in-lane shuffles (cheaper than lane-crossing ones): pairs\n" \
    " * interleaved, then pairs of pairs, then 128-bit halves exchanged. */\n" \
    "static SMELT_UK_TR_NOINLINE void smelt_uk_tr8(float *d, const float *s, int64_t ldd, int64_t lds)\n" \
    "{\n" \
    "    smelt_uk_tr8_v r[8], t[8], u[8];\n" \
    "    for (int k = 0; k < 8; k++) r[k] = *(const smelt_uk_tr8_v *)(s + k * lds);\n" \
    "    for (int k = 0; k < 8; k += 2) {\n" \
    "        t[k] = SMELT_UK_TR_SHUF(8, r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);\n" \
    "        t[k + 1] = SMELT_UK_TR_SHUF(8, r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);\n" \
    "    }\n" \
    "    for (int k = 0; k < 8; k += 4) {\n" \
    "        u[k] = SMELT_UK_TR_SHUF(8, t[k], t[k + 2], 0, 1, 8, 9, 4, 5, 12, 13);\n" \
    "        u[k + 1] = SMELT_UK_TR_SHUF(8, t[k], t[k + 2], 2, 3, 10, 11, 6, 7, 14, 15);\n" \
    "        u[k + 2] = SMELT_UK_TR_SHUF(8, t[k + 1], t[k + 3], 0, 1, 8, 9, 4, 5, 12, 13);\n" \
    "        u[k + 3] = SMELT_UK_TR_SHUF(8, t[k + 1], t[k + 3], 2, 3, 10, 11, 6, 7, 14, 15);\n" \
    "    }\n" \
    "    for (int k = 0; k < 4; k++) {\n" \
    "        *(smelt_uk_tr8_v *)(d + k * ldd) = SMELT_UK_TR_SHUF(8, u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);\n" \
    "        *(smelt_uk_tr8_v *)(d + (k + 4) * ldd) = SMELT_UK_TR_SHUF(8, u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);\n" \
    "    }\n" \
    "}\n" \
    "SMELT_UK_TR_TILE(4, 2)\n" \
    "\n" \
    "/* the widest tile the target has registers for */\n" \
    "#if defined(__AVX512F__)\n" \
    "#define SMELT_UK_TR_MAX 16\n" \
    "#elif defined(__AVX__)\n" \
    "#define SMELT_UK_TR_MAX 8\n" \
    "#else\n" \
    "#define SMELT_UK_TR_MAX 4\n" \
    "#endif\n" \
    "\n" \
    "/* Columns [j, N) of rows [i, i + h): T x T tiles for T = h, h/2, ..., 4,\n" \
    " * then scalars. */\n" \
    "static void smelt_uk_tr_band(float *dst, const float *src, int64_t i, int64_t h, int64_t j,\n" \
    "    int64_t N, int64_t ldd, int64_t lds)\n" \
    "{\n" \
    "    for (int64_t T = h; T >= 4; T /= 2)\n" \
    "        for (; j + T <= N; j += T)\n" \
    "            for (int64_t r = i; r < i + h; r += T) {\n" \
    "                float *d = dst + r * ldd + j;\n" \
    "                const float *s = src + r + j * lds;\n" \
    "                if (T == 16) smelt_uk_tr16(d, s, ldd, lds);\n" \
    "                else if (T == 8) smelt_uk_tr8(d, s, ldd, lds);\n" \
    "                else smelt_uk_tr4(d, s, ldd, lds);\n" \
    "            }\n" \
    "    for (; j < N; j++)\n" \
    "        for (int64_t r = i; r < i + h; r++) dst[r * ldd + j] = src[r + j * lds];\n" \
    "}\n" \
    "\n" \
    "static SMELT_UK_TR_NOINLINE void smelt_uk_transpose_f32(float *dst, const float *src, int64_t M, int64_t N,\n" \
    "    int64_t ldd, int64_t lds)\n" \
    "{\n" \
    "    int64_t i = 0;\n" \
    "    for (int64_t h = SMELT_UK_TR_MAX; h >= 4; h /= 2)\n" \
    "        for (; i + h <= M; i += h) smelt_uk_tr_band(dst, src, i, h, 0, N, ldd, lds);\n" \
    "    for (; i < M; i++)\n" \
    "        for (int64_t j = 0; j < N; j++) dst[i * ldd + j] = src[i + j * lds];\n" \
    "}\n"

#define COPY_F32_SOURCE \
    "/* dst[0..n) = src[0..n) */\n" \
    "static void smelt_uk_copy_f32(float *dst, const float *src, int64_t n)\n" \
    "{\n" \
    "    memcpy(dst, src, (size_t)n * sizeof(float));\n" \
    "}\n"

/* The int8 convolution and add kernels (uk/qgemm_u8s8.c: its ISA branches follow
 * the compiler's macros, so one text serves every family).  Both names
 * carry the whole file, which an include guard keeps to one copy. */
#define INT8_KERNELS                                                             \
    {"smelt.qpack_u8", "smelt_uk_qpack_u8", NULL, "smelt_uk_qgemm_u8s8.c"},     \
    {"smelt.qgemm_u8s8", "smelt_uk_qgemm_u8s8", NULL, "smelt_uk_qgemm_u8s8.c"},       \
    {"smelt.qmatmul_u8s8", "smelt_uk_qmatmul_u8s8", NULL, "smelt_uk_qgemm_u8s8.c"},   \
    {"smelt.qdwconv_u8", "smelt_uk_qdwconv_u8", NULL, "smelt_uk_qgemm_u8s8.c"},       \
    {"smelt.dynq_u8", "smelt_uk_dynq_u8", NULL, "smelt_uk_qgemm_u8s8.c"},       \
    {"smelt.qadd_u8", "smelt_uk_qadd_u8", NULL, "smelt_uk_qgemm_u8s8.c"},

/* One table per micro-kernel family (cg_target.microkernels); every
 * family has every kernel, so a schedule replays on any target.  Add
 * kernels here as {name, c_name, source}. */
static const cg_microkernel x86_kernels[] = {
    {"smelt.copy_f32", "smelt_uk_copy_f32", COPY_F32_SOURCE, NULL},
    {"smelt.gemm_f32", "smelt_uk_gemm_f32", GEMM_F32_SOURCE, NULL},
    {"smelt.transpose_f32", "smelt_uk_transpose_f32", TRANSPOSE_F32_SOURCE, NULL},
    INT8_KERNELS
    {"smelt.attention_f32", "smelt_uk_attention_f32", NULL, "smelt_uk_attention_f32.h"},
    {"smelt.nms_f32", "smelt_uk_nms_f32", NULL, "smelt_uk_nms_f32.h"},
    {"smelt.nonzero", "smelt_uk_nonzero", NULL, "smelt_uk_select.h"},
    {"smelt.compress", "smelt_uk_compress", NULL, "smelt_uk_select.h"},
    {"smelt.unique", "smelt_uk_unique", NULL, "smelt_uk_select.h"},
    {"smelt.roialign_f32", "smelt_uk_roialign_f32", NULL, "smelt_uk_roialign_f32.h"},
};

/* the transposes' widest tile is 4 x 4 there already (no __AVX__) */
static const cg_microkernel neon_kernels[] = {
    {"smelt.copy_f32", "smelt_uk_copy_f32", COPY_F32_SOURCE, NULL},
    {"smelt.gemm_f32", "smelt_uk_gemm_f32", GEMM_F32_NEON_SOURCE, NULL},
    {"smelt.transpose_f32", "smelt_uk_transpose_f32", TRANSPOSE_F32_SOURCE, NULL},
    INT8_KERNELS
    {"smelt.attention_f32", "smelt_uk_attention_f32", NULL, "smelt_uk_attention_f32.h"},
    {"smelt.nms_f32", "smelt_uk_nms_f32", NULL, "smelt_uk_nms_f32.h"},
    {"smelt.nonzero", "smelt_uk_nonzero", NULL, "smelt_uk_select.h"},
    {"smelt.compress", "smelt_uk_compress", NULL, "smelt_uk_select.h"},
    {"smelt.unique", "smelt_uk_unique", NULL, "smelt_uk_select.h"},
    {"smelt.roialign_f32", "smelt_uk_roialign_f32", NULL, "smelt_uk_roialign_f32.h"},
};

_Static_assert(SMELT_ARRAY_LEN(x86_kernels) == SMELT_ARRAY_LEN(neon_kernels),
               "every micro-kernel family has every kernel");

const cg_microkernel *cg_microkernel_find_for(const cg_target *t, const char *name)
{
    if (!name) return NULL;
    bool neon = t && t->microkernels == CG_UK_NEON;
    const cg_microkernel *table = neon ? neon_kernels : x86_kernels;
    for (size_t i = 0; i < SMELT_ARRAY_LEN(x86_kernels); i++)
        if (!strcmp(table[i].name, name)) return &table[i];
    return NULL;
}

const char *cg_microkernel_text(const cg_microkernel *k)
{
    if (k->source) return k->source;
    const cg_embedded_file *f = cg_runtime_file(k->embedded);
    return f ? (const char *)f->data : "";
}

const cg_microkernel *cg_microkernel_find(const char *name)
{
    return cg_microkernel_find_for(NULL, name);
}
