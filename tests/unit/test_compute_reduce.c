/* Compute definitions of the reduce family (Reduce*, ArgMax/ArgMin, CumSum)
 * checked against the reference kernels: each case runs one node through
 * exec_node (reference) and exec_node_te (tensor expressions, interpreted)
 * and compares the outputs.  Covers what the ONNX node tests leave out:
 * constant axes (the node tests mostly load them at run time), integer and
 * 16-bit float dtypes, empty reductions, infinities in LogSumExp, and
 * run-time axes whose output shape allows several readings.
 * Every case is also lowered under the default schedule and the suite's
 * random legal ones and run by the tir interpreter (op_test_util.h). */
#include "op_test_util.h"

/* Small integers for integer dtypes (so sums stay exact), [-4, 4) for floats. */
static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    double u = opt_uniform(state);
    bool is_unsigned = t->dtype == U8 || t->dtype == U32;
    double v = op_dtype_is_float(t->dtype) ? 8.0 * u - 4.0
               : t->dtype == BOOL          ? (u < 0.5)
                                           : floor(7.0 * u) - (is_unsigned ? 0 : 3);
    if (op_dtype_is_float(t->dtype)) op_set_f64(t, i, v);
    else op_set_i64(t, i, (int64_t)v);
}

/* |result - reference| <= tol * (1 + |reference|); integers exact */
static const opt_suite k_suite = {
    .seed = 777,
    .fill = fill,
    .tols = {.f32 = {1e-5, 1e-5}, .f64 = {1e-12, 1e-12},
             .f16 = {8e-3, 8e-3}, .bf16 = {8e-3, 8e-3}},
    .random_schedules = 3,
};

#define ARR OPT_VALS
/* a 1-D int64 parameter with the given contents, constant or loaded at run time */
#define PC(...) OPT_CONST1(I64, __VA_ARGS__)
#define PR(...) OPT_RUNTIME1(I64, __VA_ARGS__)
#define P_EMPTY {.dt = I64, .rank = 1, .dims = {0}, .constant = true}
#define SC(v) OPT_CONST0(I64, v)
#define SR(v) OPT_RUNTIME0(I64, v)
#define X OPT_X
#define XV(dt, r, d0, d1, ...) OPT_RUNTIME(dt, ARR(__VA_ARGS__), r, d0, d1)
#define AI OPT_AI
#define AINTS OPT_AINTS
#define KEEP0 AI("keepdims", 0)

