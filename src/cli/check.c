/* smelt check: run ONNX backend-style test folders and compare outputs. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/smelt_internal.h"
#include "cli/cli.h"
#include "frontend/onnx.h"
#include "ops/op.h"

typedef enum check_mode { MODE_REFERENCE, MODE_TE, MODE_COMPILED } check_mode;

typedef struct check_opts {
    double rtol, atol;
    check_mode mode;
    const char *xfail_file;
    bool verbose;
    smelt_options compile;
} check_opts;

typedef struct xfail_entry {
    char *name;
    bool seen;
} xfail_entry;

typedef struct check_totals {
    int passed, failed, skipped;
    xfail_entry *xfail;
    int n_xfail;
    bool strict; /* an expected-failures list was given */
} check_totals;

typedef enum { CHECK_PASS, CHECK_FAIL, CHECK_UNSUPPORTED } check_result;

/* ---- finding tests ---- */

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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entries of dir whose names start with prefix (NULL: all but dot-files). */
static int list_dir(const char *dir, const char *prefix, smelt_ptrvec *out)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (prefix && strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        char *p = smelt_alloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!p) break;
        sprintf(p, "%s/%s", dir, e->d_name);
        if (!smelt_ptrvec_push(out, p)) {
            smelt_free(p);
            break;
        }
    }
    closedir(d);
    if (out->len) qsort(out->items, (size_t)out->len, sizeof(void *), cmp_str); /* items NULL if empty */
    return 0;
}

static void free_list(smelt_ptrvec *v)
{
    for (int i = 0; i < v->len; i++) smelt_free(v->items[i]);
    smelt_ptrvec_fini(v);
}

/* ---- comparing ---- */

static bool values_close(double got, double want, const check_opts *o)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= o->atol + o->rtol * fabs(want);
}

static check_result compare_output(const smelt_tensor *got, const smelt_tensor *want,
                                   const check_opts *o, char *why, size_t cap)
{
    if (got->dtype != want->dtype) {
        snprintf(why, cap, "output '%s': dtype %s, expected %s", want->name ? want->name : "",
                 smelt_dtype_name(got->dtype), smelt_dtype_name(want->dtype));
        return CHECK_FAIL;
    }
    bool same_shape = got->rank == want->rank;
    for (int i = 0; same_shape && i < got->rank; i++) same_shape = got->dims[i] == want->dims[i];
    if (!same_shape) {
        snprintf(why, cap, "output '%s': shape differs (rank %d vs %d)",
                 want->name ? want->name : "", got->rank, want->rank);
        return CHECK_FAIL;
    }
    int64_t n = smelt_tensor_numel(want), worst = -1, bad = 0;
    double worst_err = -1;
    bool exact = !op_dtype_is_float(want->dtype);
    for (int64_t i = 0; i < n; i++) {
        double g = op_get_f64(got, i), w = op_get_f64(want, i);
        bool ok = exact ? op_get_i64(got, i) == op_get_i64(want, i) : values_close(g, w, o);
        if (ok) continue;
        bad++;
        double err = isnan(g) || isnan(w) ? INFINITY : fabs(g - w);
        if (err > worst_err) {
            worst_err = err;
            worst = i;
        }
    }
    if (!bad) return CHECK_PASS;
    snprintf(why, cap, "output '%s': %lld of %lld elements differ; worst at flat index %lld: "
             "got %.9g, expected %.9g (rtol %g, atol %g)",
             want->name ? want->name : "", (long long)bad, (long long)n, (long long)worst,
             op_get_f64(got, worst), op_get_f64(want, worst), o->rtol, o->atol);
    return CHECK_FAIL;
}

/* ---- running one data set ---- */

static smelt_status run_model(smelt_ctx *ctx, smelt_model *m, check_mode mode,
                              const smelt_tensor *in, int ni, smelt_tensor *out, int no)
{
    switch (mode) {
    case MODE_TE: return smelt_model_run_te(ctx, m, in, ni, out, no);
    case MODE_COMPILED: return smelt_model_run(ctx, m, in, ni, out, no);
    default: return smelt_model_run_reference(ctx, m, in, ni, out, no);
    }
}

