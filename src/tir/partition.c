/* Loop partitioning (see partition.h). */
#include "tir/affine.h"
#include "tir/bounds.h"
#include "tir/mutate.h"
#include "tir/partition.h"
#include "tir/scalar.h"
#include "tir/simplify.h"

typedef struct part {
    ir_builder *b;
    tir_scope scope; /* ranges of the enclosing loops and lets */
    int budget;      /* loops that may still be split */
    bool trim_only;  /* inside a tail: only narrow loops, never copy bodies */
    int in_thread;   /* GPU thread loops around the statement */
} part;

/* Guard collection for one loop variable. */
#define PART_MAX_LETS 64

typedef struct guards {
    const ir_var *v;
    tir_interval acc; /* range of v where every guard used so far holds */
    tir_scope scope;  /* v's loop range plus inner loops and lets */
    const ir_stmt *lets[PART_MAX_LETS]; /* enclosing Lets inside the loop, seen through */
    int n_lets;
} guards;

static bool is_cmp(ir_kind k) { return k >= IR_EQ && k <= IR_GE; }

static ir_kind negate_cmp(ir_kind k)
{
    switch (k) {
    case IR_LT: return IR_GE;
    case IR_LE: return IR_GT;
    case IR_GT: return IR_LE;
    case IR_GE: return IR_LT;
    case IR_EQ: return IR_NE;
    default: return IR_EQ;
    }
}

static bool interval_empty(tir_interval a) { return !a.lo_inf && !a.hi_inf && a.lo > a.hi; }

static bool interval_same(tir_interval a, tir_interval b)
{
    return a.lo_inf == b.lo_inf && a.hi_inf == b.hi_inf && (a.lo_inf || a.lo == b.lo) &&
           (a.hi_inf || a.hi == b.hi);
}

/* Range of v where coef*v + r <= t for every r of the interval rest. */
static bool solve_le(int64_t coef, tir_interval rest, int64_t t, tir_interval *out)
{
    int64_t lim, q;
    if (rest.hi_inf || __builtin_sub_overflow(t, rest.hi, &lim)) return false;
    if (coef == -1 && lim == INT64_MIN) return false; /* -lim does not fit */
    q = tir_floordiv_i64(lim, coef);
    *out = tir_interval_everything();
    if (coef > 0) {
        out->hi = q, out->hi_inf = false;
    } else {
        out->lo = tir_floormod_i64(lim, coef) == 0 ? q : q + 1; /* ceil(lim / coef) */
        out->lo_inf = false;
    }
    return true;
}

static const ir_expr *let_value(const guards *g, const ir_expr *atom)
{
    if (atom->kind != IR_VAR) return NULL;
    for (int i = g->n_lets - 1; i >= 0; i--)
        if (g->lets[i]->let.var == atom->var) return g->lets[i]->let.value;
    return NULL;
}

/* Replace terms that are Let variables by their values (guards written on
 * `let i = io*16 + ii` must be seen as affine in io). */
static void expand_lets(const guards *g, tir_affine *f)
{
    for (int round = 0; round <= g->n_lets && !f->failed; round++) {
        bool any = false;
        for (int i = 0; i < f->n && !f->failed; i++) {
            const ir_expr *val = f->terms[i].coef ? let_value(g, f->terms[i].atom) : NULL;
            if (!val) continue;
            int64_t c = f->terms[i].coef;
            f->terms[i].coef = 0;
            tir_affine_add_expr(f, (ir_expr *)val, c);
            any = true;
        }
        if (!any) return;
    }
    f->failed = true; /* did not settle: give up on this guard */
}

/* Range of v where "a k b" holds for all values of the other variables. */
static bool true_range(guards *g, ir_kind k, ir_expr *a, ir_expr *b, tir_interval *out)
{
    tir_affine f;
    tir_affine_init(&f);
    tir_affine_add_expr(&f, a, 1);
    tir_affine_add_expr(&f, b, -1);
    expand_lets(g, &f);
    int64_t coef = f.failed ? 0 : tir_affine_coef(&f, g->v);
    bool ok = coef != 0 && coef != INT64_MIN && !tir_affine_var_in_atoms(&f, g->v);
    if (ok) {
        for (int i = 0; i < f.n; i++)
            if (f.terms[i].atom->kind == IR_VAR && f.terms[i].atom->var == g->v) f.terms[i].coef = 0;
        tir_interval rest = tir_affine_bounds(&f, &g->scope);
        /* x < 0  <=>  x <= -1;  x > 0  <=>  -x <= -1;  x >= 0  <=>  -x <= 0 */
        bool neg = k == IR_GT || k == IR_GE;
        int64_t t = (k == IR_LT || k == IR_GT) ? -1 : 0;
        if (neg) rest = tir_interval_mul_const(rest, -1), coef = -coef;
        ok = (k == IR_LT || k == IR_LE || neg) && solve_le(coef, rest, t, out);
    }
    tir_affine_fini(&f);
    return ok;
}

