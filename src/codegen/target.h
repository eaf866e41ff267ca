/* Code generation targets as data: what the C emitter may assume (vector
 * width, prelude pieces, micro-kernels), what the scheduling rules size
 * tiles by (smelt_hw), which C compiler builds the code with which flags,
 * and how the built code runs (in this process, or as a cross-built
 * executable under an emulator).  Nothing here asks what the host is,
 * except cg_target_host and cg_target_runnable. */
#ifndef SMELT_CODEGEN_TARGET_H
#define SMELT_CODEGEN_TARGET_H

#include <stdbool.h>

#include "base/base.h"
#include "base/hw.h"

typedef enum cg_isa {
    CG_ISA_GENERIC, /* plain C99: no vector types */
    CG_ISA_AVX2,    /* 256-bit vectors + FMA */
    CG_ISA_AVX512,  /* 512-bit vectors (F, BW, VL, DQ) + FMA */
    CG_ISA_NEON,    /* AArch64 Advanced SIMD: 128-bit vectors + FMA */
} cg_isa;

typedef enum cg_arch {
    CG_ARCH_ANY,     /* portable C: whatever the compiler targets */
    CG_ARCH_X86_64,
    CG_ARCH_AARCH64,
    CG_ARCH_GPU, /* kernels for a GPU plus host code that launches them */
} cg_arch;

/* The kernel language of a GPU target (codegen/gpu_emit.c). */
typedef enum cg_gpu_lang {
    CG_GPU_NONE,   /* a CPU target */
    CG_GPU_OPENCL, /* OpenCL C 1.2 kernels, host code on the OpenCL API (ICD loader) */
    CG_GPU_CUDA,   /* CUDA C++ kernels and host code, built with nvcc */
} cg_gpu_lang;

/* Micro-kernel sources a target's code may carry (microkernel.c). */
typedef enum cg_uk_family {
    CG_UK_X86,  /* register blocks chosen by the compiler's x86 macros (AVX-512, AVX2, else 4 lanes) */
    CG_UK_NEON, /* register blocks for 32 NEON registers of 4 float lanes */
} cg_uk_family;

/* The int8 dot-product instructions a target's code may use (the int8
 * micro-kernels pick them from the compiler's ISA macros, which the
 * target's flags set; this says which CPU feature running it needs). */
typedef enum cg_int8_dot {
    CG_DOT_NONE,       /* AVX2: vpmaddubsw / vpmaddwd; or plain C */
    CG_DOT_AVX512VNNI, /* vpdpbusd (AVX-512 VNNI + VL) */
    CG_DOT_AVXVNNI,    /* vpdpbusd (AVX-VNNI, VEX-encoded) */
} cg_int8_dot;

typedef struct cg_target {
    const char *name;          /* "avx512", "avx2", "generic", "aarch64" */
    const char *summary;       /* one line for `smelt targets` */
    cg_isa isa;
    cg_arch arch;
    int vector_bytes;          /* widest vector register; 0 = no vector types */
    bool native;               /* built for the host CPU with -march=native */
    const char *const *isa_flags; /* NULL-terminated: -mavx512f ... or -march=native */
    smelt_hw hw;               /* what the scheduling rules size tiles by */
    cg_uk_family microkernels; /* which micro-kernel sources it may emit */
    bool x86_vector_ops;       /* prelude may use immintrin.h min/max/scalef */
    /* The C compiler: NULL = the host's ($CC, else cc); else this command
     * ($SMELT_CROSS_CC overrides it), which builds executables only. */
    const char *cross_cc;
    /* How its code runs when the host cannot: an emulator command and its
     * arguments before the program (NULL: only on a machine of its arch). */
    const char *const *emulator;
    cg_int8_dot int8_dot;
    cg_gpu_lang gpu; /* CG_GPU_NONE for CPUs */
} cg_target;

/* "avx512", "avx512-vnni", "avx2", "avx2-vnni", "generic", "aarch64", "opencl", "cuda", or "host"/"native" (the host's
 * best ISA, built with -march=native).  NULL for an unknown name. */
const cg_target *cg_target_find(const char *name);

/* The host's best ISA (detected once), with -march=native. */
const cg_target *cg_target_host(void);

/* The names accepted by cg_target_find, for messages. */
const char *cg_target_names(void);

/* The targets cg_target_find knows by name (not "host"), in listing order. */
int cg_target_count(void);
const cg_target *cg_target_at(int i);

/* Whether this process can build and load t's code as a shared library
 * (the host's architecture, or portable C); running it may still need CPU
 * features the host lacks (AVX-512 code builds and loads on an AVX2 host). */
bool cg_target_loadable(const cg_target *t);
/* Whether this process can load and run t's code (loadable and the host
 * CPU has t's ISA). */
bool cg_target_runnable(const cg_target *t);

/* Lanes of the widest vector of `dt` on t (0 when t has no vectors or dt is
 * not a vectorised element type). */
int cg_target_lanes(const cg_target *t, smelt_dtype dt);

/* Compiler flags shared by every target, NULL-terminated: optimisation,
 * PIC, and the floating-point options that keep results exact
 * (-ffp-contract=fast, -fno-math-errno; never -ffast-math). */
const char *const *cg_common_cflags(void);

/* The C compiler command of a cross target: $SMELT_CROSS_CC when set, else
 * t->cross_cc; NULL for a target the host compiler builds. */
const char *cg_target_cross_cc(const cg_target *t);

#endif
