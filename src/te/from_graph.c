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

smelt_status te_check_node_arity(smelt_ctx *ctx, const gr_node *node)
{
    if (node->n_inputs <= TE_NODE_MAX_INPUTS && node->n_outputs <= TE_NODE_MAX_OUTPUTS)
        return SMELT_OK;
    return op_errf(ctx, node, SMELT_ERR_LIMIT,
                   "%d inputs and %d outputs; compiled code takes at most %d inputs and %d "
                   "outputs per node (TE_NODE_MAX_INPUTS/OUTPUTS in src/te/te.h)",
                   node->n_inputs, node->n_outputs, TE_NODE_MAX_INPUTS, TE_NODE_MAX_OUTPUTS);
}

smelt_status te_from_node(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                          const smelt_tensor *out_types, te_graph **out)
{
    return te_from_node_rt(ctx, node, in, out_types, NULL, out);
}

smelt_status te_from_node_rt(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                             const smelt_tensor *out_types, const te_rt *rt, te_graph **out)
{
    *out = NULL;
    const op_def *def = op_get(node->op)->def;
    if (!def || !def->compute)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "op has no compiled implementation yet");
    SMELT_TRY(te_check_node_arity(ctx, node));
    te_graph *g = te_graph_new(ctx);
    if (!g) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (rt && te_rt_begin(g, rt->n, rt->dims) != SMELT_OK) {
        te_graph_free(g);
        return smelt_ctx_status(ctx);
    }
    te_tensor *tin[TE_NODE_MAX_INPUTS] = {0}, *tout[TE_NODE_MAX_OUTPUTS] = {0};
    const smelt_tensor *consts[TE_NODE_MAX_INPUTS] = {0};
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
        } else if (rt && rt->dense && rt->dense(node->inputs[i], rt->user)) {
            te_mark_dense(g, tin[i]);
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

/* ---- fused groups ------------------------------------------------------- */

typedef struct group_builder {
    smelt_ctx *ctx;
    te_graph *te;
    te_group_io *io;
    smelt_ptrvec vals, tens; /* gr_value* -> te_tensor* produced or placed so far */
    smelt_tensor *types;     /* per input placeholder: its type (data of constants) */
    int cap_in;
    const te_rt *rt;         /* run-time dims and dense values, or NULL */
} group_builder;

static te_tensor *lookup(const group_builder *gb, const gr_value *v)
{
    for (int i = 0; i < gb->vals.len; i++)
        if (gb->vals.items[i] == v) return gb->tens.items[i];
    return NULL;
}

static bool remember(group_builder *gb, const gr_value *v, te_tensor *t)
{
    return smelt_ptrvec_push(&gb->vals, (void *)v) && smelt_ptrvec_push(&gb->tens, t);
}

/* The te tensor of an input value: its producer's compute inside the group,
 * or a placeholder ("x<k>", in first-use order) for a value from outside. */
static smelt_status input_tensor(group_builder *gb, const gr_node *node, const gr_value *v,
                                 int i, te_tensor **out, const smelt_tensor **type)
{
    te_tensor *t = lookup(gb, v);
    *type = NULL;
    for (int k = 0; t && k < gb->io->n_in; k++)
        if (gb->io->in[k] == v) *type = &gb->types[k];
    if (t) {
        *out = t;
        return SMELT_OK;
    }
    smelt_tensor info = gr_value_info(v);
    SMELT_TRY(check_static(gb->ctx, node, &info, "input", i));
    if (gb->io->n_in >= gb->cap_in)
        return op_errf(gb->ctx, node, SMELT_ERR_LIMIT, "too many inputs to a fused group");
    int k = gb->io->n_in;
    char name[16];
    snprintf(name, sizeof name, "x%d", k);
    t = te_placeholder(gb->te, name, info.dtype, info.rank, info.dims);
    if (!t || !remember(gb, v, t)) return smelt_ctx_status(gb->ctx) ? smelt_ctx_status(gb->ctx) : SMELT_ERR_NOMEM;
    if (info.data) t->buf->kind = IR_BUF_CONST;
    else if (gb->rt && gb->rt->dense && gb->rt->dense(v, gb->rt->user)) te_mark_dense(gb->te, t);
    gb->types[k] = info;
    gb->io->in[gb->io->n_in++] = v;
    *out = t;
    *type = &gb->types[k];
    return SMELT_OK;
}

/* Stage names must be unique in the group: prefix the node's computes with
 * its position ("n2_y"). */
static smelt_status rename_stages(group_builder *gb, int first, int k)
{
    for (int i = first; i < gb->te->tensors.len; i++) {
        te_tensor *t = gb->te->tensors.items[i];
        char name[256];
        snprintf(name, sizeof name, "n%d_%s", k, t->buf->name);
        t->buf->name = smelt_arena_strdup(&gb->te->arena, name);
        if (!t->buf->name) return smelt_errf(gb->ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    return SMELT_OK;
}

static smelt_status check_output(smelt_ctx *ctx, const gr_node *node, int i, const te_tensor *t,
                                 const smelt_tensor *ty)
{
    if (!t) return op_errf(ctx, node, SMELT_ERR_INTERNAL, "compute gave no tensor for output %d", i);
    if (t->buf->dtype != ty->dtype || t->buf->rank != ty->rank ||
        memcmp(t->buf->shape, ty->dims, sizeof(int64_t) * (size_t)ty->rank) != 0)
        return op_errf(ctx, node, SMELT_ERR_INTERNAL,
                       "compute of output %d disagrees with infer on its type", i);
    return SMELT_OK;
}

static smelt_status add_node(group_builder *gb, const gr_node *node, int k)
{
    const op_def *def = op_get(node->op)->def;
    if (!def || !def->compute)
        return op_errf(gb->ctx, node, SMELT_ERR_UNSUPPORTED, "op has no compiled implementation yet");
    SMELT_TRY(te_check_node_arity(gb->ctx, node));
    te_tensor *tin[TE_NODE_MAX_INPUTS] = {0}, *tout[TE_NODE_MAX_OUTPUTS] = {0};
    const smelt_tensor *consts[TE_NODE_MAX_INPUTS] = {0};
    smelt_tensor out_types[TE_NODE_MAX_OUTPUTS];
    for (int i = 0; i < node->n_inputs; i++) {
        if (!node->inputs[i]) continue;
        const smelt_tensor *ty;
        SMELT_TRY(input_tensor(gb, node, node->inputs[i], i, &tin[i], &ty));
        if (ty && ty->data) consts[i] = ty;
    }
    for (int i = 0; i < node->n_outputs; i++) {
        memset(&out_types[i], 0, sizeof out_types[i]);
        if (!node->outputs[i]) continue;
        out_types[i] = gr_value_info(node->outputs[i]);
        out_types[i].data = NULL;
        SMELT_TRY(check_static(gb->ctx, node, &out_types[i], "output", i));
    }
    int first = gb->te->tensors.len;
    op_compute_args a = {gb->ctx, gb->te, node, tin, consts, out_types, tout};
    SMELT_TRY(def->compute(&a));
    SMELT_TRY(rename_stages(gb, first, k));
    for (int i = 0; i < node->n_outputs; i++) {
        if (!node->outputs[i]) continue;
        SMELT_TRY(check_output(gb->ctx, node, i, tout[i], &out_types[i]));
        if (!remember(gb, node->outputs[i], tout[i]))
            return smelt_errf(gb->ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    return SMELT_OK;
}

/* Mark the values the group hands out, in node order. */
static smelt_status mark_outputs(group_builder *gb, const gr_node *const *nodes, int n,
                                 bool (*escapes)(const gr_value *v, void *user), void *user)
{
    for (int k = 0; k < n; k++)
        for (int i = 0; i < nodes[k]->n_outputs; i++) {
            const gr_value *v = nodes[k]->outputs[i];
            if (!v || !escapes(v, user)) continue;
            if (gb->io->n_out >= gb->cap_in)
                return op_errf(gb->ctx, nodes[k], SMELT_ERR_LIMIT, "too many outputs of a fused group");
            te_tensor *t = lookup(gb, v);
            if (!te_mark_output(gb->te, t)) return smelt_errf(gb->ctx, SMELT_ERR_NOMEM, "out of memory");
            gb->io->out[gb->io->n_out++] = v;
        }
    return SMELT_OK;
}

smelt_status te_from_group(smelt_ctx *ctx, const struct gr_node *const *nodes, int n,
                           bool (*escapes)(const struct gr_value *v, void *user), void *user,
                           te_graph **out, te_group_io *io)
{
    return te_from_group_rt(ctx, nodes, n, escapes, user, NULL, out, io);
}

smelt_status te_from_group_rt(smelt_ctx *ctx, const struct gr_node *const *nodes, int n,
                              bool (*escapes)(const struct gr_value *v, void *user), void *user,
                              const te_rt *rt, te_graph **out, te_group_io *io)
{
    *out = NULL;
    io->n_in = io->n_out = 0;
    group_builder gb = {ctx, te_graph_new(ctx), io, {0}, {0}, NULL, TE_GROUP_MAX_IO, rt};
    gb.types = smelt_calloc(TE_GROUP_MAX_IO, sizeof *gb.types);
    smelt_status s = gb.te && gb.types ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s == SMELT_OK && rt) s = te_rt_begin(gb.te, rt->n, rt->dims);
    for (int k = 0; s == SMELT_OK && k < n; k++) s = add_node(&gb, nodes[k], k);
    if (s == SMELT_OK) s = mark_outputs(&gb, nodes, n, escapes, user);
    smelt_free(gb.types);
    smelt_ptrvec_fini(&gb.vals);
    smelt_ptrvec_fini(&gb.tens);
    if (s != SMELT_OK) {
        if (s == SMELT_ERR_NOMEM && smelt_ctx_status(ctx) == SMELT_OK)
            smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        te_graph_free(gb.te);
        return s;
    }
    *out = gb.te;
    return SMELT_OK;
}
