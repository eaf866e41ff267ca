/* Compute definitions of the reduce family (Reduce*, ArgMax/ArgMin, CumSum)
 * checked against the reference kernels: each case runs one node through
 * exec_node (reference) and exec_node_te (tensor expressions, interpreted)
 * and compares the outputs.  Covers what the ONNX node tests leave out:
 * constant axes (the node tests mostly load them at run time), integer and
 * 16-bit float dtypes, empty reductions, infinities in LogSumExp, and
 * run-time axes whose output shape allows several readings. */
#include <stdlib.h>

#include "exec/exec.h"
#include "ops/op.h"
#include "test_util.h"

#define MAX_IN 3

/* Strong references: registry.c only declares the op_defs weak. */
extern const op_def op_def_REDUCE_MEAN, op_def_REDUCE_SUM, op_def_REDUCE_MAX, op_def_REDUCE_MIN,
    op_def_REDUCE_PROD, op_def_REDUCE_L1, op_def_REDUCE_L2, op_def_REDUCE_SUM_SQUARE,
    op_def_REDUCE_LOG_SUM, op_def_REDUCE_LOG_SUM_EXP, op_def_ARG_MAX, op_def_ARG_MIN,
    op_def_CUM_SUM;
const op_def *const test_link_anchor[] = {
    &op_def_REDUCE_MEAN,    &op_def_REDUCE_SUM,         &op_def_REDUCE_MAX,
    &op_def_REDUCE_MIN,     &op_def_REDUCE_PROD,        &op_def_REDUCE_L1,
    &op_def_REDUCE_L2,      &op_def_REDUCE_SUM_SQUARE,  &op_def_REDUCE_LOG_SUM,
    &op_def_REDUCE_LOG_SUM_EXP, &op_def_ARG_MAX,        &op_def_ARG_MIN,
    &op_def_CUM_SUM};

#define F16 SMELT_DT_FLOAT16
#define BF16 SMELT_DT_BFLOAT16
#define F32 SMELT_DT_FLOAT32
#define F64 SMELT_DT_FLOAT64
#define I8 SMELT_DT_INT8
#define I16 SMELT_DT_INT16
#define I32 SMELT_DT_INT32
#define I64 SMELT_DT_INT64
#define U8 SMELT_DT_UINT8
#define U32 SMELT_DT_UINT32
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
    gr_attr_type type; /* INT or INTS */
    int64_t v;
    int n;
    const int64_t *ints;
} attr_spec;

typedef struct node_case {
    const char *what;
    op_kind op;
    int64_t opset;
    int n_in, n_attrs;
    in_spec in[MAX_IN];
    attr_spec attrs[4];
} node_case;

static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

/* Small integers for integer dtypes (so sums stay exact), [-4, 4) for floats. */
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
        bool is_unsigned = s->dt == U8 || s->dt == U32;
        double v = s->vals                     ? s->vals[i]
                   : op_dtype_is_float(s->dt) ? 8.0 * u - 4.0
                   : s->dt == BOOL            ? (u < 0.5)
                                              : floor(7.0 * u) - (is_unsigned ? 0 : 3);
        if (op_dtype_is_float(t->dtype)) op_set_f64(t, i, v);
        else op_set_i64(t, i, (int64_t)v);
    }
    return t;
}

static gr_node *build_node(smelt_ctx *ctx, gr_graph *g, const node_case *c, smelt_tensor **in)
{
    gr_node *node = gr_node_new(g, "n0", op_get(c->op)->name, c->op, c->n_in, 1);
    uint32_t state = 777;
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
    gr_value *v = gr_value_new(g, "out0");
    v->producer = node;
    node->outputs[0] = v;
    gr_attr *attrs = smelt_arena_alloc(&g->arena, sizeof(gr_attr) * 4);
    memset(attrs, 0, sizeof(gr_attr) * 4);
    for (int i = 0; i < c->n_attrs; i++) {
        attrs[i].name = c->attrs[i].name;
        attrs[i].type = c->attrs[i].type;
        attrs[i].i = c->attrs[i].v;
        attrs[i].n = c->attrs[i].n;
        attrs[i].ints = (int64_t *)c->attrs[i].ints;
    }
    node->attrs = attrs;
    node->n_attrs = c->n_attrs;
    return node;
}

