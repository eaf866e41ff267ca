/* Lowering against the te interpreter: for small te graphs (matmul + relu,
 * a padded 2-D convolution, a softmax), the default schedule, hand-written
 * schedules and hundreds of random legal schedules must all compute what
 * the te definition says.  Runs the lowered loop IR with the tir
 * interpreter, so it checks scheduling and lowering without codegen. */
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "ops/op.h"
#include "test_util.h"
#include "tir/interp.h"
#include "test_hw.h"

typedef te_graph *(*graph_fn)(smelt_ctx *ctx);

/* ---- te graphs ---- */

static ir_expr *mm_body(te_graph *g, ir_expr *const *idx, void *user)
{
    te_tensor **ab = user;
    ir_axis k = te_reduce_axis(g, "k", ab[0]->buf->shape[1]);
    ir_expr *kv = ir_var_ref(&g->b, k.var);
    ir_expr *ia[2] = {idx[0], kv}, *ib[2] = {kv, idx[1]};
    ir_expr *prod = ir_mul(&g->b, te_read(g, ab[0], ia), te_read(g, ab[1], ib));
    return te_reduce(g, IR_REDUCE_SUM, prod, 1, &k);
}

static ir_expr *relu_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return ir_binary(&g->b, IR_MAX, te_read(g, user, idx), ir_const_float(&g->b, SMELT_DT_FLOAT32, 0));
}

static te_graph *matmul_relu(smelt_ctx *ctx)
{
    te_graph *g = te_graph_new(ctx);
    int64_t sa[2] = {13, 7}, sb[2] = {7, 19}, sc[2] = {13, 19};
    static te_tensor *ab[2];
    ab[0] = te_placeholder(g, "A", SMELT_DT_FLOAT32, 2, sa);
    ab[1] = te_placeholder(g, "B", SMELT_DT_FLOAT32, 2, sb);
    te_tensor *c = te_compute(g, "C", SMELT_DT_FLOAT32, 2, sc, mm_body, ab, "reduce");
    te_mark_output(g, te_compute(g, "D", SMELT_DT_FLOAT32, 2, sc, relu_body, c, NULL));
    return g;
}

/* out[c,h,w] = sum_{rc,ry,rx} pad(X)[rc, h+ry-1, w+rx-1] * W[c,rc,ry,rx] */
static ir_expr *pad_body(te_graph *g, ir_expr *const *idx, void *user)
{
    te_tensor *x = user;
    ir_builder *b = &g->b;
    ir_expr *h = ir_sub(b, idx[1], ir_int(b, 1)), *w = ir_sub(b, idx[2], ir_int(b, 1));
    ir_expr *in = ir_binary(b, IR_AND,
                            ir_binary(b, IR_AND, ir_binary(b, IR_GE, h, ir_int(b, 0)),
                                      ir_binary(b, IR_LT, h, ir_int(b, x->buf->shape[1]))),
                            ir_binary(b, IR_AND, ir_binary(b, IR_GE, w, ir_int(b, 0)),
                                      ir_binary(b, IR_LT, w, ir_int(b, x->buf->shape[2]))));
    ir_expr *xi[3] = {idx[0], h, w};
    return ir_select(b, in, te_read(g, x, xi), ir_const_float(b, SMELT_DT_FLOAT32, 0));
}

static ir_expr *conv_body(te_graph *g, ir_expr *const *idx, void *user)
{
    te_tensor **pw = user;
    ir_builder *b = &g->b;
    ir_axis r[3] = {te_reduce_axis(g, "rc", pw[1]->buf->shape[1]), te_reduce_axis(g, "ry", 3),
                    te_reduce_axis(g, "rx", 3)};
    ir_expr *rc = ir_var_ref(b, r[0].var), *ry = ir_var_ref(b, r[1].var), *rx = ir_var_ref(b, r[2].var);
    ir_expr *pi[3] = {rc, ir_add(b, idx[1], ry), ir_add(b, idx[2], rx)};
    ir_expr *wi[4] = {idx[0], rc, ry, rx};
    return te_reduce(g, IR_REDUCE_SUM, ir_mul(b, te_read(g, pw[0], pi), te_read(g, pw[1], wi)), 3, r);
}

