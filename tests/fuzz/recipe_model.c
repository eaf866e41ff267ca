/* The byte recipe -> ModelProto generator of the pipeline and differential
 * harnesses (see recipe_model.h; the layout is in fuzz_pipeline.c). */
#include "recipe_gen.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"

/* ---- protobuf wire writer (just the fields a model needs) ---- */

void pb_raw(pb *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        uint8_t *d = realloc(b->d, cap);
        if (!d) abort();
        b->d = d, b->cap = cap;
    }
    if (n) memcpy(b->d + b->n, p, n);
    b->n += n;
}

static void pb_varint(pb *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pb_raw(b, tmp, n);
}

void pb_int(pb *b, int field, int64_t v)
{
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, (uint64_t)v);
}

static void pb_bytes(pb *b, int field, const void *p, size_t n)
{
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, n);
    pb_raw(b, p, n);
}

void pb_str(pb *b, int field, const char *s) { pb_bytes(b, field, s, strlen(s)); }

void pb_float(pb *b, int field, float f)
{
    pb_varint(b, (uint64_t)field << 3 | 5);
    pb_raw(b, &f, 4); /* little-endian hosts only, as the importer */
}

void pb_msg(pb *b, int field, pb *child)
{
    pb_bytes(b, field, child->d, child->n);
    free(child->d);
    memset(child, 0, sizeof *child);
}

/* ---- tables ---- */

static const int64_t DIM_TABLE[8] = {1, 2, 3, 4, 5, 8, 1, 16};
static const int DTYPE_TABLE[12] = {1, 1, 1, 7, 6, 9, 10, 3, 2, 11, 16, 1};
static const float FLOAT_TABLE[12] = {0.0f, 0.5f, 1.0f, 2.0f, -1.0f, 1e-5f,
                                      3.0f, 0.1f, -0.5f, 1e30f, 6.0f, 1.5f};
static const char *const OPSETS[8] = {"7", "9", "11", "13", "17", "18", "13", "13"};
const char *const RECIPE_TARGETS[4] = {"generic", "avx2", "avx512", "generic"};

const char *const RECIPE_HOSTILE[4] = {"*/EVIL();/*", "\"EVIL\"", "\nEVIL #include <x>",
                                       "?\?/EVIL\\"};

typedef enum attr_kind { AK_INT, AK_BOOL, AK_DTYPE, AK_INTS, AK_PERM, AK_FLOAT, AK_FLOATS,
                         AK_STRING, AK_TENSOR } attr_kind;

typedef struct attr_spec {
    const char *name;
    attr_kind kind;
    const char *const *strings; /* AK_STRING: choices, NULL-terminated */
} attr_spec;

