/* Interval analysis over integer tir expressions and a small prover.
 *
 * A tir_scope is a stack of facts "var lies in [lo, hi]" pushed while walking
 * a statement (For loops with bounded min/extent, Lets with bounded values,
 * If conditions).  Scopes chain to a read-only parent so a pass can extend
 * the caller's ranges without copying them.  Everything here is
 * conservative: an unknown bound is reported as unbounded, never guessed.
 */
#ifndef SMELT_TIR_BOUNDS_H
#define SMELT_TIR_BOUNDS_H

#include "tir/ir.h"

/* Inclusive integer interval; lo_inf / hi_inf mean unbounded on that side
 * (lo / hi are then meaningless). */
typedef struct tir_interval {
    int64_t lo, hi;
    bool lo_inf, hi_inf;
} tir_interval;

tir_interval tir_interval_everything(void);
tir_interval tir_interval_range(int64_t lo, int64_t hi);
tir_interval tir_interval_point(int64_t v);
bool tir_interval_is_point(tir_interval iv, int64_t *v);
bool tir_interval_is_bounded(tir_interval iv); /* both sides finite */
tir_interval tir_interval_intersect(tir_interval a, tir_interval b);
tir_interval tir_interval_union(tir_interval a, tir_interval b);

typedef struct tir_scope_entry {
    const ir_var *var;
    tir_interval iv;
} tir_scope_entry;

/* Facts held without the heap: loop nests are shallower than this, so a
 * pass does not lose facts (and change the code) when memory is short. */
#define TIR_SCOPE_INLINE_FACTS 32

/* Not to be copied by value once initialised: items may point into it. */
typedef struct tir_scope {
    tir_scope_entry *items; /* small[] or heap (smelt allocator); innermost fact last */
    tir_scope_entry small[TIR_SCOPE_INLINE_FACTS];
    int len, cap;
    const struct tir_scope *parent; /* consulted after items; may be NULL */
} tir_scope;

void tir_scope_init(tir_scope *s, const tir_scope *parent);
void tir_scope_fini(tir_scope *s);
/* Push a fact; returns false (and records nothing) when out of memory, which
 * only makes later analysis less precise. */
bool tir_scope_push(tir_scope *s, const ir_var *v, tir_interval iv);
bool tir_scope_push_range(tir_scope *s, const ir_var *v, int64_t lo, int64_t hi);
/* Push the range of a For loop's variable, [min, min + extent - 1] as far as
 * the bounds of min and extent allow (nothing when unbounded). */
bool tir_scope_push_for(tir_scope *s, const ir_stmt *for_loop);
static inline int tir_scope_mark(const tir_scope *s) { return s->len; }
static inline void tir_scope_pop_to(tir_scope *s, int mark) { s->len = mark; }
/* The innermost fact about v; false when there is none. */
bool tir_scope_lookup(const tir_scope *s, const ir_var *v, tir_interval *out);

/* Conservative range of an integer (or BOOL) expression; floats, unknown
 * variables and loads of non-narrow types are unbounded.  scope may be NULL. */
tir_interval tir_bounds(const ir_expr *e, const tir_scope *scope);

typedef enum tir_truth {
    TIR_UNKNOWN = -1,
    TIR_FALSE = 0,
    TIR_TRUE = 1,
} tir_truth;

/* Decide a boolean expression (comparisons of integers, &&, ||, !, constants)
 * for every value of the variables allowed by scope.  scope may be NULL. */
tir_truth tir_prove(const ir_expr *cond, const tir_scope *scope);
/* Decide "a <k> b" (k a comparison kind) without building the node. */
tir_truth tir_prove_compare(ir_kind k, const ir_expr *a, const ir_expr *b, const tir_scope *scope);

#endif
