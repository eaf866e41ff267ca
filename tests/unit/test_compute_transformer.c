/* Compute definitions of Attention, RotaryEmbedding and the losses
 * (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) checked against their
 * reference kernels: te interpreter, default and random legal schedules
 * lowered to the loop IR (op_test_util.h).  Covers what the ONNX node tests
 * leave out: float64, several options at once (GQA with past cache, bool
 * mask, softcap and mode 2; nonpad lengths with causal and a sliding
 * window), bfloat16's sequential softmax sum, float16 with a float32
 * softmax, and the run-time checks of rotary positions and loss targets. */
#include "op_test_util.h"

enum {
    FILL_FLOAT,  /* floats in [-2, 2); bools at random; ints in [0, 6] */
    FILL_CLASS,  /* ints in [0, 4]: classes of C = 5, some equal to ignore_index 1 */
    FILL_POS,    /* ints in [0, 7]: positions of 8-row caches */
};

static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    (void)i;
    uint32_t r = opt_random(state);
    if (op_dtype_is_float(t->dtype)) {
        op_set_f64(t, i, 4.0 * (double)(r % 65536) / 65536.0 - 2.0);
        return;
    }
    if (t->dtype == BOOL) {
        op_set_i64(t, i, r % 4 != 0);
        return;
    }
    int64_t range = kind == FILL_CLASS ? 5 : kind == FILL_POS ? 8 : 7;
    op_set_i64(t, i, (int64_t)(r % (uint32_t)range));
}

static const opt_suite k_suite = {
    .seed = 4242,
    .fill = fill,
    .tols = OPT_TOLS_ACCUMULATE,
    .random_schedules = 3,
};

#define X2(dt, a, b) OPT_X(dt, 2, a, b)
#define X3(dt, a, b, c) OPT_X(dt, 3, a, b, c)
#define X4(dt, a, b, c, d) OPT_X(dt, 4, a, b, c, d)

static const opt_case k_attention[] = {
    {"mha 4d", OP_ATTENTION, 23, "y", 3, 0,
     {X4(F32, 2, 3, 4, 8), X4(F32, 2, 3, 6, 8), X4(F32, 2, 3, 6, 5)}, {{0}}},
    {"gqa causal scale softcap", OP_ATTENTION, 23, "y", 3, 3,
     {X4(F32, 1, 6, 5, 4), X4(F32, 1, 2, 7, 4), X4(F32, 1, 2, 7, 3)},
     {OPT_AI("is_causal", 1), OPT_AF("scale", 0.3), OPT_AF("softcap", 1.5)}},
    {"3d past bool mask mode 2", OP_ATTENTION, 23, "yyyy", 6, 3,
     {X3(F32, 2, 4, 12), X3(F32, 2, 3, 6), X3(F32, 2, 3, 10), X2(BOOL, 4, 5),
      X4(F32, 2, 2, 2, 3), X4(F32, 2, 2, 2, 5)},
     {OPT_AI("q_num_heads", 4), OPT_AI("kv_num_heads", 2), OPT_AI("qk_matmul_output_mode", 2)}},
    {"f16 float mask softmax f32 mode 3", OP_ATTENTION, 23, "y--y", 4, 2,
     {X4(F16, 2, 2, 3, 4), X4(F16, 2, 2, 5, 4), X4(F16, 2, 2, 5, 4), X3(F16, 2, 3, 5)},
     {OPT_AI("softmax_precision", 1), OPT_AI("qk_matmul_output_mode", 3)}},
    {"bf16 causal", OP_ATTENTION, 23, "y", 3, 1,
     {X4(BF16, 1, 2, 4, 8), X4(BF16, 1, 2, 9, 8), X4(BF16, 1, 2, 9, 8)}, {OPT_AI("is_causal", 1)}},
    {"nonpad causal window", OP_ATTENTION, 25, "y", 7, 3,
     {X4(F32, 3, 2, 4, 4), X4(F32, 3, 2, 6, 4), X4(F32, 3, 2, 6, 4), OPT_NONE, OPT_NONE,
      OPT_NONE, OPT_X(I64, 1, 3)},
     {OPT_AI("is_causal", 1), OPT_AI("left_window_size", 2), OPT_AI("right_window_size", 1)}},
    {"f64 3d mode 1", OP_ATTENTION, 24, "y--y", 3, 4,
     {X3(F64, 2, 3, 8), X3(F64, 2, 4, 8), X3(F64, 2, 4, 6)},
     {OPT_AI("q_num_heads", 2), OPT_AI("kv_num_heads", 2), OPT_AI("qk_matmul_output_mode", 1),
      OPT_AF("softcap", 2.0)}},
};

/* FlexAttention without modifier bodies (ai.onnx.preview 1): its stages
 * against the reference steps (exec/control.c) */
