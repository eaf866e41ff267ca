/* tir analyses and passes: bounds, prover, simplifier, loop partitioning,
 * storage flattening, vectorize legality, and the interpreter.  Pass tests
 * are before/after pairs compared through the printer; randomized tests
 * check the simplifier and partitioner by evaluating before and after. */
#include <stdlib.h>

#include "test_util.h"
#include "tir/affine.h"
#include "tir/passes.h"
#include "tir/scalar.h"

#define CHECK_STR_EQ(got, want)                                                          \
    do {                                                                                 \
        const char *got_ = (got), *want_ = (want);                                       \
        if (strcmp(got_, want_) == 0) {                                                  \
            test_checks_passed++;                                                        \
        } else {                                                                         \
            test_checks_failed++;                                                        \
            fprintf(stderr, "%s:%d: got\n%s\nwant\n%s\n", __FILE__, __LINE__, got_, want_); \
        }                                                                                \
    } while (0)

static ir_builder B;
static smelt_arena ARENA;

/* Printed forms live in a small ring of buffers so a CHECK can hold two. */
static const char *keep(smelt_strbuf *sb)
{
    static char ring[4][8192];
    static int next;
    char *dst = ring[next++ % 4];
    snprintf(dst, sizeof ring[0], "%s", smelt_strbuf_cstr(sb));
    smelt_strbuf_fini(sb);
    return dst;
}

static const char *E(const ir_expr *e)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    ir_expr_print(e, &sb);
    return keep(&sb);
}

static const char *S(const ir_stmt *s)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    ir_stmt_print(s, 0, &sb);
    return keep(&sb);
}

/* ---- shorthand builders ---- */
static ir_expr *I(int64_t v) { return ir_int(&B, v); }
static ir_expr *V(ir_var *v) { return ir_var_ref(&B, v); }
static ir_expr *add(ir_expr *a, ir_expr *b) { return ir_add(&B, a, b); }
static ir_expr *sub(ir_expr *a, ir_expr *b) { return ir_sub(&B, a, b); }
static ir_expr *mul(ir_expr *a, ir_expr *b) { return ir_mul(&B, a, b); }
static ir_expr *bin(ir_kind k, ir_expr *a, ir_expr *b) { return ir_binary(&B, k, a, b); }
static ir_expr *F32(double v) { return ir_const_float(&B, SMELT_DT_FLOAT32, v); }
static ir_var *ivar(const char *name) { return ir_var_new(&B, name, SMELT_DT_INT64); }

static ir_buffer *buf1(const char *name, int64_t n)
{
    return ir_buffer_new(&B, name, SMELT_DT_FLOAT32, 1, &n, IR_BUF_OUTPUT);
}

static ir_expr *ld1(ir_buffer *b, ir_expr *i) { return ir_load(&B, b, 1, &i); }
static ir_stmt *st1(ir_buffer *b, ir_expr *i, ir_expr *v) { return ir_store(&B, b, 1, &i, v); }
static ir_stmt *loop(ir_var *v, int64_t mn, int64_t ext, ir_for_kind k, ir_stmt *body)
{
    return ir_for(&B, v, I(mn), I(ext), k, body);
}

/* ---- bounds and prover ---- */

static void test_bounds(void)
{
    ir_var *i = ivar("i"), *j = ivar("j"), *x = ivar("x");
    tir_scope sc;
    tir_scope_init(&sc, NULL);
    tir_scope_push_range(&sc, i, 0, 5);
    tir_scope_push_range(&sc, j, 0, 15);
    ir_expr *idx = add(mul(V(i), I(16)), V(j));
    tir_interval r = tir_bounds(idx, &sc);
    CHECK(!r.lo_inf && !r.hi_inf && r.lo == 0 && r.hi == 95);
    r = tir_bounds(bin(IR_FLOORDIV, idx, I(4)), &sc);
    CHECK(r.lo == 0 && r.hi == 23 && !r.hi_inf);
    r = tir_bounds(bin(IR_FLOORMOD, V(x), I(8)), &sc);
    CHECK(r.lo == 0 && r.hi == 7 && !r.lo_inf && !r.hi_inf);
    r = tir_bounds(bin(IR_FLOORMOD, sub(V(j), I(16)), I(32)), &sc); /* [-16,-1] in one period */
    CHECK(r.lo == 16 && r.hi == 31);
    r = tir_bounds(sub(V(x), V(x)), &sc);
    CHECK(tir_interval_is_point(r, NULL) && r.lo == 0);
    r = tir_bounds(V(x), &sc);
    CHECK(r.lo_inf && r.hi_inf);
    r = tir_bounds(bin(IR_MIN, V(j), I(7)), &sc);
    CHECK(r.lo == 0 && r.hi == 7);
    r = tir_bounds(bin(IR_MAX, V(x), I(3)), &sc);
    CHECK(!r.lo_inf && r.lo == 3 && r.hi_inf);
    r = tir_bounds(mul(V(i), sub(V(j), I(4))), &sc); /* [0,5] * [-4,11] */
    CHECK(r.lo == -20 && r.hi == 55);
    r = tir_bounds(ir_select(&B, bin(IR_LT, V(i), I(3)), V(j), I(100)), &sc);
    CHECK(r.lo == 0 && r.hi == 100);
    r = tir_bounds(ir_cast(&B, SMELT_DT_INT8, add(V(j), I(120))), &sc); /* may wrap */
    CHECK(r.lo == -128 && r.hi == 127);
    r = tir_bounds(ir_cast(&B, SMELT_DT_INT32, V(j)), &sc);
    CHECK(r.lo == 0 && r.hi == 15);
    int64_t shape = 10;
    ir_buffer *u8 = ir_buffer_new(&B, "u8", SMELT_DT_UINT8, 1, &shape, IR_BUF_INPUT);
    ir_expr *i0 = I(0);
    r = tir_bounds(ir_load(&B, u8, 1, &i0), &sc);
    CHECK(r.lo == 0 && r.hi == 255);
    r = tir_bounds(ld1(buf1("f", 4), I(0)), &sc);
    CHECK(r.lo_inf && r.hi_inf);

    /* the prover */
    CHECK(tir_prove(bin(IR_LT, idx, I(100)), &sc) == TIR_TRUE);
    CHECK(tir_prove(bin(IR_LT, idx, I(95)), &sc) == TIR_UNKNOWN);
    CHECK(tir_prove(bin(IR_GT, idx, I(200)), &sc) == TIR_FALSE);
    CHECK(tir_prove(bin(IR_GE, idx, I(0)), &sc) == TIR_TRUE);
    CHECK(tir_prove(bin(IR_LT, V(x), add(V(x), I(1))), &sc) == TIR_TRUE);
    CHECK(tir_prove(bin(IR_EQ, add(V(x), V(i)), add(V(i), V(x))), &sc) == TIR_TRUE);
    CHECK(tir_prove(bin(IR_NE, V(i), I(9)), &sc) == TIR_TRUE);
    CHECK(tir_prove(bin(IR_AND, bin(IR_LT, V(i), I(6)), bin(IR_LT, V(x), I(0))), &sc) == TIR_UNKNOWN);
    CHECK(tir_prove(bin(IR_OR, bin(IR_LT, V(i), I(6)), bin(IR_LT, V(x), I(0))), &sc) == TIR_TRUE);
    CHECK(tir_prove(ir_not(&B, bin(IR_LT, V(i), I(6))), &sc) == TIR_FALSE);
    CHECK(tir_prove(bin(IR_LT, F32(1), F32(2)), NULL) == TIR_TRUE);

    /* scope chaining and shadowing */
    tir_scope inner;
    tir_scope_init(&inner, &sc);
    tir_scope_push_range(&inner, i, 2, 2);
    CHECK(tir_prove(bin(IR_EQ, V(i), I(2)), &inner) == TIR_TRUE);
    CHECK(tir_prove(bin(IR_EQ, V(i), I(2)), &sc) == TIR_UNKNOWN);
    int mark = tir_scope_mark(&inner);
    tir_scope_push_range(&inner, i, 4, 4);
    CHECK(tir_prove(bin(IR_EQ, V(i), I(4)), &inner) == TIR_TRUE);
    tir_scope_pop_to(&inner, mark);
    CHECK(tir_prove(bin(IR_EQ, V(i), I(2)), &inner) == TIR_TRUE);
    tir_scope_fini(&inner);
    tir_scope_fini(&sc);
}

