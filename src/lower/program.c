/* Graph -> program: one lowered function per group, in execution order,
 * with every argument bound to a model input/output, the weight blob or the
 * activation arena.
 *
 * A group is a run of consecutive nodes with one node->group (pass_fuse_ops),
 * or a single node.  Values that leave their group live in the arena at
 * offsets from the memory plan (passes/plan_memory.h) over the call order;
 * values inside a group never reach memory.  Graph outputs that no node
 * produces (constants, or inputs passed through) are copied by a generated
 * identity function.
 */
#include <stdio.h>
#include <string.h>

#include "lower/program.h"
#include "ops/op.h"
#include "lower/program_internal.h"
#include "lower/rt_check.h"

#define SLOT_ALIGN 64

smelt_status prog_oom(prog_builder *pb) { return smelt_errf(pb->ctx, SMELT_ERR_NOMEM, "out of memory"); }

static int64_t align_up(int64_t v) { return (v + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN; }

static int64_t value_bytes(const gr_value *v)
{
    int64_t n = gr_value_numel(v);
    return n < 0 ? -1 : n * (int64_t)smelt_dtype_size(v->dtype);
}

/* ---- slots ---- */

static int graph_index(const smelt_ptrvec *list, const gr_value *v)
{
    for (int i = 0; i < list->len; i++)
        if (list->items[i] == v) return i;
    return -1;
}

/* An arena value is first written by the call being added; its offset comes
 * from the memory plan once every call is known. */
smelt_status prog_new_block(prog_builder *pb, int64_t bytes, ir_slot *slot)
{
    if (pb->n_blocks == pb->cap_blocks) {
        int cap = pb->cap_blocks ? 2 * pb->cap_blocks : 64;
        mem_block *nb = smelt_realloc(pb->blocks, sizeof *nb * (size_t)pb->cap_blocks,
                                       sizeof *nb * (size_t)cap);
        if (!nb) return prog_oom(pb);
        pb->blocks = nb;
        pb->cap_blocks = cap;
    }
    int call = pb->calls.len;
    pb->blocks[pb->n_blocks] = (mem_block){bytes, call, call, -1, 0};
    *slot = (ir_slot){IR_SLOT_ARENA, pb->n_blocks++, 0};
    return SMELT_OK;
}

smelt_status prog_slot_of(prog_builder *pb, const gr_value *v, ir_slot *out)
{
    value_slot *vs = &pb->slots[v->id];
    if (vs->assigned) {
        *out = vs->slot;
        return SMELT_OK;
    }
    int64_t bytes = value_bytes(v);
    if (bytes < 0)
        return smelt_errf(pb->ctx, SMELT_ERR_UNSUPPORTED,
                          "value '%s' has a dynamic shape; compiled code needs static shapes",
                          v->name);
    int in = graph_index(pb->inputs, v), outi = graph_index(pb->outputs, v);
    if (in >= 0) {
        vs->slot = (ir_slot){IR_SLOT_INPUT, in, 0};
    } else if (v->constant) {
        SMELT_TRY(prog_weight(pb, v->constant->data, bytes, &vs->slot));
    } else if (outi >= 0) {
        vs->slot = (ir_slot){IR_SLOT_OUTPUT, outi, 0};
    } else {
        SMELT_TRY(prog_new_block(pb, bytes ? bytes : 1, &vs->slot));
    }
    vs->assigned = true;
    *out = vs->slot;
    return SMELT_OK;
}

/* Single-unit programs: each non-constant value the unit reads becomes a
 * program input, each value it writes a program output. */
static smelt_status bind_unit_io(prog_builder *pb, const gr_value *v, bool output)
{
    if (!pb->opts->single_unit || v->constant || pb->slots[v->id].assigned) return SMELT_OK;
    if (!smelt_ptrvec_push(output ? &pb->unit_out : &pb->unit_in, (void *)v)) return prog_oom(pb);
    return SMELT_OK;
}

/* A compile-time constant of a te graph (te_const) in the weight blob; its
 * data belongs to the te graph of a schedule state the program keeps. */
typedef struct const_weight {
    int64_t offset, bytes;
    const void *data;
} const_weight;

smelt_status prog_weight(prog_builder *pb, const void *data, int64_t bytes, ir_slot *out)
{
    const_weight *w = smelt_arena_alloc(&pb->lp->arena, sizeof *w);
    if (!w || !smelt_ptrvec_push(&pb->weight_consts, w)) return prog_oom(pb);
    *w = (const_weight){.offset = pb->weight_bytes, .bytes = bytes, .data = data};
    *out = (ir_slot){IR_SLOT_WEIGHT, 0, pb->weight_bytes};
    pb->weight_bytes = align_up(pb->weight_bytes + bytes);
    return SMELT_OK;
}

static smelt_status const_slot(prog_builder *pb, const te_const *c, ir_slot *out)
{
    const_weight *w = smelt_arena_alloc(&pb->lp->arena, sizeof *w);
    if (!w || !smelt_ptrvec_push(&pb->weight_consts, w)) return prog_oom(pb);
    *w = (const_weight){.offset = pb->weight_bytes, .bytes = c->numel * (int64_t)smelt_dtype_size(c->t->buf->dtype),
                        .data = c->data};
    *out = (ir_slot){IR_SLOT_WEIGHT, 0, pb->weight_bytes};
    pb->weight_bytes = align_up(pb->weight_bytes + w->bytes);
    return SMELT_OK;
}

/* ---- one group ---- */

static smelt_status node_types(prog_builder *pb, const gr_node *n, smelt_tensor *in,
                               const smelt_tensor **inp, smelt_tensor *out)
{
    for (int i = 0; i < n->n_inputs; i++) {
        inp[i] = NULL;
        if (!n->inputs[i]) continue;
        in[i] = gr_value_info(n->inputs[i]);
        inp[i] = &in[i];
    }
    for (int i = 0; i < n->n_outputs; i++) {
        memset(&out[i], 0, sizeof out[i]);
        const gr_value *v = n->outputs[i];
        if (!v) continue;
        if (v->rank < 0)
            return op_errf(pb->ctx, n, SMELT_ERR_UNSUPPORTED,
                           "output '%s' has an unknown shape; compiled code needs static shapes",
                           v->name);
        out[i] = gr_value_info(v);
        out[i].data = NULL;
    }
    return SMELT_OK;
}

static char *func_name(prog_builder *pb, const char *op_type)
{
    char name[64];
    int k = snprintf(name, sizeof name, "f%d_", pb->funcs.len);
    for (const char *p = op_type; *p && k < (int)sizeof name - 1; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        name[k++] = ok ? (c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c) : '_';
    }
    name[k] = '\0';
    return smelt_arena_strdup(&pb->lp->arena, name);
}

static bool same_dims(const gr_value *a, const gr_value *b)
{
    return a->rank == b->rank && memcmp(a->dims, b->dims, sizeof(gr_dim) * (size_t)a->rank) == 0;
}

/* Arena inputs live up to this call.  An elementwise call's only output may
 * overwrite an input of its shape and size (the planner checks the input
 * dies here). */
static void note_lifetimes(prog_builder *pb, const ir_slot *args, const gr_value *const *in_vals,
                           int n_in, const gr_value *const *out_vals, int n_out, bool elementwise)
{
    int call = pb->calls.len;
    for (int i = 0; i < n_in; i++)
        if (args[i].kind == IR_SLOT_ARENA) pb->blocks[args[i].index].last = call;
    const ir_slot *o = &args[n_in];
    if (!elementwise || n_out != 1 || o->kind != IR_SLOT_ARENA || pb->blocks[o->index].first != call)
        return;
    for (int i = 0; i < n_in; i++)
        if (args[i].kind == IR_SLOT_ARENA && same_dims(in_vals[i], out_vals[0]) &&
            pb->blocks[args[i].index].bytes == pb->blocks[o->index].bytes) {
            pb->blocks[o->index].inplace_of = args[i].index;
            return;
        }
}

/* Lower te graph `te` (outputs bound to out_vals, placeholders to in_vals)
 * and append the call. */
static bool value_dense(const gr_value *v, void *user)
{
    const prog_builder *pb = user;
    return pb->dense && pb->dense[v->id];
}

static te_rt rt_of(prog_builder *pb)
{
    return (te_rt){pb->n_rt, pb->rt, pb->dense ? value_dense : NULL, pb};
}

/* The group's outputs that are laid out at the run's dims, marked so; an
 * extern stage's output keeps the layout its kernel was built for (its
 * strides are fixed when the stage is built): that value is staged. */
static smelt_status mark_dense_outputs(prog_builder *pb, te_graph *te, const gr_value *const *out_vals,
                                       int n_out)
{
    for (int i = 0; pb->dense && i < n_out && i < te->outputs.len; i++) {
        if (!pb->dense[out_vals[i]->id]) continue;
        te_tensor *t = te->outputs.items[i];
        if (t->kind == TE_EXTERN) {
            pb->dense[out_vals[i]->id] = false;
            pb->retry_dense = true;
            return smelt_errf(pb->ctx, SMELT_ERR_UNSUPPORTED, "'%s' is written by a kernel laid "
                              "out at the maxima", out_vals[i]->name);
        }
        te_mark_dense(te, t);
    }
    return SMELT_OK;
}

/* A function whose accesses to a dense value were not proved: its dense
 * values are staged from now on (lower_graph starts again). */
static smelt_status drop_dense(prog_builder *pb, const gr_value *const *in_vals, int n_in,
                               const gr_value *const *out_vals, int n_out)
{
    for (int i = 0; i < n_in + n_out; i++) {
        const gr_value *v = i < n_in ? in_vals[i] : out_vals[i - n_in];
        if (pb->dense[v->id]) pb->retry_dense = true;
        pb->dense[v->id] = false;
    }
    return SMELT_ERR_UNSUPPORTED;
}

static smelt_status add_group(prog_builder *pb, te_graph *te, const gr_value *const *in_vals,
                              int n_in, const gr_value *const *out_vals, int n_out,
                              const ir_slot *forced_out, bool elementwise, const char *op_type,
                              const char *comment)
{
    if (!smelt_ptrvec_push(&pb->lp->te_graphs, te)) {
        te_graph_free(te);
        return prog_oom(pb);
    }
    SMELT_TRY(te_set_rt_dims(te, pb->n_rt, pb->rt));
    SMELT_TRY(mark_dense_outputs(pb, te, out_vals, n_out));
    if (pb->opts->on_unit) pb->opts->on_unit(pb->opts->on_unit_user, pb->unit, te);
    sch_schedule sched;
    sch_schedule_init(&sched);
    sch_state *st = NULL;
    bool stored = false, user = false;
    smelt_status s = SMELT_OK;
    if (pb->opts->user_schedules) {
        const char *fname = func_name(pb, op_type); /* the name lower_func gives it below */
        s = fname ? sch_user_choose(pb->ctx, pb->opts->user_schedules, te, fname, &sched, &user)
                  : prog_oom(pb);
        pb->lp->n_user += user;
    }
    if (s == SMELT_OK && !user && smelt_debug_level() >= 2) { /* names the decisions that follow */
        const char *fname = func_name(pb, op_type);
        fprintf(stderr, "smelt: scheduling %s (%s)\n", fname ? fname : "?", comment ? comment : "");
    }
    if (s == SMELT_OK && !user)
        s = sch_choose(pb->ctx, te, pb->opts->hw, pb->opts->schedules, &sched, &stored);
    pb->lp->n_stored += stored;
    if (s == SMELT_OK) s = sch_state_build(pb->ctx, te, &sched, &st);
    if (s == SMELT_OK) st->hw = pb->opts->hw; /* cache_read tiles must fit its shared memory */
    sch_schedule_fini(&sched);
    if (s == SMELT_OK && !smelt_ptrvec_push(&pb->lp->states, st)) {
        sch_state_free(st);
        s = prog_oom(pb);
    }
    ir_func *f = NULL;
    const char *name = s == SMELT_OK ? func_name(pb, op_type) : NULL;
    if (s == SMELT_OK && !name) s = prog_oom(pb);
    const ir_buffer *refused = NULL;
    if (s == SMELT_OK) s = lower_func_dense(pb->ctx, st, &pb->lp->b, name, &f, &refused);
    if (s != SMELT_OK && refused && pb->dense) return drop_dense(pb, in_vals, n_in, out_vals, n_out);
    if (s != SMELT_OK) return s;
    if (!(f->comment = smelt_arena_strdup(&pb->lp->arena, comment))) return prog_oom(pb);
    /* parameters: the placeholders in stage order (the graph's values, and
     * constants the schedule's rewrite computed, e.g. Winograd's weights,
     * and the run-time dims), then the outputs */
    int n_consts = st->te->consts.len + (st->te->rt_dims != NULL);
    ir_call_site *cs = smelt_arena_alloc(&pb->lp->arena, sizeof *cs);
    ir_slot *args = smelt_arena_alloc(&pb->lp->arena, sizeof *args * (size_t)(f->n_params + 1));
    ir_slot *vargs = smelt_arena_alloc(&pb->lp->arena, sizeof *vargs * (size_t)(n_in + n_out + 1));
    if (!cs || !args || !vargs || f->n_params != n_in + n_out + n_consts)
        return f->n_params != n_in + n_out + n_consts
                   ? smelt_errf(pb->ctx, SMELT_ERR_INTERNAL, "%s: %d params for %d values",
                                f->name, f->n_params, n_in + n_out + n_consts)
                   : prog_oom(pb);
    for (int p = 0, i = 0; p < n_in + n_consts; p++) {
        const te_const *c = te_const_of(st->te, f->params[p]);
        if (st->te->rt_dims && f->params[p] == st->te->rt_dims->buf) {
            args[p] = pb->rt_slot;
            continue;
        }
        if (c) {
            SMELT_TRY(const_slot(pb, c, &args[p]));
            continue;
        }
        if (i >= n_in)
            return smelt_errf(pb->ctx, SMELT_ERR_INTERNAL, "%s: more inputs than values", f->name);
        if (in_vals[i]->constant && !ir_stmt_reads(f->body, f->params[p])) {
            args[p] = (ir_slot){IR_SLOT_UNUSED, 0, 0}; /* its data stays out of the weights */
            vargs[i++] = args[p];
            continue;
        }
        SMELT_TRY(bind_unit_io(pb, in_vals[i], false));
        SMELT_TRY(prog_slot_of(pb, in_vals[i], &args[p]));
        vargs[i++] = args[p];
    }
    for (int i = 0; i < n_out; i++) {
        ir_slot *o = &args[n_in + n_consts + i];
        if (forced_out) *o = forced_out[i];
        else {
            SMELT_TRY(bind_unit_io(pb, out_vals[i], true));
            SMELT_TRY(prog_slot_of(pb, out_vals[i], o));
        }
        vargs[n_in + i] = *o;
    }
    note_lifetimes(pb, vargs, in_vals, n_in, out_vals, n_out, elementwise);
    cs->func = f;
    cs->args = args;
    if (!smelt_ptrvec_push(&pb->funcs, f) || !smelt_ptrvec_push(&pb->calls, cs)) return prog_oom(pb);
    return SMELT_OK;
}

static bool is_elementwise(const gr_node *n)
{
    op_pattern p = op_get(n->op)->pattern;
    return p == OP_PATTERN_ELEMWISE || p == OP_PATTERN_BROADCAST;
}

static smelt_status lower_node(prog_builder *pb, const gr_node *n)
{
    smelt_tensor in[TE_NODE_MAX_INPUTS], out[TE_NODE_MAX_OUTPUTS];
    const smelt_tensor *inp[TE_NODE_MAX_INPUTS];
    SMELT_TRY(te_check_node_arity(pb->ctx, n));
    SMELT_TRY(node_types(pb, n, in, inp, out));
    te_graph *te;
    te_rt rt = rt_of(pb);
    SMELT_TRY(te_from_node_rt(pb->ctx, n, inp, out, &rt, &te));
    const gr_value *in_vals[TE_NODE_MAX_INPUTS], *out_vals[TE_NODE_MAX_OUTPUTS];
    int n_in = 0, n_out = 0;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i]) in_vals[n_in++] = n->inputs[i];
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i]) out_vals[n_out++] = n->outputs[i];
    return add_group(pb, te, in_vals, n_in, out_vals, n_out, NULL, is_elementwise(n), n->op_type,
                     n->name);
}

