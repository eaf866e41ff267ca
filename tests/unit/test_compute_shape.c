/* Compute definitions of the shape family checked against the reference
 * kernels: each case runs one node through exec_node (reference) and
 * exec_node_te (tensor expressions, interpreted) and compares every output.
 * Covers what the ONNX node tests leave out: integer and bool dtypes,
 * reshapes that merge and split dims at once, empty tensors, omitted Split
 * outputs, Dropout's old mask dtype, Range in int16 and float64. */
#include <stdlib.h>

#include "exec/exec.h"
#include "ops/op.h"
#include "test_util.h"

#define MAX_IN 4
#define MAX_OUT 3

/* Strong references: registry.c only declares the op_defs weak. */
extern const op_def op_def_IDENTITY, op_def_DROPOUT, op_def_FLATTEN, op_def_RESHAPE,
    op_def_TRANSPOSE, op_def_SQUEEZE, op_def_UNSQUEEZE, op_def_SHAPE, op_def_SIZE,
    op_def_EXPAND, op_def_TILE, op_def_CONCAT, op_def_SPLIT, op_def_CONSTANT_OF_SHAPE,
    op_def_RANGE;
const op_def *const test_link_anchor[] = {
    &op_def_IDENTITY, &op_def_DROPOUT, &op_def_FLATTEN, &op_def_RESHAPE, &op_def_TRANSPOSE,
    &op_def_SQUEEZE,  &op_def_UNSQUEEZE, &op_def_SHAPE, &op_def_SIZE,    &op_def_EXPAND,
    &op_def_TILE,     &op_def_CONCAT,  &op_def_SPLIT,   &op_def_CONSTANT_OF_SHAPE, &op_def_RANGE};

#define F16 SMELT_DT_FLOAT16
#define F32 SMELT_DT_FLOAT32
#define F64 SMELT_DT_FLOAT64
#define I8 SMELT_DT_INT8
#define I16 SMELT_DT_INT16
#define I32 SMELT_DT_INT32
#define I64 SMELT_DT_INT64
#define U8 SMELT_DT_UINT8
#define U16 SMELT_DT_UINT16
#define BOOL SMELT_DT_BOOL

typedef enum in_kind { IN_RANDOM, IN_CONST, IN_RUNTIME } in_kind;

typedef struct in_spec {
    smelt_dtype dt;
    int rank;
    int64_t dims[SMELT_MAX_RANK];
    in_kind kind;       /* IN_RANDOM: pseudo-random run-time data */
    const double *vals; /* contents of the other kinds */
} in_spec;

typedef struct attr_spec {
    const char *name;
    gr_attr_type type; /* INT, INTS or TENSOR */
    int64_t v;
    int n;
    const int64_t *ints;
    smelt_tensor *t;
} attr_spec;

typedef struct node_case {
    const char *what;
    op_kind op;
    int64_t opset;
    const char *outputs; /* per output 'y' present or '-' omitted */
    int n_in, n_attrs;
    in_spec in[MAX_IN];
    attr_spec attrs[3];
} node_case;

static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

static smelt_tensor *make_tensor(const in_spec *s, uint32_t *state)
{
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    t->dtype = s->dt;
    t->rank = s->rank;
    memcpy(t->dims, s->dims, sizeof t->dims);
    int64_t n = op_numel(t);
    t->data = smelt_calloc(n ? (size_t)n : 1, smelt_dtype_size(t->dtype));
    for (int64_t i = 0; i < n; i++) {
        double u = (double)next_random(state) / (double)(1u << 24); /* [0, 1) */
        double v = s->vals                     ? s->vals[i]
                   : op_dtype_is_float(s->dt) ? 8.0 * u - 4.0
                                              : floor(200.0 * u);
        if (op_dtype_is_float(t->dtype)) op_set_f64(t, i, v);
        else op_set_i64(t, i, (int64_t)v);
    }
    return t;
}

