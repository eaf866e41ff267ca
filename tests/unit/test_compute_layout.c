/* The blocked layout's internal ops (ops/layout.c) against independent
 * references:
 *   LayoutTransform: every direction (NCHW <-> NCHW[b]c, b1 <-> b2, 1 and 2
 *     spatial dims): eval against the index definition, then the te form
 *     (interpreted) against eval;
 *   ConvNCHWc: the plain Conv's reference kernel on the same data (inputs
 *     and weights packed here, by this file's own loops) against ConvNCHWc's
 *     eval, its te form, its loop nests under the default schedule (8 and 16
 *     lanes) and random legal schedules (tir interpreter), and the generated
 *     C of a compiled graph NCHW -> blocks -> ConvNCHWc + Relu -> NCHW.
 * Shapes: channels not divisible by 16, blocks of 1 (plain input) to 16,
 * stride 2, asymmetric padding, dilation, depthwise, 1x1, a width with an
 * uneven register tail, batch 2. */
#include <stdlib.h>

#include "api/smelt_internal.h"
#include "codegen/target.h"
#include "exec/exec.h"
#include "lower/lower.h"
#include "ops/layout.h"
#include "passes/pass_util.h"
#include "test_util.h"
#include "tir/interp.h"
#include "test_hw.h"

#define RANDOM_SCHEDULES 6

extern const op_def op_def_LAYOUT_TRANSFORM, op_def_CONV_NCHWC, op_def_CONV, op_def_RELU,
    op_def_ADD;
const op_def *const test_link_anchor[] = {&op_def_LAYOUT_TRANSFORM, &op_def_CONV_NCHWC,
                                          &op_def_CONV, &op_def_RELU, &op_def_ADD};

/* A failing case shows the schedule it ran. */
static void print_schedule(const char *what, const sch_schedule *s)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    sch_schedule_print(s, &sb);
    fprintf(stderr, "%s: schedule:\n%s", what, smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
}

static smelt_ctx *ctx;

static float rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / (float)(1u << 23) - 1.0f;
}

static smelt_tensor tensor_new(int rank, const int64_t *dims)
{
    smelt_tensor t = {.dtype = SMELT_DT_FLOAT32, .rank = rank};
    memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
    int64_t n = smelt_tensor_numel(&t);
    t.data = calloc((size_t)(n ? n : 1), sizeof(float));
    return t;
}

static void fill(smelt_tensor *t, uint32_t seed)
{
    float *d = t->data;
    for (int64_t i = 0; i < smelt_tensor_numel(t); i++) d[i] = rnd(&seed);
}

static bool close_all(const char *what, const float *got, const float *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (fabs((double)got[i] - want[i]) <= 1e-4 * (1.0 + fabs((double)want[i]))) continue;
        fprintf(stderr, "%s: element %lld: got %.9g, want %.9g\n", what, (long long)i, got[i],
                want[i]);
        return false;
    }
    return true;
}

/* Element (n, c, spatial position p) of a tensor with c_total channels and
 * `plane` spatial elements in layout `block` (0: plain). */
static int64_t layout_offset(int64_t block, int64_t c_total, int64_t plane, int64_t n, int64_t c,
                             int64_t p)
{
    if (!block) return (n * c_total + c) * plane + p;
    return ((n * (c_total / block) + c / block) * plane + p) * block + c % block;
}

/* x (plain [N, C, spatial...]) re-laid out into `block` by the loops above. */
static smelt_tensor to_layout(const smelt_tensor *x, int64_t block)
{
    int64_t dims[SMELT_MAX_RANK], c = x->dims[1], plane = 1, rank = x->rank;
    for (int d = 2; d < x->rank; d++) plane *= x->dims[d];
    memcpy(dims, x->dims, sizeof dims);
    if (block) {
        dims[1] = c / block;
        dims[rank++] = block;
    }
    smelt_tensor t = tensor_new((int)rank, dims);
    for (int64_t n = 0; n < x->dims[0]; n++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t p = 0; p < plane; p++)
                ((float *)t.data)[layout_offset(block, c, plane, n, k, p)] =
                    ((const float *)x->data)[layout_offset(0, c, plane, n, k, p)];
    return t;
}

/* ---- one node over given inputs: graph, reference, te ---- */

typedef struct node_fix {
    gr_graph *g;
    gr_node *node;
} node_fix;

static void fix_init(node_fix *f, op_kind op, int n_in)
{
    f->g = gr_graph_new();
    f->g->opset = 19;
    f->node = pu_node_new(ctx, f->g, "n0", op, NULL, 0, 1);
    f->node->n_inputs = n_in;
    f->node->inputs = smelt_arena_alloc(&f->g->arena, sizeof(gr_value *) * (size_t)n_in);
    for (int i = 0; i < n_in; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        f->node->inputs[i] = gr_value_new(f->g, name);
    }
}

