/* The tuner's loop-IR features (src/tune/features.c):
 *   - every slot has its own name;
 *   - extraction is deterministic (same function twice, and a fresh lowering
 *     of the same schedule);
 *   - exact counts on a vectorized elementwise add and a transpose (stride
 *     classes), on hand-built IR (a min() extent counts its upper bound, a
 *     micro-kernel call's work);
 *   - features move the expected way between schedules of one matmul:
 *     vectorize removed, parallel added, register tiling vs the naive nest
 *     (reuse distance, temps), tensorize (kernel flops);
 *   - errors: NULL arguments, an unlowered reduction, an unknown kernel. */
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "test_util.h"
#include "tune/features.h"
#include "test_hw.h"

static float lg2(double x) { return (float)log2(1.0 + x); }

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

#define MM_M 96
#define MM_K 64
#define MM_N 128

static te_graph *matmul(smelt_ctx *ctx)
{
    static te_tensor *ab[2];
    te_graph *g = te_graph_new(ctx);
    int64_t sa[2] = {MM_M, MM_K}, sb[2] = {MM_K, MM_N}, sc[2] = {MM_M, MM_N};
    ab[0] = te_placeholder(g, "A", SMELT_DT_FLOAT32, 2, sa);
    ab[1] = te_placeholder(g, "B", SMELT_DT_FLOAT32, 2, sb);
    te_mark_output(g, te_compute(g, "C", SMELT_DT_FLOAT32, 2, sc, mm_body, ab, "matmul"));
    return g;
}

static ir_expr *add_body(te_graph *g, ir_expr *const *idx, void *user)
{
    te_tensor **xy = user;
    return ir_add(&g->b, te_read(g, xy[0], idx), te_read(g, xy[1], idx));
}

static te_graph *add2d(smelt_ctx *ctx)
{
    static te_tensor *xy[2];
    te_graph *g = te_graph_new(ctx);
    int64_t s[2] = {64, 128};
    xy[0] = te_placeholder(g, "X", SMELT_DT_FLOAT32, 2, s);
    xy[1] = te_placeholder(g, "Y", SMELT_DT_FLOAT32, 2, s);
    te_mark_output(g, te_compute(g, "Z", SMELT_DT_FLOAT32, 2, s, add_body, xy, "injective"));
    return g;
}

static ir_expr *transpose_body(te_graph *g, ir_expr *const *idx, void *user)
{
    ir_expr *ti[2] = {idx[1], idx[0]};
    return te_read(g, user, ti);
}

static te_graph *transpose(smelt_ctx *ctx)
{
    te_graph *g = te_graph_new(ctx);
    int64_t s[2] = {32, 48}, t[2] = {48, 32};
    te_tensor *x = te_placeholder(g, "X", SMELT_DT_FLOAT32, 2, s);
    te_mark_output(g, te_compute(g, "T", SMELT_DT_FLOAT32, 2, t, transpose_body, x, "injective"));
    return g;
}

/* ---- lowering a schedule and extracting ---- */

typedef te_graph *(*graph_fn)(smelt_ctx *ctx);

/* Lower g under s and extract its features (twice: they must agree). */
static smelt_status lower_extract(smelt_ctx *ctx, te_graph *g, const sch_schedule *s, float *out)
{
    sch_state *st = NULL;
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder b;
    ir_builder_init(&b, &ar);
    ir_func *f = NULL;
    float again[TUNE_FEATURE_COUNT];
    smelt_status r = sch_state_build(ctx, g, s, &st);
    if (r == SMELT_OK) r = lower_func(ctx, st, &b, "f", &f);
    if (r == SMELT_OK) r = tune_features_extract(ctx, f, out);
    if (r == SMELT_OK) r = tune_features_extract(ctx, f, again);
    if (r == SMELT_OK) CHECK(memcmp(out, again, sizeof again) == 0);
    smelt_arena_fini(&ar);
    sch_state_free(st);
    return r;
}

