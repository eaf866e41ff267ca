/* Graph IR: typed SSA values and op nodes in topological order.
 *
 * A value is produced by exactly one node, or is a graph input, or is a
 * constant (initializer, Constant node, or folded).  Dims are int64: >= 0 is a
 * static size, < 0 is a symbolic dim (GR_DIM_SYM(id), named in graph->syms).
 * Everything here lives in the graph's arena except constant tensor data,
 * which goes through the allocator hook and is released by gr_graph_free.
 */
#ifndef SMELT_GRAPH_H
#define SMELT_GRAPH_H

#include "base/base.h"
#include "base/hw.h"
#include "ops/op_kind.h"

typedef int64_t gr_dim;
#define GR_DIM_SYM(id) (-(int64_t)(id)-1)
#define GR_DIM_SYM_ID(d) ((int)(-(d)-1))
#define GR_DIM_IS_STATIC(d) ((d) >= 0)

typedef struct gr_node gr_node;
typedef struct gr_graph gr_graph;

typedef struct gr_value {
    const char *name;
    int id;
    smelt_dtype dtype;
    int rank; /* -1 until shape inference has run */
    gr_dim dims[SMELT_MAX_RANK];
    gr_node *producer; /* NULL for graph inputs and constants */
    int producer_output;
    smelt_tensor *constant; /* non-NULL: compile-time known contents */
    bool is_input, is_output;
    /* subgraph inputs past the formal ones: 1 + the index of the owning
     * node's input that carries the outer value read here by name; 0 else */
    int capture;
    /* a constant computed from a run-time dim (api/rt_dims.c): its dims
     * equal to the dim's maximum are that dim, and folding it further
     * (passes/fold_constants.c) is left to run time */
    bool rt_varies;
} gr_value;

/* Raw ONNX attribute, kept for printing and read by each op's import. */
typedef enum gr_attr_type {
    GR_ATTR_FLOAT,
    GR_ATTR_INT,
    GR_ATTR_STRING,
    GR_ATTR_TENSOR,
    GR_ATTR_FLOATS,
    GR_ATTR_INTS,
    GR_ATTR_STRINGS,
    GR_ATTR_GRAPH, /* a subgraph (If/Loop/Scan bodies): gr_attr.g */
    GR_ATTR_TYPE,  /* a TypeProto (Optional's type): gr_attr.i holds its smelt_dtype */
} gr_attr_type;

typedef struct gr_attr {
    const char *name;
    gr_attr_type type;
    float f;
    int64_t i;
    const char *s; /* NUL-terminated copy; s_len excludes the NUL */
    size_t s_len;
    smelt_tensor *t; /* owned by the graph */
    int n;           /* element count of floats/ints/strings */
    float *floats;
    int64_t *ints;
    const char **strings;
    gr_graph *g; /* GR_ATTR_GRAPH: owned by the graph holding the node */
} gr_attr;

struct gr_node {
    const char *name;    /* unique within the graph (the importer names unnamed nodes) */
    const char *op_type; /* as in the model, e.g. "Conv" */
    op_kind op;
    int id;
    int n_inputs, n_outputs;
    gr_value **inputs;  /* NULL entries are omitted optional inputs */
    gr_value **outputs; /* NULL entries are omitted optional outputs */
    int n_attrs;
    gr_attr *attrs;
    void *op_attrs; /* typed attribute struct of the op, set by its import */
    int group;      /* fused group (pass_fuse_ops): one generated function; -1 = alone */
};

/* A dim compiled code takes at run time (smelt_model_set_dim_range, CLI
 * --dim NAME=MIN..MAX): the graph is inferred, planned and laid out with it
 * at MAX (so a value's rows past the run's length are padding), and every
 * non-constant value's dim equal to MAX is that dim (checked when the range
 * is set: docs/ARCHITECTURE.md, "Run-time dims"). */
#define GR_MAX_RT_DIMS 4
/* Dims that follow a run-time dim at a distance (a key/value cache's
 * present = past + 1): at most GR_MAX_RT_ADDS distances per dim, each within
 * +-GR_RT_ADD_LIMIT of it. */
#define GR_MAX_RT_ADDS 4
#define GR_RT_ADD_LIMIT 8
typedef struct gr_rt_dim {
    const char *name; /* the symbolic input dim's name (arena string) */
    int64_t min, max;
    int n_adds;
    int64_t adds[GR_MAX_RT_ADDS]; /* non-zero: dims equal to max + add are the dim + add */
    /* a data-dependent count (NonMaxSuppression's selected rows), bounded
     * by max: a kernel writes its value mid-run, min is 0, and no input
     * gives it (api/specialize.c, "Data-dependent counts") */
    bool data;
} gr_rt_dim;

/* A data-dependent dim given a size for compiling (op_def.count_bound):
 * inference gives dim `dim` of the value named `value` this size instead
 * of a fresh symbol.  Several outputs may share one count (Unique's). */
#define GR_MAX_DATA_BINDS 8
typedef struct gr_data_bind {
    const char *value; /* arena string */
    int dim;
    int64_t size;
} gr_data_bind;

