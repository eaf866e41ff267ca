/* The public tensor-expression API (smelt_te.h): user-written computes built
 * with schedules (none, tiled + vectorised + parallel, cache_write +
 * compute_at + unroll, tensorize to the GEMM micro-kernel, rfactor) and
 * called on raw buffers, each compared with a straightforward C loop; errors
 * naming the tensor, the step or the line; user names never raw in the C. */
#include <math.h>

#include "codegen/codegen.h"
#include "smelt_te.h"
#include "test_util.h"

enum { M = 37, K = 29, N = 45 };

static float *random_data(int64_t n, uint32_t seed)
{
    float *d = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        d[i] = (float)(seed >> 8) / 8388608.0f - 1.0f;
    }
    return d;
}

static bool close_to(const float *got, const float *want, int64_t n, float tol, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= tol + tol * fabsf(want[i]))) {
            fprintf(stderr, "%s: element %lld: got %g want %g\n", what, (long long)i, got[i],
                    want[i]);
            return false;
        }
    return true;
}

/* ---- C = A @ B ---- */

typedef struct mm {
    smelt_te_tensor *a, *b;
} mm;

static smelt_te_expr *mm_body(smelt_te_graph *g, smelt_te_expr *const *idx, void *user)
{
    mm *m = user;
    smelt_te_axis *k = smelt_te_reduce_axis(g, "k", K);
    smelt_te_expr *kv = smelt_te_axis_expr(g, k);
    smelt_te_expr *ia[2] = {idx[0], kv}, *ib[2] = {kv, idx[1]};
    smelt_te_expr *prod = smelt_te_binary(g, SMELT_TE_MUL, smelt_te_read(g, m->a, 2, ia),
                                          smelt_te_read(g, m->b, 2, ib));
    return smelt_te_reduce(g, SMELT_TE_SUM, prod, 1, &k);
}

static const char *const mm_schedules[] = {
    "",
    "tile C i0 i1 8 16\nvectorize C i1.i\nparallel C i0.o",
    "cache_write C\ntile C i0 i1 4 16\ncompute_at C.local C i1.o\n"
    "reorder C.local k i0 i1\nunroll C.local i0\nvectorize C.local i1\nparallel C i0.o",
    "tile C i0 i1 6 16\nsplit C k 8\nreorder C i0.o i1.o k.o i0.i k.i i1.i\n"
    "tensorize C i0.i smelt.gemm_f32\nparallel C i0.o",
    "split C k 4\nreorder C i0 i1 k.o k.i\nfuse C i0 i1\nunroll C k.i\nparallel C i0.i1",
    NULL};

static void test_matmul(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    float *a = random_data(M * K, 3), *b = random_data(K * N, 7);
    float want[M * N], got[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)a[i * K + k] * b[k * N + j];
            want[i * N + j] = (float)s;
        }
    for (int t = 0; mm_schedules[t]; t++) {
        smelt_te_graph *g = smelt_te_graph_new(ctx);
        int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
        mm m = {smelt_te_placeholder(g, "A", SMELT_DT_FLOAT32, 2, sa),
                smelt_te_placeholder(g, "B", SMELT_DT_FLOAT32, 2, sb)};
        smelt_te_tensor *c = smelt_te_compute(g, "C", SMELT_DT_FLOAT32, 2, sc, mm_body, &m);
        CHECK(c != NULL);
        smelt_te_schedule *s = smelt_te_schedule_new(g, 1, &c);
        CHECK(s && smelt_te_apply_text(s, mm_schedules[t]) == SMELT_OK);
        if (smelt_ctx_status(ctx)) fprintf(stderr, "schedule %d: %s\n", t, smelt_ctx_message(ctx));
        smelt_te_tensor *args[3] = {m.a, m.b, c};
        const char *ir = smelt_te_lower(s, 3, args);
        CHECK(ir && strstr(ir, "for "));
        if (t == 3) CHECK(ir && strstr(ir, "smelt.gemm_f32"));
        smelt_te_func *f = smelt_te_build(s, 3, args, "host", 2);
        CHECK(f != NULL);
        if (!f) fprintf(stderr, "schedule %d: %s\n", t, smelt_ctx_message(ctx));
        memset(got, 0, sizeof got);
        void *bufs[3] = {a, b, got};
        size_t bytes[3] = {sizeof(float) * M * K, sizeof(float) * K * N, sizeof got};
        char what[64];
        snprintf(what, sizeof what, "matmul schedule %d", t);
        CHECK(f && smelt_te_func_call(f, 3, bufs, bytes) == SMELT_OK &&
              close_to(got, want, M * N, 1e-4f, what));
        /* a short buffer is refused, naming the argument */
        bytes[1] -= 4;
        CHECK(f && smelt_te_func_call(f, 3, bufs, bytes) == SMELT_ERR_ARG);
        smelt_ctx_clear(ctx);
        smelt_te_func_free(f);
        smelt_te_schedule_free(s);
        smelt_te_graph_free(g);
    }
    free(a);
    free(b);
    smelt_ctx_free(ctx);
}

