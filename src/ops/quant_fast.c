/* QLinearConv through the int8 micro-kernels (issue #10; the kernels are
 * codegen/uk/qgemm_u8s8.c, the arithmetic docs/quantization.md).
 *
 * When the weights, scales, zero points and bias are constants, the op's
 * compiled form is one extern stage (te.h) instead of the generic int32
 * loop nest:
 *
 *   per image n, per group g:
 *     parallel over k chunks:    smelt.qpack_u8   x -> Bp [K4][Pp][4] u8 (im2col)
 *     parallel over row x pixel: smelt.qgemm_u8s8 Bp, Ap -> y (requantized in
 *                                the epilogue, u8 or s8)
 *
 * Everything that depends only on constants is computed here, at compile
 * time: the weights minus their zero point packed as Ap [G][Mpad][K4][4] s8,
 * comp = bias - x_zp * sum_k Ap per output channel (the zero-point term of
 * u8 x s8 products), the requantization multipliers in float64 (the
 * reference's value), and whether vpmaddubsw may be used (no pair of
 * weights can saturate 16 bits with u8 inputs).  The results equal the
 * reference kernel's bit for bit (unit/test_qconv_kernels). */
#include <math.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/op.h"
#include "ops/quant.h"
#include "te/te.h"

/* QLinearConv's inputs (quant.c) */
enum { QF_X, QF_XS, QF_XZ, QF_W, QF_WS, QF_WZ, QF_YS, QF_YZ, QF_B };

/* Packed rows and pixels: multiples of the kernel's blocks (uk/qgemm_u8s8.c). */
#define QF_ROW_ALIGN 8
#define QF_PIX_ALIGN 32
/* Task sizes: rows x pixels of one product task, k chunks of the pack. */
#define QF_TASK_ROWS 64
#define QF_TASK_PIXELS 128
#define QF_PACK_TASKS 8

typedef struct qconv_plan {
    int64_t N, C, H, W, Co, G, Cg, M, KH, KW, Ho, Wo;
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t K, K4, Mpad, P, Pp;
    int64_t xz, flip, yz, lo, hi;
    bool safe16;
    const te_tensor *x, *ap, *comp, *mult;
} qconv_plan;

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/* A constant input (NULL when omitted or not constant); *present says
 * whether the node has it at all. */
static const smelt_tensor *const_input(const op_compute_args *a, int i, bool *present)
{
    *present = i < a->node->n_inputs && a->node->inputs[i];
    return *present ? a->in_const[i] : NULL;
}

/* The constants the kernels need, all present and known; shapes were
 * checked by the op's compute before. */
static bool constants_known(const op_compute_args *a)
{
    static const int needed[] = {QF_XS, QF_W, QF_WS, QF_YS, QF_YZ};
    static const int optional[] = {QF_XZ, QF_WZ, QF_B};
    bool present;
    for (size_t i = 0; i < sizeof needed / sizeof *needed; i++)
        if (!const_input(a, needed[i], &present)) return false;
    for (size_t i = 0; i < sizeof optional / sizeof *optional; i++)
        if (!const_input(a, optional[i], &present) && present) return false;
    return true;
}

static bool is_8bit(smelt_dtype dt) { return dt == SMELT_DT_UINT8 || dt == SMELT_DT_INT8; }

/* One input and one output channel per group: smelt.qdwconv_u8. */
static bool is_depthwise(const qconv_plan *q) { return q->G > 1 && q->G == q->C && q->G == q->Co; }

/* Geometry: 2-D, static, groups of at least QF_ROW_ALIGN output channels
 * (the GEMM kernel would pad a smaller group's rows to 8) or depthwise. */
static bool plan_shape(op_compute_args *a, qconv_plan *q)
{
    const te_tensor *x = a->in[QF_X];
    if (x->kind != TE_PLACEHOLDER || x->n_axes != 4) return false;
    smelt_tensor xt = op_conv_te_type(x);
    op_conv_shape cs;
    if (op_conv_resolve(a->ctx, a->node, &xt, a->in_const[QF_W], &cs) != SMELT_OK) return false;
    if (cs.transpose || cs.win.n_spatial != 2) return false;
    *q = (qconv_plan){.N = cs.batch, .C = cs.in_channels, .H = cs.win.in[0], .W = cs.win.in[1],
                      .Co = cs.out_channels, .G = cs.group, .KH = cs.win.kernel[0],
                      .KW = cs.win.kernel[1], .Ho = cs.win.out[0], .Wo = cs.win.out[1],
                      .sh = cs.win.stride[0], .sw = cs.win.stride[1], .ph = cs.win.pad_begin[0],
                      .pw = cs.win.pad_begin[1], .dh = cs.win.dilation[0], .dw = cs.win.dilation[1],
                      .x = x};
    for (int i = 0; i < 4; i++)
        if (x->buf->shape[i] <= 0) return false;
    if (q->Ho <= 0 || q->Wo <= 0 || q->G < 1) return false;
    q->Cg = q->C / q->G;
    q->M = q->Co / q->G;
    if (q->G > 1 && q->M < QF_ROW_ALIGN && !is_depthwise(q)) return false;
    q->K = q->Cg * q->KH * q->KW;
    if (q->K <= 0 || q->M <= 0) return false; /* empty: the loop nest handles it */
    q->K4 = (q->K + 3) / 4;
    q->Mpad = round_up(q->M, QF_ROW_ALIGN);
    q->P = q->Ho * q->Wo;
    q->Pp = round_up(q->P, QF_PIX_ALIGN);
    return true;
}

