/* The smelt.gemm_f32 micro-kernel (codegen/microkernel.c) compiled for every
 * target the host runs (each takes its own register block: AVX-512, AVX2,
 * plain vectors), reached through tensorize, on shapes with whole blocks,
 * row and column edges and a transposed B (the strided path), against the
 * reference kernels: MatMul's eval, and Gemm's with transB for B^T.
 * (test_tensorize covers the legality rules and the interpreter on a
 * matrix too small for a block.) */
#include "lower/lower.h"
#include "op_test_util.h"
#include "test_codegen_util.h"

extern const op_def op_def_MATMUL, op_def_GEMM;
const op_def *const test_link_anchor[] = {&op_def_MATMUL, &op_def_GEMM};

typedef struct uk_case {
    int64_t m, k, n;
    bool trans_b; /* B is [N, K] */
    const char *schedule;
} uk_case;

static const uk_case k_cases[] = {
    {8, 16, 48, false, "tensorize C i0 smelt.gemm_f32"},  /* one AVX-512 block */
    {19, 9, 100, false, "tensorize C i0 smelt.gemm_f32"}, /* blocks and both edges */
    {30, 5, 97, false, "tile C i0 i1 16 96\ntensorize C i0.i smelt.gemm_f32"},
    {24, 1, 64, false, "reorder C i0 k i1\ntensorize C i0 smelt.gemm_f32"},
    {17, 33, 70, true, "tensorize C i0 smelt.gemm_f32"},
    /* rows below the blocks in a smaller vector block: 5 (AVX-512, AVX2), 1 */
    {29, 7, 96, false, "tensorize C i0 smelt.gemm_f32"},
    /* tiles of 8 and 7 rows: 7 (AVX-512), 2 and 1 (AVX2), 3 (plain vectors) */
    {15, 3, 48, false, "split C i0 8\ntensorize C i0.i smelt.gemm_f32"},
    /* one or two rows: blocks of WIDE vectors, then of VECS, then the edge
     * (150 columns: 144 in blocks on AVX2 and AVX-512, 6 or 4 + 2 plain) */
    {2, 37, 150, false, "tensorize C i0 smelt.gemm_f32"},
    {1, 20, 150, false, "tensorize C i0 smelt.gemm_f32"},
    {14, 11, 150, false, "tensorize C i0 smelt.gemm_f32"},
    {2, 9, 200, true, "tensorize C i0 smelt.gemm_f32"},
};

typedef struct mm_def {
    te_tensor *a, *b;
    bool trans_b;
} mm_def;

static ir_expr *mm_body(te_graph *g, ir_expr *const *idx, void *user)
{
    const mm_def *d = user;
    ir_axis k = te_reduce_axis(g, "k", d->a->buf->shape[1]);
    ir_expr *kv = ir_var_ref(&g->b, k.var);
    ir_expr *ia[2] = {idx[0], kv}, *ib[2] = {d->trans_b ? idx[1] : kv, d->trans_b ? kv : idx[1]};
    ir_expr *prod = ir_mul(&g->b, te_read(g, d->a, ia), te_read(g, d->b, ib));
    return te_reduce(g, IR_REDUCE_SUM, prod, 1, &k);
}

static te_graph *matmul_te(smelt_ctx *ctx, const uk_case *c, mm_def *d)
{
    te_graph *g = te_graph_new(ctx);
    int64_t sa[2] = {c->m, c->k}, sb[2] = {c->trans_b ? c->n : c->k, c->trans_b ? c->k : c->n},
            sc[2] = {c->m, c->n};
    d->a = te_placeholder(g, "A", SMELT_DT_FLOAT32, 2, sa);
    d->b = te_placeholder(g, "B", SMELT_DT_FLOAT32, 2, sb);
    d->trans_b = c->trans_b;
    te_mark_output(g, te_compute(g, "C", SMELT_DT_FLOAT32, 2, sc, mm_body, d, "reduce"));
    return g;
}

static float *random_data(int64_t n, uint32_t seed)
{
    float *p = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) / 8388608.0f - 1.0f;
    }
    return p;
}

