/* fuse_attention + FusedAttention: decomposed attention graphs in the forms
 * torch.onnx exports (head split/merge by Reshape + Transpose or plain 4-D
 * operands, K transposed three ways, scale by Mul/Div after the product or
 * on Q and K before it, additive masks [B,1,1,Skv] and [B,1,Sq,Skv], bool
 * masks through Where either way round, a tril mask with -inf that becomes
 * causal), each checked three ways:
 *   - the pass rewrites it into one FusedAttention node (the node list) and
 *     the reference executor gives the decomposed graph's outputs;
 *   - the whole model compiled (-O2: the pass, the extern stage, the
 *     micro-kernel smelt.attention_f32 in generated C) against the reference
 *     kernels of the decomposed graph, on shapes that are not multiples of
 *     the 128-row / 128-key blocks (several of each), one query row (the dot-product path), head
 *     sizes that are not multiples of the vector width;
 * and the refusals leave the graph unchanged: scores read twice, Softmax over
 * another axis, a per-column scale, heads broadcast by the MatMul, a mask that
 * does not broadcast to the scores. */
#include <math.h>

#include "api/smelt_internal.h"
#include "passes/pass_graphs.h"

enum { K_SPLIT, K_BHSD, K_BHDS };                     /* how K^T is made */
enum { S_NONE, S_MUL, S_DIV, S_QK };                  /* where the scale is */
enum { M_NONE, M_ADD_ROW, M_ADD_FULL, M_FILL_TRUE, M_KEEP_TRUE, M_CAUSAL }; /* the mask */
enum { R_NONE, R_SCORES_OUT, R_AXIS2, R_COL_SCALE, R_HEAD_BCAST, R_BAD_MASK, R_KEY_MASK,
       R_SOFTCAP, R_GQA, R_SHORT_MASK }; /* refusals (the last three: the Attention op) */

typedef struct att_cfg {
    const char *name;
    int64_t b, h, sq, skv, d, dv;
    bool split_q, split_v, merge;
    int k_form, scale, mask, refuse;
} att_cfg;

static att_cfg cfg; /* the graph the builder makes */

static gr_value *op1(gr_graph *g, op_kind k, const char *name, gr_value *x)
{
    return tg_op(g, k, name, 1, &x);
}

static gr_value *op2(gr_graph *g, op_kind k, const char *name, gr_value *a, gr_value *b)
{
    gr_value *in[2] = {a, b};
    return tg_op(g, k, name, 2, in);
}

static gr_value *transpose(gr_graph *g, const char *name, gr_value *x, int64_t p0, int64_t p1,
                           int64_t p2, int64_t p3)
{
    int64_t perm[4] = {p0, p1, p2, p3};
    gr_node *n = tg_node_attrs(g, OP_TRANSPOSE, name, 1, &x);
    pu_attr_ints(tg_ctx, g, n, "perm", perm, 4);
    return tg_import(g, n);
}

static gr_value *reshape(gr_graph *g, const char *name, gr_value *x, int rank, const int64_t *dims)
{
    return op2(g, OP_RESHAPE, name, x, tg_const_i64(g, "shape", rank, dims));
}

static gr_value *scalar(gr_graph *g, const char *name, float v)
{
    int64_t none[1] = {1}; /* rank 0: no dims are read */
    return pu_const_f32(tg_ctx, g, name, 0, none, &v);
}

/* Q4/V4 [B,H,S,D]: a 4-D input, or the head split of a 3-D one. */
static gr_value *operand(gr_graph *g, const char *name, bool split, int64_t s, int64_t d)
{
    if (!split) return tg_input(g, name, 4, (int64_t[]){cfg.b, cfg.h, s, d});
    gr_value *x = tg_input(g, name, 3, (int64_t[]){cfg.b, s, cfg.h * d});
    x = reshape(g, "split", x, 4, (int64_t[]){cfg.b, s, cfg.h, d});
    return transpose(g, "heads", x, 0, 2, 1, 3);
}

