/* Compiled code needs static shapes.  A model whose shapes depend on its
 * inputs (symbolic dims, or a Reshape/Expand/Slice... fed by a model input)
 * is compiled per input signature, as JIT compilers do: the graph is
 * imported again with the run's input dims, and small inputs whose values
 * the shapes depend on (a Reshape's target, Resize scales, Range bounds)
 * become constants; shapes are inferred, and the result is compiled and
 * cached under a key holding exactly what was specialised on: every input's
 * dims and the bytes of the inputs made constants.  Only inputs the shapes
 * need are bound: a bound data input would fold its consumers away, so the
 * compiled code would not run them, and every new value would compile anew.
 * Sequences and optionals are specialised on their structure (element
 * counts and shapes, in the key) and unrolled into their elements
 * (passes/unroll_containers.c): a container input is passed as its tensor
 * elements, and container outputs are rebuilt from theirs.
 *
 * Data-dependent counts.  An op whose output's row count depends on the
 * data (NonMaxSuppression, NonZero, Compress, Unique) and that knows a bound
 * for it (op_def.count_bound)
 * leaves the graph static but for that count: the graph is inferred with
 * the count at its bound, and the count becomes a run-time dim
 * (api/rt_dims.c) whose value the op's kernel writes mid-run
 * (gr_rt_dim.data); the ops after it loop over the selected rows only, and
 * the outputs take the run's count (smelt_rt_model_run_ex). */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "frontend/onnx.h"
#include "lower/program.h"
#include "ops/op.h"
#include "passes/passes.h"
#include "smelt_internal.h"

/* Inputs up to this size may be treated as shape data. */
#define SPEC_MAX_SHAPE_INPUT_ELEMS 64
#define SPEC_MAX_CACHED 8
#define SPEC_MAX_INPUTS 256

struct smelt_specialization {
    smelt_strbuf key;
    bool unrolled;              /* containers unrolled: inputs flattened, outputs rebuilt */
    pass_unroll_layout layout;  /* how (the model's outputs from the compiled ones) */
    char why[400];              /* why containers stayed, when they did */
    smelt_model *model;  /* static graph, compiled */
    bool bound[SPEC_MAX_INPUTS]; /* the original inputs made constants */
    int n_inputs;        /* inputs of the specialised model ... */
    int input_map[SPEC_MAX_INPUTS]; /* ... and which original input each one is */
    int n_counts;       /* data-dependent dims given sizes (bind_counts) */
    gr_data_bind counts[GR_MAX_DATA_BINDS]; /* values: smelt_strdup */
    int count_sym[GR_MAX_DATA_BINDS];       /* the count each is (dims of one share it) */
    char count_why[400]; /* why the counts could not be taken at run time, when they could not */
};

bool smelt_graph_is_static(const gr_graph *g)
{
    for (int i = 0; i < g->values.len; i++) {
        const gr_value *v = g->values.items[i];
        if (!v->producer && !v->is_input) continue;
        /* a container's structure is specialised per run too */
        if (gr_value_numel(v) < 0 || smelt_dtype_is_container(v->dtype)) return false;
    }
    return true;
}

static bool is_small(const smelt_tensor *t)
{
    return smelt_tensor_numel(t) <= SPEC_MAX_SHAPE_INPUT_ELEMS && smelt_dtype_size(t->dtype) > 0;
}

/* Candidates by level: 0 none, 1 small integer inputs, 2 small float inputs
 * too (Resize scales, Range bounds). */
static bool bindable(const smelt_tensor *t, int level)
{
    if (level == 0 || !is_small(t)) return false;
    bool is_int = t->dtype == SMELT_DT_INT64 || t->dtype == SMELT_DT_INT32;
    return is_int || level > 1;
}

/* A value's type and dims, a container's elements' too. */
static void key_type(const smelt_tensor *t, smelt_strbuf *key)
{
    smelt_strbuf_printf(key, "%d[", (int)t->dtype);
    for (int d = 0; d < t->rank; d++) smelt_strbuf_printf(key, "%lld,", (long long)t->dims[d]);
    smelt_strbuf_append(key, "]");
    if (!smelt_dtype_is_container(t->dtype)) return;
    const smelt_tensor *items = t->data;
    smelt_strbuf_append(key, "(");
    for (int64_t k = 0; k < t->dims[0]; k++) key_type(&items[k], key);
    smelt_strbuf_append(key, ")");
}

/* Every input's dims, and the bytes of those bound. */
static void make_key(const smelt_tensor *inputs, int n, const bool *bound, smelt_strbuf *key)
{
    for (int i = 0; i < n; i++) {
        const smelt_tensor *t = &inputs[i];
        smelt_strbuf_printf(key, "%d:", i);
        key_type(t, key);
        if (bound[i]) {
            const unsigned char *p = t->data;
            for (size_t k = 0; k < smelt_tensor_nbytes(t); k++) smelt_strbuf_printf(key, "%02x", p[k]);
        }
        smelt_strbuf_append(key, ";");
    }
}