/* ---- outputs no node produces ---- */

static ir_expr *copy_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return te_read(g, user, idx);
}

static smelt_status copy_output(prog_builder *pb, int out_index, const gr_value *src)
{
    const gr_value *dst = pb->g->outputs.items[out_index];
    if (src->rank < 0 || gr_value_numel(src) < 0)
        return smelt_errf(pb->ctx, SMELT_ERR_UNSUPPORTED, "output '%s' has a dynamic shape",
                          dst->name);
    te_graph *te = te_graph_new(pb->ctx);
    if (!te) return prog_oom(pb);
    smelt_tensor info = gr_value_info(src);
    te_tensor *x = te_placeholder(te, "x0", src->dtype, src->rank, info.dims);
    te_tensor *y = x ? te_compute(te, "y", src->dtype, src->rank, info.dims, copy_body, x, NULL) : NULL;
    if (!y || !te_mark_output(te, y)) {
        te_graph_free(te);
        return smelt_ctx_status(pb->ctx) ? smelt_ctx_status(pb->ctx) : prog_oom(pb);
    }
    if (src->constant) x->buf->kind = IR_BUF_CONST;
    y->buf->kind = IR_BUF_OUTPUT;
    if (pb->n_rt && te_rt_begin(te, pb->n_rt, pb->rt) != SMELT_OK) {
        te_graph_free(te);
        return smelt_ctx_status(pb->ctx);
    }
    if (value_dense(src, pb)) te_mark_dense(te, x);
    /* the destination is bound explicitly: dst may be the very value src */
    const gr_value *ins[1] = {src};
    ir_slot dst_slot = {IR_SLOT_OUTPUT, out_index, 0};
    return add_group(pb, te, ins, 1, &dst, 1, &dst_slot, false, "Copy", dst->name);
}