static gr_value *key_transposed(gr_graph *g)
{
    if (cfg.k_form == K_BHDS) return tg_input(g, "kt", 4, (int64_t[]){cfg.b, cfg.h, cfg.d, cfg.skv});
    if (cfg.k_form == K_BHSD)
        return transpose(g, "kt", operand(g, "k", false, cfg.skv, cfg.d), 0, 1, 3, 2);
    gr_value *x = tg_input(g, "k", 3, (int64_t[]){cfg.b, cfg.skv, cfg.h * cfg.d});
    x = reshape(g, "ksplit", x, 4, (int64_t[]){cfg.b, cfg.skv, cfg.h, cfg.d});
    return transpose(g, "kt", x, 0, 2, 3, 1);
}

/* A bool constant [1, 1, Sq, Skv]: keep j <= i (causal), else a pattern. */
static gr_value *bool_mask(gr_graph *g, bool causal)
{
    int64_t dims[4] = {1, 1, cfg.sq, cfg.skv}, n = cfg.sq * cfg.skv;
    unsigned char *m = malloc((size_t)n);
    for (int64_t e = 0; e < n; e++)
        m[e] = causal ? (e % cfg.skv) <= (e / cfg.skv) : (e * 7 + e / 5) % 4 != 0;
    gr_value *v = pu_const(tg_ctx, g, "mask", SMELT_DT_BOOL, 4, dims, m);
    free(m);
    return v;
}

static gr_value *masked(gr_graph *g, gr_value *s)
{
    gr_value *w[3];
    switch (cfg.mask) {
    case M_ADD_ROW: return op2(g, OP_ADD, "mask_add", s, tg_input(g, "mask", 4, (int64_t[]){cfg.b, 1, 1, cfg.skv}));
    case M_ADD_FULL:
        return op2(g, OP_ADD, "mask_add", tg_input(g, "mask", 4, (int64_t[]){cfg.b, 1, cfg.sq, cfg.skv}), s);
    case M_FILL_TRUE: w[0] = bool_mask(g, false), w[1] = scalar(g, "fill", -1e4f), w[2] = s; break;
    case M_KEEP_TRUE: w[0] = bool_mask(g, false), w[1] = s, w[2] = scalar(g, "fill", -3.0f); break;
    case M_CAUSAL: w[0] = bool_mask(g, true), w[1] = s, w[2] = scalar(g, "fill", -INFINITY); break;
    default: return s;
    }
    return tg_op(g, OP_WHERE, "where", 3, w);
}

static void attention(gr_graph *g)
{
    gr_value *q = operand(g, "q", cfg.split_q, cfg.sq, cfg.d), *kt = key_transposed(g);
    if (cfg.scale == S_QK) {
        q = op2(g, OP_MUL, "qs", q, scalar(g, "c", 0.5f));
        kt = op2(g, OP_MUL, "ks", scalar(g, "c2", 0.5f), kt);
    }
    gr_value *s = op2(g, OP_MATMUL, "qk", q, cfg.refuse == R_HEAD_BCAST
                                                 ? tg_input(g, "kt1", 4, (int64_t[]){cfg.b, 1, cfg.d, cfg.skv})
                                                 : kt);
    if (cfg.refuse == R_SCORES_OUT) tg_output(g, s);
    if (cfg.scale == S_MUL) s = op2(g, OP_MUL, "scale", s, scalar(g, "c", 0.25f));
    if (cfg.scale == S_DIV) s = op2(g, OP_DIV, "scale", s, scalar(g, "c", 8.0f));
    if (cfg.refuse == R_COL_SCALE)
        s = op2(g, OP_MUL, "scale", s, tg_const(g, "cols", 1, &cfg.skv, 0.1f, 0.01f));
    if (cfg.refuse == R_BAD_MASK)
        s = op2(g, OP_ADD, "mask_add", s, tg_input(g, "mask", 4, (int64_t[]){2 * cfg.b, cfg.h, cfg.sq, cfg.skv}));
    if (cfg.refuse == R_KEY_MASK) /* [B, H, Sq, 1]: one value per query row */
        s = op2(g, OP_ADD, "mask_add", s, tg_input(g, "mask", 4, (int64_t[]){cfg.b, cfg.h, cfg.sq, 1}));
    s = masked(g, s);
    gr_node *sm = tg_node_attrs(g, OP_SOFTMAX, "softmax", 1, &s);
    pu_attr_int(tg_ctx, g, sm, "axis", cfg.refuse == R_AXIS2 ? 2 : -1);
    gr_value *p = tg_import(g, sm);
    gr_value *y = op2(g, OP_MATMUL, "pv", p, operand(g, "v", cfg.split_v, cfg.skv, cfg.dv));
    if (cfg.merge) {
        y = transpose(g, "merge", y, 0, 2, 1, 3);
        y = reshape(g, "merged", y, 3, (int64_t[]){cfg.b, cfg.sq, cfg.h * cfg.dv});
    }
    tg_output(g, op1(g, OP_RELU, "relu", y));
}