static smelt_tensor *copy_tensor(const smelt_tensor *t)
{
    smelt_tensor *c = smelt_calloc(1, sizeof *c);
    size_t nb = smelt_tensor_nbytes(t);
    if (!c) return NULL;
    *c = *t;
    c->name = NULL;
    c->data = smelt_alloc(nb ? nb : 1);
    if (!c->data) {
        smelt_free(c);
        return NULL;
    }
    if (nb) memcpy(c->data, t->data, nb);
    return c;
}

/* Give g's inputs the run's dims; turn the bound ones into constants. */
static smelt_status bind_inputs(smelt_ctx *ctx, gr_graph *g, const smelt_tensor *inputs, int n,
                                const bool *bind, struct smelt_specialization *sp)
{
    if (g->inputs.len != n)
        return smelt_errf(ctx, SMELT_ERR_ARG, "the model takes %d inputs, %d given", g->inputs.len, n);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        gr_value *v = g->inputs.items[i];
        SMELT_TRY(exec_check_input(ctx, g, v, &inputs[i]));
        if (bind[i]) {
            smelt_tensor *c = copy_tensor(&inputs[i]);
            if (!c) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
            v->is_input = false;
            SMELT_TRY(gr_value_set_constant(ctx, g, v, c));
            continue;
        }
        v->rank = inputs[i].rank;
        for (int d = 0; d < v->rank; d++) v->dims[d] = inputs[i].dims[d];
        g->inputs.items[kept] = v;
        sp->input_map[kept++] = i;
    }
    g->inputs.len = kept;
    sp->n_inputs = kept;
    memcpy(sp->bound, bind, (size_t)n * sizeof *bind);
    return SMELT_OK;
}

/* Containers unrolled into their elements (sp->unrolled), or left with
 * the reason in sp->why (the graph then stays dynamic). */
static smelt_status unroll(smelt_ctx *ctx, gr_graph *g, const smelt_tensor *inputs,
                           struct smelt_specialization *sp)
{
    pass_unroll_layout_fini(&sp->layout);
    sp->unrolled = false;
    sp->why[0] = '\0';
    if (!pass_unroll_applies(g)) return SMELT_OK;
    const smelt_tensor *actual[SPEC_MAX_INPUTS];
    for (int k = 0; k < g->inputs.len; k++) actual[k] = &inputs[sp->input_map[k]];
    bool resolved;
    SMELT_TRY(pass_unroll_containers(ctx, g, actual, &sp->layout, &resolved, sp->why, sizeof sp->why));
    sp->unrolled = resolved;
    if (!resolved) return SMELT_OK;
    g->infer_stop = NULL; /* an element's shape, unknown through its container, is known now */
    return pass_infer_shapes(ctx, g);
}

