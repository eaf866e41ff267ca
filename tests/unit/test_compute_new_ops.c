/* BitCast, SwiGLU, TensorScatter, MaxUnpool, CausalConvWithState and
 * TfIdfVectorizer:
 * compute definitions against
 * reference kernels (te interpreter, default and random schedules:
 * op_test_util.h), the references against values worked out by hand, and
 * the refusals (types, windows, write indices) naming node and op;
 * LinearAttention's reference by hand and its compiled recurrence against
 * the reference (float32 state against double: accumulating tolerances). */
#include "op_test_util.h"

/* Floats in [-4, 4); integers of kind 0 small, kind 1 spread over the
 * 32-bit range (bit patterns), kind 2 MaxPool-style indices (set by the
 * case's values instead). */
static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    double u = opt_uniform(state);
    if (op_dtype_is_float(t->dtype)) op_set_f64(t, i, 8.0 * u - 4.0);
    else if (t->dtype == BOOL) op_set_i64(t, i, u < 0.5);
    else if (kind == 1) op_set_i64(t, i, (int64_t)opt_random(state) - 0x7fffffff);
    else op_set_i64(t, i, (int64_t)floor(200.0 * u) - (t->dtype == U8 || t->dtype == U16 ? 0 : 100));
}

static const opt_suite k_suite = {
    .seed = 2628,
    .fill = fill,
    .tols = {.f32 = {1e-6, 1e-6}, .f64 = {1e-12, 1e-12}, .f16 = {2e-3, 2e-3}, .bf16 = {1e-2, 1e-2}},
    .random_schedules = 2,
};

#define X OPT_X
#define AI OPT_AI
#define AF OPT_AF
#define AS OPT_AS
#define AINTS OPT_AINTS
#define AFLOATS OPT_AFLOATS

static const opt_case k_cases[] = {
    {"bitcast f32 -> i32", OP_BIT_CAST, 26, "y", 1, 1, {X(F32, 2, 3, 5)}, {AI("to", 6)}},
    {"bitcast i32 bits -> f32", OP_BIT_CAST, 26, "y", 1, 1,
     {OPT_XF(I32, 1, 2, 4, 4)}, {AI("to", 1)}},
    {"bitcast f64 -> u64", OP_BIT_CAST, 26, "y", 1, 1, {X(F64, 1, 7)}, {AI("to", 13)}},
    {"bitcast i8 -> u8", OP_BIT_CAST, 26, "y", 1, 1, {X(I8, 1, 9)}, {AI("to", 2)}},
    {"bitcast bool -> u8", OP_BIT_CAST, 26, "y", 1, 1, {X(BOOL, 2, 2, 3)}, {AI("to", 2)}},
    {"bitcast u8 -> bool", OP_BIT_CAST, 26, "y", 1, 1, {X(U8, 1, 8)}, {AI("to", 9)}},
    {"swiglu f32", OP_SWIGLU, 28, "y", 2, 0, {X(F32, 3, 2, 3, 4), X(F32, 3, 2, 3, 4)}, {{0}}},
    {"swiglu alpha f16", OP_SWIGLU, 28, "y", 2, 1, {X(F16, 2, 4, 6), X(F16, 2, 4, 6)},
     {AF("alpha", 1.702)}},
    {"swiglu f64", OP_SWIGLU, 28, "y", 2, 1, {X(F64, 1, 9), X(F64, 1, 9)}, {AF("alpha", 0.5)}},
    {"tensorscatter prefill, no indices", OP_TENSOR_SCATTER, 24, "y", 2, 0,
     {X(F32, 4, 2, 3, 8, 4), X(F32, 4, 2, 3, 5, 4)}, {{0}}},
    {"tensorscatter linear, run-time indices", OP_TENSOR_SCATTER, 24, "y", 3, 0,
     {X(F32, 4, 3, 2, 6, 4), X(F32, 4, 3, 2, 2, 4), OPT_RUNTIME1(I64, 0, 4, 2)}, {{0}}},
    {"tensorscatter circular wraps, axis 1", OP_TENSOR_SCATTER, 24, "y", 3, 2,
     {X(I32, 3, 2, 5, 3), X(I32, 3, 2, 3, 3), OPT_RUNTIME1(I64, 4, 7)},
     {AI("axis", 1), AS("mode", "circular")}},
    {"maxunpool 2-D", OP_MAX_UNPOOL, 22, "y", 2, 2,
     {X(F32, 4, 1, 2, 2, 2), OPT_RUNTIME(I64, OPT_VALS(5, 7, 13, 15, 16, 19, 28, 30), 4, 1, 2, 2, 2)},
     {AINTS("kernel_shape", 2, 2, 2), AINTS("strides", 2, 2, 2)}},
    /* overlapping 3-wide windows, stride 2, pads: two values may share a
     * position (the later one wins) */
    {"maxunpool 1-D overlapping, pads", OP_MAX_UNPOOL, 11, "y", 2, 3,
     {X(F64, 3, 1, 1, 4), OPT_RUNTIME(I64, OPT_VALS(0, 3, 3, 6), 3, 1, 1, 4)},
     {AINTS("kernel_shape", 1, 3), AINTS("strides", 1, 2), AINTS("pads", 2, 1, 0)}},
    {"maxunpool output_shape pads the end", OP_MAX_UNPOOL, 22, "y", 3, 2,
     {X(F32, 4, 1, 1, 2, 2), OPT_RUNTIME(I64, OPT_VALS(0, 3, 9, 14), 4, 1, 1, 2, 2),
      OPT_CONST1(I64, 2, 1, 5, 6)},
     {AINTS("kernel_shape", 2, 2, 2), AINTS("strides", 2, 2, 2)}},
    {"causal conv, no state", OP_CAUSAL_CONV_WITH_STATE, 27, "yy", 2, 0,
     {X(F32, 3, 2, 3, 7), X(F32, 3, 3, 1, 4)}, {{0}}},
    {"causal conv, bias and past, silu", OP_CAUSAL_CONV_WITH_STATE, 27, "yy", 4, 1,
     {X(F32, 3, 2, 3, 5), X(F32, 3, 3, 1, 3), X(F32, 1, 3), X(F32, 3, 2, 3, 2)},
     {AS("activation", "silu")}},
    {"causal conv, input shorter than the state, f16", OP_CAUSAL_CONV_WITH_STATE, 27, "yy", 4, 1,
     {X(F16, 3, 1, 2, 2), X(F16, 3, 2, 1, 4), OPT_NONE, X(F16, 3, 1, 2, 3)},
     {AS("activation", "swish")}},
    {"causal conv, k = 1", OP_CAUSAL_CONV_WITH_STATE, 27, "y-", 2, 0,
     {X(F32, 3, 1, 2, 4), X(F32, 3, 2, 1, 1)}, {{0}}},
};