static const char *const S_AUTO_PAD[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", NULL};
static const char *const S_MODE[] = {"constant", "reflect", "edge", "nearest", "linear",
                                     "cubic", "DCR", "CRD", "wrap", NULL};
static const char *const S_EQ[] = {"ij,jk->ik", "bij,bjk->bik", "ii->i", "ij->ji", "i,i->",
                                   "...ij,...jk->...ik", "ij->", "ab,b->a", NULL};
static const char *const S_CTM[] = {"half_pixel", "asymmetric", "align_corners",
                                    "pytorch_half_pixel", "tf_crop_and_resize", NULL};
static const char *const S_NEAREST[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                        "ceil", NULL};
static const char *const S_APPROX[] = {"none", "tanh", NULL};

static const attr_spec ATTRS[] = {
    {"axis", AK_INT, NULL},          {"axes", AK_INTS, NULL},
    {"perm", AK_PERM, NULL},         {"keepdims", AK_BOOL, NULL},
    {"kernel_shape", AK_INTS, NULL}, {"strides", AK_INTS, NULL},
    {"pads", AK_INTS, NULL},         {"dilations", AK_INTS, NULL},
    {"group", AK_INT, NULL},         {"auto_pad", AK_STRING, S_AUTO_PAD},
    {"ceil_mode", AK_BOOL, NULL},    {"transA", AK_BOOL, NULL},
    {"transB", AK_BOOL, NULL},       {"alpha", AK_FLOAT, NULL},
    {"beta", AK_FLOAT, NULL},        {"epsilon", AK_FLOAT, NULL},
    {"to", AK_DTYPE, NULL},          {"mode", AK_STRING, S_MODE},
    {"blocksize", AK_INT, NULL},     {"equation", AK_STRING, S_EQ},
    {"count_include_pad", AK_BOOL, NULL}, {"largest", AK_BOOL, NULL},
    {"sorted", AK_BOOL, NULL},       {"exclusive", AK_BOOL, NULL},
    {"reverse", AK_BOOL, NULL},      {"upper", AK_BOOL, NULL},
    {"split", AK_INTS, NULL},        {"value", AK_TENSOR, NULL},
    {"approximate", AK_STRING, S_APPROX}, {"min", AK_FLOAT, NULL},
    {"max", AK_FLOAT, NULL},         {"starts", AK_INTS, NULL},
    {"ends", AK_INTS, NULL},         {"output_padding", AK_INTS, NULL},
    {"output_shape", AK_INTS, NULL}, {"select_last_index", AK_BOOL, NULL},
    {"noop_with_empty_axes", AK_BOOL, NULL}, {"fmod", AK_BOOL, NULL},
    {"bias", AK_FLOAT, NULL},        {"size", AK_INT, NULL},
    {"gamma", AK_FLOAT, NULL},       {"coordinate_transformation_mode", AK_STRING, S_CTM},
    {"nearest_mode", AK_STRING, S_NEAREST}, {"scales", AK_FLOATS, NULL},
    {"detect_positive", AK_BOOL, NULL}, {"detect_negative", AK_BOOL, NULL},
    {"allowzero", AK_BOOL, NULL},    {"storage_order", AK_BOOL, NULL},
    {"k", AK_INT, NULL},             {"batch_dims", AK_INT, NULL},
    {"exclude_outside", AK_BOOL, NULL}, {"cubic_coeff_a", AK_FLOAT, NULL},
    {"lambd", AK_FLOAT, NULL},       {"extrapolation_value", AK_FLOAT, NULL},
};
#define N_ATTRS ((unsigned)(sizeof ATTRS / sizeof ATTRS[0]))

/* ---- generator ---- */

void value_name(const gen *g, int i, char *buf, size_t size)
{
    if (g->hostile && i % 2) snprintf(buf, size, "v%d%s", i, RECIPE_HOSTILE[(g->hostile - 1 + i) % 4]);
    else snprintf(buf, size, "v%d", i);
}

int new_value(gen *g, char *buf, size_t size)
{
    int i = g->n_values++;
    value_name(g, i, buf, size);
    return i;
}

float next_float(gen *g)
{
    g->lcg = g->lcg * 1664525u + 1013904223u;
    return (float)((g->lcg >> 8) % 41) / 10.0f - 2.0f; /* -2.0 .. 2.0 in 0.1 steps */
}

/* TensorProto: name, dtype, dims; contents from the LCG or `ints`. */
static void tensor_proto(gen *g, pb *t, const char *name, int dtype, int rank,
                         const int64_t *dims, const int64_t *ints)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        pb_int(t, 1, dims[d]);
        n *= dims[d];
    }
    pb_int(t, 2, dtype);
    if (name) pb_str(t, 8, name);
    pb raw = {0};
    for (int64_t i = 0; i < n; i++) {
        float f = next_float(g);
        int64_t v = ints ? ints[i] : (int64_t)lroundf(f);
        switch (dtype) {
        case 1: pb_raw(&raw, &f, 4); break;
        case 11: { double x = f; pb_raw(&raw, &x, 8); break; }
        case 7: pb_raw(&raw, &v, 8); break;
        case 6: { int32_t x = (int32_t)v; pb_raw(&raw, &x, 4); break; }
        default: { uint8_t x = (uint8_t)(v & 1); pb_raw(&raw, &x, 1); break; } /* bool */
        }
    }
    pb_bytes(t, 9, raw.d ? raw.d : (uint8_t *)"", raw.n);
    free(raw.d);
}

