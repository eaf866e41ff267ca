/* smelt tune: search schedules for a model's functions on this machine and
 * append every measurement to a records file (see src/tune/tune.h). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tune/tune.h"

typedef struct tune_cli {
    const char *models[64];
    int n_models;
    bool list_tasks, show_space;
    tune_options t;
    smelt_options compile;
} tune_cli;

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

static void list_tasks(const tune_session *s)
{
    printf("%-4s %-8s %6s %12s %11s %9s  %s\n", "task", "key", "weight", "MFLOP", "default ms",
           "GFLOP/s", "workload");
    for (int i = 0; i < tune_session_num_tasks(s); i++) {
        const tune_task *t = tune_session_task(s, i);
        double ms = tune_session_default_ms(s, i);
        printf("%-4d %.8s %6d %12.3f %11.4f %9.2f  %s\n", i + 1, t->key, t->weight, t->flops / 1e6,
               ms, ms > 0 ? t->flops / (ms * 1e6) : 0.0, t->summary);
    }
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

int cli_tune(int argc, char **argv)
{
    tune_cli c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *models[64] = {0};
    tune_session *s = NULL;
    if (tune_session_new(ctx, &c.t, &s) != SMELT_OK) rc = cli_fail(ctx);
    for (int i = 0; rc == 0 && i < c.n_models; i++) {
        if (!(models[i] = smelt_model_load(ctx, c.models[i]))) {
            rc = cli_fail_load(ctx, c.models[i]);
            break;
        }
        models[i]->options = c.compile;
        if (tune_session_add_model(ctx, s, models[i], c.models[i]) != SMELT_OK) rc = cli_fail(ctx);
    }
    if (rc == 0 && c.show_space) show_space(s);
    if (rc == 0 && c.list_tasks) {
        if (tune_session_measure_defaults(ctx, s) != SMELT_OK) rc = cli_fail(ctx);
        else list_tasks(s);
    }
    if (rc == 0 && !c.list_tasks && !c.show_space) {
        if (!c.t.quiet)
            printf("tuning %d tasks of %d model%s, %d trials each, into %s\n",
                   tune_session_num_tasks(s), c.n_models, c.n_models > 1 ? "s" : "", c.t.trials,
                   c.t.records_path);
        if (tune_session_run(ctx, s) != SMELT_OK) rc = cli_fail(ctx);
    }
    tune_session_free(s);
    for (int i = 0; i < c.n_models; i++) smelt_model_free(models[i]);
    smelt_ctx_free(ctx);
    return rc;
}
