/* Typed attributes of the indexing / data-movement family (data.c). */
#ifndef SMELT_OPS_DATA_H
#define SMELT_OPS_DATA_H

#include <stdbool.h>
#include <stdint.h>

#include "smelt.h"

/* Slice: no attributes after import; starts/ends/axes/steps are inputs 1..4
 * (opset < 10 attributes are moved there). */

/* Gather, GatherElements, OneHot: the (possibly negative) axis. */
typedef struct op_axis_attrs {
    int64_t axis;
} op_axis_attrs;

typedef enum op_scatter_reduction {
    OP_SCATTER_NONE,
    OP_SCATTER_ADD,
    OP_SCATTER_MUL,
    OP_SCATTER_MAX,
    OP_SCATTER_MIN,
} op_scatter_reduction;

/* ScatterND. */
typedef struct op_scatter_nd_attrs {
    op_scatter_reduction reduction;
} op_scatter_nd_attrs;

/* EyeLike: dtype UNDEFINED takes the input's. */
typedef struct op_eye_like_attrs {
    smelt_dtype dtype;
    int64_t k;
} op_eye_like_attrs;

/* ReverseSequence: batch and time axes, 0 and 1 in some order. */
typedef struct op_reverse_sequence_attrs {
    int64_t batch_axis, time_axis;
} op_reverse_sequence_attrs;

/* GatherND: leading axes shared by data and indices. */
typedef struct op_gather_nd_attrs {
    int64_t batch_dims;
} op_gather_nd_attrs;

/* ScatterElements. */
typedef struct op_scatter_elements_attrs {
    int64_t axis;
    op_scatter_reduction reduction;
} op_scatter_elements_attrs;

typedef enum op_pad_mode {
    OP_PAD_CONSTANT,
    OP_PAD_REFLECT,
    OP_PAD_EDGE,
    OP_PAD_WRAP,
} op_pad_mode;

/* Pad: pads is input 1, constant_value input 2, axes input 3 (opset < 11
 * attributes are moved to inputs 1 and 2). */
typedef struct op_pad_attrs {
    op_pad_mode mode;
} op_pad_attrs;

/* Trilu: k is input 1. */
typedef struct op_trilu_attrs {
    bool upper;
} op_trilu_attrs;

/* DepthToSpace (crd selects the CRD channel order; DCR otherwise) and
 * SpaceToDepth (crd unused). */
typedef struct op_block_attrs {
    int64_t blocksize;
    bool crd;
} op_block_attrs;

#endif
