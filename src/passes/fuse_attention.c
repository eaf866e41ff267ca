/* Scaled dot-product attention recognised as one FusedAttention node
 * (ops/fused_attention.c), in the forms torch.onnx exports (opsets 13-17):
 *
 *   s = MatMul(Q4, KT4)                      Q4 [B,H,Sq,D], KT4 [B,H,D,Skv]
 *   s = s * c | c * s | s / c                optional; Q4 and KT4 may each be
 *                                            Mul(x, c) too (SDPA's sqrt-scales)
 *   s = s + mask | mask + s                  float32, broadcast to [B,H,Sq,Skv]
 *     | Where(m, fill, s) | Where(m, s, fill)  bool m, fill a scalar constant
 *   p = Softmax(s, axis = -1)
 *   y4 = MatMul(p, V4)                       V4 [B,H,Skv,Dv]
 *
 * The head split Transpose(Reshape(x3, [B,S,H,D]), perm 0,2,1,3) of Q4 and
 * V4, the split-and-transpose Transpose(Reshape(k3), perm 0,2,3,1) of KT4 (or
 * Transpose(K4, perm 0,1,3,2)), and the merge Reshape(Transpose(y4, perm
 * 0,2,1,3), [B,Sq,H*Dv]) after it are absorbed: the node reads the 3-D
 * projections in place and writes the merged output (layout codes in the
 * op's file).  A constant bool mask that keeps exactly j <= i with a fill of
 * -inf (or below -1e30, where exp gives 0 in float32) becomes causal = 1.
 *
 * The ONNX Attention op (opset 23+) becomes FusedAttention too when it has
 * nothing FusedAttention lacks: float32 Q, K, V (3-D with q_num_heads =
 * kv_num_heads, or 4-D with equal head counts), an optional float (added)
 * or bool (true keeps) mask whose last dim is the key count, is_causal,
 * scale; no caches, nonpad_kv_seqlen, softcap, window, other softmax
 * precision or extra outputs.  Its fully-masked-row guard (zeros) is the
 * node's masked_zero.
 *
 * Refusals leave the graph as it is: anything but float32, dims not static,
 * a batch or head dim broadcast by a MatMul, an intermediate (scores, scaled,
 * masked, probabilities) read elsewhere or a graph output, Softmax over
 * another axis, a scale or fill that is not one constant value, head sizes
 * above 256.
 */
#include <math.h>
#include <string.h>

#include "ops/binary.h"
#include "ops/norm.h"
#include "ops/op.h"
#include "ops/shape.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

#define FA_HEAD_MAX 256

typedef struct fa_match {
    gr_value *q, *k, *v, *mask;
    int64_t layout[4];
    int64_t heads, mask_mode;
    double scale, fill;
    bool causal, masked_zero;
    gr_value *y;   /* the value the fused node takes over */
    gr_node *last; /* its producer, which goes */
} fa_match;

typedef struct fa_state {
    smelt_ctx *ctx;
    gr_graph *g;
    int *uses;
    int n_uses;
    int fused;
} fa_state;

/* ---- matching helpers ---- */

static bool only_use(const fa_state *s, const gr_value *v)
{
    return v && !v->is_output && v->id < s->n_uses && s->uses[v->id] == 1;
}

static bool static_f32(const gr_value *v, int rank)
{
    if (!v || v->dtype != SMELT_DT_FLOAT32 || v->rank != rank) return false;
    for (int i = 0; i < rank; i++)
        if (v->dims[i] < 1) return false;
    return true;
}

/* The node producing v when it is a plain binary op of kind k. */
static gr_node *binary_of(const gr_value *v, op_kind k)
{
    gr_node *n = pu_producer(v, k);
    const op_binary_attrs *a = n ? n->op_attrs : NULL;
    if (!n || n->n_inputs != 2 || !n->inputs[0] || !n->inputs[1] || (a && a->has_legacy_axis))
        return NULL;
    return n;
}

