/* Accesses to buffers laid out at the run's dims (see dense_check.h).
 *
 * An index along a dim with a run-time extent E must lie in [0, E) for every
 * run length.  Interval bounds alone cannot show i < rt0 + 1 for a loop
 * over [0, rt0 + 1) (both sides range over [1, MAX]), so indices are first
 * bounded symbolically: upper(e) replaces each loop variable by its last
 * value (min + extent - 1) and each let by its value, keeping the run-time
 * dims' variables (bound at the function's top) as they are; then
 * E - upper(e) is simplified and must be at least 1 by interval bounds.  A
 * min(a, b) index is below E when either side is.  Lower bounds the same
 * way with first values.  Anything else (a gathered index, a product with
 * a variable) is not proved: the value is then staged instead. */
#include "lower/dense_check.h"

#include <string.h>

#include "tir/bounds.h"
#include "tir/mutate.h"
#include "tir/simplify.h"

#define DC_MAX_DEPTH 64

typedef struct dc_binding {
    const ir_var *var;
    const ir_expr *first, *last; /* symbolic range; NULL: not known */
} dc_binding;

typedef struct dense_walk {
    ir_builder *b;
    const te_graph *te; /* its run-time dims' variables stay symbolic */
    tir_scope scope;
    dc_binding bind[DC_MAX_DEPTH];
    int n_bind;
    const ir_buffer *refused;
} dense_walk;

static const dc_binding *binding(const dense_walk *w, const ir_var *v)
{
    for (int i = w->n_bind - 1; i >= 0; i--)
        if (w->bind[i].var == v) return &w->bind[i];
    return NULL;
}

static ir_expr *bound(dense_walk *w, const ir_expr *e, bool upper, int depth);

static ir_expr *bound_var(dense_walk *w, const ir_expr *e, bool upper, int depth)
{
    const dc_binding *bd = binding(w, e->var);
    if (!bd) return (ir_expr *)e; /* a run-time dim's variable (or unknown: bounds decide) */
    const ir_expr *side = upper ? bd->last : bd->first;
    return side ? bound(w, side, upper, depth + 1) : NULL;
}

/* A symbolic bound of e over the bound variables, or NULL. */
static ir_expr *bound(dense_walk *w, const ir_expr *e, bool upper, int depth)
{
    if (!e || depth > DC_MAX_DEPTH) return NULL;
    ir_builder *b = w->b;
    switch (e->kind) {
    case IR_INT: return (ir_expr *)e;
    case IR_VAR: return bound_var(w, e, upper, depth);
    case IR_ADD: {
        ir_expr *x = bound(w, e->bin.a, upper, depth + 1), *y = bound(w, e->bin.b, upper, depth + 1);
        return x && y ? ir_add(b, x, y) : NULL;
    }
    case IR_SUB: {
        ir_expr *x = bound(w, e->bin.a, upper, depth + 1), *y = bound(w, e->bin.b, !upper, depth + 1);
        return x && y ? ir_sub(b, x, y) : NULL;
    }
    case IR_MUL: { /* by a constant only */
        const ir_expr *c = e->bin.b->kind == IR_INT ? e->bin.b : e->bin.a->kind == IR_INT ? e->bin.a : NULL;
        const ir_expr *x = c == e->bin.b ? e->bin.a : e->bin.b;
        if (!c) return NULL;
        ir_expr *bx = bound(w, x, c->i >= 0 ? upper : !upper, depth + 1);
        return bx ? ir_mul(b, bx, (ir_expr *)c) : NULL;
    }
    case IR_FLOORDIV: {
        if (e->bin.b->kind != IR_INT || e->bin.b->i <= 0) return NULL;
        ir_expr *x = bound(w, e->bin.a, upper, depth + 1);
        return x ? ir_binary(b, IR_FLOORDIV, x, e->bin.b) : NULL;
    }
    case IR_MIN:
    case IR_MAX: {
        ir_expr *x = bound(w, e->bin.a, upper, depth + 1), *y = bound(w, e->bin.b, upper, depth + 1);
        return x && y ? ir_binary(b, e->kind, x, y) : NULL;
    }
    default: return NULL;
    }
}

/* e < extent for every run: some side of a min below it, or
 * extent - upper(e) >= 1 once simplified. */
static bool below(dense_walk *w, const ir_expr *e, ir_expr *extent)
{
    if (e->kind == IR_MIN) return below(w, e->bin.a, extent) || below(w, e->bin.b, extent);
    if (e->kind == IR_MAX) return below(w, e->bin.a, extent) && below(w, e->bin.b, extent);
    ir_expr *u = bound(w, e, true, 0);
    if (!u) return false;
    if (u->kind == IR_MIN || u->kind == IR_MAX) return below(w, u, extent);
    ir_expr *gap = tir_simplify_expr(w->b, ir_sub(w->b, extent, u), &w->scope);
    tir_interval iv = gap ? tir_bounds(gap, &w->scope) : tir_interval_everything();
    return !iv.lo_inf && iv.lo >= 1;
}

