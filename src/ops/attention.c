/* Transformer ops: Attention (opsets 23-28).
 *
 * Attention follows the ONNX reference step by step, with its roundings:
 * Q and K are each scaled by sqrt(scale) in their type, QK^T is rounded to
 * the type once, then softcap, the additive bias (mask, causal frontier,
 * sliding window, padding), the softmax in softmax_precision (default: the
 * input type; a 16-bit type rounds x - max, exp, the sum and the quotient,
 * as the spec's numpy reference does), the fully-masked-row guard (a row
 * whose bias is -inf everywhere gives zeros), and P V rounded once.
 *
 * The reference kernel computes in double and rounds where the spec's
 * types round; the compute definition works in float32 (float64 for double
 * inputs or a double softmax_precision) with the same roundings as casts. */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

enum { IN_Q, IN_K, IN_V, IN_MASK, IN_PAST_K, IN_PAST_V, IN_NONPAD };
enum { OUT_Y, OUT_PRESENT_K, OUT_PRESENT_V, OUT_QK };

typedef struct op_attention_attrs {
    bool is_causal;
    bool has_scale;
    float scale;
    float softcap;
    int64_t q_num_heads, kv_num_heads; /* 0: not given */
    int64_t qk_mode;                   /* qk_matmul_output_mode, 0..3 */
    smelt_dtype softmax_dt;            /* SMELT_DT_UNDEFINED: the input type */
    int64_t left_window, right_window; /* -1: unbounded */
    int64_t opset;
} op_attention_attrs;

static const smelt_dtype k_float_types[] = {SMELT_DT_FLOAT16, SMELT_DT_FLOAT32,
                                            SMELT_DT_FLOAT64, SMELT_DT_BFLOAT16,
                                            SMELT_DT_UNDEFINED};

static const char *const k_in_names[] = {"Q", "K", "V", "attn_mask", "past_key", "past_value",
                                         "nonpad_kv_seqlen"};

/* ---- import ---------------------------------------------------------------------- */

OP_ATTRS(ATTENTION) = {{"is_causal", 0, 0},        {"kv_num_heads", 0, 0},
                       {"q_num_heads", 0, 0},      {"qk_matmul_output_mode", 0, 0},
                       {"scale", 0, 0},            {"softcap", 0, 0},
                       {"softmax_precision", 0, 0}, {"left_window_size", 25, 0},
                       {"right_window_size", 25, 0}, {NULL, 0, 0}};

static smelt_status attention_heads_attr(smelt_ctx *ctx, const gr_node *node, const char *name,
                                         int64_t *out)
{
    SMELT_TRY(op_attr_int(ctx, node, name, 0, out));
    if (gr_node_attr(node, name) && *out < 1)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute '%s' is %lld; expected >= 1", name,
                       (long long)*out);
    return SMELT_OK;
}

static smelt_status attention_window_attr(smelt_ctx *ctx, const gr_node *node, const char *name,
                                          int64_t *out)
{
    SMELT_TRY(op_attr_int(ctx, node, name, -1, out));
    if (*out < -1)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute '%s' is %lld; expected -1 (unbounded) or >= 0", name,
                       (long long)*out);
    return SMELT_OK;
}

static smelt_status attention_softmax_attr(smelt_ctx *ctx, const gr_node *node, smelt_dtype *out)
{
    int64_t v;
    SMELT_TRY(op_attr_int(ctx, node, "softmax_precision", 0, &v));
    *out = SMELT_DT_UNDEFINED;
    if (!gr_node_attr(node, "softmax_precision")) return SMELT_OK;
    if (v != SMELT_DT_FLOAT32 && v != SMELT_DT_FLOAT16 && v != SMELT_DT_FLOAT64 &&
        v != SMELT_DT_BFLOAT16)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'softmax_precision' is %lld; expected 1 (float), 10 (float16), "
                       "11 (double) or 16 (bfloat16)",
                       (long long)v);
    *out = (smelt_dtype)v;
    return SMELT_OK;
}

static smelt_status attention_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_attention_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    a->opset = g->opset;
    SMELT_TRY(op_attr_bool(ctx, node, "is_causal", false, &a->is_causal));
    a->has_scale = gr_node_attr(node, "scale") != NULL;
    SMELT_TRY(op_attr_float(ctx, node, "scale", 1.0f, &a->scale));
    SMELT_TRY(op_attr_float(ctx, node, "softcap", 0.0f, &a->softcap));
    if (!(a->softcap >= 0))
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'softcap' is %g; expected >= 0",
                       (double)a->softcap);
    SMELT_TRY(attention_heads_attr(ctx, node, "q_num_heads", &a->q_num_heads));
    SMELT_TRY(attention_heads_attr(ctx, node, "kv_num_heads", &a->kv_num_heads));
    SMELT_TRY(op_attr_int(ctx, node, "qk_matmul_output_mode", 0, &a->qk_mode));
    if (a->qk_mode < 0 || a->qk_mode > 3)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'qk_matmul_output_mode' is %lld; expected 0, 1, 2 or 3",
                       (long long)a->qk_mode);
    SMELT_TRY(attention_softmax_attr(ctx, node, &a->softmax_dt));
    SMELT_TRY(attention_window_attr(ctx, node, "left_window_size", &a->left_window));
    SMELT_TRY(attention_window_attr(ctx, node, "right_window_size", &a->right_window));
    if (g->opset < 24 && node->n_inputs > IN_NONPAD)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                       "input 7 (nonpad_kv_seqlen) exists from opset 24 on; the model's opset "
                       "is %lld",
                       (long long)g->opset);
    return SMELT_OK;
}

/* ---- shapes ---------------------------------------------------------------------- */

/* The sizes of one Attention node, from its inputs (dims < 0: not known yet). */
typedef struct attn_dims {
    bool rank3;
    int64_t batch, q_heads, kv_heads, q_len, new_len, past_len, kv_len, head, v_head;
} attn_dims;

static int64_t known_div(int64_t a, int64_t b)
{
    return a >= 0 && b > 0 ? a / b : GR_DIM_UNKNOWN;
}

static const char *in_name(const gr_node *n, int i)
{
    return i < n->n_inputs && n->inputs[i] ? n->inputs[i]->name : k_in_names[i];
}

static smelt_status check_dim(smelt_ctx *ctx, const gr_node *n, int64_t got, int64_t want,
                              const char *what)
{
    if (got >= 0 && want >= 0 && got != want)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "%s is %lld, expected %lld", what,
                       (long long)got, (long long)want);
    return SMELT_OK;
}

/* A 3-D input's last dim split into `heads` heads. */
static smelt_status split_hidden(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t, int i,
                                 int64_t heads, int64_t *head)
{
    int64_t hidden = t->dims[2];
    if (hidden >= 0 && hidden % heads != 0)
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "input '%s' has hidden size %lld, not a multiple of %lld heads",
                       in_name(n, i), (long long)hidden, (long long)heads);
    *head = known_div(hidden, heads);
    return SMELT_OK;
}

static smelt_status attention_dims_3d(smelt_ctx *ctx, const gr_node *n,
                                      const smelt_tensor *const *in, attn_dims *d)
{
    const op_attention_attrs *a = n->op_attrs;
    if (!a->q_num_heads || !a->kv_num_heads)
        return op_errf(ctx, n, SMELT_ERR_ATTR,
                       "3-D inputs need the attributes 'q_num_heads' and 'kv_num_heads'");
    int64_t k_head = GR_DIM_UNKNOWN;
    d->q_heads = a->q_num_heads;
    d->kv_heads = a->kv_num_heads;
    d->q_len = in[IN_Q]->dims[1];
    d->new_len = in[IN_K]->dims[1];
    SMELT_TRY(split_hidden(ctx, n, in[IN_Q], IN_Q, d->q_heads, &d->head));
    SMELT_TRY(split_hidden(ctx, n, in[IN_K], IN_K, d->kv_heads, &k_head));
    SMELT_TRY(split_hidden(ctx, n, in[IN_V], IN_V, d->kv_heads, &d->v_head));
    SMELT_TRY(check_dim(ctx, n, k_head, d->head, "the head size of K"));
    return check_dim(ctx, n, in[IN_V]->dims[1], d->new_len, "the sequence length of V");
}