/* ---- expression simplification ---- */

static const char *simp_in(ir_expr *e, const tir_scope *sc) { return E(tir_simplify_expr(&B, e, sc)); }

static void test_simplify_expr(void)
{
    ir_var *i = ivar("i"), *j = ivar("j"), *x = ivar("x"), *y = ivar("y");
    tir_scope sc;
    tir_scope_init(&sc, NULL);
    tir_scope_push_range(&sc, i, 0, 5);
    tir_scope_push_range(&sc, j, 0, 15);
    ir_expr *idx = add(mul(V(i), I(16)), V(j));

    /* floordiv / floormod with ranges */
    CHECK_STR_EQ(simp_in(bin(IR_FLOORDIV, idx, I(16)), &sc), "i");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORMOD, idx, I(16)), &sc), "j");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORDIV, idx, I(16)), NULL), "(i + floordiv(j, 16))");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORMOD, idx, I(16)), NULL), "floormod(j, 16)");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORDIV, V(x), I(1)), NULL), "x");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORMOD, V(x), I(1)), NULL), "0");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORDIV, add(idx, I(35)), I(16)), &sc), "((i + floordiv((j + 3), 16)) + 2)");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORDIV, V(j), I(16)), &sc), "0");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORDIV, add(mul(V(x), I(4)), V(i)), I(8)), NULL),
                 "floordiv(((x * 4) + i), 8)");
    tir_scope s4;
    tir_scope_init(&s4, &sc);
    tir_scope_push_range(&s4, y, 0, 3);
    CHECK_STR_EQ(simp_in(bin(IR_FLOORDIV, add(mul(V(x), I(4)), V(y)), I(8)), &s4), "floordiv(x, 2)");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORMOD, add(mul(V(x), I(4)), V(y)), I(8)), &s4),
                 "((floormod(x, 2) * 4) + y)");
    tir_scope_fini(&s4);
    CHECK_STR_EQ(simp_in(bin(IR_FLOORDIV, bin(IR_FLOORDIV, V(x), I(4)), I(8)), NULL), "floordiv(x, 32)");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORMOD, bin(IR_FLOORMOD, V(x), I(32)), I(8)), NULL), "floormod(x, 8)");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORMOD, add(V(x), I(19)), I(8)), NULL), "floormod((x + 3), 8)");
    /* fuse back what split produced: floordiv(f,16)*16 + floormod(f,16) = f */
    ir_expr *fused = add(mul(bin(IR_FLOORDIV, V(x), I(16)), I(16)), bin(IR_FLOORMOD, V(x), I(16)));
    CHECK_STR_EQ(simp_in(fused, NULL), "x");

    /* affine canonical form */
    ir_expr *messy = add(add(V(j), I(3)), add(sub(mul(V(i), I(2)), I(3)), V(i)));
    CHECK_STR_EQ(simp_in(messy, NULL), "((i * 3) + j)");
    CHECK_STR_EQ(simp_in(sub(add(V(x), V(y)), V(x)), NULL), "y");
    CHECK_STR_EQ(simp_in(sub(I(5), mul(I(2), V(x))), NULL), "(5 - (x * 2))");
    CHECK_STR_EQ(simp_in(sub(V(y), add(V(x), I(1))), NULL), "((y - x) - 1)");
    CHECK_STR_EQ(simp_in(mul(add(V(x), I(1)), I(4)), NULL), "((x * 4) + 4)");
    CHECK_STR_EQ(simp_in(mul(V(y), V(x)), NULL), "(x * y)");
    CHECK_STR_EQ(simp_in(add(mul(V(x), I(0)), V(y)), NULL), "y");

    /* identities are for integers only; float constants fold exactly */
    ir_var *f = ir_var_new(&B, "f", SMELT_DT_FLOAT32);
    ir_expr *fmul1 = mul(V(f), F32(1)), *fadd0 = add(V(f), F32(0)), *fmul0 = mul(V(f), F32(0));
    CHECK(tir_simplify_expr(&B, fmul1, NULL) == fmul1);
    CHECK(tir_simplify_expr(&B, fadd0, NULL) == fadd0);
    CHECK(tir_simplify_expr(&B, fmul0, NULL) == fmul0);
    ir_expr *fsum = tir_simplify_expr(&B, add(F32(0.1), F32(0.2)), NULL);
    CHECK(fsum->kind == IR_FLOAT && fsum->f == (double)(0.1f + 0.2f));
    ir_expr *fdiv0 = bin(IR_DIV, F32(1), F32(0));
    CHECK(tir_simplify_expr(&B, fdiv0, NULL) == fdiv0);

    /* integer folding wraps per dtype; division by zero never folds */
    ir_expr *big = ir_const_int(&B, SMELT_DT_INT32, 2147483647), *one32 = ir_const_int(&B, SMELT_DT_INT32, 1);
    CHECK_STR_EQ(simp_in(add(big, one32), NULL), "-2147483648:i32");
    CHECK_STR_EQ(simp_in(mul(ir_const_int(&B, SMELT_DT_UINT8, 200), ir_const_int(&B, SMELT_DT_UINT8, 2)), NULL),
                 "144:u8");
    ir_expr *div0 = bin(IR_DIV, I(5), I(0)), *fdivz = bin(IR_FLOORDIV, V(x), I(0));
    CHECK(tir_simplify_expr(&B, div0, NULL) == div0);
    CHECK(tir_simplify_expr(&B, fdivz, NULL) == fdivz);
    CHECK_STR_EQ(simp_in(bin(IR_FLOORDIV, I(-7), I(2)), NULL), "-4");
    CHECK_STR_EQ(simp_in(bin(IR_DIV, I(-7), I(2)), NULL), "-3");
    CHECK_STR_EQ(simp_in(bin(IR_FLOORMOD, I(-7), I(2)), NULL), "1");
    CHECK_STR_EQ(simp_in(bin(IR_MOD, I(-7), I(2)), NULL), "-1");
    CHECK_STR_EQ(simp_in(ir_cast(&B, SMELT_DT_INT8, I(300)), NULL), "44:i8");
    CHECK_STR_EQ(simp_in(ir_cast(&B, SMELT_DT_INT64, ir_cast(&B, SMELT_DT_INT32, V(j))), &sc), "j");

    /* min / max / select / comparisons */
    CHECK_STR_EQ(simp_in(bin(IR_MIN, V(x), add(V(x), I(1))), NULL), "x");
    CHECK_STR_EQ(simp_in(bin(IR_MAX, V(j), I(20)), &sc), "20");
    CHECK_STR_EQ(simp_in(bin(IR_MIN, I(4), V(x)), NULL), "min(x, 4)");
    CHECK_STR_EQ(simp_in(bin(IR_MIN, bin(IR_MIN, V(x), I(9)), I(4)), NULL), "min(x, 4)");
    CHECK_STR_EQ(simp_in(ir_select(&B, bin(IR_LT, V(j), I(16)), V(x), V(y)), &sc), "x");
    CHECK_STR_EQ(simp_in(ir_select(&B, bin(IR_LT, V(x), I(16)), V(y), V(y)), NULL), "y");
    CHECK_STR_EQ(simp_in(bin(IR_LE, I(0), sub(V(x), I(1))), NULL), "(x >= 1)");
    CHECK_STR_EQ(simp_in(bin(IR_LT, add(V(x), I(96)), I(100)), NULL), "(x < 4)");
    CHECK_STR_EQ(simp_in(bin(IR_LT, idx, I(100)), &sc), "1:bool");
    CHECK_STR_EQ(simp_in(ir_not(&B, bin(IR_LT, V(x), V(y))), NULL), "(x >= y)");
    CHECK_STR_EQ(simp_in(bin(IR_AND, bin(IR_LT, V(j), I(100)), bin(IR_LT, V(x), I(3))), &sc), "(x < 3)");

    /* canonical input comes back as the same pointer */
    ir_expr *canon = tir_simplify_expr(&B, messy, NULL);
    CHECK(tir_simplify_expr(&B, canon, NULL) == canon);
    ir_expr *already = add(mul(V(i), I(16)), V(j));
    CHECK(tir_simplify_expr(&B, already, NULL) == already);
    ir_expr *cmp = bin(IR_LT, already, I(100));
    CHECK(tir_simplify_expr(&B, cmp, NULL) == cmp);
    ir_expr *fd = bin(IR_FLOORDIV, V(x), I(3));
    CHECK(tir_simplify_expr(&B, fd, NULL) == fd);
    tir_scope_fini(&sc);
}

