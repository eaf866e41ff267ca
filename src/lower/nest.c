/* Schedule -> loop nests.
 *
 * For each stage computed at root, in dependency order, build its loops in
 * leaf order.  Root axis values are rebuilt from the leaf variables through
 * the split/fuse relations; splits that do not divide their extent add a
 * guard.  A reduction stores its identity in an init nest placed just
 * outside its first reduction loop, then updates.  A stage computed at a
 * consumer's loop is built inside that loop over the region the consumer
 * reads there (bound inference), into a local buffer of the region's size.
 * At a GPU thread loop the region may be strided (a thread's register tile
 * rows ty, ty + 16, ...): the local buffer then holds only those elements.
 * A cache_read tile is the region of its buffer the stage reads inside the
 * loop with the block's threads swept; a threadIdx.x loop copies it into a
 * shared-memory buffer at the top of each iteration of the loop.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lower/lower.h"
#include "lower/tensorize.h"
#include "tir/mutate.h"
#include "tir/scalar.h"

typedef struct region {
    ir_expr *min[SMELT_MAX_RANK]; /* in the consumer's outer loop variables */
    int64_t extent[SMELT_MAX_RANK];
    int64_t stride[SMELT_MAX_RANK]; /* element k of the region is min + k * stride */
} region;

#define NEST_MAX_THREAD_LOOPS 8

typedef struct nest_ctx {
    smelt_ctx *ctx;
    const sch_state *st;
    ir_builder *b;
    /* per stage, while its consumer's loops are being built */
    ir_buffer **local;    /* storage of attached stages (region-sized), or a
                           * cache_read tile (shared memory) */
    region *regions;      /* their regions */
    bool *done;           /* root stages already emitted */
    /* the threadIdx.x loops of consumers around the stage being built */
    int n_threads;
    ir_var *thread_var[NEST_MAX_THREAD_LOOPS];
    int64_t thread_ext[NEST_MAX_THREAD_LOOPS];
} nest_ctx;

/* Values of one stage's iters while building its nest.  dext: the extent
 * at run time of an iter over a run-time dim (te_set_rt_dims), NULL when
 * static; extent stays the static bound.  A data loop over a split
 * run-time dim runs whole tiles (rounded up to the split factor, within the
 * bound: buffers are laid out at the bound, and rows past the run's length
 * are padding no result reads), so its body keeps no run-time guard; a
 * reduction or a check stage stops exactly at the run's length. */
typedef struct iter_vals {
    int64_t extent[SCH_MAX_ITERS];
    ir_expr *dext[SCH_MAX_ITERS];
    ir_var *var[SCH_MAX_ITERS];     /* leaves */
    ir_expr *value[SCH_MAX_ITERS];  /* every iter, from the leaves */
} iter_vals;

static smelt_status oom(nest_ctx *nc) { return smelt_errf(nc->ctx, SMELT_ERR_NOMEM, "out of memory"); }

/* ---- iteration values ---- */

static ir_expr *ext_expr(ir_builder *b, const iter_vals *iv, int i)
{
    return iv->dext[i] ? iv->dext[i] : ir_int(b, iv->extent[i]);
}

/* Extents top-down from the root extents (which a region may shrink; a
 * region over the whole of a run-time dim keeps it run-time). */
static void compute_extents(ir_builder *b, const sch_stage *sg, const int64_t *root_ext,
                            iter_vals *iv)
{
    for (int i = 0; i < sg->n_iters; i++) {
        const sch_iter *it = &sg->iters[i];
        iv->dext[i] = NULL;
        switch (it->rel) {
        case SCH_REL_ROOT: {
            int d = i < sg->n_axes ? i : -1;
            iv->extent[i] = d >= 0 && root_ext ? root_ext[d] : it->extent;
            if (it->dyn && iv->extent[i] == it->extent) iv->dext[i] = it->dyn;
            break;
        }
        case SCH_REL_SPLIT_OUTER:
            iv->extent[i] = (iv->extent[it->parent] + it->factor - 1) / it->factor;
            if (iv->dext[it->parent])
                iv->dext[i] = ir_binary(b, IR_FLOORDIV,
                                        ir_add(b, iv->dext[it->parent], ir_int(b, it->factor - 1)),
                                        ir_int(b, it->factor));
            break;
        case SCH_REL_SPLIT_INNER:
            iv->extent[i] = it->factor < iv->extent[it->parent] ? it->factor : iv->extent[it->parent];
            if (it->factor >= iv->extent[it->parent]) iv->dext[i] = iv->dext[it->parent];
            break;
        case SCH_REL_FUSED:
            iv->extent[i] = iv->extent[it->fuse_outer] * iv->extent[it->fuse_inner];
            if (iv->dext[it->fuse_outer] || iv->dext[it->fuse_inner])
                iv->dext[i] = ir_mul(b, ext_expr(b, iv, it->fuse_outer), ext_expr(b, iv, it->fuse_inner));
            break;
        }
    }
}

static ir_expr *iter_value(nest_ctx *nc, const sch_stage *sg, iter_vals *iv, int i)
{
    if (iv->value[i]) return iv->value[i];
    const sch_iter *it = &sg->iters[i];
    ir_builder *b = nc->b;
    ir_expr *v = NULL;
    if (iv->var[i]) {
        v = ir_var_ref(b, iv->var[i]);
    } else if (it->split_outer >= 0) {
        ir_expr *o = iter_value(nc, sg, iv, it->split_outer);
        ir_expr *in = iter_value(nc, sg, iv, it->split_inner);
        v = ir_add(b, ir_mul(b, o, ir_int(b, sg->iters[it->split_outer].factor)), in);
    } else if (it->fused_into >= 0) {
        int f = it->fused_into;
        ir_expr *fv = iter_value(nc, sg, iv, f);
        ir_expr *inner_ext = ext_expr(b, iv, sg->iters[f].fuse_inner);
        v = ir_binary(b, sg->iters[f].fuse_outer == i ? IR_FLOORDIV : IR_FLOORMOD, fv, inner_ext);
    }
    iv->value[i] = v;
    return v;
}

/* The bound a split iter i's value must stay below, or NULL when its
 * split cannot overshoot: the static extent, or for a run-time one in a
 * reduction or a check stage (exact) the run's extent. */
static ir_expr *split_bound(nest_ctx *nc, const sch_stage *sg, iter_vals *iv, int i)
{
    const sch_iter *it = &sg->iters[i];
    /* a fused iter whose inner part is run-time divides by it: past the
     * run's extent its outer part would leave the buffer */
    bool exact = it->reduce || sg->check ||
                 (it->rel == SCH_REL_FUSED && iv->dext[it->fuse_inner] != NULL);
    if (exact && iv->dext[i] && iv->dext[it->split_inner] != iv->dext[i]) return iv->dext[i];
    int64_t f = sg->iters[it->split_outer].factor;
    if (iv->extent[it->split_outer] * f == iv->extent[i]) return NULL;
    return ir_int(nc->b, iv->extent[i]);
}

/* Guards for splits that overshoot: parent < its extent. */
static ir_expr *split_guards(nest_ctx *nc, const sch_stage *sg, iter_vals *iv, bool reduce)
{
    ir_builder *b = nc->b;
    ir_expr *cond = NULL;
    for (int i = 0; i < sg->n_iters; i++) {
        const sch_iter *it = &sg->iters[i];
        if (it->split_outer < 0 || it->reduce != reduce) continue;
        ir_expr *bound = split_bound(nc, sg, iv, i);
        if (!bound) continue;
        ir_expr *c = ir_binary(b, IR_LT, iter_value(nc, sg, iv, i), bound);
        cond = cond ? ir_binary(b, IR_AND, cond, c) : c;
    }
    return cond;
}

