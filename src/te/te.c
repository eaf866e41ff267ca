/* Tensor expression graphs: placeholders, computes, reductions. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "te/te.h"

te_graph *te_graph_new(smelt_ctx *ctx)
{
    te_graph *g = smelt_calloc(1, sizeof *g);
    if (!g) return NULL;
    smelt_arena_init(&g->arena);
    ir_builder_init(&g->b, &g->arena);
    g->ctx = ctx;
    return g;
}

void te_graph_free(te_graph *g)
{
    if (!g) return;
    smelt_ptrvec_fini(&g->tensors);
    smelt_ptrvec_fini(&g->outputs);
    for (int i = 0; i < g->consts.len; i++) smelt_free(((te_const *)g->consts.items[i])->data);
    smelt_ptrvec_fini(&g->consts);
    smelt_arena_fini(&g->arena);
    smelt_free(g);
}

static te_tensor *tensor_new(te_graph *g, const char *name, smelt_dtype dt, int rank,
                             const int64_t *shape, te_kind kind)
{
    if (rank < 0 || rank > SMELT_MAX_RANK) {
        smelt_errf(g->ctx, SMELT_ERR_INTERNAL, "te: tensor '%s' has rank %d", name, rank);
        return NULL;
    }
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0) {
            smelt_errf(g->ctx, SMELT_ERR_UNSUPPORTED,
                       "te: tensor '%s' has a dynamic dim; compiled code needs static shapes",
                       name);
            return NULL;
        }
    te_tensor *t = smelt_arena_alloc(&g->arena, sizeof *t);
    ir_buffer_kind bk = kind == TE_PLACEHOLDER ? IR_BUF_INPUT : IR_BUF_TEMP;
    ir_buffer *buf = ir_buffer_new(&g->b, name, dt, rank, shape, bk);
    if (!t || !buf || !smelt_ptrvec_push(&g->tensors, t)) {
        smelt_errf(g->ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    t->buf = buf;
    t->kind = kind;
    t->n_axes = rank;
    t->index = g->tensors.len - 1;
    return t;
}

te_tensor *te_placeholder(te_graph *g, const char *name, smelt_dtype dt, int rank,
                          const int64_t *shape)
{
    return tensor_new(g, name, dt, rank, shape, TE_PLACEHOLDER);
}

te_tensor *te_compute(te_graph *g, const char *name, smelt_dtype dt, int rank,
                      const int64_t *shape, te_body_fn body, void *user, const char *tag)
{
    te_tensor *t = tensor_new(g, name, dt, rank, shape, TE_COMPUTE);
    if (!t) return NULL;
    ir_expr *idx[SMELT_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        char vname[32];
        snprintf(vname, sizeof vname, "i%d", i);
        t->axes[i].var = ir_var_new(&g->b, vname, SMELT_DT_INT64);
        t->axes[i].extent = shape[i];
        idx[i] = ir_var_ref(&g->b, t->axes[i].var);
    }
    t->tag = tag ? tag : "injective";
    t->body = g->b.failed ? NULL : body(g, idx, user); /* bodies may read their indices */
    if (!t->body || g->b.failed) {
        if (smelt_ctx_status(g->ctx) == SMELT_OK)
            smelt_errf(g->ctx, SMELT_ERR_NOMEM, "te: building the body of '%s' failed", name);
        return NULL;
    }
    if (t->body->dtype != dt && t->body->kind == IR_REDUCE) {
        /* a cast above the reduce would hide the reduction from schedules */
        smelt_errf(g->ctx, SMELT_ERR_INTERNAL,
                   "te: reduction '%s' has dtype %s, its body %s; cast in a separate stage", name,
                   smelt_dtype_name(dt), smelt_dtype_name(t->body->dtype));
        return NULL;
    }
    if (t->body->dtype != dt) t->body = ir_cast(&g->b, dt, t->body);
    return t;
}

