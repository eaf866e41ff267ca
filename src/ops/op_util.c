/* Helpers shared by op family files: errors, attributes, shapes, elements. */
#include <math.h>
#include <string.h>

#include "ops/op.h"
#include "smelt_lowbit.h"
#include "te/te.h"

smelt_status op_errf(smelt_ctx *ctx, const gr_node *node, smelt_status code, const char *fmt,
                     ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return smelt_errf_at(ctx, code, node->name, node->op_type, "node '%s' (%s): %s", node->name,
                         node->op_type, msg);
}

/* ---- attributes ---- */

static const char *attr_type_name(gr_attr_type t)
{
    static const char *const names[] = {"float", "int", "string", "tensor",
                                        "floats", "ints", "strings", "graph", "type"};
    return (unsigned)t < SMELT_ARRAY_LEN(names) ? names[t] : "?";
}

static smelt_status attr_typed(smelt_ctx *ctx, const gr_node *n, const char *name,
                               gr_attr_type want, const gr_attr **out)
{
    *out = gr_node_attr(n, name);
    if (*out && (*out)->type != want)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' has type %s, expected %s", name,
                       attr_type_name((*out)->type), attr_type_name(want));
    return SMELT_OK;
}

smelt_status op_attr_type(smelt_ctx *ctx, const gr_node *n, const char *name,
                          smelt_dtype *out)
{
    const gr_attr *a;
    SMELT_TRY(attr_typed(ctx, n, name, GR_ATTR_TYPE, &a));
    *out = a ? (smelt_dtype)a->i : SMELT_DT_UNDEFINED;
    return SMELT_OK;
}

smelt_status op_attr_int(smelt_ctx *ctx, const gr_node *n, const char *name, int64_t def,
                         int64_t *out)
{
    const gr_attr *a;
    SMELT_TRY(attr_typed(ctx, n, name, GR_ATTR_INT, &a));
    *out = a ? a->i : def;
    return SMELT_OK;
}

smelt_status op_attr_bool(smelt_ctx *ctx, const gr_node *n, const char *name, bool def,
                          bool *out)
{
    int64_t v;
    SMELT_TRY(op_attr_int(ctx, n, name, def, &v));
    if (v != 0 && v != 1)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute '%s' is %lld; expected 0 or 1", name,
                       (long long)v);
    *out = v != 0;
    return SMELT_OK;
}

smelt_status op_attr_float(smelt_ctx *ctx, const gr_node *n, const char *name, float def,
                           float *out)
{
    const gr_attr *a = gr_node_attr(n, name);
    if (a && a->type == GR_ATTR_INT) { /* some exporters write ints for floats */
        *out = (float)a->i;
        return SMELT_OK;
    }
    SMELT_TRY(attr_typed(ctx, n, name, GR_ATTR_FLOAT, &a));
    *out = a ? a->f : def;
    return SMELT_OK;
}

smelt_status op_attr_string(smelt_ctx *ctx, const gr_node *n, const char *name,
                            const char *def, const char **out)
{
    const gr_attr *a;
    SMELT_TRY(attr_typed(ctx, n, name, GR_ATTR_STRING, &a));
    *out = a ? a->s : def;
    return SMELT_OK;
}

smelt_status op_attr_ints(smelt_ctx *ctx, const gr_node *n, const char *name, int *count,
                          const int64_t **out)
{
    const gr_attr *a;
    SMELT_TRY(attr_typed(ctx, n, name, GR_ATTR_INTS, &a));
    *count = a ? a->n : -1;
    *out = a ? a->ints : NULL;
    return SMELT_OK;
}

smelt_status op_attr_floats(smelt_ctx *ctx, const gr_node *n, const char *name, int *count,
                            const float **out)
{
    const gr_attr *a;
    SMELT_TRY(attr_typed(ctx, n, name, GR_ATTR_FLOATS, &a));
    *count = a ? a->n : -1;
    *out = a ? a->floats : NULL;
    return SMELT_OK;
}

