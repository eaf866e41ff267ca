/* If, Loop, Scan: import of their graph attributes and shape inference
 * through the bodies.  The reference executor runs them in
 * exec/control.c, lowering emits C control flow around the compiled
 * bodies in lower/control.c; control.h describes the node layout. */
#include <string.h>

#include "ops/control.h"
#include "passes/passes.h"

OP_ATTRS(IF) = {{"then_branch", 0, 0}, {"else_branch", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(LOOP) = {{"body", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(SEQUENCE_MAP) = {{"body", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(SCAN) = {{"body", 0, 0},
                  {"num_scan_inputs", 0, 0},
                  {"directions", 8, 8},
                  {"scan_input_axes", 9, 0},
                  {"scan_input_directions", 9, 0},
                  {"scan_output_axes", 9, 0},
                  {"scan_output_directions", 9, 0},
                  {NULL, 0, 0}};

/* ---- import ---- */

static smelt_status graph_attr(smelt_ctx *ctx, const gr_node *n, const char *name, gr_graph **out)
{
    const gr_attr *a = gr_node_attr(n, name);
    if (!a) return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' is required", name);
    if (a->type != GR_ATTR_GRAPH || !a->g)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' must be a graph", name);
    *out = a->g;
    return SMELT_OK;
}

int ctl_body_input_source(const gr_graph *body, int i)
{
    const gr_value *v = body->inputs.items[i];
    return v->capture - 1;
}

/* The captured values are the node's last inputs (the importer appends
 * them): the ONNX inputs are those before the first. */
static int explicit_inputs(const gr_node *n, gr_graph *const *bodies, int n_bodies)
{
    int first = n->n_inputs;
    for (int b = 0; b < n_bodies; b++)
        for (int i = bodies[b]->n_formal; i < bodies[b]->inputs.len; i++) {
            int src = ctl_body_input_source(bodies[b], i);
            if (src >= 0 && src < first) first = src;
        }
    return first;
}

static smelt_status check_body_io(smelt_ctx *ctx, const gr_node *n, const char *attr,
                                  const gr_graph *body, int want_in, int want_out)
{
    if (body->n_formal != want_in)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "'%s' has %d inputs, expected %d", attr,
                       body->n_formal, want_in);
    if (body->outputs.len != want_out)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "'%s' has %d outputs, expected %d", attr,
                       body->outputs.len, want_out);
    return SMELT_OK;
}

static smelt_status if_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    ctl_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(graph_attr(ctx, n, "then_branch", &a->then_g));
    SMELT_TRY(graph_attr(ctx, n, "else_branch", &a->else_g));
    gr_graph *bodies[2] = {a->then_g, a->else_g};
    a->n_explicit = explicit_inputs(n, bodies, 2);
    if (a->n_explicit != 1 || !n->inputs[0])
        return op_errf(ctx, n, SMELT_ERR_MODEL, "has %d inputs, expected 1 (cond)", a->n_explicit);
    SMELT_TRY(check_body_io(ctx, n, "then_branch", a->then_g, 0, n->n_outputs));
    return check_body_io(ctx, n, "else_branch", a->else_g, 0, n->n_outputs);
}

static smelt_status loop_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    ctl_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(graph_attr(ctx, n, "body", &a->body));
    a->n_explicit = explicit_inputs(n, &a->body, 1);
    if (a->n_explicit < 2)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "has %d inputs, expected at least 2 (M, cond)",
                       a->n_explicit);
    a->n_state = a->n_explicit - 2;
    a->n_scan_out = n->n_outputs - a->n_state;
    if (a->n_scan_out < 0)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "has %d outputs for %d loop-carried values",
                       n->n_outputs, a->n_state);
    for (int i = 0; i < a->n_state; i++)
        if (!n->inputs[2 + i])
            return op_errf(ctx, n, SMELT_ERR_MODEL, "loop-carried input %d is missing", 2 + i);
    return check_body_io(ctx, n, "body", a->body, 2 + a->n_state,
                         1 + a->n_state + a->n_scan_out);
}

/* SequenceMap (input_sequence, additional inputs...) -> sequences: the
 * body runs per element, on element i of each sequence input and on each
 * tensor input whole. */
