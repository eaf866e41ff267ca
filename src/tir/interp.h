/* A tir interpreter: evaluates expressions and executes statements over
 * caller-provided buffer memory, so lowered loop nests can be checked
 * against reference kernels (and passes checked against their input)
 * without the C compiler.  Slow but exact: integer arithmetic wraps per
 * dtype, float32 arithmetic rounds to float after every operation (f16/bf16
 * to their precision), loads and stores are bounds-checked (an out-of-range
 * access is an SMELT_ERR_RUNTIME error naming the buffer), integer division
 * by zero is an error.  Parallel and vectorized loops run serially.
 * Loads/stores accept either one index per dimension (row-major) or a single
 * flat index.  Reductions (te) are evaluated by looping over their axes. */
#ifndef SMELT_TIR_INTERP_H
#define SMELT_TIR_INTERP_H

#include "tir/ir.h"

typedef struct tir_value {
    smelt_dtype dtype;
    int64_t i; /* integer dtypes and BOOL, canonical (see scalar.h) */
    double f;  /* float dtypes */
} tir_value;

tir_value tir_value_int(smelt_dtype dt, int64_t v);
tir_value tir_value_float(smelt_dtype dt, double v);
double tir_value_to_double(tir_value v);

typedef struct tir_interp_var {
    const ir_var *var;
    tir_value val;
} tir_interp_var;

typedef struct tir_interp_buf {
    const ir_buffer *buf;
    void *data;
    int64_t n_elems;
    bool owned; /* allocated by an ALLOCATE statement */
} tir_interp_buf;

typedef struct tir_interp {
    smelt_ctx *ctx; /* receives error messages */
    tir_interp_var *vars;
    int n_vars, cap_vars;
    tir_interp_buf *bufs;
    int n_bufs, cap_bufs;
    int64_t steps, max_steps; /* statements executed / cap (0: no cap) */
} tir_interp;

void tir_interp_init(tir_interp *it, smelt_ctx *ctx);
void tir_interp_fini(tir_interp *it);

/* data holds n_elems elements of buf->dtype (f16/bf16 as uint16 bits, BOOL
 * as one byte).  Later bindings of the same buffer win. */
smelt_status tir_interp_bind_buffer(tir_interp *it, const ir_buffer *buf, void *data, int64_t n_elems);
smelt_status tir_interp_set_var(tir_interp *it, const ir_var *v, tir_value val);

smelt_status tir_interp_eval(tir_interp *it, const ir_expr *e, tir_value *out);
smelt_status tir_interp_run(tir_interp *it, const ir_stmt *s);

#endif
