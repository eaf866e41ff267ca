/* The compiled form of RNN, GRU and LSTM (see rnn.c for the semantics).
 *
 * A recurrence is not a tensor expression (step t reads step t-1's
 * result), so the op builds one extern stage (te.h) whose statement is
 *
 *   per direction d:
 *     Wt = W[d]^T, Rt = R[d]^T               (contiguous B panels; smelt.transpose_f32)
 *     XW = bias + X Wt                        products over blocks of the T*N rows, in parallel
 *     h, c = initial state                    (buffers of their own)
 *     for s in 0..T-1 (serial):
 *       G[b] = XW[row(b, step)] + Rb          (0 past the sequence's end)
 *       G += h Rt                             the recurrent product
 *       per b inside its sequence, per j (vectorised): the gates and the
 *         state update, fused (no gate buffers) -> c, h, S[d, s] = h
 *       per b past its end: S[d, s] = h       (the state stays)
 *     LSTM: S[d, T] = c
 *
 * writing the history S [D, T (+1 for LSTM), N, H] of h.  In the fused
 * loop every buffer is read and written at one index (the vectoriser's
 * rule), so h and c have their own buffers apart from S; the products are
 * smelt.gemm_f32 calls for float32 (plain loops for other types).  Y, Y_h
 * and Y_c are te computes gathering from S.  Compile time and code size do
 * not depend on T (one loop), memory is O(T) (XW and S). */
#include <string.h>

#include "ops/rnn.h"
#include "te/te.h"

typedef struct rnn_te {
    const op_rnn_attrs *a;
    rnn_dims rd;
    const te_tensor *in[IN_P + 1];
    int64_t states;
    smelt_dtype dt;
    /* W and R of all directions transposed at compile time ([D, K, G*H],
     * te constants) when they are float32 graph constants, else NULL */
    const te_tensor *w_t, *r_t;
} rnn_te;

/* ---- small builders ---- */

static ir_expr *fc(ir_builder *b, smelt_dtype dt, double v) { return ir_const_float(b, dt, v); }
static ir_expr *iv(ir_builder *b, ir_var *v) { return ir_var_ref(b, v); }
static ir_expr *ii(ir_builder *b, int64_t v) { return ir_int(b, v); }

static ir_expr *load(ir_builder *b, ir_buffer *buf, int n, ir_expr *i0, ir_expr *i1, ir_expr *i2,
                     ir_expr *i3, ir_expr *i4)
{
    ir_expr *idx[5] = {i0, i1, i2, i3, i4};
    return ir_load(b, buf, n, idx);
}

static ir_stmt *store(ir_builder *b, ir_buffer *buf, int n, ir_expr *const *idx, ir_expr *v)
{
    return ir_store(b, buf, n, idx, v);
}

static ir_stmt *loop(ir_builder *b, ir_var *v, int64_t extent, ir_stmt *body)
{
    return ir_for(b, v, ii(b, 0), ii(b, extent), IR_FOR_SERIAL, body);
}

static ir_expr *call1(ir_builder *b, ir_call_op op, ir_expr *x)
{
    return ir_call(b, op, x->dtype, 1, &x);
}

/* The activation on x (a variable reference: forms that read it twice stay cheap). */
static ir_expr *act_expr(ir_builder *b, const rnn_act *a, ir_expr *x)
{
    smelt_dtype dt = x->dtype;
    ir_expr *zero = fc(b, dt, 0.0), *al = fc(b, dt, a->alpha), *be = fc(b, dt, a->beta);
    switch (a->kind) {
    case RNN_ACT_SIGMOID: return call1(b, IR_CALL_SIGMOID, x);
    case RNN_ACT_TANH: return call1(b, IR_CALL_TANH, x);
    case RNN_ACT_RELU: return ir_binary(b, IR_MAX, x, zero);
    case RNN_ACT_HARD_SIGMOID:
        return ir_binary(b, IR_MAX, zero,
                         ir_binary(b, IR_MIN, fc(b, dt, 1.0), ir_add(b, ir_mul(b, al, x), be)));
    case RNN_ACT_AFFINE: return ir_add(b, ir_mul(b, al, x), be);
    case RNN_ACT_LEAKY_RELU: return ir_select(b, ir_binary(b, IR_LT, x, zero), ir_mul(b, al, x), x);
    case RNN_ACT_THRESHOLDED_RELU: return ir_select(b, ir_binary(b, IR_GT, x, al), x, zero);
    case RNN_ACT_SCALED_TANH: return ir_mul(b, al, call1(b, IR_CALL_TANH, ir_mul(b, be, x)));
    case RNN_ACT_ELU:
        return ir_select(b, ir_binary(b, IR_LT, x, zero),
                         ir_mul(b, al, ir_sub(b, call1(b, IR_CALL_EXP, x), fc(b, dt, 1.0))), x);
    case RNN_ACT_SOFTSIGN:
        return ir_binary(b, IR_DIV, x, ir_add(b, fc(b, dt, 1.0), call1(b, IR_CALL_ABS, x)));
    case RNN_ACT_SOFTPLUS: { /* max(x, 0) + log(1 + exp(-|x|)): no overflow */
        ir_expr *e = call1(b, IR_CALL_EXP, ir_mul(b, call1(b, IR_CALL_ABS, x), fc(b, dt, -1.0)));
        return ir_add(b, ir_binary(b, IR_MAX, x, zero),
                      call1(b, IR_CALL_LOG, ir_add(b, fc(b, dt, 1.0), e)));
    }
    }
    return x;
}

