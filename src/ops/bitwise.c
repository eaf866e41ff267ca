/* Bitwise ops on integer tensors: BitShift (opsets 11-28; signed types from
 * 28), BitwiseAnd, BitwiseOr, BitwiseXor (broadcasting), BitwiseNot
 * (18-28) and BitCast (26-28, at the end).
 *
 * BitShift follows BitShift-28's definition for every count: a count that
 * is negative or at least the width gives 0, or -1 for a right shift of a
 * negative value; right shifts of signed values are arithmetic, left shifts
 * drop the bits moved past the width.  The compiled form is one stage of
 * the loop IR's bitwise kinds (IR_BITAND ... IR_SHR, ir.h), which define
 * the same results. */
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

typedef struct op_bitshift_attrs {
    bool left;
    int64_t opset;
} op_bitshift_attrs;

static const smelt_dtype k_int_types[] = {SMELT_DT_UINT8,  SMELT_DT_UINT16, SMELT_DT_UINT32,
                                          SMELT_DT_UINT64, SMELT_DT_INT8,   SMELT_DT_INT16,
                                          SMELT_DT_INT32,  SMELT_DT_INT64,  SMELT_DT_UNDEFINED};
/* BitShift before opset 28 */
static const smelt_dtype k_uint_types[] = {SMELT_DT_UINT8, SMELT_DT_UINT16, SMELT_DT_UINT32,
                                           SMELT_DT_UINT64, SMELT_DT_UNDEFINED};

static bool is_unsigned(smelt_dtype dt)
{
    return dt == SMELT_DT_UINT8 || dt == SMELT_DT_UINT16 || dt == SMELT_DT_UINT32 ||
           dt == SMELT_DT_UINT64;
}

static int width_of(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_DT_UINT8:
    case SMELT_DT_INT8: return 8;
    case SMELT_DT_UINT16:
    case SMELT_DT_INT16: return 16;
    case SMELT_DT_UINT32:
    case SMELT_DT_INT32: return 32;
    default: return 64;
    }
}

/* ---- import and shapes ---------------------------------------------------------- */

OP_ATTRS(BIT_SHIFT) = {{"direction", 0, 0}, {NULL, 0, 0}};

static smelt_status bitshift_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_bitshift_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    const char *dir;
    if (!gr_node_attr(node, "direction"))
        return op_errf(ctx, node, SMELT_ERR_ATTR, "missing required attribute 'direction'");
    SMELT_TRY(op_attr_string(ctx, node, "direction", "", &dir));
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
        return op_errf(ctx, node, SMELT_ERR_ATTR,
                       "attribute 'direction' is \"%s\"; expected \"LEFT\" or \"RIGHT\"", dir);
    a->left = strcmp(dir, "LEFT") == 0;
    a->opset = g->opset;
    return SMELT_OK;
}

static smelt_status check_int_input(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                                    int i, const smelt_dtype *allowed)
{
    char what[160];
    snprintf(what, sizeof what, "input '%s'",
             i < n->n_inputs && n->inputs[i] ? n->inputs[i]->name : "?");
    return op_check_dtype(ctx, n, t, what, allowed);
}

static smelt_status binary_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const smelt_dtype *allowed = k_int_types;
    if (node->op == OP_BIT_SHIFT && ((const op_bitshift_attrs *)node->op_attrs)->opset < 28)
        allowed = k_uint_types; /* signed types arrive with BitShift-28 */
    SMELT_TRY(check_int_input(ctx, node, in[0], 0, allowed));
    SMELT_TRY(check_int_input(ctx, node, in[1], 1, allowed));
    if (in[0]->dtype != in[1]->dtype)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "inputs have dtypes %s and %s; expected the same",
                       smelt_dtype_name(in[0]->dtype), smelt_dtype_name(in[1]->dtype));
    SMELT_TRY(op_broadcast(ctx, node, in[0], in[1], &out[0]));
    out[0].dtype = in[0]->dtype;
    return SMELT_OK;
}

static smelt_status not_infer(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                              smelt_tensor *out)
{
    SMELT_TRY(check_int_input(ctx, node, in[0], 0, k_int_types));
    op_copy_shape(&out[0], in[0]);
    return SMELT_OK;
}

/* ---- reference kernels ------------------------------------------------------------- */

/* x, count: values of dt as op_get_i64 reads them (signed sign-extended,
 * unsigned zero-extended, uint64 as its bits). */
static int64_t shift_value(smelt_dtype dt, bool left, int64_t x, int64_t count)
{
    bool u = is_unsigned(dt);
    bool in_range = u ? (uint64_t)count < (uint64_t)width_of(dt)
                      : count >= 0 && count < width_of(dt);
    if (left) return in_range ? (int64_t)((uint64_t)x << count) : 0;
    if (!in_range) return !u && x < 0 ? -1 : 0;
    if (u) return (int64_t)((uint64_t)x >> count);
    return x >> count; /* arithmetic for a negative x on the compilers smelt supports */
}

