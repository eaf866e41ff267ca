/* Distributed tuning over MPI: `mpirun -np N smelt tune MODEL... -o FILE`.
 *
 * Rank 0 runs the tuning session (search, cost model, records file); its
 * runner hands each batch's candidates, as schedule texts, to idle worker
 * ranks, at most a worker's build jobs at a time, and waits for their
 * results.  A worker loads the same models and extracts the same tasks
 * (extraction is deterministic; its hello carries its target key and task
 * keys, and rank 0 refuses a mismatch), then lowers, builds and measures
 * each candidate as a local run would and sends each result as soon as it
 * has it.
 *
 * Rank 0 measures nothing while a worker is left: on a shared host its
 * measurements and a worker's would disturb each other, and rank 0 is idle
 * while a batch is out, so one more rank on rank 0's host (mpirun -np N+1)
 * uses that host without competing.  Rank 0 measures the rest itself when
 * no worker is left, and verifies each task's winner itself (winner and
 * default interleaved on one machine, as in a local run).
 *
 * Dead ranks: a worker's main thread talks MPI and beats every BEAT_S while
 * a second thread measures.  Rank 0 counts a worker lost after BEAT_GRACE_S
 * without a message, or STALL_S plus the candidate timeout without a
 * result while it has work; its unanswered candidates are recorded as
 * TUNE_RUN_ERROR naming the rank, and it gets no more work.  Rank 0 beats
 * too, from a thread of its own (its main thread may measure or train for
 * a while; MPI calls are serialised by a mutex), and a worker that hears
 * nothing from rank 0 for RANK0_GRACE_S exits.  Open MPI's mpirun aborts
 * the whole job when a rank dies unless started with --enable-recovery
 * (docs/ARCHITECTURE.md).
 *
 * Every wait polls and sleeps: Open MPI's blocking calls spin, and a
 * spinning rank would take a core from the measurement. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/tune_mpi.h"

enum { TAG_HELLO = 1, TAG_BEAT, TAG_RESULT, TAG_WORK, TAG_STOP };

#define BEAT_S 1.0         /* a worker's heartbeat period */
#define BEAT_GRACE_S 10.0  /* silence after which rank 0 counts a worker dead */
#define STALL_S 300.0      /* beating but no result: bench set-up and builds */
#define RANK0_GRACE_S 10.0 /* a worker with no word from rank 0 this long exits */
#define STOP_WAIT_S 5.0    /* for the stop messages to leave at the end */
#define POLL_NS 2000000L

enum { OWNER_PENDING = -1, OWNER_DONE = -2 };

/* A result on the wire (every rank runs the same binary). */
typedef struct wire_result {
    int32_t job, index, status, runs;
    double ms, spread;
    char reason[160];
} wire_result;

typedef struct outgoing {
    MPI_Request req;
    char *buf;
    int dest;
} outgoing;

typedef struct peer {
    bool alive, hello;
    char host[64];
    int jobs;            /* candidates it builds at once */
    char *hello_text;
    double last_heard, last_progress;
    int job;             /* in flight, -1: idle */
    int in_flight;       /* its unanswered candidates */
    int measured;
    char lost_why[128];
} peer;

