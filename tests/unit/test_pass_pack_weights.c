/* pack_weights: MatMul/Gemm with constant B -> MatMulPacked; pack_runtime_b:
 * a large B computed at run time -> Reshape, Transpose, MatMulPacked.  Each case
 * checks the rewritten node sequence and that the reference executor gives
 * the unoptimised graph's outputs (tg_check), plus the packed layout. */
#include "ops/linalg.h"
#include "passes/pass_graphs.h"
#include "sched/sched.h"
#include "test_hw.h"

static smelt_status pack16(smelt_ctx *ctx, gr_graph *g)
{
    g->hw = *test_hw(16);
    return pass_pack_weights(ctx, g);
}

static smelt_status pack8(smelt_ctx *ctx, gr_graph *g)
{
    g->hw = *test_hw(8);
    return pass_pack_weights(ctx, g);
}

static gr_value *x_input(gr_graph *g, int rank, int64_t m, int64_t k)
{
    int64_t d[3] = {2, m, k};
    return tg_input(g, "x", rank, rank == 3 ? d : d + 1);
}

static gr_value *weights(gr_graph *g, const char *name, int64_t rows, int64_t cols)
{
    int64_t d[2] = {rows, cols};
    return tg_const(g, name, 2, d, -0.4f, 0.8f / (float)(rows * cols));
}

static gr_value *matmul(gr_graph *g, const char *name, gr_value *a, gr_value *b)
{
    gr_value *in[2] = {a, b};
    return tg_op(g, OP_MATMUL, name, 2, in);
}

static gr_value *gemm(gr_graph *g, gr_value *a, gr_value *b, gr_value *c, int64_t trans_a,
                      int64_t trans_b, float alpha)
{
    gr_value *in[3] = {a, b, c};
    gr_node *n = tg_node_attrs(g, OP_GEMM, "gemm", c ? 3 : 2, in);
    pu_attr_int(tg_ctx, g, n, "transA", trans_a);
    pu_attr_int(tg_ctx, g, n, "transB", trans_b);
    pu_attr_float(tg_ctx, g, n, "alpha", alpha);
    return tg_import(g, n);
}

static gr_value *bias(gr_graph *g, int64_t n)
{
    return tg_const(g, "b", 1, &n, 0.25f, -0.01f);
}

/* x [2, 9, 24] (3-D, as transformers have it) times W [24, 40], + b, Relu */
static void linear(gr_graph *g)
{
    gr_value *y = matmul(g, "mm", x_input(g, 3, 9, 24), weights(g, "w", 24, 40));
    gr_value *add[2] = {y, bias(g, 40)};
    y = tg_op(g, OP_ADD, "add", 2, add);
    tg_output(g, tg_op(g, OP_RELU, "relu", 1, &y));
}

static void classifier(gr_graph *g) /* Gemm transB with C [N] */
{
    tg_output(g, gemm(g, x_input(g, 2, 3, 50), weights(g, "w", 21, 50), bias(g, 21), 0, 1, 1.0f));
}

static void gemm_no_c(gr_graph *g)
{
    tg_output(g, gemm(g, x_input(g, 2, 5, 12), weights(g, "w", 12, 33), NULL, 0, 0, 1.0f));
}

static void gemm_scaled(gr_graph *g)
{
    tg_output(g, gemm(g, x_input(g, 2, 5, 12), weights(g, "w", 12, 33), NULL, 0, 0, 0.5f));
}

static void gemm_trans_a(gr_graph *g)
{
    tg_output(g, gemm(g, x_input(g, 2, 12, 5), weights(g, "w", 12, 33), NULL, 1, 0, 1.0f));
}

static void activations(gr_graph *g) /* B is not a constant */
{
    int64_t d[2] = {24, 40};
    tg_output(g, matmul(g, "mm", x_input(g, 2, 9, 24), tg_input(g, "b", 2, d)));
}

/* B computed at run time, large enough (768 KB) and with rows enough: packed
 * by a Reshape and a Transpose (pack_runtime_b) */
static void activations_large(gr_graph *g)
{
    int64_t d[2] = {128, 1536};
    tg_output(g, matmul(g, "mm", x_input(g, 2, 96, 128), tg_input(g, "b", 2, d)));
}

static void activations_ragged(gr_graph *g) /* N = 1000: no whole panels, stays */
{
    int64_t d[2] = {256, 1000};
    tg_output(g, matmul(g, "mm", x_input(g, 2, 96, 256), tg_input(g, "b", 2, d)));
}

static void activations_few_rows(gr_graph *g) /* 9 rows do not pay for the packing */
{
    int64_t d[2] = {128, 1536};
    tg_output(g, matmul(g, "mm", x_input(g, 2, 9, 128), tg_input(g, "b", 2, d)));
}

static smelt_status pack_runtime16(smelt_ctx *ctx, gr_graph *g)
{
    g->hw = *test_hw(16);
    return pass_pack_runtime_b(ctx, g);
}

static smelt_status pack_runtime8(smelt_ctx *ctx, gr_graph *g)
{
    g->hw = *test_hw(8);
    return pass_pack_runtime_b(ctx, g);
}

static void shared(gr_graph *g) /* two products of one weight */
{
    gr_value *w = weights(g, "w", 24, 40);
    tg_output(g, matmul(g, "mm1", x_input(g, 2, 9, 24), w));
    int64_t d[2] = {9, 24};
    tg_output(g, matmul(g, "mm2", tg_input(g, "x2", 2, d), w));
}

static void narrow(gr_graph *g) /* N = 3: not vectorised, nothing to pack for */
{
    tg_output(g, matmul(g, "mm", x_input(g, 2, 9, 24), weights(g, "w", 24, 3)));
}

