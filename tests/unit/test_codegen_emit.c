/* The emitted C itself: a golden file (codegen drift shows in review),
 * hostile model names that must never reach the C raw, escaping, and
 * emitter errors for malformed IR. */
#include <sys/stat.h>
#include <unistd.h>

#include "test_codegen_util.h"

/* Directory of this file, to find tests/golden and include/. */
static void source_dir(char *out, size_t size)
{
    snprintf(out, size, "%s", __FILE__);
    char *slash = strrchr(out, '/');
    if (slash) *slash = '\0';
}

/* ---- golden ---- */

/* c[i] = a[i] * 2 + b[i] (parallel outer, vectorized inner with a tail),
 * then a row max through a temp. */
static void build_golden_program(cgt_prog *t)
{
    enum { N = 300, BLK = 100 };
    ir_buffer *a = BUF(t, "a", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *b = BUF(t, "b", SMELT_DT_FLOAT32, N, IR_BUF_CONST);
    ir_buffer *c = BUF(t, "c", SMELT_DT_FLOAT32, N, IR_BUF_OUTPUT);
    ir_buffer *m = BUF(t, "m", SMELT_DT_FLOAT32, 3, IR_BUF_OUTPUT);
    ir_buffer *acc = BUF(t, "acc", SMELT_DT_FLOAT32, 1, IR_BUF_TEMP);
    ir_var *io = VAR(t, "i.outer"), *ii = VAR(t, "i.inner"), *r = VAR(t, "r"), *k = VAR(t, "k");
    ir_expr *idx = BIN(t, IR_ADD, BIN(t, IR_MUL, V(t, io), I(t, BLK)), V(t, ii));
    ir_expr *val = BIN(t, IR_ADD, BIN(t, IR_MUL, LD(t, a, idx), F(t, 2.0)), LD(t, b, idx));
    ir_stmt *axpy = FOR(t, io, 0, N / BLK, IR_FOR_PARALLEL, FOR(t, ii, 0, BLK, IR_FOR_VECTORIZED, ST(t, c, idx, val)));
    ir_expr *ck = LD(t, c, BIN(t, IR_ADD, BIN(t, IR_MUL, V(t, r), I(t, BLK)), V(t, k)));
    ir_stmt *red[] = {
        ST(t, acc, I(t, 0), ir_const_float(&t->b, SMELT_DT_FLOAT32, -INFINITY)),
        FOR(t, k, 0, BLK, IR_FOR_SERIAL, ST(t, acc, I(t, 0), BIN(t, IR_MAX, LD(t, acc, I(t, 0)), ck))),
        ST(t, m, V(t, r), LD(t, acc, I(t, 0))),
    };
    ir_stmt *rowmax = FOR(t, r, 0, 3, IR_FOR_SERIAL, ir_allocate(&t->b, acc, ir_seq(&t->b, 3, red)));
    ir_func *f = cgt_func(t, "fused_axpy_rowmax", 4, (ir_buffer *[]){a, b, c, m}, ir_seq2(&t->b, axpy, rowmax));
    f->comment = "Mul + Add + ReduceMax";
    cgt_call(t, f, (ir_slot[]){SLOT_IN(0), SLOT_W(0), SLOT_OUT(0), SLOT_OUT(1)});
    cgt_input(t, "a", SMELT_DT_FLOAT32, N);
    cgt_output(t, "c", SMELT_DT_FLOAT32, N);
    cgt_output(t, "m", SMELT_DT_FLOAT32, 3);
    static unsigned char blob[N * 4];
    t->p.weights = blob;
    t->p.weight_bytes = sizeof blob;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

static void report_first_difference(const char *want, const char *got)
{
    int line = 1;
    const char *w = want, *g = got;
    while (*w && *w == *g) {
        if (*w == '\n') line++;
        w++, g++;
    }
    const char *wl = w, *gl = g;
    while (wl > want && wl[-1] != '\n') wl--;
    while (gl > got && gl[-1] != '\n') gl--;
    fprintf(stderr, "golden mismatch at line %d:\n  golden: %.*s\n  emitted: %.*s\n", line,
            (int)strcspn(wl, "\n"), wl, (int)strcspn(gl, "\n"), gl);
}

static void check_golden(const char *name, const char *target_name)
{
    cgt_prog t;
    cgt_init(&t);
    build_golden_program(&t);
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_strbuf c;
    smelt_strbuf_init(&c);
    CHECK(cg_emit_program(ctx, &t.p, cg_target_find(target_name), &c) == SMELT_OK);
    char dir[1024], path[1200];
    source_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/../golden/%s", dir, name);
    const char *got = smelt_strbuf_cstr(&c);
    if (getenv("SMELT_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        if (f) {
            fputs(got, f);
            fclose(f);
            printf("updated %s\n", path);
        }
    } else {
        char *want = read_text(path);
        CHECK(want != NULL);
        if (want && strcmp(want, got) != 0) {
            report_first_difference(want, got);
            fprintf(stderr, "the emitted C for %s changed; if intended, regenerate with\n"
                            "  SMELT_UPDATE_GOLDEN=1 ./tests/test_codegen_emit\n"
                            "and review the diff of tests/golden/%s\n", name, name);
            CHECK(!"golden file matches");
        }
        free(want);
    }
    /* The golden program also runs and is right. */
    void *h;
    smelt_rt_model *m = cgt_compile(&t, cg_target_find(target_name), &h, NULL);
    CHECK(m != NULL);
    if (m) {
        float a[300], cc[300], mm[3];
        for (int i = 0; i < 300; i++) a[i] = (float)((i * 37) % 101) - 50.0f;
        CHECK(smelt_rt_model_run(m, (const void *[]){a}, (size_t[]){sizeof a}, 1, (void *[]){cc, mm},
                                 (size_t[]){sizeof cc, sizeof mm}, 2) == SMELT_RT_OK);
        for (int r = 0; r < 3; r++) {
            float want = -INFINITY;
            for (int k = 0; k < 100; k++) want = fmaxf(want, a[r * 100 + k] * 2.0f);
            CHECK(mm[r] == want);
        }
    }
    cgt_release(m, h, NULL);
    smelt_strbuf_fini(&c);
    smelt_ctx_free(ctx);
    cgt_fini(&t);
}

/* ---- hostile names ---- */

static const char *const hostile[] = {
    "x*/ int evil1; /*",
    "q\"uote\\back\\",
    "line1\nline2 #include <stdlib.h>\r\n",
    "tri?\?/\n?\?=?\?(?\?)?\?'",
    "caf\xc3\xa9 \xff\x01\x7f end",
    "%s%n%d",
    "",
};

/* A syntax check with every warning as an error. */
static bool compiles_strictly(const char *src)
{
    char dir[1024], file[64] = "cg-hostile-XXXXXX";
    source_dir(dir, sizeof dir);
    int fd = mkstemp(file);
    if (fd < 0) return false;
    FILE *f = fdopen(fd, "w");
    fputs(src, f);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cc -std=c99 -Wall -Wextra -Werror -fsyntax-only -x c -I%s/../../include %s",
             dir, file);
    int rc = system(cmd);
    unlink(file);
    return rc == 0;
}

/* The C with comments and string/char literals blanked out: what the
 * compiler sees as code. */
static char *code_only(const char *src)
{
    size_t n = strlen(src);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (src[i] == '/' && src[i + 1] == '*') {
            const char *end = strstr(src + i + 2, "*/");
            i = end ? (size_t)(end - src) + 2 : n;
            out[o++] = ' ';
        } else if (src[i] == '"' || src[i] == '\'') {
            char q = src[i++];
            while (i < n && src[i] != q) i += src[i] == '\\' ? 2 : 1;
            i++;
            out[o++] = '0';
        } else {
            out[o++] = src[i++];
        }
    }
    out[o] = '\0';
    return out;
}

