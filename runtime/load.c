/* Loading a compiled model from a shared library (dlopen).  Kept apart from
 * model.c so an AOT package, which links the model statically, needs no
 * dynamic loader. */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200809L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* dlopen under -std=c99 */
#endif
#include <dlfcn.h>
#include <stdio.h>

#include "smelt_rt.h"

void smelt_rt_model_attach_library_(smelt_rt_model *m, void *handle, void (*close_fn)(void *));

static void close_library(void *handle) { dlclose(handle); }

smelt_rt_model *smelt_rt_model_load(const char *library_path, const char *weights_path,
                                    int num_threads, char *err, size_t err_size)
{
    if (!library_path) {
        if (err && err_size) snprintf(err, err_size, "no library path given");
        return NULL;
    }
    void *h = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        if (err && err_size)
            snprintf(err, err_size, "cannot load '%s': %s", library_path, why ? why : "unknown error");
        return NULL;
    }
    /* dlsym returns void *; the module info is data, so this cast is plain. */
    const smelt_rt_module_info *info = (const smelt_rt_module_info *)dlsym(h, SMELT_RT_MODULE_SYMBOL);
    if (!info) {
        if (err && err_size)
            snprintf(err, err_size, "'%s' is not a smelt module (no symbol %s)", library_path,
                     SMELT_RT_MODULE_SYMBOL);
        dlclose(h);
        return NULL;
    }
    smelt_rt_model *m = smelt_rt_model_from_info_file(info, weights_path, num_threads, err, err_size);
    if (!m) {
        dlclose(h);
        return NULL;
    }
    smelt_rt_model_attach_library_(m, h, close_library);
    return m;
}
