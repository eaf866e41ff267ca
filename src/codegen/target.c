/* Target descriptions and host detection. */
#include <string.h>

#include "codegen/target.h"

static const char *const common_flags[] = {
    "-std=c99", "-O3", "-fPIC",
    /* FMA contraction is allowed (within 1e-4 of the reference); errno-free
     * math lets sqrt/floor/ceil/rint vectorise and changes no value. */
    "-ffp-contract=fast", "-fno-math-errno", NULL};

static const char *const avx512_flags[] = {"-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq",
                                           "-mavx2",    "-mfma",      "-mf16c",     "-mbmi2",
                                           "-mprefer-vector-width=512", NULL};
static const char *const avx2_flags[] = {"-mavx2", "-mfma", "-mf16c", "-mbmi2", NULL};
static const char *const no_flags[] = {NULL};
static const char *const native_flags[] = {"-march=native", NULL};

/* Caches: the 48 KiB L1 the x86 rules were tuned with (a B panel up to
 * half of it stays there: Ice Lake and later, Zen 5) and a 1 MiB L2. */
#define X86_L1 (48 << 10)
#define X86_L2 (1 << 20)
#define HW_AVX512 {.lanes = 16, .vector_regs = 32, .l1_bytes = X86_L1, .l2_bytes = X86_L2}
#define HW_AVX2 {.lanes = 8, .vector_regs = 16, .l1_bytes = X86_L1, .l2_bytes = X86_L2}
#define HW_SCALAR {.lanes = 1, .vector_regs = 16, .l1_bytes = X86_L1, .l2_bytes = X86_L2}

static const cg_target targets[] = {
    {"avx512", CG_ISA_AVX512, 64, false, avx512_flags, HW_AVX512},
    {"avx2", CG_ISA_AVX2, 32, false, avx2_flags, HW_AVX2},
    {"generic", CG_ISA_GENERIC, 0, false, no_flags, HW_SCALAR},
};

/* Host variants: same ISA, built with -march=native. */
static const cg_target host_targets[] = {
    {"avx512", CG_ISA_AVX512, 64, true, native_flags, HW_AVX512},
    {"avx2", CG_ISA_AVX2, 32, true, native_flags, HW_AVX2},
    {"generic", CG_ISA_GENERIC, 0, true, native_flags, HW_SCALAR},
};

static cg_isa detect_isa(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    /* libgcc's cpu model checks both CPUID and that the OS saves the
     * vector state (XGETBV). */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("fma"))
        return CG_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CG_ISA_AVX2;
#endif
    return CG_ISA_GENERIC;
}

const cg_target *cg_target_host(void)
{
    cg_isa isa = detect_isa(); /* cheap and idempotent: no caching, no race */
    for (size_t i = 0; i < SMELT_ARRAY_LEN(host_targets); i++)
        if (host_targets[i].isa == isa) return &host_targets[i];
    return &host_targets[SMELT_ARRAY_LEN(host_targets) - 1];
}

const cg_target *cg_target_find(const char *name)
{
    if (!name) return NULL;
    if (!strcmp(name, "host") || !strcmp(name, "native")) return cg_target_host();
    for (size_t i = 0; i < SMELT_ARRAY_LEN(targets); i++)
        if (!strcmp(targets[i].name, name)) return &targets[i];
    return NULL;
}

const char *cg_target_names(void) { return "avx512, avx2, generic, host"; }

int cg_target_lanes(const cg_target *t, smelt_dtype dt)
{
    if (!t || t->vector_bytes == 0) return 0;
    if (dt != SMELT_DT_FLOAT32 && dt != SMELT_DT_FLOAT64) return 0;
    return t->vector_bytes / (int)smelt_dtype_size(dt);
}

const char *const *cg_common_cflags(void) { return common_flags; }
