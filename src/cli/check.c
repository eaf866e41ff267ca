/* smelt check: run ONNX backend-style test folders and compare outputs. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/smelt_internal.h"
#include "cli/cli.h"


typedef struct xfail_entry {
    char *name;
    bool seen;
} xfail_entry;

typedef struct check_totals {
    int passed, failed, skipped;
    int folded; /* compiled passes that ran no generated code */
    xfail_entry *xfail;
    int n_xfail;
    bool strict; /* an expected-failures list was given */
} check_totals;

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- expected failures ---- */

static int load_xfail(const char *path, check_totals *t)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "smelt check: cannot open '%s'\n", path);
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || !*p) continue;
        size_t n = strcspn(p, " \t\n");
        xfail_entry *grown = realloc(t->xfail, sizeof *t->xfail * (size_t)(t->n_xfail + 1));
        if (!grown) break;
        t->xfail = grown;
        t->xfail[t->n_xfail].name = strndup(p, n);
        t->xfail[t->n_xfail++].seen = false;
    }
    fclose(f);
    t->strict = true;
    return 0;
}

static xfail_entry *find_xfail(check_totals *t, const char *name)
{
    for (int i = 0; i < t->n_xfail; i++)
        if (strcmp(t->xfail[i].name, name) == 0) return &t->xfail[i];
    return NULL;
}

static void record(check_totals *t, const char *dir, smelt_check_result r, const char *why)
{
    const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    xfail_entry *x = find_xfail(t, name);
    if (x) x->seen = true;
    if (r == SMELT_CHECK_PASS && x) {
        printf("XPASS %s (listed as an expected failure: remove it from the list)\n", name);
        t->failed++;
    } else if (r == SMELT_CHECK_PASS) {
        printf("PASS %s%s%s%s\n", name, *why ? " (" : "", why, *why ? ")" : "");
        t->passed++;
        t->folded += strcmp(why, SMELT_CHECK_FOLDED_NOTE) == 0;
    } else if (x) {
        printf("XFAIL %s: %s\n", name, why);
        t->skipped++;
    } else if (r == SMELT_CHECK_UNSUPPORTED && !t->strict) {
        printf("UNSUPPORTED %s: %s\n", name, why);
        t->skipped++;
    } else {
        printf("%s %s: %s\n", r == SMELT_CHECK_UNSUPPORTED ? "UNSUPPORTED" : "FAIL", name, why);
        t->failed++;
    }
    fflush(stdout);
}

/* A test folder holds model.onnx; otherwise recurse into subfolders. */
static void check_tree(const char *dir, const smelt_check_options *o, check_totals *t, int depth)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if (is_file(path)) {
        char why[2048] = "";
        smelt_check_result r = smelt_check_test_noting(dir, o, cli_records_note, why, sizeof why);
        record(t, dir, r, why);
        return;
    }
    if (depth > 8) return;
    smelt_ptrvec subs = {0};
    smelt_list_dir(dir, NULL, &subs);
    for (int i = 0; i < subs.len; i++)
        if (is_dir(subs.items[i])) check_tree(subs.items[i], o, t, depth + 1);
    smelt_list_free(&subs);
}

int cli_check(int argc, char **argv)
{
    smelt_check_options o;
    smelt_check_options_init(&o);
    check_totals t;
    memset(&t, 0, sizeof t);
    const char *dirs[256];
    int nd = 0;
    cli_dims dims = {0};
    int64_t dmin[CLI_MAX_DIMS], dmax[CLI_MAX_DIMS];
    for (int i = 0; i < argc; i++) {
        const char *v;
        int po = cli_pass_opt(argc, argv, &i, &o.compile);
        if (po == 0) po = cli_dim_opt(argc, argv, &i, &dims);
        if (po < 0) return 2;
        if (po > 0) continue;
        if (strcmp(argv[i], "--reference") == 0) {
            o.mode = SMELT_CHECK_REFERENCE;
        } else if (strcmp(argv[i], "--compiled") == 0) {
            o.mode = SMELT_CHECK_COMPILED;
        } else if (strcmp(argv[i], "--te") == 0) {
            o.mode = SMELT_CHECK_TE;
        } else if (cli_opt(argc, argv, &i, "--rtol", &v)) {
            if (!cli_double("--rtol", v, 0, 1e30, &o.rtol)) return 2;
        } else if (cli_opt(argc, argv, &i, "--atol", &v)) {
            if (!cli_double("--atol", v, 0, 1e30, &o.atol)) return 2;
        } else if (cli_opt(argc, argv, &i, "--target", &v)) {
            if (!(o.compile.target = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "--expected-failures", &v)) {
            if (!v || load_xfail(v, &t) != 0) return 2;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "smelt check: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (nd < 256) {
            dirs[nd++] = argv[i];
        } else {
            fprintf(stderr, "smelt check: more than 256 folders\n");
            return 2;
        }
    }
    if (nd == 0) {
        fprintf(stderr, "usage: smelt check [--reference] [--target T] [--rtol R] [--atol A] "
                        "[--dim NAME=VALUE|MIN..MAX] [--expected-failures FILE] DIR...\n");
        return 2;
    }
    for (int k = 0; k < dims.n; k++) { /* a run-time dim for one compile, or one value */
        dmin[k] = dims.maxs[k] ? dims.mins[k] : dims.values[k];
        dmax[k] = dims.maxs[k] ? dims.maxs[k] : dims.values[k];
    }
    o.num_dims = dims.n;
    o.dim_names = dims.names;
    o.dim_min = dmin;
    o.dim_max = dmax;
    for (int i = 0; i < nd; i++) {
        if (!is_dir(dirs[i])) {
            fprintf(stderr, "smelt check: '%s' is not a folder\n", dirs[i]);
            t.failed++;
            continue;
        }
        int before = t.passed + t.failed + t.skipped;
        check_tree(dirs[i], &o, &t, 0);
        if (t.passed + t.failed + t.skipped == before) {
            fprintf(stderr, "smelt check: no tests found under '%s' (a test is a folder holding "
                            "model.onnx and test_data_set_*/)\n", dirs[i]);
            t.failed++;
        }
    }
    for (int i = 0; i < t.n_xfail; i++) free(t.xfail[i].name);
    free(t.xfail);
    if (t.folded)
        printf("%d of the passes ran no node in generated code (every output folded to a "
               "constant: the reference kernels computed them)\n", t.folded);
    printf("%d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped);
    return t.failed ? 1 : 0;
}
