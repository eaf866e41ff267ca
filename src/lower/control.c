/* If, Loop and Scan as C control flow around their bodies' functions.
 *
 * Each body is lowered like a graph of its own (its nodes become functions
 * of the same program), with its inputs bound to arena blocks the parent
 * provides (or, for captured outer values, to where those live) and its
 * outputs wherever its nodes put them.  Around the calls the parent emits
 * control steps (tir/func.h): IF/ELSE/END_IF on the condition's byte; LOOP
 * with the trip count read at run time (or a constant), the condition
 * checked before each iteration and the iteration number written for the
 * body; COPYs that move a body's results into the node's outputs, carry
 * loop state to the next iteration and write scan outputs into their
 * slices.  Everything must have a static shape: a loop-carried value whose
 * shape changes, or a scan output whose length depends on the data, is
 * refused naming node and op.
 */
#include <string.h>

#include "lower/program_internal.h"
#include "ops/control.h"

static int64_t vbytes(const gr_value *v)
{
    int64_t n = gr_value_numel(v);
    return n < 0 ? -1 : n * (int64_t)smelt_dtype_size(v->dtype);
}

static smelt_status need_static(prog_builder *pb, const gr_node *n, const gr_value *v,
                                const char *what)
{
    if (v->rank >= 0 && gr_value_numel(v) >= 0) return SMELT_OK;
    return op_errf(pb->ctx, n, SMELT_ERR_UNSUPPORTED,
                   "%s '%s' has a shape known only at run time; compiled control flow needs "
                   "static shapes (use the reference executor)", what, v->name);
}

static bool same_slot(const ir_slot *a, const ir_slot *b)
{
    return a->kind == b->kind && a->index == b->index && a->offset == b->offset;
}

static ir_call_site *new_step(prog_builder *pb, ir_step_kind kind, int n_args)
{
    smelt_arena *ar = &pb->lp->arena;
    ir_call_site *s = smelt_arena_alloc(ar, sizeof *s);
    if (!s) return NULL;
    s->args = smelt_arena_alloc(ar, sizeof *s->args * (size_t)(n_args + 1));
    s->has_arg = smelt_arena_alloc(ar, sizeof *s->has_arg * (size_t)(n_args + 1));
    if (!s->args || !s->has_arg) return NULL;
    s->kind = kind;
    s->n_args = n_args;
    s->outer = 1;
    return s;
}

static smelt_status push_marker(prog_builder *pb, ir_step_kind kind, const ir_slot *arg)
{
    ir_call_site *s = new_step(pb, kind, arg ? 1 : 0);
    if (!s) return prog_oom(pb);
    if (arg) {
        s->args[0] = *arg;
        s->has_arg[0] = true;
    }
    return prog_push_step(pb, s);
}

/* A strided copy; dst/src index iterations of loop `level` when their
 * step is not 0. */
typedef struct copy_spec {
    int64_t bytes, outer, dst_stride, src_stride, dst_step, src_step;
    bool dst_rev, src_rev;
} copy_spec;

static smelt_status push_copy_spec(prog_builder *pb, const ir_slot *dst, const ir_slot *src,
                                   const copy_spec *c, int level)
{
    if (c->bytes <= 0 || c->outer <= 0) return SMELT_OK;
    ir_call_site *s = new_step(pb, IR_STEP_COPY, 2);
    if (!s) return prog_oom(pb);
    s->args[0] = *dst;
    s->args[1] = *src;
    s->has_arg[0] = s->has_arg[1] = true;
    s->level = level;
    s->bytes = c->bytes;
    s->outer = c->outer;
    s->dst_stride = c->dst_stride;
    s->src_stride = c->src_stride;
    s->dst_step = c->dst_step;
    s->src_step = c->src_step;
    s->dst_rev = c->dst_rev;
    s->src_rev = c->src_rev;
    return prog_push_step(pb, s);
}

static smelt_status push_copy(prog_builder *pb, const ir_slot *dst, const ir_slot *src,
                              int64_t bytes)
{
    if (same_slot(dst, src)) return SMELT_OK;
    copy_spec c = {.bytes = bytes, .outer = 1};
    return push_copy_spec(pb, dst, src, &c, 0);
}

