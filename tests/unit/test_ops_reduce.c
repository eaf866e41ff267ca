/* Unit tests of the reduce family: Reduce*, ArgMax/ArgMin, TopK, CumSum. */
#include <math.h>
#include <stdlib.h>

#include "ops/op.h"
#include "test_util.h"

/* A strong reference: registry.c's references are weak, and a weak
 * reference alone does not pull reduce.o out of the static library. */
extern const op_def op_def_REDUCE_SUM;

static void test_registry(void)
{
    CHECK(op_get(OP_REDUCE_SUM)->def == &op_def_REDUCE_SUM);
    static const op_kind ops[] = {OP_REDUCE_MEAN, OP_REDUCE_SUM, OP_REDUCE_MAX, OP_REDUCE_MIN,
                                  OP_REDUCE_PROD, OP_REDUCE_L1, OP_REDUCE_L2,
                                  OP_REDUCE_SUM_SQUARE, OP_REDUCE_LOG_SUM,
                                  OP_REDUCE_LOG_SUM_EXP, OP_ARG_MAX, OP_ARG_MIN, OP_TOP_K,
                                  OP_CUM_SUM};
    for (size_t i = 0; i < SMELT_ARRAY_LEN(ops); i++) CHECK(op_get(ops[i])->def != NULL);
}

/* ---- tiny one-node harness ---- */

static gr_node *mk_node(gr_graph *g, op_kind op, int n_in, int n_out)
{
    static const char *const names[] = {"X", "B", "C", "D"};
    gr_node *n = gr_node_new(g, "n0", op_get(op)->name, op, n_in, n_out);
    for (int k = 0; k < n_in; k++) n->inputs[k] = gr_value_new(g, names[k]);
    for (int k = 0; k < n_out; k++) {
        char name[16];
        snprintf(name, sizeof name, "Y%d", k);
        n->outputs[k] = gr_value_new(g, name);
        n->outputs[k]->producer = n;
        n->outputs[k]->producer_output = k;
    }
    return n;
}

static smelt_tensor mkt(smelt_dtype dt, int rank, const int64_t *dims, void *data)
{
    smelt_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
    t.data = data;
    return t;
}

static gr_attr attr_int(const char *name, int64_t v)
{
    gr_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = GR_ATTR_INT;
    a.i = v;
    return a;
}

static gr_attr attr_ints(const char *name, int64_t *v, int n)
{
    gr_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = GR_ATTR_INTS;
    a.ints = v;
    a.n = n;
    return a;
}

/* import, infer, and (when do_eval) allocate outputs and eval.  given[k]
 * NULL: node input k's constant (e.g. set by import), or omitted. */
static smelt_status run_node(smelt_ctx *ctx, gr_graph *g, gr_node *n, const smelt_tensor **given,
                             int n_given, smelt_tensor *out, bool do_eval)
{
    const op_def *d = op_get(n->op)->def;
    if (!d) return SMELT_ERR_UNSUPPORTED;
    if (d->import) SMELT_TRY(d->import(ctx, g, n));
    smelt_tensor infos[8];
    const smelt_tensor *in[8];
    for (int k = 0; k < n->n_inputs; k++) {
        in[k] = NULL;
        if (k < n_given && given[k]) {
            in[k] = given[k];
        } else if (n->inputs[k] && n->inputs[k]->constant) {
            infos[k] = gr_value_info(n->inputs[k]);
            in[k] = &infos[k];
        }
    }
    memset(out, 0, sizeof(smelt_tensor) * (size_t)n->n_outputs);
    SMELT_TRY(d->infer(ctx, n, in, out));
    if (!do_eval) return SMELT_OK;
    for (int k = 0; k < n->n_outputs; k++) {
        int64_t numel = op_numel(&out[k]);
        out[k].data = calloc(numel ? (size_t)numel : 1, smelt_dtype_size(out[k].dtype));
    }
    return d->eval(ctx, n, in, out);
}

static void free_outs(smelt_tensor *out, int n)
{
    for (int k = 0; k < n; k++) free(out[k].data);
}

/* ---- Reduce* ---- */

