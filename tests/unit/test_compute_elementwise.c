/* Compute definitions of the elementwise and binary families checked against
 * the reference kernels: each case runs one node through exec_node
 * (reference) and exec_node_te (tensor expressions, interpreted) and compares
 * the output.  Covers what the ONNX node tests leave out: integer forms of
 * Relu/Neg/Abs/Sign, Gelu, special values (NaN, infinities, out-of-range
 * numbers) through every Cast pair, constant and non-constant Clip bounds,
 * integer Mod signs, mixed-dtype Pow, NaN in Min/Max, 16-bit floats and the
 * opset < 7 broadcast axis. */
#include <float.h>
#include <stdlib.h>

#include "exec/exec.h"
#include "ops/op.h"
#include "test_util.h"

#define MAX_IN 4

/* Strong references: registry.c only declares the op_defs weak. */
extern const op_def op_def_RELU;
extern const op_def op_def_ADD;
const op_def *const test_link_anchor[] = {&op_def_RELU, &op_def_ADD};

#define F16 SMELT_DT_FLOAT16
#define BF16 SMELT_DT_BFLOAT16
#define F32 SMELT_DT_FLOAT32
#define F64 SMELT_DT_FLOAT64
#define I8 SMELT_DT_INT8
#define I16 SMELT_DT_INT16
#define I32 SMELT_DT_INT32
#define I64 SMELT_DT_INT64
#define U8 SMELT_DT_UINT8
#define U16 SMELT_DT_UINT16
#define U32 SMELT_DT_UINT32
#define U64 SMELT_DT_UINT64
#define BOOL SMELT_DT_BOOL

typedef enum fill_kind {
    FILL_RANDOM,     /* floats in [-4, 4); integers in [-50, 50] (unsigned [0, 100]) */
    FILL_SPECIAL,    /* zeros, halves, NaN, infinities, values out of every int range */
    FILL_FINITE,     /* FILL_SPECIAL with only values finite in float16 */
    FILL_NONZERO,    /* divisors: integers in [-9, 9] without 0, including -1 */
    FILL_EXPONENT,   /* [0, 5] */
} fill_kind;

typedef struct in_spec {
    smelt_dtype dt;
    int rank;
    int64_t dims[SMELT_MAX_RANK];
    fill_kind fill;
    bool constant; /* a graph constant: its contents are known to the compute */
} in_spec;

typedef struct attr_spec {
    const char *name;
    gr_attr_type type; /* GR_ATTR_INT, GR_ATTR_FLOAT or GR_ATTR_STRING */
    double v;
    const char *s;
} attr_spec;

typedef struct node_case {
    const char *what;
    op_kind op;
    int64_t opset;
    int n_in, n_attrs;
    in_spec in[MAX_IN];
    attr_spec attrs[3];
} node_case;

/* ---- inputs ---- */

static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

static bool is_unsigned(smelt_dtype dt) { return dt == U8 || dt == U16 || dt == U32 || dt == U64; }

static const double k_special_floats[] = {
    0.0,   -0.0,   0.5,    -0.5,   1.5,   -2.5,   2.5,     NAN,    INFINITY, -INFINITY,
    3e9,   -3e9,   1e20,   -1e20,  300.7, -300.7, 1e-5,    -1e-5,  65504.0,  70000.0,
    127.5, -128.5, 255.75, 4e9,    -7.25, 1e-40,  40000.5, -1e300, 1e300,    0.25,
};

static const int64_t k_special_ints[] = {
    0,      1,      -1,    2,         -2,          7,         -7,        127,
    -128,   255,    32767, -32768,    65535,       INT32_MAX, INT32_MIN, INT64_MAX,
    INT64_MIN, 100, -100,  3,         4294967295LL, -5,       9,         -9,
};

/* finite in every float dtype and below 2^63 */
static bool finite_small(double v) { return isfinite(v) && fabs(v) < 60000.0; }