static void test_hostile_names(void)
{
    enum { N = 8, H = (int)SMELT_ARRAY_LEN(hostile) };
    char *long_name = malloc(6001);
    memset(long_name, 'A', 6000);
    memcpy(long_name + 5990, "*/\"?\?/\n\\", 8);
    long_name[6000] = '\0';
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *x = BUF(&t, "x*/", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *y = BUF(&t, "y\n#define", SMELT_DT_FLOAT32, N, IR_BUF_OUTPUT);
    ir_buffer *tmp = BUF(&t, "tmp */ evil2();", SMELT_DT_FLOAT32, N, IR_BUF_TEMP);
    ir_var *i = ir_var_new(&t.b, "i */ evil3(); /*", SMELT_DT_INT64);
    ir_var *j = ir_var_new(&t.b, "j?\?/", SMELT_DT_INT64);
    ir_stmt *body = ir_allocate(&t.b, tmp,
                                ir_seq2(&t.b, FOR(&t, i, 0, N, IR_FOR_VECTORIZED, ST(&t, tmp, V(&t, i), LD(&t, x, V(&t, i)))),
                                        FOR(&t, j, 0, N, IR_FOR_PARALLEL, ST(&t, y, V(&t, j), LD(&t, tmp, V(&t, j))))));
    ir_func *f = cgt_func(&t, "name */ evil4(); \n#include <x>", 2, (ir_buffer *[]){x, y}, body);
    f->comment = "comment */ #include \"evil.h\"\n?\?/\nend \xe2\x80\x94 /* nested";
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0)});
    cgt_input(&t, long_name, SMELT_DT_FLOAT32, N);
    for (int k = 0; k < H; k++) cgt_output(&t, hostile[k], SMELT_DT_FLOAT32, N);

    smelt_ctx *ctx = smelt_ctx_new();
    smelt_strbuf c;
    smelt_strbuf_init(&c);
    CHECK(cg_emit_program(ctx, &t.p, cg_target_find("avx2"), &c) == SMELT_OK);
    const char *src = smelt_strbuf_cstr(&c);
    char *code = code_only(src);
    CHECK(code && !strstr(code, "evil")); /* model text only in literals and comments */
    CHECK(code && !strstr(code, "#include <stdlib.h>\r") && !strstr(code, "#include <x>"));
    CHECK(code && !strstr(code, "#include \"evil.h\"") && !strstr(code, "#define\n"));
    free(code);
    CHECK(!strstr(src, "*/ evil"));
    CHECK(!strstr(src, "??"));
    CHECK(!strstr(src, "line1\n"));
    bool clean = true; /* only printable ASCII, newlines */
    for (const unsigned char *p = (const unsigned char *)src; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p >= 0x7f) clean = false;
    CHECK(clean);
    CHECK(compiles_strictly(src));

    /* The names survive the trip through the C compiler byte for byte. */
    void *h;
    smelt_rt_model *m = cgt_compile(&t, cg_target_find("avx2"), &h, NULL);
    CHECK(m != NULL);
    if (m) {
        const smelt_rt_module_info *info = smelt_rt_model_info(m);
        CHECK(strcmp(info->inputs[0].name, long_name) == 0);
        for (int k = 0; k < H; k++) CHECK(strcmp(info->outputs[k].name, hostile[k]) == 0);
        CHECK(smelt_rt_model_output_index(m, hostile[2]) == 2);
    }
    cgt_release(m, h, NULL);
    smelt_strbuf_fini(&c);
    smelt_ctx_free(ctx);
    cgt_fini(&t);
    free(long_name);
}

