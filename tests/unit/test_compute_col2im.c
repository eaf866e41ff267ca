/* Col2Im's compute (a gather per pixel) against its reference kernel (a
 * scatter per column; te interpreter, default and random schedules:
 * op_test_util.h): 1-D to 3-D, strides, dilations, pads, several channels;
 * the reference against im2col of a hand-made image. */
#include "op_test_util.h"

static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    (void)kind;
    op_set_f64(t, i, (double)(opt_random(state) % 2001) / 500.0 - 2.0);
}

static const opt_suite k_suite = {
    .seed = 1818, .fill = fill, .tols = OPT_TOLS_ACCUMULATE, .random_schedules = 2};

static const opt_case k_cases[] = {
    /* 5x5 image, 2x2 blocks: 4x4 = 16 columns */
    {"2-D", OP_COL2IM, 18, "y", 3, 0,
     {OPT_X(F32, 3, 2, 8, 16), OPT_CONST1(I64, 5, 5), OPT_CONST1(I64, 2, 2)}, {{0}}},
    /* 6x7, 3x2 blocks, stride 2x1, dilation 1x2, pads 1,0,1,2: grid 3 x 7 */
    {"2-D stride dilation pads", OP_COL2IM, 18, "y", 3, 3,
     {OPT_X(F32, 3, 1, 6, 21), OPT_CONST1(I64, 6, 7), OPT_CONST1(I64, 3, 2)},
     {OPT_AINTS("strides", 2, 2, 1), OPT_AINTS("dilations", 2, 1, 2),
      OPT_AINTS("pads", 4, 1, 0, 1, 2)}},
    {"1-D f64", OP_COL2IM, 18, "y", 3, 1,
     {OPT_X(F64, 3, 2, 3, 4), OPT_CONST1(I64, 9), OPT_CONST1(I64, 3)},
     {OPT_AINTS("strides", 1, 2)}},
    /* 3x4x3 volume, 2x2x2 blocks: 2 x 3 x 2 columns */
    {"3-D", OP_COL2IM, 18, "y", 3, 0,
     {OPT_X(F32, 3, 1, 16, 12), OPT_CONST1(I64, 3, 4, 3), OPT_CONST1(I64, 2, 2, 2)}, {{0}}},
};

/* A 1x3 image [a b c] with 1x2 blocks has columns [a b] and [b c]: Col2Im
 * gives [a, 2b, c]. */
static void test_values(void)
{
    static const float cols[] = {1, 2, 2, 3}; /* offset 0: a, b; offset 1: b, c */
    static const int64_t img[] = {1, 3}, blk[] = {1, 2};
    opt_node t;
    opt_init(&t, NULL, OP_COL2IM, 18, 3, 1);
    smelt_tensor in[3] = {opt_tensor(F32, 3, OPT_DIMS(1, 2, 2), cols), opt_vec(I64, 2, img),
                          opt_vec(I64, 2, blk)};
    CHECK(opt_run(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(&t.out[0], 4, OPT_DIMS(1, 1, 1, 3));
    OPT_EXPECT_F32(&t.out[0], OPT_F32S(1, 4, 3), 3, OPT_EXACT);
    opt_fini(&t);
}

int main(void)
{
    test_values();
    opt_check_cases(&k_suite, k_cases, SMELT_ARRAY_LEN(k_cases));
    TEST_MAIN_END();
}
