/* libFuzzer harness: differential testing of the compiled path.
 *
 * A silent wrong answer is worse than a crash.  Each input is a byte recipe
 * (recipe_model.c, the pipeline harness's generator) that becomes a small
 * model; the model runs on the same random inputs through
 *
 *   - the reference executor (the oracle),
 *   - compiled code for the host target at -O2 on 2 threads,
 *   - compiled code for the generic (scalar C) target at -O0 on 1 thread,
 *
 * and every compiled output must match the reference's (dtype, shape, and
 * values: integers exactly, floats within DIFF_RTOL/DIFF_ATOL, NaN where the
 * reference has NaN).  A compiled run that fails must fail with a status and
 * a message; when the reference succeeded it may only fail because smelt
 * does not compile something (unsupported, a limit, memory): a data error
 * there means the compiled code checks something the reference does not.
 * Models the reference rejects are skipped.
 *
 * Each compiled configuration runs the system C compiler (through the
 * compile cache), so this harness does a few executions a second: run it
 * for long stretches (tests/fuzz/run_fuzz.sh with FUZZ_HARNESS=differential).
 * SMELT_FUZZ_VERBOSE=1 prints each model's fate; SMELT_FUZZ_SAVE_MODEL=FILE
 * keeps the last model, to replay a mismatch with `smelt check`-style tools.
 *
 * SMELT_FUZZ_MODEL_INPUT=1 takes each input as a ModelProto instead of a
 * recipe.  A recipe picks ops by their index in ops.def (and patterns by
 * op bytes), so it means another model once ops are added: mismatches are
 * kept as the models they made (tests/fuzz/regressions/differential_models/,
 * replayed this way by fuzz/differential_models_replay).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/smelt_internal.h"
#include "fuzz_util.h"
#include "graph/graph.h"
#include "io/io.h"
#include "recipe_model.h"

/* Floats: compiled code may fuse, reassociate reductions and use vector
 * exp/tanh approximations (max 2 ulp); chains of up to MAX_NODES ops on
 * inputs in [-1, 1) stay well inside these bounds.  float16 and bfloat16
 * may round after each operation or once at the end (Sum of four bfloat16
 * inputs: one ulp apart), so their bounds are 8 units of their roundoff. */
#define DIFF_RTOL 1e-3
#define DIFF_ATOL 1e-4
#define DIFF_LOW_PRECISION_ULPS 8.0
#define DIFF_MAX_ELEMS ((int64_t)1 << 16) /* every value of the graph, summed */
#define DIFF_INT_HIGH 3                   /* integer inputs 0..2: valid indices, some zeros */

typedef struct diff_config {
    const char *name;
    const char *target;
    int opt_level;
    int threads;
} diff_config;

static const diff_config CONFIGS[] = {
    {"host -O2, 2 threads", "host", 2, 2},
    {"generic -O0, 1 thread", "generic", 0, 1},
};

static bool verbose;
static bool model_input;

static void note(const char *what, const smelt_ctx *ctx)
{
    if (verbose)
        fprintf(stderr, "  %s%s%s\n", what, ctx ? ": " : "", ctx ? smelt_ctx_message(ctx) : "");
}

static bool small_enough(smelt_model *m)
{
    const gr_graph *g = smelt_model_graph(m);
    if (!smelt_graph_is_static(g)) return false;
    int64_t total = 0;
    for (int i = 0; i < g->values.len; i++) {
        int64_t n = gr_value_numel(g->values.items[i]);
        if (n < 0 || (total += n) > DIFF_MAX_ELEMS) return false;
    }
    return true;
}

static void release_all(smelt_tensor *t, int n)
{
    for (int i = 0; i < n; i++) smelt_tensor_release(&t[i]);
    free(t);
}

/* Inputs shaped like the model's, filled from a seed; NULL on failure. */
static smelt_tensor *make_inputs(smelt_model *m)
{
    int ni = smelt_model_num_inputs(m);
    smelt_tensor *ins = calloc((size_t)ni + 1, sizeof *ins);
    for (int i = 0; ins && i < ni; i++) {
        smelt_tensor *t = &ins[i];
        smelt_model_input_info(m, i, NULL, &t->dtype, &t->rank, t->dims);
        int64_t numel = smelt_tensor_numel(t);
        size_t es = smelt_dtype_size(t->dtype);
        if (numel < 0 || !es || !(t->data = smelt_calloc(numel ? (size_t)numel : 1, es))) {
            t->rank = 0;
            release_all(ins, i + 1);
            return NULL;
        }
        io_fill_random(t, (uint64_t)i + 1, DIFF_INT_HIGH);
    }
    return ins;
}

