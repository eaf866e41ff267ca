/* The tuning session: tasks from the models, a budget spread where the
 * end-to-end time is, and per task an evolutionary search over the knobs
 * of the default rules guided by the cost model.
 *
 * Per round a task measures one batch: the default schedule first (so
 * tuning can never lose to it), then candidates bred from the fastest
 * measured ones (one or two knobs changed, or two parents crossed), ranked
 * by the model, the best of them plus an epsilon share of random picks.
 * With --random the batch is uniform random picks and the model is unused:
 * the baseline that shows what the model buys.  A task stops at its trial
 * budget or after early_stop trials without a 1% gain; its winner is then
 * re-measured interleaved with the default and both are recorded as
 * verified, so the records' best is never slower than the default. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tune/features.h"
#include "tune/model.h"
#include "tune/tune.h"

#define SEARCH_POOL_FACTOR 8 /* candidates bred and ranked per slot in a batch */
#define SEARCH_EPSILON 0.25   /* share of a guided batch picked at random */
#define SEARCH_PARENTS 8      /* the fastest measured candidates breed */
#define SEARCH_MAX_ATTEMPTS 64 /* tries to find a new candidate per slot */
#define VERIFY_ROUNDS 7       /* interleaved re-measurements of winner and default */
#define VERIFY_MIN_WINS 6     /* rounds the winner must win to be accepted */
#define VERIFY_MARGIN 0.97    /* and its median at most this share of the default's */

typedef struct measured {
    sch_knobs knobs;
    double ms;
} measured;

typedef struct task_state {
    tune_bench *bench;
    bool failed;            /* cannot be tuned (the reason was printed) */
    bool done, verified;
    bool default_tried;     /* the default schedule was measured (or recorded) */
    bool best_verified;     /* best_ms is a verified time */
    int trials;             /* valid or invalid measurements, records included */
    int since_gain;
    double default_ms, best_ms;
    sch_knobs best_knobs;
    measured *pop;
    int n_pop, cap_pop;
    double *history;        /* best ms after each trial */
    int n_hist, cap_hist;
    double gain_rate;       /* recent relative gain per trial (the scheduler's gradient) */
} task_state;

struct tune_session {
    tune_options o;
    tune_runner runner;
    const cg_target *target;
    char target_key[256];
    smelt_ptrvec models, names; /* borrowed smelt_model*, char* (owned) */
    tune_task_list tasks;
    task_state *st;
    tune_db db;
    FILE *records;
    tune_model *model;
    uint64_t rng;
    double t0;
    int total_trials;
    double corr_sum;
    int corr_n;
};

void tune_options_init(tune_options *o)
{
    memset(o, 0, sizeof *o);
    o->trials = 64;
    o->batch = 8;
    o->early_stop = 96;
    o->seed = 1;
    o->measure.threads = 0;
    o->measure.min_ms = 30;
    o->measure.timeout_s = 10;
    o->measure.build_jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (o->measure.build_jobs < 1) o->measure.build_jobs = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int rng_below(uint64_t *s, int n) { return n > 0 ? (int)(rng_next(s) % (uint64_t)n) : 0; }
static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) / 9007199254740992.0; }

static smelt_status oom(smelt_ctx *ctx) { return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory"); }

/* ---- runners ---- */

static smelt_status local_run(void *user, smelt_ctx *ctx, int task, tune_bench *b,
                              tune_candidate *const *cs, int n, const tune_measure_options *o)
{
    (void)user;
    (void)task;
    SMELT_TRY(tune_build_candidates(ctx, b, cs, n, o));
    for (int i = 0; i < n; i++) SMELT_TRY(tune_measure(ctx, b, cs[i], o));
    return SMELT_OK;
}

tune_runner tune_local_runner(void)
{
    tune_runner r = {local_run, NULL};
    return r;
}

/* ---- session set-up ---- */

smelt_status tune_session_new(smelt_ctx *ctx, const tune_options *o, tune_session **out)
{
    *out = NULL;
    tune_session *s = smelt_calloc(1, sizeof *s);
    if (!s) return oom(ctx);
    s->o = *o;
    const char *tn = o->target;
    s->target = tn && *tn && strcmp(tn, "host") != 0 ? cg_target_find(tn) : cg_target_host();
    smelt_status st = s->target ? SMELT_OK
                                : smelt_errf(ctx, SMELT_ERR_ARG, "unknown target '%s' (known: host, %s)",
                                             tn, cg_target_names());
    if (st == SMELT_OK && s->target->gpu != CG_GPU_NONE) /* else every candidate fails to load */
        st = smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "target '%s' is a GPU target: the tuner measures "
                        "candidates in this process and has no GPU search space yet",
                        s->target->name);
    if (st == SMELT_OK) {
        st = tune_target_key(ctx, s->target, s->target_key, sizeof s->target_key);
    }
    if (st == SMELT_OK && !o->random_search && !(s->model = tune_model_new(ctx)))
        st = smelt_ctx_status(ctx);
    s->rng = (o->seed ? o->seed : 1) * 0x9E3779B97F4A7C15ull | 1;
    s->runner = o->runner.run ? o->runner : tune_local_runner();
    snprintf(s->db.target_key, sizeof s->db.target_key, "%s", s->target_key);
    s->t0 = now_s();
    if (st != SMELT_OK) {
        tune_session_free(s);
        return st;
    }
    *out = s;
    return SMELT_OK;
}

