/* Selections whose output size depends on the data: Compress (opsets 9-28)
 * and Unique (11-28).  Both compile with their count a run-time dim that
 * their kernels (smelt.compress, smelt.unique: codegen/uk_select.h) write
 * (api/specialize.c, "Data-dependent counts"); Unique's Y, indices and
 * counts share that count.
 *
 * Compress keeps the slices along `axis` (of the flattened input without
 * one) whose condition is true; a true condition past the axis is refused.
 * Unique: the distinct slices along `axis` (elements of the flattened input
 * without one), ascending when sorted (the default), else in order of first
 * occurrence; outputs indices (first occurrence), inverse_indices (each
 * slice's position in Y) and counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

/* The input viewed as outer x slices x inner around axis (flattened: 1 x n x 1). */
typedef struct slicing {
    int64_t outer, n, inner;
} slicing;

static slicing slicing_of(const smelt_tensor *x, bool has_axis, int axis)
{
    slicing s = {1, 1, 1};
    if (!has_axis) {
        s.n = op_numel(x);
        return s;
    }
    for (int d = 0; d < x->rank; d++) {
        if (d < axis) s.outer *= x->dims[d];
        else if (d > axis) s.inner *= x->dims[d];
    }
    s.n = x->dims[axis];
    return s;
}

static void copy_slice(smelt_tensor *y, int64_t yn, int64_t yk, const smelt_tensor *x, slicing s,
                       int64_t xk)
{
    size_t es = smelt_dtype_size(x->dtype);
    for (int64_t o = 0; o < s.outer; o++)
        memcpy((char *)y->data + (size_t)((o * yn + yk) * s.inner) * es,
               (const char *)x->data + (size_t)((o * s.n + xk) * s.inner) * es,
               (size_t)s.inner * es);
}

/* ---- Compress ---------------------------------------------------------------------- */

typedef struct op_axis_opt_attrs {
    bool has_axis;
    int64_t axis;
    bool sorted;
} op_axis_opt_attrs;

OP_ATTRS(COMPRESS) = {{"axis", 0, 0}, {NULL, 0, 0}};

static smelt_status compress_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_axis_opt_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    a->has_axis = gr_node_attr(node, "axis") != NULL;
    return op_attr_int(ctx, node, "axis", 0, &a->axis);
}

/* The number of slices kept; an error for a true condition past the axis. */
static smelt_status compress_count(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *cond,
                                   int64_t n, int64_t *count)
{
    *count = 0;
    for (int64_t i = 0; i < op_numel(cond); i++) {
        if (!op_get_i64(cond, i)) continue;
        if (i >= n)
            return op_errf(ctx, node, SMELT_ERR_RUNTIME,
                           "condition is true at %lld, past the %lld slices along the axis",
                           (long long)i, (long long)n);
        (*count)++;
    }
    return SMELT_OK;
}

static smelt_status compress_infer(smelt_ctx *ctx, const gr_node *node,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_axis_opt_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *cond = in[1];
    static const smelt_dtype k_bool[] = {SMELT_DT_BOOL, SMELT_DT_UNDEFINED};
    SMELT_TRY(op_check_dtype(ctx, node, cond, "input 'condition'", k_bool));
    if (cond->rank != 1)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "condition has rank %d; expected 1", cond->rank);
    int axis = 0;
    if (a->has_axis) SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &axis));
    out[0].dtype = x->dtype;
    if (a->has_axis) op_copy_shape(&out[0], x);
    else out[0].rank = 1;
    out[0].dims[axis] = GR_DIM_UNKNOWN;
    if (!cond->data || !op_dims_static(x)) return SMELT_OK;
    return compress_count(ctx, node, cond, slicing_of(x, a->has_axis, axis).n, &out[0].dims[axis]);
}

static smelt_status compress_eval(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_axis_opt_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0], *cond = in[1];
    int axis = 0;
    if (a->has_axis) SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, &axis));
    slicing s = slicing_of(x, a->has_axis, axis);
    int64_t count, k = 0;
    SMELT_TRY(compress_count(ctx, node, cond, s.n, &count));
    if (count != out[0].dims[axis])
        return op_errf(ctx, node, SMELT_ERR_INTERNAL, "kept %lld slices; the output has %lld",
                       (long long)count, (long long)out[0].dims[axis]);
    for (int64_t i = 0; i < op_numel(cond) && i < s.n; i++)
        if (op_get_i64(cond, i)) copy_slice(&out[0], count, k++, x, s, i);
    return SMELT_OK;
}

