/* Winograd F(m x m, 3 x 3) convolutions (sched/winograd.c, the algo knob):
 * compiled through the whole pipeline (alter_layout's blocked conv, fused
 * epilogues, the weight transform at compile time, the program's weight
 * blob) and compared with the REFERENCE kernels, never with themselves.
 *
 * Tolerance: Winograd's float32 error grows with the tile (B^T scales the
 * inputs by up to 5 for F(4x4), G divides the weights by up to 24, A^T
 * multiplies by up to 8), so each output is compared against
 *     |got - want| <= g(m) K u sum over taps of |x| |w|  (+ 1e-6 |want|)
 * (K = 9 Ci products, u = 2^-24: the worst-case bound of a float32 sum of K
 * products, g = 1 direct, 2 F(2x2), 4 F(4x4)), relative to the magnitude
 * the sum is made of, not to the result: a near-cancelling sum keeps the
 * absolute error of its terms.
 *
 * Also: the knob offers direct, F(2x2) and F(4x4) only where they apply;
 * all-zero knobs are the direct schedule; a `winograd STAGE M` schedule
 * text and a records line selecting it round-trip (parse/print, record
 * write/parse, and a records file applied by smelt_model_compile). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/smelt_internal.h"
#include "codegen/target.h"
#include "lower/program.h"
#include "passes/pass_util.h"
#include "passes/passes.h"
#include "sched/sched.h"
#include "te/te.h"
#include "tune/tune.h"
#include "test_util.h"
#include "test_hw.h"

static smelt_ctx *g_ctx;

typedef struct wcase {
    const char *name;
    int64_t n, ci, co, h, w, pad;
    bool bias, relu, residual;
} wcase;

static const wcase k_cases[] = {
    /* tails in H and W for every m (7 and 5 are no multiple of 2, 4, 6) */
    {"3->5 7x5 pad 1 (channels below a vector)", 1, 3, 5, 7, 5, 1, false, false, false},
    {"16->16 8x8 pad 1 bias relu", 1, 16, 16, 8, 8, 1, true, true, false},
    {"24->40 9x11 pad 0 bias", 1, 24, 40, 9, 11, 0, true, false, false},
    {"batch 2, 8->12 6x7 pad 1 bias relu residual", 2, 8, 12, 6, 7, 1, true, true, true},
    {"20->16 13x13 pad 1 residual", 1, 20, 16, 13, 13, 1, false, false, true},
};

/* The bound of a float32 sum of K products, K u sum |x| |w| (u = 2^-24),
 * times the transforms' growth: 1 direct, 2 for F(2x2), 4 for F(4x4).
 * Measured worst error / bound over these cases (SMELT_DEBUG=1 prints it):
 * up to 0.15 direct, 0.03 F(2x2), 0.33 F(4x4); a wrong transform
 * coefficient is off by O(|terms|), far above it. */
static double tol_of(int m, int64_t k)
{
    return (m == 2 ? 2.0 : m == 4 ? 4.0 : 1.0) * (double)k * ldexp(1.0, -24);
}

static uint32_t g_seed = 1234u;
static float rnd(void)
{
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)(g_seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

static float *rnd_data(int64_t n)
{
    float *d = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) d[i] = rnd();
    return d;
}

static gr_value *graph_input(gr_graph *g, const char *name, const int64_t *dims)
{
    gr_value *v = gr_value_new(g, name);
    v->dtype = SMELT_DT_FLOAT32;
    v->rank = 4;
    memcpy(v->dims, dims, sizeof(int64_t) * 4);
    v->is_input = true;
    smelt_ptrvec_push(&g->inputs, v);
    return v;
}

typedef struct wmodel {
    smelt_model *m;
    float *w, *b; /* the constants' values (for the tolerance) */
    int64_t xdims[4], ydims[4];
} wmodel;

