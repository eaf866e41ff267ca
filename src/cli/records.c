/* smelt records: keep tuning records manageable.
 *   show FILE...          per task and target: records, valid ones, best time
 *   best FILE... -o OUT   only the record tune_db_best would apply, per task
 *                         and target (all targets kept)
 *   merge FILE... -o OUT  every readable record of every file, in order */
#include <stdint.h>
#include <string.h>

#include "cli/cli.h"
#include "tune/tune.h"

static int load_all(smelt_ctx *ctx, char **files, int n, tune_db *db)
{
    memset(db, 0, sizeof *db);
    for (int i = 0; i < n; i++) {
        tune_db one;
        if (tune_db_load(ctx, files[i], NULL, &one) != SMELT_OK) return cli_fail(ctx);
        if (one.malformed || one.bad_schema)
            fprintf(stderr, "smelt records: %s: skipped %d unreadable lines and %d of an unknown schema\n",
                    files[i], one.malformed, one.bad_schema);
        for (int r = 0; r < one.n; r++)
            if (tune_db_add(ctx, db, &one.recs[r]) != SMELT_OK) {
                tune_db_fini(&one);
                return cli_fail(ctx);
            }
        tune_db_fini(&one);
    }
    return 0;
}

/* Visit the first record of each (task, target), in file order. */
typedef void (*task_fn)(const tune_db *db, int first, void *user);

static bool each_task(const tune_db *db, task_fn fn, void *user)
{
    smelt_strmap seen;
    smelt_arena keys;
    smelt_strmap_init(&seen);
    smelt_arena_init(&keys);
    bool ok = true;
    for (int i = 0; ok && i < db->n; i++) {
        char *k = smelt_arena_printf(&keys, "%s|%s", db->recs[i].task, db->recs[i].target);
        ok = k != NULL;
        if (!ok || smelt_strmap_get(&seen, k)) continue;
        ok = smelt_strmap_put(&seen, k, (void *)1);
        if (ok) fn(db, i, user);
    }
    smelt_strmap_fini(&seen);
    smelt_arena_fini(&keys);
    return ok;
}

typedef struct task_count {
    int total, valid;
} task_count;

static void show_task(const tune_db *db, int i, void *user)
{
    const task_count *counts = user;
    const tune_record *r = &db->recs[i], *b = tune_db_best_for(db, r->task, r->target);
    double ms = b ? b->ms : 0;
    printf("%.8s %7d %6d %11.4f %9.2f  %s\n%36s%s\n", r->task, counts[i].total, counts[i].valid, ms,
           ms > 0 ? r->flops / (ms * 1e6) : 0.0, r->op, "", r->target);
}

/* Per first record of a task: how many records the task has, and valid ones. */
static task_count *count_tasks(const tune_db *db)
{
    task_count *c = smelt_calloc((size_t)db->n + 1, sizeof *c);
    smelt_strmap first;
    smelt_arena keys;
    smelt_strmap_init(&first);
    smelt_arena_init(&keys);
    for (int i = 0; c && i < db->n; i++) {
        char *k = smelt_arena_printf(&keys, "%s|%s", db->recs[i].task, db->recs[i].target);
        void *v = k ? smelt_strmap_get(&first, k) : NULL;
        int f = v ? (int)(intptr_t)v - 1 : i;
        if (!k || (!v && !smelt_strmap_put(&first, k, (void *)(intptr_t)(i + 1)))) {
            smelt_free(c);
            c = NULL;
            break;
        }
        c[f].total++;
        c[f].valid += db->recs[i].status == TUNE_OK;
    }
    smelt_strmap_fini(&first);
    smelt_arena_fini(&keys);
    return c;
}

static int show(smelt_ctx *ctx, const tune_db *db)
{
    task_count *counts = count_tasks(db);
    printf("%-8s %7s %6s %11s %9s  %s\n", "task", "records", "valid", "best ms", "GFLOP/s",
           "workload / target");
    bool ok = counts && each_task(db, show_task, counts);
    smelt_free(counts);
    if (ok) return 0;
    smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    return cli_fail(ctx);
}

typedef struct best_writer {
    smelt_ctx *ctx;
    FILE *f;
    int written;
    bool failed;
} best_writer;

static void write_best(const tune_db *db, int i, void *user)
{
    best_writer *w = user;
    const tune_record *b = tune_db_best_for(db, db->recs[i].task, db->recs[i].target);
    if (!b || w->failed) return;
    w->failed = tune_record_append(w->ctx, w->f, b) != SMELT_OK;
    w->written++;
}

static int write_records(smelt_ctx *ctx, const tune_db *db, const char *out, bool best_only)
{
    FILE *f = fopen(out, "w");
    if (!f) {
        smelt_errf(ctx, SMELT_ERR_IO, "cannot write '%s'", out);
        return cli_fail(ctx);
    }
    int rc = 0, written = 0;
    if (best_only) {
        best_writer w = {ctx, f, 0, false};
        if (!each_task(db, write_best, &w) && !w.failed) smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        if (smelt_ctx_status(ctx)) rc = cli_fail(ctx);
        written = w.written;
    }
    for (int i = 0; !best_only && rc == 0 && i < db->n; i++) {
        if (tune_record_append(ctx, f, &db->recs[i]) != SMELT_OK) rc = cli_fail(ctx);
        written++;
    }
    if (fclose(f) != 0 && rc == 0) {
        smelt_errf(ctx, SMELT_ERR_IO, "writing '%s' failed", out);
        rc = cli_fail(ctx);
    }
    if (rc == 0) printf("wrote %d records to %s\n", written, out);
    return rc;
}

int cli_records(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "smelt records: usage: records show FILE... | best FILE... -o OUT | merge FILE... -o OUT\n");
        return 2;
    }
    const char *cmd = argv[0], *out = NULL;
    char *files[64];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (cli_opt(argc, argv, &i, "-o", &v)) {
            if (!(out = v)) return 2;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "smelt records: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (n == (int)SMELT_ARRAY_LEN(files)) {
            fprintf(stderr, "smelt records: at most %d files\n", (int)SMELT_ARRAY_LEN(files));
            return 2;
        } else {
            files[n++] = argv[i];
        }
    }
    bool is_show = !strcmp(cmd, "show"), is_best = !strcmp(cmd, "best"), is_merge = !strcmp(cmd, "merge");
    if (!is_show && !is_best && !is_merge) {
        fprintf(stderr, "smelt records: unknown subcommand '%s' (show, best, merge)\n", cmd);
        return 2;
    }
    if (!is_show && !out) {
        fprintf(stderr, "smelt records %s: -o OUT is required\n", cmd);
        return 2;
    }
    if (n == 0) {
        fprintf(stderr, "smelt records %s: no records file given\n", cmd);
        return 2;
    }
    smelt_ctx *ctx = smelt_ctx_new();
    tune_db db;
    int rc = load_all(ctx, files, n, &db);
    if (rc == 0 && is_show) rc = show(ctx, &db);
    else if (rc == 0) rc = write_records(ctx, &db, out, is_best);
    tune_db_fini(&db);
    smelt_ctx_free(ctx);
    return rc;
}