static void row_vector(gr_graph *g) /* 1-D A: no rows to tile */
{
    int64_t k = 24;
    tg_output(g, matmul(g, "mm", tg_input(g, "x", 1, &k), weights(g, "w", 24, 40)));
}

static void output_is_product(gr_graph *g)
{
    tg_output(g, matmul(g, "mm", x_input(g, 2, 4, 8), weights(g, "w", 8, 20)));
}

static const gr_node *find_op(const gr_graph *g, op_kind op, int nth)
{
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        if (n->op == op && nth-- == 0) return n;
    }
    return NULL;
}

/* Bp[p, k, c] = B[k, p*nb + c] (B^T's when trans), zero past N. */
static bool panels_hold(const gr_value *bp, const gr_value *b, bool trans, int64_t nb)
{
    int64_t k = b->dims[trans ? 1 : 0], n = b->dims[trans ? 0 : 1], p = (n + nb - 1) / nb;
    if (!bp || !bp->constant || bp->rank != 3 || bp->dims[0] != p || bp->dims[1] != k ||
        bp->dims[2] != nb)
        return false;
    const float *pd = bp->constant->data, *bd = b->constant->data;
    for (int64_t i = 0; i < p; i++)
        for (int64_t kk = 0; kk < k; kk++)
            for (int64_t c = 0; c < nb; c++) {
                int64_t j = i * nb + c;
                float want = j >= n ? 0.0f : bd[trans ? j * k + kk : kk * n + j];
                if (pd[(i * k + kk) * nb + c] != want) return false;
            }
    return true;
}

static void check_layout(tg_builder build, smelt_status (*pass)(smelt_ctx *, gr_graph *),
                         int lanes, int64_t m, op_kind op, bool trans)
{
    gr_graph *before = tg_build(build), *after = tg_build(build);
    CHECK(pass(tg_ctx, after) == SMELT_OK);
    const gr_node *orig = find_op(before, op, 0);
    const gr_node *p = find_op(after, OP_MATMUL_PACKED, 0);
    CHECK(orig && p);
    if (orig && p) {
        const gr_value *b = orig->inputs[1];
        int64_t k = b->dims[trans ? 1 : 0], n = b->dims[trans ? 0 : 1];
        int64_t nb = sch_matmul_panel_width(m, n, k, test_hw(lanes));
        CHECK(nb > 0 && nb % lanes == 0);
        CHECK(panels_hold(p->inputs[1], b, trans, nb));
    }
    gr_graph_free(before);
    gr_graph_free(after);
}

static void check_details(void)
{
    check_layout(linear, pack16, 16, 9, OP_MATMUL, false);
    check_layout(linear, pack8, 8, 9, OP_MATMUL, false);
    check_layout(classifier, pack16, 16, 3, OP_GEMM, true);
    check_layout(gemm_no_c, pack8, 8, 5, OP_GEMM, false);

    /* products of one weight share its packed copy; the plain one is swept */
    gr_graph *g = tg_build(shared);
    CHECK(pack16(tg_ctx, g) == SMELT_OK);
    const gr_node *p0 = find_op(g, OP_MATMUL_PACKED, 0), *p1 = find_op(g, OP_MATMUL_PACKED, 1);
    CHECK(p0 && p1 && p0->inputs[1] == p1->inputs[1]);
    int consts = 0;
    for (int i = 0; i < g->values.len; i++) consts += ((gr_value *)g->values.items[i])->constant != NULL;
    CHECK(consts == 1);
    gr_graph_free(g);

    /* a graph output keeps its name */
    g = tg_build(output_is_product);
    CHECK(pack16(tg_ctx, g) == SMELT_OK);
    CHECK(strcmp(((gr_value *)g->outputs.items[0])->name, "mm:0") == 0);
    gr_graph_free(g);

    /* no vector lanes known: nothing changes */
    g = tg_build(linear);
    CHECK(pass_pack_weights(tg_ctx, g) == SMELT_OK && !find_op(g, OP_MATMUL_PACKED, 0));
    gr_graph_free(g);
}

int main(void)
{
    tg_check("linear", linear, pack16, "MatMulPacked,Add,Relu");
    tg_check("linear, 8 lanes", linear, pack8, "MatMulPacked,Add,Relu");
    tg_check("classifier Gemm", classifier, pack16, "MatMulPacked,Add");
    tg_check("Gemm without C", gemm_no_c, pack16, "MatMulPacked");
    tg_check("Gemm with alpha stays", gemm_scaled, pack16, "Gemm");
    tg_check("Gemm with transA stays", gemm_trans_a, pack16, "Gemm");
    tg_check("activations stay", activations, pack16, "MatMul");
    tg_check("small activations stay at run time", activations, pack_runtime16, "MatMul");
    tg_check("large run-time B packed", activations_large, pack_runtime16,
             "Reshape,Transpose,MatMulPacked");
    tg_check("large run-time B packed, 8 lanes", activations_large, pack_runtime8,
             "Reshape,Transpose,MatMulPacked");
    tg_check("constant weights are pack_weights'", linear, pack_runtime16, "MatMul,Add,Relu");
    tg_check("ragged run-time B stays", activations_ragged, pack_runtime16, "MatMul");
    tg_check("few rows stay", activations_few_rows, pack_runtime16, "MatMul");
    tg_check("shared weights", shared, pack16, "MatMulPacked,MatMulPacked");
    tg_check("narrow N stays", narrow, pack16, "MatMul");
    tg_check("1-D A stays", row_vector, pack16, "MatMul");
    check_details();
    TEST_MAIN_END();
}
