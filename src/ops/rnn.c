/* Recurrent ops: RNN, GRU, LSTM (one cell kind each, one shared frame).
 *
 * Inputs X [T, N, I] (layout 1: [N, T, I]), W [D, G*H, I], R [D, G*H, H],
 * B [D, 2*G*H] (Wb then Rb), sequence_lens [N] (int32), initial_h [D, N, H]
 * (layout 1: [N, D, H]), LSTM also initial_c and peepholes P [D, 3*H]; G
 * gates per cell (RNN 1, GRU 3 in order z r h, LSTM 4 in order i o f c),
 * D directions.  Outputs Y [T, D, N, H] (layout 1: [N, T, D, H]) and Y_h
 * (LSTM also Y_c) [D, N, H] (layout 1: [N, D, H]).  Batch entry b runs
 * sequence_lens[b] steps (reverse: from step len-1 down to 0); Y is zero
 * past them and Y_h/Y_c hold the state after the last step (initial_h for
 * a length of 0).
 *
 * The compiled form (rnn_compute): an extern stage (te.h) holding the
 * input projection X W^T of all steps as one matrix product, then a
 * sequential loop over the steps with the recurrent product H R^T (the
 * smelt.gemm_f32 micro-kernel for float32) and the gates fused in one
 * loop over the hidden units after it.  It writes the state history
 * S [D, T+1, states, N, H]; Y, Y_h and Y_c are ordinary te computes
 * gathering from it (sequence lengths and direction decide the step). */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "ops/rnn.h"

/* ---- import -------------------------------------------------------------------- */

/* output_sequence (opset 1): whether Y is produced; an omitted output says
 * the same, and a present Y is computed either way (as onnxruntime does). */
#define RNN_COMMON_ATTRS                                                                 \
    {"activation_alpha", 0, 0}, {"activation_beta", 0, 0}, {"activations", 0, 0},       \
        {"clip", 0, 0}, {"direction", 0, 0}, {"hidden_size", 0, 0}, {"layout", 14, 0}

OP_ATTRS(RNN) = {RNN_COMMON_ATTRS, {"output_sequence", 1, 6}, {NULL, 0, 0}};
OP_ATTRS(GRU) = {RNN_COMMON_ATTRS, {"output_sequence", 1, 6}, {"linear_before_reset", 3, 0},
                 {NULL, 0, 0}};
OP_ATTRS(LSTM) = {RNN_COMMON_ATTRS, {"output_sequence", 1, 6}, {"input_forget", 0, 0},
                  {NULL, 0, 0}};

typedef struct act_name {
    const char *name;
    rnn_act_kind kind;
    bool alpha, beta; /* takes them from activation_alpha / activation_beta */
    float def_alpha, def_beta;
} act_name;

/* The defaults are those of the ONNX operators of the same names (Affine
 * and ScaledTanh, no longer operators, as onnxruntime has them). */
static const act_name k_acts[] = {
    {"Sigmoid", RNN_ACT_SIGMOID, false, false, 0, 0},
    {"Tanh", RNN_ACT_TANH, false, false, 0, 0},
    {"Relu", RNN_ACT_RELU, false, false, 0, 0},
    {"HardSigmoid", RNN_ACT_HARD_SIGMOID, true, true, 0.2f, 0.5f},
    {"Affine", RNN_ACT_AFFINE, true, true, 1.0f, 0.0f},
    {"LeakyRelu", RNN_ACT_LEAKY_RELU, true, false, 0.01f, 0},
    {"ThresholdedRelu", RNN_ACT_THRESHOLDED_RELU, true, false, 1.0f, 0},
    {"ScaledTanh", RNN_ACT_SCALED_TANH, true, true, 1.0f, 1.0f},
    {"Elu", RNN_ACT_ELU, true, false, 1.0f, 0},
    {"Softsign", RNN_ACT_SOFTSIGN, false, false, 0, 0},
    {"Softplus", RNN_ACT_SOFTPLUS, false, false, 0, 0},
};

static const act_name *act_lookup(const char *s)
{
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_acts); i++) {
        const char *a = k_acts[i].name, *b = s;
        while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b)) a++, b++;
        if (!*a && !*b) return &k_acts[i];
    }
    return NULL;
}

