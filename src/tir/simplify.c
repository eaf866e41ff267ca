/* The tir simplifier (see simplify.h for the rules). */
#include <math.h>

#include "tir/affine.h"
#include "tir/scalar.h"
#include "tir/simplify.h"

typedef struct simp {
    ir_builder *b;
    tir_scope scope; /* loop/let/condition facts; parent = caller's ranges */
} simp;

static ir_expr *simp_expr(simp *s, ir_expr *e);
static ir_expr *floordiv_rules(simp *s, ir_expr *a, int64_t c);
static ir_expr *floormod_rules(simp *s, ir_expr *a, int64_t c);

/* ---- small builders ---- */

static ir_expr *mk_int(simp *s, smelt_dtype dt, int64_t v) { return ir_const_int(s->b, dt, v); }
static ir_expr *mk_bool(simp *s, bool v) { return ir_const_int(s->b, SMELT_DT_BOOL, v); }

static bool is_int_dt(const ir_expr *e) { return e && tir_dtype_is_int(e->dtype); }
static bool is_index(const ir_expr *e) { return e && e->dtype == SMELT_DT_INT64; }
static bool is_const_int(const ir_expr *e, int64_t *v)
{
    if (!e || e->kind != IR_INT) return false;
    if (v) *v = e->i;
    return true;
}

/* The node e with new operands (e itself when they did not change). */
static ir_expr *rebuild_bin(simp *s, ir_expr *e, ir_expr *a, ir_expr *c)
{
    if (a == e->bin.a && c == e->bin.b) return e;
    ir_expr *r = ir_binary(s->b, e->kind, a, c);
    if (r) r->dtype = e->dtype;
    return r;
}

/* r, or e when r is structurally the same (keeps "unchanged" a pointer test). */
static ir_expr *same_or(ir_expr *e, ir_expr *r) { return ir_expr_equal(e, r) ? e : r; }

/* ---- affine arithmetic ---- */

static ir_expr *emit(simp *s, tir_affine *f)
{
    tir_affine_normalize(f);
    return tir_affine_emit(s->b, f);
}

/* Order the operands of a commutative non-affine product. */
static ir_expr *mul_atom(simp *s, ir_expr *e, ir_expr *a, ir_expr *c)
{
    if (tir_expr_compare(a, c) > 0) {
        ir_expr *t = a;
        a = c;
        c = t;
    }
    return rebuild_bin(s, e, a, c);
}

/* Add coef * e to f, simplifying atoms on the way. */
static void lin_add(simp *s, tir_affine *f, ir_expr *e, int64_t coef)
{
    if (f->failed || !e) {
        f->failed = true;
        return;
    }
    if (!is_index(e)) {
        tir_affine_add_term(f, simp_expr(s, e), coef);
        return;
    }
    switch (e->kind) {
    case IR_INT: tir_affine_add_expr(f, e, coef); return;
    case IR_ADD:
        lin_add(s, f, e->bin.a, coef);
        lin_add(s, f, e->bin.b, coef);
        return;
    case IR_SUB:
        if (coef == INT64_MIN) break;
        lin_add(s, f, e->bin.a, coef);
        lin_add(s, f, e->bin.b, -coef);
        return;
    case IR_MUL: {
        ir_expr *a = simp_expr(s, e->bin.a), *c = simp_expr(s, e->bin.b);
        int64_t k, scaled;
        if (is_const_int(c, &k) || is_const_int(a, &k)) {
            if (__builtin_mul_overflow(coef, k, &scaled)) {
                f->failed = true;
                return;
            }
            tir_affine_add_expr(f, c && c->kind == IR_INT ? a : c, scaled);
            return;
        }
        tir_affine_add_term(f, mul_atom(s, e, a, c), coef);
        return;
    }
    default: break;
    }
    tir_affine_add_expr(f, simp_expr(s, e), coef);
}

static bool is_div_by(const ir_expr *e, ir_kind k, int64_t *c)
{
    return e && e->kind == k && e->bin.b && e->bin.b->kind == IR_INT && e->bin.b->i > 0 &&
           (*c = e->bin.b->i, true);
}

/* floordiv(x,c)*(k*c) + floormod(x,c)*k  ->  x*k. */
static void fuse_divmod(tir_affine *f)
{
    for (int i = 0; i < f->n; i++) {
        int64_t c, m;
        ir_expr *mod = f->terms[i].atom;
        if (f->terms[i].coef == 0 || !is_div_by(mod, IR_FLOORMOD, &c)) continue;
        if (__builtin_mul_overflow(f->terms[i].coef, c, &m)) continue;
        for (int j = 0; j < f->n; j++) {
            ir_expr *div = f->terms[j].atom;
            int64_t c2;
            if (f->terms[j].coef != m || !is_div_by(div, IR_FLOORDIV, &c2) || c2 != c ||
                !ir_expr_equal(div->bin.a, mod->bin.a))
                continue;
            int64_t k = f->terms[i].coef;
            f->terms[i].coef = 0;
            f->terms[j].coef = 0;
            tir_affine_add_expr(f, mod->bin.a, k);
            i = -1; /* terms may have merged: rescan */
            break;
        }
    }
}

