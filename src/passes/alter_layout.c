/* Convolution chains in the blocked layout NCHW[x]c (ops/layout.h).
 *
 * Every 2-D float32 Conv with constant weights, group 1 or depthwise, becomes
 * a ConvNCHWc with its weights and bias packed at compile time.  Its output
 * channels go in blocks of b(C), the largest of V, V/2, ..., 1 dividing C,
 * with V the target's float32 vector lanes (graph->hw.lanes), so one
 * vector holds one block.  Layout-agnostic consumers stay blocked:
 *   unary elementwise ops (Relu, Clip, Sigmoid, HardSwish...);
 *   broadcasting ops between blocked tensors of one channel count, scalars
 *   and per-channel constants (residual Add, squeeze-excite Mul);
 *   inference BatchNormalization (as Mul + Add by packed constants);
 *   MaxPool/AveragePool (a 3-D window [kh, kw, 1] over [N, C/b, H, W, b]),
 *   GlobalAverage/MaxPool (ReduceMean/Max over H, W), spatial reductions;
 *   Concat along channels, Pad of the spatial dims.
 * Walking the nodes in order, each value has its plain form and at most
 * two blocked forms.  A value whose producer went blocked gets its plain
 * form back (a LayoutTransform producing the original value, so graph
 * output names stay) only when a plain consumer or a graph output asks; a
 * blocked consumer asks for the block it needs, converted once per block.
 * A group-1 ConvNCHWc reads a plain input directly as blocks of 1 (the same
 * memory), so a model's input needs no conversion.  Conversions of
 * constants are evaluated here.  Finally chains of conversions are merged
 * and A -> B -> A pairs cancelled.
 */
#include <math.h>
#include <string.h>

#include "ops/layout.h"
#include "ops/norm.h"
#include "ops/pool.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

/* Output blocks below this (C not divisible by 4) keep a Conv plain unless
 * its output plane is tiny: narrow vectors lose to the plain schedule, which
 * vectorises along W. */
#define LAYOUT_MIN_BLOCK 4
#define LAYOUT_SMALL_PLANE 64
/* A plain input (a model's, or a plain op's output) with at least this many
 * channels is converted to blocks for a Conv: reading it as blocks of 1
 * broadcasts one channel per load and strides a whole plane per channel;
 * measured on Zen 3 (AVX2, 1 thread): 1x1 convs of 80 to 1024 channels
 * 3-10x slower than the blocked conv plus the conversion.  Stems (3
 * channels) stay plain, where the wide-kernel rule reads them directly. */
#define LAYOUT_CONVERT_INPUT_MIN_CHANNELS 16

/* What the pass knows of one value that existed before it. */
typedef struct lay_value {
    gr_value *blocked; /* the value in blocks of `block`, or NULL */
    int64_t block;
    gr_value *alt; /* a second blocking a consumer asked for, or NULL */
    int64_t alt_block;
    bool rewritten; /* its producer went blocked: the plain form is made on demand */
} lay_value;

typedef struct lay_state {
    smelt_ctx *ctx;
    gr_graph *g;
    int lanes;
    int n_values; /* values before the pass: entries of v */
    lay_value *v;
} lay_state;

static smelt_status oom(lay_state *s) { return smelt_errf(s->ctx, SMELT_ERR_NOMEM, "out of memory"); }

static int64_t block_of(const lay_state *s, int64_t c)
{
    for (int64_t b = s->lanes; b > 1; b /= 2)
        if (c % b == 0) return b;
    return 1;
}

static lay_value *info(lay_state *s, const gr_value *v)
{
    return v && v->id < s->n_values ? &s->v[v->id] : NULL;
}

/* A 4-D value with static, non-empty dims. */
static bool static_4d(const gr_value *v) { return v && v->rank == 4 && gr_value_numel(v) > 0; }

static bool static_f32_4d(const gr_value *v)
{
    return static_4d(v) && v->dtype == SMELT_DT_FLOAT32;
}

/* ---- building nodes ---- */

