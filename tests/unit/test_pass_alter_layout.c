/* alter_layout: convolution chains in NCHW[x]c.  Each case checks the
 * rewritten node sequence and that the reference executor gives the
 * unoptimised graph's outputs (tg_check), plus details of the rewrite. */
#include "ops/layout.h"
#include "passes/pass_graphs.h"
#include "test_hw.h"

static smelt_status alter16(smelt_ctx *ctx, gr_graph *g)
{
    g->hw = *test_hw(16);
    return pass_alter_layout(ctx, g);
}

static smelt_status alter8(smelt_ctx *ctx, gr_graph *g)
{
    g->hw = *test_hw(8);
    return pass_alter_layout(ctx, g);
}

/* Conv of x to `co` channels: k x k, stride, padding k/2, bias, group. */
static gr_value *conv(gr_graph *g, const char *name, gr_value *x, int64_t co, int64_t k,
                      int64_t stride, int64_t group)
{
    int64_t w[4] = {co, x->dims[1] / group, k, k}, b[1] = {co};
    gr_value *in[3] = {x, tg_const(g, "w", 4, w, -0.3f, 0.7f / (float)(w[0] * w[1] * k * k)),
                       tg_const(g, "b", 1, b, 0.1f, -0.02f)};
    gr_node *n = tg_node_attrs(g, OP_CONV, name, 3, in);
    int64_t p = k / 2, pads[4] = {p, p, p, p}, s[2] = {stride, stride};
    pu_attr_ints(tg_ctx, g, n, "pads", pads, 4);
    pu_attr_ints(tg_ctx, g, n, "strides", s, 2);
    pu_attr_int(tg_ctx, g, n, "group", group);
    gr_value *y = tg_import(g, n);
    /* later builders read dims[1] of their inputs before shape inference */
    y->rank = 4;
    y->dims[0] = x->dims[0];
    y->dims[1] = co;
    return y;
}

static gr_value *relu(gr_graph *g, const char *name, gr_value *x)
{
    gr_value *y = tg_op(g, OP_RELU, name, 1, &x);
    y->rank = 4;
    y->dims[1] = x->dims[1];
    return y;
}

static gr_value *input(gr_graph *g, int64_t c, int64_t hw)
{
    int64_t d[4] = {1, c, hw, hw};
    return tg_input(g, "x", 4, d);
}

/* A graph input with 3 channels feeds the first conv directly (blocks of
 * 1 are NCHW); one conversion back at the output. */
static void stem(gr_graph *g)
{
    gr_value *x = relu(g, "r1", conv(g, "c1", input(g, 3, 9), 16, 3, 2, 1));
    tg_output(g, relu(g, "r2", conv(g, "c2", x, 32, 3, 1, 1)));
}

/* A depthwise conv needs its input in blocks: one conversion in, one out. */
static void depthwise_chain(gr_graph *g)
{
    gr_value *x = relu(g, "r1", conv(g, "dw", input(g, 8, 7), 8, 3, 1, 8));
    tg_output(g, relu(g, "r2", conv(g, "pw", x, 16, 1, 1, 1)));
}

/* ResNet's residual: Add(conv, relu(conv)) stays blocked. */
static void residual(gr_graph *g)
{
    gr_value *a = relu(g, "ra", conv(g, "ca", input(g, 3, 6), 16, 3, 1, 1));
    gr_value *in[2] = {conv(g, "cb", a, 16, 3, 1, 1), a};
    gr_value *sum = tg_op(g, OP_ADD, "add", 2, in);
    tg_output(g, tg_op(g, OP_RELU, "r", 1, &sum));
}

/* Mul by a per-channel constant [32,1,1] and Add of a scalar. */
static void channel_const(gr_graph *g)
{
    int64_t cd[3] = {32, 1, 1}, sd[1] = {1};
    gr_value *m[2] = {tg_const(g, "scale", 3, cd, 0.5f, 0.1f), conv(g, "c", input(g, 3, 5), 32, 3, 1, 1)};
    gr_value *a[2] = {tg_op(g, OP_MUL, "mul", 2, m), tg_const(g, "one", 1, sd, 1, 0)};
    tg_output(g, tg_op(g, OP_ADD, "add", 2, a));
}

