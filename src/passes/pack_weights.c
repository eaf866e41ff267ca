/* Constant weights of matrix products packed in column panels.
 *
 * A float32 MatMul whose B is a 2-D constant [K, N] becomes
 * MatMulPacked(A, Bp) (ops/linalg_packed.c), and so does a Gemm with
 * alpha 1, A untransposed and a constant B (then Add(C) after it when C is
 * given with beta 1).  Bp holds B as [ceil(N / nb), K, nb], zero-padded,
 * with nb the columns per register tile the default schedule picks for the
 * product (sch_matmul_panel_width): each tile then streams one contiguous
 * panel instead of a block of every row of B (rows N floats apart: a new
 * page per k, which the prefetchers do not follow across).  Measured on
 * BERT-base (weights read from memory on every run): its 768 x 3072
 * products 1.85 -> 1.47 ms, the model 75 -> 62 ms.  MLAS and oneDNN pack
 * their weights the same way, once, before the first run.
 *
 * Products sharing a B (and panel width) share one packed copy; the plain B
 * is swept when nothing else reads it.
 *
 * A B computed at run time (both operands activations, or weights given as
 * inputs) is packed at run time when it is large: Reshape [K, P, nb] and
 * Transpose [P, K, nb] (one tiled transpose) before MatMulPacked.  Measured
 * on Zen 3, 2 threads: 1024 x 1024 x 1024 ... (see RUNTIME_PACK_MIN_BYTES).
 */
#include <string.h>

#include "ops/linalg.h"
#include "ops/op.h"
#include "passes/pass_util.h"
#include "passes/passes.h"
#include "sched/sched.h"

/* One packed constant, for sharing between products. */
typedef struct packed_b {
    const gr_value *b;
    bool trans; /* b is [N, K] (Gemm transB) */
    int64_t nb;
    gr_value *packed;
} packed_b;

typedef struct pack_state {
    smelt_ctx *ctx;
    gr_graph *g;
    bool at_run_time; /* pack_runtime_b: B computed at run time */
    packed_b *done;
    int n_done, cap;
} pack_state;

static smelt_status oom(pack_state *s) { return smelt_errf(s->ctx, SMELT_ERR_NOMEM, "out of memory"); }

/* B ([K, N], or [N, K] when trans) as [P, K, nb] column panels, a new
 * constant owning the data (weights can be hundreds of MB: one copy). */
static gr_value *pack_panels(pack_state *s, const gr_value *b, bool trans, int64_t nb)
{
    int64_t k = b->dims[trans ? 1 : 0], n = b->dims[trans ? 0 : 1], p = (n + nb - 1) / nb;
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    float *dst = smelt_calloc((size_t)(p * k * nb), sizeof(float));
    if (!t || !dst) {
        smelt_free(t);
        smelt_free(dst);
        return oom(s), NULL;
    }
    const float *src = b->constant->data;
    float *o = dst; /* written in order: panel, row k, column within the panel */
    for (int64_t panel = 0; panel < p; panel++)
        for (int64_t kk = 0; kk < k; kk++)
            for (int64_t j = panel * nb; j < panel * nb + nb; j++)
                *o++ = j >= n ? 0.0f : src[trans ? j * k + kk : kk * n + j];
    *t = (smelt_tensor){.dtype = SMELT_DT_FLOAT32, .rank = 3, .dims = {p, k, nb}, .data = dst};
    return gr_graph_add_constant(s->ctx, s->g, b->name, t);
}

/* The packed form of b for panel width nb, made once. */
static gr_value *packed_of(pack_state *s, const gr_value *b, bool trans, int64_t nb)
{
    for (int i = 0; i < s->n_done; i++)
        if (s->done[i].b == b && s->done[i].trans == trans && s->done[i].nb == nb)
            return s->done[i].packed;
    if (s->n_done == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        packed_b *d = smelt_realloc(s->done, sizeof *d * (size_t)s->cap, sizeof *d * (size_t)cap);
        if (!d) return oom(s), NULL;
        s->done = d;
        s->cap = cap;
    }
    gr_value *v = pack_panels(s, b, trans, nb);
    if (v) s->done[s->n_done++] = (packed_b){b, trans, nb, v};
    return v;
}

static gr_node *new_node(pack_state *s, const gr_node *from, const char *suffix, op_kind kind,
                         gr_value *const *in, int n_in)
{
    char name[256];
    snprintf(name, sizeof name, "%s%s", from->name, suffix);
    return pu_node_new(s->ctx, s->g, name, kind, in, n_in, 1);
}

/* B (2-D, computed at run time, N a multiple of nb) as [N / nb, K, nb]
 * panels by a Reshape and a Transpose. */
static gr_value *pack_at_run_time(pack_state *s, const gr_node *n, gr_value *b, int64_t nb)
{
    int64_t k = b->dims[0], cols = b->dims[1];
    const int64_t split[3] = {k, cols / nb, nb}, three = 3, perm[3] = {1, 0, 2};
    gr_value *shape = pu_const_i64(s->ctx, s->g, "panels_shape", 1, &three, split);
    gr_value *in[2] = {b, shape};
    gr_node *r = shape ? new_node(s, n, "/panels_split", OP_RESHAPE, in, 2) : NULL;
    if (!r || pu_node_import(s->ctx, s->g, r) || pu_infer_node(s->ctx, r, "pack_weights"))
        return NULL;
    gr_node *t = new_node(s, n, "/panels", OP_TRANSPOSE, r->outputs, 1);
    if (!t || pu_attr_ints(s->ctx, s->g, t, "perm", perm, 3) || pu_node_import(s->ctx, s->g, t) ||
        pu_infer_node(s->ctx, t, "pack_weights"))
        return NULL;
    return t->outputs[0];
}

