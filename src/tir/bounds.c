/* Interval analysis and the prover (see bounds.h). */
#include <string.h>

#include "tir/bounds.h"
#include "tir/affine.h"
#include "tir/scalar.h"

/* ---- intervals ---- */

tir_interval tir_interval_everything(void) { return (tir_interval){0, 0, true, true}; }
tir_interval tir_interval_range(int64_t lo, int64_t hi) { return (tir_interval){lo, hi, false, false}; }
tir_interval tir_interval_point(int64_t v) { return tir_interval_range(v, v); }

bool tir_interval_is_point(tir_interval iv, int64_t *v)
{
    if (iv.lo_inf || iv.hi_inf || iv.lo != iv.hi) return false;
    if (v) *v = iv.lo;
    return true;
}

bool tir_interval_is_bounded(tir_interval iv) { return !iv.lo_inf && !iv.hi_inf; }

tir_interval tir_interval_intersect(tir_interval a, tir_interval b)
{
    tir_interval r = a;
    if (!b.lo_inf && (r.lo_inf || b.lo > r.lo)) r.lo = b.lo, r.lo_inf = false;
    if (!b.hi_inf && (r.hi_inf || b.hi < r.hi)) r.hi = b.hi, r.hi_inf = false;
    return r;
}

tir_interval tir_interval_union(tir_interval a, tir_interval b)
{
    tir_interval r = a;
    r.lo_inf = a.lo_inf || b.lo_inf;
    r.hi_inf = a.hi_inf || b.hi_inf;
    if (!r.lo_inf) r.lo = a.lo < b.lo ? a.lo : b.lo;
    if (!r.hi_inf) r.hi = a.hi > b.hi ? a.hi : b.hi;
    return r;
}

static tir_interval iv_neg(tir_interval a) { return tir_interval_mul_const(a, -1); }
static tir_interval iv_sub(tir_interval a, tir_interval b) { return tir_interval_add(a, iv_neg(b)); }

static tir_interval iv_min(tir_interval a, tir_interval b)
{
    tir_interval r;
    r.lo_inf = a.lo_inf || b.lo_inf;
    r.lo = r.lo_inf ? 0 : (a.lo < b.lo ? a.lo : b.lo);
    r.hi_inf = a.hi_inf && b.hi_inf;
    r.hi = a.hi_inf ? b.hi : b.hi_inf ? a.hi : (a.hi < b.hi ? a.hi : b.hi);
    return r;
}

static tir_interval iv_max(tir_interval a, tir_interval b)
{
    return iv_neg(iv_min(iv_neg(a), iv_neg(b)));
}

/* General product: exact corners when both are bounded. */
static tir_interval iv_mul(tir_interval a, tir_interval b)
{
    int64_t c;
    if (tir_interval_is_point(b, &c)) return tir_interval_mul_const(a, c);
    if (tir_interval_is_point(a, &c)) return tir_interval_mul_const(b, c);
    if (!tir_interval_is_bounded(a) || !tir_interval_is_bounded(b)) {
        bool nonneg = !a.lo_inf && a.lo >= 0 && !b.lo_inf && b.lo >= 0;
        if (!nonneg) return tir_interval_everything();
        tir_interval r = {0, 0, false, true};
        if (__builtin_mul_overflow(a.lo, b.lo, &r.lo)) return tir_interval_everything();
        return r;
    }
    int64_t xs[2] = {a.lo, a.hi}, ys[2] = {b.lo, b.hi}, p;
    tir_interval r = {INT64_MAX, INT64_MIN, false, false};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            if (__builtin_mul_overflow(xs[i], ys[j], &p)) return tir_interval_everything();
            if (p < r.lo) r.lo = p;
            if (p > r.hi) r.hi = p;
        }
    return r;
}

static int64_t trunc_div(int64_t a, int64_t b) { return b == -1 ? (a == INT64_MIN ? a : -a) : a / b; }

/* x / d for a monotone division op (floor or trunc) by a constant d != 0. */
static tir_interval iv_div_const(tir_interval x, int64_t d, bool floor_div)
{
    if (d == -1) return iv_neg(x);
    int64_t lo = x.lo_inf ? 0 : floor_div ? tir_floordiv_i64(x.lo, d) : trunc_div(x.lo, d);
    int64_t hi = x.hi_inf ? 0 : floor_div ? tir_floordiv_i64(x.hi, d) : trunc_div(x.hi, d);
    if (d > 0) return (tir_interval){lo, hi, x.lo_inf, x.hi_inf};
    return (tir_interval){hi, lo, x.hi_inf, x.lo_inf};
}