/* A loop over leaf it: a run-time extent is never vectorised or unrolled. */
static ir_stmt *leaf_loop(ir_builder *b, const sch_stage *sg, iter_vals *iv, int it,
                          ir_for_kind kind, ir_var *var, ir_stmt *body)
{
    if (iv->dext[it] && (kind == IR_FOR_VECTORIZED || kind == IR_FOR_UNROLLED)) kind = IR_FOR_SERIAL;
    (void)sg;
    return ir_for(b, var, ir_int(b, 0), ext_expr(b, iv, it), kind, body);
}

/* ---- an rfactor mask over a run-time extent ---- */

typedef struct mask_sub {
    ir_builder *b;
    const ir_expr *mask;
} mask_sub;

static ir_expr *drop_mask_expr(void *ctx, ir_expr *e)
{
    mask_sub *m = ctx;
    if (e == m->mask) return ir_const_int(m->b, SMELT_DT_BOOL, 1);
    return tir_expr_map_children(m->b, e, drop_mask_expr, ctx);
}

/* The leaf position of r.o of an rfactor stage whose lanes are masked past
 * a run-time extent (sch_stage.rt_mask), or -1. */
static int masked_leaf(const sch_stage *sg, const iter_vals *iv)
{
    for (int k = 0; sg->rt_mask && k < sg->n_leaves; k++) {
        const sch_iter *it = &sg->iters[sg->leaves[k]];
        if (it->rel == SCH_REL_ROOT && it->reduce && it->dyn == sg->rt_mask_outer &&
            iv->dext[sg->leaves[k]] == it->dyn)
            return k;
    }
    return -1;
}

/* r.o over whole chunks (r.o < extent / F: every lane inside, the mask
 * dropped), then the last partial chunk with it: the main loop's lanes
 * load without a per-lane test. */
static ir_stmt *masked_loops(nest_ctx *nc, const sch_stage *sg, iter_vals *iv, int it,
                             ir_stmt *masked, ir_stmt *whole)
{
    ir_builder *b = nc->b;
    ir_expr *full = ir_binary(b, IR_FLOORDIV, sg->rt_mask_extent, ir_int(b, sg->rt_mask_factor));
    ir_for_kind kind = sg->iters[it].annot == IR_FOR_PARALLEL ? IR_FOR_PARALLEL : IR_FOR_SERIAL;
    ir_stmt *main_loop = ir_for(b, iv->var[it], ir_int(b, 0), full, kind, whole);
    ir_stmt *tail = ir_for(b, iv->var[it], full, ir_sub(b, iv->dext[it], full), kind, masked);
    return ir_seq2(b, main_loop, tail);
}

/* ---- bodies ---- */

/* Rewrite loads of attached stages to their local buffers, offset by the
 * region minimum (and divided by its stride). */
static ir_expr *remap_loads(nest_ctx *nc, ir_expr *e);
static ir_expr *floordiv_linear(ir_builder *b, ir_expr *x, ir_expr *d);

static ir_expr *remap_children(nest_ctx *nc, ir_expr *e)
{
    ir_builder *b = nc->b;
    switch (e->kind) {
    case IR_INT:
    case IR_FLOAT:
    case IR_VAR: return e;
    case IR_NOT:
    case IR_CAST: {
        ir_expr *a = remap_loads(nc, e->bin.a);
        if (a == e->bin.a) return e;
        return e->kind == IR_NOT ? ir_not(b, a) : ir_cast(b, e->dtype, a);
    }
    case IR_SELECT: {
        ir_expr *c = remap_loads(nc, e->select.cond), *t = remap_loads(nc, e->select.t),
                *f = remap_loads(nc, e->select.f);
        if (c == e->select.cond && t == e->select.t && f == e->select.f) return e;
        return ir_select(b, c, t, f);
    }
    case IR_CALL: {
        ir_expr *args[3];
        bool changed = false;
        for (int i = 0; i < e->call.n; i++) {
            args[i] = remap_loads(nc, e->call.args[i]);
            changed |= args[i] != e->call.args[i];
        }
        return changed ? ir_call(b, e->call.op, e->dtype, e->call.n, args) : e;
    }
    case IR_REDUCE: {
        ir_expr *src = remap_loads(nc, e->reduce.src);
        return src == e->reduce.src ? e : ir_reduce(b, e->reduce.op, src, e->reduce.n_axes, e->reduce.axes);
    }
    default: {
        ir_expr *a = remap_loads(nc, e->bin.a), *c = remap_loads(nc, e->bin.b);
        if (a == e->bin.a && c == e->bin.b) return e;
        ir_expr *r = ir_binary(b, e->kind, a, c);
        if (r) r->dtype = e->dtype;
        return r;
    }
    }
}

static int stage_of_buffer(const sch_state *st, const ir_buffer *buf)
{
    for (int i = 0; i < st->n_stages; i++)
        if (st->stages[i].buf == buf) return i;
    return -1;
}

/* Whether every term of the AND-tree c is idx[d] >= 0 or idx[d] < shape[d]
 * for an index of load ld (a padding test). */
static bool bounds_test_of(const ir_expr *c, const ir_expr *ld)
{
    if (c->kind == IR_AND) return bounds_test_of(c->bin.a, ld) && bounds_test_of(c->bin.b, ld);
    if (c->kind != IR_GE && c->kind != IR_LT) return false;
    for (int d = 0; d < ld->load.n; d++) {
        if (!ir_expr_equal(c->bin.a, ld->load.idx[d])) continue;
        if (c->kind == IR_GE && ir_is_int(c->bin.b, 0)) return true;
        if (c->kind == IR_LT && ir_is_int(c->bin.b, ld->load.buf->shape[d])) return true;
    }
    return false;
}

static bool is_zero(const ir_expr *e)
{
    return (e->kind == IR_FLOAT && e->f == 0) || (e->kind == IR_INT && e->i == 0);
}

static ir_expr *remap_loads(nest_ctx *nc, ir_expr *e)
{
    if (!e) return NULL;
    /* select(inside X, X[i], 0) where X is staged: the tile reads 0 outside
     * X already (tile_load), so the test goes (a convolution's padding) */
    if (e->kind == IR_SELECT && e->select.t->kind == IR_LOAD && is_zero(e->select.f) &&
        bounds_test_of(e->select.cond, e->select.t)) {
        int s = stage_of_buffer(nc->st, e->select.t->load.buf);
        if (s >= 0 && nc->local[s] && nc->local[s]->scope == IR_SCOPE_SHARED)
            return remap_loads(nc, e->select.t);
    }
    if (e->kind != IR_LOAD) return remap_children(nc, e);
    ir_expr *idx[SMELT_MAX_RANK];
    bool changed = false;
    for (int i = 0; i < e->load.n; i++) {
        idx[i] = remap_loads(nc, e->load.idx[i]);
        changed |= idx[i] != e->load.idx[i];
    }
    int s = stage_of_buffer(nc->st, e->load.buf);
    if (s >= 0 && nc->local[s]) {
        const region *rg = &nc->regions[s];
        for (int i = 0; i < e->load.n; i++) {
            idx[i] = ir_sub(nc->b, idx[i], rg->min[i]);
            if (rg->stride[i] != 1 && idx[i]) idx[i] = floordiv_linear(nc->b, idx[i], ir_int(nc->b, rg->stride[i]));
        }
        return ir_load(nc->b, nc->local[s], e->load.n, idx);
    }
    return changed ? ir_load(nc->b, e->load.buf, e->load.n, idx) : e;
}

