/* Loop-level IR (tir): expressions and statements.
 *
 * Expressions are shared with tensor expressions (te): a te compute body is an
 * ir_expr over the compute's axis variables whose loads read other tensors.
 * Lowering turns a scheduled set of tensors into an ir_stmt tree; storage
 * flattening then rewrites multi-dimensional loads/stores into flat ones.
 *
 * All nodes are immutable once built and live in an ir_module's arena, so a
 * pass that changes nothing returns its input pointer ("unchanged" is a
 * pointer compare), and a pass that changes something builds new nodes.
 */
#ifndef SMELT_TIR_IR_H
#define SMELT_TIR_IR_H

#include "base/base.h"

typedef struct ir_expr ir_expr;
typedef struct ir_stmt ir_stmt;

/* A scalar variable: a loop counter, a compute axis or a Let binding. */
typedef struct ir_var {
    const char *name;
    smelt_dtype dtype; /* SMELT_DT_INT64 for indices */
    int id;            /* unique within the arena's owner */
} ir_var;

/* Where a buffer's storage comes from. */
typedef enum ir_buffer_kind {
    IR_BUF_INPUT,    /* a function argument read by the function */
    IR_BUF_OUTPUT,   /* a function argument written by the function */
    IR_BUF_CONST,    /* compile-time data (weights) passed in by the caller */
    IR_BUF_TEMP,     /* allocated inside the function (ir_stmt ALLOCATE) */
} ir_buffer_kind;

/* Which memory a temporary lives in on a GPU target.  SHARED: the memory of
 * a thread block (CUDA __shared__, OpenCL __local), written by some threads
 * and read by others (schedule step cache_read); CPU code and the tir
 * interpreter treat it as an ordinary temporary. */
typedef enum ir_buffer_scope {
    IR_SCOPE_DEFAULT,
    IR_SCOPE_SHARED,
} ir_buffer_scope;

/* A tensor in te, a buffer in tir.  Before storage flattening, loads and
 * stores carry one index per dim; after, a single flat element index. */
typedef struct ir_buffer {
    const char *name;
    smelt_dtype dtype;
    int rank;
    int64_t shape[SMELT_MAX_RANK]; /* a run-time dim: its maximum */
    ir_buffer_kind kind;
    ir_buffer_scope scope;
    int id;
    /* A buffer dense at the run's dims (a model input or output that the
     * caller lays out at its own length, lower/program.c): per dim, its
     * extent at run time where it follows a run-time dim (NULL: shape[d]).
     * Flattening takes the strides from these; every access must stay
     * inside them (lower/dense_check.c).  All NULL: laid out at shape. */
    ir_expr *rt_extent[SMELT_MAX_RANK];
} ir_buffer;


typedef enum ir_kind {
    IR_INT,   /* integer immediate (any integer/bool dtype) */
    IR_FLOAT, /* float immediate */
    IR_VAR,
    /* binary arithmetic: both operands of the node's dtype */
    IR_ADD,
    IR_SUB,
    IR_MUL,
    IR_DIV,      /* float division; integer: C truncating division */
    IR_MOD,      /* integer: C remainder (sign of the dividend) */
    IR_FLOORDIV, /* integer division rounding to -inf (index arithmetic) */
    IR_FLOORMOD, /* integer remainder with the sign of the divisor */
    IR_MIN,
    IR_MAX,
    /* bitwise, integer dtypes only (two's complement bits of the dtype).
     * Shifts take the count from the second operand read as uint64 (so a
     * negative signed count is huge); a count >= the width gives 0, or -1
     * for a right shift of a negative signed value (ONNX BitShift-28);
     * right shifts of signed values are arithmetic. */
    IR_BITAND,
    IR_BITOR,
    IR_BITXOR,
    IR_SHL,
    IR_SHR,
    /* comparisons and logic: result dtype BOOL */
    IR_EQ,
    IR_NE,
    IR_LT,
    IR_LE,
    IR_GT,
    IR_GE,
    IR_AND,
    IR_OR,
    IR_NOT,
    IR_SELECT, /* cond ? t : f; only the chosen branch is evaluated, so a
                * branch may hold a load that is in bounds only under cond */
    IR_CAST,   /* to the node's dtype */
    IR_CALL,   /* pure math function, see ir_call_op */
    IR_LOAD,   /* buffer[index...] */
    IR_REDUCE, /* te only: combine src over reduce axes; lowered away */
    IR_KIND_COUNT_
} ir_kind;

