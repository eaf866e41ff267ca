/* Whole-graph lowering into an ir_program (what code generation consumes). */
#ifndef SMELT_LOWER_PROGRAM_H
#define SMELT_LOWER_PROGRAM_H

#include "graph/graph.h"
#include "lower/lower.h"

typedef struct lower_options {
    int vector_width; /* lanes of the target's float vectors; 1: no vectorisation */
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
} lowered_program;

smelt_status lower_graph(smelt_ctx *ctx, const gr_graph *g, const lower_options *opts,
                         lowered_program **out);
void lowered_program_free(lowered_program *lp);

#endif