/* ---- elementwise: select, exp, min/max, casts, integer index arithmetic ---- */

static smelt_te_expr *ew_body(smelt_te_graph *g, smelt_te_expr *const *idx, void *user)
{
    smelt_te_tensor *x = user;
    smelt_te_expr *v = smelt_te_read(g, x, 2, idx);
    /* the transpose-mirrored element, clamped: X[min(j, M-1), i % K] */
    smelt_te_expr *j = smelt_te_binary(g, SMELT_TE_MIN, idx[1],
                                       smelt_te_const_int(g, SMELT_DT_INT64, M - 1));
    smelt_te_expr *i = smelt_te_binary(g, SMELT_TE_FLOORMOD, idx[0],
                                       smelt_te_const_int(g, SMELT_DT_INT64, K));
    smelt_te_expr *mi[2] = {j, i};
    smelt_te_expr *w = smelt_te_read(g, x, 2, mi);
    smelt_te_expr *pos = smelt_te_binary(g, SMELT_TE_GT, v, smelt_te_const_float(g, SMELT_DT_FLOAT32, 0));
    smelt_te_expr *e = smelt_te_call(g, "exp", 1, &v);
    smelt_te_expr *half = smelt_te_binary(g, SMELT_TE_MUL, v, smelt_te_const_float(g, SMELT_DT_FLOAT32, 0.5));
    smelt_te_expr *sel = smelt_te_select(g, pos, e, smelt_te_neg(g, half));
    smelt_te_expr *idxf = smelt_te_cast(g, SMELT_DT_FLOAT32, idx[1]);
    return smelt_te_binary(g, SMELT_TE_ADD, smelt_te_binary(g, SMELT_TE_MAX, sel, w),
                           smelt_te_binary(g, SMELT_TE_DIV, idxf,
                                           smelt_te_const_float(g, SMELT_DT_FLOAT32, 64)));
}

static void test_elementwise(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    enum { R = M, C = K };
    float *x = random_data(R * C, 11);
    float want[R * C], got[R * C];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            float v = x[i * C + j];
            float sel = v > 0 ? expf(v) : -(v * 0.5f);
            float w = x[(j < M - 1 ? j : M - 1) * C + i % K];
            want[i * C + j] = (sel > w ? sel : w) + (float)j / 64.0f;
        }
    const char *scheds[] = {"", "split Y i1 8\nvectorize Y i1.i\nparallel Y i0", "fuse Y i0 i1\nsplit Y i0.i1 16\nvectorize Y i0.i1.i", NULL};
    for (int t = 0; scheds[t]; t++) {
        smelt_te_graph *g = smelt_te_graph_new(ctx);
        int64_t sx[2] = {R, C};
        smelt_te_tensor *xt = smelt_te_placeholder(g, "X", SMELT_DT_FLOAT32, 2, sx);
        smelt_te_tensor *y = smelt_te_compute(g, "Y", SMELT_DT_FLOAT32, 2, sx, ew_body, xt);
        smelt_te_schedule *s = smelt_te_schedule_new(g, 1, &y);
        CHECK(s && smelt_te_apply_text(s, scheds[t]) == SMELT_OK);
        smelt_te_tensor *args[2] = {xt, y};
        smelt_te_func *f = smelt_te_build(s, 2, args, NULL, 0);
        if (!f) fprintf(stderr, "elementwise %d: %s\n", t, smelt_ctx_message(ctx));
        void *bufs[2] = {x, got};
        size_t bytes[2] = {sizeof want, sizeof got};
        CHECK(f && smelt_te_func_call(f, 2, bufs, bytes) == SMELT_OK &&
              close_to(got, want, R * C, 2e-6f, "elementwise"));
        smelt_te_func_free(f);
        smelt_te_schedule_free(s);
        smelt_te_graph_free(g);
    }
    free(x);
    smelt_ctx_free(ctx);
}