void tune_session_free(tune_session *s)
{
    if (!s) return;
    for (int i = 0; s->st && i < s->tasks.n; i++) {
        tune_bench_free(s->st[i].bench);
        smelt_free(s->st[i].pop);
        smelt_free(s->st[i].history);
    }
    smelt_free(s->st);
    smelt_free(s->tasks.tasks);
    for (int i = 0; i < s->names.len; i++) smelt_free(s->names.items[i]);
    smelt_ptrvec_fini(&s->names);
    smelt_ptrvec_fini(&s->models);
    tune_db_fini(&s->db);
    if (s->records) fclose(s->records);
    tune_model_free(s->model);
    smelt_free(s);
}

smelt_status tune_session_add_model(smelt_ctx *ctx, tune_session *s, smelt_model *m,
                                    const char *name)
{
    if (!smelt_graph_is_static(m->graph)) return smelt_graph_refuse_dynamic(ctx, m->graph);
    if (!m->optimized) m->options.target = s->o.target; /* the layout pass blocks by its vectors */
    SMELT_TRY(smelt_model_optimize(ctx, m, NULL));
    char *copy = smelt_strdup(name);
    if (!copy || !smelt_ptrvec_push(&s->names, copy) || !smelt_ptrvec_push(&s->models, m)) {
        smelt_free(copy);
        return oom(ctx);
    }
    int before = s->tasks.n;
    SMELT_TRY(tune_extract_tasks(ctx, m->graph, s->models.len - 1, &s->target->hw, s->target_key, &s->tasks));
    task_state *st = smelt_realloc(s->st, sizeof *st * (size_t)(before + (s->st != NULL)),
                                   sizeof *st * (size_t)(s->tasks.n + 1));
    if (!st) return oom(ctx);
    memset(st + before, 0, sizeof *st * (size_t)(s->tasks.n + 1 - before));
    s->st = st;
    return SMELT_OK;
}

int tune_session_num_tasks(const tune_session *s) { return s->tasks.n; }
const tune_task *tune_session_task(const tune_session *s, int i) { return &s->tasks.tasks[i]; }
double tune_session_default_ms(const tune_session *s, int task) { return s->st[task].default_ms; }

const double *tune_session_history(const tune_session *s, int task, int *n)
{
    *n = s->st[task].n_hist;
    return s->st[task].history;
}

/* ---- per-task state ---- */

static smelt_status push_history(smelt_ctx *ctx, task_state *t, double best)
{
    if (t->n_hist == t->cap_hist) {
        int cap = t->cap_hist ? 2 * t->cap_hist : 64;
        double *h = smelt_realloc(t->history, sizeof *h * (size_t)t->cap_hist, sizeof *h * (size_t)cap);
        if (!h) return oom(ctx);
        t->history = h;
        t->cap_hist = cap;
    }
    t->history[t->n_hist++] = best;
    return SMELT_OK;
}

static smelt_status push_measured(smelt_ctx *ctx, task_state *t, const sch_knobs *k, double ms)
{
    if (t->n_pop == t->cap_pop) {
        int cap = t->cap_pop ? 2 * t->cap_pop : 64;
        measured *p = smelt_realloc(t->pop, sizeof *p * (size_t)t->cap_pop, sizeof *p * (size_t)cap);
        if (!p) return oom(ctx);
        t->pop = p;
        t->cap_pop = cap;
    }
    t->pop[t->n_pop++] = (measured){*k, ms};
    return SMELT_OK;
}

static bool knobs_default(const int64_t *k)
{
    for (int i = 0; i < SCH_KNOB_COUNT_; i++)
        if (k[i]) return false;
    return true;
}