/* Output type of a new node (one output) from its op's shape inference. */
static smelt_status infer_types(lay_state *s, gr_node *n)
{
    int ni = n->n_inputs;
    smelt_tensor *infos = smelt_calloc((size_t)ni + 1, sizeof *infos);
    const smelt_tensor **in = smelt_calloc((size_t)ni + 1, sizeof *in);
    smelt_tensor out;
    if (!infos || !in) {
        smelt_free(infos);
        smelt_free((void *)in);
        return oom(s);
    }
    for (int k = 0; k < ni; k++) {
        if (n->inputs[k]) infos[k] = gr_value_info(n->inputs[k]);
        in[k] = n->inputs[k] ? &infos[k] : NULL;
    }
    memset(&out, 0, sizeof out);
    smelt_status st = op_get(n->op)->def->infer(s->ctx, n, in, &out);
    gr_value *v = n->outputs[0];
    if (st == SMELT_OK && (out.rank < 0 || out.rank > SMELT_MAX_RANK || n->n_outputs != 1))
        st = op_errf(s->ctx, n, SMELT_ERR_INTERNAL, "alter_layout: inferred rank %d", out.rank);
    if (st == SMELT_OK) {
        v->dtype = out.dtype;
        v->rank = out.rank;
        for (int d = 0; d < out.rank; d++) v->dims[d] = out.dims[d];
    }
    smelt_free(infos);
    smelt_free((void *)in);
    return st;
}

/* A node of `kind` named after `base` + suffix, with raw attributes copied
 * from `attrs_of` (NULL: none; more can be added before finish_node). */
static gr_node *new_node(lay_state *s, const char *base, const char *suffix, op_kind kind,
                         gr_value *const *inputs, int ni, const gr_node *attrs_of)
{
    char name[256];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    gr_node *n = pu_node_new(s->ctx, s->g, name, kind, inputs, ni, 1);
    if (n && attrs_of) {
        n->attrs = attrs_of->attrs;
        n->n_attrs = attrs_of->n_attrs;
    }
    return n;
}

static smelt_status finish_node(lay_state *s, gr_node *n)
{
    SMELT_TRY(pu_node_import(s->ctx, s->g, n));
    return infer_types(s, n);
}

/* A conversion of v from layout `src` to `dst` (0: plain), named after
 * the value `base` it gives a form of. */
static gr_node *conversion(lay_state *s, const gr_value *base, gr_value *v, int64_t src,
                           int64_t dst)
{
    char suffix[48];
    snprintf(suffix, sizeof suffix, "/layout%lld_%lld", (long long)src, (long long)dst);
    gr_node *t = new_node(s, base->name, suffix, OP_LAYOUT_TRANSFORM, &v, 1, NULL);
    if (!t || pu_attr_int(s->ctx, s->g, t, "src_block", src) != SMELT_OK ||
        pu_attr_int(s->ctx, s->g, t, "dst_block", dst) != SMELT_OK ||
        finish_node(s, t) != SMELT_OK)
        return NULL;
    return t;
}

/* A constant with v's data under new dims (same element order). */
static gr_value *reshaped_const(lay_state *s, const gr_value *v, int rank, const int64_t *dims)
{
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    size_t nb = smelt_tensor_nbytes(v->constant);
    if (!t || !(t->data = smelt_alloc(nb ? nb : 1))) {
        smelt_free(t);
        return oom(s), NULL;
    }
    t->dtype = v->dtype;
    t->rank = rank;
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    memcpy(t->data, v->constant->data, nb);
    return gr_graph_add_constant(s->ctx, s->g, v->name, t);
}

/* ---- the two forms of a value ---- */

/* Make sure v itself is produced: if its producer went blocked, a
 * conversion back now produces v. */
static smelt_status need_plain(lay_state *s, gr_value *v)
{
    lay_value *lv = info(s, v);
    if (!lv || !lv->rewritten || v->producer) return SMELT_OK;
    gr_node *t = conversion(s, v, lv->blocked, lv->block, 0);
    if (!t) return smelt_ctx_status(s->ctx);
    if (!pu_same_type(t->outputs[0], v))
        return op_errf(s->ctx, t, SMELT_ERR_INTERNAL, "alter_layout: plain form of '%s' differs",
                       v->name);
    pu_take_output(t, 0, v);
    return SMELT_OK;
}

/* v in blocks of b: an existing form, or a new conversion (evaluated now
 * when v is a constant). */