/* ---- statement simplification ---- */

static void test_simplify_stmt(void)
{
    ir_var *i = ivar("i"), *j = ivar("j"), *t = ivar("t");
    ir_buffer *A = buf1("A", 64), *Bf = buf1("B", 64);

    /* extent-1 loop substituted, extent-0 loop removed, constant let inlined */
    ir_stmt *one = loop(i, 3, 1, IR_FOR_SERIAL, st1(Bf, add(V(i), I(1)), ld1(A, V(i))));
    CHECK_STR_EQ(S(tir_simplify(&B, one)), "B[4] = A[3]\n");
    ir_stmt *zero = loop(i, 0, 0, IR_FOR_SERIAL, st1(Bf, V(i), F32(1)));
    ir_stmt *z = tir_simplify(&B, zero);
    CHECK(tir_stmt_is_empty(z));
    ir_stmt *let = ir_let(&B, t, I(5), st1(Bf, mul(V(t), I(2)), F32(1)));
    CHECK_STR_EQ(S(tir_simplify(&B, let)), "B[10] = 1f\n");

    /* provable ifs go, empty pieces drop out of sequences */
    ir_stmt *items[3] = {
        loop(i, 0, 16, IR_FOR_SERIAL, ir_if(&B, bin(IR_LT, V(i), I(16)), st1(Bf, V(i), F32(1)), NULL)),
        zero,
        loop(j, 0, 4, IR_FOR_SERIAL, ir_if(&B, bin(IR_GE, V(j), I(4)), st1(Bf, V(j), F32(2)), NULL)),
    };
    ir_stmt *seq = ir_seq(&B, 3, items);
    ir_stmt *r = tir_simplify(&B, seq);
    CHECK_STR_EQ(S(r), "for i in [0, +16):\n  B[i] = 1f\n");
    CHECK(tir_simplify(&B, r) == r);

    /* if branches know their condition */
    ir_stmt *guard = loop(i, 0, 16, IR_FOR_SERIAL,
                          ir_if(&B, bin(IR_LT, V(i), I(4)),
                                ir_if(&B, bin(IR_LT, V(i), I(8)), st1(Bf, V(i), F32(1)), NULL),
                                st1(Bf, bin(IR_MAX, V(i), I(4)), F32(2))));
    CHECK_STR_EQ(S(tir_simplify(&B, guard)),
                 "for i in [0, +16):\n  if (i < 4):\n    B[i] = 1f\n  else:\n    B[i] = 2f\n");

    /* a statement needing no change is returned as itself */
    ir_stmt *clean = loop(i, 0, 8, IR_FOR_PARALLEL, st1(Bf, add(mul(V(i), I(8)), I(1)), ld1(A, V(i))));
    CHECK(tir_simplify(&B, clean) == clean);
}

