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
 * Compiled as a walk of fixed depth (below).  Of post_transform only NONE
 * is implemented (the others are refused): onnx's reference does not apply
 * them either. */
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
    if (!op_dtype_is_float(t->dtype))
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' holds %s values, expected floats",
                       name, smelt_dtype_name(t->dtype));
    if (want >= 0 && k != want)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' holds %lld values, expected %d",
                       name, (long long)k, want);
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

/* The comparison as IEEE doubles (a NaN compares unequal to everything),
 * or a missing value that the node sends to its true branch. */
static bool tree_takes_true(const tree_attrs *a, int node, double x)
{
    if (isnan(x) && a->missing_true && a->missing_true[node]) return true;
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

/* ---- TreeEnsemble compiled: a walk of fixed depth ----
 * A tree's state is a node (0 .. n_nodes - 1) or a leaf (n_nodes + its
 * index).  Stage k holds each row's and tree's state after k steps: a node
 * moves to the branch its comparison picks, a leaf stays.  The deepest path
 * from a root (found at compile time; a cycle is refused) bounds the steps.
 * y then gathers each tree's leaf weight into its target (a reduction over
 * the trees).  The tables are te constants indexed by state. */

#define TREE_STAY TREE_MODES /* a leaf's mode in the state tables */

typedef struct tree_te {
    const tree_attrs *a;
    const te_tensor *x, *prev;
    te_tensor *roots, *feature, *split, *mode, *on_true, *on_false, *missing, *members;
    te_tensor *weight, *target;
    int width; /* members per MEMBER node, padded with NaN */
} tree_te;

/* Interior nodes on the longest path from node i down (cycles: -1). */
static int tree_depth(const tree_attrs *a, int i, int *memo, uint8_t *visiting)
{
    if (memo[i]) return memo[i];
    if (visiting[i]) return -1;
    visiting[i] = 1;
    int deepest = 0;
    for (int side = 0; side < 2; side++) {
        if (side ? a->false_leaf[i] : a->true_leaf[i]) continue;
        int d = tree_depth(a, (int)(side ? a->false_id[i] : a->true_id[i]), memo, visiting);
        if (d < 0) return -1;
        deepest = d > deepest ? d : deepest;
    }
    visiting[i] = 0;
    return memo[i] = deepest + 1;
}

static smelt_status tree_steps(smelt_ctx *ctx, const gr_node *n, const tree_attrs *a, int *steps)
{
    int *memo = smelt_calloc((size_t)a->n_nodes, sizeof *memo);
    uint8_t *visiting = smelt_calloc((size_t)a->n_nodes, 1);
    smelt_status s = memo && visiting ? SMELT_OK : op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory");
    *steps = 0;
    for (int k = 0; s == SMELT_OK && k < a->n_trees; k++) {
        int d = tree_depth(a, (int)a->roots[k], memo, visiting);
        if (d < 0) s = op_errf(ctx, n, SMELT_ERR_MODEL, "tree %d has a cycle: the path from its "
                               "root never reaches a leaf", k);
        *steps = d > *steps ? d : *steps;
    }
    smelt_free(memo);
    smelt_free(visiting);
    return s;
}

/* A te constant of `count` x `width` values of dt (data owned by the graph after). */
static te_tensor *tree_table(op_compute_args *a, const char *name, smelt_dtype dt, int64_t count,
                             int64_t width, void *data)
{
    int64_t shape[2] = {count, width};
    return te_const_tensor(a->te, name, dt, width ? 2 : 1, shape, data);
}

/* The node tables by state: a leaf keeps itself, reads feature 0. */
static smelt_status tree_node_tables(op_compute_args *c, tree_te *t)
{
    const tree_attrs *a = t->a;
    int64_t states = a->n_nodes + a->n_leaves;
    int64_t *feature = smelt_calloc((size_t)states, sizeof *feature);
    int64_t *mode = smelt_calloc((size_t)states, sizeof *mode);
    int64_t *on_true = smelt_calloc((size_t)states, sizeof *on_true);
    int64_t *on_false = smelt_calloc((size_t)states, sizeof *on_false);
    int64_t *missing = smelt_calloc((size_t)states, sizeof *missing);
    double *split = smelt_calloc((size_t)states, sizeof *split);
    for (int64_t i = 0; feature && mode && on_true && on_false && missing && split && i < states;
         i++) {
        bool node = i < a->n_nodes;
        feature[i] = node ? a->feature[i] : 0;
        mode[i] = node ? a->mode[i] : TREE_STAY;
        split[i] = node ? a->split[i] : 0;
        missing[i] = node && a->missing_true ? a->missing_true[i] : 0;
        on_true[i] = !node ? i : a->true_leaf[i] ? a->n_nodes + a->true_id[i] : a->true_id[i];
        on_false[i] = !node ? i : a->false_leaf[i] ? a->n_nodes + a->false_id[i] : a->false_id[i];
    }
    t->feature = tree_table(c, "feature", SMELT_DT_INT64, states, 0, feature);
    t->mode = tree_table(c, "mode", SMELT_DT_INT64, states, 0, mode);
    t->on_true = tree_table(c, "on_true", SMELT_DT_INT64, states, 0, on_true);
    t->on_false = tree_table(c, "on_false", SMELT_DT_INT64, states, 0, on_false);
    t->missing = tree_table(c, "missing", SMELT_DT_INT64, states, 0, missing);
    t->split = tree_table(c, "split", SMELT_DT_FLOAT64, states, 0, split);
    bool ok = t->feature && t->mode && t->on_true && t->on_false && t->missing && t->split;
    return ok ? SMELT_OK : smelt_errf(c->ctx, SMELT_ERR_NOMEM, "out of memory");
}

/* Each MEMBER node's set as a row of `width` values padded with NaN. */
static smelt_status tree_member_table(op_compute_args *c, tree_te *t)
{
    const tree_attrs *a = t->a;
    int64_t states = a->n_nodes + a->n_leaves;
    t->width = 0;
    for (int i = 0; i < a->n_nodes; i++) {
        int w = a->mode[i] == TREE_MEMBER ? a->member_start[i + 1] - a->member_start[i] - 1 : 0;
        t->width = w > t->width ? w : t->width;
    }
    if (!t->width) return SMELT_OK;
    double *m = smelt_alloc(sizeof *m * (size_t)(states * t->width));
    for (int64_t k = 0; m && k < states * t->width; k++) m[k] = NAN;
    for (int i = 0; m && i < a->n_nodes; i++)
        for (int k = a->member_start[i]; a->mode[i] == TREE_MEMBER && k < a->member_start[i + 1] - 1;
             k++)
            m[i * t->width + (k - a->member_start[i])] = a->members[k];
    t->members = tree_table(c, "members", SMELT_DT_FLOAT64, states, t->width, m);
    return t->members ? SMELT_OK : smelt_errf(c->ctx, SMELT_ERR_NOMEM, "out of memory");
}

static smelt_status tree_leaf_tables(op_compute_args *c, tree_te *t)
{
    const tree_attrs *a = t->a;
    double *weight = smelt_calloc((size_t)a->n_leaves, sizeof *weight);
    int64_t *target = smelt_calloc((size_t)a->n_leaves, sizeof *target);
    int64_t *roots = smelt_calloc((size_t)a->n_trees, sizeof *roots);
    for (int i = 0; weight && target && i < a->n_leaves; i++) {
        weight[i] = a->aggregate == AGG_AVERAGE ? a->weight[i] / a->n_trees : a->weight[i];
        target[i] = a->target[i];
    }
    for (int k = 0; roots && k < a->n_trees; k++) roots[k] = a->roots[k];
    t->weight = tree_table(c, "weight", SMELT_DT_FLOAT64, a->n_leaves, 0, weight);
    t->target = tree_table(c, "target", SMELT_DT_INT64, a->n_leaves, 0, target);
    t->roots = tree_table(c, "roots", SMELT_DT_INT64, a->n_trees, 0, roots);
    bool ok = t->weight && t->target && t->roots;
    return ok ? SMELT_OK : smelt_errf(c->ctx, SMELT_ERR_NOMEM, "out of memory");
}

static ir_expr *tree_root_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const tree_te *t = user;
    return te_read(g, t->roots, &idx[1]);
}