static te_graph *conv2d(smelt_ctx *ctx)
{
    te_graph *g = te_graph_new(ctx);
    int64_t sx[3] = {3, 9, 10}, sw[4] = {5, 3, 3, 3}, sp[3] = {3, 11, 12}, so[3] = {5, 9, 10};
    te_tensor *x = te_placeholder(g, "X", SMELT_DT_FLOAT32, 3, sx);
    static te_tensor *pw[2];
    pw[1] = te_placeholder(g, "W", SMELT_DT_FLOAT32, 4, sw);
    pw[0] = te_compute(g, "P", SMELT_DT_FLOAT32, 3, sp, pad_body, x, NULL);
    te_mark_output(g, te_compute(g, "Y", SMELT_DT_FLOAT32, 3, so, conv_body, pw, "conv"));
    return g;
}

static ir_expr *rowmax_body(te_graph *g, ir_expr *const *idx, void *user)
{
    te_tensor *x = user;
    ir_axis k = te_reduce_axis(g, "k", x->buf->shape[1]);
    ir_expr *xi[2] = {idx[0], ir_var_ref(&g->b, k.var)};
    return te_reduce(g, IR_REDUCE_MAX, te_read(g, x, xi), 1, &k);
}

typedef struct sm_args {
    te_tensor *x, *mx, *e, *sum;
} sm_args;

static ir_expr *exp_body(te_graph *g, ir_expr *const *idx, void *user)
{
    sm_args *a = user;
    ir_expr *mi[1] = {idx[0]};
    ir_expr *d = ir_sub(&g->b, te_read(g, a->x, idx), te_read(g, a->mx, mi));
    return ir_call(&g->b, IR_CALL_EXP, SMELT_DT_FLOAT32, 1, &d);
}

static ir_expr *rowsum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    sm_args *a = user;
    ir_axis k = te_reduce_axis(g, "k", a->x->buf->shape[1]);
    ir_expr *ei[2] = {idx[0], ir_var_ref(&g->b, k.var)};
    return te_reduce(g, IR_REDUCE_SUM, te_read(g, a->e, ei), 1, &k);
}

static ir_expr *div_body(te_graph *g, ir_expr *const *idx, void *user)
{
    sm_args *a = user;
    ir_expr *si[1] = {idx[0]};
    return ir_binary(&g->b, IR_DIV, te_read(g, a->e, idx), te_read(g, a->sum, si));
}

static te_graph *softmax(smelt_ctx *ctx)
{
    te_graph *g = te_graph_new(ctx);
    int64_t sx[2] = {6, 21}, sr[1] = {6};
    static sm_args a;
    a.x = te_placeholder(g, "X", SMELT_DT_FLOAT32, 2, sx);
    a.mx = te_compute(g, "M", SMELT_DT_FLOAT32, 1, sr, rowmax_body, a.x, "reduce");
    a.e = te_compute(g, "E", SMELT_DT_FLOAT32, 2, sx, exp_body, &a, NULL);
    a.sum = te_compute(g, "S", SMELT_DT_FLOAT32, 1, sr, rowsum_body, &a, "reduce");
    te_mark_output(g, te_compute(g, "Y", SMELT_DT_FLOAT32, 2, sx, div_body, &a, NULL));
    return g;
}

/* ---- running ---- */

static float *random_data(int64_t n, uint64_t seed)
{
    float *d = malloc(sizeof(float) * (size_t)(n ? n : 1));
    uint64_t x = seed | 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        d[i] = (float)((double)(x >> 11) / 9007199254740992.0 * 2 - 1);
    }
    return d;
}

