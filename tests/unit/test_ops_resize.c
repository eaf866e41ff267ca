/* Unit tests for Resize and Upsample: one node per test, run through the op's
 * import/infer/eval directly.  Expected values come from the ONNX reference
 * (onnx/backend/test/case/node/resize.py). */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/op.h"
#include "test_util.h"

/* registry.c refers to op defs weakly, which does not pull resize.o out of
 * the static library; this strong reference does. */
extern const op_def op_def_RESIZE;
const op_def *const test_force_link_resize = &op_def_RESIZE;

static smelt_ctx *g_ctx;
static gr_graph *g_graph;
static float g_iota[64];

static smelt_tensor tensor(smelt_dtype dt, void *data, int rank, ...)
{
    smelt_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    t.data = data;
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++) t.dims[i] = va_arg(ap, long long);
    va_end(ap);
    return t;
}

static gr_attr attr_str(const char *name, const char *s)
{
    gr_attr a = {.name = name, .type = GR_ATTR_STRING, .s = s, .s_len = strlen(s)};
    return a;
}

static gr_attr attr_float(const char *name, float v)
{
    gr_attr a = {.name = name, .type = GR_ATTR_FLOAT, .f = v};
    return a;
}

static gr_attr attr_int(const char *name, int64_t v)
{
    gr_attr a = {.name = name, .type = GR_ATTR_INT, .i = v};
    return a;
}

static gr_attr attr_floats(const char *name, float *v, int n)
{
    gr_attr a = {.name = name, .type = GR_ATTR_FLOATS, .floats = v, .n = n};
    return a;
}

static gr_node *new_node(op_kind op, int n_in, int64_t opset, gr_attr *attrs, int n_attrs)
{
    gr_graph_free(g_graph);
    smelt_ctx_clear(g_ctx);
    g_graph = gr_graph_new();
    g_graph->opset = opset;
    gr_node *n = gr_node_new(g_graph, "r0", op_get(op)->name, op, n_in, 1);
    for (int i = 0; i < n_in; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        n->inputs[i] = gr_value_new(g_graph, name);
    }
    n->outputs[0] = gr_value_new(g_graph, "y");
    n->outputs[0]->producer = n;
    n->attrs = attrs;
    n->n_attrs = n_attrs;
    return n;
}

/* Caller inputs are given by ORIGINAL position; import may move them (Resize-10
 * moves scales from 1 to 2), so map through the graph values. */
static void gather_inputs(gr_node *node, gr_value **orig, smelt_tensor *in, int n_in,
                          const smelt_tensor **ptrs)
{
    for (int i = 0; i < node->n_inputs; i++) {
        ptrs[i] = NULL;
        gr_value *v = node->inputs[i];
        if (!v) continue;
        if (v->constant) ptrs[i] = v->constant;
        for (int k = 0; k < n_in; k++)
            if (orig[k] == v && in[k].dtype != SMELT_DT_UNDEFINED) ptrs[i] = &in[k];
    }
}

static smelt_status run_impl(gr_node *node, smelt_tensor *in, int n_in, smelt_tensor *out,
                             bool eval)
{
    const op_def *def = op_get(node->op)->def;
    const smelt_tensor *ptrs[16];
    gr_value *orig[16];
    for (int i = 0; i < n_in; i++) orig[i] = node->inputs[i];
    memset(out, 0, sizeof *out);
    SMELT_TRY(def->import(g_ctx, g_graph, node));
    gather_inputs(node, orig, in, n_in, ptrs);
    SMELT_TRY(def->infer(g_ctx, node, ptrs, out));
    if (!eval) return SMELT_OK;
    size_t bytes = (size_t)op_numel(out) * smelt_dtype_size(out->dtype);
    out->data = calloc(1, bytes ? bytes : 1);
    return def->eval(g_ctx, node, ptrs, out);
}

static smelt_status run(gr_node *node, smelt_tensor *in, int n_in, smelt_tensor *out)
{
    return run_impl(node, in, n_in, out, true);
}

static smelt_status infer_only(gr_node *node, smelt_tensor *in, int n_in, smelt_tensor *out)
{
    return run_impl(node, in, n_in, out, false);
}

