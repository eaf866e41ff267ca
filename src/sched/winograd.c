/* Winograd F(m x m, 3 x 3): the other algorithm for a 3x3 stride-1 conv.
 *
 * The schedule step `winograd STAGE M` (first in a schedule) replaces the
 * direct sum stage STAGE (a ConvNCHWc sum with te_conv2d_info) of a te graph
 * by Lavin & Gray's minimal filtering over tiles of M x M outputs
 * (alpha = M + 2 inputs square):
 *
 *   U [alpha^2, Co/nb, Ci, nb]  G g G^T per (co, ci), computed here, at
 *                               compile time, from the constant weights (a
 *                               te_const: bound to the weight blob)
 *   V [alpha^2, P, Ci]          B^T d B per tile p (P = N x ceil(OH/M) x
 *                               ceil(OW/M)) and input channel; taps in the
 *                               padding or past the input read 0
 *   W [alpha^2, P, Co]          alpha^2 independent GEMMs sum_ci V U (tag
 *                               "matmul_packed": the matrix-product rule
 *                               tiles them, one U panel per tile column)
 *   STAGE [N, Co/ob, OH, OW, ob]  A^T W A, the tile's entry for (oh % M,
 *                               ow % M): the same buffer as before, so the
 *                               fused epilogue (bias, relu, residual add)
 *                               reads it unchanged.  Tail tiles compute
 *                               outputs past OH/OW that nobody reads.
 *
 * The transforms come from the Cook-Toom construction over the points
 * 0, 1, -1 (M = 2), 0, +-1, +-2 (M = 4), 0, +-1, +-2, +-1/2 (M = 6) and
 * infinity, in double.  B^T and A^T hold small integers (and halves,
 * quarters for M = 6), so V and the output are exact sums of a few terms;
 * all the division sits in G, applied once to the weights in double.  The
 * float32 error grows with M (measured max error relative to
 * max|x| max|w| Ci 9: about 4e-9 for M = 2, 6e-8 for M = 4, 1.2e-7 for
 * M = 6, against 1e-9 for the direct sum), which is why the tuner offers
 * it only as a knob and the default stays the direct convolution.
 *
 * The transform stages use select chains over the transform row (a, b =
 * e / alpha, e % alpha; oh % M, ow % M); in a vector loop the condition is
 * the same in every lane, so codegen emits an if / else chain that runs one
 * branch (and an unrolled loop folds it away).
 */
#include <string.h>

#include "sched/sched.h"

#define WINO_MAX_M 6
#define WINO_MAX_ALPHA (WINO_MAX_M + 2)

typedef struct wino_mats {
    int m, n; /* output tile, input tile (alpha) */
    double at[WINO_MAX_M][WINO_MAX_ALPHA]; /* A^T: m x n */
    double g[WINO_MAX_ALPHA][3];                   /* G:   n x 3 */
    double bt[WINO_MAX_ALPHA][WINO_MAX_ALPHA];     /* B^T: n x n */
} wino_mats;

/* F(6x6) (points 0, +-1, +-2, +-1/2) builds and is correct, but its output
 * transform (36 select branches of up to 49 terms) is too large to inline
 * into the fused epilogue (SCH_INLINE_MAX_NODES) and takes minutes to
 * compile: not offered until the transforms are separable stages. */
bool sch_winograd_m_ok(int64_t m) { return m == 2 || m == 4; }

/* Cook-Toom: points p_0..p_{n-2} and infinity.
 *   A^T[i][j] = p_j^i (the last column: 1 in the last row)
 *   G[j][k]   = p_j^k / prod_{l != j} (p_j - p_l) (the last row: [0 0 1])
 *   B^T[j]    = coefficients of prod_{l != j} (x - p_l) (the last row:
 *               of prod_l (x - p_l)) */
