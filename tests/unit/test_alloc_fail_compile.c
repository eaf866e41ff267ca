/* Allocation failures through the whole compile (as SQLite's malloc tests):
 * load, optimise (graph passes), lower (schedules, loop IR passes) and emit
 * C, with allocation number N refused, for every N from 1 to the number of
 * allocations the compile makes.  Each run must end in SMELT_ERR_NOMEM with
 * a message, or succeed with exactly the C of a run without failures (a
 * refused allocation that was worked around must not change the output),
 * and must give back every byte it took (counted here, and by ASan's leak
 * checker at exit).  The C compiler is not run.
 *
 * First the simplifier alone on index expressions, every allocation refused
 * in turn: it must return NULL with the builder failed, or the same result
 * (issue 16: a failed rebuild of a product became a NULL term, read by the
 * div/mod fusion).
 *
 * Arenas take memory in 64 KiB blocks, so most IR nodes are not allocations
 * of their own; attention runs again with 16-byte blocks (one allocation
 * per node, smelt_arena_set_block_size), where a failure can land anywhere
 * inside a pass, and so does the reproducer with --per-node.
 *
 *   test_alloc_fail_compile                 the models below
 *   test_alloc_fail_compile --per-node      the reproducer, a node per allocation
 *   test_alloc_fail_compile MODEL TARGET    one model (prints the count)
 *   test_alloc_fail_compile MODEL TARGET DIM MIN MAX   with DIM a run-time dim
 *                                           (smelt_model_set_dim_range)
 *   SMELT_ALLOC_FAIL_BLOCK=16               arena block size for that run
 *   SMELT_ALLOC_FAIL_VERBOSE=1              each N's outcome
 *   SMELT_ALLOC_FAIL_TRACE=N                the stack of allocation N (ASan) */
#include <stdbool.h>
#include <stdlib.h>

#include "api/smelt_internal.h"
#include "codegen/codegen.h"
#include "lower/program.h"
#include "test_util.h"
#include "tir/simplify.h"

/* ---- counting allocator with one injected failure ---- */

typedef struct fail_state {
    long count;   /* allocations so far */
    long fail_at; /* refuse allocation number fail_at (1-based); 0: never */
    long live;    /* blocks not yet released */
} fail_state;

static fail_state g_fs;
static long g_trace_at; /* SMELT_ALLOC_FAIL_TRACE=N: stack of the refused allocation N */

/* In sanitizer builds: where a refused allocation came from. */
void __sanitizer_print_stack_trace(void) __attribute__((weak));

static void *fail_alloc(void *user, size_t size)
{
    fail_state *fs = user;
    if (++fs->count == fs->fail_at) {
        if (fs->fail_at == g_trace_at && __sanitizer_print_stack_trace) __sanitizer_print_stack_trace();
        return NULL;
    }
    void *p = malloc(size ? size : 1);
    if (p) fs->live++;
    return p;
}

static void fail_release(void *user, void *ptr)
{
    fail_state *fs = user;
    if (!ptr) return;
    fs->live--;
    free(ptr);
}

static void arm(long fail_at)
{
    g_fs.count = 0;
    g_fs.fail_at = fail_at;
}

/* ---- one compile ---- */

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = n > 0 ? malloc((size_t)n) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = b ? (size_t)n : 0;
    return b;
}

/* A run-time dim given before the compile (NULL name: none). */
static const char *g_dim;
static int64_t g_dim_min, g_dim_max;

/* Load, optimise, lower and emit; *c_out (malloc'd) gets the C on success. */
static smelt_status compile_to_c(smelt_ctx *ctx, const unsigned char *bytes, size_t n,
                                 const cg_target *t, char **c_out)
{
    *c_out = NULL;
    smelt_model *m = smelt_model_load_bytes(ctx, bytes, n, NULL);
    if (!m) return smelt_ctx_status(ctx);
    smelt_status s = g_dim ? smelt_model_set_dim_range(ctx, m, g_dim, g_dim_min, g_dim_max) : SMELT_OK;
    if (s == SMELT_OK) s = smelt_model_optimize(ctx, m, NULL);
    lowered_program *lp = NULL;
    lower_options lo = {.hw = &t->hw};
    if (s == SMELT_OK) s = lower_graph(ctx, m->graph, &lo, &lp);
    smelt_strbuf c;
    smelt_strbuf_init(&c);
    if (s == SMELT_OK) s = cg_emit_program(ctx, &lp->prog, t, &c);
    if (s == SMELT_OK && c.failed) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s == SMELT_OK) *c_out = strdup(smelt_strbuf_cstr(&c));
    smelt_strbuf_fini(&c);
    lowered_program_free(lp);
    smelt_model_free(m);
    return s;
}