typedef enum ir_call_op {
    IR_CALL_EXP,
    IR_CALL_LOG,
    IR_CALL_SQRT,
    IR_CALL_TANH,
    IR_CALL_ERF,
    IR_CALL_POW,
    IR_CALL_ABS,
    IR_CALL_FLOOR,
    IR_CALL_CEIL,
    IR_CALL_ROUND, /* half to even */
    IR_CALL_SIN,
    IR_CALL_COS,
    IR_CALL_FMOD,
    IR_CALL_ISNAN,
    IR_CALL_ISINF,
    IR_CALL_SIGMOID,
    IR_CALL_TAN,
    IR_CALL_ASIN,
    IR_CALL_ACOS,
    IR_CALL_ATAN,
    IR_CALL_SINH,
    IR_CALL_COSH,
    IR_CALL_ASINH,
    IR_CALL_ACOSH,
    IR_CALL_ATANH,
    /* ONNX's low-bit types (include/smelt_lowbit.h); internal to Cast and the
     * quantization ops, never from the te API. */
    IR_CALL_LB_DECODE, /* (code of a float8/float4 dtype) -> float32 */
    IR_CALL_LB_ENCODE, /* (value, mode: int32 constant) -> the stored byte of the call's dtype */
    /* BitCast: the argument's bits read as the call's dtype, of the same
     * width (not float16/bfloat16, whose values are held widened) */
    IR_CALL_BITCAST,
    IR_CALL_COUNT_
} ir_call_op;

typedef enum ir_reduce_op {
    IR_REDUCE_SUM,
    IR_REDUCE_PROD,
    IR_REDUCE_MAX,
    IR_REDUCE_MIN,
} ir_reduce_op;

/* An iteration axis: a variable ranging over [0, extent).  dyn, when set,
 * is the extent the loops take at run time (a run-time dim, te.h
 * te_set_rt_dims): an INT64 expression <= extent, which stays the static
 * bound (buffer layout, memory plan). */
typedef struct ir_axis {
    ir_var *var;
    int64_t extent;
    ir_expr *dyn;
} ir_axis;

struct ir_expr {
    ir_kind kind;
    smelt_dtype dtype;
    union {
        int64_t i; /* IR_INT */
        double f;  /* IR_FLOAT */
        ir_var *var;
        struct {
            ir_expr *a, *b;
        } bin; /* arithmetic, comparisons, AND, OR; NOT and CAST use a */
        struct {
            ir_expr *cond, *t, *f;
        } select;
        struct {
            ir_call_op op;
            int n;
            ir_expr *args[3];
        } call;
        struct {
            ir_buffer *buf;
            int n;
            ir_expr **idx;
        } load;
        struct {
            ir_reduce_op op;
            ir_expr *src;
            int n_axes;
            ir_axis *axes;
        } reduce;
    };
};

typedef enum ir_for_kind {
    IR_FOR_SERIAL,
    IR_FOR_PARALLEL,   /* iterations run on the thread pool */
    IR_FOR_VECTORIZED, /* iterations map to vector lanes */
    IR_FOR_UNROLLED,
    /* GPU targets only (sched `bind`): iterations are the blocks of a kernel
     * launch (blockIdx.x, OpenCL's group id) or the threads of one block
     * (threadIdx.x, the local id).  CPU code generation refuses them. */
    IR_FOR_GPU_BLOCK,
    IR_FOR_GPU_THREAD,
} ir_for_kind;

