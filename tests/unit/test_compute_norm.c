/* Compute definitions of the norm family checked against the reference
 * kernels: each case runs one node through exec_node (reference) and
 * exec_node_te (tensor expressions, interpreted) on pseudo-random inputs and
 * compares every output.  Covers what the ONNX node tests leave out: other
 * dtypes, the opset < 13 softmax form, LayerNorm's Mean/InvStdDev outputs,
 * BatchNorm's spatial=0 form. */
#include <stdlib.h>

#include "exec/exec.h"
#include "ops/op.h"
#include "test_util.h"

#define MAX_IO 6

/* Strong references: registry.c only declares the op_defs weak. */
extern const op_def op_def_BATCH_NORMALIZATION;
extern const op_def op_def_INSTANCE_NORMALIZATION;
extern const op_def op_def_LAYER_NORMALIZATION;
extern const op_def op_def_SOFTMAX;
extern const op_def op_def_LOG_SOFTMAX;
const op_def *const test_link_anchor[] = {&op_def_BATCH_NORMALIZATION,
                                          &op_def_INSTANCE_NORMALIZATION,
                                          &op_def_LAYER_NORMALIZATION, &op_def_SOFTMAX,
                                          &op_def_LOG_SOFTMAX};

#define F16 SMELT_DT_FLOAT16
#define BF16 SMELT_DT_BFLOAT16
#define F32 SMELT_DT_FLOAT32
#define F64 SMELT_DT_FLOAT64

typedef struct in_spec {
    smelt_dtype dt; /* SMELT_DT_UNDEFINED: an omitted optional input */
    int rank;
    int64_t dims[SMELT_MAX_RANK];
    bool positive; /* values in (0.1, 2.1), e.g. a variance */
} in_spec;

typedef struct attr_spec {
    const char *name;
    gr_attr_type type; /* GR_ATTR_INT or GR_ATTR_FLOAT */
    double v;
} attr_spec;

typedef struct node_case {
    const char *what;
    op_kind op;
    int64_t opset;
    int n_in, n_out, n_attrs;
    in_spec in[MAX_IO];
    attr_spec attrs[4];
} node_case;

static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

static void fill_random(smelt_tensor *t, bool positive, uint32_t *state)
{
    int64_t n = op_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double u = (double)next_random(state) / (double)(1u << 24); /* [0, 1) */
        op_set_f64(t, i, positive ? 0.1 + 2.0 * u : 4.0 * u - 2.0);
    }
}

static gr_node *build_node(gr_graph *g, const node_case *c)
{
    gr_node *node = gr_node_new(g, "n0", op_get(c->op)->name, c->op, c->n_in, c->n_out);
    for (int i = 0; i < c->n_in; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        if (c->in[i].dt != SMELT_DT_UNDEFINED) node->inputs[i] = gr_value_new(g, name);
    }
    for (int i = 0; i < c->n_out; i++) {
        char name[16];
        snprintf(name, sizeof name, "out%d", i);
        gr_value *v = gr_value_new(g, name);
        v->producer = node;
        v->producer_output = i;
        node->outputs[i] = v;
    }
    gr_attr *attrs = smelt_arena_alloc(&g->arena, sizeof(gr_attr) * 4);
    memset(attrs, 0, sizeof(gr_attr) * 4);
    for (int i = 0; i < c->n_attrs; i++) {
        attrs[i].name = c->attrs[i].name;
        attrs[i].type = c->attrs[i].type;
        attrs[i].i = (int64_t)c->attrs[i].v;
        attrs[i].f = (float)c->attrs[i].v;
    }
    node->attrs = attrs;
    node->n_attrs = c->n_attrs;
    return node;
}

static double tolerance(smelt_dtype dt)
{
    return dt == BF16 ? 2e-2 : dt == F16 ? 4e-3 : dt == F64 ? 1e-9 : 1e-4;
}

static bool near(double got, double want, smelt_dtype dt)
{
    if (isnan(want)) return isnan(got);
    return fabs(got - want) <= tolerance(dt) * (1.0 + fabs(want));
}

static void compare_outputs(const node_case *c, const smelt_tensor *ref, const smelt_tensor *te)
{
    for (int o = 0; o < c->n_out; o++) {
        bool same_type = ref[o].dtype == te[o].dtype && ref[o].rank == te[o].rank &&
                         op_numel(&ref[o]) == op_numel(&te[o]);
        if (!same_type) fprintf(stderr, "%s: output %d type differs\n", c->what, o);
        CHECK(same_type);
        int64_t bad = 0, n = same_type ? op_numel(&ref[o]) : 0;
        for (int64_t i = 0; i < n; i++) {
            double want = op_get_f64(&ref[o], i), got = op_get_f64(&te[o], i);
            if (near(got, want, ref[o].dtype)) continue;
            if (bad++ == 0)
                fprintf(stderr, "%s: output %d element %lld: te %.9g, reference %.9g\n", c->what,
                        o, (long long)i, got, want);
        }
        CHECK(bad == 0);
    }
}

