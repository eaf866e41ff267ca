/* tensorize: illegal uses fail with SMELT_ERR_ARG and a message; legal ones
 * (matmul 13x7 @ 7x19, plain and with B transposed, under tilings whose
 * splits do and do not divide, a split reduction, cache_write + compute_at)
 * lower to a smelt.gemm_f32 call that computes what the te interpreter does,
 * both in the tir interpreter and compiled and run; the same for
 * smelt.transpose_f32 on a 13 x 19 transpose (bit-exact). */
#include <math.h>

#include "lower/lower.h"
#include "test_codegen_util.h"
#include "tir/interp.h"

enum { M = 13, K = 7, N = 19 };

/* ---- te graphs ---- */

typedef struct mm_args {
    te_tensor *a, *b;
    bool trans_b; /* b is [N, K] */
} mm_args;

static ir_expr *mm_body(te_graph *g, ir_expr *const *idx, void *user)
{
    mm_args *m = user;
    ir_axis k = te_reduce_axis(g, "k", K);
    ir_expr *kv = ir_var_ref(&g->b, k.var);
    ir_expr *ia[2] = {idx[0], kv}, *ib[2] = {kv, idx[1]}, *ibt[2] = {idx[1], kv};
    ir_expr *prod = ir_mul(&g->b, te_read(g, m->a, ia), te_read(g, m->b, m->trans_b ? ibt : ib));
    return te_reduce(g, IR_REDUCE_SUM, prod, 1, &k);
}

static ir_expr *scale_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return ir_mul(&g->b, te_read(g, user, idx), ir_const_float(&g->b, SMELT_DT_FLOAT32, 2));
}

static ir_expr *rowsum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    ir_axis k = te_reduce_axis(g, "k", K);
    ir_expr *ia[2] = {idx[0], ir_var_ref(&g->b, k.var)};
    return te_reduce(g, IR_REDUCE_SUM, te_read(g, user, ia), 1, &k);
}

/* C = A @ B (or A @ Bt^T); with prescale, A is first scaled into stage P. */
static te_graph *matmul(smelt_ctx *ctx, bool trans_b, bool prescale, mm_args *m)
{
    te_graph *g = te_graph_new(ctx);
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sbt[2] = {N, K}, sc[2] = {M, N};
    m->a = te_placeholder(g, "A", SMELT_DT_FLOAT32, 2, sa);
    m->b = te_placeholder(g, "B", SMELT_DT_FLOAT32, 2, trans_b ? sbt : sb);
    m->trans_b = trans_b;
    te_tensor *a = m->a;
    if (prescale) m->a = te_compute(g, "P", SMELT_DT_FLOAT32, 2, sa, scale_body, a, NULL);
    te_mark_output(g, te_compute(g, "C", SMELT_DT_FLOAT32, 2, sc, mm_body, m, "reduce"));
    int64_t sr[1] = {M};
    te_mark_output(g, te_compute(g, "R", SMELT_DT_FLOAT32, 1, sr, rowsum_body, a, "reduce"));
    return g;
}

/* ---- helpers ---- */

static float *random_data(int64_t n, uint32_t seed)
{
    float *d = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        d[i] = (float)(seed >> 8) / 8388608.0f - 1.0f;
    }
    return d;
}

/* Build the state and lower it; the status of the first failing step. */
static smelt_status lower_text(smelt_ctx *ctx, te_graph *g, const char *text, ir_builder *b,
                               sch_state **st, ir_func **f)
{
    sch_schedule s;
    sch_schedule_init(&s);
    *st = NULL;
    smelt_status r = sch_schedule_parse(ctx, text, &s);
    if (r == SMELT_OK) r = sch_state_build(ctx, g, &s, st);
    if (r == SMELT_OK) r = lower_func(ctx, *st, b, "mm", f);
    sch_schedule_fini(&s);
    return r;
}

static bool has_call(const ir_stmt *s)
{
    if (!s) return false;
    switch (s->kind) {
    case IR_STMT_CALL: return !strcmp(s->call.kernel, "smelt.gemm_f32");
    case IR_STMT_FOR: return has_call(s->for_.body);
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++)
            if (has_call(s->seq.items[i])) return true;
        return false;
    case IR_STMT_LET: return has_call(s->let.body);
    case IR_STMT_ALLOCATE: return has_call(s->alloc.body);
    case IR_STMT_IF: return has_call(s->if_.then_) || has_call(s->if_.else_);
    default: return false;
    }
}