/* sp's count sizes onto g, before it is inferred. */
static smelt_status bind_count_sizes(smelt_ctx *ctx, gr_graph *g, const struct smelt_specialization *sp)
{
    for (int k = 0; k < sp->n_counts; k++) {
        g->data_binds[k] = sp->counts[k];
        if (!(g->data_binds[k].value = smelt_arena_strdup(&g->arena, sp->counts[k].value)))
            return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    g->n_data_binds = sp->n_counts;
    return SMELT_OK;
}

/* Import again and bind the inputs; the caller asks smelt_graph_is_static. */
static smelt_status try_bind(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs, int n,
                             const bool *bind, struct smelt_specialization *sp, gr_graph **out)
{
    gr_graph *g;
    SMELT_TRY(onnx_import(ctx, m->bytes, m->size, m->base_dir, &g));
    smelt_status s = bind_inputs(ctx, g, inputs, n, bind, sp);
    if (s == SMELT_OK) s = bind_count_sizes(ctx, g, sp);
    if (s == SMELT_OK) s = pass_infer_shapes(ctx, g);
    if (s == SMELT_OK) s = unroll(ctx, g, inputs, sp);
    if (s == SMELT_OK && sp->why[0]) { /* left half rewritten: the containers again */
        gr_graph_free(g);
        s = onnx_import(ctx, m->bytes, m->size, m->base_dir, &g);
        if (s != SMELT_OK) return s;
        s = bind_inputs(ctx, g, inputs, n, bind, sp);
        if (s == SMELT_OK) s = pass_infer_shapes(ctx, g);
    }
    if (s == SMELT_OK) s = gr_graph_verify(ctx, g);
    if (s != SMELT_OK) {
        gr_graph_free(g);
        return s;
    }
    *out = g;
    return SMELT_OK;
}

/* The first input dim left symbolic, as "input 'X' dim 0 ('N')". */
static bool first_symbolic_input(const gr_graph *g, smelt_strbuf *out)
{
    for (int i = 0; i < g->inputs.len; i++) {
        const gr_value *v = g->inputs.items[i];
        for (int d = 0; d < v->rank; d++) {
            if (v->dims[d] >= 0) continue;
            int sym = GR_DIM_SYM_ID(v->dims[d]);
            const char *name = sym >= 0 && sym < g->syms.len ? g->syms.items[sym] : NULL;
            smelt_strbuf_printf(out, "input '%s' dim %d (%s)", v->name, d,
                                name && *name ? name : "unnamed");
            return true;
        }
    }
    return false;
}

smelt_status smelt_graph_refuse_dynamic(smelt_ctx *ctx, const gr_graph *g)
{
    /* a sequence's count is dynamic too, but that is not the reason */
    SMELT_TRY(lower_refuse_containers(ctx, g));
    smelt_strbuf where;
    smelt_strbuf_init(&where);
    if (first_symbolic_input(g, &where)) {
        smelt_status s = smelt_errf(ctx, SMELT_ERR_UNSUPPORTED,
                                    "%s is symbolic and compiled code needs static shapes: give "
                                    "its value (smelt_model_set_dim, --dim NAME=VALUE); runs "
                                    "compile one specialisation per input signature",
                                    smelt_strbuf_cstr(&where));
        smelt_strbuf_fini(&where);
        return s;
    }
    smelt_strbuf_fini(&where);
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *node = g->nodes.items[i];
        for (int o = 0; o < node->n_outputs; o++) {
            const gr_value *v = node->outputs[o];
            if (!v || gr_value_numel(v) >= 0) continue;
            if (v->rank < 0 && g->infer_stop) /* inference gave up here: its reason */
                return smelt_errf_at(ctx, SMELT_ERR_UNSUPPORTED, node->name, node->op_type, "%s",
                                     g->infer_stop);
            const op_def *def = op_get(node->op)->def;
            if (def && def->count_bound)
                return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                               "output '%s' has a row count that depends on the data: runs "
                               "compile the model with the count taken at run time (smelt run, "
                               "check, bench; smelt_model_run), not ahead of its inputs",
                               v->name);
            return op_errf(ctx, node, SMELT_ERR_UNSUPPORTED,
                           "output '%s' has a shape that depends on the data, and compiled "
                           "code needs static shapes (it folds only when the node's inputs "
                           "are known when the model is specialised: constants, or model "
                           "inputs of at most %d elements); use the reference executor",
                           v->name, SPEC_MAX_SHAPE_INPUT_ELEMS);
        }
    }
    return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED,
                      "shapes stay dynamic even with the inputs' shapes known");
}

/* A data-dependent dim with a bound (op_def.count_bound). */
typedef struct count_dim {
    const gr_value *v;
    int dim, sym;
    int64_t bound;
} count_dim;

/* g's data-dependent dims with bounds into c (*n of them; dims of one
 * count, as Unique's outputs, share its symbol); false when there are none
 * or too many. */
static bool find_counts(const gr_graph *g, count_dim *c, int *n)
{
    *n = 0;
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *node = g->nodes.items[i];
        const op_def *def = op_get(node->op)->def;
        if (!def || !def->count_bound) continue;
        for (int o = 0; o < node->n_outputs; o++) {
            const gr_value *v = node->outputs[o];
            for (int d = 0; v && d < v->rank; d++) {
                int64_t bound = v->dims[d] < 0 ? def->count_bound(node, o, d) : -1;
                if (bound < 0) continue;
                if (*n == GR_MAX_DATA_BINDS) return false;
                c[(*n)++] = (count_dim){v, d, GR_DIM_SYM_ID(v->dims[d]), bound};
            }
        }
    }
    return *n > 0;
}

static void reset_counts(struct smelt_specialization *sp)
{
    for (int k = 0; k < sp->n_counts; k++) smelt_free((void *)sp->counts[k].value);
    sp->n_counts = 0;
}

/* The graph with sp's counts at their sizes, each made a run-time dim the
 * kernel writes, after comparing it with the graph at that size less one. */
