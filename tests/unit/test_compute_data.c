/* Compute definitions of the data and resize families checked against the
 * reference kernels: each case runs one node through exec_node (reference)
 * and exec_node_te (tensor expressions, interpreted) and compares the
 * output.  Parameter inputs (starts, pads, k, scales, roi, indices...) are
 * given either as graph constants (the compute folds them to immediates) or
 * as run-time inputs (the compute loads them); the ONNX node tests only
 * cover the latter.  Also covers what they leave out: other dtypes, Pad's
 * wrap mode and axes input, ScatterND's max/min, Resize's axes attribute,
 * and what compiled code does with out-of-range indices. */
#include <stdlib.h>

#include "exec/exec.h"
#include "ops/op.h"
#include "test_util.h"

#define MAX_IO 5

/* Strong references: registry.c only declares the op_defs weak. */
extern const op_def op_def_SLICE, op_def_GATHER, op_def_GATHER_ELEMENTS, op_def_SCATTER_ND,
    op_def_PAD, op_def_TRILU, op_def_ONE_HOT, op_def_DEPTH_TO_SPACE, op_def_SPACE_TO_DEPTH,
    op_def_RESIZE, op_def_UPSAMPLE;
const op_def *const test_link_anchor[] = {
    &op_def_SLICE,   &op_def_GATHER,        &op_def_GATHER_ELEMENTS, &op_def_SCATTER_ND,
    &op_def_PAD,     &op_def_TRILU,         &op_def_ONE_HOT,         &op_def_DEPTH_TO_SPACE,
    &op_def_SPACE_TO_DEPTH, &op_def_RESIZE, &op_def_UPSAMPLE};

#define F16 SMELT_DT_FLOAT16
#define F32 SMELT_DT_FLOAT32
#define F64 SMELT_DT_FLOAT64
#define I32 SMELT_DT_INT32
#define I64 SMELT_DT_INT64
#define U8 SMELT_DT_UINT8
#define BOOL SMELT_DT_BOOL

typedef enum in_kind { IN_RANDOM, IN_CONST, IN_RUNTIME } in_kind;

typedef struct in_spec {
    smelt_dtype dt; /* SMELT_DT_UNDEFINED: an omitted optional input */
    int rank;
    int64_t dims[SMELT_MAX_RANK];
    in_kind kind;       /* IN_RANDOM: pseudo-random run-time data */
    const double *vals; /* contents of IN_CONST / IN_RUNTIME inputs */
} in_spec;

typedef struct attr_spec {
    const char *name;
    gr_attr_type type; /* INT, FLOAT, STRING, INTS or FLOATS */
    double v;
    const char *s;
    int n;
    const int64_t *ints;
    const float *floats;
} attr_spec;

typedef struct node_case {
    const char *what;
    op_kind op;
    int64_t opset;
    int n_in, n_attrs;
    in_spec in[MAX_IO];
    attr_spec attrs[6];
} node_case;

static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

static smelt_tensor *make_tensor(const in_spec *s, uint32_t *state)
{
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    t->dtype = s->dt;
    t->rank = s->rank;
    memcpy(t->dims, s->dims, sizeof t->dims);
    int64_t n = op_numel(t);
    t->data = smelt_calloc(n ? (size_t)n : 1, smelt_dtype_size(t->dtype));
    for (int64_t i = 0; i < n; i++) {
        if (s->vals) {
            if (op_dtype_is_float(t->dtype)) op_set_f64(t, i, s->vals[i]);
            else op_set_i64(t, i, (int64_t)s->vals[i]);
        } else {
            double u = (double)next_random(state) / (double)(1u << 24); /* [0, 1) */
            op_set_f64(t, i, op_dtype_is_float(t->dtype) ? 8.0 * u - 4.0 : floor(200.0 * u));
        }
    }
    return t;
}

