/* Helpers shared by the graph rewriting passes (not a pass itself). */
#ifndef SMELT_PASS_UTIL_H
#define SMELT_PASS_UTIL_H

#include "graph/graph.h"

/* Uses of each value by node inputs, indexed by value id; graph outputs count
 * one more.  Free with smelt_free; NULL on OOM. */
int *pu_use_counts(const gr_graph *g);

/* Point every node input reading `from` at `to`.  Graph outputs keep their
 * names, so a value that is a graph output is never replaced: returns false
 * and changes nothing then. */
bool pu_replace_uses(gr_graph *g, gr_value *from, gr_value *to);

/* Make `keep` produce `dst` (an output of a node about to vanish, same dtype
 * and shape) instead of its current output, which is left unproduced; keeps
 * graph output names when a producer absorbs its consumer. */
void pu_take_output(gr_node *keep, int k, gr_value *dst);

/* Detach every output of n (n is then dead). */
void pu_detach(gr_node *n);

/* Sort, drop nodes none of whose outputs is used, drop values nothing refers
 * to (freeing their constant data), renumber nodes and values. */
smelt_status pu_finish(smelt_ctx *ctx, gr_graph *g);

/* Drop nodes whose outputs are all detached (folded), and unreferenced values. */
smelt_status pu_drop_detached(smelt_ctx *ctx, gr_graph *g);

/* Evaluate n (all inputs constant) with the reference kernels; its outputs
 * become constants and n is detached. */
smelt_status pu_fold_node(smelt_ctx *ctx, gr_graph *g, gr_node *n);

/* New node of `kind` with the given inputs and fresh outputs named after
 * `name`; raw attributes are added with pu_attr_* and then pu_node_import
 * builds the typed struct. */
gr_node *pu_node_new(smelt_ctx *ctx, gr_graph *g, const char *name, op_kind kind,
                     gr_value *const *inputs, int n_inputs, int n_outputs);
smelt_status pu_attr_int(smelt_ctx *ctx, gr_graph *g, gr_node *n, const char *name, int64_t v);
smelt_status pu_attr_float(smelt_ctx *ctx, gr_graph *g, gr_node *n, const char *name, float v);
smelt_status pu_attr_string(smelt_ctx *ctx, gr_graph *g, gr_node *n, const char *name,
                            const char *v);
smelt_status pu_attr_ints(smelt_ctx *ctx, gr_graph *g, gr_node *n, const char *name,
                          const int64_t *v, int count);
smelt_status pu_node_import(smelt_ctx *ctx, gr_graph *g, gr_node *n);

/* Dtype and shape of every output of a new node (any number of inputs and
 * outputs) from its inputs' types with its op's shape inference; `pass`
 * names the caller in errors. */
smelt_status pu_infer_node(smelt_ctx *ctx, gr_node *n, const char *pass);

/* Copy a subgraph's nodes into g, named PREFIX/NODE and reusing their
 * attributes; map (indexed by body value id) gives the graph value of each
 * body value: the caller fills it for the body's inputs (formal and
 * captured), each copy's outputs are added.  Without `after` each copy's
 * outputs are typed like the body's; with it, `after` types each copy (a
 * body whose inputs differ per copy: pu_infer_node, or a rewrite). */
typedef smelt_status (*pu_copy_fn)(void *user, gr_node *copy);
smelt_status pu_copy_body(smelt_ctx *ctx, gr_graph *g, const gr_node *owner, const gr_graph *body,
                          const char *prefix, gr_value **map, pu_copy_fn after, void *user);
/* The graph value of body value v (a body constant is copied into g on
 * first use); an error naming owner when v has none. */
smelt_status pu_body_value(smelt_ctx *ctx, gr_graph *g, const gr_node *owner, const char *prefix,
                           gr_value **map, const gr_value *v, gr_value **out);

/* New constant tensor values: any dtype (data holds its elements), float32, int64. */
gr_value *pu_const(smelt_ctx *ctx, gr_graph *g, const char *hint, smelt_dtype dt, int rank,
                   const int64_t *dims, const void *data);
gr_value *pu_const_f32(smelt_ctx *ctx, gr_graph *g, const char *hint, int rank,
                       const int64_t *dims, const float *data);
gr_value *pu_const_i64(smelt_ctx *ctx, gr_graph *g, const char *hint, int rank,
                       const int64_t *dims, const int64_t *data);

/* v is a constant whose every element equals x (any numeric dtype). */
bool pu_const_all(const gr_value *v, double x);
/* v is a constant holding one value (any shape); *x gets it. */
bool pu_const_scalar(const gr_value *v, double *x);
/* Same dtype, rank and static dims. */
bool pu_same_type(const gr_value *a, const gr_value *b);
/* The node producing v if it is of `kind`, else NULL. */
gr_node *pu_producer(const gr_value *v, op_kind kind);

#endif
