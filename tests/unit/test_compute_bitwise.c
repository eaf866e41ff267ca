/* Compute definitions of the bitwise ops (BitShift, BitwiseAnd/Or/Xor/Not)
 * checked against the reference kernels through the te interpreter and the
 * loop IR under the default and random schedules (op_test_util.h): every
 * integer width, broadcasting, and shift counts that are negative or past
 * the width (BitShift-28 defines them).  The reference kernel itself is
 * checked against values worked out from the spec. */
#include "op_test_util.h"

enum { FILL_VALUE, FILL_COUNT };

static bool is_unsigned(smelt_dtype dt) { return dt == U8 || dt == U16 || dt == U32 || dt == U64; }

static const int64_t k_values[] = {0, 1, -1, 5, -7, 127, -128, 255, 32767, -32768, 65535,
                                   INT32_MAX, INT32_MIN, 12345, -54321, INT64_MAX / 3};

/* values: extremes of every width; counts: -70 .. 70 (unsigned: 0 .. 140) */
static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    int64_t v;
    if (kind == FILL_COUNT) {
        v = (int64_t)(opt_random(state) % 141) - 70;
    } else {
        v = k_values[i % (int64_t)SMELT_ARRAY_LEN(k_values)];
        if (opt_random(state) % 3 == 0) v = (int64_t)(opt_random(state) % 2001) - 1000;
    }
    /* the te interpreter carries integers as int64: uint64 stays below 2^63 */
    if (is_unsigned(t->dtype) && v < 0) v = v == INT64_MIN ? INT64_MAX : -v;
    op_set_i64(t, i, v);
}

static const opt_suite k_suite = {
    .seed = 777,
    .fill = fill,
    .tols = {.f32 = {0, 0}, .f64 = {0, 0}, .f16 = {0, 0}, .bf16 = {0, 0}},
    .random_schedules = 3,
};

#define X(dt) OPT_XF(dt, FILL_VALUE, 2, 4, 9)
#define N(dt) OPT_XF(dt, FILL_COUNT, 2, 4, 9)
#define ROW(dt) OPT_XF(dt, FILL_COUNT, 1, 9)
#define LEFT OPT_AS("direction", "LEFT")
#define RIGHT OPT_AS("direction", "RIGHT")

static const opt_case k_cases[] = {
    {"shl int8", OP_BIT_SHIFT, 28, "y", 2, 1, {X(I8), N(I8)}, {LEFT}},
    {"shr int8", OP_BIT_SHIFT, 28, "y", 2, 1, {X(I8), N(I8)}, {RIGHT}},
    {"shl int16", OP_BIT_SHIFT, 28, "y", 2, 1, {X(I16), N(I16)}, {LEFT}},
    {"shr int32", OP_BIT_SHIFT, 28, "y", 2, 1, {X(I32), N(I32)}, {RIGHT}},
    {"shl int64", OP_BIT_SHIFT, 28, "y", 2, 1, {X(I64), N(I64)}, {LEFT}},
    {"shr int64", OP_BIT_SHIFT, 28, "y", 2, 1, {X(I64), N(I64)}, {RIGHT}},
    {"shl uint8 opset 11", OP_BIT_SHIFT, 11, "y", 2, 1, {X(U8), N(U8)}, {LEFT}},
    {"shr uint16", OP_BIT_SHIFT, 28, "y", 2, 1, {X(U16), N(U16)}, {RIGHT}},
    {"shl uint32 broadcast", OP_BIT_SHIFT, 28, "y", 2, 1, {X(U32), ROW(U32)}, {LEFT}},
    {"shr uint64 broadcast", OP_BIT_SHIFT, 28, "y", 2, 1, {X(U64), ROW(U64)}, {RIGHT}},
    {"and int8", OP_BITWISE_AND, 18, "y", 2, 0, {X(I8), X(I8)}, {{0}}},
    {"and uint64", OP_BITWISE_AND, 18, "y", 2, 0, {X(U64), X(U64)}, {{0}}},
    {"or int32 broadcast", OP_BITWISE_OR, 18, "y", 2, 0, {X(I32), ROW(I32)}, {{0}}},
    {"or uint16", OP_BITWISE_OR, 18, "y", 2, 0, {X(U16), X(U16)}, {{0}}},
    {"xor int64", OP_BITWISE_XOR, 18, "y", 2, 0, {X(I64), X(I64)}, {{0}}},
    {"xor uint8", OP_BITWISE_XOR, 18, "y", 2, 0, {X(U8), X(U8)}, {{0}}},
    {"not int8", OP_BITWISE_NOT, 18, "y", 1, 0, {X(I8)}, {{0}}},
    {"not uint16", OP_BITWISE_NOT, 18, "y", 1, 0, {X(U16)}, {{0}}},
    {"not uint32", OP_BITWISE_NOT, 18, "y", 1, 0, {X(U32)}, {{0}}},
    {"not int64", OP_BITWISE_NOT, 18, "y", 1, 0, {X(I64)}, {{0}}},
};

