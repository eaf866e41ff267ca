/* Graph construction, lookup, topological sort and verification. */
#include <string.h>

#include "graph/graph.h"

gr_graph *gr_graph_new(void)
{
    gr_graph *g = smelt_calloc(1, sizeof *g);
    if (!g) return NULL;
    smelt_arena_init(&g->arena);
    g->name = "";
    return g;
}

void gr_graph_free(gr_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->owned_tensors.len; i++) smelt_tensor_free(g->owned_tensors.items[i]);
    smelt_ptrvec_fini(&g->owned_tensors);
    smelt_ptrvec_fini(&g->nodes);
    smelt_ptrvec_fini(&g->values);
    smelt_ptrvec_fini(&g->inputs);
    smelt_ptrvec_fini(&g->outputs);
    smelt_ptrvec_fini(&g->syms);
    smelt_arena_fini(&g->arena);
    smelt_free(g);
}

gr_value *gr_value_new(gr_graph *g, const char *name)
{
    gr_value *v = smelt_arena_alloc(&g->arena, sizeof *v);
    if (!v) return NULL;
    v->name = smelt_arena_strdup(&g->arena, name ? name : "");
    if (!v->name || !smelt_ptrvec_push(&g->values, v)) return NULL;
    v->id = g->values.len - 1;
    v->rank = -1;
    return v;
}

gr_value *gr_graph_find_value(const gr_graph *g, const char *name)
{
    for (int i = g->values.len - 1; i >= 0; i--) {
        gr_value *v = g->values.items[i];
        if (strcmp(v->name, name) == 0) return v;
    }
    return NULL;
}

int gr_graph_sym(gr_graph *g, const char *name)
{
    for (int i = 0; i < g->syms.len; i++)
        if (strcmp(g->syms.items[i], name) == 0) return i;
    char *copy = smelt_arena_strdup(&g->arena, name);
    if (!copy || !smelt_ptrvec_push(&g->syms, copy)) return -1;
    return g->syms.len - 1;
}

int gr_graph_new_sym(gr_graph *g)
{
    char name[32];
    snprintf(name, sizeof name, "?%d", g->syms.len);
    return gr_graph_sym(g, name);
}