/* ---- the pieces of the statement ---- */

typedef struct rnn_build {
    const rnn_te *r;
    ir_builder *b;
    ir_buffer *S, *wt, *rt, *xw, *gates, *rh, *cur_h, *cur_c;
    ir_expr *wt_off, *rt_off; /* this direction's panel in wt / rt */
    ir_expr *d;        /* the direction (a constant: each has its own loops) */
    const rnn_act *act; /* its activations */
    ir_var *s;         /* the step */
    ir_var *bv, *jv;   /* batch entry and hidden unit of the fused loop */
    ir_expr *len;      /* sequence length of batch entry bv */
    ir_expr *row;      /* row of XW for (bv, this step) */
    /* h's rows this step reads and writes: 0 and 0, or with the units split
     * over tasks (split_units) the two halves of a double buffer, so no task
     * writes the h another still reads */
    ir_expr *h_rd, *h_wr;
    ir_expr *j0, *units; /* the task's hidden units [j0, j0 + units) */
    bool split_units;    /* each step's work split over two tasks by hidden unit */
} rnn_build;

/* C[M x N] (row stride ldc) += A[M x K] (row stride lda) B[K x N] (row
 * stride ldb), each given as a buffer and a flat offset. */
typedef struct gemm_args {
    ir_buffer *c, *a, *bm;
    ir_expr *c_off, *a_off, *b_off;
    int64_t m, n, k, ldc, lda, ldb;
    ir_expr *m_expr; /* float32: M as an expression (a block's rows), else m */
} gemm_args;

static ir_stmt *gemm_loops(ir_builder *b, const gemm_args *g)
{
    ir_var *i = ir_var_new(b, "gi", SMELT_DT_INT64), *j = ir_var_new(b, "gj", SMELT_DT_INT64);
    ir_var *k = ir_var_new(b, "gk", SMELT_DT_INT64);
    ir_expr *ci = ir_add(b, g->c_off, ir_add(b, ir_mul(b, iv(b, i), ii(b, g->ldc)), iv(b, j)));
    ir_expr *ai = ir_add(b, g->a_off, ir_add(b, ir_mul(b, iv(b, i), ii(b, g->lda)), iv(b, k)));
    ir_expr *bi = ir_add(b, g->b_off, ir_add(b, ir_mul(b, iv(b, k), ii(b, g->ldb)), iv(b, j)));
    ir_expr *prod = ir_mul(b, ir_load(b, g->a, 1, &ai), ir_load(b, g->bm, 1, &bi));
    ir_stmt *upd = ir_store(b, g->c, 1, &ci, ir_add(b, ir_load(b, g->c, 1, &ci), prod));
    return loop(b, i, g->m, loop(b, j, g->n, loop(b, k, g->k, upd)));
}

/* The micro-kernel for float32 (flat indices), loops for other types. */
static ir_stmt *gemm(ir_builder *b, const gemm_args *g)
{
    if (g->c->dtype != SMELT_DT_FLOAT32) return gemm_loops(b, g);
    ir_call_arg args[11] = {
        {g->c, g->c_off}, {g->a, g->a_off}, {g->bm, g->b_off},
        {NULL, g->m_expr ? g->m_expr : ii(b, g->m)}, {NULL, ii(b, g->n)}, {NULL, ii(b, g->k)},
        {NULL, ii(b, g->ldc)}, {NULL, ii(b, g->lda)}, {NULL, ii(b, 1)},
        {NULL, ii(b, g->ldb)}, {NULL, ii(b, 1)},
    };
    return ir_call_stmt(b, "smelt.gemm_f32", 11, args);
}

/* dst[k, g] = src[d, g, k]: W[d] or R[d] transposed; float32 through the
 * smelt.transpose_f32 micro-kernel (tiles transposed in registers). */
static ir_stmt *transpose(rnn_build *rb, ir_buffer *dst, const te_tensor *src)
{
    ir_builder *b = rb->b;
    int64_t rows = dst->shape[0], cols = dst->shape[1]; /* k, g */
    if (dst->dtype == SMELT_DT_FLOAT32) { /* dst[k*cols + g] = src[d*cols*rows + k + g*rows] */
        ir_expr *off = ir_mul(b, rb->d, ii(b, rows * cols));
        ir_call_arg args[6] = {{dst, ii(b, 0)}, {src->buf, off}, {NULL, ii(b, rows)},
                               {NULL, ii(b, cols)}, {NULL, ii(b, cols)}, {NULL, ii(b, rows)}};
        return ir_call_stmt(b, "smelt.transpose_f32", 6, args);
    }
    ir_var *k = ir_var_new(b, "tk", SMELT_DT_INT64), *g = ir_var_new(b, "tg", SMELT_DT_INT64);
    ir_expr *idx[2] = {iv(b, k), iv(b, g)};
    ir_expr *v = load(b, src->buf, 3, rb->d, iv(b, g), iv(b, k), NULL, NULL);
    return loop(b, k, rows, loop(b, g, cols, store(b, dst, 2, idx, v)));
}

