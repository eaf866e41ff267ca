/* Unit tests of the norm family: BatchNormalization, InstanceNormalization,
 * LayerNormalization, Softmax, LogSoftmax (import, infer, eval, errors). */
#include <stdlib.h>

#include "ops/norm.h"
#include "ops/op.h"
#include "test_util.h"

#define MAX_IO 6

/* Strong references: registry.c only declares the op_defs weak, which does not
 * pull norm.o out of the static library on its own. */
extern const op_def op_def_BATCH_NORMALIZATION;
extern const op_def op_def_INSTANCE_NORMALIZATION;
extern const op_def op_def_LAYER_NORMALIZATION;
extern const op_def op_def_SOFTMAX;
extern const op_def op_def_LOG_SOFTMAX;
const op_def *const test_link_anchor[] = {&op_def_BATCH_NORMALIZATION,
                                          &op_def_INSTANCE_NORMALIZATION,
                                          &op_def_LAYER_NORMALIZATION, &op_def_SOFTMAX,
                                          &op_def_LOG_SOFTMAX};

typedef struct fixture {
    smelt_ctx *ctx;
    gr_graph *g;
    gr_node *node;
    smelt_tensor out[MAX_IO];
} fixture;

static void fixture_init(fixture *f, op_kind op, int64_t opset, int n_in, int n_out)
{
    memset(f, 0, sizeof *f);
    f->ctx = smelt_ctx_new();
    f->g = gr_graph_new();
    f->g->opset = opset;
    f->node = gr_node_new(f->g, "n0", op_get(op)->name, op, n_in, n_out);
    for (int i = 0; i < n_in; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        f->node->inputs[i] = gr_value_new(f->g, name);
    }
    for (int i = 0; i < n_out; i++) {
        char name[16];
        snprintf(name, sizeof name, "out%d", i);
        gr_value *v = gr_value_new(f->g, name);
        v->producer = f->node;
        v->producer_output = i;
        f->node->outputs[i] = v;
    }
}

static void fixture_fini(fixture *f)
{
    for (int i = 0; i < MAX_IO; i++) free(f->out[i].data);
    gr_graph_free(f->g);
    smelt_ctx_free(f->ctx);
}

static gr_attr *attr_add(fixture *f, const char *name, gr_attr_type type)
{
    size_t n = (size_t)f->node->n_attrs;
    gr_attr *attrs = smelt_arena_alloc(&f->g->arena, sizeof(gr_attr) * (n + 1));
    if (n) memcpy(attrs, f->node->attrs, sizeof(gr_attr) * n);
    f->node->attrs = attrs;
    gr_attr *a = &attrs[f->node->n_attrs++];
    a->name = name;
    a->type = type;
    return a;
}

static void attr_int(fixture *f, const char *name, int64_t v)
{
    attr_add(f, name, GR_ATTR_INT)->i = v;
}

static void attr_float(fixture *f, const char *name, float v)
{
    attr_add(f, name, GR_ATTR_FLOAT)->f = v;
}

static smelt_tensor tensor(smelt_dtype dt, int rank, const int64_t *dims, const void *data)
{
    smelt_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
    t.data = (void *)data;
    return t;
}

/* import, infer, allocate outputs, eval.  in[i].dtype == 0 marks an omitted input. */
static smelt_status run(fixture *f, smelt_tensor *in)
{
    const op_def *def = op_get(f->node->op)->def;
    if (!def) return SMELT_ERR_UNSUPPORTED;
    if (def->import) SMELT_TRY(def->import(f->ctx, f->g, f->node));
    const smelt_tensor *inp[MAX_IO];
    for (int i = 0; i < f->node->n_inputs; i++) inp[i] = in[i].dtype ? &in[i] : NULL;
    SMELT_TRY(def->infer(f->ctx, f->node, inp, f->out));
    for (int i = 0; i < f->node->n_outputs; i++) {
        size_t n = (size_t)smelt_tensor_numel(&f->out[i]);
        f->out[i].data = calloc(n ? n : 1, smelt_dtype_size(f->out[i].dtype));
    }
    return def->eval(f->ctx, f->node, inp, f->out);
}

