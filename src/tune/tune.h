/* The auto-tuner: finds schedules on the machine at hand and keeps them.
 *
 * Split as TVM's MetaSchedule is, each part replaceable:
 *   task     (task.c)     the unique workloads of the models, weighted
 *   space    (sched/)     the knobs of the default rules: sch_default_space
 *   measure  (measure.c)  build candidates in parallel, run each in a child
 *                         process (fork, rlimits, timeout) on real buffers,
 *                         check it against the reference kernels, time it
 *   features (features.c) loop-IR features of a candidate
 *   model    (model.c)    the cost model (XGBoost, ranking objective)
 *   search   (search.c)   evolutionary search guided by the model, random
 *                         search as the baseline, the task scheduler
 *   records  (records.c)  append-only JSON lines, schema version, target key
 * The compiler reads records only through sch_source (sched/choose.c).
 */
#ifndef SMELT_TUNE_H
#define SMELT_TUNE_H

#include "api/smelt_internal.h"
#include "codegen/codegen.h"
#include "lower/program.h"

#define TUNE_RECORD_SCHEMA 1

/* ---- target key ---------------------------------------------------------------
 * Which machine and compiler a measurement is valid for: the target's name,
 * for the host its CPU (vendor, family, model, model name) and the ISA
 * features the code uses, and the C compiler's identity. */
smelt_status tune_target_key(smelt_ctx *ctx, const cg_target *t, char *out, size_t cap);

/* ---- tasks ------------------------------------------------------------------- */
typedef struct tune_task {
    char key[SCH_KEY_LEN + 1];
    int model, unit;   /* where its first occurrence is: session model, unit */
    int weight;        /* occurrences over all models */
    double flops;      /* arithmetic of one run (a multiply-add counts 2) */
    char summary[160]; /* "conv_nchwc y[1,9,56,56,16] += rc*ry*rx*ri 24" */
    sch_knob_space space;
    int64_t space_size;
} tune_task;

typedef struct tune_task_list {
    tune_task *tasks;
    int n, cap;
} tune_task_list;

/* Add the tasks of g (optimised, static shapes) to list: a new workload
 * becomes a task, a known one gains weight. */
smelt_status tune_extract_tasks(smelt_ctx *ctx, const gr_graph *g, int model, const smelt_hw *hw,
                                const char *target_key, tune_task_list *list);
double tune_te_flops(const te_graph *te);
void tune_te_summary(const te_graph *te, const char *rule, char *out, size_t cap);
/* Candidates in a knob space (each knob's values plus the rule's own). */
int64_t tune_space_size(const sch_knob_space *sp);

/* ---- measurement ----------------------------------------------------------------- */
typedef enum tune_status {
    TUNE_OK,
    TUNE_INVALID_SCHEDULE, /* the knobs do not make a schedule (not measured) */
    TUNE_BUILD_ERROR,
    TUNE_CRASH,
    TUNE_TIMEOUT,
    TUNE_WRONG,            /* output differs from the reference kernels */
    TUNE_RUN_ERROR,
    TUNE_STATUS_COUNT_
} tune_status;

const char *tune_status_name(tune_status s);

typedef struct tune_result {
    tune_status status;
    double ms;      /* median of the timed runs; paired: rel x the bench's anchor */
    double spread;  /* (p90 - p10) / median of the candidate's own runs */
    int runs;
    bool paired;    /* each run followed by one of the default schedule */
    double raw_ms;  /* paired: the candidate's own median */
    double ref_ms;  /* paired: the default's median in the same child */
    double rel;     /* paired: median of the per-pair ratios candidate / default */
    char reason[160];
} tune_result;

typedef struct tune_measure_options {
    int threads;         /* threads the candidate runs on (0: all cores) */
    double min_ms;       /* time each candidate at least this long */
    double timeout_s;    /* a run longer than this is a hang */
    int build_jobs;      /* C compilers run at once */
    int flush_mb;        /* before each timed run, write this many MiB elsewhere (0: none):
                          * a task then starts from cold caches, as a layer of a whole
                          * model finds its weights (TVM's cache flush) */
} tune_measure_options;

/* A task ready to measure: its program inputs (seeded random data) and the
 * reference kernels' outputs on them. */
typedef struct tune_bench tune_bench;

