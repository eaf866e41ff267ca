/* Compute definitions of the data and resize families checked against the
 * reference kernels: each case runs one node through exec_node (reference)
 * and exec_node_te (tensor expressions, interpreted) and compares the
 * output.  Parameter inputs (starts, pads, k, scales, roi, indices...) are
 * given either as graph constants (the compute folds them to immediates) or
 * as run-time inputs (the compute loads them); the ONNX node tests only
 * cover the latter.  Also covers what they leave out: other dtypes, Pad's
 * wrap mode and axes input, ScatterND's max/min, Resize's axes attribute,
 * and what compiled code does with out-of-range indices.
 * Every case is also lowered under the default schedule and the suite's
 * random legal ones and run by the tir interpreter (op_test_util.h). */
#include "op_test_util.h"

/* Floats in [-4, 4), other types [0, 200). */
static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    double u = opt_uniform(state);
    op_set_f64(t, i, op_dtype_is_float(t->dtype) ? 8.0 * u - 4.0 : floor(200.0 * u));
}

/* |result - reference| <= tol * (1 + |reference|); other types exact */
static const opt_suite k_suite = {
    .seed = 12345,
    .fill = fill,
    .tols = {.f32 = {1e-5, 1e-5}, .f64 = {1e-12, 1e-12},
             .f16 = {4e-3, 4e-3}, .bf16 = {1e-5, 1e-5}},
    .random_schedules = 3,
};

#define ARR OPT_VALS
/* a 1-D parameter with the given contents, constant or loaded at run time */
#define PC OPT_CONST1
#define PR OPT_RUNTIME1
#define SC OPT_CONST0
#define SR OPT_RUNTIME0
#define X OPT_X
#define NONE OPT_NONE
#define AI OPT_AI
#define AF OPT_AF
#define AS OPT_AS
#define AINTS OPT_AINTS
#define AFLOATS OPT_AFLOATS

static const opt_case k_slice_cases[] = {
    {"slice const, negative steps f16", OP_SLICE, 13, "y", 5, 0,
     {X(F16, 3, 4, 5, 6), PC(I64, 3, -1), PC(I64, -9, 0), PC(I64, 1, 2), PC(I64, -2, -1)}, {{0}}},
    {"slice run-time, negative steps", OP_SLICE, 13, "y", 5, 0,
     {X(F16, 3, 4, 5, 6), PR(I64, 3, -1), PR(I64, -9, 0), PR(I64, 1, 2), PR(I64, -2, -1)}, {{0}}},
    {"slice const starts, run-time negative axes, int32", OP_SLICE, 13, "y", 5, 0,
     {X(I64, 3, 4, 5, 6), PC(I32, 1, 0), PC(I32, 100, 3), PR(I32, -1, -3), PC(I32, 2, 1)}, {{0}}},
    {"slice default axes and steps, bool", OP_SLICE, 13, "y", 3, 0,
     {X(BOOL, 2, 5, 3), PC(I64, 1, -2), PC(I64, 4, 100)}, {{0}}},
    {"slice start past the end, step -3", OP_SLICE, 13, "y", 5, 0,
     {X(F32, 1, 10), PR(I64, 50), PR(I64, -100), NONE, PR(I64, -3)}, {{0}}},
};

