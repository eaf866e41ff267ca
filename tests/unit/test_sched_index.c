/* The lookups that keep schedule replay linear in the group's size
 * (te/readers.c: readers of each te tensor, used by the default rules;
 * sched/stage_index.c: stages by name and by reader, used by replay):
 * they must answer exactly what a scan of every stage answered, also after
 * inlining moved reads from one stage to another and after cache_write and
 * rfactor added stages.  Graph: x -> a -> {b, c} -> d (a read twice). */
#include <stdbool.h>
#include <stdlib.h>

#include "api/smelt_internal.h"
#include "sched/sched.h"
#include "sched/stage_index.h"
#include "te/readers.h"
#include "te/te.h"
#include "test_util.h"

static smelt_ctx *g_ctx;

typedef struct unary {
    const te_tensor *in;
    double c;
} unary;

static ir_expr *plus_c(te_graph *g, ir_expr *const *idx, void *user)
{
    const unary *u = user;
    return ir_add(&g->b, te_read(g, u->in, idx), ir_const_float(&g->b, SMELT_DT_FLOAT32, u->c));
}

typedef struct binary {
    const te_tensor *a, *b;
} binary;

static ir_expr *sum2(te_graph *g, ir_expr *const *idx, void *user)
{
    const binary *s = user;
    return ir_add(&g->b, te_read(g, s->a, idx), te_read(g, s->b, idx));
}

static const int64_t k_shape[2] = {4, 8};

static te_tensor *add_const(te_graph *g, const char *name, const te_tensor *in, double c)
{
    unary u = {in, c};
    return te_compute(g, name, SMELT_DT_FLOAT32, 2, k_shape, plus_c, &u, "injective");
}

/* x -> a -> {b, c} -> d; d is the output. */
static te_graph *diamond(void)
{
    te_graph *g = te_graph_new(g_ctx);
    te_tensor *x = te_placeholder(g, "x", SMELT_DT_FLOAT32, 2, k_shape);
    te_tensor *a = add_const(g, "a", x, 1), *b = add_const(g, "b", a, 2), *c = add_const(g, "c", a, 3);
    binary s = {b, c};
    te_tensor *d = te_compute(g, "d", SMELT_DT_FLOAT32, 2, k_shape, sum2, &s, "injective");
    CHECK(d && smelt_ptrvec_push(&g->outputs, d));
    return g;
}

static void test_te_readers(void)
{
    te_graph *g = diamond();
    te_readers r;
    CHECK(te_readers_build(g_ctx, g, &r) == SMELT_OK);
    /* tensors in order: x a b c d */
    CHECK(te_readers_count(&r, 0) == 1 && te_readers_of(&r, 0)[0] == 1);
    CHECK(te_readers_count(&r, 1) == 2 && te_readers_of(&r, 1)[0] == 2 && te_readers_of(&r, 1)[1] == 3);
    CHECK(te_readers_count(&r, 2) == 1 && te_readers_of(&r, 2)[0] == 4);
    CHECK(te_readers_count(&r, 3) == 1 && te_readers_of(&r, 3)[0] == 4);
    CHECK(te_readers_count(&r, 4) == 0);
    for (int i = 0; i < g->tensors.len; i++) {
        const te_tensor *t = g->tensors.items[i];
        CHECK(te_readers_tensor_of(&r, g, t->buf) == t);
    }
    te_readers_free(&r);
    te_graph_free(g);
}

static sch_state *replay(te_graph *g, const char *text, smelt_status want)
{
    sch_schedule s;
    sch_schedule_init(&s);
    CHECK(sch_schedule_parse(g_ctx, text, &s) == SMELT_OK);
    sch_state *st = NULL;
    smelt_status got = sch_state_build(g_ctx, g, &s, &st);
    CHECK(got == want);
    if (got != want) fprintf(stderr, "  schedule:\n%s  error: %s\n", text, smelt_ctx_message(g_ctx));
    sch_schedule_fini(&s);
    return st;
}

static bool reads(const sch_state *st, const char *stage, const char *buf)
{
    int i = sch_stage_index(st, stage), j = sch_stage_index(st, buf);
    CHECK(i >= 0 && j >= 0);
    return i >= 0 && j >= 0 && sch_stage_reads(&st->stages[i], st->stages[j].buf);
}