/* ---- every failure point of one model ---- */

static void check_model(const char *path, const char *target)
{
    size_t n;
    unsigned char *bytes = read_all(path, &n);
    const cg_target *t = cg_target_find(target);
    CHECK(bytes != NULL && t != NULL);
    if (!bytes || !t) {
        free(bytes);
        return;
    }
    bool verbose = getenv("SMELT_ALLOC_FAIL_VERBOSE") != NULL;
    smelt_ctx *ctx = smelt_ctx_new();
    long live0 = g_fs.live;
    char *want = NULL;
    arm(0);
    smelt_status s = compile_to_c(ctx, bytes, n, t, &want);
    if (s != SMELT_OK) fprintf(stderr, "%s: %s\n", path, smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK && want != NULL);
    long total = g_fs.count;
    int nomem = 0, absorbed = 0, bad = 0;
    for (long k = 1; want && k <= total; k++) {
        smelt_ctx_clear(ctx);
        arm(k);
        char *got = NULL;
        s = compile_to_c(ctx, bytes, n, t, &got);
        arm(0);
        const char *msg = smelt_ctx_message(ctx);
        bool ok = s == SMELT_OK ? got && strcmp(got, want) == 0
                                : s == SMELT_ERR_NOMEM && msg && *msg;
        if (g_fs.live != live0) {
            fprintf(stderr, "%s: allocation %ld refused: %ld blocks not released\n", path, k,
                    g_fs.live - live0);
            ok = false;
        }
        if (!ok)
            fprintf(stderr, "%s (%s): allocation %ld of %ld refused: %s: %s\n", path, target, k,
                    total, smelt_status_name(s), s == SMELT_OK ? "different C" : msg);
        else if (verbose)
            fprintf(stderr, "%ld: %s\n", k, s == SMELT_OK ? "absorbed" : msg);
        bad += !ok;
        nomem += ok && s != SMELT_OK;
        absorbed += ok && s == SMELT_OK;
        free(got);
    }
    CHECK(bad == 0);
    printf("%s (%s): %ld allocations, %d out of memory, %d absorbed (same C), %d wrong\n", path,
           target, total, nomem, absorbed, bad);
    free(want);
    smelt_ctx_free(ctx);
    free(bytes);
}

/* ---- the simplifier alone ---- */

static char *print_expr(const ir_expr *e)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    ir_expr_print(e, &sb);
    char *r = strdup(smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
    return r;
}

/* Simplify e in an arena with room bytes left in its block and the next
 * allocation from the allocator refused (room < 0: none refused), so the
 * builder fails at the first node that does not fit: stepping room by 16
 * bytes refuses each of the simplifier's allocations in turn.  *failed gets
 * the builder's flag; returns NULL or the printed result. */
static char *simplify_with_failure(ir_expr *e, long room, bool *failed, bool *hit)
{
    smelt_arena a;
    smelt_arena_init(&a);
    ir_builder b;
    ir_builder_init(&b, &a);
    b.next_id = 1000;
    smelt_arena_alloc(&a, 16);
    size_t cap = a.total;
    if (room >= 0 && (size_t)room + 16 < cap) smelt_arena_alloc(&a, cap - 16 - (size_t)room);
    arm(room >= 0 ? 1 : 0);
    ir_expr *r = tir_simplify_expr(&b, e, NULL);
    *hit = room >= 0 && g_fs.count >= 1;
    arm(0);
    *failed = b.failed;
    char *text = r ? print_expr(r) : NULL;
    smelt_arena_fini(&a);
    return text;
}

static void check_simplify_expr(ir_expr *e, const char *what)
{
    bool failed, hit;
    char *want = simplify_with_failure(e, -1, &failed, &hit);
    CHECK(want != NULL && !failed);
    int bad = 0;
    long k = 0;
    for (; want; k += 16) {
        char *got = simplify_with_failure(e, k, &failed, &hit);
        if (!hit) {
            free(got);
            break;
        }
        bool ok = got ? failed || strcmp(got, want) == 0 : failed;
        if (!ok) fprintf(stderr, "simplify %s, refused past %ld bytes: %s\n", what, k, got ? got : "NULL");
        bad += !ok;
        free(got);
    }
    CHECK(bad == 0);
    printf("simplify %s: %ld bytes of nodes, each allocation refused in turn, %d wrong\n", what, k,
           bad);
    free(want);
}

