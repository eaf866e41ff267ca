/* Compute definitions of the linalg family checked against the reference
 * kernels: each case runs one node through exec_node (reference) and
 * exec_node_te (tensor expressions, interpreted) on pseudo-random inputs and
 * compares the output.  Covers what the ONNX node tests leave out: 1-D
 * MatMul operands, batch broadcasting, integer and 16-bit float types, every
 * Gemm C shape, Einsum diagonals, ellipses and implicit outputs. */
#include <stdlib.h>

#include "exec/exec.h"
#include "ops/op.h"
#include "test_util.h"

#define MAX_IO 6

/* Strong references: registry.c only declares the op_defs weak. */
extern const op_def op_def_MATMUL;
extern const op_def op_def_GEMM;
extern const op_def op_def_EINSUM;
const op_def *const test_link_anchor[] = {&op_def_MATMUL, &op_def_GEMM, &op_def_EINSUM};

#define F16 SMELT_DT_FLOAT16
#define BF16 SMELT_DT_BFLOAT16
#define F32 SMELT_DT_FLOAT32
#define F64 SMELT_DT_FLOAT64

typedef struct in_spec {
    smelt_dtype dt; /* SMELT_DT_UNDEFINED: an omitted optional input */
    int rank;
    int64_t dims[SMELT_MAX_RANK];
} in_spec;

