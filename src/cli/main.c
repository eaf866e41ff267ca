/* smelt: command-line entry point. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <unistd.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

#include "cli/cli.h"
#include "api/smelt_internal.h"
#include "passes/passes.h"

typedef struct cli_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help; /* synopsis and description, as printed under "commands:" */
} cli_command;

static const cli_command commands[] = {
    {"run", cli_run,
     "  run MODEL [--reference|--te] [--input FILE]... [--seed N] [--output-dir DIR]\n"
     "            [--threads N] [--target T] [--repeat N]\n"
     "      compile and execute a model on inputs from .pb/.npy files (in model input\n"
     "      order, or NAME=FILE) or on seeded random data; print each output's summary;\n"
     "      --threads 1..4 x cores (0: all cores)\n"},
    {"check", cli_check,
     "  check [--compiled|--reference|--te] [--target T] [--rtol R] [--atol A]\n"
     "        [--expected-failures FILE] DIR...\n"
     "      run every ONNX backend-style test folder under DIR (model.onnx +\n"
     "      test_data_set_*/) and compare with the expected outputs; a target this\n"
     "      host cannot run (aarch64) is cross-built and run under its emulator;\n"
     "      --target opencl builds a program that runs the kernels on the OpenCL device\n"},
    {"compile", cli_compile,
     "  compile MODEL... [-o DIR [--prefix NAME]] [--embed-weights] [--target T] [--stats [--json]]\n"
     "        [--dump-ir=graph|tir|c|all|after:PASS]\n"
     "      build the model (JIT cache); -o writes a standalone C package; --stats\n"
     "      prints what each graph pass did and the totals\n"},
    {"bench", cli_bench,
     "  bench MODEL [--reference] [--repeat N] [--warmup N] [--threads N] [--json]\n"
     "        [--profile]\n"
     "      median latency on seeded random inputs; --profile also times each\n"
     "      generated function in the whole run (median per call, slowest first)\n"},
    {"tune", cli_tune,
     "  tune MODEL... -o RECORDS.jsonl [--trials N] [--minutes M] [--random] [--target T]\n"
     "       [--threads N] [--batch N] [--early-stop N] [--jobs N] [--seed N]\n"
     "       [--min-ms MS] [--flush-mb MB] [--timeout S] [--plot FILE.svg] [--quiet]\n"
     "  tune MODEL... --list-tasks [--knobs KEY=V,V,...]... | --show-space\n"
     "      search schedules for the models' functions on this machine; every\n"
     "      measurement is appended to RECORDS (a rerun resumes); use the result\n"
     "      with --records RECORDS.jsonl; under mpirun -np N (N > 1) rank 0 searches\n"
     "      and records, the other ranks measure (smelt built with MPI);\n"
     "      --list-tasks --knobs KEY=V,... also measures the task whose key starts\n"
     "      with KEY at those knob values (--show-space's order; 0: the rule's)\n"},
    {"records", cli_records,
     "  records show FILE... | best FILE... -o OUT | merge FILE... -o OUT\n"
     "      list tuning records per task; keep the best per task; concatenate\n"},
    {"targets", cli_targets,
     "  targets\n"
     "      list the code generation targets (--target T) and which this host runs\n"},
    {"quantize", cli_quantize,
     "  quantize MODEL -o OUT.onnx [--calib DIR | --samples N [--seed S]] [--reduce-range]\n"
     "      static post-training quantization to the QDQ form of onnxruntime's\n"
     "      quantize_static: int8 weights per channel (symmetric) for Conv, MatMul and\n"
     "      Gemm, u8 activations from min/max calibration on N (default 16) seeded random\n"
     "      inputs or the .npy/.pb inputs in DIR (one file per sample, or a folder per\n"
     "      sample with one file per model input); --reduce-range: 7-bit weights\n"},
    {"graph", cli_graph,
     "  graph MODEL -o FILE.dot|.svg|.png\n"
     "      draw the graph with op, dtype and shape on every edge\n"},
};