/* ---- interpreter helpers for before/after checks ---- */

#define NBUF 256

/* Run s with A = input pattern and out zeroed, into out[]. */
static bool run_with(const ir_stmt *s, ir_buffer *A, ir_buffer *O, float *out)
{
    static float a[NBUF];
    for (int k = 0; k < NBUF; k++) a[k] = (float)(k % 13) - 4.0f;
    memset(out, 0, sizeof(float) * NBUF);
    smelt_ctx *ctx = smelt_ctx_new();
    tir_interp it;
    tir_interp_init(&it, ctx);
    tir_interp_bind_buffer(&it, A, a, A->rank ? A->shape[0] : 1);
    tir_interp_bind_buffer(&it, O, out, O->rank ? O->shape[0] : 1);
    smelt_status st = tir_interp_run(&it, s);
    if (st != SMELT_OK) fprintf(stderr, "interp: %s\n", smelt_ctx_message(ctx));
    tir_interp_fini(&it);
    smelt_ctx_free(ctx);
    return st == SMELT_OK;
}

static bool same_results(const ir_stmt *before, const ir_stmt *after, ir_buffer *A, ir_buffer *O)
{
    float x[NBUF], y[NBUF];
    if (!run_with(before, A, O, x) || !run_with(after, A, O, y)) return false;
    return memcmp(x, y, sizeof x) == 0;
}

/* ---- loop partitioning ---- */

static void test_partition_split_guard(void)
{
    ir_var *io = ivar("io"), *ii = ivar("ii");
    ir_buffer *A = buf1("A", 100), *O = buf1("B", 100);
    ir_expr *idx = add(mul(V(io), I(16)), V(ii));
    ir_stmt *body = ir_if(&B, bin(IR_LT, idx, I(100)), st1(O, idx, mul(ld1(A, idx), F32(2))), NULL);
    ir_stmt *s = loop(io, 0, 7, IR_FOR_PARALLEL, loop(ii, 0, 16, IR_FOR_VECTORIZED, body));
    ir_stmt *p = tir_partition_loops(&B, s);
    CHECK_STR_EQ(S(p), "parallel for io in [0, +6):\n"
                       "  vectorized for ii in [0, +16):\n"
                       "    B[((io * 16) + ii)] = (A[((io * 16) + ii)] * 2f)\n"
                       "vectorized for ii in [0, +4):\n"
                       "  B[(ii + 96)] = (A[(ii + 96)] * 2f)\n");
    CHECK(same_results(s, p, A, O));
    CHECK(tir_simplify(&B, p) == p);
    CHECK(tir_partition_loops(&B, p) == p);

    /* the guard may name a Let of the fused index */
    ir_var *i = ivar("i");
    ir_stmt *lbody = ir_let(&B, i, idx, ir_if(&B, bin(IR_LT, V(i), I(100)), st1(O, V(i), ld1(A, V(i))), NULL));
    ir_stmt *ls = loop(io, 0, 7, IR_FOR_SERIAL, loop(ii, 0, 16, IR_FOR_SERIAL, lbody));
    ir_stmt *lp = tir_partition_loops(&B, ls);
    CHECK_STR_EQ(S(lp), "for io in [0, +6):\n"
                        "  for ii in [0, +16):\n"
                        "    let i = ((io * 16) + ii)\n"
                        "    B[i] = A[i]\n"
                        "for ii in [0, +4):\n"
                        "  let i = (ii + 96)\n"
                        "  B[i] = A[i]\n");
    CHECK(same_results(ls, lp, A, O));

    /* divisible split: nothing to do, same pointer */
    ir_stmt *even = loop(io, 0, 6, IR_FOR_SERIAL, loop(ii, 0, 16, IR_FOR_SERIAL, body));
    ir_stmt *pe = tir_partition_loops(&B, even);
    CHECK(pe == even);
}