static smelt_status attention_dims_4d(smelt_ctx *ctx, const gr_node *n,
                                      const smelt_tensor *const *in, attn_dims *d)
{
    const op_attention_attrs *a = n->op_attrs;
    if (a->opset >= 25 && (a->q_num_heads || a->kv_num_heads))
        return op_errf(ctx, n, SMELT_ERR_ATTR,
                       "attributes 'q_num_heads' and 'kv_num_heads' must not be given with 4-D "
                       "inputs (opset %lld)",
                       (long long)a->opset);
    d->q_heads = in[IN_Q]->dims[1];
    d->kv_heads = in[IN_K]->dims[1];
    d->q_len = in[IN_Q]->dims[2];
    d->new_len = in[IN_K]->dims[2];
    d->head = in[IN_Q]->dims[3];
    d->v_head = in[IN_V]->dims[3];
    if (a->q_num_heads) SMELT_TRY(check_dim(ctx, n, d->q_heads, a->q_num_heads, "Q's head count"));
    if (a->kv_num_heads)
        SMELT_TRY(check_dim(ctx, n, d->kv_heads, a->kv_num_heads, "K's head count"));
    SMELT_TRY(check_dim(ctx, n, in[IN_K]->dims[3], d->head, "the head size of K"));
    SMELT_TRY(check_dim(ctx, n, in[IN_V]->dims[1], d->kv_heads, "the head count of V"));
    return check_dim(ctx, n, in[IN_V]->dims[2], d->new_len, "the sequence length of V");
}

static smelt_status attention_past(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                   attn_dims *d)
{
    const smelt_tensor *pk = op_input(n, in, IN_PAST_K), *pv = op_input(n, in, IN_PAST_V);
    d->past_len = 0;
    if (!pk && !pv) return SMELT_OK;
    if (!pk || !pv)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "past_key and past_value must be given together");
    if (op_input(n, in, IN_NONPAD))
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "nonpad_kv_seqlen cannot be combined with past_key and past_value");
    for (int i = IN_PAST_K; i <= IN_PAST_V; i++) {
        const smelt_tensor *p = in[i];
        char what[96];
        if (p->rank != 4)
            return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has rank %d, expected 4",
                           in_name(n, i), p->rank);
        if (p->dtype != in[i == IN_PAST_K ? IN_K : IN_V]->dtype)
            return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has dtype %s, expected %s's",
                           in_name(n, i), smelt_dtype_name(p->dtype), i == IN_PAST_K ? "K" : "V");
        snprintf(what, sizeof what, "dim 0 of '%s'", in_name(n, i));
        SMELT_TRY(check_dim(ctx, n, p->dims[0], d->batch, what));
        snprintf(what, sizeof what, "dim 1 of '%s'", in_name(n, i));
        SMELT_TRY(check_dim(ctx, n, p->dims[1], d->kv_heads, what));
        snprintf(what, sizeof what, "dim 3 of '%s'", in_name(n, i));
        SMELT_TRY(check_dim(ctx, n, p->dims[3], i == IN_PAST_K ? d->head : d->v_head, what));
    }
    SMELT_TRY(check_dim(ctx, n, pv->dims[2], pk->dims[2], "the sequence length of past_value"));
    d->past_len = pk->dims[2];
    return SMELT_OK;
}

/* The mask broadcasts (right-aligned) to (batch, q_heads, q_len, kv_len);
 * its last dim may be shorter (padded with -inf / false). */
static smelt_status attention_mask(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                   const attn_dims *d)
{
    const smelt_tensor *m = op_input(n, in, IN_MASK);
    if (!m) return SMELT_OK;
    if (m->dtype != SMELT_DT_BOOL && m->dtype != in[IN_Q]->dtype)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                       "attn_mask has dtype %s; smelt implements a bool mask or a float mask of "
                       "Q's type (%s)",
                       smelt_dtype_name(m->dtype), smelt_dtype_name(in[IN_Q]->dtype));
    if (m->rank < 1 || m->rank > 4)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "attn_mask has rank %d, expected 1 to 4", m->rank);
    const int64_t full[4] = {d->batch, d->q_heads, d->q_len, d->kv_len};
    for (int i = 0; i < m->rank; i++) {
        int64_t got = m->dims[i], want = full[4 - m->rank + i];
        bool last = i == m->rank - 1;
        if (got < 0 || want < 0 || got == 1 || got == want || (last && got < want)) continue;
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "attn_mask dim %d is %lld; it must broadcast to %lld%s", i, (long long)got,
                       (long long)want, last ? " (or be shorter: padded)" : "");
    }
    return SMELT_OK;
}

static smelt_status attention_dims(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                   attn_dims *d)
{
    const smelt_tensor *q = in[IN_Q], *k = in[IN_K], *v = in[IN_V];
    memset(d, 0, sizeof *d);
    for (int i = IN_Q; i <= IN_V; i++) {
        char what[96];
        snprintf(what, sizeof what, "input '%s'", in_name(n, i));
        SMELT_TRY(op_check_dtype(ctx, n, in[i], what, k_float_types));
    }
    if (q->rank != 3 && q->rank != 4)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "Q has rank %d, expected 3 or 4", q->rank);
    if (k->rank != q->rank || v->rank != q->rank)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "Q, K and V have ranks %d, %d, %d; expected equal",
                       q->rank, k->rank, v->rank);
    if (k->dtype != q->dtype)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "K has dtype %s, Q %s; expected the same",
                       smelt_dtype_name(k->dtype), smelt_dtype_name(q->dtype));
    d->rank3 = q->rank == 3;
    d->batch = q->dims[0];
    SMELT_TRY(d->rank3 ? attention_dims_3d(ctx, n, in, d) : attention_dims_4d(ctx, n, in, d));
    SMELT_TRY(check_dim(ctx, n, k->dims[0], d->batch, "dim 0 of K"));
    SMELT_TRY(check_dim(ctx, n, v->dims[0], d->batch, "dim 0 of V"));
    if (d->q_heads >= 0 && d->kv_heads > 0 && d->q_heads % d->kv_heads != 0)
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "%lld query heads are not a multiple of %lld key/value heads",
                       (long long)d->q_heads, (long long)d->kv_heads);
    SMELT_TRY(attention_past(ctx, n, in, d));
    d->kv_len = d->new_len >= 0 && d->past_len >= 0 ? d->new_len + d->past_len : GR_DIM_UNKNOWN;
    const smelt_tensor *np = op_input(n, in, IN_NONPAD);
    if (np && (np->dtype != SMELT_DT_INT64 || np->rank != 1))
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "nonpad_kv_seqlen must be a 1-D int64 tensor (one length per batch)");
    if (np) SMELT_TRY(check_dim(ctx, n, np->dims[0], d->batch, "the length of nonpad_kv_seqlen"));
    return attention_mask(ctx, n, in, d);
}

static void set_shape(smelt_tensor *t, smelt_dtype dt, int rank, const int64_t *dims)
{
    t->dtype = dt;
    t->rank = rank;
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
}

