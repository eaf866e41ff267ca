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

gr_graph *gr_subgraph_new(gr_graph *parent)
{
    gr_graph *g = gr_graph_new();
    if (!g) return NULL;
    if (!smelt_ptrvec_push(&parent->subgraphs, g)) {
        gr_graph_free(g);
        return NULL;
    }
    g->parent = parent;
    g->opset = parent->opset;
    memcpy(g->domain_opsets, parent->domain_opsets, sizeof g->domain_opsets);
    g->hw = parent->hw;
    return g;
}

const gr_graph *gr_graph_root(const gr_graph *g)
{
    while (g->parent) g = g->parent;
    return g;
}

void gr_graph_free(gr_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->subgraphs.len; i++) gr_graph_free(g->subgraphs.items[i]);
    smelt_ptrvec_fini(&g->subgraphs);
    for (int i = 0; i < g->owned_tensors.len; i++) smelt_tensor_free(g->owned_tensors.items[i]);
    smelt_ptrvec_fini(&g->owned_tensors);
    smelt_ptrvec_fini(&g->nodes);
    smelt_ptrvec_fini(&g->values);
    smelt_ptrvec_fini(&g->inputs);
    smelt_ptrvec_fini(&g->outputs);
    smelt_ptrvec_fini(&g->syms);
    smelt_strmap_fini(&g->sym_index);
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

/* Named symbols are found through sym_index (a model may name thousands of
 * dims); anonymous ones are never looked up by name. */
static int sym_add(gr_graph *g, const char *name)
{
    char *copy = smelt_arena_strdup(&g->arena, name);
    if (!copy || !smelt_ptrvec_push(&g->syms, copy)) return -1;
    return g->syms.len - 1;
}

/* Symbols belong to the root graph: a subgraph's dims name the same sizes. */
static gr_graph *sym_owner(gr_graph *g)
{
    while (g->parent) g = g->parent;
    return g;
}

int gr_graph_sym(gr_graph *g, const char *name)
{
    g = sym_owner(g);
    void *found = smelt_strmap_get(&g->sym_index, name);
    if (found) return (int)((intptr_t)found - 1);
    int id = sym_add(g, name);
    if (id < 0 ||
        !smelt_strmap_put(&g->sym_index, g->syms.items[id], (void *)((intptr_t)id + 1)))
        return -1;
    return id;
}

