/* Control flow (If, Loop, Scan): what the executor and the lowering read.
 *
 * A node's graph attributes are gr_graphs of their own (graph.h).  The
 * node's inputs are its ONNX inputs (n_explicit of them), then the values
 * of enclosing graphs its bodies read by name; a body input past its
 * n_formal formal inputs is fed by node input (gr_value.capture - 1).
 *
 *   If    inputs: cond; outputs: the chosen branch's outputs
 *   Loop  inputs: M (trip count, optional), cond (optional), N initial values;
 *         body(iter, cond, N carried) -> (cond, N carried, K scan outputs);
 *         outputs: N final values, K scan outputs stacked along a new axis 0
 *   Scan  (9+; Scan-8: see ctl_attrs.scan8) inputs: N initial states, M scan inputs; body(N states, M
 *         slices) -> (N states, K slices); outputs: N final states, K
 *         stacked slices; each scan input/output has an axis and a direction
 */
#ifndef SMELT_OPS_CONTROL_H
#define SMELT_OPS_CONTROL_H

#include "ops/op.h"

typedef struct ctl_attrs {
    gr_graph *then_g, *else_g; /* If */
    gr_graph *body;            /* Loop, Scan */
    int n_explicit;            /* ONNX inputs before the captured values */
    /* Loop: n_state carried values, n_scan_out scan outputs; Scan: n_state
     * states, n_scan_in scan inputs, n_scan_out scan outputs */
    int n_state, n_scan_in, n_scan_out;
    /* Scan: per scan input / output: axis (as given; negative counts from
     * the end) and direction (1: last slice first) */
    int64_t *in_axes, *in_rev, *out_axes, *out_rev;
    /* Scan-8: input 0 is sequence_lens (optional), every state and scan
     * input has a batch axis 0 (scan inputs their sequence at axis 1), and
     * the body runs per batch entry; n_state counts from input 1 */
    bool scan8;
    /* FlexAttention (ai.onnx.preview): the modifier bodies (NULL: none),
     * scale (NaN: 1/sqrt(head size)) and the softmax's element type */
    gr_graph *score_mod, *prob_mod;
    double scale;
    smelt_dtype softmax_type; /* UNDEFINED: float32, or double for double inputs */
} ctl_attrs;

static inline const ctl_attrs *ctl_attrs_of(const gr_node *n) { return n->op_attrs; }

/* The node input feeding body input i (-1: a formal input). */
int ctl_body_input_source(const gr_graph *body, int i);

/* Loop: is the condition true on every iteration (no cond input or a
 * constant true one, and the body passes its cond input through or
 * returns a constant true)?  Then the trip count alone ends it. */
bool ctl_loop_cond_always_true(const gr_node *n);

/* Scan: axis of scan input j in a tensor of rank `rank` / of scan output k
 * in the stacked output of rank `rank` (normalised; error if out of range). */
smelt_status ctl_scan_in_axis(smelt_ctx *ctx, const gr_node *n, int j, int rank, int *axis);
smelt_status ctl_scan_out_axis(smelt_ctx *ctx, const gr_node *n, int k, int rank, int *axis);

/* Loop: is a loop-carried value typed `opt` an optional of `inner`?  Its
 * initial value may be optional(T) and the body's T: the body then reads
 * each next value as a present optional, and the node gives T. */
bool ctl_optional_of(smelt_dtype opt, smelt_dtype inner);

/* FlexAttention's reference arithmetic (ops/flex_attention.c) around the
 * modifier bodies, which exec/control.c runs.  flex_check: the inputs'
 * ranks, heads and lengths.  scores [B, Hq, L, S] (of flex_softmax_type)
 * from Q and K, scaled, each query head reading its K/V head; the softmax
 * over the last axis in place; Y [B, Hq, L, Ev] (V's type) from the
 * probabilities and V.  The *_shape functions set a tensor's type, the
 * others fill tensors allocated to it. */
smelt_status flex_check(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *q,
                        const smelt_tensor *k, const smelt_tensor *v);
smelt_dtype flex_softmax_type(const gr_node *n, smelt_dtype input);
void flex_scores_shape(const gr_node *n, const smelt_tensor *q, const smelt_tensor *k,
                       smelt_tensor *scores);
void flex_output_shape(const smelt_tensor *q, const smelt_tensor *v, smelt_tensor *y);
void flex_scores(const gr_node *n, const smelt_tensor *q, const smelt_tensor *k,
                 smelt_tensor *scores);
void flex_softmax(smelt_tensor *scores);
void flex_output(const smelt_tensor *probs, const smelt_tensor *v, smelt_tensor *y);

/* Copy the node inputs' types (and the captures') onto the body's inputs,
 * formal ones from `formal` (n_formal entries, NULL: leave as declared),
 * then infer the body's shapes. */
smelt_status ctl_infer_body(smelt_ctx *ctx, const gr_node *n, gr_graph *body,
                            const smelt_tensor *const *in, const smelt_tensor *formal);

#endif
