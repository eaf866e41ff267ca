/* Multi-node patterns of the recipe generator (recipe_gen.h): the
 * quantization ops (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv), the QDQ forms
 * passes/fuse_qdq.c rewrites, and the recurrent ops (RNN, GRU, LSTM).
 * One op byte from a single random op rarely gives these a valid set of
 * dtypes, shapes and parameters, so each pattern builds a whole little
 * subgraph from its own recipe bytes.
 *
 * Each pattern starts with a mood byte: 7 in 8 give a valid model, the
 * rest name one flaw (a bad scale, a zero point of the wrong dtype, a
 * per-axis length or axis that does not fit, wrong weight shapes or
 * attributes, data from an arbitrary earlier value) that the importer or
 * the kernels must refuse with a message, or compute as the reference does. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "recipe_gen.h"

enum { DT_FLOAT = 1, DT_UINT8 = 2, DT_INT8 = 3, DT_INT32 = 6, DT_INT64 = 7, DT_DOUBLE = 11 };

/* ---- flaws ---- */

typedef enum flaw {
    FLAW_NONE = -1,
    FLAW_SCALE,      /* a scale of 0, NaN, < 0, denormal, inf or huge */
    FLAW_ZP_DTYPE,   /* a zero point of another dtype than its data */
    FLAW_LENGTH,     /* per-axis parameters one longer than the axis */
    FLAW_AXIS,       /* an axis past the rank */
    FLAW_SHAPE,      /* weights (or data) shaped wrong */
    FLAW_SOURCE,     /* data taken from an arbitrary earlier value */
    FLAW_ATTR,       /* a bad attribute value */
    FLAW_COUNT_
} flaw;

static flaw read_mood(gen *g)
{
    if (rd_byte(&g->in) % 8 != 7) return FLAW_NONE;
    return (flaw)rd_pick(&g->in, FLAW_COUNT_);
}

/* ---- nodes and attributes ---- */

static void nd_in(pb *n, const gen *g, int v)
{
    char name[64] = "";
    if (v >= 0) value_name(g, v, name, sizeof name);
    pb_str(n, 1, name);
}

static int nd_out(pb *n, gen *g)
{
    char name[64];
    int v = new_value(g, name, sizeof name);
    pb_str(n, 2, name);
    return v;
}

static void nd_emit(gen *g, pb *n, int index, int sub, const char *op)
{
    char name[32];
    snprintf(name, sizeof name, "n%d_%d", index, sub);
    pb_str(n, 3, name);
    pb_str(n, 4, op);
    pb_msg(&g->graph, 1, n);
}

static void at_begin(pb *a, const char *name, int type)
{
    pb_str(a, 1, name);
    pb_int(a, 20, type);
}

static void at_int(pb *n, const char *name, int64_t v)
{
    pb a = {0};
    at_begin(&a, name, 2);
    pb_int(&a, 3, v);
    pb_msg(n, 5, &a);
}

static void at_float(pb *n, const char *name, float v)
{
    pb a = {0};
    at_begin(&a, name, 1);
    pb_float(&a, 2, v);
    pb_msg(n, 5, &a);
}

static void at_str(pb *n, const char *name, const char *v)
{
    pb a = {0};
    at_begin(&a, name, 3);
    pb_str(&a, 4, v);
    pb_msg(n, 5, &a);
}

static void at_ints(pb *n, const char *name, const int64_t *v, int count)
{
    pb a = {0};
    at_begin(&a, name, 7);
    for (int i = 0; i < count; i++) pb_int(&a, 8, v[i]);
    pb_msg(n, 5, &a);
}

static void at_strs(pb *n, const char *name, const char *const *v, int count)
{
    pb a = {0};
    at_begin(&a, name, 8);
    for (int i = 0; i < count; i++) pb_str(&a, 9, v[i]);
    pb_msg(n, 5, &a);
}

/* ---- constants ---- */

/* For the integer types x is an integer, maybe out of their range (a zero
 * point of the wrong type): it wraps, as a cast from int64 does. */
static void put_element(pb *raw, int dtype, double x)
{
    int64_t i = x > -0x1p62 && x < 0x1p62 ? (int64_t)x : 0; /* NaN: 0 */
    switch (dtype) {
    case DT_FLOAT: { float f = (float)x; pb_raw(raw, &f, 4); break; }
    case DT_DOUBLE: pb_raw(raw, &x, 8); break;
    case DT_INT64: pb_raw(raw, &i, 8); break;
    case DT_INT32: { int32_t v = (int32_t)i; pb_raw(raw, &v, 4); break; }
    case DT_INT8: { int8_t v = (int8_t)i; pb_raw(raw, &v, 1); break; }
    default: { uint8_t v = (uint8_t)i; pb_raw(raw, &v, 1); break; }
    }
}

