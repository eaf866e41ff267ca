/* ONNX ModelProto -> graph IR.
 *
 * Steps: decode with protobuf-c; read the opset; initializers become
 * constants; graph inputs that are not initializers become runtime inputs;
 * each node becomes a graph node (Constant nodes become constants, calls of
 * model-local functions are inlined); unsupported ops are collected and
 * reported together; the graph is sorted, verified, and each op's import
 * hook turns raw attributes into its typed form.
 */
#include <string.h>

#include "frontend/onnx_internal.h"
#include "ops/custom.h"
#include "ops/op.h"

/* Inlining multiplies: F0 calling F1 twice, F1 calling F2 twice... turns a
 * 2 KB file into millions of nodes whose names grow with the depth.  Real
 * exports inline a few thousand; this cap keeps hostile ones cheap. */
#define SMELT_LIMIT_INLINED_NODES 200000

/* Values are renamed inside inlined functions; a scope maps a function's
 * formal names to the caller's names. */
typedef struct import_scope {
    const struct import_scope *parent;
    const char *prefix;             /* "<call node>/" for internal names */
    smelt_strmap names;             /* formal name -> actual name */
    const Onnx__NodeProto *call;    /* the calling node (for ref_attr_name) */
} import_scope;

typedef struct unsupported_op {
    const char *op_type, *domain;
    int count;
    const char *first_nodes[3];
} unsupported_op;

typedef struct import_state {
    smelt_ctx *ctx;
    gr_graph *g;
    /* importing a subgraph: the enclosing graph's state, and the node whose
     * attribute it is (outer values read by name become its extra inputs,
     * after its n_explicit ONNX inputs) */
    struct import_state *parent;
    gr_node *owner;
    int n_explicit;
    int depth; /* subgraph nesting */
    const Onnx__ModelProto *model;
    const char *base_dir;
    smelt_strmap values;     /* name -> gr_value* */
    smelt_strmap node_names; /* used node names */
    unsupported_op unsupported[32];
    int n_unsupported, n_unsupported_total;
    int n_nodes;
    int n_renamed; /* suffix counter for duplicate node names */
    int n_inlined; /* nodes (and calls) imported from function bodies */
} import_state;

/* ---- names ---- */

static gr_value *value_get(import_state *st, const char *name)
{
    return smelt_strmap_get(&st->values, name);
}