static smelt_status attention_infer(smelt_ctx *ctx, const gr_node *node,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    attn_dims d;
    SMELT_TRY(attention_dims(ctx, node, in, &d));
    smelt_dtype t = in[IN_Q]->dtype, tv = in[IN_V]->dtype;
    if (d.rank3) {
        int64_t hidden = d.q_heads >= 0 && d.v_head >= 0 ? d.q_heads * d.v_head : GR_DIM_UNKNOWN;
        set_shape(&out[OUT_Y], t, 3, (int64_t[]){d.batch, d.q_len, hidden});
    } else {
        set_shape(&out[OUT_Y], t, 4, (int64_t[]){d.batch, d.q_heads, d.q_len, d.v_head});
    }
    if (node->n_outputs > OUT_PRESENT_K)
        set_shape(&out[OUT_PRESENT_K], t, 4, (int64_t[]){d.batch, d.kv_heads, d.kv_len, d.head});
    if (node->n_outputs > OUT_PRESENT_V)
        set_shape(&out[OUT_PRESENT_V], tv, 4, (int64_t[]){d.batch, d.kv_heads, d.kv_len, d.v_head});
    if (node->n_outputs > OUT_QK)
        set_shape(&out[OUT_QK], t, 4, (int64_t[]){d.batch, d.q_heads, d.q_len, d.kv_len});
    return SMELT_OK;
}

/* ---- reference kernel ------------------------------------------------------------- */

/* v rounded to dt (float16/bfloat16 through float32, as numpy's 16-bit arithmetic). */
static double round_to(smelt_dtype dt, double v)
{
    switch (dt) {
    case SMELT_DT_FLOAT32: return (float)v;
    case SMELT_DT_FLOAT16: return smelt_f16_to_f32(smelt_f32_to_f16((float)v));
    case SMELT_DT_BFLOAT16: return smelt_bf16_to_f32(smelt_f32_to_bf16((float)v));
    default: return v;
    }
}

typedef struct attn_eval {
    const op_attention_attrs *a;
    attn_dims d;
    smelt_dtype t, sdt; /* the input type; the softmax's */
    double sc;          /* sqrt(scale) in the input type */
    double *pk, *pv;    /* present key/value, [B, Hkv, L, D] */
    const smelt_tensor *q, *mask, *nonpad;
} attn_eval;

/* Element (b, h, s, e) of Q, K or V seen as 4-D. */
static int64_t view_offset(const smelt_tensor *t, bool rank3, int64_t b, int64_t h, int64_t s,
                           int64_t e, int64_t heads, int64_t head)
{
    if (rank3) return (b * t->dims[1] + s) * t->dims[2] + h * head + e;
    return ((b * heads + h) * t->dims[2] + s) * head + e;
}

/* The present cache: past (when given) followed by the new rows. */
static void fill_present(const attn_eval *e, const smelt_tensor *past, const smelt_tensor *cur,
                         int64_t head, double *dst)
{
    const attn_dims *d = &e->d;
    int64_t i = 0;
    for (int64_t b = 0; b < d->batch; b++)
        for (int64_t h = 0; h < d->kv_heads; h++)
            for (int64_t l = 0; l < d->kv_len; l++)
                for (int64_t x = 0; x < head; x++, i++) {
                    if (l < d->past_len)
                        dst[i] = op_get_f64(past, ((b * d->kv_heads + h) * d->past_len + l) * head + x);
                    else
                        dst[i] = op_get_f64(cur, view_offset(cur, d->rank3, b, h, l - d->past_len,
                                                             x, d->kv_heads, head));
                }
}

/* The bias a mask element adds; positions past its last dim are masked. */
static double mask_value(const smelt_tensor *m, int64_t b, int64_t h, int64_t s, int64_t l)
{
    const int64_t idx[4] = {b, h, s, l};
    int64_t off = 0;
    if (l >= m->dims[m->rank - 1]) return -INFINITY;
    for (int i = 0; i < m->rank; i++) {
        int64_t v = m->dims[i] == 1 ? 0 : idx[4 - m->rank + i];
        off = off * m->dims[i] + v;
    }
    if (m->dtype == SMELT_DT_BOOL) return ((const uint8_t *)m->data)[off] ? 0.0 : -INFINITY;
    return op_get_f64(m, off);
}

/* The keys' offset for causal and window masks: the past length, or with an
 * external cache nonpad_kv_seqlen[b] - q_len. */
static int64_t key_offset(const attn_eval *e, int64_t b)
{
    if (e->d.past_len > 0) return e->d.past_len;
    if (e->nonpad) return ((const int64_t *)e->nonpad->data)[b] - e->d.q_len;
    return 0;
}

static double bias_value(const attn_eval *e, int64_t b, int64_t h, int64_t s, int64_t l)
{
    const op_attention_attrs *a = e->a;
    double bias = e->mask ? mask_value(e->mask, b, h, s, l) : 0.0;
    int64_t diff = s + key_offset(e, b) - l; /* query position - key position */
    if (a->is_causal) bias += diff >= 0 ? 0.0 : -INFINITY;
    if ((a->left_window >= 0 && diff > a->left_window) ||
        (a->right_window >= 0 && -diff > a->right_window))
        bias += -INFINITY;
    if (e->nonpad && l >= ((const int64_t *)e->nonpad->data)[b]) bias += -INFINITY;
    return bias;
}

static double softcap_value(const attn_eval *e, double x)
{
    double c = e->a->softcap;
    if (c <= 0) return x;
    return round_to(e->t, round_to(e->t, tanh(round_to(e->t, x / c))) * c);
}

/* One query row: scores qk, capped and x over the keys, probabilities p. */
typedef struct attn_row {
    double *qk, *capped, *x, *p;
} attn_row;

static void row_scores(const attn_eval *e, int64_t b, int64_t h, int64_t s, attn_row *r)
{
    const attn_dims *d = &e->d;
    int64_t kh = h / (d->q_heads / d->kv_heads);
    for (int64_t l = 0; l < d->kv_len; l++) {
        double acc = 0;
        for (int64_t x = 0; x < d->head; x++) {
            double qv = op_get_f64(e->q, view_offset(e->q, d->rank3, b, h, s, x, d->q_heads, d->head));
            double kv = e->pk[((b * d->kv_heads + kh) * d->kv_len + l) * d->head + x];
            acc += round_to(e->t, qv * e->sc) * round_to(e->t, kv * e->sc);
        }
        r->qk[l] = round_to(e->t, acc);
        r->capped[l] = softcap_value(e, r->qk[l]);
        r->x[l] = round_to(e->t, r->capped[l] + bias_value(e, b, h, s, l));
    }
}

/* Softmax in e->sdt (numpy's max propagates NaN), then the fully-masked guard. */
static void row_softmax(const attn_eval *e, int64_t b, int64_t h, int64_t s, attn_row *r)
{
    int64_t n = e->d.kv_len;
    double max = -INFINITY, bias_max = -INFINITY, sum = 0;
    for (int64_t l = 0; l < n; l++) {
        double x = round_to(e->sdt, r->x[l]), bias = bias_value(e, b, h, s, l);
        max = isnan(x) || isnan(max) ? NAN : fmax(max, x);
        bias_max = isnan(bias) || isnan(bias_max) ? NAN : fmax(bias_max, bias);
    }
    double safe = max == -INFINITY ? 0.0 : max;
    for (int64_t l = 0; l < n; l++) {
        r->p[l] = round_to(e->sdt, exp(round_to(e->sdt, round_to(e->sdt, r->x[l]) - safe)));
        sum += r->p[l];
        if (e->sdt == SMELT_DT_BFLOAT16) sum = round_to(e->sdt, sum); /* see p_sum_dtype */
    }
    sum = round_to(e->sdt, sum);
    if (sum == 0) sum = 1;
    for (int64_t l = 0; l < n; l++)
        r->p[l] = bias_max == -INFINITY ? 0.0 : round_to(e->sdt, r->p[l] / sum);
}

static void store_row(smelt_tensor *t, int64_t off, const double *v, int64_t n, smelt_dtype dt)
{
    for (int64_t l = 0; l < n; l++) op_set_f64(t, off + l, round_to(dt, v[l]));
}

