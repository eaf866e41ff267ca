/* Schedule step lists: building, printing, parsing. */
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"

static const char *const step_names[] = {
    [SCH_SPLIT] = "split",
    [SCH_FUSE] = "fuse",
    [SCH_REORDER] = "reorder",
    [SCH_VECTORIZE] = "vectorize",
    [SCH_UNROLL] = "unroll",
    [SCH_PARALLEL] = "parallel",
    [SCH_COMPUTE_INLINE] = "compute_inline",
    [SCH_COMPUTE_AT] = "compute_at",
    [SCH_CACHE_WRITE] = "cache_write",
    [SCH_TENSORIZE] = "tensorize",
    [SCH_RFACTOR] = "rfactor",
    [SCH_WINOGRAD] = "winograd",
    [SCH_BIND] = "bind",
    [SCH_CACHE_READ] = "cache_read",
};
_Static_assert(SMELT_ARRAY_LEN(step_names) == SCH_KIND_COUNT_, "step names");

void sch_schedule_init(sch_schedule *s)
{
    memset(s, 0, sizeof *s);
    smelt_arena_init(&s->arena);
}

void sch_schedule_fini(sch_schedule *s)
{
    smelt_free(s->steps);
    smelt_arena_fini(&s->arena);
    memset(s, 0, sizeof *s);
}

static const char *copy_str(sch_schedule *s, const char *str)
{
    return str ? smelt_arena_strdup(&s->arena, str) : NULL;
}

smelt_status sch_add(smelt_ctx *ctx, sch_schedule *s, const sch_step *step)
{
    if (step->n_iters < 0 || step->n_iters > SCH_MAX_STEP_ITERS)
        return smelt_errf(ctx, SMELT_ERR_ARG, "schedule step with %d iters", step->n_iters);
    if (s->n == s->cap) {
        int ncap = s->cap ? s->cap * 2 : 16;
        sch_step *n = smelt_realloc(s->steps, sizeof *n * (size_t)s->cap, sizeof *n * (size_t)ncap);
        if (!n) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        s->steps = n;
        s->cap = ncap;
    }
    sch_step c = *step;
    c.stage = copy_str(s, step->stage);
    c.target = copy_str(s, step->target);
    bool ok = c.stage && (!step->target || c.target);
    for (int i = 0; i < c.n_iters; i++) ok &= (c.iters[i] = copy_str(s, step->iters[i])) != NULL;
    if (!ok) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    s->steps[s->n++] = c;
    return SMELT_OK;
}

smelt_status sch_split(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *iter,
                       int64_t factor)
{
    sch_step st = {.kind = SCH_SPLIT, .stage = stage, .n_iters = 1, .iters = {iter}, .factor = factor};
    return sch_add(ctx, s, &st);
}

smelt_status sch_fuse(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *outer,
                      const char *inner)
{
    sch_step st = {.kind = SCH_FUSE, .stage = stage, .n_iters = 2, .iters = {outer, inner}};
    return sch_add(ctx, s, &st);
}

smelt_status sch_reorder(smelt_ctx *ctx, sch_schedule *s, const char *stage, int n,
                         const char *const *iters)
{
    if (n > SCH_MAX_STEP_ITERS) return smelt_errf(ctx, SMELT_ERR_ARG, "reorder of %d iters", n);
    sch_step st = {.kind = SCH_REORDER, .stage = stage, .n_iters = n};
    for (int i = 0; i < n; i++) st.iters[i] = iters[i];
    return sch_add(ctx, s, &st);
}

smelt_status sch_annotate(smelt_ctx *ctx, sch_schedule *s, sch_kind kind, const char *stage,
                          const char *iter)
{
    sch_step st = {.kind = kind, .stage = stage, .n_iters = 1, .iters = {iter}};
    return sch_add(ctx, s, &st);
}

smelt_status sch_compute_inline(smelt_ctx *ctx, sch_schedule *s, const char *stage)
{
    sch_step st = {.kind = SCH_COMPUTE_INLINE, .stage = stage};
    return sch_add(ctx, s, &st);
}

