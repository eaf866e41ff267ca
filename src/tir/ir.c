/* tir node construction, structural queries, substitution and printing. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tir/ir.h"

void ir_builder_init(ir_builder *b, smelt_arena *arena)
{
    b->arena = arena;
    b->next_id = 0;
    b->failed = false;
}

static void *ir_alloc(ir_builder *b, size_t size)
{
    void *p = smelt_arena_alloc(b->arena, size);
    if (!p) b->failed = true;
    return p;
}

ir_var *ir_var_new(ir_builder *b, const char *name, smelt_dtype dt)
{
    ir_var *v = ir_alloc(b, sizeof *v);
    if (!v) return NULL;
    v->name = smelt_arena_strdup(b->arena, name);
    v->dtype = dt;
    v->id = b->next_id++;
    if (!v->name) return b->failed = true, NULL;
    return v;
}

ir_buffer *ir_buffer_new(ir_builder *b, const char *name, smelt_dtype dt, int rank,
                         const int64_t *shape, ir_buffer_kind kind)
{
    ir_buffer *buf = ir_alloc(b, sizeof *buf);
    if (!buf) return NULL;
    buf->name = smelt_arena_strdup(b->arena, name);
    buf->dtype = dt;
    buf->rank = rank;
    for (int i = 0; i < rank; i++) buf->shape[i] = shape[i];
    buf->kind = kind;
    buf->scope = IR_SCOPE_DEFAULT;
    buf->id = b->next_id++;
    if (!buf->name) return b->failed = true, NULL;
    return buf;
}

static ir_expr *expr_new(ir_builder *b, ir_kind k, smelt_dtype dt)
{
    ir_expr *e = ir_alloc(b, sizeof *e);
    if (!e) return NULL;
    e->kind = k;
    e->dtype = dt;
    return e;
}

ir_expr *ir_const_int(ir_builder *b, smelt_dtype dt, int64_t v)
{
    ir_expr *e = expr_new(b, IR_INT, dt);
    if (e) e->i = v;
    return e;
}

ir_expr *ir_int(ir_builder *b, int64_t v) { return ir_const_int(b, SMELT_DT_INT64, v); }

ir_expr *ir_buffer_extent(ir_builder *b, const ir_buffer *buf, int d)
{
    return buf->rt_extent[d] ? buf->rt_extent[d] : ir_int(b, buf->shape[d]);
}

bool ir_buffer_is_dense_rt(const ir_buffer *buf)
{
    for (int d = 0; d < buf->rank; d++)
        if (buf->rt_extent[d]) return true;
    return false;
}

ir_expr *ir_const_float(ir_builder *b, smelt_dtype dt, double v)
{
    ir_expr *e = expr_new(b, IR_FLOAT, dt);
    if (e) e->f = v;
    return e;
}

ir_expr *ir_var_ref(ir_builder *b, ir_var *v)
{
    if (!v) return b->failed = true, NULL;
    ir_expr *e = expr_new(b, IR_VAR, v->dtype);
    if (e) e->var = v;
    return e;
}

static bool kind_is_compare(ir_kind k)
{
    return k == IR_EQ || k == IR_NE || k == IR_LT || k == IR_LE || k == IR_GT || k == IR_GE ||
           k == IR_AND || k == IR_OR;
}

ir_expr *ir_binary(ir_builder *b, ir_kind k, ir_expr *a, ir_expr *c)
{
    if (!a || !c) return b->failed = true, NULL;
    ir_expr *e = expr_new(b, k, kind_is_compare(k) ? SMELT_DT_BOOL : a->dtype);
    if (e) {
        e->bin.a = a;
        e->bin.b = c;
    }
    return e;
}

ir_expr *ir_add(ir_builder *b, ir_expr *a, ir_expr *c) { return ir_binary(b, IR_ADD, a, c); }
ir_expr *ir_sub(ir_builder *b, ir_expr *a, ir_expr *c) { return ir_binary(b, IR_SUB, a, c); }
ir_expr *ir_mul(ir_builder *b, ir_expr *a, ir_expr *c) { return ir_binary(b, IR_MUL, a, c); }

ir_expr *ir_not(ir_builder *b, ir_expr *a)
{
    if (!a) return b->failed = true, NULL;
    ir_expr *e = expr_new(b, IR_NOT, SMELT_DT_BOOL);
    if (e) e->bin.a = a;
    return e;
}

ir_expr *ir_select(ir_builder *b, ir_expr *cond, ir_expr *t, ir_expr *f)
{
    if (!cond || !t || !f) return b->failed = true, NULL;
    ir_expr *e = expr_new(b, IR_SELECT, t->dtype);
    if (e) {
        e->select.cond = cond;
        e->select.t = t;
        e->select.f = f;
    }
    return e;
}

ir_expr *ir_cast(ir_builder *b, smelt_dtype dt, ir_expr *a)
{
    if (!a) return b->failed = true, NULL;
    if (a->dtype == dt) return a;
    ir_expr *e = expr_new(b, IR_CAST, dt);
    if (e) e->bin.a = a;
    return e;
}

ir_expr *ir_call(ir_builder *b, ir_call_op op, smelt_dtype dt, int n, ir_expr *const *args)
{
    if (n < 0 || n > 3 || (n > 0 && !args)) return b->failed = true, NULL;
    for (int i = 0; i < n; i++)
        if (!args[i]) return b->failed = true, NULL;
    ir_expr *e = expr_new(b, IR_CALL, dt);
    if (!e) return NULL;
    e->call.op = op;
    e->call.n = n;
    for (int i = 0; i < n; i++) e->call.args[i] = args[i];
    return e;
}

uint64_t ir_ipow_u64(uint64_t base, uint64_t exp)
{
    uint64_t r = 1;
    while (exp) {
        if (exp & 1) r *= base;
        base *= base;
        exp >>= 1;
    }
    return r;
}

static ir_expr **copy_exprs(ir_builder *b, int n, ir_expr *const *src)
{
    if (n < 0 || (n > 0 && !src)) return b->failed = true, NULL;
    ir_expr **dst = ir_alloc(b, sizeof(ir_expr *) * (size_t)(n > 0 ? n : 1));
    if (!dst) return NULL;
    for (int i = 0; i < n; i++) {
        if (!src[i]) return b->failed = true, NULL;
        dst[i] = src[i];
    }
    return dst;
}

ir_expr *ir_load(ir_builder *b, ir_buffer *buf, int n, ir_expr *const *idx)
{
    ir_expr *e = buf ? expr_new(b, IR_LOAD, buf->dtype) : NULL;
    if (!e) return b->failed = true, NULL;
    e->load.buf = buf;
    e->load.n = n;
    e->load.idx = copy_exprs(b, n, idx);
    return e->load.idx ? e : NULL;
}

ir_expr *ir_reduce(ir_builder *b, ir_reduce_op op, ir_expr *src, int n_axes,
                   const ir_axis *axes)
{
    ir_expr *e = src && (n_axes == 0 || axes) ? expr_new(b, IR_REDUCE, src->dtype) : NULL;
    if (!e) return b->failed = true, NULL;
    e->reduce.op = op;
    e->reduce.src = src;
    e->reduce.n_axes = n_axes;
    e->reduce.axes = ir_alloc(b, sizeof(ir_axis) * (size_t)(n_axes > 0 ? n_axes : 1));
    if (!e->reduce.axes) return NULL;
    for (int i = 0; i < n_axes; i++)
        if (!axes[i].var) return b->failed = true, NULL; /* te_reduce_axis failed */
    if (n_axes) memcpy(e->reduce.axes, axes, sizeof(ir_axis) * (size_t)n_axes);
    return e;
}

