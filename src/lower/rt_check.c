/* Which ops take a run-time dim (see rt_check.h). */
#include "lower/rt_check.h"

#include "ops/data.h"
#include "ops/norm.h"
#include "ops/op.h"

static const char *rt_name(const gr_graph *g, int k) { return gr_graph_root(g)->rt_dims[k].name; }

static int64_t prod(const gr_value *v, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++) p *= v->dims[d];
    return p;
}

/* x's rows keep their place in y's layout (both at the dims' maxima): the
 * same run-time dims in the same order, each with the same elements before
 * and after it.  Then an index map over the flat index (Reshape) sends a
 * row of x to the same row of y. */
static bool same_rows(const gr_graph *g, const gr_value *x, const gr_value *y)
{
    int dx = -1, dy = -1;
    for (;;) {
        do dx++; while (dx < x->rank && gr_value_rt_dim(g, x, dx) < 0);
        do dy++; while (dy < y->rank && gr_value_rt_dim(g, y, dy) < 0);
        if (dx == x->rank || dy == y->rank) return dx == x->rank && dy == y->rank;
        if (gr_value_rt_dim(g, x, dx) != gr_value_rt_dim(g, y, dy) ||
            prod(x, 0, dx) != prod(y, 0, dy) || prod(x, dx + 1, x->rank) != prod(y, dy + 1, y->rank))
            return false;
    }
}

/* Every run-time dim of the node's values sits on the same axis of each of
 * them, with the same size (Slice, Concat, Split: they do not act on it). */
static bool axes_kept(const gr_graph *g, const gr_node *n)
{
    const gr_value *out = n->outputs[0];
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        const gr_value *v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (!v || v->constant) continue;
        for (int d = 0; d < v->rank; d++)
            if (gr_value_rt_dim(g, v, d) >= 0 && (!out || out->rank != v->rank || out->dims[d] != v->dims[d]))
                return false;
    }
    return true;
}

static int count_rt(const gr_graph *g, const gr_value *v)
{
    int c = 0;
    for (int d = 0; v && d < v->rank; d++) c += gr_value_rt_dim(g, v, d) >= 0;
    return c;
}

static bool rt_in(const gr_graph *g, const gr_value *v, int64_t from, int64_t to)
{
    for (int64_t d = from < 0 ? 0 : from; v && d < to && d < v->rank; d++)
        if (gr_value_rt_dim(g, v, (int)d) >= 0) return true;
    return false;
}

static int64_t norm_axis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

/* Concat: run-time dims kept on the other axes; along its axis an input
 * may follow a run-time dim (the output then does: rt_dims.c found every
 * such dim one shorter one below the maximum, so at most one input does),
 * and the compute takes the later inputs' starts at run time. */
static bool concat_takes_rt(const gr_graph *g, const gr_node *n)
{
    const op_axis_attrs *a = n->op_attrs;
    const gr_value *out = n->outputs[0];
    int64_t axis = norm_axis(a ? a->axis : 1, out->rank);
    for (int k = 0; k < n->n_inputs + 1; k++) {
        const gr_value *v = k < n->n_inputs ? n->inputs[k] : out;
        if (!v || v->constant) continue;
        for (int d = 0; d < v->rank; d++)
            if (d != axis && gr_value_rt_dim(g, v, d) >= 0 &&
                (out->rank != v->rank || out->dims[d] != v->dims[d]))
                return false;
    }
    return true;
}

/* Constant indices in [0, limit): the same elements at every length (x[:, 0]). */
static bool indices_below(const gr_value *idx, int64_t limit)
{
    const smelt_tensor *t = idx ? idx->constant : NULL;
    if (!t || (t->dtype != SMELT_DT_INT64 && t->dtype != SMELT_DT_INT32)) return false;
    int64_t n = smelt_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = t->dtype == SMELT_DT_INT64 ? ((const int64_t *)t->data)[i]
                                               : ((const int32_t *)t->data)[i];
        if (v < 0 || v >= limit) return false;
    }
    return true;
}

