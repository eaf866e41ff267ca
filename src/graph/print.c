/* Deterministic text and Graphviz forms of the graph. */
#include <string.h>

#include "graph/graph.h"

/* seq(f32), optional(seq(f32)): containers around their element type. */
static void print_dtype(smelt_dtype dt, smelt_strbuf *out)
{
    if (!smelt_dtype_is_container(dt)) {
        smelt_strbuf_append(out, smelt_dtype_name(dt));
        return;
    }
    smelt_strbuf_append(out, (unsigned)dt & SMELT_DT_OPTIONAL_BIT ? "optional(" : "seq(");
    print_dtype(smelt_dtype_element(dt), out);
    smelt_strbuf_append(out, ")");
}

void gr_value_print_type(const gr_graph *g, const gr_value *v, smelt_strbuf *out)
{
    g = gr_graph_root(g);
    print_dtype(v->dtype, out);
    if (v->rank < 0) {
        smelt_strbuf_append(out, "[?]");
        return;
    }
    smelt_strbuf_append(out, "[");
    for (int i = 0; i < v->rank; i++) {
        if (i) smelt_strbuf_append(out, ",");
        if (v->dims[i] >= 0) {
            smelt_strbuf_printf(out, "%lld", (long long)v->dims[i]);
        } else {
            int id = GR_DIM_SYM_ID(v->dims[i]);
            smelt_strbuf_append(out, id < g->syms.len ? (const char *)g->syms.items[id] : "?");
        }
    }
    smelt_strbuf_append(out, "]");
}

static void print_attr(const gr_attr *a, smelt_strbuf *out)
{
    smelt_strbuf_printf(out, "%s=", a->name);
    switch (a->type) {
    case GR_ATTR_FLOAT: smelt_strbuf_printf(out, "%g", (double)a->f); break;
    case GR_ATTR_INT: smelt_strbuf_printf(out, "%lld", (long long)a->i); break;
    case GR_ATTR_STRING: smelt_strbuf_printf(out, "\"%s\"", a->s); break;
    case GR_ATTR_TENSOR: smelt_strbuf_append(out, "<tensor>"); break;
    case GR_ATTR_GRAPH: smelt_strbuf_append(out, "<graph>"); break;
    case GR_ATTR_TYPE: print_dtype((smelt_dtype)a->i, out); break;
    case GR_ATTR_STRINGS: smelt_strbuf_printf(out, "<%d strings>", a->n); break;
    case GR_ATTR_FLOATS:
    case GR_ATTR_INTS:
        smelt_strbuf_append(out, "[");
        for (int i = 0; i < a->n && i < 16; i++) {
            if (i) smelt_strbuf_append(out, ",");
            if (a->type == GR_ATTR_INTS)
                smelt_strbuf_printf(out, "%lld", (long long)a->ints[i]);
            else
                smelt_strbuf_printf(out, "%g", (double)a->floats[i]);
        }
        if (a->n > 16) smelt_strbuf_append(out, ",...");
        smelt_strbuf_append(out, "]");
        break;
    }
}

static void print_value_ref(const gr_value *v, smelt_strbuf *out)
{
    if (!v)
        smelt_strbuf_append(out, "_");
    else
        smelt_strbuf_printf(out, "%%%s", v->name);
}

