/* Unit tests of the linalg family: MatMul, Gemm, Einsum (import, infer, eval,
 * errors). */
#include "op_test_util.h"
#include "ops/linalg.h"

/* The registry must hand out exactly these definitions. */
extern const op_def op_def_MATMUL;
extern const op_def op_def_GEMM;
extern const op_def op_def_EINSUM;

/* Deterministic values in [-1, 1). */
static void fill_random(float *x, int64_t n, unsigned seed)
{
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

/* C = A' B' in double, A' (m,k) = ta ? a[k*M+m] : a[m*K+k], likewise B'. */
static void ref_matmul(const float *a, const float *b, double *c, int64_t m, int64_t n,
                       int64_t k, bool ta, bool tb)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++) {
                double av = ta ? a[p * m + i] : a[i * k + p];
                s += av * (tb ? b[j * k + p] : b[p * n + j]);
            }
            c[i * n + j] = s;
        }
}

/* ---- MatMul ---- */

static void test_matmul_2d(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_MATMUL, 13, 2, 1);
    const int64_t ad[] = {2, 3}, bd[] = {3, 2};
    const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {7, 8, 9, 10, 11, 12};
    smelt_tensor in[] = {opt_tensor(F32, 2, ad, a), opt_tensor(F32, 2, bd, b)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    CHECK(f.out[0].rank == 2 && f.out[0].dims[0] == 2 && f.out[0].dims[1] == 2);
    const float want[] = {58, 64, 139, 154};
    OPT_EXPECT_F32(&f.out[0], want, 4, OPT_ABS(0));
    opt_fini(&f);
}

