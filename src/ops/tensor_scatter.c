/* TensorScatter (opsets 24-28): a key/value cache (batch, ..., max_seq,
 * ...) with `update` (batch, ..., seq, ...) written at sequence position
 * write_indices[b] of each batch entry (0 when omitted); mode "circular"
 * wraps positions modulo max_seq.  The reference writes update rows in
 * order, as the spec's pseudocode does; the compute gathers: output
 * position s of batch b reads update row (s - w[b]) (mod max_seq when
 * circular) where that row exists, else the past cache.  Write indices
 * outside the cache (linear: [0, max_seq - seq]; circular: >= 0) are a
 * run-time error on both paths. */
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

OP_ATTRS(TENSOR_SCATTER) = {{"axis", 0, 0}, {"mode", 0, 0}, {NULL, 0, 0}};

typedef struct op_tensor_scatter_attrs {
    int64_t axis;
    bool circular;
} op_tensor_scatter_attrs;

static smelt_status tensor_scatter_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_tensor_scatter_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    const char *mode;
    SMELT_TRY(op_attr_int(ctx, node, "axis", -2, &a->axis));
    SMELT_TRY(op_attr_string(ctx, node, "mode", "linear", &mode));
    if (strcmp(mode, "linear") != 0 && strcmp(mode, "circular") != 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'mode' is \"%s\"; expected \"linear\" or \"circular\"", mode);
    a->circular = strcmp(mode, "circular") == 0;
    return SMELT_OK;
}

static smelt_status ts_axis(smelt_ctx *ctx, const gr_node *node, int rank, int *axis)
{
    SMELT_TRY(op_norm_axis(ctx, node, ((const op_tensor_scatter_attrs *)node->op_attrs)->axis,
                           rank, axis));
    if (*axis == 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'axis' names the batch axis; it must be a sequence axis");
    return SMELT_OK;
}

static smelt_status tensor_scatter_infer(smelt_ctx *ctx, const gr_node *node,
                                         const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *past = in[0], *upd = in[1], *wi = op_input(node, in, 2);
    int axis;
    if (past->rank < 2 || upd->rank != past->rank)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "past_cache has rank %d and update rank %d; expected one rank >= 2",
                       past->rank, upd->rank);
    SMELT_TRY(ts_axis(ctx, node, past->rank, &axis));
    if (upd->dtype != past->dtype)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "past_cache is %s and update %s",
                       smelt_dtype_name(past->dtype), smelt_dtype_name(upd->dtype));
    for (int d = 0; d < past->rank; d++) {
        int64_t p = past->dims[d], u = upd->dims[d];
        if (p < 0 || u < 0) continue;
        if (d == axis ? u > p : u != p)
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "axis %d: past_cache has %lld and update %lld; update must match "
                           "past_cache except along axis %d, where it may not be longer",
                           d, (long long)p, (long long)u, axis);
    }
    if (wi) {
        static const smelt_dtype k_i64[] = {SMELT_DT_INT64, SMELT_DT_UNDEFINED};
        SMELT_TRY(op_check_dtype(ctx, node, wi, "write_indices", k_i64));
        if (wi->rank != 1 || (wi->dims[0] >= 0 && past->dims[0] >= 0 && wi->dims[0] != past->dims[0]))
            return op_errf(ctx, node, SMELT_ERR_SHAPE,
                           "write_indices must have shape (batch_size,) = (%lld,)",
                           (long long)past->dims[0]);
    }
    op_copy_shape(&out[0], past);
    return SMELT_OK;
}

static bool ts_index_ok(bool circular, int64_t w, int64_t seq, int64_t max_seq)
{
    return circular ? w >= 0 : w >= 0 && w <= max_seq - seq;
}

