/* Whole-graph lowering into an ir_program (what code generation consumes). */
#ifndef SMELT_LOWER_PROGRAM_H
#define SMELT_LOWER_PROGRAM_H

#include "graph/graph.h"
#include "lower/lower.h"

typedef struct lower_options {
    const smelt_hw *hw; /* the target's hardware (lanes 1: no vectorisation); required */
    const sch_source *schedules; /* stored schedules (tuning records), or NULL */
    sch_user_file *user_schedules; /* a person's schedule file (asked first), or NULL */
    /* The tuner's measurement programs: lower only unit `unit` (gr_unit_end's
     * numbering) as a whole program whose inputs are the unit's non-constant
     * inputs and whose outputs are the values it produces for others. */
    bool single_unit;
    int unit;
    /* Called with each unit's te graph before it is scheduled (task
     * extraction), or NULL. */
    void (*on_unit)(void *user, int unit, const te_graph *te);
    void *on_unit_user;
} lower_options;

/* The program and everything its functions point into. */
typedef struct lowered_program {
    smelt_arena arena;
    ir_builder b;
    ir_program prog;
    smelt_ptrvec te_graphs; /* te_graph*: own the placeholder/output buffers */
    smelt_ptrvec states;    /* sch_state* */
    unsigned char *weights; /* the blob prog.weights points to */
    /* --stats: bytes of all intermediate values of the graph, and of those
     * written to memory (group outputs), against prog.arena_bytes */
    int64_t intermediate_bytes, materialized_bytes;
    int n_stored; /* functions scheduled from opts->schedules */
    int n_user;   /* functions scheduled from opts->user_schedules */
    /* single_unit: the unit's nodes [unit_first, unit_end) of the graph, and
     * the values bound to the program's inputs and outputs, in their order */
    int unit_first, unit_end;
    const gr_value **unit_inputs, **unit_outputs;
} lowered_program;

smelt_status lower_graph(smelt_ctx *ctx, const gr_graph *g, const lower_options *opts,
                         lowered_program **out);
/* The loop IR holds tensors only (runs unroll containers per signature,
 * passes/unroll_containers.c): the first node (of g or its bodies) or graph
 * input/output still holding one is refused by name. */
smelt_status lower_refuse_containers(smelt_ctx *ctx, const gr_graph *g);
void lowered_program_free(lowered_program *lp);

/* Number of units (generated functions before output copies) of g. */
int lower_count_units(const gr_graph *g);

#endif
