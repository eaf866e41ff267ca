/* Typed attributes of the normalization family (norm.c), for later stages. */
#ifndef SMELT_OPS_NORM_H
#define SMELT_OPS_NORM_H

#include <stdbool.h>
#include <stdint.h>

#include "smelt.h"

/* BatchNormalization.  Inference uses the given mean/var; training mode
 * (opset >= 14, training_mode=1) uses the batch statistics and produces the
 * updated running mean/var as outputs 1 and 2.  per_activation is the old
 * spatial=0 form (opset < 9): scale/B/mean/var have shape (C, D1, ..., Dn). */
typedef struct op_batchnorm_attrs {
    float epsilon;
    float momentum;
    bool training;
    bool per_activation;
} op_batchnorm_attrs;

/* InstanceNormalization. */
typedef struct op_instancenorm_attrs {
    float epsilon;
} op_instancenorm_attrs;

/* GroupNormalization: per_group_params (opsets 18-20): scale and bias hold
 * one value per group instead of per channel. */
typedef struct op_groupnorm_attrs {
    int64_t num_groups;
    float epsilon;
    bool per_group_params;
} op_groupnorm_attrs;

/* MeanVarianceNormalization: the normalised axes. */
typedef struct op_mvn_attrs {
    int n_axes;
    int64_t axes[SMELT_MAX_RANK];
} op_mvn_attrs;

/* LpNormalization. */
typedef struct op_lpnorm_attrs {
    int64_t axis, p;
} op_lpnorm_attrs;

/* LayerNormalization: normalises over axes [axis, rank).  stash_type is the
 * dtype of the optional Mean and InvStdDev outputs. */
typedef struct op_layernorm_attrs {
    int64_t axis;
    float epsilon;
    smelt_dtype stash_type;
} op_layernorm_attrs;

/* Softmax, LogSoftmax.  coerce_2d (opset < 13): the input is viewed as 2-D
 * [prod(dims[:axis]), prod(dims[axis:])] and normalised over the second dim;
 * otherwise normalised along the single axis. */
typedef struct op_softmax_attrs {
    int64_t axis;
    bool coerce_2d;
} op_softmax_attrs;

#endif