/* The stage's body with root vars replaced by their values. */
static ir_expr *stage_body(nest_ctx *nc, const sch_stage *sg, iter_vals *iv,
                           const region *own)
{
    ir_subst map[SMELT_MAX_RANK * 2];
    int n = 0;
    for (int d = 0; d < sg->n_axes; d++) {
        ir_expr *v = iter_value(nc, sg, iv, d);
        if (own && own->stride[d] != 1) v = ir_mul(nc->b, v, ir_int(nc->b, own->stride[d]));
        if (own) v = ir_add(nc->b, own->min[d], v);
        map[n++] = (ir_subst){sg->axes[d].var, v};
    }
    for (int r = 0; r < sg->n_reduce; r++)
        map[n++] = (ir_subst){sg->reduce_axes[r].var, iter_value(nc, sg, iv, sg->n_axes + r)};
    ir_expr *body = sg->body->kind == IR_REDUCE ? sg->body->reduce.src : sg->body;
    return remap_loads(nc, ir_expr_substitute(nc->b, body, map, n));
}

static ir_expr *combine(ir_builder *b, ir_reduce_op op, ir_expr *acc, ir_expr *v)
{
    switch (op) {
    case IR_REDUCE_SUM: return ir_add(b, acc, v);
    case IR_REDUCE_PROD: return ir_mul(b, acc, v);
    case IR_REDUCE_MAX: return ir_binary(b, IR_MAX, acc, v);
    case IR_REDUCE_MIN: return ir_binary(b, IR_MIN, acc, v);
    }
    return NULL;
}

static ir_buffer *storage_of(nest_ctx *nc, int si)
{
    return nc->local[si] ? nc->local[si] : nc->st->stages[si].buf;
}

static void store_index(nest_ctx *nc, const sch_stage *sg, iter_vals *iv, ir_expr **idx)
{
    for (int d = 0; d < sg->n_axes; d++) idx[d] = iter_value(nc, sg, iv, d);
}

/* ---- bound inference ---- */

typedef struct bound {
    ir_expr *min, *max; /* NULL: unbounded */
} bound;

/* Range of e when `inner` vars sweep [0, extent) and other vars are fixed. */
static ir_expr *floordiv_linear(ir_builder *b, ir_expr *x, ir_expr *d);

static bound expr_bound(nest_ctx *nc, ir_expr *e, ir_var *const *inner, const int64_t *ext,
                        int n_inner)
{
    ir_builder *b = nc->b;
    bound r = {NULL, NULL};
    switch (e->kind) {
    case IR_INT: return (bound){e, e};
    case IR_VAR:
        for (int i = 0; i < n_inner; i++)
            if (inner[i] == e->var) return (bound){ir_int(b, 0), ir_int(b, ext[i] - 1)};
        return (bound){e, e};
    case IR_ADD:
    case IR_SUB: {
        bound x = expr_bound(nc, e->bin.a, inner, ext, n_inner);
        bound y = expr_bound(nc, e->bin.b, inner, ext, n_inner);
        if (!x.min || !y.min) return r;
        if (e->kind == IR_ADD) return (bound){ir_add(b, x.min, y.min), ir_add(b, x.max, y.max)};
        return (bound){ir_sub(b, x.min, y.max), ir_sub(b, x.max, y.min)};
    }
    case IR_MUL: {
        ir_expr *k = e->bin.b->kind == IR_INT ? e->bin.b : e->bin.a->kind == IR_INT ? e->bin.a : NULL;
        ir_expr *x = k == e->bin.b ? e->bin.a : e->bin.b;
        if (!k) {
            bool dep = false;
            for (int i = 0; i < n_inner; i++) dep |= ir_expr_uses_var(e, inner[i]);
            return dep ? r : (bound){e, e};
        }
        bound xb = expr_bound(nc, x, inner, ext, n_inner);
        if (!xb.min) return r;
        if (k->i >= 0) return (bound){ir_mul(b, xb.min, k), ir_mul(b, xb.max, k)};
        return (bound){ir_mul(b, xb.max, k), ir_mul(b, xb.min, k)};
    }
    case IR_FLOORDIV:
        if (e->bin.b->kind == IR_INT && e->bin.b->i > 0) {
            bound xb = expr_bound(nc, e->bin.a, inner, ext, n_inner);
            if (!xb.min) return r;
            return (bound){floordiv_linear(b, xb.min, e->bin.b), floordiv_linear(b, xb.max, e->bin.b)};
        }
        break;
    case IR_FLOORMOD:
        if (e->bin.b->kind == IR_INT && e->bin.b->i > 0) {
            bool dep = false;
            for (int i = 0; i < n_inner; i++) dep |= ir_expr_uses_var(e, inner[i]);
            if (!dep) return (bound){e, e};
            return (bound){ir_int(b, 0), ir_int(b, e->bin.b->i - 1)};
        }
        break;
    case IR_MIN:
    case IR_MAX: {
        bound x = expr_bound(nc, e->bin.a, inner, ext, n_inner);
        bound y = expr_bound(nc, e->bin.b, inner, ext, n_inner);
        if (!x.min || !y.min) return r;
        return (bound){ir_binary(b, e->kind, x.min, y.min), ir_binary(b, e->kind, x.max, y.max)};
    }
    default: break;
    }
    bool dep = false;
    for (int i = 0; i < n_inner; i++) dep |= ir_expr_uses_var(e, inner[i]);
    return dep ? r : (bound){e, e};
}

/* Linear form: sum coef*atom + constant; atoms are vars or opaque subterms. */
typedef struct lin {
    int n;
    const ir_expr *atom[32];
    int64_t coef[32];
    int64_t c;
    bool ok;
} lin;

static void lin_add_atom(lin *l, const ir_expr *a, int64_t k)
{
    for (int i = 0; i < l->n; i++)
        if (ir_expr_equal(l->atom[i], a)) {
            l->coef[i] += k;
            return;
        }
    if (l->n == 32) {
        l->ok = false;
        return;
    }
    l->atom[l->n] = a;
    l->coef[l->n++] = k;
}

static void lin_collect(lin *l, const ir_expr *e, int64_t k)
{
    if (!e) l->ok = false; /* a failed builder's result */
    if (!l->ok) return;
    if (e->kind == IR_INT) {
        l->c += k * e->i;
    } else if (e->kind == IR_ADD || e->kind == IR_SUB) {
        lin_collect(l, e->bin.a, k);
        lin_collect(l, e->bin.b, e->kind == IR_ADD ? k : -k);
    } else if (e->kind == IR_MUL && e->bin.b->kind == IR_INT) {
        lin_collect(l, e->bin.a, k * e->bin.b->i);
    } else if (e->kind == IR_MUL && e->bin.a->kind == IR_INT) {
        lin_collect(l, e->bin.b, k * e->bin.a->i);
    } else {
        lin_add_atom(l, e, k);
    }
}

/* floordiv(x, d) for a constant d > 0; when every term of x but the
 * constant is a multiple of d (x = d*q + c), q + floordiv(c, d), so that
 * regions read through a split's tile index (oh.o*4 + oh.i) / 4 keep a
 * constant extent (Winograd's output transform). */
static ir_expr *floordiv_linear(ir_builder *b, ir_expr *x, ir_expr *d)
{
    lin l = {.ok = true};
    lin_collect(&l, x, 1);
    int64_t k = d->i;
    bool ok = l.ok;
    for (int i = 0; ok && i < l.n; i++) ok = l.coef[i] % k == 0;
    if (!ok) return ir_binary(b, IR_FLOORDIV, x, d);
    ir_expr *r = ir_int(b, tir_floordiv_i64(l.c, k));
    for (int i = 0; i < l.n; i++)
        if (l.coef[i] != 0)
            r = ir_add(b, r, ir_mul(b, (ir_expr *)l.atom[i], ir_int(b, l.coef[i] / k)));
    return r;
}

