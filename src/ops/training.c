/* ai.onnx.preview.training optimisers: Adagrad, Momentum, Adam (opset 1).
 *
 * Each takes a learning rate R and a step count T (scalars), then n tensors
 * to optimise X_1..X_n, their gradients G_1..G_n and the optimiser's state
 * (Adagrad: accumulated squared gradients H; Momentum: velocities V; Adam:
 * V and H), and gives the new X's and the new state, per tensor:
 *   g = norm_coefficient * X + G                        (L2 regularisation)
 *   Adagrad:  r = R / (1 + T * decay_factor); H' = H + g^2;
 *             X' = X - r * g / (sqrt(H') + epsilon)
 *   Momentum: V' = alpha * V + (T > 0 ? beta : 1) * g;
 *             X' = X - R * V' (standard) or X - R * (g + alpha * V') (nesterov)
 *   Adam:     V' = alpha * V + (1 - alpha) * g; H' = beta * H + (1 - beta) * g^2;
 *             r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
 *             X' = (1 - norm_coefficient_post) * (X - r * V' / (sqrt(H') + epsilon))
 * Arithmetic in double, stored in the tensors' type.  Reference kernels only
 * (a training step, not inference): compiled code refuses them by name. */
#include <math.h>
#include <string.h>

#include "ops/op.h"

enum { OPT_ADAGRAD, OPT_MOMENTUM, OPT_ADAM };

typedef struct optimizer_attrs {
    int kind;
    int state_tensors; /* per X: 1 (H or V) or 2 (V, H) */
    float alpha, beta, epsilon, decay_factor, norm_coefficient, norm_coefficient_post;
    bool nesterov;
} optimizer_attrs;

OP_ATTRS(TRAINING_ADAGRAD) = {{"decay_factor", 0, 0}, {"epsilon", 0, 0},
                              {"norm_coefficient", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(TRAINING_MOMENTUM) = {{"alpha", 0, 0}, {"beta", 0, 0}, {"mode", 0, 0},
                               {"norm_coefficient", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(TRAINING_ADAM) = {{"alpha", 0, 0}, {"beta", 0, 0}, {"epsilon", 0, 0},
                           {"norm_coefficient", 0, 0}, {"norm_coefficient_post", 0, 0},
                           {NULL, 0, 0}};

static smelt_status required(smelt_ctx *ctx, const gr_node *n, const char *name)
{
    return gr_node_attr(n, name) ? SMELT_OK
                                 : op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' is required", name);
}

static smelt_status momentum_import(smelt_ctx *ctx, const gr_node *n, optimizer_attrs *a)
{
    const char *mode = NULL;
    SMELT_TRY(required(ctx, n, "alpha"));
    SMELT_TRY(required(ctx, n, "beta"));
    SMELT_TRY(required(ctx, n, "mode"));
    SMELT_TRY(required(ctx, n, "norm_coefficient"));
    SMELT_TRY(op_attr_float(ctx, n, "alpha", 0.0f, &a->alpha));
    SMELT_TRY(op_attr_float(ctx, n, "beta", 0.0f, &a->beta));
    SMELT_TRY(op_attr_float(ctx, n, "norm_coefficient", 0.0f, &a->norm_coefficient));
    SMELT_TRY(op_attr_string(ctx, n, "mode", "standard", &mode));
    if (strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'mode' is '%s': expected 'standard' or "
                       "'nesterov'", mode);
    a->nesterov = strcmp(mode, "nesterov") == 0;
    return SMELT_OK;
}

static smelt_status optimizer_import(smelt_ctx *ctx, gr_graph *g, gr_node *n, int kind)
{
    optimizer_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    a->kind = kind;
    a->state_tensors = kind == OPT_ADAM ? 2 : 1;
    if (kind == OPT_MOMENTUM) SMELT_TRY(momentum_import(ctx, n, a));
    if (kind == OPT_ADAGRAD) {
        SMELT_TRY(op_attr_float(ctx, n, "decay_factor", 0.0f, &a->decay_factor));
        SMELT_TRY(op_attr_float(ctx, n, "epsilon", 1e-6f, &a->epsilon));
        SMELT_TRY(op_attr_float(ctx, n, "norm_coefficient", 0.0f, &a->norm_coefficient));
    }
    if (kind == OPT_ADAM) {
        SMELT_TRY(op_attr_float(ctx, n, "alpha", 0.9f, &a->alpha));
        SMELT_TRY(op_attr_float(ctx, n, "beta", 0.999f, &a->beta));
        SMELT_TRY(op_attr_float(ctx, n, "epsilon", 1e-6f, &a->epsilon));
        SMELT_TRY(op_attr_float(ctx, n, "norm_coefficient", 0.0f, &a->norm_coefficient));
        SMELT_TRY(op_attr_float(ctx, n, "norm_coefficient_post", 0.0f, &a->norm_coefficient_post));
    }
    return SMELT_OK;
}

/* Inputs R, T, then X, G and the state per tensor; outputs X' and the state. */
static smelt_status check_arity(smelt_ctx *ctx, const gr_node *n, const optimizer_attrs *a)
{
    int per = 2 + a->state_tensors, tensors = (n->n_inputs - 2) / per;
    if (n->n_inputs < 2 + per || (n->n_inputs - 2) % per)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "%d inputs: expected R, T and %d tensors per "
                       "optimised tensor", n->n_inputs, per);
    if (n->n_outputs != tensors * (1 + a->state_tensors))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "%d outputs for %d optimised tensors: expected %d",
                       n->n_outputs, tensors, tensors * (1 + a->state_tensors));
    for (int i = 0; i < n->n_inputs; i++)
        if (!n->inputs[i]) return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is missing", i);
    return SMELT_OK;
}

static const smelt_dtype k_float_types[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_UNDEFINED};
static const smelt_dtype k_count_types[] = {SMELT_DT_INT64, SMELT_DT_UNDEFINED};

/* Input k of tensor i: 0 X, 1 G, 2.. the state (in the op's order). */
static int input_of(int tensors, int i, int k)
{
    return 2 + k * tensors + i;
}

static smelt_status optimizer_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                    smelt_tensor *out)
{
    const optimizer_attrs *a = n->op_attrs;
    SMELT_TRY(check_arity(ctx, n, a));
    int per = 2 + a->state_tensors, tensors = (n->n_inputs - 2) / per;
    SMELT_TRY(op_check_dtype(ctx, n, in[0], "R", k_float_types));
    SMELT_TRY(op_check_dtype(ctx, n, in[1], "T", k_count_types));
    if (in[0]->rank > 0 && op_numel(in[0]) != 1)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "R has %lld elements; expected a scalar",
                       (long long)op_numel(in[0]));
    for (int i = 0; i < tensors; i++) {
        const smelt_tensor *x = in[input_of(tensors, i, 0)];
        SMELT_TRY(op_check_dtype(ctx, n, x, "X", k_float_types));
        for (int k = 1; k < per; k++) {
            const smelt_tensor *t = in[input_of(tensors, i, k)];
            if (t->dtype != x->dtype || t->rank != x->rank ||
                memcmp(t->dims, x->dims, sizeof(int64_t) * (size_t)x->rank) != 0)
                return op_errf(ctx, n, SMELT_ERR_SHAPE, "input %d differs from X %d in type or shape",
                               input_of(tensors, i, k), i + 1);
        }
        for (int k = 0; k <= a->state_tensors; k++) op_copy_shape(&out[k * tensors + i], x);
    }
    return SMELT_OK;
}