static smelt_status seqmap_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    ctl_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(graph_attr(ctx, n, "body", &a->body));
    a->n_explicit = explicit_inputs(n, &a->body, 1);
    if (a->n_explicit < 1)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "has no input_sequence");
    for (int i = 0; i < a->n_explicit; i++)
        if (!n->inputs[i]) return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is missing", i);
    return check_body_io(ctx, n, "body", a->body, a->n_explicit, n->n_outputs);
}

/* A per-scan-input/output list attribute: `count` entries, default 0. */
static smelt_status scan_list(smelt_ctx *ctx, gr_graph *g, gr_node *n, const char *name, int count,
                              bool is_direction, int64_t **out)
{
    int got;
    const int64_t *vals;
    SMELT_TRY(op_attr_ints(ctx, n, name, &got, &vals));
    if (got >= 0 && got != count)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' has %d values, expected %d", name,
                       got, count);
    *out = smelt_arena_alloc(&g->arena, sizeof(int64_t) * (size_t)(count + 1));
    if (!*out) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < count; i++) {
        (*out)[i] = got >= 0 ? vals[i] : 0;
        if (is_direction && (*out)[i] != 0 && (*out)[i] != 1)
            return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' value %lld is not 0 or 1",
                           name, (long long)(*out)[i]);
    }
    return SMELT_OK;
}

static smelt_status scan_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    ctl_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(graph_attr(ctx, n, "body", &a->body));
    int64_t m;
    if (!gr_node_attr(n, "num_scan_inputs"))
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'num_scan_inputs' is required");
    SMELT_TRY(op_attr_int(ctx, n, "num_scan_inputs", 0, &m));
    a->scan8 = g->opset < 9;
    int first = a->scan8; /* Scan-8's sequence_lens comes first */
    a->n_explicit = explicit_inputs(n, &a->body, 1);
    if (m < 1 || m > a->n_explicit - first)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "num_scan_inputs %lld is not in 1..%d",
                       (long long)m, a->n_explicit - first);
    a->n_scan_in = (int)m;
    a->n_state = a->n_explicit - first - a->n_scan_in;
    a->n_scan_out = n->n_outputs - a->n_state;
    if (a->n_scan_out < 0)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "has %d outputs for %d states", n->n_outputs,
                       a->n_state);
    for (int i = first; i < a->n_explicit; i++)
        if (!n->inputs[i]) return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is missing", i);
    const char *rev = a->scan8 ? "directions" : "scan_input_directions";
    SMELT_TRY(scan_list(ctx, g, n, "scan_input_axes", a->n_scan_in, false, &a->in_axes));
    SMELT_TRY(scan_list(ctx, g, n, rev, a->n_scan_in, true, &a->in_rev));
    SMELT_TRY(scan_list(ctx, g, n, "scan_output_axes", a->n_scan_out, false, &a->out_axes));
    SMELT_TRY(scan_list(ctx, g, n, "scan_output_directions", a->n_scan_out, true, &a->out_rev));
    return check_body_io(ctx, n, "body", a->body, a->n_explicit - first,
                         a->n_state + a->n_scan_out);
}

/* ---- helpers shared with exec and lowering ---- */

bool ctl_optional_of(smelt_dtype opt, smelt_dtype inner)
{
    return ((unsigned)opt & SMELT_DT_OPTIONAL_BIT) && !((unsigned)inner & SMELT_DT_OPTIONAL_BIT) &&
           smelt_dtype_element(opt) == inner;
}

static bool value_is_true_constant(const gr_value *v)
{
    return v && v->constant && op_numel(v->constant) == 1 && op_get_i64(v->constant, 0) != 0;
}

bool ctl_loop_cond_always_true(const gr_node *n)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    if (n->inputs[1] && !value_is_true_constant(n->inputs[1])) return false;
    const gr_value *out = a->body->outputs.items[0];
    while (out->producer && out->producer->op == OP_IDENTITY) out = out->producer->inputs[0];
    return out == a->body->inputs.items[1] || value_is_true_constant(out);
}

smelt_status ctl_scan_in_axis(smelt_ctx *ctx, const gr_node *n, int j, int rank, int *axis)
{
    return op_norm_axis(ctx, n, ctl_attrs_of(n)->in_axes[j], rank, axis);
}

