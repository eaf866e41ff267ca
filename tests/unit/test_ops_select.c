/* Compress and Unique (select.c) against values worked out by hand, their
 * refusals, and their compiled forms' refusal (data-dependent sizes). */
#include "op_test_util.h"

static void test_compress(void)
{
    static const float x[] = {1, 2, 3, 4, 5, 6}; /* 3 x 2 */
    static const bool cond[] = {false, true, true};
    opt_node t;
    opt_init(&t, NULL, OP_COMPRESS, 11, 2, 1);
    opt_attr_int(&t, "axis", -2);
    smelt_tensor in[2] = {opt_tensor(F32, 2, OPT_DIMS(3, 2), x), opt_vec(BOOL, 3, cond)};
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(&t.out[0], 2, OPT_DIMS(2, 2));
    OPT_EXPECT_F32(&t.out[0], OPT_F32S(3, 4, 5, 6), 4, OPT_EXACT);
    CHECK(opt_run_te(&t) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(opt_message(&t), "depends on the data");
    opt_fini(&t);

    /* flattened, and a true condition past the elements is refused */
    static const bool past[] = {true, false, false, false, false, false, true};
    opt_init(&t, NULL, OP_COMPRESS, 11, 2, 1);
    smelt_tensor in2[2] = {opt_tensor(F32, 2, OPT_DIMS(3, 2), x), opt_vec(BOOL, 7, past)};
    CHECK(opt_run(&t, in2, 2) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(opt_message(&t), "condition is true at 6, past the 6 slices");
    opt_fini(&t);
}

static void run_unique(int64_t sorted, bool has_axis, int64_t axis, const smelt_tensor *x,
                       const float *y, int ny, const int64_t *first, const int64_t *inverse,
                       int n_inverse, const int64_t *counts, int nu)
{
    opt_node t;
    opt_init(&t, NULL, OP_UNIQUE, 11, 1, 4);
    opt_attr_int(&t, "sorted", sorted);
    if (has_axis) opt_attr_int(&t, "axis", axis);
    CHECK(opt_run(&t, x, 1) == SMELT_OK);
    OPT_EXPECT_F32(&t.out[0], y, ny, OPT_EXACT);
    OPT_EXPECT_I64(&t.out[1], first, nu);
    OPT_EXPECT_I64(&t.out[2], inverse, n_inverse);
    OPT_EXPECT_I64(&t.out[3], counts, nu);
    CHECK(opt_run_te(&t) == SMELT_ERR_UNSUPPORTED);
    opt_fini(&t);
}

static void test_unique(void)
{
    static const float v[] = {2, 1, 1, 3, 4, 3};
    smelt_tensor x = opt_vec(F32, 6, v);
    run_unique(1, false, 0, &x, OPT_F32S(1, 2, 3, 4), 4, OPT_I64S(1, 0, 3, 4),
               OPT_I64S(1, 0, 0, 2, 3, 2), 6, OPT_I64S(2, 1, 2, 1), 4);
    run_unique(0, false, 0, &x, OPT_F32S(2, 1, 3, 4), 4, OPT_I64S(0, 1, 3, 4),
               OPT_I64S(0, 1, 1, 2, 3, 2), 6, OPT_I64S(1, 2, 2, 1), 4);
    /* rows of a 3 x 2 matrix: (1, 0), (0, 5), (1, 0) */
    static const float m[] = {1, 0, 0, 5, 1, 0};
    smelt_tensor xm = opt_tensor(F32, 2, OPT_DIMS(3, 2), m);
    run_unique(1, true, 0, &xm, OPT_F32S(0, 5, 1, 0), 4, OPT_I64S(1, 0), OPT_I64S(1, 0, 1), 3,
               OPT_I64S(1, 2), 2);
    /* columns: (1, 0, 1), (0, 5, 0) */
    run_unique(1, true, -1, &xm, OPT_F32S(0, 1, 5, 0, 0, 1), 6, OPT_I64S(1, 0), OPT_I64S(1, 0),
               2, OPT_I64S(1, 1), 2);
}

int main(void)
{
    opt_check_family_defined("select");
    test_compress();
    test_unique();
    TEST_MAIN_END();
}