/* The ONNX Attention op (opset 23): 3-D (split_q) or 4-D operands, a float
 * mask [Sq, Skv] (M_ADD_FULL), a bool one whose row 0 keeps nothing
 * (M_KEEP_TRUE: the op's guard gives zeros there), is_causal (M_CAUSAL),
 * scale (S_MUL). */
static void attention_op(gr_graph *g)
{
    g->opset = 23;
    bool three = cfg.split_q;
    int64_t kvh = cfg.refuse == R_GQA ? 1 : cfg.h;
    gr_value *in[4];
    in[0] = three ? tg_input(g, "q", 3, (int64_t[]){cfg.b, cfg.sq, cfg.h * cfg.d})
                  : tg_input(g, "q", 4, (int64_t[]){cfg.b, cfg.h, cfg.sq, cfg.d});
    in[1] = three ? tg_input(g, "k", 3, (int64_t[]){cfg.b, cfg.skv, kvh * cfg.d})
                  : tg_input(g, "k", 4, (int64_t[]){cfg.b, kvh, cfg.skv, cfg.d});
    in[2] = three ? tg_input(g, "v", 3, (int64_t[]){cfg.b, cfg.skv, kvh * cfg.dv})
                  : tg_input(g, "v", 4, (int64_t[]){cfg.b, kvh, cfg.skv, cfg.dv});
    int n_in = 3;
    if (cfg.mask == M_ADD_FULL || cfg.refuse == R_SHORT_MASK)
        in[n_in++] = tg_input(g, "mask", 2, (int64_t[]){cfg.sq, cfg.skv - (cfg.refuse == R_SHORT_MASK)});
    if (cfg.mask == M_KEEP_TRUE) {
        int64_t dims[2] = {cfg.sq, cfg.skv}, n = cfg.sq * cfg.skv;
        unsigned char *m = malloc((size_t)n);
        for (int64_t e = 0; e < n; e++) m[e] = e >= cfg.skv && (e * 7 + e / 5) % 4 != 0;
        in[n_in++] = pu_const(tg_ctx, g, "mask", SMELT_DT_BOOL, 2, dims, m);
        free(m);
    }
    gr_node *n = tg_node_attrs(g, OP_ATTENTION, "attention", n_in, in);
    if (three) {
        pu_attr_int(tg_ctx, g, n, "q_num_heads", cfg.h);
        pu_attr_int(tg_ctx, g, n, "kv_num_heads", kvh);
    }
    if (cfg.mask == M_CAUSAL) pu_attr_int(tg_ctx, g, n, "is_causal", 1);
    if (cfg.scale == S_MUL) pu_attr_float(tg_ctx, g, n, "scale", 0.3f);
    if (cfg.refuse == R_SOFTCAP) pu_attr_float(tg_ctx, g, n, "softcap", 2.0f);
    tg_output(g, op1(g, OP_RELU, "relu", tg_import(g, n)));
}

/* ---- compiled against the decomposed graph's reference kernels ---- */

static int count_op(const gr_graph *g, op_kind k)
{
    int n = 0;
    for (int i = 0; i < g->nodes.len; i++) n += ((const gr_node *)g->nodes.items[i])->op == k;
    return n;
}

