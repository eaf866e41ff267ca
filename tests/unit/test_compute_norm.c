/* Compute definitions of the norm family checked against the reference
 * kernels: each case runs one node through exec_node (reference) and
 * exec_node_te (tensor expressions, interpreted) on pseudo-random inputs and
 * compares every output.  Covers what the ONNX node tests leave out: other
 * dtypes, the opset < 13 softmax form, LayerNorm's Mean/InvStdDev outputs,
 * BatchNorm's spatial=0 form.
 * Every case is also lowered under the default schedule and the suite's
 * random legal ones and run by the tir interpreter (op_test_util.h). */
#include "op_test_util.h"

enum { FILL_SIGNED, FILL_POSITIVE };

/* FILL_SIGNED: [-2, 2); FILL_POSITIVE: (0.1, 2.1), e.g. a variance. */
static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    double u = opt_uniform(state);
    op_set_f64(t, i, kind == FILL_POSITIVE ? 0.1 + 2.0 * u : 4.0 * u - 2.0);
}

/* |result - reference| <= tol * (1 + |reference|) */
static const opt_suite k_suite = {
    .seed = 12345, .fill = fill, .tols = OPT_TOLS_ACCUMULATE, .random_schedules = 3};

#define X234(dt) OPT_X(dt, 3, 2, 3, 4)
#define AXIS(v) OPT_AI("axis", v)

static const opt_case k_softmax_cases[] = {
    {"softmax axis 0", OP_SOFTMAX, 13, "y", 1, 1, {X234(F32)}, {AXIS(0)}},
    {"softmax axis 1", OP_SOFTMAX, 13, "y", 1, 1, {X234(F32)}, {AXIS(1)}},
    {"softmax default axis", OP_SOFTMAX, 13, "y", 1, 0, {X234(F32)}, {{0}}},
    {"softmax axis -2 f64", OP_SOFTMAX, 13, "y", 1, 1, {X234(F64)}, {AXIS(-2)}},
    {"softmax f16", OP_SOFTMAX, 13, "y", 1, 0, {X234(F16)}, {{0}}},
    {"softmax bf16", OP_SOFTMAX, 13, "y", 1, 0, {X234(BF16)}, {{0}}},
    {"softmax 1-D", OP_SOFTMAX, 13, "y", 1, 0, {OPT_X(F32, 1, 7)}, {{0}}},
    {"softmax 2-D form axis 0", OP_SOFTMAX, 11, "y", 1, 1, {X234(F32)}, {AXIS(0)}},
    {"softmax 2-D form default", OP_SOFTMAX, 11, "y", 1, 0, {X234(F32)}, {{0}}},
    {"softmax 2-D form axis 2", OP_SOFTMAX, 11, "y", 1, 1, {X234(F32)}, {AXIS(2)}},
    {"softmax 2-D form axis = rank", OP_SOFTMAX, 11, "y", 1, 1, {X234(F32)}, {AXIS(3)}},
    {"softmax 2-D form axis -1", OP_SOFTMAX, 1, "y", 1, 1, {X234(F32)}, {AXIS(-1)}},
    {"softmax empty", OP_SOFTMAX, 13, "y", 1, 0, {OPT_X(F32, 2, 0, 3)}, {{0}}},
    {"logsoftmax axis 0", OP_LOG_SOFTMAX, 13, "y", 1, 1, {X234(F32)}, {AXIS(0)}},
    {"logsoftmax default f16", OP_LOG_SOFTMAX, 13, "y", 1, 0, {X234(F16)}, {{0}}},
    {"logsoftmax f64", OP_LOG_SOFTMAX, 13, "y", 1, 1, {X234(F64)}, {AXIS(1)}},
    {"logsoftmax 2-D form", OP_LOG_SOFTMAX, 9, "y", 1, 1, {X234(F32)}, {AXIS(1)}},
    /* rows of 2+ vectors (8 lanes) with a partial one: rfactor with a tail */
    {"softmax long rows", OP_SOFTMAX, 13, "y", 1, 0, {OPT_X(F32, 2, 3, 37)}, {{0}}},
    {"softmax long rows, exact vectors", OP_SOFTMAX, 13, "y", 1, 0, {OPT_X(F32, 3, 2, 2, 32)}, {{0}}},
    {"softmax 2-D form, long rows", OP_SOFTMAX, 11, "y", 1, 1, {OPT_X(F32, 3, 2, 3, 7)}, {AXIS(1)}},
    {"logsoftmax long rows", OP_LOG_SOFTMAX, 13, "y", 1, 0, {OPT_X(F32, 3, 2, 2, 41)}, {{0}}},
};

#define EPS(v) OPT_AF("epsilon", v)
#define STASH(v) OPT_AI("stash_type", v)

