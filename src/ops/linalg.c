/* Linear algebra: MatMul, Gemm, Einsum.
 *
 * Matrix products run in one of three numeric kinds: float32 (the hot path:
 * typed loops, innermost loop over contiguous memory), double (float64, and
 * float16/bfloat16 converted to double) and int64 (all integer types, with
 * wrapping arithmetic as in numpy).
 *
 * The compute definitions (te) are sums of products over reduce axes ("k" for
 * MatMul and Gemm, one per contracted letter for Einsum) in the output's type
 * (float32 for float16/bfloat16, then a cast stage); Gemm's alpha, beta and C
 * go in an elementwise epilogue stage. */
#include <string.h>

#include "ops/linalg.h"
#include "ops/op.h"
#include "te/te.h"

static const smelt_dtype k_matmul_types[] = {
    SMELT_DT_FLOAT16, SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_BFLOAT16, SMELT_DT_INT32,
    SMELT_DT_INT64,   SMELT_DT_UINT32,  SMELT_DT_UINT64,  SMELT_DT_UNDEFINED};

static const smelt_dtype k_einsum_types[] = {
    SMELT_DT_UINT8,  SMELT_DT_UINT16, SMELT_DT_UINT32,  SMELT_DT_UINT64,  SMELT_DT_INT8,
    SMELT_DT_INT16,  SMELT_DT_INT32,  SMELT_DT_INT64,   SMELT_DT_FLOAT16, SMELT_DT_FLOAT32,
    SMELT_DT_FLOAT64, SMELT_DT_BFLOAT16, SMELT_DT_UNDEFINED};

/* ---- helpers -------------------------------------------------------------------- */

static const char *input_name(const gr_node *n, int i)
{
    return i < n->n_inputs && n->inputs[i] ? n->inputs[i]->name : "?";
}

/* "(2, 3, ?)" for messages; symbolic dims print as '?'. */
static const char *dims_str(const smelt_tensor *t, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < t->rank && len < size; i++) {
        const char *sep = i ? ", " : "";
        if (t->dims[i] >= 0)
            len += (size_t)snprintf(buf + len, size - len, "%s%lld", sep, (long long)t->dims[i]);
        else
            len += (size_t)snprintf(buf + len, size - len, "%s?", sep);
    }
    if (len < size) snprintf(buf + len, size - len, ")");
    return buf;
}

static bool dims_conflict(int64_t a, int64_t b)
{
    return a >= 0 && b >= 0 && a != b;
}

static smelt_status check_input_dtype(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                                      int i, const smelt_dtype *allowed)
{
    char what[160];
    snprintf(what, sizeof what, "input '%s'", input_name(n, i));
    return op_check_dtype(ctx, n, t, what, allowed);
}

static smelt_status check_same_dtype(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                                     int i, const smelt_tensor *first)
{
    if (t->dtype == first->dtype) return SMELT_OK;
    return op_errf(ctx, n, SMELT_ERR_SHAPE, "input '%s' has dtype %s, expected %s (as '%s')",
                   input_name(n, i), smelt_dtype_name(t->dtype), smelt_dtype_name(first->dtype),
                   input_name(n, 0));
}

/* ---- numeric kinds and operand buffers ---- */

typedef enum num_kind { NUM_F32, NUM_F64, NUM_I64 } num_kind;

static num_kind kind_of(smelt_dtype dt)
{
    if (dt == SMELT_DT_FLOAT32) return NUM_F32;
    return op_dtype_is_int(dt) || dt == SMELT_DT_BOOL ? NUM_I64 : NUM_F64;
}

static smelt_dtype kind_dtype(num_kind k)
{
    return k == NUM_F32 ? SMELT_DT_FLOAT32 : k == NUM_F64 ? SMELT_DT_FLOAT64 : SMELT_DT_INT64;
}

static size_t kind_size(num_kind k)
{
    return k == NUM_F32 ? sizeof(float) : 8;
}

/* t's elements as kind k: t's own data when it already has that type, else a
 * converted copy returned in *owned (free with smelt_free). */
static smelt_status operand_as(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                               num_kind k, const void **data, void **owned)
{
    *owned = NULL;
    *data = t->data;
    if (t->dtype == kind_dtype(k)) return SMELT_OK;
    int64_t count = op_numel(t);
    void *buf = smelt_alloc((size_t)(count > 0 ? count : 1) * kind_size(k));
    if (!buf)
        return op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory converting an operand of %lld "
                       "elements", (long long)count);
    if (k == NUM_F64 && t->dtype == SMELT_DT_FLOAT32) {
        const float *src = t->data;
        for (int64_t i = 0; i < count; i++) ((double *)buf)[i] = src[i];
    } else if (k == NUM_F64) {
        for (int64_t i = 0; i < count; i++) ((double *)buf)[i] = op_get_f64(t, i);
    } else if (k == NUM_I64) {
        for (int64_t i = 0; i < count; i++) ((int64_t *)buf)[i] = op_get_i64(t, i);
    } else {
        for (int64_t i = 0; i < count; i++) ((float *)buf)[i] = (float)op_get_f64(t, i);
    }
    *owned = buf;
    *data = buf;
    return SMELT_OK;
}

/* A zeroed accumulator for `out` in kind k: out's own data when it has that
 * type, else a scratch buffer in *owned that acc_store copies into out. */
static smelt_status acc_for(smelt_ctx *ctx, const gr_node *n, smelt_tensor *out, num_kind k,
                            void **data, void **owned)
{
    *owned = NULL;
    *data = out->data;
    if (out->dtype == kind_dtype(k)) return SMELT_OK;
    int64_t count = op_numel(out);
    *owned = smelt_calloc((size_t)(count > 0 ? count : 1), kind_size(k));
    if (!*owned)
        return op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory for an accumulator of %lld "
                       "elements", (long long)count);
    *data = *owned;
    return SMELT_OK;
}

static void acc_store(smelt_tensor *out, num_kind k, const void *acc)
{
    if (acc == out->data) return;
    int64_t count = op_numel(out);
    for (int64_t i = 0; i < count; i++) {
        if (k == NUM_I64) op_set_i64(out, i, ((const int64_t *)acc)[i]);
        else if (k == NUM_F64) op_set_f64(out, i, ((const double *)acc)[i]);
        else op_set_f64(out, i, ((const float *)acc)[i]);
    }
}

/* ---- compute helpers (tensor expressions) ------------------------------------------ */