struct tune_mpi {
    int rank, size;
    outgoing *out;
    int n_out, cap_out;
    /* rank 0 */
    pthread_mutex_t mu;        /* held around every MPI call: the beat thread's too */
    pthread_t beat;
    bool beating, stop_beating;
    peer *peers;
    int next_job, next_peer, local_measured;
    bool local_note;
    double timeout_s;
    tune_candidate *const *cs; /* the batch being run */
    int n;
    int *owner;                /* per candidate: rank, OWNER_PENDING or OWNER_DONE */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap(void)
{
    struct timespec ts = {0, POLL_NS};
    nanosleep(&ts, NULL);
}

static smelt_status oom(smelt_ctx *ctx) { return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory"); }

static smelt_status mpi_fail(smelt_ctx *ctx, int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
    return smelt_errf(ctx, SMELT_ERR_RUNTIME, "MPI %s: %s", what, msg);
}

/* ---- messages ---- */

/* Send buf (owned, freed once sent) without waiting. */
static smelt_status post(smelt_ctx *ctx, tune_mpi *m, int dest, int tag, char *buf, int len)
{
    if (m->n_out == m->cap_out) {
        int cap = m->cap_out ? 2 * m->cap_out : 16;
        outgoing *o = smelt_realloc(m->out, sizeof *o * (size_t)m->cap_out, sizeof *o * (size_t)cap);
        if (!o) {
            smelt_free(buf);
            return oom(ctx);
        }
        m->out = o;
        m->cap_out = cap;
    }
    outgoing *o = &m->out[m->n_out];
    int rc = MPI_Isend(buf, len, MPI_BYTE, dest, tag, MPI_COMM_WORLD, &o->req);
    if (rc != MPI_SUCCESS) {
        smelt_free(buf);
        return mpi_fail(ctx, rc, "send");
    }
    o->buf = buf;
    o->dest = dest;
    m->n_out++;
    return SMELT_OK;
}

static smelt_status post_copy(smelt_ctx *ctx, tune_mpi *m, int dest, int tag, const void *data, int len)
{
    char *buf = smelt_alloc((size_t)len + 1);
    if (!buf) return oom(ctx);
    if (len) memcpy(buf, data, (size_t)len);
    return post(ctx, m, dest, tag, buf, len);
}

/* Forget the sends that left; true when one to dest (or any, dest < 0) is
 * still pending. */
static bool outbox_poll(tune_mpi *m, int dest)
{
    bool pending = false;
    for (int i = 0; i < m->n_out;) {
        int done = 0;
        if (MPI_Test(&m->out[i].req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) done = 1;
        if (done) {
            smelt_free(m->out[i].buf);
            m->out[i] = m->out[--m->n_out];
            continue;
        }
        pending |= dest < 0 || m->out[i].dest == dest;
        i++;
    }
    return pending;
}

/* Receive a message Iprobe found into *buf (NUL-terminated, smelt_free). */
static smelt_status recv_probed(smelt_ctx *ctx, MPI_Status *st, char **buf, int *len)
{
    int n = 0;
    int rc = MPI_Get_count(st, MPI_BYTE, &n);
    if (rc != MPI_SUCCESS || n < 0) return mpi_fail(ctx, rc, "message size");
    if (!(*buf = smelt_alloc((size_t)n + 1))) return oom(ctx);
    rc = MPI_Recv(*buf, n, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        smelt_free(*buf);
        *buf = NULL;
        return mpi_fail(ctx, rc, "receive");
    }
    (*buf)[n] = 0;
    *len = n;
    return SMELT_OK;
}

/* The next message from source (MPI_ANY_SOURCE for any), or *buf NULL. */
static smelt_status next_message(smelt_ctx *ctx, int source, int *from, int *tag, char **buf, int *len)
{
    int flag = 0;
    MPI_Status st;
    *buf = NULL;
    int rc = MPI_Iprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    if (rc != MPI_SUCCESS) return mpi_fail(ctx, rc, "probe");
    if (!flag) return SMELT_OK;
    *from = st.MPI_SOURCE;
    *tag = st.MPI_TAG;
    return recv_probed(ctx, &st, buf, len);
}

/* ---- set-up and shutdown ---- */

/* Rank 0's heartbeat to the live workers, whatever its main thread does. */
static void *beat_main(void *arg)
{
    tune_mpi *m = arg;
    smelt_ctx ctx = {.status = SMELT_OK};
    for (;;) {
        pthread_mutex_lock(&m->mu);
        bool stop = m->stop_beating;
        for (int r = 1; !stop && r < m->size; r++)
            if (m->peers[r].alive && post_copy(&ctx, m, r, TAG_BEAT, "", 0) != SMELT_OK) smelt_ctx_clear(&ctx);
        outbox_poll(m, -1);
        pthread_mutex_unlock(&m->mu);
        if (stop) return NULL;
        struct timespec ts = {(time_t)BEAT_S, 0};
        nanosleep(&ts, NULL);
    }
}

smelt_status tune_mpi_init(smelt_ctx *ctx, tune_mpi **out)
{
    *out = NULL;
    int provided = 0;
    /* serialized: rank 0's beat thread calls MPI too, under m->mu */
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) return mpi_fail(ctx, rc, "init");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    tune_mpi *m = smelt_calloc(1, sizeof *m);
    if (!m) return oom(ctx);
    *out = m;
    pthread_mutex_init(&m->mu, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    if (provided < MPI_THREAD_SERIALIZED)
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "this MPI library lacks MPI_THREAD_SERIALIZED");
    if (m->rank != 0) return SMELT_OK;
    if (!(m->peers = smelt_calloc((size_t)m->size, sizeof *m->peers))) return oom(ctx);
    double t = now_s();
    for (int r = 1; r < m->size; r++) {
        m->peers[r] = (peer){.alive = true, .job = -1, .jobs = 1, .last_heard = t};
        snprintf(m->peers[r].host, sizeof m->peers[r].host, "?");
    }
    if (pthread_create(&m->beat, NULL, beat_main, m) != 0)
        return smelt_errf(ctx, SMELT_ERR_RUNTIME, "cannot start rank 0's heartbeat thread");
    m->beating = true;
    return SMELT_OK;
}

int tune_mpi_rank(const tune_mpi *m) { return m->rank; }

static void stop_beating(tune_mpi *m)
{
    if (!m->beating) return;
    pthread_mutex_lock(&m->mu);
    m->stop_beating = true;
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->beat, NULL);
    m->beating = false;
}

/* Rank 0: a stop to every worker, a lost one too (if it lives, it exits);
 * wait a little for those to the live ones to leave.  A worker: wait a
 * little for its last results to leave. */
static void say_goodbye(tune_mpi *m)
{
    smelt_ctx ctx = {.status = SMELT_OK};
    for (int r = 1; m->peers && r < m->size; r++) post_copy(&ctx, m, r, TAG_STOP, "", 0);
    for (double until = now_s() + STOP_WAIT_S; now_s() < until; nap()) {
        bool pending = false;
        for (int r = 1; m->peers && r < m->size; r++)
            if (m->peers[r].alive) pending |= outbox_poll(m, r);
        if (m->rank != 0) pending = outbox_poll(m, -1);
        if (!pending) break;
    }
}

void tune_mpi_finish(tune_mpi *m)
{
    if (!m) return;
    stop_beating(m);
    say_goodbye(m);
    /* sends to dead ranks never complete: their buffers outlive MPI */
    for (int i = 0; i < m->n_out; i++) MPI_Request_free(&m->out[i].req);
    MPI_Finalize();
    for (int i = 0; i < m->n_out; i++) smelt_free(m->out[i].buf);
    smelt_free(m->out);
    for (int r = 1; m->peers && r < m->size; r++) smelt_free(m->peers[r].hello_text);
    smelt_free(m->peers);
    pthread_mutex_destroy(&m->mu);
    smelt_free(m);
}

/* ---- rank 0: bookkeeping of the workers ---- */

static void lose(tune_mpi *m, int r, const char *why)
{
    peer *p = &m->peers[r];
    p->alive = false;
    snprintf(p->lost_why, sizeof p->lost_why, "%s", why);
    int lost = 0;
    for (int i = 0; m->owner && i < m->n; i++) {
        if (m->owner[i] != r) continue;
        tune_result *res = &m->cs[i]->result;
        memset(res, 0, sizeof *res);
        res->status = TUNE_RUN_ERROR;
        snprintf(res->reason, sizeof res->reason, "rank %d (%s) did not answer: %s", r, p->host, why);
        m->owner[i] = OWNER_DONE;
        lost++;
    }
    p->job = -1;
    p->in_flight = 0;
    fprintf(stderr, "smelt tune: rank %d (%s) lost: %s; %d in-flight candidate%s recorded as run errors, "
                    "the run goes on without it\n", r, p->host, why, lost, lost == 1 ? "" : "s");
}

static void take_result(tune_mpi *m, int r, const wire_result *w)
{
    peer *p = &m->peers[r];
    if (!m->owner || w->job != p->job || w->index < 0 || w->index >= m->n || m->owner[w->index] != r)
        return; /* late: from a batch already settled */
    tune_result *res = &m->cs[w->index]->result;
    memset(res, 0, sizeof *res);
    res->status = w->status >= 0 && w->status < TUNE_STATUS_COUNT_ ? (tune_status)w->status : TUNE_RUN_ERROR;
    res->ms = w->ms;
    res->spread = w->spread;
    res->runs = w->runs;
    snprintf(res->reason, sizeof res->reason, "%.*s", (int)sizeof w->reason, w->reason);
    m->owner[w->index] = OWNER_DONE;
    p->measured++;
    p->last_progress = now_s();
    if (--p->in_flight == 0) p->job = -1;
}

/* hello: "host\njobs\ntarget KEY\nTASKKEY\n..." or "host\njobs\nerror MESSAGE\n" */
static void take_hello(peer *p, char *text)
{
    p->hello = true;
    smelt_free(p->hello_text);
    p->hello_text = text;
    char *nl = strchr(text, '\n');
    snprintf(p->host, sizeof p->host, "%.*s", nl ? (int)(nl - text) : 0, text);
    p->jobs = nl ? atoi(nl + 1) : 1;
    if (p->jobs < 1) p->jobs = 1;
}

static void handle(tune_mpi *m, int from, int tag, char *buf, int len)
{
    if (from <= 0 || from >= m->size || !m->peers[from].alive) {
        smelt_free(buf);
        return; /* a lost rank's late word */
    }
    peer *p = &m->peers[from];
    p->last_heard = now_s();
    if (tag == TAG_HELLO) {
        take_hello(p, buf);
        return;
    }
    if (tag == TAG_RESULT && len == (int)sizeof(wire_result)) {
        wire_result w;
        memcpy(&w, buf, sizeof w);
        take_result(m, from, &w);
    }
    smelt_free(buf);
}

/* Take every message that arrived, then look for workers gone silent. */
static smelt_status pump(smelt_ctx *ctx, tune_mpi *m)
{
    for (;;) {
        int from = -1, tag = 0, len = 0;
        char *buf;
        SMELT_TRY(next_message(ctx, MPI_ANY_SOURCE, &from, &tag, &buf, &len));
        if (!buf) break;
        handle(m, from, tag, buf, len);
    }
    outbox_poll(m, -1);
    double t = now_s();
    for (int r = 1; r < m->size; r++) {
        peer *p = &m->peers[r];
        char why[128];
        if (!p->alive) continue;
        if (t - p->last_heard > BEAT_GRACE_S) {
            snprintf(why, sizeof why, "no message for %.0f s (dead?)", t - p->last_heard);
            lose(m, r, why);
        } else if (p->job >= 0 && t - p->last_progress > STALL_S + m->timeout_s) {
            snprintf(why, sizeof why, "no result within %.0f s", t - p->last_progress);
            lose(m, r, why);
        }
    }
    return SMELT_OK;
}

/* Is hello's first line after host and jobs "target KEY" with rank 0's key,
 * followed by rank 0's task keys in order?  Else the reason in ctx. */
static smelt_status check_hello(smelt_ctx *ctx, int r, const peer *p, const tune_session *s)
{
    const char *line = p->hello_text;
    for (int skip = 0; skip < 2 && line; skip++) line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL;
    if (line && strncmp(line, "error ", 6) == 0)
        return smelt_errf(ctx, SMELT_ERR_ARG, "rank %d (%s): %.*s", r, p->host,
                          (int)strcspn(line + 6, "\n"), line + 6);
    const char *key = tune_session_target_key(s);
    size_t kl = strlen(key);
    if (!line || strncmp(line, "target ", 7) != 0 || strncmp(line + 7, key, kl) != 0 || line[7 + kl] != '\n')
        return smelt_errf(ctx, SMELT_ERR_ARG,
                          "rank %d (%s) measures for target '%.*s', rank 0 for '%s': records are per "
                          "target, so every rank needs the same CPU and compiler",
                          r, p->host, line ? (int)strcspn(line, "\n") : 0, line ? line : "", key);
    line += 8 + kl;
    int n = tune_session_num_tasks(s), i = 0;
    for (; i < n && *line; i++) {
        const char *tk = tune_session_task(s, i)->key;
        size_t len = strcspn(line, "\n");
        if (len != strlen(tk) || strncmp(line, tk, len) != 0) break;
        line += len + (line[len] == '\n');
    }
    if (i < n || *line) {
        int theirs = 0;
        for (const char *q = strchr(p->hello_text, '\n'); q && (q = strchr(q + 1, '\n'));) theirs++;
        return smelt_errf(ctx, SMELT_ERR_ARG,
                          "rank %d (%s) extracted other tasks than rank 0 (task %d differs; %d tasks "
                          "there, %d here): every rank must load the same models in the same order",
                          r, p->host, i + 1, theirs > 2 ? theirs - 2 : 0, n);
    }
    return SMELT_OK;
}

smelt_status tune_mpi_connect(smelt_ctx *ctx, tune_mpi *m, const tune_session *s)
{
    for (;;) {
        pthread_mutex_lock(&m->mu);
        smelt_status st = pump(ctx, m);
        bool waiting = false;
        for (int r = 1; r < m->size; r++) waiting |= m->peers[r].alive && !m->peers[r].hello;
        pthread_mutex_unlock(&m->mu);
        SMELT_TRY(st);
        if (!waiting) break;
        nap();
    }
    int workers = 0;
    for (int r = 1; r < m->size; r++) {
        if (!m->peers[r].alive) continue;
        SMELT_TRY(check_hello(ctx, r, &m->peers[r], s));
        workers++;
    }
    if (!tune_session_num_tasks(s)) return SMELT_OK;
    fprintf(stderr, "smelt tune: rank 0 searches, %d worker %s\n", workers,
            workers == 1 ? "rank measures" : "ranks measure");
    return SMELT_OK;
}

void tune_mpi_report(const tune_mpi *m)
{
    for (int r = 1; r < m->size; r++) {
        const peer *p = &m->peers[r];
        if (p->alive)
            fprintf(stderr, "smelt tune: rank %d (%s) measured %d candidates\n", r, p->host, p->measured);
        else
            fprintf(stderr, "smelt tune: rank %d (%s) measured %d candidates, then was lost: %s\n", r, p->host,
                    p->measured, p->lost_why);
    }
    if (m->local_measured)
        fprintf(stderr, "smelt tune: rank 0 measured %d candidates itself (no worker left)\n", m->local_measured);
}

/* ---- rank 0: the runner ---- */

/* WORK: int32 job, task, n, index[n], then n NUL-terminated schedule texts. */
static smelt_status dispatch(smelt_ctx *ctx, tune_mpi *m, int r, int task, int want)
{
    int idx[256], k = 0;
    size_t text = 0;
    for (int i = 0; i < m->n && k < want && k < 256; i++) {
        if (m->owner[i] != OWNER_PENDING) continue;
        idx[k++] = i;
        text += strlen(m->cs[i]->schedule) + 1;
    }
    size_t head = sizeof(int32_t) * (size_t)(3 + k);
    if (head + text > INT32_MAX) return smelt_errf(ctx, SMELT_ERR_LIMIT, "schedules of %zu bytes for one message", text);
    char *buf = smelt_alloc(head + text + 1);
    if (!buf) return oom(ctx);
    peer *p = &m->peers[r];
    int32_t h[3] = {m->next_job++, task, k};
    memcpy(buf, h, sizeof h);
    char *w = buf + sizeof h;
    for (int j = 0; j < k; j++, w += sizeof(int32_t)) {
        int32_t v = idx[j];
        memcpy(w, &v, sizeof v);
    }
    for (int j = 0; j < k; j++) {
        size_t l = strlen(m->cs[idx[j]]->schedule) + 1;
        memcpy(w, m->cs[idx[j]]->schedule, l);
        w += l;
    }
    SMELT_TRY(post(ctx, m, r, TAG_WORK, buf, (int)(head + text)));
    for (int j = 0; j < k; j++) m->owner[idx[j]] = r;
    p->job = h[0];
    p->in_flight = k;
    p->last_progress = now_s();
    return SMELT_OK;
}

/* Spread the pending candidates over the idle workers, evenly, at most a
 * worker's build jobs each (what a dying rank can lose). */
static smelt_status dispatch_idle(smelt_ctx *ctx, tune_mpi *m, int task)
{
    int pending = 0, idle = 0;
    for (int i = 0; i < m->n; i++) pending += m->owner[i] == OWNER_PENDING;
    for (int r = 1; r < m->size; r++) idle += m->peers[r].alive && m->peers[r].job < 0;
    for (int k = 0; k < m->size - 1 && pending > 0 && idle > 0; k++) {
        int r = 1 + (m->next_peer + k) % (m->size - 1);
        peer *p = &m->peers[r];
        if (!p->alive || p->job >= 0) continue;
        int want = (pending + idle - 1) / idle;
        if (want > p->jobs) want = p->jobs;
        SMELT_TRY(dispatch(ctx, m, r, task, want));
        pending -= p->in_flight;
        idle--;
    }
    m->next_peer = (m->next_peer + 1) % (m->size > 1 ? m->size - 1 : 1);
    return SMELT_OK;
}

static smelt_status run_locally(smelt_ctx *ctx, tune_mpi *m, int task, tune_bench *b,
                                const tune_measure_options *o)
{
    tune_candidate **rest = smelt_calloc((size_t)m->n + 1, sizeof *rest);
    if (!rest) return oom(ctx);
    int k = 0;
    for (int i = 0; i < m->n; i++)
        if (m->owner[i] == OWNER_PENDING) rest[k++] = m->cs[i];
    if (!m->local_note && k)
        fprintf(stderr, "smelt tune: no worker rank left; rank 0 measures the rest itself\n");
    m->local_note = true;
    tune_runner local = tune_local_runner();
    smelt_status st = local.run(local.user, ctx, task, b, rest, k, o);
    m->local_measured += k;
    for (int i = 0; i < m->n; i++) m->owner[i] = OWNER_DONE;
    smelt_free(rest);
    return st;
}

static smelt_status mpi_run(void *user, smelt_ctx *ctx, int task, tune_bench *b,
                            tune_candidate *const *cs, int n, const tune_measure_options *o)
{
    tune_mpi *m = user;
    int *owner = smelt_calloc((size_t)n + 1, sizeof *owner);
    if (!owner) return oom(ctx);
    for (int i = 0; i < n; i++)
        owner[i] = cs[i]->lp && cs[i]->schedule && cs[i]->result.status == TUNE_OK ? OWNER_PENDING : OWNER_DONE;
    m->cs = cs;
    m->n = n;
    m->owner = owner;
    m->timeout_s = o->timeout_s;
    smelt_status st = SMELT_OK;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        st = pump(ctx, m);
        int left = 0, workers = 0;
        for (int i = 0; i < n; i++) left += owner[i] != OWNER_DONE;
        for (int r = 1; r < m->size; r++) workers += m->peers[r].alive;
        if (st == SMELT_OK && left && workers) st = dispatch_idle(ctx, m, task);
        pthread_mutex_unlock(&m->mu);
        if (st != SMELT_OK || left == 0) break;
        if (workers == 0) { /* unlocked: the beat goes on while rank 0 measures */
            st = run_locally(ctx, m, task, b, o);
            break;
        }
        nap();
    }
    m->cs = NULL;
    m->owner = NULL;
    m->n = 0;
    smelt_free(owner);
    return st;
}