smelt_status gr_value_set_constant(smelt_ctx *ctx, gr_graph *g, gr_value *v, smelt_tensor *t)
{
    if (!smelt_ptrvec_push(&g->owned_tensors, t)) {
        smelt_tensor_free(t);
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    v->constant = t;
    v->dtype = t->dtype;
    v->rank = t->rank;
    for (int i = 0; i < t->rank; i++) v->dims[i] = t->dims[i];
    return SMELT_OK;
}

gr_value *gr_graph_add_constant(smelt_ctx *ctx, gr_graph *g, const char *name_hint,
                                smelt_tensor *t)
{
    char name[160];
    snprintf(name, sizeof name, "%s.const%d", name_hint ? name_hint : "c", g->values.len);
    gr_value *v = gr_value_new(g, name);
    if (!v) {
        smelt_tensor_free(t);
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return gr_value_set_constant(ctx, g, v, t) == SMELT_OK ? v : NULL;
}

gr_node *gr_node_new(gr_graph *g, const char *name, const char *op_type, op_kind op,
                     int n_inputs, int n_outputs)
{
    gr_node *n = smelt_arena_alloc(&g->arena, sizeof *n);
    if (!n) return NULL;
    n->name = smelt_arena_strdup(&g->arena, name ? name : "");
    n->op_type = smelt_arena_strdup(&g->arena, op_type ? op_type : "");
    n->op = op;
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    n->inputs = smelt_arena_alloc(&g->arena, sizeof(gr_value *) * (size_t)(n_inputs + 1));
    n->outputs = smelt_arena_alloc(&g->arena, sizeof(gr_value *) * (size_t)(n_outputs + 1));
    if (!n->name || !n->op_type || !n->inputs || !n->outputs) return NULL;
    if (!smelt_ptrvec_push(&g->nodes, n)) return NULL;
    n->id = g->nodes.len - 1;
    return n;
}

const gr_attr *gr_node_attr(const gr_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

smelt_status gr_node_set_input(smelt_ctx *ctx, gr_graph *g, gr_node *n, int i, gr_value *v)
{
    if (i >= n->n_inputs) {
        gr_value **in = smelt_arena_alloc(&g->arena, sizeof(gr_value *) * (size_t)(i + 1));
        if (!in) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        memcpy(in, n->inputs, sizeof(gr_value *) * (size_t)n->n_inputs);
        n->inputs = in;
        n->n_inputs = i + 1;
    }
    n->inputs[i] = v;
    return SMELT_OK;
}

smelt_tensor gr_value_info(const gr_value *v)
{
    smelt_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = v->dtype;
    t.rank = v->rank < 0 ? 0 : v->rank;
    for (int i = 0; i < t.rank; i++) t.dims[i] = v->dims[i];
    t.data = v->constant ? v->constant->data : NULL;
    return t;
}

int64_t gr_value_numel(const gr_value *v)
{
    if (v->rank < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) {
        if (v->dims[i] < 0 || smelt_mul_overflow_i64(n, v->dims[i], &n)) return -1;
    }
    return n;
}

/* Kahn's algorithm over producer edges; stable with respect to model order. */
smelt_status gr_graph_toposort(smelt_ctx *ctx, gr_graph *g)
{
    int n = g->nodes.len;
    if (n == 0) return SMELT_OK;
    int *pending = smelt_calloc((size_t)n, sizeof(int));
    gr_node **order = smelt_calloc((size_t)n, sizeof(gr_node *));
    bool *done = smelt_calloc((size_t)n, sizeof(bool));
    if (!pending || !order || !done) {
        smelt_free(pending);
        smelt_free(order);
        smelt_free(done);
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory sorting the graph");
    }
    for (int i = 0; i < n; i++) ((gr_node *)g->nodes.items[i])->id = i;
    int placed = 0;
    /* Repeated scans keep model order among ready nodes; graphs are small
     * enough that O(n * depth) is fine, and it needs no consumer lists. */
    bool progress = true;
    while (placed < n && progress) {
        progress = false;
        for (int i = 0; i < n; i++) {
            if (done[i]) continue;
            gr_node *node = g->nodes.items[i];
            bool ready = true;
            for (int k = 0; k < node->n_inputs && ready; k++) {
                gr_value *v = node->inputs[k];
                if (v && v->producer && !done[v->producer->id]) ready = false;
            }
            if (!ready) continue;
            done[i] = true;
            order[placed++] = node;
            progress = true;
        }
    }
    smelt_status s = SMELT_OK;
    if (placed < n) {
        for (int i = 0; i < n; i++) {
            if (done[i]) continue;
            gr_node *node = g->nodes.items[i];
            s = smelt_errf(ctx, SMELT_ERR_MODEL,
                           "node '%s' (%s): the graph has a cycle through this node",
                           node->name, node->op_type);
            break;
        }
    } else {
        for (int i = 0; i < n; i++) {
            g->nodes.items[i] = order[i];
            order[i]->id = i;
        }
    }
    smelt_free(pending);
    smelt_free(order);
    smelt_free(done);
    return s;
}

smelt_status gr_graph_verify(smelt_ctx *ctx, const gr_graph *g)
{
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        if (n->id != i)
            return smelt_errf(ctx, SMELT_ERR_INTERNAL, "node '%s': id %d at position %d",
                              n->name, n->id, i);
        for (int k = 0; k < n->n_inputs; k++) {
            const gr_value *v = n->inputs[k];
            if (!v) continue;
            if (v->producer && v->producer->id >= i)
                return smelt_errf(ctx, SMELT_ERR_INTERNAL,
                                  "node '%s' (%s): input '%s' is produced later, by '%s'",
                                  n->name, n->op_type, v->name, v->producer->name);
            if (!v->producer && !v->constant && !v->is_input)
                return smelt_errf(ctx, SMELT_ERR_MODEL,
                                  "node '%s' (%s): input '%s' is never produced", n->name,
                                  n->op_type, v->name);
        }
        for (int k = 0; k < n->n_outputs; k++) {
            const gr_value *v = n->outputs[k];
            if (v && (v->producer != n || v->producer_output != k))
                return smelt_errf(ctx, SMELT_ERR_INTERNAL,
                                  "node '%s' (%s): output %d '%s' has another producer",
                                  n->name, n->op_type, k, v->name);
        }
    }
    for (int i = 0; i < g->outputs.len; i++) {
        const gr_value *v = g->outputs.items[i];
        if (!v->producer && !v->constant && !v->is_input)
            return smelt_errf(ctx, SMELT_ERR_MODEL, "graph output '%s' is never produced",
                              v->name);
    }
    return SMELT_OK;
}