static ir_expr *simp_affine(simp *s, ir_expr *e)
{
    tir_affine f;
    tir_affine_init(&f);
    lin_add(s, &f, e, 1);
    fuse_divmod(&f);
    ir_expr *r = NULL;
    if (!f.failed) {
        r = emit(s, &f);
    } else if (!s->b->failed) {
        /* Coefficient overflow: keep the shape, simplify the operands. */
        ir_expr *a = simp_expr(s, e->bin.a), *c = simp_expr(s, e->bin.b);
        r = rebuild_bin(s, e, a, c);
    }
    tir_affine_fini(&f);
    return r ? same_or(e, r) : NULL;
}

/* ---- arithmetic on other dtypes ---- */

static ir_expr *fold_binary(simp *s, ir_kind k, smelt_dtype dt, ir_expr *a, ir_expr *c)
{
    if (a->kind == IR_INT && c->kind == IR_INT) {
        int64_t v;
        if (tir_fold_int(k, a->dtype, a->i, c->i, &v)) return mk_int(s, dt, v);
    }
    if (a->kind == IR_FLOAT && c->kind == IR_FLOAT) {
        double v;
        if (!tir_fold_float(k, a->dtype, a->f, c->f, &v)) return NULL;
        return dt == SMELT_DT_BOOL ? mk_bool(s, v != 0) : ir_const_float(s->b, dt, v);
    }
    return NULL;
}

static ir_expr *simp_arith(simp *s, ir_expr *e)
{
    ir_expr *a = simp_expr(s, e->bin.a), *c = simp_expr(s, e->bin.b), *r;
    if (!a || !c) return NULL;
    if ((r = fold_binary(s, e->kind, e->dtype, a, c))) return r;
    if (is_int_dt(e)) {
        ir_kind k = e->kind;
        if ((k == IR_ADD || k == IR_SUB) && ir_is_int(c, 0)) return a;
        if (k == IR_ADD && ir_is_int(a, 0)) return c;
        if (k == IR_SUB && ir_expr_equal(a, c)) return mk_int(s, e->dtype, 0);
        if (k == IR_MUL && (ir_is_int(c, 1) || ir_is_int(a, 0))) return a;
        if (k == IR_MUL && (ir_is_int(a, 1) || ir_is_int(c, 0))) return c;
    }
    bool commutative = e->kind == IR_ADD || e->kind == IR_MUL;
    if (commutative && (a->kind == IR_INT || a->kind == IR_FLOAT) && c->kind != a->kind)
        return rebuild_bin(s, e, c, a); /* constant on the right */
    return rebuild_bin(s, e, a, c);
}

/* ---- division ---- */

static int64_t gcd64(int64_t a, int64_t b)
{
    uint64_t x = a < 0 ? 0 - (uint64_t)a : (uint64_t)a, y = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
    while (y) {
        uint64_t t = x % y;
        x = y;
        y = t;
    }
    return (int64_t)x;
}

/* Bounds of a lie within one period [q*c, q*c + c - 1]: store q. */
static bool one_period(simp *s, ir_expr *a, int64_t c, int64_t *q)
{
    tir_interval iv = tir_bounds(a, &s->scope);
    if (!tir_interval_is_bounded(iv)) return false;
    *q = tir_floordiv_i64(iv.lo, c);
    return *q == tir_floordiv_i64(iv.hi, c);
}

static ir_expr *mk_divmod(simp *s, ir_kind k, ir_expr *a, int64_t c)
{
    return ir_binary(s->b, k, a, ir_int(s->b, c));
}

/* Split f into q*g (terms divisible by g, constant floor-divided) and the
 * rest.  Returns false when nothing is divisible. */
static bool split_by(const tir_affine *f, int64_t g, tir_affine *q, tir_affine *rest)
{
    bool any = false;
    for (int i = 0; i < f->n; i++) {
        if (f->terms[i].coef % g == 0) {
            tir_affine_add_term(q, f->terms[i].atom, f->terms[i].coef / g);
            any = true;
        } else {
            tir_affine_add_term(rest, f->terms[i].atom, f->terms[i].coef);
        }
    }
    int64_t kq = tir_floordiv_i64(f->k, g);
    tir_affine_add_const(q, kq);
    tir_affine_add_const(rest, tir_floormod_i64(f->k, g));
    return any || kq != 0;
}

/* Largest g (1 < g < c, g | c) such that f = g*A + R with R in [0, g).
 * Fills A and R. */
static int64_t find_gcd_split(simp *s, const tir_affine *f, int64_t c, tir_affine *A, tir_affine *R)
{
    int64_t best = 0;
    for (int i = 0; i < f->n; i++) {
        int64_t g = gcd64(f->terms[i].coef, c);
        if (g <= 1 || g >= c || g <= best) continue;
        tir_affine_clear(A);
        tir_affine_clear(R);
        split_by(f, g, A, R);
        if (A->failed || R->failed) continue;
        tir_interval iv = tir_affine_bounds(R, &s->scope);
        if (tir_interval_is_bounded(iv) && iv.lo >= 0 && iv.hi < g) best = g;
    }
    if (best) {
        tir_affine_clear(A);
        tir_affine_clear(R);
        split_by(f, best, A, R);
    }
    return best;
}

