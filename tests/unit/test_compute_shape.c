/* Compute definitions of the shape family checked against the reference
 * kernels: each case runs one node through exec_node (reference) and
 * exec_node_te (tensor expressions, interpreted) and compares every output.
 * Covers what the ONNX node tests leave out: integer and bool dtypes,
 * reshapes that merge and split dims at once, empty tensors, omitted Split
 * outputs, Dropout's old mask dtype, Range in int16 and float64.
 * Every case is also lowered under the default schedule and the suite's
 * random legal ones and run by the tir interpreter (op_test_util.h). */
#include "op_test_util.h"

/* Floats in [-4, 4), other types [0, 200). */
static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    double u = opt_uniform(state);
    if (op_dtype_is_float(t->dtype)) op_set_f64(t, i, 8.0 * u - 4.0);
    else op_set_i64(t, i, (int64_t)floor(200.0 * u));
}

/* Data movement is exact; Range's floats are computed alike on every path. */
static const opt_suite k_suite = {
    .seed = 4242,
    .fill = fill,
    .tols = {.f32 = {0, 0}, .f64 = {0, 0},
             .f16 = {0, 0}, .bf16 = {0, 0}},
    .random_schedules = 3,
};

#define ARR OPT_VALS
/* a 1-D int64 parameter with the given contents, constant or loaded at run time */
#define PC(...) OPT_CONST1(I64, __VA_ARGS__)
#define PR(...) OPT_RUNTIME1(I64, __VA_ARGS__)
#define SC OPT_CONST0
#define SR OPT_RUNTIME0
#define X OPT_X
#define AI OPT_AI
#define AINTS OPT_AINTS
#define AT OPT_AT

#define X234(dt) X(dt, 3, 2, 3, 4)
static const opt_case k_reshape_cases[] = {
    {"reshape merge and split [2,3,4] -> [4,6]", OP_RESHAPE, 14, "y", 2, 0,
     {X234(I32), PC(4, 6)}, {{0}}},
    {"reshape [2,3,4] -> [3,8]", OP_RESHAPE, 14, "y", 2, 0, {X234(F32), PC(3, -1)}, {{0}}},
    {"reshape [2,3,4] -> [2,2,3,2], run-time shape", OP_RESHAPE, 14, "y", 2, 0,
     {X234(I64), PR(2, 2, 3, 2)}, {{0}}},
    {"reshape inserting 1s, bool", OP_RESHAPE, 14, "y", 2, 0,
     {X234(BOOL), PC(1, 2, 1, 12, 1)}, {{0}}},
    {"reshape to 1-D, f16", OP_RESHAPE, 14, "y", 2, 0, {X234(F16), PC(-1)}, {{0}}},
    {"reshape [6,4] -> [4,3,2] u8", OP_RESHAPE, 14, "y", 2, 0,
     {X(U8, 2, 6, 4), PC(4, 3, 2)}, {{0}}},
    {"reshape [4,9] -> [6,6]", OP_RESHAPE, 14, "y", 2, 0, {X(I16, 2, 4, 9), PC(6, 6)}, {{0}}},
    {"reshape scalar -> [1,1]", OP_RESHAPE, 14, "y", 2, 0, {SR(F32, 3.5), PC(1, 1)}, {{0}}},
    {"reshape [1,1,1] -> scalar", OP_RESHAPE, 14, "y", 2, 0,
     {X(F64, 3, 1, 1, 1), {.dt = I64, .rank = 1, .dims = {0}, .constant = true}}, {{0}}},
    {"reshape empty, allowzero", OP_RESHAPE, 14, "y", 2, 1,
     {X(F32, 2, 0, 3), PC(3, 0)}, {AI("allowzero", 1)}},
    {"flatten axis 0", OP_FLATTEN, 13, "y", 1, 1, {X234(I8)}, {AI("axis", 0)}},
    {"flatten axis 3", OP_FLATTEN, 13, "y", 1, 1, {X234(U16)}, {AI("axis", 3)}},
    {"flatten axis -2", OP_FLATTEN, 13, "y", 1, 1, {X(F32, 4, 2, 3, 4, 5)}, {AI("axis", -2)}},
    {"squeeze run-time axes", OP_SQUEEZE, 13, "y", 2, 0,
     {X(I32, 5, 1, 2, 1, 3, 1), PR(0, -1)}, {{0}}},
    {"squeeze all 1s, bool", OP_SQUEEZE, 13, "y", 1, 0, {X(BOOL, 4, 1, 2, 1, 3)}, {{0}}},
    {"squeeze axes attribute (opset 11)", OP_SQUEEZE, 11, "y", 1, 1,
     {X(F32, 3, 2, 1, 3)}, {AINTS("axes", 1, 1)}},
    {"unsqueeze const axes", OP_UNSQUEEZE, 13, "y", 2, 0, {X234(I64), PC(0, 3, -1)}, {{0}}},
    {"unsqueeze scalar", OP_UNSQUEEZE, 13, "y", 2, 0, {SR(I32, 7), PR(0)}, {{0}}},
};