static smelt_status load_numbered(smelt_ctx *ctx, const char *dir, const char *prefix,
                                  smelt_tensor **out, int max, int *count)
{
    *count = 0;
    for (int i = 0; i < max; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, i);
        if (!is_file(path)) break;
        SMELT_TRY(onnx_tensor_load_pb(ctx, path, &out[i]));
        (*count)++;
    }
    return SMELT_OK;
}

/* ONNX's backend tests store bfloat16 data as uint16 tensors (numpy has no
 * bfloat16): read them as the bfloat16 the model declares. */
static void fix_bfloat16_test_data(const smelt_model *m, smelt_tensor *in, int ni,
                                   smelt_tensor **want, int nw)
{
    for (int i = 0; i < ni && i < smelt_model_num_inputs(m); i++) {
        smelt_dtype dt;
        smelt_model_input_info(m, i, NULL, &dt, NULL, NULL);
        if (dt == SMELT_DT_BFLOAT16 && in[i].dtype == SMELT_DT_UINT16) in[i].dtype = dt;
    }
    for (int i = 0; i < nw && i < smelt_model_num_outputs(m); i++) {
        smelt_dtype dt;
        smelt_model_output_info(m, i, NULL, &dt, NULL, NULL);
        if (dt == SMELT_DT_BFLOAT16 && want[i]->dtype == SMELT_DT_UINT16) want[i]->dtype = dt;
    }
}

static check_result run_data_set(smelt_ctx *ctx, smelt_model *m, const char *set_dir,
                                 const check_opts *o, char *why, size_t cap)
{
    enum { MAX_IO = 64 };
    smelt_tensor *ins[MAX_IO] = {0}, *wants[MAX_IO] = {0}, gots[MAX_IO];
    smelt_tensor in_vals[MAX_IO];
    int ni = 0, nw = 0, no = smelt_model_num_outputs(m);
    check_result r = CHECK_PASS;
    memset(gots, 0, sizeof gots);
    if (load_numbered(ctx, set_dir, "input", ins, MAX_IO, &ni) != SMELT_OK ||
        load_numbered(ctx, set_dir, "output", wants, MAX_IO, &nw) != SMELT_OK) {
        snprintf(why, cap, "%s", smelt_ctx_message(ctx));
        r = CHECK_FAIL;
    } else if (nw != no || no > MAX_IO) {
        snprintf(why, cap, "model has %d outputs, test data has %d", no, nw);
        r = CHECK_FAIL;
    }
    for (int i = 0; i < ni; i++) in_vals[i] = *ins[i];
    fix_bfloat16_test_data(m, in_vals, ni, wants, nw);
    if (r == CHECK_PASS && run_model(ctx, m, o->mode, in_vals, ni, gots, no) != SMELT_OK) {
        snprintf(why, cap, "%s", smelt_ctx_message(ctx));
        r = smelt_ctx_status(ctx) == SMELT_ERR_UNSUPPORTED ? CHECK_UNSUPPORTED : CHECK_FAIL;
    }
    for (int i = 0; r == CHECK_PASS && i < no; i++) r = compare_output(&gots[i], wants[i], o, why, cap);
    for (int i = 0; i < MAX_IO; i++) {
        smelt_tensor_free(ins[i]);
        smelt_tensor_free(wants[i]);
        smelt_tensor_release(&gots[i]);
    }
    return r;
}

