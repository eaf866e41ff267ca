/* Schedules as data.
 *
 * A schedule is an ordered list of steps (primitives with arguments) over the
 * stages of a te_graph.  It can be printed, parsed, stored and replayed; the
 * tuner mutates it.  Replaying it on a te_graph gives a sch_state: per stage,
 * its iteration variables (roots, split/fuse results), their leaf order and
 * annotations, and where the stage is computed (root, inline, or at a loop of
 * a consumer).  Lowering turns a sch_state into loop IR.
 *
 * Text form, one step per line (iter names: roots are the te axis order
 * i0, i1, ... then reduce axes by their te names; split makes NAME.o/NAME.i;
 * fuse makes A.B):
 *   split C i1 16          fuse C i0 i1         reorder C i0 i1.o k i1.i
 *   vectorize C i1.i       unroll C k           parallel C i0.i1
 *   compute_inline T       compute_at T C i0.o  cache_write C
 *   tile C i0 i1 8 16      (= split i0 8, split i1 16, reorder i0.o i1.o i0.i i1.i)
 *   tensorize C i0.i smelt.gemm_f32   rfactor C r0 16
 *   bind C i0.o blockIdx.x             bind C i0.i threadIdx.x
 *   cache_read C A k.o
 * bind (GPU targets: opencl, cuda) makes a data loop the blocks of a kernel
 * launch (blockIdx.x; OpenCL's work-groups) or the threads of a block
 * (threadIdx.x; work-items).  A block loop must be its kernel's outermost
 * loop; code generation checks the rest (codegen/gpu_emit.c).  CPU targets
 * refuse bound loops.
 * cache_read STAGE BUFFER ITER (GPU targets) stages in the block's shared
 * memory (CUDA __shared__, OpenCL __local) the tile of BUFFER (an input or
 * another stage computed at the root) that STAGE reads in one iteration of
 * its loop ITER, counting every thread of the block: the loops inside ITER
 * and the threadIdx.x loops around it (STAGE's own or, when STAGE is
 * computed at a consumer's loop, the consumer's) sweep their ranges, the
 * others are fixed.  At the top of each iteration of ITER the block's
 * threads load the tile cooperatively (consecutive threads, consecutive
 * elements; positions outside BUFFER read as 0), between two barriers, and
 * STAGE reads the tile instead of BUFFER (lower/nest.c; codegen/gpu_emit.c
 * places the barriers).  A threadIdx.x loop must enclose ITER or be inside
 * it (the block's threads do the loading); its extent is the number of
 * loaders.  Lowering refuses a tile larger than the target's shared memory
 * (smelt_hw.gpu_shared_bytes; CPUs have none).  After cache_read, ITER
 * cannot be split or fused, and the stage cannot be inlined, cache_write'd
 * or rfactor'ed; BUFFER cannot be inlined.
 * rfactor STAGE R F splits reduce axis R of a fresh reduction (no steps on
 * it yet) by F and keeps the F partial results apart: a new stage STAGE.rf
 * [data axes..., R.i] reduces over R.o (and the other reduce axes), with
 * R.o * F + R.i past R's extent contributing the identity; STAGE then
 * reduces STAGE.rf over its new reduce axis R.i.  R.i is a data axis of
 * STAGE.rf, so it can be vectorised (TVM's rfactor).  Factoring STAGE
 * again names the new stage STAGE.rf2, STAGE.rf3, ...
 * tensorize STAGE ITER KERNEL replaces the loops from ITER inward by a call
 * to a micro-kernel whose declared computation they must match.  Kernels:
 *   smelt.gemm_f32  C[i*ldc + j] += sum_k A[i*lda_i + k*lda_k] * B[k*ldb_k + j*ldb_j]
 *                   for i < M, j < N, k < K (float32).  Legal when the stage is
 *                   a float32 sum of a product of two float32 loads and the
 *                   leaves from ITER inward are two data loops (i, j: j is the
 *                   one with unit stride in the output) and one reduce loop (k)
 *                   in any order, none of them with a stage computed at it.
 *   smelt.transpose_f32  dst[i*ldd + j] = src[i + j*lds] for i < M, j < N
 *                   (float32; in-register tile transposes).  Legal when the
 *                   stage's value is one float32 load and the leaves from
 *                   ITER inward are two data loops: j the one with unit stride
 *                   in the output, i the one with unit stride in the input
 *                   (lowering refuses other strides).  The layout rule uses
 *                   it for NCHW <-> NCHW[b]c conversions.
 *   Lowering checks that every index is affine in the replaced loops with
 *   constant strides; splits that do not divide shrink M/N/K at the edge.  After
 *   tensorize, the stage's loops can no longer be split, fused or reordered,
 *   and the covered loops cannot be annotated or hold compute_at.
 * winograd STAGE M, only as the first step, computes the 3x3 conv stage
 * STAGE by Winograd F(M x M, 3 x 3) (M = 2, 4): replay replaces it by
 * the stages STAGE_wu (transformed weights, a compile-time constant),
 * STAGE_wv (input transform [alpha^2, tiles, Ci]), STAGE_wm (the alpha^2
 * GEMMs, [alpha^2, tiles, Co]) and STAGE itself (the output transform, same
 * buffer), which the rest of the schedule then names (sch_winograd_te).
 * Illegal steps (unknown names, vectorizing a reduction, inlining a
 * reduction, compute_at a loop that does not enclose the consumer...) fail
 * with SMELT_ERR_ARG and a message naming the step, never wrong code.
 */
