/* The cache_read schedule step (GPU shared-memory tiles): its text form,
 * the errors that name it (replay, lowering, code generation), the loop IR
 * it lowers to, the kernels it becomes in OpenCL C and CUDA (tiles in
 * __local / __shared__ memory, copied by every thread between barriers),
 * and the default GPU rules' tiled matrix products and convolutions
 * against the te reference (the tir interpreter runs thread loops serially,
 * which is what a tile's copy inside a thread means). */
#include <math.h>

#include "lower/lower.h"
#include "sched/gpu_tile.h"
#include "test_codegen_util.h"
#include "tir/interp.h"

/* ---- te graphs ---- */

typedef struct mm_args {
    te_tensor *a, *b;
} mm_args;

static ir_expr *mm_body(te_graph *g, ir_expr *const *idx, void *user)
{
    mm_args *m = user;
    ir_axis k = te_reduce_axis(g, "k", m->a->buf->shape[1]);
    ir_expr *kv = ir_var_ref(&g->b, k.var);
    ir_expr *ia[2] = {idx[0], kv}, *ib[2] = {kv, idx[1]};
    return te_reduce(g, IR_REDUCE_SUM, ir_mul(&g->b, te_read(g, m->a, ia), te_read(g, m->b, ib)), 1, &k);
}

static ir_expr *relu_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return ir_binary(&g->b, IR_MAX, te_read(g, user, idx), ir_const_float(&g->b, SMELT_DT_FLOAT32, 0));
}

/* D = relu(A[m, k] @ B[k, n]) */
static te_graph *matmul_relu(smelt_ctx *ctx, int64_t m, int64_t k, int64_t n)
{
    te_graph *g = te_graph_new(ctx);
    int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
    mm_args *a = smelt_arena_alloc(&g->arena, sizeof *a);
    a->a = te_placeholder(g, "A", SMELT_DT_FLOAT32, 2, sa);
    a->b = te_placeholder(g, "B", SMELT_DT_FLOAT32, 2, sb);
    te_tensor *c = te_compute(g, "C", SMELT_DT_FLOAT32, 2, sc, mm_body, a, "matmul");
    te_mark_output(g, te_compute(g, "D", SMELT_DT_FLOAT32, 2, sc, relu_body, c, NULL));
    return g;
}

/* Y[n, co, oh, ow] = sum pad(X)[n, rc, oh*s + ry - k/2, ow*s + rx - k/2] * W[co, rc, ry, rx]
 * over a k x k window */
typedef struct conv_args {
    te_tensor *x, *p, *w;
    int64_t stride, k;
} conv_args;

static ir_expr *pad_body(te_graph *g, ir_expr *const *idx, void *user)
{
    conv_args *c = user;
    ir_builder *b = &g->b;
    ir_expr *h = ir_sub(b, idx[2], ir_int(b, c->k / 2)), *w = ir_sub(b, idx[3], ir_int(b, c->k / 2));
    ir_expr *in = ir_binary(b, IR_AND,
                            ir_binary(b, IR_AND, ir_binary(b, IR_GE, h, ir_int(b, 0)),
                                      ir_binary(b, IR_LT, h, ir_int(b, c->x->buf->shape[2]))),
                            ir_binary(b, IR_AND, ir_binary(b, IR_GE, w, ir_int(b, 0)),
                                      ir_binary(b, IR_LT, w, ir_int(b, c->x->buf->shape[3]))));
    ir_expr *xi[4] = {idx[0], idx[1], h, w};
    return ir_select(b, in, te_read(g, c->x, xi), ir_const_float(b, SMELT_DT_FLOAT32, 0));
}

static ir_expr *conv_body(te_graph *g, ir_expr *const *idx, void *user)
{
    conv_args *c = user;
    ir_builder *b = &g->b;
    ir_axis r[3] = {te_reduce_axis(g, "rc", c->w->buf->shape[1]), te_reduce_axis(g, "ry", c->k),
                    te_reduce_axis(g, "rx", c->k)};
    ir_expr *rc = ir_var_ref(b, r[0].var), *ry = ir_var_ref(b, r[1].var), *rx = ir_var_ref(b, r[2].var);
    ir_expr *s = ir_int(b, c->stride);
    ir_expr *pi[4] = {idx[0], rc, ir_add(b, ir_mul(b, idx[2], s), ry), ir_add(b, ir_mul(b, idx[3], s), rx)};
    ir_expr *wi[4] = {idx[1], rc, ry, rx};
    return te_reduce(g, IR_REDUCE_SUM, ir_mul(b, te_read(g, c->p, pi), te_read(g, c->w, wi)), 3, r);
}

