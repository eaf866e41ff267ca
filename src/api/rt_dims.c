/* Run-time dims (smelt_model_set_dim_range, CLI --dim NAME=MIN..MAX).
 *
 * The model's graph is inferred with the dim at MAX, so it compiles like a
 * static one: shapes, the memory plan and every buffer's layout are those of
 * MAX, and a run of length n < MAX uses the first n rows of each dim (the
 * rest is padding nobody reads).  Generated loops over such a dim take its
 * extent at run time (lower/nest.c); the runtime stages inputs and outputs
 * through buffers of MAX rows (runtime/model.c).
 *
 * That is sound only when every value's dim either IS the run-time dim or
 * does not depend on it, and constants computed from it are prefixes of
 * their value at MAX.  Which dims are run-time dims is decided by value:
 * a non-constant value's dim equal to MAX.  So the model is imported a
 * second time, inferred at MAX - 1 and compared value by value:
 *   - a dim that differs must be one shorter here: MAX + c there and
 *     MAX - 1 + c here, the dim plus a small constant c (a key/value cache's
 *     present = past + 1; not 2 x seq); the dim's adds are those c != 0;
 *   - a dim equal to MAX + c in both (a non-constant value) would be taken
 *     for the run-time dim plus c: refused (choose another maximum);
 *   - a constant whose dims differ must hold, at MAX - 1, the prefix of its
 *     contents at MAX (position ids sliced to the length: yes; a reversed
 *     range: no);
 *   - a constant of the same dims but other contents (the length itself, a
 *     Reshape's target shape) may only feed inputs that give an output's
 *     shape (Reshape's and Expand's shape, ConstantOfShape, Slice's ends),
 *     whose outputs the comparison checks in turn.
 * Ops' own use of extents is checked when lowering (lower/rt_check.c). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "frontend/onnx.h"
#include "ops/op.h"
#include "passes/passes.h"
#include "smelt_internal.h"

static int named_symbol(const gr_graph *g, const char *name)
{
    return (int)((intptr_t)smelt_strmap_get(&g->sym_index, name) - 1);
}

/* b's inputs take a's static dims; symbol sym of a becomes value in b. */
static smelt_status bind_like(smelt_ctx *ctx, const gr_graph *a, gr_graph *b, int sym,
                              int64_t value)
{
    if (a->inputs.len != b->inputs.len)
        return smelt_errf(ctx, SMELT_ERR_INTERNAL, "re-import gave %d inputs, not %d",
                          b->inputs.len, a->inputs.len);
    for (int i = 0; i < a->inputs.len; i++) {
        const gr_value *va = a->inputs.items[i];
        gr_value *vb = b->inputs.items[i];
        if (va->rank != vb->rank) continue;
        for (int d = 0; d < va->rank; d++) {
            if (va->dims[d] >= 0) vb->dims[d] = va->dims[d];
            else if (va->dims[d] == GR_DIM_SYM(sym)) vb->dims[d] = value;
        }
    }
    return SMELT_OK;
}

/* Whether input k of node n only gives the shape of n's output. */
static bool shape_input(const gr_node *n, int k)
{
    switch (n->op) {
    case OP_RESHAPE:
    case OP_EXPAND: return k == 1;
    case OP_CONSTANT_OF_SHAPE: return k == 0;
    case OP_SLICE: return k == 2; /* ends: a prefix when starts do not move */
    default: return false;
    }
}

/* The end of a refusal about run-time dim r: a dim the user names can be
 * given one value; a data-dependent count has none to give. */
static const char *one_value_hint(const gr_rt_dim *r, char *buf, size_t size)
{
    if (r->data) return "";
    snprintf(buf, size, "; give the dim one value (--dim %s=N)", r->name);
    return buf;
}

static smelt_status check_feeds(smelt_ctx *ctx, const gr_graph *g, const gr_value *v,
                                const gr_rt_dim *r)
{
    char hint[160];
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == v && !shape_input(n, k))
                return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                               "input %d ('%s') is computed from the run-time dim '%s' and "
                               "compiled code cannot take it at run time%s", k, v->name,
                               r->name, one_value_hint(r, hint, sizeof hint));
    }
    return SMELT_OK;
}

