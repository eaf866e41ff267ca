/* Generated code runs and matches values computed here in plain C, on every
 * target this machine supports: parallel + vectorized loops with tails,
 * arena and weight slots, reductions through a temp, integer division
 * semantics, float16/bfloat16, select/compare/min/max, unrolling, math
 * calls, micro-kernel calls, heap temps, gathers and scatters. */
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_codegen_util.h"

static const cg_target *target;

static float rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 8388608.0f - 1.0f;
}

/* Run a compiled program with the given buffers; returns false if it did
 * not compile or run. */
static bool run(cgt_prog *t, const void *const *in, void *const *out, char **src)
{
    void *h;
    char *s;
    smelt_rt_model *m = cgt_compile(t, target, &h, &s);
    if (!m) {
        smelt_free(s);
        return false;
    }
    size_t in_b[8], out_b[8];
    for (int i = 0; i < t->p.n_inputs; i++) {
        smelt_rt_io_info io = {t->inputs[i].name, t->inputs[i].dtype, t->inputs[i].rank, {0}, {0}, {0}, 0};
        memcpy(io.dims, t->inputs[i].dims, sizeof io.dims);
        in_b[i] = smelt_rt_io_bytes(&io);
    }
    for (int i = 0; i < t->p.n_outputs; i++) {
        smelt_rt_io_info io = {t->outputs[i].name, t->outputs[i].dtype, t->outputs[i].rank, {0}, {0}, {0}, 0};
        memcpy(io.dims, t->outputs[i].dims, sizeof io.dims);
        out_b[i] = smelt_rt_io_bytes(&io);
    }
    smelt_rt_status st = smelt_rt_model_run(m, in, in_b, t->p.n_inputs, out, out_b, t->p.n_outputs);
    if (st != SMELT_RT_OK) fprintf(stderr, "run: %s\n", smelt_rt_model_error(m));
    if (src) {
        *src = s;
        s = NULL;
    }
    cgt_release(m, h, s);
    return st == SMELT_RT_OK;
}

static bool close_rel(double a, double b, double rel)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return fabs(a - b) <= rel * fmax(1.0, fabs(b));
}