static void wino_matrices(int m, wino_mats *w)
{
    static const double pts[] = {0, 1, -1, 2, -2, 0.5, -0.5};
    memset(w, 0, sizeof *w);
    int n = m + 2, np = n - 1;
    w->m = m;
    w->n = n;
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < np; j++) {
            double v = 1;
            for (int e = 0; e < i; e++) v *= pts[j];
            w->at[i][j] = v;
        }
        w->at[i][n - 1] = i == m - 1;
    }
    for (int j = 0; j < np; j++) {
        double f = 1;
        for (int l = 0; l < np; l++)
            if (l != j) f *= pts[j] - pts[l];
        for (int k = 0; k < 3; k++) {
            double v = 1;
            for (int e = 0; e < k; e++) v *= pts[j];
            w->g[j][k] = v / f;
        }
    }
    w->g[n - 1][2] = 1;
    for (int j = 0; j <= np; j++) {
        double poly[WINO_MAX_ALPHA + 1] = {1};
        int deg = 0;
        for (int l = 0; l < np; l++) {
            if (l == j) continue;
            /* poly *= (x - p_l) */
            for (int d = deg + 1; d > 0; d--) poly[d] = poly[d - 1] - pts[l] * poly[d];
            poly[0] = -pts[l] * poly[0];
            deg++;
        }
        for (int i = 0; i < n; i++) w->bt[j][i] = i <= deg ? poly[i] : 0;
    }
}

const te_tensor *sch_winograd_candidate(const te_graph *g)
{
    for (int i = 0; i < g->tensors.len; i++) {
        const te_tensor *t = g->tensors.items[i];
        if (t->kind == TE_COMPUTE && t->conv2d) return t;
    }
    return NULL;
}

typedef struct wino_def {
    wino_mats w;
    const te_conv2d_info *c;
    const te_tensor *u, *v, *mm;
    int64_t tiles_h, tiles_w, panel;
} wino_def;

static ir_expr *fconst(ir_builder *b, double v) { return ir_const_float(b, SMELT_DT_FLOAT32, v); }

/* acc + coef * term, with coefficients +-1 as plain adds and subtracts. */
static ir_expr *add_term(ir_builder *b, ir_expr *acc, double coef, ir_expr *term)
{
    if (coef == 0) return acc;
    if (coef == -1 && acc) return ir_sub(b, acc, term);
    ir_expr *x = coef == 1 ? term : coef == -1 ? ir_sub(b, fconst(b, 0), term)
                                                : ir_mul(b, fconst(b, coef), term);
    return acc ? ir_add(b, acc, x) : x;
}

static ir_expr *eq(ir_builder *b, ir_expr *x, int64_t v)
{
    return ir_binary(b, IR_EQ, x, ir_int(b, v));
}

static ir_expr *idiv(ir_builder *b, ir_expr *x, int64_t d)
{
    return d == 1 ? x : ir_binary(b, IR_FLOORDIV, x, ir_int(b, d));
}

static ir_expr *imod(ir_builder *b, ir_expr *x, int64_t d)
{
    return d == 1 ? ir_int(b, 0) : ir_binary(b, IR_FLOORMOD, x, ir_int(b, d));
}

/* The input tap (row h0 + i, column w0 + j) of channel ci, 0 outside. */
static ir_expr *input_tap(te_graph *g, const wino_def *d, ir_expr *nn, ir_expr *ci, ir_expr *h0,
                          ir_expr *w0, int i, int j)
{
    ir_builder *b = &g->b;
    const te_conv2d_info *c = d->c;
    ir_expr *h = ir_add(b, h0, ir_int(b, i)), *w = ir_add(b, w0, ir_int(b, j));
    ir_expr *xi[5];
    int k = 0;
    xi[k++] = nn;
    xi[k++] = idiv(b, ci, c->in_block);
    xi[k++] = h;
    xi[k++] = w;
    if (c->x->n_axes == 5) xi[k++] = imod(b, ci, c->in_block);
    ir_expr *cond = ir_binary(b, IR_AND, ir_binary(b, IR_GE, h, ir_int(b, 0)),
                              ir_binary(b, IR_LT, h, ir_int(b, c->in_h)));
    cond = ir_binary(b, IR_AND, cond, ir_binary(b, IR_GE, w, ir_int(b, 0)));
    cond = ir_binary(b, IR_AND, cond, ir_binary(b, IR_LT, w, ir_int(b, c->in_w)));
    return ir_select(b, cond, te_read(g, c->x, xi), fconst(b, 0));
}