static gr_node *build_node(smelt_ctx *ctx, gr_graph *g, const node_case *c, smelt_tensor **in)
{
    gr_node *node = gr_node_new(g, "n0", op_get(c->op)->name, c->op, c->n_in, 1);
    uint32_t state = 12345;
    for (int i = 0; i < c->n_in; i++) {
        char name[16];
        in[i] = NULL;
        if (c->in[i].dt == SMELT_DT_UNDEFINED) continue;
        snprintf(name, sizeof name, "in%d", i);
        node->inputs[i] = gr_value_new(g, name);
        in[i] = make_tensor(&c->in[i], &state);
        if (c->in[i].kind == IN_CONST) { /* the graph owns it from now on */
            CHECK(gr_value_set_constant(ctx, g, node->inputs[i], in[i]) == SMELT_OK);
            in[i] = node->inputs[i]->constant;
        }
    }
    gr_value *v = gr_value_new(g, "out0");
    v->producer = node;
    node->outputs[0] = v;
    gr_attr *attrs = smelt_arena_alloc(&g->arena, sizeof(gr_attr) * 6);
    memset(attrs, 0, sizeof(gr_attr) * 6);
    for (int i = 0; i < c->n_attrs; i++) {
        const attr_spec *a = &c->attrs[i];
        attrs[i].name = a->name;
        attrs[i].type = a->type;
        attrs[i].i = (int64_t)a->v;
        attrs[i].f = (float)a->v;
        attrs[i].s = a->s;
        attrs[i].s_len = a->s ? strlen(a->s) : 0;
        attrs[i].n = a->n;
        attrs[i].ints = (int64_t *)a->ints;
        attrs[i].floats = (float *)a->floats;
    }
    node->attrs = attrs;
    node->n_attrs = c->n_attrs;
    return node;
}

static bool same_value(const smelt_tensor *ref, const smelt_tensor *te, int64_t i)
{
    if (!op_dtype_is_float(ref->dtype)) return op_get_i64(ref, i) == op_get_i64(te, i);
    double want = op_get_f64(ref, i), got = op_get_f64(te, i);
    double tol = ref->dtype == F16 ? 4e-3 : ref->dtype == F64 ? 1e-12 : 1e-5;
    return fabs(got - want) <= tol * (1.0 + fabs(want));
}

static void compare_output(const node_case *c, const smelt_tensor *ref, const smelt_tensor *te)
{
    bool same_type = ref->dtype == te->dtype && ref->rank == te->rank &&
                     op_numel(ref) == op_numel(te);
    if (!same_type) fprintf(stderr, "%s: output type differs\n", c->what);
    CHECK(same_type);
    int64_t bad = 0, n = same_type ? op_numel(ref) : 0;
    for (int64_t i = 0; i < n; i++) {
        if (same_value(ref, te, i)) continue;
        if (bad++ == 0)
            fprintf(stderr, "%s: element %lld: te %.9g, reference %.9g\n", c->what,
                    (long long)i, op_get_f64(te, i), op_get_f64(ref, i));
    }
    CHECK(bad == 0);
}

/* Runs the case through both paths; the te output is left in *te_out when
 * given (the caller frees its data), else compared with the reference. */
static void run_case_into(const node_case *c, smelt_tensor *te_out)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = c->opset;
    smelt_tensor *in[MAX_IO], ref, te;
    gr_node *node = build_node(ctx, g, c, in);
    memset(&ref, 0, sizeof ref);
    memset(&te, 0, sizeof te);
    const op_def *def = op_get(c->op)->def;
    smelt_status s = def->import ? def->import(ctx, g, node) : SMELT_OK;
    /* import may add constant inputs (older opsets): bind every input anew */
    const smelt_tensor *inp[MAX_IO + 2] = {0};
    for (int i = 0; i < node->n_inputs && i < MAX_IO + 2; i++) {
        const gr_value *v = node->inputs[i];
        inp[i] = !v ? NULL : v->constant ? v->constant : i < c->n_in ? in[i] : NULL;
    }
    if (s == SMELT_OK) s = exec_node_te(ctx, node, inp, &te);
    if (s == SMELT_OK && !te_out) s = exec_node(ctx, node, inp, &ref);
    if (s != SMELT_OK) fprintf(stderr, "%s: %s\n", c->what, smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK);
    if (s == SMELT_OK && !te_out) compare_output(c, &ref, &te);
    if (te_out) *te_out = te;
    else smelt_free(te.data);
    smelt_free(ref.data);
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i].kind != IN_CONST) smelt_tensor_free(in[i]);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

static void run_cases(const node_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) run_case_into(&cases[i], NULL);
}

