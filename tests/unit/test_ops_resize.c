/* Unit tests for Resize and Upsample: one node per test, run through the op's
 * import/infer/eval directly.  Expected values come from the ONNX reference
 * (onnx/backend/test/case/node/resize.py). */
#include <math.h>
#include <stdint.h>

#include "op_test_util.h"

/* The registry must hand out exactly this definition. */
extern const op_def op_def_RESIZE;

/* inputs in0, in1, ...; output y */
static const opt_names k_names = {"r0", "in%d", "y"};

static float g_iota[64];

static smelt_tensor g_x; /* [1, 1, 3, 4] iota */

static void test_linear(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    gr_attr linear[] = {opt_string_attr("mode", "linear")};
    float scales[] = {1, 1, 2, 0.5f};
    opt_init(&t, &k_names, OP_RESIZE, 13, 3, 1);
    opt_use_attrs(&t, linear, 1);
    smelt_tensor in[3] = {g_x, {0}, opt_tensor(F32, 1, OPT_DIMS(4), scales)};
    CHECK(opt_run(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 4, OPT_DIMS(1, 1, 6, 2));
    OPT_EXPECT_F32(
        out, OPT_F32S(0.5f, 2.5f, 1.5f, 3.5f, 3.5f, 5.5f, 5.5f, 7.5f, 7.5f, 9.5f, 8.5f, 10.5f), 12,
        OPT_ABS(1e-5f));

    gr_attr corners[] = {opt_string_attr("mode", "linear"),
                         opt_string_attr("coordinate_transformation_mode", "align_corners")};
    int64_t sizes[] = {1, 1, 2, 3};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 13, 4, 1);
    opt_use_attrs(&t, corners, 2);
    smelt_tensor in2[4] = {g_x, {0}, {0}, opt_tensor(I64, 1, OPT_DIMS(4), sizes)};
    CHECK(opt_run(&t, in2, 4) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 4, OPT_DIMS(1, 1, 2, 3));
    OPT_EXPECT_F32(out, OPT_F32S(0, 1.5f, 3, 8, 9.5f, 11), 6, OPT_ABS(1e-5f));

    /* opset 18 axes: sizes for the last two axes only */
    gr_attr axes_attr[] = {opt_string_attr("mode", "linear"),
                           opt_string_attr("coordinate_transformation_mode", "align_corners"),
                           {.name = "axes", .type = GR_ATTR_INTS, .n = 2,
                            .ints = (int64_t[]){-2, 3}}};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 18, 4, 1);
    opt_use_attrs(&t, axes_attr, 3);
    smelt_tensor in3[4] = {g_x, {0}, {0}, opt_tensor(I64, 1, OPT_DIMS(2), sizes + 2)};
    CHECK(opt_run(&t, in3, 4) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 4, OPT_DIMS(1, 1, 2, 3));
    OPT_EXPECT_F32(out, OPT_F32S(0, 1.5f, 3, 8, 9.5f, 11), 6, OPT_ABS(1e-5f));
    opt_fini(&t);
}

static void test_cubic(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    int64_t sizes[] = {1, 1, 3, 3};
    gr_attr cubic[] = {opt_string_attr("mode", "cubic")};
    opt_init(&t, &k_names, OP_RESIZE, 13, 4, 1);
    opt_use_attrs(&t, cubic, 1);
    smelt_tensor in[4] = {g_x, {0}, {0}, opt_tensor(I64, 1, OPT_DIMS(4), sizes)};
    CHECK(opt_run(&t, in, 4) == SMELT_OK);
    OPT_EXPECT_F32(out,
                   OPT_F32S(0.1261574f, 1.5f, 2.8738425f, 4.1261573f, 5.5f, 6.8738427f, 8.1261578f,
                            9.5f, 10.873842f),
                   9, OPT_ABS(1e-5f));

    gr_attr excl[] = {opt_string_attr("mode", "cubic"), opt_float_attr("cubic_coeff_a", -0.5f),
                      opt_int_attr("exclude_outside", 1)};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 13, 4, 1);
    opt_use_attrs(&t, excl, 3);
    CHECK(opt_run(&t, in, 4) == SMELT_OK);
    OPT_EXPECT_F32(out,
                   OPT_F32S(0.10284464f, 1.5f, 2.8971553f, 4.1028447f, 5.5f, 6.8971553f, 8.1028442f,
                            9.5f, 10.897158f),
                   9, OPT_ABS(1e-5f));
    opt_fini(&t);
}

