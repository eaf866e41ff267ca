/* ONNX's low-bit types at smelt's edges: one element per byte inside,
 * ONNX's packed form (two 4-bit or four 2-bit elements a byte, first element
 * in the low bits) in TensorProto raw_data, int32_data and tensor files.
 * The float8/float4 conversions are checked against ml_dtypes by
 * tests/lowbit/check_lowbit.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "frontend/onnx.h"
#include "frontend/onnx_internal.h"
#include "test_util.h"

static void test_dtype_facts(void)
{
    for (int dt = SMELT_DT_FLOAT8E4M3FN; dt <= SMELT_DT_INT2; dt++) {
        CHECK(smelt_dtype_size((smelt_dtype)dt) == 1);
        CHECK(smelt_dtype_is_lowbit((smelt_dtype)dt));
    }
    CHECK(smelt_dtype_packed_bits(SMELT_DT_INT4) == 4);
    CHECK(smelt_dtype_packed_bits(SMELT_DT_FLOAT4E2M1) == 4);
    CHECK(smelt_dtype_packed_bits(SMELT_DT_UINT2) == 2);
    CHECK(smelt_dtype_packed_bits(SMELT_DT_FLOAT8E5M2) == 8);
    CHECK(smelt_dtype_packed_bits(SMELT_DT_FLOAT32) == 32);
    CHECK(!smelt_dtype_is_lowbit(SMELT_DT_BFLOAT16) && !smelt_dtype_is_lowbit(SMELT_DT_UINT8));
    CHECK(smelt_dtype_is_lowbit_int(SMELT_DT_INT2));
    CHECK(!smelt_dtype_is_lowbit_int(SMELT_DT_FLOAT4E2M1));
    CHECK(strcmp(smelt_dtype_name(SMELT_DT_FLOAT8E4M3FN), "f8e4m3fn") == 0);
    CHECK(strcmp(smelt_dtype_name(SMELT_DT_INT2), "i2") == 0);
}

static void test_pack_unpack(void)
{
    /* int4: 5 elements -> 3 bytes, the last high nibble 0 */
    const int8_t i4[5] = {-8, 7, -1, 0, 3};
    uint8_t packed[4] = {0xAA, 0xAA, 0xAA, 0xAA};
    CHECK(smelt_pack_lowbit(SMELT_DT_INT4, i4, 5, packed) == 3);
    CHECK(packed[0] == 0x78 && packed[1] == 0x0F && packed[2] == 0x03 && packed[3] == 0xAA);
    int8_t back[5];
    CHECK(smelt_unpack_lowbit(SMELT_DT_INT4, packed, 5, back) == 5);
    CHECK(memcmp(back, i4, sizeof back) == 0);

    /* int2: 6 elements -> 2 bytes, first element in bits 0-1 */
    const int8_t i2[6] = {-2, -1, 0, 1, 1, -2};
    CHECK(smelt_pack_lowbit(SMELT_DT_INT2, i2, 6, packed) == 2);
    CHECK(packed[0] == (2 | 3 << 2 | 0 << 4 | 1 << 6) && packed[1] == (1 | 2 << 2));
    int8_t back2[6];
    smelt_unpack_lowbit(SMELT_DT_INT2, packed, 6, back2);
    CHECK(memcmp(back2, i2, sizeof back2) == 0);

    /* uint2 and float4 stay unsigned; float8 is a plain byte copy */
    const uint8_t u2[3] = {3, 0, 2};
    smelt_pack_lowbit(SMELT_DT_UINT2, u2, 3, packed);
    CHECK(packed[0] == (3 | 2 << 4));
    uint8_t ub[3];
    smelt_unpack_lowbit(SMELT_DT_UINT2, packed, 3, ub);
    CHECK(ub[0] == 3 && ub[1] == 0 && ub[2] == 2);
    const uint8_t f4[2] = {0xF, 0x7};
    smelt_pack_lowbit(SMELT_DT_FLOAT4E2M1, f4, 2, packed);
    CHECK(packed[0] == 0x7F);
    smelt_unpack_lowbit(SMELT_DT_FLOAT4E2M1, packed, 2, ub);
    CHECK(ub[0] == 0xF && ub[1] == 0x7);
    const uint8_t f8[3] = {0x80, 0x7F, 0x01};
    CHECK(smelt_pack_lowbit(SMELT_DT_FLOAT8E4M3FN, f8, 3, packed) == 3);
    CHECK(memcmp(packed, f8, 3) == 0);
}

