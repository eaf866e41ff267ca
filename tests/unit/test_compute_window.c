/* Compute definitions of HannWindow, HammingWindow and BlackmanWindow
 * against their reference kernels (te interpreter, default and random
 * schedules: op_test_util.h), periodic and symmetric, each float output
 * type; the reference against values worked out from the formulas; integer
 * output types refused. */
#include "op_test_util.h"

static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    (void)kind, (void)state;
    op_set_i64(t, i, 0);
}

static const opt_suite k_suite = {
    .seed = 17,
    .fill = fill,
    .tols = {.f32 = {0, 0}, .f64 = {1e-15, 1e-15}, .f16 = {0, 0}, .bf16 = {0, 0}},
    .random_schedules = 2,
};

#define W(op, what, n, periodic, dt)                                                        \
    {what, op, 17, "y", 1, 2, {OPT_CONST0(I64, n)},                                        \
     {OPT_AI("periodic", periodic), OPT_AI("output_datatype", dt)}}

static const opt_case k_cases[] = {
    W(OP_HANN_WINDOW, "hann periodic f32", 10, 1, 1),
    W(OP_HANN_WINDOW, "hann symmetric f64", 9, 0, 11),
    W(OP_HAMMING_WINDOW, "hamming periodic f16", 12, 1, 10),
    W(OP_HAMMING_WINDOW, "hamming symmetric f32", 7, 0, 1),
    W(OP_BLACKMAN_WINDOW, "blackman periodic bf16", 8, 1, 16),
    W(OP_BLACKMAN_WINDOW, "blackman symmetric f64", 11, 0, 11),
};

static void expect_window(op_kind op, int64_t size, int64_t periodic, const double *want)
{
    opt_node t;
    opt_init(&t, NULL, op, 17, 1, 1);
    opt_attr_int(&t, "periodic", periodic);
    opt_attr_int(&t, "output_datatype", 11);
    int64_t n = size;
    smelt_tensor in = opt_tensor(I64, 0, NULL, &n);
    CHECK(opt_run(&t, &in, 1) == SMELT_OK);
    for (int64_t i = 0; i < size && t.out[0].data; i++) {
        double got = op_get_f64(&t.out[0], i);
        if (fabs(got - want[i]) > 1e-12)
            fprintf(stderr, "%s[%lld] = %.17g, expected %.17g\n", op_get(op)->name, (long long)i,
                    got, want[i]);
        CHECK(fabs(got - want[i]) <= 1e-12);
    }
    opt_fini(&t);
}

static void test_values(void)
{
    expect_window(OP_HANN_WINDOW, 4, 1, (const double[]){0, 0.5, 1, 0.5});
    expect_window(OP_HANN_WINDOW, 3, 0, (const double[]){0, 1, 0});
    double a = 25.0 / 46.0;
    expect_window(OP_HAMMING_WINDOW, 3, 0, (const double[]){2 * a - 1, 1, 2 * a - 1});
    expect_window(OP_BLACKMAN_WINDOW, 4, 1, (const double[]){0, 0.34, 1, 0.34});
}

static void test_int_output_refused(void)
{
    opt_node t;
    opt_init(&t, NULL, OP_BLACKMAN_WINDOW, 17, 1, 1);
    opt_attr_int(&t, "output_datatype", 6);
    CHECK(opt_import(&t) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(opt_message(&t), "attribute 'output_datatype' is 6");
    opt_fini(&t);
}

int main(void)
{
    test_values();
    test_int_output_refused();
    opt_check_cases(&k_suite, k_cases, SMELT_ARRAY_LEN(k_cases));
    TEST_MAIN_END();
}
