/* Target descriptions and host detection. */
#include <stdlib.h>
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
static const char *const avx512_vnni_flags[] = {
    "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mavx2", "-mfma",
    "-mf16c",    "-mbmi2",     "-mprefer-vector-width=512", NULL};
static const char *const avx2_vnni_flags[] = {"-mavx2", "-mavxvnni", "-mfma", "-mf16c", "-mbmi2", NULL};
static const char *const no_flags[] = {NULL};
/* The host's whole instruction set, tuned generically: GCC 12's znver3
 * tuning (what -march=native picks on Zen 3) folds every B load of a
 * register tile into its FMA, reloading one vector per row, and a 4-row
 * tile of a 128 x 128 x 512 MatMul ran 0.35 ms on one core against 0.175
 * with -mtune=generic (BERT-tiny 1.2 vs 1.55 ms, ResNet-50 and MobileNetV2
 * level or better; docs/benchmarks.md).  GCC 12 does not know Zen 4, whose
 * -march=native tunes generically already. */
static const char *const native_flags[] = {"-march=native", "-mtune=generic", NULL};
/* ARMv8.0-A: NEON and FMA are part of the base architecture */
static const char *const aarch64_flags[] = {"-march=armv8-a", NULL};
static const char *const qemu_aarch64[] = {"qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", NULL};
/* GPU kernels run where the host program runs: no emulator */
static const char *const run_natively[] = {NULL};

/* Caches: the 48 KiB L1 the x86 rules were tuned with (a B panel up to
 * half of it stays there: Ice Lake and later, Zen 5) and a 1 MiB L2. */
#define X86_L1 (48 << 10)
#define X86_L2 (1 << 20)
#define HW_AVX512                                                                               \
    {.lanes = 16, .vector_regs = 32, .tile_acc_max = 24, .l1_bytes = X86_L1, .l2_bytes = X86_L2}
#define HW_AVX2 {.lanes = 8, .vector_regs = 16, .tile_acc_max = 12, .l1_bytes = X86_L1, .l2_bytes = X86_L2}
#define HW_SCALAR {.lanes = 1, .vector_regs = 16, .tile_acc_max = 12, .l1_bytes = X86_L1, .l2_bytes = X86_L2}
/* Neoverse N1 / Cortex-A76 class cores: 64 KiB L1D, 1 MiB L2.  18
 * accumulators, as in the NEON gemm micro-kernel: there 8 x 3 (24) spilled
 * three accumulators per k step, since GCC 12 loads a step's A values into
 * registers of their own up front (microkernel.c) */
#define HW_NEON                                                                                 \
    {.lanes = 4, .vector_regs = 32, .tile_acc_max = 18, .l1_bytes = 64 << 10, .l2_bytes = 1 << 20}

/* GPUs: no vectors in the kernels (one thread per output element), and the
 * threads per block the default rules bind: 256 on CUDA GPUs (8 warps);
 * 64 for OpenCL, which must also suit PoCL's CPU devices, where a
 * work-group is one core's loop.  Shared memory per block: CUDA's static
 * limit (48 KiB) and OpenCL's guaranteed minimum local memory (32 KiB). */
#define HW_CUDA                                                                                 \
    {.lanes = 1, .vector_regs = 16, .tile_acc_max = 12, .l1_bytes = 48 << 10,                  \
     .l2_bytes = 1 << 20, .gpu_threads = 256, .gpu_shared_bytes = 48 << 10}
#define HW_OPENCL                                                                               \
    {.lanes = 1, .vector_regs = 16, .tile_acc_max = 12, .l1_bytes = 48 << 10,                  \
     .l2_bytes = 1 << 20, .gpu_threads = 64, .gpu_shared_bytes = 32 << 10}

#define X86_TARGET(NAME, SUMMARY, ISA, BYTES, NATIVE, FLAGS, HW)                                  \
    {.name = NAME, .summary = SUMMARY, .isa = ISA, .arch = CG_ARCH_X86_64, .vector_bytes = BYTES, \
     .native = NATIVE, .isa_flags = FLAGS, .hw = HW, .microkernels = CG_UK_X86,                  \
     .x86_vector_ops = true}

