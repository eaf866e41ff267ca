/* Mutation and fault-injection tests of the ONNX frontend.
 *
 *   test_frontend_fuzz [MODEL.onnx]     (default: the checked-in tiny_cnn)
 *   test_frontend_fuzz --alloc-fail MODEL.onnx...   (allocation failures only)
 *
 * Starting from a valid model's bytes: (a) truncate at every offset, (b) flip
 * single bits and overwrite single bytes at seeded positions, (c) splice
 * random garbage and copies of the model's own bytes into it.  Each mutant is
 * loaded with smelt_model_load_bytes and, if it loads, run with the reference
 * executor on random inputs.  Each attempt must succeed or fail with a status
 * and a non-empty message; memory errors abort under ASan/UBSan.
 *
 * Then allocation failures: the N-th allocation fails, for N = 1.. until a
 * load (and then a run) succeeds; each failure must be a clean
 * SMELT_ERR_NOMEM, and ASan's leak checker at exit proves nothing leaked.
 *
 * All allocations go through a budget allocator, so a mutant asking for a
 * giant tensor fails cleanly (SMELT_ERR_NOMEM) instead of exhausting the
 * machine.  Deterministic: fixed seeds.
 */
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "smelt.h"
#include "test_util.h"

#ifndef SMELT_TINY_CNN_PATH
#define SMELT_TINY_CNN_PATH "models/tiny_cnn/model.onnx"
#endif

/* ---- allocator: size budget and fault injection ---- */

#define MAX_ALLOC ((size_t)256 << 20)  /* one allocation */
#define MAX_LIVE ((size_t)1 << 30)     /* all live allocations */
#define MAX_INPUT_ELEMS ((int64_t)1 << 22)

typedef struct alloc_state {
    size_t live;
    long count;   /* allocations so far */
    long fail_at; /* fail allocation number fail_at (1-based); 0: never */
    long failed;  /* allocations refused */
} alloc_state;

static alloc_state g_as;

/* A 16-byte header keeps the size (for the live total) and the alignment. */
static void *budget_alloc(void *user, size_t size)
{
    alloc_state *as = user;
    as->count++;
    if ((as->fail_at && as->count == as->fail_at) || size > MAX_ALLOC ||
        as->live + size > MAX_LIVE) {
        as->failed++;
        return NULL;
    }
    unsigned char *p = malloc(size + 16);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    as->live += size;
    return p + 16;
}

static void budget_release(void *user, void *ptr)
{
    alloc_state *as = user;
    if (!ptr) return;
    unsigned char *p = (unsigned char *)ptr - 16;
    size_t size;
    memcpy(&size, p, sizeof size);
    as->live -= size;
    free(p);
}

static void install_allocator(long fail_at)
{
    g_as.count = 0;
    g_as.fail_at = fail_at;
    smelt_allocator a = {budget_alloc, budget_release, &g_as};
    smelt_set_allocator(&a);
}

/* ---- helpers ---- */

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

typedef struct tally {
    int loaded, load_failed, ran, run_failed, skipped_big;
    int status_count[SMELT_STATUS_COUNT_];
} tally;

/* A failed call must leave a status and a message. */
static void check_failure(smelt_ctx *ctx, tally *t, const char *what)
{
    smelt_status s = smelt_ctx_status(ctx);
    const char *msg = smelt_ctx_message(ctx);
    if (s == SMELT_OK || !msg || !*msg)
        fprintf(stderr, "%s failed without a status/message (status %d)\n", what, (int)s);
    CHECK(s != SMELT_OK && s < SMELT_STATUS_COUNT_);
    CHECK(msg && *msg);
    if (s == SMELT_ERR_INTERNAL) fprintf(stderr, "%s: internal error: %s\n", what, msg);
    CHECK(s != SMELT_ERR_INTERNAL); /* compiler bugs are not an answer to bad input */
    if (s < SMELT_STATUS_COUNT_) t->status_count[s]++;
    if (getenv("SMELT_FUZZ_VERBOSE")) fprintf(stderr, "%s: %s\n", what, msg);
}

