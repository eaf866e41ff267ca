/* The reference executor's If, Loop and Scan: each body is a graph run by
 * exec_graph_budget, once (If) or per iteration (Loop, Scan), with its
 * captured outer values bound to the node's extra inputs (ops/control.h).
 * Every tensor held here is charged to the caller's budget; on return only
 * the outputs stay charged (nothing on error). */
#include <string.h>

#include "exec/exec.h"
#include "ops/control.h"

/* ---- tensors charged to a budget ---- */

static void drop(exec_budget *b, smelt_tensor *t)
{
    if (!t->data) return;
    exec_budget_release(b, (int64_t)smelt_value_nbytes(t));
    smelt_tensor_release(t);
}

static void drop_all(exec_budget *b, smelt_tensor *t, int n)
{
    for (int i = 0; i < n; i++) drop(b, &t[i]);
}

/* A zeroed tensor of t's type, charged to b. */
static smelt_status alloc_like(smelt_ctx *ctx, const gr_node *n, exec_budget *b,
                               smelt_tensor *t)
{
    size_t nb = smelt_tensor_nbytes(t);
    SMELT_TRY(exec_budget_charge(ctx, b, n, (int64_t)nb, "a loop value"));
    t->name = NULL;
    t->data = smelt_calloc(nb ? nb : 1, 1);
    if (!t->data) {
        exec_budget_release(b, (int64_t)nb);
        return op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory (%zu bytes)", nb);
    }
    return SMELT_OK;
}

/* A deep copy (sequences and optionals with their elements), charged. */
static smelt_status copy_charged(smelt_ctx *ctx, const gr_node *n, exec_budget *b,
                                 const smelt_tensor *src, smelt_tensor *dst)
{
    size_t nb = smelt_value_nbytes(src);
    SMELT_TRY(exec_budget_charge(ctx, b, n, (int64_t)nb, "a loop value"));
    if (smelt_value_copy(src, dst)) return SMELT_OK;
    exec_budget_release(b, (int64_t)nb);
    return op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory (%zu bytes)", nb);
}

static bool same_type(const smelt_tensor *a, const smelt_tensor *b)
{
    return a->dtype == b->dtype && a->rank == b->rank &&
           memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) == 0;
}

static int64_t prod(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++) p *= dims[d];
    return p;
}

/* The body's inputs: `formal` (n_formal of them), then the captures. */
static void bind_body_inputs(const gr_graph *body, const smelt_tensor *const *in,
                             const smelt_tensor *formal, smelt_tensor *body_in)
{
    for (int i = 0; i < body->inputs.len; i++) {
        int src = ctl_body_input_source(body, i);
        body_in[i] = src >= 0 ? *in[src] : formal[i];
        body_in[i].name = NULL;
    }
}

/* Outputs the node does not name are dropped here. */
static void drop_omitted(const gr_node *n, exec_budget *b, smelt_tensor *out)
{
    for (int i = 0; i < n->n_outputs; i++)
        if (!n->outputs[i]) drop(b, &out[i]);
}

static bool read_bool(const smelt_tensor *t) { return op_get_i64(t, 0) != 0; }

/* ---- If ---- */

static smelt_status run_if(smelt_ctx *ctx, const gr_node *n, exec_mode mode,
                           const smelt_tensor *const *in, smelt_tensor *out, exec_budget *b)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    if (smelt_dtype_is_container(in[0]->dtype))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "cond is a %s, expected a bool tensor",
                       smelt_dtype_name(in[0]->dtype));
    if (op_numel(in[0]) != 1)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "cond has %lld elements, expected 1",
                       (long long)op_numel(in[0]));
    const gr_graph *g = read_bool(in[0]) ? a->then_g : a->else_g;
    smelt_tensor *body_in = smelt_calloc((size_t)g->inputs.len + 1, sizeof *body_in);
    if (!body_in) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    bind_body_inputs(g, in, NULL, body_in);
    smelt_status s = exec_graph_budget(ctx, g, mode, body_in, out, b);
    smelt_free(body_in);
    if (s == SMELT_OK) drop_omitted(n, b, out);
    return s;
}

/* ---- scan outputs: one tensor per iteration, stacked at the end ---- */

typedef struct scan_parts {
    smelt_tensor *t; /* per iteration */
    int64_t len, cap;
} scan_parts;