/* Sizes that exercise the 4-way unrolled k loop and its tail. */
static void test_matmul_random_vs_reference(void)
{
    enum { M = 5, K = 13, N = 7 };
    static float a[M * K], b[K * N];
    double ref[M * N];
    fill_random(a, M * K, 1);
    fill_random(b, K * N, 2);
    ref_matmul(a, b, ref, M, N, K, false, false);
    opt_node f;
    opt_init(&f, NULL, OP_MATMUL, 13, 2, 1);
    const int64_t ad[] = {M, K}, bd[] = {K, N};
    smelt_tensor in[] = {opt_tensor(F32, 2, ad, a), opt_tensor(F32, 2, bd, b)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    for (int i = 0; i < M * N; i++) CHECK_NEAR(((float *)f.out[0].data)[i], ref[i], 1e-5);
    opt_fini(&f);
}

static void test_matmul_vectors(void)
{
    const float v[] = {1, 2, 3}, m[] = {1, 0, 0, 1, 1, 1};
    const int64_t vd[] = {3}, md[] = {3, 2}, mtd[] = {2, 3};
    opt_node f;
    /* (3) x (3,2) -> (2) */
    opt_init(&f, NULL, OP_MATMUL, 13, 2, 1);
    smelt_tensor in1[] = {opt_tensor(F32, 1, vd, v), opt_tensor(F32, 2, md, m)};
    CHECK(opt_run(&f, in1, SMELT_ARRAY_LEN(in1)) == SMELT_OK);
    CHECK(f.out[0].rank == 1 && f.out[0].dims[0] == 2);
    const float w1[] = {4, 5};
    OPT_EXPECT_F32(&f.out[0], w1, 2, OPT_ABS(0));
    opt_fini(&f);
    /* (2,3) x (3) -> (2) */
    opt_init(&f, NULL, OP_MATMUL, 13, 2, 1);
    smelt_tensor in2[] = {opt_tensor(F32, 2, mtd, m), opt_tensor(F32, 1, vd, v)};
    CHECK(opt_run(&f, in2, SMELT_ARRAY_LEN(in2)) == SMELT_OK);
    CHECK(f.out[0].rank == 1 && f.out[0].dims[0] == 2);
    const float w2[] = {1, 1 + 2 + 3};
    OPT_EXPECT_F32(&f.out[0], w2, 2, OPT_ABS(0));
    opt_fini(&f);
    /* (3) x (3) -> scalar */
    opt_init(&f, NULL, OP_MATMUL, 13, 2, 1);
    smelt_tensor in3[] = {opt_tensor(F32, 1, vd, v), opt_tensor(F32, 1, vd, v)};
    CHECK(opt_run(&f, in3, SMELT_ARRAY_LEN(in3)) == SMELT_OK);
    CHECK(f.out[0].rank == 0);
    const float w3[] = {14};
    OPT_EXPECT_F32(&f.out[0], w3, 1, OPT_ABS(0));
    opt_fini(&f);
}

/* A (2,1,2,3) x B (3,3,2): batch dims (2,1) and (3) broadcast to (2,3). */
static void test_matmul_batch_broadcast(void)
{
    static float a[2 * 2 * 3], b[3 * 3 * 2];
    fill_random(a, 12, 3);
    fill_random(b, 18, 4);
    opt_node f;
    opt_init(&f, NULL, OP_MATMUL, 13, 2, 1);
    const int64_t ad[] = {2, 1, 2, 3}, bd[] = {3, 3, 2};
    smelt_tensor in[] = {opt_tensor(F32, 4, ad, a), opt_tensor(F32, 3, bd, b)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    CHECK(f.out[0].rank == 4 && f.out[0].dims[0] == 2 && f.out[0].dims[1] == 3 &&
          f.out[0].dims[2] == 2 && f.out[0].dims[3] == 2);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            double ref[4];
            ref_matmul(a + i * 6, b + j * 6, ref, 2, 2, 3, false, false);
            const float *got = (const float *)f.out[0].data + (i * 3 + j) * 4;
            for (int e = 0; e < 4; e++) CHECK_NEAR(got[e], ref[e], 1e-6);
        }
    opt_fini(&f);
}

static void test_matmul_int32_and_double(void)
{
    const int64_t ad[] = {1, 2}, bd[] = {2, 1};
    const int32_t ai[] = {3, -4}, bi[] = {5, 6};
    opt_node f;
    opt_init(&f, NULL, OP_MATMUL, 13, 2, 1);
    smelt_tensor in[] = {opt_tensor(I32, 2, ad, ai), opt_tensor(I32, 2, bd, bi)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    CHECK(f.out[0].dtype == I32 && ((int32_t *)f.out[0].data)[0] == -9);
    opt_fini(&f);
    const double ad64[] = {0.5, 0.25}, bd64[] = {2, 4};
    opt_init(&f, NULL, OP_MATMUL, 13, 2, 1);
    smelt_tensor in2[] = {opt_tensor(F64, 2, ad, ad64),
                          opt_tensor(F64, 2, bd, bd64)};
    CHECK(opt_run(&f, in2, SMELT_ARRAY_LEN(in2)) == SMELT_OK);
    CHECK_NEAR(((double *)f.out[0].data)[0], 2.0, 0);
    opt_fini(&f);
}

static void test_matmul_errors(void)
{
    const float z[12] = {0};
    const int64_t ad[] = {2, 3}, bd[] = {4, 2};
    opt_node f;
    opt_init(&f, NULL, OP_MATMUL, 13, 2, 1);
    smelt_tensor in[] = {opt_tensor(F32, 2, ad, z), opt_tensor(F32, 2, bd, z)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx),
                       "node 'n0' (MatMul): inner dimensions differ: A (2, 3) has K=3 but B "
                       "(4, 2) has K=4");
    opt_fini(&f);
    opt_init(&f, NULL, OP_MATMUL, 13, 2, 1);
    const int64_t bd2[] = {3, 2};
    smelt_tensor in2[] = {opt_tensor(F32, 2, ad, z), opt_tensor(F64, 2, bd2, z)};
    CHECK(opt_run(&f, in2, SMELT_ARRAY_LEN(in2)) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "input 'in1' has dtype");
    opt_fini(&f);
}

static void test_matmul_symbolic_infer(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_MATMUL, 13, 2, 1);
    const int64_t ad[] = {GR_DIM_SYM(0), GR_DIM_SYM(1), 768}, bd[] = {768, 3072};
    smelt_tensor a = opt_tensor(F32, 3, ad, NULL);
    smelt_tensor b = opt_tensor(F32, 2, bd, NULL);
    const smelt_tensor *in[] = {&a, &b};
    CHECK(op_get(OP_MATMUL)->def->infer(f.ctx, f.node, in, f.out) == SMELT_OK);
    CHECK(f.out[0].rank == 3 && f.out[0].dims[0] == GR_DIM_SYM(0) &&
          f.out[0].dims[1] == GR_DIM_SYM(1) && f.out[0].dims[2] == 3072);
    opt_fini(&f);
}