static void attention_row(const attn_eval *e, int64_t b, int64_t h, int64_t s, attn_row *r,
                          const gr_node *node, smelt_tensor *out)
{
    const attn_dims *d = &e->d;
    int64_t kh = h / (d->q_heads / d->kv_heads);
    row_scores(e, b, h, s, r);
    row_softmax(e, b, h, s, r);
    if (node->n_outputs > OUT_QK && node->outputs[OUT_QK]) {
        const double *src[4] = {r->qk, r->capped, r->x, r->p};
        store_row(&out[OUT_QK], ((b * d->q_heads + h) * d->q_len + s) * d->kv_len,
                  src[e->a->qk_mode], d->kv_len, e->t);
    }
    for (int64_t x = 0; x < d->v_head; x++) {
        double acc = 0;
        for (int64_t l = 0; l < d->kv_len; l++)
            acc += round_to(e->t, r->p[l]) *
                   e->pv[((b * d->kv_heads + kh) * d->kv_len + l) * d->v_head + x];
        int64_t off = d->rank3 ? (b * d->q_len + s) * d->q_heads * d->v_head + h * d->v_head + x
                               : ((b * d->q_heads + h) * d->q_len + s) * d->v_head + x;
        op_set_f64(&out[OUT_Y], off, acc);
    }
}

static void store_present(const gr_node *node, int i, smelt_tensor *out, const double *v)
{
    if (node->n_outputs <= i || !node->outputs[i]) return;
    for (int64_t k = 0; k < op_numel(&out[i]); k++) op_set_f64(&out[i], k, v[k]);
}

static smelt_status attention_eval(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    attn_eval e = {.a = node->op_attrs, .q = in[IN_Q], .mask = op_input(node, in, IN_MASK),
                   .nonpad = op_input(node, in, IN_NONPAD)};
    SMELT_TRY(attention_dims(ctx, node, in, &e.d));
    const attn_dims *d = &e.d;
    e.t = in[IN_Q]->dtype;
    e.sdt = e.a->softmax_dt ? e.a->softmax_dt : e.t;
    double scale = e.a->has_scale ? e.a->scale : 1.0 / sqrt((double)d->head);
    e.sc = round_to(e.t, sqrt(scale));
    int64_t nk = d->batch * d->kv_heads * d->kv_len;
    e.pk = smelt_alloc((size_t)(nk * d->head + 1) * sizeof(double));
    e.pv = smelt_alloc((size_t)(nk * d->v_head + 1) * sizeof(double));
    attn_row r = {.qk = smelt_alloc((size_t)(4 * d->kv_len + 4) * sizeof(double))};
    if (!e.pk || !e.pv || !r.qk) {
        smelt_free(e.pk), smelt_free(e.pv), smelt_free(r.qk);
        return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory for the key/value cache");
    }
    r.capped = r.qk + d->kv_len, r.x = r.capped + d->kv_len, r.p = r.x + d->kv_len;
    fill_present(&e, op_input(node, in, IN_PAST_K), in[IN_K], d->head, e.pk);
    fill_present(&e, op_input(node, in, IN_PAST_V), in[IN_V], d->v_head, e.pv);
    store_present(node, OUT_PRESENT_K, out, e.pk);
    store_present(node, OUT_PRESENT_V, out, e.pv);
    for (int64_t b = 0; b < d->batch; b++)
        for (int64_t h = 0; h < d->q_heads; h++)
            for (int64_t s = 0; s < d->q_len; s++) attention_row(&e, b, h, s, &r, node, out);
    smelt_free(e.pk), smelt_free(e.pv), smelt_free(r.qk);
    return SMELT_OK;
}

/* ---- compute definition ------------------------------------------------------------
 * Stages: pk, pv (the present caches), qk_acc (QK^T), x (softcap + bias, in the
 * softmax's type), bias_max (the guard; only when something masks), x_max,
 * p_exp, p_sum, p (probabilities in the input type), y_acc (P V) and y; the
 * outputs present_key, present_value and qk_matmul_output are copies. */

typedef struct attn_te {
    const op_attention_attrs *a;
    attn_dims d;
    const te_tensor *q, *k, *v, *mask, *past_k, *past_v, *nonpad;
    smelt_dtype t, sdt;    /* input type, softmax precision */
    smelt_dtype cdt, sxdt; /* compute types of the scores and of the softmax */
    double sc;
    bool masks; /* some bias can be -inf: the fully-masked guard is needed */
    te_tensor *pk, *pv, *qk_acc, *x, *bias_max, *x_max, *p_exp, *p_sum, *p, *y_acc;
} attn_te;

static ir_expr *rnd(te_graph *g, smelt_dtype dt, ir_expr *e)
{
    if (!e || e->dtype == dt) return e;
    return ir_cast(&g->b, e->dtype, ir_cast(&g->b, dt, e));
}

static ir_expr *fc(te_graph *g, smelt_dtype dt, double v)
{
    return ir_const_float(&g->b, dt, v);
}

static ir_expr *kv_head(te_graph *g, const attn_te *s, ir_expr *h)
{
    int64_t group = s->d.q_heads / s->d.kv_heads;
    return group == 1 ? h : ir_binary(&g->b, IR_FLOORDIV, h, ir_int(&g->b, group));
}

/* Element (b, h, s, e) of a Q/K/V input seen as 4-D. */
static ir_expr *read_view(te_graph *g, const attn_te *s, const te_tensor *t, ir_expr *b,
                          ir_expr *h, ir_expr *r, ir_expr *e, int64_t head)
{
    if (!s->d.rank3) return te_read(g, t, (ir_expr *[]){b, h, r, e});
    ir_expr *col = ir_add(&g->b, ir_mul(&g->b, h, ir_int(&g->b, head)), e);
    return te_read(g, t, (ir_expr *[]){b, r, col});
}

static ir_expr *present_body(te_graph *g, ir_expr *const *idx, void *user, bool key)
{
    const attn_te *s = user;
    const te_tensor *cur = key ? s->k : s->v, *past = key ? s->past_k : s->past_v;
    int64_t head = key ? s->d.head : s->d.v_head, p = s->d.past_len;
    if (!past) return read_view(g, s, cur, idx[0], idx[1], idx[2], idx[3], head);
    ir_expr *row = ir_sub(&g->b, idx[2], ir_int(&g->b, p));
    return ir_select(&g->b, ir_binary(&g->b, IR_LT, idx[2], ir_int(&g->b, p)), te_read(g, past, idx),
                     read_view(g, s, cur, idx[0], idx[1], row, idx[3], head));
}

static ir_expr *present_k_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return present_body(g, idx, user, true);
}

static ir_expr *present_v_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return present_body(g, idx, user, false);
}

/* sum over d of (Q * sqrt(scale)) (K * sqrt(scale)), each product rounded to T. */
static ir_expr *qk_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const attn_te *s = user;
    ir_axis ax = te_reduce_axis(g, "d", s->d.head);
    ir_expr *d = ir_var_ref(&g->b, ax.var), *sc = fc(g, s->cdt, s->sc);
    ir_expr *q = read_view(g, s, s->q, idx[0], idx[1], idx[2], d, s->d.head);
    ir_expr *k = te_read(g, s->pk, (ir_expr *[]){idx[0], kv_head(g, s, idx[1]), idx[3], d});
    q = rnd(g, s->t, ir_mul(&g->b, ir_cast(&g->b, s->cdt, q), sc));
    k = rnd(g, s->t, ir_mul(&g->b, ir_cast(&g->b, s->cdt, k), sc));
    return te_reduce(g, IR_REDUCE_SUM, ir_mul(&g->b, q, k), 1, &ax);
}