static gr_value *value_add(import_state *st, const char *name)
{
    gr_value *v = gr_value_new(st->g, name);
    if (!v || !smelt_strmap_put(&st->values, v->name, v)) {
        smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return v;
}

/* A name a subgraph reads but does not define: a value of an enclosing
 * graph, captured as an extra input of the subgraph fed by an extra input
 * of the owning node (each level of nesting captures it in turn).  *out is
 * NULL when no graph in scope defines the name. */
static smelt_status capture(import_state *st, const char *name, gr_value **out)
{
    *out = value_get(st, name);
    if (*out || !st->parent) return SMELT_OK;
    gr_value *outer;
    SMELT_TRY(capture(st->parent, name, &outer));
    if (!outer) return SMELT_OK;
    gr_node *owner = st->owner;
    int k = st->n_explicit;
    while (k < owner->n_inputs && owner->inputs[k] != outer) k++;
    if (k == owner->n_inputs) SMELT_TRY(gr_node_set_input(st->ctx, st->parent->g, owner, k, outer));
    gr_value *v = value_add(st, name);
    if (!v) return SMELT_ERR_NOMEM;
    v->is_input = true;
    v->capture = k + 1;
    if (!smelt_ptrvec_push(&st->g->inputs, v))
        return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    *out = v;
    return SMELT_OK;
}

/* Resolve a name as seen inside `sc` to its graph-level name. */
static const char *scoped_name(import_state *st, const import_scope *sc, const char *name)
{
    if (!sc) return name;
    const char *mapped = smelt_strmap_get(&sc->names, name);
    if (mapped) return mapped;
    if (!*name) return name;
    return smelt_arena_printf(&st->g->arena, "%s%s", sc->prefix, name);
}

static const char *unique_node_name(import_state *st, const import_scope *sc,
                                    const Onnx__NodeProto *np)
{
    const char *base = np->name && *np->name ? np->name : NULL;
    char tmp[64];
    if (!base) {
        snprintf(tmp, sizeof tmp, "%s_%d", np->op_type ? np->op_type : "node", st->n_nodes);
        base = tmp;
    }
    const char *name = sc ? smelt_arena_printf(&st->g->arena, "%s%s", sc->prefix, base)
                          : smelt_arena_strdup(&st->g->arena, base);
    /* one counter for the whole import, so n nodes sharing a name cost O(n)
     * lookups in total, not O(n^2) */
    const char *stem = name;
    while (name && smelt_strmap_get(&st->node_names, name))
        name = smelt_arena_printf(&st->g->arena, "%s_%d", stem, ++st->n_renamed);
    if (!name || !smelt_strmap_put(&st->node_names, name, (void *)name)) {
        smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return name;
}

/* ---- attributes ---- */

static const Onnx__AttributeProto *call_attr(const Onnx__NodeProto *call, const char *name)
{
    for (size_t i = 0; call && i < call->n_attribute; i++)
        if (call->attribute[i]->name && strcmp(call->attribute[i]->name, name) == 0)
            return call->attribute[i];
    return NULL;
}

/* A bytes field as a C string; an unset field has data == NULL. */
static char *bytes_dup(smelt_arena *ar, ProtobufCBinaryData b)
{
    return smelt_arena_strndup(ar, b.data ? (const char *)b.data : "", b.data ? b.len : 0);
}

static smelt_status attr_convert(import_state *st, const char *node_name, const char *op_type,
                                 const Onnx__AttributeProto *ap, gr_attr *a)
{
    smelt_arena *ar = &st->g->arena;
    a->name = smelt_arena_strdup(ar, ap->name ? ap->name : "");
    if (!a->name) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    switch (ap->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        a->type = GR_ATTR_FLOAT;
        a->f = ap->f;
        return SMELT_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        a->type = GR_ATTR_INT;
        a->i = ap->i;
        return SMELT_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        a->type = GR_ATTR_STRING;
        a->s = bytes_dup(ar, ap->s);
        a->s_len = ap->s.len;
        return a->s ? SMELT_OK : smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (!ap->t)
            return smelt_errf_at(st->ctx, SMELT_ERR_MODEL, node_name, op_type,
                              "node '%s' (%s): attribute '%s' has no tensor", node_name,
                              op_type, a->name);
        char what[300];
        snprintf(what, sizeof what, "node '%s' (%s): attribute '%s'", node_name, op_type,
                 a->name);
        a->type = GR_ATTR_TENSOR;
        SMELT_TRY(onnx_tensor_from_proto(st->ctx, ap->t, st->base_dir, what, &a->t));
        if (!smelt_ptrvec_push(&st->g->owned_tensors, a->t)) {
            smelt_tensor_free(a->t);
            a->t = NULL;
            return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
        }
        return SMELT_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        a->type = GR_ATTR_FLOATS;
        a->n = (int)ap->n_floats;
        a->floats = smelt_arena_alloc(ar, sizeof(float) * (ap->n_floats + 1));
        if (!a->floats) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
        if (ap->n_floats) memcpy(a->floats, ap->floats, sizeof(float) * ap->n_floats);
        return SMELT_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        a->type = GR_ATTR_INTS;
        a->n = (int)ap->n_ints;
        a->ints = smelt_arena_alloc(ar, sizeof(int64_t) * (ap->n_ints + 1));
        if (!a->ints) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
        if (ap->n_ints) memcpy(a->ints, ap->ints, sizeof(int64_t) * ap->n_ints);
        return SMELT_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        a->type = GR_ATTR_STRINGS;
        a->n = (int)ap->n_strings;
        a->strings = smelt_arena_alloc(ar, sizeof(char *) * (ap->n_strings + 1));
        if (!a->strings) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < ap->n_strings; i++) {
            a->strings[i] = bytes_dup(ar, ap->strings[i]);
            if (!a->strings[i]) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
        }
        return SMELT_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        a->type = GR_ATTR_GRAPH;
        return SMELT_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: {
        char what[300];
        snprintf(what, sizeof what, "node '%s' (%s): attribute '%s'", node_name, op_type,
                 a->name);
        smelt_dtype dt;
        SMELT_TRY(onnx_type_dtype(st->ctx, ap->tp, what, &dt));
        a->type = GR_ATTR_TYPE;
        a->i = (int64_t)dt;
        return SMELT_OK;
    }
    default:
        return smelt_errf_at(st->ctx, SMELT_ERR_UNSUPPORTED, node_name, op_type,
                          "node '%s' (%s): attribute '%s' has unsupported type %d", node_name,
                          op_type, a->name, (int)ap->type);
    }
}

static smelt_status import_subgraph(import_state *st, gr_node *owner, const Onnx__NodeProto *np,
                                    const Onnx__AttributeProto *ap, gr_attr *a);

static bool is_graph_attr(const Onnx__AttributeProto *ap)
{
    return ap->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
           ap->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
}

static smelt_status node_attrs(import_state *st, gr_node *n, const Onnx__NodeProto *np,
                               const import_scope *sc)
{
    n->n_attrs = (int)np->n_attribute;
    n->attrs = smelt_arena_alloc(&st->g->arena, sizeof(gr_attr) * (np->n_attribute + 1));
    if (!n->attrs) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    int k = 0;
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute[i];
        if (ap->ref_attr_name && *ap->ref_attr_name) {
            /* function body: the value comes from the call site, or is absent */
            ap = call_attr(sc ? sc->call : NULL, ap->ref_attr_name);
            if (!ap) continue;
            SMELT_TRY(attr_convert(st, n->name, n->op_type, ap, &n->attrs[k]));
            n->attrs[k].name = smelt_arena_strdup(&st->g->arena, np->attribute[i]->name
                                                                     ? np->attribute[i]->name
                                                                     : "");
            if (!n->attrs[k].name) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
        } else if (is_graph_attr(ap)) {
            if (sc) /* a body's names would need the function's renaming */
                return smelt_errf_at(st->ctx, SMELT_ERR_UNSUPPORTED, n->name, n->op_type,
                                     "node '%s' (%s): subgraphs inside model-local functions "
                                     "are not supported", n->name, n->op_type);
            SMELT_TRY(import_subgraph(st, n, np, ap, &n->attrs[k]));
        } else {
            SMELT_TRY(attr_convert(st, n->name, n->op_type, ap, &n->attrs[k]));
        }
        k++;
    }
    n->n_attrs = k;
    return SMELT_OK;
}

