/* Typed attributes of the broadcasting binary ops (binary.c). */
#ifndef SMELT_OPS_BINARY_H
#define SMELT_OPS_BINARY_H

#include "ops/op.h"

typedef struct op_binary_attrs {
    bool fmod; /* Mod: C fmod semantics (sign of the dividend) instead of Python's */
    bool float_mod; /* Mod-28: fmod=0 is defined for floats (numpy's mod) */
    /* Opsets < 7 with broadcast=1 and an 'axis': B's dims line up with A's
     * starting at this axis instead of at the right end. */
    bool has_legacy_axis;
    int64_t legacy_axis;
    /* PRelu opset < 7: a 1-D slope holds one value per channel (X's dim 1). */
    bool legacy_channel_slope;
} op_binary_attrs;

#endif