static void test_nearest(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    float scales[] = {1, 1, 1.5f, 1.5f};
    opt_init(&t, &k_names, OP_RESIZE, 13, 3, 1);
    smelt_tensor in[3] = {g_x, {0}, opt_tensor(F32, 1, OPT_DIMS(4), scales)};
    CHECK(opt_run(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 4, OPT_DIMS(1, 1, 4, 6));
    OPT_EXPECT_F32(
        out, OPT_F32S(0, 0, 1, 2, 2, 3, 0, 0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8, 8, 9, 10, 10, 11),
        24, OPT_ABS(1e-5f));

    /* nearest copies bytes: uint8 works exactly; empty roi counts as absent */
    uint8_t px[] = {10, 20, 30, 40};
    float empty;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 11, 3, 1);
    float s2[] = {1, 2};
    smelt_tensor in2[3] = {opt_tensor(U8, 2, OPT_DIMS(2, 2), px),
                           opt_tensor(F32, 1, OPT_DIMS(0), &empty),
                           opt_tensor(F32, 1, OPT_DIMS(2), s2)};
    CHECK(opt_run(&t, in2, 3) == SMELT_OK);
    uint8_t want[] = {10, 10, 20, 20, 30, 30, 40, 40};
    OPT_EXPECT_DIMS(out, 2, OPT_DIMS(2, 4));
    CHECK(memcmp(out->data, want, sizeof want) == 0);
    opt_fini(&t);
}

static void test_crop_and_resize(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    gr_attr attrs[] = {opt_string_attr("mode", "linear"),
                       opt_string_attr("coordinate_transformation_mode", "tf_crop_and_resize"),
                       opt_float_attr("extrapolation_value", -1.0f)};
    float roi[] = {0, 0, 0.5f, 0, 1, 1, 1.5f, 1};
    int64_t sizes[] = {1, 1, 2, 2};
    opt_init(&t, &k_names, OP_RESIZE, 13, 4, 1);
    opt_use_attrs(&t, attrs, 3);
    smelt_tensor in[4] = {g_x, opt_tensor(F32, 1, OPT_DIMS(8), roi), {0},
                          opt_tensor(I64, 1, OPT_DIMS(4), sizes)};
    CHECK(opt_run(&t, in, 4) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(4, 7, -1, -1), 4, OPT_ABS(1e-5f));

    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 13, 4, 1);
    opt_use_attrs(&t, attrs, 3);
    in[1] = (smelt_tensor){0};
    CHECK(opt_infer(&t, in, 4) == SMELT_ERR_MODEL);
    CHECK_STR_CONTAINS(opt_message(&t), "input 'roi' is required");
    opt_fini(&t);
}

static void test_old_forms(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    float scales[] = {1, 1, 2, 2};
    float want[] = {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3};
    smelt_tensor x = opt_tensor(F32, 4, OPT_DIMS(1, 1, 2, 2), g_iota);

    /* Resize-10: X, scales */
    opt_init(&t, &k_names, OP_RESIZE, 10, 2, 1);
    smelt_tensor in[2] = {x, opt_tensor(F32, 1, OPT_DIMS(4), scales)};
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    CHECK(t.node->n_inputs == 3 && t.node->inputs[1] == NULL);
    OPT_EXPECT_F32(out, want, 16, OPT_ABS(1e-5f));

    /* Upsample-9: scales input; Upsample-7: scales attribute */
    opt_fini(&t);
    opt_init(&t, &k_names, OP_UPSAMPLE, 9, 2, 1);
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_F32(out, want, 16, OPT_ABS(1e-5f));
    gr_attr attrs[] = {opt_floats_attr("scales", 4, scales), opt_string_attr("mode", "nearest")};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_UPSAMPLE, 7, 1, 1);
    opt_use_attrs(&t, attrs, 2);
    CHECK(opt_run(&t, in, 1) == SMELT_OK);
    OPT_EXPECT_F32(out, want, 16, OPT_ABS(1e-5f));

    /* Upsample linear is asymmetric: x/2 */
    gr_attr linear[] = {opt_string_attr("mode", "linear")};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_UPSAMPLE, 9, 2, 1);
    opt_use_attrs(&t, linear, 1);
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    OPT_EXPECT_F32(out, OPT_F32S(0, 0.5f, 1, 1, 1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 2, 2.5f, 3, 3), 16,
                   OPT_ABS(1e-5f));
    opt_fini(&t);
}