static void check_f32(const smelt_tensor *t, const float *want, int64_t n, double tol)
{
    CHECK(smelt_tensor_numel(t) == n);
    for (int64_t i = 0; i < n && i < smelt_tensor_numel(t); i++)
        CHECK_NEAR(((const float *)t->data)[i], want[i], tol);
}

/* ---- Softmax / LogSoftmax ---- */

static void test_softmax_last_axis(void)
{
    fixture f;
    fixture_init(&f, OP_SOFTMAX, 13, 1, 1);
    const int64_t dims[] = {2, 3};
    const float x[] = {1, 2, 3, 1000, 1001, 1002};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 2, dims, x)};
    CHECK(run(&f, in) == SMELT_OK);
    const float want[] = {0.09003057f, 0.24472847f, 0.66524096f,
                          0.09003057f, 0.24472847f, 0.66524096f};
    check_f32(&f.out[0], want, 6, 1e-6);
    fixture_fini(&f);
}

static void test_softmax_axis0_strided(void)
{
    fixture f;
    fixture_init(&f, OP_SOFTMAX, 13, 1, 1);
    attr_int(&f, "axis", 0);
    const int64_t dims[] = {2, 2};
    const float x[] = {0, 1, 0, 3};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 2, dims, x)};
    CHECK(run(&f, in) == SMELT_OK);
    const float want[] = {0.5f, 0.11920292f, 0.5f, 0.88079708f};
    check_f32(&f.out[0], want, 4, 1e-6);
    fixture_fini(&f);
}

/* Opset < 13: the default axis is 1 and everything from it on is one row. */
static void test_softmax_coerced_2d(void)
{
    fixture f;
    fixture_init(&f, OP_SOFTMAX, 11, 1, 1);
    const int64_t dims[] = {2, 2, 2};
    const float x[] = {0, 0, 0, 0, 1, 1, 1, 1};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 3, dims, x)};
    CHECK(run(&f, in) == SMELT_OK);
    for (int i = 0; i < 8; i++) CHECK_NEAR(((float *)f.out[0].data)[i], 0.25, 1e-7);
    fixture_fini(&f);
}

static void test_log_softmax_double(void)
{
    fixture f;
    fixture_init(&f, OP_LOG_SOFTMAX, 13, 1, 1);
    const int64_t dims[] = {3};
    const double x[] = {1, 2, 3};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT64, 1, dims, x)};
    CHECK(run(&f, in) == SMELT_OK);
    CHECK(f.out[0].dtype == SMELT_DT_FLOAT64);
    const double *y = f.out[0].data;
    double lse = log(exp(1.0) + exp(2.0) + exp(3.0));
    for (int i = 0; i < 3; i++) CHECK_NEAR(y[i], x[i] - lse, 1e-12);
    fixture_fini(&f);
}

static void test_softmax_bad_axis(void)
{
    fixture f;
    fixture_init(&f, OP_SOFTMAX, 13, 1, 1);
    attr_int(&f, "axis", 2);
    const int64_t dims[] = {2, 3};
    const float x[6] = {0};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 2, dims, x)};
    CHECK(run(&f, in) == SMELT_ERR_ATTR);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "node 'n0' (Softmax): axis 2 is out of range");
    fixture_fini(&f);
}

static void test_softmax_int_rejected(void)
{
    fixture f;
    fixture_init(&f, OP_SOFTMAX, 13, 1, 1);
    const int64_t dims[] = {2};
    const int32_t x[2] = {0};
    smelt_tensor in[] = {tensor(SMELT_DT_INT32, 1, dims, x)};
    CHECK(run(&f, in) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "input 'in0' has unsupported dtype");
    fixture_fini(&f);
}

