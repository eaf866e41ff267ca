/* libFuzzer harness: ONNX decoding + import + shape inference.
 *
 * Each input is a ModelProto's bytes, loaded with smelt_model_load_bytes
 * (no base folder, so external data is refused).  Loading must succeed or
 * fail with a status and a message; SMELT_ERR_INTERNAL (a compiler bug) and
 * any sanitizer report count as crashes.  With SMELT_FUZZ_RUN=1 in the
 * environment, models that load are also run with the reference executor on
 * small random inputs, which reaches every op's reference kernel.
 *
 * All allocations go through a budget allocator, so a model that asks for a
 * giant tensor fails with SMELT_ERR_NOMEM instead of exhausting libFuzzer's
 * RSS limit.  Build with -DSMELT_FUZZ=ON (clang); see docs/fuzzing.md.
 * Without libFuzzer, replay_main.c turns this file into a corpus replayer.
 */
#include <stdlib.h>
#include <string.h>

#include "api/smelt_internal.h"
#include "fuzz_util.h"
#include "io/io.h"

#define MAX_INPUT_ELEMS 4096

static void release_inputs(smelt_tensor *ins, int n)
{
    for (int i = 0; i < n; i++) smelt_tensor_release(&ins[i]);
    free(ins);
}

/* Random inputs shaped like the model's (symbolic dims 1); NULL if too big. */
static smelt_tensor *make_inputs(smelt_model *m)
{
    int ni = smelt_model_num_inputs(m);
    smelt_tensor *ins = calloc((size_t)ni + 1, sizeof *ins);
    for (int i = 0; ins && i < ni; i++) {
        int64_t dims[SMELT_MAX_RANK], numel = 1;
        smelt_tensor *t = &ins[i];
        smelt_model_input_info(m, i, NULL, &t->dtype, &t->rank, dims);
        for (int d = 0; d < t->rank && numel <= MAX_INPUT_ELEMS; d++) {
            t->dims[d] = dims[d] < 0 ? 1 : dims[d];
            numel *= t->dims[d] ? t->dims[d] : 1;
        }
        size_t es = smelt_dtype_size(t->dtype);
        if (t->rank < 0 || numel > MAX_INPUT_ELEMS || !es ||
            !(t->data = smelt_calloc((size_t)numel, es))) {
            t->rank = 0;
            release_inputs(ins, i + 1);
            return NULL;
        }
        io_fill_random(t, (uint64_t)i, 3);
    }
    return ins;
}

/* Running is only for small graphs: a few million interpreted elements
 * under ASan and coverage instrumentation already take seconds, and a slow
 * but correct kernel is not what the run step hunts for. */
#define FUZZ_RUN_MAX_ELEMS ((int64_t)1 << 18)

static bool small_enough_to_run(smelt_model *m)
{
    const gr_graph *g = smelt_model_graph(m);
    int64_t total = 0;
    for (int i = 0; i < g->values.len; i++) {
        int64_t n = gr_value_numel(g->values.items[i]);
        if (n < 0 || (total += n) > FUZZ_RUN_MAX_ELEMS) return false;
    }
    return true;
}

static void run_model(smelt_ctx *ctx, smelt_model *m)
{
    if (!small_enough_to_run(m)) return;
    smelt_tensor *ins = make_inputs(m);
    if (!ins) return;
    int ni = smelt_model_num_inputs(m), no = smelt_model_num_outputs(m);
    smelt_tensor *outs = calloc((size_t)no + 1, sizeof *outs);
    if (smelt_model_run_reference(ctx, m, ins, ni, outs, no) == SMELT_OK) {
        for (int i = 0; i < no; i++) smelt_tensor_release(&outs[i]);
    } else {
        fuzz_check_failed(ctx);
    }
    free(outs);
    release_inputs(ins, ni);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int run_too = -1;
    if (run_too < 0) {
        fuzz_use_budget_allocator();
        const char *e = getenv("SMELT_FUZZ_RUN");
        run_too = e && *e == '1';
    }
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load_bytes(ctx, data, size, NULL);
    if (!m) fuzz_check_failed(ctx);
    else if (run_too) run_model(ctx, m);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return 0;
}