static ir_expr *neg_inf_unless(te_graph *g, const attn_te *s, ir_expr *allowed)
{
    return ir_select(&g->b, allowed, fc(g, s->cdt, 0.0), fc(g, s->cdt, -INFINITY));
}

static ir_expr *mask_bias(te_graph *g, const attn_te *s, ir_expr *const *idx)
{
    const te_tensor *m = s->mask;
    int r = m->n_axes;
    int64_t len = m->buf->shape[r - 1];
    ir_expr *mi[4];
    for (int i = 0; i < r; i++)
        mi[i] = m->buf->shape[i] == 1 ? ir_int(&g->b, 0) : idx[4 - r + i];
    ir_expr *v = te_read(g, m, mi);
    v = m->buf->dtype == SMELT_DT_BOOL ? neg_inf_unless(g, s, v) : ir_cast(&g->b, s->cdt, v);
    if (len >= s->d.kv_len) return v;
    return ir_select(&g->b, ir_binary(&g->b, IR_LT, idx[3], ir_int(&g->b, len)), v,
                     fc(g, s->cdt, -INFINITY));
}

/* query position - key position, with the cache offset (see key_offset) */
static ir_expr *position_diff(te_graph *g, const attn_te *s, ir_expr *const *idx)
{
    ir_expr *q = idx[2];
    if (s->d.past_len > 0) q = ir_add(&g->b, q, ir_int(&g->b, s->d.past_len));
    else if (s->nonpad)
        q = ir_add(&g->b, q, ir_sub(&g->b, te_read(g, s->nonpad, &idx[0]),
                                    ir_int(&g->b, s->d.q_len)));
    return ir_sub(&g->b, q, idx[3]);
}

/* The additive bias at (b, h, s, l) in the scores' compute type. */
static ir_expr *bias_expr(te_graph *g, const attn_te *s, ir_expr *const *idx)
{
    const op_attention_attrs *a = s->a;
    ir_builder *b = &g->b;
    ir_expr *bias = s->mask ? mask_bias(g, s, idx) : fc(g, s->cdt, 0.0);
    ir_expr *diff = position_diff(g, s, idx), *zero = ir_int(b, 0);
    if (a->is_causal) bias = ir_add(b, bias, neg_inf_unless(g, s, ir_binary(b, IR_GE, diff, zero)));
    if (a->left_window >= 0)
        bias = ir_add(b, bias, neg_inf_unless(g, s, ir_binary(b, IR_LE, diff,
                                                              ir_int(b, a->left_window))));
    if (a->right_window >= 0)
        bias = ir_add(b, bias, neg_inf_unless(g, s, ir_binary(b, IR_LE, ir_sub(b, zero, diff),
                                                              ir_int(b, a->right_window))));
    if (s->nonpad)
        bias = ir_add(b, bias, neg_inf_unless(g, s, ir_binary(b, IR_LT, idx[3],
                                                              te_read(g, s->nonpad, &idx[0]))));
    return bias;
}

static ir_expr *qk_rounded(te_graph *g, const attn_te *s, ir_expr *const *idx)
{
    return rnd(g, s->t, te_read(g, s->qk_acc, idx));
}

static ir_expr *capped_expr(te_graph *g, const attn_te *s, ir_expr *const *idx)
{
    ir_expr *x = qk_rounded(g, s, idx);
    double c = s->a->softcap;
    if (c <= 0) return x;
    ir_expr *t = rnd(g, s->t, ir_binary(&g->b, IR_DIV, x, fc(g, s->cdt, c)));
    t = rnd(g, s->t, ir_call(&g->b, IR_CALL_TANH, s->cdt, 1, &t));
    return rnd(g, s->t, ir_mul(&g->b, t, fc(g, s->cdt, c)));
}

/* capped + bias in T (qk_matmul_output mode 2) */
static ir_expr *biased_expr(te_graph *g, const attn_te *s, ir_expr *const *idx)
{
    return rnd(g, s->t, ir_add(&g->b, capped_expr(g, s, idx), bias_expr(g, s, idx)));
}

static ir_expr *x_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const attn_te *s = user;
    return rnd(g, s->sdt, ir_cast(&g->b, s->sxdt, biased_expr(g, s, idx)));
}

static ir_expr *row_max_of(te_graph *g, const attn_te *s, ir_expr *const *idx, bool bias)
{
    ir_axis ax = te_reduce_axis(g, "l", s->d.kv_len);
    ir_expr *full[4] = {idx[0], idx[1], idx[2], ir_var_ref(&g->b, ax.var)};
    ir_expr *v = bias ? ir_cast(&g->b, s->sxdt, bias_expr(g, s, full)) : te_read(g, s->x, full);
    return te_reduce(g, IR_REDUCE_MAX, v, 1, &ax);
}

static ir_expr *bias_max_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return row_max_of(g, user, idx, true);
}

static ir_expr *x_max_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return row_max_of(g, user, idx, false);
}

static ir_expr *row_read(te_graph *g, const te_tensor *t, ir_expr *const *idx)
{
    return te_read(g, t, (ir_expr *[]){idx[0], idx[1], idx[2], ir_int(&g->b, 0)});
}

/* exp(x - max) with a fully masked row's max (-inf) taken as 0 */
static ir_expr *p_exp_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const attn_te *s = user;
    ir_expr *m = row_read(g, s->x_max, idx);
    ir_expr *safe = ir_select(&g->b, ir_binary(&g->b, IR_EQ, m, fc(g, s->sxdt, -INFINITY)),
                              fc(g, s->sxdt, 0.0), m);
    ir_expr *d = rnd(g, s->sdt, ir_sub(&g->b, te_read(g, s->x, idx), safe));
    return rnd(g, s->sdt, ir_call(&g->b, IR_CALL_EXP, s->sxdt, 1, &d));
}

/* numpy sums float16 in float32 and rounds once, but sums bfloat16 (an
 * ml_dtypes type) one rounded addition after the other, in order: the
 * bfloat16 sum is a bfloat16 reduction (a stage of that type accumulates
 * in it, and the default schedule does not reorder it). */
static smelt_dtype p_sum_dtype(const attn_te *s)
{
    return s->sdt == SMELT_DT_BFLOAT16 ? SMELT_DT_BFLOAT16 : s->sxdt;
}

static ir_expr *p_sum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const attn_te *s = user;
    ir_axis ax = te_reduce_axis(g, "l", s->d.kv_len);
    ir_expr *full[4] = {idx[0], idx[1], idx[2], ir_var_ref(&g->b, ax.var)};
    ir_expr *e = ir_cast(&g->b, p_sum_dtype(s), te_read(g, s->p_exp, full));
    return te_reduce(g, IR_REDUCE_SUM, e, 1, &ax);
}

static ir_expr *p_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const attn_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *sum = rnd(g, s->sdt, ir_cast(b, s->sxdt, row_read(g, s->p_sum, idx)));
    sum = ir_select(b, ir_binary(b, IR_EQ, sum, fc(g, s->sxdt, 0.0)), fc(g, s->sxdt, 1.0), sum);
    ir_expr *p = rnd(g, s->sdt, ir_binary(b, IR_DIV, te_read(g, s->p_exp, idx), sum));
    if (!s->bias_max) return p;
    ir_expr *all_masked = ir_binary(b, IR_EQ, row_read(g, s->bias_max, idx),
                                    fc(g, s->sxdt, -INFINITY));
    return ir_select(b, all_masked, fc(g, s->sxdt, 0.0), p);
}

static smelt_dtype y_acc_dtype(const attn_te *s)
{
    smelt_dtype tv = s->v->buf->dtype;
    return s->t == SMELT_DT_FLOAT64 || tv == SMELT_DT_FLOAT64 ? SMELT_DT_FLOAT64 : SMELT_DT_FLOAT32;
}

