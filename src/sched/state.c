/* Replaying a schedule on a te_graph: the applied state lowering reads. */
#include <string.h>

#include "sched/sched.h"
#include "sched/stage_index.h"
#include "tir/mutate.h"

static smelt_status step_err(smelt_ctx *ctx, const sch_step *st, const char *fmt, const char *a)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, a ? a : "");
    return smelt_errf(ctx, SMELT_ERR_ARG, "schedule step on '%s': %s", st->stage, msg);
}

int sch_stage_index(const sch_state *st, const char *name)
{
    if (st->index) return sch_index_find(st, name);
    for (int i = 0; i < st->n_stages; i++)
        if (strcmp(st->stages[i].buf->name, name) == 0) return i;
    return -1;
}

int sch_iter_index(const sch_stage *sg, const char *name)
{
    for (int i = 0; i < sg->n_iters; i++)
        if (strcmp(sg->iters[i].name, name) == 0) return i;
    return -1;
}

static int leaf_position(const sch_stage *sg, int iter)
{
    for (int i = 0; i < sg->n_leaves; i++)
        if (sg->leaves[i] == iter) return i;
    return -1;
}

static int add_iter(sch_state *st, sch_stage *sg, const char *name, int64_t extent, bool reduce,
                    sch_rel rel)
{
    if (sg->n_iters == SCH_MAX_ITERS) return -1;
    sch_iter *it = &sg->iters[sg->n_iters];
    memset(it, 0, sizeof *it);
    it->name = smelt_arena_strdup(&st->arena, name);
    it->extent = extent;
    it->reduce = reduce;
    it->rel = rel;
    it->parent = it->split_outer = it->split_inner = -1;
    it->fuse_outer = it->fuse_inner = it->fused_into = -1;
    it->annot = IR_FOR_SERIAL;
    return it->name ? sg->n_iters++ : -2; /* -2: out of memory */
}

/* Root iters: data axes, then the reduce axes of a top-level reduction. */
static smelt_status init_iters(smelt_ctx *ctx, sch_state *st, sch_stage *sg)
{
    sg->n_iters = sg->n_leaves = 0;
    for (int i = 0; i < sg->n_axes; i++) {
        int k = add_iter(st, sg, sg->axes[i].var->name, sg->axes[i].extent, false, SCH_REL_ROOT);
        if (k < 0) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        sg->iters[k].dyn = sg->axes[i].dyn;
        sg->leaves[sg->n_leaves++] = k;
    }
    for (int i = 0; i < sg->n_reduce; i++) {
        const char *name = sg->reduce_axes[i].var->name;
        if (sch_iter_index(sg, name) >= 0)
            return smelt_errf(ctx, SMELT_ERR_INTERNAL, "te: stage '%s' has two axes named '%s'",
                              sg->buf->name, name);
        int k = add_iter(st, sg, name, sg->reduce_axes[i].extent, true, SCH_REL_ROOT);
        if (k < 0) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        sg->iters[k].dyn = sg->reduce_axes[i].dyn;
        sg->leaves[sg->n_leaves++] = k;
    }
    return SMELT_OK;
}

typedef struct reads_acc {
    const ir_buffer *bufs[64];
    int n;
    bool overflow;
} reads_acc;

static void collect_reads(void *ctx, const ir_expr *e)
{
    reads_acc *a = ctx;
    if (a->overflow) return;
    if (e->kind == IR_LOAD) {
        bool seen = false;
        for (int i = 0; i < a->n && !seen; i++) seen = a->bufs[i] == e->load.buf;
        if (!seen && a->n == (int)SMELT_ARRAY_LEN(a->bufs)) a->overflow = true;
        else if (!seen) a->bufs[a->n++] = e->load.buf;
    }
    tir_expr_visit_children(e, collect_reads, ctx);
}

static void stage_note_reads(sch_state *st, sch_stage *sg)
{
    reads_acc a = {.n = 0};
    sg->reads = NULL;
    sg->n_reads = -1;
    if (sg->body) collect_reads(&a, sg->body);
    if (a.overflow) return; /* many buffers: sch_stage_reads walks the body */
    sg->reads = smelt_arena_alloc(&st->arena, sizeof *sg->reads * (size_t)(a.n ? a.n : 1));
    if (!sg->reads) return;
    memcpy(sg->reads, a.bufs, sizeof *sg->reads * (size_t)a.n);
    sg->n_reads = a.n;
}

bool sch_stage_reads(const sch_stage *sg, const ir_buffer *buf)
{
    if (sg->n_reads < 0) return ir_expr_reads(sg->body, buf);
    for (int i = 0; i < sg->n_reads; i++)
        if (sg->reads[i] == buf) return true;
    return false;
}

static void stage_set_body(sch_state *st, sch_stage *sg, ir_expr *body)
{
    sg->body = body;
    stage_note_reads(st, sg);
    sg->n_reduce = 0;
    if (body && body->kind == IR_REDUCE) {
        sg->n_reduce = body->reduce.n_axes;
        for (int i = 0; i < sg->n_reduce; i++) sg->reduce_axes[i] = body->reduce.axes[i];
    }
}

/* An extern stage: no body, no iters; it reads its inputs. */
static smelt_status init_extern(sch_state *st, sch_stage *sg, const te_extern *e)
{
    sg->ext = e;
    sg->reads = smelt_arena_alloc(&st->arena, sizeof *sg->reads * (size_t)(e->n_inputs + 1));
    if (!sg->reads) return smelt_errf(st->te->ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < e->n_inputs; i++) sg->reads[i] = e->inputs[i]->buf;
    sg->n_reads = e->n_inputs;
    return SMELT_OK;
}