static const opt_case k_flex[] = {
    {"flex mha", OP_PREVIEW_FLEX_ATTENTION, 1, "y", 3, 0,
     {X4(F32, 2, 3, 4, 8), X4(F32, 2, 3, 6, 8), X4(F32, 2, 3, 6, 5)}, {{0}}},
    {"flex gqa scale", OP_PREVIEW_FLEX_ATTENTION, 1, "y", 3, 1,
     {X4(F32, 1, 6, 5, 4), X4(F32, 1, 2, 7, 4), X4(F32, 1, 2, 7, 3)}, {OPT_AF("scale", 0.3)}},
    {"flex f64", OP_PREVIEW_FLEX_ATTENTION, 1, "y", 3, 0,
     {X4(F64, 1, 2, 3, 4), X4(F64, 1, 2, 5, 4), X4(F64, 1, 2, 5, 6)}, {{0}}},
    {"flex f16", OP_PREVIEW_FLEX_ATTENTION, 1, "y", 3, 0,
     {X4(F16, 2, 2, 3, 4), X4(F16, 2, 2, 5, 4), X4(F16, 2, 2, 5, 4)}, {{0}}},
    {"flex bf16 softmax f64", OP_PREVIEW_FLEX_ATTENTION, 1, "y", 3, 1,
     {X4(BF16, 1, 4, 2, 8), X4(BF16, 1, 1, 9, 8), X4(BF16, 1, 1, 9, 8)},
     {OPT_AI("softmax_precision", 11)}},
};

static const opt_case k_rope[] = {
    {"rope 4d interleaved positions", OP_ROTARY_EMBEDDING, 23, "y", 4, 1,
     {X4(F32, 2, 3, 4, 8), X2(F32, 8, 4), X2(F32, 8, 4), OPT_XF(I64, FILL_POS, 2, 2, 4)},
     {OPT_AI("interleaved", 1)}},
    {"rope 3d partial", OP_ROTARY_EMBEDDING, 23, "y", 3, 2,
     {X3(F32, 2, 4, 24), X3(F32, 2, 4, 2), X3(F32, 2, 4, 2)},
     {OPT_AI("num_heads", 3), OPT_AI("rotary_embedding_dim", 4)}},
    {"rope f16", OP_ROTARY_EMBEDDING, 23, "y", 4, 0,
     {X4(F16, 1, 2, 3, 6), X2(F16, 8, 3), X2(F16, 8, 3), OPT_XF(I64, FILL_POS, 2, 1, 3)}, {{0}}},
};

#define CLASSES(...) OPT_XF(I64, FILL_CLASS, __VA_ARGS__)

static const opt_case k_loss[] = {
    {"nll none weight ignore", OP_NEGATIVE_LOG_LIKELIHOOD_LOSS, 22, "y", 3, 2,
     {X3(F32, 3, 5, 4), CLASSES(2, 3, 4), OPT_X(F32, 1, 5)},
     {OPT_AS("reduction", "none"), OPT_AI("ignore_index", 1)}},
    {"nll sum", OP_NEGATIVE_LOG_LIKELIHOOD_LOSS, 13, "y", 2, 1,
     {X4(F64, 2, 5, 3, 2), CLASSES(3, 2, 3, 2)}, {OPT_AS("reduction", "sum")}},
    {"nll mean ignore", OP_NEGATIVE_LOG_LIKELIHOOD_LOSS, 22, "y", 2, 1,
     {X2(F32, 6, 5), CLASSES(1, 6)}, {OPT_AI("ignore_index", 1)}},
    {"sce mean weight log_prob", OP_SOFTMAX_CROSS_ENTROPY_LOSS, 13, "yy", 3, 1,
     {X3(F32, 2, 5, 3), CLASSES(2, 2, 3), OPT_X(F32, 1, 5)}, {OPT_AI("ignore_index", 1)}},
    {"sce none f16", OP_SOFTMAX_CROSS_ENTROPY_LOSS, 13, "y", 2, 1,
     {X2(F16, 4, 5), CLASSES(1, 4)}, {OPT_AS("reduction", "none")}},
};

/* Targets and positions out of range fail both paths with the reference's message. */
static void test_data_errors(void)
{
    const opt_case loss = {"nll target 7 of 5 classes", OP_NEGATIVE_LOG_LIKELIHOOD_LOSS, 22, "y", 2,
                           1, {X2(F32, 3, 5), OPT_RUNTIME1(I64, 0, 7, 1)},
                           {OPT_AI("ignore_index", 1)}};
    opt_check_data_error(&k_suite, &loss, "target 7 at position 1 is out of range for 5 classes");
    const opt_case ignored = {"nll target -3 ignored", OP_NEGATIVE_LOG_LIKELIHOOD_LOSS, 22, "y", 2,
                              1, {X2(F32, 3, 5), OPT_RUNTIME1(I64, 0, -3, 4)},
                              {OPT_AI("ignore_index", -3)}};
    opt_check_case(&k_suite, &ignored);
    const opt_case rope = {"rope position 9 of 8", OP_ROTARY_EMBEDDING, 23, "y", 4, 0,
                           {X4(F32, 1, 1, 2, 4), X2(F32, 8, 2), X2(F32, 8, 2),
                            OPT_RUNTIME(I64, OPT_VALS(3, 9), 2, 1, 2)},
                           {{0}}};
    opt_check_data_error(&k_suite, &rope, "index 9 at position 1 is out of range for axis 0 of size 8");
}

int main(void)
{
    opt_check_family_defined("attention");
    opt_check_family_defined("loss");
    opt_check_cases(&k_suite, k_attention, SMELT_ARRAY_LEN(k_attention));
    opt_check_cases(&k_suite, k_flex, SMELT_ARRAY_LEN(k_flex));
    opt_check_cases(&k_suite, k_rope, SMELT_ARRAY_LEN(k_rope));
    opt_check_cases(&k_suite, k_loss, SMELT_ARRAY_LEN(k_loss));
    test_data_errors();
    TEST_MAIN_END();
}