/* The slices Compress can keep: those along the axis a condition entry
 * can select (static dims). */
static int64_t compress_count_bound(const gr_node *n, int out, int dim)
{
    const op_axis_opt_attrs *a = n->op_attrs;
    const gr_value *x = n->inputs[0], *cond = n->inputs[1];
    int axis = a->has_axis ? (int)(a->axis < 0 ? a->axis + x->rank : a->axis) : 0;
    int64_t numel = gr_value_numel(x), nc = gr_value_numel(cond);
    if (out != 0 || dim != axis || numel < 0 || nc < 0 || axis < 0 || axis >= (x->rank ? x->rank : 1))
        return -1;
    int64_t n_slices = a->has_axis ? x->dims[axis] : numel;
    return nc < n_slices ? nc : n_slices;
}

typedef struct compress_build {
    const te_tensor *x, *cond, *rt_dims;
    int rt;
    slicing s;
    int64_t ncond, bound;
} compress_build;

static ir_stmt *build_compress(te_graph *g, ir_buffer *out, void *user)
{
    const compress_build *c = user;
    ir_builder *b = &g->b;
    ir_expr *zero = ir_int(b, 0);
    ir_call_arg args[10] = {
        {out, zero},
        {c->rt_dims->buf, ir_int(b, c->rt)},
        {c->x->buf, zero},
        {c->cond->buf, zero},
        {NULL, ir_int(b, c->ncond)},
        {NULL, ir_int(b, c->s.outer)},
        {NULL, ir_int(b, c->s.n)},
        {NULL, ir_int(b, c->s.inner)},
        {NULL, ir_int(b, (int64_t)smelt_dtype_size(c->x->buf->dtype))},
        {NULL, ir_int(b, c->bound)},
    };
    return ir_call_stmt(b, "smelt.compress", 10, args);
}

/* Entry i of the condition: i when it is true past the axis, else -1. */
static ir_expr *compress_past_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const compress_build *c = user;
    ir_builder *b = &g->b;
    ir_expr *past = ir_binary(b, IR_AND, ir_binary(b, IR_GE, idx[0], ir_int(b, c->s.n)),
                              ir_cast(b, SMELT_DT_BOOL, te_read(g, c->cond, idx)));
    return ir_select(b, past, idx[0], ir_int(b, -1));
}

/* The reference's refusal of a true condition past the axis, as a check
 * stage over the condition (when it is longer than the axis). */
static smelt_status compress_check(op_compute_args *a, const compress_build *c)
{
    if (c->ncond <= c->s.n) return SMELT_OK;
    ir_builder *b = &a->te->b;
    ir_var *v = ir_var_new(b, "v", SMELT_DT_INT64);
    ir_expr *ok = ir_binary(b, IR_LT, ir_var_ref(b, v), ir_int(b, 0));
    char msg[200];
    snprintf(msg, sizeof msg, "condition is true at {value}, past the %lld slices along the axis",
             (long long)c->s.n);
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type, .message = msg};
    return te_check_compute(a->te, "check_cond", 1, &c->ncond, compress_past_body, (void *)c, v,
                            ok, &site)
               ? SMELT_OK
               : smelt_ctx_status(a->ctx);
}

/* Compiled: the kept slices at the bound the graph was laid out with, their
 * count a run-time dim smelt.compress writes. */
static smelt_status compress_compute(op_compute_args *a)
{
    const op_axis_opt_attrs *at = a->node->op_attrs;
    te_tensor *x = a->in[0], *rt_dims;
    const smelt_tensor *y = &a->out_type[0];
    compress_build *c = smelt_arena_alloc(&a->te->arena, sizeof *c);
    if (!c) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_tensor xt = {.dtype = x->buf->dtype, .rank = x->buf->rank};
    memcpy(xt.dims, x->buf->shape, sizeof(int64_t) * (size_t)x->buf->rank);
    int axis = 0;
    if (at->has_axis) SMELT_TRY(op_norm_axis(a->ctx, a->node, at->axis, xt.rank, &axis));
    int64_t bound = y->dims[at->has_axis ? axis : 0];
    *c = (compress_build){.x = x, .cond = a->in[1], .s = slicing_of(&xt, at->has_axis, axis),
                          .ncond = a->in[1]->buf->shape[0], .bound = bound};
    SMELT_TRY(op_count_slot(a, bound, &rt_dims, &c->rt));
    c->rt_dims = rt_dims;
    SMELT_TRY(compress_check(a, c));
    te_tensor *inputs[3] = {x, a->in[1], rt_dims};
    a->out[0] = te_extern_stage(a->te, "compress", y->dtype, y->rank, y->dims, 3, inputs,
                                build_compress, c, "compress", (double)op_numel(y));
    if (a->out[0]) te_extern_set_rt_ok(a->out[0]);
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_COMPRESS = {
    .compute = compress_compute, .import = compress_import, .infer = compress_infer,
    .eval = compress_eval, .count_bound = compress_count_bound, .min_inputs = 2, .max_inputs = 2,
    .min_outputs = 1, .max_outputs = 1,
};

/* ---- Unique ------------------------------------------------------------------------ */

OP_ATTRS(UNIQUE) = {{"axis", 0, 0}, {"sorted", 0, 0}, {NULL, 0, 0}};

static smelt_status unique_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_axis_opt_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    a->has_axis = gr_node_attr(node, "axis") != NULL;
    SMELT_TRY(op_attr_bool(ctx, node, "sorted", true, &a->sorted));
    return op_attr_int(ctx, node, "axis", 0, &a->axis);
}

