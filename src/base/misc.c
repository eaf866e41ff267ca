/* Files, hashing, dtype facts and half-precision conversion. */
#include <errno.h>
#include <string.h>

#include "base.h"

smelt_status smelt_read_file(smelt_ctx *ctx, const char *path, size_t max_bytes, void **out,
                             size_t *size)
{
    *out = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return smelt_errf(ctx, SMELT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = smelt_alloc(cap);
    if (!buf) {
        fclose(f);
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    for (;;) {
        if (len == cap) {
            if (cap >= max_bytes) {
                smelt_free(buf);
                fclose(f);
                return smelt_errf(ctx, SMELT_ERR_LIMIT,
                                  "'%s' is larger than the limit of %zu bytes", path, max_bytes);
            }
            size_t ncap = cap * 2 > max_bytes ? max_bytes : cap * 2;
            unsigned char *n = smelt_realloc(buf, len, ncap);
            if (!n) {
                smelt_free(buf);
                fclose(f);
                return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory reading '%s'", path);
            }
            buf = n;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    bool err = ferror(f);
    fclose(f);
    if (err) {
        smelt_free(buf);
        return smelt_errf(ctx, SMELT_ERR_IO, "error reading '%s'", path);
    }
    *out = buf;
    *size = len;
    return SMELT_OK;
}

smelt_status smelt_write_file(smelt_ctx *ctx, const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) return smelt_errf(ctx, SMELT_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    size_t put = fwrite(data, 1, size, f);
    int rc = fclose(f);
    if (put != size || rc != 0) return smelt_errf(ctx, SMELT_ERR_IO, "error writing '%s'", path);
    return SMELT_OK;
}

uint64_t smelt_hash_bytes(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull ^ seed; /* the FNV-1a 64 offset basis */
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

const char *smelt_dtype_name(smelt_dtype dt)
{
    static const char *const names[] = {
        [SMELT_DT_UNDEFINED] = "undefined", [SMELT_DT_FLOAT32] = "f32",
        [SMELT_DT_UINT8] = "u8",            [SMELT_DT_INT8] = "i8",
        [SMELT_DT_UINT16] = "u16",          [SMELT_DT_INT16] = "i16",
        [SMELT_DT_INT32] = "i32",           [SMELT_DT_INT64] = "i64",
        [SMELT_DT_STRING] = "string",       [SMELT_DT_BOOL] = "bool",
        [SMELT_DT_FLOAT16] = "f16",         [SMELT_DT_FLOAT64] = "f64",
        [SMELT_DT_UINT32] = "u32",          [SMELT_DT_UINT64] = "u64",
        [SMELT_DT_COMPLEX64] = "c64",       [SMELT_DT_COMPLEX128] = "c128",
        [SMELT_DT_BFLOAT16] = "bf16",       [SMELT_DT_FLOAT8E4M3FN] = "f8e4m3fn",
        [SMELT_DT_FLOAT8E4M3FNUZ] = "f8e4m3fnuz", [SMELT_DT_FLOAT8E5M2] = "f8e5m2",
        [SMELT_DT_FLOAT8E5M2FNUZ] = "f8e5m2fnuz", [SMELT_DT_UINT4] = "u4",
        [SMELT_DT_INT4] = "i4",             [SMELT_DT_FLOAT4E2M1] = "f4e2m1",
        [SMELT_DT_FLOAT8E8M0] = "f8e8m0",   [SMELT_DT_UINT2] = "u2",
        [SMELT_DT_INT2] = "i2",
    };
    _Static_assert(SMELT_ARRAY_LEN(names) == SMELT_DT_COUNT_, "dtype names");
    if ((unsigned)dt & SMELT_DT_OPTIONAL_BIT)
        return (unsigned)dt & SMELT_DT_SEQUENCE_BIT ? "optional sequence" : "optional";
    if ((unsigned)dt & SMELT_DT_SEQUENCE_BIT) return "sequence";
    return (unsigned)dt < SMELT_DT_COUNT_ ? names[dt] : "invalid";
}

size_t smelt_dtype_size(smelt_dtype dt)
{
    if (smelt_dtype_is_lowbit(dt)) return 1; /* one element per byte (smelt.h) */
    switch (dt) {
    case SMELT_DT_BOOL:
    case SMELT_DT_UINT8:
    case SMELT_DT_INT8: return 1;
    case SMELT_DT_UINT16:
    case SMELT_DT_INT16:
    case SMELT_DT_FLOAT16:
    case SMELT_DT_BFLOAT16: return 2;
    case SMELT_DT_FLOAT32:
    case SMELT_DT_INT32:
    case SMELT_DT_UINT32: return 4;
    case SMELT_DT_FLOAT64:
    case SMELT_DT_INT64:
    case SMELT_DT_UINT64:
    case SMELT_DT_COMPLEX64: return 8;
    case SMELT_DT_COMPLEX128: return 16;
    default: return 0; /* undefined, string */
    }
}

bool smelt_dtype_is_lowbit(smelt_dtype dt)
{
    return dt >= SMELT_DT_FLOAT8E4M3FN && dt <= SMELT_DT_INT2;
}

bool smelt_dtype_is_lowbit_float(smelt_dtype dt)
{
    return smelt_dtype_is_lowbit(dt) && !smelt_dtype_is_lowbit_int(dt);
}

bool smelt_dtype_is_lowbit_int(smelt_dtype dt)
{
    return dt == SMELT_DT_UINT4 || dt == SMELT_DT_INT4 || dt == SMELT_DT_UINT2 ||
           dt == SMELT_DT_INT2;
}

int smelt_dtype_packed_bits(smelt_dtype dt)
{
    switch (dt) {
    case SMELT_DT_UINT4:
    case SMELT_DT_INT4:
    case SMELT_DT_FLOAT4E2M1: return 4;
    case SMELT_DT_UINT2:
    case SMELT_DT_INT2: return 2;
    default: return 8 * (int)smelt_dtype_size(dt);
    }
}

static size_t packed_bytes(int bits, int64_t count)
{
    return (size_t)((count * bits + 7) / 8);
}

size_t smelt_pack_lowbit(smelt_dtype dt, const void *unpacked, int64_t count, void *packed)
{
    int bits = smelt_dtype_packed_bits(dt);
    size_t n = packed_bytes(bits, count);
    if (bits >= 8) {
        if (n) memcpy(packed, unpacked, n);
        return n;
    }
    const uint8_t *u = unpacked;
    uint8_t *p = packed, mask = (uint8_t)((1u << bits) - 1);
    memset(p, 0, n);
    for (int64_t i = 0; i < count; i++)
        p[i * bits / 8] |= (uint8_t)((u[i] & mask) << (i * bits % 8));
    return n;
}

size_t smelt_unpack_lowbit(smelt_dtype dt, const void *packed, int64_t count, void *unpacked)
{
    int bits = smelt_dtype_packed_bits(dt);
    if (bits >= 8) {
        size_t n = packed_bytes(bits, count);
        if (n) memcpy(unpacked, packed, n);
        return n;
    }
    const uint8_t *p = packed;
    uint8_t *u = unpacked;
    bool is_signed = dt == SMELT_DT_INT4 || dt == SMELT_DT_INT2;
    for (int64_t i = 0; i < count; i++) {
        int v = (p[i * bits / 8] >> (i * bits % 8)) & ((1 << bits) - 1);
        if (is_signed && v >= 1 << (bits - 1)) v -= 1 << bits;
        u[i] = (uint8_t)v; /* int8_t's bits */
    }
    return (size_t)count;
}

float smelt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) {
                mant <<= 1;
                exp--;
            }
            bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t smelt_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = (int32_t)((x >> 23) & 0xff);
    uint32_t mant = x & 0x7fffff;
    if (exp == 255) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    int32_t e = exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* may carry into exp: fine */
    return (uint16_t)half;
}

float smelt_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t smelt_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    uint32_t rounding = 0x7fff + ((x >> 16) & 1);
    return (uint16_t)((x + rounding) >> 16);
}
