/* smelt — a deep-learning compiler.  Public compiler API.
 *
 * Every fallible call returns a smelt_status; on failure the context holds a
 * message (smelt_ctx_message) that names the node, the op and the problem.
 * Errors belong to the call that made them: every call taking a context
 * clears it first, so afterwards the context holds that call's error or
 * none.  Within one call the first error wins (it is the cause; what
 * follows from it is not reported over it).
 *
 * Thread safety:
 *   - A smelt_ctx belongs to one thread at a time: give each thread its own.
 *   - smelt_model_run may be called on one compiled model from many threads
 *     at once.  They share the weights and the generated code; each call
 *     gets its own activation memory (the runtime keeps one arena per call
 *     running at once and reuses them, see smelt_rt.h).  A model with
 *     dynamic shapes (compiled per input signature) runs one call at a time:
 *     concurrent calls wait for each other.  The first run compiles the model
 *     if smelt_model_compile was not called, once, while the others wait.
 *   - smelt_model_compile with other options replaces the compiled code;
 *     runs in flight finish on the old code.  Other calls that change a model
 *     (smelt_model_write_package, smelt_model_write_graph, freeing it) must
 *     not overlap calls on the same model.  Different models are independent.
 *   - Parallel loops of every model run on one process-wide worker pool
 *     (smelt_set_pool_threads); a loop that finds it busy with another
 *     call runs on its calling thread, so N threads never start N pools.
 *   - smelt_set_allocator is process-wide: set it before other calls.
 */
#ifndef SMELT_H
#define SMELT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version (also `smelt --version`, smelt.pc). */
#define SMELT_VERSION_MAJOR 0
#define SMELT_VERSION_MINOR 1
#define SMELT_VERSION_PATCH 0
#define SMELT_VERSION "0.1.0"
/* The version of the library linked (may differ from the header's). */
const char *smelt_version(void);

typedef enum smelt_status {
    SMELT_OK = 0,
    SMELT_ERR_IO,          /* a file could not be read or written */
    SMELT_ERR_PARSE,       /* malformed protobuf / npy / text */
    SMELT_ERR_MODEL,       /* well-formed file, invalid model (dangling edge, cycle...) */
    SMELT_ERR_UNSUPPORTED, /* valid model using something smelt does not implement */
    SMELT_ERR_SHAPE,       /* shapes or dtypes that do not fit an op */
    SMELT_ERR_ATTR,        /* bad or missing attribute */
    SMELT_ERR_LIMIT,       /* a size or count cap was hit */
    SMELT_ERR_NOMEM,       /* allocation failed */
    SMELT_ERR_ARG,         /* bad argument to an API call (wrong input name, NULL...) */
    SMELT_ERR_RUNTIME,     /* failure while executing (e.g. index out of range) */
    SMELT_ERR_INTERNAL,    /* a compiler bug */
    SMELT_STATUS_COUNT_
} smelt_status;

/* Element types; values equal ONNX's TensorProto.DataType. */
typedef enum smelt_dtype {
    SMELT_DT_UNDEFINED = 0,
    SMELT_DT_FLOAT32 = 1,
    SMELT_DT_UINT8 = 2,
    SMELT_DT_INT8 = 3,
    SMELT_DT_UINT16 = 4,
    SMELT_DT_INT16 = 5,
    SMELT_DT_INT32 = 6,
    SMELT_DT_INT64 = 7,
    SMELT_DT_STRING = 8,
    SMELT_DT_BOOL = 9,
    SMELT_DT_FLOAT16 = 10,
    SMELT_DT_FLOAT64 = 11,
    SMELT_DT_UINT32 = 12,
    SMELT_DT_UINT64 = 13,
    SMELT_DT_COMPLEX64 = 14,
    SMELT_DT_COMPLEX128 = 15,
    SMELT_DT_BFLOAT16 = 16,
    /* Low-bit types (ONNX IR 9-11).  smelt_tensor data holds ONE ELEMENT PER
     * BYTE for all of them: a float8/float4 element is its code (float4 in
     * the low 4 bits, high bits 0), an int4/int2 element its value as int8_t
     * (sign-extended), a uint4/uint2 element its value as uint8_t.  ONNX's
     * packed storage (two 4-bit or four 2-bit elements a byte, first in the
     * low bits) is used only in TensorProto data (initializers, .pb files);
     * smelt_pack_lowbit/smelt_unpack_lowbit convert. */
    SMELT_DT_FLOAT8E4M3FN = 17,
    SMELT_DT_FLOAT8E4M3FNUZ = 18,
    SMELT_DT_FLOAT8E5M2 = 19,
    SMELT_DT_FLOAT8E5M2FNUZ = 20,
    SMELT_DT_UINT4 = 21,
    SMELT_DT_INT4 = 22,
    SMELT_DT_FLOAT4E2M1 = 23,
    SMELT_DT_FLOAT8E8M0 = 24,
    SMELT_DT_UINT2 = 25,
    SMELT_DT_INT2 = 26,
    SMELT_DT_COUNT_
} smelt_dtype;