/* A te constant placeholder of n elements of dt, with data (owned by g). */
static te_tensor *const_tensor(op_compute_args *a, const char *name, smelt_dtype dt, int64_t n,
                               void *data)
{
    return te_const_tensor(a->te, name, dt, 1, &n, data);
}

/* The zero point of output channel co (per tensor or per channel). */
static int64_t weight_zero_point(const smelt_tensor *wz, int64_t co)
{
    return wz ? op_get_i64(wz, op_numel(wz) == 1 ? 0 : co) : 0;
}

/* w - w_zp of output channel co at k (w is u8 or s8: read directly, this
 * runs over every weight of the model). */
static int64_t shifted_weight(const smelt_tensor *w, int64_t zp, int64_t i)
{
    return (w->dtype == SMELT_DT_INT8 ? (int64_t)((const int8_t *)w->data)[i]
                                      : (int64_t)((const uint8_t *)w->data)[i]) - zp;
}

/* Whether every shifted weight fits s8 (the kernels' B operand). */
static bool weights_fit_s8(const op_compute_args *a, const qconv_plan *q)
{
    bool present;
    const smelt_tensor *w = a->in_const[QF_W], *wz = const_input(a, QF_WZ, &present);
    for (int64_t co = 0; co < q->Co; co++) {
        int64_t zp = weight_zero_point(wz, co);
        for (int64_t k = 0; k < q->K; k++) {
            int64_t v = shifted_weight(w, zp, co * q->K + k);
            if (v < -128 || v > 127) return false;
        }
    }
    return true;
}

/* Whether vpmaddubsw cannot saturate on this row: it adds the products of
 * k = 2i, 2i + 1 with u8 inputs (up to 255) in 16 bits. */
static bool row_safe16(const int8_t *row, int64_t n)
{
    for (int64_t k = 0; k < n; k += 2) {
        int64_t pos = (row[k] > 0 ? row[k] : 0) + (row[k + 1] > 0 ? row[k + 1] : 0);
        int64_t neg = (row[k] < 0 ? row[k] : 0) + (row[k + 1] < 0 ? row[k + 1] : 0);
        if (255 * pos > 32767 || 255 * neg < -32768) return false;
    }
    return true;
}

/* Ap, comp, mult and safe16 from the constants. */
static bool pack_constants(op_compute_args *a, qconv_plan *q)
{
    bool present;
    const smelt_tensor *w = a->in_const[QF_W], *wz = const_input(a, QF_WZ, &present);
    const smelt_tensor *bias = const_input(a, QF_B, &present), *ws = a->in_const[QF_WS];
    int64_t rows = q->G * q->Mpad;
    int8_t *ap = smelt_calloc((size_t)(rows * q->K4 * 4), 1);
    int32_t *comp = smelt_calloc((size_t)rows, sizeof *comp);
    double *mult = smelt_calloc((size_t)rows, sizeof *mult);
    if (!ap || !comp || !mult) {
        smelt_free(ap), smelt_free(comp), smelt_free(mult);
        return false;
    }
    double xs = op_get_f64(a->in_const[QF_XS], 0), ys = op_get_f64(a->in_const[QF_YS], 0);
    smelt_dtype sdt = a->in_const[QF_XS]->dtype;
    q->safe16 = true;
    for (int64_t g = 0; g < q->G; g++)
        for (int64_t m = 0; m < q->M; m++) {
            int64_t co = g * q->M + m, row = g * q->Mpad + m, sum = 0, zp = weight_zero_point(wz, co);
            int8_t *dst = ap + row * q->K4 * 4;
            for (int64_t k = 0; k < q->K; k++) sum += dst[k] = (int8_t)shifted_weight(w, zp, co * q->K + k);
            q->safe16 = q->safe16 && row_safe16(dst, q->K4 * 4);
            int64_t b = bias ? op_get_i64(bias, co) : 0;
            comp[row] = (int32_t)(uint32_t)(uint64_t)(b - q->xz * sum);
            mult[row] = op_quant_multiplier(sdt, xs, op_get_f64(ws, op_numel(ws) == 1 ? 0 : co), ys);
        }
    q->ap = const_tensor(a, "qconv_w", SMELT_DT_INT8, rows * q->K4 * 4, ap);
    q->comp = const_tensor(a, "qconv_comp", SMELT_DT_INT32, rows, comp);
    q->mult = const_tensor(a, "qconv_mult", SMELT_DT_FLOAT64, rows, mult);
    return q->ap && q->comp && q->mult;
}

static ir_expr *ii(ir_builder *b, int64_t v) { return ir_int(b, v); }