static bool scalar_f32(const gr_value *v, double *x)
{
    return v && v->dtype == SMELT_DT_FLOAT32 && pu_const_scalar(v, x) && isfinite(*x);
}

/* A Where's fill: one float32 constant, finite or -inf. */
static bool fill_value(const gr_value *v, double *x)
{
    return v && v->dtype == SMELT_DT_FLOAT32 && pu_const_scalar(v, x) &&
           (isfinite(*x) || *x == -INFINITY);
}

/* A Transpose producing v with exactly this 4-D permutation. */
static gr_node *transpose_of(const gr_value *v, int64_t p0, int64_t p1, int64_t p2, int64_t p3)
{
    gr_node *n = pu_producer(v, OP_TRANSPOSE);
    const op_transpose_attrs *a = n ? n->op_attrs : NULL;
    if (!a || a->n_perm != 4) return NULL;
    const int64_t want[4] = {p0, p1, p2, p3};
    return memcmp(a->perm, want, sizeof want) ? NULL : n;
}

/* x3 [B, S, H*D] when r = Reshape(x3) is [B, S, H, D]: the head split. */
static gr_value *split_source(const gr_value *r)
{
    gr_node *n = pu_producer(r, OP_RESHAPE);
    gr_value *x = n ? n->inputs[0] : NULL;
    if (!static_f32(r, 4) || !static_f32(x, 3)) return NULL;
    if (x->dims[0] != r->dims[0] || x->dims[1] != r->dims[1] ||
        x->dims[2] != r->dims[2] * r->dims[3])
        return NULL;
    return x;
}

/* Q4 or V4 [B,H,S,D]: the 3-D source of its head split, else itself. */
static gr_value *operand_bhsd(gr_value *x4, int64_t *layout)
{
    gr_node *t = transpose_of(x4, 0, 2, 1, 3);
    gr_value *x3 = t ? split_source(t->inputs[0]) : NULL;
    *layout = x3 ? 1 : 0;
    return x3 ? x3 : x4;
}

/* KT4 [B,H,D,Skv]: k3 [B,Skv,H*D], K4 [B,H,Skv,D] (either the source of a
 * perm 0,1,3,2 transpose), else KT4 read transposed. */
static gr_value *operand_key(gr_value *kt4, int64_t *layout)
{
    gr_node *t = transpose_of(kt4, 0, 2, 3, 1);
    gr_value *k3 = t ? split_source(t->inputs[0]) : NULL;
    if (k3) {
        *layout = 1;
        return k3;
    }
    t = transpose_of(kt4, 0, 1, 3, 2);
    if (t && static_f32(t->inputs[0], 4)) return operand_bhsd(t->inputs[0], layout);
    *layout = 2;
    return kt4;
}

/* ---- the chain from the Softmax back to QK^T ---- */

/* s * c, c * s or s / c with c one float32 constant: *scale times c or 1/c. */
static gr_value *strip_scale(const fa_state *s, gr_value *x, double *scale)
{
    double c;
    gr_node *n = binary_of(x, OP_MUL);
    if (n && only_use(s, n->inputs[0]) && scalar_f32(n->inputs[1], &c)) {
        *scale *= c;
        return n->inputs[0];
    }
    if (n && only_use(s, n->inputs[1]) && scalar_f32(n->inputs[0], &c)) {
        *scale *= c;
        return n->inputs[1];
    }
    n = binary_of(x, OP_DIV);
    if (n && only_use(s, n->inputs[0]) && scalar_f32(n->inputs[1], &c) && c != 0) {
        *scale /= c;
        return n->inputs[0];
    }
    return x;
}

/* Is v the product of the chain (after an optional scale): a 4-D MatMul
 * whose output is read once? */
