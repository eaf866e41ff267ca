/* The runtime's own source files, embedded at build time (runtime/embed.cmake)
 * so AOT packages and the JIT's include directory need no source tree. */
#ifndef SMELT_CODEGEN_EMBED_H
#define SMELT_CODEGEN_EMBED_H

#include <stddef.h>

typedef struct cg_embedded_file {
    const char *name;          /* file name in a package: smelt_rt.h, smelt_rt_pool.c, ... */
    const unsigned char *data; /* NUL-terminated */
    size_t size;               /* without the NUL */
} cg_embedded_file;

extern const cg_embedded_file cg_runtime_files[];
extern const int cg_runtime_n_files;

/* The file with this name, or NULL. */
const cg_embedded_file *cg_runtime_file(const char *name);

#endif
