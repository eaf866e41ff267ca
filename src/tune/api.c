/* Public tuning API: smelt_tune, a whole tuning run over model files (the
 * CLI's `smelt tune` adds task listing and distributed measurement). */
#include <string.h>

#include "tune/tune.h"

void smelt_tune_options_init(smelt_tune_options *o)
{
    memset(o, 0, sizeof *o);
    o->opt_level = 2;
}

static smelt_status check_options(smelt_ctx *ctx, const char *const *paths, int n,
                                  const smelt_tune_options *o)
{
    if (!o || !o->records || !*o->records)
        return smelt_errf(ctx, SMELT_ERR_ARG, "tuning needs a records file to append to");
    if (n < 1 || !paths) return smelt_errf(ctx, SMELT_ERR_ARG, "no model to tune");
    for (int i = 0; i < n; i++)
        if (!paths[i]) return smelt_errf(ctx, SMELT_ERR_ARG, "model path %d is NULL", i);
    if (o->trials < 0 || o->minutes < 0 || o->threads < 0)
        return smelt_errf(ctx, SMELT_ERR_ARG,
                          "trials (%d), minutes (%g) and threads (%d) must not be negative",
                          o->trials, o->minutes, o->threads);
    return SMELT_OK;
}

static void session_options(const smelt_tune_options *o, tune_options *t)
{
    tune_options_init(t);
    t->records_path = o->records;
    t->target = o->target;
    if (o->trials) t->trials = o->trials;
    t->minutes = o->minutes;
    t->measure.threads = o->threads;
    t->quiet = o->quiet != 0;
}

smelt_status smelt_tune(smelt_ctx *ctx, const char *const *model_paths, int num_models,
                        const smelt_tune_options *o)
{
    smelt_ctx_clear(ctx);
    SMELT_TRY(check_options(ctx, model_paths, num_models, o));
    tune_options t;
    session_options(o, &t);
    smelt_options compile;
    smelt_options_init(&compile);
    compile.target = o->target;
    compile.num_threads = o->threads;
    compile.opt_level = o->opt_level;
    smelt_model **models = smelt_calloc((size_t)num_models, sizeof *models);
    if (!models) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    tune_session *s = NULL;
    smelt_status st = tune_session_new(ctx, &t, &s);
    for (int i = 0; st == SMELT_OK && i < num_models; i++) {
        if (!(models[i] = smelt_model_load(ctx, model_paths[i]))) {
            st = smelt_ctx_status(ctx);
            smelt_ctx_append(ctx, " (loading '%s')", model_paths[i]);
            break;
        }
        models[i]->options = compile;
        st = tune_session_add_model(ctx, s, models[i], model_paths[i]);
    }
    if (st == SMELT_OK) st = tune_session_run(ctx, s);
    tune_session_free(s); /* before the models it refers to */
    for (int i = 0; i < num_models; i++) smelt_model_free(models[i]);
    smelt_free(models);
    return st;
}
