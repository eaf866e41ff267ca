/* The XGBoost cost model (see model.h).
 *
 * Training sorts the rows by task (XGBoost's ranking objectives need each
 * group's rows contiguous, given as group sizes), builds one DMatrix, and
 * boosts a fresh booster for TUNE_MODEL_ROUNDS rounds.  Retraining from
 * scratch keeps the model a pure function of the samples (deterministic:
 * fixed seed, one thread) and costs little at the sample counts a tuning
 * run reaches. */
#include "tune/model.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>

#define TUNE_MODEL_ROUNDS 40

/* Booster parameters: shallow trees, a fast learning rate, one thread.
 * Histogram building dominates at a few thousand rows, so few bins: 256
 * bins (the default) costs 3x the time of 64 on 2000 rows x 94 features. */
static const char *const k_params[][2] = {
    {"objective", "rank:pairwise"},
    {"nthread", "1"},
    {"tree_method", "hist"},
    {"max_bin", "64"},
    {"max_depth", "5"},
    {"eta", "0.3"},
    {"min_child_weight", "1"},
    {"subsample", "1"},
    {"seed", "0"},
    {"verbosity", "0"},
};

struct tune_model {
    float *x, *score; /* n rows of TUNE_FEATURE_COUNT; n scores */
    int *group;
    int n, cap;
    BoosterHandle booster; /* NULL until a training had enough samples */
};

static smelt_status xgb_err(smelt_ctx *ctx, const char *what)
{
    const char *msg = XGBGetLastError();
    return smelt_errf(ctx, SMELT_ERR_RUNTIME, "cost model: XGBoost %s failed: %s", what,
                      msg && msg[0] ? msg : "(no message)");
}

#define XGB_TRY(ctx, call, what)                                                    \
    do {                                                                            \
        if ((call) != 0) return xgb_err(ctx, what);                                 \
    } while (0)

tune_model *tune_model_new(smelt_ctx *ctx)
{
    tune_model *m = smelt_calloc(1, sizeof *m);
    if (!m) smelt_errf(ctx, SMELT_ERR_NOMEM, "cost model: out of memory");
    return m;
}

void tune_model_free(tune_model *m)
{
    if (!m) return;
    if (m->booster) XGBoosterFree(m->booster);
    smelt_free(m->x);
    smelt_free(m->score);
    smelt_free(m->group);
    smelt_free(m);
}

int tune_model_samples(const tune_model *m) { return m ? m->n : 0; }

/* ---- adding samples ---- */

static smelt_status check_rows(smelt_ctx *ctx, const char *fn, const tune_model *m, const float *x,
                               int n)
{
    if (!m) return smelt_errf(ctx, SMELT_ERR_ARG, "%s: NULL model", fn);
    if (n <= 0) return smelt_errf(ctx, SMELT_ERR_ARG, "%s: no samples (n = %d)", fn, n);
    if (!x) return smelt_errf(ctx, SMELT_ERR_ARG, "%s: NULL features for %d samples", fn, n);
    return SMELT_OK;
}

static smelt_status check_finite(smelt_ctx *ctx, const float *x, const float *score, int n)
{
    for (int i = 0; i < n; i++) {
        if (!isfinite(score[i]))
            return smelt_errf(ctx, SMELT_ERR_ARG, "tune_model_add: score of sample %d is not finite", i);
        for (int j = 0; j < TUNE_FEATURE_COUNT; j++)
            if (!isfinite(x[(size_t)i * TUNE_FEATURE_COUNT + j]))
                return smelt_errf(ctx, SMELT_ERR_ARG, "tune_model_add: feature %d (%s) of sample %d is not finite",
                                  j, tune_feature_name(j), i);
    }
    return SMELT_OK;
}

static smelt_status reserve(smelt_ctx *ctx, tune_model *m, int extra)
{
    if (extra > INT_MAX / TUNE_FEATURE_COUNT - m->n)
        return smelt_errf(ctx, SMELT_ERR_LIMIT, "tune_model_add: more than %d samples",
                          INT_MAX / TUNE_FEATURE_COUNT);
    int need = m->n + extra, cap = m->cap ? m->cap : 256;
    while (cap < need) cap = cap > INT_MAX / TUNE_FEATURE_COUNT / 2 ? need : 2 * cap;
    if (cap == m->cap) return SMELT_OK;
    /* each array grows separately; m->cap only moves once all three did */
    size_t old = (size_t)m->cap, now = (size_t)cap;
    float *x = smelt_realloc(m->x, sizeof(float) * TUNE_FEATURE_COUNT * old, sizeof(float) * TUNE_FEATURE_COUNT * now);
    if (x) m->x = x;
    float *score = x ? smelt_realloc(m->score, sizeof(float) * old, sizeof(float) * now) : NULL;
    if (score) m->score = score;
    int *group = score ? smelt_realloc(m->group, sizeof(int) * old, sizeof(int) * now) : NULL;
    if (!group) return smelt_errf(ctx, SMELT_ERR_NOMEM, "tune_model_add: out of memory");
    m->group = group;
    m->cap = cap;
    return SMELT_OK;
}

