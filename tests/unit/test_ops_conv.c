/* Conv and ConvTranspose: attribute import, shape inference, reference
 * kernel (hand-computed cases and a naive per-element oracle), errors. */
#include "op_test_util.h"
#include "ops/conv.h"

/* inputs x, w, b; output y (import works at opset 0) */
static const opt_names k_names = {"conv0", "x w b", "y"};

/* Both output channels of the ConvTranspose examples hold the same values. */
static void check_both_channels(const smelt_tensor *t, const float *want, int64_t n)
{
    CHECK(op_numel(t) == 2 * n);
    for (int c = 0; c < 2; c++) {
        smelt_tensor channel = opt_vec(F32, n, (float *)t->data + c * n);
        OPT_EXPECT_F32(&channel, want, n, OPT_REL(1e-6));
    }
}

/* ---- hand-computed cases from the ONNX spec examples ---- */

static float g_x5x5[25], g_x7x5[35], g_ones9[9];

static void init_data(void)
{
    for (int i = 0; i < 25; i++) g_x5x5[i] = (float)i;
    for (int i = 0; i < 35; i++) g_x7x5[i] = (float)i;
    for (int i = 0; i < 9; i++) g_ones9[i] = 1.0f;
}

static void test_basic_padding(void)
{
    opt_node f;
    opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
    opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){3, 3});
    opt_attr_ints(&f, "pads", 4, (int64_t[]){1, 1, 1, 1});
    smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 5, 5}, g_x5x5),
                          opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, g_ones9)};
    const smelt_tensor *y = &f.out[0];
    CHECK(opt_run(&f, in, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(y, 4, (int64_t[]){1, 1, 5, 5});
    static const float want[] = {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108,
                                 117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84};
    OPT_EXPECT_F32(y, want, 25, OPT_REL(1e-6));
    opt_fini(&f);
}

static void test_strides_asymmetric(void)
{
    opt_node f;
    opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
    opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){3, 3});
    opt_attr_ints(&f, "pads", 4, (int64_t[]){1, 0, 1, 0});
    opt_attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
    smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 7, 5}, g_x7x5),
                          opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, g_ones9)};
    const smelt_tensor *y = &f.out[0];
    CHECK(opt_run(&f, in, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(y, 4, (int64_t[]){1, 1, 4, 2});
    static const float want[] = {21, 33, 99, 117, 189, 207, 171, 183};
    OPT_EXPECT_F32(y, want, 8, OPT_REL(1e-6));
    opt_fini(&f);
}

static void test_same_lower(void)
{
    opt_node f;
    opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
    opt_attr_string(&f, "auto_pad", "SAME_LOWER");
    opt_attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
    smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 5, 5}, g_x5x5),
                          opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, g_ones9)};
    const smelt_tensor *y = &f.out[0];
    CHECK(opt_run(&f, in, 2) == SMELT_OK); /* kernel_shape taken from W */
    static const float want[] = {12, 27, 24, 63, 108, 81, 72, 117, 84};
    OPT_EXPECT_F32(y, want, 9, OPT_REL(1e-6));
    const op_conv_attrs *a = f.node->op_attrs;
    CHECK(a->win.auto_pad == OP_AUTO_PAD_SAME_LOWER && a->group == 1);
    opt_fini(&f);
}