/* ---- rowmax with rfactor, two outputs (the max, and x - max) ---- */

static smelt_te_expr *rowmax_body(smelt_te_graph *g, smelt_te_expr *const *idx, void *user)
{
    smelt_te_axis *r = smelt_te_reduce_axis(g, "r", N);
    smelt_te_expr *ix[2] = {idx[0], smelt_te_axis_expr(g, r)};
    return smelt_te_reduce(g, SMELT_TE_RMAX, smelt_te_read(g, user, 2, ix), 1, &r);
}

typedef struct two {
    smelt_te_tensor *x, *m;
} two;

static smelt_te_expr *centred_body(smelt_te_graph *g, smelt_te_expr *const *idx, void *user)
{
    two *t = user;
    return smelt_te_binary(g, SMELT_TE_SUB, smelt_te_read(g, t->x, 2, idx),
                           smelt_te_read(g, t->m, 1, idx));
}

static void test_rowmax(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    float *x = random_data(M * N, 17);
    float want_m[M], want_c[M * N], got_m[M], got_c[M * N];
    for (int i = 0; i < M; i++) {
        float mx = -INFINITY;
        for (int j = 0; j < N; j++) mx = x[i * N + j] > mx ? x[i * N + j] : mx;
        want_m[i] = mx;
        for (int j = 0; j < N; j++) want_c[i * N + j] = x[i * N + j] - mx;
    }
    smelt_te_graph *g = smelt_te_graph_new(ctx);
    int64_t sx[2] = {M, N}, sm[1] = {M};
    two t = {smelt_te_placeholder(g, "X", SMELT_DT_FLOAT32, 2, sx), NULL};
    t.m = smelt_te_compute(g, "Mx", SMELT_DT_UNDEFINED, 1, sm, rowmax_body, t.x);
    smelt_te_tensor *c = smelt_te_compute(g, "Cn", SMELT_DT_FLOAT32, 2, sx, centred_body, &t);
    smelt_te_tensor *outs[2] = {t.m, c};
    smelt_te_schedule *s = smelt_te_schedule_new(g, 2, outs);
    CHECK(smelt_te_rfactor(s, "Mx", "r", 8) == SMELT_OK);
    CHECK(smelt_te_vectorize(s, "Mx.rf", "r.i") == SMELT_OK);
    CHECK(smelt_te_parallel(s, "Cn", "i0") == SMELT_OK);
    CHECK(!strcmp(smelt_te_stage_loops(s, "Mx.rf"), "i0 r.i r.o"));
    CHECK_STR_CONTAINS(smelt_te_schedule_text(s), "rfactor Mx r 8\n");
    smelt_te_tensor *args[3] = {c, t.x, t.m}; /* any order */
    smelt_te_func *f = smelt_te_build(s, 3, args, "generic", 1);
    void *bufs[3] = {got_c, x, got_m};
    size_t bytes[3] = {sizeof got_c, sizeof want_c, sizeof got_m};
    CHECK(f && smelt_te_func_call(f, 3, bufs, bytes) == SMELT_OK &&
          close_to(got_m, want_m, M, 0, "rowmax") && close_to(got_c, want_c, M * N, 0, "centred"));
    smelt_te_func_free(f);
    smelt_te_schedule_free(s);
    smelt_te_graph_free(g);
    free(x);
    smelt_ctx_free(ctx);
}

