/* The runtime's thread pool: every index of [0, n) runs exactly once in
 * contiguous chunks, for n = 0, n < threads and large n; the caller takes
 * a chunk; nested and concurrent calls run inline; workers that went to
 * sleep wake up.  (Build with -fsanitize=thread to check for races.) */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "smelt_rt.h"
#include "test_util.h"

typedef struct job {
    int64_t n;
    unsigned char *hits;      /* per index: times run (each index written by one thread) */
    int64_t chunks[64][2];
    int n_chunks;             /* atomic */
    pthread_t caller;
    int caller_ran_first;     /* atomic */
    smelt_rt_pool *pool;      /* for nested calls */
    int nested_ok;            /* atomic */
} job;

static void body(void *cl, int64_t b, int64_t e)
{
    job *j = cl;
    for (int64_t i = b; i < e; i++) j->hits[i]++;
    int slot = __atomic_fetch_add(&j->n_chunks, 1, __ATOMIC_RELAXED);
    if (slot < 64) {
        j->chunks[slot][0] = b;
        j->chunks[slot][1] = e;
    }
    if (b == 0 && pthread_equal(pthread_self(), j->caller))
        __atomic_store_n(&j->caller_ran_first, 1, __ATOMIC_RELAXED);
}

static bool run_and_check(smelt_rt_pool *pool, int64_t n, int expect_chunks)
{
    job j;
    memset(&j, 0, sizeof j);
    j.n = n;
    j.hits = calloc((size_t)(n > 0 ? n : 1), 1);
    j.caller = pthread_self();
    smelt_rt_parallel_for(pool, n, body, &j);
    bool ok = true;
    for (int64_t i = 0; i < n; i++) ok &= j.hits[i] == 1;
    int chunks = __atomic_load_n(&j.n_chunks, __ATOMIC_RELAXED);
    if (expect_chunks >= 0) ok &= chunks == expect_chunks;
    /* chunks partition [0, n) into contiguous pieces */
    int64_t covered = 0;
    for (int c = 0; c < chunks && c < 64; c++) {
        ok &= j.chunks[c][0] < j.chunks[c][1];
        covered += j.chunks[c][1] - j.chunks[c][0];
    }
    ok &= covered == n;
    if (n > 0) ok &= __atomic_load_n(&j.caller_ran_first, __ATOMIC_RELAXED) == 1;
    free(j.hits);
    return ok;
}

static void nested_body(void *cl, int64_t b, int64_t e)
{
    job *j = cl;
    for (int64_t i = b; i < e; i++) {
        job inner;
        memset(&inner, 0, sizeof inner);
        unsigned char hits[10] = {0};
        inner.n = 10;
        inner.hits = hits;
        inner.caller = pthread_self();
        smelt_rt_parallel_for(j->pool, 10, body, &inner); /* runs inline: one chunk */
        bool ok = __atomic_load_n(&inner.n_chunks, __ATOMIC_RELAXED) == 1;
        for (int k = 0; k < 10; k++) ok &= hits[k] == 1;
        if (ok) __atomic_add_fetch(&j->nested_ok, 1, __ATOMIC_RELAXED);
        j->hits[i]++;
    }
}

static void *concurrent_caller(void *arg)
{
    smelt_rt_pool *pool = arg;
    bool ok = true;
    for (int r = 0; r < 100; r++) ok &= run_and_check(pool, 1000 + r, -1);
    return ok ? (void *)1 : NULL;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void noop(void *cl, int64_t b, int64_t e)
{
    (void)cl;
    (void)b;
    (void)e;
}

int main(void)
{
    /* NULL pool and a pool of one run inline */
    CHECK(run_and_check(NULL, 100, 1));
    CHECK(smelt_rt_pool_size(NULL) == 1);
    smelt_rt_pool *one = smelt_rt_pool_new(1);
    CHECK(one && smelt_rt_pool_size(one) == 1);
    CHECK(run_and_check(one, 100, 1));
    smelt_rt_pool_free(one);

    smelt_rt_pool *pool = smelt_rt_pool_new(4);
    CHECK(pool && smelt_rt_pool_size(pool) == 4);
    CHECK(run_and_check(pool, 0, 0));
    CHECK(run_and_check(pool, 1, 1));
    CHECK(run_and_check(pool, 3, 3)); /* n < threads: one index each */
    CHECK(run_and_check(pool, 4, 4));
    CHECK(run_and_check(pool, 1001, 4));
    CHECK(run_and_check(pool, 1 << 22, 4));

    /* the head generated code calls through */
    {
        job j;
        memset(&j, 0, sizeof j);
        unsigned char hits[64] = {0};
        j.hits = hits;
        j.caller = pthread_self();
        ((const smelt_rt_pool_head *)(const void *)pool)->parallel_for(pool, 64, body, &j);
        bool ok = true;
        for (int i = 0; i < 64; i++) ok &= hits[i] == 1;
        CHECK(ok);
    }

    /* nested calls run inline on the calling worker */
    {
        job j;
        memset(&j, 0, sizeof j);
        unsigned char hits[40] = {0};
        j.hits = hits;
        j.pool = pool;
        smelt_rt_parallel_for(pool, 40, nested_body, &j);
        CHECK(__atomic_load_n(&j.nested_ok, __ATOMIC_RELAXED) == 40);
    }

    /* many back-to-back jobs, then jobs after the workers went to sleep */
    bool ok = true;
    for (int r = 0; r < 1000; r++) ok &= run_and_check(pool, 7 + r % 50, -1);
    CHECK(ok);
    for (int r = 0; r < 5; r++) {
        usleep(20000);
        CHECK(run_and_check(pool, 10000, 4));
    }

    /* two application threads share the pool: one dispatches, the other
     * runs inline; both are correct */
    pthread_t th;
    pthread_create(&th, NULL, concurrent_caller, pool);
    void *r1 = concurrent_caller(pool), *r2 = NULL;
    pthread_join(th, &r2);
    CHECK(r1 != NULL && r2 != NULL);

    /* dispatch latency, for information only (benchmarks are not asserted) */
    double t0 = now_us();
    for (int r = 0; r < 2000; r++) smelt_rt_parallel_for(pool, 4, noop, NULL);
    printf("parallel_for dispatch (4 threads, empty body): %.2f us\n", (now_us() - t0) / 2000);

    smelt_rt_pool_free(pool);
    smelt_rt_pool *dflt = smelt_rt_pool_new(0);
    CHECK(dflt && smelt_rt_pool_size(dflt) >= 1);
    CHECK(run_and_check(dflt, 12345, -1));
    smelt_rt_pool_free(dflt);
    TEST_MAIN_END();
}
