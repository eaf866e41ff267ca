/* Broadcasting binary ops: hand-computed results and error messages. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/binary.h"
#include "test_util.h"

/* The registry must hand out this family's definitions (it links them weakly). */
extern const op_def op_def_ADD;

/* ---- one-node harness ---- */

typedef struct harness {
    smelt_ctx *ctx;
    gr_graph *g;
    gr_node *n;
    smelt_tensor out;
} harness;

static void h_init(harness *h, op_kind op, int n_in, int64_t opset)
{
    memset(h, 0, sizeof *h);
    h->ctx = smelt_ctx_new();
    h->g = gr_graph_new();
    h->g->opset = opset;
    h->n = gr_node_new(h->g, "n0", op_get(op)->name, op, n_in, 1);
    for (int i = 0; i < n_in; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        h->n->inputs[i] = gr_value_new(h->g, name);
    }
    h->n->outputs[0] = gr_value_new(h->g, "y");
    h->n->outputs[0]->producer = h->n;
}

static void h_fini(harness *h)
{
    smelt_free(h->out.data);
    gr_graph_free(h->g);
    smelt_ctx_free(h->ctx);
}

static gr_attr *h_attr(harness *h, const char *name, gr_attr_type type)
{
    gr_attr *attrs = smelt_arena_alloc(&h->g->arena, sizeof(gr_attr) * (size_t)(h->n->n_attrs + 1));
    if (h->n->n_attrs) memcpy(attrs, h->n->attrs, sizeof(gr_attr) * (size_t)h->n->n_attrs);
    h->n->attrs = attrs;
    gr_attr *a = &attrs[h->n->n_attrs++];
    a->name = name;
    a->type = type;
    return a;
}

static void h_attr_int(harness *h, const char *name, int64_t v)
{
    h_attr(h, name, GR_ATTR_INT)->i = v;
}

/* import, infer, allocate, eval.  Inputs missing from `given` come from
 * constants the import added (e.g. Clip's opset < 11 attributes). */
static smelt_status h_run(harness *h, const smelt_tensor *given, int n_given)
{
    const op_def *d = op_get(h->n->op)->def;
    if (!d) return smelt_errf(h->ctx, SMELT_ERR_UNSUPPORTED, "op not defined");
    if (d->import) SMELT_TRY(d->import(h->ctx, h->g, h->n));
    const smelt_tensor *in[8] = {0};
    for (int i = 0; i < h->n->n_inputs && i < 8; i++) {
        if (i < n_given && given[i].dtype != SMELT_DT_UNDEFINED)
            in[i] = &given[i];
        else if (h->n->inputs[i] && h->n->inputs[i]->constant)
            in[i] = h->n->inputs[i]->constant;
    }
    SMELT_TRY(d->infer(h->ctx, h->n, in, &h->out));
    int64_t count = op_numel(&h->out);
    h->out.data = smelt_calloc((size_t)(count > 0 ? count : 1), smelt_dtype_size(h->out.dtype));
    return d->eval(h->ctx, h->n, in, &h->out);
}

static smelt_tensor tensor(smelt_dtype dt, void *data, int rank, const int64_t *dims)
{
    smelt_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
    t.data = data;
    return t;
}

static smelt_tensor vec(smelt_dtype dt, void *data, int64_t n) { return tensor(dt, data, 1, &n); }

/* ---- tests ---- */

