/* The built-in micro-kernel table (filled by tensorize's kernels). */
#include <string.h>

#include "base/base.h"
#include "codegen/microkernel.h"

/* Sentinel-free table; add kernels here as {name, c_name, source}. */
static const cg_microkernel builtin_kernels[] = {
    {"smelt.copy_f32",
     "smelt_uk_copy_f32",
     "/* dst[0..n) = src[0..n) */\n"
     "static void smelt_uk_copy_f32(float *dst, const float *src, int64_t n)\n"
     "{\n"
     "    memcpy(dst, src, (size_t)n * sizeof(float));\n"
     "}\n"},
};

const cg_microkernel *cg_microkernel_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < SMELT_ARRAY_LEN(builtin_kernels); i++)
        if (!strcmp(builtin_kernels[i].name, name)) return &builtin_kernels[i];
    return NULL;
}
