/* smelt run: execute a model and summarise (or save) its outputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "api/smelt_internal.h"
#include "cli/cli.h"
#include "io/io.h"
#include "ops/op.h"

typedef struct run_opts {
    const char *model;
    const char *inputs[64];
    int n_inputs;
    const char *output_dir;
    uint64_t seed;
    bool reference, te;
    smelt_options compile;
    int repeat;
} run_opts;

static int parse_run_opts(int argc, char **argv, run_opts *o)
{
    memset(o, 0, sizeof *o);
    smelt_options_init(&o->compile);
    for (int i = 0; i < argc; i++) {
        const char *v;
        int po = cli_pass_opt(argc, argv, &i, &o->compile);
        if (po < 0) return 2;
        if (po > 0) continue;
        if (strcmp(argv[i], "--reference") == 0) {
            o->reference = true;
        } else if (strcmp(argv[i], "--te") == 0) {
            o->te = true;
        } else if (cli_opt(argc, argv, &i, "--target", &v)) {
            if (!(o->compile.target = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "--threads", &v)) {
            if (!v) return 2;
            o->compile.num_threads = atoi(v);
        } else if (cli_opt(argc, argv, &i, "--repeat", &v)) {
            if (!v) return 2;
            o->repeat = atoi(v);
        } else if (cli_opt(argc, argv, &i, "--input", &v)) {
            if (!v) return 2;
            if (o->n_inputs == 64) return fprintf(stderr, "smelt: too many --input\n"), 2;
            o->inputs[o->n_inputs++] = v;
        } else if (cli_opt(argc, argv, &i, "--output-dir", &v)) {
            if (!(o->output_dir = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "--seed", &v)) {
            if (!v) return 2;
            o->seed = strtoull(v, NULL, 10);
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "smelt run: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (!o->model) {
            o->model = argv[i];
        } else {
            fprintf(stderr, "smelt run: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!o->model) return fprintf(stderr, "usage: smelt run MODEL [--reference] ...\n"), 2;
    return 0;
}

/* Input i: from "--input NAME=FILE", else the i-th positional "--input FILE",
 * else random. */
static const char *input_file_for(const run_opts *o, const char *name, int index)
{
    size_t n = strlen(name);
    int positional = 0;
    for (int k = 0; k < o->n_inputs; k++) {
        const char *eq = strchr(o->inputs[k], '=');
        if (eq && (size_t)(eq - o->inputs[k]) == n && strncmp(o->inputs[k], name, n) == 0)
            return eq + 1;
        if (!eq && positional++ == index) return o->inputs[k];
    }
    return NULL;
}

static smelt_status make_input(smelt_ctx *ctx, smelt_model *m, const run_opts *o, int i,
                               smelt_tensor *t)
{
    const char *name;
    smelt_dtype dt;
    int rank;
    int64_t dims[SMELT_MAX_RANK];
    smelt_model_input_info(m, i, &name, &dt, &rank, dims);
    const char *file = input_file_for(o, name, i);
    memset(t, 0, sizeof *t);
    if (file) {
        smelt_tensor *loaded;
        SMELT_TRY(io_tensor_load(ctx, file, &loaded));
        *t = *loaded;
        smelt_free(loaded);
        return SMELT_OK;
    }
    if (rank < 0)
        return smelt_errf(ctx, SMELT_ERR_ARG,
                          "input '%s' has unknown rank: give it with --input %s=FILE", name,
                          name);
    t->dtype = dt;
    t->rank = rank;
    for (int d = 0; d < rank; d++) t->dims[d] = dims[d] < 0 ? 1 : dims[d];
    size_t nb = smelt_tensor_nbytes(t);
    if (!(t->data = smelt_alloc(nb ? nb : 1)))
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    io_fill_random(t, o->seed + (uint64_t)i, 2);
    return SMELT_OK;
}