smelt_status ctl_scan_out_axis(smelt_ctx *ctx, const gr_node *n, int k, int rank, int *axis)
{
    return op_norm_axis(ctx, n, ctl_attrs_of(n)->out_axes[k], rank, axis);
}

static void set_value_type(gr_value *v, const smelt_tensor *t)
{
    v->dtype = t->dtype;
    v->rank = t->rank;
    for (int d = 0; d < t->rank; d++) v->dims[d] = t->dims[d];
}

/* An outer constant read by the body is a constant there too (a copy the
 * body owns), so the body's shapes that depend on it (Unsqueeze axes,
 * Reshape shapes) are known and its compiled code reads it as such. */
static smelt_status capture_constant(smelt_ctx *ctx, gr_graph *body, gr_value *v,
                                     const smelt_tensor *t)
{
    size_t nb = smelt_tensor_nbytes(t);
    smelt_tensor *c = smelt_calloc(1, sizeof *c);
    if (c) c->data = smelt_alloc(nb ? nb : 1);
    if (!c || !c->data) {
        smelt_free(c);
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    c->dtype = t->dtype;
    c->rank = t->rank;
    memcpy(c->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
    memcpy(c->data, t->data, nb);
    return gr_value_set_constant(ctx, body, v, c);
}

smelt_status ctl_infer_body(smelt_ctx *ctx, const gr_node *n, gr_graph *body,
                            const smelt_tensor *const *in, const smelt_tensor *formal)
{
    for (int i = 0; i < body->inputs.len; i++) {
        gr_value *v = body->inputs.items[i];
        int src = ctl_body_input_source(body, i);
        const smelt_tensor *t = src >= 0 ? in[src] : formal ? &formal[i] : NULL;
        if (!t || (src < 0 && t->rank < 0)) continue;
        if (src < 0 && v->dtype && v->dtype != t->dtype)
            return op_errf(ctx, n, SMELT_ERR_MODEL, "body input '%s' is declared %s, given %s",
                           v->name, smelt_dtype_name(v->dtype), smelt_dtype_name(t->dtype));
        set_value_type(v, t);
        if (src >= 0 && t->data && !v->constant) SMELT_TRY(capture_constant(ctx, body, v, t));
    }
    return pass_infer_shapes(ctx, body);
}

/* ---- inference ---- */

static smelt_status output_type(smelt_ctx *ctx, const gr_node *n, const gr_graph *body, int i,
                                smelt_tensor *out)
{
    const gr_value *v = body->outputs.items[i];
    if (v->rank < 0) return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "body output %d has no shape yet", i);
    *out = gr_value_info(v);
    out->data = NULL;
    return SMELT_OK;
}

/* If-11+: the branches may give other shapes; a dim they disagree on is
 * unknown until run time, other ranks leave the output's shape unknown. */
static smelt_status if_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    if (op_numel(in[0]) != 1 || (in[0]->dtype != SMELT_DT_BOOL))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "cond must be one bool, got %s with %lld elements",
                       smelt_dtype_name(in[0]->dtype), (long long)op_numel(in[0]));
    /* a known condition: the branch not taken need not fit these inputs
     * (functions such as AffineGrid's type one branch for 2-D sizes, the
     * other for 3-D ones, and pick by the size's length) */
    bool known = in[0]->data != NULL, cond = known && op_get_i64(in[0], 0) != 0;
    if (!known || cond) SMELT_TRY(ctl_infer_body(ctx, n, a->then_g, in, NULL));
    if (!known || !cond) SMELT_TRY(ctl_infer_body(ctx, n, a->else_g, in, NULL));
    for (int i = 0; i < n->n_outputs; i++) {
        smelt_tensor t, e;
        if (known) {
            SMELT_TRY(output_type(ctx, n, cond ? a->then_g : a->else_g, i, &out[i]));
            continue;
        }
        SMELT_TRY(output_type(ctx, n, a->then_g, i, &t));
        SMELT_TRY(output_type(ctx, n, a->else_g, i, &e));
        if (t.dtype != e.dtype)
            return op_errf(ctx, n, SMELT_ERR_MODEL,
                           "output %d is %s in then_branch and %s in else_branch", i,
                           smelt_dtype_name(t.dtype), smelt_dtype_name(e.dtype));
        if (t.rank != e.rank)
            return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                           "output %d has rank %d in then_branch and %d in else_branch: known "
                           "at run time only", i, t.rank, e.rank);
        out[i] = t;
        for (int d = 0; d < t.rank; d++)
            if (t.dims[d] != e.dims[d]) out[i].dims[d] = GR_DIM_UNKNOWN;
    }
    return SMELT_OK;
}