typedef enum ir_stmt_kind {
    IR_STMT_FOR,
    IR_STMT_SEQ,
    IR_STMT_LET,      /* var = value in body */
    IR_STMT_STORE,    /* buffer[index...] = value */
    IR_STMT_ALLOCATE, /* buffer (IR_BUF_TEMP) lives during body */
    IR_STMT_IF,
    IR_STMT_CALL,     /* micro-kernel call (tensorize) */
    IR_STMT_CHECK,    /* when cond is false, record a run-time error and go on */
    IR_STMT_COUNT_
} ir_stmt_kind;

/* Where a run-time check sits in the model, for its error message.  The
 * message names the node and op; "{value}" and "{position}" in `message`
 * are replaced by the offending value and its position. */
typedef struct ir_check_site {
    const char *node, *op; /* the model's names: escaped by codegen */
    const char *message;
} ir_check_site;

/* Argument of a micro-kernel call: an address inside a buffer, or a scalar. */
typedef struct ir_call_arg {
    ir_buffer *buf; /* non-NULL: &buf[index] */
    ir_expr *index; /* flat element index into buf, or the scalar value */
} ir_call_arg;

struct ir_stmt {
    ir_stmt_kind kind;
    union {
        struct {
            ir_var *var;
            ir_expr *min, *extent;
            ir_for_kind kind;
            ir_stmt *body;
        } for_;
        struct {
            int n;
            ir_stmt **items;
        } seq;
        struct {
            ir_var *var;
            ir_expr *value;
            ir_stmt *body;
        } let;
        struct {
            ir_buffer *buf;
            int n;
            ir_expr **idx;
            ir_expr *value;
        } store;
        struct {
            ir_buffer *buf;
            ir_stmt *body;
        } alloc;
        struct {
            ir_expr *cond;
            ir_stmt *then_, *else_; /* else_ may be NULL */
        } if_;
        struct {
            const char *kernel; /* name in the micro-kernel table */
            int n;
            ir_call_arg *args;
        } call;
        struct {
            ir_expr *cond;     /* BOOL: true when the data is legal */
            ir_expr *value;    /* INT64: reported when cond is false */
            ir_expr *position; /* INT64: where value sits (e.g. a flat index) */
            const ir_check_site *site;
        } check;
    };
};

/* ---- Construction (all nodes in the arena) ---------------------------------
 * Builders never fail silently: on allocation failure they return NULL and
 * set ar_failed in the builder, checked once at the end of a pass. */
typedef struct ir_builder {
    smelt_arena *arena;
    int next_id;
    bool failed;
} ir_builder;

void ir_builder_init(ir_builder *b, smelt_arena *arena);

ir_var *ir_var_new(ir_builder *b, const char *name, smelt_dtype dt);
ir_buffer *ir_buffer_new(ir_builder *b, const char *name, smelt_dtype dt, int rank,
                         const int64_t *shape, ir_buffer_kind kind);

ir_expr *ir_int(ir_builder *b, int64_t v);                  /* INT64 */
ir_expr *ir_const_int(ir_builder *b, smelt_dtype dt, int64_t v);
ir_expr *ir_const_float(ir_builder *b, smelt_dtype dt, double v);
ir_expr *ir_var_ref(ir_builder *b, ir_var *v);
ir_expr *ir_binary(ir_builder *b, ir_kind k, ir_expr *a, ir_expr *c); /* dtype from a (BOOL for compare) */
ir_expr *ir_add(ir_builder *b, ir_expr *a, ir_expr *c);
ir_expr *ir_sub(ir_builder *b, ir_expr *a, ir_expr *c);
ir_expr *ir_mul(ir_builder *b, ir_expr *a, ir_expr *c);
ir_expr *ir_not(ir_builder *b, ir_expr *a);
ir_expr *ir_select(ir_builder *b, ir_expr *cond, ir_expr *t, ir_expr *f);
ir_expr *ir_cast(ir_builder *b, smelt_dtype dt, ir_expr *a); /* returns a if same dtype */
ir_expr *ir_call(ir_builder *b, ir_call_op op, smelt_dtype dt, int n, ir_expr *const *args);
/* IR_CALL_POW on integer arguments is the wrapped power: base^exp modulo
 * 2^64 by squaring, both read as uint64 (what this returns); the call's
 * dtype truncates it further.  Generated C has the same (smelt_ipow_u64). */
