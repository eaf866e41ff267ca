/* Decomposed LayerNorm and GELU recognised as one node (simplify_algebra).
 *
 *   d = x - ReduceMean(x);  var = ReduceMean(d*d or Pow(d, 2));
 *   d / Sqrt(var + eps)  or  d * Reciprocal(Sqrt(var + eps))
 *       -> LayerNormalization(x, ones[H], axis=-1, epsilon=eps)
 *   LayerNormalization(x, s, b) * c -> LayerNormalization(x, s*c, b*c)
 *   LayerNormalization(x, s, b) + c -> LayerNormalization(x, s, b+c)
 *       (c a constant along the normalized last axis: nn.LayerNorm's weight
 *       and bias are taken in one rewrite each)
 *   x * 0.5 * (1 + erf(x / sqrt(2)))  -> Gelu(x)
 *   x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
 *       -> Gelu(x, approximate="tanh")              (ONNX opset-20 Gelu)
 * The GELU product may be associated in any order, and commutative operands
 * come in either order.  The statistics must run over the last axis only,
 * with keepdims.  Every intermediate value must be read by the pattern alone
 * and not be a graph output, else the pattern stays as it is.  Constants are
 * single values compared with a relative tolerance, so 1/sqrt(2) rounded to
 * float matches.  LayerNorm is matched for float32 only: its statistics are
 * computed in float32 (the default stash type), as the decomposed graph did.
 */
#include <math.h>
#include <string.h>

#include "ops/binary.h"
#include "ops/norm.h"
#include "ops/op.h"
#include "ops/reduce.h"
#include "passes/pass_util.h"
#include "passes/simplify_patterns.h"

#define PAT_RTOL 1e-5

#define GELU_HALF 0.5
#define GELU_INV_SQRT2 0.70710678118654752440
#define GELU_SQRT2 1.41421356237309504880
#define GELU_TANH_SCALE 0.79788456080286535588 /* sqrt(2/pi) */
#define GELU_TANH_CUBIC 0.044715

/* ---- matching helpers ---- */

static bool single_use(const simp_view *v, const gr_value *x)
{
    return x && !x->is_output && x->id < v->n_uses && v->uses[x->id] == 1;
}

static bool is_binary_kind(op_kind k)
{
    return k == OP_ADD || k == OP_SUB || k == OP_MUL || k == OP_DIV || k == OP_POW;
}

/* A binary op in its plain numpy-broadcast form (no legacy axis). */
static bool plain(const gr_node *n)
{
    const op_binary_attrs *a = n->op_attrs;
    return n->n_inputs == 2 && n->inputs[0] && n->inputs[1] && !(a && a->has_legacy_axis);
}

/* The node of kind k producing x as its first output (plain if binary). */
static gr_node *producer(const gr_value *x, op_kind k)
{
    gr_node *n = pu_producer(x, k);
    if (!n || x->producer_output != 0) return NULL;
    return !is_binary_kind(k) || plain(n) ? n : NULL;
}

/* producer(x, k) when x is read by nothing but the pattern's next node. */
static gr_node *inner(const simp_view *v, const gr_value *x, op_kind k)
{
    return single_use(v, x) ? producer(x, k) : NULL;
}

/* c is a constant holding one value, within PAT_RTOL of want. */
static bool const_near(const gr_value *c, double want)
{
    double x;
    return c && c->constant && gr_value_numel(c) == 1 && pu_const_scalar(c, &x) &&
           fabs(x - want) <= PAT_RTOL * fabs(want);
}

/* n(a, c) or n(c, a) with c a constant near want: a, which is no constant. */
static gr_value *operand_beside(const gr_node *n, double want)
{
    if (!n) return NULL;
    for (int k = 0; k < 2; k++)
        if (const_near(n->inputs[k], want) && !n->inputs[1 - k]->constant) return n->inputs[1 - k];
    return NULL;
}

/* n's replacement m takes over n's output; n dies. */
static smelt_status take_over(const simp_view *v, gr_node *n, gr_node *m, bool *changed)
{
    SMELT_TRY(pu_node_import(v->ctx, v->g, m));
    pu_take_output(m, 0, n->outputs[0]);
    pu_detach(n);
    *changed = true;
    return SMELT_OK;
}

/* ---- LayerNorm ---- */

typedef struct ln_match {
    gr_value *x;
    double eps;
} ln_match;