/* q + inner, canonical. */
static ir_expr *affine_plus(simp *s, tir_affine *q, ir_expr *inner, int64_t inner_coef)
{
    tir_affine_add_expr(q, inner, inner_coef);
    return q->failed ? NULL : emit(s, q);
}

static ir_expr *floordiv_affine(simp *s, ir_expr *a, int64_t c, tir_affine *f)
{
    tir_affine q, r;
    tir_affine_init(&q);
    tir_affine_init(&r);
    ir_expr *res = NULL;
    if (split_by(f, c, &q, &r) && !q.failed && !r.failed) {
        ir_expr *inner = floordiv_rules(s, emit(s, &r), c);
        res = inner ? affine_plus(s, &q, inner, 1) : NULL;
    } else {
        int64_t g = find_gcd_split(s, f, c, &q, &r);
        if (g && !q.failed) res = floordiv_rules(s, emit(s, &q), c / g);
    }
    tir_affine_fini(&q);
    tir_affine_fini(&r);
    return res ? res : mk_divmod(s, IR_FLOORDIV, a, c);
}

/* floordiv(a, c), a simplified int64, c > 0. */
static ir_expr *floordiv_rules(simp *s, ir_expr *a, int64_t c)
{
    int64_t q, c2, cc;
    if (!a) return NULL;
    if (c == 1) return a;
    if (one_period(s, a, c, &q)) return ir_int(s->b, q);
    if (is_div_by(a, IR_FLOORDIV, &c2) && !__builtin_mul_overflow(c, c2, &cc))
        return floordiv_rules(s, a->bin.a, cc);
    tir_affine f;
    tir_affine_init(&f);
    tir_affine_add_expr(&f, a, 1);
    ir_expr *r = f.failed ? mk_divmod(s, IR_FLOORDIV, a, c) : floordiv_affine(s, a, c, &f);
    tir_affine_fini(&f);
    return r;
}

static ir_expr *floormod_affine(simp *s, ir_expr *a, int64_t c, tir_affine *f)
{
    tir_affine q, r;
    tir_affine_init(&q);
    tir_affine_init(&r);
    ir_expr *res = NULL;
    if (split_by(f, c, &q, &r) && !r.failed) {
        res = floormod_rules(s, emit(s, &r), c);
    } else {
        int64_t g = find_gcd_split(s, f, c, &q, &r);
        if (g && !q.failed && !r.failed) {
            ir_expr *inner = floormod_rules(s, emit(s, &q), c / g);
            tir_affine_clear(&q);
            res = inner ? affine_plus(s, &r, inner, g) : NULL;
        }
    }
    tir_affine_fini(&q);
    tir_affine_fini(&r);
    return res ? res : mk_divmod(s, IR_FLOORMOD, a, c);
}

/* floormod(a, c), a simplified int64, c > 0. */
static ir_expr *floormod_rules(simp *s, ir_expr *a, int64_t c)
{
    int64_t q, c2;
    if (!a) return NULL;
    if (c == 1) return ir_int(s->b, 0);
    tir_affine f;
    tir_affine_init(&f);
    tir_affine_add_expr(&f, a, 1);
    ir_expr *r;
    if (f.failed) {
        r = mk_divmod(s, IR_FLOORMOD, a, c);
    } else if (one_period(s, a, c, &q) && !__builtin_mul_overflow(-q, c, &c2)) {
        tir_affine_add_const(&f, c2);
        r = f.failed ? mk_divmod(s, IR_FLOORMOD, a, c) : emit(s, &f);
    } else if (is_div_by(a, IR_FLOORMOD, &c2) && c2 % c == 0) {
        r = floormod_rules(s, a->bin.a, c);
    } else {
        r = floormod_affine(s, a, c, &f);
    }
    tir_affine_fini(&f);
    return r;
}

static ir_expr *simp_div(simp *s, ir_expr *e)
{
    ir_expr *a = simp_expr(s, e->bin.a), *c = simp_expr(s, e->bin.b), *r;
    int64_t d, q;
    if (!a || !c) return NULL;
    if ((r = fold_binary(s, e->kind, e->dtype, a, c))) return r;
    if (!is_int_dt(e) || !is_const_int(c, &d)) return rebuild_bin(s, e, a, c);
    bool quotient = e->kind == IR_DIV || e->kind == IR_FLOORDIV;
    if (d == 1) return quotient ? a : mk_int(s, e->dtype, 0);
    if (!is_index(e) || d <= 0) return rebuild_bin(s, e, a, c);
    if (e->kind == IR_FLOORDIV) return same_or(e, floordiv_rules(s, a, d));
    if (e->kind == IR_FLOORMOD) return same_or(e, floormod_rules(s, a, d));
    /* Truncating division equals floor division on a non-negative range. */
    if (one_period(s, a, d, &q) && q >= 0) {
        if (quotient) return ir_int(s->b, q);
        if (q == 0) return a;
    }
    return rebuild_bin(s, e, a, c);
}

/* ---- min / max ---- */