uint64_t ir_ipow_u64(uint64_t base, uint64_t exp);
ir_expr *ir_load(ir_builder *b, ir_buffer *buf, int n, ir_expr *const *idx);
ir_expr *ir_reduce(ir_builder *b, ir_reduce_op op, ir_expr *src, int n_axes,
                   const ir_axis *axes);

ir_stmt *ir_for(ir_builder *b, ir_var *v, ir_expr *min, ir_expr *extent, ir_for_kind k,
                ir_stmt *body);
ir_stmt *ir_seq(ir_builder *b, int n, ir_stmt *const *items); /* flattens nested seqs, drops NULL */
ir_stmt *ir_seq2(ir_builder *b, ir_stmt *first, ir_stmt *second);
ir_stmt *ir_let(ir_builder *b, ir_var *v, ir_expr *value, ir_stmt *body);
ir_stmt *ir_store(ir_builder *b, ir_buffer *buf, int n, ir_expr *const *idx, ir_expr *value);
ir_stmt *ir_allocate(ir_builder *b, ir_buffer *buf, ir_stmt *body);
ir_stmt *ir_if(ir_builder *b, ir_expr *cond, ir_stmt *then_, ir_stmt *else_);
ir_stmt *ir_call_stmt(ir_builder *b, const char *kernel, int n, const ir_call_arg *args);
ir_stmt *ir_check(ir_builder *b, ir_expr *cond, ir_expr *value, ir_expr *position,
                  const ir_check_site *site);

/* ---- Queries and generic rewriting ------------------------------------------ */
bool ir_is_int(const ir_expr *e, int64_t v);
bool ir_expr_equal(const ir_expr *a, const ir_expr *b); /* structural */
/* Extent d of buf as the flat index uses it: rt_extent[d], else shape[d]. */
ir_expr *ir_buffer_extent(ir_builder *b, const ir_buffer *buf, int d);
bool ir_buffer_is_dense_rt(const ir_buffer *buf);
bool ir_expr_uses_var(const ir_expr *e, const ir_var *v);
bool ir_stmt_uses_var(const ir_stmt *s, const ir_var *v);
bool ir_expr_reads(const ir_expr *e, const ir_buffer *buf); /* loads buf anywhere in e */
bool ir_stmt_reads(const ir_stmt *s, const ir_buffer *buf); /* loads or passes buf to a call */

/* Substitute variables: map[i].var -> map[i].value.  Returns e itself when
 * nothing changes. */
typedef struct ir_subst {
    const ir_var *var;
    ir_expr *value;
} ir_subst;
ir_expr *ir_expr_substitute(ir_builder *b, ir_expr *e, const ir_subst *map, int n);
ir_stmt *ir_stmt_substitute(ir_builder *b, ir_stmt *s, const ir_subst *map, int n);

/* ---- Printing (deterministic) ------------------------------------------------ */
void ir_expr_print(const ir_expr *e, smelt_strbuf *out);
void ir_stmt_print(const ir_stmt *s, int indent, smelt_strbuf *out);
const char *ir_call_name(ir_call_op op);
const char *ir_kind_name(ir_kind k);
/* A failed check's message: "node 'N' (Op): " + the site's message with
 * {value} and {position} filled in (runtime/model.c formats it the same way). */
void ir_check_format(const ir_check_site *site, int64_t value, int64_t position, char *buf,
                     size_t size);

#endif
