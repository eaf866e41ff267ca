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

#include "io/io.h"
#include "smelt.h"

#define MAX_ALLOC ((size_t)4 << 20) /* 1 Mi floats: keeps kernels fast under ASan */
#define MAX_LIVE ((size_t)64 << 20)
#define MAX_INPUT_ELEMS 4096

static size_t g_live;

/* A 16-byte header keeps each block's size for the live total. */
static void *budget_alloc(void *user, size_t size)
{
    (void)user;
    if (size > MAX_ALLOC || g_live + size > MAX_LIVE) return NULL;
    unsigned char *p = malloc(size + 16);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    g_live += size;
    return p + 16;
}

static void budget_release(void *user, void *ptr)
{
    (void)user;
    if (!ptr) return;
    unsigned char *p = (unsigned char *)ptr - 16;
    size_t size;
    memcpy(&size, p, sizeof size);
    g_live -= size;
    free(p);
}

/* A failed call must say why, and must not be a compiler bug. */
static void check_failed(const smelt_ctx *ctx)
{
    smelt_status s = smelt_ctx_status(ctx);
    const char *msg = smelt_ctx_message(ctx);
    if (s == SMELT_OK || s >= SMELT_STATUS_COUNT_ || !msg || !*msg) {
        fprintf(stderr, "failure without a status or message (status %d)\n", (int)s);
        abort();
    }
    if (s == SMELT_ERR_INTERNAL) {
        fprintf(stderr, "internal error on user input: %s\n", msg);
        abort();
    }
}

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

static void run_model(smelt_ctx *ctx, smelt_model *m)
{
    smelt_tensor *ins = make_inputs(m);
    if (!ins) return;
    int ni = smelt_model_num_inputs(m), no = smelt_model_num_outputs(m);
    smelt_tensor *outs = calloc((size_t)no + 1, sizeof *outs);
    if (smelt_model_run_reference(ctx, m, ins, ni, outs, no) == SMELT_OK) {
        for (int i = 0; i < no; i++) smelt_tensor_release(&outs[i]);
    } else {
        check_failed(ctx);
    }
    free(outs);
    release_inputs(ins, ni);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int run_too = -1;
    if (run_too < 0) {
        smelt_allocator a = {budget_alloc, budget_release, NULL};
        smelt_set_allocator(&a);
        const char *e = getenv("SMELT_FUZZ_RUN");
        run_too = e && *e == '1';
    }
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load_bytes(ctx, data, size, NULL);
    if (!m) check_failed(ctx);
    else if (run_too) run_model(ctx, m);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return 0;
}