typedef struct attr_spec {
    const char *name;
    gr_attr_type type; /* GR_ATTR_INT, GR_ATTR_FLOAT or GR_ATTR_STRING */
    double v;
    const char *s;
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

/* Floats in [-2, 2); integers in [-3, 3] (unsigned: [0, 6]). */
static void fill_random(smelt_tensor *t, uint32_t *state)
{
    int64_t n = op_numel(t);
    bool is_unsigned = t->dtype == SMELT_DT_UINT32 || t->dtype == SMELT_DT_UINT64 ||
                       t->dtype == SMELT_DT_UINT8 || t->dtype == SMELT_DT_UINT16;
    for (int64_t i = 0; i < n; i++) {
        uint32_t r = next_random(state);
        if (op_dtype_is_int(t->dtype))
            op_set_i64(t, i, (int64_t)(r % 7) - (is_unsigned ? 0 : 3));
        else
            op_set_f64(t, i, 4.0 * ((double)r / (double)(1u << 24)) - 2.0);
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
        attrs[i].s = c->attrs[i].s;
        attrs[i].s_len = c->attrs[i].s ? strlen(c->attrs[i].s) : 0;
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
    if (op_dtype_is_int(dt)) return got == want; /* small values: exact in double */
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
        fill_random(&in[i], &state);
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

#define T(dt, r, ...) {dt, r, {__VA_ARGS__}}
#define MATMUL(what, a, b) {what, OP_MATMUL, 13, 2, 1, 0, {a, b}, {{0}}}

static const node_case k_matmul_cases[] = {
    MATMUL("matmul 2-D", T(F32, 2, 3, 4), T(F32, 2, 4, 5)),
    MATMUL("matmul 1-D x 2-D", T(F32, 1, 4), T(F32, 2, 4, 5)),
    MATMUL("matmul 2-D x 1-D", T(F32, 2, 3, 4), T(F32, 1, 4)),
    MATMUL("matmul 1-D x 1-D", T(F32, 1, 4), T(F32, 1, 4)),
    MATMUL("matmul 3-D x 2-D", T(F32, 3, 2, 3, 4), T(F32, 2, 4, 5)),
    MATMUL("matmul 1-D x 3-D", T(F32, 1, 4), T(F32, 3, 2, 4, 5)),
    MATMUL("matmul 3-D x 1-D", T(F32, 3, 2, 3, 4), T(F32, 1, 4)),
    MATMUL("matmul batch broadcast", T(F32, 4, 2, 1, 3, 4), T(F32, 3, 5, 4, 2)),
    MATMUL("matmul batch broadcast 1", T(F32, 3, 1, 3, 4), T(F32, 3, 2, 4, 5)),
    MATMUL("matmul K = 0", T(F32, 2, 3, 0), T(F32, 2, 0, 5)),
    MATMUL("matmul f64", T(F64, 3, 2, 3, 4), T(F64, 2, 4, 5)),
    MATMUL("matmul f16", T(F16, 2, 3, 8), T(F16, 2, 8, 5)),
    MATMUL("matmul bf16", T(BF16, 2, 3, 8), T(BF16, 2, 8, 5)),
    MATMUL("matmul int32", T(SMELT_DT_INT32, 2, 3, 4), T(SMELT_DT_INT32, 2, 4, 5)),
    MATMUL("matmul int64 1-D", T(SMELT_DT_INT64, 1, 4), T(SMELT_DT_INT64, 3, 2, 4, 5)),
    MATMUL("matmul uint32", T(SMELT_DT_UINT32, 2, 3, 4), T(SMELT_DT_UINT32, 2, 4, 5)),
    MATMUL("matmul uint64", T(SMELT_DT_UINT64, 2, 3, 4), T(SMELT_DT_UINT64, 1, 4)),
};

#define TA {"transA", GR_ATTR_INT, 1, NULL}
#define TB {"transB", GR_ATTR_INT, 1, NULL}
#define ALPHA(v) {"alpha", GR_ATTR_FLOAT, v, NULL}
#define BETA(v) {"beta", GR_ATTR_FLOAT, v, NULL}

static const node_case k_gemm_cases[] = {
    {"gemm no C", OP_GEMM, 13, 2, 1, 0, {T(F32, 2, 3, 4), T(F32, 2, 4, 5)}, {{0}}},
    {"gemm alpha, no C", OP_GEMM, 13, 2, 1, 1, {T(F32, 2, 3, 4), T(F32, 2, 4, 5)}, {ALPHA(0.5)}},
    {"gemm transA", OP_GEMM, 13, 3, 1, 1,
     {T(F32, 2, 4, 3), T(F32, 2, 4, 5), T(F32, 2, 3, 5)}, {TA}},
    {"gemm transB", OP_GEMM, 13, 3, 1, 1,
     {T(F32, 2, 3, 4), T(F32, 2, 5, 4), T(F32, 1, 5)}, {TB}},
    {"gemm all attributes", OP_GEMM, 13, 3, 1, 4,
     {T(F32, 2, 4, 3), T(F32, 2, 5, 4), T(F32, 2, 1, 5)}, {TA, TB, ALPHA(0.25), BETA(0.35)}},
    {"gemm scalar C", OP_GEMM, 13, 3, 1, 1,
     {T(F32, 2, 3, 4), T(F32, 2, 4, 5), T(F32, 0, 0)}, {BETA(2)}},
    {"gemm C (1)", OP_GEMM, 13, 3, 1, 0, {T(F32, 2, 3, 4), T(F32, 2, 4, 5), T(F32, 1, 1)}, {{0}}},
    {"gemm C (3, 1)", OP_GEMM, 13, 3, 1, 0,
     {T(F32, 2, 3, 4), T(F32, 2, 4, 5), T(F32, 2, 3, 1)}, {{0}}},
    {"gemm C (1, 1)", OP_GEMM, 13, 3, 1, 0,
     {T(F32, 2, 3, 4), T(F32, 2, 4, 5), T(F32, 2, 1, 1)}, {{0}}},
    {"gemm beta 0", OP_GEMM, 13, 3, 1, 1,
     {T(F32, 2, 3, 4), T(F32, 2, 4, 5), T(F32, 2, 3, 5)}, {BETA(0)}},
    {"gemm omitted C", OP_GEMM, 13, 3, 1, 0,
     {T(F32, 2, 3, 4), T(F32, 2, 4, 5), T(SMELT_DT_UNDEFINED, 0, 0)}, {{0}}},
    {"gemm f64", OP_GEMM, 13, 3, 1, 2,
     {T(F64, 2, 3, 4), T(F64, 2, 5, 4), T(F64, 1, 5)}, {TB, ALPHA(3)}},
    {"gemm f16", OP_GEMM, 13, 3, 1, 1,
     {T(F16, 2, 3, 8), T(F16, 2, 8, 5), T(F16, 1, 5)}, {BETA(0.5)}},
    {"gemm f16 no C", OP_GEMM, 13, 2, 1, 0, {T(F16, 2, 3, 8), T(F16, 2, 8, 5)}, {{0}}},
    {"gemm bf16", OP_GEMM, 13, 3, 1, 1,
     {T(BF16, 2, 8, 3), T(BF16, 2, 8, 5), T(BF16, 2, 3, 5)}, {TA}},
    {"gemm int32 exact", OP_GEMM, 13, 3, 1, 0,
     {T(SMELT_DT_INT32, 2, 3, 4), T(SMELT_DT_INT32, 2, 4, 5), T(SMELT_DT_INT32, 1, 5)}, {{0}}},
    {"gemm int64 scaled", OP_GEMM, 13, 3, 1, 2,
     {T(SMELT_DT_INT64, 2, 3, 4), T(SMELT_DT_INT64, 2, 4, 5), T(SMELT_DT_INT64, 2, 3, 5)},
     {ALPHA(2), BETA(3)}},
    {"gemm uint32 no C", OP_GEMM, 13, 2, 1, 1,
     {T(SMELT_DT_UINT32, 2, 3, 4), T(SMELT_DT_UINT32, 2, 5, 4)}, {TB}},
};

#define EQ(e) {{"equation", GR_ATTR_STRING, 0, e}}
#define EINSUM1(e, a) {"einsum " e, OP_EINSUM, 12, 1, 1, 1, {a}, EQ(e)}
#define EINSUM2(e, a, b) {"einsum " e, OP_EINSUM, 12, 2, 1, 1, {a, b}, EQ(e)}

static const node_case k_einsum_cases[] = {
    EINSUM2("ij,jk->ik", T(F32, 2, 3, 4), T(F32, 2, 4, 5)),
    EINSUM2("ij,jk", T(F32, 2, 3, 4), T(F32, 2, 4, 5)),
    EINSUM2("bij,bjk->bik", T(F32, 3, 2, 3, 4), T(F32, 3, 2, 4, 5)),
    EINSUM2("i,i", T(F32, 1, 5), T(F32, 1, 5)),
    EINSUM2("i,j->ij", T(F32, 1, 3), T(F32, 1, 4)),
    EINSUM2("Ab,bC->CA", T(F32, 2, 3, 4), T(F32, 2, 4, 5)),
    EINSUM1("ij->ji", T(F32, 2, 3, 4)),
    EINSUM1("ij->", T(F32, 2, 3, 4)),
    EINSUM1("ij->i", T(F32, 2, 3, 4)),
    EINSUM1("ii->i", T(F32, 2, 4, 4)),
    EINSUM1("ii", T(F32, 2, 4, 4)),
    EINSUM1("bii->bi", T(F32, 3, 2, 3, 3)),
    EINSUM1("iji->j", T(F32, 3, 3, 2, 3)),
    EINSUM1("...ii->...i", T(F32, 4, 2, 5, 3, 3)),
    EINSUM1("i...->...", T(F32, 3, 2, 3, 4)),
    EINSUM2("...ij,...jk->...ik", T(F32, 4, 2, 1, 3, 4), T(F32, 3, 5, 4, 2)),
    EINSUM2("...ij,jk", T(F32, 3, 2, 3, 4), T(F32, 2, 4, 5)),
    EINSUM2("ij,ij->ij", T(F32, 2, 3, 4), T(F32, 2, 3, 4)),
    EINSUM2("ij,jk->ik", T(F64, 2, 3, 4), T(F64, 2, 4, 5)),
    EINSUM2("ij,jk->ik", T(F16, 2, 3, 8), T(F16, 2, 8, 5)),
    EINSUM2("ij,jk->ik", T(BF16, 2, 3, 8), T(BF16, 2, 8, 5)),
    EINSUM2("ij,jk->ik", T(SMELT_DT_INT8, 2, 3, 4), T(SMELT_DT_INT8, 2, 4, 5)),
    EINSUM2("ij,jk->ik", T(SMELT_DT_UINT16, 2, 3, 4), T(SMELT_DT_UINT16, 2, 4, 5)),
    EINSUM2("ij,jk->ik", T(SMELT_DT_INT64, 2, 3, 4), T(SMELT_DT_INT64, 2, 4, 5)),
    EINSUM2("ij,jk->ik", T(F32, 2, 3, 0), T(F32, 2, 0, 5)),
    {"einsum ij,jk,kl->il", OP_EINSUM, 12, 3, 1, 1,
     {T(F32, 2, 2, 3), T(F32, 2, 3, 4), T(F32, 2, 4, 5)}, EQ("ij,jk,kl->il")},
};

static void run_cases(const node_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) run_case(&cases[i]);
}

int main(void)
{
    run_cases(k_matmul_cases, sizeof k_matmul_cases / sizeof k_matmul_cases[0]);
    run_cases(k_gemm_cases, sizeof k_gemm_cases / sizeof k_gemm_cases[0]);
    run_cases(k_einsum_cases, sizeof k_einsum_cases / sizeof k_einsum_cases[0]);
    TEST_MAIN_END();
}