/* B[d, off + g], or 0 without B. */
static ir_expr *bias(rnn_build *rb, int64_t off, ir_expr *g)
{
    const te_tensor *bt = rb->r->in[IN_B];
    if (!bt) return fc(rb->b, rb->r->dt, 0.0);
    return load(rb->b, bt->buf, 2, rb->d, ir_add(rb->b, ii(rb->b, off), g), NULL, NULL, NULL);
}

/* Rows of the input projection per parallel task. */
#define RNN_PROJ_ROWS 32

/* XW = Wb + X Wt over all T*N rows (in X's own row order); float32 in
 * parallel blocks of RNN_PROJ_ROWS rows (each bias rows + one product). */
static ir_stmt *input_projection(rnn_build *rb)
{
    ir_builder *b = rb->b;
    const rnn_dims *rd = &rb->r->rd;
    int64_t rows = rd->steps * rd->batch, gh = rd->gates * rd->hidden;
    int64_t blocks = (rows + RNN_PROJ_ROWS - 1) / RNN_PROJ_ROWS;
    bool par = rb->r->dt == SMELT_DT_FLOAT32 && blocks >= 2;
    ir_var *blk = ir_var_new(b, "pb", SMELT_DT_INT64);
    ir_expr *r0 = par ? ir_mul(b, iv(b, blk), ii(b, RNN_PROJ_ROWS)) : ii(b, 0);
    ir_expr *m = par ? ir_binary(b, IR_MIN, ii(b, RNN_PROJ_ROWS), ir_sub(b, ii(b, rows), r0)) : ii(b, rows);
    ir_var *i = ir_var_new(b, "xr", SMELT_DT_INT64), *g = ir_var_new(b, "xg", SMELT_DT_INT64);
    ir_expr *idx[2] = {ir_add(b, r0, iv(b, i)), iv(b, g)};
    ir_stmt *bias_rows = ir_for(b, i, ii(b, 0), m, IR_FOR_SERIAL,
                                ir_for(b, g, ii(b, 0), ii(b, gh), IR_FOR_VECTORIZED,
                                       store(b, rb->xw, 2, idx, bias(rb, 0, iv(b, g)))));
    gemm_args ga = {.c = rb->xw, .a = (ir_buffer *)rb->r->in[IN_X]->buf, .bm = rb->wt,
                    .c_off = ir_mul(b, r0, ii(b, gh)), .a_off = ir_mul(b, r0, ii(b, rd->input)),
                    .b_off = rb->wt_off, .m = rows, .n = gh, .k = rd->input, .ldc = gh,
                    .lda = rd->input, .ldb = gh, .m_expr = par ? m : NULL};
    ir_stmt *body = ir_seq2(b, bias_rows, gemm(b, &ga));
    return par ? ir_for(b, blk, ii(b, 0), ii(b, blocks), IR_FOR_PARALLEL, body) : body;
}

/* The current state at (bv, jv): h (state 0) or LSTM's c (state 1). */
static ir_expr *cur_load(rnn_build *rb, int state)
{
    ir_builder *b = rb->b;
    ir_expr *row = state ? iv(b, rb->bv) : ir_add(b, rb->h_rd, iv(b, rb->bv));
    return load(b, state ? rb->cur_c : rb->cur_h, 2, row, iv(b, rb->jv), NULL, NULL, NULL);
}

/* h as this step's update wrote it. */
static ir_expr *new_h_load(rnn_build *rb)
{
    ir_builder *b = rb->b;
    return load(b, rb->cur_h, 2, ir_add(b, rb->h_wr, iv(b, rb->bv)), iv(b, rb->jv), NULL, NULL, NULL);
}

static ir_stmt *cur_store(rnn_build *rb, int state, ir_expr *v)
{
    ir_builder *b = rb->b;
    ir_expr *ci[2] = {state ? iv(b, rb->bv) : ir_add(b, rb->h_wr, iv(b, rb->bv)), iv(b, rb->jv)};
    return store(b, state ? rb->cur_c : rb->cur_h, 2, ci, v);
}

/* S[d, step, bv, jv] = v. */
static ir_stmt *history_store(rnn_build *rb, ir_expr *step, ir_expr *v)
{
    ir_builder *b = rb->b;
    ir_expr *si[4] = {rb->d, step, iv(b, rb->bv), iv(b, rb->jv)};
    return store(b, rb->S, 4, si, v);
}

/* A loop over the hidden units, vectorised (codegen peels the tail). */
static ir_stmt *units_loop(rnn_build *rb, ir_stmt *body)
{
    ir_builder *b = rb->b;
    return ir_for(b, rb->jv, rb->j0, rb->units, IR_FOR_VECTORIZED, body); /* min, extent */
}

/* cur = initial_h / initial_c (or 0). */
static ir_stmt *initial_state(rnn_build *rb)
{
    ir_builder *b = rb->b;
    const rnn_dims *rd = &rb->r->rd;
    ir_stmt *items[2] = {NULL, NULL};
    for (int st = 0; st < rb->r->states; st++) {
        const te_tensor *t = rb->r->in[st ? IN_C0 : IN_H0];
        ir_expr *v = fc(b, rb->r->dt, 0.0);
        if (t && rb->r->a->layout) v = load(b, t->buf, 3, iv(b, rb->bv), rb->d, iv(b, rb->jv), NULL, NULL);
        else if (t) v = load(b, t->buf, 3, rb->d, iv(b, rb->bv), iv(b, rb->jv), NULL, NULL);
        items[st] = units_loop(rb, cur_store(rb, st, v));
    }
    return loop(b, rb->bv, rd->batch, ir_seq(b, 2, items));
}

