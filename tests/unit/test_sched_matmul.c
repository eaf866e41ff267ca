/* The default matrix-product schedule (sched/default.c) and the packed
 * product (MatMulPacked, ops/linalg_packed.c) against the reference kernels,
 * on the shapes register tiling gets wrong first: M = 1, M and N not
 * multiples of the tile, N below a vector, K = 1, batched 3-D/4-D products
 * with and without broadcasting (attention's Q K^T and P V), big enough to
 * take the parallel and panel-outer paths.
 *   - MatMul and MatMulPacked nodes lowered under the default schedule for
 *     1, 8 and 16 lanes and under random legal schedules, run by the tir
 *     interpreter, against op eval;
 *   - MatMulPacked's reference kernel against MatMul's on the unpacked B
 *     (packed by this file's own loop), and its te form against its eval;
 *   - whole graphs (constant weights, bias Add, Relu/Gelu epilogues, Gemm
 *     with transB and C, activation x activation products) compiled through
 *     the pass pipeline (pack_weights, fuse_ops) for each target the host
 *     runs, against the reference executor on the unoptimised graph. */
#include "api/smelt_internal.h"
#include "codegen/target.h"
#include "op_test_util.h"
#include "passes/pass_util.h"
#include "passes/passes.h"
#include "sched/sched.h"
#include "test_hw.h"

#define RANDOM_SCHEDULES 4

extern const op_def op_def_MATMUL, op_def_MATMUL_PACKED, op_def_GEMM;
const op_def *const test_link_anchor[] = {&op_def_MATMUL, &op_def_MATMUL_PACKED, &op_def_GEMM};

static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    (void)kind;
    op_set_f64(t, i, 4.0 * ((double)opt_random(state) / (double)(1u << 24)) - 2.0);
}

static const opt_suite k_suite = {
    .seed = 4242, .fill = fill, .tols = OPT_TOLS_ACCUMULATE, .random_schedules = RANDOM_SCHEDULES};

/* ---- one node under the default schedule for a given vector width ---- */

static smelt_status run_default(opt_node *t, int vw)
{
    const gr_node *node = t->node;
    smelt_tensor types[OPT_MAX_IO];
    const smelt_tensor *tin[OPT_MAX_IO];
    for (int i = 0; i < node->n_inputs; i++) {
        types[i] = *t->in[i];
        types[i].data = NULL; /* placeholders, as run-time inputs */
        tin[i] = &types[i];
    }
    opt_free_outputs(t);
    SMELT_TRY(opt_run_reference(t));
    SMELT_TRY(op_get(node->op)->def->infer(t->ctx, node, t->in, t->te));
    te_graph *te = NULL;
    SMELT_TRY(te_from_node(t->ctx, node, tin, t->te, &te));
    sch_schedule s;
    sch_schedule_init(&s);
    smelt_status r = sch_default(t->ctx, te, test_hw(vw), &s);
    if (r == SMELT_OK) r = opt_run_schedule(t, te, &s);
    sch_schedule_fini(&s);
    te_graph_free(te);
    return r;
}

static void check_node_widths(opt_node *t, const char *what)
{
    static const int widths[] = {1, 8, 16};
    for (size_t w = 0; w < SMELT_ARRAY_LEN(widths); w++) {
        char where[256];
        snprintf(where, sizeof where, "%s [default schedule, %d lanes]", what, widths[w]);
        smelt_status r = run_default(t, widths[w]);
        if (r != SMELT_OK) fprintf(stderr, "%s: %s\n", where, opt_message(t));
        CHECK(r == SMELT_OK);
        if (r == SMELT_OK) opt_compare_outputs(t, &k_suite.tols, where);
        smelt_ctx_clear(t->ctx);
    }
    for (int k = 1; k <= RANDOM_SCHEDULES; k++) opt_check_lowered(t, &k_suite.tols, what, (uint64_t)k);
    /* the tuner's candidates: random points of the rules' knob space */
    for (int k = 1; k <= 4 * OPT_KNOB_SCHEDULES; k++)
        opt_check_lowered(t, &k_suite.tols, what, OPT_KNOB_SEED + (uint64_t)k);
}

