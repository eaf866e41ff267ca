/* Typed attributes of the shape-manipulation family (shape.c), for later
 * stages.  Shape-giving operands (Reshape shape, Squeeze/Unsqueeze axes,
 * Split sizes, Expand/ConstantOfShape shape, Tile repeats) are inputs after
 * import, never attributes. */
#ifndef SMELT_OPS_SHAPE_H
#define SMELT_OPS_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "smelt.h"

/* Flatten, Concat. */
typedef struct op_axis_attrs {
    int64_t axis;
} op_axis_attrs;

typedef struct op_reshape_attrs {
    bool allowzero;
} op_reshape_attrs;

typedef struct op_transpose_attrs {
    int n_perm; /* -1: default, reverse the axes */
    int64_t perm[SMELT_MAX_RANK];
} op_transpose_attrs;

typedef struct op_shape_attrs {
    int64_t start;
    int64_t end;
    bool has_end;
} op_shape_attrs;

typedef struct op_split_attrs {
    int64_t axis;
    int64_t num_outputs; /* 0 when absent */
} op_split_attrs;

typedef struct op_constant_of_shape_attrs {
    const smelt_tensor *value; /* one element; NULL means float32 0 */
} op_constant_of_shape_attrs;

#endif
