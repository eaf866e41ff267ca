/* CenterCropPad's compute against its reference kernel (te interpreter,
 * default and random schedules: op_test_util.h): crops and pads of even and
 * odd differences on one tensor, negative axes, integer and bool types; the
 * reference against a case worked out by hand. */
#include "op_test_util.h"

static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    (void)kind;
    uint32_t r = opt_random(state);
    if (op_dtype_is_float(t->dtype)) op_set_f64(t, i, (double)(r % 1000) / 100.0 - 5.0);
    else op_set_i64(t, i, t->dtype == BOOL ? (int64_t)(r % 2) : (int64_t)(r % 200) - 100);
}

static const opt_suite k_suite = {
    .seed = 18, .fill = fill, .tols = {{0, 0}, {0, 0}, {0, 0}, {0, 0}}, .random_schedules = 2};

static const opt_case k_cases[] = {
    {"crop odd, pad even, pad odd, same", OP_CENTER_CROP_PAD, 18, "y", 2, 0,
     {OPT_X(F32, 4, 5, 4, 3, 2), OPT_CONST1(I64, 2, 6, 6, 2)}, {{0}}},
    /* a pad by 1 has offset 0: the end still reads 0 (a compiled form once read past it) */
    {"pad by one", OP_CENTER_CROP_PAD, 18, "y", 2, 0,
     {OPT_X(F32, 3, 4, 8, 3), OPT_CONST1(I64, 2, 9, 3)}, {{0}}},
    {"negative axes hwc", OP_CENTER_CROP_PAD, 18, "y", 2, 1,
     {OPT_X(I32, 3, 7, 3, 2), OPT_CONST1(I64, 10, 2)}, {OPT_AINTS("axes", 2, -3, -2)}},
    {"int8 crop even", OP_CENTER_CROP_PAD, 18, "y", 2, 1,
     {OPT_X(I8, 2, 8, 9), OPT_CONST1(I64, 4)}, {OPT_AINTS("axes", 1, 0)}},
    {"bool pad", OP_CENTER_CROP_PAD, 18, "y", 2, 1,
     {OPT_X(BOOL, 2, 3, 3), OPT_CONST1(I64, 6)}, {OPT_AINTS("axes", 1, 1)}},
    {"f64 to empty", OP_CENTER_CROP_PAD, 18, "y", 2, 0,
     {OPT_X(F64, 2, 3, 4), OPT_CONST1(I64, 0, 4)}, {{0}}},
};

/* [1..5] cropped to 2 takes [2, 3]; padded to 8 gives 0 1 2 3 4 5 0 0 (offset 1) */
static void test_values(void)
{
    static const float x[] = {1, 2, 3, 4, 5};
    static const int64_t lens[] = {2, 8};
    static const float want[2][8] = {{2, 3}, {0, 1, 2, 3, 4, 5, 0, 0}};
    for (int k = 0; k < 2; k++) {
        opt_node t;
        opt_init(&t, NULL, OP_CENTER_CROP_PAD, 18, 2, 1);
        smelt_tensor in[2] = {opt_vec(F32, 5, x), opt_vec(I64, 1, &lens[k])};
        CHECK(opt_run(&t, in, 2) == SMELT_OK);
        OPT_EXPECT_F32(&t.out[0], want[k], lens[k], OPT_EXACT);
        opt_fini(&t);
    }
}

int main(void)
{
    test_values();
    opt_check_cases(&k_suite, k_cases, SMELT_ARRAY_LEN(k_cases));
    TEST_MAIN_END();
}
