/* The tuner's cost model: gradient-boosted trees (XGBoost's C API) ranking
 * candidates of one task by their loop-IR features (tune/features.h).
 *
 * Samples accumulate; tune_model_train retrains from scratch on all of them
 * with a pairwise ranking objective grouped by task, so only the order of
 * scores inside a task matters (scores of different tasks need no common
 * scale).  XGBoost runs on one thread (the tuner measures on the other
 * core); its errors become smelt errors.  Every model owns its booster:
 * several may coexist, there is no global state. */
#ifndef SMELT_TUNE_MODEL_H
#define SMELT_TUNE_MODEL_H

#include "tune/features.h"

/* Fewer samples than this (or no task with two different scores): train is
 * a no-op and predict gives 0. */
#define TUNE_MODEL_MIN_SAMPLES 8

typedef struct tune_model tune_model;

tune_model *tune_model_new(smelt_ctx *ctx); /* NULL + error on failure */
void tune_model_free(tune_model *m);

/* Add measured samples: features (n x TUNE_FEATURE_COUNT, row-major), their
 * measured throughput score (higher is better, e.g. GFLOP/s or 1/seconds
 * normalised per task), and a group id per row (the task) for the ranking
 * objective.  Non-finite values are refused. */
smelt_status tune_model_add(smelt_ctx *ctx, tune_model *m, const float *x, const float *score,
                            const int *group, int n);

/* Retrain on everything added (rank:pairwise grouped by task, a few dozen
 * shallow trees: well under a second for ~2000 samples on one core). */
smelt_status tune_model_train(smelt_ctx *ctx, tune_model *m);

/* Predicted scores (higher is better; only the order within a task means
 * anything).  All 0 before a training that had enough samples. */
smelt_status tune_model_predict(smelt_ctx *ctx, tune_model *m, const float *x, int n, float *out);

int tune_model_samples(const tune_model *m);

/* Spearman rank correlation of a and b (ties get their average rank), in
 * [-1, 1]; 0 when n < 2, when either side is constant, or out of memory. */
double tune_rank_correlation(const float *a, const float *b, int n);

#endif