static bool same_value(const smelt_tensor *ref, const smelt_tensor *te, int64_t i)
{
    if (!op_dtype_is_float(ref->dtype)) return op_get_i64(ref, i) == op_get_i64(te, i);
    double want = op_get_f64(ref, i), got = op_get_f64(te, i);
    if (got == want || (isnan(got) && isnan(want))) return true; /* infinities too */
    double tol = ref->dtype == F16 || ref->dtype == BF16 ? 8e-3 : ref->dtype == F64 ? 1e-12 : 1e-5;
    return fabs(got - want) <= tol * (1.0 + fabs(want));
}

static void compare_output(const node_case *c, const smelt_tensor *ref, const smelt_tensor *te)
{
    bool same_type = ref->dtype == te->dtype && ref->rank == te->rank &&
                     op_numel(ref) == op_numel(te);
    if (!same_type) fprintf(stderr, "%s: output type differs\n", c->what);
    CHECK(same_type);
    int64_t bad = 0, n = same_type ? op_numel(ref) : 0;
    for (int64_t i = 0; i < n; i++) {
        if (same_value(ref, te, i)) continue;
        if (bad++ == 0)
            fprintf(stderr, "%s: element %lld: te %.9g, reference %.9g\n", c->what,
                    (long long)i, op_get_f64(te, i), op_get_f64(ref, i));
    }
    CHECK(bad == 0);
}

static void run_case(const node_case *c)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = c->opset;
    smelt_tensor *in[MAX_IN], ref, te;
    gr_node *node = build_node(ctx, g, c, in);
    memset(&ref, 0, sizeof ref);
    memset(&te, 0, sizeof te);
    const op_def *def = op_get(c->op)->def;
    smelt_status s = def->import ? def->import(ctx, g, node) : SMELT_OK;
    /* import may turn attributes into constant inputs: bind every input anew */
    const smelt_tensor *inp[MAX_IN + 1] = {0};
    for (int i = 0; i < node->n_inputs && i <= MAX_IN; i++) {
        const gr_value *v = node->inputs[i];
        inp[i] = !v ? NULL : v->constant ? v->constant : i < c->n_in ? in[i] : NULL;
    }
    if (s == SMELT_OK) s = exec_node_te(ctx, node, inp, &te);
    if (s == SMELT_OK) s = exec_node(ctx, node, inp, &ref);
    if (s != SMELT_OK) fprintf(stderr, "%s: %s\n", c->what, smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK);
    if (s == SMELT_OK) compare_output(c, &ref, &te);
    smelt_free(te.data);
    smelt_free(ref.data);
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
#define P_EMPTY {I64, 1, {0}, IN_CONST, NULL}
#define SC(v) {I64, 0, {0}, IN_CONST, ARR(v)}
#define SR(v) {I64, 0, {0}, IN_RUNTIME, ARR(v)}
#define X(dt, r, ...) {dt, r, {__VA_ARGS__}, IN_RANDOM, NULL}
#define XV(dt, r, d0, d1, ...) {dt, r, {d0, d1}, IN_RUNTIME, ARR(__VA_ARGS__)}
#define AI(n, v) {n, GR_ATTR_INT, v, 0, NULL}
#define AINTS(n, k, ...) {n, GR_ATTR_INTS, 0, k, IARR(__VA_ARGS__)}
#define KEEP0 AI("keepdims", 0)