/* An output needs a copy when no compiled node writes it at its own index. */
static bool output_needs_copy(const prog_builder *pb, int i)
{
    const gr_value *v = pb->g->outputs.items[i];
    if (!v->producer) return true;
    return graph_index(&pb->g->outputs, v) != i; /* listed twice: later ones copy */
}

/* ---- weights ---- */

static smelt_status pack_weights(prog_builder *pb)
{
    lowered_program *lp = pb->lp;
    lp->weights = smelt_calloc(pb->weight_bytes ? (size_t)pb->weight_bytes : 1, 1);
    if (!lp->weights) return prog_oom(pb);
    for (int i = 0; i < pb->weight_consts.len; i++) {
        const const_weight *w = pb->weight_consts.items[i];
        memcpy(lp->weights + w->offset, w->data, (size_t)w->bytes);
    }
    return SMELT_OK;
}

static smelt_status describe_io(prog_builder *pb)
{
    ir_program *p = &pb->lp->prog;
    p->n_inputs = pb->inputs->len;
    p->n_outputs = pb->outputs->len;
    p->inputs = smelt_arena_alloc(&pb->lp->arena, sizeof(ir_io_desc) * (size_t)(p->n_inputs + 1));
    p->outputs = smelt_arena_alloc(&pb->lp->arena, sizeof(ir_io_desc) * (size_t)(p->n_outputs + 1));
    if (!p->inputs || !p->outputs) return prog_oom(pb);
    for (int k = 0; k < 2; k++) {
        const smelt_ptrvec *list = k ? pb->outputs : pb->inputs;
        ir_io_desc *d = k ? p->outputs : p->inputs;
        for (int i = 0; i < list->len; i++) {
            const gr_value *v = list->items[i];
            if (gr_value_numel(v) < 0)
                return smelt_errf(pb->ctx, SMELT_ERR_UNSUPPORTED,
                                  "%s '%s' has a dynamic shape; compiled code needs static shapes",
                                  k ? "output" : "input", v->name);
            d[i].name = v->name;
            d[i].dtype = v->dtype;
            d[i].rank = v->rank;
            for (int r = 0; r < v->rank; r++) {
                d[i].dims[r] = v->dims[r];
                int64_t add = 0;
                d[i].rt[r] = (signed char)(gr_value_rt_dim_add(pb->g, v, r, &add) + 1);
                d[i].rt_add[r] = (signed char)add;
            }
            d[i].dense = value_dense(v, pb);
        }
    }
    return SMELT_OK;
}