/* float16/bfloat16 products accumulate in float32 and round once at the end;
 * other types accumulate in their own type (integers wrap, as numpy). */
static smelt_dtype acc_dtype(smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16 ? SMELT_DT_FLOAT32 : dt;
}

static ir_expr *read_as(te_graph *g, const te_tensor *t, ir_expr *const *idx, smelt_dtype dt)
{
    return ir_cast(&g->b, dt, te_read(g, t, idx));
}

/* Indices of t's first `dims` dims, numpy-broadcast against the trailing
 * entries of idx[0..n): a dim of size 1 reads index 0. */
static void bcast_index(te_graph *g, const te_tensor *t, int dims, ir_expr *const *idx, int n,
                        ir_expr **ti)
{
    for (int d = 0; d < dims; d++)
        ti[d] = t->buf->shape[d] == 1 ? ir_int(&g->b, 0) : idx[n - dims + d];
}

static ir_expr *copy_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return te_read(g, user, idx); /* te_compute casts to the stage's dtype */
}

/* Output 0 as the stage `body` computed in acc_dt.  A reduction's root must
 * stay the reduce, so a different output dtype gets a cast stage "y" after
 * the stage "y_acc". */
static smelt_status output_via(op_compute_args *a, smelt_dtype acc_dt, te_body_fn body,
                               void *user, const char *tag)
{
    const smelt_tensor *ot = &a->out_type[0];
    bool cast = acc_dt != ot->dtype;
    te_tensor *t = te_compute(a->te, cast ? "y_acc" : "y", acc_dt, ot->rank, ot->dims, body, user,
                              tag);
    if (t && cast)
        t = te_compute(a->te, "y", ot->dtype, ot->rank, ot->dims, copy_body, t, "injective");
    a->out[0] = t;
    return t ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* ---- matrix product kernels ------------------------------------------------------
 * C[M,N] += A'[M,K] * B'[K,N] with A' (m,k) at a[m*sam + k*sak] and B' (k,n) at
 * b[k*sbk + n*sbn]; C is row-major and contiguous. */

typedef struct gemm_shape {
    int64_t m, n, k;
    int64_t sam, sak, sbk, sbn;
} gemm_shape;

/* i-k-j order, four rows of B per pass (a quarter of the loads and stores of
 * the C row); the inner loop runs over contiguous B and C. */
static void gemm_f32_rows(const gemm_shape *s, const float *a, const float *b, float *c)
{
    for (int64_t m = 0; m < s->m; m++) {
        float *crow = c + m * s->n;
        const float *arow = a + m * s->sam;
        int64_t k = 0;
        for (; k + 4 <= s->k; k += 4) {
            float a0 = arow[k * s->sak], a1 = arow[(k + 1) * s->sak];
            float a2 = arow[(k + 2) * s->sak], a3 = arow[(k + 3) * s->sak];
            const float *b0 = b + k * s->sbk, *b1 = b0 + s->sbk, *b2 = b1 + s->sbk,
                        *b3 = b2 + s->sbk;
            for (int64_t j = 0; j < s->n; j++)
                crow[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
        }
        for (; k < s->k; k++) {
            float av = arow[k * s->sak];
            const float *brow = b + k * s->sbk;
            for (int64_t j = 0; j < s->n; j++) crow[j] += av * brow[j];
        }
    }
}

static void gemm_f64(const gemm_shape *s, const double *a, const double *b, double *c)
{
    for (int64_t m = 0; m < s->m; m++)
        for (int64_t k = 0; k < s->k; k++) {
            double av = a[m * s->sam + k * s->sak];
            for (int64_t j = 0; j < s->n; j++) c[m * s->n + j] += av * b[k * s->sbk + j * s->sbn];
        }
}

/* Unsigned arithmetic: integer products wrap like numpy's instead of being UB. */
static void gemm_i64(const gemm_shape *s, const int64_t *a, const int64_t *b, int64_t *c)
{
    for (int64_t m = 0; m < s->m; m++)
        for (int64_t k = 0; k < s->k; k++) {
            uint64_t av = (uint64_t)a[m * s->sam + k * s->sak];
            for (int64_t j = 0; j < s->n; j++) {
                uint64_t prod = av * (uint64_t)b[k * s->sbk + j * s->sbn];
                c[m * s->n + j] = (int64_t)((uint64_t)c[m * s->n + j] + prod);
            }
        }
}

/* Element offsets a_off, b_off, c_off select one matrix of a batch. */
static void gemm_run(num_kind kind, const gemm_shape *s, const void *a, int64_t a_off,
                     const void *b, int64_t b_off, void *c, int64_t c_off)
{
    switch (kind) {
    case NUM_F32: {
        const float *af = (const float *)a + a_off, *bf = (const float *)b + b_off;
        float *cf = (float *)c + c_off;
        gemm_f32_rows(s, af, bf, cf); /* callers make B rows contiguous (sbn == 1) */
        break;
    }
    case NUM_F64:
        gemm_f64(s, (const double *)a + a_off, (const double *)b + b_off, (double *)c + c_off);
        break;
    case NUM_I64:
        gemm_i64(s, (const int64_t *)a + a_off, (const int64_t *)b + b_off,
                 (int64_t *)c + c_off);
        break;
    }
}

/* ---- MatMul ------------------------------------------------------------------------ */

/* numpy matmul: a 1-D A is a row (1, K) and a 1-D B a column (K, 1), and the
 * added dim is dropped from the result; leading dims are batch dims that
 * broadcast. */
typedef struct matmul_shape {
    int64_t m, n, k;
    smelt_tensor a_batch, b_batch, out_batch; /* shapes only */
} matmul_shape;

static smelt_status matmul_shape_of(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *a,
                                    const smelt_tensor *b, matmul_shape *s, smelt_tensor *out)
{
    for (int i = 0; i < 2; i++)
        if ((i ? b : a)->rank == 0)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "input '%s' is a scalar; MatMul needs rank >= 1", input_name(node, i));
    memset(s, 0, sizeof *s);
    int64_t ka = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    s->m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    s->n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    s->k = ka >= 0 ? ka : kb;
    if (dims_conflict(ka, kb)) {
        char ab[160], bb[160];
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "inner dimensions differ: A %s has K=%lld but B %s has K=%lld",
                       dims_str(a, ab, sizeof ab), (long long)ka, dims_str(b, bb, sizeof bb),
                       (long long)kb);
    }
    s->a_batch.rank = a->rank > 2 ? a->rank - 2 : 0;
    s->b_batch.rank = b->rank > 2 ? b->rank - 2 : 0;
    memcpy(s->a_batch.dims, a->dims, sizeof(int64_t) * (size_t)s->a_batch.rank);
    memcpy(s->b_batch.dims, b->dims, sizeof(int64_t) * (size_t)s->b_batch.rank);
    SMELT_TRY(op_broadcast(ctx, node, &s->a_batch, &s->b_batch, &s->out_batch));
    out->dtype = a->dtype;
    out->rank = s->out_batch.rank;
    memcpy(out->dims, s->out_batch.dims, sizeof(int64_t) * (size_t)out->rank);
    if (a->rank >= 2) out->dims[out->rank++] = s->m;
    if (b->rank >= 2) out->dims[out->rank++] = s->n;
    return SMELT_OK;
}

