/* Sequence and optional ops (ONNX opsets 11-28): SequenceEmpty,
 * SequenceConstruct, SequenceAt, SequenceInsert, SequenceErase,
 * SequenceLength, SplitToSequence, ConcatFromSequence, Optional,
 * OptionalHasElement, OptionalGetElement.  Values are smelt.h's containers
 * (a smelt_tensor of dtype element | SMELT_DT_SEQUENCE_BIT or
 * SMELT_DT_OPTIONAL_BIT whose data is its elements).  Reference kernels
 * only: they move whole tensors, and compiled code holds tensors alone
 * (lowering refuses container values, naming the node).  A sequence's
 * element shapes are known once it holds data, so an op reading an element
 * (SequenceAt, ConcatFromSequence) leaves its output's shape to run time. */
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

static bool is_sequence(smelt_dtype dt)
{
    return ((unsigned)dt & SMELT_DT_SEQUENCE_BIT) && !((unsigned)dt & SMELT_DT_OPTIONAL_BIT);
}

static bool is_optional(smelt_dtype dt) { return (unsigned)dt & SMELT_DT_OPTIONAL_BIT; }

static smelt_dtype sequence_of(smelt_dtype elem)
{
    return (smelt_dtype)((unsigned)elem | SMELT_DT_SEQUENCE_BIT);
}

static smelt_status need_sequence(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t, int i)
{
    if (is_sequence(t->dtype)) return SMELT_OK;
    return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is %s %s, expected a sequence", i,
                   smelt_dtype_is_container(t->dtype) ? "an" : "a tensor of",
                   smelt_dtype_name(t->dtype));
}

static smelt_status need_tensor(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t, int i)
{
    if (!smelt_dtype_is_container(t->dtype) && smelt_dtype_size(t->dtype) > 0) return SMELT_OK;
    return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is a%s %s, expected a tensor", i,
                   is_optional(t->dtype) ? "n" : "", smelt_dtype_name(t->dtype));
}

/* A container's description: dtype, rank 1, its element count (or unknown). */
static void describe(smelt_tensor *out, smelt_dtype dt, int64_t count)
{
    memset(out, 0, sizeof *out);
    out->dtype = dt;
    out->rank = 1;
    out->dims[0] = count;
}

/* Known count of a container input (its data is there), else unknown. */
static int64_t count_of(const smelt_tensor *t)
{
    return t->data || GR_DIM_IS_STATIC(t->dims[0]) ? t->dims[0] : GR_DIM_UNKNOWN;
}

/* out (described by infer) gets room for its elements, zeroed. */
static smelt_status alloc_elements(smelt_ctx *ctx, const gr_node *n, smelt_tensor *out,
                                   int64_t count)
{
    out->rank = 1;
    out->dims[0] = count;
    out->data = smelt_calloc(count > 0 ? (size_t)count : 1, sizeof(smelt_tensor));
    return out->data ? SMELT_OK : op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory");
}

/* Element i of the output: a copy of src (on failure the output holds
 * only what was copied before, and is released whole by the caller). */
static smelt_status copy_element(smelt_ctx *ctx, const gr_node *n, smelt_tensor *out, int64_t i,
                                 const smelt_tensor *src)
{
    smelt_tensor *e = out->data;
    if (smelt_value_copy(src, &e[i])) return SMELT_OK;
    memset(&e[i], 0, sizeof e[i]);
    return op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory");
}

static const smelt_tensor *elements(const smelt_tensor *t) { return t->data; }

/* A position input: one int32/int64 element, normalised from [-n, n - 1 +
 * past_end] into [0, n - 1 + past_end]. */
static smelt_status read_position(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *p,
                                  int64_t count, bool past_end, int64_t *pos)
{
    if ((p->dtype != SMELT_DT_INT32 && p->dtype != SMELT_DT_INT64) || op_numel(p) != 1)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "position must be one int32 or int64, got %s "
                       "with %lld elements", smelt_dtype_name(p->dtype), (long long)op_numel(p));
    if (!p->data || count < 0) return SMELT_OK; /* checked at run time */
    int64_t v = op_get_i64(p, 0), hi = past_end ? count : count - 1;
    if (v < -count || v > hi)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "position %lld is out of range [%lld, %lld] "
                       "for a sequence of %lld tensors", (long long)v, (long long)-count,
                       (long long)hi, (long long)count);
    *pos = v < 0 ? v + count : v;
    return SMELT_OK;
}