/* The clipped gate pre-activation. */
static ir_expr *clip(rnn_build *rb, ir_expr *x)
{
    const op_rnn_attrs *a = rb->r->a;
    if (!a->has_clip) return x;
    ir_builder *b = rb->b;
    return ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, x, fc(b, x->dtype, -a->clip)),
                     fc(b, x->dtype, a->clip));
}

static ir_expr *gate(rnn_build *rb, int k)
{
    ir_builder *b = rb->b;
    ir_expr *col = ir_add(b, ii(b, k * rb->r->rd.hidden), iv(b, rb->jv));
    return load(b, rb->gates, 2, iv(b, rb->bv), col, NULL, NULL, NULL);
}

/* x + P[d, k*H + j] * c, or x without peepholes. */
static ir_expr *peephole(rnn_build *rb, int k, ir_expr *x, ir_expr *c)
{
    const te_tensor *p = rb->r->in[IN_P];
    ir_builder *b = rb->b;
    if (!p) return x;
    ir_expr *col = ir_add(b, ii(b, k * rb->r->rd.hidden), iv(b, rb->jv));
    return ir_add(b, x, ir_mul(b, load(b, p->buf, 2, rb->d, col, NULL, NULL, NULL), c));
}

/* LSTM (gates i o f c; peepholes i o f): C' = f C + i g(c), H' = o h(C').
 * Values that read the state are expressions, not lets (codegen keeps a
 * let that loads a buffer the loop stores, and the loop scalar); each
 * statement's repeats are computed once (the vector emitter's CSE), and
 * H' reloads C' from where it was just stored. */
static ir_stmt *lstm_update(rnn_build *rb, const rnn_act *act)
{
    ir_builder *b = rb->b;
    smelt_dtype dt = rb->r->dt;
    ir_expr *cp = cur_load(rb, 1);
    ir_expr *ig = act_expr(b, &act[0], clip(rb, peephole(rb, 0, gate(rb, 0), cp)));
    ir_expr *fg = rb->r->a->input_forget
                      ? ir_sub(b, fc(b, dt, 1.0), ig)
                      : act_expr(b, &act[0], clip(rb, peephole(rb, 2, gate(rb, 2), cp)));
    ir_var *cg = ir_var_new(b, "cg", dt); /* reads no state: a let */
    ir_expr *cn = ir_add(b, ir_mul(b, fg, cp), ir_mul(b, ig, iv(b, cg)));
    ir_stmt *c_upd = ir_let(b, cg, act_expr(b, &act[1], clip(rb, gate(rb, 3))), cur_store(rb, 1, cn));
    ir_expr *c_new = cur_load(rb, 1);
    ir_expr *og = act_expr(b, &act[0], clip(rb, peephole(rb, 1, gate(rb, 1), c_new)));
    ir_stmt *h_upd = cur_store(rb, 0, ir_mul(b, og, act_expr(b, &act[2], c_new)));
    ir_stmt *items[3] = {c_upd, h_upd, history_store(rb, iv(b, rb->s), new_h_load(rb))};
    return ir_seq(b, 3, items);
}

/* GRU (gates z r h): H' = (1 - z) h~ + z H. */
static ir_stmt *gru_update(rnn_build *rb, const rnn_act *act)
{
    ir_builder *b = rb->b;
    smelt_dtype dt = rb->r->dt;
    const op_rnn_attrs *a = rb->r->a;
    ir_expr *cand; /* linear_before_reset: x Wh + Wbh + r (H Rh + Rbh); else the gate holds it */
    if (a->linear_before_reset) {
        ir_expr *col = ir_add(b, ii(b, 2 * rb->r->rd.hidden), iv(b, rb->jv));
        ir_expr *xh = load(b, rb->xw, 2, rb->row, col, NULL, NULL, NULL);
        cand = ir_add(b, xh, ir_mul(b, act_expr(b, &act[0], clip(rb, gate(rb, 1))), gate(rb, 2)));
    } else {
        cand = gate(rb, 2);
    }
    ir_var *z = ir_var_new(b, "zg", dt), *hc = ir_var_new(b, "hc", dt); /* read no state: lets */
    ir_expr *h = ir_add(b, ir_mul(b, ir_sub(b, fc(b, dt, 1.0), iv(b, z)), iv(b, hc)),
                        ir_mul(b, iv(b, z), cur_load(rb, 0)));
    ir_stmt *upd = ir_seq2(b, cur_store(rb, 0, h), history_store(rb, iv(b, rb->s), new_h_load(rb)));
    return ir_let(b, z, act_expr(b, &act[0], clip(rb, gate(rb, 0))),
                  ir_let(b, hc, act_expr(b, &act[1], clip(rb, cand)), upd));
}

/* Per b: inside its sequence the fused state update over j, past its end
 * the state copied into the history. */