/* max - min as a constant, if the two differ by one. */
static bool const_difference(const ir_expr *max, const ir_expr *min, int64_t *out)
{
    lin l = {.ok = true};
    lin_collect(&l, max, 1);
    lin_collect(&l, min, -1);
    if (!l.ok) return false;
    for (int i = 0; i < l.n; i++)
        if (l.coef[i] != 0) return false;
    *out = l.c;
    return true;
}

/* Walk a body for loads of `buf`, merging each index's bound into rg. */
static bool collect_region(nest_ctx *nc, const ir_expr *e, const ir_buffer *buf, ir_var *const *inner,
                           const int64_t *ext, int n_inner, bound *acc, bool *any)
{
    if (!e) return true;
    switch (e->kind) {
    case IR_INT:
    case IR_FLOAT:
    case IR_VAR: return true;
    case IR_NOT:
    case IR_CAST: return collect_region(nc, e->bin.a, buf, inner, ext, n_inner, acc, any);
    case IR_SELECT:
        return collect_region(nc, e->select.cond, buf, inner, ext, n_inner, acc, any) &&
               collect_region(nc, e->select.t, buf, inner, ext, n_inner, acc, any) &&
               collect_region(nc, e->select.f, buf, inner, ext, n_inner, acc, any);
    case IR_CALL:
        for (int i = 0; i < e->call.n; i++)
            if (!collect_region(nc, e->call.args[i], buf, inner, ext, n_inner, acc, any)) return false;
        return true;
    case IR_REDUCE: return collect_region(nc, e->reduce.src, buf, inner, ext, n_inner, acc, any);
    case IR_LOAD:
        for (int i = 0; i < e->load.n; i++)
            if (!collect_region(nc, e->load.idx[i], buf, inner, ext, n_inner, acc, any)) return false;
        if (e->load.buf != buf) return true;
        for (int d = 0; d < e->load.n; d++) {
            bound bd = expr_bound(nc, e->load.idx[d], inner, ext, n_inner);
            if (!bd.min) return false;
            if (!*any) {
                acc[d] = bd;
            } else {
                int64_t diff;
                /* keep regions exact when two loads agree; else take min/max */
                if (!(const_difference(acc[d].min, bd.min, &diff) && diff == 0))
                    acc[d].min = ir_binary(nc->b, IR_MIN, acc[d].min, bd.min);
                if (!(const_difference(acc[d].max, bd.max, &diff) && diff == 0))
                    acc[d].max = ir_binary(nc->b, IR_MAX, acc[d].max, bd.max);
            }
            if (!acc[d].min || !acc[d].max) return false;
        }
        *any = true;
        return true;
    default:
        return collect_region(nc, e->bin.a, buf, inner, ext, n_inner, acc, any) &&
               collect_region(nc, e->bin.b, buf, inner, ext, n_inner, acc, any);
    }
}

/* ---- strided regions (a GPU thread's register tile) ---- */

typedef struct stride_acc {
    nest_ctx *nc;
    const ir_buffer *buf;
    int dim;
    ir_var *const *inner;
    const int64_t *ext;
    int n_inner;
    bool any, ok;
    ir_expr *min;   /* the index with the inner variable at 0 */
    int var;        /* which inner variable */
    int64_t stride; /* its coefficient */
} stride_acc;

/* Index x as min + stride * v for one inner variable v (its only use of
 * inner variables), or false. */
static bool strided_form(stride_acc *a, ir_expr *x, ir_expr **min, int *var, int64_t *stride)
{
    lin l = {.ok = true};
    lin_collect(&l, x, 1);
    if (!l.ok) return false;
    *var = -1;
    *stride = 0;
    ir_builder *b = a->nc->b;
    ir_expr *rest = ir_int(b, l.c);
    for (int i = 0; i < l.n; i++) {
        if (l.coef[i] == 0) continue;
        int which = -1;
        for (int k = 0; k < a->n_inner; k++)
            if (l.atom[i]->kind == IR_VAR && l.atom[i]->var == a->inner[k]) which = k;
        if (which >= 0) {
            if (*var >= 0) return false; /* two inner variables */
            *var = which;
            *stride = l.coef[i];
            continue;
        }
        for (int k = 0; k < a->n_inner; k++)
            if (ir_expr_uses_var(l.atom[i], a->inner[k])) return false;
        rest = ir_add(b, rest, ir_mul(b, (ir_expr *)l.atom[i], ir_int(b, l.coef[i])));
    }
    *min = rest;
    return *var >= 0 && *stride > 1;
}

static void stride_visit(void *ctx, const ir_expr *e)
{
    stride_acc *a = ctx;
    if (!a->ok || !e) return;
    if (e->kind == IR_LOAD && e->load.buf == a->buf) {
        ir_expr *mn;
        int var;
        int64_t st;
        int64_t diff;
        if (!strided_form(a, e->load.idx[a->dim], &mn, &var, &st)) {
            a->ok = false;
            return;
        }
        if (!a->any) {
            a->any = true;
            a->min = mn;
            a->var = var;
            a->stride = st;
        } else if (var != a->var || st != a->stride || !const_difference(mn, a->min, &diff) || diff) {
            a->ok = false;
        }
    }
    tir_expr_visit_children(e, stride_visit, ctx);
}

/* Region of buffer buf (of shape `shape`) that body reads while the inner
 * variables sweep their ranges; strided dims allowed when `strided`.  A
 * tile (`tile`) keeps its box even where it passes the buffer's edges (its
 * copy reads zeros there) and returns false when a dim has no constant
 * extent; other regions fall back to the whole dim then. */
static bool region_of(nest_ctx *nc, ir_expr *body, const ir_buffer *buf, const int64_t *shape,
                      int rank, ir_var *const *inner, const int64_t *ext, int n_inner, bool strided,
                      bool tile, region *out)
{
    bound acc[SMELT_MAX_RANK];
    bool any = false, exact = true;
    bool ok = collect_region(nc, body, buf, inner, ext, n_inner, acc, &any);
    for (int d = 0; d < rank; d++) {
        int64_t full = shape[d], diff;
        out->stride[d] = 1;
        bool known = ok && any && const_difference(acc[d].max, acc[d].min, &diff);
        exact &= known;
        if (known && (diff + 1 < full || tile)) {
            out->min[d] = acc[d].min;
            out->extent[d] = diff + 1;
        } else {
            out->min[d] = ir_int(nc->b, 0);
            out->extent[d] = full;
        }
        if (!strided || !ok || !any) continue;
        stride_acc sa = {nc, buf, d, inner, ext, n_inner, false, true, NULL, -1, 0};
        stride_visit(&sa, body);
        if (!sa.ok || !sa.any) continue;
        int64_t count = ext[sa.var];
        if (count >= out->extent[d]) continue;
        out->min[d] = sa.min;
        out->extent[d] = count;
        out->stride[d] = sa.stride;
    }
    return exact;
}

/* Region of producer p read by consumer c inside its leaf at position pos
 * (strided when that leaf is a GPU thread loop: each thread's accumulators
 * hold exactly its own outputs). */
