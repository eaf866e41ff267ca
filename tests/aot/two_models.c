/* Two AOT packages built with --prefix cnn and --prefix att linked into one
 * program (one copy of the runtime): both run, each through its own API. */
#include <stdio.h>

#include "att/model.h"
#include "cnn/model.h"

static float cnn_in[CNN_INPUT_0_BYTES / sizeof(float)], att_in[ATT_INPUT_0_BYTES / sizeof(float)];

int main(int argc, char **argv)
{
    if (argc != 3) return 2;
    char err[256];
    cnn_t *c = cnn_create(argv[1], 0, err, sizeof err);
    att_t *a = att_create(argv[2], 1, err, sizeof err);
    if (!c || !a) return fprintf(stderr, "%s\n", err), 1;
    for (size_t i = 0; i < sizeof att_in / sizeof att_in[0]; i++) att_in[i] = (float)(i % 5) * 0.1f;
    if (cnn_set_input(c, cnn_info()->inputs[0].name, cnn_in, sizeof cnn_in) != SMELT_RT_OK ||
        att_set_input(a, att_info()->inputs[0].name, att_in, sizeof att_in) != SMELT_RT_OK ||
        cnn_run(c) != SMELT_RT_OK || att_run(a) != SMELT_RT_OK)
        return fprintf(stderr, "%s / %s\n", cnn_error(c), att_error(a)), 1;
    size_t cb, ab;
    const float *cy = cnn_get_output(c, cnn_info()->outputs[0].name, &cb);
    const float *ay = att_get_output(a, att_info()->outputs[0].name, &ab);
    if (!cy || !ay || cb != CNN_OUTPUT_0_BYTES || ab != ATT_OUTPUT_0_BYTES) return 1;
    printf("cnn %zu bytes, first %g; att %zu bytes, first %g\n", cb, (double)cy[0], ab, (double)ay[0]);
    cnn_free(c);
    att_free(a);
    return 0;
}
