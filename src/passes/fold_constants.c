/* Constant folding with the reference kernels.  Shape inference already
 * folds small results (shape subgraphs); this pass folds the rest, capped so
 * folding never inflates the model: a result may be at most max(64 KiB, the
 * bytes of its inputs).  Nodes without inputs (random generators) stay. */
#include "exec/exec.h"
#include "ops/op.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

#define FOLD_MIN_CAP_BYTES (64 * 1024)

static bool foldable(const gr_node *n)
{
    const op_def *d = op_get(n->op)->def;
    if (!d || !d->eval || (d->flags & OP_FLAG_NO_FOLD) || n->n_inputs == 0) return false;
    bool shape_only = d->flags & OP_FLAG_SHAPE_ONLY;
    for (int k = 0; k < n->n_inputs; k++) {
        const gr_value *v = n->inputs[k];
        if (!v) continue;
        if (shape_only ? gr_value_numel(v) < 0 : !v->constant) return false;
        /* a result at the run-time dim's maximum would be wrong at other
         * lengths unless the op keeps prefixes: lowering checks it instead */
        if (v->rt_varies) return false;
    }
    return true;
}

/* Output bytes within the cap (all static); *bytes: their total. */
static bool small_enough(const gr_node *n, int64_t *bytes)
{
    int64_t in_bytes = 0, out_bytes = 0;
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] && n->inputs[k]->constant)
            in_bytes += (int64_t)smelt_tensor_nbytes(n->inputs[k]->constant);
    for (int k = 0; k < n->n_outputs; k++) {
        const gr_value *v = n->outputs[k];
        if (!v) continue;
        int64_t numel = gr_value_numel(v);
        size_t es = smelt_dtype_size(v->dtype);
        if (numel < 0 || es == 0) return false;
        out_bytes += numel * (int64_t)es;
    }
    *bytes = out_bytes;
    return out_bytes <= (in_bytes > FOLD_MIN_CAP_BYTES ? in_bytes : FOLD_MIN_CAP_BYTES);
}

smelt_status pass_fold_constants(smelt_ctx *ctx, gr_graph *g)
{
    /* folded intermediates stay until the pass ends: all of them together
     * keep to the reference executor's memory limit (exec.h), and what does
     * not fit is left to run time */
    exec_budget budget;
    SMELT_TRY(exec_budget_init(ctx, &budget));
    for (int i = 0; i < g->nodes.len; i++) {
        gr_node *n = g->nodes.items[i];
        int64_t bytes;
        if (!foldable(n) || !small_enough(n, &bytes)) continue;
        smelt_ctx unused = {.status = SMELT_OK};
        if (exec_budget_charge(&unused, &budget, n, bytes, "its outputs") != SMELT_OK) continue;
        /* a kernel refusing (unsupported mode...) leaves the node to run time */
        smelt_ctx local = {.status = SMELT_OK};
        smelt_status s = pu_fold_node(&local, g, n);
        if (s == SMELT_ERR_NOMEM) return smelt_ctx_forward(ctx, &local);
        if (s != SMELT_OK) exec_budget_release(&budget, bytes);
    }
    return pu_drop_detached(ctx, g); /* what else is dead is eliminate_dead's */
}
