/* Op registry interface and helpers shared by the op family files.
 *
 * Each op provides three functions (its op_def, defined in the family file
 * named in ops.def):
 *
 *   import  reads node->attrs (raw ONNX attributes, opset-specific forms) and
 *           stores a typed struct in node->op_attrs.  Where an older opset
 *           gave as an attribute what a newer one takes as an input (Clip
 *           min/max, Reduce axes, Split/Squeeze/Unsqueeze/Pad/Slice...), import
 *           normalises to the newest form by adding a constant input, so infer
 *           and eval see one form only.  Optional; NULL means "no attributes".
 *
 *   infer   computes each output's dtype, rank and dims from the inputs.
 *           Inputs are described as smelt_tensor: dims may be symbolic (< 0)
 *           during compile-time inference; `data` is non-NULL when the
 *           contents are known (always at run time).  in[i] is NULL for an
 *           omitted optional input.  Output data is never set by infer.
 *           Use GR_DIM_UNKNOWN for a dim that cannot be known yet.
 *
 *   compute (compiled path) declares the outputs as tensor expressions over
 *           the inputs' placeholders: arithmetic only, no loop structure
 *           (that is the schedule's job).  Optional while being written.
 *
 *   eval    the reference kernel: straightforward, obviously correct code
 *           (the test oracle and the constant folder).  Output tensors come
 *           with dtype/rank/dims from infer and zeroed, allocated data.
 *
 * All three report errors through op_errf so messages name node and op.
 */
#ifndef SMELT_OP_H
#define SMELT_OP_H

#include "graph/graph.h"

typedef enum op_pattern {
    OP_PATTERN_ELEMWISE,    /* out[i] = f(in[i]) */
    OP_PATTERN_BROADCAST,   /* elementwise with broadcasting */
    OP_PATTERN_INJECTIVE,   /* each output element reads a computable input index */
    OP_PATTERN_REDUCTION,   /* reduces over some axes */
    OP_PATTERN_OUT_FUSABLE, /* conv/matmul: elementwise epilogues fuse into it */
    OP_PATTERN_OPAQUE,      /* anything else */
} op_pattern;

/* A dim that infer cannot know (data-dependent); becomes a fresh symbol. */
#define GR_DIM_UNKNOWN INT64_MIN

enum {
    OP_FLAG_SHAPE_ONLY = 1 << 0, /* eval reads only input shapes (Shape, Size) */
    OP_FLAG_NO_FOLD = 1 << 1,    /* never constant-fold (e.g. huge outputs) */
    OP_FLAG_INTERNAL = 1 << 2,   /* made by passes only; the importer refuses it */
    /* not folded during shape inference, only by fold_constants (-O1), so
     * the passes before it see the node (DequantizeLinear of constant
     * weights: passes/fuse_qdq.c) */
    OP_FLAG_FOLD_LATE = 1 << 3,
    /* control flow (ops/control.h): graph attributes; run by the executor
     * (exec/control.c) and lowered (lower/control.c) as whole bodies */
    OP_FLAG_SUBGRAPHS = 1 << 4,
    /* takes or gives sequence/optional values (smelt.h's container dtypes):
     * other ops refuse them (op_check_container_inputs); eval makes its
     * container outputs itself (exec.c) */
    OP_FLAG_CONTAINERS = 1 << 5,
    /* the outputs' unknown dims are one data-dependent count (Unique's Y,
     * indices and counts): inference gives them one symbol */
    OP_FLAG_ONE_COUNT = 1 << 6,
};

/* Compiled path: the op's arithmetic as tensor expressions (see op_compute). */
struct te_graph;
struct te_tensor;
typedef struct op_compute_args {
    smelt_ctx *ctx;
    struct te_graph *te;
    const gr_node *node;
    /* per node input (NULL when omitted): its te placeholder, and its
     * contents when known at compile time (constants), else NULL */
    struct te_tensor *const *in;
    const smelt_tensor *const *in_const;
    /* per node output: the static type infer gave (dims all >= 0) */
    const smelt_tensor *out_type;
    /* to fill: one te tensor per present output */
    struct te_tensor **out;
} op_compute_args;

typedef struct op_def {
    /* te definition of the outputs; NULL: no compiled form yet */
    smelt_status (*compute)(op_compute_args *a);
    smelt_status (*import)(smelt_ctx *ctx, gr_graph *g, gr_node *node);
    smelt_status (*infer)(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                          smelt_tensor *out);
    smelt_status (*eval)(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                         smelt_tensor *out);
    /* An upper bound of output `out`'s dim `dim` when infer leaves it
     * unknown because it depends on the data (a count of selected rows),
     * from the node's inputs (their static dims, constant contents); -1:
     * none.  Compiled code then runs with the dim at run time
     * (api/specialize.c, "Data-dependent counts"). */
    int64_t (*count_bound)(const gr_node *node, int out, int dim);
    int min_inputs, max_inputs;   /* max -1: variadic */
    int min_outputs, max_outputs;
    unsigned flags;
} op_def;

