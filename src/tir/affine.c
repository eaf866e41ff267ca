/* Affine forms of int64 index expressions (see affine.h). */
#include <stdlib.h>
#include <string.h>

#include "tir/affine.h"

void tir_affine_init(tir_affine *f)
{
    f->terms = f->small;
    f->n = 0;
    f->cap = TIR_AFFINE_INLINE_TERMS;
    f->k = 0;
    f->failed = false;
}

void tir_affine_fini(tir_affine *f)
{
    if (f->terms != f->small) smelt_free(f->terms);
    tir_affine_init(f);
}

static bool grow(tir_affine *f)
{
    int cap = f->cap * 2;
    tir_term *t = smelt_alloc(sizeof(tir_term) * (size_t)cap);
    if (!t) return false;
    memcpy(t, f->terms, sizeof(tir_term) * (size_t)f->n);
    if (f->terms != f->small) smelt_free(f->terms);
    f->terms = t;
    f->cap = cap;
    return true;
}

void tir_affine_clear(tir_affine *f)
{
    f->n = 0;
    f->k = 0;
    f->failed = false;
}

void tir_affine_add_const(tir_affine *f, int64_t c)
{
    if (__builtin_add_overflow(f->k, c, &f->k)) f->failed = true;
}

void tir_affine_add_term(tir_affine *f, ir_expr *atom, int64_t coef)
{
    if (!atom) f->failed = true; /* a failed builder's result */
    if (f->failed || coef == 0) return;
    for (int i = 0; i < f->n; i++) {
        if (!ir_expr_equal(f->terms[i].atom, atom)) continue;
        if (__builtin_add_overflow(f->terms[i].coef, coef, &f->terms[i].coef)) f->failed = true;
        return;
    }
    if (f->n == f->cap && !grow(f)) {
        f->failed = true;
        return;
    }
    f->terms[f->n++] = (tir_term){atom, coef};
}

static bool scale(tir_affine *f, int64_t coef, int64_t c, int64_t *out)
{
    if (__builtin_mul_overflow(coef, c, out)) f->failed = true;
    return !f->failed;
}

void tir_affine_add_expr(tir_affine *f, ir_expr *e, int64_t coef)
{
    int64_t c;
    if (f->failed || !e) {
        f->failed = true;
        return;
    }
    if (e->dtype != SMELT_DT_INT64) {
        tir_affine_add_term(f, e, coef);
        return;
    }
    switch (e->kind) {
    case IR_INT:
        if (scale(f, coef, e->i, &c)) tir_affine_add_const(f, c);
        return;
    case IR_ADD:
        tir_affine_add_expr(f, e->bin.a, coef);
        tir_affine_add_expr(f, e->bin.b, coef);
        return;
    case IR_SUB:
        if (coef == INT64_MIN) break;
        tir_affine_add_expr(f, e->bin.a, coef);
        tir_affine_add_expr(f, e->bin.b, -coef);
        return;
    case IR_MUL:
        if (e->bin.b->kind == IR_INT) {
            if (scale(f, coef, e->bin.b->i, &c)) tir_affine_add_expr(f, e->bin.a, c);
            return;
        }
        if (e->bin.a->kind == IR_INT) {
            if (scale(f, coef, e->bin.a->i, &c)) tir_affine_add_expr(f, e->bin.b, c);
            return;
        }
        break;
    default: break;
    }
    tir_affine_add_term(f, e, coef);
}

static uint64_t magnitude(int64_t v) { return v < 0 ? 0 - (uint64_t)v : (uint64_t)v; }

static int term_compare(const void *pa, const void *pb)
{
    const tir_term *a = pa, *b = pb;
    uint64_t ma = magnitude(a->coef), mb = magnitude(b->coef);
    if (ma != mb) return ma > mb ? -1 : 1;
    int c = tir_expr_compare(a->atom, b->atom);
    if (c) return c;
    return (a->coef > b->coef) - (a->coef < b->coef);
}

void tir_affine_normalize(tir_affine *f)
{
    int n = 0;
    for (int i = 0; i < f->n; i++)
        if (f->terms[i].coef != 0) f->terms[n++] = f->terms[i];
    f->n = n;
    if (n > 1) qsort(f->terms, (size_t)n, sizeof(tir_term), term_compare);
}

static ir_expr *scaled(ir_builder *b, const tir_term *t, int64_t coef)
{
    return coef == 1 ? t->atom : ir_mul(b, t->atom, ir_int(b, coef));
}

/* acc + coef*atom written with "-" for negative coefficients. */
static ir_expr *accumulate(ir_builder *b, ir_expr *acc, const tir_term *t)
{
    if (!acc) return scaled(b, t, t->coef);
    if (t->coef < 0 && t->coef != INT64_MIN) return ir_sub(b, acc, scaled(b, t, -t->coef));
    return ir_add(b, acc, scaled(b, t, t->coef));
}

ir_expr *tir_affine_emit(ir_builder *b, const tir_affine *f)
{
    ir_expr *acc = NULL;
    for (int i = 0; i < f->n; i++)
        if (f->terms[i].coef > 0) acc = accumulate(b, acc, &f->terms[i]);
    if (!acc && f->k > 0) acc = ir_int(b, f->k);
    for (int i = 0; i < f->n; i++)
        if (f->terms[i].coef < 0) acc = accumulate(b, acc, &f->terms[i]);
    if (!acc) return ir_int(b, f->k);
    bool any_pos = false;
    for (int i = 0; i < f->n; i++) any_pos |= f->terms[i].coef > 0;
    if (f->k == 0 || (f->k > 0 && !any_pos)) return acc;
    if (f->k < 0 && f->k != INT64_MIN) return ir_sub(b, acc, ir_int(b, -f->k));
    return ir_add(b, acc, ir_int(b, f->k));
}