#ifndef SMELT_SCHED_H
#define SMELT_SCHED_H

#include "base/hw.h"
#include "te/te.h"

typedef enum sch_kind {
    SCH_SPLIT,
    SCH_FUSE,
    SCH_REORDER,
    SCH_VECTORIZE,
    SCH_UNROLL,
    SCH_PARALLEL,
    SCH_COMPUTE_INLINE,
    SCH_COMPUTE_AT,
    SCH_CACHE_WRITE,
    SCH_TENSORIZE,
    SCH_RFACTOR,
    SCH_WINOGRAD, /* winograd STAGE M: first step only (sched/winograd.c) */
    SCH_BIND,     /* bind STAGE ITER blockIdx.x|threadIdx.x: GPU targets */
    SCH_CACHE_READ, /* cache_read STAGE BUFFER ITER: GPU targets (shared memory) */
    SCH_KIND_COUNT_
} sch_kind;

#define SCH_MAX_STEP_ITERS 16

typedef struct sch_step {
    sch_kind kind;
    const char *stage;                       /* tensor (stage) name */
    int n_iters;
    const char *iters[SCH_MAX_STEP_ITERS];   /* iter names the step refers to */
    const char *target;                      /* compute_at: the consumer stage;
                                              * tensorize: the micro-kernel name;
                                              * bind: the GPU index;
                                              * cache_read: the buffer staged */
    int64_t factor;                          /* split factor */
} sch_step;

typedef struct sch_schedule {
    smelt_arena arena; /* step strings */
    int n, cap;
    sch_step *steps;
} sch_schedule;

void sch_schedule_init(sch_schedule *s);
void sch_schedule_fini(sch_schedule *s);
/* Append a step (strings are copied). */
smelt_status sch_add(smelt_ctx *ctx, sch_schedule *s, const sch_step *step);
smelt_status sch_split(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *iter,
                       int64_t factor);
smelt_status sch_fuse(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *outer,
                      const char *inner);
smelt_status sch_reorder(smelt_ctx *ctx, sch_schedule *s, const char *stage, int n,
                         const char *const *iters);
smelt_status sch_annotate(smelt_ctx *ctx, sch_schedule *s, sch_kind kind, const char *stage,
                          const char *iter);
smelt_status sch_compute_inline(smelt_ctx *ctx, sch_schedule *s, const char *stage);
smelt_status sch_compute_at(smelt_ctx *ctx, sch_schedule *s, const char *stage,
                            const char *consumer, const char *iter);
smelt_status sch_cache_write(smelt_ctx *ctx, sch_schedule *s, const char *stage);
smelt_status sch_rfactor(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *iter,
                         int64_t factor);
smelt_status sch_tensorize(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *iter,
                           const char *kernel);
/* tag: "blockIdx.x" or "threadIdx.x" (checked when the schedule replays). */
smelt_status sch_bind(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *iter,
                      const char *tag);
/* Stage the tile of `buffer` that STAGE reads inside loop `iter` in shared memory. */
smelt_status sch_cache_read(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *buffer,
                            const char *iter);