/* r = ReduceMean(in) over in's last axis alone, keeping dims. */
static bool mean_over_last_axis(const gr_node *r, const gr_value *in)
{
    const op_reduce_attrs *a = r->op_attrs;
    const gr_value *axes = r->n_inputs > 1 ? r->inputs[1] : NULL;
    if (!a || !a->keepdims || r->inputs[0] != in || in->rank < 1 || !axes || !axes->constant ||
        gr_value_numel(axes) != 1)
        return false;
    double axis = op_get_f64(axes->constant, 0);
    return axis == -1 || axis == in->rank - 1;
}

/* n = d / s, d * Reciprocal(s) or Reciprocal(s) * d. */
static bool split_division(const simp_view *v, const gr_node *n, gr_value **d, gr_value **s)
{
    if (n->op == OP_DIV && plain(n)) {
        *d = n->inputs[0];
        *s = n->inputs[1];
        return true;
    }
    if (n->op != OP_MUL || !plain(n)) return false;
    for (int k = 0; k < 2; k++) {
        gr_node *r = inner(v, n->inputs[k], OP_RECIPROCAL);
        if (r) {
            *d = n->inputs[1 - k];
            *s = r->inputs[0];
            return true;
        }
    }
    return false;
}

/* sq = d*d or Pow(d, 2): how many times it reads d (0: neither form). */
static int square_reads(const simp_view *v, const gr_value *sq, const gr_value *d)
{
    gr_node *m = inner(v, sq, OP_MUL);
    if (m && m->inputs[0] == d && m->inputs[1] == d) return 2;
    gr_node *p = inner(v, sq, OP_POW);
    return p && p->inputs[0] == d && const_near(p->inputs[1], 2.0) ? 1 : 0;
}

/* var + eps (either order) with eps one finite, non-negative value. */
static gr_value *variance_plus_eps(const simp_view *v, const gr_value *s, double *eps)
{
    gr_node *sq = inner(v, s, OP_SQRT);
    gr_node *add = sq ? inner(v, sq->inputs[0], OP_ADD) : NULL;
    if (!add) return NULL;
    int ci = add->inputs[1]->constant ? 1 : 0;
    gr_value *c = add->inputs[ci], *var = add->inputs[1 - ci];
    if (!c->constant || var->constant || gr_value_numel(c) != 1 || !pu_const_scalar(c, eps) ||
        !isfinite(*eps) || *eps < 0 || !pu_same_type(var, add->outputs[0]))
        return NULL;
    return var;
}

static bool match_layernorm(const simp_view *v, const gr_node *n, ln_match *m)
{
    gr_value *d, *s;
    if (!split_division(v, n, &d, &s)) return false;
    gr_value *var = variance_plus_eps(v, s, &m->eps);
    gr_node *var_mean = var ? inner(v, var, OP_REDUCE_MEAN) : NULL;
    int reads = var_mean ? square_reads(v, var_mean->inputs[0], d) : 0;
    gr_node *sub = reads ? producer(d, OP_SUB) : NULL;
    /* d feeds the square and the division, nothing else */
    if (!sub || d->is_output || d->id >= v->n_uses || v->uses[d->id] != reads + 1) return false;
    gr_value *x = sub->inputs[0];
    gr_node *mean = inner(v, sub->inputs[1], OP_REDUCE_MEAN);
    if (!mean || !mean_over_last_axis(mean, x) ||
        !mean_over_last_axis(var_mean, var_mean->inputs[0]))
        return false;
    if (x->constant || x->dtype != SMELT_DT_FLOAT32 || !pu_same_type(x, n->outputs[0]) ||
        x->dims[x->rank - 1] < 1)
        return false;
    m->x = x;
    return true;
}

static smelt_status new_layernorm(const simp_view *v, gr_node *n, const ln_match *m,
                                  bool *changed)
{
    int64_t h = m->x->dims[m->x->rank - 1];
    float *ones = smelt_alloc(sizeof(float) * (size_t)(h > 0 ? h : 1));
    if (!ones) return smelt_errf(v->ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t j = 0; j < h; j++) ones[j] = 1.0f;
    char name[200];
    snprintf(name, sizeof name, "%s.LayerNormalization", n->name);
    gr_value *scale = pu_const_f32(v->ctx, v->g, name, 1, &h, ones);
    smelt_free(ones);
    if (!scale) return smelt_ctx_status(v->ctx);
    gr_value *in[2] = {m->x, scale};
    gr_node *ln = pu_node_new(v->ctx, v->g, name, OP_LAYER_NORMALIZATION, in, 2, 1);
    if (!ln) return smelt_ctx_status(v->ctx);
    SMELT_TRY(pu_attr_int(v->ctx, v->g, ln, "axis", -1));
    SMELT_TRY(pu_attr_float(v->ctx, v->g, ln, "epsilon", (float)m->eps));
    return take_over(v, n, ln, changed);
}