static bool close_to(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= 1e-4f + 1e-4f * fabsf(want[i]))) {
            fprintf(stderr, "%s: element %lld: got %g want %g\n", what, (long long)i, got[i], want[i]);
            return false;
        }
    return true;
}

/* ---- (a) legality ---- */

static void expect_error(smelt_ctx *ctx, te_graph *g, const char *text, const char *needle)
{
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder b;
    ir_builder_init(&b, &ar);
    sch_state *st;
    ir_func *f;
    smelt_status r = lower_text(ctx, g, text, &b, &st, &f);
    const char *msg = smelt_ctx_message(ctx);
    CHECK(r == SMELT_ERR_ARG);
    CHECK(msg && strstr(msg, needle));
    if (r != SMELT_ERR_ARG || !msg || !strstr(msg, needle))
        fprintf(stderr, "schedule:\n%s\ngave %d: %s (wanted '%s')\n", text, (int)r, msg ? msg : "", needle);
    sch_state_free(st);
    smelt_arena_fini(&ar);
    smelt_ctx_clear(ctx);
}

static void test_illegal(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    mm_args m;
    te_graph *g = matmul(ctx, false, true, &m);
    static const char *const cases[][2] = {
        {"tensorize C i0 smelt.nope", "unknown micro-kernel"},
        {"tensorize R i0 smelt.gemm_f32", "product of two float32 loads"},
        {"tensorize P i0 smelt.gemm_f32", "sum reduction"},
        {"tensorize C k smelt.gemm_f32", "two data loops and one reduce loop"},
        {"tensorize C i0.o smelt.gemm_f32", "no iteration variable"},
        {"split C i0 4\ntensorize C i0.o smelt.gemm_f32", "two data loops and one reduce loop"},
        {"compute_at P C k\ntensorize C i0 smelt.gemm_f32", "computed at a loop tensorize would replace"},
        {"tensorize C i0 smelt.gemm_f32\ncompute_at P C i1", "replaced by a micro-kernel"},
        {"tensorize C i0 smelt.gemm_f32\nsplit C i1 4", "already tensorized"},
        {"tensorize C i0 smelt.gemm_f32\nunroll C i1", "replaced by a micro-kernel"},
        {"tensorize C i0 smelt.gemm_f32\ncompute_inline P", "inline before tensorize"},
        /* matches at replay, but the fused loop's index is not affine: lowering refuses */
        {"split C i1 4\nfuse C i0 i1.o\ntensorize C i0.i1.o smelt.gemm_f32", "not affine"},
        {NULL, NULL}};
    for (int i = 0; cases[i][0]; i++) expect_error(ctx, g, cases[i][0], cases[i][1]);
    /* the text form round-trips */
    sch_schedule s;
    sch_schedule_init(&s);
    CHECK(sch_schedule_parse(ctx, "split C i0 4\ntensorize C i0.i smelt.gemm_f32\n", &s) == SMELT_OK);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    sch_schedule_print(&s, &sb);
    CHECK(!strcmp(smelt_strbuf_cstr(&sb), "split C i0 4\ntensorize C i0.i smelt.gemm_f32\n"));
    CHECK(sch_schedule_parse(ctx, "tensorize C i0", &s) == SMELT_ERR_ARG);
    smelt_ctx_clear(ctx);
    smelt_strbuf_fini(&sb);
    sch_schedule_fini(&s);
    CHECK(cg_microkernel_find("smelt.gemm_f32") != NULL);
    te_graph_free(g);
    smelt_ctx_free(ctx);
}

/* ---- (b, c) legal schedules: tir interpreter and compiled code ---- */

static const char *const good[] = {
    "tensorize C i0 smelt.gemm_f32",
    "tile C i0 i1 4 8\ntensorize C i0.i smelt.gemm_f32\nparallel C i0.o",
    "tile C i0 i1 4 8\nsplit C k 3\nreorder C i0.o i1.o k.o i0.i k.i i1.i\n"
    "tensorize C i0.i smelt.gemm_f32",
    "reorder C i1 i0 k\ntensorize C i1 smelt.gemm_f32",
    "reorder C i0 k i1\ntensorize C i0 smelt.gemm_f32",
    "tile C i0 i1 13 19\ntensorize C i0.i smelt.gemm_f32",
    "cache_write C\ntile C i0 i1 4 8\ncompute_at C.local C i1.o\ntensorize C.local i0 smelt.gemm_f32\n"
    "vectorize C i1.i",
    NULL};

typedef struct fixture {
    te_graph *g;
    float *a, *b, *want_c, *want_r;
    smelt_tensor *data;
    mm_args m;
} fixture;