static void test_depthwise_bias_dilation(void)
{
    /* 1D, 2 channels, group 2, kernel [1, 1] dilated by 2, bias. */
    float x[] = {1, 2, 3, 4, 5, 10, 20, 30, 40, 50};
    float w[] = {1, 1, 2, -1};
    float b[] = {0.5f, -1};
    opt_node f;
    opt_init(&f, &k_names, OP_CONV, 0, 3, 1);
    opt_attr_int(&f, "group", 2);
    opt_attr_ints(&f, "dilations", 1, (int64_t[]){2});
    smelt_tensor in[3] = {opt_tensor(F32, 3, (int64_t[]){1, 2, 5}, x),
                          opt_tensor(F32, 3, (int64_t[]){2, 1, 2}, w),
                          opt_tensor(F32, 1, (int64_t[]){2}, b)};
    const smelt_tensor *y = &f.out[0];
    CHECK(opt_run(&f, in, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(y, 3, (int64_t[]){1, 2, 3});
    static const float want[] = {4.5f, 6.5f, 8.5f, -11, -1, 9};
    OPT_EXPECT_F32(y, want, 6, OPT_REL(1e-6));
    opt_fini(&f);
}

static void test_transpose_examples(void)
{
    float x[9], w[18];
    for (int i = 0; i < 9; i++) x[i] = (float)i;
    for (int i = 0; i < 18; i++) w[i] = 1;
    {
        opt_node f;
        opt_init(&f, &k_names, OP_CONV_TRANSPOSE, 0, 2, 1);
        smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, x),
                              opt_tensor(F32, 4, (int64_t[]){1, 2, 3, 3}, w)};
        const smelt_tensor *y = &f.out[0];
        CHECK(opt_run(&f, in, 2) == SMELT_OK);
        OPT_EXPECT_DIMS(y, 4, (int64_t[]){1, 2, 5, 5});
        static const float want[] = {0, 1,  3,  3,  2,  3, 8,  15, 12, 7,  9, 21, 36,
                                     27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
        check_both_channels(y, want, 25);
        opt_fini(&f);
    }
    for (int full_rank = 0; full_rank < 2; full_rank++) {
        /* output_shape larger than the full result: the extra row/col is zero.
         * Some exporters also write the N and C dims. */
        opt_node f;
        opt_init(&f, &k_names, OP_CONV_TRANSPOSE, 0, 2, 1);
        opt_attr_ints(&f, "strides", 2, (int64_t[]){3, 2});
        if (full_rank)
            opt_attr_ints(&f, "output_shape", 4, (int64_t[]){1, 2, 10, 8});
        else
            opt_attr_ints(&f, "output_shape", 2, (int64_t[]){10, 8});
        smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, x),
                              opt_tensor(F32, 4, (int64_t[]){1, 2, 3, 3}, w)};
        const smelt_tensor *y = &f.out[0];
        CHECK(opt_run(&f, in, 2) == SMELT_OK);
        OPT_EXPECT_DIMS(y, 4, (int64_t[]){1, 2, 10, 8});
        static const float row0[] = {0, 0, 1, 1, 3, 2, 2, 0}, row9[8] = {0};
        smelt_tensor first = opt_vec(F32, 8, y->data);
        smelt_tensor last = opt_vec(F32, 8, (float *)y->data + 72);
        OPT_EXPECT_F32(&first, row0, 8, OPT_REL(1e-6));
        OPT_EXPECT_F32(&last, row9, 8, OPT_REL(1e-6));
        opt_fini(&f);
    }
    {   /* pads */
        opt_node f;
        opt_init(&f, &k_names, OP_CONV_TRANSPOSE, 0, 2, 1);
        opt_attr_ints(&f, "strides", 2, (int64_t[]){3, 2});
        opt_attr_ints(&f, "pads", 4, (int64_t[]){1, 2, 1, 2});
        smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, x),
                              opt_tensor(F32, 4, (int64_t[]){1, 2, 3, 3}, w)};
        const smelt_tensor *y = &f.out[0];
        CHECK(opt_run(&f, in, 2) == SMELT_OK);
        OPT_EXPECT_DIMS(y, 4, (int64_t[]){1, 2, 7, 3});
        static const float want[] = {1, 1, 3,  1, 1, 3,  7,  4, 9, 7, 4,
                                     9, 7, 4, 9, 13, 7, 15, 13, 7, 15};
        check_both_channels(y, want, 21);
        opt_fini(&f);
    }
}

/* ---- randomized comparison with a naive per-element oracle ---- */

typedef struct case_desc {
    bool transpose;
    int ns;
    int64_t n, c, m, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], op[3];
} case_desc;

static uint32_t g_rng = 12345;
static float rnd(void) { return (float)(opt_random(&g_rng) & 0xffff) / 32768.0f - 1.0f; }

/* Input position of output position o through kernel tap k on axis a, or -1.
 * Forward: i = o*s + k*d - pb.  Transposed: o = i*s + k*d - pb, solved for i. */
static int64_t naive_input_pos(const case_desc *cd, int a, int64_t o, int64_t k)
{
    int64_t i;
    if (!cd->transpose) {
        i = o * cd->s[a] + k * cd->d[a] - cd->pb[a];
    } else {
        int64_t t = o + cd->pb[a] - k * cd->d[a];
        if (t < 0 || t % cd->s[a] != 0) return -1;
        i = t / cd->s[a];
    }
    return i >= 0 && i < cd->in[a] ? i : -1;
}