#define ARR(...) ((const double[]){__VA_ARGS__})
#define IARR(...) ((const int64_t[]){__VA_ARGS__})
#define CNT(...) (int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double))
/* a 1-D parameter with the given contents, constant or loaded at run time */
#define PC(dt, ...) {dt, 1, {CNT(__VA_ARGS__)}, IN_CONST, ARR(__VA_ARGS__)}
#define PR(dt, ...) {dt, 1, {CNT(__VA_ARGS__)}, IN_RUNTIME, ARR(__VA_ARGS__)}
#define SC(dt, v) {dt, 0, {0}, IN_CONST, ARR(v)}
#define SR(dt, v) {dt, 0, {0}, IN_RUNTIME, ARR(v)}
#define X(dt, r, ...) {dt, r, {__VA_ARGS__}, IN_RANDOM, NULL}
#define NONE {SMELT_DT_UNDEFINED, 0, {0}, IN_RANDOM, NULL}
#define AI(n, v) {n, GR_ATTR_INT, v, NULL, 0, NULL, NULL}
#define AF(n, v) {n, GR_ATTR_FLOAT, v, NULL, 0, NULL, NULL}
#define AS(n, v) {n, GR_ATTR_STRING, 0, v, 0, NULL, NULL}
#define AINTS(n, k, ...) {n, GR_ATTR_INTS, 0, NULL, k, IARR(__VA_ARGS__), NULL}
#define AFLOATS(n, k, ...) {n, GR_ATTR_FLOATS, 0, NULL, k, NULL, ((const float[]){__VA_ARGS__})}

static const node_case k_slice_cases[] = {
    {"slice const, negative steps f16", OP_SLICE, 13, 5, 0,
     {X(F16, 3, 4, 5, 6), PC(I64, 3, -1), PC(I64, -9, 0), PC(I64, 1, 2), PC(I64, -2, -1)}, {{0}}},
    {"slice run-time, negative steps", OP_SLICE, 13, 5, 0,
     {X(F16, 3, 4, 5, 6), PR(I64, 3, -1), PR(I64, -9, 0), PR(I64, 1, 2), PR(I64, -2, -1)}, {{0}}},
    {"slice const starts, run-time negative axes, int32", OP_SLICE, 13, 5, 0,
     {X(I64, 3, 4, 5, 6), PC(I32, 1, 0), PC(I32, 100, 3), PR(I32, -1, -3), PC(I32, 2, 1)}, {{0}}},
    {"slice default axes and steps, bool", OP_SLICE, 13, 3, 0,
     {X(BOOL, 2, 5, 3), PC(I64, 1, -2), PC(I64, 4, 100)}, {{0}}},
    {"slice start past the end, step -3", OP_SLICE, 13, 5, 0,
     {X(F32, 1, 10), PR(I64, 50), PR(I64, -100), NONE, PR(I64, -3)}, {{0}}},
};

static const node_case k_gather_cases[] = {
    {"gather int64 data, run-time negative indices", OP_GATHER, 13, 2, 1,
     {X(I64, 3, 3, 4, 2), {I64, 2, {2, 2}, IN_RUNTIME, ARR(-1, 0, 3, -4)}}, {AI("axis", 1)}},
    {"gather scalar index, constant", OP_GATHER, 13, 2, 1,
     {X(F16, 2, 3, 4), SC(I32, -2)}, {AI("axis", -1)}},
    {"gather scalar index, axis 0", OP_GATHER, 13, 2, 0,
     {X(F32, 2, 3, 4), SR(I64, 2)}, {{0}}},
    {"gather u8 axis 0", OP_GATHER, 13, 2, 0,
     {X(U8, 2, 4, 3), PC(I64, 3, 3, 0, 1, 2)}, {{0}}},
    {"gatherelements bool axis 0", OP_GATHER_ELEMENTS, 13, 2, 1,
     {X(BOOL, 2, 3, 3), {I64, 2, {2, 2}, IN_CONST, ARR(2, -1, 0, -3)}}, {AI("axis", 0)}},
    {"gatherelements f64 axis -1", OP_GATHER_ELEMENTS, 13, 2, 1,
     {X(F64, 3, 2, 2, 3), {I32, 3, {2, 1, 4}, IN_RUNTIME, ARR(0, 2, -1, 1, 1, 1, -3, 2)}},
     {AI("axis", -1)}},
};

