/* Tensor files: NumPy .npy, and random inputs. */
#ifndef SMELT_IO_H
#define SMELT_IO_H

#include "base/base.h"

smelt_status io_npy_load(smelt_ctx *ctx, const char *path, smelt_tensor **out);
smelt_status io_npy_save(smelt_ctx *ctx, const char *path, const smelt_tensor *t);
/* Load .npy or .pb (TensorProto) by extension. */
smelt_status io_tensor_load(smelt_ctx *ctx, const char *path, smelt_tensor **out);

/* Fill t (dtype/dims set, data allocated) with seeded pseudo-random values:
 * floats in [-1, 1), integers in [0, int_high), bools 0/1. */
void io_fill_random(smelt_tensor *t, uint64_t seed, int64_t int_high);

#endif
