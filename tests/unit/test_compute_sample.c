/* Compute definitions of GridSample and AffineGrid checked against their
 * reference kernels: te interpreter, default and random legal schedules
 * lowered to the loop IR (op_test_util.h).  GridSample in every mode and
 * padding mode with and without align_corners, 3-D, 4-D and 5-D inputs,
 * grids reaching past the borders (so padding and reflection over several
 * periods apply), float64 and float16; GridSample-16's mode names.  The
 * reference kernel itself is checked against values worked out from the
 * spec. */
#include "op_test_util.h"

enum {
    FILL_DATA, /* [-2, 2) */
    FILL_GRID, /* [-2.5, 2.5): coordinates up to 1.75 widths outside */
};

static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    double u = (double)(opt_random(state) % 65536) / 65536.0;
    op_set_f64(t, i, kind == FILL_GRID ? 5.0 * u - 2.5 : 4.0 * u - 2.0);
}

static const opt_suite k_suite = {
    .seed = 1601,
    .fill = fill,
    .tols = {.f32 = {1e-6, 1e-6}, .f64 = {1e-12, 1e-12}, .f16 = {1e-3, 1e-3},
             .bf16 = {1e-2, 1e-2}},
    .random_schedules = 2,
};

#define X4(dt) OPT_XF(dt, FILL_DATA, 4, 2, 3, 5, 4)
#define G4(dt) OPT_XF(dt, FILL_GRID, 4, 2, 3, 6, 2)
#define X5 OPT_XF(F32, FILL_DATA, 5, 1, 2, 3, 4, 5)
#define G5 OPT_XF(F32, FILL_GRID, 5, 1, 2, 3, 4, 3)
#define MODE(m) OPT_AS("mode", m)
#define PAD(p) OPT_AS("padding_mode", p)
#define ALIGN(v) OPT_AI("align_corners", v)

#define GS(what, opset, x, g, m, p, al) \
    {what, OP_GRID_SAMPLE, opset, "y", 2, 3, {x, g}, {MODE(m), PAD(p), ALIGN(al)}}

static const opt_case k_grid_sample[] = {
    GS("linear zeros", 22, X4(F32), G4(F32), "linear", "zeros", 0),
    GS("linear zeros align", 22, X4(F32), G4(F32), "linear", "zeros", 1),
    GS("linear border", 22, X4(F32), G4(F32), "linear", "border", 0),
    GS("linear border align", 22, X4(F32), G4(F32), "linear", "border", 1),
    GS("linear reflection", 22, X4(F32), G4(F32), "linear", "reflection", 0),
    GS("linear reflection align", 22, X4(F32), G4(F32), "linear", "reflection", 1),
    GS("nearest zeros", 22, X4(F32), G4(F32), "nearest", "zeros", 0),
    GS("nearest border align", 22, X4(F32), G4(F32), "nearest", "border", 1),
    GS("nearest reflection", 22, X4(F32), G4(F32), "nearest", "reflection", 0),
    GS("nearest reflection align", 22, X4(F32), G4(F32), "nearest", "reflection", 1),
    GS("cubic zeros", 22, X4(F32), G4(F32), "cubic", "zeros", 0),
    GS("cubic border align", 22, X4(F32), G4(F32), "cubic", "border", 1),
    GS("cubic reflection", 22, X4(F32), G4(F32), "cubic", "reflection", 0),
    GS("cubic reflection align", 22, X4(F32), G4(F32), "cubic", "reflection", 1),
    GS("5-D linear zeros", 22, X5, G5, "linear", "zeros", 0),
    GS("5-D nearest border", 22, X5, G5, "nearest", "border", 1),
    GS("5-D cubic reflection", 22, X5, G5, "cubic", "reflection", 0),
    GS("3-D linear reflection", 22, OPT_XF(F32, FILL_DATA, 3, 2, 2, 7),
       OPT_XF(F32, FILL_GRID, 3, 2, 9, 1), "linear", "reflection", 0),
    GS("one-pixel axis reflection align", 22, OPT_XF(F32, FILL_DATA, 4, 1, 2, 1, 5),
       OPT_XF(F32, FILL_GRID, 4, 1, 3, 3, 2), "linear", "reflection", 1),
    GS("f64 cubic border", 22, X4(F64), G4(F64), "cubic", "border", 0),
    GS("f16 linear zeros", 22, X4(F16), G4(F16), "linear", "zeros", 0),
    GS("opset 16 bilinear", 16, X4(F32), G4(F32), "bilinear", "border", 0),
    GS("opset 16 bicubic", 16, X4(F32), G4(F32), "bicubic", "reflection", 1),
};

