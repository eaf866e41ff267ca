/* tensorize lowering (see tensorize.h).  Strides are read off the flattened
 * indices: the coefficient of a loop var is index(var=1) - index(var=0),
 * and the index minus coefficient*var must no longer use the var (so it is
 * affine in it).  Split or region guards on a replaced loop become a
 * smaller extent for that loop (M, N or K shrink at the edge). */
#include <string.h>

#include "lower/tensorize.h"
#include "tir/flatten.h"
#include "tir/simplify.h"

typedef struct lt {
    smelt_ctx *ctx;
    ir_builder *b;
    const lt_request *rq;
    tir_scope scope; /* ranges of the replaced loop vars */
} lt;

static smelt_status lt_err(lt *t, const char *why)
{
    /* an analysis that ran out of memory building expressions is no verdict */
    if (t->b->failed) return smelt_errf(t->ctx, SMELT_ERR_NOMEM, "out of memory");
    return smelt_errf(t->ctx, SMELT_ERR_ARG, "tensorize '%s' with %s: %s", t->rq->stage,
                      t->rq->kernel, why);
}

static ir_expr *simp(lt *t, ir_expr *e) { return tir_simplify_expr(t->b, e, &t->scope); }

static ir_expr *with_var(lt *t, ir_expr *e, int v, int64_t value)
{
    ir_subst m = {t->rq->var[v], ir_int(t->b, value)};
    return ir_expr_substitute(t->b, e, &m, 1);
}

static bool uses_inner(const lt *t, const ir_expr *e)
{
    for (int v = 0; v < t->rq->n_inner; v++)
        if (ir_expr_uses_var(e, t->rq->var[v])) return true;
    return false;
}

/* Constant coefficient of var v in e, with e affine in v. */
static bool coef_of(lt *t, ir_expr *e, int v, int64_t *out)
{
    ir_expr *d = simp(t, ir_sub(t->b, with_var(t, e, v, 1), with_var(t, e, v, 0)));
    if (!d || d->kind != IR_INT) return false;
    ir_expr *rest = simp(t, ir_sub(t->b, e, ir_mul(t->b, ir_var_ref(t->b, t->rq->var[v]), d)));
    if (!rest || ir_expr_uses_var(rest, t->rq->var[v])) return false;
    *out = d->i;
    return true;
}

/* e with every replaced loop var at 0. */
static ir_expr *base_of(lt *t, ir_expr *e)
{
    ir_subst m[LT_MAX_INNER];
    for (int v = 0; v < t->rq->n_inner; v++) m[v] = (ir_subst){t->rq->var[v], ir_int(t->b, 0)};
    return simp(t, ir_expr_substitute(t->b, e, m, t->rq->n_inner));
}

/* A guard "a < b" on one replaced loop v (a - b = c*v + rest, c > 0)
 * bounds v's extent by ceil(-rest / c). */
static smelt_status apply_guard(lt *t, ir_expr *g, ir_expr **ext)
{
    ir_expr *d;
    if (g->kind == IR_LT || g->kind == IR_LE) d = ir_sub(t->b, g->bin.a, g->bin.b);
    else if (g->kind == IR_GT || g->kind == IR_GE) d = ir_sub(t->b, g->bin.b, g->bin.a);
    else return lt_err(t, "a guard on a replaced loop is not a comparison");
    if (g->kind == IR_LE || g->kind == IR_GE) d = ir_sub(t->b, d, ir_int(t->b, 1));
    int which = -1;
    int64_t c = 0;
    for (int v = 0; v < t->rq->n_inner; v++) {
        int64_t k;
        if (!coef_of(t, d, v, &k)) return lt_err(t, "a guard is not affine in the replaced loops");
        if (k == 0) continue;
        if (which >= 0 || k < 0) return lt_err(t, "a guard couples several replaced loops");
        which = v;
        c = k;
    }
    if (which < 0) return lt_err(t, "a guard on the replaced loops cannot be analysed");
    ir_expr *rest = base_of(t, d); /* d = c*v + rest */
    ir_expr *bound = ir_binary(t->b, IR_FLOORDIV, ir_add(t->b, ir_sub(t->b, ir_int(t->b, 0), rest),
                                                          ir_int(t->b, c - 1)), ir_int(t->b, c));
    ext[which] = simp(t, ir_binary(t->b, IR_MIN, ext[which], bound));
    return SMELT_OK;
}

static ir_expr *strip_casts(ir_expr *e)
{
    while (e->kind == IR_CAST && e->dtype == SMELT_DT_FLOAT32) e = e->bin.a;
    return e;
}

