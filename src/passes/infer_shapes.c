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
        /* sequences and optionals stay values of the graph: passes compare
         * and hash constants as tensors */
        if (smelt_dtype_is_container(v->dtype)) return false;
        int64_t numel = gr_value_numel(v);
        if (numel < 0 || numel > INFER_FOLD_MAX_ELEMS) return false;
    }
    return true;
}

/* Static dims whose product overflows or passes the cap can never be
 * allocated; saying so here keeps later passes' size arithmetic in range. */
static smelt_status check_elems(smelt_ctx *ctx, const gr_node *n, int k, const gr_value *v)
{
    int64_t numel = 1;
    for (int d = 0; d < v->rank; d++) {
        if (v->dims[d] < 0) continue;
        if (smelt_mul_overflow_i64(numel, v->dims[d], &numel) ||
            numel > SMELT_LIMIT_TENSOR_ELEMS)
            return op_errf(ctx, n, SMELT_ERR_LIMIT,
                           "output %d '%s' has more than %lld elements "
                           "(SMELT_LIMIT_TENSOR_ELEMS)",
                           k, v->name, (long long)SMELT_LIMIT_TENSOR_ELEMS);
    }
    return SMELT_OK;
}

/* The size a data-dependent dim was given for compiling (gr_data_bind),
 * else GR_DIM_UNKNOWN. */
static int64_t data_bind_size(const gr_graph *g, const gr_value *v, int d)
{
    const gr_graph *r = gr_graph_root(g);
    for (int k = 0; k < r->n_data_binds; k++)
        if (r->data_binds[k].dim == d && strcmp(r->data_binds[k].value, v->name) == 0)
            return r->data_binds[k].size;
    return GR_DIM_UNKNOWN;
}

static smelt_status set_output_types(smelt_ctx *ctx, gr_graph *g, gr_node *n,
                                     const smelt_tensor *out)
{
    bool one_count = op_get(n->op)->def->flags & OP_FLAG_ONE_COUNT;
    int shared = -1;
    for (int k = 0; k < n->n_outputs; k++) {
        gr_value *v = n->outputs[k];
        if (!v) continue;
        if (out[k].rank < 0 || out[k].rank > SMELT_MAX_RANK)
            return op_errf(ctx, n, SMELT_ERR_INTERNAL, "inferred rank %d for output %d",
                           out[k].rank, k);
        v->dtype = out[k].dtype;
        v->rank = out[k].rank;
        for (int d = 0; d < out[k].rank; d++) {
            int64_t dim = out[k].dims[d];
            if (dim == GR_DIM_UNKNOWN) dim = data_bind_size(g, v, d);
            if (dim == GR_DIM_UNKNOWN) {
                int sym = one_count && shared >= 0 ? shared : gr_graph_new_sym(g);
                if (sym < 0) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
                shared = sym;
                dim = GR_DIM_SYM(sym);
            }
            v->dims[d] = dim;
        }
        SMELT_TRY(check_elems(ctx, n, k, v));
    }
    return SMELT_OK;
}

/* Evaluate n now and turn its outputs into constants; n is then dead. */
static smelt_status fold_node(smelt_ctx *ctx, gr_graph *g, gr_node *n, const smelt_tensor **in,
                              smelt_tensor *out, bool *folded)
{
    SMELT_TRY(exec_node(ctx, n, in, out));
    smelt_status s = SMELT_OK;
    for (int k = 0; k < n->n_outputs; k++) {
        gr_value *v = n->outputs[k];
        if (!v || s != SMELT_OK) { /* after a failure: free what is left */
            smelt_tensor_release(&out[k]);
            continue;
        }
        smelt_tensor *t = smelt_alloc(sizeof *t);
        if (!t) {
            smelt_tensor_release(&out[k]);
            s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
            continue;
        }
        *t = out[k];
        s = gr_value_set_constant(ctx, g, v, t); /* frees t on failure */
        if (s == SMELT_OK) v->producer = NULL;
    }
    *folded = s == SMELT_OK;
    return s;
}

static smelt_status infer_with(smelt_ctx *ctx, gr_graph *g, gr_node *n, smelt_tensor *infos,
                               const smelt_tensor **in, smelt_tensor *out, bool *folded)
{
    const op_def *d = op_get(n->op)->def;
    for (int k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k]) infos[k] = gr_value_info(n->inputs[k]);
        in[k] = n->inputs[k] ? &infos[k] : NULL;
    }
    memset(out, 0, sizeof *out * (size_t)n->n_outputs);
    SMELT_TRY(op_check_container_inputs(ctx, n, in));
    smelt_ctx local = {.status = SMELT_OK};
    smelt_status s = d->infer(&local, n, in, out);
    if (s == SMELT_ERR_UNSUPPORTED) { /* e.g. needs run-time data: shapes stay unknown */
        if (!g->infer_stop) g->infer_stop = smelt_arena_strdup(&g->arena, local.message);
        return SMELT_OK;
    }
    if (s != SMELT_OK) return smelt_ctx_forward(ctx, &local);
    SMELT_TRY(set_output_types(ctx, g, n, out));
    bool shape_only = d->flags & OP_FLAG_SHAPE_ONLY;
    if (!(d->flags & (OP_FLAG_NO_FOLD | OP_FLAG_FOLD_LATE)) && inputs_known(n, shape_only) &&
        outputs_small(n))
        return fold_node(ctx, g, n, in, out, folded);
    return SMELT_OK;
}

/* Small nodes use the stack; variadic ones (a Concat of 100 inputs) the heap. */
static smelt_status infer_node(smelt_ctx *ctx, gr_graph *g, gr_node *n, bool *folded)
{
    *folded = false;
    for (int k = 0; k < n->n_inputs; k++) /* unknown rank: outputs stay unknown */
        if (n->inputs[k] && n->inputs[k]->rank < 0) return SMELT_OK;
    enum { IN_STACK = 16, OUT_STACK = 8 };
    smelt_tensor info_buf[IN_STACK], out_buf[OUT_STACK];
    const smelt_tensor *in_buf[IN_STACK];
    int ni = n->n_inputs, no = n->n_outputs;
    smelt_tensor *infos = ni <= IN_STACK ? info_buf : smelt_calloc((size_t)ni, sizeof *infos);
    const smelt_tensor **in = ni <= IN_STACK ? in_buf : smelt_calloc((size_t)ni, sizeof *in);
    smelt_tensor *out = no <= OUT_STACK ? out_buf : smelt_calloc((size_t)no, sizeof *out);
    smelt_status s = infos && in && out ? infer_with(ctx, g, n, infos, in, out, folded)
                                        : op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory");
    if (infos != info_buf) smelt_free(infos);
    if (in != in_buf) smelt_free((void *)in);
    if (out != out_buf) smelt_free(out);
    return s;
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