static void test_reduce_sum_axes_input(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = 13;
    gr_node *n = mk_node(g, OP_REDUCE_SUM, 2, 1);
    float x[] = {1, 2, 3, 4, 5, 6};
    int64_t axes[] = {-1};
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 2, (int64_t[]){2, 3}, x);
    smelt_tensor ta = mkt(SMELT_DT_INT64, 1, (int64_t[]){1}, axes);
    const smelt_tensor *in[] = {&tx, &ta};
    smelt_tensor out[1];
    CHECK(run_node(ctx, g, n, in, 2, out, true) == SMELT_OK);
    CHECK(out[0].rank == 2 && out[0].dims[0] == 2 && out[0].dims[1] == 1);
    CHECK(((float *)out[0].data)[0] == 6 && ((float *)out[0].data)[1] == 15);
    free_outs(out, 1);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

static void test_reduce_mean_axes_attr(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = 13; /* ReduceMean took axes as an attribute until 18 */
    gr_node *n = mk_node(g, OP_REDUCE_MEAN, 1, 1);
    int64_t axes[] = {0};
    gr_attr attrs[] = {attr_ints("axes", axes, 1), attr_int("keepdims", 0)};
    n->attrs = attrs;
    n->n_attrs = 2;
    float x[] = {1, 2, 3, 4, 5, 6};
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 2, (int64_t[]){2, 3}, x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor out[1];
    CHECK(run_node(ctx, g, n, in, 1, out, true) == SMELT_OK);
    CHECK(n->n_inputs == 2 && n->inputs[1] && n->inputs[1]->constant);
    CHECK(out[0].rank == 1 && out[0].dims[0] == 3);
    float *y = out[0].data;
    CHECK(y[0] == 2.5f && y[1] == 3.5f && y[2] == 4.5f);
    free_outs(out, 1);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

/* Reduce over all axes with each kind, on the same data. */
static void test_reduce_kinds(void)
{
    static const struct {
        op_kind op;
        double want;
    } cases[] = {
        {OP_REDUCE_SUM, 3.0},
        {OP_REDUCE_MEAN, 0.5},
        {OP_REDUCE_MAX, 3.0},
        {OP_REDUCE_MIN, -2.0},
        {OP_REDUCE_PROD, 6.0},
        {OP_REDUCE_L1, 9.0},
        {OP_REDUCE_L2, 4.123105625617661}, /* sqrt(17) */
        {OP_REDUCE_SUM_SQUARE, 17.0},
        {OP_REDUCE_LOG_SUM, 1.0986122886681098},
        {OP_REDUCE_LOG_SUM_EXP, 3.3584150340218217},
    };
    for (size_t c = 0; c < SMELT_ARRAY_LEN(cases); c++) {
        smelt_ctx *ctx = smelt_ctx_new();
        gr_graph *g = gr_graph_new();
        g->opset = 18;
        gr_node *n = mk_node(g, cases[c].op, 1, 1);
        double x[] = {1, -1, 3, -2, 1, 1};
        smelt_tensor tx = mkt(SMELT_DT_FLOAT64, 2, (int64_t[]){3, 2}, x);
        const smelt_tensor *in[] = {&tx};
        smelt_tensor out[1];
        CHECK(run_node(ctx, g, n, in, 1, out, true) == SMELT_OK);
        CHECK(out[0].rank == 2 && out[0].dims[0] == 1 && out[0].dims[1] == 1);
        CHECK_NEAR(((double *)out[0].data)[0], cases[c].want, 1e-12);
        free_outs(out, 1);
        gr_graph_free(g);
        smelt_ctx_free(ctx);
    }
}

static void test_reduce_log_sum_exp_stable(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = 13;
    gr_node *n = mk_node(g, OP_REDUCE_LOG_SUM_EXP, 1, 1);
    float x[] = {1000, 1000};
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 1, (int64_t[]){2}, x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor out[1];
    CHECK(run_node(ctx, g, n, in, 1, out, true) == SMELT_OK);
    CHECK_NEAR(((float *)out[0].data)[0], 1000.0 + log(2.0), 1e-3);
    free_outs(out, 1);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

/* Reductions over a zero-sized axis give the identity of the operation. */
static void test_reduce_empty(void)
{
    static const struct {
        op_kind op;
        float want;
    } cases[] = {
        {OP_REDUCE_SUM, 0.0f},     {OP_REDUCE_PROD, 1.0f},         {OP_REDUCE_MAX, -INFINITY},
        {OP_REDUCE_MIN, INFINITY}, {OP_REDUCE_LOG_SUM_EXP, -INFINITY}, {OP_REDUCE_L2, 0.0f},
    };
    for (size_t c = 0; c < SMELT_ARRAY_LEN(cases); c++) {
        smelt_ctx *ctx = smelt_ctx_new();
        gr_graph *g = gr_graph_new();
        g->opset = 18;
        gr_node *n = mk_node(g, cases[c].op, 2, 1);
        gr_attr attrs[] = {attr_int("keepdims", 0)};
        n->attrs = attrs;
        n->n_attrs = 1;
        float dummy = 0;
        int64_t axes[] = {0};
        smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 2, (int64_t[]){0, 3}, &dummy);
        smelt_tensor ta = mkt(SMELT_DT_INT64, 1, (int64_t[]){1}, axes);
        const smelt_tensor *in[] = {&tx, &ta};
        smelt_tensor out[1];
        CHECK(run_node(ctx, g, n, in, 2, out, true) == SMELT_OK);
        CHECK(out[0].rank == 1 && out[0].dims[0] == 3);
        for (int i = 0; i < 3; i++) CHECK(((float *)out[0].data)[i] == cases[c].want);
        free_outs(out, 1);
        gr_graph_free(g);
        smelt_ctx_free(ctx);
    }
}

static void test_reduce_noop_and_ints(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = 18;
    gr_node *n = mk_node(g, OP_REDUCE_MAX, 2, 1);
    gr_attr attrs[] = {attr_int("noop_with_empty_axes", 1)};
    n->attrs = attrs;
    n->n_attrs = 1;
    int64_t x[] = {(int64_t)1 << 60, ((int64_t)1 << 60) + 1, -5};
    int64_t none = 0;
    smelt_tensor tx = mkt(SMELT_DT_INT64, 1, (int64_t[]){3}, x);
    smelt_tensor ta = mkt(SMELT_DT_INT64, 1, (int64_t[]){0}, &none);
    const smelt_tensor *in[] = {&tx, &ta};
    smelt_tensor out[1];
    CHECK(run_node(ctx, g, n, in, 2, out, true) == SMELT_OK);
    CHECK(out[0].rank == 1 && out[0].dims[0] == 3);
    CHECK(((int64_t *)out[0].data)[1] == x[1]);
    free_outs(out, 1);

    /* exact int64 max, beyond double precision */
    n->n_attrs = 0;
    const smelt_tensor *in1[] = {&tx, NULL};
    CHECK(run_node(ctx, g, n, in1, 2, out, true) == SMELT_OK);
    CHECK(out[0].rank == 1 && ((int64_t *)out[0].data)[0] == x[1]);
    free_outs(out, 1);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

static void test_reduce_compile_time(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = 13;
    gr_node *n = mk_node(g, OP_REDUCE_SUM, 2, 1);
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 3, (int64_t[]){GR_DIM_SYM(0), 1, 4}, NULL);
    smelt_tensor ta = mkt(SMELT_DT_INT64, 1, (int64_t[]){1}, NULL);
    const smelt_tensor *in[] = {&tx, &ta};
    smelt_tensor out[1];
    /* keepdims=1: rank known, dims not */
    CHECK(run_node(ctx, g, n, in, 2, out, false) == SMELT_OK);
    CHECK(out[0].rank == 3 && out[0].dims[0] == GR_DIM_UNKNOWN && out[0].dims[1] == 1);
    /* keepdims=0 with axes of statically known length: rank known */
    gr_attr attrs[] = {attr_int("keepdims", 0)};
    n->attrs = attrs;
    n->n_attrs = 1;
    CHECK(run_node(ctx, g, n, in, 2, out, false) == SMELT_OK);
    CHECK(out[0].rank == 2);
    /* ... of unknown length: unsupported, naming the input */
    ta.dims[0] = GR_DIM_SYM(1);
    CHECK(run_node(ctx, g, n, in, 2, out, false) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "axes input 'B'");
    smelt_ctx_clear(ctx);
    /* known axes keep symbolic dims */
    int64_t axes[] = {2};
    ta = mkt(SMELT_DT_INT64, 1, (int64_t[]){1}, axes);
    CHECK(run_node(ctx, g, n, in, 2, out, false) == SMELT_OK);
    CHECK(out[0].rank == 2 && out[0].dims[0] == GR_DIM_SYM(0) && out[0].dims[1] == 1);
    /* bad axis */
    axes[0] = 3;
    CHECK(run_node(ctx, g, n, in, 2, out, false) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "axis 3 is out of range for rank 3");
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "node 'n0' (ReduceSum)");
    smelt_ctx_clear(ctx);
    /* bad dtype */
    tx.dtype = SMELT_DT_BOOL;
    CHECK(run_node(ctx, g, n, in, 2, out, false) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "input 'X' has unsupported dtype bool");
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

/* ---- ArgMax, ArgMin ---- */

static void test_argmax_argmin(void)
{
    static const struct {
        op_kind op;
        int64_t last;
        int64_t want[2];
    } cases[] = {
        {OP_ARG_MAX, 0, {1, 0}},
        {OP_ARG_MAX, 1, {2, 0}},
        {OP_ARG_MIN, 0, {0, 1}},
        {OP_ARG_MIN, 1, {0, 2}},
    };
    for (size_t c = 0; c < SMELT_ARRAY_LEN(cases); c++) {
        smelt_ctx *ctx = smelt_ctx_new();
        gr_graph *g = gr_graph_new();
        g->opset = 13;
        gr_node *n = mk_node(g, cases[c].op, 1, 1);
        gr_attr attrs[] = {attr_int("axis", -1), attr_int("keepdims", 0),
                           attr_int("select_last_index", cases[c].last)};
        n->attrs = attrs;
        n->n_attrs = 3;
        float x[] = {1, 5, 5, 9, 2, 2};
        smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 2, (int64_t[]){2, 3}, x);
        const smelt_tensor *in[] = {&tx};
        smelt_tensor out[1];
        CHECK(run_node(ctx, g, n, in, 1, out, true) == SMELT_OK);
        CHECK(out[0].dtype == SMELT_DT_INT64 && out[0].rank == 1 && out[0].dims[0] == 2);
        CHECK(((int64_t *)out[0].data)[0] == cases[c].want[0]);
        CHECK(((int64_t *)out[0].data)[1] == cases[c].want[1]);
        free_outs(out, 1);
        gr_graph_free(g);
        smelt_ctx_free(ctx);
    }
}