static smelt_status matmul_check(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in)
{
    SMELT_TRY(check_input_dtype(ctx, node, in[0], 0, k_matmul_types));
    return check_same_dtype(ctx, node, in[1], 1, in[0]);
}

static smelt_status matmul_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    matmul_shape s;
    SMELT_TRY(matmul_check(ctx, node, in));
    return matmul_shape_of(ctx, node, in[0], in[1], &s, &out[0]);
}

static smelt_status matmul_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    matmul_shape s;
    smelt_tensor shape;
    SMELT_TRY(matmul_check(ctx, node, in));
    SMELT_TRY(matmul_shape_of(ctx, node, in[0], in[1], &s, &shape));
    num_kind kind = kind_of(in[0]->dtype);
    const void *a, *b;
    void *a_owned, *b_owned = NULL, *c, *c_owned = NULL;
    smelt_status st = operand_as(ctx, node, in[0], kind, &a, &a_owned);
    if (st == SMELT_OK) st = operand_as(ctx, node, in[1], kind, &b, &b_owned);
    if (st == SMELT_OK) st = acc_for(ctx, node, &out[0], kind, &c, &c_owned);
    if (st == SMELT_OK) {
        gemm_shape g = {s.m, s.n, s.k, s.k, 1, s.n, 1};
        int64_t idx[SMELT_MAX_RANK] = {0}, batches = op_numel(&s.out_batch);
        for (int64_t bi = 0; bi < batches; bi++) {
            int64_t a_off = op_broadcast_offset(&s.a_batch, &s.out_batch, idx) * s.m * s.k;
            int64_t b_off = op_broadcast_offset(&s.b_batch, &s.out_batch, idx) * s.k * s.n;
            gemm_run(kind, &g, a, a_off, b, b_off, c, bi * s.m * s.n);
            op_next_index(idx, s.out_batch.dims, s.out_batch.rank);
        }
        acc_store(&out[0], kind, c);
    }
    smelt_free(a_owned);
    smelt_free(b_owned);
    smelt_free(c_owned);
    return st;
}

/* y[batch, i, j] = sum_k A[batch', i, k] * B[batch'', k, j]; the batch dims
 * of A and B broadcast, and a 1-D operand has no i (or j) dim. */
typedef struct matmul_te {
    const te_tensor *a, *b;
    int batch_rank, out_rank;
    int64_t k;
    smelt_dtype dt;
} matmul_te;

static ir_expr *matmul_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const matmul_te *m = user;
    ir_axis k = te_reduce_axis(g, "k", m->k);
    ir_expr *kv = ir_var_ref(&g->b, k.var), *ai[SMELT_MAX_RANK] = {0}, *bi[SMELT_MAX_RANK] = {0};
    int ar = m->a->n_axes, br = m->b->n_axes;
    int a_batch = ar > 2 ? ar - 2 : 0, b_batch = br > 2 ? br - 2 : 0;
    bcast_index(g, m->a, a_batch, idx, m->batch_rank, ai);
    bcast_index(g, m->b, b_batch, idx, m->batch_rank, bi);
    if (ar == 1) {
        ai[0] = kv;
    } else {
        ai[a_batch] = idx[m->batch_rank];
        ai[a_batch + 1] = kv;
    }
    if (br == 1) {
        bi[0] = kv;
    } else {
        bi[b_batch] = kv;
        bi[b_batch + 1] = idx[m->out_rank - 1];
    }
    ir_expr *prod = ir_mul(&g->b, read_as(g, m->a, ai, m->dt), read_as(g, m->b, bi, m->dt));
    return te_reduce(g, IR_REDUCE_SUM, prod, 1, &k);
}

smelt_status op_matmul_shape(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *a,
                             const smelt_tensor *b, smelt_tensor *out)
{
    matmul_shape s;
    return matmul_shape_of(ctx, node, a, b, &s, out);
}

te_tensor *op_matmul_te_sum(op_compute_args *a, const te_tensor *x, const te_tensor *w,
                            smelt_dtype acc_dt, const char *name)
{
    const smelt_tensor *ot = &a->out_type[0];
    matmul_te *m = smelt_arena_alloc(&a->te->arena, sizeof *m);
    if (!m) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory"), NULL;
    *m = (matmul_te){x, w, ot->rank - (x->n_axes >= 2) - (w->n_axes >= 2), ot->rank,
                     x->buf->shape[x->n_axes - 1], acc_dt};
    return te_compute(a->te, name, acc_dt, ot->rank, ot->dims, matmul_body, m, "matmul");
}

static smelt_status matmul_compute(op_compute_args *a)
{
    const te_tensor *x = a->in[0], *w = a->in[1];
    const smelt_tensor *ot = &a->out_type[0];
    matmul_te m = {x, w, ot->rank - (x->n_axes >= 2) - (w->n_axes >= 2), ot->rank,
                   x->buf->shape[x->n_axes - 1], acc_dtype(ot->dtype)};
    return output_via(a, m.dt, matmul_body, &m, "matmul");
}

const op_def op_def_MATMUL = {
    .compute = matmul_compute,
    .infer = matmul_infer,
    .eval = matmul_eval,
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- Gemm ------------------------------------------------------------------------ */

/* Gemm-1..6's broadcast: C broadcasting unidirectionally covers both values. */
OP_ATTRS(GEMM) = {{"alpha", 0, 0}, {"beta", 0, 0}, {"transA", 0, 0}, {"transB", 0, 0}, {"broadcast", 0, 6}, {NULL, 0, 0}};

static smelt_status gemm_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_gemm_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(op_attr_float(ctx, node, "alpha", 1.0f, &a->alpha));
    SMELT_TRY(op_attr_float(ctx, node, "beta", 1.0f, &a->beta));
    SMELT_TRY(op_attr_bool(ctx, node, "transA", false, &a->trans_a));
    SMELT_TRY(op_attr_bool(ctx, node, "transB", false, &a->trans_b));
    bool broadcast;
    return g->opset < 7 ? op_attr_bool(ctx, node, "broadcast", false, &broadcast) : SMELT_OK;
}

