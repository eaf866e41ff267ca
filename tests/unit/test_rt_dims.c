/* Run-time dims (issue 11, items 2 and 3): a model with a symbolic length compiled
 * ONCE for seq = 1..64 (smelt_model_set_dim_range) serves every length in
 * the range, each run matching the reference kernels on the model
 * specialised to that length; ranges and ops that cannot take the dim at
 * run time are refused naming the value or node. */
#include "api/smelt_internal.h"
#include "ops/op.h"
#include "smelt.h"
#include "smelt_rt.h"
#include "test_util.h"

#define MAX_LEN 64

static smelt_model *load(smelt_ctx *ctx, const char *path)
{
    smelt_model *m = smelt_model_load(ctx, path);
    CHECK(m != NULL);
    if (!m) fprintf(stderr, "%s: %s\n", path, smelt_ctx_message(ctx));
    return m;
}

/* ids [1, len] over the vocabulary, mask [1, 1, 1, len] with its last
 * third masked out (every row keeps position 0). */
static void make_inputs(int64_t len, int64_t *ids, float *mask, smelt_tensor in[2])
{
    for (int64_t i = 0; i < len; i++) {
        ids[i] = (i * 7 + 3) % 50;
        mask[i] = i > 0 && i >= len - len / 3 ? -10000.0f : 0.0f;
    }
    in[0] = (smelt_tensor){.dtype = SMELT_DT_INT64, .rank = 2, .dims = {1, len}, .data = ids};
    in[1] = (smelt_tensor){.dtype = SMELT_DT_FLOAT32, .rank = 4, .dims = {1, 1, 1, len}, .data = mask};
}

static double max_diff(const smelt_tensor *a, const smelt_tensor *b, int *same_shape)
{
    *same_shape = a->rank == b->rank && a->dtype == b->dtype;
    for (int d = 0; *same_shape && d < a->rank; d++) *same_shape = a->dims[d] == b->dims[d];
    if (!*same_shape) return INFINITY;
    double m = 0;
    for (int64_t i = 0; i < smelt_tensor_numel(a); i++) {
        double x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
        double e = fabs(x - y) / (1.0 + fabs(y));
        if (!(e <= m)) m = e; /* NaN sticks */
    }
    return m;
}

/* got[o] against want[o] for every output (releasing want), within tol. */
static void expect_close(smelt_tensor *got, smelt_tensor *want, int n, double tol, const char *what,
                         int64_t len)
{
    for (int o = 0; o < n; o++) {
        int same;
        double e = max_diff(&got[o], &want[o], &same);
        CHECK(same && e < tol);
        if (!(same && e < tol))
            fprintf(stderr, "%s %lld output %d: error %g\n", what, (long long)len, o, e);
        smelt_tensor_release(&want[o]);
    }
}

/* The reference kernels on the model specialised to len. */
static bool reference(smelt_ctx *ctx, int64_t len, const smelt_tensor *in, smelt_tensor *out)
{
    smelt_model *r = load(ctx, SMELT_SEQ_BLOCK_PATH);
    bool ok = r && smelt_model_set_dim(ctx, r, "seq", len) == SMELT_OK &&
              smelt_model_run_reference(ctx, r, in, 2, out, 3) == SMELT_OK;
    if (!ok) fprintf(stderr, "reference at %lld: %s\n", (long long)len, smelt_ctx_message(ctx));
    smelt_model_free(r);
    return ok;
}

static void check_length(smelt_ctx *ctx, smelt_model *m, int64_t len, int threads)
{
    int64_t ids[MAX_LEN];
    float mask[MAX_LEN];
    smelt_tensor in[2], got[3], want[3];
    make_inputs(len, ids, mask, in);
    smelt_status s = smelt_model_run(ctx, m, in, 2, got, 3);
    CHECK(s == SMELT_OK);
    if (s != SMELT_OK) {
        fprintf(stderr, "len %lld: %s\n", (long long)len, smelt_ctx_message(ctx));
        return;
    }
    CHECK(got[0].dims[1] == len);
    if (reference(ctx, len, in, want)) expect_close(got, want, 3, 1e-4, threads ? "pool, len" : "len", len);
    for (int o = 0; o < 3; o++) smelt_tensor_release(&got[o]);
}

