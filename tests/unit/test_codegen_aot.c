/* AOT packages build standalone with `cc -std=c99 -O2 -Wall -Werror` (no
 * target flags, and with the Makefile), run, and compute the right values,
 * with the weights in weights.bin or compiled in. */
#include <unistd.h>

#include "test_codegen_util.h"

enum { N = 200 };

/* y = relu(x * w + 1) (parallel + vectorized), h = float16(y) */
static void build_program(cgt_prog *t, unsigned char *blob)
{
    ir_buffer *x = BUF(t, "x", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *w = BUF(t, "w", SMELT_DT_FLOAT32, N, IR_BUF_CONST);
    ir_buffer *y = BUF(t, "y", SMELT_DT_FLOAT32, N, IR_BUF_OUTPUT);
    ir_buffer *yin = BUF(t, "y", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *h = BUF(t, "h", SMELT_DT_FLOAT16, N, IR_BUF_OUTPUT);
    ir_var *o = VAR(t, "o"), *i = VAR(t, "i"), *j = VAR(t, "j");
    ir_expr *idx = BIN(t, IR_ADD, BIN(t, IR_MUL, V(t, o), I(t, 50)), V(t, i));
    ir_expr *v = BIN(t, IR_ADD, BIN(t, IR_MUL, LD(t, x, idx), LD(t, w, idx)), F(t, 1.0));
    ir_stmt *s1 = FOR(t, o, 0, N / 50, IR_FOR_PARALLEL,
                      FOR(t, i, 0, 50, IR_FOR_VECTORIZED, ST(t, y, idx, BIN(t, IR_MAX, v, F(t, 0)))));
    ir_stmt *s2 = FOR(t, j, 0, N, IR_FOR_VECTORIZED, ST(t, h, V(t, j), ir_cast(&t->b, SMELT_DT_FLOAT16, LD(t, yin, V(t, j)))));
    ir_func *f1 = cgt_func(t, "dense_relu", 3, (ir_buffer *[]){x, w, y}, s1);
    ir_func *f2 = cgt_func(t, "to_half", 2, (ir_buffer *[]){yin, h}, s2);
    cgt_call(t, f1, (ir_slot[]){SLOT_IN(0), SLOT_W(64), SLOT_A(0)});
    cgt_call(t, f2, (ir_slot[]){SLOT_A(0), SLOT_OUT(1)});
    /* y is also an output: copy the arena value out in a third call */
    ir_buffer *ya = BUF(t, "ya", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *yo = BUF(t, "yo", SMELT_DT_FLOAT32, N, IR_BUF_OUTPUT);
    ir_var *k = VAR(t, "k");
    ir_func *f3 = cgt_func(t, "copy", 2, (ir_buffer *[]){ya, yo},
                           FOR(t, k, 0, N, IR_FOR_VECTORIZED, ST(t, yo, V(t, k), LD(t, ya, V(t, k)))));
    cgt_call(t, f3, (ir_slot[]){SLOT_A(0), SLOT_OUT(0)});
    cgt_input(t, "input:0", SMELT_DT_FLOAT32, N);
    cgt_output(t, "y", SMELT_DT_FLOAT32, N);
    cgt_output(t, "h", SMELT_DT_FLOAT16, N);
    t->p.arena_bytes = N * 4;
    for (int q = 0; q < N; q++) {
        float wv = (float)(q % 7) - 3.0f;
        memcpy(blob + 64 + 4 * q, &wv, 4);
    }
    t->p.weights = blob;
    t->p.weight_bytes = 64 + N * 4;
}

/* A checker program compiled against the package's model.h. */
static const char *const checker =
    "#include <stdio.h>\n#include <string.h>\n#include \"model.h\"\n"
    "int main(int argc, char **argv)\n{\n"
    "    float x[200];\n    const float *y;\n    const unsigned short *h;\n    size_t yb = 0, hb = 0;\n"
    "    char err[256];\n    int i, bad = 0;\n"
    "    model_t *m = model_create(argc > 1 ? argv[1] : NULL, 2, err, sizeof err);\n"
    "    if (!m) { printf(\"create: %s\\n\", err); return 2; }\n"
    "    for (i = 0; i < 200; i++) x[i] = (float)(i % 13) * 0.25f - 1.0f;\n"
    "    if (model_set_input(m, \"input:0\", x, sizeof x) != SMELT_RT_OK) { puts(model_error(m)); return 3; }\n"
    "    if (model_set_input(m, \"nope\", x, sizeof x) == SMELT_RT_OK) return 4;\n"
    "    if (model_run(m) != SMELT_RT_OK) { puts(model_error(m)); return 5; }\n"
    "    y = (const float *)model_get_output(m, \"y\", &yb);\n"
    "    h = (const unsigned short *)model_get_output(m, \"h\", &hb);\n"
    "    if (!y || !h || yb != sizeof x || hb != 400) return 6;\n"
    "    for (i = 0; i < 200; i++) {\n"
    "        float want = x[i] * ((float)(i % 7) - 3.0f) + 1.0f;\n"
    "        if (want < 0) want = 0;\n"
    "        if (y[i] != want) bad++;\n"
    "        if (want == 0 ? h[i] != 0 : h[i] == 0) bad++;\n"
    "    }\n"
    "    model_free(m);\n"
    "    printf(\"checker: %d bad\\n\", bad);\n"
    "    return bad != 0;\n}\n";

static int sh(const char *fmt, const char *a, const char *b)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, fmt, a, b, a, b);
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

static void test_package(bool embed, const char *target_name)
{
    cgt_prog t;
    cgt_init(&t);
    static unsigned char blob[64 + N * 4];
    build_program(&t, blob);
    char dir[] = "cg-aot-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    smelt_ctx *ctx = smelt_ctx_new();
    CHECK(cg_write_package(ctx, &t.p, cg_target_find(target_name), dir, embed) == SMELT_OK);
    if (smelt_ctx_status(ctx)) fprintf(stderr, "%s\n", smelt_ctx_message(ctx));
    char path[256];
    snprintf(path, sizeof path, "%s/checker.c", dir);
    FILE *f = fopen(path, "w");
    fputs(checker, f);
    fclose(f);
    const char *files = "model.c smelt_rt_pool.c smelt_rt_model.c";
    /* exactly the documented command line: no target flags at all */
    CHECK(sh("cd %s && cc -std=c99 -O2 -Wall -Werror -o plain main.c %s -lpthread -lm", dir, files) == 0);
    CHECK(sh("cd %s && cc -std=c99 -O2 -Wall -Wextra -Werror -o check checker.c %s -lpthread -lm", dir, files) == 0);
    CHECK(sh(embed ? "cd %s && rm -f weights.bin && ./check" : "cd %s && ./check weights.bin", dir, "") == 0);
    /* the Makefile (with the target's flags) and the example */
    CHECK(sh("make -s -C %s >/dev/null && cd %s && ./main weights.bin 3 | grep -q \"output 'y'\"", dir, dir) == 0);
    CHECK(sh("cd %s && ./plain weights.bin | grep -q \"output 'h' (float16, 200 elements)\"", dir, "") == 0);
    if (system("command -v clang >/dev/null 2>&1") == 0)
        CHECK(sh("cd %s && clang -std=c99 -O2 -Wall -Werror -o cl main.c %s -lpthread -lm", dir, files) == 0);
    /* a missing or wrong-size weights file is a clear error */
    if (!embed) {
        CHECK(sh("cd %s && ./check no-such-file.bin | grep -q 'cannot open weights'", dir, "") == 0);
        CHECK(sh("cd %s && head -c 100 weights.bin > short.bin && ./check short.bin | grep -q 'too short'", dir, "") == 0);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (test_checks_failed == 0) CHECK(system(cmd) == 0);
    smelt_ctx_free(ctx);
    cgt_fini(&t);
}

int main(void)
{
    cgt_setup_env();
    const cg_target *targets[3];
    int n = cgt_targets(targets);
    test_package(false, targets[n - 1]->name);
    test_package(true, targets[n - 1]->name);
    test_package(false, "generic");
    TEST_MAIN_END();
}