static void test_add_broadcast(void)
{
    harness h;
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, c[2] = {100, 200};
    int64_t da[2] = {2, 3}, dc[2] = {2, 1};

    smelt_tensor same[2] = {tensor(SMELT_DT_FLOAT32, a, 2, da), tensor(SMELT_DT_FLOAT32, a, 2, da)};
    h_init(&h, OP_ADD, 2, 14);
    CHECK(h_run(&h, same, 2) == SMELT_OK);
    CHECK(h.out.rank == 2 && h.out.dims[0] == 2 && h.out.dims[1] == 3);
    CHECK(((float *)h.out.data)[5] == 12);
    h_fini(&h);

    smelt_tensor row[2] = {tensor(SMELT_DT_FLOAT32, a, 2, da), vec(SMELT_DT_FLOAT32, b, 3)};
    h_init(&h, OP_SUB, 2, 14);
    CHECK(h_run(&h, row, 2) == SMELT_OK);
    float *y = h.out.data;
    CHECK(y[0] == -9 && y[2] == -27 && y[3] == -6 && y[5] == -24);
    h_fini(&h);

    /* [2,1] * [3] -> [2,3] (both sides broadcast) */
    smelt_tensor outer[2] = {tensor(SMELT_DT_FLOAT32, c, 2, dc), vec(SMELT_DT_FLOAT32, b, 3)};
    h_init(&h, OP_MUL, 2, 14);
    CHECK(h_run(&h, outer, 2) == SMELT_OK);
    y = h.out.data;
    CHECK(h.out.dims[0] == 2 && h.out.dims[1] == 3);
    CHECK(y[0] == 1000 && y[2] == 3000 && y[3] == 2000 && y[5] == 6000);
    h_fini(&h);

    /* scalar (rank 0) divisor */
    float two = 2;
    smelt_tensor scalar[2] = {tensor(SMELT_DT_FLOAT32, a, 2, da),
                              tensor(SMELT_DT_FLOAT32, &two, 0, NULL)};
    h_init(&h, OP_DIV, 2, 14);
    CHECK(h_run(&h, scalar, 2) == SMELT_OK);
    CHECK(((float *)h.out.data)[5] == 3);
    h_fini(&h);

    /* [1,3] + [2,1] -> [2,3] with f64 (generic float path) */
    double xa[3] = {1, 2, 3}, xb[2] = {10, 20};
    int64_t d13[2] = {1, 3}, d21[2] = {2, 1};
    smelt_tensor f64[2] = {tensor(SMELT_DT_FLOAT64, xa, 2, d13),
                           tensor(SMELT_DT_FLOAT64, xb, 2, d21)};
    h_init(&h, OP_ADD, 2, 14);
    CHECK(h_run(&h, f64, 2) == SMELT_OK);
    double *yd = h.out.data;
    CHECK(yd[0] == 11 && yd[2] == 13 && yd[3] == 21 && yd[5] == 23);
    h_fini(&h);

    /* higher-rank broadcast against a middle dim: [2,3,2] + [3,1] */
    float big[12], mid[3] = {0, 100, 200};
    for (int i = 0; i < 12; i++) big[i] = (float)i;
    int64_t dbig[3] = {2, 3, 2}, dmid[2] = {3, 1};
    smelt_tensor m[2] = {tensor(SMELT_DT_FLOAT32, big, 3, dbig),
                         tensor(SMELT_DT_FLOAT32, mid, 2, dmid)};
    h_init(&h, OP_ADD, 2, 14);
    CHECK(h_run(&h, m, 2) == SMELT_OK);
    y = h.out.data;
    for (int i = 0; i < 12; i++) CHECK(y[i] == (float)i + mid[(i / 2) % 3]);
    h_fini(&h);

    /* empty output */
    int64_t d0[2] = {0, 3};
    smelt_tensor empty[2] = {tensor(SMELT_DT_FLOAT32, a, 2, d0), vec(SMELT_DT_FLOAT32, b, 3)};
    h_init(&h, OP_ADD, 2, 14);
    CHECK(h_run(&h, empty, 2) == SMELT_OK);
    CHECK(h.out.dims[0] == 0 && h.out.dims[1] == 3);
    h_fini(&h);

    /* opset 6 legacy axis: A [2,3,2], B [3] at axis 1 */
    smelt_tensor legacy[2] = {tensor(SMELT_DT_FLOAT32, big, 3, dbig),
                              vec(SMELT_DT_FLOAT32, mid, 3)};
    h_init(&h, OP_ADD, 2, 6);
    h_attr_int(&h, "broadcast", 1);
    h_attr_int(&h, "axis", 1);
    CHECK(h_run(&h, legacy, 2) == SMELT_OK);
    y = h.out.data;
    CHECK(h.out.rank == 3);
    for (int i = 0; i < 12; i++) CHECK(y[i] == (float)i + mid[(i / 2) % 3]);
    h_fini(&h);
}