#define T OPT_X
#define MATMUL(what, a, b) {what, OP_MATMUL, 13, "y", 2, 0, {a, b}, {{0}}}

static const opt_case k_matmuls[] = {
    MATMUL("M = 1 (a row)", T(F32, 2, 1, 37), T(F32, 2, 37, 70)),
    MATMUL("odd M, K, N", T(F32, 2, 7, 5), T(F32, 2, 5, 17)),
    MATMUL("tails in both tile loops", T(F32, 2, 13, 9), T(F32, 2, 9, 50)),
    MATMUL("N below a vector", T(F32, 2, 9, 6), T(F32, 2, 6, 3)),
    MATMUL("K = 1", T(F32, 2, 10, 1), T(F32, 2, 1, 33)),
    MATMUL("N = 1", T(F32, 2, 12, 8), T(F32, 2, 8, 1)),
    MATMUL("1-D A", T(F32, 1, 8), T(F32, 2, 8, 40)),
    MATMUL("3-D x 2-D", T(F32, 3, 2, 9, 24), T(F32, 2, 24, 40)),
    MATMUL("scores Q K^T", T(F32, 4, 1, 3, 20, 8), T(F32, 4, 1, 3, 8, 20)),
    MATMUL("P V", T(F32, 4, 1, 3, 20, 20), T(F32, 4, 1, 3, 20, 8)),
    MATMUL("batch broadcast", T(F32, 4, 2, 1, 5, 6), T(F32, 3, 3, 6, 7)),
    MATMUL("parallel, panels outside rows", T(F32, 2, 40, 24), T(F32, 2, 24, 272)),
    MATMUL("parallel batches", T(F32, 3, 6, 24, 16), T(F32, 3, 6, 16, 48)),
    MATMUL("float64", T(F64, 2, 9, 5), T(F64, 2, 5, 20)),
    MATMUL("float16", T(F16, 2, 9, 8), T(F16, 2, 8, 20)),
};

static void test_matmuls(void)
{
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_matmuls); i++) {
        opt_node t;
        smelt_status st = opt_case_init(&t, &k_suite, &k_matmuls[i]);
        CHECK(st == SMELT_OK);
        if (st == SMELT_OK) check_node_widths(&t, k_matmuls[i].what);
        opt_fini(&t);
    }
}

/* ---- MatMulPacked ---- */

typedef struct packed_case {
    const char *what;
    int a_rank;
    int64_t a[4]; /* [..., M, K] */
    int64_t n, nb;
} packed_case;

static const packed_case k_packed[] = {
    {"one full panel", 2, {4, 6}, 16, 16},
    {"padded last panel", 2, {7, 5}, 37, 16},
    {"panel of 48, M = 1", 2, {1, 24}, 100, 48},
    {"panels of 8, batched A", 3, {2, 9, 11}, 20, 8},
    {"panel wider than N", 2, {5, 3}, 10, 32},
    {"K = 1", 2, {6, 1}, 33, 16},
    {"parallel", 3, {1, 40, 24}, 144, 48},
};

/* Bp [P, K, nb] from B [K, N], the padding filled with garbage (never read). */
static smelt_tensor pack_b(const smelt_tensor *b, int64_t nb)
{
    int64_t k = b->dims[0], n = b->dims[1], p = (n + nb - 1) / nb;
    smelt_tensor t = opt_tensor(F32, 3, OPT_DIMS(p, k, nb), NULL);
    float *d = smelt_calloc((size_t)(p * k * nb), sizeof(float));
    for (int64_t i = 0; i < p * k * nb; i++) d[i] = 1e30f;
    const float *s = b->data;
    for (int64_t kk = 0; kk < k; kk++)
        for (int64_t j = 0; j < n; j++) d[((j / nb) * k + kk) * nb + j % nb] = s[kk * n + j];
    t.data = d;
    return t;
}

