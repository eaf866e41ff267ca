/* The reference executor: the test oracle for the compiled path. */
#include <string.h>

#include "exec/exec.h"
#include "ops/op.h"
#include "te/te.h"

static void free_outputs(smelt_tensor *out, int n)
{
    for (int i = 0; i < n; i++) smelt_tensor_release(&out[i]);
}

/* Bytes of output i as infer described it (dims all known by now). */
static smelt_status output_bytes(smelt_ctx *ctx, const gr_node *node, int i,
                                 const smelt_tensor *t, int64_t *bytes)
{
    int64_t numel = 1;
    if (t->rank < 0 || t->rank > SMELT_MAX_RANK)
        return op_errf(ctx, node, SMELT_ERR_INTERNAL, "output %d has rank %d", i, t->rank);
    for (int d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0)
            return op_errf(ctx, node, SMELT_ERR_INTERNAL,
                           "output %d has an unresolved dim after inference", i);
        if (smelt_mul_overflow_i64(numel, t->dims[d], &numel) ||
            numel > SMELT_LIMIT_TENSOR_ELEMS)
            return op_errf(ctx, node, SMELT_ERR_LIMIT,
                           "output %d has more than %lld elements (SMELT_LIMIT_TENSOR_ELEMS)", i,
                           (long long)SMELT_LIMIT_TENSOR_ELEMS);
    }
    size_t es = smelt_dtype_size(t->dtype);
    if (!es) return op_errf(ctx, node, SMELT_ERR_INTERNAL, "output %d has no dtype", i);
    *bytes = numel * (int64_t)es; /* <= 2^34 elements x 16 bytes */
    return SMELT_OK;
}

/* Charge the present outputs' bytes to b (*total: what was charged). */
static smelt_status charge_outputs(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *out,
                                   exec_budget *b, int64_t *total)
{
    *total = 0;
    int64_t sum = 0;
    for (int i = 0; i < node->n_outputs; i++) {
        if (!node->outputs[i]) continue;
        int64_t bytes;
        SMELT_TRY(output_bytes(ctx, node, i, &out[i], &bytes));
        if (smelt_add_overflow_i64(sum, bytes, &sum))
            return op_errf(ctx, node, SMELT_ERR_LIMIT, "outputs' total size overflows");
    }
    SMELT_TRY(exec_budget_charge(ctx, b, node, sum, "its outputs"));
    *total = sum;
    return SMELT_OK;
}

static smelt_status alloc_output(smelt_ctx *ctx, const gr_node *node, int i, smelt_tensor *t)
{
    int64_t bytes;
    SMELT_TRY(output_bytes(ctx, node, i, t, &bytes));
    t->data = smelt_calloc(bytes ? (size_t)bytes : 1, 1);
    if (!t->data)
        return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory for output %d (%lld bytes)",
                       i, (long long)bytes);
    return SMELT_OK;
}

/* Ops that take or give sequences and optionals (OP_FLAG_CONTAINERS): eval
 * gets its tensor outputs allocated as usual and makes its container
 * outputs itself; all of them are charged to b once they exist. */