static smelt_status init_stage(smelt_ctx *ctx, sch_state *st, sch_stage *sg, const te_tensor *t)
{
    memset(sg, 0, sizeof *sg);
    sg->buf = t->buf;
    sg->is_placeholder = t->kind == TE_PLACEHOLDER;
    sg->attach_stage = sg->attach_iter = -1;
    sg->tensor_iter = -1;
    sg->tag = t->tag;
    sg->check = t->check;
    sg->n_axes = t->n_axes;
    for (int i = 0; i < t->n_axes; i++) sg->axes[i] = t->axes[i];
    for (int i = 0; i < st->te->outputs.len; i++)
        if (st->te->outputs.items[i] == t) sg->is_output = true;
    if (sg->is_placeholder) return SMELT_OK;
    if (t->ext) return init_extern(st, sg, t->ext);
    stage_set_body(st, sg, t->body);
    return init_iters(ctx, st, sg);
}

/* ---- steps ---- */

static smelt_status find_leaf(smelt_ctx *ctx, const sch_step *step, sch_stage *sg,
                              const char *name, int *iter, int *pos)
{
    *iter = sch_iter_index(sg, name);
    if (*iter < 0) return step_err(ctx, step, "no iteration variable named '%s'", name);
    *pos = leaf_position(sg, *iter);
    if (*pos < 0) return step_err(ctx, step, "'%s' was already split or fused", name);
    return SMELT_OK;
}

/* A loop that has stages computed at it, or a tile staged in it, keeps its
 * identity. */
static smelt_status check_not_attach_point(smelt_ctx *ctx, const sch_state *st, const sch_step *step,
                                           const sch_stage *sg, int iter)
{
    for (int i = 0; i < st->n_stages; i++) {
        const sch_stage *p = &st->stages[i];
        if (&st->stages[p->attach_stage < 0 ? 0 : p->attach_stage] == sg && p->attach_stage >= 0 &&
            p->attach_iter == iter)
            return step_err(ctx, step, "loop '%s' has a stage computed at it; split or fuse it "
                                       "before compute_at", sg->iters[iter].name);
    }
    for (int i = 0; i < sg->n_cache_reads; i++)
        if (sg->cache_reads[i].iter == iter)
            return step_err(ctx, step, "loop '%s' has a tile staged in it (cache_read); split or "
                                       "fuse it before cache_read", sg->iters[iter].name);
    return SMELT_OK;
}

/* Whether some stage stages buf in shared memory (cache_read). */
static const sch_stage *cached_by(const sch_state *st, const ir_buffer *buf)
{
    for (int i = 0; i < st->n_stages; i++)
        for (int k = 0; k < st->stages[i].n_cache_reads; k++)
            if (st->stages[i].cache_reads[k].buf == buf) return &st->stages[i];
    return NULL;
}

static smelt_status apply_split(smelt_ctx *ctx, sch_state *st, const sch_step *step, sch_stage *sg)
{
    int it, pos;
    SMELT_TRY(find_leaf(ctx, step, sg, step->iters[0], &it, &pos));
    SMELT_TRY(check_not_attach_point(ctx, st, step, sg, it));
    if (step->factor <= 0) return step_err(ctx, step, "split factor must be positive%s", NULL);
    int64_t ext = sg->iters[it].extent, f = step->factor < ext ? step->factor : ext;
    if (f < 1) f = 1;
    char name[256];
    snprintf(name, sizeof name, "%s.o", sg->iters[it].name);
    int o = add_iter(st, sg, name, (ext + f - 1) / f, sg->iters[it].reduce, SCH_REL_SPLIT_OUTER);
    snprintf(name, sizeof name, "%s.i", sg->iters[it].name);
    int in = add_iter(st, sg, name, f, sg->iters[it].reduce, SCH_REL_SPLIT_INNER);
    if (o == -2 || in == -2) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (o < 0 || in < 0) return step_err(ctx, step, "too many iteration variables%s", NULL);
    sg->iters[o].parent = sg->iters[in].parent = it;
    sg->iters[o].factor = sg->iters[in].factor = f;
    sg->iters[it].split_outer = o;
    sg->iters[it].split_inner = in;
    memmove(&sg->leaves[pos + 2], &sg->leaves[pos + 1], sizeof(int) * (size_t)(sg->n_leaves - pos - 1));
    sg->leaves[pos] = o;
    sg->leaves[pos + 1] = in;
    sg->n_leaves++;
    return SMELT_OK;
}

static smelt_status apply_fuse(smelt_ctx *ctx, sch_state *st, const sch_step *step, sch_stage *sg)
{
    int a, pa, c, pc;
    if (step->n_iters != 2) return step_err(ctx, step, "fuse takes two iteration variables%s", NULL);
    SMELT_TRY(find_leaf(ctx, step, sg, step->iters[0], &a, &pa));
    SMELT_TRY(find_leaf(ctx, step, sg, step->iters[1], &c, &pc));
    SMELT_TRY(check_not_attach_point(ctx, st, step, sg, a));
    SMELT_TRY(check_not_attach_point(ctx, st, step, sg, c));
    if (pc != pa + 1) return step_err(ctx, step, "fused loops must be adjacent, outer first%s", NULL);
    if (sg->iters[a].reduce != sg->iters[c].reduce)
        return step_err(ctx, step, "cannot fuse a reduction loop with a data-parallel loop%s", NULL);
    int64_t ext;
    if (smelt_mul_overflow_i64(sg->iters[a].extent, sg->iters[c].extent, &ext))
        return step_err(ctx, step, "fused extent overflows%s", NULL);
    char name[256];
    snprintf(name, sizeof name, "%s.%s", sg->iters[a].name, sg->iters[c].name);
    int f = add_iter(st, sg, name, ext, sg->iters[a].reduce, SCH_REL_FUSED);
    if (f == -2) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (f < 0) return step_err(ctx, step, "too many iteration variables%s", NULL);
    sg->iters[f].fuse_outer = a;
    sg->iters[f].fuse_inner = c;
    sg->iters[a].fused_into = sg->iters[c].fused_into = f;
    sg->leaves[pa] = f;
    memmove(&sg->leaves[pc], &sg->leaves[pc + 1], sizeof(int) * (size_t)(sg->n_leaves - pc - 1));
    sg->n_leaves--;
    return SMELT_OK;
}