/* Add of a full-size constant: converted to blocks at compile time. */
static void full_const(gr_graph *g)
{
    int64_t cd[4] = {1, 16, 5, 5};
    gr_value *a[2] = {conv(g, "c", input(g, 3, 5), 16, 3, 1, 1), tg_const(g, "k", 4, cd, -1, 0.01f)};
    tg_output(g, tg_op(g, OP_ADD, "add", 2, a));
}

/* Pad of H and W (DenseNet's transitions) stays blocked. */
static void pad(gr_graph *g)
{
    static const int64_t pads[8] = {0, 0, 1, 0, 0, 0, 2, 1};
    gr_value *in[2] = {conv(g, "c", input(g, 3, 5), 16, 3, 1, 1), tg_const_i64(g, "pads", 8, pads)};
    tg_output(g, tg_op(g, OP_PAD, "pad", 2, in));
}

/* Mul by a value varying along H is not layout-agnostic here: converted back. */
static void spatial_const(gr_graph *g)
{
    int64_t cd[2] = {5, 1};
    gr_value *m[2] = {conv(g, "c", input(g, 3, 5), 16, 3, 1, 1), tg_const(g, "s", 2, cd, 1, 1)};
    tg_output(g, tg_op(g, OP_MUL, "mul", 2, m));
}

static gr_value *transform(gr_graph *g, const char *name, gr_value *x, int64_t src, int64_t dst)
{
    gr_node *n = tg_node_attrs(g, OP_LAYOUT_TRANSFORM, name, 1, &x);
    pu_attr_int(tg_ctx, g, n, "src_block", src);
    pu_attr_int(tg_ctx, g, n, "dst_block", dst);
    return tg_import(g, n);
}

/* NCHW -> 16c -> 8c -> NCHW is nothing at all. */
static void round_trip(gr_graph *g)
{
    gr_value *x = transform(g, "t1", input(g, 16, 4), 0, 16);
    x = transform(g, "t3", transform(g, "t2", x, 16, 8), 8, 0);
    tg_output(g, tg_op(g, OP_RELU, "r", 1, &x));
}

/* NCHW -> 16c -> 8c as an output: one conversion NCHW -> 8c. */
static void chain(gr_graph *g)
{
    tg_output(g, transform(g, "t2", transform(g, "t1", input(g, 16, 4), 0, 16), 16, 8));
}

/* Grouped (not depthwise) convs stay NCHW, behind a conversion. */
static void grouped(gr_graph *g)
{
    gr_value *x = conv(g, "c1", input(g, 3, 6), 16, 3, 1, 1);
    tg_output(g, conv(g, "g4", x, 16, 3, 1, 4));
}

/* MaxPool and GlobalAveragePool stay blocked; Flatten reads NCHW. */
static void pools(gr_graph *g)
{
    gr_value *x = relu(g, "r", conv(g, "c", input(g, 3, 9), 16, 3, 1, 1));
    gr_node *mp = tg_node_attrs(g, OP_MAX_POOL, "mp", 1, &x);
    int64_t k[2] = {3, 3}, s[2] = {2, 2}, p[4] = {1, 1, 1, 1};
    pu_attr_ints(tg_ctx, g, mp, "kernel_shape", k, 2);
    pu_attr_ints(tg_ctx, g, mp, "strides", s, 2);
    pu_attr_ints(tg_ctx, g, mp, "pads", p, 4);
    gr_value *y = tg_import(g, mp);
    gr_node *ap = tg_node_attrs(g, OP_AVERAGE_POOL, "ap", 1, &y);
    int64_t k2[2] = {2, 2};
    pu_attr_ints(tg_ctx, g, ap, "kernel_shape", k2, 2);
    pu_attr_int(tg_ctx, g, ap, "ceil_mode", 1);
    y = tg_import(g, ap);
    y = tg_op(g, OP_GLOBAL_AVERAGE_POOL, "gap", 1, &y);
    tg_output(g, tg_op(g, OP_FLATTEN, "flat", 1, &y));
}

/* DenseNet's Concat -> BatchNormalization -> Relu -> Conv, all blocked;
 * a 24-channel input (blocks of 8) brings the 16-channel one to blocks of 8. */
