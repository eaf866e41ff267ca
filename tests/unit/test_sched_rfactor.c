/* Reductions along the contiguous axis (sched/default.c, the rfactor rule):
 * Softmax, LogSoftmax, LayerNormalization and ReduceSum/Max/Min/Prod over
 * the last axis, with row lengths that are and are not multiples of the
 * vector width, compiled for every target the host runs and compared with
 * the reference kernels.  Also: the default schedule of such a group uses
 * rfactor, the tuner's knobs can turn it off (order 1) and ask for it
 * (order 3, more vectors per step with unroll), and softmax's exponentials
 * are a stage of their own (computed once, not inlined twice). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "api/smelt_internal.h"
#include "codegen/target.h"
#include "passes/pass_util.h"
#include "passes/passes.h"
#include "sched/sched.h"
#include "te/te.h"
#include "test_util.h"
#include "test_hw.h"

static smelt_ctx *g_ctx;

typedef struct rf_case {
    const char *name;
    op_kind op;
    int rank;
    int64_t dims[3];
    int64_t reduce_axis; /* Reduce*: the axes input; else unused */
} rf_case;

static const rf_case k_cases[] = {
    {"softmax 12x128 (whole vectors)", OP_SOFTMAX, 2, {12, 128}, 0},
    {"softmax 5x77 (a tail)", OP_SOFTMAX, 2, {5, 77}, 0},
    {"softmax 1x1000", OP_SOFTMAX, 2, {1, 1000}, 0},
    /* the exponentials (128 KB, 240 KB) live in the function's workspace */
    {"softmax 1x32000", OP_SOFTMAX, 2, {1, 32000}, 0},
    {"softmax 3x20000", OP_SOFTMAX, 2, {3, 20000}, 0},
    {"logsoftmax 2x3x131", OP_LOG_SOFTMAX, 3, {2, 3, 131}, 0},
    {"layernorm 3x100", OP_LAYER_NORMALIZATION, 2, {3, 100}, 0},
    {"layernorm 4x768", OP_LAYER_NORMALIZATION, 2, {4, 768}, 0},
    {"reducesum 4x53", OP_REDUCE_SUM, 2, {4, 53}, -1},
    {"reducemax 3x2x70", OP_REDUCE_MAX, 3, {3, 2, 70}, -1},
    {"reducemin 6x33", OP_REDUCE_MIN, 2, {6, 33}, 1},
    {"reduceprod 2x40", OP_REDUCE_PROD, 2, {2, 40}, -1},
    {"reducemean 3x64", OP_REDUCE_MEAN, 2, {3, 64}, -1},
};

static int64_t numel(const rf_case *c)
{
    int64_t n = 1;
    for (int d = 0; d < c->rank; d++) n *= c->dims[d];
    return n;
}

static gr_value *graph_input(gr_graph *g, const rf_case *c)
{
    gr_value *v = gr_value_new(g, "x");
    v->dtype = SMELT_DT_FLOAT32;
    v->rank = c->rank;
    memcpy(v->dims, c->dims, sizeof(int64_t) * (size_t)c->rank);
    v->is_input = true;
    smelt_ptrvec_push(&g->inputs, v);
    return v;
}

/* Values near 1 for products (so 40 of them stay finite), else [-4, 4). */
static float *row_values(int64_t n, int last, bool near_one)
{
    float *d = malloc(sizeof(float) * (size_t)n);
    uint32_t s = 2024u + (uint32_t)n;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        float u = (float)(s >> 8) / (float)(1u << 24);
        d[i] = near_one ? 0.75f + 0.5f * u : 8.0f * u - 4.0f;
    }
    (void)last;
    return d;
}

static smelt_model *case_model(const rf_case *c)
{
    gr_graph *g = gr_graph_new();
    g->opset = 18;
    gr_value *in[3] = {graph_input(g, c), NULL, NULL};
    int n_in = 1;
    int64_t last = c->dims[c->rank - 1];
    if (c->op == OP_LAYER_NORMALIZATION) {
        float *scale = row_values(last, 0, true), *bias = row_values(last, 0, false);
        in[1] = pu_const_f32(g_ctx, g, "scale", 1, &last, scale);
        in[2] = pu_const_f32(g_ctx, g, "bias", 1, &last, bias);
        free(scale);
        free(bias);
        n_in = 3;
    } else if (c->op != OP_SOFTMAX && c->op != OP_LOG_SOFTMAX) {
        int64_t one = 1;
        in[1] = pu_const_i64(g_ctx, g, "axes", 1, &one, &c->reduce_axis);
        n_in = 2;
    }
    gr_node *n = pu_node_new(g_ctx, g, "n0", c->op, in, n_in, 1);
    CHECK(n && pu_node_import(g_ctx, g, n) == SMELT_OK);
    n->outputs[0]->is_output = true;
    smelt_ptrvec_push(&g->outputs, n->outputs[0]);
    smelt_model *m = smelt_model_from_graph(g);
    CHECK(pass_infer_shapes(g_ctx, g) == SMELT_OK && gr_graph_verify(g_ctx, g) == SMELT_OK);
    return m;
}