static gr_node *qk_product(const fa_state *s, gr_value *v, double *scale)
{
    gr_value *p = strip_scale(s, v, scale);
    gr_node *mm = pu_producer(p, OP_MATMUL);
    return mm && only_use(s, p) && static_f32(p, 4) ? mm : NULL;
}

/* The mask before the Softmax, if any; returns the QK^T MatMul. */
static gr_node *strip_mask(const fa_state *s, gr_value *x, fa_match *m)
{
    double scale = 1.0;
    gr_node *mm = NULL;
    gr_node *n = binary_of(x, OP_ADD);
    for (int i = 0; n && !mm && i < 2; i++) {
        gr_value *other = n->inputs[1 - i];
        if (!only_use(s, n->inputs[i]) || other->dtype != SMELT_DT_FLOAT32) continue;
        scale = 1.0;
        if ((mm = qk_product(s, n->inputs[i], &scale))) m->mask = other, m->mask_mode = 1;
    }
    gr_node *w = pu_producer(x, OP_WHERE);
    for (int i = 1; w && w->n_inputs == 3 && !mm && i < 3; i++) {
        /* Where(cond, s, fill): i == 1, keep where true; Where(cond, fill, s) */
        double fill;
        gr_value *cond = w->inputs[0], *sv = w->inputs[i], *fv = w->inputs[3 - i];
        if (!cond || cond->dtype != SMELT_DT_BOOL || !only_use(s, sv) || !fill_value(fv, &fill))
            continue;
        scale = 1.0;
        if ((mm = qk_product(s, sv, &scale)))
            m->mask = cond, m->mask_mode = i == 1 ? 3 : 2, m->fill = fill;
    }
    if (!mm && !n && !w) mm = qk_product(s, x, &scale);
    m->scale = scale;
    return mm;
}

/* A pre-scaled operand Mul(x, c) read only by the product. */
static gr_value *strip_operand_scale(const fa_state *s, gr_value *x, double *scale)
{
    double c;
    gr_node *n = binary_of(x, OP_MUL);
    if (!n || !only_use(s, x)) return x;
    for (int i = 0; i < 2; i++)
        if (scalar_f32(n->inputs[1 - i], &c) && static_f32(n->inputs[i], 4) &&
            pu_same_type(n->inputs[i], x)) {
            *scale *= c;
            return n->inputs[i];
        }
    return x;
}

/* The mask broadcasts to [B, H, Sq, Skv]. */
static bool mask_fits(const gr_value *mask, const int64_t full[4])
{
    if (!mask || mask->rank > 4) return false;
    for (int k = 0; k < mask->rank; k++) {
        int64_t d = mask->dims[k], f = full[4 - mask->rank + k];
        if (d < 1 || (d != 1 && d != f)) return false;
    }
    return true;
}

/* A constant bool mask keeping exactly key j <= query i (in every batch and
 * head), masked with -inf in effect: the causal flag replaces it. */
static bool is_causal_mask(const fa_match *m, const int64_t full[4])
{
    const gr_value *c = m->mask;
    if (m->mask_mode < 2 || !c->constant || !(m->fill <= -1e30) || c->rank < 2 ||
        c->dims[c->rank - 2] != full[2] || c->dims[c->rank - 1] != full[3])
        return false;
    const unsigned char *d = c->constant->data;
    int64_t n = gr_value_numel(c), sq = full[2], skv = full[3];
    for (int64_t e = 0; e < n; e++) {
        int64_t i = e / skv % sq, j = e % skv;
        bool keep = (d[e] != 0) == (m->mask_mode == 3);
        if (keep != (j <= i)) return false;
    }
    return true;
}

