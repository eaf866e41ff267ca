/* MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, LRN: import,
 * shape inference, reference kernels (hand-computed cases), errors. */
#include <stdlib.h>

#include "ops/pool.h"
#include "test_util.h"

typedef struct fixture {
    smelt_ctx *ctx;
    gr_graph *g;
    gr_node *node;
} fixture;

static fixture fx_new(op_kind op, const char *op_type, int n_out)
{
    fixture f = {smelt_ctx_new(), gr_graph_new(), NULL};
    f.node = gr_node_new(f.g, "pool0", op_type, op, 1, n_out);
    f.node->inputs[0] = gr_value_new(f.g, "x");
    f.node->outputs[0] = gr_value_new(f.g, "y");
    if (n_out > 1) f.node->outputs[1] = gr_value_new(f.g, "indices");
    f.node->attrs = smelt_arena_alloc(&f.g->arena, 16 * sizeof(gr_attr));
    return f;
}

static void fx_free(fixture *f)
{
    gr_graph_free(f->g);
    smelt_ctx_free(f->ctx);
}

static gr_attr *add_attr(fixture *f, const char *name, gr_attr_type type)
{
    gr_attr *a = &f->node->attrs[f->node->n_attrs++];
    a->name = name;
    a->type = type;
    return a;
}

static void attr_ints(fixture *f, const char *name, int n, const int64_t *v)
{
    gr_attr *a = add_attr(f, name, GR_ATTR_INTS);
    a->n = n;
    a->ints = smelt_arena_alloc(&f->g->arena, sizeof(int64_t) * (size_t)(n ? n : 1));
    memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
}

static void attr_int(fixture *f, const char *name, int64_t v)
{
    add_attr(f, name, GR_ATTR_INT)->i = v;
}

static void attr_float(fixture *f, const char *name, float v)
{
    add_attr(f, name, GR_ATTR_FLOAT)->f = v;
}

static void attr_str(fixture *f, const char *name, const char *s)
{
    gr_attr *a = add_attr(f, name, GR_ATTR_STRING);
    a->s = s;
    a->s_len = strlen(s);
}

static smelt_tensor tensor_of(smelt_dtype dt, int rank, const int64_t *dims, void *data)
{
    smelt_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
    t.data = data;
    return t;
}

/* import (if any) + infer + eval of the node on x; out[] data malloc'ed. */
static smelt_status fx_run(fixture *f, smelt_tensor *x, smelt_tensor *out)
{
    const op_def *def = op_get(f->node->op)->def;
    const smelt_tensor *ins[1] = {x};
    int n_out = f->node->n_outputs;
    memset(out, 0, sizeof(smelt_tensor) * (size_t)n_out);
    smelt_status s = def->import ? def->import(f->ctx, f->g, f->node) : SMELT_OK;
    if (s == SMELT_OK) s = def->infer(f->ctx, f->node, ins, out);
    if (s != SMELT_OK) return s;
    for (int i = 0; i < n_out; i++)
        out[i].data = calloc((size_t)(op_numel(&out[i]) + 1), smelt_dtype_size(out[i].dtype));
    return def->eval(f->ctx, f->node, ins, out);
}

static void check_values(const smelt_tensor *t, const double *want, int64_t n, double tol)
{
    CHECK(op_numel(t) == n);
    int bad = 0;
    for (int64_t i = 0; i < n && i < op_numel(t); i++) {
        double got = op_get_f64(t, i);
        if (fabs(got - want[i]) > tol * (1.0 + fabs(want[i])) && bad++ < 5)
            fprintf(stderr, "  element %lld: got %g, want %g\n", (long long)i, got, want[i]);
    }
    CHECK(bad == 0);
}

static void check_dims(const smelt_tensor *t, int rank, const int64_t *dims)
{
    CHECK(t->rank == rank);
    for (int i = 0; i < rank && i < t->rank; i++) CHECK(t->dims[i] == dims[i]);
}

static float g_x5[25], g_x4[16];

static void init_data(void)
{
    for (int i = 0; i < 25; i++) g_x5[i] = (float)(i + 1);
    for (int i = 0; i < 16; i++) g_x4[i] = (float)(i + 1);
}

static void test_max_pool_pads(void)
{
    fixture f = fx_new(OP_MAX_POOL, "MaxPool", 1);
    attr_ints(&f, "kernel_shape", 2, (int64_t[]){5, 5});
    attr_ints(&f, "pads", 4, (int64_t[]){2, 2, 2, 2});
    smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 4, (int64_t[]){1, 1, 5, 5}, g_x5), y;
    CHECK(fx_run(&f, &x, &y) == SMELT_OK);
    check_dims(&y, 4, (int64_t[]){1, 1, 5, 5});
    static const double want[] = {13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25,
                                  25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25};
    check_values(&y, want, 25, 0);
    free(y.data);
    fx_free(&f);
}