/* Contents when the caller gives none: small floats, 8-bit integers over
 * their range, other integers near zero. */
static double lcg_element(gen *g, int dtype)
{
    float f = next_float(g); /* -2.0 .. 2.0 */
    switch (dtype) {
    case DT_INT8: return (double)((g->lcg >> 9) % 256) - 128.0;
    case DT_UINT8: return (double)((g->lcg >> 9) % 256);
    case DT_INT32:
    case DT_INT64: return (double)lroundf(f * 10.0f);
    default: return f * 0.25;
    }
}

/* An initializer; vals NULL fills it from the LCG, else vals[i % n_vals]. */
static int konst(gen *g, int dtype, int rank, const int64_t *dims, const double *vals, int n_vals)
{
    char name[64];
    int v = new_value(g, name, sizeof name);
    pb t = {0}, raw = {0};
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        pb_int(&t, 1, dims[d]);
        n *= dims[d];
    }
    pb_int(&t, 2, dtype);
    pb_str(&t, 8, name);
    for (int64_t i = 0; i < n; i++)
        put_element(&raw, dtype, vals ? vals[i % n_vals] : lcg_element(g, dtype));
    pb_msg(&t, 9, &raw);
    pb_msg(&g->graph, 5, &t);
    return v;
}

static int konst_scalar(gen *g, int dtype, double x) { return konst(g, dtype, 0, NULL, &x, 1); }

/* ---- shapes and sources ---- */

static int64_t small_dim(gen *g)
{
    static const int64_t dims[6] = {1, 2, 3, 4, 5, 8};
    return dims[rd_pick(&g->in, 6)];
}

/* The float data a pattern reads: a new graph input of the shape it wants,
 * or (FLAW_SOURCE) whatever earlier value the recipe names. */
static int float_source(gen *g, flaw f, int rank, const int64_t *dims)
{
    if (f == FLAW_SOURCE) {
        int v = pick_input_value(g);
        return v >= 0 ? v : add_graph_input(g, DT_DOUBLE, rank, dims);
    }
    return add_graph_input(g, DT_FLOAT, rank, dims);
}

/* ---- quantization parameters ---- */

typedef struct qparams {
    int scale, zp;  /* value indices; zp -1 when omitted */
    int dtype;      /* the quantized type: DT_UINT8 or DT_INT8 */
    double s[8];    /* the scales written (the first 8) */
    int n_s;
} qparams;

static int pick_qtype(gen *g) { return rd_pick(&g->in, 2) ? DT_INT8 : DT_UINT8; }

/* Scales of data quantized from graph inputs or quantized ops: round
 * numbers, so the integer ops meet exact ties (half to even). */
static const double ROUND_SCALES[8] = {0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0 / 255, 0.0078125};
/* Scales for quantizing a value float arithmetic computed (a Conv or MatMul
 * between DequantizeLinear and QuantizeLinear): with round scales its exact
 * value often lies on a rounding tie, which float rounding noise then
 * decides, differently in any two correct implementations (summation
 * order, fuse_qdq's integer form); these make exact ties unlikely. */
static const double OFF_GRID_SCALES[8] = {0.0371, 0.0523, 0.0913, 0.0137,
                                          0.1731, 0.2917, 0.0067, 0.4463};

static double pick_scale(gen *g, bool bad, const double *table)
{
    static const double hostile[6] = {0.0, NAN, -0.1, 1e-40, INFINITY, 1e30};
    return bad ? hostile[rd_pick(&g->in, 6)] : table[rd_pick(&g->in, 8)];
}

static double pick_zero_point(gen *g, int dtype)
{
    static const double u8[5] = {0, 128, 3, 255, 10}, i8[5] = {0, -128, 5, 127, -3};
    return (dtype == DT_INT8 ? i8 : u8)[rd_pick(&g->in, 5)];
}

/* Scale and zero point of `len` values (0: a scalar); the zero point is
 * left out one time in four when `may_omit`. */
static qparams quant_params_from(gen *g, flaw f, int dtype, int64_t len, bool may_omit,
                                 const double *scales)
{
    qparams q = {.zp = -1, .dtype = dtype};
    int rank = len > 0 ? 1 : 0;
    if (f == FLAW_LENGTH) len = len ? len + 1 : 2, rank = 1; /* 1 value would be per tensor */
    double s[8], z[8];
    int n = len > 0 ? (int)(len < 8 ? len : 8) : 1;
    for (int i = 0; i < n; i++) {
        s[i] = pick_scale(g, f == FLAW_SCALE && i == 0, scales);
        z[i] = pick_zero_point(g, dtype);
    }
    int64_t dims[1] = {len};
    q.scale = konst(g, DT_FLOAT, rank, dims, s, n);
    memcpy(q.s, s, sizeof s);
    q.n_s = n;
    if (may_omit && rd_pick(&g->in, 4) == 0) {
        q.dtype = DT_UINT8; /* QuantizeLinear's default output */
        return q;
    }
    int zdt = f == FLAW_ZP_DTYPE ? (dtype == DT_INT8 ? DT_UINT8 : DT_INT32) : dtype;
    q.zp = konst(g, zdt, rank, dims, z, n);
    return q;
}