smelt_status op_attr_tensor(smelt_ctx *ctx, const gr_node *n, const char *name,
                            const smelt_tensor **out)
{
    const gr_attr *a;
    SMELT_TRY(attr_typed(ctx, n, name, GR_ATTR_TENSOR, &a));
    *out = a ? a->t : NULL;
    return SMELT_OK;
}

void *op_attrs_new(smelt_ctx *ctx, gr_graph *g, gr_node *n, size_t size)
{
    void *p = smelt_arena_alloc(&g->arena, size);
    if (!p) op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory for attributes");
    n->op_attrs = p;
    return p;
}

static smelt_status set_input_const(smelt_ctx *ctx, gr_graph *g, gr_node *n, int index,
                                    smelt_tensor *t)
{
    char hint[64];
    snprintf(hint, sizeof hint, "input%d", index);
    gr_value *v = gr_graph_add_constant(ctx, g, hint, t);
    if (!v) return smelt_ctx_status(ctx);
    return gr_node_set_input(ctx, g, n, index, v);
}

smelt_status op_set_input_ints(smelt_ctx *ctx, gr_graph *g, gr_node *n, int index,
                               const int64_t *vals, int count)
{
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    int64_t *d = smelt_calloc(count > 0 ? (size_t)count : 1, sizeof(int64_t));
    if (!t || !d) {
        smelt_free(t);
        smelt_free(d);
        return op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory");
    }
    if (count > 0) memcpy(d, vals, (size_t)count * sizeof *d);
    t->dtype = SMELT_DT_INT64;
    t->rank = 1;
    t->dims[0] = count;
    t->data = d;
    return set_input_const(ctx, g, n, index, t);
}

smelt_status op_set_input_float_scalar(smelt_ctx *ctx, gr_graph *g, gr_node *n, int index,
                                       float v)
{
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    float *d = smelt_alloc(sizeof(float));
    if (!t || !d) {
        smelt_free(t);
        smelt_free(d);
        return op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory");
    }
    *d = v;
    t->dtype = SMELT_DT_FLOAT32;
    t->rank = 0;
    t->data = d;
    return set_input_const(ctx, g, n, index, t);
}

/* ---- shapes ---- */

const smelt_tensor *op_input(const gr_node *node, const smelt_tensor *const *in, int i)
{
    return i < node->n_inputs ? in[i] : NULL;
}

smelt_status op_norm_axis(smelt_ctx *ctx, const gr_node *n, int64_t axis, int rank, int *out)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= (rank > 0 ? rank : 1) || (rank == 0 && a != 0))
        return op_errf(ctx, n, SMELT_ERR_ATTR, "axis %lld is out of range for rank %d",
                       (long long)axis, rank);
    *out = (int)a;
    return SMELT_OK;
}

smelt_status op_broadcast(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *a,
                          const smelt_tensor *b, smelt_tensor *out)
{
    int rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t dims[SMELT_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da == db || db == 1) {
            dims[i] = da;
        } else if (da == 1) {
            dims[i] = db;
        } else if (da < 0 || db < 0) {
            /* symbolic vs static/other symbolic: the static one wins, else unknown */
            dims[i] = da >= 0 ? da : db >= 0 ? db : GR_DIM_UNKNOWN;
        } else {
            return op_errf(ctx, n, SMELT_ERR_SHAPE,
                           "cannot broadcast dim %d: %lld vs %lld", i, (long long)da,
                           (long long)db);
        }
    }
    out->rank = rank;
    memcpy(out->dims, dims, sizeof(int64_t) * (size_t)rank);
    return SMELT_OK;
}

void op_copy_shape(smelt_tensor *dst, const smelt_tensor *src)
{
    dst->dtype = src->dtype;
    dst->rank = src->rank;
    memcpy(dst->dims, src->dims, sizeof dst->dims);
}

bool op_dims_static(const smelt_tensor *t)
{
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] < 0) return false;
    return true;
}