/* ---- statements ---- */

static ir_stmt *stmt_new(ir_builder *b, ir_stmt_kind k)
{
    ir_stmt *s = ir_alloc(b, sizeof *s);
    if (s) s->kind = k;
    return s;
}

ir_stmt *ir_for(ir_builder *b, ir_var *v, ir_expr *min, ir_expr *extent, ir_for_kind k,
                ir_stmt *body)
{
    if (!v || !min || !extent || !body) return b->failed = true, NULL;
    ir_stmt *s = stmt_new(b, IR_STMT_FOR);
    if (!s) return NULL;
    s->for_.var = v;
    s->for_.min = min;
    s->for_.extent = extent;
    s->for_.kind = k;
    s->for_.body = body;
    return s;
}

ir_stmt *ir_seq(ir_builder *b, int n, ir_stmt *const *items)
{
    int count = 0;
    for (int i = 0; i < n; i++)
        if (items[i]) count += items[i]->kind == IR_STMT_SEQ ? items[i]->seq.n : 1;
    if (count == 1)
        for (int i = 0; i < n; i++)
            if (items[i] && items[i]->kind != IR_STMT_SEQ) return items[i];
    ir_stmt *s = stmt_new(b, IR_STMT_SEQ);
    if (!s) return NULL;
    s->seq.items = ir_alloc(b, sizeof(ir_stmt *) * (size_t)(count > 0 ? count : 1));
    if (!s->seq.items) return NULL;
    for (int i = 0; i < n; i++) {
        if (!items[i]) continue;
        if (items[i]->kind == IR_STMT_SEQ)
            for (int k = 0; k < items[i]->seq.n; k++) s->seq.items[s->seq.n++] = items[i]->seq.items[k];
        else
            s->seq.items[s->seq.n++] = items[i];
    }
    return s;
}