/* One trial's outcome into the task's state. */
static smelt_status note_trial(smelt_ctx *ctx, task_state *t, const sch_knobs *k, tune_status st,
                               double ms)
{
    t->trials++;
    if (knobs_default(k->v)) t->default_tried = true;
    t->since_gain++;
    if (st == TUNE_OK && ms > 0) {
        SMELT_TRY(push_measured(ctx, t, k, ms));
        if (knobs_default(k->v) && (t->default_ms == 0 || ms < t->default_ms)) t->default_ms = ms;
        if (t->best_ms == 0 || ms < t->best_ms * 0.99) t->since_gain = 0;
        if (t->best_ms == 0 || ms < t->best_ms) {
            t->best_ms = ms;
            t->best_knobs = *k;
        }
    }
    return push_history(ctx, t, t->best_ms);
}

/* A verified record: the re-measured default or winner. */
static void note_verified(task_state *t, const tune_record *rec)
{
    t->verified = t->done = true;
    if (rec->status != TUNE_OK || rec->ms <= 0) return;
    if (knobs_default(rec->knobs)) t->default_ms = rec->ms;
    if (!t->best_verified || rec->ms < t->best_ms) t->best_ms = rec->ms;
    t->best_verified = true;
}

/* Resume: every record of this target counts as a trial already made. */
static smelt_status replay_records(smelt_ctx *ctx, tune_session *s)
{
    for (int r = 0; r < s->db.n; r++) {
        const tune_record *rec = &s->db.recs[r];
        for (int i = 0; i < s->tasks.n; i++) {
            if (strcmp(s->tasks.tasks[i].key, rec->task) != 0) continue;
            sch_knobs k;
            memcpy(k.v, rec->knobs, sizeof k.v);
            if (rec->verified) {
                note_verified(&s->st[i], rec);
                continue;
            }
            SMELT_TRY(note_trial(ctx, &s->st[i], &k, rec->status, rec->ms));
        }
    }
    return SMELT_OK;
}

/* ---- candidates ---- */

static void random_knobs(tune_session *s, const sch_knob_space *sp, sch_knobs *k)
{
    for (int i = 0; i < SCH_KNOB_COUNT_; i++) {
        int n = sp->n_values[i];
        k->v[i] = n ? (rng_below(&s->rng, n + 1) == n ? 0 : sp->values[i][rng_below(&s->rng, n)]) : 0;
    }
}

static int cmp_measured(const void *a, const void *b)
{
    double x = ((const measured *)a)->ms, y = ((const measured *)b)->ms;
    return x < y ? -1 : x > y;
}

/* A child of the fastest measured: one or two knobs changed, or a cross of
 * two parents. */
static void bred_knobs(tune_session *s, task_state *t, const sch_knob_space *sp, sch_knobs *k)
{
    int parents = t->n_pop < SEARCH_PARENTS ? t->n_pop : SEARCH_PARENTS;
    if (parents == 0) {
        random_knobs(s, sp, k);
        return;
    }
    *k = t->pop[rng_below(&s->rng, parents)].knobs;
    if (parents > 1 && rng_below(&s->rng, 4) == 0) {
        const sch_knobs *o = &t->pop[rng_below(&s->rng, parents)].knobs;
        for (int i = 0; i < SCH_KNOB_COUNT_; i++)
            if (rng_below(&s->rng, 2)) k->v[i] = o->v[i];
    }
    int changes = 1 + rng_below(&s->rng, 2);
    for (int c = 0; c < changes; c++) {
        int i = rng_below(&s->rng, SCH_KNOB_COUNT_), n = sp->n_values[i];
        if (n) k->v[i] = sp->values[i][rng_below(&s->rng, n)];
    }
}

/* Is text already measured for the task, or in the batch? */
static bool seen(const tune_session *s, const tune_task *task, tune_candidate *batch, int n,
                 const char *text)
{
    if (tune_db_find(&s->db, task->key, text)) return true;
    for (int i = 0; i < n; i++)
        if (batch[i].schedule && strcmp(batch[i].schedule, text) == 0) return true;
    return false;
}

typedef enum pick_mode { PICK_DEFAULT, PICK_BRED, PICK_RANDOM } pick_mode;

/* A new candidate into batch[n]: lowered, with features; false when none
 * could be found. */