/* A loop-carried value whose shape the body changes gets unknown dims
 * where it changes (then the body is inferred again with them). */
static smelt_status loop_generalize(smelt_ctx *ctx, const gr_node *n, smelt_tensor *formal,
                                    bool *changed)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    *changed = false;
    for (int k = 0; k < a->n_state; k++) {
        const gr_value *o = a->body->outputs.items[1 + k];
        smelt_tensor *t = &formal[2 + k];
        if (o->rank < 0) continue;
        if (ctl_optional_of(t->dtype, o->dtype)) continue;
        if (o->rank != t->rank)
            return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                           "loop-carried value %d changes rank (%d -> %d)", k, t->rank, o->rank);
        if (o->dtype != t->dtype)
            return op_errf(ctx, n, SMELT_ERR_MODEL, "loop-carried value %d changes type (%s -> %s)",
                           k, smelt_dtype_name(t->dtype), smelt_dtype_name(o->dtype));
        for (int d = 0; d < t->rank; d++)
            if (t->dims[d] != o->dims[d] && GR_DIM_IS_STATIC(t->dims[d])) {
                int sym = gr_graph_new_sym(a->body);
                if (sym < 0) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
                t->dims[d] = GR_DIM_SYM(sym);
                *changed = true;
            }
    }
    return SMELT_OK;
}

static smelt_status loop_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    if (in[0] && (op_numel(in[0]) != 1 || in[0]->dtype != SMELT_DT_INT64))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "M must be one int64");
    if (in[1] && (op_numel(in[1]) != 1 || in[1]->dtype != SMELT_DT_BOOL))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "cond must be one bool");
    smelt_tensor formal[2 + 64];
    if (a->n_state > 64) return op_errf(ctx, n, SMELT_ERR_LIMIT, "more than 64 loop-carried values");
    memset(formal, 0, sizeof formal);
    formal[0].dtype = SMELT_DT_INT64;
    formal[1].dtype = SMELT_DT_BOOL;
    for (int k = 0; k < a->n_state; k++) op_copy_shape(&formal[2 + k], in[2 + k]);
    bool changed = true;
    for (int round = 0; changed && round < 3; round++) {
        SMELT_TRY(ctl_infer_body(ctx, n, a->body, in, formal));
        SMELT_TRY(loop_generalize(ctx, n, formal, &changed));
    }
    for (int k = 0; k < a->n_state; k++) {
        const gr_value *o = a->body->outputs.items[1 + k];
        out[k] = formal[2 + k];
        /* an optional's first value, then the body's: the body's type */
        if (ctl_optional_of(formal[2 + k].dtype, o->dtype)) SMELT_TRY(output_type(ctx, n, a->body, 1 + k, &out[k]));
    }
    bool trips_known = in[0] && in[0]->data && ctl_loop_cond_always_true(n);
    int64_t trips = trips_known ? op_get_i64(in[0], 0) : 0;
    for (int k = 0; k < a->n_scan_out; k++) {
        smelt_tensor t;
        SMELT_TRY(output_type(ctx, n, a->body, 1 + a->n_state + k, &t));
        if (smelt_dtype_is_container(t.dtype))
            return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                           "scan output %d is a %s: scan outputs must be tensors", k,
                           smelt_dtype_name(t.dtype));
        if (t.rank + 1 > SMELT_MAX_RANK)
            return op_errf(ctx, n, SMELT_ERR_LIMIT, "scan output %d exceeds rank %d", k,
                           SMELT_MAX_RANK);
        smelt_tensor *o = &out[a->n_state + k];
        o->dtype = t.dtype;
        o->rank = t.rank + 1;
        o->dims[0] = trips_known ? (trips > 0 ? trips : 0) : GR_DIM_UNKNOWN;
        for (int d = 0; d < t.rank; d++) o->dims[d + 1] = t.dims[d];
    }
    return SMELT_OK;
}