static int64_t numel(const ir_buffer *b)
{
    int64_t n = 1;
    for (int i = 0; i < b->rank; i++) n *= b->shape[i];
    return n;
}

/* Expected outputs from the te interpreter; placeholders get random data. */
static smelt_tensor *expected(smelt_ctx *ctx, te_graph *g, float **inputs)
{
    smelt_tensor *data = calloc((size_t)g->tensors.len + 1, sizeof *data);
    int k = 0;
    for (int i = 0; i < g->tensors.len; i++) {
        te_tensor *t = g->tensors.items[i];
        if (t->kind != TE_PLACEHOLDER) continue;
        data[i].dtype = t->buf->dtype;
        data[i].rank = t->buf->rank;
        memcpy(data[i].dims, t->buf->shape, sizeof(int64_t) * (size_t)t->buf->rank);
        data[i].data = inputs[k++];
    }
    if (te_eval_graph(ctx, g, data) != SMELT_OK) return NULL;
    return data;
}

/* Lower with schedule `text` and compare to want; returns false on mismatch. */
static bool check_schedule(smelt_ctx *ctx, te_graph *g, const sch_schedule *s, float **inputs,
                           const smelt_tensor *want, const char *what)
{
    sch_state *st;
    if (sch_state_build(ctx, g, s, &st) != SMELT_OK) {
        fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(ctx));
        return false;
    }
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder b;
    ir_builder_init(&b, &ar);
    ir_func *f;
    bool ok = lower_func(ctx, st, &b, "f", &f) == SMELT_OK;
    tir_interp it;
    tir_interp_init(&it, ctx);
    float *outs[4] = {0};
    int n_in = 0, n_out = 0;
    for (int i = 0; ok && i < f->n_params; i++) {
        ir_buffer *p = f->params[i];
        float *d = p->kind == IR_BUF_OUTPUT ? (outs[n_out++] = calloc((size_t)numel(p), sizeof(float)))
                                            : inputs[n_in++];
        ok = tir_interp_bind_buffer(&it, p, d, numel(p)) == SMELT_OK;
    }
    if (ok && tir_interp_run(&it, f->body) != SMELT_OK) ok = false;
    for (int o = 0; ok && o < n_out; o++) {
        const te_tensor *t = g->outputs.items[o];
        const float *w = want[t->index].data;
        for (int64_t i = 0; ok && i < numel(t->buf); i++)
            if (fabsf(outs[o][i] - w[i]) > 1e-4f + 1e-4f * fabsf(w[i])) {
                fprintf(stderr, "%s: element %lld: got %g want %g\n", what, (long long)i,
                        outs[o][i], w[i]);
                ok = false;
            }
    }
    if (!ok) {
        smelt_strbuf sb;
        smelt_strbuf_init(&sb);
        sch_schedule_print(s, &sb);
        fprintf(stderr, "%s failed (%s) with schedule:\n%s", what, smelt_ctx_message(ctx),
                smelt_strbuf_cstr(&sb));
        smelt_strbuf_fini(&sb);
    }
    for (int o = 0; o < n_out; o++) free(outs[o]);
    tir_interp_fini(&it);
    smelt_arena_fini(&ar);
    sch_state_free(st);
    smelt_ctx_clear(ctx);
    return ok;
}