/* Slices i and j compared element by element (NaN after everything, as numpy sorts). */
static int slice_cmp(const smelt_tensor *x, slicing s, int64_t i, int64_t j)
{
    bool fl = op_dtype_is_float(x->dtype);
    for (int64_t o = 0; o < s.outer; o++) {
        for (int64_t e = 0; e < s.inner; e++) {
            int64_t pi = (o * s.n + i) * s.inner + e, pj = (o * s.n + j) * s.inner + e;
            if (fl) {
                double a = op_get_f64(x, pi), b = op_get_f64(x, pj);
                if (isnan(a) || isnan(b)) {
                    if (isnan(a) != isnan(b)) return isnan(a) ? 1 : -1;
                    continue;
                }
                if (a != b) return a < b ? -1 : 1;
            } else {
                int64_t a = op_get_i64(x, pi), b = op_get_i64(x, pj);
                if (a != b) return a < b ? -1 : 1;
            }
        }
    }
    return 0;
}

typedef struct unique_run {
    int64_t n_unique;
    int64_t *first;   /* [n]: first occurrence of each unique slice, in output order */
    int64_t *inverse; /* [n]: each slice's output position */
    int64_t *counts;  /* [n] */
} unique_run;

static void unique_free(unique_run *u)
{
    smelt_free(u->first);
    smelt_free(u->inverse);
    smelt_free(u->counts);
}

/* Unique slices in order of first occurrence, then (sorted) by value: an
 * insertion sort of the first occurrences, fine for a reference kernel. */
static smelt_status unique_find(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                slicing s, bool sorted, unique_run *u)
{
    size_t cap = s.n ? (size_t)s.n : 1;
    u->n_unique = 0;
    u->first = smelt_calloc(cap, sizeof *u->first);
    u->inverse = smelt_calloc(cap, sizeof *u->inverse);
    u->counts = smelt_calloc(cap, sizeof *u->counts);
    if (!u->first || !u->inverse || !u->counts) {
        unique_free(u);
        return op_errf(ctx, node, SMELT_ERR_NOMEM, "out of memory");
    }
    for (int64_t k = 0; k < s.n; k++) {
        int64_t j = 0;
        while (j < u->n_unique && slice_cmp(x, s, u->first[j], k) != 0) j++;
        if (j == u->n_unique) u->first[u->n_unique++] = k;
    }
    for (int64_t j = 1; sorted && j < u->n_unique; j++) {
        int64_t v = u->first[j], i = j;
        while (i > 0 && slice_cmp(x, s, u->first[i - 1], v) > 0) {
            u->first[i] = u->first[i - 1];
            i--;
        }
        u->first[i] = v;
    }
    for (int64_t k = 0; k < s.n; k++) {
        int64_t j = 0;
        while (slice_cmp(x, s, u->first[j], k) != 0) j++;
        u->inverse[k] = j;
        u->counts[j]++;
    }
    return SMELT_OK;
}

static smelt_status unique_shape(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *x,
                                 int *axis)
{
    const op_axis_opt_attrs *a = node->op_attrs;
    *axis = 0;
    if (a->has_axis) SMELT_TRY(op_norm_axis(ctx, node, a->axis, x->rank, axis));
    return SMELT_OK;
}