static bool fixture_init(smelt_ctx *ctx, fixture *fx, bool trans_b)
{
    fx->g = matmul(ctx, trans_b, false, &fx->m);
    fx->a = random_data(M * K, 5);
    fx->b = random_data(K * N, 9);
    fx->data = calloc((size_t)fx->g->tensors.len, sizeof *fx->data);
    float *in[2] = {fx->a, fx->b};
    for (int i = 0; i < 2; i++) {
        te_tensor *t = fx->g->tensors.items[i];
        fx->data[i].dtype = t->buf->dtype;
        fx->data[i].rank = t->buf->rank;
        memcpy(fx->data[i].dims, t->buf->shape, sizeof(int64_t) * 2);
        fx->data[i].data = in[i];
    }
    if (te_eval_graph(ctx, fx->g, fx->data) != SMELT_OK) return false;
    fx->want_c = fx->data[2].data;
    fx->want_r = fx->data[3].data;
    return true;
}

static void fixture_fini(fixture *fx)
{
    for (int i = 2; i < fx->g->tensors.len; i++) smelt_free(fx->data[i].data);
    free(fx->data);
    free(fx->a);
    free(fx->b);
    te_graph_free(fx->g);
}

static bool run_interp(smelt_ctx *ctx, fixture *fx, ir_func *f, const char *what)
{
    float c[M * N] = {0}, r[M] = {0};
    void *bufs[4] = {fx->a, fx->b, c, r};
    int64_t n[4] = {M * K, K * N, M * N, M};
    tir_interp it;
    tir_interp_init(&it, ctx);
    bool ok = f->n_params == 4;
    for (int i = 0; ok && i < 4; i++) ok = tir_interp_bind_buffer(&it, f->params[i], bufs[i], n[i]) == SMELT_OK;
    if (ok && tir_interp_run(&it, f->body) != SMELT_OK) {
        fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(ctx));
        ok = false;
    }
    tir_interp_fini(&it);
    return ok && close_to(c, fx->want_c, M * N, what) && close_to(r, fx->want_r, M, what);
}

static bool run_compiled(fixture *fx, ir_func *f, const char *what)
{
    cgt_prog t;
    cgt_init(&t);
    f->comment = "tensorize test";
    t.funcs[t.p.n_funcs++] = f;
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_IN(1), SLOT_OUT(0), SLOT_OUT(1)});
    int64_t da[2] = {M, K}, db[2] = {fx->m.trans_b ? N : K, fx->m.trans_b ? K : N}, dc[2] = {M, N},
            dr[1] = {M};
    cgt_io(&t.inputs[t.p.n_inputs++], "A", SMELT_DT_FLOAT32, 2, da);
    cgt_io(&t.inputs[t.p.n_inputs++], "B", SMELT_DT_FLOAT32, 2, db);
    cgt_io(&t.outputs[t.p.n_outputs++], "C", SMELT_DT_FLOAT32, 2, dc);
    cgt_io(&t.outputs[t.p.n_outputs++], "R", SMELT_DT_FLOAT32, 1, dr);
    void *h;
    char *src;
    smelt_rt_model *rm = cgt_compile(&t, cg_target_host(), &h, &src);
    bool ok = rm != NULL;
    float c[M * N], r[M];
    if (ok) {
        const void *in[2] = {fx->a, fx->b};
        void *out[2] = {c, r};
        size_t in_b[2] = {sizeof(float) * M * K, sizeof(float) * K * N};
        size_t out_b[2] = {sizeof c, sizeof r};
        ok = smelt_rt_model_run(rm, in, in_b, 2, out, out_b, 2) == SMELT_RT_OK;
        if (!ok) fprintf(stderr, "%s: %s\n", what, smelt_rt_model_error(rm));
    }
    ok = ok && strstr(src, "smelt_uk_gemm_f32(") && close_to(c, fx->want_c, M * N, what) &&
         close_to(r, fx->want_r, M, what);
    cgt_release(rm, h, src);
    t.p.n_funcs = 0; /* f lives in the caller's arena */
    cgt_fini(&t);
    return ok;
}

