/* The tuner's cost model (src/tune/model.c, XGBoost inside):
 *   - Spearman rank correlation: perfect, reversed, ties, degenerate inputs;
 *   - with too few samples (or nothing to rank) train is a no-op and
 *     predictions are 0;
 *   - synthetic tasks whose score is a known monotone function of two
 *     feature slots plus noise, scaled differently per task: after training
 *     on 2000 rows, predictions on held-out rows rank like the truth
 *     (Spearman > 0.8 in every task); the training time is printed, not
 *     asserted;
 *   - two models coexist and learn opposite orders; retraining on the same
 *     samples is deterministic;
 *   - bad arguments give errors that say what is wrong. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "tune/model.h"

#define F TUNE_FEATURE_COUNT
#define SLOT_A TUNE_F_VEC_SHARE
#define SLOT_B TUNE_F_DOM_UNROLL
#define TASKS 8

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static double uniform(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

/* The truth: increasing in both slots, not linear in either. */
static double truth(const float *x) { return 2.0 * log1p(4.0 * x[SLOT_A]) + sqrt(x[SLOT_B]); }

typedef struct data {
    float *x, *score, *truth;
    int *group;
    int n;
} data;

/* n rows per task; every slot random, the task's own "size" in the flops
 * slot, score = (truth + noise) * task scale + task offset. */
static data make_data(int per_task, double sign)
{
    data d = {.n = per_task * TASKS};
    d.x = calloc((size_t)d.n * F, sizeof(float));
    d.score = calloc((size_t)d.n, sizeof(float));
    d.truth = calloc((size_t)d.n, sizeof(float));
    d.group = calloc((size_t)d.n, sizeof(int));
    for (int i = 0; i < d.n; i++) {
        float *x = d.x + (size_t)i * F;
        int task = i % TASKS; /* interleaved: the model must sort rows by task */
        for (int j = 0; j < F; j++) x[j] = (float)(8.0 * uniform());
        x[SLOT_A] = (float)uniform();
        x[TUNE_F_FLOPS] = (float)(10 + task);
        double noise = 0.6 * (uniform() + uniform() + uniform() - 1.5); /* sd 0.3: ~5% of the range */
        d.truth[i] = (float)(sign * truth(x));
        d.score[i] = (float)((d.truth[i] + noise) * (1 + task) + 3 * task);
        d.group[i] = 100 + task * 7;
    }
    return d;
}

static void free_data(data *d)
{
    free(d->x);
    free(d->score);
    free(d->truth);
    free(d->group);
}