static void test_integer_arith(void)
{
    harness h;
    int32_t a32[3] = {INT32_MAX, -7, 7}, b32[3] = {1, 2, -2};
    smelt_tensor i32[2] = {vec(SMELT_DT_INT32, a32, 3), vec(SMELT_DT_INT32, b32, 3)};
    h_init(&h, OP_ADD, 2, 14);
    CHECK(h_run(&h, i32, 2) == SMELT_OK);
    int32_t *y = h.out.data;
    CHECK(y[0] == INT32_MIN && y[1] == -5 && y[2] == 5); /* wraps */
    h_fini(&h);

    h_init(&h, OP_DIV, 2, 14);
    CHECK(h_run(&h, i32, 2) == SMELT_OK);
    y = h.out.data;
    CHECK(y[0] == INT32_MAX && y[1] == -3 && y[2] == -3); /* truncates */
    h_fini(&h);

    int64_t a64[2] = {INT64_MAX, INT64_MIN}, b64[2] = {2, -1};
    smelt_tensor i64[2] = {vec(SMELT_DT_INT64, a64, 2), vec(SMELT_DT_INT64, b64, 2)};
    h_init(&h, OP_MUL, 2, 14);
    CHECK(h_run(&h, i64, 2) == SMELT_OK);
    CHECK(((int64_t *)h.out.data)[0] == -2 && ((int64_t *)h.out.data)[1] == INT64_MIN);
    h_fini(&h);

    h_init(&h, OP_DIV, 2, 14);
    CHECK(h_run(&h, i64, 2) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "node 'n0' (Div): integer division overflow");
    h_fini(&h);

    int32_t min32[1] = {INT32_MIN}, neg1[1] = {-1};
    smelt_tensor ov[2] = {vec(SMELT_DT_INT32, min32, 1), vec(SMELT_DT_INT32, neg1, 1)};
    h_init(&h, OP_DIV, 2, 14);
    CHECK(h_run(&h, ov, 2) == SMELT_ERR_RUNTIME);
    h_fini(&h);

    int32_t zero[1] = {0};
    smelt_tensor dz[2] = {vec(SMELT_DT_INT32, a32, 3), vec(SMELT_DT_INT32, zero, 1)};
    h_init(&h, OP_DIV, 2, 14);
    CHECK(h_run(&h, dz, 2) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "integer division by zero");
    h_fini(&h);

    uint8_t u1[2] = {3, 250}, u2[2] = {5, 10};
    smelt_tensor u8[2] = {vec(SMELT_DT_UINT8, u1, 2), vec(SMELT_DT_UINT8, u2, 2)};
    h_init(&h, OP_SUB, 2, 14);
    CHECK(h_run(&h, u8, 2) == SMELT_OK);
    CHECK(((uint8_t *)h.out.data)[0] == 254 && ((uint8_t *)h.out.data)[1] == 240);
    h_fini(&h);

    h_init(&h, OP_MUL, 2, 14);
    CHECK(h_run(&h, u8, 2) == SMELT_OK);
    CHECK(((uint8_t *)h.out.data)[0] == 15 && ((uint8_t *)h.out.data)[1] == (uint8_t)2500);
    h_fini(&h);
}

static void test_mod(void)
{
    harness h;
    int32_t a[4] = {-4, 7, -7, 8}, b[4] = {3, -3, 3, 5};
    smelt_tensor in[2] = {vec(SMELT_DT_INT32, a, 4), vec(SMELT_DT_INT32, b, 4)};
    h_init(&h, OP_MOD, 2, 13);
    CHECK(h_run(&h, in, 2) == SMELT_OK);
    int32_t *y = h.out.data;
    CHECK(y[0] == 2 && y[1] == -2 && y[2] == 2 && y[3] == 3); /* sign of divisor */
    h_fini(&h);

    h_init(&h, OP_MOD, 2, 13);
    h_attr_int(&h, "fmod", 1);
    CHECK(h_run(&h, in, 2) == SMELT_OK);
    y = h.out.data;
    CHECK(y[0] == -1 && y[1] == 1 && y[2] == -1 && y[3] == 3); /* sign of dividend */
    h_fini(&h);

    int64_t m[1] = {INT64_MIN}, n1[1] = {-1};
    smelt_tensor edge[2] = {vec(SMELT_DT_INT64, m, 1), vec(SMELT_DT_INT64, n1, 1)};
    h_init(&h, OP_MOD, 2, 13);
    CHECK(h_run(&h, edge, 2) == SMELT_OK);
    CHECK(((int64_t *)h.out.data)[0] == 0);
    h_fini(&h);

    int32_t z[1] = {0};
    smelt_tensor dz[2] = {vec(SMELT_DT_INT32, a, 4), vec(SMELT_DT_INT32, z, 1)};
    h_init(&h, OP_MOD, 2, 13);
    CHECK(h_run(&h, dz, 2) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "(Mod): integer division by zero");
    h_fini(&h);

    float fa[2] = {-4.5f, 7.5f}, fb[2] = {2, -2};
    smelt_tensor f[2] = {vec(SMELT_DT_FLOAT32, fa, 2), vec(SMELT_DT_FLOAT32, fb, 2)};
    h_init(&h, OP_MOD, 2, 13);
    h_attr_int(&h, "fmod", 1);
    CHECK(h_run(&h, f, 2) == SMELT_OK);
    CHECK(((float *)h.out.data)[0] == -0.5f && ((float *)h.out.data)[1] == 1.5f);
    h_fini(&h);

    h_init(&h, OP_MOD, 2, 13);
    CHECK(h_run(&h, f, 2) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "'fmod' must be 1 for floating-point");
    h_fini(&h);

    h_init(&h, OP_MOD, 2, 13);
    h_attr_int(&h, "fmod", 2);
    CHECK(h_run(&h, f, 2) == SMELT_ERR_ATTR);
    h_fini(&h);
}

