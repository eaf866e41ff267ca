/* The runtime's model API with a hand-written module: module checks,
 * weights files, input checks with clear messages, the named API, the
 * arenas of concurrent runs, and the named API's one invoke at a time. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "smelt_rt.h"
#include "test_util.h"

static int arena_aligned = 1;
static int block_flag;   /* atomic: a run with x[0] < 0 waits while 1 */
static int in_run;       /* atomic: the blocking run has started */
static int fail_run;

/* y[i] = x[i] + w[i] through the arena */
static int add_run(smelt_rt_pool *pool, const unsigned char *weights, unsigned char *arena,
                   const void *const *inputs, void *const *outputs, smelt_rt_run_error *rterr)
{
    (void)pool;
    int64_t t0 = rterr->call_ns ? rterr->clock_ns() : 0; /* as generated runs time a call */
    if ((uintptr_t)arena % 64) arena_aligned = 0;
    const float *x = inputs[0], *w = (const float *)(const void *)weights;
    if (x[0] < 0) {
        __atomic_store_n(&in_run, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&block_flag, __ATOMIC_SEQ_CST)) usleep(100);
    }
    float *t = (float *)(void *)arena, *y = outputs[0];
    for (int i = 0; i < 4; i++) t[i] = x[i] + w[i];
    for (int i = 0; i < 4; i++) y[i] = t[i];
    if (rterr->call_ns) rterr->call_ns[0] += rterr->clock_ns() - t0 + 1;
    return fail_run;
}

static const smelt_rt_io_info add_inputs[] = {{"x", 1, 1, {4}, {0}, {0}, 0}};
static const smelt_rt_io_info add_outputs[] = {{"y", 1, 1, {4}, {0}, {0}, 0}};
static const char *const add_calls[] = {"f0_add"}, *const add_nodes[] = {"/add"};
static const smelt_rt_module_info add_info = {SMELT_RT_ABI_VERSION, 1, 1, add_inputs, add_outputs, 64, 16,
                                              NULL, add_run, 0, NULL, 1, add_calls, add_nodes, 0, NULL, 0};
static const float weights[4] = {10, 20, 30, 40};