/* C broadcasts unidirectionally to (M, N). */
static smelt_status gemm_check_c(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *c,
                                 int64_t m, int64_t n)
{
    int64_t target[2] = {m, n};
    bool ok = c->rank <= 2;
    for (int d = 0; ok && d < c->rank; d++) {
        int64_t cd = c->dims[d], td = target[2 - c->rank + d];
        ok = cd == 1 || !dims_conflict(cd, td);
    }
    if (ok) return SMELT_OK;
    char cb[160];
    return op_errf(ctx, node, SMELT_ERR_SHAPE,
                   "input '%s' of shape %s does not broadcast to the result (%lld, %lld)",
                   input_name(node, 2), dims_str(c, cb, sizeof cb), (long long)m, (long long)n);
}

static smelt_status gemm_shape_of(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, gemm_shape *s)
{
    const op_gemm_attrs *at = node->op_attrs;
    const smelt_tensor *a = in[0], *b = in[1], *c = op_input(node, in, 2);
    SMELT_TRY(check_input_dtype(ctx, node, a, 0, k_matmul_types));
    SMELT_TRY(check_same_dtype(ctx, node, b, 1, a));
    if (c) SMELT_TRY(check_same_dtype(ctx, node, c, 2, a));
    for (int i = 0; i < 2; i++)
        if (in[i]->rank != 2)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' has rank %d, expected 2",
                           input_name(node, i), in[i]->rank);
    int64_t ka = at->trans_a ? a->dims[0] : a->dims[1];
    int64_t kb = at->trans_b ? b->dims[1] : b->dims[0];
    s->m = at->trans_a ? a->dims[1] : a->dims[0];
    s->n = at->trans_b ? b->dims[0] : b->dims[1];
    s->k = ka >= 0 ? ka : kb;
    if (dims_conflict(ka, kb)) {
        char ab[160], bb[160];
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "inner dimensions differ: A %s%s has K=%lld but B %s%s has K=%lld",
                       dims_str(a, ab, sizeof ab), at->trans_a ? " (transposed)" : "",
                       (long long)ka, dims_str(b, bb, sizeof bb),
                       at->trans_b ? " (transposed)" : "", (long long)kb);
    }
    /* Element (m,k) of A' and (k,n) of B' in row-major A and B. */
    s->sam = at->trans_a ? 1 : a->dims[1];
    s->sak = at->trans_a ? a->dims[1] : 1;
    s->sbk = at->trans_b ? 1 : b->dims[1];
    s->sbn = at->trans_b ? b->dims[1] : 1;
    return c ? gemm_check_c(ctx, node, c, s->m, s->n) : SMELT_OK;
}

static smelt_status gemm_infer(smelt_ctx *ctx, const gr_node *node,
                               const smelt_tensor *const *in, smelt_tensor *out)
{
    gemm_shape s;
    SMELT_TRY(gemm_shape_of(ctx, node, in, &s));
    out[0].dtype = in[0]->dtype;
    out[0].rank = 2;
    out[0].dims[0] = s.m;
    out[0].dims[1] = s.n;
    return SMELT_OK;
}

/* Strides of C over (m, n) after broadcasting to (M, N). */
static void c_strides(const smelt_tensor *c, int64_t *sm, int64_t *sn)
{
    *sm = c->rank == 2 && c->dims[0] != 1 ? c->dims[1] : 0;
    *sn = c->rank >= 1 && c->dims[c->rank - 1] != 1 ? 1 : 0;
}

/* Y = alpha * acc + beta * C, in place over the float32 output. */
static void gemm_epilogue_f32(float *y, int64_t m, int64_t n, float alpha, float beta,
                              const smelt_tensor *c)
{
    int64_t sm = 0, sn = 0;
    const float *cv = c ? c->data : NULL;
    if (c) c_strides(c, &sm, &sn);
    for (int64_t i = 0; i < m; i++) {
        float *row = y + i * n;
        if (alpha != 1.0f)
            for (int64_t j = 0; j < n; j++) row[j] *= alpha;
        if (cv)
            for (int64_t j = 0; j < n; j++) row[j] += beta * cv[i * sm + j * sn];
    }
}

/* The other kinds; integers stay exact when alpha and beta are 1. */
static void gemm_epilogue_generic(smelt_tensor *y, num_kind kind, const void *acc, int64_t m,
                                  int64_t n, float alpha, float beta, const smelt_tensor *c)
{
    int64_t sm = 0, sn = 0;
    if (c) c_strides(c, &sm, &sn);
    bool exact_int = kind == NUM_I64 && alpha == 1.0f && (!c || beta == 1.0f);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t o = i * n + j, ci = i * sm + j * sn;
            if (exact_int) {
                uint64_t v = (uint64_t)((const int64_t *)acc)[o];
                if (c) v += (uint64_t)op_get_i64(c, ci);
                op_set_i64(y, o, (int64_t)v);
                continue;
            }
            double v = kind == NUM_I64 ? (double)((const int64_t *)acc)[o]
                                       : ((const double *)acc)[o];
            v *= alpha;
            if (c) v += beta * op_get_f64(c, ci);
            op_set_f64(y, o, v);
        }
}

/* The float32 kernel wants rows of B' contiguous: copy a transposed B once
 * (K*N work against M*N*K for the product). */
static smelt_status transpose_b_f32(smelt_ctx *ctx, const gr_node *node, gemm_shape *s,
                                    const void **b, void **b_owned)
{
    float *bt = smelt_alloc((size_t)(s->k * s->n > 0 ? s->k * s->n : 1) * sizeof(float));
    if (!bt) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory transposing B");
    const float *src = *b;
    for (int64_t k = 0; k < s->k; k++)
        for (int64_t j = 0; j < s->n; j++) bt[k * s->n + j] = src[k * s->sbk + j * s->sbn];
    smelt_free(*b_owned);
    *b_owned = bt;
    *b = bt;
    s->sbk = s->n;
    s->sbn = 1;
    return SMELT_OK;
}

