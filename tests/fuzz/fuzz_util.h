/* Shared by the libFuzzer harnesses: a budget allocator (a giant tensor
 * fails with SMELT_ERR_NOMEM instead of tripping libFuzzer's RSS limit) and
 * the check that a failure carries a status, a message, and is not a
 * compiler bug. */
#ifndef SMELT_FUZZ_UTIL_H
#define SMELT_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smelt.h"

#define FUZZ_MAX_ALLOC ((size_t)4 << 20) /* 1 Mi floats: keeps kernels fast under ASan */
#define FUZZ_MAX_LIVE ((size_t)64 << 20)

static size_t fuzz_live;

/* A 16-byte header keeps each block's size for the live total. */
static void *fuzz_budget_alloc(void *user, size_t size)
{
    (void)user;
    if (size > FUZZ_MAX_ALLOC || fuzz_live + size > FUZZ_MAX_LIVE) return NULL;
    unsigned char *p = malloc(size + 16);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    fuzz_live += size;
    return p + 16;
}

static void fuzz_budget_release(void *user, void *ptr)
{
    (void)user;
    if (!ptr) return;
    unsigned char *p = (unsigned char *)ptr - 16;
    size_t size;
    memcpy(&size, p, sizeof size);
    fuzz_live -= size;
    free(p);
}

static inline void fuzz_use_budget_allocator(void)
{
    smelt_allocator a = {fuzz_budget_alloc, fuzz_budget_release, NULL};
    smelt_set_allocator(&a);
}

/* A failed call must say why, and must not be a compiler bug. */
static inline void fuzz_check_failed(const smelt_ctx *ctx)
{
    smelt_status s = smelt_ctx_status(ctx);
    const char *msg = smelt_ctx_message(ctx);
    if (s == SMELT_OK || s >= SMELT_STATUS_COUNT_ || !msg || !*msg) {
        fprintf(stderr, "failure without a status or message (status %d)\n", (int)s);
        abort();
    }
    if (s == SMELT_ERR_INTERNAL) {
        fprintf(stderr, "internal error on user input: %s\n", msg);
        abort();
    }
}

/* ---- recipe reader ---- */

typedef struct recipe {
    const uint8_t *p;
    size_t n;
} recipe;

static inline unsigned rd_byte(recipe *r)
{
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

static inline unsigned rd_pick(recipe *r, unsigned n) { return n ? rd_byte(r) % n : 0; }
static inline int64_t rd_small(recipe *r) { return (int64_t)rd_pick(r, 20) - 4; } /* -4..15 */

#endif