/* ---- constants ---- */

static smelt_status define_constant(import_state *st, const char *name, smelt_tensor *t)
{
    gr_value *v = value_get(st, name);
    if (v && (v->producer || v->constant || v->is_input)) {
        smelt_tensor_free(t);
        return smelt_errf(st->ctx, SMELT_ERR_MODEL, "value '%s' is defined more than once",
                          name);
    }
    if (!v && !(v = value_add(st, name))) {
        smelt_tensor_free(t);
        return SMELT_ERR_NOMEM;
    }
    return gr_value_set_constant(st->ctx, st->g, v, t);
}

static smelt_tensor *scalar_or_list(const void *vals, int n, smelt_dtype dt, bool is_list)
{
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    size_t es = smelt_dtype_size(dt);
    if (!t) return NULL;
    t->data = smelt_alloc(n > 0 ? (size_t)n * es : 1);
    if (!t->data) {
        smelt_free(t);
        return NULL;
    }
    if (n > 0) memcpy(t->data, vals, (size_t)n * es);
    t->dtype = dt;
    t->rank = is_list ? 1 : 0;
    t->dims[0] = n;
    return t;
}

/* Constant node -> constant value.  Attributes already converted on n. */
static smelt_status import_constant(import_state *st, gr_node *n, const char *out_name)
{
    if (n->n_attrs != 1)
        return smelt_errf_at(st->ctx, SMELT_ERR_MODEL, n->name, "Constant",
                          "node '%s' (Constant): expected exactly one value attribute, got %d",
                          n->name, n->n_attrs);
    const gr_attr *a = &n->attrs[0];
    smelt_tensor *t = NULL;
    if (strcmp(a->name, "value") == 0 && a->type == GR_ATTR_TENSOR) {
        t = smelt_calloc(1, sizeof *t);
        if (t) {
            *t = *a->t;
            t->name = NULL;
            t->data = smelt_alloc(smelt_tensor_nbytes(a->t) ? smelt_tensor_nbytes(a->t) : 1);
            if (t->data) {
                memcpy(t->data, a->t->data, smelt_tensor_nbytes(a->t));
            } else {
                smelt_free(t);
                t = NULL;
            }
        }
    } else if (strcmp(a->name, "value_float") == 0 && a->type == GR_ATTR_FLOAT) {
        t = scalar_or_list(&a->f, 1, SMELT_DT_FLOAT32, false);
    } else if (strcmp(a->name, "value_floats") == 0 && a->type == GR_ATTR_FLOATS) {
        t = scalar_or_list(a->floats, a->n, SMELT_DT_FLOAT32, true);
    } else if (strcmp(a->name, "value_int") == 0 && a->type == GR_ATTR_INT) {
        t = scalar_or_list(&a->i, 1, SMELT_DT_INT64, false);
    } else if (strcmp(a->name, "value_ints") == 0 && a->type == GR_ATTR_INTS) {
        t = scalar_or_list(a->ints, a->n, SMELT_DT_INT64, true);
    } else {
        return smelt_errf_at(st->ctx, SMELT_ERR_UNSUPPORTED, n->name, "Constant",
                          "node '%s' (Constant): attribute '%s' is not supported", n->name,
                          a->name);
    }
    if (!t) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    return define_constant(st, out_name, t);
}

/* ---- nodes ---- */

static const Onnx__FunctionProto *find_function(import_state *st, const Onnx__NodeProto *np)
{
    const char *domain = np->domain ? np->domain : "";
    for (size_t i = 0; i < st->model->n_functions; i++) {
        const Onnx__FunctionProto *f = st->model->functions[i];
        const char *fd = f->domain ? f->domain : "";
        if (f->name && strcmp(f->name, np->op_type) == 0 && strcmp(fd, domain) == 0) return f;
    }
    return NULL;
}

static bool default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }


static void note_unsupported(import_state *st, const Onnx__NodeProto *np, const char *node_name)
{
    st->n_unsupported_total++;
    const char *domain = np->domain ? np->domain : "";
    for (int i = 0; i < st->n_unsupported; i++) {
        unsupported_op *u = &st->unsupported[i];
        if (strcmp(u->op_type, np->op_type) == 0 && strcmp(u->domain, domain) == 0) {
            if (u->count < 3) u->first_nodes[u->count] = node_name;
            u->count++;
            return;
        }
    }
    if (st->n_unsupported == (int)SMELT_ARRAY_LEN(st->unsupported)) return;
    unsupported_op *u = &st->unsupported[st->n_unsupported++];
    u->op_type = np->op_type; /* the decoded model outlives the import */
    u->domain = domain;
    u->count = 1;
    u->first_nodes[0] = node_name;
}

static smelt_status import_nodes(import_state *st, Onnx__NodeProto **nodes, size_t n_nodes,
                                 const import_scope *sc, int depth);