/* ---- 1. parallel outer + vectorized inner with a tail; arena and weights ---- */
static void test_axpy(void)
{
    enum { N = 1000, BLK = 100 };
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *x = BUF(&t, "x", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *tmp = BUF(&t, "tmp", SMELT_DT_FLOAT32, N, IR_BUF_OUTPUT);
    ir_buffer *tin = BUF(&t, "tmp", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *w = BUF(&t, "w", SMELT_DT_FLOAT32, N, IR_BUF_CONST);
    ir_buffer *y = BUF(&t, "y", SMELT_DT_FLOAT32, N, IR_BUF_OUTPUT);
    ir_var *io = VAR(&t, "io"), *ii = VAR(&t, "ii"), *jo = VAR(&t, "jo"), *ji = VAR(&t, "ji");
    ir_expr *idx1 = BIN(&t, IR_ADD, BIN(&t, IR_MUL, V(&t, io), I(&t, BLK)), V(&t, ii));
    ir_stmt *s1 = FOR(&t, io, 0, N / BLK, IR_FOR_PARALLEL,
                      FOR(&t, ii, 0, BLK, IR_FOR_VECTORIZED,
                          ST(&t, tmp, idx1, BIN(&t, IR_MUL, LD(&t, x, idx1), F(&t, 2.0)))));
    ir_expr *idx2 = BIN(&t, IR_ADD, BIN(&t, IR_MUL, V(&t, jo), I(&t, BLK)), V(&t, ji));
    ir_stmt *s2 = FOR(&t, jo, 0, N / BLK, IR_FOR_PARALLEL,
                      FOR(&t, ji, 0, BLK, IR_FOR_VECTORIZED,
                          ST(&t, y, idx2, BIN(&t, IR_ADD, LD(&t, tin, idx2), LD(&t, w, idx2)))));
    ir_func *f1 = cgt_func(&t, "scale", 2, (ir_buffer *[]){x, tmp}, s1);
    ir_func *f2 = cgt_func(&t, "add", 3, (ir_buffer *[]){tin, w, y}, s2);
    cgt_call(&t, f1, (ir_slot[]){SLOT_IN(0), SLOT_A(64)});
    cgt_call(&t, f2, (ir_slot[]){SLOT_A(64), SLOT_W(128), SLOT_OUT(0)});
    cgt_input(&t, "x", SMELT_DT_FLOAT32, N);
    cgt_output(&t, "y", SMELT_DT_FLOAT32, N);
    t.p.arena_bytes = 64 + N * 4;
    static unsigned char blob[128 + N * 4];
    float xs[N], ws[N], ys[N];
    uint32_t seed = 1;
    for (int i = 0; i < N; i++) {
        xs[i] = rnd(&seed);
        ws[i] = rnd(&seed);
    }
    memcpy(blob + 128, ws, sizeof ws);
    t.p.weights = blob;
    t.p.weight_bytes = sizeof blob;
    char *src = NULL;
    CHECK(run(&t, (const void *[]){xs}, (void *[]){ys}, &src));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += ys[i] != xs[i] * 2.0f + ws[i];
    CHECK(bad == 0);
    if (target->vector_bytes) {
        CHECK_STR_CONTAINS(src, "/* vectorized:");
        CHECK_STR_CONTAINS(src, "/* tail */"); /* 100 is not a multiple of 8 or 16 */
    }
    CHECK_STR_CONTAINS(src, "smelt_par_(pool, 10, f0_task0, &cl_);");
    smelt_free(src);
    cgt_fini(&t);
}

/* ---- 2. a row sum through a temp; the "vectorized" reduction stays scalar ---- */
static void test_row_sum(void)
{
    enum { R = 7, K = 37 };
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *x = BUF(&t, "x", SMELT_DT_FLOAT32, R * K, IR_BUF_INPUT);
    ir_buffer *y = BUF(&t, "y", SMELT_DT_FLOAT32, R, IR_BUF_OUTPUT);
    ir_buffer *acc = BUF(&t, "acc", SMELT_DT_FLOAT32, 1, IR_BUF_TEMP);
    ir_var *r = VAR(&t, "r"), *k = VAR(&t, "k");
    ir_expr *xi = BIN(&t, IR_ADD, BIN(&t, IR_MUL, V(&t, r), I(&t, K)), V(&t, k));
    ir_stmt *body[] = {
        ST(&t, acc, I(&t, 0), F(&t, 0.0)),
        FOR(&t, k, 0, K, IR_FOR_VECTORIZED,
            ST(&t, acc, I(&t, 0), BIN(&t, IR_ADD, LD(&t, acc, I(&t, 0)), LD(&t, x, xi)))),
        ST(&t, y, V(&t, r), LD(&t, acc, I(&t, 0))),
    };
    ir_stmt *s = FOR(&t, r, 0, R, IR_FOR_PARALLEL, ir_allocate(&t.b, acc, ir_seq(&t.b, 3, body)));
    ir_func *f = cgt_func(&t, "rowsum", 2, (ir_buffer *[]){x, y}, s);
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0)});
    cgt_input(&t, "x", SMELT_DT_FLOAT32, R * K);
    cgt_output(&t, "y", SMELT_DT_FLOAT32, R);
    float xs[R * K], ys[R];
    uint32_t seed = 2;
    for (int i = 0; i < R * K; i++) xs[i] = rnd(&seed);
    char *src = NULL;
    CHECK(run(&t, (const void *[]){xs}, (void *[]){ys}, &src));
    for (int i = 0; i < R; i++) {
        float sum = 0;
        for (int j = 0; j < K; j++) sum += xs[i * K + j];
        CHECK(ys[i] == sum);
    }
    CHECK(src && !strstr(src, "vectorized:")); /* a dependence between iterations */
    CHECK(src && !strstr(src, "SMELT_IVDEP\n    "));
    smelt_free(src);
    cgt_fini(&t);
}

