/* Which stages read each tensor of a te graph, built once.
 *
 * Schedule rules ask "who reads t?" for every stage (inline or not, the
 * sole consumer, an epilogue chain); a scan of the whole graph per question
 * made scheduling quadratic in the group's size (a fused chain of thousands
 * of elementwise ops).  The index answers in O(readers). */
#ifndef SMELT_TE_READERS_H
#define SMELT_TE_READERS_H

#include "te/te.h"

typedef struct te_readers {
    int n;        /* tensors indexed */
    int *start;   /* n + 1 offsets into reader */
    int *reader;  /* compute tensors' indices, ascending per tensor */
    const ir_buffer **bufs; /* sorted by address, with ... */
    int *buf_tensor;        /* ... the tensor index of each */
} te_readers;

/* Indexes g's current tensors; te_readers_free releases it (also after a
 * failure, on a zeroed struct). */
smelt_status te_readers_build(smelt_ctx *ctx, const te_graph *g, te_readers *r);
void te_readers_free(te_readers *r);

/* The compute stages reading tensor index t (each once), and how many. */
static inline int te_readers_count(const te_readers *r, int t) { return r->start[t + 1] - r->start[t]; }
static inline const int *te_readers_of(const te_readers *r, int t) { return r->reader + r->start[t]; }

/* The tensor whose buffer is buf, or NULL (te_tensor_of in O(log n)). */
const te_tensor *te_readers_tensor_of(const te_readers *r, const te_graph *g, const ir_buffer *buf);

#endif
