/* Helpers shared by the graph rewriting passes. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "ops/op.h"
#include "passes/pass_util.h"

int *pu_use_counts(const gr_graph *g)
{
    int *uses = smelt_calloc((size_t)g->values.len + 1, sizeof *uses);
    if (!uses) return NULL;
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k]) uses[n->inputs[k]->id]++;
    }
    for (int i = 0; i < g->outputs.len; i++) uses[((gr_value *)g->outputs.items[i])->id]++;
    return uses;
}

bool pu_replace_uses(gr_graph *g, gr_value *from, gr_value *to)
{
    if (from->is_output) return false;
    for (int i = 0; i < g->nodes.len; i++) {
        gr_node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == from) n->inputs[k] = to;
    }
    return true;
}

void pu_take_output(gr_node *keep, int k, gr_value *dst)
{
    gr_value *old = keep->outputs[k];
    if (old) old->producer = NULL;
    keep->outputs[k] = dst;
    dst->producer = keep;
    dst->producer_output = k;
}

void pu_detach(gr_node *n)
{
    for (int k = 0; k < n->n_outputs; k++) {
        gr_value *v = n->outputs[k];
        if (v && v->producer == n) v->producer = NULL;
        n->outputs[k] = NULL;
    }
}

/* Reverse order: a node is live if one of its outputs is still used. */
static void mark_dead(gr_graph *g, int *uses, bool *dead)
{
    for (int i = g->nodes.len - 1; i >= 0; i--) {
        gr_node *n = g->nodes.items[i];
        bool live = false;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] && uses[n->outputs[k]->id] > 0) live = true;
        dead[i] = !live;
        if (live) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k]) uses[n->inputs[k]->id]--;
    }
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return x < y ? -1 : x > y;
}

/* Free the constant data of dropped values (sorted in `gone`). */
static void free_dropped(gr_graph *g, smelt_ptrvec *gone)
{
    if (!gone->len) return;
    qsort(gone->items, (size_t)gone->len, sizeof(void *), cmp_ptr);
    int kept = 0;
    for (int i = 0; i < g->owned_tensors.len; i++) {
        void *t = g->owned_tensors.items[i];
        if (bsearch(&t, gone->items, (size_t)gone->len, sizeof(void *), cmp_ptr))
            smelt_tensor_free(t);
        else
            g->owned_tensors.items[kept++] = t;
    }
    g->owned_tensors.len = kept;
}

static smelt_status drop_values(smelt_ctx *ctx, gr_graph *g)
{
    bool *ref = smelt_calloc((size_t)g->values.len + 1, sizeof *ref);
    if (!ref) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k]) ref[n->inputs[k]->id] = true;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k]) ref[n->outputs[k]->id] = true;
    }
    smelt_ptrvec gone = {0};
    bool oom = false;
    int kept = 0;
    for (int i = 0; i < g->values.len; i++) {
        gr_value *v = g->values.items[i];
        if (ref[i] || v->is_input || v->is_output) {
            v->id = kept;
            g->values.items[kept++] = v;
        } else if (v->constant && !smelt_ptrvec_push(&gone, v->constant)) {
            oom = true; /* keep the data (freed with the graph) */
        }
    }
    g->values.len = kept;
    if (!oom) free_dropped(g, &gone);
    smelt_ptrvec_fini(&gone);
    smelt_free(ref);
    return SMELT_OK;
}