static gr_value *need_blocked(lay_state *s, gr_value *v, int64_t b)
{
    lay_value *lv = info(s, v);
    if (!lv) return smelt_errf(s->ctx, SMELT_ERR_INTERNAL, "alter_layout: new value"), NULL;
    if (lv->blocked && lv->block == b) return lv->blocked;
    if (lv->alt && lv->alt_block == b) return lv->alt;
    gr_value *src = lv->blocked ? lv->blocked : v;
    gr_node *t = conversion(s, v, src, lv->blocked ? lv->block : 0, b);
    gr_value *out = t ? t->outputs[0] : NULL; /* folding makes this value a constant */
    if (!t || (src->constant && pu_fold_node(s->ctx, s->g, t) != SMELT_OK)) return NULL;
    if (!lv->blocked) {
        lv->blocked = out;
        lv->block = b;
    } else {
        lv->alt = out;
        lv->alt_block = b;
    }
    return out;
}

/* y (an output of a node about to be detached) is now `blocked` in blocks of b. */
static void mark_blocked(lay_state *s, gr_value *y, gr_value *blocked, int64_t b)
{
    lay_value *ly = info(s, y);
    ly->blocked = blocked;
    ly->block = b;
    ly->rewritten = true;
}

static int64_t block_now(lay_state *s, const gr_value *v)
{
    const lay_value *lv = info(s, v);
    return lv && lv->blocked ? lv->block : 0;
}

/* ---- Conv -> ConvNCHWc ---- */

/* W [Co, Cw, KH, KW] packed as [Co/ob, Cw/wib, KH, KW, wib, ob]. */
static gr_value *packed_weights(lay_state *s, const gr_value *w, int64_t wib, int64_t ob)
{
    int64_t co = w->dims[0], cw = w->dims[1], kh = w->dims[2], kw = w->dims[3];
    int64_t dims[6] = {co / ob, cw / wib, kh, kw, wib, ob};
    int64_t n = co * cw * kh * kw;
    float *dst = smelt_alloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!dst) return oom(s), NULL;
    const float *src = w->constant->data;
    int64_t kk = kh * kw;
    for (int64_t m = 0; m < co; m++)
        for (int64_t c = 0; c < cw; c++) {
            int64_t base = ((m / ob) * (cw / wib) + c / wib) * kk;
            for (int64_t k = 0; k < kk; k++)
                dst[((base + k) * wib + c % wib) * ob + m % ob] = src[(m * cw + c) * kk + k];
        }
    gr_value *v = pu_const_f32(s->ctx, s->g, w->name, 6, dims, dst);
    smelt_free(dst);
    return v;
}

/* The blocks of a convertible Conv, else false. */
static bool conv_blocks(lay_state *s, const gr_node *n, const op_conv_shape *cs, int64_t *ib,
                        int64_t *ob)
{
    const gr_value *x = n->inputs[0], *y = n->outputs[0];
    bool depthwise = cs->group > 1;
    if (depthwise) {
        /* the input's block if it has one, else b(C); in and out alike */
        *ob = block_now(s, x) ? block_now(s, x) : block_of(s, cs->in_channels);
        *ib = *ob;
    } else {
        *ob = block_of(s, cs->out_channels);
        *ib = block_now(s, x);
        if (!*ib) /* a plain input, converted when it has channels enough */
            *ib = cs->in_channels >= LAYOUT_CONVERT_INPUT_MIN_CHANNELS ? block_of(s, cs->in_channels)
                                                                       : 1;
    }
    int64_t min_block = s->lanes < LAYOUT_MIN_BLOCK ? s->lanes : LAYOUT_MIN_BLOCK;
    return *ob >= min_block || y->dims[2] * y->dims[3] <= LAYOUT_SMALL_PLANE;
}

static bool conv_candidate(const gr_node *n, const op_conv_shape *cs)
{
    const gr_value *w = n->inputs[1], *b = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (!static_f32_4d(n->inputs[0]) || !static_f32_4d(n->outputs[0])) return false;
    if (!w->constant || w->dtype != SMELT_DT_FLOAT32) return false;
    if (b && (!b->constant || b->dtype != SMELT_DT_FLOAT32)) return false;
    if (cs->group == 1) return true;
    return cs->group == cs->in_channels && cs->out_channels == cs->in_channels && w->dims[1] == 1;
}

static smelt_status conv_attrs(lay_state *s, gr_node *c, const op_conv_shape *cs)
{
    const op_conv_window *w = &cs->win;
    int64_t pads[4] = {w->pad_begin[0], w->pad_begin[1], w->pad_end[0], w->pad_end[1]};
    SMELT_TRY(pu_attr_ints(s->ctx, s->g, c, "kernel_shape", w->kernel, 2));
    SMELT_TRY(pu_attr_ints(s->ctx, s->g, c, "strides", w->stride, 2));
    SMELT_TRY(pu_attr_ints(s->ctx, s->g, c, "dilations", w->dilation, 2));
    SMELT_TRY(pu_attr_ints(s->ctx, s->g, c, "pads", pads, 4));
    return pu_attr_int(s->ctx, s->g, c, "group", cs->group);
}