/* V[e, p, ci] = (B^T d B)[e / alpha, e % alpha] */
static ir_expr *input_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const wino_def *d = user;
    ir_builder *b = &g->b;
    const te_conv2d_info *c = d->c;
    int n = d->w.n, m = d->w.m;
    ir_expr *ea = idiv(b, idx[0], n), *eb = imod(b, idx[0], n);
    ir_expr *p = idx[1], *ci = idx[2];
    ir_expr *nn = idiv(b, p, d->tiles_h * d->tiles_w);
    ir_expr *th = imod(b, idiv(b, p, d->tiles_w), d->tiles_h), *tw = imod(b, p, d->tiles_w);
    ir_expr *h0 = ir_sub(b, ir_mul(b, th, ir_int(b, m)), ir_int(b, c->pad_top));
    ir_expr *w0 = ir_sub(b, ir_mul(b, tw, ir_int(b, m)), ir_int(b, c->pad_left));
    ir_expr *by_a = NULL;
    for (int a = n - 1; a >= 0; a--) {
        ir_expr *by_b = NULL;
        for (int bb = n - 1; bb >= 0; bb--) {
            ir_expr *sum = NULL;
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    double coef = d->w.bt[a][i] * d->w.bt[bb][j];
                    if (coef != 0) sum = add_term(b, sum, coef, input_tap(g, d, nn, ci, h0, w0, i, j));
                }
            if (!sum) sum = fconst(b, 0);
            by_b = by_b ? ir_select(b, eq(b, eb, bb), sum, by_b) : sum;
        }
        by_a = by_a ? ir_select(b, eq(b, ea, a), by_b, by_a) : by_b;
    }
    return by_a;
}

/* W[e, p, co] = sum_ci V[e, p, ci] U[e, co / nb, ci, co % nb] */
static ir_expr *gemm_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const wino_def *d = user;
    ir_builder *b = &g->b;
    ir_axis k = te_reduce_axis(g, "k", d->c->in_channels);
    ir_expr *kv = ir_var_ref(b, k.var);
    ir_expr *vi[3] = {idx[0], idx[1], kv};
    ir_expr *ui[4] = {idx[0], idiv(b, idx[2], d->panel), kv, imod(b, idx[2], d->panel)};
    return te_reduce(g, IR_REDUCE_SUM, ir_mul(b, te_read(g, d->v, vi), te_read(g, d->u, ui)), 1, &k);
}

/* y[nn, cob, oh, ow, ol] = (A^T W A)[oh % m, ow % m] of tile (nn, oh / m, ow / m) */
static ir_expr *output_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const wino_def *d = user;
    ir_builder *b = &g->b;
    int n = d->w.n, m = d->w.m;
    ir_expr *oh = idx[2], *ow = idx[3];
    ir_expr *p = ir_add(b, ir_mul(b, idx[0], ir_int(b, d->tiles_h * d->tiles_w)),
                        ir_add(b, ir_mul(b, idiv(b, oh, m), ir_int(b, d->tiles_w)), idiv(b, ow, m)));
    ir_expr *co = ir_add(b, ir_mul(b, idx[1], ir_int(b, d->c->out_block)), idx[4]);
    ir_expr *u = imod(b, oh, m), *v = imod(b, ow, m);
    ir_expr *by_u = NULL;
    for (int i = m - 1; i >= 0; i--) {
        ir_expr *by_v = NULL;
        for (int j = m - 1; j >= 0; j--) {
            ir_expr *sum = NULL;
            for (int a = 0; a < n; a++)
                for (int bb = 0; bb < n; bb++) {
                    double coef = d->w.at[i][a] * d->w.at[j][bb];
                    if (coef == 0) continue;
                    ir_expr *mi[3] = {ir_int(b, a * n + bb), p, co};
                    sum = add_term(b, sum, coef, te_read(g, d->mm, mi));
                }
            by_v = by_v ? ir_select(b, eq(b, v, j), sum, by_v) : sum;
        }
        by_u = by_u ? ir_select(b, eq(b, u, i), by_v, by_u) : by_v;
    }
    return by_u;
}

