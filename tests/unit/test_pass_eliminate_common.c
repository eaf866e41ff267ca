/* eliminate_common: equal nodes computed once; equal tiny constants shared. */
#include "passes/pass_graphs.h"

static void twins(gr_graph *g)
{
    int64_t d[2] = {2, 3};
    gr_value *x = tg_input(g, "x", 2, d);
    gr_value *a = tg_op(g, OP_RELU, "relu_a", 1, &x);
    gr_value *b = tg_op(g, OP_RELU, "relu_b", 1, &x);
    gr_value *ma[2] = {a, tg_const(g, "two_a", 2, d, 2, 0)};
    gr_value *mb[2] = {b, tg_const(g, "two_b", 2, d, 2, 0)};
    gr_value *in[2] = {tg_op(g, OP_MUL, "mul_a", 2, ma), tg_op(g, OP_MUL, "mul_b", 2, mb)};
    tg_output(g, tg_op(g, OP_ADD, "add", 2, in));
}

/* Different attributes: both stay. */
static void different_attrs(gr_graph *g)
{
    int64_t d[2] = {2, 3};
    gr_value *x = tg_input(g, "x", 2, d);
    gr_node *a = tg_node_attrs(g, OP_LEAKY_RELU, "lrelu_a", 1, &x);
    pu_attr_float(tg_ctx, g, a, "alpha", 0.1f);
    gr_node *b = tg_node_attrs(g, OP_LEAKY_RELU, "lrelu_b", 1, &x);
    pu_attr_float(tg_ctx, g, b, "alpha", 0.2f);
    gr_value *in[2] = {tg_import(g, a), tg_import(g, b)};
    tg_output(g, tg_op(g, OP_ADD, "add", 2, in));
}

int main(void)
{
    tg_check("two Relu(x), two x*2", twins, pass_eliminate_common, "Relu,Mul,Add");
    tg_check("attributes differ", different_attrs, pass_eliminate_common, "LeakyRelu,LeakyRelu,Add");
    TEST_MAIN_END();
}
