/* smelt tune: search schedules for a model's functions on this machine and
 * append every measurement to a records file (see src/tune/tune.h).  Under
 * `mpirun -np N` (N > 1) rank 0 searches and the other ranks measure
 * (cli/tune_mpi.c, when built with MPI). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/tune_mpi.h"
#include "tune/tune.h"

typedef struct tune_cli {
    const char *models[64];
    int n_models;
    bool list_tasks, show_space;
    /* --knobs KEY=V,...: with --list-tasks, also measure these points */
    struct tune_try {
        const char *key; /* a prefix of a task key */
        sch_knobs knobs;
    } tries[1200];
    int n_tries;
    tune_options t;
    smelt_options compile;
    cli_dims dims;
    /* loaded */
    smelt_model *loaded[64];
    tune_session *s;
    const char *failed_model; /* the one that did not load */
} tune_cli;

struct tune_mpi; /* cli/tune_mpi.h, when built with MPI */

/* KEY=V,V,... (at most SCH_KNOB_COUNT_ values, the rest 0) */
static bool parse_try(const char *v, struct tune_try *t)
{
    const char *eq = strchr(v, '=');
    memset(t, 0, sizeof *t);
    if (!eq || eq == v) return false;
    t->key = v;
    const char *p = eq + 1;
    for (int k = 0; k < SCH_KNOB_COUNT_; k++) {
        char *end;
        long n = strtol(p, &end, 10);
        if (end == p || n < 0 || n > 1000000) return false;
        t->knobs.v[k] = n;
        if (*end == '\0') return true;
        if (*end != ',') return false;
        p = end + 1;
    }
    return false;
}

