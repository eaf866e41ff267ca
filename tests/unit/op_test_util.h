/* Shared harness of the one-node op tests (test_ops_*, test_compute_*).
 *
 * An opt_node is one node of an op in a fresh graph.  Hand-written tests add
 * attributes, run the op's hooks (import, infer, the reference kernel) on
 * their own tensors with opt_run and check the outputs with OPT_EXPECT_*.
 * Table-driven tests describe a node as an opt_case (inputs with given or
 * pseudo-random contents, graph constants, attributes) and opt_check_case
 * runs it through the reference kernel (exec_node), the op's tensor
 * expressions (exec_node_te) and those expressions lowered under the default
 * and random legal schedules to the loop IR code generation consumes (run
 * by the tir interpreter), comparing every output with the reference within
 * per-dtype tolerances.  Header-only: the checks count in the including
 * test's test_util.h counters. */
#ifndef SMELT_OP_TEST_UTIL_H
#define SMELT_OP_TEST_UTIL_H

#include <math.h>
#include <stdlib.h>

#include "exec/exec.h"
#include "lower/lower.h"
#include "ops/op.h"
#include "test_util.h"
#include "tir/interp.h"
#include "test_hw.h"

#define OPT_MAX_IO 16
#define OPT_MAX_CASE_IN 9 /* QLinearConv */
#define OPT_MAX_CASE_ATTRS 8 /* TfIdfVectorizer */
#define OPT_SHOWN_MISMATCHES 5

/* shorthands of the case tables */
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

#define OPT_DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* ---- one node ---- */

typedef struct opt_node {
    smelt_ctx *ctx;
    gr_graph *g;
    gr_node *node;
    gr_value *made[OPT_MAX_IO];         /* inputs as made: caller tensors bind to these */
    smelt_tensor *owned[OPT_MAX_IO];    /* run-time inputs opt_make_inputs made */
    const smelt_tensor *in[OPT_MAX_IO]; /* per node input (after import): what runs */
    smelt_tensor out[OPT_MAX_IO];       /* reference outputs; data freed by opt_fini */
    smelt_tensor te[OPT_MAX_IO];        /* outputs of opt_run_te */
} opt_node;

/* Value names: a printf pattern taking the index ("in%d") or a
 * space-separated list ("x w b"); NULL fields take the defaults. */
typedef struct opt_names {
    const char *node;    /* "n0" */
    const char *inputs;  /* "in%d" */
    const char *outputs; /* "out%d" */
} opt_names;

static inline void opt_value_name(const char *names, int i, char *buf, size_t size)
{
    if (strchr(names, '%')) {
        snprintf(buf, size, names, i);
        return;
    }
    const char *p = names;
    for (int k = 0; k < i && p; k++) {
        p = strchr(p, ' ');
        if (p) p++;
    }
    size_t len = p ? strcspn(p, " ") : 0;
    if (!p || len == 0 || len >= size) { /* a test bug: fewer names than values */
        fprintf(stderr, "opt: no name %d in \"%s\"\n", i, names);
        abort();
    }
    memcpy(buf, p, len);
    buf[len] = '\0';
}

/* A graph at `opset` holding one node of `op` with n_in inputs and n_out
 * outputs, every one a fresh value named after `names` (NULL: defaults). */
static inline void opt_init(opt_node *t, const opt_names *names, op_kind op, int64_t opset,
                            int n_in, int n_out)
{
    if (n_in > OPT_MAX_IO || n_out > OPT_MAX_IO) {
        fprintf(stderr, "opt: %d inputs, %d outputs: at most %d\n", n_in, n_out, OPT_MAX_IO);
        abort();
    }
    memset(t, 0, sizeof *t);
    t->ctx = smelt_ctx_new();
    t->g = gr_graph_new();
    t->g->opset = opset;
    t->node = gr_node_new(t->g, names && names->node ? names->node : "n0", op_get(op)->name, op,
                          n_in, n_out);
    const char *in_names = names && names->inputs ? names->inputs : "in%d";
    const char *out_names = names && names->outputs ? names->outputs : "out%d";
    char name[64];
    for (int i = 0; i < n_in; i++) {
        opt_value_name(in_names, i, name, sizeof name);
        t->node->inputs[i] = t->made[i] = gr_value_new(t->g, name);
    }
    for (int i = 0; i < n_out; i++) {
        opt_value_name(out_names, i, name, sizeof name);
        gr_value *v = gr_value_new(t->g, name);
        v->producer = t->node;
        v->producer_output = i;
        t->node->outputs[i] = v;
    }
}

static inline void opt_free_outputs(opt_node *t)
{
    for (int i = 0; i < OPT_MAX_IO; i++) {
        smelt_free(t->out[i].data);
        smelt_free(t->te[i].data);
    }
    memset(t->out, 0, sizeof t->out);
    memset(t->te, 0, sizeof t->te);
}