/* b (dims of a with one dim shorter, or the same) holds a's prefix. */
static bool is_prefix(const smelt_tensor *a, const smelt_tensor *b)
{
    size_t es = smelt_dtype_size(a->dtype);
    int64_t nb = smelt_tensor_numel(b);
    if (!es || a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int64_t f = 0; f < nb; f++) { /* f: b's flat index -> a's */
        int64_t rest = f, fa = 0, stride = 1;
        for (int d = b->rank - 1; d >= 0; d--) {
            fa += rest % b->dims[d] * stride;
            rest /= b->dims[d];
            stride *= a->dims[d];
        }
        if (memcmp((const char *)a->data + fa * (int64_t)es, (const char *)b->data + f * (int64_t)es, es))
            return false;
    }
    return true;
}

/* A refusal about value v, naming the node that computes it when one does. */
static smelt_status value_refusal(smelt_ctx *ctx, const gr_value *v, smelt_status code,
                                  const char *fmt, ...) SMELT_PRINTF(4, 5);

static smelt_status value_refusal(smelt_ctx *ctx, const gr_value *v, smelt_status code,
                                  const char *fmt, ...)
{
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return v->producer ? op_errf(ctx, v->producer, code, "%s", msg) : smelt_errf(ctx, code, "%s", msg);
}

static smelt_status add_distance(smelt_ctx *ctx, gr_rt_dim *r, const gr_value *va, int d,
                                 int64_t a, int64_t b)
{
    int64_t add = a - r->max;
    char hint[160];
    if (a - b != 1 || add < -GR_RT_ADD_LIMIT || add > GR_RT_ADD_LIMIT)
        return value_refusal(ctx, va, SMELT_ERR_UNSUPPORTED,
                          "value '%s' dim %d is %lld with '%s' = %lld and %lld with %lld: "
                          "compiled code takes at run time only dims that are '%s' plus a "
                          "constant (at most %d)%s",
                          va->name, d, (long long)a, r->name, (long long)r->max, (long long)b,
                          (long long)(r->max - 1), r->name, GR_RT_ADD_LIMIT,
                          one_value_hint(r, hint, sizeof hint));
    if (r->min + add < (r->data ? 0 : 1)) /* a count may be 0, nothing below */
        return value_refusal(ctx, va, SMELT_ERR_UNSUPPORTED,
                          "value '%s' dim %d is '%s' %lld, below 1 at the range's minimum %lld; "
                          "raise the minimum", va->name, d, r->name, (long long)add,
                          (long long)r->min);
    if (add == 0 || gr_rt_dim_matches(r, a, NULL)) return SMELT_OK;
    if (r->n_adds == GR_MAX_RT_ADDS)
        return value_refusal(ctx, va, SMELT_ERR_LIMIT, "value '%s' dim %d: more than %d distinct dims "
                          "follow the run-time dim '%s'", va->name, d, GR_MAX_RT_ADDS, r->name);
    r->adds[r->n_adds++] = add;
    return SMELT_OK;
}

/* r's adds: the distances to the dim of every dim that differs between a
 * (the dim at max) and b (at max - 1). */
static smelt_status collect_adds(smelt_ctx *ctx, const gr_graph *a, const gr_graph *b,
                                 gr_rt_dim *r)
{
    char hint[160];
    if (a->values.len != b->values.len)
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "the graph's values change with the "
                          "run-time dim '%s'%s", r->name, one_value_hint(r, hint, sizeof hint));
    for (int i = 0; i < a->values.len; i++) {
        const gr_value *va = a->values.items[i], *vb = b->values.items[i];
        if (va->rank < 0 || va->rank != vb->rank) continue; /* compare_value reports it */
        for (int d = 0; d < va->rank; d++)
            if (va->dims[d] >= 0 && vb->dims[d] >= 0 && va->dims[d] != vb->dims[d])
                SMELT_TRY(add_distance(ctx, r, va, d, va->dims[d], vb->dims[d]));
    }
    return SMELT_OK;
}

/* The dims r's values take never equal another run-time dim's. */
static smelt_status check_disjoint(smelt_ctx *ctx, const gr_graph *g, const gr_rt_dim *r)
{
    for (int k = 0; k < g->n_rt_dims; k++)
        for (int a = -1; a < r->n_adds; a++) {
            int64_t size = r->max + (a < 0 ? 0 : r->adds[a]);
            if (gr_rt_dim_matches(&g->rt_dims[k], size, NULL))
                return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED,
                                  "dims '%s' and '%s': a value of size %lld would follow both; "
                                  "choose maxima further apart", g->rt_dims[k].name, r->name,
                                  (long long)size);
        }
    return SMELT_OK;
}

