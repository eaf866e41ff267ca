/* Schedule fuzzing per op family: a schedule must never change results.
 *
 * For one or more ONNX node tests per op family, the node's tensor
 * expressions are lowered under the default schedule and under random legal
 * schedules (sch_random: splits, reorders, fuses, vectorize/unroll/parallel,
 * inlining and compute_at), run with the tir interpreter on the test's own
 * inputs, and compared with the op's reference kernel.  The lowered loop IR
 * is what code generation consumes, so this checks scheduling and lowering
 * for every family without paying a C compile per schedule. */
#include <stdlib.h>
#include <string.h>

#include "api/smelt_internal.h"
#include "exec/exec.h"
#include "frontend/onnx.h"
#include "lower/lower.h"
#include "ops/op.h"
#include "test_util.h"
#include "tir/interp.h"
#include "test_hw.h"

#define NODE_DIR "/usr/include/onnx/backend/test/data/node/"
#define SCHEDULES_PER_FAMILY 200

typedef struct family_case {
    const char *family;
    const char *tests[4]; /* node test folders; schedules are spread over them */
} family_case;

static const family_case cases[] = {
    {"elementwise", {"test_sigmoid", "test_clip", "test_relu"}},
    {"binary", {"test_add_bcast", "test_where_example"}},
    {"conv", {"test_basic_conv_with_padding", "test_conv_with_strides_padding"}},
    {"pool", {"test_maxpool_2d_pads", "test_averagepool_2d_pads"}},
    {"norm", {"test_softmax_axis_1", "test_batchnorm_epsilon", "test_instancenorm_example",
              "test_layer_normalization_3d_axis1_epsilon"}},
    {"linalg", {"test_matmul_3d", "test_gemm_default_single_elem_vector_bias",
                "test_einsum_batch_matmul"}},
    {"reduce", {"test_reduce_sum_keepdims_random", "test_argmax_keepdims_random",
                "test_cumsum_2d_axis_0"}},
    {"shape", {"test_transpose_all_permutations_0", "test_concat_2d_axis_1", "test_tile",
               "test_expand_dim_changed"}},
    {"data", {"test_slice", "test_gather_1", "test_depthtospace_example"}},
    {"resize", {"test_resize_upsample_scales_linear"}},
    {"quant", {"test_qlinearconv", "test_qlinearmatmul_3D", "test_dynamicquantizelinear",
               "test_quantizelinear_axis"}},
};

typedef struct node_case {
    smelt_model *model;
    const gr_node *node;
    smelt_tensor inputs[16];  /* the node's inputs, in node order */
    smelt_tensor want[8];     /* reference outputs */
    te_graph *te;
} node_case;

static bool load_inputs(smelt_ctx *ctx, const char *dir, node_case *nc)
{
    const gr_graph *g = nc->model->graph;
    int k = 0;
    for (int i = 0; i < g->inputs.len && i < 16; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
        smelt_tensor *t;
        if (onnx_tensor_load_pb(ctx, path, &t) != SMELT_OK) return false;
        nc->inputs[k++] = *t;
        free(t); /* keep the contents */
    }
    return true;
}

/* The node's input i: a graph input's test data, or a graph constant. */
static const smelt_tensor *node_input(const node_case *nc, int i)
{
    const gr_value *v = nc->node->inputs[i];
    if (!v) return NULL;
    if (v->constant) return v->constant;
    const gr_graph *g = nc->model->graph;
    for (int k = 0; k < g->inputs.len; k++)
        if (g->inputs.items[k] == v) return &nc->inputs[k];
    return NULL;
}

static bool small_int(const smelt_tensor *t)
{
    return (t->dtype == SMELT_DT_INT64 || t->dtype == SMELT_DT_INT32) && smelt_tensor_numel(t) <= 64;
}

static bool setup(smelt_ctx *ctx, const char *test, node_case *nc)
{
    char dir[512], path[1024];
    snprintf(dir, sizeof dir, NODE_DIR "%s", test);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    memset(nc, 0, sizeof *nc);
    nc->model = smelt_model_load(ctx, path);
    if (!nc->model || nc->model->graph->nodes.len != 1 || !load_inputs(ctx, dir, nc)) return false;
    nc->node = nc->model->graph->nodes.items[0];
    const smelt_tensor *in[16], *types[16];
    smelt_tensor typed[16];
    for (int i = 0; i < nc->node->n_inputs; i++) {
        in[i] = node_input(nc, i);
        types[i] = in[i] ? &typed[i] : NULL;
        if (!in[i]) continue;
        typed[i] = *in[i];
        bool known = nc->node->inputs[i]->constant || small_int(in[i]);
        if (!known) typed[i].data = NULL; /* a run-time input: a placeholder */
    }
    if (exec_node(ctx, nc->node, in, nc->want) != SMELT_OK) return false;
    return te_from_node(ctx, nc->node, types, nc->want, &nc->te) == SMELT_OK;
}