/* ---- errors ---- */

#define EXPECT_ERR(call, needle)                                                      \
    do {                                                                              \
        smelt_ctx_clear(ctx);                                                         \
        bool failed_ = !(call);                                                       \
        CHECK(failed_);                                                               \
        CHECK_STR_CONTAINS(smelt_ctx_message(ctx), needle);                           \
        if (!strstr(smelt_ctx_message(ctx), needle))                                  \
            fprintf(stderr, "  got '%s'\n", smelt_ctx_message(ctx));                  \
    } while (0)

static smelt_te_expr *bad_reduce_inside(smelt_te_graph *g, smelt_te_expr *const *idx, void *user)
{
    smelt_te_axis *k = smelt_te_reduce_axis(g, "k", K);
    smelt_te_expr *ix[2] = {idx[0], smelt_te_axis_expr(g, k)};
    smelt_te_expr *r = smelt_te_reduce(g, SMELT_TE_SUM, smelt_te_read(g, user, 2, ix), 1, &k);
    return smelt_te_binary(g, SMELT_TE_MUL, r, smelt_te_const_float(g, SMELT_DT_FLOAT32, 2));
}

static smelt_te_expr *bad_free_axis(smelt_te_graph *g, smelt_te_expr *const *idx, void *user)
{
    smelt_te_axis *k = smelt_te_reduce_axis(g, "k", K);
    smelt_te_expr *ix[2] = {idx[0], smelt_te_axis_expr(g, k)};
    return smelt_te_read(g, user, 2, ix);
}