static void test_pow(void)
{
    harness h;
    int32_t b32[3] = {2, -3, 7}, e32[3] = {10, 3, 0};
    smelt_tensor ii[2] = {vec(SMELT_DT_INT32, b32, 3), vec(SMELT_DT_INT32, e32, 3)};
    h_init(&h, OP_POW, 2, 15);
    CHECK(h_run(&h, ii, 2) == SMELT_OK);
    int32_t *y = h.out.data;
    CHECK(h.out.dtype == SMELT_DT_INT32 && y[0] == 1024 && y[1] == -27 && y[2] == 1);
    h_fini(&h);

    int64_t b64[2] = {3, 2};
    float ef[2] = {0.5f, 3.0f};
    smelt_tensor if_[2] = {vec(SMELT_DT_INT64, b64, 2), vec(SMELT_DT_FLOAT32, ef, 2)};
    h_init(&h, OP_POW, 2, 15);
    CHECK(h_run(&h, if_, 2) == SMELT_OK);
    CHECK(h.out.dtype == SMELT_DT_INT64);
    CHECK(((int64_t *)h.out.data)[0] == 1 && ((int64_t *)h.out.data)[1] == 8);
    h_fini(&h);

    float bf[2] = {2, 4};
    uint64_t eu[2] = {3, 0};
    smelt_tensor fu[2] = {vec(SMELT_DT_FLOAT32, bf, 2), vec(SMELT_DT_UINT64, eu, 2)};
    h_init(&h, OP_POW, 2, 15);
    CHECK(h_run(&h, fu, 2) == SMELT_OK);
    CHECK(((float *)h.out.data)[0] == 8 && ((float *)h.out.data)[1] == 1);
    h_fini(&h);

    float half = 0.5f;
    smelt_tensor ff[2] = {vec(SMELT_DT_FLOAT32, bf, 2), tensor(SMELT_DT_FLOAT32, &half, 0, NULL)};
    h_init(&h, OP_POW, 2, 15);
    CHECK(h_run(&h, ff, 2) == SMELT_OK);
    CHECK_NEAR(((float *)h.out.data)[0], sqrt(2.0), 1e-6);
    CHECK(((float *)h.out.data)[1] == 2);
    h_fini(&h);
}