/* Row-major flat index of pos[] in dims[] (ns axes). */
static int64_t flat(int ns, const int64_t *dims, const int64_t *pos)
{
    int64_t f = 0;
    for (int a = 0; a < ns; a++) f = f * dims[a] + pos[a];
    return f;
}

/* Naive oracle: one output element = bias + sum over (channel, tap). */
static double naive_element(const case_desc *cd, const float *x, const float *w, const float *b,
                            int64_t n, int64_t m, const int64_t *opos)
{
    int64_t cg = cd->c / cd->group, mg = cd->m / cd->group, g = m / mg, kv = 1, iplane = 1;
    for (int a = 0; a < cd->ns; a++) kv *= cd->k[a], iplane *= cd->in[a];
    double sum = b[m];
    for (int64_t ci = 0; ci < cg; ci++) {
        int64_t c = g * cg + ci;
        for (int64_t kk = 0; kk < kv; kk++) {
            int64_t kpos[3], ipos[3], rest = kk;
            bool inside = true;
            for (int a = cd->ns - 1; a >= 0; a--) {
                kpos[a] = rest % cd->k[a];
                rest /= cd->k[a];
            }
            for (int a = 0; a < cd->ns; a++) {
                ipos[a] = naive_input_pos(cd, a, opos[a], kpos[a]);
                inside = inside && ipos[a] >= 0;
            }
            if (!inside) continue;
            int64_t wi = cd->transpose ? (c * mg + m % mg) * kv + kk : (m * cg + ci) * kv + kk;
            int64_t xi = (n * cd->c + c) * iplane + flat(cd->ns, cd->in, ipos);
            sum += (double)w[wi] * x[xi];
        }
    }
    return sum;
}

static void naive_conv(const case_desc *cd, const int64_t *out, const float *x, const float *w,
                       const float *b, float *y)
{
    int64_t plane = 1;
    for (int a = 0; a < cd->ns; a++) plane *= out[a];
    for (int64_t n = 0; n < cd->n; n++)
        for (int64_t m = 0; m < cd->m; m++)
            for (int64_t p = 0; p < plane; p++) {
                int64_t opos[3], rest = p;
                for (int a = cd->ns - 1; a >= 0; a--) {
                    opos[a] = rest % out[a];
                    rest /= out[a];
                }
                y[(n * cd->m + m) * plane + p] = (float)naive_element(cd, x, w, b, n, m, opos);
            }
}

static void run_random_case(const case_desc *cd)
{
    opt_node f;
    opt_init(&f, &k_names, cd->transpose ? OP_CONV_TRANSPOSE : OP_CONV, 0, 3, 1);
    int64_t pads[6], xd[5] = {cd->n, cd->c}, wd[5];
    wd[0] = cd->transpose ? cd->c : cd->m;
    wd[1] = cd->transpose ? cd->m / cd->group : cd->c / cd->group;
    for (int i = 0; i < cd->ns; i++) {
        pads[i] = cd->pb[i];
        pads[cd->ns + i] = cd->pe[i];
        xd[2 + i] = cd->in[i];
        wd[2 + i] = cd->k[i];
    }
    opt_attr_ints(&f, "strides", cd->ns, cd->s);
    opt_attr_ints(&f, "dilations", cd->ns, cd->d);
    opt_attr_ints(&f, "pads", 2 * cd->ns, pads);
    opt_attr_int(&f, "group", cd->group);
    if (cd->transpose) opt_attr_ints(&f, "output_padding", cd->ns, cd->op);
    int64_t xn = cd->n * cd->c, wn = wd[0] * wd[1];
    for (int i = 0; i < cd->ns; i++) xn *= cd->in[i], wn *= cd->k[i];
    float *x = malloc(sizeof(float) * (size_t)xn), *w = malloc(sizeof(float) * (size_t)wn);
    float *b = malloc(sizeof(float) * (size_t)cd->m);
    for (int64_t i = 0; i < xn; i++) x[i] = rnd();
    for (int64_t i = 0; i < wn; i++) w[i] = rnd();
    for (int64_t i = 0; i < cd->m; i++) b[i] = rnd();
    smelt_tensor in[3] = {opt_tensor(F32, cd->ns + 2, xd, x), opt_tensor(F32, cd->ns + 2, wd, w),
                          opt_tensor(F32, 1, (int64_t[]){cd->m}, b)};
    const smelt_tensor *y = &f.out[0];
    smelt_status s = opt_run(&f, in, 3);
    CHECK(s == SMELT_OK);
    if (s != SMELT_OK) fprintf(stderr, "  %s\n", smelt_ctx_message(f.ctx));
    if (s == SMELT_OK) {
        int64_t out[3], yn = op_numel(y);
        for (int i = 0; i < cd->ns; i++) {
            int64_t dk = cd->d[i] * (cd->k[i] - 1) + 1;
            out[i] = cd->transpose
                         ? cd->s[i] * (cd->in[i] - 1) + dk + cd->op[i] - cd->pb[i] - cd->pe[i]
                         : (cd->in[i] + cd->pb[i] + cd->pe[i] - dk) / cd->s[i] + 1;
            CHECK(y->dims[2 + i] == out[i]);
        }
        float *ref = malloc(sizeof(float) * (size_t)yn);
        naive_conv(cd, out, x, w, b, ref);
        OPT_EXPECT_F32(y, ref, yn, OPT_REL(1e-5));
        free(ref);
    }
    free(x);
    free(w);
    free(b);
    opt_fini(&f);
}