tune_runner tune_mpi_runner(tune_mpi *m)
{
    tune_runner r = {mpi_run, m};
    return r;
}

/* ---- workers ---- */

typedef struct job {
    int32_t id, task, n;
    int32_t *index;
    char **text;  /* point into buf */
    char *buf;
    struct job *next;
} job;

typedef struct worker {
    tune_mpi *m;
    tune_mpi_setup setup;
    void *user;
    tune_measure_options o;
    tune_session **s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *head, *tail;        /* for the measuring thread */
    wire_result *res;        /* for the main thread to send */
    int n_res, cap_res;
    char *hello;             /* for the main thread to send */
    bool stop;
    bool rank0_lost;         /* no word from rank 0: leave at once */
    int measured;
} worker;

static void job_free(job *j)
{
    if (!j) return;
    smelt_free(j->text);
    smelt_free(j->buf);
    smelt_free(j);
}

/* Parse a WORK message (untrusted only as far as rank 0 is). */
static job *job_parse(char *buf, int len)
{
    job *j = smelt_calloc(1, sizeof *j);
    int32_t h[3];
    if (!j || len < (int)sizeof h) {
        smelt_free(j);
        return NULL;
    }
    memcpy(h, buf, sizeof h);
    j->id = h[0];
    j->task = h[1];
    j->n = h[2];
    size_t head = sizeof(int32_t) * (size_t)(3 + (j->n > 0 ? j->n : 0));
    if (j->n < 0 || j->n > 256 || head > (size_t)len || !(j->text = smelt_calloc((size_t)j->n + 1, sizeof *j->text))) {
        job_free(j);
        return NULL;
    }
    j->buf = buf;
    j->index = (int32_t *)(void *)(buf + sizeof h);
    char *p = buf + head, *end = buf + len;
    for (int i = 0; i < j->n; i++) {
        if (p >= end) {
            j->buf = NULL;
            job_free(j);
            return NULL;
        }
        j->text[i] = p;
        p += strlen(p) + 1; /* buf is NUL-terminated past len */
    }
    return j;
}