/* Features of `make`'s graph under schedule `text` (NULL: the default
 * schedule for 16 lanes). */
static bool features_of(graph_fn make, const char *text, float *out)
{
    smelt_ctx *ctx = smelt_ctx_new();
    te_graph *g = make(ctx);
    sch_schedule s;
    sch_schedule_init(&s);
    smelt_status r = text ? sch_schedule_parse(ctx, text, &s) : sch_default(ctx, g, test_hw(16), &s);
    if (r == SMELT_OK) r = lower_extract(ctx, g, &s, out);
    if (r != SMELT_OK) fprintf(stderr, "schedule %s: %s\n", text ? text : "(default)", smelt_ctx_message(ctx));
    sch_schedule_fini(&s);
    te_graph_free(g);
    smelt_ctx_free(ctx);
    return r == SMELT_OK;
}

/* The default schedule's text, for editing into variants. */
static char *default_text(graph_fn make)
{
    smelt_ctx *ctx = smelt_ctx_new();
    te_graph *g = make(ctx);
    sch_schedule s;
    sch_schedule_init(&s);
    char *text = NULL;
    if (sch_default(ctx, g, test_hw(16), &s) == SMELT_OK) {
        smelt_strbuf sb;
        smelt_strbuf_init(&sb);
        sch_schedule_print(&s, &sb);
        text = strdup(smelt_strbuf_cstr(&sb));
        smelt_strbuf_fini(&sb);
    }
    sch_schedule_fini(&s);
    te_graph_free(g);
    smelt_ctx_free(ctx);
    return text;
}

/* text without the lines that start with `prefix` */
static char *drop_lines(const char *text, const char *prefix)
{
    char *out = calloc(strlen(text) + 1, 1);
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p + 1) : strlen(p);
        if (strncmp(p, prefix, strlen(prefix)) != 0) strncat(out, p, len);
        p += len;
    }
    return out;
}

static const float *buf_slot(const float *x, int i) { return x + TUNE_F_GLOBAL_COUNT_ + i * TUNE_F_BUF_SLOTS; }

/* The buffer slot whose unique bytes are `bytes` (and not a temp), or NULL. */
static const float *find_buffer(const float *x, double bytes)
{
    for (int i = 0; i < TUNE_FEATURE_BUFFERS; i++) {
        const float *b = buf_slot(x, i);
        if (b[TUNE_FB_TEMP] == 0 && fabsf(b[TUNE_FB_UNIQUE_BYTES] - lg2(bytes)) < 1e-4f) return b;
    }
    return NULL;
}

/* ---- tests ---- */

static void test_names(void)
{
    for (int i = 0; i < TUNE_FEATURE_COUNT; i++) {
        const char *n = tune_feature_name(i);
        CHECK(n && strcmp(n, "?") != 0 && n[0]);
        for (int j = 0; j < i; j++)
            if (!strcmp(n, tune_feature_name(j))) {
                fprintf(stderr, "slots %d and %d are both named %s\n", j, i, n);
                CHECK(false);
            }
    }
    CHECK(!strcmp(tune_feature_name(-1), "?"));
    CHECK(!strcmp(tune_feature_name(TUNE_FEATURE_COUNT), "?"));
    CHECK(!strcmp(tune_feature_name(TUNE_F_FLOPS), "flops"));
    CHECK(!strcmp(tune_feature_name(TUNE_F_GLOBAL_COUNT_ + TUNE_F_BUF_SLOTS + TUNE_FB_REUSE), "buf1.reuse"));
}

static void test_deterministic(void)
{
    float a[TUNE_FEATURE_COUNT], b[TUNE_FEATURE_COUNT];
    memset(a, 0xab, sizeof a);
    memset(b, 0xcd, sizeof b);
    CHECK(features_of(matmul, NULL, a));
    CHECK(features_of(matmul, NULL, b));
    CHECK(memcmp(a, b, sizeof a) == 0);
    for (int i = 0; i < TUNE_FEATURE_COUNT; i++) CHECK(isfinite(a[i]) && a[i] >= 0);
}