static smelt_status read_direction(smelt_ctx *ctx, const gr_node *n, op_rnn_attrs *a)
{
    const char *dir;
    SMELT_TRY(op_attr_string(ctx, n, "direction", "forward", &dir));
    if (strcmp(dir, "forward") == 0) a->n_dirs = 1;
    else if (strcmp(dir, "reverse") == 0) a->n_dirs = 1, a->reverse = true;
    else if (strcmp(dir, "bidirectional") == 0) a->n_dirs = 2;
    else
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'direction' is '%s'; expected forward, "
                       "reverse or bidirectional", dir);
    return SMELT_OK;
}

static smelt_status read_floats(smelt_ctx *ctx, const gr_node *n, const char *name, int *count,
                                const float **vals)
{
    const gr_attr *at = gr_node_attr(n, name);
    *count = 0;
    *vals = NULL;
    if (!at) return SMELT_OK;
    if (at->type != GR_ATTR_FLOATS)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' must be a list of floats", name);
    *count = at->n;
    *vals = at->floats;
    return SMELT_OK;
}

/* activations, with activation_alpha/beta consumed in order by the
 * activations that take them (as onnxruntime reads them). */
static smelt_status read_activations(smelt_ctx *ctx, const gr_node *n, op_rnn_attrs *a)
{
    static const char *const defaults[3][RNN_MAX_ACTS] = {
        {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    int per_dir = rnn_cell_acts(a->cell), want = per_dir * a->n_dirs;
    const gr_attr *at = gr_node_attr(n, "activations");
    if (at && at->type != GR_ATTR_STRINGS)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'activations' must be a list of strings");
    if (at && at->n != want)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'activations' has %d names; %s with %d "
                       "direction(s) takes %d", at->n, n->op_type, a->n_dirs, want);
    int n_alpha, n_beta, ia = 0, ib = 0;
    const float *alphas, *betas;
    SMELT_TRY(read_floats(ctx, n, "activation_alpha", &n_alpha, &alphas));
    SMELT_TRY(read_floats(ctx, n, "activation_beta", &n_beta, &betas));
    for (int i = 0; i < want; i++) {
        const char *name = at ? at->strings[i] : defaults[a->cell][i % per_dir];
        const act_name *k = act_lookup(name);
        if (!k)
            return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "attribute 'activations': '%s' is not "
                           "an activation smelt implements (Sigmoid, Tanh, Relu, HardSigmoid, "
                           "Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, Elu, Softsign, "
                           "Softplus)", name);
        rnn_act *act = &a->act[i / per_dir][i % per_dir];
        act->kind = k->kind;
        act->alpha = k->alpha && ia < n_alpha ? alphas[ia++] : k->def_alpha;
        act->beta = k->beta && ib < n_beta ? betas[ib++] : k->def_beta;
    }
    if (ia < n_alpha || ib < n_beta)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' has %d values; the activations "
                       "take %d", ia < n_alpha ? "activation_alpha" : "activation_beta",
                       ia < n_alpha ? n_alpha : n_beta, ia < n_alpha ? ia : ib);
    return SMELT_OK;
}

static smelt_status rnn_import_cell(smelt_ctx *ctx, gr_graph *g, gr_node *node, rnn_cell cell)
{
    op_rnn_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    a->cell = cell;
    SMELT_TRY(op_attr_int(ctx, node, "hidden_size", -1, &a->hidden_size));
    if (gr_node_attr(node, "hidden_size") && a->hidden_size <= 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'hidden_size' is %lld; expected > 0",
                       (long long)a->hidden_size);
    SMELT_TRY(read_direction(ctx, node, a));
    SMELT_TRY(read_activations(ctx, node, a));
    a->has_clip = gr_node_attr(node, "clip") != NULL;
    SMELT_TRY(op_attr_float(ctx, node, "clip", 0.0f, &a->clip));
    if (a->has_clip && !(a->clip > 0))
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'clip' is %g; expected > 0",
                       (double)a->clip);
    bool layout = false, seq = true;
    SMELT_TRY(op_attr_bool(ctx, node, "layout", false, &layout));
    SMELT_TRY(op_attr_bool(ctx, node, "output_sequence", false, &seq));
    a->layout = layout;
    if (cell == RNN_CELL_LSTM) SMELT_TRY(op_attr_bool(ctx, node, "input_forget", false, &a->input_forget));
    if (cell == RNN_CELL_GRU)
        SMELT_TRY(op_attr_bool(ctx, node, "linear_before_reset", false, &a->linear_before_reset));
    return SMELT_OK;
}

