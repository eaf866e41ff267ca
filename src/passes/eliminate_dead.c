/* Dead code elimination: nodes whose outputs reach no graph output go, and
 * so do values (and constant data) nothing refers to any more. */
#include "passes/pass_util.h"
#include "passes/passes.h"

smelt_status pass_eliminate_dead(smelt_ctx *ctx, gr_graph *g)
{
    return pu_finish(ctx, g);
}