static smelt_status gemm_eval(smelt_ctx *ctx, const gr_node *node,
                              const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_gemm_attrs *at = node->op_attrs;
    const smelt_tensor *cin = op_input(node, in, 2);
    gemm_shape s;
    SMELT_TRY(gemm_shape_of(ctx, node, in, &s));
    num_kind kind = kind_of(in[0]->dtype);
    const void *a, *b;
    void *a_owned, *b_owned = NULL, *acc = NULL;
    smelt_status st = operand_as(ctx, node, in[0], kind, &a, &a_owned);
    if (st == SMELT_OK) st = operand_as(ctx, node, in[1], kind, &b, &b_owned);
    if (st == SMELT_OK && kind == NUM_F32 && s.sbn != 1)
        st = transpose_b_f32(ctx, node, &s, &b, &b_owned);
    if (st == SMELT_OK && kind != NUM_F32) {
        acc = smelt_calloc((size_t)(s.m * s.n > 0 ? s.m * s.n : 1), kind_size(kind));
        if (!acc) st = op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory for the accumulator");
    }
    if (st == SMELT_OK) {
        gemm_run(kind, &s, a, 0, b, 0, kind == NUM_F32 ? out[0].data : acc, 0);
        if (kind == NUM_F32)
            gemm_epilogue_f32(out[0].data, s.m, s.n, at->alpha, at->beta, cin);
        else
            gemm_epilogue_generic(&out[0], kind, acc, s.m, s.n, at->alpha, at->beta, cin);
    }
    smelt_free(a_owned);
    smelt_free(b_owned);
    smelt_free(acc);
    return st;
}

/* y = alpha * (A' B') + beta * C: the product stage, then an epilogue stage
 * when there is anything to add, scale or convert. */
typedef struct gemm_te {
    const te_tensor *a, *b, *c; /* c may be NULL */
    bool trans_a, trans_b;
    int64_t k;
    smelt_dtype acc_dt, epi_dt; /* product; epilogue (float64 for scaled integers) */
    double alpha, beta;
    te_tensor *product;
} gemm_te;

static ir_expr *gemm_product_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gemm_te *m = user;
    ir_axis k = te_reduce_axis(g, "k", m->k);
    ir_expr *kv = ir_var_ref(&g->b, k.var);
    ir_expr *ai[2] = {m->trans_a ? kv : idx[0], m->trans_a ? idx[0] : kv};
    ir_expr *bi[2] = {m->trans_b ? idx[1] : kv, m->trans_b ? kv : idx[1]};
    ir_expr *prod =
        ir_mul(&g->b, read_as(g, m->a, ai, m->acc_dt), read_as(g, m->b, bi, m->acc_dt));
    return te_reduce(g, IR_REDUCE_SUM, prod, 1, &k);
}

static ir_expr *gemm_const(te_graph *g, smelt_dtype dt, double v)
{
    return op_dtype_is_float(dt) ? ir_const_float(&g->b, dt, v)
                                 : ir_const_int(&g->b, dt, (int64_t)v);
}

static ir_expr *gemm_epilogue_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gemm_te *m = user;
    ir_expr *y = read_as(g, m->product, idx, m->epi_dt);
    if (m->alpha != 1.0) y = ir_mul(&g->b, y, gemm_const(g, m->epi_dt, m->alpha));
    if (!m->c) return y;
    ir_expr *ci[2];
    bcast_index(g, m->c, m->c->n_axes, idx, 2, ci);
    ir_expr *c = read_as(g, m->c, ci, m->epi_dt);
    if (m->beta != 1.0 || op_dtype_is_float(m->epi_dt))
        c = ir_mul(&g->b, gemm_const(g, m->epi_dt, m->beta), c);
    return ir_add(&g->b, y, c);
}

