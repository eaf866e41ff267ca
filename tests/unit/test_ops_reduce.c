/* Unit tests of the reduce family: Reduce*, ArgMax/ArgMin, TopK, CumSum. */
#include "op_test_util.h"

/* A strong reference: registry.c's references are weak, and a weak
 * reference alone does not pull reduce.o out of the static library. */
extern const op_def op_def_REDUCE_SUM;

static void test_registry(void)
{
    CHECK(op_get(OP_REDUCE_SUM)->def == &op_def_REDUCE_SUM);
    static const op_kind ops[] = {OP_REDUCE_MEAN, OP_REDUCE_SUM, OP_REDUCE_MAX, OP_REDUCE_MIN,
                                  OP_REDUCE_PROD, OP_REDUCE_L1, OP_REDUCE_L2,
                                  OP_REDUCE_SUM_SQUARE, OP_REDUCE_LOG_SUM,
                                  OP_REDUCE_LOG_SUM_EXP, OP_ARG_MAX, OP_ARG_MIN, OP_TOP_K,
                                  OP_CUM_SUM, OP_CUM_PROD};
    for (size_t i = 0; i < SMELT_ARRAY_LEN(ops); i++) CHECK(op_get(ops[i])->def != NULL);
}

/* inputs X, B, C, D; outputs Y0, Y1 */
static const opt_names k_names = {"n0", "X B C D", "Y%d"};

/* ---- Reduce* ---- */

static void test_reduce_sum_axes_input(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_REDUCE_SUM, 13, 2, 1);
    float x[] = {1, 2, 3, 4, 5, 6};
    int64_t axes[] = {-1};
    smelt_tensor tx = opt_tensor(F32, 2, (int64_t[]){2, 3}, x);
    smelt_tensor ta = opt_tensor(I64, 1, (int64_t[]){1}, axes);
    const smelt_tensor *in[] = {&tx, &ta};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 2) == SMELT_OK);
    CHECK(out[0].rank == 2 && out[0].dims[0] == 2 && out[0].dims[1] == 1);
    CHECK(((float *)out[0].data)[0] == 6 && ((float *)out[0].data)[1] == 15);
    opt_fini(&t);
}