/* Does state s's comparison send x to its true branch?  As tree_takes_true. */
static ir_expr *tree_compare(te_graph *g, const tree_te *t, ir_expr *s, ir_expr *x)
{
    ir_builder *b = &g->b;
    ir_expr *mode = te_read(g, t->mode, &s), *split = te_read(g, t->split, &s);
    ir_expr *member = ir_const_int(b, SMELT_DT_BOOL, 0);
    for (int k = 0; k < t->width; k++) {
        ir_expr *at[2] = {s, ir_int(b, k)};
        member = ir_binary(b, IR_OR, member, ir_binary(b, IR_EQ, x, te_read(g, t->members, at)));
    }
    static const ir_kind cmp[] = {IR_LE, IR_LT, IR_GE, IR_GT, IR_EQ, IR_NE};
    ir_expr *take = member;
    for (int m = TREE_NEQ; m >= TREE_LEQ; m--)
        take = ir_select(b, ir_binary(b, IR_EQ, mode, ir_int(b, m)),
                         ir_binary(b, cmp[m], x, split), take);
    ir_expr *missing = ir_binary(b, IR_AND, ir_binary(b, IR_NE, x, x),
                                 ir_binary(b, IR_NE, te_read(g, t->missing, &s), ir_int(b, 0)));
    return ir_binary(b, IR_OR, missing, take);
}