typedef struct access {
    ir_buffer *buf;
    ir_expr *flat;
    int64_t coef[3]; /* for i, j, k */
} access;

static smelt_status read_access(lt *t, ir_buffer *buf, int n, ir_expr *const *idx, const int *ijk,
                                int n_roles, access *out)
{
    out->buf = buf;
    out->flat = simp(t, tir_flat_index(t->b, buf, n, idx));
    if (!out->flat) return smelt_errf(t->ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int r = 0; r < n_roles; r++)
        if (!coef_of(t, out->flat, ijk[r], &out->coef[r]))
            return lt_err(t, "an index is not affine with constant strides in the replaced loops");
    /* nothing but i, j, k may vary inside the kernel */
    return SMELT_OK;
}

/* i, j, k: the two data loops and the reduce loop; j has unit stride in C. */
static smelt_status assign_roles(lt *t, int *ijk, access *c)
{
    int data[2], n_data = 0, red = -1;
    for (int v = 0; v < t->rq->n_inner; v++) {
        if (t->rq->reduce[v]) red = v;
        else if (n_data < 2) data[n_data++] = v;
    }
    if (n_data != 2 || red < 0 || t->rq->n_inner != 3)
        return lt_err(t, "needs two data loops and one reduce loop");
    int order[3] = {data[0], data[1], red};
    SMELT_TRY(read_access(t, t->rq->dst, t->rq->dst_n, t->rq->dst_idx, order, 3, c));
    bool swap = c->coef[1] != 1 && c->coef[0] == 1;
    ijk[0] = swap ? data[1] : data[0];
    ijk[1] = swap ? data[0] : data[1];
    ijk[2] = red;
    if (swap) {
        int64_t x = c->coef[0];
        c->coef[0] = c->coef[1];
        c->coef[1] = x;
    }
    int64_t ei = t->rq->extent[ijk[0]], ej = t->rq->extent[ijk[1]];
    if (c->coef[1] != 1 && ej > 1) return lt_err(t, "no data loop has unit stride in the output");
    if (ei > 1 && c->coef[0] < ej) return lt_err(t, "output rows overlap (row stride below N)");
    return SMELT_OK;
}

/* A = the operand that does not vary with j, B = the one that does not
 * vary with i. */
static smelt_status assign_operands(lt *t, const int *ijk, access *a, access *bb)
{
    ir_expr *v = t->rq->value;
    if (v->kind != IR_MUL) return lt_err(t, "the reduced value is not a product");
    ir_expr *x = strip_casts(v->bin.a), *y = strip_casts(v->bin.b);
    if (x->kind != IR_LOAD || y->kind != IR_LOAD || x->load.buf->dtype != SMELT_DT_FLOAT32 ||
        y->load.buf->dtype != SMELT_DT_FLOAT32)
        return lt_err(t, "the reduced value is not a product of two float32 loads");
    access ax, ay;
    SMELT_TRY(read_access(t, x->load.buf, x->load.n, x->load.idx, ijk, 3, &ax));
    SMELT_TRY(read_access(t, y->load.buf, y->load.n, y->load.idx, ijk, 3, &ay));
    if (ax.coef[1] == 0 && ay.coef[0] == 0) {
        *a = ax;
        *bb = ay;
    } else if (ay.coef[1] == 0 && ax.coef[0] == 0) {
        *a = ay;
        *bb = ax;
    } else {
        return lt_err(t, "an operand depends on both output loops");
    }
    return SMELT_OK;
}

static ir_call_arg buf_arg(lt *t, const access *x) { return (ir_call_arg){x->buf, base_of(t, x->flat)}; }
static ir_call_arg int_arg(lt *t, int64_t v) { return (ir_call_arg){NULL, ir_int(t->b, v)}; }

/* Guards on the replaced loops shrink their extents; the others wrap the call. */
static smelt_status split_guards(lt *t, ir_expr **ext, ir_expr **outer)
{
    *outer = NULL;
    for (int v = 0; v < t->rq->n_inner; v++) ext[v] = ir_int(t->b, t->rq->extent[v]);
    for (int g = 0; g < t->rq->n_guards; g++) {
        ir_expr *cond = simp(t, t->rq->guards[g]);
        if (!cond || ir_is_int(cond, 1)) continue;
        if (uses_inner(t, cond)) {
            SMELT_TRY(apply_guard(t, cond, ext));
        } else {
            *outer = *outer ? ir_binary(t->b, IR_AND, *outer, cond) : cond;
        }
    }
    return SMELT_OK;
}