static void test_escape_functions(void)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    cg_append_string_literal(&sb, "a\"b\\c?d\n\x01\xff" "7");
    CHECK(strcmp(smelt_strbuf_cstr(&sb), "\"a\\\"b\\\\c\\?d\\012\\001\\3777\"") == 0);
    smelt_strbuf_fini(&sb);
    smelt_strbuf_init(&sb);
    cg_append_comment_text(&sb, "a*/b/*c?\?/d\\\n\xc3", 100);
    CHECK(!strstr(smelt_strbuf_cstr(&sb), "*/") && !strstr(smelt_strbuf_cstr(&sb), "/*"));
    CHECK(!strstr(smelt_strbuf_cstr(&sb), "??") && !strchr(smelt_strbuf_cstr(&sb), '\\'));
    CHECK(!strchr(smelt_strbuf_cstr(&sb), '\n'));
    smelt_strbuf_fini(&sb);
    smelt_strbuf_init(&sb);
    cg_append_comment_text(&sb, "ends with *", 100);
    smelt_strbuf_append(&sb, "/");
    CHECK(!strstr(smelt_strbuf_cstr(&sb), "*/"));
    smelt_strbuf_fini(&sb);
}

/* ---- malformed IR gives an error, never bad C ---- */

static void expect_emit_error(cgt_prog *t, const char *needle)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_strbuf c;
    smelt_strbuf_init(&c);
    CHECK(cg_emit_program(ctx, &t->p, cg_target_find("avx512"), &c) != SMELT_OK);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), needle);
    smelt_strbuf_fini(&c);
    smelt_ctx_free(ctx);
}

