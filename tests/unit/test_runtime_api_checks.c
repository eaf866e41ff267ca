/* The compiler API's run calls check what the caller hands them (issue 5):
 * wrong input or output counts, NULL arrays, dtype, rank (also outside
 * 0..8), dims (wrong, negative, overflowing), NULL data give SMELT_ERR_ARG
 * with what was expected, for the reference executor, the compiled model
 * and a model with a symbolic dim (compiled per input shape), and nothing
 * is written past the outputs. */
#include <stdlib.h>

#include "onnx/onnx.pb-c.h"
#include "smelt.h"
#include "test_util.h"

typedef smelt_status (*run_fn)(smelt_ctx *, smelt_model *, const smelt_tensor *, int,
                               smelt_tensor *, int);

/* y = Relu(x) with x: float32[n], n symbolic. */
static uint8_t *relu_dynamic_model(size_t *size)
{
    Onnx__TensorShapeProto__Dimension dim = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT, *dimp = &dim;
    dim.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    dim.dim_param = "n";
    Onnx__TensorShapeProto shape = ONNX__TENSOR_SHAPE_PROTO__INIT;
    shape.n_dim = 1;
    shape.dim = &dimp;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    tt.has_elem_type = 1;
    tt.elem_type = 1;
    tt.shape = &shape;
    Onnx__TypeProto type = ONNX__TYPE_PROTO__INIT;
    type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    type.tensor_type = &tt;
    Onnx__ValueInfoProto x = ONNX__VALUE_INFO_PROTO__INIT, y = ONNX__VALUE_INFO_PROTO__INIT;
    Onnx__ValueInfoProto *xp = &x, *yp = &y;
    x.name = "x";
    x.type = &type;
    y.name = "y";
    y.type = &type;
    char *in_names[1] = {"x"}, *out_names[1] = {"y"};
    Onnx__NodeProto node = ONNX__NODE_PROTO__INIT, *nodep = &node;
    node.n_input = 1;
    node.input = in_names;
    node.n_output = 1;
    node.output = out_names;
    node.name = "relu1";
    node.op_type = "Relu";
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "dyn";
    g.n_node = 1;
    g.node = &nodep;
    g.n_input = 1;
    g.input = &xp;
    g.n_output = 1;
    g.output = &yp;
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsetp = &opset;
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 13;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.n_opset_import = 1;
    m.opset_import = &opsetp;
    m.graph = &g;
    *size = onnx__model_proto__get_packed_size(&m);
    uint8_t *bytes = malloc(*size);
    if (bytes) onnx__model_proto__pack(&m, bytes);
    return bytes;
}

/* outputs[1] is a guard that no call may touch */
static const smelt_tensor guard = {.dtype = SMELT_DT_INT8, .rank = 3, .dims = {7, 7, 7},
                                   .data = (void *)&guard};

static void expect_arg_error(smelt_ctx *ctx, smelt_model *m, run_fn run, const char *what,
                             const smelt_tensor *in, int n_in, int n_out, const char *needle)
{
    smelt_tensor out[2] = {{0}, guard};
    smelt_ctx_clear(ctx);
    smelt_status s = run(ctx, m, in, n_in, n_out ? out : NULL, n_out);
    if (s != SMELT_ERR_ARG)
        fprintf(stderr, "%s: status %s (%s)\n", what, smelt_status_name(s), smelt_ctx_message(ctx));
    CHECK(s == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), needle);
    CHECK(memcmp(&out[1], &guard, sizeof guard) == 0);
    CHECK(out[0].data == NULL);
}

static void expect_ok(smelt_ctx *ctx, smelt_model *m, run_fn run, const smelt_tensor *in,
                      int64_t want_numel)
{
    smelt_tensor out[2] = {{0}, guard};
    smelt_ctx_clear(ctx);
    smelt_status s = run(ctx, m, in, 1, out, 1);
    if (s != SMELT_OK) fprintf(stderr, "valid run: %s\n", smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK);
    CHECK(smelt_tensor_numel(&out[0]) == want_numel && out[0].data != NULL);
    CHECK(memcmp(&out[1], &guard, sizeof guard) == 0);
    smelt_tensor_release(&out[0]);
}