/* Shape variants shared by inputs and constants. */
static int pick_shape(gen *g, unsigned variant, int64_t *dims)
{
    int rank = g->base_rank;
    memcpy(dims, g->base, sizeof g->base);
    switch (variant % 6) {
    case 0: return rank;
    case 1: { /* broadcastable: some dims set to 1 */
        unsigned mask = rd_byte(&g->in);
        for (int d = 0; d < rank; d++)
            if (mask >> d & 1) dims[d] = 1;
        return rank;
    }
    case 2: return 0;
    case 3: /* trailing dims only */
        if (rank > 0) memmove(dims, g->base + 1, sizeof(int64_t) * (size_t)(rank - 1));
        return rank > 0 ? rank - 1 : 0;
    case 4: { /* a shape of its own */
        rank = (int)rd_pick(&g->in, 5);
        for (int d = 0; d < rank; d++) dims[d] = DIM_TABLE[rd_pick(&g->in, 8)];
        return rank;
    }
    default: /* conv weights: [oc, c, kh, kw] with c the base's channels */
        dims[0] = 1 + rd_pick(&g->in, 4);
        dims[1] = rank > 1 ? g->base[1] : 1;
        dims[2] = 1 + rd_pick(&g->in, 3);
        dims[3] = 1 + rd_pick(&g->in, 3);
        return 4;
    }
}

/* A new initializer; returns its value index. */
static int add_constant(gen *g, unsigned kind)
{
    char name[64];
    new_value(g, name, sizeof name);
    pb t = {0};
    int64_t dims[4] = {0}, ints[8] = {0}; /* a scalar reads no dims */
    if (kind % 4 == 3) { /* 1-D int64: axes, shapes, pads, repeats, indices */
        dims[0] = rd_pick(&g->in, 9); /* up to 8: pads of rank 4 */
        for (int i = 0; i < dims[0]; i++) ints[i] = rd_small(&g->in);
        tensor_proto(g, &t, name, 7, 1, dims, ints);
    } else if (kind % 8 == 1) { /* int64 scalar */
        ints[0] = rd_small(&g->in);
        tensor_proto(g, &t, name, 7, 0, dims, ints);
    } else {
        static const int dts[4] = {1, 1, 9, 6};
        int rank = pick_shape(g, rd_byte(&g->in), dims);
        tensor_proto(g, &t, name, dts[(kind / 8) % 4], rank, dims, NULL);
    }
    pb_msg(&g->graph, 5, &t);
    return g->n_values - 1;
}

int add_graph_input(gen *g, int dtype, int rank, const int64_t *dims)
{
    char name[64];
    int v = new_value(g, name, sizeof name);
    pb shape = {0}, tt = {0}, type = {0}, vi = {0};
    for (int d = 0; d < rank; d++) {
        pb dim = {0};
        pb_int(&dim, 1, dims[d]);
        pb_msg(&shape, 1, &dim);
    }
    pb_int(&tt, 1, dtype);
    pb_msg(&tt, 2, &shape);
    pb_msg(&type, 1, &tt);
    pb_str(&vi, 1, name);
    pb_msg(&vi, 2, &type);
    pb_msg(&g->graph, 11, &vi);
    return v;
}

static void add_input(gen *g)
{
    int dtype = DTYPE_TABLE[rd_pick(&g->in, 12)];
    int64_t dims[4];
    int rank = pick_shape(g, rd_byte(&g->in) % 5, dims); /* never conv-weight shaped */
    add_graph_input(g, dtype, rank, dims);
}

