/* Unit tests of the shape family: Identity, Dropout, Flatten, Reshape,
 * Transpose, Squeeze/Unsqueeze, Shape, Size, Expand, Tile, Concat, Split,
 * ConstantOfShape, Range. */
#include <stdlib.h>

#include "ops/op.h"
#include "test_util.h"

/* A strong reference: registry.c's references are weak, and a weak
 * reference alone does not pull shape.o out of the static library. */
extern const op_def op_def_RESHAPE;

static void test_registry(void)
{
    CHECK(op_get(OP_RESHAPE)->def == &op_def_RESHAPE);
    for (int op = OP_IDENTITY; op <= OP_RANGE; op++) CHECK(op_get((op_kind)op)->def != NULL);
}

/* ---- tiny one-node harness ---- */

static gr_node *mk_node(gr_graph *g, op_kind op, int n_in, int n_out)
{
    static const char *const names[] = {"X", "B", "C", "D"};
    gr_node *n = gr_node_new(g, "n0", op_get(op)->name, op, n_in, n_out);
    for (int k = 0; k < n_in; k++) n->inputs[k] = gr_value_new(g, names[k]);
    for (int k = 0; k < n_out; k++) {
        char name[16];
        snprintf(name, sizeof name, "Y%d", k);
        n->outputs[k] = gr_value_new(g, name);
        n->outputs[k]->producer = n;
        n->outputs[k]->producer_output = k;
    }
    return n;
}

static smelt_tensor mkt(smelt_dtype dt, int rank, const int64_t *dims, void *data)
{
    smelt_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
    t.data = data;
    return t;
}

static gr_attr attr_int(const char *name, int64_t v)
{
    gr_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = GR_ATTR_INT;
    a.i = v;
    return a;
}

static gr_attr attr_ints(const char *name, int64_t *v, int n)
{
    gr_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = GR_ATTR_INTS;
    a.ints = v;
    a.n = n;
    return a;
}

/* import, infer, and (when do_eval) allocate outputs and eval.  given[k]
 * NULL: node input k's constant (e.g. set by import), or omitted. */
static smelt_status run_node(smelt_ctx *ctx, gr_graph *g, gr_node *n, const smelt_tensor **given,
                             int n_given, smelt_tensor *out, bool do_eval)
{
    const op_def *d = op_get(n->op)->def;
    if (!d) return SMELT_ERR_UNSUPPORTED;
    if (d->import) SMELT_TRY(d->import(ctx, g, n));
    smelt_tensor infos[8];
    const smelt_tensor *in[8];
    for (int k = 0; k < n->n_inputs; k++) {
        in[k] = NULL;
        if (k < n_given && given[k]) {
            in[k] = given[k];
        } else if (n->inputs[k] && n->inputs[k]->constant) {
            infos[k] = gr_value_info(n->inputs[k]);
            in[k] = &infos[k];
        }
    }
    memset(out, 0, sizeof(smelt_tensor) * (size_t)n->n_outputs);
    SMELT_TRY(d->infer(ctx, n, in, out));
    if (!do_eval) return SMELT_OK;
    for (int k = 0; k < n->n_outputs; k++) {
        int64_t numel = op_numel(&out[k]);
        out[k].data = calloc(numel ? (size_t)numel : 1, smelt_dtype_size(out[k].dtype));
    }
    return d->eval(ctx, n, in, out);
}

static void free_outs(smelt_tensor *out, int n)
{
    for (int k = 0; k < n; k++) free(out[k].data);
}

/* ---- helpers ---- */

static smelt_ctx *g_ctx;

static gr_graph *graph_at(int64_t opset)
{
    gr_graph *g = gr_graph_new();
    g->opset = opset;
    return g;
}

static bool dims_are(const smelt_tensor *t, int rank, const int64_t *dims)
{
    if (t->rank != rank) return false;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != dims[i]) return false;
    return true;
}

static bool f32_are(const smelt_tensor *t, const float *want, int n)
{
    if (op_numel(t) != n) return false;
    for (int i = 0; i < n; i++)
        if (((const float *)t->data)[i] != want[i]) return false;
    return true;
}

#define DIMS(...) (int64_t[]){__VA_ARGS__}
#define FLOATS(...) (float[]){__VA_ARGS__}
#define NFLOATS(...) (int)(sizeof((float[]){__VA_ARGS__}) / sizeof(float))