static void fill_float(smelt_tensor *t, int64_t i, fill_kind fill, uint32_t *state)
{
    size_t n = SMELT_ARRAY_LEN(k_special_floats);
    double u = (double)next_random(state) / (double)(1u << 24);
    switch (fill) {
    case FILL_SPECIAL: op_set_f64(t, i, k_special_floats[i % (int64_t)n]); return;
    case FILL_FINITE: {
        double v = k_special_floats[i % (int64_t)n];
        op_set_f64(t, i, finite_small(v) || isnan(v) ? v : 1.0);
        return;
    }
    case FILL_EXPONENT: op_set_f64(t, i, floor(6.0 * u) * (u < 0.5 ? 1.0 : 0.5)); return;
    case FILL_NONZERO: op_set_f64(t, i, u < 0.5 ? -1.0 - 8.0 * u : 0.5 + 8.0 * u); return;
    default: op_set_f64(t, i, 8.0 * u - 4.0); return;
    }
}

/* uint64 keeps its values below 2^63: the te interpreter carries integers
 * as int64 (see the report on te/eval.c). */
static void fill_int(smelt_tensor *t, int64_t i, fill_kind fill, uint32_t *state)
{
    int64_t r = (int64_t)(next_random(state) % 101) - 50, v;
    switch (fill) {
    case FILL_SPECIAL:
    case FILL_FINITE: v = k_special_ints[i % (int64_t)SMELT_ARRAY_LEN(k_special_ints)]; break;
    case FILL_NONZERO: v = r % 9 == 0 ? -1 : r % 9; break;
    case FILL_EXPONENT: v = (r + 50) % 6; break;
    default: v = is_unsigned(t->dtype) ? r + 50 : r; break;
    }
    if (t->dtype == U64 && v < 0) v = v == INT64_MIN ? INT64_MAX : -v;
    if (t->dtype == BOOL) v = r & 1;
    op_set_i64(t, i, v);
}

static void fill(smelt_tensor *t, fill_kind kind, uint32_t *state)
{
    for (int64_t i = 0; i < op_numel(t); i++) {
        if (op_dtype_is_float(t->dtype))
            fill_float(t, i, kind, state);
        else
            fill_int(t, i, kind, state);
    }
}

/* ---- one node ---- */

static gr_node *build_node(gr_graph *g, const node_case *c)
{
    gr_node *node = gr_node_new(g, "n0", op_get(c->op)->name, c->op, c->n_in, 1);
    for (int i = 0; i < c->n_in; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        if (c->in[i].dt != SMELT_DT_UNDEFINED) node->inputs[i] = gr_value_new(g, name);
    }
    gr_value *out = gr_value_new(g, "out0");
    out->producer = node;
    node->outputs[0] = out;
    gr_attr *attrs = smelt_arena_alloc(&g->arena, sizeof(gr_attr) * 3);
    memset(attrs, 0, sizeof(gr_attr) * 3);
    for (int i = 0; i < c->n_attrs; i++) {
        attrs[i].name = c->attrs[i].name;
        attrs[i].type = c->attrs[i].type;
        attrs[i].i = (int64_t)c->attrs[i].v;
        attrs[i].f = (float)c->attrs[i].v;
        attrs[i].s = c->attrs[i].s;
        attrs[i].s_len = c->attrs[i].s ? strlen(c->attrs[i].s) : 0;
    }
    node->attrs = attrs;
    node->n_attrs = c->n_attrs;
    return node;
}

/* Relative tolerance, and an absolute floor for results near zero:
 * float32 computes 1 + erf(x) or exp(x) - 1 with cancellation, as other
 * engines do (the reference computes in double). */
static double tolerance(smelt_dtype dt)
{
    return dt == BF16 ? 2e-2 : dt == F16 ? 4e-3 : dt == F64 ? 1e-12 : 1e-5;
}