static smelt_status parts_push(smelt_ctx *ctx, const gr_node *n, int k, scan_parts *p,
                               smelt_tensor *t)
{
    if (smelt_dtype_is_container(t->dtype)) /* stacking copies tensor bytes */
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "scan output %d is a %s: scan outputs "
                       "must be tensors", k, smelt_dtype_name(t->dtype));
    if (p->len > 0 && !same_type(&p->t[0], t))
        return op_errf(ctx, n, SMELT_ERR_MODEL,
                       "scan output %d changes shape between iterations", k);
    if (p->len == p->cap) {
        int64_t cap = p->cap ? 2 * p->cap : 16;
        smelt_tensor *nt = smelt_realloc(p->t, sizeof *nt * (size_t)p->cap, sizeof *nt * (size_t)cap);
        if (!nt) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        p->t = nt;
        p->cap = cap;
    }
    p->t[p->len++] = *t;
    t->data = NULL; /* the list holds it now */
    return SMELT_OK;
}

static void parts_free(exec_budget *b, scan_parts *p)
{
    for (int64_t i = 0; i < p->len; i++) drop(b, &p->t[i]);
    smelt_free(p->t);
    p->t = NULL;
    p->len = p->cap = 0;
}

/* The parts stacked along `axis` (reversed: the last part first); an empty
 * list gives a tensor of 0 slices with the body output's declared type. */
static smelt_status parts_stack(smelt_ctx *ctx, const gr_node *n, exec_budget *b,
                                const scan_parts *p, const gr_value *declared, int64_t axis_spec,
                                bool reverse, smelt_tensor *out)
{
    smelt_tensor elem;
    if (p->len > 0) {
        elem = p->t[0];
    } else {
        elem = gr_value_info(declared);
        for (int d = 0; d < elem.rank; d++)
            if (elem.dims[d] < 0) elem.dims[d] = 0;
    }
    if (elem.rank + 1 > SMELT_MAX_RANK)
        return op_errf(ctx, n, SMELT_ERR_LIMIT, "scan output exceeds rank %d", SMELT_MAX_RANK);
    int axis;
    SMELT_TRY(op_norm_axis(ctx, n, axis_spec, elem.rank + 1, &axis));
    memset(out, 0, sizeof *out);
    out->dtype = elem.dtype;
    out->rank = elem.rank + 1;
    for (int d = 0, s = 0; d < out->rank; d++) out->dims[d] = d == axis ? p->len : elem.dims[s++];
    SMELT_TRY(alloc_like(ctx, n, b, out));
    int64_t outer = prod(elem.dims, 0, axis);
    size_t inner = (size_t)prod(elem.dims, axis, elem.rank) * smelt_dtype_size(elem.dtype);
    for (int64_t t = 0; t < p->len; t++) {
        int64_t pos = reverse ? p->len - 1 - t : t;
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)out->data + (size_t)(o * p->len + pos) * inner,
                   (const char *)p->t[t].data + (size_t)o * inner, inner);
    }
    return SMELT_OK;
}

/* ---- shared by Loop and Scan ---- */

/* Body output index of state k: a Loop's body outputs cond first. */
static int body_state0(bool is_loop) { return is_loop ? 1 : 0; }

/* After a body run (status `s` so far): its state outputs replace the carried
 * state (a Loop's state may change shape between iterations, a Scan's may
 * not), its scan outputs' slices are kept, and all its outputs are dropped. */
static smelt_status carry_step(smelt_ctx *ctx, const gr_node *n, exec_budget *b, bool is_loop,
                               smelt_status s, smelt_tensor *state, scan_parts *parts,
                               smelt_tensor *body_out)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    smelt_tensor *fresh = body_out + body_state0(is_loop);
    for (int k = 0; k < a->n_state; k++) {
        if (s == SMELT_OK && is_loop && fresh[k].dtype != state[k].dtype &&
            !ctl_optional_of(state[k].dtype, fresh[k].dtype))
            s = op_errf(ctx, n, SMELT_ERR_MODEL, "loop-carried value %d changes type", k);
        if (s == SMELT_OK && !is_loop && !same_type(&fresh[k], &state[k]))
            s = op_errf(ctx, n, SMELT_ERR_MODEL, "state %d changes type or shape", k);
        drop(b, &state[k]);
        state[k] = fresh[k];
        fresh[k].data = NULL;
    }
    for (int k = 0; s == SMELT_OK && k < a->n_scan_out; k++)
        s = parts_push(ctx, n, k, &parts[k], &fresh[a->n_state + k]);
    drop_all(b, body_out, a->body->outputs.len);
    return s;
}