/* ---- SequenceEmpty ---- */

typedef struct seq_empty_attrs {
    smelt_dtype dtype;
} seq_empty_attrs;

OP_ATTRS(SEQUENCE_EMPTY) = {{"dtype", 0, 0}, {NULL, 0, 0}};

static smelt_status seq_empty_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    seq_empty_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    int64_t dt;
    SMELT_TRY(op_attr_int(ctx, n, "dtype", SMELT_DT_FLOAT32, &dt));
    if (dt <= 0 || dt >= SMELT_DT_COUNT_ || !smelt_dtype_size((smelt_dtype)dt) ||
        dt == SMELT_DT_COMPLEX64 || dt == SMELT_DT_COMPLEX128)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "attribute 'dtype' %lld is not an element "
                       "type smelt supports", (long long)dt);
    a->dtype = (smelt_dtype)dt;
    return SMELT_OK;
}

static smelt_status seq_empty_infer(smelt_ctx *ctx, const gr_node *n,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx;
    (void)in;
    describe(&out[0], sequence_of(((const seq_empty_attrs *)n->op_attrs)->dtype), 0);
    return SMELT_OK;
}

static smelt_status seq_empty_eval(smelt_ctx *ctx, const gr_node *n,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)in;
    return alloc_elements(ctx, n, &out[0], 0);
}

/* ---- SequenceConstruct ---- */

static smelt_status seq_construct_infer(smelt_ctx *ctx, const gr_node *n,
                                        const smelt_tensor *const *in, smelt_tensor *out)
{
    for (int i = 0; i < n->n_inputs; i++) {
        if (!in[i]) return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is missing", i);
        SMELT_TRY(need_tensor(ctx, n, in[i], i));
        if (in[i]->dtype != in[0]->dtype)
            return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is %s, input 0 is %s: a sequence "
                           "holds one element type", i, smelt_dtype_name(in[i]->dtype),
                           smelt_dtype_name(in[0]->dtype));
    }
    describe(&out[0], sequence_of(in[0]->dtype), n->n_inputs);
    return SMELT_OK;
}

static smelt_status seq_construct_eval(smelt_ctx *ctx, const gr_node *n,
                                       const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(alloc_elements(ctx, n, &out[0], n->n_inputs));
    for (int i = 0; i < n->n_inputs; i++) SMELT_TRY(copy_element(ctx, n, &out[0], i, in[i]));
    return SMELT_OK;
}

/* ---- SequenceAt ---- */

static smelt_status seq_at_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                 smelt_tensor *out)
{
    SMELT_TRY(need_sequence(ctx, n, in[0], 0));
    int64_t pos = 0;
    SMELT_TRY(read_position(ctx, n, in[1], in[0]->dims[0], false, &pos));
    if (!in[0]->data || !in[1]->data)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "the element's shape is known at run "
                       "time only");
    op_copy_shape(&out[0], &elements(in[0])[pos]);
    return SMELT_OK;
}

static smelt_status seq_at_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    int64_t pos = 0;
    SMELT_TRY(read_position(ctx, n, in[1], in[0]->dims[0], false, &pos));
    const smelt_tensor *e = &elements(in[0])[pos];
    size_t nb = smelt_tensor_nbytes(e);
    if (nb) memcpy(out[0].data, e->data, nb);
    return SMELT_OK;
}

/* ---- SequenceInsert ---- */