#define SMELT_MAX_RANK 8

typedef struct smelt_ctx smelt_ctx;

smelt_ctx *smelt_ctx_new(void);
void smelt_ctx_free(smelt_ctx *ctx);
smelt_status smelt_ctx_status(const smelt_ctx *ctx);
const char *smelt_ctx_message(const smelt_ctx *ctx);
void smelt_ctx_clear(smelt_ctx *ctx);
/* The node and op the recorded error blames ("" when it is not about one
 * node, e.g. a truncated file or a wrong input name). */
const char *smelt_ctx_node(const smelt_ctx *ctx);
const char *smelt_ctx_op(const smelt_ctx *ctx);

const char *smelt_status_name(smelt_status s);
const char *smelt_dtype_name(smelt_dtype dt);
size_t smelt_dtype_size(smelt_dtype dt); /* bytes per element in smelt's buffers */
/* Bits per element in ONNX's packed storage: 4 or 2 for the 4- and 2-bit
 * types, 8 * smelt_dtype_size otherwise (0 for unsupported types). */
int smelt_dtype_packed_bits(smelt_dtype dt);
/* One byte per element <-> ONNX's packed layout of `count` elements of a
 * 4- or 2-bit type (packed: ceil(count * bits / 8) bytes, unused high bits
 * zero).  For other types both copy the bytes.  Unpacking sign-extends int4
 * and int2.  Return the number of bytes written. */
size_t smelt_pack_lowbit(smelt_dtype dt, const void *unpacked, int64_t count, void *packed);
size_t smelt_unpack_lowbit(smelt_dtype dt, const void *packed, int64_t count, void *unpacked);

/* A dense tensor.  `data` is owned by whoever created the tensor; tensors
 * returned by smelt are freed with smelt_tensor_free. */
typedef struct smelt_tensor {
    smelt_dtype dtype;
    int rank;
    int64_t dims[SMELT_MAX_RANK];
    void *data;
    char *name; /* optional; owned */
} smelt_tensor;

int64_t smelt_tensor_numel(const smelt_tensor *t);
size_t smelt_tensor_nbytes(const smelt_tensor *t);
void smelt_tensor_free(smelt_tensor *t);    /* data, name and the struct */
void smelt_tensor_release(smelt_tensor *t); /* data and name; the struct stays */

/* ---- Sequence and optional values (ONNX seq(tensor), optional(...)) ----
 * A container is a smelt_tensor too: its dtype is the element type with
 * SMELT_DT_SEQUENCE_BIT (a sequence of tensors of that type) or
 * SMELT_DT_OPTIONAL_BIT (an optional tensor; both bits: an optional
 * sequence), rank 1, dims[0] the number of elements (an optional: 0 empty,
 * 1 present), and data an array of dims[0] smelt_tensor elements it owns
 * (an optional's element has the dtype without the optional bit).  An
 * element's own name is NULL.  smelt_tensor_free/release free containers
 * with their elements. */
#define SMELT_DT_SEQUENCE_BIT 0x100
#define SMELT_DT_OPTIONAL_BIT 0x200
int smelt_dtype_is_container(smelt_dtype dt);
smelt_dtype smelt_dtype_element(smelt_dtype dt); /* the type inside one container level */
/* Bytes a value holds: a tensor's data, or a container's element array and
 * its elements' bytes (0 for a malformed container). */
size_t smelt_value_nbytes(const smelt_tensor *t);
/* A deep copy of t into *dst (name not copied); 0 when out of memory
 * (nothing stays allocated). */