static void test_max_pool_uint8(void)
{
    uint8_t x8[25];
    for (int i = 0; i < 25; i++) x8[i] = (uint8_t)(i * 10);
    fixture f = fx_new(OP_MAX_POOL, "MaxPool", 1);
    attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
    attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
    smelt_tensor x = tensor_of(SMELT_DT_UINT8, 4, (int64_t[]){1, 1, 5, 5}, x8), y;
    CHECK(fx_run(&f, &x, &y) == SMELT_OK);
    CHECK(y.dtype == SMELT_DT_UINT8);
    static const double want[] = {60, 80, 160, 180};
    check_values(&y, want, 4, 0);
    free(y.data);
    fx_free(&f);
}

static void test_ceil_mode(void)
{
    static const double want_max[] = {11, 12, 15, 16}, want_avg[] = {6, 7.5, 12, 13.5};
    for (int avg = 0; avg < 2; avg++) {
        fixture f = avg ? fx_new(OP_AVERAGE_POOL, "AveragePool", 1)
                        : fx_new(OP_MAX_POOL, "MaxPool", 1);
        attr_ints(&f, "kernel_shape", 2, (int64_t[]){3, 3});
        attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
        attr_int(&f, "ceil_mode", 1);
        smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 4, (int64_t[]){1, 1, 4, 4}, g_x4), y;
        CHECK(fx_run(&f, &x, &y) == SMELT_OK);
        check_dims(&y, 4, (int64_t[]){1, 1, 2, 2});
        check_values(&y, avg ? want_avg : want_max, 4, 1e-6);
        free(y.data);
        fx_free(&f);
    }
    /* The last window may not start in the end padding: 5 wide, k 2, s 2,
     * pads 1+1 -> ceil((5+2-2)/2)+1 = 4, but window 3 would start at 6-1=5 >= 5. */
    fixture f = fx_new(OP_MAX_POOL, "MaxPool", 1);
    attr_ints(&f, "kernel_shape", 1, (int64_t[]){2});
    attr_ints(&f, "strides", 1, (int64_t[]){2});
    attr_ints(&f, "pads", 2, (int64_t[]){1, 1});
    attr_int(&f, "ceil_mode", 1);
    smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 3, (int64_t[]){1, 1, 5}, g_x5), y;
    CHECK(fx_run(&f, &x, &y) == SMELT_OK);
    check_dims(&y, 3, (int64_t[]){1, 1, 3});
    static const double want[] = {1, 3, 5};
    check_values(&y, want, 3, 0);
    free(y.data);
    fx_free(&f);
}

static void test_dilations_and_indices(void)
{
    {
        fixture f = fx_new(OP_MAX_POOL, "MaxPool", 1);
        attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        attr_ints(&f, "dilations", 2, (int64_t[]){2, 2});
        smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 4, (int64_t[]){1, 1, 4, 4}, g_x4), y;
        CHECK(fx_run(&f, &x, &y) == SMELT_OK);
        static const double want[] = {11, 12, 15, 16};
        check_values(&y, want, 4, 0);
        free(y.data);
        fx_free(&f);
    }
    for (int col_major = 0; col_major < 2; col_major++) {
        fixture f = fx_new(OP_MAX_POOL, "MaxPool", 2);
        attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
        attr_int(&f, "storage_order", col_major);
        float x2[50];
        for (int i = 0; i < 50; i++) x2[i] = (float)(i % 25 + 1);
        smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 4, (int64_t[]){1, 2, 5, 5}, x2), y[2];
        CHECK(fx_run(&f, &x, y) == SMELT_OK);
        CHECK(y[1].dtype == SMELT_DT_INT64);
        check_dims(&y[1], 4, (int64_t[]){1, 2, 2, 2});
        static const double want_rm[] = {6, 8, 16, 18, 31, 33, 41, 43};
        static const double want_cm[] = {6, 16, 8, 18, 31, 41, 33, 43};
        static const double want_y[] = {7, 9, 17, 19, 7, 9, 17, 19};
        check_values(&y[0], want_y, 8, 0);
        check_values(&y[1], col_major ? want_cm : want_rm, 8, 0);
        free(y[0].data);
        free(y[1].data);
        fx_free(&f);
    }
}