smelt_status tune_bench_new(smelt_ctx *ctx, const gr_graph *g, int unit, const cg_target *t,
                            const char *target_key, tune_bench **out);
void tune_bench_free(tune_bench *b);

/* One candidate: its schedule text in, its lowered program and library out. */
typedef struct tune_candidate {
    sch_knobs knobs;
    char *schedule;         /* text (smelt_free) */
    lowered_program *lp;    /* set by tune_lower_candidate */
    char *lib;              /* set by tune_build_candidates */
    tune_result result;
    float *features;        /* TUNE_FEATURE_COUNT floats, or NULL */
} tune_candidate;

void tune_candidate_fini(tune_candidate *c);

/* The schedule text of te's default rules with these knobs; NULL text and
 * TUNE_INVALID_SCHEDULE in c->result when they do not make a schedule. */
smelt_status tune_candidate_init(smelt_ctx *ctx, tune_candidate *c, const te_graph *te,
                                 const smelt_hw *hw, const sch_knobs *knobs);
/* Lower the bench's unit with c's schedule. */
smelt_status tune_lower_candidate(smelt_ctx *ctx, tune_bench *b, tune_candidate *c);
/* Build the lowered candidates (up to jobs compilers at once); a failed
 * build marks its candidate TUNE_BUILD_ERROR. */
smelt_status tune_build_candidates(smelt_ctx *ctx, tune_bench *b, tune_candidate *const *cs,
                                   int n, const tune_measure_options *o);
/* The order of the runs of timing pair k (measure.c's child): with a
 * reference (paired), the reference first in even pairs and second in odd
 * ones, and each timed run right after an untimed run of the same model, so
 * that the model timed finds its own weights in the caches, not the other's
 * (a 16 MB GEMV timed alternately ran from DRAM and lost threading to a
 * record); unpaired, one timed run.  Fills out[0..n) and returns n (at most
 * TUNE_PAIR_MAX_STEPS). */
#define TUNE_PAIR_MAX_STEPS 4
typedef struct tune_pair_step {
    bool reference; /* the reference's run, else the candidate's */
    bool timed;
} tune_pair_step;
int tune_pair_steps(int k, bool paired, tune_pair_step *out);
/* Run a built candidate in a child process: correctness once, then timing. */
smelt_status tune_measure(smelt_ctx *ctx, tune_bench *b, tune_candidate *c,
                          const tune_measure_options *o);
/* The unit's te graph (owned by the bench). */
const te_graph *tune_bench_te(const tune_bench *b);

/* ---- records ------------------------------------------------------------------- */
typedef struct tune_record {
    char task[SCH_KEY_LEN + 1];
    char *target, *op, *schedule; /* owned */
    int64_t knobs[SCH_KNOB_COUNT_];
    tune_status status;
    double ms, spread, flops;
    double raw_ms, rel; /* paired timings (0: unpaired): own median, ratio to the default */
    bool verified;    /* re-measured against the default before acceptance */
    char reason[160];
} tune_record;

typedef struct tune_db {
    tune_record *recs;
    int n, cap;
    /* indexes (values: record index + 1; keys in `keys`):
     * "task|target" -> its best record, "task|target|schedule hash" -> the
     * first record of that schedule */
    smelt_arena keys;
    smelt_strmap by_task, by_schedule;
    /* what loading skipped, for the note the CLI prints */
    int other_target, bad_schema, malformed;
    char target_key[256];
} tune_db;

/* Caps on a records file (untrusted input). */
#define TUNE_RECORDS_MAX_BYTES ((size_t)256 << 20)
#define TUNE_RECORD_MAX_LINE (256 << 10)
#define TUNE_RECORDS_MAX 1000000

/* Load path (missing file: empty db).  Records of another target (when
 * target_key is not NULL) or schema are counted and skipped. */
smelt_status tune_db_load(smelt_ctx *ctx, const char *path, const char *target_key,
                          tune_db *db);
/* The same from memory (size capped at TUNE_RECORDS_MAX_BYTES). */
smelt_status tune_db_load_bytes(smelt_ctx *ctx, const void *data, size_t size,
                                const char *target_key, tune_db *db);