static qparams quant_params(gen *g, flaw f, int dtype, int64_t len, bool may_omit)
{
    return quant_params_from(g, f, dtype, len, may_omit, ROUND_SCALES);
}

/* Parameters for quantizing a value float arithmetic computed. */
static qparams computed_value_params(gen *g, int dtype)
{
    return quant_params_from(g, FLAW_NONE, dtype, 0, false, OFF_GRID_SCALES);
}

static int quantize(gen *g, int index, int sub, int x, const qparams *q, int axis)
{
    pb n = {0};
    nd_in(&n, g, x), nd_in(&n, g, q->scale);
    if (q->zp >= 0) nd_in(&n, g, q->zp);
    int y = nd_out(&n, g);
    if (axis != INT32_MIN) at_int(&n, "axis", axis);
    nd_emit(g, &n, index, sub, "QuantizeLinear");
    return y;
}

static int dequantize(gen *g, int index, int sub, int x, const qparams *q, int axis)
{
    pb n = {0};
    nd_in(&n, g, x), nd_in(&n, g, q->scale);
    if (q->zp >= 0) nd_in(&n, g, q->zp);
    int y = nd_out(&n, g);
    if (axis != INT32_MIN) at_int(&n, "axis", axis);
    nd_emit(g, &n, index, sub, "DequantizeLinear");
    return y;
}

static int cast_to_float(gen *g, int index, int sub, int x)
{
    pb n = {0};
    nd_in(&n, g, x);
    int y = nd_out(&n, g);
    at_int(&n, "to", DT_FLOAT);
    nd_emit(g, &n, index, sub, "Cast");
    return y;
}

/* A float input of `rank` dims quantized per tensor: the 8-bit data the
 * integer ops read. */
static int quantized_source(gen *g, int index, flaw f, int rank, const int64_t *dims,
                            qparams *q)
{
    int x = float_source(g, f, rank, dims);
    *q = quant_params(g, f == FLAW_SCALE ? f : FLAW_NONE, pick_qtype(g), 0, false);
    return quantize(g, index, 0, x, q, INT32_MIN);
}

/* ---- QuantizeLinear -> DequantizeLinear, per tensor or per axis ---- */

static void pattern_qdq(gen *g, int index, flaw f)
{
    int x = rd_pick(&g->in, 3) == 2 ? pick_input_value(g) : -1;
    const double *scales = x >= 0 ? OFF_GRID_SCALES : ROUND_SCALES;
    if (x < 0 || f == FLAW_SOURCE) x = float_source(g, f, g->base_rank, g->base);
    int rank = g->base_rank, axis = INT32_MIN;
    int64_t len = 0;
    if (rank > 0 && rd_pick(&g->in, 3) == 0) {
        axis = (int)rd_pick(&g->in, (unsigned)rank);
        len = g->base[axis];
        if (rd_pick(&g->in, 2)) axis -= rank; /* the same axis counted from the end */
    }
    if (f == FLAW_AXIS) axis = rank + (int)rd_pick(&g->in, 2), len = len ? len : 2;
    qparams q = quant_params_from(g, f, pick_qtype(g), len, true, scales);
    int y = quantize(g, index, 0, x, &q, axis);
    dequantize(g, index, 1, y, &q, axis);
}

/* ---- DynamicQuantizeLinear -> DequantizeLinear ---- */

static void pattern_dynamic_quant(gen *g, int index, flaw f)
{
    int64_t dims[4];
    int rank = g->base_rank;
    memcpy(dims, g->base, sizeof dims);
    if (f == FLAW_SHAPE && rank > 0) dims[0] = 0; /* an empty tensor: no min or max */
    int x = float_source(g, f, rank, dims);
    pb n = {0};
    nd_in(&n, g, x);
    qparams q = {.dtype = DT_UINT8};
    int y = nd_out(&n, g);
    q.scale = nd_out(&n, g);
    q.zp = nd_out(&n, g);
    nd_emit(g, &n, index, 0, "DynamicQuantizeLinear");
    dequantize(g, index, 1, y, &q, INT32_MIN);
}

/* ---- MatMulInteger and QLinearMatMul ---- */

typedef struct mm_shape {
    int rank; /* 2 or 3 */
    int64_t a[3], b[2]; /* a: [batch,] M, K; b: K, N */
    int64_t m, n;
} mm_shape;