static void test_simplify_failures(void)
{
    smelt_arena a;
    smelt_arena_init(&a);
    ir_builder b;
    ir_builder_init(&b, &a);
    ir_expr *i = ir_var_ref(&b, ir_var_new(&b, "i", SMELT_DT_INT64));
    ir_expr *j = ir_var_ref(&b, ir_var_new(&b, "j", SMELT_DT_INT64));
    int64_t shape[2] = {8, 8};
    ir_buffer *buf = ir_buffer_new(&b, "B", SMELT_DT_INT64, 2, shape, IR_BUF_INPUT);
    ir_expr *j0 = ir_add(&b, j, ir_int(&b, 0)); /* simplifies to j: its users are rebuilt */
    /* a product of two terms next to a div/mod pair: the product is rebuilt
     * (an allocation), then the div/mod fusion reads every term */
    ir_expr *prod = ir_add(&b, ir_mul(&b, i, j0),
                           ir_add(&b, ir_mul(&b, ir_binary(&b, IR_FLOORDIV, i, ir_int(&b, 4)), ir_int(&b, 4)),
                                  ir_binary(&b, IR_FLOORMOD, i, ir_int(&b, 4))));
    ir_expr *idx[2] = {j0, ir_binary(&b, IR_FLOORMOD, ir_add(&b, i, ir_int(&b, 8)), ir_int(&b, 8))};
    ir_expr *load = ir_add(&b, ir_load(&b, buf, 2, idx), ir_mul(&b, j0, ir_int(&b, 3)));
    ir_expr *cmp = ir_binary(&b, IR_LT, ir_add(&b, ir_mul(&b, i, ir_int(&b, 2)), j0),
                             ir_add(&b, ir_mul(&b, j0, i), ir_int(&b, 5)));
    ir_expr *sel = ir_select(&b, cmp, load, ir_binary(&b, IR_MIN, prod, ir_add(&b, j0, ir_int(&b, 1))));
    CHECK(!b.failed);
    check_simplify_expr(prod, "i*(j+0) + floordiv(i,4)*4 + floormod(i,4)");
    check_simplify_expr(load, "B[j+0, (i+8) mod 8] + (j+0)*3");
    check_simplify_expr(sel, "select(compare, load, min)");
    smelt_arena_fini(&a);
}

int main(int argc, char **argv)
{
    smelt_allocator a = {fail_alloc, fail_release, &g_fs};
    smelt_set_allocator(&a);
    if (getenv("SMELT_ALLOC_FAIL_TRACE")) g_trace_at = atol(getenv("SMELT_ALLOC_FAIL_TRACE"));
    if (getenv("SMELT_ALLOC_FAIL_BLOCK")) smelt_arena_set_block_size((size_t)atol(getenv("SMELT_ALLOC_FAIL_BLOCK")));
    if (argc == 3) {
        check_model(argv[1], argv[2]);
    } else if (argc == 6) {
        g_dim = argv[3];
        g_dim_min = atol(argv[4]);
        g_dim_max = atol(argv[5]);
        check_model(argv[1], argv[2]);
    } else if (argc == 2 && strcmp(argv[1], "--per-node") == 0) {
        /* the fuzz reproducer with every IR node an allocation (its own
         * ctest entry: 7 000 compiles) */
        smelt_arena_set_block_size(16);
        check_model(SMELT_SOURCE_DIR "/tests/models/small/gather_chain.onnx", "generic");
        smelt_arena_set_block_size(0);
    } else {
        test_simplify_failures();
        /* arenas in 64 KiB blocks, as always: every allocation the compile makes */
        check_model(SMELT_SOURCE_DIR "/tests/models/small/gather_chain.onnx", "avx2");
        check_model(SMELT_SOURCE_DIR "/tests/models/small/attention.onnx", "avx512");
        check_model(SMELT_SOURCE_DIR "/models/tiny_cnn/model.onnx", "avx2");
        /* arenas in 16-byte blocks: (nearly) every IR node an allocation, so a
         * failure lands in the middle of each pass */
        smelt_arena_set_block_size(16);
        check_model(SMELT_SOURCE_DIR "/tests/models/small/attention.onnx", "avx2");
        smelt_arena_set_block_size(0);
    }
    smelt_set_allocator(NULL);
    TEST_MAIN_END();
}