static const opt_case k_affine_grid[] = {
    {"2-D", OP_AFFINE_GRID, 20, "y", 2, 1,
     {OPT_XF(F32, FILL_DATA, 3, 2, 2, 3), OPT_CONST1(I64, 2, 3, 5, 4)}, {ALIGN(0)}},
    {"2-D align", OP_AFFINE_GRID, 20, "y", 2, 1,
     {OPT_XF(F32, FILL_DATA, 3, 2, 2, 3), OPT_CONST1(I64, 2, 3, 5, 4)}, {ALIGN(1)}},
    {"3-D", OP_AFFINE_GRID, 20, "y", 2, 1,
     {OPT_XF(F32, FILL_DATA, 3, 1, 3, 4), OPT_CONST1(I64, 1, 2, 3, 4, 5)}, {ALIGN(0)}},
    {"3-D align f64 one-pixel axis", OP_AFFINE_GRID, 20, "y", 2, 1,
     {OPT_XF(F64, FILL_DATA, 3, 2, 3, 4), OPT_CONST1(I64, 2, 2, 1, 4, 2)}, {ALIGN(1)}},
};

#define RX(dt) OPT_XF(dt, FILL_DATA, 4, 2, 3, 6, 7)
/* inside, partly outside, reaching past the image (samples there are 0), inverted */
#define ROIS(dt)                                                                             \
    OPT_RUNTIME(dt, OPT_VALS(0, 0, 5, 5, 1.5, 2.2, 6.8, 4.1, -3, -2, 3, 9, 4, 1, 2, 5), 2, 4, \
                4)
/* regions within the image plus a pixel (compiled code's bound for sampling_ratio 0) */
#define ROIS_DYN OPT_RUNTIME(F32, OPT_VALS(-0.5, -1, 6.5, 5.9, 1.5, 2.2, 6.8, 4.1, 4, 1, 2, 5), \
                             2, 3, 4)
#define BATCH4 OPT_RUNTIME1(I64, 0, 1, 1, 0)
#define BATCH3 OPT_RUNTIME1(I64, 1, 0, 1)
#define OUT(h, w) OPT_AI("output_height", h), OPT_AI("output_width", w)

static const opt_case k_roi_align[] = {
    {"avg sampling 2 half_pixel scale", OP_ROI_ALIGN, 22, "y", 3, 4,
     {RX(F32), ROIS(F32), BATCH4}, {OUT(2, 3), OPT_AI("sampling_ratio", 2),
                                    OPT_AF("spatial_scale", 0.75)}},
    {"max sampling 3 output_half_pixel", OP_ROI_ALIGN, 22, "y", 3, 5,
     {RX(F32), ROIS(F32), BATCH4}, {OUT(3, 2), OPT_AI("sampling_ratio", 3), OPT_AS("mode", "max"),
                                    OPT_AS("coordinate_transformation_mode", "output_half_pixel")}},
    {"avg sampling 0", OP_ROI_ALIGN, 22, "y", 3, 2, {RX(F32), ROIS_DYN, BATCH3}, {OUT(2, 3)}},
    {"max sampling 0 output_half_pixel", OP_ROI_ALIGN, 16, "y", 3, 4,
     {RX(F32), ROIS_DYN, BATCH3}, {OUT(3, 2), OPT_AS("mode", "max"),
                                   OPT_AS("coordinate_transformation_mode", "output_half_pixel")}},
    {"opset 10 f64", OP_ROI_ALIGN, 10, "y", 3, 3,
     {RX(F64), ROIS(F64), BATCH4}, {OUT(2, 2), OPT_AI("sampling_ratio", 1)}},
};