void gr_graph_print(const gr_graph *g, smelt_strbuf *out)
{
    smelt_strbuf_printf(out, "graph %s (opset %lld) {\n", g->name, (long long)g->opset);
    for (int i = 0; i < g->inputs.len; i++) {
        const gr_value *v = g->inputs.items[i];
        smelt_strbuf_append(out, "  input ");
        print_value_ref(v, out);
        smelt_strbuf_append(out, ": ");
        gr_value_print_type(g, v, out);
        smelt_strbuf_append(out, "\n");
    }
    int n_const = 0;
    int64_t const_bytes = 0;
    for (int i = 0; i < g->values.len; i++) {
        const gr_value *v = g->values.items[i];
        if (v->constant) {
            n_const++;
            const_bytes += (int64_t)smelt_tensor_nbytes(v->constant);
        }
    }
    smelt_strbuf_printf(out, "  # %d constants, %lld bytes\n", n_const, (long long)const_bytes);
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        smelt_strbuf_append(out, "  ");
        for (int k = 0; k < n->n_outputs; k++) {
            if (k) smelt_strbuf_append(out, ", ");
            print_value_ref(n->outputs[k], out);
            if (n->outputs[k]) {
                smelt_strbuf_append(out, ": ");
                gr_value_print_type(g, n->outputs[k], out);
            }
        }
        smelt_strbuf_printf(out, " = %s", n->op_type);
        if (n->n_attrs) {
            smelt_strbuf_append(out, "{");
            for (int k = 0; k < n->n_attrs; k++) {
                if (k) smelt_strbuf_append(out, ", ");
                print_attr(&n->attrs[k], out);
            }
            smelt_strbuf_append(out, "}");
        }
        smelt_strbuf_append(out, "(");
        for (int k = 0; k < n->n_inputs; k++) {
            if (k) smelt_strbuf_append(out, ", ");
            print_value_ref(n->inputs[k], out);
            if (n->inputs[k] && n->inputs[k]->constant) smelt_strbuf_append(out, "(const)");
        }
        smelt_strbuf_printf(out, ")  # %s", n->name);
        if (n->group >= 0) smelt_strbuf_printf(out, " [group %d]", n->group);
        smelt_strbuf_append(out, "\n");
    }
    smelt_strbuf_append(out, "  return ");
    for (int i = 0; i < g->outputs.len; i++) {
        if (i) smelt_strbuf_append(out, ", ");
        print_value_ref(g->outputs.items[i], out);
    }
    smelt_strbuf_append(out, "\n}\n");
}

/* DOT strings: escape quotes, backslashes and control characters. */
static void dot_escape(const char *s, smelt_strbuf *out)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            smelt_strbuf_printf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            smelt_strbuf_append(out, " ");
        else
            smelt_strbuf_appendn(out, (const char *)&c, 1);
    }
}

static void dot_edge_label(const gr_graph *g, const gr_value *v, smelt_strbuf *out)
{
    smelt_strbuf tmp;
    smelt_strbuf_init(&tmp);
    gr_value_print_type(g, v, &tmp);
    dot_escape(smelt_strbuf_cstr(&tmp), out);
    smelt_strbuf_fini(&tmp);
}

void gr_graph_print_dot(const gr_graph *g, smelt_strbuf *out)
{
    smelt_strbuf_append(out, "digraph smelt {\n  rankdir=TB;\n  node [fontname=\"Helvetica\"];\n");
    for (int i = 0; i < g->inputs.len; i++) {
        const gr_value *v = g->inputs.items[i];
        smelt_strbuf_printf(out, "  v%d [shape=oval, label=\"", v->id);
        dot_escape(v->name, out);
        smelt_strbuf_append(out, "\"];\n");
    }
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        smelt_strbuf_printf(out, "  n%d [shape=box, style=rounded, label=\"", i);
        dot_escape(n->op_type, out);
        smelt_strbuf_append(out, "\\n");
        dot_escape(n->name, out);
        smelt_strbuf_append(out, "\"];\n");
        for (int k = 0; k < n->n_inputs; k++) {
            const gr_value *v = n->inputs[k];
            if (!v || v->constant) continue;
            if (v->producer)
                smelt_strbuf_printf(out, "  n%d -> n%d [label=\"", v->producer->id, i);
            else
                smelt_strbuf_printf(out, "  v%d -> n%d [label=\"", v->id, i);
            dot_edge_label(g, v, out);
            smelt_strbuf_append(out, "\"];\n");
        }
    }
    for (int i = 0; i < g->outputs.len; i++) {
        const gr_value *v = g->outputs.items[i];
        smelt_strbuf_printf(out, "  o%d [shape=oval, label=\"", i);
        dot_escape(v->name, out);
        smelt_strbuf_append(out, "\"];\n");
        if (v->producer) {
            smelt_strbuf_printf(out, "  n%d -> o%d [label=\"", v->producer->id, i);
            dot_edge_label(g, v, out);
            smelt_strbuf_append(out, "\"];\n");
        }
    }
    smelt_strbuf_append(out, "}\n");
}