static bool dims_are(const smelt_tensor *t, int rank, ...)
{
    va_list ap;
    bool ok = t->rank == rank;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++) ok = (t->dims[i] == va_arg(ap, long long)) && ok;
    va_end(ap);
    return ok;
}

static bool floats_near(const smelt_tensor *t, const float *want, int n)
{
    if (op_numel(t) != n) return false;
    for (int i = 0; i < n; i++) {
        float got = ((const float *)t->data)[i];
        if (fabsf(got - want[i]) > 1e-5f) {
            fprintf(stderr, "  element %d: got %g, want %g\n", i, got, want[i]);
            return false;
        }
    }
    return true;
}

static smelt_tensor g_x; /* [1, 1, 3, 4] iota */

static void test_linear(void)
{
    smelt_tensor out;
    gr_attr linear[] = {attr_str("mode", "linear")};
    float scales[] = {1, 1, 2, 0.5f};
    gr_node *n = new_node(OP_RESIZE, 3, 13, linear, 1);
    smelt_tensor in[3] = {g_x, {0}, tensor(SMELT_DT_FLOAT32, scales, 1, 4LL)};
    CHECK(run(n, in, 3, &out) == SMELT_OK);
    CHECK(dims_are(&out, 4, 1LL, 1LL, 6LL, 2LL));
    CHECK(floats_near(&out, (float[]){0.5f, 2.5f, 1.5f, 3.5f, 3.5f, 5.5f, 5.5f, 7.5f, 7.5f, 9.5f,
                                      8.5f, 10.5f}, 12));
    free(out.data);

    gr_attr corners[] = {attr_str("mode", "linear"),
                         attr_str("coordinate_transformation_mode", "align_corners")};
    int64_t sizes[] = {1, 1, 2, 3};
    n = new_node(OP_RESIZE, 4, 13, corners, 2);
    smelt_tensor in2[4] = {g_x, {0}, {0}, tensor(SMELT_DT_INT64, sizes, 1, 4LL)};
    CHECK(run(n, in2, 4, &out) == SMELT_OK);
    CHECK(dims_are(&out, 4, 1LL, 1LL, 2LL, 3LL));
    CHECK(floats_near(&out, (float[]){0, 1.5f, 3, 8, 9.5f, 11}, 6));
    free(out.data);

    /* opset 18 axes: sizes for the last two axes only */
    gr_attr axes_attr[] = {attr_str("mode", "linear"),
                           attr_str("coordinate_transformation_mode", "align_corners"),
                           {.name = "axes", .type = GR_ATTR_INTS, .n = 2,
                            .ints = (int64_t[]){-2, 3}}};
    n = new_node(OP_RESIZE, 4, 18, axes_attr, 3);
    smelt_tensor in3[4] = {g_x, {0}, {0}, tensor(SMELT_DT_INT64, sizes + 2, 1, 2LL)};
    CHECK(run(n, in3, 4, &out) == SMELT_OK);
    CHECK(dims_are(&out, 4, 1LL, 1LL, 2LL, 3LL));
    CHECK(floats_near(&out, (float[]){0, 1.5f, 3, 8, 9.5f, 11}, 6));
    free(out.data);
}

static void test_cubic(void)
{
    smelt_tensor out;
    int64_t sizes[] = {1, 1, 3, 3};
    gr_attr cubic[] = {attr_str("mode", "cubic")};
    gr_node *n = new_node(OP_RESIZE, 4, 13, cubic, 1);
    smelt_tensor in[4] = {g_x, {0}, {0}, tensor(SMELT_DT_INT64, sizes, 1, 4LL)};
    CHECK(run(n, in, 4, &out) == SMELT_OK);
    CHECK(floats_near(&out, (float[]){0.1261574f, 1.5f, 2.8738425f, 4.1261573f, 5.5f, 6.8738427f,
                                      8.1261578f, 9.5f, 10.873842f}, 9));
    free(out.data);

    gr_attr excl[] = {attr_str("mode", "cubic"), attr_float("cubic_coeff_a", -0.5f),
                      attr_int("exclude_outside", 1)};
    n = new_node(OP_RESIZE, 4, 13, excl, 3);
    CHECK(run(n, in, 4, &out) == SMELT_OK);
    CHECK(floats_near(&out, (float[]){0.10284464f, 1.5f, 2.8971553f, 4.1028447f, 5.5f,
                                      6.8971553f, 8.1028442f, 9.5f, 10.897158f}, 9));
    free(out.data);
}