static const opt_case k_move_cases[] = {
    {"identity bool", OP_IDENTITY, 13, "y", 1, 0, {X234(BOOL)}, {{0}}},
    {"transpose default perm", OP_TRANSPOSE, 13, "y", 1, 0, {X(I64, 4, 2, 3, 4, 5)}, {{0}}},
    {"transpose perm, bool", OP_TRANSPOSE, 13, "y", 1, 1,
     {X234(BOOL)}, {AINTS("perm", 3, 2, 0, 1)}},
    {"transpose 5-D, f16", OP_TRANSPOSE, 13, "y", 1, 1,
     {X(F16, 5, 2, 1, 3, 2, 2)}, {AINTS("perm", 5, 4, 1, 3, 0, 2)}},
    {"expand adds dims, int8", OP_EXPAND, 13, "y", 2, 0, {X(I8, 2, 3, 1), PR(2, 1, 4)}, {{0}}},
    {"expand with a smaller shape", OP_EXPAND, 13, "y", 2, 0,
     {X(F32, 3, 2, 1, 3), PC(4, 1)}, {{0}}},
    {"expand scalar", OP_EXPAND, 13, "y", 2, 0, {SC(F64, 1.25), PC(2, 3)}, {{0}}},
    {"tile run-time repeats", OP_TILE, 13, "y", 2, 0, {X(F64, 3, 2, 1, 3), PR(2, 3, 1)}, {{0}}},
    {"tile const repeats with 0, bool", OP_TILE, 13, "y", 2, 0,
     {X(BOOL, 2, 2, 3), PC(0, 2)}, {{0}}},
    {"concat with an empty input, axis -1", OP_CONCAT, 13, "y", 3, 1,
     {X(I64, 2, 2, 0), X(I64, 2, 2, 3), X(I64, 2, 2, 2)}, {AI("axis", -1)}},
    {"concat axis 0, u8", OP_CONCAT, 13, "y", 4, 1,
     {X(U8, 2, 1, 3), X(U8, 2, 2, 3), X(U8, 2, 1, 3), X(U8, 2, 3, 3)}, {AI("axis", 0)}},
    {"concat one input", OP_CONCAT, 13, "y", 1, 1, {X234(F32)}, {AI("axis", 1)}},
    {"concat empty last input", OP_CONCAT, 13, "y", 2, 1,
     {X(BOOL, 2, 3, 2), X(BOOL, 2, 0, 2)}, {AI("axis", 0)}},
};

static smelt_tensor k_value_i32 = {I32, 1, {1}, (int32_t[]){-7}, NULL};
static smelt_tensor k_value_bool = {BOOL, 1, {1}, (uint8_t[]){1}, NULL};
static smelt_tensor k_value_f64 = {F64, 1, {1}, (double[]){0.1}, NULL};