static void test_reduce_mean_axes_attr(void)
{
    opt_node t;
    /* ReduceMean took axes as an attribute until 18 */
    opt_init(&t, &k_names, OP_REDUCE_MEAN, 13, 1, 1);
    int64_t axes[] = {0};
    gr_attr attrs[] = {opt_ints_attr("axes", 1, axes), opt_int_attr("keepdims", 0)};
    opt_use_attrs(&t, attrs, 2);
    float x[] = {1, 2, 3, 4, 5, 6};
    smelt_tensor tx = opt_tensor(F32, 2, (int64_t[]){2, 3}, x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
    CHECK(t.node->n_inputs == 2 && t.node->inputs[1] && t.node->inputs[1]->constant);
    CHECK(out[0].rank == 1 && out[0].dims[0] == 3);
    float *y = out[0].data;
    CHECK(y[0] == 2.5f && y[1] == 3.5f && y[2] == 4.5f);
    opt_fini(&t);
}

/* Reduce over all axes with each kind, on the same data. */
static void test_reduce_kinds(void)
{
    static const struct {
        op_kind op;
        double want;
    } cases[] = {
        {OP_REDUCE_SUM, 3.0},
        {OP_REDUCE_MEAN, 0.5},
        {OP_REDUCE_MAX, 3.0},
        {OP_REDUCE_MIN, -2.0},
        {OP_REDUCE_PROD, 6.0},
        {OP_REDUCE_L1, 9.0},
        {OP_REDUCE_L2, 4.123105625617661}, /* sqrt(17) */
        {OP_REDUCE_SUM_SQUARE, 17.0},
        {OP_REDUCE_LOG_SUM, 1.0986122886681098},
        {OP_REDUCE_LOG_SUM_EXP, 3.3584150340218217},
    };
    for (size_t c = 0; c < SMELT_ARRAY_LEN(cases); c++) {
        opt_node t;
        opt_init(&t, &k_names, cases[c].op, 18, 1, 1);
        double x[] = {1, -1, 3, -2, 1, 1};
        smelt_tensor tx = opt_tensor(F64, 2, (int64_t[]){3, 2}, x);
        const smelt_tensor *in[] = {&tx};
        smelt_tensor *out = t.out;
        CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
        CHECK(out[0].rank == 2 && out[0].dims[0] == 1 && out[0].dims[1] == 1);
        CHECK_NEAR(((double *)out[0].data)[0], cases[c].want, 1e-12);
        opt_fini(&t);
    }
}

static void test_reduce_log_sum_exp_stable(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_REDUCE_LOG_SUM_EXP, 13, 1, 1);
    float x[] = {1000, 1000};
    smelt_tensor tx = opt_tensor(F32, 1, (int64_t[]){2}, x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
    CHECK_NEAR(((float *)out[0].data)[0], 1000.0 + log(2.0), 1e-3);
    opt_fini(&t);
}

/* Reductions over a zero-sized axis give the identity of the operation. */
static void test_reduce_empty(void)
{
    static const struct {
        op_kind op;
        float want;
    } cases[] = {
        {OP_REDUCE_SUM, 0.0f},     {OP_REDUCE_PROD, 1.0f},         {OP_REDUCE_MAX, -INFINITY},
        {OP_REDUCE_MIN, INFINITY}, {OP_REDUCE_LOG_SUM_EXP, -INFINITY}, {OP_REDUCE_L2, 0.0f},
    };
    for (size_t c = 0; c < SMELT_ARRAY_LEN(cases); c++) {
        opt_node t;
        opt_init(&t, &k_names, cases[c].op, 18, 2, 1);
        gr_attr attrs[] = {opt_int_attr("keepdims", 0)};
        opt_use_attrs(&t, attrs, 1);
        float dummy = 0;
        int64_t axes[] = {0};
        smelt_tensor tx = opt_tensor(F32, 2, (int64_t[]){0, 3}, &dummy);
        smelt_tensor ta = opt_tensor(I64, 1, (int64_t[]){1}, axes);
        const smelt_tensor *in[] = {&tx, &ta};
        smelt_tensor *out = t.out;
        CHECK(opt_run_ptrs(&t, in, 2) == SMELT_OK);
        CHECK(out[0].rank == 1 && out[0].dims[0] == 3);
        for (int i = 0; i < 3; i++) CHECK(((float *)out[0].data)[i] == cases[c].want);
        opt_fini(&t);
    }
}

static void test_reduce_noop_and_ints(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_REDUCE_MAX, 18, 2, 1);
    gr_attr attrs[] = {opt_int_attr("noop_with_empty_axes", 1)};
    opt_use_attrs(&t, attrs, 1);
    int64_t x[] = {(int64_t)1 << 60, ((int64_t)1 << 60) + 1, -5};
    int64_t none = 0;
    smelt_tensor tx = opt_tensor(I64, 1, (int64_t[]){3}, x);
    smelt_tensor ta = opt_tensor(I64, 1, (int64_t[]){0}, &none);
    const smelt_tensor *in[] = {&tx, &ta};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 2) == SMELT_OK);
    CHECK(out[0].rank == 1 && out[0].dims[0] == 3);
    CHECK(((int64_t *)out[0].data)[1] == x[1]);

    /* exact int64 max, beyond double precision */
    t.node->n_attrs = 0;
    const smelt_tensor *in1[] = {&tx, NULL};
    CHECK(opt_run_ptrs(&t, in1, 2) == SMELT_OK);
    CHECK(out[0].rank == 1 && ((int64_t *)out[0].data)[0] == x[1]);
    opt_fini(&t);
}