/* A loop-carried optional(T) the body turns into T that no iteration
 * replaced (zero trips): the node gives T, so a present optional gives
 * its element, an empty one has none to give. */
static smelt_status unwrap_unchanged(smelt_ctx *ctx, const gr_node *n, exec_budget *b, int k,
                                     smelt_tensor *state)
{
    const gr_value *o = ctl_attrs_of(n)->body->outputs.items[1 + k];
    if (!ctl_optional_of(state->dtype, o->dtype)) return SMELT_OK;
    if (state->dims[0] == 0)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "loop-carried value %d is still its empty "
                       "optional initial value after zero iterations, and the body gives a %s",
                       k, smelt_dtype_name(o->dtype));
    smelt_tensor inner;
    SMELT_TRY(copy_charged(ctx, n, b, &((const smelt_tensor *)state->data)[0], &inner));
    drop(b, state);
    *state = inner;
    return SMELT_OK;
}

/* A value T read by a body input declared optional(T): a present optional
 * viewing it (no copy). */
static void view_as_optional(const gr_value *declared, smelt_tensor *v, smelt_tensor *inner)
{
    if (!ctl_optional_of(declared->dtype, v->dtype)) return;
    *inner = *v;
    *v = (smelt_tensor){.dtype = declared->dtype, .rank = 1, .dims = {1}, .data = inner};
}

/* The node's outputs: the carried state handed over, then each scan output
 * stacked from its slices (a Loop's along axis 0, a Scan's along its
 * scan_output_axes, reversed where scan_output_directions says). */
static smelt_status finish_outputs(smelt_ctx *ctx, const gr_node *n, exec_budget *b,
                                   bool is_loop, smelt_tensor *state, scan_parts *parts,
                                   smelt_tensor *out)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    for (int k = 0; k < a->n_scan_out; k++) {
        const gr_value *decl = a->body->outputs.items[body_state0(is_loop) + a->n_state + k];
        int64_t axis = is_loop ? 0 : a->out_axes[k];
        bool rev = !is_loop && a->out_rev[k] != 0;
        smelt_status s = parts_stack(ctx, n, b, &parts[k], decl, axis, rev, &out[a->n_state + k]);
        if (s != SMELT_OK) {
            drop_all(b, &out[a->n_state], k);
            return s;
        }
        parts_free(b, &parts[k]);
    }
    for (int k = 0; k < a->n_state; k++) {
        if (is_loop) SMELT_TRY(unwrap_unchanged(ctx, n, b, k, &state[k]));
        out[k] = state[k];
        state[k].data = NULL;
    }
    return SMELT_OK;
}

/* ---- Loop ---- */

typedef struct loop_run {
    const gr_node *n;
    const ctl_attrs *a;
    exec_mode mode;
    exec_budget *b;
    smelt_tensor *state;  /* n_state, charged */
    scan_parts *parts;    /* n_scan_out */
    smelt_tensor *formal; /* body formal inputs (views) */
    smelt_tensor *body_in, *body_out;
    smelt_tensor *boxes;  /* n_state: values viewed as present optionals */
} loop_run;

/* One iteration: the body on (iter, cond, state); state and cond move on. */
static smelt_status loop_step(smelt_ctx *ctx, loop_run *r, const smelt_tensor *const *in,
                              int64_t iter, bool *cond)
{
    const ctl_attrs *a = r->a;
    bool cond_in = *cond;
    r->formal[0] = (smelt_tensor){.dtype = SMELT_DT_INT64, .rank = 0, .data = &iter};
    r->formal[1] = (smelt_tensor){.dtype = SMELT_DT_BOOL, .rank = 0, .data = &cond_in};
    for (int k = 0; k < a->n_state; k++) r->formal[2 + k] = r->state[k];
    bind_body_inputs(a->body, in, r->formal, r->body_in);
    for (int k = 0; k < a->n_state; k++)
        view_as_optional(a->body->inputs.items[2 + k], &r->body_in[2 + k], &r->boxes[k]);
    SMELT_TRY(exec_graph_budget(ctx, a->body, r->mode, r->body_in, r->body_out, r->b));
    smelt_status s = SMELT_OK;
    if (op_numel(&r->body_out[0]) != 1)
        s = op_errf(ctx, r->n, SMELT_ERR_MODEL, "the body's cond output has %lld elements",
                    (long long)op_numel(&r->body_out[0]));
    else
        *cond = read_bool(&r->body_out[0]);
    return carry_step(ctx, r->n, r->b, true, s, r->state, r->parts, r->body_out);
}

