/* smelt run: execute a model and summarise (or save) its outputs. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "api/smelt_internal.h"
#include "cli/cli.h"
#include "frontend/onnx.h"
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
    cli_dims dims;
    int repeat;
    /* options given, for "has no effect with --reference/--te" */
    const char *compile_flag;
} run_opts;

static int parse_run_opts(int argc, char **argv, run_opts *o)
{
    memset(o, 0, sizeof *o);
    smelt_options_init(&o->compile);
    o->repeat = 1;
    for (int i = 0; i < argc; i++) {
        const char *v, *a = argv[i];
        int po = cli_pass_opt(argc, argv, &i, &o->compile);
        if (po == 0 && (po = cli_dim_opt(argc, argv, &i, &o->dims)) > 0) continue;
        if (po < 0) return 2;
        if (po > 0) {
            o->compile_flag = a;
            continue;
        }
        if (strcmp(a, "--reference") == 0) {
            o->reference = true;
        } else if (strcmp(a, "--te") == 0) {
            o->te = true;
        } else if (cli_opt(argc, argv, &i, "--target", &v)) {
            if (!(o->compile.target = v)) return 2;
            o->compile_flag = "--target";
        } else if (cli_opt(argc, argv, &i, "--threads", &v)) {
            if (!cli_threads("--threads", v, &o->compile.num_threads)) return 2;
            o->compile_flag = "--threads";
        } else if (cli_opt(argc, argv, &i, "--repeat", &v)) {
            long n;
            if (!cli_int("--repeat", v, 1, 1000000, &n)) return 2;
            o->repeat = (int)n;
        } else if (cli_opt(argc, argv, &i, "--input", &v)) {
            if (!v) return 2;
            if (o->n_inputs == 64) return fprintf(stderr, "smelt run: too many --input\n"), 2;
            o->inputs[o->n_inputs++] = v;
        } else if (cli_opt(argc, argv, &i, "--output-dir", &v)) {
            if (!(o->output_dir = v)) return 2;
            if (!*v) return fprintf(stderr, "smelt run: --output-dir needs a folder\n"), 2;
        } else if (cli_opt(argc, argv, &i, "--seed", &v)) {
            if (!cli_u64("--seed", v, &o->seed)) return 2;
        } else if (a[0] == '-') {
            fprintf(stderr, "smelt run: unknown option '%s'\n", a);
            return 2;
        } else if (!o->model) {
            o->model = a;
        } else {
            fprintf(stderr, "smelt run: unexpected argument '%s' (one model per run)\n", a);
            return 2;
        }
    }
    if (!o->model) return fprintf(stderr, "usage: smelt run MODEL [--reference] ...\n"), 2;
    if (o->reference && o->te)
        return fprintf(stderr, "smelt run: --reference and --te exclude each other\n"), 2;
    if ((o->reference || o->te) && o->compile_flag)
        return fprintf(stderr, "smelt run: %s has no effect with %s (they compile nothing)\n",
                       o->compile_flag, o->reference ? "--reference" : "--te"), 2;
    return 0;
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* "--input NAME=FILE" names an input when the text before the first '=' is
 * not empty, holds no '/', and the whole argument is not an existing file;
 * anything else is a FILE for the next input in model order ("./a=b.npy"
 * forces a path). */
static bool split_named(const char *arg, size_t *name_len)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || memchr(arg, '/', (size_t)(eq - arg)) || file_exists(arg)) return false;
    *name_len = (size_t)(eq - arg);
    return true;
}

/* "x, y" into buf: the model's input names, for error messages. */
static const char *input_names(const smelt_model *m, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < smelt_model_num_inputs(m) && n + 1 < cap; i++) {
        const char *name;
        smelt_model_input_info(m, i, &name, NULL, NULL, NULL);
        int w = snprintf(buf + n, cap - n, "%s'%s'", i ? ", " : "", name);
        if (w < 0) break;
        n += (size_t)w < cap - n ? (size_t)w : cap - n - 1;
    }
    return smelt_model_num_inputs(m) ? buf : "none";
}

/* Every --input bound to exactly one model input: files[i] is input i's
 * file or NULL (random data); unknown names, more files than inputs and
 * an input given twice are errors naming the model's inputs. */
static int bind_inputs(const smelt_model *m, const run_opts *o, const char **files,
                       const char **args)
{
    int ni = smelt_model_num_inputs(m), positional = 0;
    char names[2048];
    for (int k = 0; k < o->n_inputs; k++) {
        const char *arg = o->inputs[k], *file = arg;
        size_t len;
        int idx = -1;
        if (split_named(arg, &len)) {
            for (int i = 0; i < ni && idx < 0; i++) {
                const char *name;
                smelt_model_input_info(m, i, &name, NULL, NULL, NULL);
                if (strlen(name) == len && strncmp(name, arg, len) == 0) idx = i;
            }
            if (idx < 0) {
                fprintf(stderr, "smelt run: --input %s: the model has no input named '%.*s' "
                                "(its inputs: %s)\n", arg, (int)len, arg,
                        input_names(m, names, sizeof names));
                return 2;
            }
            file = arg + len + 1;
        } else {
            idx = positional++;
            if (idx >= ni) {
                fprintf(stderr, "smelt run: --input %s is input %d, but the model takes %d "
                                "input%s (%s)\n", arg, idx + 1, ni, ni == 1 ? "" : "s",
                        input_names(m, names, sizeof names));
                return 2;
            }
        }
        if (files[idx]) {
            const char *name;
            smelt_model_input_info(m, idx, &name, NULL, NULL, NULL);
            fprintf(stderr, "smelt run: input '%s' is given twice (--input %s and --input %s)\n",
                    name, args[idx], arg);
            return 2;
        }
        files[idx] = file;
        args[idx] = arg;
    }
    return 0;
}

