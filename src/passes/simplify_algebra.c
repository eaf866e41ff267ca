/* Algebraic simplification.  Every rule keeps results (within float rounding)
 * and never changes a value's shape: an identity only applies when the
 * result has exactly x's type (x*1 with a broadcasting 1 is not x).
 *   x*1, 1*x, x+0, 0+x, x-0, x/1 -> x;  Identity, inference Dropout -> x
 *   x / c -> x * (1/c) (float);  Pow(x, 2) -> x*x;  Pow(x, 0.5) -> Sqrt(x)
 *   (x op a) op b -> x op (a op b) for op in {Mul, Add} and constants a, b
 *   Transpose(Transpose(x)) -> x or one Transpose
 *   view chains (Reshape, Squeeze, Unsqueeze, Flatten) -> x or one Reshape
 *   Cast(x) to x's type -> x;  Cast(Cast(x)) -> Cast(x) when the first is exact
 *   MatMul(A, B) + c, 2-D -> Gemm(A, B, c)
 *   decomposed LayerNorm -> LayerNormalization (with the following scale and
 *   bias), Erf or Tanh GELU -> Gelu: simplify_patterns.c
 * Rules run to a fixed point; use counts are refreshed after each rewrite. */
#include <math.h>
#include <string.h>

#include "ops/binary.h"
#include "ops/elementwise.h"
#include "ops/op.h"
#include "ops/shape.h"
#include "passes/pass_util.h"
#include "passes/passes.h"
#include "passes/simplify_patterns.h"

typedef struct simp {
    smelt_ctx *ctx;
    gr_graph *g;
    int *uses;
    int n_uses; /* values created since the count have no entry */
} simp;

static int uses_of(const simp *s, const gr_value *v)
{
    return v->id < s->n_uses ? s->uses[v->id] : 0;
}

static bool single_use(const simp *s, const gr_value *v)
{
    return v && !v->is_output && uses_of(s, v) == 1;
}

static bool legacy_binary(const gr_node *n)
{
    const op_binary_attrs *a = n->op_attrs;
    return a && a->has_legacy_axis;
}

/* y := x everywhere (n then dies); false if y is a graph output. */
static bool forward(simp *s, gr_node *n, gr_value *x)
{
    return pu_replace_uses(s->g, n->outputs[0], x);
}

/* A new node of `kind` over `inputs` takes over n's output 0. */
static gr_node *replace_with(simp *s, gr_node *n, op_kind kind, gr_value *const *inputs, int ni)
{
    char name[200];
    snprintf(name, sizeof name, "%s.%s", n->name, op_get(kind)->name);
    gr_node *m = pu_node_new(s->ctx, s->g, name, kind, inputs, ni, 1);
    return m;
}

static smelt_status finish_replace(simp *s, gr_node *n, gr_node *m, bool *changed)
{
    SMELT_TRY(pu_node_import(s->ctx, s->g, m));
    pu_take_output(m, 0, n->outputs[0]);
    pu_detach(n);
    *changed = true;
    return SMELT_OK;
}

/* ---- identities ---- */

static bool dropout_is_identity(const gr_node *n, const simp *s)
{
    const gr_value *mode = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (mode && !pu_const_all(mode, 0)) return false;
    for (int k = 1; k < n->n_outputs; k++)
        if (n->outputs[k] && uses_of(s, n->outputs[k]) > 0) return false;
    return true;
}

static bool rule_identity(simp *s, gr_node *n)
{
    gr_value *x = n->n_inputs ? n->inputs[0] : NULL, *y = n->outputs[0];
    if (!x || !y) return false;
    if (n->op == OP_IDENTITY || (n->op == OP_DROPOUT && dropout_is_identity(n, s)))
        return forward(s, n, x);
    if (n->op != OP_MUL && n->op != OP_ADD && n->op != OP_SUB && n->op != OP_DIV) return false;
    if (n->n_inputs != 2 || legacy_binary(n)) return false;
    gr_value *a = n->inputs[0], *b = n->inputs[1];
    double neutral = n->op == OP_MUL || n->op == OP_DIV ? 1.0 : 0.0;
    bool commutes = n->op == OP_MUL || n->op == OP_ADD;
    if (pu_const_all(b, neutral) && pu_same_type(a, y)) return forward(s, n, a);
    if (commutes && pu_const_all(a, neutral) && pu_same_type(b, y)) return forward(s, n, b);
    return false;
}

