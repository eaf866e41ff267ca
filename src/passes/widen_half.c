/* Convolutions and matrix products of float16 or bfloat16 tensors computed
 * in float32: each such node gets its inputs through Cast(to FLOAT) and its
 * output through Cast(back), so it runs the float32 kernels (vectorised,
 * register-tiled, blocked layouts) where the half-precision form computed
 * element by element in scalar code (a 3x3 conv 27x, a 1x1 conv 63x slower
 * than in float32).  The value each node gives is the same: products of
 * half-precision numbers are exact in float32, the sum accumulates in
 * float32 (as the half kernels did), and the result is rounded to the half
 * type once, at the node's output.  Constant weights' casts fold at compile
 * time; a cast between two widened nodes (half -> float -> half -> float)
 * stays, as it rounds.  x86 CPUs have no half arithmetic in these kernels
 * (ONNX Runtime's CPU provider inserts the same casts). */
#include <string.h>

#include "ops/op.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

static bool is_half(smelt_dtype dt) { return dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16; }

static bool widens(const gr_node *n)
{
    switch (n->op) {
    case OP_CONV:
    case OP_CONV_TRANSPOSE:
    case OP_MATMUL:
    case OP_GEMM: break;
    default: return false;
    }
    if (n->n_outputs != 1 || !n->outputs[0] || !is_half(n->outputs[0]->dtype) ||
        n->outputs[0]->rank < 0)
        return false;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && (n->inputs[i]->dtype != n->outputs[0]->dtype || n->inputs[i]->rank < 0))
            return false;
    return true;
}

/* A Cast of v to `to`, its output typed like v. */
static gr_value *cast_of(smelt_ctx *ctx, gr_graph *g, const gr_node *at, const char *suffix,
                         gr_value *v, smelt_dtype to)
{
    char name[200];
    snprintf(name, sizeof name, "%.150s/%s", at->name ? at->name : "node", suffix);
    gr_node *c = pu_node_new(ctx, g, name, OP_CAST, &v, 1, 1);
    if (!c || pu_attr_int(ctx, g, c, "to", (int64_t)to) != SMELT_OK ||
        pu_node_import(ctx, g, c) != SMELT_OK)
        return NULL;
    gr_value *o = c->outputs[0];
    o->dtype = to;
    o->rank = v->rank;
    memcpy(o->dims, v->dims, sizeof o->dims);
    return o;
}

/* A constant's float32 copy (the weights, converted now: folding the Cast
 * would be refused for doubling the bytes, and the layout passes want
 * constant weights). */
static gr_value *widened_constant(smelt_ctx *ctx, gr_graph *g, const gr_value *v)
{
    const smelt_tensor *t = v->constant;
    int64_t n = smelt_tensor_numel(t);
    float *f = smelt_alloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    if (!f) {
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) f[i] = (float)op_get_f64(t, i);
    gr_value *w = pu_const_f32(ctx, g, v->name, t->rank, t->dims, f);
    smelt_free(f);
    return w;
}

static smelt_status widen(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    gr_value *out = n->outputs[0];
    smelt_dtype half = out->dtype;
    for (int i = 0; i < n->n_inputs; i++) {
        if (!n->inputs[i]) continue;
        gr_value *in = n->inputs[i];
        gr_value *w = in->constant ? widened_constant(ctx, g, in)
                                   : cast_of(ctx, g, n, "widen", in, SMELT_DT_FLOAT32);
        if (!w) return smelt_ctx_status(ctx) ? smelt_ctx_status(ctx) : SMELT_ERR_NOMEM;
        n->inputs[i] = w;
    }
    char name[200];
    snprintf(name, sizeof name, "%.150s/float32", out->name);
    gr_value *wide = gr_value_new(g, name);
    if (!wide) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    wide->dtype = SMELT_DT_FLOAT32;
    wide->rank = out->rank;
    memcpy(wide->dims, out->dims, sizeof wide->dims);
    pu_take_output(n, 0, wide);
    gr_value *back = cast_of(ctx, g, n, "narrow", wide, half);
    if (!back) return smelt_ctx_status(ctx) ? smelt_ctx_status(ctx) : SMELT_ERR_NOMEM;
    pu_take_output(back->producer, 0, out); /* the consumers and the graph output keep `out` */
    return SMELT_OK;
}

smelt_status pass_widen_half(smelt_ctx *ctx, gr_graph *g)
{
    bool changed = false;
    int count = g->nodes.len; /* the casts are appended: not revisited */
    for (int i = 0; i < count; i++) {
        gr_node *n = g->nodes.items[i];
        if (!widens(n)) continue;
        SMELT_TRY(widen(ctx, g, n));
        changed = true;
    }
    return changed ? pu_finish(ctx, g) : SMELT_OK;
}