static double abs_floor(smelt_dtype dt) { return dt == F64 ? 1e-15 : 1e-7; }

static bool same_value(const smelt_tensor *ref, const smelt_tensor *te, int64_t i)
{
    if (!op_dtype_is_float(ref->dtype)) return op_get_i64(ref, i) == op_get_i64(te, i);
    double want = op_get_f64(ref, i), got = op_get_f64(te, i);
    if (isnan(want) || isinf(want)) return isnan(want) ? isnan(got) : got == want;
    return fabs(got - want) <= abs_floor(ref->dtype) + tolerance(ref->dtype) * fabs(want);
}

static void compare_output(const char *what, const smelt_tensor *ref, const smelt_tensor *te)
{
    bool same_type = ref->dtype == te->dtype && ref->rank == te->rank &&
                     op_numel(ref) == op_numel(te);
    if (!same_type) fprintf(stderr, "%s: output type differs\n", what);
    CHECK(same_type);
    int64_t bad = 0, n = same_type ? op_numel(ref) : 0;
    for (int64_t i = 0; i < n; i++) {
        if (same_value(ref, te, i)) continue;
        if (bad++ == 0)
            fprintf(stderr, "%s: element %lld: te %.17g, reference %.17g\n", what, (long long)i,
                    op_get_f64(te, i), op_get_f64(ref, i));
    }
    CHECK(bad == 0);
}

/* Inputs the import added (Clip's opset < 11 attributes) come from constants. */
static void collect_inputs(const gr_node *node, smelt_tensor *given, const smelt_tensor **inp)
{
    for (int i = 0; i < node->n_inputs && i < MAX_IN; i++) {
        const gr_value *v = node->inputs[i];
        inp[i] = !v ? NULL : given[i].data ? &given[i] : v->constant;
    }
}

static void make_input(smelt_ctx *ctx, gr_graph *g, gr_node *node, const in_spec *spec, int i,
                       smelt_tensor *t, uint32_t *state)
{
    t->dtype = spec->dt;
    t->rank = spec->rank;
    memcpy(t->dims, spec->dims, sizeof t->dims);
    int64_t n = op_numel(t);
    t->data = smelt_calloc(n ? (size_t)n : 1, smelt_dtype_size(t->dtype));
    fill(t, spec->fill, state);
    if (!spec->constant) return;
    smelt_tensor *c = smelt_alloc(sizeof *c);
    *c = *t;
    c->data = smelt_alloc(n ? (size_t)n * smelt_dtype_size(t->dtype) : 1);
    memcpy(c->data, t->data, (size_t)n * smelt_dtype_size(t->dtype));
    CHECK(gr_value_set_constant(ctx, g, node->inputs[i], c) == SMELT_OK);
}

static void run_case(const node_case *c)
{
    smelt_ctx *ctx = smelt_ctx_new();
    gr_graph *g = gr_graph_new();
    g->opset = c->opset;
    gr_node *node = build_node(g, c);
    smelt_tensor in[MAX_IN], ref, te;
    const smelt_tensor *inp[MAX_IN] = {0};
    uint32_t state = 12345;
    memset(in, 0, sizeof in);
    memset(&ref, 0, sizeof ref);
    memset(&te, 0, sizeof te);
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i].dt != SMELT_DT_UNDEFINED)
            make_input(ctx, g, node, &c->in[i], i, &in[i], &state);
    const op_def *def = op_get(c->op)->def;
    smelt_status s = def->import ? def->import(ctx, g, node) : SMELT_OK;
    collect_inputs(node, in, inp);
    if (s == SMELT_OK) s = exec_node(ctx, node, inp, &ref);
    if (s == SMELT_OK) s = exec_node_te(ctx, node, inp, &te);
    if (s != SMELT_OK) fprintf(stderr, "%s: %s\n", c->what, smelt_ctx_message(ctx));
    CHECK(s == SMELT_OK);
    if (s == SMELT_OK) compare_output(c->what, &ref, &te);
    for (int i = 0; i < MAX_IN; i++) smelt_free(in[i].data);
    smelt_free(ref.data);
    smelt_free(te.data);
    gr_graph_free(g);
    smelt_ctx_free(ctx);
}