smelt_status pu_finish(smelt_ctx *ctx, gr_graph *g)
{
    SMELT_TRY(gr_graph_toposort(ctx, g));
    int *uses = pu_use_counts(g);
    bool *dead = smelt_calloc((size_t)g->nodes.len + 1, sizeof *dead);
    if (!uses || !dead) {
        smelt_free(uses);
        smelt_free(dead);
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    mark_dead(g, uses, dead);
    int kept = 0;
    for (int i = 0; i < g->nodes.len; i++) {
        gr_node *n = g->nodes.items[i];
        if (dead[i]) continue;
        n->id = kept;
        g->nodes.items[kept++] = n;
    }
    g->nodes.len = kept;
    smelt_free(uses);
    smelt_free(dead);
    return drop_values(ctx, g);
}

smelt_status pu_drop_detached(smelt_ctx *ctx, gr_graph *g)
{
    int kept = 0;
    for (int i = 0; i < g->nodes.len; i++) {
        gr_node *n = g->nodes.items[i];
        bool detached = true;
        for (int k = 0; k < n->n_outputs; k++) detached = detached && !n->outputs[k];
        if (detached) continue;
        n->id = kept;
        g->nodes.items[kept++] = n;
    }
    g->nodes.len = kept;
    return drop_values(ctx, g);
}

/* ---- folding ---- */

static smelt_status keep_outputs(smelt_ctx *ctx, gr_graph *g, gr_node *n, smelt_tensor *out)
{
    smelt_status s = SMELT_OK;
    for (int k = 0; k < n->n_outputs; k++) {
        gr_value *v = n->outputs[k];
        if (!v || s != SMELT_OK) {
            smelt_free(out[k].data);
            continue;
        }
        smelt_tensor *t = smelt_alloc(sizeof *t);
        if (!t) {
            smelt_free(out[k].data);
            s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
            continue;
        }
        *t = out[k];
        s = gr_value_set_constant(ctx, g, v, t);
    }
    if (s == SMELT_OK) pu_detach(n);
    return s;
}

smelt_status pu_fold_node(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    int ni = n->n_inputs, no = n->n_outputs;
    smelt_tensor *info = smelt_calloc((size_t)ni + 1, sizeof *info);
    const smelt_tensor **in = smelt_calloc((size_t)ni + 1, sizeof *in);
    smelt_tensor *out = smelt_calloc((size_t)no + 1, sizeof *out);
    smelt_status s = info && in && out ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int k = 0; s == SMELT_OK && k < ni; k++) {
        if (n->inputs[k]) info[k] = gr_value_info(n->inputs[k]);
        in[k] = n->inputs[k] ? &info[k] : NULL;
    }
    if (s == SMELT_OK) s = exec_node(ctx, n, in, out);
    if (s == SMELT_OK) s = keep_outputs(ctx, g, n, out);
    smelt_free(info);
    smelt_free((void *)in);
    smelt_free(out);
    return s;
}

/* ---- building ---- */