/* Batch indices out of range and (compiled, sampling_ratio 0) regions past
 * the bound fail with a message. */
static void test_data_errors(void)
{
    const opt_case batch = {"roi batch 2 of 2", OP_ROI_ALIGN, 22, "y", 3, 1,
                            {RX(F32), ROIS_DYN, OPT_RUNTIME1(I64, 0, 2, 1)},
                            {OPT_AI("sampling_ratio", 2)}};
    opt_check_data_error(&k_suite, &batch,
                         "batch index 2 at position 1 is out of range for 2 images");
}

/* The compiled form refuses a region needing more samples per bin than its
 * bound (the reference computes it). */
static void test_grid_bound(void)
{
    const opt_case big = {"roi 3x the image", OP_ROI_ALIGN, 22, "y", 3, 0,
                          {RX(F32), OPT_RUNTIME(F32, OPT_VALS(-6, -7, 13, 14), 2, 1, 4),
                           OPT_RUNTIME1(I64, 0)},
                          {{0}}};
    opt_node t;
    CHECK(opt_case_init(&t, &k_suite, &big) == SMELT_OK);
    CHECK(opt_run_reference(&t) == SMELT_OK);
    CHECK(opt_run_te(&t) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(opt_message(&t), "region 0 needs 21 samples per bin");
    opt_fini(&t);
}

/* One 1x1x1xW GridSample through the reference. */
static double sample_1d(const char *mode, const char *pad, int64_t align, const double *x, int w,
                        double g)
{
    opt_node t;
    opt_init(&t, NULL, OP_GRID_SAMPLE, 22, 2, 1);
    opt_attr_string(&t, "mode", mode);
    opt_attr_string(&t, "padding_mode", pad);
    opt_attr_int(&t, "align_corners", align);
    smelt_tensor in[2] = {opt_tensor(F64, 4, OPT_DIMS(1, 1, 1, w), x),
                          opt_tensor(F64, 4, OPT_DIMS(1, 1, 1, 2), ((const double[]){g, 0.0}))};
    double v = NAN;
    CHECK(opt_run(&t, in, 2) == SMELT_OK);
    if (t.out[0].data) v = op_get_f64(&t.out[0], 0);
    opt_fini(&t);
    return v;
}

/* Values worked out by hand from the spec's formulas (W = 4, x = 10, 20, 30, 40). */
static void test_reference_values(void)
{
    static const double x[] = {10, 20, 30, 40};
    static const struct {
        const char *mode, *pad;
        int64_t align;
        double g, want;
    } k[] = {
        /* align 0: pixel = ((g + 1) * 4 - 1) / 2 */
        {"linear", "zeros", 0, 0.0, 25.0},       /* 1.5 */
        {"linear", "zeros", 0, -1.0, 5.0},       /* -0.5: half of x[0] */
        {"linear", "border", 0, -1.0, 10.0},     /* -0.5 stays, tap -1 clamped */
        {"linear", "border", 0, 2.0, 40.0},      /* 5.5 -> clamped to 3 */
        {"linear", "reflection", 0, 1.5, 35.0},  /* 4.5 -> 3.5 - 1 = 2.5 */
        {"nearest", "zeros", 0, -0.25, 20.0},    /* 1.0 */
        {"nearest", "zeros", 0, 0.0, 30.0},      /* 1.5 rounds to even 2 */
        {"nearest", "zeros", 0, 1.5, 0.0},       /* 4.5 -> 4: outside */
        {"nearest", "reflection", 0, 1.5, 40.0}, /* 4 -> reflected to 3 */
        /* align 1: pixel = (g + 1) / 2 * 3 */
        {"linear", "reflection", 1, 1.5, 32.5},  /* 3.75 -> 3 - 0.75 = 2.25 */
        {"linear", "zeros", 1, 1.0, 40.0},       /* 3: taps 3 (w 1) and 4 (w 0, outside) */
        {"cubic", "border", 1, -1.0, 10.0},      /* 0: weights 0, 1, 0, 0 */
    };
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k); i++) {
        double got = sample_1d(k[i].mode, k[i].pad, k[i].align, x, 4, k[i].g);
        if (fabs(got - k[i].want) > 1e-12)
            fprintf(stderr, "case %zu: %s %s align %lld at %g gave %.17g, expected %g\n", i,
                    k[i].mode, k[i].pad, (long long)k[i].align, k[i].g, got, k[i].want);
        CHECK(fabs(got - k[i].want) <= 1e-12);
    }
}