ir_stmt *ir_seq2(ir_builder *b, ir_stmt *first, ir_stmt *second)
{
    ir_stmt *items[2] = {first, second};
    return ir_seq(b, 2, items);
}

ir_stmt *ir_let(ir_builder *b, ir_var *v, ir_expr *value, ir_stmt *body)
{
    if (!v || !value || !body) return b->failed = true, NULL;
    ir_stmt *s = stmt_new(b, IR_STMT_LET);
    if (!s) return NULL;
    s->let.var = v;
    s->let.value = value;
    s->let.body = body;
    return s;
}

ir_stmt *ir_store(ir_builder *b, ir_buffer *buf, int n, ir_expr *const *idx, ir_expr *value)
{
    if (!buf || !value) return b->failed = true, NULL;
    ir_stmt *s = stmt_new(b, IR_STMT_STORE);
    if (!s) return NULL;
    s->store.buf = buf;
    s->store.n = n;
    s->store.idx = copy_exprs(b, n, idx);
    s->store.value = value;
    return s->store.idx ? s : NULL;
}

ir_stmt *ir_allocate(ir_builder *b, ir_buffer *buf, ir_stmt *body)
{
    if (!buf || !body) return b->failed = true, NULL;
    ir_stmt *s = stmt_new(b, IR_STMT_ALLOCATE);
    if (!s) return NULL;
    s->alloc.buf = buf;
    s->alloc.body = body;
    return s;
}

ir_stmt *ir_if(ir_builder *b, ir_expr *cond, ir_stmt *then_, ir_stmt *else_)
{
    if (!cond || !then_) return b->failed = true, NULL;
    ir_stmt *s = stmt_new(b, IR_STMT_IF);
    if (!s) return NULL;
    s->if_.cond = cond;
    s->if_.then_ = then_;
    s->if_.else_ = else_;
    return s;
}

ir_stmt *ir_call_stmt(ir_builder *b, const char *kernel, int n, const ir_call_arg *args)
{
    if (!kernel || n < 0 || (n > 0 && !args)) return b->failed = true, NULL;
    ir_stmt *s = stmt_new(b, IR_STMT_CALL);
    if (!s) return NULL;
    s->call.kernel = smelt_arena_strdup(b->arena, kernel);
    s->call.n = n;
    s->call.args = ir_alloc(b, sizeof(ir_call_arg) * (size_t)(n > 0 ? n : 1));
    if (!s->call.kernel || !s->call.args) return b->failed = true, NULL;
    if (n) memcpy(s->call.args, args, sizeof(ir_call_arg) * (size_t)n);
    return s;
}

ir_stmt *ir_check(ir_builder *b, ir_expr *cond, ir_expr *value, ir_expr *position,
                  const ir_check_site *site)
{
    if (!cond || !value || !position || !site) return b->failed = true, NULL;
    ir_stmt *s = stmt_new(b, IR_STMT_CHECK);
    if (!s) return NULL;
    s->check.cond = cond;
    s->check.value = value;
    s->check.position = position;
    s->check.site = site;
    return s;
}

/* ---- queries ---- */

bool ir_is_int(const ir_expr *e, int64_t v) { return e && e->kind == IR_INT && e->i == v; }

static bool is_binary(ir_kind k) { return k >= IR_ADD && k <= IR_OR; }

bool ir_expr_equal(const ir_expr *a, const ir_expr *b)
{
    if (a == b) return true;
    if (!a || !b || a->kind != b->kind || a->dtype != b->dtype) return false;
    switch (a->kind) {
    case IR_INT: return a->i == b->i;
    case IR_FLOAT: return a->f == b->f || (isnan(a->f) && isnan(b->f));
    case IR_VAR: return a->var == b->var;
    case IR_NOT:
    case IR_CAST: return ir_expr_equal(a->bin.a, b->bin.a);
    case IR_SELECT:
        return ir_expr_equal(a->select.cond, b->select.cond) &&
               ir_expr_equal(a->select.t, b->select.t) && ir_expr_equal(a->select.f, b->select.f);
    case IR_CALL:
        if (a->call.op != b->call.op || a->call.n != b->call.n) return false;
        for (int i = 0; i < a->call.n; i++)
            if (!ir_expr_equal(a->call.args[i], b->call.args[i])) return false;
        return true;
    case IR_LOAD:
        if (a->load.buf != b->load.buf || a->load.n != b->load.n) return false;
        for (int i = 0; i < a->load.n; i++)
            if (!ir_expr_equal(a->load.idx[i], b->load.idx[i])) return false;
        return true;
    case IR_REDUCE:
        if (a->reduce.op != b->reduce.op || a->reduce.n_axes != b->reduce.n_axes) return false;
        for (int i = 0; i < a->reduce.n_axes; i++)
            if (a->reduce.axes[i].var != b->reduce.axes[i].var) return false;
        return ir_expr_equal(a->reduce.src, b->reduce.src);
    default:
        return is_binary(a->kind) && ir_expr_equal(a->bin.a, b->bin.a) &&
               ir_expr_equal(a->bin.b, b->bin.b);
    }
}

