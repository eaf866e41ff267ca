/* Chains of stages that read their producer several times (issue 16):
 * y = GatherElements(x, x) repeated, each stage reading its producer once as
 * data and (after index normalisation) several times in the index.  Inlining
 * everything grows as k^depth; the default schedule must materialise a
 * producer instead (sched/default.c, DEFAULT_INLINE_MAX_NODES), so that
 *   - a 20-node chain compiles, runs and equals the reference executor on
 *     every target the host runs;
 *   - the generated C and the compile's peak memory grow linearly with the
 *     chain (depths 10, 20, 40);
 * while an explicit schedule inlining every stage still meets the hard cap
 * (SCH_INLINE_MAX_NODES, sched/state.c) with SMELT_ERR_LIMIT. */
#include <stdbool.h>
#include <stdlib.h>

#include "api/smelt_internal.h"
#include "codegen/codegen.h"
#include "codegen/target.h"
#include "lower/program.h"
#include "passes/pass_util.h"
#include "passes/passes.h"
#include "sched/sched.h"
#include "te/te.h"
#include "test_util.h"
#include "test_hw.h"

static smelt_ctx *g_ctx;

/* ---- allocator counting the peak of live bytes ---- */

static size_t g_live, g_peak;

static void *count_alloc(void *user, size_t size)
{
    (void)user;
    unsigned char *p = malloc(size + 16);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    g_live += size;
    if (g_live > g_peak) g_peak = g_live;
    return p + 16;
}

static void count_release(void *user, void *ptr)
{
    (void)user;
    if (!ptr) return;
    unsigned char *p = (unsigned char *)ptr - 16;
    size_t size;
    memcpy(&size, p, sizeof size);
    g_live -= size;
    free(p);
}

/* ---- the chain ---- */

#define ROWS 4
#define COLS 6

static smelt_model *chain_model(int depth)
{
    gr_graph *g = gr_graph_new();
    g->opset = 13;
    gr_value *v = gr_value_new(g, "x");
    v->dtype = SMELT_DT_INT64;
    v->rank = 2;
    v->dims[0] = ROWS;
    v->dims[1] = COLS;
    v->is_input = true;
    smelt_ptrvec_push(&g->inputs, v);
    for (int k = 0; k < depth; k++) {
        char name[32];
        snprintf(name, sizeof name, "g%d", k);
        gr_value *in[2] = {v, v};
        gr_node *n = pu_node_new(g_ctx, g, name, OP_GATHER_ELEMENTS, in, 2, 1);
        CHECK(n && pu_node_import(g_ctx, g, n) == SMELT_OK);
        v = n->outputs[0];
    }
    v->is_output = true;
    smelt_ptrvec_push(&g->outputs, v);
    smelt_model *m = smelt_model_from_graph(g);
    CHECK(pass_infer_shapes(g_ctx, g) == SMELT_OK && gr_graph_verify(g_ctx, g) == SMELT_OK);
    return m;
}

/* Valid indices along axis 0, negative ones included; the chain's values
 * are drawn from x, so every stage's indices stay valid. */
static smelt_tensor chain_input(void)
{
    smelt_tensor t = {0};
    t.dtype = SMELT_DT_INT64;
    t.rank = 2;
    t.dims[0] = ROWS;
    t.dims[1] = COLS;
    int64_t *d = malloc(sizeof(int64_t) * ROWS * COLS);
    uint32_t s = 12345;
    for (int i = 0; i < ROWS * COLS; i++) {
        s = s * 1664525u + 1013904223u;
        d[i] = (int64_t)(s >> 16) % (2 * ROWS) - ROWS; /* -ROWS .. ROWS-1 */
    }
    t.data = d;
    return t;
}

static void check_runs(int depth, const char *target)
{
    smelt_model *m = chain_model(depth);
    smelt_tensor in = chain_input(), want = {0}, got = {0};
    smelt_status s = smelt_model_run_reference(g_ctx, m, &in, 1, &want, 1);
    smelt_options o;
    smelt_options_init(&o);
    o.target = target;
    if (s == SMELT_OK) s = smelt_model_compile(g_ctx, m, &o);
    if (s == SMELT_OK) s = smelt_model_run(g_ctx, m, &in, 1, &got, 1);
    if (s != SMELT_OK) fprintf(stderr, "chain of %d (%s): %s\n", depth, target, smelt_ctx_message(g_ctx));
    CHECK(s == SMELT_OK);
    if (s == SMELT_OK) {
        bool same = want.data && got.data && smelt_tensor_numel(&got) == ROWS * COLS &&
                    memcmp(want.data, got.data, sizeof(int64_t) * ROWS * COLS) == 0;
        if (!same) fprintf(stderr, "chain of %d (%s): compiled output differs\n", depth, target);
        CHECK(same);
    }
    smelt_tensor_release(&want);
    smelt_tensor_release(&got);
    free(in.data);
    smelt_model_free(m);
    smelt_ctx_clear(g_ctx);
}

/* Bytes of C less line indentation (nested temps indent linearly deeper,
 * which is not the k^depth growth this test is about). */
static size_t unindented_bytes(const char *c, size_t len)
{
    size_t n = 0;
    bool line_start = true;
    for (size_t i = 0; i < len; i++) {
        if (line_start && c[i] == ' ') continue;
        line_start = c[i] == '\n';
        n++;
    }
    return n;
}