static void test_prelu(void)
{
    harness h;
    float x[6] = {-1, 2, -3, 4, -5, 6}, slope[3] = {0.5f, 1, 2};
    int64_t dx[2] = {2, 3};
    smelt_tensor in[2] = {tensor(SMELT_DT_FLOAT32, x, 2, dx), vec(SMELT_DT_FLOAT32, slope, 3)};
    h_init(&h, OP_PRELU, 2, 16);
    CHECK(h_run(&h, in, 2) == SMELT_OK);
    float *y = h.out.data;
    CHECK(y[0] == -0.5f && y[1] == 2 && y[2] == -6 && y[4] == -5 && y[5] == 6);
    h_fini(&h);

    /* opset 6: a 1-D slope is per channel (dim 1), not numpy-aligned */
    float per_channel[2] = {0.5f, 2};
    int64_t d123[3] = {1, 2, 3}, d2[1] = {2};
    float x123[6] = {-1, -1, -1, -1, -1, 4};
    smelt_tensor old[2] = {tensor(SMELT_DT_FLOAT32, x123, 3, d123),
                           tensor(SMELT_DT_FLOAT32, per_channel, 1, d2)};
    h_init(&h, OP_PRELU, 2, 6);
    CHECK(h_run(&h, old, 2) == SMELT_OK);
    y = h.out.data;
    CHECK(h.out.rank == 3 && y[0] == -0.5f && y[2] == -0.5f && y[3] == -2 && y[5] == 4);
    h_fini(&h);

    /* slope larger than X: not unidirectional */
    int64_t ds[2] = {2, 3};
    smelt_tensor bad[2] = {vec(SMELT_DT_FLOAT32, slope, 3), tensor(SMELT_DT_FLOAT32, x, 2, ds)};
    h_init(&h, OP_PRELU, 2, 16);
    CHECK(h_run(&h, bad, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx),
                       "slope 'x1' [2,3] does not broadcast to the shape [3]");
    h_fini(&h);
}

static void test_variadic(void)
{
    harness h;
    float a[3] = {1, 5, NAN}, b[3] = {4, 2, 0}, c = 3;
    smelt_tensor in[3] = {vec(SMELT_DT_FLOAT32, a, 3), vec(SMELT_DT_FLOAT32, b, 3),
                          tensor(SMELT_DT_FLOAT32, &c, 0, NULL)};
    h_init(&h, OP_MAX, 3, 13);
    CHECK(h_run(&h, in, 3) == SMELT_OK);
    float *y = h.out.data;
    CHECK(y[0] == 4 && y[1] == 5 && isnan(y[2]));
    h_fini(&h);

    h_init(&h, OP_MIN, 3, 13);
    CHECK(h_run(&h, in, 3) == SMELT_OK);
    y = h.out.data;
    CHECK(y[0] == 1 && y[1] == 2 && isnan(y[2]));
    h_fini(&h);

    h_init(&h, OP_SUM, 3, 13);
    CHECK(h_run(&h, in, 3) == SMELT_OK);
    y = h.out.data;
    CHECK(y[0] == 8 && y[1] == 10);
    h_fini(&h);

    h_init(&h, OP_MEAN, 2, 13);
    CHECK(h_run(&h, in, 2) == SMELT_OK);
    y = h.out.data;
    CHECK(y[0] == 2.5f && y[1] == 3.5f);
    h_fini(&h);

    /* a scalar first input broadcast by a later one */
    smelt_tensor rev[2] = {in[2], in[1]};
    h_init(&h, OP_SUM, 2, 13);
    CHECK(h_run(&h, rev, 2) == SMELT_OK);
    CHECK(h.out.rank == 1 && h.out.dims[0] == 3 && ((float *)h.out.data)[2] == 3);
    h_fini(&h);

    h_init(&h, OP_MAX, 1, 13);
    CHECK(h_run(&h, in, 1) == SMELT_OK);
    CHECK(((float *)h.out.data)[1] == 5);
    h_fini(&h);

    uint64_t ua[2] = {UINT64_MAX, 1}, ub[2] = {1, 2};
    smelt_tensor u[2] = {vec(SMELT_DT_UINT64, ua, 2), vec(SMELT_DT_UINT64, ub, 2)};
    h_init(&h, OP_MAX, 2, 13);
    CHECK(h_run(&h, u, 2) == SMELT_OK);
    CHECK(((uint64_t *)h.out.data)[0] == UINT64_MAX && ((uint64_t *)h.out.data)[1] == 2);
    h_fini(&h);

    uint16_t ha[2] = {smelt_f32_to_f16(1.5f), smelt_f32_to_f16(-2.0f)};
    uint16_t hb[2] = {smelt_f32_to_f16(0.5f), smelt_f32_to_f16(-1.0f)};
    smelt_tensor f16[2] = {vec(SMELT_DT_FLOAT16, ha, 2), vec(SMELT_DT_FLOAT16, hb, 2)};
    h_init(&h, OP_MIN, 2, 13);
    CHECK(h_run(&h, f16, 2) == SMELT_OK);
    CHECK(smelt_f16_to_f32(((uint16_t *)h.out.data)[0]) == 0.5f);
    CHECK(smelt_f16_to_f32(((uint16_t *)h.out.data)[1]) == -2.0f);
    h_fini(&h);

    int32_t ints[1] = {1};
    smelt_tensor bad[2] = {in[0], vec(SMELT_DT_INT32, ints, 1)};
    h_init(&h, OP_SUM, 2, 13);
    CHECK(h_run(&h, bad, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx),
                       "input 'x1' has dtype i32, expected f32 like input 'x0'");
    h_fini(&h);

    smelt_tensor ints_only[1] = {vec(SMELT_DT_INT32, ints, 1)};
    h_init(&h, OP_MEAN, 1, 13);
    CHECK(h_run(&h, ints_only, 1) == SMELT_ERR_UNSUPPORTED);
    h_fini(&h);

    float four[4] = {0};
    smelt_tensor clash[3] = {in[0], in[1], vec(SMELT_DT_FLOAT32, four, 4)};
    h_init(&h, OP_SUM, 3, 13);
    CHECK(h_run(&h, clash, 3) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx),
                       "cannot broadcast input 'x2' [4] with the shape [3]");
    h_fini(&h);
}