static int64_t bitwise_value(op_kind op, const gr_node *n, smelt_dtype dt, int64_t a, int64_t b)
{
    switch (op) {
    case OP_BITWISE_AND: return a & b;
    case OP_BITWISE_OR: return a | b;
    case OP_BITWISE_XOR: return a ^ b;
    default: return shift_value(dt, ((const op_bitshift_attrs *)n->op_attrs)->left, a, b);
    }
}

static smelt_status binary_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    (void)ctx;
    int64_t idx[SMELT_MAX_RANK] = {0}, n = op_numel(&out[0]);
    for (int64_t i = 0; i < n; i++, op_next_index(idx, out[0].dims, out[0].rank)) {
        int64_t a = op_get_i64(in[0], op_broadcast_offset(in[0], &out[0], idx));
        int64_t b = op_get_i64(in[1], op_broadcast_offset(in[1], &out[0], idx));
        op_set_i64(&out[0], i, bitwise_value(node->op, node, out[0].dtype, a, b));
    }
    return SMELT_OK;
}

static smelt_status not_eval(smelt_ctx *ctx, const gr_node *node, const smelt_tensor *const *in,
                             smelt_tensor *out)
{
    (void)ctx, (void)node;
    for (int64_t i = 0; i < op_numel(&out[0]); i++) op_set_i64(&out[0], i, ~op_get_i64(in[0], i));
    return SMELT_OK;
}

/* ---- compute definitions ----------------------------------------------------------- */

typedef struct bitwise_te {
    const te_tensor *a, *b;
    ir_kind kind;
    int rank;
    const gr_node *node;
} bitwise_te;

/* t read at the output index idx, numpy-broadcast (right-aligned, size-1 dims at 0) */
static ir_expr *read_bcast(te_graph *g, const te_tensor *t, int rank, ir_expr *const *idx)
{
    ir_expr *ti[SMELT_MAX_RANK];
    int off = rank - t->n_axes;
    for (int d = 0; d < t->n_axes; d++)
        ti[d] = t->buf->shape[d] == 1 ? ir_int(&g->b, 0) : idx[off + d];
    return te_read(g, t, ti);
}

static ir_expr *binary_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const bitwise_te *s = user;
    return ir_binary(&g->b, s->kind, read_bcast(g, s->a, s->rank, idx),
                     read_bcast(g, s->b, s->rank, idx));
}

/* ~x as x ^ all ones (the dtype's canonical all-ones value) */
static ir_expr *not_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const bitwise_te *s = user;
    smelt_dtype dt = s->a->buf->dtype;
    int64_t ones = is_unsigned(dt) && width_of(dt) < 64 ? (int64_t)((1ull << width_of(dt)) - 1) : -1;
    return ir_binary(&g->b, IR_BITXOR, te_read(g, s->a, idx), ir_const_int(&g->b, dt, ones));
}

static ir_kind ir_kind_of(const gr_node *n)
{
    switch (n->op) {
    case OP_BITWISE_AND: return IR_BITAND;
    case OP_BITWISE_OR: return IR_BITOR;
    case OP_BITWISE_XOR: return IR_BITXOR;
    case OP_BITWISE_NOT: return IR_BITXOR;
    default: return ((const op_bitshift_attrs *)n->op_attrs)->left ? IR_SHL : IR_SHR;
    }
}