smelt_status op_read_ints(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                          const char *what, int64_t *vals, int max, int *count)
{
    if (!t->data)
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED,
                       "%s must be known at compile time (a constant or computable from "
                       "static shapes)", what);
    if (!op_dtype_is_int(t->dtype))
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "%s must be an integer tensor, got %s", what,
                       smelt_dtype_name(t->dtype));
    int64_t numel = op_numel(t);
    if (numel > max)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "%s has %lld elements, at most %d allowed",
                       what, (long long)numel, max);
    for (int64_t i = 0; i < numel; i++) vals[i] = op_get_i64(t, i);
    *count = (int)numel;
    return SMELT_OK;
}

smelt_status op_check_dtype(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *t,
                            const char *what, const smelt_dtype *allowed)
{
    for (const smelt_dtype *a = allowed; *a != SMELT_DT_UNDEFINED; a++)
        if (t->dtype == *a) return SMELT_OK;
    return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "%s has unsupported dtype %s", what,
                   smelt_dtype_name(t->dtype));
}

/* ---- elements ---- */

int64_t op_numel(const smelt_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    return n;
}

bool op_dtype_is_float(smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT32 || dt == SMELT_DT_FLOAT64 || dt == SMELT_DT_FLOAT16 ||
           dt == SMELT_DT_BFLOAT16;
}

bool op_dtype_is_int(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_DT_INT8:
    case SMELT_DT_INT16:
    case SMELT_DT_INT32:
    case SMELT_DT_INT64:
    case SMELT_DT_UINT8:
    case SMELT_DT_UINT16:
    case SMELT_DT_UINT32:
    case SMELT_DT_UINT64: return true;
    default: return false;
    }
}

double op_get_f64(const smelt_tensor *t, int64_t i)
{
    const void *d = t->data;
    switch (t->dtype) {
    case SMELT_DT_FLOAT32: return ((const float *)d)[i];
    case SMELT_DT_FLOAT64: return ((const double *)d)[i];
    case SMELT_DT_FLOAT16: return smelt_f16_to_f32(((const uint16_t *)d)[i]);
    case SMELT_DT_BFLOAT16: return smelt_bf16_to_f32(((const uint16_t *)d)[i]);
    case SMELT_DT_INT8: return ((const int8_t *)d)[i];
    case SMELT_DT_INT16: return ((const int16_t *)d)[i];
    case SMELT_DT_INT32: return ((const int32_t *)d)[i];
    case SMELT_DT_INT64: return (double)((const int64_t *)d)[i];
    case SMELT_DT_UINT8: return ((const uint8_t *)d)[i];
    case SMELT_DT_UINT16: return ((const uint16_t *)d)[i];
    case SMELT_DT_UINT32: return ((const uint32_t *)d)[i];
    case SMELT_DT_UINT64: return (double)((const uint64_t *)d)[i];
    case SMELT_DT_BOOL: return ((const uint8_t *)d)[i] ? 1.0 : 0.0;
    case SMELT_DT_INT4:
    case SMELT_DT_INT2: return ((const int8_t *)d)[i];
    case SMELT_DT_UINT4:
    case SMELT_DT_UINT2: return ((const uint8_t *)d)[i];
    default:
        if (smelt_dtype_is_lowbit_float(t->dtype))
            return smelt_lowbit_decode((int)t->dtype, ((const uint8_t *)d)[i]);
        return 0.0;
    }
}

/* Float -> integer conversion that never invokes UB: NaN -> 0, saturate. */
static int64_t f64_to_i64_sat(double v)
{
    if (v != v) return 0;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)v;
}

