/* Versioned import (issue #14): no attribute is ever silently ignored.
 *
 * Against the ONNX schemas of every op smelt imports (onnx_schema.inc,
 * written by scripts/gen_onnx_schema.py from the current onnx release):
 *
 *  - ranges: each op's FIRST..LAST (ops.def) starts at an ONNX version of the
 *    op and ends where the next, unimplemented, version starts (or at
 *    SMELT_ONNX_OPSET, the schemas' newest opset);
 *  - coverage: at every opset smelt claims, every attribute of the op's
 *    schema is in its OP_ATTRS table (its import reads it and refuses values
 *    it does not implement), and every table entry is in the schema;
 *  - refusals, through onnx_import of one-node models, at every ONNX version
 *    of every op: a bogus attribute name; a bogus value of every string
 *    attribute; 2 for every 0/1 attribute; the unimplemented values of
 *    k_bad_values; an attribute at an opset outside its table range; the
 *    opsets just outside FIRST..LAST.  Each refusal must be
 *    SMELT_ERR_UNSUPPORTED or SMELT_ERR_ATTR and name the node, the op, the
 *    attribute and the opset.
 */
#include <stdlib.h>

#include "frontend/onnx.h"
#include "onnx/onnx.pb-c.h"
#include "ops/op.h"
#include "test_util.h"

/* ---- the schemas ---- */

typedef struct schema_attr {
    const char *name;
    int type; /* Onnx__AttributeProto__AttributeType */
    bool required;
} schema_attr;

typedef struct schema_row {
    const char *op; /* a version row; NULL: an attribute of the row above */
    int since;
    schema_attr attr;
} schema_row;