static void test_softmax_empty(void)
{
    fixture f;
    fixture_init(&f, OP_SOFTMAX, 13, 1, 1);
    const int64_t dims[] = {0, 3};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 2, dims, NULL)};
    CHECK(run(&f, in) == SMELT_OK);
    CHECK(f.out[0].rank == 2 && f.out[0].dims[0] == 0 && f.out[0].dims[1] == 3);
    fixture_fini(&f);
}

/* ---- LayerNormalization ---- */

static void test_layernorm_outputs(void)
{
    fixture f;
    fixture_init(&f, OP_LAYER_NORMALIZATION, 17, 3, 3);
    const int64_t xd[] = {2, 3}, pd[] = {3};
    const float x[] = {1, 2, 3, 4, 4, 4}, w[] = {1, 2, 3}, b[] = {0, 0, 1};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 2, xd, x), tensor(SMELT_DT_FLOAT32, 1, pd, w),
                         tensor(SMELT_DT_FLOAT32, 1, pd, b)};
    attr_float(&f, "epsilon", 0.5f);
    CHECK(run(&f, in) == SMELT_OK);
    double inv0 = 1.0 / sqrt(2.0 / 3.0 + 0.5), inv1 = 1.0 / sqrt(0.5);
    const float want[] = {(float)(-inv0), 0.0f, (float)(3 * inv0 + 1), 0, 0, 1};
    check_f32(&f.out[0], want, 6, 1e-6);
    CHECK(f.out[1].rank == 2 && f.out[1].dims[0] == 2 && f.out[1].dims[1] == 1);
    CHECK(f.out[1].dtype == SMELT_DT_FLOAT32);
    const float mean[] = {2, 4}, inv[] = {(float)inv0, (float)inv1};
    check_f32(&f.out[1], mean, 2, 1e-6);
    check_f32(&f.out[2], inv, 2, 1e-6);
    fixture_fini(&f);
}

/* Axis 0 normalises everything; scale broadcasts from a smaller rank. */
static void test_layernorm_axis0_broadcast_scale(void)
{
    fixture f;
    fixture_init(&f, OP_LAYER_NORMALIZATION, 17, 2, 1);
    attr_int(&f, "axis", 0);
    attr_float(&f, "epsilon", 0.0f);
    const int64_t xd[] = {2, 2}, pd[] = {2};
    const float x[] = {1, 1, 3, 3}, w[] = {1, 10};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 2, xd, x), tensor(SMELT_DT_FLOAT32, 1, pd, w)};
    CHECK(run(&f, in) == SMELT_OK);
    const float want[] = {-1, -10, 1, 10};
    check_f32(&f.out[0], want, 4, 1e-6);
    fixture_fini(&f);
}

static void test_layernorm_bad_scale(void)
{
    fixture f;
    fixture_init(&f, OP_LAYER_NORMALIZATION, 17, 2, 1);
    const int64_t xd[] = {2, 3}, pd[] = {4};
    const float x[6] = {0}, w[4] = {0};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 2, xd, x), tensor(SMELT_DT_FLOAT32, 1, pd, w)};
    CHECK(run(&f, in) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx),
                       "input 'in1' of shape (4) does not broadcast to the normalized shape (3)");
    fixture_fini(&f);
}

static void test_layernorm_symbolic_infer(void)
{
    fixture f;
    fixture_init(&f, OP_LAYER_NORMALIZATION, 17, 2, 2);
    const op_def *def = op_get(OP_LAYER_NORMALIZATION)->def;
    CHECK(def->import(f.ctx, f.g, f.node) == SMELT_OK);
    const int64_t xd[] = {GR_DIM_SYM(0), 768}, pd[] = {768};
    smelt_tensor x = tensor(SMELT_DT_FLOAT32, 2, xd, NULL);
    smelt_tensor w = tensor(SMELT_DT_FLOAT32, 1, pd, NULL);
    const smelt_tensor *in[] = {&x, &w};
    CHECK(def->infer(f.ctx, f.node, in, f.out) == SMELT_OK);
    CHECK(f.out[0].dims[0] == GR_DIM_SYM(0) && f.out[0].dims[1] == 768);
    CHECK(f.out[1].dims[0] == GR_DIM_SYM(0) && f.out[1].dims[1] == 1);
    fixture_fini(&f);
}

