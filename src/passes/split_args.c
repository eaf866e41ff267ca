/* Concats wider than a generated function takes (TE_NODE_MAX_INPUTS inputs)
 * become a tree of Concats along the same axis, which is the same tensor:
 * the compiled path then handles them at every optimisation level (TVM's
 * SplitArgs does this for kernel parameter limits).  Other variadic ops
 * (Sum, Max, Min, Mean) are left alone: over the limit they fail to compile
 * with an error naming the node. */
#include <string.h>

#include "ops/op.h"
#include "passes/pass_util.h"
#include "passes/passes.h"
#include "te/te.h"

/* The axis sizes of values inputs[0..n) add up (all static and the same
 * dtype/rank as the first), in *total. */
static bool static_along(gr_value *const *inputs, int n, int axis, int64_t *total)
{
    *total = 0;
    for (int i = 0; i < n; i++) {
        const gr_value *v = inputs[i];
        if (!v || v->rank != inputs[0]->rank || v->dtype != inputs[0]->dtype) return false;
        if (v->dims[axis] < 0) return false;
        *total += v->dims[axis];
    }
    return true;
}

static gr_node *new_concat(smelt_ctx *ctx, gr_graph *g, const gr_node *orig, int part,
                           gr_value *const *inputs, int n, int64_t axis)
{
    char name[200];
    snprintf(name, sizeof name, "%.150s.part%d", orig->name, part);
    gr_node *c = pu_node_new(ctx, g, name, OP_CONCAT, inputs, n, 1);
    if (!c || pu_attr_int(ctx, g, c, "axis", axis) != SMELT_OK ||
        pu_node_import(ctx, g, c) != SMELT_OK)
        return NULL;
    return c;
}

/* One level of the tree: inputs[0..n) in chunks of TE_NODE_MAX_INPUTS, each
 * chunk's Concat output in parts[] (a lone leftover input passes through). */
static smelt_status concat_chunks(smelt_ctx *ctx, gr_graph *g, const gr_node *orig,
                                  gr_value **inputs, int n, int64_t axis, int *n_parts)
{
    int out = 0;
    for (int first = 0; first < n; first += TE_NODE_MAX_INPUTS) {
        int len = n - first < TE_NODE_MAX_INPUTS ? n - first : TE_NODE_MAX_INPUTS;
        if (len == 1) {
            inputs[out++] = inputs[first];
            continue;
        }
        int64_t along;
        if (!static_along(inputs + first, len, (int)axis, &along))
            return smelt_errf(ctx, SMELT_ERR_INTERNAL, "split_args: '%s' changed under it",
                              orig->name);
        gr_node *c = new_concat(ctx, g, orig, out, inputs + first, len, axis);
        if (!c) return smelt_ctx_status(ctx) ? smelt_ctx_status(ctx) : SMELT_ERR_NOMEM;
        gr_value *v = c->outputs[0];
        v->dtype = inputs[first]->dtype;
        v->rank = inputs[first]->rank;
        memcpy(v->dims, inputs[first]->dims, sizeof v->dims);
        v->dims[axis] = along;
        inputs[out++] = v;
    }
    *n_parts = out;
    return SMELT_OK;
}

static smelt_status split_concat(smelt_ctx *ctx, gr_graph *g, gr_node *n, bool *changed)
{
    int64_t axis, total;
    SMELT_TRY(op_attr_int(ctx, n, "axis", 0, &axis));
    if (n->n_inputs == 0 || !n->inputs[0] || n->inputs[0]->rank <= 0) return SMELT_OK;
    int rank = n->inputs[0]->rank;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || !static_along(n->inputs, n->n_inputs, (int)axis, &total))
        return SMELT_OK; /* compiling it fails later with the node's own error */
    gr_value **inputs = smelt_alloc(sizeof *inputs * (size_t)n->n_inputs);
    if (!inputs) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    memcpy(inputs, n->inputs, sizeof *inputs * (size_t)n->n_inputs);
    int len = n->n_inputs;
    smelt_status s = SMELT_OK;
    while (s == SMELT_OK && len > TE_NODE_MAX_INPUTS)
        s = concat_chunks(ctx, g, n, inputs, len, axis, &len);
    gr_node *root = s == SMELT_OK ? new_concat(ctx, g, n, -1, inputs, len, axis) : NULL;
    smelt_free(inputs);
    if (!root) return s != SMELT_OK ? s : smelt_ctx_status(ctx) ? smelt_ctx_status(ctx) : SMELT_ERR_NOMEM;
    pu_take_output(root, 0, n->outputs[0]);
    pu_detach(n);
    *changed = true;
    return SMELT_OK;
}

smelt_status pass_split_args(smelt_ctx *ctx, gr_graph *g)
{
    bool changed = false;
    int count = g->nodes.len; /* new nodes are appended: not revisited */
    for (int i = 0; i < count; i++) {
        gr_node *n = g->nodes.items[i];
        if (n->op == OP_CONCAT && n->n_inputs > TE_NODE_MAX_INPUTS && n->outputs[0])
            SMELT_TRY(split_concat(ctx, g, n, &changed));
    }
    return changed ? pu_finish(ctx, g) : SMELT_OK;
}