gr_node *pu_node_new(smelt_ctx *ctx, gr_graph *g, const char *name, op_kind kind,
                     gr_value *const *inputs, int n_inputs, int n_outputs)
{
    const op_info *info = op_get(kind);
    gr_node *n = gr_node_new(g, name, info->name, kind, n_inputs, n_outputs);
    if (!n) {
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (int k = 0; k < n_inputs; k++) n->inputs[k] = inputs[k];
    for (int k = 0; k < n_outputs; k++) {
        char vname[200];
        snprintf(vname, sizeof vname, "%s:%d", name, k);
        gr_value *v = gr_value_new(g, vname);
        if (!v) {
            smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
            return NULL;
        }
        v->producer = n;
        v->producer_output = k;
        n->outputs[k] = v;
    }
    return n;
}

static gr_attr *attr_add(smelt_ctx *ctx, gr_graph *g, gr_node *n, const char *name,
                         gr_attr_type type)
{
    gr_attr *a = smelt_arena_alloc(&g->arena, sizeof *a * (size_t)(n->n_attrs + 1));
    const char *copy = smelt_arena_strdup(&g->arena, name);
    if (!a || !copy) {
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (n->n_attrs) memcpy(a, n->attrs, sizeof *a * (size_t)n->n_attrs);
    gr_attr *x = &a[n->n_attrs++];
    memset(x, 0, sizeof *x);
    x->name = copy;
    x->type = type;
    n->attrs = a;
    return x;
}

smelt_status pu_attr_int(smelt_ctx *ctx, gr_graph *g, gr_node *n, const char *name, int64_t v)
{
    gr_attr *a = attr_add(ctx, g, n, name, GR_ATTR_INT);
    if (!a) return SMELT_ERR_NOMEM;
    a->i = v;
    return SMELT_OK;
}

smelt_status pu_attr_float(smelt_ctx *ctx, gr_graph *g, gr_node *n, const char *name, float v)
{
    gr_attr *a = attr_add(ctx, g, n, name, GR_ATTR_FLOAT);
    if (!a) return SMELT_ERR_NOMEM;
    a->f = v;
    return SMELT_OK;
}

smelt_status pu_attr_string(smelt_ctx *ctx, gr_graph *g, gr_node *n, const char *name,
                            const char *v)
{
    gr_attr *a = attr_add(ctx, g, n, name, GR_ATTR_STRING);
    if (!a || !(a->s = smelt_arena_strdup(&g->arena, v)))
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    a->s_len = strlen(v);
    return SMELT_OK;
}

smelt_status pu_attr_ints(smelt_ctx *ctx, gr_graph *g, gr_node *n, const char *name,
                          const int64_t *v, int count)
{
    gr_attr *a = attr_add(ctx, g, n, name, GR_ATTR_INTS);
    if (!a) return SMELT_ERR_NOMEM;
    a->ints = smelt_arena_alloc(&g->arena, sizeof(int64_t) * (size_t)(count + 1));
    if (!a->ints) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    memcpy(a->ints, v, sizeof(int64_t) * (size_t)count);
    a->n = count;
    return SMELT_OK;
}

smelt_status pu_node_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    const op_def *d = op_get(n->op)->def;
    if (!d) return smelt_errf(ctx, SMELT_ERR_INTERNAL, "op %s has no definition", n->op_type);
    return d->import ? d->import(ctx, g, n) : SMELT_OK;
}

static gr_value *const_new(smelt_ctx *ctx, gr_graph *g, const char *hint, smelt_dtype dt,
                           int rank, const int64_t *dims, const void *data)
{
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    if (!t) {
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    t->dtype = dt;
    t->rank = rank;
    for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
    size_t nb = smelt_tensor_nbytes(t);
    if (!(t->data = smelt_alloc(nb ? nb : 1))) {
        smelt_free(t);
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (nb) memcpy(t->data, data, nb);
    return gr_graph_add_constant(ctx, g, hint, t);
}

gr_value *pu_const(smelt_ctx *ctx, gr_graph *g, const char *hint, smelt_dtype dt, int rank,
                   const int64_t *dims, const void *data)
{
    return const_new(ctx, g, hint, dt, rank, dims, data);
}

gr_value *pu_const_f32(smelt_ctx *ctx, gr_graph *g, const char *hint, int rank,
                       const int64_t *dims, const float *data)
{
    return const_new(ctx, g, hint, SMELT_DT_FLOAT32, rank, dims, data);
}

gr_value *pu_const_i64(smelt_ctx *ctx, gr_graph *g, const char *hint, int rank,
                       const int64_t *dims, const int64_t *data)
{
    return const_new(ctx, g, hint, SMELT_DT_INT64, rank, dims, data);
}

/* ---- matching ---- */

static bool numeric(smelt_dtype dt)
{
    return dt != SMELT_DT_STRING && dt != SMELT_DT_COMPLEX64 && dt != SMELT_DT_COMPLEX128 &&
           smelt_dtype_size(dt) > 0;
}

bool pu_const_all(const gr_value *v, double x)
{
    if (!v || !v->constant || !numeric(v->dtype)) return false;
    int64_t n = smelt_tensor_numel(v->constant);
    if (n < 1) return false;
    for (int64_t i = 0; i < n; i++)
        if (op_get_f64(v->constant, i) != x) return false;
    return true;
}

bool pu_const_scalar(const gr_value *v, double *x)
{
    if (!v || !v->constant || !numeric(v->dtype) || smelt_tensor_numel(v->constant) < 1)
        return false;
    *x = op_get_f64(v->constant, 0);
    return pu_const_all(v, *x);
}

bool pu_same_type(const gr_value *a, const gr_value *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->rank < 0) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] < 0 || a->dims[i] != b->dims[i]) return false;
    return true;
}

gr_node *pu_producer(const gr_value *v, op_kind kind)
{
    return v && v->producer && v->producer->op == kind ? v->producer : NULL;
}

