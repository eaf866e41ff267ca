/* The pass tests' output comparison (tests/passes/pass_graphs.h) must fail
 * a rewrite whose output turns NaN: checked on the distance itself and
 * through tg_check_within with a "pass" that poisons a constant. */
#include "passes/pass_graphs.h"

static smelt_tensor f32_vec(float *data, int64_t n)
{
    smelt_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = SMELT_DT_FLOAT32;
    t.rank = 1;
    t.dims[0] = n;
    t.data = data;
    return t;
}

static void distances(void)
{
    CHECK(tg_elem_diff(1.0, 1.5) == 0.5);
    CHECK(tg_elem_diff(NAN, NAN) == 0.0);
    CHECK(tg_elem_diff(INFINITY, INFINITY) == 0.0);
    CHECK(isinf(tg_elem_diff(1.0, NAN)));
    CHECK(isinf(tg_elem_diff(NAN, 1.0)));
    CHECK(isinf(tg_elem_diff(INFINITY, -INFINITY)));
    float want[3] = {1.0f, 2.0f, 3.0f}, got[3] = {1.0f, NAN, 3.0f}, nans[3] = {1.0f, NAN, 3.0f};
    smelt_tensor w = f32_vec(want, 3), g = f32_vec(got, 3), n = f32_vec(nans, 3);
    CHECK(!(tg_worst_diff(&w, &g) <= 1e-4)); /* a NaN where a number was expected */
    CHECK(!(tg_worst_diff(&g, &w) <= 1e-4)); /* a number where NaN was expected */
    CHECK(tg_worst_diff(&n, &g) == 0.0);     /* NaN expected and got */
}

static void add_const(gr_graph *g)
{
    int64_t d[1] = {4};
    gr_value *in[2] = {tg_input(g, "x", 1, d), tg_const(g, "c", 1, d, 1, 1)};
    tg_output(g, tg_op(g, OP_ADD, "add", 2, in));
}

/* Keeps the nodes but makes the constant's second element NaN. */
static smelt_status poison_const(smelt_ctx *ctx, gr_graph *g)
{
    (void)ctx;
    for (int i = 0; i < g->values.len; i++) {
        gr_value *v = g->values.items[i];
        if (v->constant) ((float *)v->constant->data)[1] = NAN;
    }
    return SMELT_OK;
}

int main(void)
{
    distances();
    /* the checker must record failures for the NaN rewrite; they are
     * expected here, so the counts are restored after */
    int failed = test_checks_failed, passed = test_checks_passed;
    tg_check("NaN-making rewrite", add_const, poison_const, "Add");
    int caught = test_checks_failed - failed;
    test_checks_failed = failed;
    test_checks_passed = passed;
    CHECK(caught == 1);
    TEST_MAIN_END();
}