bool ir_expr_uses_var(const ir_expr *e, const ir_var *v)
{
    if (!e) return false;
    switch (e->kind) {
    case IR_INT:
    case IR_FLOAT: return false;
    case IR_VAR: return e->var == v;
    case IR_NOT:
    case IR_CAST: return ir_expr_uses_var(e->bin.a, v);
    case IR_SELECT:
        return ir_expr_uses_var(e->select.cond, v) || ir_expr_uses_var(e->select.t, v) ||
               ir_expr_uses_var(e->select.f, v);
    case IR_CALL:
        for (int i = 0; i < e->call.n; i++)
            if (ir_expr_uses_var(e->call.args[i], v)) return true;
        return false;
    case IR_LOAD:
        for (int i = 0; i < e->load.n; i++)
            if (ir_expr_uses_var(e->load.idx[i], v)) return true;
        return false;
    case IR_REDUCE: return ir_expr_uses_var(e->reduce.src, v);
    default: return ir_expr_uses_var(e->bin.a, v) || ir_expr_uses_var(e->bin.b, v);
    }
}

bool ir_expr_reads(const ir_expr *e, const ir_buffer *buf)
{
    if (!e) return false;
    switch (e->kind) {
    case IR_INT:
    case IR_FLOAT:
    case IR_VAR: return false;
    case IR_NOT:
    case IR_CAST: return ir_expr_reads(e->bin.a, buf);
    case IR_SELECT:
        return ir_expr_reads(e->select.cond, buf) || ir_expr_reads(e->select.t, buf) ||
               ir_expr_reads(e->select.f, buf);
    case IR_CALL:
        for (int i = 0; i < e->call.n; i++)
            if (ir_expr_reads(e->call.args[i], buf)) return true;
        return false;
    case IR_LOAD:
        if (e->load.buf == buf) return true;
        for (int i = 0; i < e->load.n; i++)
            if (ir_expr_reads(e->load.idx[i], buf)) return true;
        return false;
    case IR_REDUCE: return ir_expr_reads(e->reduce.src, buf);
    default: return ir_expr_reads(e->bin.a, buf) || ir_expr_reads(e->bin.b, buf);
    }
}

/* Whether any expression of s (or a call's buffer argument) satisfies the
 * query; `unknown` answers for statement kinds not listed here. */
typedef struct stmt_query {
    bool (*expr)(const ir_expr *e, const void *what);
    const ir_buffer *call_buf; /* a call passing this buffer answers true */
    const void *what;
    bool unknown;
} stmt_query;

static bool stmt_any(const ir_stmt *s, const stmt_query *q)
{
    if (!s) return false;
    switch (s->kind) {
    case IR_STMT_FOR:
        return q->expr(s->for_.min, q->what) || q->expr(s->for_.extent, q->what) ||
               stmt_any(s->for_.body, q);
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++)
            if (stmt_any(s->seq.items[i], q)) return true;
        return false;
    case IR_STMT_LET: return q->expr(s->let.value, q->what) || stmt_any(s->let.body, q);
    case IR_STMT_STORE:
        for (int i = 0; i < s->store.n; i++)
            if (q->expr(s->store.idx[i], q->what)) return true;
        return q->expr(s->store.value, q->what);
    case IR_STMT_ALLOCATE: return stmt_any(s->alloc.body, q);
    case IR_STMT_IF:
        return q->expr(s->if_.cond, q->what) || stmt_any(s->if_.then_, q) || stmt_any(s->if_.else_, q);
    case IR_STMT_CALL:
        for (int i = 0; i < s->call.n; i++)
            if ((q->call_buf && s->call.args[i].buf == q->call_buf) ||
                q->expr(s->call.args[i].index, q->what))
                return true;
        return false;
    case IR_STMT_CHECK:
        return q->expr(s->check.cond, q->what) || q->expr(s->check.value, q->what) ||
               q->expr(s->check.position, q->what);
    default: return q->unknown;
    }
}

static bool expr_reads(const ir_expr *e, const void *buf) { return ir_expr_reads(e, buf); }
static bool expr_uses_var(const ir_expr *e, const void *v) { return ir_expr_uses_var(e, v); }

bool ir_stmt_reads(const ir_stmt *s, const ir_buffer *buf)
{
    /* a statement kind not listed: assume it reads (keeps its buffer bound) */
    stmt_query q = {expr_reads, buf, buf, true};
    return stmt_any(s, &q);
}

bool ir_stmt_uses_var(const ir_stmt *s, const ir_var *v)
{
    stmt_query q = {expr_uses_var, NULL, v, false};
    return stmt_any(s, &q);
}