smelt_status pu_infer_node(smelt_ctx *ctx, gr_node *n, const char *pass)
{
    smelt_tensor *infos = smelt_calloc((size_t)n->n_inputs + 1, sizeof *infos);
    const smelt_tensor **in = smelt_calloc((size_t)n->n_inputs + 1, sizeof *in);
    smelt_tensor *out = smelt_calloc((size_t)n->n_outputs + 1, sizeof *out);
    smelt_status s = infos && in && out ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int k = 0; s == SMELT_OK && k < n->n_inputs; k++) {
        if (n->inputs[k]) infos[k] = gr_value_info(n->inputs[k]);
        in[k] = n->inputs[k] ? &infos[k] : NULL;
        if (n->inputs[k] && n->inputs[k]->rank < 0)
            s = op_errf(ctx, n, SMELT_ERR_INTERNAL, "%s: input '%s' has no type", pass,
                        n->inputs[k]->name);
    }
    if (s == SMELT_OK) s = op_get(n->op)->def->infer(ctx, n, in, out);
    for (int k = 0; s == SMELT_OK && k < n->n_outputs; k++) {
        gr_value *v = n->outputs[k];
        if (!v) continue;
        v->dtype = out[k].dtype;
        v->rank = out[k].rank;
        memcpy(v->dims, out[k].dims, sizeof(int64_t) * (size_t)(out[k].rank > 0 ? out[k].rank : 0));
    }
    smelt_free(infos);
    smelt_free((void *)in);
    smelt_free(out);
    return s;
}

static void copy_type(gr_value *dst, const gr_value *src)
{
    dst->dtype = src->dtype;
    dst->rank = src->rank;
    memcpy(dst->dims, src->dims, sizeof(gr_dim) * (size_t)(src->rank > 0 ? src->rank : 0));
}

smelt_status pu_body_value(smelt_ctx *ctx, gr_graph *g, const gr_node *owner, const char *prefix,
                           gr_value **map, const gr_value *v, gr_value **out)
{
    if ((*out = map[v->id])) return SMELT_OK;
    if (!v->constant)
        return op_errf(ctx, owner, SMELT_ERR_INTERNAL, "body value '%s' has no source", v->name);
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    if (!t || !smelt_value_copy(v->constant, t)) {
        smelt_free(t);
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    char hint[200];
    snprintf(hint, sizeof hint, "%s/%s", prefix, v->name);
    *out = map[v->id] = gr_graph_add_constant(ctx, g, hint, t);
    return *out ? SMELT_OK : smelt_ctx_status(ctx);
}

static smelt_status copy_node(smelt_ctx *ctx, gr_graph *g, const gr_node *owner, const char *prefix,
                              gr_value **map, const gr_node *n, pu_copy_fn after, void *user)
{
    gr_value *in[64];
    if (n->n_inputs > 64) return op_errf(ctx, n, SMELT_ERR_LIMIT, "more than 64 inputs");
    for (int k = 0; k < n->n_inputs; k++) {
        in[k] = NULL;
        if (n->inputs[k]) SMELT_TRY(pu_body_value(ctx, g, owner, prefix, map, n->inputs[k], &in[k]));
    }
    char name[200];
    snprintf(name, sizeof name, "%s/%s", prefix, n->name);
    gr_node *m = pu_node_new(ctx, g, name, n->op, in, n->n_inputs, n->n_outputs);
    if (!m) return smelt_ctx_status(ctx);
    m->op_type = n->op_type;
    m->n_attrs = n->n_attrs;
    m->attrs = n->attrs;
    m->op_attrs = n->op_attrs;
    for (int k = 0; k < n->n_outputs; k++) {
        if (!n->outputs[k]) {
            m->outputs[k] = NULL;
            continue;
        }
        if (!after) copy_type(m->outputs[k], n->outputs[k]);
        map[n->outputs[k]->id] = m->outputs[k];
    }
    return after ? after(user, m) : SMELT_OK;
}

smelt_status pu_copy_body(smelt_ctx *ctx, gr_graph *g, const gr_node *owner, const gr_graph *body,
                          const char *prefix, gr_value **map, pu_copy_fn after, void *user)
{
    for (int i = 0; i < body->nodes.len; i++)
        SMELT_TRY(copy_node(ctx, g, owner, prefix, map, body->nodes.items[i], after, user));
    return SMELT_OK;
}