static void check_compiled(tg_builder build)
{
    gr_graph *g = tg_build(build);
    int n_in = g->inputs.len;
    smelt_tensor in[4], want = {0}, got = {0};
    for (int i = 0; i < n_in; i++) { /* values in [-2, 2), some -1e4 in an additive mask */
        in[i] = gr_value_info(g->inputs.items[i]);
        int64_t n = smelt_tensor_numel(&in[i]);
        float *d = malloc(sizeof(float) * (size_t)n);
        bool mask = !strcmp(((gr_value *)g->inputs.items[i])->name, "mask");
        for (int64_t k = 0; k < n; k++)
            d[k] = mask && (k * 5 + i) % 7 == 0 ? -1e4f : (float)((k * 2654435761u + (uint64_t)i * 97) % 4096) / 1024.0f - 2.0f;
        in[i].data = d;
    }
    smelt_model *m = smelt_model_from_graph(g);
    smelt_status s = smelt_model_run_reference(tg_ctx, m, in, n_in, &want, 1);
    smelt_options o;
    smelt_options_init(&o);
    if (s == SMELT_OK) s = smelt_model_compile(tg_ctx, m, &o);
    if (s == SMELT_OK) s = smelt_model_run(tg_ctx, m, in, n_in, &got, 1);
    if (s != SMELT_OK) fprintf(stderr, "%s: %s\n", cfg.name, smelt_ctx_message(tg_ctx));
    CHECK(s == SMELT_OK);
    if (count_op(m->graph, OP_FUSED_ATTENTION) != 1) fprintf(stderr, "%s: not fused when compiled\n", cfg.name);
    CHECK(count_op(m->graph, OP_FUSED_ATTENTION) == 1);
    int64_t n = smelt_tensor_numel(&want);
    CHECK(s != SMELT_OK || smelt_tensor_numel(&got) == n);
    for (int64_t i = 0; s == SMELT_OK && i < n; i++) {
        float w = ((const float *)want.data)[i], v = ((const float *)got.data)[i];
        if (!(fabsf(v - w) <= 1e-4f * (1.0f + fabsf(w)))) {
            fprintf(stderr, "%s: element %lld: got %.9g want %.9g\n", cfg.name, (long long)i, v, w);
            CHECK(false);
            break;
        }
    }
    smelt_tensor_release(&want);
    smelt_tensor_release(&got);
    for (int i = 0; i < n_in; i++) free(in[i].data);
    smelt_model_free(m);
    smelt_ctx_clear(tg_ctx);
}

/* ---- cases ---- */

static const att_cfg k_fused[] = {
    /* name, B, H, Sq, Skv, D, Dv, split Q, split V, merge, K form, scale, mask */
    {"bert form: 3-D split, row mask, Mul scale", 1, 3, 70, 70, 16, 16, true, true, true, K_SPLIT, S_MUL, M_ADD_ROW, 0},
    {"4-D operands, K^T by perm 0,1,3,2, Div", 2, 2, 67, 130, 8, 12, false, false, false, K_BHSD, S_DIV, M_NONE, 0},
    {"K given transposed, full mask first", 1, 2, 9, 75, 12, 5, true, false, false, K_BHDS, S_MUL, M_ADD_FULL, 0},
    {"one query row (decoding), 3-D", 2, 3, 1, 37, 13, 9, true, true, true, K_SPLIT, S_DIV, M_ADD_ROW, 0},
    {"one query row, K^T given, 3 key blocks", 1, 2, 1, 300, 16, 16, false, false, true, K_BHDS, S_MUL, M_NONE, 0},
    {"Where(m, fill, s), scales on Q and K", 1, 2, 65, 65, 16, 16, true, true, true, K_SPLIT, S_QK, M_FILL_TRUE, 0},
    {"Where(m, s, fill)", 2, 1, 20, 33, 24, 8, false, true, false, K_SPLIT, S_NONE, M_KEEP_TRUE, 0},
    {"causal tril with -inf, 2 key blocks", 1, 2, 150, 150, 16, 16, true, true, true, K_SPLIT, S_DIV, M_CAUSAL, 0},
};

