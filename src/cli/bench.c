/* smelt bench: latency of a model, compiled or with the reference kernels.
 * Seeded random inputs, warm-up runs, then the median and spread of the
 * timed runs (medians, because the machines are shared and noisy). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/smelt_internal.h"
#include "cli/cli.h"
#include "io/io.h"

typedef struct bench_opts {
    const char *model;
    int warmup, repeat;
    bool reference, json, profile;
    smelt_options compile;
    cli_dims dims;
    const char *compile_flag; /* a compile option given (refused with --reference) */
} bench_opts;

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static smelt_status random_inputs(smelt_ctx *ctx, smelt_model *m, const cli_dims *dims,
                                  smelt_tensor *ins)
{
    for (int i = 0; i < smelt_model_num_inputs(m); i++) {
        smelt_tensor *t = &ins[i];
        memset(t, 0, sizeof *t);
        smelt_model_input_info(m, i, NULL, &t->dtype, &t->rank, t->dims);
        for (int d = 0; d < t->rank; d++)
            t->dims[d] = cli_input_dim(m, dims, i, d, t->dims[d] < 0 ? 1 : t->dims[d]);
        size_t nb = smelt_tensor_nbytes(t);
        if (!(t->data = smelt_alloc(nb ? nb : 1))) return smelt_errf(ctx, SMELT_ERR_NOMEM, "OOM");
        io_fill_random(t, 1 + (uint64_t)i, 2);
    }
    return SMELT_OK;
}

static smelt_status run_once(smelt_ctx *ctx, smelt_model *m, const bench_opts *o,
                             smelt_tensor *ins, int ni, smelt_tensor *outs, int no, double *ms)
{
    double t0 = now_ms();
    smelt_status s = o->reference ? smelt_model_run_reference(ctx, m, ins, ni, outs, no)
                                  : smelt_model_run(ctx, m, ins, ni, outs, no);
    *ms = now_ms() - t0;
    for (int i = 0; i < no; i++) smelt_tensor_release(&outs[i]);
    return s;
}

/* ---- --profile: each call's median (and minimum) over the runs ---- */

typedef struct call_time {
    int call;
    double ms;     /* median */
    double min_ms; /* on a shared machine the steadier figure to compare */
} call_time;

static int cmp_call_time(const void *a, const void *b)
{
    const call_time *x = a, *y = b;
    return x->ms > y->ms ? -1 : x->ms < y->ms ? 1 : x->call - y->call;
}

/* Profiled runs: per call k, its times over the runs in per_run[k * runs + r]. */
static smelt_status profile_runs(smelt_ctx *ctx, smelt_model *m, const bench_opts *o,
                                 smelt_tensor *ins, int ni, smelt_tensor *outs, int no,
                                 int calls, double *per_run)
{
    int64_t *ns = smelt_calloc((size_t)calls, sizeof *ns);
    if (!ns) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory for the profile");
    smelt_status s = SMELT_OK;
    for (int r = 0; s == SMELT_OK && r < o->repeat; r++) {
        memset(ns, 0, (size_t)calls * sizeof *ns);
        s = smelt_model_run_profiled(ctx, m, ins, ni, outs, no, ns);
        for (int i = 0; i < no; i++) smelt_tensor_release(&outs[i]);
        for (int k = 0; k < calls; k++) per_run[(size_t)k * (size_t)o->repeat + (size_t)r] = (double)ns[k] / 1e6;
    }
    smelt_free(ns);
    return s;
}

