/* Measuring candidates so that no candidate can take the tuner down, and so
 * that the numbers agree with deployment.
 *
 * A candidate is the bench's unit lowered with its schedule into a program
 * of its own (inputs: the unit's non-constant inputs; outputs: what it
 * writes for others; weights: the real packed constants).  Builds go through
 * the compile cache, several compilers at once in forked children.  Each
 * built candidate runs in a forked child with no core dumps and a wall-clock
 * limit: it loads the library, runs once and compares every output with the
 * reference kernels' (computed once per task in the parent), then times
 * runs until a minimum time has passed and reports the median and spread
 * through a pipe.  A child that crashes, hangs or answers wrong only marks
 * its candidate invalid.
 *
 * Each timing is paired with the task's default schedule (the reference
 * candidate, built once per bench): the child alternates a run of each and
 * reports the median of the per-pair ratios, which the parent turns into a
 * time at the bench's anchor (the reference's median in its first paired
 * timing).  On a shared or throttling machine the speed of the whole
 * machine drifts by tens of percent over seconds; a ratio of runs taken
 * microseconds apart does not, so candidates measured minutes apart still
 * rank by what their schedule changes.
 *
 * Test hook: SMELT_TUNE_FAULTS="crash:N,hang:N,wrong:N" makes the child of
 * the Nth measurement in this process (from 1) abort, hang or perturb its
 * output, so tests can prove the tuner survives each. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/exec.h"
#include "io/io.h"
#include "smelt_rt.h"
#include "tune/tune.h"

struct tune_bench {
    const gr_graph *g;
    int unit;
    const cg_target *target;
    char target_key[256];
    lowered_program *lp;   /* the default lowering: te graph, io values */
    int n_in, n_out;
    smelt_tensor *inputs;  /* program input order, seeded random */
    smelt_tensor *expected; /* program output order, from the reference kernels */
    tune_candidate *reference; /* the default schedule, built on first use (NULL: unpaired) */
    bool reference_tried;
    double anchor_ms;          /* the reference's median in the first paired timing */
};

#define MEASURE_MAX_RUNS 2000
#define MEASURE_MAX_MS 2000.0 /* stop timing after this much even if runs are few */
#define MEASURE_RTOL 1e-3
#define MEASURE_ATOL 1e-4

