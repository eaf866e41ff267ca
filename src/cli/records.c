/* smelt records: keep tuning records manageable.
 *   show FILE...          per task and target: records, valid ones, best time
 *   best FILE... -o OUT   only the record tune_db_best would apply, per task
 *                         and target (all targets kept)
 *   merge FILE... -o OUT  every readable record of every file, in order */
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

/* Is record i the first of its (task, target) in db? */
static bool first_of_task(const tune_db *db, int i)
{
    for (int k = 0; k < i; k++)
        if (!strcmp(db->recs[k].task, db->recs[i].task) && !strcmp(db->recs[k].target, db->recs[i].target))
            return false;
    return true;
}

/* The best record of recs[i]'s task on its target (tune_db_best's rule). */
static const tune_record *best_of(const tune_db *db, int i)
{
    const tune_record *best = NULL;
    for (int k = 0; k < db->n; k++) {
        const tune_record *r = &db->recs[k];
        if (strcmp(r->task, db->recs[i].task) || strcmp(r->target, db->recs[i].target)) continue;
        if (r->status != TUNE_OK || r->ms <= 0) continue;
        if (!best || (r->verified && !best->verified) || (r->verified == best->verified && r->ms < best->ms))
            best = r;
    }
    return best;
}

static void show(const tune_db *db)
{
    printf("%-8s %7s %6s %11s %9s  %s\n", "task", "records", "valid", "best ms", "GFLOP/s", "workload / target");
    for (int i = 0; i < db->n; i++) {
        if (!first_of_task(db, i)) continue;
        int total = 0, valid = 0;
        for (int k = i; k < db->n; k++)
            if (!strcmp(db->recs[k].task, db->recs[i].task) && !strcmp(db->recs[k].target, db->recs[i].target)) {
                total++;
                valid += db->recs[k].status == TUNE_OK;
            }
        const tune_record *b = best_of(db, i);
        double ms = b ? b->ms : 0;
        printf("%.8s %7d %6d %11.4f %9.2f  %s\n%36s%s\n", db->recs[i].task, total, valid, ms,
               ms > 0 ? db->recs[i].flops / (ms * 1e6) : 0.0, db->recs[i].op, "", db->recs[i].target);
    }
}

static int write_records(smelt_ctx *ctx, const tune_db *db, const char *out, bool best_only)
{
    FILE *f = fopen(out, "w");
    if (!f) {
        smelt_errf(ctx, SMELT_ERR_IO, "cannot write '%s'", out);
        return cli_fail(ctx);
    }
    int rc = 0, written = 0;
    for (int i = 0; rc == 0 && i < db->n; i++) {
        const tune_record *r = &db->recs[i];
        if (best_only) {
            if (!first_of_task(db, i) || !(r = best_of(db, i))) continue;
        }
        if (tune_record_append(ctx, f, r) != SMELT_OK) rc = cli_fail(ctx);
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
    if (rc == 0 && is_show) show(&db);
    else if (rc == 0) rc = write_records(ctx, &db, out, is_best);
    tune_db_fini(&db);
    smelt_ctx_free(ctx);
    return rc;
}