static void test_infer_and_errors(void)
{
    opt_node t;
    const smelt_tensor *out = &t.out[0];
    float scales[] = {1, 1, 2, 2};
    int64_t sizes[] = {1, 1, 5, 5};
    smelt_tensor x = opt_tensor(F32, 4, OPT_DIMS(GR_DIM_SYM(0), 3, 8, GR_DIM_SYM(1)), NULL);

    opt_init(&t, &k_names, OP_RESIZE, 13, 3, 1);
    smelt_tensor in[4] = {x, {0}, opt_tensor(F32, 1, OPT_DIMS(4), scales),
                          opt_tensor(I64, 1, OPT_DIMS(4), sizes)};
    CHECK(opt_infer(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 4, OPT_DIMS(GR_DIM_SYM(0), 3, 16, GR_DIM_UNKNOWN));
    in[2].data = NULL;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 13, 3, 1);
    CHECK(opt_infer(&t, in, 3) == SMELT_OK);
    OPT_EXPECT_DIMS(out, 4,
                    OPT_DIMS(GR_DIM_UNKNOWN, GR_DIM_UNKNOWN, GR_DIM_UNKNOWN, GR_DIM_UNKNOWN));
    in[2].data = scales;

    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 13, 4, 1);
    CHECK(opt_infer(&t, in, 4) == SMELT_ERR_MODEL);
    CHECK_STR_CONTAINS(opt_message(&t), "only one of 'scales' and 'sizes'");
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 13, 1, 1);
    CHECK(opt_infer(&t, in, 1) == SMELT_ERR_MODEL);
    CHECK_STR_CONTAINS(opt_message(&t), "one of 'scales' and 'sizes' is required");

    scales[2] = -1;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 13, 3, 1);
    CHECK(opt_infer(&t, in, 3) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "scale -1 for axis 2 must be positive");
    /* regression (fuzz): an infinite scale on an empty axis made the size NaN */
    scales[2] = INFINITY;
    int64_t x_dims = in[0].dims[2];
    in[0].dims[2] = 0;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 13, 3, 1);
    CHECK(opt_infer(&t, in, 3) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "scale inf for axis 2 must be positive and finite");
    in[0].dims[2] = x_dims;
    scales[2] = 2;
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 13, 3, 1);
    in[2].dims[0] = 3;
    CHECK(opt_infer(&t, in, 3) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "'scales' must be 1-D with 4 values");
    in[2].dims[0] = 4;

    gr_attr area[] = {opt_string_attr("mode", "area")};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 13, 3, 1);
    opt_use_attrs(&t, area, 1);
    CHECK(opt_infer(&t, in, 3) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "attribute 'mode' is 'area'");
    gr_attr aa[] = {opt_int_attr("antialias", 1)}; /* mode nearest: not defined */
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 18, 3, 1);
    opt_use_attrs(&t, aa, 1);
    CHECK(opt_infer(&t, in, 3) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "attribute 'antialias' is 1 with mode nearest");
    gr_attr keep[] = {opt_string_attr("keep_aspect_ratio_policy", "not_wider")};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 18, 3, 1);
    opt_use_attrs(&t, keep, 1);
    CHECK(opt_infer(&t, in, 3) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "attribute 'keep_aspect_ratio_policy' is 'not_wider'");
    CHECK_STR_CONTAINS(opt_message(&t), "node 'r0' (Resize)");
    /* a shrink by 1/20 would take 80 cubic taps per axis */
    gr_attr aa_cubic[] = {opt_int_attr("antialias", 1), opt_string_attr("mode", "cubic")};
    opt_fini(&t);
    opt_init(&t, &k_names, OP_RESIZE, 18, 3, 1);
    opt_use_attrs(&t, aa_cubic, 2);
    smelt_tensor tiny = opt_tensor(F32, 1, OPT_DIMS(4), OPT_F32S(1, 1, 0.05f, 0.05f));
    smelt_tensor keep_scales = in[2];
    in[2] = tiny;
    CHECK(opt_infer(&t, in, 3) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(opt_message(&t), "taps; at most 32");
    in[2] = keep_scales;
    opt_fini(&t);
}

int main(void)
{
    CHECK(op_get(OP_RESIZE)->def == &op_def_RESIZE);
    for (int i = 0; i < (int)(sizeof g_iota / sizeof g_iota[0]); i++) g_iota[i] = (float)i;
    g_x = opt_tensor(F32, 4, OPT_DIMS(1, 1, 3, 4), g_iota);
    test_linear();
    test_cubic();
    test_nearest();
    test_crop_and_resize();
    test_old_forms();
    test_infer_and_errors();
    TEST_MAIN_END();
}