static mm_shape pick_mm_shape(gen *g, flaw f)
{
    mm_shape s;
    s.rank = 2 + (int)rd_pick(&g->in, 2);
    int64_t batch = small_dim(g);
    s.m = small_dim(g);
    int64_t k = small_dim(g);
    s.n = small_dim(g);
    int o = s.rank - 2;
    s.a[0] = batch, s.a[o] = s.m, s.a[o + 1] = k;
    s.b[0] = f == FLAW_SHAPE ? k + 1 : k, s.b[1] = s.n;
    return s;
}

/* An 8-bit zero point for integer matmul operands: omitted, a scalar, or
 * per row (A, `len` = M) or per column (B, `len` = N). */
static int mm_zero_point(gen *g, int dtype, int64_t len)
{
    unsigned form = rd_pick(&g->in, 3);
    if (form == 0) return -1;
    double z[8];
    int n = form == 2 ? (int)(len < 8 ? len : 8) : 1;
    for (int i = 0; i < n; i++) z[i] = pick_zero_point(g, dtype);
    int64_t dims[1] = {len};
    return konst(g, dtype, form == 2 ? 1 : 0, dims, z, n);
}

static void pattern_matmul_integer(gen *g, int index, flaw f)
{
    mm_shape s = pick_mm_shape(g, f);
    qparams qa;
    int a = quantized_source(g, index, f, s.rank, s.a, &qa);
    int bt = pick_qtype(g);
    int b = konst(g, bt, 2, s.b, NULL, 0);
    int azp = mm_zero_point(g, f == FLAW_ZP_DTYPE ? DT_INT32 : qa.dtype, s.m);
    int bzp = mm_zero_point(g, bt, s.n);
    pb n = {0};
    nd_in(&n, g, a), nd_in(&n, g, b);
    if (azp >= 0 || bzp >= 0) nd_in(&n, g, azp);
    if (bzp >= 0) nd_in(&n, g, bzp);
    int y = nd_out(&n, g);
    nd_emit(g, &n, index, 1, "MatMulInteger");
    cast_to_float(g, index, 2, y);
}

static void pattern_qlinear_matmul(gen *g, int index, flaw f)
{
    mm_shape s = pick_mm_shape(g, f);
    qparams qa;
    int a = quantized_source(g, index, f, s.rank, s.a, &qa);
    int bt = pick_qtype(g);
    int b = konst(g, bt, 2, s.b, NULL, 0);
    int64_t per_col = rd_pick(&g->in, 2) ? s.n : 0;
    qparams qb = quant_params(g, f == FLAW_LENGTH || f == FLAW_ZP_DTYPE ? f : FLAW_NONE, bt,
                              per_col, false);
    qparams qy = quant_params(g, FLAW_NONE, pick_qtype(g), 0, false);
    pb n = {0};
    int ins[8] = {a, qa.scale, qa.zp, b, qb.scale, qb.zp, qy.scale, qy.zp};
    for (int i = 0; i < 8; i++) nd_in(&n, g, ins[i]);
    int y = nd_out(&n, g);
    nd_emit(g, &n, index, 1, "QLinearMatMul");
    dequantize(g, index, 2, y, &qy, INT32_MIN);
}

/* ---- convolutions ---- */

typedef struct conv_geom {
    int64_t x[4], w[4];       /* [N, C, H, W], [M, C/group, kh, kw] */
    int64_t group, strides[2], dilations[2], pads[4];
    const char *auto_pad;     /* NULL: explicit pads */
    bool kernel_shape;        /* write kernel_shape too */
} conv_geom;

static int64_t pick_group(gen *g, int64_t c)
{
    switch (rd_pick(&g->in, 4)) {
    case 1: return c; /* depthwise */
    case 2: return c % 2 == 0 ? 2 : 1;
    default: return 1;
    }
}

/* A kernel extent that fits the padded input. */
static void pick_window(gen *g, int d, conv_geom *c)
{
    int64_t in = c->x[2 + d];
    c->w[2 + d] = 1 + rd_pick(&g->in, 3);
    c->strides[d] = 1 + rd_pick(&g->in, 2);
    c->dilations[d] = 1 + (rd_pick(&g->in, 4) == 0);
    c->pads[d] = rd_pick(&g->in, 2), c->pads[d + 2] = rd_pick(&g->in, 2);
    int64_t padded = in + c->pads[d] + c->pads[d + 2];
    if (c->dilations[d] * (c->w[2 + d] - 1) + 1 > padded) c->dilations[d] = 1;
    if (c->w[2 + d] > padded) c->w[2 + d] = padded;
}