int64_t tir_affine_coef(const tir_affine *f, const ir_var *v)
{
    for (int i = 0; i < f->n; i++)
        if (f->terms[i].atom->kind == IR_VAR && f->terms[i].atom->var == v) return f->terms[i].coef;
    return 0;
}

bool tir_affine_var_in_atoms(const tir_affine *f, const ir_var *v)
{
    for (int i = 0; i < f->n; i++) {
        const ir_expr *a = f->terms[i].atom;
        if (a->kind != IR_VAR && ir_expr_uses_var(a, v)) return true;
    }
    return false;
}

/* ---- intervals ---- */

tir_interval tir_interval_add(tir_interval a, tir_interval b)
{
    tir_interval r = {0, 0, a.lo_inf || b.lo_inf, a.hi_inf || b.hi_inf};
    if (!r.lo_inf && __builtin_add_overflow(a.lo, b.lo, &r.lo)) r.lo_inf = true;
    if (!r.hi_inf && __builtin_add_overflow(a.hi, b.hi, &r.hi)) r.hi_inf = true;
    return r;
}

tir_interval tir_interval_mul_const(tir_interval a, int64_t c)
{
    if (c == 0) return tir_interval_point(0);
    tir_interval r;
    if (c > 0) {
        r = (tir_interval){0, 0, a.lo_inf, a.hi_inf};
        if (!r.lo_inf && __builtin_mul_overflow(a.lo, c, &r.lo)) r.lo_inf = true;
        if (!r.hi_inf && __builtin_mul_overflow(a.hi, c, &r.hi)) r.hi_inf = true;
    } else {
        r = (tir_interval){0, 0, a.hi_inf, a.lo_inf};
        if (!r.lo_inf && __builtin_mul_overflow(a.hi, c, &r.lo)) r.lo_inf = true;
        if (!r.hi_inf && __builtin_mul_overflow(a.lo, c, &r.hi)) r.hi_inf = true;
    }
    return r;
}

tir_interval tir_affine_bounds(const tir_affine *f, const tir_scope *scope)
{
    if (f->failed) return tir_interval_everything();
    tir_interval r = tir_interval_point(f->k);
    for (int i = 0; i < f->n && !(r.lo_inf && r.hi_inf); i++) {
        tir_interval t = tir_bounds(f->terms[i].atom, scope);
        r = tir_interval_add(r, tir_interval_mul_const(t, f->terms[i].coef));
    }
    return r;
}

/* ---- total order ---- */

static int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

static int cmp_var(const ir_var *a, const ir_var *b)
{
    if (a == b) return 0;
    int c = cmp_i64(a->id, b->id);
    return c ? c : strcmp(a->name, b->name);
}

static int cmp_list(int na, ir_expr *const *a, int nb, ir_expr *const *b)
{
    if (na != nb) return cmp_i64(na, nb);
    for (int i = 0; i < na; i++) {
        int c = tir_expr_compare(a[i], b[i]);
        if (c) return c;
    }
    return 0;
}

static int cmp_same_kind(const ir_expr *a, const ir_expr *b)
{
    switch (a->kind) {
    case IR_INT: return cmp_i64(a->i, b->i);
    case IR_FLOAT: return (a->f > b->f) - (a->f < b->f);
    case IR_VAR: return cmp_var(a->var, b->var);
    case IR_NOT:
    case IR_CAST: return tir_expr_compare(a->bin.a, b->bin.a);
    case IR_SELECT: {
        ir_expr *la[3] = {a->select.cond, a->select.t, a->select.f};
        ir_expr *lb[3] = {b->select.cond, b->select.t, b->select.f};
        return cmp_list(3, la, 3, lb);
    }
    case IR_CALL:
        if (a->call.op != b->call.op) return cmp_i64(a->call.op, b->call.op);
        return cmp_list(a->call.n, a->call.args, b->call.n, b->call.args);
    case IR_LOAD:
        if (a->load.buf != b->load.buf) {
            int c = cmp_i64(a->load.buf->id, b->load.buf->id);
            if (c) return c;
            c = strcmp(a->load.buf->name, b->load.buf->name);
            if (c) return c;
        }
        return cmp_list(a->load.n, a->load.idx, b->load.n, b->load.idx);
    case IR_REDUCE:
        if (a->reduce.op != b->reduce.op) return cmp_i64(a->reduce.op, b->reduce.op);
        if (a->reduce.n_axes != b->reduce.n_axes) return cmp_i64(a->reduce.n_axes, b->reduce.n_axes);
        for (int i = 0; i < a->reduce.n_axes; i++) {
            int c = cmp_var(a->reduce.axes[i].var, b->reduce.axes[i].var);
            if (c) return c;
        }
        return tir_expr_compare(a->reduce.src, b->reduce.src);
    default: {
        int c = tir_expr_compare(a->bin.a, b->bin.a);
        return c ? c : tir_expr_compare(a->bin.b, b->bin.b);
    }
    }
}

int tir_expr_compare(const ir_expr *a, const ir_expr *b)
{
    if (a == b) return 0;
    if (!a || !b) return a ? 1 : -1;
    if (a->kind != b->kind) return cmp_i64(a->kind, b->kind);
    if (a->dtype != b->dtype) return cmp_i64(a->dtype, b->dtype);
    return cmp_same_kind(a, b);
}
