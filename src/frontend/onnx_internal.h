/* Shared between the frontend's files only. */
#ifndef SMELT_FRONTEND_ONNX_INTERNAL_H
#define SMELT_FRONTEND_ONNX_INTERNAL_H

#include "frontend/onnx.h"
#include "onnx/onnx.pb-c.h"

/* protobuf-c allocator routed through smelt's allocator hook. */
extern ProtobufCAllocator onnx_pb_allocator;

/* Convert a TensorProto; base_dir for external data (NULL refuses it).
 * `what` names the tensor in messages (e.g. "initializer 'w'"). */
smelt_status onnx_tensor_from_proto(smelt_ctx *ctx, const Onnx__TensorProto *tp,
                                    const char *base_dir, const char *what, smelt_tensor **out);

/* The smelt dtype of an ONNX type (a tensor, a sequence of tensors, an
 * optional of either); other types are refused naming `what`. */
smelt_status onnx_type_dtype(smelt_ctx *ctx, const Onnx__TypeProto *tp, const char *what,
                             smelt_dtype *dt);

#endif