static const node_case k_reduce_cases[] = {
    {"sum f16, const axes", OP_REDUCE_SUM, 18, 2, 0, {X(F16, 3, 4, 5, 6), PC(0, 2)}, {{0}}},
    {"sum int8 wraps", OP_REDUCE_SUM, 18, 2, 1,
     {XV(I8, 2, 2, 3, 100, 100, 27, -128, -128, 5), PC(1)}, {KEEP0}},
    {"sum u32, all axes, no axes input", OP_REDUCE_SUM, 18, 1, 0, {X(U32, 3, 2, 3, 4)}, {{0}}},
    {"sum run-time axes, keepdims", OP_REDUCE_SUM, 13, 2, 0, {X(F32, 3, 3, 2, 4), PR(-1, 0)},
     {{0}}},
    {"sum run-time axes, keepdims=0, [3,2,2] axis 2", OP_REDUCE_SUM, 13, 2, 1,
     {X(F32, 3, 3, 2, 2), PR(2)}, {KEEP0}},
    {"sum run-time axes, keepdims=0, [3,2,2] axis -2", OP_REDUCE_SUM, 13, 2, 1,
     {X(F32, 3, 3, 2, 2), PR(-2)}, {KEEP0}},
    {"sum run-time axes, keepdims=0, three readings", OP_REDUCE_SUM, 13, 2, 1,
     {X(I32, 3, 2, 2, 2), PR(2, 0)}, {KEEP0}},
    {"sum run-time axes over size-1 axes", OP_REDUCE_SUM, 13, 2, 1,
     {X(F32, 4, 1, 3, 1, 3), PR(0, 3)}, {KEEP0}},
    {"sum empty axes, noop", OP_REDUCE_SUM, 13, 2, 1, {X(F32, 2, 2, 3), P_EMPTY},
     {AI("noop_with_empty_axes", 1)}},
    {"sum empty axes, no noop: all", OP_REDUCE_SUM, 13, 2, 1, {X(F32, 2, 2, 3), P_EMPTY},
     {KEEP0}},
    {"sum of an empty axis", OP_REDUCE_SUM, 18, 2, 0, {X(F32, 3, 2, 0, 3), PC(1)}, {{0}}},
    {"sum of a scalar", OP_REDUCE_SUM, 18, 1, 0, {{F64, 0, {0}, IN_RUNTIME, ARR(2.5)}}, {{0}}},
    {"mean int8 does not wrap before dividing", OP_REDUCE_MEAN, 18, 2, 1,
     {XV(I8, 2, 2, 3, 100, 100, 27, -128, -128, 5), PC(1)}, {KEEP0}},
    {"mean u8", OP_REDUCE_MEAN, 18, 2, 0, {XV(U8, 2, 2, 2, 255, 254, 1, 2), PC(0)}, {{0}}},
    {"mean bf16, axes attribute (opset 13)", OP_REDUCE_MEAN, 13, 1, 1, {X(BF16, 3, 3, 4, 5)},
     {AINTS("axes", 2, -1, 1)}},
    {"max f16, run-time axes", OP_REDUCE_MAX, 18, 2, 0, {X(F16, 3, 3, 4, 5), PR(1)}, {{0}}},
    {"max int16, axes attribute", OP_REDUCE_MAX, 13, 1, 2, {X(I16, 2, 5, 4)},
     {AINTS("axes", 1, 0), KEEP0}},
    {"max of an empty axis", OP_REDUCE_MAX, 18, 2, 0, {X(F32, 3, 2, 0, 3), PC(1)}, {{0}}},
    {"min u8", OP_REDUCE_MIN, 18, 2, 0, {X(U8, 2, 6, 5), PC(-1)}, {{0}}},
    {"min of an empty axis, int32", OP_REDUCE_MIN, 18, 2, 0, {X(I32, 2, 0, 3), PC(0)}, {{0}}},
    {"prod int64, all axes", OP_REDUCE_PROD, 18, 1, 1, {X(I64, 2, 3, 4)}, {KEEP0}},
    {"prod f64, empty axis", OP_REDUCE_PROD, 18, 2, 0, {X(F64, 2, 0, 3), PC(0)}, {{0}}},
    {"l1 int32 of negatives", OP_REDUCE_L1, 18, 2, 0, {X(I32, 3, 2, 3, 4), PC(0, 2)}, {{0}}},
    {"l2 int32 goes through float64", OP_REDUCE_L2, 18, 2, 0,
     {XV(I32, 2, 2, 2, 3, 4, 1, 1), PC(1)}, {{0}}},
    {"l2 f16", OP_REDUCE_L2, 18, 2, 1, {X(F16, 3, 2, 7, 3), PC(1)}, {KEEP0}},
    {"sum square i16", OP_REDUCE_SUM_SQUARE, 18, 2, 0, {X(I16, 3, 2, 3, 4), PC(2)}, {{0}}},
    {"sum square f64, axes attribute", OP_REDUCE_SUM_SQUARE, 13, 1, 1, {X(F64, 3, 2, 3, 4)},
     {AINTS("axes", 2, 0, 2)}},
    {"log sum f32", OP_REDUCE_LOG_SUM, 18, 2, 0,
     {XV(F32, 2, 2, 3, 1, 2, 3, 0.5, 0.25, 4), PC(1)}, {{0}}},
    {"log sum int32", OP_REDUCE_LOG_SUM, 18, 2, 0, {XV(I32, 2, 2, 2, 3, 4, 9, 1), PC(0)},
     {{0}}},
    {"log sum exp f32", OP_REDUCE_LOG_SUM_EXP, 18, 2, 0, {X(F32, 3, 3, 4, 5), PC(0, -1)}, {{0}}},
    {"log sum exp with infinities", OP_REDUCE_LOG_SUM_EXP, 18, 2, 0,
     {XV(F32, 2, 3, 2, -INFINITY, -INFINITY, 1, INFINITY, 80, 90), PC(1)}, {{0}}},
    {"log sum exp of an empty axis", OP_REDUCE_LOG_SUM_EXP, 18, 2, 0, {X(F32, 2, 3, 0), PC(1)},
     {{0}}},
    {"log sum exp f16, run-time axes, keepdims=0", OP_REDUCE_LOG_SUM_EXP, 18, 2, 1,
     {X(F16, 3, 3, 2, 2), PR(1)}, {KEEP0}},
    {"log sum exp int8", OP_REDUCE_LOG_SUM_EXP, 18, 2, 0, {X(I8, 2, 3, 4), PC(1)}, {{0}}},
};

