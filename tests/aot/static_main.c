/* An AOT package used with static buffers sized by model.h's macros, run
 * through model_run_static (no runtime allocation, no threads) and through
 * the ordinary API on the same input: the outputs must be identical. */
#include <stdio.h>
#include <string.h>

#include "model.h"

static unsigned char weights[MODEL_WEIGHT_BYTES + 1];
static unsigned char arena[MODEL_ARENA_BYTES + 1] __attribute__((aligned(64)));
static float input[MODEL_INPUT_0_BYTES / sizeof(float)];
static float output[MODEL_OUTPUT_0_BYTES / sizeof(float)];

int main(int argc, char **argv)
{
    if (argc != 2 || MODEL_NUM_INPUTS != 1 || MODEL_NUM_OUTPUTS != 1 || !MODEL_HEAP_FREE) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(weights, 1, MODEL_WEIGHT_BYTES, f) != MODEL_WEIGHT_BYTES) return 3;
    fclose(f);
    for (size_t i = 0; i < sizeof input / sizeof input[0]; i++) input[i] = (float)(i % 13) * 0.1f;
    const void *ins[1] = {input};
    void *outs[1] = {output};
    if (model_run_static(weights, arena, ins, outs) != 0) return 4;

    char err[256];
    model_t *m = model_create(argv[1], 1, err, sizeof err);
    if (!m || model_set_input(m, model_info()->inputs[0].name, input, sizeof input) != SMELT_RT_OK ||
        model_run(m) != SMELT_RT_OK)
        return 5;
    size_t bytes = 0;
    const void *y = model_get_output(m, model_info()->outputs[0].name, &bytes);
    int same = y && bytes == sizeof output && memcmp(y, output, bytes) == 0;
    printf("static run %s the API run; first output %g\n", same ? "equals" : "DIFFERS FROM",
           (double)output[0]);
    model_free(m);
    return same ? 0 : 1;
}
