/* What the CLI and tests may see behind the public API. */
#ifndef SMELT_INTERNAL_H
#define SMELT_INTERNAL_H

#include <pthread.h>

#include "exec/exec.h"
#include "graph/graph.h"
#include "passes/passes.h"

typedef struct smelt_compiled smelt_compiled;

/* What the last lowering took from options.records. */
typedef struct smelt_records_use {
    bool used;
    int functions, scheduled; /* generated functions; those from a record */
    int records;              /* records of this target read */
    int other_target, bad_schema, malformed; /* skipped */
    bool schedule_used;     /* options.schedule was given */
    int schedule_functions; /* functions it scheduled */
} smelt_records_use;

#define SMELT_MAX_DIM_TIES 8

struct smelt_model {
    gr_graph *graph;
    smelt_compiled *compiled; /* built on first compiled run */
    smelt_options options;    /* of the last compile */
    bool optimized;           /* the pass pipeline has run on graph */
    pass_report report;       /* what each pass did */
    smelt_records_use records_use;
    /* dynamic models: the bytes to re-import, and compiled specialisations */
    void *bytes;
    size_t size;
    char *base_dir;
    smelt_ptrvec specs;
    /* symbolic dims that follow another (smelt_model_tie_dim): name = base + add */
    struct smelt_dim_tie {
        const char *name, *base; /* owned */
        int64_t add;
    } ties[SMELT_MAX_DIM_TIES];
    int n_ties;
    /* nodes the last compiled run computed in generated code: those of the
     * optimised graph it ran (its own or a specialisation's); -1 before one,
     * 0 when every output had folded to a constant at compile time */
    int last_nodes;
    /* compile, the compiled code's swap and reference counts, the
     * specialisations: see "Thread safety" in smelt.h */
    pthread_mutex_t mu;
};

/* A model around a graph (owned from here on), default options; NULL when
 * out of memory (the graph is freed then). */
smelt_model *smelt_model_from_graph(gr_graph *g);

bool smelt_graph_is_static(const gr_graph *g);
/* The note smelt_check_test leaves in `why` on a compiled pass whose runs
 * computed nothing in generated code (every output folded to a constant). */
#define SMELT_CHECK_FOLDED_NOTE "no node ran in generated code: every output folded to a constant"
/* m->last_nodes, read under m->mu. */
int smelt_model_last_nodes(smelt_model *m);
/* The error for a graph whose shapes stay dynamic, naming the cause: an
 * input dim left symbolic, the node whose output size depends on the data,
 * or the node whose shape inference gave up (and why). */
smelt_status smelt_graph_refuse_dynamic(smelt_ctx *ctx, const gr_graph *g);
/* Whether an input of g has the symbolic dim NAME (smelt_model_set_dim). */
bool smelt_graph_has_dim(const gr_graph *g, const char *name);
/* The dims tied to BASE (smelt_model_tie_dim) bound in g to value + add
 * (g NULL: only checked); SMELT_ERR_ARG when one would fall below 1. */
smelt_status smelt_bind_tied_dims(smelt_ctx *ctx, const smelt_model *m, gr_graph *g,
                                  const char *base, int64_t value);
/* smelt_model_set_dim under m->mu. */
/* Run-time dim r (a data-dependent count) onto a, the graph inferred with
 * it at r.max, after comparing a value by value with b, the same graph with
 * it one smaller (api/rt_dims.c's rules; a refusal names the value). */
smelt_status smelt_rt_dim_add_compared(smelt_ctx *ctx, gr_graph *a, const gr_graph *b,
                                       gr_rt_dim r);
/* A model whose inputs are static and whose only dynamic dims are
 * data-dependent counts, compiled ahead of its inputs: a new model of m's
 * graph with the counts as run-time dims ("Data-dependent counts" in
 * api/specialize.c), m's options; else m's refusal of dynamic shapes. */
smelt_status smelt_model_with_counts(smelt_ctx *ctx, smelt_model *m, smelt_model **out);
smelt_status smelt_model_set_dim_locked(smelt_ctx *ctx, smelt_model *m, const char *name,
                                        int64_t value);

/* Run m (options.target: a target this process cannot load, with an
 * emulator) as a cross-built program under the emulator (api/cross.c). */
smelt_status smelt_model_run_cross(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                   int num_inputs, smelt_tensor *outputs, int num_outputs);
/* Whether m's compiled runs go through smelt_model_run_cross. */
bool smelt_model_runs_cross(const smelt_model *m);
/* For a GPU target (o->target opencl or cuda): where each function of the
 * model runs, a line per function (codegen/gpu_emit.c), into *out. */
smelt_status smelt_model_gpu_placement(smelt_ctx *ctx, smelt_model *m, const smelt_options *o,
                                       smelt_strbuf *out);
void smelt_specializations_free(smelt_model *m);
smelt_status smelt_run_specialized(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                   int num_inputs, smelt_tensor *outputs, int num_outputs);

void smelt_compiled_free(smelt_compiled *c);
/* The runtime model of m's compiled code, NULL when m is not compiled (tests:
 * the runtime's own checks as a package's caller meets them). */
struct smelt_rt_model *smelt_model_compiled_rt(const smelt_model *m);
/* Drops the model's reference to its compiled code (model free). */
void smelt_model_release_compiled(smelt_model *m);
/* SMELT_ERR_ARG when o asks for graph options other than those the graph
 * was optimised with (the passes rewrite it in place). */
smelt_status smelt_model_check_graph_options(smelt_ctx *ctx, const smelt_model *m,
                                             const smelt_options *o);
/* Run the graph pass pipeline once (smelt_model_compile does it first). */
smelt_status smelt_model_optimize(smelt_ctx *ctx, smelt_model *m, const smelt_options *o);

typedef struct smelt_compile_totals {
    int functions;        /* generated functions */
    int64_t arena_bytes;  /* activation arena */
    int64_t weight_bytes;
} smelt_compile_totals;

const smelt_records_use *smelt_model_records_use(const smelt_model *m);
/* Totals of the compiled (static) model; false when it is not compiled. */
bool smelt_model_totals(const smelt_model *m, smelt_compile_totals *t);

gr_graph *smelt_model_graph(smelt_model *m);
/* Run every node through its compute definition with the te interpreter
 * (slow; checks compute definitions independently of code generation). */
smelt_status smelt_model_run_te(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                int num_inputs, smelt_tensor *outputs, int num_outputs);

/* smelt_check_test, calling on_compiled (may be NULL) with the model after
 * a compiled check (the CLI reports what --records did). */
smelt_check_result smelt_check_test_noting(const char *dir, const smelt_check_options *o,
                                           void (*on_compiled)(const smelt_model *), char *why,
                                           size_t cap);
/* Compare one output with the expected tensor as smelt_check_test does
 * (dtype, shape, then elementwise; NaN matches NaN); why gets the reason. */
smelt_check_result smelt_check_compare(const smelt_tensor *got, const smelt_tensor *want,
                                       const smelt_check_options *o, char *why, size_t cap);
/* Sorted paths of dir's entries whose names start with prefix (NULL: all
 * but dot-files), smelt_alloc'ed; -1 when dir cannot be opened. */
int smelt_list_dir(const char *dir, const char *prefix, smelt_ptrvec *out);
void smelt_list_free(smelt_ptrvec *v);

#endif
