/* The C API's calls (issue 15, part 5): errors belong to the call that made
 * them, compiling again with other options applies them or says why not,
 * inputs bound by name. */
#include "smelt.h"
#include "smelt_rt.h"
#include "test_util.h"

/* An error does not stick into the next, unrelated call on the context
 * (it used to: the first error won until smelt_ctx_clear). */
static void test_errors_per_call(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    CHECK(smelt_model_load(ctx, "/nonexistent/model.onnx") == NULL);
    CHECK(smelt_ctx_status(ctx) == SMELT_ERR_IO);
    smelt_model *m = smelt_model_load(ctx, SMELT_TWO_INPUTS_PATH);
    CHECK(m != NULL);
    CHECK(smelt_ctx_status(ctx) == SMELT_OK);
    CHECK(strcmp(smelt_ctx_message(ctx), "") == 0);
    if (!m) {
        smelt_ctx_free(ctx);
        return;
    }
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 1, 1, 1, 1, 1};
    smelt_tensor in[2] = {{.dtype = SMELT_DT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = a},
                          {.dtype = SMELT_DT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = b}};
    smelt_tensor out[2];
    CHECK(smelt_model_run(ctx, m, in, 1, out, 2) == SMELT_ERR_ARG); /* one input short */
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "takes 2 inputs");
    CHECK(smelt_model_run(ctx, m, in, 2, out, 2) == SMELT_OK);
    CHECK(smelt_ctx_status(ctx) == SMELT_OK);
    smelt_tensor_release(&out[0]);
    smelt_tensor_release(&out[1]);
    /* a later failure reports itself, not an earlier one */
    CHECK(smelt_model_run(ctx, m, in, 1, out, 2) == SMELT_ERR_ARG);
    smelt_tensor bad = in[1];
    bad.dims[1] = 4;
    smelt_tensor in2[2] = {in[0], bad};
    CHECK(smelt_model_run(ctx, m, in2, 2, out, 2) != SMELT_OK);
    CHECK(strstr(smelt_ctx_message(ctx), "takes 2 inputs") == NULL);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "'b'");
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* Compiling again with other options builds with them (a second compile
 * used to return OK and change nothing); graph options after the graph
 * was optimised are refused with a reason. */
static void test_recompile(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, SMELT_ATTENTION_PATH);
    CHECK(m != NULL);
    if (!m) {
        smelt_ctx_free(ctx);
        return;
    }
    smelt_options o;
    smelt_options_init(&o);
    o.num_threads = 1;
    CHECK(smelt_model_compile(ctx, m, &o) == SMELT_OK);
    CHECK(smelt_model_compiled_threads(m) == 1);
    float x[48];
    for (int i = 0; i < 48; i++) x[i] = (float)(i % 7) * 0.25f - 0.5f;
    smelt_tensor in = {.dtype = SMELT_DT_FLOAT32, .rank = 2, .dims = {6, 8}, .data = x};
    smelt_tensor y1, y2;
    CHECK(smelt_model_run(ctx, m, &in, 1, &y1, 1) == SMELT_OK);
    o.num_threads = 2;
    CHECK(smelt_model_compile(ctx, m, &o) == SMELT_OK);
    CHECK(smelt_model_compiled_threads(m) == 2);
    CHECK(smelt_model_run(ctx, m, &in, 1, &y2, 1) == SMELT_OK);
    CHECK(memcmp(y1.data, y2.data, smelt_tensor_nbytes(&y1)) == 0);
    smelt_tensor_release(&y1);
    smelt_tensor_release(&y2);
    /* NULL options keep the last ones */
    CHECK(smelt_model_compile(ctx, m, NULL) == SMELT_OK);
    CHECK(smelt_model_compiled_threads(m) == 2);
    /* the graph passes ran at -O2: -O0 cannot be applied any more */
    o.opt_level = 0;
    CHECK(smelt_model_compile(ctx, m, &o) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "-O0 (it was optimised at -O2)");
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "load the model again");
    o.opt_level = 2;
    o.disabled_passes = "fuse_ops";
    CHECK(smelt_model_compile(ctx, m, &o) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "disabled_passes");
    /* the refused compile left the model working as before */
    CHECK(smelt_model_run(ctx, m, &in, 1, &y1, 1) == SMELT_OK);
    smelt_tensor_release(&y1);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

static void test_named_inputs(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, SMELT_TWO_INPUTS_PATH);
    CHECK(m != NULL);
    if (!m) {
        smelt_ctx_free(ctx);
        return;
    }
    CHECK(smelt_model_input_index(m, "a") == 0 && smelt_model_input_index(m, "b") == 1);
    CHECK(smelt_model_input_index(m, "c") == -1 && smelt_model_input_index(m, NULL) == -1);
    CHECK(smelt_model_output_index(m, "s") == 1 && smelt_model_output_index(m, "x") == -1);
    float a[6] = {5, 5, 5, 5, 5, 5}, b[6] = {1, 2, 3, 4, 5, 6};
    smelt_tensor ta = {.dtype = SMELT_DT_FLOAT32, .rank = 2, .dims = {2, 3}, .data = a};
    smelt_tensor tb = ta;
    tb.data = b;
    smelt_tensor in[2] = {tb, ta}; /* b first */
    const char *names[2] = {"b", "a"};
    smelt_tensor out[2];
    CHECK(smelt_model_run_named(ctx, m, names, in, 2, out, 2) == SMELT_OK);
    if (smelt_ctx_status(ctx) == SMELT_OK) {
        const float *d = out[0].data;
        CHECK(d[0] == 4 && d[5] == -1); /* a - b */
        smelt_tensor_release(&out[0]);
        smelt_tensor_release(&out[1]);
    }
    /* names from the tensors themselves */
    in[0].name = "b";
    in[1].name = "a";
    CHECK(smelt_model_run_named(ctx, m, NULL, in, 2, out, 2) == SMELT_OK);
    if (smelt_ctx_status(ctx) == SMELT_OK) {
        CHECK(((const float *)out[0].data)[0] == 4);
        smelt_tensor_release(&out[0]);
        smelt_tensor_release(&out[1]);
    }
    in[0].name = in[1].name = NULL;
    const char *wrong[2] = {"A", "b"};
    CHECK(smelt_model_run_named(ctx, m, wrong, in, 2, out, 2) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "no input named 'A' (its inputs: 'a', 'b')");
    const char *twice[2] = {"b", "b"};
    CHECK(smelt_model_run_named(ctx, m, twice, in, 2, out, 2) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "input 'b' is given twice");
    CHECK(smelt_model_run_named(ctx, m, names, in, 1, out, 2) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "input 'a' is not given");
    CHECK(smelt_model_run_named(ctx, m, NULL, in, 2, out, 2) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "input 0 has no name");
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

int main(void)
{
    test_errors_per_call();
    test_recompile();
    test_named_inputs();
    printf("%d passed, %d failed\n", test_checks_passed, test_checks_failed);
    return test_checks_failed ? 1 : 0;
}
