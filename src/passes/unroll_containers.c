/* Sequences and optionals in compiled code: unrolled into their elements.
 *
 * Compiled code holds tensors only.  A specialisation knows how many
 * elements each container input has and their shapes (api/specialize.c
 * binds inputs per signature), so a container inside the graph has a
 * structure known at compile time wherever the positions that index it are
 * constants.  This pass follows that structure (a `cval`: a tensor value,
 * or a container's items) through the container ops and rewrites them into
 * tensor ops on the elements:
 *   SequenceConstruct, SequenceEmpty, SequenceInsert, SequenceErase,
 *   Optional, Identity: a new list of the same elements;
 *   SequenceAt, OptionalGetElement: the element itself;
 *   SequenceLength, OptionalHasElement: constants;
 *   SplitToSequence: one Slice (Gather for keepdims 0) per element;
 *   ConcatFromSequence: Concat (each element Unsqueezed first for new_axis).
 * Each container input becomes one input per tensor element, in pre-order,
 * named NAME.K; each container output one output per tensor element, in
 * pre-order (the layout says how to rebuild the container from them).
 * A Loop whose carried values change shape with the iteration is unrolled
 * the same way when its trip count is known.  What it cannot resolve (a
 * position known only at run time, a container through Scan, an element
 * read by a tensor op) leaves the graph unresolved with the reason, so the
 * caller binds more inputs or refuses naming the node. */
#include <string.h>

#include "ops/control.h"
#include "ops/op.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

/* A value's structure: a tensor (leaf), or a container's items. */
typedef struct cval {
    smelt_dtype dtype; /* with the container bits for a container */
    gr_value *tensor;  /* a leaf */
    int n;
    struct cval **items;
} cval;

typedef struct unroll {
    smelt_ctx *ctx;
    gr_graph *g;
    smelt_arena arena; /* cvals */
    cval **of;         /* containers' structures by value id (grows with copies' values) */
    int n_of;
    char *why; /* the reason it stays unresolved */
    size_t cap;
    bool unresolved;
    int made; /* nodes made, for unique names */
} unroll;

static bool is_container(const gr_value *v) { return v && smelt_dtype_is_container(v->dtype); }

static smelt_dtype seq_of(smelt_dtype element)
{
    return (smelt_dtype)((unsigned)element | SMELT_DT_SEQUENCE_BIT);
}

/* Record that the graph cannot be unrolled, naming the node; SMELT_OK so
 * the caller decides. */
static smelt_status give_up(unroll *u, const gr_node *n, const char *what)
{
    if (!u->unresolved)
        snprintf(u->why, u->cap, "node '%s' (%s): %s", n ? n->name : "", n ? n->op_type : "", what);
    u->unresolved = true;
    return SMELT_OK;
}

static smelt_status oom(unroll *u) { return smelt_errf(u->ctx, SMELT_ERR_NOMEM, "out of memory"); }

static cval *cval_new(unroll *u, smelt_dtype dt, gr_value *tensor, int n)
{
    cval *c = smelt_arena_alloc(&u->arena, sizeof *c);
    if (!c) return NULL;
    c->dtype = dt;
    c->tensor = tensor;
    c->n = n;
    c->items = n > 0 ? smelt_arena_alloc(&u->arena, sizeof *c->items * (size_t)n) : NULL;
    return n > 0 && !c->items ? NULL : c;
}

static cval *leaf(unroll *u, gr_value *v) { return cval_new(u, v->dtype, v, 0); }

/* v's structure: recorded for a container, a leaf for a tensor. */
static cval *cval_of(unroll *u, gr_value *v)
{
    if (!is_container(v)) return leaf(u, v);
    return v->id < u->n_of ? u->of[v->id] : NULL;
}

/* Record container v's structure, and type v by it (a copied body's
 * outputs have no type yet). */
static smelt_status set_cval(unroll *u, gr_value *v, cval *c)
{
    if (!v) return SMELT_OK;
    if (v->id >= u->n_of) {
        int n = u->g->values.len + 16;
        cval **of = smelt_realloc(u->of, sizeof *of * (size_t)u->n_of, sizeof *of * (size_t)n);
        if (!of) return oom(u);
        memset(of + u->n_of, 0, sizeof *of * (size_t)(n - u->n_of));
        u->of = of;
        u->n_of = n;
    }
    u->of[v->id] = c;
    v->dtype = c->dtype;
    v->rank = 1;
    v->dims[0] = c->n;
    return SMELT_OK;
}

/* v's constant contents, looking through Identity (what this pass makes of
 * a resolved position or length), or NULL. */
static const smelt_tensor *const_of(const gr_value *v)
{
    while (v && !v->constant && v->producer && v->producer->op == OP_IDENTITY)
        v = v->producer->inputs[0];
    return v ? v->constant : NULL;
}

/* ---- constants and new nodes ---- */

static int64_t attr_int(const gr_node *n, const char *name, int64_t dflt)
{
    const gr_attr *a = gr_node_attr(n, name);
    return a && a->type == GR_ATTR_INT ? a->i : dflt;
}

static gr_value *const_i64(unroll *u, int64_t v)
{
    return pu_const_i64(u->ctx, u->g, "unrolled", 0, NULL, &v);
}

/* A new one-output node of kind over inputs, imported and inferred. */
static gr_value *make_node(unroll *u, op_kind kind, gr_value *const *in, int n_in, gr_node **made)
{
    char name[64];
    snprintf(name, sizeof name, "unrolled_%d", u->made++);
    gr_node *n = pu_node_new(u->ctx, u->g, name, kind, in, n_in, 1);
    *made = n;
    return n ? n->outputs[0] : NULL;
}

static smelt_status finish_node(unroll *u, gr_node *n)
{
    SMELT_TRY(pu_node_import(u->ctx, u->g, n));
    return pu_infer_node(u->ctx, n, "unroll_containers");
}

/* A constant position input (or none: dflt) as an index into n items,
 * negative from the end; end_ok: n itself is a position too (insert).
 * false after giving up, naming the problem. */