static const opt_case k_gather_cases[] = {
    {"gather int64 data, run-time negative indices", OP_GATHER, 13, "y", 2, 1,
     {X(I64, 3, 3, 4, 2), OPT_RUNTIME(I64, ARR(-1, 0, 3, -4), 2, 2, 2)}, {AI("axis", 1)}},
    {"gather scalar index, constant", OP_GATHER, 13, "y", 2, 1,
     {X(F16, 2, 3, 4), SC(I32, -2)}, {AI("axis", -1)}},
    {"gather scalar index, axis 0", OP_GATHER, 13, "y", 2, 0,
     {X(F32, 2, 3, 4), SR(I64, 2)}, {{0}}},
    {"gather u8 axis 0", OP_GATHER, 13, "y", 2, 0,
     {X(U8, 2, 4, 3), PC(I64, 3, 3, 0, 1, 2)}, {{0}}},
    {"gatherelements bool axis 0", OP_GATHER_ELEMENTS, 13, "y", 2, 1,
     {X(BOOL, 2, 3, 3), OPT_CONST(I64, ARR(2, -1, 0, -3), 2, 2, 2)}, {AI("axis", 0)}},
    {"gatherelements f64 axis -1", OP_GATHER_ELEMENTS, 13, "y", 2, 1,
     {X(F64, 3, 2, 2, 3), OPT_RUNTIME(I32, ARR(0, 2, -1, 1, 1, 1, -3, 2), 3, 2, 1, 4)},
     {AI("axis", -1)}},
};

#define IND_2X1X2 OPT_RUNTIME(I64, ARR(1, -1, 0, 2), 3, 2, 1, 2)
#define IND_DUP OPT_CONST(I64, ARR(1, -2, 0), 2, 3, 1)
static const opt_case k_scatter_cases[] = {
    {"scatternd none, 2 batch dims", OP_SCATTER_ND, 16, "y", 3, 0,
     {X(F32, 3, 3, 3, 2), IND_2X1X2, X(F32, 3, 2, 1, 2)}, {{0}}},
    {"scatternd none, whole rows, int64", OP_SCATTER_ND, 16, "y", 3, 0,
     {X(I64, 3, 3, 3, 2), OPT_CONST(I64, ARR(2, 0), 2, 2, 1), X(I64, 3, 2, 3, 2)}, {{0}}},
    {"scatternd add with duplicates", OP_SCATTER_ND, 16, "y", 3, 1,
     {X(F32, 2, 3, 4), IND_DUP, X(F32, 2, 3, 4)}, {AS("reduction", "add")}},
    {"scatternd mul int32", OP_SCATTER_ND, 16, "y", 3, 1,
     {X(I32, 2, 3, 4), IND_DUP, X(I32, 2, 3, 4)}, {AS("reduction", "mul")}},
    {"scatternd max", OP_SCATTER_ND, 18, "y", 3, 1,
     {X(F32, 2, 3, 4), IND_DUP, X(F32, 2, 3, 4)}, {AS("reduction", "max")}},
    {"scatternd min int64", OP_SCATTER_ND, 18, "y", 3, 1,
     {X(I64, 2, 3, 4), IND_DUP, X(I64, 2, 3, 4)}, {AS("reduction", "min")}},
    {"scatternd add f16", OP_SCATTER_ND, 16, "y", 3, 1,
     {X(F16, 2, 3, 4), OPT_CONST(I64, ARR(1, 2), 2, 2, 1), X(F16, 2, 2, 4)},
     {AS("reduction", "add")}},
    /* ScatterElements (and Scatter-9, its former name) */
    {"scatterelements none axis 1, run-time indices with duplicates", OP_SCATTER_ELEMENTS, 13,
     "y", 3, 1, {X(F32, 2, 3, 4), OPT_RUNTIME(I64, ARR(3, -1, 0, 2, 1, 1), 2, 2, 3),
                 X(F32, 2, 2, 3)}, {AI("axis", 1)}},
    {"scatterelements none axis 0 int64, const indices", OP_SCATTER_ELEMENTS, 13, "y", 3, 0,
     {X(I64, 2, 3, 2), OPT_CONST(I32, ARR(2, 0, -3, 1), 2, 2, 2), X(I64, 2, 2, 2)}, {{0}}},
    {"scatterelements add f32 with duplicates", OP_SCATTER_ELEMENTS, 16, "y", 3, 2,
     {X(F32, 2, 3, 4), OPT_CONST(I64, ARR(1, 1, 0, 1, 2, 2), 2, 2, 3), X(F32, 2, 2, 3)},
     {AI("axis", -1), AS("reduction", "add")}},
    {"scatterelements mul int32", OP_SCATTER_ELEMENTS, 16, "y", 3, 1,
     {X(I32, 2, 3, 3), OPT_RUNTIME(I64, ARR(0, 0, 2, 0), 2, 2, 2), X(I32, 2, 2, 2)},
     {AS("reduction", "mul")}},
    {"scatterelements max f16", OP_SCATTER_ELEMENTS, 18, "y", 3, 2,
     {X(F16, 2, 2, 4), OPT_CONST(I64, ARR(3, 3, 0), 2, 1, 3), X(F16, 2, 1, 3)},
     {AI("axis", 1), AS("reduction", "max")}},
    {"scatterelements min int64 3-d", OP_SCATTER_ELEMENTS, 18, "y", 3, 2,
     {X(I64, 3, 2, 3, 2), OPT_RUNTIME(I64, ARR(1, 0, 1, 1), 3, 2, 2, 1), X(I64, 3, 2, 2, 1)},
     {AI("axis", 0), AS("reduction", "min")}},
    {"scatter-9 axis 1", OP_SCATTER, 9, "y", 3, 1,
     {X(F32, 2, 2, 3), OPT_CONST(I64, ARR(2, 0, 1, 1), 2, 2, 2), X(F32, 2, 2, 2)},
     {AI("axis", 1)}},
};

