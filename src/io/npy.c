/* NumPy .npy (format 1.0-3.0, little-endian, C order). */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx.h"
#include "io/io.h"

static const struct {
    const char *descr;
    smelt_dtype dt;
} npy_types[] = {
    {"f4", SMELT_DT_FLOAT32}, {"f8", SMELT_DT_FLOAT64}, {"f2", SMELT_DT_FLOAT16},
    {"i1", SMELT_DT_INT8},    {"i2", SMELT_DT_INT16},   {"i4", SMELT_DT_INT32},
    {"i8", SMELT_DT_INT64},   {"u1", SMELT_DT_UINT8},   {"u2", SMELT_DT_UINT16},
    {"u4", SMELT_DT_UINT32},  {"u8", SMELT_DT_UINT64},  {"b1", SMELT_DT_BOOL},
};

static smelt_status npy_parse_descr(smelt_ctx *ctx, const char *path, const char *hdr,
                                    smelt_dtype *dt)
{
    const char *d = strstr(hdr, "'descr'");
    if (!d || !(d = strchr(d + 7, '\'')))
        return smelt_errf(ctx, SMELT_ERR_PARSE, "'%s': .npy header has no descr", path);
    d++;
    char order = d[0];
    if (order == '>' || (order != '<' && order != '|'))
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "'%s': only little-endian .npy is supported",
                          path);
    for (size_t i = 0; i < SMELT_ARRAY_LEN(npy_types); i++)
        if (strncmp(d + 1, npy_types[i].descr, 2) == 0 && d[3] == '\'') {
            *dt = npy_types[i].dt;
            return SMELT_OK;
        }
    return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "'%s': unsupported .npy dtype", path);
}

static smelt_status npy_parse_shape(smelt_ctx *ctx, const char *path, const char *hdr,
                                    smelt_tensor *t)
{
    if (strstr(hdr, "'fortran_order': True"))
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "'%s': Fortran-order .npy", path);
    const char *s = strstr(hdr, "'shape'");
    if (!s || !(s = strchr(s, '(')))
        return smelt_errf(ctx, SMELT_ERR_PARSE, "'%s': .npy header has no shape", path);
    s++;
    t->rank = 0;
    for (;;) {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') break;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || t->rank == SMELT_MAX_RANK)
            return smelt_errf(ctx, SMELT_ERR_PARSE, "'%s': bad .npy shape", path);
        t->dims[t->rank++] = v;
        s = end;
    }
    return SMELT_OK;
}

smelt_status io_npy_load(smelt_ctx *ctx, const char *path, smelt_tensor **out)
{
    *out = NULL;
    unsigned char *buf;
    size_t size;
    SMELT_TRY(smelt_read_file(ctx, path, SMELT_LIMIT_MODEL_BYTES, (void **)&buf, &size));
    smelt_status s = SMELT_OK;
    size_t hlen = 0, hstart = 0;
    if (size < 10 || memcmp(buf, "\x93NUMPY", 6) != 0) {
        s = smelt_errf(ctx, SMELT_ERR_PARSE, "'%s' is not a .npy file", path);
    } else if (buf[6] == 1) {
        hlen = buf[8] | (size_t)buf[9] << 8;
        hstart = 10;
    } else if (size >= 12) {
        hlen = buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hstart = 12;
    }
    if (s == SMELT_OK && (hstart == 0 || hlen > size - hstart))
        s = smelt_errf(ctx, SMELT_ERR_PARSE, "'%s': truncated .npy header", path);
    smelt_tensor *t = s == SMELT_OK ? smelt_calloc(1, sizeof *t) : NULL;
    char *hdr = s == SMELT_OK ? smelt_alloc(hlen + 1) : NULL;
    if (s == SMELT_OK && (!t || !hdr)) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s == SMELT_OK) {
        memcpy(hdr, buf + hstart, hlen);
        hdr[hlen] = '\0';
        s = npy_parse_descr(ctx, path, hdr, &t->dtype);
    }
    if (s == SMELT_OK) s = npy_parse_shape(ctx, path, hdr, t);
    if (s == SMELT_OK) {
        int64_t numel = 1;
        for (int i = 0; i < t->rank; i++)
            if (smelt_mul_overflow_i64(numel, t->dims[i], &numel) || numel > SMELT_LIMIT_TENSOR_ELEMS)
                s = smelt_errf(ctx, SMELT_ERR_LIMIT, "'%s': too many elements", path);
        size_t nb = s == SMELT_OK ? (size_t)numel * smelt_dtype_size(t->dtype) : 0;
        if (s == SMELT_OK && size - hstart - hlen < nb)
            s = smelt_errf(ctx, SMELT_ERR_PARSE, "'%s': data is truncated", path);
        if (s == SMELT_OK && !(t->data = smelt_alloc(nb ? nb : 1)))
            s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        if (s == SMELT_OK && nb) memcpy(t->data, buf + hstart + hlen, nb);
    }
    smelt_free(hdr);
    smelt_free(buf);
    if (s != SMELT_OK) {
        smelt_tensor_free(t);
        return s;
    }
    *out = t;
    return SMELT_OK;
}

