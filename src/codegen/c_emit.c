/* The C emitter: one translation unit per program.
 *
 * Layout of the output (see tests/golden/ for an example):
 *   prelude      includes, pragma macros, vector types, helper functions
 *   per function outlined parallel tasks, then `SMELT_FN int f_<i>(pool, params)`,
 *                inside `#if SMELT_IN_PART(i)`
 *   run entry    calls the functions in program order, each argument computed
 *                from its slot (input, output, weight or arena offset)
 *   module info  the exported smelt_module_info with the io descriptions
 *
 * A build in parts (build.c, several compilers at once) compiles the file
 * once per part with -DSMELT_PARTS=N -DSMELT_PART=k: part k keeps the
 * functions whose index is k mod N (then hidden, not static), part 0 also
 * the run entry and the module info, which see all functions through
 * prototypes.  Without SMELT_PARTS (AOT packages) it is one plain unit.
 *
 * Identifiers are always ours (f_0, p1, v2, t3); model text appears only as
 * escaped string literals and neutralised comments (c_escape.c).
 */
#include <stdarg.h>
#include <string.h>

#include "codegen/c_internal.h"
#include "codegen/sha256.h"
#include "tir/mutate.h"

/* Temps up to this size live on the stack, as long as the temps live on
 * one path stay under STACK_BUDGET.  Larger ones outside parallel bodies live
 * in the function's workspace, a region after the model's arena (no malloc
 * and no fresh pages per call); inside parallel bodies (one per worker)
 * they are heap-allocated. */
#define STACK_TEMP_MAX ((int64_t)64 << 10)
#define STACK_BUDGET ((int64_t)256 << 10)
/* Unroll by copying the body when extent <= this and the copies are small. */
#define UNROLL_COPY_MAX 16
#define UNROLL_NODE_BUDGET 4096

/* ---- errors and output ---- */

smelt_status cg_fail(cg_emitter *e, smelt_status code, const char *fmt, ...)
{
    if (e->status == SMELT_OK) {
        va_list ap;
        va_start(ap, fmt);
        smelt_verrf(e->ctx, code, fmt, ap);
        va_end(ap);
        e->status = code;
    }
    return e->status;
}

void cg_sb_done(cg_emitter *e, smelt_strbuf *sb)
{
    if (sb->failed) cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
    smelt_strbuf_fini(sb);
}

/* Nesting deeper than this is not indented further: a chain of thousands of
 * fused ops nests a scope per materialised stage, and the indentation alone
 * made most of the bytes gcc had to read. */
#define CG_INDENT_MAX 12

void cg_indent(cg_emitter *e)
{
    int depth = e->indent < CG_INDENT_MAX ? e->indent : CG_INDENT_MAX;
    for (int i = 0; i < depth; i++) smelt_strbuf_append(e->out, "    ");
}

void cg_line(cg_emitter *e, const char *fmt, ...)
{
    cg_indent(e);
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof small) {
        smelt_strbuf_append(e->out, small);
    } else if (n >= 0) {
        char *big = smelt_alloc((size_t)n + 1);
        if (!big) {
            e->out->failed = true;
            return;
        }
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        smelt_strbuf_append(e->out, big);
        smelt_free(big);
    }
    smelt_strbuf_append(e->out, "\n");
}

/* ---- pointer map ---- */

static size_t ptr_hash(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static bool ptrmap_grow(cg_ptrmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    const void **keys = smelt_calloc(ncap, sizeof *keys);
    int *vals = smelt_calloc(ncap, sizeof *vals);
    if (!keys || !vals) {
        smelt_free(keys);
        smelt_free(vals);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t h = ptr_hash(m->keys[i], ncap);
        while (keys[h]) h = (h + 1) & (ncap - 1);
        keys[h] = m->keys[i];
        vals[h] = m->vals[i];
    }
    smelt_free(m->keys);
    smelt_free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = ncap;
    return true;
}

bool cg_ptrmap_put(cg_ptrmap *m, const void *key, int val)
{
    if ((m->len + 1) * 2 > m->cap && !ptrmap_grow(m)) return false;
    size_t h = ptr_hash(key, m->cap);
    while (m->keys[h] && m->keys[h] != key) h = (h + 1) & (m->cap - 1);
    if (!m->keys[h]) m->len++;
    m->keys[h] = key;
    m->vals[h] = val;
    return true;
}

bool cg_ptrmap_get(const cg_ptrmap *m, const void *key, int *val)
{
    if (!m->cap) return false;
    size_t h = ptr_hash(key, m->cap);
    while (m->keys[h]) {
        if (m->keys[h] == key) {
            *val = m->vals[h];
            return true;
        }
        h = (h + 1) & (m->cap - 1);
    }
    return false;
}

void cg_ptrmap_fini(cg_ptrmap *m)
{
    smelt_free(m->keys);
    smelt_free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- names ---- */

int cg_bind_var(cg_emitter *e, const ir_var *v, int *number)
{
    int prev = -1;
    if (!cg_ptrmap_get(&e->var_ids, v, &prev)) prev = -1;
    *number = e->next_var++;
    if (!cg_ptrmap_put(&e->var_ids, v, *number)) cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
    return prev;
}

void cg_unbind_var(cg_emitter *e, const ir_var *v, int previous)
{
    /* -2 marks "unbound" (a key cannot be removed from the open-addressing map) */
    if (!cg_ptrmap_put(&e->var_ids, v, previous >= 0 ? previous : -2))
        cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
}

void cg_var_name(cg_emitter *e, const ir_var *v, smelt_strbuf *out)
{
    int id = -2;
    if (!cg_ptrmap_get(&e->var_ids, v, &id) || id < 0) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: variable '%s' used outside the loop or let that binds it",
                v->name ? v->name : "?");
        smelt_strbuf_append(out, "?");
        return;
    }
    smelt_strbuf_printf(out, "v%d", id);
}

int cg_add_buf(cg_emitter *e, const ir_buffer *b, bool is_param, bool is_const, int number)
{
    if (e->n_bufs == e->cap_bufs) {
        int ncap = e->cap_bufs ? e->cap_bufs * 2 : 32;
        cg_bufinfo *n = smelt_realloc(e->bufs, sizeof *n * (size_t)e->cap_bufs, sizeof *n * (size_t)ncap);
        if (!n) {
            cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
            return -1;
        }
        e->bufs = n;
        e->cap_bufs = ncap;
    }
    int prev = -1;
    if (!cg_ptrmap_get(&e->buf_ids, b, &prev)) prev = -1;
    cg_bufinfo *bi = &e->bufs[e->n_bufs];
    snprintf(bi->name, sizeof bi->name, "%c%d", is_param ? 'p' : 't', number);
    bi->is_const = is_const;
    bi->is_param = is_param;
    bi->used = false;
    if (!cg_ptrmap_put(&e->buf_ids, b, e->n_bufs++)) cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
    return prev;
}

static void remove_buf(cg_emitter *e, const ir_buffer *b, int previous)
{
    if (!cg_ptrmap_put(&e->buf_ids, b, previous >= 0 ? previous : -2))
        cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
}

const cg_bufinfo *cg_buf(cg_emitter *e, const ir_buffer *b)
{
    int i = -2;
    if (!b || !cg_ptrmap_get(&e->buf_ids, b, &i) || i < 0) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: buffer '%s' is neither a parameter nor allocated here",
                b && b->name ? b->name : "?");
        return NULL;
    }
    e->bufs[i].used = true;
    return &e->bufs[i];
}

/* ---- small text helpers ---- */

/* A copy of sb's text (NULL, the emitter failed, when out of memory). */
static char *sb_text(cg_emitter *e, smelt_strbuf *sb)
{
    char *s = sb->failed ? NULL : smelt_strdup(smelt_strbuf_cstr(sb));
    smelt_strbuf_fini(sb);
    if (!s) cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
    return s;
}

static char *expr_text(cg_emitter *e, const ir_expr *x, cg_ctx_kind ctx)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    cg_expr(e, x, ctx, &sb);
    return sb_text(e, &sb);
}

/* "end" of a loop [min, min + extent) as text. */
static char *loop_end_text(cg_emitter *e, const ir_stmt *s)
{
    const ir_expr *mn = s->for_.min, *ext = s->for_.extent;
    if (mn->kind == IR_INT && ext->kind == IR_INT) {
        smelt_strbuf sb;
        smelt_strbuf_init(&sb);
        smelt_strbuf_printf(&sb, "%lld", (long long)(mn->i + ext->i));
        return sb_text(e, &sb);
    }
    if (ir_is_int(mn, 0)) return expr_text(e, ext, CG_INDEX);
    char *a = expr_text(e, mn, CG_INDEX), *b = expr_text(e, ext, CG_INDEX);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    smelt_strbuf_printf(&sb, "(%s + %s)", a ? a : "", b ? b : "");
    smelt_free(a);
    smelt_free(b);
    return sb_text(e, &sb);
}

static const char *var_type(cg_emitter *e, const ir_var *v)
{
    const char *t = cg_value_type(v->dtype);
    if (!t) {
        cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: variable of type %s", smelt_dtype_name(v->dtype));
        return "int64_t";
    }
    return t;
}

static void comment_line(cg_emitter *e, const char *prefix, const char *text)
{
    cg_indent(e);
    smelt_strbuf_printf(e->out, "/* %s", prefix);
    cg_append_comment_text(e->out, text, 120);
    smelt_strbuf_append(e->out, " */\n");
}

/* ---- loops ---- */

