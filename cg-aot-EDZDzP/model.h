/* C API of this model, compiled by smelt for target generic.
 *
 * Inputs and outputs (names are the model's own; use them with
 * model_set_input / model_get_output, or use indices through smelt_rt.h):
 *   input 0: input:0  f32[200]  (800 bytes)
 *   output 0: y  f32[200]  (800 bytes)
 *   output 1: h  f16[200]  (400 bytes)
 *
 * Typical use:
 *     char err[256];
 *     model_t *m = model_create("weights.bin", 0, err, sizeof err);
 *     if (!m) { puts(err); return 1; }
 *     model_set_input(m, "input name", data, data_bytes);
 *     if (model_run(m) != SMELT_RT_OK) puts(model_error(m));
 *     const float *y = model_get_output(m, "output name", &bytes);
 *     model_free(m);
 *
 * Data is dense, row-major, in the listed element type (float16 and
 * bfloat16 as raw 16-bit patterns, bool as one byte 0/1).
 */
#ifndef SMELT_MODEL_H
#define SMELT_MODEL_H

#include <stddef.h>

#include "smelt_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MODEL_NUM_INPUTS 1
#define MODEL_NUM_OUTPUTS 2

/* Sizes in bytes, for static buffers: the activation arena a run uses
 * (smelt_rt_module_info.arena_bytes), the weight blob, and each input
 * and output in model order. */
#define MODEL_ARENA_BYTES 800u
#define MODEL_WEIGHT_BYTES 864u
#define MODEL_INPUT_0_BYTES 800u
#define MODEL_OUTPUT_0_BYTES 800u
#define MODEL_OUTPUT_1_BYTES 400u
/* 1: model_run_static allocates nothing (no temporary over 64 KiB). */
#define MODEL_HEAP_FREE 1

typedef smelt_rt_model model_t;

/* Load the model.  weights_path: the package's weights.bin (ignored, may
 * be NULL, when the weights are compiled in).  num_threads <= 0 uses all
 * cores, 1 runs on the calling thread only.  Returns NULL on failure with
 * the reason in err. */
model_t *model_create(const char *weights_path, int num_threads, char *err, size_t err_size);

/* Bind input `name` to data of exactly `bytes` bytes.  Not copied: data
 * must stay valid until model_run returns. */
smelt_rt_status model_set_input(model_t *m, const char *name, const void *data, size_t bytes);

/* Run on the bound inputs.  Not reentrant for one model_t. */
smelt_rt_status model_run(model_t *m);

/* Output `name` after a successful model_run: owned by the model, valid
 * until the next run or model_free; its size in *bytes (may be NULL). */
const void *model_get_output(model_t *m, const char *name, size_t *bytes);

/* What went wrong in the last failed call on m. */
const char *model_error(const model_t *m);

void model_free(model_t *m);

/* The module's description (names, dtypes, shapes) for generic code. */
const smelt_rt_module_info *model_info(void);

/* Run without the runtime's allocations and threads: on the calling
 * thread, in caller memory.  weights: the weight blob (MODEL_WEIGHT_BYTES;
 * NULL when compiled in); arena: MODEL_ARENA_BYTES bytes, 64-byte
 * aligned, not shared with a concurrent call; inputs/outputs in model
 * order, MODEL_INPUT_<i>_BYTES / MODEL_OUTPUT_<i>_BYTES each.  Nothing is
 * checked.  Returns 0; non-zero when a data check failed (an index out of
 * range...) or a temporary the generated code puts on the heap (only
 * those over 64 KiB inside parallel loops; MODEL_HEAP_FREE is 1 when
 * there are none) could
 * not be allocated. */
int model_run_static(const unsigned char *weights, unsigned char *arena,
                     const void *const *inputs, void *const *outputs);

#ifdef __cplusplus
}
#endif
#endif
