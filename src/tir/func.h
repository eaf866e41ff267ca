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
} ir_slot_kind;

typedef struct ir_slot {
    ir_slot_kind kind;
    int index;
    int64_t offset;
} ir_slot;

typedef struct ir_call_site {
    const ir_func *func;
    ir_slot *args; /* one per func param */
} ir_call_site;

/* Description of a model input/output for run-time checks. */
typedef struct ir_io_desc {
    const char *name; /* model's own name: never emitted raw into C */
    smelt_dtype dtype;
    int rank;
    int64_t dims[SMELT_MAX_RANK];
} ir_io_desc;

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
} ir_program;

#endif