smelt_status tune_model_add(smelt_ctx *ctx, tune_model *m, const float *x, const float *score,
                            const int *group, int n)
{
    SMELT_TRY(check_rows(ctx, "tune_model_add", m, x, n));
    if (!score || !group)
        return smelt_errf(ctx, SMELT_ERR_ARG, "tune_model_add: NULL %s for %d samples", score ? "groups" : "scores", n);
    SMELT_TRY(check_finite(ctx, x, score, n));
    SMELT_TRY(reserve(ctx, m, n));
    memcpy(m->x + (size_t)m->n * TUNE_FEATURE_COUNT, x, sizeof(float) * TUNE_FEATURE_COUNT * (size_t)n);
    memcpy(m->score + m->n, score, sizeof(float) * (size_t)n);
    memcpy(m->group + m->n, group, sizeof(int) * (size_t)n);
    m->n += n;
    return SMELT_OK;
}

/* ---- training ---- */

/* Training rows in task order: each task's rows contiguous, in the order
 * they were added. */
typedef struct train_set {
    float *x, *y;
    unsigned *sizes; /* rows per task */
    int n, n_groups;
    bool rankable;   /* some task has two different scores */
} train_set;

typedef struct row_key {
    int group, row;
} row_key;

static int key_compare(const void *pa, const void *pb)
{
    const row_key *a = pa, *b = pb;
    if (a->group != b->group) return a->group < b->group ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

static void train_set_fini(train_set *t)
{
    smelt_free(t->x);
    smelt_free(t->y);
    smelt_free(t->sizes);
}

static void fill_rows(const tune_model *m, const row_key *keys, train_set *t)
{
    for (int i = 0; i < m->n; i++) {
        int r = keys[i].row;
        memcpy(t->x + (size_t)i * TUNE_FEATURE_COUNT, m->x + (size_t)r * TUNE_FEATURE_COUNT,
               sizeof(float) * TUNE_FEATURE_COUNT);
        t->y[i] = m->score[r];
        bool same_task = i > 0 && keys[i - 1].group == keys[i].group;
        if (!same_task) t->sizes[t->n_groups++] = 0;
        else if (m->score[r] != t->y[i - 1]) t->rankable = true;
        t->sizes[t->n_groups - 1]++;
    }
}

static smelt_status train_set_build(smelt_ctx *ctx, const tune_model *m, train_set *t)
{
    *t = (train_set){.n = m->n};
    row_key *keys = smelt_calloc((size_t)m->n, sizeof *keys);
    t->x = smelt_calloc((size_t)m->n * TUNE_FEATURE_COUNT, sizeof(float));
    t->y = smelt_calloc((size_t)m->n, sizeof(float));
    t->sizes = smelt_calloc((size_t)m->n, sizeof(unsigned));
    if (!keys || !t->x || !t->y || !t->sizes) {
        smelt_free(keys);
        train_set_fini(t);
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "tune_model_train: out of memory");
    }
    for (int i = 0; i < m->n; i++) keys[i] = (row_key){m->group[i], i};
    qsort(keys, (size_t)m->n, sizeof *keys, key_compare);
    fill_rows(m, keys, t);
    smelt_free(keys);
    return SMELT_OK;
}

static smelt_status make_matrix(smelt_ctx *ctx, const float *x, int n, DMatrixHandle *out)
{
    *out = NULL;
    XGB_TRY(ctx, XGDMatrixCreateFromMat_omp(x, (bst_ulong)n, TUNE_FEATURE_COUNT, NAN, out, 1),
            "creating a matrix");
    return SMELT_OK;
}

static smelt_status boost(smelt_ctx *ctx, DMatrixHandle dm, const train_set *t, BoosterHandle bst)
{
    XGB_TRY(ctx, XGDMatrixSetFloatInfo(dm, "label", t->y, (bst_ulong)t->n), "setting labels");
    XGB_TRY(ctx, XGDMatrixSetUIntInfo(dm, "group", t->sizes, (bst_ulong)t->n_groups), "setting groups");
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_params); i++)
        XGB_TRY(ctx, XGBoosterSetParam(bst, k_params[i][0], k_params[i][1]), "setting a parameter");
    for (int r = 0; r < TUNE_MODEL_ROUNDS; r++) XGB_TRY(ctx, XGBoosterUpdateOneIter(bst, r, dm), "boosting");
    return SMELT_OK;
}

