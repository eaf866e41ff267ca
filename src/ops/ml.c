/* ai.onnx.ml ops: Binarizer (ml opset 1) and TreeEnsemble (ml opset 5).
 * (ArrayFeatureExtractor is a gather: data.c.)
 *
 * Binarizer: y = x > threshold ? 1 : 0 in x's type, compared in double
 * (exact for every type it takes; numpy compares a float32 array with the
 * threshold in float32, which double gives too).
 *
 * TreeEnsemble: each tree of `tree_roots` takes every row of X [N, F] from
 * its root through interior nodes (nodes_*: a comparison of feature
 * nodes_featureids against nodes_splits, or set membership) to a leaf
 * (leaf_*), whose weight goes to its target; targets aggregate by SUM,
 * AVERAGE (the sum over the number of trees), MIN or MAX (untouched
 * targets keep the type's largest / lowest value, as onnx's reference).
 * Reference kernel only: compiled code refuses it naming the node.  Of
 * post_transform only NONE is implemented (the others are refused):
 * onnx's reference does not apply them either. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

/* ---- Binarizer ---- */

typedef struct binarizer_attrs {
    float threshold;
} binarizer_attrs;

OP_ATTRS(ML_BINARIZER) = {{"threshold", 0, 0}, {NULL, 0, 0}};

static smelt_status binarizer_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    binarizer_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    return op_attr_float(ctx, n, "threshold", 0.0f, &a->threshold);
}

static const smelt_dtype k_binarizer_types[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT64,
                                                SMELT_DT_INT64, SMELT_DT_INT32,
                                                SMELT_DT_UNDEFINED};

static smelt_status binarizer_infer(smelt_ctx *ctx, const gr_node *n,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(op_check_dtype(ctx, n, in[0], "X", k_binarizer_types));
    op_copy_shape(&out[0], in[0]);
    return SMELT_OK;
}

static smelt_status binarizer_eval(smelt_ctx *ctx, const gr_node *n,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx;
    double threshold = ((const binarizer_attrs *)n->op_attrs)->threshold;
    int64_t count = op_numel(in[0]);
    for (int64_t i = 0; i < count; i++) op_set_f64(&out[0], i, op_get_f64(in[0], i) > threshold);
    return SMELT_OK;
}

typedef struct binarizer_te {
    const te_tensor *x;
    double threshold;
} binarizer_te;

static ir_expr *binarizer_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const binarizer_te *s = user;
    ir_builder *b = &g->b;
    smelt_dtype dt = s->x->buf->dtype;
    ir_expr *x = ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->x, idx));
    ir_expr *above = ir_binary(b, IR_GT, x, ir_const_float(b, SMELT_DT_FLOAT64, s->threshold));
    return op_dtype_is_float(dt)
               ? ir_select(b, above, ir_const_float(b, dt, 1), ir_const_float(b, dt, 0))
               : ir_select(b, above, ir_const_int(b, dt, 1), ir_const_int(b, dt, 0));
}

static smelt_status binarizer_compute(op_compute_args *a)
{
    binarizer_te s = {a->in[0], ((const binarizer_attrs *)a->node->op_attrs)->threshold};
    const smelt_tensor *o = &a->out_type[0];
    a->out[0] = te_compute(a->te, "y", o->dtype, o->rank, o->dims, binarizer_body, &s,
                           "elemwise");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_ML_BINARIZER = {
    .compute = binarizer_compute, .import = binarizer_import, .infer = binarizer_infer,
    .eval = binarizer_eval, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};

/* ---- TreeEnsemble ---- */

enum { TREE_LEQ, TREE_LT, TREE_GTE, TREE_GT, TREE_EQ, TREE_NEQ, TREE_MEMBER, TREE_MODES };
enum { AGG_AVERAGE, AGG_SUM, AGG_MIN, AGG_MAX };

typedef struct tree_attrs {
    int n_nodes, n_leaves, n_trees;
    int64_t n_targets, aggregate;
    const int64_t *feature, *true_id, *false_id, *true_leaf, *false_leaf, *target, *roots;
    const int64_t *missing_true; /* NULL: every node false */
    uint8_t *mode;
    double *split, *weight;
    /* MEMBER nodes' sets: member_start[i] .. member_start[i + 1] in members */
    int *member_start;
    double *members;
} tree_attrs;

OP_ATTRS(ML_TREE_ENSEMBLE) = {{"aggregate_function", 0, 0},
                              {"leaf_targetids", 0, 0},
                              {"leaf_weights", 0, 0},
                              {"membership_values", 0, 0},
                              {"n_targets", 0, 0},
                              {"nodes_falseleafs", 0, 0},
                              {"nodes_falsenodeids", 0, 0},
                              {"nodes_featureids", 0, 0},
                              /* popularity, for performance only: no effect on results */
                              {"nodes_hitrates", 0, 0},
                              {"nodes_missing_value_tracks_true", 0, 0},
                              {"nodes_modes", 0, 0},
                              {"nodes_splits", 0, 0},
                              {"nodes_trueleafs", 0, 0},
                              {"nodes_truenodeids", 0, 0},
                              {"post_transform", 0, 0},
                              {"tree_roots", 0, 0},
                              {NULL, 0, 0}};

/* A required ints attribute of `want` entries (-1: any count, set *count). */
static smelt_status tree_ints(smelt_ctx *ctx, const gr_node *n, const char *name, int want,
                              const int64_t **out, int *count)
{
    int got;
    SMELT_TRY(op_attr_ints(ctx, n, name, &got, out));
    if (got < 0) return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' is required", name);
    if (want >= 0 && got != want)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' has %d entries, expected %d", name,
                       got, want);
    if (count) *count = got;
    return SMELT_OK;
}