/* U = G g G^T for every (co, ci), in double, packed [alpha^2, Co/nb, Ci, nb]
 * (zero past Co). */
static void transform_weights(const wino_def *d, float *u)
{
    const te_conv2d_info *c = d->c;
    int n = d->w.n;
    int64_t ci_n = c->in_channels, co_n = c->out_channels, nb = d->panel;
    int64_t panels = (co_n + nb - 1) / nb, ib = c->in_block, ob = c->out_block;
    for (int64_t co = 0; co < co_n; co++)
        for (int64_t ci = 0; ci < ci_n; ci++) {
            double g[3][3], t[WINO_MAX_ALPHA][3];
            for (int kh = 0; kh < 3; kh++)
                for (int kw = 0; kw < 3; kw++) {
                    /* W [Co/ob, Ci/ib, 3, 3, ib, ob] */
                    int64_t off = ((((co / ob) * (ci_n / ib) + ci / ib) * 3 + kh) * 3 + kw) * ib * ob +
                                  (ci % ib) * ob + co % ob;
                    g[kh][kw] = c->w_data[off];
                }
            for (int a = 0; a < n; a++)
                for (int kw = 0; kw < 3; kw++)
                    t[a][kw] = d->w.g[a][0] * g[0][kw] + d->w.g[a][1] * g[1][kw] +
                               d->w.g[a][2] * g[2][kw];
            for (int a = 0; a < n; a++)
                for (int bb = 0; bb < n; bb++) {
                    double v = t[a][0] * d->w.g[bb][0] + t[a][1] * d->w.g[bb][1] +
                               t[a][2] * d->w.g[bb][2];
                    int64_t e = a * n + bb;
                    u[((e * panels + co / nb) * ci_n + ci) * nb + co % nb] = (float)v;
                }
        }
}

