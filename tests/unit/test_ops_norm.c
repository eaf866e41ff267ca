/* Unit tests of the norm family: BatchNormalization, InstanceNormalization,
 * LayerNormalization, Softmax, LogSoftmax (import, infer, eval, errors). */
#include "op_test_util.h"
#include "ops/norm.h"

/* The registry must hand out exactly these definitions. */
extern const op_def op_def_BATCH_NORMALIZATION;
extern const op_def op_def_INSTANCE_NORMALIZATION;
extern const op_def op_def_LAYER_NORMALIZATION;
extern const op_def op_def_SOFTMAX;
extern const op_def op_def_LOG_SOFTMAX;

/* ---- Softmax / LogSoftmax ---- */

static void test_softmax_last_axis(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_SOFTMAX, 13, 1, 1);
    const int64_t dims[] = {2, 3};
    const float x[] = {1, 2, 3, 1000, 1001, 1002};
    smelt_tensor in[] = {opt_tensor(F32, 2, dims, x)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    const float want[] = {0.09003057f, 0.24472847f, 0.66524096f,
                          0.09003057f, 0.24472847f, 0.66524096f};
    OPT_EXPECT_F32(&f.out[0], want, 6, OPT_ABS(1e-6));
    opt_fini(&f);
}

static void test_softmax_axis0_strided(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_SOFTMAX, 13, 1, 1);
    opt_attr_int(&f, "axis", 0);
    const int64_t dims[] = {2, 2};
    const float x[] = {0, 1, 0, 3};
    smelt_tensor in[] = {opt_tensor(F32, 2, dims, x)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    const float want[] = {0.5f, 0.11920292f, 0.5f, 0.88079708f};
    OPT_EXPECT_F32(&f.out[0], want, 4, OPT_ABS(1e-6));
    opt_fini(&f);
}

/* Opset < 13: the default axis is 1 and everything from it on is one row. */
static void test_softmax_coerced_2d(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_SOFTMAX, 11, 1, 1);
    const int64_t dims[] = {2, 2, 2};
    const float x[] = {0, 0, 0, 0, 1, 1, 1, 1};
    smelt_tensor in[] = {opt_tensor(F32, 3, dims, x)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    for (int i = 0; i < 8; i++) CHECK_NEAR(((float *)f.out[0].data)[i], 0.25, 1e-7);
    opt_fini(&f);
}

static void test_log_softmax_double(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_LOG_SOFTMAX, 13, 1, 1);
    const int64_t dims[] = {3};
    const double x[] = {1, 2, 3};
    smelt_tensor in[] = {opt_tensor(F64, 1, dims, x)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    CHECK(f.out[0].dtype == F64);
    const double *y = f.out[0].data;
    double lse = log(exp(1.0) + exp(2.0) + exp(3.0));
    for (int i = 0; i < 3; i++) CHECK_NEAR(y[i], x[i] - lse, 1e-12);
    opt_fini(&f);
}

static void test_softmax_bad_axis(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_SOFTMAX, 13, 1, 1);
    opt_attr_int(&f, "axis", 2);
    const int64_t dims[] = {2, 3};
    const float x[6] = {0};
    smelt_tensor in[] = {opt_tensor(F32, 2, dims, x)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "node 'n0' (Softmax): axis 2 is out of range");
    opt_fini(&f);
}

static void test_softmax_int_rejected(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_SOFTMAX, 13, 1, 1);
    const int64_t dims[] = {2};
    const int32_t x[2] = {0};
    smelt_tensor in[] = {opt_tensor(I32, 1, dims, x)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "input 'in0' has unsupported dtype");
    opt_fini(&f);
}

static void test_softmax_empty(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_SOFTMAX, 13, 1, 1);
    const int64_t dims[] = {0, 3};
    smelt_tensor in[] = {opt_tensor(F32, 2, dims, NULL)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    CHECK(f.out[0].rank == 2 && f.out[0].dims[0] == 0 && f.out[0].dims[1] == 3);
    opt_fini(&f);
}

/* ---- LayerNormalization ---- */

