/* RNN, GRU and LSTM: the compiled form (an extern stage: the recurrence as
 * loop IR around smelt.gemm_f32, ops/rnn_compute.c) against the reference
 * kernel.  Each case runs the reference, the te interpreter (the extern's
 * statement through the tir interpreter), and the lowered function under
 * the default schedule, random schedules and random knobs (the gathers of
 * Y, Y_h, Y_c take them; the extern takes none).  Covers what the ONNX
 * node tests and conformance/rnn_cases leave out: sequence lengths of 0
 * and lengths given as constants, constant W/R (transposed at compile
 * time into te constants), the input projection in parallel row blocks, float64 and float16, the plain-loop
 * products of other types, GRU's reset product with peepholes absent,
 * out-of-range lengths (the check stage), and schedule steps on the
 * extern stage (refused, naming the stage). */
#include "op_test_util.h"
#include "sched/sched.h"

/* Floats in [-1, 1). */
static void fill(smelt_tensor *t, int64_t i, int kind, uint32_t *state)
{
    (void)kind;
    op_set_f64(t, i, 2.0 * opt_uniform(state) - 1.0);
}

/* The recurrence compounds rounding over the steps. */
static const opt_suite k_suite = {
    .seed = 1414,
    .fill = fill,
    .tols = {.f32 = {2e-5, 2e-5}, .f64 = {1e-12, 1e-12}, .f16 = {2e-2, 2e-2}, .bf16 = {1e-1, 1e-1}},
    .random_schedules = 2,
};

#define X OPT_X
#define NONE OPT_NONE
#define AI OPT_AI
#define AF OPT_AF
#define AS OPT_AS
#define LENS_R(...) OPT_RUNTIME1(I32, __VA_ARGS__)
#define LENS_C(...) OPT_CONST1(I32, __VA_ARGS__)

enum { T = 4, N = 3, I = 5, H = 6 };

static const opt_case k_cases[] = {
    {"lstm bidirectional, every input, run-time lengths with a 0", OP_LSTM, 22, "yyy", 8, 2,
     {X(F32, 3, T, N, I), X(F32, 3, 2, 4 * H, I), X(F32, 3, 2, 4 * H, H), X(F32, 2, 2, 8 * H),
      LENS_R(4, 0, 2), X(F32, 3, 2, N, H), X(F32, 3, 2, N, H), X(F32, 2, 2, 3 * H)},
     {AS("direction", "bidirectional"), AI("hidden_size", H)}},
    {"lstm reverse, layout 1, constant lengths, input_forget, clip, no Y", OP_LSTM, 14, "-yy", 8, 5,
     {X(F32, 3, N, T, I), X(F32, 3, 1, 4 * H, I), X(F32, 3, 1, 4 * H, H), NONE, LENS_C(1, 4, 3),
      X(F32, 3, N, 1, H), NONE, X(F32, 2, 1, 3 * H)},
     {AS("direction", "reverse"), AI("layout", 1), AI("input_forget", 1), AF("clip", 0.7),
      AI("hidden_size", H)}},
    {"lstm float64 (plain-loop products), only Y_c", OP_LSTM, 22, "--y", 3, 0,
     {X(F64, 3, T, N, I), X(F64, 3, 1, 4 * H, I), X(F64, 3, 1, 4 * H, H)}, {{0}}},
    {"lstm constant W and R (transposed at compile time), bidirectional", OP_LSTM, 22, "yyy", 4, 1,
     {X(F32, 3, T, N, I), {.dt = F32, .rank = 3, .dims = {2, 4 * H, I}, .constant = true},
      {.dt = F32, .rank = 3, .dims = {2, 4 * H, H}, .constant = true}, X(F32, 2, 2, 8 * H)},
     {AS("direction", "bidirectional")}},
    {"gru constant R only, reset before the product, reverse", OP_GRU, 22, "yy", 3, 1,
     {X(F32, 3, T, N, I), X(F32, 3, 1, 3 * H, I),
      {.dt = F32, .rank = 3, .dims = {1, 3 * H, H}, .constant = true}},
     {AS("direction", "reverse")}},
    {"lstm 70 projection rows: parallel blocks of 32, the last of 6", OP_LSTM, 22, "yyy", 5, 0,
     {X(F32, 3, 10, 7, I), X(F32, 3, 1, 4 * H, I), X(F32, 3, 1, 4 * H, H), X(F32, 2, 1, 8 * H),
      LENS_R(10, 3, 0, 7, 9, 10, 1)},
     {{0}}},
    {"gru reverse, reset before the product, lengths", OP_GRU, 22, "yy", 6, 2,
     {X(F32, 3, T, N, I), X(F32, 3, 1, 3 * H, I), X(F32, 3, 1, 3 * H, H), X(F32, 2, 1, 6 * H),
      LENS_R(2, 4, 0), X(F32, 3, 1, N, H)},
     {AS("direction", "reverse"), AI("linear_before_reset", 0)}},
    {"gru bidirectional, layout 1, linear_before_reset, float64", OP_GRU, 22, "yy", 4, 3,
     {X(F64, 3, N, T, I), X(F64, 3, 2, 3 * H, I), X(F64, 3, 2, 3 * H, H), X(F64, 2, 2, 6 * H)},
     {AS("direction", "bidirectional"), AI("layout", 1), AI("linear_before_reset", 1)}},
    {"rnn forward float16, clip, Y only", OP_RNN, 22, "y-", 3, 1,
     {X(F16, 3, T, N, I), X(F16, 3, 1, H, I), X(F16, 3, 1, H, H)}, {AF("clip", 0.5)}},
    {"rnn bidirectional, lengths, initial state, opset 7", OP_RNN, 7, "yy", 6, 1,
     {X(F32, 3, T, N, I), X(F32, 3, 2, H, I), X(F32, 3, 2, H, H), X(F32, 2, 2, 2 * H),
      LENS_R(3, 1, 4), X(F32, 3, 2, N, H)},
     {AS("direction", "bidirectional")}},
};

