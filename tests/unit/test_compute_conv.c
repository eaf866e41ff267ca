/* Compute definitions of the sliding-window ops (conv family: Conv,
 * ConvTranspose; pool family, which shares conv.h's geometry: MaxPool,
 * AveragePool, the global pools, LRN) checked against the reference kernels:
 * each case runs one node through exec_node (reference) and exec_node_te
 * (tensor expressions, interpreted) on pseudo-random inputs and compares the
 * outputs.  Covers what the ONNX node tests leave out: groups and depthwise
 * convolutions, dilations with padding, ConvTranspose with groups, 16-bit
 * and double floats, integer MaxPool, AveragePool divisors under
 * ceil_mode/dilations/count_include_pad, even LRN sizes.
 * Every case is also lowered under the default schedule and the suite's
 * random legal ones and run by the tir interpreter (op_test_util.h). */
#include "op_test_util.h"

#define MAX_IN 3

/* attrs: "name=value ..." where a value with a comma is an ints list
 * ("strides=3," for one value), with letters a string, with a '.' a float,
 * else an int. */
typedef struct node_case {
    op_kind op;
    opt_input in[MAX_IN]; /* up to the first absent one */
    const char *attrs;
} node_case;

/* Floats in [-2, 2); integers over the whole int8/uint8 range. */
static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    uint32_t r = opt_random(state);
    if (t->dtype == I8)
        op_set_i64(t, i, (int64_t)(r % 256) - 128);
    else if (t->dtype == U8)
        op_set_i64(t, i, (int64_t)(r % 256));
    else
        op_set_f64(t, i, 4.0 * ((double)r / (double)(1u << 24)) - 2.0);
}

/* |result - reference| <= tol * (1 + |reference|); integers exact */
static const opt_suite k_suite = {
    .seed = 12345, .fill = fill, .tols = OPT_TOLS_ACCUMULATE, .random_schedules = 3};

static void add_attr(opt_node *t, const char *name, const char *v)
{
    if (strchr(v, ',')) {
        int64_t ints[SMELT_MAX_RANK * 2];
        int n = 0;
        const char *p = v;
        while (*p && n < SMELT_MAX_RANK * 2) {
            char *end;
            ints[n++] = strtoll(p, &end, 10);
            if (end == p) break;
            p = *end == ',' ? end + 1 : end;
        }
        opt_attr_ints(t, name, n, ints);
    } else if (strpbrk(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")) {
        opt_attr_string(t, name, v);
    } else if (strchr(v, '.')) {
        opt_attr_float(t, name, strtof(v, NULL));
    } else {
        opt_attr_int(t, name, strtoll(v, NULL, 10));
    }
}

static void parse_attrs(opt_node *t, const char *spec)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec ? spec : "");
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = '\0';
        add_attr(t, tok, eq + 1);
    }
}

/* Both paths on pseudo-random inputs (opset 19), every output compared. */
static void check_case(const node_case *c, int n_out)
{
    char what[320];
    snprintf(what, sizeof what, "%s %s", op_get(c->op)->name, c->attrs ? c->attrs : "");
    int n_in = 0;
    while (n_in < MAX_IN && c->in[n_in].dt != SMELT_DT_UNDEFINED) n_in++;
    opt_node t;
    opt_init(&t, NULL, c->op, 19, n_in, n_out);
    parse_attrs(&t, c->attrs);
    smelt_status s = opt_prepare(&t, &k_suite, c->in, n_in);
    if (s != SMELT_OK) fprintf(stderr, "%s: import: %s\n", what, opt_message(&t));
    CHECK(s == SMELT_OK);
    if (s == SMELT_OK) opt_check_paths(&t, &k_suite, what);
    opt_fini(&t);
}

#define T OPT_X