static void free_inputs(smelt_tensor *ins, int n)
{
    for (int i = 0; i < n; i++) smelt_tensor_release(&ins[i]);
    free(ins);
}

/* Random inputs shaped like the model's (symbolic dims = 1); false if they
 * would be too big to bother with or cannot be described. */
static bool make_inputs(smelt_model *m, uint64_t seed, smelt_tensor **out)
{
    int ni = smelt_model_num_inputs(m);
    smelt_tensor *ins = calloc((size_t)ni + 1, sizeof *ins);
    for (int i = 0; ins && i < ni; i++) {
        const char *name;
        int64_t dims[SMELT_MAX_RANK];
        smelt_tensor *t = &ins[i];
        smelt_model_input_info(m, i, &name, &t->dtype, &t->rank, dims);
        int64_t numel = 1;
        for (int d = 0; d < t->rank; d++) {
            t->dims[d] = dims[d] < 0 ? 1 : dims[d];
            numel *= t->dims[d] ? t->dims[d] : 1;
            if (numel > MAX_INPUT_ELEMS) break;
        }
        size_t es = smelt_dtype_size(t->dtype);
        if (t->rank < 0 || numel > MAX_INPUT_ELEMS || !es ||
            !(t->data = smelt_calloc((size_t)numel, es))) {
            t->rank = 0;
            free_inputs(ins, i + 1);
            return false;
        }
        io_fill_random(t, seed + (uint64_t)i, 3);
    }
    *out = ins;
    return ins != NULL;
}

static void run_loaded(smelt_ctx *ctx, smelt_model *m, uint64_t seed, tally *t)
{
    smelt_tensor *ins;
    if (!make_inputs(m, seed, &ins)) {
        t->skipped_big++;
        return;
    }
    int ni = smelt_model_num_inputs(m), no = smelt_model_num_outputs(m);
    smelt_tensor *outs = calloc((size_t)no + 1, sizeof *outs);
    if (smelt_model_run_reference(ctx, m, ins, ni, outs, no) == SMELT_OK) {
        t->ran++;
        for (int i = 0; i < no; i++) smelt_tensor_release(&outs[i]);
    } else {
        t->run_failed++;
        check_failure(ctx, t, "run");
    }
    free(outs);
    free_inputs(ins, ni);
}

/* Load one mutant; run it if it loads. */
static void attempt(const unsigned char *bytes, size_t size, uint64_t seed, tally *t)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load_bytes(ctx, bytes, size, NULL);
    if (!m) {
        t->load_failed++;
        check_failure(ctx, t, "load");
    } else {
        t->loaded++;
        CHECK(smelt_ctx_status(ctx) == SMELT_OK);
        run_loaded(ctx, m, seed, t);
        smelt_model_free(m);
    }
    smelt_ctx_free(ctx);
}

static void report(const char *what, const tally *t)
{
    printf("%-14s loaded %5d (ran %5d, run failed %4d, inputs too big %3d), failed %5d:", what,
           t->loaded, t->ran, t->run_failed, t->skipped_big, t->load_failed);
    for (int s = 1; s < SMELT_STATUS_COUNT_; s++)
        if (t->status_count[s]) printf(" %s %d;", smelt_status_name(s), t->status_count[s]);
    printf("\n");
}

/* ---- mutations ---- */

static void fuzz_truncate(const unsigned char *model, size_t size)
{
    tally t = {0};
    for (size_t n = 0; n < size; n++) attempt(model, n, n, &t);
    CHECK(t.load_failed > 0);
    report("truncate", &t);
}

static void fuzz_flip(const unsigned char *model, size_t size, int rounds)
{
    tally t = {0};
    unsigned char *buf = malloc(size);
    for (int r = 0; r < rounds; r++) {
        memcpy(buf, model, size);
        int edits = 1 + (int)(rnd() % 3);
        for (int e = 0; e < edits; e++) {
            size_t pos = rnd() % size;
            if (rnd() % 2) buf[pos] ^= (unsigned char)(1u << (rnd() % 8));
            else buf[pos] = (unsigned char)rnd();
        }
        attempt(buf, size, (uint64_t)r, &t);
    }
    free(buf);
    report("bit/byte flip", &t);
}