static smelt_status inline_function(import_state *st, const Onnx__NodeProto *np,
                                    const Onnx__FunctionProto *f, const char *node_name,
                                    const import_scope *sc, int depth)
{
    if (depth >= SMELT_LIMIT_FUNCTION_DEPTH)
        return smelt_errf_at(st->ctx, SMELT_ERR_LIMIT, node_name, np->op_type,
                          "node '%s' (%s): functions nest deeper than %d "
                          "(SMELT_LIMIT_FUNCTION_DEPTH); recursive function?",
                          node_name, np->op_type, SMELT_LIMIT_FUNCTION_DEPTH);
    import_scope inner = {sc, NULL, {0}, np};
    smelt_strmap_init(&inner.names);
    inner.prefix = smelt_arena_printf(&st->g->arena, "%s/", node_name);
    smelt_status s = inner.prefix ? SMELT_OK : smelt_errf(st->ctx, SMELT_ERR_NOMEM, "OOM");
    for (size_t i = 0; s == SMELT_OK && i < f->n_input; i++) {
        const char *actual = i < np->n_input ? scoped_name(st, sc, np->input[i]) : "";
        if (!actual || !smelt_strmap_put(&inner.names, f->input[i], (void *)actual))
            s = smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; s == SMELT_OK && i < f->n_output; i++) {
        const char *actual = i < np->n_output ? scoped_name(st, sc, np->output[i]) : "";
        if (!actual || !smelt_strmap_put(&inner.names, f->output[i], (void *)actual))
            s = smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    if (s == SMELT_OK) s = import_nodes(st, f->node, f->n_node, &inner, depth + 1);
    smelt_strmap_fini(&inner.names);
    return s;
}

static smelt_status connect_outputs(import_state *st, gr_node *n, const Onnx__NodeProto *np,
                                    const import_scope *sc)
{
    for (size_t i = 0; i < np->n_output; i++) {
        const char *name = scoped_name(st, sc, np->output[i]);
        if (!name) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
        if (!*name) continue; /* omitted optional output */
        gr_value *v = value_get(st, name);
        if (v && (v->producer || v->constant || v->is_input))
            return smelt_errf_at(st->ctx, SMELT_ERR_MODEL, n->name, n->op_type,
                              "node '%s' (%s): output '%s' is already defined elsewhere",
                              n->name, n->op_type, name);
        if (!v && !(v = value_add(st, name))) return SMELT_ERR_NOMEM;
        v->producer = n;
        v->producer_output = (int)i;
        n->outputs[i] = v;
    }
    return SMELT_OK;
}

static smelt_status connect_inputs(import_state *st, gr_node *n, const Onnx__NodeProto *np,
                                   const import_scope *sc)
{
    for (size_t i = 0; i < np->n_input; i++) {
        const char *name = scoped_name(st, sc, np->input[i]);
        if (!name) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
        if (!*name) continue; /* omitted optional input */
        gr_value *v;
        SMELT_TRY(capture(st, name, &v));
        /* not yet defined: produced by a later node (unsorted model) or never;
         * the verifier reports the latter */
        if (!v && !(v = value_add(st, name))) return SMELT_ERR_NOMEM;
        n->inputs[i] = v;
    }
    return SMELT_OK;
}

static smelt_status import_node(import_state *st, const Onnx__NodeProto *np,
                                const import_scope *sc, int depth)
{
    if (!np->op_type || !*np->op_type)
        return smelt_errf(st->ctx, SMELT_ERR_MODEL, "node '%s' has no op_type",
                          np->name ? np->name : "");
    if (++st->n_nodes > SMELT_LIMIT_NODES)
        return smelt_errf(st->ctx, SMELT_ERR_LIMIT,
                          "the model has more than %d nodes (SMELT_LIMIT_NODES)",
                          SMELT_LIMIT_NODES);
    if (sc && ++st->n_inlined > SMELT_LIMIT_INLINED_NODES)
        return smelt_errf(st->ctx, SMELT_ERR_LIMIT,
                          "inlining model-local functions gives more than %d nodes "
                          "(SMELT_LIMIT_INLINED_NODES in src/frontend/onnx.c)",
                          SMELT_LIMIT_INLINED_NODES);
    const char *name = unique_node_name(st, sc, np);
    if (!name) return SMELT_ERR_NOMEM;
    const Onnx__FunctionProto *f = find_function(st, np);
    if (f) return inline_function(st, np, f, name, sc, depth);

    op_domain domain = default_domain(np->domain) ? OP_DOMAIN_ONNX : op_domain_find(np->domain);
    bool known_domain = domain != OP_DOMAIN_COUNT_;
    if (known_domain && (domain == OP_DOMAIN_ONNX ? st->g->opset : st->g->domain_opsets[domain]) == 0)
        return smelt_errf_at(st->ctx, SMELT_ERR_MODEL, name, np->op_type,
                          "node '%s' (%s): the model uses %s ops but imports no %s opset", name,
                          np->op_type, op_domain_name(domain), op_domain_name(domain));
    const op_info *info = known_domain ? op_lookup_in(domain, np->op_type) : NULL;
    bool is_constant = default_domain(np->domain) && strcmp(np->op_type, "Constant") == 0;
    if (info && info->def && (info->def->flags & OP_FLAG_INTERNAL))
        return smelt_errf_at(st->ctx, SMELT_ERR_UNSUPPORTED, name, np->op_type,
                          "node '%s' (%s): %s is internal to smelt (made by its passes), not an "
                          "ONNX op", name, np->op_type, np->op_type);
    /* an op type of another domain the user gave a definition (custom.c) */
    const op_custom *custom = !info && !default_domain(np->domain)
                                  ? op_custom_find(np->domain, np->op_type ? np->op_type : "")
                                  : NULL;
    if (custom) info = op_get(OP_CUSTOM);
    if (!is_constant && (!info || !info->def)) {
        note_unsupported(st, np, name);
        return SMELT_OK;
    }
    gr_node *n = gr_node_new(st->g, name, np->op_type, info ? info->kind : OP_NONE,
                             (int)np->n_input, (int)np->n_output);
    if (!n) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    if (custom) n->op_attrs = (void *)custom;
    SMELT_TRY(node_attrs(st, n, np, sc));
    if (is_constant) {
        st->g->nodes.len--; /* constants are values, not nodes */
        if (np->n_output != 1)
            return smelt_errf(st->ctx, SMELT_ERR_MODEL,
                              "node '%s' (Constant): expected one output, got %zu", name,
                              np->n_output);
        const char *out = scoped_name(st, sc, np->output[0]);
        return out ? import_constant(st, n, out)
                   : smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    SMELT_TRY(connect_inputs(st, n, np, sc));
    return connect_outputs(st, n, np, sc);
}

static smelt_status import_nodes(import_state *st, Onnx__NodeProto **nodes, size_t n_nodes,
                                 const import_scope *sc, int depth)
{
    for (size_t i = 0; i < n_nodes; i++) SMELT_TRY(import_node(st, nodes[i], sc, depth));
    return SMELT_OK;
}

static smelt_status report_unsupported(import_state *st)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    smelt_strbuf_printf(&sb, "the model uses %d node(s) with unsupported ops: ",
                        st->n_unsupported_total);
    for (int i = 0; i < st->n_unsupported; i++) {
        const unsupported_op *u = &st->unsupported[i];
        if (i) smelt_strbuf_append(&sb, "; ");
        if (*u->domain && strcmp(u->domain, "ai.onnx") != 0)
            smelt_strbuf_printf(&sb, "%s (domain %s) at ", u->op_type, u->domain);
        else
            smelt_strbuf_printf(&sb, "%s (ai.onnx, opset %lld) at ", u->op_type,
                                (long long)st->g->opset);
        for (int k = 0; k < u->count && k < 3; k++)
            smelt_strbuf_printf(&sb, "%s'%s'", k ? ", " : "", u->first_nodes[k]);
        if (u->count > 3) smelt_strbuf_printf(&sb, " and %d more", u->count - 3);
    }
    /* the first unsupported node is the one to blame */
    const unsupported_op *first = &st->unsupported[0];
    smelt_status s = smelt_errf_at(st->ctx, SMELT_ERR_UNSUPPORTED, first->first_nodes[0],
                                   first->op_type, "%s", smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
    return s;
}

/* ---- graph inputs/outputs ---- */

static bool elem_type_supported(int32_t et)
{
    return et > 0 && et < SMELT_DT_COUNT_ && et != SMELT_DT_STRING && et != SMELT_DT_COMPLEX64 &&
           et != SMELT_DT_COMPLEX128 && smelt_dtype_size(et);
}

/* The dtype of a type smelt holds: a tensor, a sequence of tensors or an
 * optional of either (smelt.h's container dtypes); maps, sparse tensors
 * and deeper nesting are refused naming `what`. */
smelt_status onnx_type_dtype(smelt_ctx *ctx, const Onnx__TypeProto *tp, const char *what,
                             smelt_dtype *dt)
{
    const Onnx__TypeProto *inner = NULL;
    unsigned bits = 0;
    if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && tp->optional_type) {
        bits |= SMELT_DT_OPTIONAL_BIT;
        tp = tp->optional_type->elem_type;
    }
    if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE && tp->sequence_type) {
        bits |= SMELT_DT_SEQUENCE_BIT;
        inner = tp->sequence_type->elem_type;
        tp = inner;
    }
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED,
                          "%s: only tensors, sequences of tensors and optionals of either are "
                          "supported", what);
    int32_t et = tp->tensor_type->elem_type;
    if (!elem_type_supported(et))
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "%s: element type %d is not supported",
                          what, et);
    *dt = (smelt_dtype)((unsigned)et | bits);
    return SMELT_OK;
}