static void print_profile(smelt_model *m, const bench_opts *o, const call_time *t, int n,
                          double run_ms)
{
    double sum = 0, min_sum = 0;
    for (int k = 0; k < n; k++) {
        sum += t[k].ms;
        min_sum += t[k].min_ms;
    }
    if (o->json) {
        printf(", \"profile\": [");
        for (int k = 0; k < n; k++) {
            printf("%s{\"call\": %d, \"function\": ", k ? ", " : "", t[k].call);
            json_str(smelt_model_call_name(m, t[k].call));
            printf(", \"nodes\": ");
            json_str(smelt_model_call_nodes(m, t[k].call));
            printf(", \"median_ms\": %.6f, \"min_ms\": %.6f}", t[k].ms, t[k].min_ms);
        }
        printf("]");
        return;
    }
    printf("%s: profile, each call's median over %d runs: %.3f ms in calls of a %.3f ms run "
           "(minima: %.3f ms)\n", o->model, o->repeat, sum, run_ms, min_sum);
    printf("%10s %10s %7s %6s  %-24s %s\n", "ms", "min ms", "share", "call", "function", "nodes");
    for (int k = 0; k < n; k++)
        printf("%10.4f %10.4f %6.1f%% %6d  %-24s %s\n", t[k].ms, t[k].min_ms,
               sum > 0 ? 100 * t[k].ms / sum : 0.0, t[k].call, smelt_model_call_name(m, t[k].call),
               smelt_model_call_nodes(m, t[k].call));
}

/* Times every call over o->repeat runs and prints them, slowest first. */
static int bench_profile(smelt_ctx *ctx, smelt_model *m, const bench_opts *o, smelt_tensor *ins,
                         int ni, smelt_tensor *outs, int no, double run_ms)
{
    int calls = smelt_model_num_calls(m), n = 0;
    double *per_run = smelt_calloc((size_t)calls * (size_t)o->repeat + 1, sizeof *per_run);
    call_time *t = smelt_calloc((size_t)calls + 1, sizeof *t);
    int rc = !per_run || !t ? (smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory for the profile"),
                               cli_fail(ctx))
             : profile_runs(ctx, m, o, ins, ni, outs, no, calls, per_run) != SMELT_OK ? cli_fail(ctx)
                                                                                     : 0;
    for (int k = 0; rc == 0 && k < calls; k++) {
        if (!smelt_model_call_name(m, k)) continue; /* an If/Loop step */
        double *v = per_run + (size_t)k * (size_t)o->repeat;
        qsort(v, (size_t)o->repeat, sizeof *v, cmp_double);
        t[n++] = (call_time){k, v[o->repeat / 2], v[0]};
    }
    if (rc == 0) {
        qsort(t, (size_t)n, sizeof *t, cmp_call_time);
        print_profile(m, o, t, n, run_ms);
    }
    smelt_free(per_run);
    smelt_free(t);
    return rc;
}

static int bench_model(smelt_ctx *ctx, smelt_model *m, const bench_opts *o)
{
    int ni = smelt_model_num_inputs(m), no = smelt_model_num_outputs(m);
    smelt_tensor *ins = smelt_calloc((size_t)ni + 1, sizeof *ins);
    smelt_tensor *outs = smelt_calloc((size_t)no + 1, sizeof *outs);
    double *times = smelt_calloc((size_t)o->repeat + 1, sizeof *times);
    int rc = 0;
    double t0 = now_ms();
    if (!ins || !outs || !times || random_inputs(ctx, m, &o->dims, ins) != SMELT_OK ||
        (!o->reference && smelt_model_compile(ctx, m, &o->compile) != SMELT_OK))
        rc = smelt_ctx_status(ctx) ? cli_fail(ctx) : 1;
    if (rc == 0 && !o->reference && !o->json) cli_records_note(m);
    double compile_ms = now_ms() - t0, ms;
    for (int i = 0; rc == 0 && i < o->warmup; i++)
        if (run_once(ctx, m, o, ins, ni, outs, no, &ms) != SMELT_OK) rc = cli_fail(ctx);
    for (int i = 0; rc == 0 && i < o->repeat; i++)
        if (run_once(ctx, m, o, ins, ni, outs, no, &times[i]) != SMELT_OK) rc = cli_fail(ctx);
    if (rc == 0) {
        qsort(times, (size_t)o->repeat, sizeof *times, cmp_double);
        if (o->json) {
            printf("{\"model\": ");
            json_str(o->model);
            printf(", \"mode\": \"%s\", \"median_ms\": %.6f, \"min_ms\": %.6f, "
                   "\"max_ms\": %.6f, \"runs\": %d, \"warmup\": %d, \"threads\": %d",
                   o->reference ? "reference" : "compiled", times[o->repeat / 2], times[0],
                   times[o->repeat - 1], o->repeat, o->warmup,
                   o->reference ? 1 : o->compile.num_threads ? o->compile.num_threads : cli_cores());
            if (!o->reference) printf(", \"compile_ms\": %.3f", compile_ms);
            if (o->profile) rc = bench_profile(ctx, m, o, ins, ni, outs, no, times[o->repeat / 2]);
            printf("}\n");
        } else {
        printf("%s: %s median %.3f ms  min %.3f  max %.3f  (%d runs, %d warm-up%s)\n", o->model,
               o->reference ? "reference" : "compiled", times[o->repeat / 2], times[0],
               times[o->repeat - 1], o->repeat, o->warmup,
               o->reference ? "" : "");
        if (!o->reference) printf("%s: compile %.1f ms\n", o->model, compile_ms);
        if (o->profile) rc = bench_profile(ctx, m, o, ins, ni, outs, no, times[o->repeat / 2]);
        }
    }
    for (int i = 0; ins && i < ni; i++) smelt_tensor_release(&ins[i]);
    smelt_free(ins);
    smelt_free(outs);
    smelt_free(times);
    return rc;
}