static void add_attr_value(gen *g, pb *a, const attr_spec *s)
{
    recipe *r = &g->in;
    switch (s->kind) {
    case AK_INT: pb_int(a, 20, 2), pb_int(a, 3, rd_small(r)); break;
    case AK_BOOL: pb_int(a, 20, 2), pb_int(a, 3, rd_pick(r, 2)); break;
    case AK_DTYPE: pb_int(a, 20, 2), pb_int(a, 3, DTYPE_TABLE[rd_pick(r, 12)]); break;
    case AK_FLOAT: pb_int(a, 20, 1), pb_float(a, 2, FLOAT_TABLE[rd_pick(r, 12)]); break;
    case AK_INTS: {
        pb_int(a, 20, 7);
        for (unsigned i = 0, n = rd_pick(r, 7); i < n; i++) pb_int(a, 8, rd_small(r));
        break;
    }
    case AK_PERM: { /* a permutation of the base rank, shuffled by the recipe */
        int64_t p[4] = {0, 1, 2, 3};
        for (int i = g->base_rank - 1; i > 0; i--) {
            int j = (int)rd_pick(r, (unsigned)i + 1);
            int64_t t = p[i];
            p[i] = p[j], p[j] = t;
        }
        pb_int(a, 20, 7);
        for (int i = 0; i < g->base_rank; i++) pb_int(a, 8, p[i]);
        break;
    }
    case AK_FLOATS: {
        pb_int(a, 20, 6);
        for (unsigned i = 0, n = rd_pick(r, 5); i < n; i++) pb_float(a, 7, FLOAT_TABLE[rd_pick(r, 4) + 1]);
        break;
    }
    case AK_STRING: {
        unsigned n = 0;
        while (s->strings[n]) n++;
        pb_int(a, 20, 3);
        pb_str(a, 4, s->strings[rd_pick(r, n)]);
        break;
    }
    case AK_TENSOR: {
        pb t = {0};
        int64_t dims[1] = {1}, v[1] = {rd_small(r)};
        int dt = rd_pick(r, 2) ? 7 : 1;
        tensor_proto(g, &t, NULL, dt, (int)rd_pick(r, 2), dims, dt == 7 ? v : NULL);
        pb_int(a, 20, 4);
        pb_msg(a, 5, &t);
        break;
    }
    }
}

static void add_attrs(gen *g, pb *node, unsigned op)
{
    for (unsigned i = 0, n = rd_pick(&g->in, 4); i < n; i++) {
        const attr_spec *s = &ATTRS[rd_pick(&g->in, N_ATTRS)];
        bool known = op == 0 || op_attr_find(op_get((op_kind)op), s->name, g->opset);
        pb a = {0};
        pb_str(&a, 1, s->name);
        add_attr_value(g, &a, s); /* read either way: the recipe's bytes stay aligned */
        if (known) {
            pb_msg(node, 5, &a);
        } else {
            free(a.d);
        }
    }
}

/* Arity of op index k (0 is Constant): [min, max] inputs and outputs. */
static void op_arity(unsigned k, const char **name, int *in_lo, int *in_hi, int *out_lo,
                     int *out_hi)
{
    *name = "Constant";
    *in_lo = *in_hi = 0;
    *out_lo = *out_hi = 1;
    if (k == 0) return;
    const op_info *info = op_get((op_kind)k);
    *name = info->name;
    if (!info->def) return;
    const op_def *d = info->def;
    *in_lo = d->min_inputs;
    *in_hi = d->max_inputs < 0 ? d->min_inputs + 3 : d->max_inputs;
    *out_lo = d->min_outputs > 0 ? d->min_outputs : 1;
    *out_hi = d->max_outputs <= 0 ? *out_lo + 3 : d->max_outputs; /* <= 0: variadic */
    if (*out_hi < *out_lo) *out_hi = *out_lo;
}

/* One input: an earlier value (recent ones likelier), a new constant, or
 * -1 (an omitted optional input). */