static void transform_case(const int64_t *plain_dims, int rank, int64_t src, int64_t dst)
{
    char what[96];
    snprintf(what, sizeof what, "LayoutTransform %lld -> %lld (rank %d)", (long long)src,
             (long long)dst, rank);
    smelt_tensor plain = tensor_new(rank, plain_dims);
    fill(&plain, 7);
    smelt_tensor x = to_layout(&plain, src), want = to_layout(&plain, dst);
    node_fix f;
    fix_init(&f, OP_LAYOUT_TRANSFORM, 1);
    pu_attr_int(ctx, f.g, f.node, "src_block", src);
    pu_attr_int(ctx, f.g, f.node, "dst_block", dst);
    CHECK(pu_node_import(ctx, f.g, f.node) == SMELT_OK);
    const smelt_tensor *in[1] = {&x};
    smelt_tensor ref = {0}, te = {0};
    CHECK(exec_node(ctx, f.node, in, &ref) == SMELT_OK);
    CHECK(exec_node_te(ctx, f.node, in, &te) == SMELT_OK);
    int64_t n = smelt_tensor_numel(&want);
    CHECK(ref.rank == want.rank && smelt_tensor_numel(&ref) == n);
    if (ref.data) CHECK(close_all(what, ref.data, want.data, n));
    if (te.data) CHECK(close_all(what, te.data, want.data, n));
    smelt_free(ref.data);
    smelt_free(te.data);
    free(plain.data);
    free(x.data);
    free(want.data);
    gr_graph_free(f.g);
}