#define IND_2X1X2 {I64, 3, {2, 1, 2}, IN_RUNTIME, ARR(1, -1, 0, 2)}
#define IND_DUP {I64, 2, {3, 1}, IN_CONST, ARR(1, -2, 0)}
static const node_case k_scatter_cases[] = {
    {"scatternd none, 2 batch dims", OP_SCATTER_ND, 16, 3, 0,
     {X(F32, 3, 3, 3, 2), IND_2X1X2, X(F32, 3, 2, 1, 2)}, {{0}}},
    {"scatternd none, whole rows, int64", OP_SCATTER_ND, 16, 3, 0,
     {X(I64, 3, 3, 3, 2), {I64, 2, {2, 1}, IN_CONST, ARR(2, 0)}, X(I64, 3, 2, 3, 2)}, {{0}}},
    {"scatternd add with duplicates", OP_SCATTER_ND, 16, 3, 1,
     {X(F32, 2, 3, 4), IND_DUP, X(F32, 2, 3, 4)}, {AS("reduction", "add")}},
    {"scatternd mul int32", OP_SCATTER_ND, 16, 3, 1,
     {X(I32, 2, 3, 4), IND_DUP, X(I32, 2, 3, 4)}, {AS("reduction", "mul")}},
    {"scatternd max", OP_SCATTER_ND, 18, 3, 1,
     {X(F32, 2, 3, 4), IND_DUP, X(F32, 2, 3, 4)}, {AS("reduction", "max")}},
    {"scatternd min int64", OP_SCATTER_ND, 18, 3, 1,
     {X(I64, 2, 3, 4), IND_DUP, X(I64, 2, 3, 4)}, {AS("reduction", "min")}},
    {"scatternd add f16", OP_SCATTER_ND, 16, 3, 1,
     {X(F16, 2, 3, 4), {I64, 2, {2, 1}, IN_CONST, ARR(1, 2)}, X(F16, 2, 2, 4)},
     {AS("reduction", "add")}},
};

#define PADS_C PC(I64, 1, 0, -1, 2, 3, 1)
#define PADS_R PR(I64, 1, 0, -1, 2, 3, 1)
static const node_case k_pad_cases[] = {
    {"pad constant const pads, run-time value, int32", OP_PAD, 13, 3, 1,
     {X(I32, 3, 2, 3, 4), PADS_C, SR(I32, 7)}, {AS("mode", "constant")}},
    {"pad constant run-time pads, const value, f16", OP_PAD, 13, 3, 1,
     {X(F16, 3, 2, 3, 4), PADS_R, SC(F16, -1.5)}, {AS("mode", "constant")}},
    {"pad constant bool, no value", OP_PAD, 13, 2, 0, {X(BOOL, 3, 2, 3, 4), PADS_C}, {{0}}},
    {"pad edge const", OP_PAD, 13, 2, 1, {X(F32, 3, 2, 3, 4), PADS_C}, {AS("mode", "edge")}},
    {"pad edge run-time", OP_PAD, 13, 2, 1, {X(F32, 3, 2, 3, 4), PADS_R}, {AS("mode", "edge")}},
    {"pad reflect const", OP_PAD, 13, 2, 1,
     {X(I64, 2, 3, 4), PC(I64, 2, 3, 2, 3)}, {AS("mode", "reflect")}},
    {"pad reflect run-time, size-1 axis", OP_PAD, 13, 2, 1,
     {X(F32, 2, 1, 4), PR(I64, 2, 3, 1, 3)}, {AS("mode", "reflect")}},
    {"pad wrap const, wider than the axis", OP_PAD, 19, 2, 1,
     {X(U8, 2, 2, 3), PC(I64, 5, 1, -1, 7)}, {AS("mode", "wrap")}},
    {"pad wrap run-time", OP_PAD, 19, 2, 1,
     {X(F32, 2, 2, 3), PR(I64, 5, 1, -1, 7)}, {AS("mode", "wrap")}},
    {"pad constant, const axes", OP_PAD, 18, 4, 0,
     {X(F32, 3, 2, 3, 4), PC(I64, 1, 2, 2, 0), NONE, PC(I64, -1, 0)}, {{0}}},
    {"pad edge, run-time axes", OP_PAD, 18, 4, 1,
     {X(F32, 3, 2, 3, 4), PR(I64, 1, 2, 2, 0), NONE, PR(I64, -1, 0)}, {AS("mode", "edge")}},
    {"pad opset 2 attributes", OP_PAD, 2, 1, 3,
     {X(F32, 2, 2, 3)},
     {AS("mode", "constant"), AINTS("pads", 4, 1, 0, 0, 2), AF("value", 2.5)}},
    {"pad constant of an empty tensor", OP_PAD, 13, 3, 0,
     {X(F32, 2, 0, 2), PC(I64, 1, 1, 1, 1), SC(F32, 3)}, {{0}}},
};