static smelt_status rewrite_conv(lay_state *s, gr_node *n, bool *done)
{
    gr_value *x = n->inputs[0], *y = n->outputs[0];
    if (n->n_outputs != 1 || !y || !static_f32_4d(x) || !n->inputs[1] ||
        n->inputs[1]->rank != 4)
        return SMELT_OK;
    smelt_tensor xt = gr_value_info(x), wt = gr_value_info(n->inputs[1]);
    op_conv_shape cs;
    int64_t ib, ob;
    SMELT_TRY(op_conv_resolve(s->ctx, n, &xt, &wt, &cs));
    if (!conv_candidate(n, &cs) || !conv_blocks(s, n, &cs, &ib, &ob)) return SMELT_OK;
    gr_value *in[3] = {ib > 1 ? need_blocked(s, x, ib) : x, NULL, NULL};
    gr_value *bias = n->n_inputs > 2 ? n->inputs[2] : NULL;
    int64_t bdims[2] = {cs.out_channels / ob, ob};
    in[1] = packed_weights(s, n->inputs[1], cs.group > 1 ? 1 : ib, ob);
    in[2] = bias ? reshaped_const(s, bias, 2, bdims) : NULL;
    if (!in[0] || !in[1] || (bias && !in[2])) return smelt_ctx_status(s->ctx);
    gr_node *c = new_node(s, n->name, "/nchwc", OP_CONV_NCHWC, in, bias ? 3 : 2, NULL);
    if (!c) return smelt_ctx_status(s->ctx);
    SMELT_TRY(conv_attrs(s, c, &cs));
    SMELT_TRY(finish_node(s, c));
    const gr_value *cy = c->outputs[0];
    if (cy->dims[2] != y->dims[2] || cy->dims[3] != y->dims[3])
        return op_errf(s->ctx, n, SMELT_ERR_INTERNAL, "alter_layout: blocked output size differs");
    mark_blocked(s, y, c->outputs[0], ob);
    pu_detach(n);
    *done = true;
    return SMELT_OK;
}

/* ---- layout-agnostic consumers ---- */

/* n over new inputs (same op and raw attributes) makes y's blocked form.
 * An op whose import or shape inference refuses the blocked operands stays
 * plain (the clone, left unused, is swept). */
static smelt_status clone_blocked(lay_state *s, gr_node *n, gr_value *const *in, int64_t b,
                                  bool *done)
{
    gr_node *c = new_node(s, n->name, "/blocked", n->op, in, n->n_inputs, n);
    if (!c) return smelt_ctx_status(s->ctx);
    smelt_ctx local = {.status = SMELT_OK};
    smelt_ctx *outer = s->ctx;
    s->ctx = &local;
    smelt_status st = finish_node(s, c);
    s->ctx = outer;
    if (st == SMELT_ERR_NOMEM) return smelt_ctx_forward(s->ctx, &local);
    if (st != SMELT_OK) return SMELT_OK;
    mark_blocked(s, n->outputs[0], c->outputs[0], b);
    pu_detach(n);
    *done = true;
    return SMELT_OK;
}

static bool scalar_or_absent(const gr_value *v)
{
    return !v || (v->constant && gr_value_numel(v) == 1);
}

/* Unary elementwise ops; extra inputs may only be scalar constants (Clip). */
static smelt_status rewrite_unary(lay_state *s, gr_node *n, bool *done)
{
    gr_value *x = n->inputs[0];
    int64_t b = block_now(s, x);
    if (!b || n->n_outputs != 1 || !n->outputs[0] || n->n_inputs > 8) return SMELT_OK;
    gr_value *in[8] = {info(s, x)->blocked};
    for (int k = 1; k < n->n_inputs; k++) {
        if (!scalar_or_absent(n->inputs[k])) return SMELT_OK;
        in[k] = n->inputs[k];
    }
    return clone_blocked(s, n, in, b, done);
}

/* A constant varying along the channels only (right-aligned [.., C, 1, 1]). */
static bool per_channel(const gr_value *v, int64_t c)
{
    if (!v->constant || v->rank < 3 || v->rank > 4 || v->dims[v->rank - 3] != c) return false;
    for (int d = 0; d < v->rank; d++)
        if (d != v->rank - 3 && v->dims[d] != 1) return false;
    return true;
}

