/* Detection post-processing: NonMaxSuppression (opsets 10-28).
 *
 * For every batch entry and class: the boxes whose score exceeds
 * score_threshold (all boxes without one) in descending score order (ties:
 * the lower box index first), each kept unless its IoU with a box already
 * kept exceeds iou_threshold, until max_output_boxes_per_class (0 when
 * omitted) are kept.  Output: one row (batch, class, box) per kept box.
 * Boxes are corners (y1, x1, y2, x2) in any order, or (x_center, y_center,
 * width, height) with center_point_box = 1.  The arithmetic rounds to the
 * boxes' type after each operation, as onnx's reference does, so a box at
 * the IoU threshold is decided alike.
 *
 * The output's row count depends on the data.  Compiled code lays the
 * output out at a bound (nms_count_bound: batches x classes x the most boxes
 * a class keeps) and takes the count as a run-time dim that the kernel
 * (smelt.nms_f32, codegen/uk_nms_f32.h) writes when it runs, so the ops
 * after it loop over the selected rows only (api/specialize.c,
 * "Data-dependent counts"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

typedef struct op_nms_attrs {
    bool center_point_box;
} op_nms_attrs;

OP_ATTRS(NON_MAX_SUPPRESSION) = {{"center_point_box", 0, 0}, {NULL, 0, 0}};

static smelt_status nms_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_nms_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    return op_attr_bool(ctx, node, "center_point_box", false, &a->center_point_box);
}

static const smelt_dtype k_box_types[] = {SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_FLOAT16,
                                          SMELT_DT_UNDEFINED};
static const smelt_dtype k_i64[] = {SMELT_DT_INT64, SMELT_DT_UNDEFINED};

/* The optional scalar inputs: absent, or holding at most one value. */
static smelt_status nms_check_scalar(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *t,
                                     const char *what, const smelt_dtype *allowed)
{
    if (!t) return SMELT_OK;
    SMELT_TRY(op_check_dtype(ctx, node, t, what, allowed));
    int64_t n = op_numel(t);
    if (t->rank > 1 || (n >= 0 && n > 1 && op_dims_static(t)))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "%s must hold one value", what);
    return SMELT_OK;
}

typedef struct nms_run {
    const op_nms_attrs *a;
    const smelt_tensor *boxes, *scores;
    int64_t max_out;
    double iou, score;
    bool has_score;
    smelt_dtype dt;
} nms_run;

static smelt_status nms_params(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                               nms_run *r)
{
    const smelt_tensor *m = op_input(node, in, 2), *iou = op_input(node, in, 3);
    const smelt_tensor *sc = op_input(node, in, 4);
    r->a = node->op_attrs;
    r->boxes = in[0];
    r->scores = in[1];
    r->dt = in[0]->dtype;
    r->max_out = m && op_numel(m) > 0 ? op_get_i64(m, 0) : 0;
    if (r->max_out < 0) r->max_out = 0;
    r->iou = iou && op_numel(iou) > 0 ? op_get_f64(iou, 0) : 0.0;
    r->has_score = sc && op_numel(sc) > 0;
    r->score = r->has_score ? op_get_f64(sc, 0) : 0.0;
    if (r->iou < 0.0 || r->iou > 1.0)
        return op_errf(ctx, node, SMELT_ERR_RUNTIME, "iou_threshold is %g; expected 0 to 1", r->iou);
    return SMELT_OK;
}

static smelt_status nms_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out);

/* ---- the algorithm ---------------------------------------------------------------------- */

typedef struct nms_box {
    double lo[2], hi[2]; /* y, x */
} nms_box;

static double rnd(smelt_dtype dt, double v);

static nms_box nms_box_at(const nms_run *r, int64_t b, int64_t i)
{
    int64_t o = (b * r->boxes->dims[1] + i) * 4;
    double v[4];
    for (int k = 0; k < 4; k++) v[k] = op_get_f64(r->boxes, o + k);
    nms_box x;
    if (r->a->center_point_box) { /* (x_center, y_center, width, height) */
        for (int d = 0; d < 2; d++) {
            double half = v[3 - d] / 2.0, c = v[1 - d];
            x.lo[d] = rnd(r->dt, c - half);
            x.hi[d] = rnd(r->dt, c + half);
        }
    } else {
        for (int d = 0; d < 2; d++) {
            x.lo[d] = v[d] < v[d + 2] ? v[d] : v[d + 2];
            x.hi[d] = v[d] < v[d + 2] ? v[d + 2] : v[d];
        }
    }
    return x;
}