/* The pack of image n, group g: parallel over chunks of k. */
static ir_stmt *pack_stmt(ir_builder *b, const qconv_plan *q, ir_buffer *bp, ir_expr *x_off)
{
    int64_t kt = (q->K4 + QF_PACK_TASKS - 1) / QF_PACK_TASKS, tasks = (q->K4 + kt - 1) / kt;
    ir_var *t = ir_var_new(b, "qk", SMELT_DT_INT64);
    ir_call_arg args[21] = {
        {bp, ii(b, 0)}, {q->x->buf, x_off}, {NULL, ir_var_ref(b, t)}, {NULL, ii(b, kt)},
        {NULL, ii(b, q->K4)}, {NULL, ii(b, q->K)}, {NULL, ii(b, q->P)}, {NULL, ii(b, q->Pp)},
        {NULL, ii(b, q->H)}, {NULL, ii(b, q->W)}, {NULL, ii(b, q->KH)}, {NULL, ii(b, q->KW)},
        {NULL, ii(b, q->Wo)}, {NULL, ii(b, q->sh)}, {NULL, ii(b, q->sw)}, {NULL, ii(b, q->ph)},
        {NULL, ii(b, q->pw)}, {NULL, ii(b, q->dh)}, {NULL, ii(b, q->dw)}, {NULL, ii(b, q->xz)},
        {NULL, ii(b, q->flip)},
    };
    ir_stmt *call = ir_call_stmt(b, "smelt.qpack_u8", 21, args);
    return ir_for(b, t, ii(b, 0), ii(b, tasks), tasks > 1 ? IR_FOR_PARALLEL : IR_FOR_SERIAL, call);
}

/* The products of image n, group g: parallel over row chunks x pixel chunks. */
static ir_stmt *gemm_stmt(ir_builder *b, const qconv_plan *q, ir_buffer *bp, ir_buffer *y,
                          ir_expr *y_off, ir_expr *row_off)
{
    int64_t mt = q->Mpad < QF_TASK_ROWS ? q->Mpad : QF_TASK_ROWS;
    int64_t n_mt = (q->Mpad + mt - 1) / mt, n_pt = (q->Pp + QF_TASK_PIXELS - 1) / QF_TASK_PIXELS;
    ir_var *t = ir_var_new(b, "qt", SMELT_DT_INT64);
    ir_call_arg args[18] = {
        {y, y_off}, {bp, ii(b, 0)}, {q->ap->buf, ir_mul(b, row_off, ii(b, q->K4 * 4))},
        {q->comp->buf, row_off}, {q->mult->buf, row_off}, {NULL, ir_var_ref(b, t)},
        {NULL, ii(b, n_pt)}, {NULL, ii(b, mt)}, {NULL, ii(b, QF_TASK_PIXELS)}, {NULL, ii(b, q->M)},
        {NULL, ii(b, q->Mpad)}, {NULL, ii(b, q->P)}, {NULL, ii(b, q->Pp)}, {NULL, ii(b, q->K4)},
        {NULL, ii(b, q->yz)}, {NULL, ii(b, q->lo)}, {NULL, ii(b, q->hi)},
        {NULL, ii(b, q->safe16 ? 1 : 0)},
    };
    ir_stmt *call = ir_call_stmt(b, "smelt.qgemm_u8s8", 18, args);
    int64_t tasks = n_mt * n_pt;
    return ir_for(b, t, ii(b, 0), ii(b, tasks), tasks > 1 ? IR_FOR_PARALLEL : IR_FOR_SERIAL, call);
}

static ir_stmt *build_qconv(te_graph *g, ir_buffer *out, void *user)
{
    const qconv_plan *q = user;
    ir_builder *b = &g->b;
    int64_t bp_elems = q->K4 * q->Pp * 4;
    ir_buffer *bp = ir_buffer_new(b, "qconv_cols", SMELT_DT_UINT8, 1, &bp_elems, IR_BUF_TEMP);
    ir_var *n = ir_var_new(b, "qn", SMELT_DT_INT64), *gv = ir_var_new(b, "qg", SMELT_DT_INT64);
    ir_expr *ng = ir_add(b, ir_mul(b, ir_var_ref(b, n), ii(b, q->G)), ir_var_ref(b, gv));
    ir_expr *x_off = ir_mul(b, ng, ii(b, q->Cg * q->H * q->W));
    ir_expr *y_off = ir_mul(b, ng, ii(b, q->M * q->P));
    ir_expr *row_off = ir_mul(b, ir_var_ref(b, gv), ii(b, q->Mpad));
    ir_stmt *body = ir_seq2(b, pack_stmt(b, q, bp, x_off), gemm_stmt(b, q, bp, out, y_off, row_off));
    body = ir_for(b, gv, ii(b, 0), ii(b, q->G), IR_FOR_SERIAL, body);
    body = ir_for(b, n, ii(b, 0), ii(b, q->N), IR_FOR_SERIAL, body);
    body = ir_allocate(b, bp, body);
    return b->failed ? NULL : body;
}

/* ---- depthwise: smelt.qdwconv_u8 ----------------------------------------------------
 *
 *   per image n: parallel over channel chunks: smelt.qdwconv_u8 x -> y
 *
 * The weights minus their zero point as int16 tap pairs, comp and the
 * multipliers per channel at compile time; each task pads its channels'
 * planes into its own slice of a temporary (layout in uk/qgemm_u8s8.c). */

#define QF_DW_TASKS 16

typedef struct qdw_plan {
    const qconv_plan *q;
    const te_tensor *w16;
    int64_t ct, tasks, slice;
} qdw_plan;