static void test_legal(bool trans_b)
{
    smelt_ctx *ctx = smelt_ctx_new();
    fixture fx;
    CHECK(fixture_init(ctx, &fx, trans_b));
    for (int k = 0; good[k]; k++) {
        char what[128];
        snprintf(what, sizeof what, "%s schedule %d", trans_b ? "transposed B" : "plain", k);
        smelt_arena ar;
        smelt_arena_init(&ar);
        ir_builder b;
        ir_builder_init(&b, &ar);
        sch_state *st;
        ir_func *f = NULL;
        bool ok = lower_text(ctx, fx.g, good[k], &b, &st, &f) == SMELT_OK;
        if (!ok) fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(ctx));
        ok = ok && has_call(f->body) && run_interp(ctx, &fx, f, what) && run_compiled(&fx, f, what);
        CHECK(ok);
        if (!ok && f) {
            smelt_strbuf sb;
            smelt_strbuf_init(&sb);
            ir_stmt_print(f->body, 1, &sb);
            fprintf(stderr, "%s failed; lowered:\n%s", what, smelt_strbuf_cstr(&sb));
            smelt_strbuf_fini(&sb);
        }
        sch_state_free(st);
        smelt_arena_fini(&ar);
        smelt_ctx_clear(ctx);
    }
    fixture_fini(&fx);
    smelt_ctx_free(ctx);
}

/* ---- smelt.transpose_f32: T[i, j] = X[j, i] (X [TR_R x TR_S]) ---- */

enum { TR_R = 13, TR_S = 19 };

static ir_expr *transpose_body(te_graph *g, ir_expr *const *idx, void *user)
{
    ir_expr *ix[2] = {idx[1], idx[0]};
    return te_read(g, user, ix);
}

static ir_expr *copy_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return te_read(g, user, idx);
}

/* Outputs T (the transpose), S (X scaled: not a copy), Y (X copied as is). */
static te_graph *transpose_graph(smelt_ctx *ctx)
{
    te_graph *g = te_graph_new(ctx);
    int64_t sx[2] = {TR_R, TR_S}, st[2] = {TR_S, TR_R};
    te_tensor *x = te_placeholder(g, "X", SMELT_DT_FLOAT32, 2, sx);
    te_mark_output(g, te_compute(g, "T", SMELT_DT_FLOAT32, 2, st, transpose_body, x, "layout"));
    te_mark_output(g, te_compute(g, "S", SMELT_DT_FLOAT32, 2, sx, scale_body, x, NULL));
    te_mark_output(g, te_compute(g, "Y", SMELT_DT_FLOAT32, 2, sx, copy_body, x, NULL));
    return g;
}

static void test_transpose_illegal(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    te_graph *g = transpose_graph(ctx);
    const char *cases[][2] = {
        {"tensorize S i0 smelt.transpose_f32", "one float32 load"},
        {"split T i0 4\ntensorize T i0.o smelt.transpose_f32", "exactly two data loops"},
        {"tensorize T i1 smelt.transpose_f32", "exactly two data loops"},
        /* a plain copy: X is not contiguous along the output's other loop */
        {"tensorize Y i0 smelt.transpose_f32", "not contiguous"},
        {"tensorize T i0 smelt.transpose_f32\nsplit T i1 4", "already tensorized"},
        {NULL, NULL}};
    for (int i = 0; cases[i][0]; i++) expect_error(ctx, g, cases[i][0], cases[i][1]);
    CHECK(cg_microkernel_find("smelt.transpose_f32") != NULL);
    CHECK(sch_tensor_kernel_known("smelt.transpose_f32"));
    te_graph_free(g);
    smelt_ctx_free(ctx);
}

static bool contains_call(const ir_stmt *s, const char *kernel)
{
    if (!s) return false;
    switch (s->kind) {
    case IR_STMT_CALL: return !strcmp(s->call.kernel, kernel);
    case IR_STMT_FOR: return contains_call(s->for_.body, kernel);
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++)
            if (contains_call(s->seq.items[i], kernel)) return true;
        return false;
    case IR_STMT_LET: return contains_call(s->let.body, kernel);
    case IR_STMT_ALLOCATE: return contains_call(s->alloc.body, kernel);
    case IR_STMT_IF: return contains_call(s->if_.then_, kernel) || contains_call(s->if_.else_, kernel);
    default: return false;
    }
}

/* T, S and Y of one run: interpreted and compiled, T bit-exact. */
static bool transpose_outputs_ok(const float *x, const float *t, const char *what)
{
    for (int i = 0; i < TR_S; i++)
        for (int j = 0; j < TR_R; j++)
            if (memcmp(&t[i * TR_R + j], &x[j * TR_S + i], sizeof(float)) != 0) {
                fprintf(stderr, "%s: T[%d, %d] = %g, want %g\n", what, i, j, t[i * TR_R + j],
                        x[j * TR_S + i]);
                return false;
            }
    return true;
}