static inline void opt_fini(opt_node *t)
{
    opt_free_outputs(t);
    for (int i = 0; i < OPT_MAX_IO; i++) smelt_tensor_free(t->owned[i]);
    gr_graph_free(t->g);
    smelt_ctx_free(t->ctx);
}

/* An omitted optional input or output. */
static inline void opt_omit_input(opt_node *t, int i) { t->node->inputs[i] = t->made[i] = NULL; }
static inline void opt_omit_output(opt_node *t, int i) { t->node->outputs[i] = NULL; }

/* ---- attributes ---- */

static inline gr_attr opt_int_attr(const char *name, int64_t v)
{
    return (gr_attr){.name = name, .type = GR_ATTR_INT, .i = v};
}

static inline gr_attr opt_float_attr(const char *name, float v)
{
    return (gr_attr){.name = name, .type = GR_ATTR_FLOAT, .f = v};
}

static inline gr_attr opt_string_attr(const char *name, const char *s)
{
    return (gr_attr){.name = name, .type = GR_ATTR_STRING, .s = s, .s_len = strlen(s)};
}

static inline gr_attr opt_ints_attr(const char *name, int n, const int64_t *v)
{
    return (gr_attr){.name = name, .type = GR_ATTR_INTS, .n = n, .ints = (int64_t *)v};
}

static inline gr_attr opt_floats_attr(const char *name, int n, const float *v)
{
    return (gr_attr){.name = name, .type = GR_ATTR_FLOATS, .n = n, .floats = (float *)v};
}

/* Appends copies of attrs (names, strings and lists copied into the graph's
 * arena; a tensor attribute stays the caller's). */
static inline void opt_attrs(opt_node *t, const gr_attr *attrs, int n)
{
    gr_node *node = t->node;
    smelt_arena *a = &t->g->arena;
    gr_attr *all = smelt_arena_alloc(a, sizeof(gr_attr) * (size_t)(node->n_attrs + n + 1));
    if (node->n_attrs) memcpy(all, node->attrs, sizeof(gr_attr) * (size_t)node->n_attrs);
    for (int k = 0; k < n; k++) {
        gr_attr *c = &all[node->n_attrs + k];
        *c = attrs[k];
        c->name = smelt_arena_strdup(a, attrs[k].name);
        if (attrs[k].s) c->s = smelt_arena_strdup(a, attrs[k].s);
        if (attrs[k].ints) {
            c->ints = smelt_arena_alloc(a, sizeof(int64_t) * (size_t)(c->n + 1));
            memcpy(c->ints, attrs[k].ints, sizeof(int64_t) * (size_t)c->n);
        }
        if (attrs[k].floats) {
            c->floats = smelt_arena_alloc(a, sizeof(float) * (size_t)(c->n + 1));
            memcpy(c->floats, attrs[k].floats, sizeof(float) * (size_t)c->n);
        }
    }
    node->attrs = all;
    node->n_attrs += n;
}

/* The node reads the caller's array itself (replacing its attributes), so a
 * test can change an attribute between runs. */
static inline void opt_use_attrs(opt_node *t, gr_attr *attrs, int n)
{
    t->node->attrs = attrs;
    t->node->n_attrs = n;
}

static inline void opt_attr_int(opt_node *t, const char *name, int64_t v)
{
    gr_attr a = opt_int_attr(name, v);
    opt_attrs(t, &a, 1);
}

static inline void opt_attr_float(opt_node *t, const char *name, float v)
{
    gr_attr a = opt_float_attr(name, v);
    opt_attrs(t, &a, 1);
}

static inline void opt_attr_string(opt_node *t, const char *name, const char *s)
{
    gr_attr a = opt_string_attr(name, s);
    opt_attrs(t, &a, 1);
}

static inline void opt_attr_ints(opt_node *t, const char *name, int n, const int64_t *v)
{
    gr_attr a = opt_ints_attr(name, n, v);
    opt_attrs(t, &a, 1);
}

/* ---- tensors ---- */

/* A tensor over the caller's data (NULL: a description without contents). */
static inline smelt_tensor opt_tensor(smelt_dtype dt, int rank, const int64_t *dims,
                                      const void *data)
{
    smelt_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
    t.data = (void *)data;
    return t;
}

static inline smelt_tensor opt_vec(smelt_dtype dt, int64_t n, const void *data)
{
    return opt_tensor(dt, 1, &n, data);
}

/* ---- running the op's hooks ---- */

static inline smelt_status opt_import(opt_node *t)
{
    const op_def *d = op_get(t->node->op)->def;
    if (!d) return op_errf(t->ctx, t->node, SMELT_ERR_UNSUPPORTED, "op not defined");
    return d->import ? d->import(t->ctx, t->g, t->node) : SMELT_OK;
}

