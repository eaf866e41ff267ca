/* float -> integer conversions in vector loops (c_vec.c's converting
 * stores): a loop storing cast<T>(float) into an int8, uint8, int16,
 * uint16 or int32 buffer is emitted with vector types (it used to fall
 * back to a scalar loop calling smelt_f2i per element, which GCC does not
 * vectorise), and every lane gives what the scalar conversion gives:
 * NaN -> 0, values beyond the type saturate, the rest truncate toward 0.
 * Also the quantize form cast<u8>(min(max(rint(x) + zp, 0), 255)): rint
 * rounds ties to even.  Edge values: NaN, -NaN, +-inf, +-0, ties, the
 * types' bounds and just past them, 2^31 (above float32's largest int32),
 * denormals; float32 and float64 sources; a tail shorter than a vector. */
#include <math.h>
#include <stdint.h>

#include "test_codegen_util.h"

enum { N = 67, N_TYPES = 5 };

static const smelt_dtype k_types[N_TYPES] = {SMELT_DT_INT8, SMELT_DT_UINT8, SMELT_DT_INT16,
                                             SMELT_DT_UINT16, SMELT_DT_INT32};
static const int64_t k_lo[N_TYPES] = {-128, 0, -32768, 0, -2147483647 - 1};
static const int64_t k_hi[N_TYPES] = {127, 255, 32767, 65535, 2147483647};

static void fill(double *x)
{
    static const double special[] = {
        NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.99, -3.99,
        126.5, 127.0, 127.5, 128.0, -128.0, -128.5, -129.0, 254.5, 255.0, 255.5, 256.0,
        32767.5, 32768.0, -32768.5, -32769.0, 65535.5, 65536.0, 2147483520.0, 2147483648.0,
        4e9, -2147483648.0, -2147483904.0, -3e9, 1e30, -1e30, 1e-40, -1e-40, 0.49999997};
    int n = (int)SMELT_ARRAY_LEN(special);
    for (int i = 0; i < N; i++) x[i] = i < n ? special[i] : (i - n) * 0.75 - 9.0;
}

/* smelt_f2i's contract */
static int64_t want_f2i(double x, int64_t lo, int64_t hi)
{
    if (x != x) return 0;
    if (x <= (double)lo) return lo;
    if (x >= (double)hi) return hi;
    return (int64_t)x;
}

/* the quantize form, in float32 as the loop computes it */
static int64_t want_quant(float x, float zp)
{
    float v = rintf(x) + zp;
    v = v > 0.0f ? v : 0.0f; /* max(a, b) = a > b ? a : b */
    v = v < 255.0f ? v : 255.0f;
    return want_f2i(v, 0, 255);
}

static int64_t read_int(const void *p, smelt_dtype dt, int i)
{
    switch (dt) {
    case SMELT_DT_INT8: return ((const int8_t *)p)[i];
    case SMELT_DT_UINT8: return ((const uint8_t *)p)[i];
    case SMELT_DT_INT16: return ((const int16_t *)p)[i];
    case SMELT_DT_UINT16: return ((const uint16_t *)p)[i];
    default: return ((const int32_t *)p)[i];
    }
}

static ir_stmt *loop_store(cgt_prog *t, ir_buffer *y, ir_expr *(*value)(cgt_prog *, ir_buffer *, ir_var *),
                           ir_buffer *x)
{
    ir_var *i = VAR(t, "i");
    return FOR(t, i, 0, N, IR_FOR_VECTORIZED, ST(t, y, V(t, i), value(t, x, i)));
}

static ir_buffer *g_y;
static ir_expr *cast_value(cgt_prog *t, ir_buffer *x, ir_var *i)
{
    return ir_cast(&t->b, g_y->dtype, LD(t, x, V(t, i)));
}

static ir_expr *quant_value(cgt_prog *t, ir_buffer *x, ir_var *i)
{
    ir_expr *l = LD(t, x, V(t, i));
    ir_expr *v = ir_add(&t->b, ir_call(&t->b, IR_CALL_ROUND, SMELT_DT_FLOAT32, 1, &l), F(t, 3.0));
    v = BIN(t, IR_MIN, BIN(t, IR_MAX, v, F(t, 0.0)), F(t, 255.0));
    return ir_cast(&t->b, SMELT_DT_UINT8, v);
}

/* One function: a loop per integer type from x (float32 or float64), then
 * for float32 the quantize form (cgt_prog holds 8 outputs). */