int smelt_value_copy(const smelt_tensor *t, smelt_tensor *dst);

/* Allocator hook for weights and long-lived data (tests inject failures). */
typedef struct smelt_allocator {
    void *(*alloc)(void *user, size_t size);
    void (*release)(void *user, void *ptr);
    void *user;
} smelt_allocator;
void smelt_set_allocator(const smelt_allocator *a); /* NULL restores malloc */

/* ---- Models ---------------------------------------------------------- */

typedef struct smelt_model smelt_model;

/* Load and import an ONNX model; shapes are inferred.  Returns NULL on
 * failure with the reason in ctx. */
smelt_model *smelt_model_load(smelt_ctx *ctx, const char *path);
smelt_model *smelt_model_load_bytes(smelt_ctx *ctx, const void *bytes, size_t size,
                                    const char *base_dir);
void smelt_model_free(smelt_model *m);

int smelt_model_num_inputs(const smelt_model *m);
int smelt_model_num_outputs(const smelt_model *m);
/* Describe input/output i: name, dtype, rank, dims (-1 for a symbolic dim). */
void smelt_model_input_info(const smelt_model *m, int i, const char **name, smelt_dtype *dt,
                            int *rank, int64_t dims[SMELT_MAX_RANK]);
void smelt_model_output_info(const smelt_model *m, int i, const char **name,
                             smelt_dtype *dt, int *rank, int64_t dims[SMELT_MAX_RANK]);

/* The name of symbolic dim d of input/output i (e.g. "batch"; "?3" for an
 * unnamed one); NULL when the dim is static. */
const char *smelt_model_input_dim_name(const smelt_model *m, int i, int d);
const char *smelt_model_output_dim_name(const smelt_model *m, int i, int d);

/* Give the symbolic input dim NAME (e.g. "batch") the value VALUE (>= 1)
 * before the first compile or run: shapes are inferred again, so a model
 * whose dims are all given compiles like a static one (JIT or AOT).  Runs
 * then check that inputs have that size.  SMELT_ERR_ARG for a name no input
 * dim has, or after the model was compiled or run. */
smelt_status smelt_model_set_dim(smelt_ctx *ctx, smelt_model *m, const char *name, int64_t value);

/* Make the symbolic input dim NAME a run-time dim of MIN..MAX (before the
 * first compile or run): the model compiles ONCE (JIT, or an AOT package),
 * with loops that take the dim's value from each run's inputs and memory
 * planned for MAX, and runs take inputs of any length in the range (the
 * outputs' dims follow).  MIN == MAX is smelt_model_set_dim.  Refused
 * (SMELT_ERR_UNSUPPORTED, naming the value or node) when a shape or a
 * constant depends on the dim other than as the dim itself; compiling
 * refuses ops that cannot take it at run time.  Up to 4 run-time dims, with
 * maxima at least 2 apart.  The model must have been loaded from a file or
 * bytes (it is imported again to check how shapes follow the dim). */
smelt_status smelt_model_set_dim_range(smelt_ctx *ctx, smelt_model *m, const char *name,
                                       int64_t min, int64_t max);

/* Declare that the symbolic input dim NAME always equals dim BASE + ADD
 * (|ADD| <= 8), before BASE is set: an attention mask [batch, past + 1]
 * exported with a symbol of its own beside a key/value cache [..., past,
 * ...].  Setting BASE (smelt_model_set_dim, smelt_model_set_dim_range)
 * then sets NAME too, so one compile for a range of BASE takes the mask at
 * its run's length.  SMELT_ERR_ARG for a name or base no input dim has, a
 * dim tied twice or to itself, or after the model was compiled or run. */
smelt_status smelt_model_tie_dim(smelt_ctx *ctx, smelt_model *m, const char *name,
                                 const char *base, int64_t add);

/* The graph's nodes in topological order, as imported (compiling optimises
 * the graph in place, so after smelt_model_compile these are the optimised
 * nodes).  Value names are "" for omitted optional inputs/outputs. */
int smelt_model_num_nodes(const smelt_model *m);
void smelt_model_node_info(const smelt_model *m, int i, const char **name, const char **op_type,
                           int *num_inputs, int *num_outputs);
