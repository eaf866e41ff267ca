/* Sequence and optional values (smelt.h's containers): the deep copy and
 * release under every allocation failure, and tests/models/small/seq_at.onnx
 * (a sequence's length and Relu of its last element) fed well-formed and
 * malformed sequences through the public API: malformed ones are refused
 * naming the input and the problem; compiled runs unroll the sequence per
 * signature (each element an input of the compiled code) and match the
 * reference, and what they cannot unroll is refused naming the node. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api/smelt_internal.h"
#include "smelt.h"
#include "test_util.h"

static smelt_tensor vec(float *data, int64_t n)
{
    return (smelt_tensor){.dtype = SMELT_DT_FLOAT32, .rank = 1, .dims = {n}, .data = data};
}

static smelt_tensor sequence(smelt_tensor *elems, int64_t n)
{
    return (smelt_tensor){.dtype = (smelt_dtype)(SMELT_DT_FLOAT32 | SMELT_DT_SEQUENCE_BIT),
                          .rank = 1, .dims = {n}, .data = elems};
}

/* ---- copy and release ---- */

static int g_fail_at = -1, g_allocs;

static void *failing_alloc(void *user, size_t size)
{
    (void)user;
    return g_allocs++ == g_fail_at ? NULL : malloc(size);
}

static void plain_release(void *user, void *p)
{
    (void)user;
    free(p);
}

static void test_copy_nested(void)
{
    float a[2] = {1, 2}, b[3] = {3, 4, 5};
    smelt_tensor elems[2] = {vec(a, 2), vec(b, 3)};
    smelt_tensor seq = sequence(elems, 2);
    smelt_tensor opt = {.dtype = (smelt_dtype)(seq.dtype | SMELT_DT_OPTIONAL_BIT), .rank = 1,
                        .dims = {1}, .data = &seq};
    CHECK(smelt_dtype_is_container(opt.dtype));
    CHECK(smelt_dtype_element(opt.dtype) == seq.dtype);
    CHECK(smelt_dtype_element(seq.dtype) == SMELT_DT_FLOAT32);
    /* the arrays of structs and the 5 floats */
    CHECK(smelt_value_nbytes(&opt) == 3 * sizeof(smelt_tensor) + 5 * sizeof(float));
    smelt_tensor copy;
    CHECK(smelt_value_copy(&opt, &copy));
    const smelt_tensor *inner = copy.data;
    CHECK(inner->dims[0] == 2 && ((const smelt_tensor *)inner->data)[1].dims[0] == 3);
    CHECK(((const float *)((const smelt_tensor *)inner->data)[1].data)[2] == 5);
    CHECK(((const smelt_tensor *)inner->data)[1].data != b); /* deep */
    smelt_tensor_release(&copy);
    CHECK(copy.data == NULL);

    /* every allocation of the copy refused in turn: a clean failure, no leak
     * (the ASan build's leak check) */
    smelt_allocator hook = {failing_alloc, plain_release, NULL};
    smelt_set_allocator(&hook);
    int total = -1;
    for (g_fail_at = 0; total < 0 || g_fail_at < total; g_fail_at++) {
        g_allocs = 0;
        bool ok = smelt_value_copy(&opt, &copy);
        if (ok) {
            total = g_allocs; /* a full copy: how many allocations it takes */
            smelt_tensor_release(&copy);
            break;
        }
        CHECK(copy.data == NULL);
    }
    smelt_set_allocator(NULL);
    CHECK(total == 4); /* the optional's array, the sequence's, its 2 elements' data */
}

/* ---- the model through the API ---- */

static smelt_model *load(smelt_ctx *ctx)
{
    smelt_model *m = smelt_model_load(ctx, SMELT_SOURCE_DIR "/tests/models/small/seq_at.onnx");
    if (!m) fprintf(stderr, "%s\n", smelt_ctx_message(ctx));
    return m;
}

static void expect_refused(smelt_model *m, smelt_tensor *in, const char *message)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_tensor out[2];
    smelt_status s = smelt_model_run_reference(ctx, m, in, 1, out, 2);
    CHECK(s == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "input 's'");
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), message);
    smelt_ctx_free(ctx);
}