static smelt_status apply_reorder(smelt_ctx *ctx, const sch_step *step, sch_stage *sg)
{
    int pos[SCH_MAX_STEP_ITERS], its[SCH_MAX_STEP_ITERS];
    for (int i = 0; i < step->n_iters; i++) {
        SMELT_TRY(find_leaf(ctx, step, sg, step->iters[i], &its[i], &pos[i]));
        for (int k = 0; k < i; k++)
            if (its[k] == its[i]) return step_err(ctx, step, "'%s' listed twice", step->iters[i]);
    }
    /* the listed leaves keep the set of positions they occupy, in the new order */
    int sorted[SCH_MAX_STEP_ITERS];
    memcpy(sorted, pos, sizeof(int) * (size_t)step->n_iters);
    for (int i = 1; i < step->n_iters; i++)
        for (int k = i; k > 0 && sorted[k - 1] > sorted[k]; k--) {
            int t = sorted[k];
            sorted[k] = sorted[k - 1];
            sorted[k - 1] = t;
        }
    for (int i = 0; i < step->n_iters; i++) sg->leaves[sorted[i]] = its[i];
    return SMELT_OK;
}

static smelt_status apply_annotate(smelt_ctx *ctx, const sch_step *step, sch_stage *sg)
{
    int it, pos;
    SMELT_TRY(find_leaf(ctx, step, sg, step->iters[0], &it, &pos));
    if (sg->iters[it].reduce && step->kind != SCH_UNROLL)
        return step_err(ctx, step, "cannot vectorize or parallelize reduction loop '%s' "
                                   "(iterations would race on the accumulator)", step->iters[0]);
    sg->iters[it].annot = step->kind == SCH_VECTORIZE ? IR_FOR_VECTORIZED
                          : step->kind == SCH_UNROLL  ? IR_FOR_UNROLLED
                                                      : IR_FOR_PARALLEL;
    return SMELT_OK;
}


/* bind: a data loop becomes the blocks or the threads of a GPU launch (a
 * reduction loop would race on its accumulator). */
static smelt_status apply_bind(smelt_ctx *ctx, const sch_step *step, sch_stage *sg)
{
    int it, pos;
    SMELT_TRY(find_leaf(ctx, step, sg, step->iters[0], &it, &pos));
    if (sg->iters[it].reduce)
        return step_err(ctx, step, "cannot bind reduction loop '%s' to GPU threads (they would "
                                   "race on the accumulator)", step->iters[0]);
    if (strcmp(step->target, "blockIdx.x") == 0)
        sg->iters[it].annot = IR_FOR_GPU_BLOCK;
    else if (strcmp(step->target, "threadIdx.x") == 0)
        sg->iters[it].annot = IR_FOR_GPU_THREAD;
    else
        return step_err(ctx, step, "unknown GPU index '%s' (blockIdx.x or threadIdx.x)", step->target);
    return SMELT_OK;
}

/* Replace loads of `prod` inside e by prod's body with its axes bound to the
 * load's indices. */
static ir_expr *inline_loads(ir_builder *b, ir_expr *e, const sch_stage *prod)
{
    if (!e) return NULL;
    switch (e->kind) {
    case IR_INT:
    case IR_FLOAT:
    case IR_VAR: return e;
    case IR_NOT:
    case IR_CAST: {
        ir_expr *a = inline_loads(b, e->bin.a, prod);
        if (a == e->bin.a) return e;
        return e->kind == IR_NOT ? ir_not(b, a) : ir_cast(b, e->dtype, a);
    }
    case IR_SELECT: {
        ir_expr *c = inline_loads(b, e->select.cond, prod), *t = inline_loads(b, e->select.t, prod),
                *f = inline_loads(b, e->select.f, prod);
        if (c == e->select.cond && t == e->select.t && f == e->select.f) return e;
        return ir_select(b, c, t, f);
    }
    case IR_CALL: {
        ir_expr *args[3];
        bool changed = false;
        for (int i = 0; i < e->call.n; i++) {
            args[i] = inline_loads(b, e->call.args[i], prod);
            changed |= args[i] != e->call.args[i];
        }
        return changed ? ir_call(b, e->call.op, e->dtype, e->call.n, args) : e;
    }
    case IR_LOAD: {
        ir_expr *idx[SMELT_MAX_RANK * 2];
        bool changed = false;
        for (int i = 0; i < e->load.n; i++) {
            idx[i] = inline_loads(b, e->load.idx[i], prod);
            changed |= idx[i] != e->load.idx[i];
        }
        if (e->load.buf == prod->buf) {
            ir_subst map[SMELT_MAX_RANK];
            for (int i = 0; i < prod->n_axes; i++) map[i] = (ir_subst){prod->axes[i].var, idx[i]};
            return ir_expr_substitute(b, prod->body, map, prod->n_axes);
        }
        return changed ? ir_load(b, e->load.buf, e->load.n, idx) : e;
    }
    case IR_REDUCE: {
        ir_expr *src = inline_loads(b, e->reduce.src, prod);
        return src == e->reduce.src ? e : ir_reduce(b, e->reduce.op, src, e->reduce.n_axes, e->reduce.axes);
    }
    default: {
        ir_expr *a = inline_loads(b, e->bin.a, prod), *c = inline_loads(b, e->bin.b, prod);
        if (a == e->bin.a && c == e->bin.b) return e;
        ir_expr *r = ir_binary(b, e->kind, a, c);
        if (r) r->dtype = e->dtype;
        return r;
    }
    }
}