static smelt_status counts_at_sizes(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                    int n, const bool *bind, struct smelt_specialization *sp,
                                    gr_graph **out)
{
    gr_graph *a = NULL;
    SMELT_TRY(try_bind(ctx, m, inputs, n, bind, sp, &a));
    smelt_status s = SMELT_OK;
    for (int k = 0; s == SMELT_OK && k < sp->n_counts; k++) {
        int64_t size = sp->counts[k].size;
        bool first = true; /* of its count */
        for (int j = 0; j < k; j++) first = first && sp->count_sym[j] != sp->count_sym[k];
        if (size == 0 || !first) continue; /* 0: nothing can be selected, a static 0 */
        gr_graph *b = NULL;
        for (int j = k; j < sp->n_counts; j++)
            if (sp->count_sym[j] == sp->count_sym[k]) sp->counts[j].size = size - 1;
        s = try_bind(ctx, m, inputs, n, bind, sp, &b);
        for (int j = k; j < sp->n_counts; j++)
            if (sp->count_sym[j] == sp->count_sym[k]) sp->counts[j].size = size;
        char name[200];
        snprintf(name, sizeof name, "count(%s)", sp->counts[k].value);
        gr_rt_dim r = {.name = name, .min = 0, .max = size, .data = true};
        if (s == SMELT_OK) s = smelt_rt_dim_add_compared(ctx, a, b, r);
        gr_graph_free(b);
    }
    if (s != SMELT_OK) {
        gr_graph_free(a);
        return s;
    }
    *out = a;
    return SMELT_OK;
}

/* *g static but for data-dependent counts: each given its bound, moved
 * until no other dim has that size (the run-time dim is found by size) and
 * the counts' sizes are 2 apart; then *g replaced by the graph at those
 * sizes with the counts as run-time dims. */
static smelt_status bind_counts(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs, int n,
                                const bool *bind, struct smelt_specialization *sp, gr_graph **g)
{
    count_dim c[GR_MAX_DATA_BINDS];
    int nc;
    if (!find_counts(*g, c, &nc)) return SMELT_OK;
    for (int k = 0; k < nc; k++) {
        sp->counts[k] = (gr_data_bind){smelt_strdup(c[k].v->name), c[k].dim, c[k].bound};
        sp->count_sym[k] = c[k].sym;
        sp->n_counts = k + 1;
        if (!sp->counts[k].value) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        int same = -1; /* an earlier dim of the same count */
        for (int j = 0; j < k; j++)
            if (sp->count_sym[j] == c[k].sym) same = j;
        if (same >= 0) {
            sp->counts[k].size = sp->counts[same].size;
            continue;
        }
        for (int j = 0; j < k && sp->counts[k].size > 0; j++)
            if (sp->count_sym[j] != c[k].sym && llabs(sp->counts[k].size - sp->counts[j].size) < 2) {
                sp->counts[k].size = sp->counts[j].size + 2;
                j = -1; /* again against all */
            }
    }
    gr_graph *a = NULL;
    smelt_status s = SMELT_ERR_UNSUPPORTED;
    /* a dim of another value that happens to equal a bound is refused by
     * the comparison: a larger size (+7, so the 2-apart rule holds) */
    for (int tries = 0; tries < 4 && s == SMELT_ERR_UNSUPPORTED; tries++) {
        if (tries) smelt_ctx_clear(ctx);
        for (int k = 0; tries && k < nc; k++)
            if (sp->counts[k].size > 0) sp->counts[k].size += 7;
        s = counts_at_sizes(ctx, m, inputs, n, bind, sp, &a);
    }
    if (s != SMELT_OK) return s;
    gr_graph_free(*g);
    *g = a;
    return SMELT_OK;
}

/* *g imported afresh with bind (no counts), then, when it stays dynamic,
 * its counts bound (a count whose sizes the comparison refuses leaves *g
 * dynamic: its op is then refused naming it).  Counts are only ever sized
 * through bind_counts, which makes each a run-time dim. */
static smelt_status bind_with_counts(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                     int n, const bool *bind, struct smelt_specialization *sp,
                                     gr_graph **g)
{
    reset_counts(sp);
    sp->count_why[0] = '\0';
    gr_graph_free(*g);
    *g = NULL;
    SMELT_TRY(try_bind(ctx, m, inputs, n, bind, sp, g));
    if (smelt_graph_is_static(*g)) return SMELT_OK;
    smelt_status s = bind_counts(ctx, m, inputs, n, bind, sp, g);
    if (s != SMELT_ERR_UNSUPPORTED) return s;
    snprintf(sp->count_why, sizeof sp->count_why, "%s", smelt_ctx_message(ctx));
    smelt_ctx_clear(ctx);
    reset_counts(sp);
    return SMELT_OK;
}

/* The fewest bindings that make the graph static: the first level that
 * does, then each of its inputs unbound again where the shapes stay static
 * without it (an input the shapes do not read).  *g: the graph bound as sp
 * and bind say (still dynamic when no level made it static). */