static const node_case k_misc_cases[] = {
    {"trilu upper, run-time k", OP_TRILU, 14, 2, 0, {X(I64, 3, 2, 3, 5), SR(I64, -1)}, {{0}}},
    {"trilu lower, const k", OP_TRILU, 14, 2, 1,
     {X(F32, 2, 5, 3), SC(I64, 1)}, {AI("upper", 0)}},
    {"trilu huge k", OP_TRILU, 14, 2, 1,
     {X(F32, 2, 3, 3), SR(I64, -9.0e18)}, {AI("upper", 0)}},
    {"onehot float indices, axis 0", OP_ONE_HOT, 11, 3, 1,
     {{F32, 2, {2, 3}, IN_RUNTIME, ARR(0.7, -1.2, 3, 4, -5, 2.9)}, SC(F32, 4),
      PC(I64, -3, 9)},
     {AI("axis", 0)}},
    {"onehot int32 indices, f16 values", OP_ONE_HOT, 11, 3, 0,
     {{I32, 1, {4}, IN_CONST, ARR(1, -1, 7, 0)}, SC(I64, 3), PR(F16, 0.5, 2)}, {{0}}},
    {"depthtospace dcr int64", OP_DEPTH_TO_SPACE, 13, 1, 1,
     {X(I64, 4, 2, 8, 2, 3)}, {AI("blocksize", 2)}},
    {"depthtospace crd f16", OP_DEPTH_TO_SPACE, 13, 1, 2,
     {X(F16, 4, 1, 18, 2, 1)}, {AI("blocksize", 3), AS("mode", "CRD")}},
    {"spacetodepth bool", OP_SPACE_TO_DEPTH, 13, 1, 1,
     {X(BOOL, 4, 2, 3, 4, 6)}, {AI("blocksize", 2)}},
};