static void test_nearest(void)
{
    smelt_tensor out;
    float scales[] = {1, 1, 1.5f, 1.5f};
    gr_node *n = new_node(OP_RESIZE, 3, 13, NULL, 0);
    smelt_tensor in[3] = {g_x, {0}, tensor(SMELT_DT_FLOAT32, scales, 1, 4LL)};
    CHECK(run(n, in, 3, &out) == SMELT_OK);
    CHECK(dims_are(&out, 4, 1LL, 1LL, 4LL, 6LL));
    CHECK(floats_near(&out, (float[]){0, 0, 1, 2, 2, 3, 0, 0, 1, 2, 2,  3,
                                      4, 4, 5, 6, 6, 7, 8, 8, 9, 10, 10, 11}, 24));
    free(out.data);

    /* nearest copies bytes: uint8 works exactly; empty roi counts as absent */
    uint8_t px[] = {10, 20, 30, 40};
    float empty;
    n = new_node(OP_RESIZE, 3, 11, NULL, 0);
    float s2[] = {1, 2};
    smelt_tensor in2[3] = {tensor(SMELT_DT_UINT8, px, 2, 2LL, 2LL),
                           tensor(SMELT_DT_FLOAT32, &empty, 1, 0LL),
                           tensor(SMELT_DT_FLOAT32, s2, 1, 2LL)};
    CHECK(run(n, in2, 3, &out) == SMELT_OK);
    uint8_t want[] = {10, 10, 20, 20, 30, 30, 40, 40};
    CHECK(dims_are(&out, 2, 2LL, 4LL) && memcmp(out.data, want, sizeof want) == 0);
    free(out.data);
}

static void test_crop_and_resize(void)
{
    smelt_tensor out;
    gr_attr attrs[] = {attr_str("mode", "linear"),
                       attr_str("coordinate_transformation_mode", "tf_crop_and_resize"),
                       attr_float("extrapolation_value", -1.0f)};
    float roi[] = {0, 0, 0.5f, 0, 1, 1, 1.5f, 1};
    int64_t sizes[] = {1, 1, 2, 2};
    gr_node *n = new_node(OP_RESIZE, 4, 13, attrs, 3);
    smelt_tensor in[4] = {g_x, tensor(SMELT_DT_FLOAT32, roi, 1, 8LL), {0},
                          tensor(SMELT_DT_INT64, sizes, 1, 4LL)};
    CHECK(run(n, in, 4, &out) == SMELT_OK);
    CHECK(floats_near(&out, (float[]){4, 7, -1, -1}, 4));
    free(out.data);

    n = new_node(OP_RESIZE, 4, 13, attrs, 3);
    in[1] = (smelt_tensor){0};
    CHECK(infer_only(n, in, 4, &out) == SMELT_ERR_MODEL);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "input 'roi' is required");
}

static void test_old_forms(void)
{
    smelt_tensor out;
    float scales[] = {1, 1, 2, 2};
    float want[] = {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3};
    smelt_tensor x = tensor(SMELT_DT_FLOAT32, g_iota, 4, 1LL, 1LL, 2LL, 2LL);

    /* Resize-10: X, scales */
    gr_node *n = new_node(OP_RESIZE, 2, 10, NULL, 0);
    smelt_tensor in[2] = {x, tensor(SMELT_DT_FLOAT32, scales, 1, 4LL)};
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(n->n_inputs == 3 && n->inputs[1] == NULL);
    CHECK(floats_near(&out, want, 16));
    free(out.data);

    /* Upsample-9: scales input; Upsample-7: scales attribute */
    n = new_node(OP_UPSAMPLE, 2, 9, NULL, 0);
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(floats_near(&out, want, 16));
    free(out.data);
    gr_attr attrs[] = {attr_floats("scales", scales, 4), attr_str("mode", "nearest")};
    n = new_node(OP_UPSAMPLE, 1, 7, attrs, 2);
    CHECK(run(n, in, 1, &out) == SMELT_OK);
    CHECK(floats_near(&out, want, 16));
    free(out.data);

    /* Upsample linear is asymmetric: x/2 */
    gr_attr linear[] = {attr_str("mode", "linear")};
    n = new_node(OP_UPSAMPLE, 2, 9, linear, 1);
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(floats_near(&out, (float[]){0, 0.5f, 1, 1, 1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 2, 2.5f, 3, 3},
                      16));
    free(out.data);
}

