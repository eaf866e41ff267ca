/* Generic one-level rewriting and visiting of tir nodes (see mutate.h). */
#include "tir/mutate.h"

static ir_expr **map_list(ir_builder *b, int n, ir_expr **src, tir_expr_map_fn fn, void *ctx)
{
    ir_expr **dst = NULL;
    for (int i = 0; i < n; i++) {
        ir_expr *r = fn(ctx, src[i]);
        if (!r) return NULL;
        if (r == src[i] && !dst) continue;
        if (!dst) {
            dst = smelt_arena_alloc(b->arena, sizeof(ir_expr *) * (size_t)n);
            if (!dst) return b->failed = true, NULL;
            for (int k = 0; k < i; k++) dst[k] = src[k];
        }
        dst[i] = r;
    }
    return dst ? dst : src;
}

static ir_expr *map_binary(ir_builder *b, ir_expr *e, tir_expr_map_fn fn, void *ctx)
{
    ir_expr *a = fn(ctx, e->bin.a), *c = fn(ctx, e->bin.b);
    if (!a || !c) return NULL;
    if (a == e->bin.a && c == e->bin.b) return e;
    ir_expr *r = ir_binary(b, e->kind, a, c);
    if (r) r->dtype = e->dtype;
    return r;
}

ir_expr *tir_expr_map_children(ir_builder *b, ir_expr *e, tir_expr_map_fn fn, void *ctx)
{
    if (!e) return NULL;
    switch (e->kind) {
    case IR_INT:
    case IR_FLOAT:
    case IR_VAR: return e;
    case IR_NOT:
    case IR_CAST: {
        ir_expr *a = fn(ctx, e->bin.a);
        if (!a || a == e->bin.a) return a ? e : NULL;
        return e->kind == IR_NOT ? ir_not(b, a) : ir_cast(b, e->dtype, a);
    }
    case IR_SELECT: {
        ir_expr *c = fn(ctx, e->select.cond), *t = fn(ctx, e->select.t), *f = fn(ctx, e->select.f);
        if (!c || !t || !f) return NULL;
        if (c == e->select.cond && t == e->select.t && f == e->select.f) return e;
        return ir_select(b, c, t, f);
    }
    case IR_CALL: {
        ir_expr **args = map_list(b, e->call.n, e->call.args, fn, ctx);
        if (!args) return NULL;
        return args == e->call.args ? e : ir_call(b, e->call.op, e->dtype, e->call.n, args);
    }
    case IR_LOAD: {
        ir_expr **idx = map_list(b, e->load.n, e->load.idx, fn, ctx);
        if (!idx) return NULL;
        return idx == e->load.idx ? e : ir_load(b, e->load.buf, e->load.n, idx);
    }
    case IR_REDUCE: {
        ir_expr *src = fn(ctx, e->reduce.src);
        if (!src || src == e->reduce.src) return src ? e : NULL;
        return ir_reduce(b, e->reduce.op, src, e->reduce.n_axes, e->reduce.axes);
    }
    default: return map_binary(b, e, fn, ctx);
    }
}

static ir_expr *map_opt(ir_expr *e, tir_expr_map_fn fn, void *ctx) { return fn ? fn(ctx, e) : e; }
static ir_stmt *map_opt_stmt(ir_stmt *s, tir_stmt_map_fn fn, void *ctx)
{
    return (fn && s) ? fn(ctx, s) : s;
}

static ir_expr *identity(void *ctx, ir_expr *e)
{
    (void)ctx;
    return e;
}

static ir_stmt *map_seq(ir_builder *b, ir_stmt *s, tir_stmt_map_fn sfn, void *ctx)
{
    ir_stmt **items = NULL;
    for (int i = 0; i < s->seq.n; i++) {
        ir_stmt *r = map_opt_stmt(s->seq.items[i], sfn, ctx);
        if (!r) return NULL;
        if (r == s->seq.items[i] && !items) continue;
        if (!items) {
            items = smelt_arena_alloc(b->arena, sizeof(ir_stmt *) * (size_t)s->seq.n);
            if (!items) return b->failed = true, NULL;
            for (int k = 0; k < i; k++) items[k] = s->seq.items[k];
        }
        items[i] = r;
    }
    return items ? ir_seq(b, s->seq.n, items) : s;
}

static ir_stmt *map_call(ir_builder *b, ir_stmt *s, tir_expr_map_fn efn, void *ctx)
{
    ir_call_arg *args = NULL;
    for (int i = 0; i < s->call.n; i++) {
        ir_expr *r = map_opt(s->call.args[i].index, efn, ctx);
        if (!r) return NULL;
        if (r == s->call.args[i].index && !args) continue;
        if (!args) {
            args = smelt_arena_alloc(b->arena, sizeof(ir_call_arg) * (size_t)s->call.n);
            if (!args) return b->failed = true, NULL;
            for (int k = 0; k < s->call.n; k++) args[k] = s->call.args[k];
        }
        args[i].index = r;
    }
    return args ? ir_call_stmt(b, s->call.kernel, s->call.n, args) : s;
}