/* ---- units (gr_unit_end): maximal runs of consecutive nodes of one fused
 * group, or a single node.  Node order is the execution order; a group
 * split into several runs still lowers correctly, as several units. */

smelt_status prog_find_escapes(prog_builder *pb)
{
    const gr_graph *g = pb->g;
    for (int i = 0; i < g->values.len; i++) pb->unit_of[i] = -1;
    for (int start = 0, u = 0; start < g->nodes.len; u++) {
        int end = gr_unit_end(g, start);
        for (int k = start; k < end; k++) {
            const gr_node *n = g->nodes.items[k];
            for (int i = 0; i < n->n_outputs; i++)
                if (n->outputs[i]) pb->unit_of[n->outputs[i]->id] = u;
        }
        start = end;
    }
    /* a value nobody reads stays an output of its unit, as before fusion */
    bool *read = smelt_calloc((size_t)g->values.len + 1, sizeof *read);
    if (!read) return prog_oom(pb);
    for (int start = 0, u = 0; start < g->nodes.len; u++) {
        int end = gr_unit_end(g, start);
        for (int k = start; k < end; k++) {
            const gr_node *n = g->nodes.items[k];
            for (int i = 0; i < n->n_inputs; i++) {
                const gr_value *v = n->inputs[i];
                if (!v) continue;
                read[v->id] = true;
                if (pb->unit_of[v->id] != u) pb->escapes[v->id] = true;
            }
        }
        start = end;
    }
    for (int i = 0; i < g->values.len; i++)
        if (!read[i]) pb->escapes[i] = true;
    for (int i = 0; i < g->outputs.len; i++) pb->escapes[((gr_value *)g->outputs.items[i])->id] = true;
    smelt_free(read);
    return SMELT_OK;
}