/* Whether the op's compute takes the node's run-time dims at run time. */
static bool takes_rt(const gr_graph *g, const gr_node *n)
{
    const gr_value *x = n->inputs[0], *y = n->outputs[0];
    op_pattern pat = op_get(n->op)->pattern;
    if (pat == OP_PATTERN_ELEMWISE || pat == OP_PATTERN_BROADCAST) return true;
    switch (n->op) {
    case OP_FUSED_ATTENTION: /* lengths at run time; the compute refuses other dims */
    case OP_MATMUL:
    case OP_GEMM:
    case OP_MATMUL_PACKED:
    case OP_TRANSPOSE:
    case OP_IDENTITY:
    /* max and sums of the run's elements: a reduction stops at its length */
    case OP_REDUCE_SUM:
    case OP_REDUCE_MAX:
    case OP_REDUCE_MIN:
    case OP_REDUCE_PROD:
    case OP_REDUCE_L1:
    case OP_REDUCE_L2:
    case OP_REDUCE_SUM_SQUARE:
    case OP_REDUCE_LOG_SUM:
    case OP_REDUCE_LOG_SUM_EXP: return true;
    case OP_REDUCE_MEAN: /* divides by the count at compile time */
        return count_rt(g, x) == count_rt(g, y);
    case OP_SOFTMAX:
    case OP_LOG_SOFTMAX: {
        const op_softmax_attrs *a = n->op_attrs;
        return !a->coerce_2d || !rt_in(g, x, norm_axis(a->axis, x->rank), x->rank - 1);
    }
    case OP_LAYER_NORMALIZATION: { /* the mean divides by the count at compile time */
        const op_layernorm_attrs *a = n->op_attrs;
        return !rt_in(g, x, norm_axis(a->axis, x->rank), x->rank);
    }
    case OP_GATHER: { /* indices wrap and are checked against the axis at its maximum */
        const op_axis_attrs *a = n->op_attrs;
        int64_t ax = norm_axis(a->axis, x->rank);
        return !rt_in(g, x, ax, ax + 1) ||
               indices_below(n->inputs[1], gr_graph_root(g)->rt_dims[gr_value_rt_dim(g, x, (int)ax)].min);
    }
    case OP_RESHAPE:
    case OP_FLATTEN:
    case OP_SQUEEZE:
    case OP_UNSQUEEZE: return same_rows(g, x, y);
    case OP_CONCAT: return concat_takes_rt(g, n);
    case OP_GATHER_ND: /* lookups are rows: a count of index tuples, not of the data */
        return count_rt(g, x) == 0 && !rt_in(g, n->inputs[1], n->inputs[1]->rank - 1, n->inputs[1]->rank);
    /* its count is the run-time dim: the kernel writes it (gr_rt_dim.data) */
    case OP_NON_MAX_SUPPRESSION:
    case OP_NON_ZERO:
    case OP_COMPRESS:
    case OP_UNIQUE: return count_rt(g, x) == 0 && (n->n_inputs < 2 || count_rt(g, n->inputs[1]) == 0);
    case OP_ROI_ALIGN: /* regions are rows; the image is read at any index */
        return !rt_in(g, x, 0, x->rank) && !rt_in(g, n->inputs[1], 1, 2) && !rt_in(g, y, 1, y->rank);
    case OP_SLICE:
    case OP_SPLIT: return axes_kept(g, n);
    default: return false;
    }
}

/* The first of the node's values with a run-time dim, and that dim. */
static const gr_value *rt_value(const gr_graph *g, const gr_node *n, int *dim)
{
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        const gr_value *v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        for (int d = 0; v && d < v->rank; d++)
            if (gr_value_rt_dim(g, v, d) >= 0) {
                *dim = d;
                return v;
            }
    }
    return NULL;
}

static bool has_rt_dim(const gr_graph *g, const gr_value *v, int k)
{
    for (int d = 0; v && d < v->rank; d++)
        if (gr_value_rt_dim(g, v, d) == k) return true;
    return false;
}

/* The input with a data-dependent count that the node's output does not
 * have (a reduction over it, a product contracting it, a scatter of its
 * rows), and that dim; NULL when none.  A count may be 0 while loops run
 * at least once (lower.c clamps run-time extents to 1), so such an op
 * would take a row that does not exist. */
static const gr_value *drops_count(const gr_graph *g, const gr_node *n, int *dim)
{
    const gr_graph *root = gr_graph_root(g);
    for (int k = 0; k < n->n_inputs; k++) {
        const gr_value *v = n->inputs[k];
        for (int d = 0; v && d < v->rank; d++) {
            int r = gr_value_rt_dim(g, v, d);
            if (r < 0 || !root->rt_dims[r].data || has_rt_dim(g, n->outputs[0], r)) continue;
            *dim = d;
            return v;
        }
    }
    return NULL;
}

smelt_status lower_check_rt_dims(smelt_ctx *ctx, const gr_graph *g)
{
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        int d;
        const gr_value *c = n->n_outputs ? drops_count(g, n, &d) : NULL;
        if (c)
            return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                           "'%s' has the data-dependent count '%s' (dim %d) and the output does "
                           "not: compiled code does not reduce over a count yet (it can be 0); "
                           "the reference executor runs it (--reference)",
                           c->name, rt_name(g, gr_value_rt_dim(g, c, d)), d);
        const gr_value *v = rt_value(g, n, &d);
        if (!v || (n->n_inputs && n->inputs[0] && n->n_outputs && n->outputs[0] && takes_rt(g, n)))
            continue;
        const char *name = rt_name(g, gr_value_rt_dim(g, v, d));
        if (gr_graph_root(g)->rt_dims[gr_value_rt_dim(g, v, d)].data)
            return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                           "'%s' has the data-dependent count '%s' (dim %d), which this op does "
                           "not take at run time yet; the reference executor runs it (--reference)",
                           v->name, name, d);
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                       "'%s' has the run-time dim '%s' (dim %d), which this op does not take at "
                       "run time yet; give the dim one value (--dim %s=N)",
                       v->name, name, d, name);
    }
    return SMELT_OK;
}