static void test_infer_and_errors(void)
{
    smelt_tensor out;
    float scales[] = {1, 1, 2, 2};
    int64_t sizes[] = {1, 1, 5, 5};
    smelt_tensor x = tensor(SMELT_DT_FLOAT32, NULL, 4, GR_DIM_SYM(0), 3LL, 8LL, GR_DIM_SYM(1));

    gr_node *n = new_node(OP_RESIZE, 3, 13, NULL, 0);
    smelt_tensor in[4] = {x, {0}, tensor(SMELT_DT_FLOAT32, scales, 1, 4LL),
                          tensor(SMELT_DT_INT64, sizes, 1, 4LL)};
    CHECK(infer_only(n, in, 3, &out) == SMELT_OK);
    CHECK(dims_are(&out, 4, GR_DIM_SYM(0), 3LL, 16LL, GR_DIM_UNKNOWN));
    in[2].data = NULL;
    n = new_node(OP_RESIZE, 3, 13, NULL, 0);
    CHECK(infer_only(n, in, 3, &out) == SMELT_OK);
    CHECK(dims_are(&out, 4, GR_DIM_UNKNOWN, GR_DIM_UNKNOWN, GR_DIM_UNKNOWN, GR_DIM_UNKNOWN));
    in[2].data = scales;

    n = new_node(OP_RESIZE, 4, 13, NULL, 0);
    CHECK(infer_only(n, in, 4, &out) == SMELT_ERR_MODEL);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "only one of 'scales' and 'sizes'");
    n = new_node(OP_RESIZE, 1, 13, NULL, 0);
    CHECK(infer_only(n, in, 1, &out) == SMELT_ERR_MODEL);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "one of 'scales' and 'sizes' is required");

    scales[2] = -1;
    n = new_node(OP_RESIZE, 3, 13, NULL, 0);
    CHECK(infer_only(n, in, 3, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "scale -1 for axis 2 must be positive");
    scales[2] = 2;
    n = new_node(OP_RESIZE, 3, 13, NULL, 0);
    in[2].dims[0] = 3;
    CHECK(infer_only(n, in, 3, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "'scales' must be 1-D with 4 values");
    in[2].dims[0] = 4;

    gr_attr area[] = {attr_str("mode", "area")};
    n = new_node(OP_RESIZE, 3, 13, area, 1);
    CHECK(infer_only(n, in, 3, &out) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "unknown mode 'area'");
    gr_attr aa[] = {attr_int("antialias", 1)};
    n = new_node(OP_RESIZE, 3, 18, aa, 1);
    CHECK(infer_only(n, in, 3, &out) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "antialias=1 is not supported");
    gr_attr keep[] = {attr_str("keep_aspect_ratio_policy", "not_larger")};
    n = new_node(OP_RESIZE, 3, 18, keep, 1);
    CHECK(infer_only(n, in, 3, &out) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "keep_aspect_ratio_policy 'not_larger'");
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "node 'r0' (Resize)");
}

int main(void)
{
    for (int i = 0; i < (int)(sizeof g_iota / sizeof g_iota[0]); i++) g_iota[i] = (float)i;
    g_x = tensor(SMELT_DT_FLOAT32, g_iota, 4, 1LL, 1LL, 3LL, 4LL);
    g_ctx = smelt_ctx_new();
    test_linear();
    test_cubic();
    test_nearest();
    test_crop_and_resize();
    test_old_forms();
    test_infer_and_errors();
    gr_graph_free(g_graph);
    smelt_ctx_free(g_ctx);
    TEST_MAIN_END();
}