/* x / d, d ranging over a positive bounded interval, x >= 0 or floor division. */
static tir_interval iv_div_pos(tir_interval x, tir_interval d, bool floor_div)
{
    if (!floor_div && (x.lo_inf || x.lo < 0)) return tir_interval_everything();
    tir_interval a = iv_div_const(x, d.lo, true), c = iv_div_const(x, d.hi, true);
    return tir_interval_union(a, c);
}

static tir_interval iv_div(tir_interval x, tir_interval d, bool floor_div)
{
    int64_t c;
    if (tir_interval_is_point(d, &c) && c != 0) return iv_div_const(x, c, floor_div);
    if (tir_interval_is_bounded(d) && d.lo > 0) return iv_div_pos(x, d, floor_div);
    return tir_interval_everything();
}

static tir_interval iv_floormod(tir_interval x, tir_interval d)
{
    int64_t c;
    if (tir_interval_is_point(d, &c) && c > 0 && tir_interval_is_bounded(x) &&
        tir_floordiv_i64(x.lo, c) == tir_floordiv_i64(x.hi, c)) {
        int64_t r = tir_floormod_i64(x.lo, c); /* x.lo - q*c without overflow */
        return tir_interval_range(r, r + (x.hi - x.lo));
    }
    if (!d.lo_inf && d.lo > 0) {
        tir_interval r = {0, d.hi - 1, false, d.hi_inf};
        if (!x.lo_inf && x.lo >= 0) r = tir_interval_intersect(r, (tir_interval){0, x.hi, false, x.hi_inf});
        return r;
    }
    if (!d.hi_inf && d.hi < 0 && !d.lo_inf) return tir_interval_range(d.lo + 1, 0);
    return tir_interval_everything();
}

/* C remainder: sign of the dividend, magnitude below |d| and at most |x|. */
static tir_interval iv_mod(tir_interval x, tir_interval d)
{
    if (!x.lo_inf && x.lo >= 0 && !d.lo_inf && d.lo > 0) return iv_floormod(x, d);
    if (!tir_interval_is_bounded(d) || d.lo == INT64_MIN) return tir_interval_everything();
    int64_t m = d.hi > -d.lo ? d.hi : -d.lo;
    if (m <= 0) return tir_interval_everything();
    tir_interval r = tir_interval_range(-(m - 1), m - 1);
    if (!x.lo_inf) r.lo = x.lo >= 0 ? 0 : (x.lo > r.lo ? x.lo : r.lo);
    if (!x.hi_inf) r.hi = x.hi <= 0 ? 0 : (x.hi < r.hi ? x.hi : r.hi);
    return r;
}

/* ---- scope ---- */

void tir_scope_init(tir_scope *s, const tir_scope *parent)
{
    s->items = s->small;
    s->len = 0;
    s->cap = TIR_SCOPE_INLINE_FACTS;
    s->parent = parent;
}

void tir_scope_fini(tir_scope *s)
{
    if (s->items != s->small) smelt_free(s->items);
    s->items = s->small;
    s->len = 0;
    s->cap = TIR_SCOPE_INLINE_FACTS;
}

bool tir_scope_push(tir_scope *s, const ir_var *v, tir_interval iv)
{
    if (s->len == s->cap) {
        int cap = s->cap * 2;
        tir_scope_entry *items = smelt_alloc(sizeof(tir_scope_entry) * (size_t)cap);
        if (!items) return false;
        memcpy(items, s->items, sizeof(tir_scope_entry) * (size_t)s->len);
        if (s->items != s->small) smelt_free(s->items);
        s->items = items;
        s->cap = cap;
    }
    s->items[s->len++] = (tir_scope_entry){v, iv};
    return true;
}

bool tir_scope_push_range(tir_scope *s, const ir_var *v, int64_t lo, int64_t hi)
{
    return tir_scope_push(s, v, tir_interval_range(lo, hi));
}

bool tir_scope_push_for(tir_scope *s, const ir_stmt *f)
{
    tir_interval mn = tir_bounds(f->for_.min, s), ex = tir_bounds(f->for_.extent, s);
    tir_interval r = tir_interval_everything();
    if (!mn.lo_inf) r.lo = mn.lo, r.lo_inf = false;
    int64_t last;
    if (!mn.hi_inf && !ex.hi_inf && ex.hi >= 1 && !__builtin_add_overflow(mn.hi, ex.hi - 1, &last))
        r.hi = last, r.hi_inf = false;
    if (r.lo_inf && r.hi_inf) return true;
    return tir_scope_push(s, f->for_.var, r);
}

bool tir_scope_lookup(const tir_scope *s, const ir_var *v, tir_interval *out)
{
    for (; s; s = s->parent)
        for (int i = s->len - 1; i >= 0; i--)
            if (s->items[i].var == v) {
                *out = s->items[i].iv;
                return true;
            }
    return false;
}

/* ---- bounds ---- */