static te_graph *conv_kxk(smelt_ctx *ctx, int64_t k, int64_t ci, int64_t co, int64_t h, int64_t w,
                          int64_t stride, bool relu)
{
    te_graph *g = te_graph_new(ctx);
    int64_t pad = k / 2 * 2;
    int64_t sx[4] = {1, ci, h, w}, sw[4] = {co, ci, k, k}, sp[4] = {1, ci, h + pad, w + pad};
    int64_t so[4] = {1, co, (h + pad - k) / stride + 1, (w + pad - k) / stride + 1};
    conv_args *c = smelt_arena_alloc(&g->arena, sizeof *c);
    c->stride = stride;
    c->k = k;
    c->x = te_placeholder(g, "X", SMELT_DT_FLOAT32, 4, sx);
    c->w = te_placeholder(g, "W", SMELT_DT_FLOAT32, 4, sw);
    c->p = te_compute(g, "P", SMELT_DT_FLOAT32, 4, sp, pad_body, c, NULL);
    te_tensor *y = te_compute(g, "Y", SMELT_DT_FLOAT32, 4, so, conv_body, c, "conv");
    te_mark_output(g, relu ? te_compute(g, "R", SMELT_DT_FLOAT32, 4, so, relu_body, y, NULL) : y);
    return g;
}

static te_graph *conv3x3(smelt_ctx *ctx, int64_t ci, int64_t co, int64_t h, int64_t w, int64_t stride,
                         bool relu)
{
    return conv_kxk(ctx, 3, ci, co, h, w, stride, relu);
}

/* ---- helpers ---- */

static int64_t numel(const ir_buffer *b)
{
    int64_t n = 1;
    for (int i = 0; i < b->rank; i++) n *= b->shape[i];
    return n;
}

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

/* Replays `text` on g and lowers it (hw: the target's, or NULL); the
 * lowered function in *out (in t's arena), or the error status. */
static smelt_status lower_text(smelt_ctx *ctx, te_graph *g, const char *text, const smelt_hw *hw,
                               cgt_prog *t, ir_func **out, sch_state **st)
{
    sch_schedule s;
    sch_schedule_init(&s);
    smelt_status r = sch_schedule_parse(ctx, text, &s);
    *st = NULL;
    if (r == SMELT_OK) r = sch_state_build(ctx, g, &s, st);
    if (r == SMELT_OK) {
        (*st)->hw = hw;
        r = lower_func(ctx, *st, &t->b, "f0_test", out);
    }
    sch_schedule_fini(&s);
    return r;
}

