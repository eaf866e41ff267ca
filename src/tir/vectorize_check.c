/* Legality of VECTORIZED loops (see vectorize_check.h). */
#include "tir/affine.h"
#include "tir/flatten.h"
#include "tir/mutate.h"
#include "tir/vectorize_check.h"

#define VC_MAX_ACCESSES 64
#define VC_MAX_TAINT 32

typedef struct vaccess {
    const ir_buffer *buf;
    int n;
    ir_expr *const *idx;
} vaccess;

typedef struct vcheck {
    const ir_var *v;
    const ir_var *taint[VC_MAX_TAINT]; /* let vars whose value depends on v */
    int n_taint;
    vaccess stores[VC_MAX_ACCESSES], loads[VC_MAX_ACCESSES];
    int n_stores, n_loads;
    bool ok;
} vcheck;

static bool depends(const vcheck *c, const ir_expr *e)
{
    if (ir_expr_uses_var(e, c->v)) return true;
    for (int i = 0; i < c->n_taint; i++)
        if (ir_expr_uses_var(e, c->taint[i])) return true;
    return false;
}

static void visit_expr(void *ctx, const ir_expr *e)
{
    vcheck *c = ctx;
    if (!c->ok || !e) return;
    if (e->kind == IR_REDUCE) c->ok = false;
    if (e->kind == IR_LOAD) {
        if (c->n_loads == VC_MAX_ACCESSES) c->ok = false;
        else c->loads[c->n_loads++] = (vaccess){e->load.buf, e->load.n, e->load.idx};
    }
    tir_expr_visit_children(e, visit_expr, c);
}

static void visit_stmt(void *ctx, const ir_stmt *s)
{
    vcheck *c = ctx;
    if (!c->ok) return;
    switch (s->kind) {
    case IR_STMT_FOR:
    case IR_STMT_ALLOCATE:
    case IR_STMT_CALL:
    case IR_STMT_CHECK: /* reports one element at a time */
        c->ok = false;
        return;
    case IR_STMT_LET:
        if (depends(c, s->let.value)) {
            if (c->n_taint == VC_MAX_TAINT) c->ok = false;
            else c->taint[c->n_taint++] = s->let.var;
        }
        break;
    case IR_STMT_STORE:
        if (c->n_stores == VC_MAX_ACCESSES) c->ok = false;
        else c->stores[c->n_stores++] = (vaccess){s->store.buf, s->store.n, s->store.idx};
        break;
    default: break;
    }
    tir_stmt_visit_children(s, visit_expr, visit_stmt, c);
}

/* Flat index of an access as an affine form (row-major when multi-index). */
static void flat_form(const vaccess *a, tir_affine *f)
{
    bool multi = a->n == a->buf->rank && a->n != 1;
    int64_t stride = 1;
    for (int d = a->n - 1; d >= 0 && !f->failed; d--) {
        tir_affine_add_expr(f, a->idx[d], stride);
        if (multi && d > 0 && __builtin_mul_overflow(stride, a->buf->shape[d], &stride)) f->failed = true;
    }
}

/* Store index is v + (terms free of v and of tainted lets). */
static bool stride_one(const vcheck *c, const vaccess *a)
{
    tir_affine f;
    tir_affine_init(&f);
    flat_form(a, &f);
    tir_affine_normalize(&f);
    bool ok = !f.failed && tir_affine_coef(&f, c->v) == 1;
    for (int i = 0; i < f.n && ok; i++) {
        const ir_expr *atom = f.terms[i].atom;
        if (!(atom->kind == IR_VAR && atom->var == c->v) && depends(c, atom)) ok = false;
    }
    tir_affine_fini(&f);
    return ok;
}

static bool same_index(const vaccess *a, const vaccess *b)
{
    tir_affine f;
    tir_affine_init(&f);
    flat_form(a, &f);
    tir_affine g;
    tir_affine_init(&g);
    flat_form(b, &g);
    for (int i = 0; i < g.n; i++) tir_affine_add_term(&f, g.terms[i].atom, -g.terms[i].coef);
    tir_affine_add_const(&f, -g.k);
    tir_affine_normalize(&f);
    bool same = !f.failed && !g.failed && f.n == 0 && f.k == 0;
    tir_affine_fini(&f);
    tir_affine_fini(&g);
    return same;
}

static bool accesses_ok(const vcheck *c)
{
    for (int i = 0; i < c->n_stores; i++) {
        const vaccess *st = &c->stores[i];
        if (!stride_one(c, st)) return false;
        for (int j = 0; j < c->n_stores; j++)
            if (c->stores[j].buf == st->buf && !same_index(&c->stores[j], st)) return false;
        for (int j = 0; j < c->n_loads; j++)
            if (c->loads[j].buf == st->buf && !same_index(&c->loads[j], st)) return false;
    }
    return true;
}

bool tir_can_vectorize(const ir_stmt *loop)
{
    if (!loop || loop->kind != IR_STMT_FOR) return false;
    vcheck c = {.v = loop->for_.var, .ok = true};
    visit_stmt(&c, loop->for_.body);
    return c.ok && accesses_ok(&c);
}

typedef struct legalize {
    ir_builder *b;
} legalize;

static ir_stmt *legal_stmt(void *ctx, ir_stmt *s)
{
    legalize *l = ctx;
    ir_stmt *r = tir_stmt_map_children(l->b, s, NULL, legal_stmt, l);
    if (!r || r->kind != IR_STMT_FOR || r->for_.kind != IR_FOR_VECTORIZED || tir_can_vectorize(r)) return r;
    return ir_for(l->b, r->for_.var, r->for_.min, r->for_.extent, IR_FOR_SERIAL, r->for_.body);
}

ir_stmt *tir_legalize_vectorize(ir_builder *b, ir_stmt *s)
{
    legalize l = {b};
    return s ? legal_stmt(&l, s) : NULL;
}