static tir_interval dtype_range(smelt_dtype dt)
{
    if (!tir_dtype_is_int(dt) || tir_dtype_bits(dt) == 64) return tir_interval_everything();
    return tir_interval_range(tir_dtype_min(dt), tir_dtype_max(dt));
}

/* Values of a narrow integer type that may have wrapped take the whole range. */
static tir_interval fit_dtype(tir_interval r, smelt_dtype dt)
{
    if (dt == SMELT_DT_UINT64 || !tir_dtype_is_int(dt)) return tir_interval_everything();
    if (tir_dtype_bits(dt) == 64) return r;
    tir_interval full = dtype_range(dt);
    if (r.lo_inf || r.hi_inf || r.lo < full.lo || r.hi > full.hi) return full;
    return r;
}

static tir_interval bounds_cast(const ir_expr *e, const tir_scope *scope)
{
    const ir_expr *a = e->bin.a;
    if (e->dtype == SMELT_DT_BOOL) {
        tir_truth t = tir_dtype_is_int(a->dtype) ? tir_prove(e, scope) : TIR_UNKNOWN;
        return t == TIR_UNKNOWN ? tir_interval_range(0, 1) : tir_interval_point(t);
    }
    if (!tir_dtype_is_int(a->dtype) || a->dtype == SMELT_DT_UINT64) return dtype_range(e->dtype);
    return fit_dtype(tir_bounds(a, scope), e->dtype);
}

static tir_interval bounds_binary(const ir_expr *e, const tir_scope *scope)
{
    tir_interval a = tir_bounds(e->bin.a, scope), b = tir_bounds(e->bin.b, scope);
    switch (e->kind) {
    case IR_ADD: return tir_interval_add(a, b);
    case IR_SUB: return iv_sub(a, b);
    case IR_MUL: return iv_mul(a, b);
    case IR_DIV: return iv_div(a, b, false);
    case IR_FLOORDIV: return iv_div(a, b, true);
    case IR_MOD: return iv_mod(a, b);
    case IR_FLOORMOD: return iv_floormod(a, b);
    case IR_MIN: return iv_min(a, b);
    case IR_MAX: return iv_max(a, b);
    default: return tir_interval_everything();
    }
}

static tir_interval bounds_affine(const ir_expr *e, const tir_scope *scope)
{
    tir_affine f;
    tir_affine_init(&f);
    tir_affine_add_expr(&f, (ir_expr *)e, 1);
    tir_interval r = tir_affine_bounds(&f, scope);
    tir_affine_fini(&f);
    return r;
}

static tir_interval bounds_int(const ir_expr *e, const tir_scope *scope)
{
    tir_interval r;
    switch (e->kind) {
    case IR_INT: return tir_interval_point(e->i);
    case IR_VAR:
        if (tir_scope_lookup(scope, e->var, &r)) return tir_interval_intersect(r, dtype_range(e->dtype));
        return dtype_range(e->dtype);
    case IR_SELECT: {
        tir_truth t = tir_prove(e->select.cond, scope);
        if (t != TIR_UNKNOWN) return tir_bounds(t ? e->select.t : e->select.f, scope);
        return tir_interval_union(tir_bounds(e->select.t, scope), tir_bounds(e->select.f, scope));
    }
    case IR_CAST: return bounds_cast(e, scope);
    case IR_MUL:
        /* a product of non-constants is an affine atom: never re-decompose */
        if (e->bin.a->kind != IR_INT && e->bin.b->kind != IR_INT) return bounds_binary(e, scope);
        /* fall through */
    case IR_ADD:
    case IR_SUB:
        if (e->dtype == SMELT_DT_INT64) return bounds_affine(e, scope);
        return bounds_binary(e, scope);
    default:
        if (e->kind >= IR_DIV && e->kind <= IR_MAX) return bounds_binary(e, scope);
        return dtype_range(e->dtype);
    }
}

tir_interval tir_bounds(const ir_expr *e, const tir_scope *scope)
{
    if (!e) return tir_interval_everything();
    if (e->dtype == SMELT_DT_BOOL && e->kind != IR_INT && e->kind != IR_VAR) {
        tir_truth t = tir_prove(e, scope);
        return t == TIR_UNKNOWN ? tir_interval_range(0, 1) : tir_interval_point(t);
    }
    if (!tir_dtype_is_int(e->dtype) || e->dtype == SMELT_DT_UINT64) return tir_interval_everything();
    return fit_dtype(bounds_int(e, scope), e->dtype);
}

/* ---- prover ---- */