void cg_scalar_for(cg_emitter *e, const ir_stmt *s, const char *pragma)
{
    char *mn = expr_text(e, s->for_.min, CG_INDEX);
    char *end = loop_end_text(e, s);
    int id;
    int prev = cg_bind_var(e, s->for_.var, &id);
    if (pragma) cg_line(e, "%s", pragma);
    cg_indent(e);
    smelt_strbuf_printf(e->out, "for (%s v%d = %s; v%d < %s; ++v%d) { /* ", var_type(e, s->for_.var),
                        id, mn ? mn : "", id, end ? end : "", id);
    cg_append_comment_text(e->out, s->for_.var->name, 40);
    smelt_strbuf_append(e->out, " */\n");
    e->indent++;
    cg_stmt(e, s->for_.body);
    e->indent--;
    cg_line(e, "}");
    cg_unbind_var(e, s->for_.var, prev);
    smelt_free(mn);
    smelt_free(end);
}

static int count_nodes_expr(const ir_expr *x, int budget)
{
    if (!x || budget <= 0) return 0;
    switch (x->kind) {
    case IR_INT:
    case IR_FLOAT:
    case IR_VAR: return 1;
    case IR_NOT:
    case IR_CAST: return 1 + count_nodes_expr(x->bin.a, budget - 1);
    case IR_SELECT: {
        int n = 1 + count_nodes_expr(x->select.cond, budget - 1);
        n += count_nodes_expr(x->select.t, budget - n);
        return n + count_nodes_expr(x->select.f, budget - n);
    }
    case IR_CALL: {
        int n = 1;
        for (int i = 0; i < x->call.n; i++) n += count_nodes_expr(x->call.args[i], budget - n);
        return n;
    }
    case IR_LOAD: return 1 + (x->load.n ? count_nodes_expr(x->load.idx[0], budget - 1) : 0);
    case IR_REDUCE: return 1;
    default: {
        int n = 1 + count_nodes_expr(x->bin.a, budget - 1);
        return n + count_nodes_expr(x->bin.b, budget - n);
    }
    }
}

static int count_nodes(const ir_stmt *s, int budget)
{
    if (!s || budget <= 0) return 0;
    switch (s->kind) {
    case IR_STMT_FOR: return 1 + count_nodes(s->for_.body, budget - 1);
    case IR_STMT_SEQ: {
        int n = 0;
        for (int i = 0; i < s->seq.n && n < budget; i++) n += count_nodes(s->seq.items[i], budget - n);
        return n;
    }
    case IR_STMT_LET:
        return 1 + count_nodes_expr(s->let.value, budget) + count_nodes(s->let.body, budget);
    case IR_STMT_STORE:
        return 1 + count_nodes_expr(s->store.value, budget) +
               (s->store.n ? count_nodes_expr(s->store.idx[0], budget) : 0);
    case IR_STMT_ALLOCATE: return 1 + count_nodes(s->alloc.body, budget - 1);
    case IR_STMT_IF:
        return 1 + count_nodes(s->if_.then_, budget) + count_nodes(s->if_.else_, budget);
    default: return 1;
    }
}

/* Full unrolling by copies for small constant extents (register blocking
 * relies on it); otherwise a pragma the C compiler may honour. */
static void emit_unrolled(cg_emitter *e, const ir_stmt *s)
{
    const ir_expr *ext = s->for_.extent;
    if (ext->kind == IR_INT && ext->i >= 0 && ext->i <= UNROLL_COPY_MAX &&
        count_nodes(s->for_.body, UNROLL_NODE_BUDGET) * ext->i <= UNROLL_NODE_BUDGET) {
        char *mn = expr_text(e, s->for_.min, CG_INDEX);
        for (int64_t k = 0; k < ext->i; k++) {
            int id;
            int prev = cg_bind_var(e, s->for_.var, &id);
            cg_line(e, "{");
            e->indent++;
            if (k == 0)
                cg_line(e, "const %s v%d = %s;", var_type(e, s->for_.var), id, mn ? mn : "");
            else
                cg_line(e, "const %s v%d = %s + %lld;", var_type(e, s->for_.var), id, mn ? mn : "",
                        (long long)k);
            cg_stmt(e, s->for_.body);
            e->indent--;
            cg_line(e, "}");
            cg_unbind_var(e, s->for_.var, prev);
        }
        smelt_free(mn);
        return;
    }
    char pragma[48];
    snprintf(pragma, sizeof pragma, "SMELT_UNROLL(%lld)",
             (long long)(ext->kind == IR_INT && ext->i > 0 && ext->i <= 64 ? ext->i : 4));
    cg_scalar_for(e, s, pragma);
}

/* ---- parallel loops: outlined into a task + closure ---- */

typedef struct free_set {
    cg_ptrmap bound;      /* var/buffer -> binding depth inside the body */
    cg_ptrmap seen;       /* already collected */
    smelt_ptrvec vars;    /* free ir_var* in first-use order */
    smelt_ptrvec bufs;    /* free ir_buffer* in first-use order */
    bool has_check;       /* the body holds an IR_STMT_CHECK: it needs rterr_ */
    bool failed;
} free_set;

static void fs_use(free_set *fs, const void *p, smelt_ptrvec *list)
{
    int depth = 0, dummy;
    if (cg_ptrmap_get(&fs->bound, p, &depth) && depth > 0) return;
    if (cg_ptrmap_get(&fs->seen, p, &dummy)) return;
    if (!cg_ptrmap_put(&fs->seen, p, 1) || !smelt_ptrvec_push(list, (void *)p)) fs->failed = true;
}

static void fs_bind(free_set *fs, const void *p, int delta)
{
    int depth = 0;
    cg_ptrmap_get(&fs->bound, p, &depth);
    if (!cg_ptrmap_put(&fs->bound, p, depth + delta)) fs->failed = true;
}

static void fs_expr(free_set *fs, const ir_expr *x)
{
    if (!x) return;
    switch (x->kind) {
    case IR_INT:
    case IR_FLOAT: return;
    case IR_VAR: fs_use(fs, x->var, &fs->vars); return;
    case IR_NOT:
    case IR_CAST: fs_expr(fs, x->bin.a); return;
    case IR_SELECT:
        fs_expr(fs, x->select.cond);
        fs_expr(fs, x->select.t);
        fs_expr(fs, x->select.f);
        return;
    case IR_CALL:
        for (int i = 0; i < x->call.n; i++) fs_expr(fs, x->call.args[i]);
        return;
    case IR_LOAD:
        fs_use(fs, x->load.buf, &fs->bufs);
        for (int i = 0; i < x->load.n; i++) fs_expr(fs, x->load.idx[i]);
        return;
    case IR_REDUCE: fs_expr(fs, x->reduce.src); return;
    default:
        fs_expr(fs, x->bin.a);
        fs_expr(fs, x->bin.b);
        return;
    }
}

static void fs_stmt(free_set *fs, const ir_stmt *s)
{
    if (!s) return;
    switch (s->kind) {
    case IR_STMT_FOR:
        fs_expr(fs, s->for_.min);
        fs_expr(fs, s->for_.extent);
        fs_bind(fs, s->for_.var, 1);
        fs_stmt(fs, s->for_.body);
        fs_bind(fs, s->for_.var, -1);
        return;
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++) fs_stmt(fs, s->seq.items[i]);
        return;
    case IR_STMT_LET:
        fs_expr(fs, s->let.value);
        fs_bind(fs, s->let.var, 1);
        fs_stmt(fs, s->let.body);
        fs_bind(fs, s->let.var, -1);
        return;
    case IR_STMT_STORE:
        fs_use(fs, s->store.buf, &fs->bufs);
        for (int i = 0; i < s->store.n; i++) fs_expr(fs, s->store.idx[i]);
        fs_expr(fs, s->store.value);
        return;
    case IR_STMT_ALLOCATE:
        fs_bind(fs, s->alloc.buf, 1);
        fs_stmt(fs, s->alloc.body);
        fs_bind(fs, s->alloc.buf, -1);
        return;
    case IR_STMT_IF:
        fs_expr(fs, s->if_.cond);
        fs_stmt(fs, s->if_.then_);
        fs_stmt(fs, s->if_.else_);
        return;
    case IR_STMT_CALL:
        for (int i = 0; i < s->call.n; i++) {
            if (s->call.args[i].buf) fs_use(fs, s->call.args[i].buf, &fs->bufs);
            fs_expr(fs, s->call.args[i].index);
        }
        return;
    case IR_STMT_CHECK:
        fs->has_check = true;
        fs_expr(fs, s->check.cond);
        fs_expr(fs, s->check.value);
        fs_expr(fs, s->check.position);
        return;
    default: return;
    }
}

static void fs_fini(free_set *fs)
{
    cg_ptrmap_fini(&fs->bound);
    cg_ptrmap_fini(&fs->seen);
    smelt_ptrvec_fini(&fs->vars);
    smelt_ptrvec_fini(&fs->bufs);
}

/* Body of the task function: the loop over [lo + begin, lo + end). */
static void emit_task_body(cg_emitter *e, const ir_stmt *s, smelt_strbuf *body)
{
    smelt_strbuf *saved_out = e->out;
    int saved_indent = e->indent;
    int64_t saved_stack = e->stack_bytes;
    e->out = body;
    e->indent = 1;
    e->stack_bytes = 0; /* a worker's own stack */
    e->in_task = true;
    int id;
    int prev = cg_bind_var(e, s->for_.var, &id);
    cg_line(e, "const int64_t lo_ = cl_->lo;");
    cg_indent(e);
    smelt_strbuf_printf(e->out, "for (%s v%d = lo_ + begin_; v%d < lo_ + end_; ++v%d) { /* ",
                        var_type(e, s->for_.var), id, id, id);
    cg_append_comment_text(e->out, s->for_.var->name, 40);
    smelt_strbuf_append(e->out, " */\n");
    e->indent++;
    cg_stmt(e, s->for_.body);
    e->indent--;
    cg_line(e, "}");
    cg_unbind_var(e, s->for_.var, prev);
    e->in_task = false;
    e->out = saved_out;
    e->indent = saved_indent;
    e->stack_bytes = saved_stack;
}

