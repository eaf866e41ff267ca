/* fuse_qdq: DequantizeLinear -> Conv -> QuantizeLinear as QLinearConv, and
 * DequantizeLinear -> MatMul -> QuantizeLinear as QLinearMatMul, MaxPool
 * between equal Dequantize/Quantize parameters on the 8-bit tensor (exact).  Each
 * graph is run by the reference executor before and after the pass; the
 * float outputs (a final DequantizeLinear) may differ by one quantization
 * step of the output (Y_SCALE): the float convolution and the integer one
 * round differently near a rounding boundary.  The Add of two dequantized
 * tensors becomes smelt.QLinearAdd, which must change no value.  A Gemm
 * becomes MatMulInteger [+ bias], Cast, Mul by xs * ws: within one step. */
#include "passes/pass_graphs.h"

#define X_SCALE 0.0125f
#define Y_SCALE 0.05f

static gr_value *typed_const(gr_graph *g, const char *name, smelt_dtype dt, int rank,
                             const int64_t *dims, const void *data)
{
    gr_value *v = pu_const(tg_ctx, g, name, dt, rank, dims, data);
    CHECK(v != NULL);
    return v;
}

static gr_value *scalar_f32(gr_graph *g, const char *name, float v)
{
    return typed_const(g, name, SMELT_DT_FLOAT32, 0, NULL, &v);
}

static gr_value *qdq(gr_graph *g, op_kind op, const char *name, gr_value *x, gr_value *s,
                     gr_value *zp, int64_t axis)
{
    gr_value *in[3] = {x, s, zp};
    gr_node *n = tg_node_attrs(g, op, name, zp ? 3 : 2, in);
    if (axis != 1) pu_attr_int(tg_ctx, g, n, "axis", axis);
    return tg_import(g, n);
}

typedef struct qconv_spec {
    smelt_dtype act;       /* uint8 or int8 activations */
    bool per_channel;      /* weight scales per output channel */
    bool bias;             /* an int32 bias in accumulator units */
    float bias_scale_skew; /* != 1: the bias scale is not xs * ws */
    bool conv_is_output;   /* the Conv's result is also a graph output */
    bool relu;             /* a Relu between the Conv and the QuantizeLinear */
} qconv_spec;

static qconv_spec g_spec;

