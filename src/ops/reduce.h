/* Typed attributes of the reduction family (reduce.c), for later stages. */
#ifndef SMELT_OPS_REDUCE_H
#define SMELT_OPS_REDUCE_H

#include <stdbool.h>
#include <stdint.h>

/* ReduceMean/Sum/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp.  The axes are
 * always input 1 after import (older opsets' attribute is moved there); an
 * absent or empty axes input means "all axes" unless noop_with_empty_axes. */
typedef struct op_reduce_attrs {
    bool keepdims;
    bool noop_with_empty_axes;
} op_reduce_attrs;

/* ArgMax, ArgMin. */
typedef struct op_arg_reduce_attrs {
    int64_t axis;
    bool keepdims;
    bool select_last_index;
} op_arg_reduce_attrs;

/* TopK: k is always input 1 after import. */
typedef struct op_topk_attrs {
    int64_t axis;
    bool largest;
    bool sorted;
} op_topk_attrs;

/* CumSum: the axis is input 1. */
typedef struct op_cumsum_attrs {
    bool exclusive;
    bool reverse;
} op_cumsum_attrs;

#endif
