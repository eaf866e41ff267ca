/* ONNX frontend: ModelProto bytes -> graph IR. */
#ifndef SMELT_FRONTEND_ONNX_H
#define SMELT_FRONTEND_ONNX_H

#include "graph/graph.h"

/* Decode and import a model.  base_dir resolves external data (may be NULL:
 * external data is then refused).  On success *out is a verified graph in
 * topological order with every op imported, before shape inference. */
smelt_status onnx_import(smelt_ctx *ctx, const void *bytes, size_t size, const char *base_dir,
                         gr_graph **out);

/* TensorProto (serialized, e.g. input_0.pb) -> tensor. */
smelt_status onnx_tensor_load_pb(smelt_ctx *ctx, const char *path, smelt_tensor **out);
/* A test-data value of type `want`: a TensorProto, or for smelt.h's
 * container dtypes a SequenceProto/OptionalProto (frontend/value_proto.c). */
smelt_status onnx_value_load_pb(smelt_ctx *ctx, const char *path, smelt_dtype want,
                                smelt_tensor **out);
smelt_status onnx_tensor_save_pb(smelt_ctx *ctx, const char *path, const smelt_tensor *t);

#endif