/* A container's count is known at run time only; its elements' shapes are
 * not kept (each op infers them from the elements it is given). */
static smelt_status container_type(import_state *st, gr_value *v, smelt_dtype dt)
{
    int sym = gr_graph_new_sym(st->g);
    if (sym < 0) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    v->dtype = dt;
    v->rank = 1;
    v->dims[0] = GR_DIM_SYM(sym);
    return SMELT_OK;
}

static smelt_status input_type(import_state *st, gr_value *v, const Onnx__ValueInfoProto *vi)
{
    const Onnx__TypeProto *tp = vi->type;
    /* a body's inputs may leave their type to the node's inputs */
    if (st->parent && (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)) return SMELT_OK;
    char what[300];
    snprintf(what, sizeof what, "graph input '%s'", v->name);
    smelt_dtype dt;
    SMELT_TRY(onnx_type_dtype(st->ctx, tp, what, &dt));
    if (smelt_dtype_is_container(dt)) return container_type(st, v, dt);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    v->dtype = dt;
    if (!tt->shape) return SMELT_OK; /* rank unknown */
    if (tt->shape->n_dim > SMELT_MAX_RANK)
        return smelt_errf(st->ctx, SMELT_ERR_LIMIT,
                          "graph input '%s': rank %zu exceeds the maximum rank %d", v->name,
                          tt->shape->n_dim, SMELT_MAX_RANK);
    v->rank = (int)tt->shape->n_dim;
    for (int i = 0; i < v->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        int sym;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value >= 0) {
            v->dims[i] = d->dim_value;
            continue;
        }
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
            d->dim_param && *d->dim_param)
            sym = gr_graph_sym(st->g, d->dim_param);
        else
            sym = gr_graph_new_sym(st->g);
        if (sym < 0) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
        v->dims[i] = GR_DIM_SYM(sym);
    }
    return SMELT_OK;
}