/* Optimise, lower and emit (no C compiler): bytes of C and peak bytes live. */
static void compile_size(int depth, size_t *c_bytes, size_t *peak)
{
    smelt_model *m = chain_model(depth);
    const cg_target *t = cg_target_find("avx2");
    lower_options lo = {.hw = &t->hw};
    lowered_program *lp = NULL;
    smelt_strbuf c;
    smelt_strbuf_init(&c);
    g_peak = g_live;
    size_t base = g_live;
    smelt_status s = smelt_model_optimize(g_ctx, m, NULL);
    if (s == SMELT_OK) s = lower_graph(g_ctx, m->graph, &lo, &lp);
    if (s == SMELT_OK) s = cg_emit_program(g_ctx, &lp->prog, t, &c);
    if (s != SMELT_OK) fprintf(stderr, "chain of %d: %s\n", depth, smelt_ctx_message(g_ctx));
    CHECK(s == SMELT_OK && !c.failed);
    *c_bytes = unindented_bytes(c.data ? c.data : "", c.len);
    *peak = g_peak - base;
    smelt_strbuf_fini(&c);
    lowered_program_free(lp);
    smelt_model_free(m);
    smelt_ctx_clear(g_ctx);
}

static void test_linear_growth(void)
{
    size_t c[3], peak[3];
    static const int depths[3] = {10, 20, 40};
    for (int i = 0; i < 3; i++) {
        compile_size(depths[i], &c[i], &peak[i]);
        printf("chain of %d: %zu bytes of C, %zu bytes peak while compiling\n", depths[i], c[i],
               peak[i]);
    }
    /* linear: doubling the chain at most ~doubles both (k^depth would square them) */
    for (int i = 1; i < 3; i++) {
        CHECK(c[i] <= c[i - 1] * 5 / 2);
        CHECK(peak[i] <= peak[i - 1] * 5 / 2);
    }
    CHECK(c[1] < 256 * 1024); /* 20 nodes: not megabytes */
}

/* ---- the schedules of the chain's te graph ---- */

static bool escapes(const gr_value *v, void *user)
{
    (void)user;
    return v->is_output;
}

static void test_schedules(void)
{
    smelt_model *m = chain_model(20);
    gr_graph *g = m->graph;
    te_graph *te = NULL;
    te_group_io *io = calloc(1, sizeof *io);
    smelt_status s = te_from_group(g_ctx, (const gr_node *const *)g->nodes.items, g->nodes.len,
                                   escapes, NULL, &te, io);
    CHECK(s == SMELT_OK);
    if (s != SMELT_OK) {
        fprintf(stderr, "te_from_group: %s\n", smelt_ctx_message(g_ctx));
        goto out;
    }
    /* the default: some stages inlined, some materialised; it replays */
    sch_schedule d;
    sch_schedule_init(&d);
    s = sch_default(g_ctx, te, test_hw(8), &d);
    int inlines = 0, computes = 0;
    for (int i = 0; i < d.n; i++) inlines += d.steps[i].kind == SCH_COMPUTE_INLINE;
    for (int i = 0; i < te->tensors.len; i++) computes += ((te_tensor *)te->tensors.items[i])->kind == TE_COMPUTE;
    printf("default schedule of the 20-node chain: %d of %d intermediate stages inlined\n",
           inlines, computes - 1);
    CHECK(s == SMELT_OK && inlines > 0 && inlines < computes - 1);
    sch_state *st = NULL;
    CHECK(s == SMELT_OK && sch_state_build(g_ctx, te, &d, &st) == SMELT_OK);
    sch_state_free(st);
    sch_schedule_fini(&d);
    /* inlining everything: refused at the hard cap, naming it */
    sch_schedule all;
    sch_schedule_init(&all);
    for (int i = 0; i < te->tensors.len; i++) {
        const te_tensor *t = te->tensors.items[i];
        bool out = false;
        for (int k = 0; k < te->outputs.len; k++) out |= te->outputs.items[k] == t;
        if (t->kind == TE_COMPUTE && !out && !t->check) CHECK(sch_compute_inline(g_ctx, &all, t->buf->name) == SMELT_OK);
    }
    st = NULL;
    smelt_ctx_clear(g_ctx);
    s = sch_state_build(g_ctx, te, &all, &st);
    CHECK(s == SMELT_ERR_LIMIT);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "SCH_INLINE_MAX_NODES");
    sch_state_free(st);
    sch_schedule_fini(&all);
out:
    te_graph_free(te);
    free(io);
    smelt_model_free(m);
    smelt_ctx_clear(g_ctx);
}

int main(void)
{
    smelt_allocator a = {count_alloc, count_release, NULL};
    smelt_set_allocator(&a);
    g_ctx = smelt_ctx_new();
    test_schedules();
    test_linear_growth();
    const cg_target *host = cg_target_host();
    check_runs(20, "generic");
    if (host->isa >= CG_ISA_AVX2) check_runs(20, "avx2");
    if (host->isa >= CG_ISA_AVX512) check_runs(20, "avx512");
    check_runs(5, "host");
    smelt_ctx_free(g_ctx);
    smelt_set_allocator(NULL);
    TEST_MAIN_END();
}