static bool position(unroll *u, const gr_node *node, int input, int n, int dflt, bool end_ok,
                     int *pos)
{
    const gr_value *p = node->n_inputs > input ? node->inputs[input] : NULL;
    if (!p) {
        *pos = dflt;
        return dflt >= 0 || (give_up(u, node, "the sequence is empty"), false);
    }
    const smelt_tensor *c = const_of(p);
    if (!c || op_numel(c) != 1) {
        give_up(u, node, "the position is not a compile-time constant");
        return false;
    }
    int64_t v = op_get_i64(c, 0), at = v < 0 ? v + n : v;
    if (at < 0 || at > n || (at == n && !end_ok)) {
        char why[160];
        snprintf(why, sizeof why, "position %lld is out of range for a sequence of %d",
                 (long long)v, n);
        give_up(u, node, why);
        return false;
    }
    *pos = (int)at;
    return true;
}

/* ---- the container ops ---- */

static smelt_status seq_construct(unroll *u, const gr_node *n, cval *out)
{
    for (int k = 0; k < out->n; k++)
        if (!(out->items[k] = cval_of(u, n->inputs[k])))
            return give_up(u, n, "an element's structure is unknown");
    return SMELT_OK;
}

/* Insert (erase: remove) at a constant position. */
static smelt_status seq_edit(unroll *u, const gr_node *n, bool insert)
{
    cval *s = cval_of(u, n->inputs[0]);
    if (!s) return give_up(u, n, "its sequence's structure is unknown");
    int pos;
    if (!position(u, n, insert ? 2 : 1, s->n, insert ? s->n : s->n - 1, insert, &pos))
        return SMELT_OK;
    cval *out = cval_new(u, s->dtype, NULL, s->n + (insert ? 1 : -1));
    cval *elem = insert ? cval_of(u, n->inputs[1]) : NULL;
    if (!out || (insert && !elem)) return oom(u);
    for (int k = 0, j = 0; k < s->n; k++) {
        if (insert && k == pos) out->items[j++] = elem;
        if (!insert && k == pos) continue;
        out->items[j++] = s->items[k];
    }
    if (insert && pos == s->n) out->items[s->n] = elem;
    return set_cval(u, n->outputs[0], out);
}

/* n's one output v is item: a container's structure goes on; for a
 * tensor, n becomes Identity(item), so v (a graph output, or read by nodes
 * copied later) stays where it is. */
static smelt_status take_item(unroll *u, gr_node *n, gr_value *v, cval *item)
{
    if (!item->tensor) return set_cval(u, v, item);
    if (n->n_inputs < 1 && !(n->inputs = smelt_arena_alloc(&u->g->arena, sizeof *n->inputs)))
        return oom(u);
    n->op = OP_IDENTITY;
    n->op_type = "Identity";
    n->n_inputs = 1;
    n->inputs[0] = item->tensor;
    n->n_attrs = 0;
    n->attrs = NULL;
    n->op_attrs = NULL;
    return finish_node(u, n);
}

static smelt_status seq_at(unroll *u, gr_node *n)
{
    cval *s = cval_of(u, n->inputs[0]);
    int pos;
    if (!s) return give_up(u, n, "its sequence's structure is unknown");
    if (n->n_inputs < 2 || !n->inputs[1]) return give_up(u, n, "it has no position");
    if (!position(u, n, 1, s->n, 0, false, &pos)) return SMELT_OK;
    return take_item(u, n, n->outputs[0], s->items[pos]);
}

/* n's one output becomes the constant c holds (so nodes after it fold:
 * an If's condition, a Loop's trip count). */
static smelt_status as_constant(unroll *u, gr_node *n, gr_value *c)
{
    smelt_tensor *t = c ? smelt_calloc(1, sizeof *t) : NULL;
    if (!t || !smelt_value_copy(c->constant, t)) {
        smelt_free(t);
        return oom(u);
    }
    gr_value *v = n->outputs[0];
    pu_detach(n);
    return gr_value_set_constant(u->ctx, u->g, v, t);
}

static smelt_status seq_length(unroll *u, gr_node *n)
{
    cval *s = cval_of(u, n->inputs[0]);
    if (!s) return give_up(u, n, "its sequence's structure is unknown");
    return as_constant(u, n, const_i64(u, s->n));
}

static smelt_status optional_has(unroll *u, gr_node *n)
{
    gr_value *x = n->n_inputs > 0 ? n->inputs[0] : NULL;
    bool has = x != NULL;
    if (x && (x->dtype & SMELT_DT_OPTIONAL_BIT)) {
        cval *o = cval_of(u, x);
        if (!o) return give_up(u, n, "its optional's structure is unknown");
        has = o->n > 0;
    }
    bool v = has;
    return as_constant(u, n, pu_const(u->ctx, u->g, "unrolled", SMELT_DT_BOOL, 0, NULL, &v));
}

static smelt_status optional_get(unroll *u, gr_node *n)
{
    gr_value *x = n->inputs[0];
    cval *o = cval_of(u, x);
    if (!o) return give_up(u, n, "its input's structure is unknown");
    if (!(x->dtype & SMELT_DT_OPTIONAL_BIT)) return take_item(u, n, n->outputs[0], o);
    if (o->n == 0) return give_up(u, n, "the optional is empty (the reference executor reports it)");
    return take_item(u, n, n->outputs[0], o->items[0]);
}

/* x with a new axis of 1 at axis (Unsqueeze's axes an input from opset
 * 13, an attribute before). */
static smelt_status unsqueeze(unroll *u, gr_value *x, int64_t axis, gr_value **out)
{
    gr_node *un;
    int64_t one = 1;
    bool as_input = u->g->opset >= 13;
    gr_value *args[2] = {x, as_input ? pu_const_i64(u->ctx, u->g, "unrolled", 1, &one, &axis) : NULL};
    if ((as_input && !args[1]) || !(*out = make_node(u, OP_UNSQUEEZE, args, as_input ? 2 : 1, &un)))
        return oom(u);
    if (!as_input) SMELT_TRY(pu_attr_ints(u->ctx, u->g, un, "axes", &axis, 1));
    return finish_node(u, un);
}

/* Element k of a split: Slice [start, start + len) along axis, or for
 * keepdims 0 (one per index) Gather at start. */