/* w16, comp and mult into q and d. */
static bool qdw_pack_constants(op_compute_args *a, qconv_plan *q, qdw_plan *d)
{
    bool present;
    const smelt_tensor *w = a->in_const[QF_W], *wz = const_input(a, QF_WZ, &present);
    const smelt_tensor *bias = const_input(a, QF_B, &present), *ws = a->in_const[QF_WS];
    int64_t T = q->KH * q->KW, TP = (T + 1) / 2;
    int16_t *w16 = smelt_calloc((size_t)(q->C * TP * 2), sizeof *w16);
    int32_t *comp = smelt_calloc((size_t)q->C, sizeof *comp);
    double *mult = smelt_calloc((size_t)q->C, sizeof *mult);
    if (!w16 || !comp || !mult) {
        smelt_free(w16), smelt_free(comp), smelt_free(mult);
        return false;
    }
    double xs = op_get_f64(a->in_const[QF_XS], 0), ys = op_get_f64(a->in_const[QF_YS], 0);
    for (int64_t c = 0; c < q->C; c++) {
        int64_t zp = weight_zero_point(wz, c), sum = 0;
        for (int64_t i = 0; i < T; i++) sum += w16[c * TP * 2 + i] = (int16_t)shifted_weight(w, zp, c * T + i);
        int64_t b = bias ? op_get_i64(bias, c) : 0;
        comp[c] = (int32_t)(uint32_t)(uint64_t)(b - q->xz * sum);
        mult[c] = op_quant_multiplier(a->in_const[QF_XS]->dtype, xs,
                                      op_get_f64(ws, op_numel(ws) == 1 ? 0 : c), ys);
    }
    d->w16 = const_tensor(a, "qdw_w", SMELT_DT_INT16, q->C * TP * 2, w16);
    q->comp = const_tensor(a, "qdw_comp", SMELT_DT_INT32, q->C, comp);
    q->mult = const_tensor(a, "qdw_mult", SMELT_DT_FLOAT64, q->C, mult);
    return d->w16 && q->comp && q->mult;
}

static ir_stmt *build_qdwconv(te_graph *g, ir_buffer *out, void *user)
{
    const qdw_plan *d = user;
    const qconv_plan *q = d->q;
    ir_builder *b = &g->b;
    int64_t tmp_elems = d->tasks * d->slice;
    ir_buffer *tmp = ir_buffer_new(b, "qdw_planes", SMELT_DT_UINT8, 1, &tmp_elems, IR_BUF_TEMP);
    ir_var *n = ir_var_new(b, "qn", SMELT_DT_INT64), *t = ir_var_new(b, "qt", SMELT_DT_INT64);
    ir_expr *x_off = ir_mul(b, ir_var_ref(b, n), ii(b, q->C * q->H * q->W));
    ir_expr *y_off = ir_mul(b, ir_var_ref(b, n), ii(b, q->C * q->P));
    ir_call_arg args[26] = {
        {out, y_off}, {q->x->buf, x_off}, {d->w16->buf, ii(b, 0)}, {q->comp->buf, ii(b, 0)},
        {q->mult->buf, ii(b, 0)}, {tmp, ii(b, 0)}, {NULL, ir_var_ref(b, t)}, {NULL, ii(b, d->ct)},
        {NULL, ii(b, q->C)}, {NULL, ii(b, q->H)}, {NULL, ii(b, q->W)}, {NULL, ii(b, q->KH)},
        {NULL, ii(b, q->KW)}, {NULL, ii(b, q->Ho)}, {NULL, ii(b, q->Wo)}, {NULL, ii(b, q->sh)},
        {NULL, ii(b, q->sw)}, {NULL, ii(b, q->ph)}, {NULL, ii(b, q->pw)}, {NULL, ii(b, q->dh)},
        {NULL, ii(b, q->dw)}, {NULL, ii(b, q->xz)}, {NULL, ii(b, q->flip)}, {NULL, ii(b, q->yz)},
        {NULL, ii(b, q->lo)}, {NULL, ii(b, q->hi)},
    };
    ir_stmt *call = ir_call_stmt(b, "smelt.qdwconv_u8", 26, args);
    ir_stmt *body = ir_for(b, t, ii(b, 0), ii(b, d->tasks), d->tasks > 1 ? IR_FOR_PARALLEL : IR_FOR_SERIAL, call);
    body = ir_for(b, n, ii(b, 0), ii(b, q->N), IR_FOR_SERIAL, body);
    body = ir_allocate(b, tmp, body);
    return b->failed ? NULL : body;
}