/* Is `name` a micro-kernel tensorize knows the computation of? */
bool sch_tensor_kernel_known(const char *name);
/* split, split, reorder: outer0 outer1 inner0 inner1 */
smelt_status sch_tile(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *i0,
                      const char *i1, int64_t f0, int64_t f1);

void sch_schedule_print(const sch_schedule *s, smelt_strbuf *out);
smelt_status sch_schedule_parse(smelt_ctx *ctx, const char *text, sch_schedule *out);

/* ---- The applied state ------------------------------------------------------- */

#define SCH_MAX_ITERS 64

typedef enum sch_rel {
    SCH_REL_ROOT,        /* a te axis (data or reduce) */
    SCH_REL_SPLIT_OUTER, /* parent = outer * factor + inner */
    SCH_REL_SPLIT_INNER,
    SCH_REL_FUSED,       /* fused = outer_parent * extent(inner_parent) + inner_parent */
} sch_rel;

typedef struct sch_iter {
    const char *name;
    int64_t extent;
    ir_expr *dyn;           /* roots: the run-time extent (ir_axis.dyn), else NULL */
    bool reduce;
    sch_rel rel;
    int parent;             /* split children: the split iter */
    int64_t factor;         /* split children: the split factor */
    int split_outer, split_inner; /* set on an iter that was split */
    int fuse_outer, fuse_inner;   /* set on a fused iter: its two parents */
    int fused_into;               /* set on an iter that was fused: the result */
    ir_for_kind annot;
    ir_var *var;            /* loop variable, for leaves */
} sch_iter;

/* A cache_read on a stage: the buffer staged and the loop it is staged at. */
#define SCH_MAX_CACHE_READS 4
typedef struct sch_cache_entry {
    const ir_buffer *buf;
    int iter;
} sch_cache_entry;

typedef struct sch_stage {
    ir_buffer *buf;        /* where the stage's values are stored */
    ir_expr *body;         /* over root axes vars; may be rewritten by inline/cache_write */
    int n_axes;            /* data-parallel root axes (== buf->rank) */
    ir_axis axes[SMELT_MAX_RANK];
    int n_reduce;          /* reduce root axes (from the body's IR_REDUCE) */
    ir_axis reduce_axes[SMELT_MAX_RANK];
    bool is_placeholder;
    bool is_output;        /* a te_graph output: storage is a function parameter */
    const te_check *check; /* a check stage: no storage, never inlined or attached */
    const te_extern *ext;  /* an extern stage: no iters, takes no steps (te.h) */
    bool inlined;
    int attach_stage;      /* -1: computed at root */
    int attach_iter;
    int n_iters;
    sch_iter iters[SCH_MAX_ITERS];
    int n_leaves;
    int leaves[SCH_MAX_ITERS]; /* loop order, outermost first */
    int tensor_iter;           /* tensorize: the leaf the kernel replaces from, else -1 */
    const char *tensor_kernel; /* tensorize: the micro-kernel name */
    int n_cache_reads;         /* cache_read steps on the stage, in order */
    sch_cache_entry cache_reads[SCH_MAX_CACHE_READS];
    const char *tag;
    /* the distinct buffers body loads (n_reads -1: unknown, walk the body) */
    const ir_buffer **reads;
    int n_reads;
    /* rfactor over a run-time extent: the mask (r.o * F + r.i < run's extent)
     * in the body, the extent and F; lowering runs the whole chunks
     * (r.o < extent / F) without it.  NULL: none */
    const ir_expr *rt_mask;
    ir_expr *rt_mask_extent, *rt_mask_outer; /* the run's extent; r.o's (ceil(extent / F)) */
    int64_t rt_mask_factor;
} sch_stage;

/* Whether sg's body loads buf (its list of reads: inlining grows bodies to
 * thousands of nodes, and "who reads X" is asked for every stage pair). */
bool sch_stage_reads(const sch_stage *sg, const ir_buffer *buf);

typedef struct sch_state {
    smelt_arena arena;
    ir_builder b;
    const te_graph *te; /* the graph replayed on: the caller's, or owned_te */
    te_graph *owned_te; /* made by a winograd step, freed with the state */
    int n_stages;
    sch_stage *stages; /* te tensors in order, then stages made by cache_write */
    struct sch_stage_index *index; /* stages by name, readers by stage (stage_index.h) */
    /* the target's description when known (set by the caller after
     * sch_state_build): lowering checks cache_read tiles against its shared
     * memory; NULL: no check */
    const smelt_hw *hw;
} sch_state;

