/* Compute definitions of the sliding-window ops (conv family: Conv,
 * ConvTranspose; pool family, which shares conv.h's geometry: MaxPool,
 * AveragePool, the global pools, LRN) checked against the reference kernels:
 * each case runs one node through exec_node (reference) and exec_node_te
 * (tensor expressions, interpreted) on pseudo-random inputs and compares the
 * outputs.  Covers what the ONNX node tests leave out: groups and depthwise
 * convolutions, dilations with padding, ConvTranspose with groups, 16-bit
 * and double floats, integer MaxPool, AveragePool divisors under
 * ceil_mode/dilations/count_include_pad, even LRN sizes. */
#include <stdlib.h>

#include "exec/exec.h"
#include "ops/op.h"
#include "test_util.h"

#define MAX_IN 3
#define MAX_ATTRS 8

/* Strong references: registry.c only declares the op_defs weak. */
extern const op_def op_def_CONV, op_def_CONV_TRANSPOSE, op_def_MAX_POOL, op_def_AVERAGE_POOL,
    op_def_GLOBAL_AVERAGE_POOL, op_def_GLOBAL_MAX_POOL, op_def_LRN;
const op_def *const test_link_anchor[] = {
    &op_def_CONV,          &op_def_CONV_TRANSPOSE,      &op_def_MAX_POOL, &op_def_AVERAGE_POOL,
    &op_def_GLOBAL_AVERAGE_POOL, &op_def_GLOBAL_MAX_POOL, &op_def_LRN};

#define F16 SMELT_DT_FLOAT16
#define BF16 SMELT_DT_BFLOAT16
#define F32 SMELT_DT_FLOAT32
#define F64 SMELT_DT_FLOAT64
#define I8 SMELT_DT_INT8
#define U8 SMELT_DT_UINT8

typedef struct in_spec {
    smelt_dtype dt; /* SMELT_DT_UNDEFINED: absent */
    int rank;
    int64_t dims[SMELT_MAX_RANK];
} in_spec;

/* attrs: "name=value ..." where a value with a comma is an ints list
 * ("strides=3," for one value), with letters a string, with a '.' a float,
 * else an int. */
typedef struct node_case {
    op_kind op;
    in_spec in[MAX_IN];
    const char *attrs;
} node_case;

static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

/* Floats in [-2, 2); integers over the whole int8/uint8 range. */
static void fill_random(smelt_tensor *t, uint32_t *state)
{
    int64_t n = op_numel(t);
    for (int64_t i = 0; i < n; i++) {
        uint32_t r = next_random(state);
        if (t->dtype == I8)
            op_set_i64(t, i, (int64_t)(r % 256) - 128);
        else if (t->dtype == U8)
            op_set_i64(t, i, (int64_t)(r % 256));
        else
            op_set_f64(t, i, 4.0 * ((double)r / (double)(1u << 24)) - 2.0);
    }
}

static void parse_attr_value(gr_graph *g, gr_attr *a, const char *v)
{
    if (strchr(v, ',')) {
        a->type = GR_ATTR_INTS;
        a->ints = smelt_arena_alloc(&g->arena, sizeof(int64_t) * SMELT_MAX_RANK * 2);
        const char *p = v;
        while (*p && a->n < SMELT_MAX_RANK * 2) {
            char *end;
            a->ints[a->n++] = strtoll(p, &end, 10);
            if (end == p) break;
            p = *end == ',' ? end + 1 : end;
        }
    } else if (strpbrk(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")) {
        a->type = GR_ATTR_STRING;
        a->s = smelt_arena_strdup(&g->arena, v);
        a->s_len = strlen(v);
    } else if (strchr(v, '.')) {
        a->type = GR_ATTR_FLOAT;
        a->f = strtof(v, NULL);
    } else {
        a->type = GR_ATTR_INT;
        a->i = strtoll(v, NULL, 10);
    }
}

static void parse_attrs(gr_graph *g, gr_node *node, const char *spec)
{
    node->attrs = smelt_arena_alloc(&g->arena, sizeof(gr_attr) * MAX_ATTRS);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec ? spec : "");
    for (char *tok = strtok(buf, " "); tok && node->n_attrs < MAX_ATTRS; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = '\0';
        gr_attr *a = &node->attrs[node->n_attrs++];
        a->name = smelt_arena_strdup(&g->arena, tok);
        parse_attr_value(g, a, eq + 1);
    }
}

