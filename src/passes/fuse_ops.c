/* Operator fusion in TVM's manner, over each op's pattern from ops.def.
 *
 * Nodes are visited in topological order; a node joins the group of one of
 * its producers when the pair is fusable:
 *   - injective (elementwise, broadcast, injective) chains;
 *   - an elementwise/broadcast consumer of an out-fusable anchor (Conv,
 *     MatMul, Gemm) joins the anchor's epilogue when it reads the group's
 *     last value (its "tip"), which nothing else reads, at the same shape;
 *   - a reduction joins a group of injective producers or reductions (softmax,
 *     layernorm), and injective consumers follow a reduction.
 * A join never goes through a graph output, and never makes a group
 * non-convex (no path leaves the group and comes back), so groups form a DAG.
 * Finally nodes are reordered so each group is contiguous (topological order
 * of groups, nearest to the original order), which is the execution order
 * lowering and memory planning follow.  node->group: group id, -1 = alone.
 */
#include <string.h>

#include "ops/op.h"
#include "passes/passes.h"

typedef enum grp_kind { GRP_OPAQUE, GRP_INJECTIVE, GRP_REDUCTION, GRP_ANCHOR } grp_kind;

typedef struct fuse_state {
    smelt_ctx *ctx;
    gr_graph *g;
    int n;               /* nodes */
    int *leader;         /* per node position: position of its group's first node */
    grp_kind *kind;      /* per leader */
    const gr_value **tip; /* per anchor leader: the epilogue's last value */
    int *uses;           /* per value id: node inputs reading it */
    bool *graph_out;     /* per value id */
    int *next_member;    /* per position: next member of its group, -1 at the end */
    int *tail;           /* per leader: its last (highest) member */
    int *stamp;          /* per leader: DFS visit mark */
    int stamp_now;
    int *stack;          /* one entry per node input at most */
} fuse_state;

static int pos_of(const gr_node *n) { return n->group; } /* during the pass */

static grp_kind kind_of(const gr_node *n)
{
    const op_info *info = op_get(n->op);
    int present = 0;
    for (int i = 0; i < n->n_outputs; i++) present += n->outputs[i] != NULL;
    if (!info->def || !info->def->compute || present != 1) return GRP_OPAQUE;
    switch (info->pattern) {
    case OP_PATTERN_ELEMWISE:
    case OP_PATTERN_BROADCAST:
    case OP_PATTERN_INJECTIVE: return GRP_INJECTIVE;
    case OP_PATTERN_REDUCTION: return GRP_REDUCTION;
    case OP_PATTERN_OUT_FUSABLE: return GRP_ANCHOR;
    default: return GRP_OPAQUE;
    }
}

static bool is_elementwise(const gr_node *n)
{
    op_pattern p = op_get(n->op)->pattern;
    return p == OP_PATTERN_ELEMWISE || p == OP_PATTERN_BROADCAST;
}

static const gr_value *single_output(const gr_node *n)
{
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i]) return n->outputs[i];
    return NULL;
}

static bool same_shape(const gr_value *a, const gr_value *b)
{
    if (a->rank < 0 || a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d] || a->dims[d] < 0) return false;
    return true;
}

static bool in_group(const fuse_state *fs, const gr_value *v, int grp)
{
    return v && v->producer && fs->leader[pos_of(v->producer)] == grp;
}

/* Does the group of node p depend on group grp, through any chain of groups?
 * (Joining a node that reads p to grp would then close a cycle of groups.)
 * Groups whose last member precedes grp's first cannot. */
static bool reaches_group(fuse_state *fs, int p, int grp)
{
    int top = 0;
    fs->stamp_now++;
    fs->stack[top++] = p;
    while (top > 0) {
        int l = fs->leader[fs->stack[--top]];
        if (l == grp) return true;
        if (fs->stamp[l] == fs->stamp_now || fs->tail[l] < grp) continue;
        fs->stamp[l] = fs->stamp_now;
        for (int m = l; m >= 0; m = fs->next_member[m]) {
            const gr_node *x = fs->g->nodes.items[m];
            for (int i = 0; i < x->n_inputs; i++) {
                const gr_value *u = x->inputs[i];
                if (!u || !u->producer) continue;
                int q = pos_of(u->producer);
                if (fs->stamp[fs->leader[q]] != fs->stamp_now) fs->stack[top++] = q;
            }
        }
    }
    return false;
}

