/* smelt runtime (libsmelt_rt): the only header a deployed model needs.
 *
 * Generated model code calls the thread pool through this ABI; applications
 * load a compiled model (a shared library from `smelt compile`, or the JIT's
 * in-memory build), bind inputs, run and read outputs.  C99, no dependencies
 * beyond libc, libm and pthreads.
 */
#ifndef SMELT_RT_H
#define SMELT_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SMELT_RT_ABI_VERSION 6 /* 2: run takes a smelt_rt_run_error, error sites;
                                * 3: per-call profile (call_ns, call_names);
                                * 4: run-time dims; 5: dims that follow one
                                * (smelt_rt_io_info.rt_add); 6: data-dependent
                                * counts (smelt_rt_dim_info.data) */

typedef enum smelt_rt_status {
    SMELT_RT_OK = 0,
    SMELT_RT_ERR_ARG = 1,      /* wrong input count/name/dtype/shape, NULL or short buffer */
    SMELT_RT_ERR_NOMEM = 2,
    SMELT_RT_ERR_IO = 3,       /* a weights file or library could not be read */
    SMELT_RT_ERR_INVALID = 4,  /* a module that is not a smelt module, or of another ABI */
    SMELT_RT_ERR_INTERNAL = 5,
    SMELT_RT_ERR_DATA = 6,     /* the data is invalid for an op (an index out of range, an
                                * integer division by zero): the message names the node */
} smelt_rt_status;

/* ---- Thread pool (used by generated code) ------------------------------------- */
typedef struct smelt_rt_pool smelt_rt_pool;

/* Body of a parallel loop: runs iterations [begin, end) of a loop of n. */
typedef void (*smelt_rt_task_fn)(void *closure, int64_t begin, int64_t end);

/* Every pool begins with this head.  Generated code calls the pool through
 * it (never by symbol), so a module has no undefined smelt_rt_* symbols and
 * loads with dlopen however the host linked libsmelt_rt (static, shared, or
 * the sources copied into an AOT package). */
typedef struct smelt_rt_pool_head {
    void (*parallel_for)(smelt_rt_pool *pool, int64_t n, smelt_rt_task_fn fn, void *closure);
} smelt_rt_pool_head;

/* A private pool with its own workers.  num_threads <= 0: the number of
 * cores available to the process. */
smelt_rt_pool *smelt_rt_pool_new(int num_threads);
/* A handle on the process-wide pool, limited to num_threads (<= 0: all of
 * it).  Every model loaded with num_threads != 1 takes one, so any number
 * of models share one set of workers.  The process-wide pool has the size
 * set by smelt_rt_set_pool_threads, else it grows to the largest count a
 * handle asked for (a larger request starts a new pool for new handles;
 * the old one stops when its last handle is freed); its workers stop when
 * the last handle is freed.  Free handles with smelt_rt_pool_free. */
smelt_rt_pool *smelt_rt_pool_shared(int num_threads);
/* Size of the process-wide pool (>= 1), or 0 to let it grow as above (the
 * default).  Applies to pools started after the call: call it before
 * loading models. */
void smelt_rt_set_pool_threads(int num_threads);
/* How many process-wide pools were started so far (for tests). */
int smelt_rt_shared_pools_started(void);
void smelt_rt_pool_free(smelt_rt_pool *pool);
int smelt_rt_pool_size(const smelt_rt_pool *pool);
/* Split [0, n) into contiguous chunks, one per thread, run fn on each and
 * wait for all.  pool may be NULL (runs inline).  One loop runs on a pool
 * at a time: a nested call, or a call from another thread while the pool
 * is busy, runs inline on the calling thread (same result, no waiting). */
void smelt_rt_parallel_for(smelt_rt_pool *pool, int64_t n, smelt_rt_task_fn fn, void *closure);

/* ---- What a generated module exports ------------------------------------------ */

/* A place in the model where generated code checks data at run time.  The
 * error message is "node 'NODE' (OP): " + message, with "{value}" and
 * "{position}" replaced by what the failed check reports. */
typedef struct smelt_rt_error_site {
    const char *node, *op, *message;
} smelt_rt_error_site;

/* Filled by a run's failed checks: the lowest site, and in it the lowest
 * position, wins.  The caller sets site = -1 and lock = 0 before the run. */