static conv_geom pick_conv(gen *g, flaw f)
{
    static const int64_t hw[4] = {3, 4, 5, 8};
    conv_geom c = {.auto_pad = NULL};
    c.x[0] = 1 + rd_pick(&g->in, 2);
    c.x[1] = 1 + rd_pick(&g->in, 4);
    c.x[2] = hw[rd_pick(&g->in, 4)], c.x[3] = hw[rd_pick(&g->in, 4)];
    c.group = pick_group(g, c.x[1]);
    c.w[0] = c.group * (1 + rd_pick(&g->in, 3));
    c.w[1] = c.x[1] / c.group;
    pick_window(g, 0, &c);
    pick_window(g, 1, &c);
    unsigned pad_form = rd_pick(&g->in, 6);
    if (pad_form == 4) c.auto_pad = "SAME_UPPER";
    if (pad_form == 5) c.auto_pad = "VALID";
    c.kernel_shape = rd_pick(&g->in, 2);
    if (f == FLAW_SHAPE) c.w[1] += 1;
    if (f == FLAW_ATTR) c.group = c.x[1] + 1;
    return c;
}

static void conv_attrs(pb *n, const conv_geom *c)
{
    if (c->kernel_shape) at_ints(n, "kernel_shape", &c->w[2], 2);
    at_ints(n, "strides", c->strides, 2);
    at_ints(n, "dilations", c->dilations, 2);
    if (c->group != 1) at_int(n, "group", c->group);
    if (c->auto_pad) at_str(n, "auto_pad", c->auto_pad);
    else at_ints(n, "pads", c->pads, 4);
}

/* Per output channel (M values) one time in two, else per tensor. */
static int64_t per_channel_len(gen *g, const conv_geom *c) { return rd_pick(&g->in, 2) ? c->w[0] : 0; }

static void pattern_conv_integer(gen *g, int index, flaw f)
{
    conv_geom c = pick_conv(g, f);
    qparams qx;
    int x = quantized_source(g, index, f, 4, c.x, &qx);
    int wt = pick_qtype(g);
    int w = konst(g, wt, 4, c.w, NULL, 0);
    int xzp = rd_pick(&g->in, 2) ? konst_scalar(g, f == FLAW_ZP_DTYPE ? DT_INT32 : qx.dtype,
                                                pick_zero_point(g, qx.dtype))
                                 : -1;
    int wzp = rd_pick(&g->in, 2) ? konst_scalar(g, wt, pick_zero_point(g, wt)) : -1;
    pb n = {0};
    nd_in(&n, g, x), nd_in(&n, g, w);
    if (xzp >= 0 || wzp >= 0) nd_in(&n, g, xzp);
    if (wzp >= 0) nd_in(&n, g, wzp);
    int y = nd_out(&n, g);
    conv_attrs(&n, &c);
    nd_emit(g, &n, index, 1, "ConvInteger");
    cast_to_float(g, index, 2, y);
}

static void pattern_qlinear_conv(gen *g, int index, flaw f)
{
    conv_geom c = pick_conv(g, f);
    qparams qx;
    int x = quantized_source(g, index, f, 4, c.x, &qx);
    int wt = pick_qtype(g);
    int w = konst(g, wt, 4, c.w, NULL, 0);
    qparams qw = quant_params(g, f == FLAW_LENGTH || f == FLAW_ZP_DTYPE ? f : FLAW_NONE, wt,
                              per_channel_len(g, &c), false);
    qparams qy = quant_params(g, FLAW_NONE, pick_qtype(g), 0, false);
    int64_t bias_len = c.w[0];
    int bias = rd_pick(&g->in, 2) ? konst(g, DT_INT32, 1, &bias_len, NULL, 0) : -1;
    pb n = {0};
    int ins[9] = {x, qx.scale, qx.zp, w, qw.scale, qw.zp, qy.scale, qy.zp, bias};
    for (int i = 0; i < (bias >= 0 ? 9 : 8); i++) nd_in(&n, g, ins[i]);
    int y = nd_out(&n, g);
    conv_attrs(&n, &c);
    nd_emit(g, &n, index, 1, "QLinearConv");
    dequantize(g, index, 2, y, &qy, INT32_MIN);
}

/* ---- the QDQ forms fuse_qdq rewrites ---- */

/* How a QDQ pattern strays from the form fuse_qdq wants (each still a
 * valid model the pass must leave alone or rewrite exactly). */
typedef enum qdq_variant {
    QDQ_EXACT,
    QDQ_BIAS_SCALE_OFF, /* the bias scale is not xs * ws */
    QDQ_WEIGHTS_INPUT,  /* the 8-bit weights are a graph input, not constant */
    QDQ_NO_ZERO_POINT,  /* the activation's zero point is omitted */
    QDQ_SHARED_OUTPUT,  /* the float product has a second reader */
    QDQ_RELU,           /* a Relu before the output QuantizeLinear */
    QDQ_VARIANT_COUNT_
} qdq_variant;

