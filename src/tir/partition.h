/* Loop partitioning: split a loop whose body is guarded by conditions that
 * are affine in the loop variable (split tails `if (io*16 + ii < 100)`,
 * padding `select(0 <= oh*2 + kh - 1 && oh*2 + kh - 1 < H, ...)`) into
 * prologue / main / epilogue loops so that in the main loop every such
 * guard is provably true and simplifies away; the tails keep their checks
 * (or lose them when provably false there).
 *
 * Only loops with constant min and extent are split, only when the main
 * range is non-empty and smaller than the loop, and at most one split per
 * loop (all its guards at once).  Splitting recurses into the main loop;
 * inside tails, loops are only trimmed (a split whose tails simplify to
 * nothing, e.g. the 4-wide remainder of a 16-wide split), so copies grow
 * linearly with nesting depth; a budget per call caps the total.  The main
 * loop keeps the loop kind; parallel and vectorized tails become serial.
 * Returns s itself when nothing is split. */
#ifndef SMELT_TIR_PARTITION_H
#define SMELT_TIR_PARTITION_H

#include "tir/ir.h"

/* Maximum number of loops split by one call. */
#define TIR_PARTITION_BUDGET 64

ir_stmt *tir_partition_loops(ir_builder *b, ir_stmt *s);

#endif