static smelt_status rnn_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    return rnn_import_cell(ctx, g, node, RNN_CELL_RNN);
}
static smelt_status gru_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    return rnn_import_cell(ctx, g, node, RNN_CELL_GRU);
}
static smelt_status lstm_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    return rnn_import_cell(ctx, g, node, RNN_CELL_LSTM);
}

/* ---- shapes -------------------------------------------------------------------- */

static const char *const k_in_names[] = {"X", "W", "R", "B", "sequence_lens", "initial_h",
                                         "initial_c", "P"};

/* A dim that must equal `want` when both are known. */
static smelt_status check_dim(smelt_ctx *ctx, const gr_node *n, int input, const smelt_tensor *t,
                              int d, int64_t want)
{
    if (t->dims[d] >= 0 && want >= 0 && t->dims[d] != want)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has dim %d = %lld; expected %lld",
                       k_in_names[input], d, (long long)t->dims[d], (long long)want);
    return SMELT_OK;
}

static smelt_status check_rank(smelt_ctx *ctx, const gr_node *n, int input, const smelt_tensor *t,
                               int rank)
{
    if (t->rank != rank)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has rank %d; expected %d",
                       k_in_names[input], t->rank, rank);
    return SMELT_OK;
}

/* The state inputs initial_h/initial_c: [D, N, H], layout 1 [N, D, H]. */
static smelt_status check_state(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                int input, const rnn_dims *rd, int layout)
{
    const smelt_tensor *t = op_input(n, in, input);
    if (!t) return SMELT_OK;
    SMELT_TRY(check_rank(ctx, n, input, t, 3));
    SMELT_TRY(check_dim(ctx, n, input, t, layout ? 1 : 0, rd->dirs));
    SMELT_TRY(check_dim(ctx, n, input, t, layout ? 0 : 1, rd->batch));
    return check_dim(ctx, n, input, t, 2, rd->hidden);
}

static smelt_status check_types(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in)
{
    static const smelt_dtype floats[] = {SMELT_DT_FLOAT16, SMELT_DT_BFLOAT16, SMELT_DT_FLOAT32,
                                         SMELT_DT_FLOAT64, SMELT_DT_UNDEFINED};
    static const smelt_dtype i32[] = {SMELT_DT_INT32, SMELT_DT_UNDEFINED};
    const smelt_tensor *x = in[IN_X];
    SMELT_TRY(op_check_dtype(ctx, n, x, "input 'X'", floats));
    for (int i = IN_W; i <= IN_P; i++) {
        const smelt_tensor *t = op_input(n, in, i);
        if (!t) continue;
        if (i == IN_SEQ_LENS) {
            SMELT_TRY(op_check_dtype(ctx, n, t, "input 'sequence_lens'", i32));
        } else if (t->dtype != x->dtype) {
            return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has type %s; expected X's %s",
                           k_in_names[i], smelt_dtype_name(t->dtype), smelt_dtype_name(x->dtype));
        }
    }
    return SMELT_OK;
}