/* Z = X + Y over [64, 128] f32, rows x 16-lane vectors: every count known. */
static void test_elementwise_counts(void)
{
    float x[TUNE_FEATURE_COUNT];
    CHECK(features_of(add2d, "split Z i1 16\nvectorize Z i1.i\nparallel Z i0", x));
    double n = 64 * 128;
    CHECK_NEAR(x[TUNE_F_FLOAT_ADD], lg2(n), 1e-4);
    CHECK_NEAR(x[TUNE_F_FLOAT_MUL], 0, 0);
    CHECK_NEAR(x[TUNE_F_FLOAT_FMA], 0, 0);
    CHECK_NEAR(x[TUNE_F_LOADS], lg2(2 * n), 1e-4);
    CHECK_NEAR(x[TUNE_F_STORES], lg2(n), 1e-4);
    CHECK_NEAR(x[TUNE_F_FLOPS], lg2(n), 1e-4);
    CHECK_NEAR(x[TUNE_F_ITERATIONS], lg2(64 + 64 * 8 + n), 1e-4);
    CHECK_NEAR(x[TUNE_F_ARG_BYTES], lg2(3 * n * 4), 1e-4);
    CHECK_NEAR(x[TUNE_F_BYTES_ACCESSED], lg2(3 * n * 4), 1e-4);
    CHECK_NEAR(x[TUNE_F_INTENSITY], lg2(1.0 / 12), 1e-4);
    CHECK_NEAR(x[TUNE_F_VEC_SHARE], 1, 0);
    CHECK_NEAR(x[TUNE_F_PAR_SHARE], 1, 0);
    CHECK_NEAR(x[TUNE_F_MAX_DEPTH], 3, 0);
    CHECK_NEAR(x[TUNE_F_NESTS], 1, 0);
    CHECK_NEAR(x[TUNE_F_DOM_INNER_EXT], lg2(16), 1e-4);
    CHECK_NEAR(x[TUNE_F_DOM_INNER_VECTOR], 1, 0);
    CHECK_NEAR(x[TUNE_F_DOM_PAR_EXT], lg2(64), 1e-4);
    CHECK_NEAR(x[TUNE_F_PAR_CHUNK_WORK], lg2(128), 1e-4);
    CHECK_NEAR(x[TUNE_F_TEMP_BYTES], 0, 0);
    /* working set per level: 16 lanes, a row of 128, all rows (levels 4, 5: the whole nest) */
    static const double elems[TUNE_FEATURE_LEVELS] = {16, 128, 64 * 128, 64 * 128, 64 * 128};
    for (int i = 0; i < TUNE_FEATURE_LEVELS; i++) {
        CHECK_NEAR(x[TUNE_F_DOM_BYTES_L1 + i], lg2(3 * 4 * elems[i]), 1e-4);
        CHECK_NEAR(x[TUNE_F_DOM_INTENSITY_L1 + i], lg2(1.0 / 12), 1e-4);
    }
    for (int i = 0; i < 3; i++) { /* X, Y, Z: 32 KiB each, touched once, unit stride */
        const float *b = buf_slot(x, i);
        CHECK_NEAR(b[TUNE_FB_BYTES], lg2(n * 4), 1e-4);
        CHECK_NEAR(b[TUNE_FB_UNIQUE_BYTES], lg2(n * 4), 1e-4);
        CHECK_NEAR(b[TUNE_FB_REUSE], 1, 1e-4);
        CHECK_NEAR(b[TUNE_FB_UNIT], 1, 0);
        CHECK_NEAR(b[TUNE_FB_REUSE_DIST], 0, 0);
    }
    CHECK_NEAR(buf_slot(x, 2)[TUNE_FB_WRITE_SHARE], 1, 0); /* ties keep the first seen: X, Y, Z */
    CHECK_NEAR(buf_slot(x, 3)[TUNE_FB_BYTES], 0, 0);       /* no fourth buffer */
}

