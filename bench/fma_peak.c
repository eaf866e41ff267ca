/* fp32 FMA peak of this CPU: every thread runs a register-only loop of
 * independent vector FMAs (12 accumulators of one register each: enough to
 * cover the FMA latency of two FMA units); prints GFLOP/s, the best of
 * 30 short runs (a few ms each, so that on a shared machine one of them finds
 * the cores free).  Built and run by bench/bench_ops.py:
 *     cc -O2 -march=native -pthread fma_peak.c -o fma_peak && ./fma_peak THREADS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* One register per accumulator: 512-bit vectors where AVX-512 has them,
 * else 256-bit (AVX2) or 128-bit (SSE); a 512-bit vector type on an AVX2
 * machine spans two registers, which the "+x" constraints below cannot hold
 * (GCC and clang refused to build this file there). */
#if defined(__AVX512F__)
#define LANES 16
#elif defined(__AVX__)
#define LANES 8
#else
#define LANES 4
#endif
typedef float v16 __attribute__((vector_size(LANES * 4)));
#define ACC 12
#define ITERS 2000000L

static volatile float sink;

static void *work(void *arg) {
    v16 a, b, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11;
    (void)arg;
    for (int i = 0; i < LANES; i++) { a[i] = 0.999999f; b[i] = 1e-7f; }
    c0 = a * 1; c1 = a * 2; c2 = a * 3; c3 = a * 4; c4 = a * 5; c5 = a * 6;
    c6 = a * 7; c7 = a * 8; c8 = a * 9; c9 = a * 10; c10 = a * 11; c11 = a * 12;
    __asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5));
    __asm__ volatile("" : "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
    for (long it = 0; it < ITERS; it++) {   /* written out: -O2 does not unroll */
        c0 = c0 * a + b; c1 = c1 * a + b; c2 = c2 * a + b; c3 = c3 * a + b;
        c4 = c4 * a + b; c5 = c5 * a + b; c6 = c6 * a + b; c7 = c7 * a + b;
        c8 = c8 * a + b; c9 = c9 * a + b; c10 = c10 * a + b; c11 = c11 * a + b;
        __asm__ volatile("" : "+x"(a));   /* keep the loop from being folded */
    }
    v16 s = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;
    float t = 0;
    for (int i = 0; i < LANES; i++) t += s[i];
    sink = t;
    return NULL;
}

static double now(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* fma_peak THREADS [cpu]: with "cpu", GFLOP per CPU-second of the process
 * (one core's rate, whatever the threads; on a machine shared with other
 * work it leaves out the time the threads waited for a core). */
int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    if (threads < 1 || threads > 256) return 2;
    int cpu = argc > 2 && argv[2][0] == 'c';
    clockid_t clock = cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
    pthread_t tid[256];
    double best = 0;
    for (int rep = 0; rep < 30; rep++) {
        double t0 = now(clock);
        for (int t = 0; t < threads; t++) pthread_create(&tid[t], NULL, work, NULL);
        for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
        double gflops = 2.0 * LANES * ACC * ITERS * threads / (now(clock) - t0) / 1e9;
        if (gflops > best) best = gflops;
    }
    printf("%.1f\n", best);
    return 0;
}