/* Binds each node input: the caller's tensor for the value it was made as
 * (given[k] for made input k, when not NULL; import may move inputs, as
 * Resize-10 does), else the value's constant (import may add inputs, as
 * Clip < 11 does), else nothing. */
static inline void opt_bind_ptrs(opt_node *t, const smelt_tensor *const *given, int n_given)
{
    for (int i = 0; i < t->node->n_inputs && i < OPT_MAX_IO; i++) {
        const gr_value *v = t->node->inputs[i];
        t->in[i] = v ? v->constant : NULL;
        for (int k = 0; v && k < n_given && k < OPT_MAX_IO; k++)
            if (t->made[k] == v && given[k]) t->in[i] = given[k];
    }
}

/* import, bind, infer into t->out (no data). */
static inline smelt_status opt_infer_ptrs(opt_node *t, const smelt_tensor *const *given,
                                          int n_given)
{
    opt_free_outputs(t);
    SMELT_TRY(opt_import(t));
    opt_bind_ptrs(t, given, n_given);
    return op_get(t->node->op)->def->infer(t->ctx, t->node, t->in, t->out);
}

/* import, bind, infer, allocate zeroed outputs, run the reference kernel. */
static inline smelt_status opt_run_ptrs(opt_node *t, const smelt_tensor *const *given,
                                        int n_given)
{
    SMELT_TRY(opt_infer_ptrs(t, given, n_given));
    for (int i = 0; i < t->node->n_outputs; i++) {
        if (!t->node->outputs[i]) continue;
        int64_t n = op_numel(&t->out[i]);
        t->out[i].data = smelt_calloc(n > 0 ? (size_t)n : 1, smelt_dtype_size(t->out[i].dtype));
    }
    return op_get(t->node->op)->def->eval(t->ctx, t->node, t->in, t->out);
}

/* The same over an array of tensors; one with undefined dtype is not given. */
static inline void opt_given_ptrs(const smelt_tensor *given, int n_given,
                                  const smelt_tensor **ptrs)
{
    for (int k = 0; k < n_given && k < OPT_MAX_IO; k++)
        ptrs[k] = given[k].dtype != SMELT_DT_UNDEFINED ? &given[k] : NULL;
}

static inline smelt_status opt_infer(opt_node *t, const smelt_tensor *given, int n_given)
{
    const smelt_tensor *ptrs[OPT_MAX_IO] = {0};
    opt_given_ptrs(given, n_given, ptrs);
    return opt_infer_ptrs(t, ptrs, n_given);
}

static inline smelt_status opt_run(opt_node *t, const smelt_tensor *given, int n_given)
{
    const smelt_tensor *ptrs[OPT_MAX_IO] = {0};
    opt_given_ptrs(given, n_given, ptrs);
    return opt_run_ptrs(t, ptrs, n_given);
}

static inline const char *opt_message(const opt_node *t) { return smelt_ctx_message(t->ctx); }

/* Every row of ops.def in `family` has its op_def (a failure names the op). */
static inline void opt_check_family_defined(const char *family)
{
    for (int k = 1; k < OP_COUNT_; k++) {
        const op_info *info = op_get((op_kind)k);
        if (strcmp(info->family, family) == 0 && !info->def) {
            fprintf(stderr, "op %s has no op_def\n", info->name);
            CHECK(0);
        }
    }
}

/* ---- comparing values ---- */

typedef struct opt_tol {
    double atol, rtol;
} opt_tol;

/* Equal values always match (infinities too), NaN matches NaN; otherwise
 * |got - want| <= atol + rtol * |want| for a finite want. */
static inline bool opt_close(double got, double want, opt_tol tol)
{
    if (got == want) return true;
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return false;
    return fabs(got - want) <= tol.atol + tol.rtol * fabs(want);
}

/* Element i of t and want agree: integers and bool exactly (t must not be
 * a float tensor then), float8/float4 codes bit for bit, floats by opt_close. */
static inline bool opt_same_element(const smelt_tensor *t, const smelt_tensor *want, int64_t i,
                                    opt_tol tol)
{
    if (smelt_dtype_is_lowbit_float(want->dtype))
        return t->dtype == want->dtype &&
               ((const uint8_t *)t->data)[i] == ((const uint8_t *)want->data)[i];
    if (!op_dtype_is_float(want->dtype))
        return !op_dtype_is_float(t->dtype) && op_get_i64(t, i) == op_get_i64(want, i);
    return opt_close(op_get_f64(t, i), op_get_f64(want, i), tol);
}

static inline void opt_count(bool ok)
{
    if (ok) test_checks_passed++;
    else test_checks_failed++;
}

/* One check that t has n elements, then one per element against want[i]
 * (read as want_dt); a mismatch is reported with the caller's file:line,
 * the tensor expression, the index and both values. */