smelt_status sch_compute_at(smelt_ctx *ctx, sch_schedule *s, const char *stage,
                            const char *consumer, const char *iter)
{
    sch_step st = {.kind = SCH_COMPUTE_AT, .stage = stage, .n_iters = 1, .iters = {iter},
                   .target = consumer};
    return sch_add(ctx, s, &st);
}

smelt_status sch_cache_write(smelt_ctx *ctx, sch_schedule *s, const char *stage)
{
    sch_step st = {.kind = SCH_CACHE_WRITE, .stage = stage};
    return sch_add(ctx, s, &st);
}

smelt_status sch_rfactor(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *iter,
                         int64_t factor)
{
    sch_step st = {.kind = SCH_RFACTOR, .stage = stage, .n_iters = 1, .iters = {iter},
                   .factor = factor};
    return sch_add(ctx, s, &st);
}

smelt_status sch_tensorize(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *iter,
                           const char *kernel)
{
    sch_step st = {.kind = SCH_TENSORIZE, .stage = stage, .n_iters = 1, .iters = {iter},
                   .target = kernel};
    return sch_add(ctx, s, &st);
}

smelt_status sch_bind(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *iter,
                      const char *tag)
{
    sch_step st = {.kind = SCH_BIND, .stage = stage, .n_iters = 1, .iters = {iter}, .target = tag};
    return sch_add(ctx, s, &st);
}

smelt_status sch_cache_read(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *buffer,
                            const char *iter)
{
    sch_step st = {.kind = SCH_CACHE_READ, .stage = stage, .n_iters = 1, .iters = {iter},
                   .target = buffer};
    return sch_add(ctx, s, &st);
}

smelt_status sch_tile(smelt_ctx *ctx, sch_schedule *s, const char *stage, const char *i0,
                      const char *i1, int64_t f0, int64_t f1)
{
    char o0[128], in0[128], o1[128], in1[128];
    snprintf(o0, sizeof o0, "%s.o", i0);
    snprintf(in0, sizeof in0, "%s.i", i0);
    snprintf(o1, sizeof o1, "%s.o", i1);
    snprintf(in1, sizeof in1, "%s.i", i1);
    SMELT_TRY(sch_split(ctx, s, stage, i0, f0));
    SMELT_TRY(sch_split(ctx, s, stage, i1, f1));
    const char *order[4] = {o0, o1, in0, in1};
    return sch_reorder(ctx, s, stage, 4, order);
}

void sch_schedule_print(const sch_schedule *s, smelt_strbuf *out)
{
    for (int i = 0; i < s->n; i++) {
        const sch_step *st = &s->steps[i];
        smelt_strbuf_printf(out, "%s %s", step_names[st->kind], st->stage);
        if (st->kind == SCH_COMPUTE_AT || st->kind == SCH_CACHE_READ)
            smelt_strbuf_printf(out, " %s", st->target);
        for (int k = 0; k < st->n_iters; k++) smelt_strbuf_printf(out, " %s", st->iters[k]);
        if (st->kind == SCH_SPLIT || st->kind == SCH_RFACTOR || st->kind == SCH_WINOGRAD) smelt_strbuf_printf(out, " %lld", (long long)st->factor);
        if (st->kind == SCH_TENSORIZE || st->kind == SCH_BIND) smelt_strbuf_printf(out, " %s", st->target);
        smelt_strbuf_append(out, "\n");
    }
}

/* ---- parsing ---- */

#define PARSE_MAX_WORDS (SCH_MAX_STEP_ITERS + 4)

/* The words of a line, or PARSE_MAX_WORDS + 1 when it has more than that
 * (refused: the rest of the line must not be dropped silently). */