static const opt_case k_reduce_cases[] = {
    /* rows of 2+ vectors (8 lanes) with a partial one: rfactor with a tail */
    {"sum f32 last axis, long rows", OP_REDUCE_SUM, 18, "y", 2, 0, {X(F32, 3, 3, 2, 37), PC(-1)}, {{0}}},
    {"max f32 last axis, long rows", OP_REDUCE_MAX, 18, "y", 2, 1, {X(F32, 2, 4, 50), PC(-1)}, {KEEP0}},
    {"min f32 last axis, long rows", OP_REDUCE_MIN, 18, "y", 2, 0, {X(F32, 2, 3, 33), PC(1)}, {{0}}},
    {"prod f32 last axis, long rows", OP_REDUCE_PROD, 18, "y", 2, 0, {X(F32, 2, 2, 20), PC(-1)}, {{0}}},
    {"mean f32 last axis, exact vectors", OP_REDUCE_MEAN, 18, "y", 2, 0, {X(F32, 2, 5, 64), PC(-1)}, {{0}}},
    {"sum f32 first and last axes", OP_REDUCE_SUM, 18, "y", 2, 0, {X(F32, 3, 3, 2, 40), PC(0, 2)}, {{0}}},
    {"sum f32 all axes to a scalar", OP_REDUCE_SUM, 18, "y", 2, 1, {X(F32, 1, 45), PC(0)}, {KEEP0}},
    {"sum f16, const axes", OP_REDUCE_SUM, 18, "y", 2, 0, {X(F16, 3, 4, 5, 6), PC(0, 2)}, {{0}}},
    {"sum int8 wraps", OP_REDUCE_SUM, 18, "y", 2, 1,
     {XV(I8, 2, 2, 3, 100, 100, 27, -128, -128, 5), PC(1)}, {KEEP0}},
    {"sum u32, all axes, no axes input", OP_REDUCE_SUM, 18, "y", 1, 0, {X(U32, 3, 2, 3, 4)}, {{0}}},
    {"sum run-time axes, keepdims", OP_REDUCE_SUM, 13, "y", 2, 0,
     {X(F32, 3, 3, 2, 4), PR(-1, 0)}, {{0}}},
    {"sum run-time axes, keepdims=0, [3,2,2] axis 2", OP_REDUCE_SUM, 13, "y", 2, 1,
     {X(F32, 3, 3, 2, 2), PR(2)}, {KEEP0}},
    {"sum run-time axes, keepdims=0, [3,2,2] axis -2", OP_REDUCE_SUM, 13, "y", 2, 1,
     {X(F32, 3, 3, 2, 2), PR(-2)}, {KEEP0}},
    {"sum run-time axes, keepdims=0, three readings", OP_REDUCE_SUM, 13, "y", 2, 1,
     {X(I32, 3, 2, 2, 2), PR(2, 0)}, {KEEP0}},
    {"sum run-time axes over size-1 axes", OP_REDUCE_SUM, 13, "y", 2, 1,
     {X(F32, 4, 1, 3, 1, 3), PR(0, 3)}, {KEEP0}},
    {"sum empty axes, noop", OP_REDUCE_SUM, 13, "y", 2, 1,
     {X(F32, 2, 2, 3), P_EMPTY}, {AI("noop_with_empty_axes", 1)}},
    {"sum empty axes, no noop: all", OP_REDUCE_SUM, 13, "y", 2, 1,
     {X(F32, 2, 2, 3), P_EMPTY}, {KEEP0}},
    {"sum of an empty axis", OP_REDUCE_SUM, 18, "y", 2, 0, {X(F32, 3, 2, 0, 3), PC(1)}, {{0}}},
    {"sum of a scalar", OP_REDUCE_SUM, 18, "y", 1, 0, {OPT_RUNTIME0(F64, 2.5)}, {{0}}},
    {"mean int8 does not wrap before dividing", OP_REDUCE_MEAN, 18, "y", 2, 1,
     {XV(I8, 2, 2, 3, 100, 100, 27, -128, -128, 5), PC(1)}, {KEEP0}},
    {"mean u8", OP_REDUCE_MEAN, 18, "y", 2, 0, {XV(U8, 2, 2, 2, 255, 254, 1, 2), PC(0)}, {{0}}},
    {"mean bf16, axes attribute (opset 13)", OP_REDUCE_MEAN, 13, "y", 1, 1,
     {X(BF16, 3, 3, 4, 5)}, {AINTS("axes", 2, -1, 1)}},
    {"max f16, run-time axes", OP_REDUCE_MAX, 18, "y", 2, 0, {X(F16, 3, 3, 4, 5), PR(1)}, {{0}}},
    {"max int16, axes attribute", OP_REDUCE_MAX, 13, "y", 1, 2,
     {X(I16, 2, 5, 4)}, {AINTS("axes", 1, 0), KEEP0}},
    {"max of an empty axis", OP_REDUCE_MAX, 18, "y", 2, 0, {X(F32, 3, 2, 0, 3), PC(1)}, {{0}}},
    {"min u8", OP_REDUCE_MIN, 18, "y", 2, 0, {X(U8, 2, 6, 5), PC(-1)}, {{0}}},
    {"max bool (any)", OP_REDUCE_MAX, 20, "y", 2, 0, {X(BOOL, 3, 3, 4, 5), PC(1)}, {{0}}},
    {"min bool (all), all axes", OP_REDUCE_MIN, 20, "y", 1, 1, {X(BOOL, 2, 2, 2)}, {KEEP0}},
    {"max bool of an empty axis", OP_REDUCE_MAX, 20, "y", 2, 0, {X(BOOL, 2, 0, 3), PC(0)}, {{0}}},
    {"min bool of an empty axis", OP_REDUCE_MIN, 20, "y", 2, 0, {X(BOOL, 2, 0, 3), PC(0)}, {{0}}},
    {"min of an empty axis, int32", OP_REDUCE_MIN, 18, "y", 2, 0, {X(I32, 2, 0, 3), PC(0)}, {{0}}},
    {"prod int64, all axes", OP_REDUCE_PROD, 18, "y", 1, 1, {X(I64, 2, 3, 4)}, {KEEP0}},
    {"prod f64, empty axis", OP_REDUCE_PROD, 18, "y", 2, 0, {X(F64, 2, 0, 3), PC(0)}, {{0}}},
    {"l1 int32 of negatives", OP_REDUCE_L1, 18, "y", 2, 0, {X(I32, 3, 2, 3, 4), PC(0, 2)}, {{0}}},
    {"l2 int32 goes through float64", OP_REDUCE_L2, 18, "y", 2, 0,
     {XV(I32, 2, 2, 2, 3, 4, 1, 1), PC(1)}, {{0}}},
    {"l2 f16", OP_REDUCE_L2, 18, "y", 2, 1, {X(F16, 3, 2, 7, 3), PC(1)}, {KEEP0}},
    {"sum square i16", OP_REDUCE_SUM_SQUARE, 18, "y", 2, 0, {X(I16, 3, 2, 3, 4), PC(2)}, {{0}}},
    {"sum square f64, axes attribute", OP_REDUCE_SUM_SQUARE, 13, "y", 1, 1,
     {X(F64, 3, 2, 3, 4)}, {AINTS("axes", 2, 0, 2)}},
    {"log sum f32", OP_REDUCE_LOG_SUM, 18, "y", 2, 0,
     {XV(F32, 2, 2, 3, 1, 2, 3, 0.5, 0.25, 4), PC(1)}, {{0}}},
    {"log sum int32", OP_REDUCE_LOG_SUM, 18, "y", 2, 0,
     {XV(I32, 2, 2, 2, 3, 4, 9, 1), PC(0)}, {{0}}},
    {"log sum exp f32", OP_REDUCE_LOG_SUM_EXP, 18, "y", 2, 0,
     {X(F32, 3, 3, 4, 5), PC(0, -1)}, {{0}}},
    {"log sum exp with infinities", OP_REDUCE_LOG_SUM_EXP, 18, "y", 2, 0,
     {XV(F32, 2, 3, 2, -INFINITY, -INFINITY, 1, INFINITY, 80, 90), PC(1)}, {{0}}},
    {"log sum exp of an empty axis", OP_REDUCE_LOG_SUM_EXP, 18, "y", 2, 0,
     {X(F32, 2, 3, 0), PC(1)}, {{0}}},
    {"log sum exp f16, run-time axes, keepdims=0", OP_REDUCE_LOG_SUM_EXP, 18, "y", 2, 1,
     {X(F16, 3, 3, 2, 2), PR(1)}, {KEEP0}},
    {"log sum exp int8", OP_REDUCE_LOG_SUM_EXP, 18, "y", 2, 0, {X(I8, 2, 3, 4), PC(1)}, {{0}}},
};