static ir_stmt *fused_update(rnn_build *rb)
{
    ir_builder *b = rb->b;
    const rnn_te *r = rb->r;
    const rnn_act *act = rb->act;
    ir_stmt *upd;
    if (r->a->cell == RNN_CELL_LSTM) {
        upd = lstm_update(rb, act);
    } else if (r->a->cell == RNN_CELL_GRU) {
        upd = gru_update(rb, act);
    } else {
        ir_stmt *h = cur_store(rb, 0, act_expr(b, &act[0], clip(rb, gate(rb, 0))));
        upd = ir_seq2(b, h, history_store(rb, iv(b, rb->s), new_h_load(rb)));
    }
    /* past the sequence's end the state stays: into the history, and into
     * the next h when it is double-buffered */
    ir_stmt *copy = history_store(rb, iv(b, rb->s), cur_load(rb, 0));
    if (rb->h_rd != rb->h_wr) copy = ir_seq2(b, copy, cur_store(rb, 0, cur_load(rb, 0)));
    ir_stmt *body = ir_if(b, ir_binary(b, IR_LT, iv(b, rb->s), rb->len), units_loop(rb, upd),
                          units_loop(rb, copy));
    return loop(b, rb->bv, r->rd.batch, body);
}

/* LSTM: S[d, T] = the final cell state. */
static ir_stmt *final_cell(rnn_build *rb)
{
    ir_builder *b = rb->b;
    if (rb->r->a->cell != RNN_CELL_LSTM) return NULL;
    ir_stmt *st = history_store(rb, ii(b, rb->r->rd.steps), cur_load(rb, 1));
    return loop(b, rb->bv, rb->r->rd.batch, units_loop(rb, st));
}

/* G[b, g] = XW[row, g] + Rb[g] inside the sequence, else 0; GRU's
 * candidate column without linear_before_reset also takes XW's.  The
 * columns of the task's units in every gate (all columns unsplit). */
static ir_stmt *gates_init(rnn_build *rb)
{
    ir_builder *b = rb->b;
    const rnn_te *r = rb->r;
    int64_t gh = r->rd.gates * r->rd.hidden, h = r->rd.hidden;
    ir_var *g = ir_var_new(b, "gg", SMELT_DT_INT64);
    ir_expr *xw = load(b, rb->xw, 2, rb->row, iv(b, g), NULL, NULL, NULL);
    ir_expr *rb_g = bias(rb, gh, iv(b, g));
    ir_expr *v = ir_add(b, xw, rb_g);
    if (r->a->cell == RNN_CELL_GRU && r->a->linear_before_reset) /* x Wh waits for r */
        v = ir_select(b, ir_binary(b, IR_LT, iv(b, g), ii(b, 2 * h)), v, rb_g);
    v = ir_select(b, ir_binary(b, IR_LT, iv(b, rb->s), rb->len), v, fc(b, r->dt, 0.0));
    ir_expr *idx[2] = {iv(b, rb->bv), iv(b, g)};
    ir_stmt *st = store(b, rb->gates, 2, idx, v);
    if (!rb->split_units)
        return loop(b, rb->bv, r->rd.batch, ir_for(b, g, ii(b, 0), ii(b, gh), IR_FOR_VECTORIZED, st));
    ir_stmt *blocks = NULL;
    for (int k = 0; k < r->rd.gates; k++) {
        ir_expr *lo = ir_add(b, ii(b, k * h), rb->j0);
        blocks = ir_seq2(b, blocks, ir_for(b, g, lo, rb->units, IR_FOR_VECTORIZED, st));
    }
    return loop(b, rb->bv, r->rd.batch, blocks);
}

/* GRU without linear_before_reset: rh = r o H, then G_h += rh Rh^T. */
static ir_stmt *gru_reset_product(rnn_build *rb)
{
    ir_builder *b = rb->b;
    const rnn_te *r = rb->r;
    int64_t h = r->rd.hidden, gh = 3 * h;
    ir_expr *rg = act_expr(b, &rb->act[0], clip(rb, gate(rb, 1)));
    ir_expr *idx[2] = {iv(b, rb->bv), iv(b, rb->jv)};
    ir_stmt *fill = loop(b, rb->bv, r->rd.batch,
                         units_loop(rb, store(b, rb->rh, 2, idx, ir_mul(b, rg, cur_load(rb, 0)))));
    gemm_args ga = {.c = rb->gates, .a = rb->rh, .bm = rb->rt, .c_off = ii(b, 2 * h),
                    .a_off = ii(b, 0), .b_off = ir_add(b, rb->rt_off, ii(b, 2 * h)), .m = r->rd.batch, .n = h, .k = h,
                    .ldc = gh, .lda = h, .ldb = gh};
    return ir_seq2(b, fill, gemm(b, &ga));
}

/* G[:, the task's units of each gate] += h Rt[:, those columns]. */
static ir_stmt *split_products(rnn_build *rb)
{
    ir_builder *b = rb->b;
    const rnn_te *r = rb->r;
    int64_t h = r->rd.hidden, gh = r->rd.gates * h, half = h / 2;
    ir_stmt *all = NULL;
    for (int k = 0; k < r->rd.gates; k++) {
        ir_expr *col = ir_add(b, ii(b, k * h), rb->j0);
        gemm_args ga = {.c = rb->gates, .a = rb->cur_h, .bm = rb->rt, .c_off = col,
                        .a_off = ir_mul(b, rb->h_rd, ii(b, h)), .b_off = ir_add(b, rb->rt_off, col),
                        .m = r->rd.batch, .n = half, .k = h, .ldc = gh, .lda = h, .ldb = gh};
        all = ir_seq2(b, all, gemm(b, &ga));
    }
    return all;
}