/* min/max of simplified operands. */
static ir_expr *minmax_core(simp *s, ir_expr *e, ir_expr *a, ir_expr *c)
{
    ir_expr *r;
    bool is_min = e->kind == IR_MIN;
    if ((r = fold_binary(s, e->kind, e->dtype, a, c))) return r;
    if (!is_int_dt(e)) return rebuild_bin(s, e, a, c);
    if (ir_expr_equal(a, c)) return a;
    if (tir_prove_compare(IR_LE, a, c, &s->scope) == TIR_TRUE) return is_min ? a : c;
    if (tir_prove_compare(IR_LE, c, a, &s->scope) == TIR_TRUE) return is_min ? c : a;
    if (a->kind == IR_INT) { /* constant on the right */
        ir_expr *t = a;
        a = c;
        c = t;
    }
    /* min(min(x, c1), c2) -> min(x, min(c1, c2)) */
    if (c->kind == IR_INT && a->kind == e->kind && a->bin.b->kind == IR_INT) {
        int64_t v;
        tir_fold_int(e->kind, e->dtype, a->bin.b->i, c->i, &v);
        ir_expr *k = mk_int(s, e->dtype, v);
        return k ? minmax_core(s, e, a->bin.a, k) : NULL;
    }
    return rebuild_bin(s, e, a, c);
}

static ir_expr *simp_minmax(simp *s, ir_expr *e)
{
    ir_expr *a = simp_expr(s, e->bin.a), *c = simp_expr(s, e->bin.b);
    return (a && c) ? minmax_core(s, e, a, c) : NULL;
}

/* ---- conditions ---- */

static ir_kind flip_cmp(ir_kind k) /* a k b  <=>  b flip(k) a */
{
    switch (k) {
    case IR_LT: return IR_GT;
    case IR_LE: return IR_GE;
    case IR_GT: return IR_LT;
    case IR_GE: return IR_LE;
    default: return k;
    }
}

static ir_kind negate_cmp(ir_kind k) /* !(a k b) <=> a negate(k) b, integers */
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

static bool is_cmp(ir_kind k) { return k >= IR_EQ && k <= IR_GE; }

/* Narrow the range of a variable given "side k other" (side = v or v*c). */
static void narrow(simp *s, const ir_expr *side, ir_kind k, const ir_expr *other)
{
    int64_t c = 1;
    if (side->kind == IR_MUL && side->bin.a->kind == IR_VAR && is_const_int(side->bin.b, &c) && c > 0)
        side = side->bin.a;
    if (side->kind != IR_VAR || side->dtype != SMELT_DT_INT64) return;
    tir_interval o = tir_bounds(other, &s->scope), cur = tir_bounds(side, &s->scope), lim;
    lim = tir_interval_everything();
    int64_t t;
    bool upper = k == IR_LT || k == IR_LE || k == IR_EQ, lower = k == IR_GT || k == IR_GE || k == IR_EQ;
    if (upper && !o.hi_inf && !__builtin_sub_overflow(o.hi, k == IR_LT, &t))
        lim.hi = tir_floordiv_i64(t, c), lim.hi_inf = false;
    if (lower && !o.lo_inf && !__builtin_add_overflow(o.lo, k == IR_GT, &t)) {
        int64_t q = tir_floordiv_i64(t, c);
        lim.lo = tir_floormod_i64(t, c) == 0 ? q : q + 1; /* ceil(t / c) */
        lim.lo_inf = false;
    }
    if (lim.lo_inf && lim.hi_inf) return;
    tir_scope_push(&s->scope, side->var, tir_interval_intersect(cur, lim));
}

/* Push what is known when cond evaluates to `truth`. */
static void assume(simp *s, const ir_expr *c, bool truth)
{
    if (!c) return;
    if ((c->kind == IR_AND && truth) || (c->kind == IR_OR && !truth)) {
        assume(s, c->bin.a, truth);
        assume(s, c->bin.b, truth);
    } else if (c->kind == IR_NOT) {
        assume(s, c->bin.a, !truth);
    } else if (c->kind == IR_VAR && c->dtype == SMELT_DT_BOOL) {
        tir_scope_push(&s->scope, c->var, tir_interval_point(truth));
    } else if (is_cmp(c->kind) && is_index(c->bin.a)) {
        ir_kind k = truth ? c->kind : negate_cmp(c->kind);
        if (k == IR_NE) return;
        narrow(s, c->bin.a, k, c->bin.b);
        narrow(s, c->bin.b, flip_cmp(k), c->bin.a);
    }
}

