/* A package compiled once for seq = 1..64 (tests/models/small/seq_block.onnx)
 * through its model.h API: lengths in the range run with outputs of their
 * length, a run does not depend on what an earlier, longer run left in the
 * padding, and a length past the range is refused naming the sizes.
 * Built with -std=c99 -Wall -Wextra -Werror by check_aot_rt_dims.sh. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

static int fails;

/* hidden [1, len, 16] of a run at len, into out; 0 on success */
static int run(model_t *m, int len, float *out)
{
    int64_t ids[65];
    float mask[65];
    for (int i = 0; i < len; i++) {
        ids[i] = (i * 7 + 3) % 50;
        mask[i] = i % 5 == 4 ? -10000.0f : 0.0f;
    }
    smelt_rt_status s = model_set_input(m, "ids", ids, (size_t)len * sizeof ids[0]);
    if (s == SMELT_RT_OK) s = model_set_input(m, "mask", mask, (size_t)len * sizeof mask[0]);
    if (s == SMELT_RT_OK) s = model_run(m);
    if (s != SMELT_RT_OK) return (int)s;
    size_t bytes = 0;
    const float *h = model_get_output(m, "hidden", &bytes);
    if (!h || bytes != (size_t)len * 16 * sizeof(float)) {
        printf("FAIL len %d: hidden has %zu bytes\n", len, bytes);
        fails++;
        return 0;
    }
    memcpy(out, h, bytes);
    return 0;
}

int main(void)
{
    char err[256];
    model_t *m = model_create("weights.bin", 1, err, sizeof err);
    if (!m) {
        printf("FAIL: %s\n", err);
        return 1;
    }
    static float first[5 * 16], after[5 * 16], full[64 * 16];
    if (run(m, 5, first) || run(m, 64, full) || run(m, 5, after)) {
        printf("FAIL: %s\n", model_error(m));
        fails++;
    } else if (memcmp(first, after, sizeof first) != 0) {
        printf("FAIL: length 5 differs after a run of length 64\n");
        fails++;
    }
    static float too_long[65 * 16];
    if (run(m, 65, too_long) == 0) {
        printf("FAIL: length 65 ran in a package compiled for 1..64\n");
        fails++;
    } else if (!strstr(model_error(m), "expected 512 bytes (int64[1,64]), got 520")) {
        printf("FAIL: length 65: '%s'\n", model_error(m));
        fails++;
    }
    model_free(m);
    printf("%s\n", fails ? "FAILED" : "OK");
    return fails != 0;
}