static bool value_escapes(const gr_value *v, void *user)
{
    return ((prog_builder *)user)->escapes[v->id];
}

static smelt_status lower_unit(prog_builder *pb, int start, int end)
{
    const gr_node *first = pb->g->nodes.items[start];
    if (end - start == 1 && op_runs_bodies(first)) {
        if (pb->opts->single_unit)
            return op_errf(pb->ctx, first, SMELT_ERR_UNSUPPORTED,
                           "control flow is not lowered as a unit of its own (tuning)");
        return lower_control_node(pb, first);
    }
    if (end - start == 1) return lower_node(pb, first);
    const gr_node *const *nodes = (const gr_node *const *)pb->g->nodes.items + start;
    te_group_io *io = smelt_calloc(1, sizeof *io);
    if (!io) return prog_oom(pb);
    te_graph *te;
    te_rt rt = rt_of(pb);
    smelt_status s = te_from_group_rt(pb->ctx, nodes, end - start, value_escapes, pb, &rt, &te, io);
    /* the function is named after the first node (the anchor of an epilogue group) */
    const gr_node *last = nodes[end - start - 1];
    char comment[256];
    snprintf(comment, sizeof comment, "%s .. %s (%d nodes)", nodes[0]->name, last->name,
             end - start);
    bool elementwise = true;
    for (int k = 0; k < end - start; k++) elementwise = elementwise && is_elementwise(nodes[k]);
    if (s == SMELT_OK)
        s = add_group(pb, te, io->in, io->n_in, io->out, io->n_out, NULL, elementwise,
                      nodes[0]->op_type, comment);
    smelt_free(io);
    return s;
}