static const char *buf_ctype(const ir_buffer *b) { return cg_storage_type(b->dtype); }

static void emit_task_function(cg_emitter *e, const free_set *fs, const char *name,
                               const smelt_strbuf *body, bool needs_err)
{
    smelt_strbuf *t = &e->tasks;
    smelt_strbuf_printf(t, "typedef struct %s_t {\n", name);
    for (int i = 0; i < fs->bufs.len; i++) {
        const ir_buffer *b = fs->bufs.items[i];
        const cg_bufinfo *bi = cg_buf(e, b);
        if (!bi) return;
        smelt_strbuf_printf(t, "    %s%s *%s;\n", bi->is_const ? "const " : "", buf_ctype(b), bi->name);
    }
    for (int i = 0; i < fs->vars.len; i++) {
        const ir_var *v = fs->vars.items[i];
        smelt_strbuf_printf(t, "    %s ", var_type(e, v));
        cg_var_name(e, v, t);
        smelt_strbuf_append(t, ";\n");
    }
    smelt_strbuf_append(t, "    int64_t lo;\n");
    if (needs_err) smelt_strbuf_append(t, "    int *err;\n");
    if (fs->has_check) smelt_strbuf_append(t, "    smelt_rt_run_error *rterr;\n");
    smelt_strbuf_printf(t, "} %s_t;\n\n", name);
    smelt_strbuf_printf(t, "static void %s(void *arg_, int64_t begin_, int64_t end_)\n{\n", name);
    smelt_strbuf_printf(t, "    const %s_t *cl_ = (const %s_t *)arg_;\n", name, name);
    for (int i = 0; i < fs->bufs.len; i++) {
        const ir_buffer *b = fs->bufs.items[i];
        const cg_bufinfo *bi = cg_buf(e, b);
        smelt_strbuf_printf(t, "    %s%s *%s%s = cl_->%s;\n", bi->is_const ? "const " : "", buf_ctype(b),
                            e->use_restrict ? "restrict " : "", bi->name, bi->name);
    }
    for (int i = 0; i < fs->vars.len; i++) {
        const ir_var *v = fs->vars.items[i];
        smelt_strbuf_printf(t, "    const %s ", var_type(e, v));
        cg_var_name(e, v, t);
        smelt_strbuf_append(t, " = cl_->");
        cg_var_name(e, v, t);
        smelt_strbuf_append(t, ";\n");
    }
    if (needs_err) smelt_strbuf_append(t, "    int err_ = 0;\n");
    if (fs->has_check) smelt_strbuf_append(t, "    smelt_rt_run_error *rterr_ = cl_->rterr;\n");
    smelt_strbuf_appendn(t, body->data ? body->data : "", body->len);
    if (needs_err) {
        e->helpers[CG_H_SETERR] = true;
        smelt_strbuf_append(t, "    if (err_) smelt_seterr_(cl_->err);\n");
    }
    smelt_strbuf_append(t, "}\n\n");
}

static void emit_parallel(cg_emitter *e, const ir_stmt *s)
{
    free_set fs;
    memset(&fs, 0, sizeof fs);
    fs_bind(&fs, s->for_.var, 1);
    fs_stmt(&fs, s->for_.body);
    if (fs.failed) {
        cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
        fs_fini(&fs);
        return;
    }
    char name[48];
    snprintf(name, sizeof name, "f%d_task%d", e->func_index, e->n_tasks++);
    bool saved_err = e->needs_err;
    e->needs_err = false;
    smelt_strbuf body;
    smelt_strbuf_init(&body);
    emit_task_body(e, s, &body);
    bool task_err = e->needs_err;
    e->needs_err = saved_err || task_err;
    emit_task_function(e, &fs, name, &body, task_err);
    cg_sb_done(e, &body);

    /* The call site: fill the closure and run on the pool. */
    char *mn = expr_text(e, s->for_.min, CG_INDEX);
    char *ext = expr_text(e, s->for_.extent, CG_INDEX);
    cg_line(e, "{");
    e->indent++;
    cg_line(e, "%s_t cl_;", name);
    for (int i = 0; i < fs.bufs.len; i++) {
        const cg_bufinfo *bi = cg_buf(e, fs.bufs.items[i]);
        if (bi) cg_line(e, "cl_.%s = %s;", bi->name, bi->name);
    }
    for (int i = 0; i < fs.vars.len; i++) {
        smelt_strbuf n;
        smelt_strbuf_init(&n);
        cg_var_name(e, fs.vars.items[i], &n);
        cg_line(e, "cl_.%s = %s;", smelt_strbuf_cstr(&n), smelt_strbuf_cstr(&n));
        cg_sb_done(e, &n);
    }
    cg_line(e, "cl_.lo = %s;", mn ? mn : "0");
    if (task_err) cg_line(e, "cl_.err = &err_;");
    if (fs.has_check) cg_line(e, "cl_.rterr = rterr_;");
    cg_line(e, "smelt_par_(pool, %s, %s, &cl_);", ext ? ext : "0", name);
    e->indent--;
    cg_line(e, "}");
    e->helpers[CG_H_PARALLEL] = true;
    e->uses_pool = true;
    smelt_free(mn);
    smelt_free(ext);
    fs_fini(&fs);
}

/* "function f3_conv (conv1 .. relu1 (2 nodes))": where a GPU refusal is. */
static const char *func_desc(const cg_emitter *e, char *buf, size_t cap)
{
    const ir_func *f = e->prog && e->func_index >= 0 && e->func_index < e->prog->n_funcs
                           ? e->prog->funcs[e->func_index] : NULL;
    snprintf(buf, cap, "function %s (%s)", f && f->name ? f->name : "?",
             f && f->comment ? f->comment : "");
    return buf;
}

static void emit_for(cg_emitter *e, const ir_stmt *s)
{
    switch (s->for_.kind) {
    case IR_FOR_SERIAL: cg_scalar_for(e, s, NULL); return;
    case IR_FOR_PARALLEL:
        if (e->gpu) { /* inside a GPU thread */
            cg_scalar_for(e, s, NULL);
        } else if (e->in_task) {
            cg_line(e, "/* nested parallel loop: runs serially inside the outer one */");
            cg_scalar_for(e, s, NULL);
        } else {
            emit_parallel(e, s);
        }
        return;
    case IR_FOR_VECTORIZED:
        if (e->gpu) cg_scalar_for(e, s, NULL); /* GPU kernels have no vector types here */
        else cg_vector_for(e, s);
        return;
    case IR_FOR_UNROLLED: emit_unrolled(e, s); return;
    case IR_FOR_GPU_BLOCK:
    case IR_FOR_GPU_THREAD: {
        /* gpu_emit.c emits the bound loops it accepts itself; one met here
         * is misplaced (or the target is a CPU) */
        const char *idx = s->for_.kind == IR_FOR_GPU_BLOCK ? "blockIdx.x" : "threadIdx.x";
        char where[400];
        func_desc(e, where, sizeof where);
        if (!e->gpu)
            cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: %s: loop '%s' is bound to %s (schedule step "
                    "bind), which only GPU targets (opencl, cuda) have; target '%s' is a CPU", where,
                    s->for_.var->name, idx, e->target->name);
        else if (s->for_.kind == IR_FOR_GPU_BLOCK)
            cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: %s: loop '%s' is bound to blockIdx.x but is "
                    "not the outermost loop of its kernel (bind the outermost loop of the stage)",
                    where, s->for_.var->name);
        else
            cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: %s: loop '%s' is bound to threadIdx.x inside "
                    "another thread loop or a loop only thread 0 runs (one threadIdx.x loop per "
                    "nest)", where, s->for_.var->name);
        return;
    }
    }
    cg_fail(e, SMELT_ERR_INTERNAL, "codegen: unknown loop kind %d", (int)s->for_.kind);
}

/* ---- other statements ---- */

static void emit_let(cg_emitter *e, const ir_stmt *s)
{
    cg_ctx_kind ctx = s->let.var->dtype == SMELT_DT_INT64 ? CG_INDEX : CG_VALUE;
    char *val = expr_text(e, s->let.value, ctx);
    int id;
    const char *type = var_type(e, s->let.var);
    cg_line(e, "{");
    e->indent++;
    int prev = cg_bind_var(e, s->let.var, &id);
    cg_line(e, "const %s v%d = %s;", type, id, val ? val : "0");
    cg_stmt(e, s->let.body);
    cg_unbind_var(e, s->let.var, prev);
    e->indent--;
    cg_line(e, "}");
    smelt_free(val);
}

static void emit_store(cg_emitter *e, const ir_stmt *s)
{
    if (s->store.n != 1) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: store to '%s' has %d indices (not flattened)",
                s->store.buf->name, s->store.n);
        return;
    }
    const cg_bufinfo *bi = cg_buf(e, s->store.buf);
    if (bi && bi->is_const) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: store into read-only buffer '%s'", s->store.buf->name);
        return;
    }
    cg_indent(e);
    cg_element(e, s->store.buf, s->store.idx[0], e->out);
    smelt_strbuf_append(e->out, " = ");
    cg_store_value(e, s->store.value, s->store.buf->dtype, e->out);
    smelt_strbuf_append(e->out, ";\n");
}

