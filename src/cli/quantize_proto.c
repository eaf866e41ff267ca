/* smelt quantize: the ModelProto rewrite, with the names and the node
 * layout of onnxruntime's QDQ quantizer:
 *   weight w   -> w_quantized (int8), w_scale, w_zero_point
 *                 -> DequantizeLinear(axis) -> w_DequantizeLinear_Output
 *   bias b     -> b_quantized (int32), b_quantized_scale, b_quantized_zero_point
 *                 -> DequantizeLinear(axis 0) -> b_DequantizeLinear_Output
 *   activation t -> QuantizeLinear(t, t_scale, t_zero_point) -> t_QuantizeLinear_Output
 *                 -> DequantizeLinear -> t_DequantizeLinear_Output, read by every
 *                 node that read t; a graph output t keeps its name: its
 *                 producer writes t_QuantizeLinear_Input and the
 *                 DequantizeLinear writes t.
 *   a Relu or Clip removed after a quantized node: the node writes the
 *                 activation's output instead (its quantization clamps).
 * The input's messages are shared, not copied: a node whose inputs or
 * outputs change is a shallow copy with new name arrays, the graph and the
 * model are shallow copies with new node, initializer and input lists.
 * Everything new lives in the plan's arena.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/quantize.h"

typedef struct q_writer {
    smelt_ctx *ctx;
    smelt_arena *a;
    const q_plan *p;
    smelt_strmap reads;   /* tensor -> the name its readers use now */
    smelt_strmap writes;  /* producer output -> its new name (quantized graph outputs) */
    smelt_strmap removed; /* float initializers replaced by quantized ones */
    smelt_strmap taken;   /* every tensor name in the graph, and the new ones */
    smelt_strmap after;   /* node output -> the q_act quantized after it */
    smelt_strmap dropped; /* a removed activation's output -> the node */
    smelt_ptrvec nodes, inits;
    bool failed;
} q_writer;

static char *wstr(q_writer *w, const char *fmt, ...) SMELT_PRINTF(2, 3);

static char *wstr(q_writer *w, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *s = n >= 0 && (size_t)n < sizeof buf ? smelt_arena_strdup(w->a, buf) : NULL;
    if (!s) w->failed = true;
    return s;
}

static void take(q_writer *w, const char *name)
{
    if (name && !smelt_strmap_put(&w->taken, name, (void *)name)) w->failed = true;
}

/* A new tensor name: fmt's, or with _1, _2, ... when the model holds it
 * (the MLP's initializer att_scale beside the scale of its tensor att). */
static char *wname(q_writer *w, const char *fmt, const char *base) SMELT_PRINTF(2, 0);

static char *wname(q_writer *w, const char *fmt, const char *base)
{
    char *name = wstr(w, fmt, base);
    for (int k = 1; name && smelt_strmap_get(&w->taken, name); k++) {
        char *first = wstr(w, fmt, base);
        name = first ? wstr(w, "%s_%d", first, k) : NULL;
    }
    take(w, name);
    return name;
}

static void take_names(q_writer *w, const Onnx__GraphProto *g)
{
    for (size_t i = 0; i < g->n_initializer; i++) take(w, g->initializer[i]->name);
    for (size_t i = 0; i < g->n_input; i++) take(w, g->input[i]->name);
    for (size_t i = 0; i < g->n_output; i++) take(w, g->output[i]->name);
    for (size_t i = 0; i < g->n_node; i++) {
        for (size_t k = 0; k < g->node[i]->n_input; k++) take(w, g->node[i]->input[k]);
        for (size_t k = 0; k < g->node[i]->n_output; k++) take(w, g->node[i]->output[k]);
    }
}

static void *walloc(q_writer *w, size_t bytes)
{
    void *p = smelt_arena_alloc(w->a, bytes ? bytes : 1);
    if (!p) w->failed = true;
    return p;
}

static void push(q_writer *w, smelt_ptrvec *v, void *x)
{
    if (!x || !smelt_ptrvec_push(v, x)) w->failed = true;
}

static Onnx__TensorProto *tensor(q_writer *w, const char *name, int32_t dtype, int rank,
                                 const int64_t *dims, const void *data, size_t nbytes)
{
    Onnx__TensorProto *t = walloc(w, sizeof *t);
    int64_t *d = walloc(w, sizeof *d * (size_t)(rank ? rank : 1));
    uint8_t *bytes = walloc(w, nbytes);
    if (!t || !d || !bytes) return NULL;
    onnx__tensor_proto__init(t);
    if (rank) memcpy(d, dims, sizeof *d * (size_t)rank);
    if (nbytes) memcpy(bytes, data, nbytes); /* little-endian, as ONNX stores raw data */
    t->name = (char *)name;
    t->has_data_type = 1, t->data_type = dtype;
    t->n_dims = (size_t)rank, t->dims = d;
    t->has_raw_data = 1, t->raw_data.len = nbytes, t->raw_data.data = bytes;
    return t;
}