static void put_result(worker *w, const job *j, int i, const tune_result *r)
{
    wire_result x;
    memset(&x, 0, sizeof x);
    int32_t index;
    memcpy(&index, &j->index[i], sizeof index);
    x.job = j->id;
    x.index = index;
    x.status = (int32_t)r->status;
    x.runs = r->runs;
    x.ms = r->ms;
    x.spread = r->spread;
    snprintf(x.reason, sizeof x.reason, "%s", r->reason);
    pthread_mutex_lock(&w->mu);
    if (w->n_res == w->cap_res) {
        int cap = w->cap_res ? 2 * w->cap_res : 16;
        wire_result *p = smelt_realloc(w->res, sizeof *p * (size_t)w->cap_res, sizeof *p * (size_t)cap);
        if (p) {
            w->res = p;
            w->cap_res = cap;
        }
    }
    if (w->n_res < w->cap_res) w->res[w->n_res++] = x; /* else rank 0 counts it lost */
    w->measured++;
    pthread_mutex_unlock(&w->mu);
}

/* Lower, build and measure a job's candidates as a local run would. */
static void run_job(worker *w, smelt_ctx *ctx, const job *j)
{
    tune_bench *b = NULL;
    smelt_ctx_clear(ctx);
    smelt_status st = tune_session_bench(ctx, *w->s, j->task, &b);
    if (st == SMELT_OK && !b)
        st = smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "rank %d cannot set up task %d", w->m->rank, j->task + 1);
    tune_candidate *cs = smelt_calloc((size_t)j->n + 1, sizeof *cs);
    tune_candidate **ptrs = smelt_calloc((size_t)j->n + 1, sizeof *ptrs);
    if (st == SMELT_OK && (!cs || !ptrs)) st = oom(ctx);
    for (int i = 0; st == SMELT_OK && i < j->n; i++) {
        ptrs[i] = &cs[i];
        if (!(cs[i].schedule = smelt_strdup(j->text[i]))) st = oom(ctx);
        if (st == SMELT_OK) st = tune_lower_candidate(ctx, b, &cs[i]);
    }
    if (st == SMELT_OK) st = tune_build_candidates(ctx, b, ptrs, j->n, &w->o);
    for (int i = 0; i < j->n; i++) {
        if (st == SMELT_OK) st = tune_measure(ctx, b, &cs[i], &w->o);
        tune_result r = cs ? cs[i].result : (tune_result){0};
        if (st != SMELT_OK) {
            memset(&r, 0, sizeof r);
            r.status = TUNE_RUN_ERROR;
            snprintf(r.reason, sizeof r.reason, "rank %d: %s", w->m->rank, smelt_ctx_message(ctx));
        }
        put_result(w, j, i, &r);
    }
    for (int i = 0; cs && i < j->n; i++) tune_candidate_fini(&cs[i]);
    smelt_free(cs);
    smelt_free(ptrs);
}