/* GatherND */
static const opt_case k_gather_nd_cases[] = {
    {"gathernd whole rows, const indices", OP_GATHER_ND, 13, "y", 2, 0,
     {X(F32, 3, 3, 2, 4), OPT_CONST(I64, ARR(2, 0, -1), 2, 3, 1)}, {{0}}},
    {"gathernd elements, run-time indices, int32 data", OP_GATHER_ND, 13, "y", 2, 0,
     {X(I32, 3, 3, 2, 4), OPT_RUNTIME(I64, ARR(1, 0, 3, 2, 1, -1, 0, 1, 0), 2, 3, 3)}, {{0}}},
    {"gathernd batch_dims 1", OP_GATHER_ND, 13, "y", 2, 1,
     {X(F16, 3, 2, 3, 4), OPT_RUNTIME(I32, ARR(2, 1, 0, 0, 1, 3, -1, -1), 3, 2, 2, 2)},
     {AI("batch_dims", 1)}},
    {"gathernd batch_dims 2, bool", OP_GATHER_ND, 13, "y", 2, 1,
     {X(BOOL, 3, 2, 2, 5), OPT_CONST(I64, ARR(4, 0, 2, -1), 3, 2, 2, 1)},
     {AI("batch_dims", 2)}},
};

#define PADS_C PC(I64, 1, 0, -1, 2, 3, 1)
#define PADS_R PR(I64, 1, 0, -1, 2, 3, 1)
static const opt_case k_pad_cases[] = {
    {"pad constant const pads, run-time value, int32", OP_PAD, 13, "y", 3, 1,
     {X(I32, 3, 2, 3, 4), PADS_C, SR(I32, 7)}, {AS("mode", "constant")}},
    {"pad constant run-time pads, const value, f16", OP_PAD, 13, "y", 3, 1,
     {X(F16, 3, 2, 3, 4), PADS_R, SC(F16, -1.5)}, {AS("mode", "constant")}},
    {"pad constant bool, no value", OP_PAD, 13, "y", 2, 0, {X(BOOL, 3, 2, 3, 4), PADS_C}, {{0}}},
    {"pad edge const", OP_PAD, 13, "y", 2, 1, {X(F32, 3, 2, 3, 4), PADS_C}, {AS("mode", "edge")}},
    {"pad edge run-time", OP_PAD, 13, "y", 2, 1,
     {X(F32, 3, 2, 3, 4), PADS_R}, {AS("mode", "edge")}},
    {"pad reflect const", OP_PAD, 13, "y", 2, 1,
     {X(I64, 2, 3, 4), PC(I64, 2, 3, 2, 3)}, {AS("mode", "reflect")}},
    {"pad reflect run-time, size-1 axis", OP_PAD, 13, "y", 2, 1,
     {X(F32, 2, 1, 4), PR(I64, 2, 3, 1, 3)}, {AS("mode", "reflect")}},
    {"pad wrap const, wider than the axis", OP_PAD, 19, "y", 2, 1,
     {X(U8, 2, 2, 3), PC(I64, 5, 1, -1, 7)}, {AS("mode", "wrap")}},
    {"pad wrap run-time", OP_PAD, 19, "y", 2, 1,
     {X(F32, 2, 2, 3), PR(I64, 5, 1, -1, 7)}, {AS("mode", "wrap")}},
    {"pad constant, const axes", OP_PAD, 18, "y", 4, 0,
     {X(F32, 3, 2, 3, 4), PC(I64, 1, 2, 2, 0), NONE, PC(I64, -1, 0)}, {{0}}},
    {"pad edge, run-time axes", OP_PAD, 18, "y", 4, 1,
     {X(F32, 3, 2, 3, 4), PR(I64, 1, 2, 2, 0), NONE, PR(I64, -1, 0)}, {AS("mode", "edge")}},
    {"pad opset 2 attributes", OP_PAD, 2, "y", 1, 3,
     {X(F32, 2, 2, 3)}, {AS("mode", "constant"), AINTS("pads", 4, 1, 0, 0, 2), AF("value", 2.5)}},
    {"pad constant of an empty tensor", OP_PAD, 13, "y", 3, 0,
     {X(F32, 2, 0, 2), PC(I64, 1, 1, 1, 1), SC(F32, 3)}, {{0}}},
};

