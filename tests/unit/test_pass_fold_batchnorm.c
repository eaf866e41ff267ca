/* fold_batchnorm: BatchNormalization and per-channel Mul/Add into Conv/Gemm. */
#include "passes/pass_graphs.h"

static gr_value *conv(gr_graph *g, gr_value *x, bool bias)
{
    int64_t w[4] = {4, 3, 3, 3}, b[1] = {4};
    gr_value *in[3] = {x, tg_const(g, "w", 4, w, -0.5f, 0.01f), bias ? tg_const(g, "b", 1, b, 0.1f, 0.2f) : NULL};
    gr_node *n = tg_node_attrs(g, OP_CONV, "conv", bias ? 3 : 2, in);
    int64_t pads[4] = {1, 1, 1, 1};
    pu_attr_ints(tg_ctx, g, n, "pads", pads, 4);
    return tg_import(g, n);
}

static void conv_bn(gr_graph *g)
{
    int64_t d[4] = {1, 3, 5, 5}, c[1] = {4};
    gr_value *x = tg_input(g, "x", 4, d);
    gr_value *in[5] = {conv(g, x, true), tg_const(g, "gamma", 1, c, 0.5f, 0.25f),
                       tg_const(g, "beta", 1, c, -0.2f, 0.1f), tg_const(g, "mean", 1, c, 0.3f, -0.1f),
                       tg_const(g, "var", 1, c, 0.8f, 0.3f)};
    gr_value *y = tg_op(g, OP_BATCH_NORMALIZATION, "bn", 5, in);
    tg_output(g, tg_op(g, OP_RELU, "relu", 1, &y));
}

/* Conv without bias, then * c[1,4,1,1] and + d[4,1,1]: a bias appears. */
static void conv_mul_add(gr_graph *g)
{
    int64_t d[4] = {1, 3, 5, 5}, c[4] = {1, 4, 1, 1}, e[3] = {4, 1, 1};
    gr_value *x = tg_input(g, "x", 4, d);
    gr_value *m[2] = {tg_const(g, "s", 4, c, 2, -0.5f), conv(g, x, false)};
    gr_value *a[2] = {tg_op(g, OP_MUL, "mul", 2, m), tg_const(g, "t", 3, e, 1, 1)};
    tg_output(g, tg_op(g, OP_ADD, "add", 2, a));
}

/* Mul by a value varying along H is not per-channel: stays. */
static void conv_mul_spatial(gr_graph *g)
{
    int64_t d[4] = {1, 3, 5, 5}, c[2] = {5, 1};
    gr_value *x = tg_input(g, "x", 4, d);
    gr_value *m[2] = {conv(g, x, true), tg_const(g, "s", 2, c, 2, -0.5f)};
    tg_output(g, tg_op(g, OP_MUL, "mul", 2, m));
}

/* Gemm(x, W^T, b) * c[5] */
static void gemm_mul(gr_graph *g)
{
    int64_t d[2] = {3, 6}, w[2] = {5, 6}, b[1] = {5};
    gr_value *x = tg_input(g, "x", 2, d);
    gr_value *in[3] = {x, tg_const(g, "w", 2, w, -1, 0.05f), tg_const(g, "b", 1, b, 1, 1)};
    gr_node *n = tg_node_attrs(g, OP_GEMM, "gemm", 3, in);
    pu_attr_int(tg_ctx, g, n, "transB", 1);
    gr_value *m[2] = {tg_import(g, n), tg_const(g, "c", 1, b, 0.5f, 0.5f)};
    tg_output(g, tg_op(g, OP_MUL, "mul", 2, m));
}

int main(void)
{
    tg_check("Conv + BatchNormalization", conv_bn, pass_fold_batchnorm, "Conv,Relu");
    tg_check("Conv * c + d", conv_mul_add, pass_fold_batchnorm, "Conv");
    tg_check("spatial Mul stays", conv_mul_spatial, pass_fold_batchnorm, "Conv,Mul");
    tg_check("Gemm * c", gemm_mul, pass_fold_batchnorm, "Gemm");
    TEST_MAIN_END();
}