static void test_transforms(void)
{
    int64_t d4[4] = {2, 24, 3, 5}, d3[3] = {1, 32, 7};
    transform_case(d4, 4, 0, 8);
    transform_case(d4, 4, 8, 0);
    transform_case(d4, 4, 8, 4);
    transform_case(d4, 4, 4, 8);
    transform_case(d4, 4, 0, 1);
    transform_case(d4, 4, 1, 0);
    transform_case(d3, 3, 0, 16);
    transform_case(d3, 3, 16, 2);
    /* channels not divisible by the block: a shape error naming the node */
    node_fix f;
    fix_init(&f, OP_LAYOUT_TRANSFORM, 1);
    pu_attr_int(ctx, f.g, f.node, "src_block", 0);
    pu_attr_int(ctx, f.g, f.node, "dst_block", 16);
    CHECK(pu_node_import(ctx, f.g, f.node) == SMELT_OK);
    smelt_tensor x = tensor_new(4, d4), out = {0};
    const smelt_tensor *in[1] = {&x};
    CHECK(exec_node(ctx, f.node, in, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "node 'n0' (LayoutTransform)");
    smelt_ctx_clear(ctx);
    free(x.data);
    gr_graph_free(f.g);
}

/* ---- ConvNCHWc ---- */

typedef struct conv_case {
    int64_t n, ci, h, w, co, k[2], stride, pads[4], dilation;
    bool depthwise, bias;
    int64_t ib, ob;
} conv_case;

static const conv_case k_convs[] = {
    /* stem: plain 3-channel input read as blocks of 1 */
    {1, 3, 15, 17, 16, {3, 3}, 2, {1, 1, 1, 1}, 1, false, true, 1, 16},
    /* 12 -> 24 channels in blocks of 4 and 8; width 17: register tail */
    {1, 12, 9, 17, 24, {3, 3}, 1, {1, 1, 1, 1}, 1, false, true, 4, 8},
    /* a 3x3 plane: four output blocks per register tile */
    {1, 16, 3, 3, 64, {3, 3}, 1, {1, 1, 1, 1}, 1, false, true, 16, 16},
    /* 1x1, no bias, 7x7 plane: two output blocks per register tile */
    {2, 16, 7, 7, 32, {1, 1}, 1, {0, 0, 0, 0}, 1, false, false, 16, 16},
    /* stride 2 with asymmetric padding, 12 output channels in blocks of 4 */
    {1, 8, 10, 20, 12, {3, 2}, 2, {0, 1, 1, 0}, 1, false, true, 8, 4},
    /* 5 -> 6 channels: plain input, blocks of 2 */
    {1, 5, 6, 6, 6, {3, 3}, 1, {1, 1, 1, 1}, 1, false, true, 1, 2},
    /* depthwise, stride 2, odd plane */
    {1, 24, 11, 11, 24, {3, 3}, 2, {1, 1, 1, 1}, 1, true, true, 8, 8},
    /* depthwise 3x3 dilated by 2 */
    {1, 16, 9, 12, 16, {3, 3}, 1, {2, 2, 2, 2}, 2, true, false, 16, 16},
    /* a 7x7 stride-2 stem on plain input, 4 output blocks of 8: AVX2's 2 x 4 tile */
    {1, 3, 12, 13, 32, {7, 7}, 2, {3, 3, 3, 3}, 1, false, true, 1, 8},
    /* 1x1 on blocks of 8, 14 rows, width 17: AVX2's pixels-outer nest, column tail */
    {1, 32, 14, 17, 48, {1, 1}, 1, {0, 0, 0, 0}, 1, false, true, 8, 8},
};

typedef struct conv_data {
    smelt_tensor x, w, b;          /* plain */
    smelt_tensor xb, wb, bb;       /* blocked */
    smelt_tensor want;             /* plain Conv reference */
    smelt_tensor want_blocked;     /* the same in output blocks */
} conv_data;

static void set_window_attrs(gr_graph *g, gr_node *n, const conv_case *c)
{
    int64_t s[2] = {c->stride, c->stride}, d[2] = {c->dilation, c->dilation};
    pu_attr_ints(ctx, g, n, "strides", s, 2);
    pu_attr_ints(ctx, g, n, "pads", c->pads, 4);
    pu_attr_ints(ctx, g, n, "dilations", d, 2);
    pu_attr_int(ctx, g, n, "group", c->depthwise ? c->ci : 1);
}

/* W [Co, Cw, KH, KW] as [Co/ob, Cw/wib, KH, KW, wib, ob]. */
static smelt_tensor pack_weights(const smelt_tensor *w, int64_t wib, int64_t ob)
{
    int64_t co = w->dims[0], cw = w->dims[1], kk = w->dims[2] * w->dims[3];
    int64_t dims[6] = {co / ob, cw / wib, w->dims[2], w->dims[3], wib, ob};
    smelt_tensor t = tensor_new(6, dims);
    for (int64_t m = 0; m < co; m++)
        for (int64_t c = 0; c < cw; c++)
            for (int64_t k = 0; k < kk; k++) {
                int64_t at = (((m / ob) * (cw / wib) + c / wib) * kk + k) * wib + c % wib;
                ((float *)t.data)[at * ob + m % ob] =
                    ((const float *)w->data)[(m * cw + c) * kk + k];
            }
    return t;
}

static void conv_data_make(const conv_case *c, conv_data *d)
{
    memset(d, 0, sizeof *d);
    int64_t xd[4] = {c->n, c->ci, c->h, c->w};
    int64_t wd[4] = {c->co, c->depthwise ? 1 : c->ci, c->k[0], c->k[1]}, bd[1] = {c->co};
    d->x = tensor_new(4, xd);
    d->w = tensor_new(4, wd);
    d->b = tensor_new(1, bd);
    fill(&d->x, 11);
    fill(&d->w, 23);
    fill(&d->b, 31);
    d->xb = c->ib > 1 ? to_layout(&d->x, c->ib) : d->x;
    d->wb = pack_weights(&d->w, c->depthwise ? 1 : c->ib, c->ob);
    int64_t bbd[2] = {c->co / c->ob, c->ob};
    d->bb = tensor_new(2, bbd);
    memcpy(d->bb.data, d->b.data, sizeof(float) * (size_t)c->co);
    /* the plain Conv's reference kernel */
    node_fix f;
    fix_init(&f, OP_CONV, c->bias ? 3 : 2);
    set_window_attrs(f.g, f.node, c);
    CHECK(pu_node_import(ctx, f.g, f.node) == SMELT_OK);
    const smelt_tensor *in[3] = {&d->x, &d->w, &d->b};
    CHECK(exec_node(ctx, f.node, in, &d->want) == SMELT_OK);
    d->want_blocked = to_layout(&d->want, c->ob);
    gr_graph_free(f.g);
}

static void conv_data_free(conv_data *d)
{
    if (d->xb.data != d->x.data) free(d->xb.data);
    free(d->x.data);
    free(d->w.data);
    free(d->b.data);
    free(d->wb.data);
    free(d->bb.data);
    smelt_free(d->want.data);
    free(d->want_blocked.data);
}

static void nchwc_node(const conv_case *c, node_fix *f)
{
    fix_init(f, OP_CONV_NCHWC, c->bias ? 3 : 2);
    set_window_attrs(f->g, f->node, c);
    CHECK(pu_node_import(ctx, f->g, f->node) == SMELT_OK);
}

/* Lower under schedule s and run with the tir interpreter. */
static bool run_lowered(te_graph *te, const sch_schedule *s, const smelt_tensor *const *in,
                        int n_in, const conv_data *d, const char *what)
{
    sch_state *st = NULL;
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder b;
    ir_builder_init(&b, &ar);
    ir_func *f = NULL;
    tir_interp it;
    tir_interp_init(&it, ctx);
    int64_t n_out = smelt_tensor_numel(&d->want_blocked);
    float *out = calloc((size_t)n_out, sizeof *out);
    bool ok = sch_state_build(ctx, te, s, &st) == SMELT_OK &&
              lower_func(ctx, st, &b, "f", &f) == SMELT_OK;
    for (int p = 0, k = 0; ok && p < f->n_params; p++) {
        ir_buffer *buf = f->params[p];
        const te_const *c = te_const_of(st->te, buf); /* Winograd's weights (algo knob) */
        if (c) {
            ok = tir_interp_bind_buffer(&it, buf, c->data, c->numel) == SMELT_OK;
        } else if (buf->kind == IR_BUF_OUTPUT) {
            ok = tir_interp_bind_buffer(&it, buf, out, n_out) == SMELT_OK;
        } else {
            ok = k < n_in && tir_interp_bind_buffer(&it, buf, in[k]->data,
                                                    smelt_tensor_numel(in[k])) == SMELT_OK;
            k++;
        }
    }
    ok = ok && tir_interp_run(&it, f->body) == SMELT_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(ctx));
    ok = ok && close_all(what, out, d->want_blocked.data, n_out);
    if (!ok) print_schedule(what, s);
    free(out);
    tir_interp_fini(&it);
    smelt_arena_fini(&ar);
    sch_state_free(st);
    smelt_ctx_clear(ctx);
    return ok;
}

