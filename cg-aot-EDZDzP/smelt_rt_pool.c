/* Persistent thread pool for generated code (C99 + pthreads).
 *
 * Workers are created once.  A parallel_for publishes a job (fn, closure, n)
 * and bumps an atomic generation counter; workers spin on the counter for a
 * short while before sleeping on a condition variable, because at batch 1
 * the time to wake a sleeping thread (tens of microseconds) is comparable to
 * a whole small kernel.  [0, n) is split into one contiguous chunk per
 * thread; the calling thread runs chunk 0 itself, and the other chunks go to
 * whoever claims them first: a caller done with its chunk takes those no
 * worker has started, so a worker that is not running (its core busy with
 * another process) costs at most the one-thread time, never a time slice.
 *
 * On Linux each worker is pinned to a core of its own (see worker_place).
 *
 * Only one parallel_for runs on a pool at a time: the caller takes the
 * `busy` flag, and a call that finds it taken (a nested call from inside a
 * task, or a second application thread) runs inline instead.
 *
 * The process-wide pool (smelt_rt_pool_shared): every model gets a *view*
 * (a smelt_rt_pool with `target` set and no threads of its own) onto one
 * pool of workers, created with the first view and stopped with the last.
 * A view limits its loops to its own thread count.  The shared pool has
 * smelt_rt_set_pool_threads() threads when that was called, else it grows
 * to the largest count a view asks for (0: the cores): a larger request
 * starts a new shared pool for new views, the old one lives until its last
 * view is freed.  So N models share one set of workers.
 *
 * Atomics use the GCC/clang __atomic builtins (understood by ThreadSanitizer);
 * everything else is C99 + POSIX threads.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, sched_setaffinity, sched_getcpu */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smelt_rt.h"

/* Spin iterations before sleeping (each one a pause instruction, ~10-100 ns):
 * long enough to cover the gap between the back-to-back kernels of a model,
 * short enough not to burn a core when the model is idle. */
#define POOL_SPIN_ITERS 20000
#define POOL_MAX_THREADS 1024

struct smelt_rt_pool {
    smelt_rt_pool_head head; /* must stay first: generated code calls through it */
    int n_threads;           /* including the caller; a view: its limit */
    smelt_rt_pool *target;   /* a view: the shared pool it runs on; else NULL */
    int views;               /* shared pool: live views (under shared_mu) */
    int job_threads;         /* the current job's chunk limit */
    pthread_t *threads;      /* n_threads - 1 workers */
    pthread_mutex_t mu;
    pthread_cond_t wake;     /* workers sleep here */
    pthread_cond_t done;     /* the caller sleeps here */
    /* The current job: written by the caller before the generation bump
     * (release) and read by workers after they observe it (acquire). */
    smelt_rt_task_fn fn;
    void *closure;
    int64_t n;
    int caller_cpu;      /* atomic (relaxed): the core the caller runs chunk 0 on, or -1;
                          * a worker late for one job may read it while the next
                          * job's caller writes it (only a placement hint) */
    /* Cores the workers are placed on (n_cpus == 0: no placement). */
    int *cpus;
    int n_cpus;
    int stop;            /* atomic */
    int busy;            /* atomic: a parallel_for is in progress */
    /* The counters every dispatch bounces between cores, on cache lines of
     * their own: workers spin reading `generation`, the caller spins reading
     * `chunks_left`, both claim through `claim`. */
    char pad0[64];
    unsigned generation; /* atomic */
    char pad1[64 - sizeof(unsigned)];
    /* atomic: generation << 32 | chunks << 16 | next unclaimed chunk; the
     * generation keeps a late worker from claiming in a newer job */
    uint64_t claim;
    char pad2[64 - sizeof(uint64_t)];
    int chunks_left;     /* atomic: chunks 1.. of the current job not finished */
    int sleepers;        /* atomic: workers waiting (or about to wait) on `wake` */
    char pad3[64 - 2 * sizeof(int)];
};

typedef struct worker_arg {
    smelt_rt_pool *pool;
    int index; /* 1..n_threads-1 */
} worker_arg;