static const att_cfg k_refused[] = {
    {"scores are an output", 1, 2, 5, 6, 4, 4, true, true, true, K_SPLIT, S_MUL, M_NONE, R_SCORES_OUT},
    {"softmax over axis 2", 1, 2, 5, 6, 4, 4, true, true, true, K_SPLIT, S_MUL, M_NONE, R_AXIS2},
    {"per-column scale", 1, 2, 5, 6, 4, 4, true, true, true, K_SPLIT, S_NONE, M_NONE, R_COL_SCALE},
    {"heads broadcast by MatMul", 1, 2, 5, 6, 4, 4, true, true, true, K_SPLIT, S_MUL, M_NONE, R_HEAD_BCAST},
    {"mask widens the batch", 1, 2, 5, 6, 4, 4, true, true, false, K_SPLIT, S_MUL, M_NONE, R_BAD_MASK},
    {"mask broadcast along the keys is fused", 1, 2, 5, 6, 4, 4, true, true, true, K_SPLIT, S_MUL, M_NONE, R_KEY_MASK},
};

static const att_cfg k_op23[] = {
    {"Attention 4-D, default scale", 1, 2, 70, 70, 16, 16, false, false, false, 0, S_NONE, M_NONE, 0},
    {"Attention 3-D, float mask, causal", 2, 3, 33, 33, 8, 8, true, true, true, 0, S_MUL, M_ADD_FULL, 0},
    {"Attention bool mask, a row masked whole", 1, 2, 5, 9, 8, 4, false, false, false, 0, S_NONE, M_KEEP_TRUE, 0},
    {"Attention one query row", 1, 2, 1, 40, 16, 16, false, false, false, 0, S_MUL, M_NONE, 0},
    {"Attention softcap stays", 1, 2, 5, 9, 8, 4, false, false, false, 0, S_NONE, M_NONE, R_SOFTCAP},
    {"Attention grouped heads stay", 1, 2, 5, 9, 8, 4, true, true, true, 0, S_NONE, M_NONE, R_GQA},
    {"Attention short mask stays", 1, 2, 5, 9, 8, 4, false, false, false, 0, S_NONE, M_NONE, R_SHORT_MASK},
};

/* The graph's node list with the pass off: what a refusal must leave. */
static void unchanged_ops(char *out, size_t cap)
{
    gr_graph *g = tg_build(attention);
    tg_ops(g, out, cap);
    gr_graph_free(g);
}

int main(void)
{
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_fused); i++) {
        cfg = k_fused[i];
        tg_check_within(cfg.name, attention, pass_fuse_attention, "FusedAttention,Relu", 1e-5);
        check_compiled(attention);
    }
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_op23); i++) {
        cfg = k_op23[i];
        bool fused = cfg.refuse == R_NONE;
        tg_check_within(cfg.name, attention_op, pass_fuse_attention,
                        fused ? "FusedAttention,Relu" : "Attention,Relu", 1e-5);
        if (fused) check_compiled(attention_op);
    }
    /* the causal tril mask became the flag (no mask input) */
    cfg = k_fused[SMELT_ARRAY_LEN(k_fused) - 1];
    gr_graph *g = tg_build(attention);
    CHECK(pass_fuse_attention(tg_ctx, g) == SMELT_OK);
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        if (n->op == OP_FUSED_ATTENTION) CHECK(n->n_inputs == 3 && gr_node_attr(n, "causal"));
    }
    gr_graph_free(g);
    /* GPU targets keep the unfused ops: the fused kernel is a CPU micro-kernel */
    cfg = k_fused[0];
    g = tg_build(attention);
    g->hw.gpu_threads = 64;
    int before = g->nodes.len;
    CHECK(pass_fuse_attention(tg_ctx, g) == SMELT_OK && g->nodes.len == before);
    gr_graph_free(g);
    for (size_t i = 0; i < SMELT_ARRAY_LEN(k_refused); i++) {
        char ops[1024];
        cfg = k_refused[i];
        if (cfg.refuse == R_KEY_MASK) { /* not a refusal: in the list for its graph */
            tg_check_within(cfg.name, attention, pass_fuse_attention, "FusedAttention,Relu", 1e-5);
            check_compiled(attention);
            continue;
        }
        unchanged_ops(ops, sizeof ops);
        tg_check_within(cfg.name, attention, pass_fuse_attention, ops, 0);
    }
    TEST_MAIN_END();
}