static smelt_status gemm_compute(op_compute_args *a)
{
    const op_gemm_attrs *at = a->node->op_attrs;
    const smelt_tensor *ot = &a->out_type[0];
    const te_tensor *c = a->node->n_inputs > 2 ? a->in[2] : NULL;
    smelt_dtype acc_dt = acc_dtype(ot->dtype);
    gemm_te m = {.a = a->in[0],
                 .b = a->in[1],
                 .c = c,
                 .trans_a = at->trans_a,
                 .trans_b = at->trans_b,
                 .k = a->in[0]->buf->shape[at->trans_a ? 0 : 1],
                 .acc_dt = acc_dt,
                 .epi_dt = acc_dt,
                 .alpha = at->alpha,
                 .beta = at->beta};
    /* Integers stay exact when nothing scales them, else go through float64. */
    bool scaled = at->alpha != 1.0f || (c && at->beta != 1.0f);
    if (!op_dtype_is_float(ot->dtype) && scaled) m.epi_dt = SMELT_DT_FLOAT64;
    if (at->alpha == 1.0f && !c) return output_via(a, m.acc_dt, gemm_product_body, &m, "matmul");
    m.product = te_compute(a->te, "y_mm", m.acc_dt, 2, ot->dims, gemm_product_body, &m, "matmul");
    if (!m.product) return smelt_ctx_status(a->ctx);
    a->out[0] = te_compute(a->te, "y", ot->dtype, 2, ot->dims, gemm_epilogue_body, &m, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_GEMM = {
    .compute = gemm_compute,
    .import = gemm_import,
    .infer = gemm_infer,
    .eval = gemm_eval,
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
};

/* ---- Einsum ------------------------------------------------------------------------
 * A generic reference: iterate over the full index space of all labels and
 * multiply the operand elements each index selects.  Repeated labels within
 * one operand (diagonals) fall out naturally by summing their strides. */

#define EINSUM_LETTERS 52
#define EINSUM_LABELS (EINSUM_LETTERS + SMELT_MAX_RANK) /* letters, then ellipsis dims */

static int einsum_label_of(char ch)
{
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
    return -1;
}

static char einsum_label_char(int label)
{
    return (char)(label < 26 ? 'a' + label : 'A' + (label - 26));
}

static smelt_status einsum_parse_term(smelt_ctx *ctx, const gr_node *node, const char *eq,
                                      const char **p, op_einsum_term *t)
{
    bool ellipsis = false;
    t->n = 0;
    for (;;) {
        char ch = **p;
        if (ch == ' ') {
            (*p)++;
            continue;
        }
        int label = einsum_label_of(ch);
        if (label < 0 && ch != '.') return SMELT_OK;
        if (t->n == OP_EINSUM_MAX_TERM)
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "attribute 'equation' is '%s': a term has more than %d subscripts", eq,
                           OP_EINSUM_MAX_TERM);
        if (label >= 0) {
            t->labels[t->n++] = (int8_t)label;
            (*p)++;
            continue;
        }
        if (strncmp(*p, "...", 3) != 0)
            return op_errf(ctx, node, SMELT_ERR_ATTR,
                           "attribute 'equation' is '%s': '.' at position %d is not part of '...'", eq,
                           (int)(*p - eq));
        if (ellipsis)
            return op_errf(ctx, node, SMELT_ERR_ATTR, "attribute 'equation' is '%s': a term has two '...'",
                           eq);
        ellipsis = true;
        t->labels[t->n++] = OP_EINSUM_ELLIPSIS;
        *p += 3;
    }
}

static bool term_has(const op_einsum_term *t, int label)
{
    for (int i = 0; i < t->n; i++)
        if (t->labels[i] == label) return true;
    return false;
}

static smelt_status einsum_check_output(smelt_ctx *ctx, const gr_node *node, const char *eq,
                                        const op_einsum_attrs *a)
{
    for (int i = 0; i < a->out.n; i++) {
        int label = a->out.labels[i];
        if (label == OP_EINSUM_ELLIPSIS) continue;
        bool in_inputs = false;
        for (int k = 0; k < a->n_operands; k++) in_inputs |= term_has(&a->in[k], label);
        if (!in_inputs)
            return op_errf(ctx, node, SMELT_ERR_ATTR,
                           "attribute 'equation' is '%s': output subscript '%c' appears in no input", eq,
                           einsum_label_char(label));
        for (int j = 0; j < i; j++)
            if (a->out.labels[j] == label)
                return op_errf(ctx, node, SMELT_ERR_ATTR,
                               "attribute 'equation' is '%s': output subscript '%c' is repeated", eq,
                               einsum_label_char(label));
    }
    return SMELT_OK;
}

OP_ATTRS(EINSUM) = {{"equation", 0, 0}, {NULL, 0, 0}};

static smelt_status einsum_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_einsum_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    const char *eq;
    SMELT_TRY(op_attr_string(ctx, node, "equation", NULL, &eq));
    if (!eq) return op_errf(ctx, node, SMELT_ERR_ATTR, "missing attribute 'equation'");
    const char *p = eq;
    for (;;) {
        if (a->n_operands == OP_EINSUM_MAX_OPERANDS)
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "attribute 'equation' is '%s', which has more than %d operands", eq,
                           OP_EINSUM_MAX_OPERANDS);
        SMELT_TRY(einsum_parse_term(ctx, node, eq, &p, &a->in[a->n_operands++]));
        if (*p != ',') break;
        p++;
    }
    if (p[0] == '-' && p[1] == '>') {
        p += 2;
        a->explicit_output = true;
        SMELT_TRY(einsum_parse_term(ctx, node, eq, &p, &a->out));
    }
    if (*p)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'equation' is '%s': unexpected character '%c' at position %d", eq, *p,
                       (int)(p - eq));
    if (a->n_operands != node->n_inputs)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'equation' is '%s', which has %d input terms but the node has %d inputs", eq,
                       a->n_operands, node->n_inputs);
    return einsum_check_output(ctx, node, eq, a);
}

/* Sizes of all labels, the output labels, and each operand's stride per label. */
typedef struct einsum_plan {
    int ell_rank; /* dims the ellipsis stands for (broadcast over operands) */
    bool used[EINSUM_LABELS];
    int64_t size[EINSUM_LABELS];
    int out_rank;
    int out_labels[SMELT_MAX_RANK];
    int64_t strides[OP_EINSUM_MAX_OPERANDS][EINSUM_LABELS];
} einsum_plan;

static int term_letters(const op_einsum_term *t)
{
    return t->n - (term_has(t, OP_EINSUM_ELLIPSIS) ? 1 : 0);
}

/* Dims the ellipsis of operand k stands for (0 if it has none). */
static smelt_status einsum_operand_ell(smelt_ctx *ctx, const gr_node *node,
                                       const op_einsum_term *t, const smelt_tensor *x, int k,
                                       int *ell)
{
    int letters = term_letters(t);
    bool has_ell = term_has(t, OP_EINSUM_ELLIPSIS);
    if (x->rank == letters || (has_ell && x->rank > letters)) {
        *ell = x->rank - letters;
        return SMELT_OK;
    }
    return op_errf(ctx, node, SMELT_ERR_SHAPE,
                   "input '%s' has rank %d but its equation term has %d subscripts%s",
                   input_name(node, k), x->rank, letters, has_ell ? " and '...'" : "");
}

/* Record that axis `axis` of operand k has label `label`.  Letters must agree
 * in size; ellipsis dims broadcast (numpy rules). */
static smelt_status einsum_merge(smelt_ctx *ctx, const gr_node *node, einsum_plan *p, int label,
                                 const smelt_tensor *x, int k, int axis)
{
    int64_t d = x->dims[axis], *cur = &p->size[label];
    if (!p->used[label]) {
        p->used[label] = true;
        *cur = d;
        return SMELT_OK;
    }
    bool ellipsis = label >= EINSUM_LETTERS;
    if (*cur == d || (ellipsis && d == 1)) return SMELT_OK;
    if (ellipsis && *cur == 1) {
        *cur = d;
        return SMELT_OK;
    }
    if (!dims_conflict(*cur, d)) {
        if (*cur < 0) *cur = d; /* a static size wins over a symbolic one */
        return SMELT_OK;
    }
    if (ellipsis)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input '%s': dim %d of size %lld does not broadcast with size %lld in "
                       "the '...' dims of other inputs",
                       input_name(node, k), axis, (long long)d, (long long)*cur);
    return op_errf(ctx, node, SMELT_ERR_SHAPE,
                   "input '%s': subscript '%c' has size %lld here but %lld elsewhere",
                   input_name(node, k), einsum_label_char(label), (long long)d,
                   (long long)*cur);
}

/* Labels of each axis of operand k. */
static void einsum_axis_labels(const op_einsum_term *t, int ell, int ell_rank, int *labels)
{
    int axis = 0;
    for (int i = 0; i < t->n; i++) {
        if (t->labels[i] != OP_EINSUM_ELLIPSIS) {
            labels[axis++] = t->labels[i];
            continue;
        }
        for (int j = 0; j < ell; j++) labels[axis++] = EINSUM_LETTERS + (ell_rank - ell) + j;
    }
}