/* T[i, j] = X[j, i]: the read walks X with stride 48 along the inner loop. */
static void test_transpose_stride(void)
{
    float x[TUNE_FEATURE_COUNT];
    CHECK(features_of(transpose, "", x));
    const float *xb = buf_slot(x, 0), *tb = buf_slot(x, 1);
    CHECK_NEAR(xb[TUNE_FB_STRIDED], 1, 0);
    CHECK_NEAR(xb[TUNE_FB_UNIT], 0, 0);
    CHECK_NEAR(xb[TUNE_FB_STRIDE], lg2(48), 1e-4);
    CHECK_NEAR(xb[TUNE_FB_WRITE_SHARE], 0, 0);
    CHECK_NEAR(tb[TUNE_FB_UNIT], 1, 0);
    CHECK_NEAR(tb[TUNE_FB_WRITE_SHARE], 1, 0);
    CHECK_NEAR(x[TUNE_F_FLOPS], 0, 0);
    CHECK_NEAR(x[TUNE_F_DOM_COUNT], lg2(32 * 48), 1e-4); /* the copy is the dominant store */
}

/* The same transpose through smelt.transpose_f32 in 16 x 16 tiles: one
 * load and one store per element, both buffers walked along unit strides,
 * no float work. */
static void test_transpose_kernel(void)
{
    float x[TUNE_FEATURE_COUNT];
    CHECK(features_of(transpose, "tile T i0 i1 16 16\ntensorize T i0.i smelt.transpose_f32", x));
    const float *xb = buf_slot(x, 0), *tb = buf_slot(x, 1);
    CHECK(x[TUNE_F_KERNEL_CALL] == 1);
    CHECK_NEAR(x[TUNE_F_LOADS], lg2(32 * 48), 1e-4);
    CHECK_NEAR(x[TUNE_F_STORES], lg2(32 * 48), 1e-4);
    CHECK_NEAR(x[TUNE_F_FLOPS], 0, 0);
    CHECK_NEAR(xb[TUNE_FB_UNIT], 1, 0);
    CHECK_NEAR(tb[TUNE_FB_UNIT], 1, 0);
    CHECK_NEAR(xb[TUNE_FB_WRITE_SHARE] + tb[TUNE_FB_WRITE_SHARE], 1, 0); /* one read, one written */
}

/* Removing the vectorize steps of the default matmul schedule: same work,
 * no vector loops. */
static void test_vectorize_removed(void)
{
    char *text = default_text(matmul);
    CHECK(text && strstr(text, "vectorize "));
    if (!text) return;
    char *plain = drop_lines(text, "vectorize ");
    float v[TUNE_FEATURE_COUNT], s[TUNE_FEATURE_COUNT];
    CHECK(features_of(matmul, text, v));
    CHECK(features_of(matmul, plain, s));
    CHECK(v[TUNE_F_VEC_LOOPS] > 0);
    CHECK(s[TUNE_F_VEC_LOOPS] == 0);
    CHECK(v[TUNE_F_VEC_SHARE] > 0.9f);
    CHECK(s[TUNE_F_VEC_SHARE] == 0);
    CHECK(v[TUNE_F_DOM_INNER_VECTOR] == 1 && s[TUNE_F_DOM_INNER_VECTOR] == 0);
    CHECK(v[TUNE_F_DOM_VEC_LANES] > s[TUNE_F_DOM_VEC_LANES]);
    CHECK_NEAR(v[TUNE_F_FLOPS], s[TUNE_F_FLOPS], 1e-4);
    CHECK_NEAR(v[TUNE_F_FLOPS], lg2(2.0 * MM_M * MM_N * MM_K), 1e-3);
    CHECK_NEAR(v[TUNE_F_FLOAT_FMA], lg2((double)MM_M * MM_N * MM_K), 1e-3);
    free(plain);
    free(text);
}

