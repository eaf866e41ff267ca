/* Pattern recognition inside simplify_algebra (not a pass of its own):
 * decomposed LayerNorm and GELU become one node each. */
#ifndef SMELT_SIMPLIFY_PATTERNS_H
#define SMELT_SIMPLIFY_PATTERNS_H

#include "graph/graph.h"

/* What the rules see of simplify_algebra's state: uses[v->id] counts the
 * node inputs and graph outputs reading v, for ids below n_uses (values
 * created since the count was taken have no entry). */
typedef struct simp_view {
    smelt_ctx *ctx;
    gr_graph *g;
    const int *uses;
    int n_uses;
} simp_view;

/* Try the pattern rules with n as the pattern's last node; on a rewrite n's
 * output is produced by the new (or widened) node, n is detached and
 * *changed is set.  The caller refreshes the use counts after a change. */
smelt_status simp_patterns_rewrite(const simp_view *v, gr_node *n, bool *changed);

#endif