/* One tensor's update: the new X into x_out, the new state into s_out[]. */
static void update(const optimizer_attrs *a, double r, int64_t t, const smelt_tensor *x,
                   const smelt_tensor *g, const smelt_tensor *const *state, smelt_tensor *x_out,
                   smelt_tensor *const *s_out)
{
    double adam_r = r;
    if (a->kind == OPT_ADAM && t > 0)
        adam_r = r * sqrt(1.0 - pow(a->beta, (double)t)) / (1.0 - pow(a->alpha, (double)t));
    double adagrad_r = r / (1.0 + (double)t * a->decay_factor);
    for (int64_t e = 0; e < op_numel(x); e++) {
        double xv = op_get_f64(x, e), gv = a->norm_coefficient * xv + op_get_f64(g, e), nx;
        if (a->kind == OPT_ADAGRAD) {
            double h = op_get_f64(state[0], e) + gv * gv;
            op_set_f64(s_out[0], e, h);
            nx = xv - adagrad_r * gv / (sqrt(h) + a->epsilon);
        } else if (a->kind == OPT_MOMENTUM) {
            double v = a->alpha * op_get_f64(state[0], e) + (t > 0 ? a->beta : 1.0) * gv;
            op_set_f64(s_out[0], e, v);
            nx = xv - r * (a->nesterov ? gv + a->alpha * v : v);
        } else {
            double v = a->alpha * op_get_f64(state[0], e) + (1.0 - a->alpha) * gv;
            double h = a->beta * op_get_f64(state[1], e) + (1.0 - a->beta) * gv * gv;
            op_set_f64(s_out[0], e, v);
            op_set_f64(s_out[1], e, h);
            nx = (1.0 - a->norm_coefficient_post) * (xv - adam_r * v / (sqrt(h) + a->epsilon));
        }
        op_set_f64(x_out, e, nx);
    }
}

static smelt_status optimizer_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                   smelt_tensor *out)
{
    (void)ctx;
    const optimizer_attrs *a = n->op_attrs;
    int per = 2 + a->state_tensors, tensors = (n->n_inputs - 2) / per;
    double r = op_get_f64(in[0], 0);
    int64_t t = (int64_t)op_get_f64(in[1], 0);
    for (int i = 0; i < tensors; i++) {
        const smelt_tensor *state[2] = {in[input_of(tensors, i, 2)],
                                        a->state_tensors > 1 ? in[input_of(tensors, i, 3)] : NULL};
        smelt_tensor *s_out[2] = {&out[tensors + i], a->state_tensors > 1 ? &out[2 * tensors + i] : NULL};
        update(a, r, t, in[input_of(tensors, i, 0)], in[input_of(tensors, i, 1)], state, &out[i],
               s_out);
    }
    return SMELT_OK;
}

#define OPTIMIZER(ENUM, KIND)                                                                     \
    static smelt_status import_##ENUM(smelt_ctx *ctx, gr_graph *g, gr_node *n)                    \
    {                                                                                             \
        return optimizer_import(ctx, g, n, KIND);                                                 \
    }                                                                                             \
    const op_def op_def_##ENUM = {                                                                \
        .import = import_##ENUM, .infer = optimizer_infer, .eval = optimizer_eval,                \
        .min_inputs = 3, .max_inputs = -1, .min_outputs = 1, .max_outputs = -1,                   \
        .flags = OP_FLAG_NO_FOLD,                                                                 \
    }

OPTIMIZER(TRAINING_ADAGRAD, OPT_ADAGRAD);
OPTIMIZER(TRAINING_MOMENTUM, OPT_MOMENTUM);
OPTIMIZER(TRAINING_ADAM, OPT_ADAM);