static smelt_status make_input(smelt_ctx *ctx, smelt_model *m, const run_opts *o, int i,
                               const char *file, smelt_tensor *t)
{
    const char *name;
    smelt_dtype dt;
    int rank;
    int64_t dims[SMELT_MAX_RANK];
    smelt_model_input_info(m, i, &name, &dt, &rank, dims);
    memset(t, 0, sizeof *t);
    if (smelt_dtype_is_container(dt) && !file)
        return smelt_errf(ctx, SMELT_ERR_ARG, "input '%s' is a%s %s: give it with --input "
                          "%s=FILE (a SequenceProto or OptionalProto .pb)", name,
                          (unsigned)dt & SMELT_DT_OPTIONAL_BIT ? "n" : "", smelt_dtype_name(dt),
                          name);
    if (file) {
        smelt_tensor *loaded;
        if (smelt_dtype_is_container(dt)) SMELT_TRY(onnx_value_load_pb(ctx, file, dt, &loaded));
        else SMELT_TRY(io_tensor_load(ctx, file, &loaded));
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
    for (int d = 0; d < rank; d++) t->dims[d] = cli_input_dim(m, &o->dims, i, d, dims[d] < 0 ? 1 : dims[d]);
    size_t nb = smelt_tensor_nbytes(t);
    if (!(t->data = smelt_alloc(nb ? nb : 1)))
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    io_fill_random(t, o->seed + (uint64_t)i, 2);
    fprintf(stderr, "smelt run: no --input for '%s': random data (seed %llu: --seed + input "
                    "index)\n", name, (unsigned long long)(o->seed + (uint64_t)i));
    return SMELT_OK;
}

static void print_summary(const smelt_tensor *t)
{
    if (smelt_dtype_is_container(t->dtype)) { /* its elements, one line each */
        printf("%s: %s of %lld\n", t->name ? t->name : "?", smelt_dtype_name(t->dtype),
               (long long)t->dims[0]);
        const smelt_tensor *e = t->data;
        for (int64_t i = 0; i < t->dims[0]; i++) {
            char name[64];
            snprintf(name, sizeof name, "  [%lld]", (long long)i);
            smelt_tensor view = e[i];
            view.name = name;
            print_summary(&view);
        }
        return;
    }
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

/* mkdir -p: every missing folder of path. */
static bool make_dirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return false;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    struct stat st;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
    return stat(buf, &st) == 0 && S_ISDIR(st.st_mode);
}

/* One file per output, NAME.npy; outputs whose names sanitise to the same
 * file (case-insensitively, for case-folding file systems) get NAME_2.npy,
 * NAME_3.npy, ... so no output overwrites another. */
static int save_outputs(smelt_ctx *ctx, const char *dir, smelt_tensor *outs, int n)
{
    if (!make_dirs(dir)) {
        fprintf(stderr, "smelt run: cannot create the folder '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    char(*used)[208] = calloc((size_t)n + 1, sizeof *used);
    if (!used) return fprintf(stderr, "smelt run: out of memory\n"), 1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        char base[200], path[4096];
        safe_filename(outs[i].name ? outs[i].name : "output", base, sizeof base);
        snprintf(used[i], sizeof used[i], "%s", base);
        for (int suffix = 2;; suffix++) {
            bool clash = false;
            for (int k = 0; k < i && !clash; k++) clash = strcasecmp(used[k], used[i]) == 0;
            if (!clash) break;
            snprintf(used[i], sizeof used[i], "%s_%d", base, suffix);
        }
        snprintf(path, sizeof path, "%s/%s.npy", dir, used[i]);
        if (io_npy_save(ctx, path, &outs[i]) != SMELT_OK) rc = cli_fail(ctx);
        else if (strcmp(used[i], base) != 0 || strcmp(base, outs[i].name ? outs[i].name : "") != 0)
            printf("wrote %s (output '%s')\n", path, outs[i].name ? outs[i].name : "");
        else printf("wrote %s\n", path);
    }
    free(used);
    return rc;
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
    const char **files = calloc((size_t)ni + 1, sizeof *files);
    const char **args = calloc((size_t)ni + 1, sizeof *args);
    int rc = 0;
    if (!ins || !outs || !files || !args)
        rc = (smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory"), cli_fail(ctx));
    if (rc == 0) rc = bind_inputs(m, o, files, args);
    for (int i = 0; rc == 0 && i < ni; i++)
        if (make_input(ctx, m, o, i, files[i], &ins[i]) != SMELT_OK) rc = cli_fail(ctx);
    if (rc == 0 && !o->reference && !o->te) {
        double t0 = now_ms();
        if (smelt_model_compile(ctx, m, &o->compile) != SMELT_OK) rc = cli_fail(ctx);
        else if (smelt_graph_is_static(smelt_model_graph(m)))
            printf("compiled %s in %.1f ms\n", o->model, now_ms() - t0);
        else /* compiled by the run, for these inputs' shapes */
            printf("%s has dynamic shapes: compiled for these inputs when run\n", o->model);
        if (rc == 0) cli_records_note(m);
    }
    for (int r = 0; rc == 0 && r < o->repeat; r++) {
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
    free(files);
    free(args);
    return rc;
}

int cli_run(int argc, char **argv)
{
    run_opts o;
    int rc = parse_run_opts(argc, argv, &o);
    if (rc) return rc;
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, o.model);
    if (!m) rc = cli_fail_load(ctx, o.model);
    else rc = cli_apply_dims(ctx, m, &o.dims) ? run_model(ctx, m, &o) : 1;
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return rc;
}
