/* FusedAttention: scaled dot-product attention as one node (made by
 * passes/fuse_attention.c, refused by the importer: OP_FLAG_INTERNAL).
 *
 *   Y[b, h, i, c] = sum_j softmax_j(s[b, h, i, j]) V[b, h, j, c]
 *   s[b, h, i, j] = scale * sum_d Q[b, h, i, d] K[b, h, j, d], then
 *     mask_mode 1: s += mask (float32, broadcast to [B, H, Sq, Skv]);
 *     mask_mode 2: s = mask ? fill : s;  3: s = mask ? s : fill (bool mask);
 *     causal 1: s = -inf where j > i.
 *   masked_zero 1: a row whose every score is -inf gives zeros (ONNX
 *     Attention's guard; else NaN, as Softmax of such a row gives).
 *
 * Attribute `layout` = [Q, K, V, Y], how each tensor holds [B, H, S, D]:
 *   0  [B, H, S, D] (4-D)
 *   1  [B, S, H * D] (3-D: the linear layer's output before the heads are
 *      split by Reshape + Transpose; the attribute `heads` gives H)
 *   2  [B, H, D, S] (K only: K already transposed)
 * so the pass absorbs the head split and merge around attention and the
 * kernel reads the projections in place.
 *
 * The reference kernel computes in double.  The compiled form is one extern
 * stage (te.h): a parallel loop over batch x heads x blocks of query rows
 * calling the micro-kernel smelt.attention_f32 (codegen/uk_attention_f32.h),
 * which streams over key blocks with an online softmax, so the score tensor
 * is never stored. */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

enum { IN_Q, IN_K, IN_V, IN_MASK };
enum { LAYOUT_BHSD = 0, LAYOUT_BSHD = 1, LAYOUT_BHDS = 2 };

/* Query rows per parallel task (at most; fewer while there would be fewer
 * than FA_MIN_TASKS tasks) and keys per streamed block.  Each task packs
 * every K and V block once, so long query blocks pack less: BERT-base's
 * attention (12 heads x 128 rows) on one Zen 3 core took 0.89 ms with 128
 * rows per task, 0.97 with 64; 128 keys per block 0.92 ms, 64 keys 0.99,
 * 32 keys 1.10 (seq 512: 16.9 / 17.7 ms for 128 / 64 keys; medians of 3-4
 * runs of the kernel alone, docs/benchmarks.md). */
#define FA_Q_BLOCK 128
#define FA_MIN_Q_BLOCK 32
#define FA_MIN_TASKS 8
#define FA_K_BLOCK 128
/* The kernel keeps a packed K block and the accumulators on the stack. */
#define FA_HEAD_MAX 256

typedef struct fa_attrs {
    float scale, fill;
    int64_t heads, mask_mode;
    bool causal, masked_zero;
    int64_t layout[4];
} fa_attrs;

/* The sizes of one node and how each operand is addressed: element
 * (b, h, s, d) of operand t is at b*st[t][0] + h*st[t][1] + s*st[t][2] +
 * d*st[t][3]. */
typedef struct fa_dims {
    int64_t batch, heads, q_len, kv_len, head, v_head;
    int64_t st[4][4];
} fa_dims;

static const char *in_name(const gr_node *n, int i)
{
    static const char *const names[] = {"Q", "K", "V", "mask"};
    return i < n->n_inputs && n->inputs[i] ? n->inputs[i]->name : names[i];
}

/* ---- import ---- */