#define ONNX_VERSION(OP, SINCE) {OP, SINCE, {NULL, 0, false}},
#define ONNX_ATTR(NAME, TYPE, REQ) \
    {NULL, 0, {NAME, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__##TYPE, REQ}},
static const schema_row k_schema[] = {
#include "onnx_schema.inc"
};
#undef ONNX_VERSION
#undef ONNX_ATTR
#define N_SCHEMA ((int)SMELT_ARRAY_LEN(k_schema))

/* Row index of op's version in effect at `opset` (-1: none yet). */
static int schema_version_at(const char *op, int opset)
{
    int best = -1;
    for (int i = 0; i < N_SCHEMA; i++)
        if (k_schema[i].op && strcmp(k_schema[i].op, op) == 0 && k_schema[i].since <= opset)
            best = i;
    return best;
}

/* The attributes of version row v: rows v+1 .. before the next version. */
static int schema_attr_count(int v)
{
    int n = 0;
    while (v + 1 + n < N_SCHEMA && !k_schema[v + 1 + n].op) n++;
    return n;
}

static const schema_attr *schema_attr_find(int v, const char *name)
{
    for (int k = 0; k < schema_attr_count(v); k++)
        if (strcmp(k_schema[v + 1 + k].attr.name, name) == 0) return &k_schema[v + 1 + k].attr;
    return NULL;
}

static bool imported(const op_info *info) { return info->def && info->opset_first > 0; }

/* ---- ranges and coverage (static) ---- */

static bool is_version_start(const char *op, int opset)
{
    int v = schema_version_at(op, opset);
    return v >= 0 && k_schema[v].since == opset;
}

static void test_opset_ranges(void)
{
    CHECK(SMELT_ONNX_OPSET == ONNX_SCHEMA_OPSET);
    for (int k = 1; k < OP_COUNT_; k++) {
        const op_info *info = op_get((op_kind)k);
        if (!imported(info)) continue;
        int newest = op_domain_newest(op_domain_of(info));
        bool first_ok = is_version_start(info->name, info->opset_first);
        bool last_ok = info->opset_last == newest ||
                       (info->opset_last < newest &&
                        is_version_start(info->name, info->opset_last + 1));
        if (!first_ok || !last_ok)
            fprintf(stderr, "%s: ops.def opsets %d..%d are not ONNX version boundaries\n",
                    info->name, info->opset_first, info->opset_last);
        CHECK(first_ok && last_ok);
    }
}

/* Every schema attribute at every claimed opset is in the op's table. */
static void check_schema_covered(const op_info *info, int opset)
{
    int v = schema_version_at(info->name, opset);
    for (int a = 0; a < schema_attr_count(v); a++) {
        const char *name = k_schema[v + 1 + a].attr.name;
        bool known = op_attr_find(info, name, opset) != NULL;
        if (!known)
            fprintf(stderr, "%s-%d (opset %d): schema attribute '%s' is not in OP_ATTRS(%s)\n",
                    info->name, k_schema[v].since, opset, name, info->name);
        CHECK(known);
    }
}

/* Every table entry at every opset of its range is in the schema there. */
static void check_table_in_schema(const op_info *info, int opset)
{
    int v = schema_version_at(info->name, opset);
    for (const op_attr_spec *s = info->attrs; s && s->name; s++) {
        if (op_attr_find(info, s->name, opset) != s) continue;
        bool in_schema = schema_attr_find(v, s->name) != NULL;
        if (!in_schema)
            fprintf(stderr, "%s (opset %d): OP_ATTRS entry '%s' is not in the ONNX schema\n",
                    info->name, opset, s->name);
        CHECK(in_schema);
    }
}

static void test_attr_coverage(void)
{
    for (int k = 1; k < OP_COUNT_; k++) {
        const op_info *info = op_get((op_kind)k);
        if (!imported(info)) continue;
        for (int opset = info->opset_first; opset <= info->opset_last; opset++) {
            check_schema_covered(info, opset);
            check_table_in_schema(info, opset);
        }
    }
}

/* ---- one-node models ---- */

#define MAX_ATTRS 24

typedef struct model {
    const op_info *info;
    int opset;
    Onnx__AttributeProto attrs[MAX_ATTRS];
    int n_attrs;
} model;

static Onnx__AttributeProto *model_attr(model *m, const char *name, int type)
{
    if (m->n_attrs == MAX_ATTRS) { /* a test bug: raise MAX_ATTRS */
        fprintf(stderr, "test: %s needs more than %d attributes\n", m->info->name, MAX_ATTRS);
        exit(1);
    }
    Onnx__AttributeProto *a = &m->attrs[m->n_attrs++];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = true;
    a->type = type;
    return a;
}

static void set_int(model *m, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = model_attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = true;
    a->i = v;
}

static void set_string(model *m, const char *name, const char *v)
{
    Onnx__AttributeProto *a = model_attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = true;
    a->s.data = (uint8_t *)v;
    a->s.len = strlen(v);
}

static void set_ints(model *m, const char *name, const int64_t *v, size_t n)
{
    Onnx__AttributeProto *a = model_attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->ints = (int64_t *)v;
    a->n_ints = n;
}

static void set_float(model *m, const char *name, float v)
{
    Onnx__AttributeProto *a = model_attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = true;
    a->f = v;
}

static void set_floats(model *m, const char *name, const float *v, size_t n)
{
    Onnx__AttributeProto *a = model_attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->floats = (float *)v;
    a->n_floats = n;
}

/* A one-element tensor attribute (TreeEnsemble's splits, weights, modes). */
static void set_tensor1(model *m, const char *name, int dtype)
{
    static Onnx__TensorProto tensors[MAX_ATTRS];
    static float one_f = 0.5f;
    static uint8_t zero_u8[1] = {0};
    static int64_t dims[1] = {1};
    Onnx__TensorProto *t = &tensors[m->n_attrs];
    Onnx__AttributeProto *a = model_attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    onnx__tensor_proto__init(t);
    t->has_data_type = true;
    t->data_type = dtype;
    t->dims = dims, t->n_dims = 1;
    t->has_raw_data = true;
    t->raw_data.data = dtype == SMELT_DT_UINT8 ? zero_u8 : (uint8_t *)&one_f;
    t->raw_data.len = dtype == SMELT_DT_UINT8 ? 1 : sizeof one_f;
    a->t = t;
}

/* A body for a graph attribute: `n_in` formal inputs b0.. (untyped: the
 * node's inputs give their types), outputs the names in `outs` (each one
 * of the inputs, or "c", a scalar initializer of the body). */
typedef struct body_proto {
    Onnx__GraphProto g;
    Onnx__ValueInfoProto in[2], out[2];
    Onnx__ValueInfoProto *in_ptrs[2], *out_ptrs[2];
    Onnx__TensorProto c;
    Onnx__TensorProto *c_ptr;
    float c_value;
} body_proto;

static Onnx__GraphProto *make_body(body_proto *b, int n_in, const char *const *outs, int n_out)
{
    static char *names[] = {"b0", "b1"};
    onnx__graph_proto__init(&b->g);
    onnx__tensor_proto__init(&b->c);
    b->c.name = "c";
    b->c.has_data_type = true;
    b->c.data_type = SMELT_DT_FLOAT32;
    b->c_value = 1;
    b->c.float_data = &b->c_value, b->c.n_float_data = 1;
    b->c_ptr = &b->c;
    b->g.name = "body";
    b->g.initializer = &b->c_ptr, b->g.n_initializer = 1;
    for (int i = 0; i < n_in; i++) {
        onnx__value_info_proto__init(&b->in[i]);
        b->in[i].name = names[i];
        b->in_ptrs[i] = &b->in[i];
    }
    for (int i = 0; i < n_out; i++) {
        onnx__value_info_proto__init(&b->out[i]);
        b->out[i].name = (char *)outs[i];
        b->out_ptrs[i] = &b->out[i];
    }
    b->g.input = b->in_ptrs, b->g.n_input = (size_t)n_in;
    b->g.output = b->out_ptrs, b->g.n_output = (size_t)n_out;
    return &b->g;
}

/* The smallest valid body of each control-flow op (If: one output; Loop:
 * (iter, cond) -> (cond, one scan output); Scan, SequenceMap: one slice or
 * element -> one output). */
static void set_graph(model *m, const char *name)
{
    static body_proto bodies[MAX_ATTRS];
    static const char *if_out[] = {"c"}, *loop_out[] = {"b1", "c"}, *scan_out[] = {"b0"};
    body_proto *b = &bodies[m->n_attrs];
    Onnx__AttributeProto *a = model_attr(m, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    if (m->info->kind == OP_LOOP) a->g = make_body(b, 2, loop_out, 2);
    else if (m->info->kind == OP_SCAN || m->info->kind == OP_SEQUENCE_MAP)
        a->g = make_body(b, 1, scan_out, 1); /* one slice / element -> itself */
    else a->g = make_body(b, 0, if_out, 1);
}

/* A valid value of each attribute some schema version requires, so that a
 * case fails on the attribute it is about. */
static void set_required(model *m, const schema_attr *a)
{
    if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH) {
        set_graph(m, a->name);
        return;
    }
    static const int64_t k11[] = {1, 1}, k0[] = {0}, k1[] = {1}, pads[] = {0, 0, 0, 0};
    static const float scales[] = {1, 1, 2, 2};
    const char *n = a->name;
    if (strcmp(n, "kernel_shape") == 0) set_ints(m, n, k11, 2);
    else if (strcmp(n, "consumed_inputs") == 0) set_ints(m, n, k0, 1);
    else if (strcmp(n, "to") == 0 && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
        set_string(m, n, "FLOAT");
    else if (strcmp(n, "to") == 0) set_int(m, n, 1);
    else if (strcmp(n, "axis") == 0) set_int(m, n, 0);
    else if (strcmp(n, "blocksize") == 0) set_int(m, n, 2);
    else if (strcmp(n, "equation") == 0) set_string(m, n, "ij->ji");
    else if (strcmp(n, "size") == 0) set_int(m, n, 3);
    else if (strcmp(n, "paddings") == 0 || strcmp(n, "pads") == 0) set_ints(m, n, pads, 4);
    else if (strcmp(n, "starts") == 0 || strcmp(n, "axes") == 0) set_ints(m, n, k0, 1);
    else if (strcmp(n, "ends") == 0) set_ints(m, n, k1, 1);
    else if (strcmp(n, "k") == 0) set_int(m, n, 1);
    else if (strcmp(n, "scales") == 0) set_floats(m, n, scales, 4);
    else if (strcmp(n, "shape") == 0) set_ints(m, n, k1, 1);
    else if (strcmp(n, "num_groups") == 0) set_int(m, n, 1);
    else if (strcmp(n, "direction") == 0) set_string(m, n, "LEFT");
    else if (strcmp(n, "num_scan_inputs") == 0) set_int(m, n, 1);
    else if (strcmp(n, "q_num_heads") == 0 || strcmp(n, "kv_num_heads") == 0) set_int(m, n, 1);
    /* TreeEnsemble: one tree of one node whose branches reach leaf 0 */
    else if (strcmp(n, "nodes_trueleafs") == 0 || strcmp(n, "nodes_falseleafs") == 0)
        set_ints(m, n, k1, 1);
    else if (strncmp(n, "nodes_", 6) == 0 && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
        set_ints(m, n, k0, 1);
    else if (strcmp(n, "leaf_targetids") == 0 || strcmp(n, "tree_roots") == 0)
        set_ints(m, n, k0, 1);
    else if (strcmp(n, "nodes_modes") == 0) set_tensor1(m, n, SMELT_DT_UINT8);
    else if (strcmp(n, "nodes_splits") == 0 || strcmp(n, "leaf_weights") == 0)
        set_tensor1(m, n, SMELT_DT_FLOAT32);
    else if (strcmp(n, "n_targets") == 0) set_int(m, n, 1);
    /* Momentum (ai.onnx.preview.training) requires all four */
    else if (strcmp(n, "mode") == 0)
        set_string(m, n, m->info->kind == OP_TFIDF_VECTORIZER ? "TF" : "standard");
    /* TfIdfVectorizer: a pool of one unigram */
    else if (strcmp(n, "min_gram_length") == 0 || strcmp(n, "max_gram_length") == 0) set_int(m, n, 1);
    else if (strcmp(n, "max_skip_count") == 0) set_int(m, n, 0);
    else if (strcmp(n, "ngram_counts") == 0 || strcmp(n, "ngram_indexes") == 0) set_ints(m, n, k0, 1);
    else if (strcmp(n, "pool_int64s") == 0) set_ints(m, n, k1, 1);
    else if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) set_float(m, n, 0.5f);
    else fprintf(stderr, "test: no valid value for required attribute '%s'\n", n);
}

/* Reshape-1's shape is optional in the schema, but without it there is
 * nothing to reshape to: smelt requires it (and TfIdfVectorizer's integer
 * pool: its string pool is outside smelt's types). */
static bool smelt_requires(const char *op, const char *attr)
{
    return (strcmp(op, "Reshape") == 0 && strcmp(attr, "shape") == 0) ||
           (strcmp(op, "TfIdfVectorizer") == 0 && strcmp(attr, "pool_int64s") == 0) ||
           (strcmp(op, "ai.onnx.ml.TreeEnsemble") == 0 && strcmp(attr, "n_targets") == 0);
}

/* All required attributes of the version at m->opset except `skip`. */
static void set_all_required(model *m, const char *skip)
{
    int v = schema_version_at(m->info->name, m->opset);
    for (int a = 0; a < schema_attr_count(v); a++) {
        const schema_attr *sa = &k_schema[v + 1 + a].attr;
        bool required = sa->required || smelt_requires(m->info->name, sa->name);
        if (required && strcmp(sa->name, skip) != 0) set_required(m, sa);
    }
}

typedef struct packed {
    uint8_t *bytes;
    size_t size;
} packed;

/* Inputs the node needs: the op_def's minimum, except that Resize-10
 * requires its scales (input 1; later versions allow it empty). */
static int model_inputs(const model *m)
{
    const op_def *d = m->info->def;
    if (m->info->kind == OP_RESIZE && m->opset < 11) return 2;
    if (m->info->kind == OP_LOOP) return 2; /* M and cond */
    if (m->info->kind == OP_SCAN && m->opset < 9) return 2; /* sequence_lens, a scan input */
    if (d->max_inputs == 0) return 0; /* SequenceEmpty */
    return d->min_inputs > 0 ? d->min_inputs : 1;
}

static void pack_model(const model *m, packed *out)
{
    const op_def *d = m->info->def;
    int n_in = model_inputs(m), n_out = d->min_outputs > 0 ? d->min_outputs : 1;
    /* up to QLinearConv's and QLinearMatMul's 8 required inputs */
    static char *in_names[] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"},
                *out_names[] = {"y0", "y1", "y2"};
    Onnx__AttributeProto *attr_ptrs[MAX_ATTRS];
    for (int i = 0; i < m->n_attrs; i++) attr_ptrs[i] = (Onnx__AttributeProto *)&m->attrs[i];

    Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
    op_domain domain = op_domain_of(m->info); /* ops.def: "<domain>.<OpType>" */
    node.name = "n0";
    node.op_type = (char *)op_type_name(m->info);
    node.domain = domain == OP_DOMAIN_ONNX ? "" : (char *)op_domain_name(domain);
    node.input = in_names, node.n_input = (size_t)n_in;
    node.output = out_names, node.n_output = (size_t)n_out;
    node.attribute = attr_ptrs, node.n_attribute = (size_t)m->n_attrs;

    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    tt.has_elem_type = true;
    tt.elem_type = SMELT_DT_FLOAT32;
    Onnx__TypeProto type = ONNX__TYPE_PROTO__INIT;
    type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    type.tensor_type = &tt;
    Onnx__ValueInfoProto ins[SMELT_ARRAY_LEN(in_names)], outs[SMELT_ARRAY_LEN(out_names)];
    Onnx__ValueInfoProto *in_ptrs[SMELT_ARRAY_LEN(in_names)], *out_ptrs[SMELT_ARRAY_LEN(out_names)];
    for (int i = 0; i < n_in; i++) {
        onnx__value_info_proto__init(&ins[i]);
        ins[i].name = in_names[i], ins[i].type = &type;
        in_ptrs[i] = &ins[i];
    }
    for (int i = 0; i < n_out; i++) {
        onnx__value_info_proto__init(&outs[i]);
        outs[i].name = out_names[i];
        out_ptrs[i] = &outs[i];
    }
    Onnx__NodeProto *node_ptr = &node;
    Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
    graph.name = "g";
    graph.node = &node_ptr, graph.n_node = 1;
    graph.input = in_ptrs, graph.n_input = (size_t)n_in;
    graph.output = out_ptrs, graph.n_output = (size_t)n_out;

    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opset_ptr = &opset;
    opset.domain = node.domain;
    opset.has_version = true;
    opset.version = m->opset;
    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    mp.has_ir_version = true;
    mp.ir_version = 8;
    mp.opset_import = &opset_ptr, mp.n_opset_import = 1;
    mp.graph = &graph;
    out->size = onnx__model_proto__get_packed_size(&mp);
    out->bytes = malloc(out->size);
    if (out->bytes) onnx__model_proto__pack(&mp, out->bytes);
}

/* Import m; it must be refused naming node, op, `what` and the opset. */
static void expect_refused(const model *m, const char *what, const char *why)
{
    packed p;
    pack_model(m, &p);
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = NULL;
    smelt_status s = p.bytes ? onnx_import(ctx, p.bytes, p.size, NULL, &g) : SMELT_ERR_NOMEM;
    const char *msg = smelt_ctx_message(ctx);
    char node[160], opset[32];
    snprintf(node, sizeof node, "node 'n0' (%s)",
             op_type_name(m->info));
    snprintf(opset, sizeof opset, "opset %d", m->opset);
    bool ok = (s == SMELT_ERR_UNSUPPORTED || s == SMELT_ERR_ATTR) && strstr(msg, node) &&
              strstr(msg, what) && strstr(msg, opset);
    if (!ok)
        fprintf(stderr, "%s at opset %d, %s: not refused as expected (status %s): %s\n",
                m->info->name, m->opset, why, smelt_status_name(s), msg);
    CHECK(ok);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
    free(p.bytes);
}

static void model_init(model *m, const op_info *info, int opset)
{
    memset(m, 0, sizeof *m);
    m->info = info;
    m->opset = opset;
}

/* The control: with only its required attributes, every version imports
 * (so the refusals below are about what each case changes). */
static void accept_required_only(const op_info *info, int opset)
{
    model m;
    packed p;
    model_init(&m, info, opset);
    set_all_required(&m, "");
    pack_model(&m, &p);
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = NULL;
    smelt_status s = p.bytes ? onnx_import(ctx, p.bytes, p.size, NULL, &g) : SMELT_ERR_NOMEM;
    if (s != SMELT_OK)
        fprintf(stderr, "%s at opset %d with its required attributes: %s\n", info->name, opset,
                smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
    free(p.bytes);
}

/* ---- refusals ---- */

static void refuse_bogus_name(const op_info *info, int opset)
{
    model m;
    model_init(&m, info, opset);
    set_all_required(&m, "");
    set_int(&m, "smelt_bogus_attr", 1);
    expect_refused(&m, "attribute 'smelt_bogus_attr'", "bogus attribute name");
}

/* ONNX's 0/1 attributes: any other value means nothing smelt implements. */
static bool is_flag(const char *name)
{
    static const char *const flags[] = {
        "keepdims",      "noop_with_empty_axes", "select_last_index", "largest",
        "sorted",        "exclusive",            "reverse",           "upper",
        "allowzero",     "detect_negative",      "detect_positive",   "transA",
        "transB",        "ceil_mode",            "count_include_pad", "storage_order",
        "exclude_outside", "antialias",          "fmod",              "saturate",
        "training_mode", "is_test",              "spatial",           "broadcast",
        "input_forget",  "linear_before_reset",  "output_sequence",   "layout",
        "is_causal",     "interleaved"};
    for (size_t i = 0; i < SMELT_ARRAY_LEN(flags); i++)
        if (strcmp(name, flags[i]) == 0) return true;
    return false;
}

static void refuse_bad_value(const op_info *info, int opset, const schema_attr *a)
{
    model m;
    char what[96];
    model_init(&m, info, opset);
    set_all_required(&m, a->name);
    snprintf(what, sizeof what, "'%s'", a->name);
    if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) {
        set_string(&m, a->name, "smelt_bogus_value");
        expect_refused(&m, what, "bogus string value");
    } else if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT && is_flag(a->name)) {
        set_int(&m, a->name, 2);
        expect_refused(&m, what, "0/1 attribute set to 2");
    }
}

/* Real values of real attributes that smelt does not implement. */
typedef struct bad_value {
    const char *op, *attr;
    int opset;
    int64_t i;
    const char *s; /* string value, else i */
} bad_value;

static const bad_value k_bad_values[] = {
    {"Resize", "antialias", 19, 1, NULL}, /* with the default mode, nearest */
    {"BitCast", "to", 26, 8 /* STRING */, NULL},
    {"BitCast", "to", 26, 17 /* FLOAT8E4M3FN */, NULL},
    {"Range", "stash_type", 27, 10 /* FLOAT16 */, NULL},
    {"MelWeightMatrix", "output_datatype", 17, 9 /* BOOL */, NULL},
    {"Cast", "to", 25, 27 /* FLOAT6E2M3 */, NULL},
    {"QuantizeLinear", "output_dtype", 25, 24 /* FLOAT8E8M0: a scale type */, NULL},
    {"Cast", "to", 13, 999, NULL},
    {"LayerNormalization", "stash_type", 17, SMELT_DT_INT32, NULL},
    {"BatchNormalization", "is_test", 6, 0, NULL},
    {"BatchNormalization", "spatial", 7, 2, NULL},
    {"Dropout", "is_test", 6, 0, NULL},
    {"Upsample", "mode", 9, 0, "cubic"},
    {"DepthToSpace", "mode", 13, 0, "dcr"},
    {"SpaceToDepth", "mode", 28, 0, "crd"},
    {"SpaceToDepth", "blocksize", 28, 0, NULL},
    {"Attention", "qk_matmul_output_mode", 23, 4, NULL},
    {"Attention", "softmax_precision", 23, SMELT_DT_INT32, NULL},
    {"Attention", "left_window_size", 25, -2, NULL},
    {"Attention", "q_num_heads", 24, 0, NULL},
    {"RotaryEmbedding", "rotary_embedding_dim", 23, -1, NULL},
    {"BitShift", "direction", 28, 0, "left"},
    {"SoftmaxCrossEntropyLoss", "reduction", 13, 0, "Mean"},
    {"GridSample", "mode", 16, 0, "linear"}, /* GridSample-16 says bilinear */
    {"GridSample", "mode", 20, 0, "bicubic"},
    {"GridSample", "padding_mode", 22, 0, "Zeros"},
    {"RoiAlign", "sampling_ratio", 22, -1, NULL},
    {"RoiAlign", "output_height", 16, 0, NULL},
    {"HannWindow", "output_datatype", 17, 7 /* INT64 */, NULL},
    {"LinearAttention", "chunk_size", 27, 0, NULL},
    {"CausalConvWithState", "activation", 27, 0, "gelu"},
};

static void test_bad_values(void)
{
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_bad_values); i++) {
        const bad_value *b = &k_bad_values[i];
        model m;
        char what[96];
        model_init(&m, op_lookup(b->op), b->opset);
        set_all_required(&m, b->attr);
        if (b->s) set_string(&m, b->attr, b->s);
        else set_int(&m, b->attr, b->i);
        snprintf(what, sizeof what, "'%s'", b->attr);
        expect_refused(&m, what, "unimplemented value");
    }
}

