/* Features of a lowered loop-IR function, for the tuner's cost model.
 *
 * One fixed-length float vector per candidate (Ansor / MetaSchedule style,
 * folded into one row instead of one row per store): operation counts
 * weighted by loop trip counts, the loop nest around the dominant store (the
 * one doing the most float work), and per-buffer access features for the
 * TUNE_FEATURE_BUFFERS buffers with the most bytes accessed.  Magnitudes are
 * log2(1 + x); shares and flags are in [0, 1].  Loop extents that do not
 * fold to a constant (loop partitioning's min/max bounds) count with their
 * upper bound from tir_bounds.  The slots are the TUNE_F_* values below;
 * tune_feature_name gives each one's name. */
#ifndef SMELT_TUNE_FEATURES_H
#define SMELT_TUNE_FEATURES_H

#include "tir/func.h"

/* Global slots (log2(1 + x) unless marked share/flag/count). */
enum {
    TUNE_F_FLOAT_ADD,      /* float add/sub executed */
    TUNE_F_FLOAT_MUL,      /* float mul */
    TUNE_F_FLOAT_DIV,      /* float div */
    TUNE_F_FLOAT_CMP,      /* float min/max/compare */
    TUNE_F_FLOAT_FMA,      /* add/sub with a float mul operand (FMA-able pairs) */
    TUNE_F_MATH_CALLS,     /* exp, tanh, sqrt, ... */
    TUNE_F_INT_OPS,        /* integer (index) arithmetic */
    TUNE_F_SELECTS,        /* selects and If conditions evaluated */
    TUNE_F_LOADS,          /* elements loaded */
    TUNE_F_STORES,         /* elements stored */
    TUNE_F_FLOPS,          /* float ops in total, micro-kernel work included */
    TUNE_F_KERNEL_CALL,    /* flag: a micro-kernel call is present */
    TUNE_F_KERNEL_FLOPS,   /* float ops done inside micro-kernels */
    TUNE_F_VEC_SHARE,      /* share of flops inside a vectorized loop */
    TUNE_F_PAR_SHARE,      /* share of flops inside a parallel loop */
    TUNE_F_UNROLL_SHARE,   /* share of flops inside an unrolled loop */
    TUNE_F_GUARD_SHARE,    /* share of flops under an If */
    TUNE_F_ITERATIONS,     /* loop iterations in total (all loops) */
    TUNE_F_MAX_DEPTH,      /* count: deepest loop nest */
    TUNE_F_NESTS,          /* count: outermost loops (separate loop nests) */
    TUNE_F_NONCONST_LOOPS, /* count: loops whose extent is not a constant */
    TUNE_F_VEC_LOOPS,      /* count: vectorized loops */
    TUNE_F_UNROLL_LOOPS,   /* count: unrolled loops */
    TUNE_F_PAR_LOOPS,      /* count: parallel loops */
    TUNE_F_DOM_DEPTH,      /* count: loops around the dominant store */
    TUNE_F_DOM_COUNT,      /* times the dominant store runs */
    TUNE_F_DOM_INNER_EXT,  /* extent of its innermost loop */
    TUNE_F_DOM_INNER_SERIAL,   /* flag: that loop is serial */
    TUNE_F_DOM_INNER_PARALLEL, /* flag: parallel */
    TUNE_F_DOM_INNER_VECTOR,   /* flag: vectorized */
    TUNE_F_DOM_INNER_UNROLL,   /* flag: unrolled */
    TUNE_F_DOM_VEC_LANES,  /* product of vectorized extents around it */
    TUNE_F_DOM_UNROLL,     /* product of unrolled extents around it */
    TUNE_F_DOM_PAR_EXT,    /* product of parallel extents around it */
    TUNE_F_DOM_OUTER_SERIAL, /* product of serial extents outside its first parallel loop
                              * (of all its serial loops when none is parallel) */
    /* The dominant store's working set per loop level: level i is its i
     * innermost loops that run more than once (all of them when fewer):
     * bytes its accesses touch there (the larger of each buffer's accesses,
     * summed over buffers), and its flops there divided by those bytes
     * (Ansor's arithmetic-intensity curve: register reuse at level 1, cache
     * reuse further out). */
    TUNE_F_DOM_BYTES_L1,
    TUNE_F_DOM_BYTES_L2,
    TUNE_F_DOM_BYTES_L3,
    TUNE_F_DOM_BYTES_L4,
    TUNE_F_DOM_BYTES_L5,
    TUNE_F_DOM_INTENSITY_L1,
    TUNE_F_DOM_INTENSITY_L2,
    TUNE_F_DOM_INTENSITY_L3,
    TUNE_F_DOM_INTENSITY_L4,
    TUNE_F_DOM_INTENSITY_L5,
    TUNE_F_PAR_CHUNK_WORK, /* flops per parallel iteration (work per chunk) */
    TUNE_F_SERIAL_FLOPS,   /* flops outside any parallel loop */
    TUNE_F_INTENSITY,      /* flops / unique bytes of the function's arguments */
    TUNE_F_ARG_BYTES,      /* unique bytes touched in arguments (inputs, outputs, weights) */
    TUNE_F_BYTES_ACCESSED, /* bytes loaded + stored (all buffers) */
    TUNE_F_TEMP_BYTES,     /* bytes of all Allocate statements (static sum) */
    TUNE_F_TEMP_MIN_BYTES, /* smallest Allocate (register-tile proxy) */
    TUNE_F_ALLOCS_RUN,     /* Allocate statements executed */
    TUNE_F_CODE_SIZE,      /* straight-line ops after unrolling (register pressure, i-cache) */
    TUNE_F_GLOBAL_COUNT_
};

