/* Default schedules: correct for any shape, reasonable without tuning.
 *
 * Intermediate elementwise stages are inlined into their consumers.  Every
 * other stage keeps its data axes outermost (fused and run in parallel),
 * then its reduction axes, then the innermost data axis split by the vector
 * width and vectorised: the i-k-j order of a matmul, and the same shape for
 * convolutions (output width innermost) and reductions over inner axes.
 */
#include <string.h>

#include "sched/sched.h"

/* Work below this many output elements is not worth waking threads. */
#define DEFAULT_PARALLEL_MIN_ELEMS 4096

static bool stage_is_output(const te_graph *g, const te_tensor *t)
{
    for (int i = 0; i < g->outputs.len; i++)
        if (g->outputs.items[i] == t) return true;
    return false;
}

static int reduce_axes(const te_tensor *t, const char **names)
{
    if (!t->body || t->body->kind != IR_REDUCE) return 0;
    for (int i = 0; i < t->body->reduce.n_axes; i++) names[i] = t->body->reduce.axes[i].var->name;
    return t->body->reduce.n_axes;
}

static smelt_status schedule_stage(smelt_ctx *ctx, const te_tensor *t, int vector_width,
                                   sch_schedule *s)
{
    const char *name = t->buf->name;
    int rank = t->n_axes;
    const char *rnames[SMELT_MAX_RANK];
    int nr = reduce_axes(t, rnames);
    if (rank == 0) return SMELT_OK;
    const char *last = t->axes[rank - 1].var->name;
    int64_t last_ext = t->axes[rank - 1].extent;
    bool vectorize = vector_width > 1 && last_ext >= 4;
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) numel *= t->axes[i].extent;

    /* order: leading data axes, reduce axes, last data axis */
    if (nr > 0 && vectorize) {
        const char *order[SCH_MAX_STEP_ITERS];
        int n = 0;
        for (int i = 0; i < rank - 1; i++) order[n++] = t->axes[i].var->name;
        for (int i = 0; i < nr && n < SCH_MAX_STEP_ITERS - 1; i++) order[n++] = rnames[i];
        order[n++] = last;
        SMELT_TRY(sch_reorder(ctx, s, name, n, order));
    }
    char outer[256], inner[256];
    snprintf(outer, sizeof outer, "%s.o", last);
    snprintf(inner, sizeof inner, "%s.i", last);
    if (vectorize && last_ext > vector_width) {
        SMELT_TRY(sch_split(ctx, s, name, last, vector_width));
        SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, name, inner));
    } else if (vectorize) {
        SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, name, last));
    }
    if (numel < DEFAULT_PARALLEL_MIN_ELEMS) return SMELT_OK;
    /* parallel over the fused leading data axes (or the vector loop's outer part) */
    char fused[1024];
    if (rank >= 2) {
        snprintf(fused, sizeof fused, "%s", t->axes[0].var->name);
        for (int i = 1; i < rank - 1; i++) {
            SMELT_TRY(sch_fuse(ctx, s, name, fused, t->axes[i].var->name));
            size_t len = strlen(fused);
            snprintf(fused + len, sizeof fused - len, ".%s", t->axes[i].var->name);
        }
        if (nr == 0 && !(vectorize && last_ext > vector_width)) {
            SMELT_TRY(sch_fuse(ctx, s, name, fused, last));
            size_t len = strlen(fused);
            snprintf(fused + len, sizeof fused - len, ".%s", last);
        } else if (nr == 0) {
            SMELT_TRY(sch_fuse(ctx, s, name, fused, outer));
            size_t len = strlen(fused);
            snprintf(fused + len, sizeof fused - len, ".%s", outer);
        }
        return sch_annotate(ctx, s, SCH_PARALLEL, name, fused);
    }
    return sch_annotate(ctx, s, SCH_PARALLEL, name,
                        vectorize && last_ext > vector_width ? outer : last);
}

smelt_status sch_default(smelt_ctx *ctx, const te_graph *g, int vector_width, sch_schedule *s)
{
    for (int i = 0; i < g->tensors.len; i++) {
        const te_tensor *t = g->tensors.items[i];
        if (t->kind != TE_COMPUTE) continue;
        bool is_reduce = t->body && t->body->kind == IR_REDUCE;
        if (!stage_is_output(g, t) && !is_reduce) {
            SMELT_TRY(sch_compute_inline(ctx, s, t->buf->name));
            continue;
        }
        SMELT_TRY(schedule_stage(ctx, t, vector_width, s));
    }
    return SMELT_OK;
}