static const opt_case k_misc_cases[] = {
    {"eyelike k 1", OP_EYE_LIKE, 22, "y", 1, 1, {X(F32, 2, 3, 5)}, {AI("k", 1)}},
    {"eyelike k -2, bool", OP_EYE_LIKE, 22, "y", 1, 2, {X(F32, 2, 4, 3)},
     {AI("k", -2), AI("dtype", SMELT_DT_BOOL)}},
    {"eyelike f16", OP_EYE_LIKE, 9, "y", 1, 0, {X(F16, 2, 4, 4)}, {{0}}},
    {"reversesequence time 0 batch 1, run-time lens", OP_REVERSE_SEQUENCE, 10, "y", 2, 0,
     {X(F32, 3, 4, 3, 2), OPT_RUNTIME1(I64, 4, 0, 2)}, {{0}}},
    {"reversesequence batch 0 time 1, const lens, int8", OP_REVERSE_SEQUENCE, 10, "y", 2, 2,
     {X(I8, 2, 3, 5), OPT_CONST1(I64, 1, 5, 3)}, {AI("batch_axis", 0), AI("time_axis", 1)}},
    {"trilu upper, run-time k", OP_TRILU, 14, "y", 2, 0, {X(I64, 3, 2, 3, 5), SR(I64, -1)}, {{0}}},
    {"trilu lower, const k", OP_TRILU, 14, "y", 2, 1,
     {X(F32, 2, 5, 3), SC(I64, 1)}, {AI("upper", 0)}},
    {"trilu huge k", OP_TRILU, 14, "y", 2, 1,
     {X(F32, 2, 3, 3), SR(I64, -9.0e18)}, {AI("upper", 0)}},
    {"onehot float indices, axis 0", OP_ONE_HOT, 11, "y", 3, 1,
     {OPT_RUNTIME(F32, ARR(0.7, -1.2, 3, 4, -5, 2.9), 2, 2, 3), SC(F32, 4),
      PC(I64, -3, 9)},
     {AI("axis", 0)}},
    {"onehot int32 indices, f16 values", OP_ONE_HOT, 11, "y", 3, 0,
     {OPT_CONST(I32, ARR(1, -1, 7, 0), 1, 4), SC(I64, 3), PR(F16, 0.5, 2)}, {{0}}},
    {"depthtospace dcr int64", OP_DEPTH_TO_SPACE, 13, "y", 1, 1,
     {X(I64, 4, 2, 8, 2, 3)}, {AI("blocksize", 2)}},
    {"depthtospace crd f16", OP_DEPTH_TO_SPACE, 13, "y", 1, 2,
     {X(F16, 4, 1, 18, 2, 1)}, {AI("blocksize", 3), AS("mode", "CRD")}},
    {"spacetodepth bool", OP_SPACE_TO_DEPTH, 13, "y", 1, 1,
     {X(BOOL, 4, 2, 3, 4, 6)}, {AI("blocksize", 2)}},
    {"spacetodepth crd f32", OP_SPACE_TO_DEPTH, 28, "y", 1, 1,
     {X(F32, 4, 2, 3, 6, 9)}, {AI("blocksize", 3), AS("mode", "CRD")}},
};