static const opt_case k_layernorm_cases[] = {
    {"layernorm default", OP_LAYER_NORMALIZATION, 17, "y", 3, 0,
     {X234(F32), OPT_X(F32, 1, 4), OPT_X(F32, 1, 4)}, {{0}}},
    {"layernorm axis 1, all outputs", OP_LAYER_NORMALIZATION, 17, "yyy", 3, 2,
     {X234(F32), OPT_X(F32, 2, 3, 4), OPT_X(F32, 2, 3, 4)}, {AXIS(1), EPS(0.1)}},
    {"layernorm axis 0, no bias", OP_LAYER_NORMALIZATION, 17, "yyy", 2, 1,
     {X234(F32), OPT_X(F32, 3, 2, 3, 4)}, {AXIS(0)}},
    {"layernorm broadcast scale", OP_LAYER_NORMALIZATION, 17, "y", 3, 1,
     {X234(F32), OPT_X(F32, 2, 1, 4), OPT_X(F32, 1, 1)}, {AXIS(-2)}},
    {"layernorm f16, float32 stash", OP_LAYER_NORMALIZATION, 17, "yyy", 3, 0,
     {X234(F16), OPT_X(F16, 1, 4), OPT_X(F16, 1, 4)}, {{0}}},
    {"layernorm bf16", OP_LAYER_NORMALIZATION, 17, "y", 3, 0,
     {X234(BF16), OPT_X(BF16, 1, 4), OPT_X(BF16, 1, 4)}, {{0}}},
    {"layernorm f64", OP_LAYER_NORMALIZATION, 17, "yyy", 3, 1,
     {X234(F64), OPT_X(F64, 1, 4), OPT_X(F64, 1, 4)}, {STASH(11)}},
    {"layernorm float64 stash", OP_LAYER_NORMALIZATION, 17, "yyy", 3, 1,
     {X234(F32), OPT_X(F32, 1, 4), OPT_X(F32, 1, 4)}, {STASH(11)}},
    {"layernorm long rows", OP_LAYER_NORMALIZATION, 17, "yyy", 3, 0,
     {OPT_X(F32, 2, 3, 45), OPT_X(F32, 1, 45), OPT_X(F32, 1, 45)}, {{0}}},
    {"layernorm bias omitted in the middle", OP_LAYER_NORMALIZATION, 17, "yy", 3, 0,
     {X234(F32), OPT_X(F32, 1, 4), OPT_NONE}, {{0}}},
};

/* per channel; VAR3 positive (a variance) */
#define C3(dt) OPT_X(dt, 1, 3)
#define VAR3(dt) OPT_XF(dt, FILL_POSITIVE, 1, 3)

static const opt_case k_instance_batch_cases[] = {
    {"instancenorm", OP_INSTANCE_NORMALIZATION, 6, "y", 3, 1,
     {OPT_X(F32, 4, 2, 3, 4, 5), C3(F32), C3(F32)}, {EPS(0.01)}},
    {"instancenorm 3-D f16", OP_INSTANCE_NORMALIZATION, 6, "y", 3, 0,
     {X234(F16), C3(F16), C3(F16)}, {{0}}},
    {"instancenorm f64", OP_INSTANCE_NORMALIZATION, 6, "y", 3, 0,
     {X234(F64), C3(F64), C3(F64)}, {{0}}},
    {"batchnorm", OP_BATCH_NORMALIZATION, 15, "y", 5, 1,
     {OPT_X(F32, 4, 2, 3, 4, 5), C3(F32), C3(F32), C3(F32),
      VAR3(F32)},
     {EPS(0.01)}},
    {"batchnorm rank 2", OP_BATCH_NORMALIZATION, 15, "y", 5, 0,
     {OPT_X(F32, 2, 4, 3), C3(F32), C3(F32), C3(F32), VAR3(F32)},
     {{0}}},
    {"batchnorm f16 x, float32 parameters", OP_BATCH_NORMALIZATION, 15, "y", 5, 0,
     {X234(F16), C3(F32), C3(F32), C3(F32), VAR3(F32)}, {{0}}},
    {"batchnorm f64", OP_BATCH_NORMALIZATION, 15, "y", 5, 0,
     {X234(F64), C3(F64), C3(F64), C3(F64), VAR3(F64)}, {{0}}},
    {"batchnorm spatial=0", OP_BATCH_NORMALIZATION, 7, "y", 5, 1,
     {X234(F32), OPT_X(F32, 2, 3, 4), OPT_X(F32, 2, 3, 4), OPT_X(F32, 2, 3, 4),
      OPT_XF(F32, FILL_POSITIVE, 2, 3, 4)},
     {OPT_AI("spatial", 0)}},
    {"batchnorm training, running stats", OP_BATCH_NORMALIZATION, 15, "yyy", 5, 2,
     {OPT_X(F32, 4, 2, 3, 4, 5), C3(F32), C3(F32), C3(F32),
      VAR3(F32)},
     {OPT_AI("training_mode", 1), OPT_AF("momentum", 0.8)}},
    {"batchnorm spatial=0, per-channel parameters", OP_BATCH_NORMALIZATION, 7, "y", 5, 1,
     {X234(F32), C3(F32), C3(F32), C3(F32), VAR3(F32)},
     {OPT_AI("spatial", 0)}},
};