static void case_model(const wcase *c, wmodel *wm)
{
    gr_graph *g = gr_graph_new();
    g->opset = 18;
    int64_t oh = c->h + 2 * c->pad - 2, ow = c->w + 2 * c->pad - 2;
    int64_t xd[4] = {c->n, c->ci, c->h, c->w}, yd[4] = {c->n, c->co, oh, ow};
    memcpy(wm->xdims, xd, sizeof xd);
    memcpy(wm->ydims, yd, sizeof yd);
    gr_value *x = graph_input(g, "x", xd);
    gr_value *res = c->residual ? graph_input(g, "r", yd) : NULL;
    int64_t wd[4] = {c->co, c->ci, 3, 3};
    wm->w = rnd_data(c->co * c->ci * 9);
    wm->b = rnd_data(c->co);
    gr_value *in[3] = {x, pu_const_f32(g_ctx, g, "w", 4, wd, wm->w), NULL};
    if (c->bias) in[2] = pu_const_f32(g_ctx, g, "b", 1, &c->co, wm->b);
    gr_node *conv = pu_node_new(g_ctx, g, "conv", OP_CONV, in, c->bias ? 3 : 2, 1);
    CHECK(conv != NULL);
    if (!conv) return;
    int64_t p4[4] = {c->pad, c->pad, c->pad, c->pad}, k2[2] = {3, 3};
    CHECK(pu_attr_ints(g_ctx, g, conv, "pads", p4, 4) == SMELT_OK);
    CHECK(pu_attr_ints(g_ctx, g, conv, "kernel_shape", k2, 2) == SMELT_OK);
    CHECK(pu_node_import(g_ctx, g, conv) == SMELT_OK);
    gr_value *y = conv->outputs[0];
    if (c->relu) {
        gr_node *r = pu_node_new(g_ctx, g, "relu", OP_RELU, &y, 1, 1);
        CHECK(r && pu_node_import(g_ctx, g, r) == SMELT_OK);
        y = r->outputs[0];
    }
    if (res) {
        gr_value *ab[2] = {y, res};
        gr_node *a = pu_node_new(g_ctx, g, "add", OP_ADD, ab, 2, 1);
        CHECK(a && pu_node_import(g_ctx, g, a) == SMELT_OK);
        y = a->outputs[0];
    }
    y->is_output = true;
    smelt_ptrvec_push(&g->outputs, y);
    wm->m = smelt_calloc(1, sizeof *wm->m);
    wm->m->graph = g;
    smelt_options_init(&wm->m->options);
    CHECK(pass_infer_shapes(g_ctx, g) == SMELT_OK && gr_graph_verify(g_ctx, g) == SMELT_OK);
}

static void wmodel_free(wmodel *wm)
{
    smelt_model_free(wm->m);
    free(wm->w);
    free(wm->b);
}

/* sum over the taps of output (n, co, oh, ow) of |x| |w| */
static double magnitude(const wcase *c, const wmodel *wm, const float *x, int64_t n, int64_t co,
                        int64_t oh, int64_t ow)
{
    double s = 0;
    for (int64_t ci = 0; ci < c->ci; ci++)
        for (int kh = 0; kh < 3; kh++)
            for (int kw = 0; kw < 3; kw++) {
                int64_t ih = oh + kh - c->pad, iw = ow + kw - c->pad;
                if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w) continue;
                s += fabs(x[((n * c->ci + ci) * c->h + ih) * c->w + iw]) *
                     fabs(wm->w[((co * c->ci + ci) * 3 + kh) * 3 + kw]);
            }
    return s;
}

/* Compile (SMELT_WINOGRAD=m selects the algorithm: 0 the direct conv) or
 * with records, run, compare with the reference kernels. */
