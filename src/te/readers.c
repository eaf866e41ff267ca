/* The readers index of a te graph (see readers.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "te/readers.h"
#include "tir/mutate.h"

typedef struct buf_entry {
    const ir_buffer *buf;
    int tensor;
} buf_entry;

static int cmp_buf(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const buf_entry *)a)->buf, y = (uintptr_t)((const buf_entry *)b)->buf;
    return (x > y) - (x < y);
}

static int find_tensor(const te_readers *r, const ir_buffer *buf)
{
    int lo = 0, hi = r->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (r->bufs[mid] == buf) return r->buf_tensor[mid];
        if ((uintptr_t)r->bufs[mid] < (uintptr_t)buf) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* One walk over a body: each producer counted (or recorded) once per reader,
 * `seen` holding the reader's index for producers already noted. */
typedef struct body_walk {
    te_readers *r;
    int reader;
    int *seen;
    bool fill; /* false: count into start[p + 1]; true: write at cursor[p] */
    int *cursor;
} body_walk;

static void note_load(void *ctx, const ir_expr *e)
{
    body_walk *w = ctx;
    if (e->kind == IR_LOAD) {
        int p = find_tensor(w->r, e->load.buf);
        if (p >= 0 && p != w->reader && w->seen[p] != w->reader) {
            w->seen[p] = w->reader;
            if (w->fill) w->r->reader[w->cursor[p]++] = w->reader;
            else w->r->start[p + 1]++;
        }
    }
    tir_expr_visit_children(e, note_load, ctx);
}

static void walk_bodies(const te_graph *g, body_walk *w)
{
    for (int i = 0; i < w->r->n; i++) w->seen[i] = -1;
    for (int i = 0; i < w->r->n; i++) {
        const te_tensor *c = g->tensors.items[i];
        if (c->kind != TE_COMPUTE || !c->body) continue;
        w->reader = i;
        note_load(w, c->body);
    }
}

static bool index_buffers(const te_graph *g, te_readers *r)
{
    buf_entry *e = smelt_alloc(sizeof *e * (size_t)(r->n ? r->n : 1));
    if (!e) return false;
    for (int i = 0; i < r->n; i++) e[i] = (buf_entry){((const te_tensor *)g->tensors.items[i])->buf, i};
    qsort(e, (size_t)r->n, sizeof *e, cmp_buf);
    for (int i = 0; i < r->n; i++) {
        r->bufs[i] = e[i].buf;
        r->buf_tensor[i] = e[i].tensor;
    }
    smelt_free(e);
    return true;
}

smelt_status te_readers_build(smelt_ctx *ctx, const te_graph *g, te_readers *r)
{
    memset(r, 0, sizeof *r);
    r->n = g->tensors.len;
    size_t n = (size_t)r->n + 1;
    r->start = smelt_calloc(n, sizeof *r->start);
    r->bufs = smelt_calloc(n, sizeof *r->bufs);
    r->buf_tensor = smelt_calloc(n, sizeof *r->buf_tensor);
    int *seen = smelt_calloc(n, sizeof *seen), *cursor = smelt_calloc(n, sizeof *cursor);
    smelt_status st = SMELT_OK;
    if (!r->start || !r->bufs || !r->buf_tensor || !seen || !cursor || !index_buffers(g, r)) {
        st = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory indexing the readers of %d stages", r->n);
        goto done;
    }
    body_walk w = {.r = r, .seen = seen, .cursor = cursor};
    walk_bodies(g, &w); /* counts */
    for (int i = 0; i < r->n; i++) r->start[i + 1] += r->start[i];
    r->reader = smelt_alloc(sizeof *r->reader * (size_t)(r->start[r->n] ? r->start[r->n] : 1));
    if (!r->reader) {
        st = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory indexing the readers of %d stages", r->n);
        goto done;
    }
    memcpy(cursor, r->start, sizeof *cursor * (size_t)r->n);
    w.fill = true;
    walk_bodies(g, &w); /* readers in ascending order: stages are walked in order */
done:
    smelt_free(seen);
    smelt_free(cursor);
    return st;
}

void te_readers_free(te_readers *r)
{
    smelt_free(r->start);
    smelt_free(r->reader);
    smelt_free(r->bufs);
    smelt_free(r->buf_tensor);
    memset(r, 0, sizeof *r);
}

const te_tensor *te_readers_tensor_of(const te_readers *r, const te_graph *g, const ir_buffer *buf)
{
    int i = find_tensor(r, buf);
    return i < 0 ? NULL : g->tensors.items[i];
}