typedef struct smelt_rt_run_error {
    int lock; /* spin lock for the pool's threads */
    int site; /* index into error_sites, -1: no check failed */
    int64_t value, position;
    /* Profiling: when call_ns is non-NULL, the run adds each call's wall
     * time (clock_ns() after minus before, in ns) to call_ns[call], call
     * numbering the module's call_names.  NULL: nothing is timed. */
    int64_t *call_ns;
    int64_t (*clock_ns)(void);
} smelt_rt_run_error;

typedef struct smelt_rt_io_info {
    const char *name;  /* the model's input/output name (C string literal, escaped) */
    int dtype;         /* smelt_dtype / ONNX TensorProto.DataType value; the float8,
                          float4 and 4/2-bit integer types (17..26) take ONE BYTE
                          PER ELEMENT in the buffers (a float8/float4 code, an
                          int4/int2 value sign-extended to int8_t), not ONNX's
                          packed form: smelt_lowbit.h converts values */
    int rank;
    int64_t dims[8];  /* a run-time dim: its maximum */
    signed char rt[8]; /* 1 + the run-time dim (smelt_rt_module_info.rt_dims) dim d
                          follows, 0: a static dim */
    signed char rt_add[8]; /* dim d is that run-time dim's value plus rt_add[d]
                              (a key/value cache's present = past + 1) */
    int dense; /* with run-time dims: 1 when run() takes the buffer at the run's
                  dims (generated code reads its strides from the dims and stays
                  inside them), 0 when laid out at the maxima (the runtime copies
                  it through such a buffer) */
} smelt_rt_io_info;

/* Dim d of io in a run whose run-time dims have the values vals (NULL: at
 * the maxima). */
static inline int64_t smelt_rt_io_dim(const smelt_rt_io_info *io, int d, const int64_t *vals)
{
    return vals && io->rt[d] > 0 ? vals[io->rt[d] - 1] + io->rt_add[d] : io->dims[d];
}

/* A dim the module takes at run time (compiled with --dim NAME=MIN..MAX):
 * each run's value comes from its inputs' sizes; buffers inside the module
 * are laid out at the maximum (smelt_rt_model_run copies the inputs and
 * outputs with run-time dims through buffers of that layout). */
typedef struct smelt_rt_dim_info {
    const char *name;
    int64_t min, max;
    /* 1: a data-dependent count (NonMaxSuppression's selected rows), min 0:
     * the run writes its value; outputs with it need buffers for max rows
     * and smelt_rt_model_run_ex reports the run's value */
    int data;
} smelt_rt_dim_info;

typedef struct smelt_rt_module_info {
    int abi_version;         /* SMELT_RT_ABI_VERSION */
    int num_inputs, num_outputs;
    const smelt_rt_io_info *inputs, *outputs;
    int64_t arena_bytes;     /* scratch the entry needs, 64-byte aligned */
    int64_t weight_bytes;    /* size of the weight blob the entry reads */
    const unsigned char *embedded_weights; /* non-NULL when built with --embed-weights */
    /* Run the model: inputs/outputs in model order; arena has arena_bytes,
     * 64-byte aligned; returns 0, or non-zero when a temporary could not be
     * allocated or a check failed (then rterr->site >= 0), or
     * SMELT_RT_RUN_DEVICE_FAILED when a GPU target's device API failed
     * (its message went to stderr). */
    int (*run)(smelt_rt_pool *pool, const unsigned char *weights, unsigned char *arena,
               const void *const *inputs, void *const *outputs, smelt_rt_run_error *rterr);
    int num_error_sites;
    const smelt_rt_error_site *error_sites;
    /* The calls run makes, in order: each the name of the generated function
     * it runs (what `--dump-ir=tir` prints and `--schedule` takes), NULL for
     * a control step (If/Loop); num_calls 0 where the target times no calls. */
    int num_calls;
    const char *const *call_names;
    const char *const *call_nodes; /* per call: the model's nodes it runs, as
                                    * "FIRST .. LAST (N nodes)", or NULL */
    /* run-time dims; run() reads their values (int64 each, in order) at
     * rt_dims_offset in the arena, written by the caller before the call */
    int num_rt_dims;
    const smelt_rt_dim_info *rt_dims;
    int64_t rt_dims_offset;
} smelt_rt_module_info;