static void test_compare_logic_where(void)
{
    harness h;
    float a[3] = {1, 2, NAN}, b = 2;
    smelt_tensor in[2] = {vec(SMELT_DT_FLOAT32, a, 3), tensor(SMELT_DT_FLOAT32, &b, 0, NULL)};
    static const struct { op_kind op; uint8_t want[3]; } cases[] = {
        {OP_EQUAL, {0, 1, 0}},   {OP_LESS, {1, 0, 0}},          {OP_LESS_OR_EQUAL, {1, 1, 0}},
        {OP_GREATER, {0, 0, 0}}, {OP_GREATER_OR_EQUAL, {0, 1, 0}},
    };
    for (size_t k = 0; k < SMELT_ARRAY_LEN(cases); k++) {
        h_init(&h, cases[k].op, 2, 16);
        CHECK(h_run(&h, in, 2) == SMELT_OK);
        CHECK(h.out.dtype == SMELT_DT_BOOL);
        CHECK(memcmp(h.out.data, cases[k].want, 3) == 0);
        h_fini(&h);
    }

    uint64_t ua[1] = {UINT64_MAX}, ub[1] = {1};
    smelt_tensor u[2] = {vec(SMELT_DT_UINT64, ua, 1), vec(SMELT_DT_UINT64, ub, 1)};
    h_init(&h, OP_GREATER, 2, 13);
    CHECK(h_run(&h, u, 2) == SMELT_OK);
    CHECK(((uint8_t *)h.out.data)[0] == 1);
    h_fini(&h);

    int64_t la[2] = {-1, 5}, lb[2] = {-1, 6};
    smelt_tensor l[2] = {vec(SMELT_DT_INT64, la, 2), vec(SMELT_DT_INT64, lb, 2)};
    h_init(&h, OP_EQUAL, 2, 13);
    CHECK(h_run(&h, l, 2) == SMELT_OK);
    CHECK(((uint8_t *)h.out.data)[0] == 1 && ((uint8_t *)h.out.data)[1] == 0);
    h_fini(&h);

    uint8_t p[4] = {0, 0, 1, 1}, q[4] = {0, 1, 0, 1};
    smelt_tensor bq[2] = {vec(SMELT_DT_BOOL, p, 4), vec(SMELT_DT_BOOL, q, 4)};
    static const struct { op_kind op; uint8_t want[4];
    } logic[] = {{OP_AND, {0, 0, 0, 1}},
                 {OP_OR, {0, 1, 1, 1}},
                 {OP_XOR, {0, 1, 1, 0}},
                 {OP_EQUAL, {1, 0, 0, 1}}};
    for (size_t k = 0; k < SMELT_ARRAY_LEN(logic); k++) {
        h_init(&h, logic[k].op, 2, 13);
        CHECK(h_run(&h, bq, 2) == SMELT_OK);
        CHECK(memcmp(h.out.data, logic[k].want, 4) == 0);
        h_fini(&h);
    }

    h_init(&h, OP_AND, 2, 7);
    CHECK(h_run(&h, in, 2) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "(And): input 'x0' has unsupported dtype f32");
    h_fini(&h);

    /* Where: cond [2,1], x [2], y scalar -> [2,2] */
    uint8_t cond[2] = {1, 0};
    int64_t xs[2] = {10, 20}, ys = -1, dc[2] = {2, 1};
    smelt_tensor w[3] = {tensor(SMELT_DT_BOOL, cond, 2, dc), vec(SMELT_DT_INT64, xs, 2),
                         tensor(SMELT_DT_INT64, &ys, 0, NULL)};
    h_init(&h, OP_WHERE, 3, 16);
    CHECK(h_run(&h, w, 3) == SMELT_OK);
    int64_t *y = h.out.data;
    CHECK(h.out.dtype == SMELT_DT_INT64 && h.out.rank == 2 && h.out.dims[0] == 2 &&
          h.out.dims[1] == 2);
    CHECK(y[0] == 10 && y[1] == 20 && y[2] == -1 && y[3] == -1);
    h_fini(&h);

    float fx[2] = {1.5f, 2.5f};
    smelt_tensor wf[3] = {vec(SMELT_DT_BOOL, cond, 2), vec(SMELT_DT_FLOAT32, fx, 2),
                          tensor(SMELT_DT_INT64, &ys, 0, NULL)};
    h_init(&h, OP_WHERE, 3, 16);
    CHECK(h_run(&h, wf, 3) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx),
                       "input 'x2' has dtype i64, expected f32 like input 'x1'");
    h_fini(&h);
}

