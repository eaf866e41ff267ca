/* Compute definitions of the linalg family checked against the reference
 * kernels: each case runs one node through exec_node (reference) and
 * exec_node_te (tensor expressions, interpreted) on pseudo-random inputs and
 * compares the output.  Covers what the ONNX node tests leave out: 1-D
 * MatMul operands, batch broadcasting, integer and 16-bit float types, every
 * Gemm C shape, Einsum diagonals, ellipses and implicit outputs.
 * Every case is also lowered under the default schedule and the suite's
 * random legal ones and run by the tir interpreter (op_test_util.h). */
#include "op_test_util.h"

/* Floats in [-2, 2); integers in [-3, 3] (unsigned: [0, 6]). */
static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    bool is_unsigned = t->dtype == U32 || t->dtype == U64 || t->dtype == U8 || t->dtype == U16;
    uint32_t r = opt_random(state);
    if (op_dtype_is_int(t->dtype))
        op_set_i64(t, i, (int64_t)(r % 7) - (is_unsigned ? 0 : 3));
    else
        op_set_f64(t, i, 4.0 * ((double)r / (double)(1u << 24)) - 2.0);
}

/* |result - reference| <= tol * (1 + |reference|); integers exact */
static const opt_suite k_suite = {
    .seed = 12345, .fill = fill, .tols = OPT_TOLS_ACCUMULATE, .random_schedules = 3};

#define T OPT_X
#define MATMUL(what, a, b) {what, OP_MATMUL, 13, "y", 2, 0, {a, b}, {{0}}}

static const opt_case k_matmul_cases[] = {
    MATMUL("matmul 2-D", T(F32, 2, 3, 4), T(F32, 2, 4, 5)),
    MATMUL("matmul 1-D x 2-D", T(F32, 1, 4), T(F32, 2, 4, 5)),
    MATMUL("matmul 2-D x 1-D", T(F32, 2, 3, 4), T(F32, 1, 4)),
    MATMUL("matmul 1-D x 1-D", T(F32, 1, 4), T(F32, 1, 4)),
    MATMUL("matmul 3-D x 2-D", T(F32, 3, 2, 3, 4), T(F32, 2, 4, 5)),
    MATMUL("matmul 1-D x 3-D", T(F32, 1, 4), T(F32, 3, 2, 4, 5)),
    MATMUL("matmul 3-D x 1-D", T(F32, 3, 2, 3, 4), T(F32, 1, 4)),
    MATMUL("matmul batch broadcast", T(F32, 4, 2, 1, 3, 4), T(F32, 3, 5, 4, 2)),
    MATMUL("matmul batch broadcast 1", T(F32, 3, 1, 3, 4), T(F32, 3, 2, 4, 5)),
    MATMUL("matmul K = 0", T(F32, 2, 3, 0), T(F32, 2, 0, 5)),
    MATMUL("matmul f64", T(F64, 3, 2, 3, 4), T(F64, 2, 4, 5)),
    MATMUL("matmul f16", T(F16, 2, 3, 8), T(F16, 2, 8, 5)),
    MATMUL("matmul bf16", T(BF16, 2, 3, 8), T(BF16, 2, 8, 5)),
    MATMUL("matmul int32", T(I32, 2, 3, 4), T(I32, 2, 4, 5)),
    MATMUL("matmul int64 1-D", T(I64, 1, 4), T(I64, 3, 2, 4, 5)),
    MATMUL("matmul uint32", T(U32, 2, 3, 4), T(U32, 2, 4, 5)),
    MATMUL("matmul uint64", T(U64, 2, 3, 4), T(U64, 1, 4)),
};

#define TA OPT_AI("transA", 1)
#define TB OPT_AI("transB", 1)
#define ALPHA(v) OPT_AF("alpha", v)
#define BETA(v) OPT_AF("beta", v)

