/* Custom ops: a node of an op type registered by the user (domain, op_type)
 * with a tensor-expression definition (smelt_te_register_op).  The one
 * definition serves every hook: infer (the outputs' types of a trial
 * definition over placeholders of the input types), eval (that trial graph
 * run by the te interpreter: the reference result) and compute (the
 * definition built into the group's te graph, scheduled like any op). */
#include <pthread.h>
#include <string.h>

#include "api/te_api.h"
#include "ops/custom.h"
#include "ops/op.h"

#define CUSTOM_MAX_OPS 256
#define CUSTOM_NAME_MAX 128

struct op_custom {
    char domain[CUSTOM_NAME_MAX], op_type[CUSTOM_NAME_MAX];
    int n_inputs, n_outputs;
    smelt_te_op_fn fn;
    void *user;
};

static op_custom g_custom[CUSTOM_MAX_OPS];
static int g_n_custom;
static pthread_mutex_t g_custom_lock = PTHREAD_MUTEX_INITIALIZER;

smelt_status smelt_te_register_op(smelt_ctx *ctx, const char *domain, const char *op_type,
                                  int n_inputs, int n_outputs, smelt_te_op_fn fn, void *user)
{
    if (!domain || !*domain || !strcmp(domain, "ai.onnx") || !op_type || !*op_type)
        return smelt_errf(ctx, SMELT_ERR_ARG, "custom op: a domain other than ai.onnx and an op "
                          "type are needed");
    if (strlen(domain) >= CUSTOM_NAME_MAX || strlen(op_type) >= CUSTOM_NAME_MAX)
        return smelt_errf(ctx, SMELT_ERR_ARG, "custom op: domain and op type are at most %d "
                          "characters", CUSTOM_NAME_MAX - 1);
    if (n_inputs < 0 || n_inputs > TE_NODE_MAX_INPUTS || n_outputs < 1 ||
        n_outputs > TE_NODE_MAX_OUTPUTS || !fn)
        return smelt_errf(ctx, SMELT_ERR_ARG, "custom op %s.%s: 0-%d inputs, 1-%d outputs and a "
                          "definition", domain, op_type, TE_NODE_MAX_INPUTS, TE_NODE_MAX_OUTPUTS);
    pthread_mutex_lock(&g_custom_lock);
    op_custom *c = (op_custom *)op_custom_find(domain, op_type);
    if (!c && g_n_custom < CUSTOM_MAX_OPS) c = &g_custom[g_n_custom++];
    if (c) {
        snprintf(c->domain, sizeof c->domain, "%s", domain);
        snprintf(c->op_type, sizeof c->op_type, "%s", op_type);
        c->n_inputs = n_inputs;
        c->n_outputs = n_outputs;
        c->fn = fn;
        c->user = user;
    }
    pthread_mutex_unlock(&g_custom_lock);
    return c ? SMELT_OK
             : smelt_errf(ctx, SMELT_ERR_LIMIT, "custom op: more than %d registered",
                          CUSTOM_MAX_OPS);
}

const op_custom *op_custom_find(const char *domain, const char *op_type)
{
    for (int i = 0; i < g_n_custom; i++)
        if (!strcmp(g_custom[i].domain, domain) && !strcmp(g_custom[i].op_type, op_type))
            return &g_custom[i];
    return NULL;
}

static const op_custom *custom_of(const gr_node *n) { return n->op_attrs; }

/* The import hook: arity against the registration, no attributes. */
static smelt_status custom_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    (void)g;
    const op_custom *c = custom_of(n);
    if (!c) return op_errf(ctx, n, SMELT_ERR_INTERNAL, "custom node without a registration");
    if (n->n_inputs != c->n_inputs || n->n_outputs != c->n_outputs)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "has %d inputs and %d outputs; %s.%s was "
                       "registered with %d and %d", n->n_inputs, n->n_outputs, c->domain,
                       c->op_type, c->n_inputs, c->n_outputs);
    for (int i = 0; i < n->n_inputs; i++)
        if (!n->inputs[i]) return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is missing", i);
    for (int i = 0; i < n->n_outputs; i++)
        if (!n->outputs[i]) return op_errf(ctx, n, SMELT_ERR_MODEL, "output %d is missing", i);
    if (n->n_attrs)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "attribute '%s': custom ops take no "
                       "attributes yet", n->attrs[0].name);
    return SMELT_OK;
}