/* Every kind of bad input against a model taking one float32 tensor. */
static void check_bad_inputs(smelt_ctx *ctx, smelt_model *m, run_fn run, const smelt_tensor *good,
                             const char *expected_type)
{
    char needle[160];
    smelt_tensor two[2] = {*good, *good}, t;
    expect_arg_error(ctx, m, run, "no inputs", good, 0, 1, "takes 1 inputs");
    expect_arg_error(ctx, m, run, "two inputs", two, 2, 1, "takes 1 inputs");
    expect_arg_error(ctx, m, run, "NULL inputs", NULL, 1, 1, "");
    expect_arg_error(ctx, m, run, "NULL outputs", good, 1, 0, "");

    t = *good;
    t.dtype = SMELT_DT_INT64;
    snprintf(needle, sizeof needle, "dtype i64, expected %s", expected_type);
    expect_arg_error(ctx, m, run, "dtype", &t, 1, 1, needle);
    t = *good;
    t.rank = good->rank + 1;
    t.dims[good->rank] = 1;
    snprintf(needle, sizeof needle, "rank %d, expected %s", t.rank, expected_type);
    expect_arg_error(ctx, m, run, "rank", &t, 1, 1, needle);
    t = *good;
    t.rank = 1000; /* dims[] has 8: must not be read */
    expect_arg_error(ctx, m, run, "rank 1000", &t, 1, 1, "rank 1000, expected");
    t.rank = -3;
    expect_arg_error(ctx, m, run, "rank -3", &t, 1, 1, "rank -3, expected");
    t = *good;
    t.dims[0] = -1;
    expect_arg_error(ctx, m, run, "negative dim", &t, 1, 1, "dim 0 is -1, expected");
    t = *good;
    t.data = NULL;
    snprintf(needle, sizeof needle, "no data, expected %s", expected_type);
    expect_arg_error(ctx, m, run, "NULL data", &t, 1, 1, needle);
}

static void test_static_model(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, SMELT_TINY_CNN_PATH);
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "load: %s\n", smelt_ctx_message(ctx));
        smelt_ctx_free(ctx);
        return;
    }
    static float data[3 * 32 * 32];
    smelt_tensor good = {.dtype = SMELT_DT_FLOAT32, .rank = 4, .dims = {1, 3, 32, 32}, .data = data};
    run_fn runs[2] = {smelt_model_run_reference, smelt_model_run};
    for (int r = 0; r < 2; r++) {
        check_bad_inputs(ctx, m, runs[r], &good, "f32[1,3,32,32]");
        smelt_tensor t = good;
        t.dims[2] = 31;
        expect_arg_error(ctx, m, runs[r], "wrong dim", &t, 1, 1, "dim 2 is 31, expected f32[1,3,32,32]");
        expect_arg_error(ctx, m, runs[r], "two outputs", &good, 1, 2, "");
        expect_ok(ctx, m, runs[r], &good, 10);
    }
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

static void test_dynamic_model(void)
{
    size_t size;
    uint8_t *bytes = relu_dynamic_model(&size);
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = bytes ? smelt_model_load_bytes(ctx, bytes, size, NULL) : NULL;
    CHECK(m != NULL);
    if (m) {
        static float data[5];
        smelt_tensor good = {.dtype = SMELT_DT_FLOAT32, .rank = 1, .dims = {5}, .data = data};
        run_fn runs[2] = {smelt_model_run_reference, smelt_model_run};
        for (int r = 0; r < 2; r++) {
            check_bad_inputs(ctx, m, runs[r], &good, "f32[n]");
            /* any n is fine, but not one whose bytes cannot exist */
            smelt_tensor t = good;
            t.dims[0] = INT64_MAX;
            expect_arg_error(ctx, m, runs[r], "huge dim", &t, 1, 1, "more than 17179869184 elements");
            expect_ok(ctx, m, runs[r], &good, 5);
        }
    }
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    free(bytes);
}

int main(void)
{
    test_static_model();
    test_dynamic_model();
    TEST_MAIN_END();
}