/* The newest ai.onnx opset smelt knows (ops.def's NEWEST): the opset of
 * the onnx release whose schemas tests/unit/onnx_schema.inc holds. */
#define SMELT_ONNX_OPSET 28
/* Other domains: ops.def names their ops "<domain>.<OpType>", FIRST..LAST
 * in that domain's opsets, the newest smelt knows ops.def's ML_NEWEST,
 * PREVIEW_NEWEST and TRAINING_NEWEST. */
typedef enum op_domain {
    OP_DOMAIN_ONNX,    /* ai.onnx (""): graph->opset */
    OP_DOMAIN_ML,      /* ai.onnx.ml */
    OP_DOMAIN_PREVIEW, /* ai.onnx.preview */
    OP_DOMAIN_TRAINING, /* ai.onnx.preview.training */
    OP_DOMAIN_COUNT_,
} op_domain;
#define SMELT_ONNX_ML_OPSET 5
#define SMELT_ONNX_PREVIEW_OPSET 1
#define SMELT_ONNX_TRAINING_OPSET 1

/* An attribute an op's import implements (reads, or knows to have no effect
 * on what smelt computes), in the model opsets [since, until] of the ONNX
 * schema; 0 for either: the op's FIRST or LAST opset (ops.def).  Anything a
 * node carries that its op's table does not list is refused, so no attribute
 * is ever silently ignored.  A value the import does not implement is refused
 * by the import itself. */
typedef struct op_attr_spec {
    const char *name;
    int since, until;
} op_attr_spec;

/* The table of op ENUM, next to its import function:
 *   OP_ATTRS(SPACE_TO_DEPTH) = {{"blocksize", 0, 0}, {"mode", 28, 0}, {NULL, 0, 0}};
 * An op without a table (registry.c refers to it weakly) knows none. */
#define OP_ATTRS(ENUM) const op_attr_spec op_attrs_##ENUM[]

typedef struct op_info {
    op_kind kind;
    const char *name;   /* ONNX op_type */
    const char *family; /* file in src/ops */
    op_pattern pattern;
    const op_def *def;  /* NULL if the family file does not define it (yet) */
    int opset_first, opset_last; /* ops.def: implemented ai.onnx opsets (0: internal) */
    const op_attr_spec *attrs;   /* {NULL}-terminated; NULL: no attributes */
} op_info;

const op_info *op_get(op_kind kind);
const op_info *op_lookup(const char *onnx_name); /* default domain; NULL if unknown */
/* An op of another domain by its op type; NULL if unknown. */
const op_info *op_lookup_in(op_domain d, const char *op_type);
op_domain op_domain_of(const op_info *info);
/* The domain of a NodeProto's domain string; OP_DOMAIN_COUNT_: none smelt knows. */
op_domain op_domain_find(const char *domain);
const char *op_domain_name(op_domain d); /* "ai.onnx", "ai.onnx.ml", ... */
int op_domain_newest(op_domain d);
/* The op type without its domain prefix (ops.def's name for ai.onnx ops). */
const char *op_type_name(const op_info *info);
/* The model's opset of the op's domain. */
int64_t op_model_opset(const gr_graph *g, const op_info *info);
const char *op_pattern_name(op_pattern p);
/* The spec of attribute `name` of op `info` at model opset `opset`; NULL
 * when the op does not implement it there. */
const op_attr_spec *op_attr_find(const op_info *info, const char *name, int64_t opset);

/* ---- Errors ----------------------------------------------------------------- */
/* Formats "node 'NAME' (OpType): MESSAGE". */
smelt_status op_errf(smelt_ctx *ctx, const gr_node *node, smelt_status code, const char *fmt,
                     ...) SMELT_PRINTF(4, 5);

/* ---- Attributes (import) -------------------------------------------------------
 * Each returns SMELT_OK and the default when the attribute is absent, and an
 * error naming the attribute when it is present with the wrong type. */
smelt_status op_attr_int(smelt_ctx *ctx, const gr_node *n, const char *name, int64_t def,
                         int64_t *out);
/* A TypeProto attribute's dtype (container dtypes included); UNDEFINED when absent. */
smelt_status op_attr_type(smelt_ctx *ctx, const gr_node *n, const char *name, smelt_dtype *out);
smelt_status op_attr_float(smelt_ctx *ctx, const gr_node *n, const char *name, float def,
                           float *out);
/* An int attribute that ONNX defines as 0 or 1; other values are refused
 * (they mean nothing smelt implements). */
smelt_status op_attr_bool(smelt_ctx *ctx, const gr_node *n, const char *name, bool def,
                          bool *out);
smelt_status op_attr_string(smelt_ctx *ctx, const gr_node *n, const char *name,
                            const char *def, const char **out);