static smelt_status split_piece(unroll *u, gr_value *x, int64_t axis, int64_t start, int64_t len,
                                bool squeeze, gr_value **out)
{
    gr_node *node;
    if (squeeze) {
        gr_value *in[2] = {x, const_i64(u, start)};
        if (!in[1] || !(*out = make_node(u, OP_GATHER, in, 2, &node))) return oom(u);
        SMELT_TRY(pu_attr_int(u->ctx, u->g, node, "axis", axis));
        return finish_node(u, node);
    }
    int64_t one = 1, s = start, e = start + len;
    gr_value *in[4] = {x, pu_const_i64(u->ctx, u->g, "unrolled", 1, &one, &s),
                       pu_const_i64(u->ctx, u->g, "unrolled", 1, &one, &e),
                       pu_const_i64(u->ctx, u->g, "unrolled", 1, &one, &axis)};
    if (!in[1] || !in[2] || !in[3] || !(*out = make_node(u, OP_SLICE, in, 4, &node))) return oom(u);
    return finish_node(u, node);
}

/* The chunk lengths SplitToSequence's spec gives, into len (count of them). */
static bool split_lengths(const gr_value *split, int64_t dim, int64_t *len, int *count, int max)
{
    if (!split) {
        *count = (int)dim;
        for (int64_t i = 0; i < dim && i < max; i++) len[i] = 1;
        return dim <= max;
    }
    if (!split->constant) return false;
    const smelt_tensor *t = split->constant;
    if (t->rank == 0) {
        int64_t each = op_get_i64(t, 0);
        if (each <= 0) return false;
        *count = (int)(dim / each + (dim % each != 0));
        for (int i = 0; i < *count && i < max; i++) len[i] = i == *count - 1 ? dim - each * i : each;
        return *count <= max;
    }
    int64_t sum = 0;
    *count = (int)op_numel(t);
    for (int i = 0; i < *count && i < max; i++) sum += len[i] = op_get_i64(t, i);
    return *count <= max && sum == dim;
}

#define UNROLL_MAX_ITEMS 256

static smelt_status split_to_seq(unroll *u, gr_node *n)
{
    gr_value *x = n->inputs[0], *split = n->n_inputs > 1 ? n->inputs[1] : NULL;
    int64_t axis = attr_int(n, "axis", 0);
    bool keepdims = attr_int(n, "keepdims", 1) != 0;
    if (x->rank < 1 || gr_value_numel(x) < 0) return give_up(u, n, "its input's shape is unknown");
    if (axis < 0) axis += x->rank;
    int64_t len[UNROLL_MAX_ITEMS];
    int count;
    if (axis < 0 || axis >= x->rank ||
        !split_lengths(split, x->dims[axis], len, &count, UNROLL_MAX_ITEMS))
        return give_up(u, n, "its split is not a compile-time constant of at most 256 pieces");
    smelt_dtype seq = seq_of(x->dtype);
    cval *out = cval_new(u, seq, NULL, count);
    if (!out && count) return oom(u);
    for (int64_t k = 0, start = 0; k < count; start += len[k++]) {
        gr_value *piece;
        SMELT_TRY(split_piece(u, x, axis, start, len[k], !split && !keepdims, &piece));
        if (!(out->items[k] = leaf(u, piece))) return oom(u);
    }
    if (!out && !(out = cval_new(u, seq, NULL, 0))) return oom(u);
    return set_cval(u, n->outputs[0], out);
}

static smelt_status concat_from_seq(unroll *u, gr_node *n)
{
    cval *s = cval_of(u, n->inputs[0]);
    if (!s) return give_up(u, n, "its sequence's structure is unknown");
    if (s->n == 0 || s->n > UNROLL_MAX_ITEMS)
        return give_up(u, n, "the sequence is empty or longer than 256");
    int64_t axis = attr_int(n, "axis", 0);
    bool new_axis = attr_int(n, "new_axis", 0) != 0;
    gr_value *in[UNROLL_MAX_ITEMS];
    for (int k = 0; k < s->n; k++) {
        if (!s->items[k]->tensor) return give_up(u, n, "its elements are containers");
        in[k] = s->items[k]->tensor;
        if (new_axis) SMELT_TRY(unsqueeze(u, in[k], axis, &in[k]));
    }
    gr_node *cat;
    gr_value *y = make_node(u, OP_CONCAT, in, s->n, &cat);
    if (!y) return oom(u);
    SMELT_TRY(pu_attr_int(u->ctx, u->g, cat, "axis", axis));
    SMELT_TRY(finish_node(u, cat));
    return take_item(u, n, n->outputs[0], leaf(u, y));
}

/* Ops whose outputs are containers or read one (a copy's outputs are not
 * typed yet). */
static bool container_op(op_kind op)
{
    switch (op) {
    case OP_SEQUENCE_CONSTRUCT: case OP_SEQUENCE_EMPTY: case OP_SEQUENCE_INSERT:
    case OP_SEQUENCE_ERASE: case OP_SEQUENCE_AT: case OP_SEQUENCE_LENGTH: case OP_OPTIONAL:
    case OP_OPTIONAL_HAS_ELEMENT: case OP_OPTIONAL_GET_ELEMENT: case OP_SPLIT_TO_SEQUENCE:
    case OP_CONCAT_FROM_SEQUENCE: case OP_SEQUENCE_MAP:
        return true;
    default:
        return false;
    }
}

static bool touches_containers(const gr_node *n)
{
    if (n->op == OP_OPTIONAL_HAS_ELEMENT || n->op == OP_OPTIONAL_GET_ELEMENT) return true;
    for (int k = 0; k < n->n_inputs; k++)
        if (is_container(n->inputs[k])) return true;
    for (int k = 0; k < n->n_outputs; k++)
        if (is_container(n->outputs[k])) return true;
    return false;
}

static smelt_status unroll_node(unroll *u, gr_node *n);

/* A copy whose inputs are all constants and whose outputs are small is
 * folded (a loop body's iteration arithmetic, an If's condition). */
