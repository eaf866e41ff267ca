/* Runs a smelt CUDA package for scripts/cuda_device_check.py: inputs from
 * DATA/in<i>.bin (model order), WARMUP untimed runs, then RUNS timed runs
 * (each a whole model_run: inputs to the device, the kernels, outputs
 * back), outputs to OUT/out<i>.bin (OUT: DATA unless given); prints
 * "median_ms M min_ms m runs N kernel_ms K": K the median of the device
 * time of each run's kernels when the package was built with
 * -DSMELT_GPU_TIMING (model_gpu_kernel_ms), else -1.  Then, in such a
 * package, RUNS more runs timed per call (model_gpu_time_calls: an event
 * after each fused function's kernels, kept out of the runs above), one
 * line per call: "call C MS NAME", MS the median of the call's device time.
 *   usage: cuda_device_runner PKG_DIR DATA_DIR RUNS [OUT_DIR]
 * Built against the package's libmodel.a (make lib) and linked by nvcc. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"

#define WARMUP 3

/* model_gpu.cu's kernel timers; weak: packages of older smelt versions lack them */
double model_gpu_kernel_ms(void) __attribute__((weak));
void model_gpu_time_calls(int on) __attribute__((weak));
int model_gpu_call_count(void) __attribute__((weak));
const char *model_gpu_call_name(int c) __attribute__((weak));
double model_gpu_call_ms(int c) __attribute__((weak));

static void *read_all(const char *path, size_t want)
{
    FILE *f = fopen(path, "rb");
    void *p = malloc(want ? want : 1);
    size_t got = f && p ? fread(p, 1, want, f) : 0;
    if (f) fclose(f);
    if (got != want) {
        free(p);
        return NULL;
    }
    return p;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* RUNS runs timed per call; prints each call's median device time. */
static int time_calls(model_t *m, int runs)
{
    if (!model_gpu_time_calls || !model_gpu_call_count || !model_gpu_call_ms || !model_gpu_call_name)
        return 0;
    int n = model_gpu_call_count();
    double *ms = malloc(sizeof *ms * (size_t)runs * (size_t)(n > 0 ? n : 1));
    if (!ms) return 2;
    model_gpu_time_calls(1);
    for (int r = 0; r < runs; r++) {
        if (model_run(m) != SMELT_RT_OK) {
            fprintf(stderr, "%s\n", model_error(m));
            free(ms);
            return 3;
        }
        for (int c = 0; c < n; c++) ms[(size_t)c * (size_t)runs + (size_t)r] = model_gpu_call_ms(c);
    }
    model_gpu_time_calls(0);
    for (int c = 0; c < n; c++) {
        double *v = ms + (size_t)c * (size_t)runs;
        qsort(v, (size_t)runs, sizeof *v, cmp_double);
        printf("call %d %.4f %s\n", c, v[runs / 2], model_gpu_call_name(c));
    }
    free(ms);
    return 0;
}

int main(int argc, char **argv)
{
    char path[4096], err[1024];
    const smelt_rt_module_info *info = model_info();
    void *in[MODEL_NUM_INPUTS + 1];
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s PKG_DIR DATA_DIR RUNS [OUT_DIR]\n", argv[0]);
        return 2;
    }
    const char *out_dir = argc == 5 ? argv[4] : argv[2];
    int runs = atoi(argv[3]);
    if (runs < 1) runs = 1;
    snprintf(path, sizeof path, "%s/weights.bin", argv[1]);
    model_t *m = model_create(path, 1, err, sizeof err);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    for (int i = 0; i < info->num_inputs; i++) {
        size_t bytes = smelt_rt_io_bytes(&info->inputs[i]);
        snprintf(path, sizeof path, "%s/in%d.bin", argv[2], i);
        if (!(in[i] = read_all(path, bytes))) {
            fprintf(stderr, "cannot read %s (%zu bytes)\n", path, bytes);
            return 2;
        }
        if (model_set_input(m, info->inputs[i].name, in[i], bytes) != SMELT_RT_OK) {
            fprintf(stderr, "%s\n", model_error(m));
            return 2;
        }
    }
    double *ms = malloc(sizeof *ms * (size_t)runs), *kms = malloc(sizeof *kms * (size_t)runs);
    if (!ms || !kms) return 2;
    for (int r = 0; r < WARMUP + runs; r++) {
        double t0 = now_ms();
        if (model_run(m) != SMELT_RT_OK) {
            fprintf(stderr, "%s\n", model_error(m));
            return 3;
        }
        if (r >= WARMUP) {
            ms[r - WARMUP] = now_ms() - t0;
            kms[r - WARMUP] = model_gpu_kernel_ms ? model_gpu_kernel_ms() : -1;
        }
    }
    qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
    qsort(kms, (size_t)runs, sizeof *kms, cmp_double);
    for (int i = 0; i < info->num_outputs; i++) {
        size_t bytes = 0;
        const void *data = model_get_output(m, info->outputs[i].name, &bytes);
        snprintf(path, sizeof path, "%s/out%d.bin", out_dir, i);
        FILE *f = fopen(path, "wb");
        if (!f || !data || fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            return 2;
        }
    }
    printf("median_ms %.4f min_ms %.4f runs %d kernel_ms %.4f\n", ms[runs / 2], ms[0], runs, kms[runs / 2]);
    int rc = time_calls(m, runs);
    if (rc) return rc;
    for (int i = 0; i < info->num_inputs; i++) free(in[i]);
    free(ms);
    free(kms);
    model_free(m);
    return 0;
}