static void run_cases(const node_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) run_case(&cases[i]);
}

/* ---- unary ---- */

#define V(dt, fill) {dt, 2, {5, 6}, fill, false}
#define ALPHA(v) {"alpha", GR_ATTR_FLOAT, v, NULL}

static const node_case k_unary_cases[] = {
    {"relu int8", OP_RELU, 14, 1, 0, {V(I8, FILL_SPECIAL)}, {{0}}},
    {"relu int64", OP_RELU, 14, 1, 0, {V(I64, FILL_SPECIAL)}, {{0}}},
    {"relu f16", OP_RELU, 14, 1, 0, {V(F16, FILL_SPECIAL)}, {{0}}},
    {"neg int8", OP_NEG, 13, 1, 0, {V(I8, FILL_SPECIAL)}, {{0}}},
    {"neg int64", OP_NEG, 13, 1, 0, {V(I64, FILL_SPECIAL)}, {{0}}},
    {"neg bf16", OP_NEG, 13, 1, 0, {V(BF16, FILL_SPECIAL)}, {{0}}},
    {"abs int16", OP_ABS, 13, 1, 0, {V(I16, FILL_SPECIAL)}, {{0}}},
    {"abs int64", OP_ABS, 13, 1, 0, {V(I64, FILL_SPECIAL)}, {{0}}},
    {"abs uint8", OP_ABS, 13, 1, 0, {V(U8, FILL_SPECIAL)}, {{0}}},
    {"abs f64", OP_ABS, 13, 1, 0, {V(F64, FILL_SPECIAL)}, {{0}}},
    {"sign int32", OP_SIGN, 13, 1, 0, {V(I32, FILL_SPECIAL)}, {{0}}},
    {"sign uint16", OP_SIGN, 13, 1, 0, {V(U16, FILL_SPECIAL)}, {{0}}},
    {"sign f32", OP_SIGN, 13, 1, 0, {V(F32, FILL_SPECIAL)}, {{0}}},
    {"erf int32", OP_ERF, 13, 1, 0, {V(I32, FILL_SPECIAL)}, {{0}}},
    {"erf f16", OP_ERF, 13, 1, 0, {V(F16, FILL_RANDOM)}, {{0}}},
    {"gelu", OP_GELU, 20, 1, 0, {V(F32, FILL_RANDOM)}, {{0}}},
    {"gelu tanh", OP_GELU, 20, 1, 1, {V(F32, FILL_RANDOM)},
     {{"approximate", GR_ATTR_STRING, 0, "tanh"}}},
    {"gelu f64", OP_GELU, 20, 1, 0, {V(F64, FILL_SPECIAL)}, {{0}}},
    {"gelu tanh bf16", OP_GELU, 20, 1, 1, {V(BF16, FILL_RANDOM)},
     {{"approximate", GR_ATTR_STRING, 0, "tanh"}}},
    {"leakyrelu", OP_LEAKY_RELU, 16, 1, 1, {V(F32, FILL_SPECIAL)}, {ALPHA(0.2)}},
    {"elu f64", OP_ELU, 6, 1, 1, {V(F64, FILL_RANDOM)}, {ALPHA(0.7)}},
    {"selu f16", OP_SELU, 6, 1, 0, {V(F16, FILL_RANDOM)}, {{0}}},
    {"celu", OP_CELU, 12, 1, 1, {V(F32, FILL_RANDOM)}, {ALPHA(2.0)}},
    {"thresholdedrelu", OP_THRESHOLDED_RELU, 10, 1, 1, {V(F32, FILL_SPECIAL)}, {ALPHA(0.5)}},
    {"hardsigmoid f16", OP_HARD_SIGMOID, 6, 1, 0, {V(F16, FILL_SPECIAL)}, {{0}}},
    {"hardswish", OP_HARD_SWISH, 14, 1, 0, {V(F32, FILL_SPECIAL)}, {{0}}},
    {"sigmoid f64", OP_SIGMOID, 13, 1, 0, {V(F64, FILL_RANDOM)}, {{0}}},
    {"softplus", OP_SOFTPLUS, 1, 1, 0, {V(F32, FILL_SPECIAL)}, {{0}}},
    {"softsign", OP_SOFTSIGN, 1, 1, 0, {V(F32, FILL_SPECIAL)}, {{0}}},
    {"reciprocal f16", OP_RECIPROCAL, 13, 1, 0, {V(F16, FILL_SPECIAL)}, {{0}}},
    {"round", OP_ROUND, 11, 1, 0, {V(F32, FILL_SPECIAL)}, {{0}}},
    {"floor bf16", OP_FLOOR, 13, 1, 0, {V(BF16, FILL_SPECIAL)}, {{0}}},
    {"ceil f64", OP_CEIL, 13, 1, 0, {V(F64, FILL_SPECIAL)}, {{0}}},
    {"log f16", OP_LOG, 13, 1, 0, {V(F16, FILL_SPECIAL)}, {{0}}},
    {"not", OP_NOT, 1, 1, 0, {V(BOOL, FILL_RANDOM)}, {{0}}},
    {"isnan f16", OP_IS_NAN, 13, 1, 0, {V(F16, FILL_SPECIAL)}, {{0}}},
    {"isinf", OP_IS_INF, 10, 1, 0, {V(F64, FILL_SPECIAL)}, {{0}}},
    {"isinf positive", OP_IS_INF, 10, 1, 1, {V(F32, FILL_SPECIAL)},
     {{"detect_negative", GR_ATTR_INT, 0, NULL}}},
    {"isinf negative bf16", OP_IS_INF, 10, 1, 1, {V(BF16, FILL_SPECIAL)},
     {{"detect_positive", GR_ATTR_INT, 0, NULL}}},
    {"isinf neither", OP_IS_INF, 10, 1, 2, {V(F32, FILL_SPECIAL)},
     {{"detect_positive", GR_ATTR_INT, 0, NULL}, {"detect_negative", GR_ATTR_INT, 0, NULL}}},
};