/* Compiled for target, against the reference kernels (the suite's f32
 * tolerance: sums reassociate). */
static void check_case(const rf_case *c, const char *target)
{
    smelt_model *m = case_model(c);
    smelt_tensor in = {.dtype = SMELT_DT_FLOAT32, .rank = c->rank}, want = {0}, got = {0};
    memcpy(in.dims, c->dims, sizeof(int64_t) * (size_t)c->rank);
    in.data = row_values(numel(c), 0, c->op == OP_REDUCE_PROD);
    smelt_status s = smelt_model_run_reference(g_ctx, m, &in, 1, &want, 1);
    smelt_options o;
    smelt_options_init(&o);
    o.target = target;
    if (s == SMELT_OK) s = smelt_model_compile(g_ctx, m, &o);
    if (s == SMELT_OK) s = smelt_model_run(g_ctx, m, &in, 1, &got, 1);
    if (s != SMELT_OK) fprintf(stderr, "%s (%s): %s\n", c->name, target, smelt_ctx_message(g_ctx));
    CHECK(s == SMELT_OK);
    int64_t n = smelt_tensor_numel(&want);
    CHECK(s != SMELT_OK || smelt_tensor_numel(&got) == n);
    for (int64_t i = 0; s == SMELT_OK && i < n; i++) {
        float w = ((const float *)want.data)[i], v = ((const float *)got.data)[i];
        if (!(fabsf(v - w) <= 1e-5f * (1.0f + fabsf(w)))) {
            fprintf(stderr, "%s (%s): element %lld: got %.9g want %.9g\n", c->name, target,
                    (long long)i, v, w);
            CHECK(false);
            break;
        }
    }
    smelt_tensor_release(&want);
    smelt_tensor_release(&got);
    free(in.data);
    smelt_model_free(m);
    smelt_ctx_clear(g_ctx);
}

/* ---- schedules ---- */

static bool escapes(const gr_value *v, void *user)
{
    (void)user;
    return v->is_output;
}

/* rfactor steps on a te reduction axis (not on the partials of one, which
 * the combine tree factors again) */
static int count_factored(const sch_schedule *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        n += s->steps[i].kind == SCH_RFACTOR && !strchr(s->steps[i].iters[0], '.');
    return n;
}

static int count_steps(const sch_schedule *s, sch_kind k)
{
    int n = 0;
    for (int i = 0; i < s->n; i++) n += s->steps[i].kind == k;
    return n;
}

static bool knob_offers(const sch_knob_space *sp, sch_knob k, int64_t v)
{
    for (int i = 0; i < sp->n_values[k]; i++)
        if (sp->values[k][i] == v) return true;
    return false;
}

static bool same_schedule(const te_graph *te, const sch_knobs *a, const sch_knobs *b)
{
    sch_schedule sa, sb;
    sch_schedule_init(&sa);
    sch_schedule_init(&sb);
    smelt_strbuf ta, tb;
    smelt_strbuf_init(&ta);
    smelt_strbuf_init(&tb);
    bool ok = sch_default_knobs(g_ctx, te, test_hw(16), a, &sa) == SMELT_OK &&
              sch_default_knobs(g_ctx, te, test_hw(16), b, &sb) == SMELT_OK;
    sch_schedule_print(&sa, &ta);
    sch_schedule_print(&sb, &tb);
    ok = ok && strcmp(smelt_strbuf_cstr(&ta), smelt_strbuf_cstr(&tb)) == 0;
    smelt_strbuf_fini(&ta);
    smelt_strbuf_fini(&tb);
    sch_schedule_fini(&sa);
    sch_schedule_fini(&sb);
    return ok;
}

/* Softmax has two row reductions (max, sum of exp): both factored by
 * default; order 1 keeps the scalar accumulation; order 3 + unroll 3 asks
 * for two vectors per step. */
