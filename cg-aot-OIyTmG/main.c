/* Example for this smelt package: fills every input with pseudo-random
 * values, runs the model and prints statistics of every output.
 *   usage: ./main [weights.bin] [runs]
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"
#include "smelt_lowbit.h"

static uint32_t rng_state = 12345u;

/* uniform in [-1, 1) */
static float next_uniform(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)(rng_state >> 8) / 8388608.0f - 1.0f;
}

/* float -> IEEE half bits, for values in [-1, 1] (enough for example data) */
static uint16_t to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t e = (int32_t)((x >> 23) & 0xffu) - 127 + 15;
    if (e <= 0) return (uint16_t)sign;
    return (uint16_t)(sign | ((uint32_t)e << 10) | ((x & 0x7fffffu) >> 13));
}

static float from_half(uint16_t h)
{
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                       : ldexpf((float)(m | 0x400u), (int)e - 25);
    return (h & 0x8000u) ? -v : v;
}

static void fill(void *data, int dtype, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        float r = next_uniform();
        switch (dtype) {
        case 1: ((float *)data)[i] = r; break;
        case 11: ((double *)data)[i] = r; break;
        case 10: ((uint16_t *)data)[i] = to_half(r); break;
        case 16: { uint32_t b; memcpy(&b, &r, 4); ((uint16_t *)data)[i] = (uint16_t)(b >> 16); break; }
        case 9: ((uint8_t *)data)[i] = r > 0; break;
        case 2: ((uint8_t *)data)[i] = (uint8_t)((r + 1) * 5); break;
        case 3: ((int8_t *)data)[i] = (int8_t)(r * 5); break;
        case 4: ((uint16_t *)data)[i] = (uint16_t)((r + 1) * 5); break;
        case 5: ((int16_t *)data)[i] = (int16_t)(r * 5); break;
        case 6: ((int32_t *)data)[i] = (int32_t)(r * 5); break;
        case 12: ((uint32_t *)data)[i] = (uint32_t)((r + 1) * 5); break;
        case 7: ((int64_t *)data)[i] = (int64_t)(r * 5); break;
        case 13: ((uint64_t *)data)[i] = (uint64_t)((r + 1) * 5); break;
        default: /* float8, float4, int4, int2: one byte per element */
            if (dtype >= 17 && dtype <= 26)
                ((uint8_t *)data)[i] = (uint8_t)smelt_lowbit_encode(dtype, r * 5, SMELT_LB_SATURATE);
            break;
        }
    }
}

static double element(const void *data, int dtype, size_t i)
{
    switch (dtype) {
    case 1: return ((const float *)data)[i];
    case 11: return ((const double *)data)[i];
    case 10: return from_half(((const uint16_t *)data)[i]);
    case 16: { uint32_t b = (uint32_t)((const uint16_t *)data)[i] << 16; float f; memcpy(&f, &b, 4); return f; }
    case 9: case 2: return ((const uint8_t *)data)[i];
    case 3: return ((const int8_t *)data)[i];
    case 4: return ((const uint16_t *)data)[i];
    case 5: return ((const int16_t *)data)[i];
    case 6: return ((const int32_t *)data)[i];
    case 12: return ((const uint32_t *)data)[i];
    case 7: return (double)((const int64_t *)data)[i];
    case 13: return (double)((const uint64_t *)data)[i];
    case 22: case 26: return ((const int8_t *)data)[i];
    case 21: case 25: return ((const uint8_t *)data)[i];
    default:
        if (dtype >= 17 && dtype <= 24) return smelt_lowbit_decode(dtype, ((const uint8_t *)data)[i]);
        return 0;
    }
}

static void print_stats(const smelt_rt_io_info *io, const void *data, size_t bytes)
{
    size_t n = bytes / smelt_rt_dtype_size(io->dtype), i, nan = 0;
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    for (i = 0; i < n; i++) {
        double v = element(data, io->dtype, i);
        if (v != v) { nan++; continue; }
        sum += v;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    printf("output '%s' (%s, %lu elements): min %g max %g mean %g nan %lu first", io->name,
           smelt_rt_dtype_name(io->dtype), (unsigned long)n, lo, hi, n > nan ? sum / (double)(n - nan) : 0.0,
           (unsigned long)nan);
    for (i = 0; i < n && i < 5; i++) printf(" %g", element(data, io->dtype, i));
    printf("\n");
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    const char *weights = argc > 1 ? argv[1] : "weights.bin";
    int runs = argc > 2 ? atoi(argv[2]) : 1, i, r;
    char err[512];
    const smelt_rt_module_info *info = model_info();
    void *inputs[MODEL_NUM_INPUTS + 1];
    model_t *m = model_create(weights, 0, err, sizeof err);
    double t0;
    if (!m) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    for (i = 0; i < info->num_inputs; i++) {
        size_t bytes = smelt_rt_io_bytes(&info->inputs[i]);
        inputs[i] = malloc(bytes ? bytes : 1);
        if (!inputs[i]) {
            fprintf(stderr, "error: out of memory\n");
            return 1;
        }
        fill(inputs[i], info->inputs[i].dtype, bytes / smelt_rt_dtype_size(info->inputs[i].dtype));
        if (model_set_input(m, info->inputs[i].name, inputs[i], bytes) != SMELT_RT_OK) {
            fprintf(stderr, "error: %s\n", model_error(m));
            return 1;
        }
    }
    if (runs < 1) runs = 1;
    t0 = now_ms();
    for (r = 0; r < runs; r++) {
        if (model_run(m) != SMELT_RT_OK) {
            fprintf(stderr, "error: %s\n", model_error(m));
            return 1;
        }
    }
    printf("%d run(s), %.3f ms per run\n", runs, (now_ms() - t0) / runs);
    for (i = 0; i < info->num_outputs; i++) {
        size_t bytes = 0;
        const void *data = model_get_output(m, info->outputs[i].name, &bytes);
        if (data) print_stats(&info->outputs[i], data, bytes);
    }
    for (i = 0; i < info->num_inputs; i++) free(inputs[i]);
    model_free(m);
    return 0;
}