/* A tensor attribute as doubles (`want` entries, -1: any; *count set). */
static smelt_status tree_tensor(smelt_ctx *ctx, gr_graph *g, const gr_node *n, const char *name,
                                int want, double **out, int *count)
{
    const smelt_tensor *t;
    SMELT_TRY(op_attr_tensor(ctx, n, name, &t));
    if (!t) return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' is required", name);
    int64_t k = op_numel(t);
    if (!op_dtype_is_float(t->dtype) || (want >= 0 && k != want))
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' must be %d floats, got %lld of %s",
                       name, want, (long long)k, smelt_dtype_name(t->dtype));
    *out = smelt_arena_alloc(&g->arena, sizeof **out * (size_t)(k + 1));
    if (!*out) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < k; i++) (*out)[i] = op_get_f64(t, i);
    if (count) *count = (int)k;
    return SMELT_OK;
}

static smelt_status tree_modes(smelt_ctx *ctx, gr_graph *g, const gr_node *n, tree_attrs *a)
{
    const smelt_tensor *t;
    SMELT_TRY(op_attr_tensor(ctx, n, "nodes_modes", &t));
    if (!t) return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'nodes_modes' is required");
    if (t->dtype != SMELT_DT_UINT8 || op_numel(t) != a->n_nodes)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'nodes_modes' must be %d uint8 values",
                       a->n_nodes);
    a->mode = smelt_arena_alloc(&g->arena, (size_t)a->n_nodes + 1);
    if (!a->mode) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < a->n_nodes; i++) {
        a->mode[i] = ((const uint8_t *)t->data)[i];
        if (a->mode[i] >= TREE_MODES)
            return op_errf(ctx, n, SMELT_ERR_ATTR, "nodes_modes[%d] = %d is not a mode (0..6)", i,
                           a->mode[i]);
    }
    return SMELT_OK;
}

/* membership_values: one NaN-ended run of members per MEMBER node, in
 * node order. */
static smelt_status tree_members(smelt_ctx *ctx, gr_graph *g, const gr_node *n, tree_attrs *a)
{
    int n_member = 0, n_values = 0;
    for (int i = 0; i < a->n_nodes; i++) n_member += a->mode[i] == TREE_MEMBER;
    a->member_start = smelt_arena_alloc(&g->arena, sizeof(int) * (size_t)(a->n_nodes + 1));
    if (!a->member_start) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (!gr_node_attr(n, "membership_values")) {
        if (n_member)
            return op_errf(ctx, n, SMELT_ERR_ATTR, "%d set membership nodes and no attribute "
                           "'membership_values'", n_member);
        return SMELT_OK;
    }
    SMELT_TRY(tree_tensor(ctx, g, n, "membership_values", -1, &a->members, &n_values));
    int sets = 0, pos = 0;
    for (int i = 0; i < n_values; i++) sets += isnan(a->members[i]);
    if (sets != n_member)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "membership_values holds %d NaN-ended sets for %d "
                       "set membership nodes", sets, n_member);
    for (int i = 0; i < a->n_nodes; i++) {
        a->member_start[i] = pos;
        if (a->mode[i] != TREE_MEMBER) continue;
        while (!isnan(a->members[pos])) pos++;
        pos++; /* past its NaN */
    }
    a->member_start[a->n_nodes] = pos;
    return SMELT_OK;
}