static smelt_status exec_container_node(smelt_ctx *ctx, const gr_node *node, const op_def *d,
                                        const smelt_tensor *const *in, smelt_tensor *out,
                                        exec_budget *b)
{
    memset(out, 0, sizeof(smelt_tensor) * (size_t)node->n_outputs);
    SMELT_TRY(d->infer(ctx, node, in, out));
    /* the element arrays (counts known now) before they exist: a huge
     * count fails on the limit, not in the allocator; their elements copy
     * or slice tensors that already exist, charged once they do */
    int64_t arrays = 0;
    for (int i = 0; i < node->n_outputs; i++)
        if (node->outputs[i] && smelt_dtype_is_container(out[i].dtype) && out[i].dims[0] > 0)
            arrays += out[i].dims[0] * (int64_t)sizeof(smelt_tensor);
    SMELT_TRY(exec_budget_charge(ctx, b, node, arrays, "its outputs' element arrays"));
    smelt_status s = SMELT_OK;
    for (int i = 0; i < node->n_outputs && s == SMELT_OK; i++)
        if (node->outputs[i] && !smelt_dtype_is_container(out[i].dtype))
            s = alloc_output(ctx, node, i, &out[i]);
    if (s == SMELT_OK) s = d->eval(ctx, node, in, out);
    exec_budget_release(b, arrays);
    int64_t bytes = 0;
    for (int i = 0; s == SMELT_OK && i < node->n_outputs; i++)
        if (node->outputs[i]) bytes += (int64_t)smelt_value_nbytes(&out[i]);
    if (s == SMELT_OK) s = exec_budget_charge(ctx, b, node, bytes, "its outputs");
    if (s != SMELT_OK) free_outputs(out, node->n_outputs);
    return s;
}

smelt_status exec_node_budget(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out, exec_budget *b)
{
    const op_def *d = op_get(node->op)->def;
    if (d) SMELT_TRY(op_check_container_inputs(ctx, node, in));
    if (d && (d->flags & OP_FLAG_SUBGRAPHS))
        return exec_control_node(ctx, node, EXEC_REFERENCE, in, out, b);
    if (!d || !d->infer || !d->eval)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "op has no reference kernel");
    if (d->flags & OP_FLAG_CONTAINERS) return exec_container_node(ctx, node, d, in, out, b);
    memset(out, 0, sizeof(smelt_tensor) * (size_t)node->n_outputs);
    SMELT_TRY(d->infer(ctx, node, in, out));
    int64_t charged;
    SMELT_TRY(charge_outputs(ctx, node, out, b, &charged));
    smelt_status s = SMELT_OK;
    for (int i = 0; i < node->n_outputs && s == SMELT_OK; i++)
        if (node->outputs[i]) s = alloc_output(ctx, node, i, &out[i]);
    if (s == SMELT_OK) s = d->eval(ctx, node, in, out);
    if (s != SMELT_OK) {
        free_outputs(out, node->n_outputs);
        exec_budget_release(b, charged);
        return s;
    }
    /* the caller gives back smelt_tensor_nbytes of each output: account
     * for what the outputs are now, in case a kernel reshaped one */
    int64_t actual = 0;
    for (int i = 0; i < node->n_outputs; i++)
        if (node->outputs[i]) actual += (int64_t)smelt_tensor_nbytes(&out[i]);
    exec_budget_release(b, charged);
    b->live += actual;
    return SMELT_OK;
}

smelt_status exec_node(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                       smelt_tensor *out)
{
    exec_budget b;
    SMELT_TRY(exec_budget_init(ctx, &b));
    return exec_node_budget(ctx, node, in, out, &b);
}

/* The outputs through the node's tensor expressions (types from infer). */
static smelt_status te_node_outputs(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    /* only graph constants count as compile-time known */
    smelt_tensor types[64];
    const smelt_tensor *tin[64];
    for (int i = 0; i < node->n_inputs; i++) {
        tin[i] = in[i] ? &types[i] : NULL;
        if (!in[i]) continue;
        types[i] = *in[i];
        if (!node->inputs[i]->constant) types[i].data = NULL;
    }
    te_graph *g;
    SMELT_TRY(te_from_node(ctx, node, tin, out, &g));
    smelt_tensor *data = smelt_calloc((size_t)g->tensors.len + 1, sizeof *data);
    smelt_status s = data ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0, k = 0; s == SMELT_OK && i < node->n_inputs; i++)
        if (in[i]) data[k++] = *in[i]; /* placeholders come first, in input order */
    if (s == SMELT_OK) s = te_eval_graph(ctx, g, data);
    for (int o = 0, k = 0; s == SMELT_OK && o < node->n_outputs; o++) {
        if (!node->outputs[o]) continue;
        const te_tensor *t = g->outputs.items[k++];
        out[o].data = data[t->index].data;
        data[t->index].data = NULL;
    }
    for (int i = 0; data && i < g->tensors.len; i++)
        if (((te_tensor *)g->tensors.items[i])->kind != TE_PLACEHOLDER) smelt_free(data[i].data);
    smelt_free(data);
    te_graph_free(g);
    if (s != SMELT_OK) free_outputs(out, node->n_outputs);
    return s;
}