/* ---- Gemm ---- */

static void check_gemm(bool ta, bool tb, int c_rank, float alpha, float beta)
{
    enum { M = 3, K = 6, N = 5 };
    static float a[M * K], b[K * N], c[M * N];
    double ref[M * N];
    fill_random(a, M * K, 5);
    fill_random(b, K * N, 6);
    fill_random(c, M * N, 7);
    ref_matmul(a, b, ref, M, N, K, ta, tb);
    opt_node f;
    opt_init(&f, NULL, OP_GEMM, 13, c_rank >= 0 ? 3 : 2, 1);
    opt_attr_int(&f, "transA", ta);
    opt_attr_int(&f, "transB", tb);
    opt_attr_float(&f, "alpha", alpha);
    opt_attr_float(&f, "beta", beta);
    const int64_t ad[] = {ta ? K : M, ta ? M : K}, bd[] = {tb ? N : K, tb ? K : N};
    const int64_t cd2[] = {M, N}, cd1[] = {N};
    smelt_tensor in[] = {opt_tensor(F32, 2, ad, a), opt_tensor(F32, 2, bd, b),
                         opt_tensor(F32, c_rank, c_rank == 2 ? cd2 : cd1, c)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    CHECK(f.out[0].rank == 2 && f.out[0].dims[0] == M && f.out[0].dims[1] == N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double cv = c_rank == 2 ? c[i * N + j] : c_rank == 1 ? c[j] : c_rank == 0 ? c[0] : 0;
            double want = alpha * ref[i * N + j] + beta * cv;
            CHECK_NEAR(((float *)f.out[0].data)[i * N + j], want, 1e-5);
        }
    opt_fini(&f);
}

static void test_gemm_variants(void)
{
    check_gemm(false, false, 2, 1.0f, 1.0f);
    check_gemm(true, false, 1, 0.5f, 2.0f);
    check_gemm(false, true, 0, 1.0f, -1.0f);
    check_gemm(true, true, 2, 2.0f, 0.5f);
    check_gemm(false, true, -1, 1.0f, 1.0f); /* no C */
}

static void test_gemm_int64(void)
{
    const int64_t ad[] = {1, 2}, bd[] = {2, 1}, cd[] = {1};
    const int64_t a[] = {3, 4}, b[] = {5, 6}, c[] = {100};
    opt_node f;
    opt_init(&f, NULL, OP_GEMM, 13, 3, 1);
    smelt_tensor in[] = {opt_tensor(I64, 2, ad, a), opt_tensor(I64, 2, bd, b),
                         opt_tensor(I64, 1, cd, c)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    CHECK(((int64_t *)f.out[0].data)[0] == 139);
    opt_fini(&f);
}

static void test_gemm_errors(void)
{
    const float z[16] = {0};
    const int64_t ad[] = {2, 3}, bd[] = {3, 4}, cd[] = {3, 4}, a3[] = {1, 2, 3};
    opt_node f;
    opt_init(&f, NULL, OP_GEMM, 13, 3, 1);
    smelt_tensor in[] = {opt_tensor(F32, 2, ad, z), opt_tensor(F32, 2, bd, z),
                         opt_tensor(F32, 2, cd, z)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx),
                       "input 'in2' of shape (3, 4) does not broadcast to the result (2, 4)");
    opt_fini(&f);
    opt_init(&f, NULL, OP_GEMM, 13, 2, 1);
    smelt_tensor in2[] = {opt_tensor(F32, 3, a3, z), opt_tensor(F32, 2, bd, z)};
    CHECK(opt_run(&f, in2, SMELT_ARRAY_LEN(in2)) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "input 'in0' has rank 3, expected 2");
    opt_fini(&f);
    opt_init(&f, NULL, OP_GEMM, 13, 2, 1);
    opt_attr_int(&f, "transA", 1);
    smelt_tensor in3[] = {opt_tensor(F32, 2, ad, z), opt_tensor(F32, 2, bd, z)};
    CHECK(opt_run(&f, in3, SMELT_ARRAY_LEN(in3)) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "A (2, 3) (transposed) has K=2");
    opt_fini(&f);
}

/* ---- Einsum ---- */

static smelt_status einsum(opt_node *f, const char *eq, smelt_tensor *in, int n_in)
{
    opt_init(f, NULL, OP_EINSUM, 12, n_in, 1);
    opt_attr_string(f, "equation", eq);
    return opt_run(f, in, n_in);
}

static void test_einsum_unary(void)
{
    const double x[] = {1, 2, 3, 4, 5, 6};
    const int64_t xd[] = {2, 3};
    smelt_tensor in[] = {opt_tensor(F64, 2, xd, x)};
    opt_node f;
    CHECK(einsum(&f, "ij->ji", in, 1) == SMELT_OK);
    CHECK(f.out[0].rank == 2 && f.out[0].dims[0] == 3 && f.out[0].dims[1] == 2);
    const double t[] = {1, 4, 2, 5, 3, 6};
    OPT_EXPECT_F64(&f.out[0], t, 6, OPT_ABS(1e-12));
    opt_fini(&f);
    CHECK(einsum(&f, "ij->i", in, 1) == SMELT_OK);
    const double rows[] = {6, 15};
    OPT_EXPECT_F64(&f.out[0], rows, 2, OPT_ABS(1e-12));
    opt_fini(&f);
    CHECK(einsum(&f, "ij", in, 1) == SMELT_OK); /* implicit: identity */
    OPT_EXPECT_F64(&f.out[0], x, 6, OPT_ABS(1e-12));
    opt_fini(&f);
    CHECK(einsum(&f, "ji", in, 1) == SMELT_OK); /* implicit: alphabetical -> transpose */
    OPT_EXPECT_F64(&f.out[0], t, 6, OPT_ABS(1e-12));
    opt_fini(&f);
}

static void test_einsum_diagonal_and_trace(void)
{
    const double x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};
    const int64_t xd[] = {2, 3, 3}, md[] = {3, 3};
    smelt_tensor in[] = {opt_tensor(F64, 3, xd, x)};
    opt_node f;
    CHECK(einsum(&f, "...ii ->...i", in, 1) == SMELT_OK);
    CHECK(f.out[0].rank == 2 && f.out[0].dims[0] == 2 && f.out[0].dims[1] == 3);
    const double diag[] = {1, 5, 9, 10, 14, 18};
    OPT_EXPECT_F64(&f.out[0], diag, 6, OPT_ABS(1e-12));
    opt_fini(&f);
    smelt_tensor m[] = {opt_tensor(F64, 2, md, x)};
    CHECK(einsum(&f, "ii", m, 1) == SMELT_OK);
    CHECK(f.out[0].rank == 0);
    const double trace[] = {15};
    OPT_EXPECT_F64(&f.out[0], trace, 1, OPT_ABS(1e-12));
    opt_fini(&f);
}

