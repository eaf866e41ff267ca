/* Tensor expressions: what is computed, declared apart from how.
 *
 * A te_graph holds the tensors of one fused group: placeholders (inputs,
 * weights) and computes.  A compute has one data-parallel axis per output dim
 * and a body over those axes; a body whose root is an IR_REDUCE reduces over
 * its reduce axes (sum/prod/max/min with the op's identity).  Loads inside a
 * body read other tensors of the same graph through their ir_buffer.
 *
 *   C = te_compute(g, "C", F32, 2, {M, N}, matmul_body, &args);
 *   // matmul_body: k = te_reduce_axis(g, "k", K);
 *   //              return te_sum(g, A[i,k] * B[k,j], 1, &k);
 */
#ifndef SMELT_TE_H
#define SMELT_TE_H

#include "tir/ir.h"

typedef enum te_kind { TE_PLACEHOLDER, TE_COMPUTE, TE_EXTERN } te_kind;

/* An extern stage (TVM's te.extern): a tensor written by a loop-IR
 * statement its op builds, for what a compute cannot say: a recurrence
 * (RNN/GRU/LSTM, ops/rnn_compute.c), a sequential loop whose steps read the
 * previous step's results.  The statement writes every element of the
 * tensor's buffer, reads only `inputs` (placeholders) and buffers it
 * allocates itself, and may call micro-kernels with flat indices.  Schedules
 * take it as it is: it accepts no steps, is never inlined and nothing is
 * computed at it; lowering places it like a stage at root. */
typedef struct te_extern {
    ir_stmt *body;
    int n_inputs;
    const struct te_tensor **inputs;
    double flops; /* the op's estimate of its arithmetic (the tuner's task sizes) */
    bool rt_ok;   /* its statement takes the graph's run-time dims (te_rt_extent) */
} te_extern;

/* A run-time check on data (an index in range, a divisor not zero).  Its
 * compute's body gives an INT64 value per point of the checked domain; the
 * run fails with the site's message when `ok` (a BOOL expression over
 * `value`, bound to the body) is false, position = the point's row-major
 * index.  A check stage stores nothing: lowering turns it into a loop nest
 * of IR_STMT_CHECK, and schedules never inline it or compute it at a loop. */
typedef struct te_check {
    ir_var *value;
    ir_expr *ok;
    ir_check_site site;
} te_check;

/* What a Winograd rewrite needs to know of a convolution stage (set by the
 * op's compute on stages it may apply to: ConvNCHWc, float32, 3x3, stride 1,
 * dilation 1, group 1, constant weights; sched/winograd.c).  Not part of
 * the listing (the workload key): it only describes the stage's body. */
typedef struct te_conv2d_info {
    const struct te_tensor *x, *w; /* X [N, Ci/ib, H, W, ib] or [N, Ci, H, W];
                                    * W [Co/ob, Ci/ib, 3, 3, ib, ob] */
    const float *w_data;           /* W's contents (the graph's constant) */
    int64_t batch, in_channels, out_channels, in_block, out_block;
    int64_t in_h, in_w, out_h, out_w, pad_top, pad_left;
} te_conv2d_info;

/* A constant computed at compile time from other constants (Winograd's
 * transformed weights, int8 weights packed for a micro-kernel): a
 * placeholder whose contents the te graph holds.  Lowering binds it to the
 * weight blob like a graph constant. */
typedef struct te_const {
    const struct te_tensor *t;
    void *data; /* numel elements of t's dtype; smelt_alloc'd, freed with the graph */
    int64_t numel;
} te_const;

typedef struct te_tensor {
    ir_buffer *buf; /* name, dtype, shape; loads of this tensor reference buf */
    te_kind kind;
    int n_axes;     /* == buf->rank */
    ir_axis axes[SMELT_MAX_RANK];
    ir_expr *body;  /* compute only */
    const char *tag; /* pattern hint for default schedules ("injective", "reduce", ...;
                      * "table": computed once into its buffer, never inlined) */
    int index;      /* position in te_graph.tensors */
    const te_check *check; /* a check stage (tag "check"), else NULL */
    const te_conv2d_info *conv2d; /* a conv stage Winograd may replace, else NULL */
    const te_extern *ext; /* TE_EXTERN: its statement, else NULL */
} te_tensor;

#define TE_MAX_RT_DIMS 4
#define TE_MAX_RT_ADDS 4
/* A run-time dim as te sees it: extents max + 0 and max + adds[i] follow it
 * (the dim's value plus that add; graph.h's gr_rt_dim). */