/* exec_node_te, the outputs charged to b (the te interpreter's own
 * intermediate stages are not counted). */
smelt_status exec_node_te_budget(smelt_ctx *ctx, const gr_node *node,
                                        const smelt_tensor *const *in, smelt_tensor *out,
                                        exec_budget *b)
{
    const op_def *d = op_get(node->op)->def;
    if (d) SMELT_TRY(op_check_container_inputs(ctx, node, in));
    if (d && (d->flags & OP_FLAG_SUBGRAPHS) && (op_runs_bodies(node) || !d->compute))
        return exec_control_node(ctx, node, EXEC_TE, in, out, b);
    if (!d || !d->infer) return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "op has no definition");
    /* sequence and optional ops move whole tensors: no arithmetic to
     * express, so they run their reference kernels here too */
    if (d->eval && (d->flags & OP_FLAG_CONTAINERS))
        return exec_container_node(ctx, node, d, in, out, b);
    if (node->n_inputs > 64) return op_errf(ctx, node, SMELT_ERR_LIMIT, "too many inputs");
    memset(out, 0, sizeof(smelt_tensor) * (size_t)node->n_outputs);
    SMELT_TRY(d->infer(ctx, node, in, out));
    int64_t charged;
    SMELT_TRY(charge_outputs(ctx, node, out, b, &charged));
    smelt_status s = te_node_outputs(ctx, node, in, out);
    if (s != SMELT_OK) exec_budget_release(b, charged);
    return s;
}

smelt_status exec_node_te(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                          smelt_tensor *out)
{
    exec_budget b;
    SMELT_TRY(exec_budget_init(ctx, &b));
    return exec_node_te_budget(ctx, node, in, out, &b);
}

/* What is wrong with t as a value for v, as text (NULL: nothing).  The
 * tensor comes from the caller: its rank is checked before its dims are read. */
static bool dim_fits(const gr_graph *g, const gr_value *v, int d, int64_t x, bool rt)
{
    int64_t add = 0;
    int k = rt ? gr_value_rt_dim_add(g, v, d, &add) : -1;
    if (k < 0) return v->dims[d] < 0 || x == v->dims[d];
    const gr_rt_dim *r = &gr_graph_root(g)->rt_dims[k];
    return x >= r->min + add && x <= r->max + add;
}

static const char *input_problem(const gr_graph *g, const gr_value *v, const smelt_tensor *t,
                                 bool rt, char *buf, size_t cap)
{
    /* a body's input that inference never reached takes what it is given */
    if (v->dtype == SMELT_DT_UNDEFINED && v->rank < 0) return NULL;
    if (t->dtype != v->dtype) {
        snprintf(buf, cap, "dtype %s", smelt_dtype_name(t->dtype));
        return buf;
    }
    if (smelt_dtype_is_container(t->dtype)) return op_container_problem(t, buf, cap);
    if (t->rank < 0 || t->rank > SMELT_MAX_RANK || (v->rank >= 0 && t->rank != v->rank)) {
        snprintf(buf, cap, "rank %d", t->rank);
        return buf;
    }
    int64_t numel = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0 || (v->rank >= 0 && !dim_fits(g, v, i, t->dims[i], rt))) {
            snprintf(buf, cap, "dim %d is %lld", i, (long long)t->dims[i]);
            return buf;
        }
        if (smelt_mul_overflow_i64(numel, t->dims[i], &numel) || numel > SMELT_LIMIT_TENSOR_ELEMS) {
            snprintf(buf, cap, "more than %lld elements (SMELT_LIMIT_TENSOR_ELEMS)",
                     (long long)SMELT_LIMIT_TENSOR_ELEMS);
            return buf;
        }
    }
    if (!t->data && numel != 0) return "no data";
    return NULL;
}

