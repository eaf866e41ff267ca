/* Graph passes: one entry function per pass, one file per pass.  The ordered
 * pipeline is the table in pipeline.c. */
#ifndef SMELT_PASSES_H
#define SMELT_PASSES_H

#include <stdio.h>

#include "graph/graph.h"

/* Infer dtype and shape of every value; nodes whose inputs are all known
 * constants and whose outputs are small are evaluated and replaced by
 * constants, so shape subgraphs (Shape -> Gather -> Concat -> Reshape)
 * resolve when shapes are static. */
smelt_status pass_infer_shapes(smelt_ctx *ctx, gr_graph *g);

/* Sequences and optionals unrolled into their elements (unroll_containers.c)
 * on a graph inferred with the run's inputs: actual[i] is the run's value of
 * container input i (NULL: none), which becomes one input per tensor
 * element, NAME.K in pre-order; a container output becomes one output per
 * tensor element, NAME.K, and `layout` says how to rebuild it.  *resolved
 * false (the graph half rewritten: drop it) with the reason in why when a
 * position is not a compile-time constant or a container reaches another
 * op.  A Loop whose carried values change shape per iteration is unrolled
 * too when its trip count is a compile-time constant. */
typedef struct pass_unroll_node {
    smelt_dtype dtype; /* with the container bits for a container */
    int count;         /* a container's items, which follow in pre-order */
    int flat;          /* a tensor's index among the new outputs; -1 for a container */
} pass_unroll_node;
typedef struct pass_unroll_layout {
    int n_outputs; /* the graph's outputs before */
    int *first;    /* each one's first node */
    pass_unroll_node *nodes;
    int n_nodes, cap;
} pass_unroll_layout;
smelt_status pass_unroll_containers(smelt_ctx *ctx, gr_graph *g, const smelt_tensor *const *actual,
                                    pass_unroll_layout *layout, bool *resolved, char *why,
                                    size_t cap);
void pass_unroll_layout_fini(pass_unroll_layout *l);
/* Whether g holds containers, or a Loop whose shapes vary per iteration. */
bool pass_unroll_applies(const gr_graph *g);
/* Scan-8 nodes of a static graph unrolled per batch entry and step (C
 * control flow takes Scan-9 only); a node that does not unroll is left for
 * lowering to refuse, naming it. */
smelt_status pass_unroll_scan8(smelt_ctx *ctx, gr_graph *g);

/* Concats with more inputs than a generated function takes become trees of
 * Concats along the same axis (split_args.c). */
smelt_status pass_split_args(smelt_ctx *ctx, gr_graph *g);
smelt_status pass_expand_flex(smelt_ctx *ctx, gr_graph *g);

/* DequantizeLinear -> Conv -> QuantizeLinear with constant 8-bit weights
 * as one QLinearConv (int32 accumulation, requantization in its epilogue);
 * before fold_constants, which would fold the weights' DequantizeLinear. */
smelt_status pass_fuse_qdq(smelt_ctx *ctx, gr_graph *g);

/* float16/bfloat16 Conv, ConvTranspose, MatMul and Gemm computed by the
 * float32 kernels between Casts (the same values: one rounding at the output). */
smelt_status pass_widen_half(smelt_ctx *ctx, gr_graph *g);

/* Evaluate nodes whose inputs are all constants with the reference kernels,
 * unless the result would be bigger than max(64 KiB, the inputs' bytes). */
smelt_status pass_fold_constants(smelt_ctx *ctx, gr_graph *g);

/* Drop nodes whose outputs reach no graph output, and unused values. */
smelt_status pass_eliminate_dead(smelt_ctx *ctx, gr_graph *g);

/* Common subexpressions: same op, inputs and attributes computed once;
 * identical tiny constants shared. */
smelt_status pass_eliminate_common(smelt_ctx *ctx, gr_graph *g);

/* Algebraic identities and pattern recognition (see simplify_algebra.c). */
smelt_status pass_simplify_algebra(smelt_ctx *ctx, gr_graph *g);

/* Scaled dot-product attention (MatMul, scale, mask, Softmax, MatMul, with
 * the head split and merge around it) as one FusedAttention node (see
 * fuse_attention.c). */
smelt_status pass_fuse_attention(smelt_ctx *ctx, gr_graph *g);

/* BatchNormalization and per-channel Mul/Add by constants folded into the
 * weights and bias of the Conv before them. */
smelt_status pass_fold_batchnorm(smelt_ctx *ctx, gr_graph *g);

/* 2-D convolutions (group 1, depthwise) and the layout-agnostic ops around
 * them in the blocked layout NCHW[x]c, x from graph->hw.lanes; weights
 * packed at compile time, conversions only where a consumer needs another
 * layout (see alter_layout.c). */
smelt_status pass_alter_layout(smelt_ctx *ctx, gr_graph *g);

/* Float32 MatMul/Gemm with a constant 2-D B -> MatMulPacked, B packed in
 * column panels as wide as the default schedule's register tile (see
 * pack_weights.c). */
smelt_status pass_pack_weights(smelt_ctx *ctx, gr_graph *g);
/* A large float32 MatMul B computed at run time packed into the same panels
 * by a Reshape and a Transpose before MatMulPacked (pack_weights.c). */
smelt_status pass_pack_runtime_b(smelt_ctx *ctx, gr_graph *g);

/* Group nodes TVM-style (injective chains, conv/matmul epilogues,
 * producers into reductions); each group lowers to one function. */
smelt_status pass_fuse_ops(smelt_ctx *ctx, gr_graph *g);

/* ---- the pipeline (pipeline.c) ---- */

#define PASS_MAX 16

typedef struct pass_options {
    int opt_level;             /* 0..3 */
    const char *disabled;      /* comma-separated pass names, or NULL */
    const char *dump_after;    /* pass name or "all": print the graph after it */
    FILE *dump_out;            /* where dumps go (stdout if NULL) */
} pass_options;

typedef struct pass_stat {
    const char *name;
    bool ran;             /* false: below the level or disabled */
    bool changed;
    int nodes_before, nodes_after;
    double ms;
    char change[160];     /* op-count differences, e.g. "-53 BatchNormalization" */
} pass_stat;

typedef struct pass_report {
    int n;
    pass_stat passes[PASS_MAX];
} pass_report;

int pass_count(void);
const char *pass_name(int i);
const char *pass_description(int i);
int pass_min_level(int i);
/* Check every name in a comma-separated list; the error lists the valid ones. */
smelt_status pass_check_names(smelt_ctx *ctx, const char *list);
/* Run the table in order; report may be NULL. */
smelt_status pass_pipeline_run(smelt_ctx *ctx, gr_graph *g, const pass_options *o,
                               pass_report *report);

#endif