typedef struct qdq_ctx {
    gen *g;
    int index, sub;
    flaw f;
    qdq_variant variant;
} qdq_ctx;

static int qdq_dequant(qdq_ctx *q, int x, const qparams *p, int axis)
{
    return dequantize(q->g, q->index, q->sub++, x, p, axis);
}

/* x float -> QuantizeLinear -> DequantizeLinear, per tensor; *p its parameters. */
static int qdq_activation(qdq_ctx *q, int rank, const int64_t *dims, qparams *p)
{
    int x = float_source(q->g, q->f, rank, dims);
    *p = quant_params(q->g, q->f == FLAW_SCALE ? q->f : FLAW_NONE, pick_qtype(q->g), 0,
                      q->variant == QDQ_NO_ZERO_POINT);
    int xq = quantize(q->g, q->index, q->sub++, x, p, INT32_MIN);
    return qdq_dequant(q, xq, p, INT32_MIN);
}

/* 8-bit weights of `rank` dims, dequantized per tensor or along `axis`
 * (len values); the scales in *scales (at least 8). */
static int qdq_weights(qdq_ctx *q, int rank, const int64_t *dims, int axis, int64_t len,
                       qparams *p)
{
    gen *g = q->g;
    int wt = q->variant == QDQ_EXACT || rd_pick(&g->in, 2) ? DT_INT8 : DT_UINT8;
    int w = q->variant == QDQ_WEIGHTS_INPUT ? add_graph_input(g, wt, rank, dims)
                                           : konst(g, wt, rank, dims, NULL, 0);
    *p = quant_params(g, q->f == FLAW_LENGTH || q->f == FLAW_ZP_DTYPE ? q->f : FLAW_NONE, wt,
                      len, false);
    return qdq_dequant(q, w, p, len ? axis : INT32_MIN);
}

/* The output: [Relu ->] QuantizeLinear -> DequantizeLinear; with
 * QDQ_SHARED_OUTPUT the float value is also added to the result. */
static void qdq_output(qdq_ctx *q, int y)
{
    gen *g = q->g;
    int out = y;
    if (q->variant == QDQ_RELU) {
        pb n = {0};
        nd_in(&n, g, y);
        out = nd_out(&n, g);
        nd_emit(g, &n, q->index, q->sub++, "Relu");
    }
    qparams p = computed_value_params(g, pick_qtype(g));
    int yq = quantize(g, q->index, q->sub++, out, &p, INT32_MIN);
    int yd = qdq_dequant(q, yq, &p, INT32_MIN);
    if (q->variant != QDQ_SHARED_OUTPUT) return;
    pb n = {0};
    nd_in(&n, g, yd), nd_in(&n, g, y);
    nd_out(&n, g);
    nd_emit(g, &n, q->index, q->sub++, "Add");
}

/* An int32 bias dequantized with scale xs * ws (per channel when the
 * weights are) and zero point 0 (or none): fuse_qdq's exact bias. */
static int qdq_bias(qdq_ctx *q, const qparams *px, const qparams *pw, int64_t m, bool per_channel)
{
    gen *g = q->g;
    double bs[8];
    for (int i = 0; i < pw->n_s; i++) {
        bs[i] = (double)((float)px->s[0] * (float)pw->s[i]);
        if (q->variant == QDQ_BIAS_SCALE_OFF) bs[i] *= 1.5;
    }
    int64_t dims[1] = {m};
    qparams pb_ = {.dtype = DT_INT32};
    pb_.scale = konst(g, DT_FLOAT, per_channel ? 1 : 0, dims, bs, pw->n_s);
    double zero = 0;
    pb_.zp = rd_pick(&g->in, 2) ? konst(g, DT_INT32, per_channel ? 1 : 0, dims, &zero, 1) : -1;
    int b = konst(g, DT_INT32, 1, dims, NULL, 0);
    return qdq_dequant(q, b, &pb_, per_channel ? 0 : INT32_MIN);
}

static qdq_ctx qdq_begin(gen *g, int index, flaw f)
{
    qdq_ctx q = {.g = g, .index = index, .f = f};
    unsigned v = rd_pick(&g->in, 2 * QDQ_VARIANT_COUNT_);
    q.variant = v < QDQ_VARIANT_COUNT_ ? (qdq_variant)v : QDQ_EXACT; /* exact half the time */
    return q;
}