smelt_status io_npy_save(smelt_ctx *ctx, const char *path, const smelt_tensor *t)
{
    const char *descr = NULL;
    for (size_t i = 0; i < SMELT_ARRAY_LEN(npy_types); i++)
        if (npy_types[i].dt == t->dtype) descr = npy_types[i].descr;
    if (!descr)
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "cannot write dtype %s as .npy",
                          smelt_dtype_name(t->dtype));
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                     descr[0] == 'b' || descr[1] == '1' ? '|' : '<', descr);
    for (int i = 0; i < t->rank; i++)
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%lld,%s", (long long)t->dims[i],
                      i + 1 < t->rank ? " " : "");
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
    int total = 10 + n + 1, pad = (64 - total % 64) % 64;
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    smelt_strbuf_appendn(&sb, "\x93NUMPY\x01\x00", 8);
    unsigned hl = (unsigned)(n + pad + 1);
    char hlb[2] = {(char)(hl & 0xff), (char)(hl >> 8)};
    smelt_strbuf_appendn(&sb, hlb, 2);
    smelt_strbuf_appendn(&sb, hdr, (size_t)n);
    for (int i = 0; i < pad; i++) smelt_strbuf_append(&sb, " ");
    smelt_strbuf_append(&sb, "\n");
    smelt_strbuf_appendn(&sb, t->data, smelt_tensor_nbytes(t));
    smelt_status s = sb.failed ? smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory")
                               : smelt_write_file(ctx, path, sb.data, sb.len);
    smelt_strbuf_fini(&sb);
    return s;
}

smelt_status io_tensor_load(smelt_ctx *ctx, const char *path, smelt_tensor **out)
{
    size_t n = strlen(path);
    if (n > 4 && strcmp(path + n - 4, ".npy") == 0) return io_npy_load(ctx, path, out);
    return onnx_tensor_load_pb(ctx, path, out);
}

void io_fill_random(smelt_tensor *t, uint64_t seed, int64_t int_high)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    int64_t numel = smelt_tensor_numel(t);
    for (int64_t i = 0; i < numel; i++) {
        x ^= x << 13; /* xorshift64 */
        x ^= x >> 7;
        x ^= x << 17;
        double u = (double)(x >> 11) / 9007199254740992.0; /* [0,1) */
        switch (t->dtype) {
        case SMELT_DT_FLOAT32: ((float *)t->data)[i] = (float)(2 * u - 1); break;
        case SMELT_DT_FLOAT64: ((double *)t->data)[i] = 2 * u - 1; break;
        case SMELT_DT_FLOAT16: ((uint16_t *)t->data)[i] = smelt_f32_to_f16((float)(2 * u - 1)); break;
        case SMELT_DT_BFLOAT16: ((uint16_t *)t->data)[i] = smelt_f32_to_bf16((float)(2 * u - 1)); break;
        case SMELT_DT_BOOL: ((uint8_t *)t->data)[i] = u < 0.5; break;
        case SMELT_DT_INT64: ((int64_t *)t->data)[i] = (int64_t)(u * (double)int_high); break;
        case SMELT_DT_INT32: ((int32_t *)t->data)[i] = (int32_t)(u * (double)int_high); break;
        default: memset((char *)t->data + (size_t)i * smelt_dtype_size(t->dtype), 0,
                        smelt_dtype_size(t->dtype));
        }
    }
}
