/* smelt check's comparison of an output with its expected value: a shape
 * mismatch names both shapes (it said only "rank 2 vs 2" when the ranks
 * agreed and a dim did not), a value mismatch the worst element. */
#include "api/smelt_internal.h"
#include "test_util.h"

static smelt_tensor f32(int rank, const int64_t *dims, float *data)
{
    smelt_tensor t = {.name = "y", .dtype = SMELT_DT_FLOAT32, .rank = rank, .data = data};
    for (int d = 0; d < rank; d++) t.dims[d] = dims[d];
    return t;
}

static void test_shape_mismatch_names_both_shapes(void)
{
    float a[8] = {0}, b[8] = {0};
    smelt_tensor got = f32(2, (int64_t[]){0, 3}, a), want = f32(2, (int64_t[]){2, 3}, b);
    smelt_check_options o;
    smelt_check_options_init(&o);
    char why[256] = "";
    CHECK(smelt_check_compare(&got, &want, &o, why, sizeof why) == SMELT_CHECK_FAIL);
    CHECK_STR_CONTAINS(why, "output 'y': shape [0,3], expected [2,3]");
    smelt_tensor scalar = f32(0, NULL, a);
    CHECK(smelt_check_compare(&scalar, &want, &o, why, sizeof why) == SMELT_CHECK_FAIL);
    CHECK_STR_CONTAINS(why, "shape [], expected [2,3]");
}

static void test_same_shape_compares_values(void)
{
    float a[2] = {1.0f, 2.0f}, b[2] = {1.0f, 2.5f};
    smelt_tensor got = f32(1, (int64_t[]){2}, a), want = f32(1, (int64_t[]){2}, b);
    smelt_check_options o;
    smelt_check_options_init(&o);
    char why[256] = "";
    CHECK(smelt_check_compare(&got, &got, &o, why, sizeof why) == SMELT_CHECK_PASS);
    CHECK(smelt_check_compare(&got, &want, &o, why, sizeof why) == SMELT_CHECK_FAIL);
    CHECK_STR_CONTAINS(why, "'y'");
}

int main(void)
{
    test_shape_mismatch_names_both_shapes();
    test_same_shape_compares_values();
    TEST_MAIN_END();
}