static void test_errors(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_te_graph *g = smelt_te_graph_new(ctx);
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N}, s1[1] = {M};
    EXPECT_ERR(smelt_te_placeholder(g, "a b", SMELT_DT_FLOAT32, 2, sa), "not usable in a schedule");
    EXPECT_ERR(smelt_te_placeholder(g, "A.x", SMELT_DT_FLOAT32, 2, sa), "not usable in a schedule");
    EXPECT_ERR(smelt_te_placeholder(g, "A", SMELT_DT_STRING, 2, sa), "not a numeric type");
    int64_t bad[2] = {M, 0};
    EXPECT_ERR(smelt_te_placeholder(g, "A", SMELT_DT_FLOAT32, 2, bad), "dim 1 is 0");
    mm m = {smelt_te_placeholder(g, "A", SMELT_DT_FLOAT32, 2, sa),
            smelt_te_placeholder(g, "B", SMELT_DT_FLOAT32, 2, sb)};
    smelt_te_tensor *ai = smelt_te_placeholder(g, "Ai", SMELT_DT_INT32, 2, sa);
    EXPECT_ERR(smelt_te_placeholder(g, "A", SMELT_DT_FLOAT32, 2, sa), "exists already");
    smelt_te_expr *idx[2];
    CHECK(smelt_te_compute_begin(g, 2, idx) == SMELT_OK);
    EXPECT_ERR(smelt_te_read(g, m.a, 1, idx), "rank 2 but is read with 1");
    EXPECT_ERR(smelt_te_binary(g, SMELT_TE_ADD, smelt_te_read(g, m.a, 2, idx),
                               smelt_te_read(g, ai, 2, idx)),
               "'+' of f32 and i32");
    EXPECT_ERR(smelt_te_binary(g, SMELT_TE_FLOORMOD, smelt_te_read(g, m.a, 2, idx),
                               smelt_te_read(g, m.a, 2, idx)),
               "'floormod' of f32");
    smelt_te_expr *fi[2] = {smelt_te_read(g, m.a, 2, idx), idx[1]};
    EXPECT_ERR(smelt_te_read(g, m.a, 2, fi), "not an integer");
    EXPECT_ERR(smelt_te_call(g, "frobnicate", 1, idx), "unknown function 'frobnicate'");
    EXPECT_ERR(smelt_te_call(g, "exp", 1, idx), "float arguments");
    EXPECT_ERR(smelt_te_reduce_axis(g, "i1", 4), "name the data axes");
    EXPECT_ERR(smelt_te_placeholder(g, "P", SMELT_DT_FLOAT32, 2, sa), "inside a compute");
    EXPECT_ERR(smelt_te_compute_end(g, "E", SMELT_DT_FLOAT32, 2, sa, NULL), "has no body");
    EXPECT_ERR(smelt_te_compute(g, "E", SMELT_DT_FLOAT32, 1, s1, bad_reduce_inside, m.a),
               "must be the whole body");
    EXPECT_ERR(smelt_te_compute(g, "E", SMELT_DT_FLOAT32, 1, s1, bad_free_axis, m.a),
               "uses 'k', which is neither");
    EXPECT_ERR(smelt_te_compute(g, "E", SMELT_DT_FLOAT64, 2, sc, mm_body, &m),
               "is f64 but its reduction is f32");
    smelt_ctx_clear(ctx);
    smelt_te_tensor *c = smelt_te_compute(g, "C", SMELT_DT_FLOAT32, 2, sc, mm_body, &m);
    smelt_te_tensor *d = smelt_te_compute(g, "D", SMELT_DT_FLOAT32, 2, sc, centred_body,
                                          &(two){c, c});
    CHECK(d == NULL); /* D reads C [i0] with rank 2: refused */
    smelt_ctx_clear(ctx);
    EXPECT_ERR(smelt_te_schedule_new(g, 1, &m.a), "is a placeholder");
    smelt_ctx_clear(ctx);
    smelt_te_schedule *s = smelt_te_schedule_new(g, 1, &c);
    CHECK(s != NULL);
    EXPECT_ERR(smelt_te_placeholder(g, "Q", SMELT_DT_FLOAT32, 2, sa), "after a schedule");
    EXPECT_ERR(smelt_te_split(s, "C", "i9", 4) == SMELT_OK,
               "schedule step 1 'split C i9 4': ");
    EXPECT_ERR(smelt_te_split(s, "Nope", "i0", 4) == SMELT_OK, "no stage named 'Nope'");
    EXPECT_ERR(smelt_te_split(s, "C", "i0", 0) == SMELT_OK, "factor must be positive");
    CHECK(smelt_te_split(s, "C", "i1", 16) == SMELT_OK);
    EXPECT_ERR(smelt_te_vectorize(s, "C", "k") == SMELT_OK, "schedule step 2 'vectorize C k'");
    EXPECT_ERR(smelt_te_apply_text(s, "unroll C i1.i\n# a comment\nparallel C i1\n") == SMELT_OK,
               "line 3");
    /* the failed steps were not kept; the good one of the text was */
    CHECK(!strcmp(smelt_te_schedule_text(s), "split C i1 16\nunroll C i1.i\n"));
    EXPECT_ERR(smelt_te_apply_text(s, "split C\n") == SMELT_OK, "line 1");
    smelt_te_tensor *args[3] = {m.a, c, ai};
    EXPECT_ERR(smelt_te_lower(s, 3, args), "placeholder 'B' is missing");
    smelt_te_tensor *args4[4] = {m.a, m.b, c, ai};
    smelt_ctx_clear(ctx);
    /* Ai is a placeholder C does not read: it is still an argument */
    CHECK(smelt_te_lower(s, 4, args4) != NULL);
    smelt_te_tensor *dup[3] = {m.a, m.a, c};
    EXPECT_ERR(smelt_te_lower(s, 3, dup), "named twice");
    EXPECT_ERR(smelt_te_build(s, 4, args4, "vax", 0), "unknown target 'vax'");
    smelt_te_schedule_free(s);
    smelt_te_graph_free(g);
    smelt_ctx_free(ctx);
}

/* Names from users reach the C only escaped. */
static smelt_te_expr *copy_body(smelt_te_graph *g, smelt_te_expr *const *idx, void *user)
{
    return smelt_te_binary(g, SMELT_TE_ADD, smelt_te_read(g, user, 1, idx),
                           smelt_te_const_float(g, SMELT_DT_FLOAT32, 1));
}