/* *varies: va is a constant computed from the dim. */
static smelt_status compare_value(smelt_ctx *ctx, const gr_graph *ga, const gr_value *va,
                                  const gr_value *vb, const gr_rt_dim *r, bool *varies_out)
{
    const char *dim = r->name;
    char hint[160];
    *varies_out = false;
    if (va->rank < 0 || vb->rank < 0) return SMELT_OK; /* unknown: compiling refuses it */
    if (va->rank != vb->rank || !va->constant != !vb->constant)
        return value_refusal(ctx, va, SMELT_ERR_UNSUPPORTED,
                          "value '%s' changes rank or kind with the run-time dim '%s'%s",
                          va->name, dim, one_value_hint(r, hint, sizeof hint));
    bool varies = false;
    for (int d = 0; d < va->rank; d++) {
        int64_t a = va->dims[d], b = vb->dims[d];
        if (a < 0 || b < 0) continue;
        if (a == b && !va->constant && gr_rt_dim_matches(r, a, NULL))
            return value_refusal(ctx, va, SMELT_ERR_UNSUPPORTED,
                              "value '%s' dim %d is %lld whatever the run-time dim '%s' is: "
                              "it would be taken for '%s' (plus %lld); choose another maximum",
                              va->name, d, (long long)a, dim, dim, (long long)(a - r->max));
        varies = varies || a != b; /* collect_adds checked the distance */
    }
    if (!va->constant) return SMELT_OK;
    *varies_out = true;
    if (varies) {
        if (!is_prefix(va->constant, vb->constant))
            return value_refusal(ctx, va, SMELT_ERR_UNSUPPORTED,
                              "constant '%s' is computed from the run-time dim '%s' and is not "
                              "the prefix of its value at %lld%s", va->name, dim,
                              (long long)r->max, one_value_hint(r, hint, sizeof hint));
        return SMELT_OK;
    }
    size_t nb = smelt_tensor_nbytes(va->constant);
    if (nb == smelt_tensor_nbytes(vb->constant) && !memcmp(va->constant->data, vb->constant->data, nb)) {
        *varies_out = false;
        return SMELT_OK;
    }
    return check_feeds(ctx, ga, va, r);
}

/* varies[i]: value i of a is a constant computed from the dim; r gets the
 * dim's adds. */
static smelt_status compare_graphs(smelt_ctx *ctx, const gr_graph *g, const gr_graph *a,
                                   const gr_graph *b, gr_rt_dim *r, bool *varies)
{
    SMELT_TRY(collect_adds(ctx, a, b, r));
    SMELT_TRY(check_disjoint(ctx, g, r));
    for (int i = 0; i < a->values.len; i++)
        SMELT_TRY(compare_value(ctx, a, a->values.items[i], b->values.items[i], r, &varies[i]));
    return SMELT_OK;
}

/* The flags onto m's graph, inferred at max like a (the same import). */
static smelt_status mark_varies(smelt_ctx *ctx, gr_graph *g, const gr_graph *a, const bool *varies)
{
    if (g->values.len != a->values.len)
        return smelt_errf(ctx, SMELT_ERR_INTERNAL, "re-import gave %d values, not %d",
                          a->values.len, g->values.len);
    for (int i = 0; i < g->values.len; i++) {
        gr_value *v = g->values.items[i];
        if (strcmp(v->name, ((const gr_value *)a->values.items[i])->name) != 0)
            return smelt_errf(ctx, SMELT_ERR_INTERNAL, "re-import named value %d '%s', not '%s'",
                              i, ((const gr_value *)a->values.items[i])->name, v->name);
        v->rt_varies = v->rt_varies || (varies[i] && v->constant);
    }
    return SMELT_OK;
}

/* The model imported again with dim sym = value (other dims as m's graph
 * has them), inferred. */
static smelt_status second_point(smelt_ctx *ctx, smelt_model *m, int sym, int64_t value,
                                 gr_graph **out)
{
    gr_graph *g;
    SMELT_TRY(onnx_import(ctx, m->bytes, m->size, m->base_dir, &g));
    smelt_status s = bind_like(ctx, m->graph, g, sym, value);
    if (s == SMELT_OK) s = smelt_bind_tied_dims(ctx, m, g, m->graph->syms.items[sym], value);
    if (s == SMELT_OK) s = pass_infer_shapes(ctx, g);
    if (s != SMELT_OK) {
        gr_graph_free(g);
        return s;
    }
    *out = g;
    return SMELT_OK;
}