ir_stmt *tir_stmt_map_children(ir_builder *b, ir_stmt *s, tir_expr_map_fn efn, tir_stmt_map_fn sfn,
                               void *ctx)
{
    if (!s) return NULL;
    switch (s->kind) {
    case IR_STMT_FOR: {
        ir_expr *mn = map_opt(s->for_.min, efn, ctx), *ex = map_opt(s->for_.extent, efn, ctx);
        ir_stmt *body = map_opt_stmt(s->for_.body, sfn, ctx);
        if (!mn || !ex || !body) return NULL;
        if (mn == s->for_.min && ex == s->for_.extent && body == s->for_.body) return s;
        return ir_for(b, s->for_.var, mn, ex, s->for_.kind, body);
    }
    case IR_STMT_SEQ: return map_seq(b, s, sfn, ctx);
    case IR_STMT_LET: {
        ir_expr *v = map_opt(s->let.value, efn, ctx);
        ir_stmt *body = map_opt_stmt(s->let.body, sfn, ctx);
        if (!v || !body) return NULL;
        return (v == s->let.value && body == s->let.body) ? s : ir_let(b, s->let.var, v, body);
    }
    case IR_STMT_STORE: {
        ir_expr **idx = map_list(b, s->store.n, s->store.idx, efn ? efn : identity, ctx);
        ir_expr *v = map_opt(s->store.value, efn, ctx);
        if (!idx || !v) return NULL;
        if (idx == s->store.idx && v == s->store.value) return s;
        return ir_store(b, s->store.buf, s->store.n, idx, v);
    }
    case IR_STMT_ALLOCATE: {
        ir_stmt *body = map_opt_stmt(s->alloc.body, sfn, ctx);
        if (!body) return NULL;
        return body == s->alloc.body ? s : ir_allocate(b, s->alloc.buf, body);
    }
    case IR_STMT_IF: {
        ir_expr *c = map_opt(s->if_.cond, efn, ctx);
        ir_stmt *t = map_opt_stmt(s->if_.then_, sfn, ctx), *f = map_opt_stmt(s->if_.else_, sfn, ctx);
        if (!c || !t || (s->if_.else_ && !f)) return NULL;
        if (c == s->if_.cond && t == s->if_.then_ && f == s->if_.else_) return s;
        return ir_if(b, c, t, f);
    }
    case IR_STMT_CALL: return map_call(b, s, efn, ctx);
    case IR_STMT_CHECK: {
        ir_expr *c = map_opt(s->check.cond, efn, ctx), *v = map_opt(s->check.value, efn, ctx);
        ir_expr *p = map_opt(s->check.position, efn, ctx);
        if (!c || !v || !p) return NULL;
        if (c == s->check.cond && v == s->check.value && p == s->check.position) return s;
        return ir_check(b, c, v, p, s->check.site);
    }
    default: return s;
    }
}

void tir_expr_visit_children(const ir_expr *e, tir_expr_visit_fn fn, void *ctx)
{
    if (!e) return;
    switch (e->kind) {
    case IR_INT:
    case IR_FLOAT:
    case IR_VAR: return;
    case IR_NOT:
    case IR_CAST: fn(ctx, e->bin.a); return;
    case IR_SELECT:
        fn(ctx, e->select.cond);
        fn(ctx, e->select.t);
        fn(ctx, e->select.f);
        return;
    case IR_CALL:
        for (int i = 0; i < e->call.n; i++) fn(ctx, e->call.args[i]);
        return;
    case IR_LOAD:
        for (int i = 0; i < e->load.n; i++) fn(ctx, e->load.idx[i]);
        return;
    case IR_REDUCE: fn(ctx, e->reduce.src); return;
    default:
        fn(ctx, e->bin.a);
        fn(ctx, e->bin.b);
        return;
    }
}

void tir_stmt_visit_children(const ir_stmt *s, tir_expr_visit_fn efn, tir_stmt_visit_fn sfn, void *ctx)
{
    if (!s) return;
#define VE(x) (efn ? efn(ctx, (x)) : (void)0)
#define VS(x) ((sfn && (x)) ? sfn(ctx, (x)) : (void)0)
    switch (s->kind) {
    case IR_STMT_FOR:
        VE(s->for_.min);
        VE(s->for_.extent);
        VS(s->for_.body);
        break;
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++) VS(s->seq.items[i]);
        break;
    case IR_STMT_LET:
        VE(s->let.value);
        VS(s->let.body);
        break;
    case IR_STMT_STORE:
        for (int i = 0; i < s->store.n; i++) VE(s->store.idx[i]);
        VE(s->store.value);
        break;
    case IR_STMT_ALLOCATE: VS(s->alloc.body); break;
    case IR_STMT_IF:
        VE(s->if_.cond);
        VS(s->if_.then_);
        VS(s->if_.else_);
        break;
    case IR_STMT_CALL:
        for (int i = 0; i < s->call.n; i++) VE(s->call.args[i].index);
        break;
    case IR_STMT_CHECK:
        VE(s->check.cond);
        VE(s->check.value);
        VE(s->check.position);
        break;
    default: break;
    }
#undef VE
#undef VS
}