static smelt_status tensor_scatter_eval(smelt_ctx *ctx, const gr_node *node,
                                        const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_tensor_scatter_attrs *at = node->op_attrs;
    const smelt_tensor *past = in[0], *upd = in[1], *wi = op_input(node, in, 2);
    int axis;
    SMELT_TRY(ts_axis(ctx, node, past->rank, &axis));
    size_t es = smelt_dtype_size(past->dtype);
    memcpy(out[0].data, past->data, (size_t)op_numel(past) * es);
    int64_t max_seq = past->dims[axis], seq = upd->dims[axis], inner = 1, outer = 1;
    for (int d = axis + 1; d < past->rank; d++) inner *= past->dims[d];
    for (int d = 0; d < axis; d++) outer *= past->dims[d];
    int64_t per_batch = past->dims[0] ? outer / past->dims[0] : 0;
    for (int64_t o = 0; o < outer; o++) {
        int64_t b = per_batch ? o / per_batch : 0, w = wi ? op_get_i64(wi, b) : 0;
        if (!ts_index_ok(at->circular, w, seq, max_seq))
            return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                           "write index %lld of batch %lld does not fit %lld rows into a "
                           "cache of %lld (mode %s)",
                           (long long)w, (long long)b, (long long)seq, (long long)max_seq,
                           at->circular ? "circular" : "linear");
        for (int64_t k = 0; k < seq; k++) {
            int64_t s = at->circular ? (w + k) % max_seq : w + k;
            memcpy((char *)out[0].data + ((o * max_seq + s) * inner) * (int64_t)es,
                   (const char *)upd->data + ((o * seq + k) * inner) * (int64_t)es,
                   (size_t)(inner * (int64_t)es));
        }
    }
    return SMELT_OK;
}

typedef struct ts_te {
    const te_tensor *past, *upd, *wi;
    int axis;
    bool circular;
} ts_te;

static ir_expr *ts_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const ts_te *s = user;
    ir_builder *b = &g->b;
    int64_t max_seq = s->past->buf->shape[s->axis], seq = s->upd->buf->shape[s->axis];
    ir_expr *w = s->wi ? ir_cast(b, SMELT_DT_INT64, te_read(g, s->wi, idx)) : ir_int(b, 0);
    ir_expr *k = ir_sub(b, idx[s->axis], w);
    if (s->circular) k = ir_binary(b, IR_FLOORMOD, k, ir_int(b, max_seq));
    ir_expr *hit = ir_binary(b, IR_AND, ir_binary(b, IR_GE, k, ir_int(b, 0)),
                             ir_binary(b, IR_LT, k, ir_int(b, seq)));
    ir_expr *ui[SMELT_MAX_RANK];
    for (int d = 0; d < s->past->n_axes; d++) ui[d] = idx[d];
    ui[s->axis] = ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, k, ir_int(b, 0)),
                            ir_int(b, seq > 0 ? seq - 1 : 0));
    if (seq == 0) return te_read(g, s->past, idx);
    return ir_select(b, hit, te_read(g, s->upd, ui), te_read(g, s->past, idx));
}

static ir_expr *ts_check_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return ir_cast(&g->b, SMELT_DT_INT64, te_read(g, user, idx));
}

static smelt_status ts_add_check(op_compute_args *a, const ts_te *s)
{
    ir_builder *b = &a->te->b;
    int64_t max_seq = s->past->buf->shape[s->axis], seq = s->upd->buf->shape[s->axis];
    ir_var *v = ir_var_new(b, "w", SMELT_DT_INT64);
    ir_expr *vr = ir_var_ref(b, v);
    ir_expr *ok = ir_binary(b, IR_GE, vr, ir_int(b, 0));
    if (!s->circular) ok = ir_binary(b, IR_AND, ok, ir_binary(b, IR_LE, vr, ir_int(b, max_seq - seq)));
    char msg[160];
    snprintf(msg, sizeof msg, "write index {value} at position {position} does not fit %lld rows "
             "into a cache of %lld (mode %s)", (long long)seq, (long long)max_seq,
             s->circular ? "circular" : "linear");
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type, .message = msg};
    if (!te_check_compute(a->te, "check", 1, s->wi->buf->shape, ts_check_body, (void *)s->wi, v,
                          ok, &site))
        return smelt_ctx_status(a->ctx) ? smelt_ctx_status(a->ctx) : SMELT_ERR_NOMEM;
    return SMELT_OK;
}

static smelt_status tensor_scatter_compute(op_compute_args *a)
{
    const op_tensor_scatter_attrs *at = a->node->op_attrs;
    ts_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    int axis;
    SMELT_TRY(ts_axis(a->ctx, a->node, a->in[0]->n_axes, &axis));
    *s = (ts_te){a->in[0], a->in[1], a->node->n_inputs > 2 ? a->in[2] : NULL, axis, at->circular};
    if (s->wi) SMELT_TRY(ts_add_check(a, s));
    const smelt_tensor *o = &a->out_type[0];
    a->out[0] = te_compute(a->te, "present_cache", o->dtype, o->rank, o->dims, ts_body, s,
                           "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_TENSOR_SCATTER = {
    .compute = tensor_scatter_compute, .import = tensor_scatter_import,
    .infer = tensor_scatter_infer, .eval = tensor_scatter_eval, .min_inputs = 2,
    .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
};