/* Boost a new booster on t; on success it replaces m's. */
static smelt_status train_on(smelt_ctx *ctx, tune_model *m, const train_set *t)
{
    DMatrixHandle dm = NULL;
    BoosterHandle bst = NULL;
    smelt_status r = make_matrix(ctx, t->x, t->n, &dm);
    if (r == SMELT_OK && XGBoosterCreate(&dm, 1, &bst) != 0) r = xgb_err(ctx, "creating a booster");
    if (r == SMELT_OK) r = boost(ctx, dm, t, bst);
    if (dm) XGDMatrixFree(dm);
    if (r != SMELT_OK) {
        if (bst) XGBoosterFree(bst);
        return r;
    }
    if (m->booster) XGBoosterFree(m->booster);
    m->booster = bst;
    return SMELT_OK;
}

smelt_status tune_model_train(smelt_ctx *ctx, tune_model *m)
{
    if (!m) return smelt_errf(ctx, SMELT_ERR_ARG, "tune_model_train: NULL model");
    if (m->n < TUNE_MODEL_MIN_SAMPLES) return SMELT_OK;
    train_set t;
    SMELT_TRY(train_set_build(ctx, m, &t));
    smelt_status r = t.rankable ? train_on(ctx, m, &t) : SMELT_OK;
    train_set_fini(&t);
    return r;
}

/* ---- prediction ---- */

static smelt_status predict_with(smelt_ctx *ctx, BoosterHandle bst, DMatrixHandle dm, int n, float *out)
{
    bst_ulong len = 0;
    const float *res = NULL;
    XGB_TRY(ctx, XGBoosterPredict(bst, dm, 0, 0, 0, &len, &res), "predicting");
    if (len != (bst_ulong)n || !res)
        return smelt_errf(ctx, SMELT_ERR_INTERNAL, "cost model: XGBoost gave %llu predictions for %d rows",
                          (unsigned long long)len, n);
    memcpy(out, res, sizeof(float) * (size_t)n);
    return SMELT_OK;
}

smelt_status tune_model_predict(smelt_ctx *ctx, tune_model *m, const float *x, int n, float *out)
{
    SMELT_TRY(check_rows(ctx, "tune_model_predict", m, x, n));
    if (!out) return smelt_errf(ctx, SMELT_ERR_ARG, "tune_model_predict: NULL output for %d samples", n);
    if (!m->booster) {
        memset(out, 0, sizeof(float) * (size_t)n);
        return SMELT_OK;
    }
    DMatrixHandle dm = NULL;
    SMELT_TRY(make_matrix(ctx, x, n, &dm));
    smelt_status r = predict_with(ctx, m->booster, dm, n, out);
    XGDMatrixFree(dm);
    return r;
}

/* ---- rank correlation ---- */

typedef struct ranked {
    float v;
    int i;
} ranked;

/* Total order: NaN first, then by value, then by position (stable). */
static int ranked_compare(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    bool na = isnan(a->v), nb = isnan(b->v);
    if (na != nb) return na ? -1 : 1;
    if (!na && a->v != b->v) return a->v < b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static bool tied(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

/* Ranks 1..n with ties at their average; false when out of memory. */
static bool rank_of(const float *v, int n, double *rank)
{
    ranked *r = smelt_calloc((size_t)n, sizeof *r);
    if (!r) return false;
    for (int i = 0; i < n; i++) r[i] = (ranked){v[i], i};
    qsort(r, (size_t)n, sizeof *r, ranked_compare);
    for (int lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo + 1; hi < n && tied(r[hi].v, r[lo].v); hi++) {}
        double avg = (lo + 1 + hi) / 2.0; /* mean of ranks lo+1 .. hi */
        for (int k = lo; k < hi; k++) rank[r[k].i] = avg;
    }
    smelt_free(r);
    return true;
}

/* Pearson correlation of the two rank vectors. */
static double pearson(const double *a, const double *b, int n)
{
    double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) ma += a[i], mb += b[i];
    ma /= n;
    mb /= n;
    for (int i = 0; i < n; i++) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 0;
}

double tune_rank_correlation(const float *a, const float *b, int n)
{
    if (!a || !b || n < 2) return 0;
    double *ra = smelt_calloc((size_t)n, sizeof *ra), *rb = smelt_calloc((size_t)n, sizeof *rb);
    double rho = 0;
    if (ra && rb && rank_of(a, n, ra) && rank_of(b, n, rb)) rho = pearson(ra, rb, n);
    smelt_free(ra);
    smelt_free(rb);
    return rho;
}