#define X1x2x3x4(dt) X(dt, 4, 1, 2, 3, 4)
#define NO_ROI NONE
static const opt_case k_resize_cases[] = {
    {"nearest round_prefer_ceil, const scales", OP_RESIZE, 13, "y", 3, 3,
     {X1x2x3x4(F32), NO_ROI, PC(F32, 1, 1, 1.7, 0.6)},
     {AS("mode", "nearest"), AS("nearest_mode", "round_prefer_ceil"),
      AS("coordinate_transformation_mode", "half_pixel")}},
    {"nearest int64 exact copy, run-time scales", OP_RESIZE, 13, "y", 3, 1,
     {X1x2x3x4(I64), NO_ROI, PR(F32, 1, 2, 2, 0.5)}, {AS("mode", "nearest")}},
    {"nearest ceil asymmetric, const sizes", OP_RESIZE, 13, "y", 4, 3,
     {X1x2x3x4(U8), NO_ROI, NONE, PC(I64, 1, 2, 7, 3)},
     {AS("mode", "nearest"), AS("nearest_mode", "ceil"),
      AS("coordinate_transformation_mode", "asymmetric")}},
    {"linear half_pixel_symmetric, axes attribute", OP_RESIZE, 18, "y", 3, 3,
     {X1x2x3x4(F32), NO_ROI, PC(F32, 1.5, 0.8)},
     {AS("mode", "linear"), AS("coordinate_transformation_mode", "half_pixel_symmetric"),
      AINTS("axes", 2, -1, 2)}},
    {"linear u8 rounds half away, run-time sizes", OP_RESIZE, 13, "y", 4, 2,
     {X1x2x3x4(U8), NO_ROI, NONE, PR(I64, 1, 2, 5, 7)},
     {AS("mode", "linear"), AS("coordinate_transformation_mode", "align_corners")}},
    {"linear exclude_outside pytorch_half_pixel f16", OP_RESIZE, 13, "y", 3, 3,
     {X1x2x3x4(F16), NO_ROI, PR(F32, 1, 1, 0.34, 2.5)},
     {AS("mode", "linear"), AS("coordinate_transformation_mode", "pytorch_half_pixel"),
      AI("exclude_outside", 1)}},
    {"cubic exclude_outside A=-0.5 f64", OP_RESIZE, 13, "y", 3, 3,
     {X(F64, 2, 5, 4), NO_ROI, PC(F32, 0.6, 1.8)},
     {AS("mode", "cubic"), AF("cubic_coeff_a", -0.5), AI("exclude_outside", 1)}},
    {"cubic run-time scales", OP_RESIZE, 13, "y", 3, 1,
     {X(F32, 2, 5, 4), NO_ROI, PR(F32, 0.6, 1.8)}, {AS("mode", "cubic")}},
    {"linear antialias, shrink and grow", OP_RESIZE, 19, "y", 3, 2,
     {X(F32, 3, 2, 9, 5), NO_ROI, PC(F32, 1, 0.35, 1.5)}, {AS("mode", "linear"), AI("antialias", 1)}},
    {"cubic antialias exclude_outside f64", OP_RESIZE, 19, "y", 3, 4,
     {X(F64, 2, 11, 8), NO_ROI, PC(F32, 0.3, 0.6)},
     {AS("mode", "cubic"), AI("antialias", 1), AI("exclude_outside", 1), AF("cubic_coeff_a", -0.5)}},
    {"cubic antialias sizes asymmetric", OP_RESIZE, 19, "y", 4, 3,
     {X(F32, 2, 7, 9), NO_ROI, NONE, PC(I64, 3, 4)},
     {AS("mode", "cubic"), AI("antialias", 1), AS("coordinate_transformation_mode", "asymmetric")}},
    {"nearest not_larger, axes", OP_RESIZE, 19, "y", 4, 2,
     {X1x2x3x4(F32), NO_ROI, NONE, PC(I64, 7, 5)},
     {AINTS("axes", 2, 2, 3), AS("keep_aspect_ratio_policy", "not_larger")}},
    {"linear not_smaller", OP_RESIZE, 19, "y", 4, 2,
     {X1x2x3x4(F32), NO_ROI, NONE, PC(I64, 1, 2, 2, 9)},
     {AS("mode", "linear"), AS("keep_aspect_ratio_policy", "not_smaller")}},
    {"tf_crop_and_resize linear, run-time roi", OP_RESIZE, 13, "y", 4, 3,
     {X1x2x3x4(F32), PR(F32, 0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4), NONE, PC(I64, 1, 2, 4, 5)},
     {AS("mode", "linear"), AS("coordinate_transformation_mode", "tf_crop_and_resize"),
      AF("extrapolation_value", 9)}},
    {"tf_crop_and_resize nearest, const roi", OP_RESIZE, 13, "y", 4, 3,
     {X1x2x3x4(I32), PC(F32, 0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4), NONE, PC(I64, 1, 2, 4, 5)},
     {AS("mode", "nearest"), AS("coordinate_transformation_mode", "tf_crop_and_resize"),
      AF("extrapolation_value", -4)}},
    {"tf_half_pixel_for_nn, rank 1", OP_RESIZE, 13, "y", 3, 2,
     {X(F32, 1, 7), NO_ROI, PR(F32, 0.45)},
     {AS("mode", "nearest"), AS("coordinate_transformation_mode", "tf_half_pixel_for_nn")}},
    {"resize-10 nearest", OP_RESIZE, 10, "y", 2, 1, {X1x2x3x4(F32), PC(F32, 1, 1, 2.5, 0.5)},
     {AS("mode", "nearest")}},
    {"upsample-9 linear, run-time scales", OP_UPSAMPLE, 9, "y", 2, 1,
     {X(F32, 3, 2, 2, 3), PR(F32, 1, 2, 1.5)}, {AS("mode", "linear")}},
    {"upsample-7 nearest attribute", OP_UPSAMPLE, 7, "y", 1, 2,
     {X(I64, 2, 2, 3)}, {AS("mode", "nearest"), AFLOATS("scales", 2, 2.0f, 1.5f)}},
};