#define TIES XV(I32, 2, 3, 4, 1, 3, 3, 0, 2, 2, 2, 2, -1, 5, 5, -1)
static const node_case k_arg_cases[] = {
    {"argmax ties, axis 1", OP_ARG_MAX, 13, 1, 1, {TIES}, {AI("axis", 1)}},
    {"argmax ties, last index, keepdims=0", OP_ARG_MAX, 13, 1, 3, {TIES},
     {AI("axis", -1), AI("select_last_index", 1), KEEP0}},
    {"argmin ties, axis 0", OP_ARG_MIN, 13, 1, 0, {TIES}, {{0}}},
    {"argmin ties, last index", OP_ARG_MIN, 13, 1, 2, {TIES},
     {AI("axis", 1), AI("select_last_index", 1)}},
    {"argmax f16 rank 3", OP_ARG_MAX, 13, 1, 2, {X(F16, 3, 3, 4, 5)},
     {AI("axis", 1), KEEP0}},
    {"argmin bool", OP_ARG_MIN, 13, 1, 1, {X(BOOL, 2, 3, 6)}, {AI("axis", 1)}},
    {"argmax u8, last index", OP_ARG_MAX, 13, 1, 2, {X(U8, 2, 6, 4)},
     {AI("axis", 0), AI("select_last_index", 1)}},
};

static const node_case k_cumsum_cases[] = {
    {"cumsum const axis", OP_CUM_SUM, 14, 2, 0, {X(F32, 3, 2, 3, 4), SC(1)}, {{0}}},
    {"cumsum run-time axis, exclusive", OP_CUM_SUM, 14, 2, 1, {X(F32, 3, 2, 3, 4), SR(-1)},
     {AI("exclusive", 1)}},
    {"cumsum run-time axis 0, reverse", OP_CUM_SUM, 14, 2, 1, {X(F64, 3, 2, 3, 4), SR(0)},
     {AI("reverse", 1)}},
    {"cumsum reverse exclusive int32", OP_CUM_SUM, 14, 2, 2, {X(I32, 2, 3, 5), PC(1)},
     {AI("reverse", 1), AI("exclusive", 1)}},
    {"cumsum f16", OP_CUM_SUM, 14, 2, 0, {X(F16, 1, 40), SR(0)}, {{0}}},
    {"cumsum u32 run-time 1-D axis", OP_CUM_SUM, 14, 2, 0, {X(U32, 2, 4, 3), PR(-2)}, {{0}}},
};

/* Axes known only at run time cannot be compiled when there are too many
 * readings of the output shape; a clean "unsupported" then. */
static void test_too_many_readings(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = 13;
    node_case c = {"", OP_REDUCE_SUM, 13, 2, 1, {X(F32, 8, 2, 2, 2, 2, 2, 2, 2, 2), PR(0, 1, 2, 3)},
                   {KEEP0}};
    smelt_tensor *in[MAX_IN], te;
    gr_node *node = build_node(ctx, g, &c, in);
    CHECK(op_get(c.op)->def->import(ctx, g, node) == SMELT_OK);
    const smelt_tensor *inp[2] = {in[0], in[1]};
    CHECK(exec_node_te(ctx, node, inp, &te) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "must be a constant to compile");
    smelt_tensor_free(in[0]);
    smelt_tensor_free(in[1]);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

int main(void)
{
    for (size_t i = 0; i < sizeof k_reduce_cases / sizeof k_reduce_cases[0]; i++)
        run_case(&k_reduce_cases[i]);
    for (size_t i = 0; i < sizeof k_arg_cases / sizeof k_arg_cases[0]; i++)
        run_case(&k_arg_cases[i]);
    for (size_t i = 0; i < sizeof k_cumsum_cases / sizeof k_cumsum_cases[0]; i++)
        run_case(&k_cumsum_cases[i]);
    test_too_many_readings();
    TEST_MAIN_END();
}