/* ---- Clip ---- */

#define SCALAR(dt, constant) {dt, 0, {0}, FILL_RANDOM, constant}
#define ONE(dt, constant) {dt, 1, {1}, FILL_RANDOM, constant}
#define NONE {SMELT_DT_UNDEFINED, 0, {0}, FILL_RANDOM, false}

static const node_case k_clip_cases[] = {
    {"clip constant bounds", OP_CLIP, 13, 3, 0,
     {V(F32, FILL_SPECIAL), SCALAR(F32, true), SCALAR(F32, true)}, {{0}}},
    {"clip input bounds f16", OP_CLIP, 13, 3, 0,
     {V(F16, FILL_SPECIAL), SCALAR(F16, false), ONE(F16, false)}, {{0}}},
    {"clip min only int8", OP_CLIP, 13, 2, 0, {V(I8, FILL_SPECIAL), SCALAR(I8, true)}, {{0}}},
    {"clip max only uint8", OP_CLIP, 13, 3, 0, {V(U8, FILL_SPECIAL), NONE, SCALAR(U8, true)},
     {{0}}},
    {"clip input bounds int64", OP_CLIP, 13, 3, 0,
     {V(I64, FILL_SPECIAL), SCALAR(I64, false), SCALAR(I64, false)}, {{0}}},
    {"clip no bounds f64", OP_CLIP, 13, 1, 0, {V(F64, FILL_SPECIAL)}, {{0}}},
    {"clip opset 6 attributes f64", OP_CLIP, 6, 1, 2, {V(F64, FILL_SPECIAL)},
     {{"min", GR_ATTR_FLOAT, -0.5, NULL}, {"max", GR_ATTR_FLOAT, 1e10, NULL}}},
    {"clip opset 6 max only", OP_CLIP, 6, 1, 1, {V(F32, FILL_SPECIAL)},
     {{"max", GR_ATTR_FLOAT, 0.25, NULL}}},
};

