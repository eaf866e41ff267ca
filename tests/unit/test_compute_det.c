/* Det's compiled form (cofactor expansion, M <= 4) against its reference
 * kernel (LU in double; te interpreter, default and random schedules:
 * op_test_util.h); the reference against hand-worked determinants; larger
 * matrices refused in compiled code. */
#include "op_test_util.h"

static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    (void)kind;
    op_set_f64(t, i, (double)(opt_random(state) % 4001) / 1000.0 - 2.0);
}

static const opt_suite k_suite = {
    .seed = 11, .fill = fill, .tols = OPT_TOLS_ACCUMULATE, .random_schedules = 2};

static const opt_case k_cases[] = {
    {"1x1", OP_DET, 11, "y", 1, 0, {OPT_X(F32, 2, 1, 1)}, {{0}}},
    {"batch of 2x2", OP_DET, 11, "y", 1, 0, {OPT_X(F32, 3, 5, 2, 2)}, {{0}}},
    {"3x3 batch 2x3 f64", OP_DET, 11, "y", 1, 0, {OPT_X(F64, 4, 2, 3, 3, 3)}, {{0}}},
    {"4x4", OP_DET, 22, "y", 1, 0, {OPT_X(F32, 3, 3, 4, 4)}, {{0}}},
    {"f16 2x2", OP_DET, 22, "y", 1, 0, {OPT_X(F16, 3, 4, 2, 2)}, {{0}}},
};

static void test_values(void)
{
    /* [[2, 1], [7, 4]] -> 1; [[0, 2, 1], [1, 0, 0], [3, 1, 1]] -> -(2 - 1) = -1;
     * a singular 3x3 -> 0 */
    static const double a[] = {2, 1, 7, 4};
    static const double b[] = {0, 2, 1, 1, 0, 0, 3, 1, 1, 1, 2, 3, 2, 4, 6, 0, 1, 5};
    opt_node t;
    opt_init(&t, NULL, OP_DET, 11, 1, 1);
    smelt_tensor x = opt_tensor(F64, 2, OPT_DIMS(2, 2), a);
    CHECK(opt_run(&t, &x, 1) == SMELT_OK);
    CHECK(t.out[0].data && fabs(op_get_f64(&t.out[0], 0) - 1.0) < 1e-12);
    opt_fini(&t);
    opt_init(&t, NULL, OP_DET, 11, 1, 1);
    smelt_tensor y = opt_tensor(F64, 3, OPT_DIMS(2, 3, 3), b);
    CHECK(opt_run(&t, &y, 1) == SMELT_OK);
    CHECK(t.out[0].data && fabs(op_get_f64(&t.out[0], 0) + 1.0) < 1e-12);
    CHECK(t.out[0].data && fabs(op_get_f64(&t.out[0], 1)) < 1e-12);
    opt_fini(&t);
}

static void test_large_refused(void)
{
    const opt_case big = {"5x5", OP_DET, 11, "y", 1, 0, {OPT_X(F32, 2, 5, 5)}, {{0}}};
    opt_node t;
    CHECK(opt_case_init(&t, &k_suite, &big) == SMELT_OK);
    CHECK(opt_run_reference(&t) == SMELT_OK);
    CHECK(opt_run_te(&t) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(opt_message(&t), "compiled Det takes matrices up to 4 x 4");
    opt_fini(&t);
}

int main(void)
{
    test_values();
    test_large_refused();
    opt_check_cases(&k_suite, k_cases, SMELT_ARRAY_LEN(k_cases));
    TEST_MAIN_END();
}