/* One BitShift of scalars-as-1-vectors of dtype dt through the reference. */
static smelt_status run_shift(smelt_dtype dt, const char *dir, int64_t opset, int64_t x,
                              int64_t n, int64_t *out, char *msg, size_t cap)
{
    opt_node t;
    opt_init(&t, NULL, OP_BIT_SHIFT, opset, 2, 1);
    opt_attr_string(&t, "direction", dir);
    int64_t bytes[2][1] = {{0}};
    smelt_tensor in[2] = {opt_vec(dt, 1, bytes[0]), opt_vec(dt, 1, bytes[1])};
    op_set_i64(&in[0], 0, x);
    op_set_i64(&in[1], 0, n);
    smelt_status st = opt_run(&t, in, 2);
    if (st == SMELT_OK) *out = op_get_i64(&t.out[0], 0);
    snprintf(msg, cap, "%s", opt_message(&t));
    opt_fini(&t);
    return st;
}

/* The reference against the spec's cases, worked out by hand. */
static void test_shift_values(void)
{
    static const struct {
        smelt_dtype dt;
        const char *dir;
        int64_t x, n, want;
    } k[] = {
        {I8, "LEFT", 1, 7, -128},      {I8, "LEFT", -7, 1, -14},      {I8, "LEFT", 3, 8, 0},
        {I8, "LEFT", 3, -1, 0},        {I8, "RIGHT", -128, 3, -16},   {I8, "RIGHT", -128, 9, -1},
        {I8, "RIGHT", -1, -5, -1},     {I8, "RIGHT", 100, 8, 0},      {U8, "LEFT", 255, 1, 254},
        {U8, "LEFT", 1, 8, 0},         {U8, "RIGHT", 255, 7, 1},      {U8, "RIGHT", 255, 200, 0},
        {I32, "RIGHT", -5, 1, -3},     {I64, "LEFT", 1, 63, INT64_MIN}, {I64, "RIGHT", -2, 64, -1},
        {U64, "RIGHT", -1 /* 2^64 - 1 */, 63, 1},
    };
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k); i++) {
        int64_t got = 0;
        char msg[256];
        CHECK(run_shift(k[i].dt, k[i].dir, 28, k[i].x, k[i].n, &got, msg, sizeof msg) == SMELT_OK);
        if (got != k[i].want)
            fprintf(stderr, "case %zu: %lld %s %lld = %lld, expected %lld\n", i, (long long)k[i].x,
                    k[i].dir, (long long)k[i].n, (long long)got, (long long)k[i].want);
        CHECK(got == k[i].want);
    }
}

/* BitShift before opset 28 takes unsigned types only. */
static void test_signed_before_28(void)
{
    int64_t got;
    char msg[256];
    CHECK(run_shift(I8, "LEFT", 11, 1, 1, &got, msg, sizeof msg) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(msg, "unsupported dtype i8");
}

int main(void)
{
    test_shift_values();
    test_signed_before_28();
    opt_check_cases(&k_suite, k_cases, SMELT_ARRAY_LEN(k_cases));
    TEST_MAIN_END();
}
