/* Int8 multiply-accumulate peak of this CPU on one thread, for comparing
 * the int8 micro-kernels (src/codegen/uk/qgemm_u8s8.c) with what the
 * instructions allow: a register-only loop of independent steps of the
 * AVX2 path (vpmaddubsw + vpmaddwd(1) + vpaddd: 32 u8 x s8 products per
 * 256-bit step), and of vpdpbusd where the compiler targets VNNI; prints
 * GMAC/s, the best of 30 short runs (the machine is shared).
 *     cc -O3 -march=native int8_peak.c -o int8_peak && ./int8_peak
 */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

#define ACC 8
#define ITERS 2000000L

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void)
{
    double best = 0;
    for (int run = 0; run < 30; run++) {
        __m256i acc[ACC], b = _mm256_set1_epi8(3), a = _mm256_set1_epi8(-2);
        const __m256i ones = _mm256_set1_epi16(1);
        for (int i = 0; i < ACC; i++) acc[i] = _mm256_setzero_si256();
        double t0 = now();
        for (long it = 0; it < ITERS; it++) {
            for (int i = 0; i < ACC; i++) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
                acc[i] = _mm256_dpbusd_epi32(acc[i], b, a);
#else
                acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(b, a), ones));
#endif
                __asm__("" : "+x"(acc[i]), "+x"(a)); /* a fresh a: no common subexpressions */
            }
        }
        double dt = now() - t0, gmac = 32.0 * ACC * (double)ITERS / dt / 1e9;
        int sum = 0;
        for (int i = 0; i < ACC; i++) sum += _mm256_extract_epi32(acc[i], 0);
        if (sum == 12345) printf(" ");
        if (gmac > best) best = gmac;
    }
    printf("int8 u8 x s8 peak, 1 thread: %.1f GMAC/s\n", best);
    return 0;
}