static gr_node *build_node(smelt_ctx *ctx, gr_graph *g, const node_case *c, smelt_tensor **in)
{
    const char *outs = c->outputs;
    int n_out = (int)strlen(outs);
    gr_node *node = gr_node_new(g, "n0", op_get(c->op)->name, c->op, c->n_in, n_out);
    uint32_t state = 4242;
    for (int i = 0; i < c->n_in; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        node->inputs[i] = gr_value_new(g, name);
        in[i] = make_tensor(&c->in[i], &state);
        if (c->in[i].kind == IN_CONST) { /* the graph owns it from now on */
            CHECK(gr_value_set_constant(ctx, g, node->inputs[i], in[i]) == SMELT_OK);
            in[i] = node->inputs[i]->constant;
        }
    }
    for (int o = 0; o < n_out; o++) {
        if (outs[o] == '-') continue;
        char name[16];
        snprintf(name, sizeof name, "out%d", o);
        gr_value *v = gr_value_new(g, name);
        v->producer = node;
        node->outputs[o] = v;
    }
    gr_attr *attrs = smelt_arena_alloc(&g->arena, sizeof(gr_attr) * 3);
    memset(attrs, 0, sizeof(gr_attr) * 3);
    for (int i = 0; i < c->n_attrs; i++) {
        attrs[i].name = c->attrs[i].name;
        attrs[i].type = c->attrs[i].type;
        attrs[i].i = c->attrs[i].v;
        attrs[i].n = c->attrs[i].n;
        attrs[i].ints = (int64_t *)c->attrs[i].ints;
        attrs[i].t = c->attrs[i].t;
    }
    node->attrs = attrs;
    node->n_attrs = c->n_attrs;
    return node;
}

/* Data movement is exact; Range's floats are computed alike on both paths. */
static bool same_value(const smelt_tensor *ref, const smelt_tensor *te, int64_t i)
{
    if (!op_dtype_is_float(ref->dtype)) return op_get_i64(ref, i) == op_get_i64(te, i);
    return op_get_f64(ref, i) == op_get_f64(te, i);
}

static void compare_output(const node_case *c, int o, const smelt_tensor *ref,
                           const smelt_tensor *te)
{
    bool same_type = ref->dtype == te->dtype && ref->rank == te->rank &&
                     op_numel(ref) == op_numel(te);
    if (!same_type) fprintf(stderr, "%s: output %d: type differs\n", c->what, o);
    CHECK(same_type);
    int64_t bad = 0, n = same_type ? op_numel(ref) : 0;
    for (int64_t i = 0; i < n; i++) {
        if (same_value(ref, te, i)) continue;
        if (bad++ == 0)
            fprintf(stderr, "%s: output %d, element %lld: te %.17g, reference %.17g\n", c->what,
                    o, (long long)i, op_get_f64(te, i), op_get_f64(ref, i));
    }
    CHECK(bad == 0);
}

static void run_case(const node_case *c)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = c->opset;
    smelt_tensor *in[MAX_IN], ref[MAX_OUT], te[MAX_OUT];
    gr_node *node = build_node(ctx, g, c, in);
    memset(ref, 0, sizeof ref);
    memset(te, 0, sizeof te);
    const op_def *def = op_get(c->op)->def;
    smelt_status s = def->import ? def->import(ctx, g, node) : SMELT_OK;
    /* import may turn attributes into constant inputs: bind every input anew */
    const smelt_tensor *inp[MAX_IN + 1] = {0};
    for (int i = 0; i < node->n_inputs && i <= MAX_IN; i++) {
        const gr_value *v = node->inputs[i];
        inp[i] = !v ? NULL : v->constant ? v->constant : i < c->n_in ? in[i] : NULL;
    }
    if (s == SMELT_OK) s = exec_node_te(ctx, node, inp, te);
    if (s == SMELT_OK) s = exec_node(ctx, node, inp, ref);
    if (s != SMELT_OK) fprintf(stderr, "%s: %s\n", c->what, smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK);
    for (int o = 0; s == SMELT_OK && o < node->n_outputs; o++)
        if (node->outputs[o]) compare_output(c, o, &ref[o], &te[o]);
    for (int o = 0; o < node->n_outputs; o++) {
        smelt_free(te[o].data);
        smelt_free(ref[o].data);
    }
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i].kind != IN_CONST) smelt_tensor_free(in[i]);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