static void dense(gr_graph *g)
{
    gr_value *x = input(g, 3, 6);
    gr_value *in[2] = {conv(g, "c24", x, 24, 3, 1, 1), conv(g, "c16", x, 16, 1, 1, 1)};
    gr_node *cat = tg_node_attrs(g, OP_CONCAT, "cat", 2, in);
    pu_attr_int(tg_ctx, g, cat, "axis", 1);
    int64_t c[1] = {40};
    gr_value *bn[5] = {tg_import(g, cat), tg_const(g, "gamma", 1, c, 0.5f, 0.01f),
                       tg_const(g, "beta", 1, c, -0.2f, 0.01f), tg_const(g, "mean", 1, c, 0.1f, 0.02f),
                       tg_const(g, "var", 1, c, 0.8f, 0.03f)};
    gr_value *y = tg_op(g, OP_BATCH_NORMALIZATION, "bn", 5, bn);
    y->rank = 4;
    y->dims[1] = 40;
    tg_output(g, conv(g, "c", relu(g, "r", y), 16, 1, 1, 1));
}

/* A blocked value that is also a graph output keeps its name and NCHW form. */
static void output_inside(gr_graph *g)
{
    gr_value *x = relu(g, "r1", conv(g, "c1", input(g, 3, 5), 16, 3, 1, 1));
    tg_output(g, x);
    tg_output(g, conv(g, "c2", x, 16, 3, 1, 1));
}

/* 12 channels on 8 lanes: blocks of 4. */
static void narrow(gr_graph *g)
{
    tg_output(g, relu(g, "r", conv(g, "c", input(g, 3, 7), 12, 3, 1, 1)));
}

/* An output block of 2 (6 channels) on a large plane keeps Conv. */
static void too_narrow(gr_graph *g)
{
    tg_output(g, conv(g, "c", input(g, 3, 12), 6, 3, 1, 1));
}

/* A plain input of 32 channels is converted to blocks for the conv (read
 * as blocks of 1, a 1x1 conv of 1024 channels ran 7x slower on AVX2). */
static void wide_plain_input(gr_graph *g)
{
    tg_output(g, conv(g, "c", input(g, 32, 7), 16, 1, 1, 1));
}

static const gr_node *find_op(const gr_graph *g, op_kind op, int nth)
{
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        if (n->op == op && nth-- == 0) return n;
    }
    return NULL;
}

static gr_graph *rewritten(tg_builder b, smelt_status (*pass)(smelt_ctx *, gr_graph *))
{
    gr_graph *g = tg_build(b);
    CHECK(pass(tg_ctx, g) == SMELT_OK);
    return g;
}

static bool dims_are(const gr_value *v, int rank, const int64_t *dims)
{
    if (!v || v->rank != rank) return false;
    for (int i = 0; i < rank; i++)
        if (v->dims[i] != dims[i]) return false;
    return true;
}