static smelt_status seq_insert_infer(smelt_ctx *ctx, const gr_node *n,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(need_sequence(ctx, n, in[0], 0));
    SMELT_TRY(need_tensor(ctx, n, in[1], 1));
    if (sequence_of(in[1]->dtype) != in[0]->dtype)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "the tensor is %s, the sequence holds %s",
                       smelt_dtype_name(in[1]->dtype),
                       smelt_dtype_name(smelt_dtype_element(in[0]->dtype)));
    int64_t count = count_of(in[0]), pos;
    const smelt_tensor *p = op_input(n, in, 2);
    if (p && count != GR_DIM_UNKNOWN) SMELT_TRY(read_position(ctx, n, p, count, true, &pos));
    describe(&out[0], in[0]->dtype, count == GR_DIM_UNKNOWN ? count : count + 1);
    return SMELT_OK;
}

static smelt_status seq_insert_eval(smelt_ctx *ctx, const gr_node *n,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    int64_t count = in[0]->dims[0], pos = count;
    const smelt_tensor *p = op_input(n, in, 2);
    if (p) SMELT_TRY(read_position(ctx, n, p, count, true, &pos));
    SMELT_TRY(alloc_elements(ctx, n, &out[0], count + 1));
    for (int64_t i = 0, k = 0; i <= count; i++)
        SMELT_TRY(copy_element(ctx, n, &out[0], i, i == pos ? in[1] : &elements(in[0])[k++]));
    return SMELT_OK;
}

/* ---- SequenceErase ---- */

static smelt_status seq_erase_infer(smelt_ctx *ctx, const gr_node *n,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(need_sequence(ctx, n, in[0], 0));
    int64_t count = count_of(in[0]), pos;
    const smelt_tensor *p = op_input(n, in, 1);
    if (count == 0)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "the sequence is empty: nothing to erase");
    if (p && count != GR_DIM_UNKNOWN) SMELT_TRY(read_position(ctx, n, p, count, false, &pos));
    describe(&out[0], in[0]->dtype, count == GR_DIM_UNKNOWN ? count : count - 1);
    return SMELT_OK;
}

static smelt_status seq_erase_eval(smelt_ctx *ctx, const gr_node *n,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    int64_t count = in[0]->dims[0], pos = count - 1;
    const smelt_tensor *p = op_input(n, in, 1);
    if (p) SMELT_TRY(read_position(ctx, n, p, count, false, &pos));
    SMELT_TRY(alloc_elements(ctx, n, &out[0], count - 1));
    for (int64_t i = 0, k = 0; i < count; i++)
        if (i != pos) SMELT_TRY(copy_element(ctx, n, &out[0], k++, &elements(in[0])[i]));
    return SMELT_OK;
}

/* ---- SequenceLength ---- */

static smelt_status seq_length_infer(smelt_ctx *ctx, const gr_node *n,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(need_sequence(ctx, n, in[0], 0));
    out[0].dtype = SMELT_DT_INT64;
    out[0].rank = 0;
    return SMELT_OK;
}

static smelt_status seq_length_eval(smelt_ctx *ctx, const gr_node *n,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx;
    (void)n;
    *(int64_t *)out[0].data = in[0]->dims[0];
    return SMELT_OK;
}

/* ---- SplitToSequence ---- */

typedef struct split_seq_attrs {
    int64_t axis;
    bool keepdims;
} split_seq_attrs;

OP_ATTRS(SPLIT_TO_SEQUENCE) = {{"axis", 0, 0}, {"keepdims", 0, 0}, {NULL, 0, 0}};

static smelt_status split_seq_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    split_seq_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(op_attr_int(ctx, n, "axis", 0, &a->axis));
    return op_attr_bool(ctx, n, "keepdims", true, &a->keepdims);
}

/* The chunk lengths along the axis (split known): *count of them in *len
 * (allocated), as the spec defines a scalar and a 1-D split. */
