/* smelt — user-written operators and schedules (tensor expressions).
 *
 * Declare what to compute, then how:
 *
 *   smelt_te_graph *g = smelt_te_graph_new(ctx);
 *   int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
 *   smelt_te_tensor *A = smelt_te_placeholder(g, "A", SMELT_DT_FLOAT32, 2, sa);
 *   smelt_te_tensor *B = smelt_te_placeholder(g, "B", SMELT_DT_FLOAT32, 2, sb);
 *   smelt_te_tensor *C = smelt_te_compute(g, "C", SMELT_DT_FLOAT32, 2, sc, body, &ab);
 *   //   body(g, idx, user): k = smelt_te_reduce_axis(g, "k", K);
 *   //                       return smelt_te_sum(g, A[idx0, k] * B[k, idx1], 1, &k);
 *   smelt_te_schedule *s = smelt_te_schedule_new(g, 1, &C);
 *   smelt_te_tile(s, "C", "i0", "i1", 8, 16);           // errors name the step
 *   smelt_te_vectorize(s, "C", "i1.i");
 *   puts(smelt_te_lower(s, 3, (smelt_te_tensor *[]){A, B, C}));
 *   smelt_te_func *f = smelt_te_build(s, 3, args, "host", 0);
 *   smelt_te_func_call(f, 3, (void *[]){a, b, c}, (size_t[]){sizeof a, ...});
 *
 * Names: tensors are stages of the schedule and reduce axes are iteration
 * variables, so their names are 1-63 characters without blanks, '.' (split
 * and fuse results are NAME.o / NAME.i / A.B), '#' or control characters, and
 * unique in the graph; the data axes of a compute are i0, i1, ...  Names
 * never reach the generated C raw (buffers are numbered; comments escaped).
 *
 * Errors: every call on a graph, its schedules and functions records its
 * error in the ctx the graph was created with (first error wins, as in
 * smelt.h).  Expression builders return NULL on error, and return NULL
 * without a new error when given a NULL operand, so a body can be built
 * without checking each step; smelt_te_compute then fails.
 *
 * Reads must stay inside the tensor (A[i + 1] at the last i is not
 * checked, as in TVM and Halide); a read through an index outside the
 * tensor is undefined behaviour of the generated code.
 */
#ifndef SMELT_TE_API_H
#define SMELT_TE_API_H

#include "smelt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct smelt_te_graph smelt_te_graph;
typedef struct smelt_te_tensor smelt_te_tensor;
typedef struct smelt_te_expr smelt_te_expr;
typedef struct smelt_te_axis smelt_te_axis;
typedef struct smelt_te_schedule smelt_te_schedule;
typedef struct smelt_te_func smelt_te_func;

/* ---- Graphs and tensors ---------------------------------------------------- */

smelt_te_graph *smelt_te_graph_new(smelt_ctx *ctx);
/* Free the graph's schedules first; functions built from it stay valid (they
 * keep using the ctx, which must outlive them). */
void smelt_te_graph_free(smelt_te_graph *g);

smelt_te_tensor *smelt_te_placeholder(smelt_te_graph *g, const char *name, smelt_dtype dtype,
                                      int rank, const int64_t *shape);

/* The body receives one index expression per output dim (rank of them). */
typedef smelt_te_expr *(*smelt_te_body_fn)(smelt_te_graph *g, smelt_te_expr *const *idx,
                                           void *user);
/* dtype: the tensor's element type; SMELT_DT_UNDEFINED takes the body's.  A
 * body that is not a reduction is cast to dtype; a reduction must have it. */
smelt_te_tensor *smelt_te_compute(smelt_te_graph *g, const char *name, smelt_dtype dtype,
                                  int rank, const int64_t *shape, smelt_te_body_fn body,
                                  void *user);

/* Without callbacks: begin returns the index expressions (rank of them, in
 * idx), end gives the body.  Nothing else may be declared in between. */
smelt_status smelt_te_compute_begin(smelt_te_graph *g, int rank, smelt_te_expr **idx);
smelt_te_tensor *smelt_te_compute_end(smelt_te_graph *g, const char *name, smelt_dtype dtype,
                                      int rank, const int64_t *shape, smelt_te_expr *body);

const char *smelt_te_tensor_name(const smelt_te_tensor *t);
smelt_dtype smelt_te_tensor_dtype(const smelt_te_tensor *t);
int smelt_te_tensor_rank(const smelt_te_tensor *t);
int64_t smelt_te_tensor_dim(const smelt_te_tensor *t, int d);

