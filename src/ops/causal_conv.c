/* CausalConvWithState (opset 27-28): a depthwise 1-D convolution over the
 * last axis that sees only current and past positions, carrying the last
 * k - 1 positions between calls (Mamba, Gated DeltaNet).  With padded =
 * concat(past_state or zeros, input) along the length:
 *
 *   output[b, c, t]        = act(bias[c] + sum_{j<k} w[c, 0, j] padded[b, c, t + j])
 *   present_state[b, c, i] = padded[b, c, L + i],  i < k - 1
 *
 * act is none or SiLU (alias swish), applied in float to the convolution
 * rounded to the input type, as onnx's reference does.  The compute is a
 * reduction stage over the k taps (float accumulation), an output stage
 * adding the bias and the activation, and a gather for present_state. */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

OP_ATTRS(CAUSAL_CONV_WITH_STATE) = {{"activation", 0, 0}, {NULL, 0, 0}};

typedef struct op_causal_conv_attrs {
    bool silu;
} op_causal_conv_attrs;

static smelt_status causal_conv_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_causal_conv_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    const char *act;
    SMELT_TRY(op_attr_string(ctx, node, "activation", "none", &act));
    if (strcmp(act, "none") != 0 && strcmp(act, "silu") != 0 && strcmp(act, "swish") != 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'activation' is \"%s\"; expected \"none\", \"silu\" or "
                       "\"swish\"", act);
    a->silu = strcmp(act, "none") != 0;
    return SMELT_OK;
}

static bool dims_differ(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

static smelt_status causal_conv_infer(smelt_ctx *ctx, const gr_node *node,
                                      const smelt_tensor *const *in, smelt_tensor *out)
{
    static const smelt_dtype k_floats[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT16, SMELT_DT_BFLOAT16,
                                           SMELT_DT_UNDEFINED};
    const smelt_tensor *x = in[0], *w = in[1], *bias = op_input(node, in, 2),
                       *past = op_input(node, in, 3);
    SMELT_TRY(op_check_dtype(ctx, node, x, "input", k_floats));
    const smelt_tensor *others[3] = {w, bias, past};
    static const char *const names[3] = {"weight", "bias", "past_state"};
    for (int i = 0; i < 3; i++)
        if (others[i] && others[i]->dtype != x->dtype)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "%s is %s and input %s", names[i],
                           smelt_dtype_name(others[i]->dtype), smelt_dtype_name(x->dtype));
    if (x->rank != 3 || w->rank != 3)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input (rank %d) and weight (rank %d) must be rank 3: (batch, channels, "
                       "length) and (channels, 1, k)", x->rank, w->rank);
    int64_t k = w->dims[2];
    if (dims_differ(w->dims[0], x->dims[1]) || dims_differ(w->dims[1], 1) || k == 0)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "weight must be (channels, 1, k) with k >= 1 for %lld channels",
                       (long long)x->dims[1]);
    if (bias && (bias->rank != 1 || dims_differ(bias->dims[0], x->dims[1])))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "bias must have shape (channels)");
    if (past && (past->rank != 3 || dims_differ(past->dims[0], x->dims[0]) ||
                 dims_differ(past->dims[1], x->dims[1]) ||
                 (k >= 0 && dims_differ(past->dims[2], k - 1))))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "past_state must have shape (batch, channels, k - 1)");
    op_copy_shape(&out[0], x);
    if (node->n_outputs > 1) {
        op_copy_shape(&out[1], x);
        out[1].dims[2] = k >= 0 ? k - 1 : GR_DIM_UNKNOWN;
    }
    return SMELT_OK;
}

/* padded[b, c, j] of one (b, c) row: past (or 0) before k - 1, then input. */
static double padded_at(const smelt_tensor *x, const smelt_tensor *past, int64_t row, int64_t k,
                        int64_t j)
{
    int64_t len = x->dims[2];
    if (j >= k - 1) return op_get_f64(x, row * len + j - (k - 1));
    return past ? op_get_f64(past, row * (k - 1) + j) : 0.0;
}

static smelt_status causal_conv_eval(smelt_ctx *ctx, const gr_node *node,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx;
    const op_causal_conv_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *w = in[1], *bias = op_input(node, in, 2),
                       *past = op_input(node, in, 3);
    int64_t ch = x->dims[1], len = x->dims[2], k = w->dims[2], rows = x->dims[0] * ch;
    smelt_tensor one = {.dtype = x->dtype}; /* rounds like the output type */
    uint64_t cell = 0;
    one.data = &cell;
    for (int64_t r = 0; r < rows; r++) {
        int64_t c = r % ch;
        for (int64_t t = 0; t < len; t++) {
            double s = bias ? op_get_f64(bias, c) : 0.0;
            for (int64_t j = 0; j < k; j++)
                s += op_get_f64(w, c * k + j) * padded_at(x, past, r, k, t + j);
            if (a->silu) {
                op_set_f64(&one, 0, s); /* the convolution in the input type first */
                float v = (float)op_get_f64(&one, 0);
                s = v * (1.0f / (1.0f + expf(-v)));
            }
            op_set_f64(&out[0], r * len + t, s);
        }
        if (node->n_outputs > 1 && node->outputs[1])
            for (int64_t i = 0; i < k - 1; i++)
                op_set_f64(&out[1], r * (k - 1) + i, padded_at(x, past, r, k, len + i));
    }
    return SMELT_OK;
}