/* ---- 3. integer division semantics, wrap-around, casts to narrow ints ---- */
static int64_t ref_floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static void test_integers(void)
{
    enum { N = 21, C = 6 };
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *d = BUF(&t, "d", SMELT_DT_INT64, N, IR_BUF_INPUT);
    ir_buffer *q = BUF(&t, "q", SMELT_DT_INT32, N, IR_BUF_INPUT);
    ir_buffer *o = BUF(&t, "o", SMELT_DT_INT32, N * C, IR_BUF_OUTPUT);
    ir_var *i = VAR(&t, "i"), *a = VAR(&t, "a");
    ir_expr *av = V(&t, a);
    ir_expr *vals[C] = {
        BIN(&t, IR_FLOORDIV, av, I(&t, 3)),
        BIN(&t, IR_FLOORMOD, av, I(&t, 3)),
        BIN(&t, IR_DIV, av, I(&t, -4)),
        BIN(&t, IR_MOD, av, LD(&t, d, V(&t, i))), /* divisor 0 -> 0 */
        BIN(&t, IR_FLOORDIV, av, LD(&t, d, V(&t, i))),
        NULL,
    };
    ir_stmt *st[C];
    for (int c = 0; c < C - 1; c++)
        st[c] = ST(&t, o, BIN(&t, IR_ADD, BIN(&t, IR_MUL, V(&t, i), I(&t, C)), I(&t, c)),
                   ir_cast(&t.b, SMELT_DT_INT32, vals[c]));
    ir_expr *qi = LD(&t, q, V(&t, i));
    st[C - 1] = ST(&t, o, BIN(&t, IR_ADD, BIN(&t, IR_MUL, V(&t, i), I(&t, C)), I(&t, C - 1)),
                   BIN(&t, IR_MUL, qi, qi));
    ir_stmt *body = ir_let(&t.b, a, BIN(&t, IR_SUB, V(&t, i), I(&t, 10)), ir_seq(&t.b, C, st));
    ir_func *f = cgt_func(&t, "ints", 3, (ir_buffer *[]){d, q, o}, FOR(&t, i, 0, N, IR_FOR_VECTORIZED, body));
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_IN(1), SLOT_OUT(0)});
    cgt_input(&t, "d", SMELT_DT_INT64, N);
    cgt_input(&t, "q", SMELT_DT_INT32, N);
    cgt_output(&t, "o", SMELT_DT_INT32, N * C);
    int64_t ds[N];
    int32_t qs[N], os[N * C];
    for (int k = 0; k < N; k++) {
        ds[k] = (k % 5) - 2; /* includes 0 */
        qs[k] = k * 10007 + 40000;
    }
    char *src = NULL;
    CHECK(run(&t, (const void *[]){ds, qs}, (void *[]){os}, &src));
    int bad = 0;
    for (int k = 0; k < N; k++) {
        int64_t av2 = k - 10, dv = ds[k];
        int64_t want[C] = {ref_floordiv(av2, 3), av2 - ref_floordiv(av2, 3) * 3, av2 / -4,
                           dv ? av2 % dv : 0, dv ? ref_floordiv(av2, dv) : 0,
                           (int32_t)((uint32_t)qs[k] * (uint32_t)qs[k])};
        for (int c = 0; c < C; c++)
            if (os[k * C + c] != (int32_t)want[c]) {
                if (bad++ < 5) fprintf(stderr, "ints: k=%d c=%d got %d want %lld\n", k, c, os[k * C + c], (long long)want[c]);
            }
    }
    CHECK(bad == 0);
    CHECK_STR_CONTAINS(src, "SMELT_IVDEP"); /* integer stores: scalar but independent */
    smelt_free(src);
    cgt_fini(&t);
}

/* ---- 4. float16 / bfloat16 stores, loads and rounding; saturating casts ---- */
static void test_half(void)
{
    enum { N = 50 };
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *x = BUF(&t, "x", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *h = BUF(&t, "h", SMELT_DT_FLOAT16, N, IR_BUF_OUTPUT);
    ir_buffer *bf = BUF(&t, "bf", SMELT_DT_BFLOAT16, N, IR_BUF_OUTPUT);
    ir_buffer *hin = BUF(&t, "h", SMELT_DT_FLOAT16, N, IR_BUF_INPUT);
    ir_buffer *g = BUF(&t, "g", SMELT_DT_FLOAT32, N, IR_BUF_OUTPUT);
    ir_buffer *u8 = BUF(&t, "u8", SMELT_DT_UINT8, N, IR_BUF_OUTPUT);
    ir_var *i = VAR(&t, "i"), *j = VAR(&t, "j");
    ir_expr *xv = LD(&t, x, V(&t, i));
    ir_expr *x3 = BIN(&t, IR_MUL, xv, F(&t, 3.3));
    ir_stmt *s1[] = {
        ST(&t, h, V(&t, i), ir_cast(&t.b, SMELT_DT_FLOAT16, x3)),
        ST(&t, bf, V(&t, i), ir_cast(&t.b, SMELT_DT_BFLOAT16, xv)),
        ST(&t, u8, V(&t, i), ir_cast(&t.b, SMELT_DT_UINT8, BIN(&t, IR_MUL, xv, F(&t, 200.0)))),
    };
    ir_func *f1 = cgt_func(&t, "to_half", 4, (ir_buffer *[]){x, h, bf, u8},
                           FOR(&t, i, 0, N, IR_FOR_VECTORIZED, ir_seq(&t.b, 3, s1)));
    /* g = f32(h) + f32(h * h) : the f16 product is rounded to f16 */
    ir_expr *hv = LD(&t, hin, V(&t, j));
    ir_expr *hh = BIN(&t, IR_MUL, hv, hv);
    ir_func *f2 = cgt_func(&t, "from_half", 2, (ir_buffer *[]){hin, g},
                           FOR(&t, j, 0, N, IR_FOR_SERIAL,
                               ST(&t, g, V(&t, j),
                                  BIN(&t, IR_ADD, ir_cast(&t.b, SMELT_DT_FLOAT32, hv),
                                      ir_cast(&t.b, SMELT_DT_FLOAT32, hh)))));
    cgt_call(&t, f1, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0), SLOT_OUT(1), SLOT_OUT(3)});
    cgt_call(&t, f2, (ir_slot[]){SLOT_OUT(0), SLOT_OUT(2)});
    cgt_input(&t, "x", SMELT_DT_FLOAT32, N);
    cgt_output(&t, "h", SMELT_DT_FLOAT16, N);
    cgt_output(&t, "bf", SMELT_DT_BFLOAT16, N);
    cgt_output(&t, "g", SMELT_DT_FLOAT32, N);
    cgt_output(&t, "u8", SMELT_DT_UINT8, N);
    float xs[N], gs[N];
    uint16_t hs[N], bs[N];
    uint8_t us[N];
    uint32_t seed = 3;
    for (int k = 0; k < N; k++) xs[k] = rnd(&seed) * 40000.0f / (float)(k + 1);
    xs[0] = NAN;
    xs[1] = 1e-6f; /* subnormal in f16 */
    CHECK(run(&t, (const void *[]){xs}, (void *[]){hs, bs, gs, us}, NULL));
    int bad = 0;
    for (int k = 0; k < N; k++) {
        uint16_t wh = smelt_f32_to_f16(xs[k] * 3.3f);
        float hf = smelt_f16_to_f32(wh);
        float wg = hf + smelt_f16_to_f32(smelt_f32_to_f16(hf * hf));
        double sat = isnan(xs[k]) ? 0 : fmin(255, fmax(0, (double)(xs[k] * 200.0f)));
        bad += (isnan(xs[k]) ? (hs[k] & 0x7c00) != 0x7c00 : hs[k] != wh);
        bad += (isnan(xs[k]) ? 0 : bs[k] != smelt_f32_to_bf16(xs[k]));
        bad += !(isnan(xs[k]) ? isnan(gs[k]) : gs[k] == wg);
        bad += us[k] != (uint8_t)(int64_t)sat;
    }
    CHECK(bad == 0);
    cgt_fini(&t);
}