typedef struct te_rt_dim {
    int64_t max;
    int n_adds;
    int64_t adds[TE_MAX_RT_ADDS];
} te_rt_dim;

/* What te_from_node_rt/te_from_group_rt take of the run-time dims: the dims,
 * and which graph values are laid out at the run's dims (dense: each
 * placeholder of one gets ir_buffer.rt_extent, te_mark_dense); NULL dense:
 * none. */
struct gr_value;
typedef struct te_rt {
    int n;
    const te_rt_dim *dims;
    bool (*dense)(const struct gr_value *v, void *user);
    void *user;
} te_rt;

typedef struct te_graph {
    smelt_arena arena;
    ir_builder b;
    smelt_ptrvec tensors; /* te_tensor*, producers before consumers */
    smelt_ptrvec outputs; /* te_tensor*, the group's results */
    smelt_ctx *ctx;       /* errors (e.g. shape mistakes in compute definitions) */
    smelt_ptrvec consts;  /* te_const*: placeholders with compile-time contents */
    /* Run-time dims (te_set_rt_dims): an axis of extent rt[k].max (+ an
     * add) runs to rt_var[k] (+ that add), which the function reads from
     * rt_dims (INT64 [n_rt], a placeholder bound to the program's dims slot);
     * NULL when no axis is one */
    int n_rt;
    te_rt_dim rt[TE_MAX_RT_DIMS];
    ir_var *rt_var[TE_MAX_RT_DIMS];
    te_tensor *rt_dims;
} te_graph;

te_graph *te_graph_new(smelt_ctx *ctx);
void te_graph_free(te_graph *g);

te_tensor *te_placeholder(te_graph *g, const char *name, smelt_dtype dt, int rank,
                          const int64_t *shape);

/* The body function receives one index expression per output dim. */
typedef ir_expr *(*te_body_fn)(te_graph *g, ir_expr *const *idx, void *user);
te_tensor *te_compute(te_graph *g, const char *name, smelt_dtype dt, int rank,
                      const int64_t *shape, te_body_fn body, void *user, const char *tag);

/* A check stage over a domain of the given shape (see te_check; the site's
 * strings are copied). */
te_tensor *te_check_compute(te_graph *g, const char *name, int rank, const int64_t *shape,
                            te_body_fn body, void *user, ir_var *value, ir_expr *ok,
                            const ir_check_site *site);

/* An extern stage (see te_extern) over placeholders `inputs`: build
 * returns the statement writing `out` (the new tensor's buffer), NULL after
 * an error it reported (or on allocation failure); flops: its arithmetic. */
typedef ir_stmt *(*te_extern_fn)(te_graph *g, ir_buffer *out, void *user);
te_tensor *te_extern_stage(te_graph *g, const char *name, smelt_dtype dt, int rank,
                           const int64_t *shape, int n_inputs, te_tensor *const *inputs,
                           te_extern_fn build, void *user, const char *tag, double flops);

/* A new reduce axis [0, extent) for use in te_reduce inside a body. */
ir_axis te_reduce_axis(te_graph *g, const char *name, int64_t extent);
ir_expr *te_reduce(te_graph *g, ir_reduce_op op, ir_expr *src, int n, const ir_axis *axes);

/* t[idx...]; n must equal t's rank. */
ir_expr *te_read(te_graph *g, const te_tensor *t, ir_expr *const *idx);
/* A placeholder with compile-time contents (a te_const): data holds the
 * shape's elements of dt, smelt_alloc'd; the graph owns it from the call on
 * (freed there on failure too).  NULL on allocation failure. */
te_tensor *te_const_tensor(te_graph *g, const char *name, smelt_dtype dt, int rank,
                           const int64_t *shape, void *data);
/* The compile-time contents of a placeholder's buffer (a te_const), or NULL. */
const te_const *te_const_of(const te_graph *g, const ir_buffer *buf);
/* Lookup by buffer (for loads met while walking bodies). */
te_tensor *te_tensor_of(const te_graph *g, const ir_buffer *buf);
te_tensor *te_tensor_named(const te_graph *g, const char *name);
bool te_mark_output(te_graph *g, te_tensor *t);

/* The identity of a reduction for a dtype (0, 1, -inf/min, +inf/max). */
ir_expr *te_reduce_identity(te_graph *g, ir_reduce_op op, smelt_dtype dt);
/* The same, built in b (schedules rewriting bodies). */
ir_expr *te_reduce_identity_in(ir_builder *b, ir_reduce_op op, smelt_dtype dt);