static Onnx__AttributeProto *axis_attr(q_writer *w, int axis)
{
    Onnx__AttributeProto *a = walloc(w, sizeof *a);
    if (!a) return NULL;
    onnx__attribute_proto__init(a);
    a->name = "axis";
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1, a->i = axis;
    return a;
}

/* op(in0, in1, in2) -> out, with an axis attribute when axis >= 0. */
static Onnx__NodeProto *qdq_node(q_writer *w, const char *op, const char *name, const char *in0,
                                 const char *in1, const char *in2, const char *out, int axis)
{
    Onnx__NodeProto *n = walloc(w, sizeof *n);
    char **in = walloc(w, sizeof *in * 3), **o = walloc(w, sizeof *o);
    Onnx__AttributeProto **attrs = walloc(w, sizeof *attrs);
    if (!n || !in || !o || !attrs || !name || !in0 || !in1 || !in2 || !out) return NULL;
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)name;
    in[0] = (char *)in0, in[1] = (char *)in1, in[2] = (char *)in2;
    n->n_input = 3, n->input = in;
    o[0] = (char *)out;
    n->n_output = 1, n->output = o;
    if (axis >= 0) {
        attrs[0] = axis_attr(w, axis);
        n->n_attribute = 1, n->attribute = attrs;
    }
    return n;
}

static void map_ptr(q_writer *w, smelt_strmap *m, const char *key, const void *val)
{
    if (!key || !val || !smelt_strmap_put(m, key, (void *)val)) w->failed = true;
}

static void map_put(q_writer *w, smelt_strmap *m, const char *key, const char *val) { map_ptr(w, m, key, val); }

/* ---- weights and biases: a DequantizeLinear each, at the top ---- */

static void write_weight(q_writer *w, const q_weight *qw)
{
    const smelt_tensor *q = qw->q;
    int64_t c = qw->channels;
    int8_t *zeros = walloc(w, (size_t)c);
    char *qn = wname(w, "%s_quantized", qw->name), *sn = wname(w, "%s_scale", qw->name),
         *zn = wname(w, "%s_zero_point", qw->name), *dq = wname(w, "%s_DequantizeLinear_Output", qw->name);
    if (!zeros) return;
    memset(zeros, 0, (size_t)c);
    push(w, &w->inits, tensor(w, qn, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, q->rank, q->dims, q->data,
                              smelt_tensor_nbytes(q)));
    push(w, &w->inits, tensor(w, sn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, &c, qw->scale,
                              sizeof(float) * (size_t)c));
    push(w, &w->inits, tensor(w, zn, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, 1, &c, zeros, (size_t)c));
    push(w, &w->nodes, qdq_node(w, "DequantizeLinear", wstr(w, "%s_DequantizeLinear", qw->name), qn, sn,
                                zn, dq, qw->axis));
    map_put(w, &w->reads, qw->name, dq);
    map_put(w, &w->removed, qw->name, qw->name);
}

static void write_bias(q_writer *w, const q_bias *qb)
{
    int32_t *zeros = walloc(w, sizeof(int32_t) * (size_t)qb->n);
    char *qn = wname(w, "%s_quantized", qb->name), *sn = wname(w, "%s_quantized_scale", qb->name),
         *zn = wname(w, "%s_quantized_zero_point", qb->name),
         *dq = wname(w, "%s_DequantizeLinear_Output", qb->name);
    if (!zeros) return;
    memset(zeros, 0, sizeof(int32_t) * (size_t)qb->n);
    push(w, &w->inits, tensor(w, qn, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, qb->rank, qb->dims, qb->q,
                              sizeof(int32_t) * (size_t)qb->n));
    push(w, &w->inits, tensor(w, sn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, &qb->n, qb->scale,
                              sizeof(float) * (size_t)qb->n));
    push(w, &w->inits, tensor(w, zn, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1, &qb->n, zeros,
                              sizeof(int32_t) * (size_t)qb->n));
    push(w, &w->nodes, qdq_node(w, "DequantizeLinear", wstr(w, "%s_DequantizeLinear", qb->name), qn, sn,
                                zn, dq, 0));
    map_put(w, &w->reads, qb->name, dq);
    map_put(w, &w->removed, qb->name, qb->name);
}