/* Every id in range, every target below n_targets. */
static smelt_status tree_check_ids(smelt_ctx *ctx, const gr_node *n, const tree_attrs *a)
{
    for (int i = 0; i < a->n_nodes; i++) {
        for (int side = 0; side < 2; side++) {
            int64_t id = side ? a->false_id[i] : a->true_id[i];
            int64_t leaf = side ? a->false_leaf[i] : a->true_leaf[i];
            if (leaf != 0 && leaf != 1)
                return op_errf(ctx, n, SMELT_ERR_ATTR, "nodes_%sleafs[%d] = %lld is not 0 or 1",
                               side ? "false" : "true", i, (long long)leaf);
            if (id < 0 || id >= (leaf ? a->n_leaves : a->n_nodes))
                return op_errf(ctx, n, SMELT_ERR_ATTR, "nodes_%snodeids[%d] = %lld is not a %s",
                               side ? "false" : "true", i, (long long)id, leaf ? "leaf" : "node");
        }
        if (a->feature[i] < 0)
            return op_errf(ctx, n, SMELT_ERR_ATTR, "nodes_featureids[%d] = %lld is negative", i,
                           (long long)a->feature[i]);
    }
    for (int i = 0; i < a->n_leaves; i++)
        if (a->target[i] < 0 || a->target[i] >= a->n_targets)
            return op_errf(ctx, n, SMELT_ERR_ATTR, "leaf_targetids[%d] = %lld is not in [0, %lld)",
                           i, (long long)a->target[i], (long long)a->n_targets);
    for (int i = 0; i < a->n_trees; i++)
        if (a->roots[i] < 0 || a->roots[i] >= a->n_nodes)
            return op_errf(ctx, n, SMELT_ERR_ATTR, "tree_roots[%d] = %lld is not a node", i,
                           (long long)a->roots[i]);
    return SMELT_OK;
}

static smelt_status tree_options(smelt_ctx *ctx, const gr_node *n, tree_attrs *a)
{
    int64_t post;
    SMELT_TRY(op_attr_int(ctx, n, "post_transform", 0, &post));
    if (post != 0)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "post_transform %lld is not implemented "
                       "(only NONE, 0)", (long long)post);
    SMELT_TRY(op_attr_int(ctx, n, "aggregate_function", AGG_SUM, &a->aggregate));
    if (a->aggregate < AGG_AVERAGE || a->aggregate > AGG_MAX)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "aggregate_function %lld is not 0..3",
                       (long long)a->aggregate);
    if (!gr_node_attr(n, "n_targets"))
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'n_targets' is absent: the output's "
                       "width is not known");
    SMELT_TRY(op_attr_int(ctx, n, "n_targets", 0, &a->n_targets));
    if (a->n_targets < 1 || a->n_targets > SMELT_LIMIT_TENSOR_ELEMS)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "n_targets %lld is not positive",
                       (long long)a->n_targets);
    return SMELT_OK;
}

static smelt_status tree_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    tree_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(tree_options(ctx, n, a));
    SMELT_TRY(tree_ints(ctx, n, "nodes_featureids", -1, &a->feature, &a->n_nodes));
    SMELT_TRY(tree_ints(ctx, n, "nodes_truenodeids", a->n_nodes, &a->true_id, NULL));
    SMELT_TRY(tree_ints(ctx, n, "nodes_falsenodeids", a->n_nodes, &a->false_id, NULL));
    SMELT_TRY(tree_ints(ctx, n, "nodes_trueleafs", a->n_nodes, &a->true_leaf, NULL));
    SMELT_TRY(tree_ints(ctx, n, "nodes_falseleafs", a->n_nodes, &a->false_leaf, NULL));
    SMELT_TRY(tree_ints(ctx, n, "leaf_targetids", -1, &a->target, &a->n_leaves));
    SMELT_TRY(tree_ints(ctx, n, "tree_roots", -1, &a->roots, &a->n_trees));
    if (gr_node_attr(n, "nodes_missing_value_tracks_true"))
        SMELT_TRY(tree_ints(ctx, n, "nodes_missing_value_tracks_true", a->n_nodes,
                            &a->missing_true, NULL));
    SMELT_TRY(tree_tensor(ctx, g, n, "nodes_splits", a->n_nodes, &a->split, NULL));
    SMELT_TRY(tree_tensor(ctx, g, n, "leaf_weights", a->n_leaves, &a->weight, NULL));
    SMELT_TRY(tree_modes(ctx, g, n, a));
    SMELT_TRY(tree_members(ctx, g, n, a));
    if (a->n_trees == 0) return op_errf(ctx, n, SMELT_ERR_ATTR, "the ensemble has no trees");
    return tree_check_ids(ctx, n, a);
}