static smelt_status einsum_add_out(smelt_ctx *ctx, const gr_node *node, einsum_plan *p, int label)
{
    if (p->out_rank == SMELT_MAX_RANK)
        return op_errf(ctx, node, SMELT_ERR_LIMIT, "the output would have more than %d dims",
                       SMELT_MAX_RANK);
    p->out_labels[p->out_rank++] = label;
    return SMELT_OK;
}

/* Implicit output: the ellipsis dims, then the letters used exactly once, in
 * ASCII order (upper case first, as numpy). */
static smelt_status einsum_output_labels(smelt_ctx *ctx, const gr_node *node,
                                         const op_einsum_attrs *a, einsum_plan *p)
{
    if (a->explicit_output) {
        for (int i = 0; i < a->out.n; i++) {
            if (a->out.labels[i] != OP_EINSUM_ELLIPSIS) {
                SMELT_TRY(einsum_add_out(ctx, node, p, a->out.labels[i]));
                continue;
            }
            for (int j = 0; j < p->ell_rank; j++)
                SMELT_TRY(einsum_add_out(ctx, node, p, EINSUM_LETTERS + j));
        }
        return SMELT_OK;
    }
    for (int j = 0; j < p->ell_rank; j++)
        SMELT_TRY(einsum_add_out(ctx, node, p, EINSUM_LETTERS + j));
    for (int pass = 0; pass < 2; pass++)
        for (int letter = 0; letter < 26; letter++) {
            int label = pass == 0 ? 26 + letter : letter, count = 0;
            for (int k = 0; k < a->n_operands; k++)
                for (int i = 0; i < a->in[k].n; i++) count += a->in[k].labels[i] == label;
            if (count == 1) SMELT_TRY(einsum_add_out(ctx, node, p, label));
        }
    return SMELT_OK;
}

static smelt_status einsum_plan_of(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, einsum_plan *p)
{
    const op_einsum_attrs *a = node->op_attrs;
    int ell[OP_EINSUM_MAX_OPERANDS];
    memset(p, 0, sizeof *p);
    if (a->n_operands != node->n_inputs)
        return op_errf(ctx, node, SMELT_ERR_ATTR, "the equation has %d input terms but the "
                       "node has %d inputs", a->n_operands, node->n_inputs);
    for (int k = 0; k < a->n_operands; k++) {
        if (!in[k]) return op_errf(ctx, node, SMELT_ERR_MODEL, "input %d is missing", k);
        SMELT_TRY(check_input_dtype(ctx, node, in[k], k, k_einsum_types));
        SMELT_TRY(check_same_dtype(ctx, node, in[k], k, in[0]));
        SMELT_TRY(einsum_operand_ell(ctx, node, &a->in[k], in[k], k, &ell[k]));
        if (ell[k] > p->ell_rank) p->ell_rank = ell[k];
    }
    for (int k = 0; k < a->n_operands; k++) {
        int labels[SMELT_MAX_RANK];
        int64_t stride = 1;
        einsum_axis_labels(&a->in[k], ell[k], p->ell_rank, labels);
        for (int axis = in[k]->rank - 1; axis >= 0; axis--) {
            SMELT_TRY(einsum_merge(ctx, node, p, labels[axis], in[k], k, axis));
            if (in[k]->dims[axis] != 1) p->strides[k][labels[axis]] += stride;
            stride *= in[k]->dims[axis];
        }
    }
    return einsum_output_labels(ctx, node, a, p);
}

static smelt_status einsum_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    einsum_plan p;
    SMELT_TRY(einsum_plan_of(ctx, node, in, &p));
    out[0].dtype = in[0]->dtype;
    out[0].rank = p.out_rank;
    for (int i = 0; i < p.out_rank; i++) out[0].dims[i] = p.size[p.out_labels[i]];
    return SMELT_OK;
}

/* The iteration space: output labels first (so the output offset is the
 * running count divided by the reduction size), then the summed labels. */
typedef struct einsum_loop {
    int rank;
    int labels[EINSUM_LABELS];
    int64_t dims[EINSUM_LABELS];
    int64_t total, reduce_count;
} einsum_loop;

static smelt_status einsum_loop_of(smelt_ctx *ctx, const gr_node *node, const einsum_plan *p,
                                   einsum_loop *l)
{
    bool in_out[EINSUM_LABELS] = {false};
    l->rank = 0;
    l->total = 1;
    l->reduce_count = 1;
    for (int i = 0; i < p->out_rank; i++) in_out[p->out_labels[i]] = true;
    for (int i = 0; i < p->out_rank; i++) l->labels[l->rank++] = p->out_labels[i];
    for (int label = 0; label < EINSUM_LABELS; label++)
        if (p->used[label] && !in_out[label]) l->labels[l->rank++] = label;
    for (int i = 0; i < l->rank; i++) {
        l->dims[i] = p->size[l->labels[i]];
        if (smelt_mul_overflow_i64(l->total, l->dims[i], &l->total))
            return op_errf(ctx, node, SMELT_ERR_LIMIT, "the iteration space is too large");
        if (i >= p->out_rank) l->reduce_count *= l->dims[i];
    }
    return SMELT_OK;
}

/* Sums the products over the iteration space (l->total > 0).  The innermost
 * label runs as a strided loop, so offsets are recomputed once per row. */
static void einsum_accumulate(const einsum_plan *p, const einsum_loop *l, int n_ops,
                              num_kind kind, const void *const *data, void *acc)
{
    int outer_rank = l->rank > 0 ? l->rank - 1 : 0;
    int64_t inner = l->rank > 0 ? l->dims[l->rank - 1] : 1;
    int64_t step[OP_EINSUM_MAX_OPERANDS], base[OP_EINSUM_MAX_OPERANDS];
    int64_t idx[EINSUM_LABELS] = {0};
    for (int k = 0; k < n_ops; k++)
        step[k] = l->rank > 0 ? p->strides[k][l->labels[l->rank - 1]] : 0;
    for (int64_t t = 0; t < l->total; t += inner) {
        for (int k = 0; k < n_ops; k++) {
            base[k] = 0;
            for (int i = 0; i < outer_rank; i++) base[k] += idx[i] * p->strides[k][l->labels[i]];
        }
        for (int64_t j = 0; j < inner; j++) {
            int64_t o = (t + j) / l->reduce_count;
            if (kind == NUM_F64) {
                double prod = 1;
                for (int k = 0; k < n_ops; k++)
                    prod *= ((const double *)data[k])[base[k] + j * step[k]];
                ((double *)acc)[o] += prod;
            } else {
                uint64_t prod = 1;
                for (int k = 0; k < n_ops; k++)
                    prod *= (uint64_t)((const int64_t *)data[k])[base[k] + j * step[k]];
                ((int64_t *)acc)[o] = (int64_t)((uint64_t)((int64_t *)acc)[o] + prod);
            }
        }
        op_next_index(idx, l->dims, outer_rank);
    }
}