/* f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 is above the halfway point */
static void test_half_from_double(void)
{
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *d = BUF(&t, "d", SMELT_DT_FLOAT64, 4, IR_BUF_INPUT);
    ir_buffer *h = BUF(&t, "h", SMELT_DT_FLOAT16, 4, IR_BUF_OUTPUT);
    ir_var *i = VAR(&t, "i");
    ir_func *f = cgt_func(&t, "d2h", 2, (ir_buffer *[]){d, h},
                          FOR(&t, i, 0, 4, IR_FOR_SERIAL,
                              ST(&t, h, V(&t, i), ir_cast(&t.b, SMELT_DT_FLOAT16, LD(&t, d, V(&t, i))))));
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0)});
    cgt_input(&t, "d", SMELT_DT_FLOAT64, 4);
    cgt_output(&t, "h", SMELT_DT_FLOAT16, 4);
    double ds[4] = {1.0 + ldexp(1, -11) + ldexp(1, -40), 1.0 + ldexp(1, -11), -65520.0, 1e300};
    uint16_t hs[4];
    CHECK(run(&t, (const void *[]){ds}, (void *[]){hs}, NULL));
    CHECK(hs[0] == 0x3c01); /* rounded up, not tied to even */
    CHECK(hs[1] == 0x3c00); /* an exact tie goes to even */
    CHECK(hs[2] == 0xfc00 && hs[3] == 0x7c00); /* overflow to infinity */
    cgt_fini(&t);
}

/* ---- 5. select, compare, min/max, isnan, abs; a bool output ---- */
static void test_select(void)
{
    enum { N = 45 };
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *x = BUF(&t, "x", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *y = BUF(&t, "y", SMELT_DT_FLOAT32, 3 * N, IR_BUF_OUTPUT);
    ir_buffer *b = BUF(&t, "b", SMELT_DT_BOOL, N, IR_BUF_OUTPUT);
    ir_var *i = VAR(&t, "i"), *j = VAR(&t, "j");
    ir_expr *xv = LD(&t, x, V(&t, i));
    ir_expr *absx = ir_call(&t.b, IR_CALL_ABS, SMELT_DT_FLOAT32, 1, &xv);
    ir_expr *isn = ir_call(&t.b, IR_CALL_ISNAN, SMELT_DT_BOOL, 1, &xv);
    ir_stmt *s[] = {
        ST(&t, y, V(&t, i),
           ir_select(&t.b, BIN(&t, IR_GT, xv, F(&t, 0)), xv, BIN(&t, IR_MUL, xv, F(&t, 0.1)))),
        ST(&t, y, BIN(&t, IR_ADD, V(&t, i), I(&t, N)),
           BIN(&t, IR_MAX, BIN(&t, IR_MIN, xv, F(&t, 0.5)), F(&t, -0.5))),
        ST(&t, y, BIN(&t, IR_ADD, V(&t, i), I(&t, 2 * N)),
           ir_select(&t.b, BIN(&t, IR_OR, isn, BIN(&t, IR_LT, V(&t, i), I(&t, 3))), F(&t, -7), absx)),
    };
    ir_stmt *loop1 = FOR(&t, i, 0, N, IR_FOR_VECTORIZED, ir_seq(&t.b, 3, s));
    ir_expr *xj = LD(&t, x, V(&t, j));
    ir_stmt *loop2 = FOR(&t, j, 0, N, IR_FOR_VECTORIZED, ST(&t, b, V(&t, j), BIN(&t, IR_GE, xj, F(&t, 0.25))));
    ir_func *f = cgt_func(&t, "sel", 3, (ir_buffer *[]){x, y, b}, ir_seq2(&t.b, loop1, loop2));
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0), SLOT_OUT(1)});
    cgt_input(&t, "x", SMELT_DT_FLOAT32, N);
    cgt_output(&t, "y", SMELT_DT_FLOAT32, 3 * N);
    cgt_output(&t, "b", SMELT_DT_BOOL, N);
    float xs[N], ys[3 * N];
    uint8_t bs[N];
    uint32_t seed = 4;
    for (int k = 0; k < N; k++) xs[k] = rnd(&seed);
    xs[5] = NAN;
    xs[7] = -0.0f;
    char *src = NULL;
    CHECK(run(&t, (const void *[]){xs}, (void *[]){ys, bs}, &src));
    int bad = 0;
    for (int k = 0; k < N; k++) {
        float v = xs[k];
        float w0 = v > 0 ? v : v * 0.1f;
        float mn = v < 0.5f ? v : 0.5f;
        float w1 = mn > -0.5f ? mn : -0.5f;
        float w2 = (isnan(v) || k < 3) ? -7.0f : fabsf(v);
        bad += memcmp(&ys[k], &w0, 4) != 0 && !(isnan(w0) && isnan(ys[k]));
        bad += memcmp(&ys[N + k], &w1, 4) != 0;
        bad += memcmp(&ys[2 * N + k], &w2, 4) != 0;
        bad += bs[k] != (v >= 0.25f);
    }
    CHECK(bad == 0);
    if (target->vector_bytes) CHECK_STR_CONTAINS(src, "/* vectorized:");
    smelt_free(src);
    cgt_fini(&t);
}