/* Call the definition with te tensors `in` in te graph te; outputs in out. */
static smelt_status define(smelt_ctx *ctx, const gr_node *n, te_graph *te, te_tensor *const *in,
                           te_tensor **out)
{
    const op_custom *c = custom_of(n);
    smelt_te_graph *g = smelt_te_graph_wrap(te, ctx);
    if (!g) return SMELT_ERR_NOMEM;
    smelt_te_tensor *o[TE_NODE_MAX_OUTPUTS] = {0};
    smelt_status s = c->fn(g, n->n_inputs, (smelt_te_tensor *const *)in, n->n_outputs, o, c->user);
    smelt_te_graph_free(g);
    if (s == SMELT_OK && smelt_ctx_status(ctx) != SMELT_OK) s = smelt_ctx_status(ctx);
    if (s != SMELT_OK) {
        if (smelt_ctx_status(ctx) == SMELT_OK)
            op_errf(ctx, n, s, "its definition failed (%s)", smelt_status_name(s));
        else
            smelt_ctx_append(ctx, " (in the definition of node '%s' (%s))", n->name, n->op_type);
        return smelt_ctx_status(ctx);
    }
    for (int i = 0; i < n->n_outputs; i++) {
        te_tensor *t = (te_tensor *)o[i];
        if (!t || te_tensor_of(te, t->buf) != t || t->kind != TE_COMPUTE)
            return op_errf(ctx, n, SMELT_ERR_ARG, "its definition gave no compute of its own for "
                           "output %d", i);
        out[i] = t;
    }
    return SMELT_OK;
}

static smelt_status trial(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                          te_graph **te, te_tensor **out)
{
    *te = te_graph_new(ctx);
    if (!*te) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    te_tensor *tin[TE_NODE_MAX_INPUTS];
    for (int i = 0; i < n->n_inputs; i++) {
        for (int d = 0; d < in[i]->rank; d++)
            if (in[i]->dims[d] < 0)
                return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "input %d has a symbolic dim; "
                               "custom ops need static shapes", i);
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        tin[i] = te_placeholder(*te, name, in[i]->dtype, in[i]->rank, in[i]->dims);
        if (!tin[i]) return smelt_ctx_status(ctx) ? smelt_ctx_status(ctx) : SMELT_ERR_NOMEM;
    }
    return define(ctx, n, *te, tin, out);
}

static smelt_status custom_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                 smelt_tensor *out)
{
    te_graph *te = NULL;
    te_tensor *o[TE_NODE_MAX_OUTPUTS];
    smelt_status s = trial(ctx, n, in, &te, o);
    for (int i = 0; s == SMELT_OK && i < n->n_outputs; i++) {
        out[i].dtype = o[i]->buf->dtype;
        out[i].rank = o[i]->buf->rank;
        memcpy(out[i].dims, o[i]->buf->shape, sizeof(int64_t) * (size_t)o[i]->buf->rank);
    }
    te_graph_free(te);
    return s;
}

static smelt_status custom_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    te_graph *te = NULL;
    te_tensor *o[TE_NODE_MAX_OUTPUTS];
    smelt_tensor *data = NULL;
    smelt_status s = trial(ctx, n, in, &te, o);
    if (s == SMELT_OK) {
        data = smelt_calloc((size_t)te->tensors.len, sizeof *data);
        if (!data) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; s == SMELT_OK && i < n->n_inputs; i++) data[i] = *in[i];
    if (s == SMELT_OK) s = te_eval_graph(ctx, te, data);
    for (int i = 0; s == SMELT_OK && i < n->n_outputs; i++)
        memcpy(out[i].data, data[o[i]->index].data, smelt_tensor_nbytes(&out[i]));
    for (int i = n->n_inputs; data && te && i < te->tensors.len; i++) smelt_free(data[i].data);
    smelt_free(data);
    te_graph_free(te);
    return s;
}

static smelt_status custom_compute(op_compute_args *a)
{
    return define(a->ctx, a->node, a->te, a->in, a->out);
}

const op_def op_def_CUSTOM = {
    .compute = custom_compute,
    .import = custom_import,
    .infer = custom_infer,
    .eval = custom_eval,
    .min_inputs = 0,
    .max_inputs = -1,
    .min_outputs = 1,
    .max_outputs = 0, /* arity is the registration's: checked by import */
    .flags = OP_FLAG_INTERNAL,
};