const char *smelt_model_node_input(const smelt_model *m, int i, int k);
const char *smelt_model_node_output(const smelt_model *m, int i, int k);

/* Render the graph by the path's extension: .dot/.gv (DOT text), or
 * .svg/.png/.pdf through Graphviz's `dot` (SMELT_ERR_UNSUPPORTED when it is
 * not installed, SMELT_ERR_ARG for another extension). */
smelt_status smelt_model_write_graph(smelt_ctx *ctx, smelt_model *m, const char *path);

/* Index of the input/output with this name, or -1. */
int smelt_model_input_index(const smelt_model *m, const char *name);
int smelt_model_output_index(const smelt_model *m, const char *name);

/* Execute with the reference kernels.  inputs[i] binds graph input i (in
 * model order).  outputs receives num_outputs freshly allocated tensors. */
smelt_status smelt_model_run_reference(smelt_ctx *ctx, smelt_model *m,
                                       const smelt_tensor *inputs, int num_inputs,
                                       smelt_tensor *outputs, int num_outputs);

/* ---- Compiling ---------------------------------------------------------- */

typedef struct smelt_options {
    const char *target; /* "host" (default), "avx512", "avx2", "generic", "aarch64" (another
                           architecture: AOT packages, and smelt_check_test under qemu) */
    int num_threads;    /* 1: no pool; 0: the whole process-wide pool; N: at most N of it */
    int dump_c;         /* print the generated C to stdout */
    int embed_weights;  /* AOT: weights as const arrays in model.c */
    int opt_level;      /* graph optimisation -O0..-O3; smelt_options_init sets 2 */
    const char *disabled_passes; /* comma-separated pass names to skip (NULL: none) */
    const char *dump_ir_after;   /* pass name or "all": print the graph after it */
    /* Tuning records (`smelt tune -o FILE`): each generated function whose
     * workload has a valid record for this target gets the record's best
     * schedule; the others keep the default rules.  NULL: none. */
    const char *records;
    /* AOT packages: every symbol model.c exports and model.h's names under
     * this prefix (PREFIX_create, PREFIX_ARENA_BYTES...), so several
     * packages link into one program; NULL: "model". */
    const char *aot_prefix;
    /* A schedule file written by a person (sched/sched.h has the format): each
     * "task NAME" entry schedules the generated function of that name or
     * workload key, before records and default rules; an entry that does not
     * replay, or matches no function, fails compiling with an error naming
     * the file, the line and the step.  NULL: none. */
    const char *schedule;
} smelt_options;

/* The defaults (opt_level 2); a NULL options pointer means the same.  The
 * strings are borrowed and must outlive the model. */
void smelt_options_init(smelt_options *o);

/* Lower, generate C, build it (through the compile cache) and load it.
 * Called implicitly by smelt_model_run; o NULL keeps the options of the
 * last call (the defaults at first).  Compiling again with other options
 * builds again with them (target, threads, records, dump_c).  The graph
 * passes rewrite the graph once, in place: options they read (opt_level,
 * disabled_passes, dump_ir_after, a target of another vector width) cannot
 * change after that and are refused with SMELT_ERR_ARG (load the model
 * again).  Options are copied; their strings must outlive the model. */
smelt_status smelt_model_compile(smelt_ctx *ctx, smelt_model *m, const smelt_options *o);

/* Run the compiled model (compiling it first if needed).  Same contract as
 * smelt_model_run_reference.  Thread-safe (see the top of this file). */
smelt_status smelt_model_run(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                             int num_inputs, smelt_tensor *outputs, int num_outputs);

/* A profile of one run: smelt_model_run that also adds the wall time (ns) of
 * each call the compiled model makes to call_ns[k], k < smelt_model_num_calls
 * (the caller zeroes the array once and may accumulate over runs).  Call k
 * runs the generated function smelt_model_call_name(m, k) (the name
 * `--dump-ir=tir` prints and `--schedule` takes; NULL for an If/Loop step).
 * Compile first: the call count is 0 until the model is compiled.  Models
 * with symbolic dims are refused (bind them with smelt_model_set_dim); GPU
 * targets time no calls (num_calls 0). */
smelt_status smelt_model_run_profiled(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                      int num_inputs, smelt_tensor *outputs, int num_outputs,
                                      int64_t *call_ns);
