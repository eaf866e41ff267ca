/* A package compiled once for past = 1..40 (tests/models/small/kv_cache.onnx:
 * one decoding step of 2-head attention with a key/value cache) through its
 * model.h API: the caches are read and written at the caller's own length
 * (module info `dense`), so present_key/present_value hold the past rows
 * unchanged with the new token's row appended after them, in each head; a
 * step does not depend on an earlier, longer one; the presents of one step
 * fed back as the next step's past grow it by one row.
 * Built with -std=c99 -Wall -Wextra -Werror by check_aot_kv_cache.sh. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

#define HEADS 2
#define HEAD_DIM 4
#define MAX_PAST 40

static int fails;

static void fail(const char *what, int past)
{
    printf("FAIL past %d: %s\n", past, what);
    fails++;
}

/* One step at `past` rows; y and the presents into the caller's arrays. */
static int step(model_t *m, int past, const float *keys, const float *values, float *y,
                float *pk, float *pv)
{
    float x[HEADS * HEAD_DIM];
    for (int i = 0; i < HEADS * HEAD_DIM; i++) x[i] = 0.125f * (float)(i - 3);
    size_t kv = (size_t)past * HEADS * HEAD_DIM * sizeof(float);
    smelt_rt_status s = model_set_input(m, "x", x, sizeof x);
    if (s == SMELT_RT_OK) s = model_set_input(m, "past_key", keys, kv);
    if (s == SMELT_RT_OK) s = model_set_input(m, "past_value", values, kv);
    if (s == SMELT_RT_OK) s = model_run(m);
    if (s != SMELT_RT_OK) return (int)s;
    size_t yb = 0, kb = 0, vb = 0;
    const float *oy = model_get_output(m, "y", &yb), *ok = model_get_output(m, "present_key", &kb),
                *ov = model_get_output(m, "present_value", &vb);
    size_t want = (size_t)(past + 1) * HEADS * HEAD_DIM * sizeof(float);
    if (!oy || !ok || !ov || yb != sizeof x || kb != want || vb != want) {
        fail("output sizes", past);
        return 0;
    }
    memcpy(y, oy, yb);
    memcpy(pk, ok, kb);
    memcpy(pv, ov, vb);
    return 0;
}

/* Each head's first `past` rows of the present are the past's rows. */
static void check_appended(int past, const float *old, const float *present)
{
    for (int h = 0; h < HEADS; h++)
        if (memcmp(present + (size_t)h * (past + 1) * HEAD_DIM, old + (size_t)h * past * HEAD_DIM,
                   (size_t)past * HEAD_DIM * sizeof(float)) != 0)
            fail("a present does not start with the past's rows", past);
}

int main(void)
{
    char err[256];
    model_t *m = model_create("weights.bin", 1, err, sizeof err);
    if (!m) {
        printf("FAIL: %s\n", err);
        return 1;
    }
    static float keys[MAX_PAST * HEADS * HEAD_DIM], values[MAX_PAST * HEADS * HEAD_DIM];
    for (int i = 0; i < MAX_PAST * HEADS * HEAD_DIM; i++) {
        keys[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
        values[i] = (float)((i * 13) % 7) / 7.0f - 0.4f;
    }
    static float y3[8], y40[8], y3b[8], pk[(MAX_PAST + 1) * 8], pv[(MAX_PAST + 1) * 8];
    static float pk2[(MAX_PAST + 1) * 8], pv2[(MAX_PAST + 1) * 8];
    if (step(m, 3, keys, values, y3, pk, pv) || step(m, MAX_PAST, keys, values, y40, pk2, pv2)) {
        printf("FAIL: %s\n", model_error(m));
        model_free(m);
        return 1;
    }
    check_appended(MAX_PAST, keys, pk2);
    check_appended(MAX_PAST, values, pv2);
    if (step(m, 3, keys, values, y3b, pk, pv) == 0 && memcmp(y3, y3b, sizeof y3) != 0)
        fail("a step differs after a longer one", 3);
    check_appended(3, keys, pk);
    check_appended(3, values, pv);
    /* the presents fed back: 4 rows, then 5, each keeping the last step's rows */
    static float k4[(MAX_PAST + 1) * 8], v4[(MAX_PAST + 1) * 8];
    if (step(m, 4, pk, pv, y3b, k4, v4) == 0) {
        check_appended(4, pk, k4);
        check_appended(4, pv, v4);
    } else {
        fail(model_error(m), 4);
    }
    model_free(m);
    printf("%s\n", fails ? "FAILED" : "OK");
    return fails != 0;
}