/* ---- 6. unrolled loops: copies (small) and the pragma (large) ---- */
static void test_unroll(void)
{
    enum { N = 10, U = 4, M = 37 };
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *x = BUF(&t, "x", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *y = BUF(&t, "y", SMELT_DT_FLOAT32, N * U + M, IR_BUF_OUTPUT);
    ir_var *i = VAR(&t, "i"), *j = VAR(&t, "j"), *k = VAR(&t, "k");
    ir_expr *yi = BIN(&t, IR_ADD, BIN(&t, IR_MUL, V(&t, i), I(&t, U)), V(&t, j));
    ir_expr *scale = ir_cast(&t.b, SMELT_DT_FLOAT32, BIN(&t, IR_ADD, V(&t, j), I(&t, 1)));
    ir_stmt *l1 = FOR(&t, i, 0, N, IR_FOR_SERIAL,
                      FOR(&t, j, 0, U, IR_FOR_UNROLLED, ST(&t, y, yi, BIN(&t, IR_MUL, LD(&t, x, V(&t, i)), scale))));
    ir_stmt *l2 = FOR(&t, k, 0, M, IR_FOR_UNROLLED,
                      ST(&t, y, BIN(&t, IR_ADD, V(&t, k), I(&t, N * U)), ir_cast(&t.b, SMELT_DT_FLOAT32, V(&t, k))));
    ir_func *f = cgt_func(&t, "unroll", 2, (ir_buffer *[]){x, y}, ir_seq2(&t.b, l1, l2));
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0)});
    cgt_input(&t, "x", SMELT_DT_FLOAT32, N);
    cgt_output(&t, "y", SMELT_DT_FLOAT32, N * U + M);
    float xs[N], ys[N * U + M];
    for (int q = 0; q < N; q++) xs[q] = (float)q * 0.5f;
    char *src = NULL;
    CHECK(run(&t, (const void *[]){xs}, (void *[]){ys}, &src));
    int bad = 0;
    for (int q = 0; q < N; q++)
        for (int r = 0; r < U; r++) bad += ys[q * U + r] != xs[q] * (float)(r + 1);
    for (int q = 0; q < M; q++) bad += ys[N * U + q] != (float)q;
    CHECK(bad == 0);
    CHECK_STR_CONTAINS(src, "SMELT_UNROLL(37)");
    CHECK_STR_CONTAINS(src, " + 3;"); /* the fourth copy */
    smelt_free(src);
    cgt_fini(&t);
}