void op_set_f64(smelt_tensor *t, int64_t i, double v)
{
    void *d = t->data;
    switch (t->dtype) {
    case SMELT_DT_FLOAT32: ((float *)d)[i] = (float)v; break;
    case SMELT_DT_FLOAT64: ((double *)d)[i] = v; break;
    case SMELT_DT_FLOAT16: ((uint16_t *)d)[i] = smelt_f32_to_f16((float)v); break;
    case SMELT_DT_BFLOAT16: ((uint16_t *)d)[i] = smelt_f32_to_bf16((float)v); break;
    case SMELT_DT_BOOL: ((uint8_t *)d)[i] = v != 0.0; break;
    case SMELT_DT_UINT64:
        ((uint64_t *)d)[i] = v != v || v <= 0 ? 0 : v >= 1.8446744073709552e19 ? UINT64_MAX
                                                                                : (uint64_t)v;
        break;
    default:
        if (smelt_dtype_is_lowbit(t->dtype)) /* Cast's defaults: saturate, E8M0 rounds up */
            ((uint8_t *)d)[i] = (uint8_t)smelt_lowbit_encode((int)t->dtype, v, SMELT_LB_SATURATE);
        else
            op_set_i64(t, i, f64_to_i64_sat(v));
        break;
    }
}

int64_t op_get_i64(const smelt_tensor *t, int64_t i)
{
    const void *d = t->data;
    switch (t->dtype) {
    case SMELT_DT_INT64: return ((const int64_t *)d)[i];
    case SMELT_DT_INT32: return ((const int32_t *)d)[i];
    case SMELT_DT_INT16: return ((const int16_t *)d)[i];
    case SMELT_DT_INT8: return ((const int8_t *)d)[i];
    case SMELT_DT_UINT8: return ((const uint8_t *)d)[i];
    case SMELT_DT_UINT16: return ((const uint16_t *)d)[i];
    case SMELT_DT_UINT32: return ((const uint32_t *)d)[i];
    case SMELT_DT_UINT64: return (int64_t)((const uint64_t *)d)[i];
    case SMELT_DT_BOOL: return ((const uint8_t *)d)[i] != 0;
    case SMELT_DT_INT4:
    case SMELT_DT_INT2: return ((const int8_t *)d)[i];
    case SMELT_DT_UINT4:
    case SMELT_DT_UINT2: return ((const uint8_t *)d)[i];
    default: return f64_to_i64_sat(op_get_f64(t, i));
    }
}

void op_set_i64(smelt_tensor *t, int64_t i, int64_t v)
{
    void *d = t->data;
    switch (t->dtype) {
    case SMELT_DT_INT64: ((int64_t *)d)[i] = v; break;
    case SMELT_DT_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case SMELT_DT_INT16: ((int16_t *)d)[i] = (int16_t)v; break;
    case SMELT_DT_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
    case SMELT_DT_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case SMELT_DT_UINT16: ((uint16_t *)d)[i] = (uint16_t)v; break;
    case SMELT_DT_UINT32: ((uint32_t *)d)[i] = (uint32_t)v; break;
    case SMELT_DT_UINT64: ((uint64_t *)d)[i] = (uint64_t)v; break;
    case SMELT_DT_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    case SMELT_DT_INT4:
    case SMELT_DT_INT2: ((int8_t *)d)[i] = (int8_t)smelt_lb_wrap_int((int)t->dtype, v); break;
    case SMELT_DT_UINT4:
    case SMELT_DT_UINT2: ((uint8_t *)d)[i] = (uint8_t)smelt_lb_wrap_int((int)t->dtype, v); break;
    default: op_set_f64(t, i, (double)v); break;
    }
}

void op_strides(const smelt_tensor *t, int64_t strides[SMELT_MAX_RANK])
{
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= t->dims[i];
    }
}

int64_t op_broadcast_offset(const smelt_tensor *in, const smelt_tensor *out, const int64_t *idx)
{
    int64_t off = 0, stride = 1;
    for (int i = in->rank - 1; i >= 0; i--) {
        int oi = i + (out->rank - in->rank);
        if (in->dims[i] != 1) off += idx[oi] * stride;
        stride *= in->dims[i];
    }
    return off;
}