/* ---- bodies ---- */

/* Lower `body` into pb's program: formal inputs at formal[i], captures
 * where the node's inputs live; out[i]: where its outputs end up. */
static smelt_status lower_body(prog_builder *pb, const gr_node *n, const gr_graph *body,
                               const ir_slot *formal, ir_slot *out)
{
    ir_slot *in = smelt_calloc((size_t)body->inputs.len + 1, sizeof *in);
    if (!in) return prog_oom(pb);
    smelt_status s = SMELT_OK;
    for (int i = 0; i < body->inputs.len && s == SMELT_OK; i++) {
        int src = ctl_body_input_source(body, i);
        if (src < 0) in[i] = formal[i];
        else s = prog_slot_of(pb, n->inputs[src], &in[i]);
    }
    lower_options opts = *pb->opts;
    opts.on_unit = NULL; /* the tuner sees the model's own units only */
    smelt_ptrvec none = {0};
    prog_builder sub = *pb;
    sub.g = body;
    sub.dense = NULL; /* the body's values are its own */
    sub.opts = &opts;
    sub.inputs = sub.outputs = &none;
    sub.slots = smelt_calloc((size_t)body->values.len + 1, sizeof *sub.slots);
    sub.unit_of = smelt_calloc((size_t)body->values.len + 1, sizeof *sub.unit_of);
    sub.escapes = smelt_calloc((size_t)body->values.len + 1, sizeof *sub.escapes);
    if (s == SMELT_OK && (!sub.slots || !sub.unit_of || !sub.escapes)) s = prog_oom(pb);
    for (int i = 0; i < body->inputs.len && s == SMELT_OK; i++) {
        const gr_value *v = body->inputs.items[i];
        sub.slots[v->id] = (value_slot){true, in[i]};
    }
    if (s == SMELT_OK) s = prog_find_escapes(&sub);
    if (s == SMELT_OK) s = prog_lower_nodes(&sub);
    for (int i = 0; i < body->outputs.len && s == SMELT_OK; i++)
        s = prog_slot_of(&sub, body->outputs.items[i], &out[i]);
    /* the program's lists grew through the copy */
    pb->funcs = sub.funcs;
    pb->calls = sub.calls;
    pb->blocks = sub.blocks;
    pb->n_blocks = sub.n_blocks;
    pb->cap_blocks = sub.cap_blocks;
    pb->weight_bytes = sub.weight_bytes;
    pb->weight_consts = sub.weight_consts;
    smelt_free(sub.slots);
    smelt_free(sub.unit_of);
    smelt_free(sub.escapes);
    smelt_free(in);
    return s;
}

/* The body output i must have the type of node output / state `want`. */
static smelt_status check_same_type(prog_builder *pb, const gr_node *n, const gr_value *got,
                                    const gr_value *want, const char *what)
{
    if (got->dtype == want->dtype && got->rank == want->rank &&
        memcmp(got->dims, want->dims, sizeof(gr_dim) * (size_t)got->rank) == 0)
        return SMELT_OK;
    smelt_strbuf a, b;
    smelt_strbuf_init(&a);
    smelt_strbuf_init(&b);
    gr_value_print_type(pb->g, want, &a);
    gr_value_print_type(pb->g, got, &b);
    smelt_status s = op_errf(pb->ctx, n, SMELT_ERR_UNSUPPORTED,
                             "%s '%s' is %s but the body gives %s; compiled control flow needs "
                             "one static shape (use the reference executor)", what, want->name,
                             smelt_strbuf_cstr(&a), smelt_strbuf_cstr(&b));
    smelt_strbuf_fini(&a);
    smelt_strbuf_fini(&b);
    return s;
}

/* ---- If ---- */