#define X1x2x3x4(dt) X(dt, 4, 1, 2, 3, 4)
#define NO_ROI NONE
static const node_case k_resize_cases[] = {
    {"nearest round_prefer_ceil, const scales", OP_RESIZE, 13, 3, 3,
     {X1x2x3x4(F32), NO_ROI, PC(F32, 1, 1, 1.7, 0.6)},
     {AS("mode", "nearest"), AS("nearest_mode", "round_prefer_ceil"),
      AS("coordinate_transformation_mode", "half_pixel")}},
    {"nearest int64 exact copy, run-time scales", OP_RESIZE, 13, 3, 1,
     {X1x2x3x4(I64), NO_ROI, PR(F32, 1, 2, 2, 0.5)}, {AS("mode", "nearest")}},
    {"nearest ceil asymmetric, const sizes", OP_RESIZE, 13, 4, 3,
     {X1x2x3x4(U8), NO_ROI, NONE, PC(I64, 1, 2, 7, 3)},
     {AS("mode", "nearest"), AS("nearest_mode", "ceil"),
      AS("coordinate_transformation_mode", "asymmetric")}},
    {"linear half_pixel_symmetric, axes attribute", OP_RESIZE, 18, 3, 3,
     {X1x2x3x4(F32), NO_ROI, PC(F32, 1.5, 0.8)},
     {AS("mode", "linear"), AS("coordinate_transformation_mode", "half_pixel_symmetric"),
      AINTS("axes", 2, -1, 2)}},
    {"linear u8 rounds half away, run-time sizes", OP_RESIZE, 13, 4, 2,
     {X1x2x3x4(U8), NO_ROI, NONE, PR(I64, 1, 2, 5, 7)},
     {AS("mode", "linear"), AS("coordinate_transformation_mode", "align_corners")}},
    {"linear exclude_outside pytorch_half_pixel f16", OP_RESIZE, 13, 3, 3,
     {X1x2x3x4(F16), NO_ROI, PR(F32, 1, 1, 0.34, 2.5)},
     {AS("mode", "linear"), AS("coordinate_transformation_mode", "pytorch_half_pixel"),
      AI("exclude_outside", 1)}},
    {"cubic exclude_outside A=-0.5 f64", OP_RESIZE, 13, 3, 3,
     {X(F64, 2, 5, 4), NO_ROI, PC(F32, 0.6, 1.8)},
     {AS("mode", "cubic"), AF("cubic_coeff_a", -0.5), AI("exclude_outside", 1)}},
    {"cubic run-time scales", OP_RESIZE, 13, 3, 1,
     {X(F32, 2, 5, 4), NO_ROI, PR(F32, 0.6, 1.8)}, {AS("mode", "cubic")}},
    {"tf_crop_and_resize linear, run-time roi", OP_RESIZE, 13, 4, 3,
     {X1x2x3x4(F32), PR(F32, 0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4), NONE, PC(I64, 1, 2, 4, 5)},
     {AS("mode", "linear"), AS("coordinate_transformation_mode", "tf_crop_and_resize"),
      AF("extrapolation_value", 9)}},
    {"tf_crop_and_resize nearest, const roi", OP_RESIZE, 13, 4, 3,
     {X1x2x3x4(I32), PC(F32, 0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4), NONE, PC(I64, 1, 2, 4, 5)},
     {AS("mode", "nearest"), AS("coordinate_transformation_mode", "tf_crop_and_resize"),
      AF("extrapolation_value", -4)}},
    {"tf_half_pixel_for_nn, rank 1", OP_RESIZE, 13, 3, 2,
     {X(F32, 1, 7), NO_ROI, PR(F32, 0.45)},
     {AS("mode", "nearest"), AS("coordinate_transformation_mode", "tf_half_pixel_for_nn")}},
    {"resize-10 nearest", OP_RESIZE, 10, 2, 1, {X1x2x3x4(F32), PC(F32, 1, 1, 2.5, 0.5)},
     {AS("mode", "nearest")}},
    {"upsample-9 linear, run-time scales", OP_UPSAMPLE, 9, 2, 1,
     {X(F32, 3, 2, 2, 3), PR(F32, 1, 2, 1.5)}, {AS("mode", "linear")}},
    {"upsample-7 nearest attribute", OP_UPSAMPLE, 7, 1, 2,
     {X(I64, 2, 2, 3)}, {AS("mode", "nearest"), AFLOATS("scales", 2, 2.0f, 1.5f)}},
};

/* Compiled code cannot fail per element: an out-of-range Gather index is
 * clamped into the axis (no read outside the tensor), and a ScatterND update
 * whose index is out of range matches no row.  The reference reports both. */
static void test_out_of_range_indices(void)
{
    node_case gather = {"gather index out of range", OP_GATHER, 13, 2, 0,
                        {{F32, 1, {3}, IN_RUNTIME, ARR(10, 20, 30)}, PR(I64, 7, -9)}, {{0}}};
    smelt_tensor te;
    run_case_into(&gather, &te);
    CHECK(te.data && op_get_f64(&te, 0) == 30 && op_get_f64(&te, 1) == 10);
    smelt_free(te.data);
    node_case scatter = {"scatternd index out of range", OP_SCATTER_ND, 16, 3, 0,
                         {{F32, 1, {3}, IN_RUNTIME, ARR(1, 2, 3)},
                          {I64, 2, {2, 1}, IN_RUNTIME, ARR(5, 1)}, PR(F32, 8, 9)}, {{0}}};
    run_case_into(&scatter, &te);
    CHECK(te.data && op_get_f64(&te, 0) == 1 && op_get_f64(&te, 1) == 9 &&
          op_get_f64(&te, 2) == 3);
    smelt_free(te.data);
}

int main(void)
{
    run_cases(k_slice_cases, sizeof k_slice_cases / sizeof k_slice_cases[0]);
    run_cases(k_gather_cases, sizeof k_gather_cases / sizeof k_gather_cases[0]);
    run_cases(k_scatter_cases, sizeof k_scatter_cases / sizeof k_scatter_cases[0]);
    run_cases(k_pad_cases, sizeof k_pad_cases / sizeof k_pad_cases[0]);
    run_cases(k_misc_cases, sizeof k_misc_cases / sizeof k_misc_cases[0]);
    run_cases(k_resize_cases, sizeof k_resize_cases / sizeof k_resize_cases[0]);
    test_out_of_range_indices();
    TEST_MAIN_END();
}