smelt_status smelt_rt_dim_add_compared(smelt_ctx *ctx, gr_graph *a, const gr_graph *b,
                                       gr_rt_dim r)
{
    if (a->n_rt_dims == GR_MAX_RT_DIMS)
        return smelt_errf(ctx, SMELT_ERR_LIMIT, "'%s': more than %d run-time dims", r.name,
                          GR_MAX_RT_DIMS);
    bool *varies = smelt_calloc((size_t)a->values.len + 1, sizeof *varies);
    if (!varies) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_status s = compare_graphs(ctx, a, a, b, &r, varies);
    if (s == SMELT_OK) s = mark_varies(ctx, a, a, varies);
    smelt_free(varies);
    if (s != SMELT_OK) return s;
    if (!(r.name = smelt_arena_strdup(&a->arena, r.name)))
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    a->rt_dims[a->n_rt_dims++] = r;
    return SMELT_OK;
}

static smelt_status check_range(smelt_ctx *ctx, const gr_graph *g, const char *name, int64_t min,
                                int64_t max)
{
    if (min < 1 || max < min || max > SMELT_LIMIT_TENSOR_ELEMS)
        return smelt_errf(ctx, SMELT_ERR_ARG, "dim '%s' = %lld..%lld: a range 1 <= MIN <= MAX <= "
                          "%lld", name, (long long)min, (long long)max,
                          (long long)SMELT_LIMIT_TENSOR_ELEMS);
    if (g->n_rt_dims == GR_MAX_RT_DIMS)
        return smelt_errf(ctx, SMELT_ERR_LIMIT, "dim '%s': more than %d run-time dims", name,
                          GR_MAX_RT_DIMS);
    for (int k = 0; k < g->n_rt_dims; k++) {
        const gr_rt_dim *r = &g->rt_dims[k];
        if (r->max == max || r->max == max - 1 || r->max - 1 == max)
            return smelt_errf(ctx, SMELT_ERR_ARG, "dims '%s' and '%s': run-time dims need "
                              "maxima at least 2 apart (%lld and %lld)", r->name, name,
                              (long long)r->max, (long long)max);
    }
    return SMELT_OK;
}

static smelt_status set_range_locked(smelt_ctx *ctx, smelt_model *m, const char *name,
                                     int64_t min, int64_t max)
{
    gr_graph *g = m->graph;
    if (m->optimized || m->compiled)
        return smelt_errf(ctx, SMELT_ERR_ARG, "dim '%s': dims are set before the model is first "
                          "compiled or run", name);
    if (min == max && min >= 1) return smelt_model_set_dim_locked(ctx, m, name, max);
    SMELT_TRY(check_range(ctx, g, name, min, max));
    if (!smelt_graph_has_dim(g, name))
        return smelt_errf(ctx, SMELT_ERR_ARG, "no input of the model has a symbolic dim named '%s'",
                          name);
    if (!m->bytes)
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "dim '%s': a run-time dim needs a model "
                          "loaded from a file or bytes", name);
    /* both points on fresh imports, so a refused range leaves the model as it was */
    int sym = named_symbol(g, name);
    gr_graph *ga = NULL, *gb = NULL;
    bool *varies = NULL;
    smelt_status s = second_point(ctx, m, sym, max, &ga);
    if (s == SMELT_OK) s = second_point(ctx, m, sym, max - 1, &gb);
    if (s == SMELT_OK && !(varies = smelt_calloc((size_t)ga->values.len + 1, sizeof *varies)))
        s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    gr_rt_dim r = {.name = name, .min = min, .max = max};
    if (s == SMELT_OK) s = compare_graphs(ctx, g, ga, gb, &r, varies);
    if (s == SMELT_OK) s = smelt_model_set_dim_locked(ctx, m, name, max);
    if (s == SMELT_OK) s = mark_varies(ctx, g, ga, varies);
    smelt_free(varies);
    gr_graph_free(ga);
    gr_graph_free(gb);
    if (s != SMELT_OK) return s;
    const char *copy = smelt_arena_strdup(&g->arena, name);
    if (!copy) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    r.name = copy;
    g->rt_dims[g->n_rt_dims++] = r;
    return SMELT_OK;
}

smelt_status smelt_model_set_dim_range(smelt_ctx *ctx, smelt_model *m, const char *name,
                                       int64_t min, int64_t max)
{
    smelt_ctx_clear(ctx);
    if (!m || !name) return smelt_errf(ctx, SMELT_ERR_ARG, "NULL model or dim name");
    pthread_mutex_lock(&m->mu);
    smelt_status s = set_range_locked(ctx, m, name, min, max);
    pthread_mutex_unlock(&m->mu);
    return s;
}
