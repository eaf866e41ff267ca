/* Loads with a constant stride in vectorised loops: strides 2..4 become
 * contiguous vector loads + shuffles (a deinterleave), larger ones a gather.
 * The input sits against a PROT_NONE page at its end (then at its start),
 * so a deinterleave reading past the last lane's element, or a speculative
 * one (under a select) reading outside the buffer, faults.  The plain loop
 * ends with a full vector (its last lane reads the last element), the
 * guarded one leaves a scalar tail.  Values are checked against plain C on every target
 * this machine runs. */
#include <sys/mman.h>
#include <unistd.h>

#include "test_codegen_util.h"

enum { W = 32, W2 = 37, SHIFT = 3 };

/* Elements an input of stride c needs: the last lane of w = W - 1. */
static int64_t input_len(int64_t c) { return c * (W - 1) + 1; }

/* out[w] = in[c*w];  out2[w] = 0 <= c*w - SHIFT < n ? in[c*w - SHIFT] : -1
 * for w < W2 (the guarded lanes run past both ends of in). */
static void build(cgt_prog *t, int64_t c)
{
    cgt_init(t);
    int64_t n = input_len(c);
    ir_buffer *in = BUF(t, "in", SMELT_DT_FLOAT32, n, IR_BUF_INPUT);
    ir_buffer *out = BUF(t, "out", SMELT_DT_FLOAT32, W, IR_BUF_OUTPUT);
    ir_buffer *out2 = BUF(t, "out2", SMELT_DT_FLOAT32, W2, IR_BUF_OUTPUT);
    ir_var *w = VAR(t, "w"), *w2 = VAR(t, "w2");
    ir_stmt *plain = FOR(t, w, 0, W, IR_FOR_VECTORIZED,
                         ST(t, out, V(t, w), LD(t, in, BIN(t, IR_MUL, V(t, w), I(t, c)))));
    ir_expr *pos = BIN(t, IR_SUB, BIN(t, IR_MUL, V(t, w2), I(t, c)), I(t, SHIFT));
    ir_expr *inside = BIN(t, IR_AND, BIN(t, IR_GE, pos, I(t, 0)), BIN(t, IR_LT, pos, I(t, n)));
    ir_expr *val = ir_select(&t->b, inside, LD(t, in, pos), F(t, -1.0));
    ir_stmt *guarded = FOR(t, w2, 0, W2, IR_FOR_VECTORIZED, ST(t, out2, V(t, w2), val));
    ir_func *f1 = cgt_func(t, "strided", 2, (ir_buffer *[]){in, out}, plain);
    ir_func *f2 = cgt_func(t, "strided_guarded", 2, (ir_buffer *[]){in, out2}, guarded);
    cgt_call(t, f1, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0)});
    cgt_call(t, f2, (ir_slot[]){SLOT_IN(0), SLOT_OUT(1)});
    cgt_input(t, "in", SMELT_DT_FLOAT32, n);
    cgt_output(t, "out", SMELT_DT_FLOAT32, W);
    cgt_output(t, "out2", SMELT_DT_FLOAT32, W2);
}

typedef struct fenced {
    unsigned char *mem;
    size_t bytes;
} fenced;

/* n floats against a PROT_NONE page at their end (or start). */
static float *fence(fenced *f, size_t n, bool at_end)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t inner = (n * sizeof(float) + page - 1) / page * page;
    f->bytes = inner + 2 * page;
    f->mem = mmap(NULL, f->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (f->mem == MAP_FAILED) return NULL;
    mprotect(f->mem, page, PROT_NONE);
    mprotect(f->mem + page + inner, page, PROT_NONE);
    return at_end ? (float *)(void *)(f->mem + page + inner) - n : (float *)(void *)(f->mem + page);
}

static int count_wrong(const float *out, const float *out2, int64_t c)
{
    int64_t n = input_len(c);
    int bad = 0;
    for (int64_t w = 0; w < W; w++) bad += out[w] != (float)(c * w) + 0.5f;
    for (int64_t w = 0; w < W2; w++) {
        int64_t p = c * w - SHIFT;
        bad += out2[w] != (p >= 0 && p < n ? (float)p + 0.5f : -1.0f);
    }
    return bad;
}

static void test_stride(const cg_target *target, int64_t c)
{
    cgt_prog t;
    build(&t, c);
    void *handle;
    char *src;
    smelt_rt_model *m = cgt_compile(&t, target, &handle, &src);
    CHECK(m != NULL);
    if (m && target->vector_bytes) /* a deinterleave exactly for strides 2..4 */
        CHECK((strstr(src, "SMELT_SHUF2_(") != NULL) == (c >= 2 && c <= 4));
    int64_t n = input_len(c);
    for (int placement = 0; placement < 2 && m; placement++) {
        fenced f;
        float *x = fence(&f, (size_t)n, placement == 0);
        CHECK(x != NULL);
        if (!x) break;
        for (int64_t i = 0; i < n; i++) x[i] = (float)i + 0.5f;
        float out[W], out2[W2];
        const void *ins[1] = {x};
        void *outs[2] = {out, out2};
        size_t in_b[1] = {sizeof(float) * (size_t)n}, out_b[2] = {sizeof out, sizeof out2};
        CHECK(smelt_rt_model_run(m, ins, in_b, 1, outs, out_b, 2) == SMELT_RT_OK);
        int bad = count_wrong(out, out2, c);
        if (bad) fprintf(stderr, "[%s] stride %lld: %d wrong\n", target->name, (long long)c, bad);
        CHECK(bad == 0);
        munmap(f.mem, f.bytes);
    }
    cgt_release(m, handle, src);
    cgt_fini(&t);
}

int main(void)
{
    cgt_setup_env();
    const cg_target *targets[3];
    int n = cgt_targets(targets);
    for (int k = 0; k < n; k++)
        for (int64_t c = 2; c <= 5; c++) test_stride(targets[k], c);
    TEST_MAIN_END();
}