static smelt_status qdwconv_fast(op_compute_args *a, qconv_plan *q, te_tensor **out)
{
    qdw_plan *d = smelt_arena_alloc(&a->te->arena, sizeof *d);
    if (!d) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    d->q = q;
    d->ct = (q->C + QF_DW_TASKS - 1) / QF_DW_TASKS;
    d->tasks = (q->C + d->ct - 1) / d->ct;
    /* one channel's phases: uk/qgemm_u8s8.c's SMELT_UKQ_DW_HP x SMELT_UKQ_DW_WQ, sw of them */
    int64_t hp = (q->Ho - 1) * q->sh + (q->KH - 1) * q->dh + 1;
    int64_t wq = q->Wo + 16 + (q->KW - 1) * q->dw / q->sw;
    d->slice = q->sw * hp * wq;
    if (!qdw_pack_constants(a, q, d)) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    smelt_dtype ydt = a->in_const[QF_YZ]->dtype;
    const smelt_tensor *y = &a->out_type[0];
    te_tensor *inputs[4] = {(te_tensor *)q->x, (te_tensor *)d->w16, (te_tensor *)q->comp,
                            (te_tensor *)q->mult};
    double flops = 2.0 * (double)q->N * (double)q->C * (double)q->P * (double)(q->KH * q->KW);
    *out = te_extern_stage(a->te, "y", ydt, y->rank, y->dims, 4, inputs, build_qdwconv, d, "qdwconv_int8",
                           flops);
    return *out ? SMELT_OK : smelt_ctx_status(a->ctx);
}

smelt_status op_qlinear_conv_fast(op_compute_args *a, te_tensor **out)
{
    *out = NULL;
    if (!constants_known(a)) return SMELT_OK;
    smelt_dtype xdt = a->in[QF_X]->buf->dtype, ydt = a->in_const[QF_YZ]->dtype;
    if (!is_8bit(xdt) || !is_8bit(ydt) || !is_8bit(a->in_const[QF_W]->dtype)) return SMELT_OK;
    qconv_plan *q = smelt_arena_alloc(&a->te->arena, sizeof *q);
    if (!q) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    if (!plan_shape(a, q)) return SMELT_OK;
    bool present;
    const smelt_tensor *xz = const_input(a, QF_XZ, &present);
    q->flip = xdt == SMELT_DT_INT8 ? 0x80 : 0;
    q->xz = (xz ? op_get_i64(xz, 0) : 0) + (q->flip ? 128 : 0);
    q->yz = op_get_i64(a->in_const[QF_YZ], 0);
    q->lo = ydt == SMELT_DT_INT8 ? -128 : 0;
    q->hi = ydt == SMELT_DT_INT8 ? 127 : 255;
    if (is_depthwise(q)) return qdwconv_fast(a, q, out);
    if (!weights_fit_s8(a, q)) return SMELT_OK;
    if (!pack_constants(a, q)) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    const smelt_tensor *y = &a->out_type[0];
    te_tensor *inputs[4] = {(te_tensor *)q->x, (te_tensor *)q->ap, (te_tensor *)q->comp,
                            (te_tensor *)q->mult};
    double flops = 2.0 * (double)q->N * (double)q->Co * (double)q->P * (double)q->K;
    *out = te_extern_stage(a->te, "y", ydt, y->rank, y->dims, 4, inputs, build_qconv, q, "qconv_int8",
                           flops);
    return *out ? SMELT_OK : smelt_ctx_status(a->ctx);
}

/* ---- MatMulInteger and QLinearMatMul with a constant B --------------------------------
 *
 *   parallel over row x column chunks: smelt.qmatmul_u8s8 A, Bq -> y
 *
 * A (any rank >= 2, its leading dims flattened into rows) is read in place;
 * B [K, N] minus its zero point is packed at compile time as Bq (layout in
 * uk/qgemm_u8s8.c) with its column sums, and QLinearMatMul's per-column
 * multipliers a_scale * b_scale / y_scale.  A's zero point is per tensor
 * and may be computed at run time (DynamicQuantizeLinear's output). */

#define QM_COL_ALIGN 16 /* the kernel's column block */
#define QM_ROW_ALIGN 4  /* and its rows */
#define QM_TASK_ROWS 64
#define QM_TASK_COLS 128

typedef struct qmatmul_plan {
    int64_t M, N, K, K4, Npad;
    int64_t flip, yz, lo, hi;
    bool requant, safe16;
    const te_tensor *a, *az, *bq, *colsum, *mult;
} qmatmul_plan;

/* Input positions: MatMulInteger (a, b, a_zp, b_zp) or QLinearMatMul (a,
 * a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp); -1: not an input. */
typedef struct qmatmul_inputs {
    int a, az, b, bz, as, bs, ys, yz;
} qmatmul_inputs;

static const qmatmul_inputs k_matmul_integer = {0, 2, 1, 3, -1, -1, -1, -1};
static const qmatmul_inputs k_qlinear_matmul = {0, 2, 3, 5, 1, 4, 6, 7};

static bool has_input(const op_compute_args *a, int i)
{
    return i >= 0 && i < a->node->n_inputs && a->node->inputs[i];
}

/* A per-tensor or per-column (1-D [N]) constant, or absent. */
static bool column_param_ok(const op_compute_args *a, int i, int64_t N)
{
    if (!has_input(a, i)) return true;
    const smelt_tensor *p = a->in_const[i];
    return p && (op_numel(p) == 1 || (p->rank == 1 && p->dims[0] == N));
}

static int64_t column_value_index(const smelt_tensor *p, int64_t n) { return op_numel(p) == 1 ? 0 : n; }

