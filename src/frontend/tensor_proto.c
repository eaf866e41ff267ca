/* TensorProto <-> smelt_tensor, including external data files. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx_internal.h"

/* allocator_data, when set, points to a bool raised on allocation failure:
 * protobuf-c reports only "could not unpack", and running out of memory
 * must not be reported as a corrupt file. */
static void *pb_alloc(void *user, size_t size)
{
    void *p = smelt_alloc(size);
    if (!p && user) *(bool *)user = true;
    return p;
}

static void pb_free(void *user, void *p)
{
    (void)user;
    smelt_free(p);
}

ProtobufCAllocator onnx_pb_allocator = {pb_alloc, pb_free, NULL};

static bool dtype_supported(int32_t dt)
{
    return dt > SMELT_DT_UNDEFINED && dt < SMELT_DT_COUNT_ && dt != SMELT_DT_STRING &&
           dt != SMELT_DT_COMPLEX64 && dt != SMELT_DT_COMPLEX128;
}

/* Shape checks: rank cap, non-negative dims, overflow-free element and byte
 * counts under the limits. */
static smelt_status tensor_shape_from_proto(smelt_ctx *ctx, const Onnx__TensorProto *tp,
                                            const char *what, smelt_tensor *t, int64_t *numel)
{
    if (tp->n_dims > SMELT_MAX_RANK)
        return smelt_errf(ctx, SMELT_ERR_LIMIT, "%s: rank %zu exceeds the maximum rank %d", what,
                          tp->n_dims, SMELT_MAX_RANK);
    t->rank = (int)tp->n_dims;
    int64_t n = 1;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0)
            return smelt_errf(ctx, SMELT_ERR_MODEL, "%s: negative dim %lld", what,
                              (long long)tp->dims[i]);
        t->dims[i] = tp->dims[i];
        if (smelt_mul_overflow_i64(n, tp->dims[i], &n) || n > SMELT_LIMIT_TENSOR_ELEMS)
            return smelt_errf(ctx, SMELT_ERR_LIMIT,
                              "%s: element count exceeds the limit of %lld elements "
                              "(SMELT_LIMIT_TENSOR_ELEMS)",
                              what, (long long)SMELT_LIMIT_TENSOR_ELEMS);
    }
    *numel = n;
    return SMELT_OK;
}

/* Bytes of ONNX's packed form of `numel` elements of t's dtype. */
static int64_t packed_nbytes(const smelt_tensor *t, int64_t numel)
{
    return (numel * smelt_dtype_packed_bits(t->dtype) + 7) / 8;
}

/* int32_data of a 4- or 2-bit type: one packed byte per value. */
static smelt_status copy_packed_int32(smelt_ctx *ctx, const Onnx__TensorProto *tp,
                                      const char *what, smelt_tensor *t, int64_t numel)
{
    int64_t need = packed_nbytes(t, numel);
    if ((int64_t)tp->n_int32_data != need)
        return smelt_errf(ctx, SMELT_ERR_MODEL,
                          "%s: holds %zu packed values, its shape needs %lld (%d-bit %s)", what,
                          tp->n_int32_data, (long long)need, smelt_dtype_packed_bits(t->dtype),
                          smelt_dtype_name(t->dtype));
    uint8_t *bytes = smelt_alloc(need ? (size_t)need : 1);
    if (!bytes) return smelt_errf(ctx, SMELT_ERR_NOMEM, "%s: out of memory", what);
    for (int64_t i = 0; i < need; i++) bytes[i] = (uint8_t)tp->int32_data[i];
    smelt_unpack_lowbit(t->dtype, bytes, numel, t->data);
    smelt_free(bytes);
    return SMELT_OK;
}