static smelt_check_options tolerance_for(smelt_dtype dt)
{
    smelt_check_options o;
    smelt_check_options_init(&o);
    double roundoff = dt == SMELT_DT_FLOAT16 ? 0x1p-11 : dt == SMELT_DT_BFLOAT16 ? 0x1p-8 : 0.0;
    double low = DIFF_LOW_PRECISION_ULPS * roundoff;
    o.rtol = low > DIFF_RTOL ? low : DIFF_RTOL;
    o.atol = low > DIFF_ATOL ? low : DIFF_ATOL;
    return o;
}

static void mismatch(const diff_config *c, const char *why)
{
    fprintf(stderr, "compiled (%s) differs from the reference: %s\n", c->name, why);
    abort();
}

/* May a compiled run fail where the reference succeeded? Only because
 * smelt does not compile something. */
static bool acceptable_compiled_failure(smelt_status s)
{
    return s == SMELT_ERR_UNSUPPORTED || s == SMELT_ERR_LIMIT || s == SMELT_ERR_NOMEM;
}

static void run_config(const pb *model, const diff_config *c, const smelt_tensor *ins, int ni,
                       const smelt_tensor *want, int no)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load_bytes(ctx, model->d, model->n, NULL);
    smelt_tensor *got = calloc((size_t)no + 1, sizeof *got);
    smelt_options o;
    smelt_options_init(&o);
    o.target = c->target;
    o.opt_level = c->opt_level;
    o.num_threads = c->threads;
    if (!m || !got) {
        fprintf(stderr, "the model loaded once and not again\n");
        abort();
    }
    if (smelt_model_compile(ctx, m, &o) != SMELT_OK ||
        smelt_model_run(ctx, m, ins, ni, got, no) != SMELT_OK) {
        fuzz_check_failed(ctx);
        if (!acceptable_compiled_failure(smelt_ctx_status(ctx))) {
            char why[1024];
            snprintf(why, sizeof why, "it failed (%s: %s) where the reference ran",
                     smelt_status_name(smelt_ctx_status(ctx)), smelt_ctx_message(ctx));
            mismatch(c, why);
        }
        note(c->name, ctx);
    } else {
        char why[1024];
        for (int i = 0; i < no; i++) {
            smelt_check_options co = tolerance_for(want[i].dtype);
            if (smelt_check_compare(&got[i], &want[i], &co, why, sizeof why) != SMELT_CHECK_PASS)
                mismatch(c, why);
        }
        note(c->name, NULL);
        for (int i = 0; i < no; i++) smelt_tensor_release(&got[i]);
    }
    free(got);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

static void differential(const pb *model)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load_bytes(ctx, model->d, model->n, NULL);
    if (!m) {
        fuzz_check_failed(ctx);
        note("load failed", ctx);
        smelt_ctx_free(ctx);
        return;
    }
    int ni = smelt_model_num_inputs(m), no = smelt_model_num_outputs(m);
    smelt_tensor *ins = small_enough(m) ? make_inputs(m) : NULL;
    smelt_tensor *want = ins ? calloc((size_t)no + 1, sizeof *want) : NULL;
    if (!want) {
        note("skipped: dynamic, too large or no memory", NULL);
    } else if (smelt_model_run_reference(ctx, m, ins, ni, want, no) != SMELT_OK) {
        fuzz_check_failed(ctx);
        note("reference failed", ctx);
    } else {
        for (size_t c = 0; c < sizeof CONFIGS / sizeof CONFIGS[0]; c++)
            run_config(model, &CONFIGS[c], ins, ni, want, no);
        for (int i = 0; i < no; i++) smelt_tensor_release(&want[i]);
    }
    free(want);
    if (ins) release_all(ins, ni);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool init;
    if (!init) {
        fuzz_use_budget_allocator();
        const char *v = getenv("SMELT_FUZZ_VERBOSE");
        verbose = v && *v == '1';
        const char *mi = getenv("SMELT_FUZZ_MODEL_INPUT");
        model_input = mi && *mi == '1';
        init = true;
    }
    if (model_input) {
        pb given = {(uint8_t *)data, size, size};
        differential(&given);
        return 0;
    }
    pb model = {0};
    int hostile;
    recipe_build_model(data, size, &model, &hostile); /* the recipe's target is not used */
    recipe_save_model(&model);
    if (verbose) fprintf(stderr, "%zu-byte model:\n", model.n);
    differential(&model);
    free(model.d);
    return 0;
}
