/* Internal base utilities: error context, allocation, arenas, strings. */
#ifndef SMELT_BASE_H
#define SMELT_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "smelt.h"

#define SMELT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define SMELT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SMELT_PRINTF(f, a)
#endif

/* ---- Error context ------------------------------------------------------
 * Sticky first error: smelt_errf records code+message only if no error is
 * recorded yet, and always returns `code` so callers can `return smelt_errf(..)`.
 */
struct smelt_ctx {
    smelt_status status;
    char message[1024];
    /* where the recorded error is, when a node is to blame ("" otherwise) */
    char node[256];
    char op[64];
};

smelt_status smelt_errf(smelt_ctx *ctx, smelt_status code, const char *fmt, ...)
    SMELT_PRINTF(3, 4);
smelt_status smelt_verrf(smelt_ctx *ctx, smelt_status code, const char *fmt, va_list ap);
/* smelt_errf that also records the node and op to blame (smelt_ctx_node/op);
 * the message is fmt as given: callers name the node in it themselves. */
smelt_status smelt_errf_at(smelt_ctx *ctx, smelt_status code, const char *node, const char *op,
                           const char *fmt, ...) SMELT_PRINTF(5, 6);
/* Record from's error (status, message, node, op) in ctx; returns its status. */
smelt_status smelt_ctx_forward(smelt_ctx *ctx, const smelt_ctx *from);
/* Adds context to the recorded error's message (no-op when none is recorded). */
void smelt_ctx_append(smelt_ctx *ctx, const char *fmt, ...) SMELT_PRINTF(2, 3);