/* Element count of the typed field that holds this dtype, and copy it out. */
static smelt_status copy_typed_field(smelt_ctx *ctx, const Onnx__TensorProto *tp,
                                     const char *what, smelt_tensor *t, int64_t numel)
{
    size_t have;
    switch (t->dtype) {
    case SMELT_DT_FLOAT32: have = tp->n_float_data; break;
    case SMELT_DT_FLOAT64: have = tp->n_double_data; break;
    case SMELT_DT_INT64: have = tp->n_int64_data; break;
    case SMELT_DT_UINT32:
    case SMELT_DT_UINT64: have = tp->n_uint64_data; break;
    default: have = tp->n_int32_data; break;
    }
    if (smelt_dtype_packed_bits(t->dtype) < 8) return copy_packed_int32(ctx, tp, what, t, numel);
    if ((int64_t)have != numel)
        return smelt_errf(ctx, SMELT_ERR_MODEL, "%s: holds %zu values, its shape needs %lld",
                          what, have, (long long)numel);
    for (int64_t i = 0; i < numel; i++) {
        switch (t->dtype) {
        case SMELT_DT_FLOAT32: ((float *)t->data)[i] = tp->float_data[i]; break;
        case SMELT_DT_FLOAT64: ((double *)t->data)[i] = tp->double_data[i]; break;
        case SMELT_DT_INT64: ((int64_t *)t->data)[i] = tp->int64_data[i]; break;
        case SMELT_DT_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)tp->uint64_data[i]; break;
        case SMELT_DT_UINT64: ((uint64_t *)t->data)[i] = tp->uint64_data[i]; break;
        case SMELT_DT_INT32: ((int32_t *)t->data)[i] = tp->int32_data[i]; break;
        case SMELT_DT_INT16: ((int16_t *)t->data)[i] = (int16_t)tp->int32_data[i]; break;
        case SMELT_DT_INT8: ((int8_t *)t->data)[i] = (int8_t)tp->int32_data[i]; break;
        case SMELT_DT_UINT16:
        case SMELT_DT_FLOAT16:
        case SMELT_DT_BFLOAT16: ((uint16_t *)t->data)[i] = (uint16_t)tp->int32_data[i]; break;
        case SMELT_DT_UINT8:
        case SMELT_DT_FLOAT8E4M3FN:
        case SMELT_DT_FLOAT8E4M3FNUZ:
        case SMELT_DT_FLOAT8E5M2:
        case SMELT_DT_FLOAT8E5M2FNUZ:
        case SMELT_DT_FLOAT8E8M0: ((uint8_t *)t->data)[i] = (uint8_t)tp->int32_data[i]; break;
        case SMELT_DT_BOOL: ((uint8_t *)t->data)[i] = tp->int32_data[i] != 0; break;
        default: return smelt_errf(ctx, SMELT_ERR_INTERNAL, "%s: dtype not handled", what);
        }
    }
    return SMELT_OK;
}

/* External data stays inside the model's folder: relative path, no '..',
 * and the resolved real path (symlinks followed) under the folder's real path. */
static smelt_status external_path(smelt_ctx *ctx, const char *base_dir, const char *location,
                                  const char *what, char out[PATH_MAX])
{
    if (!base_dir)
        return smelt_errf(ctx, SMELT_ERR_MODEL,
                          "%s: uses external data, which needs a model loaded from a file", what);
    if (!location || !*location || location[0] == '/')
        return smelt_errf(ctx, SMELT_ERR_MODEL,
                          "%s: external data location must be a relative path", what);
    for (const char *p = location; *p; p++) {
        bool seg_start = p == location || p[-1] == '/' || p[-1] == '\\';
        if (seg_start && p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == '\\' || !p[2]))
            return smelt_errf(ctx, SMELT_ERR_MODEL,
                              "%s: external data location '%s' contains '..'", what, location);
    }
    char joined[PATH_MAX], real_base[PATH_MAX];
    if ((size_t)snprintf(joined, sizeof joined, "%s/%s", base_dir, location) >= sizeof joined)
        return smelt_errf(ctx, SMELT_ERR_MODEL, "%s: external data path too long", what);
    if (!realpath(base_dir, real_base) || !realpath(joined, out))
        return smelt_errf(ctx, SMELT_ERR_IO, "%s: cannot open external data '%s': %s", what,
                          location, strerror(errno));
    size_t nb = strlen(real_base);
    if (nb == 1) nb = 0; /* the folder is "/": every path is under it */
    if (strncmp(out, real_base, nb) != 0 || out[nb] != '/')
        return smelt_errf(ctx, SMELT_ERR_MODEL,
                          "%s: external data '%s' resolves outside the model's folder", what,
                          location);
    return SMELT_OK;
}