static smelt_status split_lengths(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *split,
                                  int64_t dim, int64_t **len, int64_t *count)
{
    int64_t k = op_numel(split);
    if (split->rank == 0) {
        int64_t each = op_get_i64(split, 0);
        if (each <= 0)
            return op_errf(ctx, n, SMELT_ERR_MODEL, "split %lld is not positive", (long long)each);
        k = dim / each + (dim % each != 0);
    }
    *len = smelt_calloc(k > 0 ? (size_t)k : 1, sizeof **len);
    if (!*len) return op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory");
    int64_t sum = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t each = op_get_i64(split, split->rank == 0 ? 0 : i);
        (*len)[i] = split->rank == 0 && i == k - 1 ? dim - sum : each;
        if ((*len)[i] < 0) {
            smelt_free(*len);
            return op_errf(ctx, n, SMELT_ERR_MODEL, "split[%lld] = %lld is negative",
                           (long long)i, (long long)each);
        }
        sum += (*len)[i];
    }
    *count = k;
    if (sum == dim) return SMELT_OK;
    smelt_free(*len);
    return op_errf(ctx, n, SMELT_ERR_MODEL, "the split lengths add up to %lld, the axis has %lld",
                   (long long)sum, (long long)dim);
}

static smelt_status split_seq_check(smelt_ctx *ctx, const gr_node *n,
                                    const smelt_tensor *const *in, int *axis)
{
    const split_seq_attrs *a = n->op_attrs;
    SMELT_TRY(need_tensor(ctx, n, in[0], 0));
    if (in[0]->rank < 1) return op_errf(ctx, n, SMELT_ERR_MODEL, "the input is a scalar");
    SMELT_TRY(op_norm_axis(ctx, n, a->axis, in[0]->rank, axis));
    const smelt_tensor *split = op_input(n, in, 1);
    if (split && ((split->dtype != SMELT_DT_INT32 && split->dtype != SMELT_DT_INT64) ||
                  split->rank > 1))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "split must be an int32 or int64 scalar or 1-D "
                       "tensor, got %s of rank %d", smelt_dtype_name(split->dtype), split->rank);
    return SMELT_OK;
}

static smelt_status split_seq_infer(smelt_ctx *ctx, const gr_node *n,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    int axis;
    SMELT_TRY(split_seq_check(ctx, n, in, &axis));
    const smelt_tensor *split = op_input(n, in, 1);
    int64_t dim = in[0]->dims[axis], count = GR_DIM_UNKNOWN;
    if (!split) count = GR_DIM_IS_STATIC(dim) ? dim : GR_DIM_UNKNOWN;
    else if (split->rank == 1) count = split->dims[0];
    if (split && split->data && GR_DIM_IS_STATIC(dim)) {
        int64_t *len;
        SMELT_TRY(split_lengths(ctx, n, split, dim, &len, &count));
        smelt_free(len);
    }
    describe(&out[0], sequence_of(in[0]->dtype), count);
    return SMELT_OK;
}

/* Chunk [start, start + len) of x along axis into e (squeezed when asked). */
static smelt_status take_chunk(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *x, int axis,
                               int64_t start, int64_t len, bool squeeze, smelt_tensor *e)
{
    memset(e, 0, sizeof *e);
    e->dtype = x->dtype;
    e->rank = x->rank;
    memcpy(e->dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    e->dims[axis] = len;
    int64_t outer = 1, inner = smelt_dtype_size(x->dtype);
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    size_t nb = smelt_tensor_nbytes(e);
    e->data = smelt_alloc(nb ? nb : 1);
    if (!e->data) return op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t o = 0; o < outer; o++)
        memcpy((char *)e->data + o * len * inner,
               (const char *)x->data + (o * x->dims[axis] + start) * inner, (size_t)(len * inner));
    if (squeeze) {
        memmove(e->dims + axis, e->dims + axis + 1, sizeof(int64_t) * (size_t)(x->rank - axis - 1));
        e->rank--;
    }
    return SMELT_OK;
}

static smelt_status split_seq_eval(smelt_ctx *ctx, const gr_node *n,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const split_seq_attrs *a = n->op_attrs;
    int axis;
    SMELT_TRY(split_seq_check(ctx, n, in, &axis));
    const smelt_tensor *split = op_input(n, in, 1);
    int64_t dim = in[0]->dims[axis], count = dim, *len = NULL;
    if (split) SMELT_TRY(split_lengths(ctx, n, split, dim, &len, &count));
    smelt_status s = alloc_elements(ctx, n, &out[0], count);
    smelt_tensor *e = out[0].data;
    for (int64_t i = 0, start = 0; s == SMELT_OK && i < count; i++) {
        int64_t l = len ? len[i] : 1;
        s = take_chunk(ctx, n, in[0], axis, start, l, !split && !a->keepdims, &e[i]);
        start += l;
    }
    smelt_free(len);
    return s;
}

