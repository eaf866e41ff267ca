/* Storage flattening (see flatten.h). */
#include "tir/bounds.h"
#include "tir/flatten.h"
#include "tir/mutate.h"
#include "tir/simplify.h"

typedef struct flat {
    ir_builder *b;
    tir_scope scope; /* loop and let ranges, for simplifying the new indices */
} flat;

static bool needs_flat(const ir_buffer *buf, int n) { return n == buf->rank && n != 1; }

ir_expr *tir_flat_index(ir_builder *b, const ir_buffer *buf, int n, ir_expr *const *idx)
{
    if (n == 0) return ir_int(b, 0);
    ir_expr *acc = idx[0];
    for (int d = 1; d < n; d++) acc = ir_add(b, ir_mul(b, acc, ir_buffer_extent(b, buf, d)), idx[d]);
    return acc;
}

static ir_expr *flat_one(flat *f, const ir_buffer *buf, int n, ir_expr *const *idx)
{
    ir_expr *raw = tir_flat_index(f->b, buf, n, idx);
    return raw ? tir_simplify_expr(f->b, raw, &f->scope) : NULL;
}

static ir_expr *fl_expr(void *ctx, ir_expr *e)
{
    flat *f = ctx;
    ir_expr *r = tir_expr_map_children(f->b, e, fl_expr, f);
    if (!r || r->kind != IR_LOAD || !needs_flat(r->load.buf, r->load.n)) return r;
    ir_expr *i = flat_one(f, r->load.buf, r->load.n, r->load.idx);
    return i ? ir_load(f->b, r->load.buf, 1, &i) : NULL;
}

static ir_stmt *fl_stmt(void *ctx, ir_stmt *s)
{
    flat *f = ctx;
    int mark = tir_scope_mark(&f->scope);
    if (s->kind == IR_STMT_FOR) tir_scope_push_for(&f->scope, s);
    if (s->kind == IR_STMT_LET) tir_scope_push(&f->scope, s->let.var, tir_bounds(s->let.value, &f->scope));
    ir_stmt *r = tir_stmt_map_children(f->b, s, fl_expr, fl_stmt, f);
    tir_scope_pop_to(&f->scope, mark);
    if (!r || r->kind != IR_STMT_STORE || !needs_flat(r->store.buf, r->store.n)) return r;
    ir_expr *i = flat_one(f, r->store.buf, r->store.n, r->store.idx);
    return i ? ir_store(f->b, r->store.buf, 1, &i, r->store.value) : NULL;
}

ir_stmt *tir_flatten_storage(ir_builder *b, ir_stmt *s)
{
    flat f = {.b = b};
    tir_scope_init(&f.scope, NULL);
    ir_stmt *r = s ? fl_stmt(&f, s) : NULL;
    tir_scope_fini(&f.scope);
    return r;
}