static void check_case(const wcase *c, int m, const char *records)
{
    wmodel wm = {0};
    case_model(c, &wm);
    if (!wm.m) return;
    int64_t nx = wm.xdims[0] * wm.xdims[1] * wm.xdims[2] * wm.xdims[3];
    int64_t ny = wm.ydims[0] * wm.ydims[1] * wm.ydims[2] * wm.ydims[3];
    smelt_tensor in[2] = {{.dtype = SMELT_DT_FLOAT32, .rank = 4}, {.dtype = SMELT_DT_FLOAT32, .rank = 4}};
    memcpy(in[0].dims, wm.xdims, sizeof wm.xdims);
    memcpy(in[1].dims, wm.ydims, sizeof wm.ydims);
    in[0].data = rnd_data(nx);
    in[1].data = rnd_data(ny);
    int n_in = c->residual ? 2 : 1;
    smelt_tensor want = {0}, got = {0};
    smelt_status s = smelt_model_run_reference(g_ctx, wm.m, in, n_in, &want, 1);
    smelt_options o;
    smelt_options_init(&o);
    o.records = records;
    char mtext[8];
    snprintf(mtext, sizeof mtext, "%d", m);
    setenv("SMELT_WINOGRAD", mtext, 1);
    if (s == SMELT_OK) s = smelt_model_compile(g_ctx, wm.m, &o);
    unsetenv("SMELT_WINOGRAD");
    if (s == SMELT_OK && records) CHECK(smelt_model_records_use(wm.m)->scheduled >= 1);
    if (s == SMELT_OK) s = smelt_model_run(g_ctx, wm.m, in, n_in, &got, 1);
    if (s != SMELT_OK) fprintf(stderr, "%s (m %d): %s\n", c->name, m, smelt_ctx_message(g_ctx));
    CHECK(s == SMELT_OK);
    CHECK(s != SMELT_OK || smelt_tensor_numel(&got) == ny);
    const float *x = in[0].data;
    double worst = 0;
    for (int64_t i = 0; s == SMELT_OK && i < ny; i++) {
        int64_t ow = i % wm.ydims[3], oh = i / wm.ydims[3] % wm.ydims[2];
        int64_t co = i / (wm.ydims[3] * wm.ydims[2]) % c->co, n = i / (wm.ydims[3] * wm.ydims[2] * c->co);
        double w = ((const float *)want.data)[i], v = ((const float *)got.data)[i];
        double mag = magnitude(c, &wm, x, n, co, oh, ow);
        double err = fabs(v - w), bound = tol_of(m, 9 * c->ci) * mag + 1e-6 * fabs(w) + 1e-30;
        if (err / bound > worst) worst = err / bound;
        if (!(err <= bound)) {
            fprintf(stderr, "%s (m %d): element %lld: got %.9g want %.9g (magnitude %.3g)\n",
                    c->name, m, (long long)i, v, w, mag);
            CHECK(false);
            break;
        }
    }
    if (smelt_debug_level() >= 1) fprintf(stderr, "%s (m %d): worst error/bound %.3f\n", c->name, m, worst);
    smelt_tensor_release(&want);
    smelt_tensor_release(&got);
    free(in[0].data);
    free(in[1].data);
    wmodel_free(&wm);
    smelt_ctx_clear(g_ctx);
}

/* ---- knobs and text ---- */

typedef struct unit_grab {
    const char *target_key;
    const smelt_hw *hw;
    FILE *records; /* a winograd record per unit it applies to */
    int written, spaces_with_algo;
} unit_grab;

static void grab_unit(void *user, int unit, const te_graph *te)
{
    (void)unit;
    unit_grab *u = user;
    if (!sch_winograd_candidate(te)) return;
    sch_knob_space sp;
    CHECK(sch_default_space(g_ctx, te, u->hw, &sp) == SMELT_OK);
    u->spaces_with_algo += sp.n_values[SCH_KNOB_ALGO] == 3;
    tune_candidate cand;
    sch_knobs k = {{0}};
    k.v[SCH_KNOB_ALGO] = 4;
    CHECK(tune_candidate_init(g_ctx, &cand, te, u->hw, &k) == SMELT_OK);
    CHECK(cand.schedule && strncmp(cand.schedule, "winograd ", 9) == 0);
    tune_record r = {.status = TUNE_OK, .ms = 1.0, .verified = true};
    sch_workload_key(te, u->target_key, r.task);
    r.target = (char *)u->target_key;
    r.op = "conv";
    r.schedule = cand.schedule;
    memcpy(r.knobs, k.v, sizeof r.knobs);
    if (cand.schedule) {
        /* the line parses back to the same knobs and schedule */
        smelt_strbuf sb;
        smelt_strbuf_init(&sb);
        CHECK(tune_record_write(g_ctx, &sb, &r) == SMELT_OK);
        tune_record back = {0};
        smelt_status ps = tune_record_parse(g_ctx, smelt_strbuf_cstr(&sb), sb.len - 1, &back) /* without the newline */;
        if (ps != SMELT_OK) fprintf(stderr, "%s\n%s\n", smelt_ctx_message(g_ctx), smelt_strbuf_cstr(&sb));
        CHECK(ps == SMELT_OK);
        CHECK(back.knobs[SCH_KNOB_ALGO] == 4 && back.schedule &&
              strcmp(back.schedule, cand.schedule) == 0);
        tune_record_fini(&back);
        smelt_strbuf_fini(&sb);
        CHECK(tune_record_append(g_ctx, u->records, &r) == SMELT_OK);
        u->written++;
    }
    tune_candidate_fini(&cand);
}