static smelt_status fa_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    fa_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    int64_t causal, masked_zero;
    SMELT_TRY(op_attr_float(ctx, node, "scale", 1.0f, &a->scale));
    SMELT_TRY(op_attr_float(ctx, node, "fill", 0.0f, &a->fill));
    SMELT_TRY(op_attr_int(ctx, node, "heads", 0, &a->heads));
    SMELT_TRY(op_attr_int(ctx, node, "mask_mode", 0, &a->mask_mode));
    SMELT_TRY(op_attr_int(ctx, node, "causal", 0, &causal));
    SMELT_TRY(op_attr_int(ctx, node, "masked_zero", 0, &masked_zero));
    a->causal = causal != 0;
    a->masked_zero = masked_zero != 0;
    int n = 0;
    const int64_t *layout = NULL;
    SMELT_TRY(op_attr_ints(ctx, node, "layout", &n, &layout));
    if (n != 4)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'layout' needs 4 values (Q, K, V, Y)");
    for (int i = 0; i < 4; i++) {
        if (layout[i] < 0 || layout[i] > (i == IN_K ? 2 : 1))
            return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'layout' value %d is %lld", i,
                           (long long)layout[i]);
        if (layout[i] == LAYOUT_BSHD && a->heads < 1)
            return op_errf(ctx, node, SMELT_ERR_ATTR, "3-D operands need attribute 'heads' >= 1");
        a->layout[i] = layout[i];
    }
    if (a->mask_mode < 0 || a->mask_mode > 3)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'mask_mode' is %lld; expected 0..3",
                       (long long)a->mask_mode);
    if ((a->mask_mode != 0) != (node->n_inputs > IN_MASK && node->inputs[IN_MASK]))
        return op_errf(ctx, node, SMELT_ERR_ATTR, "mask_mode %lld %s a mask input",
                       (long long)a->mask_mode, a->mask_mode ? "needs" : "must not have");
    return SMELT_OK;
}

/* ---- shapes ---- */

/* Operand i's [B, H, S, D] sizes from its dims and layout (-1: unknown). */
static smelt_status operand_dims(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t, int i,
                                 int64_t out[4])
{
    const fa_attrs *a = n->op_attrs;
    int64_t lay = a->layout[i];
    int want = lay == LAYOUT_BSHD ? 3 : 4;
    if (t->dtype != SMELT_DT_FLOAT32)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has dtype %s; FusedAttention is float32",
                       in_name(n, i), smelt_dtype_name(t->dtype));
    if (t->rank != want)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has rank %d; its layout needs %d",
                       in_name(n, i), t->rank, want);
    if (lay == LAYOUT_BSHD) {
        if (t->dims[2] >= 0 && t->dims[2] % a->heads != 0)
            return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has %lld columns, not a multiple "
                           "of %lld heads", in_name(n, i), (long long)t->dims[2],
                           (long long)a->heads);
        int64_t d[4] = {t->dims[0], a->heads, t->dims[1], t->dims[2] >= 0 ? t->dims[2] / a->heads : -1};
        memcpy(out, d, sizeof d);
    } else if (lay == LAYOUT_BHDS) {
        int64_t d[4] = {t->dims[0], t->dims[1], t->dims[3], t->dims[2]};
        memcpy(out, d, sizeof d);
    } else {
        memcpy(out, t->dims, 4 * sizeof *out);
    }
    return SMELT_OK;
}

static smelt_status same_dim(smelt_ctx *ctx, const gr_node *n, int64_t got, int64_t want,
                             const char *what, int i)
{
    if (got >= 0 && want >= 0 && got != want)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "%s of input '%s' is %lld; expected %lld", what,
                       in_name(n, i), (long long)got, (long long)want);
    return SMELT_OK;
}

/* Element strides of operand i (static dims) in [B, H, S, D] order. */
static void operand_strides(const fa_attrs *a, int i, const int64_t *dims, int64_t st[4])
{
    int64_t lay = a->layout[i];
    if (lay == LAYOUT_BSHD) { /* [B, S, H*D] */
        int64_t hd = dims[2] / a->heads;
        st[0] = dims[1] * dims[2], st[1] = hd, st[2] = dims[2], st[3] = 1;
    } else if (lay == LAYOUT_BHDS) { /* [B, H, D, S] */
        st[0] = dims[1] * dims[2] * dims[3], st[1] = dims[2] * dims[3], st[2] = 1, st[3] = dims[3];
    } else {
        st[0] = dims[1] * dims[2] * dims[3], st[1] = dims[2] * dims[3], st[2] = dims[3], st[3] = 1;
    }
}