/* The lowered function of schedule s against the te interpreter. */
static bool matches_reference(smelt_ctx *ctx, te_graph *g, const sch_schedule *s, const smelt_hw *hw,
                              const char *what)
{
    float *inputs[8];
    int n_in = 0;
    smelt_tensor *data = calloc((size_t)g->tensors.len + 1, sizeof *data);
    for (int i = 0; i < g->tensors.len; i++) {
        te_tensor *t = g->tensors.items[i];
        if (t->kind != TE_PLACEHOLDER) continue;
        inputs[n_in] = random_data(numel(t->buf), 31 + (uint64_t)i);
        data[i] = (smelt_tensor){.dtype = t->buf->dtype, .rank = t->buf->rank, .data = inputs[n_in++]};
        memcpy(data[i].dims, t->buf->shape, sizeof(int64_t) * (size_t)t->buf->rank);
    }
    bool ok = te_eval_graph(ctx, g, data) == SMELT_OK;
    sch_state *st = NULL;
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder b;
    ir_builder_init(&b, &ar);
    ir_func *f = NULL;
    if (ok) ok = sch_state_build(ctx, g, s, &st) == SMELT_OK;
    if (ok) {
        st->hw = hw;
        ok = lower_func(ctx, st, &b, "f", &f) == SMELT_OK;
    }
    tir_interp it;
    tir_interp_init(&it, ctx);
    float *out = NULL;
    int k = 0;
    for (int i = 0; ok && i < f->n_params; i++) {
        ir_buffer *p = f->params[i];
        float *d = p->kind == IR_BUF_OUTPUT ? (out = calloc((size_t)numel(p), sizeof(float))) : inputs[k++];
        ok = tir_interp_bind_buffer(&it, p, d, numel(p)) == SMELT_OK;
    }
    if (ok) ok = tir_interp_run(&it, f->body) == SMELT_OK;
    const te_tensor *o = g->outputs.items[0];
    for (int64_t i = 0; ok && i < numel(o->buf); i++) {
        float w = ((float *)data[o->index].data)[i];
        if (fabsf(out[i] - w) > 1e-4f + 1e-4f * fabsf(w)) {
            fprintf(stderr, "%s: element %lld: got %g want %g\n", what, (long long)i, out[i], w);
            ok = false;
        }
    }
    if (!ok) {
        smelt_strbuf sb;
        smelt_strbuf_init(&sb);
        sch_schedule_print(s, &sb);
        fprintf(stderr, "%s failed (%s):\n%s", what, smelt_ctx_message(ctx), smelt_strbuf_cstr(&sb));
        smelt_strbuf_fini(&sb);
    }
    free(out);
    tir_interp_fini(&it);
    smelt_arena_fini(&ar);
    sch_state_free(st);
    for (int i = 0; i < g->tensors.len; i++)
        if (((te_tensor *)g->tensors.items[i])->kind == TE_COMPUTE) free(data[i].data);
    free(data);
    for (int i = 0; i < n_in; i++) free(inputs[i]);
    smelt_ctx_clear(ctx);
    return ok;
}

/* The tiled schedule of the tests: D's 2-D block tile, strided 2 x 2
 * register tiles, C at the thread loop, A and B staged per 8 k. */
static const char mm_tiled[] =
    "split D i0 8\nsplit D i1 16\nsplit D i0.i 4\nsplit D i1.i 8\n"
    "reorder D i0.o i1.o i0.i.i i1.i.i i0.i.o i1.i.o\nfuse D i0.o i1.o\nfuse D i0.i.i i1.i.i\n"
    "bind D i0.o.i1.o blockIdx.x\nbind D i0.i.i.i1.i.i threadIdx.x\nunroll D i0.i.o\nunroll D i1.i.o\n"
    "compute_at C D i0.i.i.i1.i.i\nsplit C k 8\nreorder C k.o k.i i0 i1\n"
    "cache_read C A k.o\ncache_read C B k.o\n";

/* ---- the step's text form and replay errors ---- */

static void test_text(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    static const char text[] = "split C k 4\ncache_read C A k.o\n";
    sch_schedule s;
    sch_schedule_init(&s);
    CHECK(sch_schedule_parse(ctx, text, &s) == SMELT_OK);
    CHECK(s.n == 2 && s.steps[1].kind == SCH_CACHE_READ && !strcmp(s.steps[1].target, "A") &&
          !strcmp(s.steps[1].iters[0], "k.o"));
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    sch_schedule_print(&s, &sb);
    CHECK(strcmp(smelt_strbuf_cstr(&sb), text) == 0);
    smelt_strbuf_fini(&sb);
    sch_schedule_fini(&s);
    /* a missing word */
    sch_schedule_init(&s);
    CHECK(sch_schedule_parse(ctx, "cache_read C A", &s) == SMELT_ERR_ARG);
    CHECK(strstr(smelt_ctx_message(ctx), "cache_read STAGE BUFFER ITER") != NULL);
    sch_schedule_fini(&s);
    smelt_ctx_free(ctx);
}