/* A consumer's body stays under SCH_INLINE_MAX_NODES (sched.h). */
typedef struct inline_count {
    const ir_buffer *prod;
    int64_t prod_nodes, total; /* counting stops past the cap */
} inline_count;

/* Nodes of e once every load of prod stands for prod's body. */
static void count_inlined(void *ctx, const ir_expr *e)
{
    inline_count *c = ctx;
    if (c->total > SCH_INLINE_MAX_NODES) return;
    c->total += e->kind == IR_LOAD && e->load.buf == c->prod ? c->prod_nodes : 1;
    tir_expr_visit_children(e, count_inlined, c);
}

static int64_t inlined_nodes(const ir_expr *body, const ir_buffer *prod, int64_t prod_nodes)
{
    inline_count c = {prod, prod_nodes, 0};
    count_inlined(&c, body);
    return c.total;
}

/* A stage computed at one of si's loops (not inlined), or -1.  Such a stage
 * is a producer si reads, so only si's reads are looked at. */
static int attached_producer(const sch_state *st, int si)
{
    const sch_stage *sg = &st->stages[si];
    if (sg->n_reads < 0) {
        for (int i = 0; i < st->n_stages; i++)
            if (st->stages[i].attach_stage == si && !st->stages[i].inlined) return i;
        return -1;
    }
    for (int k = 0; k < sg->n_reads; k++) {
        int p = sch_stage_index(st, sg->reads[k]->name);
        if (p >= 0 && st->stages[p].buf == sg->reads[k] && st->stages[p].attach_stage == si &&
            !st->stages[p].inlined)
            return p;
    }
    return -1;
}

static smelt_status apply_inline(smelt_ctx *ctx, sch_state *st, const sch_step *step, int si)
{
    sch_stage *sg = &st->stages[si];
    if (sg->is_placeholder || sg->is_output || sg->check)
        return step_err(ctx, step, "only intermediate computes can be inlined%s", NULL);
    if (sg->n_reduce) return step_err(ctx, step, "a reduction cannot be inlined%s", NULL);
    if (sg->attach_stage >= 0) return step_err(ctx, step, "stage is already computed at a loop%s", NULL);
    if (sg->n_cache_reads)
        return step_err(ctx, step, "stage has a tile staged at one of its loops (cache_read)%s", NULL);
    const sch_stage *cacher = cached_by(st, sg->buf);
    if (cacher)
        return step_err(ctx, step, "'%s' stages this stage's values in shared memory (cache_read); "
                                   "inline before cache_read", cacher->buf->name);
    int attached = attached_producer(st, si);
    if (attached >= 0) /* inlining would drop its loops, and their nests */
        return step_err(ctx, step, "'%s' is computed at one of its loops", st->stages[attached].buf->name);
    const int *readers;
    int n_readers;
    if (!sch_index_readers(st, si, &readers, &n_readers)) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n_readers; k++) {
        int i = readers[k];
        sch_stage *c = &st->stages[i];
        /* an inlined stage's body is never read again: its consumers hold
         * copies (skipping it keeps a chain of n inlines O(n^2), not O(n^3)) */
        if (i == si || c->is_placeholder || c->inlined || !sch_stage_reads(c, sg->buf))
            continue;
        if (c->tensor_iter >= 0)
            return step_err(ctx, step, "consumer '%s' is tensorized; inline before tensorize",
                            c->buf->name);
        if (inlined_nodes(c->body, sg->buf, inlined_nodes(sg->body, NULL, 0)) > SCH_INLINE_MAX_NODES)
            return smelt_errf(ctx, SMELT_ERR_LIMIT,
                              "schedule step on '%s': inlining it would give '%s' an expression of "
                              "more than %d nodes (SCH_INLINE_MAX_NODES in src/sched/sched.h)",
                              step->stage, c->buf->name, SCH_INLINE_MAX_NODES);
        ir_expr *nb = inline_loads(&st->b, c->body, sg);
        if (!nb) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        stage_set_body(st, c, nb);
        if (!sch_index_note_inline(st, si, i)) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    sg->inlined = true;
    return SMELT_OK;
}

static smelt_status apply_compute_at(smelt_ctx *ctx, sch_state *st, const sch_step *step, int si)
{
    sch_stage *sg = &st->stages[si];
    int ci = sch_stage_index(st, step->target);
    if (ci < 0) return step_err(ctx, step, "no stage named '%s'", step->target);
    sch_stage *c = &st->stages[ci];
    if (sg->is_placeholder || sg->is_output || sg->inlined || sg->check)
        return step_err(ctx, step, "only intermediate, non-inlined computes can be computed at a "
                                   "loop%s", NULL);
    if (c->ext) return step_err(ctx, step, "'%s' is an extern stage: it has no loops", step->target);
    if (c->is_placeholder || c->inlined || !sch_stage_reads(c, sg->buf))
        return step_err(ctx, step, "'%s' does not read this stage", step->target);
    const int *readers;
    int n_readers;
    if (!sch_index_readers(st, si, &readers, &n_readers)) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n_readers; k++) {
        int i = readers[k];
        if (i != si && i != ci && !st->stages[i].is_placeholder && !st->stages[i].inlined &&
            sch_stage_reads(&st->stages[i], sg->buf))
            return step_err(ctx, step, "stage has another consumer, '%s'", st->stages[i].buf->name);
    }
    int it, pos;
    sch_step at = *step;
    at.stage = step->target;
    SMELT_TRY(find_leaf(ctx, &at, c, step->iters[0], &it, &pos));
    if (c->tensor_iter >= 0 && pos >= leaf_position(c, c->tensor_iter))
        return step_err(ctx, step, "loop '%s' is replaced by a micro-kernel (tensorize)", step->iters[0]);
    const sch_stage *cacher = cached_by(st, sg->buf);
    if (cacher)
        return step_err(ctx, step, "'%s' stages this stage's values in shared memory (cache_read): "
                                   "it must be computed at the root", cacher->buf->name);
    sg->attach_stage = ci;
    sg->attach_iter = it;
    return SMELT_OK;
}