/* Interesting varint values land in length and dim fields. */
static const unsigned char k_magic[][10] = {
    {0xff, 0xff, 0xff, 0xff, 0x0f},                               /* 2^32 - 1 */
    {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, /* -1 */
    {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, /* INT64_MIN */
    {0x00},
    {0x09},
};

static void fuzz_splice(const unsigned char *model, size_t size, int rounds)
{
    tally t = {0};
    unsigned char *buf = malloc(size * 2 + 64);
    for (int r = 0; r < rounds; r++) {
        size_t pos = rnd() % size, n = size;
        memcpy(buf, model, size);
        size_t len = 1 + rnd() % 32;
        switch (rnd() % 4) {
        case 0: /* insert random bytes */
            memmove(buf + pos + len, buf + pos, n - pos);
            for (size_t i = 0; i < len; i++) buf[pos + i] = (unsigned char)rnd();
            n += len;
            break;
        case 1: /* overwrite with a magic varint */
        {
            const unsigned char *mg = k_magic[rnd() % SMELT_ARRAY_LEN(k_magic)];
            for (size_t i = 0; i < 10 && pos + i < n; i++) buf[pos + i] = mg[i];
            break;
        }
        case 2: /* insert a copy of another part of the model */
        {
            size_t src = rnd() % size, clen = 1 + rnd() % 64;
            if (clen > size - src) clen = size - src;
            if (clen > size) clen = size;
            memmove(buf + pos + clen, buf + pos, n - pos);
            memcpy(buf + pos, model + src, clen);
            n += clen;
            break;
        }
        default: /* delete a range */
            if (len > n - pos) len = n - pos;
            memmove(buf + pos, buf + pos + len, n - pos - len);
            n -= len;
            break;
        }
        attempt(buf, n, (uint64_t)r, &t);
    }
    free(buf);
    report("splice", &t);
}

/* ---- allocation failures ---- */

/* Fail allocation N of a load, N = 1.. until the load succeeds. */
static void alloc_fail_load(const unsigned char *model, size_t size)
{
    long n = 1;
    int nomem = 0, other = 0, absorbed = 0;
    for (;; n++) {
        smelt_ctx *ctx = smelt_ctx_new();
        install_allocator(n);
        smelt_model *m = smelt_model_load_bytes(ctx, model, size, NULL);
        bool hit = g_as.count >= n; /* the failure was injected */
        install_allocator(0);
        if (m) {
            smelt_model_free(m);
            smelt_ctx_free(ctx);
            if (!hit) break;
            absorbed++; /* a refused allocation the loader worked around */
            if (getenv("SMELT_FUZZ_VERBOSE")) fprintf(stderr, "absorbed failure %ld\n", n);
            continue;
        }
        if (smelt_ctx_status(ctx) == SMELT_ERR_NOMEM) {
            nomem++;
        } else {
            other++;
            fprintf(stderr, "alloc failure %ld: %s: %s\n", n,
                    smelt_status_name(smelt_ctx_status(ctx)), smelt_ctx_message(ctx));
        }
        CHECK(*smelt_ctx_message(ctx));
        smelt_ctx_free(ctx);
    }
    CHECK(other == 0);
    printf("alloc-fail load: %ld allocations, %d clean out-of-memory failures, %d absorbed, "
           "%d other\n", n - 1, nomem, absorbed, other);
}

/* Same for a run of a loaded model. */
static void alloc_fail_run(const unsigned char *model, size_t size)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load_bytes(ctx, model, size, NULL);
    CHECK(m != NULL);
    smelt_tensor *ins;
    if (!m || !make_inputs(m, 7, &ins)) {
        smelt_model_free(m);
        smelt_ctx_free(ctx);
        return;
    }
    int ni = smelt_model_num_inputs(m), no = smelt_model_num_outputs(m), other = 0;
    smelt_tensor *outs = calloc((size_t)no + 1, sizeof *outs);
    long n = 1;
    for (;; n++) {
        smelt_ctx_clear(ctx);
        install_allocator(n);
        smelt_status s = smelt_model_run_reference(ctx, m, ins, ni, outs, no);
        bool hit = g_as.count >= n;
        install_allocator(0);
        if (s == SMELT_OK) {
            for (int i = 0; i < no; i++) smelt_tensor_release(&outs[i]);
            if (!hit) break;
            continue;
        }
        if (s != SMELT_ERR_NOMEM) {
            other++;
            fprintf(stderr, "run alloc failure %ld: %s\n", n, smelt_ctx_message(ctx));
        }
    }
    CHECK(other == 0);
    printf("alloc-fail run: %ld allocations, %d non-out-of-memory failures\n", n - 1, other);
    free(outs);
    free_inputs(ins, ni);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

/* Fail allocation N of smelt_model_load(path), N = 1.. until the load no
 * longer reaches N.  The model may be a bad one: its own error is what a
 * run without injected failures returns.  An injected failure must give
 * SMELT_ERR_NOMEM, or the model's own error if that comes first. */
#define MAX_FAIL_POINTS 1500 /* per model: the cost grows with its square */

static void alloc_fail_path(const char *path)
{
    smelt_ctx *ctx = smelt_ctx_new();
    install_allocator(0);
    smelt_model *m = smelt_model_load(ctx, path);
    smelt_status own = smelt_ctx_status(ctx);
    smelt_model_free(m);
    long n = 1;
    int nomem = 0, other = 0;
    for (; n <= MAX_FAIL_POINTS; n++) {
        smelt_ctx_clear(ctx);
        install_allocator(n);
        m = smelt_model_load(ctx, path);
        bool hit = g_as.count >= n;
        install_allocator(0);
        smelt_model_free(m);
        if (!hit) break;
        smelt_status s = smelt_ctx_status(ctx);
        if (s == SMELT_ERR_NOMEM) {
            nomem++;
        } else if (s != own) {
            other++;
            fprintf(stderr, "%s: alloc failure %ld: %s: %s\n", path, n, smelt_status_name(s),
                    smelt_ctx_message(ctx));
        }
    }
    CHECK(other == 0);
    printf("alloc-fail %s: %ld allocations, %d out-of-memory failures, %d wrong\n", path, n - 1,
           nomem, other);
    smelt_ctx_free(ctx);
}

/* A gen_bad_models.py folder (every case listed in cases.txt), or a model. */
static void alloc_fail_dir_or_file(const char *arg)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/cases.txt", arg);
    FILE *f = fopen(path, "r");
    if (!f) {
        alloc_fail_path(arg);
        return;
    }
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\t\n")] = '\0'; /* the case name */
        snprintf(path, sizeof path, "%s/%s/model.onnx", arg, line);
        alloc_fail_path(path);
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--alloc-fail") == 0) {
        for (int i = 2; i < argc; i++) alloc_fail_dir_or_file(argv[i]);
        smelt_set_allocator(NULL);
        TEST_MAIN_END();
    }
    const char *path = argc > 1 ? argv[1] : SMELT_TINY_CNN_PATH;
    size_t size;
    unsigned char *model = read_all(path, &size);
    if (!model || size == 0) {
        fprintf(stderr, "cannot read %s\n", path);
        return 1;
    }
    install_allocator(0);
    tally t = {0};
    attempt(model, size, 0, &t);
    CHECK(t.loaded == 1 && t.ran == 1); /* the unmutated model works */
    if (t.loaded != 1) fprintf(stderr, "the seed model %s does not load\n", path);

    fuzz_truncate(model, size);
    fuzz_flip(model, size, 4000);
    fuzz_splice(model, size, 2000);
    alloc_fail_load(model, size);
    alloc_fail_run(model, size);

    smelt_set_allocator(NULL);
    free(model);
    TEST_MAIN_END();
}
