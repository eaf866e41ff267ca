/* SwiGLU (opset 28): Y = A * sigmoid(alpha * A) * B, A and B of one shape
 * and dtype (the op does not broadcast).  16-bit floats are computed in
 * float and rounded once; the reference works in double. */
#include <math.h>

#include "ops/op.h"
#include "te/te.h"

OP_ATTRS(SWIGLU) = {{"alpha", 0, 0}, {NULL, 0, 0}};

typedef struct op_swiglu_attrs {
    float alpha;
} op_swiglu_attrs;

static smelt_status swiglu_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_swiglu_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    return op_attr_float(ctx, node, "alpha", 1.0f, &a->alpha);
}

static smelt_status swiglu_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    static const smelt_dtype k_floats[] = {SMELT_DT_FLOAT16, SMELT_DT_BFLOAT16, SMELT_DT_FLOAT32,
                                           SMELT_DT_FLOAT64, SMELT_DT_UNDEFINED};
    SMELT_TRY(op_check_dtype(ctx, node, in[0], "input A", k_floats));
    if (in[1]->dtype != in[0]->dtype)
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "A is %s and B is %s; expected one dtype",
                       smelt_dtype_name(in[0]->dtype), smelt_dtype_name(in[1]->dtype));
    bool same = in[0]->rank == in[1]->rank;
    for (int d = 0; same && d < in[0]->rank; d++)
        same = in[0]->dims[d] < 0 || in[1]->dims[d] < 0 || in[0]->dims[d] == in[1]->dims[d];
    if (!same)
        return op_errf(ctx, node, SMELT_ERR_SHAPE,
                       "A and B have different shapes; SwiGLU does not broadcast");
    op_copy_shape(&out[0], in[0]);
    for (int d = 0; d < in[0]->rank; d++)
        if (out[0].dims[d] < 0) out[0].dims[d] = in[1]->dims[d];
    return SMELT_OK;
}

static smelt_status swiglu_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx;
    double alpha = ((const op_swiglu_attrs *)node->op_attrs)->alpha;
    for (int64_t i = 0; i < op_numel(&out[0]); i++) {
        double a = op_get_f64(in[0], i), b = op_get_f64(in[1], i);
        op_set_f64(&out[0], i, a / (1.0 + exp(-alpha * a)) * b);
    }
    return SMELT_OK;
}

typedef struct swiglu_te {
    const te_tensor *a, *b;
    double alpha;
} swiglu_te;

static ir_expr *swiglu_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const swiglu_te *s = user;
    ir_builder *b = &g->b;
    smelt_dtype dt = s->a->buf->dtype;
    smelt_dtype work = dt == SMELT_DT_FLOAT64 ? dt : SMELT_DT_FLOAT32;
    ir_expr *x = ir_cast(b, work, te_read(g, s->a, idx));
    ir_expr *y = ir_cast(b, work, te_read(g, s->b, idx));
    ir_expr *ax = ir_mul(b, ir_const_float(b, work, s->alpha), x);
    ir_expr *gate = ir_mul(b, x, ir_call(b, IR_CALL_SIGMOID, work, 1, &ax));
    return ir_cast(b, dt, ir_mul(b, gate, y));
}

static smelt_status swiglu_compute(op_compute_args *a)
{
    swiglu_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    *s = (swiglu_te){a->in[0], a->in[1], ((const op_swiglu_attrs *)a->node->op_attrs)->alpha};
    const smelt_tensor *o = &a->out_type[0];
    a->out[0] = te_compute(a->te, "y", o->dtype, o->rank, o->dims, swiglu_body, s, "elemwise");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_SWIGLU = {
    .compute = swiglu_compute, .import = swiglu_import, .infer = swiglu_infer,
    .eval = swiglu_eval, .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
};
