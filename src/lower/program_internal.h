/* Inside lower/: the whole-graph lowering's builder, shared by program.c
 * and control.c (If/Loop/Scan as control steps around their bodies). */
#ifndef SMELT_LOWER_PROGRAM_INTERNAL_H
#define SMELT_LOWER_PROGRAM_INTERNAL_H

#include "lower/program.h"
#include "passes/plan_memory.h"

typedef struct value_slot {
    bool assigned;
    ir_slot slot;
} value_slot;

typedef struct prog_builder {
    smelt_ctx *ctx;
    const gr_graph *g;
    const lower_options *opts;
    lowered_program *lp;
    value_slot *slots; /* by value id */
    smelt_ptrvec funcs, calls; /* ir_func*, ir_call_site* */
    int64_t arena_bytes, weight_bytes;
    smelt_ptrvec weight_consts; /* const_weight*: graph constants, te constants (Winograd's) */
    mem_block *blocks; /* per arena value, in order of creation (ir_slot.index until planned) */
    int n_blocks, cap_blocks;
    int *unit_of; /* per value id: the unit (lowered function) producing it, -1: none */
    bool *escapes; /* per value id: read outside its unit, or a graph output */
    int unit;      /* the unit being lowered */
    /* the program's inputs and outputs: the graph's, or in single-unit mode
     * the unit's (unit_in, unit_out, filled as the unit is lowered) */
    const smelt_ptrvec *inputs, *outputs;
    smelt_ptrvec unit_in, unit_out;
    /* run-time dims (gr_graph.rt_dims of the root graph): their maxima, and
     * the arena block the runtime writes their values to */
    int n_rt;
    te_rt_dim rt[IR_MAX_RT_DIMS];
    ir_slot rt_slot;
    /* per value id: a model input or output laid out at the run's dims (not
     * staged through a buffer at the maxima), or NULL (none: subgraphs,
     * single units); retry_dense: a function could not prove its accesses
     * to one, which is dropped from the set, and lowering starts again */
    bool *dense;
    bool retry_dense;
} prog_builder;

smelt_status prog_oom(prog_builder *pb);
/* A new arena block, first written by the step about to be added. */
smelt_status prog_new_block(prog_builder *pb, int64_t bytes, ir_slot *slot);
/* Where value v (of pb->g) lives: model input/output, weights or arena. */
smelt_status prog_slot_of(prog_builder *pb, const gr_value *v, ir_slot *out);
smelt_status prog_find_escapes(prog_builder *pb);
/* `bytes` of data (kept alive by the caller until lowering ends) in the weights. */
smelt_status prog_weight(prog_builder *pb, const void *data, int64_t bytes, ir_slot *out);
/* Lower nodes [start, end) of pb->g as units (functions and control steps). */
smelt_status prog_lower_nodes(prog_builder *pb);
/* Append a control step (its arena arguments are read or written there). */
smelt_status prog_push_step(prog_builder *pb, ir_call_site *step);

/* lower/control.c: an If, Loop or Scan node as control steps around calls
 * of its bodies' functions. */
smelt_status lower_control_node(prog_builder *pb, const gr_node *n);
/* Blocks read inside a loop that were written before it live to its end. */
void lower_control_lifetimes(prog_builder *pb);

#endif