static void check_packed(const packed_case *c)
{
    int64_t k = c->a[c->a_rank - 1];
    /* the MatMul on plain B is the oracle of the packed reference kernel */
    opt_case mm = {c->what, OP_MATMUL, 13, "y", 2, 0, {{0}}, {{0}}};
    mm.in[0] = (opt_input){.dt = F32, .rank = c->a_rank};
    memcpy(mm.in[0].dims, c->a, sizeof c->a);
    mm.in[1] = (opt_input){.dt = F32, .rank = 2, .dims = {k, c->n}};
    opt_node plain;
    CHECK(opt_case_init(&plain, &k_suite, &mm) == SMELT_OK);
    CHECK(opt_run_reference(&plain) == SMELT_OK);

    opt_node t;
    opt_init(&t, NULL, OP_MATMUL_PACKED, 13, 2, 1);
    gr_attr n_attr = {.name = "n", .type = GR_ATTR_INT, .i = c->n};
    opt_attrs(&t, &n_attr, 1);
    smelt_tensor bp = pack_b(plain.in[1], c->nb);
    const smelt_tensor *in[2] = {plain.in[0], &bp};
    CHECK(opt_import(&t) == SMELT_OK);
    opt_bind_ptrs(&t, in, 2);
    smelt_status r = opt_run_reference(&t);
    CHECK(r == SMELT_OK);
    if (r == SMELT_OK && plain.out[0].data) {
        memcpy(t.te, plain.out, sizeof plain.out[0]); /* compare packed eval with MatMul eval */
        opt_compare_output(&t, &k_suite.tols, c->what, 0);
        memset(t.te, 0, sizeof t.te);
    }
    CHECK(opt_run_te(&t) == SMELT_OK);
    opt_compare_outputs(&t, &k_suite.tols, c->what);
    check_node_widths(&t, c->what);
    opt_fini(&t);
    opt_fini(&plain);
    smelt_free(bp.data);
}

static void test_packed(void)
{
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_packed); i++) check_packed(&k_packed[i]);
}

/* Shape errors name the input and what is wrong. */
static void test_packed_errors(void)
{
    opt_node t;
    opt_init(&t, NULL, OP_MATMUL_PACKED, 13, 2, 1);
    gr_attr n_attr = {.name = "n", .type = GR_ATTR_INT, .i = 40};
    opt_attrs(&t, &n_attr, 1);
    CHECK(opt_import(&t) == SMELT_OK);
    smelt_tensor a = opt_tensor(F32, 2, OPT_DIMS(3, 5), NULL);
    smelt_tensor few = opt_tensor(F32, 3, OPT_DIMS(2, 5, 16), NULL); /* 40 needs 3 panels */
    smelt_tensor bad_k = opt_tensor(F32, 3, OPT_DIMS(3, 6, 16), NULL);
    const smelt_tensor *in1[2] = {&a, &few}, *in2[2] = {&a, &bad_k};
    smelt_tensor out[1];
    CHECK(op_def_MATMUL_PACKED.infer(t.ctx, t.node, in1, out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "n = 40 needs 3");
    smelt_ctx_clear(t.ctx);
    CHECK(op_def_MATMUL_PACKED.infer(t.ctx, t.node, in2, out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(opt_message(&t), "inner dimensions differ");
    opt_fini(&t);

    opt_init(&t, NULL, OP_MATMUL_PACKED, 13, 2, 1);
    CHECK(opt_import(&t) == SMELT_ERR_ATTR); /* no n */
    CHECK_STR_CONTAINS(opt_message(&t), "attribute 'n'");
    opt_fini(&t);
}

/* ---- compiled graphs ---- */

static smelt_ctx *g_ctx;

typedef enum epilogue { EPI_NONE, EPI_BIAS, EPI_BIAS_RELU, EPI_BIAS_GELU } epilogue;

typedef struct graph_case {
    const char *what;
    int a_rank, b_rank;
    int64_t a[4], b[4];
    bool const_b; /* weights: packed by pack_weights */
    epilogue epi;
    bool gemm_trans_b; /* a Gemm(A, B^T, C) instead of MatMul + Add */
} graph_case;

static const graph_case k_graphs[] = {
    {"linear M = 1", 2, 2, {1, 64}, {64, 200}, true, EPI_BIAS, false},
    {"linear odd", 2, 2, {7, 5}, {5, 17}, true, EPI_BIAS_RELU, false},
    {"linear tails", 3, 2, {1, 37, 33}, {33, 100}, true, EPI_BIAS_GELU, false},
    {"linear N below a vector", 2, 2, {9, 6}, {6, 3}, true, EPI_BIAS, false},
    {"linear K = 1", 2, 2, {10, 1}, {1, 40}, true, EPI_NONE, false},
    {"linear big", 3, 2, {1, 64, 96}, {96, 320}, true, EPI_BIAS_GELU, false},
    {"classifier Gemm", 2, 2, {3, 50}, {21, 50}, true, EPI_BIAS, true},
    {"scores", 4, 4, {1, 3, 20, 8}, {1, 3, 8, 20}, false, EPI_NONE, false},
    {"P V", 4, 4, {1, 3, 20, 20}, {1, 3, 20, 8}, false, EPI_NONE, false},
    {"batch broadcast", 4, 3, {2, 1, 5, 6}, {3, 6, 7}, false, EPI_BIAS, false},
};

static float rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / (float)(1u << 23) - 1.0f;
}

static gr_value *g_input(gr_graph *g, const char *name, int rank, const int64_t *dims)
{
    gr_value *v = gr_value_new(g, name);
    v->dtype = SMELT_DT_FLOAT32;
    v->rank = rank;
    memcpy(v->dims, dims, sizeof(int64_t) * (size_t)rank);
    v->is_input = true;
    smelt_ptrvec_push(&g->inputs, v);
    return v;
}

static gr_value *g_const(gr_graph *g, const char *name, int rank, const int64_t *dims,
                         uint32_t seed)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *d = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) d[i] = rnd(&seed);
    gr_value *v = pu_const_f32(g_ctx, g, name, rank, dims, d);
    free(d);
    return v;
}