static const char *msg(void) { return smelt_ctx_message(g_ctx); }

/* ---- Identity, Dropout ---- */

static void test_identity_dropout(void)
{
    gr_graph *g = graph_at(13);
    gr_node *n = mk_node(g, OP_IDENTITY, 1, 1);
    uint8_t x[] = {1, 0, 1};
    smelt_tensor tx = mkt(SMELT_DT_BOOL, 1, DIMS(3), x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor out[2];
    CHECK(run_node(g_ctx, g, n, in, 1, out, true) == SMELT_OK);
    CHECK(out[0].dtype == SMELT_DT_BOOL && memcmp(out[0].data, x, 3) == 0);
    free_outs(out, 1);

    n = mk_node(g, OP_DROPOUT, 3, 2);
    float xf[] = {1, 2, 3}, ratio = 0.5f;
    uint8_t training = 0;
    smelt_tensor tf = mkt(SMELT_DT_FLOAT32, 1, DIMS(3), xf);
    smelt_tensor tr = mkt(SMELT_DT_FLOAT32, 0, NULL, &ratio);
    smelt_tensor tt = mkt(SMELT_DT_BOOL, 0, NULL, &training);
    const smelt_tensor *in3[] = {&tf, &tr, &tt};
    CHECK(run_node(g_ctx, g, n, in3, 3, out, true) == SMELT_OK);
    CHECK(f32_are(&out[0], xf, 3) && out[1].dtype == SMELT_DT_BOOL);
    CHECK(((uint8_t *)out[1].data)[0] == 1 && ((uint8_t *)out[1].data)[2] == 1);
    free_outs(out, 2);
    training = 1;
    CHECK(run_node(g_ctx, g, n, in3, 3, out, false) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(msg(), "training_mode=true with a nonzero ratio is not supported");
    smelt_ctx_clear(g_ctx);
    ratio = 0; /* training with ratio 0 drops nothing: deterministic */
    CHECK(run_node(g_ctx, g, n, in3, 3, out, true) == SMELT_OK);
    CHECK(f32_are(&out[0], xf, 3) && ((uint8_t *)out[1].data)[1] == 1);
    free_outs(out, 2);
    gr_graph_free(g);
}

/* ---- Flatten ---- */

static void test_flatten(void)
{
    gr_graph *g = graph_at(13);
    gr_node *n = mk_node(g, OP_FLATTEN, 1, 1);
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 4, DIMS(GR_DIM_SYM(0), 3, 4, 5), NULL);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor out[1];
    CHECK(run_node(g_ctx, g, n, in, 1, out, false) == SMELT_OK);
    CHECK(dims_are(&out[0], 2, DIMS(GR_DIM_SYM(0), 60)));
    gr_attr attrs[] = {attr_int("axis", -1)};
    n->attrs = attrs;
    n->n_attrs = 1;
    CHECK(run_node(g_ctx, g, n, in, 1, out, false) == SMELT_OK);
    CHECK(dims_are(&out[0], 2, DIMS(GR_DIM_UNKNOWN, 5)));
    attrs[0].i = 0;
    CHECK(run_node(g_ctx, g, n, in, 1, out, false) == SMELT_OK);
    CHECK(dims_are(&out[0], 2, DIMS(1, GR_DIM_UNKNOWN)));
    attrs[0].i = 5;
    CHECK(run_node(g_ctx, g, n, in, 1, out, false) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(msg(), "axis 5 is out of range [-4, 4]");
    smelt_ctx_clear(g_ctx);
    gr_graph_free(g);
}

/* ---- Reshape ---- */

static void test_reshape(void)
{
    gr_graph *g = graph_at(14);
    gr_node *n = mk_node(g, OP_RESHAPE, 2, 1);
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    int64_t shape[] = {0, -1};
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 3, DIMS(2, 3, 4), x);
    smelt_tensor ts = mkt(SMELT_DT_INT64, 1, DIMS(2), shape);
    const smelt_tensor *in[] = {&tx, &ts};
    smelt_tensor out[1];
    CHECK(run_node(g_ctx, g, n, in, 2, out, true) == SMELT_OK);
    CHECK(dims_are(&out[0], 2, DIMS(2, 12)) && f32_are(&out[0], x, 24));
    free_outs(out, 1);

    /* symbolic dims copied through cancel out of the -1 */
    int64_t shape3[] = {0, 0, -1};
    smelt_tensor tsym = mkt(SMELT_DT_FLOAT32, 4, DIMS(GR_DIM_SYM(0), GR_DIM_SYM(1), 12, 64), NULL);
    smelt_tensor ts3 = mkt(SMELT_DT_INT64, 1, DIMS(3), shape3);
    const smelt_tensor *in_sym[] = {&tsym, &ts3};
    CHECK(run_node(g_ctx, g, n, in_sym, 2, out, false) == SMELT_OK);
    CHECK(dims_are(&out[0], 3, DIMS(GR_DIM_SYM(0), GR_DIM_SYM(1), 768)));
    /* ... and a single leftover symbol becomes the -1 */
    int64_t shape4[] = {-1, 12, 64};
    smelt_tensor ts4 = mkt(SMELT_DT_INT64, 1, DIMS(3), shape4);
    tsym.dims[1] = 1;
    const smelt_tensor *in_sym2[] = {&tsym, &ts4};
    CHECK(run_node(g_ctx, g, n, in_sym2, 2, out, false) == SMELT_OK);
    CHECK(dims_are(&out[0], 3, DIMS(GR_DIM_SYM(0), 12, 64)));

    /* unknown shape data: the rank is still known */
    smelt_tensor tunk = mkt(SMELT_DT_INT64, 1, DIMS(3), NULL);
    const smelt_tensor *in_unk[] = {&tx, &tunk};
    CHECK(run_node(g_ctx, g, n, in_unk, 2, out, false) == SMELT_OK);
    CHECK(dims_are(&out[0], 3, DIMS(GR_DIM_UNKNOWN, GR_DIM_UNKNOWN, GR_DIM_UNKNOWN)));
    tunk.dims[0] = GR_DIM_SYM(3);
    CHECK(run_node(g_ctx, g, n, in_unk, 2, out, false) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(msg(), "shape input 'B' must be known at compile time");
    smelt_ctx_clear(g_ctx);

    /* errors */
    int64_t bad[] = {5, -1};
    smelt_tensor tb = mkt(SMELT_DT_INT64, 1, DIMS(2), bad);
    const smelt_tensor *in_bad[] = {&tx, &tb};
    CHECK(run_node(g_ctx, g, n, in_bad, 2, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(msg(), "cannot infer the -1 in shape [5, -1]");
    smelt_ctx_clear(g_ctx);
    bad[1] = 5;
    CHECK(run_node(g_ctx, g, n, in_bad, 2, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(msg(),
                       "cannot reshape input 'X' of shape [2, 3, 4] (24 elements) to [5, 5]");
    smelt_ctx_clear(g_ctx);
    bad[0] = -1;
    bad[1] = -1;
    CHECK(run_node(g_ctx, g, n, in_bad, 2, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(msg(), "more than one -1");
    smelt_ctx_clear(g_ctx);

    /* allowzero=1: 0 is a real zero */
    gr_attr attrs[] = {attr_int("allowzero", 1)};
    n->attrs = attrs;
    n->n_attrs = 1;
    int64_t z[] = {3, 4, 0};
    smelt_tensor tz = mkt(SMELT_DT_INT64, 1, DIMS(3), z);
    smelt_tensor tx0 = mkt(SMELT_DT_FLOAT32, 3, DIMS(0, 3, 4), x);
    const smelt_tensor *in_z[] = {&tx0, &tz};
    CHECK(run_node(g_ctx, g, n, in_z, 2, out, true) == SMELT_OK);
    CHECK(dims_are(&out[0], 3, DIMS(3, 4, 0)));
    free_outs(out, 1);
    gr_graph_free(g);

    /* opset 4: the shape attribute becomes input 1 */
    g = graph_at(4);
    n = mk_node(g, OP_RESHAPE, 1, 1);
    int64_t attr_shape[] = {4, -1};
    gr_attr attrs4[] = {attr_ints("shape", attr_shape, 2)};
    n->attrs = attrs4;
    n->n_attrs = 1;
    const smelt_tensor *in4[] = {&tx};
    CHECK(run_node(g_ctx, g, n, in4, 1, out, true) == SMELT_OK);
    CHECK(n->n_inputs == 2 && dims_are(&out[0], 2, DIMS(4, 6)) && f32_are(&out[0], x, 24));
    free_outs(out, 1);
    gr_graph_free(g);
}

/* ---- Transpose ---- */

static void test_transpose(void)
{
    gr_graph *g = graph_at(13);
    gr_node *n = mk_node(g, OP_TRANSPOSE, 1, 1);
    float x[] = {1, 2, 3, 4, 5, 6};
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 2, DIMS(2, 3), x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor out[1];
    CHECK(run_node(g_ctx, g, n, in, 1, out, true) == SMELT_OK); /* default: reverse */
    CHECK(dims_are(&out[0], 2, DIMS(3, 2)) && f32_are(&out[0], FLOATS(1, 4, 2, 5, 3, 6), 6));
    free_outs(out, 1);

    /* [B, S, H, D] -> [B, H, S, D] keeps D contiguous */
    float y[2 * 3 * 2 * 2];
    for (int i = 0; i < 24; i++) y[i] = (float)i;
    int64_t perm[] = {0, 2, 1, 3};
    gr_attr attrs[] = {attr_ints("perm", perm, 4)};
    n->attrs = attrs;
    n->n_attrs = 1;
    smelt_tensor ty = mkt(SMELT_DT_FLOAT32, 4, DIMS(2, 3, 2, 2), y);
    const smelt_tensor *in4[] = {&ty};
    CHECK(run_node(g_ctx, g, n, in4, 1, out, true) == SMELT_OK);
    CHECK(dims_are(&out[0], 4, DIMS(2, 2, 3, 2)));
    float *o = out[0].data;
    /* out[b,h,s,d] = y[b,s,h,d] */
    bool ok = true;
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 3; s++)
                for (int d = 0; d < 2; d++)
                    ok &= o[((b * 2 + h) * 3 + s) * 2 + d] == y[((b * 3 + s) * 2 + h) * 2 + d];
    CHECK(ok);
    free_outs(out, 1);

    perm[1] = 1;
    CHECK(run_node(g_ctx, g, n, in4, 1, out, false) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(msg(), "perm is not a permutation of 0..3");
    smelt_ctx_clear(g_ctx);
    attrs[0].n = 2;
    CHECK(run_node(g_ctx, g, n, in4, 1, out, false) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(msg(), "perm has 2 entries but input 'X' has rank 4");
    smelt_ctx_clear(g_ctx);
    gr_graph_free(g);
}

/* ---- Squeeze, Unsqueeze ---- */

static void test_squeeze_unsqueeze(void)
{
    gr_graph *g = graph_at(11);
    gr_node *n = mk_node(g, OP_SQUEEZE, 1, 1);
    float x[] = {1, 2, 3};
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 4, DIMS(1, 3, 1, 1), x);
    const smelt_tensor *in[] = {&tx};
    smelt_tensor out[1];
    CHECK(run_node(g_ctx, g, n, in, 1, out, true) == SMELT_OK); /* no axes: all 1s */
    CHECK(dims_are(&out[0], 1, DIMS(3)) && f32_are(&out[0], x, 3));
    free_outs(out, 1);
    int64_t axes[] = {-1, 0};
    gr_attr attrs[] = {attr_ints("axes", axes, 2)};
    n->attrs = attrs;
    n->n_attrs = 1;
    CHECK(run_node(g_ctx, g, n, in, 1, out, false) == SMELT_OK); /* opset 11 attribute */
    CHECK(n->n_inputs == 2 && dims_are(&out[0], 2, DIMS(3, 1)));
    axes[0] = 1;
    CHECK(run_node(g_ctx, g, n, in, 1, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(msg(), "cannot squeeze axis 1 of input 'X': its size is 3, not 1");
    smelt_ctx_clear(g_ctx);

    gr_graph *g13 = graph_at(13);
    n = mk_node(g13, OP_UNSQUEEZE, 2, 1);
    int64_t uax[] = {0, -1};
    smelt_tensor tx3 = mkt(SMELT_DT_FLOAT32, 1, DIMS(3), x);
    smelt_tensor ta = mkt(SMELT_DT_INT64, 1, DIMS(2), uax);
    const smelt_tensor *in2[] = {&tx3, &ta};
    CHECK(run_node(g_ctx, g13, n, in2, 2, out, true) == SMELT_OK);
    CHECK(dims_are(&out[0], 3, DIMS(1, 3, 1)) && f32_are(&out[0], x, 3));
    free_outs(out, 1);
    uax[1] = 0;
    CHECK(run_node(g_ctx, g13, n, in2, 2, out, false) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(msg(), "axis 0 is listed twice");
    smelt_ctx_clear(g_ctx);
    gr_graph_free(g13);
    gr_graph_free(g);
}

/* ---- Shape, Size ---- */

static void test_shape_size(void)
{
    gr_graph *g = graph_at(15);
    gr_node *n = mk_node(g, OP_SHAPE, 1, 1);
    gr_attr attrs[] = {attr_int("start", 1), attr_int("end", -1)};
    n->attrs = attrs;
    n->n_attrs = 2;
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 4, DIMS(2, 3, 4, 5), NULL); /* shapes only */
    const smelt_tensor *in[] = {&tx};
    smelt_tensor out[1];
    CHECK(run_node(g_ctx, g, n, in, 1, out, true) == SMELT_OK);
    CHECK(dims_are(&out[0], 1, DIMS(2)) && out[0].dtype == SMELT_DT_INT64);
    CHECK(((int64_t *)out[0].data)[0] == 3 && ((int64_t *)out[0].data)[1] == 4);
    free_outs(out, 1);
    CHECK(op_get(OP_SHAPE)->def->flags & OP_FLAG_SHAPE_ONLY);

    n = mk_node(g, OP_SIZE, 1, 1);
    CHECK(run_node(g_ctx, g, n, in, 1, out, true) == SMELT_OK);
    CHECK(out[0].rank == 0 && ((int64_t *)out[0].data)[0] == 120);
    free_outs(out, 1);
    gr_graph_free(g);
}

/* ---- Expand, Tile ---- */

static void test_expand_tile(void)
{
    gr_graph *g = graph_at(13);
    gr_node *n = mk_node(g, OP_EXPAND, 2, 1);
    float x[] = {1, 2, 3};
    int64_t shape[] = {2, 1, 2};
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 2, DIMS(3, 1), x);
    smelt_tensor ts = mkt(SMELT_DT_INT64, 1, DIMS(3), shape);
    const smelt_tensor *in[] = {&tx, &ts};
    smelt_tensor out[1];
    CHECK(run_node(g_ctx, g, n, in, 2, out, true) == SMELT_OK);
    CHECK(dims_are(&out[0], 3, DIMS(2, 3, 2)));
    CHECK(f32_are(&out[0], FLOATS(1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3), 12));
    free_outs(out, 1);
    shape[1] = 4;
    CHECK(run_node(g_ctx, g, n, in, 2, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(msg(), "cannot broadcast");
    smelt_ctx_clear(g_ctx);

    n = mk_node(g, OP_TILE, 2, 1);
    int64_t reps[] = {2, 2};
    float y[] = {1, 2, 3, 4};
    smelt_tensor ty = mkt(SMELT_DT_FLOAT32, 2, DIMS(2, 2), y);
    smelt_tensor tr = mkt(SMELT_DT_INT64, 1, DIMS(2), reps);
    const smelt_tensor *in2[] = {&ty, &tr};
    CHECK(run_node(g_ctx, g, n, in2, 2, out, true) == SMELT_OK);
    CHECK(dims_are(&out[0], 2, DIMS(4, 4)));
    CHECK(f32_are(&out[0], FLOATS(1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4), 16));
    free_outs(out, 1);
    tr.dims[0] = 1;
    CHECK(run_node(g_ctx, g, n, in2, 2, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(msg(), "repeats has 1 values but input 'X' has rank 2");
    smelt_ctx_clear(g_ctx);
    gr_graph_free(g);
}

/* ---- Concat, Split ---- */

static void test_concat(void)
{
    gr_graph *g = graph_at(13);
    gr_node *n = mk_node(g, OP_CONCAT, 3, 1);
    gr_attr attrs[] = {attr_int("axis", -1)};
    n->attrs = attrs;
    n->n_attrs = 1;
    float a[] = {1, 2, 3, 4}, b[] = {9, 9}, c = 0;
    smelt_tensor ta = mkt(SMELT_DT_FLOAT32, 2, DIMS(2, 2), a);
    smelt_tensor tb = mkt(SMELT_DT_FLOAT32, 2, DIMS(2, 1), b);
    smelt_tensor tc = mkt(SMELT_DT_FLOAT32, 2, DIMS(2, 0), &c);
    const smelt_tensor *in[] = {&ta, &tc, &tb};
    smelt_tensor out[1];
    CHECK(run_node(g_ctx, g, n, in, 3, out, true) == SMELT_OK);
    CHECK(dims_are(&out[0], 2, DIMS(2, 3)) && f32_are(&out[0], FLOATS(1, 2, 9, 3, 4, 9), 6));
    free_outs(out, 1);
    tb.dims[0] = 3;
    CHECK(run_node(g_ctx, g, n, in, 3, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(msg(), "input 'C' has size 3 in dim 0, but input 'X' has 2");
    smelt_ctx_clear(g_ctx);
    n->n_attrs = 0;
    CHECK(run_node(g_ctx, g, n, in, 3, out, false) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(msg(), "missing required attribute 'axis'");
    smelt_ctx_clear(g_ctx);
    gr_graph_free(g);
}

static void test_split(void)
{
    float x[] = {1, 2, 3, 4, 5};
    smelt_tensor tx = mkt(SMELT_DT_FLOAT32, 1, DIMS(5), x);
    smelt_tensor out[3];

    /* opset 18 num_outputs: the last chunk is smaller */
    gr_graph *g = graph_at(18);
    gr_node *n = mk_node(g, OP_SPLIT, 1, 3);
    gr_attr attrs[] = {attr_int("num_outputs", 3)};
    n->attrs = attrs;
    n->n_attrs = 1;
    const smelt_tensor *in[] = {&tx};
    CHECK(run_node(g_ctx, g, n, in, 1, out, true) == SMELT_OK);
    CHECK(dims_are(&out[0], 1, DIMS(2)) && dims_are(&out[2], 1, DIMS(1)));
    CHECK(f32_are(&out[1], FLOATS(3, 4), 2) && f32_are(&out[2], FLOATS(5), 1));
    free_outs(out, 3);
    /* without num_outputs the parts must be equal */
    n->n_attrs = 0;
    CHECK(run_node(g_ctx, g, n, in, 1, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(msg(), "cannot split an axis of size 5 into 3 equal parts");
    smelt_ctx_clear(g_ctx);
    gr_graph_free(g);

    /* opset 11 split attribute -> input */
    g = graph_at(11);
    n = mk_node(g, OP_SPLIT, 1, 2);
    int64_t split[] = {1, 4};
    gr_attr attrs2[] = {attr_ints("split", split, 2)};
    n->attrs = attrs2;
    n->n_attrs = 1;
    CHECK(run_node(g_ctx, g, n, in, 1, out, true) == SMELT_OK);
    CHECK(f32_are(&out[0], FLOATS(1), 1) && f32_are(&out[1], FLOATS(2, 3, 4, 5), 4));
    free_outs(out, 2);
    split[1] = 3;
    CHECK(run_node(g_ctx, g, n, in, 1, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(msg(), "split sizes add up to 4, but the axis has size 5");
    smelt_ctx_clear(g_ctx);
    gr_graph_free(g);

    /* 2-D along axis 1 */
    g = graph_at(13);
    n = mk_node(g, OP_SPLIT, 1, 2);
    gr_attr attrs3[] = {attr_int("axis", 1)};
    n->attrs = attrs3;
    n->n_attrs = 1;
    float y[] = {1, 2, 3, 4, 5, 6, 7, 8};
    smelt_tensor ty = mkt(SMELT_DT_FLOAT32, 2, DIMS(2, 4), y);
    const smelt_tensor *in2[] = {&ty};
    CHECK(run_node(g_ctx, g, n, in2, 1, out, true) == SMELT_OK);
    CHECK(f32_are(&out[0], FLOATS(1, 2, 5, 6), 4) && f32_are(&out[1], FLOATS(3, 4, 7, 8), 4));
    free_outs(out, 2);
    gr_graph_free(g);
}

/* ---- ConstantOfShape, Range ---- */

static void test_constant_of_shape(void)
{
    gr_graph *g = graph_at(9);
    gr_node *n = mk_node(g, OP_CONSTANT_OF_SHAPE, 1, 1);
    int64_t shape[] = {2, 3};
    smelt_tensor ts = mkt(SMELT_DT_INT64, 1, DIMS(2), shape);
    const smelt_tensor *in[] = {&ts};
    smelt_tensor out[1];
    CHECK(run_node(g_ctx, g, n, in, 1, out, true) == SMELT_OK);
    CHECK(out[0].dtype == SMELT_DT_FLOAT32 && dims_are(&out[0], 2, DIMS(2, 3)));
    free_outs(out, 1);

    int32_t seven = 7;
    smelt_tensor value = mkt(SMELT_DT_INT32, 1, DIMS(1), &seven);
    gr_attr a;
    memset(&a, 0, sizeof a);
    a.name = "value";
    a.type = GR_ATTR_TENSOR;
    a.t = &value;
    n->attrs = &a;
    n->n_attrs = 1;
    CHECK(run_node(g_ctx, g, n, in, 1, out, true) == SMELT_OK);
    CHECK(out[0].dtype == SMELT_DT_INT32 && ((int32_t *)out[0].data)[5] == 7);
    free_outs(out, 1);
    shape[1] = -3;
    CHECK(run_node(g_ctx, g, n, in, 1, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(msg(), "shape[1] = -3 is negative");
    smelt_ctx_clear(g_ctx);
    gr_graph_free(g);
}

static void test_range(void)
{
    gr_graph *g = graph_at(11);
    gr_node *n = mk_node(g, OP_RANGE, 3, 1);
    int32_t s = 10, l = 4, d = -3;
    smelt_tensor t0 = mkt(SMELT_DT_INT32, 0, NULL, &s), t1 = mkt(SMELT_DT_INT32, 0, NULL, &l),
                 t2 = mkt(SMELT_DT_INT32, 0, NULL, &d);
    const smelt_tensor *in[] = {&t0, &t1, &t2};
    smelt_tensor out[1];
    CHECK(run_node(g_ctx, g, n, in, 3, out, true) == SMELT_OK);
    CHECK(dims_are(&out[0], 1, DIMS(2)));
    CHECK(((int32_t *)out[0].data)[0] == 10 && ((int32_t *)out[0].data)[1] == 7);
    free_outs(out, 1);

    float fs = 1, fl = 2, fd = 0.25f;
    smelt_tensor f0 = mkt(SMELT_DT_FLOAT32, 0, NULL, &fs), f1 = mkt(SMELT_DT_FLOAT32, 0, NULL, &fl),
                 f2 = mkt(SMELT_DT_FLOAT32, 0, NULL, &fd);
    const smelt_tensor *fin[] = {&f0, &f1, &f2};
    CHECK(run_node(g_ctx, g, n, fin, 3, out, true) == SMELT_OK);
    CHECK(f32_are(&out[0], FLOATS(1, 1.25f, 1.5f, 1.75f), 4));
    free_outs(out, 1);
    fd = -1; /* empty */
    CHECK(run_node(g_ctx, g, n, fin, 3, out, true) == SMELT_OK);
    CHECK(dims_are(&out[0], 1, DIMS(0)));
    free_outs(out, 1);
    /* data-dependent length at compile time */
    f1.data = NULL;
    CHECK(run_node(g_ctx, g, n, fin, 3, out, false) == SMELT_OK);
    CHECK(dims_are(&out[0], 1, DIMS(GR_DIM_UNKNOWN)));
    fd = 0;
    f1.data = &fl;
    CHECK(run_node(g_ctx, g, n, fin, 3, out, false) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(msg(), "do not give a finite range");
    smelt_ctx_clear(g_ctx);
    const smelt_tensor *mixed[] = {&f0, &t1, &f2};
    CHECK(run_node(g_ctx, g, n, mixed, 3, out, false) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(msg(), "limit input 'B' is i32 but start is f32");
    smelt_ctx_clear(g_ctx);
    gr_graph_free(g);
}

int main(void)
{
    g_ctx = smelt_ctx_new();
    test_registry();
    test_identity_dropout();
    test_flatten();
    test_reshape();
    test_transpose();
    test_squeeze_unsqueeze();
    test_shape_size();
    test_expand_tile();
    test_concat();
    test_split();
    test_constant_of_shape();
    test_range();
    smelt_ctx_free(g_ctx);
    TEST_MAIN_END();
}