static void test_module_checks(void)
{
    char err[256] = "";
    smelt_rt_module_info bad = add_info;
    bad.abi_version = 99;
    CHECK(smelt_rt_model_from_info(&bad, (const unsigned char *)weights, 1, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "ABI version 99");
    CHECK(smelt_rt_model_from_info(&add_info, NULL, 1, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "needs 16 bytes of weights");
    smelt_rt_io_info weird[1] = {{"x", 8, 1, {4}, {0}, {0}, 0}}; /* string tensors are not supported */
    bad = add_info;
    bad.inputs = weird;
    CHECK(smelt_rt_model_from_info(&bad, (const unsigned char *)weights, 1, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "unsupported dtype 8");
    smelt_rt_io_info neg[1] = {{"x", 1, 1, {-1}, {0}, {0}, 0}};
    bad.inputs = neg;
    CHECK(smelt_rt_model_from_info(&bad, (const unsigned char *)weights, 1, err, sizeof err) == NULL);
    bad = add_info;
    bad.run = NULL;
    CHECK(smelt_rt_model_from_info(&bad, (const unsigned char *)weights, 1, err, sizeof err) == NULL);
    CHECK(smelt_rt_model_from_info(NULL, NULL, 1, err, sizeof err) == NULL);
    CHECK(smelt_rt_model_load("/nonexistent/model.so", NULL, 1, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "cannot load '/nonexistent/model.so'");
}

static void test_run_checks(void)
{
    char err[256];
    smelt_rt_model *m = smelt_rt_model_from_info(&add_info, (const unsigned char *)weights, 2, err, sizeof err);
    CHECK(m != NULL);
    if (!m) return;
    float x[4] = {1, 2, 3, 4}, y[4] = {0};
    const void *in[1] = {x};
    void *out[1] = {y};
    size_t ib[1] = {16}, ob[1] = {16};
    CHECK(smelt_rt_model_run(m, in, ib, 1, out, ob, 1) == SMELT_RT_OK);
    CHECK(y[0] == 11 && y[3] == 44 && arena_aligned);
    /* a profiled run hands the run a clock and the caller's counters, which
     * accumulate; a plain run passes none */
    int64_t ns[1] = {0};
    CHECK(smelt_rt_model_run_profiled(m, in, ib, 1, out, ob, 1, ns, err, sizeof err) == SMELT_RT_OK);
    int64_t once = ns[0];
    CHECK(once > 0);
    CHECK(smelt_rt_model_run_profiled(m, in, ib, 1, out, ob, 1, ns, err, sizeof err) == SMELT_RT_OK);
    CHECK(ns[0] > once);
    CHECK(smelt_rt_model_run_profiled(m, in, ib, 1, out, ob, 1, NULL, err, sizeof err) == SMELT_RT_OK);
    CHECK(smelt_rt_model_info(m)->num_calls == 1);

    CHECK(smelt_rt_model_run(m, in, ib, 2, out, ob, 1) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "expected 1 inputs, got 2");
    CHECK(smelt_rt_model_run(m, in, ib, 1, out, ob, 0) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "expected 1 outputs, got 0");
    const void *null_in[1] = {NULL};
    CHECK(smelt_rt_model_run(m, null_in, ib, 1, out, ob, 1) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "input 0 ('x') is NULL; expected float32[4]");
    size_t short_b[1] = {12};
    memset(y, 0, sizeof y);
    CHECK(smelt_rt_model_run(m, in, short_b, 1, out, ob, 1) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "input 0 ('x'): expected 16 bytes (float32[4]), got 12");
    CHECK(y[0] == 0); /* nothing written on error */
    CHECK(smelt_rt_model_run(m, in, ib, 1, out, short_b, 1) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "output 0 ('y')");
    CHECK(smelt_rt_model_run(m, NULL, NULL, 1, out, ob, 1) == SMELT_RT_ERR_ARG);
    void *alias[1] = {x};
    CHECK(smelt_rt_model_run(m, in, ib, 1, alias, ob, 1) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "overlaps input 0");
    fail_run = 1;
    CHECK(smelt_rt_model_run(m, in, ib, 1, out, ob, 1) == SMELT_RT_ERR_NOMEM);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "out of memory");
    fail_run = 0;
    smelt_rt_model_free(m);
}

static void test_named_api(void)
{
    char err[256];
    smelt_rt_model *m = smelt_rt_model_from_info(&add_info, (const unsigned char *)weights, 1, err, sizeof err);
    CHECK(m != NULL);
    if (!m) return;
    float x[4] = {1, 1, 1, 1};
    size_t bytes = 0;
    CHECK(smelt_rt_model_input_index(m, "x") == 0 && smelt_rt_model_input_index(m, "y") == -1);
    CHECK(smelt_rt_model_output_index(m, "y") == 0);
    CHECK(smelt_rt_model_get_output(m, "y", &bytes) == NULL);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "before the model was invoked");
    CHECK(smelt_rt_model_invoke(m) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "input 0 ('x') was never set");
    CHECK(smelt_rt_model_set_input(m, "nope", x, sizeof x) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "no input named 'nope'");
    CHECK(smelt_rt_model_set_input(m, "x", x, 8) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "expected 16 bytes (float32[4]), got 8");
    CHECK(smelt_rt_model_set_input(m, "x", NULL, 16) == SMELT_RT_ERR_ARG);
    CHECK(smelt_rt_model_set_input_index(m, 3, x, 16) == SMELT_RT_ERR_ARG);
    CHECK(smelt_rt_model_set_input(m, "x", x, sizeof x) == SMELT_RT_OK);
    CHECK(smelt_rt_model_invoke(m) == SMELT_RT_OK);
    const float *y = smelt_rt_model_get_output(m, "y", &bytes);
    CHECK(y && bytes == 16 && y[0] == 11 && y[3] == 41);
    CHECK(y && (uintptr_t)y % 64 == 0);
    CHECK(smelt_rt_model_get_output(m, "z", NULL) == NULL);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "no output named 'z'");
    CHECK(smelt_rt_model_get_output_index(m, 0, NULL) == y);
    smelt_rt_model_free(m);
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, n, f);
    fclose(f);
}

