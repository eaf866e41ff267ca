/* float16/bfloat16 graphs computed in float32, as ONNX Runtime's CPU
 * provider computes them (its InsertCastTransformer): x86 has no half
 * arithmetic in these kernels, and the half forms ran element by element in
 * scalar code (a 3x3 conv 27x, a 1x1 conv 63x, ResNet-50 8x slower than in
 * float32).
 *
 * In a graph holding a half Conv, ConvTranspose, MatMul or Gemm, every such
 * product and every float op around it whose output type follows its inputs
 * (elementwise, broadcasting, data movement, reductions, pools,
 * normalisations, Softmax) runs in float32: each half value such a node
 * produces gets a float32 twin that widened consumers read, constant
 * weights are converted here (so layouts and packing apply), other half
 * inputs come through Cast(to FLOAT), and a value still read in half (by an
 * op left alone, or as a graph output) is the Cast of its twin back.  A
 * product's value is the one its half form gave (exact products, float32
 * sums, one rounding); between widened ops values are no longer rounded to
 * the half type, as in ONNX Runtime.  Graphs without a half product keep
 * their half ops (single elementwise ops round once either way).  Explicit
 * Casts, and ops whose output type an attribute sets, are never widened. */
#include <string.h>

#include "ops/op.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

static bool is_half(smelt_dtype dt) { return dt == SMELT_DT_FLOAT16 || dt == SMELT_DT_BFLOAT16; }

static bool is_float(smelt_dtype dt)
{
    return is_half(dt) || dt == SMELT_DT_FLOAT32 || dt == SMELT_DT_FLOAT64;
}

static bool is_product(op_kind k)
{
    return k == OP_CONV || k == OP_CONV_TRANSPOSE || k == OP_MATMUL || k == OP_GEMM;
}

/* Ops computing the same function in float32 as in the half type, their
 * float outputs typed by their float inputs. */
static bool widenable_op(op_kind k)
{
    switch (k) {
    case OP_CAST: case OP_CAST_LIKE: case OP_BIT_CAST: case OP_EYE_LIKE: case OP_ONE_HOT:
    case OP_QUANTIZE_LINEAR: case OP_DEQUANTIZE_LINEAR: case OP_HANN_WINDOW:
    case OP_HAMMING_WINDOW: case OP_BLACKMAN_WINDOW: case OP_TENSOR_SCATTER:
    case OP_LAYOUT_TRANSFORM:
        return false;
    case OP_SOFTMAX: case OP_LOG_SOFTMAX: case OP_LAYER_NORMALIZATION:
    case OP_INSTANCE_NORMALIZATION: case OP_GROUP_NORMALIZATION:
        return true;
    default: break;
    }
    if (is_product(k)) return true;
    switch (op_get(k)->pattern) {
    case OP_PATTERN_ELEMWISE: case OP_PATTERN_BROADCAST: case OP_PATTERN_INJECTIVE:
    case OP_PATTERN_REDUCTION: return true;
    default: return false;
    }
}

/* The half type n computes in, or UNDEFINED when n is not widened: every
 * float input and output of one half type, at least one of them, shapes known. */
static smelt_dtype half_of(const gr_node *n)
{
    if (!widenable_op(n->op)) return SMELT_DT_UNDEFINED;
    smelt_dtype half = SMELT_DT_UNDEFINED;
    for (int i = 0; i < n->n_inputs + n->n_outputs; i++) {
        const gr_value *v = i < n->n_inputs ? n->inputs[i] : n->outputs[i - n->n_inputs];
        if (!v || !is_float(v->dtype)) continue;
        if (v->rank < 0 || !is_half(v->dtype) || (half && v->dtype != half)) return SMELT_DT_UNDEFINED;
        half = v->dtype;
    }
    return half;
}