static void teardown(node_case *nc)
{
    for (int i = 0; i < 16; i++) smelt_tensor_release(&nc->inputs[i]);
    for (int i = 0; nc->node && i < nc->node->n_outputs; i++) smelt_free(nc->want[i].data);
    te_graph_free(nc->te);
    smelt_model_free(nc->model);
}

static bool close_enough(const smelt_tensor *want, const void *got, int64_t n)
{
    smelt_tensor g = *want;
    g.data = (void *)got;
    for (int64_t i = 0; i < n; i++) {
        double a = op_get_f64(&g, i), b = op_get_f64(want, i);
        if (a != a && b != b) continue;
        if (!(fabs(a - b) <= 1e-5 + 1e-4 * fabs(b))) {
            fprintf(stderr, "  element %lld: got %.9g, want %.9g\n", (long long)i, a, b);
            return false;
        }
    }
    return true;
}

/* Bind a function parameter: placeholders in te order map to present node inputs. */
static bool bind_params(tir_interp *it, const ir_func *f, node_case *nc, void **outs)
{
    int in_k = 0, out_k = 0;
    for (int p = 0; p < f->n_params; p++) {
        ir_buffer *b = f->params[p];
        int64_t n = 1;
        for (int d = 0; d < b->rank; d++) n *= b->shape[d];
        void *data;
        if (b->kind == IR_BUF_OUTPUT) {
            data = outs[out_k++] = calloc((size_t)(n ? n : 1), smelt_dtype_size(b->dtype));
        } else {
            while (in_k < nc->node->n_inputs && !nc->node->inputs[in_k]) in_k++;
            data = node_input(nc, in_k++)->data;
        }
        if (tir_interp_bind_buffer(it, b, data, n) != SMELT_OK) return false;
    }
    return true;
}

static bool run_schedule(smelt_ctx *ctx, node_case *nc, const sch_schedule *s, const char *what)
{
    sch_state *st = NULL;
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder b;
    ir_builder_init(&b, &ar);
    ir_func *f = NULL;
    tir_interp it;
    tir_interp_init(&it, ctx);
    void *outs[8] = {0};
    bool ok = sch_state_build(ctx, nc->te, s, &st) == SMELT_OK &&
              lower_func(ctx, st, &b, "f", &f) == SMELT_OK && bind_params(&it, f, nc, outs) &&
              tir_interp_run(&it, f->body) == SMELT_OK;
    for (int o = 0, k = 0; ok && o < nc->node->n_outputs; o++) {
        if (!nc->node->outputs[o]) continue;
        ok = close_enough(&nc->want[o], outs[k++], smelt_tensor_numel(&nc->want[o]));
    }
    if (!ok) {
        smelt_strbuf sb;
        smelt_strbuf_init(&sb);
        sch_schedule_print(s, &sb);
        fprintf(stderr, "%s: mismatch or error (%s) under schedule:\n%s", what,
                smelt_ctx_message(ctx), smelt_strbuf_cstr(&sb));
        smelt_strbuf_fini(&sb);
    }
    for (int i = 0; i < 8; i++) free(outs[i]);
    tir_interp_fini(&it);
    smelt_arena_fini(&ar);
    sch_state_free(st);
    smelt_ctx_clear(ctx);
    return ok;
}

static void fuzz_family(const family_case *fc)
{
    smelt_ctx *ctx = smelt_ctx_new();
    int n_tests = 0, passed = 0, total = 0;
    while (n_tests < 4 && fc->tests[n_tests]) n_tests++;
    for (int t = 0; t < n_tests; t++) {
        node_case nc;
        bool ready = setup(ctx, fc->tests[t], &nc);
        if (!ready) fprintf(stderr, "%s: setup failed: %s\n", fc->tests[t], smelt_ctx_message(ctx));
        CHECK(ready);
        smelt_ctx_clear(ctx);
        int share = SCHEDULES_PER_FAMILY / n_tests + (t < SCHEDULES_PER_FAMILY % n_tests);
        for (int k = 0; ready && k <= share; k++) {
            sch_schedule s;
            sch_schedule_init(&s);
            bool ok = k == 0 ? sch_default(ctx, nc.te, test_hw(8), &s) == SMELT_OK
                             : sch_random(ctx, nc.te, (uint64_t)(t * 1000 + k), 10, &s) == SMELT_OK;
            char what[160];
            snprintf(what, sizeof what, "%s/%s %s %d", fc->family, fc->tests[t],
                     k == 0 ? "default" : "random", k);
            ok = ok && run_schedule(ctx, &nc, &s, what);
            CHECK(ok);
            passed += ok;
            total += k > 0;
            sch_schedule_fini(&s);
        }
        teardown(&nc);
    }
    printf("%-12s %d random schedules + defaults, %d ok\n", fc->family, total, passed);
    smelt_ctx_free(ctx);
}

int main(void)
{
    for (size_t i = 0; i < SMELT_ARRAY_LEN(cases); i++) fuzz_family(&cases[i]);
    TEST_MAIN_END();
}