/* int64 comparison as "positive terms <k> rest", e.g. 0 <= x - 1 -> x >= 1. */
static ir_expr *canon_compare(simp *s, ir_expr *e, ir_expr *a, ir_expr *c)
{
    tir_affine f, lhs, rhs;
    tir_affine_init(&f);
    tir_affine_init(&lhs);
    tir_affine_init(&rhs);
    tir_affine_add_expr(&f, a, 1);
    tir_affine_add_expr(&f, c, -1);
    tir_affine_normalize(&f);
    ir_kind k = e->kind;
    bool any_pos = false;
    for (int i = 0; i < f.n; i++) any_pos |= f.terms[i].coef > 0;
    int64_t sign = any_pos ? 1 : -1;
    if (!any_pos) k = flip_cmp(k);
    for (int i = 0; i < f.n && !f.failed; i++) {
        int64_t v = f.terms[i].coef;
        if (v == INT64_MIN) f.failed = true;
        else if (v * sign > 0) tir_affine_add_term(&lhs, f.terms[i].atom, v * sign);
        else tir_affine_add_term(&rhs, f.terms[i].atom, -v * sign);
    }
    if (f.k == INT64_MIN) f.failed = true;
    else tir_affine_add_const(&rhs, -f.k * sign);
    ir_expr *r = NULL;
    if (!f.failed && !lhs.failed && !rhs.failed) {
        r = ir_binary(s->b, k, emit(s, &lhs), emit(s, &rhs));
        r = r ? same_or(e, r) : NULL;
    } else {
        r = rebuild_bin(s, e, a, c);
    }
    tir_affine_fini(&f);
    tir_affine_fini(&lhs);
    tir_affine_fini(&rhs);
    return r;
}

static ir_expr *simp_compare(simp *s, ir_expr *e)
{
    ir_expr *a = simp_expr(s, e->bin.a), *c = simp_expr(s, e->bin.b), *r;
    if (!a || !c) return NULL;
    if ((r = fold_binary(s, e->kind, SMELT_DT_BOOL, a, c))) return r;
    if (is_int_dt(a)) {
        tir_truth t = tir_prove_compare(e->kind, a, c, &s->scope);
        if (t != TIR_UNKNOWN) return mk_bool(s, t == TIR_TRUE);
        ir_expr *rb = is_index(a) ? rebuild_bin(s, e, a, c) : NULL;
        if (is_index(a)) return rb ? canon_compare(s, rb, a, c) : NULL;
    }
    return rebuild_bin(s, e, a, c);
}

/* No facts from one operand are used to simplify the other, nor from a
 * select's condition in its branches: both may be evaluated eagerly by
 * codegen (vector code), so e.g. a clamped index must stay clamped. */
static ir_expr *simp_logic(simp *s, ir_expr *e)
{
    bool is_and = e->kind == IR_AND;
    ir_expr *a = simp_expr(s, e->bin.a);
    if (!a) return NULL;
    if (a->kind == IR_INT) return (a->i != 0) == is_and ? simp_expr(s, e->bin.b) : mk_bool(s, !is_and);
    ir_expr *c = simp_expr(s, e->bin.b);
    if (!c) return NULL;
    if (c->kind == IR_INT) return (c->i != 0) == is_and ? a : mk_bool(s, !is_and);
    if (ir_expr_equal(a, c)) return a;
    ir_expr *r = rebuild_bin(s, e, a, c);
    if (!r) return NULL;
    tir_truth t = tir_prove(r, &s->scope);
    return t == TIR_UNKNOWN ? r : mk_bool(s, t == TIR_TRUE);
}

static ir_expr *simp_not(simp *s, ir_expr *e)
{
    ir_expr *a = simp_expr(s, e->bin.a);
    if (!a) return NULL;
    if (a->kind == IR_INT) return mk_bool(s, a->i == 0);
    if (a->kind == IR_NOT) return a->bin.a;
    if (is_cmp(a->kind) && is_int_dt(a->bin.a)) {
        ir_expr *n = ir_binary(s->b, negate_cmp(a->kind), a->bin.a, a->bin.b);
        return n ? simp_compare(s, n) : NULL;
    }
    return a == e->bin.a ? e : ir_not(s->b, a);
}

static ir_expr *simp_select(simp *s, ir_expr *e)
{
    ir_expr *c = simp_expr(s, e->select.cond);
    if (!c) return NULL;
    tir_truth t = c->kind == IR_INT ? (c->i != 0 ? TIR_TRUE : TIR_FALSE) : tir_prove(c, &s->scope);
    if (t != TIR_UNKNOWN) return simp_expr(s, t == TIR_TRUE ? e->select.t : e->select.f);
    ir_expr *tv = simp_expr(s, e->select.t), *fv = simp_expr(s, e->select.f);
    if (!tv || !fv) return NULL;
    if (ir_expr_equal(tv, fv)) return tv;
    if (e->dtype == SMELT_DT_BOOL && ir_is_int(tv, 1) && ir_is_int(fv, 0)) return c;
    if (c == e->select.cond && tv == e->select.t && fv == e->select.f) return e;
    return ir_select(s->b, c, tv, fv);
}

/* ---- casts and calls ---- */