static const opt_case k_other_cases[] = {
    {"split run-time sizes, omitted middle output", OP_SPLIT, 13, "y-y", 2, 1,
     {X(U16, 3, 2, 6, 2), PR(1, 2, 3)}, {AI("axis", 1)}},
    {"split equal parts, f16", OP_SPLIT, 13, "yy", 1, 1, {X(F16, 2, 6, 4)}, {AI("axis", -1)}},
    {"split num_outputs, smaller last part", OP_SPLIT, 18, "yyy", 1, 2,
     {X(I32, 1, 7)}, {AI("axis", 0), AI("num_outputs", 3)}},
    {"split attribute sizes (opset 11)", OP_SPLIT, 11, "yy", 1, 1,
     {X(BOOL, 2, 5, 2)}, {AINTS("split", 2, 2, 3)}},
    {"constant of shape int32", OP_CONSTANT_OF_SHAPE, 9, "y", 1, 1,
     {PR(2, 3)}, {AT("value", &k_value_i32)}},
    {"constant of shape bool", OP_CONSTANT_OF_SHAPE, 9, "y", 1, 1,
     {PC(4)}, {AT("value", &k_value_bool)}},
    {"constant of shape f64", OP_CONSTANT_OF_SHAPE, 9, "y", 1, 1,
     {PC(1, 2)}, {AT("value", &k_value_f64)}},
    {"constant of shape default", OP_CONSTANT_OF_SHAPE, 9, "y", 1, 0, {PR(3)}, {{0}}},
    {"constant of shape, empty", OP_CONSTANT_OF_SHAPE, 9, "y", 1, 0, {PC(2, 0)}, {{0}}},
    {"range f32, inexact steps", OP_RANGE, 11, "y", 3, 0,
     {SR(F32, 0.1), SR(F32, 2.0), SR(F32, 0.3)}, {{0}}},
    {"range f64 const", OP_RANGE, 11, "y", 3, 0, {SC(F64, -1), SC(F64, 1), SC(F64, 0.1)}, {{0}}},
    {"range int16 negative delta", OP_RANGE, 11, "y", 3, 0,
     {SR(I16, 30000), SR(I16, -30000), SR(I16, -7000)}, {{0}}},
    {"range empty", OP_RANGE, 11, "y", 3, 0, {SR(I64, 5), SR(I64, 1), SR(I64, 2)}, {{0}}},
    {"range f16 in float", OP_RANGE, 27, "y", 3, 0,
     {SR(F16, 1.5), SR(F16, 40.0), SR(F16, 0.75)}, {{0}}},
    {"range bf16 in double", OP_RANGE, 27, "y", 3, 1,
     {SR(BF16, -3.0), SR(BF16, 9.0), SR(BF16, 0.5)}, {AI("stash_type", 11)}},
    {"shape start/end", OP_SHAPE, 15, "y", 1, 2,
     {X(F32, 4, 2, 3, 4, 5)}, {AI("start", 1), AI("end", -1)}},
    {"shape whole, bool", OP_SHAPE, 15, "y", 1, 0, {X234(BOOL)}, {{0}}},
    {"shape empty range", OP_SHAPE, 15, "y", 1, 1, {X234(F32)}, {AI("start", 5)}},
    {"size", OP_SIZE, 13, "y", 1, 0, {X(F32, 4, 2, 3, 4, 5)}, {{0}}},
    {"size of a scalar", OP_SIZE, 13, "y", 1, 0, {SR(F32, 3)}, {{0}}},
    {"dropout with mask", OP_DROPOUT, 13, "yy", 1, 0, {X234(F32)}, {{0}}},
    {"dropout zero ratio in training", OP_DROPOUT, 13, "yy", 3, 0,
     {X234(F16), SC(F16, 0), SR(BOOL, 1)}, {{0}}},
    {"dropout opset 7: mask of the input dtype", OP_DROPOUT, 7, "yy", 1, 0, {X234(F64)}, {{0}}},
};

/* A training Dropout whose ratio is not a constant cannot be compiled. */
static void test_dropout_training_runtime_ratio(void)
{
    opt_case c = {"dropout training, run-time ratio", OP_DROPOUT, 13, "y", 3, 0,
                  {X234(F32), SR(F32, 0), SC(BOOL, 1)}, {{0}}};
    opt_check_te_refuses(&k_suite, &c, SMELT_ERR_UNSUPPORTED, "must be a constant to compile");
}

/* A training_mode known only at run time with a nonzero ratio: copying x
 * through would be wrong whenever it is true (it used to be). */
static void test_dropout_runtime_training_mode(void)
{
    opt_case c = {"dropout, run-time training_mode", OP_DROPOUT, 13, "y", 3, 0,
                  {X234(F32), SC(F32, 0.5), SR(BOOL, 1)}, {{0}}};
    opt_check_te_refuses(&k_suite, &c, SMELT_ERR_UNSUPPORTED, "training_mode");
}

int main(void)
{
    opt_check_cases(&k_suite, k_reshape_cases, SMELT_ARRAY_LEN(k_reshape_cases));
    opt_check_cases(&k_suite, k_move_cases, SMELT_ARRAY_LEN(k_move_cases));
    opt_check_cases(&k_suite, k_other_cases, SMELT_ARRAY_LEN(k_other_cases));
    test_dropout_training_runtime_ratio();
    test_dropout_runtime_training_mode();
    TEST_MAIN_END();
}