/* The schedules already run on one case's te graph, as text: many knob
 * values and tile combinations give the schedule another one gave (the
 * default's own choice, a tile the shape clamps), which would lower to the
 * same loops and compute the same outputs again. */
typedef struct seen_schedules {
    char **text;
    int n, cap, repeats;
} seen_schedules;

static bool seen_before(seen_schedules *seen, const sch_schedule *s)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    sch_schedule_print(s, &sb);
    const char *t = smelt_strbuf_cstr(&sb);
    bool found = false;
    for (int i = 0; i < seen->n && !found; i++) found = strcmp(seen->text[i], t) == 0;
    if (found) {
        seen->repeats++;
    } else {
        if (seen->n == seen->cap) {
            seen->cap = seen->cap ? 2 * seen->cap : 32;
            seen->text = realloc(seen->text, sizeof *seen->text * (size_t)seen->cap);
        }
        size_t len = strlen(t) + 1;
        seen->text[seen->n] = memcpy(malloc(len), t, len);
        seen->n++;
    }
    smelt_strbuf_fini(&sb);
    return found;
}

static void seen_free(seen_schedules *seen)
{
    for (int i = 0; i < seen->n; i++) free(seen->text[i]);
    free(seen->text);
}

/* run_lowered for a schedule not run on this case before. */
static bool run_new(seen_schedules *seen, te_graph *te, const sch_schedule *s,
                    const smelt_tensor *const *in, int n_in, const conv_data *d, const char *what)
{
    return seen_before(seen, s) || run_lowered(te, s, in, n_in, d, what);
}

/* Reduction batches (tile_k) with the nests and tiles they combine with:
 * pixels outer, oh alone parallel, two channel blocks and two rows. */
static void check_nchwc_batches(te_graph *te, const sch_knob_space *sp,
                                const smelt_tensor *const *in, int n_in, const conv_data *d, int ci,
                                seen_schedules *seen)
{
    static const int64_t combos[][SCH_KNOB_COUNT_] = {
        {0, 0, 0, 5}, {0, 0, 0, 4}, {0, 2, 0, 2, 0, 2}, {4, 2, 0, 5, 0, 2}, {0, 0, 2, 5}};
    int n = sp->n_values[SCH_KNOB_TILE_K];
    for (int v = 0; te && v < n; v += n > 2 ? n - 1 : 1) /* the smallest and largest batch */
        for (size_t c = 0; c < SMELT_ARRAY_LEN(combos); c++)
            for (int lanes = 8; lanes <= 16; lanes += 8) {
                sch_knobs knobs = {{0}};
                memcpy(knobs.v, combos[c], sizeof knobs.v);
                knobs.v[SCH_KNOB_TILE_K] = sp->values[SCH_KNOB_TILE_K][v];
                sch_schedule s;
                sch_schedule_init(&s);
                char what[128];
                snprintf(what, sizeof what, "ConvNCHWc case %d, tile_k %lld, combination %zu, %d lanes",
                         ci, (long long)knobs.v[SCH_KNOB_TILE_K], c, lanes);
                smelt_status st = sch_default_knobs(ctx, te, test_hw(lanes), &knobs, &s);
                /* a tile past the register file is refused */
                bool refused = st == SMELT_ERR_ARG && strstr(smelt_ctx_message(ctx), "accumulators");
                if (st != SMELT_OK && !refused) fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(ctx));
                CHECK(st == SMELT_OK || refused);
                CHECK(st != SMELT_OK || run_new(seen, te, &s, in, n_in, d, what));
                smelt_ctx_clear(ctx);
                sch_schedule_fini(&s);
            }
}

