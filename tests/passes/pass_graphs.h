/* Small hand-built graphs for the pass tests: build a graph twice, run a
 * pass on one copy, print both, and compare outputs of the reference
 * executor on seeded inputs (every rewrite must keep results). */
#ifndef SMELT_TEST_PASS_GRAPHS_H
#define SMELT_TEST_PASS_GRAPHS_H

#include <math.h>
#include <stdlib.h>

#include "exec/exec.h"
#include "ops/op.h"
#include "passes/pass_util.h"
#include "passes/passes.h"
#include "test_util.h"

static smelt_ctx tg_ctx_storage;
static smelt_ctx *tg_ctx = &tg_ctx_storage;

static inline gr_value *tg_input(gr_graph *g, const char *name, int rank, const int64_t *dims)
{
    gr_value *v = gr_value_new(g, name);
    v->dtype = SMELT_DT_FLOAT32;
    v->rank = rank;
    for (int i = 0; i < rank; i++) v->dims[i] = dims[i];
    v->is_input = true;
    smelt_ptrvec_push(&g->inputs, v);
    return v;
}

/* values[i] = base + step*i */
static inline gr_value *tg_const(gr_graph *g, const char *name, int rank, const int64_t *dims,
                          float base, float step)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *d = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) d[i] = base + step * (float)i;
    gr_value *v = pu_const_f32(tg_ctx, g, name, rank, dims, d);
    free(d);
    return v;
}

static inline gr_value *tg_const_i64(gr_graph *g, const char *name, int n, const int64_t *vals)
{
    int64_t dims[1] = {n};
    return pu_const_i64(tg_ctx, g, name, 1, dims, vals);
}

/* A node; attributes are added by the caller before tg_import. */
static inline gr_node *tg_node_attrs(gr_graph *g, op_kind kind, const char *name, int ni,
                              gr_value *const *in)
{
    return pu_node_new(tg_ctx, g, name, kind, in, ni, 1);
}

static inline gr_value *tg_import(gr_graph *g, gr_node *n)
{
    CHECK(pu_node_import(tg_ctx, g, n) == SMELT_OK);
    return n->outputs[0];
}

static inline gr_value *tg_op(gr_graph *g, op_kind kind, const char *name, int ni, gr_value *const *in)
{
    return tg_import(g, tg_node_attrs(g, kind, name, ni, in));
}

static inline void tg_output(gr_graph *g, gr_value *v)
{
    v->is_output = true;
    smelt_ptrvec_push(&g->outputs, v);
}

typedef void (*tg_builder)(gr_graph *g);

static inline gr_graph *tg_build(tg_builder b)
{
    gr_graph *g = gr_graph_new();
    g->name = "t";
    g->opset = 13;
    b(g);
    CHECK(pass_infer_shapes(tg_ctx, g) == SMELT_OK);
    return g;
}

/* "Op,Op,..." in node order. */
static inline void tg_ops(const gr_graph *g, char *out, size_t cap)
{
    out[0] = '\0';
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s%s", i ? "," : "", n->op_type);
    }
}

static inline void tg_print(const char *title, const gr_graph *g)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    gr_graph_print(g, &sb);
    printf("-- %s\n%s", title, smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
}

static inline void tg_run(gr_graph *g, smelt_tensor *outs)
{
    smelt_tensor ins[8];
    memset(ins, 0, sizeof ins);
    for (int i = 0; i < g->inputs.len; i++) {
        ins[i] = gr_value_info(g->inputs.items[i]);
        int64_t n = smelt_tensor_numel(&ins[i]);
        float *d = malloc(sizeof(float) * (size_t)(n ? n : 1));
        for (int64_t k = 0; k < n; k++) d[k] = (float)(((k * 37 + i * 11) % 19) - 9) / 7.0f;
        ins[i].data = d;
    }
    memset(outs, 0, sizeof(smelt_tensor) * (size_t)g->outputs.len);
    smelt_status s = exec_graph(tg_ctx, g, EXEC_REFERENCE, ins, outs);
    if (s != SMELT_OK) fprintf(stderr, "exec: %s\n", tg_ctx->message);
    CHECK(s == SMELT_OK);
    for (int i = 0; i < g->inputs.len; i++) free(ins[i].data);
}

/* Distance between two elements: 0 when equal (also both NaN, or the same
 * infinity), infinite when only one is NaN (a rewrite that makes a NaN must
 * fail any tolerance; fabs of a NaN difference would compare as small). */
static inline double tg_elem_diff(double want, double got)
{
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0.0 : INFINITY;
    if (want == got) return 0.0;
    return fabs(want - got);
}

/* The largest elementwise distance between two outputs of the same size. */
static inline double tg_worst_diff(const smelt_tensor *want, const smelt_tensor *got)
{
    int64_t n = smelt_tensor_numel(want);
    double worst = 0;
    for (int64_t k = 0; want->data && got->data && k < n; k++) {
        double d = tg_elem_diff(op_get_f64(want, k), op_get_f64(got, k));
        worst = d > worst ? d : worst;
    }
    return worst;
}

/* Run `pass` on one copy; the node sequence must be `want_ops` and the
 * outputs those of the untouched copy, within tol. */
static inline void tg_check_within(const char *title, tg_builder b,
                                   smelt_status (*pass)(smelt_ctx *, gr_graph *),
                                   const char *want_ops, double tol)
{
    gr_graph *before = tg_build(b), *after = tg_build(b);
    smelt_status s = pass(tg_ctx, after);
    if (s != SMELT_OK) fprintf(stderr, "%s: %s\n", title, tg_ctx->message);
    CHECK(s == SMELT_OK);
    CHECK(gr_graph_verify(tg_ctx, after) == SMELT_OK);
    tg_print(title, before);
    tg_print("after", after);
    char ops[1024];
    tg_ops(after, ops, sizeof ops);
    if (strcmp(ops, want_ops) != 0) fprintf(stderr, "%s: ops '%s', want '%s'\n", title, ops, want_ops);
    CHECK(strcmp(ops, want_ops) == 0);
    smelt_tensor o1[4], o2[4];
    tg_run(before, o1);
    tg_run(after, o2);
    for (int i = 0; i < before->outputs.len; i++) {
        bool same_size = smelt_tensor_numel(&o1[i]) == smelt_tensor_numel(&o2[i]);
        CHECK(same_size);
        double worst = same_size ? tg_worst_diff(&o1[i], &o2[i]) : INFINITY;
        if (!(worst <= tol)) fprintf(stderr, "%s: output %d differs by %g\n", title, i, worst);
        CHECK(worst <= tol);
        smelt_free(o1[i].data);
        smelt_free(o2[i].data);
    }
    gr_graph_free(before);
    gr_graph_free(after);
}

static inline void tg_check(const char *title, tg_builder b,
                            smelt_status (*pass)(smelt_ctx *, gr_graph *), const char *want_ops)
{
    tg_check_within(title, b, pass, want_ops, 1e-4);
}

#endif