static smelt_status scan9_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    if (a->n_explicit > 64) return op_errf(ctx, n, SMELT_ERR_LIMIT, "more than 64 inputs");
    smelt_tensor formal[64];
    memset(formal, 0, sizeof formal);
    for (int k = 0; k < a->n_state; k++) op_copy_shape(&formal[k], in[k]);
    gr_dim trips = 0;
    for (int j = 0; j < a->n_scan_in; j++) {
        const smelt_tensor *x = in[a->n_state + j];
        int axis;
        if (x->rank < 1) return op_errf(ctx, n, SMELT_ERR_MODEL, "scan input %d is a scalar", j);
        SMELT_TRY(ctl_scan_in_axis(ctx, n, j, x->rank, &axis));
        if (j > 0 && x->dims[axis] != trips)
            return GR_DIM_IS_STATIC(x->dims[axis]) && GR_DIM_IS_STATIC(trips)
                       ? op_errf(ctx, n, SMELT_ERR_MODEL,
                                 "scan input %d has %lld slices, scan input 0 has %lld", j,
                                 (long long)x->dims[axis], (long long)trips)
                       : op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "scan lengths known at run time");
        trips = x->dims[axis];
        smelt_tensor *f = &formal[a->n_state + j];
        f->dtype = x->dtype;
        f->rank = x->rank - 1;
        for (int d = 0, o = 0; d < x->rank; d++)
            if (d != axis) f->dims[o++] = x->dims[d];
    }
    SMELT_TRY(ctl_infer_body(ctx, n, a->body, in, formal));
    for (int k = 0; k < a->n_state; k++) {
        SMELT_TRY(output_type(ctx, n, a->body, k, &out[k]));
        if (out[k].rank != formal[k].rank || out[k].dtype != formal[k].dtype ||
            memcmp(out[k].dims, formal[k].dims, sizeof(int64_t) * (size_t)out[k].rank) != 0)
            return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                           "state %d changes type or shape in the body", k);
    }
    for (int k = 0; k < a->n_scan_out; k++) {
        smelt_tensor t;
        int axis;
        SMELT_TRY(output_type(ctx, n, a->body, a->n_state + k, &t));
        if (t.rank + 1 > SMELT_MAX_RANK)
            return op_errf(ctx, n, SMELT_ERR_LIMIT, "scan output %d exceeds rank %d", k,
                           SMELT_MAX_RANK);
        SMELT_TRY(ctl_scan_out_axis(ctx, n, k, t.rank + 1, &axis));
        smelt_tensor *o = &out[a->n_state + k];
        o->dtype = t.dtype;
        o->rank = t.rank + 1;
        for (int d = 0, s = 0; d < o->rank; d++)
            o->dims[d] = d == axis ? (GR_DIM_IS_STATIC(trips) ? trips : GR_DIM_UNKNOWN)
                                   : t.dims[s++];
    }
    return SMELT_OK;
}

/* SequenceMap: the body's inputs are the sequences' element types (their
 * shapes known at run time only: the body keeps what it declares) and the
 * tensors' types; each output is a sequence of a body output's type, as
 * long as input_sequence. */