/* ---- BatchNormalization ---- */

static void test_batchnorm_inference(void)
{
    fixture f;
    fixture_init(&f, OP_BATCH_NORMALIZATION, 15, 5, 1);
    attr_float(&f, "epsilon", 0.0f);
    const int64_t xd[] = {1, 2, 1, 2}, pd[] = {2};
    const float x[] = {1, 2, 3, 5}, s[] = {2, 1}, b[] = {1, 0}, m[] = {1, 4}, v[] = {4, 1};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 4, xd, x), tensor(SMELT_DT_FLOAT32, 1, pd, s),
                         tensor(SMELT_DT_FLOAT32, 1, pd, b), tensor(SMELT_DT_FLOAT32, 1, pd, m),
                         tensor(SMELT_DT_FLOAT32, 1, pd, v)};
    CHECK(run(&f, in) == SMELT_OK);
    const float want[] = {1, 2, -1, 1};
    check_f32(&f.out[0], want, 4, 1e-6);
    fixture_fini(&f);
}

static void test_batchnorm_training(void)
{
    fixture f;
    fixture_init(&f, OP_BATCH_NORMALIZATION, 15, 5, 3);
    attr_int(&f, "training_mode", 1);
    attr_float(&f, "epsilon", 0.0f);
    attr_float(&f, "momentum", 0.5f);
    const int64_t xd[] = {2, 1, 2}, pd[] = {1};
    const float x[] = {1, 3, 1, 3}, s[] = {1}, b[] = {0}, m[] = {0}, v[] = {3};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 3, xd, x), tensor(SMELT_DT_FLOAT32, 1, pd, s),
                         tensor(SMELT_DT_FLOAT32, 1, pd, b), tensor(SMELT_DT_FLOAT32, 1, pd, m),
                         tensor(SMELT_DT_FLOAT32, 1, pd, v)};
    CHECK(run(&f, in) == SMELT_OK);
    const float want[] = {-1, 1, -1, 1}, rm[] = {1}, rv[] = {2};
    check_f32(&f.out[0], want, 4, 1e-6);
    check_f32(&f.out[1], rm, 1, 1e-6);
    check_f32(&f.out[2], rv, 1, 1e-6);
    fixture_fini(&f);
}

/* Opset 7, spatial=0: one parameter per (channel, position). */
static void test_batchnorm_per_activation(void)
{
    fixture f;
    fixture_init(&f, OP_BATCH_NORMALIZATION, 7, 5, 1);
    attr_int(&f, "spatial", 0);
    attr_float(&f, "epsilon", 0.0f);
    const int64_t xd[] = {1, 1, 2}, pd[] = {1, 2};
    const float x[] = {5, 5}, s[] = {1, 2}, b[] = {0, 0}, m[] = {4, 3}, v[] = {1, 4};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 3, xd, x), tensor(SMELT_DT_FLOAT32, 2, pd, s),
                         tensor(SMELT_DT_FLOAT32, 2, pd, b), tensor(SMELT_DT_FLOAT32, 2, pd, m),
                         tensor(SMELT_DT_FLOAT32, 2, pd, v)};
    CHECK(run(&f, in) == SMELT_OK);
    const float want[] = {1, 2};
    check_f32(&f.out[0], want, 2, 1e-6);
    fixture_fini(&f);
}