static ir_expr *y_acc_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const attn_te *s = user;
    smelt_dtype acc = y_acc_dtype(s);
    ir_axis ax = te_reduce_axis(g, "l", s->d.kv_len);
    ir_expr *l = ir_var_ref(&g->b, ax.var);
    ir_expr *p = te_read(g, s->p, (ir_expr *[]){idx[0], idx[1], idx[2], l});
    ir_expr *v = te_read(g, s->pv, (ir_expr *[]){idx[0], kv_head(g, s, idx[1]), l, idx[3]});
    ir_expr *prod = ir_mul(&g->b, ir_cast(&g->b, acc, p), ir_cast(&g->b, acc, v));
    return te_reduce(g, IR_REDUCE_SUM, prod, 1, &ax);
}

/* Y: y_acc itself (4-D), or y_acc[b, c / Dv, s, c % Dv] at (b, s, c) (3-D). */
static ir_expr *y_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const attn_te *s = user;
    if (!s->d.rank3) return te_read(g, s->y_acc, idx);
    ir_expr *dv = ir_int(&g->b, s->d.v_head);
    ir_expr *h = ir_binary(&g->b, IR_FLOORDIV, idx[2], dv);
    ir_expr *e = ir_binary(&g->b, IR_FLOORMOD, idx[2], dv);
    return te_read(g, s->y_acc, (ir_expr *[]){idx[0], h, idx[1], e});
}

static ir_expr *copy_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return te_read(g, user, idx);
}

static ir_expr *qk_out_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const attn_te *s = user;
    switch (s->a->qk_mode) {
    case 0: return qk_rounded(g, s, idx);
    case 1: return capped_expr(g, s, idx);
    case 2: return biased_expr(g, s, idx);
    default: return te_read(g, s->p, idx);
    }
}

/* The static types of the node's first n inputs (in[i] NULL when omitted),
 * for the shape checks infer does. */
static void input_types(const op_compute_args *a, int n, smelt_tensor *types,
                        const smelt_tensor **in)
{
    memset(types, 0, sizeof *types * (size_t)n);
    for (int i = 0; i < n; i++) {
        in[i] = NULL;
        if (i >= a->node->n_inputs || !a->in[i]) continue;
        types[i].dtype = a->in[i]->buf->dtype;
        types[i].rank = a->in[i]->n_axes;
        memcpy(types[i].dims, a->in[i]->buf->shape, sizeof(int64_t) * (size_t)types[i].rank);
        in[i] = &types[i];
    }
}

static bool output_wanted(const gr_node *n, int i)
{
    return i < n->n_outputs && n->outputs[i];
}

static te_tensor *stage(op_compute_args *a, const char *name, smelt_dtype dt, const int64_t *shape,
                        te_body_fn body, attn_te *s, const char *tag)
{
    return te_compute(a->te, name, dt, 4, shape, body, s, tag);
}

static smelt_status attention_stages(op_compute_args *a, attn_te *s)
{
    const attn_dims *d = &s->d;
    int64_t pk_shape[4] = {d->batch, d->kv_heads, d->kv_len, d->head};
    int64_t pv_shape[4] = {d->batch, d->kv_heads, d->kv_len, d->v_head};
    int64_t sc_shape[4] = {d->batch, d->q_heads, d->q_len, d->kv_len};
    int64_t row_shape[4] = {d->batch, d->q_heads, d->q_len, 1};
    int64_t y_shape[4] = {d->batch, d->q_heads, d->q_len, d->v_head};
    if (!(s->pk = stage(a, "pk", s->t, pk_shape, present_k_body, s, "injective")) ||
        !(s->pv = stage(a, "pv", s->v->buf->dtype, pv_shape, present_v_body, s, "injective")) ||
        !(s->qk_acc = stage(a, "qk_acc", s->cdt, sc_shape, qk_body, s, "reduce")) ||
        !(s->x = stage(a, "x", s->sxdt, sc_shape, x_body, s, "injective")) ||
        (s->masks && !(s->bias_max = stage(a, "bias_max", s->sxdt, row_shape, bias_max_body, s,
                                           "reduce"))) ||
        !(s->x_max = stage(a, "x_max", s->sxdt, row_shape, x_max_body, s, "reduce")) ||
        !(s->p_exp = stage(a, "p_exp", s->sxdt, sc_shape, p_exp_body, s, "injective")) ||
        !(s->p_sum = stage(a, "p_sum", p_sum_dtype(s), row_shape, p_sum_body, s, "reduce")) ||
        !(s->p = stage(a, "p", s->t, sc_shape, p_body, s, "injective")) ||
        !(s->y_acc = stage(a, "y_acc", y_acc_dtype(s), y_shape, y_acc_body, s, "reduce")))
        return smelt_ctx_status(a->ctx);
    return SMELT_OK;
}

static smelt_status attention_outputs(op_compute_args *a, attn_te *s)
{
    const smelt_tensor *ot = a->out_type;
    const gr_node *n = a->node;
    a->out[OUT_Y] = te_compute(a->te, "y", ot[OUT_Y].dtype, ot[OUT_Y].rank, ot[OUT_Y].dims, y_body,
                               s, "injective");
    if (!a->out[OUT_Y]) return smelt_ctx_status(a->ctx);
    static const char *const names[] = {"y", "present_key", "present_value", "qk_matmul_output"};
    for (int i = OUT_PRESENT_K; i <= OUT_QK; i++) {
        if (!output_wanted(n, i)) continue;
        te_tensor *src = i == OUT_PRESENT_K ? s->pk : s->pv;
        a->out[i] = i == OUT_QK ? te_compute(a->te, names[i], ot[i].dtype, 4, ot[i].dims,
                                             qk_out_body, s, "injective")
                                : te_compute(a->te, names[i], ot[i].dtype, 4, ot[i].dims,
                                             copy_body, src, "injective");
        if (!a->out[i]) return smelt_ctx_status(a->ctx);
    }
    return SMELT_OK;
}

static smelt_status attention_compute(op_compute_args *a)
{
    const gr_node *n = a->node;
    attn_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, n, SMELT_ERR_NOMEM, "out of memory");
    memset(s, 0, sizeof *s);
    s->a = n->op_attrs;
    smelt_tensor types[7];
    const smelt_tensor *in[7];
    input_types(a, 7, types, in);
    SMELT_TRY(attention_dims(a->ctx, n, in, &s->d));
    s->q = a->in[IN_Q], s->k = a->in[IN_K], s->v = a->in[IN_V];
    s->mask = n->n_inputs > IN_MASK ? a->in[IN_MASK] : NULL;
    s->past_k = n->n_inputs > IN_PAST_K ? a->in[IN_PAST_K] : NULL;
    s->past_v = n->n_inputs > IN_PAST_V ? a->in[IN_PAST_V] : NULL;
    s->nonpad = n->n_inputs > IN_NONPAD ? a->in[IN_NONPAD] : NULL;
    s->t = s->q->buf->dtype;
    s->sdt = s->a->softmax_dt ? s->a->softmax_dt : s->t;
    s->cdt = s->t == SMELT_DT_FLOAT64 ? SMELT_DT_FLOAT64 : SMELT_DT_FLOAT32;
    s->sxdt = s->t == SMELT_DT_FLOAT64 || s->sdt == SMELT_DT_FLOAT64 ? SMELT_DT_FLOAT64
                                                                      : SMELT_DT_FLOAT32;
    double scale = s->a->has_scale ? s->a->scale : 1.0 / sqrt((double)s->d.head);
    s->sc = round_to(s->t, sqrt(scale));
    s->masks = s->mask || s->nonpad || s->a->is_causal || s->a->left_window >= 0 ||
               s->a->right_window >= 0;
    if (s->d.kv_len == 0 || s->d.head == 0)
        return op_errf(a->ctx, n, SMELT_ERR_UNSUPPORTED,
                       "an empty key sequence or head is not compiled");
    SMELT_TRY(attention_stages(a, s));
    return attention_outputs(a, s);
}