static smelt_status check_mask(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *m,
                               const fa_dims *d)
{
    const fa_attrs *a = n->op_attrs;
    smelt_dtype want = a->mask_mode == 1 ? SMELT_DT_FLOAT32 : SMELT_DT_BOOL;
    if (m->dtype != want)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "mask '%s' has dtype %s; mask_mode %lld needs %s",
                       in_name(n, IN_MASK), smelt_dtype_name(m->dtype), (long long)a->mask_mode,
                       smelt_dtype_name(want));
    if (m->rank > 4)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "mask '%s' has rank %d; at most 4",
                       in_name(n, IN_MASK), m->rank);
    const int64_t full[4] = {d->batch, d->heads, d->q_len, d->kv_len};
    for (int k = 0; k < m->rank; k++) {
        int64_t md = m->dims[k], fd = full[4 - m->rank + k];
        if (md >= 0 && fd >= 0 && md != 1 && md != fd)
            return op_errf(ctx, n, SMELT_ERR_SHAPE, "mask '%s' dim %d is %lld; it broadcasts "
                           "to [%lld, %lld, %lld, %lld]", in_name(n, IN_MASK), k, (long long)md,
                           (long long)full[0], (long long)full[1], (long long)full[2],
                           (long long)full[3]);
    }
    return SMELT_OK;
}

static smelt_status fa_dims_of(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               fa_dims *d)
{
    if (!n->op_attrs) return op_errf(ctx, n, SMELT_ERR_INTERNAL, "attributes were not imported");
    int64_t q[4], k[4], v[4];
    SMELT_TRY(operand_dims(ctx, n, in[IN_Q], IN_Q, q));
    SMELT_TRY(operand_dims(ctx, n, in[IN_K], IN_K, k));
    SMELT_TRY(operand_dims(ctx, n, in[IN_V], IN_V, v));
    static const char *const what[] = {"the batch", "the head count", "the sequence length",
                                       "the head size"};
    for (int x = 0; x < 2; x++) {
        SMELT_TRY(same_dim(ctx, n, k[x], q[x], what[x], IN_K));
        SMELT_TRY(same_dim(ctx, n, v[x], q[x], what[x], IN_V));
    }
    SMELT_TRY(same_dim(ctx, n, k[3], q[3], what[3], IN_K));
    SMELT_TRY(same_dim(ctx, n, v[2], k[2], what[2], IN_V));
    *d = (fa_dims){.batch = q[0], .heads = q[1], .q_len = q[2], .kv_len = k[2], .head = q[3],
                   .v_head = v[3]};
    const smelt_tensor *m = op_input(n, in, IN_MASK);
    return m ? check_mask(ctx, n, m, d) : SMELT_OK;
}

static smelt_status fa_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    fa_dims d;
    SMELT_TRY(fa_dims_of(ctx, n, in, &d));
    const fa_attrs *a = n->op_attrs;
    out->dtype = SMELT_DT_FLOAT32;
    if (a->layout[3] == LAYOUT_BSHD) {
        out->rank = 3;
        out->dims[0] = d.batch, out->dims[1] = d.q_len;
        out->dims[2] = d.v_head >= 0 ? d.v_head * d.heads : GR_DIM_UNKNOWN;
    } else {
        out->rank = 4;
        out->dims[0] = d.batch, out->dims[1] = d.heads, out->dims[2] = d.q_len;
        out->dims[3] = d.v_head;
    }
    return SMELT_OK;
}

/* Strides of every operand and of the mask broadcast to [B, H, Sq, Skv]
 * (0 along broadcast dims); static dims only. */
static void fa_strides(const gr_node *n, const smelt_tensor *const *in, const smelt_tensor *y,
                       fa_dims *d, int64_t mst[4])
{
    const fa_attrs *a = n->op_attrs;
    for (int i = 0; i < 3; i++) operand_strides(a, i, in[i]->dims, d->st[i]);
    operand_strides(a, 3, y->dims, d->st[3]);
    const smelt_tensor *m = op_input(n, in, IN_MASK);
    memset(mst, 0, 4 * sizeof *mst);
    int64_t s = 1;
    for (int k = m ? m->rank - 1 : -1; k >= 0; k--) {
        mst[4 - m->rank + k] = m->dims[k] == 1 ? 0 : s;
        s *= m->dims[k];
    }
}