static void pattern_qdq_conv(gen *g, int index, flaw f)
{
    qdq_ctx q = qdq_begin(g, index, f);
    conv_geom c = pick_conv(g, f);
    qparams px, pw;
    int xd = qdq_activation(&q, 4, c.x, &px);
    int64_t len = per_channel_len(g, &c);
    int wd = qdq_weights(&q, 4, c.w, 0, len, &pw);
    int bd = rd_pick(&g->in, 3) ? qdq_bias(&q, &px, &pw, c.w[0], len > 0) : -1;
    pb n = {0};
    nd_in(&n, g, xd), nd_in(&n, g, wd);
    if (bd >= 0) nd_in(&n, g, bd);
    int y = nd_out(&n, g);
    conv_attrs(&n, &c);
    nd_emit(g, &n, index, q.sub++, "Conv");
    qdq_output(&q, y);
}

static void pattern_qdq_matmul(gen *g, int index, flaw f)
{
    qdq_ctx q = qdq_begin(g, index, f);
    mm_shape s = pick_mm_shape(g, f);
    qparams pa, pw;
    int ad = qdq_activation(&q, s.rank, s.a, &pa);
    int wd = qdq_weights(&q, 2, s.b, 1, rd_pick(&g->in, 2) ? s.n : 0, &pw);
    pb n = {0};
    nd_in(&n, g, ad), nd_in(&n, g, wd);
    int y = nd_out(&n, g);
    nd_emit(g, &n, index, q.sub++, "MatMul");
    qdq_output(&q, y);
}

/* DequantizeLinear -> MaxPool -> QuantizeLinear with the same parameters
 * (or, for QDQ_BIAS_SCALE_OFF, other ones): an 8-bit MaxPool. */
static void pattern_qdq_maxpool(gen *g, int index, flaw f)
{
    qdq_ctx q = qdq_begin(g, index, f);
    conv_geom c = pick_conv(g, f);
    qparams p;
    int xd = qdq_activation(&q, 4, c.x, &p);
    pb n = {0};
    nd_in(&n, g, xd);
    int y = nd_out(&n, g);
    at_ints(&n, "kernel_shape", &c.w[2], 2);
    at_ints(&n, "strides", c.strides, 2);
    if (c.auto_pad) at_str(&n, "auto_pad", c.auto_pad);
    else at_ints(&n, "pads", c.pads, 4);
    nd_emit(g, &n, index, q.sub++, "MaxPool");
    qparams out = p;
    if (q.variant == QDQ_BIAS_SCALE_OFF) out = quant_params(g, FLAW_NONE, p.dtype, 0, false);
    int yq = quantize(g, index, q.sub++, y, &out, INT32_MIN);
    qdq_dequant(&q, yq, &out, INT32_MIN);
}

/* ---- RNN, GRU, LSTM ---- */

typedef struct rnn_shape {
    int cell;          /* 0 RNN, 1 GRU, 2 LSTM */
    int gates;         /* 1, 3, 4 */
    int64_t t, b, i, h, d;
    bool layout;       /* batch first */
    const char *direction;
} rnn_shape;

static rnn_shape pick_rnn(gen *g, flaw f)
{
    static const int gates[3] = {1, 3, 4};
    static const char *const dirs[3] = {"forward", "reverse", "bidirectional"};
    rnn_shape r;
    r.cell = (int)rd_pick(&g->in, 3);
    r.gates = gates[r.cell];
    r.t = 1 + rd_pick(&g->in, 4), r.b = 1 + rd_pick(&g->in, 3);
    r.i = small_dim(g), r.h = small_dim(g);
    unsigned dir = rd_pick(&g->in, 3);
    r.direction = dirs[dir];
    r.d = dir == 2 ? 2 : 1;
    r.layout = (g->opset >= 14 || f == FLAW_ATTR) && rd_pick(&g->in, 4) == 0;
    return r;
}

static int rnn_weight(gen *g, const rnn_shape *r, int64_t rows, int64_t cols)
{
    int64_t dims[3] = {r->d, rows, cols};
    return konst(g, DT_FLOAT, 3, dims, NULL, 0);
}

/* B ([D, 2GH]) or P ([D, 3H]). */
static int rnn_bias(gen *g, const rnn_shape *r, int64_t len)
{
    int64_t dims[2] = {r->d, len};
    return konst(g, DT_FLOAT, 2, dims, NULL, 0);
}

/* initial_h or initial_c: [D, B, H] (batch first: [B, D, H]), a graph input. */
static int rnn_state(gen *g, const rnn_shape *r)
{
    int64_t dims[3] = {r->d, r->b, r->h};
    if (r->layout) dims[0] = r->b, dims[1] = r->d;
    return add_graph_input(g, DT_FLOAT, 3, dims);
}

static int rnn_seq_lens(gen *g, const rnn_shape *r, flaw f)
{
    double lens[3];
    for (int k = 0; k < 3; k++) lens[k] = 1 + (double)rd_pick(&g->in, (unsigned)r->t);
    if (f == FLAW_LENGTH) lens[0] = rd_pick(&g->in, 2) ? 0 : (double)r->t + 1;
    int64_t dims[1] = {r->b};
    return konst(g, DT_INT32, 1, dims, lens, 3);
}

