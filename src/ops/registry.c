/* The op table, assembled from ops.def.  Family files define op_def_<ENUM>
 * and op_attrs_<ENUM>.  op_def_<ENUM> is referenced strongly: linking the
 * table pulls every family file out of a static libsmelt.a, with no linker
 * options (a weak reference pulls nothing, so a plain `-lsmelt` used to
 * import every op as "unsupported"), and an ops.def row without its
 * definition fails the link.  op_attrs_<ENUM> stays weak: it lives in the
 * family file op_def pulls in, and an op without a table knows no
 * attributes. */
#include <string.h>

#include "ops/op.h"

#define OP(ENUM, NAME, FAMILY, PATTERN, FIRST, LAST)                        \
    extern const op_def op_def_##ENUM;                                      \
    extern const op_attr_spec op_attrs_##ENUM[] __attribute__((weak));
#include "ops/ops.def"
#undef OP

#define NEWEST SMELT_ONNX_OPSET
#define ML_NEWEST SMELT_ONNX_ML_OPSET
#define PREVIEW_NEWEST SMELT_ONNX_PREVIEW_OPSET
#define TRAINING_NEWEST SMELT_ONNX_TRAINING_OPSET
static const op_info g_ops[] = {
    {OP_NONE, "", "", OP_PATTERN_OPAQUE, NULL, 0, 0, NULL},
#define OP(ENUM, NAME, FAMILY, PATTERN, FIRST, LAST)                                  \
    {OP_##ENUM, NAME, #FAMILY, OP_PATTERN_##PATTERN, &op_def_##ENUM, FIRST, LAST,   \
     op_attrs_##ENUM},
#include "ops/ops.def"
#undef OP
};
#undef NEWEST
#undef ML_NEWEST
#undef PREVIEW_NEWEST
#undef TRAINING_NEWEST
_Static_assert(SMELT_ARRAY_LEN(g_ops) == OP_COUNT_, "ops.def and op table out of sync");

const op_info *op_get(op_kind kind)
{
    return (unsigned)kind < OP_COUNT_ ? &g_ops[kind] : NULL;
}

static const struct {
    const char *name;
    int newest;
} k_domains[OP_DOMAIN_COUNT_] = {
    [OP_DOMAIN_ONNX] = {"ai.onnx", SMELT_ONNX_OPSET},
    [OP_DOMAIN_ML] = {"ai.onnx.ml", SMELT_ONNX_ML_OPSET},
    [OP_DOMAIN_PREVIEW] = {"ai.onnx.preview", SMELT_ONNX_PREVIEW_OPSET},
    [OP_DOMAIN_TRAINING] = {"ai.onnx.preview.training", SMELT_ONNX_TRAINING_OPSET},
};
/* gr_graph.domain_opsets holds one opset per domain */
_Static_assert(OP_DOMAIN_COUNT_ <= (int)(sizeof((gr_graph *)0)->domain_opsets /
                                         sizeof((gr_graph *)0)->domain_opsets[0]),
               "gr_graph.domain_opsets is too small");

const char *op_domain_name(op_domain d) { return k_domains[d].name; }
int op_domain_newest(op_domain d) { return k_domains[d].newest; }

op_domain op_domain_find(const char *domain)
{
    if (!domain || !*domain) return OP_DOMAIN_ONNX;
    for (int d = 0; d < OP_DOMAIN_COUNT_; d++)
        if (strcmp(domain, k_domains[d].name) == 0) return (op_domain)d;
    return OP_DOMAIN_COUNT_;
}

/* ops.def names another domain's op "<domain>.<OpType>" (internal ops
 * "smelt.<Name>" are ai.onnx's: the importer refuses them by their flag) */
op_domain op_domain_of(const op_info *info)
{
    for (int d = 1; d < OP_DOMAIN_COUNT_; d++) {
        size_t n = strlen(k_domains[d].name);
        if (strncmp(info->name, k_domains[d].name, n) == 0 && info->name[n] == '.' &&
            !strchr(info->name + n + 1, '.'))
            return (op_domain)d;
    }
    return OP_DOMAIN_ONNX;
}

const char *op_type_name(const op_info *info)
{
    op_domain d = op_domain_of(info);
    return d == OP_DOMAIN_ONNX ? info->name : info->name + strlen(k_domains[d].name) + 1;
}

const op_info *op_lookup_in(op_domain d, const char *op_type)
{
    for (int i = 1; i < OP_COUNT_; i++)
        if (op_domain_of(&g_ops[i]) == d && strcmp(op_type_name(&g_ops[i]), op_type) == 0)
            return &g_ops[i];
    return NULL;
}

const op_info *op_lookup(const char *onnx_name) { return op_lookup_in(OP_DOMAIN_ONNX, onnx_name); }

int64_t op_model_opset(const gr_graph *g, const op_info *info)
{
    op_domain d = op_domain_of(info);
    return d == OP_DOMAIN_ONNX ? g->opset : g->domain_opsets[d];
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

/* consumed_inputs was on most ops until opset 6 replaced their versions: a
 * hint for in-place execution, with no effect on results. */
static const op_attr_spec g_consumed_inputs = {"consumed_inputs", 1, 5};

const op_attr_spec *op_attr_find(const op_info *info, const char *name, int64_t opset)
{
    if (opset <= g_consumed_inputs.until && op_domain_of(info) == OP_DOMAIN_ONNX &&
        strcmp(name, g_consumed_inputs.name) == 0)
        return &g_consumed_inputs;
    for (const op_attr_spec *a = info->attrs; a && a->name; a++) {
        int since = a->since ? a->since : info->opset_first;
        int until = a->until ? a->until : info->opset_last;
        if (strcmp(a->name, name) == 0 && opset >= since && opset <= until) return a;
    }
    return NULL;
}