/* ---- reference kernel ---- */

static double ref_score(const fa_attrs *a, const smelt_tensor *const *in, const fa_dims *d,
                        const int64_t *mst, int64_t b, int64_t h, int64_t i, int64_t j)
{
    double s = 0;
    for (int64_t c = 0; c < d->head; c++)
        s += op_get_f64(in[IN_Q], b * d->st[0][0] + h * d->st[0][1] + i * d->st[0][2] + c * d->st[0][3]) *
             op_get_f64(in[IN_K], b * d->st[1][0] + h * d->st[1][1] + j * d->st[1][2] + c * d->st[1][3]);
    s *= a->scale;
    int64_t mo = b * mst[0] + h * mst[1] + i * mst[2] + j * mst[3];
    if (a->mask_mode == 1) s += op_get_f64(in[IN_MASK], mo);
    if (a->mask_mode >= 2 && (op_get_f64(in[IN_MASK], mo) != 0) == (a->mask_mode == 2)) s = a->fill;
    if (a->causal && j > i) s = -INFINITY;
    return s;
}

static smelt_status fa_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                            smelt_tensor *out)
{
    fa_dims d;
    int64_t mst[4];
    SMELT_TRY(fa_dims_of(ctx, n, in, &d));
    fa_strides(n, in, out, &d, mst);
    double *p = smelt_alloc(sizeof *p * (size_t)(d.kv_len > 0 ? d.kv_len : 1));
    if (!p) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    const int64_t *so = d.st[3];
    for (int64_t b = 0; b < d.batch; b++)
        for (int64_t h = 0; h < d.heads; h++)
            for (int64_t i = 0; i < d.q_len; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < d.kv_len; j++) {
                    p[j] = ref_score(n->op_attrs, in, &d, mst, b, h, i, j);
                    mx = p[j] > mx ? p[j] : mx;
                }
                bool zero = mx == -INFINITY && ((const fa_attrs *)n->op_attrs)->masked_zero;
                for (int64_t j = 0; j < d.kv_len; j++) sum += p[j] = zero ? 0 : exp(p[j] - mx);
                if (zero) sum = 1;
                for (int64_t c = 0; c < d.v_head; c++) {
                    double acc = 0;
                    for (int64_t j = 0; j < d.kv_len; j++)
                        acc += p[j] * op_get_f64(in[IN_V], b * d.st[2][0] + h * d.st[2][1] +
                                                               j * d.st[2][2] + c * d.st[2][3]);
                    op_set_f64(out, b * so[0] + h * so[1] + i * so[2] + c * so[3], acc / sum);
                }
            }
    smelt_free(p);
    return SMELT_OK;
}

/* ---- compiled form ---- */

typedef struct fa_build {
    const fa_attrs *a;
    fa_dims d;
    int64_t mst[4];
    const te_tensor *q, *k, *v, *m;
    const gr_node *node;
    bool rt; /* a length is a run-time dim */
} fa_build;

static ir_expr *offset(ir_builder *b, ir_expr *const *st, ir_expr *bi, ir_expr *hi, ir_expr *si)
{
    return ir_add(b, ir_add(b, ir_mul(b, bi, st[0]), ir_mul(b, hi, st[1])), ir_mul(b, si, st[2]));
}

/* Strides of operand i (q, k, v, out) in [B, H, S, D] order as the kernel
 * takes them: the static ones, or, for a buffer laid out at the run's dims
 * (a key/value cache the caller passes at its own length), products of its
 * run-time extents. */