static bool transpose_interp(smelt_ctx *ctx, ir_func *f, const float *x, const char *what)
{
    float t[TR_R * TR_S] = {0}, sy[2][TR_R * TR_S];
    void *bufs[4] = {(void *)x, t, sy[0], sy[1]};
    tir_interp it;
    tir_interp_init(&it, ctx);
    bool ok = f->n_params == 4;
    for (int i = 0; ok && i < 4; i++)
        ok = tir_interp_bind_buffer(&it, f->params[i], bufs[i], TR_R * TR_S) == SMELT_OK;
    if (ok && tir_interp_run(&it, f->body) != SMELT_OK) {
        fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(ctx));
        ok = false;
    }
    tir_interp_fini(&it);
    return ok && transpose_outputs_ok(x, t, what);
}

static bool transpose_compiled(ir_func *f, const float *x, const char *what)
{
    cgt_prog t;
    cgt_init(&t);
    f->comment = "transpose test";
    t.funcs[t.p.n_funcs++] = f;
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0), SLOT_OUT(1), SLOT_OUT(2)});
    int64_t dx[2] = {TR_R, TR_S}, dt[2] = {TR_S, TR_R};
    cgt_io(&t.inputs[t.p.n_inputs++], "X", SMELT_DT_FLOAT32, 2, dx);
    cgt_io(&t.outputs[t.p.n_outputs++], "T", SMELT_DT_FLOAT32, 2, dt);
    cgt_io(&t.outputs[t.p.n_outputs++], "S", SMELT_DT_FLOAT32, 2, dx);
    cgt_io(&t.outputs[t.p.n_outputs++], "Y", SMELT_DT_FLOAT32, 2, dx);
    void *h;
    char *src;
    smelt_rt_model *rm = cgt_compile(&t, cg_target_host(), &h, &src);
    bool ok = rm != NULL;
    float out[3][TR_R * TR_S];
    if (ok) {
        const void *in[1] = {x};
        void *o[3] = {out[0], out[1], out[2]};
        size_t in_b[1] = {sizeof out[0]}, out_b[3] = {sizeof out[0], sizeof out[0], sizeof out[0]};
        ok = smelt_rt_model_run(rm, in, in_b, 1, o, out_b, 3) == SMELT_RT_OK;
        if (!ok) fprintf(stderr, "%s: %s\n", what, smelt_rt_model_error(rm));
    }
    ok = ok && strstr(src, "smelt_uk_transpose_f32(") && transpose_outputs_ok(x, out[0], what);
    cgt_release(rm, h, src);
    t.p.n_funcs = 0; /* f lives in the caller's arena */
    cgt_fini(&t);
    return ok;
}

/* Tiles that divide and do not, the loops in either order, wider than the
 * kernel's tiles, parallel outside. */
static const char *const good_transposes[] = {
    "tensorize T i0 smelt.transpose_f32",
    "reorder T i1 i0\ntensorize T i1 smelt.transpose_f32",
    "tile T i0 i1 4 8\ntensorize T i0.i smelt.transpose_f32\nparallel T i0.o",
    "tile T i0 i1 16 16\ntensorize T i0.i smelt.transpose_f32",
    "split T i1 5\nreorder T i1.o i0 i1.i\ntensorize T i0 smelt.transpose_f32",
    NULL};

static void test_transpose_legal(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    te_graph *g = transpose_graph(ctx);
    float *x = random_data(TR_R * TR_S, 3);
    for (int k = 0; good_transposes[k]; k++) {
        char what[160];
        snprintf(what, sizeof what, "transpose schedule %d", k);
        smelt_arena ar;
        smelt_arena_init(&ar);
        ir_builder b;
        ir_builder_init(&b, &ar);
        sch_state *st;
        ir_func *f = NULL;
        bool ok = lower_text(ctx, g, good_transposes[k], &b, &st, &f) == SMELT_OK;
        if (!ok) fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(ctx));
        ok = ok && contains_call(f->body, "smelt.transpose_f32") &&
             transpose_interp(ctx, f, x, what) && transpose_compiled(f, x, what);
        CHECK(ok);
        sch_state_free(st);
        smelt_arena_fini(&ar);
        smelt_ctx_clear(ctx);
    }
    free(x);
    te_graph_free(g);
    smelt_ctx_free(ctx);
}

int main(void)
{
    cgt_setup_env();
    test_illegal();
    test_legal(false);
    test_legal(true);
    test_transpose_illegal();
    test_transpose_legal();
    TEST_MAIN_END();
}