/* The steps with each step's work split over two tasks by hidden unit: per
 * task its gate columns, their products and its units' update; h
 * double-buffered (step s reads rows s % 2, writes the other). */
static ir_stmt *split_time_step(rnn_build *rb)
{
    ir_builder *b = rb->b;
    const rnn_te *r = rb->r;
    int64_t half = r->rd.hidden / 2, batch = r->rd.batch;
    ir_var *t = ir_var_new(b, "ut", SMELT_DT_INT64);
    rnn_build task = *rb;
    ir_expr *parity = ir_binary(b, IR_MOD, iv(b, rb->s), ii(b, 2));
    task.h_rd = ir_mul(b, parity, ii(b, batch));
    task.h_wr = ir_mul(b, ir_sub(b, ii(b, 1), parity), ii(b, batch));
    task.j0 = ir_mul(b, iv(b, t), ii(b, half));
    task.units = ii(b, half);
    ir_stmt *items[3] = {gates_init(&task), split_products(&task), fused_update(&task)};
    return loop(b, rb->s, r->rd.steps, ir_for(b, t, ii(b, 0), ii(b, 2), IR_FOR_PARALLEL, ir_seq(b, 3, items)));
}

static ir_stmt *time_step(rnn_build *rb)
{
    ir_builder *b = rb->b;
    const rnn_te *r = rb->r;
    if (rb->split_units) return split_time_step(rb);
    int64_t h = r->rd.hidden, gh = r->rd.gates * h;
    bool reset_first = r->a->cell == RNN_CELL_GRU && !r->a->linear_before_reset;
    gemm_args ga = {.c = rb->gates, .a = rb->cur_h, .bm = rb->rt, .c_off = ii(b, 0),
                    .a_off = ii(b, 0), .b_off = rb->rt_off, .m = r->rd.batch,
                    .n = reset_first ? 2 * h : gh, .k = h, .ldc = gh, .lda = h, .ldb = gh};
    ir_stmt *items[4] = {gates_init(rb), gemm(b, &ga), reset_first ? gru_reset_product(rb) : NULL,
                         fused_update(rb)};
    return loop(b, rb->s, r->rd.steps, ir_seq(b, 4, items));
}

/* The sequence length of batch entry bv (clamped: the check stage reports
 * bad ones) and XW's row for it at step s. */
static void step_exprs(rnn_build *rb, ir_expr *reverse)
{
    ir_builder *b = rb->b;
    const rnn_te *r = rb->r;
    int64_t T = r->rd.steps;
    ir_expr *bv = iv(b, rb->bv), *s = iv(b, rb->s);
    rb->len = ii(b, T);
    if (r->in[IN_SEQ_LENS]) {
        ir_expr *l = ir_cast(b, SMELT_DT_INT64, load(b, r->in[IN_SEQ_LENS]->buf, 1, bv, NULL, NULL, NULL, NULL));
        rb->len = ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, l, ii(b, 0)), ii(b, T));
    }
    ir_expr *t = ir_select(b, reverse, ir_sub(b, ir_sub(b, rb->len, ii(b, 1)), s), s);
    rb->row = r->a->layout ? ir_add(b, ir_mul(b, bv, ii(b, T)), t)
                           : ir_add(b, ir_mul(b, t, ii(b, r->rd.batch)), bv);
}

static ir_buffer *temp(ir_builder *b, const char *name, smelt_dtype dt, int64_t d0, int64_t d1)
{
    int64_t shape[2] = {d0, d1};
    return ir_buffer_new(b, name, dt, 2, shape, IR_BUF_TEMP);
}

/* Everything of direction dir, with loop variables of its own. */
static ir_stmt *build_direction(rnn_build rb, int dir)
{
    ir_builder *b = rb.b;
    const rnn_te *r = rb.r;
    rb.d = ii(b, dir);
    rb.act = r->a->act[dir];
    rb.s = ir_var_new(b, "step", SMELT_DT_INT64);
    rb.bv = ir_var_new(b, "bt", SMELT_DT_INT64);
    rb.jv = ir_var_new(b, "hu", SMELT_DT_INT64);
    rb.h_rd = rb.h_wr = rb.j0 = ii(b, 0);
    rb.units = ii(b, r->rd.hidden);
    bool reverse = r->a->reverse || dir == 1;
    step_exprs(&rb, ir_const_int(b, SMELT_DT_BOOL, reverse));
    ir_stmt *w_t = NULL, *r_t = NULL;
    if (r->w_t) {
        rb.wt = r->w_t->buf;
        rb.wt_off = ii(b, dir * r->rd.input * r->rd.gates * r->rd.hidden);
    } else {
        w_t = transpose(&rb, rb.wt, r->in[IN_W]);
    }
    if (r->r_t) {
        rb.rt = r->r_t->buf;
        rb.rt_off = ii(b, dir * r->rd.hidden * r->rd.gates * r->rd.hidden);
    } else {
        r_t = transpose(&rb, rb.rt, r->in[IN_R]);
    }
    ir_stmt *items[6] = {w_t, r_t,
                         input_projection(&rb), initial_state(&rb), time_step(&rb), final_cell(&rb)};
    return ir_seq(b, 6, items);
}

