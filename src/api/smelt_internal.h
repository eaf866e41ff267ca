/* What the CLI and tests may see behind the public API. */
#ifndef SMELT_INTERNAL_H
#define SMELT_INTERNAL_H

#include "exec/exec.h"
#include "graph/graph.h"

typedef struct smelt_compiled smelt_compiled;

struct smelt_model {
    gr_graph *graph;
    smelt_compiled *compiled; /* built on first compiled run */
    smelt_options options;    /* of the last compile */
    /* dynamic models: the bytes to re-import, and compiled specialisations */
    void *bytes;
    size_t size;
    char *base_dir;
    smelt_ptrvec specs;
};

bool smelt_graph_is_static(const gr_graph *g);
void smelt_specializations_free(smelt_model *m);
smelt_status smelt_run_specialized(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                   int num_inputs, smelt_tensor *outputs, int num_outputs);

void smelt_compiled_free(smelt_compiled *c);

gr_graph *smelt_model_graph(smelt_model *m);
/* Run every node through its compute definition with the te interpreter
 * (slow; checks compute definitions independently of code generation). */
smelt_status smelt_model_run_te(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                int num_inputs, smelt_tensor *outputs, int num_outputs);

#endif