static bool temp_bytes(cg_emitter *e, const ir_buffer *b, int64_t *bytes)
{
    int64_t n = 1;
    for (int i = 0; i < b->rank; i++)
        if (b->shape[i] < 0 || smelt_mul_overflow_i64(n, b->shape[i], &n)) n = -1;
    if (n < 0 || smelt_mul_overflow_i64(n, (int64_t)smelt_dtype_size(b->dtype), bytes) ||
        *bytes > SMELT_LIMIT_TENSOR_BYTES) {
        cg_fail(e, SMELT_ERR_LIMIT, "codegen: temporary buffer '%s' is too large or has a bad shape",
                b->name);
        return false;
    }
    return true;
}

static void emit_allocate(cg_emitter *e, const ir_stmt *s)
{
    const ir_buffer *b = s->alloc.buf;
    const char *type = cg_storage_type(b->dtype);
    int64_t bytes;
    if (!type) {
        cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: temporary of type %s", smelt_dtype_name(b->dtype));
        return;
    }
    if (!temp_bytes(e, b, &bytes)) return;
    int64_t elems = bytes / (int64_t)smelt_dtype_size(b->dtype);
    if (elems == 0) elems = 1;
    int number = e->next_temp++;
    bool on_stack = bytes <= STACK_TEMP_MAX && e->stack_bytes + bytes <= STACK_BUDGET;
    cg_line(e, "{");
    e->indent++;
    int prev = cg_add_buf(e, b, false, false, number);
    comment_line(e, on_stack ? "stack temp: " : e->in_task ? "heap temp: " : "workspace temp: ",
                 b->name);
    if (!on_stack && e->gpu) {
        char where[400];
        cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: %s: temporary '%s' (%lld bytes) inside a GPU "
                "thread is too large for private memory; compute the stage at the kernel's root",
                func_desc(e, where, sizeof where), b->name, (long long)bytes);
    } else if (on_stack) {
        cg_line(e, "%s t%d[%lld] SMELT_ALIGN64;", type, number, (long long)elems);
        cg_line(e, "(void)t%d;", number);
        e->stack_bytes += bytes;
        cg_stmt(e, s->alloc.body);
        e->stack_bytes -= bytes;
    } else if (!e->in_task) {
        int64_t size = (elems * (int64_t)smelt_dtype_size(b->dtype) + 63) / 64 * 64;
        cg_line(e, "%s *t%d = (%s *)(void *)(ws_ + %lld);", type, number, type,
                (long long)e->ws_used);
        e->ws_used += size;
        if (e->ws_used > e->ws_peak) e->ws_peak = e->ws_used;
        cg_stmt(e, s->alloc.body);
        e->ws_used -= size;
    } else {
        e->helpers[CG_H_ALLOC64] = true;
        e->needs_err = true;
        cg_line(e, "%s *t%d = (%s *)smelt_alloc64_((size_t)%lld);", type, number, type,
                (long long)(elems * (int64_t)smelt_dtype_size(b->dtype)));
        cg_line(e, "if (t%d) {", number);
        e->indent++;
        cg_stmt(e, s->alloc.body);
        cg_line(e, "smelt_free64_(t%d);", number);
        e->indent--;
        cg_line(e, "} else {");
        cg_line(e, "    err_ = 1;");
        cg_line(e, "}");
    }
    remove_buf(e, b, prev);
    e->indent--;
    cg_line(e, "}");
}

/* The site's number in the module's table (program order). */
static int site_index(cg_emitter *e, const ir_check_site *site)
{
    for (int i = 0; i < e->sites.len; i++)
        if (e->sites.items[i] == site) return i;
    if (!smelt_ptrvec_push(&e->sites, (void *)site)) {
        cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
        return -1;
    }
    return e->sites.len - 1;
}

static void emit_check(cg_emitter *e, const ir_stmt *s)
{
    int site = site_index(e, s->check.site);
    if (e->gpu) { /* the first failing thread records it (gpu_emit.c's prelude) */
        char *cond = expr_text(e, s->check.cond, CG_INDEX);
        char *val = expr_text(e, s->check.value, CG_INDEX);
        char *pos = expr_text(e, s->check.position, CG_INDEX);
        if (site >= 0 && cond && val && pos)
            cg_line(e, "if (!(%s)) smelt_gpu_check_fail_(rterr_, %d, (int64_t)(%s), (int64_t)(%s));",
                    cond, site, val, pos);
        e->gpu_checks = true;
        smelt_free(cond);
        smelt_free(val);
        smelt_free(pos);
        return;
    }
    char *cond = expr_text(e, s->check.cond, CG_INDEX);
    char *val = expr_text(e, s->check.value, CG_INDEX);
    char *pos = expr_text(e, s->check.position, CG_INDEX);
    if (site >= 0 && cond && val && pos) {
        cg_line(e, "if (!(%s)) {", cond);
        cg_line(e, "    smelt_check_fail_(rterr_, %d, (int64_t)(%s), (int64_t)(%s));", site, val, pos);
        cg_line(e, "    err_ = 1;");
        cg_line(e, "}");
    } else if (e->status == SMELT_OK) {
        cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
    }
    e->needs_err = true;
    e->helpers[CG_H_CHECK_FAIL] = true;
    smelt_free(cond);
    smelt_free(val);
    smelt_free(pos);
}

static void emit_if(cg_emitter *e, const ir_stmt *s)
{
    char *cond = expr_text(e, s->if_.cond, CG_INDEX);
    cg_line(e, "if (%s) {", cond ? cond : "0");
    smelt_free(cond);
    e->indent++;
    cg_stmt(e, s->if_.then_);
    e->indent--;
    if (s->if_.else_) {
        cg_line(e, "} else {");
        e->indent++;
        cg_stmt(e, s->if_.else_);
        e->indent--;
    }
    cg_line(e, "}");
}

static const cg_microkernel *find_microkernel(cg_emitter *e, const char *name)
{
    for (int i = 0; e->opts && i < e->opts->n_microkernels; i++)
        if (!strcmp(e->opts->microkernels[i].name, name)) return &e->opts->microkernels[i];
    return cg_microkernel_find_for(e->target, name);
}

static bool note_microkernel(cg_emitter *e, const cg_microkernel *k)
{
    for (int i = 0; i < e->n_microkernels; i++)
        if (e->microkernels[i] == k) return true;
    if (e->n_microkernels == (int)SMELT_ARRAY_LEN(e->microkernels)) {
        cg_fail(e, SMELT_ERR_LIMIT, "codegen: more than %d distinct micro-kernels",
                (int)SMELT_ARRAY_LEN(e->microkernels));
        return false;
    }
    e->microkernels[e->n_microkernels++] = k;
    return true;
}

/* A call argument as text: `(buf + (index))` for a buffer (pointer
 * arithmetic keeps a GPU pointer's address space), else the scalar. */
static char *call_arg_text(cg_emitter *e, const ir_call_arg *a)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    if (a->buf) {
        const cg_bufinfo *bi = cg_buf(e, a->buf);
        smelt_strbuf_printf(&sb, "(%s + (", bi ? bi->name : "?");
        cg_expr(e, a->index, CG_INDEX, &sb);
        smelt_strbuf_append(&sb, "))");
    } else {
        cg_expr(e, a->index, CG_INDEX, &sb);
    }
    return sb_text(e, &sb);
}

/* GPU kernels cannot call the CPU micro-kernels (vector types; OpenCL 1.2
 * has no generic pointers): the two the ops' own loop IR uses (the RNNs'
 * gemm, the layout transpose) are emitted as plain loops in the thread,
 * each C element accumulated in k order like the micro-kernel's. */
static bool emit_gpu_microkernel(cg_emitter *e, const ir_stmt *s)
{
    bool gemm = strcmp(s->call.kernel, "smelt.gemm_f32") == 0 && s->call.n == 11;
    bool transpose = strcmp(s->call.kernel, "smelt.transpose_f32") == 0 && s->call.n == 6;
    if (!gemm && !transpose) return false;
    char *a[11] = {0};
    for (int i = 0; i < s->call.n; i++) a[i] = call_arg_text(e, &s->call.args[i]);
    int n = e->next_tmp++;
    bool ok = e->status == SMELT_OK;
    for (int i = 0; ok && i < s->call.n; i++) ok = a[i] != NULL;
    if (ok && gemm) {
        cg_line(e, "{ /* smelt.gemm_f32: C[i*ldc + j] += sum_k A[i*lda_i + k*lda_k] * B[k*ldb_k + j*ldb_j] */");
        cg_line(e, "    const int64_t M%d = %s, N%d = %s, K%d = %s;", n, a[3], n, a[4], n, a[5]);
        cg_line(e, "    const int64_t ldc%d = %s, lai%d = %s, lak%d = %s, lbk%d = %s, lbj%d = %s;", n, a[6],
                n, a[7], n, a[8], n, a[9], n, a[10]);
        cg_line(e, "    for (int64_t i%d = 0; i%d < M%d; ++i%d)", n, n, n, n);
        cg_line(e, "        for (int64_t j%d = 0; j%d < N%d; ++j%d) {", n, n, n, n);
        cg_line(e, "            float acc%d = %s[i%d * ldc%d + j%d];", n, a[0], n, n, n);
        cg_line(e, "            for (int64_t k%d = 0; k%d < K%d; ++k%d)", n, n, n, n);
        cg_line(e, "                acc%d += %s[i%d * lai%d + k%d * lak%d] * %s[k%d * lbk%d + j%d * lbj%d];", n,
                a[1], n, n, n, n, a[2], n, n, n, n);
        cg_line(e, "            %s[i%d * ldc%d + j%d] = acc%d;", a[0], n, n, n, n);
        cg_line(e, "        }");
        cg_line(e, "}");
    } else if (ok) {
        cg_line(e, "{ /* smelt.transpose_f32: dst[i*ldd + j] = src[i + j*lds] */");
        cg_line(e, "    const int64_t M%d = %s, N%d = %s, ldd%d = %s, lds%d = %s;", n, a[2], n, a[3], n,
                a[4], n, a[5]);
        cg_line(e, "    for (int64_t i%d = 0; i%d < M%d; ++i%d)", n, n, n, n);
        cg_line(e, "        for (int64_t j%d = 0; j%d < N%d; ++j%d)", n, n, n, n);
        cg_line(e, "            %s[i%d * ldd%d + j%d] = %s[i%d + j%d * lds%d];", a[0], n, n, n, a[1], n, n,
                n);
        cg_line(e, "}");
    }
    for (int i = 0; i < s->call.n; i++) smelt_free(a[i]);
    return true;
}