static smelt_status rnn_shape(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                              rnn_dims *rd)
{
    const op_rnn_attrs *a = n->op_attrs;
    const smelt_tensor *x = in[IN_X], *w = in[IN_W], *r = in[IN_R];
    if (n->n_inputs > IN_C0 + 1 && a->cell != RNN_CELL_LSTM)
        return op_errf(ctx, n, SMELT_ERR_ARG, "%s takes at most 6 inputs", n->op_type);
    SMELT_TRY(check_types(ctx, n, in));
    SMELT_TRY(check_rank(ctx, n, IN_X, x, 3));
    SMELT_TRY(check_rank(ctx, n, IN_W, w, 3));
    SMELT_TRY(check_rank(ctx, n, IN_R, r, 3));
    rd->gates = rnn_cell_gates(a->cell);
    rd->dirs = a->n_dirs;
    rd->steps = x->dims[a->layout ? 1 : 0];
    rd->batch = x->dims[a->layout ? 0 : 1];
    rd->input = x->dims[2];
    rd->hidden = a->hidden_size > 0 ? a->hidden_size : r->dims[2];
    if (rd->hidden < 0)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "the hidden size is unknown: no attribute "
                       "'hidden_size' and input 'R' has a dynamic last dim");
    int64_t gh = rd->gates * rd->hidden;
    SMELT_TRY(check_dim(ctx, n, IN_W, w, 0, rd->dirs));
    SMELT_TRY(check_dim(ctx, n, IN_W, w, 1, gh));
    SMELT_TRY(check_dim(ctx, n, IN_W, w, 2, rd->input));
    SMELT_TRY(check_dim(ctx, n, IN_R, r, 0, rd->dirs));
    SMELT_TRY(check_dim(ctx, n, IN_R, r, 1, gh));
    SMELT_TRY(check_dim(ctx, n, IN_R, r, 2, rd->hidden));
    const smelt_tensor *b = op_input(n, in, IN_B), *sl = op_input(n, in, IN_SEQ_LENS);
    const smelt_tensor *p = op_input(n, in, IN_P);
    if (b) {
        SMELT_TRY(check_rank(ctx, n, IN_B, b, 2));
        SMELT_TRY(check_dim(ctx, n, IN_B, b, 0, rd->dirs));
        SMELT_TRY(check_dim(ctx, n, IN_B, b, 1, 2 * gh));
    }
    if (sl) {
        SMELT_TRY(check_rank(ctx, n, IN_SEQ_LENS, sl, 1));
        SMELT_TRY(check_dim(ctx, n, IN_SEQ_LENS, sl, 0, rd->batch));
    }
    SMELT_TRY(check_state(ctx, n, in, IN_H0, rd, a->layout));
    SMELT_TRY(check_state(ctx, n, in, IN_C0, rd, a->layout));
    if (p) {
        SMELT_TRY(check_rank(ctx, n, IN_P, p, 2));
        SMELT_TRY(check_dim(ctx, n, IN_P, p, 0, rd->dirs));
        SMELT_TRY(check_dim(ctx, n, IN_P, p, 1, 3 * rd->hidden));
    }
    return SMELT_OK;
}

static void set_dims(smelt_tensor *t, smelt_dtype dt, int rank, const int64_t *dims)
{
    t->dtype = dt;
    t->rank = rank;
    for (int d = 0; d < rank; d++) t->dims[d] = dims[d];
}

static smelt_status rnn_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const op_rnn_attrs *a = node->op_attrs;
    rnn_dims rd;
    SMELT_TRY(rnn_shape(ctx, node, in, &rd));
    if (node->n_outputs > rnn_cell_states(a->cell) + 1)
        return op_errf(ctx, node, SMELT_ERR_ARG, "%s has at most %d outputs", node->op_type,
                       rnn_cell_states(a->cell) + 1);
    smelt_dtype dt = in[IN_X]->dtype;
    int64_t y0[4] = {rd.steps, rd.dirs, rd.batch, rd.hidden}, y1[4] = {rd.batch, rd.steps, rd.dirs, rd.hidden};
    int64_t s0[3] = {rd.dirs, rd.batch, rd.hidden}, s1[3] = {rd.batch, rd.dirs, rd.hidden};
    set_dims(&out[OUT_Y], dt, 4, a->layout ? y1 : y0);
    for (int o = OUT_Y_H; o < node->n_outputs; o++) set_dims(&out[o], dt, 3, a->layout ? s1 : s0);
    return SMELT_OK;
}

/* ---- reference kernel ---------------------------------------------------------- */

static double act_apply(const rnn_act *a, double x)
{
    switch (a->kind) {
    case RNN_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case RNN_ACT_TANH: return tanh(x);
    case RNN_ACT_RELU: return x > 0 ? x : 0.0;
    case RNN_ACT_HARD_SIGMOID: return fmax(0.0, fmin(1.0, a->alpha * x + a->beta));
    case RNN_ACT_AFFINE: return a->alpha * x + a->beta;
    case RNN_ACT_LEAKY_RELU: return x < 0 ? a->alpha * x : x;
    case RNN_ACT_THRESHOLDED_RELU: return x > a->alpha ? x : 0.0;
    case RNN_ACT_SCALED_TANH: return a->alpha * tanh(a->beta * x);
    case RNN_ACT_ELU: return x < 0 ? a->alpha * (exp(x) - 1.0) : x;
    case RNN_ACT_SOFTSIGN: return x / (1.0 + fabs(x));
    case RNN_ACT_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    }
    return x;
}

static double clip_value(const op_rnn_attrs *a, double x)
{
    return a->has_clip ? fmax(-a->clip, fmin(a->clip, x)) : x;
}

