/* Random legal schedules: the schedule fuzzer's generator and the tuner's
 * sampler.  Steps are proposed one at a time against the replayed state;
 * a step the state rejects is dropped, so every result is legal. */
#include <string.h>

#include "sched/sched.h"

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int rng_below(uint64_t *s, int n) { return n > 0 ? (int)(rng_next(s) % (uint64_t)n) : 0; }

/* Try to append step; keep it only if the schedule still replays. */
static smelt_status try_step(smelt_ctx *ctx, const te_graph *te, sch_schedule *s,
                             const sch_step *step, sch_state **st)
{
    SMELT_TRY(sch_add(ctx, s, step));
    smelt_ctx local = {.status = SMELT_OK};
    sch_state *next;
    if (sch_state_build(&local, te, s, &next) != SMELT_OK) {
        s->n--; /* illegal here: drop it */
        return local.status == SMELT_ERR_NOMEM ? smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory")
                                               : SMELT_OK;
    }
    sch_state_free(*st);
    *st = next;
    return SMELT_OK;
}

static const char *random_leaf(const sch_stage *sg, uint64_t *rng)
{
    if (sg->n_leaves == 0) return NULL;
    return sg->iters[sg->leaves[rng_below(rng, sg->n_leaves)]].name;
}

static void propose_step(const sch_state *st, int si, uint64_t *rng, sch_step *step,
                         const char **names)
{
    const sch_stage *sg = &st->stages[si];
    memset(step, 0, sizeof *step);
    step->stage = sg->buf->name;
    int kind = rng_below(rng, 9);
    switch (kind) {
    case 0:
    case 1: { /* split */
        step->kind = SCH_SPLIT;
        step->n_iters = 1;
        step->iters[0] = random_leaf(sg, rng);
        step->factor = 1 + rng_below(rng, 8);
        break;
    }
    case 2: { /* reorder: random permutation of all leaves */
        step->kind = SCH_REORDER;
        int n = sg->n_leaves < SCH_MAX_STEP_ITERS ? sg->n_leaves : SCH_MAX_STEP_ITERS;
        for (int i = 0; i < n; i++) names[i] = sg->iters[sg->leaves[i]].name;
        for (int i = n - 1; i > 0; i--) {
            int j = rng_below(rng, i + 1);
            const char *t = names[i];
            names[i] = names[j];
            names[j] = t;
        }
        step->n_iters = n;
        for (int i = 0; i < n; i++) step->iters[i] = names[i];
        break;
    }
    case 3: { /* fuse two adjacent leaves */
        step->kind = SCH_FUSE;
        if (sg->n_leaves < 2) break;
        int p = rng_below(rng, sg->n_leaves - 1);
        step->n_iters = 2;
        step->iters[0] = sg->iters[sg->leaves[p]].name;
        step->iters[1] = sg->iters[sg->leaves[p + 1]].name;
        break;
    }
    case 4:
        step->kind = SCH_VECTORIZE;
        step->n_iters = 1;
        step->iters[0] = random_leaf(sg, rng);
        break;
    case 5:
        step->kind = SCH_UNROLL;
        step->n_iters = 1;
        step->iters[0] = random_leaf(sg, rng);
        break;
    case 6:
        step->kind = SCH_PARALLEL;
        step->n_iters = 1;
        step->iters[0] = random_leaf(sg, rng);
        break;
    case 8: /* rfactor a reduce axis (legal only before other steps) */
        step->kind = SCH_RFACTOR;
        if (sg->n_reduce == 0) break;
        step->n_iters = 1;
        step->iters[0] = sg->reduce_axes[rng_below(rng, sg->n_reduce)].var->name;
        step->factor = 1 + rng_below(rng, 8);
        break;
    default: { /* compute_at a consumer's loop, or inline */
        int ci = rng_below(rng, st->n_stages);
        const sch_stage *c = &st->stages[ci];
        if (rng_below(rng, 3) == 0 || c->is_placeholder || c->n_leaves == 0) {
            step->kind = SCH_COMPUTE_INLINE;
        } else {
            step->kind = SCH_COMPUTE_AT;
            step->target = c->buf->name;
            step->n_iters = 1;
            step->iters[0] = random_leaf(c, rng);
        }
        break;
    }
    }
}

smelt_status sch_random(smelt_ctx *ctx, const te_graph *te, uint64_t seed, int n_steps,
                        sch_schedule *out)
{
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull | 1;
    sch_state *st;
    SMELT_TRY(sch_state_build(ctx, te, out, &st));
    smelt_status s = SMELT_OK;
    for (int k = 0; k < n_steps && s == SMELT_OK; k++) {
        int si = rng_below(&rng, st->n_stages);
        if (st->stages[si].is_placeholder || st->stages[si].ext) continue;
        sch_step step;
        const char *names[SCH_MAX_STEP_ITERS];
        propose_step(st, si, &rng, &step, names);
        if (step.n_iters == 0 && step.kind != SCH_COMPUTE_INLINE) continue;
        bool missing = false;
        for (int i = 0; i < step.n_iters; i++) missing |= step.iters[i] == NULL;
        if (!missing) s = try_step(ctx, te, out, &step, &st);
    }
    sch_state_free(st);
    return s;
}
