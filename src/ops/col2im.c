/* Col2Im (opsets 18-28): columns (N, C * prod(block), L) summed back into
 * images (N, C, image...), the inverse layout of im2col: column l holds,
 * for each block offset b, the pixel at q * stride - pad_begin + b *
 * dilation, q the column's position in the grid of L blocks.  image_shape
 * and block_shape must be known (constants, or model inputs compiled code
 * specialises on).  The reference scatters column by column; the compute
 * gathers, per image pixel, the block offsets whose column exists. */
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

typedef struct op_col2im_attrs {
    int n_dil, n_pads, n_strides;
    const int64_t *dil, *pads, *strides;
} op_col2im_attrs;

OP_ATTRS(COL2IM) = {{"dilations", 0, 0}, {"pads", 0, 0}, {"strides", 0, 0}, {NULL, 0, 0}};

static smelt_status col2im_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_col2im_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(op_attr_ints(ctx, node, "dilations", &a->n_dil, &a->dil));
    SMELT_TRY(op_attr_ints(ctx, node, "pads", &a->n_pads, &a->pads));
    return op_attr_ints(ctx, node, "strides", &a->n_strides, &a->strides);
}

/* The geometry of one node: per spatial axis image, block, dilation,
 * stride, pad_begin, and the grid of blocks. */
typedef struct c2i_geom {
    int r;
    int64_t img[SMELT_MAX_RANK], blk[SMELT_MAX_RANK], dil[SMELT_MAX_RANK], str[SMELT_MAX_RANK];
    int64_t pad[SMELT_MAX_RANK], grid[SMELT_MAX_RANK], blocks, cols;
} c2i_geom;

static smelt_status c2i_geometry(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *img,
                                 const smelt_tensor *blk, c2i_geom *g)
{
    const op_col2im_attrs *a = node->op_attrs;
    int n1, n2;
    SMELT_TRY(op_read_ints(ctx, node, img, "image_shape", g->img, SMELT_MAX_RANK - 2, &n1));
    SMELT_TRY(op_read_ints(ctx, node, blk, "block_shape", g->blk, SMELT_MAX_RANK - 2, &n2));
    g->r = n1;
    if (n1 != n2 || n1 < 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "image_shape has %d values, block_shape %d",
                       n1, n2);
    if ((a->n_dil >= 0 && a->n_dil != n1) || (a->n_strides >= 0 && a->n_strides != n1) ||
        (a->n_pads >= 0 && a->n_pads != 2 * n1))
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "dilations/strides need %d values and pads %d", n1, 2 * n1);
    g->blocks = g->cols = 1;
    for (int d = 0; d < n1; d++) {
        g->dil[d] = a->n_dil > 0 ? a->dil[d] : 1;
        g->str[d] = a->n_strides > 0 ? a->strides[d] : 1;
        g->pad[d] = a->n_pads > 0 ? a->pads[d] : 0;
        int64_t pe = a->n_pads > 0 ? a->pads[n1 + d] : 0;
        if (g->dil[d] < 1 || g->str[d] < 1 || g->pad[d] < 0 || pe < 0 || g->blk[d] < 1 ||
            g->img[d] < 0)
            return op_errf(ctx, node, SMELT_ERR_ATTR,
                           "axis %d: block %lld, dilation %lld, stride %lld, pads %lld/%lld; "
                           "expected positive block, dilation and stride, pads >= 0",
                           d, (long long)g->blk[d], (long long)g->dil[d], (long long)g->str[d],
                           (long long)g->pad[d], (long long)pe);
        int64_t span = g->img[d] + g->pad[d] + pe - g->dil[d] * (g->blk[d] - 1) - 1;
        g->grid[d] = span < 0 ? 0 : span / g->str[d] + 1;
        g->blocks *= g->blk[d];
        g->cols *= g->grid[d];
    }
    return SMELT_OK;
}

static smelt_status col2im_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    static const smelt_dtype k_floats[] = {SMELT_DT_FLOAT16, SMELT_DT_FLOAT32, SMELT_DT_FLOAT64,
                                           SMELT_DT_BFLOAT16, SMELT_DT_UNDEFINED};
    SMELT_TRY(op_check_dtype(ctx, node, x, "input", k_floats));
    if (x->rank != 3)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "input has rank %d; expected 3", x->rank);
    c2i_geom g;
    SMELT_TRY(c2i_geometry(ctx, node, in[1], in[2], &g));
    int64_t cb = x->dims[1], l = x->dims[2];
    if ((cb >= 0 && cb % g.blocks != 0) || (l >= 0 && l != g.cols))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input is (N, %lld, %lld); expected (N, C x %lld, %lld)", (long long)cb,
                       (long long)l, (long long)g.blocks, (long long)g.cols);
    out[0].dtype = x->dtype;
    out[0].rank = g.r + 2;
    out[0].dims[0] = x->dims[0];
    out[0].dims[1] = cb >= 0 ? cb / g.blocks : GR_DIM_UNKNOWN;
    for (int d = 0; d < g.r; d++) out[0].dims[2 + d] = g.img[d];
    return SMELT_OK;
}