static void rnn_activations(gen *g, pb *n, const rnn_shape *r, flaw f)
{
    static const char *const names[6] = {"Sigmoid", "Tanh", "Relu", "HardSigmoid", "Softsign",
                                         "Swish"};
    static const int per_cell[3] = {1, 2, 3};
    const char *acts[6];
    int count = per_cell[r->cell] * (int)r->d;
    for (int k = 0; k < count; k++) acts[k] = names[rd_pick(&g->in, f == FLAW_ATTR ? 6 : 5)];
    if (f == FLAW_ATTR && rd_pick(&g->in, 2)) count--;
    at_strs(n, "activations", acts, count);
}

static void rnn_attrs(gen *g, pb *n, const rnn_shape *r, flaw f)
{
    if (rd_pick(&g->in, 4) || f == FLAW_ATTR) at_int(n, "hidden_size", r->h + (f == FLAW_ATTR));
    if (r->d == 2 || rd_pick(&g->in, 2)) at_str(n, "direction", r->direction);
    if (r->layout) at_int(n, "layout", 1);
    if (rd_pick(&g->in, 4) == 0) rnn_activations(g, n, r, f);
    if (rd_pick(&g->in, 4) == 0) at_float(n, "clip", f == FLAW_ATTR ? -1.0f : 0.5f + (float)rd_pick(&g->in, 4));
    if (r->cell == 1 && rd_pick(&g->in, 2)) at_int(n, "linear_before_reset", 1);
    if (r->cell == 2 && rd_pick(&g->in, 4) == 0) at_int(n, "input_forget", 1);
}

/* X, W, R, B, sequence_lens, initial_h (, initial_c, P): optional inputs
 * left out or given by the recipe. */
static void rnn_inputs(gen *g, pb *n, const rnn_shape *r, flaw f)
{
    int64_t gh = r->gates * r->h + (f == FLAW_SHAPE);
    int64_t x_dims[3] = {r->t, r->b, r->i};
    if (r->layout) x_dims[0] = r->b, x_dims[1] = r->t;
    int ins[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    ins[0] = float_source(g, f, 3, x_dims); /* one statement each: the order names values */
    ins[1] = rnn_weight(g, r, gh, r->i);
    ins[2] = rnn_weight(g, r, gh, r->h);
    unsigned opt = rd_byte(&g->in);
    if (opt & 1) ins[3] = rnn_bias(g, r, 2 * gh);
    if (opt & 2) ins[4] = rnn_seq_lens(g, r, f);
    if (opt & 4) ins[5] = rnn_state(g, r);
    if (r->cell == 2 && (opt & 8)) ins[6] = rnn_state(g, r);
    if (r->cell == 2 && (opt & 16)) ins[7] = rnn_bias(g, r, 3 * r->h);
    int last = 7;
    while (last > 2 && ins[last] < 0) last--;
    for (int k = 0; k <= last; k++) nd_in(n, g, ins[k]);
}

static void pattern_recurrent(gen *g, int index, flaw f)
{
    static const char *const ops[3] = {"RNN", "GRU", "LSTM"};
    rnn_shape r = pick_rnn(g, f);
    pb n = {0};
    rnn_inputs(g, &n, &r, f);
    /* outputs Y, Y_h (, Y_c): a mask picks the ones present, at least one */
    int n_outs = r.cell == 2 ? 3 : 2;
    unsigned mask = 1 + rd_pick(&g->in, (1u << n_outs) - 1);
    int top = n_outs - 1;
    while (!(mask >> top & 1)) top--;
    for (int k = 0; k <= top; k++) {
        if (mask >> k & 1) nd_out(&n, g);
        else pb_str(&n, 2, "");
    }
    rnn_attrs(g, &n, &r, f);
    nd_emit(g, &n, index, 0, ops[r.cell]);
}

/* ---- dispatch ---- */

typedef void (*pattern_fn)(gen *g, int index, flaw f);

static const pattern_fn PATTERNS[] = {
    pattern_qdq,          pattern_dynamic_quant, pattern_matmul_integer, pattern_qlinear_matmul,
    pattern_conv_integer, pattern_qlinear_conv,  pattern_qdq_conv,       pattern_qdq_matmul,
    pattern_qdq_maxpool,  pattern_recurrent,
};
#define N_PATTERNS (sizeof PATTERNS / sizeof PATTERNS[0])

void recipe_add_pattern(gen *g, int index, unsigned which)
{
    flaw f = read_mood(g);
    PATTERNS[which % N_PATTERNS](g, index, f);
}