/* Element offsets under the layout: X[t, b, k], Y[t, d, b, j], state[d, b, j]. */
typedef struct rnn_frame {
    const op_rnn_attrs *a;
    rnn_dims rd;
    const smelt_tensor *in[IN_P + 1];
} rnn_frame;

static int64_t x_at(const rnn_frame *f, int64_t t, int64_t b, int64_t k)
{
    const rnn_dims *r = &f->rd;
    return (f->a->layout ? b * r->steps + t : t * r->batch + b) * r->input + k;
}

static int64_t y_at(const rnn_frame *f, int64_t t, int64_t d, int64_t b, int64_t j)
{
    const rnn_dims *r = &f->rd;
    int64_t row = f->a->layout ? (b * r->steps + t) * r->dirs + d : (t * r->dirs + d) * r->batch + b;
    return row * r->hidden + j;
}

static int64_t state_at(const rnn_frame *f, int64_t d, int64_t b, int64_t j)
{
    const rnn_dims *r = &f->rd;
    return ((f->a->layout ? b * r->dirs + d : d * r->batch + b)) * r->hidden + j;
}

static double in_or_zero(const rnn_frame *f, int input, int64_t i)
{
    return f->in[input] ? op_get_f64(f->in[input], i) : 0.0;
}

/* Gate g's pre-activation from the input and from the state:
 * X[t,b] . W[d,g] + Wb[d,g] and h . R[d,g] + Rb[d,g]. */
static void gate_inputs(const rnn_frame *f, int64_t d, int64_t t, int64_t b, const double *h,
                        double *gx, double *gh)
{
    const rnn_dims *r = &f->rd;
    int64_t gh_n = r->gates * r->hidden;
    for (int64_t g = 0; g < gh_n; g++) {
        double sx = in_or_zero(f, IN_B, d * 2 * gh_n + g);
        double sh = in_or_zero(f, IN_B, d * 2 * gh_n + gh_n + g);
        for (int64_t k = 0; k < r->input; k++)
            sx += op_get_f64(f->in[IN_X], x_at(f, t, b, k)) *
                  op_get_f64(f->in[IN_W], (d * gh_n + g) * r->input + k);
        for (int64_t k = 0; k < r->hidden; k++)
            sh += h[k] * op_get_f64(f->in[IN_R], (d * gh_n + g) * r->hidden + k);
        gx[g] = sx;
        gh[g] = sh;
    }
}

/* One step of batch entry b: h (and c) updated in place. */
static void cell_step(const rnn_frame *f, int64_t d, int64_t t, int64_t b, double *h, double *c,
                      double *gx, double *gh)
{
    const op_rnn_attrs *a = f->a;
    const rnn_act *act = a->act[d];
    int64_t H = f->rd.hidden;
    gate_inputs(f, d, t, b, h, gx, gh);
    for (int64_t j = 0; j < H; j++) {
        if (a->cell == RNN_CELL_RNN) {
            h[j] = act_apply(&act[0], clip_value(a, gx[j] + gh[j]));
        } else if (a->cell == RNN_CELL_LSTM) {
            double pi = in_or_zero(f, IN_P, d * 3 * H + j), po = in_or_zero(f, IN_P, d * 3 * H + H + j);
            double pf = in_or_zero(f, IN_P, d * 3 * H + 2 * H + j);
            double i = act_apply(&act[0], clip_value(a, gx[j] + gh[j] + pi * c[j]));
            double fg = a->input_forget ? 1.0 - i
                                        : act_apply(&act[0], clip_value(a, gx[2 * H + j] + gh[2 * H + j] + pf * c[j]));
            double cand = act_apply(&act[1], clip_value(a, gx[3 * H + j] + gh[3 * H + j]));
            double cn = fg * c[j] + i * cand;
            double o = act_apply(&act[0], clip_value(a, gx[H + j] + gh[H + j] + po * cn));
            c[j] = cn;
            gx[j] = o * act_apply(&act[2], cn); /* new h, stored once all j are done */
        }
    }
    if (a->cell == RNN_CELL_LSTM)
        for (int64_t j = 0; j < H; j++) h[j] = gx[j];
    if (a->cell != RNN_CELL_GRU) return;
    /* GRU: z, r first; the candidate needs r o h (or r o (h R_h^T + Rb_h)) */
    double *z = gx, *rg = gx + H;
    for (int64_t j = 0; j < H; j++) {
        z[j] = act_apply(&act[0], clip_value(a, gx[j] + gh[j]));
        rg[j] = act_apply(&act[0], clip_value(a, gx[H + j] + gh[H + j]));
    }
    int64_t gh_n = 3 * H;
    for (int64_t j = 0; j < H; j++) {
        double rec;
        if (a->linear_before_reset) {
            rec = rg[j] * gh[2 * H + j];
        } else {
            rec = in_or_zero(f, IN_B, d * 2 * gh_n + gh_n + 2 * H + j);
            for (int64_t k = 0; k < H; k++)
                rec += rg[k] * h[k] * op_get_f64(f->in[IN_R], (d * gh_n + 2 * H + j) * H + k);
        }
        gh[j] = act_apply(&act[1], clip_value(a, gx[2 * H + j] + rec)); /* candidate */
    }
    for (int64_t j = 0; j < H; j++) h[j] = (1.0 - z[j]) * gh[j] + z[j] * h[j];
}