static bool foldable(const gr_node *n)
{
    if (op_get(n->op)->def->flags & (OP_FLAG_NO_FOLD | OP_FLAG_SUBGRAPHS)) return false;
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] && !n->inputs[k]->constant) return false;
    for (int k = 0; k < n->n_outputs; k++) {
        int64_t e = n->outputs[k] ? gr_value_numel(n->outputs[k]) : 0;
        if (e < 0 || e > 1024) return false;
    }
    return true;
}

static bool holds_subgraphs(const gr_node *n)
{
    for (int k = 0; k < n->n_attrs; k++)
        if (n->attrs[k].type == GR_ATTR_GRAPH) return true;
    return false;
}

static smelt_status if_inline(unroll *u, gr_node *n);

/* A body node just copied into the graph: unrolled if it touches
 * containers, else typed from its inputs. */
static smelt_status after_copy(void *user, gr_node *copy)
{
    unroll *u = user;
    if (u->unresolved) return SMELT_OK;
    if (container_op(copy->op) || touches_containers(copy)) return unroll_node(u, copy);
    if (holds_subgraphs(copy)) /* one graph object per node: copies inline theirs */
        return copy->op == OP_IF ? if_inline(u, copy)
                                 : give_up(u, copy, "a body copied here holds control flow "
                                                    "that does not unroll");
    SMELT_TRY(pu_infer_node(u->ctx, copy, "unroll_containers"));
    return foldable(copy) ? pu_fold_node(u->ctx, u->g, copy) : SMELT_OK;
}

/* SequenceMap: the body copied once per element of the first sequence,
 * on element i of each sequence input (a tensor input whole); output j's
 * item i is body output j of copy i. */
static smelt_status seq_map(unroll *u, gr_node *n)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    const gr_graph *body = a->body;
    cval *first = cval_of(u, n->inputs[0]);
    if (!first) return give_up(u, n, "its sequence's structure is unknown");
    int count = first->n;
    cval **outs = smelt_arena_alloc(&u->arena, sizeof *outs * (size_t)(n->n_outputs + 1));
    gr_value **map = smelt_calloc((size_t)body->values.len + 1, sizeof *map);
    smelt_status s = outs && map ? SMELT_OK : oom(u);
    for (int j = 0; s == SMELT_OK && j < n->n_outputs; j++)
        if (!(outs[j] = cval_new(u, seq_of(((gr_value *)body->outputs.items[j])->dtype), NULL, count)))
            s = oom(u);
    for (int i = 0; s == SMELT_OK && !u->unresolved && i < count; i++) {
        memset(map, 0, sizeof *map * (size_t)body->values.len);
        for (int k = 0; k < body->inputs.len && !u->unresolved; k++) {
            int src = k < body->n_formal ? k : ctl_body_input_source(body, k);
            gr_value *x = n->inputs[src];
            cval *c = is_container(x) ? cval_of(u, x) : NULL;
            if (is_container(x) && (!c || c->n != count || !c->items[i]->tensor))
                give_up(u, n, "its sequences differ in length, or hold containers");
            else
                map[((gr_value *)body->inputs.items[k])->id] = c ? c->items[i]->tensor : x;
        }
        char prefix[200];
        snprintf(prefix, sizeof prefix, "%s/%d", n->name, i);
        if (!u->unresolved) s = pu_copy_body(u->ctx, u->g, n, body, prefix, map, after_copy, u);
        for (int j = 0; s == SMELT_OK && !u->unresolved && j < n->n_outputs; j++) {
            gr_value *y;
            s = pu_body_value(u->ctx, u->g, n, prefix, map, body->outputs.items[j], &y);
            if (s == SMELT_OK && !(outs[j]->items[i] = leaf(u, y))) s = oom(u);
        }
    }
    smelt_free(map);
    for (int j = 0; s == SMELT_OK && !u->unresolved && j < n->n_outputs; j++) {
        if (count > 0) outs[j]->dtype = seq_of(outs[j]->items[0]->dtype); /* an untyped body's */
        s = set_cval(u, n->outputs[j], outs[j]);
    }
    return s;
}

/* The body passes its condition through (or returns a constant true). */
static bool cond_stays(const gr_graph *body)
{
    const gr_value *c = body->outputs.items[0], *in = body->inputs.items[1];
    if (c->producer && c->producer->op == OP_IDENTITY) c = c->producer->inputs[0];
    return c == in || (c->constant && op_numel(c->constant) == 1 && op_get_i64(c->constant, 0));
}

/* Output v of node n (If, Loop) is now c: a container's structure (v's own
 * type may be unknown: inference gave up on it), or for a tensor an
 * Identity of it takes v over. */
static smelt_status take_output(unroll *u, const gr_node *n, gr_value *v, cval *c)
{
    if (!v) return SMELT_OK;
    if (!c) return give_up(u, n, "a value's structure is unknown");
    if (!c->tensor) return set_cval(u, v, c);
    gr_node *id;
    if (!make_node(u, OP_IDENTITY, &c->tensor, 1, &id)) return oom(u);
    SMELT_TRY(finish_node(u, id));
    pu_take_output(id, 0, v);
    return SMELT_OK;
}

/* Carried value k after the loop: an optional(T) initial value no
 * iteration replaced (zero trips) where the body gives T is its element,
 * as the reference executor hands it over. */
static smelt_status loop_state_out(unroll *u, const gr_node *n, int k, gr_value *x)
{
    const gr_value *o = ctl_attrs_of(n)->body->outputs.items[1 + k];
    cval *c = cval_of(u, x);
    if (c && is_container(x) && ctl_optional_of(x->dtype, o->dtype)) {
        if (c->n == 0) return give_up(u, n, "a carried value is still its empty optional");
        c = c->items[0];
    }
    return take_output(u, n, n->outputs[k], c);
}

/* The iterations' values of a scan output stacked along a new axis 0. */
static smelt_status stack(unroll *u, gr_value **items, int count, gr_node **cat)
{
    for (int i = 0; i < count; i++) SMELT_TRY(unsqueeze(u, items[i], 0, &items[i]));
    if (!make_node(u, OP_CONCAT, items, count, cat)) return oom(u);
    SMELT_TRY(pu_attr_int(u->ctx, u->g, *cat, "axis", 0));
    return finish_node(u, *cat);
}

