/* The built-in micro-kernel table (filled by tensorize's kernels). */
#include <string.h>

#include "base/base.h"
#include "codegen/microkernel.h"

/* C[i*ldc + j] += sum_k A[i*lda_i + k*lda_k] * B[k*ldb_k + j*ldb_j] for
 * i < M, j < N, k < K (tensorize's smelt.gemm_f32).  With ldb_j == 1, 4x8
 * blocks of C stay in local accumulators across k (which the compiler keeps
 * in registers and vectorizes); edges and other strides take the plain loop.
 * Each C element accumulates in k order, like the loop nest it replaces. */
#define GEMM_F32_SOURCE                                                                           \
    "static void smelt_uk_gemm_f32_edge(float *C, const float *A, const float *B, int64_t i0,\n" \
    "    int64_t i1, int64_t j0, int64_t j1, int64_t K, int64_t ldc, int64_t lda_i,\n"         \
    "    int64_t lda_k, int64_t ldb_k, int64_t ldb_j)\n"                                        \
    "{\n"                                                                                      \
    "    for (int64_t i = i0; i < i1; i++)\n"                                                  \
    "        for (int64_t j = j0; j < j1; j++) {\n"                                            \
    "            float acc = C[i * ldc + j];\n"                                                \
    "            for (int64_t k = 0; k < K; k++)\n"                                            \
    "                acc += A[i * lda_i + k * lda_k] * B[k * ldb_k + j * ldb_j];\n"            \
    "            C[i * ldc + j] = acc;\n"                                                      \
    "        }\n"                                                                              \
    "}\n"                                                                                      \
    "\n"                                                                                       \
    "/* C[i*ldc+j] += sum_k A[i*lda_i+k*lda_k] * B[k*ldb_k+j*ldb_j] */\n"                      \
    "static void smelt_uk_gemm_f32(float *C, const float *A, const float *B, int64_t M,\n"     \
    "    int64_t N, int64_t K, int64_t ldc, int64_t lda_i, int64_t lda_k, int64_t ldb_k,\n"    \
    "    int64_t ldb_j)\n"                                                                     \
    "{\n"                                                                                      \
    "    int64_t M4 = ldb_j == 1 ? M / 4 * 4 : 0, N8 = ldb_j == 1 ? N / 8 * 8 : 0;\n"          \
    "    for (int64_t i = 0; i < M4; i += 4)\n"                                                \
    "        for (int64_t j = 0; j < N8; j += 8) {\n"                                          \
    "            float acc[4][8];\n"                                                           \
    "            for (int r = 0; r < 4; r++)\n"                                                \
    "                for (int c = 0; c < 8; c++) acc[r][c] = C[(i + r) * ldc + j + c];\n"      \
    "            for (int64_t k = 0; k < K; k++) {\n"                                          \
    "                const float *b = &B[k * ldb_k + j];\n"                                    \
    "                for (int r = 0; r < 4; r++) {\n"                                          \
    "                    float a = A[(i + r) * lda_i + k * lda_k];\n"                          \
    "                    for (int c = 0; c < 8; c++) acc[r][c] += a * b[c];\n"                 \
    "                }\n"                                                                      \
    "            }\n"                                                                          \
    "            for (int r = 0; r < 4; r++)\n"                                                \
    "                for (int c = 0; c < 8; c++) C[(i + r) * ldc + j + c] = acc[r][c];\n"      \
    "        }\n"                                                                              \
    "    /* the rows and columns the blocks did not cover */\n"                                \
    "    smelt_uk_gemm_f32_edge(C, A, B, 0, M4, N8, N, K, ldc, lda_i, lda_k, ldb_k, ldb_j);\n"  \
    "    smelt_uk_gemm_f32_edge(C, A, B, M4, M, 0, N, K, ldc, lda_i, lda_k, ldb_k, ldb_j);\n"   \
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