static void test_reduce_compile_time(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_REDUCE_SUM, 13, 2, 1);
    smelt_tensor tx = opt_tensor(F32, 3, (int64_t[]){GR_DIM_SYM(0), 1, 4}, NULL);
    smelt_tensor ta = opt_tensor(I64, 1, (int64_t[]){1}, NULL);
    const smelt_tensor *in[] = {&tx, &ta};
    smelt_tensor *out = t.out;
    /* keepdims=1: rank known, dims not */
    CHECK(opt_infer_ptrs(&t, in, 2) == SMELT_OK);
    CHECK(out[0].rank == 3 && out[0].dims[0] == GR_DIM_UNKNOWN && out[0].dims[1] == 1);
    /* keepdims=0 with axes of statically known length: rank known */
    gr_attr attrs[] = {opt_int_attr("keepdims", 0)};
    opt_use_attrs(&t, attrs, 1);
    CHECK(opt_infer_ptrs(&t, in, 2) == SMELT_OK);
    CHECK(out[0].rank == 2);
    /* ... of unknown length: unsupported, naming the input */
    ta.dims[0] = GR_DIM_SYM(1);
    CHECK(opt_infer_ptrs(&t, in, 2) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(opt_message(&t), "axes input 'B'");
    smelt_ctx_clear(t.ctx);
    /* known axes keep symbolic dims */
    int64_t axes[] = {2};
    ta = opt_tensor(I64, 1, (int64_t[]){1}, axes);
    CHECK(opt_infer_ptrs(&t, in, 2) == SMELT_OK);
    CHECK(out[0].rank == 2 && out[0].dims[0] == GR_DIM_SYM(0) && out[0].dims[1] == 1);
    /* bad axis */
    axes[0] = 3;
    CHECK(opt_infer_ptrs(&t, in, 2) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "axis 3 is out of range for rank 3");
    CHECK_STR_CONTAINS(opt_message(&t), "node 'n0' (ReduceSum)");
    smelt_ctx_clear(t.ctx);
    /* bad dtype */
    tx.dtype = BOOL;
    CHECK(opt_infer_ptrs(&t, in, 2) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(opt_message(&t), "input 'X' has unsupported dtype bool");
    opt_fini(&t);
}

/* ---- ArgMax, ArgMin ---- */

static void test_argmax_argmin(void)
{
    static const struct {
        op_kind op;
        int64_t last;
        int64_t want[2];
    } cases[] = {
        {OP_ARG_MAX, 0, {1, 0}},
        {OP_ARG_MAX, 1, {2, 0}},
        {OP_ARG_MIN, 0, {0, 1}},
        {OP_ARG_MIN, 1, {0, 2}},
    };
    for (size_t c = 0; c < SMELT_ARRAY_LEN(cases); c++) {
        opt_node t;
        opt_init(&t, &k_names, cases[c].op, 13, 1, 1);
        gr_attr attrs[] = {opt_int_attr("axis", -1), opt_int_attr("keepdims", 0),
                           opt_int_attr("select_last_index", cases[c].last)};
        opt_use_attrs(&t, attrs, 3);
        float x[] = {1, 5, 5, 9, 2, 2};
        smelt_tensor tx = opt_tensor(F32, 2, (int64_t[]){2, 3}, x);
        const smelt_tensor *in[] = {&tx};
        smelt_tensor *out = t.out;
        CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
        CHECK(out[0].dtype == I64 && out[0].rank == 1 && out[0].dims[0] == 2);
        CHECK(((int64_t *)out[0].data)[0] == cases[c].want[0]);
        CHECK(((int64_t *)out[0].data)[1] == cases[c].want[1]);
        opt_fini(&t);
    }
}

/* ---- TopK ---- */

static void test_topk(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_TOP_K, 11, 2, 2);
    float x[] = {1, 3, 3, 2, -1, 0, 7, 7};
    int64_t k = 3;
    smelt_tensor tx = opt_tensor(F32, 2, (int64_t[]){2, 4}, x);
    smelt_tensor tk = opt_tensor(I64, 1, (int64_t[]){1}, &k);
    const smelt_tensor *in[] = {&tx, &tk};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 2) == SMELT_OK);
    CHECK(out[0].rank == 2 && out[0].dims[1] == 3 && out[1].dtype == I64);
    float *v = out[0].data;
    int64_t *ix = out[1].data;
    CHECK(v[0] == 3 && v[1] == 3 && v[2] == 2 && ix[0] == 1 && ix[1] == 2 && ix[2] == 3);
    CHECK(v[3] == 7 && v[4] == 7 && v[5] == 0 && ix[3] == 2 && ix[4] == 3 && ix[5] == 1);

    gr_attr attrs[] = {opt_int_attr("largest", 0)};
    opt_use_attrs(&t, attrs, 1);
    CHECK(opt_run_ptrs(&t, in, 2) == SMELT_OK);
    v = out[0].data;
    ix = out[1].data;
    CHECK(v[0] == 1 && v[1] == 2 && v[2] == 3 && ix[0] == 0 && ix[1] == 3 && ix[2] == 1);

    k = 5;
    CHECK(opt_infer_ptrs(&t, in, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "k = 5 is out of range [0, 4]");
    smelt_ctx_clear(t.ctx);
    opt_fini(&t);
}