/* ---- ConcatFromSequence ---- */

typedef struct concat_seq_attrs {
    int64_t axis;
    bool new_axis;
} concat_seq_attrs;

OP_ATTRS(CONCAT_FROM_SEQUENCE) = {{"axis", 0, 0}, {"new_axis", 0, 0}, {NULL, 0, 0}};

static smelt_status concat_seq_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    concat_seq_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    if (!gr_node_attr(n, "axis"))
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'axis' is required");
    SMELT_TRY(op_attr_int(ctx, n, "axis", 0, &a->axis));
    return op_attr_bool(ctx, n, "new_axis", false, &a->new_axis);
}

/* The output's shape from the elements (all there): equal but for the
 * axis, whose lengths add up (new_axis: equal shapes, stacked). */
static smelt_status concat_seq_shape(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *seq,
                                     smelt_tensor *out, int *axis)
{
    const concat_seq_attrs *a = n->op_attrs;
    const smelt_tensor *e = elements(seq);
    if (seq->dims[0] == 0)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "the sequence is empty: nothing to concatenate");
    int rank = e[0].rank + (a->new_axis ? 1 : 0);
    if (rank > SMELT_MAX_RANK || rank < 1)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "cannot concatenate tensors of rank %d%s",
                       e[0].rank, a->new_axis ? " along a new axis" : "");
    SMELT_TRY(op_norm_axis(ctx, n, a->axis, rank, axis));
    memset(out, 0, sizeof *out);
    out->dtype = e[0].dtype;
    out->rank = rank;
    for (int d = 0, s = 0; d < rank; d++)
        out->dims[d] = a->new_axis && d == *axis ? 1 : e[0].dims[s++];
    out->dims[*axis] = 0;
    for (int64_t i = 0; i < seq->dims[0]; i++) {
        bool same = e[i].rank == e[0].rank;
        for (int d = 0; same && d < e[0].rank; d++)
            same = e[i].dims[d] == e[0].dims[d] || (!a->new_axis && d == *axis);
        if (!same)
            return op_errf(ctx, n, SMELT_ERR_MODEL, "element %lld's shape does not fit element "
                           "0's%s", (long long)i, a->new_axis ? " (stacking needs equal shapes)"
                                                             : " outside the axis");
        out->dims[*axis] += a->new_axis ? 1 : e[i].dims[*axis];
    }
    return SMELT_OK;
}

static smelt_status concat_seq_infer(smelt_ctx *ctx, const gr_node *n,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(need_sequence(ctx, n, in[0], 0));
    if (!in[0]->data)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "the elements' shapes are known at run "
                       "time only");
    int axis;
    return concat_seq_shape(ctx, n, in[0], &out[0], &axis);
}

static smelt_status concat_seq_eval(smelt_ctx *ctx, const gr_node *n,
                                    const smelt_tensor *const *in, smelt_tensor *out)
{
    smelt_tensor shape;
    int axis;
    SMELT_TRY(concat_seq_shape(ctx, n, in[0], &shape, &axis));
    const smelt_tensor *e = elements(in[0]);
    int64_t outer = 1, inner = smelt_dtype_size(shape.dtype), done = 0;
    for (int d = 0; d < axis; d++) outer *= shape.dims[d];
    for (int d = axis + 1; d < shape.rank; d++) inner *= shape.dims[d];
    for (int64_t i = 0; i < in[0]->dims[0]; i++) {
        const concat_seq_attrs *a = n->op_attrs;
        int64_t len = a->new_axis ? 1 : e[i].dims[axis];
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)out[0].data + (o * shape.dims[axis] + done) * inner,
                   (const char *)e[i].data + o * len * inner, (size_t)(len * inner));
        done += len;
    }
    return SMELT_OK;
}

/* ---- Optional ---- */

