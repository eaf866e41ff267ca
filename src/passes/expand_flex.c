/* FlexAttention with modifier bodies, for compiled code: the node becomes
 * smelt.FlexScores (Q, K -> the scaled scores in the softmax type), the
 * score_mod body's nodes, Softmax over the last axis, the prob_mod body's
 * nodes and smelt.FlexOutput (P, V -> Y), so every step is an ordinary node
 * that fuses and compiles (the reference executor keeps running the node
 * itself, exec/control.c).  A body is copied node by node into the graph:
 * its input becomes the scores, its captures the node's inputs, its
 * constants constants of the graph; nodes reuse the body's attributes.  A
 * body holding subgraphs, or a node this cannot copy, is left alone (and
 * lowering refuses it by name). */
#include <stdio.h>
#include <string.h>

#include "ops/control.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

/* A body this pass copies: no subgraphs, every value typed, and its output
 * of the scores' shape in a float type (the reference refuses other shapes
 * at run time and casts other types back: a Cast follows the copy). */
static bool copyable(const gr_graph *body, const gr_value *scores)
{
    const gr_value *o = body->outputs.len == 1 ? body->outputs.items[0] : NULL;
    if (!o || o->rank != 4 || !op_dtype_is_float(o->dtype) ||
        memcmp(o->dims, scores->dims, sizeof o->dims[0] * 4) != 0)
        return false;
    for (int i = 0; i < body->nodes.len; i++) {
        const gr_node *n = body->nodes.items[i];
        for (int k = 0; k < n->n_attrs; k++)
            if (n->attrs[k].type == GR_ATTR_GRAPH) return false;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] && n->outputs[k]->rank < 0) return false; /* untyped */
    }
    return true;
}

static void copy_type(gr_value *dst, const gr_value *src)
{
    dst->dtype = src->dtype;
    dst->rank = src->rank;
    memcpy(dst->dims, src->dims, sizeof(gr_dim) * (size_t)(src->rank > 0 ? src->rank : 0));
}

/* The body's nodes on `input`; *out: the graph value of its output. */
static smelt_status copy_body(smelt_ctx *ctx, gr_graph *g, const gr_node *flex,
                              const gr_graph *body, gr_value *input, gr_value **out)
{
    gr_value **map = smelt_calloc((size_t)body->values.len + 1, sizeof *map);
    if (!map) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    map[((gr_value *)body->inputs.items[0])->id] = input;
    for (int i = 1; i < body->inputs.len; i++) /* captures: the node's inputs */
        map[((gr_value *)body->inputs.items[i])->id] = flex->inputs[ctl_body_input_source(body, i)];
    smelt_status s = pu_copy_body(ctx, g, flex, body, flex->name, map, NULL, NULL);
    if (s == SMELT_OK) s = pu_body_value(ctx, g, flex, flex->name, map, body->outputs.items[0], out);
    smelt_free(map);
    return s;
}

/* A one-output node of `kind` on inputs, its output typed like `type`. */
static gr_node *step(smelt_ctx *ctx, gr_graph *g, const gr_node *flex, const char *what,
                     op_kind kind, gr_value *a, gr_value *b, const gr_value *type)
{
    char name[200];
    snprintf(name, sizeof name, "%s/%s", flex->name, what);
    gr_value *in[2] = {a, b};
    gr_node *n = pu_node_new(ctx, g, name, kind, in, b ? 2 : 1, 1);
    if (n) copy_type(n->outputs[0], type);
    return n;
}

/* The body's output in the scores' type (as the reference casts it). */
static smelt_status in_type(smelt_ctx *ctx, gr_graph *g, const gr_node *flex, const char *what,
                            const gr_value *type, gr_value **v)
{
    if ((*v)->dtype == type->dtype) return SMELT_OK;
    gr_node *cast = step(ctx, g, flex, what, OP_CAST, *v, NULL, type);
    if (!cast) return smelt_ctx_status(ctx);
    SMELT_TRY(pu_attr_int(ctx, g, cast, "to", type->dtype));
    SMELT_TRY(pu_node_import(ctx, g, cast));
    *v = cast->outputs[0];
    return SMELT_OK;
}

static smelt_status expand(smelt_ctx *ctx, gr_graph *g, gr_node *flex)
{
    const ctl_attrs *a = ctl_attrs_of(flex);
    smelt_tensor q = gr_value_info(flex->inputs[0]), k = gr_value_info(flex->inputs[1]), t;
    flex_scores_shape(flex, &q, &k, &t);
    gr_value type = {.dtype = t.dtype, .rank = 4};
    memcpy(type.dims, t.dims, sizeof t.dims[0] * 4);
    if ((a->score_mod && !copyable(a->score_mod, &type)) ||
        (a->prob_mod && !copyable(a->prob_mod, &type)))
        return SMELT_OK;
    gr_node *scores = step(ctx, g, flex, "scores", OP_FLEX_SCORES, flex->inputs[0],
                           flex->inputs[1], &type);
    if (!scores) return smelt_ctx_status(ctx);
    scores->op_attrs = flex->op_attrs;
    gr_value *s = scores->outputs[0];
    if (a->score_mod) SMELT_TRY(copy_body(ctx, g, flex, a->score_mod, s, &s));
    if (a->score_mod) SMELT_TRY(in_type(ctx, g, flex, "score_mod_cast", &type, &s));
    gr_node *soft = step(ctx, g, flex, "softmax", OP_SOFTMAX, s, NULL, &type);
    if (!soft) return smelt_ctx_status(ctx);
    SMELT_TRY(pu_attr_int(ctx, g, soft, "axis", -1));
    SMELT_TRY(pu_node_import(ctx, g, soft));
    gr_value *p = soft->outputs[0];
    if (a->prob_mod) SMELT_TRY(copy_body(ctx, g, flex, a->prob_mod, p, &p));
    if (a->prob_mod) SMELT_TRY(in_type(ctx, g, flex, "prob_mod_cast", &type, &p));
    gr_node *y = step(ctx, g, flex, "output", OP_FLEX_OUTPUT, p, flex->inputs[2],
                      flex->outputs[0]);
    if (!y) return smelt_ctx_status(ctx);
    y->op_attrs = flex->op_attrs;
    pu_take_output(y, 0, flex->outputs[0]);
    pu_detach(flex);
    return SMELT_OK;
}

smelt_status pass_expand_flex(smelt_ctx *ctx, gr_graph *g)
{
    bool changed = false;
    int count = g->nodes.len; /* new nodes are appended: not revisited */
    for (int i = 0; i < count; i++) {
        gr_node *n = g->nodes.items[i];
        if (n->op != OP_PREVIEW_FLEX_ATTENTION || !op_runs_bodies(n) || !n->outputs[0]) continue;
        for (int k = 0; k < 3; k++)
            if (gr_value_numel(n->inputs[k]) < 0) return SMELT_OK; /* shapes unknown */
        SMELT_TRY(expand(ctx, g, n));
        changed |= n->outputs[0] == NULL;
    }
    return changed ? pu_finish(ctx, g) : SMELT_OK;
}