static void test_partition_padding(void)
{
    /* 1-D convolution with padding 1: out[o] += select(in bounds, A[o+k-1], 0) */
    ir_var *o = ivar("o"), *k = ivar("k");
    ir_buffer *A = buf1("A", 8), *O = buf1("B", 8);
    ir_expr *pos = sub(add(V(o), V(k)), I(1));
    ir_expr *inb = bin(IR_AND, bin(IR_LE, I(0), pos), bin(IR_LT, pos, I(8)));
    ir_expr *clamped = bin(IR_MIN, bin(IR_MAX, pos, I(0)), I(7));
    ir_expr *val = add(ld1(O, V(o)), ir_select(&B, inb, ld1(A, clamped), F32(0)));
    ir_stmt *s = loop(o, 0, 8, IR_FOR_SERIAL, loop(k, 0, 3, IR_FOR_UNROLLED, st1(O, V(o), val)));
    ir_stmt *p = tir_partition_loops(&B, s);
    CHECK_STR_EQ(S(p), "unrolled for k in [0, +3):\n"
                       "  B[0] = (B[0] + select((k >= 1), A[max((k - 1), 0)], 0f))\n"
                       "for o in [1, +6):\n"
                       "  unrolled for k in [0, +3):\n"
                       "    B[o] = (B[o] + A[((o + k) - 1)])\n"
                       "unrolled for k in [0, +3):\n"
                       "  B[7] = (B[7] + select((k < 2), A[min((k + 6), 7)], 0f))\n");
    CHECK(same_results(s, p, A, O));

    /* 2-D: only the main region is free of checks, copies stay few */
    ir_var *h = ivar("h"), *w = ivar("w"), *kh = ivar("kh"), *kw = ivar("kw");
    int64_t shp[2] = {6, 6};
    ir_buffer *X = ir_buffer_new(&B, "X", SMELT_DT_FLOAT32, 2, shp, IR_BUF_INPUT);
    ir_buffer *Y = ir_buffer_new(&B, "Y", SMELT_DT_FLOAT32, 2, shp, IR_BUF_OUTPUT);
    ir_expr *ph = sub(add(V(h), V(kh)), I(1)), *pw = sub(add(V(w), V(kw)), I(1));
    ir_expr *cond = bin(IR_AND, bin(IR_AND, bin(IR_GE, ph, I(0)), bin(IR_LT, ph, I(6))),
                        bin(IR_AND, bin(IR_GE, pw, I(0)), bin(IR_LT, pw, I(6))));
    ir_expr *xi[2] = {bin(IR_MIN, bin(IR_MAX, ph, I(0)), I(5)), bin(IR_MIN, bin(IR_MAX, pw, I(0)), I(5))};
    ir_expr *yi[2] = {V(h), V(w)};
    ir_expr *v2 = add(ir_load(&B, Y, 2, yi), ir_select(&B, cond, ir_load(&B, X, 2, xi), F32(0)));
    ir_stmt *conv = loop(h, 0, 6, IR_FOR_PARALLEL,
                         loop(w, 0, 6, IR_FOR_SERIAL,
                              loop(kh, 0, 3, IR_FOR_SERIAL, loop(kw, 0, 3, IR_FOR_SERIAL, ir_store(&B, Y, 2, yi, v2)))));
    ir_stmt *pc = tir_partition_loops(&B, conv);
    const char *txt = S(pc);
    CHECK_STR_CONTAINS(txt, "parallel for h in [1, +4):\n");
    CHECK_STR_CONTAINS(txt, "\n  for w in [1, +4):\n"
                            "    for kh in [0, +3):\n      for kw in [0, +3):\n"
                            "        Y[h, w] = (Y[h, w] + X[((h + kh) - 1), ((w + kw) - 1)])\n");
    int selects = 0;
    for (const char *q = txt; (q = strstr(q, "select(")); q++) selects++;
    CHECK(selects == 4); /* border rows and columns keep a check */
    /* same results: flatten both and run */
    ir_stmt *fa = tir_flatten_storage(&B, conv), *fb = tir_flatten_storage(&B, pc);
    float xs[36], y1[36], y2[36];
    for (int q = 0; q < 36; q++) xs[q] = (float)(q * 7 % 11);
    for (int pass = 0; pass < 2; pass++) {
        float *yo = pass ? y2 : y1;
        memset(yo, 0, sizeof y1);
        smelt_ctx *ctx = smelt_ctx_new();
        tir_interp it;
        tir_interp_init(&it, ctx);
        tir_interp_bind_buffer(&it, X, xs, 36);
        tir_interp_bind_buffer(&it, Y, yo, 36);
        CHECK(tir_interp_run(&it, pass ? fb : fa) == SMELT_OK);
        tir_interp_fini(&it);
        smelt_ctx_free(ctx);
    }
    CHECK(memcmp(y1, y2, sizeof y1) == 0);
}

/* ---- storage flattening ---- */

static void test_flatten(void)
{
    ir_var *n = ivar("n"), *c = ivar("c"), *h = ivar("h"), *w = ivar("w");
    int64_t shape[4] = {2, 3, 4, 5};
    ir_buffer *A = ir_buffer_new(&B, "A", SMELT_DT_FLOAT32, 4, shape, IR_BUF_INPUT);
    ir_buffer *O = ir_buffer_new(&B, "O", SMELT_DT_FLOAT32, 4, shape, IR_BUF_OUTPUT);
    ir_buffer *S0 = ir_buffer_new(&B, "s", SMELT_DT_FLOAT32, 0, shape, IR_BUF_TEMP);
    ir_expr *ai[4] = {V(n), V(c), V(h), V(w)};
    ir_expr *oi[4] = {V(n), V(c), bin(IR_FLOORDIV, add(V(h), I(4)), I(2)), V(w)};
    ir_stmt *st = ir_store(&B, O, 4, oi, add(ir_load(&B, A, 4, ai), ir_load(&B, S0, 0, NULL)));
    ir_stmt *s = loop(n, 0, 2, IR_FOR_SERIAL,
                      loop(c, 0, 3, IR_FOR_SERIAL, loop(h, 0, 4, IR_FOR_SERIAL, loop(w, 0, 5, IR_FOR_SERIAL, st))));
    ir_stmt *f = tir_flatten_storage(&B, ir_allocate(&B, S0, s));
    CHECK_STR_CONTAINS(S(f), "O[(((((n * 60) + (c * 20)) + (floordiv(h, 2) * 5)) + w) + 10)] = "
                             "(A[((((n * 60) + (c * 20)) + (h * 5)) + w)] + s[0])");
    CHECK(tir_flatten_storage(&B, f) == f);
    ir_stmt *flat = loop(n, 0, 4, IR_FOR_SERIAL, st1(buf1("F", 4), V(n), F32(0)));
    CHECK(tir_flatten_storage(&B, flat) == flat);
}

