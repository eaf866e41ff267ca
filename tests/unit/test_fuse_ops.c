/* pass_fuse_ops on small hand-built graphs: which nodes share a group, that
 * groups are contiguous in the new order, and that a fused group lowers to
 * one function whose conv keeps its register-tiled (compute_at) schedule. */
#include <stdlib.h>

#include "lower/program.h"
#include "ops/op.h"
#include "passes/passes.h"
#include "sched/sched.h"
#include "te/te.h"
#include "test_util.h"
#include "test_hw.h"

typedef struct builder {
    smelt_ctx *ctx;
    gr_graph *g;
} builder;

static gr_value *input(builder *b, const char *name, int rank, const int64_t *dims)
{
    gr_value *v = gr_value_new(b->g, name);
    v->dtype = SMELT_DT_FLOAT32;
    v->rank = rank;
    memcpy(v->dims, dims, sizeof(int64_t) * (size_t)rank);
    v->is_input = true;
    smelt_ptrvec_push(&b->g->inputs, v);
    return v;
}

static gr_value *constant(builder *b, int rank, const int64_t *dims)
{
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    t->dtype = SMELT_DT_FLOAT32;
    t->rank = rank;
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    t->data = smelt_calloc((size_t)smelt_tensor_numel(t) + 1, sizeof(float));
    for (int64_t i = 0; i < smelt_tensor_numel(t); i++) ((float *)t->data)[i] = 0.01f * (float)(i % 7);
    return gr_graph_add_constant(b->ctx, b->g, "w", t);
}

/* A node with one output, imported (typed attributes) but not yet inferred. */
static gr_value *node(builder *b, const char *name, op_kind op, int n_in, gr_value *const *in)
{
    gr_node *n = gr_node_new(b->g, name, op_get(op)->name, op, n_in, 1);
    for (int i = 0; i < n_in; i++) n->inputs[i] = in[i];
    gr_value *out = gr_value_new(b->g, name);
    out->producer = n;
    n->outputs[0] = out;
    if (op_get(op)->def->import) CHECK(op_get(op)->def->import(b->ctx, b->g, n) == SMELT_OK);
    return out;
}

static gr_value *node1(builder *b, const char *name, op_kind op, gr_value *x)
{
    return node(b, name, op, 1, &x);
}

static gr_value *node2(builder *b, const char *name, op_kind op, gr_value *x, gr_value *y)
{
    gr_value *in[2] = {x, y};
    return node(b, name, op, 2, in);
}

static void finish(builder *b, gr_value *out)
{
    out->is_output = true;
    smelt_ptrvec_push(&b->g->outputs, out);
    CHECK(pass_infer_shapes(b->ctx, b->g) == SMELT_OK);
    CHECK(gr_graph_verify(b->ctx, b->g) == SMELT_OK);
    CHECK(pass_fuse_ops(b->ctx, b->g) == SMELT_OK);
    CHECK(gr_graph_verify(b->ctx, b->g) == SMELT_OK);
}

static gr_node *find(const gr_graph *g, const char *name)
{
    for (int i = 0; i < g->nodes.len; i++) {
        gr_node *n = g->nodes.items[i];
        if (strcmp(n->name, name) == 0) return n;
    }
    return NULL;
}

static int group_of(const gr_graph *g, const char *name)
{
    const gr_node *n = find(g, name);
    return n ? n->group : -99;
}

/* Every group's nodes are consecutive in g->nodes. */
static bool groups_contiguous(const gr_graph *g)
{
    for (int i = 0; i < g->nodes.len; i++) {
        int gi = ((gr_node *)g->nodes.items[i])->group;
        if (gi < 0) continue;
        bool left = false;
        for (int j = i + 1; j < g->nodes.len; j++) {
            int gj = ((gr_node *)g->nodes.items[j])->group;
            if (gj != gi) left = true;
            else if (left) return false;
        }
    }
    return true;
}

static void builder_init(builder *b)
{
    b->ctx = smelt_ctx_new();
    b->g = gr_graph_new();
    b->g->name = "t";
    b->g->opset = 13;
}

static void builder_fini(builder *b)
{
    gr_graph_free(b->g);
    smelt_ctx_free(b->ctx);
}

static int count_funcs(builder *b)
{
    lowered_program *lp = NULL;
    lower_options lo = {.hw = test_hw(8)};
    if (lower_graph(b->ctx, b->g, &lo, &lp) != SMELT_OK) {
        fprintf(stderr, "lower: %s\n", smelt_ctx_message(b->ctx));
        return -1;
    }
    int n = lp->prog.n_funcs;
    lowered_program_free(lp);
    return n;
}

static bool only_output(const gr_value *v, void *u) { return v == u; }

/* conv + bias Add + Relu + residual Add: one group, one function, and the
 * conv accumulates in a tile computed at the last epilogue stage. */