void tune_db_fini(tune_db *db);
smelt_status tune_db_add(smelt_ctx *ctx, tune_db *db, const tune_record *r);
/* The best record for a task on the db's target (tune_db_best_for: on
 * `target`): the fastest verified one, else the fastest valid one; NULL
 * when none. */
const tune_record *tune_db_best(const tune_db *db, const char *task);
const tune_record *tune_db_best_for(const tune_db *db, const char *task, const char *target);
/* Was this schedule text measured for this task (on the db's target)? */
const tune_record *tune_db_find(const tune_db *db, const char *task, const char *schedule);
/* A schedule source over db (best record per task). */
sch_source tune_db_source(tune_db *db);

/* One JSON line for r (with a trailing newline), appended to f and flushed. */
smelt_status tune_record_append(smelt_ctx *ctx, FILE *f, const tune_record *r);
smelt_status tune_record_write(smelt_ctx *ctx, smelt_strbuf *out, const tune_record *r);
/* Parse one line; SMELT_ERR_PARSE naming the problem. */
smelt_status tune_record_parse(smelt_ctx *ctx, const char *line, size_t len, tune_record *r);
void tune_record_fini(tune_record *r);

/* ---- runners -------------------------------------------------------------------
 * Where a batch of lowered candidates of one task is built and measured:
 * here (tune_local_runner), or spread over MPI ranks (cli/tune_mpi.c).  It
 * fills each candidate's result. */
typedef struct tune_runner {
    smelt_status (*run)(void *user, smelt_ctx *ctx, int task, tune_bench *b,
                        tune_candidate *const *cs, int n, const tune_measure_options *o);
    void *user;
} tune_runner;

tune_runner tune_local_runner(void);

/* ---- the session ------------------------------------------------------------- */
typedef struct tune_options {
    const char *records_path; /* appended to; read first to resume */
    const char *target;       /* NULL: host */
    int trials;               /* per task */
    double minutes;           /* whole-run budget (0: none) */
    int batch;                /* candidates per measured batch */
    int early_stop;           /* trials without a 1% gain before a task stops */
    bool random_search;       /* the baseline: no model, uniform picks */
    uint64_t seed;
    const char *plot_path;    /* SVG of best-so-far against trials */
    bool quiet;
    tune_measure_options measure;
    tune_runner runner;       /* zero: tune_local_runner */
} tune_options;

void tune_options_init(tune_options *o);

typedef struct tune_session tune_session;

smelt_status tune_session_new(smelt_ctx *ctx, const tune_options *o, tune_session **out);
void tune_session_free(tune_session *s);
/* Optimise the model's graph and add its tasks (merged by key). */
smelt_status tune_session_add_model(smelt_ctx *ctx, tune_session *s, smelt_model *m,
                                    const char *name);
int tune_session_num_tasks(const tune_session *s);
const tune_task *tune_session_task(const tune_session *s, int i);
/* The key of the target the session measures for. */
const char *tune_session_target_key(const tune_session *s);
/* Task i's bench, made on first use and kept; *out NULL when the task
 * cannot be measured (the reason was printed unless quiet).  For a runner
 * that measures a task somewhere else than the session's own loop (an MPI
 * worker rank). */
smelt_status tune_session_bench(smelt_ctx *ctx, tune_session *s, int i, tune_bench **out);
/* Measure the default schedule of every task (--list-tasks). */
smelt_status tune_session_measure_defaults(smelt_ctx *ctx, tune_session *s);
/* Measure task's schedule under knobs (--list-tasks --knobs): *out's status
 * and reason say when it could not be built or failed. */
smelt_status tune_session_measure_knobs(smelt_ctx *ctx, tune_session *s, int task,
                                       const sch_knobs *knobs, tune_result *out);
double tune_session_default_ms(const tune_session *s, int task);
/* Tune until every task used its trials or stopped improving, or the time
 * is up, appending every measurement to the records file. */
smelt_status tune_session_run(smelt_ctx *ctx, tune_session *s);
/* Best time (ms) after each trial of a task, records included; *n entries
 * (0 before any measurement). */
const double *tune_session_history(const tune_session *s, int task, int *n);
/* An SVG of each task's speed-up over its default against trials, and their
 * geometric mean. */
smelt_status tune_plot(smelt_ctx *ctx, const tune_session *s, const char *path);

#endif