/* offset and length: plain decimal digits within int64 (strtoll would take
 * "", " 8", "+8" and saturate "99999999999999999999" instead of refusing). */
static smelt_status parse_extent(smelt_ctx *ctx, const char *what, const char *key,
                                 const char *text, int64_t *out)
{
    int64_t v = 0;
    bool ok = *text != '\0';
    for (const char *p = text; ok && *p; p++)
        ok = *p >= '0' && *p <= '9' && !smelt_mul_overflow_i64(v, 10, &v) &&
             !smelt_add_overflow_i64(v, *p - '0', &v);
    if (!ok)
        return smelt_errf(ctx, SMELT_ERR_MODEL,
                          "%s: bad external data %s '%.64s' (expected decimal digits, at most "
                          "%lld)", what, key, text, (long long)INT64_MAX);
    *out = v;
    return SMELT_OK;
}

static smelt_status read_external(smelt_ctx *ctx, const Onnx__TensorProto *tp,
                                  const char *base_dir, const char *what, smelt_tensor *t,
                                  size_t nbytes)
{
    const char *location = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key || !e->value) continue;
        if (strcmp(e->key, "location") == 0)
            location = e->value;
        else if (strcmp(e->key, "offset") == 0)
            SMELT_TRY(parse_extent(ctx, what, "offset", e->value, &offset));
        else if (strcmp(e->key, "length") == 0)
            SMELT_TRY(parse_extent(ctx, what, "length", e->value, &length));
    }
    char path[PATH_MAX];
    SMELT_TRY(external_path(ctx, base_dir, location, what, path));
    if (length >= 0 && (uint64_t)length != nbytes)
        return smelt_errf(ctx, SMELT_ERR_MODEL,
                          "%s: external data length %lld does not match its shape (%zu bytes)",
                          what, (long long)length, nbytes);
    /* O_NONBLOCK: opening a FIFO planted in the folder must not hang; the
     * regular-file check below then refuses it.  O_NOFOLLOW: realpath gave a
     * path free of symlinks, so one appearing there now is a swap. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return smelt_errf(ctx, SMELT_ERR_IO, "%s: cannot open '%s'", what, location);
    }
    struct stat st;
    smelt_status s = SMELT_OK;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        s = smelt_errf(ctx, SMELT_ERR_IO, "%s: '%s' is not a regular file", what, location);
    } else if ((uint64_t)offset > (uint64_t)st.st_size ||
               nbytes > (uint64_t)st.st_size - (uint64_t)offset) {
        s = smelt_errf(ctx, SMELT_ERR_MODEL,
                       "%s: external data [%lld, +%zu) lies beyond the end of '%s' (%lld bytes)",
                       what, (long long)offset, nbytes, location, (long long)st.st_size);
    } else if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(t->data, 1, nbytes, f) != nbytes) {
        s = smelt_errf(ctx, SMELT_ERR_IO, "%s: error reading '%s'", what, location);
    }
    fclose(f);
    return s;
}

/* External data of a 4- or 2-bit type was read packed into t->data. */
static smelt_status unpack_in_place(smelt_ctx *ctx, const char *what, smelt_tensor *t,
                                    int64_t numel)
{
    size_t n = (size_t)packed_nbytes(t, numel);
    uint8_t *packed = smelt_alloc(n ? n : 1);
    if (!packed) return smelt_errf(ctx, SMELT_ERR_NOMEM, "%s: out of memory", what);
    memcpy(packed, t->data, n);
    smelt_unpack_lowbit(t->dtype, packed, numel, t->data);
    smelt_free(packed);
    return SMELT_OK;
}