/* ---- Cast: every pair of these dtypes over special values ---- */

static void test_cast_pairs(void)
{
    static const smelt_dtype types[] = {F32, F64, F16, BF16, I8, I16, I32, I64,
                                        U8,  U16, U32, U64, BOOL};
    for (size_t f = 0; f < SMELT_ARRAY_LEN(types); f++) {
        for (size_t t = 0; t < SMELT_ARRAY_LEN(types); t++) {
            char what[64];
            snprintf(what, sizeof what, "cast %s to %s", smelt_dtype_name(types[f]),
                     smelt_dtype_name(types[t]));
            /* float -> uint64 beyond 2^63: see the te/eval.c note in the report */
            fill_kind kind = types[t] == U64 ? FILL_FINITE : FILL_SPECIAL;
            node_case c = {what, OP_CAST, 13, 1, 1, {V(types[f], kind)},
                           {{"to", GR_ATTR_INT, (double)types[t], NULL}}};
            run_case(&c);
            node_case like = {what, OP_CAST_LIKE, 15, 2, 0,
                              {V(types[f], kind), {types[t], 1, {2}, FILL_RANDOM, false}},
                              {{0}}};
            run_case(&like);
        }
    }
}

/* ---- binary ---- */

#define T3(dt, fill) {dt, 3, {2, 3, 4}, fill, false}
#define ROW(dt, fill) {dt, 1, {4}, fill, false}
#define COL(dt, fill) {dt, 2, {3, 1}, fill, false}
#define SCAL(dt, fill) {dt, 0, {0}, fill, false}
#define FMOD(v) {"fmod", GR_ATTR_INT, v, NULL}