/* ---- Expressions ----------------------------------------------------------- */

/* A reduce axis [0, extent), for smelt_te_reduce in one compute's body. */
smelt_te_axis *smelt_te_reduce_axis(smelt_te_graph *g, const char *name, int64_t extent);
smelt_te_expr *smelt_te_axis_expr(smelt_te_graph *g, const smelt_te_axis *a);

smelt_te_expr *smelt_te_const_int(smelt_te_graph *g, smelt_dtype dtype, int64_t v);
smelt_te_expr *smelt_te_const_float(smelt_te_graph *g, smelt_dtype dtype, double v);
/* t[idx[0], ..., idx[n-1]]; n must be t's rank, indices integers. */
smelt_te_expr *smelt_te_read(smelt_te_graph *g, const smelt_te_tensor *t, int n,
                             smelt_te_expr *const *idx);

typedef enum smelt_te_binop {
    SMELT_TE_ADD, SMELT_TE_SUB, SMELT_TE_MUL,
    SMELT_TE_DIV,      /* floats: division; integers: C's truncating division */
    SMELT_TE_MOD,      /* integers: C's remainder */
    SMELT_TE_FLOORDIV, /* integers: rounding to -inf */
    SMELT_TE_FLOORMOD,
    SMELT_TE_MIN, SMELT_TE_MAX,
    SMELT_TE_EQ, SMELT_TE_NE, SMELT_TE_LT, SMELT_TE_LE, SMELT_TE_GT, SMELT_TE_GE, /* -> bool */
    SMELT_TE_AND, SMELT_TE_OR, /* bool operands */
    SMELT_TE_BINOP_COUNT_
} smelt_te_binop;

/* Both operands of one dtype (no implicit promotion). */
smelt_te_expr *smelt_te_binary(smelt_te_graph *g, smelt_te_binop op, smelt_te_expr *a,
                               smelt_te_expr *b);
smelt_te_expr *smelt_te_neg(smelt_te_graph *g, smelt_te_expr *a);
smelt_te_expr *smelt_te_not(smelt_te_graph *g, smelt_te_expr *a);
/* cond (bool) ? t : f; only the chosen side is evaluated (a guarded read). */
smelt_te_expr *smelt_te_select(smelt_te_graph *g, smelt_te_expr *cond, smelt_te_expr *t,
                               smelt_te_expr *f);
smelt_te_expr *smelt_te_cast(smelt_te_graph *g, smelt_dtype dtype, smelt_te_expr *a);
/* A math function of float arguments: exp log sqrt tanh erf abs floor ceil
 * round sin cos sigmoid isnan isinf (one argument), pow fmod (two). */
smelt_te_expr *smelt_te_call(smelt_te_graph *g, const char *fn, int n,
                             smelt_te_expr *const *args);

typedef enum smelt_te_reduce_op {
    SMELT_TE_SUM, SMELT_TE_PROD, SMELT_TE_RMAX, SMELT_TE_RMIN
} smelt_te_reduce_op;
/* op over axes of src: only as the whole body of a compute. */
smelt_te_expr *smelt_te_reduce(smelt_te_graph *g, smelt_te_reduce_op op, smelt_te_expr *src,
                               int n, smelt_te_axis *const *axes);

smelt_dtype smelt_te_expr_dtype(const smelt_te_expr *e);

/* The graph's listing: tensors, shapes, bodies (owned by g; valid until the
 * next call on g). */
const char *smelt_te_graph_text(smelt_te_graph *g);

/* ---- Schedules --------------------------------------------------------------
 * A schedule of the graph's computes (declare only what the outputs need: a
 * compute no output reads is still computed, into a buffer of its own).  The first schedule of a
 * graph fixes its outputs (and nothing can be declared after it); later
 * schedules must name the same ones.  Each step is checked when added (the
 * whole schedule replays); an illegal step is not added and the error names
 * it: "schedule step 3 'split C i9 4': ...".  Iteration names: i0, i1, ...
 * and reduce axes by name; split makes N.o/N.i, fuse A.B; cache_write C makes
 * stage C.local, rfactor C.rf (sched/sched.h has the rules). */
smelt_te_schedule *smelt_te_schedule_new(smelt_te_graph *g, int n_outputs,
                                         smelt_te_tensor *const *outputs);
void smelt_te_schedule_free(smelt_te_schedule *s);

smelt_status smelt_te_split(smelt_te_schedule *s, const char *stage, const char *iter,
                            int64_t factor);