smelt_status onnx_tensor_from_proto(smelt_ctx *ctx, const Onnx__TensorProto *tp,
                                    const char *base_dir, const char *what, smelt_tensor **out)
{
    *out = NULL;
    if (tp->segment)
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "%s: segmented tensors are not supported",
                          what);
    if (!dtype_supported(tp->data_type))
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "%s: data type %d is not supported", what,
                          (int)tp->data_type);
    smelt_tensor *t = smelt_calloc(1, sizeof *t);
    if (!t) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    t->dtype = (smelt_dtype)tp->data_type;
    int64_t numel = 0;
    smelt_status s = tensor_shape_from_proto(ctx, tp, what, t, &numel);
    size_t esize = smelt_dtype_size(t->dtype);
    int64_t nbytes = 0;
    if (s == SMELT_OK && (smelt_mul_overflow_i64(numel, (int64_t)esize, &nbytes) ||
                          nbytes > SMELT_LIMIT_TENSOR_BYTES))
        s = smelt_errf(ctx, SMELT_ERR_LIMIT, "%s: size exceeds the limit of %lld bytes", what,
                       (long long)SMELT_LIMIT_TENSOR_BYTES);
    if (s == SMELT_OK) {
        t->data = smelt_alloc(nbytes ? (size_t)nbytes : 1);
        if (!t->data) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "%s: out of memory (%lld bytes)",
                                     what, (long long)nbytes);
    }
    if (s == SMELT_OK) {
        bool external = tp->has_data_location &&
                        tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        int64_t stored = packed_nbytes(t, numel); /* nbytes but for 4- and 2-bit types */
        if (external) {
            s = read_external(ctx, tp, base_dir, what, t, (size_t)stored);
            if (s == SMELT_OK && stored != nbytes) s = unpack_in_place(ctx, what, t, numel);
        } else if (tp->has_raw_data) {
            if (tp->raw_data.len != (size_t)stored)
                s = smelt_errf(ctx, SMELT_ERR_MODEL,
                               "%s: raw_data has %zu bytes, its shape needs %lld", what,
                               tp->raw_data.len, (long long)stored);
            else if (nbytes)
                smelt_unpack_lowbit(t->dtype, tp->raw_data.data, numel, t->data);
        } else {
            s = copy_typed_field(ctx, tp, what, t, numel);
        }
        if (s == SMELT_OK && t->dtype == SMELT_DT_BOOL) /* normalise to 0/1 */
            for (int64_t i = 0; i < numel; i++) ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
    }
    if (s == SMELT_OK && tp->name) {
        t->name = smelt_strdup(tp->name);
        if (!t->name) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    if (s != SMELT_OK) {
        smelt_tensor_free(t);
        return s;
    }
    *out = t;
    return SMELT_OK;
}

smelt_status onnx_tensor_load_pb(smelt_ctx *ctx, const char *path, smelt_tensor **out)
{
    void *bytes;
    size_t size;
    SMELT_TRY(smelt_read_file(ctx, path, SMELT_LIMIT_MODEL_BYTES, &bytes, &size));
    bool oom = false;
    ProtobufCAllocator pba = onnx_pb_allocator;
    pba.allocator_data = &oom;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&pba, size, bytes);
    smelt_free(bytes);
    if (!tp && oom) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory decoding '%s'", path);
    if (!tp) return smelt_errf(ctx, SMELT_ERR_PARSE, "'%s' is not a valid TensorProto", path);
    char what[512];
    snprintf(what, sizeof what, "tensor file '%s'", path);
    smelt_status s = onnx_tensor_from_proto(ctx, tp, NULL, what, out);
    onnx__tensor_proto__free_unpacked(tp, &pba);
    return s;
}

smelt_status onnx_tensor_save_pb(smelt_ctx *ctx, const char *path, const smelt_tensor *t)
{
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    int64_t dims[SMELT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) dims[i] = t->dims[i];
    tp.n_dims = (size_t)t->rank;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = (int32_t)t->dtype;
    tp.name = t->name;
    tp.has_raw_data = 1;
    int64_t numel = smelt_tensor_numel(t);
    size_t raw_len = (size_t)packed_nbytes(t, numel); /* 4- and 2-bit types: packed */
    uint8_t *raw = smelt_alloc(raw_len ? raw_len : 1);
    if (!raw) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_pack_lowbit(t->dtype, t->data, numel, raw);
    tp.raw_data.len = raw_len;
    tp.raw_data.data = raw;
    size_t n = onnx__tensor_proto__get_packed_size(&tp);
    uint8_t *buf = smelt_alloc(n ? n : 1);
    smelt_status s = SMELT_OK;
    if (!buf) {
        s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    } else {
        onnx__tensor_proto__pack(&tp, buf);
        s = smelt_write_file(ctx, path, buf, n);
    }
    smelt_free(buf);
    smelt_free(raw);
    return s;
}