/* LinearAttention: B 2, T 3, 4 query heads over 2 kv heads (GQA), d_k 4,
 * d_v 3; every rule, decay per head and per key dim, beta per head and
 * shared, with and without a past state, float16 inputs. */
static const opt_suite k_la_suite = {
    .seed = 2629, .fill = fill, .tols = OPT_TOLS_ACCUMULATE, .random_schedules = 2};

#define LA_QKV X(F32, 3, 2, 3, 16), X(F32, 3, 2, 3, 8), X(F32, 3, 2, 3, 6)
#define LA_HEADS AI("q_num_heads", 4), AI("kv_num_heads", 2)

static const opt_case k_la_cases[] = {
    {"linear attention linear, past", OP_LINEAR_ATTENTION, 27, "yy", 4, 3,
     {LA_QKV, X(F32, 4, 2, 2, 4, 3)}, {LA_HEADS, AS("update_rule", "linear")}},
    {"linear attention linear, no past, scale", OP_LINEAR_ATTENTION, 27, "y-", 3, 4,
     {LA_QKV}, {LA_HEADS, AS("update_rule", "linear"), AF("scale", 0.25)}},
    {"linear attention gated, decay per key dim", OP_LINEAR_ATTENTION, 27, "yy", 5, 3,
     {LA_QKV, X(F32, 4, 2, 2, 4, 3), X(F32, 3, 2, 3, 8)}, {LA_HEADS, AS("update_rule", "gated")}},
    {"linear attention delta, beta per head", OP_LINEAR_ATTENTION, 27, "yy", 6, 3,
     {LA_QKV, OPT_NONE, OPT_NONE, X(F32, 3, 2, 3, 2)}, {LA_HEADS, AS("update_rule", "delta")}},
    {"linear attention gated delta, shared beta, past", OP_LINEAR_ATTENTION, 27, "yy", 6, 3,
     {LA_QKV, X(F32, 4, 2, 2, 4, 3), X(F32, 3, 2, 3, 2), X(F32, 3, 2, 3, 1)},
     {LA_HEADS, AS("update_rule", "gated_delta")}},
    {"linear attention gated delta f16", OP_LINEAR_ATTENTION, 27, "yy", 6, 3,
     {X(F16, 3, 1, 2, 8), X(F16, 3, 1, 2, 4), X(F16, 3, 1, 2, 6), X(F16, 4, 1, 1, 4, 6),
      X(F16, 3, 1, 2, 1), X(F16, 3, 1, 2, 1)},
     {AI("q_num_heads", 2), AI("kv_num_heads", 1), AS("update_rule", "gated_delta")}},
};