static void run_case(const node_case *c)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = c->opset;
    gr_node *node = build_node(g, c);
    smelt_tensor in[MAX_IO], ref[MAX_IO], te[MAX_IO];
    const smelt_tensor *inp[MAX_IO];
    uint32_t state = 12345;
    memset(in, 0, sizeof in);
    memset(ref, 0, sizeof ref);
    memset(te, 0, sizeof te);
    for (int i = 0; i < c->n_in; i++) {
        inp[i] = NULL;
        if (c->in[i].dt == SMELT_DT_UNDEFINED) continue;
        in[i].dtype = c->in[i].dt;
        in[i].rank = c->in[i].rank;
        memcpy(in[i].dims, c->in[i].dims, sizeof in[i].dims);
        int64_t n = op_numel(&in[i]);
        in[i].data = calloc(n ? (size_t)n : 1, smelt_dtype_size(in[i].dtype));
        fill_random(&in[i], c->in[i].positive, &state);
        inp[i] = &in[i];
    }
    const op_def *def = op_get(c->op)->def;
    smelt_status s = def->import ? def->import(ctx, g, node) : SMELT_OK;
    if (s == SMELT_OK) s = exec_node(ctx, node, inp, ref);
    if (s == SMELT_OK) s = exec_node_te(ctx, node, inp, te);
    if (s != SMELT_OK) fprintf(stderr, "%s: %s\n", c->what, smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK);
    if (s == SMELT_OK) compare_outputs(c, ref, te);
    for (int i = 0; i < MAX_IO; i++) {
        free(in[i].data);
        smelt_free(ref[i].data);
        smelt_free(te[i].data);
    }
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

#define X234(dt) {dt, 3, {2, 3, 4}, false}
#define AXIS(v) {"axis", GR_ATTR_INT, v}

static const node_case k_softmax_cases[] = {
    {"softmax axis 0", OP_SOFTMAX, 13, 1, 1, 1, {X234(F32)}, {AXIS(0)}},
    {"softmax axis 1", OP_SOFTMAX, 13, 1, 1, 1, {X234(F32)}, {AXIS(1)}},
    {"softmax default axis", OP_SOFTMAX, 13, 1, 1, 0, {X234(F32)}, {{0}}},
    {"softmax axis -2 f64", OP_SOFTMAX, 13, 1, 1, 1, {X234(F64)}, {AXIS(-2)}},
    {"softmax f16", OP_SOFTMAX, 13, 1, 1, 0, {X234(F16)}, {{0}}},
    {"softmax bf16", OP_SOFTMAX, 13, 1, 1, 0, {X234(BF16)}, {{0}}},
    {"softmax 1-D", OP_SOFTMAX, 13, 1, 1, 0, {{F32, 1, {7}, false}}, {{0}}},
    {"softmax 2-D form axis 0", OP_SOFTMAX, 11, 1, 1, 1, {X234(F32)}, {AXIS(0)}},
    {"softmax 2-D form default", OP_SOFTMAX, 11, 1, 1, 0, {X234(F32)}, {{0}}},
    {"softmax 2-D form axis 2", OP_SOFTMAX, 11, 1, 1, 1, {X234(F32)}, {AXIS(2)}},
    {"softmax 2-D form axis = rank", OP_SOFTMAX, 11, 1, 1, 1, {X234(F32)}, {AXIS(3)}},
    {"softmax 2-D form axis -1", OP_SOFTMAX, 1, 1, 1, 1, {X234(F32)}, {AXIS(-1)}},
    {"softmax empty", OP_SOFTMAX, 13, 1, 1, 0, {{F32, 2, {0, 3}, false}}, {{0}}},
    {"logsoftmax axis 0", OP_LOG_SOFTMAX, 13, 1, 1, 1, {X234(F32)}, {AXIS(0)}},
    {"logsoftmax default f16", OP_LOG_SOFTMAX, 13, 1, 1, 0, {X234(F16)}, {{0}}},
    {"logsoftmax f64", OP_LOG_SOFTMAX, 13, 1, 1, 1, {X234(F64)}, {AXIS(1)}},
    {"logsoftmax 2-D form", OP_LOG_SOFTMAX, 9, 1, 1, 1, {X234(F32)}, {AXIS(1)}},
};

#define EPS(v) {"epsilon", GR_ATTR_FLOAT, v}
#define STASH(v) {"stash_type", GR_ATTR_INT, v}
#define NONE {SMELT_DT_UNDEFINED, 0, {0}, false}

