/* MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, LRN: import,
 * shape inference, reference kernels (hand-computed cases), errors. */
#include "op_test_util.h"
#include "ops/pool.h"

/* input x; outputs y, indices (import works at opset 0) */
static const opt_names k_names = {"pool0", "x", "y indices"};

static float g_x5[25], g_x4[16];

static void init_data(void)
{
    for (int i = 0; i < 25; i++) g_x5[i] = (float)(i + 1);
    for (int i = 0; i < 16; i++) g_x4[i] = (float)(i + 1);
}

static void test_max_pool_pads(void)
{
    opt_node f;
    opt_init(&f, &k_names, OP_MAX_POOL, 0, 1, 1);
    opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){5, 5});
    opt_attr_ints(&f, "pads", 4, (int64_t[]){2, 2, 2, 2});
    smelt_tensor x = opt_tensor(F32, 4, (int64_t[]){1, 1, 5, 5}, g_x5);
    const smelt_tensor *y = &f.out[0];
    CHECK(opt_run(&f, &x, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(y, 4, (int64_t[]){1, 1, 5, 5});
    static const double want[] = {13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25,
                                  25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25};
    OPT_EXPECT_F64(y, want, 25, OPT_EXACT);
    opt_fini(&f);
}

static void test_max_pool_uint8(void)
{
    uint8_t x8[25];
    for (int i = 0; i < 25; i++) x8[i] = (uint8_t)(i * 10);
    opt_node f;
    opt_init(&f, &k_names, OP_MAX_POOL, 0, 1, 1);
    opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
    opt_attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
    smelt_tensor x = opt_tensor(U8, 4, (int64_t[]){1, 1, 5, 5}, x8);
    const smelt_tensor *y = &f.out[0];
    CHECK(opt_run(&f, &x, 1) == SMELT_OK);
    CHECK(y->dtype == U8);
    static const double want[] = {60, 80, 160, 180};
    OPT_EXPECT_F64(y, want, 4, OPT_EXACT);
    opt_fini(&f);
}

static void test_ceil_mode(void)
{
    static const double want_max[] = {11, 12, 15, 16}, want_avg[] = {6, 7.5, 12, 13.5};
    for (int avg = 0; avg < 2; avg++) {
        opt_node f;
        opt_init(&f, &k_names, avg ? OP_AVERAGE_POOL : OP_MAX_POOL, 0, 1, 1);
        opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){3, 3});
        opt_attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
        opt_attr_int(&f, "ceil_mode", 1);
        smelt_tensor x = opt_tensor(F32, 4, (int64_t[]){1, 1, 4, 4}, g_x4);
        const smelt_tensor *y = &f.out[0];
        CHECK(opt_run(&f, &x, 1) == SMELT_OK);
        OPT_EXPECT_DIMS(y, 4, (int64_t[]){1, 1, 2, 2});
        OPT_EXPECT_F64(y, avg ? want_avg : want_max, 4, OPT_REL(1e-6));
        opt_fini(&f);
    }
    /* The last window may not start in the end padding: 5 wide, k 2, s 2,
     * pads 1+1 -> ceil((5+2-2)/2)+1 = 4, but window 3 would start at 6-1=5 >= 5. */
    opt_node f;
    opt_init(&f, &k_names, OP_MAX_POOL, 0, 1, 1);
    opt_attr_ints(&f, "kernel_shape", 1, (int64_t[]){2});
    opt_attr_ints(&f, "strides", 1, (int64_t[]){2});
    opt_attr_ints(&f, "pads", 2, (int64_t[]){1, 1});
    opt_attr_int(&f, "ceil_mode", 1);
    smelt_tensor x = opt_tensor(F32, 3, (int64_t[]){1, 1, 5}, g_x5);
    const smelt_tensor *y = &f.out[0];
    CHECK(opt_run(&f, &x, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(y, 3, (int64_t[]){1, 1, 3});
    static const double want[] = {1, 3, 5};
    OPT_EXPECT_F64(y, want, 3, OPT_EXACT);
    opt_fini(&f);
}

static void test_dilations_and_indices(void)
{
    {
        opt_node f;
        opt_init(&f, &k_names, OP_MAX_POOL, 0, 1, 1);
        opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        opt_attr_ints(&f, "dilations", 2, (int64_t[]){2, 2});
        smelt_tensor x = opt_tensor(F32, 4, (int64_t[]){1, 1, 4, 4}, g_x4);
        const smelt_tensor *y = &f.out[0];
        CHECK(opt_run(&f, &x, 1) == SMELT_OK);
        static const double want[] = {11, 12, 15, 16};
        OPT_EXPECT_F64(y, want, 4, OPT_EXACT);
        opt_fini(&f);
    }
    for (int col_major = 0; col_major < 2; col_major++) {
        opt_node f;
        opt_init(&f, &k_names, OP_MAX_POOL, 0, 1, 2);
        opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        opt_attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
        opt_attr_int(&f, "storage_order", col_major);
        float x2[50];
        for (int i = 0; i < 50; i++) x2[i] = (float)(i % 25 + 1);
        smelt_tensor x = opt_tensor(F32, 4, (int64_t[]){1, 2, 5, 5}, x2);
        const smelt_tensor *y = f.out;
        CHECK(opt_run(&f, &x, 1) == SMELT_OK);
        CHECK(y[1].dtype == I64);
        OPT_EXPECT_DIMS(&y[1], 4, (int64_t[]){1, 2, 2, 2});
        static const double want_rm[] = {6, 8, 16, 18, 31, 33, 41, 43};
        static const double want_cm[] = {6, 16, 8, 18, 31, 41, 33, 43};
        static const double want_y[] = {7, 9, 17, 19, 7, 9, 17, 19};
        OPT_EXPECT_F64(&y[0], want_y, 8, OPT_EXACT);
        OPT_EXPECT_F64(&y[1], col_major ? want_cm : want_rm, 8, OPT_EXACT);
        opt_fini(&f);
    }
}

static void test_average_pool_pads(void)
{
    {   /* count_include_pad */
        opt_node f;
        opt_init(&f, &k_names, OP_AVERAGE_POOL, 0, 1, 1);
        opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){5, 5});
        opt_attr_ints(&f, "pads", 4, (int64_t[]){2, 2, 2, 2});
        opt_attr_int(&f, "count_include_pad", 1);
        smelt_tensor x = opt_tensor(F32, 4, (int64_t[]){1, 1, 5, 5}, g_x5);
        const smelt_tensor *y = &f.out[0];
        CHECK(opt_run(&f, &x, 1) == SMELT_OK);
        static const double want[] = {2.52, 3.6, 4.8, 4.08, 3.24, 4.56, 6.4, 8.4, 7.04,
                                      5.52, 7.2, 10, 13, 10.8, 8.4, 6.96, 9.6, 12.4,
                                      10.24, 7.92, 6.12, 8.4, 10.8, 8.88, 6.84};
        OPT_EXPECT_F64(y, want, 25, OPT_REL(1e-6));
        opt_fini(&f);
    }
    {   /* SAME_UPPER, pads excluded from the count */
        opt_node f;
        opt_init(&f, &k_names, OP_AVERAGE_POOL, 0, 1, 1);
        opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){3, 3});
        opt_attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
        opt_attr_string(&f, "auto_pad", "SAME_UPPER");
        smelt_tensor x = opt_tensor(F32, 4, (int64_t[]){1, 1, 5, 5}, g_x5);
        const smelt_tensor *y = &f.out[0];
        CHECK(opt_run(&f, &x, 1) == SMELT_OK);
        OPT_EXPECT_DIMS(y, 4, (int64_t[]){1, 1, 3, 3});
        static const double want[] = {4, 5.5, 7, 11.5, 13, 14.5, 19, 20.5, 22};
        OPT_EXPECT_F64(y, want, 9, OPT_REL(1e-6));
        opt_fini(&f);
    }
    {   /* SAME_LOWER, k 2: the single pad unit goes first */
        opt_node f;
        opt_init(&f, &k_names, OP_AVERAGE_POOL, 0, 1, 1);
        opt_attr_ints(&f, "kernel_shape", 1, (int64_t[]){2});
        opt_attr_string(&f, "auto_pad", "SAME_LOWER");
        smelt_tensor x = opt_tensor(F32, 3, (int64_t[]){1, 1, 4}, g_x4);
        const smelt_tensor *y = &f.out[0];
        CHECK(opt_run(&f, &x, 1) == SMELT_OK);
        static const double want[] = {1, 1.5, 2.5, 3.5};
        OPT_EXPECT_F64(y, want, 4, OPT_REL(1e-6));
        opt_fini(&f);
    }
}