static void test_batchnorm_double(void)
{
    fixture f;
    fixture_init(&f, OP_BATCH_NORMALIZATION, 9, 5, 1);
    attr_float(&f, "epsilon", 0.0f);
    const int64_t xd[] = {2, 1}, pd[] = {1};
    const double x[] = {3, 5}, s[] = {2}, b[] = {1}, m[] = {1}, v[] = {4};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT64, 2, xd, x), tensor(SMELT_DT_FLOAT64, 1, pd, s),
                         tensor(SMELT_DT_FLOAT64, 1, pd, b), tensor(SMELT_DT_FLOAT64, 1, pd, m),
                         tensor(SMELT_DT_FLOAT64, 1, pd, v)};
    CHECK(run(&f, in) == SMELT_OK);
    CHECK_NEAR(((double *)f.out[0].data)[0], 3.0, 1e-12);
    CHECK_NEAR(((double *)f.out[0].data)[1], 5.0, 1e-12);
    fixture_fini(&f);
}

static void test_batchnorm_bad_param(void)
{
    fixture f;
    fixture_init(&f, OP_BATCH_NORMALIZATION, 15, 5, 1);
    const int64_t xd[] = {1, 2, 2}, pd[] = {2}, bad[] = {3};
    const float x[4] = {0}, p[3] = {0};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 3, xd, x), tensor(SMELT_DT_FLOAT32, 1, pd, p),
                         tensor(SMELT_DT_FLOAT32, 1, bad, p), tensor(SMELT_DT_FLOAT32, 1, pd, p),
                         tensor(SMELT_DT_FLOAT32, 1, pd, p)};
    CHECK(run(&f, in) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx),
                       "input 'in2' has 3 elements, expected 2 (the channels of X)");
    fixture_fini(&f);
}

static void test_batchnorm_old_training_outputs(void)
{
    fixture f;
    fixture_init(&f, OP_BATCH_NORMALIZATION, 9, 5, 3);
    CHECK(op_get(OP_BATCH_NORMALIZATION)->def->import(f.ctx, f.g, f.node) ==
          SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "training outputs");
    fixture_fini(&f);
}

/* ---- InstanceNormalization ---- */

static void test_instancenorm(void)
{
    fixture f;
    fixture_init(&f, OP_INSTANCE_NORMALIZATION, 6, 3, 1);
    attr_float(&f, "epsilon", 0.0f);
    const int64_t xd[] = {2, 1, 2}, pd[] = {1};
    const float x[] = {1, 3, 10, 30}, s[] = {2}, b[] = {1};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 3, xd, x), tensor(SMELT_DT_FLOAT32, 1, pd, s),
                         tensor(SMELT_DT_FLOAT32, 1, pd, b)};
    CHECK(run(&f, in) == SMELT_OK);
    const float want[] = {-1, 3, -1, 3};
    check_f32(&f.out[0], want, 4, 1e-6);
    fixture_fini(&f);
}

static void test_instancenorm_rank2_rejected(void)
{
    fixture f;
    fixture_init(&f, OP_INSTANCE_NORMALIZATION, 6, 3, 1);
    const int64_t xd[] = {2, 1}, pd[] = {1};
    const float x[2] = {0}, p[1] = {0};
    smelt_tensor in[] = {tensor(SMELT_DT_FLOAT32, 2, xd, x), tensor(SMELT_DT_FLOAT32, 1, pd, p),
                         tensor(SMELT_DT_FLOAT32, 1, pd, p)};
    CHECK(run(&f, in) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(f.ctx), "input 'in0' has rank 2, expected at least 3");
    fixture_fini(&f);
}

int main(void)
{
    test_softmax_last_axis();
    test_softmax_axis0_strided();
    test_softmax_coerced_2d();
    test_log_softmax_double();
    test_softmax_bad_axis();
    test_softmax_int_rejected();
    test_softmax_empty();
    test_layernorm_outputs();
    test_layernorm_axis0_broadcast_scale();
    test_layernorm_bad_scale();
    test_layernorm_symbolic_infer();
    test_batchnorm_inference();
    test_batchnorm_training();
    test_batchnorm_per_activation();
    test_batchnorm_double();
    test_batchnorm_bad_param();
    test_batchnorm_old_training_outputs();
    test_instancenorm();
    test_instancenorm_rank2_rejected();
    TEST_MAIN_END();
}