static smelt_status choose_binding(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                   int n, struct smelt_specialization *sp, bool *bind,
                                   gr_graph **g)
{
    int level = 0;
    for (; level < 3; level++) {
        for (int i = 0; i < n; i++) bind[i] = bindable(&inputs[i], level);
        SMELT_TRY(bind_with_counts(ctx, m, inputs, n, bind, sp, g));
        if (smelt_graph_is_static(*g)) break;
    }
    if (level == 0 || level == 3) return SMELT_OK;
    struct smelt_specialization trial = {0};
    smelt_status s = SMELT_OK;
    for (int i = 0; i < n; i++) {
        if (!bind[i]) continue;
        bind[i] = false;
        gr_graph *t = NULL;
        s = try_bind(ctx, m, inputs, n, bind, &trial, &t);
        if (s == SMELT_OK && smelt_graph_is_static(t)) {
            gr_graph_free(*g);
            *g = t;
            reset_counts(sp); /* t has none */
            memcpy(sp->bound, trial.bound, sizeof sp->bound);
            memcpy(sp->input_map, trial.input_map, sizeof sp->input_map);
            sp->n_inputs = trial.n_inputs;
            pass_unroll_layout_fini(&sp->layout); /* the unrolling goes with the graph */
            sp->layout = trial.layout;
            sp->unrolled = trial.unrolled;
            memset(&trial.layout, 0, sizeof trial.layout);
            continue;
        }
        gr_graph_free(t);
        if (s == SMELT_ERR_NOMEM) break;
        smelt_ctx_clear(ctx); /* unbound, inference failed: the shapes need it */
        s = SMELT_OK;
        bind[i] = true;
    }
    pass_unroll_layout_fini(&trial.layout);
    return s;
}

smelt_status smelt_model_with_counts(smelt_ctx *ctx, smelt_model *m, smelt_model **out)
{
    const gr_graph *g0 = m->graph;
    int n = g0->inputs.len;
    *out = NULL;
    if (!m->bytes || n > SPEC_MAX_INPUTS) return smelt_graph_refuse_dynamic(ctx, g0);
    for (int i = 0; i < n; i++) {
        const gr_value *v = g0->inputs.items[i];
        if (gr_value_numel(v) < 0 || smelt_dtype_is_container(v->dtype))
            return smelt_graph_refuse_dynamic(ctx, g0);
    }
    /* inputs of the model's types (zeros: nothing is bound by value) */
    smelt_tensor shapes[SPEC_MAX_INPUTS];
    bool bind[SPEC_MAX_INPUTS] = {false};
    smelt_status s = SMELT_OK;
    for (int i = 0; i < n; i++) {
        const gr_value *v = g0->inputs.items[i];
        shapes[i] = (smelt_tensor){.dtype = v->dtype, .rank = v->rank};
        memcpy(shapes[i].dims, v->dims, sizeof shapes[i].dims);
        shapes[i].data = smelt_calloc(smelt_tensor_nbytes(&shapes[i]) + 1, 1);
        if (!shapes[i].data) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    struct smelt_specialization sp = {0};
    gr_graph *g = NULL;
    if (s == SMELT_OK) s = bind_with_counts(ctx, m, shapes, n, bind, &sp, &g);
    for (int i = 0; i < n; i++) smelt_free(shapes[i].data);
    reset_counts(&sp);
    pass_unroll_layout_fini(&sp.layout);
    if (s == SMELT_OK && (!smelt_graph_is_static(g) || g->n_rt_dims == 0))
        s = sp.count_why[0] ? smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "%s", sp.count_why)
                            : smelt_graph_refuse_dynamic(ctx, g0);
    if (s == SMELT_OK && !(*out = smelt_model_from_graph(g)))
        s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s != SMELT_OK) {
        gr_graph_free(g);
        return s;
    }
    (*out)->options = m->options;
    return SMELT_OK;
}

/* Compile the static graph g (taken) as sp's model. */
static smelt_status compile_bound(smelt_ctx *ctx, smelt_model *m, gr_graph *g,
                                  struct smelt_specialization *sp)
{
    if (!smelt_graph_is_static(g)) {
        const char *why = sp->why[0] ? sp->why : sp->count_why;
        smelt_status s = why[0] ? smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "%s; the reference "
                                             "executor runs it (--reference)", why)
                                : smelt_graph_refuse_dynamic(ctx, g);
        gr_graph_free(g);
        return s;
    }
    if (!(sp->model = smelt_model_from_graph(g)))
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (smelt_model_runs_cross(m)) { /* built into a program at each run */
        sp->model->options = m->options;
        return SMELT_OK;
    }
    return smelt_model_compile(ctx, sp->model, &m->options);
}

