/* split_args: a Concat wider than a generated function takes becomes a tree
 * of Concats along the same axis, with the same result. */
#include "passes/pass_graphs.h"
#include "te/te.h"

#define WIDE 150 /* over two levels' worth of chunks: 64 + 64 + 22 */

static void wide_concat(gr_graph *g)
{
    int64_t d[2] = {2, 3};
    gr_value *in[WIDE];
    in[0] = tg_input(g, "x", 2, d);
    for (int i = 1; i < WIDE; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        in[i] = tg_const(g, name, 2, d, (float)i, 0.5f);
    }
    gr_node *n = tg_node_attrs(g, OP_CONCAT, "cat", WIDE, in);
    CHECK(pu_attr_int(tg_ctx, g, n, "axis", -1) == SMELT_OK);
    tg_output(g, tg_import(g, n));
}

static void narrow_concat(gr_graph *g)
{
    int64_t d[2] = {2, 3};
    gr_value *in[2] = {tg_input(g, "x", 2, d), tg_const(g, "c", 2, d, 1, 1)};
    gr_node *n = tg_node_attrs(g, OP_CONCAT, "cat", 2, in);
    CHECK(pu_attr_int(tg_ctx, g, n, "axis", 0) == SMELT_OK);
    tg_output(g, tg_import(g, n));
}

int main(void)
{
    tg_check("150-input Concat", wide_concat, pass_split_args, "Concat,Concat,Concat,Concat");
    gr_graph *g = tg_build(wide_concat);
    CHECK(pass_split_args(tg_ctx, g) == SMELT_OK);
    const gr_node *root = NULL;
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        CHECK(n->n_inputs <= TE_NODE_MAX_INPUTS);
        if (n->outputs[0] == g->outputs.items[0]) root = n;
    }
    /* the graph output keeps its value (and name); its dims are the sum */
    CHECK(root && root->n_inputs == 3);
    const gr_value *y = g->outputs.items[0];
    CHECK(y->dims[1] == 3 * WIDE);
    gr_graph_free(g);
    tg_check("2-input Concat untouched", narrow_concat, pass_split_args, "Concat");
    TEST_MAIN_END();
}