/* x / c -> x * (1/c) for float32 constants without zeros. */
static smelt_status rule_div(simp *s, gr_node *n, bool *changed)
{
    gr_value *c = n->inputs[1];
    if (n->op != OP_DIV || legacy_binary(n) || !c || !c->constant || c->dtype != SMELT_DT_FLOAT32)
        return SMELT_OK;
    int64_t cnt = gr_value_numel(c);
    const float *src = c->constant->data;
    for (int64_t i = 0; i < cnt; i++)
        if (src[i] == 0 || !isfinite(src[i])) return SMELT_OK;
    float *inv = smelt_alloc(sizeof(float) * (size_t)(cnt ? cnt : 1));
    if (!inv) return smelt_errf(s->ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < cnt; i++) inv[i] = (float)(1.0 / (double)src[i]);
    gr_value *r = pu_const_f32(s->ctx, s->g, c->name, c->rank, c->dims, inv);
    smelt_free(inv);
    if (!r) return smelt_ctx_status(s->ctx);
    gr_value *in[2] = {n->inputs[0], r};
    gr_node *m = replace_with(s, n, OP_MUL, in, 2);
    return m ? finish_replace(s, n, m, changed) : smelt_ctx_status(s->ctx);
}

static smelt_status rule_pow(simp *s, gr_node *n, bool *changed)
{
    double e;
    gr_value *x = n->inputs[0];
    if (n->op != OP_POW || !pu_const_scalar(n->inputs[1], &e) || !pu_same_type(x, n->outputs[0]) ||
        !op_dtype_is_float(x->dtype) || (e != 2.0 && e != 0.5))
        return SMELT_OK;
    gr_value *in[2] = {x, x};
    gr_node *m = replace_with(s, n, e == 2.0 ? OP_MUL : OP_SQRT, in, e == 2.0 ? 2 : 1);
    return m ? finish_replace(s, n, m, changed) : smelt_ctx_status(s->ctx);
}

/* (x op a) op b -> x op (a op b): a and b folded now. */
static smelt_status rule_const_chain(simp *s, gr_node *n, bool *changed)
{
    if ((n->op != OP_MUL && n->op != OP_ADD) || n->n_inputs != 2 || legacy_binary(n))
        return SMELT_OK;
    int bi = n->inputs[1] && n->inputs[1]->constant ? 1 : 0;
    gr_value *b = n->inputs[bi], *inner_out = n->inputs[1 - bi];
    gr_node *p = pu_producer(inner_out, n->op);
    if (!b || !b->constant || !p || !single_use(s, inner_out) || legacy_binary(p) ||
        p->n_inputs != 2)
        return SMELT_OK;
    int ai = p->inputs[1] && p->inputs[1]->constant ? 1 : 0;
    gr_value *a = p->inputs[ai], *x = p->inputs[1 - ai];
    if (!a || !a->constant || x->constant || a->dtype != b->dtype) return SMELT_OK;
    gr_value *in[2] = {a, b};
    gr_node *c = replace_with(s, n, n->op, in, 2);
    if (!c) return smelt_ctx_status(s->ctx);
    SMELT_TRY(pu_node_import(s->ctx, s->g, c));
    gr_value *folded = c->outputs[0];
    smelt_ctx local = {.status = SMELT_OK};
    if (pu_fold_node(&local, s->g, c) != SMELT_OK || !folded->constant)
        return SMELT_OK; /* c stays dead */
    n->inputs[1 - bi] = x;
    n->inputs[bi] = folded;
    *changed = true;
    return SMELT_OK;
}

/* ---- data movement ---- */

static void transpose_perm(const gr_node *n, int rank, int64_t *perm)
{
    const op_transpose_attrs *a = n->op_attrs;
    for (int i = 0; i < rank; i++)
        perm[i] = a && a->n_perm == rank ? a->perm[i] : rank - 1 - i;
}