/* Names of the other opset range and grids of the wrong shape are refused. */
static void test_refusals(void)
{
    opt_node t;
    opt_init(&t, NULL, OP_GRID_SAMPLE, 20, 2, 1);
    opt_attr_string(&t, "mode", "bilinear");
    CHECK(opt_import(&t) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(opt_message(&t), "attribute 'mode' is \"bilinear\"");
    opt_fini(&t);

    opt_init(&t, NULL, OP_GRID_SAMPLE, 22, 2, 1);
    double z[24] = {0};
    smelt_tensor in[2] = {opt_tensor(F64, 4, OPT_DIMS(1, 1, 2, 3), z),
                          opt_tensor(F64, 4, OPT_DIMS(1, 2, 2, 3), z)};
    CHECK(opt_infer(&t, in, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "grid's last dim is 3; expected 2");
    opt_fini(&t);
}

/* NonMaxSuppression's reference against a selection worked out by hand;
 * lowered alone, without a run-time dim for its count (runs make one:
 * api/specialize.c), its compute refuses naming the reason. */
static void test_nms(void)
{
    /* corners (y1, x1, y2, x2); box 1 overlaps box 0 with IoU 0.5 / 1.5, box 3 is
     * box 0 flipped (IoU 1); box 2 is apart */
    static const float boxes[] = {0, 0, 1, 1, 0, 0.5f, 1, 1.5f, 0, 5, 1, 6, 1, 1, 0, 0};
    static const float scores[] = {0.9f, 0.95f, 0.3f, 0.9f, 0.1f, 0.2f, 0.8f, 0.7f};
    static const int64_t max_out[] = {3};
    static const float iou[] = {0.5f}, score_min[] = {0.15f};
    opt_node t;
    opt_init(&t, NULL, OP_NON_MAX_SUPPRESSION, 11, 5, 1);
    smelt_tensor in[5] = {opt_tensor(F32, 3, OPT_DIMS(1, 4, 4), boxes),
                          opt_tensor(F32, 3, OPT_DIMS(1, 2, 4), scores), opt_vec(I64, 1, max_out),
                          opt_vec(F32, 1, iou), opt_vec(F32, 1, score_min)};
    CHECK(opt_run(&t, in, 5) == SMELT_OK);
    /* class 0: 1 (0.95), 0 (0.9, the lower index of a tie), 3 suppressed by 0, 2;
     * class 1: 2 (0.8), 3 (0.7), 1 (0.2), 0 below 0.15 */
    static const int64_t want[] = {0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 1, 2, 0, 1, 3, 0, 1, 1};
    OPT_EXPECT_DIMS(&t.out[0], 2, OPT_DIMS(6, 3));
    OPT_EXPECT_I64(&t.out[0], want, 18);
    CHECK(opt_run_te(&t) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(opt_message(&t), "depends on the data");
    opt_fini(&t);
}

int main(void)
{
    test_nms();
    test_reference_values();
    test_refusals();
    opt_check_cases(&k_suite, k_grid_sample, SMELT_ARRAY_LEN(k_grid_sample));
    opt_check_cases(&k_suite, k_affine_grid, SMELT_ARRAY_LEN(k_affine_grid));
    opt_check_cases(&k_suite, k_roi_align, SMELT_ARRAY_LEN(k_roi_align));
    test_data_errors();
    test_grid_bound();
    TEST_MAIN_END();
}