static ir_expr *fold_cast(simp *s, smelt_dtype dt, const ir_expr *a)
{
    if (a->kind == IR_INT && tir_dtype_is_int(dt)) return mk_int(s, dt, tir_wrap_int(dt, (uint64_t)a->i));
    if (a->kind == IR_INT && (dt == SMELT_DT_FLOAT32 || dt == SMELT_DT_FLOAT64)) {
        bool u = a->dtype == SMELT_DT_UINT64;
        double v = dt == SMELT_DT_FLOAT32 ? (double)(u ? (float)(uint64_t)a->i : (float)a->i)
                                          : (u ? (double)(uint64_t)a->i : (double)a->i);
        return ir_const_float(s->b, dt, v);
    }
    if (a->kind != IR_FLOAT) return NULL;
    if (dt == SMELT_DT_FLOAT32 || dt == SMELT_DT_FLOAT64) return ir_const_float(s->b, dt, tir_round_float(dt, a->f));
    if (dt == SMELT_DT_BOOL) return mk_bool(s, a->f != 0);
    double t = trunc(a->f);
    if (!tir_dtype_is_int(dt) || dt == SMELT_DT_UINT64 || !(t >= -9.2e18 && t <= 9.2e18)) return NULL;
    int64_t v = (int64_t)t;
    if (v < tir_dtype_min(dt) || v > tir_dtype_max(dt)) return NULL;
    return mk_int(s, dt, v);
}

static ir_expr *simp_cast(simp *s, ir_expr *e)
{
    ir_expr *a = simp_expr(s, e->bin.a), *r;
    if (!a) return NULL;
    if (a->dtype == e->dtype) return a;
    if ((r = fold_cast(s, e->dtype, a))) return r;
    /* T(U(x)) with x of type T whose range fits U: x. */
    if (a->kind == IR_CAST && a->bin.a->dtype == e->dtype && tir_dtype_is_int(e->dtype) &&
        tir_dtype_is_int(a->dtype) && a->dtype != SMELT_DT_UINT64) {
        tir_interval iv = tir_bounds(a->bin.a, &s->scope);
        if (tir_interval_is_bounded(iv) && iv.lo >= tir_dtype_min(a->dtype) && iv.hi <= tir_dtype_max(a->dtype))
            return a->bin.a;
    }
    return a == e->bin.a ? e : ir_cast(s->b, e->dtype, a);
}

static ir_expr *fold_call(simp *s, const ir_expr *e, ir_expr *const *args)
{
    if (e->call.n != 1 || args[0]->kind != IR_FLOAT) return NULL;
    smelt_dtype dt = args[0]->dtype;
    double x = args[0]->f, v;
    if (dt != SMELT_DT_FLOAT32 && dt != SMELT_DT_FLOAT64) return NULL;
    switch (e->call.op) {
    case IR_CALL_ABS: v = fabs(x); break;
    case IR_CALL_FLOOR: v = floor(x); break;
    case IR_CALL_CEIL: v = ceil(x); break;
    case IR_CALL_ROUND: v = nearbyint(x); break;
    case IR_CALL_SQRT: v = dt == SMELT_DT_FLOAT32 ? sqrtf((float)x) : sqrt(x); break;
    case IR_CALL_ISNAN:
    case IR_CALL_ISINF:
        if (!tir_dtype_is_int(e->dtype)) return NULL;
        return mk_int(s, e->dtype, e->call.op == IR_CALL_ISNAN ? isnan(x) != 0 : isinf(x) != 0);
    default: return NULL;
    }
    return e->dtype == dt ? ir_const_float(s->b, dt, v) : NULL;
}

static ir_expr *simp_call(simp *s, ir_expr *e)
{
    ir_expr *args[3];
    bool changed = false;
    for (int i = 0; i < e->call.n; i++) {
        if (!(args[i] = simp_expr(s, e->call.args[i]))) return NULL;
        changed |= args[i] != e->call.args[i];
    }
    ir_expr *r = fold_call(s, e, args);
    if (r) return r;
    return changed ? ir_call(s->b, e->call.op, e->dtype, e->call.n, args) : e;
}

/* Simplify n expressions; *out is src itself when none changed. */
static bool simp_list(simp *s, int n, ir_expr **src, ir_expr ***out)
{
    ir_expr *tmp[SMELT_MAX_RANK * 2], **dst = tmp;
    if (n > (int)SMELT_ARRAY_LEN(tmp) && !(dst = smelt_arena_alloc(s->b->arena, sizeof(ir_expr *) * (size_t)n)))
        return s->b->failed = true, false;
    bool changed = false;
    for (int i = 0; i < n; i++) {
        if (!(dst[i] = simp_expr(s, src[i]))) return false;
        changed |= dst[i] != src[i];
    }
    *out = src;
    if (changed) {
        ir_expr **copy = smelt_arena_alloc(s->b->arena, sizeof(ir_expr *) * (size_t)(n ? n : 1));
        if (!copy) return s->b->failed = true, false;
        for (int i = 0; i < n; i++) copy[i] = dst[i];
        *out = copy;
    }
    return true;
}

static ir_expr *simp_load(simp *s, ir_expr *e)
{
    ir_expr **idx;
    if (!simp_list(s, e->load.n, e->load.idx, &idx)) return NULL;
    return idx == e->load.idx ? e : ir_load(s->b, e->load.buf, e->load.n, idx);
}

static ir_expr *simp_reduce(simp *s, ir_expr *e)
{
    int mark = tir_scope_mark(&s->scope);
    for (int i = 0; i < e->reduce.n_axes; i++)
        if (e->reduce.axes[i].extent > 0)
            tir_scope_push_range(&s->scope, e->reduce.axes[i].var, 0, e->reduce.axes[i].extent - 1);
    ir_expr *src = simp_expr(s, e->reduce.src);
    tir_scope_pop_to(&s->scope, mark);
    if (!src) return NULL;
    return src == e->reduce.src ? e : ir_reduce(s->b, e->reduce.op, src, e->reduce.n_axes, e->reduce.axes);
}