/* Spearman of pred vs truth over the rows of one task. */
static double task_correlation(const data *d, const float *pred, int task)
{
    float *p = calloc((size_t)d->n, sizeof(float)), *t = calloc((size_t)d->n, sizeof(float));
    int k = 0;
    for (int i = 0; i < d->n; i++)
        if (d->group[i] == 100 + task * 7) p[k] = pred[i], t[k++] = d->truth[i];
    double rho = tune_rank_correlation(p, t, k);
    free(p);
    free(t);
    return rho;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Train a new model on d; NULL on failure (reported). */
static tune_model *trained(smelt_ctx *ctx, const data *d, double *train_s)
{
    tune_model *m = tune_model_new(ctx);
    CHECK(m != NULL);
    if (!m) return NULL;
    CHECK(tune_model_add(ctx, m, d->x, d->score, d->group, d->n) == SMELT_OK);
    double t0 = seconds();
    smelt_status r = tune_model_train(ctx, m);
    if (train_s) *train_s = seconds() - t0;
    if (r != SMELT_OK) fprintf(stderr, "train: %s\n", smelt_ctx_message(ctx));
    CHECK(r == SMELT_OK);
    CHECK(tune_model_samples(m) == d->n);
    return m;
}

/* ---- tests ---- */

static void test_rank_correlation(void)
{
    float a[6] = {1, 5, 2, 8, 3, 7}, same[6], rev[6], cube[6];
    for (int i = 0; i < 6; i++) same[i] = a[i], rev[i] = -a[i], cube[i] = a[i] * a[i] * a[i] - 4;
    CHECK_NEAR(tune_rank_correlation(a, same, 6), 1, 1e-12);
    CHECK_NEAR(tune_rank_correlation(a, rev, 6), -1, 1e-12);
    CHECK_NEAR(tune_rank_correlation(a, cube, 6), 1, 1e-12); /* ranks only */
    float t[4] = {1, 2, 2, 3}, u[4] = {1, 2, 3, 4};
    CHECK_NEAR(tune_rank_correlation(t, u, 4), 4.5 / sqrt(22.5), 1e-12); /* ties: average ranks */
    float c[4] = {2, 2, 2, 2};
    CHECK_NEAR(tune_rank_correlation(c, u, 4), 0, 0); /* constant side */
    CHECK_NEAR(tune_rank_correlation(a, a, 1), 0, 0);
    CHECK_NEAR(tune_rank_correlation(NULL, a, 6), 0, 0);
}

static void test_few_samples(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    data d = make_data(1, 1);
    tune_model *m = tune_model_new(ctx);
    CHECK(tune_model_add(ctx, m, d.x, d.score, d.group, TUNE_MODEL_MIN_SAMPLES - 1) == SMELT_OK);
    CHECK(tune_model_train(ctx, m) == SMELT_OK);
    float p[TASKS];
    memset(p, 0x7f, sizeof p);
    CHECK(tune_model_predict(ctx, m, d.x, TASKS, p) == SMELT_OK);
    for (int i = 0; i < TASKS; i++) CHECK(p[i] == 0);
    tune_model_free(m);

    /* enough rows, but every task has one row: nothing to rank */
    m = tune_model_new(ctx);
    CHECK(tune_model_add(ctx, m, d.x, d.score, d.group, TASKS) == SMELT_OK);
    CHECK(tune_model_samples(m) == TASKS && TASKS >= TUNE_MODEL_MIN_SAMPLES);
    CHECK(tune_model_train(ctx, m) == SMELT_OK);
    CHECK(tune_model_predict(ctx, m, d.x, TASKS, p) == SMELT_OK);
    for (int i = 0; i < TASKS; i++) CHECK(p[i] == 0);
    tune_model_free(m);
    free_data(&d);
    smelt_ctx_free(ctx);
}

static void test_learns_ranking(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    data train = make_data(250, 1), held = make_data(60, 1);
    double train_s = 0;
    tune_model *m = trained(ctx, &train, &train_s);
    float *pred = calloc((size_t)held.n, sizeof(float));
    CHECK(m && tune_model_predict(ctx, m, held.x, held.n, pred) == SMELT_OK);
    double sum = 0, worst = 1;
    for (int t = 0; t < TASKS; t++) {
        double rho = task_correlation(&held, pred, t);
        sum += rho;
        if (rho < worst) worst = rho;
        CHECK(rho > 0.8);
    }
    printf("cost model: %d training rows, %d features: trained in %.3f s (one thread); held-out "
           "Spearman per task: mean %.3f, worst %.3f\n",
           train.n, F, train_s, sum / TASKS, worst);
    /* more samples accumulate; retraining still works */
    CHECK(tune_model_add(ctx, m, held.x, held.score, held.group, held.n) == SMELT_OK);
    CHECK(tune_model_samples(m) == train.n + held.n);
    CHECK(tune_model_train(ctx, m) == SMELT_OK);
    free(pred);
    tune_model_free(m);
    free_data(&train);
    free_data(&held);
    smelt_ctx_free(ctx);
}

/* Two models at once: one learns the truth, one its reverse; a second model
 * on the same samples predicts exactly what the first does. */
static void test_models_coexist(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    data up = make_data(40, 1), down = make_data(40, -1), held = make_data(30, 1);
    tune_model *a = trained(ctx, &up, NULL), *b = trained(ctx, &down, NULL), *a2 = trained(ctx, &up, NULL);
    float *pa = calloc((size_t)held.n, sizeof(float)), *pb = calloc((size_t)held.n, sizeof(float)),
          *pa2 = calloc((size_t)held.n, sizeof(float));
    CHECK(a && b && a2);
    if (a && b && a2) {
        CHECK(tune_model_predict(ctx, a, held.x, held.n, pa) == SMELT_OK);
        CHECK(tune_model_predict(ctx, b, held.x, held.n, pb) == SMELT_OK);
        CHECK(tune_model_predict(ctx, a2, held.x, held.n, pa2) == SMELT_OK);
        CHECK(tune_rank_correlation(pa, held.truth, held.n) > 0.5);
        CHECK(tune_rank_correlation(pb, held.truth, held.n) < -0.5);
        CHECK(memcmp(pa, pa2, sizeof(float) * (size_t)held.n) == 0);
    }
    tune_model_free(b);
    tune_model_free(a);
    tune_model_free(a2);
    free(pa);
    free(pb);
    free(pa2);
    free_data(&up);
    free_data(&down);
    free_data(&held);
    smelt_ctx_free(ctx);
}

static void expect_error(smelt_ctx *ctx, smelt_status got, const char *needle)
{
    CHECK(got == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), needle);
    smelt_ctx_clear(ctx);
}