static void test_model(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx);
    CHECK(m != NULL);
    if (!m) return;
    smelt_dtype dt;
    smelt_model_input_info(m, 0, NULL, &dt, NULL, NULL);
    CHECK(dt == (smelt_dtype)(SMELT_DT_FLOAT32 | SMELT_DT_SEQUENCE_BIT));

    float a[2] = {1, -2}, b[3] = {-3, 4, -5};
    smelt_tensor elems[2] = {vec(a, 2), vec(b, 3)}, in = sequence(elems, 2), out[2];
    CHECK(smelt_model_run_reference(ctx, m, &in, 1, out, 2) == SMELT_OK);
    CHECK(*(const int64_t *)out[0].data == 2);
    CHECK(out[1].rank == 1 && out[1].dims[0] == 3);
    const float *y = out[1].data;
    CHECK(y[0] == 0 && y[1] == 4 && y[2] == 0);
    smelt_tensor_release(&out[0]);
    smelt_tensor_release(&out[1]);

    /* an empty sequence has no last element */
    smelt_tensor empty = sequence(NULL, 0);
    CHECK(smelt_model_run_reference(ctx, m, &empty, 1, out, 2) == SMELT_ERR_MODEL);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "node 'at' (SequenceAt): position -1 is out of "
                                               "range [0, -1] for a sequence of 0 tensors");

    /* malformed sequences */
    int64_t ib[3] = {1, 2, 3};
    smelt_tensor wrong[2] = {vec(a, 2),
                             {.dtype = SMELT_DT_INT64, .rank = 1, .dims = {3}, .data = ib}};
    smelt_tensor bad = sequence(wrong, 2);
    expect_refused(m, &bad, "element 1 of type i64 in a sequence of f32");
    bad = sequence(NULL, 2);
    expect_refused(m, &bad, "a container without its elements");
    smelt_tensor deep[1] = {vec(a, 2)};
    deep[0].rank = 9;
    bad = sequence(deep, 1);
    expect_refused(m, &bad, "element 0 has a bad shape (rank 9)");
    smelt_tensor no_data[1] = {vec(NULL, 2)};
    bad = sequence(no_data, 1);
    expect_refused(m, &bad, "element 0 has no data");
    bad = sequence(elems, 2);
    bad.rank = 2;
    expect_refused(m, &bad, "a malformed sequence (rank 2");
    smelt_tensor as_tensor = vec(a, 2);
    expect_refused(m, &as_tensor, "dtype f32");

    /* compiled: one specialisation per signature (here two and three
     * elements), the last element's Relu computed in generated code */
    float c[4] = {7, -1, 0.5f, -8};
    smelt_tensor three[3] = {vec(b, 3), vec(a, 2), vec(c, 4)};
    smelt_tensor ins[2] = {in, sequence(three, 3)};
    for (int k = 0; k < 2; k++) {
        CHECK(smelt_model_run(ctx, m, &ins[k], 1, out, 2) == SMELT_OK);
        smelt_tensor want[2];
        CHECK(smelt_model_run_reference(ctx, m, &ins[k], 1, want, 2) == SMELT_OK);
        CHECK(*(const int64_t *)out[0].data == *(const int64_t *)want[0].data);
        CHECK(out[1].rank == 1 && out[1].dims[0] == want[1].dims[0] &&
              memcmp(out[1].data, want[1].data, sizeof(float) * (size_t)want[1].dims[0]) == 0);
        CHECK(smelt_model_last_nodes(m) > 0);
        for (int o = 0; o < 2; o++) {
            smelt_tensor_release(&out[o]);
            smelt_tensor_release(&want[o]);
        }
    }
    /* the empty one has no element -1: the specialisation says so as the
     * reference does */
    CHECK(smelt_model_run(ctx, m, &empty, 1, out, 2) == SMELT_ERR_MODEL);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "node 'at' (SequenceAt): position -1 is out of "
                                               "range [0, -1] for a sequence of 0 tensors");
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

int main(void)
{
    test_copy_nested();
    test_model();
    TEST_MAIN_END();
}