/* ---- substitution ---- */

static ir_expr *subst_list(ir_builder *b, int n, ir_expr **src, ir_expr ***out,
                           const ir_subst *map, int nmap)
{
    bool changed = false;
    ir_expr *tmp[SMELT_MAX_RANK * 4];
    ir_expr **dst = n <= (int)SMELT_ARRAY_LEN(tmp) ? tmp : ir_alloc(b, sizeof(ir_expr *) * (size_t)n);
    if (!dst) return NULL;
    for (int i = 0; i < n; i++) {
        dst[i] = ir_expr_substitute(b, src[i], map, nmap);
        if (!dst[i]) return NULL;
        changed |= dst[i] != src[i];
    }
    *out = changed ? copy_exprs(b, n, dst) : src;
    return *out ? (ir_expr *)1 : NULL; /* non-NULL marks success */
}

ir_expr *ir_expr_substitute(ir_builder *b, ir_expr *e, const ir_subst *map, int n)
{
    if (!e) return NULL;
    switch (e->kind) {
    case IR_INT:
    case IR_FLOAT: return e;
    case IR_VAR:
        for (int i = 0; i < n; i++)
            if (map[i].var == e->var) return map[i].value;
        return e;
    case IR_NOT:
    case IR_CAST: {
        ir_expr *a = ir_expr_substitute(b, e->bin.a, map, n);
        if (a == e->bin.a) return e;
        return e->kind == IR_NOT ? ir_not(b, a) : ir_cast(b, e->dtype, a);
    }
    case IR_SELECT: {
        ir_expr *c = ir_expr_substitute(b, e->select.cond, map, n);
        ir_expr *t = ir_expr_substitute(b, e->select.t, map, n);
        ir_expr *f = ir_expr_substitute(b, e->select.f, map, n);
        if (c == e->select.cond && t == e->select.t && f == e->select.f) return e;
        return ir_select(b, c, t, f);
    }
    case IR_CALL: {
        ir_expr *args[3];
        bool changed = false;
        for (int i = 0; i < e->call.n; i++) {
            args[i] = ir_expr_substitute(b, e->call.args[i], map, n);
            changed |= args[i] != e->call.args[i];
        }
        return changed ? ir_call(b, e->call.op, e->dtype, e->call.n, args) : e;
    }
    case IR_LOAD: {
        ir_expr **idx;
        if (!subst_list(b, e->load.n, e->load.idx, &idx, map, n)) return NULL;
        return idx == e->load.idx ? e : ir_load(b, e->load.buf, e->load.n, idx);
    }
    case IR_REDUCE: {
        ir_expr *src = ir_expr_substitute(b, e->reduce.src, map, n);
        if (src == e->reduce.src) return e;
        return ir_reduce(b, e->reduce.op, src, e->reduce.n_axes, e->reduce.axes);
    }
    default: {
        ir_expr *a = ir_expr_substitute(b, e->bin.a, map, n);
        ir_expr *c = ir_expr_substitute(b, e->bin.b, map, n);
        if (a == e->bin.a && c == e->bin.b) return e;
        ir_expr *r = ir_binary(b, e->kind, a, c);
        if (r) r->dtype = e->dtype;
        return r;
    }
    }
}

