/* Det (opsets 11-28): the determinant of each trailing M x M matrix.
 *
 * The reference kernel factors in double (LU with partial pivoting) and
 * rounds once.  The compiled form expands along the first row (cofactors,
 * in double) for M up to DET_MAX_EXPANDED; larger matrices are refused in
 * compiled code (an elimination needs a loop the te form cannot express),
 * naming the node. */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

#define DET_MAX_EXPANDED 4

static smelt_status det_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    static const smelt_dtype k_floats[] = {SMELT_DT_FLOAT16, SMELT_DT_FLOAT32, SMELT_DT_FLOAT64,
                                           SMELT_DT_BFLOAT16, SMELT_DT_UNDEFINED};
    const smelt_tensor *x = in[0];
    SMELT_TRY(op_check_dtype(ctx, node, x, "input 'X'", k_floats));
    if (x->rank < 2)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "X has rank %d; expected at least 2", x->rank);
    int64_t m = x->dims[x->rank - 1], m2 = x->dims[x->rank - 2];
    if (m >= 0 && m2 >= 0 && m != m2)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "X's matrices are %lld x %lld; expected square",
                       (long long)m2, (long long)m);
    out[0].dtype = x->dtype;
    out[0].rank = x->rank - 2;
    for (int d = 0; d < out[0].rank; d++) out[0].dims[d] = x->dims[d];
    return SMELT_OK;
}

/* det of the m x m matrix a (row-major, overwritten) by elimination. */
static double det_lu(double *a, int64_t m)
{
    double det = 1.0;
    for (int64_t k = 0; k < m; k++) {
        int64_t p = k;
        for (int64_t i = k + 1; i < m; i++)
            if (fabs(a[i * m + k]) > fabs(a[p * m + k])) p = i;
        if (a[p * m + k] == 0.0) return 0.0;
        if (p != k) {
            for (int64_t j = 0; j < m; j++) {
                double t = a[k * m + j];
                a[k * m + j] = a[p * m + j];
                a[p * m + j] = t;
            }
            det = -det;
        }
        det *= a[k * m + k];
        for (int64_t i = k + 1; i < m; i++) {
            double f = a[i * m + k] / a[k * m + k];
            for (int64_t j = k; j < m; j++) a[i * m + j] -= f * a[k * m + j];
        }
    }
    return det;
}

static smelt_status det_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    int64_t m = x->dims[x->rank - 1], n = op_numel(&out[0]);
    double *a = smelt_calloc(m ? (size_t)(m * m) : 1, sizeof *a);
    if (!a) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t b = 0; b < n; b++) {
        for (int64_t i = 0; i < m * m; i++) a[i] = op_get_f64(x, b * m * m + i);
        op_set_f64(&out[0], b, det_lu(a, m));
    }
    smelt_free(a);
    return SMELT_OK;
}

typedef struct det_te {
    const te_tensor *x;
    int rank;
    int64_t m;
} det_te;

/* The determinant of the rows from `row` on and the columns in `cols`
 * (a bit set), expanded along its first row. */
static ir_expr *det_expand(te_graph *g, const det_te *s, ir_expr **xi, int64_t row, unsigned cols)
{
    ir_builder *b = &g->b;
    ir_expr *acc = NULL;
    int sign = 1;
    xi[s->rank] = ir_int(b, row);
    for (int64_t c = 0; c < s->m; c++) {
        if (!(cols & (1u << c))) continue;
        xi[s->rank] = ir_int(b, row);
        xi[s->rank + 1] = ir_int(b, c);
        ir_expr *v = ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->x, xi));
        unsigned rest = cols & ~(1u << c);
        if (rest) v = ir_mul(b, v, det_expand(g, s, xi, row + 1, rest));
        acc = !acc ? v : sign > 0 ? ir_add(b, acc, v) : ir_sub(b, acc, v);
        sign = -sign;
    }
    return acc;
}

static ir_expr *det_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const det_te *s = user;
    ir_expr *xi[SMELT_MAX_RANK];
    for (int d = 0; d < s->rank; d++) xi[d] = idx[d];
    if (s->m == 0) return ir_const_float(&g->b, s->x->buf->dtype, 1.0);
    return ir_cast(&g->b, s->x->buf->dtype, det_expand(g, s, xi, 0, (1u << s->m) - 1));
}

static smelt_status det_compute(op_compute_args *a)
{
    det_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    const smelt_tensor *o = &a->out_type[0];
    *s = (det_te){a->in[0], o->rank, a->in[0]->buf->shape[a->in[0]->n_axes - 1]};
    if (s->m > DET_MAX_EXPANDED)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "compiled Det takes matrices up to %d x %d; these are %lld x %lld (use the "
                       "reference executor)",
                       DET_MAX_EXPANDED, DET_MAX_EXPANDED, (long long)s->m, (long long)s->m);
    a->out[0] = te_compute(a->te, "y", o->dtype, o->rank, o->dims, det_body, s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_DET = {
    .compute = det_compute, .infer = det_infer, .eval = det_eval,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};