static smelt_status import_graph_io(import_state *st, const Onnx__GraphProto *gp)
{
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name)
            return smelt_errf(st->ctx, SMELT_ERR_MODEL, "graph input %zu has no name", i);
        gr_value *v = value_get(st, vi->name);
        if (v && v->constant) continue; /* initializer: a constant with a default */
        if (v) return smelt_errf(st->ctx, SMELT_ERR_MODEL, "graph input '%s' is listed twice",
                                 vi->name);
        if (!(v = value_add(st, vi->name))) return SMELT_ERR_NOMEM;
        v->is_input = true;
        SMELT_TRY(input_type(st, v, vi));
        if (!smelt_ptrvec_push(&st->g->inputs, v))
            return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    return SMELT_OK;
}

/* A graph output declared a sequence or optional keeps that type until
 * inference gives it one (which it may not: an untyped SequenceMap body),
 * so callers know to read and compare it as one.  Tensor outputs' declared
 * types are not read. */
static smelt_status declared_container_output(import_state *st, gr_value *v,
                                              const Onnx__ValueInfoProto *vi)
{
    const Onnx__TypeProto *tp = vi->type;
    if (v->dtype != SMELT_DT_UNDEFINED || !tp ||
        (tp->value_case != ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE &&
         tp->value_case != ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE))
        return SMELT_OK;
    char what[300];
    snprintf(what, sizeof what, "graph output '%s'", v->name);
    smelt_dtype dt;
    SMELT_TRY(onnx_type_dtype(st->ctx, tp, what, &dt));
    v->dtype = dt;
    return SMELT_OK;
}

static smelt_status import_graph_outputs(import_state *st, const Onnx__GraphProto *gp)
{
    if (gp->n_output == 0) return smelt_errf(st->ctx, SMELT_ERR_MODEL, "the graph has no outputs");
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name ? gp->output[i]->name : "";
        gr_value *v;
        SMELT_TRY(capture(st, name, &v));
        if (!v || (!v->producer && !v->constant && !v->is_input))
            return smelt_errf(st->ctx, SMELT_ERR_MODEL, "graph output '%s' is never produced",
                              name);
        v->is_output = true;
        SMELT_TRY(declared_container_output(st, v, gp->output[i]));
        if (!smelt_ptrvec_push(&st->g->outputs, v))
            return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    return SMELT_OK;
}

static smelt_status read_opset(import_state *st)
{
    const Onnx__ModelProto *m = st->model;
    st->g->opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (default_domain(o->domain)) st->g->opset = o->version;
        op_domain d = op_domain_find(o->domain);
        if (d != OP_DOMAIN_ONNX && d != OP_DOMAIN_COUNT_) st->g->domain_opsets[d] = o->version;
    }
    if (st->g->opset < 0) {
        /* IR v2 models carry no opset_import; others may use only other
         * domains, whose ops are then reported as unsupported */
        st->g->opset = m->n_opset_import == 0 ? 1 : 0;
        return SMELT_OK;
    }
    if (st->g->opset < 1 || st->g->opset > 1000)
        return smelt_errf(st->ctx, SMELT_ERR_MODEL, "invalid ai.onnx opset %lld",
                          (long long)st->g->opset);
    return SMELT_OK;
}

static smelt_status import_initializers(import_state *st, const Onnx__GraphProto *gp)
{
    if (gp->n_sparse_initializer)
        return smelt_errf(st->ctx, SMELT_ERR_UNSUPPORTED,
                          "sparse initializers are not supported ('%s')",
                          gp->sparse_initializer[0]->values &&
                                  gp->sparse_initializer[0]->values->name
                              ? gp->sparse_initializer[0]->values->name
                              : "");
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name)
            return smelt_errf(st->ctx, SMELT_ERR_MODEL, "initializer %zu has no name", i);
        char what[300];
        snprintf(what, sizeof what, "initializer '%s'", tp->name);
        smelt_tensor *t;
        SMELT_TRY(onnx_tensor_from_proto(st->ctx, tp, st->base_dir, what, &t));
        SMELT_TRY(define_constant(st, tp->name, t));
    }
    return SMELT_OK;
}

/* "expected 1 to 2", "expected 1", "expected at least 1"; max -1 = variadic. */
static void arity_text(char *buf, size_t cap, int min, int max)
{
    if (max < 0) snprintf(buf, cap, "at least %d", min);
    else if (min == max) snprintf(buf, cap, "%d", min);
    else snprintf(buf, cap, "%d to %d", min, max);
}

/* Input/output counts against the op_def (max_outputs 0: arity not
 * declared).  Imports and kernels may then index required inputs freely. */