ir_stmt *ir_stmt_substitute(ir_builder *b, ir_stmt *s, const ir_subst *map, int n)
{
    if (!s) return NULL;
    switch (s->kind) {
    case IR_STMT_FOR: {
        ir_expr *mn = ir_expr_substitute(b, s->for_.min, map, n);
        ir_expr *ex = ir_expr_substitute(b, s->for_.extent, map, n);
        ir_stmt *body = ir_stmt_substitute(b, s->for_.body, map, n);
        if (mn == s->for_.min && ex == s->for_.extent && body == s->for_.body) return s;
        return ir_for(b, s->for_.var, mn, ex, s->for_.kind, body);
    }
    case IR_STMT_SEQ: {
        ir_stmt **items = ir_alloc(b, sizeof(ir_stmt *) * (size_t)(s->seq.n > 0 ? s->seq.n : 1));
        if (!items) return NULL;
        bool changed = false;
        for (int i = 0; i < s->seq.n; i++) {
            items[i] = ir_stmt_substitute(b, s->seq.items[i], map, n);
            if (!items[i]) return NULL;
            changed |= items[i] != s->seq.items[i];
        }
        return changed ? ir_seq(b, s->seq.n, items) : s;
    }
    case IR_STMT_LET: {
        ir_expr *v = ir_expr_substitute(b, s->let.value, map, n);
        ir_stmt *body = ir_stmt_substitute(b, s->let.body, map, n);
        if (v == s->let.value && body == s->let.body) return s;
        return ir_let(b, s->let.var, v, body);
    }
    case IR_STMT_STORE: {
        ir_expr **idx;
        if (!subst_list(b, s->store.n, s->store.idx, &idx, map, n)) return NULL;
        ir_expr *v = ir_expr_substitute(b, s->store.value, map, n);
        if (idx == s->store.idx && v == s->store.value) return s;
        return ir_store(b, s->store.buf, s->store.n, idx, v);
    }
    case IR_STMT_ALLOCATE: {
        ir_stmt *body = ir_stmt_substitute(b, s->alloc.body, map, n);
        return body == s->alloc.body ? s : ir_allocate(b, s->alloc.buf, body);
    }
    case IR_STMT_IF: {
        ir_expr *c = ir_expr_substitute(b, s->if_.cond, map, n);
        ir_stmt *t = ir_stmt_substitute(b, s->if_.then_, map, n);
        ir_stmt *f = s->if_.else_ ? ir_stmt_substitute(b, s->if_.else_, map, n) : NULL;
        if (c == s->if_.cond && t == s->if_.then_ && f == s->if_.else_) return s;
        return ir_if(b, c, t, f);
    }
    case IR_STMT_CALL: {
        ir_call_arg *args = ir_alloc(b, sizeof(ir_call_arg) * (size_t)(s->call.n > 0 ? s->call.n : 1));
        if (!args) return NULL;
        bool changed = false;
        for (int i = 0; i < s->call.n; i++) {
            args[i] = s->call.args[i];
            args[i].index = ir_expr_substitute(b, s->call.args[i].index, map, n);
            changed |= args[i].index != s->call.args[i].index;
        }
        return changed ? ir_call_stmt(b, s->call.kernel, s->call.n, args) : s;
    }
    case IR_STMT_CHECK: {
        ir_expr *c = ir_expr_substitute(b, s->check.cond, map, n);
        ir_expr *v = ir_expr_substitute(b, s->check.value, map, n);
        ir_expr *p = ir_expr_substitute(b, s->check.position, map, n);
        if (c == s->check.cond && v == s->check.value && p == s->check.position) return s;
        return ir_check(b, c, v, p, s->check.site);
    }
    default: return s;
    }
}

/* ---- printing ---- */

const char *ir_kind_name(ir_kind k)
{
    static const char *const names[] = {
        [IR_INT] = "int",         [IR_FLOAT] = "float",       [IR_VAR] = "var",
        [IR_ADD] = "+",           [IR_SUB] = "-",             [IR_MUL] = "*",
        [IR_DIV] = "/",           [IR_MOD] = "%",             [IR_FLOORDIV] = "floordiv",
        [IR_FLOORMOD] = "floormod", [IR_MIN] = "min",         [IR_MAX] = "max",
        [IR_BITAND] = "&",        [IR_BITOR] = "|",           [IR_BITXOR] = "^",
        [IR_SHL] = "<<",          [IR_SHR] = ">>",
        [IR_EQ] = "==",           [IR_NE] = "!=",             [IR_LT] = "<",
        [IR_LE] = "<=",           [IR_GT] = ">",              [IR_GE] = ">=",
        [IR_AND] = "&&",          [IR_OR] = "||",             [IR_NOT] = "!",
        [IR_SELECT] = "select",   [IR_CAST] = "cast",         [IR_CALL] = "call",
        [IR_LOAD] = "load",       [IR_REDUCE] = "reduce",
    };
    _Static_assert(SMELT_ARRAY_LEN(names) == IR_KIND_COUNT_, "ir kind names");
    return (unsigned)k < IR_KIND_COUNT_ ? names[k] : "?";
}

const char *ir_call_name(ir_call_op op)
{
    static const char *const names[] = {
        [IR_CALL_EXP] = "exp",     [IR_CALL_LOG] = "log",     [IR_CALL_SQRT] = "sqrt",
        [IR_CALL_TANH] = "tanh",   [IR_CALL_ERF] = "erf",     [IR_CALL_POW] = "pow",
        [IR_CALL_ABS] = "abs",     [IR_CALL_FLOOR] = "floor", [IR_CALL_CEIL] = "ceil",
        [IR_CALL_ROUND] = "round", [IR_CALL_SIN] = "sin",     [IR_CALL_COS] = "cos",
        [IR_CALL_FMOD] = "fmod",   [IR_CALL_ISNAN] = "isnan", [IR_CALL_ISINF] = "isinf",
        [IR_CALL_SIGMOID] = "sigmoid", [IR_CALL_TAN] = "tan",     [IR_CALL_ASIN] = "asin",
        [IR_CALL_ACOS] = "acos",   [IR_CALL_ATAN] = "atan",   [IR_CALL_SINH] = "sinh",
        [IR_CALL_COSH] = "cosh",   [IR_CALL_ASINH] = "asinh", [IR_CALL_ACOSH] = "acosh",
        [IR_CALL_ATANH] = "atanh",
        [IR_CALL_LB_DECODE] = "lowbit_decode", [IR_CALL_LB_ENCODE] = "lowbit_encode",
        [IR_CALL_BITCAST] = "bitcast",
    };
    _Static_assert(SMELT_ARRAY_LEN(names) == IR_CALL_COUNT_, "ir call names");
    return (unsigned)op < IR_CALL_COUNT_ ? names[op] : "?";
}

