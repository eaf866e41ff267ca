/* Runs of a model whose shapes depend on its inputs compile one
 * specialisation per signature (api/specialize.c).  Only the inputs the
 * shapes need become constants: a small data input bound with them made
 * every new value compile anew (a symbolic-length model with 16 token ids)
 * and folded its consumers, so `smelt check --compiled` passed Resize tests
 * whose generated code never ran.  Each run is checked against the
 * reference kernels. */
#include <sys/stat.h>
#include <unistd.h>

#include "api/smelt_internal.h"
#include "smelt.h"
#include "test_util.h"

static smelt_model *load(smelt_ctx *ctx, const char *path)
{
    smelt_model *m = smelt_model_load(ctx, path);
    CHECK(m != NULL);
    if (!m) fprintf(stderr, "%s: %s\n", path, smelt_ctx_message(ctx));
    return m;
}

static void check_same(const smelt_tensor *got, const smelt_tensor *want)
{
    CHECK(got->rank == want->rank && got->dtype == want->dtype);
    for (int d = 0; d < got->rank && d < want->rank; d++) CHECK(got->dims[d] == want->dims[d]);
    if (smelt_tensor_numel(got) != smelt_tensor_numel(want)) return;
    double worst = 0;
    for (int64_t i = 0; i < smelt_tensor_numel(got); i++) {
        double x = ((const float *)got->data)[i], y = ((const float *)want->data)[i];
        double e = fabs(x - y) / (1.0 + fabs(y));
        if (!(e <= worst)) worst = e;
    }
    CHECK(worst < 1e-5);
}

/* m compiled and by the reference kernels on the same inputs. */
static void run_both(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *in, int ni, int no)
{
    smelt_tensor got[4], want[4];
    smelt_status s = smelt_model_run(ctx, m, in, ni, got, no);
    CHECK(s == SMELT_OK);
    if (s != SMELT_OK) {
        fprintf(stderr, "compiled run: %s\n", smelt_ctx_message(ctx));
        return;
    }
    s = smelt_model_run_reference(ctx, m, in, ni, want, no);
    CHECK(s == SMELT_OK);
    for (int o = 0; s == SMELT_OK && o < no; o++) {
        check_same(&got[o], &want[o]);
        smelt_tensor_release(&want[o]);
    }
    for (int o = 0; o < no; o++) smelt_tensor_release(&got[o]);
}

/* A symbolic length: new token ids of the same length reuse the
 * specialisation (the ids are data, not shape); a new length compiles one. */
static void test_ids_stay_inputs(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_SEQ_BLOCK_PATH);
    if (!m) goto done;
    int64_t ids[16];
    float mask[16] = {0};
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 16; i++) ids[i] = (i * (round + 3) + round) % 50;
        smelt_tensor in[2] = {
            {.dtype = SMELT_DT_INT64, .rank = 2, .dims = {1, 16}, .data = ids},
            {.dtype = SMELT_DT_FLOAT32, .rank = 4, .dims = {1, 1, 1, 16}, .data = mask}};
        run_both(ctx, m, in, 2, 3);
        CHECK(m->specs.len == 1);
        CHECK(smelt_model_last_nodes(m) > 0);
    }
    smelt_tensor in7[2] = {{.dtype = SMELT_DT_INT64, .rank = 2, .dims = {1, 7}, .data = ids},
                           {.dtype = SMELT_DT_FLOAT32, .rank = 4, .dims = {1, 1, 1, 7}, .data = mask}};
    run_both(ctx, m, in7, 2, 3);
    CHECK(m->specs.len == 2);
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* Resize by input scales: the scales are bound (they give the shape), X is
 * not, even though it is as small; the Resize runs in generated code. */
static void test_scales_bound_data_not(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_RESIZE_SCALES_PATH);
    if (!m) goto done;
    float x[6], scales[4] = {1, 1, 2, 2};
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 6; i++) x[i] = (float)(i * (round + 1)) - 2.5f;
        smelt_tensor in[2] = {
            {.dtype = SMELT_DT_FLOAT32, .rank = 4, .dims = {1, 1, 2, 3}, .data = x},
            {.dtype = SMELT_DT_FLOAT32, .rank = 1, .dims = {4}, .data = scales}};
        run_both(ctx, m, in, 2, 1);
        CHECK(m->specs.len == 1);
        CHECK(smelt_model_last_nodes(m) > 0);
    }
    scales[3] = 3; /* another output shape */
    smelt_tensor in[2] = {{.dtype = SMELT_DT_FLOAT32, .rank = 4, .dims = {1, 1, 2, 3}, .data = x},
                          {.dtype = SMELT_DT_FLOAT32, .rank = 1, .dims = {4}, .data = scales}};
    run_both(ctx, m, in, 2, 1);
    CHECK(m->specs.len == 2);
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* `smelt check --compiled` says when a pass computed nothing in generated
 * code: a model whose output is a constant. */