/* *out points into the graph (do not free); *count = -1 when absent. */
smelt_status op_attr_ints(smelt_ctx *ctx, const gr_node *n, const char *name, int *count,
                          const int64_t **out);
smelt_status op_attr_floats(smelt_ctx *ctx, const gr_node *n, const char *name, int *count,
                            const float **out);
smelt_status op_attr_tensor(smelt_ctx *ctx, const gr_node *n, const char *name,
                            const smelt_tensor **out); /* *out NULL when absent */
/* Allocate the typed attribute struct in the graph arena and set node->op_attrs. */
void *op_attrs_new(smelt_ctx *ctx, gr_graph *g, gr_node *n, size_t size);

/* Normalise an attribute into constant input `index` (newest-opset form):
 * makes a 1-D int64 constant of `count` values.  Pads missing inputs in
 * between with NULL. */
smelt_status op_set_input_ints(smelt_ctx *ctx, gr_graph *g, gr_node *n, int index,
                               const int64_t *vals, int count);
/* Same, for a float32 scalar (rank 0) constant. */
smelt_status op_set_input_float_scalar(smelt_ctx *ctx, gr_graph *g, gr_node *n, int index,
                                       float v);

/* ---- Shapes (infer) --------------------------------------------------------- */
/* in[i] if present (i < node->n_inputs and not omitted), else NULL. */
const smelt_tensor *op_input(const gr_node *node, const smelt_tensor *const *in, int i);
/* Normalise a possibly negative axis into [0, rank); error if out of range. */
smelt_status op_norm_axis(smelt_ctx *ctx, const gr_node *n, int64_t axis, int rank, int *out);
/* Multidirectional (numpy) broadcast of inputs a and b into out's rank/dims. */
smelt_status op_broadcast(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *a,
                          const smelt_tensor *b, smelt_tensor *out);
/* Copy dtype, rank, dims of src into dst (no data). */
void op_copy_shape(smelt_tensor *dst, const smelt_tensor *src);
/* Read the known contents of an integer tensor (int64/int32...) as int64.
 * Error naming the input if the contents are unknown at compile time or the
 * element count exceeds max.  Returns the count in *count. */
smelt_status op_read_ints(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                          const char *what, int64_t *vals, int max, int *count);
/* Check that an input has a known (non-NULL) dtype among `allowed` (a
 * SMELT_DT_UNDEFINED-terminated list). */
smelt_status op_check_dtype(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                            const char *what, const smelt_dtype *allowed);
bool op_dims_static(const smelt_tensor *t);
/* What is wrong with a container value (smelt.h's layout: rank 1, element
 * count, elements of the element type, recursively), as text; NULL if
 * nothing. */
const char *op_container_problem(const smelt_tensor *t, char *buf, size_t cap);
/* Does the node run bodies (an OP_FLAG_SUBGRAPHS op holding a graph
 * attribute)?  Then the executor and lowering treat it as control flow;
 * FlexAttention without modifier bodies is an ordinary compute. */
bool op_runs_bodies(const gr_node *n);
/* Inputs that are sequences or optionals: refused unless the op takes them
 * (OP_FLAG_CONTAINERS), and checked when they hold data. */
/* For a compute whose output dim of size `bound` is a data-dependent count
 * its kernel writes (op_def.count_bound): the te graph's rt_dims
 * placeholder and the count's index there; a refusal naming the node when
 * this build gives the count no run-time dim. */
smelt_status op_count_slot(op_compute_args *a, int64_t bound, struct te_tensor **rt_dims,
                           int *index);
smelt_status op_check_container_inputs(smelt_ctx *ctx, const gr_node *n,
                                       const smelt_tensor *const *in);

/* ---- Tensor element access (eval) ---------------------------------------------
 * Generic accessors convert to/from double or int64; fine for reference code. */
int64_t op_numel(const smelt_tensor *t);
double op_get_f64(const smelt_tensor *t, int64_t i);
void op_set_f64(smelt_tensor *t, int64_t i, double v);
int64_t op_get_i64(const smelt_tensor *t, int64_t i);
void op_set_i64(smelt_tensor *t, int64_t i, int64_t v);
bool op_dtype_is_float(smelt_dtype dt); /* f16, bf16, f32, f64 */
bool op_dtype_is_int(smelt_dtype dt);   /* signed or unsigned integer, not bool */
/* Row-major strides of t in elements. */
void op_strides(const smelt_tensor *t, int64_t strides[SMELT_MAX_RANK]);
/* Offset into `in` (broadcast to out's rank, numpy rules) for out multi-index idx. */
int64_t op_broadcast_offset(const smelt_tensor *in, const smelt_tensor *out, const int64_t *idx);
/* Advance a multi-index over dims; returns false after the last one. */
bool op_next_index(int64_t *idx, const int64_t *dims, int rank);

#endif