static void test_global_pools(void)
{
    double x[12];
    for (int i = 0; i < 12; i++) x[i] = (i % 3 == 1) ? -i : i;
    for (int is_max = 0; is_max < 2; is_max++) {
        opt_node f;
        opt_init(&f, &k_names, is_max ? OP_GLOBAL_MAX_POOL : OP_GLOBAL_AVERAGE_POOL, 0, 1, 1);
        smelt_tensor xt = opt_tensor(F64, 4, (int64_t[]){1, 2, 2, 3}, x);
        const smelt_tensor *y = &f.out[0];
        CHECK(opt_run(&f, &xt, 1) == SMELT_OK);
        OPT_EXPECT_DIMS(y, 4, (int64_t[]){1, 2, 1, 1});
        static const double want_avg[] = {5.0 / 6, 17.0 / 6}, want_max[] = {5, 11};
        OPT_EXPECT_F64(y, is_max ? want_max : want_avg, 2, OPT_REL(1e-12));
        opt_fini(&f);
    }
}

static void test_lrn(void)
{
    float x[2 * 5 * 3];
    for (int i = 0; i < 30; i++) x[i] = (float)((i * 7) % 11) - 5.0f;
    opt_node f;
    opt_init(&f, &k_names, OP_LRN, 0, 1, 1);
    opt_attr_float(&f, "alpha", 0.5f);
    opt_attr_float(&f, "beta", 0.75f);
    opt_attr_float(&f, "bias", 2.0f);
    opt_attr_int(&f, "size", 4);
    smelt_tensor xt = opt_tensor(F32, 3, (int64_t[]){2, 5, 3}, x);
    const smelt_tensor *y = &f.out[0];
    CHECK(opt_run(&f, &xt, 1) == SMELT_OK);
    double want[30];
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 5; c++)
            for (int s = 0; s < 3; s++) {
                double sq = 0; /* size 4: channels c-1 .. c+2 */
                for (int j = c - 1; j <= c + 2; j++)
                    if (j >= 0 && j < 5) sq += pow(x[(n * 5 + j) * 3 + s], 2);
                int i = (n * 5 + c) * 3 + s;
                want[i] = x[i] / pow(2.0 + 0.5 / 4 * sq, 0.75);
            }
    OPT_EXPECT_F64(y, want, 30, OPT_REL(1e-6));
    opt_fini(&f);
}