static void test_average_pool_pads(void)
{
    {   /* count_include_pad */
        fixture f = fx_new(OP_AVERAGE_POOL, "AveragePool", 1);
        attr_ints(&f, "kernel_shape", 2, (int64_t[]){5, 5});
        attr_ints(&f, "pads", 4, (int64_t[]){2, 2, 2, 2});
        attr_int(&f, "count_include_pad", 1);
        smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 4, (int64_t[]){1, 1, 5, 5}, g_x5), y;
        CHECK(fx_run(&f, &x, &y) == SMELT_OK);
        static const double want[] = {2.52, 3.6, 4.8, 4.08, 3.24, 4.56, 6.4, 8.4, 7.04,
                                      5.52, 7.2, 10, 13, 10.8, 8.4, 6.96, 9.6, 12.4,
                                      10.24, 7.92, 6.12, 8.4, 10.8, 8.88, 6.84};
        check_values(&y, want, 25, 1e-6);
        free(y.data);
        fx_free(&f);
    }
    {   /* SAME_UPPER, pads excluded from the count */
        fixture f = fx_new(OP_AVERAGE_POOL, "AveragePool", 1);
        attr_ints(&f, "kernel_shape", 2, (int64_t[]){3, 3});
        attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
        attr_str(&f, "auto_pad", "SAME_UPPER");
        smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 4, (int64_t[]){1, 1, 5, 5}, g_x5), y;
        CHECK(fx_run(&f, &x, &y) == SMELT_OK);
        check_dims(&y, 4, (int64_t[]){1, 1, 3, 3});
        static const double want[] = {4, 5.5, 7, 11.5, 13, 14.5, 19, 20.5, 22};
        check_values(&y, want, 9, 1e-6);
        free(y.data);
        fx_free(&f);
    }
    {   /* SAME_LOWER, k 2: the single pad unit goes first */
        fixture f = fx_new(OP_AVERAGE_POOL, "AveragePool", 1);
        attr_ints(&f, "kernel_shape", 1, (int64_t[]){2});
        attr_str(&f, "auto_pad", "SAME_LOWER");
        smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 3, (int64_t[]){1, 1, 4}, g_x4), y;
        CHECK(fx_run(&f, &x, &y) == SMELT_OK);
        static const double want[] = {1, 1.5, 2.5, 3.5};
        check_values(&y, want, 4, 1e-6);
        free(y.data);
        fx_free(&f);
    }
}

static void test_global_pools(void)
{
    double x[12];
    for (int i = 0; i < 12; i++) x[i] = (i % 3 == 1) ? -i : i;
    for (int is_max = 0; is_max < 2; is_max++) {
        fixture f = is_max ? fx_new(OP_GLOBAL_MAX_POOL, "GlobalMaxPool", 1)
                           : fx_new(OP_GLOBAL_AVERAGE_POOL, "GlobalAveragePool", 1);
        smelt_tensor xt = tensor_of(SMELT_DT_FLOAT64, 4, (int64_t[]){1, 2, 2, 3}, x), y;
        CHECK(fx_run(&f, &xt, &y) == SMELT_OK);
        check_dims(&y, 4, (int64_t[]){1, 2, 1, 1});
        static const double want_avg[] = {5.0 / 6, 17.0 / 6}, want_max[] = {5, 11};
        check_values(&y, is_max ? want_max : want_avg, 2, 1e-12);
        free(y.data);
        fx_free(&f);
    }
}

static void test_lrn(void)
{
    float x[2 * 5 * 3];
    for (int i = 0; i < 30; i++) x[i] = (float)((i * 7) % 11) - 5.0f;
    fixture f = fx_new(OP_LRN, "LRN", 1);
    attr_float(&f, "alpha", 0.5f);
    attr_float(&f, "beta", 0.75f);
    attr_float(&f, "bias", 2.0f);
    attr_int(&f, "size", 4);
    smelt_tensor xt = tensor_of(SMELT_DT_FLOAT32, 3, (int64_t[]){2, 5, 3}, x), y;
    CHECK(fx_run(&f, &xt, &y) == SMELT_OK);
    double want[30];
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 5; c++)
            for (int s = 0; s < 3; s++) {
                double sq = 0; /* size 4: channels c-1 .. c+2 */
                for (int j = c - 1; j <= c + 2; j++)
                    if (j >= 0 && j < 5) sq += pow(x[(n * 5 + j) * 3 + s], 2);
                int i = (n * 5 + c) * 3 + s;
                want[i] = x[i] / pow(2.0 + 0.5 / 4 * sq, 0.75);
            }
    check_values(&y, want, 30, 1e-6);
    free(y.data);
    fx_free(&f);
}