/* x -> Q -> DQ -> Conv(DQ(w), DQ(b)) -> Q -> DQ -> y, 4 output channels. */
static void qdq_conv(gr_graph *g)
{
    const qconv_spec *sp = &g_spec;
    int64_t xd[4] = {1, 3, 6, 6}, wd[4] = {4, 3, 3, 3}, cd[1] = {4};
    uint8_t zp_u8 = 120;
    int8_t zp_i8 = -8, w_data[108], wz[4] = {0, 0, 0, 0};
    for (int i = 0; i < 108; i++) w_data[i] = (int8_t)((i * 53) % 255 - 127);
    float ws[4] = {0.004f, 0.011f, 0.002f, 0.007f};
    int32_t b[4] = {-400, 2500, 17, -3000};
    float bs[4];
    for (int k = 0; k < 4; k++) bs[k] = X_SCALE * (sp->per_channel ? ws[k] : ws[0]) * sp->bias_scale_skew;

    gr_value *x = tg_input(g, "x", 4, xd);
    bool u8 = sp->act == SMELT_DT_UINT8;
    gr_value *xz = typed_const(g, "xz", sp->act, 0, NULL, u8 ? (void *)&zp_u8 : (void *)&zp_i8);
    gr_value *xs = scalar_f32(g, "xs", X_SCALE);
    gr_value *xq = qdq(g, OP_QUANTIZE_LINEAR, "x_q", x, xs, xz, 1);
    gr_value *xdq = qdq(g, OP_DEQUANTIZE_LINEAR, "x_dq", xq, xs, xz, 1);
    gr_value *w = typed_const(g, "w", SMELT_DT_INT8, 4, wd, w_data);
    int64_t nc = sp->per_channel ? 4 : 1;
    gr_value *wsv = typed_const(g, "ws", SMELT_DT_FLOAT32, 1, &nc, ws);
    gr_value *wzv = typed_const(g, "wz", SMELT_DT_INT8, 1, &nc, wz);
    gr_value *in[3] = {xdq, qdq(g, OP_DEQUANTIZE_LINEAR, "w_dq", w, wsv, wzv, 0), NULL};
    if (sp->bias) {
        gr_value *bv = typed_const(g, "b", SMELT_DT_INT32, 1, cd, b);
        gr_value *bsv = typed_const(g, "bs", SMELT_DT_FLOAT32, 1, cd, bs);
        in[2] = qdq(g, OP_DEQUANTIZE_LINEAR, "b_dq", bv, bsv, NULL, 0);
    }
    gr_node *c = tg_node_attrs(g, OP_CONV, "conv", sp->bias ? 3 : 2, in);
    int64_t pads[4] = {1, 1, 1, 1};
    pu_attr_ints(tg_ctx, g, c, "pads", pads, 4);
    gr_value *y = tg_import(g, c);
    if (sp->conv_is_output) tg_output(g, y);
    if (sp->relu) y = tg_op(g, OP_RELU, "relu", 1, &y);
    gr_value *ys = scalar_f32(g, "ys", Y_SCALE);
    gr_value *yq = qdq(g, OP_QUANTIZE_LINEAR, "y_q", y, ys, xz, 1);
    tg_output(g, qdq(g, OP_DEQUANTIZE_LINEAR, "y_dq", yq, ys, xz, 1));
}

/* x -> Q -> DQ -> MatMul(DQ(w [8, 5], per column)) -> Q -> DQ -> y */
static void qdq_matmul(gr_graph *g)
{
    int64_t xd[3] = {2, 3, 8}, wd[2] = {8, 5}, nd[1] = {5};
    uint8_t zp = 131;
    int8_t w_data[40], wz[5] = {0, 0, 0, 0, 0};
    for (int i = 0; i < 40; i++) w_data[i] = (int8_t)((i * 71) % 255 - 127);
    float ws[5] = {0.01f, 0.003f, 0.02f, 0.008f, 0.015f};
    gr_value *x = tg_input(g, "x", 3, xd);
    gr_value *xz = typed_const(g, "xz", SMELT_DT_UINT8, 0, NULL, &zp);
    gr_value *xs = scalar_f32(g, "xs", X_SCALE);
    gr_value *xdq = qdq(g, OP_DEQUANTIZE_LINEAR, "x_dq",
                        qdq(g, OP_QUANTIZE_LINEAR, "x_q", x, xs, xz, 1), xs, xz, 1);
    gr_value *w = typed_const(g, "w", SMELT_DT_INT8, 2, wd, w_data);
    gr_value *wdq = qdq(g, OP_DEQUANTIZE_LINEAR, "w_dq", w,
                        typed_const(g, "ws", SMELT_DT_FLOAT32, 1, nd, ws),
                        typed_const(g, "wz", SMELT_DT_INT8, 1, nd, wz), 1);
    gr_value *in[2] = {xdq, wdq};
    gr_value *y = tg_op(g, OP_MATMUL, "mm", 2, in);
    gr_value *ys = scalar_f32(g, "ys", Y_SCALE);
    gr_value *yq = qdq(g, OP_QUANTIZE_LINEAR, "y_q", y, ys, xz, 1);
    tg_output(g, qdq(g, OP_DEQUANTIZE_LINEAR, "y_dq", yq, ys, xz, 1));
}

static bool g_gemm_trans_b, g_gemm_bias, g_gemm_relu;
static float g_gemm_alpha = 1.0f;

