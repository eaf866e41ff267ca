/* Unit tests for the data family: one node per test, run through the op's
 * import/infer/eval directly. */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/op.h"
#include "test_util.h"

/* ---- tiny harness ------------------------------------------------------------------ */

/* registry.c refers to op defs weakly, which does not pull data.o out of the
 * static library; this strong reference does. */
extern const op_def op_def_SLICE;
const op_def *const test_force_link_data = &op_def_SLICE;

static smelt_ctx *g_ctx;
static gr_graph *g_graph;

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

static gr_attr attr_int(const char *name, int64_t v)
{
    gr_attr a = {.name = name, .type = GR_ATTR_INT, .i = v};
    return a;
}

static gr_attr attr_ints(const char *name, int64_t *v, int n)
{
    gr_attr a = {.name = name, .type = GR_ATTR_INTS, .ints = v, .n = n};
    return a;
}

static gr_attr attr_float(const char *name, float v)
{
    gr_attr a = {.name = name, .type = GR_ATTR_FLOAT, .f = v};
    return a;
}

static gr_attr attr_str(const char *name, const char *s)
{
    gr_attr a = {.name = name, .type = GR_ATTR_STRING, .s = s, .s_len = strlen(s)};
    return a;
}

/* A fresh graph with one node of `op` with n_in inputs named in0, in1, ... */
static gr_node *new_node(op_kind op, int n_in, int64_t opset, gr_attr *attrs, int n_attrs)
{
    gr_graph_free(g_graph);
    smelt_ctx_clear(g_ctx);
    g_graph = gr_graph_new();
    g_graph->opset = opset;
    gr_node *n = gr_node_new(g_graph, "n0", op_get(op)->name, op, n_in, 1);
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

/* Input pointers after import: the caller's tensors (dtype set) or the
 * constants import added; NULL where omitted. */
static void gather_inputs(gr_node *node, smelt_tensor *in, int n_in, const smelt_tensor **ptrs)
{
    for (int i = 0; i < node->n_inputs; i++) {
        ptrs[i] = NULL;
        if (i < n_in && in[i].dtype != SMELT_DT_UNDEFINED) ptrs[i] = &in[i];
        else if (node->inputs[i] && node->inputs[i]->constant) ptrs[i] = node->inputs[i]->constant;
    }
}

static smelt_status import_infer(gr_node *node, smelt_tensor *in, int n_in, smelt_tensor *out)
{
    const op_def *def = op_get(node->op)->def;
    const smelt_tensor *ptrs[16];
    memset(out, 0, sizeof *out);
    if (def->import) SMELT_TRY(def->import(g_ctx, g_graph, node));
    gather_inputs(node, in, n_in, ptrs);
    return def->infer(g_ctx, node, ptrs, out);
}

/* import + infer + eval; out->data is malloc'ed (free with free). */
static smelt_status run(gr_node *node, smelt_tensor *in, int n_in, smelt_tensor *out)
{
    const op_def *def = op_get(node->op)->def;
    const smelt_tensor *ptrs[16];
    SMELT_TRY(import_infer(node, in, n_in, out));
    size_t bytes = (size_t)op_numel(out) * smelt_dtype_size(out->dtype);
    out->data = calloc(1, bytes ? bytes : 1);
    gather_inputs(node, in, n_in, ptrs);
    smelt_status s = def->eval(g_ctx, node, ptrs, out);
    return s;
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

static bool floats_are(const smelt_tensor *t, const float *want, int n)
{
    if (op_numel(t) != n) return false;
    for (int i = 0; i < n; i++)
        if (((const float *)t->data)[i] != want[i]) return false;
    return true;
}

static bool i64_are(const smelt_tensor *t, const int64_t *want, int n)
{
    if (op_numel(t) != n) return false;
    for (int i = 0; i < n; i++)
        if (((const int64_t *)t->data)[i] != want[i]) return false;
    return true;
}

static float g_iota[256];

/* ---- Slice ------------------------------------------------------------------------- */

static void test_slice(void)
{
    smelt_tensor out;
    gr_node *n = new_node(OP_SLICE, 5, 13, NULL, 0);
    int64_t st[] = {1, 0}, en[] = {3, INT64_MAX}, ax[] = {0, -1}, sp[] = {1, 2};
    smelt_tensor in[5] = {tensor(SMELT_DT_FLOAT32, g_iota, 2, 3LL, 4LL),
                          tensor(SMELT_DT_INT64, st, 1, 2LL), tensor(SMELT_DT_INT64, en, 1, 2LL),
                          tensor(SMELT_DT_INT64, ax, 1, 2LL), tensor(SMELT_DT_INT64, sp, 1, 2LL)};
    CHECK(run(n, in, 5, &out) == SMELT_OK);
    CHECK(dims_are(&out, 2, 2LL, 2LL));
    CHECK(floats_are(&out, (float[]){4, 6, 8, 10}, 4));
    free(out.data);

    /* negative step from the end to INT64_MIN */
    n = new_node(OP_SLICE, 5, 13, NULL, 0);
    int64_t st2[] = {-1}, en2[] = {INT64_MIN}, ax2[] = {0}, sp2[] = {-2};
    smelt_tensor in2[5] = {
        tensor(SMELT_DT_FLOAT32, g_iota, 1, 5LL), tensor(SMELT_DT_INT64, st2, 1, 1LL),
        tensor(SMELT_DT_INT64, en2, 1, 1LL), tensor(SMELT_DT_INT64, ax2, 1, 1LL),
        tensor(SMELT_DT_INT64, sp2, 1, 1LL)};
    CHECK(run(n, in2, 5, &out) == SMELT_OK);
    CHECK(floats_are(&out, (float[]){4, 2, 0}, 3));
    free(out.data);

    /* step INT64_MIN selects just the first element */
    sp2[0] = INT64_MIN;
    n = new_node(OP_SLICE, 5, 13, NULL, 0);
    CHECK(run(n, in2, 5, &out) == SMELT_OK);
    CHECK(floats_are(&out, (float[]){4}, 1));
    free(out.data);

    /* empty result: start past the end */
    n = new_node(OP_SLICE, 3, 13, NULL, 0);
    int64_t st3[] = {10}, en3[] = {20};
    smelt_tensor in3[3] = {tensor(SMELT_DT_FLOAT32, g_iota, 1, 5LL),
                           tensor(SMELT_DT_INT64, st3, 1, 1LL),
                           tensor(SMELT_DT_INT64, en3, 1, 1LL)};
    CHECK(run(n, in3, 3, &out) == SMELT_OK);
    CHECK(dims_are(&out, 1, 0LL));
    free(out.data);

    /* opset 9: attributes become inputs */
    int64_t a_st[] = {1}, a_en[] = {1000}, a_ax[] = {1};
    gr_attr attrs[] = {attr_ints("starts", a_st, 1), attr_ints("ends", a_en, 1),
                       attr_ints("axes", a_ax, 1)};
    n = new_node(OP_SLICE, 1, 9, attrs, 3);
    smelt_tensor in4[1] = {tensor(SMELT_DT_FLOAT32, g_iota, 2, 2LL, 3LL)};
    CHECK(run(n, in4, 1, &out) == SMELT_OK);
    CHECK(n->n_inputs == 4);
    CHECK(dims_are(&out, 2, 2LL, 2LL));
    CHECK(floats_are(&out, (float[]){1, 2, 4, 5}, 4));
    free(out.data);

    /* compile time: symbolic dim kept by a whole-axis slice; unknown starts */
    n = new_node(OP_SLICE, 4, 13, NULL, 0);
    int64_t st5[] = {0, 1}, en5[] = {INT64_MAX, 3}, ax5[] = {0, 1};
    smelt_tensor in5[4] = {tensor(SMELT_DT_FLOAT32, NULL, 3, GR_DIM_SYM(0), 4LL, GR_DIM_SYM(1)),
                           tensor(SMELT_DT_INT64, st5, 1, 2LL), tensor(SMELT_DT_INT64, en5, 1, 2LL),
                           tensor(SMELT_DT_INT64, ax5, 1, 2LL)};
    CHECK(import_infer(n, in5, 4, &out) == SMELT_OK);
    CHECK(dims_are(&out, 3, GR_DIM_SYM(0), 2LL, GR_DIM_SYM(1)));
    in5[1].data = NULL;
    CHECK(import_infer(n, in5, 4, &out) == SMELT_OK);
    CHECK(dims_are(&out, 3, GR_DIM_UNKNOWN, GR_DIM_UNKNOWN, GR_DIM_SYM(1)));

    /* errors */
    n = new_node(OP_SLICE, 5, 13, NULL, 0);
    sp[1] = 0;
    CHECK(import_infer(n, in, 5, &out) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "step of axis 1 is 0");
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "node 'n0' (Slice)");
    sp[1] = 1;
    n = new_node(OP_SLICE, 4, 13, NULL, 0);
    ax[1] = 0;
    CHECK(import_infer(n, in, 4, &out) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "sliced twice");
    n = new_node(OP_SLICE, 3, 13, NULL, 0);
    int64_t en_bad[] = {1, 2, 3};
    in[2] = tensor(SMELT_DT_INT64, en_bad, 1, 3LL);
    CHECK(import_infer(n, in, 3, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "'ends' has 3 values, expected 2");
}

/* ---- Gather / GatherElements / ScatterND ---------------------------------------------- */

static void test_gather(void)
{
    smelt_tensor out;
    gr_attr attrs[] = {attr_int("axis", 1)};
    gr_node *n = new_node(OP_GATHER, 2, 13, attrs, 1);
    int64_t idx[] = {-1, 0, 2, 2};
    smelt_tensor in[2] = {tensor(SMELT_DT_FLOAT32, g_iota, 2, 2LL, 3LL),
                          tensor(SMELT_DT_INT64, idx, 2, 2LL, 2LL)};
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(dims_are(&out, 3, 2LL, 2LL, 2LL));
    CHECK(floats_are(&out, (float[]){2, 0, 2, 2, 5, 3, 5, 5}, 8));
    free(out.data);

    /* int64 data, int32 scalar index on axis 0 */
    int64_t data[] = {10, 11, 12, 13, 14, 15};
    int32_t one = 1;
    n = new_node(OP_GATHER, 2, 13, NULL, 0);
    smelt_tensor in2[2] = {tensor(SMELT_DT_INT64, data, 2, 3LL, 2LL),
                           tensor(SMELT_DT_INT32, &one, 0)};
    CHECK(run(n, in2, 2, &out) == SMELT_OK);
    CHECK(dims_are(&out, 1, 2LL));
    CHECK(i64_are(&out, (int64_t[]){12, 13}, 2));
    free(out.data);

    /* out of range at run time */
    idx[3] = 3;
    n = new_node(OP_GATHER, 2, 13, attrs, 1);
    CHECK(run(n, in, 2, &out) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "index 3 at position 3 is out of range");
    free(out.data);
    idx[3] = -4;
    n = new_node(OP_GATHER, 2, 13, attrs, 1);
    CHECK(run(n, in, 2, &out) == SMELT_ERR_RUNTIME);
    free(out.data);

    /* bad axis */
    gr_attr bad[] = {attr_int("axis", 2)};
    n = new_node(OP_GATHER, 2, 13, bad, 1);
    CHECK(import_infer(n, in, 2, &out) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "axis 2 is out of range for rank 2");
}

static void test_gather_elements(void)
{
    smelt_tensor out;
    gr_attr attrs[] = {attr_int("axis", 1)};
    gr_node *n = new_node(OP_GATHER_ELEMENTS, 2, 13, attrs, 1);
    int32_t idx[] = {0, 0, -1, 0};
    smelt_tensor in[2] = {tensor(SMELT_DT_FLOAT32, g_iota, 2, 2LL, 2LL),
                          tensor(SMELT_DT_INT32, idx, 2, 2LL, 2LL)};
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(floats_are(&out, (float[]){0, 0, 3, 2}, 4));
    free(out.data);
    idx[0] = 2;
    n = new_node(OP_GATHER_ELEMENTS, 2, 13, attrs, 1);
    CHECK(run(n, in, 2, &out) == SMELT_ERR_RUNTIME);
    free(out.data);
    n = new_node(OP_GATHER_ELEMENTS, 2, 13, attrs, 1);
    in[1] = tensor(SMELT_DT_INT32, idx, 2, 3LL, 1LL);
    CHECK(import_infer(n, in, 2, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "larger than 'data' dim 0");
}

static void test_scatter_nd(void)
{
    smelt_tensor out;
    float data[] = {1, 2, 3, 4, 5, 6};
    float upd[] = {10, 20, 30, 40, 50, 60};
    int64_t idx[] = {1, 0, 1};
    gr_attr attrs[] = {attr_str("reduction", "add")};
    gr_node *n = new_node(OP_SCATTER_ND, 3, 16, attrs, 1);
    smelt_tensor in[3] = {tensor(SMELT_DT_FLOAT32, data, 2, 3LL, 2LL),
                          tensor(SMELT_DT_INT64, idx, 2, 3LL, 1LL),
                          tensor(SMELT_DT_FLOAT32, upd, 2, 3LL, 2LL)};
    CHECK(run(n, in, 3, &out) == SMELT_OK);
    CHECK(floats_are(&out, (float[]){31, 42, 63, 84, 5, 6}, 6));
    free(out.data);

    /* no reduction: element updates with k == rank, negative index */
    int64_t idx2[] = {0, 1, -1, 0};
    n = new_node(OP_SCATTER_ND, 3, 16, NULL, 0);
    smelt_tensor in2[3] = {tensor(SMELT_DT_FLOAT32, data, 2, 3LL, 2LL),
                           tensor(SMELT_DT_INT64, idx2, 2, 2LL, 2LL),
                           tensor(SMELT_DT_FLOAT32, upd, 1, 2LL)};
    CHECK(run(n, in2, 3, &out) == SMELT_OK);
    CHECK(floats_are(&out, (float[]){1, 10, 3, 4, 20, 6}, 6));
    free(out.data);

    idx2[2] = 3;
    n = new_node(OP_SCATTER_ND, 3, 16, NULL, 0);
    CHECK(run(n, in2, 3, &out) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "index 3 (update 1, component 0)");
    free(out.data);

    n = new_node(OP_SCATTER_ND, 3, 16, NULL, 0);
    in2[2] = tensor(SMELT_DT_FLOAT32, upd, 1, 3LL);
    CHECK(import_infer(n, in2, 3, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "'updates' dim 0 is 3, expected 2");

    gr_attr bad[] = {attr_str("reduction", "sub")};
    n = new_node(OP_SCATTER_ND, 3, 16, bad, 1);
    CHECK(import_infer(n, in2, 3, &out) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "unknown reduction 'sub'");
}

/* ---- Pad -------------------------------------------------------------------------- */

static void test_pad(void)
{
    smelt_tensor out;
    int64_t pads[] = {0, 1, 0, 2}; /* [1,3] -> [1,6]: one before, two after on axis 1 */
    float v = 9;
    gr_node *n = new_node(OP_PAD, 3, 13, NULL, 0);
    smelt_tensor in[4] = {tensor(SMELT_DT_FLOAT32, g_iota, 2, 1LL, 3LL),
                          tensor(SMELT_DT_INT64, pads, 1, 4LL), tensor(SMELT_DT_FLOAT32, &v, 0)};
    CHECK(run(n, in, 3, &out) == SMELT_OK);
    CHECK(dims_are(&out, 2, 1LL, 6LL));
    CHECK(floats_are(&out, (float[]){9, 0, 1, 2, 9, 9}, 6));
    free(out.data);

    gr_attr reflect[] = {attr_str("mode", "reflect")};
    n = new_node(OP_PAD, 2, 13, reflect, 1);
    pads[1] = 2;
    pads[3] = 3;
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(floats_are(&out, (float[]){2, 1, 0, 1, 2, 1, 0, 1}, 8));
    free(out.data);

    gr_attr edge[] = {attr_str("mode", "edge")};
    n = new_node(OP_PAD, 2, 13, edge, 1);
    pads[1] = 1;
    pads[3] = -1; /* negative pads crop */
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(floats_are(&out, (float[]){0, 0, 1}, 3));
    free(out.data);

    /* opset 2: pads and value are attributes; int32 data */
    int32_t idata[] = {1, 2, 3, 4};
    int64_t apads[] = {1, 0, 0, 1};
    gr_attr attrs[] = {attr_ints("pads", apads, 4), attr_float("value", -1.0f)};
    n = new_node(OP_PAD, 1, 2, attrs, 2);
    smelt_tensor in2[1] = {tensor(SMELT_DT_INT32, idata, 2, 2LL, 2LL)};
    CHECK(run(n, in2, 1, &out) == SMELT_OK);
    CHECK(dims_are(&out, 2, 3LL, 3LL));
    int32_t want[] = {-1, -1, -1, 1, 2, -1, 3, 4, -1};
    CHECK(memcmp(out.data, want, sizeof want) == 0);
    free(out.data);

    /* opset 18 axes input: pad only the last axis */
    int64_t pads3[] = {1, 1}, axes[] = {-1};
    n = new_node(OP_PAD, 4, 18, NULL, 0);
    smelt_tensor in3[4] = {tensor(SMELT_DT_INT32, idata, 2, 2LL, 2LL),
                           tensor(SMELT_DT_INT64, pads3, 1, 2LL), {0},
                           tensor(SMELT_DT_INT64, axes, 1, 1LL)};
    CHECK(run(n, in3, 4, &out) == SMELT_OK);
    CHECK(dims_are(&out, 2, 2LL, 4LL));
    int32_t want3[] = {0, 1, 2, 0, 0, 3, 4, 0};
    CHECK(memcmp(out.data, want3, sizeof want3) == 0);
    free(out.data);

    /* unknown pads at compile time: rank known, dims unknown */
    n = new_node(OP_PAD, 2, 13, NULL, 0);
    in[1].data = NULL;
    CHECK(import_infer(n, in, 2, &out) == SMELT_OK);
    CHECK(dims_are(&out, 2, GR_DIM_UNKNOWN, GR_DIM_UNKNOWN));
    in[1].data = pads;

    /* errors */
    pads[3] = -5;
    n = new_node(OP_PAD, 2, 13, NULL, 0);
    CHECK(import_infer(n, in, 2, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "give an invalid size");
    gr_attr bad[] = {attr_str("mode", "mirror")};
    n = new_node(OP_PAD, 2, 13, bad, 1);
    CHECK(import_infer(n, in, 2, &out) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "unknown mode 'mirror'");
    n = new_node(OP_PAD, 2, 13, NULL, 0);
    in[1] = tensor(SMELT_DT_INT64, pads, 1, 3LL);
    CHECK(import_infer(n, in, 2, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "'pads' has 3 values, expected 4");
}

/* ---- Trilu / NonZero / OneHot -------------------------------------------------------- */

static void test_trilu(void)
{
    smelt_tensor out;
    int64_t k = 1;
    gr_node *n = new_node(OP_TRILU, 2, 14, NULL, 0);
    smelt_tensor in[2] = {tensor(SMELT_DT_FLOAT32, g_iota, 2, 3LL, 3LL),
                          tensor(SMELT_DT_INT64, &k, 0)};
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(floats_are(&out, (float[]){0, 1, 2, 0, 0, 5, 0, 0, 0}, 9));
    free(out.data);

    gr_attr lower[] = {attr_int("upper", 0)};
    k = -1;
    n = new_node(OP_TRILU, 2, 14, lower, 1);
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(floats_are(&out, (float[]){0, 0, 0, 3, 0, 0, 6, 7, 0}, 9));
    free(out.data);

    k = INT64_MAX; /* huge k: lower keeps everything */
    n = new_node(OP_TRILU, 2, 14, lower, 1);
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(floats_are(&out, g_iota, 9));
    free(out.data);

    n = new_node(OP_TRILU, 1, 14, NULL, 0);
    in[0] = tensor(SMELT_DT_FLOAT32, g_iota, 1, 3LL);
    CHECK(import_infer(n, in, 1, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "input 'in0' has rank 1, expected >= 2");
}

static void test_non_zero(void)
{
    smelt_tensor out;
    float data[] = {0, 1, -0.0f, 2, 3, 0};
    gr_node *n = new_node(OP_NON_ZERO, 1, 13, NULL, 0);
    smelt_tensor in[1] = {tensor(SMELT_DT_FLOAT32, NULL, 2, 2LL, 3LL)};
    CHECK(import_infer(n, in, 1, &out) == SMELT_OK);
    CHECK(dims_are(&out, 2, 2LL, GR_DIM_UNKNOWN));
    CHECK(out.dtype == SMELT_DT_INT64);
    in[0].data = data;
    CHECK(run(n, in, 1, &out) == SMELT_OK);
    CHECK(dims_are(&out, 2, 2LL, 3LL));
    CHECK(i64_are(&out, (int64_t[]){0, 1, 1, 1, 0, 1}, 6));
    free(out.data);

    uint8_t flags[] = {1, 0, 1};
    n = new_node(OP_NON_ZERO, 1, 13, NULL, 0);
    smelt_tensor in2[1] = {tensor(SMELT_DT_BOOL, flags, 1, 3LL)};
    CHECK(run(n, in2, 1, &out) == SMELT_OK);
    CHECK(i64_are(&out, (int64_t[]){0, 2}, 2));
    free(out.data);
}

static void test_one_hot(void)
{
    smelt_tensor out;
    int64_t idx[] = {1, -1, 5};
    float depth = 3;
    int32_t values[] = {0, 7};
    gr_attr attrs[] = {attr_int("axis", 0)};
    gr_node *n = new_node(OP_ONE_HOT, 3, 11, attrs, 1);
    smelt_tensor in[3] = {tensor(SMELT_DT_INT64, idx, 1, 3LL),
                          tensor(SMELT_DT_FLOAT32, &depth, 0),
                          tensor(SMELT_DT_INT32, values, 1, 2LL)};
    CHECK(run(n, in, 3, &out) == SMELT_OK);
    CHECK(dims_are(&out, 2, 3LL, 3LL));
    CHECK(out.dtype == SMELT_DT_INT32);
    int32_t want[] = {0, 0, 0, 7, 0, 0, 0, 7, 0}; /* index 5 is out of range: all off */
    CHECK(memcmp(out.data, want, sizeof want) == 0);
    free(out.data);

    n = new_node(OP_ONE_HOT, 3, 11, NULL, 0);
    in[1].data = NULL;
    CHECK(import_infer(n, in, 3, &out) == SMELT_OK);
    CHECK(dims_are(&out, 2, 3LL, GR_DIM_UNKNOWN));
    depth = 0;
    in[1].data = &depth;
    n = new_node(OP_ONE_HOT, 3, 11, NULL, 0);
    CHECK(import_infer(n, in, 3, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "'depth' is 0, must be positive");
}

/* ---- DepthToSpace / SpaceToDepth ------------------------------------------------------ */

static void test_depth_space(void)
{
    smelt_tensor out, back;
    gr_attr dcr[] = {attr_int("blocksize", 2)};
    gr_attr crd[] = {attr_int("blocksize", 2), attr_str("mode", "CRD")};
    /* [1, 4, 1, 1] -> [1, 1, 2, 2] */
    gr_node *n = new_node(OP_DEPTH_TO_SPACE, 1, 13, dcr, 1);
    smelt_tensor in[1] = {tensor(SMELT_DT_FLOAT32, g_iota, 4, 1LL, 8LL, 1LL, 1LL)};
    CHECK(run(n, in, 1, &out) == SMELT_OK);
    CHECK(dims_are(&out, 4, 1LL, 2LL, 2LL, 2LL));
    /* DCR: output channel c at (bi, bj) reads input channel (bi*2 + bj)*2 + c */
    CHECK(floats_are(&out, (float[]){0, 2, 4, 6, 1, 3, 5, 7}, 8));
    free(out.data);
    n = new_node(OP_DEPTH_TO_SPACE, 1, 13, crd, 2);
    CHECK(run(n, in, 1, &out) == SMELT_OK);
    CHECK(floats_are(&out, (float[]){0, 1, 2, 3, 4, 5, 6, 7}, 8));
    free(out.data);

    /* SpaceToDepth inverts DepthToSpace DCR */
    in[0] = tensor(SMELT_DT_FLOAT32, g_iota, 4, 2LL, 3LL, 4LL, 6LL);
    n = new_node(OP_SPACE_TO_DEPTH, 1, 13, dcr, 1);
    CHECK(run(n, in, 1, &out) == SMELT_OK);
    CHECK(dims_are(&out, 4, 2LL, 12LL, 2LL, 3LL));
    CHECK(((float *)out.data)[1] == 2.0f); /* channel 0 (bi=bj=0), w'=1 -> input w=2 */
    n = new_node(OP_DEPTH_TO_SPACE, 1, 13, dcr, 1);
    CHECK(run(n, &out, 1, &back) == SMELT_OK);
    CHECK(dims_are(&back, 4, 2LL, 3LL, 4LL, 6LL));
    CHECK(floats_are(&back, g_iota, 144));
    free(out.data);
    free(back.data);

    /* symbolic batch propagates; errors */
    in[0] = tensor(SMELT_DT_FLOAT32, NULL, 4, GR_DIM_SYM(0), 8LL, 3LL, GR_DIM_SYM(1));
    n = new_node(OP_DEPTH_TO_SPACE, 1, 13, dcr, 1);
    CHECK(import_infer(n, in, 1, &out) == SMELT_OK);
    CHECK(dims_are(&out, 4, GR_DIM_SYM(0), 2LL, 6LL, GR_DIM_UNKNOWN));
    in[0].dims[1] = 6;
    n = new_node(OP_DEPTH_TO_SPACE, 1, 13, dcr, 1);
    CHECK(import_infer(n, in, 1, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "not divisible by blocksize^2");
    gr_attr zero[] = {attr_int("blocksize", 0)};
    n = new_node(OP_SPACE_TO_DEPTH, 1, 13, zero, 1);
    CHECK(import_infer(n, in, 1, &out) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "'blocksize' is 0");
}

/* Zero-element tensors, with NULL data as an executor may pass them. */
static void test_empty(void)
{
    smelt_tensor out;
    int64_t idx[] = {1};
    gr_node *n = new_node(OP_GATHER, 2, 13, NULL, 0);
    smelt_tensor in[2] = {tensor(SMELT_DT_FLOAT32, NULL, 2, 2LL, 0LL),
                          tensor(SMELT_DT_INT64, idx, 1, 1LL)};
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(dims_are(&out, 2, 1LL, 0LL));
    free(out.data);
    n = new_node(OP_GATHER, 2, 13, NULL, 0);
    in[1] = tensor(SMELT_DT_INT64, NULL, 1, 0LL);
    in[0].dims[1] = 3;
    in[0].data = g_iota;
    CHECK(run(n, in, 2, &out) == SMELT_OK);
    CHECK(dims_are(&out, 2, 0LL, 3LL));
    free(out.data);

    int64_t pads[] = {1, 1};
    n = new_node(OP_PAD, 2, 13, NULL, 0);
    smelt_tensor in2[2] = {tensor(SMELT_DT_FLOAT32, NULL, 1, 0LL),
                           tensor(SMELT_DT_INT64, pads, 1, 2LL)};
    CHECK(run(n, in2, 2, &out) == SMELT_OK);
    CHECK(floats_are(&out, (float[]){0, 0}, 2));
    free(out.data);
    gr_attr edge[] = {attr_str("mode", "edge")};
    n = new_node(OP_PAD, 2, 13, edge, 1);
    CHECK(run(n, in2, 2, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(g_ctx), "cannot pad empty axis 0");

    int64_t sidx[] = {0, 0};
    n = new_node(OP_SCATTER_ND, 3, 16, NULL, 0);
    smelt_tensor in3[3] = {tensor(SMELT_DT_FLOAT32, NULL, 2, 0LL, 2LL),
                           tensor(SMELT_DT_INT64, sidx, 2, 1LL, 1LL),
                           tensor(SMELT_DT_FLOAT32, NULL, 2, 1LL, 2LL)};
    CHECK(run(n, in3, 3, &out) == SMELT_ERR_RUNTIME);
    free(out.data);
}

int main(void)
{
    for (int i = 0; i < (int)(sizeof g_iota / sizeof g_iota[0]); i++) g_iota[i] = (float)i;
    g_ctx = smelt_ctx_new();
    test_slice();
    test_gather();
    test_gather_elements();
    test_scatter_nd();
    test_pad();
    test_trilu();
    test_non_zero();
    test_one_hot();
    test_depth_space();
    test_empty();
    gr_graph_free(g_graph);
    smelt_ctx_free(g_ctx);
    TEST_MAIN_END();
}