static void test_replay_errors(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    te_graph *g = matmul_relu(ctx, 13, 7, 19);
    static const char *const bad[][2] = {
        {"cache_read C Z k", "no buffer (input or stage) named 'Z'"},
        {"cache_read C D k", "the stage does not read 'D'"},
        {"cache_read C C k", "cannot stage its own values"},
        {"cache_read C A nope", "no loop named 'nope'"},
        {"split C k 2\ncache_read C A k", "loop 'k' was split or fused"},
        {"cache_read C A k\ncache_read C A k", "'A' is already staged"},
        {"cache_read C A k\nsplit C k 2", "has a tile staged in it (cache_read)"},
        {"compute_at C D i1\ncache_read D C i0", "'C' is computed at a loop"},
        {"cache_read D C i0\ncompute_at C D i1", "must be computed at the root"},
        {"cache_read C A k\ncache_write C", "cache_write must come before cache_read"},
        {"cache_read C A k\nrfactor C k 2", "rfactor must come before"},
        {"cache_read D C i0\ncompute_inline C", "a reduction cannot be inlined"},
        {"cache_read P A k", "no stage named 'P'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sch_schedule s;
        sch_schedule_init(&s);
        sch_state *st = NULL;
        smelt_status r = sch_schedule_parse(ctx, bad[i][0], &s);
        if (r == SMELT_OK) r = sch_state_build(ctx, g, &s, &st);
        CHECK(r == SMELT_ERR_ARG);
        if (!strstr(smelt_ctx_message(ctx), bad[i][1]))
            fprintf(stderr, "'%s': message '%s' lacks '%s'\n", bad[i][0], smelt_ctx_message(ctx), bad[i][1]);
        CHECK(strstr(smelt_ctx_message(ctx), bad[i][1]) != NULL);
        sch_state_free(st);
        sch_schedule_fini(&s);
        smelt_ctx_clear(ctx);
    }
    te_graph_free(g);
    smelt_ctx_free(ctx);
}

/* ---- lowering ---- */

static void test_lowering(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    te_graph *g = matmul_relu(ctx, 13, 20, 19);
    const smelt_hw *cuda = &cg_target_find("cuda")->hw;
    cgt_prog t;
    cgt_init(&t);
    ir_func *f = NULL;
    sch_state *st = NULL;
    CHECK(lower_text(ctx, g, mm_tiled, cuda, &t, &f, &st) == SMELT_OK);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    if (f) ir_stmt_print(f->body, 0, &sb);
    const char *ir = smelt_strbuf_cstr(&sb);
    /* tiles: A's 8 rows x 8 k (a row of 9 words: odd, no bank conflicts),
     * B's 8 k x 16 columns; each thread's accumulators: its 2 x 2 outputs */
    CHECK(strstr(ir, "allocate shared A.shared: f32[8,9]") != NULL);
    CHECK(strstr(ir, "allocate shared B.shared: f32[8,17]") != NULL);
    CHECK(strstr(ir, "allocate C.at: f32[2,2]") != NULL);
    CHECK(strstr(ir, "threadIdx.x for A.shared.t in [0, +32)") != NULL);
    /* C's update reads only the tiles: no bounds test on the accumulation */
    CHECK(strstr(ir, "C.at[") && !strstr(ir, "if (((C.k.o"));
    if (getenv("SHOW_IR")) fprintf(stderr, "%s", ir);
    smelt_strbuf_fini(&sb);
    sch_state_free(st);
    cgt_fini(&t);

    /* errors named by the step: a CPU target, a tile over the shared
     * memory, no threads to load it */
    static const char *const bad[][3] = {
        {"generic", "split C k 4\ncache_read C A k.o",
         "cache_read C A k.o: the target is a CPU, which has no shared memory"},
        {"opencl", "cache_read C A k", "cache_read C A k: no threadIdx.x loop encloses the loop"},
        {"opencl", "bind D i0 blockIdx.x\nbind D i1 threadIdx.x\ncompute_at C D i1\ncache_read C B i0",
         "cache_read C B i0: its tile needs 52800 bytes of shared memory (with the stage's other "
         "tiles), more than the target's 32768 per block"},
    };
    te_graph *big = matmul_relu(ctx, 64, 400, 32);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cgt_init(&t);
        smelt_status r = lower_text(ctx, i == 2 ? big : g, bad[i][1], &cg_target_find(bad[i][0])->hw, &t,
                                    &f, &st);
        CHECK(r == SMELT_ERR_ARG);
        if (!strstr(smelt_ctx_message(ctx), bad[i][2]))
            fprintf(stderr, "message '%s' lacks '%s'\n", smelt_ctx_message(ctx), bad[i][2]);
        CHECK(strstr(smelt_ctx_message(ctx), bad[i][2]) != NULL);
        sch_state_free(st);
        cgt_fini(&t);
        smelt_ctx_clear(ctx);
    }
    te_graph_free(big);

    /* against the reference: tiles loaded inside the threads, at block
     * level (C's k.o outside its thread loop), several edges */
    static const char *const good[] = {
        mm_tiled,
        /* C's k.o at block level: its thread loop inside, its accumulators the block's */
        "split D i1 8\nfuse D i0 i1.o\nbind D i0.i1.o blockIdx.x\nbind D i1.i threadIdx.x\n"
        "compute_at C D i0.i1.o\nsplit C k 3\nreorder C k.o i0 i1 k.i\nbind C i1 threadIdx.x\n"
        "cache_read C A k.o\ncache_read C B k.o",
        "split C i1 8\nsplit C k 6\nreorder C i0 i1.o k.o i1.i k.i\nfuse C i0 i1.o\n"
        "bind C i0.i1.o blockIdx.x\nbind C i1.i threadIdx.x\ncache_read C A k.o\ncache_read C B k.o",
        NULL};
    for (int i = 0; good[i]; i++) {
        sch_schedule s;
        sch_schedule_init(&s);
        CHECK(sch_schedule_parse(ctx, good[i], &s) == SMELT_OK);
        char what[64];
        snprintf(what, sizeof what, "cache_read schedule %d", i);
        CHECK(matches_reference(ctx, g, &s, cuda, what));
        sch_schedule_fini(&s);
    }
    te_graph_free(g);
    smelt_ctx_free(ctx);
}

