/* The lowering pipeline, in order.  Each step states the invariant it
 * establishes; at SMELT_DEBUG >= 3 the IR after each step is printed, or
 * "(unchanged)" when the step returned its input. */
#include <string.h>

#include "lower/dense_check.h"
#include "lower/lower.h"
#include "tir/passes.h"

smelt_status lower_params(smelt_ctx *ctx, const sch_state *st, ir_builder *b, int *n,
                          ir_buffer ***params)
{
    int count = 0;
    for (int i = 0; i < st->n_stages; i++)
        if (st->stages[i].is_placeholder) count++;
    count += st->te->outputs.len;
    ir_buffer **p = smelt_arena_alloc(b->arena, sizeof(ir_buffer *) * (size_t)(count + 1));
    if (!p) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    int k = 0;
    for (int i = 0; i < st->n_stages; i++)
        if (st->stages[i].is_placeholder) p[k++] = st->stages[i].buf;
    for (int i = 0; i < st->te->outputs.len; i++) p[k++] = ((te_tensor *)st->te->outputs.items[i])->buf;
    *n = count;
    *params = p;
    return SMELT_OK;
}

static void log_step(const char *func, const char *step, const ir_stmt *before,
                     const ir_stmt *after)
{
    FILE *f = smelt_tir_dump();
    if (!f && smelt_debug_level() < 3) return;
    if (!f) f = stderr;
    fprintf(f, "lower %s: %s", func, step);
    if (before == after) {
        fprintf(f, " (unchanged)\n");
        return;
    }
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    ir_stmt_print(after, 1, &sb);
    fprintf(f, "\n%s", smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
}

/* Whether s needs run-time dim variable v: its loops use it, or the
 * extents of a buffer laid out at the run's dims that it accesses do
 * (flattening puts them into the indices). */
static bool needs_rt_var(const ir_stmt *s, const ir_var *v, const ir_buffer *const *dense, int n_dense)
{
    if (ir_stmt_uses_var(s, v)) return true;
    for (int i = 0; i < n_dense; i++)
        for (int d = 0; d < dense[i]->rank; d++)
            if (dense[i]->rt_extent[d] && ir_expr_uses_var(dense[i]->rt_extent[d], v)) return true;
    return false;
}

/* The run-time dims the nests use, read from the dims parameter once at the
 * function's top (clamped to [1, max]: what the runtime checked, and what
 * bounds analysis may assume). */
static ir_stmt *bind_rt_dims(const te_graph *te, ir_builder *b, ir_stmt *s,
                             const ir_buffer *const *dense, int n_dense)
{
    if (s && s->kind == IR_STMT_ALLOCATE) { /* inside the root temporaries (codegen's workspace) */
        ir_stmt *body = bind_rt_dims(te, b, s->alloc.body, dense, n_dense);
        return body == s->alloc.body ? s : ir_allocate(b, s->alloc.buf, body);
    }
    for (int k = te->n_rt - 1; s && te->rt_dims && k >= 0; k--) {
        if (!needs_rt_var(s, te->rt_var[k], dense, n_dense)) continue;
        ir_expr *idx = ir_int(b, k);
        ir_expr *v = ir_load(b, te->rt_dims->buf, 1, &idx);
        v = ir_binary(b, IR_MAX, ir_binary(b, IR_MIN, v, ir_int(b, te->rt[k].max)), ir_int(b, 1));
        s = ir_let(b, te->rt_var[k], v, s);
    }
    return s;
}

/* The buffers of st laid out at the run's dims (placeholders and outputs). */
static int dense_buffers(const sch_state *st, const ir_buffer **out, int cap)
{
    int n = 0;
    for (int i = 0; i < st->n_stages && n < cap; i++)
        if (ir_buffer_is_dense_rt(st->stages[i].buf)) out[n++] = st->stages[i].buf;
    return n;
}

smelt_status lower_func(smelt_ctx *ctx, const sch_state *st, ir_builder *b, const char *name,
                        ir_func **out)
{
    const ir_buffer *refused = NULL;
    return lower_func_dense(ctx, st, b, name, out, &refused);
}

smelt_status lower_func_dense(smelt_ctx *ctx, const sch_state *st, ir_builder *b, const char *name,
                              ir_func **out, const ir_buffer **dense_refused)
{
    *out = NULL;
    *dense_refused = NULL;
    ir_stmt *s, *prev;
    const ir_buffer *dense[64];
    int n_dense = dense_buffers(st, dense, 64);

    /* Loop nests in schedule order; indices are multi-dimensional, guards
     * protect every split that overshoots its extent. */
    SMELT_TRY(lower_build_nests(ctx, st, b, &s));
    s = bind_rt_dims(st->te, b, s, dense, n_dense);
    log_step(name, "build nests", NULL, s);

    /* Constants folded, index arithmetic canonical, provable guards gone. */
    prev = s;
    s = tir_simplify(b, s);
    log_step(name, "simplify", prev, s);

    /* Loops split so that main bodies carry no bounds checks. */
    prev = s;
    s = tir_partition_loops(b, s);
    log_step(name, "partition loops", prev, s);

    /* Buffers laid out at the run's dims are accessed inside its extents. */
    if (n_dense && (*dense_refused = lower_dense_refused(b, st->te, s))) {
        if (b->failed) { /* out of memory while proving: no verdict */
            *dense_refused = NULL;
            return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory lowering %s", name);
        }
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "%s: an access to '%s' is not proved inside "
                          "the run's extents", name, (*dense_refused)->name);
    }

    /* Every load and store has one flat row-major index. */
    prev = s;
    s = tir_flatten_storage(b, s);
    log_step(name, "flatten storage", prev, s);

    /* Vectorized loops codegen cannot vectorize safely become serial. */
    prev = s;
    s = tir_legalize_vectorize(b, s);
    log_step(name, "legalize vectorize", prev, s);

    prev = s;
    s = tir_simplify(b, s);
    log_step(name, "simplify", prev, s);

    if (!s || b->failed) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory lowering %s", name);
    ir_func *f = smelt_arena_alloc(b->arena, sizeof *f);
    if (!f) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    f->name = name;
    f->body = s;
    SMELT_TRY(lower_params(ctx, st, b, &f->n_params, &f->params));
    *out = f;
    return SMELT_OK;
}