static smelt_status loop_iterate(smelt_ctx *ctx, loop_run *r, const smelt_tensor *const *in)
{
    const ctl_attrs *a = r->a;
    int64_t trips = in[0] ? op_get_i64(in[0], 0) : INT64_MAX;
    bool cond = in[1] ? read_bool(in[1]) : true;
    for (int k = 0; k < a->n_state; k++)
        SMELT_TRY(copy_charged(ctx, r->n, r->b, in[2 + k], &r->state[k]));
    for (int64_t it = 0; it < trips && cond; it++) SMELT_TRY(loop_step(ctx, r, in, it, &cond));
    return SMELT_OK;
}

static smelt_status run_loop(smelt_ctx *ctx, const gr_node *n, exec_mode mode,
                             const smelt_tensor *const *in, smelt_tensor *out, exec_budget *b)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    for (int i = 0; i < 2; i++)
        if (in[i] && (smelt_dtype_is_container(in[i]->dtype) || op_numel(in[i]) != 1))
            return op_errf(ctx, n, SMELT_ERR_MODEL, "M and cond must be tensors of one element");
    loop_run r = {n, a, mode, b, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t ni = (size_t)a->body->inputs.len + 1, no = (size_t)a->body->outputs.len + 1;
    r.state = smelt_calloc((size_t)a->n_state + 1, sizeof *r.state);
    r.boxes = smelt_calloc((size_t)a->n_state + 1, sizeof *r.boxes);
    r.parts = smelt_calloc((size_t)a->n_scan_out + 1, sizeof *r.parts);
    r.formal = smelt_calloc(ni, sizeof *r.formal);
    r.body_in = smelt_calloc(ni, sizeof *r.body_in);
    r.body_out = smelt_calloc(no, sizeof *r.body_out);
    smelt_status s = r.state && r.boxes && r.parts && r.formal && r.body_in && r.body_out
                         ? loop_iterate(ctx, &r, in)
                         : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s == SMELT_OK) s = finish_outputs(ctx, n, b, true, r.state, r.parts, out);
    if (s == SMELT_OK) drop_omitted(n, b, out);
    for (int k = 0; r.state && k < a->n_state; k++) drop(b, &r.state[k]);
    for (int k = 0; r.parts && k < a->n_scan_out; k++) parts_free(b, &r.parts[k]);
    smelt_free(r.state);
    smelt_free(r.boxes);
    smelt_free(r.parts);
    smelt_free(r.formal);
    smelt_free(r.body_in);
    smelt_free(r.body_out);
    return s;
}

/* ---- Scan ---- */