static tir_truth decide(ir_kind k, tir_interval d)
{
    bool lo_pos = !d.lo_inf && d.lo > 0, lo_nonneg = !d.lo_inf && d.lo >= 0;
    bool hi_neg = !d.hi_inf && d.hi < 0, hi_nonpos = !d.hi_inf && d.hi <= 0;
    switch (k) {
    case IR_LT: return hi_neg ? TIR_TRUE : lo_nonneg ? TIR_FALSE : TIR_UNKNOWN;
    case IR_LE: return hi_nonpos ? TIR_TRUE : lo_pos ? TIR_FALSE : TIR_UNKNOWN;
    case IR_GT: return lo_pos ? TIR_TRUE : hi_nonpos ? TIR_FALSE : TIR_UNKNOWN;
    case IR_GE: return lo_nonneg ? TIR_TRUE : hi_neg ? TIR_FALSE : TIR_UNKNOWN;
    case IR_EQ: return (lo_nonneg && hi_nonpos) ? TIR_TRUE : (lo_pos || hi_neg) ? TIR_FALSE : TIR_UNKNOWN;
    case IR_NE: return (lo_nonneg && hi_nonpos) ? TIR_FALSE : (lo_pos || hi_neg) ? TIR_TRUE : TIR_UNKNOWN;
    default: return TIR_UNKNOWN;
    }
}

tir_truth tir_prove_compare(ir_kind k, const ir_expr *a, const ir_expr *b, const tir_scope *scope)
{
    if (!a || !b) return TIR_UNKNOWN;
    if (tir_dtype_is_float(a->dtype)) {
        double r;
        if (a->kind == IR_FLOAT && b->kind == IR_FLOAT && tir_fold_float(k, a->dtype, a->f, b->f, &r))
            return r != 0 ? TIR_TRUE : TIR_FALSE;
        return TIR_UNKNOWN;
    }
    if (!tir_dtype_is_int(a->dtype)) return TIR_UNKNOWN;
    if (ir_expr_equal(a, b)) return decide(k, tir_interval_point(0));
    if (a->dtype != SMELT_DT_INT64)
        return decide(k, iv_sub(tir_bounds(a, scope), tir_bounds(b, scope)));
    tir_affine f;
    tir_affine_init(&f);
    tir_affine_add_expr(&f, (ir_expr *)a, 1);
    tir_affine_add_expr(&f, (ir_expr *)b, -1);
    tir_interval d = tir_affine_bounds(&f, scope);
    tir_affine_fini(&f);
    return decide(k, d);
}

static tir_truth truth_not(tir_truth t) { return t == TIR_UNKNOWN ? t : t == TIR_TRUE ? TIR_FALSE : TIR_TRUE; }

tir_truth tir_prove(const ir_expr *e, const tir_scope *scope)
{
    if (!e) return TIR_UNKNOWN;
    switch (e->kind) {
    case IR_INT: return e->i != 0 ? TIR_TRUE : TIR_FALSE;
    case IR_NOT: return truth_not(tir_prove(e->bin.a, scope));
    case IR_AND: {
        tir_truth a = tir_prove(e->bin.a, scope);
        if (a == TIR_FALSE) return a;
        tir_truth b = tir_prove(e->bin.b, scope);
        return b == TIR_FALSE ? b : (a == TIR_TRUE && b == TIR_TRUE) ? TIR_TRUE : TIR_UNKNOWN;
    }
    case IR_OR: {
        tir_truth a = tir_prove(e->bin.a, scope);
        if (a == TIR_TRUE) return a;
        tir_truth b = tir_prove(e->bin.b, scope);
        return b == TIR_TRUE ? b : (a == TIR_FALSE && b == TIR_FALSE) ? TIR_FALSE : TIR_UNKNOWN;
    }
    case IR_EQ:
    case IR_NE:
    case IR_LT:
    case IR_LE:
    case IR_GT:
    case IR_GE: return tir_prove_compare(e->kind, e->bin.a, e->bin.b, scope);
    case IR_SELECT: {
        tir_truth c = tir_prove(e->select.cond, scope);
        if (c != TIR_UNKNOWN) return tir_prove(c ? e->select.t : e->select.f, scope);
        tir_truth t = tir_prove(e->select.t, scope);
        return t == tir_prove(e->select.f, scope) ? t : TIR_UNKNOWN;
    }
    case IR_VAR:
    case IR_CAST: {
        if (!tir_dtype_is_int(e->dtype) || (e->kind == IR_CAST && !tir_dtype_is_int(e->bin.a->dtype)))
            return TIR_UNKNOWN;
        tir_interval r = tir_bounds(e->kind == IR_CAST ? e->bin.a : e, scope);
        if (tir_interval_is_point(r, NULL) && r.lo == 0) return TIR_FALSE;
        if ((!r.lo_inf && r.lo > 0) || (!r.hi_inf && r.hi < 0)) return TIR_TRUE;
        return TIR_UNKNOWN;
    }
    default: return TIR_UNKNOWN;
    }
}
