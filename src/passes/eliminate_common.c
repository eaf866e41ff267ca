/* Common subexpression elimination.  Two nodes with the same op, the same
 * inputs and the same raw attributes compute the same thing (inference ops
 * are pure); the later one's uses move to the earlier one.  Tiny constants
 * with equal contents are shared first, so x*2 and x*2 written with two
 * Constant nodes also merge. */
#include <string.h>

#include "passes/pass_util.h"
#include "passes/passes.h"

#define CSE_TINY_CONST_BYTES 256

/* Hashes here only pick table slots (the first of equal things wins
 * whatever the hash), so they are keyed: a model cannot make its constants
 * or nodes collide on purpose and the pass quadratic. */
static uint64_t const_hash(const smelt_tensor *t)
{
    uint64_t h = smelt_hash_keyed_seed(&t->dtype, sizeof t->dtype, (uint64_t)t->rank);
    h = smelt_hash_keyed_seed(t->dims, sizeof(int64_t) * (size_t)t->rank, h);
    return smelt_hash_keyed_seed(t->data, smelt_tensor_nbytes(t), h);
}

static bool const_equal(const smelt_tensor *a, const smelt_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return memcmp(a->data, b->data, smelt_tensor_nbytes(a)) == 0;
}

static bool tiny_const(const gr_value *v)
{
    return v && v->constant && !v->is_output && v->constant->data &&
           smelt_tensor_nbytes(v->constant) <= CSE_TINY_CONST_BYTES &&
           v->dtype != SMELT_DT_STRING;
}

/* canon[id]: the first tiny constant with the same contents, found through
 * `firsts`, an open-addressing table (cap slots, -1 empty) of the ids of
 * the distinct ones. */
static void share_constants(gr_graph *g, gr_value **canon, uint64_t *hash, int *firsts, int cap)
{
    for (int i = 0; i < cap; i++) firsts[i] = -1;
    for (int i = 0; i < g->values.len; i++) {
        gr_value *v = g->values.items[i];
        canon[i] = v;
        if (!tiny_const(v)) continue;
        hash[i] = const_hash(v->constant);
        int slot = (int)(hash[i] % (uint64_t)cap);
        for (; firsts[slot] >= 0; slot = (slot + 1) % cap) {
            gr_value *w = g->values.items[firsts[slot]];
            if (hash[firsts[slot]] == hash[i] && const_equal(w->constant, v->constant)) {
                canon[i] = w;
                break;
            }
        }
        if (canon[i] == v) firsts[slot] = i;
    }
    for (int i = 0; i < g->nodes.len; i++) {
        gr_node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k]) n->inputs[k] = canon[n->inputs[k]->id];
    }
}

static bool attr_equal(const gr_attr *a, const gr_attr *b)
{
    if (strcmp(a->name, b->name) != 0 || a->type != b->type) return false;
    switch (a->type) {
    case GR_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case GR_ATTR_INT:
    case GR_ATTR_TYPE: return a->i == b->i;
    case GR_ATTR_STRING: return a->s_len == b->s_len && memcmp(a->s, b->s, a->s_len) == 0;
    case GR_ATTR_TENSOR: return a->t == b->t || (a->t && b->t && const_equal(a->t, b->t));
    case GR_ATTR_FLOATS:
        return a->n == b->n && memcmp(a->floats, b->floats, sizeof(float) * (size_t)a->n) == 0;
    case GR_ATTR_INTS:
        return a->n == b->n && memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n) == 0;
    case GR_ATTR_STRINGS:
        if (a->n != b->n) return false;
        for (int i = 0; i < a->n; i++)
            if (strcmp(a->strings[i], b->strings[i]) != 0) return false;
        return true;
    case GR_ATTR_GRAPH: return false;
    }
    return false;
}

static bool same_node(const gr_node *a, const gr_node *b)
{
    if (a->op != b->op || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs ||
        a->n_attrs != b->n_attrs || strcmp(a->op_type, b->op_type) != 0)
        return false;
    for (int k = 0; k < a->n_inputs; k++)
        if (a->inputs[k] != b->inputs[k]) return false;
    for (int k = 0; k < a->n_outputs; k++)
        if (!a->outputs[k] != !b->outputs[k]) return false;
    for (int k = 0; k < a->n_attrs; k++)
        if (!attr_equal(&a->attrs[k], &b->attrs[k])) return false;
    return true;
}