static smelt_status check_input(smelt_ctx *ctx, const gr_graph *g, const gr_value *v,
                                const smelt_tensor *t, bool rt)
{
    char buf[128];
    const char *problem = input_problem(g, v, t, rt, buf, sizeof buf);
    if (!problem) return SMELT_OK;
    smelt_strbuf want;
    smelt_strbuf_init(&want);
    gr_value_print_type(g, v, &want);
    smelt_status s = smelt_errf(ctx, SMELT_ERR_ARG, "input '%s': %s, expected %s", v->name,
                                problem, smelt_strbuf_cstr(&want));
    smelt_strbuf_fini(&want);
    return s;
}

smelt_status exec_check_input(smelt_ctx *ctx, const gr_graph *g, const gr_value *v,
                              const smelt_tensor *t)
{
    return check_input(ctx, g, v, t, false);
}

smelt_status exec_check_input_rt(smelt_ctx *ctx, const gr_graph *g, const gr_value *v,
                                 const smelt_tensor *t)
{
    return check_input(ctx, g, v, t, true);
}

/* Runtime values by id; `owned` marks intermediates to free after last use. */
typedef struct exec_state {
    const gr_graph *g;
    exec_mode mode;
    smelt_tensor *vals;
    bool *owned;
    int *last_use; /* node index of the last consumer, or INT_MAX for outputs */
    exec_budget *budget; /* the owned intermediates and the output copies */
} exec_state;

static void compute_last_use(exec_state *es)
{
    const gr_graph *g = es->g;
    for (int i = 0; i < g->values.len; i++) es->last_use[i] = -1;
    for (int n = 0; n < g->nodes.len; n++) {
        const gr_node *node = g->nodes.items[n];
        for (int k = 0; k < node->n_inputs; k++)
            if (node->inputs[k]) es->last_use[node->inputs[k]->id] = n;
    }
    for (int i = 0; i < g->outputs.len; i++)
        es->last_use[((gr_value *)g->outputs.items[i])->id] = g->nodes.len;
}

static smelt_status run_node(smelt_ctx *ctx, exec_state *es, int n)
{
    const gr_node *node = es->g->nodes.items[n];
    const smelt_tensor *in[64];
    const smelt_tensor **inp = node->n_inputs <= 64 ? in : smelt_calloc((size_t)node->n_inputs, sizeof *inp);
    smelt_tensor outbuf[8];
    smelt_tensor *out = node->n_outputs <= 8 ? outbuf : smelt_calloc((size_t)node->n_outputs, sizeof *out);
    smelt_status s = SMELT_OK;
    if (!inp || !out) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int k = 0; s == SMELT_OK && k < node->n_inputs; k++)
        inp[k] = node->inputs[k] ? &es->vals[node->inputs[k]->id] : NULL;
    if (s == SMELT_OK)
        s = es->mode == EXEC_TE ? exec_node_te_budget(ctx, node, inp, out, es->budget)
                                : exec_node_budget(ctx, node, inp, out, es->budget);
    for (int k = 0; s == SMELT_OK && k < node->n_outputs; k++) {
        const gr_value *v = node->outputs[k];
        if (!v) continue;
        es->vals[v->id] = out[k];
        es->owned[v->id] = true;
    }
    if (inp != in) smelt_free(inp);
    if (out != outbuf) smelt_free(out);
    return s;
}

static void free_value(exec_state *es, const gr_value *v)
{
    exec_budget_release(es->budget, (int64_t)smelt_value_nbytes(&es->vals[v->id]));
    smelt_tensor_release(&es->vals[v->id]);
    es->owned[v->id] = false;
}