/* What run returns when a GPU module's device API (OpenCL, CUDA) failed. */
#define SMELT_RT_RUN_DEVICE_FAILED 2

/* Every generated module defines this symbol. */
#define SMELT_RT_MODULE_SYMBOL "smelt_module_info"

/* ---- Loading and running a compiled model ----------------------------------------
 *
 * Thread safety.  A loaded model is immutable after load except for its
 * pools of activation memory and the named API's state:
 *   - smelt_rt_model_run / smelt_rt_model_run_err may be called on one model
 *     from any number of threads at once.  The weights are shared; each call
 *     takes an activation arena from the model's free list (one is made at
 *     load, another is allocated the first time more calls overlap than there
 *     are arenas, and all are kept for reuse until the model is freed, so
 *     memory is bounded by the most calls ever running at once).  Parallel
 *     loops go to the process-wide pool (smelt_rt_pool_shared); a loop that
 *     finds it busy with another call runs on the calling thread.
 *   - A failed smelt_rt_model_run_err writes its message into the caller's
 *     buffer.  smelt_rt_model_run also keeps it in the model for
 *     smelt_rt_model_error, which with concurrent calls returns the message
 *     of whichever call failed last: use smelt_rt_model_run_err there.
 *   - The named API (set_input, invoke, get_output) keeps bound inputs and
 *     output buffers in the model: use it from one thread at a time (an
 *     invoke that overlaps another fails with SMELT_RT_ERR_ARG and says so).
 *   - Loading and freeing models may happen from any thread; freeing a model
 *     while a call on it is running is undefined.
 */
typedef struct smelt_rt_model smelt_rt_model;

/* Load a compiled module (.so) and its weight blob (NULL when embedded).
 * num_threads: 1 runs every loop on the calling thread (no pool); 0 uses
 * the whole process-wide pool; N > 1 at most N threads of it.
 * On failure returns NULL and, if err is not NULL, a message in err. */
smelt_rt_model *smelt_rt_model_load(const char *library_path, const char *weights_path,
                                    int num_threads, char *err, size_t err_size);
/* Wrap a module already in memory (e.g. linked statically in an AOT build). */
smelt_rt_model *smelt_rt_model_from_info(const smelt_rt_module_info *info,
                                         const unsigned char *weights, int num_threads,
                                         char *err, size_t err_size);
void smelt_rt_model_free(smelt_rt_model *m);

const smelt_rt_module_info *smelt_rt_model_info(const smelt_rt_model *m);
/* Threads a run's parallel loops may use (1: no pool). */
int smelt_rt_model_num_threads(const smelt_rt_model *m);

/* Checks count, dtype, shape and sizes of every buffer against the module's
 * description, then runs.  inputs[i]/outputs[i] point to dense row-major data
 * with the byte sizes given.  A module with run-time dims takes each dim's
 * value from the size of an input that has it as its only run-time dim (the
 * other inputs' and the outputs' sizes must then agree), within the range
 * it was compiled for; its outputs' dims follow (smelt_rt_model_run_dims).  On an argument error nothing is written to the
 * outputs and smelt_rt_model_error(m) says what was expected; on invalid data
 * (SMELT_RT_ERR_DATA) the outputs are unspecified and the message names the
 * node, the op and the offending value, as the reference kernels do. */
smelt_rt_status smelt_rt_model_run(smelt_rt_model *m, const void *const *inputs,
                                   const size_t *input_bytes, int num_inputs,
                                   void *const *outputs, const size_t *output_bytes,
                                   int num_outputs);
const char *smelt_rt_model_error(const smelt_rt_model *m);
/* smelt_rt_model_run with this call's message (on failure) in err (may be
 * NULL; err_size bytes, truncated): the form for concurrent callers. */
smelt_rt_status smelt_rt_model_run_err(smelt_rt_model *m, const void *const *inputs,
                                       const size_t *input_bytes, int num_inputs,
                                       void *const *outputs, const size_t *output_bytes,
                                       int num_outputs, char *err, size_t err_size);
/* smelt_rt_model_run_err that also adds each call's wall time in ns to
 * call_ns[k] (info->num_calls entries, named by info->call_names; the
 * caller zeroes them): a profile of where a run's time goes, per generated
 * function.  call_ns may be NULL (a plain run). */