static smelt_status lower_branch(prog_builder *pb, const gr_node *n, const gr_graph *g,
                                 const ir_slot *node_out)
{
    ir_slot *out = smelt_calloc((size_t)g->outputs.len + 1, sizeof *out);
    if (!out) return prog_oom(pb);
    smelt_status s = lower_body(pb, n, g, NULL, out);
    for (int i = 0; i < n->n_outputs && s == SMELT_OK; i++) {
        if (!n->outputs[i]) continue;
        s = check_same_type(pb, n, g->outputs.items[i], n->outputs[i], "output");
        if (s == SMELT_OK) s = push_copy(pb, &node_out[i], &out[i], vbytes(n->outputs[i]));
    }
    smelt_free(out);
    return s;
}

static smelt_status lower_if(prog_builder *pb, const gr_node *n)
{
    const ctl_attrs *a = ctl_attrs_of(n);
    ir_slot cond, *node_out = smelt_calloc((size_t)n->n_outputs + 1, sizeof *node_out);
    if (!node_out) return prog_oom(pb);
    smelt_status s = prog_slot_of(pb, n->inputs[0], &cond);
    for (int i = 0; i < n->n_outputs && s == SMELT_OK; i++) {
        if (!n->outputs[i]) continue;
        s = need_static(pb, n, n->outputs[i], "output");
        if (s == SMELT_OK) s = prog_slot_of(pb, n->outputs[i], &node_out[i]);
    }
    const gr_value *c = n->inputs[0];
    if (s == SMELT_OK && c->constant) { /* the other branch may not even type-check */
        const gr_graph *taken = op_get_i64(c->constant, 0) ? a->then_g : a->else_g;
        s = lower_branch(pb, n, taken, node_out);
        smelt_free(node_out);
        return s;
    }
    if (s == SMELT_OK) s = push_marker(pb, IR_STEP_IF, &cond);
    if (s == SMELT_OK) s = lower_branch(pb, n, a->then_g, node_out);
    if (s == SMELT_OK) s = push_marker(pb, IR_STEP_ELSE, NULL);
    if (s == SMELT_OK) s = lower_branch(pb, n, a->else_g, node_out);
    if (s == SMELT_OK) s = push_marker(pb, IR_STEP_END_IF, NULL);
    smelt_free(node_out);
    return s;
}

/* ---- loops (Loop and Scan) ---- */

typedef struct loop_lowering {
    const gr_node *n;
    const ctl_attrs *a;
    int n_state;
    const gr_value **state_in; /* body inputs carrying the state */
    ir_slot *state;            /* the state's blocks */
    ir_slot *formal;           /* body formal inputs */
    ir_slot *body_out;
    ir_slot *node_out;
    int level;
} loop_lowering;

static int next_loop_level(const prog_builder *pb)
{
    int depth = 0;
    for (int c = 0; c < pb->calls.len; c++) {
        const ir_call_site *cs = pb->calls.items[c];
        if (cs->func) continue;
        depth += cs->kind == IR_STEP_LOOP ? 1 : cs->kind == IR_STEP_END_LOOP ? -1 : 0;
    }
    return depth;
}

/* The state's blocks, each initialised from node input `first + k`. */
static smelt_status init_state(prog_builder *pb, loop_lowering *L, int first)
{
    for (int k = 0; k < L->n_state; k++) {
        const gr_value *init = L->n->inputs[first + k];
        ir_slot src;
        SMELT_TRY(need_static(pb, L->n, L->state_in[k], "loop-carried value"));
        SMELT_TRY(check_same_type(pb, L->n, init, L->state_in[k], "loop-carried value"));
        SMELT_TRY(prog_slot_of(pb, init, &src));
        SMELT_TRY(prog_new_block(pb, vbytes(init) ? vbytes(init) : 1, &L->state[k]));
        SMELT_TRY(push_copy(pb, &L->state[k], &src, vbytes(init)));
    }
    return SMELT_OK;
}

/* The body's state outputs become the next iteration's state; through
 * temporaries when one of them is another state's block (a swap). */