/* The head merge after y4: Reshape(Transpose(y4, 0,2,1,3), [B, Sq, H*Dv]). */
static void absorb_merge(const fa_state *s, gr_node *pv, fa_match *m)
{
    gr_value *y4 = pv->outputs[0];
    m->y = y4, m->last = pv, m->layout[3] = 0;
    if (!only_use(s, y4)) return;
    for (int i = 0; i < s->g->nodes.len; i++) {
        gr_node *t = s->g->nodes.items[i];
        if (t->n_inputs < 1 || t->inputs[0] != y4 || !transpose_of(t->outputs[0], 0, 2, 1, 3))
            continue;
        gr_value *t4 = t->outputs[0];
        if (!only_use(s, t4)) return;
        for (int k = 0; k < s->g->nodes.len; k++) {
            gr_node *r = s->g->nodes.items[k];
            if (r->op != OP_RESHAPE || r->inputs[0] != t4) continue;
            gr_value *y3 = r->outputs[0];
            if (static_f32(y3, 3) && y3->dims[0] == y4->dims[0] && y3->dims[1] == y4->dims[2] &&
                y3->dims[2] == y4->dims[1] * y4->dims[3])
                m->y = y3, m->last = r, m->layout[3] = 1;
            return;
        }
        return;
    }
}

/* The whole pattern ending in Softmax sm; false leaves m unusable. */
static bool match(const fa_state *s, gr_node *sm, fa_match *m)
{
    memset(m, 0, sizeof *m);
    const op_softmax_attrs *sa = sm->op_attrs;
    gr_value *x = sm->inputs[0], *p = sm->outputs[0];
    if (!sa || !static_f32(x, 4) || (sa->axis != -1 && sa->axis != 3) || !only_use(s, p)) return false;
    gr_node *pv = NULL; /* the one reader of p: MatMul(p, V4) */
    for (int i = 0; i < s->g->nodes.len && !pv; i++) {
        gr_node *n = s->g->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == p) pv = n->op == OP_MATMUL && k == 0 ? n : sm;
    }
    if (!pv || pv == sm || !static_f32(pv->inputs[1], 4) || !static_f32(pv->outputs[0], 4))
        return false;
    gr_node *qk = strip_mask(s, x, m);
    if (!qk) return false;
    gr_value *q4 = strip_operand_scale(s, qk->inputs[0], &m->scale);
    gr_value *kt4 = strip_operand_scale(s, qk->inputs[1], &m->scale);
    gr_value *v4 = pv->inputs[1];
    if (!static_f32(q4, 4) || !static_f32(kt4, 4)) return false;
    const int64_t *qd = q4->dims, *kd = kt4->dims, *vd = v4->dims;
    int64_t full[4] = {qd[0], qd[1], qd[2], kd[3]};
    for (int i = 0; i < 2; i++)
        if (kd[i] != qd[i] || vd[i] != qd[i]) return false; /* no broadcast batch or heads */
    if (kd[2] != qd[3] || vd[2] != kd[3] || qd[3] > FA_HEAD_MAX || vd[3] > FA_HEAD_MAX)
        return false;
    if (m->mask && !mask_fits(m->mask, full)) return false;
    if (m->mask && is_causal_mask(m, full)) m->mask = NULL, m->mask_mode = 0, m->causal = true;
    m->q = operand_bhsd(q4, &m->layout[0]);
    m->k = operand_key(kt4, &m->layout[1]);
    m->v = operand_bhsd(v4, &m->layout[2]);
    m->heads = qd[1];
    absorb_merge(s, pv, m);
    return true;
}

/* ---- the ONNX Attention op (opset 23+) ---- */

static bool attr_int_is(const gr_node *n, const char *name, int64_t def, int64_t want)
{
    int64_t v = def;
    const gr_attr *a = gr_node_attr(n, name);
    if (a && a->type == GR_ATTR_INT) v = a->i;
    return (!a || a->type == GR_ATTR_INT) && v == want;
}

/* Only Y of an Attention node is read, and nothing it has is past what
 * FusedAttention computes: float32, no caches, no padding lengths, no
 * softcap, no window, the input type's softmax, as many K/V as Q heads. */