static ir_expr *simp_var(simp *s, ir_expr *e)
{
    tir_interval iv;
    int64_t v;
    if (is_int_dt(e) && tir_scope_lookup(&s->scope, e->var, &iv) && tir_interval_is_point(iv, &v))
        return mk_int(s, e->dtype, v);
    return e;
}

static ir_expr *simp_expr(simp *s, ir_expr *e)
{
    if (!e) return NULL;
    switch (e->kind) {
    case IR_INT:
    case IR_FLOAT: return e;
    case IR_VAR: return simp_var(s, e);
    case IR_ADD:
    case IR_SUB:
    case IR_MUL: return is_index(e) ? simp_affine(s, e) : simp_arith(s, e);
    case IR_DIV:
    case IR_MOD:
    case IR_FLOORDIV:
    case IR_FLOORMOD: return simp_div(s, e);
    case IR_MIN:
    case IR_MAX: return simp_minmax(s, e);
    case IR_BITAND:
    case IR_BITOR:
    case IR_BITXOR:
    case IR_SHL:
    case IR_SHR: return simp_arith(s, e); /* folds constants only */
    case IR_AND:
    case IR_OR: return simp_logic(s, e);
    case IR_NOT: return simp_not(s, e);
    case IR_SELECT: return simp_select(s, e);
    case IR_CAST: return simp_cast(s, e);
    case IR_CALL: return simp_call(s, e);
    case IR_LOAD: return simp_load(s, e);
    case IR_REDUCE: return simp_reduce(s, e);
    default: return is_cmp(e->kind) ? simp_compare(s, e) : e;
    }
}

/* ---- statements ---- */

bool tir_stmt_is_empty(const ir_stmt *s) { return !s || (s->kind == IR_STMT_SEQ && s->seq.n == 0); }

static ir_stmt *empty(simp *s) { return ir_seq(s->b, 0, NULL); }

static ir_stmt *simp_stmt(simp *s, ir_stmt *st);

static ir_stmt *simp_for(simp *s, ir_stmt *st)
{
    ir_expr *mn = simp_expr(s, st->for_.min), *ex = simp_expr(s, st->for_.extent);
    if (!mn || !ex) return NULL;
    tir_interval ext = tir_bounds(ex, &s->scope);
    if (!ext.hi_inf && ext.hi <= 0) return empty(s);
    if (ir_is_int(ex, 1)) {
        ir_subst sub = {st->for_.var, mn};
        return simp_stmt(s, ir_stmt_substitute(s->b, st->for_.body, &sub, 1));
    }
    int mark = tir_scope_mark(&s->scope);
    ir_stmt probe = *st;
    probe.for_.min = mn;
    probe.for_.extent = ex;
    tir_scope_push_for(&s->scope, &probe);
    ir_stmt *body = simp_stmt(s, st->for_.body);
    tir_scope_pop_to(&s->scope, mark);
    if (!body) return NULL;
    if (tir_stmt_is_empty(body)) return empty(s);
    if (mn == st->for_.min && ex == st->for_.extent && body == st->for_.body) return st;
    return ir_for(s->b, st->for_.var, mn, ex, st->for_.kind, body);
}

static ir_stmt *simp_seq(simp *s, ir_stmt *st)
{
    int n = st->seq.n;
    ir_stmt **items = NULL; /* allocated at the first change */
    for (int i = 0; i < n; i++) {
        ir_stmt *r = simp_stmt(s, st->seq.items[i]);
        if (!r) return NULL;
        if (r == st->seq.items[i] && !tir_stmt_is_empty(r) && !items) continue;
        if (!items) {
            items = smelt_arena_alloc(s->b->arena, sizeof(ir_stmt *) * (size_t)n);
            if (!items) return s->b->failed = true, NULL;
            for (int k = 0; k < i; k++) items[k] = st->seq.items[k];
        }
        items[i] = r;
    }
    return items ? ir_seq(s->b, n, items) : st;
}

static ir_stmt *simp_let(simp *s, ir_stmt *st)
{
    ir_expr *v = simp_expr(s, st->let.value);
    if (!v) return NULL;
    if (v->kind == IR_INT || v->kind == IR_FLOAT || v->kind == IR_VAR) {
        ir_subst sub = {st->let.var, v};
        return simp_stmt(s, ir_stmt_substitute(s->b, st->let.body, &sub, 1));
    }
    int mark = tir_scope_mark(&s->scope);
    if (is_int_dt(v)) tir_scope_push(&s->scope, st->let.var, tir_bounds(v, &s->scope));
    ir_stmt *body = simp_stmt(s, st->let.body);
    tir_scope_pop_to(&s->scope, mark);
    if (!body) return NULL;
    if (!ir_stmt_uses_var(body, st->let.var)) return body;
    if (v == st->let.value && body == st->let.body) return st;
    return ir_let(s->b, st->let.var, v, body);
}