static void test_random_against_naive(void)
{
    static const case_desc cases[] = {
        /* 2D: stride, dilation, asymmetric pads, groups */
        {false, 2, 2, 4, 6, 2, {7, 9}, {3, 2}, {2, 1}, {1, 2}, {1, 0}, {2, 1}, {0}},
        {false, 2, 1, 3, 3, 3, {5, 6}, {3, 3}, {1, 2}, {1, 1}, {2, 2}, {2, 2}, {0}},
        {false, 2, 1, 4, 8, 1, {4, 4}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {0}}, /* pointwise */
        {false, 2, 1, 2, 2, 1, {6, 6}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {0}},
        {false, 1, 2, 2, 4, 2, {11}, {4}, {3}, {2}, {3}, {1}, {0}},
        {false, 3, 1, 2, 2, 1, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {2, 1, 1}, {1, 1, 0}, {0, 1, 1},
         {0}},
        /* ConvTranspose */
        {true, 2, 2, 4, 6, 2, {3, 4}, {3, 2}, {2, 3}, {1, 2}, {1, 0}, {0, 2}, {1, 1}},
        {true, 1, 1, 3, 3, 3, {5}, {3}, {2}, {2}, {0}, {1}, {1}},
        {true, 3, 1, 2, 2, 1, {2, 3, 2}, {2, 2, 3}, {1, 2, 2}, {1, 1, 2}, {0, 1, 1}, {1, 0, 0},
         {0, 1, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_random_case(&cases[i]);
}

/* ---- other dtypes ---- */

static void test_float16_and_double(void)
{
    uint16_t x16[25], w16[9];
    double x64[25], w64[9];
    for (int i = 0; i < 25; i++) x16[i] = smelt_f32_to_f16((float)i), x64[i] = i;
    for (int i = 0; i < 9; i++) w16[i] = smelt_f32_to_f16(1.0f), w64[i] = 1.0;
    static const float want[] = {54, 63, 72, 99, 108, 117, 144, 153, 162};
    for (int pass = 0; pass < 2; pass++) {
        opt_node f;
        opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
        smelt_dtype dt = pass == 0 ? F16 : F64;
        void *xd = pass == 0 ? (void *)x16 : (void *)x64;
        void *wd = pass == 0 ? (void *)w16 : (void *)w64;
        smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 5, 5}, xd),
                              opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, wd)};
        in[0].dtype = in[1].dtype = dt;
        const smelt_tensor *y = &f.out[0];
        CHECK(opt_run(&f, in, 2) == SMELT_OK);
        CHECK(y->dtype == dt);
        OPT_EXPECT_F32(y, want, 9, OPT_REL(1e-6));
        opt_fini(&f);
    }
}

/* ---- shape inference with symbolic dims ---- */

static void test_symbolic_infer(void)
{
    opt_node f;
    opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
    opt_attr_ints(&f, "pads", 4, (int64_t[]){1, 1, 1, 1});
    const op_def *def = op_get(OP_CONV)->def;
    CHECK(opt_import(&f) == SMELT_OK);
    smelt_tensor x = opt_tensor(F32, 4, (int64_t[]){GR_DIM_SYM(0), 3, GR_DIM_SYM(1), 8}, NULL);
    smelt_tensor w = opt_tensor(F32, 4, (int64_t[]){16, 3, 3, 3}, NULL);
    const smelt_tensor *ins[2] = {&x, &w};
    smelt_tensor y;
    memset(&y, 0, sizeof y);
    CHECK(def->infer(f.ctx, f.node, ins, &y) == SMELT_OK);
    OPT_EXPECT_DIMS(&y, 4, (int64_t[]){GR_DIM_SYM(0), 16, GR_DIM_UNKNOWN, 8});
    opt_fini(&f);
}