static smelt_status make_candidate(smelt_ctx *ctx, tune_session *s, int ti, tune_candidate *batch,
                                   int n, pick_mode mode, bool *ok)
{
    const tune_task *task = &s->tasks.tasks[ti];
    task_state *t = &s->st[ti];
    const te_graph *te = tune_bench_te(t->bench);
    tune_candidate *c = &batch[n];
    *ok = false;
    for (int attempt = 0; attempt < SEARCH_MAX_ATTEMPTS && !*ok; attempt++) {
        sch_knobs k = {{0}};
        if (mode == PICK_DEFAULT && attempt > 0) return SMELT_OK;
        if (mode == PICK_BRED) bred_knobs(s, t, &task->space, &k);
        else if (mode == PICK_RANDOM) random_knobs(s, &task->space, &k);
        SMELT_TRY(tune_candidate_init(ctx, c, te, &s->target->hw, &k));
        if (c->result.status != TUNE_OK || seen(s, task, batch, n, c->schedule)) {
            tune_candidate_fini(c);
            continue;
        }
        SMELT_TRY(tune_lower_candidate(ctx, t->bench, c));
        if (c->result.status != TUNE_OK) {
            tune_candidate_fini(c);
            continue;
        }
        c->features = smelt_calloc(TUNE_FEATURE_COUNT, sizeof *c->features);
        if (!c->features) return oom(ctx);
        SMELT_TRY(tune_features_extract(ctx, c->lp->prog.funcs[0], c->features));
        *ok = true;
    }
    return SMELT_OK;
}

/* Fill batch[0..want) (fewer when the space is used up); *n gets the count.
 * Guided: a pool SEARCH_POOL_FACTOR times larger, ranked by the model. */
static smelt_status fill_batch(smelt_ctx *ctx, tune_session *s, int ti, tune_candidate *batch,
                               int want, int *n, float *predicted)
{
    task_state *t = &s->st[ti];
    bool guided = s->model && tune_model_samples(s->model) >= TUNE_MODEL_MIN_SAMPLES;
    int pool_size = guided ? want * SEARCH_POOL_FACTOR : want;
    tune_candidate *pool = smelt_calloc((size_t)pool_size + 1, sizeof *pool);
    float *score = smelt_calloc((size_t)pool_size + 1, sizeof *score);
    if (!pool || !score) {
        smelt_free(pool);
        smelt_free(score);
        return oom(ctx);
    }
    if (t->n_pop > 1) qsort(t->pop, (size_t)t->n_pop, sizeof *t->pop, cmp_measured);
    int np = 0, taken = 0;
    smelt_status st = SMELT_OK;
    if (!t->default_tried) { /* the default first: tuning never loses to it */
        bool ok;
        st = make_candidate(ctx, s, ti, batch, 0, PICK_DEFAULT, &ok);
        if (ok) predicted[taken++] = 0;
        t->default_tried = true;
    }
    for (bool ok = true; st == SMELT_OK && ok && np < pool_size;) {
        bool bred = !s->o.random_search && rng_unit(&s->rng) >= (guided ? 0.2 : SEARCH_EPSILON);
        st = make_candidate(ctx, s, ti, pool, np, bred ? PICK_BRED : PICK_RANDOM, &ok);
        if (ok) np++;
    }
    for (int i = 0; st == SMELT_OK && guided && i < np; i++)
        st = tune_model_predict(ctx, s->model, pool[i].features, 1, &score[i]);
    /* the batch: the best-predicted (guided) or the first (random), with an
     * epsilon share drawn at random from the rest */
    bool *used = smelt_calloc((size_t)np + 1, sizeof *used);
    if (!used) st = oom(ctx);
    int from_pool = 0;
    while (st == SMELT_OK && taken < want && from_pool++ < np) {
        int pick = -1;
        if (guided && rng_unit(&s->rng) >= SEARCH_EPSILON) {
            for (int i = 0; i < np; i++)
                if (!used[i] && (pick < 0 || score[i] > score[pick])) pick = i;
        } else {
            int r = rng_below(&s->rng, np - from_pool + 1);
            for (int i = 0; i < np; i++)
                if (!used[i] && r-- == 0) pick = i;
        }
        used[pick] = true;
        bool dup = false;
        for (int i = 0; i < taken; i++) dup |= strcmp(batch[i].schedule, pool[pick].schedule) == 0;
        if (dup) continue;
        predicted[taken] = score[pick];
        batch[taken++] = pool[pick];
        memset(&pool[pick], 0, sizeof pool[pick]);
    }
    for (int i = 0; i < np; i++) tune_candidate_fini(&pool[i]);
    smelt_free(used);
    smelt_free(pool);
    smelt_free(score);
    *n = taken;
    return st;
}

/* ---- recording ---- */

