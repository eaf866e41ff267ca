/* Code generation targets: what vector width the C emitter may assume and
 * which flags the system C compiler gets. */
#ifndef SMELT_CODEGEN_TARGET_H
#define SMELT_CODEGEN_TARGET_H

#include <stdbool.h>

#include "base/base.h"
#include "base/hw.h"

typedef enum cg_isa {
    CG_ISA_GENERIC, /* plain C99: no vector types */
    CG_ISA_AVX2,    /* 256-bit vectors + FMA */
    CG_ISA_AVX512,  /* 512-bit vectors (F, BW, VL, DQ) + FMA */
} cg_isa;

typedef struct cg_target {
    const char *name;          /* "avx512", "avx2", "generic" */
    cg_isa isa;
    int vector_bytes;          /* widest vector register; 0 = no vector types */
    bool native;               /* built for the host CPU with -march=native */
    const char *const *isa_flags; /* NULL-terminated: -mavx512f ... or -march=native */
    smelt_hw hw;               /* what the scheduling rules size tiles by */
} cg_target;

/* "avx512", "avx2", "generic", or "host"/"native" (the host's best ISA,
 * built with -march=native).  NULL for an unknown name. */
const cg_target *cg_target_find(const char *name);

/* The host's best ISA (detected once), with -march=native. */
const cg_target *cg_target_host(void);

/* The names accepted by cg_target_find, for messages: "avx512, avx2, generic, host". */
const char *cg_target_names(void);

/* Lanes of the widest vector of `dt` on t (0 when t has no vectors or dt is
 * not a vectorised element type). */
int cg_target_lanes(const cg_target *t, smelt_dtype dt);

/* Compiler flags shared by every target, NULL-terminated: optimisation,
 * PIC, and the floating-point options that keep results exact
 * (-ffp-contract=fast, -fno-math-errno; never -ffast-math). */
const char *const *cg_common_cflags(void);

#endif