static void print_summary(const smelt_tensor *t)
{
    printf("%s: %s[", t->name ? t->name : "?", smelt_dtype_name(t->dtype));
    for (int i = 0; i < t->rank; i++) printf("%s%lld", i ? "," : "", (long long)t->dims[i]);
    printf("]");
    int64_t n = smelt_tensor_numel(t);
    if (n == 0 || !smelt_dtype_size(t->dtype)) {
        printf(" (empty)\n");
        return;
    }
    smelt_tensor view = *t;
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = op_get_f64(&view, i);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        sum += v;
    }
    printf(" min %.6g max %.6g mean %.6g  first:", mn, mx, sum / (double)n);
    for (int64_t i = 0; i < n && i < 6; i++) printf(" %.6g", op_get_f64(&view, i));
    printf("%s\n", n > 6 ? " ..." : "");
}

/* Output files are named after outputs; keep only safe characters. */
static void safe_filename(const char *name, char *out, size_t cap)
{
    size_t k = 0;
    for (const char *p = name; *p && k + 1 < cap; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        out[k++] = ok ? c : '_';
    }
    if (k == 0 || out[0] == '.') out[k ? 0 : k++] = '_';
    out[k] = '\0';
}

static int save_outputs(smelt_ctx *ctx, const char *dir, smelt_tensor *outs, int n)
{
    mkdir(dir, 0755);
    for (int i = 0; i < n; i++) {
        char fname[200], path[4096];
        safe_filename(outs[i].name ? outs[i].name : "output", fname, sizeof fname);
        snprintf(path, sizeof path, "%s/%s.npy", dir, fname);
        if (io_npy_save(ctx, path, &outs[i]) != SMELT_OK) return cli_fail(ctx);
        printf("wrote %s\n", path);
    }
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int run_model(smelt_ctx *ctx, smelt_model *m, const run_opts *o)
{
    int ni = smelt_model_num_inputs(m), no = smelt_model_num_outputs(m);
    smelt_tensor *ins = smelt_calloc((size_t)ni + 1, sizeof *ins);
    smelt_tensor *outs = smelt_calloc((size_t)no + 1, sizeof *outs);
    int rc = 0;
    if (!ins || !outs) rc = (smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory"), cli_fail(ctx));
    for (int i = 0; rc == 0 && i < ni; i++)
        if (make_input(ctx, m, o, i, &ins[i]) != SMELT_OK) rc = cli_fail(ctx);
    if (rc == 0 && !o->reference && !o->te) {
        double t0 = now_ms();
        if (smelt_model_compile(ctx, m, &o->compile) != SMELT_OK) rc = cli_fail(ctx);
        else printf("compiled %s in %.1f ms\n", o->model, now_ms() - t0);
        if (rc == 0) cli_records_note(m);
    }
    for (int r = 0; rc == 0 && r < (o->repeat > 0 ? o->repeat : 1); r++) {
        if (r > 0)
            for (int i = 0; i < no; i++) smelt_tensor_release(&outs[i]);
        double t0 = now_ms();
        smelt_status s = o->reference ? smelt_model_run_reference(ctx, m, ins, ni, outs, no)
                         : o->te      ? smelt_model_run_te(ctx, m, ins, ni, outs, no)
                                      : smelt_model_run(ctx, m, ins, ni, outs, no);
        if (s != SMELT_OK) rc = cli_fail(ctx);
        else printf("ran %s (%s) in %.2f ms\n", o->model,
                    o->reference ? "reference kernels" : o->te ? "te interpreter" : "compiled",
                    now_ms() - t0);
    }
    for (int i = 0; rc == 0 && i < no; i++) print_summary(&outs[i]);
    if (rc == 0 && o->output_dir) rc = save_outputs(ctx, o->output_dir, outs, no);
    for (int i = 0; ins && i < ni; i++) smelt_tensor_release(&ins[i]);
    for (int i = 0; outs && i < no; i++) smelt_tensor_release(&outs[i]);
    smelt_free(ins);
    smelt_free(outs);
    return rc;
}

int cli_run(int argc, char **argv)
{
    run_opts o;
    int rc = parse_run_opts(argc, argv, &o);
    if (rc) return rc;
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, o.model);
    rc = m ? run_model(ctx, m, &o) : cli_fail_load(ctx, o.model);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return rc;
}