static void test_layernorm_outputs(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_LAYER_NORMALIZATION, 17, 3, 3);
    const int64_t xd[] = {2, 3}, pd[] = {3};
    const float x[] = {1, 2, 3, 4, 4, 4}, w[] = {1, 2, 3}, b[] = {0, 0, 1};
    smelt_tensor in[] = {opt_tensor(F32, 2, xd, x), opt_tensor(F32, 1, pd, w),
                         opt_tensor(F32, 1, pd, b)};
    opt_attr_float(&f, "epsilon", 0.5f);
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    double inv0 = 1.0 / sqrt(2.0 / 3.0 + 0.5), inv1 = 1.0 / sqrt(0.5);
    const float want[] = {(float)(-inv0), 0.0f, (float)(3 * inv0 + 1), 0, 0, 1};
    OPT_EXPECT_F32(&f.out[0], want, 6, OPT_ABS(1e-6));
    CHECK(f.out[1].rank == 2 && f.out[1].dims[0] == 2 && f.out[1].dims[1] == 1);
    CHECK(f.out[1].dtype == F32);
    const float mean[] = {2, 4}, inv[] = {(float)inv0, (float)inv1};
    OPT_EXPECT_F32(&f.out[1], mean, 2, OPT_ABS(1e-6));
    OPT_EXPECT_F32(&f.out[2], inv, 2, OPT_ABS(1e-6));
    opt_fini(&f);
}

/* Axis 0 normalises everything; scale broadcasts from a smaller rank. */
static void test_layernorm_axis0_broadcast_scale(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_LAYER_NORMALIZATION, 17, 2, 1);
    opt_attr_int(&f, "axis", 0);
    opt_attr_float(&f, "epsilon", 0.0f);
    const int64_t xd[] = {2, 2}, pd[] = {2};
    const float x[] = {1, 1, 3, 3}, w[] = {1, 10};
    smelt_tensor in[] = {opt_tensor(F32, 2, xd, x), opt_tensor(F32, 1, pd, w)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    const float want[] = {-1, -10, 1, 10};
    OPT_EXPECT_F32(&f.out[0], want, 4, OPT_ABS(1e-6));
    opt_fini(&f);
}

static void test_layernorm_bad_scale(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_LAYER_NORMALIZATION, 17, 2, 1);
    const int64_t xd[] = {2, 3}, pd[] = {4};
    const float x[6] = {0}, w[4] = {0};
    smelt_tensor in[] = {opt_tensor(F32, 2, xd, x), opt_tensor(F32, 1, pd, w)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx),
                       "input 'in1' of shape (4) does not broadcast to the normalized shape (3)");
    opt_fini(&f);
}

static void test_layernorm_symbolic_infer(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_LAYER_NORMALIZATION, 17, 2, 2);
    const op_def *def = op_get(OP_LAYER_NORMALIZATION)->def;
    CHECK(def->import(f.ctx, f.g, f.node) == SMELT_OK);
    const int64_t xd[] = {GR_DIM_SYM(0), 768}, pd[] = {768};
    smelt_tensor x = opt_tensor(F32, 2, xd, NULL);
    smelt_tensor w = opt_tensor(F32, 1, pd, NULL);
    const smelt_tensor *in[] = {&x, &w};
    CHECK(def->infer(f.ctx, f.node, in, f.out) == SMELT_OK);
    CHECK(f.out[0].dims[0] == GR_DIM_SYM(0) && f.out[0].dims[1] == 768);
    CHECK(f.out[1].dims[0] == GR_DIM_SYM(0) && f.out[1].dims[1] == 1);
    opt_fini(&f);
}

/* ---- BatchNormalization ---- */

static void test_batchnorm_inference(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_BATCH_NORMALIZATION, 15, 5, 1);
    opt_attr_float(&f, "epsilon", 0.0f);
    const int64_t xd[] = {1, 2, 1, 2}, pd[] = {2};
    const float x[] = {1, 2, 3, 5}, s[] = {2, 1}, b[] = {1, 0}, m[] = {1, 4}, v[] = {4, 1};
    smelt_tensor in[] = {opt_tensor(F32, 4, xd, x), opt_tensor(F32, 1, pd, s),
                         opt_tensor(F32, 1, pd, b), opt_tensor(F32, 1, pd, m),
                         opt_tensor(F32, 1, pd, v)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    const float want[] = {1, 2, -1, 1};
    OPT_EXPECT_F32(&f.out[0], want, 4, OPT_ABS(1e-6));
    opt_fini(&f);
}

static void test_batchnorm_training(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_BATCH_NORMALIZATION, 15, 5, 3);
    opt_attr_int(&f, "training_mode", 1);
    opt_attr_float(&f, "epsilon", 0.0f);
    opt_attr_float(&f, "momentum", 0.5f);
    const int64_t xd[] = {2, 1, 2}, pd[] = {1};
    const float x[] = {1, 3, 1, 3}, s[] = {1}, b[] = {0}, m[] = {0}, v[] = {3};
    smelt_tensor in[] = {opt_tensor(F32, 3, xd, x), opt_tensor(F32, 1, pd, s),
                         opt_tensor(F32, 1, pd, b), opt_tensor(F32, 1, pd, m),
                         opt_tensor(F32, 1, pd, v)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    const float want[] = {-1, 1, -1, 1}, rm[] = {1}, rv[] = {2};
    OPT_EXPECT_F32(&f.out[0], want, 4, OPT_ABS(1e-6));
    OPT_EXPECT_F32(&f.out[1], rm, 1, OPT_ABS(1e-6));
    OPT_EXPECT_F32(&f.out[2], rv, 1, OPT_ABS(1e-6));
    opt_fini(&f);
}

