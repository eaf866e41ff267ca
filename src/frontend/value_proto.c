/* SequenceProto and OptionalProto (onnx-data.proto) -> smelt.h's container
 * values, for test data (`input_N.pb` of a model whose input is a sequence
 * or an optional).  onnx.proto, which the build compiles, lacks these two
 * messages, so they are read straight off the wire: their fields are
 * name (1), elem_type (2), then the element(s): tensor_values /
 * tensor_value (3, TensorProto, decoded by protobuf-c), sequence_values /
 * sequence_value (5).  Sparse tensors (4), maps (6) and optionals inside
 * (7) are refused. */
#include <string.h>

#include "frontend/onnx_internal.h"

enum { ELEM_TENSOR = 1, ELEM_SEQUENCE = 3 }; /* SequenceProto.DataType */
enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

typedef struct wire {
    const uint8_t *p, *end;
} wire;

static bool read_varint(wire *w, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && w->p < w->end; shift += 7) {
        uint8_t b = *w->p++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* The next field: its number, wire type, and a LEN field's bytes. */
static bool next_field(wire *w, int *field, int *type, wire *payload)
{
    uint64_t key, len;
    if (!read_varint(w, &key)) return false;
    *field = (int)(key >> 3);
    *type = (int)(key & 7);
    switch (*type) {
    case WIRE_VARINT: return read_varint(w, &len);
    case WIRE_I64: len = 8; break;
    case WIRE_I32: len = 4; break;
    case WIRE_LEN:
        if (!read_varint(w, &len)) return false;
        break;
    default: return false;
    }
    if (len > (uint64_t)(w->end - w->p)) return false;
    payload->p = w->p;
    payload->end = w->p + len;
    w->p += len;
    return true;
}

typedef struct value_reader {
    smelt_ctx *ctx;
    const char *what;
    int depth;
} value_reader;

static smelt_status read_value(value_reader *r, wire w, smelt_dtype want, smelt_tensor *out);

static smelt_status bad(value_reader *r, const char *why)
{
    return smelt_errf(r->ctx, SMELT_ERR_PARSE, "%s: %s", r->what, why);
}

static smelt_status read_tensor(value_reader *r, wire w, smelt_dtype want, smelt_tensor *out)
{
    bool oom = false;
    ProtobufCAllocator pba = onnx_pb_allocator;
    pba.allocator_data = &oom;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&pba, (size_t)(w.end - w.p), w.p);
    if (!tp && oom) return smelt_errf(r->ctx, SMELT_ERR_NOMEM, "%s: out of memory", r->what);
    if (!tp) return bad(r, "an element is not a valid TensorProto");
    smelt_tensor *t;
    smelt_status s = onnx_tensor_from_proto(r->ctx, tp, NULL, r->what, &t);
    onnx__tensor_proto__free_unpacked(tp, &pba);
    if (s != SMELT_OK) return s;
    smelt_free(t->name);
    t->name = NULL;
    *out = *t;
    smelt_free(t);
    /* numpy has no bfloat16: onnx writes it as uint16 */
    if (want == SMELT_DT_BFLOAT16 && out->dtype == SMELT_DT_UINT16) out->dtype = want;
    if (out->dtype == want) return SMELT_OK;
    smelt_tensor_release(out);
    return smelt_errf(r->ctx, SMELT_ERR_ARG, "%s: an element is %s, the model expects %s",
                      r->what, smelt_dtype_name(out->dtype), smelt_dtype_name(want));
}

/* Grows out's element array by one zeroed element; returns it. */
static smelt_tensor *push_element(smelt_tensor *out)
{
    int64_t n = out->dims[0];
    smelt_tensor *e = smelt_realloc(out->data, sizeof *e * (size_t)n, sizeof *e * (size_t)(n + 1));
    if (!e) return NULL;
    memset(&e[n], 0, sizeof e[n]);
    out->data = e;
    out->dims[0] = n + 1;
    return &e[n];
}

/* A SequenceProto or OptionalProto (same field numbers) of type want. */
static smelt_status read_container(value_reader *r, wire w, smelt_dtype want, smelt_tensor *out)
{
    bool opt = (unsigned)want & SMELT_DT_OPTIONAL_BIT;
    smelt_dtype inner = smelt_dtype_element(want);
    bool inner_seq = smelt_dtype_is_container(inner);
    memset(out, 0, sizeof *out);
    out->dtype = want;
    out->rank = 1;
    int field, type;
    wire payload;
    smelt_status s = SMELT_OK;
    while (s == SMELT_OK && w.p < w.end) {
        if (!next_field(&w, &field, &type, &payload)) {
            s = bad(r, "truncated or corrupt SequenceProto/OptionalProto");
            break;
        }
        if (field == 1 && type == WIRE_LEN && r->depth == 1 && !out->name) { /* names outputs */
            out->name = smelt_alloc((size_t)(payload.end - payload.p) + 1);
            if (!out->name) s = smelt_errf(r->ctx, SMELT_ERR_NOMEM, "%s: out of memory", r->what);
            else memcpy(out->name, payload.p, (size_t)(payload.end - payload.p));
            if (out->name) out->name[payload.end - payload.p] = 0;
            continue;
        }
        if (field == 1 || field == 2) continue; /* elem_type: the model says */
        if ((field != 3 && field != 5) || type != WIRE_LEN) {
            s = bad(r, "sparse tensors, maps and nested optionals are not supported");
            break;
        }
        if ((field == 5) != inner_seq || (opt && out->dims[0] == 1)) {
            s = bad(r, "the value does not have the type the model declares");
            break;
        }
        smelt_tensor *e = push_element(out);
        if (!e) s = smelt_errf(r->ctx, SMELT_ERR_NOMEM, "%s: out of memory", r->what);
        else s = read_value(r, payload, inner, e);
    }
    if (s != SMELT_OK) smelt_tensor_release(out);
    return s;
}

static smelt_status read_value(value_reader *r, wire w, smelt_dtype want, smelt_tensor *out)
{
    if (!smelt_dtype_is_container(want)) return read_tensor(r, w, want, out);
    if (++r->depth > 4) return bad(r, "containers nest too deep");
    smelt_status s = read_container(r, w, want, out);
    r->depth--;
    return s;
}

smelt_status onnx_value_load_pb(smelt_ctx *ctx, const char *path, smelt_dtype want,
                                smelt_tensor **out)
{
    if (!smelt_dtype_is_container(want)) return onnx_tensor_load_pb(ctx, path, out);
    void *bytes;
    size_t size;
    SMELT_TRY(smelt_read_file(ctx, path, SMELT_LIMIT_MODEL_BYTES, &bytes, &size));
    char what[512];
    snprintf(what, sizeof what, "value file '%s'", path);
    value_reader r = {ctx, what, 0};
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    smelt_status s = t ? read_value(&r, (wire){bytes, (const uint8_t *)bytes + size}, want, t)
                       : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_free(bytes);
    if (s != SMELT_OK) {
        smelt_free(t);
        return s;
    }
    *out = t;
    return SMELT_OK;
}