static void test_symbolic_infer(void)
{
    opt_node f;
    opt_init(&f, &k_names, OP_MAX_POOL, 0, 1, 2);
    opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){3, 3});
    opt_attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
    opt_attr_string(&f, "auto_pad", "SAME_UPPER");
    const op_def *def = op_get(OP_MAX_POOL)->def;
    CHECK(opt_import(&f) == SMELT_OK);
    smelt_tensor x =
        opt_tensor(F32, 4, (int64_t[]){GR_DIM_SYM(0), 8, GR_DIM_SYM(1), 9}, NULL);
    const smelt_tensor *ins[1] = {&x};
    smelt_tensor y[2];
    memset(y, 0, sizeof y);
    CHECK(def->infer(f.ctx, f.node, ins, y) == SMELT_OK);
    OPT_EXPECT_DIMS(&y[0], 4, (int64_t[]){GR_DIM_SYM(0), 8, GR_DIM_UNKNOWN, 5});
    OPT_EXPECT_DIMS(&y[1], 4, (int64_t[]){GR_DIM_SYM(0), 8, GR_DIM_UNKNOWN, 5});
    opt_fini(&f);
}

static void expect_error(opt_node *f, smelt_tensor *x, smelt_status code, const char *needle)
{
    CHECK(opt_run(f, x, 1) == code);
    CHECK_STR_CONTAINS(opt_message(f), needle);
    CHECK_STR_CONTAINS(opt_message(f), "node 'pool0' (");
}