static smelt_status unique_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_axis_opt_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int axis;
    SMELT_TRY(unique_shape(ctx, node, x, &axis));
    if (x->dtype == SMELT_DT_STRING || smelt_dtype_size(x->dtype) == 0)
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED, "unsupported dtype %s",
                       smelt_dtype_name(x->dtype));
    int64_t u = GR_DIM_UNKNOWN;
    slicing s = slicing_of(x, a->has_axis, axis);
    if (x->data) {
        unique_run r;
        SMELT_TRY(unique_find(ctx, node, x, s, a->sorted, &r));
        u = r.n_unique;
        unique_free(&r);
    }
    out[0].dtype = x->dtype;
    if (a->has_axis) op_copy_shape(&out[0], x);
    else out[0].rank = 1;
    out[0].dims[axis] = u;
    for (int o = 1; o < 4; o++) {
        out[o].dtype = SMELT_DT_INT64;
        out[o].rank = 1;
        out[o].dims[0] = o == 2 ? (op_dims_static(x) ? s.n : GR_DIM_UNKNOWN) : u;
    }
    return SMELT_OK;
}

static smelt_status unique_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_axis_opt_attrs *a = node->op_attrs;
    const smelt_tensor *x = in[0];
    int axis;
    SMELT_TRY(unique_shape(ctx, node, x, &axis));
    slicing s = slicing_of(x, a->has_axis, axis);
    unique_run r;
    SMELT_TRY(unique_find(ctx, node, x, s, a->sorted, &r));
    if (r.n_unique != out[0].dims[axis]) {
        unique_free(&r);
        return op_errf(ctx, node, SMELT_ERR_INTERNAL, "found %lld unique slices; Y has %lld",
                       (long long)r.n_unique, (long long)out[0].dims[axis]);
    }
    for (int64_t j = 0; j < r.n_unique; j++) copy_slice(&out[0], r.n_unique, j, x, s, r.first[j]);
    const int64_t *src[4] = {NULL, r.first, r.inverse, r.counts};
    for (int o = 1; o < 4 && o < node->n_outputs; o++) {
        if (!node->outputs[o]) continue;
        for (int64_t i = 0; i < out[o].dims[0]; i++) op_set_i64(&out[o], i, src[o][i]);
    }
    unique_free(&r);
    return SMELT_OK;
}

/* Y, indices and counts share one count (OP_FLAG_ONE_COUNT): the slices. */
static int64_t unique_count_bound(const gr_node *n, int out, int dim)
{
    const op_axis_opt_attrs *a = n->op_attrs;
    const gr_value *x = n->inputs[0];
    int axis = a->has_axis ? (int)(a->axis < 0 ? a->axis + x->rank : a->axis) : 0;
    int64_t numel = gr_value_numel(x);
    if (out == 2 || dim != (out == 0 ? axis : 0) || numel < 0 || (a->has_axis && (axis < 0 || axis >= x->rank)))
        return -1;
    return a->has_axis ? x->dims[axis] : numel;
}

/* smelt.unique's comparison: 1 float32, 2 float64, 4 signed, 5 unsigned
 * integers (bool); -1 for the others (16-bit floats). */
static int unique_kind(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_DT_FLOAT32: return 1;
    case SMELT_DT_FLOAT64: return 2;
    case SMELT_DT_INT8: case SMELT_DT_INT16: case SMELT_DT_INT32: case SMELT_DT_INT64: return 4;
    case SMELT_DT_UINT8: case SMELT_DT_UINT16: case SMELT_DT_UINT32: case SMELT_DT_UINT64:
    case SMELT_DT_BOOL: return 5;
    default: return -1;
    }
}

typedef struct unique_build {
    const te_tensor *x, *rt_dims, *meta;
    int rt, kind, want;
    bool sorted;
    slicing s;
    int64_t bound;
} unique_build;

static ir_stmt *build_unique(te_graph *g, ir_buffer *out, void *user)
{
    const unique_build *u = user;
    ir_builder *b = &g->b;
    int64_t n = u->s.n > 0 ? u->s.n : 1;
    ir_buffer *scratch[3];
    for (int k = 0; k < 3; k++)
        if (!(scratch[k] = ir_buffer_new(b, k ? k == 1 ? "uq_tmp" : "uq_grp" : "uq_idx",
                                         SMELT_DT_INT64, 1, &n, IR_BUF_TEMP)))
            return NULL;
    ir_expr *zero = ir_int(b, 0);
    ir_call_arg args[14] = {
        {out, zero}, {u->rt_dims->buf, ir_int(b, u->rt)}, {u->x->buf, zero},
        {NULL, ir_int(b, u->want)}, {NULL, ir_int(b, u->kind)},
        {NULL, ir_int(b, (int64_t)smelt_dtype_size(u->x->buf->dtype))},
        {NULL, ir_int(b, u->s.outer)}, {NULL, ir_int(b, u->s.n)}, {NULL, ir_int(b, u->s.inner)},
        {NULL, ir_int(b, u->sorted)}, {NULL, ir_int(b, u->bound)},
        {scratch[0], zero}, {scratch[1], zero}, {scratch[2], zero},
    };
    ir_stmt *call = ir_call_stmt(b, "smelt.unique", 14, args);
    for (int k = 2; k >= 0; k--) call = ir_allocate(b, scratch[k], call);
    return call;
}

