/* C code generation from loop IR, building with the system C compiler
 * (content-hash cache), loading the result, and writing AOT packages.
 *
 * Semantics of the emitted C that lowering can rely on:
 *   - IR_MIN(a, b) is `a < b ? a : b`, IR_MAX(a, b) is `a > b ? a : b` (also
 *     for floats: with a NaN operand the result is b, as x86 minps/maxps).
 *   - IR_DIV/IR_MOD on integers are C's truncating ops; IR_FLOORDIV/FLOORMOD
 *     round to -inf; a zero divisor gives 0 instead of a trap.
 *   - Signed integer +, -, * in values wrap (two's complement); in index
 *     positions (load/store indices, loop bounds) they are plain C, which
 *     lets the C compiler reason about the induction variables.
 *   - Float -> int casts saturate (NaN -> 0); -> bool is `!= 0`;
 *     float16/bfloat16 values are carried as float and rounded to nearest
 *     even after every operation that produces one.
 *   - A VECTORIZED loop is emitted with vector types only when that cannot
 *     change results (no dependence between lanes); otherwise it is a scalar
 *     loop.  Nested PARALLEL loops run serially inside the outer one.
 */
#ifndef SMELT_CODEGEN_H
#define SMELT_CODEGEN_H

#include "codegen/microkernel.h"
#include "codegen/target.h"
#include "smelt_rt.h"
#include "tir/func.h"

typedef struct cg_emit_options {
    bool embed_weights; /* define the weight blob as a const array in the module */
    /* Extra micro-kernels, searched before the built-in table. */
    const cg_microkernel *microkernels;
    int n_microkernels;
    /* When not NULL, receives the module's arena bytes: the memory plan's
     * plus the largest function workspace (large temporaries). */
    int64_t *arena_bytes_out;
} cg_emit_options;

/* Emit the whole program as one C99 translation unit (plus GCC vector
 * extensions when the target has vectors).  Appends to `out`. */
smelt_status cg_emit_program(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                             smelt_strbuf *out);
smelt_status cg_emit_program_opts(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                                  const cg_emit_options *opts, smelt_strbuf *out);

/* GPU targets (gpu_emit.c): the device file of a package (model_gpu.c for
 * opencl: kernels as a string + OpenCL host code; model_gpu.cu for cuda)
 * into *out, and/or where each function runs, a line per function, into
 * *placement (either may be NULL).  Fails naming the function and the
 * problem for anything the GPU path cannot do: nothing runs on the CPU. */
smelt_status cg_gpu_emit_device(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                                smelt_strbuf *out, smelt_strbuf *placement);

/* Build c_source into a shared library through the compile cache and return
 * its path in *out_lib_path (free with smelt_free).  The C compiler is $CC
 * (split on blanks, no shell) or cc.  The cache directory is
 * $SMELT_CACHE_DIR, else $XDG_CACHE_HOME/smelt, else ~/.cache/smelt. */
smelt_status cg_build_shared(smelt_ctx *ctx, const char *c_source, const cg_target *t,
                             char **out_lib_path);

/* The first line of the C compiler's --version (part of every cache key and
 * of the tuner's target key). */
smelt_status cg_compiler_identity(smelt_ctx *ctx, char *out, size_t cap);

/* The cache directory (created 0700 if missing, refused if not owned by the
 * user or writable by others) in *out_dir (free with smelt_free). */
smelt_status cg_cache_dir(smelt_ctx *ctx, char **out_dir);

/* Cache upkeep (cache.c).  The budget is $SMELT_CACHE_MAX_MB megabytes
 * (default 2048; 0 never evicts).  trim removes the least recently used
 * entries (library + source), never keep_key's, until the cache fits, and
 * temp files an hour old; touch marks a library as just used. */
smelt_status cg_cache_budget(smelt_ctx *ctx, int64_t *max_bytes);
smelt_status cg_cache_trim(smelt_ctx *ctx, const char *dir, int64_t max_bytes,
                           const char *keep_key);
void cg_cache_touch(const char *lib_path);

/* dlopen a module and find its smelt_module_info (ABI version checked). */
smelt_status cg_load_module(smelt_ctx *ctx, const char *lib_path, void **handle,
                            const smelt_rt_module_info **info);
void cg_unload_module(void *handle);

/* Write a self-contained package into dir (created if missing): model.c,
 * model.h, weights.bin (unless embed_weights), smelt_rt.h and the runtime
 * sources, a Makefile and an example main.c. */
smelt_status cg_write_package(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                              const char *dir, bool embed_weights);
/* The same with every symbol model.c exports, model.h's names and macros
 * under prefix (a C identifier; NULL or "": "model", i.e. model_create,
 * MODEL_ARENA_BYTES, smelt_module_info), so several packages link into one
 * program: PREFIX_create, PREFIX_t, PREFIX_ARENA_BYTES (upper case),
 * PREFIX_module_info. */
smelt_status cg_write_package_prefixed(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                                       const char *dir, bool embed_weights, const char *prefix);

/* Run argv (argv[0] looked up in PATH, no shell), stdin from /dev/null,
 * stdout and stderr captured together (the first 16 KiB) into *output,
 * which the caller finishes.  *exit_code is -1 when it did not exit
 * normally.  Returns 0, or an errno value when it could not be started. */
int cg_run_process(char *const *argv, int *exit_code, smelt_strbuf *output);

/* ---- pieces shared with tests and tools ---- */

/* Append s as a C string literal (quotes included); every byte outside
 * printable ASCII, and ", \ and ?, is escaped, so no model text reaches the
 * C raw and no trigraph can form. */
void cg_append_string_literal(smelt_strbuf *out, const char *s);
/* Append s as a C comment body: only printable ASCII survives (others become
 * '.'), and no comment opener or closer can form. Truncated to max_len. */
void cg_append_comment_text(smelt_strbuf *out, const char *s, size_t max_len);

#endif