/* Operand v of a broadcasting op whose 4-D output has c channels, in
 * blocks of b; NULL (no error set) when it cannot be. */
static gr_value *blocked_operand(lay_state *s, gr_value *v, int64_t c, int64_t b)
{
    if (scalar_or_absent(v)) return v;
    if (per_channel(v, c)) {
        int64_t dims[4] = {c / b, 1, 1, b};
        return reshaped_const(s, v, 4, dims);
    }
    if (!static_4d(v) || v->dims[1] != c) return NULL;
    return need_blocked(s, v, b);
}

/* The block of the first blocked input (0: none). */
static int64_t first_block(lay_state *s, const gr_node *n)
{
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] && !n->inputs[k]->constant && block_now(s, n->inputs[k]))
            return block_now(s, n->inputs[k]);
    return 0;
}

/* Broadcasting arithmetic, comparisons, Where, variadic Sum/Max...: every
 * operand blocked alike, a scalar, or a per-channel constant. */
static smelt_status rewrite_broadcast(lay_state *s, gr_node *n, bool *done)
{
    const gr_value *y = n->outputs[0];
    int64_t b = first_block(s, n);
    if (!b || s->g->opset < 7 || n->n_outputs != 1 || !static_4d(y) || y->dims[1] % b != 0)
        return SMELT_OK;
    gr_value **in = smelt_calloc((size_t)n->n_inputs + 1, sizeof *in);
    if (!in) return oom(s);
    bool ok = true;
    for (int k = 0; ok && k < n->n_inputs; k++) {
        in[k] = blocked_operand(s, n->inputs[k], y->dims[1], b);
        ok = in[k] || !n->inputs[k];
    }
    smelt_status st = smelt_ctx_status(s->ctx);
    if (st == SMELT_OK && ok) st = clone_blocked(s, n, in, b, done);
    smelt_free(in);
    return st;
}

/* y = x*scale + shift with [C/b, 1, 1, b] constants. */
static smelt_status rewrite_batchnorm(lay_state *s, gr_node *n, bool *done)
{
    const op_batchnorm_attrs *a = n->op_attrs;
    gr_value *x = n->inputs[0];
    int64_t b = block_now(s, x), c = x->dims[1];
    if (!b || !a || a->training || a->per_activation || n->n_inputs != 5 || !n->outputs[0] ||
        x->dtype != SMELT_DT_FLOAT32)
        return SMELT_OK;
    for (int k = 1; k < n->n_outputs; k++)
        if (n->outputs[k]) return SMELT_OK;
    for (int k = 1; k < 5; k++) {
        const gr_value *p = n->inputs[k];
        if (!p || !p->constant || p->dtype != SMELT_DT_FLOAT32 || p->rank != 1 || p->dims[0] != c)
            return SMELT_OK;
    }
    float *buf = smelt_alloc(sizeof(float) * (size_t)(2 * c));
    if (!buf) return oom(s);
    const float *gamma = n->inputs[1]->constant->data, *beta = n->inputs[2]->constant->data;
    const float *mean = n->inputs[3]->constant->data, *var = n->inputs[4]->constant->data;
    for (int64_t k = 0; k < c; k++) {
        double scale = gamma[k] / sqrt((double)var[k] + (double)a->epsilon);
        buf[k] = (float)scale;
        buf[c + k] = (float)(beta[k] - mean[k] * scale);
    }
    int64_t dims[4] = {c / b, 1, 1, b};
    gr_value *scale = pu_const_f32(s->ctx, s->g, n->inputs[1]->name, 4, dims, buf);
    gr_value *shift = pu_const_f32(s->ctx, s->g, n->inputs[2]->name, 4, dims, buf + c);
    smelt_free(buf);
    if (!scale || !shift) return smelt_ctx_status(s->ctx);
    gr_value *mul_in[2] = {info(s, x)->blocked, scale};
    gr_node *mul = new_node(s, n->name, "/scale", OP_MUL, mul_in, 2, NULL);
    if (!mul) return smelt_ctx_status(s->ctx);
    SMELT_TRY(finish_node(s, mul));
    gr_value *add_in[2] = {mul->outputs[0], shift};
    gr_node *add = new_node(s, n->name, "/shift", OP_ADD, add_in, 2, NULL);
    if (!add) return smelt_ctx_status(s->ctx);
    SMELT_TRY(finish_node(s, add));
    mark_blocked(s, n->outputs[0], add->outputs[0], b);
    pu_detach(n);
    *done = true;
    return SMELT_OK;
}