/* A, B and the params in the forms the kernel takes. */
static bool qmatmul_shape_ok(const op_compute_args *a, const qmatmul_inputs *in, qmatmul_plan *q)
{
    const te_tensor *x = a->in[in->a];
    const smelt_tensor *b = a->in_const[in->b];
    if (x->kind != TE_PLACEHOLDER || x->n_axes < 2 || !b || b->rank != 2) return false;
    if (!is_8bit(x->buf->dtype) || !is_8bit(b->dtype)) return false;
    for (int d = 0; d < x->n_axes; d++)
        if (x->buf->shape[d] <= 0) return false;
    q->K = b->dims[0];
    q->N = b->dims[1];
    if (x->buf->shape[x->n_axes - 1] != q->K || q->K <= 0 || q->N <= 0) return false;
    q->M = 1;
    for (int d = 0; d < x->n_axes - 1; d++) q->M *= x->buf->shape[d];
    if (!column_param_ok(a, in->bz, q->N)) return false;
    if (has_input(a, in->az)) { /* per tensor, constant or computed */
        const te_tensor *az = a->in[in->az];
        int64_t n = 1;
        for (int d = 0; d < az->n_axes; d++) n *= az->buf->shape[d];
        if (az->kind != TE_PLACEHOLDER || n != 1 || az->n_axes > 1) return false;
    }
    if (in->as < 0) return true;
    const smelt_tensor *as = a->in_const[in->as], *ys = a->in_const[in->ys], *yz = a->in_const[in->yz];
    return as && op_numel(as) == 1 && ys && yz && is_8bit(yz->dtype) && a->in_const[in->bs] &&
           column_param_ok(a, in->bs, q->N);
}

/* Bq (B - b_zp packed), colsum, safe16 and the multipliers; false when a
 * shifted value leaves s8 (u8 weights without a zero point: the loop nest). */
static bool qmatmul_pack(op_compute_args *a, const qmatmul_inputs *in, qmatmul_plan *q, bool *fits)
{
    const smelt_tensor *b = a->in_const[in->b];
    const smelt_tensor *bz = has_input(a, in->bz) ? a->in_const[in->bz] : NULL;
    q->K4 = (q->K + 3) / 4;
    q->Npad = round_up(q->N, QM_COL_ALIGN);
    int8_t *bq = smelt_calloc((size_t)(q->Npad * q->K4 * 4), 1);
    int32_t *colsum = smelt_calloc((size_t)q->Npad, sizeof *colsum);
    double *mult = smelt_calloc((size_t)q->Npad, sizeof *mult);
    if (!bq || !colsum || !mult) {
        smelt_free(bq), smelt_free(colsum), smelt_free(mult);
        return false;
    }
    *fits = true;
    for (int64_t n = 0; n < q->N && *fits; n++) {
        int64_t zp = bz ? op_get_i64(bz, column_value_index(bz, n)) : 0, sum = 0;
        int8_t *panel = bq + (n / 16) * q->K4 * 64 + (n % 16) * 4;
        for (int64_t k = 0; k < q->K; k++) {
            int64_t v = shifted_weight(b, zp, k * q->N + n);
            if (v < -128 || v > 127) *fits = false;
            panel[(k / 4) * 64 + k % 4] = (int8_t)v;
            sum += v;
        }
        colsum[n] = (int32_t)(uint32_t)(uint64_t)sum;
    }
    q->safe16 = true; /* vpmaddubsw adds the products of k = 2i, 2i + 1 */
    for (int64_t n = 0; n < q->N && *fits && q->safe16; n++)
        for (int64_t k4 = 0; k4 < q->K4 && q->safe16; k4++) {
            const int8_t *w = bq + (n / 16) * q->K4 * 64 + k4 * 64 + (n % 16) * 4;
            q->safe16 = row_safe16(w, 4);
        }
    if (q->requant) {
        const smelt_tensor *bs = a->in_const[in->bs];
        double as = op_get_f64(a->in_const[in->as], 0), ys = op_get_f64(a->in_const[in->ys], 0);
        for (int64_t n = 0; n < q->N; n++)
            mult[n] = op_quant_multiplier(a->in_const[in->as]->dtype, as,
                                          op_get_f64(bs, column_value_index(bs, n)), ys);
    }
    q->bq = const_tensor(a, "qmm_b", SMELT_DT_INT8, q->Npad * q->K4 * 4, bq);
    q->colsum = const_tensor(a, "qmm_colsum", SMELT_DT_INT32, q->Npad, colsum);
    q->mult = const_tensor(a, "qmm_mult", SMELT_DT_FLOAT64, q->Npad, mult);
    return q->bq && q->colsum && q->mult;
}