static void test_topk_k_attribute(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_TOP_K, 9, 1, 2);
    gr_attr attrs[] = {opt_int_attr("k", 1), opt_int_attr("axis", 0)};
    opt_use_attrs(&t, attrs, 2);
    int32_t x[] = {4, -7, 9, 8};
    smelt_tensor tx = opt_tensor(I32, 2, (int64_t[]){2, 2}, x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
    CHECK(out[0].rank == 2 && out[0].dims[0] == 1 && out[0].dims[1] == 2);
    CHECK(((int32_t *)out[0].data)[0] == 9 && ((int32_t *)out[0].data)[1] == 8);
    CHECK(((int64_t *)out[1].data)[0] == 1 && ((int64_t *)out[1].data)[1] == 1);
    opt_fini(&t);
}

/* ---- CumSum ---- */

static void test_cumsum(void)
{
    static const struct {
        int64_t exclusive, reverse;
        double want[4];
    } cases[] = {
        {0, 0, {1, 3, 6, 10}},
        {1, 0, {0, 1, 3, 6}},
        {0, 1, {10, 9, 7, 4}},
        {1, 1, {9, 7, 4, 0}},
    };
    for (size_t c = 0; c < SMELT_ARRAY_LEN(cases); c++) {
        opt_node t;
        opt_init(&t, &k_names, OP_CUM_SUM, 14, 2, 1);
        gr_attr attrs[] = {opt_int_attr("exclusive", cases[c].exclusive),
                           opt_int_attr("reverse", cases[c].reverse)};
        opt_use_attrs(&t, attrs, 2);
        double x[] = {1, 2, 3, 4};
        int32_t axis = -1;
        smelt_tensor tx = opt_tensor(F64, 1, (int64_t[]){4}, x);
        smelt_tensor ta = opt_tensor(I32, 0, NULL, &axis);
        const smelt_tensor *in[] = {&tx, &ta};
        smelt_tensor *out = t.out;
        CHECK(opt_run_ptrs(&t, in, 2) == SMELT_OK);
        for (int i = 0; i < 4; i++) CHECK(((double *)out[0].data)[i] == cases[c].want[i]);
        opt_fini(&t);
    }
}

static void test_cumprod(void)
{
    static const struct {
        int64_t exclusive, reverse;
        double want[4];
    } cases[] = {
        {0, 0, {1, 2, 6, 24}},
        {1, 0, {1, 1, 2, 6}},
        {0, 1, {24, 24, 12, 4}},
        {1, 1, {24, 12, 4, 1}},
    };
    for (size_t c = 0; c < SMELT_ARRAY_LEN(cases); c++) {
        opt_node t;
        opt_init(&t, &k_names, OP_CUM_PROD, 26, 2, 1);
        gr_attr attrs[] = {opt_int_attr("exclusive", cases[c].exclusive),
                           opt_int_attr("reverse", cases[c].reverse)};
        opt_use_attrs(&t, attrs, 2);
        double x[] = {1, 2, 3, 4};
        int32_t axis = 0;
        smelt_tensor tx = opt_tensor(F64, 1, (int64_t[]){4}, x);
        smelt_tensor ta = opt_tensor(I32, 0, NULL, &axis);
        const smelt_tensor *in[] = {&tx, &ta};
        CHECK(opt_run_ptrs(&t, in, 2) == SMELT_OK);
        for (int i = 0; i < 4; i++) CHECK(((double *)t.out[0].data)[i] == cases[c].want[i]);
        opt_fini(&t);
    }
}

static void test_cumsum_2d_int(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_CUM_SUM, 14, 2, 1);
    int32_t x[] = {1, 2, 3, 4, 5, 6};
    int64_t axis = 0;
    smelt_tensor tx = opt_tensor(I32, 2, (int64_t[]){2, 3}, x);
    smelt_tensor ta = opt_tensor(I64, 1, (int64_t[]){1}, &axis);
    const smelt_tensor *in[] = {&tx, &ta};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 2) == SMELT_OK);
    int32_t *y = out[0].data;
    CHECK(y[0] == 1 && y[2] == 3 && y[3] == 5 && y[5] == 9);
    axis = 2;
    CHECK(opt_infer_ptrs(&t, in, 2) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "axis 2 is out of range for rank 2");
    opt_fini(&t);
}

int main(void)
{
    test_registry();
    test_reduce_sum_axes_input();
    test_reduce_mean_axes_attr();
    test_reduce_kinds();
    test_reduce_log_sum_exp_stable();
    test_reduce_empty();
    test_reduce_noop_and_ints();
    test_reduce_compile_time();
    test_argmax_argmin();
    test_topk();
    test_topk_k_attribute();
    test_cumsum();
    test_cumprod();
    test_cumsum_2d_int();
    TEST_MAIN_END();
}
