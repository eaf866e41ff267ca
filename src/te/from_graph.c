/* Graph node -> te graph through the op's compute definition. */
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

static smelt_status check_static(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *t,
                                 const char *what, int i)
{
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] < 0)
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "%s %d has a dynamic dim; compiled code needs static shapes", what, i);
    return SMELT_OK;
}

smelt_status te_from_node(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                          const smelt_tensor *out_types, te_graph **out)
{
    *out = NULL;
    const op_def *def = op_get(node->op)->def;
    if (!def || !def->compute)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "op has no compiled implementation yet");
    if (node->n_inputs > 64 || node->n_outputs > 16)
        return op_errf(ctx, node, SMELT_ERR_LIMIT, "too many inputs or outputs to compile");
    te_graph *g = te_graph_new(ctx);
    if (!g) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    te_tensor *tin[64] = {0}, *tout[16] = {0};
    const smelt_tensor *consts[64] = {0};
    smelt_status s = SMELT_OK;
    for (int i = 0; s == SMELT_OK && i < node->n_inputs; i++) {
        if (!in[i]) continue;
        s = check_static(ctx, node, in[i], "input", i);
        if (s != SMELT_OK) break;
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        tin[i] = te_placeholder(g, name, in[i]->dtype, in[i]->rank, in[i]->dims);
        if (!tin[i]) s = smelt_ctx_status(ctx) ? smelt_ctx_status(ctx) : SMELT_ERR_NOMEM;
        else if (in[i]->data) {
            tin[i]->buf->kind = IR_BUF_CONST;
            consts[i] = in[i];
        }
    }
    for (int i = 0; s == SMELT_OK && i < node->n_outputs; i++)
        if (node->outputs[i]) s = check_static(ctx, node, &out_types[i], "output", i);
    if (s == SMELT_OK) {
        op_compute_args a = {ctx, g, node, tin, consts, out_types, tout};
        s = def->compute(&a);
    }
    for (int i = 0; s == SMELT_OK && i < node->n_outputs; i++) {
        if (!node->outputs[i]) continue;
        if (!tout[i])
            s = op_errf(ctx, node, SMELT_ERR_INTERNAL, "compute gave no tensor for output %d", i);
        else if (tout[i]->buf->dtype != out_types[i].dtype || tout[i]->buf->rank != out_types[i].rank)
            s = op_errf(ctx, node, SMELT_ERR_INTERNAL,
                        "compute of output %d has type %s rank %d, infer says %s rank %d", i,
                        smelt_dtype_name(tout[i]->buf->dtype), tout[i]->buf->rank,
                        smelt_dtype_name(out_types[i].dtype), out_types[i].rank);
        else if (memcmp(tout[i]->buf->shape, out_types[i].dims,
                        sizeof(int64_t) * (size_t)out_types[i].rank) != 0)
            s = op_errf(ctx, node, SMELT_ERR_INTERNAL,
                        "compute of output %d has other dims than infer gives", i);
        else if (!te_mark_output(g, tout[i]))
            s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        else
            tout[i]->buf->kind = IR_BUF_OUTPUT;
    }
    if (s != SMELT_OK) {
        te_graph_free(g);
        return s;
    }
    *out = g;
    return SMELT_OK;
}