/* x [3, 8] -> Q -> DQ -> Gemm(DQ(w: [5, 8] per row with transB, else [8, 5]
 * per column), DQ(b int32 [5], xs * ws)) [-> Relu] -> Q -> DQ -> y */
static void qdq_gemm(gr_graph *g)
{
    int64_t xd[2] = {3, 8}, wd[2] = {g_gemm_trans_b ? 5 : 8, g_gemm_trans_b ? 8 : 5}, nd[1] = {5};
    uint8_t zp = 97;
    int8_t w_data[40], wz[5] = {0, 0, 0, 0, 0};
    for (int i = 0; i < 40; i++) w_data[i] = (int8_t)((i * 37) % 129 - 64);
    float ws[5] = {0.01f, 0.003f, 0.02f, 0.008f, 0.015f}, bs[5];
    int32_t b[5] = {-700, 1200, 33, -2500, 410};
    for (int k = 0; k < 5; k++) bs[k] = X_SCALE * ws[k];
    gr_value *x = tg_input(g, "x", 2, xd);
    gr_value *xz = typed_const(g, "xz", SMELT_DT_UINT8, 0, NULL, &zp);
    gr_value *xs = scalar_f32(g, "xs", X_SCALE);
    gr_value *in[3] = {qdq(g, OP_DEQUANTIZE_LINEAR, "x_dq", qdq(g, OP_QUANTIZE_LINEAR, "x_q", x, xs, xz, 1), xs, xz, 1),
                       qdq(g, OP_DEQUANTIZE_LINEAR, "w_dq", typed_const(g, "w", SMELT_DT_INT8, 2, wd, w_data),
                           typed_const(g, "ws", SMELT_DT_FLOAT32, 1, nd, ws),
                           typed_const(g, "wz", SMELT_DT_INT8, 1, nd, wz), g_gemm_trans_b ? 0 : 1),
                       NULL};
    if (g_gemm_bias)
        in[2] = qdq(g, OP_DEQUANTIZE_LINEAR, "b_dq", typed_const(g, "b", SMELT_DT_INT32, 1, nd, b),
                    typed_const(g, "bs", SMELT_DT_FLOAT32, 1, nd, bs), NULL, 0);
    gr_node *gm = tg_node_attrs(g, OP_GEMM, "gemm", g_gemm_bias ? 3 : 2, in);
    if (g_gemm_trans_b) pu_attr_int(tg_ctx, g, gm, "transB", 1);
    if (g_gemm_alpha != 1.0f) pu_attr_float(tg_ctx, g, gm, "alpha", g_gemm_alpha);
    gr_value *y = tg_import(g, gm);
    if (g_gemm_relu) y = tg_op(g, OP_RELU, "relu", 1, &y);
    gr_value *ys = scalar_f32(g, "ys", Y_SCALE);
    gr_value *yq = qdq(g, OP_QUANTIZE_LINEAR, "y_q", y, ys, xz, 1);
    tg_output(g, qdq(g, OP_DEQUANTIZE_LINEAR, "y_dq", yq, ys, xz, 1));
}

static float g_pool_out_scale;

/* x -> Q -> DQ -> MaxPool -> Q(g_pool_out_scale) -> DQ -> y */
static void qdq_maxpool(gr_graph *g)
{
    int64_t xd[4] = {1, 2, 5, 5};
    int8_t zp = -3;
    gr_value *x = tg_input(g, "x", 4, xd);
    gr_value *xz = typed_const(g, "xz", SMELT_DT_INT8, 0, NULL, &zp);
    gr_value *xs = scalar_f32(g, "xs", X_SCALE);
    gr_value *xdq = qdq(g, OP_DEQUANTIZE_LINEAR, "x_dq",
                        qdq(g, OP_QUANTIZE_LINEAR, "x_q", x, xs, xz, 1), xs, xz, 1);
    gr_node *mp = tg_node_attrs(g, OP_MAX_POOL, "pool", 1, &xdq);
    int64_t k[2] = {3, 3}, st[2] = {2, 2};
    pu_attr_ints(tg_ctx, g, mp, "kernel_shape", k, 2);
    pu_attr_ints(tg_ctx, g, mp, "strides", st, 2);
    gr_value *ys = scalar_f32(g, "ys", g_pool_out_scale);
    gr_value *yq = qdq(g, OP_QUANTIZE_LINEAR, "y_q", tg_import(g, mp), ys, xz, 1);
    tg_output(g, qdq(g, OP_DEQUANTIZE_LINEAR, "y_dq", yq, ys, xz, 1));
}