static smelt_status loop_stack(unroll *u, gr_value *v, gr_value **items, int count)
{
    if (!v) return SMELT_OK;
    gr_node *cat;
    SMELT_TRY(stack(u, items, count, &cat));
    pu_take_output(cat, 0, v);
    return SMELT_OK;
}

/* x[i] along axis 0 (the axis dropped). */
static smelt_status pick(unroll *u, gr_value *x, int64_t i, gr_value **out)
{
    gr_node *gather;
    gr_value *in[2] = {x, const_i64(u, i)};
    if (!in[1] || !(*out = make_node(u, OP_GATHER, in, 2, &gather))) return oom(u);
    SMELT_TRY(pu_attr_int(u->ctx, u->g, gather, "axis", 0));
    return finish_node(u, gather);
}

typedef struct loop_copy {
    gr_value **state, **scan; /* scan: [iteration * n_scan_out + j] */
    gr_value **map;
    gr_value *yes; /* the condition, true */
} loop_copy;

/* Iteration i: the body copied on the carried values; they move on. */
static smelt_status loop_iteration(unroll *u, gr_node *n, loop_copy *lc, int i)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    const gr_graph *body = a->body;
    gr_value **map = lc->map;
    memset(map, 0, sizeof *map * (size_t)body->values.len);
    map[((gr_value *)body->inputs.items[0])->id] = const_i64(u, i);
    map[((gr_value *)body->inputs.items[1])->id] = lc->yes;
    if (!map[((gr_value *)body->inputs.items[0])->id]) return oom(u);
    for (int k = 0; k < a->n_state; k++)
        map[((gr_value *)body->inputs.items[2 + k])->id] = lc->state[k];
    for (int k = body->n_formal; k < body->inputs.len; k++)
        map[((gr_value *)body->inputs.items[k])->id] = n->inputs[ctl_body_input_source(body, k)];
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s/%d", n->name, i);
    SMELT_TRY(pu_copy_body(u->ctx, u->g, n, body, prefix, map, after_copy, u));
    for (int k = 0; !u->unresolved && k < a->n_state + a->n_scan_out; k++) {
        gr_value **at = k < a->n_state ? &lc->state[k]
                                       : &lc->scan[i * a->n_scan_out + k - a->n_state];
        SMELT_TRY(pu_body_value(u->ctx, u->g, n, prefix, map, body->outputs.items[1 + k], at));
    }
    return SMELT_OK;
}

/* Loop with a constant trip count and a condition that stays true: the
 * body copied once per iteration (the iteration number a constant, the
 * carried values passed on, containers by their structure), scan outputs
 * stacked; what carries containers compiles that way. */
static smelt_status loop_unroll(unroll *u, gr_node *n)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    const smelt_tensor *m = n->inputs[0] ? const_of(n->inputs[0]) : NULL;
    const smelt_tensor *cond = n->n_inputs > 1 && n->inputs[1] ? const_of(n->inputs[1]) : NULL;
    if (!m || op_numel(m) != 1) return give_up(u, n, "its trip count is not a compile-time constant");
    int64_t trips = op_get_i64(m, 0);
    trips = trips < 0 ? 0 : trips;
    if ((n->n_inputs > 1 && n->inputs[1] && (!cond || !op_get_i64(cond, 0))) || !cond_stays(a->body))
        return give_up(u, n, "its condition may end it early");
    if (trips > UNROLL_MAX_ITEMS || (a->n_scan_out && trips == 0))
        return give_up(u, n, "it runs more than 256 iterations, or none with scan outputs");
    bool yes = true;
    loop_copy lc = {smelt_calloc((size_t)a->n_state + 1, sizeof(gr_value *)),
                    smelt_calloc((size_t)(trips * a->n_scan_out) + 1, sizeof(gr_value *)),
                    smelt_calloc((size_t)a->body->values.len + 1, sizeof(gr_value *)),
                    pu_const(u->ctx, u->g, "unrolled", SMELT_DT_BOOL, 0, NULL, &yes)};
    smelt_status s = lc.state && lc.scan && lc.map && lc.yes ? SMELT_OK : oom(u);
    for (int k = 0; s == SMELT_OK && k < a->n_state; k++) lc.state[k] = n->inputs[2 + k];
    for (int i = 0; s == SMELT_OK && !u->unresolved && i < trips; i++) s = loop_iteration(u, n, &lc, i);
    for (int k = 0; s == SMELT_OK && !u->unresolved && k < a->n_state; k++)
        s = loop_state_out(u, n, k, lc.state[k]);
    gr_value **column = smelt_calloc((size_t)trips + 1, sizeof *column);
    for (int j = 0; s == SMELT_OK && !u->unresolved && j < a->n_scan_out; j++) {
        for (int i = 0; column && i < trips; i++) column[i] = lc.scan[i * a->n_scan_out + j];
        s = column ? loop_stack(u, n->outputs[a->n_state + j], column, (int)trips) : oom(u);
    }
    smelt_free(column);
    smelt_free(lc.state);
    smelt_free(lc.scan);
    smelt_free(lc.map);
    if (s == SMELT_OK && !u->unresolved) pu_detach(n);
    return s;
}

/* A zero tensor like v (static dims), for a scan output past a short
 * sequence; NULL after an error. */
static gr_value *zeros_like(unroll *u, const gr_value *v)
{
    int64_t numel = gr_value_numel(v);
    size_t es = smelt_dtype_size(v->dtype);
    if (numel < 0 || !es) {
        give_up(u, v->producer, "a scan output past a short sequence has no known shape");
        return NULL;
    }
    void *zero = smelt_calloc((size_t)numel * es + 1, 1);
    gr_value *z = zero ? pu_const(u->ctx, u->g, "scan_zero", v->dtype, v->rank, v->dims, zero) : NULL;
    smelt_free(zero);
    if (!z) oom(u);
    return z;
}

/* One batch entry of a Scan-8: its states and scan inputs picked, the
 * body copied for each of its len steps (reversed inputs read from len - 1
 * down, as the reference does); states[k] gets the final state, scans[j]
 * the stacked scan output j, zeros past len. */
