/* Shape inference with constant propagation of small tensors. */
#include <string.h>

#include "exec/exec.h"
#include "ops/op.h"
#include "passes/passes.h"

/* Shape-subgraph folding only; general constant folding is its own pass. */
#define INFER_FOLD_MAX_ELEMS 4096

static bool inputs_known(const gr_node *n, bool shape_only)
{
    for (int k = 0; k < n->n_inputs; k++) {
        const gr_value *v = n->inputs[k];
        if (!v) continue;
        if (v->rank < 0) return false;
        if (shape_only) {
            for (int d = 0; d < v->rank; d++)
                if (v->dims[d] < 0) return false;
        } else if (!v->constant) {
            return false;
        }
    }
    return true;
}

static bool outputs_small(const gr_node *n)
{
    for (int k = 0; k < n->n_outputs; k++) {
        const gr_value *v = n->outputs[k];
        if (!v) continue;
        int64_t numel = gr_value_numel(v);
        if (numel < 0 || numel > INFER_FOLD_MAX_ELEMS) return false;
    }
    return true;
}

static smelt_status set_output_types(smelt_ctx *ctx, gr_graph *g, gr_node *n,
                                     const smelt_tensor *out)
{
    for (int k = 0; k < n->n_outputs; k++) {
        gr_value *v = n->outputs[k];
        if (!v) continue;
        v->dtype = out[k].dtype;
        v->rank = out[k].rank;
        for (int d = 0; d < out[k].rank; d++) {
            int64_t dim = out[k].dims[d];
            if (dim == GR_DIM_UNKNOWN) {
                int sym = gr_graph_new_sym(g);
                if (sym < 0) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
                dim = GR_DIM_SYM(sym);
            }
            v->dims[d] = dim;
        }
    }
    return SMELT_OK;
}

/* Evaluate n now and turn its outputs into constants; n is then dead. */
static smelt_status fold_node(smelt_ctx *ctx, gr_graph *g, gr_node *n, const smelt_tensor **in,
                              bool *folded)
{
    smelt_tensor out[8];
    if (n->n_outputs > 8) return SMELT_OK;
    SMELT_TRY(exec_node(ctx, n, in, out));
    for (int k = 0; k < n->n_outputs; k++) {
        gr_value *v = n->outputs[k];
        if (!v) continue;
        smelt_tensor *t = smelt_alloc(sizeof *t);
        if (!t) {
            for (int j = k; j < n->n_outputs; j++) smelt_free(out[j].data);
            return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        }
        *t = out[k];
        SMELT_TRY(gr_value_set_constant(ctx, g, v, t));
        v->producer = NULL;
    }
    *folded = true;
    return SMELT_OK;
}

static smelt_status infer_node(smelt_ctx *ctx, gr_graph *g, gr_node *n, bool *folded)
{
    const op_info *info = op_get(n->op);
    const op_def *d = info->def;
    *folded = false;
    for (int k = 0; k < n->n_inputs; k++) /* unknown rank: outputs stay unknown */
        if (n->inputs[k] && n->inputs[k]->rank < 0) return SMELT_OK;
    smelt_tensor infos[64], out[8];
    const smelt_tensor *in[64];
    if (n->n_inputs > 64 || n->n_outputs > 8)
        return op_errf(ctx, n, SMELT_ERR_LIMIT, "too many inputs or outputs");
    for (int k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k]) infos[k] = gr_value_info(n->inputs[k]);
        in[k] = n->inputs[k] ? &infos[k] : NULL;
    }
    memset(out, 0, sizeof out);
    smelt_ctx local = {SMELT_OK, ""};
    smelt_status s = d->infer(&local, n, in, out);
    if (s == SMELT_ERR_UNSUPPORTED) return SMELT_OK; /* needs run-time data: shapes stay unknown */
    if (s != SMELT_OK) return smelt_errf(ctx, s, "%s", local.message);
    SMELT_TRY(set_output_types(ctx, g, n, out));
    bool shape_only = d->flags & OP_FLAG_SHAPE_ONLY;
    if (!(d->flags & OP_FLAG_NO_FOLD) && inputs_known(n, shape_only) && outputs_small(n))
        return fold_node(ctx, g, n, in, folded);
    return SMELT_OK;
}

smelt_status pass_infer_shapes(smelt_ctx *ctx, gr_graph *g)
{
    int kept = 0;
    for (int i = 0; i < g->nodes.len; i++) {
        gr_node *n = g->nodes.items[i];
        bool folded;
        SMELT_TRY(infer_node(ctx, g, n, &folded));
        if (!folded) g->nodes.items[kept++] = n;
    }
    g->nodes.len = kept;
    for (int i = 0; i < kept; i++) ((gr_node *)g->nodes.items[i])->id = i;
    return SMELT_OK;
}