/* Replay `s` on `te`.  *out is freed with sch_state_free. */
smelt_status sch_state_build(smelt_ctx *ctx, const te_graph *te, const sch_schedule *s,
                             sch_state **out);
void sch_state_free(sch_state *st);

/* Expression trees are copied on inlining, so a chain of stages each
 * reading its producer k times grows as k^depth (six integer Mods of one
 * value gave 118 MB of C): compute_inline fails with SMELT_ERR_LIMIT when a
 * consumer's body would exceed this many nodes. */
#define SCH_INLINE_MAX_NODES 16384 /* ~100x the largest body in the test models */

/* Default schedule for a te graph (inline elementwise intermediates unless
 * that would grow a consumer past DEFAULT_INLINE_MAX_NODES in default.c;
 * data axes parallel, reductions inside, innermost axis vectorised by
 * hw->lanes lanes; 1 disables vectorisation; register tiles sized for
 * hw->vector_regs). */
smelt_status sch_default(smelt_ctx *ctx, const te_graph *g, const smelt_hw *hw, sch_schedule *s);

/* ---- Knobs: the tunable choices of the default rules -------------------------
 * The default rules (default.c) pick tile sizes, loop orders and parallel
 * depth analytically.  Each choice is a knob; sch_default_space lists the
 * knobs that apply to a te graph with their candidate values, and
 * sch_default_knobs builds the schedule with some knobs fixed.  A knob set to
 * 0 keeps the rule's own choice, so all-zero knobs give sch_default's
 * schedule: the tuner's first candidate, which it can never lose to. */
typedef enum sch_knob {
    SCH_KNOB_TILE_A,   /* conv: output-width register block; matmul: rows per tile */
    SCH_KNOB_TILE_B,   /* conv: channel blocks per tile; matmul: vectors per tile */
    SCH_KNOB_ORDER,    /* conv: 1 channels outside the kernel taps, 2 taps outside,
                        * 3 (blocked inputs) kernel width inside the lanes;
                        * matmul: 1 column panels outside, 2 row blocks outside */
    SCH_KNOB_PARALLEL, /* 1: no parallel loop; conv: 2 n.co, 3 n.co.oh, 4 oh alone,
                        * 5 n.oh with the channel tiles inside the column tiles;
                        * matmul: 1 + leading loops fused; generic: 2 all leading data
                        * axes fused, k > 2 only the first k - 2 */
    SCH_KNOB_UNROLL,   /* conv: 1 kernel-width loop rolled, 2 unrolled;
                        * others: 1 + vectors per innermost step */
    SCH_KNOB_TILE_C,   /* conv: output rows per register tile */
    SCH_KNOB_ALGO,     /* NCHWc 3x3 stride-1 conv: 1 direct, M in {2, 4} Winograd
                        * F(M x M, 3 x 3) (then tile_a/order/parallel apply to its GEMM
                        * stage as for a matrix product, the other knobs must be 0) */
    SCH_KNOB_TILE_K,   /* NCHWc conv: input-channel blocks per reduction batch, the
                        * accumulation held over whole output rows between batches */
    SCH_KNOB_COUNT_
} sch_knob;

#define SCH_KNOB_MAX_VALUES 24

typedef struct sch_knobs {
    int64_t v[SCH_KNOB_COUNT_]; /* 0: the rule's choice */
} sch_knobs;

typedef struct sch_knob_space {
    int n_values[SCH_KNOB_COUNT_]; /* 0: the knob does not apply */
    int64_t values[SCH_KNOB_COUNT_][SCH_KNOB_MAX_VALUES];
    const char *rule; /* which rule schedules the graph's main stage */
} sch_knob_space;

const char *sch_knob_name(sch_knob k);
/* The knobs of the rule that schedules g's main stage, with candidates. */
smelt_status sch_default_space(smelt_ctx *ctx, const te_graph *g, const smelt_hw *hw,
                               sch_knob_space *out);
/* sch_default with knobs fixed (NULL: none).  A value the rule cannot use
 * fails with SMELT_ERR_ARG. */
smelt_status sch_default_knobs(smelt_ctx *ctx, const te_graph *g, const smelt_hw *hw,
                               const sch_knobs *knobs, sch_schedule *s);