static smelt_status scan8_entry(unroll *u, gr_node *n, int64_t b, int64_t steps, int64_t len,
                                gr_value **states, gr_value **scans)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    const gr_graph *body = a->body;
    gr_value **map = smelt_calloc((size_t)body->values.len + 1, sizeof *map);
    gr_value **outs = smelt_calloc((size_t)(steps * a->n_scan_out) + 1, sizeof *outs);
    smelt_status s = map && outs ? SMELT_OK : oom(u);
    for (int k = 0; s == SMELT_OK && k < a->n_state; k++) s = pick(u, n->inputs[1 + k], b, &states[k]);
    for (int64_t t = 0; s == SMELT_OK && !u->unresolved && t < len; t++) {
        memset(map, 0, sizeof *map * (size_t)body->values.len);
        for (int k = 0; k < a->n_state; k++) map[((gr_value *)body->inputs.items[k])->id] = states[k];
        for (int j = 0; s == SMELT_OK && j < a->n_scan_in; j++) {
            gr_value *row;
            s = pick(u, n->inputs[1 + a->n_state + j], b, &row);
            if (s == SMELT_OK) s = pick(u, row, a->in_rev[j] ? len - 1 - t : t, &row);
            map[((gr_value *)body->inputs.items[a->n_state + j])->id] = row;
        }
        for (int k = body->n_formal; k < body->inputs.len; k++)
            map[((gr_value *)body->inputs.items[k])->id] = n->inputs[ctl_body_input_source(body, k)];
        char prefix[200];
        snprintf(prefix, sizeof prefix, "%s/%lld/%lld", n->name, (long long)b, (long long)t);
        if (s == SMELT_OK) s = pu_copy_body(u->ctx, u->g, n, body, prefix, map, after_copy, u);
        for (int k = 0; s == SMELT_OK && !u->unresolved && k < a->n_state + a->n_scan_out; k++) {
            gr_value **at = k < a->n_state ? &states[k] : &outs[t * a->n_scan_out + k - a->n_state];
            s = pu_body_value(u->ctx, u->g, n, prefix, map, body->outputs.items[k], at);
        }
    }
    for (int64_t t = len; s == SMELT_OK && !u->unresolved && t < steps; t++)
        for (int j = 0; j < a->n_scan_out && !u->unresolved; j++) {
            const gr_value *like = len ? outs[j] : body->outputs.items[a->n_state + j];
            if (!(outs[t * a->n_scan_out + j] = zeros_like(u, like)) && !u->unresolved) s = oom(u);
        }
    gr_value **column = smelt_calloc((size_t)steps + 1, sizeof *column);
    for (int j = 0; s == SMELT_OK && !u->unresolved && j < a->n_scan_out; j++) {
        gr_node *cat = NULL;
        for (int64_t t = 0; column && t < steps; t++) column[t] = outs[t * a->n_scan_out + j];
        s = column ? stack(u, column, (int)steps, &cat) : oom(u);
        if (s == SMELT_OK) scans[j] = cat->outputs[0];
    }
    smelt_free(column);
    smelt_free(map);
    smelt_free(outs);
    return s;
}

/* Scan-8 (a batch axis 0 on every state and scan input, the sequence on
 * axis 1 of the scan inputs; sequence_lens, when given, known when the
 * model is specialised): the body copied per batch entry and step, the
 * entries' results stacked along axis 0. */
static smelt_status scan8_unroll(unroll *u, gr_node *n)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    const smelt_tensor *lens = n->inputs[0] ? const_of(n->inputs[0]) : NULL;
    if (n->inputs[0] && !lens) return give_up(u, n, "its sequence_lens is not known when compiling");
    const gr_value *x = a->n_scan_in ? n->inputs[1 + a->n_state] : NULL;
    if (!x || gr_value_numel(x) < 0 || x->rank < 2)
        return give_up(u, n, "its scan inputs' shapes are not known");
    int64_t batch = x->dims[0], steps = x->dims[1];
    if (batch * steps > UNROLL_MAX_ITEMS || batch < 1 || steps < 1)
        return give_up(u, n, "it runs more than 256 steps in all, or none");
    if (lens && op_numel(lens) != batch)
        return op_errf(u->ctx, n, SMELT_ERR_MODEL, "sequence_lens has %lld entries for a batch of "
                       "%lld", (long long)op_numel(lens), (long long)batch);
    for (int64_t b = 0; lens && b < batch; b++)
        if (op_get_i64(lens, b) < 0 || op_get_i64(lens, b) > steps)
            return op_errf(u->ctx, n, SMELT_ERR_MODEL, "sequence_lens[%lld] = %lld is not in 0..%lld",
                           (long long)b, (long long)op_get_i64(lens, b), (long long)steps);
    int n_out = a->n_state + a->n_scan_out;
    gr_value **per = smelt_calloc((size_t)(batch * n_out) + 1, sizeof *per);
    smelt_status s = per ? SMELT_OK : oom(u);
    for (int64_t b = 0; s == SMELT_OK && !u->unresolved && b < batch; b++)
        s = scan8_entry(u, n, b, steps, lens ? op_get_i64(lens, b) : steps, per + b * n_out,
                        per + b * n_out + a->n_state);
    gr_value **column = smelt_calloc((size_t)batch + 1, sizeof *column);
    for (int k = 0; s == SMELT_OK && !u->unresolved && k < n_out; k++) {
        for (int64_t b = 0; column && b < batch; b++) column[b] = per[b * n_out + k];
        s = column ? loop_stack(u, n->outputs[k], column, (int)batch) : oom(u);
    }
    smelt_free(column);
    smelt_free(per);
    if (s == SMELT_OK && !u->unresolved) pu_detach(n);
    return s;
}