static void test_conv_epilogue(void)
{
    builder b;
    builder_init(&b);
    int64_t xd[4] = {1, 4, 8, 8}, wd[4] = {8, 4, 3, 3}, bd[3] = {8, 1, 1}, rd[4] = {1, 8, 6, 6};
    gr_value *x = input(&b, "x", 4, xd), *res = input(&b, "res", 4, rd);
    gr_value *cin[2] = {x, constant(&b, 4, wd)};
    gr_value *c = node(&b, "conv", OP_CONV, 2, cin);
    gr_value *biased = node2(&b, "bias", OP_ADD, c, constant(&b, 3, bd));
    gr_value *r = node1(&b, "relu", OP_RELU, biased);
    gr_value *y = node2(&b, "residual", OP_ADD, r, res);
    finish(&b, y);
    int grp = group_of(b.g, "conv");
    CHECK(grp >= 0);
    CHECK(group_of(b.g, "bias") == grp && group_of(b.g, "relu") == grp &&
          group_of(b.g, "residual") == grp);
    CHECK(count_funcs(&b) == 1);

    /* the group's default schedule still tiles the conv at its epilogue */
    const gr_node *nodes[4];
    for (int i = 0; i < 4; i++) nodes[i] = b.g->nodes.items[i];
    te_group_io *io = calloc(1, sizeof *io);
    te_graph *te = NULL;
    CHECK(te_from_group(b.ctx, nodes, 4, only_output, y, &te, io) == SMELT_OK);
    CHECK(io->n_in == 4 && io->n_out == 1 && io->out[0] == y);
    sch_schedule s;
    sch_schedule_init(&s);
    CHECK(te && sch_default(b.ctx, te, test_hw(8), &s) == SMELT_OK);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    sch_schedule_print(&s, &sb);
    CHECK_STR_CONTAINS(smelt_strbuf_cstr(&sb), "compute_at n0_y n3_y");
    smelt_strbuf_fini(&sb);
    sch_schedule_fini(&s);
    te_graph_free(te);
    free(io);

    smelt_strbuf_init(&sb);
    gr_graph_print(b.g, &sb);
    CHECK_STR_CONTAINS(smelt_strbuf_cstr(&sb), "# relu [group 0]");
    smelt_strbuf_fini(&sb);
    builder_fini(&b);
}

/* Softmax written out: ReduceMax, Sub, Exp, ReduceSum, Div: one group. */
static void test_softmax_decomposed(void)
{
    builder b;
    builder_init(&b);
    int64_t xd[2] = {4, 16}, axes[1] = {1};
    gr_value *x = input(&b, "x", 2, xd);
    gr_value *mx = node1(&b, "max", OP_REDUCE_MAX, x);
    gr_value *sub = node2(&b, "sub", OP_SUB, x, mx);
    gr_value *e = node1(&b, "exp", OP_EXP, sub);
    smelt_tensor *ax = smelt_calloc(1, sizeof *ax);
    ax->dtype = SMELT_DT_INT64;
    ax->rank = 1;
    ax->dims[0] = 1;
    ax->data = smelt_calloc(1, sizeof(int64_t));
    memcpy(ax->data, axes, sizeof axes);
    gr_value *sum = node2(&b, "sum", OP_REDUCE_SUM, e, gr_graph_add_constant(b.ctx, b.g, "axes", ax));
    gr_value *y = node2(&b, "div", OP_DIV, e, sum);
    finish(&b, y);
    int grp = group_of(b.g, "max");
    CHECK(grp >= 0);
    CHECK(group_of(b.g, "sub") == grp && group_of(b.g, "exp") == grp &&
          group_of(b.g, "sum") == grp && group_of(b.g, "div") == grp);
    CHECK(count_funcs(&b) == 1);
    builder_fini(&b);
}

/* A diamond through an anchor: a = relu(x); c = conv(a); y = a + c.
 * Fusing the Add into relu's group would need the conv in between: the
 * group {relu, add} would not be convex, so the Add stays with the conv
 * (its epilogue) or alone, never with relu. */
static void test_diamond_no_cycle(void)
{
    builder b;
    builder_init(&b);
    int64_t xd[4] = {1, 4, 6, 6}, wd[4] = {4, 4, 1, 1};
    gr_value *x = input(&b, "x", 4, xd);
    gr_value *a = node1(&b, "relu", OP_RELU, x);
    gr_value *cin[2] = {a, constant(&b, 4, wd)};
    gr_value *c = node(&b, "conv", OP_CONV, 2, cin);
    gr_value *y = node2(&b, "add", OP_ADD, a, c);
    finish(&b, y);
    int ga = group_of(b.g, "relu"), gadd = group_of(b.g, "add");
    CHECK(ga < 0 || ga != gadd);
    CHECK(groups_contiguous(b.g));
    CHECK(count_funcs(&b) >= 2);
    builder_fini(&b);
}