static const char *reduce_name(ir_reduce_op op)
{
    switch (op) {
    case IR_REDUCE_SUM: return "sum";
    case IR_REDUCE_PROD: return "prod";
    case IR_REDUCE_MAX: return "max";
    case IR_REDUCE_MIN: return "min";
    }
    return "?";
}

static void print_index_list(int n, ir_expr *const *idx, smelt_strbuf *out)
{
    smelt_strbuf_append(out, "[");
    for (int i = 0; i < n; i++) {
        if (i) smelt_strbuf_append(out, ", ");
        ir_expr_print(idx[i], out);
    }
    smelt_strbuf_append(out, "]");
}

void ir_expr_print(const ir_expr *e, smelt_strbuf *out)
{
    if (!e) {
        smelt_strbuf_append(out, "<null>");
        return;
    }
    switch (e->kind) {
    case IR_INT:
        if (e->dtype == SMELT_DT_INT64)
            smelt_strbuf_printf(out, "%lld", (long long)e->i);
        else
            smelt_strbuf_printf(out, "%lld:%s", (long long)e->i, smelt_dtype_name(e->dtype));
        break;
    case IR_FLOAT: smelt_strbuf_printf(out, "%.9gf", e->f); break;
    case IR_VAR: smelt_strbuf_append(out, e->var->name); break;
    case IR_NOT:
        smelt_strbuf_append(out, "!(");
        ir_expr_print(e->bin.a, out);
        smelt_strbuf_append(out, ")");
        break;
    case IR_CAST:
        smelt_strbuf_printf(out, "%s(", smelt_dtype_name(e->dtype));
        ir_expr_print(e->bin.a, out);
        smelt_strbuf_append(out, ")");
        break;
    case IR_SELECT:
        smelt_strbuf_append(out, "select(");
        ir_expr_print(e->select.cond, out);
        smelt_strbuf_append(out, ", ");
        ir_expr_print(e->select.t, out);
        smelt_strbuf_append(out, ", ");
        ir_expr_print(e->select.f, out);
        smelt_strbuf_append(out, ")");
        break;
    case IR_CALL:
        smelt_strbuf_printf(out, "%s(", ir_call_name(e->call.op));
        for (int i = 0; i < e->call.n; i++) {
            if (i) smelt_strbuf_append(out, ", ");
            ir_expr_print(e->call.args[i], out);
        }
        smelt_strbuf_append(out, ")");
        break;
    case IR_LOAD:
        smelt_strbuf_append(out, e->load.buf->name);
        print_index_list(e->load.n, e->load.idx, out);
        break;
    case IR_REDUCE:
        smelt_strbuf_printf(out, "%s(", reduce_name(e->reduce.op));
        ir_expr_print(e->reduce.src, out);
        smelt_strbuf_append(out, ", axes=[");
        for (int i = 0; i < e->reduce.n_axes; i++)
            smelt_strbuf_printf(out, "%s%s:%lld", i ? ", " : "", e->reduce.axes[i].var->name,
                                (long long)e->reduce.axes[i].extent);
        smelt_strbuf_append(out, "])");
        break;
    case IR_MIN:
    case IR_MAX:
    case IR_FLOORDIV:
    case IR_FLOORMOD:
        smelt_strbuf_printf(out, "%s(", ir_kind_name(e->kind));
        ir_expr_print(e->bin.a, out);
        smelt_strbuf_append(out, ", ");
        ir_expr_print(e->bin.b, out);
        smelt_strbuf_append(out, ")");
        break;
    default:
        smelt_strbuf_append(out, "(");
        ir_expr_print(e->bin.a, out);
        smelt_strbuf_printf(out, " %s ", ir_kind_name(e->kind));
        ir_expr_print(e->bin.b, out);
        smelt_strbuf_append(out, ")");
        break;
    }
}

static void indent_to(int n, smelt_strbuf *out)
{
    for (int i = 0; i < n; i++) smelt_strbuf_append(out, "  ");
}

static const char *for_kind_name(ir_for_kind k)
{
    switch (k) {
    case IR_FOR_SERIAL: return "for";
    case IR_FOR_PARALLEL: return "parallel for";
    case IR_FOR_VECTORIZED: return "vectorized for";
    case IR_FOR_UNROLLED: return "unrolled for";
    case IR_FOR_GPU_BLOCK: return "blockIdx.x for";
    case IR_FOR_GPU_THREAD: return "threadIdx.x for";
    }
    return "?";
}