static smelt_status check_arity(smelt_ctx *ctx, const gr_node *n, const op_def *d)
{
    if (d->max_outputs == 0) return SMELT_OK;
    char want[48];
    if (n->n_inputs < d->min_inputs || (d->max_inputs >= 0 && n->n_inputs > d->max_inputs)) {
        arity_text(want, sizeof want, d->min_inputs, d->max_inputs);
        return op_errf(ctx, n, SMELT_ERR_MODEL, "has %d inputs, expected %s", n->n_inputs, want);
    }
    if (n->n_outputs < d->min_outputs || (d->max_outputs > 0 && n->n_outputs > d->max_outputs)) {
        arity_text(want, sizeof want, d->min_outputs, d->max_outputs);
        return op_errf(ctx, n, SMELT_ERR_MODEL, "has %d outputs, expected %s", n->n_outputs,
                       want);
    }
    for (int k = 0; k < d->min_inputs; k++)
        if (!n->inputs[k])
            return op_errf(ctx, n, SMELT_ERR_MODEL, "required input %d is missing", k);
    for (int k = 0; k < d->min_outputs; k++) /* kernels write required outputs */
        if (!n->outputs[k])
            return op_errf(ctx, n, SMELT_ERR_MODEL, "required output %d is missing", k);
    return SMELT_OK;
}

/* The model's opset must be one whose version of the op smelt implements
 * (ops.def FIRST..LAST): a newer version may mean other semantics. */
static smelt_status check_opset(smelt_ctx *ctx, const gr_graph *g, const gr_node *n)
{
    const op_info *info = op_get(n->op);
    int64_t opset = op_model_opset(g, info);
    op_domain d = op_domain_of(info);
    int newest = op_domain_newest(d);
    char domain[40] = "";
    if (d != OP_DOMAIN_ONNX) snprintf(domain, sizeof domain, "%s ", op_domain_name(d));
    if (opset >= info->opset_first && opset <= info->opset_last) return SMELT_OK;
    if (opset > newest)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                       "%sopset %lld is newer than smelt knows (%d); %s is implemented for "
                       "opsets %d to %d", domain, (long long)opset, newest, info->name,
                       info->opset_first, info->opset_last);
    return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                   "%s of %sopset %lld is not implemented; smelt implements it for opsets %d "
                   "to %d", info->name, domain, (long long)opset, info->opset_first,
                   info->opset_last);
}

/* Every attribute must be one the op's import knows at this opset (its
 * OP_ATTRS table): one it does not know would otherwise be ignored, and
 * the answer silently wrong. */
static smelt_status check_attr_names(smelt_ctx *ctx, const gr_graph *g, const gr_node *n)
{
    const op_info *info = op_get(n->op);
    int64_t opset = op_model_opset(g, info);
    for (int k = 0; k < n->n_attrs; k++) {
        if (op_attr_find(info, n->attrs[k].name, opset)) continue;
        smelt_strbuf known;
        smelt_strbuf_init(&known);
        for (const op_attr_spec *a = info->attrs; a && a->name; a++)
            if (op_attr_find(info, a->name, opset) == a)
                smelt_strbuf_printf(&known, "%s%s", known.len ? ", " : "",
                                    a->name);
        smelt_status s = op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                                 "attribute '%s' is not implemented for %s at opset %lld "
                                 "(known: %s)", n->attrs[k].name, info->name,
                                 (long long)opset,
                                 known.len ? smelt_strbuf_cstr(&known) : "none");
        smelt_strbuf_fini(&known);
        return s;
    }
    return SMELT_OK;
}

/* Each op's import hook, after checks of arity, opset and attribute names. */
static smelt_status import_op_attrs(smelt_ctx *ctx, gr_graph *g)
{
    for (int i = 0; i < g->nodes.len; i++) {
        gr_node *n = g->nodes.items[i];
        const op_def *d = op_get(n->op)->def;
        /* first: a body's captures add inputs, which arity would blame */
        for (int k = 0; k < n->n_attrs; k++)
            if (n->attrs[k].type == GR_ATTR_GRAPH && !(d->flags & OP_FLAG_SUBGRAPHS))
                return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                               "attribute '%s' holds a subgraph; %s takes no subgraphs",
                               n->attrs[k].name, n->op_type);
        SMELT_TRY(check_arity(ctx, n, d));
        if (n->op == OP_CUSTOM) { /* its domain's opset is its own; import checks the rest */
            SMELT_TRY(d->import(ctx, g, n));
            continue;
        }
        SMELT_TRY(check_opset(ctx, g, n));
        SMELT_TRY(check_attr_names(ctx, g, n));
        smelt_status s = d->import ? d->import(ctx, g, n) : SMELT_OK;
        /* what an attribute means can depend on the opset: say which */
        if (s == SMELT_ERR_ATTR || s == SMELT_ERR_UNSUPPORTED)
            smelt_ctx_append(ctx, " (%s opset %lld)",
                             op_domain_name(op_domain_of(op_get(n->op))),
                             (long long)op_model_opset(g, op_get(n->op)));
        SMELT_TRY(s);
    }
    return SMELT_OK;
}

/* Subgraphs nest no deeper than this (each level is a C stack frame of
 * the importer, the passes and the executor). */
#define SMELT_LIMIT_SUBGRAPH_DEPTH 16