static smelt_status carry_state(prog_builder *pb, loop_lowering *L, int first_out)
{
    bool staged = false;
    for (int k = 0; k < L->n_state; k++)
        for (int j = 0; j < L->n_state; j++)
            if (j != k && same_slot(&L->body_out[first_out + k], &L->state[j])) staged = true;
    for (int k = 0; k < L->n_state; k++) {
        const gr_value *out = L->a->body->outputs.items[first_out + k];
        SMELT_TRY(check_same_type(pb, L->n, out, L->state_in[k], "loop-carried value"));
        if (!staged) continue;
        ir_slot tmp;
        SMELT_TRY(prog_new_block(pb, vbytes(out) ? vbytes(out) : 1, &tmp));
        SMELT_TRY(push_copy(pb, &tmp, &L->body_out[first_out + k], vbytes(out)));
        L->body_out[first_out + k] = tmp;
    }
    for (int k = 0; k < L->n_state; k++)
        SMELT_TRY(push_copy(pb, &L->state[k], &L->body_out[first_out + k],
                            vbytes(L->state_in[k])));
    return SMELT_OK;
}

/* After the loop: the final state into the node's outputs 0..n_state-1. */
static smelt_status final_state(prog_builder *pb, loop_lowering *L)
{
    for (int k = 0; k < L->n_state; k++)
        if (L->n->outputs[k])
            SMELT_TRY(push_copy(pb, &L->node_out[k], &L->state[k], vbytes(L->state_in[k])));
    return SMELT_OK;
}

static smelt_status node_output_slots(prog_builder *pb, loop_lowering *L, const char *scan_why)
{
    for (int i = 0; i < L->n->n_outputs; i++) {
        const gr_value *v = L->n->outputs[i];
        if (!v) continue;
        if (i >= L->n_state && (v->rank < 0 || gr_value_numel(v) < 0))
            return op_errf(pb->ctx, L->n, SMELT_ERR_UNSUPPORTED,
                           "scan output '%s' has a length known only at run time (%s); "
                           "compiled code needs static shapes (use the reference executor)",
                           v->name, scan_why);
        SMELT_TRY(need_static(pb, L->n, v, "output"));
        SMELT_TRY(prog_slot_of(pb, v, &L->node_out[i]));
    }
    return SMELT_OK;
}

/* A scan output: body output `src` written as slice (iteration) of the
 * node's output `dst` along `axis` of its rank. */
static smelt_status write_scan_slice(prog_builder *pb, loop_lowering *L, int out_index,
                                     const ir_slot *src, const gr_value *slice, int axis,
                                     bool reverse)
{
    const gr_value *whole = L->n->outputs[out_index];
    if (!whole) return SMELT_OK;
    int64_t outer = 1, trips = whole->dims[axis];
    for (int d = 0; d < axis; d++) outer *= whole->dims[d];
    int64_t inner = vbytes(slice) / (outer ? outer : 1);
    copy_spec c = {.bytes = inner, .outer = outer, .dst_stride = trips * inner,
                   .src_stride = inner, .dst_step = inner, .dst_rev = reverse};
    return push_copy_spec(pb, &L->node_out[out_index], src, &c, L->level);
}

static smelt_status loop_alloc(prog_builder *pb, loop_lowering *L, const gr_node *n)
{
    L->n = n;
    L->a = ctl_attrs_of(n);
    int ni = L->a->body->inputs.len + 1, no = L->a->body->outputs.len + 1;
    L->state_in = smelt_calloc((size_t)ni, sizeof *L->state_in);
    L->state = smelt_calloc((size_t)ni, sizeof *L->state);
    L->formal = smelt_calloc((size_t)ni, sizeof *L->formal);
    L->body_out = smelt_calloc((size_t)no, sizeof *L->body_out);
    L->node_out = smelt_calloc((size_t)n->n_outputs + 1, sizeof *L->node_out);
    L->level = next_loop_level(pb);
    return L->state_in && L->state && L->formal && L->body_out && L->node_out ? SMELT_OK
                                                                              : prog_oom(pb);
}

static void loop_free(loop_lowering *L)
{
    smelt_free(L->state_in);
    smelt_free(L->state);
    smelt_free(L->formal);
    smelt_free(L->body_out);
    smelt_free(L->node_out);
}

static const unsigned char k_true = 1;

/* Loop: cond and iteration number in blocks of their own, the body between
 * LOOP and END_LOOP, the state carried by copies. */