typedef struct optional_attrs {
    smelt_dtype type; /* the attribute 'type' (UNDEFINED: absent) */
} optional_attrs;

OP_ATTRS(OPTIONAL) = {{"type", 0, 0}, {NULL, 0, 0}};

static smelt_status optional_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    optional_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(op_attr_type(ctx, n, "type", &a->type));
    if (is_optional(a->type))
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "attribute 'type' is an optional: "
                       "optionals of optionals are not supported");
    bool has_input = n->n_inputs > 0 && n->inputs[0];
    if (!has_input && a->type == SMELT_DT_UNDEFINED)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "an Optional without an input needs the "
                       "attribute 'type'");
    return SMELT_OK;
}

static smelt_status optional_infer(smelt_ctx *ctx, const gr_node *n,
                                   const smelt_tensor *const *in, smelt_tensor *out)
{
    const optional_attrs *a = n->op_attrs;
    const smelt_tensor *x = op_input(n, in, 0);
    smelt_dtype inner = x ? x->dtype : a->type;
    if (x && is_optional(x->dtype))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "the input is an optional already");
    if (x && a->type != SMELT_DT_UNDEFINED && a->type != x->dtype)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "attribute 'type' says %s, the input is %s",
                       smelt_dtype_name(a->type), smelt_dtype_name(x->dtype));
    describe(&out[0], (smelt_dtype)((unsigned)inner | SMELT_DT_OPTIONAL_BIT), x ? 1 : 0);
    return SMELT_OK;
}

static smelt_status optional_eval(smelt_ctx *ctx, const gr_node *n,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = op_input(n, in, 0);
    SMELT_TRY(alloc_elements(ctx, n, &out[0], x ? 1 : 0));
    return x ? copy_element(ctx, n, &out[0], 0, x) : SMELT_OK;
}

/* ---- OptionalHasElement, OptionalGetElement ----
 * Opset 15 takes an optional; 18 also a tensor or sequence (which is
 * there) and, for OptionalHasElement, no input at all (empty). */

typedef struct optional_access_attrs {
    bool optional_only; /* opsets 15-17 */
} optional_access_attrs;

static smelt_status optional_access_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    optional_access_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    a->optional_only = g->opset < 18;
    if (a->optional_only && (n->n_inputs < 1 || !n->inputs[0]))
        return op_errf(ctx, n, SMELT_ERR_MODEL, "the input is required before opset 18");
    return SMELT_OK;
}

static smelt_status check_access_input(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *x)
{
    const optional_access_attrs *a = n->op_attrs;
    if (!x || !a->optional_only || is_optional(x->dtype)) return SMELT_OK;
    return op_errf(ctx, n, SMELT_ERR_MODEL, "the input is %s %s; before opset 18 it must be an "
                   "optional", smelt_dtype_is_container(x->dtype) ? "a" : "a tensor of",
                   smelt_dtype_name(x->dtype));
}

static smelt_status has_element_infer(smelt_ctx *ctx, const gr_node *n,
                                      const smelt_tensor *const *in, smelt_tensor *out)
{
    SMELT_TRY(check_access_input(ctx, n, op_input(n, in, 0)));
    out[0].dtype = SMELT_DT_BOOL;
    out[0].rank = 0;
    return SMELT_OK;
}

static smelt_status has_element_eval(smelt_ctx *ctx, const gr_node *n,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx;
    const smelt_tensor *x = op_input(n, in, 0);
    bool has = x && (!is_optional(x->dtype) || x->dims[0] == 1);
    *(uint8_t *)out[0].data = has;
    return SMELT_OK;
}

static smelt_status get_element_infer(smelt_ctx *ctx, const gr_node *n,
                                      const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = in[0];
    SMELT_TRY(check_access_input(ctx, n, x));
    if (!is_optional(x->dtype)) {
        op_copy_shape(&out[0], x);
        return SMELT_OK;
    }
    smelt_dtype inner = smelt_dtype_element(x->dtype);
    if (x->data && x->dims[0] == 0)
        return op_errf(ctx, n, SMELT_ERR_MODEL, "the optional is empty");
    if (x->data) {
        op_copy_shape(&out[0], &elements(x)[0]);
        return SMELT_OK;
    }
    if (!smelt_dtype_is_container(inner))
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "the tensor's shape is known at run time "
                       "only");
    describe(&out[0], inner, GR_DIM_UNKNOWN);
    return SMELT_OK;
}