/* Slice `pos` of x along axis, charged to b. */
static smelt_status take_slice(smelt_ctx *ctx, const gr_node *n, exec_budget *b,
                               const smelt_tensor *x, int axis, int64_t pos, smelt_tensor *out)
{
    memset(out, 0, sizeof *out);
    out->dtype = x->dtype;
    out->rank = x->rank - 1;
    for (int d = 0, o = 0; d < x->rank; d++)
        if (d != axis) out->dims[o++] = x->dims[d];
    SMELT_TRY(alloc_like(ctx, n, b, out));
    int64_t outer = prod(x->dims, 0, axis), len = x->dims[axis];
    size_t inner = (size_t)prod(x->dims, axis + 1, x->rank) * smelt_dtype_size(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        memcpy((char *)out->data + (size_t)o * inner,
               (const char *)x->data + (size_t)(o * len + pos) * inner, inner);
    return SMELT_OK;
}

typedef struct scan_run {
    const gr_node *n;
    const ctl_attrs *a;
    exec_mode mode;
    exec_budget *b;
    int *axes;            /* per scan input */
    int64_t trips;
    smelt_tensor *state;  /* n_state, charged */
    scan_parts *parts;    /* n_scan_out */
    smelt_tensor *formal; /* states (views), then slices (charged) */
    smelt_tensor *body_in, *body_out;
} scan_run;

static smelt_status scan_lengths(smelt_ctx *ctx, scan_run *r, const smelt_tensor *const *in)
{
    const ctl_attrs *a = r->a;
    for (int j = 0; j < a->n_scan_in; j++) {
        const smelt_tensor *x = in[a->n_state + j];
        if (x->rank < 1) return op_errf(ctx, r->n, SMELT_ERR_MODEL, "scan input %d is a scalar", j);
        SMELT_TRY(ctl_scan_in_axis(ctx, r->n, j, x->rank, &r->axes[j]));
        int64_t len = x->dims[r->axes[j]];
        if (j > 0 && len != r->trips)
            return op_errf(ctx, r->n, SMELT_ERR_MODEL,
                           "scan input %d has %lld slices, scan input 0 has %lld", j,
                           (long long)len, (long long)r->trips);
        r->trips = len;
    }
    return SMELT_OK;
}

static smelt_status scan_step(smelt_ctx *ctx, scan_run *r, const smelt_tensor *const *in,
                              int64_t t)
{
    const ctl_attrs *a = r->a;
    for (int k = 0; k < a->n_state; k++) r->formal[k] = r->state[k];
    smelt_status s = SMELT_OK;
    for (int j = 0; j < a->n_scan_in && s == SMELT_OK; j++) {
        int64_t pos = a->in_rev[j] ? r->trips - 1 - t : t;
        s = take_slice(ctx, r->n, r->b, in[a->n_state + j], r->axes[j], pos,
                       &r->formal[a->n_state + j]);
    }
    if (s == SMELT_OK) {
        bind_body_inputs(a->body, in, r->formal, r->body_in);
        s = exec_graph_budget(ctx, a->body, r->mode, r->body_in, r->body_out, r->b);
    }
    drop_all(r->b, &r->formal[a->n_state], a->n_scan_in);
    if (s != SMELT_OK) return s;
    return carry_step(ctx, r->n, r->b, false, s, r->state, r->parts, r->body_out);
}

/* A zero slice for scan output k past a short sequence (of the type of
 * its other slices, else of the body's declared output). */
static smelt_status push_zeros(smelt_ctx *ctx, scan_run *r, int k)
{
    const gr_value *decl = r->a->body->outputs.items[r->a->n_state + k];
    smelt_tensor z = r->parts[k].len ? r->parts[k].t[0] : gr_value_info(decl);
    for (int d = 0; d < z.rank; d++)
        if (z.dims[d] < 0)
            return op_errf(ctx, r->n, SMELT_ERR_UNSUPPORTED,
                           "scan output %d of a sequence of length 0 has no known shape", k);
    SMELT_TRY(alloc_like(ctx, r->n, r->b, &z));
    smelt_status s = parts_push(ctx, r->n, k, &r->parts[k], &z);
    drop(r->b, &z);
    return s;
}

/* `steps` < 0: the scan inputs' length; else that many (Scan-8's
 * sequence_lens; the outputs are then padded with zeros to the length). */
static smelt_status scan_iterate(smelt_ctx *ctx, scan_run *r, const smelt_tensor *const *in,
                                 int64_t steps, smelt_tensor *out)
{
    const ctl_attrs *a = r->a;
    SMELT_TRY(scan_lengths(ctx, r, in));
    int64_t full = r->trips;
    if (steps >= 0) r->trips = steps;
    for (int k = 0; k < a->n_state; k++)
        SMELT_TRY(copy_charged(ctx, r->n, r->b, in[k], &r->state[k]));
    for (int64_t t = 0; t < r->trips; t++) SMELT_TRY(scan_step(ctx, r, in, t));
    for (int k = 0; k < a->n_scan_out; k++)
        for (int64_t t = r->trips; t < full; t++) SMELT_TRY(push_zeros(ctx, r, k));
    return finish_outputs(ctx, r->n, r->b, false, r->state, r->parts, out);
}

static smelt_status run_scan9(smelt_ctx *ctx, const gr_node *n, exec_mode mode,
                              const smelt_tensor *const *in, int64_t steps, smelt_tensor *out,
                              exec_budget *b)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    scan_run r = {n, a, mode, b, NULL, 0, NULL, NULL, NULL, NULL, NULL};
    size_t ni = (size_t)a->body->inputs.len + 1, no = (size_t)a->body->outputs.len + 1;
    r.axes = smelt_calloc((size_t)a->n_scan_in + 1, sizeof *r.axes);
    r.state = smelt_calloc((size_t)a->n_state + 1, sizeof *r.state);
    r.parts = smelt_calloc((size_t)a->n_scan_out + 1, sizeof *r.parts);
    r.formal = smelt_calloc(ni, sizeof *r.formal);
    r.body_in = smelt_calloc(ni, sizeof *r.body_in);
    r.body_out = smelt_calloc(no, sizeof *r.body_out);
    smelt_status s = r.axes && r.state && r.parts && r.formal && r.body_in && r.body_out
                         ? scan_iterate(ctx, &r, in, steps, out)
                         : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int k = 0; r.state && k < a->n_state; k++) drop(b, &r.state[k]);
    for (int k = 0; r.parts && k < a->n_scan_out; k++) parts_free(b, &r.parts[k]);
    smelt_free(r.axes);
    smelt_free(r.state);
    smelt_free(r.parts);
    smelt_free(r.formal);
    smelt_free(r.body_in);
    smelt_free(r.body_out);
    return s;
}