/* ---- 7. math calls, lane by lane in vector loops ---- */
static void test_math(void)
{
    enum { N = 40, OPS = 12 };
    static const ir_call_op ops[OPS] = {IR_CALL_EXP,  IR_CALL_TANH,  IR_CALL_SIGMOID, IR_CALL_ERF,
                                        IR_CALL_SQRT, IR_CALL_FLOOR, IR_CALL_CEIL,    IR_CALL_ROUND,
                                        IR_CALL_SIN,  IR_CALL_COS,   IR_CALL_POW,     IR_CALL_LOG};
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *x = BUF(&t, "x", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *y = BUF(&t, "y", SMELT_DT_FLOAT32, N * OPS, IR_BUF_OUTPUT);
    ir_var *i = VAR(&t, "i");
    ir_stmt *st[OPS];
    for (int o = 0; o < OPS; o++) {
        ir_expr *xv = LD(&t, x, V(&t, i));
        ir_expr *arg = (ops[o] == IR_CALL_SQRT || ops[o] == IR_CALL_LOG || ops[o] == IR_CALL_POW)
                           ? ir_call(&t.b, IR_CALL_ABS, SMELT_DT_FLOAT32, 1, &xv)
                           : xv;
        ir_expr *args[2] = {arg, F(&t, 1.5)};
        ir_expr *c = ir_call(&t.b, ops[o], SMELT_DT_FLOAT32, ops[o] == IR_CALL_POW ? 2 : 1, args);
        st[o] = ST(&t, y, BIN(&t, IR_ADD, V(&t, i), I(&t, o * N)), c);
    }
    ir_func *f = cgt_func(&t, "math", 2, (ir_buffer *[]){x, y}, FOR(&t, i, 0, N, IR_FOR_VECTORIZED, ir_seq(&t.b, OPS, st)));
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0)});
    cgt_input(&t, "x", SMELT_DT_FLOAT32, N);
    cgt_output(&t, "y", SMELT_DT_FLOAT32, N * OPS);
    float xs[N], ys[N * OPS];
    uint32_t seed = 5;
    for (int k = 0; k < N; k++) xs[k] = rnd(&seed) * 4.0f;
    xs[3] = 2.5f; /* round half to even */
    xs[4] = -0.5f;
    CHECK(run(&t, (const void *[]){xs}, (void *[]){ys}, NULL));
    int bad = 0;
    for (int k = 0; k < N; k++) {
        float v = xs[k], a = fabsf(v);
        float want[OPS] = {expf(v), tanhf(v), 1.0f / (1.0f + expf(-v)), erff(v), sqrtf(a), floorf(v),
                           ceilf(v), rintf(v), sinf(v), cosf(v), powf(a, 1.5f), logf(a)};
        for (int o = 0; o < OPS; o++)
            if (!close_rel(ys[o * N + k], want[o], 1e-6)) {
                if (bad++ < 5) fprintf(stderr, "math op %d x=%g: got %g want %g\n", o, v, ys[o * N + k], want[o]);
            }
    }
    CHECK(bad == 0);
    CHECK(ys[7 * N + 3] == 2.0f && ys[7 * N + 4] == -0.0f);
    cgt_fini(&t);
}

/* ---- 8. micro-kernel call, heap temp in a parallel loop, runtime extents ---- */
static void test_misc(void)
{
    enum { N = 77, BIG = 20000 };
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *x = BUF(&t, "x", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *y = BUF(&t, "y", SMELT_DT_FLOAT32, N, IR_BUF_OUTPUT);
    ir_buffer *z = BUF(&t, "z", SMELT_DT_FLOAT32, N, IR_BUF_OUTPUT);
    ir_buffer *s = BUF(&t, "s", SMELT_DT_FLOAT32, 2, IR_BUF_OUTPUT);
    ir_buffer *big = BUF(&t, "big", SMELT_DT_FLOAT32, BIG, IR_BUF_TEMP);
    ir_call_arg args[3] = {{y, I(&t, 0)}, {x, I(&t, 0)}, {NULL, I(&t, N)}};
    ir_stmt *copy = ir_call_stmt(&t.b, "smelt.copy_f32", 3, args);
    /* z[i] for i in [lo, lo + n) with n, lo from lets: runtime extent */
    ir_var *n = VAR(&t, "n"), *lo = VAR(&t, "lo"), *i = VAR(&t, "i");
    ir_stmt *zl = ir_for(&t.b, i, V(&t, lo), V(&t, n), IR_FOR_VECTORIZED,
                         ST(&t, z, V(&t, i), BIN(&t, IR_SUB, LD(&t, x, V(&t, i)), F(&t, 1.0))));
    ir_stmt *zfill = FOR(&t, i, 0, N, IR_FOR_SERIAL, ST(&t, z, V(&t, i), F(&t, 0.0)));
    ir_stmt *zs = ir_seq2(&t.b, zfill, ir_let(&t.b, n, I(&t, N - 3), ir_let(&t.b, lo, I(&t, 2), zl)));
    /* s[p] = sum over a heap temp filled with p + 1 */
    ir_var *p = VAR(&t, "p"), *k = VAR(&t, "k"), *k2 = VAR(&t, "k2");
    ir_buffer *acc = BUF(&t, "acc", SMELT_DT_FLOAT32, 1, IR_BUF_TEMP);
    ir_expr *pv = ir_cast(&t.b, SMELT_DT_FLOAT32, BIN(&t, IR_ADD, V(&t, p), I(&t, 1)));
    ir_stmt *sb[] = {
        FOR(&t, k, 0, BIG, IR_FOR_VECTORIZED, ST(&t, big, V(&t, k), pv)),
        ST(&t, acc, I(&t, 0), F(&t, 0)),
        FOR(&t, k2, 0, BIG, IR_FOR_SERIAL,
            ST(&t, acc, I(&t, 0), BIN(&t, IR_ADD, LD(&t, acc, I(&t, 0)), LD(&t, big, V(&t, k2))))),
        ST(&t, s, V(&t, p), LD(&t, acc, I(&t, 0))),
    };
    ir_stmt *ss = FOR(&t, p, 0, 2, IR_FOR_PARALLEL,
                      ir_allocate(&t.b, big, ir_allocate(&t.b, acc, ir_seq(&t.b, 4, sb))));
    ir_stmt *all[] = {copy, zs, ss};
    ir_func *f = cgt_func(&t, "misc", 4, (ir_buffer *[]){x, y, z, s}, ir_seq(&t.b, 3, all));
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0), SLOT_OUT(1), SLOT_OUT(2)});
    cgt_input(&t, "x", SMELT_DT_FLOAT32, N);
    cgt_output(&t, "y", SMELT_DT_FLOAT32, N);
    cgt_output(&t, "z", SMELT_DT_FLOAT32, N);
    cgt_output(&t, "s", SMELT_DT_FLOAT32, 2);
    float xs[N], ys[N], zs2[N], sums[2];
    for (int q = 0; q < N; q++) xs[q] = (float)q;
    char *src = NULL;
    CHECK(run(&t, (const void *[]){xs}, (void *[]){ys, zs2, sums}, &src));
    int bad = 0;
    for (int q = 0; q < N; q++) {
        bad += ys[q] != xs[q];
        bad += zs2[q] != (q >= 2 && q < N - 1 ? xs[q] - 1.0f : 0.0f);
    }
    CHECK(bad == 0);
    CHECK(sums[0] == (float)BIG && sums[1] == 2.0f * BIG);
    CHECK_STR_CONTAINS(src, "smelt_uk_copy_f32(&p1[0], &p0[0], 77);");
    CHECK_STR_CONTAINS(src, "smelt_alloc64_(");
    smelt_free(src);
    cgt_fini(&t);
}