static bool not_negative(dense_walk *w, const ir_expr *e)
{
    ir_expr *l = bound(w, e, false, 0);
    l = l ? tir_simplify_expr(w->b, l, &w->scope) : NULL;
    tir_interval iv = l ? tir_bounds(l, &w->scope) : tir_interval_everything();
    return !iv.lo_inf && iv.lo >= 0;
}

static void check_access(dense_walk *w, const ir_buffer *buf, int n, ir_expr *const *idx)
{
    if (w->refused || !ir_buffer_is_dense_rt(buf)) return;
    if (n != buf->rank) { /* already flat: nothing to prove it by */
        w->refused = buf;
        return;
    }
    for (int d = 0; d < n; d++)
        if (buf->rt_extent[d] && !(not_negative(w, idx[d]) && below(w, idx[d], buf->rt_extent[d]))) {
            w->refused = buf;
            return;
        }
}

static void walk_expr(void *ctx, const ir_expr *e)
{
    dense_walk *w = ctx;
    if (!e || w->refused) return;
    if (e->kind == IR_LOAD) check_access(w, e->load.buf, e->load.n, e->load.idx);
    tir_expr_visit_children(e, walk_expr, w);
}

static void walk_stmt(void *ctx, const ir_stmt *s);

/* Walk s's body with v bound to [first, last] (NULL: kept symbolic).  Past
 * DC_MAX_DEPTH nested bindings v stays unbound: an index using it is then
 * bounded by intervals alone, which refuses rather than guesses. */
static void walk_bound(dense_walk *w, const ir_stmt *s, const ir_var *v, const ir_expr *first,
                       const ir_expr *last)
{
    int mark = tir_scope_mark(&w->scope);
    if (s->kind == IR_STMT_FOR) tir_scope_push_for(&w->scope, s);
    else tir_scope_push(&w->scope, s->let.var, tir_bounds(s->let.value, &w->scope));
    bool bound_here = w->n_bind < DC_MAX_DEPTH && (first || last);
    if (bound_here) w->bind[w->n_bind++] = (dc_binding){v, first, last};
    tir_stmt_visit_children(s, walk_expr, walk_stmt, w);
    if (bound_here) w->n_bind--;
    tir_scope_pop_to(&w->scope, mark);
}

static bool is_rt_var(const dense_walk *w, const ir_var *v)
{
    for (int k = 0; w->te && k < w->te->n_rt; k++)
        if (w->te->rt_var[k] == v) return true;
    return false;
}

static void walk_stmt(void *ctx, const ir_stmt *s)
{
    dense_walk *w = ctx;
    if (!s || w->refused) return;
    switch (s->kind) {
    case IR_STMT_FOR: {
        ir_expr *last = ir_sub(w->b, ir_add(w->b, s->for_.min, s->for_.extent), ir_int(w->b, 1));
        walk_bound(w, s, s->for_.var, s->for_.min, last);
        return;
    }
    case IR_STMT_LET:
        if (is_rt_var(w, s->let.var)) /* kept symbolic, ranged by its clamp to [1, max] */
            walk_bound(w, s, s->let.var, NULL, NULL);
        else
            walk_bound(w, s, s->let.var, s->let.value, s->let.value);
        return;
    case IR_STMT_STORE: check_access(w, s->store.buf, s->store.n, s->store.idx); break;
    case IR_STMT_CALL:
        /* extern kernels over a run-time dim take its extent and the
         * operands' strides as arguments (FusedAttention, te_extern.rt_ok);
         * a tensorized micro-kernel does not */
        for (int i = 0; i < s->call.n; i++)
            if (s->call.args[i].buf && ir_buffer_is_dense_rt(s->call.args[i].buf) &&
                !lower_dense_kernel_ok(s->call.kernel))
                w->refused = s->call.args[i].buf;
        break;
    default: break;
    }
    tir_stmt_visit_children(s, walk_expr, walk_stmt, w);
}

bool lower_dense_kernel_ok(const char *kernel)
{
    return kernel && strcmp(kernel, "smelt.attention_f32") == 0;
}

const ir_buffer *lower_dense_refused(ir_builder *b, const te_graph *te, const ir_stmt *s)
{
    dense_walk w = {.b = b, .te = te};
    tir_scope_init(&w.scope, NULL);
    walk_stmt(&w, s);
    tir_scope_fini(&w.scope);
    return w.refused;
}
