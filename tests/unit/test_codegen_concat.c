/* Selects whose condition is the same in every lane of a vectorised loop
 * (a Concat along an outer axis: c < end0 ? in0 : c < end1 ? in1 : in2)
 * become a C if / else-if chain that reads only the chosen input.  Each
 * input sits against a PROT_NONE page, so reading another input's rows at
 * a shifted index - what evaluating both sides of the select would do
 * without clamping - faults.  The chain nested in a select that differs
 * per lane is speculative again and must clamp its loads.  Values are
 * checked against plain C on every target this machine runs. */
#include <sys/mman.h>
#include <unistd.h>

#include "test_codegen_util.h"

enum { CA = 3, CB = 2, CC = 4, C = CA + CB + CC, W = 37, LEFT = 5 };

static const int64_t rows[3] = {CA, CB, CC};

/* in_k[(c - start_k) * W + w] for the input k holding row c. */
static ir_expr *concat_chain(cgt_prog *t, ir_buffer *const *in, ir_var *c, ir_var *w)
{
    ir_expr *e = NULL;
    int64_t start[3] = {0, CA, CA + CB};
    for (int k = 2; k >= 0; k--) {
        ir_expr *row = BIN(t, IR_SUB, V(t, c), I(t, start[k]));
        ir_expr *idx = BIN(t, IR_ADD, BIN(t, IR_MUL, row, I(t, W)), V(t, w));
        ir_expr *load = LD(t, in[k], idx);
        e = e ? ir_select(&t->b, BIN(t, IR_LT, V(t, c), I(t, start[k] + rows[k])), load, e) : load;
    }
    return e;
}

/* out[c, w] = concat(a, b, cc)[c, w];  out2[c, w] = w < LEFT ? concat[c, w] : -1 */
static void build(cgt_prog *t)
{
    cgt_init(t);
    ir_buffer *in[3];
    const char *names[3] = {"a", "b", "c"};
    for (int k = 0; k < 3; k++) in[k] = BUF(t, names[k], SMELT_DT_FLOAT32, rows[k] * W, IR_BUF_INPUT);
    ir_buffer *out = BUF(t, "out", SMELT_DT_FLOAT32, C * W, IR_BUF_OUTPUT);
    ir_buffer *out2 = BUF(t, "out2", SMELT_DT_FLOAT32, C * W, IR_BUF_OUTPUT);
    ir_var *c = VAR(t, "c"), *w = VAR(t, "w"), *c2 = VAR(t, "c2"), *w2 = VAR(t, "w2");
    ir_expr *o1 = BIN(t, IR_ADD, BIN(t, IR_MUL, V(t, c), I(t, W)), V(t, w));
    ir_stmt *plain = FOR(t, c, 0, C, IR_FOR_SERIAL,
                         FOR(t, w, 0, W, IR_FOR_VECTORIZED, ST(t, out, o1, concat_chain(t, in, c, w))));
    ir_expr *o2 = BIN(t, IR_ADD, BIN(t, IR_MUL, V(t, c2), I(t, W)), V(t, w2));
    ir_expr *left = ir_select(&t->b, BIN(t, IR_LT, V(t, w2), I(t, LEFT)), concat_chain(t, in, c2, w2), F(t, -1.0));
    ir_stmt *nested = FOR(t, c2, 0, C, IR_FOR_SERIAL, FOR(t, w2, 0, W, IR_FOR_VECTORIZED, ST(t, out2, o2, left)));
    ir_func *f1 = cgt_func(t, "concat", 4, (ir_buffer *[]){in[0], in[1], in[2], out}, plain);
    ir_func *f2 = cgt_func(t, "concat_left", 4, (ir_buffer *[]){in[0], in[1], in[2], out2}, nested);
    cgt_call(t, f1, (ir_slot[]){SLOT_IN(0), SLOT_IN(1), SLOT_IN(2), SLOT_OUT(0)});
    cgt_call(t, f2, (ir_slot[]){SLOT_IN(0), SLOT_IN(1), SLOT_IN(2), SLOT_OUT(1)});
    for (int k = 0; k < 3; k++) cgt_input(t, names[k], SMELT_DT_FLOAT32, rows[k] * W);
    cgt_output(t, "out", SMELT_DT_FLOAT32, C * W);
    cgt_output(t, "out2", SMELT_DT_FLOAT32, C * W);
}

/* One input's rows between two PROT_NONE pages, at the start or the end. */
typedef struct fenced {
    unsigned char *mem;
    size_t bytes;
} fenced;

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

static void test_target(const cg_target *target)
{
    cgt_prog t;
    build(&t);
    void *handle;
    char *src;
    smelt_rt_model *m = cgt_compile(&t, target, &handle, &src);
    CHECK(m != NULL);
    if (m && target->vector_bytes) {
        CHECK(strstr(src, "} else if (") != NULL); /* the chain as ifs */
        CHECK(strstr(src, "smelt_clampi_") != NULL); /* nested: speculative, clamped */
    }
    for (int placement = 0; placement < 2 && m; placement++) {
        fenced fs[3];
        float *xs[3];
        int64_t start[3] = {0, CA, CA + CB};
        for (int k = 0; k < 3; k++) {
            xs[k] = fence(&fs[k], (size_t)(rows[k] * W), placement == 1);
            CHECK(xs[k] != NULL);
            if (!xs[k]) return;
            for (int64_t i = 0; i < rows[k] * W; i++) xs[k][i] = (float)(start[k] * W + i) + 0.25f;
        }
        static float out[C * W], out2[C * W];
        const void *ins[3] = {xs[0], xs[1], xs[2]};
        void *outs[2] = {out, out2};
        size_t in_b[3] = {sizeof(float) * CA * W, sizeof(float) * CB * W, sizeof(float) * CC * W};
        size_t out_b[2] = {sizeof out, sizeof out2};
        CHECK(smelt_rt_model_run(m, ins, in_b, 3, outs, out_b, 2) == SMELT_RT_OK);
        int bad = 0;
        for (int c = 0; c < C; c++)
            for (int w = 0; w < W; w++) {
                float want = (float)(c * W + w) + 0.25f;
                bad += out[c * W + w] != want;
                bad += out2[c * W + w] != (w < LEFT ? want : -1.0f);
            }
        CHECK(bad == 0);
        for (int k = 0; k < 3; k++) munmap(fs[k].mem, fs[k].bytes);
    }
    cgt_release(m, handle, src);
    cgt_fini(&t);
}

int main(void)
{
    cgt_setup_env();
    const cg_target *targets[3];
    int n = cgt_targets(targets);
    for (int k = 0; k < n; k++) test_target(targets[k]);
    TEST_MAIN_END();
}