static void test_einsum_binary(void)
{
    const double a[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const int64_t vd[] = {3}, ad[] = {2, 2, 3}, bd[] = {2, 3, 2};
    opt_node f;
    smelt_tensor dot[] = {opt_tensor(F64, 1, vd, a), opt_tensor(F64, 1, vd, a)};
    CHECK(einsum(&f, "i,i", dot, 2) == SMELT_OK);
    const double d[] = {14};
    OPT_EXPECT_F64(&f.out[0], d, 1, OPT_ABS(1e-12));
    opt_fini(&f);
    smelt_tensor bmm[] = {opt_tensor(F64, 3, ad, a), opt_tensor(F64, 3, bd, a)};
    CHECK(einsum(&f, "bij, bjk -> bik", bmm, 2) == SMELT_OK);
    CHECK(f.out[0].rank == 3 && f.out[0].dims[0] == 2 && f.out[0].dims[1] == 2 &&
          f.out[0].dims[2] == 2);
    for (int bi = 0; bi < 2; bi++) {
        float af[6], bf[6];
        double ref[4];
        for (int e = 0; e < 6; e++) af[e] = (float)a[bi * 6 + e], bf[e] = (float)a[bi * 6 + e];
        ref_matmul(af, bf, ref, 2, 2, 3, false, false);
        smelt_tensor batch = opt_vec(F64, 4, (double *)f.out[0].data + bi * 4);
        OPT_EXPECT_F64(&batch, ref, 4, OPT_ABS(1e-12));
    }
    opt_fini(&f);
    /* implicit output of a matrix product: "ij,jk" -> "ik" */
    const int64_t md[] = {2, 3}, nd[] = {3, 2};
    smelt_tensor mm[] = {opt_tensor(F64, 2, md, a), opt_tensor(F64, 2, nd, a)};
    CHECK(einsum(&f, "ij,jk", mm, 2) == SMELT_OK);
    const double mmw[] = {22, 28, 49, 64};
    OPT_EXPECT_F64(&f.out[0], mmw, 4, OPT_ABS(1e-12));
    opt_fini(&f);
}

/* Ellipsis dims broadcast like numpy; float32 and int32 work too. */
static void test_einsum_broadcast_and_dtypes(void)
{
    const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20};
    const int64_t ad[] = {3, 2}, bd[] = {1, 2};
    smelt_tensor in[] = {opt_tensor(F32, 2, ad, a), opt_tensor(F32, 2, bd, b)};
    opt_node f;
    CHECK(einsum(&f, "...i,...i->...", in, 2) == SMELT_OK);
    CHECK(f.out[0].rank == 1 && f.out[0].dims[0] == 3);
    const float want[] = {50, 110, 170};
    OPT_EXPECT_F32(&f.out[0], want, 3, OPT_ABS(0));
    opt_fini(&f);
    const int32_t ai[] = {1, 2, 3, 4};
    const int64_t id[] = {2, 2};
    smelt_tensor ini[] = {opt_tensor(I32, 2, id, ai)};
    CHECK(einsum(&f, "ij->", ini, 1) == SMELT_OK);
    CHECK(f.out[0].dtype == I32 && ((int32_t *)f.out[0].data)[0] == 10);
    opt_fini(&f);
}