/* ---- cache_read ---- */

/* STAGE's reads of BUFFER inside loop ITER come from a shared-memory tile
 * (lowering builds it: lower/nest.c). */
static smelt_status apply_cache_read(smelt_ctx *ctx, sch_state *st, const sch_step *step, int si)
{
    sch_stage *sg = &st->stages[si];
    if (sg->inlined) return step_err(ctx, step, "an inlined stage has no loops%s", NULL);
    if (sg->check) return step_err(ctx, step, "a check stage has no tiles to stage%s", NULL);
    int bi = sch_stage_index(st, step->target);
    if (bi < 0) return step_err(ctx, step, "cache_read: no buffer (input or stage) named '%s'", step->target);
    const sch_stage *src = &st->stages[bi];
    if (bi == si) return step_err(ctx, step, "cache_read: a stage cannot stage its own values%s", NULL);
    if (src->inlined || !sch_stage_reads(sg, src->buf))
        return step_err(ctx, step, "cache_read: the stage does not read '%s'", step->target);
    if (!src->is_placeholder && src->attach_stage >= 0)
        return step_err(ctx, step, "cache_read: '%s' is computed at a loop (compute_at); only "
                                   "buffers in device memory (inputs, stages at the root) are staged",
                        step->target);
    for (int k = 0; k < sg->n_cache_reads; k++)
        if (sg->cache_reads[k].buf == src->buf)
            return step_err(ctx, step, "cache_read: '%s' is already staged", step->target);
    if (sg->n_cache_reads == SCH_MAX_CACHE_READS)
        return step_err(ctx, step, "cache_read: more than %s buffers staged by one stage", "4");
    int it = sch_iter_index(sg, step->iters[0]);
    int pos = it >= 0 ? leaf_position(sg, it) : -1;
    if (it < 0) return step_err(ctx, step, "cache_read: the stage has no loop named '%s'", step->iters[0]);
    if (pos < 0) return step_err(ctx, step, "cache_read: loop '%s' was split or fused", step->iters[0]);
    if (sg->tensor_iter >= 0 && pos >= leaf_position(sg, sg->tensor_iter))
        return step_err(ctx, step, "cache_read: loop '%s' is replaced by a micro-kernel (tensorize)",
                        step->iters[0]);
    sg->cache_reads[sg->n_cache_reads++] = (sch_cache_entry){src->buf, it};
    return SMELT_OK;
}

/* C.local computes the values; C becomes a copy of C.local. */
static smelt_status apply_cache_write(smelt_ctx *ctx, sch_state *st, const sch_step *step, int si)
{
    sch_stage *sg = &st->stages[si];
    if (sg->is_placeholder || sg->inlined || sg->attach_stage >= 0 || sg->check)
        return step_err(ctx, step, "cache_write needs a compute at root that stores%s", NULL);
    if (sg->n_cache_reads) return step_err(ctx, step, "cache_write must come before cache_read%s", NULL);
    if (sg->n_iters != sg->n_axes + sg->n_reduce)
        return step_err(ctx, step, "cache_write must come before other steps on the stage%s", NULL);
    char name[256];
    snprintf(name, sizeof name, "%s.local", sg->buf->name);
    if (sch_stage_index(st, name) >= 0) return step_err(ctx, step, "already cached%s", NULL);
    sch_stage *grown = smelt_arena_alloc(&st->arena, sizeof *grown * (size_t)(st->n_stages + 1));
    if (!grown) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    memcpy(grown, st->stages, sizeof *grown * (size_t)st->n_stages);
    st->stages = grown;
    sg = &st->stages[si];
    sch_stage *local = &st->stages[st->n_stages++];
    *local = *sg;
    local->is_output = false;
    local->buf = ir_buffer_new(&st->b, name, sg->buf->dtype, sg->buf->rank, sg->buf->shape,
                               IR_BUF_TEMP);
    if (!local->buf || !sch_index_add_name(st, st->n_stages - 1))
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    sch_index_readers_stale(st);
    ir_expr *idx[SMELT_MAX_RANK];
    for (int i = 0; i < sg->n_axes; i++) idx[i] = ir_var_ref(&st->b, sg->axes[i].var);
    stage_set_body(st, sg, ir_load(&st->b, local->buf, sg->n_axes, idx));
    if (!sg->body) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    sg->tag = "injective";
    return init_iters(ctx, st, sg);
}

/* ---- rfactor ---- */

/* No step has touched sg's loops: its leaves are its roots, in order, plain. */
static bool stage_untouched(const sch_stage *sg)
{
    if (sg->n_iters != sg->n_axes + sg->n_reduce || sg->n_leaves != sg->n_iters) return false;
    for (int k = 0; k < sg->n_leaves; k++)
        if (sg->leaves[k] != k || sg->iters[k].annot != IR_FOR_SERIAL) return false;
    return true;
}