static smelt_status lower_loop_steps(prog_builder *pb, loop_lowering *L)
{
    const gr_node *n = L->n;
    const ctl_attrs *a = L->a;
    bool always = ctl_loop_cond_always_true(n);
    if (!n->inputs[0] && always)
        return op_errf(pb->ctx, n, SMELT_ERR_UNSUPPORTED,
                       "no trip count and a condition that never turns false: the loop would "
                       "not end");
    L->n_state = a->n_state;
    for (int k = 0; k < a->n_state; k++) L->state_in[k] = a->body->inputs.items[2 + k];
    SMELT_TRY(node_output_slots(pb, L, "a trip count that is not a constant, or a condition "
                                       "that may end the loop early"));
    ir_call_site *loop = new_step(pb, IR_STEP_LOOP, IR_LOOP_N_ARGS);
    if (!loop) return prog_oom(pb);
    loop->level = L->level;
    loop->trips = -1;
    if (n->inputs[0] && n->inputs[0]->constant) {
        loop->trips = op_get_i64(n->inputs[0]->constant, 0);
        if (loop->trips < 0) loop->trips = 0;
    } else if (n->inputs[0]) {
        SMELT_TRY(prog_slot_of(pb, n->inputs[0], &loop->args[IR_LOOP_ARG_TRIPS]));
        loop->has_arg[IR_LOOP_ARG_TRIPS] = true;
    }
    ir_slot cond_src, *iter = &L->formal[0], *cond = &L->formal[1];
    SMELT_TRY(prog_new_block(pb, 8, iter));
    SMELT_TRY(prog_new_block(pb, 1, cond));
    if (n->inputs[1]) SMELT_TRY(prog_slot_of(pb, n->inputs[1], &cond_src));
    else SMELT_TRY(prog_weight(pb, &k_true, 1, &cond_src));
    SMELT_TRY(push_copy(pb, cond, &cond_src, 1));
    SMELT_TRY(init_state(pb, L, 2));
    for (int k = 0; k < a->n_state; k++) L->formal[2 + k] = L->state[k];
    loop->args[IR_LOOP_ARG_ITER] = *iter;
    loop->has_arg[IR_LOOP_ARG_ITER] = true;
    loop->args[IR_LOOP_ARG_COND] = *cond;
    loop->has_arg[IR_LOOP_ARG_COND] = !always;
    SMELT_TRY(prog_push_step(pb, loop));
    SMELT_TRY(lower_body(pb, n, a->body, L->formal, L->body_out));
    if (!always) SMELT_TRY(push_copy(pb, cond, &L->body_out[0], 1));
    SMELT_TRY(carry_state(pb, L, 1));
    for (int k = 0; k < a->n_scan_out; k++)
        SMELT_TRY(write_scan_slice(pb, L, a->n_state + k, &L->body_out[1 + a->n_state + k],
                                   a->body->outputs.items[1 + a->n_state + k], 0, false));
    SMELT_TRY(push_marker(pb, IR_STEP_END_LOOP, NULL));
    return final_state(pb, L);
}

/* Scan: a constant trip count (the scan inputs' length); each iteration
 * copies its slices of the scan inputs into blocks the body reads. */