#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static const char common_help[] =
    "run, check, compile and bench take -O0..-O3 (graph optimisation level, default\n"
    "-O2), --disable-pass=PASS (repeatable) and --records FILE (tuned schedules from\n"
    "smelt tune; tasks without a record keep the default schedules) and --schedule\n"
    "FILE (schedules written by hand: 'task NAME' lines, NAME a function as\n"
    "--dump-ir=tir prints it or a key from tune --list-tasks, each followed by steps\n"
    "in the schedule text form; applied before records, errors name line and step)\n"
    "run, compile, bench and tune take --dim NAME=VALUE (repeatable): the value of a\n"
    "symbolic input dim, so a model with dynamic shapes compiles (and -o writes its\n"
    "package) for that size; without it, run and bench compile per input signature.\n"
    "--dim NAME=MIN..MAX compiles once for every length in the range (loops take it\n"
    "at run time, memory is planned for MAX); bench and run generate inputs of length\n"
    "VALUE with --dim NAME=VALUE@MIN..MAX (else MAX); --dim NAME=OTHER+N (or -N) ties\n"
    "a dim to another, e.g. an attention mask's --dim total=past+1 --dim past=1..1024\n"
    "\n"
    "environment: SMELT_DEBUG=1..4 for more logging\n";

static void print_usage(FILE *f)
{
    fputs("usage: smelt <command> [options]\n       smelt help [command]\n"
          "       smelt --version\n\ncommands:\n", f);
    for (int i = 0; i < N_COMMANDS; i++) fputs(commands[i].help, f);
    fprintf(f, "\n%s", common_help);
}

static const cli_command *find_command(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static bool is_help_flag(const char *a)
{
    return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "help") == 0;
}

/* "smelt help CMD" and "smelt CMD --help": that command's part of the usage */
static int print_command_help(const cli_command *c)
{
    printf("usage:\n%s\n%s", c->help, common_help);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)) {
        printf("smelt %s\n", smelt_version());
        return 0;
    }
    if (argc < 2 || (is_help_flag(argv[1]) && argc == 2)) {
        print_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    bool asked_help = is_help_flag(argv[1]);
    const char *name = asked_help ? argv[2] : argv[1];
    const cli_command *c = find_command(name);
    if (!c) {
        fprintf(stderr, "smelt: unknown command '%s'\n\n", name);
        print_usage(stderr);
        return 2;
    }
    if (asked_help || (argc > 2 && (strcmp(argv[2], "-h") == 0 || strcmp(argv[2], "--help") == 0)))
        return print_command_help(c);
    return c->fn(argc - 2, argv + 2);
}

bool cli_int(const char *opt, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long n = v && *v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || n < lo || n > hi) {
        fprintf(stderr, "smelt: %s takes an integer from %ld to %ld, not '%s'\n", opt, lo, hi,
                v ? v : "");
        return false;
    }
    *out = n;
    return true;
}

bool cli_u64(const char *opt, const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
    if (!v || !(*v >= '0' && *v <= '9') || *end || errno) {
        fprintf(stderr, "smelt: %s takes an integer from 0 to %llu, not '%s'\n", opt,
                (unsigned long long)UINT64_MAX, v ? v : "");
        return false;
    }
    *out = (uint64_t)n;
    return true;
}

int cli_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (int)c : 1;
}

bool cli_threads(const char *opt, const char *v, int *out)
{
    long n, hi = 4L * cli_cores();
    if (!v || strcmp(v, "0") != 0) {
        char *end;
        errno = 0;
        n = v && *v ? strtol(v, &end, 10) : 0;
        if (!v || !*v || *end || errno || n < 1 || n > hi) {
            fprintf(stderr, "smelt: %s takes 1 to %ld threads (4 x the %d cores), or 0 for "
                            "all cores, not '%s'\n", opt, hi, cli_cores(), v ? v : "");
            return false;
        }
        *out = (int)n;
        return true;
    }
    *out = 0;
    return true;
}

bool cli_double(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double d = v && *v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || errno || !(d >= lo && d <= hi)) {
        fprintf(stderr, "smelt: %s takes a number from %g to %g, not '%s'\n", opt, lo, hi,
                v ? v : "");
        return false;
    }
    *out = d;
    return true;
}