int cli_bench(int argc, char **argv)
{
    bench_opts o = {.warmup = 3, .repeat = 20};
    smelt_options_init(&o.compile);
    for (int i = 0; i < argc; i++) {
        const char *v, *a = argv[i];
        long n;
        int po = cli_pass_opt(argc, argv, &i, &o.compile);
        if (po == 0 && (po = cli_dim_opt(argc, argv, &i, &o.dims)) > 0) continue;
        if (po < 0) return 2;
        if (po > 0) {
            o.compile_flag = a;
            continue;
        }
        if (strcmp(a, "--reference") == 0) {
            o.reference = true;
        } else if (strcmp(a, "--json") == 0) {
            o.json = true;
        } else if (strcmp(a, "--profile") == 0) {
            o.profile = true;
        } else if (cli_opt(argc, argv, &i, "--repeat", &v)) {
            if (!cli_int("--repeat", v, 1, 1000000, &n)) return 2;
            o.repeat = (int)n;
        } else if (cli_opt(argc, argv, &i, "--warmup", &v)) {
            if (!cli_int("--warmup", v, 0, 1000000, &n)) return 2;
            o.warmup = (int)n;
        } else if (cli_opt(argc, argv, &i, "--threads", &v)) {
            if (!cli_threads("--threads", v, &o.compile.num_threads)) return 2;
            o.compile_flag = "--threads";
        } else if (cli_opt(argc, argv, &i, "--target", &v)) {
            if (!(o.compile.target = v)) return 2;
            o.compile_flag = "--target";
        } else if (a[0] == '-') {
            fprintf(stderr, "smelt bench: unknown option '%s'\n", a);
            return 2;
        } else if (!o.model) {
            o.model = a;
        } else {
            fprintf(stderr, "smelt bench: unexpected argument '%s' (one model per run)\n", a);
            return 2;
        }
    }
    if (!o.model)
        return fprintf(stderr, "usage: smelt bench MODEL [--reference] [--repeat N] "
                               "[--warmup N] [--threads N] [--target T] [--dim NAME=VALUE] [--json] "
                               "[--profile]\n"), 2;
    if (o.reference && (o.compile_flag || o.profile))
        return fprintf(stderr, "smelt bench: %s has no effect with --reference\n",
                       o.compile_flag ? o.compile_flag : "--profile"), 2;
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, o.model), *counted = NULL;
    int rc = !m ? cli_fail_load(ctx, o.model) : cli_apply_dims(ctx, m, &o.dims) ? 0 : 1;
    /* data-dependent counts compiled once (and profiled), not per signature */
    if (rc == 0 && !o.reference && !smelt_graph_is_static(smelt_model_graph(m)) &&
        smelt_model_with_counts(ctx, m, &counted) != SMELT_OK)
        smelt_ctx_clear(ctx);
    if (rc == 0) rc = bench_model(ctx, counted ? counted : m, &o);
    smelt_model_free(counted);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return rc;
}