/* ---- Thread placement --------------------------------------------------------
 * Left alone, Linux may wake a worker on the caller's core (wake-affine) and
 * then never move it: the two threads spin and yield in turn on one core while
 * another core idles, and every parallel kernel runs at one-thread speed for
 * the life of the process (on a 2-core VM, in about half of all processes).
 * So worker i is pinned to core cpus[i], and steps over to cpus[0] (the
 * caller's nominal core) while it finds the caller running on cpus[i].  The
 * caller is the application's thread and is never pinned.  SMELT_PIN_THREADS=0
 * turns placement off (several busy processes sharing the cores). */

/* Fills p->cpus with the cores this process may run on, when there are at
 * least as many as threads; otherwise leaves placement off. */
static void pool_init_placement(smelt_rt_pool *p)
{
#if defined(__linux__) && defined(CPU_COUNT)
    const char *env = getenv("SMELT_PIN_THREADS");
    if (env && strcmp(env, "0") == 0) return;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < p->n_threads) return;
    p->cpus = malloc((size_t)p->n_threads * sizeof *p->cpus);
    if (!p->cpus) return; /* placement is an optimisation: run without it */
    for (int c = 0; c < CPU_SETSIZE && p->n_cpus < p->n_threads; c++)
        if (CPU_ISSET(c, &set)) p->cpus[p->n_cpus++] = c;
#else
    (void)p;
#endif
}

static int current_cpu(void)
{
#if defined(__linux__) && defined(CPU_COUNT)
    return sched_getcpu();
#else
    return -1;
#endif
}

/* Moves worker `index` to its core for a job whose caller runs on
 * caller_cpu; *placed is the core it is pinned to now (-1: none yet). */
static void worker_place(const smelt_rt_pool *p, int index, int caller_cpu, int *placed)
{
    if (p->n_cpus == 0) return;
    int want = p->cpus[index] == caller_cpu ? p->cpus[0] : p->cpus[index];
    if (want == *placed) return;
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(want, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0) *placed = want;
#endif
}

/* One step of a spin-wait.  Every 64th step gives the core away, so that
 * with more threads than cores (other processes, or a pool larger than the
 * machine) the thread being waited for gets to run. */