/* Adding / removing the parallel annotation moves the parallel features. */
static void test_parallel(void)
{
    char *text = default_text(matmul);
    CHECK(text && strstr(text, "parallel "));
    if (!text) return;
    char *serial = drop_lines(text, "parallel ");
    float p[TUNE_FEATURE_COUNT], s[TUNE_FEATURE_COUNT];
    CHECK(features_of(matmul, text, p));
    CHECK(features_of(matmul, serial, s));
    CHECK(p[TUNE_F_PAR_LOOPS] >= 1 && s[TUNE_F_PAR_LOOPS] == 0);
    CHECK(p[TUNE_F_PAR_SHARE] > 0.9f && s[TUNE_F_PAR_SHARE] == 0);
    CHECK(p[TUNE_F_DOM_PAR_EXT] > 1 && s[TUNE_F_DOM_PAR_EXT] == 1); /* log2(1 + 1): no parallel loop */
    CHECK(p[TUNE_F_PAR_CHUNK_WORK] > 0 && s[TUNE_F_PAR_CHUNK_WORK] == 0);
    CHECK(p[TUNE_F_SERIAL_FLOPS] < s[TUNE_F_SERIAL_FLOPS]);
    CHECK_NEAR(s[TUNE_F_SERIAL_FLOPS], s[TUNE_F_FLOPS], 1e-4);
    CHECK_NEAR(p[TUNE_F_FLOPS], s[TUNE_F_FLOPS], 1e-4);
    free(serial);
    free(text);
}

/* The default schedule's shape with the register tile pinned at 8 x 32. */
static const char k_tiled[] =
    "cache_write C\nsplit C i0 8\nsplit C i1 32\nsplit C i1.i 16\n"
    "reorder C i1.o i0.o i0.i i1.i.o i1.i.i\nvectorize C i1.i.i\nfuse C i1.o i0.o\n"
    "parallel C i1.o.i0.o\ncompute_at C.local C i1.o.i0.o\nreorder C.local k i0 i1\n"
    "unroll C.local i0\nsplit C.local i1 16\nunroll C.local i1.o\nvectorize C.local i1.i";

/* The naive i, j, k nest streams all of B between two uses of an element;
 * the register tile keeps a tile of B rows and a temp tile. */
static void test_tiling_reuse(void)
{
    float naive[TUNE_FEATURE_COUNT], tiled[TUNE_FEATURE_COUNT];
    CHECK(features_of(matmul, "", naive));
    CHECK(features_of(matmul, k_tiled, tiled));
    const float *bn = find_buffer(naive, MM_K * MM_N * 4.0), *bt = find_buffer(tiled, MM_K * MM_N * 4.0);
    CHECK(bn && bt);
    if (bn && bt) {
        CHECK_NEAR(bn[TUNE_FB_REUSE_DIST], lg2(MM_K * MM_N * 4.0), 1e-4);
        CHECK(bt[TUNE_FB_REUSE_DIST] < bn[TUNE_FB_REUSE_DIST] - 4);
        CHECK(bn[TUNE_FB_UNIT] == 0 && bn[TUNE_FB_STRIDED] == 1); /* k innermost: stride N */
        CHECK_NEAR(bn[TUNE_FB_STRIDE], lg2(MM_N), 1e-4);
        CHECK(bt[TUNE_FB_UNIT] == 1);
    }
    CHECK(naive[TUNE_F_TEMP_BYTES] == 0 && tiled[TUNE_F_TEMP_BYTES] > 0);
    CHECK(tiled[TUNE_F_TEMP_MIN_BYTES] > 0 && tiled[TUNE_F_TEMP_MIN_BYTES] < lg2(64 * 1024));
    CHECK(tiled[TUNE_F_CODE_SIZE] > naive[TUNE_F_CODE_SIZE]); /* unrolled register tile */
    CHECK_NEAR(naive[TUNE_F_INTENSITY], tiled[TUNE_F_INTENSITY], 1e-4);
    CHECK_NEAR(naive[TUNE_F_DOM_INNER_SERIAL], 1, 0);
    /* two innermost loops: a register tile row (C.local 32 + A 1 + B 32 floats) vs a whole
     * row of C against all of B (128 + 64 + 64 * 128) */
    CHECK_NEAR(tiled[TUNE_F_DOM_BYTES_L2], lg2(65 * 4), 1e-4);
    CHECK_NEAR(naive[TUNE_F_DOM_BYTES_L2], lg2((128 + 64 + 64 * 128) * 4), 1e-4);
    /* the register tile with k: 256 accumulators, 8 x 64 of A, 64 x 32 of B, 2 x 256 x 64 flops */
    CHECK_NEAR(tiled[TUNE_F_DOM_BYTES_L4], lg2((256 + 512 + 2048) * 4), 1e-4);
    CHECK_NEAR(tiled[TUNE_F_DOM_INTENSITY_L4], lg2(2.0 * 256 * 64 / ((256 + 512 + 2048) * 4)), 1e-4);
    CHECK(tiled[TUNE_F_DOM_INTENSITY_L4] > naive[TUNE_F_DOM_INTENSITY_L2]);
}