/* GroupNormalization, MeanVarianceNormalization, LpNormalization */
static const opt_case k_group_mvn_lp_cases[] = {
    {"groupnorm 2 groups of 2 channels", OP_GROUP_NORMALIZATION, 21, "y", 3, 2,
     {OPT_X(F32, 4, 2, 4, 3, 5), OPT_X(F32, 1, 4), OPT_X(F32, 1, 4)},
     {OPT_AI("num_groups", 2), EPS(0.01)}},
    {"groupnorm 1 group, 3-D f16", OP_GROUP_NORMALIZATION, 21, "y", 3, 1,
     {X234(F16), C3(F16), C3(F16)}, {OPT_AI("num_groups", 1)}},
    {"groupnorm one channel per group f64", OP_GROUP_NORMALIZATION, 21, "y", 3, 1,
     {X234(F64), C3(F64), C3(F64)}, {OPT_AI("num_groups", 3)}},
    {"groupnorm-18 per-group parameters", OP_GROUP_NORMALIZATION, 18, "y", 3, 1,
     {OPT_X(F32, 4, 1, 6, 2, 2), OPT_X(F32, 1, 2), OPT_X(F32, 1, 2)},
     {OPT_AI("num_groups", 2)}},
    {"mvn default axes", OP_MEAN_VARIANCE_NORMALIZATION, 13, "y", 1, 0,
     {OPT_X(F32, 4, 2, 3, 4, 5)}, {{0}}},
    {"mvn axes 1 and 3, f16", OP_MEAN_VARIANCE_NORMALIZATION, 13, "y", 1, 1,
     {OPT_X(F16, 4, 2, 3, 4, 2)}, {OPT_AINTS("axes", 2, 1, -1)}},
    {"mvn last axis f64", OP_MEAN_VARIANCE_NORMALIZATION, 9, "y", 1, 1,
     {X234(F64)}, {OPT_AINTS("axes", 1, 2)}},
    {"lpnorm p=2 last axis", OP_LP_NORMALIZATION, 22, "y", 1, 0, {X234(F32)}, {{0}}},
    {"lpnorm p=1 axis 0, f16", OP_LP_NORMALIZATION, 1, "y", 1, 2, {X234(F16)},
     {AXIS(0), OPT_AI("p", 1)}},
    {"lpnorm p=2 axis 1 f64", OP_LP_NORMALIZATION, 22, "y", 1, 2, {X234(F64)},
     {AXIS(1), OPT_AI("p", 2)}},
    {"hardmax last axis", OP_HARDMAX, 13, "y", 1, 0, {X234(F32)}, {{0}}},
    {"hardmax axis 0 f16", OP_HARDMAX, 13, "y", 1, 1, {X234(F16)}, {AXIS(0)}},
    {"hardmax-11 2-D form, axis 1, f64", OP_HARDMAX, 11, "y", 1, 0, {X234(F64)}, {{0}}},
    {"rmsnorm last axis", OP_RMS_NORMALIZATION, 23, "y", 2, 0,
     {X234(F32), OPT_X(F32, 1, 4)}, {{0}}},
    {"rmsnorm axis 1, broadcast scale, f16", OP_RMS_NORMALIZATION, 23, "y", 2, 2,
     {X234(F16), OPT_X(F16, 2, 1, 4)}, {AXIS(1), EPS(0.1)}},
    {"rmsnorm f64 stash", OP_RMS_NORMALIZATION, 23, "y", 2, 1,
     {X234(F32), OPT_X(F32, 1, 4)}, {OPT_AI("stash_type", 11)}},
};

int main(void)
{
    opt_check_cases(&k_suite, k_group_mvn_lp_cases, SMELT_ARRAY_LEN(k_group_mvn_lp_cases));
    opt_check_cases(&k_suite, k_softmax_cases, SMELT_ARRAY_LEN(k_softmax_cases));
    opt_check_cases(&k_suite, k_layernorm_cases, SMELT_ARRAY_LEN(k_layernorm_cases));
    opt_check_cases(&k_suite, k_instance_batch_cases, SMELT_ARRAY_LEN(k_instance_batch_cases));
    TEST_MAIN_END();
}