/* rf's body: sg's reduction with axis r = r.o * f + r.i, r.i a data axis;
 * past r's extent (a run-time one: past the run's) the identity, so a tail
 * adds nothing. */
static ir_expr *rfactor_body(sch_state *st, const sch_stage *sg, int r, ir_var *outer,
                             ir_var *lane, int64_t f, sch_stage *rf)
{
    ir_builder *b = &st->b;
    const ir_expr *body = sg->body;
    int64_t ext = sg->reduce_axes[r].extent;
    ir_expr *dyn = sg->reduce_axes[r].dyn;
    ir_expr *pos = ir_add(b, ir_mul(b, ir_var_ref(b, outer), ir_int(b, f)), ir_var_ref(b, lane));
    ir_subst map = {sg->reduce_axes[r].var, pos};
    ir_expr *src = ir_expr_substitute(b, body->reduce.src, &map, 1);
    ir_expr *mask = ext % f != 0 || dyn ? ir_binary(b, IR_LT, pos, dyn ? dyn : ir_int(b, ext)) : NULL;
    if (mask)
        src = ir_select(b, mask, src,
                        te_reduce_identity_in(b, body->reduce.op, src ? src->dtype : sg->buf->dtype));
    if (dyn) { /* substitutions keep an unchanged subtree, so lowering finds it */
        rf->rt_mask = mask;
        rf->rt_mask_extent = dyn;
        rf->rt_mask_factor = f;
    }
    ir_axis axes[SMELT_MAX_RANK];
    for (int i = 0; i < sg->n_reduce; i++) axes[i] = sg->reduce_axes[i];
    ir_expr *odyn = dyn ? ir_binary(b, IR_FLOORDIV, ir_add(b, dyn, ir_int(b, f - 1)), ir_int(b, f))
                        : NULL;
    axes[r] = (ir_axis){outer, (ext + f - 1) / f, odyn};
    if (dyn) rf->rt_mask_outer = odyn;
    return ir_reduce(b, body->reduce.op, src, sg->n_reduce, axes);
}

/* Appends stage rf computing sg's partial results; sg reduces rf. */
static smelt_status apply_rfactor(smelt_ctx *ctx, sch_state *st, const sch_step *step, int si)
{
    sch_stage *sg = &st->stages[si];
    if (sg->inlined || sg->attach_stage >= 0 || sg->n_reduce == 0 || sg->tensor_iter >= 0)
        return step_err(ctx, step, "rfactor needs a reduction computed at root%s", NULL);
    if (!stage_untouched(sg) || sg->n_cache_reads)
        return step_err(ctx, step, "rfactor must come before other steps on the stage%s", NULL);
    if (sg->n_axes + 1 > SMELT_MAX_RANK)
        return step_err(ctx, step, "rfactor would exceed the maximum rank%s", NULL);
    int r = -1;
    for (int i = 0; i < sg->n_reduce; i++)
        if (strcmp(sg->reduce_axes[i].var->name, step->iters[0]) == 0) r = i;
    if (r < 0) return step_err(ctx, step, "no reduction axis named '%s'", step->iters[0]);
    if (step->factor <= 0) return step_err(ctx, step, "rfactor factor must be positive%s", NULL);
    int64_t ext = sg->reduce_axes[r].extent, f = step->factor < ext ? step->factor : ext;
    if (f < 1) f = 1; /* an empty axis */
    char name[256], oname[140], iname[140];
    /* C.rf, then C.rf2, C.rf3... for a stage factored again (a combine tree) */
    snprintf(name, sizeof name, "%s.rf", sg->buf->name);
    for (int k = 2; sch_stage_index(st, name) >= 0; k++)
        snprintf(name, sizeof name, "%s.rf%d", sg->buf->name, k);
    snprintf(oname, sizeof oname, "%s.o", step->iters[0]);
    snprintf(iname, sizeof iname, "%s.i", step->iters[0]);
    for (int i = 0; i < sg->n_axes; i++)
        if (!strcmp(sg->axes[i].var->name, oname) || !strcmp(sg->axes[i].var->name, iname))
            return step_err(ctx, step, "axis names clash with '%s'", iname);
    sch_stage *grown = smelt_arena_alloc(&st->arena, sizeof *grown * (size_t)(st->n_stages + 1));
    if (!grown) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    memcpy(grown, st->stages, sizeof *grown * (size_t)st->n_stages);
    st->stages = grown;
    sg = &st->stages[si];
    sch_stage *rf = &st->stages[st->n_stages++];
    *rf = *sg;
    rf->is_output = false;
    ir_builder *b = &st->b;
    ir_var *outer = ir_var_new(b, oname, SMELT_DT_INT64), *lane = ir_var_new(b, iname, SMELT_DT_INT64);
    int64_t shape[SMELT_MAX_RANK];
    for (int i = 0; i < sg->n_axes; i++) shape[i] = sg->buf->shape[i];
    shape[sg->n_axes] = f;
    rf->buf = ir_buffer_new(b, name, sg->buf->dtype, sg->n_axes + 1, shape, IR_BUF_TEMP);
    if (!rf->buf || !sch_index_add_name(st, st->n_stages - 1))
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    sch_index_readers_stale(st);
    rf->axes[rf->n_axes++] = (ir_axis){lane, f, NULL};
    if (!outer || !lane || !rf->buf) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    rf->rt_mask = NULL;
    stage_set_body(st, rf, rfactor_body(st, sg, r, outer, lane, f, rf));
    /* sg: reduce rf's lanes, over a fresh axis named like them */
    ir_var *k = ir_var_new(b, iname, SMELT_DT_INT64);
    ir_expr *idx[SMELT_MAX_RANK];
    for (int i = 0; i < sg->n_axes; i++) idx[i] = ir_var_ref(b, sg->axes[i].var);
    idx[sg->n_axes] = k ? ir_var_ref(b, k) : NULL;
    ir_axis kaxis = {k, f, NULL};
    stage_set_body(st, sg, ir_reduce(b, sg->body->reduce.op, ir_load(b, rf->buf, sg->n_axes + 1, idx), 1,
                                 &kaxis));
    if (!rf->body || !sg->body) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    SMELT_TRY(init_iters(ctx, st, rf));
    return init_iters(ctx, st, sg);
}

