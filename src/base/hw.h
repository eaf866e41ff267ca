/* What the scheduling rules and graph passes know about the hardware a
 * model is compiled for.  Filled from the target description
 * (codegen/target.c) and passed down, so a rule asks the target instead of
 * guessing from the vector width. */
#ifndef SMELT_BASE_HW_H
#define SMELT_BASE_HW_H

#include <stdint.h>

typedef struct smelt_hw {
    int lanes;        /* float32 lanes of one vector register; 1: no vectors */
    int vector_regs;  /* architectural vector registers (AVX-512 32, AVX2 16, NEON 32) */
    /* accumulators a matrix-product register tile may hold, the rest of the
     * registers left to B's vectors and A's broadcasts: 24 of 32 on
     * AVX-512, 12 of 16 on AVX2; 18 on NEON, where every row's A value
     * takes a register (no FMA with a broadcast memory operand) */
    int tile_acc_max;
    int64_t l1_bytes; /* L1 data cache per core */
    int64_t l2_bytes; /* L2 cache per core */
    /* GPU targets: threads per block the default rules bind (one thread
     * per output element); 0 for CPUs. */
    int gpu_threads;
    /* GPU targets: shared memory one block may declare statically (CUDA's
     * 48 KiB; OpenCL's guaranteed minimum, 32 KiB): cache_read tiles must
     * fit.  0 for CPUs (no cache_read). */
    int64_t gpu_shared_bytes;
} smelt_hw;

#endif
