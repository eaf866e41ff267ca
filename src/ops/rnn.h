/* Recurrent ops (RNN, GRU, LSTM): the typed attributes shared by the
 * family file rnn.c (import, shapes, reference kernel) and rnn_compute.c
 * (the compiled form). */
#ifndef SMELT_OPS_RNN_H
#define SMELT_OPS_RNN_H

#include "ops/op.h"

typedef enum rnn_cell { RNN_CELL_RNN, RNN_CELL_GRU, RNN_CELL_LSTM } rnn_cell;

typedef enum rnn_act_kind {
    RNN_ACT_SIGMOID,
    RNN_ACT_TANH,
    RNN_ACT_RELU,
    RNN_ACT_HARD_SIGMOID,
    RNN_ACT_AFFINE,
    RNN_ACT_LEAKY_RELU,
    RNN_ACT_THRESHOLDED_RELU,
    RNN_ACT_SCALED_TANH,
    RNN_ACT_ELU,
    RNN_ACT_SOFTSIGN,
    RNN_ACT_SOFTPLUS,
} rnn_act_kind;

typedef struct rnn_act {
    rnn_act_kind kind;
    float alpha, beta;
} rnn_act;

#define RNN_MAX_ACTS 3 /* per direction: LSTM's f, g, h */

typedef struct op_rnn_attrs {
    rnn_cell cell;
    int64_t hidden_size; /* -1: from R */
    int n_dirs;          /* 1 or 2 */
    bool reverse;        /* direction "reverse" (bidirectional: d = 1 is reverse) */
    rnn_act act[2][RNN_MAX_ACTS];
    bool has_clip;
    float clip;
    bool input_forget, linear_before_reset;
    int layout; /* 0: time-major, 1: batch-major */
} op_rnn_attrs;

enum { IN_X, IN_W, IN_R, IN_B, IN_SEQ_LENS, IN_H0, IN_C0, IN_P };
enum { OUT_Y, OUT_Y_H, OUT_Y_C };

typedef struct rnn_dims {
    int64_t steps, batch, input, hidden, dirs, gates;
} rnn_dims;

static inline int rnn_cell_gates(rnn_cell c) { return c == RNN_CELL_LSTM ? 4 : c == RNN_CELL_GRU ? 3 : 1; }
static inline int rnn_cell_acts(rnn_cell c) { return c == RNN_CELL_LSTM ? 3 : c == RNN_CELL_GRU ? 2 : 1; }
static inline int rnn_cell_states(rnn_cell c) { return c == RNN_CELL_LSTM ? 2 : 1; }

/* The compute hook of all three ops (rnn_compute.c). */
smelt_status rnn_compute(op_compute_args *a);

#endif