/* Opset 7, spatial=0: one parameter per (channel, position). */
static void test_batchnorm_per_activation(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_BATCH_NORMALIZATION, 7, 5, 1);
    opt_attr_int(&f, "spatial", 0);
    opt_attr_float(&f, "epsilon", 0.0f);
    const int64_t xd[] = {1, 1, 2}, pd[] = {1, 2};
    const float x[] = {5, 5}, s[] = {1, 2}, b[] = {0, 0}, m[] = {4, 3}, v[] = {1, 4};
    smelt_tensor in[] = {opt_tensor(F32, 3, xd, x), opt_tensor(F32, 2, pd, s),
                         opt_tensor(F32, 2, pd, b), opt_tensor(F32, 2, pd, m),
                         opt_tensor(F32, 2, pd, v)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    const float want[] = {1, 2};
    OPT_EXPECT_F32(&f.out[0], want, 2, OPT_ABS(1e-6));
    opt_fini(&f);
}

static void test_batchnorm_double(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_BATCH_NORMALIZATION, 9, 5, 1);
    opt_attr_float(&f, "epsilon", 0.0f);
    const int64_t xd[] = {2, 1}, pd[] = {1};
    const double x[] = {3, 5}, s[] = {2}, b[] = {1}, m[] = {1}, v[] = {4};
    smelt_tensor in[] = {opt_tensor(F64, 2, xd, x), opt_tensor(F64, 1, pd, s),
                         opt_tensor(F64, 1, pd, b), opt_tensor(F64, 1, pd, m),
                         opt_tensor(F64, 1, pd, v)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    CHECK_NEAR(((double *)f.out[0].data)[0], 3.0, 1e-12);
    CHECK_NEAR(((double *)f.out[0].data)[1], 5.0, 1e-12);
    opt_fini(&f);
}

static void test_batchnorm_bad_param(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_BATCH_NORMALIZATION, 15, 5, 1);
    const int64_t xd[] = {1, 2, 2}, pd[] = {2}, bad[] = {3};
    const float x[4] = {0}, p[3] = {0};
    smelt_tensor in[] = {opt_tensor(F32, 3, xd, x), opt_tensor(F32, 1, pd, p),
                         opt_tensor(F32, 1, bad, p), opt_tensor(F32, 1, pd, p),
                         opt_tensor(F32, 1, pd, p)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx),
                       "input 'in2' has 3 elements, expected 2 (the channels of X)");
    opt_fini(&f);
}

static void test_batchnorm_old_training_outputs(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_BATCH_NORMALIZATION, 9, 5, 3);
    CHECK(op_get(OP_BATCH_NORMALIZATION)->def->import(f.ctx, f.g, f.node) ==
          SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "training outputs");
    opt_fini(&f);
}

/* ---- InstanceNormalization ---- */

static void test_instancenorm(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_INSTANCE_NORMALIZATION, 6, 3, 1);
    opt_attr_float(&f, "epsilon", 0.0f);
    const int64_t xd[] = {2, 1, 2}, pd[] = {1};
    const float x[] = {1, 3, 10, 30}, s[] = {2}, b[] = {1};
    smelt_tensor in[] = {opt_tensor(F32, 3, xd, x), opt_tensor(F32, 1, pd, s),
                         opt_tensor(F32, 1, pd, b)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    const float want[] = {-1, 3, -1, 3};
    OPT_EXPECT_F32(&f.out[0], want, 4, OPT_ABS(1e-6));
    opt_fini(&f);
}

/* ---- GroupNormalization, LpNormalization (added for issue #14) ---- */

static void test_groupnorm(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_GROUP_NORMALIZATION, 21, 3, 1);
    opt_attr_float(&f, "epsilon", 0.0f);
    opt_attr_int(&f, "num_groups", 2);
    /* N=1, C=4, one element per channel: groups {1, 3} and {10, 30} */
    const int64_t xd[] = {1, 4, 1}, pd[] = {4};
    const float x[] = {1, 3, 10, 30}, s[] = {1, 2, 3, 4}, b[] = {0, 0, 1, 1};
    smelt_tensor in[] = {opt_tensor(F32, 3, xd, x), opt_tensor(F32, 1, pd, s),
                         opt_tensor(F32, 1, pd, b)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_OK);
    const float want[] = {-1, 2, -2, 5};
    OPT_EXPECT_F32(&f.out[0], want, 4, OPT_ABS(1e-6));
    opt_fini(&f);

    opt_init(&f, NULL, OP_GROUP_NORMALIZATION, 21, 3, 1);
    opt_attr_int(&f, "num_groups", 3);
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "not a multiple of num_groups (3)");
    opt_fini(&f);
}