#define TIES XV(I32, 2, 3, 4, 1, 3, 3, 0, 2, 2, 2, 2, -1, 5, 5, -1)
static const opt_case k_arg_cases[] = {
    {"argmax ties, axis 1", OP_ARG_MAX, 13, "y", 1, 1, {TIES}, {AI("axis", 1)}},
    {"argmax ties, last index, keepdims=0", OP_ARG_MAX, 13, "y", 1, 3, {TIES},
     {AI("axis", -1), AI("select_last_index", 1), KEEP0}},
    {"argmin ties, axis 0", OP_ARG_MIN, 13, "y", 1, 0, {TIES}, {{0}}},
    {"argmin ties, last index", OP_ARG_MIN, 13, "y", 1, 2, {TIES},
     {AI("axis", 1), AI("select_last_index", 1)}},
    {"argmax f16 rank 3", OP_ARG_MAX, 13, "y", 1, 2, {X(F16, 3, 3, 4, 5)},
     {AI("axis", 1), KEEP0}},
    {"argmin bool", OP_ARG_MIN, 13, "y", 1, 1, {X(BOOL, 2, 3, 6)}, {AI("axis", 1)}},
    {"argmax u8, last index", OP_ARG_MAX, 13, "y", 1, 2, {X(U8, 2, 6, 4)},
     {AI("axis", 0), AI("select_last_index", 1)}},
};

static const opt_case k_cumsum_cases[] = {
    {"cumsum const axis", OP_CUM_SUM, 14, "y", 2, 0, {X(F32, 3, 2, 3, 4), SC(1)}, {{0}}},
    {"cumsum run-time axis, exclusive", OP_CUM_SUM, 14, "y", 2, 1, {X(F32, 3, 2, 3, 4), SR(-1)},
     {AI("exclusive", 1)}},
    {"cumsum run-time axis 0, reverse", OP_CUM_SUM, 14, "y", 2, 1, {X(F64, 3, 2, 3, 4), SR(0)},
     {AI("reverse", 1)}},
    {"cumsum reverse exclusive int32", OP_CUM_SUM, 14, "y", 2, 2, {X(I32, 2, 3, 5), PC(1)},
     {AI("reverse", 1), AI("exclusive", 1)}},
    {"cumsum f16", OP_CUM_SUM, 14, "y", 2, 0, {X(F16, 1, 40), SR(0)}, {{0}}},
    {"cumsum u32 run-time 1-D axis", OP_CUM_SUM, 14, "y", 2, 0, {X(U32, 2, 4, 3), PR(-2)}, {{0}}},
    {"cumprod const axis", OP_CUM_PROD, 26, "y", 2, 0, {X(F32, 3, 2, 3, 4), SC(1)}, {{0}}},
    {"cumprod run-time axis, exclusive reverse", OP_CUM_PROD, 26, "y", 2, 2,
     {X(F64, 3, 2, 3, 4), SR(-1)}, {AI("exclusive", 1), AI("reverse", 1)}},
    {"cumprod int64 wraps", OP_CUM_PROD, 26, "y", 2, 0, {X(I64, 2, 3, 5), PC(1)}, {{0}}},
};

/* Axes known only at run time cannot be compiled when there are too many
 * readings of the output shape; a clean "unsupported" then. */
static void test_too_many_readings(void)
{
    opt_case c = {"sum over run-time axes, 8-D", OP_REDUCE_SUM, 13, "y", 2, 1,
                  {X(F32, 8, 2, 2, 2, 2, 2, 2, 2, 2), PR(0, 1, 2, 3)}, {KEEP0}};
    opt_check_te_refuses(&k_suite, &c, SMELT_ERR_UNSUPPORTED, "must be a constant to compile");
}

int main(void)
{
    opt_check_cases(&k_suite, k_reduce_cases, SMELT_ARRAY_LEN(k_reduce_cases));
    opt_check_cases(&k_suite, k_arg_cases, SMELT_ARRAY_LEN(k_arg_cases));
    opt_check_cases(&k_suite, k_cumsum_cases, SMELT_ARRAY_LEN(k_cumsum_cases));
    test_too_many_readings();
    TEST_MAIN_END();
}