static check_result run_test(const char *dir, const check_opts *o, char *why, size_t cap)
{
    smelt_ctx *ctx = smelt_ctx_new();
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    smelt_model *m = smelt_model_load(ctx, path);
    if (m) m->options = o->compile;
    check_result r = CHECK_PASS;
    if (!m) {
        snprintf(why, cap, "%s", smelt_ctx_message(ctx));
        r = smelt_ctx_status(ctx) == SMELT_ERR_UNSUPPORTED ? CHECK_UNSUPPORTED : CHECK_FAIL;
    }
    smelt_ptrvec sets = {0};
    if (m) list_dir(dir, "test_data_set_", &sets);
    if (m && sets.len == 0) {
        snprintf(why, cap, "no test_data_set_* folder");
        r = CHECK_FAIL;
    }
    for (int i = 0; r == CHECK_PASS && i < sets.len; i++) {
        smelt_ctx_clear(ctx);
        r = run_data_set(ctx, m, sets.items[i], o, why, cap);
    }
    if (m && o->mode == MODE_COMPILED) cli_records_note(m);
    free_list(&sets);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return r;
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

static void record(check_totals *t, const char *dir, check_result r, const char *why)
{
    const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    xfail_entry *x = find_xfail(t, name);
    if (x) x->seen = true;
    if (r == CHECK_PASS && x) {
        printf("XPASS %s (listed as an expected failure: remove it from the list)\n", name);
        t->failed++;
    } else if (r == CHECK_PASS) {
        printf("PASS %s\n", name);
        t->passed++;
    } else if (x) {
        printf("XFAIL %s: %s\n", name, why);
        t->skipped++;
    } else if (r == CHECK_UNSUPPORTED && !t->strict) {
        printf("UNSUPPORTED %s: %s\n", name, why);
        t->skipped++;
    } else {
        printf("%s %s: %s\n", r == CHECK_UNSUPPORTED ? "UNSUPPORTED" : "FAIL", name, why);
        t->failed++;
    }
    fflush(stdout);
}

/* A test folder holds model.onnx; otherwise recurse into subfolders. */
static void check_tree(const char *dir, const check_opts *o, check_totals *t, int depth)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if (is_file(path)) {
        char why[2048] = "";
        check_result r = run_test(dir, o, why, sizeof why);
        record(t, dir, r, why);
        return;
    }
    if (depth > 8) return;
    smelt_ptrvec subs = {0};
    list_dir(dir, NULL, &subs);
    for (int i = 0; i < subs.len; i++)
        if (is_dir(subs.items[i])) check_tree(subs.items[i], o, t, depth + 1);
    free_list(&subs);
}

int cli_check(int argc, char **argv)
{
    check_opts o = {1e-3, 1e-7, MODE_COMPILED, NULL, false, {0}};
    smelt_options_init(&o.compile);
    check_totals t;
    memset(&t, 0, sizeof t);
    const char *dirs[256];
    int nd = 0;
    for (int i = 0; i < argc; i++) {
        const char *v;
        int po = cli_pass_opt(argc, argv, &i, &o.compile);
        if (po < 0) return 2;
        if (po > 0) continue;
        if (strcmp(argv[i], "--reference") == 0) {
            o.mode = MODE_REFERENCE;
        } else if (strcmp(argv[i], "--compiled") == 0) {
            o.mode = MODE_COMPILED;
        } else if (strcmp(argv[i], "--te") == 0) {
            o.mode = MODE_TE;
        } else if (cli_opt(argc, argv, &i, "--rtol", &v)) {
            if (!v) return 2;
            o.rtol = atof(v);
        } else if (cli_opt(argc, argv, &i, "--atol", &v)) {
            if (!v) return 2;
            o.atol = atof(v);
        } else if (cli_opt(argc, argv, &i, "--expected-failures", &v)) {
            if (!v || load_xfail(v, &t) != 0) return 2;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "smelt check: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (nd < 256) {
            dirs[nd++] = argv[i];
        }
    }
    if (nd == 0) {
        fprintf(stderr, "usage: smelt check [--reference] [--rtol R] [--atol A] "
                        "[--expected-failures FILE] DIR...\n");
        return 2;
    }
    for (int i = 0; i < nd; i++) {
        if (!is_dir(dirs[i])) {
            fprintf(stderr, "smelt check: '%s' is not a folder\n", dirs[i]);
            t.failed++;
            continue;
        }
        check_tree(dirs[i], &o, &t, 0);
    }
    for (int i = 0; i < t.n_xfail; i++) free(t.xfail[i].name);
    free(t.xfail);
    printf("%d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped);
    return t.failed ? 1 : 0;
}
