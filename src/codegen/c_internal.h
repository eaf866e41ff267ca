/* Internals of the C emitter, shared by c_emit.c (program, functions,
 * statements, parallel outlining), c_expr.c (scalar expressions), c_vec.c
 * (vectorised loops) and c_prelude.c (helper functions and types). */
#ifndef SMELT_CODEGEN_C_INTERNAL_H
#define SMELT_CODEGEN_C_INTERNAL_H

#include "codegen/codegen.h"
#include "codegen/microkernel.h"

/* Helper functions the emitted code may call; only the used ones are
 * written into the prelude. */
typedef enum cg_helper {
    CG_H_DIV_I64,
    CG_H_MOD_I64,
    CG_H_DIV_U64,
    CG_H_MOD_U64,
    CG_H_FLOORDIV_I64,
    CG_H_FLOORMOD_I64,
    CG_H_FLOORMOD_F32,
    CG_H_FLOORMOD_F64,
    CG_H_F2I,   /* saturating float -> signed/narrow unsigned int */
    CG_H_F2U64, /* saturating float -> uint64 */
    CG_H_ABS_I64,
    CG_H_SHIFT, /* IR_SHL / IR_SHR with counts past the width */
    CG_H_IPOW_U64,
    CG_H_F16,
    CG_H_BF16,
    CG_H_F64_ODD, /* double -> float rounding to odd (no double rounding to half) */
    CG_H_CLAMPI,  /* index clamped into a buffer: speculative loads in vector code */
    CG_H_SHUFFLE2, /* two-vector lane shuffle with a constant mask (GCC or clang builtin) */
    CG_H_ALLOC64,
    CG_H_PARALLEL,
    CG_H_SETERR,
    CG_H_CHECK_FAIL,
    CG_H_LOWBIT, /* include/smelt_lowbit.h, embedded */
    CG_H_FDIVC_I64, /* GPU kernels: floordiv / floormod by a constant, 32-bit when in range */
    CG_H_FMODC_I64,
    CG_H_COUNT_
} cg_helper;

/* Math functions over float32 vectors (c_prelude.c), used by vectorised
 * loops instead of the libm function per lane; emitted per lane count. */
typedef enum cg_vmath {
    CG_VM_EXP,
    CG_VM_TANH,
    CG_VM_ERF,
    CG_VM_SIGMOID,
    CG_VM_COUNT_
} cg_vmath;

/* A pointer -> int map (open addressing), for variable and buffer names. */
typedef struct cg_ptrmap {
    const void **keys;
    int *vals;
    size_t cap, len;
} cg_ptrmap;

/* A buffer visible in the current function: a parameter or a temp. */
typedef struct cg_bufinfo {
    char name[16]; /* p3 / t5 */
    bool is_const; /* read-only pointer */
    bool is_param;
    bool used;     /* named in the emitted code (an unused parameter gets a (void) cast) */
} cg_bufinfo;

/* Expression context: in index positions (load/store indices, loop bounds,
 * conditions on int64) signed arithmetic is plain C; in values it wraps. */
typedef enum cg_ctx_kind { CG_VALUE, CG_INDEX } cg_ctx_kind;