static gr_node *build_node(gr_graph *g, const node_case *c, int n_out)
{
    int n_in = 0;
    while (n_in < MAX_IN && c->in[n_in].dt != SMELT_DT_UNDEFINED) n_in++;
    gr_node *node = gr_node_new(g, "n0", op_get(c->op)->name, c->op, n_in, n_out);
    for (int i = 0; i < n_in; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        node->inputs[i] = gr_value_new(g, name);
    }
    for (int i = 0; i < n_out; i++) {
        char name[16];
        snprintf(name, sizeof name, "out%d", i);
        gr_value *v = gr_value_new(g, name);
        v->producer = node;
        v->producer_output = i;
        node->outputs[i] = v;
    }
    parse_attrs(g, node, c->attrs);
    return node;
}

static double tolerance(smelt_dtype dt)
{
    return dt == BF16 ? 2e-2 : dt == F16 ? 4e-3 : dt == F64 ? 1e-9 : 1e-4;
}

static bool near(double got, double want, smelt_dtype dt)
{
    if (op_dtype_is_int(dt)) return got == want;
    if (isnan(want)) return isnan(got);
    return fabs(got - want) <= tolerance(dt) * (1.0 + fabs(want));
}

static void compare_output(const char *what, const smelt_tensor *ref, const smelt_tensor *te)
{
    bool same_type = ref->dtype == te->dtype && ref->rank == te->rank &&
                     op_numel(ref) == op_numel(te);
    if (!same_type) fprintf(stderr, "%s: output type differs\n", what);
    CHECK(same_type);
    int64_t bad = 0, n = same_type ? op_numel(ref) : 0;
    for (int64_t i = 0; i < n; i++) {
        double want = op_get_f64(ref, i), got = op_get_f64(te, i);
        if (near(got, want, ref->dtype)) continue;
        if (bad++ == 0)
            fprintf(stderr, "%s: element %lld: te %.9g, reference %.9g\n", what, (long long)i,
                    got, want);
    }
    CHECK(bad == 0);
}

/* Runs both paths; returns the te path's status (reference must succeed). */
static smelt_status run_node(const node_case *c, int n_out, bool compare)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = 19;
    gr_node *node = build_node(g, c, n_out);
    smelt_tensor in[MAX_IN], ref[2], te[2];
    const smelt_tensor *inp[MAX_IN] = {NULL};
    uint32_t state = 12345;
    memset(in, 0, sizeof in);
    memset(ref, 0, sizeof ref);
    memset(te, 0, sizeof te);
    char what[320];
    snprintf(what, sizeof what, "%s %s", op_get(c->op)->name, c->attrs ? c->attrs : "");
    for (int i = 0; i < node->n_inputs; i++) {
        in[i].dtype = c->in[i].dt;
        in[i].rank = c->in[i].rank;
        memcpy(in[i].dims, c->in[i].dims, sizeof in[i].dims);
        int64_t n = op_numel(&in[i]);
        in[i].data = calloc(n ? (size_t)n : 1, smelt_dtype_size(in[i].dtype));
        fill_random(&in[i], &state);
        inp[i] = &in[i];
    }
    const op_def *def = op_get(c->op)->def;
    smelt_status s = def->import ? def->import(ctx, g, node) : SMELT_OK;
    if (s == SMELT_OK) s = exec_node(ctx, node, inp, ref);
    if (s != SMELT_OK) fprintf(stderr, "%s: reference: %s\n", what, smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK);
    if (s == SMELT_OK) s = exec_node_te(ctx, node, inp, te);
    if (s != SMELT_OK && compare) fprintf(stderr, "%s: te: %s\n", what, smelt_ctx_message(ctx));
    if (s == SMELT_OK && compare) compare_output(what, &ref[0], &te[0]);
    for (int i = 0; i < MAX_IN; i++) free(in[i].data);
    for (int i = 0; i < 2; i++) {
        smelt_free(ref[i].data);
        smelt_free(te[i].data);
    }
    gr_graph_free(g);
    smelt_ctx_free(ctx);
    return s;
}

#define T(dt, r, ...) {dt, r, {__VA_ARGS__}}

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
    /* global pools */
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
        {OP_MAX_POOL, {T(F32, 4, 1, 2, 9, 10)}, "kernel_shape=3,2 strides=2,3 pads=1,0,1,1 ceil_mode=1"},
        {OP_MAX_POOL, {T(F32, 3, 2, 3, 11)}, "kernel_shape=4, strides=3, pads=2,1 storage_order=1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(run_node(&cases[i], 2, true) == SMELT_OK);
}

int main(void)
{
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        CHECK(run_node(&k_cases[i], 1, true) == SMELT_OK);
    test_max_pool_indices();
    TEST_MAIN_END();
}