static const node_case k_cases[] = {
    /* Conv: x [N, C, ...], w [M, C/group, k...], b [M] */
    {OP_CONV, {T(F32, 4, 2, 4, 7, 6), T(F32, 4, 6, 2, 3, 3), T(F32, 1, 6)},
     "group=2 pads=1,0,1,2 strides=2,1"},
    {OP_CONV, {T(F32, 4, 1, 5, 9, 9), T(F32, 4, 5, 1, 3, 3)}, "group=5 pads=1,1,1,1"},
    {OP_CONV, {T(F32, 4, 1, 3, 8, 8), T(F32, 4, 6, 1, 3, 3), T(F32, 1, 6)},
     "group=3 auto_pad=SAME_UPPER strides=2,2"},
    {OP_CONV, {T(F32, 4, 1, 2, 10, 11), T(F32, 4, 3, 2, 3, 2)}, "dilations=2,3 pads=2,1,0,3"},
    {OP_CONV, {T(F32, 3, 2, 3, 12), T(F32, 3, 4, 3, 4), T(F32, 1, 4)}, "strides=3, pads=2,1"},
    {OP_CONV, {T(F32, 5, 1, 4, 5, 6, 5), T(F32, 5, 4, 2, 2, 3, 2)},
     "group=2 pads=1,0,1,0,2,1 strides=1,2,2 dilations=2,1,1"},
    {OP_CONV, {T(F32, 4, 1, 2, 7, 8), T(F32, 4, 2, 2, 4, 3)}, "auto_pad=SAME_LOWER strides=2,3"},
    {OP_CONV, {T(F32, 4, 1, 2, 5, 5), T(F32, 4, 3, 2, 3, 3)}, "auto_pad=VALID"},
    {OP_CONV, {T(F16, 4, 1, 3, 6, 6), T(F16, 4, 4, 3, 3, 3), T(F16, 1, 4)}, "pads=1,1,1,1"},
    {OP_CONV, {T(BF16, 4, 1, 3, 6, 6), T(BF16, 4, 4, 3, 3, 3)}, "strides=2,2"},
    {OP_CONV, {T(F64, 4, 1, 3, 6, 6), T(F64, 4, 4, 3, 3, 3), T(F64, 1, 4)},
     "pads=0,1,2,1 strides=2,1"},
    {OP_CONV, {T(F32, 4, 2, 8, 5, 5), T(F32, 4, 4, 8, 1, 1)}, NULL},
    {OP_CONV, {T(F32, 4, 0, 2, 5, 5), T(F32, 4, 3, 2, 3, 3)}, "pads=1,1,1,1"},
    /* ConvTranspose: x [N, C, ...], w [C, M/group, k...], b [M] */
    {OP_CONV_TRANSPOSE, {T(F32, 4, 2, 4, 4, 5), T(F32, 4, 4, 3, 3, 3), T(F32, 1, 6)},
     "group=2 strides=2,3 pads=1,0,0,2 output_padding=1,2"},
    {OP_CONV_TRANSPOSE, {T(F32, 4, 1, 3, 5, 5), T(F32, 4, 3, 1, 3, 3)},
     "group=3 strides=2,2 pads=1,1,1,1"},
    {OP_CONV_TRANSPOSE, {T(F32, 4, 1, 2, 4, 3), T(F32, 4, 2, 3, 3, 2)},
     "strides=3,2 dilations=2,3 pads=2,1,1,0"},
    {OP_CONV_TRANSPOSE, {T(F32, 4, 1, 2, 4, 5), T(F32, 4, 2, 2, 3, 4)},
     "strides=2,2 auto_pad=SAME_LOWER"},
    {OP_CONV_TRANSPOSE, {T(F32, 4, 1, 2, 3, 3), T(F32, 4, 2, 2, 3, 3)},
     "strides=2,2 output_shape=9,8"},
    {OP_CONV_TRANSPOSE, {T(F16, 3, 1, 3, 6), T(F16, 3, 3, 2, 3), T(F16, 1, 2)},
     "strides=2, pads=1,1"},
    {OP_CONV_TRANSPOSE, {T(F32, 5, 1, 4, 3, 4, 3), T(F32, 5, 4, 1, 2, 3, 2)},
     "group=2 strides=2,1,2 pads=0,1,1,0,1,0"},
    /* MaxPool */
    {OP_MAX_POOL, {T(F32, 4, 1, 2, 9, 10)},
     "kernel_shape=3,2 strides=2,3 dilations=2,2 pads=1,0,1,1 ceil_mode=1"},
    {OP_MAX_POOL, {T(I8, 4, 1, 2, 6, 6)}, "kernel_shape=3,3 pads=1,1,1,1"},
    {OP_MAX_POOL, {T(U8, 4, 1, 2, 7, 6)}, "kernel_shape=3,2 strides=2,2 auto_pad=SAME_UPPER"},
    {OP_MAX_POOL, {T(F16, 3, 2, 3, 11)}, "kernel_shape=4, strides=3, pads=2,1 ceil_mode=1"},
    {OP_MAX_POOL, {T(BF16, 4, 1, 2, 6, 6)}, "kernel_shape=2,2 strides=2,2"},
    {OP_MAX_POOL, {T(F32, 5, 1, 2, 5, 6, 7)},
     "kernel_shape=2,3,3 strides=2,2,1 pads=1,1,0,0,1,2"},
    /* AveragePool */
    {OP_AVERAGE_POOL, {T(F32, 4, 1, 2, 9, 10)},
     "kernel_shape=3,3 strides=2,2 pads=1,1,1,1 ceil_mode=1"},
    {OP_AVERAGE_POOL, {T(F32, 4, 1, 2, 9, 10)},
     "kernel_shape=3,3 strides=2,2 pads=1,1,1,1 ceil_mode=1 count_include_pad=1"},
    {OP_AVERAGE_POOL, {T(F32, 4, 1, 2, 10, 11)},
     "kernel_shape=3,2 strides=1,2 dilations=2,3 pads=2,1,1,2"},
    {OP_AVERAGE_POOL, {T(F32, 4, 1, 2, 10, 11)},
     "kernel_shape=3,2 strides=2,2 dilations=2,3 pads=2,1,1,2 count_include_pad=1 ceil_mode=1"},
    {OP_AVERAGE_POOL, {T(F16, 4, 1, 3, 7, 7)},
     "kernel_shape=3,3 strides=2,2 auto_pad=SAME_LOWER"},
    {OP_AVERAGE_POOL, {T(F32, 5, 1, 2, 5, 6, 7)}, "kernel_shape=2,3,3 pads=1,1,0,0,1,2"},
    {OP_AVERAGE_POOL, {T(F64, 4, 1, 2, 6, 7)},
     "kernel_shape=3,3 pads=1,2,1,0 count_include_pad=1"},
    {OP_AVERAGE_POOL, {T(BF16, 3, 2, 2, 9)}, "kernel_shape=3, strides=2,"},
    /* float32 pools under the pool schedule (vector width 8 here): padded
     * border peeled from the interior, vector tails, strides 1-3, windows
     * larger than the input, rows joining the parallel loop (2 planes) */
    {OP_MAX_POOL, {T(F32, 4, 1, 3, 20, 37)}, "kernel_shape=3,3 strides=2,2 pads=1,1,1,1"},
    {OP_MAX_POOL, {T(F32, 4, 1, 2, 9, 21)}, "kernel_shape=3,3 pads=1,1,1,1"},
    {OP_MAX_POOL, {T(F32, 4, 1, 2, 11, 40)}, "kernel_shape=3,3 strides=3,3 pads=1,1,1,1"},
    {OP_MAX_POOL, {T(F32, 4, 1, 2, 3, 4)}, "kernel_shape=5,5 pads=2,2,2,2"},
    {OP_MAX_POOL, {T(F32, 4, 1, 2, 64, 64)}, "kernel_shape=3,3 pads=1,1,1,1"},
    {OP_MAX_POOL, {T(F32, 3, 2, 3, 37)}, "kernel_shape=3, strides=2, pads=1,1"},
    {OP_AVERAGE_POOL, {T(F32, 4, 1, 3, 13, 37)},
     "kernel_shape=3,3 strides=2,2 pads=1,0,2,1 ceil_mode=1"},
    {OP_AVERAGE_POOL, {T(F32, 4, 1, 3, 13, 37)},
     "kernel_shape=3,3 strides=2,2 pads=1,0,2,1 ceil_mode=1 count_include_pad=1"},
    {OP_AVERAGE_POOL, {T(F32, 4, 1, 2, 8, 19)}, "kernel_shape=3,3 pads=1,1,1,1 count_include_pad=1"},
    /* output widths of whole half vectors (28 = 7 x 4, 12 = 3 x 4): 4 lanes */
    {OP_MAX_POOL, {T(F32, 4, 1, 3, 10, 28)}, "kernel_shape=3,3 pads=1,1,1,1"},
    {OP_AVERAGE_POOL, {T(F32, 4, 1, 2, 9, 24)}, "kernel_shape=3,3 strides=2,2 pads=1,1,1,1"},
    /* ... and in the blocked layout ([n, c/b, h, w, b] with a [kh, kw, 1]
     * window): blocks of 8 and of 16 (split into two vectors) */
    {OP_MAX_POOL, {T(F32, 5, 1, 2, 9, 11, 8)},
     "kernel_shape=3,3,1 strides=2,2,1 pads=1,1,0,1,1,0"},
    {OP_MAX_POOL, {T(F32, 5, 1, 1, 6, 7, 16)}, "kernel_shape=3,3,1 pads=1,1,0,1,1,0"},
    {OP_AVERAGE_POOL, {T(F32, 5, 1, 2, 7, 9, 8)},
     "kernel_shape=3,3,1 strides=2,2,1 pads=1,1,0,1,1,0 ceil_mode=1"},
    {OP_AVERAGE_POOL, {T(F32, 5, 1, 2, 7, 9, 8)},
     "kernel_shape=3,3,1 strides=2,2,1 pads=1,1,0,1,1,0 count_include_pad=1"},
    /* LpPool (p is an int from opset 2) */
    {OP_LP_POOL, {T(F32, 4, 1, 2, 9, 10)}, "kernel_shape=3,3 strides=2,2 pads=1,1,1,1 p=2"},
    {OP_LP_POOL, {T(F32, 4, 1, 2, 10, 11)},
     "kernel_shape=3,2 strides=1,2 dilations=2,3 pads=2,1,1,2 ceil_mode=1 p=3"},
    {OP_LP_POOL, {T(F16, 3, 2, 3, 11)}, "kernel_shape=4, strides=3, p=1"},
    {OP_LP_POOL, {T(F64, 4, 1, 2, 6, 7)}, "kernel_shape=3,3 auto_pad=SAME_UPPER"},
    /* global pools */
    {OP_GLOBAL_LP_POOL, {T(F32, 4, 2, 3, 4, 5)}, "p=3"},
    {OP_GLOBAL_LP_POOL, {T(F16, 3, 2, 3, 40)}, NULL},
    {OP_GLOBAL_AVERAGE_POOL, {T(F32, 5, 2, 3, 4, 5, 3)}, NULL},
    {OP_GLOBAL_AVERAGE_POOL, {T(F16, 3, 2, 3, 40)}, NULL},
    {OP_GLOBAL_AVERAGE_POOL, {T(BF16, 4, 1, 2, 3, 3)}, NULL},
    {OP_GLOBAL_MAX_POOL, {T(F16, 4, 2, 3, 5, 4)}, NULL},
    {OP_GLOBAL_MAX_POOL, {T(F64, 3, 2, 3, 7)}, NULL},
    /* LRN */
    {OP_LRN, {T(F32, 4, 2, 7, 3, 4)}, "size=4 alpha=0.01 beta=0.6 bias=1.5"},
    {OP_LRN, {T(F32, 2, 3, 6)}, "size=3"},
    {OP_LRN, {T(F16, 4, 1, 5, 3, 3)}, "size=5 alpha=0.1"},
    {OP_LRN, {T(F32, 4, 1, 3, 2, 2)}, "size=9 alpha=0.2"},
};

/* MaxPool's Indices output (both storage orders, padding, ceil mode) matches
 * the reference: the first row-major position of each window's maximum. */
static void test_max_pool_indices(void)
{
    static const node_case cases[] = {
        {OP_MAX_POOL, {T(F32, 4, 1, 2, 5, 6)}, "kernel_shape=2,2"},
        {OP_MAX_POOL, {T(F32, 4, 2, 1, 5, 7)}, "kernel_shape=3,3 pads=1,1,1,1 storage_order=1"},
        {OP_MAX_POOL,
         {T(F32, 4, 1, 2, 9, 10)},
         "kernel_shape=3,2 strides=2,3 pads=1,0,1,1 ceil_mode=1"},
        {OP_MAX_POOL, {T(F32, 3, 2, 3, 11)}, "kernel_shape=4, strides=3, pads=2,1 storage_order=1"},
    };
    for (size_t i = 0; i < SMELT_ARRAY_LEN(cases); i++) check_case(&cases[i], 2);
}

int main(void)
{
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_cases); i++) check_case(&k_cases[i], 1);
    test_max_pool_indices();
    TEST_MAIN_END();
}