static void test_infer_symbolic(void)
{
    harness h;
    int64_t da[2] = {GR_DIM_SYM(0), 3}, db[1] = {3}, dc[2] = {GR_DIM_SYM(1), 1};
    smelt_tensor a = tensor(SMELT_DT_FLOAT32, NULL, 2, da),
                 b = tensor(SMELT_DT_FLOAT32, NULL, 1, db);
    smelt_tensor c = tensor(SMELT_DT_FLOAT32, NULL, 2, dc);
    smelt_tensor out;
    h_init(&h, OP_ADD, 2, 14);
    const smelt_tensor *in[2] = {&a, &b};
    memset(&out, 0, sizeof out);
    CHECK(op_get(OP_ADD)->def->infer(h.ctx, h.n, in, &out) == SMELT_OK);
    CHECK(out.rank == 2 && out.dims[0] == GR_DIM_SYM(0) && out.dims[1] == 3);
    in[1] = &c;
    CHECK(op_get(OP_ADD)->def->infer(h.ctx, h.n, in, &out) == SMELT_OK);
    CHECK(out.rank == 2 && out.dims[1] == 3 && out.dims[0] < 0);

    int64_t d4[1] = {4};
    smelt_tensor bad = tensor(SMELT_DT_FLOAT32, NULL, 1, d4);
    in[1] = &bad;
    CHECK(op_get(OP_ADD)->def->infer(h.ctx, h.n, in, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(
        smelt_ctx_message(h.ctx),
        "node 'n0' (Add): cannot broadcast input 'x0' [?,3] with input 'x1' [4] (dim 1)");
    h_fini(&h);

    h_init(&h, OP_ADD, 2, 14);
    smelt_tensor mixed = tensor(SMELT_DT_INT64, NULL, 1, db);
    in[1] = &mixed;
    CHECK(op_get(OP_ADD)->def->infer(h.ctx, h.n, in, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "input 'x1' has dtype i64, expected f32");
    h_fini(&h);

    h_init(&h, OP_ADD, 2, 6);
    h_attr_int(&h, "broadcast", 1);
    h_attr_int(&h, "axis", 1);
    in[1] = &c;
    CHECK(op_get(OP_ADD)->def->import(h.ctx, h.g, h.n) == SMELT_OK);
    CHECK(op_get(OP_ADD)->def->infer(h.ctx, h.n, in, &out) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "attribute 'axis' (1) does not place input 'x1'");
    h_fini(&h);

    /* every binary row of ops.def is defined */
    for (int k = 1; k < OP_COUNT_; k++) {
        const op_info *info = op_get((op_kind)k);
        if (strcmp(info->family, "binary") == 0 && !info->def) {
            fprintf(stderr, "op %s has no op_def\n", info->name);
            CHECK(0);
        }
    }
}

int main(void)
{
    CHECK(op_get(OP_ADD)->def == &op_def_ADD);
    test_add_broadcast();
    test_integer_arith();
    test_mod();
    test_pow();
    test_prelu();
    test_variadic();
    test_compare_logic_where();
    test_infer_symbolic();
    TEST_MAIN_END();
}