/* C from the op reference kernels: MatMul, or Gemm with transB = 1. */
static smelt_tensor reference(const uk_case *c, smelt_tensor *a, smelt_tensor *b)
{
    opt_node t;
    opt_init(&t, NULL, c->trans_b ? OP_GEMM : OP_MATMUL, 13, 2, 1);
    if (c->trans_b) {
        gr_attr tb = {.name = "transB", .type = GR_ATTR_INT, .i = 1};
        opt_attrs(&t, &tb, 1);
    }
    const smelt_tensor *in[2] = {a, b};
    CHECK(opt_import(&t) == SMELT_OK);
    opt_bind_ptrs(&t, in, 2);
    CHECK(opt_run_reference(&t) == SMELT_OK);
    smelt_tensor out = t.out[0];
    t.out[0].data = NULL; /* now the caller's */
    opt_fini(&t);
    return out;
}

static bool calls_kernel(const char *src) { return src && strstr(src, "smelt_uk_gemm_f32(&"); }

static void check_case(const uk_case *c, int ci)
{
    smelt_ctx *ctx = smelt_ctx_new();
    mm_def d;
    te_graph *g = matmul_te(ctx, c, &d);
    smelt_tensor a = opt_tensor(SMELT_DT_FLOAT32, 2, d.a->buf->shape, random_data(c->m * c->k, 5));
    smelt_tensor b = opt_tensor(SMELT_DT_FLOAT32, 2, d.b->buf->shape, random_data(c->k * c->n, 9));
    smelt_tensor want = reference(c, &a, &b);
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder bld;
    ir_builder_init(&bld, &ar);
    sch_schedule s;
    sch_schedule_init(&s);
    sch_state *st = NULL;
    ir_func *f = NULL;
    smelt_status r = sch_schedule_parse(ctx, c->schedule, &s);
    if (r == SMELT_OK) r = sch_state_build(ctx, g, &s, &st);
    if (r == SMELT_OK) r = lower_func(ctx, st, &bld, "mm", &f);
    if (r != SMELT_OK) fprintf(stderr, "case %d: %s\n", ci, smelt_ctx_message(ctx));
    CHECK(r == SMELT_OK);
    const cg_target *targets[3];
    int nt = r == SMELT_OK ? cgt_targets(targets) : 0;
    for (int ti = 0; ti < nt; ti++) {
        cgt_prog t;
        cgt_init(&t);
        f->comment = "micro-kernel test";
        t.funcs[t.p.n_funcs++] = f;
        cgt_call(&t, f, (ir_slot[]){SLOT_IN(0), SLOT_IN(1), SLOT_OUT(0)});
        cgt_io(&t.inputs[t.p.n_inputs++], "A", SMELT_DT_FLOAT32, 2, a.dims);
        cgt_io(&t.inputs[t.p.n_inputs++], "B", SMELT_DT_FLOAT32, 2, b.dims);
        cgt_io(&t.outputs[t.p.n_outputs++], "C", SMELT_DT_FLOAT32, 2, want.dims);
        void *h;
        char *src;
        smelt_rt_model *rm = cgt_compile(&t, targets[ti], &h, &src);
        float *got = calloc((size_t)(c->m * c->n), sizeof(float));
        bool ok = rm != NULL && calls_kernel(src);
        if (ok) {
            const void *in[2] = {a.data, b.data};
            void *out[1] = {got};
            size_t in_b[2] = {sizeof(float) * (size_t)(c->m * c->k),
                              sizeof(float) * (size_t)(c->k * c->n)};
            size_t out_b[1] = {sizeof(float) * (size_t)(c->m * c->n)};
            ok = smelt_rt_model_run(rm, in, in_b, 2, out, out_b, 1) == SMELT_RT_OK;
        }
        const float *w = want.data;
        for (int64_t i = 0; ok && w && i < c->m * c->n; i++)
            if (!(fabs((double)got[i] - w[i]) <= 1e-4 * (1.0 + fabs((double)w[i])))) {
                fprintf(stderr, "case %d [%s]: element %lld: got %.9g, reference %.9g\n", ci,
                        targets[ti]->name, (long long)i, got[i], w[i]);
                ok = false;
            }
        CHECK(ok);
        free(got);
        cgt_release(rm, h, src);
        t.p.n_funcs = 0; /* f lives in this function's arena */
        cgt_fini(&t);
    }
    sch_state_free(st);
    sch_schedule_fini(&s);
    smelt_arena_fini(&ar);
    te_graph_free(g);
    free(a.data);
    free(b.data);
    smelt_free(want.data);
    smelt_ctx_free(ctx);
}

int main(void)
{
    cgt_setup_env();
    for (int i = 0; i < (int)SMELT_ARRAY_LEN(k_cases); i++) check_case(&k_cases[i], i);
    TEST_MAIN_END();
}