static smelt_status seqmap_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                 smelt_tensor *out)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    smelt_tensor formal[64];
    if (a->n_explicit > 64) return op_errf(ctx, n, SMELT_ERR_LIMIT, "more than 64 inputs");
    if (!(in[0]->dtype & SMELT_DT_SEQUENCE_BIT) || (in[0]->dtype & SMELT_DT_OPTIONAL_BIT))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "input_sequence is %s, expected a sequence",
                       smelt_dtype_name(in[0]->dtype));
    for (int i = 0; i < a->n_explicit; i++) {
        bool seq = smelt_dtype_is_container(in[i]->dtype);
        if ((in[i]->dtype & SMELT_DT_OPTIONAL_BIT))
            return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is an optional", i);
        formal[i] = seq ? (smelt_tensor){.dtype = smelt_dtype_element(in[i]->dtype), .rank = -1}
                        : *in[i];
        formal[i].data = NULL;
        const gr_value *v = a->body->inputs.items[i];
        if (v->dtype && v->dtype != formal[i].dtype)
            return op_errf(ctx, n, SMELT_ERR_MODEL, "body input '%s' is declared %s, given %s",
                           v->name, smelt_dtype_name(v->dtype), smelt_dtype_name(formal[i].dtype));
    }
    SMELT_TRY(ctl_infer_body(ctx, n, a->body, in, formal));
    for (int k = 0; k < n->n_outputs; k++) {
        const gr_value *o = a->body->outputs.items[k];
        if (!o->dtype) /* an untyped body: its outputs' types come at run time */
            return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "body output %d has no type yet", k);
        if (smelt_dtype_is_container(o->dtype))
            return op_errf(ctx, n, SMELT_ERR_MODEL, "body output %d is a %s: SequenceMap's body "
                           "gives tensors", k, smelt_dtype_name(o->dtype));
        memset(&out[k], 0, sizeof out[k]);
        out[k].dtype = (smelt_dtype)((unsigned)o->dtype | SMELT_DT_SEQUENCE_BIT);
        out[k].rank = 1;
        out[k].dims[0] = in[0]->data || GR_DIM_IS_STATIC(in[0]->dims[0]) ? in[0]->dims[0]
                                                                         : GR_DIM_UNKNOWN;
    }
    return SMELT_OK;
}

/* Scan-8: the batch entry's types (batch axis dropped, inputs moved down
 * over sequence_lens, as ctl_scan8_entry_inputs does) through Scan-9's
 * inference, the batch axis put back on the outputs. */
static smelt_status scan_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    if (!a->scan8) return scan9_infer(ctx, n, in, out);
    if (n->n_inputs > 64) return op_errf(ctx, n, SMELT_ERR_LIMIT, "more than 64 inputs");
    smelt_tensor entry[64];
    const smelt_tensor *ein[64];
    gr_dim batch = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        ein[i] = i >= a->n_explicit ? in[i] : NULL;
        if (i >= a->n_explicit - 1) continue;
        const smelt_tensor *x = in[i + 1];
        if (x->rank < 1) return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d has no batch axis", i + 1);
        if (i > 0 && x->dims[0] != batch)
            return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "inputs of other batch sizes");
        batch = x->dims[0];
        entry[i] = *x;
        entry[i].data = NULL;
        entry[i].rank = x->rank - 1;
        memmove(entry[i].dims, x->dims + 1, sizeof(int64_t) * (size_t)entry[i].rank);
        ein[i] = &entry[i];
    }
    SMELT_TRY(scan9_infer(ctx, n, ein, out));
    for (int k = 0; k < n->n_outputs; k++) {
        if (out[k].rank + 1 > SMELT_MAX_RANK)
            return op_errf(ctx, n, SMELT_ERR_LIMIT, "output %d exceeds rank %d", k, SMELT_MAX_RANK);
        memmove(out[k].dims + 1, out[k].dims, sizeof(int64_t) * (size_t)out[k].rank);
        out[k].dims[0] = batch;
        out[k].rank++;
    }
    return SMELT_OK;
}

/* The reference kernels live in exec/control.c (they run whole graphs);
 * eval is never called for OP_FLAG_SUBGRAPHS ops. */
/* If and Loop pass sequences and optionals through (branch results,
 * loop-carried values, captures); Scan slices tensors only. */
const op_def op_def_IF = {
    .import = if_import, .infer = if_infer,
    .min_inputs = 1, .max_inputs = -1, .min_outputs = 1, .max_outputs = -1,
    .flags = OP_FLAG_SUBGRAPHS | OP_FLAG_CONTAINERS,
};
const op_def op_def_LOOP = {
    .import = loop_import, .infer = loop_infer,
    .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1,
    .flags = OP_FLAG_SUBGRAPHS | OP_FLAG_CONTAINERS,
};
const op_def op_def_SCAN = {
    .import = scan_import, .infer = scan_infer,
    .min_inputs = 0, .max_inputs = -1, .min_outputs = 0, .max_outputs = -1,
    .flags = OP_FLAG_SUBGRAPHS,
};
const op_def op_def_SEQUENCE_MAP = {
    .import = seqmap_import, .infer = seqmap_infer,
    .min_inputs = 1, .max_inputs = -1, .min_outputs = 1, .max_outputs = -1,
    .flags = OP_FLAG_SUBGRAPHS | OP_FLAG_CONTAINERS,
};