static smelt_status record(smelt_ctx *ctx, tune_session *s, int ti, const tune_candidate *c,
                           const tune_result *res, bool verified)
{
    const tune_task *task = &s->tasks.tasks[ti];
    tune_record r;
    memset(&r, 0, sizeof r);
    memcpy(r.task, task->key, sizeof r.task);
    r.target = s->target_key;
    r.op = (char *)task->summary;
    r.schedule = c->schedule;
    memcpy(r.knobs, c->knobs.v, sizeof r.knobs);
    r.status = res->status;
    r.ms = res->ms;
    r.spread = res->spread;
    r.flops = task->flops;
    if (res->paired) {
        r.raw_ms = res->raw_ms;
        r.rel = res->rel;
    }
    r.verified = verified;
    snprintf(r.reason, sizeof r.reason, "%s", res->reason);
    if (s->records) SMELT_TRY(tune_record_append(ctx, s->records, &r));
    return tune_db_add(ctx, &s->db, &r);
}

/* ---- progress ---- */

static void fmt_time(double sec, char *out, size_t cap)
{
    int t = sec < 0 ? 0 : (int)(sec + 0.5);
    snprintf(out, cap, "%02d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
}

static void progress(tune_session *s, int ti, bool final)
{
    if (s->o.quiet) return;
    const tune_task *task = &s->tasks.tasks[ti];
    task_state *t = &s->st[ti];
    double elapsed = now_s() - s->t0;
    int left = 0;
    for (int i = 0; i < s->tasks.n; i++)
        if (!s->st[i].done && !s->st[i].failed)
            left += s->o.trials > s->st[i].trials ? s->o.trials - s->st[i].trials : 0;
    double eta = s->total_trials > 0 ? elapsed / s->total_trials * left : 0;
    char e[16], r[16];
    fmt_time(elapsed, e, sizeof e);
    fmt_time(eta, r, sizeof r);
    double gflops = t->best_ms > 0 ? task->flops / (t->best_ms * 1e6) : 0;
    double speedup = t->best_ms > 0 && t->default_ms > 0 ? t->default_ms / t->best_ms : 0;
    bool tty = isatty(STDOUT_FILENO);
    printf("%s[task %d/%d] %-40.40s trials %3d/%d  best %7.2f GFLOP/s  %5.2fx default  %s elapsed  ETA %s%s",
           tty ? "\r" : "", ti + 1, s->tasks.n, task->summary, t->trials, s->o.trials, gflops,
           speedup, e, r, tty && !final ? "" : "\n");
    fflush(stdout);
}

/* ---- one round of one task ---- */

static smelt_status ensure_bench(smelt_ctx *ctx, tune_session *s, int ti)
{
    task_state *t = &s->st[ti];
    if (t->bench || t->failed) return SMELT_OK;
    const tune_task *task = &s->tasks.tasks[ti];
    smelt_model *m = s->models.items[task->model];
    smelt_ctx local = {.status = SMELT_OK};
    smelt_status st = tune_bench_new(&local, m->graph, task->unit, s->target, s->target_key, &t->bench);
    if (st == SMELT_ERR_NOMEM) return oom(ctx);
    if (st != SMELT_OK) {
        t->failed = t->done = true;
        if (!s->o.quiet) printf("[task %d/%d] %s: not tuned: %s\n", ti + 1, s->tasks.n, task->summary, local.message);
    }
    return SMELT_OK;
}

smelt_status tune_session_bench(smelt_ctx *ctx, tune_session *s, int i, tune_bench **out)
{
    *out = NULL;
    if (i < 0 || i >= s->tasks.n)
        return smelt_errf(ctx, SMELT_ERR_ARG, "task %d out of range (%d tasks)", i + 1, s->tasks.n);
    SMELT_TRY(ensure_bench(ctx, s, i));
    *out = s->st[i].bench;
    return SMELT_OK;
}

const char *tune_session_target_key(const tune_session *s) { return s->target_key; }

static smelt_status learn(smelt_ctx *ctx, tune_session *s, int ti, tune_candidate *batch, int n,
                          const float *predicted)
{
    if (!s->model || n == 0) return SMELT_OK;
    float *x = smelt_calloc((size_t)n * TUNE_FEATURE_COUNT + 1, sizeof *x);
    float *y = smelt_calloc((size_t)n + 1, sizeof *y), *p = smelt_calloc((size_t)n + 1, sizeof *p);
    int *g = smelt_calloc((size_t)n + 1, sizeof *g), m = 0;
    smelt_status st = x && y && g && p ? SMELT_OK : oom(ctx);
    for (int i = 0; st == SMELT_OK && i < n; i++) {
        if (!batch[i].features) continue;
        memcpy(x + (size_t)m * TUNE_FEATURE_COUNT, batch[i].features, sizeof *x * TUNE_FEATURE_COUNT);
        const tune_result *r = &batch[i].result;
        double base = s->st[ti].default_ms > 0 ? s->st[ti].default_ms : 1;
        y[m] = r->status == TUNE_OK && r->ms > 0 ? (float)(base / r->ms) : 0.0f;
        p[m] = predicted[i];
        g[m++] = ti;
    }
    bool was_trained = tune_model_samples(s->model) >= TUNE_MODEL_MIN_SAMPLES;
    if (st == SMELT_OK && was_trained && m >= 3) {
        double rho = tune_rank_correlation(p, y, m);
        s->corr_sum += rho;
        s->corr_n++;
        if (smelt_debug_level() >= 1) fprintf(stderr, "tune: model rank correlation on this batch %.2f\n", rho);
    }
    if (st == SMELT_OK && m) st = tune_model_add(ctx, s->model, x, y, g, m);
    if (st == SMELT_OK) st = tune_model_train(ctx, s->model);
    smelt_free(x);
    smelt_free(y);
    smelt_free(p);
    smelt_free(g);
    return st;
}

static smelt_status run_batch(smelt_ctx *ctx, tune_session *s, int ti)
{
    task_state *t = &s->st[ti];
    int want = s->o.batch;
    if (want > s->o.trials - t->trials) want = s->o.trials - t->trials;
    tune_candidate *batch = smelt_calloc((size_t)want + 1, sizeof *batch);
    float *predicted = smelt_calloc((size_t)want + 1, sizeof *predicted);
    tune_candidate **ptrs = smelt_calloc((size_t)want + 1, sizeof *ptrs);
    int n = 0;
    smelt_status st = batch && predicted && ptrs ? SMELT_OK : oom(ctx);
    double t0 = now_s();
    if (st == SMELT_OK) st = fill_batch(ctx, s, ti, batch, want, &n, predicted);
    for (int i = 0; i < n; i++) ptrs[i] = &batch[i];
    double t1 = now_s();
    if (st == SMELT_OK) st = s->runner.run(s->runner.user, ctx, ti, t->bench, ptrs, n, &s->o.measure);
    if (smelt_debug_level() >= 1)
        fprintf(stderr, "tune: task %d: %d candidates picked in %.2f s, built and measured in %.2f s\n",
                ti + 1, n, t1 - t0, now_s() - t1);
    for (int i = 0; st == SMELT_OK && i < n; i++) {
        st = record(ctx, s, ti, &batch[i], &batch[i].result, false);
        if (st == SMELT_OK) st = note_trial(ctx, t, &batch[i].knobs, batch[i].result.status, batch[i].result.ms);
        s->total_trials++;
    }
    if (st == SMELT_OK) st = learn(ctx, s, ti, batch, n, predicted);
    if (n == 0) t->done = true; /* the space is used up */
    for (int i = 0; batch && i < n; i++) tune_candidate_fini(&batch[i]);
    smelt_free(batch);
    smelt_free(predicted);
    smelt_free(ptrs);
    return st;
}

/* The rounds' medians; rel and raw_ms are those of the median round, so a
 * paired record keeps ms = rel x the bench's anchor. */
static void verified_result(tune_result *res, double *ms, const tune_result *round, int n)
{
    int order[VERIFY_ROUNDS], mid;
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort of the round indices by time */
        for (int j = i; j > 0 && ms[order[j]] < ms[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    mid = order[n / 2];
    double med = ms[mid];
    if (!isfinite(med)) return;
    *res = round[mid];
    res->ms = med;
    res->spread = med > 0 ? (ms[order[n - 1]] - ms[order[0]]) / med : 0;
}

/* Re-measure the winner and the default interleaved, each in fresh child
 * processes.  The default is recorded as verified; the winner only when it
 * won at least VERIFY_MIN_WINS of the rounds and its median is below the
 * default's by VERIFY_MARGIN: a search measurement can be lucky (on this
 * machine a parallel kernel runs at one speed or half of it from one
 * process to the next), and the records' best must never be slower than the
 * default. */
static smelt_status verify(smelt_ctx *ctx, tune_session *s, int ti)
{
    task_state *t = &s->st[ti];
    t->verified = true;
    if (t->failed || t->best_ms <= 0) return SMELT_OK;
    const te_graph *te = tune_bench_te(t->bench);
    sch_knobs none = {{0}};
    tune_candidate c[2];
    memset(c, 0, sizeof c);
    const sch_knobs *ks[2] = {&none, &t->best_knobs};
    int n = knobs_default(t->best_knobs.v) ? 1 : 2;
    smelt_status st = SMELT_OK;
    for (int i = 0; i < n && st == SMELT_OK; i++) {
        st = tune_candidate_init(ctx, &c[i], te, &s->target->hw, ks[i]);
        if (st == SMELT_OK && c[i].result.status == TUNE_OK) st = tune_lower_candidate(ctx, t->bench, &c[i]);
    }
    tune_candidate *ptrs[2] = {&c[0], &c[1]};
    if (st == SMELT_OK) st = tune_build_candidates(ctx, t->bench, ptrs, n, &s->o.measure);
    double ms[2][VERIFY_ROUNDS] = {{0}};
    tune_result rounds[2][VERIFY_ROUNDS];
    int wins = 0;
    for (int r = 0; st == SMELT_OK && r < VERIFY_ROUNDS; r++) {
        for (int i = 0; i < n && st == SMELT_OK; i++) {
            st = tune_measure(ctx, t->bench, &c[i], &s->o.measure);
            ms[i][r] = c[i].result.status == TUNE_OK ? c[i].result.ms : INFINITY;
            rounds[i][r] = c[i].result;
        }
        wins += n == 2 && ms[1][r] < ms[0][r];
    }
    tune_result res[2] = {c[0].result, c[1].result};
    for (int i = 0; i < n && st == SMELT_OK; i++) verified_result(&res[i], ms[i], rounds[i], VERIFY_ROUNDS);
    bool accepted = n == 2 && res[1].status == TUNE_OK && res[0].status == TUNE_OK &&
                    wins >= VERIFY_MIN_WINS && res[1].ms <= res[0].ms * VERIFY_MARGIN;
    if (st == SMELT_OK && c[0].schedule) st = record(ctx, s, ti, &c[0], &res[0], true);
    if (st == SMELT_OK && accepted) st = record(ctx, s, ti, &c[1], &res[1], true);
    if (n == 2 && !accepted && smelt_debug_level() >= 1)
        fprintf(stderr, "tune: task %d: winner not accepted (won %d of %d rounds, %.4f vs %.4f ms)\n",
                ti + 1, wins, VERIFY_ROUNDS, res[1].ms, res[0].ms);
    if (res[0].status == TUNE_OK) t->default_ms = res[0].ms;
    t->best_ms = accepted ? res[1].ms : t->default_ms;
    for (int i = 0; i < n; i++) tune_candidate_fini(&c[i]);
    return st;
}

/* ---- the task scheduler ---- */

/* Where another batch is likely to cut the most end-to-end time: weight x
 * current time x (recent relative gain per trial + an optimistic share for
 * tasks with few trials). */
static int pick_task(tune_session *s)
{
    int best = -1;
    double best_p = -1;
    for (int i = 0; i < s->tasks.n; i++) {
        task_state *t = &s->st[i];
        if (t->done || t->failed) continue;
        if (t->trials == 0) return i; /* every task gets a first batch */
        double ms = t->best_ms > 0 ? t->best_ms : 1;
        double p = s->tasks.tasks[i].weight * ms * (t->gain_rate + 1.0 / (t->trials + s->o.batch));
        if (p > best_p) {
            best_p = p;
            best = i;
        }
    }
    return best;
}

static void update_gain(tune_session *s, task_state *t, int before)
{
    if (before <= 0 || t->n_hist <= before) return;
    double old = t->history[before - 1], now = t->history[t->n_hist - 1];
    double gain = old > 0 && now > 0 ? (old - now) / old : 0;
    t->gain_rate = gain / (t->n_hist - before);
    (void)s;
}

static bool out_of_time(const tune_session *s)
{
    return s->o.minutes > 0 && now_s() - s->t0 > s->o.minutes * 60;
}

static smelt_status open_records(smelt_ctx *ctx, tune_session *s)
{
    if (!s->o.records_path) return SMELT_OK;
    SMELT_TRY(tune_db_load(ctx, s->o.records_path, s->target_key, &s->db));
    if (!s->o.quiet && s->db.n)
        printf("resuming: %d records of this target in %s\n", s->db.n, s->o.records_path);
    s->records = fopen(s->o.records_path, "a");
    if (!s->records)
        return smelt_errf(ctx, SMELT_ERR_IO, "cannot append to '%s'", s->o.records_path);
    return SMELT_OK;
}

smelt_status tune_session_measure_knobs(smelt_ctx *ctx, tune_session *s, int task,
                                       const sch_knobs *knobs, tune_result *out)
{
    memset(out, 0, sizeof *out);
    out->status = TUNE_BUILD_ERROR;
    SMELT_TRY(ensure_bench(ctx, s, task));
    task_state *t = &s->st[task];
    if (t->failed) {
        snprintf(out->reason, sizeof out->reason, "the task cannot be measured");
        return SMELT_OK;
    }
    tune_candidate c;
    SMELT_TRY(tune_candidate_init(ctx, &c, tune_bench_te(t->bench), &s->target->hw, knobs));
    /* each step only while the candidate is still valid: a refused point
     * keeps the reason of the step that refused it */
    smelt_status st = SMELT_OK;
    tune_candidate *p = &c;
    if (c.result.status == TUNE_OK) st = tune_lower_candidate(ctx, t->bench, &c);
    if (st == SMELT_OK && c.result.status == TUNE_OK)
        st = tune_build_candidates(ctx, t->bench, &p, 1, &s->o.measure);
    if (st == SMELT_OK && c.result.status == TUNE_OK) st = tune_measure(ctx, t->bench, &c, &s->o.measure);
    if (st == SMELT_OK) *out = c.result;
    tune_candidate_fini(&c);
    return st;
}

smelt_status tune_session_measure_defaults(smelt_ctx *ctx, tune_session *s)
{
    sch_knobs none = {{0}};
    for (int i = 0; i < s->tasks.n; i++) {
        tune_result r;
        SMELT_TRY(tune_session_measure_knobs(ctx, s, i, &none, &r));
        if (r.status == TUNE_OK) s->st[i].default_ms = r.ms;
    }
    return SMELT_OK;
}

static void summary(tune_session *s)
{
    if (s->o.quiet) return;
    printf("\n%-4s %-44s %6s %11s %11s %8s\n", "task", "workload", "weight", "default ms", "tuned ms",
           "speed-up");
    double log_sum = 0, w_default = 0, w_tuned = 0;
    int n = 0;
    for (int i = 0; i < s->tasks.n; i++) {
        const tune_task *task = &s->tasks.tasks[i];
        task_state *t = &s->st[i];
        if (t->failed || t->best_ms <= 0 || t->default_ms <= 0) {
            printf("%-4d %-44.44s %6d %11s %11s %8s\n", i + 1, task->summary, task->weight, "-", "-", "-");
            continue;
        }
        printf("%-4d %-44.44s %6d %11.4f %11.4f %7.2fx\n", i + 1, task->summary, task->weight,
               t->default_ms, t->best_ms, t->default_ms / t->best_ms);
        log_sum += log(t->default_ms / t->best_ms);
        w_default += task->weight * t->default_ms;
        w_tuned += task->weight * t->best_ms;
        n++;
    }
    if (n)
        printf("geometric mean speed-up %.2fx over %d tasks; weighted sum %.3f ms -> %.3f ms (%.2fx)\n",
               exp(log_sum / n), n, w_default, w_tuned, w_tuned > 0 ? w_default / w_tuned : 0);
    if (s->corr_n)
        printf("cost model: mean rank correlation %.2f over %d batches\n", s->corr_sum / s->corr_n, s->corr_n);
}

smelt_status tune_session_run(smelt_ctx *ctx, tune_session *s)
{
    SMELT_TRY(open_records(ctx, s));
    SMELT_TRY(replay_records(ctx, s));
    for (int i = 0; i < s->tasks.n; i++)
        if (s->st[i].trials >= s->o.trials && !s->st[i].verified) s->st[i].done = true;
    smelt_status st = SMELT_OK;
    for (int ti; st == SMELT_OK && !out_of_time(s) && (ti = pick_task(s)) >= 0;) {
        task_state *t = &s->st[ti];
        st = ensure_bench(ctx, s, ti);
        if (st != SMELT_OK || t->failed) continue;
        int before = t->n_hist;
        st = run_batch(ctx, s, ti);
        update_gain(s, t, before);
        if (t->trials >= s->o.trials || t->since_gain >= s->o.early_stop) t->done = true;
        if (st == SMELT_OK) progress(s, ti, t->done);
        if (st == SMELT_OK && t->done && !t->verified) st = verify(ctx, s, ti);
    }
    /* out of time: verify what was tuned so far */
    for (int i = 0; st == SMELT_OK && i < s->tasks.n; i++) {
        if (s->st[i].verified || s->st[i].failed || s->st[i].trials == 0) continue;
        st = ensure_bench(ctx, s, i);
        if (st == SMELT_OK && !s->st[i].failed) st = verify(ctx, s, i);
    }
    if (st == SMELT_OK) summary(s);
    if (st == SMELT_OK && s->o.plot_path) st = tune_plot(ctx, s, s->o.plot_path);
    return st;
}