smelt_rt_status smelt_rt_model_run_profiled(smelt_rt_model *m, const void *const *inputs,
                                            const size_t *input_bytes, int num_inputs,
                                            void *const *outputs, const size_t *output_bytes,
                                            int num_outputs, int64_t *call_ns, char *err,
                                            size_t err_size);

/* smelt_rt_model_run_profiled that also writes the run's value of each
 * run-time dim into run_dims (num_rt_dims values; may be NULL): a
 * data-dependent count (smelt_rt_dim_info.data) is known only after the run,
 * so its outputs' buffers are given for its maximum and their rows past its
 * value are left alone. */
smelt_rt_status smelt_rt_model_run_ex(smelt_rt_model *m, const void *const *inputs,
                                      const size_t *input_bytes, int num_inputs,
                                      void *const *outputs, const size_t *output_bytes,
                                      int num_outputs, int64_t *call_ns, int64_t *run_dims,
                                      char *err, size_t err_size);

/* The values of the run-time dims (module info's rt_dims, in order) that
 * inputs of these byte sizes give, into vals; SMELT_RT_ERR_ARG with a
 * message when they give none, disagree or fall outside the range.  An
 * output's dims are then its io dims with each run-time dim's value (a
 * data-dependent count's maximum: smelt_rt_model_run_ex gives its value). */
smelt_rt_status smelt_rt_model_run_dims(const smelt_rt_model *m, const size_t *input_bytes,
                                        int num_inputs, int64_t *vals, char *err,
                                        size_t err_size);
/* Bytes of io with the run-time dims at vals (NULL: at their maxima). */
size_t smelt_rt_io_bytes_at(const smelt_rt_io_info *io, const int64_t *vals);

/* Like smelt_rt_model_from_info, but reads the weight blob from a file
 * (weights_path may be NULL when the module embeds its weights).  The file
 * must hold exactly info->weight_bytes bytes. */
smelt_rt_model *smelt_rt_model_from_info_file(const smelt_rt_module_info *info,
                                              const char *weights_path, int num_threads,
                                              char *err, size_t err_size);

/* ---- Named access (for applications) ---------------------------------------------
 * A model owns one buffer per output, allocated at load.  Typical use:
 *
 *     smelt_rt_model_set_input(m, "x", data, sizeof data);
 *     if (smelt_rt_model_invoke(m) != SMELT_RT_OK) puts(smelt_rt_model_error(m));
 *     const float *y = smelt_rt_model_get_output(m, "y", &bytes);
 *
 * The named API is for one thread at a time per model (see "Thread
 * safety" above); threads that share a model call smelt_rt_model_run_err.
 */

/* Index of the input/output with this name, or -1. */
int smelt_rt_model_input_index(const smelt_rt_model *m, const char *name);
int smelt_rt_model_output_index(const smelt_rt_model *m, const char *name);

/* Bind input `name` to caller memory (not copied: it must stay valid and
 * unchanged until the next smelt_rt_model_invoke returns).  bytes must equal
 * the input's size (smelt_rt_io_bytes). */
smelt_rt_status smelt_rt_model_set_input(smelt_rt_model *m, const char *name,
                                         const void *data, size_t bytes);
smelt_rt_status smelt_rt_model_set_input_index(smelt_rt_model *m, int index,
                                               const void *data, size_t bytes);

/* Run with the bound inputs into the model's own output buffers.  Fails
 * naming the first input that was never bound. */
smelt_rt_status smelt_rt_model_invoke(smelt_rt_model *m);

/* The output's data (owned by the model; valid until the next invoke or
 * free) and its size in *bytes (may be NULL).  NULL, with a message in
 * smelt_rt_model_error, for an unknown name or before the first invoke. */
const void *smelt_rt_model_get_output(smelt_rt_model *m, const char *name, size_t *bytes);
const void *smelt_rt_model_get_output_index(smelt_rt_model *m, int index, size_t *bytes);

/* ---- Small helpers ------------------------------------------------------------ */
size_t smelt_rt_dtype_size(int dtype);      /* 0 for unknown or unsupported */
const char *smelt_rt_dtype_name(int dtype); /* "float32", ... ; "?" if unknown */
/* Bytes of a dense tensor described by io (0 if its dtype is unknown or the
 * size does not fit size_t). */
size_t smelt_rt_io_bytes(const smelt_rt_io_info *io);

#ifdef __cplusplus
}
#endif
#endif