/* Inlining b moves its read of a into d; inlining a then rewrites c and d
 * (both found through the readers index), leaving d reading x only. */
static void test_inline_moves_reads(void)
{
    te_graph *g = diamond();
    sch_state *st = replay(g, "compute_inline b\ncompute_inline a\n", SMELT_OK);
    if (st) {
        CHECK(reads(st, "d", "x") && reads(st, "d", "c") && !reads(st, "d", "a"));
        CHECK(reads(st, "c", "x") && !reads(st, "c", "a"));
        const int *items;
        int n;
        CHECK(sch_index_readers(st, sch_stage_index(st, "x"), &items, &n));
        bool has_c = false, has_d = false; /* may hold stale entries (a); c and d must be there */
        for (int k = 0; k < n; k++) {
            has_c |= items[k] == sch_stage_index(st, "c");
            has_d |= items[k] == sch_stage_index(st, "d");
        }
        CHECK(has_c && has_d);
    }
    sch_state_free(st);
    te_graph_free(g);
}

/* a has two consumers: compute_at refuses, naming the other one; after
 * inlining c, d is its only reader. */
static void test_compute_at_consumers(void)
{
    te_graph *g = diamond();
    sch_state_free(replay(g, "compute_at a b i0\n", SMELT_ERR_ARG));
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "another consumer, 'c'");
    smelt_ctx_clear(g_ctx);
    sch_state_free(replay(g, "compute_inline b\ncompute_inline c\ncompute_at a d i0\n", SMELT_OK));
    /* a stage computed at a loop of b cannot be inlined away with b */
    sch_state_free(replay(g, "compute_inline c\ncompute_at a d i0\ncompute_inline d\n", SMELT_ERR_ARG));
    smelt_ctx_clear(g_ctx);
    te_graph_free(g);
}

/* Stages added by cache_write are found by name, and readers follow the
 * rewritten bodies (d reads d.local, which reads b and c). */
static void test_cache_write_names(void)
{
    te_graph *g = diamond();
    sch_state *st = replay(g, "cache_write d\ncompute_inline b\n", SMELT_OK);
    if (st) {
        CHECK(sch_stage_index(st, "d.local") == st->n_stages - 1);
        CHECK(reads(st, "d", "d.local") && reads(st, "d.local", "a") && !reads(st, "d.local", "b"));
        CHECK(sch_stage_index(st, "no such stage") < 0);
    }
    sch_state_free(st);
    te_graph_free(g);
}

/* A chain of 3000 stages inlined one by one (the shape that was quadratic):
 * the last stage ends up reading the input only. */
static void test_long_chain(void)
{
    enum { N = 3000 };
    te_graph *g = te_graph_new(g_ctx);
    const te_tensor *t = te_placeholder(g, "x", SMELT_DT_FLOAT32, 2, k_shape);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    char name[32];
    for (int i = 0; i < N && t; i++) {
        snprintf(name, sizeof name, "t%d", i);
        t = add_const(g, name, t, 1.0 / (i + 1));
        if (i < N - 1) smelt_strbuf_printf(&sb, "compute_inline %s\n", name);
    }
    CHECK(t && smelt_ptrvec_push(&g->outputs, (void *)t));
    sch_state *st = replay(g, smelt_strbuf_cstr(&sb), SMELT_OK); /* ~2 nodes per add: under the cap */
    if (st) {
        snprintf(name, sizeof name, "t%d", N - 1);
        CHECK(reads(st, name, "x") && !reads(st, name, "t0"));
        int inlined = 0;
        for (int i = 0; i < st->n_stages; i++) inlined += st->stages[i].inlined;
        CHECK(inlined == N - 1);
    }
    sch_state_free(st);
    smelt_ctx_clear(g_ctx);
    smelt_strbuf_fini(&sb);
    te_graph_free(g);
}

int main(void)
{
    g_ctx = smelt_ctx_new();
    test_te_readers();
    test_inline_moves_reads();
    test_compute_at_consumers();
    test_cache_write_names();
    test_long_chain();
    smelt_ctx_free(g_ctx);
    TEST_MAIN_END();
}