/* Scan-8: per batch entry, Scan-9 on that entry's states and sequences
 * (the inputs moved down over sequence_lens; captures stay where they
 * are), each output stacked over the batch. */
static smelt_status scan8_entry(smelt_ctx *ctx, const gr_node *n, exec_mode mode,
                                const smelt_tensor *const *in, int64_t e, const smelt_tensor **ein,
                                smelt_tensor *slices, scan_parts *parts, exec_budget *b)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    int n_in = a->n_explicit - 1;
    smelt_status s = SMELT_OK;
    int taken = 0;
    for (; taken < n_in && s == SMELT_OK; taken++) {
        s = take_slice(ctx, n, b, in[taken + 1], 0, e, &slices[taken]);
        ein[taken] = &slices[taken];
    }
    if (s != SMELT_OK) taken--;
    int64_t T = in[1 + a->n_state]->dims[1], len = T;
    if (s == SMELT_OK && in[0]) {
        len = op_get_i64(in[0], e);
        if (len < 0 || len > T)
            s = op_errf(ctx, n, SMELT_ERR_MODEL, "sequence_lens[%lld] = %lld is not in 0..%lld",
                        (long long)e, (long long)len, (long long)T);
    }
    smelt_tensor *out = smelt_calloc((size_t)n->n_outputs + 1, sizeof *out);
    if (s == SMELT_OK && !out) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s == SMELT_OK) s = run_scan9(ctx, n, mode, ein, len, out, b);
    for (int k = 0; s == SMELT_OK && k < n->n_outputs; k++) s = parts_push(ctx, n, k, &parts[k], &out[k]);
    if (out) drop_all(b, out, n->n_outputs);
    smelt_free(out);
    drop_all(b, slices, taken);
    return s;
}

static smelt_status run_scan8(smelt_ctx *ctx, const gr_node *n, exec_mode mode,
                              const smelt_tensor *const *in, smelt_tensor *out, exec_budget *b)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    int64_t batch = -1;
    for (int i = 1; i < a->n_explicit; i++) {
        int need = i > a->n_state ? 2 : 1;
        if (in[i]->rank < need || (batch >= 0 && in[i]->dims[0] != batch))
            return op_errf(ctx, n, SMELT_ERR_MODEL,
                           "input %d needs a batch axis%s of the other inputs' size", i,
                           need == 2 ? " and a sequence axis" : "");
        batch = in[i]->dims[0];
    }
    if (batch <= 0)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "an empty batch is not supported");
    if (in[0] && op_numel(in[0]) != batch)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "sequence_lens has %lld entries for a batch of %lld",
                       (long long)op_numel(in[0]), (long long)batch);
    const smelt_tensor **ein = smelt_calloc((size_t)n->n_inputs + 1, sizeof *ein);
    smelt_tensor *slices = smelt_calloc((size_t)a->n_explicit + 1, sizeof *slices);
    scan_parts *parts = smelt_calloc((size_t)n->n_outputs + 1, sizeof *parts);
    smelt_status s = ein && slices && parts ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int i = a->n_explicit; s == SMELT_OK && i < n->n_inputs; i++) ein[i] = in[i];
    for (int64_t e = 0; s == SMELT_OK && e < batch; e++)
        s = scan8_entry(ctx, n, mode, in, e, ein, slices, parts, b);
    int done = 0;
    for (; s == SMELT_OK && done < n->n_outputs; done++)
        s = parts_stack(ctx, n, b, &parts[done], a->body->outputs.items[done], 0, false,
                        &out[done]);
    if (s != SMELT_OK) drop_all(b, out, done);
    for (int k = 0; parts && k < n->n_outputs; k++) parts_free(b, &parts[k]);
    smelt_free(ein);
    smelt_free(slices);
    smelt_free(parts);
    return s;
}