static void test_lpnorm_zero(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_LP_NORMALIZATION, 22, 1, 1);
    opt_attr_int(&f, "axis", 0);
    const int64_t xd[] = {2, 2};
    const float x[] = {3, 0, 4, 0};
    smelt_tensor in[] = {opt_tensor(F32, 2, xd, x)};
    CHECK(opt_run(&f, in, 1) == SMELT_OK);
    const float want[] = {0.6f, 0, 0.8f, 0}; /* a zero norm gives 0, as ONNX's reference */
    OPT_EXPECT_F32(&f.out[0], want, 4, OPT_ABS(1e-7));
    opt_fini(&f);
}

static void test_rmsnorm(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_RMS_NORMALIZATION, 23, 2, 1);
    opt_attr_float(&f, "epsilon", 0.0f);
    const int64_t xd[] = {2, 2}, pd[] = {2};
    const float x[] = {3, 4, -1, 1}, s[] = {1, 2};
    smelt_tensor in[] = {opt_tensor(F32, 2, xd, x), opt_tensor(F32, 1, pd, s)};
    CHECK(opt_run(&f, in, 2) == SMELT_OK);
    /* rms of (3, 4) is sqrt(12.5), of (-1, 1) is 1 */
    const float want[] = {3 / 3.5355339f, 8 / 3.5355339f, -1, 2};
    OPT_EXPECT_F32(&f.out[0], want, 4, OPT_ABS(1e-6));
    opt_fini(&f);
}

static void test_hardmax(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_HARDMAX, 13, 1, 1);
    const int64_t xd[] = {3, 3};
    /* ties take the first maximum; a NaN is the maximum (numpy's argmax) */
    const float x[] = {1, 5, 5, 2, NAN, 7, -1, -1, -3};
    smelt_tensor in[] = {opt_tensor(F32, 2, xd, x)};
    CHECK(opt_run(&f, in, 1) == SMELT_OK);
    const float want[] = {0, 1, 0, 0, 1, 0, 1, 0, 0};
    OPT_EXPECT_F32(&f.out[0], want, 9, OPT_ABS(0));
    opt_fini(&f);
}

static void test_instancenorm_rank2_rejected(void)
{
    opt_node f;
    opt_init(&f, NULL, OP_INSTANCE_NORMALIZATION, 6, 3, 1);
    const int64_t xd[] = {2, 1}, pd[] = {1};
    const float x[2] = {0}, p[1] = {0};
    smelt_tensor in[] = {opt_tensor(F32, 2, xd, x), opt_tensor(F32, 1, pd, p),
                         opt_tensor(F32, 1, pd, p)};
    CHECK(opt_run(&f, in, SMELT_ARRAY_LEN(in)) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "input 'in0' has rank 2, expected at least 3");
    opt_fini(&f);
}

int main(void)
{
    CHECK(op_get(OP_BATCH_NORMALIZATION)->def == &op_def_BATCH_NORMALIZATION);
    CHECK(op_get(OP_INSTANCE_NORMALIZATION)->def == &op_def_INSTANCE_NORMALIZATION);
    CHECK(op_get(OP_LAYER_NORMALIZATION)->def == &op_def_LAYER_NORMALIZATION);
    CHECK(op_get(OP_SOFTMAX)->def == &op_def_SOFTMAX);
    CHECK(op_get(OP_LOG_SOFTMAX)->def == &op_def_LOG_SOFTMAX);
    test_softmax_last_axis();
    test_softmax_axis0_strided();
    test_softmax_coerced_2d();
    test_log_softmax_double();
    test_softmax_bad_axis();
    test_softmax_int_rejected();
    test_softmax_empty();
    test_layernorm_outputs();
    test_layernorm_axis0_broadcast_scale();
    test_layernorm_bad_scale();
    test_layernorm_symbolic_infer();
    test_batchnorm_inference();
    test_batchnorm_training();
    test_batchnorm_per_activation();
    test_batchnorm_double();
    test_batchnorm_bad_param();
    test_batchnorm_old_training_outputs();
    test_instancenorm();
    test_groupnorm();
    test_lpnorm_zero();
    test_rmsnorm();
    test_hardmax();
    test_instancenorm_rank2_rejected();
    TEST_MAIN_END();
}
