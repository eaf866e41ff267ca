/* MatMulPacked: a matrix product whose B was packed at compile time into
 * column panels (made by passes/pack_weights.c, refused by the importer:
 * OP_FLAG_INTERNAL).
 *
 *   A  [..., M, K]   float32, any batch dims
 *   Bp [P, K, nb]    float32: Bp[p, k, c] = B[k, p*nb + c], zero past column n
 *   Y  [..., M, n]   attribute n: B's column count, (P-1)*nb < n <= P*nb
 *
 * A tile of nb output columns then reads one contiguous K x nb panel (one
 * stream the prefetchers follow) instead of nb columns of every row of B.
 * The reference kernel sums in double; the compute is MatMul's sum with B
 * read through the panel index (tag "matmul_packed", which the default
 * schedule tiles one panel per tile column).
 */
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

#define PACKED_N_MAX ((int64_t)1 << 40) /* keeps P * nb and the offsets in range */

static const char *input_name(const gr_node *node, int i)
{
    return i < node->n_inputs && node->inputs[i] ? node->inputs[i]->name : "?";
}

typedef struct packed_attrs {
    int64_t n;
} packed_attrs;

static smelt_status packed_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    packed_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return smelt_ctx_status(ctx);
    SMELT_TRY(op_attr_int(ctx, node, "n", -1, &a->n));
    if (a->n < 1 || a->n > PACKED_N_MAX)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'n' (B's column count) is %lld; expected 1 to %lld",
                       (long long)a->n, (long long)PACKED_N_MAX);
    return SMELT_OK;
}

static smelt_status check_f32(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *t, int i)
{
    if (t->dtype != SMELT_DT_FLOAT32)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input '%s' has dtype %s; MatMulPacked is float32",
                       input_name(node, i), smelt_dtype_name(t->dtype));
    return SMELT_OK;
}

/* The shapes fit together: A [..., M, K], Bp [P, K, nb] static with
 * (P-1)*nb < n <= P*nb. */
static smelt_status packed_check(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in)
{
    const packed_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *bp = in[1];
    if (!a) return op_errf(ctx, node, SMELT_ERR_INTERNAL, "attributes were not imported");
    SMELT_TRY(check_f32(ctx, node, x, 0));
    SMELT_TRY(check_f32(ctx, node, bp, 1));
    if (x->rank < 2)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input A '%s' has rank %d; expected [..., M, K]",
                       input_name(node, 0), x->rank);
    if (bp->rank != 3 || !op_dims_static(bp) || bp->dims[2] < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input Bp '%s' must be static [P, K, nb] with nb >= 1", input_name(node, 1));
    int64_t p = bp->dims[0], k = bp->dims[1], nb = bp->dims[2];
    if (p != (a->n + nb - 1) / nb)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input Bp '%s' has %lld panels of %lld columns; n = %lld needs %lld",
                       input_name(node, 1), (long long)p, (long long)nb, (long long)a->n,
                       (long long)((a->n + nb - 1) / nb));
    int64_t ka = x->dims[x->rank - 1];
    if (ka >= 0 && ka != k)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "inner dimensions differ: A '%s' has K=%lld but Bp '%s' has K=%lld",
                       input_name(node, 0), (long long)ka, input_name(node, 1), (long long)k);
    return SMELT_OK;
}

static smelt_status packed_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(packed_check(ctx, node, in));
    const packed_attrs *a = node->op_attrs;
    op_copy_shape(&out[0], in[0]);
    out[0].dims[out[0].rank - 1] = a->n;
    return SMELT_OK;
}

static smelt_status packed_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(packed_check(ctx, node, in));
    const packed_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *bp = in[1];
    const float *xd = x->data, *bd = bp->data;
    float *y = out[0].data;
    int64_t k = bp->dims[1], nb = bp->dims[2], n = a->n;
    int64_t rows = op_numel(&out[0]) / n; /* batch * M */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            const float *panel = bd + (j / nb) * k * nb + j % nb;
            for (int64_t kk = 0; kk < k; kk++) acc += (double)xd[r * k + kk] * panel[kk * nb];
            y[r * n + j] = (float)acc;
        }
    return SMELT_OK;
}

/* y[..., i, j] = sum_k A[..., i, k] * Bp[j / nb, k, j % nb] */
typedef struct packed_te {
    const te_tensor *a, *bp;
    int64_t k, nb;
} packed_te;

static ir_expr *packed_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const packed_te *m = user;
    ir_builder *b = &g->b;
    ir_axis k = te_reduce_axis(g, "k", m->k);
    ir_expr *kv = ir_var_ref(b, k.var), *ai[SMELT_MAX_RANK], *bi[3];
    int r = m->a->n_axes;
    for (int d = 0; d < r - 1; d++) ai[d] = idx[d];
    ai[r - 1] = kv;
    ir_expr *j = idx[r - 1], *nb = ir_int(b, m->nb);
    bi[0] = ir_binary(b, IR_FLOORDIV, j, nb);
    bi[1] = kv;
    bi[2] = ir_binary(b, IR_FLOORMOD, j, nb);
    ir_expr *prod = ir_mul(b, te_read(g, m->a, ai), te_read(g, m->bp, bi));
    return te_reduce(g, IR_REDUCE_SUM, prod, 1, &k);
}

static smelt_status packed_compute(op_compute_args *a)
{
    const smelt_tensor *ot = &a->out_type[0];
    packed_te *m = smelt_arena_alloc(&a->te->arena, sizeof *m);
    if (!m) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    m->a = a->in[0];
    m->bp = a->in[1];
    m->k = m->bp->buf->shape[1];
    m->nb = m->bp->buf->shape[2];
    a->out[0] = te_compute(a->te, "y", SMELT_DT_FLOAT32, ot->rank, ot->dims, packed_body, m,
                           "matmul_packed");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_MATMUL_PACKED = {
    .compute = packed_compute,
    .import = packed_import,
    .infer = packed_infer,
    .eval = packed_eval,
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = OP_FLAG_INTERNAL,
};
