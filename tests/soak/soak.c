/* Soak run (issue 15; not part of ctest): THREADS threads call the given
 * compiled models through smelt_model_run for MINUTES, and every REPORT
 * seconds one line gives the calls per second since the last line and the
 * process's resident memory, so growth shows.  Outputs are checked against
 * the first run of each model (bit for bit).  scripts/soak.sh runs it.
 *
 * usage: smelt_soak [--threads N] [--seconds S] [--report S] MODEL... */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "smelt.h"

#define MAX_MODELS 8

typedef struct soak_model {
    smelt_model *m;
    int n_in, n_out;
    smelt_tensor in[8], want[8];
} soak_model;

static soak_model models[MAX_MODELS];
static int n_models;
static long calls_done;  /* atomic */
static long errors;      /* atomic */
static int stop;         /* atomic */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double rss_mb(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
        fclose(f);
    }
    return (double)rss * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static void *worker(void *arg)
{
    long id = (long)(intptr_t)arg;
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_tensor out[8];
    for (long c = id; !__atomic_load_n(&stop, __ATOMIC_RELAXED); c++) {
        soak_model *s = &models[c % n_models];
        if (smelt_model_run(ctx, s->m, s->in, s->n_in, out, s->n_out) != SMELT_OK) {
            if (__atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED) == 0)
                fprintf(stderr, "soak: %s\n", smelt_ctx_message(ctx));
            continue;
        }
        for (int o = 0; o < s->n_out; o++) {
            if (memcmp(out[o].data, s->want[o].data, smelt_tensor_nbytes(&s->want[o])) != 0 &&
                __atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED) == 0)
                fprintf(stderr, "soak: output %d differs from the first run\n", o);
            smelt_tensor_release(&out[o]);
        }
        __atomic_fetch_add(&calls_done, 1, __ATOMIC_RELAXED);
    }
    smelt_ctx_free(ctx);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = 8;
    double seconds = 600, report = 30;
    smelt_ctx *ctx = smelt_ctx_new();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--report") == 0 && i + 1 < argc) report = atof(argv[++i]);
        else if (n_models < MAX_MODELS) {
            soak_model *s = &models[n_models];
            if (!(s->m = smelt_model_load(ctx, argv[i])) ||
                smelt_model_compile(ctx, s->m, NULL) != SMELT_OK) {
                fprintf(stderr, "soak: %s: %s\n", argv[i], smelt_ctx_message(ctx));
                return 1;
            }
            s->n_in = smelt_model_num_inputs(s->m);
            s->n_out = smelt_model_num_outputs(s->m);
            if (s->n_in > 8 || s->n_out > 8) return fprintf(stderr, "soak: too many inputs\n"), 1;
            for (int k = 0; k < s->n_in; k++) {
                smelt_tensor *t = &s->in[k];
                smelt_model_input_info(s->m, k, NULL, &t->dtype, &t->rank, t->dims);
                for (int d = 0; d < t->rank; d++)
                    if (t->dims[d] < 0) t->dims[d] = 1;
                t->data = calloc(smelt_tensor_nbytes(t) + 1, 1);
                for (size_t b = 0; b < smelt_tensor_nbytes(t); b++)
                    ((unsigned char *)t->data)[b] = (unsigned char)(b * 37 % 61); /* small values */
            }
            if (smelt_model_run(ctx, s->m, s->in, s->n_in, s->want, s->n_out) != SMELT_OK) {
                fprintf(stderr, "soak: %s: %s\n", argv[i], smelt_ctx_message(ctx));
                return 1;
            }
            n_models++;
        }
    }
    if (n_models == 0 || threads < 1 || threads > 256) {
        fprintf(stderr, "usage: smelt_soak [--threads N] [--seconds S] [--report S] MODEL...\n");
        return 2;
    }
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    double t0 = now_s(), last_t = t0;
    long last_calls = 0;
    printf("soak: %d threads, %d models, %.0f s; rss at start %.1f MB\n", threads, n_models,
           seconds, rss_mb());
    printf("%8s %12s %12s %10s\n", "time_s", "calls", "calls_per_s", "rss_mb");
    fflush(stdout);
    for (long t = 0; t < threads; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (;;) {
        usleep(100000);
        double t = now_s();
        if (t - last_t >= report || t - t0 >= seconds) {
            long c = __atomic_load_n(&calls_done, __ATOMIC_RELAXED);
            printf("%8.0f %12ld %12.0f %10.1f\n", t - t0, c, (double)(c - last_calls) / (t - last_t),
                   rss_mb());
            fflush(stdout);
            last_t = t;
            last_calls = c;
        }
        if (t - t0 >= seconds) break;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    long errs = __atomic_load_n(&errors, __ATOMIC_RELAXED);
    printf("soak: %ld calls, %ld errors\n", __atomic_load_n(&calls_done, __ATOMIC_RELAXED), errs);
    for (int k = 0; k < n_models; k++) {
        for (int i = 0; i < models[k].n_in; i++) free(models[k].in[i].data);
        for (int o = 0; o < models[k].n_out; o++) smelt_tensor_release(&models[k].want[o]);
        smelt_model_free(models[k].m);
    }
    free(th);
    smelt_ctx_free(ctx);
    return errs ? 1 : 0;
}