static void test_tensorize(void)
{
    float x[TUNE_FEATURE_COUNT];
    CHECK(features_of(matmul, "tile C i0 i1 8 16\ntensorize C i0.i smelt.gemm_f32\nparallel C i0.o", x));
    CHECK(x[TUNE_F_KERNEL_CALL] == 1);
    CHECK_NEAR(x[TUNE_F_KERNEL_FLOPS], lg2(2.0 * MM_M * MM_N * MM_K), 1e-4);
    CHECK_NEAR(x[TUNE_F_FLOPS], x[TUNE_F_KERNEL_FLOPS], 1e-4);
    CHECK_NEAR(x[TUNE_F_PAR_SHARE], 1, 1e-6);
    float d[TUNE_FEATURE_COUNT];
    CHECK(features_of(matmul, NULL, d));
    CHECK(d[TUNE_F_KERNEL_CALL] == 0 && d[TUNE_F_KERNEL_FLOPS] == 0);
}

/* Random legal schedules of the matmul: features extract, are finite and
 * >= 0, and the counts never fall below the true work (guarded tails and
 * min() extents count with upper bounds, never less). */
static void test_random_schedules(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    te_graph *g = matmul(ctx);
    int distinct = 0;
    float prev[TUNE_FEATURE_COUNT] = {0};
    for (uint64_t seed = 1; seed <= 60; seed++) {
        sch_schedule s;
        sch_schedule_init(&s);
        float x[TUNE_FEATURE_COUNT];
        smelt_status r = sch_random(ctx, g, seed, 12, &s);
        if (r == SMELT_OK) r = lower_extract(ctx, g, &s, x);
        if (r != SMELT_OK) fprintf(stderr, "random schedule %llu: %s\n", (unsigned long long)seed, smelt_ctx_message(ctx));
        CHECK(r == SMELT_OK);
        sch_schedule_fini(&s);
        smelt_ctx_clear(ctx);
        if (r != SMELT_OK) continue;
        bool ok = true;
        for (int i = 0; i < TUNE_FEATURE_COUNT; i++) ok = ok && isfinite(x[i]) && x[i] >= 0;
        CHECK(ok);
        CHECK(x[TUNE_F_FLOPS] >= lg2(2.0 * MM_M * MM_N * MM_K) - 1e-4f);
        CHECK(x[TUNE_F_STORES] >= lg2((double)MM_M * MM_N) - 1e-4f);
        CHECK(x[TUNE_F_LOADS] >= lg2(2.0 * MM_M * MM_N * MM_K) - 1e-4f);
        CHECK(x[TUNE_F_VEC_SHARE] <= 1 && x[TUNE_F_PAR_SHARE] <= 1 && x[TUNE_F_UNROLL_SHARE] <= 1);
        distinct += memcmp(x, prev, sizeof x) != 0;
        memcpy(prev, x, sizeof x);
    }
    CHECK(distinct > 30); /* the features see the schedules */
    te_graph_free(g);
    smelt_ctx_free(ctx);
}