static void stride_exprs(ir_builder *b, const fa_attrs *a, int i, const ir_buffer *buf,
                         const int64_t *st_static, ir_expr *st[4])
{
    for (int k = 0; k < 4; k++) st[k] = ir_int(b, st_static[k]);
    if (!ir_buffer_is_dense_rt(buf)) return;
    ir_expr *e[4];
    for (int d = 0; d < buf->rank && d < 4; d++) e[d] = ir_buffer_extent(b, buf, d);
    if (a->layout[i] == LAYOUT_BSHD) { /* [B, S, H*D]: a head's columns are static */
        st[0] = ir_mul(b, e[1], e[2]), st[2] = e[2];
        return;
    }
    ir_expr *inner = ir_mul(b, e[2], e[3]);
    st[0] = ir_mul(b, e[1], inner), st[1] = inner;
    if (a->layout[i] == LAYOUT_BHDS) st[3] = e[3]; /* [B, H, D, S] */
    else st[2] = e[3];
}

/* The mask's strides broadcast to [B, H, Sq, Skv] (0 along its dims of 1). */
static void mask_stride_exprs(ir_builder *b, const ir_buffer *m, const int64_t *mst_static, ir_expr *mst[4])
{
    for (int k = 0; k < 4; k++) mst[k] = ir_int(b, mst_static[k]);
    if (!m || !ir_buffer_is_dense_rt(m)) return;
    ir_expr *s = ir_int(b, 1);
    for (int k = m->rank - 1; k >= 0; k--) {
        if (m->shape[k] != 1) mst[4 - m->rank + k] = s;
        s = ir_mul(b, s, ir_buffer_extent(b, m, k));
    }
}

/* A length the kernel takes: a run-time dim's variable (te_rt_extent), else
 * the static value. */
static ir_expr *length(te_graph *g, int64_t n, bool *rt)
{
    ir_expr *e = te_rt_extent(g, n);
    *rt = *rt || e;
    return e ? e : ir_int(&g->b, n);
}

/* parallel t over B x H x query blocks: smelt.attention_f32 on rows
 * [q0, q0 + rows) of (b, h).  The query and key lengths may be run-time
 * dims (operands laid out at their maxima: the strides stay static). */
static ir_stmt *build_attention(te_graph *g, ir_buffer *out, void *user)
{
    fa_build *fb = user;
    const fa_dims *d = &fb->d;
    ir_builder *b = &g->b;
    if (te_rt_extent(g, d->batch) || te_rt_extent(g, d->heads) || te_rt_extent(g, d->head) ||
        te_rt_extent(g, d->v_head)) {
        op_errf(g->ctx, fb->node, SMELT_ERR_UNSUPPORTED, "a run-time batch, head count or head "
                "size is not supported by the fused kernel yet (only the lengths)");
        return NULL;
    }
    int64_t qb = FA_Q_BLOCK;
    while (qb > FA_MIN_Q_BLOCK && d->batch * d->heads * ((d->q_len + qb - 1) / qb) < FA_MIN_TASKS)
        qb /= 2;
    ir_expr *q_len = length(g, d->q_len, &fb->rt), *kv_len = length(g, d->kv_len, &fb->rt);
    ir_expr *qblocks = ir_binary(b, IR_DIV, ir_add(b, q_len, ir_int(b, qb - 1)), ir_int(b, qb));
    ir_var *t = ir_var_new(b, "fa_task", SMELT_DT_INT64);
    ir_expr *tv = ir_var_ref(b, t);
    ir_expr *bi = ir_binary(b, IR_DIV, tv, ir_mul(b, ir_int(b, d->heads), qblocks));
    ir_expr *hi = ir_binary(b, IR_MOD, ir_binary(b, IR_DIV, tv, qblocks), ir_int(b, d->heads));
    ir_expr *q0 = ir_mul(b, ir_binary(b, IR_MOD, tv, qblocks), ir_int(b, qb));
    ir_expr *rows = ir_binary(b, IR_MIN, ir_int(b, qb), ir_sub(b, q_len, q0));
    ir_expr *zero = ir_int(b, 0);
    ir_expr *st[4][4], *mst[4];
    const ir_buffer *bufs[4] = {fb->q->buf, fb->k->buf, fb->v->buf, out};
    for (int i = 0; i < 4; i++) stride_exprs(b, fb->a, i, bufs[i], d->st[i], st[i]);
    mask_stride_exprs(b, fb->m ? fb->m->buf : NULL, fb->mst, mst);
    ir_call_arg args[23] = {
        {out, offset(b, st[3], bi, hi, q0)},
        {fb->q->buf, offset(b, st[0], bi, hi, q0)},
        {fb->k->buf, offset(b, st[1], bi, hi, zero)},
        {fb->v->buf, offset(b, st[2], bi, hi, zero)},
        {fb->m ? fb->m->buf : fb->q->buf, fb->m ? offset(b, mst, bi, hi, q0) : zero},
        {NULL, rows},
        {NULL, q0},
        {NULL, kv_len},
        {NULL, ir_int(b, d->head)},
        {NULL, ir_int(b, d->v_head)},
        {NULL, st[0][2]},
        {NULL, st[1][2]},
        {NULL, st[1][3]},
        {NULL, st[2][2]},
        {NULL, st[3][2]},
        {NULL, mst[2]},
        {NULL, mst[3]},
        {NULL, ir_int(b, fb->a->mask_mode)},
        {NULL, ir_const_float(b, SMELT_DT_FLOAT32, fb->a->fill)},
        {NULL, ir_const_float(b, SMELT_DT_FLOAT32, fb->a->scale)},
        {NULL, ir_int(b, fb->a->causal ? 0 : -1)},
        {NULL, ir_int(b, FA_K_BLOCK)},
        {NULL, ir_int(b, fb->a->masked_zero)},
    };
    ir_stmt *call = ir_call_stmt(b, "smelt.attention_f32", 23, args);
    int64_t most = d->batch * d->heads * ((d->q_len + qb - 1) / qb);
    ir_expr *tasks = ir_mul(b, ir_int(b, d->batch * d->heads), qblocks);
    return ir_for(b, t, zero, tasks, most > 1 ? IR_FOR_PARALLEL : IR_FOR_SERIAL, call);
}