#define ARR(...) ((const double[]){__VA_ARGS__})
#define IARR(...) ((const int64_t[]){__VA_ARGS__})
#define CNT(...) (int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double))
/* a 1-D int64 parameter with the given contents, constant or loaded at run time */
#define PC(...) {I64, 1, {CNT(__VA_ARGS__)}, IN_CONST, ARR(__VA_ARGS__)}
#define PR(...) {I64, 1, {CNT(__VA_ARGS__)}, IN_RUNTIME, ARR(__VA_ARGS__)}
#define SC(dt, v) {dt, 0, {0}, IN_CONST, ARR(v)}
#define SR(dt, v) {dt, 0, {0}, IN_RUNTIME, ARR(v)}
#define X(dt, r, ...) {dt, r, {__VA_ARGS__}, IN_RANDOM, NULL}
#define AI(n, v) {n, GR_ATTR_INT, v, 0, NULL, NULL}
#define AINTS(n, k, ...) {n, GR_ATTR_INTS, 0, k, IARR(__VA_ARGS__), NULL}
#define AT(n, t) {n, GR_ATTR_TENSOR, 0, 0, NULL, t}

#define X234(dt) X(dt, 3, 2, 3, 4)
static const node_case k_reshape_cases[] = {
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
     {X(F64, 3, 1, 1, 1), {I64, 1, {0}, IN_CONST, NULL}}, {{0}}},
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

static const node_case k_move_cases[] = {
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

static const node_case k_other_cases[] = {
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
    {"shape start/end", OP_SHAPE, 15, "y", 1, 2,
     {X(F32, 4, 2, 3, 4, 5)}, {AI("start", 1), AI("end", -1)}},
    {"shape whole, bool", OP_SHAPE, 15, "y", 1, 0, {X234(BOOL)}, {{0}}},
    {"shape empty range", OP_SHAPE, 15, "y", 1, 1, {X234(F32)}, {AI("start", 5)}},
    {"size", OP_SIZE, 13, "y", 1, 0, {X(F32, 4, 2, 3, 4, 5)}, {{0}}},
    {"size of a scalar", OP_SIZE, 13, "y", 1, 0, {SR(F32, 3)}, {{0}}},
    {"dropout with mask", OP_DROPOUT, 13, "yy", 1, 0, {X234(F32)}, {{0}}},
    {"dropout zero ratio in training", OP_DROPOUT, 13, "yy", 3, 0,
     {X234(F16), SR(F16, 0), SR(BOOL, 1)}, {{0}}},
    {"dropout opset 7: mask of the input dtype", OP_DROPOUT, 7, "yy", 1, 0, {X234(F64)}, {{0}}},
};

/* A training Dropout whose ratio is not a constant cannot be compiled. */
static void test_dropout_training_runtime_ratio(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = 13;
    node_case c = {"", OP_DROPOUT, 13, "y", 3, 0, {X234(F32), SR(F32, 0), SC(BOOL, 1)}, {{0}}};
    smelt_tensor *in[MAX_IN], te;
    gr_node *node = build_node(ctx, g, &c, in);
    CHECK(op_get(c.op)->def->import(ctx, g, node) == SMELT_OK);
    const smelt_tensor *inp[3] = {in[0], in[1], in[2]};
    CHECK(exec_node_te(ctx, node, inp, &te) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "must be a constant to compile");
    smelt_tensor_free(in[0]);
    smelt_tensor_free(in[1]);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

int main(void)
{
    for (size_t i = 0; i < sizeof k_reshape_cases / sizeof k_reshape_cases[0]; i++)
        run_case(&k_reshape_cases[i]);
    for (size_t i = 0; i < sizeof k_move_cases / sizeof k_move_cases[0]; i++)
        run_case(&k_move_cases[i]);
    for (size_t i = 0; i < sizeof k_other_cases / sizeof k_other_cases[0]; i++)
        run_case(&k_other_cases[i]);
    test_dropout_training_runtime_ratio();
    TEST_MAIN_END();
}
