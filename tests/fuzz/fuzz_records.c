/* libFuzzer harness: tuning records and the schedule text inside them.
 *
 * Each input is a records file (JSON lines).  Loading must succeed or fail
 * with a status and a message.  Then every unit of the tiny CNN is lowered
 * with the loaded records' schedules as stored schedules (record k for unit
 * k, whatever its workload key), so every schedule text goes through the
 * parser, the replay checks and lowering: an illegal schedule must be
 * ignored (the default rules schedule that unit), a legal one must lower,
 * and nothing may crash or report an internal error.  All allocations go
 * through the budget allocator.  See docs/fuzzing.md.
 */
#include <stdlib.h>
#include <string.h>

#include "api/smelt_internal.h"
#include "codegen/target.h"
#include "fuzz_util.h"
#include "tune/tune.h"

#define MAX_RECORDS_USED 64

typedef struct any_record {
    const tune_db *db;
    int n, next; /* records used: the first n */
} any_record;

/* Hand out the records' schedules in turn, for any key. */
static const char *next_schedule(void *user, const char *key)
{
    (void)key;
    any_record *a = user;
    if (a->n == 0) return NULL;
    return a->db->recs[a->next++ % a->n].schedule;
}

static smelt_model *tiny_cnn(void)
{
    static smelt_model *m;
    if (m) return m;
    smelt_ctx *ctx = smelt_ctx_new();
    m = smelt_model_load(ctx, SMELT_TINY_CNN_PATH);
    if (!m || smelt_model_optimize(ctx, m, NULL) != SMELT_OK) {
        fprintf(stderr, "fuzz_records: cannot load %s: %s\n", SMELT_TINY_CNN_PATH, smelt_ctx_message(ctx));
        abort();
    }
    smelt_ctx_free(ctx);
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    smelt_model *m = tiny_cnn(); /* before the budget: it lives for the process */
    fuzz_use_budget_allocator();
    smelt_ctx *ctx = smelt_ctx_new();
    tune_db db;
    if (tune_db_load_bytes(ctx, data, size, NULL, &db) != SMELT_OK) {
        fuzz_check_failed(ctx);
        smelt_ctx_free(ctx);
        smelt_set_allocator(NULL);
        return 0;
    }
    any_record a = {&db, db.n < MAX_RECORDS_USED ? db.n : MAX_RECORDS_USED, 0};
    sch_source src = {"fuzz", next_schedule, &a};
    lower_options lo = {.hw = &cg_target_find("avx512")->hw, .schedules = &src};
    lowered_program *lp = NULL;
    if (lower_graph(ctx, m->graph, &lo, &lp) != SMELT_OK) fuzz_check_failed(ctx);
    if (lp) {
        smelt_strbuf c;
        smelt_strbuf_init(&c);
        const cg_target *t = cg_target_find("avx512");
        smelt_ctx_clear(ctx);
        if (cg_emit_program(ctx, &lp->prog, t, &c) != SMELT_OK) fuzz_check_failed(ctx);
        smelt_strbuf_fini(&c);
    }
    lowered_program_free(lp);
    tune_db_fini(&db);
    smelt_ctx_free(ctx);
    smelt_set_allocator(NULL);
    return 0;
}