static void emit_call_stmt(cg_emitter *e, const ir_stmt *s)
{
    if (e->gpu && emit_gpu_microkernel(e, s)) return;
    if (e->gpu) {
        char where[400];
        cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: %s: micro-kernel '%s' (schedule step tensorize, "
                "or the op's own loop IR) has no GPU version (target '%s')",
                func_desc(e, where, sizeof where), s->call.kernel, e->target->name);
        return;
    }
    const cg_microkernel *k = find_microkernel(e, s->call.kernel);
    if (!k) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: unknown micro-kernel '%s'", s->call.kernel);
        return;
    }
    if (!note_microkernel(e, k)) return;
    cg_indent(e);
    smelt_strbuf_printf(e->out, "%s(", k->c_name);
    for (int i = 0; i < s->call.n; i++) {
        const ir_call_arg *a = &s->call.args[i];
        if (i) smelt_strbuf_append(e->out, ", ");
        if (a->buf) {
            const cg_bufinfo *bi = cg_buf(e, a->buf);
            smelt_strbuf_printf(e->out, "&%s[", bi ? bi->name : "?");
            cg_expr(e, a->index, CG_INDEX, e->out);
            smelt_strbuf_append(e->out, "]");
        } else {
            cg_expr(e, a->index, a->index && a->index->dtype == SMELT_DT_INT64 ? CG_INDEX : CG_VALUE,
                    e->out);
        }
    }
    smelt_strbuf_append(e->out, ");\n");
}

void cg_stmt(cg_emitter *e, const ir_stmt *s)
{
    if (!s || e->status != SMELT_OK) return;
    if (e->gpu && e->gpu_stmt && e->gpu_stmt(e, s)) return;
    switch (s->kind) {
    case IR_STMT_FOR: emit_for(e, s); return;
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++) cg_stmt(e, s->seq.items[i]);
        return;
    case IR_STMT_LET: emit_let(e, s); return;
    case IR_STMT_STORE: emit_store(e, s); return;
    case IR_STMT_ALLOCATE: emit_allocate(e, s); return;
    case IR_STMT_IF: emit_if(e, s); return;
    case IR_STMT_CALL: emit_call_stmt(e, s); return;
    case IR_STMT_CHECK: emit_check(e, s); return;
    default: cg_fail(e, SMELT_ERR_INTERNAL, "codegen: unknown statement kind %d", (int)s->kind);
    }
}

/* ---- functions ---- */

static int64_t buffer_bytes(const ir_buffer *b);
int64_t cg_buffer_bytes(const ir_buffer *b) { return buffer_bytes(b); }

static int64_t buffer_bytes(const ir_buffer *b)
{
    int64_t n = (int64_t)smelt_dtype_size(b->dtype);
    for (int i = 0; i < b->rank; i++)
        if (b->shape[i] < 0 || smelt_mul_overflow_i64(n, b->shape[i], &n)) return -1;
    return n;
}

static bool param_is_const(const ir_buffer *b)
{
    return b->kind == IR_BUF_INPUT || b->kind == IR_BUF_CONST;
}

bool cg_param_is_const(const ir_buffer *b) { return param_is_const(b); }

/* Two slots may share memory: same input/output, or overlapping byte ranges
 * of the arena or the weights. */
static bool slots_overlap(const ir_slot *a, int64_t na, const ir_slot *b, int64_t nb)
{
    if (a->kind != b->kind) return false;
    if (a->kind == IR_SLOT_INPUT || a->kind == IR_SLOT_OUTPUT) return a->index == b->index;
    return na > 0 && nb > 0 && a->offset < b->offset + nb && b->offset < a->offset + na;
}

/* restrict is only sound if no call passes overlapping memory to two
 * parameters one of which is written. */
static bool func_may_use_restrict(const ir_program *p, const ir_func *f)
{
    for (int c = 0; c < p->n_calls; c++) {
        if (p->calls[c].func != f) continue;
        for (int i = 0; i < f->n_params; i++)
            for (int j = i + 1; j < f->n_params; j++) {
                if (param_is_const(f->params[i]) && param_is_const(f->params[j])) continue;
                if (slots_overlap(&p->calls[c].args[i], buffer_bytes(f->params[i]),
                                  &p->calls[c].args[j], buffer_bytes(f->params[j])))
                    return false;
            }
    }
    return true;
}

void cg_remove_buf(cg_emitter *e, const ir_buffer *b, int previous) { remove_buf(e, b, previous); }

static void reset_function_state(cg_emitter *e, int index)
{
    cg_ptrmap_fini(&e->var_ids);
    cg_ptrmap_fini(&e->buf_ids);
    e->n_bufs = 0;
    e->next_var = 0;
    e->next_temp = 0;
    e->next_tmp = 0;
    e->stack_bytes = 0;
    e->ws_used = 0;
    e->ws_peak = 0;
    e->n_tasks = 0;
    e->in_task = false;
    e->uses_pool = false;
    e->needs_err = false;
    e->func_index = index;
    smelt_strbuf_fini(&e->tasks);
    smelt_strbuf_init(&e->tasks);
}

static void emit_signature(cg_emitter *e, const ir_func *f, smelt_strbuf *out)
{
    smelt_strbuf_printf(out, "SMELT_FN int f_%d(smelt_rt_pool *pool", e->func_index);
    if (e->has_checks) smelt_strbuf_append(out, ", smelt_rt_run_error *rterr_");
    if (e->ws_peak > 0) smelt_strbuf_append(out, ", unsigned char *ws_");
    for (int i = 0; i < f->n_params; i++) {
        const ir_buffer *b = f->params[i];
        smelt_strbuf_printf(out, ", %s%s *%sp%d", param_is_const(b) ? "const " : "",
                            cg_storage_type(b->dtype), e->use_restrict ? "restrict " : "", i);
    }
    smelt_strbuf_append(out, ")");
}

static void note_check(void *ctx, const ir_stmt *s)
{
    bool *found = ctx;
    if (*found) return;
    if (s->kind == IR_STMT_CHECK) *found = true;
    else tir_stmt_visit_children(s, NULL, note_check, ctx);
}

static bool holds_check(const ir_stmt *s)
{
    bool found = false;
    if (s) note_check(&found, s);
    return found;
}

/* Hash text with each occurrence of own replaced by one fixed name. */
static void hash_renamed(cg_sha256 *h, const char *text, const char *own)
{
    size_t own_len = strlen(own);
    const char *t = text ? text : "";
    for (const char *hit; (hit = strstr(t, own)) != NULL; t = hit + own_len) {
        cg_sha256_update(h, t, (size_t)(hit - t));
        cg_sha256_update(h, "f#_task", 7);
    }
    cg_sha256_update(h, t, strlen(t));
}

/* The digest of a function's code (its outlined tasks, signature and body,
 * not its comment), with its own index taken out of the names it makes
 * (f_<i>, f<i>_task<k>): two fused groups of one task (ResNet-50 has 27
 * tasks in 54 convolutions) then compare equal and share one C function,
 * which halves the C that gcc compiles.  Everything a body reads comes in
 * through its parameters, so equal code is equal behaviour. */
static void code_digest(cg_emitter *e, const ir_func *f, const smelt_strbuf *body, char hex[65])
{
    smelt_strbuf sig;
    smelt_strbuf_init(&sig);
    emit_signature(e, f, &sig);
    char own[32];
    snprintf(own, sizeof own, "f%d_task", e->func_index);
    cg_sha256 h;
    cg_sha256_init(&h);
    hash_renamed(&h, e->tasks.data, own);
    const char *open = sig.data ? strchr(sig.data, '(') : NULL; /* after "f_<i>" */
    hash_renamed(&h, open, own);
    hash_renamed(&h, body->data, own);
    unsigned char d[32];
    cg_sha256_final(&h, d);
    cg_sha256_hex(d, hex);
    if (sig.failed) cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
    smelt_strbuf_fini(&sig);
}

/* Whether function index runs the code of one emitted before it (noted in
 * func_code); otherwise it is registered as the first with its code. */
static bool shares_code(cg_emitter *e, const ir_func *f, int index, const smelt_strbuf *body)
{
    char hex[65];
    code_digest(e, f, body, hex);
    intptr_t first = (intptr_t)smelt_strmap_get(&e->code_index, hex);
    if (first > 0) {
        e->func_code[index] = (int)first - 1;
        return true;
    }
    e->func_code[index] = index;
    char *key = smelt_arena_strdup(&e->arena, hex); /* the map keeps the key's pointer */
    if (!key || !smelt_strmap_put(&e->code_index, key, (void *)((intptr_t)index + 1)))
        cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
    return false;
}

bool cg_begin_function(cg_emitter *e, const ir_func *f, int index)
{
    reset_function_state(e, index);
    for (int i = 0; i < f->n_params; i++) {
        const ir_buffer *b = f->params[i];
        if (!b || !cg_storage_type(b->dtype)) {
            cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: parameter %d of function %d has type %s", i,
                    index, b ? smelt_dtype_name(b->dtype) : "(null)");
            return false;
        }
        cg_add_buf(e, b, true, param_is_const(b), i);
    }
    return e->status == SMELT_OK;
}