/* ---- tensorize ---- */

static const char *const tensor_kernels[] = {"smelt.gemm_f32", "smelt.transpose_f32"};

bool sch_tensor_kernel_known(const char *name)
{
    for (size_t i = 0; name && i < SMELT_ARRAY_LEN(tensor_kernels); i++)
        if (!strcmp(tensor_kernels[i], name)) return true;
    return false;
}

/* A float32 load, possibly under a no-op cast to float32. */
static bool is_f32_load(const ir_expr *e)
{
    while (e->kind == IR_CAST && e->dtype == SMELT_DT_FLOAT32) e = e->bin.a;
    return e->kind == IR_LOAD && e->load.buf->dtype == SMELT_DT_FLOAT32;
}

/* gemm_f32's computation: a float32 sum over a product of two float32 loads. */
static smelt_status check_gemm_body(smelt_ctx *ctx, const sch_step *step, const sch_stage *sg)
{
    const ir_expr *b = sg->body;
    if (sg->buf->dtype != SMELT_DT_FLOAT32 || b->kind != IR_REDUCE || b->reduce.op != IR_REDUCE_SUM)
        return step_err(ctx, step, "%s needs a float32 sum reduction", step->target);
    const ir_expr *src = b->reduce.src;
    if (src->kind != IR_MUL || src->dtype != SMELT_DT_FLOAT32 || !is_f32_load(src->bin.a) ||
        !is_f32_load(src->bin.b))
        return step_err(ctx, step, "%s needs the reduced value to be a product of two float32 loads",
                        step->target);
    return SMELT_OK;
}

/* transpose_f32's computation: a float32 stage that copies one float32 load. */
static smelt_status check_copy_body(smelt_ctx *ctx, const sch_step *step, const sch_stage *sg)
{
    if (sg->buf->dtype != SMELT_DT_FLOAT32 || !is_f32_load(sg->body))
        return step_err(ctx, step, "%s needs a float32 stage whose value is one float32 load",
                        step->target);
    return SMELT_OK;
}

/* The leaves from pos inward: two data loops and n_red reduce loops, no
 * stage computed at any of them. */
static smelt_status check_kernel_leaves(smelt_ctx *ctx, const sch_state *st, const sch_step *step,
                                        int si, int pos, int want_red)
{
    const sch_stage *sg = &st->stages[si];
    int n_data = 0, n_red = 0;
    for (int k = pos; k < sg->n_leaves; k++) {
        if (sg->iters[sg->leaves[k]].reduce) n_red++;
        else n_data++;
    }
    if (n_data != 2 || n_red != want_red)
        return step_err(ctx, step, want_red ? "%s covers exactly two data loops and one reduce "
                                              "loop; reorder so that they are the innermost three"
                                            : "%s covers exactly two data loops; reorder so that "
                                              "they are the innermost two",
                        step->target);
    for (int i = 0; i < st->n_stages; i++) {
        const sch_stage *p = &st->stages[i];
        if (p->attach_stage == si && !p->inlined && leaf_position(sg, p->attach_iter) >= pos)
            return step_err(ctx, step, "stage '%s' is computed at a loop tensorize would replace",
                            p->buf->name);
    }
    return SMELT_OK;
}

static smelt_status apply_tensorize(smelt_ctx *ctx, sch_state *st, const sch_step *step, int si)
{
    sch_stage *sg = &st->stages[si];
    if (!sch_tensor_kernel_known(step->target))
        return step_err(ctx, step, "unknown micro-kernel '%s'", step->target);
    if (sg->inlined) return step_err(ctx, step, "an inlined stage has no loops%s", NULL);
    int it, pos;
    SMELT_TRY(find_leaf(ctx, step, sg, step->iters[0], &it, &pos));
    bool gemm = !strcmp(step->target, "smelt.gemm_f32");
    SMELT_TRY(gemm ? check_gemm_body(ctx, step, sg) : check_copy_body(ctx, step, sg));
    SMELT_TRY(check_kernel_leaves(ctx, st, step, si, pos, gemm ? 1 : 0));
    sg->tensor_iter = it;
    sg->tensor_kernel = smelt_arena_strdup(&st->arena, step->target);
    return sg->tensor_kernel ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
}

/* After tensorize the covered loops are fixed: no loop-changing steps, no
 * annotations on covered loops. */