/* ---- kernels ---- */

/* The kernels of function f (A input 0, B weights, D output 0). */
static smelt_status emit(cgt_prog *t, ir_func *f, const char *target, smelt_strbuf *out, smelt_ctx *ctx)
{
    t->funcs[t->p.n_funcs++] = f;
    f->comment = "test";
    ir_slot slots[3] = {SLOT_IN(0), SLOT_W(0), SLOT_OUT(0)};
    cgt_call(t, f, slots);
    cgt_input(t, "a", SMELT_DT_FLOAT32, numel(f->params[0]));
    cgt_output(t, "d", SMELT_DT_FLOAT32, numel(f->params[2]));
    static unsigned char blob[1 << 16];
    t->p.weights = blob;
    t->p.weight_bytes = (int64_t)sizeof(float) * numel(f->params[1]);
    return cg_gpu_emit_device(ctx, &t->p, cg_target_find(target), out, NULL);
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

static void test_kernels(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    te_graph *g = matmul_relu(ctx, 13, 20, 19);
    static const char *const targets[] = {"opencl", "cuda"};
    for (int k = 0; k < 2; k++) {
        cgt_prog t;
        cgt_init(&t);
        ir_func *f = NULL;
        sch_state *st = NULL;
        CHECK(lower_text(ctx, g, mm_tiled, &cg_target_find(targets[k])->hw, &t, &f, &st) == SMELT_OK);
        smelt_strbuf out;
        smelt_strbuf_init(&out);
        CHECK(f && emit(&t, f, targets[k], &out, ctx) == SMELT_OK);
        const char *src = smelt_strbuf_cstr(&out);
        bool cl = k == 0;
        /* the tiles at the kernel's scope; three k steps (20 = 8 + 8 + 4: the
         * loop partitioned into its main part and tail) share the arrays */
        CHECK(count(src, cl ? "__local float t" : "__shared__ float t") == 2);
        CHECK(strstr(src, cl ? "__local float t1[72];" : "__shared__ float t1[72];") != NULL);
        /* per step: a barrier before the two copies, one after */
        const char *bar = cl ? "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);" : "__syncthreads();";
        CHECK(count(src, bar) == 4);
        if (getenv("SHOW_SOURCE")) fprintf(stderr, "%s\n", src);
        smelt_strbuf_fini(&out);
        sch_state_free(st);
        cgt_fini(&t);
        smelt_ctx_clear(ctx);
    }
    te_graph_free(g);
    smelt_ctx_free(ctx);
}

/* A copy the threads cannot all reach is refused by code generation. */
static void test_kernel_errors(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    for (int which = 0; which < 2; which++) {
        cgt_prog t;
        cgt_init(&t);
        ir_buffer *a = BUF(&t, "a", SMELT_DT_FLOAT32, 64, IR_BUF_INPUT);
        ir_buffer *w = BUF(&t, "w", SMELT_DT_FLOAT32, 64, IR_BUF_CONST);
        ir_buffer *d = BUF(&t, "d", SMELT_DT_FLOAT32, 64, IR_BUF_OUTPUT);
        ir_buffer *tile = BUF(&t, "a.shared", SMELT_DT_FLOAT32, 64, IR_BUF_TEMP);
        tile->scope = IR_SCOPE_SHARED;
        ir_var *bx = VAR(&t, "bx"), *tx = VAR(&t, "tx"), *cx = VAR(&t, "a.shared.t");
        ir_stmt *copy = FOR(&t, cx, 0, 64, IR_FOR_GPU_THREAD, ST(&t, tile, V(&t, cx), LD(&t, a, V(&t, cx))));
        ir_stmt *use = ST(&t, d, V(&t, tx), BIN(&t, IR_MUL, LD(&t, tile, V(&t, tx)), LD(&t, w, V(&t, tx))));
        /* 0: the copy only for the threads of a condition on the thread;
         * 1: a thread loop of 32 threads in a block of 64 holds the copy */
        ir_stmt *inner = which == 0
                             ? ir_seq2(&t.b, ir_if(&t.b, BIN(&t, IR_LT, V(&t, tx), I(&t, 10)), copy, NULL), use)
                             : ir_seq2(&t.b, copy, use);
        ir_stmt *threads = FOR(&t, tx, 0, which == 0 ? 64 : 32, IR_FOR_GPU_THREAD,
                               ir_allocate(&t.b, tile, inner));
        ir_func *f = cgt_func(&t, "f0_bad", 3, (ir_buffer *[]){a, w, d},
                              FOR(&t, bx, 0, 1, IR_FOR_GPU_BLOCK, threads));
        t.p.n_funcs = 0;
        smelt_strbuf out;
        smelt_strbuf_init(&out);
        CHECK(emit(&t, f, "cuda", &out, ctx) == SMELT_ERR_UNSUPPORTED);
        const char *want = which == 0 ? "inside thread loop 'tx', a condition around a cache_read tile's "
                                        "copy depends on the thread"
                                      : "thread loop 'tx' holds a cache_read tile's copy, so every thread "
                                        "of the block must run it, but it covers part of the block's 64 threads";
        if (!strstr(smelt_ctx_message(ctx), want))
            fprintf(stderr, "message '%s' lacks '%s'\n", smelt_ctx_message(ctx), want);
        CHECK(strstr(smelt_ctx_message(ctx), want) != NULL);
        smelt_strbuf_fini(&out);
        cgt_fini(&t);
        smelt_ctx_clear(ctx);
    }
    smelt_ctx_free(ctx);
}

/* ---- the default rules ---- */

static bool has_cache_read(const sch_schedule *s)
{
    for (int j = 0; j < s->n; j++)
        if (s->steps[j].kind == SCH_CACHE_READ) return true;
    return false;
}

/* Which shapes the targets' rules tile (the schedules only). */
static void test_default_choice(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    static const char *const targets[] = {"opencl", "cuda"};
    for (int k = 0; k < 2; k++) {
        const smelt_hw *hw = &cg_target_find(targets[k])->hw;
        /* a product with an epilogue and one without (cache_write: the
         * reduction itself gets the loops), padded 3x3 convolutions with and
         * without one; no size divides a tile */
        te_graph *graphs[] = {matmul_relu(ctx, 135, 270, 197), matmul_relu(ctx, 2, 8, 3),
                              conv3x3(ctx, 32, 64, 56, 56, 1, true), conv3x3(ctx, 32, 48, 57, 55, 2, false)};
        bool want[] = {true, false, true, true}; /* a tiny product: one thread per output */
        for (int i = 0; i < 4; i++) {
            sch_schedule s;
            sch_schedule_init(&s);
            CHECK(sch_default(ctx, graphs[i], hw, &s) == SMELT_OK);
            if (has_cache_read(&s) != want[i])
                fprintf(stderr, "%s: graph %d %s\n", targets[k], i, want[i] ? "not tiled" : "tiled");
            CHECK(has_cache_read(&s) == want[i]);
            bool cw = false;
            for (int j = 0; j < s.n; j++) cw |= s.steps[j].kind == SCH_CACHE_WRITE;
            CHECK(cw == (i == 3));
            sch_schedule_fini(&s);
            te_graph_free(graphs[i]);
        }
    }
    smelt_ctx_free(ctx);
}

/* Which ResNet-18 layers the rules tile (sched/gpu_tile.c): measured on an
 * H100 (docs/benchmarks.md, 2026-11-26), every 3x3 layer with 64 channels or
 * more ran slower tiled than one thread per output, so those stay plain;
 * conv1 (3 channels, 7x7), the 1x1 downsamples, convolutions with fewer
 * channels or few outputs, and the fc layer's matrix-vector product (a
 * long reduction) are tiled. */
static void test_default_conv_rule(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    static const char *const targets[] = {"cuda", "opencl"};
    struct {
        int64_t k, ci, co, h, stride; /* k = 0: a product 1 x ci x co */
        bool tiled;
    } cases[] = {
        {7, 3, 64, 224, 2, true},   {3, 64, 64, 56, 1, false},   {3, 64, 128, 56, 2, false},
        {3, 128, 128, 28, 1, false}, {3, 128, 256, 28, 2, false}, {3, 256, 256, 14, 1, false},
        {3, 256, 512, 14, 2, false}, {3, 512, 512, 7, 1, false},  {1, 64, 128, 56, 2, true},
        {1, 128, 256, 28, 2, true},  {1, 256, 512, 14, 2, true},  {0, 512, 1000, 0, 0, true},
        {3, 33, 49, 24, 1, true},    {3, 64, 40, 19, 2, true},    {0, 256, 1000, 0, 0, false},
    };
    for (int k = 0; k < 2; k++) {
        const smelt_hw *hw = &cg_target_find(targets[k])->hw;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            te_graph *g = cases[i].k ? conv_kxk(ctx, cases[i].k, cases[i].ci, cases[i].co, cases[i].h,
                                                cases[i].h, cases[i].stride, true)
                                     : matmul_relu(ctx, 1, cases[i].ci, cases[i].co);
            sch_schedule s;
            sch_schedule_init(&s);
            CHECK(sch_default(ctx, g, hw, &s) == SMELT_OK);
            if (has_cache_read(&s) != cases[i].tiled)
                fprintf(stderr, "%s: case %d (%lldx%lld, %lld -> %lld): %s\n", targets[k], (int)i,
                        (long long)cases[i].k, (long long)cases[i].k, (long long)cases[i].ci,
                        (long long)cases[i].co, cases[i].tiled ? "not tiled" : "tiled");
            CHECK(has_cache_read(&s) == cases[i].tiled);
            sch_schedule_fini(&s);
            te_graph_free(g);
        }
    }
    smelt_ctx_free(ctx);
}