struct gr_graph {
    smelt_arena arena;
    smelt_ptrvec nodes; /* gr_node*, topological order once sorted */
    smelt_ptrvec values; /* gr_value*, all values */
    smelt_ptrvec inputs; /* gr_value*, runtime inputs in model order */
    smelt_ptrvec outputs; /* gr_value*, in model order */
    smelt_ptrvec syms; /* char*, names of symbolic dims */
    smelt_strmap sym_index; /* named (not anonymous) dim -> id + 1 */
    smelt_ptrvec owned_tensors; /* smelt_tensor* freed with the graph */
    const char *name;
    int64_t opset; /* default-domain opset */
    /* the opsets the model imports of the other domains smelt knows, by
     * op_domain (ops/op.h; [0], ai.onnx, is `opset`); 0: not imported */
    int64_t domain_opsets[4];
    /* the hardware of the target the graph is compiled for (set by
     * smelt_model_optimize): alter_layout's channel block is hw.lanes,
     * pack_weights' panels follow the matmul rule's tile; lanes 0 = not known */
    smelt_hw hw;
    /* why shape inference gave up on the first node it could not infer
     * (an op error naming node and op; arena string), NULL when none did:
     * the cause to report when shapes stay dynamic */
    const char *infer_stop;
    /* run-time dims (root graph only), distinct maxima */
    int n_rt_dims;
    gr_rt_dim rt_dims[GR_MAX_RT_DIMS];
    /* data-dependent dims given sizes (root graph only) */
    int n_data_binds;
    gr_data_bind data_binds[GR_MAX_DATA_BINDS];
    /* Subgraphs (graph attributes of If/Loop/Scan): their own values, nodes
     * and names, so nothing collides with the enclosing graph.  inputs are
     * the ONNX graph's formal inputs (n_formal of them), then the captures:
     * values of enclosing graphs the body reads by name, each fed by an
     * extra input of the owning node (gr_value.capture).  Symbolic dims are
     * the root graph's (gr_graph_sym and friends go to the root). */
    gr_graph *parent;      /* NULL for the model's graph */
    int n_formal;
    smelt_ptrvec subgraphs; /* gr_graph*: owned, freed with this graph */
};

gr_graph *gr_graph_new(void);
/* A subgraph owned by (and freed with) parent; same opset and hardware. */
gr_graph *gr_subgraph_new(gr_graph *parent);
/* The model's graph above g (g itself when it is not a subgraph). */
const gr_graph *gr_graph_root(const gr_graph *g);
void gr_graph_free(gr_graph *g);

/* Values.  Names are copied.  Returns NULL on allocation failure. */
gr_value *gr_value_new(gr_graph *g, const char *name);
gr_value *gr_graph_find_value(const gr_graph *g, const char *name);
int gr_graph_sym(gr_graph *g, const char *name); /* find or add; -1 on OOM */
int gr_graph_new_sym(gr_graph *g);               /* fresh anonymous symbol */

/* Take ownership of t (allocated with smelt_alloc) as v's constant contents;
 * sets dtype/rank/dims of v from it. */
smelt_status gr_value_set_constant(smelt_ctx *ctx, gr_graph *g, gr_value *v, smelt_tensor *t);
/* New constant value holding t (owned from now on). */
gr_value *gr_graph_add_constant(smelt_ctx *ctx, gr_graph *g, const char *name_hint,
                                smelt_tensor *t);

/* Nodes.  Inputs/outputs arrays are allocated with the given counts. */
gr_node *gr_node_new(gr_graph *g, const char *name, const char *op_type, op_kind op,
                     int n_inputs, int n_outputs);
const gr_attr *gr_node_attr(const gr_node *n, const char *name);
/* Replace input i by v, growing the input list if needed. */
smelt_status gr_node_set_input(smelt_ctx *ctx, gr_graph *g, gr_node *n, int i, gr_value *v);

/* A tensor describing v: dtype, rank, dims, and data if constant, else NULL. */
smelt_tensor gr_value_info(const gr_value *v);
int64_t gr_value_numel(const gr_value *v); /* -1 if any dim is symbolic or rank unknown */
/* The run-time dim (index into g's root rt_dims) that dim d of v follows, or
 * -1: a dim equal to a run-time dim's maximum plus 0 or one of its adds, of a
 * non-constant value or of a constant computed from the dim (rt_varies);
 * *add (when non-NULL) gets that distance: the dim is the run's value + add. */
int gr_value_rt_dim_add(const gr_graph *g, const gr_value *v, int d, int64_t *add);
int gr_value_rt_dim(const gr_graph *g, const gr_value *v, int d);
/* Whether extent is run-time dim r's maximum plus 0 or one of its adds. */
bool gr_rt_dim_matches(const gr_rt_dim *r, int64_t extent, int64_t *add);

/* Topologically sort g->nodes; error names a node on a cycle. */
smelt_status gr_graph_toposort(smelt_ctx *ctx, gr_graph *g);

/* The end (exclusive) of the unit starting at node position `start`: a
 * maximal run of consecutive nodes of one fused group (node->group), or the
 * single node when it is not fused.  Each unit lowers to one generated
 * function (lower/program.c); compile --stats lists them the same way. */
int gr_unit_end(const gr_graph *g, int start);
/* Check structural invariants; error describes the first violation. */
smelt_status gr_graph_verify(smelt_ctx *ctx, const gr_graph *g);

/* Deterministic text form, and Graphviz DOT. */
void gr_graph_print(const gr_graph *g, smelt_strbuf *out);
void gr_graph_print_dot(const gr_graph *g, smelt_strbuf *out);
void gr_value_print_type(const gr_graph *g, const gr_value *v, smelt_strbuf *out);

#endif