/* Per-buffer slots, TUNE_F_BUF_SLOTS for each of the TUNE_FEATURE_BUFFERS
 * buffers with the most bytes accessed (ties: first accessed first); a
 * missing buffer is all zeros.  Stride, reuse loop and distance come from
 * the buffer's most executed access. */
enum {
    TUNE_FB_BYTES,        /* bytes accessed */
    TUNE_FB_UNIQUE_BYTES, /* unique bytes touched (index range, capped at the buffer) */
    TUNE_FB_REUSE,        /* accesses / unique elements */
    TUNE_FB_UNIT,         /* flag: unit stride along the innermost loop */
    TUNE_FB_BROADCAST,    /* flag: innermost loop does not move the index */
    TUNE_FB_STRIDED,      /* flag: non-unit or non-affine stride */
    TUNE_FB_STRIDE,       /* |stride| in elements along the innermost loop */
    TUNE_FB_REUSE_DIST,   /* bytes touched between two uses of an element: the footprint of
                           * the loops inside the innermost loop that does not move the index */
    TUNE_FB_WRITE_SHARE,  /* share of accesses that are stores */
    TUNE_FB_TEMP,         /* flag: allocated inside the function */
    TUNE_F_BUF_SLOTS
};

#define TUNE_FEATURE_LEVELS 5 /* TUNE_F_DOM_BYTES_L1 .. L5 */
#define TUNE_FEATURE_BUFFERS 4
#define TUNE_FEATURE_COUNT (TUNE_F_GLOBAL_COUNT_ + TUNE_FEATURE_BUFFERS * TUNE_F_BUF_SLOTS)

/* Features of f (after lowering: flat loads/stores, For loops with kinds
 * serial/parallel/vectorized/unrolled, Allocate, Call to micro-kernels).
 * out has TUNE_FEATURE_COUNT floats.  Deterministic.  Out of memory in this
 * module is SMELT_ERR_NOMEM; inside tir's bounds/affine helpers it only
 * makes the index analysis less precise (their contract). */
smelt_status tune_features_extract(smelt_ctx *ctx, const ir_func *f, float *out);

/* Name of feature slot i ("flops", "buf1.reuse", ...), for logs and docs;
 * "?" when i is out of range. */
const char *tune_feature_name(int i);

#endif