/* A 1x1 convolution's tile on the CUDA target leaves no multiprocessor of
 * the model's 132 idle when a tile can fill them: on the H100 the 112-block
 * tiles the cost alone chose for these ResNet-50 layers ran 0.88x and 0.93x
 * of one thread per output, the filling ones 1.15x and 1.18x. */
static void test_conv_tile_fills(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    const smelt_hw *hw = &cg_target_find("cuda")->hw;
    int64_t cases[][3] = {{1024, 512, 14}, {512, 128, 28}}; /* ci, co, h = w */
    for (int i = 0; i < 2; i++) {
        te_graph *g = conv_kxk(ctx, 1, cases[i][0], cases[i][1], cases[i][2], cases[i][2], 1, true);
        bool *inlined = calloc((size_t)g->tensors.len, sizeof *inlined);
        const te_tensor *y = NULL;
        for (int j = 0; j < g->tensors.len; j++) {
            const te_tensor *t = g->tensors.items[j];
            inlined[j] = !strcmp(t->buf->name, "P"); /* the padding, as the rules inline it */
            if (!strcmp(t->buf->name, "Y")) y = t;
        }
        sch_gpu_tile p;
        CHECK(y && sch_gpu_tile_plan(g, y, inlined, hw, &p));
        int64_t h = cases[i][2], co = cases[i][1];
        int64_t blocks = (co + p.ty * p.tm - 1) / (p.ty * p.tm) * ((h + p.txh - 1) / p.txh) *
                         ((h + p.txw * p.tn - 1) / (p.txw * p.tn));
        if (blocks < 132)
            fprintf(stderr, "1x1 %lld -> %lld: %lld blocks (%lld x %lld x %lld threads, %lld x %lld)\n",
                    (long long)cases[i][0], (long long)co, (long long)blocks, (long long)p.ty,
                    (long long)p.txh, (long long)p.txw, (long long)p.tm, (long long)p.tn);
        CHECK(blocks >= 132);
        free(inlined);
        te_graph_free(g);
    }
    smelt_ctx_free(ctx);
}