static void test_symbolic_infer(void)
{
    fixture f = fx_new(OP_MAX_POOL, "MaxPool", 2);
    attr_ints(&f, "kernel_shape", 2, (int64_t[]){3, 3});
    attr_ints(&f, "strides", 2, (int64_t[]){2, 2});
    attr_str(&f, "auto_pad", "SAME_UPPER");
    const op_def *def = op_get(OP_MAX_POOL)->def;
    CHECK(def->import(f.ctx, f.g, f.node) == SMELT_OK);
    smelt_tensor x =
        tensor_of(SMELT_DT_FLOAT32, 4, (int64_t[]){GR_DIM_SYM(0), 8, GR_DIM_SYM(1), 9}, NULL);
    const smelt_tensor *ins[1] = {&x};
    smelt_tensor y[2];
    memset(y, 0, sizeof y);
    CHECK(def->infer(f.ctx, f.node, ins, y) == SMELT_OK);
    check_dims(&y[0], 4, (int64_t[]){GR_DIM_SYM(0), 8, GR_DIM_UNKNOWN, 5});
    check_dims(&y[1], 4, (int64_t[]){GR_DIM_SYM(0), 8, GR_DIM_UNKNOWN, 5});
    fx_free(&f);
}

static void expect_error(fixture *f, smelt_tensor *x, smelt_status code, const char *needle)
{
    smelt_tensor y[2];
    smelt_status s = fx_run(f, x, y);
    CHECK(s == code);
    CHECK_STR_CONTAINS(smelt_ctx_message(f->ctx), needle);
    CHECK_STR_CONTAINS(smelt_ctx_message(f->ctx), "node 'pool0' (");
    if (s == SMELT_OK)
        for (int i = 0; i < f->node->n_outputs; i++) free(y[i].data);
}

static void test_errors(void)
{
    {
        fixture f = fx_new(OP_MAX_POOL, "MaxPool", 1);
        smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 4, (int64_t[]){1, 1, 4, 4}, g_x4);
        expect_error(&f, &x, SMELT_ERR_ATTR, "attribute 'kernel_shape' is required");
        fx_free(&f);
    }
    {
        fixture f = fx_new(OP_AVERAGE_POOL, "AveragePool", 1);
        attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        attr_ints(&f, "pads", 3, (int64_t[]){1, 1, 1});
        smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 4, (int64_t[]){1, 1, 4, 4}, g_x4);
        expect_error(&f, &x, SMELT_ERR_ATTR, "'pads' has 3 values");
        fx_free(&f);
    }
    {
        fixture f = fx_new(OP_AVERAGE_POOL, "AveragePool", 1);
        attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 2, (int64_t[]){4, 4}, g_x4);
        expect_error(&f, &x, SMELT_ERR_SHAPE, "input X 'x' has rank 2, expected at least 3");
        fx_free(&f);
    }
    {
        fixture f = fx_new(OP_AVERAGE_POOL, "AveragePool", 1);
        attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        int64_t xi[16] = {0};
        smelt_tensor x = tensor_of(SMELT_DT_INT64, 4, (int64_t[]){1, 1, 4, 4}, xi);
        expect_error(&f, &x, SMELT_ERR_UNSUPPORTED, "unsupported dtype i64");
        fx_free(&f);
    }
    {
        fixture f = fx_new(OP_MAX_POOL, "MaxPool", 1);
        attr_ints(&f, "kernel_shape", 2, (int64_t[]){2, 2});
        attr_int(&f, "storage_order", 2);
        smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 4, (int64_t[]){1, 1, 4, 4}, g_x4);
        expect_error(&f, &x, SMELT_ERR_ATTR, "'storage_order' is 2");
        fx_free(&f);
    }
    {
        fixture f = fx_new(OP_LRN, "LRN", 1);
        smelt_tensor x = tensor_of(SMELT_DT_FLOAT32, 4, (int64_t[]){1, 1, 4, 4}, g_x4);
        expect_error(&f, &x, SMELT_ERR_ATTR, "attribute 'size' is required");
        fx_free(&f);
    }
}

/* The registry must hand out exactly these definitions. */
extern const op_def op_def_MAX_POOL, op_def_AVERAGE_POOL, op_def_GLOBAL_AVERAGE_POOL,
    op_def_GLOBAL_MAX_POOL, op_def_LRN;

int main(void)
{
    static const struct { op_kind kind; const op_def *def; } defs[] = {
        {OP_MAX_POOL, &op_def_MAX_POOL},
        {OP_AVERAGE_POOL, &op_def_AVERAGE_POOL},
        {OP_GLOBAL_AVERAGE_POOL, &op_def_GLOBAL_AVERAGE_POOL},
        {OP_GLOBAL_MAX_POOL, &op_def_GLOBAL_MAX_POOL},
        {OP_LRN, &op_def_LRN},
    };
    bool registered = true;
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        CHECK(op_get(defs[i].kind)->def == defs[i].def);
        registered = registered && op_get(defs[i].kind)->def;
    }
    if (!registered) TEST_MAIN_END();
    init_data();
    test_max_pool_pads();
    test_max_pool_uint8();
    test_ceil_mode();
    test_dilations_and_indices();
    test_average_pool_pads();
    test_global_pools();
    test_lrn();
    test_symbolic_infer();
    test_errors();
    TEST_MAIN_END();
}