/* The tuner's path: the knob in the conv task's space, a record made from
 * algo 4 written to a file, and compiling with that file applies it. */
static void test_records_round_trip(void)
{
    const wcase *c = &k_cases[3];
    wmodel wm = {0};
    case_model(c, &wm);
    if (!wm.m) return;
    const cg_target *host = cg_target_host();
    char key[512];
    CHECK(tune_target_key(g_ctx, host, key, sizeof key) == SMELT_OK);
    char path[] = "/tmp/smelt_wino_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unit_grab u = {.target_key = key, .hw = &host->hw,
                   .records = fd >= 0 ? fdopen(fd, "w") : NULL};
    CHECK(u.records != NULL);
    lowered_program *lp = NULL;
    lower_options lo = {.hw = u.hw, .on_unit = grab_unit, .on_unit_user = &u};
    CHECK(smelt_model_optimize(g_ctx, wm.m, NULL) == SMELT_OK);
    if (u.records) CHECK(lower_graph(g_ctx, wm.m->graph, &lo, &lp) == SMELT_OK);
    lowered_program_free(lp);
    if (u.records) fclose(u.records);
    CHECK(u.written == 1 && u.spaces_with_algo == 1);
    wmodel_free(&wm);
    smelt_ctx_clear(g_ctx);
    check_case(c, 0, path); /* SMELT_WINOGRAD=0: only the record selects it */
    unlink(path);
}

static void test_schedule_text(void)
{
    const char *text = "winograd n0_conv 4\nsplit y i2 4\n";
    sch_schedule s;
    sch_schedule_init(&s);
    CHECK(sch_schedule_parse(g_ctx, text, &s) == SMELT_OK);
    CHECK(s.n == 2 && s.steps[0].kind == SCH_WINOGRAD && s.steps[0].factor == 4);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    sch_schedule_print(&s, &sb);
    CHECK(strcmp(smelt_strbuf_cstr(&sb), text) == 0);
    smelt_strbuf_fini(&sb);
    sch_schedule_fini(&s);
    sch_schedule_init(&s);
    CHECK(sch_schedule_parse(g_ctx, "winograd n0_conv\n", &s) == SMELT_ERR_ARG);
    smelt_ctx_clear(g_ctx);
    sch_schedule_fini(&s);
}

/* A te graph without a 3x3 conv: no algo knob, and asking for it fails. */
static void test_knob_refused(void)
{
    te_graph *te = te_graph_new(g_ctx);
    int64_t d[2] = {4, 32};
    te_tensor *x = te_placeholder(te, "x", SMELT_DT_FLOAT32, 2, d);
    CHECK(x && !sch_winograd_candidate(te));
    sch_knobs k = {{0}};
    k.v[SCH_KNOB_ALGO] = 4;
    sch_schedule s;
    sch_schedule_init(&s);
    CHECK(sch_default_knobs(g_ctx, te, test_hw(8), &k, &s) == SMELT_ERR_ARG);
    smelt_ctx_clear(g_ctx);
    sch_schedule_fini(&s);
    /* a winograd step on a stage that is no conv */
    CHECK(sch_schedule_parse(g_ctx, "winograd x 2\n", &s) == SMELT_OK);
    sch_state *st = NULL;
    CHECK(sch_state_build(g_ctx, te, &s, &st) == SMELT_ERR_ARG);
    smelt_ctx_clear(g_ctx);
    sch_schedule_fini(&s);
    te_graph_free(te);
}

int main(void)
{
    g_ctx = smelt_ctx_new();
    test_schedule_text();
    test_knob_refused();
    check_case(&k_cases[3], 0, NULL); /* the direct conv, the tolerance's control */
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_cases); i++) {
        check_case(&k_cases[i], 2, NULL);
        check_case(&k_cases[i], 4, NULL);
    }
    test_records_round_trip();
    smelt_ctx_free(g_ctx);
    TEST_MAIN_END();
}