/* If with a compile-time condition: the branch taken copied in. */
static smelt_status if_inline(unroll *u, gr_node *n)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    const smelt_tensor *c = const_of(n->inputs[0]);
    if (!c || op_numel(c) != 1) return give_up(u, n, "its condition is not a compile-time constant");
    const gr_graph *branch = op_get_i64(c, 0) ? a->then_g : a->else_g;
    gr_value **map = smelt_calloc((size_t)branch->values.len + 1, sizeof *map);
    if (!map) return oom(u);
    for (int k = branch->n_formal; k < branch->inputs.len; k++)
        map[((gr_value *)branch->inputs.items[k])->id] = n->inputs[ctl_body_input_source(branch, k)];
    smelt_status s = pu_copy_body(u->ctx, u->g, n, branch, n->name, map, after_copy, u);
    for (int k = 0; s == SMELT_OK && !u->unresolved && k < n->n_outputs; k++) {
        gr_value *x;
        s = pu_body_value(u->ctx, u->g, n, n->name, map, branch->outputs.items[k], &x);
        if (s == SMELT_OK) s = take_output(u, n, n->outputs[k], cval_of(u, x));
    }
    smelt_free(map);
    if (s == SMELT_OK && !u->unresolved) pu_detach(n);
    return s;
}

/* A node of a container op (or one with container inputs or outputs). */
static smelt_status unroll_node(unroll *u, gr_node *n)
{
    gr_value *out = n->n_outputs > 0 ? n->outputs[0] : NULL;
    switch (n->op) {
    case OP_SEQUENCE_CONSTRUCT: {
        cval *c = cval_new(u, seq_of(n->inputs[0]->dtype), NULL, n->n_inputs);
        if (!c) return oom(u);
        SMELT_TRY(set_cval(u, out, c));
        return seq_construct(u, n, c);
    }
    case OP_SEQUENCE_EMPTY: {
        cval *c = cval_new(u, seq_of((smelt_dtype)attr_int(n, "dtype", SMELT_DT_FLOAT32)), NULL, 0);
        if (!c) return oom(u);
        return set_cval(u, out, c);
    }
    case OP_OPTIONAL: {
        gr_value *x = n->n_inputs > 0 ? n->inputs[0] : NULL;
        const gr_attr *t = gr_node_attr(n, "type");
        smelt_dtype inner = x ? x->dtype : t ? (smelt_dtype)t->i : SMELT_DT_UNDEFINED;
        cval *c = cval_new(u, (smelt_dtype)((unsigned)inner | SMELT_DT_OPTIONAL_BIT), NULL, x ? 1 : 0);
        if (!c) return oom(u);
        if (x && !(c->items[0] = cval_of(u, x))) return give_up(u, n, "its input's structure is unknown");
        return set_cval(u, out, c);
    }
    case OP_IDENTITY: {
        cval *c = cval_of(u, n->inputs[0]);
        if (!c) return give_up(u, n, "its input's structure is unknown");
        return take_item(u, n, out, c);
    }
    case OP_SEQUENCE_INSERT: return seq_edit(u, n, true);
    case OP_SEQUENCE_ERASE: return seq_edit(u, n, false);
    case OP_SEQUENCE_AT: return seq_at(u, n);
    case OP_SEQUENCE_LENGTH: return seq_length(u, n);
    case OP_OPTIONAL_HAS_ELEMENT: return optional_has(u, n);
    case OP_OPTIONAL_GET_ELEMENT: return optional_get(u, n);
    case OP_SPLIT_TO_SEQUENCE: return split_to_seq(u, n);
    case OP_CONCAT_FROM_SEQUENCE: return concat_from_seq(u, n);
    case OP_SEQUENCE_MAP: return seq_map(u, n);
    case OP_LOOP: return loop_unroll(u, n);
    case OP_IF: return if_inline(u, n);
    case OP_SCAN:
        if (ctl_attrs_of(n)->scan8) return scan8_unroll(u, n);
        return give_up(u, n, "a Scan over sequence or optional values does not unroll");
    default:
        return give_up(u, n, "compiled code takes sequence and optional values through the "
                             "sequence and optional ops only, not into this one");
    }
}


/* ---- inputs: one per tensor element ---- */

/* The structure of a run's value, its tensors new inputs NAME.K (K counts
 * them in pre-order) appended to list. */