/* ---- 9. gathers (stride 2, floordiv), scatters (stride 2), float64 ---- */
static void test_strides(void)
{
    enum { N = 33 };
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *x = BUF(&t, "x", SMELT_DT_FLOAT32, 2 * N, IR_BUF_INPUT);
    ir_buffer *y = BUF(&t, "y", SMELT_DT_FLOAT32, 2 * N, IR_BUF_OUTPUT);
    ir_buffer *d = BUF(&t, "d", SMELT_DT_FLOAT64, N, IR_BUF_INPUT);
    ir_buffer *e = BUF(&t, "e", SMELT_DT_FLOAT64, N, IR_BUF_OUTPUT);
    ir_buffer *w = BUF(&t, "w", SMELT_DT_FLOAT32, 2 * N, IR_BUF_OUTPUT);
    ir_var *i = VAR(&t, "i"), *j = VAR(&t, "j");
    ir_expr *g = BIN(&t, IR_ADD, LD(&t, x, BIN(&t, IR_MUL, V(&t, i), I(&t, 2))),
                     LD(&t, x, BIN(&t, IR_FLOORDIV, V(&t, i), I(&t, 3))));
    ir_stmt *s[] = {
        ST(&t, y, BIN(&t, IR_ADD, BIN(&t, IR_MUL, V(&t, i), I(&t, 2)), I(&t, 1)), g),
        ST(&t, w, BIN(&t, IR_MUL, I(&t, 2), V(&t, i)), F(&t, -1)),
    };
    ir_expr *dv = LD(&t, d, V(&t, j));
    ir_stmt *l2 = FOR(&t, j, 0, N, IR_FOR_VECTORIZED,
                      ST(&t, e, V(&t, j),
                         BIN(&t, IR_ADD, BIN(&t, IR_MUL, dv, ir_const_float(&t.b, SMELT_DT_FLOAT64, 1.5)),
                             ir_const_float(&t.b, SMELT_DT_FLOAT64, 0.1))));
    ir_func *f = cgt_func(&t, "strides", 5, (ir_buffer *[]){x, y, d, e, w},
                          ir_seq2(&t.b, FOR(&t, i, 0, N, IR_FOR_VECTORIZED, ir_seq(&t.b, 2, s)), l2));
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0), SLOT_IN(1), SLOT_OUT(1), SLOT_OUT(2)});
    cgt_input(&t, "x", SMELT_DT_FLOAT32, 2 * N);
    cgt_input(&t, "d", SMELT_DT_FLOAT64, N);
    cgt_output(&t, "y", SMELT_DT_FLOAT32, 2 * N);
    cgt_output(&t, "e", SMELT_DT_FLOAT64, N);
    cgt_output(&t, "w", SMELT_DT_FLOAT32, 2 * N);
    float xs[2 * N], ys[2 * N], ws[2 * N];
    double ds[N], es[N];
    for (int q = 0; q < 2 * N; q++) xs[q] = (float)q * 0.25f;
    for (int q = 0; q < N; q++) ds[q] = q * 0.3;
    memset(ys, 0, sizeof ys);
    memset(ws, 0, sizeof ws);
    char *src = NULL;
    CHECK(run(&t, (const void *[]){xs, ds}, (void *[]){ys, es, ws}, &src));
    int bad = 0;
    for (int q = 0; q < N; q++) {
        bad += ys[2 * q + 1] != xs[2 * q] + xs[q / 3];
        bad += ws[2 * q] != -1.0f;
        bad += !close_rel(es[q], ds[q] * 1.5 + 0.1, 1e-15);
    }
    CHECK(bad == 0);
    if (target->vector_bytes) CHECK_STR_CONTAINS(src, "x double */");
    smelt_free(src);
    cgt_fini(&t);
}