static const smelt_dtype k_tree_types[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_FLOAT16,
                                           SMELT_DT_UNDEFINED};

static smelt_status tree_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    const tree_attrs *a = n->op_attrs;
    SMELT_TRY(op_check_dtype(ctx, n, in[0], "X", k_tree_types));
    if (in[0]->rank != 2)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "X has rank %d, expected [N, F]", in[0]->rank);
    int64_t features = in[0]->dims[1];
    for (int i = 0; GR_DIM_IS_STATIC(features) && i < a->n_nodes; i++)
        if (a->feature[i] >= features)
            return op_errf(ctx, n, SMELT_ERR_MODEL, "nodes_featureids[%d] = %lld, X has %lld "
                           "features", i, (long long)a->feature[i], (long long)features);
    out[0].dtype = in[0]->dtype;
    out[0].rank = 2;
    out[0].dims[0] = in[0]->dims[0];
    out[0].dims[1] = a->n_targets;
    return SMELT_OK;
}

static bool tree_takes_true(const tree_attrs *a, int node, double x)
{
    if (isnan(x)) return a->missing_true && a->missing_true[node];
    double s = a->split[node];
    switch (a->mode[node]) {
    case TREE_LEQ: return x <= s;
    case TREE_LT: return x < s;
    case TREE_GTE: return x >= s;
    case TREE_GT: return x > s;
    case TREE_EQ: return x == s;
    case TREE_NEQ: return x != s;
    default:
        for (int k = a->member_start[node]; k < a->member_start[node + 1]; k++)
            if (x == a->members[k]) return true;
        return false;
    }
}

/* The leaf row `x` reaches from `root`; -1 when the path revisits nodes
 * (a cycle: the trees are malformed). */
static int64_t tree_leaf(const tree_attrs *a, int64_t root, const smelt_tensor *x, int64_t row,
                         int64_t features)
{
    int64_t node = root;
    for (int steps = 0; steps <= a->n_nodes; steps++) {
        double v = op_get_f64(x, row * features + a->feature[node]);
        bool yes = tree_takes_true(a, (int)node, v);
        int64_t next = yes ? a->true_id[node] : a->false_id[node];
        if (yes ? a->true_leaf[node] : a->false_leaf[node]) return next;
        node = next;
    }
    return -1;
}

/* The type's largest finite value: MIN/MAX start there, as onnx's reference. */
static double type_max(smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT64 ? DBL_MAX : dt == SMELT_DT_FLOAT16 ? 65504.0 : FLT_MAX;
}

static smelt_status tree_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const tree_attrs *a = n->op_attrs;
    int64_t rows = in[0]->dims[0], features = in[0]->dims[1], width = a->n_targets;
    double start = a->aggregate == AGG_MIN   ? type_max(in[0]->dtype)
                   : a->aggregate == AGG_MAX ? -type_max(in[0]->dtype)
                                             : 0.0;
    for (int64_t r = 0; r < rows; r++) {
        double *acc = smelt_calloc((size_t)width, sizeof *acc);
        if (!acc) return op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory");
        for (int64_t t = 0; t < width; t++) acc[t] = start;
        for (int k = 0; k < a->n_trees; k++) {
            int64_t leaf = tree_leaf(a, a->roots[k], in[0], r, features);
            if (leaf < 0) {
                smelt_free(acc);
                return op_errf(ctx, n, SMELT_ERR_MODEL, "tree %d has a cycle: the path from "
                               "its root never reaches a leaf", k);
            }
            double w = a->weight[leaf], *slot = &acc[a->target[leaf]];
            if (a->aggregate == AGG_MIN) *slot = w < *slot ? w : *slot;
            else if (a->aggregate == AGG_MAX) *slot = w > *slot ? w : *slot;
            else *slot += a->aggregate == AGG_AVERAGE ? w / a->n_trees : w;
        }
        for (int64_t t = 0; t < width; t++) op_set_f64(&out[0], r * width + t, acc[t]);
        smelt_free(acc);
    }
    return SMELT_OK;
}

const op_def op_def_ML_TREE_ENSEMBLE = {
    .import = tree_import, .infer = tree_infer, .eval = tree_eval,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};
