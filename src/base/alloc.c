/* Allocation through one hook, so tests can inject failures. */
#include <stdlib.h>
#include <string.h>

#include "base.h"

static void *default_alloc(void *user, size_t size)
{
    (void)user;
    return malloc(size ? size : 1);
}

static void default_release(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

static smelt_allocator g_alloc = {default_alloc, default_release, NULL};

void smelt_set_allocator(const smelt_allocator *a)
{
    if (a) {
        g_alloc = *a;
    } else {
        g_alloc.alloc = default_alloc;
        g_alloc.release = default_release;
        g_alloc.user = NULL;
    }
}

void *smelt_alloc(size_t size) { return g_alloc.alloc(g_alloc.user, size); }

void *smelt_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = smelt_alloc(n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

void *smelt_realloc(void *p, size_t old_size, size_t new_size)
{
    void *q = smelt_alloc(new_size);
    if (!q) return NULL;
    if (p) {
        memcpy(q, p, old_size < new_size ? old_size : new_size);
        smelt_free(p);
    }
    return q;
}

void smelt_free(void *p)
{
    if (p) g_alloc.release(g_alloc.user, p);
}

char *smelt_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = smelt_alloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

bool smelt_mul_overflow_i64(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

bool smelt_add_overflow_i64(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

bool smelt_ptrvec_push(smelt_ptrvec *v, void *p)
{
    if (v->len == v->cap) {
        int ncap = v->cap ? v->cap * 2 : 8;
        void **n = smelt_realloc(v->items, (size_t)v->cap * sizeof(void *),
                                 (size_t)ncap * sizeof(void *));
        if (!n) return false;
        v->items = n;
        v->cap = ncap;
    }
    v->items[v->len++] = p;
    return true;
}

void smelt_ptrvec_fini(smelt_ptrvec *v)
{
    smelt_free(v->items);
    v->items = NULL;
    v->len = v->cap = 0;
}