static smelt_status check_after_tensorize(smelt_ctx *ctx, const sch_step *step, const sch_stage *sg)
{
    if (sg->tensor_iter < 0) return SMELT_OK;
    switch (step->kind) {
    case SCH_SPLIT:
    case SCH_FUSE:
    case SCH_REORDER:
    case SCH_TENSORIZE:
    case SCH_CACHE_WRITE:
    case SCH_RFACTOR:
        return step_err(ctx, step, "stage is already tensorized; tensorize must be its last loop "
                                   "step%s", NULL);
    case SCH_VECTORIZE:
    case SCH_UNROLL:
    case SCH_PARALLEL:
    case SCH_BIND: {
        int it = step->n_iters ? sch_iter_index(sg, step->iters[0]) : -1;
        int pos = it >= 0 ? leaf_position(sg, it) : -1;
        if (pos >= leaf_position(sg, sg->tensor_iter))
            return step_err(ctx, step, "loop '%s' is replaced by a micro-kernel (tensorize)",
                            step->iters[0]);
        return SMELT_OK;
    }
    default: return SMELT_OK;
    }
}

/* The iteration variables (and consumer or kernel) each kind names: a step
 * from a file or a record may lack them. */
static smelt_status check_arity(smelt_ctx *ctx, const sch_step *step)
{
    int want = 1;
    switch (step->kind) {
    case SCH_FUSE: want = 2; break;
    case SCH_REORDER: want = step->n_iters > 0 ? step->n_iters : 1; break;
    case SCH_COMPUTE_INLINE:
    case SCH_CACHE_WRITE: want = 0; break;
    default: break;
    }
    if (step->n_iters != want || step->n_iters > SCH_MAX_STEP_ITERS)
        return smelt_errf(ctx, SMELT_ERR_ARG, "schedule step on '%s': names %d iteration "
                          "variables, expected %d", step->stage, step->n_iters, want);
    for (int i = 0; i < step->n_iters; i++)
        if (!step->iters[i])
            return smelt_errf(ctx, SMELT_ERR_ARG, "schedule step on '%s': a missing iteration "
                              "variable", step->stage);
    if ((step->kind == SCH_COMPUTE_AT || step->kind == SCH_TENSORIZE || step->kind == SCH_BIND ||
         step->kind == SCH_CACHE_READ) &&
        !step->target)
        return smelt_errf(ctx, SMELT_ERR_ARG, "schedule step on '%s': no consumer, kernel, GPU "
                          "index or buffer named", step->stage);
    return SMELT_OK;
}

static smelt_status apply_step(smelt_ctx *ctx, sch_state *st, const sch_step *step)
{
    int si = sch_stage_index(st, step->stage);
    if (si < 0) return smelt_errf(ctx, SMELT_ERR_ARG, "schedule: no stage named '%s'", step->stage);
    sch_stage *sg = &st->stages[si];
    if (sg->is_placeholder) return step_err(ctx, step, "placeholders have no loops%s", NULL);
    if (sg->ext)
        return step_err(ctx, step, "an extern stage (a loop-IR statement of its op) takes no "
                                   "steps%s", NULL);
    if (step->kind == SCH_WINOGRAD) return step_err(ctx, step, "winograd must be the first step%s", NULL);
    SMELT_TRY(check_arity(ctx, step));
    SMELT_TRY(check_after_tensorize(ctx, step, sg));
    switch (step->kind) {
    case SCH_SPLIT: return apply_split(ctx, st, step, sg);
    case SCH_FUSE: return apply_fuse(ctx, st, step, sg);
    case SCH_REORDER: return apply_reorder(ctx, step, sg);
    case SCH_VECTORIZE:
    case SCH_UNROLL:
    case SCH_PARALLEL: return apply_annotate(ctx, step, sg);
    case SCH_BIND: return apply_bind(ctx, step, sg);
    case SCH_COMPUTE_INLINE: return apply_inline(ctx, st, step, si);
    case SCH_COMPUTE_AT: return apply_compute_at(ctx, st, step, si);
    case SCH_CACHE_WRITE: return apply_cache_write(ctx, st, step, si);
    case SCH_TENSORIZE: return apply_tensorize(ctx, st, step, si);
    case SCH_RFACTOR: return apply_rfactor(ctx, st, step, si);
    case SCH_CACHE_READ: return apply_cache_read(ctx, st, step, si);
    default: return step_err(ctx, step, "unknown step%s", NULL);
    }
}

smelt_status sch_state_build(smelt_ctx *ctx, const te_graph *te, const sch_schedule *s,
                             sch_state **out)
{
    *out = NULL;
    sch_state *st = smelt_calloc(1, sizeof *st);
    if (!st) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_arena_init(&st->arena);
    ir_builder_init(&st->b, &st->arena);
    st->b.next_id = 1 << 20; /* keep var ids distinct from the te graph's */
    int first = 0;
    smelt_status r = SMELT_OK;
    if (s && s->n > 0 && s->steps[0].kind == SCH_WINOGRAD) {
        r = sch_winograd_te(ctx, te, s->steps[0].stage, s->steps[0].factor, &st->owned_te);
        if (r != SMELT_OK) {
            sch_state_free(st);
            return r;
        }
        te = st->owned_te;
        first = 1;
    }
    st->te = te;
    st->n_stages = te->tensors.len;
    st->stages = smelt_arena_alloc(&st->arena, sizeof *st->stages * (size_t)(st->n_stages + 1));
    r = st->stages ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; r == SMELT_OK && i < te->tensors.len; i++) {
        r = init_stage(ctx, st, &st->stages[i], te->tensors.items[i]);
        if (r == SMELT_OK && !sch_index_add_name(st, i)) r = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    for (int i = first; r == SMELT_OK && s && i < s->n; i++) r = apply_step(ctx, st, &s->steps[i]);
    if (r == SMELT_OK && st->b.failed) r = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (r != SMELT_OK) {
        sch_state_free(st);
        return r;
    }
    *out = st;
    return SMELT_OK;
}

void sch_state_free(sch_state *st)
{
    if (!st) return;
    te_graph_free(st->owned_te);
    smelt_arena_fini(&st->arena);
    smelt_free(st);
}