static ir_stmt *build_qmatmul(te_graph *g, ir_buffer *out, void *user)
{
    const qmatmul_plan *q = user;
    ir_builder *b = &g->b;
    int64_t mt = q->M < QM_TASK_ROWS ? round_up(q->M, QM_ROW_ALIGN) : QM_TASK_ROWS;
    int64_t nt = q->Npad < QM_TASK_COLS ? q->Npad : QM_TASK_COLS;
    int64_t n_mt = (q->M + mt - 1) / mt, n_nt = (q->N + nt - 1) / nt, tasks = n_mt * n_nt;
    ir_var *t = ir_var_new(b, "qt", SMELT_DT_INT64);
    ir_call_arg args[19] = {
        {out, ii(b, 0)}, {q->a->buf, ii(b, 0)}, {q->bq->buf, ii(b, 0)}, {q->colsum->buf, ii(b, 0)},
        {q->mult->buf, ii(b, 0)}, {q->az->buf, ii(b, 0)}, {NULL, ir_var_ref(b, t)},
        {NULL, ii(b, n_nt)}, {NULL, ii(b, mt)}, {NULL, ii(b, nt)}, {NULL, ii(b, q->M)},
        {NULL, ii(b, q->N)}, {NULL, ii(b, q->K)}, {NULL, ii(b, q->flip)}, {NULL, ii(b, q->yz)},
        {NULL, ii(b, q->lo)}, {NULL, ii(b, q->hi)}, {NULL, ii(b, q->requant ? 1 : 0)},
        {NULL, ii(b, q->safe16 ? 1 : 0)},
    };
    ir_stmt *call = ir_call_stmt(b, "smelt.qmatmul_u8s8", 19, args);
    ir_stmt *s = ir_for(b, t, ii(b, 0), ii(b, tasks), tasks > 1 ? IR_FOR_PARALLEL : IR_FOR_SERIAL, call);
    return b->failed ? NULL : s;
}

/* A's zero point as a te tensor: the input, or a constant 0 of A's type. */
static const te_tensor *qmatmul_zero_point(op_compute_args *a, const qmatmul_inputs *in)
{
    if (has_input(a, in->az)) return a->in[in->az];
    void *zero = smelt_calloc(1, 1);
    return zero ? const_tensor(a, "qmm_azp", a->in[in->a]->buf->dtype, 1, zero) : NULL;
}

static smelt_status qmatmul_fast(op_compute_args *a, const qmatmul_inputs *in, te_tensor **out)
{
    *out = NULL;
    qmatmul_plan *q = smelt_arena_alloc(&a->te->arena, sizeof *q);
    if (!q) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    *q = (qmatmul_plan){.a = a->in[in->a], .requant = in->as >= 0};
    if (!qmatmul_shape_ok(a, in, q)) return SMELT_OK;
    smelt_dtype ydt = q->requant ? a->in_const[in->yz]->dtype : SMELT_DT_INT32;
    q->flip = q->a->buf->dtype == SMELT_DT_INT8;
    if (q->requant) {
        q->yz = op_get_i64(a->in_const[in->yz], 0);
        q->lo = ydt == SMELT_DT_INT8 ? -128 : 0;
        q->hi = ydt == SMELT_DT_INT8 ? 127 : 255;
    }
    bool fits;
    if (!qmatmul_pack(a, in, q, &fits)) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    if (!fits) return SMELT_OK; /* the packed constants stay unused */
    if (!(q->az = qmatmul_zero_point(a, in))) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    const smelt_tensor *y = &a->out_type[0];
    te_tensor *inputs[5] = {(te_tensor *)q->a, (te_tensor *)q->bq, (te_tensor *)q->colsum,
                            (te_tensor *)q->mult, (te_tensor *)q->az};
    double flops = 2.0 * (double)q->M * (double)q->N * (double)q->K;
    *out = te_extern_stage(a->te, "y", ydt, y->rank, y->dims, 5, inputs, build_qmatmul, q, "qmatmul_int8",
                           flops);
    return *out ? SMELT_OK : smelt_ctx_status(a->ctx);
}

smelt_status op_matmul_integer_fast(op_compute_args *a, te_tensor **out)
{
    return qmatmul_fast(a, &k_matmul_integer, out);
}

smelt_status op_qlinear_matmul_fast(op_compute_args *a, te_tensor **out)
{
    return qmatmul_fast(a, &k_qlinear_matmul, out);
}

/* ---- smelt.QLinearAdd ---------------------------------------------------------------- */

/* Inputs a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
 * y_zero_point (com.microsoft's QLinearAdd order); made by fuse_qdq from
 * QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b)) and computing
 * exactly what those three float32 ops compute, so the rewrite changes no
 * value.  a and b have one shape (no broadcasting); the scales are float32
 * scalars, the zero points 8-bit scalars of their tensor's type. */
enum { QA_A, QA_AS, QA_AZ, QA_B, QA_BS, QA_BZ, QA_YS, QA_YZ };

static bool is_scalar(const smelt_tensor *t) { return t && op_numel(t) == 1 && t->rank <= 1; }

static smelt_status qadd_check(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const smelt_tensor *a = in[QA_A], *b = in[QA_B];
    if (!is_8bit(a->dtype) || !is_8bit(b->dtype) || !is_8bit(in[QA_YZ]->dtype))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "a, b and y_zero_point must be uint8 or int8");
    bool same = a->rank == b->rank;
    for (int d = 0; same && d < a->rank; d++) same = a->dims[d] == b->dims[d];
    if (!same) return op_errf(ctx, node, SMELT_ERR_SHAPE, "a and b must have one shape");
    static const int scales[] = {QA_AS, QA_BS, QA_YS};
    for (int i = 0; i < 3; i++)
        if (in[scales[i]]->dtype != SMELT_DT_FLOAT32 || !is_scalar(in[scales[i]]))
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "the scales must be float32 scalars");
    if (in[QA_AZ]->dtype != a->dtype || in[QA_BZ]->dtype != b->dtype || !is_scalar(in[QA_AZ]) ||
        !is_scalar(in[QA_BZ]) || !is_scalar(in[QA_YZ]))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "the zero points must be scalars of their "
                       "tensor's type");
    *out = *a;
    out->data = NULL;
    out->dtype = in[QA_YZ]->dtype;
    return SMELT_OK;
}

