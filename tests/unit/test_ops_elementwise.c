/* Unary elementwise ops: hand-computed results and error messages. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "ops/elementwise.h"
#include "test_util.h"

/* The registry must hand out this family's definitions (it links them weakly). */
extern const op_def op_def_RELU;

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

static void h_attr_float(harness *h, const char *name, float v)
{
    h_attr(h, name, GR_ATTR_FLOAT)->f = v;
}
static void h_attr_int(harness *h, const char *name, int64_t v)
{
    h_attr(h, name, GR_ATTR_INT)->i = v;
}
static void h_attr_string(harness *h, const char *name, const char *s)
{
    gr_attr *a = h_attr(h, name, GR_ATTR_STRING);
    a->s = s;
    a->s_len = strlen(s);
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

/* Run a unary float32 op over xs and compare with expected. */
static void check_f32(op_kind op, harness *h, const float *xs, const float *want, int n, double tol)
{
    smelt_tensor x = vec(SMELT_DT_FLOAT32, (void *)xs, n);
    CHECK(h_run(h, &x, 1) == SMELT_OK);
    CHECK(h->out.dtype == SMELT_DT_FLOAT32 && h->out.rank == 1 && h->out.dims[0] == n);
    const float *y = h->out.data;
    for (int i = 0; i < n && y; i++) {
        if (isnan(want[i])) {
            CHECK(isnan(y[i]));
        } else if (fabs(y[i] - want[i]) > tol) {
            fprintf(stderr, "%s[%d]: got %.9g want %.9g\n", op_get(op)->name, i, y[i], want[i]);
            CHECK(0);
        }
    }
    h_fini(h);
}

static void unary_f32(op_kind op, const float *xs, const float *want, int n, double tol)
{
    harness h;
    h_init(&h, op, 1, 17);
    check_f32(op, &h, xs, want, n, tol);
}

/* ---- tests ---- */

static void test_activations(void)
{
    float x[] = {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f};
    unary_f32(OP_RELU, x, (float[]){0, 0, 0, 0.5f, 3}, 5, 0);
    unary_f32(OP_SIGMOID, (float[]){-1000, 0, 1000, 1}, (float[]){0, 0.5f, 1, 0.7310586f}, 4, 1e-7);
    unary_f32(OP_SOFTPLUS, (float[]){-1000, 0, 1000}, (float[]){0, (float)log(2.0), 1000}, 3, 1e-6);
    unary_f32(OP_SOFTSIGN, (float[]){-1, 3}, (float[]){-0.5f, 0.75f}, 2, 1e-7);
    unary_f32(OP_ERF, (float[]){0, 1}, (float[]){0, 0.8427008f}, 2, 1e-7);
    unary_f32(OP_HARD_SWISH, (float[]){-4, 0, 1, 4}, (float[]){0, 0, 2.0f / 3, 4}, 4, 1e-6);

    harness h;
    h_init(&h, OP_LEAKY_RELU, 1, 16);
    check_f32(OP_LEAKY_RELU, &h, x, (float[]){-0.02f, -0.005f, 0, 0.5f, 3}, 5, 1e-7);

    h_init(&h, OP_LEAKY_RELU, 1, 16);
    h_attr_float(&h, "alpha", 0.5f);
    check_f32(OP_LEAKY_RELU, &h, x, (float[]){-1, -0.25f, 0, 0.5f, 3}, 5, 0);

    h_init(&h, OP_ELU, 1, 6);
    h_attr_float(&h, "alpha", 2.0f);
    check_f32(OP_ELU, &h, (float[]){-1, 1}, (float[]){2 * (float)expm1(-1.0), 1}, 2, 1e-6);

    h_init(&h, OP_SELU, 1, 6);
    check_f32(OP_SELU, &h, (float[]){-1, 2},
              (float[]){(float)(1.0507009873554805 * 1.6732632423543772 * expm1(-1.0)),
                        2 * 1.0507009873554805f},
              2, 1e-6);

    h_init(&h, OP_CELU, 1, 12);
    h_attr_float(&h, "alpha", 2.0f);
    check_f32(OP_CELU, &h, (float[]){-2, 3}, (float[]){2 * (float)expm1(-1.0), 3}, 2, 1e-6);

    h_init(&h, OP_THRESHOLDED_RELU, 1, 10);
    check_f32(OP_THRESHOLDED_RELU, &h, (float[]){0.5f, 1.0f, 1.5f}, (float[]){0, 0, 1.5f}, 3, 0);

    h_init(&h, OP_HARD_SIGMOID, 1, 6);
    h_attr_float(&h, "alpha", 0.5f);
    h_attr_float(&h, "beta", 0.6f);
    check_f32(OP_HARD_SIGMOID, &h, (float[]){-2, 0, 2}, (float[]){0, 0.6f, 1}, 3, 1e-7);

    h_init(&h, OP_GELU, 1, 20);
    check_f32(OP_GELU, &h, (float[]){-1, 0, 1}, (float[]){-0.15865525f, 0, 0.84134475f}, 3, 1e-6);

    h_init(&h, OP_GELU, 1, 20);
    h_attr_string(&h, "approximate", "tanh");
    check_f32(OP_GELU, &h, (float[]){1}, (float[]){0.8411920f}, 1, 1e-6);
}

static void test_math(void)
{
    unary_f32(OP_ROUND, (float[]){0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.3f, -2.7f},
              (float[]){0, 2, 2, -0.0f, -2, 2, -3}, 7, 0);
    unary_f32(OP_SIGN, (float[]){-3, 0, 2, NAN}, (float[]){-1, 0, 1, NAN}, 4, 0);
    unary_f32(OP_FLOOR, (float[]){-1.5f, 1.5f}, (float[]){-2, 1}, 2, 0);
    unary_f32(OP_CEIL, (float[]){-1.5f, 1.5f}, (float[]){-1, 2}, 2, 0);
    unary_f32(OP_RECIPROCAL, (float[]){4, -0.5f}, (float[]){0.25f, -2}, 2, 0);
    unary_f32(OP_SQRT, (float[]){4, -1}, (float[]){2, NAN}, 2, 0);
    unary_f32(OP_LOG, (float[]){1, (float)M_E}, (float[]){0, 1}, 2, 1e-7);
    unary_f32(OP_EXP, (float[]){0, 1}, (float[]){1, (float)M_E}, 2, 1e-6);
    unary_f32(OP_NEG, (float[]){1, -2}, (float[]){-1, 2}, 2, 0);
    unary_f32(OP_ABS, (float[]){-1, 2}, (float[]){1, 2}, 2, 0);
    unary_f32(OP_TANH, (float[]){0, 1000}, (float[]){0, 1}, 2, 0);
    unary_f32(OP_SIN, (float[]){0}, (float[]){0}, 1, 0);
    unary_f32(OP_COS, (float[]){0}, (float[]){1}, 1, 0);
}

static void test_double_and_half(void)
{
    harness h;
    double xd[] = {-1.5, 2.25};
    h_init(&h, OP_ABS, 1, 13);
    smelt_tensor x = vec(SMELT_DT_FLOAT64, xd, 2);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    CHECK(h.out.dtype == SMELT_DT_FLOAT64 && ((double *)h.out.data)[0] == 1.5);
    h_fini(&h);

    uint16_t xh[] = {smelt_f32_to_f16(-2.0f), smelt_f32_to_f16(0.5f)};
    h_init(&h, OP_RELU, 1, 14);
    x = vec(SMELT_DT_FLOAT16, xh, 2);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    CHECK(h.out.dtype == SMELT_DT_FLOAT16);
    CHECK(smelt_f16_to_f32(((uint16_t *)h.out.data)[0]) == 0.0f);
    CHECK(smelt_f16_to_f32(((uint16_t *)h.out.data)[1]) == 0.5f);
    h_fini(&h);
}

static void test_integers(void)
{
    harness h;
    int8_t xi[] = {-128, -3, 0, 5};
    smelt_tensor x = vec(SMELT_DT_INT8, xi, 4);

    h_init(&h, OP_ABS, 1, 13);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    int8_t *y = h.out.data;
    CHECK(y[0] == -128 && y[1] == 3 && y[2] == 0 && y[3] == 5); /* wraps like numpy */
    h_fini(&h);

    h_init(&h, OP_NEG, 1, 13);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    y = h.out.data;
    CHECK(y[0] == -128 && y[1] == 3 && y[3] == -5);
    h_fini(&h);

    h_init(&h, OP_RELU, 1, 14);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    y = h.out.data;
    CHECK(y[0] == 0 && y[1] == 0 && y[3] == 5);
    h_fini(&h);

    uint64_t xu[] = {0, UINT64_MAX};
    h_init(&h, OP_SIGN, 1, 13);
    x = vec(SMELT_DT_UINT64, xu, 2);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    CHECK(((uint64_t *)h.out.data)[0] == 0 && ((uint64_t *)h.out.data)[1] == 1);
    h_fini(&h);

    h_init(&h, OP_ABS, 1, 13);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    CHECK(((uint64_t *)h.out.data)[1] == UINT64_MAX);
    h_fini(&h);
}

static void test_clip(void)
{
    harness h;
    float xs[] = {-3, -1, 0, 2, NAN};
    float lo = -2, hi = 1;
    smelt_tensor in[3] = {vec(SMELT_DT_FLOAT32, xs, 5), tensor(SMELT_DT_FLOAT32, &lo, 0, NULL),
                          tensor(SMELT_DT_FLOAT32, &hi, 0, NULL)};
    h_init(&h, OP_CLIP, 3, 13);
    CHECK(h_run(&h, in, 3) == SMELT_OK);
    float *y = h.out.data;
    CHECK(y[0] == -2 && y[1] == -1 && y[2] == 0 && y[3] == 1 && isnan(y[4]));
    h_fini(&h);

    /* max only: input 1 omitted */
    h_init(&h, OP_CLIP, 3, 13);
    h.n->inputs[1] = NULL;
    smelt_tensor max_only[3] = {in[0], {0}, in[2]};
    CHECK(h_run(&h, max_only, 3) == SMELT_OK);
    y = h.out.data;
    CHECK(y[0] == -3 && y[3] == 1);
    h_fini(&h);

    /* min > max: everything becomes max */
    float big = 5;
    smelt_tensor crossed[3] = {in[0], tensor(SMELT_DT_FLOAT32, &big, 0, NULL), in[2]};
    h_init(&h, OP_CLIP, 3, 13);
    CHECK(h_run(&h, crossed, 3) == SMELT_OK);
    CHECK(((float *)h.out.data)[0] == 1 && ((float *)h.out.data)[3] == 1);
    h_fini(&h);

    /* opset 6: min/max attributes become inputs */
    h_init(&h, OP_CLIP, 1, 6);
    h_attr_float(&h, "min", -0.5f);
    h_attr_float(&h, "max", 0.5f);
    CHECK(h_run(&h, in, 1) == SMELT_OK);
    CHECK(h.n->n_inputs == 3);
    y = h.out.data;
    CHECK(y && y[0] == -0.5f && y[2] == 0 && y[3] == 0.5f);
    h_fini(&h);

    /* opset 6 with only max: input 1 stays omitted */
    h_init(&h, OP_CLIP, 1, 6);
    h_attr_float(&h, "max", 0.5f);
    CHECK(h_run(&h, in, 1) == SMELT_OK);
    CHECK(h.n->n_inputs == 3 && h.n->inputs[1] == NULL);
    CHECK(((float *)h.out.data)[0] == -3 && ((float *)h.out.data)[3] == 0.5f);
    h_fini(&h);

    int8_t xi[] = {-128, 0, 127}, ilo = -5, ihi = 100;
    smelt_tensor iin[3] = {vec(SMELT_DT_INT8, xi, 3), tensor(SMELT_DT_INT8, &ilo, 0, NULL),
                           tensor(SMELT_DT_INT8, &ihi, 0, NULL)};
    h_init(&h, OP_CLIP, 3, 13);
    CHECK(h_run(&h, iin, 3) == SMELT_OK);
    int8_t *yi = h.out.data;
    CHECK(yi[0] == -5 && yi[1] == 0 && yi[2] == 100);
    h_fini(&h);

    /* errors: bound dtype, bound shape */
    smelt_tensor bad[3] = {iin[0], in[1], {0}};
    h_init(&h, OP_CLIP, 2, 13);
    CHECK(h_run(&h, bad, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "input 'x1' has dtype f32, expected i8");
    h_fini(&h);

    float two[2] = {0, 1};
    smelt_tensor wide[2] = {in[0], vec(SMELT_DT_FLOAT32, two, 2)};
    h_init(&h, OP_CLIP, 2, 13);
    CHECK(h_run(&h, wide, 2) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "must be a scalar");
    h_fini(&h);
}

static void test_cast(void)
{
    harness h;
    float xs[] = {1.5f, -2.75f, NAN, 1e10f, -1e10f, 0.0f};
    smelt_tensor x = vec(SMELT_DT_FLOAT32, xs, 6);

    h_init(&h, OP_CAST, 1, 13);
    h_attr_int(&h, "to", SMELT_DT_INT32);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    int32_t *yi = h.out.data;
    CHECK(h.out.dtype == SMELT_DT_INT32);
    CHECK(yi[0] == 1 && yi[1] == -2 && yi[2] == 0 && yi[5] == 0); /* truncation, NaN -> 0 */
    h_fini(&h);

    h_init(&h, OP_CAST, 1, 13);
    h_attr_int(&h, "to", SMELT_DT_BOOL);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    uint8_t *yb = h.out.data;
    CHECK(yb[0] == 1 && yb[2] == 1 && yb[5] == 0);
    h_fini(&h);

    h_init(&h, OP_CAST, 1, 13);
    h_attr_int(&h, "to", SMELT_DT_FLOAT16);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    uint16_t *yh = h.out.data;
    CHECK(smelt_f16_to_f32(yh[0]) == 1.5f && smelt_f16_to_f32(yh[1]) == -2.75f);
    CHECK(isnan(smelt_f16_to_f32(yh[2])) && isinf(smelt_f16_to_f32(yh[3])));
    h_fini(&h);

    /* double -> f16 rounds once: 1 + 2^-11 + 2^-40 is just above the halfway
     * point between two halves; a detour through float would round to even. */
    double xd[] = {1.0 + ldexp(1, -11) + ldexp(1, -40)};
    h_init(&h, OP_CAST, 1, 13);
    h_attr_int(&h, "to", SMELT_DT_FLOAT16);
    x = vec(SMELT_DT_FLOAT64, xd, 1);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    CHECK(smelt_f16_to_f32(((uint16_t *)h.out.data)[0]) == 1.0f + 1.0f / 1024);
    h_fini(&h);

    int64_t xl[] = {300, -1, INT64_MIN};
    h_init(&h, OP_CAST, 1, 13);
    h_attr_int(&h, "to", SMELT_DT_UINT8);
    x = vec(SMELT_DT_INT64, xl, 3);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    uint8_t *yu = h.out.data;
    CHECK(yu[0] == 44 && yu[1] == 255 && yu[2] == 0); /* wraps */
    h_fini(&h);

    uint8_t xb[] = {1, 0};
    h_init(&h, OP_CAST, 1, 1);
    h_attr_string(&h, "to", "FLOAT"); /* Cast-1 form */
    x = vec(SMELT_DT_BOOL, xb, 2);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    CHECK(h.out.dtype == SMELT_DT_FLOAT32 && ((float *)h.out.data)[0] == 1.0f);
    h_fini(&h);

    float like = 0;
    smelt_tensor cl[2] = {vec(SMELT_DT_INT64, xl, 2), tensor(SMELT_DT_FLOAT32, &like, 0, NULL)};
    h_init(&h, OP_CAST_LIKE, 2, 15);
    CHECK(h_run(&h, cl, 2) == SMELT_OK);
    CHECK(h.out.dtype == SMELT_DT_FLOAT32 && h.out.dims[0] == 2);
    CHECK(((float *)h.out.data)[0] == 300.0f && ((float *)h.out.data)[1] == -1.0f);
    h_fini(&h);

    /* errors */
    h_init(&h, OP_CAST, 1, 13);
    h_attr_int(&h, "to", SMELT_DT_STRING);
    CHECK(h_run(&h, &x, 1) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "node 'n0' (Cast): casting to string");
    h_fini(&h);

    h_init(&h, OP_CAST, 1, 13);
    CHECK(h_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "missing required attribute 'to'");
    h_fini(&h);

    h_init(&h, OP_CAST, 1, 13);
    h_attr_int(&h, "to", 99);
    CHECK(h_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "'to' is 99");
    h_fini(&h);
}

static void test_logic_and_tests(void)
{
    harness h;
    float xs[] = {-INFINITY, 1, INFINITY, NAN};
    smelt_tensor x = vec(SMELT_DT_FLOAT32, xs, 4);

    h_init(&h, OP_IS_INF, 1, 10);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    uint8_t *y = h.out.data;
    CHECK(h.out.dtype == SMELT_DT_BOOL && y[0] && !y[1] && y[2] && !y[3]);
    h_fini(&h);

    h_init(&h, OP_IS_INF, 1, 10);
    h_attr_int(&h, "detect_negative", 0);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    y = h.out.data;
    CHECK(!y[0] && y[2]);
    h_fini(&h);

    h_init(&h, OP_IS_NAN, 1, 13);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    y = h.out.data;
    CHECK(!y[0] && !y[2] && y[3]);
    h_fini(&h);

    uint8_t b[] = {1, 0};
    h_init(&h, OP_NOT, 1, 1);
    x = vec(SMELT_DT_BOOL, b, 2);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    y = h.out.data;
    CHECK(y[0] == 0 && y[1] == 1);
    h_fini(&h);
}

static void test_shapes_and_errors(void)
{
    harness h;
    /* symbolic dims pass through; empty tensors work */
    int64_t dims[3] = {GR_DIM_SYM(0), 0, 4};
    h_init(&h, OP_TANH, 1, 13);
    smelt_tensor x = tensor(SMELT_DT_FLOAT32, NULL, 3, dims);
    const smelt_tensor *in[1] = {&x};
    smelt_tensor out;
    memset(&out, 0, sizeof out);
    CHECK(op_get(OP_TANH)->def->infer(h.ctx, h.n, in, &out) == SMELT_OK);
    CHECK(out.rank == 3 && out.dims[0] == GR_DIM_SYM(0) && out.dims[2] == 4);
    h_fini(&h);

    int64_t zero = 0;
    h_init(&h, OP_SIGMOID, 1, 13);
    x = tensor(SMELT_DT_FLOAT32, &zero, 1, &zero);
    CHECK(h_run(&h, &x, 1) == SMELT_OK);
    h_fini(&h);

    uint8_t u[] = {1};
    h_init(&h, OP_RELU, 1, 14);
    x = vec(SMELT_DT_UINT8, u, 1);
    CHECK(h_run(&h, &x, 1) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx),
                       "node 'n0' (Relu): input 'x0' has unsupported dtype u8");
    h_fini(&h);

    h_init(&h, OP_GELU, 1, 20);
    h_attr_string(&h, "approximate", "fast");
    CHECK(h_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "'approximate' is 'fast'");
    h_fini(&h);

    h_init(&h, OP_LEAKY_RELU, 1, 16);
    h_attr_string(&h, "alpha", "big");
    CHECK(h_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "attribute 'alpha' has type string");
    h_fini(&h);

    h_init(&h, OP_CELU, 1, 12);
    h_attr_float(&h, "alpha", 0.0f);
    CHECK(h_run(&h, &x, 1) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(h.ctx), "'alpha' must be non-zero");
    h_fini(&h);

    /* every elementwise row of ops.def is defined */
    for (int k = 1; k < OP_COUNT_; k++) {
        const op_info *info = op_get((op_kind)k);
        if (strcmp(info->family, "elementwise") == 0 && !info->def) {
            fprintf(stderr, "op %s has no op_def\n", info->name);
            CHECK(0);
        }
    }
}

int main(void)
{
    CHECK(op_get(OP_RELU)->def == &op_def_RELU);
    test_activations();
    test_math();
    test_double_and_half();
    test_integers();
    test_clip();
    test_cast();
    test_logic_and_tests();
    test_shapes_and_errors();
    TEST_MAIN_END();
}