static ir_stmt *simp_store(simp *s, ir_stmt *st)
{
    ir_expr **idx;
    if (!simp_list(s, st->store.n, st->store.idx, &idx)) return NULL;
    ir_expr *v = simp_expr(s, st->store.value);
    if (!v) return NULL;
    if (idx == st->store.idx && v == st->store.value) return st;
    return ir_store(s->b, st->store.buf, st->store.n, idx, v);
}

static ir_stmt *simp_branch(simp *s, ir_stmt *st, ir_expr *c, bool truth)
{
    if (!st) return NULL;
    int mark = tir_scope_mark(&s->scope);
    assume(s, c, truth);
    ir_stmt *r = simp_stmt(s, st);
    tir_scope_pop_to(&s->scope, mark);
    return r;
}

static ir_stmt *simp_if(simp *s, ir_stmt *st)
{
    ir_expr *c = simp_expr(s, st->if_.cond);
    if (!c) return NULL;
    tir_truth t = c->kind == IR_INT ? (c->i != 0 ? TIR_TRUE : TIR_FALSE) : tir_prove(c, &s->scope);
    if (t == TIR_TRUE) return simp_stmt(s, st->if_.then_);
    if (t == TIR_FALSE) return st->if_.else_ ? simp_stmt(s, st->if_.else_) : empty(s);
    ir_stmt *then_ = simp_branch(s, st->if_.then_, c, true);
    ir_stmt *else_ = simp_branch(s, st->if_.else_, c, false);
    if (!then_ || (st->if_.else_ && !else_)) return NULL;
    if (tir_stmt_is_empty(else_)) else_ = NULL;
    if (tir_stmt_is_empty(then_)) {
        if (!else_) return empty(s);
        ir_expr *nc = ir_not(s->b, c);
        return ir_if(s->b, nc ? simp_not(s, nc) : NULL, else_, NULL);
    }
    if (c == st->if_.cond && then_ == st->if_.then_ && else_ == st->if_.else_) return st;
    return ir_if(s->b, c, then_, else_);
}

static ir_stmt *simp_call_stmt(simp *s, ir_stmt *st)
{
    int n = st->call.n;
    ir_call_arg *args = smelt_arena_alloc(s->b->arena, sizeof(ir_call_arg) * (size_t)(n ? n : 1));
    if (!args) return s->b->failed = true, NULL;
    bool changed = false;
    for (int i = 0; i < n; i++) {
        args[i] = st->call.args[i];
        if (!(args[i].index = simp_expr(s, st->call.args[i].index))) return NULL;
        changed |= args[i].index != st->call.args[i].index;
    }
    return changed ? ir_call_stmt(s->b, st->call.kernel, n, args) : st;
}

/* A check that always holds is dropped. */
static ir_stmt *simp_check(simp *s, ir_stmt *st)
{
    ir_expr *c = simp_expr(s, st->check.cond), *v = simp_expr(s, st->check.value);
    ir_expr *p = simp_expr(s, st->check.position);
    if (!c || !v || !p) return NULL;
    tir_truth t = c->kind == IR_INT ? (c->i != 0 ? TIR_TRUE : TIR_FALSE) : tir_prove(c, &s->scope);
    if (t == TIR_TRUE) return empty(s);
    if (c == st->check.cond && v == st->check.value && p == st->check.position) return st;
    return ir_check(s->b, c, v, p, st->check.site);
}

static ir_stmt *simp_stmt(simp *s, ir_stmt *st)
{
    if (!st) return NULL;
    switch (st->kind) {
    case IR_STMT_FOR: return simp_for(s, st);
    case IR_STMT_SEQ: return simp_seq(s, st);
    case IR_STMT_LET: return simp_let(s, st);
    case IR_STMT_STORE: return simp_store(s, st);
    case IR_STMT_ALLOCATE: {
        ir_stmt *body = simp_stmt(s, st->alloc.body);
        if (!body) return NULL;
        if (tir_stmt_is_empty(body)) return empty(s);
        return body == st->alloc.body ? st : ir_allocate(s->b, st->alloc.buf, body);
    }
    case IR_STMT_IF: return simp_if(s, st);
    case IR_STMT_CALL: return simp_call_stmt(s, st);
    case IR_STMT_CHECK: return simp_check(s, st);
    default: return st;
    }
}

/* ---- entry points ---- */

ir_stmt *tir_simplify_stmt(ir_builder *b, ir_stmt *st, const tir_scope *ranges)
{
    simp s = {.b = b};
    tir_scope_init(&s.scope, ranges);
    ir_stmt *r = simp_stmt(&s, st);
    tir_scope_fini(&s.scope);
    return r;
}

ir_stmt *tir_simplify(ir_builder *b, ir_stmt *st) { return tir_simplify_stmt(b, st, NULL); }

ir_expr *tir_simplify_expr(ir_builder *b, ir_expr *e, const tir_scope *ranges)
{
    simp s = {.b = b};
    tir_scope_init(&s.scope, ranges);
    ir_expr *r = simp_expr(&s, e);
    tir_scope_fini(&s.scope);
    return r;
}