/* MatMulPacked(a, packed B) taking over y (and Add(., c) after it when c). */
static smelt_status replace_product(pack_state *s, gr_node *n, gr_value *a, gr_value *b,
                                    bool trans, gr_value *c)
{
    gr_value *y = n->outputs[0];
    int64_t k = a->dims[a->rank - 1], m = a->dims[a->rank - 2], cols = y->dims[y->rank - 1];
    int64_t nb = sch_matmul_panel_width(m, cols, k, &s->g->hw);
    if (nb <= 0 || (!b->constant && cols % nb)) return SMELT_OK;
    gr_value *in[2] = {a, b->constant ? packed_of(s, b, trans, nb) : pack_at_run_time(s, n, b, nb)};
    if (!in[1]) return smelt_ctx_status(s->ctx);
    gr_node *p = new_node(s, n, "/packed", OP_MATMUL_PACKED, in, 2);
    if (!p) return smelt_ctx_status(s->ctx);
    SMELT_TRY(pu_attr_int(s->ctx, s->g, p, "n", cols));
    SMELT_TRY(pu_node_import(s->ctx, s->g, p));
    SMELT_TRY(pu_infer_node(s->ctx, p, "pack_weights"));
    gr_node *last = p;
    if (c) {
        gr_value *sum_in[2] = {p->outputs[0], c};
        last = new_node(s, n, "/bias", OP_ADD, sum_in, 2);
        if (!last) return smelt_ctx_status(s->ctx);
        SMELT_TRY(pu_node_import(s->ctx, s->g, last));
        SMELT_TRY(pu_infer_node(s->ctx, last, "pack_weights"));
    }
    if (!pu_same_type(last->outputs[0], y))
        return op_errf(s->ctx, n, SMELT_ERR_INTERNAL, "pack_weights: the packed product's type differs");
    pu_take_output(last, 0, y);
    pu_detach(n);
    return SMELT_OK;
}

static bool static_f32(const gr_value *v, int min_rank, int max_rank)
{
    return v && v->dtype == SMELT_DT_FLOAT32 && v->rank >= min_rank && v->rank <= max_rank &&
           gr_value_numel(v) > 0;
}

static bool const_f32_2d(const gr_value *v) { return static_f32(v, 2, 2) && v->constant; }

/* Packing a B computed at run time costs a pass over it; tiles streaming
 * unpacked rows (N floats apart: a new page per k) cost more once B is
 * larger than L2 and A has rows enough to reuse the panels. */
#define RUNTIME_PACK_MIN_BYTES (1 << 19)
#define RUNTIME_PACK_MIN_ROWS 64

static bool runtime_pack_pays(const gr_value *a, const gr_value *b)
{
    if (!static_f32(b, 2, 2) || b->constant) return false;
    int64_t rows = gr_value_numel(a) / a->dims[a->rank - 1];
    return rows >= RUNTIME_PACK_MIN_ROWS && gr_value_numel(b) * 4 >= RUNTIME_PACK_MIN_BYTES;
}

static smelt_status try_matmul(pack_state *s, gr_node *n)
{
    gr_value *a = n->inputs[0], *b = n->inputs[1], *y = n->outputs[0];
    if (!static_f32(a, 2, SMELT_MAX_RANK) || a->constant || !y || !static_f32(y, 2, SMELT_MAX_RANK))
        return SMELT_OK;
    if (!(s->at_run_time ? runtime_pack_pays(a, b) : const_f32_2d(b))) return SMELT_OK;
    return replace_product(s, n, a, b, false, NULL);
}

/* Gemm with alpha 1 and A untransposed: A' B' (+ C when beta is 1). */
static smelt_status try_gemm(pack_state *s, gr_node *n)
{
    const op_gemm_attrs *at = n->op_attrs;
    gr_value *a = n->inputs[0], *b = n->inputs[1], *y = n->outputs[0];
    gr_value *c = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (!at || at->alpha != 1.0f || at->trans_a || (c && at->beta != 1.0f)) return SMELT_OK;
    if (!static_f32(a, 2, 2) || a->constant || !const_f32_2d(b) || !y || !static_f32(y, 2, 2))
        return SMELT_OK;
    if (c && (c->dtype != SMELT_DT_FLOAT32 || gr_value_numel(c) < 0)) return SMELT_OK;
    return replace_product(s, n, a, b, at->trans_b, c);
}

static smelt_status pack_products(smelt_ctx *ctx, gr_graph *g, bool at_run_time)
{
    if (g->hw.lanes < 2) return SMELT_OK; /* the plain schedule does not tile by panels */
    pack_state s = {ctx, g, at_run_time, NULL, 0, 0};
    int n0 = g->nodes.len, changed = 0;
    gr_node **nodes = smelt_calloc((size_t)n0 + 1, sizeof *nodes);
    if (!nodes) return oom(&s);
    if (n0) memcpy(nodes, g->nodes.items, sizeof *nodes * (size_t)n0);
    smelt_status st = SMELT_OK;
    for (int i = 0; st == SMELT_OK && i < n0; i++) {
        gr_node *n = nodes[i];
        if (n->n_outputs != 1) continue;
        int before = g->nodes.len;
        if (n->op == OP_MATMUL) st = try_matmul(&s, n);
        else if (n->op == OP_GEMM && !at_run_time) st = try_gemm(&s, n);
        changed += g->nodes.len != before;
    }
    smelt_free(nodes);
    smelt_free(s.done);
    SMELT_TRY(st);
    return changed ? pu_finish(ctx, g) : SMELT_OK;
}

smelt_status pass_pack_weights(smelt_ctx *ctx, gr_graph *g) { return pack_products(ctx, g, false); }

smelt_status pass_pack_runtime_b(smelt_ctx *ctx, gr_graph *g) { return pack_products(ctx, g, true); }