/* TfIdfVectorizer: token ids in [0, 4), so the pools' n-grams occur; every
 * mode, skips, a repeated bigram (its first column counts), trigrams, a size
 * without n-grams, 1-D and 2-D input, int32 and int64. */
static void fill_tokens(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    (void)kind;
    op_set_i64(t, i, (int64_t)(4.0 * opt_uniform(state)));
}

static const opt_suite k_tfidf_suite = {.seed = 2630, .fill = fill_tokens, .tols = OPT_TOLS_ACCUMULATE};

#define TFIDF_POOL12 \
    AINTS("ngram_counts", 2, 0, 3), AINTS("ngram_indexes", 6, 0, 1, 2, 3, 4, 5), \
    AINTS("pool_int64s", 9, 0, 1, 3, 0, 1, 2, 3, 0, 1)

static const opt_case k_tfidf_cases[] = {
    {"tfidf TF, unigrams and bigrams, skip 2, repeated bigram", OP_TFIDF_VECTORIZER, 9, "y", 1, 6,
     {X(I32, 2, 3, 9)}, {AI("max_gram_length", 2), AI("max_skip_count", 2), AS("mode", "TF"),
                         TFIDF_POOL12}},
    {"tfidf IDF, bigrams only, weights", OP_TFIDF_VECTORIZER, 9, "y", 1, 8,
     {X(I64, 2, 2, 11)}, {AI("min_gram_length", 2), AI("max_gram_length", 2), AI("max_skip_count", 1),
                          AS("mode", "IDF"), TFIDF_POOL12,
                          AFLOATS("weights", 6, 0.5, 1.5, 2, 3, 0.25, 4)}},
    {"tfidf TFIDF, 1-D, no weights", OP_TFIDF_VECTORIZER, 9, "y", 1, 5,
     {X(I64, 1, 13)}, {AI("max_gram_length", 2), AS("mode", "TFIDF"), TFIDF_POOL12}},
    {"tfidf TFIDF, trigrams, no unigrams, weights", OP_TFIDF_VECTORIZER, 9, "y", 1, 7,
     {X(I32, 2, 4, 10)}, {AI("min_gram_length", 1), AI("max_gram_length", 3), AS("mode", "TFIDF"),
                          AINTS("ngram_counts", 3, 0, 0, 4), AINTS("ngram_indexes", 4, 1, 0, 3, 2),
                          AINTS("pool_int64s", 10, 0, 1, 2, 3, 0, 1, 2, 3, 0, 0),
                          AFLOATS("weights", 4, 1, 2, 3, 4)}},
};

static void test_bitcast_values(void)
{
    opt_node t;
    opt_init(&t, NULL, OP_BIT_CAST, 26, 1, 1);
    opt_attr_int(&t, "to", SMELT_DT_INT32);
    smelt_tensor x = opt_tensor(F32, 1, OPT_DIMS(3), OPT_F32S(1.0f, -2.0f, 0.0f));
    CHECK(opt_run(&t, &x, 1) == SMELT_OK);
    OPT_EXPECT_I64(&t.out[0], OPT_I64S(0x3f800000, (int64_t)(int32_t)0xc0000000u, 0), 3);
    opt_fini(&t);

    opt_init(&t, NULL, OP_BIT_CAST, 26, 1, 1);
    opt_attr_int(&t, "to", SMELT_DT_INT64);
    CHECK(opt_run(&t, &x, 1) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "node 'n0' (BitCast)");
    CHECK_STR_CONTAINS(opt_message(&t), "types of one width");
    opt_fini(&t);
}

