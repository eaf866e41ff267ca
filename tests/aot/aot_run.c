/* Runs an AOT package on raw input files and writes raw outputs:
 *   aot_run WEIGHTS IN_0.raw ... OUT_0.raw ...   (counts from model.h)
 * Built with the package's own sources only, as a deployment would. */
#include <stdio.h>
#include <stdlib.h>

#include "model.h"

static void *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    void *buf = NULL;
    long n;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        *size = (size_t)n;
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    char err[512];
    const smelt_rt_module_info *info = model_info();
    void *inputs[MODEL_NUM_INPUTS];
    int i, rc = 0;
    if (argc != 2 + MODEL_NUM_INPUTS + MODEL_NUM_OUTPUTS) {
        fprintf(stderr, "usage: aot_run WEIGHTS INPUTS... OUTPUTS...\n");
        return 2;
    }
    model_t *m = model_create(argv[1], 1, err, sizeof err);
    if (!m) {
        fprintf(stderr, "model_create: %s\n", err);
        return 1;
    }
    for (i = 0; i < MODEL_NUM_INPUTS && rc == 0; i++) {
        size_t n = 0;
        inputs[i] = read_all(argv[2 + i], &n);
        if (!inputs[i] || model_set_input(m, info->inputs[i].name, inputs[i], n) != SMELT_RT_OK) {
            fprintf(stderr, "input %d: %s\n", i, inputs[i] ? model_error(m) : "unreadable");
            rc = 1;
        }
    }
    if (rc == 0 && model_run(m) != SMELT_RT_OK) {
        fprintf(stderr, "model_run: %s\n", model_error(m));
        rc = 1;
    }
    for (i = 0; i < MODEL_NUM_OUTPUTS && rc == 0; i++) {
        size_t n = 0;
        const void *out = model_get_output(m, info->outputs[i].name, &n);
        FILE *f = fopen(argv[2 + MODEL_NUM_INPUTS + i], "wb");
        if (!out || !f || fwrite(out, 1, n, f) != n) rc = 1;
        if (f) fclose(f);
    }
    model_free(m);
    return rc;
}