static void check_schedules(const conv_case *c, const conv_data *d, int ci)
{
    node_fix f;
    nchwc_node(c, &f);
    const smelt_tensor *in[3] = {&d->xb, &d->wb, &d->bb};
    smelt_tensor types[3];
    const smelt_tensor *tp[3];
    for (int i = 0; i < f.node->n_inputs; i++) {
        types[i] = *in[i];
        if (i == 0) types[i].data = NULL; /* the run-time input: a placeholder */
        tp[i] = &types[i];
    }
    smelt_tensor out_type = d->want_blocked;
    out_type.data = NULL;
    te_graph *te = NULL;
    CHECK(te_from_node(ctx, f.node, tp, &out_type, &te) == SMELT_OK);
    seen_schedules seen = {0};
    /* every value of every knob of the conv rule (the tuner's space), one at a time */
    sch_knob_space sp;
    CHECK(!te || sch_default_space(ctx, te, test_hw(16), &sp) == SMELT_OK);
    for (int kn = 0; te && kn < SCH_KNOB_COUNT_; kn++)
        for (int v = 0; v < sp.n_values[kn]; v++) {
            sch_knobs knobs = {{0}};
            knobs.v[kn] = sp.values[kn][v];
            sch_schedule s;
            sch_schedule_init(&s);
            char what[128];
            snprintf(what, sizeof what, "ConvNCHWc case %d, knob %s = %lld", ci,
                     sch_knob_name((sch_knob)kn), (long long)knobs.v[kn]);
            smelt_status st = sch_default_knobs(ctx, te, test_hw(16), &knobs, &s);
            bool too_big = st == SMELT_ERR_ARG && strstr(smelt_ctx_message(ctx), "accumulators");
            if (st != SMELT_OK && !too_big) fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(ctx));
            CHECK(st == SMELT_OK || too_big); /* a tile past the register file is refused */
            CHECK(st != SMELT_OK || run_new(&seen, te, &s, in, f.node->n_inputs, d, what));
            smelt_ctx_clear(ctx);
            sch_schedule_fini(&s);
        }
    check_nchwc_batches(te, &sp, in, f.node->n_inputs, d, ci, &seen);
    for (int k = 0; te && k < 2 + RANDOM_SCHEDULES; k++) {
        sch_schedule s;
        sch_schedule_init(&s);
        char what[96];
        snprintf(what, sizeof what, "ConvNCHWc case %d, %s schedule %d", ci,
                 k < 2 ? "default" : "random", k);
        smelt_status st = k < 2 ? sch_default(ctx, te, test_hw(k == 0 ? 16 : 8), &s)
                                : sch_random(ctx, te, (uint64_t)(ci * 100 + k), 10, &s);
        CHECK(st == SMELT_OK);
        CHECK(st == SMELT_OK && run_new(&seen, te, &s, in, f.node->n_inputs, d, what));
        sch_schedule_fini(&s);
    }
    printf("ConvNCHWc case %d: %d schedules run, %d repeats skipped\n", ci, seen.n, seen.repeats);
    seen_free(&seen);
    te_graph_free(te);
    gr_graph_free(f.g);
}

static void check_reference_and_te(const conv_case *c, const conv_data *d, int ci)
{
    node_fix f;
    nchwc_node(c, &f);
    const smelt_tensor *in[3] = {&d->xb, &d->wb, &d->bb};
    smelt_tensor ref = {0}, te = {0};
    char what[64];
    snprintf(what, sizeof what, "ConvNCHWc case %d", ci);
    smelt_status s = exec_node(ctx, f.node, in, &ref);
    if (s != SMELT_OK) fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK && exec_node_te(ctx, f.node, in, &te) == SMELT_OK);
    int64_t n = smelt_tensor_numel(&d->want_blocked);
    CHECK(ref.data && smelt_tensor_numel(&ref) == n && ref.rank == 5);
    if (ref.data) CHECK(close_all(what, ref.data, d->want_blocked.data, n));
    if (te.data) CHECK(close_all(what, te.data, d->want_blocked.data, n));
    smelt_free(ref.data);
    smelt_free(te.data);
    gr_graph_free(f.g);
}

/* ---- compiled: NCHW -> blocks -> ConvNCHWc + Relu -> NCHW through C ---- */

static gr_value *const_of(gr_graph *g, const char *name, const smelt_tensor *t)
{
    return pu_const_f32(ctx, g, name, t->rank, t->dims, t->data);
}

static gr_value *layout_node(gr_graph *g, const char *name, gr_value *x, int64_t src, int64_t dst)
{
    gr_node *n = pu_node_new(ctx, g, name, OP_LAYOUT_TRANSFORM, &x, 1, 1);
    pu_attr_int(ctx, g, n, "src_block", src);
    pu_attr_int(ctx, g, n, "dst_block", dst);
    CHECK(pu_node_import(ctx, g, n) == SMELT_OK);
    return n->outputs[0];
}

static smelt_model *compiled_graph(const conv_case *c, const conv_data *d)
{
    gr_graph *g = gr_graph_new();
    g->opset = 19;
    gr_value *x = gr_value_new(g, "x");
    x->dtype = SMELT_DT_FLOAT32;
    x->rank = 4;
    memcpy(x->dims, d->x.dims, sizeof(int64_t) * 4);
    x->is_input = true;
    smelt_ptrvec_push(&g->inputs, x);
    gr_value *in[3] = {c->ib > 1 ? layout_node(g, "to_blocks", x, 0, c->ib) : x,
                       const_of(g, "w", &d->wb), c->bias ? const_of(g, "b", &d->bb) : NULL};
    gr_node *conv = pu_node_new(ctx, g, "conv", OP_CONV_NCHWC, in, c->bias ? 3 : 2, 1);
    set_window_attrs(g, conv, c);
    CHECK(pu_node_import(ctx, g, conv) == SMELT_OK);
    gr_value *y = conv->outputs[0];
    gr_node *relu = pu_node_new(ctx, g, "relu", OP_RELU, &y, 1, 1);
    CHECK(pu_node_import(ctx, g, relu) == SMELT_OK);
    gr_value *out = layout_node(g, "to_nchw", relu->outputs[0], c->ob, 0);
    out->is_output = true;
    smelt_ptrvec_push(&g->outputs, out);
    smelt_model *m = smelt_model_from_graph(g);
    CHECK(pass_infer_shapes(ctx, g) == SMELT_OK && gr_graph_verify(ctx, g) == SMELT_OK);
    return m;
}