static void test_emit_errors(void)
{
    struct {
        int which;
        const char *needle;
    } cases[] = {
        {0, "not flattened"}, {1, "read-only"},    {2, "not lowered"},     {3, "unknown micro-kernel"},
        {4, "outside the loop"}, {5, "writes model input"}, {6, "needs 64"}, {7, "neither a parameter"},
    };
    for (size_t c = 0; c < SMELT_ARRAY_LEN(cases); c++) {
        cgt_prog t;
        cgt_init(&t);
        ir_buffer *x = BUF(&t, "x", SMELT_DT_FLOAT32, 16, IR_BUF_INPUT);
        ir_buffer *y = BUF(&t, "y", SMELT_DT_FLOAT32, 16, IR_BUF_OUTPUT);
        ir_buffer *stray = BUF(&t, "stray", SMELT_DT_FLOAT32, 16, IR_BUF_TEMP);
        ir_var *i = VAR(&t, "i"), *unbound = VAR(&t, "u");
        ir_expr *two[2] = {V(&t, i), I(&t, 0)};
        ir_axis ax = {i, 4, NULL};
        ir_stmt *body = NULL;
        ir_slot slots[2] = {SLOT_IN(0), SLOT_OUT(0)};
        switch (cases[c].which) {
        case 0: body = ST(&t, y, V(&t, i), ir_load(&t.b, x, 2, two)); break;
        case 1: body = ST(&t, x, V(&t, i), F(&t, 1)); break;
        case 2: body = ST(&t, y, V(&t, i), ir_reduce(&t.b, IR_REDUCE_SUM, LD(&t, x, V(&t, i)), 1, &ax)); break;
        case 3: body = ir_call_stmt(&t.b, "no.such.kernel", 0, NULL); break;
        case 4: body = ST(&t, y, V(&t, i), LD(&t, x, V(&t, unbound))); break;
        case 5: x->kind = IR_BUF_OUTPUT; body = ST(&t, x, V(&t, i), F(&t, 1)); break;
        case 6: slots[1] = SLOT_A(0); body = ST(&t, y, V(&t, i), F(&t, 1)); break;
        case 7: body = ST(&t, stray, V(&t, i), F(&t, 1)); break;
        }
        if (cases[c].which != 3) body = FOR(&t, i, 0, 16, IR_FOR_SERIAL, body);
        ir_func *f = cgt_func(&t, "bad", 2, (ir_buffer *[]){x, y}, body);
        cgt_call(&t, f, slots);
        cgt_input(&t, "x", SMELT_DT_FLOAT32, 16);
        cgt_output(&t, "y", SMELT_DT_FLOAT32, 16);
        expect_emit_error(&t, cases[c].needle);
        cgt_fini(&t);
    }
}

int main(void)
{
    cgt_setup_env();
    test_escape_functions();
    check_golden("codegen_axpy_rowmax_avx2.c", "avx2");
    check_golden("codegen_axpy_rowmax_generic.c", "generic");
    test_hostile_names();
    test_emit_errors();
    TEST_MAIN_END();
}