static double rnd(smelt_dtype dt, double v)
{
    if (dt == SMELT_DT_FLOAT32) return (float)v;
    if (dt == SMELT_DT_FLOAT16) return smelt_f16_to_f32(smelt_f32_to_f16((float)v));
    return v;
}

/* Whether box p suppresses box q (IoU above the threshold), in the boxes' type. */
static bool nms_suppresses(const nms_run *r, const nms_box *p, const nms_box *q)
{
    smelt_dtype dt = r->dt;
    double ext[2];
    for (int d = 1; d >= 0; d--) { /* x first, as the reference */
        double lo = p->lo[d] > q->lo[d] ? p->lo[d] : q->lo[d];
        double hi = p->hi[d] < q->hi[d] ? p->hi[d] : q->hi[d];
        if (!(hi > lo)) return false;
        ext[d] = rnd(dt, hi - lo);
    }
    double inter = rnd(dt, ext[1] * ext[0]);
    double a1 = rnd(dt, rnd(dt, p->hi[1] - p->lo[1]) * rnd(dt, p->hi[0] - p->lo[0]));
    double a2 = rnd(dt, rnd(dt, q->hi[1] - q->lo[1]) * rnd(dt, q->hi[0] - q->lo[0]));
    double uni = rnd(dt, rnd(dt, a1 + a2) - inter);
    if (!(inter > 0.0) || !(a1 > 0.0) || !(a2 > 0.0) || !(uni > 0.0)) return false;
    return rnd(dt, inter / uni) > r->iou;
}

typedef struct nms_cand {
    double score;
    int64_t idx;
} nms_cand;

static int nms_cand_cmp(const void *pa, const void *pb)
{
    const nms_cand *a = pa, *b = pb;
    if (isnan(a->score) != isnan(b->score)) return isnan(a->score) ? 1 : -1; /* NaN last */
    if (!isnan(a->score) && a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Runs NMS; rows (when not NULL) receives the selected (batch, class, box)
 * triples; *count their number.  cand, kept: scratch of num_boxes entries. */
static smelt_status nms_select(smelt_ctx *ctx, const gr_node *node, const nms_run *r,
                               int64_t *rows, int64_t cap, int64_t *count)
{
    int64_t nb = r->boxes->dims[0], n = r->boxes->dims[1], nc = r->scores->dims[1];
    nms_cand *cand = smelt_calloc(n ? (size_t)n : 1, sizeof *cand);
    nms_box *kept = smelt_calloc(n ? (size_t)n : 1, sizeof *kept);
    if (!cand || !kept) {
        smelt_free(cand);
        smelt_free(kept);
        return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    }
    *count = 0;
    for (int64_t b = 0; b < nb; b++) {
        for (int64_t c = 0; c < nc; c++) {
            int64_t m = 0, k = 0;
            for (int64_t i = 0; i < n; i++) {
                double s = op_get_f64(r->scores, (b * nc + c) * n + i);
                if (!r->has_score || s > r->score) cand[m++] = (nms_cand){s, i};
            }
            qsort(cand, (size_t)m, sizeof *cand, nms_cand_cmp);
            for (int64_t j = 0; j < m && k < r->max_out; j++) {
                nms_box x = nms_box_at(r, b, cand[j].idx);
                bool keep = true;
                for (int64_t q = 0; q < k && keep; q++) keep = !nms_suppresses(r, &x, &kept[q]);
                if (!keep) continue;
                kept[k++] = x;
                if (rows && *count < cap) {
                    rows[*count * 3 + 0] = b;
                    rows[*count * 3 + 1] = c;
                    rows[*count * 3 + 2] = cand[j].idx;
                }
                (*count)++;
            }
        }
    }
    smelt_free(cand);
    smelt_free(kept);
    return SMELT_OK;
}

/* ---- hooks ---------------------------------------------------------------------------- */

static smelt_status nms_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    const smelt_tensor *boxes = in[0], *scores = in[1];
    SMELT_TRY(op_check_dtype(ctx, node, boxes, "input 'boxes'", k_box_types));
    if (scores->dtype != boxes->dtype)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "scores are %s, boxes %s; expected the same",
                       smelt_dtype_name(scores->dtype), smelt_dtype_name(boxes->dtype));
    if (boxes->rank != 3 || scores->rank != 3)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "boxes and scores have ranks %d and %d; expected 3",
                       boxes->rank, scores->rank);
    if (boxes->dims[2] >= 0 && boxes->dims[2] != 4)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "boxes' last dim is %lld; expected 4",
                       (long long)boxes->dims[2]);
    for (int d = 0; d < 2; d++) {
        int64_t bd = boxes->dims[d], sd = scores->dims[d == 0 ? 0 : 2];
        if (bd >= 0 && sd >= 0 && bd != sd)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "boxes (%lld, %lld, 4) and scores (%lld, C, %lld) disagree",
                           (long long)boxes->dims[0], (long long)boxes->dims[1],
                           (long long)scores->dims[0], (long long)scores->dims[2]);
    }
    SMELT_TRY(nms_check_scalar(ctx, node, op_input(node, in, 2), "max_output_boxes_per_class", k_i64));
    SMELT_TRY(nms_check_scalar(ctx, node, op_input(node, in, 3), "iou_threshold", k_box_types + 0));
    SMELT_TRY(nms_check_scalar(ctx, node, op_input(node, in, 4), "score_threshold", k_box_types + 0));
    out[0].dtype = SMELT_DT_INT64;
    out[0].rank = 2;
    out[0].dims[0] = GR_DIM_UNKNOWN;
    out[0].dims[1] = 3;
    bool known = op_dims_static(boxes) && op_dims_static(scores);
    for (int i = 0; i < node->n_inputs; i++) {
        const smelt_tensor *t = op_input(node, in, i);
        if (t && !t->data) known = false;
    }
    if (!known) return SMELT_OK;
    nms_run r;
    SMELT_TRY(nms_params(ctx, node, in, &r));
    return nms_select(ctx, node, &r, NULL, 0, &out[0].dims[0]);
}

