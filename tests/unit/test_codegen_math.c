/* The prelude's vector math (exp, tanh, erf, sigmoid over float32 lanes,
 * c_prelude.c) through generated code on every target this machine runs,
 * against libm in double precision: about a million inputs spread over all
 * float bit patterns, dense sweeps where the functions change form, and the
 * special values (zeros, subnormals, the overflow and underflow borders,
 * +-inf, NaN).
 *
 * Bounds, in units in the last place of the correctly rounded float result:
 * the polynomials are fitted to well under 0.1 ulp, so the error is the
 * float rounding of range reduction, polynomial and reconstruction.  Over
 * all 2^32 floats (GCC, avx512, FMA contraction) the worst cases are exp
 * 1.07, tanh 1.33, erf 1.17 ulp and sigmoid 2.48 ulp (its formula
 * 1 / (1 + exp(-x)) alone costs 2.3 ulp with libm's expf).  The bounds
 * leave half an ulp for a compiler contracting other operations into FMAs:
 * exp 1.5, tanh 2, erf 2, sigmoid 3.  Sigmoid below -87, where exp(-x)
 * nears overflow and the result is subnormal or 0, is compared with the
 * scalar code's formula instead (within 1 ulp of it there).  On a target
 * without vectors the loop is scalar and must equal libm bit for bit. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "test_codegen_util.h"

enum { N = 1 << 14, N_OPS = 4 };

static const ir_call_op ops[N_OPS] = {IR_CALL_EXP, IR_CALL_TANH, IR_CALL_ERF, IR_CALL_SIGMOID};
static const char *const op_names[N_OPS] = {"exp", "tanh", "erf", "sigmoid"};
static const double ulp_bound[N_OPS] = {1.5, 2.0, 2.0, 3.0};

static double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

/* What scalar code computes: libm's float functions. */
static float libm_float(int op, float x)
{
    switch (op) {
    case 0: return expf(x);
    case 1: return tanhf(x);
    case 2: return erff(x);
    default: return 1.0f / (1.0f + expf(-x));
    }
}

static double reference(int op, float x)
{
    switch (op) {
    case 0: return exp(x);
    case 1: return tanh(x);
    case 2: return erf(x);
    default: return x < -87.0f ? (double)(1.0f / (1.0f + expf(-x))) : sigmoid_d(x);
    }
}

/* The spacing of floats at the float nearest to ref (subnormal spacing
 * below FLT_MIN). */
