/* simplify_algebra: identities, chains and patterns on small graphs. */
#include "passes/pass_graphs.h"

static const int64_t D[2] = {4, 6};

/* Identity(x) * 1 + 0, Dropout: all gone. */
static void identities(gr_graph *g)
{
    gr_value *x = tg_input(g, "x", 2, D);
    gr_value *i = tg_op(g, OP_IDENTITY, "id", 1, &x);
    gr_value *m[2] = {i, tg_const(g, "one", 2, D, 1, 0)};
    gr_value *a[2] = {tg_op(g, OP_MUL, "mul1", 2, m), tg_const(g, "zero", 0, D, 0, 0)};
    gr_value *y = tg_op(g, OP_ADD, "add0", 2, a);
    gr_value *dr = tg_op(g, OP_DROPOUT, "drop", 1, &y);
    tg_output(g, tg_op(g, OP_RELU, "relu", 1, &dr));
}

/* x*1 with a broadcasting 1 changes the shape: stays. */
static void broadcast_one(gr_graph *g)
{
    int64_t d1[2] = {4, 1};
    gr_value *x = tg_input(g, "x", 2, d1);
    gr_value *m[2] = {x, tg_const(g, "one", 2, D, 1, 0)};
    tg_output(g, tg_op(g, OP_MUL, "mul1", 2, m));
}

/* x / c -> x * (1/c); Pow(x, 2) -> x*x; Pow(x, 0.5) -> Sqrt. */
static void div_pow(gr_graph *g)
{
    int64_t one[1] = {1};
    gr_value *x = tg_input(g, "x", 2, D);
    gr_value *dv[2] = {x, tg_const(g, "c", 1, (int64_t[]){6}, 1, 0.5f)};
    gr_value *q = tg_op(g, OP_DIV, "div", 2, dv);
    gr_value *p2[2] = {q, tg_const(g, "two", 1, one, 2, 0)};
    gr_value *sq = tg_op(g, OP_POW, "pow2", 2, p2);
    gr_value *ph[2] = {sq, tg_const(g, "half", 1, one, 0.5f, 0)};
    tg_output(g, tg_op(g, OP_POW, "powh", 2, ph));
}

/* (x*2)*3 -> x*6, (x+1)+2 -> x+3. */
static void const_chains(gr_graph *g)
{
    int64_t one[1] = {1};
    gr_value *x = tg_input(g, "x", 2, D);
    gr_value *m1[2] = {x, tg_const(g, "a", 1, one, 2, 0)};
    gr_value *m2[2] = {tg_const(g, "b", 1, (int64_t[]){6}, 3, 1), tg_op(g, OP_MUL, "m1", 2, m1)};
    gr_value *a1[2] = {tg_op(g, OP_MUL, "m2", 2, m2), tg_const(g, "c", 1, one, 1, 0)};
    gr_value *a2[2] = {tg_op(g, OP_ADD, "a1", 2, a1), tg_const(g, "d", 1, one, 2, 0)};
    tg_output(g, tg_op(g, OP_ADD, "a2", 2, a2));
}

static gr_value *transpose(gr_graph *g, const char *name, gr_value *x, const int64_t *perm, int r)
{
    gr_node *n = tg_node_attrs(g, OP_TRANSPOSE, name, 1, &x);
    pu_attr_ints(tg_ctx, g, n, "perm", perm, r);
    return tg_import(g, n);
}

/* Transpose pairs: cancelled, or merged into one. */
static void transposes(gr_graph *g)
{
    int64_t d[3] = {2, 3, 4}, p[3] = {1, 2, 0}, q[3] = {2, 0, 1};
    gr_value *x = tg_input(g, "x", 3, d);
    gr_value *t = transpose(g, "t2", transpose(g, "t1", x, p, 3), q, 3); /* identity */
    gr_value *u = transpose(g, "t4", transpose(g, "t3", t, p, 3), p, 3); /* one Transpose */
    tg_output(g, tg_op(g, OP_RELU, "relu", 1, &u));
}

/* Reshape(Reshape(x)) -> one Reshape; Unsqueeze(Squeeze(x)) -> x. */
static void views(gr_graph *g)
{
    int64_t d[3] = {1, 4, 6}, s1[2] = {4, 6}, s2[2] = {6, 4}, ax[1] = {0};
    gr_value *x = tg_input(g, "x", 3, d);
    gr_value *sq[2] = {x, tg_const_i64(g, "ax", 1, ax)};
    gr_value *un[2] = {tg_op(g, OP_SQUEEZE, "sq", 2, sq), tg_const_i64(g, "ax2", 1, ax)};
    gr_value *y = tg_op(g, OP_UNSQUEEZE, "unsq", 2, un);
    gr_value *r1[2] = {y, tg_const_i64(g, "s1", 2, s1)};
    gr_value *r2[2] = {tg_op(g, OP_RESHAPE, "r1", 2, r1), tg_const_i64(g, "s2", 2, s2)};
    gr_value *z = tg_op(g, OP_RESHAPE, "r2", 2, r2);
    tg_output(g, tg_op(g, OP_RELU, "relu", 1, &z));
}

static gr_value *cast(gr_graph *g, const char *name, gr_value *x, smelt_dtype to)
{
    gr_node *n = tg_node_attrs(g, OP_CAST, name, 1, &x);
    pu_attr_int(tg_ctx, g, n, "to", to);
    return tg_import(g, n);
}

/* f32 -> f64 -> f32 is exact: one Cast to f32, which is x itself. f32 -> f16
 * -> f32 rounds: both stay. */
static void casts(gr_graph *g)
{
    gr_value *x = tg_input(g, "x", 2, D);
    gr_value *a = cast(g, "c2", cast(g, "c1", x, SMELT_DT_FLOAT64), SMELT_DT_FLOAT32);
    gr_value *b = cast(g, "c4", cast(g, "c3", x, SMELT_DT_FLOAT16), SMELT_DT_FLOAT32);
    gr_value *in[2] = {a, b};
    tg_output(g, tg_op(g, OP_ADD, "add", 2, in));
}

/* MatMul + bias, 2-D: Gemm. */
static void matmul_add(gr_graph *g)
{
    int64_t w[2] = {6, 5}, b[1] = {5};
    gr_value *x = tg_input(g, "x", 2, D);
    gr_value *mm[2] = {x, tg_const(g, "w", 2, w, -1, 0.07f)};
    gr_value *ad[2] = {tg_op(g, OP_MATMUL, "mm", 2, mm), tg_const(g, "b", 1, b, 0.5f, 0.25f)};
    tg_output(g, tg_op(g, OP_ADD, "add", 2, ad));
}

int main(void)
{
    tg_check("identities", identities, pass_simplify_algebra, "Relu");
    tg_check("broadcasting x*1 stays", broadcast_one, pass_simplify_algebra, "Mul");
    tg_check("div and pow", div_pow, pass_simplify_algebra, "Mul,Mul,Sqrt");
    tg_check("constant chains", const_chains, pass_simplify_algebra, "Mul,Add");
    tg_check("transposes", transposes, pass_simplify_algebra, "Transpose,Relu");
    tg_check("views", views, pass_simplify_algebra, "Reshape,Relu");
    tg_check("casts", casts, pass_simplify_algebra, "Cast,Cast,Add");
    tg_check("matmul + bias", matmul_add, pass_simplify_algebra, "Gemm");
    TEST_MAIN_END();
}