typedef struct cg_emitter {
    smelt_ctx *ctx;
    const cg_target *target;
    const ir_program *prog;
    const cg_emit_options *opts;
    smelt_status status; /* first error (also recorded in ctx) */

    smelt_strbuf *out; /* where statements go now */
    int indent;

    /* current function */
    int func_index;
    bool use_restrict;
    cg_ptrmap var_ids;   /* ir_var* -> number: v<number> */
    int next_var;
    cg_ptrmap buf_ids;   /* ir_buffer* -> index into bufs */
    cg_bufinfo *bufs;
    int n_bufs, cap_bufs;
    int next_temp;
    int next_tmp;        /* vector/scalar temporaries, end variables */
    int64_t stack_bytes; /* stack temps live on the current path */
    int64_t ws_used;     /* workspace temps live on the current path (bytes) */
    int64_t ws_peak;     /* the current function's workspace */
    int64_t *func_ws;    /* per function: its workspace (bytes), after emission */
    int *func_code;      /* per function: the function whose code it runs (itself if emitted) */
    smelt_strmap code_index; /* digest of a function's code -> its index + 1 */
    int64_t max_ws;      /* the largest over functions: added to the arena */
    smelt_strbuf tasks;  /* outlined parallel bodies of the current function */
    smelt_strbuf protos; /* the functions' prototypes, for builds in parts */
    int n_tasks;
    bool in_task;        /* emitting an outlined body: nested PARALLEL runs serially */
    bool gpu;            /* emitting a GPU kernel's thread code (gpu_emit.c) */
    /* gpu_emit.c's hook for thread code: emits s itself and returns true
     * (a cache_read tile's copy by the block's threads, a shared-memory
     * allocation), or returns false for cg_stmt to emit it */
    bool (*gpu_stmt)(struct cg_emitter *e, const ir_stmt *s);
    bool gpu_checks;     /* a kernel holds a data check (smelt_gpu_check_fail_) */
    bool uses_pool;
    bool needs_err;      /* a heap temp may fail: err_ is needed */
    bool has_checks;     /* the function takes rterr_ (it holds IR_STMT_CHECKs) */
    bool timed_calls;    /* the run entry times its calls (module call_names) */
    smelt_ptrvec sites;  /* const ir_check_site*, numbered in program order */

    /* per-lane emission: lane_var prints as (lane_var + lane) */
    const ir_var *lane_var;
    int lane;
    /* Loads are evaluated where the scalar code would not evaluate them
     * (both sides of a select in vector code): clamp their index into the
     * buffer so they cannot fault; the values are discarded anyway. */
    bool clamp_loads;

    /* prelude needs */
    bool helpers[CG_H_COUNT_];
    unsigned min_dtypes, max_dtypes;   /* bit per smelt_dtype */
    unsigned vec_f32_lanes, vec_f64_lanes; /* bit per lane count */
    unsigned vmath_lanes[CG_VM_COUNT_];    /* bit per float32 lane count */
    bool vminmax_f32;                      /* float32 vector min/max: SMELT_VMIN_/VMAX_ */
    /* integer vectors of converting loads and stores (c_vec.c): bit per lane
     * count, per type of cg_cvt_types (int8, uint8, int16, uint16, int32) */
    unsigned vec_cvt_lanes[5];
    int n_microkernels;
    const cg_microkernel *microkernels[64];

    smelt_arena arena; /* rewritten IR (let inlining for vector loops) */
    ir_builder b;
} cg_emitter;

/* ---- errors and output ---- */
smelt_status cg_fail(cg_emitter *e, smelt_status code, const char *fmt, ...) SMELT_PRINTF(3, 4);
void cg_line(cg_emitter *e, const char *fmt, ...) SMELT_PRINTF(2, 3); /* indented + newline */
void cg_indent(cg_emitter *e);
/* Finish a side buffer: its text was used, so a failed one fails the emitter
 * (a partial text must not reach the C). */
void cg_sb_done(cg_emitter *e, smelt_strbuf *sb);

/* ---- names ---- */
bool cg_ptrmap_put(cg_ptrmap *m, const void *key, int val);
bool cg_ptrmap_get(const cg_ptrmap *m, const void *key, int *val);
void cg_ptrmap_fini(cg_ptrmap *m);
/* Give v a new name for a scope; returns the previous binding (-1 if none)
 * to hand back to cg_unbind_var when the scope closes. */
int cg_bind_var(cg_emitter *e, const ir_var *v, int *number);
void cg_unbind_var(cg_emitter *e, const ir_var *v, int previous);
void cg_var_name(cg_emitter *e, const ir_var *v, smelt_strbuf *out);
const cg_bufinfo *cg_buf(cg_emitter *e, const ir_buffer *b); /* NULL + error if unknown */
int cg_add_buf(cg_emitter *e, const ir_buffer *b, bool is_param, bool is_const, int number);

/* ---- types (c_expr.c) ---- */
const char *cg_storage_type(smelt_dtype dt); /* element type of a buffer; NULL if unsupported */
const char *cg_value_type(smelt_dtype dt);   /* C type of a value (float for f16/bf16) */
bool cg_dtype_is_float(smelt_dtype dt);      /* f16, bf16, f32, f64 */
bool cg_dtype_is_signed_int(smelt_dtype dt);
bool cg_dtype_is_unsigned_int(smelt_dtype dt); /* not bool */