/* Offsets for every arena value from the memory plan, written into the
 * call arguments (which carried the value's block number until now). */
static smelt_status plan_arena(prog_builder *pb)
{
    lower_control_lifetimes(pb);
    SMELT_TRY(mem_plan(pb->ctx, pb->blocks, pb->n_blocks, &pb->arena_bytes));
    for (int c = 0; c < pb->calls.len; c++) {
        ir_call_site *cs = pb->calls.items[c];
        int n_args = cs->func ? cs->func->n_params : cs->n_args;
        for (int i = 0; i < n_args; i++)
            if ((cs->func || cs->has_arg[i]) && cs->args[i].kind == IR_SLOT_ARENA) {
                cs->args[i].offset = pb->blocks[cs->args[i].index].offset;
                cs->args[i].index = 0;
            }
    }
    for (int i = 0; i < pb->n_blocks; i++) pb->lp->materialized_bytes += pb->blocks[i].bytes;
    const gr_graph *g = pb->g;
    for (int i = 0; i < g->values.len; i++) {
        const gr_value *v = g->values.items[i];
        if (v->producer && !v->constant && graph_index(&g->outputs, v) < 0 && value_bytes(v) > 0)
            pb->lp->intermediate_bytes += value_bytes(v);
    }
    return SMELT_OK;
}

static const gr_value **copy_values(prog_builder *pb, const smelt_ptrvec *v)
{
    const gr_value **out = smelt_arena_alloc(&pb->lp->arena, sizeof *out * (size_t)(v->len + 1));
    for (int i = 0; out && i < v->len; i++) out[i] = v->items[i];
    return out;
}

static smelt_status keep_unit_io(prog_builder *pb)
{
    pb->lp->unit_inputs = copy_values(pb, &pb->unit_in);
    pb->lp->unit_outputs = copy_values(pb, &pb->unit_out);
    return pb->lp->unit_inputs && pb->lp->unit_outputs ? SMELT_OK : prog_oom(pb);
}

smelt_status prog_push_step(prog_builder *pb, ir_call_site *step)
{
    int call = pb->calls.len;
    for (int i = 0; i < step->n_args; i++) {
        const ir_slot *a = &step->args[i];
        if (step->has_arg[i] && a->kind == IR_SLOT_ARENA && pb->blocks[a->index].last < call)
            pb->blocks[a->index].last = call;
    }
    return smelt_ptrvec_push(&pb->calls, step) ? SMELT_OK : prog_oom(pb);
}

smelt_status prog_lower_nodes(prog_builder *pb)
{
    const gr_graph *g = pb->g;
    bool single = pb->opts->single_unit;
    for (int start = 0; start < g->nodes.len; pb->unit++) {
        int end = gr_unit_end(g, start);
        if (single && pb->unit == pb->opts->unit) {
            pb->lp->unit_first = start;
            pb->lp->unit_end = end;
        }
        if (!single || pb->unit == pb->opts->unit) SMELT_TRY(lower_unit(pb, start, end));
        start = end;
    }
    return SMELT_OK;
}

static smelt_status lower_units(prog_builder *pb)
{
    const gr_graph *g = pb->g;
    bool single = pb->opts->single_unit;
    SMELT_TRY(prog_lower_nodes(pb));
    if (single && pb->funcs.len == 0)
        return smelt_errf(pb->ctx, SMELT_ERR_ARG, "the graph has no unit %d (%d units)",
                          pb->opts->unit, pb->unit);
    for (int i = 0; !single && i < g->outputs.len; i++)
        if (output_needs_copy(pb, i)) SMELT_TRY(copy_output(pb, i, g->outputs.items[i]));
    return SMELT_OK;
}

/* The run-time dims' block: written by the runtime before the first call,
 * read by any call (alive over the whole program). */
