/* Bump arena: IR objects of one owner are freed together. */
#include <string.h>

#include "base.h"

struct smelt_arena_block {
    smelt_arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

#define ARENA_MIN_BLOCK (64 * 1024)

static size_t g_min_block = ARENA_MIN_BLOCK;

void smelt_arena_set_block_size(size_t bytes) { g_min_block = bytes ? bytes : ARENA_MIN_BLOCK; }

void smelt_arena_init(smelt_arena *a) { memset(a, 0, sizeof *a); }

void smelt_arena_fini(smelt_arena *a)
{
    smelt_arena_block *b = a->head;
    while (b) {
        smelt_arena_block *n = b->next;
        smelt_free(b);
        b = n;
    }
    a->head = NULL;
    a->total = 0;
}

void *smelt_arena_alloc(smelt_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size == 0) size = 16;
    smelt_arena_block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > g_min_block ? size : g_min_block;
        if (cap > SIZE_MAX - sizeof *b) return NULL;
        b = smelt_alloc(sizeof *b + cap);
        if (!b) return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
        a->total += cap;
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

char *smelt_arena_strndup(smelt_arena *a, const char *s, size_t n)
{
    char *d = smelt_arena_alloc(a, n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *smelt_arena_strdup(smelt_arena *a, const char *s)
{
    return smelt_arena_strndup(a, s, strlen(s));
}

char *smelt_arena_printf(smelt_arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *d = n >= 0 ? smelt_arena_alloc(a, (size_t)n + 1) : NULL;
    if (d) vsnprintf(d, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return d;
}
