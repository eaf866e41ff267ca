/* Scalar semantics of tir values, shared by the simplifier's constant folding
 * and the interpreter so that both agree bit for bit.
 *
 * Integers are held in an int64_t in the dtype's canonical representation:
 * signed types sign-extended, unsigned types below 64 bits zero-extended,
 * UINT64 as its bit pattern, BOOL as 0/1.  Integer arithmetic wraps modulo
 * the dtype width. */
#ifndef SMELT_TIR_SCALAR_H
#define SMELT_TIR_SCALAR_H

#include "tir/ir.h"

bool tir_dtype_is_int(smelt_dtype dt);      /* signed/unsigned integer or BOOL */
bool tir_dtype_is_float(smelt_dtype dt);    /* f16, bf16, f32, f64 */
bool tir_dtype_is_unsigned(smelt_dtype dt); /* u8..u64 and BOOL */
int tir_dtype_bits(smelt_dtype dt);         /* 1 for BOOL, 0 if not a number */

/* Smallest/largest value of an integer dtype (UINT64: the int64 range, since
 * its values are bit patterns). */
int64_t tir_dtype_min(smelt_dtype dt);
int64_t tir_dtype_max(smelt_dtype dt);

/* Reduce v modulo the dtype width into its canonical representation. */
int64_t tir_wrap_int(smelt_dtype dt, uint64_t v);

/* Round a double to the precision of a float dtype (f16/bf16/f32/f64). */
double tir_round_float(smelt_dtype dt, double v);
/* IR_CALL_LB_ENCODE / DECODE (include/smelt_lowbit.h): an integer argument
 * of a 4- or 2-bit target wraps, anything else converts through double. */
int64_t tir_lowbit_encode(smelt_dtype to, bool arg_is_float, double f, int64_t i, int mode);
double tir_lowbit_decode(smelt_dtype from, int64_t code);
/* IR_CALL_BITCAST: a value of `from` (f for floats, i canonical for the
 * rest) read back as the same bits of `to`; *f or *i receives the result.
 * Both dtypes have one width (BOOL as a byte). */
void tir_bitcast(smelt_dtype from, double f, int64_t i, smelt_dtype to, double *fo, int64_t *io);

/* Fold an integer binary op (arithmetic, comparison or logic) in dtype dt.
 * Returns false for division or modulo by zero. */
bool tir_fold_int(ir_kind k, smelt_dtype dt, int64_t a, int64_t b, int64_t *out);
/* IR_SHR of a canonical value of dt by count (>= 64: everything shifted out). */
int64_t tir_shr_int(smelt_dtype dt, int64_t a, uint64_t count);

/* Fold a float binary op exactly as IEEE arithmetic in dtype dt would.
 * Comparisons write 0/1.  Returns false where the result is not certain to
 * equal what generated code computes (division by zero, min/max of NaN or
 * of zeros of different sign, unsupported ops). */
bool tir_fold_float(ir_kind k, smelt_dtype dt, double a, double b, double *out);

/* Floor division/modulo of int64 with the int64 minimum / -1 case wrapped;
 * b must be non-zero. */
/* The math call op in double precision (the reference semantics the
 * interpreters share): NAN for an op that is not math (LB_*). */
double tir_call_f64(ir_call_op op, double x, double y);

int64_t tir_floordiv_i64(int64_t a, int64_t b);
int64_t tir_floormod_i64(int64_t a, int64_t b);

#endif