static void spin_step(int i)
{
    if ((i & 63) == 63) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Chunk t of [0, n) split into `parts` contiguous pieces (no overflow). */
static void chunk_bounds(int64_t n, int parts, int t, int64_t *begin, int64_t *end)
{
    int64_t base = n / parts, rem = n % parts;
    *begin = t * base + (t < rem ? t : rem);
    *end = *begin + base + (t < rem ? 1 : 0);
}

static int job_chunks(const smelt_rt_pool *p)
{
    return p->n < p->job_threads ? (int)p->n : p->job_threads;
}

static void run_chunk(smelt_rt_pool *p, int t)
{
    int64_t b, e;
    chunk_bounds(p->n, job_chunks(p), t, &b, &e);
    if (b < e) p->fn(p->closure, b, e);
}

/* Claims the next unstarted chunk of job `gen`; -1 when none is left (or
 * the pool has moved on to another job). */
static int claim_chunk(smelt_rt_pool *p, unsigned gen)
{
    uint64_t s = __atomic_load_n(&p->claim, __ATOMIC_ACQUIRE);
    for (;;) {
        int next = (int)(s & 0xffff), chunks = (int)((s >> 16) & 0xffff);
        if ((unsigned)(s >> 32) != gen || next >= chunks) return -1;
        if (__atomic_compare_exchange_n(&p->claim, &s, s + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return next;
    }
}

/* Runs the chunks of job `gen` nobody has started; true if this finished
 * the job's last one. */
static int run_claimed_chunks(smelt_rt_pool *p, unsigned gen)
{
    int last = 0;
    for (int t; (t = claim_chunk(p, gen)) >= 0;) {
        run_chunk(p, t);
        last = __atomic_sub_fetch(&p->chunks_left, 1, __ATOMIC_ACQ_REL) == 0;
    }
    return last;
}

/* Wait until the generation differs from `seen`, or stop; returns the new
 * generation. */
static unsigned worker_wait(smelt_rt_pool *p, unsigned seen)
{
    for (int i = 0; i < POOL_SPIN_ITERS; i++) {
        unsigned g = __atomic_load_n(&p->generation, __ATOMIC_ACQUIRE);
        if (g != seen || __atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return g;
        spin_step(i);
    }
    pthread_mutex_lock(&p->mu);
    /* Announce the sleep before re-checking: pairs with the caller's
     * generation bump and sleepers load (both seq_cst), so either we see
     * the new generation or the caller sees us and broadcasts. */
    __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
    unsigned g;
    while ((g = __atomic_load_n(&p->generation, __ATOMIC_SEQ_CST)) == seen &&
           !__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST))
        pthread_cond_wait(&p->wake, &p->mu);
    __atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&p->mu);
    return g;
}

static void *worker_main(void *arg)
{
    worker_arg wa = *(worker_arg *)arg;
    free(arg);
    smelt_rt_pool *p = wa.pool;
    unsigned seen = 0;
    int placed = -1;
    worker_place(p, wa.index, -1, &placed);
    for (;;) {
        seen = worker_wait(p, seen);
        if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) break;
        worker_place(p, wa.index, __atomic_load_n(&p->caller_cpu, __ATOMIC_RELAXED), &placed);
        if (run_claimed_chunks(p, seen)) {
            /* Last one out wakes the caller if it went to sleep. */
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

static void caller_wait(smelt_rt_pool *p)
{
    for (int i = 0; i < POOL_SPIN_ITERS; i++) {
        if (__atomic_load_n(&p->chunks_left, __ATOMIC_ACQUIRE) == 0) return;
        spin_step(i);
    }
    pthread_mutex_lock(&p->mu);
    while (__atomic_load_n(&p->chunks_left, __ATOMIC_ACQUIRE) != 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

static void pool_dispatch(smelt_rt_pool *p, int threads, int64_t n, smelt_rt_task_fn fn,
                          void *closure)
{
    p->fn = fn;
    p->closure = closure;
    p->n = n;
    p->job_threads = threads < p->n_threads ? threads : p->n_threads;
    __atomic_store_n(&p->caller_cpu, p->n_cpus ? current_cpu() : -1, __ATOMIC_RELAXED);
    int chunks = job_chunks(p);
    unsigned gen = __atomic_load_n(&p->generation, __ATOMIC_RELAXED) + 1;
    __atomic_store_n(&p->chunks_left, chunks - 1, __ATOMIC_RELAXED);
    /* chunk 0 is the caller's: claims start at 1 */
    __atomic_store_n(&p->claim, (uint64_t)gen << 32 | (uint64_t)chunks << 16 | 1u, __ATOMIC_RELEASE);
    __atomic_store_n(&p->generation, gen, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    run_chunk(p, 0);
    run_claimed_chunks(p, gen);
    caller_wait(p);
}

void smelt_rt_parallel_for(smelt_rt_pool *pool, int64_t n, smelt_rt_task_fn fn, void *closure)
{
    if (n <= 0 || !fn) return;
    int threads = pool ? pool->n_threads : 1;
    if (pool && pool->target) pool = pool->target; /* a view: its limit, the shared workers */
    if (!pool || pool->n_threads <= 1 || threads <= 1 || n == 1) {
        fn(closure, 0, n);
        return;
    }
    int expected = 0;
    if (!__atomic_compare_exchange_n(&pool->busy, &expected, 1, 0, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED)) {
        fn(closure, 0, n); /* nested, or another thread owns the pool */
        return;
    }
    pool_dispatch(pool, threads, n, fn, closure);
    __atomic_store_n(&pool->busy, 0, __ATOMIC_RELEASE);
}

static int cores_available(void)
{
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c > 0) return c;
    }
#endif
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (int)c : 1;
}

static void pool_stop_workers(smelt_rt_pool *p, int started)
{
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < started; i++) pthread_join(p->threads[i], NULL);
}

/* A placed worker starts on its own core: created unplaced, Linux may queue
 * it behind the caller, which (taking every chunk itself) leaves it no time
 * to run and move for whole benchmark runs. */
static int create_worker(smelt_rt_pool *p, pthread_t *th, worker_arg *wa)
{
#if defined(__linux__) && defined(CPU_COUNT)
    if (p->n_cpus) {
        pthread_attr_t attr;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(p->cpus[wa->index], &one);
        if (pthread_attr_init(&attr) == 0) {
            int rc = pthread_attr_setaffinity_np(&attr, sizeof one, &one) == 0
                         ? pthread_create(th, &attr, worker_main, wa)
                         : -1;
            pthread_attr_destroy(&attr);
            if (rc == 0) return 0;
        }
    }
#endif
    return pthread_create(th, NULL, worker_main, wa);
}

static int pool_start_workers(smelt_rt_pool *p)
{
    for (int i = 0; i < p->n_threads - 1; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) {
            pool_stop_workers(p, i);
            return 0;
        }
        wa->pool = p;
        wa->index = i + 1;
        if (create_worker(p, &p->threads[i], wa) != 0) {
            free(wa);
            pool_stop_workers(p, i);
            return 0;
        }
    }
    return 1;
}

smelt_rt_pool *smelt_rt_pool_new(int num_threads)
{
    if (num_threads <= 0) num_threads = cores_available();
    if (num_threads > POOL_MAX_THREADS) num_threads = POOL_MAX_THREADS;
    smelt_rt_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->head.parallel_for = smelt_rt_parallel_for;
    p->n_threads = num_threads;
    p->threads = calloc((size_t)num_threads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    pool_init_placement(p);
    if (!pool_start_workers(p)) {
        pthread_cond_destroy(&p->done);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
        free(p->cpus);
        free(p->threads);
        free(p);
        return NULL;
    }
    return p;
}

/* ---- The process-wide pool ---------------------------------------------------- */

static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static smelt_rt_pool *shared_pool;  /* where new views go; under shared_mu */
static int shared_configured;        /* smelt_rt_set_pool_threads; 0: grow */
static int shared_started;           /* shared pools started (tests) */

static void pool_destroy(smelt_rt_pool *pool);

void smelt_rt_set_pool_threads(int num_threads)
{
    if (num_threads > POOL_MAX_THREADS) num_threads = POOL_MAX_THREADS;
    pthread_mutex_lock(&shared_mu);
    shared_configured = num_threads > 0 ? num_threads : 0;
    pthread_mutex_unlock(&shared_mu);
}

int smelt_rt_shared_pools_started(void)
{
    pthread_mutex_lock(&shared_mu);
    int n = shared_started;
    pthread_mutex_unlock(&shared_mu);
    return n;
}

smelt_rt_pool *smelt_rt_pool_shared(int num_threads)
{
    smelt_rt_pool *view = calloc(1, sizeof *view);
    if (!view) return NULL;
    if (num_threads > POOL_MAX_THREADS) num_threads = POOL_MAX_THREADS;
    pthread_mutex_lock(&shared_mu);
    int want = num_threads > 0 ? num_threads : shared_configured ? shared_configured
                                                                 : cores_available();
    if (shared_configured && want > shared_configured) want = shared_configured;
    if (!shared_pool || shared_pool->n_threads < want) {
        smelt_rt_pool *grown = smelt_rt_pool_new(want);
        if (!grown) {
            pthread_mutex_unlock(&shared_mu);
            free(view);
            return NULL;
        }
        shared_pool = grown; /* an older, smaller one stays until its last view goes */
        shared_started++;
    }
    shared_pool->views++;
    view->head.parallel_for = smelt_rt_parallel_for;
    view->target = shared_pool;
    view->n_threads = want;
    pthread_mutex_unlock(&shared_mu);
    return view;
}

static void view_free(smelt_rt_pool *view)
{
    smelt_rt_pool *target = view->target;
    pthread_mutex_lock(&shared_mu);
    if (--target->views == 0) {
        if (target == shared_pool) shared_pool = NULL;
        pool_destroy(target);
    }
    pthread_mutex_unlock(&shared_mu);
    free(view);
}

void smelt_rt_pool_free(smelt_rt_pool *pool)
{
    if (!pool) return;
    if (pool->target) {
        view_free(pool);
        return;
    }
    pool_destroy(pool);
}

static void pool_destroy(smelt_rt_pool *pool)
{
    pool_stop_workers(pool, pool->n_threads - 1);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->mu);
    free(pool->cpus);
    free(pool->threads);
    free(pool);
}

int smelt_rt_pool_size(const smelt_rt_pool *pool)
{
    if (!pool) return 1;
    if (pool->target && pool->target->n_threads < pool->n_threads) return pool->target->n_threads;
    return pool->n_threads;
}
