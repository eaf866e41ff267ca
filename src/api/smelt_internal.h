/* What the CLI and tests may see behind the public API. */
#ifndef SMELT_INTERNAL_H
#define SMELT_INTERNAL_H

#include "graph/graph.h"

struct smelt_model {
    gr_graph *graph;
};

gr_graph *smelt_model_graph(smelt_model *m);

#endif