static cval *bind_value(unroll *u, const gr_value *v, const smelt_tensor *t, int *k,
                        smelt_ptrvec *list)
{
    if (!smelt_dtype_is_container(t->dtype)) {
        char name[300];
        snprintf(name, sizeof name, "%s.%d", v->name, (*k)++);
        gr_value *x = gr_value_new(u->g, name);
        if (!x || !smelt_ptrvec_push(list, x)) return NULL;
        x->dtype = t->dtype;
        x->rank = t->rank;
        memcpy(x->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
        x->is_input = true;
        return leaf(u, x);
    }
    int n = (int)t->dims[0];
    cval *c = cval_new(u, t->dtype, NULL, n);
    const smelt_tensor *items = t->data;
    for (int i = 0; c && i < n; i++)
        if (!(c->items[i] = bind_value(u, v, &items[i], k, list))) return NULL;
    return c;
}

static smelt_status bind_inputs(unroll *u, const smelt_tensor *const *actual)
{
    smelt_ptrvec list = {0};
    smelt_status s = SMELT_OK;
    for (int i = 0; s == SMELT_OK && i < u->g->inputs.len; i++) {
        gr_value *v = u->g->inputs.items[i];
        if (!is_container(v) || !actual || !actual[i]) {
            if (!smelt_ptrvec_push(&list, v)) s = oom(u);
            continue;
        }
        int k = 0;
        cval *c = bind_value(u, v, actual[i], &k, &list);
        s = c ? set_cval(u, v, c) : oom(u);
        v->is_input = false;
    }
    if (s == SMELT_OK) {
        smelt_ptrvec_fini(&u->g->inputs);
        u->g->inputs = list;
    } else {
        smelt_ptrvec_fini(&list);
    }
    return s;
}

/* ---- outputs: one per tensor element, and the layout to rebuild them ---- */

static smelt_status layout_push(unroll *u, pass_unroll_layout *l, smelt_dtype dt, int count,
                                int flat)
{
    if (l->n_nodes == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        void *p = smelt_realloc(l->nodes, sizeof *l->nodes * (size_t)l->cap,
                                sizeof *l->nodes * (size_t)cap);
        if (!p) return oom(u);
        l->nodes = p;
        l->cap = cap;
    }
    l->nodes[l->n_nodes++] = (pass_unroll_node){dt, count, flat};
    return SMELT_OK;
}

/* c's tensors as new outputs NAME.K (an Identity each: an element may be an
 * input, a constant or another output), c's shape into l. */
static smelt_status flatten_output(unroll *u, const gr_value *v, const cval *c, int *k,
                                   smelt_ptrvec *outs, pass_unroll_layout *l)
{
    if (c->tensor) {
        SMELT_TRY(layout_push(u, l, c->tensor->dtype, 0, outs->len));
        gr_node *id;
        gr_value *in = c->tensor;
        gr_value *w = make_node(u, OP_IDENTITY, &in, 1, &id);
        if (!w) return oom(u);
        char name[300];
        snprintf(name, sizeof name, "%s.%d", v->name, (*k)++);
        const char *copy = smelt_arena_strdup(&u->g->arena, name);
        if (!copy) return oom(u);
        w->name = copy;
        w->is_output = true;
        SMELT_TRY(finish_node(u, id));
        return smelt_ptrvec_push(outs, w) ? SMELT_OK : oom(u);
    }
    SMELT_TRY(layout_push(u, l, c->dtype, c->n, -1));
    for (int i = 0; i < c->n; i++) SMELT_TRY(flatten_output(u, v, c->items[i], k, outs, l));
    return SMELT_OK;
}

static smelt_status flatten_outputs(unroll *u, pass_unroll_layout *l)
{
    gr_graph *g = u->g;
    smelt_ptrvec outs = {0};
    l->n_outputs = g->outputs.len;
    l->first = smelt_calloc((size_t)g->outputs.len + 1, sizeof *l->first);
    smelt_status s = l->first ? SMELT_OK : oom(u);
    for (int o = 0; s == SMELT_OK && o < g->outputs.len; o++) {
        gr_value *v = g->outputs.items[o];
        l->first[o] = l->n_nodes;
        if (!is_container(v)) {
            s = layout_push(u, l, v->dtype, 0, outs.len);
            if (s == SMELT_OK && !smelt_ptrvec_push(&outs, v)) s = oom(u);
            continue;
        }
        cval *c = cval_of(u, v);
        if (!c) {
            s = give_up(u, v->producer, "an output's structure is unknown");
            break;
        }
        int k = 0;
        s = flatten_output(u, v, c, &k, &outs, l);
        v->is_output = false;
    }
    if (s == SMELT_OK && !u->unresolved) {
        smelt_ptrvec_fini(&g->outputs);
        g->outputs = outs;
    } else {
        smelt_ptrvec_fini(&outs);
    }
    return s;
}

void pass_unroll_layout_fini(pass_unroll_layout *l)
{
    smelt_free(l->first);
    smelt_free(l->nodes);
    memset(l, 0, sizeof *l);
}

/* A Loop whose outputs' shapes change with the iteration (a carried value
 * sliced at the iteration number): unrolled when its trip count is known;
 * and Scan-8, whose batch axis C control flow does not take. */
static bool loop_shapes_vary(const gr_node *n)
{
    if (n->op == OP_SCAN) return ctl_attrs_of(n)->scan8;
    if (n->op != OP_LOOP) return false;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] && gr_value_numel(n->outputs[k]) < 0) return true;
    return false;
}

bool pass_unroll_applies(const gr_graph *g)
{
    for (int i = 0; i < g->values.len; i++)
        if (is_container(g->values.items[i])) return true;
    for (int i = 0; i < g->nodes.len; i++)
        if (loop_shapes_vary(g->nodes.items[i])) return true;
    return false;
}

static smelt_status unroll_nodes(unroll *u)
{
    int n_nodes = u->g->nodes.len; /* nodes made here come after and hold tensors only */
    for (int i = 0; i < n_nodes && !u->unresolved; i++) {
        gr_node *n = u->g->nodes.items[i];
        if (touches_containers(n) || loop_shapes_vary(n)) SMELT_TRY(unroll_node(u, n));
    }
    return SMELT_OK;
}

smelt_status pass_unroll_containers(smelt_ctx *ctx, gr_graph *g, const smelt_tensor *const *actual,
                                    pass_unroll_layout *layout, bool *resolved, char *why,
                                    size_t cap)
{
    memset(layout, 0, sizeof *layout);
    *resolved = false;
    unroll u = {.ctx = ctx, .g = g, .why = why, .cap = cap, .n_of = g->values.len};
    smelt_arena_init(&u.arena);
    u.of = smelt_calloc((size_t)u.n_of + 1, sizeof *u.of);
    smelt_status s = u.of ? gr_graph_toposort(ctx, g) : oom(&u);
    if (s == SMELT_OK) s = bind_inputs(&u, actual);
    if (s == SMELT_OK) s = unroll_nodes(&u);
    if (s == SMELT_OK && !u.unresolved) s = flatten_outputs(&u, layout);
    if (s == SMELT_OK && !u.unresolved) s = pu_finish(ctx, g);
    for (int i = 0; s == SMELT_OK && !u.unresolved && i < g->values.len; i++) {
        const gr_value *v = g->values.items[i];
        if (is_container(v)) give_up(&u, v->producer, "a sequence or optional value is left");
    }
    *resolved = s == SMELT_OK && !u.unresolved;
    if (!*resolved) pass_unroll_layout_fini(layout);
    smelt_free(u.of);
    smelt_arena_fini(&u.arena);
    return s;
}

smelt_status pass_unroll_scan8(smelt_ctx *ctx, gr_graph *g)
{
    bool any = false;
    for (int i = 0; i < g->nodes.len && !any; i++) {
        const gr_node *n = g->nodes.items[i];
        any = n->op == OP_SCAN && ctl_attrs_of(n)->scan8;
    }
    for (int i = 0; any && i < g->values.len; i++)
        if (is_container(g->values.items[i])) return SMELT_OK; /* specialised per run instead */
    if (!any) return SMELT_OK;
    pass_unroll_layout layout;
    bool resolved;
    char why[300];
    SMELT_TRY(pass_unroll_containers(ctx, g, NULL, &layout, &resolved, why, sizeof why));
    pass_unroll_layout_fini(&layout); /* the outputs stay tensors: nothing to rebuild */
    return SMELT_OK;
}