/* ---- scalar expressions (c_expr.c) ---- */
void cg_expr(cg_emitter *e, const ir_expr *x, cg_ctx_kind ctx, smelt_strbuf *out);
/* The value to store into a buffer of dtype dt, converted to its storage. */
void cg_store_value(cg_emitter *e, const ir_expr *value, smelt_dtype dt, smelt_strbuf *out);
/* Element count of a buffer (its shape's product; -1 if invalid). */
int64_t cg_buffer_elems(const ir_buffer *b);
/* An lvalue/rvalue buf[index] in storage type. */
void cg_element(cg_emitter *e, const ir_buffer *buf, const ir_expr *index, smelt_strbuf *out);

/* Scalar math on already-emitted argument texts (a1 NULL for unary ops);
 * dt is the float type computed in (f32 or f64). */
void cg_math_call_text(ir_call_op op, smelt_dtype dt, const char *a0, const char *a1,
                       smelt_strbuf *out);

/* ---- statements (c_emit.c), used by the vectoriser for tails ---- */
void cg_stmt(cg_emitter *e, const ir_stmt *s);
/* A scalar for loop over s (a FOR), with an optional pragma line before it. */
void cg_scalar_for(cg_emitter *e, const ir_stmt *s, const char *pragma);

/* ---- vectorised loops (c_vec.c) ---- */
void cg_vector_for(cg_emitter *e, const ir_stmt *s);

/* ---- pieces of c_emit.c the GPU emitter (gpu_emit.c) shares ---- */
void cg_emitter_init(cg_emitter *e, smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                     const cg_emit_options *opts);
void cg_emitter_fini(cg_emitter *e);
bool cg_check_program(cg_emitter *e);
bool cg_is_called(const ir_program *p, const ir_func *f);
int cg_func_index(const ir_program *p, const ir_func *f); /* -1 if absent */
/* Fresh per-function state with the parameters bound as p0, p1, ... */
bool cg_begin_function(cg_emitter *e, const ir_func *f, int index);
void cg_remove_buf(cg_emitter *e, const ir_buffer *b, int previous);
bool cg_param_is_const(const ir_buffer *b);
int64_t cg_buffer_bytes(const ir_buffer *b); /* -1 if invalid */
/* Whether call `call`'s argument `arg` has room for its parameter. */
bool cg_check_slot(cg_emitter *e, int call, int arg, const ir_slot *s, const ir_buffer *b);
/* The io descriptions and the exported smelt_module_info. */
void cg_emit_module_info(cg_emitter *e, smelt_strbuf *out);

/* ---- GPU targets (gpu_emit.c) ---- */
/* model.c of a GPU target: the module info and a run entry that calls
 * model_gpu_run_ in the device file. */
smelt_status cg_gpu_emit_host(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                              const cg_emit_options *opts, smelt_strbuf *out);
/* What model_gpu_run_ is called with (both files declare it). */
#define CG_GPU_RUN_PARAMS                                                                      \
    "const unsigned char *weights, const void *const *inputs,\n"                               \
    "                   void *const *outputs, smelt_rt_run_error *rterr"

/* The helpers and min/max functions the kernels use, each declared with
 * fn_qual (e.g. "static __device__ inline"); fails naming the first helper
 * GPU kernels cannot have (float16 rounding, low-bit types...). */
void cg_gpu_prelude_helpers(cg_emitter *e, const char *fn_qual, smelt_strbuf *out);
/* What the first helper the code so far needs and GPU kernels cannot have
 * is for ("float16 arithmetic"), or NULL. */
const char *cg_gpu_unsupported_helper(const cg_emitter *e);

/* ---- prelude (c_prelude.c) ---- */
void cg_prelude(cg_emitter *e, smelt_strbuf *out);
const char *cg_vec_type(smelt_dtype dt, int lanes, char kind); /* kind 'v', 'u', 'm' */
/* Integer vector types of float<->integer conversions in vector loops: the
 * index into vec_cvt_lanes of dt (-1: none), and the C type name of lanes
 * values of dt (unaligned: the may_alias type for loads and stores). */
int cg_cvt_index(smelt_dtype dt);
const char *cg_cvt_type(smelt_dtype dt, int lanes, bool unaligned);
/* Name of the prelude's vector function for op over float32 lanes, or NULL
 * when there is none (then the vector loop calls libm per lane). */
const char *cg_vmath_name(ir_call_op op, cg_vmath *which);

#endif