static void infer_region(nest_ctx *nc, const sch_stage *c, iter_vals *civ, const region *cown,
                         int pos, const sch_stage *p, region *out)
{
    ir_var *inner[SCH_MAX_ITERS];
    int64_t ext[SCH_MAX_ITERS];
    int n_inner = 0;
    for (int k = pos + 1; k < c->n_leaves; k++) {
        inner[n_inner] = civ->var[c->leaves[k]];
        ext[n_inner++] = civ->extent[c->leaves[k]];
    }
    ir_expr *body = stage_body(nc, c, civ, cown);
    bool strided = c->iters[c->leaves[pos]].annot == IR_FOR_GPU_THREAD;
    region_of(nc, body, storage_of(nc, (int)(p - nc->st->stages)), p->buf->shape, p->n_axes, inner,
              ext, n_inner, strided, false, out);
}

/* ---- nests ---- */

static smelt_status build_stage(nest_ctx *nc, int si, const region *own, ir_stmt **out);

/* Producers attached at leaf position pos of consumer ci: infer each one's
 * region, give it a local buffer (so the consumer's loads are remapped), and
 * build its nest.  Returns the nests and buffers to wrap around the loop body. */
typedef struct attached_set {
    int n;
    ir_stmt *nest[8];
    ir_buffer *buf[8];
} attached_set;

static smelt_status prepare_attached(nest_ctx *nc, int ci, iter_vals *civ, const region *cown,
                                     int pos, attached_set *out)
{
    const sch_state *st = nc->st;
    const sch_stage *c = &st->stages[ci];
    int iter = c->leaves[pos];
    out->n = 0;
    for (int pi = 0; pi < st->n_stages; pi++) {
        const sch_stage *p = &st->stages[pi];
        if (p->attach_stage != ci || p->attach_iter != iter || p->inlined) continue;
        if (out->n == 8)
            return smelt_errf(nc->ctx, SMELT_ERR_ARG, "more than 8 stages computed at one loop");
        region rg;
        infer_region(nc, c, civ, cown, pos, p, &rg);
        char name[256];
        snprintf(name, sizeof name, "%s.at", p->buf->name);
        ir_buffer *local = ir_buffer_new(nc->b, name, p->buf->dtype, p->buf->rank, rg.extent, IR_BUF_TEMP);
        if (!local) return oom(nc);
        nc->local[pi] = local;
        nc->regions[pi] = rg;
        /* the consumer's thread loops around the producer (cache_read sweeps them) */
        int saved = nc->n_threads;
        for (int k = 0; k <= pos; k++) {
            int it = c->leaves[k];
            if (c->iters[it].annot != IR_FOR_GPU_THREAD) continue;
            if (nc->n_threads == NEST_MAX_THREAD_LOOPS)
                return smelt_errf(nc->ctx, SMELT_ERR_ARG, "schedule: more than %d threadIdx.x loops "
                                  "around stage '%s'", NEST_MAX_THREAD_LOOPS, p->buf->name);
            nc->thread_var[nc->n_threads] = civ->var[it];
            nc->thread_ext[nc->n_threads++] = civ->extent[it];
        }
        smelt_status r = build_stage(nc, pi, &nc->regions[pi], &out->nest[out->n]);
        nc->n_threads = saved;
        SMELT_TRY(r);
        out->buf[out->n++] = local;
    }
    return SMELT_OK;
}

static ir_stmt *wrap_attached(nest_ctx *nc, const attached_set *a, ir_stmt *inner)
{
    ir_stmt *s = inner;
    for (int i = a->n - 1; i >= 0; i--) s = ir_allocate(nc->b, a->buf[i], ir_seq2(nc->b, a->nest[i], s));
    return s;
}

static int leaf_index(const sch_stage *sg, int iter)
{
    for (int k = 0; k < sg->n_leaves; k++)
        if (sg->leaves[k] == iter) return k;
    return -1;
}

static int first_reduce_pos(const sch_stage *sg)
{
    for (int k = 0; k < sg->n_leaves; k++)
        if (sg->iters[sg->leaves[k]].reduce) return k;
    return -1;
}

/* Identity stores over the data leaves from position pos inward. */
static ir_stmt *init_nest(nest_ctx *nc, const sch_stage *sg, iter_vals *iv, int pos, int si)
{
    ir_builder *b = nc->b;
    iter_vals local = *iv; /* fresh vars for the init loops */
    memset(local.value, 0, sizeof local.value);
    for (int k = pos; k < sg->n_leaves; k++) {
        int it = sg->leaves[k];
        if (sg->iters[it].reduce) continue;
        char name[128];
        snprintf(name, sizeof name, "%s_init", iv->var[it]->name);
        local.var[it] = ir_var_new(b, name, SMELT_DT_INT64);
    }
    if (b->failed) return NULL;
    ir_expr *idx[SMELT_MAX_RANK];
    store_index(nc, sg, &local, idx);
    ir_stmt *s = ir_store(b, storage_of(nc, si), sg->n_axes, idx,
                          te_reduce_identity((te_graph *)nc->st->te, sg->body->reduce.op,
                                             sg->buf->dtype));
    ir_expr *guard = split_guards(nc, sg, &local, false);
    if (guard) s = ir_if(b, guard, s, NULL);
    for (int k = sg->n_leaves - 1; k >= pos; k--) {
        int it = sg->leaves[k];
        if (sg->iters[it].reduce) continue;
        ir_for_kind kind = sg->iters[it].annot == IR_FOR_PARALLEL ? IR_FOR_SERIAL : sg->iters[it].annot;
        s = leaf_loop(b, sg, &local, it, kind, local.var[it], s);
    }
    return s;
}

/* A check stage's point: let value = body in check(ok), at the point's
 * row-major position in the checked domain. */
static ir_stmt *check_point(nest_ctx *nc, const sch_stage *sg, ir_expr *const *idx, ir_expr *body)
{
    ir_builder *b = nc->b;
    ir_expr *pos = ir_int(b, 0);
    for (int d = 0; d < sg->n_axes; d++)
        pos = ir_add(b, ir_mul(b, pos, ir_int(b, sg->buf->shape[d])), idx[d]);
    ir_var *v = ir_var_new(b, sg->check->value->name, SMELT_DT_INT64);
    ir_subst map = {sg->check->value, ir_var_ref(b, v)};
    ir_expr *ok = ir_expr_substitute(b, sg->check->ok, &map, 1);
    return ir_let(b, v, body, ir_check(b, ok, ir_var_ref(b, v), pos, &sg->check->site));
}

/* min + stride * v < extent on region dim d, or NULL when the region
 * cannot pass the tensor's end there. */
static ir_expr *overhang_guard(nest_ctx *nc, const sch_stage *sg, iter_vals *iv, const region *own,
                               int d)
{
    ir_builder *b = nc->b;
    if (own->extent[d] == sg->buf->shape[d] && own->stride[d] == 1 && ir_is_int(own->min[d], 0))
        return NULL;
    ir_expr *v = iter_value(nc, sg, iv, d);
    if (own->stride[d] != 1) v = ir_mul(b, v, ir_int(b, own->stride[d]));
    return ir_binary(b, IR_LT, ir_add(b, own->min[d], v), ir_int(b, sg->buf->shape[d]));
}

/* Whether every load in e reads a shared-memory tile or `self`. */
typedef struct inside_walk {
    const ir_buffer *self;
    bool ok;
} inside_walk;

static void inside_visit(void *ctx, const ir_expr *e)
{
    inside_walk *w = ctx;
    if (!w->ok || !e) return;
    if (e->kind == IR_LOAD && e->load.buf != w->self && e->load.buf->scope != IR_SCOPE_SHARED) w->ok = false;
    tir_expr_visit_children(e, inside_visit, ctx);
}

