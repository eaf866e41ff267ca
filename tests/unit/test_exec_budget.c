/* The reference executor's memory limit (exec.h): the tensors it holds at
 * once stay within $SMELT_MEMORY_LIMIT, going over names the limit and how
 * to raise it, and constant folding keeps to the same limit. */
#include <stdlib.h>

#include "passes/pass_graphs.h"

#define N 100 /* floats per tensor: 400 bytes */

static const int64_t vec_dims[1] = {N};

/* a = -x, b = -a, c = a + b: a, b and c are alive together (1200 bytes). */
static void diamond(gr_graph *g)
{
    gr_value *x = tg_input(g, "x", 1, vec_dims);
    gr_value *a = tg_op(g, OP_NEG, "a", 1, &x);
    gr_value *b = tg_op(g, OP_NEG, "b", 1, &a);
    gr_value *ab[2] = {a, b};
    tg_output(g, tg_op(g, OP_ADD, "c", 2, ab));
}

/* 20 Negs in a row: only a node's input and output are alive (800 bytes). */
static void chain(gr_graph *g)
{
    gr_value *v = tg_input(g, "x", 1, vec_dims);
    for (int i = 0; i < 20; i++) {
        char name[16];
        snprintf(name, sizeof name, "neg%d", i);
        v = tg_op(g, OP_NEG, name, 1, &v);
    }
    tg_output(g, v);
}

/* x[1] expanded to 2^30 floats (4 GiB). */
static void huge_expand(gr_graph *g)
{
    int64_t one[1] = {1}, shape[2] = {1 << 20, 1 << 10};
    gr_value *in[2] = {tg_input(g, "x", 1, one), tg_const_i64(g, "shape", 2, shape)};
    tg_output(g, tg_op(g, OP_EXPAND, "big", 2, in));
}

/* Four Negs of a constant then + x: folding makes 20000 bytes per Neg
 * (5000 floats: more than shape inference folds by itself). */
static void const_chain(gr_graph *g)
{
    static const int64_t dims[1] = {5000};
    gr_value *v = tg_const(g, "w", 1, dims, 1.0f, 0.5f);
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "neg%d", i);
        v = tg_op(g, OP_NEG, name, 1, &v);
    }
    gr_value *in[2] = {tg_input(g, "x", 1, dims), v};
    tg_output(g, tg_op(g, OP_ADD, "add", 2, in));
}

/* Run b's graph under the limit; the status (message in tg_ctx). */
static smelt_status run_under(const char *limit, tg_builder b)
{
    setenv(EXEC_MEMORY_LIMIT_ENV, limit, 1);
    gr_graph *g = tg_build(b);
    smelt_ctx_clear(tg_ctx);
    smelt_tensor in = gr_value_info(g->inputs.items[0]);
    int64_t n = smelt_tensor_numel(&in);
    in.data = calloc((size_t)n, sizeof(float));
    smelt_tensor out = {0};
    smelt_status s = exec_graph(tg_ctx, g, EXEC_REFERENCE, &in, &out);
    if (s == SMELT_OK) {
        CHECK(out.dtype == SMELT_DT_FLOAT32 && smelt_tensor_numel(&out) == n);
        smelt_free(out.data);
    }
    free(in.data);
    gr_graph_free(g);
    return s;
}

static void test_live_total(void)
{
    CHECK(run_under("1200", diamond) == SMELT_OK); /* exactly a + b + c */
    CHECK(run_under("1199", diamond) == SMELT_ERR_LIMIT);
    CHECK_STR_CONTAINS(tg_ctx->message, "node 'c' (Add): its outputs need 400 bytes while 800 "
                                        "are held: over the reference executor's memory limit "
                                        "of 1199 bytes");
    CHECK_STR_CONTAINS(tg_ctx->message, "SMELT_MEMORY_LIMIT=");
    /* dead intermediates give their bytes back */
    CHECK(run_under("800", chain) == SMELT_OK);
    CHECK(run_under("799", chain) == SMELT_ERR_LIMIT);
    CHECK_STR_CONTAINS(tg_ctx->message, "node 'neg1' (Neg)");
}

static void test_huge_tensor(void)
{
    /* refused before anything is allocated: no 4 GiB calloc */
    CHECK(run_under("1M", huge_expand) == SMELT_ERR_LIMIT);
    CHECK_STR_CONTAINS(tg_ctx->message, "node 'big' (Expand): its outputs need 4294967296 bytes");
    CHECK_STR_CONTAINS(tg_ctx->message, "memory limit of 1048576 bytes");
}

static void test_limit_text(void)
{
    static const struct {
        const char *text;
        int64_t bytes; /* -1: refused */
    } cases[] = {
        {"4096", 4096}, {"2K", 2048}, {"3m", 3 << 20}, {"5G", (int64_t)5 << 30},
        {"1T", (int64_t)1 << 40}, {"12Q", -1}, {"-1", -1}, {"1KB", -1}, {" 1", -1},
        {"99999999999999999999", -1}, {"9000000000T", -1},
    };
    for (size_t i = 0; i < SMELT_ARRAY_LEN(cases); i++) {
        setenv(EXEC_MEMORY_LIMIT_ENV, cases[i].text, 1);
        smelt_ctx_clear(tg_ctx);
        int64_t bytes = -1;
        smelt_status s = exec_memory_limit(tg_ctx, &bytes);
        if (cases[i].bytes >= 0) {
            CHECK(s == SMELT_OK && bytes == cases[i].bytes);
        } else {
            CHECK(s == SMELT_ERR_ARG);
            CHECK_STR_CONTAINS(tg_ctx->message, "SMELT_MEMORY_LIMIT=");
        }
    }
    unsetenv(EXEC_MEMORY_LIMIT_ENV); /* the default: half the physical memory */
    int64_t bytes = 0;
    CHECK(exec_memory_limit(tg_ctx, &bytes) == SMELT_OK && bytes >= (int64_t)1 << 20);
}

static void test_folding(void)
{
    /* two folded Negs (40000 bytes) fit under 50000, the third is left to
     * run time (and the fourth, whose input is then not constant) */
    setenv(EXEC_MEMORY_LIMIT_ENV, "50000", 1);
    tg_check("folding within 50000 bytes", const_chain, pass_fold_constants, "Neg,Neg,Add");
    setenv(EXEC_MEMORY_LIMIT_ENV, "1M", 1);
    tg_check("folding within 1 MiB", const_chain, pass_fold_constants, "Add");
}

int main(void)
{
    test_live_total();
    test_huge_tensor();
    test_limit_text();
    test_folding();
    TEST_MAIN_END();
}