/* ---- vectorize legality ---- */

static void test_vectorize(void)
{
    ir_var *i = ivar("i"), *t = ivar("t"), *j = ivar("j");
    ir_buffer *A = buf1("A", 64), *O = buf1("B", 64);
    ir_stmt *good = loop(i, 0, 16, IR_FOR_VECTORIZED, st1(O, V(i), add(ld1(O, V(i)), ld1(A, mul(V(i), I(2))))));
    CHECK(tir_can_vectorize(good));
    CHECK(tir_legalize_vectorize(&B, good) == good);
    ir_stmt *reduce = loop(i, 0, 16, IR_FOR_VECTORIZED, st1(O, I(0), add(ld1(O, I(0)), ld1(A, V(i)))));
    CHECK(!tir_can_vectorize(reduce));
    ir_stmt *shift = loop(i, 0, 16, IR_FOR_VECTORIZED, st1(O, V(i), ld1(O, add(V(i), I(1)))));
    CHECK(!tir_can_vectorize(shift));
    ir_stmt *strided = loop(i, 0, 16, IR_FOR_VECTORIZED, st1(O, mul(V(i), I(2)), F32(1)));
    CHECK(!tir_can_vectorize(strided));
    ir_stmt *let = loop(i, 0, 16, IR_FOR_VECTORIZED, ir_let(&B, t, V(i), st1(O, add(V(i), V(t)), F32(1))));
    CHECK(!tir_can_vectorize(let));
    ir_stmt *nested = loop(i, 0, 4, IR_FOR_VECTORIZED, loop(j, 0, 4, IR_FOR_SERIAL, st1(O, V(i), F32(1))));
    CHECK(!tir_can_vectorize(nested));
    ir_stmt *fixed = tir_legalize_vectorize(&B, reduce);
    CHECK_STR_EQ(S(fixed), "for i in [0, +16):\n  B[0] = (B[0] + A[i])\n");
    int64_t shp[2] = {4, 8};
    ir_buffer *M = ir_buffer_new(&B, "M", SMELT_DT_FLOAT32, 2, shp, IR_BUF_OUTPUT);
    ir_expr *row[2] = {V(j), V(i)}, *col[2] = {V(i), V(j)};
    CHECK(tir_can_vectorize(loop(i, 0, 8, IR_FOR_VECTORIZED, ir_store(&B, M, 2, row, F32(1)))));
    CHECK(!tir_can_vectorize(loop(i, 0, 4, IR_FOR_VECTORIZED, ir_store(&B, M, 2, col, F32(1)))));
}

/* ---- interpreter ---- */

static void test_interp(void)
{
    ir_var *i = ivar("i"), *r = ivar("r");
    ir_buffer *A = buf1("A", 8), *O = buf1("B", 8);
    int64_t one = 1;
    ir_buffer *acc = ir_buffer_new(&B, "acc", SMELT_DT_FLOAT32, 1, &one, IR_BUF_TEMP);
    ir_axis ax = {r, 4, NULL};
    ir_expr *sum = ir_reduce(&B, IR_REDUCE_SUM, ld1(A, add(V(i), V(r))), 1, &ax);
    ir_stmt *body = ir_allocate(&B, acc, ir_seq2(&B, st1(acc, I(0), sum), st1(O, V(i), ld1(acc, I(0)))));
    ir_stmt *s = loop(i, 0, 5, IR_FOR_SERIAL, body);
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
    smelt_ctx *ctx = smelt_ctx_new();
    tir_interp it;
    tir_interp_init(&it, ctx);
    tir_interp_bind_buffer(&it, A, a, 8);
    tir_interp_bind_buffer(&it, O, out, 8);
    CHECK(tir_interp_run(&it, s) == SMELT_OK);
    CHECK(out[0] == 10 && out[4] == 26 && out[5] == 0);
    /* out-of-range access is an error, not a crash */
    ir_stmt *bad = loop(i, 0, 9, IR_FOR_SERIAL, st1(O, V(i), F32(1)));
    CHECK(tir_interp_run(&it, bad) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "out of range");
    smelt_ctx_clear(ctx);
    tir_value v;
    CHECK(tir_interp_eval(&it, bin(IR_FLOORDIV, I(3), I(0)), &v) == SMELT_ERR_RUNTIME);
    smelt_ctx_clear(ctx);
    CHECK(tir_interp_eval(&it, add(ir_const_int(&B, SMELT_DT_INT8, 127), ir_const_int(&B, SMELT_DT_INT8, 1)), &v) ==
          SMELT_OK);
    CHECK(v.i == -128);
    tir_interp_fini(&it);
    smelt_ctx_free(ctx);
}

/* ---- the whole pass sequence on a lowered-looking nest ---- */

