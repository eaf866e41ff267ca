/* smelt quantize: shared between quantize.c (plan, calibration, the
 * arithmetic) and quantize_proto.c (the ModelProto rewrite). */
#ifndef SMELT_CLI_QUANTIZE_H
#define SMELT_CLI_QUANTIZE_H

#include "base/base.h"
#include "onnx/onnx.pb-c.h"

typedef enum q_kind { Q_CONV, Q_MATMUL, Q_GEMM } q_kind;

/* An activation quantized to u8 (one QuantizeLinear -> DequantizeLinear). */
typedef struct q_act {
    const char *name;
    float lo, hi;   /* calibrated range */
    bool seen;      /* at least one calibration run gave it */
    bool unit;      /* a Softmax's output: the range [0, 1], as ORT's quantizer sets */
    float scale;
    uint8_t zp;
} q_act;

/* A constant weight quantized to int8 per channel along axis. */
typedef struct q_weight {
    const char *name;
    int axis;
    smelt_tensor *q;     /* int8, the weight's shape */
    float *scale;        /* [channels] */
    int64_t channels;
} q_weight;

/* A bias quantized to int32 with scale x_scale * w_scale (zero point 0). */
typedef struct q_bias {
    const char *name;
    int32_t *q;
    float *scale;
    int64_t n;
    int64_t dims[SMELT_MAX_RANK];
    int rank;
} q_bias;

typedef struct q_node {
    const Onnx__NodeProto *node;
    const Onnx__NodeProto *act; /* the Relu or Clip after it, removed (y is its output), or NULL */
    q_kind kind;
    int x, b_act, y; /* indices into acts; b_act: MatMul's B when it is an activation (else -1) */
    int weight;      /* index into weights, -1: none (MatMul of two activations) */
    int bias;        /* index into biases, -1: none or left float */
    int axis;        /* weight channel axis */
} q_node;

typedef struct q_plan {
    smelt_arena arena;
    q_node *nodes;
    int n_nodes;
    q_act *acts;
    int n_acts;
    q_weight *weights;
    int n_weights;
    q_bias *biases;
    int n_biases;
} q_plan;

/* The quantized model: model (unpacked from the input's bytes) rewritten
 * by plan into the bytes of a new ModelProto (smelt_alloc'd *out). */
smelt_status q_write_model(smelt_ctx *ctx, const Onnx__ModelProto *model, const q_plan *plan,
                           void **out, size_t *size);

#endif