static char *make_hello(const worker *w, const tune_session *s, const char *error)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    smelt_strbuf_printf(&sb, "%s\n%d\n", host, w->o.build_jobs > 0 ? w->o.build_jobs : 1);
    if (!s) {
        smelt_strbuf_printf(&sb, "error %s\n", error);
    } else {
        smelt_strbuf_printf(&sb, "target %s\n", tune_session_target_key(s));
        for (int i = 0; i < tune_session_num_tasks(s); i++)
            smelt_strbuf_printf(&sb, "%s\n", tune_session_task(s, i)->key);
    }
    char *text = sb.failed ? NULL : smelt_strdup(smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
    return text;
}

/* The measuring thread: load the models, say hello, run jobs until stop. */
static void *work_main(void *arg)
{
    worker *w = arg;
    smelt_ctx ctx = {.status = SMELT_OK};
    smelt_status st = w->setup(w->user, &ctx, w->s);
    char *hello = make_hello(w, st == SMELT_OK ? *w->s : NULL, smelt_ctx_message(&ctx));
    pthread_mutex_lock(&w->mu);
    w->hello = hello ? hello : smelt_strdup("?\n1\nerror out of memory\n");
    pthread_mutex_unlock(&w->mu);
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->head && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
        job *j = w->stop ? NULL : w->head;
        if (j && !(w->head = j->next)) w->tail = NULL;
        pthread_mutex_unlock(&w->mu);
        if (!j) break;
        if (st == SMELT_OK) run_job(w, &ctx, j);
        job_free(j);
    }
    return NULL;
}

