/* libFuzzer harness: schedule files written by people (`--schedule FILE`).
 *
 * Each input is a schedule file's text: "task NAME" lines, each followed by
 * schedule steps (src/sched/user.c).  Parsing must succeed or fail with a
 * status and a message; a parsed file is then applied to the tiny CNN as
 * compile does it (lower_graph with the file as user_schedules, then the
 * check that every entry named a function), and the program, when it
 * lowers, is emitted as C.  An entry whose steps do not replay must be an
 * error naming the line and the step, never a crash or an internal error.
 * Inputs holding a NUL are refused as sch_user_file_load refuses them.
 * All allocations go through the budget allocator.  See docs/fuzzing.md.
 *
 * SMELT_FUZZ_VERBOSE=1 prints each input's fate and the tiny CNN's function
 * names (what a seed's "task" lines may name).
 */
#include <stdlib.h>
#include <string.h>

#include "api/smelt_internal.h"
#include "codegen/target.h"
#include "fuzz_util.h"
#include "sched/sched.h"
#include "tune/tune.h"

#define FUZZ_SCHEDULE_TARGET "avx512"

static smelt_model *tiny_cnn(void)
{
    static smelt_model *m;
    if (m) return m;
    smelt_ctx *ctx = smelt_ctx_new();
    m = smelt_model_load(ctx, SMELT_TINY_CNN_PATH);
    if (!m || smelt_model_optimize(ctx, m, NULL) != SMELT_OK) {
        fprintf(stderr, "fuzz_schedule: cannot load %s: %s\n", SMELT_TINY_CNN_PATH,
                smelt_ctx_message(ctx));
        abort();
    }
    smelt_ctx_free(ctx);
    return m;
}

static bool verbose(void)
{
    const char *v = getenv("SMELT_FUZZ_VERBOSE");
    return v && *v == '1';
}

static void emit(smelt_ctx *ctx, const lowered_program *lp, const cg_target *t)
{
    smelt_strbuf c;
    smelt_strbuf_init(&c);
    if (cg_emit_program(ctx, &lp->prog, t, &c) != SMELT_OK) fuzz_check_failed(ctx);
    smelt_strbuf_fini(&c);
}

/* Lower the tiny CNN with the file's schedules, as compile does. */
static void apply(smelt_ctx *ctx, sch_user_file *uf, const char *target_key)
{
    const cg_target *t = cg_target_find(FUZZ_SCHEDULE_TARGET);
    uf->target_key = target_key;
    lower_options lo = {.hw = &t->hw, .user_schedules = uf};
    lowered_program *lp = NULL;
    smelt_status s = lower_graph(ctx, tiny_cnn()->graph, &lo, &lp);
    if (s == SMELT_OK) s = sch_user_file_check_used(ctx, uf);
    if (s != SMELT_OK) fuzz_check_failed(ctx);
    if (verbose())
        fprintf(stderr, "  %s; functions: %s\n", s == SMELT_OK ? "lowered" : smelt_ctx_message(ctx),
                uf->task_names ? uf->task_names : "none");
    if (s == SMELT_OK && lp) emit(ctx, lp, t);
    lowered_program_free(lp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char target_key[256];
    if (!target_key[0]) { /* before the budget: the model lives for the process */
        smelt_ctx *kctx = smelt_ctx_new();
        tiny_cnn();
        if (tune_target_key(kctx, cg_target_find(FUZZ_SCHEDULE_TARGET), target_key,
                            sizeof target_key) != SMELT_OK)
            abort();
        smelt_ctx_free(kctx);
    }
    if (memchr(data, 0, size)) return 0; /* refused by the loader before parsing */
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    fuzz_use_budget_allocator();
    smelt_ctx *ctx = smelt_ctx_new();
    sch_user_file uf;
    if (sch_user_file_parse(ctx, "fuzz.sched", text, &uf) != SMELT_OK) {
        fuzz_check_failed(ctx);
        if (verbose()) fprintf(stderr, "  parse: %s\n", smelt_ctx_message(ctx));
    } else {
        apply(ctx, &uf, target_key);
        sch_user_file_fini(&uf);
    }
    smelt_ctx_free(ctx);
    smelt_set_allocator(NULL);
    free(text);
    return 0;
}