static gr_value *g_node(gr_graph *g, op_kind op, const char *name, gr_value *const *in, int n,
                        int64_t trans_b)
{
    gr_node *node = pu_node_new(g_ctx, g, name, op, in, n, 1);
    if (op == OP_GEMM) pu_attr_int(g_ctx, g, node, "transB", trans_b);
    CHECK(pu_node_import(g_ctx, g, node) == SMELT_OK);
    return node->outputs[0];
}

static smelt_model *graph_model(const graph_case *c)
{
    gr_graph *g = gr_graph_new();
    g->opset = 20;
    gr_value *a = g_input(g, "a", c->a_rank, c->a);
    gr_value *b = c->const_b ? g_const(g, "w", c->b_rank, c->b, 7) : g_input(g, "b", c->b_rank, c->b);
    int64_t n = c->gemm_trans_b ? c->b[0] : c->b[c->b_rank - 1];
    gr_value *bias = c->epi != EPI_NONE ? g_const(g, "bias", 1, &n, 11) : NULL;
    gr_value *y;
    if (c->gemm_trans_b) {
        gr_value *in[3] = {a, b, bias};
        y = g_node(g, OP_GEMM, "gemm", in, bias ? 3 : 2, 1);
    } else {
        gr_value *in[2] = {a, b};
        y = g_node(g, OP_MATMUL, "mm", in, 2, 0);
        gr_value *add[2] = {y, bias};
        if (bias) y = g_node(g, OP_ADD, "add", add, 2, 0);
    }
    if (c->epi == EPI_BIAS_RELU) y = g_node(g, OP_RELU, "relu", &y, 1, 0);
    if (c->epi == EPI_BIAS_GELU) y = g_node(g, OP_GELU, "gelu", &y, 1, 0);
    y->is_output = true;
    smelt_ptrvec_push(&g->outputs, y);
    smelt_model *m = smelt_model_from_graph(g);
    CHECK(pass_infer_shapes(g_ctx, g) == SMELT_OK && gr_graph_verify(g_ctx, g) == SMELT_OK);
    return m;
}