/* A sequence length above T fails the reference and every compiled form
 * with the same message. */
static void test_length_out_of_range(void)
{
    opt_case c = {"lstm length out of range", OP_LSTM, 22, "yy", 5, 0,
                  {X(F32, 3, T, N, I), X(F32, 3, 1, 4 * H, I), X(F32, 3, 1, 4 * H, H), NONE,
                   LENS_R(4, 7, 1)},
                  {{0}}};
    opt_check_data_error(&k_suite, &c, "(LSTM): sequence length 7 at position 1 is out of range [0, 4]");
}

/* Schedules cannot touch the extern stage: a step on it fails naming the
 * step. */
static void test_extern_takes_no_steps(void)
{
    opt_node t;
    opt_case c = {"gru", OP_GRU, 22, "yy", 3, 0,
                  {X(F32, 3, T, N, I), X(F32, 3, 1, 3 * H, I), X(F32, 3, 1, 3 * H, H)}, {{0}}};
    CHECK(opt_case_init(&t, &k_suite, &c) == SMELT_OK);
    smelt_tensor types[3];
    CHECK(op_get(OP_GRU)->def->infer(t.ctx, t.node, t.in, types) == SMELT_OK);
    const smelt_tensor *tin[3] = {t.in[0], t.in[1], t.in[2]};
    te_graph *te = NULL;
    CHECK(te_from_node(t.ctx, t.node, tin, types, &te) == SMELT_OK);
    static const char *const steps[] = {"split state i0 2", "compute_inline state",
                                        "parallel state i0", "cache_write state"};
    for (size_t k = 0; te && k < SMELT_ARRAY_LEN(steps); k++) {
        sch_schedule s;
        sch_schedule_init(&s);
        sch_state *st = NULL;
        smelt_ctx_clear(t.ctx);
        CHECK(sch_schedule_parse(t.ctx, steps[k], &s) == SMELT_OK);
        CHECK(sch_state_build(t.ctx, te, &s, &st) == SMELT_ERR_ARG);
        CHECK_STR_CONTAINS(opt_message(&t), "an extern stage (a loop-IR statement of its op) takes no steps");
        sch_state_free(st);
        sch_schedule_fini(&s);
    }
    te_graph_free(te);
    opt_fini(&t);
}

int main(void)
{
    opt_check_cases(&k_suite, k_cases, SMELT_ARRAY_LEN(k_cases));
    test_length_out_of_range();
    test_extern_takes_no_steps();
    TEST_MAIN_END();
}