static smelt_status rt_begin(prog_builder *pb)
{
    const gr_graph *root = gr_graph_root(pb->g);
    ir_program *p = &pb->lp->prog;
    pb->n_rt = root->n_rt_dims;
    if (pb->n_rt == 0) return SMELT_OK;
    if (pb->opts->hw->gpu_threads > 0 && root->rt_dims[0].data)
        return smelt_errf(pb->ctx, SMELT_ERR_UNSUPPORTED, "a data-dependent count ('%s') is not "
                          "supported on GPU targets yet; the host target or the reference "
                          "executor runs the model", root->rt_dims[0].name);
    if (pb->opts->hw->gpu_threads > 0)
        return smelt_errf(pb->ctx, SMELT_ERR_UNSUPPORTED, "run-time dims ('%s') are not "
                          "supported on GPU targets yet; give the dim one value (--dim %s=N)",
                          root->rt_dims[0].name, root->rt_dims[0].name);
    SMELT_TRY(lower_check_rt_dims(pb->ctx, pb->g));
    p->n_rt = pb->n_rt;
    for (int k = 0; k < pb->n_rt; k++) {
        const gr_rt_dim *r = &root->rt_dims[k];
        pb->rt[k] = (te_rt_dim){r->max, r->n_adds, {0}};
        _Static_assert(GR_MAX_RT_ADDS == TE_MAX_RT_ADDS, "one add list");
        memcpy(pb->rt[k].adds, r->adds, sizeof r->adds);
        p->rt[k] = (ir_rt_dim){r->name, r->min, r->max, r->data};
    }
    return prog_new_block(pb, 8 * pb->n_rt, &pb->rt_slot);
}

static void rt_end(prog_builder *pb)
{
    if (pb->n_rt) pb->blocks[pb->rt_slot.index].last = pb->calls.len;
}

static smelt_status build_program(prog_builder *pb)
{
    bool single = pb->opts->single_unit;
    SMELT_TRY(rt_begin(pb));
    if (!single) SMELT_TRY(describe_io(pb));
    SMELT_TRY(prog_find_escapes(pb));
    SMELT_TRY(lower_units(pb));
    rt_end(pb);
    if (single) SMELT_TRY(describe_io(pb));
    if (single) SMELT_TRY(keep_unit_io(pb));
    SMELT_TRY(pack_weights(pb));
    SMELT_TRY(plan_arena(pb));
    ir_program *p = &pb->lp->prog;
    p->n_funcs = pb->funcs.len;
    p->n_calls = pb->calls.len;
    p->funcs = smelt_arena_alloc(&pb->lp->arena, sizeof(ir_func *) * (size_t)(p->n_funcs + 1));
    p->calls = smelt_arena_alloc(&pb->lp->arena, sizeof(ir_call_site) * (size_t)(p->n_calls + 1));
    if (!p->funcs || !p->calls) return prog_oom(pb);
    for (int i = 0; i < p->n_funcs; i++) p->funcs[i] = pb->funcs.items[i];
    for (int i = 0; i < p->n_calls; i++) p->calls[i] = *(ir_call_site *)pb->calls.items[i];
    p->arena_bytes = pb->arena_bytes;
    p->weight_bytes = pb->weight_bytes;
    p->weights = pb->lp->weights;
    if (pb->n_rt) p->rt_dims_offset = pb->blocks[pb->rt_slot.index].offset;
    return SMELT_OK;
}

/* The first node of g or its bodies that reads or gives a sequence or an
 * optional (NULL: none).  *which: that value. */
static const gr_node *container_node(const gr_graph *g, const gr_value **which)
{
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
            const gr_value *v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            if (v && smelt_dtype_is_container(v->dtype)) {
                *which = v;
                return n;
            }
        }
        for (int k = 0; k < n->n_attrs; k++) {
            const gr_node *in_body = n->attrs[k].type == GR_ATTR_GRAPH && n->attrs[k].g
                                         ? container_node(n->attrs[k].g, which)
                                         : NULL;
            if (in_body) return in_body;
        }
    }
    return NULL;
}

/* Compiled code holds tensors in its arena: sequences and optionals (and
 * the ops on them) are refused by name, never lowered as something else. */
static const char *a_or_an(smelt_dtype dt)
{
    return (unsigned)dt & SMELT_DT_OPTIONAL_BIT ? "an" : "a";
}

smelt_status lower_refuse_containers(smelt_ctx *ctx, const gr_graph *g)
{
    const gr_value *v = NULL;
    const gr_node *n = container_node(g, &v);
    if (n)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                       "'%s' is %s %s: a compiled program holds tensors only, so sequences and "
                       "optionals compile when the model runs (unrolled per element count and "
                       "shapes: smelt run/check, the C and Python APIs), not ahead of it",
                       v->name, a_or_an(v->dtype), smelt_dtype_name(v->dtype));
    for (int i = 0; i < g->inputs.len + g->outputs.len; i++) {
        v = i < g->inputs.len ? g->inputs.items[i] : g->outputs.items[i - g->inputs.len];
        if (smelt_dtype_is_container(v->dtype))
            return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED,
                              "graph %s '%s' is %s %s: sequences and optionals compile when the "
                              "model runs (unrolled per element count and shapes), not ahead of it",
                              i < g->inputs.len ? "input" : "output", v->name,
                              a_or_an(v->dtype), smelt_dtype_name(v->dtype));
    }
    return SMELT_OK;
}

