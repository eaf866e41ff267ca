/* What the rest of the compiler uses of the public te API (api/te_api.c). */
#ifndef SMELT_API_TE_API_H
#define SMELT_API_TE_API_H

#include "smelt_te.h"
#include "te/te.h"

/* A smelt_te_graph over a te graph the caller owns (a custom op's definition
 * adds its computes there): placeholders and schedules are refused, and
 * smelt_te_graph_free leaves te alone. */
smelt_te_graph *smelt_te_graph_wrap(te_graph *te, smelt_ctx *ctx);

#endif
