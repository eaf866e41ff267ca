#include <stdio.h>
#include <string.h>
#include "model.h"
int main(int argc, char **argv)
{
    float x[200];
    const float *y;
    const unsigned short *h;
    size_t yb = 0, hb = 0;
    char err[256];
    int i, bad = 0;
    model_t *m = model_create(argc > 1 ? argv[1] : NULL, 2, err, sizeof err);
    if (!m) { printf("create: %s\n", err); return 2; }
    for (i = 0; i < 200; i++) x[i] = (float)(i % 13) * 0.25f - 1.0f;
    if (model_set_input(m, "input:0", x, sizeof x) != SMELT_RT_OK) { puts(model_error(m)); return 3; }
    if (model_set_input(m, "nope", x, sizeof x) == SMELT_RT_OK) return 4;
    if (model_run(m) != SMELT_RT_OK) { puts(model_error(m)); return 5; }
    y = (const float *)model_get_output(m, "y", &yb);
    h = (const unsigned short *)model_get_output(m, "h", &hb);
    if (!y || !h || yb != sizeof x || hb != 400) return 6;
    for (i = 0; i < 200; i++) {
        float want = x[i] * ((float)(i % 7) - 3.0f) + 1.0f;
        if (want < 0) want = 0;
        if (y[i] != want) bad++;
        if (want == 0 ? h[i] != 0 : h[i] == 0) bad++;
    }
    model_free(m);
    printf("checker: %d bad\n", bad);
    return bad != 0;
}
