/* The tir analyses and passes that run between lowering and code
 * generation, one header each:
 *   bounds.h           interval analysis, ranges scope, tir_prove
 *   affine.h           affine forms of index expressions (shared helper)
 *   simplify.h         tir_simplify / tir_simplify_expr
 *   partition.h        tir_partition_loops
 *   flatten.h          tir_flatten_storage
 *   vectorize_check.h  tir_can_vectorize / tir_legalize_vectorize
 *   interp.h           tir interpreter (testing without a C compiler)
 * Each pass takes a builder and a statement and returns the statement itself
 * when it changed nothing; allocation failure sets builder->failed. */
#ifndef SMELT_TIR_PASSES_H
#define SMELT_TIR_PASSES_H

#include "tir/bounds.h"
#include "tir/flatten.h"
#include "tir/interp.h"
#include "tir/partition.h"
#include "tir/simplify.h"
#include "tir/vectorize_check.h"

#endif
