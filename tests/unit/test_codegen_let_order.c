/* A let in a vectorised loop whose value loads a buffer that the let's body
 * then stores (let a = y[w] in { y[w] = 2a + 1; z[w] = a }): the vector
 * emitter inlined lets into their uses, so z's copy of the load ran after
 * the store and read the new y (z = 2x + 1, found by the LSTM/GRU state
 * update).  Such a let now stays and the loop is emitted scalar; a let
 * over buffers the body does not store is still inlined and vectorised.
 * Values against plain C on every target this machine runs. */
#include "test_codegen_util.h"

enum { W = 37 };

/* y = x; then for w: let a = y[w] in { y[w] = a * 2 + 1; z[w] = a };
 * u[w] = (let b = x[w] in b * b) */
static void build(cgt_prog *t)
{
    cgt_init(t);
    ir_buffer *x = BUF(t, "x", SMELT_DT_FLOAT32, W, IR_BUF_INPUT);
    ir_buffer *y = BUF(t, "y", SMELT_DT_FLOAT32, W, IR_BUF_OUTPUT);
    ir_buffer *z = BUF(t, "z", SMELT_DT_FLOAT32, W, IR_BUF_OUTPUT);
    ir_buffer *u = BUF(t, "u", SMELT_DT_FLOAT32, W, IR_BUF_OUTPUT);
    ir_var *w0 = VAR(t, "w0"), *w1 = VAR(t, "w1"), *w2 = VAR(t, "w2");
    ir_var *a = ir_var_new(&t->b, "a", SMELT_DT_FLOAT32), *bv = ir_var_new(&t->b, "b", SMELT_DT_FLOAT32);
    ir_stmt *copy = FOR(t, w0, 0, W, IR_FOR_VECTORIZED, ST(t, y, V(t, w0), LD(t, x, V(t, w0))));
    ir_expr *twice = BIN(t, IR_ADD, BIN(t, IR_MUL, V(t, a), F(t, 2.0)), F(t, 1.0));
    ir_stmt *upd = ir_seq2(&t->b, ST(t, y, V(t, w1), twice), ST(t, z, V(t, w1), V(t, a)));
    ir_stmt *reads_stored = FOR(t, w1, 0, W, IR_FOR_VECTORIZED, ir_let(&t->b, a, LD(t, y, V(t, w1)), upd));
    ir_stmt *square = ST(t, u, V(t, w2), BIN(t, IR_MUL, V(t, bv), V(t, bv)));
    ir_stmt *plain = FOR(t, w2, 0, W, IR_FOR_VECTORIZED, ir_let(&t->b, bv, LD(t, x, V(t, w2)), square));
    ir_stmt *body = ir_seq2(&t->b, ir_seq2(&t->b, copy, reads_stored), plain);
    ir_func *f = cgt_func(t, "let_order", 4, (ir_buffer *[]){x, y, z, u}, body);
    cgt_call(t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0), SLOT_OUT(1), SLOT_OUT(2)});
    cgt_input(t, "x", SMELT_DT_FLOAT32, W);
    cgt_output(t, "y", SMELT_DT_FLOAT32, W);
    cgt_output(t, "z", SMELT_DT_FLOAT32, W);
    cgt_output(t, "u", SMELT_DT_FLOAT32, W);
}

static void test_target(const cg_target *target)
{
    cgt_prog t;
    build(&t);
    void *handle;
    char *src;
    smelt_rt_model *m = cgt_compile(&t, target, &handle, &src);
    CHECK(m != NULL);
    if (m && target->vector_bytes) CHECK(strstr(src, "/* vectorized:") != NULL); /* copy and square */
    if (m) {
        float x[W], y[W], z[W], u[W];
        for (int i = 0; i < W; i++) x[i] = (float)i * 0.5f - 3.0f;
        const void *ins[1] = {x};
        void *outs[3] = {y, z, u};
        size_t in_b[1] = {sizeof x}, out_b[3] = {sizeof y, sizeof z, sizeof u};
        CHECK(smelt_rt_model_run(m, ins, in_b, 1, outs, out_b, 3) == SMELT_RT_OK);
        int bad = 0;
        for (int i = 0; i < W; i++)
            bad += y[i] != x[i] * 2.0f + 1.0f || z[i] != x[i] || u[i] != x[i] * x[i];
        CHECK(bad == 0);
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