static void run_graph(const char *name, graph_fn make, const char *const *fixed, int n_random)
{
    smelt_ctx *ctx = smelt_ctx_new();
    te_graph *g = make(ctx);
    float *inputs[8];
    int n_in = 0;
    for (int i = 0; i < g->tensors.len; i++) {
        te_tensor *t = g->tensors.items[i];
        if (t->kind == TE_PLACEHOLDER) inputs[n_in++] = random_data(numel(t->buf), 77 + (uint64_t)i);
    }
    smelt_tensor *want = expected(ctx, g, inputs);
    CHECK(want != NULL);
    if (!want) return;
    char what[128];
    sch_schedule s;
    sch_schedule_init(&s);
    CHECK(sch_default(ctx, g, test_hw(8), &s) == SMELT_OK);
    snprintf(what, sizeof what, "%s default", name);
    CHECK(check_schedule(ctx, g, &s, inputs, want, what));
    sch_schedule_fini(&s);
    /* the GPU targets' default (bound loops run serially in the interpreter) */
    sch_schedule_init(&s);
    CHECK(sch_default(ctx, g, &cg_target_find("opencl")->hw, &s) == SMELT_OK);
    snprintf(what, sizeof what, "%s GPU default", name);
    CHECK(check_schedule(ctx, g, &s, inputs, want, what));
    sch_schedule_fini(&s);
    for (int k = 0; fixed && fixed[k]; k++) {
        sch_schedule_init(&s);
        CHECK(sch_schedule_parse(ctx, fixed[k], &s) == SMELT_OK);
        snprintf(what, sizeof what, "%s fixed %d", name, k);
        CHECK(check_schedule(ctx, g, &s, inputs, want, what));
        sch_schedule_fini(&s);
    }
    for (int k = 0; k < n_random; k++) {
        sch_schedule_init(&s);
        CHECK(sch_random(ctx, g, (uint64_t)k + 1, 12, &s) == SMELT_OK);
        snprintf(what, sizeof what, "%s random %d", name, k);
        CHECK(check_schedule(ctx, g, &s, inputs, want, what));
        sch_schedule_fini(&s);
    }
    for (int i = 0; i < g->tensors.len; i++)
        if (((te_tensor *)g->tensors.items[i])->kind == TE_COMPUTE) free(want[i].data);
    free(want);
    for (int i = 0; i < n_in; i++) free(inputs[i]);
    te_graph_free(g);
    smelt_ctx_free(ctx);
}

static void test_illegal_steps(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    te_graph *g = matmul_relu(ctx);
    const char *bad[] = {"vectorize C k", "parallel C k", "compute_inline C", "split C nope 4",
                         "fuse C i0 k", "compute_at C D nope", "split Q i0 2",
                         "rfactor C nope 4", "rfactor C i0 4", "rfactor D i0 4",
                         "split C i0 2\nrfactor C k 4", "rfactor C k 4\nrfactor C k 2",
                         "rfactor C k 4\nvectorize C k.i", "rfactor C k",
                         /* GPU bindings: a reduction loop, an unknown index, no index */
                         "bind C k threadIdx.x", "bind C i0 warpIdx.x", "bind C i0", NULL};
    for (int i = 0; bad[i]; i++) {
        sch_schedule s;
        sch_schedule_init(&s);
        sch_state *st = NULL;
        smelt_status r = sch_schedule_parse(ctx, bad[i], &s);
        if (r == SMELT_OK) r = sch_state_build(ctx, g, &s, &st);
        CHECK(r == SMELT_ERR_ARG);
        CHECK(strlen(smelt_ctx_message(ctx)) > 0);
        sch_state_free(st);
        sch_schedule_fini(&s);
        smelt_ctx_clear(ctx);
    }
    te_graph_free(g);
    smelt_ctx_free(ctx);
}

/* bind's text form survives a print and a parse */
static void test_bind_text(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    static const char text[] = "split C i0 4\nbind C i0.o blockIdx.x\nbind C i0.i threadIdx.x\n";
    sch_schedule s;
    sch_schedule_init(&s);
    CHECK(sch_schedule_parse(ctx, text, &s) == SMELT_OK);
    CHECK(s.n == 3 && s.steps[1].kind == SCH_BIND && strcmp(s.steps[1].target, "blockIdx.x") == 0);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    sch_schedule_print(&s, &sb);
    CHECK(strcmp(smelt_strbuf_cstr(&sb), text) == 0);
    smelt_strbuf_fini(&sb);
    sch_schedule_fini(&s);
    smelt_ctx_free(ctx);
}