static const cg_target targets[] = {
    X86_TARGET("avx512", "x86-64 AVX-512 (F, BW, VL, DQ) + FMA: 16 float lanes, 32 registers",
               CG_ISA_AVX512, 64, false, avx512_flags, HW_AVX512),
    X86_TARGET("avx2", "x86-64 AVX2 + FMA: 8 float lanes, 16 registers", CG_ISA_AVX2, 32, false,
               avx2_flags, HW_AVX2),
    /* the int8 micro-kernels with vpdpbusd (Ice Lake, Zen 4 and later; Alder Lake) */
    {.name = "avx512-vnni", .summary = "avx512 + AVX-512 VNNI (int8 dot products)", .isa = CG_ISA_AVX512,
     .arch = CG_ARCH_X86_64, .vector_bytes = 64, .native = false, .isa_flags = avx512_vnni_flags,
     .hw = HW_AVX512, .microkernels = CG_UK_X86, .x86_vector_ops = true,
     .int8_dot = CG_DOT_AVX512VNNI},
    {.name = "avx2-vnni", .summary = "avx2 + AVX-VNNI (int8 dot products)", .isa = CG_ISA_AVX2,
     .arch = CG_ARCH_X86_64, .vector_bytes = 32, .native = false, .isa_flags = avx2_vnni_flags,
     .hw = HW_AVX2, .microkernels = CG_UK_X86, .x86_vector_ops = true, .int8_dot = CG_DOT_AVXVNNI},
    {.name = "generic", .summary = "portable C99 without vector types", .isa = CG_ISA_GENERIC,
     .arch = CG_ARCH_ANY, .vector_bytes = 0, .native = false, .isa_flags = no_flags,
     .hw = HW_SCALAR, .microkernels = CG_UK_X86, .x86_vector_ops = true},
    {.name = "aarch64", .summary = "ARMv8-A NEON: 4 float lanes, 32 registers (cross-built, "
                                   "runs under qemu-aarch64 on other hosts)",
     .isa = CG_ISA_NEON, .arch = CG_ARCH_AARCH64, .vector_bytes = 16, .native = false,
     .isa_flags = aarch64_flags, .hw = HW_NEON, .microkernels = CG_UK_NEON,
     .x86_vector_ops = false, .cross_cc = "aarch64-linux-gnu-gcc", .emulator = qemu_aarch64},
    {.name = "opencl", .summary = "OpenCL C kernels + host code on the OpenCL API (runs here on PoCL)",
     .isa = CG_ISA_GENERIC, .arch = CG_ARCH_GPU, .vector_bytes = 0, .native = false,
     .isa_flags = no_flags, .hw = HW_OPENCL, .microkernels = CG_UK_X86, .x86_vector_ops = false,
     .emulator = run_natively, .gpu = CG_GPU_OPENCL},
    {.name = "cuda", .summary = "CUDA C++ kernels + host code for nvcc (sm_80, sm_90; AOT packages)",
     .isa = CG_ISA_GENERIC, .arch = CG_ARCH_GPU, .vector_bytes = 0, .native = false,
     .isa_flags = no_flags, .hw = HW_CUDA, .microkernels = CG_UK_X86, .x86_vector_ops = false,
     .gpu = CG_GPU_CUDA},
};

/* Host variants: same ISA, built with -march=native. */
static const cg_target host_targets[] = {
    X86_TARGET("avx512", "this host (AVX-512)", CG_ISA_AVX512, 64, true, native_flags, HW_AVX512),
    X86_TARGET("avx2", "this host (AVX2)", CG_ISA_AVX2, 32, true, native_flags, HW_AVX2),
    {.name = "generic", .summary = "this host (no vector ISA smelt knows)", .isa = CG_ISA_GENERIC,
     .arch = CG_ARCH_ANY, .vector_bytes = 0, .native = true, .isa_flags = native_flags,
     .hw = HW_SCALAR, .microkernels = CG_UK_X86, .x86_vector_ops = true},
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

static cg_arch host_arch(void)
{
#if defined(__x86_64__)
    return CG_ARCH_X86_64;
#elif defined(__aarch64__)
    return CG_ARCH_AARCH64;
#else
    return CG_ARCH_ANY;
#endif
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

const char *cg_target_names(void)
{
    return "avx512, avx512-vnni, avx2, avx2-vnni, generic, aarch64, opencl, cuda, host";
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>

/* AVX-VNNI: CPUID leaf 7 sub-leaf 1, EAX bit 4 (clang 14's
 * __builtin_cpu_supports does not know "avxvnni"), with the AVX state the
 * OS saves, which AVX2 support implies. */
static bool host_has_avxvnni(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
    return (a & (1u << 4)) && __builtin_cpu_supports("avx2");
}
#endif

static bool host_has_dot(cg_int8_dot d)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    if (d == CG_DOT_AVX512VNNI) return __builtin_cpu_supports("avx512vnni");
    if (d == CG_DOT_AVXVNNI) return host_has_avxvnni();
#endif
    return d == CG_DOT_NONE;
}

int cg_target_count(void) { return (int)SMELT_ARRAY_LEN(targets); }

const cg_target *cg_target_at(int i)
{
    return i >= 0 && i < cg_target_count() ? &targets[i] : NULL;
}

bool cg_target_loadable(const cg_target *t)
{
    return t && t->gpu == CG_GPU_NONE && (t->arch == CG_ARCH_ANY || t->arch == host_arch());
}

bool cg_target_runnable(const cg_target *t)
{
    if (!cg_target_loadable(t)) return false;
    if (t->arch == CG_ARCH_ANY) return true;
    if (t->isa == CG_ISA_NEON) return true; /* part of ARMv8-A */
    cg_isa host = detect_isa();
    if (!host_has_dot(t->int8_dot)) return false;
    return t->isa == CG_ISA_AVX2 ? host >= CG_ISA_AVX2 : t->isa == CG_ISA_AVX512 ? host == CG_ISA_AVX512 : true;
}

int cg_target_lanes(const cg_target *t, smelt_dtype dt)
{
    if (!t || t->vector_bytes == 0) return 0;
    if (dt != SMELT_DT_FLOAT32 && dt != SMELT_DT_FLOAT64) return 0;
    return t->vector_bytes / (int)smelt_dtype_size(dt);
}

const char *const *cg_common_cflags(void) { return common_flags; }

const char *cg_target_cross_cc(const cg_target *t)
{
    if (!t || !t->cross_cc) return NULL;
    const char *env = getenv("SMELT_CROSS_CC");
    return env && *env ? env : t->cross_cc;
}