/* Table entries with a narrower range than the op's, just outside it. */
static void refuse_out_of_range_attrs(const op_info *info)
{
    for (const op_attr_spec *s = info->attrs; s && s->name; s++) {
        int outside[2] = {s->since - 1, s->until + 1};
        for (int k = 0; k < 2; k++) {
            int opset = outside[k];
            if ((k == 0 && !s->since) || (k == 1 && !s->until)) continue;
            if (opset < info->opset_first || opset > info->opset_last) continue;
            if (op_attr_find(info, s->name, opset)) continue; /* another entry covers it */
            model m;
            char what[96];
            model_init(&m, info, opset);
            set_all_required(&m, s->name);
            set_int(&m, s->name, 1);
            snprintf(what, sizeof what, "attribute '%s'", s->name);
            expect_refused(&m, what, "attribute outside its opsets");
        }
    }
}

static void refuse_other_opsets(const op_info *info)
{
    model m;
    char what[96];
    snprintf(what, sizeof what, "%s", info->name);
    if (info->opset_first > 1) {
        model_init(&m, info, info->opset_first - 1);
        expect_refused(&m, what, "opset before FIRST");
    }
    model_init(&m, info, info->opset_last + 1);
    expect_refused(&m, what, "opset after LAST");
}

static void test_refusals(void)
{
    int versions = 0;
    for (int k = 1; k < OP_COUNT_; k++) {
        const op_info *info = op_get((op_kind)k);
        if (!imported(info)) continue;
        for (int v = 0; v < N_SCHEMA; v++) {
            if (!k_schema[v].op || strcmp(k_schema[v].op, info->name) != 0) continue;
            int opset = k_schema[v].since < info->opset_first ? info->opset_first
                                                              : k_schema[v].since;
            if (opset > info->opset_last) continue;
            versions++;
            accept_required_only(info, opset);
            refuse_bogus_name(info, opset);
            for (int a = 0; a < schema_attr_count(v); a++)
                refuse_bad_value(info, opset, &k_schema[v + 1 + a].attr);
        }
        refuse_out_of_range_attrs(info);
        refuse_other_opsets(info);
    }
    printf("refusals checked at %d op versions\n", versions);
}

int main(void)
{
    test_opset_ranges();
    test_attr_coverage();
    test_refusals();
    test_bad_values();
    TEST_MAIN_END();
}
