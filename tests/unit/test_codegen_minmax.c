/* float32 min/max in vector loops (c_vec.c: MINPS/MAXPS where the prelude
 * maps them, compare + blend otherwise) give the scalar semantics bit for
 * bit on every target: min(a, b) = a < b ? a : b, max(a, b) = a > b ? a : b,
 * so b when either is NaN or when they are equal (+0 / -0). */
#include <math.h>
#include <stdint.h>

#include "test_codegen_util.h"

enum { N = 64 }; /* every pair of 8 special values, 4 vectors of 16 */

static const float k_values[8] = {0.0f, -0.0f, 1.5f, -2.0f, INFINITY, -INFINITY, NAN, -NAN};

static void fill(float *a, float *b)
{
    for (int i = 0; i < N; i++) {
        a[i] = k_values[i / 8];
        b[i] = k_values[i % 8];
    }
}

/* y[i] = min(a[i], b[i]), y[N + i] = max(a[i], b[i]) in one vectorised loop. */
static void build(cgt_prog *t)
{
    cgt_init(t);
    ir_buffer *a = BUF(t, "a", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *b = BUF(t, "b", SMELT_DT_FLOAT32, N, IR_BUF_INPUT);
    ir_buffer *y = BUF(t, "y", SMELT_DT_FLOAT32, 2 * N, IR_BUF_OUTPUT);
    ir_var *i = VAR(t, "i");
    ir_stmt *st[2];
    for (int k = 0; k < 2; k++)
        st[k] = ST(t, y, BIN(t, IR_ADD, V(t, i), I(t, (int64_t)k * N)),
                   BIN(t, k ? IR_MAX : IR_MIN, LD(t, a, V(t, i)), LD(t, b, V(t, i))));
    ir_func *f = cgt_func(t, "minmax", 3, (ir_buffer *[]){a, b, y},
                          FOR(t, i, 0, N, IR_FOR_VECTORIZED, ir_seq(&t->b, 2, st)));
    cgt_call(t, f, (ir_slot[]){SLOT_IN(0), SLOT_IN(1), SLOT_OUT(0)});
    cgt_input(t, "a", SMELT_DT_FLOAT32, N);
    cgt_input(t, "b", SMELT_DT_FLOAT32, N);
    cgt_output(t, "y", SMELT_DT_FLOAT32, 2 * N);
}

static void test_target(const cg_target *target)
{
    cgt_prog t;
    build(&t);
    void *handle;
    char *src;
    smelt_rt_model *m = cgt_compile(&t, target, &handle, &src);
    CHECK(m != NULL);
    float a[N], b[N], y[2 * N];
    fill(a, b);
    const void *in[2] = {a, b};
    void *out[1] = {y};
    size_t in_b[2] = {sizeof a, sizeof b}, out_b[1] = {sizeof y};
    bool ran = m && smelt_rt_model_run(m, in, in_b, 2, out, out_b, 1) == SMELT_RT_OK;
    CHECK(ran);
    for (int i = 0; ran && i < N; i++) {
        float want[2] = {a[i] < b[i] ? a[i] : b[i], a[i] > b[i] ? a[i] : b[i]};
        for (int k = 0; k < 2; k++) {
            uint32_t g, w;
            memcpy(&g, &y[k * N + i], sizeof g);
            memcpy(&w, &want[k], sizeof w);
            bool same = g == w || (isnan(y[k * N + i]) && isnan(want[k]));
            if (!same)
                fprintf(stderr, "[%s] %s(%g, %g) = %g (0x%08x), want %g (0x%08x)\n", target->name,
                        k ? "max" : "min", (double)a[i], (double)b[i], (double)y[k * N + i], g,
                        (double)want[k], w);
            CHECK(same);
        }
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