/* MaxPool/AveragePool over H, W: the same pool over H, W and the block axis
 * with a window of 1 there. */
static smelt_status rewrite_pool(lay_state *s, gr_node *n, bool *done)
{
    const op_pool_attrs *a = n->op_attrs;
    gr_value *x = n->inputs[0];
    int64_t b = block_now(s, x);
    if (!b || !a || !n->outputs[0] || (n->n_outputs > 1 && n->outputs[1]) ||
        (a->win.auto_pad != OP_AUTO_PAD_NOTSET && a->win.auto_pad != OP_AUTO_PAD_VALID))
        return SMELT_OK;
    smelt_tensor xt = gr_value_info(x);
    op_conv_window w;
    SMELT_TRY(op_pool_resolve(s->ctx, n, &xt, &w));
    if (w.n_spatial != 2) return SMELT_OK;
    int64_t k[3] = {w.kernel[0], w.kernel[1], 1}, st[3] = {w.stride[0], w.stride[1], 1};
    int64_t d[3] = {w.dilation[0], w.dilation[1], 1};
    int64_t pads[6] = {w.pad_begin[0], w.pad_begin[1], 0, w.pad_end[0], w.pad_end[1], 0};
    gr_value *in = info(s, x)->blocked;
    gr_node *p = new_node(s, n->name, "/blocked", n->op, &in, 1, NULL);
    if (!p) return smelt_ctx_status(s->ctx);
    SMELT_TRY(pu_attr_ints(s->ctx, s->g, p, "kernel_shape", k, 3));
    SMELT_TRY(pu_attr_ints(s->ctx, s->g, p, "strides", st, 3));
    SMELT_TRY(pu_attr_ints(s->ctx, s->g, p, "dilations", d, 3));
    SMELT_TRY(pu_attr_ints(s->ctx, s->g, p, "pads", pads, 6));
    SMELT_TRY(pu_attr_int(s->ctx, s->g, p, "ceil_mode", a->ceil_mode));
    if (n->op == OP_AVERAGE_POOL)
        SMELT_TRY(pu_attr_int(s->ctx, s->g, p, "count_include_pad", a->count_include_pad));
    SMELT_TRY(finish_node(s, p));
    mark_blocked(s, n->outputs[0], p->outputs[0], b);
    pu_detach(n);
    *done = true;
    return SMELT_OK;
}

/* A reduction over H and W keeping dims: the same over [N, C/b, H, W, b]. */
static smelt_status reduce_spatial(lay_state *s, gr_node *n, op_kind kind, gr_value *axes,
                                   bool *done)
{
    gr_value *in[2] = {info(s, n->inputs[0])->blocked, axes};
    gr_node *r = new_node(s, n->name, "/blocked", kind, in, 2, NULL);
    if (!r) return smelt_ctx_status(s->ctx);
    SMELT_TRY(pu_attr_int(s->ctx, s->g, r, "keepdims", 1));
    SMELT_TRY(finish_node(s, r));
    mark_blocked(s, n->outputs[0], r->outputs[0], block_now(s, n->inputs[0]));
    pu_detach(n);
    *done = true;
    return SMELT_OK;
}

static smelt_status rewrite_global_pool(lay_state *s, gr_node *n, bool *done)
{
    if (!block_now(s, n->inputs[0]) || !n->outputs[0]) return SMELT_OK;
    static const int64_t hw[2] = {2, 3};
    int64_t two = 2;
    gr_value *axes = pu_const_i64(s->ctx, s->g, "spatial_axes", 1, &two, hw);
    if (!axes) return smelt_ctx_status(s->ctx);
    op_kind kind = n->op == OP_GLOBAL_AVERAGE_POOL ? OP_REDUCE_MEAN : OP_REDUCE_MAX;
    return reduce_spatial(s, n, kind, axes, done);
}

