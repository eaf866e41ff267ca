/* A lowered function (one per fused group) and the model-level program that
 * calls them in order: what code generation consumes. */
#ifndef SMELT_TIR_FUNC_H
#define SMELT_TIR_FUNC_H

#include "tir/ir.h"

typedef struct ir_func {
    const char *name;    /* a C identifier, unique in the program */
    const char *comment; /* free text (may hold model names): escaped by codegen */
    int n_params;
    ir_buffer **params;  /* IR_BUF_INPUT / OUTPUT / CONST buffers, in call order */
    ir_stmt *body;       /* loads/stores use flat indices (storage flattened) */
} ir_func;

/* Where a call argument's storage lives at run time. */
typedef enum ir_slot_kind {
    IR_SLOT_INPUT,  /* the model's input number `index` (caller's buffer) */
    IR_SLOT_OUTPUT, /* the model's output number `index` (caller's buffer) */
    IR_SLOT_WEIGHT, /* `offset` bytes into the weight blob */
    IR_SLOT_ARENA,  /* `offset` bytes into the activation arena */
    IR_SLOT_UNUSED, /* a constant parameter the function never reads (NULL):
                       e.g. an LSTM's W when its compile-time transpose is read
                       instead, so the weight blob does not carry it */
} ir_slot_kind;

typedef struct ir_slot {
    ir_slot_kind kind;
    int index;
    int64_t offset;
} ir_slot;

/* A step of the program: a call of a function, or (func NULL) one of the
 * control steps that If/Loop/Scan lower to (lower/control.c), which the
 * run entry emits as C control flow around the calls between them. */
typedef enum ir_step_kind {
    IR_STEP_CALL,     /* func(args) */
    IR_STEP_COPY,     /* args[0] <- args[1]: `outer` blocks of `bytes`, strided
                         (below), each side optionally at a loop's iteration */
    IR_STEP_IF,       /* if (*(bool *)args[0]) { */
    IR_STEP_ELSE,     /* } else { */
    IR_STEP_END_IF,   /* } */
    IR_STEP_LOOP,     /* for (it = 0; it < trips; it++) { (stop when !*cond) */
    IR_STEP_END_LOOP, /* } */
} ir_step_kind;

/* IR_STEP_LOOP's arguments (slots in args, -1: absent): the int64 trip
 * count read at run time (else `trips`, -1: unbounded), the bool that ends
 * the loop when false (read before each iteration), the int64 the
 * iteration number is written to.  `level`: loop nesting, 0 outermost. */
enum { IR_LOOP_ARG_TRIPS, IR_LOOP_ARG_COND, IR_LOOP_ARG_ITER, IR_LOOP_N_ARGS };

typedef struct ir_call_site {
    const ir_func *func;
    ir_slot *args; /* one per func param (calls); n_args (control steps) */
    ir_step_kind kind;
    int n_args;
    bool *has_arg; /* control steps: which args are present */
    int level;     /* LOOP: its nesting; COPY: the loop whose iteration it indexes */
    int64_t trips; /* LOOP */
    /* COPY: for o < outer: dst + o * dst_stride + I(dst_rev) * dst_step <-
     * src + o * src_stride + I(src_rev) * src_step, `bytes` each; I(rev) is
     * the iteration of loop `level` (counted from the end when rev) */
    int64_t bytes, outer, dst_stride, src_stride, dst_step, src_step;
    bool dst_rev, src_rev;
} ir_call_site;

/* Description of a model input/output for run-time checks. */
typedef struct ir_io_desc {
    const char *name; /* model's own name: never emitted raw into C */
    smelt_dtype dtype;
    int rank;
    int64_t dims[SMELT_MAX_RANK]; /* a run-time dim: its maximum */
    signed char rt[SMELT_MAX_RANK]; /* 1 + the run-time dim (ir_program.rt) a dim is, 0: static */
    signed char rt_add[SMELT_MAX_RANK]; /* that dim's value plus rt_add[d] */
    bool dense; /* laid out at the run's dims (lower/program.c), not staged */
} ir_io_desc;

/* A dim the program takes at run time (gr_rt_dim): the runtime writes each
 * run's values, int64 each, at rt_dims_offset in the arena, where the
 * functions over it read them. */
#define IR_MAX_RT_DIMS 4
typedef struct ir_rt_dim {
    const char *name; /* the model's name: escaped by codegen */
    int64_t min, max;
    bool data; /* a data-dependent count the program writes (gr_rt_dim.data) */
} ir_rt_dim;

typedef struct ir_program {
    int n_funcs;
    ir_func **funcs;
    int n_calls;
    ir_call_site *calls; /* executed in order */
    int n_inputs, n_outputs;
    ir_io_desc *inputs, *outputs;
    int64_t arena_bytes;  /* activation arena size (64-byte aligned offsets) */
    int64_t weight_bytes; /* size of the weight blob */
    const unsigned char *weights; /* the blob (owned by the compiler's model) */
    int n_rt;             /* run-time dims, 0: a static program */
    ir_rt_dim rt[IR_MAX_RT_DIMS];
    int64_t rt_dims_offset;
} ir_program;

#endif