static ir_expr *tree_step_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const tree_te *t = user;
    ir_builder *b = &g->b;
    ir_expr *s = te_read(g, t->prev, idx);
    ir_expr *xi[2] = {idx[0], te_read(g, t->feature, &s)};
    ir_expr *x = ir_cast(b, SMELT_DT_FLOAT64, te_read(g, t->x, xi));
    ir_expr *next = ir_select(b, tree_compare(g, t, s, x), te_read(g, t->on_true, &s),
                              te_read(g, t->on_false, &s));
    ir_expr *leaf = ir_binary(b, IR_GE, s, ir_int(b, t->a->n_nodes));
    return ir_select(b, leaf, s, next);
}

/* acc[r, target]: each tree's leaf weight where its target is this one. */
static ir_expr *tree_output_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const tree_te *t = user;
    const tree_attrs *a = t->a;
    ir_builder *b = &g->b;
    ir_axis k = te_reduce_axis(g, "tree", a->n_trees);
    ir_expr *at[2] = {idx[0], ir_var_ref(b, k.var)};
    ir_expr *leaf = ir_sub(b, te_read(g, t->prev, at), ir_int(b, a->n_nodes));
    ir_expr *hit = ir_binary(b, IR_EQ, te_read(g, t->target, &leaf), idx[1]);
    ir_reduce_op op = a->aggregate == AGG_MIN   ? IR_REDUCE_MIN
                      : a->aggregate == AGG_MAX ? IR_REDUCE_MAX
                                                : IR_REDUCE_SUM;
    ir_expr *miss = te_reduce_identity(g, op, SMELT_DT_FLOAT64);
    return te_reduce(g, op, ir_select(b, hit, te_read(g, t->weight, &leaf), miss), 1, &k);
}

/* y = acc in X's type; MIN/MAX start from the type's extremes. */
static ir_expr *tree_cast_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const tree_te *t = user;
    ir_builder *b = &g->b;
    smelt_dtype dt = t->x->buf->dtype;
    ir_expr *v = te_read(g, t->prev, idx);
    double limit = type_max(dt);
    if (t->a->aggregate == AGG_MIN) v = ir_binary(b, IR_MIN, v, ir_const_float(b, SMELT_DT_FLOAT64, limit));
    if (t->a->aggregate == AGG_MAX) v = ir_binary(b, IR_MAX, v, ir_const_float(b, SMELT_DT_FLOAT64, -limit));
    return ir_cast(b, dt, v);
}

static smelt_status tree_compute(op_compute_args *c)
{
    tree_te t = {.a = c->node->op_attrs, .x = c->in[0]};
    int steps;
    SMELT_TRY(tree_steps(c->ctx, c->node, t.a, &steps));
    SMELT_TRY(tree_node_tables(c, &t));
    SMELT_TRY(tree_member_table(c, &t));
    SMELT_TRY(tree_leaf_tables(c, &t));
    int64_t walk[2] = {t.x->buf->shape[0], t.a->n_trees};
    te_tensor *state = te_compute(c->te, "state0", SMELT_DT_INT64, 2, walk, tree_root_body, &t,
                                  "injective");
    for (int k = 0; state && k < steps; k++) {
        char name[32];
        snprintf(name, sizeof name, "state%d", k + 1);
        t.prev = state;
        state = te_compute(c->te, name, SMELT_DT_INT64, 2, walk, tree_step_body, &t, "injective");
    }
    t.prev = state;
    const smelt_tensor *o = &c->out_type[0];
    te_tensor *acc = state ? te_compute(c->te, "acc", SMELT_DT_FLOAT64, 2, o->dims,
                                        tree_output_body, &t, "reduce")
                           : NULL;
    t.prev = acc;
    c->out[0] = acc ? te_compute(c->te, "y", o->dtype, 2, o->dims, tree_cast_body, &t,
                                 "injective")
                    : NULL;
    return c->out[0] ? SMELT_OK : smelt_ctx_status(c->ctx);
}

const op_def op_def_ML_TREE_ENSEMBLE = {
    .compute = tree_compute, .import = tree_import, .infer = tree_infer, .eval = tree_eval,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};