static smelt_status nms_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    nms_run r;
    SMELT_TRY(nms_params(ctx, node, in, &r));
    int64_t count;
    SMELT_TRY(nms_select(ctx, node, &r, out[0].data, out[0].dims[0], &count));
    if (count != out[0].dims[0])
        return op_errf(ctx, node, SMELT_ERR_INTERNAL, "selected %lld boxes; the output has %lld rows",
                       (long long)count, (long long)out[0].dims[0]);
    return SMELT_OK;
}

/* Rows the node can select: batches x classes x the boxes a class keeps at
 * most (max_output_boxes_per_class when it is a constant); -1 when the
 * boxes' or scores' dims are not static. */
static int64_t nms_count_bound(const gr_node *n, int out, int dim)
{
    const gr_value *boxes = n->inputs[0], *scores = n->inputs[1];
    const gr_value *m = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (out != 0 || dim != 0 || boxes->rank != 3 || scores->rank != 3) return -1;
    if (boxes->dims[0] < 0 || boxes->dims[1] < 0 || scores->dims[1] < 0) return -1;
    int64_t per = boxes->dims[1], rows;
    if (!m) per = 0;
    else if (m->constant) {
        int64_t v = smelt_tensor_numel(m->constant) > 0 ? op_get_i64(m->constant, 0) : 0;
        per = v < 0 ? 0 : v < per ? v : per;
    }
    if (smelt_mul_overflow_i64(boxes->dims[0], scores->dims[1], &rows) ||
        smelt_mul_overflow_i64(rows, per, &rows) || rows > SMELT_LIMIT_TENSOR_ELEMS / 3)
        return -1;
    return rows;
}

typedef struct nms_build {
    const gr_node *node;
    te_tensor *in[5];   /* placeholders; NULL: omitted or empty */
    te_tensor *rt_dims; /* where the count goes */
    int rt;             /* its index there */
    int64_t nb, nc, n, bound;
} nms_build;

/* One call of smelt.nms_f32 with its scratch.  An omitted scalar input is
 * passed as a pointer of its type into the scratch (its flag says so). */