/* ---- 10. guards: a padding select around a load, a guarded store ----
 * x sits right after (then right before) an inaccessible page: any load
 * outside x that vector code might do speculatively would fault. */
static void test_guards(void)
{
    enum { NX = 20, NY = 44 };
    cgt_prog t;
    cgt_init(&t);
    ir_buffer *x = BUF(&t, "x", SMELT_DT_FLOAT32, NX, IR_BUF_INPUT);
    ir_buffer *y = BUF(&t, "y", SMELT_DT_FLOAT32, NY, IR_BUF_OUTPUT);
    ir_var *v = VAR(&t, "v"), *o = VAR(&t, "o"), *i = VAR(&t, "i");
    ir_expr *in_range = BIN(&t, IR_AND, BIN(&t, IR_GE, V(&t, v), I(&t, 2)), BIN(&t, IR_LT, V(&t, v), I(&t, 22)));
    ir_stmt *pad = FOR(&t, v, 0, 24, IR_FOR_VECTORIZED,
                       ST(&t, y, V(&t, v),
                          ir_select(&t.b, in_range, LD(&t, x, BIN(&t, IR_SUB, V(&t, v), I(&t, 2))), F(&t, -1))));
    ir_expr *oi = BIN(&t, IR_ADD, BIN(&t, IR_MUL, V(&t, o), I(&t, 16)), V(&t, i));
    ir_stmt *guarded = FOR(&t, o, 0, 2, IR_FOR_SERIAL,
                           FOR(&t, i, 0, 16, IR_FOR_VECTORIZED,
                               ir_if(&t.b, BIN(&t, IR_LT, oi, I(&t, NX)),
                                     ST(&t, y, BIN(&t, IR_ADD, oi, I(&t, 24)),
                                        BIN(&t, IR_MUL, LD(&t, x, oi), F(&t, 2))),
                                     NULL)));
    ir_func *f = cgt_func(&t, "guards", 2, (ir_buffer *[]){x, y}, ir_seq2(&t.b, pad, guarded));
    cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0)});
    cgt_input(&t, "x", SMELT_DT_FLOAT32, NX);
    cgt_output(&t, "y", SMELT_DT_FLOAT32, NY);
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *mem = mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(mem != MAP_FAILED);
    if (mem == MAP_FAILED) return;
    mprotect(mem, (size_t)page, PROT_NONE);
    mprotect(mem + 2 * page, (size_t)page, PROT_NONE);
    float *xs_at_start = (float *)(void *)(mem + page);
    float *xs_at_end = (float *)(void *)(mem + 2 * page) - NX;
    char *src = NULL;
    for (int placement = 0; placement < 2; placement++) {
        float *xs = placement ? xs_at_end : xs_at_start;
        float ys[NY];
        for (int k = 0; k < NX; k++) xs[k] = (float)k + 0.5f;
        CHECK(run(&t, (const void *[]){xs}, (void *[]){ys}, placement ? NULL : &src));
        int bad = 0;
        for (int k = 0; k < 24; k++) bad += ys[k] != (k >= 2 && k < 22 ? xs[k - 2] : -1.0f);
        for (int k = 0; k < NX; k++) bad += ys[24 + k] != xs[k] * 2;
        CHECK(bad == 0);
    }
    if (target->vector_bytes) {
        CHECK_STR_CONTAINS(src, "loop guard folded into the loop bounds");
        CHECK_STR_CONTAINS(src, "smelt_clampi_");
    }
    smelt_free(src);
    munmap(mem, (size_t)page * 3);
    cgt_fini(&t);
}

int main(void)
{
    cgt_setup_env();
    const cg_target *targets[3];
    int n = cgt_targets(targets);
    for (int k = 0; k < n; k++) {
        target = targets[k];
        int before = test_checks_failed;
        test_axpy();
        test_row_sum();
        test_integers();
        test_half();
        test_half_from_double();
        test_select();
        test_unroll();
        test_math();
        test_misc();
        test_strides();
        test_guards();
        printf("target %s: %s\n", target->name, test_checks_failed == before ? "ok" : "FAILED");
    }
    TEST_MAIN_END();
}