static void test_errors(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    data d = make_data(2, 1);
    tune_model *m = tune_model_new(ctx);
    float out[2 * TASKS];
    expect_error(ctx, tune_model_add(ctx, NULL, d.x, d.score, d.group, 4), "NULL model");
    expect_error(ctx, tune_model_add(ctx, m, d.x, d.score, d.group, 0), "no samples (n = 0)");
    expect_error(ctx, tune_model_add(ctx, m, d.x, d.score, d.group, -3), "no samples (n = -3)");
    expect_error(ctx, tune_model_add(ctx, m, NULL, d.score, d.group, 4), "NULL features");
    expect_error(ctx, tune_model_add(ctx, m, d.x, NULL, d.group, 4), "NULL scores");
    expect_error(ctx, tune_model_add(ctx, m, d.x, d.score, NULL, 4), "NULL groups");
    d.score[3] = NAN;
    expect_error(ctx, tune_model_add(ctx, m, d.x, d.score, d.group, 4), "score of sample 3 is not finite");
    d.score[3] = 1;
    d.x[2 * F + TUNE_F_LOADS] = INFINITY;
    expect_error(ctx, tune_model_add(ctx, m, d.x, d.score, d.group, 4), "(loads) of sample 2 is not finite");
    CHECK(tune_model_samples(m) == 0); /* refused batches add nothing */
    expect_error(ctx, tune_model_train(ctx, NULL), "NULL model");
    expect_error(ctx, tune_model_predict(ctx, m, d.x, 0, out), "no samples");
    expect_error(ctx, tune_model_predict(ctx, m, NULL, 2, out), "NULL features");
    expect_error(ctx, tune_model_predict(ctx, m, d.x, 2, NULL), "NULL output");
    expect_error(ctx, tune_model_predict(ctx, NULL, d.x, 2, out), "NULL model");
    CHECK(tune_model_samples(NULL) == 0);
    tune_model_free(NULL);
    tune_model_free(m);
    free_data(&d);
    smelt_ctx_free(ctx);
}

/* ---- allocation failures ---- */

/* The k-th allocation fails, for every k new/add/train/predict make: each
 * call either works or says out of memory, and nothing leaks (ASan). */
static void test_alloc_failures(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    data d = make_data(4, 1);
    smelt_allocator hook = {test_failing_alloc, test_plain_release, NULL};
    int failed_calls = 0, k;
    for (k = 0; k < 64; k++) {
        test_fail_at = k;
        test_allocs = 0;
        smelt_set_allocator(&hook);
        float p[4 * TASKS];
        smelt_status r = SMELT_ERR_NOMEM;
        tune_model *m = tune_model_new(ctx);
        if (m) r = tune_model_add(ctx, m, d.x, d.score, d.group, d.n);
        if (r == SMELT_OK) r = tune_model_train(ctx, m);
        if (r == SMELT_OK) r = tune_model_predict(ctx, m, d.x, d.n, p);
        smelt_set_allocator(NULL);
        tune_model_free(m);
        CHECK(r == SMELT_OK || r == SMELT_ERR_NOMEM);
        if (r == SMELT_ERR_NOMEM) {
            CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "out of memory");
            failed_calls++;
        }
        smelt_ctx_clear(ctx);
        if (test_allocs <= k) break; /* every allocation has failed once */
    }
    CHECK(k < 64 && failed_calls == k);
    free_data(&d);
    smelt_ctx_free(ctx);
}

int main(void)
{
    test_rank_correlation();
    test_few_samples();
    test_learns_ranking();
    test_models_coexist();
    test_errors();
    test_alloc_failures();
    TEST_MAIN_END();
}