static bool plain_attention(const gr_node *n)
{
    for (int i = 4; i < n->n_inputs; i++)
        if (n->inputs[i]) return false;
    for (int i = 1; i < n->n_outputs; i++)
        if (n->outputs[i]) return false;
    const gr_attr *cap = gr_node_attr(n, "softcap");
    if (cap && !(cap->type == GR_ATTR_FLOAT && cap->f == 0.0f)) return false;
    const gr_attr *prec = gr_node_attr(n, "softmax_precision");
    if (prec && !(prec->type == GR_ATTR_INT && prec->i == SMELT_DT_FLOAT32)) return false;
    return attr_int_is(n, "left_window_size", -1, -1) &&
           attr_int_is(n, "right_window_size", -1, -1);
}

/* Attention(Q, K, V[, mask]) with 3-D or 4-D operands of one head count:
 * FusedAttention with masked_zero (ONNX's fully-masked-row guard); its bool
 * mask keeps where true (fill -inf), a float one adds. */
static bool match_attention_op(const gr_node *n, fa_match *m)
{
    memset(m, 0, sizeof *m);
    if (n->n_inputs < 3 || !plain_attention(n) || !n->outputs[0]) return false;
    gr_value *q = n->inputs[0], *k = n->inputs[1], *v = n->inputs[2], *y = n->outputs[0];
    gr_value *mask = n->n_inputs > 3 ? n->inputs[3] : NULL;
    int rank = q ? q->rank : 0;
    if ((rank != 3 && rank != 4) || !static_f32(q, rank) || !static_f32(k, rank) ||
        !static_f32(v, rank) || !static_f32(y, rank))
        return false;
    int64_t heads = rank == 4 ? q->dims[1] : 0, kv_heads = rank == 4 ? k->dims[1] : 0;
    const gr_attr *qh = gr_node_attr(n, "q_num_heads"), *kh = gr_node_attr(n, "kv_num_heads");
    if (rank == 3) {
        if (!qh || !kh || qh->type != GR_ATTR_INT || kh->type != GR_ATTR_INT || qh->i < 1)
            return false;
        heads = qh->i, kv_heads = kh->i;
        if (q->dims[2] % heads || k->dims[2] % heads || v->dims[2] % heads) return false;
    }
    if (heads != kv_heads) return false;
    int64_t d = rank == 4 ? q->dims[3] : q->dims[2] / heads;
    int64_t dv = rank == 4 ? v->dims[3] : v->dims[2] / heads;
    int64_t full[4] = {q->dims[0], heads, q->dims[rank - 2], k->dims[rank - 2]};
    if (d > FA_HEAD_MAX || dv > FA_HEAD_MAX) return false;
    if (mask) {
        if ((mask->dtype != SMELT_DT_FLOAT32 && mask->dtype != SMELT_DT_BOOL) ||
            !mask_fits(mask, full) || mask->dims[mask->rank - 1] != full[3])
            return false; /* a shorter last dim is padded with -inf there */
        m->mask = mask;
        m->mask_mode = mask->dtype == SMELT_DT_BOOL ? 3 : 1;
        m->fill = -INFINITY;
    }
    const gr_attr *sc = gr_node_attr(n, "scale"), *causal = gr_node_attr(n, "is_causal");
    if ((sc && sc->type != GR_ATTR_FLOAT) || (causal && causal->type != GR_ATTR_INT)) return false;
    m->scale = sc ? sc->f : 1.0 / sqrt((double)d);
    m->causal = causal && causal->i;
    m->masked_zero = true;
    m->q = q, m->k = k, m->v = v, m->y = y, m->last = (gr_node *)n;
    m->heads = heads;
    for (int i = 0; i < 4; i++) m->layout[i] = rank == 3 ? 1 : 0;
    return true;
}

/* ---- rewriting ---- */