static ir_stmt *build_recurrence(te_graph *g, ir_buffer *out, void *user)
{
    const rnn_te *r = user;
    ir_builder *b = &g->b;
    const rnn_dims *rd = &r->rd;
    int64_t gh = rd->gates * rd->hidden;
    rnn_build rb = {.r = r, .b = b, .S = out, .wt_off = ii(b, 0), .rt_off = ii(b, 0)};
    rb.wt = temp(b, "rnn_wt", r->dt, rd->input, gh);
    rb.rt = temp(b, "rnn_rt", r->dt, rd->hidden, gh);
    rb.xw = temp(b, "rnn_xw", r->dt, rd->steps * rd->batch, gh);
    rb.gates = temp(b, "rnn_gates", r->dt, rd->batch, gh);
    rb.rh = temp(b, "rnn_rh", r->dt, rd->batch, rd->hidden);
    /* LSTM steps split over two tasks by hidden unit (each a product of half
     * the columns: a batch's recurrent product is latency- and cache-bound
     * on one core), when the halves are whole vectors */
    rb.split_units = r->a->cell == RNN_CELL_LSTM && r->dt == SMELT_DT_FLOAT32 &&
                     rd->hidden >= 64 && rd->hidden % 16 == 0;
    rb.cur_h = temp(b, "rnn_h", r->dt, rb.split_units ? 2 * rd->batch : rd->batch, rd->hidden);
    rb.cur_c = temp(b, "rnn_c", r->dt, rd->batch, rd->hidden);
    ir_stmt *body = NULL;
    for (int dir = 0; dir < rd->dirs; dir++) body = ir_seq2(b, body, build_direction(rb, dir));
    ir_buffer *temps[7] = {r->w_t ? NULL : rb.wt, r->r_t ? NULL : rb.rt, rb.xw, rb.gates, rb.rh,
                           rb.cur_h, rb.cur_c};
    for (int i = 6; i >= 0; i--)
        if (temps[i]) body = ir_allocate(b, temps[i], body);
    return b->failed ? NULL : body;
}

/* ---- outputs: gathers from the state history ---- */

typedef struct gather_te {
    const rnn_te *r;
    const te_tensor *S;
    int state;
} gather_te;

static ir_expr *len_of(te_graph *g, const rnn_te *r, ir_expr *bv)
{
    ir_builder *b = &g->b;
    int64_t T = r->rd.steps;
    if (!r->in[IN_SEQ_LENS]) return ii(b, T);
    ir_expr *l = ir_cast(b, SMELT_DT_INT64, te_read(g, r->in[IN_SEQ_LENS], &bv));
    return ir_binary(b, IR_MIN, ir_binary(b, IR_MAX, l, ii(b, 0)), ii(b, T));
}

static ir_expr *is_reverse(ir_builder *b, const rnn_te *r, ir_expr *d)
{
    if (r->a->reverse) return ir_const_int(b, SMELT_DT_BOOL, 1);
    return ir_binary(b, IR_EQ, d, ii(b, 1));
}

/* Y[t, d, b, j] (layout 1: [b, t, d, j]) = S[d, step of t, b, j] inside the sequence
 * (reverse: time t is step len - 1 - t). */
static ir_expr *y_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gather_te *gt = user;
    ir_builder *b = &g->b;
    bool l1 = gt->r->a->layout;
    ir_expr *t = idx[l1 ? 1 : 0], *d = idx[l1 ? 2 : 1], *bv = idx[l1 ? 0 : 2], *j = idx[3];
    ir_expr *len = len_of(g, gt->r, bv);
    ir_expr *step = ir_select(b, is_reverse(b, gt->r, d), ir_sub(b, ir_sub(b, len, ii(b, 1)), t), t);
    ir_expr *si[4] = {d, step, bv, j};
    return ir_select(b, ir_binary(b, IR_LT, t, len), te_read(g, gt->S, si), fc(b, gt->r->dt, 0.0));
}

/* Y_h [d, b, j] (layout 1: [b, d, j]) = S[d, T-1, b, j] (the state stays
 * put past a sequence's end), Y_c = S[d, T, b, j]. */
static ir_expr *state_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const gather_te *gt = user;
    ir_builder *b = &g->b;
    bool l1 = gt->r->a->layout;
    int64_t step = gt->state ? gt->r->rd.steps : gt->r->rd.steps - 1;
    ir_expr *si[4] = {idx[l1 ? 1 : 0], ii(b, step), idx[l1 ? 0 : 1], idx[2]};
    return te_read(g, gt->S, si);
}

static ir_expr *lens_check_body(te_graph *g, ir_expr *const *idx, void *user)
{
    return ir_cast(&g->b, SMELT_DT_INT64, te_read(g, user, idx));
}

/* The reference kernel refuses lengths outside [0, T]; so does compiled
 * code (a check stage), unless the lengths are constants in range. */
static smelt_status lens_check(op_compute_args *a, const rnn_te *r)
{
    const te_tensor *sl = r->in[IN_SEQ_LENS];
    const smelt_tensor *c = a->in_const[IN_SEQ_LENS];
    int64_t T = r->rd.steps;
    bool ok = c != NULL;
    for (int64_t i = 0; c && i < op_numel(c); i++) ok = ok && op_get_i64(c, i) >= 0 && op_get_i64(c, i) <= T;
    if (!sl || ok) return SMELT_OK;
    ir_builder *b = &a->te->b;
    ir_var *v = ir_var_new(b, "v", SMELT_DT_INT64);
    ir_expr *cond = ir_binary(b, IR_AND, ir_binary(b, IR_GE, iv(b, v), ii(b, 0)),
                              ir_binary(b, IR_LE, iv(b, v), ii(b, T)));
    char msg[120];
    snprintf(msg, sizeof msg, "sequence length {value} at position {position} is out of range "
             "[0, %lld]", (long long)T);
    ir_check_site site = {.node = a->node->name, .op = a->node->op_type, .message = msg};
    if (!te_check_compute(a->te, "check", 1, sl->buf->shape, lens_check_body, (void *)sl, v, cond, &site))
        return smelt_ctx_status(a->ctx) != SMELT_OK ? smelt_ctx_status(a->ctx)
                                                    : smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
    return SMELT_OK;
}