static void check_compiled(const conv_case *c, const conv_data *d, int ci, const char *target)
{
    smelt_model *m = compiled_graph(c, d);
    smelt_options o;
    smelt_options_init(&o);
    o.target = target;
    o.num_threads = 2;
    smelt_tensor out = {0};
    smelt_status s = smelt_model_compile(ctx, m, &o);
    if (s == SMELT_OK) s = smelt_model_run(ctx, m, &d->x, 1, &out, 1);
    if (s != SMELT_OK)
        fprintf(stderr, "compiled case %d (%s): %s\n", ci, target, smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK);
    int64_t n = smelt_tensor_numel(&d->want);
    float *want = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        float v = ((const float *)d->want.data)[i];
        want[i] = v > 0 ? v : 0;
    }
    char what[64];
    snprintf(what, sizeof what, "compiled case %d (%s)", ci, target);
    CHECK(out.data && smelt_tensor_numel(&out) == n && close_all(what, out.data, want, n));
    free(want);
    smelt_free(out.data);
    smelt_free(out.name);
    smelt_model_free(m);
    smelt_ctx_clear(ctx);
}

static void test_convs(void)
{
    const cg_target *host = cg_target_host();
    for (int i = 0; i < (int)SMELT_ARRAY_LEN(k_convs); i++) {
        const conv_case *c = &k_convs[i];
        conv_data d;
        conv_data_make(c, &d);
        check_reference_and_te(c, &d, i);
        check_schedules(c, &d, i);
        check_compiled(c, &d, i, "generic");
        if (host->isa >= CG_ISA_AVX2) check_compiled(c, &d, i, "avx2");
        if (host->isa >= CG_ISA_AVX512) check_compiled(c, &d, i, "avx512");
        conv_data_free(&d);
    }
}

/* ---- LayoutTransform on the transpose kernel (smelt.transpose_f32) ----
 * Block sizes 2 to 16, widths with and without a tile tail (and narrower
 * than a tile), 1 and 2 spatial dims, batch 2, and the fused forms: an
 * elementwise producer (Relu before NCHW -> blocks) or consumer (Add after
 * blocks -> NCHW), and both at once (the element-wise fallback).  Each
 * through the default schedule (16 and 8 lanes), every knob value of the
 * layout rule, random legal schedules (tir interpreter), and compiled C on
 * each target the host runs.  A conversion moves values: results must be
 * bit-exact. */

enum { LT_PLAIN = 0, LT_RELU_BEFORE = 1, LT_ADD_AFTER = 2, LT_BOTH = 3 };

typedef struct lt_case {
    int rank;
    int64_t dims[4]; /* plain [N, C, spatial...] */
    int64_t block;
    bool to_plain;
    int fused;
} lt_case;

static const lt_case k_lt_cases[] = {
    {4, {1, 32, 5, 37}, 16, true, LT_PLAIN},  /* W = 2 tiles + 5 */
    {4, {2, 48, 3, 16}, 16, true, LT_PLAIN},  /* batch 2, exact tiles */
    {3, {1, 32, 20}, 16, true, LT_PLAIN},     /* one spatial dim */
    {4, {1, 24, 4, 13}, 8, true, LT_PLAIN},
    {4, {1, 12, 3, 7}, 4, true, LT_PLAIN},
    {4, {1, 6, 2, 9}, 2, true, LT_PLAIN},
    {4, {1, 32, 5, 37}, 16, false, LT_PLAIN},
    {4, {2, 16, 1, 3}, 16, false, LT_PLAIN}, /* W below the 4-wide tile */
    {4, {1, 64, 1, 1}, 16, true, LT_PLAIN},  /* a pooled vector: 1 x 1 planes */
    {3, {1, 16, 33}, 16, false, LT_PLAIN},
    {4, {1, 24, 4, 13}, 8, false, LT_PLAIN},
    {4, {1, 12, 3, 7}, 4, false, LT_PLAIN},
    {4, {1, 6, 2, 9}, 2, false, LT_PLAIN},
    {4, {1, 32, 3, 21}, 16, false, LT_RELU_BEFORE},
    {4, {1, 8, 2, 19}, 8, false, LT_RELU_BEFORE},
    {4, {1, 32, 3, 21}, 16, true, LT_ADD_AFTER},
    {4, {2, 8, 2, 19}, 8, true, LT_ADD_AFTER},
    {4, {1, 16, 3, 18}, 16, true, LT_BOTH},
};

typedef struct lt_data {
    smelt_tensor in[2]; /* the conversion's input (layout src), the Add's other input */
    int n_in;
    smelt_tensor want;
} lt_data;

static float relu_f(float v) { return v > 0 ? v : 0; }