static bool close_all(const char *what, const smelt_tensor *got, const smelt_tensor *want)
{
    int64_t n = smelt_tensor_numel(want);
    if (!got->data || smelt_tensor_numel(got) != n) {
        fprintf(stderr, "%s: output missing or of the wrong size\n", what);
        return false;
    }
    const float *g = got->data, *w = want->data;
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)g[i] - w[i]) <= 1e-4 * (1.0 + fabs((double)w[i])))) {
            fprintf(stderr, "%s: element %lld: got %.9g, reference %.9g\n", what, (long long)i,
                    g[i], w[i]);
            return false;
        }
    return true;
}

static void check_graph(const graph_case *c, const char *target)
{
    smelt_model *m = graph_model(c);
    smelt_tensor in[2] = {{0}}, want = {0}, got = {0};
    int n_in = m->graph->inputs.len;
    uint32_t seed = 3;
    for (int i = 0; i < n_in; i++) {
        in[i] = gr_value_info(m->graph->inputs.items[i]);
        int64_t n = smelt_tensor_numel(&in[i]);
        float *d = malloc(sizeof(float) * (size_t)n);
        for (int64_t k = 0; k < n; k++) d[k] = rnd(&seed);
        in[i].data = d;
    }
    /* the reference executor on the graph as built, then the compiled form */
    smelt_status s = smelt_model_run_reference(g_ctx, m, in, n_in, &want, 1);
    smelt_options o;
    smelt_options_init(&o);
    o.target = target;
    o.num_threads = 2;
    if (s == SMELT_OK) s = smelt_model_compile(g_ctx, m, &o);
    if (s == SMELT_OK) s = smelt_model_run(g_ctx, m, in, n_in, &got, 1);
    char what[160];
    snprintf(what, sizeof what, "compiled '%s' (%s)", c->what, target);
    if (s != SMELT_OK) fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(g_ctx));
    CHECK(s == SMELT_OK);
    if (s == SMELT_OK) CHECK(close_all(what, &got, &want));
    bool packed = false;
    for (int i = 0; i < m->graph->nodes.len; i++)
        packed |= ((gr_node *)m->graph->nodes.items[i])->op == OP_MATMUL_PACKED;
    /* weights are packed for a vectorising target, activations never */
    CHECK(packed == (c->const_b && strcmp(target, "generic") != 0 && c->b[c->b_rank - 1] >= 4));
    for (int i = 0; i < n_in; i++) free(in[i].data);
    smelt_free(want.data);
    smelt_free(want.name);
    smelt_free(got.data);
    smelt_free(got.name);
    smelt_model_free(m);
    smelt_ctx_clear(g_ctx);
}

static void test_graphs(void)
{
    const cg_target *host = cg_target_host();
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_graphs); i++) {
        check_graph(&k_graphs[i], "generic");
        if (host->isa >= CG_ISA_AVX2) check_graph(&k_graphs[i], "avx2");
        if (host->isa >= CG_ISA_AVX512) check_graph(&k_graphs[i], "avx512");
    }
}

/* The panel width is what the schedule tiles by: a multiple of the lanes,
 * at most the vectors a tile holds, 0 where nothing is vectorised. */
static void test_panel_width(void)
{
    CHECK(sch_matmul_panel_width(128, 3072, 768, test_hw(16)) % 16 == 0);
    CHECK(sch_matmul_panel_width(128, 3072, 768, test_hw(16)) >= 32);
    CHECK(sch_matmul_panel_width(128, 3072, 768, test_hw(8)) % 8 == 0);
    CHECK(sch_matmul_panel_width(1, 1000, 2048, test_hw(16)) > 0);
    CHECK(sch_matmul_panel_width(16, 3, 64, test_hw(16)) == 0);
    CHECK(sch_matmul_panel_width(16, 64, 64, test_hw(1)) == 0);
}

int main(void)
{
    g_ctx = smelt_ctx_new();
    test_panel_width();
    test_matmuls();
    test_packed();
    test_packed_errors();
    test_graphs();
    smelt_ctx_free(g_ctx);
    TEST_MAIN_END();
}