/* Tiled schedules against the reference, on a GPU of 16-thread blocks (the
 * interpreter runs each thread's copy of a tile: small blocks keep it
 * quick), tiles fixed with SMELT_GPU_TILE: thread grids with rows,
 * columns and output rows, register tiles, k steps that do not divide. */
static void test_default_tiles(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_hw hw = cg_target_find("opencl")->hw;
    hw.gpu_threads = 16;
    struct {
        int graph;
        const char *tile; /* ty,txh,txw,tm,tn[,kt] */
    } cases[] = {
        {0, "4,1,4,2,2"}, {0, "2,1,8,4,1,3"}, {0, "8,1,2,1,2"}, {1, "4,1,4,2,2,5"},
        {2, "2,2,4,2,2"}, {2, "4,4,1,1,4,2"}, {3, "1,4,4,2,2"}, {3, "2,2,4,4,1,3"},
    };
    te_graph *graphs[] = {matmul_relu(ctx, 13, 20, 19), NULL, conv3x3(ctx, 5, 6, 9, 8, 1, true),
                          conv3x3(ctx, 4, 5, 11, 10, 2, false)};
    /* a product alone (cache_write) */
    te_graph *g = te_graph_new(ctx);
    int64_t sa[2] = {17, 30}, sbb[2] = {30, 9}, sc[2] = {17, 9};
    mm_args *a = smelt_arena_alloc(&g->arena, sizeof *a);
    a->a = te_placeholder(g, "A", SMELT_DT_FLOAT32, 2, sa);
    a->b = te_placeholder(g, "B", SMELT_DT_FLOAT32, 2, sbb);
    te_mark_output(g, te_compute(g, "C", SMELT_DT_FLOAT32, 2, sc, mm_body, a, "matmul"));
    graphs[1] = g;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("SMELT_GPU_TILE", cases[i].tile, 1);
        sch_schedule s;
        sch_schedule_init(&s);
        CHECK(sch_default(ctx, graphs[cases[i].graph], &hw, &s) == SMELT_OK);
        if (!has_cache_read(&s)) fprintf(stderr, "case %d (%s): not tiled\n", (int)i, cases[i].tile);
        CHECK(has_cache_read(&s));
        char what[96];
        snprintf(what, sizeof what, "graph %d, SMELT_GPU_TILE=%s", cases[i].graph, cases[i].tile);
        CHECK(matches_reference(ctx, graphs[cases[i].graph], &s, &hw, what));
        sch_schedule_fini(&s);
    }
    /* a fixed tile's steps; SMELT_GPU_TILE=0: one thread per output */
    setenv("SMELT_GPU_TILE", "4,1,4,2,2,5", 1);
    sch_schedule s;
    sch_schedule_init(&s);
    CHECK(sch_default(ctx, g, &hw, &s) == SMELT_OK);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    sch_schedule_print(&s, &sb);
    CHECK(strstr(smelt_strbuf_cstr(&sb), "cache_write C\nsplit C i0 8\nsplit C i0.i 4\n") != NULL);
    CHECK(strstr(smelt_strbuf_cstr(&sb), "split C.local k 5\n") != NULL);
    CHECK(strstr(smelt_strbuf_cstr(&sb), "cache_read C.local A k.o\ncache_read C.local B k.o\n") != NULL);
    smelt_strbuf_fini(&sb);
    sch_schedule_fini(&s);
    setenv("SMELT_GPU_TILE", "0", 1);
    sch_schedule_init(&s);
    CHECK(sch_default(ctx, g, &hw, &s) == SMELT_OK);
    CHECK(!has_cache_read(&s));
    sch_schedule_fini(&s);
    unsetenv("SMELT_GPU_TILE");
    for (int i = 0; i < 4; i++) te_graph_free(graphs[i]);
    smelt_ctx_free(ctx);
}

int main(void)
{
    test_text();
    test_replay_errors();
    test_lowering();
    test_kernels();
    test_kernel_errors();
    test_default_choice();
    test_default_conv_rule();
    test_conv_tile_fills();
    test_default_tiles();
    TEST_MAIN_END();
}