static int parse(int argc, char **argv, tune_cli *c)
{
    memset(c, 0, sizeof *c);
    tune_options_init(&c->t);
    smelt_options_init(&c->compile);
    for (int i = 0; i < argc; i++) {
        const char *v;
        long n;
        double d;
        int po = cli_pass_opt(argc, argv, &i, &c->compile);
        if (po == 0) po = cli_dim_opt(argc, argv, &i, &c->dims);
        if (po > 0 && c->dims.n && c->dims.maxs[c->dims.n - 1]) {
            /* a run-time build's functions are other tasks than a specialised one's */
            fprintf(stderr, "smelt tune: --dim %s=MIN..MAX: tuning a build with run-time dims is "
                    "not supported yet; tune with --dim %s=N\n", c->dims.names[c->dims.n - 1],
                    c->dims.names[c->dims.n - 1]);
            return 2;
        }
        if (po < 0) return 2;
        if (po > 0) continue;
        if (strcmp(argv[i], "--list-tasks") == 0) c->list_tasks = true;
        else if (strcmp(argv[i], "--show-space") == 0) c->show_space = true;
        else if (strcmp(argv[i], "--random") == 0) c->t.random_search = true;
        else if (strcmp(argv[i], "--quiet") == 0) c->t.quiet = true;
        else if (cli_opt(argc, argv, &i, "-o", &v)) {
            if (!(c->t.records_path = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "--target", &v)) {
            if (!(c->t.target = c->compile.target = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "--knobs", &v)) {
            if (!v) return 2;
            if (c->n_tries == (int)SMELT_ARRAY_LEN(c->tries) || !parse_try(v, &c->tries[c->n_tries++]))
                return fprintf(stderr, "smelt tune: --knobs wants KEY=V,V,... (a task key prefix "
                               "and at most %d knob values, as --show-space orders them; at "
                               "most %d)\n", SCH_KNOB_COUNT_, (int)SMELT_ARRAY_LEN(c->tries)), 2;
        } else if (cli_opt(argc, argv, &i, "--plot", &v)) {
            if (!(c->t.plot_path = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "--trials", &v)) {
            if (!cli_int("--trials", v, 1, 1000000, &n)) return 2;
            c->t.trials = (int)n;
        } else if (cli_opt(argc, argv, &i, "--batch", &v)) {
            if (!cli_int("--batch", v, 1, 256, &n)) return 2;
            c->t.batch = (int)n;
        } else if (cli_opt(argc, argv, &i, "--early-stop", &v)) {
            if (!cli_int("--early-stop", v, 1, 1000000, &n)) return 2;
            c->t.early_stop = (int)n;
        } else if (cli_opt(argc, argv, &i, "--threads", &v)) {
            if (!cli_int("--threads", v, 1, 1024, &n)) return 2;
            c->t.measure.threads = c->compile.num_threads = (int)n;
        } else if (cli_opt(argc, argv, &i, "--jobs", &v)) {
            if (!cli_int("--jobs", v, 1, 256, &n)) return 2;
            c->t.measure.build_jobs = (int)n;
        } else if (cli_opt(argc, argv, &i, "--seed", &v)) {
            if (!cli_int("--seed", v, 0, 2147483647, &n)) return 2;
            c->t.seed = (uint64_t)n;
        } else if (cli_opt(argc, argv, &i, "--minutes", &v)) {
            if (!cli_double("--minutes", v, 0.01, 1e6, &d)) return 2;
            c->t.minutes = d;
        } else if (cli_opt(argc, argv, &i, "--min-ms", &v)) {
            if (!cli_double("--min-ms", v, 0, 1e5, &d)) return 2;
            c->t.measure.min_ms = d;
        } else if (cli_opt(argc, argv, &i, "--flush-mb", &v)) {
            if (!cli_int("--flush-mb", v, 0, 4096, &n)) return 2;
            c->t.measure.flush_mb = (int)n;
        } else if (cli_opt(argc, argv, &i, "--timeout", &v)) {
            if (!cli_double("--timeout", v, 0.1, 1e5, &d)) return 2;
            c->t.measure.timeout_s = d;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "smelt tune: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (c->n_models == (int)SMELT_ARRAY_LEN(c->models)) {
            fprintf(stderr, "smelt tune: at most %d models\n", (int)SMELT_ARRAY_LEN(c->models));
            return 2;
        } else {
            c->models[c->n_models++] = argv[i];
        }
    }
    if (c->n_models == 0) {
        fprintf(stderr, "smelt tune: no model given\n");
        return 2;
    }
    if (!c->list_tasks && !c->show_space && !c->t.records_path) {
        fprintf(stderr, "smelt tune: -o RECORDS.jsonl is required to tune\n");
        return 2;
    }
    return 0;
}

/* The --knobs points of task i, measured: one row each under the task's. */
static smelt_status list_tries(smelt_ctx *ctx, tune_cli *c, int i)
{
    const tune_task *t = tune_session_task(c->s, i);
    double base = tune_session_default_ms(c->s, i);
    for (int k = 0; k < c->n_tries; k++) {
        const struct tune_try *tr = &c->tries[k];
        if (strncmp(t->key, tr->key, (size_t)(strchr(tr->key, '=') - tr->key)) != 0) continue;
        tune_result r;
        smelt_ctx local = {.status = SMELT_OK}; /* a point the rule refuses is not fatal */
        if (tune_session_measure_knobs(&local, c->s, i, &tr->knobs, &r) != SMELT_OK) {
            if (local.status == SMELT_ERR_NOMEM) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
            r.status = TUNE_BUILD_ERROR;
        }
        if (r.status != TUNE_OK) {
            printf("       knobs %-31s invalid: %s\n", strchr(tr->key, '=') + 1,
                   r.reason[0] ? r.reason : local.message);
            continue;
        }
        double ms = r.ms;
        double speedup = ms > 0 ? base / ms : 0.0;
        printf("       knobs %-31s %11.4f %9.2f  %.2fx default%s\n", strchr(tr->key, '=') + 1, ms,
               ms > 0 ? t->flops / (ms * 1e6) : 0.0, speedup, r.paired ? " (paired)" : "");
    }
    return SMELT_OK;
}

static smelt_status list_tasks(smelt_ctx *ctx, tune_cli *c)
{
    printf("%-4s %-8s %6s %12s %11s %9s  %s\n", "task", "key", "weight", "MFLOP", "default ms",
           "GFLOP/s", "workload");
    for (int i = 0; i < tune_session_num_tasks(c->s); i++) {
        const tune_task *t = tune_session_task(c->s, i);
        double ms = tune_session_default_ms(c->s, i);
        printf("%-4d %.8s %6d %12.3f %11.4f %9.2f  %s\n", i + 1, t->key, t->weight, t->flops / 1e6,
               ms, ms > 0 ? t->flops / (ms * 1e6) : 0.0, t->summary);
        SMELT_TRY(list_tries(ctx, c, i));
    }
    return SMELT_OK;
}

static void show_space(const tune_session *s)
{
    for (int i = 0; i < tune_session_num_tasks(s); i++) {
        const tune_task *t = tune_session_task(s, i);
        printf("task %d %.8s (weight %d): %s\n  rule %s, %lld candidates\n", i + 1, t->key,
               t->weight, t->summary, t->space.rule, (long long)t->space_size);
        for (int k = 0; k < SCH_KNOB_COUNT_; k++) {
            if (!t->space.n_values[k]) continue;
            printf("    %-9s", sch_knob_name((sch_knob)k));
            for (int v = 0; v < t->space.n_values[k]; v++)
                printf(" %lld", (long long)t->space.values[k][v]);
            printf("\n");
        }
    }
}

/* The models into a new session, their tasks extracted. */
static smelt_status load_session(smelt_ctx *ctx, tune_cli *c)
{
    SMELT_TRY(tune_session_new(ctx, &c->t, &c->s));
    for (int i = 0; i < c->n_models; i++) {
        if (!(c->loaded[i] = smelt_model_load(ctx, c->models[i]))) {
            c->failed_model = c->models[i];
            return smelt_ctx_status(ctx);
        }
        for (int k = 0; k < c->dims.n; k++) /* a dim a model lacks is no error: several models */
            if (smelt_graph_has_dim(c->loaded[i]->graph, c->dims.names[k]))
                SMELT_TRY(smelt_model_set_dim(ctx, c->loaded[i], c->dims.names[k], c->dims.values[k]));
        c->loaded[i]->options = c->compile;
        SMELT_TRY(tune_session_add_model(ctx, c->s, c->loaded[i], c->models[i]));
    }
    return SMELT_OK;
}

static void close_session(tune_cli *c)
{
    tune_session_free(c->s);
    c->s = NULL;
    for (int i = 0; i < c->n_models; i++) smelt_model_free(c->loaded[i]);
}

/* A plain run, or rank 0 of a distributed one (mpi not NULL). */
static int tune_main(tune_cli *c, smelt_ctx *ctx, struct tune_mpi *mpi)
{
#ifdef SMELT_HAVE_MPI
    if (mpi) c->t.runner = tune_mpi_runner(mpi);
#endif
    if (load_session(ctx, c) != SMELT_OK)
        return c->failed_model ? cli_fail_load(ctx, c->failed_model) : cli_fail(ctx);
#ifdef SMELT_HAVE_MPI
    if (mpi && tune_mpi_connect(ctx, mpi, c->s) != SMELT_OK) return cli_fail(ctx);
#endif
    tune_session *s = c->s;
    if (c->show_space) show_space(s);
    if (c->list_tasks) {
        if (tune_session_measure_defaults(ctx, s) != SMELT_OK) return cli_fail(ctx);
        if (list_tasks(ctx, c) != SMELT_OK) return cli_fail(ctx);
    }
    if (c->list_tasks || c->show_space) return 0;
    if (!c->t.quiet)
        printf("tuning %d tasks of %d model%s, %d trials each, into %s\n", tune_session_num_tasks(s),
               c->n_models, c->n_models > 1 ? "s" : "", c->t.trials, c->t.records_path);
    int rc = tune_session_run(ctx, s) != SMELT_OK ? cli_fail(ctx) : 0;
#ifdef SMELT_HAVE_MPI
    if (mpi) tune_mpi_report(mpi);
#endif
    return rc;
}

static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    return v && *v && !*end && n >= 0 && n < (1 << 24) ? (int)n : fallback;
}

#ifdef SMELT_HAVE_MPI
/* A worker rank's set-up: the same models as rank 0's. */
static smelt_status worker_setup(void *user, smelt_ctx *ctx, tune_session **s)
{
    tune_cli *c = user;
    smelt_status st = load_session(ctx, c);
    *s = c->s;
    if (st != SMELT_OK && c->failed_model) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", smelt_ctx_message(ctx));
        smelt_ctx_clear(ctx);
        smelt_errf(ctx, st, "cannot load %s: %s", c->failed_model, msg);
    }
    return st;
}
#endif

/* Started by mpirun with more than one rank. */
static int tune_distributed(tune_cli *c, smelt_ctx *ctx, int ranks)
{
#ifdef SMELT_HAVE_MPI
    (void)ranks;
    tune_mpi *m = NULL;
    int rc;
    if (tune_mpi_init(ctx, &m) != SMELT_OK) {
        rc = cli_fail(ctx);
    } else if (tune_mpi_rank(m) == 0) {
        rc = tune_main(c, ctx, m);
    } else {
        c->t.quiet = true;
        c->t.random_search = true; /* a worker searches nothing: no cost model */
        rc = tune_mpi_worker(m, worker_setup, c, &c->t.measure, &c->s);
    }
    tune_mpi_finish(m);
    return rc;
#else
    (void)ctx;
    /* refuse: N independent runs would all append to one records file */
    fprintf(stderr, "smelt tune: started by mpirun with %d ranks, but this smelt was built without MPI "
                    "(install libopenmpi-dev and rebuild)\n", ranks);
    return 2;
#endif
}

int cli_tune(int argc, char **argv)
{
    tune_cli c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    /* Open MPI's environment says whether mpirun started us; a plain run never
     * initialises MPI */
    int ranks = env_int("OMPI_COMM_WORLD_SIZE", 1);
    bool tuning = !c.list_tasks && !c.show_space;
    if (ranks > 1 && !tuning && env_int("OMPI_COMM_WORLD_RANK", 0) > 0) return 0; /* rank 0 lists */
    smelt_ctx *ctx = smelt_ctx_new();
    rc = ranks > 1 && tuning ? tune_distributed(&c, ctx, ranks) : tune_main(&c, ctx, NULL);
    close_session(&c);
    smelt_ctx_free(ctx);
    return rc;
}