static smelt_status rule_transpose(simp *s, gr_node *n, bool *changed)
{
    gr_node *p = pu_producer(n->inputs[0], OP_TRANSPOSE);
    if (n->op != OP_TRANSPOSE || !p) return SMELT_OK;
    gr_value *x = p->inputs[0];
    int r = x->rank;
    if (r < 0 || n->inputs[0]->rank != r) return SMELT_OK;
    int64_t p1[SMELT_MAX_RANK], p2[SMELT_MAX_RANK], q[SMELT_MAX_RANK];
    transpose_perm(p, r, p1);
    transpose_perm(n, r, p2);
    bool ident = true;
    for (int i = 0; i < r; i++) {
        q[i] = p1[p2[i]];
        ident = ident && q[i] == i;
    }
    if (ident) {
        *changed = forward(s, n, x);
        return SMELT_OK;
    }
    gr_node *m = replace_with(s, n, OP_TRANSPOSE, &x, 1);
    if (!m) return smelt_ctx_status(s->ctx);
    SMELT_TRY(pu_attr_ints(s->ctx, s->g, m, "perm", q, r));
    return finish_replace(s, n, m, changed);
}

static bool is_view(const gr_node *n)
{
    return n && (n->op == OP_RESHAPE || n->op == OP_SQUEEZE || n->op == OP_UNSQUEEZE ||
                 n->op == OP_FLATTEN);
}

static smelt_status rule_view(simp *s, gr_node *n, bool *changed)
{
    gr_value *y = n->outputs[0], *x = n->inputs[0];
    if (!is_view(n) || !y || gr_value_numel(y) < 0) return SMELT_OK;
    gr_value *src = x;
    while (is_view(src->producer)) src = src->producer->inputs[0];
    if (pu_same_type(src, y)) {
        *changed = forward(s, n, src);
        return SMELT_OK;
    }
    if (src == x) return SMELT_OK;
    gr_value *shape = pu_const_i64(s->ctx, s->g, n->name, 1, (int64_t[]){y->rank}, y->dims);
    if (!shape) return smelt_ctx_status(s->ctx);
    gr_value *in[2] = {src, shape};
    gr_node *m = replace_with(s, n, OP_RESHAPE, in, 2);
    return m ? finish_replace(s, n, m, changed) : smelt_ctx_status(s->ctx);
}

/* Every value of `from` is exactly representable in `to`. */
static bool cast_exact(smelt_dtype from, smelt_dtype to)
{
    typedef struct { smelt_dtype dt; int bits; bool sign, flt; int exp; } dinfo;
    static const dinfo t[] = {
        {SMELT_DT_BOOL, 1, false, false, 0},    {SMELT_DT_UINT8, 8, false, false, 0},
        {SMELT_DT_INT8, 7, true, false, 0},     {SMELT_DT_UINT16, 16, false, false, 0},
        {SMELT_DT_INT16, 15, true, false, 0},   {SMELT_DT_UINT32, 32, false, false, 0},
        {SMELT_DT_INT32, 31, true, false, 0},   {SMELT_DT_UINT64, 64, false, false, 0},
        {SMELT_DT_INT64, 63, true, false, 0},   {SMELT_DT_FLOAT16, 11, true, true, 5},
        {SMELT_DT_BFLOAT16, 8, true, true, 8},  {SMELT_DT_FLOAT32, 24, true, true, 8},
        {SMELT_DT_FLOAT64, 53, true, true, 11},
    };
    const dinfo *a = NULL, *b = NULL;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (t[i].dt == from) a = &t[i];
        if (t[i].dt == to) b = &t[i];
    }
    if (!a || !b) return false;
    if (a->flt) return b->flt && b->bits >= a->bits && b->exp >= a->exp;
    if (b->flt) return a->bits <= b->bits;
    if (a->sign && !b->sign) return a->dt == SMELT_DT_BOOL;
    return a->bits <= b->bits;
}

