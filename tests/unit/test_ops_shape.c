/* Unit tests of the shape family: Identity, Dropout, Flatten, Reshape,
 * Transpose, Squeeze/Unsqueeze, Shape, Size, Expand, Tile, Concat, Split,
 * ConstantOfShape, Range. */
#include "op_test_util.h"

/* A strong reference: registry.c's references are weak, and a weak
 * reference alone does not pull shape.o out of the static library. */
extern const op_def op_def_RESHAPE;

static void test_registry(void)
{
    CHECK(op_get(OP_RESHAPE)->def == &op_def_RESHAPE);
    for (int op = OP_IDENTITY; op <= OP_RANGE; op++) CHECK(op_get((op_kind)op)->def != NULL);
}

/* inputs X, B, C, D; outputs Y0, Y1, ... */
static const opt_names k_names = {"n0", "X B C D", "Y%d"};

#define DIMS OPT_DIMS
#define FLOATS OPT_F32S

/* ---- Identity, Dropout ---- */

static void test_identity_dropout(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_IDENTITY, 13, 1, 1);
    uint8_t x[] = {1, 0, 1};
    smelt_tensor tx = opt_tensor(BOOL, 1, DIMS(3), x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
    CHECK(out[0].dtype == BOOL && memcmp(out[0].data, x, 3) == 0);

    opt_fini(&t);
    opt_init(&t, &k_names, OP_DROPOUT, 13, 3, 2);
    float xf[] = {1, 2, 3}, ratio = 0.5f;
    uint8_t training = 0;
    smelt_tensor tf = opt_tensor(F32, 1, DIMS(3), xf);
    smelt_tensor tr = opt_tensor(F32, 0, NULL, &ratio);
    smelt_tensor tt = opt_tensor(BOOL, 0, NULL, &training);
    const smelt_tensor *in3[] = {&tf, &tr, &tt};
    CHECK(opt_run_ptrs(&t, in3, 3) == SMELT_OK);
    OPT_EXPECT_F32(&out[0], xf, 3, OPT_EXACT);
    CHECK(out[1].dtype == BOOL);
    CHECK(((uint8_t *)out[1].data)[0] == 1 && ((uint8_t *)out[1].data)[2] == 1);
    training = 1;
    CHECK(opt_infer_ptrs(&t, in3, 3) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(opt_message(&t), "training_mode=true with a nonzero ratio is not supported");
    smelt_ctx_clear(t.ctx);
    ratio = 0; /* training with ratio 0 drops nothing: deterministic */
    CHECK(opt_run_ptrs(&t, in3, 3) == SMELT_OK);
    OPT_EXPECT_F32(&out[0], xf, 3, OPT_EXACT);
    CHECK(((uint8_t *)out[1].data)[1] == 1);
    opt_fini(&t);
}

/* ---- Flatten ---- */

static void test_flatten(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_FLATTEN, 13, 1, 1);
    smelt_tensor tx = opt_tensor(F32, 4, DIMS(GR_DIM_SYM(0), 3, 4, 5), NULL);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor *out = t.out;
    CHECK(opt_infer_ptrs(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 2, DIMS(GR_DIM_SYM(0), 60));
    gr_attr attrs[] = {opt_int_attr("axis", -1)};
    opt_use_attrs(&t, attrs, 1);
    CHECK(opt_infer_ptrs(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 2, DIMS(GR_DIM_UNKNOWN, 5));
    attrs[0].i = 0;
    CHECK(opt_infer_ptrs(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 2, DIMS(1, GR_DIM_UNKNOWN));
    attrs[0].i = 5;
    CHECK(opt_infer_ptrs(&t, in, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "axis 5 is out of range [-4, 4]");
    smelt_ctx_clear(t.ctx);
    opt_fini(&t);
}

/* ---- Reshape ---- */

static void test_reshape(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_RESHAPE, 14, 2, 1);
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    int64_t shape[] = {0, -1};
    smelt_tensor tx = opt_tensor(F32, 3, DIMS(2, 3, 4), x);
    smelt_tensor ts = opt_tensor(I64, 1, DIMS(2), shape);
    const smelt_tensor *in[] = {&tx, &ts};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 2, DIMS(2, 12));
    OPT_EXPECT_F32(&out[0], x, 24, OPT_EXACT);

    /* symbolic dims copied through cancel out of the -1 */
    int64_t shape3[] = {0, 0, -1};
    smelt_tensor tsym = opt_tensor(F32, 4, DIMS(GR_DIM_SYM(0), GR_DIM_SYM(1), 12, 64), NULL);
    smelt_tensor ts3 = opt_tensor(I64, 1, DIMS(3), shape3);
    const smelt_tensor *in_sym[] = {&tsym, &ts3};
    CHECK(opt_infer_ptrs(&t, in_sym, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 3, DIMS(GR_DIM_SYM(0), GR_DIM_SYM(1), 768));
    /* ... and a single leftover symbol becomes the -1 */
    int64_t shape4[] = {-1, 12, 64};
    smelt_tensor ts4 = opt_tensor(I64, 1, DIMS(3), shape4);
    tsym.dims[1] = 1;
    const smelt_tensor *in_sym2[] = {&tsym, &ts4};
    CHECK(opt_infer_ptrs(&t, in_sym2, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 3, DIMS(GR_DIM_SYM(0), 12, 64));

    /* unknown shape data: the rank is still known */
    smelt_tensor tunk = opt_tensor(I64, 1, DIMS(3), NULL);
    const smelt_tensor *in_unk[] = {&tx, &tunk};
    CHECK(opt_infer_ptrs(&t, in_unk, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 3, DIMS(GR_DIM_UNKNOWN, GR_DIM_UNKNOWN, GR_DIM_UNKNOWN));
    tunk.dims[0] = GR_DIM_SYM(3);
    CHECK(opt_infer_ptrs(&t, in_unk, 2) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(opt_message(&t), "shape input 'B' must be known at compile time");
    smelt_ctx_clear(t.ctx);

    /* errors */
    int64_t bad[] = {5, -1};
    smelt_tensor tb = opt_tensor(I64, 1, DIMS(2), bad);
    const smelt_tensor *in_bad[] = {&tx, &tb};
    CHECK(opt_infer_ptrs(&t, in_bad, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "cannot infer the -1 in shape [5, -1]");
    smelt_ctx_clear(t.ctx);
    bad[1] = 5;
    CHECK(opt_infer_ptrs(&t, in_bad, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t),
                       "cannot reshape input 'X' of shape [2, 3, 4] (24 elements) to [5, 5]");
    smelt_ctx_clear(t.ctx);
    bad[0] = -1;
    bad[1] = -1;
    CHECK(opt_infer_ptrs(&t, in_bad, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "more than one -1");
    smelt_ctx_clear(t.ctx);

    /* allowzero=1: 0 is a real zero */
    gr_attr attrs[] = {opt_int_attr("allowzero", 1)};
    opt_use_attrs(&t, attrs, 1);
    int64_t z[] = {3, 4, 0};
    smelt_tensor tz = opt_tensor(I64, 1, DIMS(3), z);
    smelt_tensor tx0 = opt_tensor(F32, 3, DIMS(0, 3, 4), x);
    const smelt_tensor *in_z[] = {&tx0, &tz};
    CHECK(opt_run_ptrs(&t, in_z, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 3, DIMS(3, 4, 0));
    opt_fini(&t);

    /* opset 4: the shape attribute becomes input 1 */
    opt_init(&t, &k_names, OP_RESHAPE, 4, 1, 1);
    int64_t attr_shape[] = {4, -1};
    gr_attr attrs4[] = {opt_ints_attr("shape", 2, attr_shape)};
    opt_use_attrs(&t, attrs4, 1);
    const smelt_tensor *in4[] = {&tx};
    CHECK(opt_run_ptrs(&t, in4, 1) == SMELT_OK);
    CHECK(t.node->n_inputs == 2);
    OPT_EXPECT_DIMS(&out[0], 2, DIMS(4, 6));
    OPT_EXPECT_F32(&out[0], x, 24, OPT_EXACT);
    opt_fini(&t);
}

/* ---- Transpose ---- */

static void test_transpose(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_TRANSPOSE, 13, 1, 1);
    float x[] = {1, 2, 3, 4, 5, 6};
    smelt_tensor tx = opt_tensor(F32, 2, DIMS(2, 3), x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK); /* default: reverse */
    OPT_EXPECT_DIMS(&out[0], 2, DIMS(3, 2));
    OPT_EXPECT_F32(&out[0], FLOATS(1, 4, 2, 5, 3, 6), 6, OPT_EXACT);

    /* [B, S, H, D] -> [B, H, S, D] keeps D contiguous */
    float y[2 * 3 * 2 * 2];
    for (int i = 0; i < 24; i++) y[i] = (float)i;
    int64_t perm[] = {0, 2, 1, 3};
    gr_attr attrs[] = {opt_ints_attr("perm", 4, perm)};
    opt_use_attrs(&t, attrs, 1);
    smelt_tensor ty = opt_tensor(F32, 4, DIMS(2, 3, 2, 2), y);
    const smelt_tensor *in4[] = {&ty};
    CHECK(opt_run_ptrs(&t, in4, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 4, DIMS(2, 2, 3, 2));
    float *o = out[0].data;
    /* out[b,h,s,d] = y[b,s,h,d] */
    bool ok = true;
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 3; s++)
                for (int d = 0; d < 2; d++)
                    ok &= o[((b * 2 + h) * 3 + s) * 2 + d] == y[((b * 3 + s) * 2 + h) * 2 + d];
    CHECK(ok);

    perm[1] = 1;
    CHECK(opt_infer_ptrs(&t, in4, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "perm is not a permutation of 0..3");
    smelt_ctx_clear(t.ctx);
    attrs[0].n = 2;
    CHECK(opt_infer_ptrs(&t, in4, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "perm has 2 entries but input 'X' has rank 4");
    smelt_ctx_clear(t.ctx);
    opt_fini(&t);
}

/* ---- Squeeze, Unsqueeze ---- */

static void test_squeeze_unsqueeze(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_SQUEEZE, 11, 1, 1);
    float x[] = {1, 2, 3};
    smelt_tensor tx = opt_tensor(F32, 4, DIMS(1, 3, 1, 1), x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK); /* no axes: all 1s */
    OPT_EXPECT_DIMS(&out[0], 1, DIMS(3));
    OPT_EXPECT_F32(&out[0], x, 3, OPT_EXACT);
    int64_t axes[] = {-1, 0};
    gr_attr attrs[] = {opt_ints_attr("axes", 2, axes)};
    opt_use_attrs(&t, attrs, 1);
    CHECK(opt_infer_ptrs(&t, in, 1) == SMELT_OK); /* opset 11 attribute */
    CHECK(t.node->n_inputs == 2);
    OPT_EXPECT_DIMS(&out[0], 2, DIMS(3, 1));
    axes[0] = 1;
    CHECK(opt_infer_ptrs(&t, in, 1) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "cannot squeeze axis 1 of input 'X': its size is 3, not 1");
    smelt_ctx_clear(t.ctx);

    opt_fini(&t);
    opt_init(&t, &k_names, OP_UNSQUEEZE, 13, 2, 1);
    int64_t uax[] = {0, -1};
    smelt_tensor tx3 = opt_tensor(F32, 1, DIMS(3), x);
    smelt_tensor ta = opt_tensor(I64, 1, DIMS(2), uax);
    const smelt_tensor *in2[] = {&tx3, &ta};
    CHECK(opt_run_ptrs(&t, in2, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 3, DIMS(1, 3, 1));
    OPT_EXPECT_F32(&out[0], x, 3, OPT_EXACT);
    uax[1] = 0;
    CHECK(opt_infer_ptrs(&t, in2, 2) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "axis 0 is listed twice");
    smelt_ctx_clear(t.ctx);
    opt_fini(&t);
}

/* ---- Shape, Size ---- */

static void test_shape_size(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_SHAPE, 15, 1, 1);
    gr_attr attrs[] = {opt_int_attr("start", 1), opt_int_attr("end", -1)};
    opt_use_attrs(&t, attrs, 2);
    smelt_tensor tx = opt_tensor(F32, 4, DIMS(2, 3, 4, 5), NULL); /* shapes only */
    const smelt_tensor *in[] = {&tx};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 1, DIMS(2));
    CHECK(out[0].dtype == I64);
    CHECK(((int64_t *)out[0].data)[0] == 3 && ((int64_t *)out[0].data)[1] == 4);
    CHECK(op_get(OP_SHAPE)->def->flags & OP_FLAG_SHAPE_ONLY);

    opt_fini(&t);
    opt_init(&t, &k_names, OP_SIZE, 15, 1, 1);
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
    CHECK(out[0].rank == 0 && ((int64_t *)out[0].data)[0] == 120);
    opt_fini(&t);
}

/* ---- Expand, Tile ---- */

static void test_expand_tile(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_EXPAND, 13, 2, 1);
    float x[] = {1, 2, 3};
    int64_t shape[] = {2, 1, 2};
    smelt_tensor tx = opt_tensor(F32, 2, DIMS(3, 1), x);
    smelt_tensor ts = opt_tensor(I64, 1, DIMS(3), shape);
    const smelt_tensor *in[] = {&tx, &ts};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 3, DIMS(2, 3, 2));
    OPT_EXPECT_F32(&out[0], FLOATS(1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3), 12, OPT_EXACT);
    shape[1] = 4;
    CHECK(opt_infer_ptrs(&t, in, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "cannot broadcast");
    smelt_ctx_clear(t.ctx);

    opt_fini(&t);
    opt_init(&t, &k_names, OP_TILE, 13, 2, 1);
    int64_t reps[] = {2, 2};
    float y[] = {1, 2, 3, 4};
    smelt_tensor ty = opt_tensor(F32, 2, DIMS(2, 2), y);
    smelt_tensor tr = opt_tensor(I64, 1, DIMS(2), reps);
    const smelt_tensor *in2[] = {&ty, &tr};
    CHECK(opt_run_ptrs(&t, in2, 2) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 2, DIMS(4, 4));
    OPT_EXPECT_F32(&out[0], FLOATS(1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4), 16, OPT_EXACT);
    tr.dims[0] = 1;
    CHECK(opt_infer_ptrs(&t, in2, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "repeats has 1 values but input 'X' has rank 2");
    smelt_ctx_clear(t.ctx);
    opt_fini(&t);
}

/* ---- Concat, Split ---- */

static void test_concat(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_CONCAT, 13, 3, 1);
    gr_attr attrs[] = {opt_int_attr("axis", -1)};
    opt_use_attrs(&t, attrs, 1);
    float a[] = {1, 2, 3, 4}, b[] = {9, 9}, c = 0;
    smelt_tensor ta = opt_tensor(F32, 2, DIMS(2, 2), a);
    smelt_tensor tb = opt_tensor(F32, 2, DIMS(2, 1), b);
    smelt_tensor tc = opt_tensor(F32, 2, DIMS(2, 0), &c);
    const smelt_tensor *in[] = {&ta, &tc, &tb};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 2, DIMS(2, 3));
    OPT_EXPECT_F32(&out[0], FLOATS(1, 2, 9, 3, 4, 9), 6, OPT_EXACT);
    tb.dims[0] = 3;
    CHECK(opt_infer_ptrs(&t, in, 3) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "input 'C' has size 3 in dim 0, but input 'X' has 2");
    smelt_ctx_clear(t.ctx);
    t.node->n_attrs = 0;
    CHECK(opt_infer_ptrs(&t, in, 3) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "missing required attribute 'axis'");
    smelt_ctx_clear(t.ctx);
    opt_fini(&t);
}

static void test_split(void)
{
    float x[] = {1, 2, 3, 4, 5};
    smelt_tensor tx = opt_tensor(F32, 1, DIMS(5), x);
    opt_node t;
    smelt_tensor *out = t.out;

    /* opset 18 num_outputs: the last chunk is smaller */
    opt_init(&t, &k_names, OP_SPLIT, 18, 1, 3);
    gr_attr attrs[] = {opt_int_attr("num_outputs", 3)};
    opt_use_attrs(&t, attrs, 1);
    const smelt_tensor *in[] = {&tx};
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 1, DIMS(2));
    OPT_EXPECT_DIMS(&out[2], 1, DIMS(1));
    OPT_EXPECT_F32(&out[1], FLOATS(3, 4), 2, OPT_EXACT);
    OPT_EXPECT_F32(&out[2], FLOATS(5), 1, OPT_EXACT);
    /* without num_outputs the parts must be equal */
    t.node->n_attrs = 0;
    CHECK(opt_infer_ptrs(&t, in, 1) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "cannot split an axis of size 5 into 3 equal parts");
    smelt_ctx_clear(t.ctx);
    opt_fini(&t);

    /* opset 11 split attribute -> input */
    opt_init(&t, &k_names, OP_SPLIT, 11, 1, 2);
    int64_t split[] = {1, 4};
    gr_attr attrs2[] = {opt_ints_attr("split", 2, split)};
    opt_use_attrs(&t, attrs2, 1);
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_F32(&out[0], FLOATS(1), 1, OPT_EXACT);
    OPT_EXPECT_F32(&out[1], FLOATS(2, 3, 4, 5), 4, OPT_EXACT);
    split[1] = 3;
    CHECK(opt_infer_ptrs(&t, in, 1) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "split sizes add up to 4, but the axis has size 5");
    smelt_ctx_clear(t.ctx);
    opt_fini(&t);

    /* 2-D along axis 1 */
    opt_init(&t, &k_names, OP_SPLIT, 13, 1, 2);
    gr_attr attrs3[] = {opt_int_attr("axis", 1)};
    opt_use_attrs(&t, attrs3, 1);
    float y[] = {1, 2, 3, 4, 5, 6, 7, 8};
    smelt_tensor ty = opt_tensor(F32, 2, DIMS(2, 4), y);
    const smelt_tensor *in2[] = {&ty};
    CHECK(opt_run_ptrs(&t, in2, 1) == SMELT_OK);
    OPT_EXPECT_F32(&out[0], FLOATS(1, 2, 5, 6), 4, OPT_EXACT);
    OPT_EXPECT_F32(&out[1], FLOATS(3, 4, 7, 8), 4, OPT_EXACT);
    opt_fini(&t);
}

/* ---- ConstantOfShape, Range ---- */

static void test_constant_of_shape(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_CONSTANT_OF_SHAPE, 9, 1, 1);
    int64_t shape[] = {2, 3};
    smelt_tensor ts = opt_tensor(I64, 1, DIMS(2), shape);
    const smelt_tensor *in[] = {&ts};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
    CHECK(out[0].dtype == F32);
    OPT_EXPECT_DIMS(&out[0], 2, DIMS(2, 3));

    int32_t seven = 7;
    smelt_tensor value = opt_tensor(I32, 1, DIMS(1), &seven);
    gr_attr a;
    memset(&a, 0, sizeof a);
    a.name = "value";
    a.type = GR_ATTR_TENSOR;
    a.t = &value;
    opt_use_attrs(&t, &a, 1);
    CHECK(opt_run_ptrs(&t, in, 1) == SMELT_OK);
    CHECK(out[0].dtype == I32 && ((int32_t *)out[0].data)[5] == 7);
    shape[1] = -3;
    CHECK(opt_infer_ptrs(&t, in, 1) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "shape[1] = -3 is negative");
    smelt_ctx_clear(t.ctx);
    opt_fini(&t);
}

static void test_range(void)
{
    opt_node t;
    opt_init(&t, &k_names, OP_RANGE, 11, 3, 1);
    int32_t s = 10, l = 4, d = -3;
    smelt_tensor t0 = opt_tensor(I32, 0, NULL, &s), t1 = opt_tensor(I32, 0, NULL, &l),
                 t2 = opt_tensor(I32, 0, NULL, &d);
    const smelt_tensor *in[] = {&t0, &t1, &t2};
    smelt_tensor *out = t.out;
    CHECK(opt_run_ptrs(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 1, DIMS(2));
    CHECK(((int32_t *)out[0].data)[0] == 10 && ((int32_t *)out[0].data)[1] == 7);

    float fs = 1, fl = 2, fd = 0.25f;
    smelt_tensor f0 = opt_tensor(F32, 0, NULL, &fs), f1 = opt_tensor(F32, 0, NULL, &fl),
                 f2 = opt_tensor(F32, 0, NULL, &fd);
    const smelt_tensor *fin[] = {&f0, &f1, &f2};
    CHECK(opt_run_ptrs(&t, fin, 3) == SMELT_OK);
    OPT_EXPECT_F32(&out[0], FLOATS(1, 1.25f, 1.5f, 1.75f), 4, OPT_EXACT);
    fd = -1; /* empty */
    CHECK(opt_run_ptrs(&t, fin, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 1, DIMS(0));
    /* data-dependent length at compile time */
    f1.data = NULL;
    CHECK(opt_infer_ptrs(&t, fin, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(&out[0], 1, DIMS(GR_DIM_UNKNOWN));
    fd = 0;
    f1.data = &fl;
    CHECK(opt_infer_ptrs(&t, fin, 3) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(opt_message(&t), "do not give a finite range");
    smelt_ctx_clear(t.ctx);
    const smelt_tensor *mixed[] = {&f0, &t1, &f2};
    CHECK(opt_infer_ptrs(&t, mixed, 3) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "limit input 'B' is i32 but start is f32");
    smelt_ctx_clear(t.ctx);
    opt_fini(&t);
}

int main(void)
{
    test_registry();
    test_identity_dropout();
    test_flatten();
    test_reshape();
    test_transpose();
    test_squeeze_unsqueeze();
    test_shape_size();
    test_expand_tile();
    test_concat();
    test_split();
    test_constant_of_shape();
    test_range();
    TEST_MAIN_END();
}