static smelt_status oom(smelt_ctx *ctx) { return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory"); }

const te_graph *tune_bench_te(const tune_bench *b) { return b->lp->te_graphs.items[0]; }

/* ---- the bench: inputs and reference outputs ---- */

static smelt_status alloc_like(smelt_ctx *ctx, const gr_value *v, smelt_tensor *t)
{
    memset(t, 0, sizeof *t);
    *t = gr_value_info(v);
    t->data = NULL;
    t->name = NULL;
    size_t nb = smelt_tensor_nbytes(t);
    t->data = smelt_calloc(nb ? nb : 1, 1);
    return t->data ? SMELT_OK : oom(ctx);
}

/* Run the unit's nodes with the reference kernels. */
static smelt_status reference_outputs(smelt_ctx *ctx, tune_bench *b)
{
    const gr_graph *g = b->g;
    const lowered_program *lp = b->lp;
    const smelt_tensor **val = smelt_calloc((size_t)g->values.len + 1, sizeof *val);
    smelt_tensor *made = smelt_calloc((size_t)(lp->unit_end - lp->unit_first) * TE_NODE_MAX_OUTPUTS + 1,
                                      sizeof *made);
    int n_made = 0;
    smelt_status s = val && made ? SMELT_OK : oom(ctx);
    for (int i = 0; s == SMELT_OK && i < b->n_in; i++) val[lp->unit_inputs[i]->id] = &b->inputs[i];
    for (int k = lp->unit_first; s == SMELT_OK && k < lp->unit_end; k++) {
        const gr_node *n = g->nodes.items[k];
        const smelt_tensor *in[TE_GROUP_MAX_IO] = {0};
        for (int i = 0; i < n->n_inputs && i < TE_GROUP_MAX_IO; i++) {
            const gr_value *v = n->inputs[i];
            in[i] = !v ? NULL : v->constant ? v->constant : val[v->id];
            if (v && !in[i])
                s = smelt_errf(ctx, SMELT_ERR_INTERNAL, "tuning: value '%s' has no data", v->name);
        }
        if (s == SMELT_OK && n->n_outputs > TE_NODE_MAX_OUTPUTS)
            s = smelt_errf(ctx, SMELT_ERR_LIMIT, "tuning: node with %d outputs", n->n_outputs);
        if (s == SMELT_OK) s = exec_node(ctx, n, in, made + n_made);
        for (int o = 0; s == SMELT_OK && o < n->n_outputs; o++)
            if (n->outputs[o]) val[n->outputs[o]->id] = &made[n_made + o];
        if (s == SMELT_OK) n_made += n->n_outputs;
    }
    for (int i = 0; s == SMELT_OK && i < b->n_out; i++) {
        const smelt_tensor *src = val[lp->unit_outputs[i]->id];
        if (!src) {
            s = smelt_errf(ctx, SMELT_ERR_INTERNAL, "tuning: output not computed");
            break;
        }
        s = alloc_like(ctx, lp->unit_outputs[i], &b->expected[i]);
        if (s == SMELT_OK) memcpy(b->expected[i].data, src->data, smelt_tensor_nbytes(src));
    }
    for (int i = 0; made && i < n_made; i++) smelt_free(made[i].data);
    smelt_free(made);
    smelt_free(val);
    return s;
}

smelt_status tune_bench_new(smelt_ctx *ctx, const gr_graph *g, int unit, const cg_target *t,
                            const char *target_key, tune_bench **out)
{
    *out = NULL;
    tune_bench *b = smelt_calloc(1, sizeof *b);
    if (!b) return oom(ctx);
    b->g = g;
    b->unit = unit;
    b->target = t;
    snprintf(b->target_key, sizeof b->target_key, "%s", target_key);
    lower_options lo = {.hw = &t->hw, .single_unit = true, .unit = unit};
    smelt_status s = lower_graph(ctx, g, &lo, &b->lp);
    if (s == SMELT_OK) {
        b->n_in = b->lp->prog.n_inputs;
        b->n_out = b->lp->prog.n_outputs;
        b->inputs = smelt_calloc((size_t)b->n_in + 1, sizeof *b->inputs);
        b->expected = smelt_calloc((size_t)b->n_out + 1, sizeof *b->expected);
        if (!b->inputs || !b->expected) s = oom(ctx);
    }
    for (int i = 0; s == SMELT_OK && i < b->n_in; i++) {
        s = alloc_like(ctx, b->lp->unit_inputs[i], &b->inputs[i]);
        if (s == SMELT_OK) io_fill_random(&b->inputs[i], 1 + (uint64_t)i, 2);
    }
    if (s == SMELT_OK) s = reference_outputs(ctx, b);
    if (s != SMELT_OK) {
        tune_bench_free(b);
        return s;
    }
    *out = b;
    return SMELT_OK;
}

void tune_bench_free(tune_bench *b)
{
    if (!b) return;
    for (int i = 0; b->inputs && i < b->n_in; i++) smelt_free(b->inputs[i].data);
    for (int i = 0; b->expected && i < b->n_out; i++) smelt_free(b->expected[i].data);
    smelt_free(b->inputs);
    smelt_free(b->expected);
    if (b->reference) tune_candidate_fini(b->reference);
    smelt_free(b->reference);
    lowered_program_free(b->lp);
    smelt_free(b);
}

/* ---- candidates ---- */

void tune_candidate_fini(tune_candidate *c)
{
    smelt_free(c->schedule);
    lowered_program_free(c->lp);
    smelt_free(c->lib);
    smelt_free(c->features);
    memset(c, 0, sizeof *c);
}

static void set_result(tune_candidate *c, tune_status st, const char *why)
{
    c->result.status = st;
    /* cut to fit: a reason is a one-line summary */
    snprintf(c->result.reason, sizeof c->result.reason, "%.*s",
             (int)sizeof c->result.reason - 1, why ? why : "");
}

smelt_status tune_candidate_init(smelt_ctx *ctx, tune_candidate *c, const te_graph *te,
                                 const smelt_hw *hw, const sch_knobs *knobs)
{
    memset(c, 0, sizeof *c);
    if (knobs) c->knobs = *knobs;
    sch_schedule s;
    sch_schedule_init(&s);
    smelt_ctx local = {.status = SMELT_OK};
    smelt_status st = sch_default_knobs(&local, te, hw, &c->knobs, &s);
    if (st == SMELT_OK) {
        smelt_strbuf sb;
        smelt_strbuf_init(&sb);
        sch_schedule_print(&s, &sb);
        c->schedule = sb.failed ? NULL : smelt_strdup(smelt_strbuf_cstr(&sb));
        smelt_strbuf_fini(&sb);
        if (!c->schedule) st = oom(ctx);
    } else if (st == SMELT_ERR_NOMEM) {
        st = oom(ctx);
    } else {
        set_result(c, TUNE_INVALID_SCHEDULE, local.message);
        st = SMELT_OK;
    }
    sch_schedule_fini(&s);
    return st;
}

static const char *candidate_text(void *user, const char *key)
{
    (void)key; /* a single-unit program: every lookup is the candidate's */
    return user;
}

smelt_status tune_lower_candidate(smelt_ctx *ctx, tune_bench *b, tune_candidate *c)
{
    sch_source src = {b->target_key, candidate_text, c->schedule};
    lower_options lo = {.hw = &b->target->hw, .schedules = &src, .single_unit = true,
                        .unit = b->unit};
    smelt_ctx local = {.status = SMELT_OK};
    smelt_status s = lower_graph(&local, b->g, &lo, &c->lp);
    if (s == SMELT_ERR_NOMEM) return oom(ctx);
    if (s == SMELT_OK && c->lp->n_stored != 1) {
        lowered_program_free(c->lp);
        c->lp = NULL;
        set_result(c, TUNE_INVALID_SCHEDULE, "the schedule does not replay on the task");
    } else if (s != SMELT_OK) {
        set_result(c, TUNE_BUILD_ERROR, local.message);
    }
    return SMELT_OK;
}

/* ---- building, several compilers at once ---- */

static smelt_status emit(smelt_ctx *ctx, const tune_bench *b, const tune_candidate *c,
                         smelt_strbuf *src)
{
    smelt_strbuf_init(src);
    smelt_status s = cg_emit_program(ctx, &c->lp->prog, b->target, src);
    if (s == SMELT_OK && src->failed) s = oom(ctx);
    return s;
}

/* Fill the cache with the candidates' libraries from forked children. */
static void prebuild(smelt_ctx *ctx, const tune_bench *b, tune_candidate *const *cs, int n,
                     int jobs)
{
    int running = 0;
    for (int i = 0; i <= n; i++) {
        while (running > 0 && (running >= jobs || i == n)) {
            if (waitpid(-1, NULL, 0) > 0 || errno != EINTR) running--;
        }
        if (i == n) break;
        tune_candidate *c = cs[i];
        if (!c->lp || c->result.status != TUNE_OK) continue;
        smelt_strbuf src;
        if (emit(ctx, b, c, &src) != SMELT_OK) {
            smelt_strbuf_fini(&src);
            smelt_ctx_clear(ctx);
            continue;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            smelt_ctx local = {.status = SMELT_OK};
            char *lib = NULL;
            _exit(cg_build_shared(&local, smelt_strbuf_cstr(&src), b->target, &lib) == SMELT_OK ? 0 : 1);
        }
        smelt_strbuf_fini(&src);
        if (pid > 0) running++;
    }
}

smelt_status tune_build_candidates(smelt_ctx *ctx, tune_bench *b, tune_candidate *const *cs,
                                   int n, const tune_measure_options *o)
{
    if (o->build_jobs > 1 && n > 1) prebuild(ctx, b, cs, n, o->build_jobs);
    for (int i = 0; i < n; i++) {
        tune_candidate *c = cs[i];
        if (!c->lp || c->result.status != TUNE_OK) continue;
        smelt_strbuf src;
        smelt_status s = emit(ctx, b, c, &src);
        smelt_ctx local = {.status = SMELT_OK};
        if (s == SMELT_OK && cg_build_shared(&local, smelt_strbuf_cstr(&src), b->target, &c->lib) != SMELT_OK) {
            if (local.status == SMELT_ERR_NOMEM) s = oom(ctx);
            else set_result(c, TUNE_BUILD_ERROR, local.message);
        }
        smelt_strbuf_fini(&src);
        SMELT_TRY(s);
    }
    return SMELT_OK;
}

/* ---- running in a child ---- */

typedef struct child_report {
    int status;
    double ms, spread;
    int runs;
    bool paired;      /* timed against the reference, alternating */
    double ref_ms;    /* the reference's median */
    double rel;       /* median over the pairs of candidate / reference */
    char reason[160];
} child_report;

typedef enum fault { FAULT_NONE, FAULT_CRASH, FAULT_HANG, FAULT_WRONG } fault;

static fault injected_fault(long ordinal)
{
    const char *spec = getenv("SMELT_TUNE_FAULTS");
    static const char *const names[] = {"crash:", "hang:", "wrong:"};
    for (int k = 0; spec && k < 3; k++) {
        for (const char *p = strstr(spec, names[k]); p; p = strstr(p + 1, names[k]))
            if (strtol(p + strlen(names[k]), NULL, 10) == ordinal) return (fault)(k + 1);
    }
    return FAULT_NONE;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bool close_enough(double got, double want)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= MEASURE_ATOL + MEASURE_RTOL * fabs(want);
}

/* Index of the first element that differs, or -1. */
static int64_t first_mismatch(const smelt_tensor *want, const void *got)
{
    int64_t n = smelt_tensor_numel(want);
    if (want->dtype == SMELT_DT_FLOAT32) {
        const float *w = want->data, *g = got;
        for (int64_t i = 0; i < n; i++)
            if (!close_enough(g[i], w[i])) return i;
        return -1;
    }
    if (want->dtype == SMELT_DT_FLOAT64) {
        const double *w = want->data, *g = got;
        for (int64_t i = 0; i < n; i++)
            if (!close_enough(g[i], w[i])) return i;
        return -1;
    }
    size_t es = smelt_dtype_size(want->dtype);
    for (int64_t i = 0; i < n; i++)
        if (memcmp((const char *)want->data + (size_t)i * es, (const char *)got + (size_t)i * es, es))
            return i;
    return -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The child's eviction buffer (--flush-mb): touching one byte per cache
 * line of it before a timed run pushes the task's data out of the caches. */
static unsigned char *flush_buf;
static size_t flush_bytes;

static void flush_caches(void)
{
    for (size_t i = 0; i < flush_bytes; i += 64) flush_buf[i]++;
}

typedef struct timed_model {
    smelt_rt_model *m;
    const void *const *ins;
    const size_t *in_sizes;
    int n_in;
    void *const *outs;
    const size_t *out_sizes;
    int n_out;
} timed_model;

static void run_model(const timed_model *x)
{
    smelt_rt_model_run(x->m, x->ins, x->in_sizes, x->n_in, x->outs, x->out_sizes, x->n_out);
}

int tune_pair_steps(int k, bool paired, tune_pair_step *out)
{
    if (!paired) {
        out[0] = (tune_pair_step){.reference = false, .timed = true};
        return 1;
    }
    bool ref_first = k % 2 == 0; /* ABBA: the second of two runs can find the
                                  * caches warmer or colder (ref always second
                                  * measured the same code 5% apart) */
    for (int i = 0; i < 2; i++) {
        bool ref = ref_first == (i == 0);
        out[2 * i] = (tune_pair_step){.reference = ref, .timed = false};
        out[2 * i + 1] = (tune_pair_step){.reference = ref, .timed = true};
    }
    return 4;
}

static double time_run(const timed_model *x)
{
    if (flush_buf) flush_caches();
    double t0 = now_ms();
    run_model(x);
    return now_ms() - t0;
}

/* Time c until min_ms of its runs have passed (at least 5 runs), each run
 * paired with one of ref when ref is set (tune_pair_steps). */
static void child_time(const timed_model *c, const timed_model *ref, double min_ms, child_report *r)
{
    static double t[MEASURE_MAX_RUNS], tr[MEASURE_MAX_RUNS], ratio[MEASURE_MAX_RUNS];
    int runs = 0;
    double spent = 0, start = now_ms();
    while (runs < MEASURE_MAX_RUNS) {
        tune_pair_step steps[TUNE_PAIR_MAX_STEPS];
        int n = tune_pair_steps(runs, ref != NULL, steps);
        for (int i = 0; i < n; i++) {
            const timed_model *x = steps[i].reference ? ref : c;
            if (!steps[i].timed) run_model(x);
            else if (steps[i].reference) tr[runs] = time_run(x);
            else t[runs] = time_run(x);
        }
        spent += t[runs];
        if (ref) ratio[runs] = tr[runs] > 0 ? t[runs] / tr[runs] : 1;
        runs++;
        if (runs >= 5 && spent >= min_ms) break;
        if (runs >= 3 && now_ms() - start >= MEASURE_MAX_MS) break;
    }
    qsort(t, (size_t)runs, sizeof t[0], cmp_double);
    r->runs = runs;
    r->ms = t[runs / 2];
    r->spread = r->ms > 0 ? (t[runs * 9 / 10] - t[runs / 10]) / r->ms : 0;
    r->paired = ref != NULL;
    if (!ref) return;
    qsort(tr, (size_t)runs, sizeof tr[0], cmp_double);
    qsort(ratio, (size_t)runs, sizeof ratio[0], cmp_double);
    r->ref_ms = tr[runs / 2];
    r->rel = ratio[runs / 2];
}

/* The reference's model in the child, or NULL (the timing goes unpaired). */
static smelt_rt_model *load_reference(const tune_bench *b, const tune_measure_options *o)
{
    const tune_candidate *ref = b->reference;
    if (!ref || !ref->lib) return NULL;
    smelt_ctx ctx = {.status = SMELT_OK};
    void *handle = NULL;
    const smelt_rt_module_info *info = NULL;
    char err[256];
    if (cg_load_module(&ctx, ref->lib, &handle, &info) != SMELT_OK) return NULL;
    return smelt_rt_model_from_info(info, ref->lp->prog.weights, o->threads, err, sizeof err);
}

/* The child's whole job; never returns. */
static _Noreturn void child_run(const tune_bench *b, const tune_candidate *c,
                                const tune_measure_options *o, fault f, int fd, pid_t parent)
{
    child_report r = {.status = TUNE_RUN_ERROR};
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
#ifdef __linux__
    /* Only the tuner kills a hung candidate: if the tuner dies first (a
     * killed MPI rank, a killed run), the candidate must die with it */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);
#else
    (void)parent;
#endif
    smelt_ctx ctx = {.status = SMELT_OK};
    void *handle = NULL;
    const smelt_rt_module_info *info = NULL;
    char err[256] = "";
    smelt_rt_model *m = NULL;
    if (cg_load_module(&ctx, c->lib, &handle, &info) != SMELT_OK)
        snprintf(r.reason, sizeof r.reason, "%.*s", (int)sizeof r.reason - 1, ctx.message);
    else if (!(m = smelt_rt_model_from_info(info, c->lp->prog.weights, o->threads, err, sizeof err)))
        snprintf(r.reason, sizeof r.reason, "%s", err);
    const void *ins[TE_GROUP_MAX_IO];
    void *outs[TE_GROUP_MAX_IO];
    size_t in_sizes[TE_GROUP_MAX_IO], out_sizes[TE_GROUP_MAX_IO];
    for (int i = 0; m && i < b->n_in; i++) {
        ins[i] = b->inputs[i].data;
        in_sizes[i] = smelt_tensor_nbytes(&b->inputs[i]);
    }
    for (int i = 0; m && i < b->n_out; i++) {
        out_sizes[i] = smelt_tensor_nbytes(&b->expected[i]);
        outs[i] = calloc(out_sizes[i] ? out_sizes[i] : 1, 1);
        if (!outs[i]) m = NULL;
    }
    if (m && smelt_rt_model_run(m, ins, in_sizes, b->n_in, outs, out_sizes, b->n_out) != SMELT_RT_OK)
        snprintf(r.reason, sizeof r.reason, "%s", smelt_rt_model_error(m));
    else if (m) {
        if (f == FAULT_CRASH) abort();
        if (f == FAULT_HANG)
            for (;;) pause();
        if (f == FAULT_WRONG && b->n_out > 0) /* an exponent bit of a float32 */
            ((unsigned char *)outs[0])[out_sizes[0] >= 4 ? 3 : 0] ^= 0x40;
        r.status = TUNE_OK;
        for (int i = 0; i < b->n_out && r.status == TUNE_OK; i++) {
            int64_t at = first_mismatch(&b->expected[i], outs[i]);
            if (at >= 0) {
                r.status = TUNE_WRONG;
                snprintf(r.reason, sizeof r.reason, "output %d differs from the reference at element %lld",
                         i, (long long)at);
            }
        }
        if (r.status == TUNE_OK) {
            smelt_rt_model *ref = load_reference(b, o);
            flush_bytes = (size_t)o->flush_mb << 20;
            if (flush_bytes) flush_buf = calloc(flush_bytes, 1); /* none: timed warm */
            timed_model tc = {m, ins, in_sizes, b->n_in, outs, out_sizes, b->n_out};
            timed_model tref = {ref, ins, in_sizes, b->n_in, outs, out_sizes, b->n_out};
            child_time(&tc, ref ? &tref : NULL, o->min_ms, &r);
        }
    }
    ssize_t w = write(fd, &r, sizeof r);
    (void)w;
    _exit(0);
}

/* Wait for the child's report, or kill it at the deadline. */
static void wait_child(pid_t pid, int fd, double timeout_s, tune_result *res)
{
    child_report r;
    size_t got = 0;
    double deadline = now_ms() + timeout_s * 1e3;
    bool timed_out = false;
    while (got < sizeof r) {
        double left = deadline - now_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int k = poll(&p, 1, (int)(left < 1 ? 1 : left));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) continue;
        ssize_t n = read(fd, (char *)&r + got, sizeof r - got);
        if (n <= 0) break; /* closed: the child died before reporting */
        got += (size_t)n;
    }
    if (timed_out || got < sizeof r) kill(pid, SIGKILL);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    memset(res, 0, sizeof *res);
    if (timed_out) {
        res->status = TUNE_TIMEOUT;
        snprintf(res->reason, sizeof res->reason, "no result within %.1f s", timeout_s);
    } else if (got < sizeof r) {
        res->status = TUNE_CRASH;
        if (WIFSIGNALED(wstatus))
            snprintf(res->reason, sizeof res->reason, "killed by signal %d (%s)", WTERMSIG(wstatus),
                     strsignal(WTERMSIG(wstatus)));
        else
            snprintf(res->reason, sizeof res->reason, "exited with status %d before reporting",
                     WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    } else {
        res->status = (tune_status)r.status;
        res->ms = r.ms;
        res->spread = r.spread;
        res->runs = r.runs;
        res->paired = r.paired;
        res->ref_ms = r.ref_ms;
        res->rel = r.rel;
        snprintf(res->reason, sizeof res->reason, "%s", r.reason);
    }
}

/* Build the bench's reference (the default schedule) once; when it cannot
 * be built, timings go unpaired. */
static smelt_status ensure_reference(smelt_ctx *ctx, tune_bench *b, const tune_measure_options *o)
{
    if (b->reference_tried) return SMELT_OK;
    b->reference_tried = true;
    tune_candidate *ref = smelt_calloc(1, sizeof *ref);
    if (!ref) return oom(ctx);
    sch_knobs none = {{0}};
    smelt_status s = tune_candidate_init(ctx, ref, tune_bench_te(b), &b->target->hw, &none);
    if (s == SMELT_OK && ref->result.status == TUNE_OK) s = tune_lower_candidate(ctx, b, ref);
    if (s == SMELT_OK && ref->result.status == TUNE_OK) s = tune_build_candidates(ctx, b, &ref, 1, o);
    if (s == SMELT_OK && ref->result.status == TUNE_OK && ref->lib) {
        b->reference = ref;
        return SMELT_OK;
    }
    tune_candidate_fini(ref);
    smelt_free(ref);
    return s;
}

/* A paired timing as a time at the bench's anchor: rel x anchor. */
static void anchor_result(tune_bench *b, tune_result *res)
{
    if (res->status != TUNE_OK || !res->paired || res->ref_ms <= 0) return;
    if (b->anchor_ms <= 0) b->anchor_ms = res->ref_ms;
    res->raw_ms = res->ms;
    res->ms = res->rel * b->anchor_ms;
}

smelt_status tune_measure(smelt_ctx *ctx, tune_bench *b, tune_candidate *c,
                          const tune_measure_options *o)
{
    static long ordinal;
    if (!c->lib || c->result.status != TUNE_OK) return SMELT_OK;
    SMELT_TRY(ensure_reference(ctx, b, o));
    fault f = injected_fault(++ordinal);
    int fds[2];
    if (pipe(fds) != 0) return smelt_errf(ctx, SMELT_ERR_IO, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return smelt_errf(ctx, SMELT_ERR_IO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        child_run(b, c, o, f, fds[1], parent);
    }
    close(fds[1]);
    wait_child(pid, fds[0], o->timeout_s, &c->result);
    close(fds[0]);
    anchor_result(b, &c->result);
    return SMELT_OK;
}