static double float_ulp(double ref)
{
    float f = fabsf((float)ref);
    if (f < FLT_MIN) return ldexp(1.0, -149);
    if (isinf(f)) f = FLT_MAX;
    int e;
    frexpf(f, &e);
    return ldexp(1.0, e - 24);
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

typedef struct worst {
    double ulps;
    float x, got;
    int bad; /* wrong class: NaN, infinity or sign */
} worst;

/* Error of got for op at x; exact classes for NaN, infinities and zeros' signs. */
static void judge(int op, float x, float got, worst *w)
{
    double ref = reference(op, x);
    float ref_f = (float)ref;
    bool ok_class = isnan(ref) ? isnan(got)
                    : isinf(ref_f) ? got == ref_f
                                   : !isnan(got) && !isinf(got) && (ref_f == 0 || signbit(got) == signbit(ref_f));
    if (!ok_class) {
        if (w->bad++ < 5)
            fprintf(stderr, "%s(%a) = %a, want %a\n", op_names[op], (double)x, (double)got, ref);
        return;
    }
    if (isnan(ref) || isinf(ref_f)) return;
    double ulps = fabs((double)got - ref) / float_ulp(ref);
    if (ulps > w->ulps) {
        w->ulps = ulps;
        w->x = x;
        w->got = got;
    }
}

/* y[op * N + i] = op(x[i]) in one vectorised loop. */
static void build(cgt_prog *t)
{
    cgt_init(t);
    ir_buffer *x = BUF(t, "x", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *y = BUF(t, "y", SMELT_DT_FLOAT32, (int64_t)N * N_OPS, IR_BUF_OUTPUT);
    ir_var *i = VAR(t, "i");
    ir_stmt *st[N_OPS];
    for (int o = 0; o < N_OPS; o++) {
        ir_expr *xv = LD(t, x, V(t, i));
        ir_expr *c = ir_call(&t->b, ops[o], SMELT_DT_FLOAT32, 1, &xv);
        st[o] = ST(t, y, BIN(t, IR_ADD, V(t, i), I(t, (int64_t)o * N)), c);
    }
    ir_func *f = cgt_func(t, "math", 2, (ir_buffer *[]){x, y},
                          FOR(t, i, 0, N, IR_FOR_VECTORIZED, ir_seq(&t->b, N_OPS, st)));
    cgt_call(t, f, (ir_slot[]){SLOT_IN(0), SLOT_OUT(0)});
    cgt_input(t, "x", SMELT_DT_FLOAT32, N);
    cgt_output(t, "y", SMELT_DT_FLOAT32, (int64_t)N * N_OPS);
}

static bool run_batch(smelt_rt_model *m, const float *x, float *y)
{
    const void *in[1] = {x};
    void *out[1] = {y};
    size_t in_b[1] = {sizeof(float) * N}, out_b[1] = {sizeof(float) * N * N_OPS};
    smelt_rt_status st = smelt_rt_model_run(m, in, in_b, 1, out, out_b, 1);
    if (st != SMELT_RT_OK) fprintf(stderr, "run: %s\n", smelt_rt_model_error(m));
    return st == SMELT_RT_OK;
}

/* Values where the functions change form or leave the float range, each
 * with its neighbours, both signs. */
static int special_inputs(float *x)
{
    static const float centres[] = {
        0.0f,         FLT_TRUE_MIN, 1e-40f,       FLT_MIN,     1e-30f,      1e-10f,     1e-4f,
        0.5f,         0.625f,       1.0f,         2.0f,        3.8325f,     4.0f,       9.0f,
        9.1f,         16.0f,        44.36f,       87.33654f,   88.0f,       88.72283f,  88.7228394f,
        89.0f,        103.27893f,   103.97208f,   104.0f,      105.0f,      1e10f,      FLT_MAX,
        0.346573590f, 0.693147181f, 12582912.0f,  4194304.0f,
    };
    int n = 0;
    for (size_t c = 0; c < sizeof centres / sizeof centres[0]; c++)
        for (int sign = 0; sign < 2; sign++)
            for (int d = -2; d <= 2; d++) {
                float v = centres[c];
                for (int k = 0; k < (d < 0 ? -d : d); k++) v = nextafterf(v, d < 0 ? 0.0f : INFINITY);
                x[n++] = sign ? -v : v;
            }
    x[n++] = INFINITY;
    x[n++] = -INFINITY;
    x[n++] = NAN;
    x[n++] = -NAN;
    x[n++] = from_bits(0x7f800001u); /* signalling NaN */
    x[n++] = from_bits(0xffc12345u);
    return n;
}

static void fill_batch(int batch, float *x)
{
    int n = 0;
    if (batch == 0) n = special_inputs(x);
    uint32_t seed = 12345u + (uint32_t)batch;
    for (; n < N; n++) {
        seed = seed * 1664525u + 1013904223u;
        double unit = (double)(seed >> 8) / 16777216.0; /* [0, 1) */
        if (batch < 64) /* every 4093rd bit pattern: 2^20 spread over all 2^32 */
            x[n] = from_bits((uint32_t)(((uint64_t)batch * N + (uint64_t)n) * 4093u));
        else if (batch < 72) /* the small forms and their borders */
            x[n] = (float)(unit * 10.0 - 5.0);
        else /* exp's whole range and sigmoid's underflow */
            x[n] = (float)(unit * 220.0 - 110.0);
    }
}

static void test_target(const cg_target *target)
{
    cgt_prog t;
    build(&t);
    void *handle;
    char *src;
    smelt_rt_model *m = cgt_compile(&t, target, &handle, &src);
    CHECK(m != NULL);
    if (!m) {
        cgt_release(m, handle, src);
        cgt_fini(&t);
        return;
    }
    /* the vector loop uses the prelude's functions wherever there are vectors */
    int lanes = cg_target_lanes(target, SMELT_DT_FLOAT32);
    for (int o = 0; o < N_OPS; o++) {
        char call[64];
        snprintf(call, sizeof call, "smelt_v%s_f32x%d(&", op_names[o], lanes);
        CHECK(lanes == 0 ? strstr(src, "smelt_v") == NULL : strstr(src, call) != NULL);
    }
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N * N_OPS);
    worst w[N_OPS];
    memset(w, 0, sizeof w);
    int not_libm = 0;
    for (int batch = 0; batch < 80 && x && y; batch++) {
        fill_batch(batch, x);
        CHECK(run_batch(m, x, y));
        for (int o = 0; o < N_OPS; o++)
            for (int k = 0; k < N; k++) {
                float got = y[(size_t)o * N + k], want = libm_float(o, x[k]);
                if (lanes == 0 && memcmp(&got, &want, sizeof got) != 0 && !(isnan(got) && isnan(want)))
                    not_libm++;
                judge(o, x[k], got, &w[o]);
            }
    }
    if (lanes == 0) { /* scalar code: libm itself, whose error is libm's */
        CHECK(not_libm == 0);
        goto done;
    }
    for (int o = 0; o < N_OPS; o++) {
        printf("[%s] %-7s worst %.3f ulp at x = %a (got %a)\n", target->name, op_names[o], w[o].ulps,
               (double)w[o].x, (double)w[o].got);
        CHECK(w[o].bad == 0);
        CHECK(w[o].ulps <= ulp_bound[o]);
    }
done:
    free(x);
    free(y);
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