static int split_words(char *line, char **words)
{
    int n = 0;
    for (char *tok = strtok(line, " \t\r"); tok; tok = strtok(NULL, " \t\r")) {
        if (n == PARSE_MAX_WORDS) return PARSE_MAX_WORDS + 1;
        words[n++] = tok;
    }
    return n;
}

static smelt_status parse_factor(smelt_ctx *ctx, const char *w, int line, int64_t *out)
{
    char *end;
    long long v = strtoll(w, &end, 10);
    if (*end || v <= 0)
        return smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: bad factor '%s'", line, w);
    *out = v;
    return SMELT_OK;
}

static smelt_status parse_step(smelt_ctx *ctx, char **w, int n, int line, sch_schedule *out)
{
    int kind = -1;
    for (int k = 0; k < SCH_KIND_COUNT_; k++)
        if (strcmp(w[0], step_names[k]) == 0) kind = k;
    if (strcmp(w[0], "tile") == 0) {
        int64_t f0 = 0, f1 = 0;
        if (n != 6) return smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: tile STAGE I0 I1 F0 F1", line);
        SMELT_TRY(parse_factor(ctx, w[4], line, &f0));
        SMELT_TRY(parse_factor(ctx, w[5], line, &f1));
        return sch_tile(ctx, out, w[1], w[2], w[3], f0, f1);
    }
    if (kind < 0) return smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: unknown step '%s'", line, w[0]);
    if (n < 2) return smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: missing stage", line);
    sch_step st = {.kind = (sch_kind)kind, .stage = w[1]};
    int first_iter = 2, last = n;
    if (kind == SCH_CACHE_READ) {
        if (n != 4)
            return smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: cache_read STAGE BUFFER ITER", line);
        st.target = w[2];
        first_iter = 3;
    }
    if (kind == SCH_COMPUTE_AT) {
        if (n != 4) return smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: compute_at STAGE CONSUMER ITER", line);
        st.target = w[2];
        first_iter = 3;
    }
    if (kind == SCH_SPLIT || kind == SCH_RFACTOR) {
        if (n != 4)
            return smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: %s STAGE ITER FACTOR", line, w[0]);
        SMELT_TRY(parse_factor(ctx, w[3], line, &st.factor));
        last = 3;
    }
    if (kind == SCH_WINOGRAD) {
        if (n != 3) return smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: winograd STAGE M", line);
        SMELT_TRY(parse_factor(ctx, w[2], line, &st.factor));
        return sch_add(ctx, out, &st);
    }
    if (kind == SCH_TENSORIZE) {
        if (n != 4) return smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: tensorize STAGE ITER KERNEL", line);
        st.target = w[3];
        last = 3;
    }
    if (kind == SCH_BIND) {
        if (n != 4)
            return smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: bind STAGE ITER blockIdx.x|threadIdx.x",
                              line);
        st.target = w[3];
        last = 3;
    }
    if (last - first_iter > SCH_MAX_STEP_ITERS)
        return smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: more than %d loops in one step "
                          "(SCH_MAX_STEP_ITERS)", line, SCH_MAX_STEP_ITERS);
    for (int i = first_iter; i < last; i++) st.iters[st.n_iters++] = w[i];
    return sch_add(ctx, out, &st);
}

smelt_status sch_schedule_parse(smelt_ctx *ctx, const char *text, sch_schedule *out)
{
    size_t len = strlen(text);
    char *copy = smelt_alloc(len + 1);
    if (!copy) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    memcpy(copy, text, len + 1);
    smelt_status s = SMELT_OK;
    int line_no = 0;
    for (char *line = copy, *next; s == SMELT_OK && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        line_no++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *w[PARSE_MAX_WORDS];
        int n = split_words(line, w);
        if (n > PARSE_MAX_WORDS)
            s = smelt_errf(ctx, SMELT_ERR_ARG, "schedule line %d: more than %d words", line_no,
                           PARSE_MAX_WORDS);
        else if (n > 0)
            s = parse_step(ctx, w, n, line_no, out);
    }
    smelt_free(copy);
    return s;
}