static void test_softmax_schedules(void)
{
    smelt_model *m = case_model(&k_cases[0]);
    gr_graph *g = m->graph;
    te_graph *te = NULL;
    te_group_io *io = calloc(1, sizeof *io);
    smelt_status s = te_from_group(g_ctx, (const gr_node *const *)g->nodes.items, g->nodes.len,
                                   escapes, NULL, &te, io);
    CHECK(s == SMELT_OK);
    if (s == SMELT_OK) {
        sch_schedule d;
        sch_schedule_init(&d);
        CHECK(sch_default(g_ctx, te, test_hw(16), &d) == SMELT_OK);
        CHECK(count_factored(&d) == 2);
        /* each exponential computed once: exp(x - max) is not inlined into
         * both the sum and the output */
        for (int i = 0; i < d.n; i++)
            CHECK(!(d.steps[i].kind == SCH_COMPUTE_INLINE && strstr(d.steps[i].stage, "y_exp")));
        bool has_exp_stage = false;
        for (int i = 0; i < te->tensors.len; i++)
            has_exp_stage |= strstr(((const te_tensor *)te->tensors.items[i])->buf->name, "y_exp") != NULL;
        CHECK(has_exp_stage);
        /* 16 partials per row combined in a tree: 16 -> 8 -> 4 -> 2 */
        CHECK(count_steps(&d, SCH_RFACTOR) == 2 * 4);
        sch_schedule_fini(&d);

        sch_schedule_init(&d); /* without vectors there is nothing to factor */
        CHECK(sch_default(g_ctx, te, test_hw(1), &d) == SMELT_OK);
        CHECK(count_steps(&d, SCH_RFACTOR) == 0);
        sch_schedule_fini(&d);

        sch_knob_space sp;
        CHECK(sch_default_space(g_ctx, te, test_hw(16), &sp) == SMELT_OK);
        CHECK(knob_offers(&sp, SCH_KNOB_ORDER, 1) && knob_offers(&sp, SCH_KNOB_ORDER, 3));
        CHECK(knob_offers(&sp, SCH_KNOB_UNROLL, 3));

        sch_knobs zero = {{0}}, off = {{0}}, two = {{0}};
        CHECK(same_schedule(te, NULL, &zero)); /* all-zero knobs: the default itself */
        off.v[SCH_KNOB_ORDER] = 1;
        two.v[SCH_KNOB_ORDER] = 3;
        two.v[SCH_KNOB_UNROLL] = 3;
        sch_schedule_init(&d);
        CHECK(sch_default_knobs(g_ctx, te, test_hw(16), &off, &d) == SMELT_OK);
        CHECK(count_factored(&d) == 1); /* the main stage's only */
        sch_schedule_fini(&d);
        sch_schedule_init(&d);
        CHECK(sch_default_knobs(g_ctx, te, test_hw(16), &two, &d) == SMELT_OK);
        bool wide = false;
        for (int i = 0; i < d.n; i++)
            wide |= d.steps[i].kind == SCH_RFACTOR && d.steps[i].factor == 32;
        CHECK(wide);
        sch_state *st = NULL;
        CHECK(sch_state_build(g_ctx, te, &d, &st) == SMELT_OK);
        sch_state_free(st);
        sch_schedule_fini(&d);
    }
    te_graph_free(te);
    free(io);
    smelt_model_free(m);
    smelt_ctx_clear(g_ctx);
}

/* The step's text form round-trips. */
static void test_rfactor_text(void)
{
    sch_schedule s;
    sch_schedule_init(&s);
    CHECK(sch_schedule_parse(g_ctx, "rfactor y_sum r0 16\n", &s) == SMELT_OK);
    CHECK(s.n == 1 && s.steps[0].kind == SCH_RFACTOR && s.steps[0].factor == 16);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    sch_schedule_print(&s, &sb);
    CHECK(strcmp(smelt_strbuf_cstr(&sb), "rfactor y_sum r0 16\n") == 0);
    smelt_strbuf_fini(&sb);
    sch_schedule_fini(&s);
    sch_schedule_init(&s);
    CHECK(sch_schedule_parse(g_ctx, "rfactor y_sum r0 0\n", &s) == SMELT_ERR_ARG);
    smelt_ctx_clear(g_ctx);
    sch_schedule_fini(&s);
}

int main(void)
{
    g_ctx = smelt_ctx_new();
    test_rfactor_text();
    test_softmax_schedules();
    const cg_target *host = cg_target_host();
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_cases); i++) {
        check_case(&k_cases[i], "generic");
        if (host->isa >= CG_ISA_AVX2) check_case(&k_cases[i], "avx2");
        if (host->isa >= CG_ISA_AVX512) check_case(&k_cases[i], "avx512");
    }
    smelt_ctx_free(g_ctx);
    TEST_MAIN_END();
}