/* ---- Stored schedules (tuning records) -----------------------------------------
 * Lowering asks a source for a schedule by workload key before the default
 * rules, so it never knows whether a schedule came from a person, a rule or
 * a search.  A stored schedule that does not replay is ignored (noted at
 * SMELT_DEBUG >= 1) and the rules schedule the group. */
typedef struct sch_source {
    const char *target_key; /* which machine and compiler the schedules are for */
    /* The schedule text stored for a workload key, or NULL. */
    const char *(*find)(void *user, const char *key);
    void *user;
} sch_source;

#define SCH_KEY_LEN 32 /* hex characters */
/* The workload key of te on a target: a hash of te's canonical listing
 * (tensors, shapes, dtypes, bodies, outputs) and target_key. */
void sch_workload_key(const te_graph *te, const char *target_key, char key[SCH_KEY_LEN + 1]);
/* The schedule for te: the source's when it has one that replays
 * (*from_source = true), else the default rules'. */
smelt_status sch_choose(smelt_ctx *ctx, const te_graph *te, const smelt_hw *hw,
                        const sch_source *src, sch_schedule *out, bool *from_source);

/* ---- Schedule files written by people (smelt compile --schedule FILE) ----------
 * '#' starts a comment; "task NAME" starts an entry, the lines after it up to
 * the next "task" are steps in the text form above.  NAME is a generated
 * function's name as --dump-ir=tir prints it (f0_matmul), or its workload key
 * (all 32 hex digits, or a prefix of 8 or more, as `smelt tune --list-tasks`
 * prints it; keys depend on the target and the machine).  Lowering asks the
 * file before the records and the default rules; an entry that does not
 * replay is an error naming the file, the line and the step (never silently
 * ignored, unlike a record), and so is an entry no function matches. */
typedef struct sch_user_entry {
    const char *task;
    int line;          /* of its "task" line */
    sch_schedule sched;
    int *step_line;    /* per step: its line in the file */
    int uses;          /* functions it scheduled */
} sch_user_entry;

typedef struct sch_user_file {
    char *path;
    int n;
    sch_user_entry *entries;
    const char *target_key;  /* for workload keys; set by the caller before lowering */
    char *task_names;        /* the functions met, for the "no such task" message */
    size_t task_names_len;
} sch_user_file;

smelt_status sch_user_file_load(smelt_ctx *ctx, const char *path, sch_user_file *out);
smelt_status sch_user_file_parse(smelt_ctx *ctx, const char *path, const char *text,
                                 sch_user_file *out);
void sch_user_file_fini(sch_user_file *uf);
/* The entry for the function func_name whose te graph is te, checked step by
 * step and appended to *out (*found), or nothing (no entry). */
smelt_status sch_user_choose(smelt_ctx *ctx, sch_user_file *uf, const te_graph *te,
                             const char *func_name, sch_schedule *out, bool *found);
/* An error naming the first entry that scheduled no function. */
smelt_status sch_user_file_check_used(smelt_ctx *ctx, const sch_user_file *uf);

/* Columns per register tile the default schedule gives an m x n matrix
 * product over k terms (a multiple of hw->lanes), or 0 when it would not
 * vectorise it: the panel width for packing constant B (passes/pack_weights.c),
 * so that a tile reads one panel. */
int64_t sch_matmul_panel_width(int64_t m, int64_t n, int64_t k, const smelt_hw *hw);

/* Append up to n_steps random steps to *out, each kept only if the schedule
 * still replays: always a legal schedule (the schedule fuzzer, the tuner's
 * sampler). */
smelt_status sch_random(smelt_ctx *ctx, const te_graph *te, uint64_t seed, int n_steps,
                        sch_schedule *out);
int sch_stage_index(const sch_state *st, const char *name); /* -1 if absent */

/* ---- Winograd (winograd.c) ---- */
#define SCH_WINOGRAD_MAX_M 4
bool sch_winograd_m_ok(int64_t m); /* 2 or 4 */
/* The first stage of g the winograd step applies to, or NULL. */
const te_tensor *sch_winograd_candidate(const te_graph *g);
/* g with stage computed by F(m x m, 3 x 3) (see the winograd step above);
 * *out shares g's buffers and bodies, so g must outlive it. */
smelt_status sch_winograd_te(smelt_ctx *ctx, const te_graph *g, const char *stage, int64_t m,
                             te_graph **out);
int sch_iter_index(const sch_stage *sg, const char *name);  /* -1 if absent */

#endif