/* Interpret every compute of g (testing oracle for compute definitions); a
 * failed check is an SMELT_ERR_RUNTIME error with the site's message.
 * data has one entry per te tensor (te_tensor.index): placeholders' entries
 * filled by the caller (te constants' here, pointing at their contents);
 * computes' entries are allocated here (the caller
 * frees .data with smelt_free, also on error). */
smelt_status te_eval_graph(smelt_ctx *ctx, const te_graph *g, smelt_tensor *data);

/* The te graph of one graph node: a placeholder per present input ("x0",
 * "x1", ...; constants' buffers are IR_BUF_CONST) and the op's computes,
 * marked as outputs.  in[i]: the input's type (static dims), with data when
 * it is a compile-time constant; out_types from infer. */
struct gr_node;
smelt_status te_from_node(smelt_ctx *ctx, const struct gr_node *node,
                          const smelt_tensor *const *in, const smelt_tensor *out_types,
                          te_graph **out);
/* The same with run-time dims known while the computes are built (te_rt_begin). */
smelt_status te_from_node_rt(smelt_ctx *ctx, const struct gr_node *node,
                             const smelt_tensor *const *in, const smelt_tensor *out_types,
                             const te_rt *rt, te_graph **out);

/* The te graph of a fused group: nodes (in topological order) chained
 * through their compute hooks.  An input produced inside the group reads the
 * producer's compute; each value from outside gets one placeholder ("x0",
 * ...) in first-use order, listed in io->in; the values escapes() accepts
 * (used outside the group, graph outputs) become the outputs, in node order,
 * listed in io->out.  Stage names are prefixed with the node's position
 * ("n2_y") to keep them unique. */
#define TE_GROUP_MAX_IO 256
/* Inputs and outputs one node may have on the compiled path (wider Concats
 * are split by passes/split_args.c) */
#define TE_NODE_MAX_INPUTS 64
#define TE_NODE_MAX_OUTPUTS 16
struct gr_node;
/* An error naming the node when it has more inputs or outputs than that. */
smelt_status te_check_node_arity(smelt_ctx *ctx, const struct gr_node *node);
struct gr_value;
typedef struct te_group_io {
    const struct gr_value *in[TE_GROUP_MAX_IO], *out[TE_GROUP_MAX_IO];
    int n_in, n_out;
} te_group_io;
smelt_status te_from_group(smelt_ctx *ctx, const struct gr_node *const *nodes, int n,
                           bool (*escapes)(const struct gr_value *v, void *user), void *user,
                           te_graph **out, te_group_io *io);
smelt_status te_from_group_rt(smelt_ctx *ctx, const struct gr_node *const *nodes, int n,
                              bool (*escapes)(const struct gr_value *v, void *user), void *user,
                              const te_rt *rt, te_graph **out, te_group_io *io);

/* Run-time dims: every axis (of a compute, or a reduction at a body's root)
 * whose extent is rt[k].max (+ an add) gets dyn = rt_var[k] (+ that add), and the graph a placeholder
 * rt_dims holding the values, when any axis does.  Called once, after the
 * graph is built and before it is scheduled; the caller has checked that
 * every such extent is the run-time dim (lower/rt_check.c).  An extern
 * stage over such a dim is refused (its kernel takes sizes at compile time). */
smelt_status te_set_rt_dims(te_graph *g, int n, const te_rt_dim *rt);
/* The same variables before the computes are built (te_from_node_rt), so an
 * op's extern statement can take them: te_rt_extent(g, MAX + add) is
 * rt_var[k] + add (NULL: a static extent); the op then marks the stage
 * te_extern.rt_ok. */
smelt_status te_rt_begin(te_graph *g, int n, const te_rt_dim *rt);
ir_expr *te_rt_extent(te_graph *g, int64_t extent);
/* t's buffer laid out at the run's dims: every dim that follows a run-time
 * dim gets its run-time extent (ir_buffer.rt_extent). */
void te_mark_dense(te_graph *g, te_tensor *t);
void te_extern_set_rt_ok(te_tensor *t);
/* The index of the run-time dim whose maximum is extent (no add), or -1. */
int te_rt_index(const te_graph *g, int64_t extent);
/* The rt_dims placeholder, made now if no stage made it yet (NULL without
 * run-time dims or out of memory): an extern stage that writes a
 * data-dependent count's value takes it as an input. */
te_tensor *te_rt_dims_tensor(te_graph *g);

/* Human-readable listing of the graph's tensors and bodies. */
void te_graph_print(const te_graph *g, smelt_strbuf *out);

#endif