/* ---- errors ---- */

static void expect_error(opt_node *f, smelt_tensor *in, int n_in, smelt_status code,
                         const char *needle)
{
    CHECK(opt_run(f, in, n_in) == code);
    CHECK_STR_CONTAINS(opt_message(f), needle);
    CHECK_STR_CONTAINS(opt_message(f), "node 'conv0' (Conv");
}

static void test_errors(void)
{
    float data[64] = {0};
    {
        opt_node f;
        opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
        smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 2, 4, 4}, data),
                              opt_tensor(F32, 4, (int64_t[]){1, 3, 3, 3}, data)};
        expect_error(&f, in, 2, SMELT_ERR_SHAPE, "input X 'x' has 2 channels, but W 'w'");
        opt_fini(&f);
    }
    {
        opt_node f;
        opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
        opt_attr_string(&f, "auto_pad", "SAME");
        smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 4, 4}, data),
                              opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, data)};
        expect_error(&f, in, 2, SMELT_ERR_ATTR, "'auto_pad' has unknown value 'SAME'");
        opt_fini(&f);
    }
    {
        opt_node f;
        opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
        opt_attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 4, 4}, data),
                              opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, data)};
        expect_error(&f, in, 2, SMELT_ERR_SHAPE, "'kernel_shape' is 2 for spatial dim 0");
        opt_fini(&f);
    }
    {
        opt_node f;
        opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
        opt_attr_ints(&f, "strides", 3, (int64_t[]){1, 1, 1});
        smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 4, 4}, data),
                              opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, data)};
        expect_error(&f, in, 2, SMELT_ERR_ATTR, "'strides' has 3 values, expected 2");
        opt_fini(&f);
    }
    {
        opt_node f;
        opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
        smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 2, 2}, data),
                              opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, data)};
        expect_error(&f, in, 2, SMELT_ERR_SHAPE, "smaller than the kernel extent 3");
        opt_fini(&f);
    }
    {
        opt_node f;
        opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
        smelt_tensor in[2] = {opt_tensor(F32, 3, (int64_t[]){1, 1, 4}, data),
                              opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, data)};
        expect_error(&f, in, 2, SMELT_ERR_SHAPE, "input W 'w' has rank 4, expected 3");
        opt_fini(&f);
    }
    {
        opt_node f;
        opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
        opt_attr_int(&f, "group", 0);
        smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){1, 1, 4, 4}, data),
                              opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, data)};
        expect_error(&f, in, 2, SMELT_ERR_ATTR, "attribute 'group' is 0");
        opt_fini(&f);
    }
}

static void test_zero_batch(void)
{
    float w[9] = {0};
    opt_node f;
    opt_init(&f, &k_names, OP_CONV, 0, 2, 1);
    smelt_tensor in[2] = {opt_tensor(F32, 4, (int64_t[]){0, 1, 4, 4}, NULL),
                          opt_tensor(F32, 4, (int64_t[]){1, 1, 3, 3}, w)};
    const smelt_tensor *y = &f.out[0];
    CHECK(opt_run(&f, in, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(y, 4, (int64_t[]){0, 1, 2, 2});
    opt_fini(&f);
}

/* The registry must hand out exactly these definitions. */
extern const op_def op_def_CONV, op_def_CONV_TRANSPOSE;

int main(void)
{
    CHECK(op_get(OP_CONV)->def == &op_def_CONV);
    CHECK(op_get(OP_CONV_TRANSPOSE)->def == &op_def_CONV_TRANSPOSE);
    if (!op_get(OP_CONV)->def || !op_get(OP_CONV_TRANSPOSE)->def) TEST_MAIN_END();
    init_data();
    test_basic_padding();
    test_strides_asymmetric();
    test_same_lower();
    test_depthwise_bias_dilation();
    test_transpose_examples();
    test_random_against_naive();
    test_float16_and_double();
    test_symbolic_infer();
    test_errors();
    test_zero_batch();
    TEST_MAIN_END();
}
