/* The parallel loop of an elementwise stage (sched/default.c,
 * parallel_elementwise) gives each iteration a sensible chunk: the Cast + Mul
 * after quantize_dynamic's MatMulInteger ([1, 128, 768], int32 -> float) used
 * to be split into 128 x 96 = 12,288 iterations of one 8-float vector; now
 * it runs by rows (128 iterations of 768).  Few rows: the last axis in
 * chunks of about 1024 elements; many small rows: fewer leading axes fused,
 * or rows taken a few at a time.
 * Every case keeps at least 8 iterations (two threads busy), and the
 * compiled result equals the reference kernels'. */
#include <stdbool.h>
#include <stdlib.h>

#include "api/smelt_internal.h"
#include "passes/pass_util.h"
#include "passes/passes.h"
#include "sched/sched.h"
#include "te/te.h"
#include "test_hw.h"
#include "test_util.h"

static smelt_ctx *g_ctx;

typedef struct chunk_case {
    const char *name;
    int rank;
    int64_t dims[5];
    int64_t want_iters; /* parallel iterations expected (0: only the bounds below) */
} chunk_case;

static const chunk_case k_cases[] = {
    {"bert cast [1,128,768]", 3, {1, 128, 768}, 128},
    {"flat [98304]", 1, {98304}, 0},
    {"few rows [2,49152]", 2, {2, 49152}, 0},
    {"blocked [1,4,56,56,8]", 5, {1, 4, 56, 56, 8}, 112},
    {"many rows [4096,24]", 2, {4096, 24}, 0},
};

static int64_t numel(const chunk_case *c)
{
    int64_t n = 1;
    for (int d = 0; d < c->rank; d++) n *= c->dims[d];
    return n;
}

/* y = float(x) * 0.5, x int32 */
static smelt_model *case_model(const chunk_case *c)
{
    gr_graph *g = gr_graph_new();
    g->opset = 18;
    gr_value *x = gr_value_new(g, "x");
    x->dtype = SMELT_DT_INT32;
    x->rank = c->rank;
    memcpy(x->dims, c->dims, sizeof(int64_t) * (size_t)c->rank);
    x->is_input = true;
    smelt_ptrvec_push(&g->inputs, x);
    gr_node *cast = pu_node_new(g_ctx, g, "cast", OP_CAST, &x, 1, 1);
    CHECK(cast && pu_attr_int(g_ctx, g, cast, "to", 1) == SMELT_OK &&
          pu_node_import(g_ctx, g, cast) == SMELT_OK);
    float half = 0.5f;
    gr_value *in[2] = {cast->outputs[0], pu_const_f32(g_ctx, g, "half", 0, NULL, &half)};
    gr_node *mul = pu_node_new(g_ctx, g, "mul", OP_MUL, in, 2, 1);
    CHECK(mul && pu_node_import(g_ctx, g, mul) == SMELT_OK);
    mul->outputs[0]->is_output = true;
    smelt_ptrvec_push(&g->outputs, mul->outputs[0]);
    smelt_model *m = smelt_model_from_graph(g);
    CHECK(pass_infer_shapes(g_ctx, g) == SMELT_OK && gr_graph_verify(g_ctx, g) == SMELT_OK);
    return m;
}

static bool escapes(const gr_value *v, void *user)
{
    (void)user;
    return v->is_output;
}

/* The parallel loop's iterations over the stages of the default schedule
 * (0: none); at most one stage runs in parallel here. */
static int64_t parallel_iters(const te_graph *te, int lanes)
{
    sch_schedule d;
    sch_schedule_init(&d);
    sch_state *st = NULL;
    int64_t iters = 0;
    CHECK(sch_default(g_ctx, te, test_hw(lanes), &d) == SMELT_OK);
    CHECK(sch_state_build(g_ctx, te, &d, &st) == SMELT_OK);
    for (int i = 0; st && i < st->n_stages; i++) {
        const sch_stage *sg = &st->stages[i];
        for (int k = 0; !sg->inlined && k < sg->n_leaves; k++)
            if (sg->iters[sg->leaves[k]].annot == IR_FOR_PARALLEL) {
                CHECK(iters == 0);
                iters = sg->iters[sg->leaves[k]].extent;
            }
    }
    sch_state_free(st);
    sch_schedule_fini(&d);
    return iters;
}

static void check_schedule(const chunk_case *c, int lanes)
{
    smelt_model *m = case_model(c);
    gr_graph *g = m->graph;
    te_graph *te = NULL;
    te_group_io *io = calloc(1, sizeof *io);
    CHECK(te_from_group(g_ctx, (const gr_node *const *)g->nodes.items, g->nodes.len, escapes, NULL, &te,
                        io) == SMELT_OK);
    int64_t iters = te ? parallel_iters(te, lanes) : 0, per = iters ? numel(c) / iters : 0;
    fprintf(stderr, "%s, %d lanes: %lld parallel iterations of %lld elements\n", c->name, lanes,
            (long long)iters, (long long)per);
    CHECK(iters >= 8);
    CHECK(per >= 512);
    if (c->want_iters) CHECK(iters == c->want_iters);
    te_graph_free(te);
    free(io);
    smelt_model_free(m);
    smelt_ctx_clear(g_ctx);
}

/* The bert case compiled for target: the reference kernels' values exactly. */
static void check_values(const chunk_case *c, const char *target)
{
    smelt_model *m = case_model(c);
    int64_t n = numel(c);
    smelt_tensor in = {.dtype = SMELT_DT_INT32, .rank = c->rank}, want = {0}, got = {0};
    memcpy(in.dims, c->dims, sizeof(int64_t) * (size_t)c->rank);
    int32_t *x = malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (int32_t)(i * 2654435761u) >> 7;
    in.data = x;
    smelt_options o;
    smelt_options_init(&o);
    o.target = target;
    smelt_status s = smelt_model_run_reference(g_ctx, m, &in, 1, &want, 1);
    if (s == SMELT_OK) s = smelt_model_compile(g_ctx, m, &o);
    if (s == SMELT_OK) s = smelt_model_run(g_ctx, m, &in, 1, &got, 1);
    if (s != SMELT_OK) fprintf(stderr, "%s (%s): %s\n", c->name, target, smelt_ctx_message(g_ctx));
    CHECK(s == SMELT_OK);
    CHECK(s != SMELT_OK || memcmp(want.data, got.data, sizeof(float) * (size_t)n) == 0);
    smelt_tensor_release(&want);
    smelt_tensor_release(&got);
    free(x);
    smelt_model_free(m);
    smelt_ctx_clear(g_ctx);
}

int main(void)
{
    setenv("SMELT_CACHE_DIR", "cg-test-cache", 0);
    g_ctx = smelt_ctx_new();
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_cases); i++) {
        check_schedule(&k_cases[i], 8);
        check_schedule(&k_cases[i], 16);
        check_schedule(&k_cases[i], 1);
    }
    check_values(&k_cases[0], "generic");
    if (cg_target_host()->isa >= CG_ISA_AVX2) check_values(&k_cases[0], "avx2");
    smelt_ctx_free(g_ctx);
    TEST_MAIN_END();
}