static void release_dead(exec_state *es, int n)
{
    const gr_node *node = es->g->nodes.items[n];
    for (int k = 0; k < node->n_inputs; k++) {
        const gr_value *v = node->inputs[k];
        if (v && es->owned[v->id] && es->last_use[v->id] == n) free_value(es, v);
    }
    /* outputs never read by anyone */
    for (int k = 0; k < node->n_outputs; k++) {
        const gr_value *v = node->outputs[k];
        if (v && es->owned[v->id] && es->last_use[v->id] < n) free_value(es, v);
    }
}

static smelt_status bind_inputs(smelt_ctx *ctx, exec_state *es, const smelt_tensor *inputs)
{
    const gr_graph *g = es->g;
    for (int i = 0; i < g->values.len; i++) {
        const gr_value *v = g->values.items[i];
        if (v->constant) es->vals[i] = *v->constant;
    }
    for (int i = 0; i < g->inputs.len; i++) {
        const gr_value *v = g->inputs.items[i];
        SMELT_TRY(exec_check_input(ctx, g, v, &inputs[i]));
        es->vals[v->id] = inputs[i];
    }
    return SMELT_OK;
}

/* Copy an output out of the value table (it may be a constant, an input,
 * or listed twice, so it is copied rather than moved). */
static smelt_status take_output(smelt_ctx *ctx, exec_state *es, const gr_value *v,
                                smelt_tensor *dst)
{
    const smelt_tensor *src = &es->vals[v->id];
    size_t nb = smelt_value_nbytes(src);
    SMELT_TRY(exec_budget_charge(ctx, es->budget, NULL, (int64_t)nb, "the graph's outputs"));
    if (smelt_value_copy(src, dst)) return SMELT_OK;
    exec_budget_release(es->budget, (int64_t)nb);
    return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
}

smelt_status exec_graph(smelt_ctx *ctx, const gr_graph *g, exec_mode mode,
                        const smelt_tensor *inputs, smelt_tensor *outputs)
{
    exec_budget b;
    SMELT_TRY(exec_budget_init(ctx, &b));
    return exec_graph_budget(ctx, g, mode, inputs, outputs, &b);
}

smelt_status exec_graph_budget(smelt_ctx *ctx, const gr_graph *g, exec_mode mode,
                               const smelt_tensor *inputs, smelt_tensor *outputs,
                               exec_budget *budget)
{
    exec_state es = {g, mode, NULL, NULL, NULL, budget};
    int nv = g->values.len;
    es.vals = smelt_calloc((size_t)nv + 1, sizeof *es.vals);
    es.owned = smelt_calloc((size_t)nv + 1, sizeof *es.owned);
    es.last_use = smelt_calloc((size_t)nv + 1, sizeof *es.last_use);
    smelt_status s = SMELT_OK;
    if (!es.vals || !es.owned || !es.last_use)
        s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s == SMELT_OK) {
        compute_last_use(&es);
        s = bind_inputs(ctx, &es, inputs);
    }
    for (int n = 0; s == SMELT_OK && n < g->nodes.len; n++) {
        s = run_node(ctx, &es, n);
        if (s == SMELT_OK) release_dead(&es, n);
    }
    int taken = 0; /* outputs holding a copy */
    while (s == SMELT_OK && taken < g->outputs.len) {
        s = take_output(ctx, &es, g->outputs.items[taken], &outputs[taken]);
        if (s == SMELT_OK) taken++;
    }
    if (s != SMELT_OK)
        for (int i = 0; i < taken; i++) {
            exec_budget_release(es.budget, (int64_t)smelt_value_nbytes(&outputs[i]));
            smelt_tensor_release(&outputs[i]);
        }
    for (int i = 0; es.owned && i < nv; i++)
        if (es.owned[i]) {
            exec_budget_release(es.budget, (int64_t)smelt_value_nbytes(&es.vals[i]));
            smelt_tensor_release(&es.vals[i]);
        }
    smelt_free(es.vals);
    smelt_free(es.owned);
    smelt_free(es.last_use);
    return s;
}