static void test_einsum_errors(void)
{
    const double x[6] = {0};
    const int64_t xd[] = {2, 3}, yd[] = {2, 2};
    smelt_tensor one[] = {opt_tensor(F64, 2, xd, x)};
    smelt_tensor two[] = {opt_tensor(F64, 2, xd, x), opt_tensor(F64, 2, yd, x)};
    opt_node f;
    CHECK(einsum(&f, "ij,jk->ik", one, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "has 2 input terms but the node has 1 inputs");
    opt_fini(&f);
    CHECK(einsum(&f, "i$j", one, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "unexpected character '$' at position 1");
    opt_fini(&f);
    CHECK(einsum(&f, "ij->k", one, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "output subscript 'k' appears in no input");
    opt_fini(&f);
    CHECK(einsum(&f, "ijk->i", one, 1) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "input 'in0' has rank 2 but its equation term");
    opt_fini(&f);
    CHECK(einsum(&f, "ij,jk->ik", two, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "subscript 'j' has size 2 here but 3 elsewhere");
    opt_fini(&f);
    CHECK(einsum(&f, "i..j", one, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "is not part of '...'");
    opt_fini(&f);
}

int main(void)
{
    CHECK(op_get(OP_MATMUL)->def == &op_def_MATMUL);
    CHECK(op_get(OP_GEMM)->def == &op_def_GEMM);
    CHECK(op_get(OP_EINSUM)->def == &op_def_EINSUM);
    test_matmul_2d();
    test_matmul_random_vs_reference();
    test_matmul_vectors();
    test_matmul_batch_broadcast();
    test_matmul_int32_and_double();
    test_matmul_errors();
    test_matmul_symbolic_infer();
    test_gemm_variants();
    test_gemm_int64();
    test_gemm_errors();
    test_einsum_unary();
    test_einsum_diagonal_and_trace();
    test_einsum_binary();
    test_einsum_broadcast_and_dtypes();
    test_einsum_errors();
    TEST_MAIN_END();
}