/* A Cast of v to `to`, its output typed like v. */
static gr_value *cast_of(smelt_ctx *ctx, gr_graph *g, const char *name, gr_value *v, smelt_dtype to)
{
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

/* A constant's float32 copy (folding a Cast of it would be refused for
 * doubling the bytes, and the layout passes want constant weights). */
static gr_value *widened_constant(smelt_ctx *ctx, gr_graph *g, const gr_value *v)
{
    const smelt_tensor *t = v->constant;
    int64_t n = smelt_tensor_numel(t);
    float *f = smelt_alloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    if (!f) {
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    const uint16_t *h = t->data;
    bool bf16 = t->dtype == SMELT_DT_BFLOAT16;
    for (int64_t i = 0; i < n; i++) f[i] = bf16 ? smelt_bf16_to_f32(h[i]) : smelt_f16_to_f32(h[i]);
    gr_value *w = pu_const_f32(ctx, g, v->name, t->rank, t->dims, f);
    smelt_free(f);
    return w;
}

typedef struct widen_state {
    gr_value **twin; /* per value id of the original graph: its float32 twin */
    bool *widened;   /* per value id: produced by a widened node (its twin instead) */
    int n;
} widen_state;

static smelt_status fail_status(smelt_ctx *ctx)
{
    return smelt_ctx_status(ctx) ? smelt_ctx_status(ctx) : SMELT_ERR_NOMEM;
}

/* v's float32 twin: made now for a constant or a value of an op left alone. */
static gr_value *twin_of(smelt_ctx *ctx, gr_graph *g, widen_state *st, gr_value *v)
{
    if (v->id >= st->n) { /* only the original graph's values are read here */
        smelt_errf(ctx, SMELT_ERR_INTERNAL, "widen_half: value '%s' made by the pass", v->name);
        return NULL;
    }
    if (st->twin[v->id]) return st->twin[v->id];
    char name[200];
    snprintf(name, sizeof name, "%.150s/float32", v->name);
    gr_value *w = v->constant ? widened_constant(ctx, g, v) : cast_of(ctx, g, name, v, SMELT_DT_FLOAT32);
    st->twin[v->id] = w;
    return w;
}

static smelt_status widen_node(smelt_ctx *ctx, gr_graph *g, widen_state *st, gr_node *n)
{
    for (int i = 0; i < n->n_inputs; i++) {
        gr_value *v = n->inputs[i];
        if (!v || !is_half(v->dtype)) continue;
        if (!(n->inputs[i] = twin_of(ctx, g, st, v))) return fail_status(ctx);
    }
    for (int k = 0; k < n->n_outputs; k++) {
        gr_value *out = n->outputs[k];
        if (!out || !is_half(out->dtype)) continue;
        char name[200];
        snprintf(name, sizeof name, "%.150s/float32", out->name);
        gr_value *wide = gr_value_new(g, name);
        if (!wide) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        wide->dtype = SMELT_DT_FLOAT32;
        wide->rank = out->rank;
        memcpy(wide->dims, out->dims, sizeof wide->dims);
        pu_take_output(n, k, wide);
        st->twin[out->id] = wide;
        st->widened[out->id] = true;
    }
    return SMELT_OK;
}

/* A widened value still read in half (an op left alone, a graph output) is
 * the Cast of its twin back. */
static smelt_status narrow_used(smelt_ctx *ctx, gr_graph *g, widen_state *st)
{
    int *uses = pu_use_counts(g);
    if (!uses) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_status s = SMELT_OK;
    for (int id = 0; s == SMELT_OK && id < st->n; id++) {
        if (!st->widened[id] || !uses[id]) continue;
        gr_value *v = g->values.items[id];
        char name[200];
        snprintf(name, sizeof name, "%.150s/narrow", v->name);
        gr_value *back = cast_of(ctx, g, name, st->twin[id], v->dtype);
        if (!back) s = fail_status(ctx);
        else pu_take_output(back->producer, 0, v);
    }
    smelt_free(uses);
    return s;
}

static bool has_half_product(const gr_graph *g)
{
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        if (is_product(n->op) && half_of(n)) return true;
    }
    return false;
}

smelt_status pass_widen_half(smelt_ctx *ctx, gr_graph *g)
{
    if (!has_half_product(g)) return SMELT_OK;
    widen_state st = {.n = g->values.len};
    st.twin = smelt_calloc((size_t)st.n + 1, sizeof *st.twin);
    st.widened = smelt_calloc((size_t)st.n + 1, sizeof *st.widened);
    smelt_status s = st.twin && st.widened ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    int count = g->nodes.len; /* topological; the casts are appended: not revisited */
    for (int i = 0; s == SMELT_OK && i < count; i++) {
        gr_node *n = g->nodes.items[i];
        if (half_of(n)) s = widen_node(ctx, g, &st, n);
    }
    if (s == SMELT_OK) s = narrow_used(ctx, g, &st);
    smelt_free(st.twin);
    smelt_free(st.widened);
    return s == SMELT_OK ? pu_finish(ctx, g) : s;
}