static smelt_status qadd_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    return qadd_check(ctx, node, in, &out[0]);
}

/* The reference: DequantizeLinear's, Add's and QuantizeLinear's float32
 * arithmetic, element by element. */
static smelt_status qadd_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    smelt_tensor shape;
    SMELT_TRY(qadd_check(ctx, node, in, &shape));
    float as = (float)op_get_f64(in[QA_AS], 0), bs = (float)op_get_f64(in[QA_BS], 0);
    float ys = (float)op_get_f64(in[QA_YS], 0);
    int64_t az = op_get_i64(in[QA_AZ], 0), bz = op_get_i64(in[QA_BZ], 0), yz = op_get_i64(in[QA_YZ], 0);
    double lo = out[0].dtype == SMELT_DT_INT8 ? -128.0 : 0.0, hi = out[0].dtype == SMELT_DT_INT8 ? 127.0 : 255.0;
    for (int64_t i = 0; i < op_numel(&out[0]); i++) {
        volatile float da = (float)(op_get_i64(in[QA_A], i) - az) * as; /* two roundings */
        volatile float db = (float)(op_get_i64(in[QA_B], i) - bz) * bs;
        float sum = da + db;
        double q = (double)(float)(nearbyint((double)(sum / ys)) + (double)yz);
        q = q > lo ? q : lo; /* NaN: lo, as QuantizeLinear */
        q = q < hi ? q : hi;
        op_set_i64(&out[0], i, (int64_t)q);
    }
    return SMELT_OK;
}

typedef struct qadd_plan {
    const te_tensor *a, *b, *prm;
    int64_t n;
    bool a_signed, b_signed, y_signed;
} qadd_plan;

#define QA_CHUNK 16384 /* elements per parallel task */

static ir_stmt *build_qadd(te_graph *g, ir_buffer *out, void *user)
{
    const qadd_plan *q = user;
    ir_builder *b = &g->b;
    int64_t tasks = (q->n + QA_CHUNK - 1) / QA_CHUNK;
    ir_var *t = ir_var_new(b, "qa", SMELT_DT_INT64);
    ir_call_arg args[10] = {
        {out, ii(b, 0)}, {q->a->buf, ii(b, 0)}, {q->b->buf, ii(b, 0)}, {q->prm->buf, ii(b, 0)},
        {NULL, ir_var_ref(b, t)}, {NULL, ii(b, QA_CHUNK)}, {NULL, ii(b, q->n)},
        {NULL, ii(b, q->a_signed)}, {NULL, ii(b, q->b_signed)}, {NULL, ii(b, q->y_signed)},
    };
    ir_stmt *call = ir_call_stmt(b, "smelt.qadd_u8", 10, args);
    ir_stmt *s = ir_for(b, t, ii(b, 0), ii(b, tasks), tasks > 1 ? IR_FOR_PARALLEL : IR_FOR_SERIAL, call);
    return b->failed ? NULL : s;
}

/* An extern stage over the smelt.qadd_u8 micro-kernel (vectorised, the
 * parameters a te constant). */
static smelt_status qadd_compute(op_compute_args *a)
{
    static const int params[] = {QA_AS, QA_AZ, QA_BS, QA_BZ, QA_YS, QA_YZ};
    float *prm = smelt_calloc(6, sizeof *prm);
    if (!prm) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < 6; i++) {
        if (!a->in_const[params[i]]) {
            smelt_free(prm);
            return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED, "scales and zero points must be "
                           "constants in compiled code");
        }
        prm[i] = (float)op_get_f64(a->in_const[params[i]], 0);
    }
    qadd_plan *q = smelt_arena_alloc(&a->te->arena, sizeof *q);
    if (!q) {
        smelt_free(prm);
        return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    }
    const smelt_tensor *y = &a->out_type[0];
    *q = (qadd_plan){.a = a->in[QA_A], .b = a->in[QA_B], .n = op_numel(y),
                     .a_signed = a->in[QA_A]->buf->dtype == SMELT_DT_INT8,
                     .b_signed = a->in[QA_B]->buf->dtype == SMELT_DT_INT8,
                     .y_signed = y->dtype == SMELT_DT_INT8};
    q->prm = const_tensor(a, "qadd_params", SMELT_DT_FLOAT32, 6, prm);
    if (!q->prm) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    if (q->a->kind != TE_PLACEHOLDER || q->b->kind != TE_PLACEHOLDER)
        return op_errf(a->ctx, a->node, SMELT_ERR_INTERNAL, "inputs fused into an opaque op");
    te_tensor *inputs[3] = {(te_tensor *)q->a, (te_tensor *)q->b, (te_tensor *)q->prm};
    a->out[0] = te_extern_stage(a->te, "y", y->dtype, y->rank, y->dims, 3, inputs, build_qadd, q,
                                "qadd_int8", 4.0 * (double)q->n);
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_QLINEAR_ADD = {
    .compute = qadd_compute,
    .infer = qadd_infer,
    .eval = qadd_eval,
    .min_inputs = 8,
    .max_inputs = 8,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = OP_FLAG_INTERNAL,
};