static void lt_data_make(const lt_case *c, lt_data *d)
{
    memset(d, 0, sizeof *d);
    smelt_tensor x = tensor_new(c->rank, c->dims);
    fill(&x, 5);
    int64_t n = smelt_tensor_numel(&x);
    smelt_tensor pre = tensor_new(c->rank, c->dims); /* x after the producer */
    for (int64_t i = 0; i < n; i++) {
        float v = ((float *)x.data)[i];
        ((float *)pre.data)[i] = c->fused & LT_RELU_BEFORE ? relu_f(v) : v;
    }
    d->in[0] = c->to_plain ? to_layout(&x, c->block) : to_layout(&x, 0);
    d->n_in = 1;
    smelt_tensor conv = to_layout(&pre, c->to_plain ? 0 : c->block);
    if (c->fused & LT_ADD_AFTER) {
        d->in[1] = tensor_new(c->rank, c->dims);
        fill(&d->in[1], 9);
        d->n_in = 2;
        for (int64_t i = 0; i < n; i++) ((float *)conv.data)[i] += ((float *)d->in[1].data)[i];
    }
    d->want = conv;
    free(x.data);
    free(pre.data);
}

static void lt_data_free(lt_data *d)
{
    for (int i = 0; i < d->n_in; i++) free(d->in[i].data);
    free(d->want.data);
}

static gr_value *graph_input(gr_graph *g, const char *name, const smelt_tensor *t)
{
    gr_value *v = gr_value_new(g, name);
    v->dtype = SMELT_DT_FLOAT32;
    v->rank = t->rank;
    memcpy(v->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
    v->is_input = true;
    smelt_ptrvec_push(&g->inputs, v);
    return v;
}

/* x -> [Relu] -> LayoutTransform -> [Add y] -> output; nodes[] in order. */
static gr_graph *lt_graph(const lt_case *c, const lt_data *d, gr_node **nodes, int *n_nodes)
{
    gr_graph *g = gr_graph_new();
    g->opset = 19;
    gr_value *v = graph_input(g, "x", &d->in[0]);
    *n_nodes = 0;
    if (c->fused & LT_RELU_BEFORE) {
        gr_node *r = pu_node_new(ctx, g, "relu", OP_RELU, &v, 1, 1);
        CHECK(pu_node_import(ctx, g, r) == SMELT_OK);
        nodes[(*n_nodes)++] = r;
        v = r->outputs[0];
    }
    v = layout_node(g, "convert", v, c->to_plain ? c->block : 0, c->to_plain ? 0 : c->block);
    nodes[(*n_nodes)++] = v->producer;
    if (c->fused & LT_ADD_AFTER) {
        gr_value *ab[2] = {v, graph_input(g, "y", &d->in[1])};
        gr_node *a = pu_node_new(ctx, g, "add", OP_ADD, ab, 2, 1);
        CHECK(pu_node_import(ctx, g, a) == SMELT_OK);
        nodes[(*n_nodes)++] = a;
        v = a->outputs[0];
    }
    v->is_output = true;
    smelt_ptrvec_push(&g->outputs, v);
    CHECK(pass_infer_shapes(ctx, g) == SMELT_OK && gr_graph_verify(ctx, g) == SMELT_OK);
    return g;
}

static bool bit_equal(const char *what, const float *got, const float *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (memcmp(&got[i], &want[i], sizeof(float)) == 0) continue;
        fprintf(stderr, "%s: element %lld: got %.9g, want %.9g\n", what, (long long)i, got[i],
                want[i]);
        return false;
    }
    return true;
}

/* Lower under s, run with the tir interpreter, compare bit for bit. */
static bool lt_run_lowered(te_graph *te, const sch_schedule *s, const lt_data *d, const char *what)
{
    sch_state *st = NULL;
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder b;
    ir_builder_init(&b, &ar);
    ir_func *f = NULL;
    tir_interp it;
    tir_interp_init(&it, ctx);
    int64_t n_out = smelt_tensor_numel(&d->want);
    float *out = calloc((size_t)n_out, sizeof *out);
    bool ok = sch_state_build(ctx, te, s, &st) == SMELT_OK &&
              lower_func(ctx, st, &b, "f", &f) == SMELT_OK;
    for (int p = 0, k = 0; ok && p < f->n_params; p++) {
        ir_buffer *buf = f->params[p];
        const te_const *c = te_const_of(st->te, buf); /* Winograd's weights (algo knob) */
        if (c) {
            ok = tir_interp_bind_buffer(&it, buf, c->data, c->numel) == SMELT_OK;
        } else if (buf->kind == IR_BUF_OUTPUT) {
            ok = tir_interp_bind_buffer(&it, buf, out, n_out) == SMELT_OK;
        } else {
            ok = k < d->n_in && tir_interp_bind_buffer(&it, buf, d->in[k].data,
                                                       smelt_tensor_numel(&d->in[k])) == SMELT_OK;
            k++;
        }
    }
    ok = ok && tir_interp_run(&it, f->body) == SMELT_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(ctx));
    ok = ok && bit_equal(what, out, d->want.data, n_out);
    if (!ok) print_schedule(what, s);
    free(out);
    tir_interp_fini(&it);
    smelt_arena_fini(&ar);
    sch_state_free(st);
    smelt_ctx_clear(ctx);
    return ok;
}

static bool escapes_graph(const gr_value *v, void *user)
{
    (void)user;
    return v->is_output;
}

static bool schedule_has_kernel(const sch_schedule *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->steps[i].kind == SCH_TENSORIZE) return true;
    return false;
}