static smelt_status import_subgraph_body(import_state *sub, const Onnx__GraphProto *gp)
{
    gr_graph *g = sub->g;
    g->name = smelt_arena_strdup(&g->arena, gp->name ? gp->name : "");
    if (!g->name) return smelt_errf(sub->ctx, SMELT_ERR_NOMEM, "out of memory");
    SMELT_TRY(import_initializers(sub, gp));
    SMELT_TRY(import_graph_io(sub, gp));
    g->n_formal = g->inputs.len;
    SMELT_TRY(import_nodes(sub, gp->node, gp->n_node, NULL, 0));
    if (sub->n_unsupported_total) return report_unsupported(sub);
    SMELT_TRY(import_graph_outputs(sub, gp));
    SMELT_TRY(gr_graph_toposort(sub->ctx, g));
    SMELT_TRY(gr_graph_verify(sub->ctx, g));
    return import_op_attrs(sub->ctx, g);
}

/* A graph attribute: a gr_graph of its own (names scoped to it), owned by
 * the enclosing graph; names it reads from enclosing graphs are captured. */
static smelt_status import_subgraph(import_state *st, gr_node *owner, const Onnx__NodeProto *np,
                                    const Onnx__AttributeProto *ap, gr_attr *a)
{
    a->name = smelt_arena_strdup(&st->g->arena, ap->name ? ap->name : "");
    a->type = GR_ATTR_GRAPH;
    if (!a->name) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    if (ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH || !ap->g)
        return smelt_errf_at(st->ctx, SMELT_ERR_UNSUPPORTED, owner->name, owner->op_type,
                             "node '%s' (%s): attribute '%s' %s", owner->name, owner->op_type,
                             a->name, ap->g ? "is a list of graphs (not supported)"
                                            : "has no graph");
    if (st->depth >= SMELT_LIMIT_SUBGRAPH_DEPTH)
        return smelt_errf_at(st->ctx, SMELT_ERR_LIMIT, owner->name, owner->op_type,
                             "node '%s' (%s): subgraphs nest deeper than %d "
                             "(SMELT_LIMIT_SUBGRAPH_DEPTH)", owner->name, owner->op_type,
                             SMELT_LIMIT_SUBGRAPH_DEPTH);
    import_state sub;
    memset(&sub, 0, sizeof sub);
    sub.ctx = st->ctx;
    sub.model = st->model;
    sub.base_dir = st->base_dir;
    sub.parent = st;
    sub.owner = owner;
    sub.n_explicit = (int)np->n_input;
    sub.depth = st->depth + 1;
    sub.n_nodes = st->n_nodes;
    sub.g = gr_subgraph_new(st->g);
    smelt_strmap_init(&sub.values);
    smelt_strmap_init(&sub.node_names);
    smelt_status s = sub.g ? import_subgraph_body(&sub, ap->g)
                           : smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_strmap_fini(&sub.values);
    smelt_strmap_fini(&sub.node_names);
    st->n_nodes = sub.n_nodes;
    a->g = sub.g;
    return s;
}

static smelt_status import_model(import_state *st)
{
    const Onnx__GraphProto *gp = st->model->graph;
    if (!gp) return smelt_errf(st->ctx, SMELT_ERR_MODEL, "the model has no graph");
    st->g->name = smelt_arena_strdup(&st->g->arena, gp->name ? gp->name : "");
    if (!st->g->name) return smelt_errf(st->ctx, SMELT_ERR_NOMEM, "out of memory");
    SMELT_TRY(read_opset(st));
    SMELT_TRY(import_initializers(st, gp));
    SMELT_TRY(import_graph_io(st, gp));
    SMELT_TRY(import_nodes(st, gp->node, gp->n_node, NULL, 0));
    if (st->n_unsupported_total) return report_unsupported(st);
    SMELT_TRY(import_graph_outputs(st, gp));
    SMELT_TRY(gr_graph_toposort(st->ctx, st->g));
    SMELT_TRY(gr_graph_verify(st->ctx, st->g));
    return import_op_attrs(st->ctx, st->g);
}

smelt_status onnx_import(smelt_ctx *ctx, const void *bytes, size_t size, const char *base_dir,
                         gr_graph **out)
{
    *out = NULL;
    if (size > SMELT_LIMIT_MODEL_BYTES)
        return smelt_errf(ctx, SMELT_ERR_LIMIT, "the model is larger than %zu bytes",
                          SMELT_LIMIT_MODEL_BYTES);
    bool oom = false;
    ProtobufCAllocator pba = onnx_pb_allocator;
    pba.allocator_data = &oom; /* tells running out of memory from a bad file */
    Onnx__ModelProto *model = onnx__model_proto__unpack(&pba, size, bytes);
    if (!model && oom)
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory decoding the model");
    if (!model)
        return smelt_errf(ctx, SMELT_ERR_PARSE,
                          "not a valid ONNX model: the protobuf could not be decoded "
                          "(truncated or corrupt file?)");
    import_state st;
    memset(&st, 0, sizeof st);
    st.ctx = ctx;
    st.model = model;
    st.base_dir = base_dir;
    st.g = gr_graph_new();
    smelt_strmap_init(&st.values);
    smelt_strmap_init(&st.node_names);
    smelt_status s = st.g ? import_model(&st) : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_strmap_fini(&st.values);
    smelt_strmap_fini(&st.node_names);
    onnx__model_proto__free_unpacked(model, &pba);
    if (s != SMELT_OK) {
        gr_graph_free(st.g);
        return s;
    }
    *out = st.g;
    return SMELT_OK;
}