static smelt_status run_scan(smelt_ctx *ctx, const gr_node *n, exec_mode mode,
                             const smelt_tensor *const *in, smelt_tensor *out, exec_budget *b)
{
    smelt_status s = ctl_attrs_of(n)->scan8 ? run_scan8(ctx, n, mode, in, out, b)
                                            : run_scan9(ctx, n, mode, in, -1, out, b);
    if (s == SMELT_OK) drop_omitted(n, b, out);
    return s;
}

/* ---- SequenceMap ---- */

/* Run i: element i of each sequence input, the tensor inputs whole (views);
 * body output k becomes element i of output k. */
static smelt_status seqmap_step(smelt_ctx *ctx, const gr_node *n, exec_mode mode,
                                const smelt_tensor *const *in, int64_t i, smelt_tensor *formal,
                                smelt_tensor *body_in, smelt_tensor *body_out, smelt_tensor *out,
                                exec_budget *b)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    for (int j = 0; j < a->n_explicit; j++)
        formal[j] = smelt_dtype_is_container(in[j]->dtype)
                        ? ((const smelt_tensor *)in[j]->data)[i] : *in[j];
    bind_body_inputs(a->body, in, formal, body_in);
    SMELT_TRY(exec_graph_budget(ctx, a->body, mode, body_in, body_out, b));
    smelt_status s = SMELT_OK;
    for (int k = 0; k < n->n_outputs; k++) {
        smelt_dtype elem = smelt_dtype_element(out[k].dtype);
        if (s == SMELT_OK && elem == SMELT_DT_UNDEFINED && !smelt_dtype_is_container(body_out[k].dtype))
            out[k].dtype = (smelt_dtype)((unsigned)body_out[k].dtype | SMELT_DT_SEQUENCE_BIT);
        else if (s == SMELT_OK && body_out[k].dtype != elem)
            s = op_errf(ctx, n, SMELT_ERR_MODEL, "body output %d is %s at element %lld, %s "
                        "before: a sequence holds one tensor type", k,
                        smelt_dtype_name(body_out[k].dtype), (long long)i,
                        smelt_dtype_name(elem));
        if (s == SMELT_OK) {
            ((smelt_tensor *)out[k].data)[i] = body_out[k];
            body_out[k].data = NULL;
        }
    }
    drop_all(b, body_out, n->n_outputs);
    return s;
}

/* Outputs of `len` zeroed elements each (the element arrays charged). */
static smelt_status seqmap_outputs(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                   int64_t len, smelt_tensor *out, exec_budget *b)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    for (int j = 1; j < a->n_explicit; j++)
        if (smelt_dtype_is_container(in[j]->dtype) && in[j]->dims[0] != len)
            return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d holds %lld tensors, input_sequence "
                           "%lld", j, (long long)in[j]->dims[0], (long long)len);
    for (int k = 0; k < n->n_outputs; k++) {
        const gr_value *o = a->body->outputs.items[k]; /* untyped: the first run's type */
        if (len == 0 && o->dtype == SMELT_DT_UNDEFINED)
            return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "output %d of an empty sequence has no "
                           "type: the body does not declare it", k);
        size_t nb = (size_t)len * sizeof(smelt_tensor);
        SMELT_TRY(exec_budget_charge(ctx, b, n, (int64_t)nb, "its outputs"));
        out[k] = (smelt_tensor){.dtype = (smelt_dtype)((unsigned)o->dtype | SMELT_DT_SEQUENCE_BIT),
                                .rank = 1, .dims = {len}, .data = smelt_calloc(nb ? nb : 1, 1)};
        if (!out[k].data) {
            exec_budget_release(b, (int64_t)nb);
            return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        }
    }
    return SMELT_OK;
}

static smelt_status run_seqmap(smelt_ctx *ctx, const gr_node *n, exec_mode mode,
                               const smelt_tensor *const *in, smelt_tensor *out, exec_budget *b)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    for (int j = 0; j < a->n_explicit; j++)
        if ((j == 0 && !smelt_dtype_is_container(in[j]->dtype)) ||
            (in[j]->dtype & SMELT_DT_OPTIONAL_BIT))
            return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is %s, expected a %s", j,
                           smelt_dtype_name(in[j]->dtype),
                           j == 0 ? "sequence" : "sequence or a tensor");
    int64_t len = in[0]->dims[0];
    size_t ni = (size_t)a->body->inputs.len + 1, no = (size_t)a->body->outputs.len + 1;
    smelt_tensor *formal = smelt_calloc(ni, sizeof *formal);
    smelt_tensor *body_in = smelt_calloc(ni, sizeof *body_in);
    smelt_tensor *body_out = smelt_calloc(no, sizeof *body_out);
    smelt_status s = formal && body_in && body_out ? seqmap_outputs(ctx, n, in, len, out, b)
                                                  : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; s == SMELT_OK && i < len; i++)
        s = seqmap_step(ctx, n, mode, in, i, formal, body_in, body_out, out, b);
    if (s != SMELT_OK) drop_all(b, out, n->n_outputs);
    smelt_free(formal);
    smelt_free(body_in);
    smelt_free(body_out);
    return s;
}