static void add_guard(guards *g, const ir_expr *c, bool truth)
{
    if (!c) return;
    if (c->kind == (truth ? IR_AND : IR_OR)) {
        add_guard(g, c->bin.a, truth);
        add_guard(g, c->bin.b, truth);
        return;
    }
    if (c->kind == IR_NOT) {
        add_guard(g, c->bin.a, !truth);
        return;
    }
    if (!is_cmp(c->kind) || c->bin.a->dtype != SMELT_DT_INT64) return;
    tir_interval iv;
    if (!true_range(g, truth ? c->kind : negate_cmp(c->kind), c->bin.a, c->bin.b, &iv)) return;
    tir_interval j = tir_interval_intersect(g->acc, iv);
    if (!interval_empty(j)) g->acc = j;
}

static void guard_expr(void *ctx, const ir_expr *e)
{
    if (!e) return;
    if (e->kind == IR_SELECT) add_guard(ctx, e->select.cond, true);
    tir_expr_visit_children(e, guard_expr, ctx);
}

static void guard_stmt(void *ctx, const ir_stmt *s)
{
    guards *g = ctx;
    int mark = tir_scope_mark(&g->scope);
    if (s->kind == IR_STMT_FOR) tir_scope_push_for(&g->scope, s);
    int n_lets = g->n_lets;
    if (s->kind == IR_STMT_LET) {
        tir_scope_push(&g->scope, s->let.var, tir_bounds(s->let.value, &g->scope));
        if (g->n_lets < PART_MAX_LETS) g->lets[g->n_lets++] = s;
    }
    if (s->kind == IR_STMT_IF) add_guard(g, s->if_.cond, true);
    tir_stmt_visit_children(s, guard_expr, guard_stmt, g);
    tir_scope_pop_to(&g->scope, mark);
    g->n_lets = n_lets;
}

/* The main range of loop st ([m, last]); false when no split pays. */
static bool find_main(part *p, const ir_stmt *st, int64_t m, int64_t last, tir_interval *main)
{
    guards g = {.v = st->for_.var, .acc = tir_interval_range(m, last)};
    tir_scope_init(&g.scope, &p->scope);
    tir_scope_push_range(&g.scope, g.v, m, last);
    guard_stmt(&g, st->for_.body);
    tir_scope_fini(&g.scope);
    *main = g.acc;
    return !interval_same(g.acc, tir_interval_range(m, last));
}

static ir_stmt *part_stmt(void *ctx, ir_stmt *s);

static ir_stmt *tail(part *p, const ir_stmt *st, int64_t start, int64_t count)
{
    ir_for_kind k = st->for_.kind;
    if (k == IR_FOR_PARALLEL || k == IR_FOR_VECTORIZED) k = IR_FOR_SERIAL;
    ir_stmt *loop = ir_for(p->b, st->for_.var, ir_int(p->b, start), ir_int(p->b, count), k, st->for_.body);
    return loop ? tir_simplify_stmt(p->b, loop, &p->scope) : NULL;
}

/* Tails get their inner loops trimmed (ranges where a guard is false
 * dropped) but not split, so copies do not multiply at the borders. */
static ir_stmt *trim_inside(part *p, ir_stmt *s)
{
    if (!s) return NULL;
    bool saved = p->trim_only;
    p->trim_only = true;
    ir_stmt *r = part_stmt(p, s);
    p->trim_only = saved;
    return r;
}