static uint64_t attr_hash(const gr_attr *a, uint64_t h)
{
    h = smelt_hash_keyed_seed(a->name, strlen(a->name), h ^ (uint64_t)a->type);
    switch (a->type) {
    case GR_ATTR_FLOAT: return smelt_hash_keyed_seed(&a->f, sizeof a->f, h);
    case GR_ATTR_INT:
    case GR_ATTR_TYPE: return smelt_hash_keyed_seed(&a->i, sizeof a->i, h);
    case GR_ATTR_STRING: return smelt_hash_keyed_seed(a->s, a->s_len, h);
    case GR_ATTR_TENSOR: return a->t ? h ^ const_hash(a->t) : h;
    case GR_ATTR_FLOATS: return smelt_hash_keyed_seed(a->floats, sizeof(float) * (size_t)a->n, h);
    case GR_ATTR_INTS: return smelt_hash_keyed_seed(a->ints, sizeof(int64_t) * (size_t)a->n, h);
    case GR_ATTR_STRINGS:
        for (int i = 0; i < a->n; i++)
            h = smelt_hash_keyed_seed(a->strings[i], strlen(a->strings[i]) + 1, h);
        return h;
    case GR_ATTR_GRAPH: return h;
    }
    return h;
}

/* Op, inputs and raw attributes: many nodes of one op on one input that
 * differ in an attribute must not share a probe chain. */
static uint64_t node_hash(const gr_node *n)
{
    uint64_t h = smelt_hash_keyed_seed(&n->op, sizeof n->op, 0);
    for (int k = 0; k < n->n_inputs; k++) {
        int id = n->inputs[k] ? n->inputs[k]->id : -1;
        h = smelt_hash_keyed_seed(&id, sizeof id, h);
    }
    for (int k = 0; k < n->n_attrs; k++) h = attr_hash(&n->attrs[k], h);
    return h;
}

/* Move n's uses to its twin; only when none of n's outputs is a graph output. */
static void merge_into(gr_graph *g, gr_node *n, gr_node *twin)
{
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] && n->outputs[k]->is_output) return;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k]) pu_replace_uses(g, n->outputs[k], twin->outputs[k]);
}

/* Open addressing over node indices (the table is twice the node count). */
static void merge_nodes(gr_graph *g, int *table, uint64_t *hashes, int cap)
{
    for (int i = 0; i < cap; i++) table[i] = -1;
    for (int i = 0; i < g->nodes.len; i++) {
        gr_node *n = g->nodes.items[i];
        if (n->n_inputs == 0) continue; /* generators (random) stay apart */
        hashes[i] = node_hash(n);
        int slot = (int)(hashes[i] % (uint64_t)cap);
        for (; table[slot] >= 0; slot = (slot + 1) % cap) {
            gr_node *m = g->nodes.items[table[slot]];
            if (hashes[table[slot]] == hashes[i] && same_node(m, n)) break;
        }
        if (table[slot] >= 0)
            merge_into(g, n, g->nodes.items[table[slot]]);
        else
            table[slot] = i;
    }
}

smelt_status pass_eliminate_common(smelt_ctx *ctx, gr_graph *g)
{
    SMELT_TRY(pu_finish(ctx, g)); /* topological order: twins come after the first */
    int cap = 2 * g->nodes.len + 1;
    gr_value **canon = smelt_calloc((size_t)g->values.len + 1, sizeof *canon);
    uint64_t *vhash = smelt_calloc((size_t)g->values.len + 1, sizeof *vhash);
    int *table = smelt_calloc((size_t)cap, sizeof *table);
    uint64_t *nhash = smelt_calloc((size_t)g->nodes.len + 1, sizeof *nhash);
    int vcap = 2 * g->values.len + 1;
    int *firsts = smelt_calloc((size_t)vcap, sizeof *firsts);
    smelt_status s = SMELT_OK;
    if (!canon || !vhash || !table || !nhash || !firsts) {
        s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    } else {
        share_constants(g, canon, vhash, firsts, vcap);
        merge_nodes(g, table, nhash, cap);
    }
    smelt_free(canon);
    smelt_free(vhash);
    smelt_free(table);
    smelt_free(nhash);
    smelt_free(firsts);
    return s == SMELT_OK ? pu_finish(ctx, g) : s;
}