static bool loads_stay_inside(const ir_expr *e, const ir_buffer *self)
{
    inside_walk w = {self, true};
    inside_visit(&w, e);
    return w.ok;
}

static ir_stmt *innermost_store(nest_ctx *nc, const sch_stage *sg, iter_vals *iv,
                                const region *own, int si)
{
    ir_builder *b = nc->b;
    ir_expr *idx[SMELT_MAX_RANK];
    store_index(nc, sg, iv, idx);
    ir_buffer *dst = storage_of(nc, si);
    if (!own && !nc->local[si] && dst != sg->buf) dst = sg->buf;
    ir_expr *value = stage_body(nc, sg, iv, own);
    if (sg->body->kind == IR_REDUCE)
        value = combine(b, sg->body->reduce.op, ir_load(b, dst, sg->n_axes, idx), value);
    ir_stmt *s = sg->check ? check_point(nc, sg, idx, value)
                           : ir_store(b, dst, sg->n_axes, idx, value);
    ir_expr *g = split_guards(nc, sg, iv, false), *gr = split_guards(nc, sg, iv, true);
    /* a region may overhang the tensor at its edges: past them the stage's
     * loads could leave their buffers, unless each is a shared tile (in
     * bounds, zero past its buffer) or the local result itself */
    if (own && !(nc->local[si] == dst && loads_stay_inside(value, dst)))
        for (int d = 0; d < sg->n_axes; d++) {
            ir_expr *c = overhang_guard(nc, sg, iv, own, d);
            if (c) g = g ? ir_binary(b, IR_AND, g, c) : c;
        }
    if (g && gr) g = ir_binary(b, IR_AND, g, gr);
    else if (gr) g = gr;
    return g ? ir_if(b, g, s, NULL) : s;
}

/* Each guard innermost_store would test, as a separate condition. */
static int guard_list(nest_ctx *nc, const sch_stage *sg, iter_vals *iv, const region *own,
                      ir_expr **out)
{
    ir_builder *b = nc->b;
    int n = 0;
    for (int i = 0; i < sg->n_iters; i++) {
        const sch_iter *it = &sg->iters[i];
        if (it->split_outer < 0) continue;
        ir_expr *bound = split_bound(nc, sg, iv, i);
        if (bound) out[n++] = ir_binary(b, IR_LT, iter_value(nc, sg, iv, i), bound);
    }
    for (int d = 0; own && d < sg->n_axes; d++) {
        ir_expr *c = overhang_guard(nc, sg, iv, own, d);
        if (c) out[n++] = c;
    }
    return n;
}

/* The micro-kernel call replacing the leaves from tpos inward (tensorize). */
static smelt_status tensorized_body(nest_ctx *nc, const sch_stage *sg, iter_vals *iv,
                                    const region *own, int si, int tpos, ir_stmt **out)
{
    lt_request rq = {.kernel = sg->tensor_kernel, .stage = sg->buf->name};
    for (int k = tpos; k < sg->n_leaves; k++) {
        int it = sg->leaves[k];
        if (iv->dext[it])
            return smelt_errf(nc->ctx, SMELT_ERR_UNSUPPORTED, "tensorize '%s': loop '%s' has a "
                              "run-time extent (micro-kernels take theirs at compile time)",
                              rq.stage, sg->iters[it].name);
        if (rq.n_inner == LT_MAX_INNER)
            return smelt_errf(nc->ctx, SMELT_ERR_ARG, "tensorize '%s': too many loops", rq.stage);
        rq.var[rq.n_inner] = iv->var[it];
        rq.extent[rq.n_inner] = iv->extent[it];
        rq.reduce[rq.n_inner++] = sg->iters[it].reduce;
    }
    ir_expr *idx[SMELT_MAX_RANK];
    store_index(nc, sg, iv, idx);
    rq.dst = storage_of(nc, si);
    if (!own && !nc->local[si] && rq.dst != sg->buf) rq.dst = sg->buf;
    rq.dst_n = sg->n_axes;
    rq.dst_idx = idx;
    rq.value = stage_body(nc, sg, iv, own);
    ir_expr *guards[SCH_MAX_ITERS + SMELT_MAX_RANK];
    rq.guards = guards;
    rq.n_guards = guard_list(nc, sg, iv, own, guards);
    if (nc->b->failed) return oom(nc);
    return lower_tensorize(nc->ctx, nc->b, &rq, out);
}

/* ---- cache_read tiles ---- */

typedef struct cache_tile {
    int src;            /* stage index of the staged buffer */
    int leaf;           /* leaf position the tile is loaded at */
    ir_buffer *buf;     /* the tile, in shared memory */
    ir_stmt *load;      /* the block's threads copy it */
    ir_buffer *saved_local; /* what loads of src were remapped to before */
    region saved_region;
} cache_tile;

/* The threads copy the tile: thread t takes elements t, t + T, t + 2T...
 * (consecutive threads, consecutive elements); positions outside the
 * source read as 0. */
static ir_stmt *tile_load(nest_ctx *nc, const ir_buffer *src, const region *rg, ir_buffer *tile,
                          int64_t threads)
{
    ir_builder *b = nc->b;
    int rank = src->rank;
    int64_t total = 1;
    for (int d = 0; d < rank; d++) total *= rg->extent[d];
    int64_t steps = (total + threads - 1) / threads;
    char name[300];
    snprintf(name, sizeof name, "%s.t", tile->name);
    ir_var *tv = ir_var_new(b, name, SMELT_DT_INT64);
    snprintf(name, sizeof name, "%s.c", tile->name);
    ir_var *cv = ir_var_new(b, name, SMELT_DT_INT64);
    if (!tv || !cv) return NULL;
    ir_expr *pos = ir_var_ref(b, tv);
    if (steps > 1) pos = ir_add(b, ir_mul(b, ir_var_ref(b, cv), ir_int(b, threads)), pos);
    ir_expr *idx[SMELT_MAX_RANK], *from[SMELT_MAX_RANK], *inside = NULL;
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        ir_expr *q = stride > 1 ? ir_binary(b, IR_FLOORDIV, pos, ir_int(b, stride)) : pos;
        idx[d] = d > 0 ? ir_binary(b, IR_FLOORMOD, q, ir_int(b, rg->extent[d])) : q;
        stride *= rg->extent[d];
        from[d] = ir_add(b, rg->min[d], idx[d]);
        if (rg->extent[d] == src->shape[d] && ir_is_int(rg->min[d], 0)) continue;
        ir_expr *c = ir_binary(b, IR_AND, ir_binary(b, IR_GE, from[d], ir_int(b, 0)),
                               ir_binary(b, IR_LT, from[d], ir_int(b, src->shape[d])));
        inside = inside ? ir_binary(b, IR_AND, inside, c) : c;
    }
    ir_expr *v = ir_load(b, (ir_buffer *)src, rank, from);
    if (inside) v = ir_select(b, inside, v, te_reduce_identity_in(b, IR_REDUCE_SUM, src->dtype));
    ir_stmt *s = ir_store(b, tile, rank, idx, v);
    if (steps * threads != total) s = ir_if(b, ir_binary(b, IR_LT, pos, ir_int(b, total)), s, NULL);
    if (steps > 1) s = ir_for(b, cv, ir_int(b, 0), ir_int(b, steps), IR_FOR_SERIAL, s);
    return ir_for(b, tv, ir_int(b, 0), ir_int(b, threads), IR_FOR_GPU_THREAD, s);
}

static smelt_status tile_err(nest_ctx *nc, const sch_stage *sg, const sch_cache_entry *cr,
                             const char *fmt, ...) SMELT_PRINTF(4, 5);