static void lt_check_schedules(const lt_case *c, const lt_data *d, int ci)
{
    gr_node *nodes[3];
    int n_nodes;
    gr_graph *g = lt_graph(c, d, nodes, &n_nodes);
    te_graph *te = NULL;
    te_group_io io;
    CHECK(te_from_group(ctx, (const gr_node *const *)nodes, n_nodes, escapes_graph, NULL, &te,
                        &io) == SMELT_OK);
    sch_knob_space sp;
    CHECK(te && sch_default_space(ctx, te, test_hw(16), &sp) == SMELT_OK);
    /* the transposing rule takes every fused form but both sides at once */
    if (te && strcmp(sp.rule, c->fused == LT_BOTH ? "generic" : "layout"))
        fprintf(stderr, "LayoutTransform case %d: rule %s\n", ci, sp.rule);
    CHECK(te && !strcmp(sp.rule, c->fused == LT_BOTH ? "generic" : "layout"));
    for (int kn = 0; te && kn < SCH_KNOB_COUNT_; kn++)
        for (int v = 0; v < sp.n_values[kn]; v++) {
            sch_knobs knobs = {{0}};
            knobs.v[kn] = sp.values[kn][v];
            sch_schedule s;
            sch_schedule_init(&s);
            char what[128];
            snprintf(what, sizeof what, "LayoutTransform case %d, knob %s = %lld", ci,
                     sch_knob_name((sch_knob)kn), (long long)knobs.v[kn]);
            CHECK(sch_default_knobs(ctx, te, test_hw(16), &knobs, &s) == SMELT_OK);
            CHECK(lt_run_lowered(te, &s, d, what));
            sch_schedule_fini(&s);
        }
    for (int k = 0; te && k < 2 + RANDOM_SCHEDULES; k++) {
        sch_schedule s;
        sch_schedule_init(&s);
        char what[96];
        snprintf(what, sizeof what, "LayoutTransform case %d, %s schedule %d", ci,
                 k < 2 ? "default" : "random", k);
        smelt_status st = k < 2 ? sch_default(ctx, te, test_hw(k == 0 ? 16 : 8), &s)
                                : sch_random(ctx, te, (uint64_t)(ci * 100 + k), 10, &s);
        CHECK(st == SMELT_OK);
        if (k < 2) CHECK(schedule_has_kernel(&s) == (c->fused != LT_BOTH));
        CHECK(st == SMELT_OK && lt_run_lowered(te, &s, d, what));
        sch_schedule_fini(&s);
    }
    te_graph_free(te);
    gr_graph_free(g);
}

static void lt_check_compiled(const lt_case *c, const lt_data *d, int ci, const char *target)
{
    gr_node *nodes[3];
    int n_nodes;
    smelt_model *m = smelt_model_from_graph(lt_graph(c, d, nodes, &n_nodes));
    smelt_options o;
    smelt_options_init(&o);
    o.target = target;
    o.num_threads = 2;
    smelt_tensor out = {0};
    smelt_status s = smelt_model_compile(ctx, m, &o);
    if (s == SMELT_OK) s = smelt_model_run(ctx, m, d->in, d->n_in, &out, 1);
    char what[96];
    snprintf(what, sizeof what, "compiled LayoutTransform case %d (%s)", ci, target);
    if (s != SMELT_OK) fprintf(stderr, "%s: %s\n", what, smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK);
    int64_t n = smelt_tensor_numel(&d->want);
    CHECK(out.data && smelt_tensor_numel(&out) == n && bit_equal(what, out.data, d->want.data, n));
    smelt_free(out.data);
    smelt_free(out.name);
    smelt_model_free(m);
    smelt_ctx_clear(ctx);
}

static void test_transposes(void)
{
    const cg_target *host = cg_target_host();
    for (int i = 0; i < (int)SMELT_ARRAY_LEN(k_lt_cases); i++) {
        const lt_case *c = &k_lt_cases[i];
        lt_data d;
        lt_data_make(c, &d);
        lt_check_schedules(c, &d, i);
        lt_check_compiled(c, &d, i, "generic");
        if (host->isa >= CG_ISA_AVX2) lt_check_compiled(c, &d, i, "avx2");
        if (host->isa >= CG_ISA_AVX512) lt_check_compiled(c, &d, i, "avx512");
        lt_data_free(&d);
    }
}

/* Grouped convs other than depthwise are refused with the node's name. */
static void test_bad_group(void)
{
    conv_case c = k_convs[1];
    conv_data d;
    conv_data_make(&c, &d);
    node_fix f;
    nchwc_node(&c, &f);
    op_conv_attrs *a = f.node->op_attrs;
    a->group = 2;
    const smelt_tensor *in[3] = {&d.xb, &d.wb, &d.bb};
    smelt_tensor out = {0};
    CHECK(exec_node(ctx, f.node, in, &out) == SMELT_ERR_SHAPE);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "node 'n0' (ConvNCHWc): group 2");
    smelt_ctx_clear(ctx);
    gr_graph_free(f.g);
    conv_data_free(&d);
}

int main(void)
{
    setenv("SMELT_CACHE_DIR", "cg-test-cache", 0);
    ctx = smelt_ctx_new();
    test_transforms();
    test_transposes();
    test_convs();
    test_bad_group();
    smelt_ctx_free(ctx);
    TEST_MAIN_END();
}
