/* The op_kind enum, generated from ops.def. */
#ifndef SMELT_OP_KIND_H
#define SMELT_OP_KIND_H

typedef enum op_kind {
    OP_NONE = 0,
#define OP(ENUM, NAME, FAMILY, PATTERN, FIRST, LAST) OP_##ENUM,
#include "ops/ops.def"
#undef OP
    OP_COUNT_
} op_kind;

#endif