static smelt_status lower_scan_steps(prog_builder *pb, loop_lowering *L)
{
    const gr_node *n = L->n;
    const ctl_attrs *a = L->a;
    if (a->scan8)
        return op_errf(pb->ctx, n, SMELT_ERR_UNSUPPORTED,
                       "Scan-8 (batch axis) compiles unrolled only with at most 256 steps in "
                       "all and a sequence_lens known when compiling (an initializer); the "
                       "reference executor runs it");
    L->n_state = a->n_state;
    for (int k = 0; k < a->n_state; k++) L->state_in[k] = a->body->inputs.items[k];
    SMELT_TRY(node_output_slots(pb, L, "scan inputs of unknown length"));
    int64_t trips = 0;
    ir_slot *src = smelt_arena_alloc(&pb->lp->arena, sizeof *src * (size_t)(a->n_scan_in + 1));
    int *axes = smelt_arena_alloc(&pb->lp->arena, sizeof *axes * (size_t)(a->n_scan_in + 1));
    if (!src || !axes) return prog_oom(pb);
    for (int j = 0; j < a->n_scan_in; j++) {
        const gr_value *x = n->inputs[a->n_state + j];
        SMELT_TRY(need_static(pb, n, x, "scan input"));
        SMELT_TRY(ctl_scan_in_axis(pb->ctx, n, j, x->rank, &axes[j]));
        trips = x->dims[axes[j]];
        SMELT_TRY(prog_slot_of(pb, x, &src[j]));
    }
    SMELT_TRY(init_state(pb, L, 0));
    for (int k = 0; k < a->n_state; k++) L->formal[k] = L->state[k];
    for (int j = 0; j < a->n_scan_in; j++) {
        const gr_value *slice = a->body->inputs.items[a->n_state + j];
        SMELT_TRY(need_static(pb, n, slice, "scan slice"));
        SMELT_TRY(prog_new_block(pb, vbytes(slice) ? vbytes(slice) : 1, &L->formal[a->n_state + j]));
    }
    ir_call_site *loop = new_step(pb, IR_STEP_LOOP, IR_LOOP_N_ARGS);
    if (!loop) return prog_oom(pb);
    loop->level = L->level;
    loop->trips = trips;
    SMELT_TRY(prog_push_step(pb, loop));
    for (int j = 0; j < a->n_scan_in; j++) {
        const gr_value *x = n->inputs[a->n_state + j];
        int64_t outer = 1;
        for (int d = 0; d < axes[j]; d++) outer *= x->dims[d];
        int64_t inner = trips && outer ? vbytes(x) / (outer * trips) : 0;
        copy_spec c = {.bytes = inner, .outer = outer, .dst_stride = inner,
                       .src_stride = trips * inner, .src_step = inner,
                       .src_rev = a->in_rev[j] != 0};
        SMELT_TRY(push_copy_spec(pb, &L->formal[a->n_state + j], &src[j], &c, L->level));
    }
    SMELT_TRY(lower_body(pb, n, a->body, L->formal, L->body_out));
    SMELT_TRY(carry_state(pb, L, 0));
    for (int k = 0; k < a->n_scan_out; k++) {
        const gr_value *whole = n->outputs[a->n_state + k];
        int axis = 0;
        if (whole) SMELT_TRY(ctl_scan_out_axis(pb->ctx, n, k, whole->rank, &axis));
        SMELT_TRY(write_scan_slice(pb, L, a->n_state + k, &L->body_out[a->n_state + k],
                                   a->body->outputs.items[a->n_state + k], axis,
                                   a->out_rev[k] != 0));
    }
    SMELT_TRY(push_marker(pb, IR_STEP_END_LOOP, NULL));
    return final_state(pb, L);
}

smelt_status lower_control_node(prog_builder *pb, const gr_node *n)
{
    if (n->op == OP_IF) return lower_if(pb, n);
    if (n->op != OP_LOOP && n->op != OP_SCAN)
        return op_errf(pb->ctx, n, SMELT_ERR_UNSUPPORTED, "%s has no compiled form yet with "
                       "these bodies (passes/expand_flex.c copies bodies without subgraphs into "
                       "the graph); the reference executor runs it (--reference)", n->op_type);
    loop_lowering L;
    memset(&L, 0, sizeof L);
    smelt_status s = loop_alloc(pb, &L, n);
    if (s == SMELT_OK) s = n->op == OP_LOOP ? lower_loop_steps(pb, &L) : lower_scan_steps(pb, &L);
    loop_free(&L);
    return s;
}

void lower_control_lifetimes(prog_builder *pb)
{
    int open[64], n_open = 0;
    for (int c = 0; c < pb->calls.len; c++) {
        const ir_call_site *cs = pb->calls.items[c];
        if (cs->func) continue;
        if (cs->kind == IR_STEP_LOOP && n_open < 64) open[n_open++] = c;
        if (cs->kind != IR_STEP_END_LOOP || n_open == 0) continue;
        int start = open[--n_open];
        for (int i = 0; i < pb->n_blocks; i++) {
            mem_block *b = &pb->blocks[i];
            if (b->first < start && b->last >= start && b->last < c) b->last = c;
        }
    }
}