/* Joining c to grp keeps groups convex and acyclic: no other input of c
 * comes from a group that depends on grp. */
static bool stays_convex(fuse_state *fs, const gr_node *c, int grp)
{
    for (int i = 0; i < c->n_inputs; i++) {
        const gr_value *u = c->inputs[i];
        if (!u || !u->producer || in_group(fs, u, grp)) continue;
        if (reaches_group(fs, pos_of(u->producer), grp)) return false;
    }
    return true;
}

/* The epilogue rule: c reads only the tip of the anchor group, which nothing
 * else reads, and keeps its shape (the tile stays in registers). */
static bool epilogue_fits(const fuse_state *fs, const gr_node *c, const gr_value *v, int grp)
{
    if (!is_elementwise(c) || v != fs->tip[grp] || fs->uses[v->id] != 1) return false;
    if (!same_shape(single_output(c), v)) return false;
    for (int i = 0; i < c->n_inputs; i++)
        if (c->inputs[i] && c->inputs[i] != v && in_group(fs, c->inputs[i], grp)) return false;
    return true;
}

static bool can_join(fuse_state *fs, const gr_node *c, grp_kind ck, const gr_value *v, int grp)
{
    if (fs->graph_out[v->id]) return false;
    switch (fs->kind[grp]) {
    case GRP_ANCHOR:
        if (!epilogue_fits(fs, c, v, grp)) return false;
        break;
    case GRP_INJECTIVE:
    case GRP_REDUCTION:
        if (ck != GRP_INJECTIVE && ck != GRP_REDUCTION) return false;
        break;
    default: return false;
    }
    return stays_convex(fs, c, grp);
}

static void join(fuse_state *fs, int p, grp_kind ck, int grp)
{
    const gr_node *c = fs->g->nodes.items[p];
    fs->leader[p] = grp;
    fs->next_member[fs->tail[grp]] = p;
    fs->tail[grp] = p;
    if (fs->kind[grp] == GRP_ANCHOR) fs->tip[grp] = single_output(c);
    else if (ck == GRP_REDUCTION) fs->kind[grp] = GRP_REDUCTION;
}

static void visit(fuse_state *fs, int p)
{
    const gr_node *c = fs->g->nodes.items[p];
    grp_kind ck = kind_of(c);
    fs->leader[p] = p;
    fs->next_member[p] = -1;
    fs->tail[p] = p;
    fs->kind[p] = ck;
    fs->tip[p] = ck == GRP_ANCHOR ? single_output(c) : NULL;
    if (ck == GRP_OPAQUE || ck == GRP_ANCHOR) return;
    for (int i = 0; i < c->n_inputs; i++) {
        const gr_value *v = c->inputs[i];
        if (!v || !v->producer) continue;
        int grp = fs->leader[pos_of(v->producer)];
        if (can_join(fs, c, ck, v, grp)) {
            join(fs, p, ck, grp);
            return;
        }
    }
}

/* ---- group order ---------------------------------------------------------
 * Kahn's algorithm over groups with a min-heap on the leader's position, so
 * the order stays as close to the original as dependencies allow. */

static void heap_push(int *h, int *len, int x)
{
    int i = (*len)++;
    for (; i > 0 && h[(i - 1) / 2] > x; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
    h[i] = x;
}

static int heap_pop(int *h, int *len)
{
    int top = h[0], x = h[--(*len)], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *len) break;
        if (c + 1 < *len && h[c + 1] < h[c]) c++;
        if (h[c] >= x) break;
        h[i] = h[c];
        i = c;
    }
    if (*len > 0) h[i] = x;
    return top;
}

/* Edges between groups, counted per (consumer node, input): duplicates only
 * repeat a decrement and its matching increment. */