static void test_folded_pass_noted(void)
{
    char dir[] = "/tmp/smelt-spec-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    /* y = Constant [1.5, -2] (onnx.helper's bytes: ir 8, opset 13) and its output */
    static const unsigned char model[] = {
        0x08, 0x08, 0x3a, 0x46, 0x0a, 0x30, 0x12, 0x01, 0x79, 0x22, 0x08, 0x43, 0x6f, 0x6e,
        0x73, 0x74, 0x61, 0x6e, 0x74, 0x2a, 0x21, 0x0a, 0x05, 0x76, 0x61, 0x6c, 0x75, 0x65,
        0x2a, 0x15, 0x08, 0x02, 0x10, 0x01, 0x42, 0x05, 0x76, 0x61, 0x6c, 0x75, 0x65, 0x4a,
        0x08, 0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0xa0, 0x01, 0x04, 0x12, 0x01,
        0x67, 0x62, 0x0f, 0x0a, 0x01, 0x79, 0x12, 0x0a, 0x0a, 0x08, 0x08, 0x01, 0x12, 0x04,
        0x0a, 0x02, 0x08, 0x02, 0x42, 0x04, 0x0a, 0x00, 0x10, 0x0d};
    static const unsigned char output[] = {0x08, 0x02, 0x10, 0x01, 0x4a, 0x08, 0x00, 0x00,
                                           0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0};
    char path[256];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    FILE *f = fopen(path, "wb");
    if (f) fwrite(model, 1, sizeof model, f), fclose(f);
    snprintf(path, sizeof path, "%s/test_data_set_0", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/test_data_set_0/output_0.pb", dir);
    f = fopen(path, "wb");
    if (f) fwrite(output, 1, sizeof output, f), fclose(f);
    smelt_check_options o;
    smelt_check_options_init(&o);
    char why[512] = "";
    CHECK(smelt_check_test(dir, &o, why, sizeof why) == SMELT_CHECK_PASS);
    CHECK_STR_CONTAINS(why, "no node ran in generated code");
    o.mode = SMELT_CHECK_REFERENCE;
    why[0] = 0;
    CHECK(smelt_check_test(dir, &o, why, sizeof why) == SMELT_CHECK_PASS);
    CHECK(why[0] == 0);
    remove(path);
    snprintf(path, sizeof path, "%s/test_data_set_0", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    remove(path);
    rmdir(dir);
}

/* Every allocation of a specialisation (the lean binding's trial imports
 * included) refused in turn: an error or the right result, never a leak
 * (ASan) or a crash.  The C compile is cached after the first run. */
static void test_alloc_failures(void)
{
    float x[6] = {1, -2, 3, -4, 5, -6}, scales[4] = {1, 1, 2, 2};
    smelt_tensor in[2] = {{.dtype = SMELT_DT_FLOAT32, .rank = 4, .dims = {1, 1, 2, 3}, .data = x},
                          {.dtype = SMELT_DT_FLOAT32, .rank = 1, .dims = {4}, .data = scales}};
    smelt_allocator failing = {test_failing_alloc, test_plain_release, NULL};
    int ok_runs = 0, total = -1;
    for (int at = 0; total < 0 || at < total; at++) {
        smelt_ctx *ctx = smelt_ctx_new();
        smelt_model *m = smelt_model_load(ctx, SMELT_RESIZE_SCALES_PATH);
        smelt_tensor out;
        test_allocs = 0;
        test_fail_at = at;
        smelt_set_allocator(&failing);
        smelt_status s = m ? smelt_model_run(ctx, m, in, 2, &out, 1) : SMELT_ERR_NOMEM;
        smelt_set_allocator(NULL);
        if (test_allocs <= at) total = at; /* no allocation failed: every one has been */
        CHECK(s == SMELT_OK || smelt_ctx_status(ctx) != SMELT_OK);
        if (s == SMELT_OK) {
            ok_runs++;
            CHECK(out.dims[3] == 6 && ((const float *)out.data)[0] == 1 - 3); /* x[0] + sum(x) */
            smelt_tensor_release(&out);
        }
        smelt_model_free(m);
        smelt_ctx_free(ctx);
    }
    test_fail_at = -1;
    CHECK(total > 0 && ok_runs > 0);
}

int main(void)
{
    test_ids_stay_inputs();
    test_scales_bound_data_not();
    test_alloc_failures();
    test_folded_pass_noted();
    TEST_MAIN_END();
}