static smelt_status build_gemm(lt *t, ir_stmt **out)
{
    int ijk[3] = {0, 1, 2};
    access c = {0}, a = {0}, bb = {0};
    SMELT_TRY(assign_roles(t, ijk, &c));
    SMELT_TRY(assign_operands(t, ijk, &a, &bb));
    ir_expr *ext[LT_MAX_INNER], *outer;
    SMELT_TRY(split_guards(t, ext, &outer));
    ir_call_arg args[11] = {
        buf_arg(t, &c), buf_arg(t, &a), buf_arg(t, &bb),
        {NULL, ext[ijk[0]]}, {NULL, ext[ijk[1]]}, {NULL, ext[ijk[2]]},
        int_arg(t, c.coef[0]), int_arg(t, a.coef[0]), int_arg(t, a.coef[2]),
        int_arg(t, bb.coef[2]), int_arg(t, bb.coef[1]),
    };
    ir_stmt *s = ir_call_stmt(t->b, t->rq->kernel, 11, args);
    *out = outer ? ir_if(t->b, outer, s, NULL) : s;
    return t->b->failed ? smelt_errf(t->ctx, SMELT_ERR_NOMEM, "out of memory") : SMELT_OK;
}

/* smelt.transpose_f32(dst, src, M, N, ldd, lds): dst[i*ldd + j] = src[i + j*lds];
 * j is the loop with unit stride in dst, i the one with unit stride in src. */
static smelt_status build_transpose(lt *t, ir_stmt **out)
{
    if (t->rq->n_inner != 2 || t->rq->reduce[0] || t->rq->reduce[1])
        return lt_err(t, "needs two data loops");
    ir_expr *v = strip_casts(t->rq->value);
    if (v->kind != IR_LOAD || v->load.buf->dtype != SMELT_DT_FLOAT32)
        return lt_err(t, "the value is not one float32 load");
    int ij[2] = {0, 1};
    access d = {0}, src = {0};
    SMELT_TRY(read_access(t, t->rq->dst, t->rq->dst_n, t->rq->dst_idx, ij, 2, &d));
    if (d.coef[1] != 1 && d.coef[0] == 1) {
        ij[0] = 1;
        ij[1] = 0;
        SMELT_TRY(read_access(t, t->rq->dst, t->rq->dst_n, t->rq->dst_idx, ij, 2, &d));
    }
    SMELT_TRY(read_access(t, v->load.buf, v->load.n, v->load.idx, ij, 2, &src));
    int64_t m = t->rq->extent[ij[0]], n = t->rq->extent[ij[1]];
    if (n > 1 && d.coef[1] != 1) return lt_err(t, "no loop has unit stride in the output");
    if (m > 1 && src.coef[0] != 1)
        return lt_err(t, "the input is not contiguous along the output's other loop");
    if (m > 1 && d.coef[0] < n) return lt_err(t, "output rows overlap (row stride below N)");
    ir_expr *ext[LT_MAX_INNER], *outer;
    SMELT_TRY(split_guards(t, ext, &outer));
    ir_call_arg args[6] = {
        buf_arg(t, &d), buf_arg(t, &src), {NULL, ext[ij[0]]}, {NULL, ext[ij[1]]},
        int_arg(t, d.coef[0]), int_arg(t, src.coef[1]),
    };
    ir_stmt *s = ir_call_stmt(t->b, t->rq->kernel, 6, args);
    *out = outer ? ir_if(t->b, outer, s, NULL) : s;
    return t->b->failed ? smelt_errf(t->ctx, SMELT_ERR_NOMEM, "out of memory") : SMELT_OK;
}

smelt_status lower_tensorize(smelt_ctx *ctx, ir_builder *b, const lt_request *rq, ir_stmt **out)
{
    *out = NULL;
    bool gemm = strcmp(rq->kernel, "smelt.gemm_f32") == 0;
    if (!gemm && strcmp(rq->kernel, "smelt.transpose_f32") != 0)
        return smelt_errf(ctx, SMELT_ERR_ARG, "tensorize '%s': unknown micro-kernel '%s'", rq->stage,
                          rq->kernel);
    lt t = {ctx, b, rq, {0}};
    tir_scope_init(&t.scope, NULL);
    for (int v = 0; v < rq->n_inner; v++) tir_scope_push_range(&t.scope, rq->var[v], 0, rq->extent[v] - 1);
    smelt_status s = gemm ? build_gemm(&t, out) : build_transpose(&t, out);
    tir_scope_fini(&t.scope);
    return s;
}