/* One compile serves 1, 7, 33 and 64 (in an order that grows and shrinks),
 * on one thread and on the pool, its attention fused. */
static void test_one_compile(int threads)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_SEQ_BLOCK_PATH);
    if (!m) goto done;
    CHECK(smelt_model_set_dim_range(ctx, m, "seq", 1, MAX_LEN) == SMELT_OK);
    smelt_options o;
    smelt_options_init(&o);
    o.num_threads = threads;
    CHECK(smelt_model_compile(ctx, m, &o) == SMELT_OK);
    smelt_compiled *c = m->compiled;
    CHECK(c != NULL);
    int fused = 0; /* the attention runs as one kernel taking the lengths at run time */
    for (int i = 0; i < m->graph->nodes.len; i++)
        fused += ((const gr_node *)m->graph->nodes.items[i])->op == OP_FUSED_ATTENTION;
    CHECK(fused == 1);
    const int64_t lens[] = {7, 1, MAX_LEN, 33, 7, 2};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) check_length(ctx, m, lens[i], threads);
    CHECK(m->compiled == c); /* never recompiled */
    CHECK(m->specs.len == 0); /* and no specialisation */
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* Lengths outside the range, and inputs that disagree, fail with a message. */
static void test_bad_lengths(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_SEQ_BLOCK_PATH);
    if (!m) goto done;
    CHECK(smelt_model_set_dim_range(ctx, m, "seq", 2, MAX_LEN) == SMELT_OK);
    int64_t ids[MAX_LEN + 1] = {0};
    float mask[MAX_LEN + 1] = {0};
    smelt_tensor in[2], out[3];
    make_inputs(1, ids, mask, in);
    CHECK(smelt_model_run(ctx, m, in, 2, out, 3) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "dim 1 is 1");
    make_inputs(MAX_LEN + 1, ids, mask, in);
    CHECK(smelt_model_run(ctx, m, in, 2, out, 3) == SMELT_ERR_ARG);
    make_inputs(9, ids, mask, in);
    in[1].dims[3] = 8; /* mask of another length */
    CHECK(smelt_model_run(ctx, m, in, 2, out, 3) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "seq");
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* The runtime's own check, as an AOT package's caller meets it. */
static void test_runtime_range(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_SEQ_BLOCK_PATH);
    if (!m) goto done;
    CHECK(smelt_model_set_dim_range(ctx, m, "seq", 1, MAX_LEN) == SMELT_OK);
    CHECK(smelt_model_compile(ctx, m, NULL) == SMELT_OK);
    smelt_rt_model *rt = smelt_model_compiled_rt(m);
    CHECK(rt != NULL);
    if (!rt) goto done;
    int64_t ids[MAX_LEN + 1] = {0};
    float mask[MAX_LEN + 1] = {0};
    float out0[(MAX_LEN + 1) * 16], out1[16], out2[16];
    const void *in[2] = {ids, mask};
    void *out[3] = {out0, out1, out2};
    size_t in_b[2] = {sizeof ids, sizeof mask}, out_b[3] = {sizeof out0, sizeof out1, sizeof out2};
    char err[256];
    CHECK(smelt_rt_model_run_err(rt, in, in_b, 2, out, out_b, 3, err, sizeof err) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(err, "run-time dim 'seq' = 65 is outside the range the model was compiled for (1..64)");
    in_b[0] = 5 * 8;
    in_b[1] = 5 * 4;
    out_b[0] = 5 * 16 * 4;
    CHECK(smelt_rt_model_run_err(rt, in, in_b, 2, out, out_b, 3, err, sizeof err) == SMELT_RT_OK);
    out_b[0] = 6 * 16 * 4; /* an output of another length */
    CHECK(smelt_rt_model_run_err(rt, in, in_b, 2, out, out_b, 3, err, sizeof err) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(err, "output 0 ('hidden')");
    in_b[1] = 4 * 4;
    CHECK(smelt_rt_model_run_err(rt, in, in_b, 2, out, out_b, 3, err, sizeof err) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(err, "'seq' = 4, an earlier input 5");
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* A mean over the length divides by it: compiling refuses the node. */
static void test_refused_op(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_SEQ_MEAN_PATH);
    if (!m) goto done;
    CHECK(smelt_model_set_dim_range(ctx, m, "seq", 1, 32) == SMELT_OK);
    CHECK(smelt_model_compile(ctx, m, NULL) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "node 'mean_over_seq' (ReduceMean)");
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "run-time dim 'seq'");
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "--dim seq=N");
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* A dim of 2 x seq is not the dim itself: the range is refused, and the
 * model is left as it was (a plain --dim still works). */
static void test_refused_range(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_SEQ_TWICE_PATH);
    if (!m) goto done;
    CHECK(smelt_model_set_dim_range(ctx, m, "seq", 1, 32) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "value 'y' dim 1 is 64 with 'seq' = 32 and 62 with 31");
    CHECK(smelt_model_set_dim_range(ctx, m, "seq", 0, 32) == SMELT_ERR_ARG);
    CHECK(smelt_model_set_dim_range(ctx, m, "nosuch", 1, 32) == SMELT_ERR_ARG);
    CHECK(smelt_model_set_dim(ctx, m, "seq", 3) == SMELT_OK);
    CHECK(smelt_model_compile(ctx, m, NULL) == SMELT_OK);
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* A value computed from the length (the mean position 0..seq-1, folded at
 * the maximum) would be wrong at every other length: refused, naming the
 * node that reads it. */
static void test_refused_constant(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_SEQ_POSMEAN_PATH);
    if (!m) goto done;
    CHECK(smelt_model_set_dim_range(ctx, m, "seq", 1, 64) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "node 'scale_by_mean' (Mul): input 1 ('mean') is "
                                               "computed from the run-time dim 'seq'");
    CHECK(smelt_model_set_dim(ctx, m, "seq", 5) == SMELT_OK); /* the model is as it was */
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* ---- a key/value cache: present = past + 1 (kv_cache.onnx) ---- */

#define KV_MAX 40
#define KV_ROW 8 /* heads x head_dim */

/* x [1, 1, 8], past_key and past_value [1, 2, past, 4] of values that
 * depend on the position, so a row read from the wrong place shows. */
static void kv_inputs(int64_t past, float *x, float *keys, float *values, smelt_tensor in[3])
{
    for (int i = 0; i < KV_ROW; i++) x[i] = 0.1f * (float)(i - 3);
    for (int64_t i = 0; i < past * KV_ROW; i++) {
        keys[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
        values[i] = (float)((i * 13) % 7) / 7.0f - 0.4f;
    }
    in[0] = (smelt_tensor){.dtype = SMELT_DT_FLOAT32, .rank = 3, .dims = {1, 1, KV_ROW}, .data = x};
    in[1] = (smelt_tensor){.dtype = SMELT_DT_FLOAT32, .rank = 4, .dims = {1, 2, past, 4}, .data = keys};
    in[2] = (smelt_tensor){.dtype = SMELT_DT_FLOAT32, .rank = 4, .dims = {1, 2, past, 4}, .data = values};
}

static bool kv_reference(smelt_ctx *ctx, int64_t past, const smelt_tensor *in, smelt_tensor *out)
{
    smelt_model *r = load(ctx, SMELT_KV_CACHE_PATH);
    bool ok = r && smelt_model_set_dim(ctx, r, "past", past) == SMELT_OK &&
              smelt_model_run_reference(ctx, r, in, 3, out, 3) == SMELT_OK;
    if (!ok) fprintf(stderr, "kv reference at %lld: %s\n", (long long)past, smelt_ctx_message(ctx));
    smelt_model_free(r);
    return ok;
}

static void kv_check_past(smelt_ctx *ctx, smelt_model *m, int64_t past)
{
    float x[KV_ROW], keys[KV_MAX * KV_ROW], values[KV_MAX * KV_ROW];
    smelt_tensor in[3], got[3], want[3];
    kv_inputs(past, x, keys, values, in);
    smelt_status s = smelt_model_run(ctx, m, in, 3, got, 3);
    CHECK(s == SMELT_OK);
    if (s != SMELT_OK) {
        fprintf(stderr, "past %lld: %s\n", (long long)past, smelt_ctx_message(ctx));
        return;
    }
    CHECK(got[1].dims[2] == past + 1 && got[2].dims[2] == past + 1);
    if (kv_reference(ctx, past, in, want)) expect_close(got, want, 3, 1e-5, "past", past);
    for (int o = 0; o < 3; o++) smelt_tensor_release(&got[o]);
}

/* One compile for past = 1..40 serves every length: the presents are one
 * row longer (the dim + 1) and the Concat's split point moves at run time;
 * the new rows never come from an earlier, longer run's padding. */
static void test_kv_cache(int threads)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_KV_CACHE_PATH);
    if (!m) goto done;
    CHECK(smelt_model_set_dim_range(ctx, m, "past", 1, KV_MAX) == SMELT_OK);
    CHECK(m->graph->rt_dims[0].n_adds == 1 && m->graph->rt_dims[0].adds[0] == 1);
    smelt_options o;
    smelt_options_init(&o);
    o.num_threads = threads;
    CHECK(smelt_model_compile(ctx, m, &o) == SMELT_OK);
    smelt_compiled *c = m->compiled;
    const int64_t pasts[] = {KV_MAX, 1, 17, KV_MAX - 1, 2};
    for (size_t i = 0; i < sizeof pasts / sizeof pasts[0]; i++) kv_check_past(ctx, m, pasts[i]);
    CHECK(m->compiled == c && m->specs.len == 0);
    /* the runtime: an output one row short of past + 1 is refused */
    smelt_rt_model *rt = smelt_model_compiled_rt(m);
    float x[KV_ROW] = {0}, keys[5 * KV_ROW] = {0}, values[5 * KV_ROW] = {0};
    float y[KV_ROW], pk[6 * KV_ROW], pv[6 * KV_ROW];
    const void *in[3] = {x, keys, values};
    void *out[3] = {y, pk, pv};
    size_t in_b[3] = {sizeof x, sizeof keys, sizeof values}, out_b[3] = {sizeof y, sizeof pk, sizeof pv};
    char err[256];
    CHECK(rt && smelt_rt_model_run_err(rt, in, in_b, 3, out, out_b, 3, err, sizeof err) == SMELT_RT_OK);
    out_b[1] = 5 * KV_ROW * sizeof(float);
    CHECK(rt && smelt_rt_model_run_err(rt, in, in_b, 3, out, out_b, 3, err, sizeof err) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(err, "output 1 ('present_key')");
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* ---- an attention mask [1, total] whose symbol follows past: total = past + 1 ---- */

/* kv_inputs plus a mask of total entries, position 1 masked out (when there). */
static void mask_inputs(int64_t past, int64_t total, float *x, float *keys, float *values,
                        float *mask, smelt_tensor in[4])
{
    kv_inputs(past, x, keys, values, in);
    for (int64_t i = 0; i < total; i++) mask[i] = i == 1 ? 0.0f : 1.0f;
    in[3] = (smelt_tensor){.dtype = SMELT_DT_FLOAT32, .rank = 2, .dims = {1, total}, .data = mask};
}

static smelt_model *tied_mask_model(smelt_ctx *ctx)
{
    smelt_model *m = load(ctx, SMELT_KV_CACHE_MASK_PATH);
    if (m) CHECK(smelt_model_tie_dim(ctx, m, "total", "past", 1) == SMELT_OK);
    return m;
}

static void mask_check_past(smelt_ctx *ctx, smelt_model *m, int64_t past)
{
    float x[KV_ROW], keys[KV_MAX * KV_ROW], values[KV_MAX * KV_ROW], mask[KV_MAX + 1];
    smelt_tensor in[4], got[3], want[3];
    mask_inputs(past, past + 1, x, keys, values, mask, in);
    smelt_status s = smelt_model_run(ctx, m, in, 4, got, 3);
    CHECK(s == SMELT_OK);
    if (s != SMELT_OK) {
        fprintf(stderr, "mask, past %lld: %s\n", (long long)past, smelt_ctx_message(ctx));
        return;
    }
    smelt_model *r = tied_mask_model(ctx);
    bool ok = r && smelt_model_set_dim(ctx, r, "past", past) == SMELT_OK &&
              smelt_model_run_reference(ctx, r, in, 4, want, 3) == SMELT_OK;
    CHECK(ok);
    if (ok) expect_close(got, want, 3, 1e-5, "mask, past", past);
    smelt_model_free(r);
    for (int o = 0; o < 3; o++) smelt_tensor_release(&got[o]);
}

/* Tied to past, the mask's own symbol is past + 1: one compile for past =
 * 1..40 takes it at every length (the runtime reads past from the caches
 * and checks the mask against it); without the tie the dim stays free. */
static void test_tied_mask(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = tied_mask_model(ctx);
    if (!m) goto done;
    CHECK(smelt_model_set_dim_range(ctx, m, "past", 1, KV_MAX) == SMELT_OK);
    CHECK(m->graph->rt_dims[0].n_adds == 1 && m->graph->rt_dims[0].adds[0] == 1);
    CHECK(smelt_model_compile(ctx, m, NULL) == SMELT_OK);
    smelt_compiled *c = m->compiled;
    const int64_t pasts[] = {KV_MAX, 3, 1, 22};
    for (size_t i = 0; i < sizeof pasts / sizeof pasts[0]; i++) mask_check_past(ctx, m, pasts[i]);
    CHECK(m->compiled == c && m->specs.len == 0);
    float x[KV_ROW], keys[5 * KV_ROW], values[5 * KV_ROW], mask[7];
    smelt_tensor in[4], out[3];
    mask_inputs(5, 7, x, keys, values, mask, in); /* a mask one entry too long */
    CHECK(smelt_model_run(ctx, m, in, 4, out, 3) != SMELT_OK);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "attention_mask");
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

static void test_tie_refusals(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_KV_CACHE_MASK_PATH);
    if (!m) goto done;
    CHECK(smelt_model_tie_dim(ctx, m, "total", "nope", 1) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "no input of the model has a symbolic dim named 'nope'");
    CHECK(smelt_model_tie_dim(ctx, m, "total", "past", 9) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "a tie's offset is -8..8");
    CHECK(smelt_model_tie_dim(ctx, m, "past", "past", 0) == SMELT_ERR_ARG);
    CHECK(smelt_model_tie_dim(ctx, m, "total", "past", -1) == SMELT_OK);
    CHECK(smelt_model_tie_dim(ctx, m, "total", "past", 1) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "tied already");
    CHECK(smelt_model_set_dim(ctx, m, "past", 1) == SMELT_ERR_ARG); /* total would be 0 */
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "below 1");
    const char *past = smelt_model_input_dim_name(m, 1, 2); /* nothing was bound */
    CHECK(past && strcmp(past, "past") == 0);
    /* total = past - 1 does not fit the graph: the shape error names the node */
    CHECK(smelt_model_set_dim(ctx, m, "past", 6) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "node 'mask_scores' (Add)");
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* ---- inputs and outputs laid out at the run's dims (not staged) ---- */

static const smelt_rt_io_info *io_of(smelt_model *m, bool output, int i)
{
    const smelt_rt_module_info *info = smelt_rt_model_info(smelt_model_compiled_rt(m));
    return info ? (output ? &info->outputs[i] : &info->inputs[i]) : NULL;
}

/* The cache [1, heads, past, d] is read and written where the caller keeps
 * it: its accesses are proved inside the run's extents. */
static void test_kv_cache_dense(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_KV_CACHE_PATH);
    if (!m) goto done;
    CHECK(smelt_model_set_dim_range(ctx, m, "past", 1, KV_MAX) == SMELT_OK);
    CHECK(smelt_model_compile(ctx, m, NULL) == SMELT_OK);
    for (int i = 1; i < 3; i++) {
        CHECK(io_of(m, false, i) && io_of(m, false, i)->dense == 1);
        CHECK(io_of(m, true, i) && io_of(m, true, i)->dense == 1);
    }
    CHECK(io_of(m, false, 0) && io_of(m, false, 0)->dense == 0); /* no run-time dim */
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* x [2, seq, 8]: a matrix product's register tile rounds the rows up to
 * whole tiles, so its input and output cannot be dense and are staged (the
 * compile tries again without them); the elementwise x * 2 writes z dense.
 * Every length matches the reference either way. */
static void test_batch_seq_staged_or_dense(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_BATCH_SEQ_PATH);
    if (!m) goto done;
    CHECK(smelt_model_set_dim_range(ctx, m, "seq", 1, 40) == SMELT_OK);
    CHECK(smelt_model_compile(ctx, m, NULL) == SMELT_OK);
    CHECK(io_of(m, true, 0) && io_of(m, true, 0)->dense == 0);
    CHECK(io_of(m, true, 1) && io_of(m, true, 1)->dense == 1);
    const int64_t lens[] = {40, 7, 1, 33};
    float x[2 * 40 * 8];
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        int64_t len = lens[i];
        for (int64_t j = 0; j < 2 * len * 8; j++) x[j] = (float)((j * 29) % 17) / 8.0f - 1.0f;
        smelt_tensor in = {.dtype = SMELT_DT_FLOAT32, .rank = 3, .dims = {2, len, 8}, .data = x};
        smelt_tensor got[2], want[2];
        CHECK(smelt_model_run(ctx, m, &in, 1, got, 2) == SMELT_OK);
        smelt_model *r = load(ctx, SMELT_BATCH_SEQ_PATH);
        bool ok = r && smelt_model_set_dim(ctx, r, "seq", len) == SMELT_OK &&
                  smelt_model_run_reference(ctx, r, &in, 1, want, 2) == SMELT_OK;
        CHECK(ok);
        if (ok) expect_close(got, want, 2, 1e-5, "seq", len);
        for (int o = 0; o < 2; o++) smelt_tensor_release(&got[o]);
        smelt_model_free(r);
    }
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* seq - 1 is 0 at a minimum of 1: refused; from 2 the range is taken (the
 * Slice along the dim is then refused when compiling, naming the node). */
static void test_shift_below_one(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = load(ctx, SMELT_SEQ_SHIFT_PATH);
    if (!m) goto done;
    CHECK(smelt_model_set_dim_range(ctx, m, "seq", 1, 20) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "value 'y' dim 1 is 'seq' -1, below 1 at the range's minimum 1");
    CHECK(smelt_model_set_dim_range(ctx, m, "seq", 2, 20) == SMELT_OK);
    CHECK(m->graph->rt_dims[0].n_adds == 1 && m->graph->rt_dims[0].adds[0] == -1);
    CHECK(smelt_model_compile(ctx, m, NULL) == SMELT_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "node 'drop_first' (Slice)");
done:
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

int main(void)
{
    test_one_compile(1);
    test_one_compile(0);
    test_bad_lengths();
    test_runtime_range();
    test_refused_op();
    test_refused_range();
    test_refused_constant();
    test_kv_cache(1);
    test_kv_cache(0);
    test_shift_below_one();
    test_kv_cache_dense();
    test_tied_mask();
    test_tie_refusals();
    test_batch_seq_staged_or_dense();
    TEST_MAIN_END();
}