int gr_graph_new_sym(gr_graph *g)
{
    g = sym_owner(g);
    char name[32];
    snprintf(name, sizeof name, "?%d", g->syms.len);
    return sym_add(g, name);
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
    n->group = -1;
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

bool gr_rt_dim_matches(const gr_rt_dim *r, int64_t extent, int64_t *add)
{
    for (int a = -1; a < r->n_adds; a++) {
        int64_t off = a < 0 ? 0 : r->adds[a];
        if (extent == r->max + off) {
            if (add) *add = off;
            return true;
        }
    }
    return false;
}

int gr_value_rt_dim_add(const gr_graph *g, const gr_value *v, int d, int64_t *add)
{
    const gr_graph *r = gr_graph_root(g);
    if ((v->constant && !v->rt_varies) || d < 0 || d >= v->rank) return -1;
    for (int k = 0; k < r->n_rt_dims; k++)
        if (gr_rt_dim_matches(&r->rt_dims[k], v->dims[d], add)) return k;
    return -1;
}

int gr_value_rt_dim(const gr_graph *g, const gr_value *v, int d)
{
    return gr_value_rt_dim_add(g, v, d, NULL);
}

/* Min-heap of node indices: Kahn's algorithm takes the ready node that came
 * first in the model, so an already sorted model keeps its order. */
typedef struct topo_heap {
    int *items;
    int len;
} topo_heap;

static void heap_push(topo_heap *h, int x)
{
    int i = h->len++;
    while (i > 0 && h->items[(i - 1) / 2] > x) {
        h->items[i] = h->items[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->items[i] = x;
}

static int heap_pop(topo_heap *h)
{
    int top = h->items[0], x = h->items[--h->len], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->len) break;
        if (c + 1 < h->len && h->items[c + 1] < h->items[c]) c++;
        if (h->items[c] >= x) break;
        h->items[i] = h->items[c];
        i = c;
    }
    if (h->len) h->items[i] = x;
    return top;
}

/* v's producer if it is one of g's nodes (ids numbered), else NULL. */
static const gr_node *member_producer(const gr_graph *g, const gr_value *v)
{
    const gr_node *p = v ? v->producer : NULL;
    if (!p || p->id < 0 || p->id >= g->nodes.len || g->nodes.items[p->id] != p) return NULL;
    return p;
}

/* Edges producer -> consumer in CSR form: the consumers of node p are
 * cons[start[p] .. start[p+1]).  pending[c] counts c's unplaced producer edges. */
typedef struct topo_edges {
    int *start, *cons, *pending;
} topo_edges;

static bool topo_edges_build(const gr_graph *g, topo_edges *e)
{
    int n = g->nodes.len;
    int64_t n_edges = 0;
    for (int i = 0; i < n; i++) n_edges += ((gr_node *)g->nodes.items[i])->n_inputs;
    if (n_edges >= INT32_MAX) return false;
    e->start = smelt_calloc((size_t)n + 1, sizeof(int));
    e->cons = smelt_calloc((size_t)n_edges + 1, sizeof(int));
    e->pending = smelt_calloc((size_t)n + 1, sizeof(int));
    if (!e->start || !e->cons || !e->pending) return false;
    for (int i = 0; i < n; i++) {
        const gr_node *node = g->nodes.items[i];
        for (int k = 0; k < node->n_inputs; k++) {
            const gr_node *p = member_producer(g, node->inputs[k]);
            if (!p) continue;
            e->start[p->id + 1]++;
            e->pending[i]++;
        }
    }
    for (int i = 0; i < n; i++) e->start[i + 1] += e->start[i];
    int *cursor = smelt_calloc((size_t)n + 1, sizeof(int));
    if (!cursor) return false;
    memcpy(cursor, e->start, sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) {
        const gr_node *node = g->nodes.items[i];
        for (int k = 0; k < node->n_inputs; k++) {
            const gr_node *p = member_producer(g, node->inputs[k]);
            if (p) e->cons[cursor[p->id]++] = i;
        }
    }
    smelt_free(cursor);
    return true;
}

static void topo_edges_free(topo_edges *e)
{
    smelt_free(e->start);
    smelt_free(e->cons);
    smelt_free(e->pending);
}

/* A node on a cycle, given the unplaced nodes (pending > 0) after Kahn's
 * algorithm: each has an unplaced producer, so walking producers n times from
 * any of them ends inside a cycle (not merely downstream of one). */
static const gr_node *on_cycle(const gr_graph *g, const int *pending)
{
    int cur = 0;
    while (pending[cur] == 0) cur++;
    for (int step = 0; step < g->nodes.len; step++) {
        const gr_node *node = g->nodes.items[cur];
        for (int k = 0; k < node->n_inputs; k++) {
            const gr_node *p = member_producer(g, node->inputs[k]);
            if (p && pending[p->id] > 0) {
                cur = p->id;
                break;
            }
        }
    }
    return g->nodes.items[cur];
}

/* Kahn's algorithm over producer edges, O((nodes + edges) log nodes). */
smelt_status gr_graph_toposort(smelt_ctx *ctx, gr_graph *g)
{
    int n = g->nodes.len;
    if (n == 0) return SMELT_OK;
    for (int i = 0; i < n; i++) ((gr_node *)g->nodes.items[i])->id = i;
    topo_edges e = {NULL, NULL, NULL};
    topo_heap h = {smelt_calloc((size_t)n, sizeof(int)), 0};
    gr_node **order = smelt_calloc((size_t)n, sizeof(gr_node *));
    smelt_status s = SMELT_OK;
    if (!topo_edges_build(g, &e) || !h.items || !order)
        s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory sorting the graph");
    int placed = 0;
    for (int i = 0; s == SMELT_OK && i < n; i++)
        if (e.pending[i] == 0) heap_push(&h, i);
    while (s == SMELT_OK && h.len > 0) {
        int p = heap_pop(&h);
        order[placed++] = g->nodes.items[p];
        for (int k = e.start[p]; k < e.start[p + 1]; k++)
            if (--e.pending[e.cons[k]] == 0) heap_push(&h, e.cons[k]);
    }
    if (s == SMELT_OK && placed < n) {
        const gr_node *node = on_cycle(g, e.pending);
        s = smelt_errf_at(ctx, SMELT_ERR_MODEL, node->name, node->op_type,
                          "node '%s' (%s): the graph has a cycle through this node", node->name,
                          node->op_type);
    } else if (s == SMELT_OK) {
        for (int i = 0; i < n; i++) {
            g->nodes.items[i] = order[i];
            order[i]->id = i;
        }
    }
    topo_edges_free(&e);
    smelt_free(h.items);
    smelt_free(order);
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
                return smelt_errf_at(ctx, SMELT_ERR_MODEL, n->name, n->op_type,
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

int gr_unit_end(const gr_graph *g, int start)
{
    const gr_node *n = g->nodes.items[start];
    int end = start + 1;
    if (n->group < 0) return end;
    while (end < g->nodes.len && ((const gr_node *)g->nodes.items[end])->group == n->group) end++;
    return end;
}