static void test_errors(void)
{
    {
        opt_node f;
        opt_init(&f, &k_names, OP_MAX_POOL, 0, 1, 1);
        smelt_tensor x = opt_tensor(F32, 4, (int64_t[]){1, 1, 4, 4}, g_x4);
        expect_error(&f, &x, SMELT_ERR_ATTR, "attribute 'kernel_shape' is required");
        opt_fini(&f);
    }
    {
        opt_node f;
        opt_init(&f, &k_names, OP_AVERAGE_POOL, 0, 1, 1);
        opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        opt_attr_ints(&f, "pads", 3, (int64_t[]){1, 1, 1});
        smelt_tensor x = opt_tensor(F32, 4, (int64_t[]){1, 1, 4, 4}, g_x4);
        expect_error(&f, &x, SMELT_ERR_ATTR, "'pads' has 3 values");
        opt_fini(&f);
    }
    {
        opt_node f;
        opt_init(&f, &k_names, OP_AVERAGE_POOL, 0, 1, 1);
        opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        smelt_tensor x = opt_tensor(F32, 2, (int64_t[]){4, 4}, g_x4);
        expect_error(&f, &x, SMELT_ERR_SHAPE, "input X 'x' has rank 2, expected at least 3");
        opt_fini(&f);
    }
    {
        opt_node f;
        opt_init(&f, &k_names, OP_AVERAGE_POOL, 0, 1, 1);
        opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        int64_t xi[16] = {0};
        smelt_tensor x = opt_tensor(I64, 4, (int64_t[]){1, 1, 4, 4}, xi);
        expect_error(&f, &x, SMELT_ERR_UNSUPPORTED, "unsupported dtype i64");
        opt_fini(&f);
    }
    {
        opt_node f;
        opt_init(&f, &k_names, OP_MAX_POOL, 0, 1, 1);
        opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        opt_attr_int(&f, "storage_order", 2);
        smelt_tensor x = opt_tensor(F32, 4, (int64_t[]){1, 1, 4, 4}, g_x4);
        expect_error(&f, &x, SMELT_ERR_ATTR, "'storage_order' is 2");
        opt_fini(&f);
    }
    {
        opt_node f;
        opt_init(&f, &k_names, OP_LRN, 0, 1, 1);
        smelt_tensor x = opt_tensor(F32, 4, (int64_t[]){1, 1, 4, 4}, g_x4);
        expect_error(&f, &x, SMELT_ERR_ATTR, "attribute 'size' is required");
        opt_fini(&f);
    }
}

/* The registry must hand out exactly these definitions. */
extern const op_def op_def_MAX_POOL, op_def_AVERAGE_POOL, op_def_GLOBAL_AVERAGE_POOL,
    op_def_GLOBAL_MAX_POOL, op_def_LRN;

int main(void)
{
    static const struct { op_kind kind; const op_def *def; } defs[] = {
        {OP_MAX_POOL, &op_def_MAX_POOL},
        {OP_AVERAGE_POOL, &op_def_AVERAGE_POOL},
        {OP_GLOBAL_AVERAGE_POOL, &op_def_GLOBAL_AVERAGE_POOL},
        {OP_GLOBAL_MAX_POOL, &op_def_GLOBAL_MAX_POOL},
        {OP_LRN, &op_def_LRN},
    };
    bool registered = true;
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        CHECK(op_get(defs[i].kind)->def == defs[i].def);
        registered = registered && op_get(defs[i].kind)->def;
    }
    if (!registered) TEST_MAIN_END();
    init_data();
    test_max_pool_pads();
    test_max_pool_uint8();
    test_ceil_mode();
    test_dilations_and_indices();
    test_average_pool_pads();
    test_global_pools();
    test_lrn();
    test_symbolic_infer();
    test_errors();
    TEST_MAIN_END();
}