static void test_pipeline(void)
{
    /* C[i, j] = A[i, j] + Bv[j], j split by 8 (37 = 4*8 + 5), inner vectorized */
    ir_var *i = ivar("i"), *jo = ivar("jo"), *ji = ivar("ji");
    int64_t shp[2] = {5, 37}, n = 37;
    ir_buffer *A = ir_buffer_new(&B, "A", SMELT_DT_FLOAT32, 2, shp, IR_BUF_INPUT);
    ir_buffer *Bv = ir_buffer_new(&B, "Bv", SMELT_DT_FLOAT32, 1, &n, IR_BUF_INPUT);
    ir_buffer *C = ir_buffer_new(&B, "C", SMELT_DT_FLOAT32, 2, shp, IR_BUF_OUTPUT);
    ir_expr *j = add(mul(V(jo), I(8)), V(ji));
    ir_expr *ix[2] = {V(i), j};
    ir_stmt *store = ir_store(&B, C, 2, ix, add(ir_load(&B, A, 2, ix), ld1(Bv, j)));
    ir_stmt *s = loop(i, 0, 5, IR_FOR_PARALLEL,
                      loop(jo, 0, 5, IR_FOR_SERIAL,
                           loop(ji, 0, 8, IR_FOR_VECTORIZED, ir_if(&B, bin(IR_LT, j, I(37)), store, NULL))));
    ir_stmt *r = tir_simplify(&B, s);
    r = tir_partition_loops(&B, r);
    r = tir_flatten_storage(&B, r);
    r = tir_legalize_vectorize(&B, r);
    r = tir_simplify(&B, r);
    CHECK_STR_EQ(S(r), "parallel for i in [0, +5):\n"
                       "  for jo in [0, +4):\n"
                       "    vectorized for ji in [0, +8):\n"
                       "      C[(((i * 37) + (jo * 8)) + ji)] = (A[(((i * 37) + (jo * 8)) + ji)] + Bv[((jo * 8) + ji)])\n"
                       "  vectorized for ji in [0, +5):\n"
                       "    C[(((i * 37) + ji) + 32)] = (A[(((i * 37) + ji) + 32)] + Bv[(ji + 32)])\n");
    float a[185], bv[37], c1[185], c2[185];
    for (int k = 0; k < 185; k++) a[k] = (float)k * 0.5f;
    for (int k = 0; k < 37; k++) bv[k] = (float)(k % 5);
    for (int pass = 0; pass < 2; pass++) {
        float *c = pass ? c2 : c1;
        memset(c, 0, sizeof c1);
        smelt_ctx *ctx = smelt_ctx_new();
        tir_interp it;
        tir_interp_init(&it, ctx);
        tir_interp_bind_buffer(&it, A, a, 185);
        tir_interp_bind_buffer(&it, Bv, bv, 37);
        tir_interp_bind_buffer(&it, C, c, 185);
        CHECK(tir_interp_run(&it, pass ? r : s) == SMELT_OK);
        tir_interp_fini(&it);
        smelt_ctx_free(ctx);
    }
    CHECK(memcmp(c1, c2, sizeof c1) == 0 && c1[184] == 92.0f + 1.0f);
}

/* ---- randomized: simplify must preserve values ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static int rnd(int n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (int)(rng_state % (uint64_t)n);
}

static ir_var *RV[3];
static int64_t RLO[3], RHI[3];

static ir_expr *rand_cond(int depth);

static ir_expr *rand_expr(int depth)
{
    if (depth <= 0 || rnd(5) == 0) return rnd(3) ? V(RV[rnd(3)]) : I(rnd(21) - 10);
    ir_expr *a = rand_expr(depth - 1);
    switch (rnd(11)) {
    case 0: return add(a, rand_expr(depth - 1));
    case 1: return sub(a, rand_expr(depth - 1));
    case 2: return mul(a, I(rnd(9) - 4));
    case 3: return rnd(4) ? mul(I(rnd(7) + 1), a) : mul(a, rand_expr(depth - 2));
    case 4: return bin(IR_FLOORDIV, a, I(rnd(8) + 1));
    case 5: return bin(IR_FLOORMOD, a, I(rnd(8) + 1));
    case 6: return bin(IR_MIN, a, rand_expr(depth - 1));
    case 7: return bin(IR_MAX, a, rand_expr(depth - 1));
    case 8: return ir_select(&B, rand_cond(depth - 1), a, rand_expr(depth - 1));
    case 9: return add(mul(bin(IR_FLOORDIV, a, I(4)), I(4)), bin(IR_FLOORMOD, a, I(4)));
    default: return rnd(2) ? bin(IR_DIV, a, I(rnd(5) + 1)) : bin(IR_MOD, a, I(rnd(5) + 1));
    }
}

static ir_expr *rand_cond(int depth)
{
    static const ir_kind cmps[] = {IR_LT, IR_LE, IR_GT, IR_GE, IR_EQ, IR_NE};
    int k = rnd(8);
    if (k == 6 && depth > 0) return bin(IR_AND, rand_cond(depth - 1), rand_cond(depth - 1));
    if (k == 7 && depth > 0) return ir_not(&B, rand_cond(depth - 1));
    return bin(cmps[rnd(6)], rand_expr(depth), rand_expr(depth));
}

static bool eval_at(tir_interp *it, const ir_expr *e, const int64_t *pt, int64_t *out)
{
    it->n_vars = 0;
    for (int v = 0; v < 3; v++) tir_interp_set_var(it, RV[v], tir_value_int(SMELT_DT_INT64, pt[v]));
    tir_value r;
    if (tir_interp_eval(it, e, &r) != SMELT_OK) return false;
    *out = r.i;
    return true;
}

/* Evaluate e and s on every point; returns false on the first mismatch. */
static bool agree_everywhere(tir_interp *it, const ir_expr *e, const ir_expr *s, tir_interval *bounds)
{
    int64_t pt[3];
    for (pt[0] = RLO[0]; pt[0] <= RHI[0]; pt[0]++)
        for (pt[1] = RLO[1]; pt[1] <= RHI[1]; pt[1]++)
            for (pt[2] = RLO[2]; pt[2] <= RHI[2]; pt[2]++) {
                int64_t a, b;
                if (!eval_at(it, e, pt, &a) || !eval_at(it, s, pt, &b) || a != b) return false;
                if ((!bounds->lo_inf && a < bounds->lo) || (!bounds->hi_inf && a > bounds->hi)) return false;
            }
    return true;
}