/* Whether a model input or output is laid out at the run's dims: it has a
 * run-time dim with a dim of more than one element before it (a key/value
 * cache [1, heads, past, d]: the layout at the maxima puts every head's rows
 * elsewhere, so it would be copied in and out each run), and only nodes of
 * the root graph read or write it (a subgraph's own values are laid out at
 * the maxima). */
static bool dense_candidate(const gr_graph *g, const gr_value *v)
{
    bool wide = false, differs = false;
    for (int d = 0; d < v->rank; d++) {
        int k = gr_value_rt_dim(g, v, d);
        /* a count known only after the run: the caller's buffer holds its maximum */
        if (k >= 0 && gr_graph_root(g)->rt_dims[k].data) return false;
        if (k >= 0) differs = differs || wide;
        wide = wide || v->dims[d] > 1;
    }
    if (!differs || v->constant) return false;
    if (v->producer && (op_get(v->producer->op)->def->flags & OP_FLAG_SUBGRAPHS)) return false;
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        if (!(op_get(n->op)->def->flags & OP_FLAG_SUBGRAPHS)) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == v) return false;
    }
    return true;
}

static void choose_dense(const gr_graph *g, bool *dense)
{
    for (int k = 0; k < 2; k++) {
        const smelt_ptrvec *list = k ? &g->outputs : &g->inputs;
        for (int i = 0; i < list->len; i++) {
            const gr_value *v = list->items[i];
            dense[v->id] = dense_candidate(g, v);
        }
    }
}

static smelt_status lower_once(smelt_ctx *ctx, const gr_graph *g, const lower_options *opts,
                               bool *dense, lowered_program **out, bool *retry)
{
    *out = NULL;
    lowered_program *lp = smelt_calloc(1, sizeof *lp);
    if (!lp) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_arena_init(&lp->arena);
    ir_builder_init(&lp->b, &lp->arena);
    prog_builder pb = {.ctx = ctx, .g = g, .opts = opts, .lp = lp, .dense = dense};
    pb.inputs = opts->single_unit ? &pb.unit_in : &g->inputs;
    pb.outputs = opts->single_unit ? &pb.unit_out : &g->outputs;
    pb.slots = smelt_calloc((size_t)g->values.len + 1, sizeof *pb.slots);
    pb.unit_of = smelt_calloc((size_t)g->values.len + 1, sizeof *pb.unit_of);
    pb.escapes = smelt_calloc((size_t)g->values.len + 1, sizeof *pb.escapes);
    smelt_status s = pb.slots && pb.unit_of && pb.escapes ? build_program(&pb) : prog_oom(&pb);
    smelt_free(pb.slots);
    smelt_free(pb.unit_of);
    smelt_free(pb.blocks);
    smelt_free(pb.escapes);
    smelt_ptrvec_fini(&pb.funcs);
    smelt_ptrvec_fini(&pb.calls);
    smelt_ptrvec_fini(&pb.weight_consts);
    smelt_ptrvec_fini(&pb.unit_in);
    smelt_ptrvec_fini(&pb.unit_out);
    *retry = s != SMELT_OK && pb.retry_dense;
    if (s != SMELT_OK) {
        lowered_program_free(lp);
        return s;
    }
    *out = lp;
    return SMELT_OK;
}

smelt_status lower_graph(smelt_ctx *ctx, const gr_graph *g, const lower_options *opts,
                         lowered_program **out)
{
    *out = NULL;
    SMELT_TRY(lower_refuse_containers(ctx, g));
    bool *dense = NULL;
    if (!opts->single_unit && gr_graph_root(g)->n_rt_dims && g == gr_graph_root(g)) {
        if (!(dense = smelt_calloc((size_t)g->values.len + 1, sizeof *dense)))
            return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        choose_dense(g, dense);
    }
    bool retry = false;
    smelt_status s = SMELT_OK;
    /* each retry stages one more value: at most one per model input and output */
    for (int tries = 0; tries <= g->inputs.len + g->outputs.len + 1; tries++) {
        s = lower_once(ctx, g, opts, dense, out, &retry);
        if (!retry) break;
        smelt_ctx_clear(ctx);
    }
    smelt_free(dense);
    return s;
}

void lowered_program_free(lowered_program *lp)
{
    if (!lp) return;
    for (int i = 0; i < lp->states.len; i++) sch_state_free(lp->states.items[i]);
    for (int i = 0; i < lp->te_graphs.len; i++) te_graph_free(lp->te_graphs.items[i]);
    smelt_ptrvec_fini(&lp->states);
    smelt_ptrvec_fini(&lp->te_graphs);
    smelt_free(lp->weights);
    smelt_arena_fini(&lp->arena);
    smelt_free(lp);
}

int lower_count_units(const gr_graph *g)
{
    int n = 0;
    for (int start = 0; start < g->nodes.len; n++) start = gr_unit_end(g, start);
    return n;
}