static inline void opt_expect_at(const char *file, int line, const char *expr,
                                 const smelt_tensor *t, smelt_dtype want_dt, const void *want,
                                 int64_t n, opt_tol tol)
{
    smelt_tensor w = opt_vec(want_dt, n, want);
    bool same_size = op_numel(t) == n;
    opt_count(same_size);
    if (!same_size)
        fprintf(stderr, "%s:%d: %s has %lld elements, expected %lld\n", file, line, expr,
                (long long)op_numel(t), (long long)n);
    int64_t bad = 0;
    for (int64_t i = 0; same_size && i < n; i++) {
        bool ok = opt_same_element(t, &w, i, tol);
        opt_count(ok);
        if (!ok && bad++ < OPT_SHOWN_MISMATCHES)
            fprintf(stderr, "%s:%d: %s element %lld: got %.9g, want %.9g\n", file, line, expr,
                    (long long)i, op_get_f64(t, i), op_get_f64(&w, i));
    }
    if (bad > OPT_SHOWN_MISMATCHES)
        fprintf(stderr, "%s:%d: %s: %lld mismatches\n", file, line, expr, (long long)bad);
}

/* Tolerances of opt_close: exact, absolute, relative with an absolute
 * floor of the same size (|got - want| <= r * (1 + |want|)). */
#define OPT_EXACT ((opt_tol){0, 0})
#define OPT_ABS(a) ((opt_tol){(a), 0})
#define OPT_REL(r) ((opt_tol){(r), (r)})

/* Expected values: arrays, or lists written in place. */
#define OPT_F32S(...) ((const float[]){__VA_ARGS__})
#define OPT_I64S(...) ((const int64_t[]){__VA_ARGS__})