/* ---- hand-built IR ---- */

typedef struct hand {
    smelt_arena ar;
    ir_builder b;
    ir_buffer *x, *y;
    ir_func f;
} hand;

static void hand_init(hand *h)
{
    smelt_arena_init(&h->ar);
    ir_builder_init(&h->b, &h->ar);
    int64_t n = 100;
    h->x = ir_buffer_new(&h->b, "x", SMELT_DT_FLOAT32, 1, &n, IR_BUF_INPUT);
    h->y = ir_buffer_new(&h->b, "y", SMELT_DT_FLOAT32, 1, &n, IR_BUF_OUTPUT);
    h->f = (ir_func){.name = "hand", .n_params = 0};
}

/* for i in [0, 10): for j in [0, min(4, 10 - i)): y[i*10 + j] = x[i*10 + j] * 2 */
static void test_upper_bound_extent(void)
{
    hand h;
    hand_init(&h);
    ir_builder *b = &h.b;
    ir_var *i = ir_var_new(b, "i", SMELT_DT_INT64), *j = ir_var_new(b, "j", SMELT_DT_INT64);
    ir_expr *idx = ir_add(b, ir_mul(b, ir_var_ref(b, i), ir_int(b, 10)), ir_var_ref(b, j));
    ir_expr *val = ir_mul(b, ir_load(b, h.x, 1, &idx), ir_const_float(b, SMELT_DT_FLOAT32, 2));
    ir_expr *ext = ir_binary(b, IR_MIN, ir_int(b, 4), ir_sub(b, ir_int(b, 10), ir_var_ref(b, i)));
    ir_stmt *inner = ir_for(b, j, ir_int(b, 0), ext, IR_FOR_SERIAL, ir_store(b, h.y, 1, &idx, val));
    h.f.body = ir_for(b, i, ir_int(b, 0), ir_int(b, 10), IR_FOR_SERIAL, inner);
    CHECK(!b->failed);
    smelt_ctx *ctx = smelt_ctx_new();
    float x[TUNE_FEATURE_COUNT];
    CHECK(tune_features_extract(ctx, &h.f, x) == SMELT_OK);
    CHECK_NEAR(x[TUNE_F_NONCONST_LOOPS], 1, 0);
    CHECK_NEAR(x[TUNE_F_ITERATIONS], lg2(10 + 40), 1e-4);
    CHECK_NEAR(x[TUNE_F_FLOAT_MUL], lg2(40), 1e-4);
    CHECK_NEAR(x[TUNE_F_DOM_INNER_EXT], lg2(4), 1e-4);
    /* x[0 .. 93] spans 94 elements but only 40 are read */
    CHECK_NEAR(buf_slot(x, 0)[TUNE_FB_UNIQUE_BYTES], lg2(40 * 4), 1e-4);
    smelt_ctx_free(ctx);
    smelt_arena_fini(&h.ar);
}