static int64_t g_add_b_dims[4];
static bool g_add_relu;

/* x1 -> Q -> DQ, x2 -> Q -> DQ (u8 and s8, own scales) -> Add [-> Relu] -> Q -> DQ -> y */
static void qdq_add(gr_graph *g)
{
    int64_t ad[4] = {1, 3, 4, 5};
    uint8_t zu = 200, zy = 10;
    int8_t zs = -100;
    gr_value *za = typed_const(g, "za", SMELT_DT_UINT8, 0, NULL, &zu);
    gr_value *zb = typed_const(g, "zb", SMELT_DT_INT8, 0, NULL, &zs);
    gr_value *zyv = typed_const(g, "zy", SMELT_DT_UINT8, 0, NULL, &zy);
    gr_value *sa = scalar_f32(g, "sa", X_SCALE), *sb = scalar_f32(g, "sb", 3 * X_SCALE);
    gr_value *sy = scalar_f32(g, "sy", Y_SCALE);
    gr_value *a = tg_input(g, "a", 4, ad), *b = tg_input(g, "b", 4, g_add_b_dims);
    gr_value *ins[2] = {qdq(g, OP_DEQUANTIZE_LINEAR, "a_dq", qdq(g, OP_QUANTIZE_LINEAR, "a_q", a, sa, za, 1), sa, za, 1),
                        qdq(g, OP_DEQUANTIZE_LINEAR, "b_dq", qdq(g, OP_QUANTIZE_LINEAR, "b_q", b, sb, zb, 1), sb, zb, 1)};
    gr_value *sum = tg_import(g, tg_node_attrs(g, OP_ADD, "add", 2, ins));
    if (g_add_relu) sum = tg_import(g, tg_node_attrs(g, OP_RELU, "relu", 1, &sum));
    tg_output(g, qdq(g, OP_DEQUANTIZE_LINEAR, "y_dq", qdq(g, OP_QUANTIZE_LINEAR, "y_q", sum, sy, zyv, 1), sy, zyv, 1));
}

static void check(const char *title, qconv_spec spec, const char *want_ops)
{
    g_spec = spec;
    tg_check_within(title, qdq_conv, pass_fuse_qdq, want_ops, Y_SCALE * 1.0001);
}

#define UNFUSED "QuantizeLinear,DequantizeLinear,DequantizeLinear,DequantizeLinear,Conv," \
                "QuantizeLinear,DequantizeLinear"