static smelt_tensor *from_proto(smelt_ctx *ctx, Onnx__TensorProto *tp, smelt_status want)
{
    smelt_tensor *t = NULL;
    smelt_status s = onnx_tensor_from_proto(ctx, tp, NULL, "initializer 'w'", &t);
    if (s != want) fprintf(stderr, "status %d, expected %d: %s\n", s, want, smelt_ctx_message(ctx));
    CHECK(s == want);
    return t;
}

static void test_proto(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    int64_t dims[1] = {3};
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    tp.has_data_type = 1;
    tp.data_type = SMELT_DT_UINT4;
    tp.n_dims = 1;
    tp.dims = dims;

    /* raw_data: 3 uint4 elements in 2 bytes */
    uint8_t raw[2] = {0x21, 0x0F};
    tp.has_raw_data = 1;
    tp.raw_data.data = raw;
    tp.raw_data.len = 2;
    smelt_tensor *t = from_proto(ctx, &tp, SMELT_OK);
    if (t) {
        const uint8_t *v = t->data;
        CHECK(t->dtype == SMELT_DT_UINT4 && v[0] == 1 && v[1] == 2 && v[2] == 15);
        CHECK(smelt_tensor_nbytes(t) == 3);
        smelt_tensor_free(t);
    }
    /* one byte per element is not ONNX's layout: refused, naming the tensor */
    tp.raw_data.len = 3;
    uint8_t raw3[3] = {1, 2, 15};
    tp.raw_data.data = raw3;
    from_proto(ctx, &tp, SMELT_ERR_MODEL);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx),
                       "initializer 'w': raw_data has 3 bytes, its shape needs 2");
    smelt_ctx_clear(ctx);

    /* int32_data of int4: one packed byte per value */
    tp.has_raw_data = 0;
    tp.data_type = SMELT_DT_INT4;
    int32_t packed[2] = {0x9F, 0x07}; /* -1, -7, 7 */
    tp.n_int32_data = 2;
    tp.int32_data = packed;
    t = from_proto(ctx, &tp, SMELT_OK);
    if (t) {
        const int8_t *v = t->data;
        CHECK(v[0] == -1 && v[1] == -7 && v[2] == 7);
        smelt_tensor_free(t);
    }
    tp.n_int32_data = 3; /* one value per element: refused */
    int32_t unpacked[3] = {-1, -7, 7};
    tp.int32_data = unpacked;
    from_proto(ctx, &tp, SMELT_ERR_MODEL);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx),
                       "holds 3 packed values, its shape needs 2 (4-bit i4)");
    smelt_ctx_clear(ctx);

    /* int32_data of a float8 type: one code per value */
    tp.data_type = SMELT_DT_FLOAT8E5M2;
    int32_t codes[3] = {0x7C, 0xFE, 0x01};
    tp.int32_data = codes;
    t = from_proto(ctx, &tp, SMELT_OK);
    if (t) {
        const uint8_t *v = t->data;
        CHECK(v[0] == 0x7C && v[1] == 0xFE && v[2] == 0x01);
        smelt_tensor_free(t);
    }
    smelt_ctx_free(ctx);
}

/* A tensor file of an odd count of int2 values: written packed, read back. */
static void test_pb_round_trip(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    char path[] = "/tmp/smelt_lowbit_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    int8_t vals[5] = {-2, 1, 0, -1, 1};
    smelt_tensor t = {.dtype = SMELT_DT_INT2, .rank = 1, .dims = {5}, .data = vals};
    CHECK(onnx_tensor_save_pb(ctx, path, &t) == SMELT_OK);
    FILE *f = fopen(path, "rb");
    long size = -1;
    if (f) {
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        fclose(f);
    }
    smelt_tensor *back = NULL;
    CHECK(onnx_tensor_load_pb(ctx, path, &back) == SMELT_OK);
    if (back) {
        CHECK(back->dtype == SMELT_DT_INT2 && back->rank == 1 && back->dims[0] == 5);
        CHECK(memcmp(back->data, vals, sizeof vals) == 0);
        smelt_tensor_free(back);
    }
    /* 2 packed bytes, not 5: the file holds dims, type, and raw_data of 2 */
    t.dtype = SMELT_DT_INT8;
    CHECK(onnx_tensor_save_pb(ctx, path, &t) == SMELT_OK);
    f = fopen(path, "rb");
    long size8 = -1;
    if (f) {
        fseek(f, 0, SEEK_END);
        size8 = ftell(f);
        fclose(f);
    }
    CHECK(size8 - size == 3);
    unlink(path);
    smelt_ctx_free(ctx);
}

int main(void)
{
    test_dtype_facts();
    test_pack_unpack();
    test_proto();
    test_pb_round_trip();
    TEST_MAIN_END();
}