static void test_errors(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    float x[TUNE_FEATURE_COUNT];
    CHECK(tune_features_extract(ctx, NULL, x) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "NULL function");
    smelt_ctx_clear(ctx);

    hand h;
    hand_init(&h);
    ir_builder *b = &h.b;
    CHECK(tune_features_extract(ctx, &h.f, NULL) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "NULL out");
    smelt_ctx_clear(ctx);

    /* a te reduction left in the body: not a lowered function */
    ir_var *k = ir_var_new(b, "k", SMELT_DT_INT64);
    ir_axis ax = {k, 100, NULL};
    ir_expr *ki = ir_var_ref(b, k), *zero = ir_int(b, 0);
    ir_expr *red = ir_reduce(b, IR_REDUCE_SUM, ir_load(b, h.x, 1, &ki), 1, &ax);
    h.f.body = ir_store(b, h.y, 1, &zero, red);
    CHECK(tune_features_extract(ctx, &h.f, x) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "not lowered");
    smelt_ctx_clear(ctx);

    ir_call_arg args[1] = {{h.x, zero}};
    h.f.body = ir_call_stmt(b, "smelt.nope", 1, args);
    CHECK(tune_features_extract(ctx, &h.f, x) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "micro-kernel");
    smelt_ctx_clear(ctx);

    h.f.body = NULL; /* an empty function is all zeros, not an error */
    memset(x, 0xff, sizeof x);
    CHECK(tune_features_extract(ctx, &h.f, x) == SMELT_OK);
    for (int i = 0; i < TUNE_FEATURE_COUNT; i++) CHECK(x[i] == 0);
    smelt_arena_fini(&h.ar);
    smelt_ctx_free(ctx);
}

/* ---- allocation failures ---- */

/* The k-th allocation of an extraction fails, for every k: this module's
 * own allocations fail with out of memory; inside tir's bounds and affine
 * helpers a failure only makes the analysis less precise (their contract),
 * so a vector may then differ in index-derived slots, but the counts (from
 * constant trip counts) never do.  Nothing leaks (ASan). */
static void test_alloc_failures(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    te_graph *g = matmul(ctx);
    sch_schedule s;
    sch_schedule_init(&s);
    sch_state *st = NULL;
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder b;
    ir_builder_init(&b, &ar);
    ir_func *f = NULL;
    CHECK(sch_default(ctx, g, test_hw(16), &s) == SMELT_OK && sch_state_build(ctx, g, &s, &st) == SMELT_OK &&
          lower_func(ctx, st, &b, "f", &f) == SMELT_OK);
    float want[TUNE_FEATURE_COUNT], x[TUNE_FEATURE_COUNT];
    CHECK(f && tune_features_extract(ctx, f, want) == SMELT_OK);
    smelt_allocator hook = {test_failing_alloc, test_plain_release, NULL};
    int k, failures = 0, degraded = 0;
    for (k = 0; f && k < 256; k++) {
        test_fail_at = k;
        test_allocs = 0;
        smelt_set_allocator(&hook);
        smelt_status r = tune_features_extract(ctx, f, x);
        smelt_set_allocator(NULL);
        if (r == SMELT_OK) {
            static const int counts[] = {TUNE_F_FLOPS, TUNE_F_LOADS, TUNE_F_STORES, TUNE_F_ITERATIONS};
            for (size_t i = 0; i < SMELT_ARRAY_LEN(counts); i++) CHECK(x[counts[i]] == want[counts[i]]);
            for (int i = 0; i < TUNE_FEATURE_COUNT; i++) CHECK(isfinite(x[i]) && x[i] >= 0);
            degraded += memcmp(x, want, sizeof x) != 0;
        } else {
            CHECK(r == SMELT_ERR_NOMEM);
            CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "out of memory");
            failures++;
        }
        smelt_ctx_clear(ctx);
        if (test_allocs <= k) break;
    }
    CHECK(k < 256 && k > 0 && failures > 0 && failures + degraded <= k);
    printf("allocation failures: %d allocations, %d out of memory, %d less precise\n", k, failures, degraded);
    smelt_arena_fini(&ar);
    sch_state_free(st);
    sch_schedule_fini(&s);
    te_graph_free(g);
    smelt_ctx_free(ctx);
}

int main(void)
{
    test_names();
    test_deterministic();
    test_elementwise_counts();
    test_transpose_stride();
    test_transpose_kernel();
    test_vectorize_removed();
    test_parallel();
    test_tiling_reuse();
    test_tensorize();
    test_random_schedules();
    test_upper_bound_extent();
    test_errors();
    test_alloc_failures();
    TEST_MAIN_END();
}
