/* eliminate_dead: nodes that reach no output go, with their values. */
#include "passes/pass_graphs.h"

static void dead_branch(gr_graph *g)
{
    int64_t d[2] = {2, 3};
    gr_value *x = tg_input(g, "x", 2, d);
    gr_value *r = tg_op(g, OP_RELU, "relu", 1, &x);
    gr_value *s = tg_op(g, OP_SIGMOID, "unused", 1, &x);
    gr_value *in[2] = {s, tg_const(g, "c", 2, d, 1, 1)};
    tg_op(g, OP_MUL, "unused_too", 2, in);
    tg_output(g, r);
}

int main(void)
{
    tg_check("dead Sigmoid -> Mul", dead_branch, pass_eliminate_dead, "Relu");
    gr_graph *g = tg_build(dead_branch);
    int values = g->values.len;
    CHECK(pass_eliminate_dead(tg_ctx, g) == SMELT_OK);
    CHECK(g->values.len == values - 3); /* Sigmoid and Mul outputs, c */
    gr_graph_free(g);
    TEST_MAIN_END();
}