static const node_case k_binary_cases[] = {
    {"add f32 row", OP_ADD, 14, 2, 0, {T3(F32, FILL_RANDOM), ROW(F32, FILL_RANDOM)}, {{0}}},
    {"add col + row", OP_ADD, 14, 2, 0, {COL(F32, FILL_RANDOM), ROW(F32, FILL_RANDOM)}, {{0}}},
    {"add scalar f16", OP_ADD, 14, 2, 0, {SCAL(F16, FILL_RANDOM), T3(F16, FILL_SPECIAL)}, {{0}}},
    {"add int8 wraps", OP_ADD, 14, 2, 0, {T3(I8, FILL_SPECIAL), ROW(I8, FILL_SPECIAL)}, {{0}}},
    {"sub uint8 wraps", OP_SUB, 14, 2, 0, {T3(U8, FILL_RANDOM), T3(U8, FILL_SPECIAL)}, {{0}}},
    {"mul int64 wraps", OP_MUL, 14, 2, 0, {T3(I64, FILL_SPECIAL), COL(I64, FILL_SPECIAL)}, {{0}}},
    {"mul bf16", OP_MUL, 14, 2, 0, {T3(BF16, FILL_RANDOM), T3(BF16, FILL_SPECIAL)}, {{0}}},
    {"div f64", OP_DIV, 14, 2, 0, {T3(F64, FILL_SPECIAL), T3(F64, FILL_SPECIAL)}, {{0}}},
    {"div int32", OP_DIV, 14, 2, 0, {T3(I32, FILL_SPECIAL), ROW(I32, FILL_NONZERO)}, {{0}}},
    {"div uint16", OP_DIV, 14, 2, 0, {T3(U16, FILL_SPECIAL), T3(U16, FILL_NONZERO)}, {{0}}},
    {"add opset 6 axis", OP_ADD, 6, 2, 2, {T3(F32, FILL_RANDOM), {F32, 1, {3}, FILL_RANDOM, 0}},
     {{"broadcast", GR_ATTR_INT, 1, NULL}, {"axis", GR_ATTR_INT, 1, NULL}}},
    {"mod int8", OP_MOD, 13, 2, 0, {T3(I8, FILL_SPECIAL), T3(I8, FILL_NONZERO)}, {{0}}},
    {"mod int64", OP_MOD, 13, 2, 0, {T3(I64, FILL_SPECIAL), ROW(I64, FILL_NONZERO)}, {{0}}},
    {"mod uint32", OP_MOD, 13, 2, 0, {T3(U32, FILL_SPECIAL), T3(U32, FILL_NONZERO)}, {{0}}},
    {"fmod int32", OP_MOD, 13, 2, 1, {T3(I32, FILL_SPECIAL), T3(I32, FILL_NONZERO)}, {FMOD(1)}},
    {"fmod f32", OP_MOD, 13, 2, 1, {T3(F32, FILL_SPECIAL), T3(F32, FILL_NONZERO)}, {FMOD(1)}},
    {"fmod f16", OP_MOD, 13, 2, 1, {T3(F16, FILL_RANDOM), T3(F16, FILL_NONZERO)}, {FMOD(1)}},
    {"pow f32", OP_POW, 15, 2, 0, {T3(F32, FILL_RANDOM), T3(F32, FILL_EXPONENT)}, {{0}}},
    {"pow f32 ^ int32", OP_POW, 15, 2, 0, {T3(F32, FILL_RANDOM), ROW(I32, FILL_EXPONENT)},
     {{0}}},
    {"pow int32 ^ int32", OP_POW, 15, 2, 0, {T3(I32, FILL_RANDOM), T3(I32, FILL_EXPONENT)},
     {{0}}},
    {"pow int8 ^ int64 wraps", OP_POW, 15, 2, 0, {T3(I8, FILL_RANDOM), T3(I64, FILL_EXPONENT)},
     {{0}}},
    {"pow int64 ^ f32", OP_POW, 15, 2, 0, {T3(I64, FILL_RANDOM), T3(F32, FILL_EXPONENT)}, {{0}}},
    {"pow f16", OP_POW, 15, 2, 0, {T3(F16, FILL_RANDOM), SCAL(F16, FILL_EXPONENT)}, {{0}}},
    {"pow f64 ^ f32", OP_POW, 15, 2, 0, {T3(F64, FILL_RANDOM), T3(F32, FILL_SPECIAL)}, {{0}}},
    {"prelu", OP_PRELU, 16, 2, 0, {T3(F32, FILL_SPECIAL), COL(F32, FILL_RANDOM)}, {{0}}},
    {"prelu int32", OP_PRELU, 16, 2, 0, {T3(I32, FILL_SPECIAL), ROW(I32, FILL_RANDOM)}, {{0}}},
    {"prelu opset 6 channel slope", OP_PRELU, 6, 2, 0,
     {T3(F32, FILL_RANDOM), {F32, 1, {3}, FILL_RANDOM, false}}, {{0}}},
    {"min three with NaN", OP_MIN, 13, 3, 0,
     {T3(F32, FILL_SPECIAL), ROW(F32, FILL_RANDOM), COL(F32, FILL_SPECIAL)}, {{0}}},
    {"max three with NaN f16", OP_MAX, 13, 3, 0,
     {COL(F16, FILL_SPECIAL), T3(F16, FILL_SPECIAL), ROW(F16, FILL_RANDOM)}, {{0}}},
    {"max int8", OP_MAX, 13, 2, 0, {T3(I8, FILL_SPECIAL), ROW(I8, FILL_RANDOM)}, {{0}}},
    {"min uint32", OP_MIN, 13, 2, 0, {T3(U32, FILL_SPECIAL), ROW(U32, FILL_RANDOM)}, {{0}}},
    {"max one input", OP_MAX, 13, 1, 0, {T3(F64, FILL_SPECIAL)}, {{0}}},
    {"sum three", OP_SUM, 13, 3, 0,
     {T3(F32, FILL_RANDOM), ROW(F32, FILL_RANDOM), COL(F32, FILL_RANDOM)}, {{0}}},
    {"sum f16", OP_SUM, 13, 2, 0, {T3(F16, FILL_RANDOM), T3(F16, FILL_RANDOM)}, {{0}}},
    {"mean three f64", OP_MEAN, 13, 3, 0,
     {T3(F64, FILL_RANDOM), ROW(F64, FILL_RANDOM), SCAL(F64, FILL_RANDOM)}, {{0}}},
    {"mean bf16", OP_MEAN, 13, 2, 0, {T3(BF16, FILL_RANDOM), COL(BF16, FILL_RANDOM)}, {{0}}},
    {"mean one input", OP_MEAN, 13, 1, 0, {T3(F32, FILL_RANDOM)}, {{0}}},
    {"equal f32 NaN", OP_EQUAL, 13, 2, 0, {T3(F32, FILL_SPECIAL), T3(F32, FILL_SPECIAL)}, {{0}}},
    {"equal bool", OP_EQUAL, 13, 2, 0, {T3(BOOL, FILL_RANDOM), ROW(BOOL, FILL_RANDOM)}, {{0}}},
    {"less int64", OP_LESS, 13, 2, 0, {T3(I64, FILL_SPECIAL), ROW(I64, FILL_SPECIAL)}, {{0}}},
    {"less_equal uint8", OP_LESS_OR_EQUAL, 16, 2, 0,
     {T3(U8, FILL_SPECIAL), COL(U8, FILL_RANDOM)}, {{0}}},
    {"greater f16", OP_GREATER, 13, 2, 0, {T3(F16, FILL_SPECIAL), SCAL(F16, FILL_RANDOM)}, {{0}}},
    {"greater_equal f64", OP_GREATER_OR_EQUAL, 16, 2, 0,
     {T3(F64, FILL_SPECIAL), T3(F64, FILL_RANDOM)}, {{0}}},
    {"and", OP_AND, 7, 2, 0, {T3(BOOL, FILL_RANDOM), ROW(BOOL, FILL_RANDOM)}, {{0}}},
    {"or", OP_OR, 7, 2, 0, {COL(BOOL, FILL_RANDOM), T3(BOOL, FILL_RANDOM)}, {{0}}},
    {"xor", OP_XOR, 7, 2, 0, {T3(BOOL, FILL_RANDOM), T3(BOOL, FILL_RANDOM)}, {{0}}},
    {"where f32", OP_WHERE, 16, 3, 0,
     {T3(BOOL, FILL_RANDOM), ROW(F32, FILL_RANDOM), COL(F32, FILL_SPECIAL)}, {{0}}},
    {"where int64 scalar", OP_WHERE, 16, 3, 0,
     {ROW(BOOL, FILL_RANDOM), T3(I64, FILL_SPECIAL), SCAL(I64, FILL_RANDOM)}, {{0}}},
    {"where bool", OP_WHERE, 16, 3, 0,
     {COL(BOOL, FILL_RANDOM), COL(BOOL, FILL_RANDOM), ROW(BOOL, FILL_RANDOM)}, {{0}}},
};

int main(void)
{
    run_cases(k_unary_cases, SMELT_ARRAY_LEN(k_unary_cases));
    run_cases(k_clip_cases, SMELT_ARRAY_LEN(k_clip_cases));
    test_cast_pairs();
    run_cases(k_binary_cases, SMELT_ARRAY_LEN(k_binary_cases));
    TEST_MAIN_END();
}