/* Compiler bugs only; never for user input. */
#define SMELT_ASSERT(cond)                                                          \
    do {                                                                            \
        if (!(cond)) smelt_internal_fail(__FILE__, __LINE__, #cond);                \
    } while (0)
_Noreturn void smelt_internal_fail(const char *file, int line, const char *what);

#define SMELT_TRY(expr)                                                             \
    do {                                                                            \
        smelt_status smelt_try_s_ = (expr);                                         \
        if (smelt_try_s_ != SMELT_OK) return smelt_try_s_;                          \
    } while (0)

/* ---- Allocation (goes through the allocator hook) ----------------------- */
void *smelt_alloc(size_t size);           /* uninitialised, NULL on failure */
void *smelt_calloc(size_t n, size_t size); /* zeroed, overflow-checked */
void *smelt_realloc(void *p, size_t old_size, size_t new_size);
void smelt_free(void *p);
char *smelt_strdup(const char *s);

/* Overflow-checked size arithmetic: return false on overflow. */
bool smelt_mul_overflow_i64(int64_t a, int64_t b, int64_t *out);
bool smelt_add_overflow_i64(int64_t a, int64_t b, int64_t *out);

/* ---- Arena: bump allocator, freed all at once ---------------------------- */
typedef struct smelt_arena_block smelt_arena_block;
typedef struct smelt_arena {
    smelt_arena_block *head;
    size_t total;
} smelt_arena;

void smelt_arena_init(smelt_arena *a);
void smelt_arena_fini(smelt_arena *a);
void *smelt_arena_alloc(smelt_arena *a, size_t size); /* zeroed, 16-aligned */
char *smelt_arena_strdup(smelt_arena *a, const char *s);
char *smelt_arena_strndup(smelt_arena *a, const char *s, size_t n);
char *smelt_arena_printf(smelt_arena *a, const char *fmt, ...) SMELT_PRINTF(2, 3);
/* Tests only: blocks of this many bytes (0: the default 64 KiB), so that
 * nearly every IR node is an allocation a fault-injection test can refuse. */
void smelt_arena_set_block_size(size_t bytes);

/* ---- Growable string ------------------------------------------------------ */
typedef struct smelt_strbuf {
    char *data;
    size_t len, cap;
    bool failed; /* allocation failed at some point */
} smelt_strbuf;

void smelt_strbuf_init(smelt_strbuf *sb);
void smelt_strbuf_fini(smelt_strbuf *sb);
void smelt_strbuf_append(smelt_strbuf *sb, const char *s);
void smelt_strbuf_appendn(smelt_strbuf *sb, const char *s, size_t n);
void smelt_strbuf_printf(smelt_strbuf *sb, const char *fmt, ...) SMELT_PRINTF(2, 3);
const char *smelt_strbuf_cstr(smelt_strbuf *sb); /* never NULL */

/* ---- Dynamic array of pointers ---------------------------------------------- */
typedef struct smelt_ptrvec {
    void **items;
    int len, cap;
} smelt_ptrvec;
bool smelt_ptrvec_push(smelt_ptrvec *v, void *p);
void smelt_ptrvec_fini(smelt_ptrvec *v);

/* ---- Files ------------------------------------------------------------------- */
/* Read a whole file (capped at max_bytes).  *out is freed with smelt_free. */
smelt_status smelt_read_file(smelt_ctx *ctx, const char *path, size_t max_bytes, void **out,
                             size_t *size);
smelt_status smelt_write_file(smelt_ctx *ctx, const char *path, const void *data, size_t size);

/* ---- Misc -------------------------------------------------------------------- */
/* FNV-1a 64: fast and the same in every run (printed-IR and CSE hashes).
 * Not for tables indexed by names from a model: see smelt_hash_keyed. */
uint64_t smelt_hash_bytes(const void *data, size_t n, uint64_t seed);
/* SipHash-2-4 of data under a 128-bit key. */
uint64_t smelt_siphash(const uint64_t key[2], const void *data, size_t n);
/* SipHash-2-4 under the per-process key: random (getrandom, /dev/urandom,
 * else time/pid/address), or derived from $SMELT_HASH_SEED when set.  Differs
 * between runs: only for lookups, never for anything printed or stored. */
uint64_t smelt_hash_keyed(const void *data, size_t n);
/* The same with the previous hash as seed, to hash several pieces in turn. */
uint64_t smelt_hash_keyed_seed(const void *data, size_t n, uint64_t seed);
/* ONNX's low-bit types (smelt.h; conversions in runtime/smelt_lowbit.h). */
bool smelt_dtype_is_lowbit(smelt_dtype dt);
bool smelt_dtype_is_lowbit_float(smelt_dtype dt); /* float8 and float4: codes */
bool smelt_dtype_is_lowbit_int(smelt_dtype dt);   /* int4, uint4, int2, uint2 */
float smelt_f16_to_f32(uint16_t h);
uint16_t smelt_f32_to_f16(float f);
float smelt_bf16_to_f32(uint16_t h);
uint16_t smelt_f32_to_bf16(float f);

/* Debug level from SMELT_DEBUG (0..4). */
int smelt_debug_level(void);
/* Where lowering prints the loop IR after each step: NULL (the default)
 * prints to stderr at SMELT_DEBUG >= 3 only; a stream set here gets it
 * always (`smelt compile --dump-ir=tir` sets stdout, like the other dumps). */
void smelt_set_tir_dump(FILE *f);
FILE *smelt_tir_dump(void);

/* ---- Limits (caps on untrusted input; each error names the cap) ----------- */
#define SMELT_LIMIT_MODEL_BYTES ((size_t)4 << 30)     /* 4 GiB model file */
#define SMELT_LIMIT_TENSOR_ELEMS ((int64_t)1 << 34)    /* 16 Gi elements */
#define SMELT_LIMIT_TENSOR_BYTES ((int64_t)1 << 36)    /* 64 GiB */
#define SMELT_LIMIT_NODES 1000000
#define SMELT_LIMIT_FUNCTION_DEPTH 32


/* ---- String -> pointer hash map (keys are not copied) ----------------------
 * Keyed hash (smelt_hash_keyed), so names chosen by a model cannot collide on
 * purpose; there is no iteration, so its order cannot leak into output. */
typedef struct smelt_strmap {
    const char **keys;
    void **vals;
    size_t cap, len;
    size_t probes; /* occupied slots stepped over by puts (tests watch collisions) */
} smelt_strmap;
void smelt_strmap_init(smelt_strmap *m);
void smelt_strmap_fini(smelt_strmap *m);
void *smelt_strmap_get(const smelt_strmap *m, const char *key);
bool smelt_strmap_put(smelt_strmap *m, const char *key, void *val); /* false on OOM */

#endif