static void test_weights_file(void)
{
    char err[256];
    const char *path = "rt-test-weights.bin";
    write_file(path, weights, sizeof weights);
    smelt_rt_model *m = smelt_rt_model_from_info_file(&add_info, path, 1, err, sizeof err);
    CHECK(m != NULL);
    float x[4] = {0}, y[4];
    CHECK(m && smelt_rt_model_run(m, (const void *[]){x}, (size_t[]){16}, 1, (void *[]){y}, (size_t[]){16}, 1) ==
                   SMELT_RT_OK);
    CHECK(y[2] == 30);
    smelt_rt_model_free(m);
    write_file(path, weights, 12);
    CHECK(smelt_rt_model_from_info_file(&add_info, path, 1, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "is too short: expected exactly 16 bytes");
    float more[5] = {0};
    write_file(path, more, sizeof more);
    CHECK(smelt_rt_model_from_info_file(&add_info, path, 1, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "is too long");
    unlink(path);
    CHECK(smelt_rt_model_from_info_file(&add_info, path, 1, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "cannot open weights file 'rt-test-weights.bin'");
    /* embedded weights need no file */
    smelt_rt_module_info emb = add_info;
    emb.embedded_weights = (const unsigned char *)weights;
    m = smelt_rt_model_from_info_file(&emb, NULL, 1, err, sizeof err);
    CHECK(m != NULL);
    smelt_rt_model_free(m);
}

static void *blocking_run(void *arg)
{
    smelt_rt_model *m = arg;
    float x[4] = {-1, 0, 0, 0}, y[4];
    return (void *)(intptr_t)smelt_rt_model_run(m, (const void *[]){x}, (size_t[]){16}, 1, (void *[]){y},
                                                (size_t[]){16}, 1);
}

static void *blocking_invoke(void *arg)
{
    return (void *)(intptr_t)smelt_rt_model_invoke(arg);
}

int smelt_rt_model_arenas_(smelt_rt_model *m);

/* A run while another is in flight on the same model goes ahead on an
 * arena of its own (it used to fail with SMELT_RT_ERR_ARG and no message);
 * the arena is kept for the next overlap.  Invokes (the named API) refuse
 * to overlap, with a message. */
static void test_concurrent_runs(void)
{
    char err[256];
    smelt_rt_model *m = smelt_rt_model_from_info(&add_info, (const unsigned char *)weights, 1, err, sizeof err);
    CHECK(m != NULL);
    if (!m) return;
    CHECK(smelt_rt_model_arenas_(m) == 1);
    for (int round = 0; round < 2; round++) {
        __atomic_store_n(&in_run, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&block_flag, 1, __ATOMIC_SEQ_CST);
        pthread_t th;
        pthread_create(&th, NULL, blocking_run, m);
        while (!__atomic_load_n(&in_run, __ATOMIC_SEQ_CST)) usleep(100);
        float x[4] = {1, 2, 3, 4}, y[4] = {0};
        char msg[128] = "untouched";
        CHECK(smelt_rt_model_run_err(m, (const void *[]){x}, (size_t[]){16}, 1, (void *[]){y},
                                     (size_t[]){16}, 1, msg, sizeof msg) == SMELT_RT_OK);
        CHECK(y[0] == 11 && y[3] == 44);
        CHECK(msg[0] == '\0');
        CHECK(smelt_rt_model_arenas_(m) == 2); /* the second arena is made once, then reused */
        __atomic_store_n(&block_flag, 0, __ATOMIC_SEQ_CST);
        void *rc;
        pthread_join(th, &rc);
        CHECK((intptr_t)rc == SMELT_RT_OK);
    }
    /* a failing call's message goes to its caller's buffer */
    float x[4] = {0}, y[4];
    char msg[128] = "";
    CHECK(smelt_rt_model_run_err(m, (const void *[]){x}, (size_t[]){15}, 1, (void *[]){y},
                                 (size_t[]){16}, 1, msg, sizeof msg) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(msg, "input 0 ('x'): expected 16 bytes");
    /* invokes do not overlap */
    float bx[4] = {-1, 0, 0, 0};
    CHECK(smelt_rt_model_set_input(m, "x", bx, sizeof bx) == SMELT_RT_OK);
    __atomic_store_n(&in_run, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&block_flag, 1, __ATOMIC_SEQ_CST);
    pthread_t th;
    pthread_create(&th, NULL, blocking_invoke, m);
    while (!__atomic_load_n(&in_run, __ATOMIC_SEQ_CST)) usleep(100);
    CHECK(smelt_rt_model_invoke(m) == SMELT_RT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_rt_model_error(m), "another thread is invoking this model");
    __atomic_store_n(&block_flag, 0, __ATOMIC_SEQ_CST);
    void *rc;
    pthread_join(th, &rc);
    CHECK((intptr_t)rc == SMELT_RT_OK);
    smelt_rt_model_free(m);
}

static void test_helpers(void)
{
    CHECK(smelt_rt_dtype_size(1) == 4 && smelt_rt_dtype_size(10) == 2 && smelt_rt_dtype_size(9) == 1);
    CHECK(smelt_rt_dtype_size(8) == 0 && smelt_rt_dtype_size(99) == 0);
    CHECK(strcmp(smelt_rt_dtype_name(16), "bfloat16") == 0 && strcmp(smelt_rt_dtype_name(-1), "?") == 0);
    smelt_rt_io_info io = {"t", 7, 3, {2, 3, 4}, {0}, {0}, 0};
    CHECK(smelt_rt_io_bytes(&io) == 192);
    io.dims[1] = INT64_MAX;
    CHECK(smelt_rt_io_bytes(&io) == 0);
}

int main(void)
{
    test_module_checks();
    test_run_checks();
    test_named_api();
    test_weights_file();
    test_concurrent_runs();
    test_helpers();
    TEST_MAIN_END();
}
