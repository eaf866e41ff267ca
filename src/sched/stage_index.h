/* Lookups over a schedule state that would otherwise scan every stage.
 *
 * Replaying a schedule asks for a stage by name at every step and, on
 * compute_inline and compute_at, for the stages reading it.  Scanning all
 * stages (large structs) each time made a fused chain of n elementwise ops
 * cost O(n^2) memory traffic: 8000 chained ops took seconds in replay alone.
 * Both indexes live in the state's arena. */
#ifndef SMELT_SCHED_STAGE_INDEX_H
#define SMELT_SCHED_STAGE_INDEX_H

#include "sched/sched.h"

/* Makes stage i findable by name (a name already indexed keeps its first
 * stage, as the scan did).  false: out of memory. */
bool sch_index_add_name(sch_state *st, int i);

/* The stage named `name`, or -1. */
int sch_index_find(const sch_state *st, const char *name);

/* The stages whose bodies read stage si, ascending, in *items and *n (the
 * list may hold stages that stopped reading it: callers confirm with
 * sch_stage_reads).  false: out of memory. */
bool sch_index_readers(sch_state *st, int si, const int **items, int *n);

/* After inlining stage si into consumer c: c now reads what si read. */
bool sch_index_note_inline(sch_state *st, int si, int c);

/* Bodies changed in ways the index does not follow (cache_write, rfactor):
 * rebuilt on the next sch_index_readers. */
void sch_index_readers_stale(sch_state *st);

#endif