static smelt_status seq_len(smelt_ctx *ctx, const gr_node *n, const rnn_frame *f, int64_t b,
                            int64_t *out)
{
    const smelt_tensor *sl = f->in[IN_SEQ_LENS];
    *out = sl ? op_get_i64(sl, b) : f->rd.steps;
    if (*out < 0 || *out > f->rd.steps)
        return op_errf(ctx, n, SMELT_ERR_RUNTIME, "sequence length %lld at position %lld is out "
                       "of range [0, %lld]", (long long)*out, (long long)b, (long long)f->rd.steps);
    return SMELT_OK;
}

static smelt_status rnn_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    rnn_frame f = {.a = node->op_attrs};
    for (int i = 0; i <= IN_P; i++) f.in[i] = op_input(node, in, i);
    SMELT_TRY(rnn_shape(ctx, node, in, &f.rd));
    const rnn_dims *r = &f.rd;
    int64_t gh_n = r->gates * r->hidden;
    double *buf = smelt_calloc((size_t)(2 * r->hidden + 2 * gh_n), sizeof(double));
    if (!buf) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    double *h = buf, *c = buf + r->hidden, *gx = c + r->hidden, *gh = gx + gh_n;
    smelt_status s = SMELT_OK;
    for (int64_t d = 0; d < r->dirs && s == SMELT_OK; d++) {
        bool rev = f.a->reverse || d == 1;
        for (int64_t b = 0; b < r->batch && s == SMELT_OK; b++) {
            int64_t len;
            s = seq_len(ctx, node, &f, b, &len);
            for (int64_t j = 0; j < r->hidden; j++) {
                h[j] = in_or_zero(&f, IN_H0, state_at(&f, d, b, j));
                c[j] = in_or_zero(&f, IN_C0, state_at(&f, d, b, j));
            }
            for (int64_t step = 0; s == SMELT_OK && step < len; step++) {
                int64_t t = rev ? len - 1 - step : step;
                cell_step(&f, d, t, b, h, c, gx, gh);
                if (node->outputs[OUT_Y])
                    for (int64_t j = 0; j < r->hidden; j++) op_set_f64(&out[OUT_Y], y_at(&f, t, d, b, j), h[j]);
            }
            for (int64_t j = 0; j < r->hidden; j++) {
                if (node->n_outputs > OUT_Y_H && node->outputs[OUT_Y_H])
                    op_set_f64(&out[OUT_Y_H], state_at(&f, d, b, j), h[j]);
                if (node->n_outputs > OUT_Y_C && node->outputs[OUT_Y_C])
                    op_set_f64(&out[OUT_Y_C], state_at(&f, d, b, j), c[j]);
            }
        }
    }
    smelt_free(buf);
    return s;
}

const op_def op_def_RNN = {
    .compute = rnn_compute, .import = rnn_import, .infer = rnn_infer, .eval = rnn_eval,
    .min_inputs = 3, .max_inputs = 6, .min_outputs = 0, .max_outputs = 2,
};
const op_def op_def_GRU = {
    .compute = rnn_compute, .import = gru_import, .infer = rnn_infer, .eval = rnn_eval,
    .min_inputs = 3, .max_inputs = 6, .min_outputs = 0, .max_outputs = 2,
};
const op_def op_def_LSTM = {
    .compute = rnn_compute, .import = lstm_import, .infer = rnn_infer, .eval = rnn_eval,
    .min_inputs = 3, .max_inputs = 8, .min_outputs = 0, .max_outputs = 3,
};