#define OPT_EXPECT_F32(t, want, n, tol) \
    opt_expect_at(__FILE__, __LINE__, #t, (t), F32, (want), (n), (tol))
#define OPT_EXPECT_F64(t, want, n, tol) \
    opt_expect_at(__FILE__, __LINE__, #t, (t), F64, (want), (n), (tol))
#define OPT_EXPECT_I64(t, want, n) \
    opt_expect_at(__FILE__, __LINE__, #t, (t), I64, (want), (n), OPT_EXACT)

/* One check of the rank, then one per dim. */
static inline void opt_expect_dims_at(const char *file, int line, const char *expr,
                                      const smelt_tensor *t, int rank, const int64_t *dims)
{
    bool ok = t->rank == rank;
    opt_count(ok);
    if (!ok)
        fprintf(stderr, "%s:%d: %s has rank %d, expected %d\n", file, line, expr, t->rank, rank);
    for (int i = 0; ok && i < rank; i++) {
        opt_count(t->dims[i] == dims[i]);
        if (t->dims[i] != dims[i])
            fprintf(stderr, "%s:%d: %s dim %d is %lld, expected %lld\n", file, line, expr, i,
                    (long long)t->dims[i], (long long)dims[i]);
    }
}

#define OPT_EXPECT_DIMS(t, rank, ...) \
    opt_expect_dims_at(__FILE__, __LINE__, #t, (t), (rank), (__VA_ARGS__))

/* ---- pseudo-random contents ---- */

/* 24 random bits (a linear congruential generator: the same stream on every
 * machine). */
static inline uint32_t opt_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

/* [0, 1) */
static inline double opt_uniform(uint32_t *state)
{
    return (double)opt_random(state) / (double)(1u << 24);
}

/* ---- table-driven cases: reference kernel vs tensor expressions ---- */

typedef struct opt_input {
    smelt_dtype dt; /* SMELT_DT_UNDEFINED: an omitted optional input */
    int rank;
    int64_t dims[SMELT_MAX_RANK];
    int fill;           /* what the suite's fill makes of a pseudo-random input */
    const double *vals; /* given contents instead */
    bool constant;      /* a graph constant: the compute sees its contents */
} opt_input;

/* Input specs: pseudo-random contents of the suite's default fill kind (0)
 * or of another, an omitted input, given contents as a graph constant or a
 * run-time input (any shape, 1-D with the count of the values, a scalar). */
#define OPT_X(type, r, ...) {.dt = (type), .rank = (r), .dims = {__VA_ARGS__}}
#define OPT_XF(type, kind, r, ...) \
    {.dt = (type), .rank = (r), .dims = {__VA_ARGS__}, .fill = (kind)}
#define OPT_NONE {.dt = SMELT_DT_UNDEFINED}
#define OPT_VALS(...) ((const double[]){__VA_ARGS__})
#define OPT_CONST(type, vals_, r, ...) \
    {.dt = (type), .rank = (r), .dims = {__VA_ARGS__}, .vals = (vals_), .constant = true}
#define OPT_RUNTIME(type, vals_, r, ...) \
    {.dt = (type), .rank = (r), .dims = {__VA_ARGS__}, .vals = (vals_)}
#define OPT_COUNT(...) (int)(sizeof OPT_VALS(__VA_ARGS__) / sizeof(double))
#define OPT_CONST1(type, ...) \
    OPT_CONST(type, OPT_VALS(__VA_ARGS__), 1, OPT_COUNT(__VA_ARGS__))
#define OPT_RUNTIME1(type, ...) \
    OPT_RUNTIME(type, OPT_VALS(__VA_ARGS__), 1, OPT_COUNT(__VA_ARGS__))
#define OPT_CONST0(type, v) OPT_CONST(type, OPT_VALS(v), 0, 0)
#define OPT_RUNTIME0(type, v) OPT_RUNTIME(type, OPT_VALS(v), 0, 0)

typedef struct opt_attr_spec {
    const char *name;
    gr_attr_type type; /* INT, FLOAT, STRING, INTS, FLOATS or TENSOR */
    double v;          /* INT or FLOAT */
    const char *s;
    int n; /* INTS, FLOATS */
    const int64_t *ints;
    const float *floats;
    smelt_tensor *t;
} opt_attr_spec;

#define OPT_AI(name, v) {name, GR_ATTR_INT, v, NULL, 0, NULL, NULL, NULL}
#define OPT_AF(name, v) {name, GR_ATTR_FLOAT, v, NULL, 0, NULL, NULL, NULL}
#define OPT_AS(name, s) {name, GR_ATTR_STRING, 0, s, 0, NULL, NULL, NULL}
#define OPT_AINTS(name, k, ...) \
    {name, GR_ATTR_INTS, 0, NULL, k, ((const int64_t[]){__VA_ARGS__}), NULL, NULL}
#define OPT_AFLOATS(name, k, ...) \
    {name, GR_ATTR_FLOATS, 0, NULL, k, NULL, ((const float[]){__VA_ARGS__}), NULL}
#define OPT_AT(name, t) {name, GR_ATTR_TENSOR, 0, NULL, 0, NULL, NULL, t}

typedef struct opt_case {
    const char *what;
    op_kind op;
    int64_t opset;
    const char *outputs; /* per output: 'y' present, '-' omitted */
    int n_in, n_attrs;
    opt_input in[OPT_MAX_CASE_IN];
    opt_attr_spec attrs[OPT_MAX_CASE_ATTRS];
} opt_case;

/* Per output dtype; integers and bool compare exactly. */
typedef struct opt_tols {
    opt_tol f32, f64, f16, bf16;
} opt_tols;

/* Ops that accumulate many terms (conv, matmul, normalization): relative
 * 1e-4 in float32, 1e-9 in float64, 4e-3 in float16, 2e-2 in bfloat16, each
 * with an absolute floor of the same size. */
#define OPT_TOLS_ACCUMULATE \
    {.f32 = {1e-4, 1e-4}, .f64 = {1e-9, 1e-9}, .f16 = {4e-3, 4e-3}, .bf16 = {2e-2, 2e-2}}

/* How a test file fills and compares its cases. */
typedef struct opt_suite {
    uint32_t seed; /* each case's inputs start the random stream anew */
    /* element i of a pseudo-random input of the given fill kind */
    void (*fill)(smelt_tensor *t, int64_t i, int kind, uint32_t *state);
    opt_tols tols;
    int random_schedules; /* lowered per case besides the default schedule */
} opt_suite;

static inline opt_tol opt_tol_of(const opt_tols *tols, smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT64   ? tols->f64
           : dt == SMELT_DT_FLOAT16 ? tols->f16
           : dt == SMELT_DT_BFLOAT16 ? tols->bf16
                                     : tols->f32;
}

static inline void opt_attr_from_spec(opt_node *t, const opt_attr_spec *a)
{
    gr_attr g = {.name = a->name, .type = a->type, .i = (int64_t)a->v, .f = (float)a->v,
                 .s = a->s, .s_len = a->s ? strlen(a->s) : 0, .n = a->n,
                 .ints = (int64_t *)a->ints, .floats = (float *)a->floats, .t = a->t};
    opt_attrs(t, &g, 1);
}

/* The contents of an input spec; random ones draw from *state. */
static inline smelt_tensor *opt_input_tensor(const opt_suite *s, const opt_input *spec,
                                             uint32_t *state)
{
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    *t = opt_tensor(spec->dt, spec->rank, spec->dims, NULL);
    int64_t n = op_numel(t);
    t->data = smelt_calloc(n ? (size_t)n : 1, smelt_dtype_size(t->dtype));
    for (int64_t i = 0; i < n; i++) {
        if (!spec->vals) s->fill(t, i, spec->fill, state);
        else if (op_dtype_is_float(t->dtype)) op_set_f64(t, i, spec->vals[i]);
        else op_set_i64(t, i, (int64_t)spec->vals[i]);
    }
    return t;
}

/* Inputs of the node from specs: omitted ones dropped, constant ones handed
 * to the graph, the others kept in t->owned. */
static inline void opt_make_inputs(opt_node *t, const opt_suite *s, const opt_input *specs,
                                   int n)
{
    uint32_t state = s->seed;
    for (int i = 0; i < n; i++) {
        if (specs[i].dt == SMELT_DT_UNDEFINED) {
            opt_omit_input(t, i);
            continue;
        }
        smelt_tensor *c = opt_input_tensor(s, &specs[i], &state);
        if (!specs[i].constant) {
            t->owned[i] = c;
            continue;
        }
        smelt_status st = gr_value_set_constant(t->ctx, t->g, t->made[i], c);
        if (st != SMELT_OK) fprintf(stderr, "opt: %s\n", opt_message(t));
        CHECK(st == SMELT_OK);
    }
}

/* Makes the node's inputs from specs, imports the node and binds them. */
static inline smelt_status opt_prepare(opt_node *t, const opt_suite *s, const opt_input *specs,
                                       int n)
{
    opt_make_inputs(t, s, specs, n);
    smelt_status st = opt_import(t);
    opt_bind_ptrs(t, (const smelt_tensor *const *)t->owned, OPT_MAX_IO);
    return st;
}

/* The case's node with its outputs, attributes and inputs, prepared. */
static inline smelt_status opt_case_init(opt_node *t, const opt_suite *s, const opt_case *c)
{
    int n_out = (int)strlen(c->outputs);
    opt_init(t, NULL, c->op, c->opset, c->n_in, n_out);
    for (int o = 0; o < n_out; o++)
        if (c->outputs[o] == '-') opt_omit_output(t, o);
    for (int k = 0; k < c->n_attrs; k++) opt_attr_from_spec(t, &c->attrs[k]);
    return opt_prepare(t, s, c->in, c->n_in);
}

static inline smelt_status opt_run_reference(opt_node *t)
{
    return exec_node(t->ctx, t->node, t->in, t->out);
}

static inline smelt_status opt_run_te(opt_node *t)
{
    return exec_node_te(t->ctx, t->node, t->in, t->te);
}

/* ---- the lowered path: schedule, loop IR, tir interpreter ---- */

/* f's parameters: the present inputs' data (t->in), te constants' contents
 * (the compute's compile-time tensors), then fresh outputs in t->te. */
static inline smelt_status opt_bind_lowered(opt_node *t, tir_interp *it, const ir_func *f,
                                            const te_graph *te)
{
    const gr_node *node = t->node;
    for (int p = 0, in_k = 0, out_k = 0; p < f->n_params; p++) {
        const ir_buffer *buf = f->params[p];
        int64_t n = 1;
        for (int d = 0; d < buf->rank; d++) n *= buf->shape[d];
        void *data;
        const te_const *c = te_const_of(te, buf);
        if (c) {
            data = c->data;
        } else if (buf->kind == IR_BUF_OUTPUT) {
            while (out_k < node->n_outputs && !node->outputs[out_k]) out_k++;
            smelt_tensor *o = &t->te[out_k++];
            data = o->data = smelt_calloc(n ? (size_t)n : 1, smelt_dtype_size(o->dtype));
        } else {
            while (in_k < node->n_inputs && !t->in[in_k]) in_k++;
            data = t->in[in_k++]->data;
        }
        SMELT_TRY(tir_interp_bind_buffer(it, buf, data, n));
    }
    return SMELT_OK;
}

/* Lower te under s and run the loop IR with the tir interpreter. */
static inline smelt_status opt_run_schedule(opt_node *t, const te_graph *te,
                                            const sch_schedule *s)
{
    sch_state *st = NULL;
    smelt_arena arena;
    smelt_arena_init(&arena);
    ir_builder b;
    ir_builder_init(&b, &arena);
    ir_func *f = NULL;
    tir_interp it;
    tir_interp_init(&it, t->ctx);
    smelt_status r = sch_state_build(t->ctx, te, s, &st);
    if (r == SMELT_OK) r = lower_func(t->ctx, st, &b, "f", &f);
    if (r == SMELT_OK) r = opt_bind_lowered(t, &it, f, te);
    if (r == SMELT_OK) r = tir_interp_run(&it, f->body);
    tir_interp_fini(&it);
    smelt_arena_fini(&arena);
    sch_state_free(st);
    return r;
}

/* Seeds with this bit pick a random point of the default rules' knob space
 * (the tuner's candidates) instead of sch_random's steps. */
#define OPT_KNOB_SEED ((uint64_t)1 << 32)
/* the default schedule of the GPU targets (opencl's block size) */
#define OPT_GPU_SEED ((uint64_t)1 << 40)
#define OPT_KNOB_SCHEDULES 3

/* The default rules with random knobs (each knob's values or 0); knobs the
 * rule refuses for this graph fall back to the plain default. */
static inline smelt_status opt_knob_schedule(smelt_ctx *ctx, const te_graph *te, uint64_t seed,
                                             sch_schedule *s)
{
    sch_knob_space sp;
    SMELT_TRY(sch_default_space(ctx, te, test_hw(8), &sp));
    uint64_t r = seed * 0x9E3779B97F4A7C15ull | 1;
    sch_knobs k;
    for (int i = 0; i < SCH_KNOB_COUNT_; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        int n = sp.n_values[i];
        k.v[i] = n ? sp.values[i][r % (uint64_t)n] : 0;
    }
    smelt_ctx local = {.status = SMELT_OK};
    if (sch_default_knobs(&local, te, test_hw(8), &k, s) == SMELT_OK) return SMELT_OK;
    if (local.status != SMELT_ERR_ARG) return smelt_errf(ctx, local.status, "%s", local.message);
    s->n = 0;
    return sch_default(ctx, te, test_hw(8), s);
}

/* The node's tensor expressions (run-time inputs as placeholders, as
 * exec_node_te makes them) under the schedule `seed` picks (0: the default
 * one; OPT_KNOB_SEED + k: random knobs; else sch_random's), into t->te; *s
 * receives the schedule. */
static inline smelt_status opt_run_lowered(opt_node *t, uint64_t seed, sch_schedule *s)
{
    const gr_node *node = t->node;
    smelt_tensor types[OPT_MAX_IO];
    const smelt_tensor *tin[OPT_MAX_IO];
    for (int i = 0; i < node->n_inputs && i < OPT_MAX_IO; i++) {
        tin[i] = t->in[i] ? &types[i] : NULL;
        if (!t->in[i]) continue;
        types[i] = *t->in[i];
        if (!node->inputs[i]->constant) types[i].data = NULL;
    }
    for (int i = 0; i < OPT_MAX_IO; i++) smelt_free(t->te[i].data);
    memset(t->te, 0, sizeof t->te);
    SMELT_TRY(op_get(node->op)->def->infer(t->ctx, node, t->in, t->te));
    te_graph *te = NULL;
    SMELT_TRY(te_from_node(t->ctx, node, tin, t->te, &te));
    smelt_status r = seed == 0              ? sch_default(t->ctx, te, test_hw(8), s)
                     : seed == OPT_GPU_SEED ? sch_default(t->ctx, te, &cg_target_find("opencl")->hw, s)
                     : seed & OPT_KNOB_SEED ? opt_knob_schedule(t->ctx, te, seed, s)
                                            : sch_random(t->ctx, te, seed, 10, s);
    if (r == SMELT_OK) r = opt_run_schedule(t, te, s);
    te_graph_free(te);
    return r;
}

/* ---- comparing paths ---- */

/* Output o of t->te (the te or the lowered path) against the reference:
 * one check of dtype and shape, one of the values (the first mismatch is
 * reported).  True if both hold. */
static inline bool opt_compare_output(const opt_node *t, const opt_tols *tols, const char *what,
                                      int o)
{
    const smelt_tensor *ref = &t->out[o], *te = &t->te[o];
    const char *op = op_get(t->node->op)->name;
    bool same_type = ref->dtype == te->dtype && ref->rank == te->rank &&
                     op_numel(ref) == op_numel(te);
    if (!same_type)
        fprintf(stderr, "%s (%s): output %d: got %s rank %d, %lld elements; reference %s rank "
                        "%d, %lld elements\n",
                what, op, o, smelt_dtype_name(te->dtype), te->rank, (long long)op_numel(te),
                smelt_dtype_name(ref->dtype), ref->rank, (long long)op_numel(ref));
    CHECK(same_type);
    opt_tol tol = opt_tol_of(tols, ref->dtype);
    int64_t bad = 0, n = same_type ? op_numel(ref) : 0;
    for (int64_t i = 0; i < n; i++) {
        if (opt_same_element(te, ref, i, tol)) continue;
        if (bad++ == 0)
            fprintf(stderr, "%s (%s): output %d, element %lld: got %.17g, reference %.17g\n", what,
                    op, o, (long long)i, op_get_f64(te, i), op_get_f64(ref, i));
    }
    if (bad > 1)
        fprintf(stderr, "%s (%s): output %d: %lld mismatches\n", what, op, o, (long long)bad);
    CHECK(bad == 0);
    return same_type && bad == 0;
}

/* Every present output of t->te against the reference. */
static inline bool opt_compare_outputs(const opt_node *t, const opt_tols *tols, const char *what)
{
    bool ok = true;
    for (int o = 0; o < t->node->n_outputs; o++)
        if (t->node->outputs[o]) ok = opt_compare_output(t, tols, what, o) && ok;
    return ok;
}

/* The lowered path under schedule `seed` against the reference; a failure
 * prints the schedule. */
static inline void opt_check_lowered(opt_node *t, const opt_tols *tols, const char *what,
                                     uint64_t seed)
{
    char where[320];
    if (seed == OPT_GPU_SEED)
        snprintf(where, sizeof where, "%.280s [GPU default schedule]", what);
    else if (seed)
        snprintf(where, sizeof where, "%.280s [random schedule %llu]", what,
                 (unsigned long long)seed);
    else
        snprintf(where, sizeof where, "%.280s [default schedule]", what);
    sch_schedule s;
    sch_schedule_init(&s);
    smelt_status r = opt_run_lowered(t, seed, &s);
    if (r != SMELT_OK) fprintf(stderr, "%s: lowered: %s\n", where, opt_message(t));
    CHECK(r == SMELT_OK);
    if (r != SMELT_OK || !opt_compare_outputs(t, tols, where)) {
        smelt_strbuf sb;
        smelt_strbuf_init(&sb);
        sch_schedule_print(&s, &sb);
        fprintf(stderr, "%s: the schedule:\n%s", where, smelt_strbuf_cstr(&sb));
        smelt_strbuf_fini(&sb);
    }
    smelt_ctx_clear(t->ctx);
    sch_schedule_fini(&s);
}

/* All paths on the bound inputs: the reference and te must succeed and
 * agree on every present output, then the lowered path under the default
 * schedule and the suite's random ones. */
static inline void opt_check_paths(opt_node *t, const opt_suite *s, const char *what)
{
    smelt_status r = opt_run_reference(t);
    if (r != SMELT_OK) fprintf(stderr, "%s: reference: %s\n", what, opt_message(t));
    CHECK(r == SMELT_OK);
    smelt_status r_te = r == SMELT_OK ? opt_run_te(t) : r;
    if (r == SMELT_OK && r_te != SMELT_OK) fprintf(stderr, "%s: te: %s\n", what, opt_message(t));
    CHECK(r_te == SMELT_OK);
    if (r_te != SMELT_OK) return;
    opt_compare_outputs(t, &s->tols, what);
    for (int k = 0; k <= s->random_schedules; k++)
        opt_check_lowered(t, &s->tols, what, (uint64_t)k);
    for (int k = 1; k <= OPT_KNOB_SCHEDULES; k++)
        opt_check_lowered(t, &s->tols, what, OPT_KNOB_SEED + (uint64_t)k);
    /* the GPU targets' schedule (bound loops run serially in the interpreter) */
    opt_check_lowered(t, &s->tols, what, OPT_GPU_SEED);
}

static inline void opt_check_case(const opt_suite *s, const opt_case *c)
{
    opt_node t;
    smelt_status st = opt_case_init(&t, s, c);
    if (st != SMELT_OK) fprintf(stderr, "%s: import: %s\n", c->what, opt_message(&t));
    CHECK(st == SMELT_OK);
    if (st == SMELT_OK) opt_check_paths(&t, s, c->what);
    opt_fini(&t);
}

/* The te path refuses the case cleanly: `status` and a message with `needle`. */
static inline void opt_check_te_refuses(const opt_suite *s, const opt_case *c,
                                        smelt_status status, const char *needle)
{
    opt_node t;
    CHECK(opt_case_init(&t, s, c) == SMELT_OK);
    CHECK(opt_run_te(&t) == status);
    CHECK_STR_CONTAINS(opt_message(&t), needle);
    opt_fini(&t);
}

/* Data the reference refuses at run time (an index out of range, a zero
 * divisor): the te path and the lowered path under the default and the
 * suite's random schedules must fail the same way, with `needle` in the
 * message (their run-time checks). */
static inline void opt_check_data_error(const opt_suite *s, const opt_case *c, const char *needle)
{
    opt_node t;
    CHECK(opt_case_init(&t, s, c) == SMELT_OK);
    CHECK(opt_run_reference(&t) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(opt_message(&t), needle);
    smelt_ctx_clear(t.ctx);
    CHECK(opt_run_te(&t) == SMELT_ERR_RUNTIME);
    CHECK_STR_CONTAINS(opt_message(&t), needle);
    for (int k = 0; k <= s->random_schedules; k++) {
        smelt_ctx_clear(t.ctx);
        sch_schedule sc;
        sch_schedule_init(&sc);
        smelt_status r = opt_run_lowered(&t, (uint64_t)k, &sc);
        if (r != SMELT_ERR_RUNTIME) fprintf(stderr, "%s [schedule %d]: %s\n", c->what, k, opt_message(&t));
        CHECK(r == SMELT_ERR_RUNTIME);
        CHECK_STR_CONTAINS(opt_message(&t), needle);
        sch_schedule_fini(&sc);
    }
    opt_fini(&t);
}

static inline void opt_check_cases(const opt_suite *s, const opt_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) opt_check_case(s, &cases[i]);
}

#endif
