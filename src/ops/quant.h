/* Typed attributes of the quantization family (quant.c), for passes. */
#ifndef SMELT_OPS_QUANT_H
#define SMELT_OPS_QUANT_H

#include <stdint.h>

#include "smelt.h"

/* QuantizeLinear and DequantizeLinear. */
typedef struct op_quant_attrs {
    int64_t axis;             /* per-axis and blocked: the quantized axis */
    int64_t block_size;       /* 0: per tensor or per axis */
    smelt_dtype output_dtype; /* UNDEFINED: from the zero point / the scale */
    smelt_dtype precision;    /* QuantizeLinear's division; UNDEFINED: default */
    bool saturate;            /* QuantizeLinear to a float8 type */
} op_quant_attrs;

#endif