/* Indices out of range fail the te and lowered paths as they fail the
 * reference (run-time checks), naming the value, its position and the axis;
 * negative indices in range wrap, on every path. */
static void test_out_of_range_indices(void)
{
    opt_case gather = {"gather index out of range", OP_GATHER, 13, "y", 2, 0,
                       {PR(F32, 10, 20, 30), OPT_RUNTIME1(I64, 1, 7, -9)}, {{0}}};
    opt_check_data_error(&k_suite, &gather,
                         "(Gather): index 7 at position 1 is out of range for axis 0 of size 3");
    opt_case gather_neg = {"gather index below -dim", OP_GATHER, 13, "y", 2, 0,
                           {PR(F32, 10, 20, 30), OPT_RUNTIME1(I64, -4)}, {{0}}};
    opt_check_data_error(&k_suite, &gather_neg, "index -4 at position 0 is out of range");
    opt_case elems = {"gatherelements index out of range", OP_GATHER_ELEMENTS, 13, "y", 2, 0,
                      {PR(F32, 1, 2, 3, 4), OPT_RUNTIME1(I64, 0, -4, 4, 1)}, {{0}}};
    opt_check_data_error(&k_suite, &elems,
                         "(GatherElements): index 4 at position 2 is out of range for axis 0 of "
                         "size 4");
    opt_case scatter = {"scatternd index out of range", OP_SCATTER_ND, 16, "y", 3, 0,
                        {PR(F32, 1, 2, 3), OPT_RUNTIME(I64, ARR(1, 5), 2, 2, 1),
                         PR(F32, 8, 9)},
                        {{0}}};
    opt_check_data_error(&k_suite, &scatter,
                         "(ScatterND): index 5 (update 1, component 0) is out of range for "
                         "'data' dim 0 of size 3");
    opt_case gnd = {"gathernd index out of range", OP_GATHER_ND, 13, "y", 2, 0,
                    {X(F32, 2, 3, 2), OPT_RUNTIME(I64, ARR(0, 1, 2, -3, 1, 2), 2, 3, 2)}, {{0}}};
    opt_check_data_error(&k_suite, &gnd,
                         "(GatherND): index -3 (tuple 1, component 1) is out of range for "
                         "'data' dim 1 of size 2");
    opt_case sel = {"scatterelements index out of range", OP_SCATTER_ELEMENTS, 13, "y", 3, 0,
                    {PR(F32, 1, 2, 3), OPT_RUNTIME1(I64, 0, 3), PR(F32, 8, 9)}, {{0}}};
    opt_check_data_error(&k_suite, &sel,
                         "(ScatterElements): index 3 at position 1 is out of range for axis 0 "
                         "of size 3");
    opt_case rev = {"reversesequence length out of range", OP_REVERSE_SEQUENCE, 10, "y", 2, 2,
                    {X(F32, 2, 2, 3), OPT_RUNTIME1(I64, 3, 4)},
                    {AI("batch_axis", 0), AI("time_axis", 1)}};
    opt_check_data_error(&k_suite, &rev,
                         "(ReverseSequence): sequence length 4 at position 1 is out of range "
                         "[0, 3]");
    const opt_case in_range[] = {
        {"gather negative indices wrap", OP_GATHER, 13, "y", 2, 0,
         {PR(F32, 10, 20, 30), OPT_RUNTIME1(I64, -1, -3, 2, 0)}, {{0}}},
        {"gatherelements negative indices wrap", OP_GATHER_ELEMENTS, 13, "y", 2, 0,
         {PR(F32, 1, 2, 3, 4), OPT_RUNTIME1(I64, -4, -1, 3, 0)}, {{0}}},
        {"scatternd negative index wraps", OP_SCATTER_ND, 16, "y", 3, 0,
         {PR(F32, 1, 2, 3), OPT_RUNTIME(I64, ARR(-1, 0), 2, 2, 1), PR(F32, 8, 9)}, {{0}}},
    };
    opt_check_cases(&k_suite, in_range, SMELT_ARRAY_LEN(in_range));
}

int main(void)
{
    opt_check_cases(&k_suite, k_slice_cases, SMELT_ARRAY_LEN(k_slice_cases));
    opt_check_cases(&k_suite, k_gather_cases, SMELT_ARRAY_LEN(k_gather_cases));
    opt_check_cases(&k_suite, k_scatter_cases, SMELT_ARRAY_LEN(k_scatter_cases));
    opt_check_cases(&k_suite, k_gather_nd_cases, SMELT_ARRAY_LEN(k_gather_nd_cases));
    opt_check_cases(&k_suite, k_pad_cases, SMELT_ARRAY_LEN(k_pad_cases));
    opt_check_cases(&k_suite, k_misc_cases, SMELT_ARRAY_LEN(k_misc_cases));
    opt_check_cases(&k_suite, k_resize_cases, SMELT_ARRAY_LEN(k_resize_cases));
    test_out_of_range_indices();
    TEST_MAIN_END();
}