static smelt_status bitwise_compute(op_compute_args *a)
{
    bitwise_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    const smelt_tensor *ot = &a->out_type[0];
    bool unary = a->node->op == OP_BITWISE_NOT;
    *s = (bitwise_te){a->in[0], unary ? NULL : a->in[1], ir_kind_of(a->node), ot->rank, a->node};
    a->out[0] = te_compute(a->te, "y", ot->dtype, ot->rank, ot->dims,
                           unary ? not_body : binary_body, s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

#define BITWISE_BINARY(ENUM, IMPORT)                                                            \
    const op_def op_def_##ENUM = {.compute = bitwise_compute, .import = IMPORT,                \
                                  .infer = binary_infer, .eval = binary_eval, .min_inputs = 2, \
                                  .max_inputs = 2, .min_outputs = 1, .max_outputs = 1}

BITWISE_BINARY(BIT_SHIFT, bitshift_import);
BITWISE_BINARY(BITWISE_AND, NULL);
BITWISE_BINARY(BITWISE_OR, NULL);
BITWISE_BINARY(BITWISE_XOR, NULL);

const op_def op_def_BITWISE_NOT = {.compute = bitwise_compute, .infer = not_infer,
                                   .eval = not_eval, .min_inputs = 1, .max_inputs = 1,
                                   .min_outputs = 1, .max_outputs = 1};

/* ---- BitCast (opsets 26-28) ----------------------------------------------------------
 * The bits of each element read as another type of the same width.  The
 * reference copies the bytes; the compute is one IR_CALL_BITCAST per
 * element.  A bool result is true for any non-zero byte (as viewing the
 * byte as a bool does).  float16/bfloat16 compile only where no bits would
 * be lost: never, since compiled code holds their values widened to float
 * (NaN payloads would not survive), so they stay on the reference path. */

OP_ATTRS(BIT_CAST) = {{"to", 0, 0}, {NULL, 0, 0}};

typedef struct op_bitcast_attrs {
    smelt_dtype to;
} op_bitcast_attrs;

static const smelt_dtype k_bitcast_types[] = {
    SMELT_DT_BOOL,   SMELT_DT_UINT8,   SMELT_DT_INT8,    SMELT_DT_UINT16, SMELT_DT_INT16,
    SMELT_DT_UINT32, SMELT_DT_INT32,   SMELT_DT_UINT64,  SMELT_DT_INT64,  SMELT_DT_FLOAT16,
    SMELT_DT_BFLOAT16, SMELT_DT_FLOAT32, SMELT_DT_FLOAT64, SMELT_DT_UNDEFINED};

static bool bitcast_type_ok(smelt_dtype dt)
{
    for (const smelt_dtype *t = k_bitcast_types; *t != SMELT_DT_UNDEFINED; t++)
        if (*t == dt) return true;
    return false;
}

static smelt_status bitcast_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_bitcast_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    if (!gr_node_attr(node, "to"))
        return op_errf(ctx, node, SMELT_ERR_ATTR, "missing required attribute 'to'");
    int64_t to;
    SMELT_TRY(op_attr_int(ctx, node, "to", 0, &to));
    if (to <= 0 || to >= SMELT_DT_COUNT_ || !bitcast_type_ok((smelt_dtype)to))
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                       "attribute 'to' is %lld (%s); BitCast is implemented to bool, the "
                       "integers and float16/bfloat16/float/double",
                       (long long)to,
                       to > 0 && to < SMELT_DT_COUNT_ ? smelt_dtype_name((smelt_dtype)to) : "?");
    a->to = (smelt_dtype)to;
    return SMELT_OK;
}

static smelt_status bitcast_infer(smelt_ctx *ctx, const gr_node *node,
                                  const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_bitcast_attrs *a = node->op_attrs;
    SMELT_TRY(check_int_input(ctx, node, in[0], 0, k_bitcast_types));
    if (smelt_dtype_size(in[0]->dtype) != smelt_dtype_size(a->to))
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "input is %s (%zu bytes) and 'to' is %s (%zu bytes); BitCast needs "
                       "types of one width",
                       smelt_dtype_name(in[0]->dtype), smelt_dtype_size(in[0]->dtype),
                       smelt_dtype_name(a->to), smelt_dtype_size(a->to));
    op_copy_shape(&out[0], in[0]);
    out[0].dtype = a->to;
    return SMELT_OK;
}

static smelt_status bitcast_eval(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx, (void)node;
    size_t bytes = (size_t)op_numel(&out[0]) * smelt_dtype_size(out[0].dtype);
    if (bytes) memcpy(out[0].data, in[0]->data, bytes);
    if (out[0].dtype == SMELT_DT_BOOL) /* a bool holds 0 or 1 */
        for (int64_t i = 0; i < op_numel(&out[0]); i++)
            op_set_i64(&out[0], i, ((const uint8_t *)in[0]->data)[i] != 0);
    return SMELT_OK;
}

static ir_expr *bitcast_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const bitwise_te *s = user;
    ir_expr *x = te_read(g, s->a, idx);
    smelt_dtype to = ((const op_bitcast_attrs *)s->node->op_attrs)->to;
    if (x->dtype == to) return x;
    return ir_call(&g->b, IR_CALL_BITCAST, to, 1, &x);
}

static smelt_status bitcast_compute(op_compute_args *a)
{
    const smelt_tensor *ot = &a->out_type[0];
    smelt_dtype from = a->in[0]->buf->dtype;
    if (from == SMELT_DT_FLOAT16 || from == SMELT_DT_BFLOAT16 || ot->dtype == SMELT_DT_FLOAT16 ||
        ot->dtype == SMELT_DT_BFLOAT16)
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "compiled BitCast from %s to %s: compiled code holds 16-bit floats "
                       "widened, so their bits (NaN payloads) would not survive",
                       smelt_dtype_name(from), smelt_dtype_name(ot->dtype));
    bitwise_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    *s = (bitwise_te){a->in[0], NULL, IR_BITXOR, ot->rank, a->node};
    a->out[0] = te_compute(a->te, "y", ot->dtype, ot->rank, ot->dims, bitcast_body, s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_BIT_CAST = {.compute = bitcast_compute, .import = bitcast_import,
                                .infer = bitcast_infer, .eval = bitcast_eval, .min_inputs = 1,
                                .max_inputs = 1, .min_outputs = 1, .max_outputs = 1};