static smelt_status tile_err(nest_ctx *nc, const sch_stage *sg, const sch_cache_entry *cr,
                             const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return smelt_errf(nc->ctx, SMELT_ERR_ARG, "schedule step cache_read %s %s %s: %s", sg->buf->name,
                      cr->buf->name, sg->iters[cr->iter].name, msg);
}

/* The tiles of stage si's cache_read steps: regions, shared buffers, the
 * copies; loads of the staged buffers are remapped to the tiles until
 * restore_tiles. */
static smelt_status prepare_tiles(nest_ctx *nc, int si, iter_vals *iv, const region *own,
                                  cache_tile *tiles, int *n_tiles)
{
    const sch_stage *sg = &nc->st->stages[si];
    const smelt_hw *hw = nc->st->hw;
    ir_builder *b = nc->b;
    int64_t total_bytes = 0;
    *n_tiles = 0;
    for (int t = 0; t < sg->n_cache_reads; t++) {
        const sch_cache_entry *cr = &sg->cache_reads[t];
        int pos = leaf_index(sg, cr->iter);
        if (pos < 0)
            return tile_err(nc, sg, cr, "the loop was split or fused afterwards");
        if (hw && hw->gpu_shared_bytes <= 0)
            return tile_err(nc, sg, cr, "the target is a CPU, which has no shared memory (cache_read "
                            "stages tiles for GPU targets: opencl, cuda)");
        /* the block's threads: thread loops around the loop sweep their range */
        ir_var *inner[SCH_MAX_ITERS + NEST_MAX_THREAD_LOOPS];
        int64_t ext[SCH_MAX_ITERS + NEST_MAX_THREAD_LOOPS];
        int n_inner = 0, n_around = 0;
        int64_t threads = 0;
        for (int k = 0; k < nc->n_threads; k++) {
            inner[n_inner] = nc->thread_var[k];
            ext[n_inner++] = nc->thread_ext[k];
            threads = nc->thread_ext[k];
            n_around++;
        }
        for (int k = 0; k < sg->n_leaves; k++) {
            int it = sg->leaves[k];
            bool thread = sg->iters[it].annot == IR_FOR_GPU_THREAD;
            if (k > pos || thread) {
                inner[n_inner] = iv->var[it];
                ext[n_inner++] = iv->extent[it];
            }
            if (thread && k <= pos) {
                threads = iv->extent[it];
                n_around++;
            } else if (thread && k > pos && n_around == 0 && threads == 0) {
                threads = iv->extent[it]; /* the tile is loaded at block level */
            }
        }
        if (n_around > 1)
            return tile_err(nc, sg, cr, "%d threadIdx.x loops enclose the loop (one is needed)",
                            n_around);
        if (threads <= 0)
            return tile_err(nc, sg, cr, "no threadIdx.x loop encloses the loop or is inside it: "
                            "the block's threads load the tile");
        int xi = stage_of_buffer(nc->st, cr->buf);
        if (xi < 0) return smelt_errf(nc->ctx, SMELT_ERR_INTERNAL, "cache_read: '%s' is no stage", cr->buf->name);
        cache_tile *tl = &tiles[*n_tiles]; /* counted once complete (restore_tiles) */
        region rg;
        ir_expr *body = stage_body(nc, sg, iv, own);
        if (!region_of(nc, body, cr->buf, cr->buf->shape, cr->buf->rank, inner, ext, n_inner, false,
                       true, &rg))
            return tile_err(nc, sg, cr, "the tile's extent is not a constant (an index that is not "
                            "affine in the loops inside it)");
        for (int d = 0; d < cr->buf->rank; d++)
            for (int k = 0; k < n_inner; k++)
                if (ir_expr_uses_var(rg.min[d], inner[k]))
                    return tile_err(nc, sg, cr, "the tile's position differs between the block's "
                                    "threads (dim %d)", d);
        /* an odd row length: threads reading a column of the tile hit
         * different banks */
        int64_t shape[SMELT_MAX_RANK], elems = 1;
        int rank = cr->buf->rank;
        for (int d = 0; d < rank; d++) shape[d] = rg.extent[d];
        if (rank > 1 && shape[rank - 1] > 1 && shape[rank - 1] % 2 == 0) shape[rank - 1]++;
        for (int d = 0; d < rank; d++) elems *= shape[d];
        int64_t bytes = elems * (int64_t)smelt_dtype_size(cr->buf->dtype);
        total_bytes += bytes;
        if (hw && total_bytes > hw->gpu_shared_bytes)
            return tile_err(nc, sg, cr, "its tile needs %lld bytes of shared memory (with the "
                            "stage's other tiles), more than the target's %lld per block",
                            (long long)total_bytes, (long long)hw->gpu_shared_bytes);
        char name[256];
        snprintf(name, sizeof name, "%s.shared", cr->buf->name);
        tl->buf = ir_buffer_new(b, name, cr->buf->dtype, rank, shape, IR_BUF_TEMP);
        if (!tl->buf) return oom(nc);
        tl->buf->scope = IR_SCOPE_SHARED;
        tl->src = xi;
        tl->leaf = pos;
        tl->load = tile_load(nc, cr->buf, &rg, tl->buf, threads);
        if (!tl->load || b->failed) return oom(nc);
        tl->saved_local = nc->local[xi];
        tl->saved_region = nc->regions[xi];
        nc->local[xi] = tl->buf;
        nc->regions[xi] = rg;
        (*n_tiles)++;
    }
    return SMELT_OK;
}

static void restore_tiles(nest_ctx *nc, cache_tile *tiles, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        nc->local[tiles[i].src] = tiles[i].saved_local;
        nc->regions[tiles[i].src] = tiles[i].saved_region;
    }
}

static ir_stmt *wrap_tiles(nest_ctx *nc, const cache_tile *tiles, int n, int leaf, ir_stmt *inner)
{
    ir_stmt *s = inner;
    for (int i = n - 1; i >= 0; i--)
        if (tiles[i].leaf == leaf) s = ir_allocate(nc->b, tiles[i].buf, ir_seq2(nc->b, tiles[i].load, s));
    return s;
}

static smelt_status check_attach_points(nest_ctx *nc, int si)
{
    const sch_state *st = nc->st;
    for (int pi = 0; pi < st->n_stages; pi++) {
        const sch_stage *p = &st->stages[pi];
        if (p->attach_stage != si || p->inlined) continue;
        const sch_stage *c = &st->stages[si];
        bool leaf = false;
        for (int k = 0; k < c->n_leaves; k++) leaf |= c->leaves[k] == p->attach_iter;
        if (!leaf)
            return smelt_errf(nc->ctx, SMELT_ERR_ARG,
                              "schedule: '%s' is computed at loop '%s' of '%s', which was split "
                              "or fused afterwards",
                              p->buf->name, c->iters[p->attach_iter].name, c->buf->name);
    }
    return SMELT_OK;
}