static bool rule_cast(simp *s, gr_node *n)
{
    if (n->op != OP_CAST || !n->outputs[0]) return false;
    gr_value *x = n->inputs[0];
    if (x->dtype == n->outputs[0]->dtype && x->dtype != SMELT_DT_UNDEFINED) return forward(s, n, x);
    gr_node *p = pu_producer(x, OP_CAST);
    if (!p || !cast_exact(p->inputs[0]->dtype, x->dtype)) return false;
    n->inputs[0] = p->inputs[0];
    return true;
}

/* MatMul(A, B) + c with 2-D A, B and c broadcasting to the result: Gemm. */
static smelt_status rule_gemm(simp *s, gr_node *n, bool *changed)
{
    if (n->op != OP_ADD || legacy_binary(n) || n->n_inputs != 2) return SMELT_OK;
    int mi = pu_producer(n->inputs[0], OP_MATMUL) ? 0 : 1;
    gr_value *mm = n->inputs[mi], *c = n->inputs[1 - mi];
    gr_node *p = pu_producer(mm, OP_MATMUL);
    if (!p || !single_use(s, mm) || mm->rank != 2 || p->inputs[0]->rank != 2 ||
        p->inputs[1]->rank != 2 || !pu_same_type(mm, n->outputs[0]) || c->rank > 2 ||
        mm->dtype != SMELT_DT_FLOAT32)
        return SMELT_OK;
    gr_value *in[3] = {p->inputs[0], p->inputs[1], c};
    gr_node *m = replace_with(s, n, OP_GEMM, in, 3);
    return m ? finish_replace(s, n, m, changed) : smelt_ctx_status(s->ctx);
}

static bool is_dead(const simp *s, const gr_node *n)
{
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] && (n->outputs[k]->is_output || uses_of(s, n->outputs[k]) > 0))
            return false;
    return true;
}

static smelt_status rewrite(simp *s, gr_node *n, bool *changed)
{
    *changed = false;
    if (!n->outputs[0] || n->n_inputs < 1 || !n->inputs[0] || is_dead(s, n)) return SMELT_OK;
    if (rule_identity(s, n) || rule_cast(s, n)) return (*changed = true), SMELT_OK;
    SMELT_TRY(rule_div(s, n, changed));
    if (!*changed) SMELT_TRY(rule_pow(s, n, changed));
    if (!*changed) SMELT_TRY(rule_const_chain(s, n, changed));
    if (!*changed) SMELT_TRY(rule_transpose(s, n, changed));
    if (!*changed) SMELT_TRY(rule_view(s, n, changed));
    if (!*changed) SMELT_TRY(rule_gemm(s, n, changed));
    if (!*changed) {
        simp_view view = {s->ctx, s->g, s->uses, s->n_uses};
        SMELT_TRY(simp_patterns_rewrite(&view, n, changed));
    }
    return SMELT_OK;
}

static smelt_status sweep(simp *s, bool *any)
{
    *any = false;
    for (int i = 0; i < s->g->nodes.len; i++) {
        bool changed;
        SMELT_TRY(rewrite(s, s->g->nodes.items[i], &changed));
        if (!changed) continue;
        *any = true;
        smelt_free(s->uses);
        if (!(s->uses = pu_use_counts(s->g)))
            return smelt_errf(s->ctx, SMELT_ERR_NOMEM, "out of memory");
        s->n_uses = s->g->values.len;
    }
    return SMELT_OK;
}

smelt_status pass_simplify_algebra(smelt_ctx *ctx, gr_graph *g)
{
    simp s = {ctx, g, NULL, 0};
    smelt_status st = SMELT_OK;
    for (int round = 0; st == SMELT_OK && round < 8; round++) {
        if ((st = pu_finish(ctx, g)) != SMELT_OK) break;
        if (!(s.uses = pu_use_counts(g))) {
            st = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
            break;
        }
        s.n_uses = g->values.len;
        bool any = false;
        st = sweep(&s, &any);
        smelt_free(s.uses);
        s.uses = NULL;
        if (!any) break;
    }
    return st == SMELT_OK ? pu_finish(ctx, g) : st;
}