int pick_input_value(gen *g)
{
    unsigned b = rd_byte(&g->in);
    if (b == 255) return -1;
    return b >= 200 && g->n_values < MAX_VALUES ? add_constant(g, b - 200)
                                                : g->n_values - 1 - (int)(b % (unsigned)g->n_values);
}

static void pick_input(gen *g, char *buf, size_t size)
{
    int v = pick_input_value(g);
    if (v < 0) buf[0] = '\0';
    else value_name(g, v, buf, size);
}

static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static void add_node(gen *g, int index, unsigned op_byte)
{
    const char *op;
    int in_lo, in_hi, out_lo, out_hi;
    unsigned k = op_byte % OP_COUNT_;
    op_arity(k, &op, &in_lo, &in_hi, &out_lo, &out_hi);
    int n_in = clamp((int)rd_pick(&g->in, 8), in_lo, in_hi);
    int n_out = clamp((int)rd_pick(&g->in, 8), out_lo, out_hi);
    pb node = {0};
    char name[64];
    for (int i = 0; i < n_in; i++) {
        pick_input(g, name, sizeof name);
        pb_str(&node, 1, name);
    }
    for (int i = 0; i < n_out; i++) {
        new_value(g, name, sizeof name);
        pb_str(&node, 2, name);
    }
    snprintf(name, sizeof name, "n%d", index);
    pb_str(&node, 3, name);
    pb_str(&node, 4, op);
    add_attrs(g, &node, k);
    pb_msg(&g->graph, 1, &node);
}

static void add_output(gen *g, int v)
{
    char name[64];
    pb vi = {0};
    value_name(g, v, name, sizeof name);
    pb_str(&vi, 1, name);
    pb_msg(&g->graph, 12, &vi);
}

/* The recipe as a serialized ModelProto (in *model) and the target. */
const char *recipe_build_model(const uint8_t *data, size_t size, pb *model, int *hostile)
{
    gen g = {.in = {data, size}, .lcg = 12345};
    unsigned flags = rd_byte(&g.in);
    g.opset = atoi(OPSETS[flags & 7]);
    g.hostile = flags >> 5 & 1 ? 1 + (int)(flags >> 6) : 0;
    g.base_rank = (int)rd_pick(&g.in, 5);
    for (int d = 0; d < 4; d++) g.base[d] = d < g.base_rank ? DIM_TABLE[rd_pick(&g.in, 8)] : 1;
    for (unsigned i = 0, n = 1 + rd_pick(&g.in, 3); i < n; i++) add_input(&g);
    int last = 0;
    for (int i = 0; i < MAX_NODES && g.in.n && g.n_values < MAX_VALUES; i++) {
        unsigned op = rd_byte(&g.in);
        if (op == 255) break; /* end of nodes */
        if (op >= RECIPE_PATTERN_FIRST) recipe_add_pattern(&g, i, op - RECIPE_PATTERN_FIRST);
        else add_node(&g, i, op);
        last = g.n_values - 1;
    }
    add_output(&g, last);
    if (rd_pick(&g.in, 2) && last > 0) add_output(&g, last - 1);
    pb_str(&g.graph, 2, g.hostile ? RECIPE_HOSTILE[g.hostile - 1] : "fuzz");
    pb opset = {0};
    pb_int(&opset, 2, g.opset);
    pb_int(model, 1, 8); /* ir_version */
    pb_msg(model, 8, &opset);
    pb_msg(model, 7, &g.graph);
    *hostile = g.hostile;
    return RECIPE_TARGETS[flags >> 3 & 3];
}

void recipe_save_model(const pb *model)
{
    const char *path = getenv("SMELT_FUZZ_SAVE_MODEL");
    FILE *f = path && *path ? fopen(path, "wb") : NULL;
    if (!f) return;
    fwrite(model->d, 1, model->n, f);
    fclose(f);
}