/* ReduceMean/Sum/Max/Min over axes among H, W with keepdims. */
static smelt_status rewrite_reduce(lay_state *s, gr_node *n, bool *done)
{
    const op_reduce_attrs *a = n->op_attrs;
    gr_value *axes = n->n_inputs > 1 ? n->inputs[1] : NULL;
    if (!block_now(s, n->inputs[0]) || !a || !a->keepdims || !n->outputs[0] || !axes ||
        !axes->constant || axes->dtype != SMELT_DT_INT64 || axes->rank != 1 ||
        axes->dims[0] < 1 || axes->dims[0] > 2)
        return SMELT_OK;
    const int64_t *ax = axes->constant->data;
    for (int64_t k = 0; k < axes->dims[0]; k++)
        if (ax[k] != 2 && ax[k] != 3 && ax[k] != -1 && ax[k] != -2) return SMELT_OK;
    int64_t pos[2], cnt = axes->dims[0];
    for (int64_t k = 0; k < cnt; k++) pos[k] = ax[k] < 0 ? ax[k] + 4 : ax[k];
    gr_value *blocked_axes = pu_const_i64(s->ctx, s->g, axes->name, 1, &cnt, pos);
    if (!blocked_axes) return smelt_ctx_status(s->ctx);
    return reduce_spatial(s, n, n->op, blocked_axes, done);
}

/* Concat along channels of inputs that can share one block. */
static smelt_status rewrite_concat(lay_state *s, gr_node *n, bool *done)
{
    const op_axis_attrs *a = n->op_attrs;
    const gr_value *y = n->outputs[0];
    if (!a || (a->axis != 1 && a->axis != -3) || !static_4d(y)) return SMELT_OK;
    int64_t b = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        int64_t bk = n->inputs[k] ? block_now(s, n->inputs[k]) : 0;
        if (bk && (!b || bk < b)) b = bk;
    }
    for (int k = 0; b && k < n->n_inputs; k++)
        if (!static_4d(n->inputs[k]) || n->inputs[k]->dims[1] % b != 0) b = 0;
    if (!b) return SMELT_OK;
    gr_value **in = smelt_calloc((size_t)n->n_inputs + 1, sizeof *in);
    if (!in) return oom(s);
    smelt_status st = SMELT_OK;
    for (int k = 0; st == SMELT_OK && k < n->n_inputs; k++)
        if (!(in[k] = need_blocked(s, n->inputs[k], b))) st = smelt_ctx_status(s->ctx);
    if (st == SMELT_OK) st = clone_blocked(s, n, in, b, done);
    smelt_free(in);
    return st;
}

/* Pad of the spatial dims only (constant pads). */
static smelt_status rewrite_pad(lay_state *s, gr_node *n, bool *done)
{
    gr_value *pads = n->n_inputs > 1 ? n->inputs[1] : NULL;
    if (!block_now(s, n->inputs[0]) || s->g->opset < 11 || !static_4d(n->outputs[0]) ||
        (n->n_inputs > 3 && n->inputs[3]) || !pads || !pads->constant ||
        pads->dtype != SMELT_DT_INT64 || gr_value_numel(pads) != 8)
        return SMELT_OK;
    const int64_t *p = pads->constant->data;
    if (p[0] || p[1] || p[4] || p[5]) return SMELT_OK;
    int64_t blocked_pads[10] = {0, 0, p[2], p[3], 0, 0, 0, p[6], p[7], 0}, ten = 10;
    gr_value *in[3] = {info(s, n->inputs[0])->blocked, NULL, n->n_inputs > 2 ? n->inputs[2] : NULL};
    in[1] = pu_const_i64(s->ctx, s->g, pads->name, 1, &ten, blocked_pads);
    if (!in[1]) return smelt_ctx_status(s->ctx);
    gr_node *c = new_node(s, n->name, "/blocked", OP_PAD, in, in[2] ? 3 : 2, n);
    if (!c) return smelt_ctx_status(s->ctx);
    SMELT_TRY(finish_node(s, c));
    mark_blocked(s, n->outputs[0], c->outputs[0], block_now(s, n->inputs[0]));
    pu_detach(n);
    *done = true;
    return SMELT_OK;
}

/* ---- the walk ---- */

static bool family_is(const gr_node *n, const char *family)
{
    return strcmp(op_get(n->op)->family, family) == 0;
}

/* Rewrite n into the blocked layout if it is a conv or a layout-agnostic
 * consumer of a blocked value; *done tells whether it was. */