te_tensor *te_check_compute(te_graph *g, const char *name, int rank, const int64_t *shape,
                            te_body_fn body, void *user, ir_var *value, ir_expr *ok,
                            const ir_check_site *site)
{
    te_check *c = smelt_arena_alloc(&g->arena, sizeof *c);
    if (!c || !value || !ok) {
        if (smelt_ctx_status(g->ctx) == SMELT_OK) smelt_errf(g->ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->value = value;
    c->ok = ok;
    c->site.node = smelt_arena_strdup(&g->arena, site->node);
    c->site.op = smelt_arena_strdup(&g->arena, site->op);
    c->site.message = smelt_arena_strdup(&g->arena, site->message);
    if (!c->site.node || !c->site.op || !c->site.message) {
        smelt_errf(g->ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    te_tensor *t = te_compute(g, name, SMELT_DT_INT64, rank, shape, body, user, "check");
    if (t) t->check = c;
    return t;
}

te_tensor *te_extern_stage(te_graph *g, const char *name, smelt_dtype dt, int rank,
                           const int64_t *shape, int n_inputs, te_tensor *const *inputs,
                           te_extern_fn build, void *user, const char *tag, double flops)
{
    for (int i = 0; i < n_inputs; i++)
        if (!inputs[i] || inputs[i]->kind != TE_PLACEHOLDER) {
            smelt_errf(g->ctx, SMELT_ERR_INTERNAL, "te: extern stage '%s' reads a tensor that is "
                       "not a placeholder", name);
            return NULL;
        }
    te_extern *e = smelt_arena_alloc(&g->arena, sizeof *e);
    const te_tensor **in = smelt_arena_alloc(&g->arena, sizeof *in * (size_t)(n_inputs + 1));
    te_tensor *t = e && in ? tensor_new(g, name, dt, rank, shape, TE_EXTERN) : NULL;
    if (!t) {
        if (smelt_ctx_status(g->ctx) == SMELT_OK) smelt_errf(g->ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (int i = 0; i < n_inputs; i++) in[i] = inputs[i];
    e->n_inputs = n_inputs;
    e->inputs = in;
    e->flops = flops;
    e->body = build(g, t->buf, user);
    if (!e->body || g->b.failed) {
        if (smelt_ctx_status(g->ctx) == SMELT_OK)
            smelt_errf(g->ctx, SMELT_ERR_NOMEM, "te: building extern stage '%s' failed", name);
        return NULL;
    }
    t->ext = e;
    t->tag = tag ? tag : "extern";
    return t;
}

ir_axis te_reduce_axis(te_graph *g, const char *name, int64_t extent)
{
    ir_axis a = {ir_var_new(&g->b, name, SMELT_DT_INT64), extent, NULL};
    return a;
}

ir_expr *te_reduce(te_graph *g, ir_reduce_op op, ir_expr *src, int n, const ir_axis *axes)
{
    return ir_reduce(&g->b, op, src, n, axes);
}

ir_expr *te_read(te_graph *g, const te_tensor *t, ir_expr *const *idx)
{
    if (!t) return g->b.failed = true, NULL;
    return ir_load(&g->b, t->buf, t->buf->rank, idx);
}

te_tensor *te_tensor_of(const te_graph *g, const ir_buffer *buf)
{
    for (int i = 0; i < g->tensors.len; i++) {
        te_tensor *t = g->tensors.items[i];
        if (t->buf == buf) return t;
    }
    return NULL;
}

te_tensor *te_tensor_named(const te_graph *g, const char *name)
{
    for (int i = 0; i < g->tensors.len; i++) {
        te_tensor *t = g->tensors.items[i];
        if (strcmp(t->buf->name, name) == 0) return t;
    }
    return NULL;
}

bool te_mark_output(te_graph *g, te_tensor *t)
{
    if (!t || !smelt_ptrvec_push(&g->outputs, t)) return false;
    t->buf->kind = IR_BUF_OUTPUT;
    return true;
}

ir_expr *te_reduce_identity_in(ir_builder *b, ir_reduce_op op, smelt_dtype dt)
{
    bool fl = dt == SMELT_DT_FLOAT32 || dt == SMELT_DT_FLOAT64 || dt == SMELT_DT_FLOAT16 ||
              dt == SMELT_DT_BFLOAT16;
    switch (op) {
    case IR_REDUCE_SUM: return fl ? ir_const_float(b, dt, 0.0) : ir_const_int(b, dt, 0);
    case IR_REDUCE_PROD: return fl ? ir_const_float(b, dt, 1.0) : ir_const_int(b, dt, 1);
    case IR_REDUCE_MAX:
        if (fl) return ir_const_float(b, dt, -INFINITY);
        switch (dt) {
        case SMELT_DT_INT8: return ir_const_int(b, dt, INT8_MIN);
        case SMELT_DT_INT16: return ir_const_int(b, dt, INT16_MIN);
        case SMELT_DT_INT32: return ir_const_int(b, dt, INT32_MIN);
        case SMELT_DT_INT64: return ir_const_int(b, dt, INT64_MIN);
        default: return ir_const_int(b, dt, 0); /* unsigned, bool */
        }
    case IR_REDUCE_MIN:
        if (fl) return ir_const_float(b, dt, INFINITY);
        switch (dt) {
        case SMELT_DT_INT8: return ir_const_int(b, dt, INT8_MAX);
        case SMELT_DT_INT16: return ir_const_int(b, dt, INT16_MAX);
        case SMELT_DT_INT32: return ir_const_int(b, dt, INT32_MAX);
        case SMELT_DT_INT64: return ir_const_int(b, dt, INT64_MAX);
        case SMELT_DT_UINT8: return ir_const_int(b, dt, UINT8_MAX);
        case SMELT_DT_UINT16: return ir_const_int(b, dt, UINT16_MAX);
        case SMELT_DT_UINT32: return ir_const_int(b, dt, UINT32_MAX);
        case SMELT_DT_BOOL: return ir_const_int(b, dt, 1);
        default: return ir_const_int(b, dt, -1); /* uint64 all ones */
        }
    }
    return NULL;
}

ir_expr *te_reduce_identity(te_graph *g, ir_reduce_op op, smelt_dtype dt)
{
    return te_reduce_identity_in(&g->b, op, dt);
}

void te_graph_print(const te_graph *g, smelt_strbuf *out)
{
    for (int i = 0; i < g->tensors.len; i++) {
        const te_tensor *t = g->tensors.items[i];
        static const char *const kinds[] = {"placeholder", "compute", "extern"};
        smelt_strbuf_printf(out, "%s %s: %s[", kinds[t->kind],
                            t->buf->name, smelt_dtype_name(t->buf->dtype));
        for (int d = 0; d < t->buf->rank; d++)
            smelt_strbuf_printf(out, "%s%lld", d ? "," : "", (long long)t->buf->shape[d]);
        smelt_strbuf_append(out, "]");
        if (t->kind == TE_COMPUTE) {
            smelt_strbuf_append(out, " (");
            for (int d = 0; d < t->n_axes; d++)
                smelt_strbuf_printf(out, "%s%s", d ? ", " : "", t->axes[d].var->name);
            smelt_strbuf_printf(out, ") = ");
            ir_expr_print(t->body, out);
            if (t->check) {
                smelt_strbuf_printf(out, " must satisfy (%s = value) ", t->check->value->name);
                ir_expr_print(t->check->ok, out);
            }
            smelt_strbuf_printf(out, "  # %s", t->tag);
        }
        if (t->ext) { /* the statement is the definition (and part of the workload key) */
            smelt_strbuf_printf(out, " reads");
            for (int k = 0; k < t->ext->n_inputs; k++)
                smelt_strbuf_printf(out, " %s", t->ext->inputs[k]->buf->name);
            smelt_strbuf_printf(out, "  # %s\n", t->tag);
            ir_stmt_print(t->ext->body, 1, out);
            continue;
        }
        smelt_strbuf_append(out, "\n");
    }
}

te_tensor *te_const_tensor(te_graph *g, const char *name, smelt_dtype dt, int rank,
                           const int64_t *shape, void *data)
{
    int64_t numel = 1;
    for (int d = 0; d < rank; d++) numel *= shape[d];
    te_tensor *t = data ? te_placeholder(g, name, dt, rank, shape) : NULL;
    te_const *c = t ? smelt_arena_alloc(&g->arena, sizeof *c) : NULL;
    if (!c || !smelt_ptrvec_push(&g->consts, c)) {
        smelt_free(data);
        return NULL;
    }
    t->buf->kind = IR_BUF_CONST;
    *c = (te_const){.t = t, .data = data, .numel = numel};
    return t;
}

const te_const *te_const_of(const te_graph *g, const ir_buffer *buf)
{
    for (int i = 0; i < g->consts.len; i++) {
        const te_const *c = g->consts.items[i];
        if (c->t->buf == buf) return c;
    }
    return NULL;
}

/* ---- run-time dims ---- */

/* Which run-time dim extent follows, and at which add; -1: none. */
static int rt_match(const te_graph *g, int64_t extent, int64_t *add)
{
    for (int k = 0; k < g->n_rt; k++)
        for (int a = -1; a < g->rt[k].n_adds; a++) {
            *add = a < 0 ? 0 : g->rt[k].adds[a];
            if (extent == g->rt[k].max + *add) return k;
        }
    return -1;
}

ir_expr *te_rt_extent(te_graph *g, int64_t extent)
{
    int64_t add;
    int k = rt_match(g, extent, &add);
    if (k < 0) return NULL;
    ir_expr *v = ir_var_ref(&g->b, g->rt_var[k]);
    return add ? ir_add(&g->b, v, ir_int(&g->b, add)) : v;
}

int te_rt_index(const te_graph *g, int64_t extent)
{
    int64_t add;
    int k = rt_match(g, extent, &add);
    return k >= 0 && add == 0 ? k : -1;
}

te_tensor *te_rt_dims_tensor(te_graph *g)
{
    if (!g->rt_dims && g->n_rt > 0) {
        int64_t shape[1] = {g->n_rt};
        g->rt_dims = te_placeholder(g, "rt_dims", SMELT_DT_INT64, 1, shape);
    }
    return g->rt_dims;
}

void te_mark_dense(te_graph *g, te_tensor *t)
{
    for (int d = 0; t && d < t->buf->rank; d++) t->buf->rt_extent[d] = te_rt_extent(g, t->buf->shape[d]);
}

void te_extern_set_rt_ok(te_tensor *t)
{
    if (t && t->ext) ((te_extern *)t->ext)->rt_ok = true; /* the graph's own stage */
}

smelt_status te_rt_begin(te_graph *g, int n, const te_rt_dim *rt)
{
    if (n <= 0) return SMELT_OK;
    if (n > TE_MAX_RT_DIMS || g->n_rt)
        return smelt_errf(g->ctx, SMELT_ERR_INTERNAL, "te: run-time dims set twice or too many");
    g->n_rt = n;
    for (int k = 0; k < n; k++) {
        char name[32];
        snprintf(name, sizeof name, "rt%d", k);
        g->rt[k] = rt[k];
        if (!(g->rt_var[k] = ir_var_new(&g->b, name, SMELT_DT_INT64)))
            return smelt_errf(g->ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    return SMELT_OK;
}

static bool mark_axes(te_graph *g, int n, ir_axis *axes)
{
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (!axes[i].dyn) axes[i].dyn = te_rt_extent(g, axes[i].extent);
        any = any || axes[i].dyn;
    }
    return any;
}

static bool extern_has_rt(const te_graph *g, const te_tensor *t)
{
    for (int i = -1; i < t->ext->n_inputs; i++) {
        const ir_buffer *b = i < 0 ? t->buf : t->ext->inputs[i]->buf;
        int64_t add;
        for (int d = 0; d < b->rank; d++)
            if (rt_match(g, b->shape[d], &add) >= 0) return true;
    }
    return false;
}

smelt_status te_set_rt_dims(te_graph *g, int n, const te_rt_dim *rt)
{
    if (n <= 0) return SMELT_OK;
    if (g->n_rt != n) SMELT_TRY(te_rt_begin(g, n, rt)); /* else begun before the computes */
    bool any = false;
    int n_tensors = g->tensors.len;
    for (int i = 0; i < n_tensors; i++) {
        te_tensor *t = g->tensors.items[i];
        any = any || (t->kind == TE_EXTERN && t->ext->rt_ok);
        if (t->kind == TE_EXTERN && !t->ext->rt_ok && extern_has_rt(g, t))
            return smelt_errf(g->ctx, SMELT_ERR_UNSUPPORTED,
                              "te: stage '%s' is a kernel that takes its sizes at compile time "
                              "and cannot take a run-time dim", t->buf->name);
        if (t->kind != TE_COMPUTE) continue;
        any = mark_axes(g, t->n_axes, t->axes) || any;
        /* the graph owns its bodies and nothing has read them yet */
        if (t->body && t->body->kind == IR_REDUCE)
            any = mark_axes(g, t->body->reduce.n_axes, t->body->reduce.axes) || any;
    }
    if (g->b.failed) return smelt_errf(g->ctx, SMELT_ERR_NOMEM, "out of memory");
    if (!any && !g->rt_dims) {
        g->n_rt = 0;
        return SMELT_OK;
    }
    return te_rt_dims_tensor(g) ? SMELT_OK : SMELT_ERR_NOMEM;
}