static void emit_function(cg_emitter *e, const ir_func *f, int index, smelt_strbuf *out)
{
    if (!cg_begin_function(e, f, index)) return;
    e->has_checks = holds_check(f->body);
    e->use_restrict = func_may_use_restrict(e->prog, f);
    smelt_strbuf body;
    smelt_strbuf_init(&body);
    e->out = &body;
    e->indent = 1;
    cg_stmt(e, f->body);
    if (e->tasks.failed) cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
    e->func_ws[index] = e->ws_peak;
    if (e->ws_peak > e->max_ws) e->max_ws = e->ws_peak;
    if (shares_code(e, f, index, &body)) {
        smelt_strbuf_printf(out, "/* f_%d runs f_%d's code: ", index, e->func_code[index]);
        cg_append_comment_text(out, f->name, 80);
        smelt_strbuf_append(out, " */\n\n");
        cg_sb_done(e, &body);
        return;
    }

    smelt_strbuf_printf(out, "#if SMELT_IN_PART(%d)\n", index);
    smelt_strbuf_appendn(out, e->tasks.data ? e->tasks.data : "", e->tasks.len);
    smelt_strbuf_printf(out, "/* f_%d: ", index);
    cg_append_comment_text(out, f->name, 80);
    if (f->comment && *f->comment) {
        smelt_strbuf_append(out, "\n * ");
        cg_append_comment_text(out, f->comment, 400);
    }
    if (!e->use_restrict) smelt_strbuf_append(out, "\n * (no restrict: a call passes aliasing buffers)");
    smelt_strbuf_append(out, " */\n");
    emit_signature(e, f, out);
    emit_signature(e, f, &e->protos);
    smelt_strbuf_append(&e->protos, ";\n");
    smelt_strbuf_append(out, "\n{\n");
    if (e->needs_err) smelt_strbuf_append(out, "    int err_ = 0;\n");
    if (!e->uses_pool) smelt_strbuf_append(out, "    (void)pool;\n");
    /* a parameter the body never names (a shape input whose values were
     * folded): quiet for -Wextra, which AOT packages build with */
    for (int i = 0; i < f->n_params && i < e->n_bufs; i++)
        if (e->bufs[i].is_param && !e->bufs[i].used) smelt_strbuf_printf(out, "    (void)%s;\n", e->bufs[i].name);
    smelt_strbuf_appendn(out, body.data ? body.data : "", body.len);
    smelt_strbuf_append(out, e->needs_err ? "    return err_;\n}\n" : "    return 0;\n}\n");
    smelt_strbuf_append(out, "#endif\n\n");
    cg_sb_done(e, &body);
}

/* ---- run entry and module info ---- */

static int64_t io_bytes(const ir_io_desc *d)
{
    int64_t n = (int64_t)smelt_dtype_size(d->dtype);
    for (int i = 0; i < d->rank; i++)
        if (d->dims[i] < 0 || smelt_mul_overflow_i64(n, d->dims[i], &n)) return -1;
    return n;
}

static bool check_slot(cg_emitter *e, int call, int arg, const ir_slot *s, const ir_buffer *b);

bool cg_check_slot(cg_emitter *e, int call, int arg, const ir_slot *s, const ir_buffer *b)
{
    return check_slot(e, call, arg, s, b);
}

static bool check_slot(cg_emitter *e, int call, int arg, const ir_slot *s, const ir_buffer *b)
{
    const ir_program *p = e->prog;
    int64_t need = buffer_bytes(b);
    int64_t have = -1;
    if (s->kind == IR_SLOT_UNUSED) { /* never read: no bytes needed */
        if (param_is_const(b)) return true;
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: call %d argument %d: an unused slot for a written parameter",
                call, arg);
        return false;
    }
    switch (s->kind) {
    case IR_SLOT_INPUT:
    case IR_SLOT_OUTPUT: {
        int n = s->kind == IR_SLOT_INPUT ? p->n_inputs : p->n_outputs;
        if (s->index < 0 || s->index >= n) break;
        have = io_bytes(s->kind == IR_SLOT_INPUT ? &p->inputs[s->index] : &p->outputs[s->index]);
        if (s->kind == IR_SLOT_INPUT && !param_is_const(b)) {
            cg_fail(e, SMELT_ERR_INTERNAL, "codegen: call %d writes model input %d through argument %d",
                    call, s->index, arg);
            return false;
        }
        break;
    }
    case IR_SLOT_UNUSED: break;
    case IR_SLOT_WEIGHT:
    case IR_SLOT_ARENA: {
        int64_t size = s->kind == IR_SLOT_WEIGHT ? p->weight_bytes : p->arena_bytes;
        size_t esize = smelt_dtype_size(b->dtype);
        if (s->offset < 0 || s->offset > size || (esize && s->offset % (int64_t)esize)) break;
        have = size - s->offset;
        if (s->kind == IR_SLOT_WEIGHT && !param_is_const(b)) {
            cg_fail(e, SMELT_ERR_INTERNAL, "codegen: call %d writes the weights through argument %d", call, arg);
            return false;
        }
        break;
    }
    }
    if (need < 0 || have < need) {
        cg_fail(e, SMELT_ERR_INTERNAL,
                "codegen: call %d argument %d: slot (kind %d, index %d, offset %lld) has %lld bytes, "
                "the parameter needs %lld", call, arg, (int)s->kind, s->index, (long long)s->offset,
                (long long)have, (long long)need);
        return false;
    }
    return true;
}

static void emit_slot_arg(const ir_slot *s, const ir_buffer *b, smelt_strbuf *out)
{
    const char *cq = param_is_const(b) ? "const " : "";
    const char *t = cg_storage_type(b->dtype);
    switch (s->kind) {
    case IR_SLOT_INPUT: smelt_strbuf_printf(out, "(const %s *)inputs[%d]", t, s->index); break;
    case IR_SLOT_OUTPUT: smelt_strbuf_printf(out, "(%s%s *)outputs[%d]", cq, t, s->index); break;
    case IR_SLOT_WEIGHT:
        smelt_strbuf_printf(out, "(const %s *)(const void *)(weights + %lld)", t, (long long)s->offset);
        break;
    case IR_SLOT_ARENA:
        smelt_strbuf_printf(out, "(%s%s *)(void *)(arena + %lld)", cq, t, (long long)s->offset);
        break;
    case IR_SLOT_UNUSED: smelt_strbuf_printf(out, "(const %s *)0", t); break;
    }
}

int cg_func_index(const ir_program *p, const ir_func *f);
static int func_index(const ir_program *p, const ir_func *f) { return cg_func_index(p, f); }

int cg_func_index(const ir_program *p, const ir_func *f)
{
    for (int i = 0; i < p->n_funcs; i++)
        if (p->funcs[i] == f) return i;
    return -1;
}

/* The workspace starts after the planned arena, 64-byte aligned. */
static int64_t workspace_offset(const ir_program *p) { return (p->arena_bytes + 63) / 64 * 64; }

static int64_t module_arena_bytes(const cg_emitter *e)
{
    /* a GPU target's arena lives on the device (gpu_emit.c): the host's is unused */
    if (e->target && e->target->gpu != CG_GPU_NONE) return 64;
    return e->max_ws > 0 ? workspace_offset(e->prog) + e->max_ws : e->prog->arena_bytes;
}

/* A control step's slot as a byte pointer (writable unless `src`). */
static bool emit_slot_bytes(cg_emitter *e, const ir_slot *s, bool src, smelt_strbuf *out)
{
    switch (s->kind) {
    case IR_SLOT_INPUT:
        if (!src) break;
        smelt_strbuf_printf(out, "((const unsigned char *)inputs[%d])", s->index);
        return true;
    case IR_SLOT_OUTPUT:
        smelt_strbuf_printf(out, "((unsigned char *)outputs[%d])", s->index);
        return true;
    case IR_SLOT_WEIGHT:
        if (!src) break;
        smelt_strbuf_printf(out, "(weights + %lld)", (long long)s->offset);
        return true;
    case IR_SLOT_ARENA:
        smelt_strbuf_printf(out, "(arena + %lld)", (long long)s->offset);
        return true;
    case IR_SLOT_UNUSED: break;
    }
    cg_fail(e, SMELT_ERR_INTERNAL, "codegen: a control step writes a model input or the weights");
    return false;
}

/* A COPY side's iteration index: loop `level`'s counter, or from the end. */
static void emit_copy_index(int level, bool rev, smelt_strbuf *out)
{
    if (rev) smelt_strbuf_printf(out, "(n_%d - 1 - it_%d)", level, level);
    else smelt_strbuf_printf(out, "it_%d", level);
}

static void emit_copy_side(cg_emitter *e, const ir_call_site *cs, int arg, smelt_strbuf *out)
{
    bool dst = arg == 0;
    int64_t stride = dst ? cs->dst_stride : cs->src_stride, step = dst ? cs->dst_step : cs->src_step;
    if (!emit_slot_bytes(e, &cs->args[arg], !dst, out)) return;
    if (cs->outer > 1 && stride) smelt_strbuf_printf(out, " + o_ * %lld", (long long)stride);
    if (step) {
        smelt_strbuf_append(out, " + ");
        emit_copy_index(cs->level, dst ? cs->dst_rev : cs->src_rev, out);
        smelt_strbuf_printf(out, " * %lld", (long long)step);
    }
}

static void emit_copy(cg_emitter *e, const ir_call_site *cs, smelt_strbuf *out)
{
    if (cs->outer > 1)
        smelt_strbuf_printf(out, "    for (int64_t o_ = 0; o_ < %lld; o_++)\n    ",
                            (long long)cs->outer);
    smelt_strbuf_append(out, "    memcpy(");
    emit_copy_side(e, cs, 0, out);
    smelt_strbuf_append(out, ", ");
    emit_copy_side(e, cs, 1, out);
    smelt_strbuf_printf(out, ", %lld);\n", (long long)cs->bytes);
}