static ir_stmt *build_nms(te_graph *g, ir_buffer *out, void *user)
{
    const nms_build *nb = user;
    ir_builder *b = &g->b;
    int64_t n = nb->n > 0 ? nb->n : 1, n4 = 4 * n;
    ir_buffer *idx = ir_buffer_new(b, "nms_idx", SMELT_DT_INT64, 1, &n, IR_BUF_TEMP);
    ir_buffer *tmp = ir_buffer_new(b, "nms_tmp", SMELT_DT_INT64, 1, &n, IR_BUF_TEMP);
    ir_buffer *kept = ir_buffer_new(b, "nms_kept", SMELT_DT_FLOAT32, 1, &n4, IR_BUF_TEMP);
    if (!idx || !tmp || !kept) return NULL;
    const op_nms_attrs *a = nb->node->op_attrs;
    int64_t flags = (nb->in[2] ? 1 : 0) | (nb->in[3] ? 2 : 0) | (nb->in[4] ? 4 : 0) |
                    (a->center_point_box ? 8 : 0);
    ir_expr *zero = ir_int(b, 0);
    ir_call_arg args[16] = {
        {out, zero},
        {nb->rt_dims->buf, ir_int(b, nb->rt)},
        {nb->in[0]->buf, zero},
        {nb->in[1]->buf, zero},
        {nb->in[2] ? nb->in[2]->buf : idx, zero},
        {nb->in[3] ? nb->in[3]->buf : kept, zero},
        {nb->in[4] ? nb->in[4]->buf : kept, zero},
        {NULL, ir_int(b, flags)},
        {NULL, ir_int(b, nb->nb)},
        {NULL, ir_int(b, nb->nc)},
        {NULL, ir_int(b, nb->n)},
        {NULL, ir_int(b, nb->bound)},
        {idx, zero},
        {tmp, zero},
        {kept, zero},
    };
    ir_stmt *call = ir_call_stmt(b, "smelt.nms_f32", 15, args);
    return ir_allocate(b, idx, ir_allocate(b, tmp, ir_allocate(b, kept, call)));
}

/* Compiled: the rows at the bound the graph was laid out with, the count a
 * run-time dim the kernel writes. */
static smelt_status nms_compute(op_compute_args *a)
{
    const gr_node *node = a->node;
    te_graph *g = a->te;
    const smelt_tensor *y = &a->out_type[0];
    nms_build *nb = smelt_arena_alloc(&g->arena, sizeof *nb);
    if (!nb) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
    *nb = (nms_build){.node = node, .bound = y->dims[0]};
    SMELT_TRY(op_count_slot(a, y->dims[0], &nb->rt_dims, &nb->rt));
    const ir_buffer *boxes = a->in[0]->buf, *scores = a->in[1]->buf;
    if (boxes->dtype != SMELT_DT_FLOAT32)
        return op_errf(a->ctx, node, SMELT_ERR_UNSUPPORTED, "compiled code selects %s boxes not "
                       "yet (float32 only); the reference executor runs it (--reference)",
                       smelt_dtype_name(boxes->dtype));
    const gr_value *iou = node->n_inputs > 3 ? node->inputs[3] : NULL;
    double iou_v = iou && iou->constant && smelt_tensor_numel(iou->constant) > 0
                       ? op_get_f64(iou->constant, 0) : 0.0;
    if (iou_v < 0.0 || iou_v > 1.0)
        return op_errf(a->ctx, node, SMELT_ERR_ARG, "iou_threshold is %g; expected 0 to 1", iou_v);
    te_tensor *inputs[6];
    int n_in = 0;
    for (int k = 0; k < 5 && k < node->n_inputs; k++) {
        const gr_value *v = node->inputs[k];
        if (!v || (k >= 2 && gr_value_numel(v) == 0)) continue; /* empty: as omitted */
        nb->in[k] = a->in[k];
        inputs[n_in++] = a->in[k];
    }
    inputs[n_in++] = nb->rt_dims;
    nb->nb = boxes->shape[0];
    nb->n = boxes->shape[1];
    nb->nc = scores->shape[1];
    double flops = (double)nb->nb * nb->nc * nb->n * 8.0;
    a->out[0] = te_extern_stage(g, "nms", SMELT_DT_INT64, y->rank, y->dims, n_in, inputs, build_nms,
                                nb, "nms", flops);
    if (a->out[0]) te_extern_set_rt_ok(a->out[0]);
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_NON_MAX_SUPPRESSION = {
    .compute = nms_compute, .import = nms_import, .infer = nms_infer, .eval = nms_eval,
    .count_bound = nms_count_bound, .min_inputs = 2, .max_inputs = 5, .min_outputs = 1, .max_outputs = 1,
};
