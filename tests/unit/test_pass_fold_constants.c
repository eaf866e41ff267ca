/* fold_constants: all-constant nodes become constants, within the size cap. */
#include "passes/pass_graphs.h"

/* (c1 + c2) has 10000 elements: above shape inference's folding, below the cap. */
static void add_consts(gr_graph *g)
{
    int64_t d[2] = {100, 100};
    gr_value *x = tg_input(g, "x", 2, d);
    gr_value *in[2] = {tg_const(g, "c1", 2, d, 0, 0.01f), tg_const(g, "c2", 2, d, 1, 0)};
    gr_value *s = tg_op(g, OP_ADD, "sum", 2, in);
    gr_value *in2[2] = {x, s};
    tg_output(g, tg_op(g, OP_MUL, "mul", 2, in2));
}

/* Expand of one value to 1M floats would inflate the model: it stays. */
static void big_expand(gr_graph *g)
{
    int64_t one[1] = {1}, d[2] = {1000, 1000};
    gr_value *x = tg_input(g, "x", 2, d);
    gr_value *in[2] = {tg_const(g, "c", 1, one, 2, 0), tg_const_i64(g, "shape", 2, d)};
    gr_value *e = tg_op(g, OP_EXPAND, "expand", 2, in);
    gr_value *in2[2] = {x, e};
    tg_output(g, tg_op(g, OP_ADD, "add", 2, in2));
}

int main(void)
{
    tg_check("fold (c1 + c2) * x", add_consts, pass_fold_constants, "Mul");
    tg_check("size cap keeps Expand", big_expand, pass_fold_constants, "Expand,Add");
    TEST_MAIN_END();
}