static smelt_status rewrite(fa_state *s, gr_node *sm, const fa_match *m)
{
    gr_value *in[4] = {m->q, m->k, m->v, m->mask};
    char name[256];
    snprintf(name, sizeof name, "%s.FusedAttention", sm->name);
    gr_node *n = pu_node_new(s->ctx, s->g, name, OP_FUSED_ATTENTION, in, m->mask ? 4 : 3, 1);
    if (!n) return smelt_ctx_status(s->ctx);
    SMELT_TRY(pu_attr_float(s->ctx, s->g, n, "scale", (float)m->scale));
    SMELT_TRY(pu_attr_int(s->ctx, s->g, n, "heads", m->heads));
    SMELT_TRY(pu_attr_ints(s->ctx, s->g, n, "layout", m->layout, 4));
    SMELT_TRY(pu_attr_int(s->ctx, s->g, n, "mask_mode", m->mask_mode));
    if (m->mask_mode >= 2) SMELT_TRY(pu_attr_float(s->ctx, s->g, n, "fill", (float)m->fill));
    if (m->causal) SMELT_TRY(pu_attr_int(s->ctx, s->g, n, "causal", 1));
    if (m->masked_zero) SMELT_TRY(pu_attr_int(s->ctx, s->g, n, "masked_zero", 1));
    SMELT_TRY(pu_node_import(s->ctx, s->g, n));
    SMELT_TRY(pu_infer_node(s->ctx, n, "fuse_attention"));
    if (!pu_same_type(n->outputs[0], m->y))
        return op_errf(s->ctx, n, SMELT_ERR_INTERNAL, "fuse_attention: the fused output's type "
                       "differs from '%s'", m->y->name);
    pu_take_output(n, 0, m->y);
    pu_detach(m->last);
    s->fused++;
    return SMELT_OK;
}

/* smelt.attention_f32 takes the query and key lengths at run time, not the
 * batch or head count: attention whose scores [B, H, Sq, Skv] have those as
 * run-time dims stays decomposed (MatMul, Softmax, MatMul), whose loops take
 * them; so does ONNX's Attention op over any run-time dim. */
static bool has_rt_dim(const gr_graph *g, const gr_node *n, bool op23)
{
    const gr_value *s = n->inputs[0];
    if (!op23)
        return s && s->rank == 4 && (gr_value_rt_dim(g, s, 0) >= 0 || gr_value_rt_dim(g, s, 1) >= 0);
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        const gr_value *v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        for (int d = 0; v && d < v->rank; d++)
            if (gr_value_rt_dim(g, v, d) >= 0) return true;
    }
    return false;
}

smelt_status pass_fuse_attention(smelt_ctx *ctx, gr_graph *g)
{
    if (g->hw.gpu_threads > 0) return SMELT_OK; /* its micro-kernel is the CPUs' only */
    fa_state s = {ctx, g, NULL, 0, 0};
    int n0 = g->nodes.len;
    gr_node **nodes = smelt_calloc((size_t)n0 + 1, sizeof *nodes);
    if (!nodes) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (n0) memcpy(nodes, g->nodes.items, sizeof *nodes * (size_t)n0);
    smelt_status st = SMELT_OK;
    for (int i = 0; st == SMELT_OK && i < n0; i++) {
        bool op23 = nodes[i]->op == OP_ATTENTION;
        if (!op23 && (nodes[i]->op != OP_SOFTMAX || nodes[i]->n_outputs != 1)) continue;
        if (has_rt_dim(g, nodes[i], op23)) continue;
        smelt_free(s.uses); /* counts change with every rewrite */
        s.uses = pu_use_counts(g);
        s.n_uses = g->values.len;
        if (!s.uses) {
            st = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
            break;
        }
        fa_match m;
        if (op23 ? match_attention_op(nodes[i], &m) : match(&s, nodes[i], &m))
            st = rewrite(&s, nodes[i], &m);
    }
    smelt_free(s.uses);
    smelt_free(nodes);
    SMELT_TRY(st);
    return s.fused ? pu_finish(ctx, g) : SMELT_OK;
}