static smelt_status fa_compute(op_compute_args *a)
{
    const gr_node *n = a->node;
    smelt_tensor in_t[4];
    const smelt_tensor *in[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < n->n_inputs && i < 4; i++)
        if (n->inputs[i]) {
            in_t[i] = (smelt_tensor){.dtype = n->inputs[i]->dtype, .rank = n->inputs[i]->rank};
            memcpy(in_t[i].dims, n->inputs[i]->dims, sizeof in_t[i].dims);
            in[i] = &in_t[i];
        }
    fa_build *fb = smelt_arena_alloc(&a->te->arena, sizeof *fb);
    if (!fb) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
    *fb = (fa_build){.a = n->op_attrs, .q = a->in[IN_Q], .k = a->in[IN_K], .v = a->in[IN_V],
                     .m = n->n_inputs > IN_MASK ? a->in[IN_MASK] : NULL, .node = n};
    SMELT_TRY(fa_dims_of(a->ctx, n, in, &fb->d));
    fa_strides(n, in, &a->out_type[0], &fb->d, fb->mst);
    if (fb->d.head > FA_HEAD_MAX || fb->d.v_head > FA_HEAD_MAX)
        return op_errf(a->ctx, n, SMELT_ERR_UNSUPPORTED, "head sizes above %d are not compiled",
                       FA_HEAD_MAX);
    te_tensor *inputs[4] = {a->in[IN_Q], a->in[IN_K], a->in[IN_V], fb->m ? a->in[IN_MASK] : NULL};
    const fa_dims *d = &fb->d;
    double flops = 2.0 * d->batch * d->heads * d->q_len * d->kv_len * (d->head + d->v_head);
    const smelt_tensor *y = &a->out_type[0];
    a->out[0] = te_extern_stage(a->te, "attention", SMELT_DT_FLOAT32, y->rank, y->dims,
                                fb->m ? 4 : 3, inputs, build_attention, fb, "attention", flops);
    if (a->out[0] && fb->rt) te_extern_set_rt_ok(a->out[0]);
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_FUSED_ATTENTION = {
    .compute = fa_compute,
    .import = fa_import,
    .infer = fa_infer,
    .eval = fa_eval,
    .min_inputs = 3,
    .max_inputs = 4,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = OP_FLAG_INTERNAL,
};