static smelt_status specialize(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs, int n,
                               struct smelt_specialization *sp)
{
    if (!m->bytes)
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED,
                          "the model has dynamic shapes and was not loaded from bytes");
    if (n > SPEC_MAX_INPUTS) return smelt_errf(ctx, SMELT_ERR_LIMIT, "more than 256 inputs");
    bool bind[SPEC_MAX_INPUTS], all[SPEC_MAX_INPUTS];
    gr_graph *g = NULL;
    smelt_status s = choose_binding(ctx, m, inputs, n, sp, bind, &g);
    if (s != SMELT_OK) {
        gr_graph_free(g);
        return s;
    }
    s = compile_bound(ctx, m, g, sp);
    bool more = false;
    for (int i = 0; i < n; i++) {
        all[i] = bindable(&inputs[i], 2);
        more |= all[i] && !bind[i];
    }
    if (s != SMELT_ERR_UNSUPPORTED || !more) return s;
    /* compiled code may need a value the shapes do not (an axis given as an
     * input): every small input bound, as the reference would fold it */
    smelt_model_free(sp->model);
    sp->model = NULL;
    smelt_ctx_clear(ctx);
    g = NULL;
    SMELT_TRY(bind_with_counts(ctx, m, inputs, n, all, sp, &g));
    return compile_bound(ctx, m, g, sp);
}

static void free_spec(struct smelt_specialization *sp)
{
    if (!sp) return;
    smelt_strbuf_fini(&sp->key);
    reset_counts(sp);
    smelt_model_free(sp->model);
    pass_unroll_layout_fini(&sp->layout);
    smelt_free(sp);
}

void smelt_specializations_free(smelt_model *m)
{
    for (int i = 0; i < m->specs.len; i++) free_spec(m->specs.items[i]);
    smelt_ptrvec_fini(&m->specs);
}

/* The cached specialisation whose key these inputs give (the key built once
 * per bound set: cached entries mostly share one), or NULL. */
static struct smelt_specialization *find_spec(smelt_model *m, const smelt_tensor *inputs, int n)
{
    struct smelt_specialization *hit = NULL;
    const bool *keyed = NULL;
    smelt_strbuf key;
    smelt_strbuf_init(&key);
    for (int i = 0; !hit && i < m->specs.len; i++) {
        struct smelt_specialization *sp = m->specs.items[i];
        if (!keyed || memcmp(keyed, sp->bound, (size_t)n * sizeof *keyed) != 0) {
            smelt_strbuf_fini(&key);
            smelt_strbuf_init(&key);
            make_key(inputs, n, sp->bound, &key);
            keyed = sp->bound;
        }
        if (strcmp(smelt_strbuf_cstr(&sp->key), smelt_strbuf_cstr(&key)) == 0) hit = sp;
    }
    smelt_strbuf_fini(&key);
    return hit;
}

static smelt_status find_or_build(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                  int n, struct smelt_specialization **out)
{
    if ((*out = find_spec(m, inputs, n))) return SMELT_OK;
    struct smelt_specialization *sp = smelt_calloc(1, sizeof *sp);
    if (!sp) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_strbuf_init(&sp->key);
    smelt_status s = specialize(ctx, m, inputs, n, sp);
    if (s == SMELT_OK) make_key(inputs, n, sp->bound, &sp->key);
    if (s == SMELT_OK && m->specs.len == SPEC_MAX_CACHED) { /* drop the oldest */
        free_spec(m->specs.items[0]);
        memmove(m->specs.items, m->specs.items + 1, sizeof(void *) * (size_t)(m->specs.len - 1));
        m->specs.len--;
    }
    if (s == SMELT_OK && !smelt_ptrvec_push(&m->specs, sp)) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "OOM");
    if (s != SMELT_OK) {
        free_spec(sp);
        return s;
    }
    *out = sp;
    return SMELT_OK;
}

/* t, or a container's tensor elements in pre-order, appended to list
 * (the data stays the caller's); false past SPEC_MAX_INPUTS. */
static bool flatten_input(const smelt_tensor *t, smelt_tensor *list, int *n)
{
    if (!smelt_dtype_is_container(t->dtype)) {
        if (*n == SPEC_MAX_INPUTS) return false;
        list[(*n)++] = *t;
        return true;
    }
    const smelt_tensor *items = t->data;
    for (int64_t k = 0; k < t->dims[0]; k++)
        if (!flatten_input(&items[k], list, n)) return false;
    return true;
}

/* Layout node *at (and what it holds) rebuilt into out from the compiled
 * model's outputs, whose data it takes; *at moves past it. */
static smelt_status rebuild(smelt_ctx *ctx, const pass_unroll_layout *l, int *at,
                            smelt_tensor *flat, smelt_tensor *out)
{
    const pass_unroll_node *nd = &l->nodes[(*at)++];
    memset(out, 0, sizeof *out);
    if (nd->flat >= 0) {
        *out = flat[nd->flat];
        out->name = NULL;
        flat[nd->flat].data = NULL; /* taken */
        return SMELT_OK;
    }
    out->dtype = nd->dtype;
    out->rank = 1;
    out->dims[0] = nd->count;
    smelt_tensor *items = smelt_calloc((size_t)nd->count + 1, sizeof *items);
    if (!items) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    out->data = items;
    for (int k = 0; k < nd->count; k++) SMELT_TRY(rebuild(ctx, l, at, flat, &items[k]));
    return SMELT_OK;
}