void cli_records_note(const smelt_model *m)
{
    const smelt_records_use *u = smelt_model_records_use(m);
    if (u->schedule_used)
        fprintf(stderr, "smelt: schedule file: %d of %d functions scheduled from it\n",
                u->schedule_functions, u->functions);
    if (!u->used) return;
    fprintf(stderr, "smelt: records: %d of %d functions scheduled from %d records of this target",
            u->scheduled, u->functions, u->records);
    if (u->other_target) fprintf(stderr, "; %d records of another target ignored", u->other_target);
    if (u->bad_schema) fprintf(stderr, "; %d records of an unknown schema ignored", u->bad_schema);
    if (u->malformed) fprintf(stderr, "; %d unreadable lines ignored", u->malformed);
    fputc('\n', stderr);
}

int cli_fail(const smelt_ctx *ctx)
{
    fprintf(stderr, "smelt: %s: %s\n", smelt_status_name(smelt_ctx_status(ctx)),
            smelt_ctx_message(ctx));
    return 1;
}

int cli_fail_load(const smelt_ctx *ctx, const char *path)
{
    fprintf(stderr, "smelt: %s: %s: %s\n", path, smelt_status_name(smelt_ctx_status(ctx)),
            smelt_ctx_message(ctx));
    return 1;
}

bool cli_opt(int argc, char **argv, int *i, const char *name, const char **val)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return false;
    if (a[n] == '=') {
        *val = a + n + 1;
        return true;
    }
    if (a[n] != '\0') return false;
    if (*i + 1 >= argc) {
        fprintf(stderr, "smelt: option %s needs a value\n", name);
        *val = NULL;
        return true;
    }
    *val = argv[++*i];
    return true;
}

/* "BASE", "BASE+N" or "BASE-N" (a dim that follows another) into d's entry k. */
static bool parse_dim_tie(const char *v, cli_dims *d, int k)
{
    size_t n = strcspn(v, "+-");
    long add = 0;
    if (n >= sizeof d->base_buf[k]) {
        fprintf(stderr, "smelt: --dim '%s': the dim name is too long\n", v);
        return false;
    }
    if (v[n] && !cli_int("--dim", v + n + (v[n] == '+'), -8, 8, &add)) return false;
    memcpy(d->base_buf[k], v, n);
    d->base_buf[k][n] = '\0';
    d->bases[k] = d->base_buf[k];
    d->adds[k] = add;
    d->values[k] = d->mins[k] = d->maxs[k] = 0;
    return true;
}

/* "VALUE", "MIN..MAX", "VALUE@MIN..MAX" or a tie into d's entry k. */
static bool parse_dim_value(const char *v, cli_dims *d, int k)
{
    d->bases[k] = NULL;
    if (isalpha((unsigned char)v[0]) || v[0] == '_') return parse_dim_tie(v, d, k);
    const long lim = (long)SMELT_LIMIT_TENSOR_ELEMS;
    const char *at = strchr(v, '@'), *dots = strstr(v, "..");
    long value = 0, lo = 0, hi = 0;
    char buf[64];
    if (!dots) {
        if (!cli_int("--dim", v, 1, lim, &value)) return false;
        d->values[k] = value;
        d->mins[k] = d->maxs[k] = 0;
        return true;
    }
    const char *range = at ? at + 1 : v;
    size_t n = (size_t)(dots - range);
    if ((at && at > dots) || n == 0 || n >= sizeof buf) {
        fprintf(stderr, "smelt: --dim '%s': expected VALUE, MIN..MAX or VALUE@MIN..MAX\n", v);
        return false;
    }
    memcpy(buf, range, n);
    buf[n] = '\0';
    if (!cli_int("--dim", buf, 1, lim, &lo) || !cli_int("--dim", dots + 2, lo, lim, &hi)) return false;
    if (at) {
        n = (size_t)(at - v);
        if (n == 0 || n >= sizeof buf) {
            fprintf(stderr, "smelt: --dim '%s': expected VALUE@MIN..MAX\n", v);
            return false;
        }
        memcpy(buf, v, n);
        buf[n] = '\0';
        if (!cli_int("--dim", buf, lo, hi, &value)) return false;
    }
    d->values[k] = at ? value : hi;
    d->mins[k] = lo;
    d->maxs[k] = hi;
    return true;
}