static smelt_status fail(op_compute_args *a)
{
    smelt_status s = smelt_ctx_status(a->ctx);
    return s != SMELT_OK ? s : smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
}

/* w[d, g, k] as a te constant wt[d, k, g] (compile-time transpose). */
static const te_tensor *transposed_const(op_compute_args *a, const smelt_tensor *w, const char *name)
{
    int64_t D = w->dims[0], G = w->dims[1], K = w->dims[2], shape[3] = {D, K, G};
    float *data = smelt_calloc((size_t)(D * K * G) + 1, sizeof *data);
    const float *src = w->data;
    for (int64_t d = 0; data && d < D; d++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t k = 0; k < K; k++) data[(d * K + k) * G + g] = src[(d * G + g) * K + k];
    return te_const_tensor(a->te, name, SMELT_DT_FLOAT32, 3, shape, data);
}

/* The products (2 flops per multiply-add) and about 8 per gate element. */
static double recurrence_flops(const rnn_dims *rd)
{
    double gh = (double)(rd->gates * rd->hidden), rows = (double)(rd->steps * rd->batch);
    return (double)rd->dirs * rows * gh * (2.0 * (double)(rd->input + rd->hidden) + 8.0);
}

static void dims_of(const op_rnn_attrs *at, const te_tensor *const *in, rnn_dims *rd)
{
    const int64_t *x = in[IN_X]->buf->shape;
    rd->steps = x[at->layout ? 1 : 0];
    rd->batch = x[at->layout ? 0 : 1];
    rd->input = x[2];
    rd->hidden = in[IN_R]->buf->shape[2];
    rd->dirs = at->n_dirs;
    rd->gates = rnn_cell_gates(at->cell);
}

smelt_status rnn_compute(op_compute_args *a)
{
    const gr_node *n = a->node;
    rnn_te *r = smelt_arena_alloc(&a->te->arena, sizeof *r);
    if (!r) return fail(a);
    memset(r, 0, sizeof *r);
    r->a = n->op_attrs;
    te_tensor *inputs[IN_P + 3];
    int n_in = 0;
    for (int i = 0; i <= IN_P && i < n->n_inputs; i++) {
        r->in[i] = n->inputs[i] ? a->in[i] : NULL;
        if (r->in[i]) inputs[n_in++] = (te_tensor *)r->in[i];
    }
    dims_of(r->a, r->in, &r->rd);
    r->states = rnn_cell_states(r->a->cell);
    r->dt = r->in[IN_X]->buf->dtype;
    for (int o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] && op_numel(&a->out_type[o]) == 0)
            return op_errf(a->ctx, n, SMELT_ERR_UNSUPPORTED, "empty tensors (a zero dim) are not "
                           "compiled for %s", n->op_type);
    SMELT_TRY(lens_check(a, r));
    if (r->dt == SMELT_DT_FLOAT32 && a->in_const[IN_W]) {
        if (!(r->w_t = transposed_const(a, a->in_const[IN_W], "w_t"))) return fail(a);
        inputs[n_in++] = (te_tensor *)r->w_t;
    }
    if (r->dt == SMELT_DT_FLOAT32 && a->in_const[IN_R]) {
        if (!(r->r_t = transposed_const(a, a->in_const[IN_R], "r_t"))) return fail(a);
        inputs[n_in++] = (te_tensor *)r->r_t;
    }
    if (r->rd.steps == 0 || r->rd.batch == 0)
        return op_errf(a->ctx, n, SMELT_ERR_UNSUPPORTED, "empty sequences or batches are not "
                       "compiled for %s", n->op_type);
    int64_t sdims[4] = {r->rd.dirs, r->rd.steps + r->states - 1, r->rd.batch, r->rd.hidden};
    te_tensor *S = te_extern_stage(a->te, "state", r->dt, 4, sdims, n_in, inputs, build_recurrence, r,
                                   "recurrence", recurrence_flops(&r->rd));
    if (!S) return fail(a);
    static const char *const names[3] = {"y", "y_h", "y_c"};
    for (int o = 0; o < n->n_outputs; o++) {
        if (!n->outputs[o]) continue;
        gather_te *gt = smelt_arena_alloc(&a->te->arena, sizeof *gt);
        if (!gt) return fail(a);
        *gt = (gather_te){.r = r, .S = S, .state = o == OUT_Y_C ? 1 : 0};
        const smelt_tensor *ot = &a->out_type[o];
        a->out[o] = te_compute(a->te, names[o], ot->dtype, ot->rank, ot->dims,
                               o == OUT_Y ? y_body : state_body, gt, "injective");
        if (!a->out[o]) return fail(a);
    }
    return SMELT_OK;
}