const op_def op_def_ATTENTION = {
    .compute = attention_compute,
    .import = attention_import,
    .infer = attention_infer,
    .eval = attention_eval,
    .min_inputs = 3,
    .max_inputs = 7,
    .min_outputs = 1,
    .max_outputs = 4,
};

/* ---- RotaryEmbedding -----------------------------------------------------------------
 * Y has X's shape; X is seen as (b, h, s, e) (4-D: [B, H, S, D]; 3-D:
 * [B, S, H * D] with num_heads heads).  The first R = rotary_embedding_dim
 * (default D) elements of each head rotate in pairs (e, e + R/2), or (2j,
 * 2j + 1) when interleaved, by the angle whose cos and sin are cache[pos, j]
 * (pos = position_ids[b, s]) or cache[b, s, j] without position_ids; the
 * rest is copied.  Products and sums round to X's type as numpy's do. */

enum { ROPE_X, ROPE_COS, ROPE_SIN, ROPE_POS };

typedef struct op_rope_attrs {
    bool interleaved;
    int64_t num_heads, rotary_dim; /* 0: not given */
} op_rope_attrs;

OP_ATTRS(ROTARY_EMBEDDING) = {
    {"interleaved", 0, 0}, {"num_heads", 0, 0}, {"rotary_embedding_dim", 0, 0}, {NULL, 0, 0}};

static smelt_status rope_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_rope_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(op_attr_bool(ctx, node, "interleaved", false, &a->interleaved));
    SMELT_TRY(op_attr_int(ctx, node, "num_heads", 0, &a->num_heads));
    SMELT_TRY(op_attr_int(ctx, node, "rotary_embedding_dim", 0, &a->rotary_dim));
    if (a->num_heads < 0 || a->rotary_dim < 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute '%s' is %lld; expected >= 0",
                       a->num_heads < 0 ? "num_heads" : "rotary_embedding_dim",
                       (long long)(a->num_heads < 0 ? a->num_heads : a->rotary_dim));
    return SMELT_OK;
}

typedef struct rope_dims {
    int64_t batch, heads, seq, head, rot, max_pos;
    bool rank3, has_pos;
    smelt_dtype dtype; /* X's */
} rope_dims;

static const smelt_dtype k_rope_types[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT16, SMELT_DT_BFLOAT16,
                                           SMELT_DT_UNDEFINED};

static smelt_status rope_cache_dims(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *c,
                                    const rope_dims *d, const char *what)
{
    char buf[96];
    if (c->dtype != d->dtype)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "%s has dtype %s, expected X's", what,
                       smelt_dtype_name(c->dtype));
    if (c->rank != (d->has_pos ? 2 : 3))
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "%s has rank %d, expected %d (%s position_ids)",
                       what, c->rank, d->has_pos ? 2 : 3, d->has_pos ? "with" : "without");
    snprintf(buf, sizeof buf, "the last dim of %s", what);
    SMELT_TRY(check_dim(ctx, n, c->dims[c->rank - 1], d->rot >= 0 ? d->rot / 2 : -1, buf));
    if (d->has_pos) return SMELT_OK;
    snprintf(buf, sizeof buf, "dim 0 of %s", what);
    SMELT_TRY(check_dim(ctx, n, c->dims[0], d->batch, buf));
    snprintf(buf, sizeof buf, "dim 1 of %s", what);
    return check_dim(ctx, n, c->dims[1], d->seq, buf);
}

static smelt_status rope_dims_of(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                 rope_dims *d)
{
    const op_rope_attrs *a = n->op_attrs;
    const smelt_tensor *x = in[ROPE_X], *pos = op_input(n, in, ROPE_POS);
    SMELT_TRY(op_check_dtype(ctx, n, x, "input 'X'", k_rope_types));
    memset(d, 0, sizeof *d);
    if (x->rank != 3 && x->rank != 4)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "X has rank %d, expected 3 or 4", x->rank);
    d->rank3 = x->rank == 3;
    d->batch = x->dims[0];
    d->dtype = x->dtype;
    if (d->rank3) {
        if (!a->num_heads)
            return op_errf(ctx, n, SMELT_ERR_ATTR, "3-D input needs the attribute 'num_heads'");
        d->heads = a->num_heads, d->seq = x->dims[1];
        SMELT_TRY(split_hidden(ctx, n, x, ROPE_X, d->heads, &d->head));
    } else {
        d->heads = x->dims[1], d->seq = x->dims[2], d->head = x->dims[3];
        if (a->num_heads) SMELT_TRY(check_dim(ctx, n, d->heads, a->num_heads, "X's head count"));
    }
    d->rot = a->rotary_dim ? a->rotary_dim : d->head;
    if (d->rot >= 0 && (d->rot % 2 || (d->head >= 0 && d->rot > d->head)))
        return op_errf(ctx, n, SMELT_ERR_SHAPE,
                       "the rotary dimension %lld must be even and at most the head size %lld",
                       (long long)d->rot, (long long)d->head);
    d->has_pos = pos != NULL;
    if (pos) {
        if (pos->dtype != SMELT_DT_INT64 || pos->rank != 2)
            return op_errf(ctx, n, SMELT_ERR_SHAPE, "position_ids must be a 2-D int64 tensor");
        SMELT_TRY(check_dim(ctx, n, pos->dims[0], d->batch, "dim 0 of position_ids"));
        SMELT_TRY(check_dim(ctx, n, pos->dims[1], d->seq, "dim 1 of position_ids"));
        SMELT_TRY(check_dim(ctx, n, in[ROPE_SIN]->dims[0], in[ROPE_COS]->dims[0],
                            "dim 0 of sin_cache"));
        d->max_pos = in[ROPE_COS]->dims[0];
    }
    SMELT_TRY(rope_cache_dims(ctx, n, in[ROPE_COS], d, "cos_cache"));
    return rope_cache_dims(ctx, n, in[ROPE_SIN], d, "sin_cache");
}

static smelt_status rope_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    rope_dims d;
    SMELT_TRY(rope_dims_of(ctx, node, in, &d));
    op_copy_shape(&out[0], in[ROPE_X]);
    return SMELT_OK;
}

/* The rotation partner of element e of a head: pair index j, whether e is
 * the first of its pair, and the partner's element. */
typedef struct rope_pair {
    int64_t j, other;
    bool first;
} rope_pair;

static rope_pair rope_pair_of(const op_rope_attrs *a, int64_t rot, int64_t e)
{
    int64_t half = rot / 2;
    if (a->interleaved) return (rope_pair){e / 2, e % 2 ? e - 1 : e + 1, e % 2 == 0};
    return e < half ? (rope_pair){e, e + half, true} : (rope_pair){e - half, e - half, false};
}

static int64_t rope_x_offset(const rope_dims *d, int64_t b, int64_t h, int64_t s, int64_t e)
{
    if (d->rank3) return (b * d->seq + s) * d->heads * d->head + h * d->head + e;
    return ((b * d->heads + h) * d->seq + s) * d->head + e;
}