int main(void)
{
    check("u8, per-channel weights, bias",
          (qconv_spec){.act = SMELT_DT_UINT8, .per_channel = true, .bias = true, .bias_scale_skew = 1},
          "QuantizeLinear,QLinearConv,DequantizeLinear");
    check("s8, per-tensor weights, no bias",
          (qconv_spec){.act = SMELT_DT_INT8, .bias_scale_skew = 1},
          "QuantizeLinear,QLinearConv,DequantizeLinear");
    check("Relu before the QuantizeLinear: Max with the zero point",
          (qconv_spec){.act = SMELT_DT_UINT8, .per_channel = true, .bias = true, .bias_scale_skew = 1,
                       .relu = true},
          "QuantizeLinear,QLinearConv,Max,DequantizeLinear");
    check("s8 with Relu", (qconv_spec){.act = SMELT_DT_INT8, .bias_scale_skew = 1, .relu = true},
          "QuantizeLinear,QLinearConv,Max,DequantizeLinear");
    check("bias scale is not xs * ws: stays",
          (qconv_spec){.act = SMELT_DT_UINT8, .per_channel = true, .bias = true, .bias_scale_skew = 1.5f},
          UNFUSED);
    check("Conv result also an output: stays",
          (qconv_spec){.act = SMELT_DT_UINT8, .bias_scale_skew = 1, .conv_is_output = true},
          "QuantizeLinear,DequantizeLinear,DequantizeLinear,Conv,QuantizeLinear,DequantizeLinear");
    tg_check_within("MatMul, per-column weights", qdq_matmul, pass_fuse_qdq,
                    "QuantizeLinear,QLinearMatMul,DequantizeLinear", Y_SCALE * 1.0001);
    g_gemm_trans_b = g_gemm_bias = true;
    tg_check_within("Gemm, transB, per-row weights, bias: MatMulInteger and a float tail", qdq_gemm,
                    pass_fuse_qdq, "QuantizeLinear,MatMulInteger,Add,Cast,Mul,QuantizeLinear,DequantizeLinear",
                    Y_SCALE * 1.0001);
    g_gemm_relu = true;
    tg_check_within("Gemm and Relu", qdq_gemm, pass_fuse_qdq,
                    "QuantizeLinear,MatMulInteger,Add,Cast,Mul,Relu,QuantizeLinear,DequantizeLinear",
                    Y_SCALE * 1.0001);
    g_gemm_relu = g_gemm_trans_b = g_gemm_bias = false;
    tg_check_within("Gemm, [K, N] weights per column, no bias", qdq_gemm, pass_fuse_qdq,
                    "QuantizeLinear,MatMulInteger,Cast,Mul,QuantizeLinear,DequantizeLinear", Y_SCALE * 1.0001);
    g_gemm_alpha = 0.5f;
    tg_check_within("Gemm with alpha 0.5: stays", qdq_gemm, pass_fuse_qdq,
                    "QuantizeLinear,DequantizeLinear,DequantizeLinear,Gemm,QuantizeLinear,DequantizeLinear",
                    0);
    g_gemm_alpha = 1.0f;
    g_pool_out_scale = X_SCALE; /* the same parameters: exact */
    tg_check_within("MaxPool between equal Q/DQ parameters runs on int8", qdq_maxpool,
                    pass_fuse_qdq, "QuantizeLinear,MaxPool,DequantizeLinear", 0);
    g_pool_out_scale = 2 * X_SCALE;
    tg_check_within("MaxPool requantized to another scale: stays", qdq_maxpool, pass_fuse_qdq,
                    "QuantizeLinear,DequantizeLinear,MaxPool,QuantizeLinear,DequantizeLinear", 0);
    int64_t same[4] = {1, 3, 4, 5}, bcast[4] = {1, 3, 1, 5};
    memcpy(g_add_b_dims, same, sizeof same);
    tg_check_within("Add of two dequantized 8-bit tensors: smelt.QLinearAdd, exact", qdq_add,
                    pass_fuse_qdq,
                    "QuantizeLinear,QuantizeLinear,smelt.QLinearAdd,DequantizeLinear", 0);
    g_add_relu = true;
    tg_check_within("Add and Relu: smelt.QLinearAdd and Max, exact", qdq_add, pass_fuse_qdq,
                    "QuantizeLinear,QuantizeLinear,smelt.QLinearAdd,Max,DequantizeLinear", 0);
    g_add_relu = false;
    memcpy(g_add_b_dims, bcast, sizeof bcast);
    tg_check_within("Add with broadcasting: stays", qdq_add, pass_fuse_qdq,
                    "QuantizeLinear,DequantizeLinear,QuantizeLinear,DequantizeLinear,Add,"
                    "QuantizeLinear,DequantizeLinear", 0);
    TEST_MAIN_END();
}