smelt_status smelt_te_tile(smelt_te_schedule *s, const char *stage, const char *x,
                           const char *y, int64_t fx, int64_t fy);
smelt_status smelt_te_fuse(smelt_te_schedule *s, const char *stage, const char *outer,
                           const char *inner);
smelt_status smelt_te_reorder(smelt_te_schedule *s, const char *stage, int n,
                              const char *const *iters);
smelt_status smelt_te_vectorize(smelt_te_schedule *s, const char *stage, const char *iter);
smelt_status smelt_te_unroll(smelt_te_schedule *s, const char *stage, const char *iter);
smelt_status smelt_te_parallel(smelt_te_schedule *s, const char *stage, const char *iter);
smelt_status smelt_te_compute_inline(smelt_te_schedule *s, const char *stage);
smelt_status smelt_te_compute_at(smelt_te_schedule *s, const char *stage, const char *consumer,
                                 const char *iter);
smelt_status smelt_te_cache_write(smelt_te_schedule *s, const char *stage);
smelt_status smelt_te_rfactor(smelt_te_schedule *s, const char *stage, const char *iter,
                              int64_t factor);
/* kernel: "smelt.gemm_f32" or "smelt.transpose_f32" (sched/sched.h). */
smelt_status smelt_te_tensorize(smelt_te_schedule *s, const char *stage, const char *iter,
                                const char *kernel);
/* Steps in the text form, one a line ('#' starts a comment); each checked
 * as it is added, an error names its line: "line 2: schedule step ...". */
smelt_status smelt_te_apply_text(smelt_te_schedule *s, const char *text);
/* The steps so far in the text form (owned by s, valid until its next call). */
const char *smelt_te_schedule_text(smelt_te_schedule *s);
/* The leaf loops of a stage, outermost first, blank-separated (owned by s). */
const char *smelt_te_stage_loops(smelt_te_schedule *s, const char *stage);

/* ---- Lowering and building -------------------------------------------------
 * args: every placeholder the outputs read and every output, in the order a
 * call passes their buffers (placeholders are read, outputs written). */

/* The lowered loop IR as text (owned by s, valid until its next call), or
 * NULL on error. */
const char *smelt_te_lower(smelt_te_schedule *s, int n_args, smelt_te_tensor *const *args);

/* Generate C for target ("host" or NULL, "avx512", "avx2", "generic"), build
 * it through the compile cache and load it; num_threads 0: the cores. */
smelt_te_func *smelt_te_build(smelt_te_schedule *s, int n_args, smelt_te_tensor *const *args,
                              const char *target, int num_threads);
void smelt_te_func_free(smelt_te_func *f);
/* Call on raw buffers, in args order; bytes[i] must be each one's size
 * (dense row-major).  Errors (a wrong size) go to the graph's ctx.  One call
 * at a time per function (the runtime model is not reentrant). */
smelt_status smelt_te_func_call(smelt_te_func *f, int n, void *const *buffers,
                                const size_t *bytes);
/* The generated C of the function (owned by f). */
const char *smelt_te_func_source(const smelt_te_func *f);

/* ---- Custom ops -------------------------------------------------------------
 * An ONNX node whose op type is not an ai.onnx op, in a domain other than
 * ai.onnx (e.g. "my.ops"), compiles like a built-in op once its definition is
 * registered: fn receives the node's inputs as tensors of their (static)
 * shapes and dtypes and sets outputs[0..n_outputs-1] to computes it declares
 * in g (no placeholders; names as above).  The same definition gives the
 * node's output types, its reference result (the te interpreter) and its
 * generated code (one function per node, default schedule rules).
 * Registration is process-wide (models loaded afterwards see it); a second
 * registration of (domain, op_type) replaces the first.  fn reports its own
 * failures with smelt_te_error (or returns a non-OK status).  Attributes on
 * custom nodes are refused. */
typedef smelt_status (*smelt_te_op_fn)(smelt_te_graph *g, int n_inputs,
                                       smelt_te_tensor *const *inputs, int n_outputs,
                                       smelt_te_tensor **outputs, void *user);
smelt_status smelt_te_register_op(smelt_ctx *ctx, const char *domain, const char *op_type,
                                  int n_inputs, int n_outputs, smelt_te_op_fn fn, void *user);
/* Record an error in the graph's ctx (for definitions and callbacks);
 * returns code. */
smelt_status smelt_te_error(smelt_te_graph *g, smelt_status code, const char *message);

#ifdef __cplusplus
}
#endif
#endif