/* ---- TopK ---- */

static void test_topk(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = 11;
    gr_node *n = mk_node(g, OP_TOP_K, 2, 2);
    float x[] = {1, 3, 3, 2, -1, 0, 7, 7};
    int64_t k = 3;
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 2, (int64_t[]){2, 4}, x);
    smelt_tensor tk = mkt(SMELT_DT_INT64, 1, (int64_t[]){1}, &k);
    const smelt_tensor *in[] = {&tx, &tk};
    smelt_tensor out[2];
    CHECK(run_node(ctx, g, n, in, 2, out, true) == SMELT_OK);
    CHECK(out[0].rank == 2 && out[0].dims[1] == 3 && out[1].dtype == SMELT_DT_INT64);
    float *v = out[0].data;
    int64_t *ix = out[1].data;
    CHECK(v[0] == 3 && v[1] == 3 && v[2] == 2 && ix[0] == 1 && ix[1] == 2 && ix[2] == 3);
    CHECK(v[3] == 7 && v[4] == 7 && v[5] == 0 && ix[3] == 2 && ix[4] == 3 && ix[5] == 1);
    free_outs(out, 2);

    gr_attr attrs[] = {attr_int("largest", 0)};
    n->attrs = attrs;
    n->n_attrs = 1;
    CHECK(run_node(ctx, g, n, in, 2, out, true) == SMELT_OK);
    v = out[0].data;
    ix = out[1].data;
    CHECK(v[0] == 1 && v[1] == 2 && v[2] == 3 && ix[0] == 0 && ix[1] == 3 && ix[2] == 1);
    free_outs(out, 2);

    k = 5;
    CHECK(run_node(ctx, g, n, in, 2, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "k = 5 is out of range [0, 4]");
    smelt_ctx_clear(ctx);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

static void test_topk_k_attribute(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = 9;
    gr_node *n = mk_node(g, OP_TOP_K, 1, 2);
    gr_attr attrs[] = {attr_int("k", 1), attr_int("axis", 0)};
    n->attrs = attrs;
    n->n_attrs = 2;
    int32_t x[] = {4, -7, 9, 8};
    smelt_tensor tx = mkt(SMELT_DT_INT32, 2, (int64_t[]){2, 2}, x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor out[2];
    CHECK(run_node(ctx, g, n, in, 1, out, true) == SMELT_OK);
    CHECK(out[0].rank == 2 && out[0].dims[0] == 1 && out[0].dims[1] == 2);
    CHECK(((int32_t *)out[0].data)[0] == 9 && ((int32_t *)out[0].data)[1] == 8);
    CHECK(((int64_t *)out[1].data)[0] == 1 && ((int64_t *)out[1].data)[1] == 1);
    free_outs(out, 2);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

/* ---- CumSum ---- */

static void test_cumsum(void)
{
    static const struct {
        int64_t exclusive, reverse;
        double want[4];
    } cases[] = {
        {0, 0, {1, 3, 6, 10}},
        {1, 0, {0, 1, 3, 6}},
        {0, 1, {10, 9, 7, 4}},
        {1, 1, {9, 7, 4, 0}},
    };
    for (size_t c = 0; c < SMELT_ARRAY_LEN(cases); c++) {
        smelt_ctx *ctx = smelt_ctx_new();
        gr_graph *g = gr_graph_new();
        g->opset = 14;
        gr_node *n = mk_node(g, OP_CUM_SUM, 2, 1);
        gr_attr attrs[] = {attr_int("exclusive", cases[c].exclusive),
                           attr_int("reverse", cases[c].reverse)};
        n->attrs = attrs;
        n->n_attrs = 2;
        double x[] = {1, 2, 3, 4};
        int32_t axis = -1;
        smelt_tensor tx = mkt(SMELT_DT_FLOAT64, 1, (int64_t[]){4}, x);
        smelt_tensor ta = mkt(SMELT_DT_INT32, 0, NULL, &axis);
        const smelt_tensor *in[] = {&tx, &ta};
        smelt_tensor out[1];
        CHECK(run_node(ctx, g, n, in, 2, out, true) == SMELT_OK);
        for (int i = 0; i < 4; i++) CHECK(((double *)out[0].data)[i] == cases[c].want[i]);
        free_outs(out, 1);
        gr_graph_free(g);
        smelt_ctx_free(ctx);
    }
}

static void test_cumsum_2d_int(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = 14;
    gr_node *n = mk_node(g, OP_CUM_SUM, 2, 1);
    int32_t x[] = {1, 2, 3, 4, 5, 6};
    int64_t axis = 0;
    smelt_tensor tx = mkt(SMELT_DT_INT32, 2, (int64_t[]){2, 3}, x);
    smelt_tensor ta = mkt(SMELT_DT_INT64, 1, (int64_t[]){1}, &axis);
    const smelt_tensor *in[] = {&tx, &ta};
    smelt_tensor out[1];
    CHECK(run_node(ctx, g, n, in, 2, out, true) == SMELT_OK);
    int32_t *y = out[0].data;
    CHECK(y[0] == 1 && y[2] == 3 && y[3] == 5 && y[5] == 9);
    free_outs(out, 1);
    axis = 2;
    CHECK(run_node(ctx, g, n, in, 2, out, false) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "axis 2 is out of range for rank 2");
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

int main(void)
{
    test_registry();
    test_reduce_sum_axes_input();
    test_reduce_mean_axes_attr();
    test_reduce_kinds();
    test_reduce_log_sum_exp_stable();
    test_reduce_empty();
    test_reduce_noop_and_ints();
    test_reduce_compile_time();
    test_argmax_argmin();
    test_topk();
    test_topk_k_attribute();
    test_cumsum();
    test_cumsum_2d_int();
    TEST_MAIN_END();
}