typedef struct causal_conv_te {
    const te_tensor *x, *w, *bias, *past, *acc;
    int64_t k;
    bool silu;
    smelt_dtype dt;
} causal_conv_te;

/* padded at position j (an expression) of row (b, c). */
static ir_expr *te_padded(te_graph *g, const causal_conv_te *s, ir_expr *b_, ir_expr *c,
                          ir_expr *j)
{
    ir_builder *b = &g->b;
    ir_expr *xj = ir_sub(b, j, ir_int(b, s->k - 1));
    ir_expr *xi[3] = {b_, c, ir_binary(b, IR_MAX, xj, ir_int(b, 0))};
    ir_expr *from_x = ir_cast(b, SMELT_DT_FLOAT32, te_read(g, s->x, xi));
    if (s->k == 1) return from_x;
    ir_expr *early = ir_const_float(b, SMELT_DT_FLOAT32, 0.0);
    if (s->past) {
        ir_expr *pi[3] = {b_, c, ir_binary(b, IR_MIN, j, ir_int(b, s->k - 2))};
        early = ir_cast(b, SMELT_DT_FLOAT32, te_read(g, s->past, pi));
    }
    return ir_select(b, ir_binary(b, IR_LT, j, ir_int(b, s->k - 1)), early, from_x);
}

static ir_expr *acc_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const causal_conv_te *s = user;
    ir_builder *b = &g->b;
    ir_axis r = te_reduce_axis(g, "j", s->k);
    ir_expr *j = ir_var_ref(b, r.var);
    ir_expr *wi[3] = {idx[1], ir_int(b, 0), j};
    ir_expr *term = ir_mul(b, ir_cast(b, SMELT_DT_FLOAT32, te_read(g, s->w, wi)),
                           te_padded(g, s, idx[0], idx[1], ir_add(b, idx[2], j)));
    return te_reduce(g, IR_REDUCE_SUM, term, 1, &r);
}

static ir_expr *out_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const causal_conv_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *v = te_read(g, s->acc, idx);
    if (s->bias) v = ir_add(b, v, ir_cast(b, SMELT_DT_FLOAT32, te_read(g, s->bias, &idx[1])));
    v = ir_cast(b, s->dt, v);
    if (!s->silu) return v;
    v = ir_cast(b, SMELT_DT_FLOAT32, v);
    return ir_cast(b, s->dt, ir_mul(b, v, ir_call(b, IR_CALL_SIGMOID, SMELT_DT_FLOAT32, 1, &v)));
}

static ir_expr *state_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const causal_conv_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *j = ir_add(b, idx[2], ir_int(b, s->x->buf->shape[2]));
    return ir_cast(b, s->dt, te_padded(g, s, idx[0], idx[1], j));
}

static smelt_status causal_conv_compute(op_compute_args *a)
{
    causal_conv_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    const gr_node *n = a->node;
    *s = (causal_conv_te){a->in[0], a->in[1], n->n_inputs > 2 ? a->in[2] : NULL,
                          n->n_inputs > 3 ? a->in[3] : NULL, NULL, a->in[1]->buf->shape[2],
                          ((const op_causal_conv_attrs *)n->op_attrs)->silu, a->in[0]->buf->dtype};
    const smelt_tensor *o = &a->out_type[0];
    s->acc = te_compute(a->te, "y_acc", SMELT_DT_FLOAT32, 3, o->dims, acc_body, s, "reduce");
    if (!s->acc) return smelt_ctx_status(a->ctx);
    a->out[0] = te_compute(a->te, "output", o->dtype, 3, o->dims, out_body, s, "injective");
    if (!a->out[0]) return smelt_ctx_status(a->ctx);
    if (n->n_outputs > 1 && n->outputs[1]) {
        const smelt_tensor *st = &a->out_type[1];
        a->out[1] = te_compute(a->te, "present_state", st->dtype, 3, st->dims, state_body, s,
                               "injective");
        if (!a->out[1]) return smelt_ctx_status(a->ctx);
    }
    return SMELT_OK;
}

const op_def op_def_CAUSAL_CONV_WITH_STATE = {
    .compute = causal_conv_compute, .import = causal_conv_import, .infer = causal_conv_infer,
    .eval = causal_conv_eval, .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 2,
};