/* The split loop, or st itself when only trimming and a tail is not empty. */
static ir_stmt *split(part *p, ir_stmt *st, int64_t m, int64_t last, tir_interval main)
{
    ir_stmt *items[3] = {NULL, NULL, NULL};
    if (main.lo > m) items[0] = tail(p, st, m, main.lo - m);
    if (main.hi < last) items[2] = tail(p, st, main.hi + 1, last - main.hi);
    if ((main.lo > m && !items[0]) || (main.hi < last && !items[2])) return NULL;
    if (p->trim_only && !(tir_stmt_is_empty(items[0]) && tir_stmt_is_empty(items[2]))) return st;
    p->budget--;
    int mark = tir_scope_mark(&p->scope);
    tir_scope_push(&p->scope, st->for_.var, main);
    ir_stmt *body = tir_simplify_stmt(p->b, st->for_.body, &p->scope);
    body = body ? part_stmt(p, body) : NULL;
    tir_scope_pop_to(&p->scope, mark);
    if (!body) return NULL;
    if (!tir_stmt_is_empty(body)) {
        items[1] = ir_for(p->b, st->for_.var, ir_int(p->b, main.lo), ir_int(p->b, main.hi - main.lo + 1),
                          st->for_.kind, body);
        if (main.lo == main.hi) items[1] = tir_simplify_stmt(p->b, items[1], &p->scope);
    }
    items[0] = trim_inside(p, items[0]);
    items[2] = trim_inside(p, items[2]);
    return ir_seq(p->b, 3, items);
}

static bool holds_thread_loop(const ir_stmt *s)
{
    if (!s) return false;
    switch (s->kind) {
    case IR_STMT_FOR: return s->for_.kind == IR_FOR_GPU_THREAD || holds_thread_loop(s->for_.body);
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++)
            if (holds_thread_loop(s->seq.items[i])) return true;
        return false;
    case IR_STMT_LET: return holds_thread_loop(s->let.body);
    case IR_STMT_ALLOCATE: return holds_thread_loop(s->alloc.body);
    case IR_STMT_IF: return holds_thread_loop(s->if_.then_) || holds_thread_loop(s->if_.else_);
    default: return false;
    }
}

static ir_stmt *part_for(part *p, ir_stmt *st)
{
    const ir_expr *mn = st->for_.min, *ex = st->for_.extent;
    tir_interval main;
    int64_t last;
    /* a GPU thread loop inside another (a cache_read tile's copy) or around
     * one stays whole: every thread of the block must reach the barriers
     * codegen puts around the copy */
    bool thread = st->for_.kind == IR_FOR_GPU_THREAD;
    if (thread && (p->in_thread > 0 || holds_thread_loop(st->for_.body))) {
        int mark = tir_scope_mark(&p->scope);
        tir_scope_push_for(&p->scope, st);
        p->in_thread++;
        ir_stmt *r = tir_stmt_map_children(p->b, st, NULL, part_stmt, p);
        p->in_thread--;
        tir_scope_pop_to(&p->scope, mark);
        return r;
    }
    if (thread) p->in_thread++;
    ir_stmt *res = NULL;
    if (p->budget > 0 && mn->kind == IR_INT && ex->kind == IR_INT && ex->i >= 2 &&
        !__builtin_add_overflow(mn->i, ex->i - 1, &last) && find_main(p, st, mn->i, last, &main)) {
        ir_stmt *r = split(p, st, mn->i, last, main);
        if (r != st) res = r;
    }
    if (!res) {
        int mark = tir_scope_mark(&p->scope);
        tir_scope_push_for(&p->scope, st);
        res = tir_stmt_map_children(p->b, st, NULL, part_stmt, p);
        tir_scope_pop_to(&p->scope, mark);
    }
    if (thread) p->in_thread--;
    return res;
}

static ir_stmt *part_stmt(void *ctx, ir_stmt *s)
{
    part *p = ctx;
    if (s->kind == IR_STMT_FOR) return part_for(p, s);
    int mark = tir_scope_mark(&p->scope);
    if (s->kind == IR_STMT_LET) tir_scope_push(&p->scope, s->let.var, tir_bounds(s->let.value, &p->scope));
    ir_stmt *r = tir_stmt_map_children(p->b, s, NULL, part_stmt, p);
    tir_scope_pop_to(&p->scope, mark);
    return r;
}

ir_stmt *tir_partition_loops(ir_builder *b, ir_stmt *s)
{
    part p = {.b = b, .budget = TIR_PARTITION_BUDGET};
    tir_scope_init(&p.scope, NULL);
    ir_stmt *r = s ? part_stmt(&p, s) : NULL;
    tir_scope_fini(&p.scope);
    return r;
}