int smelt_model_num_calls(smelt_model *m);
const char *smelt_model_call_name(smelt_model *m, int k);
/* The model's nodes call k runs: "FIRST .. LAST (N nodes)" (NULL as above). */
const char *smelt_model_call_nodes(smelt_model *m, int k);

/* Threads the compiled model's parallel loops may use (1: no pool); 0 when
 * it is not compiled (or has dynamic shapes). */
int smelt_model_compiled_threads(smelt_model *m);

/* smelt_model_run with the inputs bound by name, in any order: tensor k is
 * the model's input names[k] (names NULL: inputs[k].name).  Every input
 * exactly once; an unknown, repeated or missing name is SMELT_ERR_ARG
 * naming it and the model's inputs. */
smelt_status smelt_model_run_named(smelt_ctx *ctx, smelt_model *m, const char *const *names,
                                   const smelt_tensor *inputs, int num_inputs,
                                   smelt_tensor *outputs, int num_outputs);

/* Threads of the process-wide worker pool that every compiled model's
 * parallel loops share: N >= 1, or 0 (the default) for as many as the
 * largest num_threads asked for (the cores for 0).  Takes effect for
 * pools started later: call it before compiling. */
void smelt_set_pool_threads(int num_threads);

/* AOT: write a standalone package (model.c, model.h, weights, runtime,
 * Makefile, example main.c) into dir. */
smelt_status smelt_model_write_package(smelt_ctx *ctx, smelt_model *m, const char *dir,
                                       const smelt_options *o);

/* ---- Checking against stored outputs ----------------------------------------
 * One ONNX backend-test folder: DIR/model.onnx and DIR/test_data_set_N/
 * input_K.pb, output_K.pb.  Each data set is run and every output compared
 * elementwise (|got - want| <= atol + rtol * |want|; exact for integers). */
typedef enum smelt_check_mode {
    SMELT_CHECK_COMPILED = 0,
    SMELT_CHECK_REFERENCE,
    SMELT_CHECK_TE, /* the tensor-expression interpreter (slow) */
} smelt_check_mode;

typedef enum smelt_check_result {
    SMELT_CHECK_PASS = 0,
    SMELT_CHECK_FAIL,
    SMELT_CHECK_UNSUPPORTED, /* the model uses something smelt does not implement */
} smelt_check_result;

typedef struct smelt_check_options {
    smelt_check_mode mode;
    double rtol, atol;     /* smelt_check_options_init: 1e-3, 1e-7 */
    smelt_options compile; /* for SMELT_CHECK_COMPILED */
    /* Symbolic dims given to each model that has them before its data sets
     * run (compiled mode): dim_min[i] < dim_max[i] makes dim i a run-time dim
     * (smelt_model_set_dim_range: one compile serves every data set), equal
     * values give it that value.  num_dims 0: none (runs specialise). */
    int num_dims;
    const char *const *dim_names;
    const int64_t *dim_min, *dim_max;
} smelt_check_options;

void smelt_check_options_init(smelt_check_options *o);
/* Run the test in dir; why (cap bytes) receives the reason for anything but
 * a pass: the first differing output, or the error's message. */
smelt_check_result smelt_check_test(const char *dir, const smelt_check_options *o, char *why,
                                    size_t cap);

/* ---- Tuning ---------------------------------------------------------------------
 * The auto-tuner (what `smelt tune` runs): searches schedules for the
 * models' functions on this machine, appending every measurement to the
 * records file, which smelt_options.records then applies. */
typedef struct smelt_tune_options {
    const char *records;  /* the JSON-lines file appended to (required) */
    const char *target;   /* NULL: host */
    int trials;           /* per task; 0: the tuner's default */
    double minutes;       /* whole-run budget; 0: none */
    int threads;          /* threads the candidates run on; 0: all cores */
    int quiet;            /* no progress lines on stdout */
    int opt_level;        /* graph optimisation, as in smelt_options */
} smelt_tune_options;

void smelt_tune_options_init(smelt_tune_options *o);
smelt_status smelt_tune(smelt_ctx *ctx, const char *const *model_paths, int num_models,
                        const smelt_tune_options *o);

#ifdef __cplusplus
}
#endif
#endif
