/* Stage lookups by name and by reader (see stage_index.h). */
#include <stdint.h>
#include <string.h>

#include "sched/stage_index.h"
#include "tir/mutate.h"

typedef struct stage_list {
    int *items;
    int n, cap;
} stage_list;

struct sch_stage_index {
    int *slots; /* open addressing: stage index + 1, 0 empty */
    int cap, used;
    stage_list *readers; /* per stage; NULL: to be built */
    int n_readers;       /* stages the readers cover */
};

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static struct sch_stage_index *index_of(sch_state *st)
{
    if (st->index) return st->index;
    st->index = smelt_arena_alloc(&st->arena, sizeof *st->index);
    if (st->index) memset(st->index, 0, sizeof *st->index);
    return st->index;
}

static void slot_put(int *slots, int cap, const sch_state *st, int i)
{
    uint64_t h = name_hash(st->stages[i].buf->name);
    for (int k = (int)(h & (uint64_t)(cap - 1));; k = (k + 1) & (cap - 1))
        if (slots[k] == 0) {
            slots[k] = i + 1;
            return;
        }
}

static bool grow_slots(sch_state *st, struct sch_stage_index *x)
{
    int cap = x->cap ? x->cap * 2 : 64;
    while (cap < 2 * (st->n_stages + 1)) cap *= 2;
    int *slots = smelt_arena_alloc(&st->arena, sizeof *slots * (size_t)cap);
    if (!slots) return false;
    memset(slots, 0, sizeof *slots * (size_t)cap);
    for (int k = 0; k < x->cap; k++)
        if (x->slots[k]) slot_put(slots, cap, st, x->slots[k] - 1);
    x->slots = slots;
    x->cap = cap;
    return true;
}

bool sch_index_add_name(sch_state *st, int i)
{
    struct sch_stage_index *x = index_of(st);
    if (!x) return false;
    if (sch_index_find(st, st->stages[i].buf->name) >= 0) return true;
    if (2 * (x->used + 1) > x->cap && !grow_slots(st, x)) return false;
    slot_put(x->slots, x->cap, st, i);
    x->used++;
    return true;
}

int sch_index_find(const sch_state *st, const char *name)
{
    const struct sch_stage_index *x = st->index;
    if (!x || !x->cap) return -1;
    uint64_t h = name_hash(name);
    for (int k = (int)(h & (uint64_t)(x->cap - 1)); x->slots[k]; k = (k + 1) & (x->cap - 1))
        if (strcmp(st->stages[x->slots[k] - 1].buf->name, name) == 0) return x->slots[k] - 1;
    return -1;
}

/* ---- readers ---------------------------------------------------------- */

static bool list_add_sorted(smelt_arena *a, stage_list *l, int v)
{
    int pos = l->n;
    while (pos > 0 && l->items[pos - 1] > v) pos--;
    if (pos > 0 && l->items[pos - 1] == v) return true;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        int *items = smelt_arena_alloc(a, sizeof *items * (size_t)cap);
        if (!items) return false;
        if (l->n) memcpy(items, l->items, sizeof *items * (size_t)l->n);
        l->items = items;
        l->cap = cap;
    }
    memmove(l->items + pos + 1, l->items + pos, sizeof *l->items * (size_t)(l->n - pos));
    l->items[pos] = v;
    l->n++;
    return true;
}

/* The stage storing buf, or -1. */
static int producer_of(const sch_state *st, const ir_buffer *buf)
{
    int p = sch_index_find(st, buf->name);
    return p >= 0 && st->stages[p].buf == buf ? p : -1;
}

typedef struct add_reads {
    sch_state *st;
    int reader;
    bool ok;
} add_reads;

static void add_read(add_reads *a, const ir_buffer *buf)
{
    int p = producer_of(a->st, buf);
    if (p >= 0 && p != a->reader && a->ok)
        a->ok = list_add_sorted(&a->st->arena, &a->st->index->readers[p], a->reader);
}

static void add_loads(void *ctx, const ir_expr *e)
{
    if (e->kind == IR_LOAD) add_read(ctx, e->load.buf);
    tir_expr_visit_children(e, add_loads, ctx);
}

/* `reader` reads everything stage `of` reads. */
static bool add_reads_of(sch_state *st, const sch_stage *of, int reader)
{
    add_reads a = {st, reader, true};
    if (of->n_reads >= 0)
        for (int i = 0; i < of->n_reads; i++) add_read(&a, of->reads[i]);
    else if (of->body)
        add_loads(&a, of->body);
    return a.ok;
}

static bool build_readers(sch_state *st, struct sch_stage_index *x)
{
    x->readers = smelt_arena_alloc(&st->arena, sizeof *x->readers * (size_t)(st->n_stages + 1));
    if (!x->readers) return false;
    memset(x->readers, 0, sizeof *x->readers * (size_t)(st->n_stages + 1));
    x->n_readers = st->n_stages;
    for (int c = 0; c < st->n_stages; c++)
        if (!st->stages[c].is_placeholder && !add_reads_of(st, &st->stages[c], c)) {
            x->readers = NULL;
            return false;
        }
    return true;
}

bool sch_index_readers(sch_state *st, int si, const int **items, int *n)
{
    *items = NULL;
    *n = 0;
    struct sch_stage_index *x = index_of(st);
    if (!x) return false;
    if ((!x->readers || x->n_readers != st->n_stages) && !build_readers(st, x)) return false;
    *items = x->readers[si].items;
    *n = x->readers[si].n;
    return true;
}

bool sch_index_note_inline(sch_state *st, int si, int c)
{
    struct sch_stage_index *x = st->index;
    if (!x || !x->readers || x->n_readers != st->n_stages) return true; /* built on demand */
    return add_reads_of(st, &st->stages[si], c);
}

void sch_index_readers_stale(sch_state *st)
{
    if (st->index) st->index->readers = NULL;
}