static void test_swiglu_values(void)
{
    opt_node t;
    opt_init(&t, NULL, OP_SWIGLU, 28, 2, 1);
    smelt_tensor in[2] = {opt_tensor(F32, 1, OPT_DIMS(2), OPT_F32S(0.0f, 2.0f)),
                          opt_tensor(F32, 1, OPT_DIMS(2), OPT_F32S(5.0f, 3.0f))};
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_F32(&t.out[0], OPT_F32S(0.0f, (float)(2.0 / (1.0 + exp(-2.0)) * 3.0)), 2,
                   OPT_REL(1e-6));
    opt_fini(&t);

    opt_init(&t, NULL, OP_SWIGLU, 28, 2, 1);
    in[1] = opt_tensor(F32, 2, OPT_DIMS(1, 2), OPT_F32S(5.0f, 3.0f));
    CHECK(opt_run(&t, in, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "does not broadcast");
    opt_fini(&t);
}

/* Cache rows 0..3, two updates written at 1 (batch 0) and, circular, at 3
 * of 4 wrapping to 0 (batch 1). */
static void test_tensor_scatter_values(void)
{
    opt_node t;
    opt_init(&t, NULL, OP_TENSOR_SCATTER, 24, 3, 1);
    opt_attr_string(&t, "mode", "circular");
    opt_attr_int(&t, "axis", 1);
    smelt_tensor in[3] = {opt_tensor(F32, 2, OPT_DIMS(2, 4), OPT_F32S(0, 1, 2, 3, 4, 5, 6, 7)),
                          opt_tensor(F32, 2, OPT_DIMS(2, 2), OPT_F32S(10, 11, 12, 13)),
                          opt_vec(I64, 2, OPT_I64S(1, 3))};
    CHECK(opt_run(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_F32(&t.out[0], OPT_F32S(0, 10, 11, 3, 13, 5, 6, 12), 8, OPT_EXACT);
    opt_fini(&t);

    /* linear: 3 + 2 rows do not fit 4 */
    opt_init(&t, NULL, OP_TENSOR_SCATTER, 24, 3, 1);
    opt_attr_int(&t, "axis", 1);
    CHECK(opt_run(&t, in, 3) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(opt_message(&t), "write index 3 of batch 1 does not fit 2 rows");
    opt_fini(&t);

    opt_init(&t, NULL, OP_TENSOR_SCATTER, 24, 2, 1);
    opt_attr_int(&t, "axis", 0);
    CHECK(opt_run(&t, in, 2) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "names the batch axis");
    opt_fini(&t);
}

static void test_max_unpool_values(void)
{
    opt_node t;
    opt_init(&t, NULL, OP_MAX_UNPOOL, 22, 2, 1);
    opt_attr_ints(&t, "kernel_shape", 2, OPT_I64S(2, 2));
    opt_attr_ints(&t, "strides", 2, OPT_I64S(2, 2));
    smelt_tensor in[2] = {opt_tensor(F32, 4, OPT_DIMS(1, 1, 1, 2), OPT_F32S(5, 6)),
                          opt_tensor(I64, 4, OPT_DIMS(1, 1, 1, 2), OPT_I64S(5, 2))};
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(&t.out[0], 4, OPT_DIMS(1, 1, 2, 4));
    OPT_EXPECT_F32(&t.out[0], OPT_F32S(0, 0, 6, 0, 0, 5, 0, 0), 8, OPT_EXACT);
    opt_fini(&t);

    in[1] = opt_tensor(I64, 4, OPT_DIMS(1, 1, 1, 2), OPT_I64S(5, 8));
    opt_init(&t, NULL, OP_MAX_UNPOOL, 22, 2, 1);
    opt_attr_ints(&t, "kernel_shape", 2, OPT_I64S(2, 2));
    opt_attr_ints(&t, "strides", 2, OPT_I64S(2, 2));
    CHECK(opt_run(&t, in, 2) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(opt_message(&t), "index 8 at position 1 is outside the unpooled tensor");
    opt_fini(&t);
}

/* The compute takes MaxPool's indices only: one outside its element's
 * window is refused at run time, not dropped. */
static void test_max_unpool_window_check(void)
{
    const opt_case c = {"index outside its window", OP_MAX_UNPOOL, 22, "y", 2, 1,
                               {X(F32, 3, 1, 1, 2), OPT_RUNTIME(I64, OPT_VALS(0, 1), 3, 1, 1, 2)},
                               {AINTS("kernel_shape", 1, 1)}};
    opt_node t;
    CHECK(opt_case_init(&t, &k_suite, &c) == SMELT_OK);
    CHECK(opt_run_reference(&t) == SMELT_OK);
    smelt_tensor *ind = (smelt_tensor *)t.in[1];
    ((int64_t *)ind->data)[0] = 1; /* element 0's window is position 0 */
    ((int64_t *)ind->data)[1] = 0;
    CHECK(opt_run_te(&t) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(opt_message(&t), "index at position 0 is outside its element's pooling window");
    opt_fini(&t);
}

/* linear rule, one head, d_k = d_v = 1, scale 1: S1 = k1 v1, S2 = S1 + k2 v2;
 * gated: S2 = exp(g2) S1 + k2 v2; delta: v2 replaced by beta (v2 - S1 k2). */
static void test_linear_attention_values(void)
{
    static const char *const rules[] = {"linear", "gated", "delta"};
    const float want[3][2] = {{2 * 3, 2 * (3 + 4 * 5)},
                              {2 * 3, 2 * (float)(exp(0.5) * 3 + 4 * 5)},
                              {2 * 3, 2 * (3 + 4 * (0.5f * (5 - 3 * 4)))}};
    for (int r = 0; r < 3; r++) {
        opt_node t;
        int n_in = r == 0 ? 3 : 6;
        opt_init(&t, NULL, OP_LINEAR_ATTENTION, 27, n_in, 2);
        opt_attr_int(&t, "q_num_heads", 1);
        opt_attr_int(&t, "kv_num_heads", 1);
        opt_attr_float(&t, "scale", 1.0f);
        opt_attr_string(&t, "update_rule", rules[r]);
        smelt_tensor in[6] = {
            opt_tensor(F32, 3, OPT_DIMS(1, 2, 1), OPT_F32S(2, 2)),
            opt_tensor(F32, 3, OPT_DIMS(1, 2, 1), OPT_F32S(1, 4)),
            opt_tensor(F32, 3, OPT_DIMS(1, 2, 1), OPT_F32S(3, 5)),
            {0},
            opt_tensor(F32, 3, OPT_DIMS(1, 2, 1), OPT_F32S(0, 0.5f)),
            opt_tensor(F32, 3, OPT_DIMS(1, 2, 1), OPT_F32S(1, 0.5f))};
        if (r > 0) {
            opt_omit_input(&t, 3);
            if (r == 1) opt_omit_input(&t, 5);
            if (r == 2) opt_omit_input(&t, 4);
        }
        CHECK(opt_run(&t, in, n_in) == SMELT_OK);
        OPT_EXPECT_F32(&t.out[0], want[r], 2, OPT_REL(1e-6));
        opt_fini(&t);
    }
}

static void test_linear_attention_refusals(void)
{
    opt_node t;
    opt_init(&t, NULL, OP_LINEAR_ATTENTION, 27, 3, 1);
    opt_attr_int(&t, "q_num_heads", 3);
    opt_attr_int(&t, "kv_num_heads", 2);
    CHECK(opt_import(&t) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "must be a positive multiple of kv_num_heads 2");
    opt_fini(&t);
}

/* Range takes 16-bit floats from opset 27 only (Range-11's types do not
 * include them). */
static void test_range_half_before_27(void)
{
    static const uint16_t one = 0x3c00, four = 0x4400;
    for (int opset = 26; opset <= 27; opset++) {
        opt_node t;
        opt_init(&t, NULL, OP_RANGE, opset, 3, 1);
        smelt_tensor in[3] = {opt_tensor(F16, 0, NULL, &one), opt_tensor(F16, 0, NULL, &four),
                              opt_tensor(F16, 0, NULL, &one)};
        smelt_status s = opt_run(&t, in, 3);
        if (opset == 26) {
            CHECK(s == SMELT_ERR_UNSUPPORTED);
            CHECK_STR_CONTAINS(opt_message(&t), "has unsupported dtype f16");
        } else {
            CHECK(s == SMELT_OK);
            OPT_EXPECT_DIMS(&t.out[0], 1, OPT_DIMS(3));
            CHECK(t.out[0].data && ((const uint16_t *)t.out[0].data)[2] == 0x4200); /* 3.0 */
        }
        opt_fini(&t);
    }
}

int main(void)
{
    test_range_half_before_27();
    test_linear_attention_values();
    test_linear_attention_refusals();
    test_max_unpool_window_check();
    test_bitcast_values();
    test_swiglu_values();
    test_tensor_scatter_values();
    test_max_unpool_values();
    opt_check_cases(&k_suite, k_cases, SMELT_ARRAY_LEN(k_cases));
    opt_check_cases(&k_la_suite, k_la_cases, SMELT_ARRAY_LEN(k_la_cases));
    opt_check_cases(&k_tfidf_suite, k_tfidf_cases, SMELT_ARRAY_LEN(k_tfidf_cases));
    TEST_MAIN_END();
}