/* ---- activations: QuantizeLinear -> DequantizeLinear after the producer ---- */

static bool is_graph_output(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_output; i++)
        if (strcmp(g->output[i]->name, name) == 0) return true;
    return false;
}

/* The names first (readers and producers are renamed as nodes are copied). */
static void name_act(q_writer *w, const Onnx__GraphProto *g, const q_act *a)
{
    if (is_graph_output(g, a->name))
        map_put(w, &w->writes, a->name, wname(w, "%s_QuantizeLinear_Input", a->name));
    else
        map_put(w, &w->reads, a->name, wname(w, "%s_DequantizeLinear_Output", a->name));
}

static void write_act(q_writer *w, const Onnx__GraphProto *g, const q_act *a)
{
    int64_t none = 0;
    char *sn = wname(w, "%s_scale", a->name), *zn = wname(w, "%s_zero_point", a->name),
         *qo = wname(w, "%s_QuantizeLinear_Output", a->name);
    bool out = is_graph_output(g, a->name);
    const char *q_in = out ? smelt_strmap_get(&w->writes, a->name) : a->name;
    const char *dq_out = out ? a->name : smelt_strmap_get(&w->reads, a->name);
    push(w, &w->inits, tensor(w, sn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, &none, &a->scale, 4));
    push(w, &w->inits, tensor(w, zn, ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 0, &none, &a->zp, 1));
    push(w, &w->nodes, qdq_node(w, "QuantizeLinear", wstr(w, "%s_QuantizeLinear", a->name), q_in, sn, zn,
                                qo, -1));
    push(w, &w->nodes, qdq_node(w, "DequantizeLinear", wstr(w, "%s_DequantizeLinear", a->name), qo, sn,
                                zn, dq_out, -1));
}

static const q_act *act_named(const q_plan *p, const char *name)
{
    for (int i = 0; name && i < p->n_acts; i++)
        if (strcmp(p->acts[i].name, name) == 0) return &p->acts[i];
    return NULL;
}

/* Which output each activation's Q/DQ follows, and the removed
 * activations: their producer writes their output (or, for a graph
 * output, the name name_act gave it). */
static void plan_outputs(q_writer *w)
{
    const q_plan *p = w->p;
    for (int i = 0; i < p->n_acts; i++) map_ptr(w, &w->after, p->acts[i].name, &p->acts[i]);
    for (int i = 0; i < p->n_nodes; i++) {
        const q_node *qn = &p->nodes[i];
        if (!qn->act) continue;
        const char *y = qn->node->output[0], *r = qn->act->output[0];
        const char *to = smelt_strmap_get(&w->writes, r);
        map_put(w, &w->writes, y, to ? to : r);
        map_ptr(w, &w->after, y, &p->acts[qn->y]);
        map_ptr(w, &w->dropped, r, qn->act);
    }
}

static bool is_dropped(q_writer *w, const Onnx__NodeProto *n)
{
    return n->n_output == 1 && smelt_strmap_get(&w->dropped, n->output[0]) == (const void *)n;
}

/* names[] with the map applied; the original array when nothing changes. */
static char **renamed(q_writer *w, const smelt_strmap *m, char **names, size_t n)
{
    char **out = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *to = names[i] && *names[i] ? smelt_strmap_get(m, names[i]) : NULL;
        if (!to) continue;
        if (!out && (out = walloc(w, sizeof *out * n))) memcpy(out, names, sizeof *out * n);
        if (out) out[i] = (char *)to;
    }
    return out ? out : names;
}

static Onnx__NodeProto *copy_node(q_writer *w, Onnx__NodeProto *n)
{
    char **in = renamed(w, &w->reads, n->input, n->n_input);
    char **out = renamed(w, &w->writes, n->output, n->n_output);
    if (in == n->input && out == n->output) return n;
    Onnx__NodeProto *c = walloc(w, sizeof *c);
    if (!c) return NULL;
    *c = *n;
    c->input = in, c->output = out;
    return c;
}

static bool has_subgraphs(const Onnx__GraphProto *g)
{
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_attribute; k++)
            if (g->node[i]->attribute[k]->g || g->node[i]->attribute[k]->n_graphs) return true;
    return false;
}

/* The nodes in order: weight and bias DequantizeLinears, the Q/DQ of
 * quantized graph inputs, then each node followed by the Q/DQ of its
 * quantized outputs. */
