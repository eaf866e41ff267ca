/* The pass manager: levels, --disable-pass, unknown names, dumps, reports. */
#include "passes/pass_graphs.h"

static void graph(gr_graph *g)
{
    int64_t d[2] = {2, 3};
    gr_value *x = tg_input(g, "x", 2, d);
    gr_value *i = tg_op(g, OP_IDENTITY, "id", 1, &x);
    gr_value *s = tg_op(g, OP_SIGMOID, "unused", 1, &x);
    (void)s;
    tg_output(g, tg_op(g, OP_RELU, "relu", 1, &i));
}

static const pass_stat *find(const pass_report *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->passes[i].name, name) == 0) return &r->passes[i];
    return NULL;
}

static void run(const pass_options *o, pass_report *r, char *ops, size_t cap)
{
    gr_graph *g = tg_build(graph);
    CHECK(pass_pipeline_run(tg_ctx, g, o, r) == SMELT_OK);
    tg_ops(g, ops, cap);
    gr_graph_free(g);
}

int main(void)
{
    char ops[256];
    pass_report r;
    pass_options o0 = {0, NULL, NULL, NULL};
    run(&o0, &r, ops, sizeof ops);
    CHECK(strcmp(ops, "Identity,Sigmoid,Relu") == 0);
    CHECK(find(&r, "infer_shapes")->ran && !find(&r, "fold_constants")->ran);

    pass_options o2 = {2, NULL, NULL, NULL};
    run(&o2, &r, ops, sizeof ops);
    CHECK(strcmp(ops, "Relu") == 0);
    CHECK(find(&r, "eliminate_dead")->changed);
    CHECK(find(&r, "eliminate_dead")->nodes_before == 3);
    CHECK_STR_CONTAINS(find(&r, "eliminate_dead")->change, "-1 Sigmoid");

    pass_options dis = {3, "simplify_algebra,eliminate_dead", NULL, NULL};
    run(&dis, &r, ops, sizeof ops);
    CHECK(strcmp(ops, "Identity,Relu") == 0); /* later passes still sweep dead nodes */
    CHECK(!find(&r, "simplify_algebra")->ran);

    gr_graph *g = tg_build(graph);
    pass_options bad = {2, "fold_constants,no_such_pass", NULL, NULL};
    CHECK(pass_pipeline_run(tg_ctx, g, &bad, NULL) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(tg_ctx->message, "unknown pass 'no_such_pass'");
    CHECK_STR_CONTAINS(tg_ctx->message, "fold_batchnorm");
    gr_graph_free(g);
    smelt_ctx_clear(tg_ctx);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pass_options dump = {2, NULL, "all", f};
    g = tg_build(graph);
    CHECK(pass_pipeline_run(tg_ctx, g, &dump, NULL) == SMELT_OK);
    fclose(f);
    CHECK_STR_CONTAINS(buf, "## after fold_constants (unchanged)");
    CHECK_STR_CONTAINS(buf, "## after eliminate_dead\ngraph t");
    free(buf);
    gr_graph_free(g);
    TEST_MAIN_END();
}