static void count_deps(const fuse_state *fs, int *indeg)
{
    for (int p = 0; p < fs->n; p++) {
        const gr_node *c = fs->g->nodes.items[p];
        for (int i = 0; i < c->n_inputs; i++) {
            const gr_value *v = c->inputs[i];
            if (v && v->producer && fs->leader[pos_of(v->producer)] != fs->leader[p])
                indeg[fs->leader[p]]++;
        }
    }
}

/* Consumers of group grp's values lose one dependency each; members are
 * chained through next_member from the leader. */
static void release(const fuse_state *fs, int grp, const int *next_member, int *indeg,
                    int *heap, int *hlen, int *const *users, const int *n_users)
{
    for (int m = grp; m >= 0; m = next_member[m]) {
        for (int k = 0; k < n_users[m]; k++) {
            int q = users[m][k];
            if (fs->leader[q] == grp) continue;
            if (--indeg[fs->leader[q]] == 0) heap_push(heap, hlen, fs->leader[q]);
        }
    }
}

static smelt_status order_groups(fuse_state *fs)
{
    int n = fs->n;
    int *indeg = smelt_calloc((size_t)n + 1, sizeof *indeg);
    int *heap = smelt_calloc((size_t)n + 1, sizeof *heap);
    int *n_users = smelt_calloc((size_t)n + 1, sizeof *n_users);
    int **users = smelt_calloc((size_t)n + 1, sizeof *users);
    int *next_member = smelt_calloc((size_t)n + 1, sizeof *next_member);
    gr_node **order = smelt_calloc((size_t)n + 1, sizeof *order);
    smelt_status s = SMELT_OK;
    if (!indeg || !heap || !n_users || !users || !next_member || !order) s = SMELT_ERR_NOMEM;
    /* members in position order: the leader is the first, so link backwards */
    for (int p = 0; s == SMELT_OK && p < n; p++) next_member[p] = -1;
    for (int p = n - 1; s == SMELT_OK && p >= 0; p--) {
        if (fs->leader[p] == p) continue;
        int *tail = &next_member[fs->leader[p]];
        next_member[p] = *tail;
        *tail = p;
    }
    /* users[m]: positions of nodes reading node m's outputs (one per input use) */
    for (int p = 0; s == SMELT_OK && p < n; p++) {
        const gr_node *c = fs->g->nodes.items[p];
        for (int i = 0; i < c->n_inputs; i++)
            if (c->inputs[i] && c->inputs[i]->producer) n_users[pos_of(c->inputs[i]->producer)]++;
    }
    for (int m = 0; s == SMELT_OK && m < n; m++) {
        users[m] = smelt_calloc((size_t)n_users[m] + 1, sizeof(int));
        if (!users[m]) s = SMELT_ERR_NOMEM;
        n_users[m] = 0;
    }
    for (int p = 0; s == SMELT_OK && p < n; p++) {
        const gr_node *c = fs->g->nodes.items[p];
        for (int i = 0; i < c->n_inputs; i++)
            if (c->inputs[i] && c->inputs[i]->producer) {
                int m = pos_of(c->inputs[i]->producer);
                users[m][n_users[m]++] = p;
            }
    }
    int done = 0, hlen = 0;
    if (s == SMELT_OK) {
        count_deps(fs, indeg);
        for (int p = 0; p < n; p++)
            if (fs->leader[p] == p && indeg[p] == 0) heap_push(heap, &hlen, p);
        while (hlen > 0) {
            int grp = heap_pop(heap, &hlen);
            for (int m = grp; m >= 0; m = next_member[m]) order[done++] = fs->g->nodes.items[m];
            release(fs, grp, next_member, indeg, heap, &hlen, users, n_users);
        }
        if (done != n) s = SMELT_ERR_INTERNAL;
    }
    if (s == SMELT_OK && n > 0) { /* no nodes (all dead): items may be NULL */
        memcpy(fs->g->nodes.items, order, sizeof *order * (size_t)n);
        for (int p = 0; p < n; p++) order[p]->id = p; /* the verifier's invariant */
    }
    for (int m = 0; users && m < n; m++) smelt_free(users[m]);
    smelt_free(users);
    smelt_free(n_users);
    smelt_free(next_member);
    smelt_free(indeg);
    smelt_free(heap);
    smelt_free(order);
    if (s == SMELT_ERR_NOMEM) return smelt_errf(fs->ctx, s, "out of memory");
    if (s != SMELT_OK) return smelt_errf(fs->ctx, s, "fuse_ops: fused groups form a cycle");
    return SMELT_OK;
}