static void enqueue(worker *w, job *j)
{
    pthread_mutex_lock(&w->mu);
    if (w->tail) w->tail->next = j;
    else w->head = j;
    w->tail = j;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Hand what the measuring thread produced to MPI. */
static smelt_status send_produced(smelt_ctx *ctx, worker *w)
{
    pthread_mutex_lock(&w->mu);
    char *hello = w->hello;
    w->hello = NULL;
    wire_result *res = w->res;
    int n = w->n_res;
    w->res = NULL;
    w->n_res = w->cap_res = 0;
    pthread_mutex_unlock(&w->mu);
    smelt_status st = SMELT_OK;
    if (hello) st = post(ctx, w->m, 0, TAG_HELLO, hello, (int)strlen(hello));
    for (int i = 0; st == SMELT_OK && i < n; i++) st = post_copy(ctx, w->m, 0, TAG_RESULT, &res[i], sizeof res[i]);
    smelt_free(res);
    return st;
}

/* The main thread: messages from and to rank 0, and the heartbeat. */
static smelt_status worker_loop(smelt_ctx *ctx, worker *w)
{
    double last_beat = 0, last_word = now_s();
    for (;;) {
        int from = 0, tag = 0, len = 0;
        char *buf;
        SMELT_TRY(next_message(ctx, 0, &from, &tag, &buf, &len));
        if (buf) last_word = now_s();
        if (buf && tag == TAG_STOP) {
            smelt_free(buf);
            return SMELT_OK;
        }
        if (buf && tag == TAG_WORK) {
            job *j = job_parse(buf, len);
            if (!j) {
                smelt_free(buf);
                return smelt_errf(ctx, SMELT_ERR_PARSE, "malformed work message from rank 0");
            }
            enqueue(w, j);
        } else {
            smelt_free(buf);
        }
        SMELT_TRY(send_produced(ctx, w));
        if (now_s() - last_beat >= BEAT_S) {
            SMELT_TRY(post_copy(ctx, w->m, 0, TAG_BEAT, "", 0));
            last_beat = now_s();
        }
        outbox_poll(w->m, -1);
        if (now_s() - last_word > RANK0_GRACE_S) {
            w->rank0_lost = true;
            return smelt_errf(ctx, SMELT_ERR_RUNTIME, "no word from rank 0 for %.0f s (dead?); giving up",
                              RANK0_GRACE_S);
        }
        if (!buf) nap();
    }
}

/* Rank 0 is gone: the measuring thread may be minutes into a batch and
 * MPI_Finalize may wait for the dead rank, so the worker leaves now.  Its
 * measuring children die with it (PR_SET_PDEATHSIG in tune/measure.c). */
static _Noreturn void abandon_job(const tune_mpi *m, const smelt_ctx *ctx)
{
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    fprintf(stderr, "smelt tune: rank %d (%s): %s\n", m->rank, host, smelt_ctx_message(ctx));
    fflush(NULL);
    _exit(1);
}

int tune_mpi_worker(tune_mpi *m, tune_mpi_setup setup, void *user, const tune_measure_options *o,
                    tune_session **s)
{
    worker w;
    memset(&w, 0, sizeof w);
    w.m = m;
    w.setup = setup;
    w.user = user;
    w.o = *o;
    w.s = s;
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    pthread_t th;
    smelt_ctx ctx = {.status = SMELT_OK};
    if (pthread_create(&th, NULL, work_main, &w) != 0) {
        fprintf(stderr, "smelt tune: rank %d: cannot start the measuring thread\n", m->rank);
        return 1;
    }
    smelt_status st = worker_loop(&ctx, &w);
    if (w.rank0_lost) abandon_job(m, &ctx);
    pthread_mutex_lock(&w.mu);
    w.stop = true;
    pthread_cond_signal(&w.cv);
    pthread_mutex_unlock(&w.mu);
    pthread_join(th, NULL);
    for (job *j = w.head, *next; j; j = next) {
        next = j->next;
        job_free(j);
    }
    smelt_free(w.res);
    smelt_free(w.hello);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    if (st != SMELT_OK) {
        fprintf(stderr, "smelt tune: rank %d (%s): %s\n", m->rank, host, smelt_ctx_message(&ctx));
        return 1;
    }
    fprintf(stderr, "smelt tune: worker rank %d (%s) done after %d candidates\n", m->rank, host, w.measured);
    return 0;
}