int main(void)
{
    test_bind_text();
    static const char *const mm_fixed[] = {
        "tile D i0 i1 4 8\ncompute_at C D i1.o\nvectorize D i1.i\nparallel D i0.o",
        "tile D i0 i1 8 16\ncache_write C\ntile C i0 i1 8 16\ncompute_at C.local C i1.o\n"
        "reorder C.local i0 k i1\nvectorize C.local i1\ncompute_at C D i1.o",
        "split C k 3\nreorder C k.o i0 k.i i1\nunroll C k.i\nfuse D i0 i1\nparallel D i0.i1",
        /* k's partial sums kept apart, k.i a data loop: 4 does not divide k */
        "rfactor C k 4\nreorder C.rf i0 i1 k.o k.i\nvectorize C.rf k.i\ncompute_at C.rf C i1",
        "rfactor C k 64\nunroll C k.i\nparallel C i0",
        /* GPU: D's tiles to blocks and threads, C's accumulator in the thread */
        "tile D i0 i1 4 8\nbind D i0.o blockIdx.x\nbind D i1.i threadIdx.x\ncompute_at C D i1.i",
        /* GPU: A's and B's tiles staged in shared memory at C's k.o, loaded by D's threads */
        "tile D i0 i1 4 8\nbind D i0.o blockIdx.x\nbind D i1.i threadIdx.x\ncompute_at C D i1.i\n"
        "split C k 3\ncache_read C A k.o\ncache_read C B k.o",
        /* a 2-D block tile, each thread a strided 2 x 2 register tile (rows ty, ty + 4) */
        "split D i0 8\nsplit D i1 8\nsplit D i0.i 4\nsplit D i1.i 4\n"
        "reorder D i0.o i1.o i0.i.i i1.i.i i0.i.o i1.i.o\nfuse D i0.o i1.o\nfuse D i0.i.i i1.i.i\n"
        "bind D i0.o.i1.o blockIdx.x\nbind D i0.i.i.i1.i.i threadIdx.x\nunroll D i0.i.o\n"
        "compute_at C D i0.i.i.i1.i.i\nsplit C k 4\nreorder C k.o k.i i0 i1\n"
        "cache_read C A k.o\ncache_read C B k.o",
        /* the tile loaded at block level: C itself bound, k.o outside its threads */
        "cache_write C\nsplit C i1 8\nfuse C i0 i1.o\nbind C i0.i1.o blockIdx.x\n"
        "bind C i1.i threadIdx.x\ncompute_at C.local C i1.i\nsplit C.local k 2\n"
        "cache_read C.local B k.o",
        NULL};
    static const char *const conv_fixed[] = {
        "compute_inline P\nreorder Y i0 rc ry rx i1 i2\nsplit Y i2 4\nvectorize Y i2.i",
        "split Y i1 4\ncompute_at P Y i1.o",
        NULL};
    static const char *const sm_fixed[] = {
        "compute_inline E\ncompute_at S Y i0\nsplit Y i1 8\nvectorize Y i1.i",
        /* 21 = 2 x 8 + 5: the last partial vector adds identities */
        "compute_inline E\nrfactor M k 8\nreorder M.rf i0 k.o k.i\nvectorize M.rf k.i\n"
        "compute_at M.rf M i0\nrfactor S k 8\nsplit S.rf k.i 4\nvectorize S.rf k.i.i\n"
        "parallel S i0\ncompute_at S.rf S i0",
        "rfactor S k 5\nrfactor M k 21\ncompute_at S.rf S i0\nsplit S.rf k.o 2",
        NULL};
    test_illegal_steps();
    run_graph("matmul_relu", matmul_relu, mm_fixed, 200);
    run_graph("conv2d", conv2d, conv_fixed, 200);
    run_graph("softmax", softmax, sm_fixed, 200);
    TEST_MAIN_END();
}