/* ---- entry ---- */

/* Number groups of two or more nodes in execution order; singles get -1. */
static void number_groups(fuse_state *fs)
{
    int *size = fs->stamp, *id = fs->stack, next = 0; /* reused scratch */
    memset(size, 0, sizeof(int) * (size_t)fs->n);
    for (int p = 0; p < fs->n; p++) size[fs->leader[p]]++;
    for (int p = 0; p < fs->n; p++) id[p] = -1;
    gr_node **nodes = (gr_node **)fs->g->nodes.items;
    /* node->group still holds the node's old position, which leader is indexed by */
    for (int p = 0; p < fs->n; p++) {
        int grp = fs->leader[nodes[p]->group];
        if (size[grp] < 2) continue;
        if (id[grp] < 0) id[grp] = next++;
    }
    for (int p = 0; p < fs->n; p++) {
        int grp = fs->leader[nodes[p]->group];
        nodes[p]->group = size[grp] < 2 ? -1 : id[grp];
    }
}

static smelt_status fuse(fuse_state *fs)
{
    gr_graph *g = fs->g;
    for (int p = 0; p < fs->n; p++) ((gr_node *)g->nodes.items[p])->group = p;
    for (int p = 0; p < fs->n; p++) {
        const gr_node *c = g->nodes.items[p];
        for (int i = 0; i < c->n_inputs; i++)
            if (c->inputs[i]) fs->uses[c->inputs[i]->id]++;
    }
    for (int i = 0; i < g->outputs.len; i++) fs->graph_out[((gr_value *)g->outputs.items[i])->id] = true;
    for (int p = 0; p < fs->n; p++) visit(fs, p);
    SMELT_TRY(order_groups(fs));
    number_groups(fs);
    return SMELT_OK;
}

smelt_status pass_fuse_ops(smelt_ctx *ctx, gr_graph *g)
{
    int n = g->nodes.len, nv = g->values.len;
    int n_uses = n;
    for (int p = 0; p < n; p++) n_uses += ((gr_node *)g->nodes.items[p])->n_inputs;
    fuse_state fs = {ctx, g, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL};
    fs.leader = smelt_calloc((size_t)n + 1, sizeof *fs.leader);
    fs.kind = smelt_calloc((size_t)n + 1, sizeof *fs.kind);
    fs.tip = smelt_calloc((size_t)n + 1, sizeof *fs.tip);
    fs.uses = smelt_calloc((size_t)nv + 1, sizeof *fs.uses);
    fs.graph_out = smelt_calloc((size_t)nv + 1, sizeof *fs.graph_out);
    fs.stamp = smelt_calloc((size_t)n + 1, sizeof *fs.stamp);
    fs.stack = smelt_calloc((size_t)n_uses + 1, sizeof *fs.stack);
    fs.next_member = smelt_calloc((size_t)n + 1, sizeof *fs.next_member);
    fs.tail = smelt_calloc((size_t)n + 1, sizeof *fs.tail);
    smelt_status s;
    if (!fs.leader || !fs.kind || !fs.tip || !fs.uses || !fs.graph_out || !fs.stamp || !fs.stack ||
        !fs.next_member || !fs.tail)
        s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    else
        s = fuse(&fs);
    if (s != SMELT_OK)
        for (int p = 0; p < n; p++) ((gr_node *)g->nodes.items[p])->group = -1;
    smelt_free(fs.leader);
    smelt_free(fs.kind);
    smelt_free(fs.tip);
    smelt_free(fs.uses);
    smelt_free(fs.graph_out);
    smelt_free(fs.stamp);
    smelt_free(fs.stack);
    smelt_free(fs.next_member);
    smelt_free(fs.tail);
    return s;
}