/* ---- LayerNorm's affine part: a following Mul or Add by a constant ---- */

/* A float32 constant with one value, or h values along the last of `rank`
 * axes (every other dim 1): one value per normalized position. */
static bool per_position(const gr_value *c, int rank, int64_t h)
{
    if (!c || !c->constant || c->dtype != SMELT_DT_FLOAT32 || c->rank > rank) return false;
    for (int d = 0; d + 1 < c->rank; d++)
        if (c->dims[d] != 1) return false;
    return gr_value_numel(c) == 1 || c->dims[c->rank - 1] == h;
}

static double position_value(const gr_value *c, int64_t j)
{
    return op_get_f64(c->constant, gr_value_numel(c) == 1 ? 0 : j);
}

/* ln normalizes its input's last axis with constant scale (and bias). */
static bool affine_foldable(const gr_node *ln, int64_t *h)
{
    const op_layernorm_attrs *a = ln->op_attrs;
    const gr_value *x = ln->inputs[0];
    if (!a || x->rank < 1 || (a->axis != -1 && a->axis != x->rank - 1)) return false;
    *h = x->dims[x->rank - 1];
    const gr_value *bias = ln->n_inputs > 2 ? ln->inputs[2] : NULL;
    return *h > 0 && per_position(ln->inputs[1], 1, *h) && (!bias || per_position(bias, 1, *h));
}

static smelt_status fold_affine(const simp_view *v, gr_node *n, gr_node *ln, const gr_value *c,
                                int64_t h, bool *changed)
{
    const gr_value *scale = ln->inputs[1], *bias = ln->n_inputs > 2 ? ln->inputs[2] : NULL;
    bool mul = n->op == OP_MUL;
    float *buf = smelt_alloc(sizeof(float) * 2 * (size_t)h);
    if (!buf) return smelt_errf(v->ctx, SMELT_ERR_NOMEM, "out of memory");
    float *s = buf, *b = buf + h;
    for (int64_t j = 0; j < h; j++) {
        double cj = position_value(c, j), bj = bias ? position_value(bias, j) : 0.0;
        s[j] = (float)(position_value(scale, j) * (mul ? cj : 1.0));
        b[j] = (float)(mul ? bj * cj : bj + cj);
    }
    bool with_bias = !mul || bias; /* a missing bias stays missing under Mul */
    gr_value *ns = mul ? pu_const_f32(v->ctx, v->g, ln->name, 1, &h, s) : ln->inputs[1];
    gr_value *nb = with_bias ? pu_const_f32(v->ctx, v->g, ln->name, 1, &h, b) : NULL;
    smelt_free(buf);
    if (!ns || (with_bias && !nb)) return smelt_ctx_status(v->ctx);
    ln->inputs[1] = ns;
    if (nb) SMELT_TRY(gr_node_set_input(v->ctx, v->g, ln, 2, nb));
    pu_take_output(ln, 0, n->outputs[0]);
    pu_detach(n);
    *changed = true;
    return SMELT_OK;
}

static smelt_status rule_layernorm_affine(const simp_view *v, gr_node *n, bool *changed)
{
    if ((n->op != OP_MUL && n->op != OP_ADD) || !plain(n)) return SMELT_OK;
    for (int k = 0; k < 2; k++) {
        gr_node *ln = inner(v, n->inputs[k], OP_LAYER_NORMALIZATION);
        const gr_value *c = n->inputs[1 - k];
        int64_t h;
        if (!ln || !affine_foldable(ln, &h) || !per_position(c, ln->inputs[0]->rank, h) ||
            !pu_same_type(n->outputs[0], n->inputs[k]))
            continue;
        return fold_affine(v, n, ln, c, h, changed);
    }
    return SMELT_OK;
}

/* ---- GELU ---- */

typedef struct gelu_match {
    gr_value *x;
    bool tanh_form;
} gelu_match;