static smelt_status build_stage(nest_ctx *nc, int si, const region *own, ir_stmt **out)
{
    if (nc->st->stages[si].ext) { /* its op's statement, at root (schedules refuse steps) */
        *out = nc->st->stages[si].ext->body;
        return SMELT_OK;
    }
    const sch_stage *sg = &nc->st->stages[si];
    ir_builder *b = nc->b;
    SMELT_TRY(check_attach_points(nc, si));
    iter_vals *iv = smelt_arena_alloc(b->arena, sizeof *iv);
    attached_set *att = smelt_arena_alloc(b->arena, sizeof *att * (size_t)(sg->n_leaves + 1));
    if (!iv || !att) return oom(nc);
    compute_extents(b, sg, own ? own->extent : NULL, iv);
    for (int k = 0; k < sg->n_leaves; k++) {
        int it = sg->leaves[k];
        char name[256];
        snprintf(name, sizeof name, "%s.%s", sg->buf->name, sg->iters[it].name);
        iv->var[it] = ir_var_new(b, name, SMELT_DT_INT64);
    }
    if (b->failed) return oom(nc);
    /* attached producers first: their local buffers change how our body reads them */
    for (int k = 0; k < sg->n_leaves; k++) SMELT_TRY(prepare_attached(nc, si, iv, own, k, &att[k]));
    cache_tile tiles[SCH_MAX_CACHE_READS];
    int n_tiles = 0;
    smelt_status tr = prepare_tiles(nc, si, iv, own, tiles, &n_tiles);
    if (tr != SMELT_OK) {
        restore_tiles(nc, tiles, n_tiles);
        return tr;
    }
    int tpos = sg->tensor_iter >= 0 ? leaf_index(sg, sg->tensor_iter) : -1;
    ir_stmt *s;
    if (tpos >= 0) {
        tr = tensorized_body(nc, sg, iv, own, si, tpos, &s);
        if (tr != SMELT_OK) {
            restore_tiles(nc, tiles, n_tiles);
            return tr;
        }
    } else {
        s = innermost_store(nc, sg, iv, own, si);
    }
    restore_tiles(nc, tiles, n_tiles);
    int rpos = sg->body->kind == IR_REDUCE ? first_reduce_pos(sg) : -1;
    if (tpos >= 0 && rpos > tpos) rpos = tpos; /* the identity goes before the kernel call */
    int mpos = tpos < 0 && n_tiles == 0 ? masked_leaf(sg, iv) : -1;
    for (int k = mpos; mpos >= 0 && k < sg->n_leaves; k++)
        if (att[k].n) mpos = -1; /* a producer's nest is not copied */
    ir_stmt *whole = NULL; /* the body without the mask (before the axes are substituted) */
    if (mpos >= 0) {
        mask_sub ms = {b, sg->rt_mask};
        sch_stage unmasked = *sg;
        unmasked.body = drop_mask_expr(&ms, sg->body);
        whole = unmasked.body ? innermost_store(nc, &unmasked, iv, own, si) : NULL;
    }
    for (int k = sg->n_leaves - 1; k >= 0; k--) {
        int it = sg->leaves[k];
        if (tpos >= 0 && k >= tpos) {
            if (att[k].n) /* replay forbids this; never drop a producer's nest */
                return smelt_errf(nc->ctx, SMELT_ERR_ARG, "tensorize '%s': a stage is computed at "
                                  "a replaced loop", sg->buf->name);
        } else if (k > mpos && whole) { /* inside r.o: both bodies */
            s = leaf_loop(b, sg, iv, it, sg->iters[it].annot, iv->var[it],
                          wrap_tiles(nc, tiles, n_tiles, k, wrap_attached(nc, &att[k], s)));
            whole = leaf_loop(b, sg, iv, it, sg->iters[it].annot, iv->var[it],
                              wrap_tiles(nc, tiles, n_tiles, k, wrap_attached(nc, &att[k], whole)));
        } else if (k == mpos && whole) {
            s = wrap_tiles(nc, tiles, n_tiles, k, wrap_attached(nc, &att[k], s));
            whole = wrap_tiles(nc, tiles, n_tiles, k, wrap_attached(nc, &att[k], whole));
            s = masked_loops(nc, sg, iv, it, s, whole);
        } else {
            s = wrap_attached(nc, &att[k], s);
            s = wrap_tiles(nc, tiles, n_tiles, k, s);
            s = leaf_loop(b, sg, iv, it, sg->iters[it].annot, iv->var[it], s);
        }
        if (k == rpos) s = ir_seq2(b, init_nest(nc, sg, iv, k, si), s);
    }
    if (sg->n_leaves == 0 && sg->body->kind == IR_REDUCE) /* rank-0, no reduce axes */
        s = ir_seq2(b, init_nest(nc, sg, iv, 0, si), s);
    if (b->failed) return oom(nc);
    *out = s;
    return SMELT_OK;
}

/* ---- whole function ---- */


/* Root-level stage that must run before stage si: walks through attached
 * stages (their inputs must exist before the consumer's nest runs). */
static smelt_status emit_deps(nest_ctx *nc, int si, smelt_ptrvec *items, smelt_ptrvec *temps,
                              int depth);

static smelt_status emit_root(nest_ctx *nc, int si, smelt_ptrvec *items, smelt_ptrvec *temps,
                              int depth)
{
    const sch_stage *sg = &nc->st->stages[si];
    if (nc->done[si] || sg->is_placeholder) return SMELT_OK;
    if (depth > nc->st->n_stages)
        return smelt_errf(nc->ctx, SMELT_ERR_INTERNAL, "te graph has a cycle at '%s'", sg->buf->name);
    SMELT_TRY(emit_deps(nc, si, items, temps, depth));
    nc->done[si] = true;
    if (sg->inlined || sg->attach_stage >= 0) return SMELT_OK;
    ir_stmt *nest;
    SMELT_TRY(build_stage(nc, si, NULL, &nest));
    if (!smelt_ptrvec_push(items, nest)) return oom(nc);
    if (!sg->is_output && !sg->check && !smelt_ptrvec_push(temps, sg->buf)) return oom(nc);
    return SMELT_OK;
}

static smelt_status emit_deps(nest_ctx *nc, int si, smelt_ptrvec *items, smelt_ptrvec *temps,
                              int depth)
{
    const sch_state *st = nc->st;
    const sch_stage *sg = &st->stages[si];
    for (int pi = 0; pi < st->n_stages; pi++) {
        const sch_stage *p = &st->stages[pi];
        if (pi == si || p->is_placeholder || !sch_stage_reads(sg, p->buf)) continue;
        if (p->inlined || p->attach_stage >= 0) {
            SMELT_TRY(emit_deps(nc, pi, items, temps, depth + 1)); /* its inputs */
            nc->done[pi] = true;
        } else {
            SMELT_TRY(emit_root(nc, pi, items, temps, depth + 1));
        }
    }
    return SMELT_OK;
}

smelt_status lower_build_nests(smelt_ctx *ctx, const sch_state *st, ir_builder *b, ir_stmt **out)
{
    nest_ctx nc = {ctx, st, b, NULL, NULL, NULL, 0, {NULL}, {0}};
    nc.local = smelt_arena_alloc(b->arena, sizeof(ir_buffer *) * (size_t)(st->n_stages + 1));
    nc.regions = smelt_arena_alloc(b->arena, sizeof(region) * (size_t)(st->n_stages + 1));
    nc.done = smelt_arena_alloc(b->arena, sizeof(bool) * (size_t)(st->n_stages + 1));
    if (!nc.local || !nc.regions || !nc.done) return oom(&nc);
    smelt_ptrvec items = {0}, temps = {0};
    smelt_status s = SMELT_OK;
    for (int i = 0; s == SMELT_OK && i < st->n_stages; i++)
        if (st->stages[i].is_output || st->stages[i].check) s = emit_root(&nc, i, &items, &temps, 0);
    ir_stmt *body = s == SMELT_OK ? ir_seq(b, items.len, (ir_stmt *const *)items.items) : NULL;
    for (int i = temps.len - 1; s == SMELT_OK && i >= 0; i--) body = ir_allocate(b, temps.items[i], body);
    smelt_ptrvec_fini(&items);
    smelt_ptrvec_fini(&temps);
    if (s == SMELT_OK && (!body || b->failed)) s = oom(&nc);
    *out = body;
    return s;
}