static smelt_status get_element_eval(smelt_ctx *ctx, const gr_node *n,
                                     const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_tensor *x = is_optional(in[0]->dtype) ? &elements(in[0])[0] : in[0];
    if (smelt_dtype_is_container(x->dtype))
        return smelt_value_copy(x, &out[0]) ? SMELT_OK
                                            : op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory");
    size_t nb = smelt_tensor_nbytes(x);
    if (nb) memcpy(out[0].data, x->data, nb);
    return SMELT_OK;
}

/* Opset 18's forms on a tensor compile: OptionalGetElement passes it on,
 * OptionalHasElement is true (its forms on optionals are refused by
 * lowering before any compute is asked for). */
static ir_expr *pass_on_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return te_read(g, user, idx);
}

static smelt_status get_element_compute(op_compute_args *a)
{
    const te_tensor *x = a->in[0];
    a->out[0] = te_compute(a->te, "y", x->buf->dtype, x->buf->rank, x->buf->shape, pass_on_body,
                           (void *)x, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

static ir_expr *true_body(te_graph *g, ir_expr *const *idx, void *user)
{
    (void)idx;
    (void)user;
    return ir_const_int(&g->b, SMELT_DT_BOOL, 1);
}

static smelt_status has_element_compute(op_compute_args *a)
{
    if (!a->in[0]) /* no input: inference folds it to false */
        return op_errf(a->ctx, a->node, SMELT_ERR_INTERNAL, "an absent input was not folded");
    a->out[0] = te_compute(a->te, "y", SMELT_DT_BOOL, 0, NULL, true_body, NULL, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

#define CONTAINER_OP(ENUM, IMPORT, INFER, EVAL, MIN_IN, MAX_IN)                                    \
    const op_def op_def_##ENUM = {                                                                \
        .import = IMPORT, .infer = INFER, .eval = EVAL, .min_inputs = MIN_IN,                     \
        .max_inputs = MAX_IN, .min_outputs = 1, .max_outputs = 1,                                 \
        .flags = OP_FLAG_CONTAINERS,                                                              \
    }

CONTAINER_OP(SEQUENCE_EMPTY, seq_empty_import, seq_empty_infer, seq_empty_eval, 0, 0);
CONTAINER_OP(SEQUENCE_CONSTRUCT, NULL, seq_construct_infer, seq_construct_eval, 1, -1);
CONTAINER_OP(SEQUENCE_AT, NULL, seq_at_infer, seq_at_eval, 2, 2);
CONTAINER_OP(SEQUENCE_INSERT, NULL, seq_insert_infer, seq_insert_eval, 2, 3);
CONTAINER_OP(SEQUENCE_ERASE, NULL, seq_erase_infer, seq_erase_eval, 1, 2);
CONTAINER_OP(SEQUENCE_LENGTH, NULL, seq_length_infer, seq_length_eval, 1, 1);
CONTAINER_OP(SPLIT_TO_SEQUENCE, split_seq_import, split_seq_infer, split_seq_eval, 1, 2);
CONTAINER_OP(CONCAT_FROM_SEQUENCE, concat_seq_import, concat_seq_infer, concat_seq_eval, 1, 1);
CONTAINER_OP(OPTIONAL, optional_import, optional_infer, optional_eval, 0, 1);
const op_def op_def_OPTIONAL_HAS_ELEMENT = {
    .compute = has_element_compute, .import = optional_access_import,
    .infer = has_element_infer, .eval = has_element_eval, .min_inputs = 0, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1, .flags = OP_FLAG_CONTAINERS,
};
const op_def op_def_OPTIONAL_GET_ELEMENT = {
    .compute = get_element_compute, .import = optional_access_import,
    .infer = get_element_infer, .eval = get_element_eval, .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1, .flags = OP_FLAG_CONTAINERS,
};
