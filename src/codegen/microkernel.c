/* The built-in micro-kernel table (filled by tensorize's kernels). */
#include <string.h>

#include "base/base.h"
#include "codegen/microkernel.h"

/* C[i*ldc + j] += sum_k A[i*lda_i + k*lda_k] * B[k*ldb_k + j*ldb_j] for
 * i < M, j < N, k < K (tensorize's smelt.gemm_f32).  With ldb_j == 1,
 * blocks of ROWS x VECS vectors of C (8 x 3 x 16 lanes on AVX-512, as the
 * default schedule tiles; 6 x 2 x 8 on AVX2; 4 x 2 x 4 otherwise) stay in
 * vector accumulators across k, B read a vector at a time and A broadcast;
 * edges and other strides take the plain loop.  Each C element accumulates
 * in k order, like the loop nest it replaces.  128 x 768 x 768 on one Zen 5
 * core (AVX-512): 253 GFLOP/s, the FMA peak (the 4 x 8 scalar blocks before
 * it: 41). */
#define GEMM_F32_SOURCE \
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
    "\n"                                                                                         \
    "/* register block: ROWS x VECS vectors of LANES floats (24 of 32 zmm, 12 of\n"              \
    " * 16 ymm, 8 of 16 xmm) */\n"                                                               \
    "#if defined(__AVX512F__)\n"                                                                 \
    "#define SMELT_UK_LANES 16\n"                                                                \
    "#define SMELT_UK_ROWS 8\n"                                                                  \
    "#define SMELT_UK_VECS 3\n"                                                                  \
    "#elif defined(__AVX2__)\n"                                                                  \
    "#define SMELT_UK_LANES 8\n"                                                                 \
    "#define SMELT_UK_ROWS 6\n"                                                                  \
    "#define SMELT_UK_VECS 2\n"                                                                  \
    "#else\n"                                                                                    \
    "#define SMELT_UK_LANES 4\n"                                                                 \
    "#define SMELT_UK_ROWS 4\n"                                                                  \
    "#define SMELT_UK_VECS 2\n"                                                                  \
    "#endif\n"                                                                                   \
    "typedef float smelt_uk_f32v __attribute__((vector_size(SMELT_UK_LANES * 4), aligned(4), may_alias));\n" \
    "\n"                                                                                         \
    "/* C[i*ldc+j] += sum_k A[i*lda_i+k*lda_k] * B[k*ldb_k+j*ldb_j] */\n"                        \
    "static void smelt_uk_gemm_f32(float *C, const float *A, const float *B, int64_t M,\n"       \
    "    int64_t N, int64_t K, int64_t ldc, int64_t lda_i, int64_t lda_k, int64_t ldb_k,\n"      \
    "    int64_t ldb_j)\n"                                                                       \
    "{\n"                                                                                        \
    "    const int64_t nb = SMELT_UK_LANES * SMELT_UK_VECS;\n"                                   \
    "    int64_t Mb = ldb_j == 1 ? M / SMELT_UK_ROWS * SMELT_UK_ROWS : 0;\n"                     \
    "    int64_t Nb = ldb_j == 1 ? N / nb * nb : 0;\n"                                           \
    "    for (int64_t j = 0; j < Nb; j += nb)\n"                                                 \
    "        for (int64_t i = 0; i < Mb; i += SMELT_UK_ROWS) {\n"                                \
    "            smelt_uk_f32v acc[SMELT_UK_ROWS][SMELT_UK_VECS], b[SMELT_UK_VECS];\n"           \
    "            for (int r = 0; r < SMELT_UK_ROWS; r++)\n"                                      \
    "                for (int v = 0; v < SMELT_UK_VECS; v++)\n"                                  \
    "                    acc[r][v] = *(const smelt_uk_f32v *)&C[(i + r) * ldc + j + v * SMELT_UK_LANES];\n" \
    "            for (int64_t k = 0; k < K; k++) {\n"                                            \
    "                for (int v = 0; v < SMELT_UK_VECS; v++)\n"                                  \
    "                    b[v] = *(const smelt_uk_f32v *)&B[k * ldb_k + j + v * SMELT_UK_LANES];\n" \
    "                for (int r = 0; r < SMELT_UK_ROWS; r++) {\n"                                \
    "                    float a = A[(i + r) * lda_i + k * lda_k];\n"                            \
    "                    for (int v = 0; v < SMELT_UK_VECS; v++) acc[r][v] += a * b[v];\n"       \
    "                }\n"                                                                        \
    "            }\n"                                                                            \
    "            for (int r = 0; r < SMELT_UK_ROWS; r++)\n"                                      \
    "                for (int v = 0; v < SMELT_UK_VECS; v++)\n"                                  \
    "                    *(smelt_uk_f32v *)&C[(i + r) * ldc + j + v * SMELT_UK_LANES] = acc[r][v];\n" \
    "        }\n"                                                                                \
    "    /* the columns right of the blocks, then the rows below them */\n"                      \
    "    smelt_uk_gemm_f32_edge(C, A, B, 0, Mb, Nb, N, K, ldc, lda_i, lda_k, ldb_k, ldb_j);\n"   \
    "    smelt_uk_gemm_f32_edge(C, A, B, Mb, M, 0, N, K, ldc, lda_i, lda_k, ldb_k, ldb_j);\n"    \
    "}\n"

/* Sentinel-free table; add kernels here as {name, c_name, source}. */
static const cg_microkernel builtin_kernels[] = {
    {"smelt.copy_f32",
     "smelt_uk_copy_f32",
     "/* dst[0..n) = src[0..n) */\n"
     "static void smelt_uk_copy_f32(float *dst, const float *src, int64_t n)\n"
     "{\n"
     "    memcpy(dst, src, (size_t)n * sizeof(float));\n"
     "}\n"},
    {"smelt.gemm_f32", "smelt_uk_gemm_f32", GEMM_F32_SOURCE},
};

const cg_microkernel *cg_microkernel_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < SMELT_ARRAY_LEN(builtin_kernels); i++)
        if (!strcmp(builtin_kernels[i].name, name)) return &builtin_kernels[i];
    return NULL;
}