static smelt_status rewrite_node(lay_state *s, gr_node *n, bool *done)
{
    *done = false;
    if (n->n_inputs < 1 || !n->inputs[0] || n->n_outputs < 1) return SMELT_OK;
    switch (n->op) {
    case OP_CONV: return rewrite_conv(s, n, done);
    case OP_BATCH_NORMALIZATION: return rewrite_batchnorm(s, n, done);
    case OP_MAX_POOL:
    case OP_AVERAGE_POOL: return rewrite_pool(s, n, done);
    case OP_GLOBAL_AVERAGE_POOL:
    case OP_GLOBAL_MAX_POOL: return rewrite_global_pool(s, n, done);
    case OP_REDUCE_MEAN:
    case OP_REDUCE_SUM:
    case OP_REDUCE_MAX:
    case OP_REDUCE_MIN: return rewrite_reduce(s, n, done);
    case OP_CONCAT: return rewrite_concat(s, n, done);
    case OP_PAD: return rewrite_pad(s, n, done);
    default: break;
    }
    op_pattern p = op_get(n->op)->pattern;
    if (p == OP_PATTERN_ELEMWISE) return rewrite_unary(s, n, done);
    if (p == OP_PATTERN_BROADCAST && family_is(n, "binary")) return rewrite_broadcast(s, n, done);
    return SMELT_OK;
}

static smelt_status walk(lay_state *s)
{
    int n0 = s->g->nodes.len;
    gr_node **nodes = smelt_calloc((size_t)n0 + 1, sizeof *nodes);
    if (!nodes) return oom(s);
    if (n0) memcpy(nodes, s->g->nodes.items, sizeof *nodes * (size_t)n0);
    smelt_status st = SMELT_OK;
    for (int i = 0; st == SMELT_OK && i < n0; i++) {
        gr_node *n = nodes[i];
        bool done;
        st = rewrite_node(s, n, &done);
        for (int k = 0; st == SMELT_OK && !done && k < n->n_inputs; k++)
            if (n->inputs[k]) st = need_plain(s, n->inputs[k]);
    }
    for (int i = 0; st == SMELT_OK && i < s->g->outputs.len; i++)
        st = need_plain(s, s->g->outputs.items[i]);
    smelt_free(nodes);
    return st;
}

/* ---- conversion chains ---- */

static const op_layout_attrs *transform_of(const gr_value *v)
{
    return v && v->producer && v->producer->op == OP_LAYOUT_TRANSFORM ? v->producer->op_attrs
                                                                      : NULL;
}

/* t after another conversion p: A -> B -> A is the original value; A -> B
 * -> C becomes A -> C.  A conversion to its own layout is the input. */
static smelt_status merge_one(lay_state *s, gr_node *t, bool *changed)
{
    const op_layout_attrs *a = t->op_attrs, *pa = transform_of(t->inputs[0]);
    gr_value *y = t->outputs[0];
    if (!y || !a) return SMELT_OK;
    if (a->src_block == a->dst_block) {
        *changed |= pu_replace_uses(s->g, y, t->inputs[0]);
        return SMELT_OK;
    }
    if (!pa) return SMELT_OK;
    gr_value *x = t->inputs[0]->producer->inputs[0];
    if (pa->src_block == a->dst_block && pu_same_type(x, y)) {
        *changed |= pu_replace_uses(s->g, y, x);
        return SMELT_OK;
    }
    gr_node *m = conversion(s, y, x, pa->src_block, a->dst_block);
    if (!m) return smelt_ctx_status(s->ctx);
    pu_take_output(m, 0, y);
    pu_detach(t);
    *changed = true;
    return SMELT_OK;
}

static smelt_status merge_conversions(lay_state *s)
{
    bool changed = true;
    for (int round = 0; changed && round < 8; round++) {
        changed = false;
        for (int i = 0; i < s->g->nodes.len; i++) {
            gr_node *t = s->g->nodes.items[i];
            if (t->op == OP_LAYOUT_TRANSFORM) SMELT_TRY(merge_one(s, t, &changed));
        }
        SMELT_TRY(pu_finish(s->ctx, s->g));
    }
    return SMELT_OK;
}

smelt_status pass_alter_layout(smelt_ctx *ctx, gr_graph *g)
{
    if (g->hw.lanes < 2) return SMELT_OK; /* no vectors: nothing to gain */
    lay_state s = {ctx, g, g->hw.lanes, g->values.len, NULL};
    s.v = smelt_calloc((size_t)s.n_values + 1, sizeof *s.v);
    if (!s.v) return oom(&s);
    smelt_status st = walk(&s);
    smelt_free(s.v);
    SMELT_TRY(st);
    SMELT_TRY(pu_finish(ctx, g));
    return merge_conversions(&s);
}