/* ---- FlexAttention (ops/flex_attention.c holds its arithmetic) ---- */

/* *t through a modifier body: its output replaces *t, in t's type (as the
 * reference casts it), of t's shape. */
static smelt_status run_modifier(smelt_ctx *ctx, const gr_node *n, exec_mode mode,
                                 const char *name, const gr_graph *body,
                                 const smelt_tensor *const *in, smelt_tensor *t, exec_budget *b)
{
    smelt_tensor *body_in = smelt_calloc((size_t)body->inputs.len + 1, sizeof *body_in), got;
    if (!body_in) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    bind_body_inputs(body, in, t, body_in);
    smelt_status s = exec_graph_budget(ctx, body, mode, body_in, &got, b);
    smelt_free(body_in);
    if (s != SMELT_OK) return s;
    if (got.rank != t->rank || memcmp(got.dims, t->dims, sizeof(int64_t) * (size_t)t->rank) ||
        !op_dtype_is_float(got.dtype)) {
        drop(b, &got);
        return op_errf(ctx, n, SMELT_ERR_MODEL, "'%s' must give floats of its input's shape",
                       name);
    }
    int64_t count = op_numel(t);
    for (int64_t i = 0; i < count; i++) op_set_f64(t, i, op_get_f64(&got, i));
    drop(b, &got);
    return SMELT_OK;
}

static smelt_status run_flex_steps(smelt_ctx *ctx, const gr_node *n, exec_mode mode,
                                   const smelt_tensor *const *in, smelt_tensor *scores,
                                   smelt_tensor *out, exec_budget *b)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    flex_scores(n, in[0], in[1], scores);
    if (a->score_mod)
        SMELT_TRY(run_modifier(ctx, n, mode, "score_mod", a->score_mod, in, scores, b));
    flex_softmax(scores);
    if (a->prob_mod)
        SMELT_TRY(run_modifier(ctx, n, mode, "prob_mod", a->prob_mod, in, scores, b));
    flex_output_shape(in[0], in[2], &out[0]);
    SMELT_TRY(alloc_like(ctx, n, b, &out[0]));
    flex_output(scores, in[2], &out[0]);
    return SMELT_OK;
}

static smelt_status run_flex(smelt_ctx *ctx, const gr_node *n, exec_mode mode,
                             const smelt_tensor *const *in, smelt_tensor *out, exec_budget *b)
{
    for (int i = 0; i < 3; i++)
        if (smelt_dtype_is_container(in[i]->dtype))
            return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is a %s", i,
                           smelt_dtype_name(in[i]->dtype));
    SMELT_TRY(flex_check(ctx, n, in[0], in[1], in[2]));
    smelt_tensor scores;
    flex_scores_shape(n, in[0], in[1], &scores);
    SMELT_TRY(alloc_like(ctx, n, b, &scores));
    smelt_status s = run_flex_steps(ctx, n, mode, in, &scores, out, b);
    drop(b, &scores);
    return s;
}

smelt_status exec_control_node(smelt_ctx *ctx, const gr_node *node, exec_mode mode,
                               const smelt_tensor *const *in, smelt_tensor *out, exec_budget *b)
{
    memset(out, 0, sizeof(smelt_tensor) * (size_t)node->n_outputs);
    switch (node->op) {
    case OP_IF: return run_if(ctx, node, mode, in, out, b);
    case OP_LOOP: return run_loop(ctx, node, mode, in, out, b);
    case OP_SCAN: return run_scan(ctx, node, mode, in, out, b);
    case OP_SEQUENCE_MAP: return run_seqmap(ctx, node, mode, in, out, b);
    case OP_PREVIEW_FLEX_ATTENTION: return run_flex(ctx, node, mode, in, out, b);
    default: return op_errf(ctx, node, SMELT_ERR_INTERNAL, "not a control-flow op");
    }
}