static smelt_status einsum_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    einsum_plan p;
    einsum_loop l;
    SMELT_TRY(einsum_plan_of(ctx, node, in, &p));
    SMELT_TRY(einsum_loop_of(ctx, node, &p, &l));
    int n_ops = node->n_inputs;
    num_kind kind = kind_of(in[0]->dtype) == NUM_I64 ? NUM_I64 : NUM_F64;
    const void *data[OP_EINSUM_MAX_OPERANDS];
    void *owned[OP_EINSUM_MAX_OPERANDS] = {NULL}, *acc, *acc_owned = NULL;
    smelt_status st = SMELT_OK;
    for (int k = 0; k < n_ops && st == SMELT_OK; k++)
        st = operand_as(ctx, node, in[k], kind, &data[k], &owned[k]);
    if (st == SMELT_OK) st = acc_for(ctx, node, &out[0], kind, &acc, &acc_owned);
    if (st == SMELT_OK && l.total > 0) einsum_accumulate(&p, &l, n_ops, kind, data, acc);
    if (st == SMELT_OK) acc_store(&out[0], kind, acc);
    for (int k = 0; k < n_ops; k++) smelt_free(owned[k]);
    smelt_free(acc_owned);
    return st;
}

/* y[out labels] = sum over the other labels of the product of the operands,
 * each indexed by its axes' labels: a letter repeated within one operand
 * reuses one index (a diagonal), and size-1 dims of '...' broadcast. */
typedef struct einsum_te {
    te_tensor *const *ops;
    int n_ops;
    einsum_plan plan;
    int op_labels[OP_EINSUM_MAX_OPERANDS][SMELT_MAX_RANK];
    smelt_dtype dt;
} einsum_te;

static bool einsum_is_output(const einsum_plan *p, int label)
{
    for (int i = 0; i < p->out_rank; i++)
        if (p->out_labels[i] == label) return true;
    return false;
}

/* Reduce axes for the summed labels; returns how many, fills label_idx. */
static int einsum_reduce_axes(te_graph *g, const einsum_plan *p, ir_axis *axes,
                              ir_expr **label_idx)
{
    int n = 0;
    for (int label = 0; label < EINSUM_LABELS; label++) {
        if (!p->used[label] || einsum_is_output(p, label)) continue;
        char name[16];
        if (label < EINSUM_LETTERS) snprintf(name, sizeof name, "r%c", einsum_label_char(label));
        else snprintf(name, sizeof name, "re%d", label - EINSUM_LETTERS);
        axes[n] = te_reduce_axis(g, name, p->size[label]);
        label_idx[label] = ir_var_ref(&g->b, axes[n].var);
        n++;
    }
    return n;
}

static ir_expr *einsum_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const einsum_te *e = user;
    ir_expr *label_idx[EINSUM_LABELS] = {0};
    ir_axis axes[EINSUM_LABELS];
    for (int i = 0; i < e->plan.out_rank; i++) label_idx[e->plan.out_labels[i]] = idx[i];
    int n_red = einsum_reduce_axes(g, &e->plan, axes, label_idx);
    ir_expr *prod = NULL;
    for (int k = 0; k < e->n_ops; k++) {
        const te_tensor *x = e->ops[k];
        ir_expr *xi[SMELT_MAX_RANK] = {0};
        for (int d = 0; d < x->n_axes; d++)
            xi[d] = x->buf->shape[d] == 1 ? ir_int(&g->b, 0) : label_idx[e->op_labels[k][d]];
        ir_expr *v = read_as(g, x, xi, e->dt);
        prod = prod ? ir_mul(&g->b, prod, v) : v;
    }
    return n_red ? te_reduce(g, IR_REDUCE_SUM, prod, n_red, axes) : prod;
}

static smelt_status einsum_compute(op_compute_args *a)
{
    const op_einsum_attrs *at = a->node->op_attrs;
    einsum_te e = {.ops = a->in, .n_ops = a->node->n_inputs};
    smelt_tensor types[OP_EINSUM_MAX_OPERANDS];
    const smelt_tensor *in[OP_EINSUM_MAX_OPERANDS];
    if (e.n_ops > OP_EINSUM_MAX_OPERANDS)
        return op_errf(a->ctx, a->node, SMELT_ERR_LIMIT, "more than %d operands",
                       OP_EINSUM_MAX_OPERANDS);
    for (int k = 0; k < e.n_ops; k++) {
        const te_tensor *x = a->in[k];
        if (!x) return op_errf(a->ctx, a->node, SMELT_ERR_MODEL, "input %d is missing", k);
        types[k] = (smelt_tensor){.dtype = x->buf->dtype, .rank = x->n_axes};
        memcpy(types[k].dims, x->buf->shape, sizeof(int64_t) * (size_t)x->n_axes);
        in[k] = &types[k];
    }
    SMELT_TRY(einsum_plan_of(a->ctx, a->node, in, &e.plan));
    for (int k = 0; k < e.n_ops; k++)
        einsum_axis_labels(&at->in[k], in[k]->rank - term_letters(&at->in[k]), e.plan.ell_rank,
                           e.op_labels[k]);
    e.dt = acc_dtype(a->out_type[0].dtype);
    bool reduces = false;
    for (int label = 0; label < EINSUM_LABELS; label++)
        reduces |= e.plan.used[label] && !einsum_is_output(&e.plan, label);
    return output_via(a, e.dt, einsum_body, &e, reduces ? "reduce" : "injective");
}

const op_def op_def_EINSUM = {
    .compute = einsum_compute,
    .import = einsum_import,
    .infer = einsum_infer,
    .eval = einsum_eval,
    .min_inputs = 1,
    .max_inputs = -1,
    .min_outputs = 1,
    .max_outputs = 1,
};