typedef struct unique_part {
    const te_tensor *meta;
    int64_t off;
} unique_part;

static ir_expr *unique_part_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const unique_part *p = user;
    ir_expr *i = ir_add(&g->b, idx[0], ir_int(&g->b, p->off));
    return te_read(g, p->meta, &i);
}

/* Compiled: Y and the int64 outputs (first occurrences, counts and
 * positions in one buffer, copied out) each through smelt.unique at the
 * bound the graph was laid out with; the count a run-time dim the calls
 * write (the same value twice). */
static smelt_status unique_compute(op_compute_args *a)
{
    const op_axis_opt_attrs *at = a->node->op_attrs;
    te_tensor *x = a->in[0], *rt_dims;
    const smelt_tensor *y = &a->out_type[0];
    smelt_tensor xt = {.dtype = x->buf->dtype, .rank = x->buf->rank};
    memcpy(xt.dims, x->buf->shape, sizeof(int64_t) * (size_t)x->buf->rank);
    int axis = 0;
    if (at->has_axis) SMELT_TRY(op_norm_axis(a->ctx, a->node, at->axis, xt.rank, &axis));
    unique_build *u = smelt_arena_alloc(&a->te->arena, 2 * sizeof *u);
    if (!u) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
    int64_t bound = y->dims[at->has_axis ? axis : 0];
    u[0] = (unique_build){.x = x, .kind = unique_kind(x->buf->dtype), .sorted = at->sorted,
                          .s = slicing_of(&xt, at->has_axis, axis), .bound = bound};
    SMELT_TRY(op_count_slot(a, bound, &rt_dims, &u[0].rt));
    u[0].rt_dims = rt_dims;
    if (u[0].kind < 0)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED, "compiled code finds the unique "
                       "slices of %s tensors not yet; the reference executor runs it (--reference)",
                       smelt_dtype_name(x->buf->dtype));
    u[1] = u[0];
    u[1].want = 1;
    te_tensor *inputs[2] = {x, rt_dims};
    double flops = (double)op_numel(&xt) * 16.0;
    a->out[0] = te_extern_stage(a->te, "unique", y->dtype, y->rank, y->dims, 2, inputs, build_unique,
                                &u[0], "unique", flops);
    if (!a->out[0]) return smelt_ctx_status(a->ctx);
    te_extern_set_rt_ok(a->out[0]);
    bool meta_used = false;
    for (int o = 1; o < a->node->n_outputs; o++) meta_used = meta_used || a->node->outputs[o];
    if (!meta_used) return SMELT_OK;
    int64_t len = 2 * bound + u[0].s.n;
    te_tensor *meta = te_extern_stage(a->te, "unique_meta", SMELT_DT_INT64, 1, &len, 2, inputs,
                                      build_unique, &u[1], "unique", flops);
    if (!meta) return smelt_ctx_status(a->ctx);
    te_extern_set_rt_ok(meta);
    for (int o = 1; o < 4 && o < a->node->n_outputs; o++) {
        if (!a->node->outputs[o]) continue;
        unique_part *p = smelt_arena_alloc(&a->te->arena, sizeof *p);
        if (!p) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
        *p = (unique_part){meta, o == 1 ? 0 : o == 3 ? bound : 2 * bound};
        static const char *const names[4] = {NULL, "indices", "inverse_indices", "counts"};
        a->out[o] = te_compute(a->te, names[o], SMELT_DT_INT64, 1, a->out_type[o].dims,
                               unique_part_body, p, "injective");
        if (!a->out[o]) return smelt_ctx_status(a->ctx);
    }
    return SMELT_OK;
}

const op_def op_def_UNIQUE = {
    .compute = unique_compute, .import = unique_import, .infer = unique_infer,
    .eval = unique_eval, .count_bound = unique_count_bound, .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 4, .flags = OP_FLAG_ONE_COUNT,
};
