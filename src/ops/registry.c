/* The op table, assembled from ops.def.  Family files define op_def_<ENUM>;
 * the declarations are weak so a missing definition shows up as an op that
 * imports as "unsupported" (and fails tests/unit/test_registry), not as a
 * link error while a family is being written. */
#include <string.h>

#include "ops/op.h"

#define OP(ENUM, NAME, FAMILY, PATTERN) extern const op_def op_def_##ENUM __attribute__((weak));
#include "ops/ops.def"
#undef OP

static const op_info g_ops[] = {
    {OP_NONE, "", "", OP_PATTERN_OPAQUE, NULL},
#define OP(ENUM, NAME, FAMILY, PATTERN) \
    {OP_##ENUM, NAME, #FAMILY, OP_PATTERN_##PATTERN, &op_def_##ENUM},
#include "ops/ops.def"
#undef OP
};
_Static_assert(SMELT_ARRAY_LEN(g_ops) == OP_COUNT_, "ops.def and op table out of sync");

const op_info *op_get(op_kind kind)
{
    return (unsigned)kind < OP_COUNT_ ? &g_ops[kind] : NULL;
}

const op_info *op_lookup(const char *onnx_name)
{
    for (int i = 1; i < OP_COUNT_; i++)
        if (strcmp(g_ops[i].name, onnx_name) == 0) return &g_ops[i];
    return NULL;
}

const char *op_pattern_name(op_pattern p)
{
    switch (p) {
    case OP_PATTERN_ELEMWISE: return "elemwise";
    case OP_PATTERN_BROADCAST: return "broadcast";
    case OP_PATTERN_INJECTIVE: return "injective";
    case OP_PATTERN_REDUCTION: return "reduction";
    case OP_PATTERN_OUT_FUSABLE: return "out-fusable";
    case OP_PATTERN_OPAQUE: return "opaque";
    }
    return "?";
}