static bool is_erf_arg(const simp_view *v, const gr_value *arg, const gr_value *x)
{
    gr_node *m = inner(v, arg, OP_MUL);
    if (m) return operand_beside(m, GELU_INV_SQRT2) == x;
    gr_node *d = inner(v, arg, OP_DIV);
    return d && d->inputs[0] == x && const_near(d->inputs[1], GELU_SQRT2);
}

/* cube = Pow(x, 3), x*(x*x) or (x*x)*x. */
static bool is_cube(const simp_view *v, const gr_value *cube, const gr_value *x)
{
    gr_node *p = inner(v, cube, OP_POW);
    if (p) return p->inputs[0] == x && const_near(p->inputs[1], 3.0);
    gr_node *m = inner(v, cube, OP_MUL);
    for (int k = 0; m && k < 2; k++) {
        gr_node *sq = m->inputs[k] == x ? inner(v, m->inputs[1 - k], OP_MUL) : NULL;
        if (sq && sq->inputs[0] == x && sq->inputs[1] == x) return true;
    }
    return false;
}

/* arg = sqrt(2/pi) * (x + 0.044715 * x^3), products and the sum in either order. */
static bool is_tanh_arg(const simp_view *v, const gr_value *arg, const gr_value *x)
{
    gr_node *scaled = inner(v, arg, OP_MUL);
    gr_node *sum = inner(v, operand_beside(scaled, GELU_TANH_SCALE), OP_ADD);
    for (int k = 0; sum && k < 2; k++) {
        gr_node *cubic = sum->inputs[k] == x ? inner(v, sum->inputs[1 - k], OP_MUL) : NULL;
        if (cubic && is_cube(v, operand_beside(cubic, GELU_TANH_CUBIC), x)) return true;
    }
    return false;
}

/* p = 1 + erf(x / sqrt(2)) or 1 + tanh(...), either order. */
static bool is_gelu_sum(const simp_view *v, const gr_value *p, const gr_value *x, bool *tanh_form)
{
    gr_value *t = operand_beside(inner(v, p, OP_ADD), 1.0);
    gr_node *e = inner(v, t, OP_ERF), *th = inner(v, t, OP_TANH);
    *tanh_form = th != NULL;
    if (e) return is_erf_arg(v, e->inputs[0], x);
    return th && is_tanh_arg(v, th->inputs[0], x);
}

/* The factors f[0..2] are {0.5, 1 + erf/tanh(...), x} in some order. */
static bool gelu_of_factors(const simp_view *v, gr_value *const *f, gelu_match *m)
{
    for (int h = 0; h < 3; h++) {
        if (!const_near(f[h], GELU_HALF)) continue;
        for (int q = 0; q < 3; q++) {
            if (q == h) continue;
            gr_value *x = f[3 - h - q];
            if (x->constant || !op_dtype_is_float(x->dtype)) continue;
            if (is_gelu_sum(v, f[q], x, &m->tanh_form)) {
                m->x = x;
                return true;
            }
        }
    }
    return false;
}

/* n = (a * b) * c or c * (a * b), the inner product read only here. */
static bool match_gelu(const simp_view *v, const gr_node *n, gelu_match *m)
{
    if (n->op != OP_MUL || !plain(n)) return false;
    for (int k = 0; k < 2; k++) {
        gr_node *u = inner(v, n->inputs[k], OP_MUL);
        if (!u) continue;
        gr_value *f[3] = {u->inputs[0], u->inputs[1], n->inputs[1 - k]};
        if (gelu_of_factors(v, f, m) && pu_same_type(m->x, n->outputs[0])) return true;
    }
    return false;
}

static smelt_status new_gelu(const simp_view *v, gr_node *n, const gelu_match *m, bool *changed)
{
    char name[200];
    snprintf(name, sizeof name, "%s.Gelu", n->name);
    gr_node *g = pu_node_new(v->ctx, v->g, name, OP_GELU, &m->x, 1, 1);
    if (!g) return smelt_ctx_status(v->ctx);
    if (m->tanh_form) SMELT_TRY(pu_attr_string(v->ctx, v->g, g, "approximate", "tanh"));
    return take_over(v, n, g, changed);
}

/* ---- entry ---- */

smelt_status simp_patterns_rewrite(const simp_view *v, gr_node *n, bool *changed)
{
    *changed = false;
    ln_match ln;
    gelu_match gelu;
    if (match_layernorm(v, n, &ln)) return new_layernorm(v, n, &ln, changed);
    if (match_gelu(v, n, &gelu)) return new_gelu(v, n, &gelu, changed);
    return rule_layernorm_affine(v, n, changed);
}
