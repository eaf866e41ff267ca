/* Window functions (opsets 17-28): HannWindow, HammingWindow, BlackmanWindow.
 *
 * Output: `size` values w(n), n = 0..size-1, over N = size (periodic, the
 * default) or size - 1 (symmetric), in onnx's reference's operation order,
 * computed in double and rounded once to output_datatype (a float type:
 * other types are refused).  The size must be known to know the shape (a
 * constant, or a model input compiled code specialises on). */
#include <math.h>

#include "ops/op.h"
#include "te/te.h"

typedef struct op_window_attrs {
    bool periodic;
    smelt_dtype dt;
} op_window_attrs;

OP_ATTRS(HANN_WINDOW) = {{"output_datatype", 0, 0}, {"periodic", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(HAMMING_WINDOW) = {{"output_datatype", 0, 0}, {"periodic", 0, 0}, {NULL, 0, 0}};
OP_ATTRS(BLACKMAN_WINDOW) = {{"output_datatype", 0, 0}, {"periodic", 0, 0}, {NULL, 0, 0}};

static smelt_status window_import(smelt_ctx *ctx, gr_graph *g, gr_node *node)
{
    op_window_attrs *a = op_attrs_new(ctx, g, node, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(op_attr_bool(ctx, node, "periodic", true, &a->periodic));
    int64_t t;
    SMELT_TRY(op_attr_int(ctx, node, "output_datatype", 1, &t));
    switch (t) { /* onnx TensorProto element types */
    case 1: a->dt = SMELT_DT_FLOAT32; break;
    case 10: a->dt = SMELT_DT_FLOAT16; break;
    case 11: a->dt = SMELT_DT_FLOAT64; break;
    case 16: a->dt = SMELT_DT_BFLOAT16; break;
    default:
        return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                       "attribute 'output_datatype' is %lld; smelt implements the float types "
                       "(1 float, 10 float16, 11 double, 16 bfloat16)",
                       (long long)t);
    }
    return SMELT_OK;
}

static smelt_status window_infer(smelt_ctx *ctx, const gr_node *node,
                                 const smelt_tensor *const *in, smelt_tensor *out)
{
    const op_window_attrs *a = node->op_attrs;
    static const smelt_dtype k_ints[] = {SMELT_DT_INT32, SMELT_DT_INT64, SMELT_DT_UNDEFINED};
    SMELT_TRY(op_check_dtype(ctx, node, in[0], "input 'size'", k_ints));
    if (in[0]->rank != 0 && !(in[0]->rank == 1 && in[0]->dims[0] == 1))
        return op_errf(ctx, node, SMELT_ERR_SHAPE, "size must be a scalar");
    out[0].dtype = a->dt;
    out[0].rank = 1;
    out[0].dims[0] = GR_DIM_UNKNOWN;
    if (in[0]->data) {
        int64_t n = op_get_i64(in[0], 0);
        if (n < 0)
            return op_errf(ctx, node, SMELT_ERR_SHAPE, "size is %lld; expected >= 0", (long long)n);
        out[0].dims[0] = n;
    }
    return SMELT_OK;
}

static double window_value(op_kind op, double n, double n1)
{
    const double pi = 3.14159265358979323846;
    switch (op) {
    case OP_HANN_WINDOW: {
        double s = sin(n * pi / n1);
        return s * s;
    }
    case OP_HAMMING_WINDOW: {
        const double alpha = 25.0 / 46.0;
        return alpha - cos(n * pi * 2.0 / n1) * (1.0 - alpha);
    }
    default: return cos(n * (pi * 2.0) / n1) * -0.5 + cos(n * (pi * 4.0) / n1) * 0.08 + 0.42;
    }
}

static smelt_status window_eval(smelt_ctx *ctx, const gr_node *node,
                                const smelt_tensor *const *in, smelt_tensor *out)
{
    (void)ctx, (void)in;
    const op_window_attrs *a = node->op_attrs;
    int64_t size = out[0].dims[0];
    double n1 = (double)(a->periodic ? size : size - 1);
    for (int64_t i = 0; i < size; i++) op_set_f64(&out[0], i, window_value(node->op, (double)i, n1));
    return SMELT_OK;
}

typedef struct window_te {
    op_kind op;
    double n1;
    smelt_dtype dt;
} window_te;

static ir_expr *c64(ir_builder *b, double v) { return ir_const_float(b, SMELT_DT_FLOAT64, v); }

static ir_expr *trig(ir_builder *b, ir_call_op f, ir_expr *x)
{
    return ir_call(b, f, SMELT_DT_FLOAT64, 1, &x);
}

/* window_value as an expression, in the same order. */
static ir_expr *window_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const window_te *s = user;
    ir_builder *b = &g->b;
    const double pi = 3.14159265358979323846;
    ir_expr *n = ir_cast(b, SMELT_DT_FLOAT64, idx[0]), *n1 = c64(b, s->n1), *v;
    if (s->op == OP_HANN_WINDOW) {
        ir_expr *x = trig(b, IR_CALL_SIN, ir_binary(b, IR_DIV, ir_mul(b, n, c64(b, pi)), n1));
        v = ir_mul(b, x, x);
    } else if (s->op == OP_HAMMING_WINDOW) {
        const double alpha = 25.0 / 46.0;
        ir_expr *x = ir_binary(b, IR_DIV, ir_mul(b, ir_mul(b, n, c64(b, pi)), c64(b, 2.0)), n1);
        v = ir_sub(b, c64(b, alpha), ir_mul(b, trig(b, IR_CALL_COS, x), c64(b, 1.0 - alpha)));
    } else {
        ir_expr *x2 = ir_binary(b, IR_DIV, ir_mul(b, n, c64(b, pi * 2.0)), n1);
        ir_expr *x4 = ir_binary(b, IR_DIV, ir_mul(b, n, c64(b, pi * 4.0)), n1);
        v = ir_add(b, ir_mul(b, trig(b, IR_CALL_COS, x2), c64(b, -0.5)),
                   ir_mul(b, trig(b, IR_CALL_COS, x4), c64(b, 0.08)));
        v = ir_add(b, v, c64(b, 0.42));
    }
    return ir_cast(b, s->dt, v);
}

static smelt_status window_compute(op_compute_args *a)
{
    window_te *s = smelt_arena_alloc(&a->te->arena, sizeof *s);
    if (!s) return op_errf(a->ctx, a->node, SMELT_ERR_NOMEM, "out of memory");
    const op_window_attrs *at = a->node->op_attrs;
    const smelt_tensor *o = &a->out_type[0];
    *s = (window_te){a->node->op, (double)(at->periodic ? o->dims[0] : o->dims[0] - 1), o->dtype};
    a->out[0] = te_compute(a->te, "y", o->dtype, 1, o->dims, window_body, s, "injective");
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

#define WINDOW_OP(ENUM)                                                                     \
    const op_def op_def_##ENUM = {.compute = window_compute, .import = window_import,     \
                                  .infer = window_infer, .eval = window_eval,             \
                                  .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,     \
                                  .max_outputs = 1}

WINDOW_OP(HANN_WINDOW);
WINDOW_OP(HAMMING_WINDOW);
WINDOW_OP(BLACKMAN_WINDOW);
