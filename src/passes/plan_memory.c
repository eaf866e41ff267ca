/* Best-fit arena planning over lifetimes (see plan_memory.h).
 *
 * Blocks are placed in order of their first use (larger first among equals);
 * before each placement every block that died earlier returns its range to a
 * free list kept sorted by offset and coalesced.  A block takes the smallest
 * free range that fits, or grows the arena at its end.  A block may instead
 * take over the range of its inplace_of when that one dies at the very call
 * that writes it (an elementwise group overwriting its input).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/plan_memory.h"

typedef struct region {
    int64_t off, size;
} region;

typedef struct planner {
    mem_block *b;
    int n;
    region *free; /* sorted by offset, never adjacent */
    int n_free;
    int64_t top;   /* arena end */
    bool *handed;  /* per block: its range went to an in-place successor */
} planner;

static int64_t aligned(int64_t bytes) { return (bytes + MEM_PLAN_ALIGN - 1) / MEM_PLAN_ALIGN * MEM_PLAN_ALIGN; }

/* Sort keys (no globals: lowering may run in several threads). */
typedef struct sort_key {
    int64_t major, minor;
    int index;
} sort_key;

static int by_key(const void *a, const void *b)
{
    const sort_key *x = a, *y = b;
    if (x->major != y->major) return x->major < y->major ? -1 : 1;
    if (x->minor != y->minor) return x->minor < y->minor ? -1 : 1;
    return x->index - y->index;
}

/* order: by first use, larger first; deaths: by last use. */
static void sort_blocks(const mem_block *b, int n, sort_key *keys, int *order, int *deaths)
{
    for (int i = 0; i < n; i++) keys[i] = (sort_key){b[i].first, -b[i].bytes, i};
    qsort(keys, (size_t)n, sizeof *keys, by_key);
    for (int i = 0; i < n; i++) order[i] = keys[i].index;
    for (int i = 0; i < n; i++) keys[i] = (sort_key){b[i].last, 0, i};
    qsort(keys, (size_t)n, sizeof *keys, by_key);
    for (int i = 0; i < n; i++) deaths[i] = keys[i].index;
}

/* Return [off, off+size) to the free list, merging with its neighbours. */
static void release(planner *p, int64_t off, int64_t size)
{
    int i = 0;
    while (i < p->n_free && p->free[i].off < off) i++;
    bool left = i > 0 && p->free[i - 1].off + p->free[i - 1].size == off;
    bool right = i < p->n_free && off + size == p->free[i].off;
    if (left && right) {
        p->free[i - 1].size += size + p->free[i].size;
        memmove(&p->free[i], &p->free[i + 1], sizeof(region) * (size_t)(p->n_free - i - 1));
        p->n_free--;
    } else if (left) {
        p->free[i - 1].size += size;
    } else if (right) {
        p->free[i].off = off;
        p->free[i].size += size;
    } else {
        memmove(&p->free[i + 1], &p->free[i], sizeof(region) * (size_t)(p->n_free - i));
        p->free[i] = (region){off, size};
        p->n_free++;
    }
}

static int64_t take(planner *p, int64_t size)
{
    int best = -1;
    for (int i = 0; i < p->n_free; i++)
        if (p->free[i].size >= size && (best < 0 || p->free[i].size < p->free[best].size)) best = i;
    if (best >= 0) {
        int64_t off = p->free[best].off;
        p->free[best].off += size;
        p->free[best].size -= size;
        if (p->free[best].size == 0) {
            memmove(&p->free[best], &p->free[best + 1],
                    sizeof(region) * (size_t)(p->n_free - best - 1));
            p->n_free--;
        }
        return off;
    }
    /* grow: a free range at the arena's end is extended rather than skipped */
    region *last = p->n_free ? &p->free[p->n_free - 1] : NULL;
    if (last && last->off + last->size == p->top) {
        int64_t off = last->off;
        p->top = off + size;
        p->n_free--;
        return off;
    }
    int64_t off = p->top;
    p->top += size;
    return off;
}

static bool can_take_over(const planner *p, const mem_block *b)
{
    if (b->inplace_of < 0 || b->inplace_of >= p->n) return false;
    const mem_block *a = &p->b[b->inplace_of];
    return a != b && a->last == b->first && a->first < b->first && !p->handed[b->inplace_of] &&
           aligned(a->bytes) == aligned(b->bytes);
}

static void place_all(planner *p, const int *order, const int *deaths)
{
    int d = 0;
    for (int k = 0; k < p->n; k++) {
        mem_block *b = &p->b[order[k]];
        for (; d < p->n && p->b[deaths[d]].last < b->first; d++)
            if (!p->handed[deaths[d]]) release(p, p->b[deaths[d]].offset, aligned(p->b[deaths[d]].bytes));
        if (can_take_over(p, b)) {
            b->offset = p->b[b->inplace_of].offset;
            p->handed[b->inplace_of] = true;
        } else {
            b->offset = take(p, aligned(b->bytes));
        }
    }
}

smelt_status mem_plan(smelt_ctx *ctx, mem_block *blocks, int n, int64_t *arena)
{
    *arena = 0;
    if (n <= 0) return SMELT_OK;
    int *order = smelt_calloc((size_t)n, sizeof *order);
    int *deaths = smelt_calloc((size_t)n, sizeof *deaths);
    sort_key *keys = smelt_calloc((size_t)n, sizeof *keys);
    planner p = {blocks, n, smelt_calloc((size_t)n + 1, sizeof(region)), 0, 0,
                 smelt_calloc((size_t)n, sizeof(bool))};
    smelt_status s = SMELT_OK;
    if (!order || !deaths || !keys || !p.free || !p.handed) {
        s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    } else {
        sort_blocks(blocks, n, keys, order, deaths);
        place_all(&p, order, deaths);
        *arena = p.top;
    }
    smelt_free(order);
    smelt_free(deaths);
    smelt_free(keys);
    smelt_free(p.free);
    smelt_free(p.handed);
    return s;
}