void ir_stmt_print(const ir_stmt *s, int indent, smelt_strbuf *out)
{
    if (!s) return;
    switch (s->kind) {
    case IR_STMT_FOR:
        indent_to(indent, out);
        smelt_strbuf_printf(out, "%s %s in [", for_kind_name(s->for_.kind), s->for_.var->name);
        ir_expr_print(s->for_.min, out);
        smelt_strbuf_append(out, ", +");
        ir_expr_print(s->for_.extent, out);
        smelt_strbuf_append(out, "):\n");
        ir_stmt_print(s->for_.body, indent + 1, out);
        break;
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++) ir_stmt_print(s->seq.items[i], indent, out);
        break;
    case IR_STMT_LET:
        indent_to(indent, out);
        smelt_strbuf_printf(out, "let %s = ", s->let.var->name);
        ir_expr_print(s->let.value, out);
        smelt_strbuf_append(out, "\n");
        ir_stmt_print(s->let.body, indent, out);
        break;
    case IR_STMT_STORE:
        indent_to(indent, out);
        smelt_strbuf_append(out, s->store.buf->name);
        print_index_list(s->store.n, s->store.idx, out);
        smelt_strbuf_append(out, " = ");
        ir_expr_print(s->store.value, out);
        smelt_strbuf_append(out, "\n");
        break;
    case IR_STMT_ALLOCATE: {
        const ir_buffer *bf = s->alloc.buf;
        indent_to(indent, out);
        smelt_strbuf_printf(out, "allocate %s%s: %s[", bf->scope == IR_SCOPE_SHARED ? "shared " : "",
                            bf->name, smelt_dtype_name(bf->dtype));
        for (int i = 0; i < bf->rank; i++)
            smelt_strbuf_printf(out, "%s%lld", i ? "," : "", (long long)bf->shape[i]);
        smelt_strbuf_append(out, "]\n");
        ir_stmt_print(s->alloc.body, indent, out);
        break;
    }
    case IR_STMT_IF:
        indent_to(indent, out);
        smelt_strbuf_append(out, "if ");
        ir_expr_print(s->if_.cond, out);
        smelt_strbuf_append(out, ":\n");
        ir_stmt_print(s->if_.then_, indent + 1, out);
        if (s->if_.else_) {
            indent_to(indent, out);
            smelt_strbuf_append(out, "else:\n");
            ir_stmt_print(s->if_.else_, indent + 1, out);
        }
        break;
    case IR_STMT_CALL:
        indent_to(indent, out);
        smelt_strbuf_printf(out, "call %s(", s->call.kernel);
        for (int i = 0; i < s->call.n; i++) {
            if (i) smelt_strbuf_append(out, ", ");
            if (s->call.args[i].buf) smelt_strbuf_printf(out, "&%s[", s->call.args[i].buf->name);
            ir_expr_print(s->call.args[i].index, out);
            if (s->call.args[i].buf) smelt_strbuf_append(out, "]");
        }
        smelt_strbuf_append(out, ")\n");
        break;
    case IR_STMT_CHECK:
        indent_to(indent, out);
        smelt_strbuf_printf(out, "check '%s' ", s->check.site->node);
        ir_expr_print(s->check.cond, out);
        smelt_strbuf_append(out, " else report ");
        ir_expr_print(s->check.value, out);
        smelt_strbuf_append(out, " at ");
        ir_expr_print(s->check.position, out);
        smelt_strbuf_append(out, "\n");
        break;
    default: break;
    }
}

/* ---- run-time check messages ---- */

static void put_text(char *buf, size_t size, size_t *n, const char *text, size_t len)
{
    for (size_t i = 0; i < len && *n + 1 < size; i++) buf[(*n)++] = text[i];
}

void ir_check_format(const ir_check_site *site, int64_t value, int64_t position, char *buf,
                     size_t size)
{
    if (!buf || !size) return;
    size_t n = 0;
    char num[32];
    int len = snprintf(buf, size, "node '%s' (%s): ", site->node, site->op);
    n = len < 0 ? 0 : (size_t)len < size ? (size_t)len : size - 1;
    for (const char *p = site->message; *p;) {
        bool is_value = strncmp(p, "{value}", 7) == 0;
        bool is_position = strncmp(p, "{position}", 10) == 0;
        if (is_value || is_position) {
            len = snprintf(num, sizeof num, "%lld", (long long)(is_value ? value : position));
            put_text(buf, size, &n, num, (size_t)len);
            p += is_value ? 7 : 10;
        } else {
            put_text(buf, size, &n, p++, 1);
        }
    }
    buf[n] = '\0';
}