/* for (it = 0; it < trips; it++) { stop when !cond; write it }  (closed by
 * END_LOOP's two braces) */
static void emit_loop(cg_emitter *e, const ir_call_site *cs, smelt_strbuf *out)
{
    int L = cs->level;
    smelt_strbuf_printf(out, "    {\n    const int64_t n_%d = ", L);
    if (cs->has_arg[IR_LOOP_ARG_TRIPS]) {
        smelt_strbuf_append(out, "*(const int64_t *)(const void *)");
        emit_slot_bytes(e, &cs->args[IR_LOOP_ARG_TRIPS], true, out);
    } else if (cs->trips >= 0) {
        smelt_strbuf_printf(out, "INT64_C(%lld)", (long long)cs->trips);
    } else {
        smelt_strbuf_append(out, "INT64_MAX");
    }
    smelt_strbuf_printf(out, ";\n    for (int64_t it_%d = 0; it_%d < n_%d; it_%d++) {\n", L, L, L, L);
    if (cs->has_arg[IR_LOOP_ARG_COND]) {
        smelt_strbuf_append(out, "    if (!*");
        emit_slot_bytes(e, &cs->args[IR_LOOP_ARG_COND], true, out);
        smelt_strbuf_append(out, ") break;\n");
    }
    if (cs->has_arg[IR_LOOP_ARG_ITER]) {
        smelt_strbuf_append(out, "    *(int64_t *)(void *)");
        emit_slot_bytes(e, &cs->args[IR_LOOP_ARG_ITER], false, out);
        smelt_strbuf_printf(out, " = it_%d;\n", L);
    }
}

/* If/Loop/Scan's steps (lower/control.c) as C around the calls. */
static void emit_control_step(cg_emitter *e, const ir_call_site *cs, smelt_strbuf *out)
{
    switch (cs->kind) {
    case IR_STEP_COPY: emit_copy(e, cs, out); return;
    case IR_STEP_IF:
        smelt_strbuf_append(out, "    if (*");
        emit_slot_bytes(e, &cs->args[0], true, out);
        smelt_strbuf_append(out, ") {\n");
        return;
    case IR_STEP_ELSE: smelt_strbuf_append(out, "    } else {\n"); return;
    case IR_STEP_END_IF: smelt_strbuf_append(out, "    }\n"); return;
    case IR_STEP_LOOP: emit_loop(e, cs, out); return;
    case IR_STEP_END_LOOP: smelt_strbuf_append(out, "    }\n    }\n"); return;
    case IR_STEP_CALL: break;
    }
    cg_fail(e, SMELT_ERR_INTERNAL, "codegen: a call step without a function");
}

static void emit_run(cg_emitter *e, smelt_strbuf *out)
{
    const ir_program *p = e->prog;
    smelt_strbuf_append(out, "static int smelt_run_(smelt_rt_pool *pool, const unsigned char *weights, "
                             "unsigned char *arena,\n                      const void *const *inputs, "
                             "void *const *outputs, smelt_rt_run_error *rterr)\n{\n    int err = 0;\n");
    smelt_strbuf_append(out, "    int64_t t_ = 0;\n    (void)weights;\n    (void)arena;\n    (void)inputs;\n"
                             "    (void)outputs;\n    (void)t_;\n");
    for (int c = 0; c < p->n_calls && e->status == SMELT_OK; c++) {
        const ir_call_site *cs = &p->calls[c];
        if (!cs->func && cs->kind != IR_STEP_CALL) {
            emit_control_step(e, cs, out);
            continue;
        }
        int fi = cs->func ? func_index(p, cs->func) : -1;
        if (fi < 0) {
            cg_fail(e, SMELT_ERR_INTERNAL, "codegen: call %d targets a function not in the program", c);
            return;
        }
        smelt_strbuf_append(out, "    if (rterr->call_ns) t_ = rterr->clock_ns();\n");
        smelt_strbuf_printf(out, "    if ((err = f_%d(pool%s", e->func_code[fi],
                            holds_check(cs->func->body) ? ", rterr" : "");
        if (e->func_ws[fi] > 0)
            smelt_strbuf_printf(out, ", arena + %lld", (long long)workspace_offset(p));
        for (int a = 0; a < cs->func->n_params; a++) {
            if (!check_slot(e, c, a, &cs->args[a], cs->func->params[a])) return;
            smelt_strbuf_append(out, ",\n            ");
            emit_slot_arg(&cs->args[a], cs->func->params[a], out);
        }
        smelt_strbuf_append(out, ")) != 0)\n        return err;\n");
        smelt_strbuf_printf(out, "    if (rterr->call_ns) rterr->call_ns[%d] += rterr->clock_ns() - t_;\n", c);
    }
    smelt_strbuf_append(out, "    return err;\n}\n\n");
    e->timed_calls = true;
}

static void emit_io_list(cg_emitter *e, const char *name, const ir_io_desc *list, int n,
                         smelt_strbuf *out)
{
    if (n == 0) return;
    smelt_strbuf_printf(out, "static const smelt_rt_io_info %s[%d] = {\n", name, n);
    for (int i = 0; i < n; i++) {
        const ir_io_desc *d = &list[i];
        if (d->rank < 0 || d->rank > 8 || io_bytes(d) < 0 || !cg_storage_type(d->dtype)) {
            cg_fail(e, SMELT_ERR_UNSUPPORTED, "codegen: model input/output %d has an unsupported type or shape", i);
            return;
        }
        smelt_strbuf_append(out, "    {");
        cg_append_string_literal(out, d->name);
        smelt_strbuf_printf(out, ", %d, %d, {", (int)d->dtype, d->rank);
        for (int k = 0; k < d->rank; k++)
            smelt_strbuf_printf(out, "%s%lld", k ? ", " : "", (long long)d->dims[k]);
        smelt_strbuf_append(out, d->rank ? "}, {" : "0}, {0");
        /* every field: packages build with -Wextra -Werror (missing initializers) */
        for (int k = 0; k < d->rank; k++) smelt_strbuf_printf(out, "%s%d", k ? ", " : "", d->rt[k]);
        smelt_strbuf_append(out, d->rank ? "}, {" : "}, {0");
        for (int k = 0; k < d->rank; k++)
            smelt_strbuf_printf(out, "%s%d", k ? ", " : "", d->rt_add[k]);
        smelt_strbuf_printf(out, "}, %d},\n", d->dense ? 1 : 0);
    }
    smelt_strbuf_append(out, "};\n\n");
}

static void emit_rt_dims(const ir_program *p, smelt_strbuf *out)
{
    if (p->n_rt == 0) return;
    smelt_strbuf_printf(out, "static const smelt_rt_dim_info smelt_rt_dims_[%d] = {\n", p->n_rt);
    for (int k = 0; k < p->n_rt; k++) {
        smelt_strbuf_append(out, "    {");
        cg_append_string_literal(out, p->rt[k].name);
        smelt_strbuf_printf(out, ", INT64_C(%lld), INT64_C(%lld), %d},\n", (long long)p->rt[k].min,
                            (long long)p->rt[k].max, p->rt[k].data ? 1 : 0);
    }
    smelt_strbuf_append(out, "};\n\n");
}

static void emit_weights_array(cg_emitter *e, smelt_strbuf *out)
{
    const ir_program *p = e->prog;
    if (!p->weights) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: %lld weight bytes but no weight blob",
                (long long)p->weight_bytes);
        return;
    }
    smelt_strbuf_printf(out, "static const unsigned char smelt_weights_[%lld] SMELT_ALIGN64 = {\n",
                        (long long)p->weight_bytes);
    /* Formatted by hand, a line at a time: models can carry 100+ MB. */
    char line[24 * 4 + 2];
    for (int64_t i = 0; i < p->weight_bytes;) {
        size_t n = 0;
        for (int k = 0; k < 24 && i < p->weight_bytes; k++, i++) {
            unsigned v = p->weights[i];
            if (v >= 100) line[n++] = (char)('0' + v / 100);
            if (v >= 10) line[n++] = (char)('0' + v / 10 % 10);
            line[n++] = (char)('0' + v % 10);
            line[n++] = ',';
        }
        line[n++] = '\n';
        smelt_strbuf_appendn(out, line, n);
    }
    smelt_strbuf_append(out, "};\n\n");
}

/* Node and op names come from the model: escaped like every name. */
static void emit_error_sites(cg_emitter *e, smelt_strbuf *out)
{
    if (e->sites.len == 0) return;
    smelt_strbuf_printf(out, "static const smelt_rt_error_site smelt_error_sites_[%d] = {\n",
                        e->sites.len);
    for (int i = 0; i < e->sites.len; i++) {
        const ir_check_site *site = e->sites.items[i];
        smelt_strbuf_append(out, "    {");
        cg_append_string_literal(out, site->node);
        smelt_strbuf_append(out, ", ");
        cg_append_string_literal(out, site->op);
        smelt_strbuf_append(out, ", ");
        cg_append_string_literal(out, site->message);
        smelt_strbuf_append(out, "},\n");
    }
    smelt_strbuf_append(out, "};\n\n");
}

void cg_emit_module_info(cg_emitter *e, smelt_strbuf *out);
static void emit_module_info(cg_emitter *e, smelt_strbuf *out) { cg_emit_module_info(e, out); }

/* Per call its function's name or comment (the model's node names,
 * escaped), NULL for control steps: what profiles print. */