static const opt_case k_gemm_cases[] = {
    {"gemm no C", OP_GEMM, 13, "y", 2, 0, {T(F32, 2, 3, 4), T(F32, 2, 4, 5)}, {{0}}},
    {"gemm alpha, no C", OP_GEMM, 13, "y", 2, 1, {T(F32, 2, 3, 4), T(F32, 2, 4, 5)}, {ALPHA(0.5)}},
    {"gemm transA", OP_GEMM, 13, "y", 3, 1,
     {T(F32, 2, 4, 3), T(F32, 2, 4, 5), T(F32, 2, 3, 5)}, {TA}},
    {"gemm transB", OP_GEMM, 13, "y", 3, 1,
     {T(F32, 2, 3, 4), T(F32, 2, 5, 4), T(F32, 1, 5)}, {TB}},
    {"gemm all attributes", OP_GEMM, 13, "y", 3, 4,
     {T(F32, 2, 4, 3), T(F32, 2, 5, 4), T(F32, 2, 1, 5)}, {TA, TB, ALPHA(0.25), BETA(0.35)}},
    {"gemm scalar C", OP_GEMM, 13, "y", 3, 1,
     {T(F32, 2, 3, 4), T(F32, 2, 4, 5), T(F32, 0, 0)}, {BETA(2)}},
    {"gemm C (1)", OP_GEMM, 13, "y", 3, 0, {T(F32, 2, 3, 4), T(F32, 2, 4, 5), T(F32, 1, 1)}, {{0}}},
    {"gemm C (3, 1)", OP_GEMM, 13, "y", 3, 0,
     {T(F32, 2, 3, 4), T(F32, 2, 4, 5), T(F32, 2, 3, 1)}, {{0}}},
    {"gemm C (1, 1)", OP_GEMM, 13, "y", 3, 0,
     {T(F32, 2, 3, 4), T(F32, 2, 4, 5), T(F32, 2, 1, 1)}, {{0}}},
    {"gemm beta 0", OP_GEMM, 13, "y", 3, 1,
     {T(F32, 2, 3, 4), T(F32, 2, 4, 5), T(F32, 2, 3, 5)}, {BETA(0)}},
    {"gemm omitted C", OP_GEMM, 13, "y", 3, 0,
     {T(F32, 2, 3, 4), T(F32, 2, 4, 5), OPT_NONE}, {{0}}},
    {"gemm f64", OP_GEMM, 13, "y", 3, 2,
     {T(F64, 2, 3, 4), T(F64, 2, 5, 4), T(F64, 1, 5)}, {TB, ALPHA(3)}},
    {"gemm f16", OP_GEMM, 13, "y", 3, 1,
     {T(F16, 2, 3, 8), T(F16, 2, 8, 5), T(F16, 1, 5)}, {BETA(0.5)}},
    {"gemm f16 no C", OP_GEMM, 13, "y", 2, 0, {T(F16, 2, 3, 8), T(F16, 2, 8, 5)}, {{0}}},
    {"gemm bf16", OP_GEMM, 13, "y", 3, 1,
     {T(BF16, 2, 8, 3), T(BF16, 2, 8, 5), T(BF16, 2, 3, 5)}, {TA}},
    {"gemm int32 exact", OP_GEMM, 13, "y", 3, 0,
     {T(I32, 2, 3, 4), T(I32, 2, 4, 5), T(I32, 1, 5)}, {{0}}},
    {"gemm int64 scaled", OP_GEMM, 13, "y", 3, 2,
     {T(I64, 2, 3, 4), T(I64, 2, 4, 5), T(I64, 2, 3, 5)},
     {ALPHA(2), BETA(3)}},
    {"gemm uint32 no C", OP_GEMM, 13, "y", 2, 1,
     {T(U32, 2, 3, 4), T(U32, 2, 5, 4)}, {TB}},
};

#define EQ(e) {OPT_AS("equation", e)}
#define EINSUM1(e, a) {"einsum " e, OP_EINSUM, 12, "y", 1, 1, {a}, EQ(e)}
#define EINSUM2(e, a, b) {"einsum " e, OP_EINSUM, 12, "y", 2, 1, {a, b}, EQ(e)}

static const opt_case k_einsum_cases[] = {
    EINSUM2("ij,jk->ik", T(F32, 2, 3, 4), T(F32, 2, 4, 5)),
    EINSUM2("ij,jk", T(F32, 2, 3, 4), T(F32, 2, 4, 5)),
    EINSUM2("bij,bjk->bik", T(F32, 3, 2, 3, 4), T(F32, 3, 2, 4, 5)),
    EINSUM2("i,i", T(F32, 1, 5), T(F32, 1, 5)),
    EINSUM2("i,j->ij", T(F32, 1, 3), T(F32, 1, 4)),
    EINSUM2("Ab,bC->CA", T(F32, 2, 3, 4), T(F32, 2, 4, 5)),
    EINSUM1("ij->ji", T(F32, 2, 3, 4)),
    EINSUM1("ij->", T(F32, 2, 3, 4)),
    EINSUM1("ij->i", T(F32, 2, 3, 4)),
    EINSUM1("ii->i", T(F32, 2, 4, 4)),
    EINSUM1("ii", T(F32, 2, 4, 4)),
    EINSUM1("bii->bi", T(F32, 3, 2, 3, 3)),
    EINSUM1("iji->j", T(F32, 3, 3, 2, 3)),
    EINSUM1("...ii->...i", T(F32, 4, 2, 5, 3, 3)),
    EINSUM1("i...->...", T(F32, 3, 2, 3, 4)),
    EINSUM2("...ij,...jk->...ik", T(F32, 4, 2, 1, 3, 4), T(F32, 3, 5, 4, 2)),
    EINSUM2("...ij,jk", T(F32, 3, 2, 3, 4), T(F32, 2, 4, 5)),
    EINSUM2("ij,ij->ij", T(F32, 2, 3, 4), T(F32, 2, 3, 4)),
    EINSUM2("ij,jk->ik", T(F64, 2, 3, 4), T(F64, 2, 4, 5)),
    EINSUM2("ij,jk->ik", T(F16, 2, 3, 8), T(F16, 2, 8, 5)),
    EINSUM2("ij,jk->ik", T(BF16, 2, 3, 8), T(BF16, 2, 8, 5)),
    EINSUM2("ij,jk->ik", T(I8, 2, 3, 4), T(I8, 2, 4, 5)),
    EINSUM2("ij,jk->ik", T(U16, 2, 3, 4), T(U16, 2, 4, 5)),
    EINSUM2("ij,jk->ik", T(I64, 2, 3, 4), T(I64, 2, 4, 5)),
    EINSUM2("ij,jk->ik", T(F32, 2, 3, 0), T(F32, 2, 0, 5)),
    {"einsum ij,jk,kl->il", OP_EINSUM, 12, "y", 3, 1,
     {T(F32, 2, 2, 3), T(F32, 2, 3, 4), T(F32, 2, 4, 5)}, EQ("ij,jk,kl->il")},
};

int main(void)
{
    opt_check_cases(&k_suite, k_matmul_cases, SMELT_ARRAY_LEN(k_matmul_cases));
    opt_check_cases(&k_suite, k_gemm_cases, SMELT_ARRAY_LEN(k_gemm_cases));
    opt_check_cases(&k_suite, k_einsum_cases, SMELT_ARRAY_LEN(k_einsum_cases));
    TEST_MAIN_END();
}
