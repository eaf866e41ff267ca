/* Runs under load (issue 15, part 2): two compiled models, each shared by 8
 * threads through the public API (smelt_model_run), many calls per thread,
 * every output compared bit for bit with the serial result of the same
 * input.  Before the fix, concurrent calls on one model failed with
 * SMELT_ERR_RUNTIME and an empty message (the runtime's one-run-at-a-time
 * flag); each model also started its own worker pool.
 *
 * SMELT_STRESS_CALLS sets the calls per thread (default 300); the test also
 * runs under ThreadSanitizer (scripts/tsan.sh). */
#include <pthread.h>
#include <stdint.h>

#include "smelt.h"
#include "smelt_rt.h"
#include "test_util.h"

#define N_MODELS 2
#define N_THREADS 8
#define N_FEEDS 4 /* different inputs per model */

typedef struct stress_model {
    smelt_model *m;
    int n_in, n_out;
    smelt_tensor in[N_FEEDS][4];
    smelt_tensor want[N_FEEDS][4]; /* serial outputs */
} stress_model;

static stress_model models[N_MODELS];
static int calls_per_thread = 300;

typedef struct worker_result {
    int index;
    long calls, failures, mismatches;
    char first_error[512];
} worker_result;

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static float rnd(void)
{
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (float)((rng_state >> 40) & 0xffff) / 65536.0f - 0.5f;
}

static int setup(stress_model *s, const char *path)
{
    smelt_ctx *ctx = smelt_ctx_new();
    s->m = smelt_model_load(ctx, path);
    CHECK(s->m != NULL);
    if (!s->m) {
        fprintf(stderr, "%s: %s\n", path, smelt_ctx_message(ctx));
        smelt_ctx_free(ctx);
        return 0;
    }
    s->n_in = smelt_model_num_inputs(s->m);
    s->n_out = smelt_model_num_outputs(s->m);
    CHECK(s->n_in <= 4 && s->n_out <= 4);
    smelt_options o;
    smelt_options_init(&o);
    o.num_threads = 0; /* the whole process-wide pool: loops of both models contend */
    CHECK(smelt_model_compile(ctx, s->m, &o) == SMELT_OK);
    for (int f = 0; f < N_FEEDS; f++) {
        for (int i = 0; i < s->n_in; i++) {
            smelt_tensor *t = &s->in[f][i];
            smelt_model_input_info(s->m, i, NULL, &t->dtype, &t->rank, t->dims);
            int64_t n = smelt_tensor_numel(t);
            float *d = malloc((size_t)n * sizeof *d);
            for (int64_t k = 0; k < n; k++) d[k] = rnd();
            t->data = d;
        }
        CHECK(smelt_model_run(ctx, s->m, s->in[f], s->n_in, s->want[f], s->n_out) == SMELT_OK);
    }
    smelt_ctx_free(ctx);
    return 1;
}

static void *worker(void *arg)
{
    worker_result *r = arg;
    smelt_ctx *ctx = smelt_ctx_new(); /* one context per thread */
    smelt_tensor out[4];
    for (int c = 0; c < calls_per_thread; c++) {
        stress_model *s = &models[(r->index + c) % N_MODELS];
        int f = (c * 7 + r->index) % N_FEEDS;
        r->calls++;
        if (smelt_model_run(ctx, s->m, s->in[f], s->n_in, out, s->n_out) != SMELT_OK) {
            if (r->failures++ == 0)
                snprintf(r->first_error, sizeof r->first_error, "status %d: '%s'",
                         (int)smelt_ctx_status(ctx), smelt_ctx_message(ctx));
            continue;
        }
        for (int o = 0; o < s->n_out; o++) {
            size_t nb = smelt_tensor_nbytes(&s->want[f][o]);
            if (smelt_tensor_nbytes(&out[o]) != nb || memcmp(out[o].data, s->want[f][o].data, nb))
                r->mismatches++;
            smelt_tensor_release(&out[o]);
        }
    }
    smelt_ctx_free(ctx);
    return NULL;
}

int main(void)
{
    const char *env = getenv("SMELT_STRESS_CALLS");
    if (env && atoi(env) > 0) calls_per_thread = atoi(env);
    int pools_before = smelt_rt_shared_pools_started();
    if (!setup(&models[0], SMELT_TINY_CNN_PATH) || !setup(&models[1], SMELT_ATTENTION_PATH))
        return 1;
    /* both models (num_threads 0) run on one process-wide pool */
    CHECK(smelt_rt_shared_pools_started() - pools_before == 1);

    pthread_t th[N_THREADS];
    worker_result res[N_THREADS];
    memset(res, 0, sizeof res);
    for (int t = 0; t < N_THREADS; t++) {
        res[t].index = t;
        CHECK(pthread_create(&th[t], NULL, worker, &res[t]) == 0);
    }
    long calls = 0, failures = 0, mismatches = 0;
    for (int t = 0; t < N_THREADS; t++) {
        pthread_join(th[t], NULL);
        calls += res[t].calls;
        failures += res[t].failures;
        mismatches += res[t].mismatches;
        if (res[t].failures) fprintf(stderr, "thread %d: first failure %s\n", t, res[t].first_error);
    }
    printf("%d threads x %d calls on %d models: %ld calls, %ld failures, %ld outputs differing "
           "from the serial run\n", N_THREADS, calls_per_thread, N_MODELS, calls, failures,
           mismatches);
    CHECK(calls == (long)N_THREADS * calls_per_thread);
    CHECK(failures == 0);
    CHECK(mismatches == 0);

    for (int k = 0; k < N_MODELS; k++) {
        for (int f = 0; f < N_FEEDS; f++) {
            for (int i = 0; i < models[k].n_in; i++) free(models[k].in[f][i].data);
            for (int o = 0; o < models[k].n_out; o++) smelt_tensor_release(&models[k].want[f][o]);
        }
        smelt_model_free(models[k].m);
    }
    printf("%d passed, %d failed\n", test_checks_passed, test_checks_failed);
    return test_checks_failed ? 1 : 0;
}