/* A value that is a graph output is never fused through; an injective
 * chain after it still fuses. */
static void test_graph_output_boundary(void)
{
    builder b;
    builder_init(&b);
    int64_t xd[2] = {4, 8};
    gr_value *x = input(&b, "x", 2, xd);
    gr_value *a = node1(&b, "neg", OP_NEG, x);
    gr_value *c = node1(&b, "abs", OP_ABS, a);
    gr_value *d = node1(&b, "exp", OP_EXP, c);
    a->is_output = true;
    smelt_ptrvec_push(&b.g->outputs, a);
    finish(&b, d);
    CHECK(group_of(b.g, "neg") < 0);
    CHECK(group_of(b.g, "abs") >= 0 && group_of(b.g, "abs") == group_of(b.g, "exp"));
    CHECK(count_funcs(&b) == 2);
    builder_fini(&b);
}

/* Two groups must not depend on each other: c = b + a joins b's group, so
 * d = a - b cannot join a's group (b's group reads a). */
static void test_no_group_cycle(void)
{
    builder b;
    builder_init(&b);
    int64_t xd[2] = {4, 8};
    gr_value *x = input(&b, "x", 2, xd), *y = input(&b, "y", 2, xd);
    gr_value *va = node1(&b, "a", OP_NEG, x);
    gr_value *vb = node1(&b, "b", OP_ABS, y);
    gr_value *vc = node2(&b, "c", OP_ADD, vb, va);
    gr_value *vd = node2(&b, "d", OP_SUB, va, vb);
    vc->is_output = true;
    smelt_ptrvec_push(&b.g->outputs, vc);
    finish(&b, vd);
    CHECK(group_of(b.g, "c") == group_of(b.g, "b"));
    CHECK(group_of(b.g, "d") != group_of(b.g, "a") || group_of(b.g, "a") < 0);
    CHECK(groups_contiguous(b.g));
    CHECK(count_funcs(&b) == 2);
    builder_fini(&b);
}

/* A transformer MLP: MatMul + bias + Gelu + residual Add is one group and
 * one function (the matmul's epilogue); the LayerNormalization after it is
 * a function of its own, whole. */
static void test_matmul_gelu_layernorm(void)
{
    builder b;
    builder_init(&b);
    int64_t xd[3] = {1, 8, 16}, wd[2] = {16, 16}, hd[1] = {16};
    gr_value *x = input(&b, "x", 3, xd);
    gr_value *mm = node2(&b, "mm", OP_MATMUL, x, constant(&b, 2, wd));
    gr_value *biased = node2(&b, "bias", OP_ADD, constant(&b, 1, hd), mm);
    gr_value *act = node1(&b, "gelu", OP_GELU, biased);
    gr_value *res = node2(&b, "residual", OP_ADD, x, act);
    gr_value *lin[3] = {res, constant(&b, 1, hd), constant(&b, 1, hd)};
    gr_value *y = node(&b, "ln", OP_LAYER_NORMALIZATION, 3, lin);
    finish(&b, y);
    int grp = group_of(b.g, "mm");
    CHECK(grp >= 0);
    CHECK(group_of(b.g, "bias") == grp && group_of(b.g, "gelu") == grp &&
          group_of(b.g, "residual") == grp);
    CHECK(group_of(b.g, "ln") < 0);
    CHECK(groups_contiguous(b.g));
    CHECK(count_funcs(&b) == 2);
    builder_fini(&b);
}

/* Attention scores: MatMul, scale, mask, then one Softmax function. */
static void test_matmul_softmax(void)
{
    builder b;
    builder_init(&b);
    int64_t qd[3] = {2, 8, 4}, kd[3] = {2, 4, 8}, md[3] = {1, 1, 8}, one[1] = {1};
    gr_value *q = input(&b, "q", 3, qd), *k = input(&b, "k", 3, kd), *mask = input(&b, "mask", 3, md);
    gr_value *mm = node2(&b, "mm", OP_MATMUL, q, k);
    gr_value *scaled = node2(&b, "scale", OP_MUL, mm, constant(&b, 1, one));
    gr_value *masked = node2(&b, "mask", OP_ADD, scaled, mask);
    gr_value *y = node1(&b, "softmax", OP_SOFTMAX, masked);
    finish(&b, y);
    int grp = group_of(b.g, "mm");
    CHECK(grp >= 0 && group_of(b.g, "scale") == grp && group_of(b.g, "mask") == grp);
    CHECK(group_of(b.g, "softmax") != grp);
    CHECK(count_funcs(&b) == 2);
    builder_fini(&b);
}

int main(void)
{
    test_matmul_gelu_layernorm();
    test_matmul_softmax();
    test_no_group_cycle();
    test_conv_epilogue();
    test_softmax_decomposed();
    test_diamond_no_cycle();
    test_graph_output_boundary();
    TEST_MAIN_END();
}
