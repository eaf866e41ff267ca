/* DFT, STFT and MelWeightMatrix: their compute definitions against their
 * reference kernels (te interpreter, default and random schedules:
 * op_test_util.h) -- forward, inverse, one-sided both ways, padded and
 * truncated lengths, each axis, DFT-17's attribute and DFT-20's input, STFT
 * with and without a window, a mel matrix from edges read at run time --
 * and the reference against transforms worked out by hand. */
#include "op_test_util.h"

static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    (void)kind;
    op_set_f64(t, i, (double)(opt_random(state) % 2001) / 500.0 - 2.0);
}

static const opt_suite k_suite = {
    .seed = 2017, .fill = fill, .tols = OPT_TOLS_ACCUMULATE, .random_schedules = 2};

#define DFT20(what, x, len, axis, inv, one)                                                  \
    {what, OP_DFT, 20, "y", 3, 2, {x, len, axis}, {OPT_AI("inverse", inv), OPT_AI("onesided", one)}}

static const opt_case k_cases[] = {
    DFT20("real forward", OPT_X(F32, 4, 2, 6, 5, 1), OPT_NONE, OPT_CONST0(I64, 1), 0, 0),
    DFT20("complex forward axis -2", OPT_X(F32, 4, 2, 6, 5, 2), OPT_NONE, OPT_NONE, 0, 0),
    DFT20("rfft padded", OPT_X(F64, 3, 3, 5, 1), OPT_CONST0(I64, 8), OPT_CONST0(I64, 1), 0, 1),
    DFT20("truncated", OPT_X(F32, 3, 2, 9, 2), OPT_CONST0(I32, 6), OPT_CONST0(I64, 1), 0, 0),
    DFT20("inverse", OPT_X(F32, 3, 2, 7, 2), OPT_NONE, OPT_CONST0(I64, -2), 1, 0),
    DFT20("irfft", OPT_X(F32, 4, 1, 5, 3, 2), OPT_NONE, OPT_CONST0(I64, 1), 1, 1),
    DFT20("irfft odd length", OPT_X(F64, 3, 2, 4, 2), OPT_CONST0(I64, 7), OPT_CONST0(I64, 1), 1, 1),
    DFT20("f16", OPT_X(F16, 3, 1, 8, 2), OPT_NONE, OPT_CONST0(I64, 1), 0, 0),
    {"DFT-17 axis attribute", OP_DFT, 17, "y", 1, 2, {OPT_X(F32, 4, 1, 3, 6, 1)},
     {OPT_AI("axis", 2), OPT_AI("onesided", 1)}},
    {"STFT window", OP_STFT, 17, "y", 3, 0,
     {OPT_X(F32, 3, 2, 40, 1), OPT_CONST0(I64, 6), OPT_X(F32, 1, 8)}, {{0}}},
    {"STFT complex, frame_length, two-sided", OP_STFT, 17, "y", 4, 1,
     {OPT_X(F64, 3, 1, 30, 2), OPT_CONST0(I32, 4), OPT_NONE, OPT_CONST0(I32, 10)},
     {OPT_AI("onesided", 0)}},
    {"MelWeightMatrix run-time edges", OP_MEL_WEIGHT_MATRIX, 17, "y", 5, 0,
     {OPT_CONST0(I64, 8), OPT_CONST0(I64, 64), OPT_CONST0(I64, 8000),
      OPT_RUNTIME0(F32, 0.0), OPT_RUNTIME0(F32, 4000.0)}, {{0}}},
    {"MelWeightMatrix f64 edges, f64 output", OP_MEL_WEIGHT_MATRIX, 17, "y", 5, 1,
     {OPT_CONST0(I64, 5), OPT_CONST0(I64, 33), OPT_CONST0(I64, 16000),
      OPT_RUNTIME0(F64, 100.0), OPT_RUNTIME0(F64, 7000.0)}, {OPT_AI("output_datatype", 11)}},
};

/* The DFT of an impulse is all ones; of all ones, N at 0 only. */
static void test_values(void)
{
    opt_node t;
    opt_init(&t, NULL, OP_DFT, 20, 1, 1);
    smelt_tensor x = opt_tensor(F32, 3, OPT_DIMS(1, 4, 1), OPT_F32S(1, 0, 0, 0));
    CHECK(opt_run(&t, &x, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(&t.out[0], 3, OPT_DIMS(1, 4, 2));
    OPT_EXPECT_F32(&t.out[0], OPT_F32S(1, 0, 1, 0, 1, 0, 1, 0), 8, OPT_ABS(1e-6));
    opt_fini(&t);

    opt_init(&t, NULL, OP_DFT, 20, 1, 1);
    opt_attr_int(&t, "onesided", 1);
    x = opt_tensor(F32, 3, OPT_DIMS(1, 4, 1), OPT_F32S(1, 1, 1, 1));
    CHECK(opt_run(&t, &x, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(&t.out[0], 3, OPT_DIMS(1, 3, 2));
    OPT_EXPECT_F32(&t.out[0], OPT_F32S(4, 0, 0, 0, 0, 0), 6, OPT_ABS(1e-6));
    opt_fini(&t);

    /* the one-sided spectrum of [1, 2, 3, 4] back to the signal */
    opt_init(&t, NULL, OP_DFT, 20, 1, 1);
    opt_attr_int(&t, "inverse", 1);
    opt_attr_int(&t, "onesided", 1);
    x = opt_tensor(F32, 3, OPT_DIMS(1, 3, 2), OPT_F32S(10, 0, -2, 2, -2, 0));
    CHECK(opt_run(&t, &x, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(&t.out[0], 3, OPT_DIMS(1, 4, 1));
    OPT_EXPECT_F32(&t.out[0], OPT_F32S(1, 2, 3, 4), 4, OPT_ABS(1e-6));
    opt_fini(&t);
}

static void test_refusals(void)
{
    opt_node t;
    opt_init(&t, NULL, OP_DFT, 20, 1, 1);
    smelt_tensor x = opt_tensor(F32, 2, OPT_DIMS(4, 3), OPT_F32S(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    CHECK(opt_run(&t, &x, 1) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "last dim of 1 (real) or 2 (complex)");
    opt_fini(&t);

    opt_init(&t, NULL, OP_STFT, 17, 2, 1);
    smelt_tensor in[2] = {opt_tensor(F32, 3, OPT_DIMS(1, 4, 1), OPT_F32S(1, 2, 3, 4)),
                          opt_tensor(I64, 0, NULL, OPT_I64S(0))};
    CHECK(opt_run(&t, in, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "frame_step 0");
    opt_fini(&t);
}

int main(void)
{
    test_values();
    test_refusals();
    opt_check_cases(&k_suite, k_cases, SMELT_ARRAY_LEN(k_cases));
    TEST_MAIN_END();
}