int cli_dim_opt(int argc, char **argv, int *i, cli_dims *d)
{
    const char *v;
    if (!cli_opt(argc, argv, i, "--dim", &v)) return 0;
    if (!v) return -1;
    const char *eq = strchr(v, '=');
    size_t len = eq ? (size_t)(eq - v) : 0;
    if (!eq || len == 0 || len >= sizeof d->name_buf[0]) {
        fprintf(stderr, "smelt: --dim '%s': expected NAME=VALUE, NAME=MIN..MAX or NAME=OTHER+N "
                "(e.g. --dim batch=8, --dim seq=1..512, --dim total=past+1)\n", v);
        return -1;
    }
    if (d->n == CLI_MAX_DIMS) {
        fprintf(stderr, "smelt: more than %d --dim options\n", CLI_MAX_DIMS);
        return -1;
    }
    if (!parse_dim_value(eq + 1, d, d->n)) return -1;
    memcpy(d->name_buf[d->n], v, len);
    d->name_buf[d->n][len] = '\0';
    d->names[d->n] = d->name_buf[d->n];
    d->n++;
    return 1;
}

bool cli_apply_dims(smelt_ctx *ctx, smelt_model *m, const cli_dims *d)
{
    for (int k = 0; k < d->n; k++) /* ties first: setting the base sets the tied dim */
        if (d->bases[k] && smelt_model_tie_dim(ctx, m, d->names[k], d->bases[k], d->adds[k]) != SMELT_OK) {
            cli_fail(ctx);
            return false;
        }
    for (int k = 0; k < d->n; k++) {
        if (d->bases[k]) continue;
        smelt_status s = d->maxs[k] ? smelt_model_set_dim_range(ctx, m, d->names[k], d->mins[k],
                                                                 d->maxs[k])
                                    : smelt_model_set_dim(ctx, m, d->names[k], d->values[k]);
        if (s != SMELT_OK) {
            cli_fail(ctx);
            return false;
        }
    }
    return true;
}

int64_t cli_input_dim(const smelt_model *m, const cli_dims *dims, int i, int d, int64_t dflt)
{
    const gr_graph *g = m->graph;
    if (i < 0 || i >= g->inputs.len) return dflt;
    int64_t add = 0;
    int k = gr_value_rt_dim_add(g, g->inputs.items[i], d, &add);
    if (k < 0) return dflt;
    for (int j = 0; j < dims->n; j++)
        if (!strcmp(dims->names[j], g->rt_dims[k].name)) return dims->values[j] + add;
    return g->rt_dims[k].max + add;
}

int cli_pass_opt(int argc, char **argv, int *i, smelt_options *o)
{
    static char disabled[1024];
    const char *a = argv[*i], *v;
    if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
        o->opt_level = a[2] - '0';
        return 1;
    }
    if (cli_opt(argc, argv, i, "--records", &v)) {
        if (!v) return -1;
        o->records = v;
        return 1;
    }
    if (cli_opt(argc, argv, i, "--schedule", &v)) {
        if (!v) return -1;
        o->schedule = v;
        return 1;
    }
    if (!cli_opt(argc, argv, i, "--disable-pass", &v)) return 0;
    if (!v) return -1;
    smelt_ctx *ctx = smelt_ctx_new();
    bool ok = pass_check_names(ctx, v) == SMELT_OK;
    if (!ok) fprintf(stderr, "smelt: %s\n", smelt_ctx_message(ctx));
    smelt_ctx_free(ctx);
    size_t used = strlen(disabled);
    if (ok && used + strlen(v) + 2 > sizeof disabled) {
        fprintf(stderr, "smelt: too many --disable-pass\n");
        ok = false;
    }
    if (!ok) return -1;
    snprintf(disabled + used, sizeof disabled - used, "%s%s", used ? "," : "", v);
    o->disabled_passes = disabled;
    return 1;
}