static smelt_status col2im_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    smelt_tensor *y = &out[0];
    c2i_geom g;
    SMELT_TRY(c2i_geometry(ctx, node, in[1], in[2], &g));
    int64_t nc = y->dims[0] * y->dims[1], plane = op_numel(y) / (nc ? nc : 1);
    double *acc = smelt_calloc(plane ? (size_t)plane : 1, sizeof *acc);
    if (!acc) return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t im = 0; im < nc; im++) {
        memset(acc, 0, (size_t)(plane ? plane : 1) * sizeof *acc);
        for (int64_t b = 0; b < g.blocks; b++) {
            for (int64_t l = 0; l < g.cols; l++) {
                int64_t bo = b, lo = l, pix = 0;
                bool inside = true;
                for (int d = g.r - 1; d >= 0; d--) { /* last axis fastest */
                    int64_t bd = bo % g.blk[d], qd = lo % g.grid[d];
                    bo /= g.blk[d];
                    lo /= g.grid[d];
                    int64_t p = qd * g.str[d] - g.pad[d] + bd * g.dil[d];
                    inside = inside && p >= 0 && p < g.img[d];
                    int64_t st = 1;
                    for (int e = d + 1; e < g.r; e++) st *= g.img[e];
                    pix += p * st;
                }
                if (inside) acc[pix] += op_get_f64(x, (im * g.blocks + b) * g.cols + l);
            }
        }
        for (int64_t p = 0; p < plane; p++) op_set_f64(y, im * plane + p, acc[p]);
    }
    smelt_free(acc);
    return SMELT_OK;
}

typedef struct c2i_te {
    c2i_geom g;
    const te_tensor *x;
} c2i_te;

/* Sum over block offsets (in the reference's order) of the column holding
 * this pixel for that offset, when there is one. */
static ir_expr *col2im_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const c2i_te *s = user;
    ir_builder *b = &g->b;
    ir_expr *acc = NULL;
    smelt_dtype dt = s->x->buf->dtype;
    for (int64_t k = 0; k < s->g.blocks; k++) {
        ir_expr *ok = NULL, *col = ir_int(b, 0);
        int64_t bo = k, bd[SMELT_MAX_RANK];
        for (int d = s->g.r - 1; d >= 0; d--) {
            bd[d] = bo % s->g.blk[d];
            bo /= s->g.blk[d];
        }
        for (int d = 0; d < s->g.r; d++) {
            /* q * stride = pixel + pad - offset * dilation */
            ir_expr *t = ir_add(b, idx[2 + d], ir_int(b, s->g.pad[d] - bd[d] * s->g.dil[d]));
            ir_expr *str = ir_int(b, s->g.str[d]);
            ir_expr *q = ir_binary(b, IR_DIV, t, str); /* floor division */
            ir_expr *fits = ir_binary(b, IR_AND, ir_binary(b, IR_GE, t, ir_int(b, 0)),
                                      ir_binary(b, IR_EQ, ir_mul(b, q, str), t));
            fits = ir_binary(b, IR_AND, fits, ir_binary(b, IR_LT, q, ir_int(b, s->g.grid[d])));
            ok = ok ? ir_binary(b, IR_AND, ok, fits) : fits;
            q = ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, q, ir_int(b, 0)),
                          ir_int(b, s->g.grid[d] - 1));
            col = ir_add(b, ir_mul(b, col, ir_int(b, s->g.grid[d])), q);
        }
        ir_expr *xi[3] = {idx[0], ir_add(b, ir_mul(b, idx[1], ir_int(b, s->g.blocks)),
                                         ir_int(b, k)),
                          col};
        ir_expr *v = ir_cast(b, SMELT_DT_FLOAT64, te_read(g, s->x, xi));
        v = ir_select(b, ok, v, ir_const_float(b, SMELT_DT_FLOAT64, 0.0));
        acc = acc ? ir_add(b, acc, v) : v;
    }
    return ir_cast(b, dt, acc);
}

static smelt_status col2im_compute(op_compute_args *a)
{
    c2i_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    if (!a->in_const[1] || !a->in_const[2])
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "image_shape and block_shape must be known at compile time");
    SMELT_TRY(c2i_geometry(a->ctx, a->node, a->in_const[1], a->in_const[2], &s->g));
    if (s->g.blocks > 256 || s->g.cols == 0)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "compiled Col2Im takes 1 to 256 block offsets and a non-empty grid "
                       "(%lld offsets, %lld columns)",
                       (long long)s->g.blocks, (long long)s->g.cols);
    s->x = a->in[0];
    const smelt_tensor *o = &a->out_type[0];
    a->out[0] = te_compute(a->te, "y", o->dtype, o->rank, o->dims, col2im_body, s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_COL2IM = {
    .compute = col2im_compute, .import = col2im_import, .infer = col2im_infer,
    .eval = col2im_eval, .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
};