static smelt_status rebuild_outputs(smelt_ctx *ctx, const gr_graph *g, const pass_unroll_layout *l,
                                    smelt_tensor *flat, smelt_tensor *outputs, int n)
{
    smelt_status s = n == l->n_outputs ? SMELT_OK
                                       : smelt_errf(ctx, SMELT_ERR_ARG, "the model has %d outputs, "
                                                    "%d given", l->n_outputs, n);
    for (int o = 0; s == SMELT_OK && o < n; o++) {
        int at = l->first[o];
        s = rebuild(ctx, l, &at, flat, &outputs[o]);
        const gr_value *v = g->outputs.items[o];
        if (s == SMELT_OK && !(outputs[o].name = smelt_strdup(v->name)))
            s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    if (s != SMELT_OK)
        for (int o = 0; o < n; o++) smelt_tensor_release(&outputs[o]);
    return s;
}

static smelt_status run_spec(smelt_ctx *ctx, smelt_model *m, struct smelt_specialization *sp,
                             const smelt_tensor *in, int n_in, smelt_tensor *out, int n_out)
{
    smelt_status s = smelt_model_runs_cross(sp->model)
                         ? smelt_model_run_cross(ctx, sp->model, in, n_in, out, n_out)
                         : smelt_model_run(ctx, sp->model, in, n_in, out, n_out);
    if (s == SMELT_OK) m->last_nodes = smelt_model_last_nodes(sp->model);
    return s;
}

smelt_status smelt_run_specialized(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                   int num_inputs, smelt_tensor *outputs, int num_outputs)
{
    /* checked against the model's own inputs before the cache key reads
     * their dims and bytes */
    const gr_graph *g = m->graph;
    if (num_inputs != g->inputs.len || (num_inputs && !inputs))
        return smelt_errf(ctx, SMELT_ERR_ARG, "the model takes %d inputs, %d given",
                          g->inputs.len, inputs ? num_inputs : 0);
    for (int i = 0; i < num_inputs; i++)
        SMELT_TRY(exec_check_input(ctx, g, g->inputs.items[i], &inputs[i]));
    struct smelt_specialization *sp = NULL;
    SMELT_TRY(find_or_build(ctx, m, inputs, num_inputs, &sp));
    smelt_tensor mapped[SPEC_MAX_INPUTS];
    int n_mapped = 0;
    for (int i = 0; i < sp->n_inputs; i++)
        if (!flatten_input(&inputs[sp->input_map[i]], mapped, &n_mapped))
            return smelt_errf(ctx, SMELT_ERR_LIMIT, "more than %d input tensors", SPEC_MAX_INPUTS);
    if (!sp->unrolled) return run_spec(ctx, m, sp, mapped, n_mapped, outputs, num_outputs);
    int n_flat = smelt_model_num_outputs(sp->model);
    smelt_tensor *flat = smelt_calloc((size_t)n_flat + 1, sizeof *flat);
    if (!flat) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_status s = run_spec(ctx, m, sp, mapped, n_mapped, flat, n_flat);
    if (s == SMELT_OK) s = rebuild_outputs(ctx, g, &sp->layout, flat, outputs, num_outputs);
    for (int k = 0; k < n_flat; k++) smelt_tensor_release(&flat[k]);
    smelt_free(flat);
    return s;
}

/* Replace symbol sym by value in the inputs' dims; false if none had it. */
static bool bind_symbol(gr_graph *g, int sym, int64_t value)
{
    bool found = false;
    for (int i = 0; i < g->inputs.len; i++) {
        gr_value *v = g->inputs.items[i];
        for (int d = 0; d < v->rank; d++)
            if (v->dims[d] == GR_DIM_SYM(sym)) {
                v->dims[d] = value;
                found = true;
            }
    }
    return found;
}

static int named_symbol(const gr_graph *g, const char *name)
{
    return (int)((intptr_t)smelt_strmap_get(&g->sym_index, name) - 1);
}

static bool input_has_symbol(const gr_graph *g, int sym)
{
    for (int i = 0; i < g->inputs.len; i++) {
        const gr_value *v = g->inputs.items[i];
        for (int d = 0; d < v->rank; d++)
            if (v->dims[d] == GR_DIM_SYM(sym)) return true;
    }
    return false;
}

bool smelt_graph_has_dim(const gr_graph *g, const char *name)
{
    int sym = named_symbol(g, name);
    return sym >= 0 && input_has_symbol(g, sym);
}

smelt_status smelt_model_set_dim_locked(smelt_ctx *ctx, smelt_model *m, const char *name,
                                        int64_t value)
{
    gr_graph *g = m->graph;
    if (m->optimized || m->compiled)
        return smelt_errf(ctx, SMELT_ERR_ARG, "dim '%s': dims are set before the model is first "
                          "compiled or run", name);
    int sym = named_symbol(g, name);
    SMELT_TRY(smelt_bind_tied_dims(ctx, m, NULL, name, value)); /* checks first: all or nothing */
    if (sym < 0 || !bind_symbol(g, sym, value))
        return smelt_errf(ctx, SMELT_ERR_ARG, "no input of the model has a symbolic dim named '%s'",
                          name);
    SMELT_TRY(smelt_bind_tied_dims(ctx, m, g, name, value));
    smelt_specializations_free(m);
    g->infer_stop = NULL; /* inferred again with the value known */
    SMELT_TRY(pass_infer_shapes(ctx, g));
    return gr_graph_verify(ctx, g);
}

smelt_status smelt_bind_tied_dims(smelt_ctx *ctx, const smelt_model *m, gr_graph *g,
                                  const char *base, int64_t value)
{
    for (int k = 0; k < m->n_ties; k++) {
        const struct smelt_dim_tie *t = &m->ties[k];
        if (strcmp(t->base, base) != 0) continue;
        if (value + t->add < 1)
            return smelt_errf(ctx, SMELT_ERR_ARG, "dim '%s' = %lld makes dim '%s' = %s%+lld = %lld, "
                              "below 1", base, (long long)value, t->name, base, (long long)t->add,
                              (long long)(value + t->add));
        if (g) bind_symbol(g, named_symbol(g, t->name), value + t->add);
    }
    return SMELT_OK;
}

static smelt_status tie_locked(smelt_ctx *ctx, smelt_model *m, const char *name, const char *base,
                               int64_t add)
{
    if (m->optimized || m->compiled)
        return smelt_errf(ctx, SMELT_ERR_ARG, "dim '%s': dims are tied before the model is first "
                          "compiled or run", name);
    if (add < -8 || add > 8)
        return smelt_errf(ctx, SMELT_ERR_ARG, "dim '%s' = %s%+lld: a tie's offset is -8..8",
                          name, base, (long long)add);
    if (strcmp(name, base) == 0)
        return smelt_errf(ctx, SMELT_ERR_ARG, "dim '%s' cannot follow itself", name);
    const char *missing = !smelt_graph_has_dim(m->graph, name) ? name
                          : !smelt_graph_has_dim(m->graph, base) ? base : NULL;
    if (missing)
        return smelt_errf(ctx, SMELT_ERR_ARG, "no input of the model has a symbolic dim named "
                          "'%s' (or it was set already: tie dims before setting them)", missing);
    for (int k = 0; k < m->n_ties; k++)
        if (!strcmp(m->ties[k].name, name) || !strcmp(m->ties[k].name, base) ||
            !strcmp(m->ties[k].base, name))
            return smelt_errf(ctx, SMELT_ERR_ARG, "dim '%s' is tied already, or '%s' follows "
                              "another dim: a dim follows at most one, which follows none", name, base);
    if (m->n_ties == SMELT_MAX_DIM_TIES)
        return smelt_errf(ctx, SMELT_ERR_LIMIT, "more than %d tied dims", SMELT_MAX_DIM_TIES);
    struct smelt_dim_tie *t = &m->ties[m->n_ties];
    t->name = smelt_strdup(name);
    t->base = smelt_strdup(base);
    t->add = add;
    if (!t->name || !t->base) {
        smelt_free((void *)t->name);
        smelt_free((void *)t->base);
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    m->n_ties++;
    return SMELT_OK;
}

smelt_status smelt_model_tie_dim(smelt_ctx *ctx, smelt_model *m, const char *name,
                                 const char *base, int64_t add)
{
    smelt_ctx_clear(ctx);
    if (!m || !name || !base) return smelt_errf(ctx, SMELT_ERR_ARG, "NULL model or dim name");
    pthread_mutex_lock(&m->mu);
    smelt_status s = tie_locked(ctx, m, name, base, add);
    pthread_mutex_unlock(&m->mu);
    return s;
}

smelt_status smelt_model_set_dim(smelt_ctx *ctx, smelt_model *m, const char *name, int64_t value)
{
    smelt_ctx_clear(ctx);
    if (!m || !name) return smelt_errf(ctx, SMELT_ERR_ARG, "NULL model or dim name");
    if (value < 1 || value > SMELT_LIMIT_TENSOR_ELEMS)
        return smelt_errf(ctx, SMELT_ERR_ARG, "dim '%s' = %lld: a dim's value must be 1 to %lld",
                          name, (long long)value, (long long)SMELT_LIMIT_TENSOR_ELEMS);
    pthread_mutex_lock(&m->mu);
    smelt_status s = smelt_model_set_dim_locked(ctx, m, name, value);
    pthread_mutex_unlock(&m->mu);
    return s;
}