static smelt_status rope_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const op_rope_attrs *a = node->op_attrs;
    rope_dims d;
    SMELT_TRY(rope_dims_of(ctx, node, in, &d));
    const smelt_tensor *x = in[ROPE_X], *pos = op_input(node, in, ROPE_POS);
    smelt_dtype t = x->dtype;
    int64_t half = d.rot / 2;
    for (int64_t b = 0; b < d.batch; b++)
        for (int64_t s = 0; s < d.seq; s++) {
            int64_t row = b * d.seq + s;
            if (pos) {
                int64_t p = op_get_i64(pos, row);
                if (p < 0 || p >= d.max_pos)
                    return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                                   "index %lld at position %lld is out of range for axis 0 of "
                                   "size %lld",
                                   (long long)p, (long long)row, (long long)d.max_pos);
                row = p;
            }
            for (int64_t h = 0; h < d.heads; h++)
                for (int64_t e = 0; e < d.head; e++) {
                    int64_t off = rope_x_offset(&d, b, h, s, e);
                    double v = op_get_f64(x, off);
                    if (e < d.rot) {
                        rope_pair p = rope_pair_of(a, d.rot, e);
                        double w = op_get_f64(x, rope_x_offset(&d, b, h, s, p.other));
                        double c = op_get_f64(in[ROPE_COS], row * half + p.j);
                        double sn = op_get_f64(in[ROPE_SIN], row * half + p.j);
                        v = p.first ? round_to(t, c * v) - round_to(t, sn * w)
                                    : round_to(t, sn * w) + round_to(t, c * v);
                    }
                    op_set_f64(&out[0], off, v);
                }
        }
    return SMELT_OK;
}

typedef struct rope_te {
    const op_rope_attrs *a;
    rope_dims d;
    const te_tensor *x, *cos, *sin, *pos;
    smelt_dtype t, cdt;
} rope_te;

/* X at (b, h, s, e) */
static ir_expr *rope_read_x(te_graph *g, const rope_te *r, ir_expr *b, ir_expr *h, ir_expr *s,
                            ir_expr *e)
{
    if (!r->d.rank3) return te_read(g, r->x, (ir_expr *[]){b, h, s, e});
    ir_expr *col = ir_add(&g->b, ir_mul(&g->b, h, ir_int(&g->b, r->d.head)), e);
    return te_read(g, r->x, (ir_expr *[]){b, s, col});
}

/* cache[pos[b, s], j] (pos clamped: the check stage reports bad ones) or cache[b, s, j] */
static ir_expr *rope_read_cache(te_graph *g, const rope_te *r, const te_tensor *c, ir_expr *b,
                                ir_expr *s, ir_expr *j)
{
    if (!r->pos) return ir_cast(&g->b, r->cdt, te_read(g, c, (ir_expr *[]){b, s, j}));
    ir_expr *p = te_read(g, r->pos, (ir_expr *[]){b, s});
    p = ir_binary(&g->b, IR_MIN, ir_binary(&g->b, IR_MAX, p, ir_int(&g->b, 0)),
                  ir_int(&g->b, r->d.max_pos - 1));
    return ir_cast(&g->b, r->cdt, te_read(g, c, (ir_expr *[]){p, j}));
}

/* Element e's value: the copy, or its rotation written with select over
 * the pair's position (bodies see e as an expression). */
static ir_expr *rope_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const rope_te *r = user;
    ir_builder *bd = &g->b;
    ir_expr *b = idx[0], *h, *s, *e;
    if (r->d.rank3) {
        ir_expr *hd = ir_int(bd, r->d.head);
        s = idx[1], h = ir_binary(bd, IR_FLOORDIV, idx[2], hd), e = ir_binary(bd, IR_FLOORMOD, idx[2], hd);
    } else {
        h = idx[1], s = idx[2], e = idx[3];
    }
    int64_t half = r->d.rot / 2;
    ir_expr *first, *j, *other;
    if (r->a->interleaved) {
        ir_expr *two = ir_int(bd, 2), *odd = ir_binary(bd, IR_FLOORMOD, e, two);
        first = ir_binary(bd, IR_EQ, odd, ir_int(bd, 0));
        j = ir_binary(bd, IR_FLOORDIV, e, two);
        other = ir_select(bd, first, ir_add(bd, e, ir_int(bd, 1)), ir_sub(bd, e, ir_int(bd, 1)));
    } else {
        first = ir_binary(bd, IR_LT, e, ir_int(bd, half));
        j = ir_select(bd, first, e, ir_sub(bd, e, ir_int(bd, half)));
        other = ir_select(bd, first, ir_add(bd, e, ir_int(bd, half)), j);
    }
    ir_expr *in_rot = ir_binary(bd, IR_LT, e, ir_int(bd, r->d.rot));
    /* outside the rotated part j and the partner are clamped into it, unused */
    j = ir_binary(bd, IR_MIN, j, ir_int(bd, half - 1));
    other = ir_binary(bd, IR_MIN, other, ir_int(bd, r->d.rot - 1));
    ir_expr *x = ir_cast(bd, r->cdt, rope_read_x(g, r, b, h, s, e));
    ir_expr *w = ir_cast(bd, r->cdt, rope_read_x(g, r, b, h, s, other));
    ir_expr *c = rope_read_cache(g, r, r->cos, b, s, j), *sn = rope_read_cache(g, r, r->sin, b, s, j);
    ir_expr *cx = rnd(g, r->t, ir_mul(bd, c, x)), *sw = rnd(g, r->t, ir_mul(bd, sn, w));
    ir_expr *rot = ir_select(bd, first, ir_sub(bd, cx, sw), ir_add(bd, sw, cx));
    return ir_select(bd, in_rot, rot, x);
}

static ir_expr *rope_check_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const rope_te *r = user;
    return te_read(g, r->pos, idx);
}

static smelt_status rope_position_check(op_compute_args *a, rope_te *r)
{
    ir_builder *b = &a->te->b;
    ir_var *v = ir_var_new(b, "v", SMELT_DT_INT64);
    ir_expr *vr = ir_var_ref(b, v);
    ir_expr *ok = ir_binary(b, IR_AND, ir_binary(b, IR_GE, vr, ir_int(b, 0)),
                            ir_binary(b, IR_LT, vr, ir_int(b, r->d.max_pos)));
    char msg[160];
    snprintf(msg, sizeof msg, "index {value} at position {position} is out of range for axis 0 of "
             "size %lld", (long long)r->d.max_pos);
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type, .message = msg};
    te_tensor *t = te_check_compute(a->te, "check", 2, r->pos->buf->shape, rope_check_body, r, v,
                                    ok, &site);
    return t ? SMELT_OK : smelt_ctx_status(a->ctx);
}

static smelt_status rope_compute(op_compute_args *a)
{
    const gr_node *n = a->node;
    rope_te *r = smelt_arena_alloc(&a->te->arena, sizeof *r);
    if (!r) return op_errf(a->ctx, n, SMELT_ERR_NOMEM, "out of memory");
    memset(r, 0, sizeof *r);
    smelt_tensor types[4];
    const smelt_tensor *in[4];
    input_types(a, 4, types, in);
    r->a = n->op_attrs;
    SMELT_TRY(rope_dims_of(a->ctx, n, in, &r->d));
    r->x = a->in[ROPE_X], r->cos = a->in[ROPE_COS], r->sin = a->in[ROPE_SIN];
    r->pos = n->n_inputs > ROPE_POS ? a->in[ROPE_POS] : NULL;
    r->t = r->x->buf->dtype;
    r->cdt = SMELT_DT_FLOAT32;
    if (r->d.rot == 0) {
        a->out[0] = te_compute(a->te, "y", r->t, r->x->n_axes, r->x->buf->shape, copy_body,
                               (void *)r->x, "injective");
        return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
    }
    if (r->pos && r->d.max_pos == 0)
        return op_errf(a->ctx, n, SMELT_ERR_SHAPE, "the caches hold no positions");
    if (r->pos) SMELT_TRY(rope_position_check(a, r));
    a->out[0] = te_compute(a->te, "y", r->t, r->x->n_axes, r->x->buf->shape, rope_body, r,
                           "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_ROTARY_EMBEDDING = {
    .compute = rope_compute,
    .import = rope_import,
    .infer = rope_infer,
    .eval = rope_eval,
    .min_inputs = 3,
    .max_inputs = 4,
    .min_outputs = 1,
    .max_outputs = 1,
};