static void check_details(void)
{
    /* packed weights [Co/ob, Ci/ib, KH, KW, ib, ob] and bias [Co/ob, ob] */
    gr_graph *g = rewritten(stem, alter16);
    const gr_node *c2 = find_op(g, OP_CONV_NCHWC, 1);
    int64_t w[6] = {2, 1, 3, 3, 16, 16}, b[2] = {2, 16}, y[5] = {1, 2, 5, 5, 16};
    CHECK(c2 && dims_are(c2->inputs[1], 6, w) && dims_are(c2->inputs[2], 2, b));
    CHECK(c2 && dims_are(c2->outputs[0], 5, y));
    const gr_node *c1 = find_op(g, OP_CONV_NCHWC, 0);
    CHECK(c1 && c1->inputs[0]->is_input); /* the model input read as blocks of 1 */
    gr_graph_free(g);

    g = rewritten(channel_const, alter16);
    const gr_node *mul = find_op(g, OP_MUL, 0);
    int64_t cd[4] = {2, 1, 1, 16};
    CHECK(mul && (dims_are(mul->inputs[0], 4, cd) || dims_are(mul->inputs[1], 4, cd)));
    gr_graph_free(g);

    g = rewritten(full_const, alter16);
    const gr_node *add = find_op(g, OP_ADD, 0);
    int64_t kd[5] = {1, 1, 5, 5, 16};
    CHECK(add && (dims_are(add->inputs[0], 5, kd) || dims_are(add->inputs[1], 5, kd)));
    CHECK(add && (add->inputs[0]->constant || add->inputs[1]->constant));
    gr_graph_free(g);

    g = rewritten(chain, alter16);
    const gr_node *t = find_op(g, OP_LAYOUT_TRANSFORM, 0);
    const op_layout_attrs *ta = t ? t->op_attrs : NULL;
    CHECK(ta && ta->src_block == 0 && ta->dst_block == 8 && t->inputs[0]->is_input);
    gr_graph_free(g);

    g = rewritten(dense, alter16);
    const gr_node *cat = find_op(g, OP_CONCAT, 0);
    int64_t cat_dims[5] = {1, 5, 6, 6, 8};
    CHECK(cat && dims_are(cat->outputs[0], 5, cat_dims));
    gr_graph_free(g);

    g = rewritten(narrow, alter8);
    const gr_node *c = find_op(g, OP_CONV_NCHWC, 0);
    int64_t nd[5] = {1, 3, 7, 7, 4};
    CHECK(c && dims_are(c->outputs[0], 5, nd));
    gr_graph_free(g);

    g = rewritten(wide_plain_input, alter16);
    t = find_op(g, OP_LAYOUT_TRANSFORM, 0);
    ta = t ? t->op_attrs : NULL;
    CHECK(ta && ta->src_block == 0 && ta->dst_block == 16 && t->inputs[0]->is_input);
    c = find_op(g, OP_CONV_NCHWC, 0);
    int64_t wd[6] = {1, 2, 1, 1, 16, 16};
    CHECK(c && c->inputs[0] == t->outputs[0] && dims_are(c->inputs[1], 6, wd));
    gr_graph_free(g);

    /* graph outputs keep their names */
    g = rewritten(output_inside, alter16);
    CHECK(strcmp(((gr_value *)g->outputs.items[0])->name, "r1:0") == 0);
    gr_graph_free(g);

    /* no vector lanes known: nothing changes */
    g = tg_build(stem);
    CHECK(pass_alter_layout(tg_ctx, g) == SMELT_OK && !find_op(g, OP_CONV_NCHWC, 0));
    gr_graph_free(g);
}

int main(void)
{
    tg_check("stem", stem, alter16, "ConvNCHWc,Relu,ConvNCHWc,Relu,LayoutTransform");
    tg_check("depthwise chain", depthwise_chain, alter16,
             "LayoutTransform,ConvNCHWc,Relu,ConvNCHWc,Relu,LayoutTransform");
    tg_check("residual", residual, alter16,
             "ConvNCHWc,Relu,ConvNCHWc,Add,Relu,LayoutTransform");
    tg_check("per-channel constant", channel_const, alter16, "ConvNCHWc,Mul,Add,LayoutTransform");
    tg_check("full-size constant", full_const, alter16, "ConvNCHWc,Add,LayoutTransform");
    tg_check("pad", pad, alter16, "ConvNCHWc,Pad,LayoutTransform");
    tg_check("spatial constant", spatial_const, alter16, "ConvNCHWc,LayoutTransform,Mul");
    tg_check("round trip cancelled", round_trip, alter16, "Relu");
    tg_check("chain merged", chain, alter16, "LayoutTransform");
    tg_check("grouped conv stays", grouped, alter16, "ConvNCHWc,LayoutTransform,Conv");
    tg_check("pools", pools, alter16,
             "ConvNCHWc,Relu,MaxPool,AveragePool,ReduceMean,LayoutTransform,Flatten");
    tg_check("dense block", dense, alter16,
             "ConvNCHWc,ConvNCHWc,LayoutTransform,Concat,Mul,Add,Relu,ConvNCHWc,LayoutTransform");
    tg_check("output inside", output_inside, alter16,
             "ConvNCHWc,Relu,ConvNCHWc,LayoutTransform,LayoutTransform");
    tg_check("narrow channels", narrow, alter8, "ConvNCHWc,Relu,LayoutTransform");
    tg_check("too narrow", too_narrow, alter16, "Conv");
    tg_check("wide plain input converted", wide_plain_input, alter16,
             "LayoutTransform,ConvNCHWc,LayoutTransform");
    check_details();
    TEST_MAIN_END();
}