static void test_random_simplify(void)
{
    RV[0] = ivar("x");
    RV[1] = ivar("y");
    RV[2] = ivar("z");
    smelt_ctx *ctx = smelt_ctx_new();
    tir_interp it;
    tir_interp_init(&it, ctx);
    int bad = 0, changed = 0;
    for (int iter = 0; iter < 8000 && bad < 5; iter++) {
        tir_scope sc;
        tir_scope_init(&sc, NULL);
        for (int v = 0; v < 3; v++) {
            RLO[v] = rnd(12) - 6;
            RHI[v] = RLO[v] + rnd(9);
            tir_scope_push_range(&sc, RV[v], RLO[v], RHI[v]);
        }
        ir_expr *e = rnd(6) ? rand_expr(4) : ir_cast(&B, SMELT_DT_INT64, rand_cond(3));
        ir_expr *s = tir_simplify_expr(&B, e, &sc);
        tir_interval bounds = tir_bounds(e, &sc);
        changed += s != e;
        if (!s || !agree_everywhere(&it, e, s, &bounds)) {
            bad++;
            fprintf(stderr, "random simplify mismatch (x in [%lld,%lld], y in [%lld,%lld], z in [%lld,%lld]):\n"
                            "  %s\n  -> %s\n",
                    (long long)RLO[0], (long long)RHI[0], (long long)RLO[1], (long long)RHI[1],
                    (long long)RLO[2], (long long)RHI[2], E(e), s ? E(s) : "(null)");
        }
        /* the prover must never claim what some point contradicts */
        ir_expr *c = rand_cond(2);
        tir_truth t = tir_prove(c, &sc);
        tir_interval any = tir_interval_everything();
        if (t != TIR_UNKNOWN) {
            ir_expr *fixed = ir_cast(&B, SMELT_DT_INT64, ir_const_int(&B, SMELT_DT_BOOL, t == TIR_TRUE));
            if (!agree_everywhere(&it, ir_cast(&B, SMELT_DT_INT64, c), fixed, &any)) {
                bad++;
                fprintf(stderr, "prover wrong: %s is %s\n", E(c), t == TIR_TRUE ? "true" : "false");
            }
        }
        ir_expr *s2 = s ? tir_simplify_expr(&B, s, &sc) : NULL;
        if (s && s2 != s) {
            bad++;
            fprintf(stderr, "simplify not idempotent:\n  %s\n  -> %s\n  -> %s\n", E(e), E(s), E(s2));
        }
        tir_scope_fini(&sc);
    }
    CHECK(bad == 0);
    CHECK(changed > 2500);
    tir_interp_fini(&it);
    smelt_ctx_free(ctx);
}

/* Randomized pass sequence: random affine guards (ifs with else, selects,
 * lets, negations) in 3-deep nests; every pass must keep the results. */
static ir_expr *rand_affine(ir_var *const *vars, int n)
{
    ir_expr *e = I(rnd(9) - 4);
    for (int k = 0; k < n; k++)
        if (rnd(3)) e = add(e, mul(V(vars[k]), I(rnd(7) - 3)));
    return e;
}

static ir_expr *rand_guard(ir_var *const *vars, int n)
{
    static const ir_kind cmps[] = {IR_LT, IR_LE, IR_GT, IR_GE};
    ir_expr *c = bin(cmps[rnd(4)], rand_affine(vars, n), I(rnd(13) - 4));
    if (rnd(3) == 0) c = bin(IR_AND, c, bin(cmps[rnd(4)], rand_affine(vars, n), I(rnd(13) - 4)));
    if (rnd(5) == 0) c = ir_not(&B, c);
    return c;
}

static ir_stmt *rand_nest(ir_buffer *A, ir_buffer *O, ir_var **vars, int64_t *ext)
{
    ir_expr *slot = add(add(mul(V(vars[0]), I(ext[1] * ext[2])), mul(V(vars[1]), I(ext[2]))), V(vars[2]));
    ir_expr *val = add(ld1(A, slot), F32(1));
    if (rnd(2)) val = ir_select(&B, rand_guard(vars, 3), val, F32(-1));
    ir_stmt *body = st1(O, slot, val);
    if (rnd(2)) body = ir_if(&B, rand_guard(vars, 3), body, rnd(2) ? st1(O, slot, F32(7)) : NULL);
    if (rnd(3) == 0) { /* a let of a fused index used by the guard */
        ir_var *t = ivar("t");
        body = ir_let(&B, t, add(mul(V(vars[1]), I(ext[2])), V(vars[2])),
                      ir_if(&B, bin(IR_LT, V(t), I(rnd(20))), body, NULL));
    }
    ir_stmt *s = body;
    for (int k = 2; k >= 0; k--) s = loop(vars[k], 0, ext[k], (ir_for_kind)rnd(4), s);
    return s;
}

static void test_random_passes(void)
{
    ir_buffer *A = buf1("A", NBUF), *O = buf1("B", NBUF);
    int bad = 0, split = 0;
    for (int iter = 0; iter < 1000 && bad < 3; iter++) {
        ir_var *vars[3] = {ivar("o"), ivar("m"), ivar("i")};
        int64_t ext[3] = {rnd(5) + 1, rnd(5) + 2, rnd(6) + 2};
        ir_stmt *s = rand_nest(A, O, vars, ext);
        ir_stmt *r = tir_simplify(&B, s), *p = r ? tir_partition_loops(&B, r) : NULL;
        split += p != r;
        ir_stmt *f = p ? tir_flatten_storage(&B, p) : NULL;
        f = f ? tir_legalize_vectorize(&B, f) : NULL;
        f = f ? tir_simplify(&B, f) : NULL;
        if (!r || !p || !f || !same_results(s, r, A, O) || !same_results(s, p, A, O) ||
            !same_results(s, f, A, O)) {
            bad++;
            fprintf(stderr, "random passes mismatch:\n%s->\n%s", S(s), f ? S(f) : "(null)\n");
        }
        if (f && tir_simplify(&B, f) != f) {
            bad++;
            fprintf(stderr, "simplify not idempotent on:\n%s", S(f));
        }
    }
    CHECK(bad == 0);
    CHECK(split > 100);
}

int main(void)
{
    smelt_arena_init(&ARENA);
    ir_builder_init(&B, &ARENA);
    const char *seed = getenv("SMELT_TEST_SEED"); /* reproduce or explore random cases */
    if (seed && strtoull(seed, NULL, 0)) rng_state = strtoull(seed, NULL, 0);
    test_bounds();
    test_simplify_expr();
    test_simplify_stmt();
    test_partition_split_guard();
    test_partition_padding();
    test_flatten();
    test_vectorize();
    test_interp();
    test_pipeline();
    test_random_simplify();
    test_random_passes();
    CHECK(!B.failed);
    smelt_arena_fini(&ARENA);
    TEST_MAIN_END();
}