static void test_hostile_names(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_te_graph *g = smelt_te_graph_new(ctx);
    const char *in_name = "x*/\"\\?\?=#", *out_name = "y*/}\\";
    int64_t n[1] = {19};
    CHECK(smelt_te_placeholder(g, in_name, SMELT_DT_FLOAT32, 1, n) == NULL); /* '#' */
    smelt_ctx_clear(ctx);
    in_name = "x*/\"\\?\?=";
    smelt_te_tensor *x = smelt_te_placeholder(g, in_name, SMELT_DT_FLOAT32, 1, n);
    smelt_te_tensor *y = smelt_te_compute(g, out_name, SMELT_DT_FLOAT32, 1, n, copy_body, x);
    smelt_te_schedule *s = smelt_te_schedule_new(g, 1, &y);
    char text[128];
    snprintf(text, sizeof text, "split %s i0 8\nvectorize %s i0.i\n", out_name, out_name);
    CHECK(smelt_te_apply_text(s, text) == SMELT_OK);
    smelt_te_tensor *args[2] = {x, y};
    smelt_te_func *f = smelt_te_build(s, 2, args, NULL, 1);
    CHECK(f != NULL);
    const char *src = smelt_te_func_source(f);
    if (getenv("SHOW_SOURCE")) fputs(src, stderr);
    /* in string literals escaped ("y*\057}\\\\": no "*" "/" even there), in comments
     * defused ("y* /}..") */
    CHECK(src && !strstr(src, in_name) && !strstr(src, "?\?=") && !strstr(src, "y*/}") &&
          strstr(src, "\"y*\\057}\\\\\"") && strstr(src, "y* /}"));
    float xin[19], yout[19];
    for (int i = 0; i < 19; i++) xin[i] = (float)i;
    void *bufs[2] = {xin, yout};
    size_t bytes[2] = {sizeof xin, sizeof yout};
    CHECK(f && smelt_te_func_call(f, 2, bufs, bytes) == SMELT_OK && yout[18] == 19.0f);
    smelt_te_func_free(f);
    smelt_te_schedule_free(s);
    smelt_te_graph_free(g);
    smelt_ctx_free(ctx);
}

static smelt_status some_op(smelt_te_graph *g, int n_in, smelt_te_tensor *const *in, int n_out,
                            smelt_te_tensor **out, void *user)
{
    (void)n_in, (void)in, (void)n_out, (void)out, (void)user;
    return smelt_te_error(g, SMELT_ERR_UNSUPPORTED, "not today");
}

/* Registration checks (models with custom nodes: python/tests/test_custom_op.py). */
static void test_register_op(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    EXPECT_ERR(smelt_te_register_op(ctx, "ai.onnx", "Relu2", 1, 1, some_op, NULL) == SMELT_OK,
               "a domain other than ai.onnx");
    EXPECT_ERR(smelt_te_register_op(ctx, "my.ops", "", 1, 1, some_op, NULL) == SMELT_OK,
               "an op type");
    EXPECT_ERR(smelt_te_register_op(ctx, "my.ops", "X", 1, 0, some_op, NULL) == SMELT_OK,
               "1-16 outputs");
    EXPECT_ERR(smelt_te_register_op(ctx, "my.ops", "X", 1, 1, NULL, NULL) == SMELT_OK,
               "and a definition");
    smelt_ctx_clear(ctx);
    CHECK(smelt_te_register_op(ctx, "my.ops", "X", 1, 1, some_op, NULL) == SMELT_OK);
    smelt_te_graph *g = smelt_te_graph_new(ctx);
    CHECK(some_op(g, 0, NULL, 0, NULL, NULL) == SMELT_ERR_UNSUPPORTED);
    CHECK(smelt_ctx_status(ctx) == SMELT_ERR_UNSUPPORTED && !strcmp(smelt_ctx_message(ctx), "not today"));
    smelt_te_graph_free(g);
    smelt_ctx_free(ctx);
}

int main(void)
{
    setenv("SMELT_CACHE_DIR", "cg-test-cache", 0);
    test_matmul();
    test_elementwise();
    test_rowmax();
    test_errors();
    test_hostile_names();
    test_register_op();
    TEST_MAIN_END();
}