static smelt_status oom(smelt_ctx *ctx) { return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory"); }

/* A shallow copy of t in g (buffer and body shared). */
static te_tensor *copy_tensor(te_graph *g, const te_tensor *t)
{
    te_tensor *c = smelt_arena_alloc(&g->arena, sizeof *c);
    if (!c || !smelt_ptrvec_push(&g->tensors, c)) return NULL;
    *c = *t;
    c->index = g->tensors.len - 1;
    return c;
}

static smelt_status build_stages(smelt_ctx *ctx, te_graph *ng, const te_tensor *t, wino_def *d,
                                 const char *stage)
{
    const te_conv2d_info *c = d->c;
    int64_t e = (int64_t)d->w.n * d->w.n;
    int64_t tiles = c->batch * d->tiles_h * d->tiles_w;
    int64_t panels = (c->out_channels + d->panel - 1) / d->panel;
    char name[256];
    int64_t ushape[4] = {e, panels, c->in_channels, d->panel};
    snprintf(name, sizeof name, "%s_wu", stage);
    te_tensor *u = te_placeholder(ng, name, SMELT_DT_FLOAT32, 4, ushape);
    if (!u) return smelt_ctx_status(ctx) ? smelt_ctx_status(ctx) : oom(ctx);
    u->buf->kind = IR_BUF_CONST;
    te_const *k = smelt_arena_alloc(&ng->arena, sizeof *k);
    int64_t numel = e * panels * c->in_channels * d->panel;
    float *data = smelt_calloc((size_t)numel, sizeof *data);
    if (!k || !data || !smelt_ptrvec_push(&ng->consts, k)) {
        smelt_free(data);
        return oom(ctx);
    }
    *k = (te_const){.t = u, .data = data, .numel = numel};
    transform_weights(d, data);
    d->u = u;
    int64_t vshape[3] = {e, tiles, c->in_channels};
    snprintf(name, sizeof name, "%s_wv", stage);
    d->v = te_compute(ng, name, SMELT_DT_FLOAT32, 3, vshape, input_body, d, "winograd_input");
    if (!d->v) return smelt_ctx_status(ctx) ? smelt_ctx_status(ctx) : oom(ctx);
    int64_t mshape[3] = {e, tiles, c->out_channels};
    snprintf(name, sizeof name, "%s_wm", stage);
    d->mm = te_compute(ng, name, SMELT_DT_FLOAT32, 3, mshape, gemm_body, d, "matmul_packed");
    if (!d->mm) return smelt_ctx_status(ctx) ? smelt_ctx_status(ctx) : oom(ctx);
    /* the stage itself: same buffer and axes, the output transform as body */
    te_tensor *y = copy_tensor(ng, t);
    if (!y) return oom(ctx);
    ir_expr *idx[SMELT_MAX_RANK];
    for (int i = 0; i < t->n_axes; i++) idx[i] = ir_var_ref(&ng->b, t->axes[i].var);
    y->body = output_body(ng, idx, d);
    y->tag = "winograd_output";
    y->conv2d = NULL;
    if (!y->body || ng->b.failed) return smelt_ctx_status(ctx) ? smelt_ctx_status(ctx) : oom(ctx);
    return SMELT_OK;
}

smelt_status sch_winograd_te(smelt_ctx *ctx, const te_graph *g, const char *stage, int64_t m,
                             te_graph **out)
{
    *out = NULL;
    const te_tensor *t = te_tensor_named(g, stage);
    if (!t || !t->conv2d || t->kind != TE_COMPUTE)
        return smelt_errf(ctx, SMELT_ERR_ARG, "winograd %s: not a 3x3 stride-1 float32 conv stage "
                          "with constant weights", stage);
    if (!sch_winograd_m_ok(m))
        return smelt_errf(ctx, SMELT_ERR_ARG, "winograd %s %lld: the tile must be 2 or 4", stage,
                          (long long)m);
    const te_conv2d_info *c = t->conv2d;
    if (t->n_axes != 5 || t->buf->dtype != SMELT_DT_FLOAT32)
        return smelt_errf(ctx, SMELT_ERR_ARG, "winograd %s: expected a blocked float32 output", stage);
    te_graph *ng = te_graph_new(ctx);
    if (!ng) return oom(ctx);
    ng->b.next_id = g->b.next_id; /* bodies share vars and buffers with g */
    wino_def *d = smelt_arena_alloc(&ng->arena, sizeof *d);
    smelt_status s = d ? SMELT_OK : oom(ctx);
    if (d) {
        memset(d, 0, sizeof *d);
        wino_matrices((int)m, &d->w);
        d->c = c;
        d->tiles_h = (c->out_h + m - 1) / m;
        d->tiles_w = (c->out_w + m - 1) / m;
        /* two output blocks per panel when they divide Co: the matrix-product
         * rule then holds a rows x 2-vector tile in registers */
        d->panel = c->out_channels % (2 * c->out_block) == 0 ? 2 * c->out_block : c->out_block;
    }
    for (int i = 0; s == SMELT_OK && i < g->tensors.len; i++) {
        const te_tensor *x = g->tensors.items[i];
        if (x == t) s = build_stages(ctx, ng, t, d, stage);
        else if (!copy_tensor(ng, x)) s = oom(ctx);
    }
    for (int i = 0; s == SMELT_OK && i < g->outputs.len; i++) {
        const te_tensor *o = g->outputs.items[i];
        if (!smelt_ptrvec_push(&ng->outputs, ng->tensors.items[0]) ) s = oom(ctx);
        else {
            te_tensor *mapped = te_tensor_of(ng, o->buf);
            ng->outputs.items[ng->outputs.len - 1] = mapped;
            if (!mapped) s = smelt_errf(ctx, SMELT_ERR_INTERNAL, "winograd: lost output '%s'", o->buf->name);
        }
    }
    if (s != SMELT_OK) {
        te_graph_free(ng);
        return s;
    }
    *out = ng;
    return SMELT_OK;
}