static int build(cgt_prog *t, smelt_dtype src)
{
    cgt_init(t);
    ir_buffer *params[1 + N_TYPES + 1];
    ir_buffer *x = BUF(t, "x", src, N, IR_BUF_INPUT);
    ir_stmt *loops[N_TYPES + 1];
    int np = 0, nl = 0;
    params[np++] = x;
    for (int k = 0; k < N_TYPES; k++) {
        g_y = BUF(t, "y", k_types[k], N, IR_BUF_OUTPUT);
        loops[nl++] = loop_store(t, g_y, cast_value, x);
        params[np++] = g_y;
    }
    if (src == SMELT_DT_FLOAT32) {
        ir_buffer *q = BUF(t, "q", SMELT_DT_UINT8, N, IR_BUF_OUTPUT);
        loops[nl++] = loop_store(t, q, quant_value, x);
        params[np++] = q;
    }
    ir_func *f = cgt_func(t, "f2i", np, params, ir_seq(&t->b, nl, loops));
    ir_slot slots[1 + N_TYPES + 1];
    for (int i = 0; i < np; i++) slots[i] = i < 1 ? SLOT_IN(0) : SLOT_OUT(i - 1);
    cgt_call(t, f, slots);
    cgt_input(t, "x", src, N);
    for (int k = 0; k < N_TYPES; k++) cgt_output(t, "y", k_types[k], N);
    if (src == SMELT_DT_FLOAT32) cgt_output(t, "q", SMELT_DT_UINT8, N);
    return nl;
}

static int check_outputs(const char *target, smelt_dtype src, const double *xd, const float *x,
                         void *const *out)
{
    int bad = 0;
    for (int k = 0; k < N_TYPES; k++)
        for (int i = 0; i < N; i++) {
            double v = src == SMELT_DT_FLOAT64 ? xd[i] : (double)x[i];
            int64_t got = read_int(out[k], k_types[k], i), want = want_f2i(v, k_lo[k], k_hi[k]);
            if (got != want && bad++ < 20)
                fprintf(stderr, "[%s] %s -> %s of %.9g: got %lld, want %lld\n", target, smelt_dtype_name(src),
                        smelt_dtype_name(k_types[k]), v, (long long)got, (long long)want);
        }
    for (int i = 0; src == SMELT_DT_FLOAT32 && i < N; i++) {
        int64_t got = ((const uint8_t *)out[N_TYPES])[i], want = want_quant(x[i], 3.0f);
        if (got != want && bad++ < 20)
            fprintf(stderr, "[%s] quantize %.9g: got %lld, want %lld\n", target, (double)x[i],
                    (long long)got, (long long)want);
    }
    return bad;
}

static void test_target(const cg_target *target, smelt_dtype src)
{
    cgt_prog t;
    int n_out = build(&t, src);
    void *handle;
    char *code;
    smelt_rt_model *m = cgt_compile(&t, target, &handle, &code);
    CHECK(m != NULL);
    /* with vector types, every loop converts lanes (none calls smelt_f2i
     * outside the scalar tails) */
    if (code && cg_target_lanes(target, src) > 0) {
        int n = 0;
        for (const char *p = code; (p = strstr(p, "__builtin_convertvector(x")); p++) n++;
        if (n < n_out)
            fprintf(stderr, "[%s] %s: %d converting stores, want %d\n", target->name, smelt_dtype_name(src), n,
                    n_out);
        CHECK(n >= n_out);
    }
    double xd[N];
    float x[N];
    fill(xd);
    for (int i = 0; i < N; i++) x[i] = (float)xd[i];
    int64_t buf[N_TYPES + 1][N];
    void *out[N_TYPES + 1];
    size_t out_b[N_TYPES + 1];
    for (int k = 0; k < N_TYPES; k++) {
        out[k] = buf[k];
        out_b[k] = (size_t)N * smelt_dtype_size(k_types[k]);
    }
    out[N_TYPES] = buf[N_TYPES];
    out_b[N_TYPES] = N;
    const void *in[1] = {src == SMELT_DT_FLOAT64 ? (const void *)xd : (const void *)x};
    size_t in_b[1] = {src == SMELT_DT_FLOAT64 ? sizeof xd : sizeof x};
    bool ran = m && smelt_rt_model_run(m, in, in_b, 1, out, out_b, n_out) == SMELT_RT_OK;
    CHECK(ran);
    if (ran) CHECK(check_outputs(target->name, src, xd, x, out) == 0);
    cgt_release(m, handle, code);
    cgt_fini(&t);
}

int main(void)
{
    cgt_setup_env();
    const cg_target *targets[3];
    int n = cgt_targets(targets);
    for (int k = 0; k < n; k++) {
        test_target(targets[k], SMELT_DT_FLOAT32);
        test_target(targets[k], SMELT_DT_FLOAT64);
    }
    TEST_MAIN_END();
}