static void emit_call_strings(cg_emitter *e, const char *array, bool comment, smelt_strbuf *out)
{
    const ir_program *p = e->prog;
    smelt_strbuf_printf(out, "static const char *const %s[%d] = {\n", array, p->n_calls);
    for (int c = 0; c < p->n_calls; c++) {
        const ir_func *f = p->calls[c].func;
        const char *text = !f ? NULL : comment ? f->comment : f->name;
        smelt_strbuf_append(out, "    ");
        if (text) cg_append_string_literal(out, text);
        else smelt_strbuf_append(out, "NULL");
        smelt_strbuf_append(out, ",\n");
    }
    smelt_strbuf_append(out, "};\n\n");
}

void cg_emit_module_info(cg_emitter *e, smelt_strbuf *out)
{
    const ir_program *p = e->prog;
    bool embed = e->opts && e->opts->embed_weights && p->weight_bytes > 0;
    emit_io_list(e, "smelt_inputs_", p->inputs, p->n_inputs, out);
    emit_io_list(e, "smelt_outputs_", p->outputs, p->n_outputs, out);
    if (embed) emit_weights_array(e, out);
    emit_error_sites(e, out);
    bool names = e->timed_calls && p->n_calls > 0;
    if (names) {
        emit_call_strings(e, "smelt_call_names_", false, out);
        emit_call_strings(e, "smelt_call_nodes_", true, out);
    }
    emit_rt_dims(p, out);
    smelt_strbuf_append(out, "const smelt_rt_module_info smelt_module_info = {\n");
    smelt_strbuf_append(out, "    SMELT_RT_ABI_VERSION,\n");
    smelt_strbuf_printf(out, "    %d, %d, /* inputs, outputs */\n", p->n_inputs, p->n_outputs);
    smelt_strbuf_printf(out, "    %s, %s,\n", p->n_inputs ? "smelt_inputs_" : "NULL",
                        p->n_outputs ? "smelt_outputs_" : "NULL");
    smelt_strbuf_printf(out, "    INT64_C(%lld), /* arena bytes */\n",
                        (long long)module_arena_bytes(e));
    smelt_strbuf_printf(out, "    INT64_C(%lld), /* weight bytes */\n", (long long)p->weight_bytes);
    smelt_strbuf_printf(out, "    %s,\n", embed ? "smelt_weights_" : "NULL");
    smelt_strbuf_append(out, "    smelt_run_,\n");
    smelt_strbuf_printf(out, "    %d, %s, /* error sites */\n", e->sites.len,
                        e->sites.len ? "smelt_error_sites_" : "NULL");
    smelt_strbuf_printf(out, "    %d, %s, %s, /* calls (profiles) */\n", names ? p->n_calls : 0,
                        names ? "smelt_call_names_" : "NULL", names ? "smelt_call_nodes_" : "NULL");
    smelt_strbuf_printf(out, "    %d, %s, INT64_C(%lld), /* run-time dims */\n", p->n_rt,
                        p->n_rt ? "smelt_rt_dims_" : "NULL", (long long)p->rt_dims_offset);
    smelt_strbuf_append(out, "};\n");
}

/* ---- program ---- */

bool cg_check_program(cg_emitter *e);
static bool check_program(cg_emitter *e) { return cg_check_program(e); }

bool cg_check_program(cg_emitter *e)
{
    const ir_program *p = e->prog;
    if (!e->target) return cg_fail(e, SMELT_ERR_ARG, "codegen: no target"), false;
    if (p->n_funcs < 0 || p->n_calls < 0 || p->n_inputs < 0 || p->n_outputs < 0 ||
        p->arena_bytes < 0 || p->weight_bytes < 0 || (p->n_funcs && !p->funcs) ||
        (p->n_calls && !p->calls) || (p->n_inputs && !p->inputs) || (p->n_outputs && !p->outputs)) {
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: malformed program");
        return false;
    }
    for (int i = 0; i < p->n_funcs; i++)
        if (!p->funcs[i] || (p->funcs[i]->n_params && !p->funcs[i]->params)) {
            cg_fail(e, SMELT_ERR_INTERNAL, "codegen: malformed function %d", i);
            return false;
        }
    return true;
}

/* Builds in parts (see the top of this file). */
static const char k_parts_macros[] =
    "/* Built in parts: -DSMELT_PARTS=N -DSMELT_PART=k keeps the functions of\n"
    " * part k (index mod N) and, in part 0, the run entry and module info. */\n"
    "#ifdef SMELT_PARTS\n"
    "#define SMELT_FN __attribute__((visibility(\"hidden\")))\n"
    "#define SMELT_IN_PART(i) ((i) % SMELT_PARTS == SMELT_PART)\n"
    "#else\n"
    "#define SMELT_FN static\n"
    "#define SMELT_IN_PART(i) 1\n"
    "#endif\n\n";

/* Before the run entry: the functions' prototypes (parts only) and the
 * guard that keeps what follows in part 0. */
static void emit_part_heads(cg_emitter *e, smelt_strbuf *out)
{
    smelt_strbuf_append(out, "#ifdef SMELT_PARTS\n");
    smelt_strbuf_appendn(out, e->protos.data ? e->protos.data : "", e->protos.len);
    smelt_strbuf_append(out, "#endif\n#if SMELT_IN_PART(0)\n");
}

bool cg_is_called(const ir_program *p, const ir_func *f);
static bool is_called(const ir_program *p, const ir_func *f) { return cg_is_called(p, f); }

bool cg_is_called(const ir_program *p, const ir_func *f)
{
    for (int c = 0; c < p->n_calls; c++)
        if (p->calls[c].func == f) return true;
    return false;
}

void cg_emitter_init(cg_emitter *e, smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                     const cg_emit_options *opts)
{
    memset(e, 0, sizeof *e);
    e->ctx = ctx;
    e->target = t;
    e->prog = p;
    e->opts = opts;
    smelt_arena_init(&e->arena);
    ir_builder_init(&e->b, &e->arena);
    smelt_strbuf_init(&e->protos);
    smelt_strbuf_init(&e->tasks);
}

void cg_emitter_fini(cg_emitter *e);
static void emitter_fini(cg_emitter *e) { cg_emitter_fini(e); }

void cg_emitter_fini(cg_emitter *e)
{
    cg_ptrmap_fini(&e->var_ids);
    cg_ptrmap_fini(&e->buf_ids);
    smelt_free(e->bufs);
    smelt_ptrvec_fini(&e->sites);
    smelt_strbuf_fini(&e->tasks);
    smelt_strbuf_fini(&e->protos);
    smelt_strmap_fini(&e->code_index);
    smelt_arena_fini(&e->arena);
}

smelt_status cg_emit_program_opts(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                                  const cg_emit_options *opts, smelt_strbuf *out)
{
    if (!p || !out) return smelt_errf(ctx, SMELT_ERR_ARG, "codegen: no program or output");
    if (t && t->gpu != CG_GPU_NONE) return cg_gpu_emit_host(ctx, p, t, opts, out);
    cg_emitter e;
    memset(&e, 0, sizeof e);
    e.ctx = ctx;
    e.target = t;
    e.prog = p;
    e.opts = opts;
    smelt_arena_init(&e.arena);
    ir_builder_init(&e.b, &e.arena);
    smelt_strbuf funcs, tail;
    smelt_strbuf_init(&funcs);
    smelt_strbuf_init(&tail);
    smelt_strbuf_init(&e.protos);
    e.func_ws = p->n_funcs > 0 ? smelt_arena_alloc(&e.arena, sizeof(int64_t) * (size_t)p->n_funcs)
                               : NULL;
    e.func_code = p->n_funcs > 0 ? smelt_arena_alloc(&e.arena, sizeof(int) * (size_t)p->n_funcs) : NULL;
    smelt_strmap_init(&e.code_index);
    if (p->n_funcs > 0 && (!e.func_ws || !e.func_code)) cg_fail(&e, SMELT_ERR_NOMEM, "codegen: out of memory");
    else if (e.func_ws) memset(e.func_ws, 0, sizeof(int64_t) * (size_t)p->n_funcs);
    for (int i = 0; e.func_code && i < p->n_funcs; i++) e.func_code[i] = i;
    if (e.status == SMELT_OK && check_program(&e)) {
        for (int i = 0; i < p->n_funcs && e.status == SMELT_OK; i++) {
            if (is_called(p, p->funcs[i]))
                emit_function(&e, p->funcs[i], i, &funcs);
            else /* an unused static function would be a warning */
                smelt_strbuf_printf(&funcs, "/* f_%d is never called: not emitted */\n\n", i);
        }
        emit_part_heads(&e, &tail);
        if (e.status == SMELT_OK) emit_run(&e, &tail);
        if (e.status == SMELT_OK) emit_module_info(&e, &tail);
        smelt_strbuf_append(&tail, "#endif\n");
        if (e.status == SMELT_OK && opts && opts->arena_bytes_out)
            *opts->arena_bytes_out = module_arena_bytes(&e);
    }
    if (e.status == SMELT_OK) {
        cg_prelude(&e, out);
        smelt_strbuf_append(out, k_parts_macros);
        smelt_strbuf_appendn(out, funcs.data ? funcs.data : "", funcs.len);
        smelt_strbuf_appendn(out, tail.data ? tail.data : "", tail.len);
        if (out->failed || funcs.failed || tail.failed || e.tasks.failed || e.protos.failed || e.b.failed)
            cg_fail(&e, SMELT_ERR_NOMEM, "codegen: out of memory");
    }
    smelt_status s = e.status;
    smelt_strbuf_fini(&funcs);
    smelt_strbuf_fini(&tail);
    emitter_fini(&e);
    return s;
}

smelt_status cg_emit_program(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                             smelt_strbuf *out)
{
    return cg_emit_program_opts(ctx, p, t, NULL, out);
}