static const node_case k_layernorm_cases[] = {
    {"layernorm default", OP_LAYER_NORMALIZATION, 17, 3, 1, 0,
     {X234(F32), {F32, 1, {4}, false}, {F32, 1, {4}, false}}, {{0}}},
    {"layernorm axis 1, all outputs", OP_LAYER_NORMALIZATION, 17, 3, 3, 2,
     {X234(F32), {F32, 2, {3, 4}, false}, {F32, 2, {3, 4}, false}}, {AXIS(1), EPS(0.1)}},
    {"layernorm axis 0, no bias", OP_LAYER_NORMALIZATION, 17, 2, 3, 1,
     {X234(F32), {F32, 3, {2, 3, 4}, false}}, {AXIS(0)}},
    {"layernorm broadcast scale", OP_LAYER_NORMALIZATION, 17, 3, 1, 1,
     {X234(F32), {F32, 2, {1, 4}, false}, {F32, 1, {1}, false}}, {AXIS(-2)}},
    {"layernorm f16, float32 stash", OP_LAYER_NORMALIZATION, 17, 3, 3, 0,
     {X234(F16), {F16, 1, {4}, false}, {F16, 1, {4}, false}}, {{0}}},
    {"layernorm bf16", OP_LAYER_NORMALIZATION, 17, 3, 1, 0,
     {X234(BF16), {BF16, 1, {4}, false}, {BF16, 1, {4}, false}}, {{0}}},
    {"layernorm f64", OP_LAYER_NORMALIZATION, 17, 3, 3, 1,
     {X234(F64), {F64, 1, {4}, false}, {F64, 1, {4}, false}}, {STASH(11)}},
    {"layernorm float64 stash", OP_LAYER_NORMALIZATION, 17, 3, 3, 1,
     {X234(F32), {F32, 1, {4}, false}, {F32, 1, {4}, false}}, {STASH(11)}},
    {"layernorm bias omitted in the middle", OP_LAYER_NORMALIZATION, 17, 3, 2, 0,
     {X234(F32), {F32, 1, {4}, false}, NONE}, {{0}}},
};

#define C3(dt, pos) {dt, 1, {3}, pos}

static const node_case k_instance_batch_cases[] = {
    {"instancenorm", OP_INSTANCE_NORMALIZATION, 6, 3, 1, 1,
     {{F32, 4, {2, 3, 4, 5}, false}, C3(F32, false), C3(F32, false)}, {EPS(0.01)}},
    {"instancenorm 3-D f16", OP_INSTANCE_NORMALIZATION, 6, 3, 1, 0,
     {X234(F16), C3(F16, false), C3(F16, false)}, {{0}}},
    {"instancenorm f64", OP_INSTANCE_NORMALIZATION, 6, 3, 1, 0,
     {X234(F64), C3(F64, false), C3(F64, false)}, {{0}}},
    {"batchnorm", OP_BATCH_NORMALIZATION, 15, 5, 1, 1,
     {{F32, 4, {2, 3, 4, 5}, false}, C3(F32, false), C3(F32, false), C3(F32, false),
      C3(F32, true)},
     {EPS(0.01)}},
    {"batchnorm rank 2", OP_BATCH_NORMALIZATION, 15, 5, 1, 0,
     {{F32, 2, {4, 3}, false}, C3(F32, false), C3(F32, false), C3(F32, false), C3(F32, true)},
     {{0}}},
    {"batchnorm f16 x, float32 parameters", OP_BATCH_NORMALIZATION, 15, 5, 1, 0,
     {X234(F16), C3(F32, false), C3(F32, false), C3(F32, false), C3(F32, true)}, {{0}}},
    {"batchnorm f64", OP_BATCH_NORMALIZATION, 15, 5, 1, 0,
     {X234(F64), C3(F64, false), C3(F64, false), C3(F64, false), C3(F64, true)}, {{0}}},
    {"batchnorm spatial=0", OP_BATCH_NORMALIZATION, 7, 5, 1, 1,
     {X234(F32), {F32, 2, {3, 4}, false}, {F32, 2, {3, 4}, false}, {F32, 2, {3, 4}, false},
      {F32, 2, {3, 4}, true}},
     {{"spatial", GR_ATTR_INT, 0}}},
    {"batchnorm training, running stats", OP_BATCH_NORMALIZATION, 15, 5, 3, 2,
     {{F32, 4, {2, 3, 4, 5}, false}, C3(F32, false), C3(F32, false), C3(F32, false),
      C3(F32, true)},
     {{"training_mode", GR_ATTR_INT, 1}, {"momentum", GR_ATTR_FLOAT, 0.8}}},
    {"batchnorm spatial=0, per-channel parameters", OP_BATCH_NORMALIZATION, 7, 5, 1, 1,
     {X234(F32), C3(F32, false), C3(F32, false), C3(F32, false), C3(F32, true)},
     {{"spatial", GR_ATTR_INT, 0}}},
};

static void run_cases(const node_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) run_case(&cases[i]);
}

int main(void)
{
    run_cases(k_softmax_cases, sizeof k_softmax_cases / sizeof k_softmax_cases[0]);
    run_cases(k_layernorm_cases, sizeof k_layernorm_cases / sizeof k_layernorm_cases[0]);
    run_cases(k_instance_batch_cases,
              sizeof k_instance_batch_cases / sizeof k_instance_batch_cases[0]);
    TEST_MAIN_END();
}