static void write_nodes(q_writer *w, const Onnx__GraphProto *g)
{
    const q_plan *p = w->p;
    for (int i = 0; i < p->n_weights; i++) write_weight(w, &p->weights[i]);
    for (int i = 0; i < p->n_biases; i++)
        if (p->biases[i].q) write_bias(w, &p->biases[i]);
    for (int i = 0; i < p->n_acts; i++) name_act(w, g, &p->acts[i]);
    plan_outputs(w);
    for (size_t i = 0; i < g->n_input; i++) {
        const q_act *a = act_named(p, g->input[i]->name);
        if (a) write_act(w, g, a);
    }
    for (size_t i = 0; i < g->n_node; i++) {
        if (is_dropped(w, g->node[i])) continue;
        push(w, &w->nodes, copy_node(w, g->node[i]));
        for (size_t k = 0; k < g->node[i]->n_output; k++) {
            const q_act *a = g->node[i]->output[k] ? smelt_strmap_get(&w->after, g->node[i]->output[k]) : NULL;
            if (a) write_act(w, g, a);
        }
    }
}

/* The float weights and biases go (unless a subgraph might read them by
 * name), and with them graph inputs of their names (old IR versions list
 * initializers as inputs). */
static void write_inits(q_writer *w, const Onnx__GraphProto *g, Onnx__GraphProto *out)
{
    bool keep = has_subgraphs(g);
    smelt_ptrvec inits = {0}, inputs = {0};
    for (size_t i = 0; i < g->n_initializer; i++)
        if (keep || !smelt_strmap_get(&w->removed, g->initializer[i]->name))
            push(w, &inits, g->initializer[i]);
    for (int i = 0; i < w->inits.len; i++) push(w, &inits, w->inits.items[i]);
    for (size_t i = 0; i < g->n_input; i++)
        if (keep || !smelt_strmap_get(&w->removed, g->input[i]->name)) push(w, &inputs, g->input[i]);
    size_t ni = (size_t)inits.len, nin = (size_t)inputs.len;
    out->initializer = walloc(w, sizeof(void *) * ni);
    out->input = walloc(w, sizeof(void *) * nin);
    if (out->initializer && ni) memcpy(out->initializer, inits.items, sizeof(void *) * ni);
    if (out->input && nin) memcpy(out->input, inputs.items, sizeof(void *) * nin);
    out->n_initializer = ni, out->n_input = nin;
    smelt_ptrvec_fini(&inits);
    smelt_ptrvec_fini(&inputs);
}

static smelt_status pack(smelt_ctx *ctx, const Onnx__ModelProto *m, void **out, size_t *size)
{
    *size = onnx__model_proto__get_packed_size(m);
    if (!(*out = smelt_alloc(*size ? *size : 1))) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    onnx__model_proto__pack(m, *out);
    return SMELT_OK;
}

smelt_status q_write_model(smelt_ctx *ctx, const Onnx__ModelProto *model, const q_plan *plan,
                           void **out, size_t *size)
{
    q_writer w = {.ctx = ctx, .a = (smelt_arena *)&plan->arena, .p = plan};
    smelt_strmap_init(&w.reads);
    smelt_strmap_init(&w.writes);
    smelt_strmap_init(&w.removed);
    smelt_strmap_init(&w.taken);
    smelt_strmap_init(&w.after);
    smelt_strmap_init(&w.dropped);
    const Onnx__GraphProto *g = model->graph;
    take_names(&w, g);
    Onnx__GraphProto *g2 = walloc(&w, sizeof *g2);
    Onnx__ModelProto m2 = *model;
    if (g2) {
        *g2 = *g;
        write_nodes(&w, g);
        write_inits(&w, g, g2);
        g2->node = walloc(&w, sizeof(void *) * (size_t)w.nodes.len);
        if (g2->node) memcpy(g2->node, w.nodes.items, sizeof(void *) * (size_t)w.nodes.len);
        g2->n_node = (size_t)w.nodes.len;
        m2.graph = g2;
    }
    smelt_status s = w.failed ? smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory (or a tensor name "
                                           "over 1000 bytes)")
                              : pack(ctx, &m2, out, size);
    smelt_strmap_fini(&w.reads);
    smelt_strmap_fini(&w.writes);
    smelt_strmap_fini(&w.removed);
    smelt_strmap_fini(&w.taken);
    smelt_strmap_fini(&w.after);
    smelt_strmap_fini(&w.dropped);
    smelt_ptrvec_fini(&w.nodes);
    smelt_ptrvec_fini(&w.inits);
    return s;
}