bool op_next_index(int64_t *idx, const int64_t *dims, int rank)
{
    for (int i = rank - 1; i >= 0; i--) {
        if (++idx[i] < dims[i]) return true;
        idx[i] = 0;
    }
    return false;
}

/* ---- sequence and optional values (smelt.h) ---- */

const char *op_container_problem(const smelt_tensor *t, char *buf, size_t cap)
{
    bool opt = (unsigned)t->dtype & SMELT_DT_OPTIONAL_BIT;
    if (t->rank != 1 || t->dims[0] < 0 || t->dims[0] > (opt ? 1 : SMELT_LIMIT_TENSOR_ELEMS)) {
        snprintf(buf, cap, "a malformed %s (rank %d, %lld elements)", smelt_dtype_name(t->dtype),
                 t->rank, t->rank == 1 ? (long long)t->dims[0] : -1LL);
        return buf;
    }
    if (t->dims[0] && !t->data) return "a container without its elements";
    smelt_dtype want = smelt_dtype_element(t->dtype);
    const smelt_tensor *e = t->data;
    for (int64_t i = 0; i < t->dims[0]; i++) {
        if (e[i].dtype != want) {
            snprintf(buf, cap, "element %lld of type %s in a %s of %s", (long long)i,
                     smelt_dtype_name(e[i].dtype), smelt_dtype_name(t->dtype),
                     smelt_dtype_name(smelt_dtype_is_container(want) ? want
                                                                     : smelt_dtype_element(want)));
            return buf;
        }
        if (smelt_dtype_is_container(want)) {
            const char *p = op_container_problem(&e[i], buf, cap);
            if (p) return p;
            continue;
        }
        int64_t n = smelt_tensor_numel(&e[i]);
        if (n < 0 || n > SMELT_LIMIT_TENSOR_ELEMS) {
            snprintf(buf, cap, "element %lld has a bad shape (rank %d)", (long long)i, e[i].rank);
            return buf;
        }
        if (n && !e[i].data) {
            snprintf(buf, cap, "element %lld has no data", (long long)i);
            return buf;
        }
    }
    return NULL;
}

smelt_status op_check_container_inputs(smelt_ctx *ctx, const gr_node *n,
                                       const smelt_tensor *const *in)
{
    unsigned flags = op_get(n->op)->def ? op_get(n->op)->def->flags : 0;
    for (int k = 0; k < n->n_inputs; k++) {
        if (!in[k] || !smelt_dtype_is_container(in[k]->dtype)) continue;
        if (!(flags & OP_FLAG_CONTAINERS))
            return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is a%s %s; %s takes tensors", k,
                           (unsigned)in[k]->dtype & SMELT_DT_OPTIONAL_BIT ? "n" : "",
                           smelt_dtype_name(in[k]->dtype), n->op_type);
        char buf[160];
        const char *p = in[k]->data ? op_container_problem(in[k], buf, sizeof buf) : NULL;
        if (p) return op_errf(ctx, n, SMELT_ERR_MODEL, "input %d is %s", k, p);
    }
    return SMELT_OK;
}

bool op_runs_bodies(const gr_node *n)
{
    const op_def *d = op_get(n->op)->def;
    if (!d || !(d->flags & OP_FLAG_SUBGRAPHS)) return false;
    for (int k = 0; k < n->n_attrs; k++)
        if (n->attrs[k].type == GR_ATTR_GRAPH && n->attrs[k].g) return true;
    return false;
}

smelt_status op_count_slot(op_compute_args *a, int64_t bound, te_tensor **rt_dims, int *index)
{
    *index = te_rt_index(a->te, bound);
    if (*index < 0 || !(*rt_dims = te_rt_dims_tensor(a->te)))
        return op_errf(a->ctx, a->node, SMELT_ERR_UNSUPPORTED,
                       "the output's size depends on the data, and this build has no run-time "
                       "dim for it (compiled runs give it one, api/specialize.c)");
    return SMELT_OK;
}
