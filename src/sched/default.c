/* Default schedules: correct for any shape, reasonable without tuning.
 *
 * Intermediate elementwise stages are inlined into their consumers.
 * Convolutions and matrix products (the anchors) are register-tiled with
 * their elementwise epilogue computed on the tile (see the sections below).
 * Every other stage keeps its data axes outermost (fused and run in
 * parallel), then its reduction axes, then the innermost data axis split by
 * the vector width and vectorised.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/gpu_tile.h"
#include "sched/sched.h"
#include "te/readers.h"
#include "tir/mutate.h"

/* Work (output elements x reduction length) below this is not worth waking
 * threads: a dispatch costs about a microsecond on a quiet machine and much
 * more on a busy one. */
#define DEFAULT_PARALLEL_MIN_WORK (1 << 16)

/* Rows that keep two threads busy when a stage runs in parallel by rows. */
#define ROWS_PARALLEL_MIN 8

/* Elements an iteration of an elementwise stage's parallel loop covers at
 * least, where the shape allows: with one vector per iteration (the rows x
 * vectors of a [1, 128, 768] Cast fused into 12,288 iterations of 8 floats)
 * the loop spent more on recomputing row and column from the fused index
 * than on the values. */
#define PARALLEL_MIN_CHUNK 1024

/* Register tiles the knobs may ask for, in vector accumulators: beyond the
 * register file (32 on AVX-512) they spill, and the unrolled code takes the
 * C compiler seconds per candidate. */
#define SCH_KNOB_ACC_MAX 32

/* A knob's fixed value, or 0 for the rule's own choice. */
static int64_t knob(const sch_knobs *kn, sch_knob k) { return kn ? kn->v[k] : 0; }

static smelt_status bad_knob(smelt_ctx *ctx, const char *stage, sch_knob k, int64_t v)
{
    return smelt_errf(ctx, SMELT_ERR_ARG, "stage '%s': knob %s = %lld does not apply", stage,
                      sch_knob_name(k), (long long)v);
}

/* Output elements times the extent of the reduction, if any. */
static int64_t stage_work(const te_tensor *t)
{
    int64_t w = 1;
    for (int i = 0; i < t->n_axes; i++) w *= t->axes[i].extent;
    if (t->body && t->body->kind == IR_REDUCE)
        for (int i = 0; i < t->body->reduce.n_axes; i++) w *= t->body->reduce.axes[i].extent;
    return w;
}

static bool stage_is_output(const te_graph *g, const te_tensor *t)
{
    for (int i = 0; i < g->outputs.len; i++)
        if (g->outputs.items[i] == t) return true;
    return false;
}

static int reduce_axes(const te_tensor *t, const char **names)
{
    if (!t->body || t->body->kind != IR_REDUCE) return 0;
    for (int i = 0; i < t->body->reduce.n_axes; i++) names[i] = t->body->reduce.axes[i].var->name;
    return t->body->reduce.n_axes;
}

typedef struct inline_plan inline_plan;
static smelt_status schedule_generic(smelt_ctx *ctx, const te_graph *g, const te_tensor *t,
                                     int vector_width, const sch_knobs *kn, sch_schedule *s,
                                     inline_plan *plan);

/* The vectorised innermost loop: split by `vecs` vectors, those unrolled. */
static smelt_status vector_steps(smelt_ctx *ctx, sch_schedule *s, const char *name,
                                 const char *last, int64_t last_ext, int vw, int64_t vecs)
{
    char outer[256], inner[256], io[270], ii[270];
    snprintf(outer, sizeof outer, "%s.o", last);
    snprintf(inner, sizeof inner, "%s.i", last);
    if (last_ext <= vw) return sch_annotate(ctx, s, SCH_VECTORIZE, name, last);
    if (vecs <= 1 || last_ext < vecs * vw) {
        SMELT_TRY(sch_split(ctx, s, name, last, vw));
        return sch_annotate(ctx, s, SCH_VECTORIZE, name, inner);
    }
    snprintf(io, sizeof io, "%s.o", inner);
    snprintf(ii, sizeof ii, "%s.i", inner);
    SMELT_TRY(sch_split(ctx, s, name, last, vecs * vw));
    SMELT_TRY(sch_split(ctx, s, name, inner, vw));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, name, io));
    return sch_annotate(ctx, s, SCH_VECTORIZE, name, ii);
}

static smelt_status parallelize_leading(smelt_ctx *ctx, sch_schedule *s, const char *stage,
                                        const char *const *order, int last);

/* Knob order 2 on a reduction that is an output: accumulate a vector tile
 * in a local stage (cache_write), computed at the output's vector loop, so
 * the partial results stay in registers across the reduction and the output
 * is written once (the rule's order accumulates in the output itself). */
static smelt_status schedule_reduce_local(smelt_ctx *ctx, const te_tensor *t, int vw,
                                          const sch_knobs *kn, sch_schedule *s)
{
    const char *name = t->buf->name, *rnames[SMELT_MAX_RANK];
    int rank = t->n_axes, nr = reduce_axes(t, rnames);
    int64_t last_ext = t->axes[rank - 1].extent, par = knob(kn, SCH_KNOB_PARALLEL);
    int64_t vecs = knob(kn, SCH_KNOB_UNROLL) > 1 ? knob(kn, SCH_KNOB_UNROLL) - 1 : 1;
    if (vw <= 1 || last_ext < vw || nr == 0 || rank < 2 || par > rank)
        return bad_knob(ctx, name, SCH_KNOB_ORDER, 2);
    if (last_ext < vecs * vw) vecs = 1;
    char local[256], last[128], lo[140], li[140], lio[150], lii[150];
    snprintf(local, sizeof local, "%s.local", name);
    snprintf(last, sizeof last, "%s", t->axes[rank - 1].var->name);
    snprintf(lo, sizeof lo, "%s.o", last);
    snprintf(li, sizeof li, "%s.i", last);
    snprintf(lio, sizeof lio, "%s.o", li);
    snprintf(lii, sizeof lii, "%s.i", li);
    SMELT_TRY(sch_cache_write(ctx, s, name));
    /* the output: leading axes, last.o, then the tile's vectors */
    SMELT_TRY(sch_split(ctx, s, name, last, vecs * vw));
    SMELT_TRY(sch_compute_at(ctx, s, local, name, lo));
    if (vecs > 1) {
        SMELT_TRY(sch_split(ctx, s, name, li, vw));
        SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, name, lio));
    }
    SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, name, vecs > 1 ? lii : li));
    /* the tile: reductions outside, its vectors unrolled, lanes vectorised */
    const char *order[SCH_MAX_STEP_ITERS];
    int n = 0;
    for (int i = 0; i < rank - 1; i++) order[n++] = t->axes[i].var->name;
    for (int i = 0; i < nr && n < SCH_MAX_STEP_ITERS - 1; i++) order[n++] = rnames[i];
    order[n++] = last;
    SMELT_TRY(sch_reorder(ctx, s, local, n, order));
    if (vecs > 1) {
        SMELT_TRY(sch_split(ctx, s, local, last, vw));
        SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, local, lo));
        SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, local, li));
    } else {
        SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, local, last));
    }
    if (par == 1 || (par == 0 && stage_work(t) < DEFAULT_PARALLEL_MIN_WORK)) return SMELT_OK;
    int lead = par > 2 ? (int)par - 2 : rank - 1;
    const char *names[SMELT_MAX_RANK];
    for (int i = 0; i < lead; i++) names[i] = t->axes[i].var->name;
    return parallelize_leading(ctx, s, name, names, lead - 1);
}

/* ---- reductions along the contiguous axis ----------------------------------
 * A reduction whose last reduce axis is the innermost index of what it reads
 * (softmax's max and sum, LayerNorm's moments, ReduceX over the last axis)
 * cannot vectorise over its data axes.  rfactor keeps vw * vecs partial
 * results apart in a local stage computed at the output element (vector
 * accumulators over contiguous loads), which the output then combines. */

typedef struct contig_scan {
    const ir_var *r;
    bool uses, ok;
} contig_scan;

#define RFACTOR_VECS_MAX 4 /* vector accumulators per row (FMA latency 4 / add 3) */

/* An index that is r, or r plus something without r. */
static bool unit_stride_in(const ir_expr *e, const ir_var *r)
{
    if (e->kind == IR_VAR) return e->var == r;
    if (e->kind != IR_ADD) return false;
    if (!ir_expr_uses_var(e->bin.a, r)) return unit_stride_in(e->bin.b, r);
    return !ir_expr_uses_var(e->bin.b, r) && unit_stride_in(e->bin.a, r);
}

static void scan_contiguous(void *ctx, const ir_expr *e)
{
    contig_scan *c = ctx;
    if (e->kind == IR_LOAD && e->load.n > 0) {
        for (int d = 0; d + 1 < e->load.n; d++)
            if (ir_expr_uses_var(e->load.idx[d], c->r)) c->ok = false;
        const ir_expr *last = e->load.idx[e->load.n - 1];
        if (ir_expr_uses_var(last, c->r)) {
            c->uses = true;
            c->ok &= unit_stride_in(last, c->r);
        }
    }
    tir_expr_visit_children(e, scan_contiguous, c);
}

/* Whether t is a float32 reduction the rfactor rule applies to. */
static bool reduces_contiguous(const te_tensor *t, int vw)
{
    if (vw <= 1 || !t->body || t->body->kind != IR_REDUCE || t->buf->dtype != SMELT_DT_FLOAT32)
        return false;
    const ir_axis *r = &t->body->reduce.axes[t->body->reduce.n_axes - 1];
    if (r->extent < 2 * vw || t->n_axes + 1 > SMELT_MAX_RANK) return false;
    contig_scan c = {r->var, false, true};
    scan_contiguous(&c, t->body->reduce.src);
    return c.uses && c.ok;
}

/* The partials halved level by level (t factored again: rf2[j] = rf[j] op
 * rf[j + w/2], ...) while their count is even and above 2: vector operations
 * of w/2 lanes instead of a serial chain of w - 1 scalar ones.  Each level is
 * computed at the next one's row; *last is the level t itself reads. */
static smelt_status combine_tree(smelt_ctx *ctx, const te_tensor *t, int vw, int64_t width,
                                 const char *axis, const char *first, sch_schedule *s,
                                 char *last, size_t cap)
{
    const char *name = t->buf->name, *row = t->axes[t->n_axes - 1].var->name;
    char cur[256], prev[256];
    snprintf(cur, sizeof cur, "%.200s", axis);
    snprintf(prev, sizeof prev, "%.200s", first);
    for (int level = 2; width % 2 == 0 && width > 2; level++, width /= 2) {
        char next[256], o[220], in[220];
        snprintf(next, sizeof next, "%.200s.rf%d", name, level);
        snprintf(o, sizeof o, "%.200s.o", cur);
        snprintf(in, sizeof in, "%.200s.i", cur);
        SMELT_TRY(sch_rfactor(ctx, s, name, cur, width / 2));
        const char *order[SCH_MAX_STEP_ITERS];
        int n = 0;
        for (int i = 0; i < t->n_axes && n < SCH_MAX_STEP_ITERS - 2; i++) order[n++] = t->axes[i].var->name;
        order[n++] = o;
        order[n++] = in;
        SMELT_TRY(sch_reorder(ctx, s, next, n, order));
        if (width / 2 >= 4) SMELT_TRY(vector_steps(ctx, s, next, in, width / 2, vw, 1));
        SMELT_TRY(sch_compute_at(ctx, s, prev, next, row));
        snprintf(prev, sizeof prev, "%.200s", next);
        snprintf(cur, sizeof cur, "%.200s", in);
    }
    snprintf(last, cap, "%s", prev);
    return SMELT_OK;
}

static smelt_status schedule_reduce_rfactor(smelt_ctx *ctx, const te_tensor *t, int vw,
                                            const sch_knobs *kn, sch_schedule *s)
{
    const char *name = t->buf->name, *rnames[SMELT_MAX_RANK];
    int rank = t->n_axes, nr = reduce_axes(t, rnames);
    const ir_axis *r = &t->body->reduce.axes[nr - 1];
    /* independent accumulators hide the combine's latency; a row gets
     * one per 8 vectors it holds, so combining the partials stays small */
    int64_t vecs = knob(kn, SCH_KNOB_UNROLL) > 1 ? knob(kn, SCH_KNOB_UNROLL) - 1
                   : r->extent >= 8 * RFACTOR_VECS_MAX * vw ? RFACTOR_VECS_MAX
                                                             : r->extent / (8 * vw);
    if (vecs < 1) vecs = 1;
    while (vecs > 1 && r->extent < 2 * vecs * vw) vecs--;
    char rf[256], ro[140], ri[140];
    snprintf(rf, sizeof rf, "%s.rf", name);
    snprintf(ro, sizeof ro, "%s.o", rnames[nr - 1]);
    snprintf(ri, sizeof ri, "%s.i", rnames[nr - 1]);
    SMELT_TRY(sch_rfactor(ctx, s, name, rnames[nr - 1], vecs * vw));
    /* the partial results: data axes, reductions, then the lanes */
    const char *order[SCH_MAX_STEP_ITERS];
    int n = 0;
    for (int i = 0; i < rank; i++) order[n++] = t->axes[i].var->name;
    for (int i = 0; i < nr - 1 && n < SCH_MAX_STEP_ITERS - 2; i++) order[n++] = rnames[i];
    order[n++] = ro;
    order[n++] = ri;
    SMELT_TRY(sch_reorder(ctx, s, rf, n, order));
    SMELT_TRY(vector_steps(ctx, s, rf, ri, vecs * vw, vw, vecs));
    if (rank == 0) return SMELT_OK; /* one result: the partials stay at root */
    char last_rf[256];
    SMELT_TRY(combine_tree(ctx, t, vw, vecs * vw, ri, rf, s, last_rf, sizeof last_rf));
    /* parallel over the fused data axes (knob k > 2: the first k - 2), the
     * partial results computed per output element */
    int64_t par = knob(kn, SCH_KNOB_PARALLEL);
    if (par < 0 || par > rank + 2) return bad_knob(ctx, name, SCH_KNOB_PARALLEL, par);
    int lead = par > 2 ? (int)par - 2 : rank;
    char fused[512];
    snprintf(fused, sizeof fused, "%s", t->axes[0].var->name);
    for (int i = 1; i < lead; i++) {
        SMELT_TRY(sch_fuse(ctx, s, name, fused, t->axes[i].var->name));
        size_t len = strlen(fused);
        snprintf(fused + len, sizeof fused - len, ".%s", t->axes[i].var->name);
    }
    if (par > 1 || (par == 0 && stage_work(t) >= DEFAULT_PARALLEL_MIN_WORK))
        SMELT_TRY(sch_annotate(ctx, s, SCH_PARALLEL, name, fused));
    return sch_compute_at(ctx, s, last_rf, name, lead == rank ? fused : t->axes[rank - 1].var->name);
}

/* An elementwise stage reading a factored reduction's results (softmax's
 * and LayerNorm's outputs) goes by rows too: parallel over the leading axes,
 * the row's vectors inside, so its indices need no division. */
static bool reads_row_reduction(const te_graph *g, const te_tensor *t, int vw)
{
    if (!t->body || t->body->kind == IR_REDUCE || t->n_axes < 2) return false;
    int64_t rows = 1;
    for (int i = 0; i < t->n_axes - 1; i++) rows *= t->axes[i].extent;
    if (rows < ROWS_PARALLEL_MIN || t->axes[t->n_axes - 1].extent < 2 * vw) return false;
    for (int i = 0; i < g->tensors.len; i++) {
        const te_tensor *r = g->tensors.items[i];
        if (r != t && reduces_contiguous(r, vw) && ir_expr_reads(t->body, r->buf)) return true;
    }
    return false;
}

static smelt_status schedule_rows(smelt_ctx *ctx, const te_tensor *t, int vw, sch_schedule *s)
{
    int rank = t->n_axes;
    const char *name = t->buf->name, *lead[SMELT_MAX_RANK];
    SMELT_TRY(vector_steps(ctx, s, name, t->axes[rank - 1].var->name,
                           t->axes[rank - 1].extent, vw, 1));
    if (stage_work(t) < DEFAULT_PARALLEL_MIN_WORK) return SMELT_OK;
    for (int i = 0; i < rank - 1; i++) lead[i] = t->axes[i].var->name;
    return parallelize_leading(ctx, s, name, lead, rank - 2);
}

static smelt_status fuse_leading(smelt_ctx *ctx, sch_schedule *s, const char *stage,
                                 const char *const *order, int last, char *fused, size_t cap);

static int64_t leading_extent(const te_tensor *t, int n)
{
    int64_t e = 1;
    for (int i = 0; i < n; i++) e *= t->axes[i].extent;
    return e;
}

/* Rows [0, lead) fused, in parallel; split when a row is small so an
 * iteration covers about PARALLEL_MIN_CHUNK elements (and there are still
 * ROWS_PARALLEL_MIN iterations). */
static smelt_status parallel_rows(smelt_ctx *ctx, const te_tensor *t, const char *const *order, int lead,
                                  sch_schedule *s)
{
    char fused[512];
    const char *name = t->buf->name;
    SMELT_TRY(fuse_leading(ctx, s, name, order, lead - 1, fused, sizeof fused));
    int64_t rows = leading_extent(t, lead), per_row = leading_extent(t, t->n_axes) / rows;
    int64_t k = PARALLEL_MIN_CHUNK / per_row;
    if (k > rows / ROWS_PARALLEL_MIN) k = rows / ROWS_PARALLEL_MIN;
    if (k > 1) {
        SMELT_TRY(sch_split(ctx, s, name, fused, k));
        strncat(fused, ".o", sizeof fused - strlen(fused) - 1);
    }
    return sch_annotate(ctx, s, SCH_PARALLEL, name, fused);
}

/* An elementwise stage in parallel: over enough rows (leading axes), as
 * few of them fused as keep ROWS_PARALLEL_MIN iterations, so an iteration
 * covers PARALLEL_MIN_CHUNK elements where it can; with fewer rows, the
 * rows and chunks of the last axis (its vector loop's outer part split so
 * a chunk holds about PARALLEL_MIN_CHUNK elements). */
static smelt_status parallel_elementwise(smelt_ctx *ctx, const te_tensor *t, bool vectorize, int vw,
                                         int64_t vecs, sch_schedule *s)
{
    const char *name = t->buf->name, *order[SMELT_MAX_RANK + 1];
    int rank = t->n_axes;
    int64_t numel = leading_extent(t, rank), last_ext = t->axes[rank - 1].extent;
    for (int i = 0; i < rank; i++) order[i] = t->axes[i].var->name;
    if (rank >= 2 && leading_extent(t, rank - 1) >= ROWS_PARALLEL_MIN) {
        int lead = rank - 1;
        while (lead > 1 && numel / leading_extent(t, lead) < PARALLEL_MIN_CHUNK &&
               leading_extent(t, lead - 1) >= ROWS_PARALLEL_MIN)
            lead--;
        return parallel_rows(ctx, t, order, lead, s);
    }
    /* few rows: the last axis's loop (its vectors' outer part) in chunks */
    char chunk[280];
    /* vector_steps' outer loop steps by vecs vectors, or by one when the
     * axis is shorter; an axis of one vector has none */
    int64_t per = !vectorize ? 1 : vecs > 1 && last_ext >= vecs * vw ? vecs * vw : vw;
    snprintf(chunk, sizeof chunk, "%s%s", order[rank - 1], vectorize ? ".o" : "");
    if (vectorize && last_ext <= vw)
        return rank >= 2 ? parallelize_leading(ctx, s, name, order, rank - 2)
                         : sch_annotate(ctx, s, SCH_PARALLEL, name, order[0]);
    int64_t k = (PARALLEL_MIN_CHUNK + per - 1) / per, iters = (last_ext + per - 1) / per;
    if (k > 1 && iters > k) {
        SMELT_TRY(sch_split(ctx, s, name, chunk, k));
        strncat(chunk, ".o", sizeof chunk - strlen(chunk) - 1);
    }
    order[rank - 1] = chunk;
    return parallelize_leading(ctx, s, name, order, rank - 1);
}

static smelt_status schedule_stage(smelt_ctx *ctx, const te_tensor *t, int vector_width,
                                   const sch_knobs *kn, sch_schedule *s)
{
    int64_t order_knob = knob(kn, SCH_KNOB_ORDER);
    if (order_knob == 2) return schedule_reduce_local(ctx, t, vector_width, kn, s);
    bool rfactor = reduces_contiguous(t, vector_width);
    if (order_knob == 3 && !rfactor) return bad_knob(ctx, t->buf->name, SCH_KNOB_ORDER, 3);
    if (rfactor && order_knob != 1) return schedule_reduce_rfactor(ctx, t, vector_width, kn, s);
    if (order_knob < 0 || order_knob > 2) return bad_knob(ctx, t->buf->name, SCH_KNOB_ORDER, order_knob);
    const char *name = t->buf->name;
    int rank = t->n_axes;
    const char *rnames[SMELT_MAX_RANK];
    int nr = reduce_axes(t, rnames);
    if (rank == 0) return SMELT_OK;
    const char *last = t->axes[rank - 1].var->name;
    int64_t last_ext = t->axes[rank - 1].extent;
    bool vectorize = vector_width > 1 && last_ext >= 4;

    /* order: leading data axes, reduce axes, last data axis */
    if (nr > 0 && vectorize) {
        const char *order[SCH_MAX_STEP_ITERS];
        int n = 0;
        for (int i = 0; i < rank - 1; i++) order[n++] = t->axes[i].var->name;
        for (int i = 0; i < nr && n < SCH_MAX_STEP_ITERS - 1; i++) order[n++] = rnames[i];
        order[n++] = last;
        SMELT_TRY(sch_reorder(ctx, s, name, n, order));
    }
    char outer[256], inner[256];
    snprintf(outer, sizeof outer, "%s.o", last);
    snprintf(inner, sizeof inner, "%s.i", last);
    int64_t vecs = knob(kn, SCH_KNOB_UNROLL) > 1 ? knob(kn, SCH_KNOB_UNROLL) - 1 : 1;
    if (vectorize) SMELT_TRY(vector_steps(ctx, s, name, last, last_ext, vector_width, vecs));
    int64_t par = knob(kn, SCH_KNOB_PARALLEL);
    if (par < 0 || par > rank + 1 || (par > 2 && rank < 3))
        return bad_knob(ctx, name, SCH_KNOB_PARALLEL, par);
    if (par == 1 || (par == 0 && stage_work(t) < DEFAULT_PARALLEL_MIN_WORK)) return SMELT_OK;
    if (par > 2) { /* only the first par - 2 axes: the others stay loops, which
                    * partitioning can peel (padding) and index without divisions */
        const char *lead[SMELT_MAX_RANK];
        for (int i = 0; i < par - 2; i++) lead[i] = t->axes[i].var->name;
        return parallelize_leading(ctx, s, name, lead, (int)par - 3);
    }
    if (nr == 0) return parallel_elementwise(ctx, t, vectorize, vector_width, vecs, s);
    /* parallel over the fused leading data axes (or the vector loop's outer part) */
    char fused[1024];
    if (rank >= 2) {
        snprintf(fused, sizeof fused, "%s", t->axes[0].var->name);
        for (int i = 1; i < rank - 1; i++) {
            SMELT_TRY(sch_fuse(ctx, s, name, fused, t->axes[i].var->name));
            size_t len = strlen(fused);
            snprintf(fused + len, sizeof fused - len, ".%s", t->axes[i].var->name);
        }
        return sch_annotate(ctx, s, SCH_PARALLEL, name, fused);
    }
    return sch_annotate(ctx, s, SCH_PARALLEL, name,
                        vectorize && last_ext > vector_width ? outer : last);
}

/* ---- conv / matmul anchors ------------------------------------------------
 * TVM's x86 pattern: the output is tiled into register blocks (channels or
 * rows x vector lanes); the accumulation runs at the tile loop into a
 * tile-sized local buffer, reduction outside, the block unrolled x
 * vectorised inside, so the accumulators can live in registers and the
 * output is written once.  Blocked convs and matrix products have their
 * own tilings below; a plain conv takes schedule_anchor's. */

#define ANCHOR_CONV_BLOCK 8 /* output channels per register tile */

static bool is_anchor(const te_tensor *t)
{
    return t->kind == TE_COMPUTE && t->body && t->body->kind == IR_REDUCE && t->n_axes >= 2 &&
           (strcmp(t->tag, "conv") == 0 || strcmp(t->tag, "matmul") == 0 ||
            strcmp(t->tag, "matmul_packed") == 0 ||
            (strcmp(t->tag, "conv_nchwc") == 0 && t->n_axes == 5));
}


/* The single compute reading t, or NULL. */
static const te_tensor *sole_consumer(const te_graph *g, const te_tensor *t)
{
    const te_tensor *found = NULL;
    for (int i = 0; i < g->tensors.len; i++) {
        const te_tensor *c = g->tensors.items[i];
        if (c == t || c->kind != TE_COMPUTE || !ir_expr_reads(c->body, t->buf)) continue;
        if (found) return NULL;
        found = c;
    }
    return found;
}


static void iter_name(char *out, size_t cap, const char *base, const char *suffix)
{
    snprintf(out, cap, "%s%s", base, suffix);
}

/* Fuse order[0..last] into one loop, named in fused[cap]. */
static smelt_status fuse_leading(smelt_ctx *ctx, sch_schedule *s, const char *stage,
                                 const char *const *order, int last, char *fused, size_t cap)
{
    snprintf(fused, cap, "%s", order[0]);
    for (int d = 1; d <= last; d++) {
        SMELT_TRY(sch_fuse(ctx, s, stage, fused, order[d]));
        size_t len = strlen(fused);
        snprintf(fused + len, cap - len, ".%s", order[d]);
    }
    return SMELT_OK;
}

/* Fuse order[0..last] and run the result on the thread pool. */
static smelt_status parallelize_leading(smelt_ctx *ctx, sch_schedule *s, const char *stage,
                                        const char *const *order, int last)
{
    char fused[512];
    SMELT_TRY(fuse_leading(ctx, s, stage, order, last, fused, sizeof fused));
    return sch_annotate(ctx, s, SCH_PARALLEL, stage, fused);
}

/* ---- blocked convolution (ConvNCHWc, output [n, co, oh, ow, cb]) ----------
 * TVM's x86 conv2d_NCHWc: ow split by a register block; the accumulation is
 * computed at ow.o over an [ow.i x cb] tile with the reductions (input
 * channel blocks, kernel rows and columns, channels within the block)
 * outside and ow.i unrolled x cb vectorised inside, so each tap loads one
 * weight vector and broadcasts one input value per accumulator register.
 * Parallel over n.co; oh and ow stay separate loops so partitioning peels
 * the padding edges and the ow tail. */

#define NCHWC_REG_MAX 14 /* accumulators per tile of 32 vector registers */
#define NCHWC_REG_MIN 8
/* 16 ymm registers (AVX2, 8 lanes): 14 accumulators left no room for the
 * weight vector, the broadcast and the compiler's temporaries; 8 measured
 * 1.7x faster on a 64-channel 3x3 conv at 56x56 (Zen 3) */
#define NCHWC_REG_MAX_16REGS 8
#define NCHWC_REG_MIN_16REGS 4

/* Register block along ow: ow itself when small, else a divisor in
 * [MIN, MAX], else the most even split (the tail is peeled). */
static int64_t nchwc_ow_block(int64_t ow, const smelt_hw *hw)
{
    int64_t hi = hw->vector_regs >= 32 ? NCHWC_REG_MAX : NCHWC_REG_MAX_16REGS;
    int64_t lo = hw->vector_regs >= 32 ? NCHWC_REG_MIN : NCHWC_REG_MIN_16REGS;
    if (ow <= hi) return ow;
    for (int64_t r = hi; r >= lo; r--)
        if (ow % r == 0) return r;
    int64_t tiles = (ow + hi - 1) / hi;
    return (ow + tiles - 1) / tiles;
}

/* 1x1 convs on blocked inputs, 16 registers: 5 columns x 2 channel blocks
 * share each broadcast between two weight vectors (7 loads per 10 FMAs
 * instead of 8 per 7); measured 8-20% faster than 7 x 1 on Zen 3, while
 * 4 x 2 and 6 x 2 ran slower (GCC spilled or reloaded the weights). */
#define NCHWC_1X1_COLS_16REGS 5
#define NCHWC_1X1_CO_BLOCKS_16REGS 2

/* Wide-kernel convs on plain (unblocked) inputs, the 7x7 stems, 16
 * registers: 2 columns x 4 channel blocks load 4 weight vectors and
 * broadcast 2 inputs per 8 FMAs, where 8 x 1 broadcasts 8.  ResNet-50's
 * stem on Zen 3: 1.5x over 8 x 1 on one thread (3 x 4: 1.2-1.4x, spills),
 * 2.90 -> 2.17 ms on two (interleaved medians); a 3x3 stride-2 stem with
 * 32 outputs ran 1.9x slower (one channel tile: no parallel loop) and keeps
 * the general rule. */
#define NCHWC_PLAIN_COLS_16REGS 2
#define NCHWC_PLAIN_CO_BLOCKS_16REGS 4
#define NCHWC_PLAIN_MIN_KW 5

static bool nchwc_blocked_1x1(const te_tensor *anchor)
{
    const ir_expr *r = anchor->body;
    return r->reduce.n_axes == 4 && r->reduce.axes[1].extent == 1 && r->reduce.axes[2].extent == 1;
}

/* Output-channel blocks per tile: narrow planes (ow blocks of 7 or less)
 * fill the accumulators with 2 or 4 channel blocks on 32-register targets
 * (measured: 2 x 14 accumulators spill and lose). */
static int64_t nchwc_co_blocks(int64_t co, int64_t r, const smelt_hw *hw, int64_t lanes)
{
    if (hw->vector_regs < 32 || lanes != hw->lanes) return 1;
    for (int64_t k = 4; k > 1; k /= 2)
        if (co % k == 0 && k * r <= NCHWC_REG_MAX) return k;
    return 1;
}

/* The reduction order of a blocked conv (the ORDER knob's values).  With a
 * blocked input (reductions rc, ry, rx, ri) LANES_OUTER puts the kernel
 * width innermost, unrolled: neighbouring taps then share input values
 * (ow.i + rx), so an ow block of R columns broadcasts R + kw - 1 values per
 * lane instead of R * kw.  Measured on Zen 3 (AVX2): 3x3 convs on blocked
 * inputs 75-85 -> 120-150 GFLOP/s of a 200 peak, at 56x56 to 7x7. */
typedef enum nchwc_order {
    NCHWC_CHANNELS_OUTER = 1, /* rc, ry, rx[, ri] */
    NCHWC_TAPS_OUTER = 2,     /* ry, rx, rc[, ri] */
    NCHWC_LANES_OUTER = 3,    /* rc, ry, ri, rx: blocked inputs only */
} nchwc_order;

/* The tile of a blocked conv: ow.i (and co.i when co_blocks > 1) x cb lanes. */
typedef struct nchwc_tile {
    int64_t ow_block, co_blocks, lanes;
    int64_t oh_block;      /* output rows per tile (1: the rule's one-row tiles) */
    bool vec, split_lanes; /* lanes vectorised; wider than a vector: split */
    nchwc_order order;     /* the reduction loops' order */
    bool unroll_kw;        /* the kernel-width loop unrolled */
    bool unroll_lanes;     /* a blocked 1x1 conv's lane reduction (ri) unrolled */
    int64_t k_batch;       /* input-channel blocks per reduction batch (0: no batches) */
    int parallel;          /* 1 none, 2 n.co, 3 n.co.oh fused, 4 oh alone,
                            * NCHWC_PAR_PIXELS_OUTER n.oh */
} nchwc_tile;

/* The UNROLL knob: 1 none, 2 the kernel width, 3 the lane reduction of a
 * blocked 1x1 conv, so its 8 steps share one loop (no 8-trip inner loop,
 * whose exit made GCC rotate the accumulators through moves) and the
 * broadcasts take constant offsets, as MLAS's pointwise kernel does.
 * ResNet-50 on Zen 3, 1 thread, interleaved: its 1x1 tasks' minimum times
 * 4-25% lower on 7 of 10 (weighted sum of all tasks 107.9 -> 104.7 ms), the
 * model's median 135 -> 120 ms (min 117 -> 113); but its generated C grew
 * from 3.2 to 7.4 MB (gcc's time 1.5x), so it is a knob, not the default. */
#define NCHWC_UNROLL_LANES 3

/* The PARALLEL knob's value for the nest n, oh, ow.o, co.o (n.oh parallel):
 * one column tile's input stays in L1 while every channel tile's weights
 * pass over it, where the channels-outer nest streams the whole input once
 * per channel tile (1x1 convs with many input channels). */
#define NCHWC_PAR_PIXELS_OUTER 5
#define NCHWC_PIXELS_OUTER_MIN_ROWS 14 /* 7 rows split 4 + 3 over two threads */

/* The TILE_K knob's largest batch of input-channel blocks: a batch
 * accumulates whole output rows in a local buffer (batch by batch, MLAS's
 * pointwise order), so the rows' inputs and the batch's weights stay in L1
 * where one pass over all channels per column tile streams them from L2. */
#define NCHWC_K_BATCH_MAX 64

/* out: n, co(.o), oh, ow.o, [co.i], ow.i, cb; acc computed at ow.o. */
static smelt_status nchwc_out(smelt_ctx *ctx, const char *acc, const te_tensor *out,
                              const te_tensor *anchor, const nchwc_tile *t, int vw,
                              sch_schedule *s)
{
    const char *on = out->buf->name, *n = out->axes[0].var->name, *co = out->axes[1].var->name;
    const char *oh = out->axes[2].var->name, *ow = out->axes[3].var->name;
    const char *cb = out->axes[4].var->name;
    char coo[80], coi[80], owo[80], owi[80], cbi[80], oho[80], ohi[80];
    iter_name(coo, sizeof coo, co, ".o");
    iter_name(coi, sizeof coi, co, ".i");
    iter_name(owo, sizeof owo, ow, ".o");
    iter_name(owi, sizeof owi, ow, ".i");
    iter_name(cbi, sizeof cbi, cb, ".i");
    iter_name(oho, sizeof oho, oh, ".o");
    iter_name(ohi, sizeof ohi, oh, ".i");
    SMELT_TRY(sch_split(ctx, s, on, ow, t->ow_block));
    if (t->split_lanes) SMELT_TRY(sch_split(ctx, s, on, cb, vw));
    if (t->co_blocks > 1) SMELT_TRY(sch_split(ctx, s, on, co, t->co_blocks));
    if (t->oh_block > 1) {
        SMELT_TRY(sch_split(ctx, s, on, oh, t->oh_block));
        oh = oho;
    }
    const char *co_tile = t->co_blocks > 1 ? coo : co; /* the loop over channel tiles */
    bool pixels_outer = t->parallel == NCHWC_PAR_PIXELS_OUTER;
    /* batches: the accumulation covers whole rows, so it goes outside ow.o */
    bool co_in_row = pixels_outer && !t->k_batch;
    if (t->co_blocks > 1 || t->oh_block > 1 || pixels_outer) {
        const char *order[8];
        int k = 0;
        order[k++] = n;
        if (!pixels_outer) order[k++] = co_tile;
        order[k++] = oh;
        if (pixels_outer && !co_in_row) order[k++] = co_tile;
        order[k++] = owo;
        if (co_in_row) order[k++] = co_tile;
        if (t->oh_block > 1) order[k++] = ohi;
        if (t->co_blocks > 1) order[k++] = coi;
        order[k++] = owi;
        order[k++] = cb;
        SMELT_TRY(sch_reorder(ctx, s, on, k, order));
    }
    const char *attach = pixels_outer ? co_tile : t->k_batch ? oh : owo;
    SMELT_TRY(sch_compute_at(ctx, s, acc, on, attach));
    if (t->vec) SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, on, t->split_lanes ? cbi : cb));
    if (t->parallel == 1) return SMELT_OK;
    if (t->parallel == 4) return sch_annotate(ctx, s, SCH_PARALLEL, on, oh);
    if (pixels_outer) {
        const char *lead[2] = {n, oh};
        return parallelize_leading(ctx, s, on, lead, 1);
    }
    /* by default not oh: fused into the parallel index, its padding edges
     * cannot be peeled, and the guarded loads cost 3x (measured) */
    const char *lead[3] = {n, co_tile, oh};
    return parallelize_leading(ctx, s, on, lead, t->parallel == 3 ? 2 : 1);
}

/* acc over its tile: the unit outer axes, the reductions, then ow [, co]
 * unrolled and the lanes vectorised.  Columns outside the channel blocks:
 * each broadcast feeds its channel blocks' FMAs and dies, where channels
 * outside kept every column's broadcast live across them (a 5 x 2 tile
 * then needed 17 of 16 ymm registers: GCC rotated accumulators through
 * moves; 1x1 conv 1024 -> 256 at 14x14 on one Zen 3 core, minimum of 5
 * interleaved rounds 1.515 -> 1.383 ms). */
static smelt_status nchwc_acc(smelt_ctx *ctx, const char *acc, const te_tensor *anchor,
                              const nchwc_tile *t, int vw, sch_schedule *s)
{
    const char *co = anchor->axes[1].var->name, *ow = anchor->axes[3].var->name;
    const char *cb = anchor->axes[4].var->name;
    const char *order[SCH_MAX_STEP_ITERS], *rn[SMELT_MAX_RANK];
    int n = 0, nr = reduce_axes(anchor, rn);
    const char *oh = anchor->axes[2].var->name;
    order[n++] = anchor->axes[0].var->name;
    if (t->co_blocks == 1) order[n++] = co;
    if (t->oh_block == 1) order[n++] = oh;
    /* reductions rc, ry, rx[, ri] (te order), taps first: ry, rx, rc[, ri],
     * or lanes before the kernel width: rc, ry, ri, rx; depthwise: ry, rx */
    char owo[80], owi[80], rco[80], rci[80];
    if (t->k_batch) { /* rc.o, ow.o, then the reductions with rc.i, as without batches */
        iter_name(owo, sizeof owo, ow, ".o");
        iter_name(owi, sizeof owi, ow, ".i");
        iter_name(rco, sizeof rco, rn[0], ".o");
        iter_name(rci, sizeof rci, rn[0], ".i");
        SMELT_TRY(sch_split(ctx, s, acc, ow, t->ow_block));
        SMELT_TRY(sch_split(ctx, s, acc, rn[0], t->k_batch));
        order[n++] = rco;
        order[n++] = owo;
        rn[0] = rci;
        ow = owi;
    }
    int taps = nr >= 3 && t->order == NCHWC_TAPS_OUTER ? 1 : 0;
    for (int k = 0; k < nr && n < SCH_MAX_STEP_ITERS - 4; k++)
        order[n++] = rn[taps && k < 3 ? (k + 1) % 3 : k];
    if (t->order == NCHWC_LANES_OUTER) { /* nr == 4: swap rx and ri */
        order[n - 2] = rn[3];
        order[n - 1] = rn[2];
    }
    if (t->oh_block > 1) order[n++] = oh;
    order[n++] = ow;
    if (t->co_blocks > 1) order[n++] = co;
    order[n++] = cb;
    SMELT_TRY(sch_reorder(ctx, s, acc, n, order));
    if (t->oh_block > 1) SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, acc, oh));
    if (t->co_blocks > 1) SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, acc, co));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, acc, ow));
    if (t->unroll_kw) SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, acc, rn[nr >= 3 ? 2 : 1]));
    if (t->unroll_lanes) SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, acc, rn[3]));
    if (!t->vec) return SMELT_OK;
    if (!t->split_lanes) return sch_annotate(ctx, s, SCH_VECTORIZE, acc, cb);
    char cbo[80], cbi[80];
    iter_name(cbo, sizeof cbo, cb, ".o");
    iter_name(cbi, sizeof cbi, cb, ".i");
    SMELT_TRY(sch_split(ctx, s, acc, cb, vw));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, acc, cbo));
    return sch_annotate(ctx, s, SCH_VECTORIZE, acc, cbi);
}

/* LANES_OUTER needs the blocked input's lane reduction (rc, ry, rx, ri) and
 * a kernel wider than one column. */
static bool nchwc_lanes_outer_applies(const te_tensor *anchor)
{
    const ir_expr *r = anchor->body;
    return r->reduce.n_axes == 4 && r->reduce.axes[2].extent > 1;
}

/* The pixels-outer nest by default: 1x1 convs on blocked inputs, 16
 * registers, at most twice as many output channels as input channels (more
 * outputs per input: the channel tiles' scattered stores cost more than the
 * input's reuse saves) and rows enough for the threads.  Measured on the
 * 16 1x1 convs of ResNet-50 (Zen 3, one thread, min of 5): 1.04-1.69x on
 * the eleven it picks, 0.66-0.95x on the four with four times as many
 * outputs as inputs. */
static bool nchwc_pixels_outer_pays(const te_tensor *anchor, const te_tensor *out,
                                    const smelt_hw *hw)
{
    int64_t cin = anchor->body->reduce.axes[0].extent * anchor->body->reduce.axes[3].extent;
    int64_t cout = out->axes[1].extent * out->axes[4].extent;
    return hw->vector_regs < 32 && nchwc_blocked_1x1(anchor) && cout <= 2 * cin &&
           out->axes[2].extent >= NCHWC_PIXELS_OUTER_MIN_ROWS;
}

/* The tile from the knobs, each 0 knob by the rules above. */
static smelt_status nchwc_choose_tile(smelt_ctx *ctx, const te_tensor *anchor,
                                      const te_tensor *out, const smelt_hw *hw,
                                      const sch_knobs *kn, nchwc_tile *t)
{
    int vw = hw->lanes;
    const char *on = out->buf->name;
    int64_t co = out->axes[1].extent, ow = out->axes[3].extent;
    int64_t a = knob(kn, SCH_KNOB_TILE_A), b = knob(kn, SCH_KNOB_TILE_B);
    int64_t order = knob(kn, SCH_KNOB_ORDER), par = knob(kn, SCH_KNOB_PARALLEL);
    int64_t unroll = knob(kn, SCH_KNOB_UNROLL), rows = knob(kn, SCH_KNOB_TILE_C);
    int64_t batch = knob(kn, SCH_KNOB_TILE_K), rc = anchor->body->reduce.axes[0].extent;
    if (a < 0 || a > ow) return bad_knob(ctx, on, SCH_KNOB_TILE_A, a);
    if (rows < 0 || rows > out->axes[2].extent) return bad_knob(ctx, on, SCH_KNOB_TILE_C, rows);
    if (b < 0 || (b > 0 && co % b != 0)) return bad_knob(ctx, on, SCH_KNOB_TILE_B, b);
    bool lanes_outer_ok = nchwc_lanes_outer_applies(anchor);
    if (order < 0 || order > 3 || (order == NCHWC_LANES_OUTER && !lanes_outer_ok))
        return bad_knob(ctx, on, SCH_KNOB_ORDER, order);
    if (par < 0 || par > NCHWC_PAR_PIXELS_OUTER) return bad_knob(ctx, on, SCH_KNOB_PARALLEL, par);
    if (unroll < 0 || unroll > NCHWC_UNROLL_LANES ||
        (unroll == NCHWC_UNROLL_LANES && !nchwc_blocked_1x1(anchor)))
        return bad_knob(ctx, on, SCH_KNOB_UNROLL, unroll);
    /* batches accumulate rows in the local buffer: not with oh fused into the parallel loop */
    if (batch < 0 || (batch > 0 && (batch >= rc || rc % batch != 0 || par == 3)))
        return bad_knob(ctx, on, SCH_KNOB_TILE_K, batch);
    t->lanes = out->axes[4].extent;
    bool regs16 = vw > 1 && hw->vector_regs < 32; /* AVX2: measured there */
    bool pair_1x1 = !a && !b && regs16 && t->lanes == vw && co % NCHWC_1X1_CO_BLOCKS_16REGS == 0 &&
                    nchwc_blocked_1x1(anchor);
    bool plain_in = !a && !b && regs16 && t->lanes == vw && co % NCHWC_PLAIN_CO_BLOCKS_16REGS == 0 &&
                    anchor->body->reduce.n_axes == 3 &&
                    anchor->body->reduce.axes[2].extent >= NCHWC_PLAIN_MIN_KW;
    if (pair_1x1) {
        t->ow_block = ow < NCHWC_1X1_COLS_16REGS ? ow : NCHWC_1X1_COLS_16REGS;
        t->co_blocks = NCHWC_1X1_CO_BLOCKS_16REGS;
    } else if (plain_in) {
        t->ow_block = ow < NCHWC_PLAIN_COLS_16REGS ? ow : NCHWC_PLAIN_COLS_16REGS;
        t->co_blocks = NCHWC_PLAIN_CO_BLOCKS_16REGS;
    } else {
        t->ow_block = a ? a : nchwc_ow_block(ow, hw);
        t->co_blocks = b ? b : nchwc_co_blocks(co, t->ow_block, hw, t->lanes);
    }
    t->vec = vw > 1 && t->lanes > 1;
    t->split_lanes = t->vec && t->lanes > vw;
    t->oh_block = rows ? rows : 1;
    int64_t vectors = t->split_lanes ? t->lanes / vw : 1;
    if (t->ow_block * t->co_blocks * t->oh_block * vectors > SCH_KNOB_ACC_MAX)
        return smelt_errf(ctx, SMELT_ERR_ARG, "stage '%s': a %lld x %lld x %lld tile needs more "
                          "than %d accumulators", on, (long long)t->oh_block, (long long)t->co_blocks,
                          (long long)t->ow_block, SCH_KNOB_ACC_MAX);
    /* 16-register targets measured; AVX-512's and NEON's defaults keep the channel order */
    t->order = order ? (nchwc_order)order
               : lanes_outer_ok && regs16 ? NCHWC_LANES_OUTER
                                           : NCHWC_CHANNELS_OUTER;
    t->unroll_kw = unroll ? unroll == 2 : t->order == NCHWC_LANES_OUTER;
    t->unroll_lanes = unroll == NCHWC_UNROLL_LANES; /* the tuner's: doubles the C of a CNN */
    t->k_batch = batch;
    t->parallel = par                                            ? (int)par
                  : stage_work(anchor) < DEFAULT_PARALLEL_MIN_WORK ? 1
                  : nchwc_pixels_outer_pays(anchor, out, hw)       ? NCHWC_PAR_PIXELS_OUTER
                                                                   : 2;
    return SMELT_OK;
}

static smelt_status schedule_nchwc(smelt_ctx *ctx, const te_tensor *anchor, const char *acc,
                                   const te_tensor *out, const smelt_hw *hw, const sch_knobs *kn,
                                   sch_schedule *s)
{
    int vw = hw->lanes;
    nchwc_tile t = {0};
    SMELT_TRY(nchwc_choose_tile(ctx, anchor, out, hw, kn, &t));
    SMELT_TRY(nchwc_out(ctx, acc, out, anchor, &t, vw, s));
    return nchwc_acc(ctx, acc, anchor, &t, vw, s);
}

/* ---- matrix products (tag "matmul": [batch..., i, j] = sum_k A[.., i, k] B[.., k, j]) ----
 * The output is tiled into R rows x V vectors, a register block as in
 * BLIS/MLAS: per k, V loads of B and R broadcasts of A feed R*V independent
 * FMAs, enough to hide the FMA latency and amortise the loads.  The
 * accumulation is computed at the tile loop (the reduction outside, rows
 * and vectors unrolled inside), so the accumulators stay in registers and
 * the fused epilogue (bias, GELU, residual add) runs on the tile before the
 * single store.  With more than a few column panels, the panels run outside
 * the row blocks: one K x (V*lanes) panel of B stays in L2 while every row
 * block of A streams past it (constant B is packed so that the panel is
 * contiguous: passes/pack_weights.c, tag "matmul_packed", whose panel width
 * fixes V).  Parallel over the batch axes and the outer tile loop; the
 * inner one joins only when that leaves too few tasks (a fused index costs
 * a division per use in the tile, which GCC does not hoist). */

typedef struct mm_tile {
    int64_t rows, vecs; /* R and V */
    int64_t cols;       /* columns per tile: V * lanes (1 when not vectorised) */
    bool vec;
    bool cols_outer;    /* column panels outside the row blocks */
    int parallel;       /* 0: the rule's; 1 none; k > 1: the k - 1 leading loops fused */
} mm_tile;

#define MM_ROWS_MAX 12
#define MM_VECS_MAX 4
#define MM_MIN_TASKS 8 /* parallel tasks before the inner tile loop joins */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Relative cycles of the whole product under an R x V tile: tiles (partial
 * ones cost whole) times the cycles of one k step, bound by the FMAs (2 per
 * cycle), the latency chains (R*V accumulators over a 4-cycle FMA), the
 * loads (R + V, 2 per cycle) and, when the K x (V*lanes) panel of B does
 * not stay in L1, its V rows streaming from L2 (measured on Zen 5: 4-row
 * tiles then run at 40% of the 8-row ones). */
static double mm_tile_cost(int64_t m, int64_t nvec, int64_t r, int64_t v, bool b_in_l2)
{
    double step = (double)(r * v) / 2.0;
    double bounds[3] = {4.0, (double)(r + v) / 2.0, b_in_l2 ? 3.0 * (double)v : 0.0};
    for (int i = 0; i < 3; i++)
        if (bounds[i] > step) step = bounds[i];
    return (double)ceil_div(m, r) * (double)ceil_div(nvec, v) * step;
}

/* The lowest-cost R x V tile for an m x (nvec vectors) output with k
 * terms (V fixed when vecs_fixed > 0); ties go to more accumulators, then
 * more rows. */
static void mm_best_tile(int64_t m, int64_t nvec, int64_t k, const smelt_hw *hw,
                         int64_t vecs_fixed, int64_t *rows, int64_t *vecs)
{
    int vw = hw->lanes;
    int64_t acc_max = hw->tile_acc_max; /* the rest of the registers: B and A */
    int64_t l1_panel_bytes = hw->l1_bytes / 2; /* a B panel up to half of L1 stays there */
    int64_t v_lo = vecs_fixed > 0 ? vecs_fixed : 1, v_hi = vecs_fixed > 0 ? vecs_fixed : MM_VECS_MAX;
    double best = -1;
    *rows = 1;
    *vecs = v_lo;
    for (int64_t v = v_lo; v <= v_hi && (v <= nvec || v == v_lo); v++)
        for (int64_t r = 1; r <= MM_ROWS_MAX && r <= m && (r * v <= acc_max || r == 1); r++) {
            bool b_in_l2 = k * v * vw * (int64_t)sizeof(float) > l1_panel_bytes;
            double c = mm_tile_cost(m, nvec, r, v, b_in_l2);
            bool better = best < 0 || c < best * 0.999 ||
                          (c <= best * 1.001 &&
                           (r * v > *rows * *vecs || (r * v == *rows * *vecs && r > *rows)));
            if (better) {
                best = c;
                *rows = r;
                *vecs = v;
            }
        }
}

int64_t sch_matmul_panel_width(int64_t m, int64_t n, int64_t k, const smelt_hw *hw)
{
    int vw = hw->lanes;
    if (vw <= 1 || n < 4 || m < 1) return 0;
    int64_t rows, vecs;
    mm_best_tile(m, ceil_div(n, vw), k, hw, 0, &rows, &vecs);
    return vecs * vw;
}

/* Columns of B's packed panels (MatMulPacked: the stage reads B as
 * [N / cols, K, cols]), or 0. */
static int64_t mm_packed_cols(const te_tensor *anchor)
{
    if (strcmp(anchor->tag, "matmul_packed") != 0) return 0;
    const ir_expr *prod = anchor->body->reduce.src;
    if (prod->kind != IR_MUL || prod->bin.b->kind != IR_LOAD) return 0;
    const ir_buffer *b = prod->bin.b->load.buf;
    return b->rank >= 3 ? b->shape[b->rank - 1] : 0; /* Winograd's U: [e, panels, K, cols] */
}

static mm_tile mm_rule_tile(const te_tensor *anchor, const te_tensor *out, const smelt_hw *hw)
{
    int vw = hw->lanes;
    int r = out->n_axes;
    int64_t m = out->axes[r - 2].extent, n = out->axes[r - 1].extent, k = 1;
    for (int i = 0; i < anchor->body->reduce.n_axes; i++) k *= anchor->body->reduce.axes[i].extent;
    mm_tile t = {m < 4 ? m : 4, 1, 1, vw > 1 && n >= 4, false, 0};
    /* other types: a vector holds fewer (or more) of them than float32's
     * register budget assumes; a plain 4-row x 1-vector tile */
    if (!t.vec || anchor->buf->dtype != SMELT_DT_FLOAT32) {
        t.cols = t.vec ? vw : 1;
        return t;
    }
    /* packed B: one tile column per panel, so panel and lane indices are
     * plain loop variables */
    int64_t packed = mm_packed_cols(anchor);
    int64_t fixed = packed > 0 && packed % vw == 0 ? packed / vw : 0;
    mm_best_tile(m, ceil_div(n, vw), k, hw, fixed, &t.rows, &t.vecs);
    t.cols = t.vecs * vw;
    t.cols_outer = ceil_div(n, t.cols) >= 4;
    return t;
}

#define MM_ROWS_KNOB_MAX 16

/* The rule's tile with the knobs applied.  Packed B fixes the vectors. */
static smelt_status mm_choose_tile(smelt_ctx *ctx, const te_tensor *anchor, const te_tensor *out,
                                   const smelt_hw *hw, const sch_knobs *kn, mm_tile *t)
{
    int vw = hw->lanes;
    *t = mm_rule_tile(anchor, out, hw);
    const char *on = out->buf->name;
    int r = out->n_axes;
    int64_t m = out->axes[r - 2].extent, n = out->axes[r - 1].extent;
    int64_t a = knob(kn, SCH_KNOB_TILE_A), b = knob(kn, SCH_KNOB_TILE_B);
    int64_t order = knob(kn, SCH_KNOB_ORDER), par = knob(kn, SCH_KNOB_PARALLEL);
    if (a < 0 || a > m || a > MM_ROWS_KNOB_MAX) return bad_knob(ctx, on, SCH_KNOB_TILE_A, a);
    bool packed = mm_packed_cols(anchor) > 0;
    if (b < 0 || (b > 0 && (!t->vec || packed || b * vw > n || b > 2 * MM_VECS_MAX)))
        return bad_knob(ctx, on, SCH_KNOB_TILE_B, b);
    if (order < 0 || order > 2) return bad_knob(ctx, on, SCH_KNOB_ORDER, order);
    if (par < 0 || par > r + 1) return bad_knob(ctx, on, SCH_KNOB_PARALLEL, par);
    if (knob(kn, SCH_KNOB_UNROLL)) return bad_knob(ctx, on, SCH_KNOB_UNROLL, kn->v[SCH_KNOB_UNROLL]);
    if (a) t->rows = a;
    if (b) {
        t->vecs = b;
        t->cols = b * vw;
    }
    if ((a || b) && t->rows * t->vecs > SCH_KNOB_ACC_MAX)
        return smelt_errf(ctx, SMELT_ERR_ARG, "stage '%s': a %lld x %lld tile needs more than %d "
                          "accumulators", on, (long long)t->rows, (long long)t->vecs, SCH_KNOB_ACC_MAX);
    if (order) t->cols_outer = order == 1;
    t->parallel = (int)par;
    return SMELT_OK;
}

/* out: batch..., j.o, i.o (or i.o, j.o), i.i, j.i(.o, .i); acc computed at the inner tile loop. */
static smelt_status mm_out(smelt_ctx *ctx, const char *acc, const te_tensor *anchor,
                           const te_tensor *out, const mm_tile *t, int vw, sch_schedule *s)
{
    int r = out->n_axes;
    const char *on = out->buf->name, *in = out->axes[r - 2].var->name;
    const char *jn = out->axes[r - 1].var->name;
    char io[80], ii[80], jo[80], ji[80], jio[96], jii[96];
    iter_name(io, sizeof io, in, ".o");
    iter_name(ii, sizeof ii, in, ".i");
    iter_name(jo, sizeof jo, jn, ".o");
    iter_name(ji, sizeof ji, jn, ".i");
    iter_name(jio, sizeof jio, ji, ".o");
    iter_name(jii, sizeof jii, ji, ".i");
    bool split_vecs = t->vec && t->vecs > 1;
    SMELT_TRY(sch_split(ctx, s, on, in, t->rows));
    SMELT_TRY(sch_split(ctx, s, on, jn, t->cols));
    if (split_vecs) SMELT_TRY(sch_split(ctx, s, on, ji, vw));
    const char *order[SCH_MAX_STEP_ITERS];
    int n = 0;
    for (int d = 0; d < r - 2; d++) order[n++] = out->axes[d].var->name;
    int outer = n;
    order[n++] = t->cols_outer ? jo : io;
    order[n++] = t->cols_outer ? io : jo;
    order[n++] = ii;
    if (split_vecs) order[n++] = jio;
    order[n++] = split_vecs ? jii : ji;
    SMELT_TRY(sch_reorder(ctx, s, on, n, order));
    if (t->vec) SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, on, split_vecs ? jii : ji));
    const char *attach = order[outer + 1];
    if (t->parallel == 1 || (t->parallel == 0 && stage_work(anchor) < DEFAULT_PARALLEL_MIN_WORK))
        return sch_compute_at(ctx, s, acc, on, attach);
    /* leading loops of extent 1 join for free; after the first longer one,
     * another joins only while there are too few tasks and no tail (a
     * fused index hides tails from partitioning and costs a division per
     * use in the tile) */
    int64_t ext[SCH_MAX_STEP_ITERS], tail[SCH_MAX_STEP_ITERS];
    for (int d = 0; d < outer; d++) {
        ext[d] = out->axes[d].extent;
        tail[d] = 0;
    }
    int64_t f0 = t->cols_outer ? t->cols : t->rows, f1 = t->cols_outer ? t->rows : t->cols;
    int64_t e0 = out->axes[t->cols_outer ? r - 1 : r - 2].extent;
    int64_t e1 = out->axes[t->cols_outer ? r - 2 : r - 1].extent;
    ext[outer] = ceil_div(e0, f0);
    tail[outer] = e0 % f0;
    ext[outer + 1] = ceil_div(e1, f1);
    tail[outer + 1] = e1 % f1;
    int last = 0;
    int64_t tasks = ext[0];
    while (t->parallel == 0 && last < outer + 1 &&
           (tasks == 1 || (tasks < MM_MIN_TASKS && tail[last] == 0 && tail[last + 1] == 0))) {
        last++;
        tasks *= ext[last];
    }
    if (t->parallel > 1) last = t->parallel - 2 < outer + 1 ? t->parallel - 2 : outer + 1;
    char fused[512];
    SMELT_TRY(fuse_leading(ctx, s, on, order, last, fused, sizeof fused));
    SMELT_TRY(sch_annotate(ctx, s, SCH_PARALLEL, on, fused));
    return sch_compute_at(ctx, s, acc, on, last == outer + 1 ? fused : attach);
}

/* acc over its tile: batch..., k, i (unrolled), j (vectors unrolled, lanes vectorised). */
static smelt_status mm_acc(smelt_ctx *ctx, const char *acc, const te_tensor *anchor,
                           const mm_tile *t, int vw, sch_schedule *s)
{
    int r = anchor->n_axes;
    const char *in = anchor->axes[r - 2].var->name, *jn = anchor->axes[r - 1].var->name;
    const char *order[SCH_MAX_STEP_ITERS], *rn[SMELT_MAX_RANK];
    int n = 0, nr = reduce_axes(anchor, rn);
    for (int d = 0; d < r - 2; d++) order[n++] = anchor->axes[d].var->name;
    for (int k = 0; k < nr && n < SCH_MAX_STEP_ITERS - 2; k++) order[n++] = rn[k];
    order[n++] = in;
    order[n++] = jn;
    SMELT_TRY(sch_reorder(ctx, s, acc, n, order));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, acc, in));
    if (!t->vec) return SMELT_OK;
    if (t->vecs == 1) return sch_annotate(ctx, s, SCH_VECTORIZE, acc, jn);
    char jo[80], ji[80];
    iter_name(jo, sizeof jo, jn, ".o");
    iter_name(ji, sizeof ji, jn, ".i");
    SMELT_TRY(sch_split(ctx, s, acc, jn, vw));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, acc, jo));
    return sch_annotate(ctx, s, SCH_VECTORIZE, acc, ji);
}

static smelt_status schedule_matmul(smelt_ctx *ctx, const te_tensor *anchor, const char *acc,
                                    const te_tensor *out, const smelt_hw *hw, const sch_knobs *kn,
                                    sch_schedule *s)
{
    int vw = hw->lanes;
    mm_tile t = {0};
    SMELT_TRY(mm_choose_tile(ctx, anchor, out, hw, kn, &t));
    SMELT_TRY(mm_out(ctx, acc, anchor, out, &t, vw, s));
    return mm_acc(ctx, acc, anchor, &t, vw, s);
}

/* Tile the output `out` and compute the accumulation stage `acc` (same
 * shape, data axes named like out's) at the tile loop. */
static smelt_status schedule_anchor(smelt_ctx *ctx, const te_tensor *anchor, const char *acc,
                                    const te_tensor *out, const smelt_hw *hw, const sch_knobs *kn,
                                    sch_schedule *s)
{
    int vw = hw->lanes;
    if (strcmp(anchor->tag, "conv_nchwc") == 0)
        return schedule_nchwc(ctx, anchor, acc, out, hw, kn, s);
    if (strncmp(anchor->tag, "matmul", 6) == 0)
        return schedule_matmul(ctx, anchor, acc, out, hw, kn, s);
    int r = out->n_axes;
    int t = 1, l = r - 1; /* a plain conv: output channels x the last spatial axis */
    const char *on = out->buf->name;
    char tn[64], ln[64], to[80], ti[80], lo[80], li[80];
    snprintf(tn, sizeof tn, "%s", out->axes[t].var->name);
    snprintf(ln, sizeof ln, "%s", out->axes[l].var->name);
    iter_name(to, sizeof to, tn, ".o");
    iter_name(ti, sizeof ti, tn, ".i");
    iter_name(lo, sizeof lo, ln, ".o");
    iter_name(li, sizeof li, ln, ".i");
    int64_t block = knob(kn, SCH_KNOB_TILE_A) ? knob(kn, SCH_KNOB_TILE_A) : ANCHOR_CONV_BLOCK;
    int64_t par = knob(kn, SCH_KNOB_PARALLEL);
    if (knob(kn, SCH_KNOB_TILE_A) && (block < 1 || block > out->axes[t].extent))
        return bad_knob(ctx, on, SCH_KNOB_TILE_A, block);
    if (par < 0 || par > 2) return bad_knob(ctx, on, SCH_KNOB_PARALLEL, par);
    bool vec = vw > 1 && out->axes[l].extent >= 4;
    SMELT_TRY(sch_split(ctx, s, on, tn, block));
    SMELT_TRY(sch_split(ctx, s, on, ln, vec ? vw : 1));
    /* out: leading axes (t's outer part in place), l.o, then t.i, l.i */
    const char *order[SCH_MAX_STEP_ITERS];
    int n = 0;
    for (int d = 0; d < r - 1; d++) order[n++] = d == t ? to : out->axes[d].var->name;
    order[n++] = lo;
    order[n++] = ti;
    order[n++] = li;
    SMELT_TRY(sch_reorder(ctx, s, on, n, order));
    SMELT_TRY(sch_compute_at(ctx, s, acc, on, lo));
    if (vec) SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, on, li));
    /* parallel over the fused axes up to the blocked one; spatial axes stay
     * separate loops so partitioning can peel their padding edges (a fused
     * index hides them behind floordiv/floormod) */
    if (par == 2 || (par == 0 && stage_work(anchor) >= DEFAULT_PARALLEL_MIN_WORK))
        SMELT_TRY(parallelize_leading(ctx, s, on, order, t));
    /* acc over its (tile-sized) region: other axes, reductions, block, lanes */
    n = 0;
    for (int d = 0; d < r; d++)
        if (d != t && d != l) order[n++] = anchor->axes[d].var->name;
    const char *rn[SMELT_MAX_RANK];
    int nr = reduce_axes(anchor, rn);
    for (int k = 0; k < nr && n < SCH_MAX_STEP_ITERS - 2; k++) order[n++] = rn[k];
    order[n++] = anchor->axes[t].var->name;
    order[n++] = anchor->axes[l].var->name;
    SMELT_TRY(sch_reorder(ctx, s, acc, n, order));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, acc, anchor->axes[t].var->name));
    if (vec) SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, acc, anchor->axes[l].var->name));
    return SMELT_OK;
}

/* An elementwise stage over the same iteration space as t. */
static bool same_data_shape(const te_tensor *e, const te_tensor *t)
{
    if ((e->body && e->body->kind == IR_REDUCE) || e->n_axes != t->n_axes) return false;
    for (int d = 0; d < t->n_axes; d++)
        if (e->axes[d].extent != t->axes[d].extent) return false;
    return true;
}

/* The output stage an accumulation t is tiled with: t itself, or the last
 * of its elementwise epilogue (bias, relu, residual add, AveragePool's
 * division); NULL when there is none. */
static const te_tensor *epilogue_output(const te_graph *g, const te_tensor *t)
{
    if (stage_is_output(g, t)) return t;
    const te_tensor *e = sole_consumer(g, t);
    while (e && !stage_is_output(g, e) && same_data_shape(e, t)) e = sole_consumer(g, e);
    return e && stage_is_output(g, e) && same_data_shape(e, t) ? e : NULL;
}

/* NULL when t is not scheduled as a conv/matmul anchor. */
static const te_tensor *anchor_output(const te_graph *g, const te_tensor *t)
{
    return is_anchor(t) ? epilogue_output(g, t) : NULL;
}

/* ---- pooling (tag "pool": a window reduction over NCHW or NCHW[x]c) -------
 * The taps accumulate in registers: the reduction is computed at the
 * output's vector tile (its own local stage, or before AveragePool's
 * division), taps outside the tile's vectors, so each tap is one vector load
 * (deinterleaved for strides 2-4) and one max or add.  Plain layouts
 * vectorise the output width; blocked ones the channel block, with several
 * output columns per tile for independent accumulators.  Parallel over
 * n x channels only: rows and columns stay loops, so partitioning peels the
 * padded border and the interior loads carry no checks. */

#define POOL_COLS_MAX 8      /* blocked: output columns per tile */
#define POOL_PARALLEL_MIN 8  /* n x channels below this: rows join the parallel loop */

typedef struct pool_tile {
    bool blocked;  /* last axis: the channel block's lanes */
    int64_t cols;  /* blocked: output columns per tile; plain: vectors along the width */
    int parallel;  /* 1 none, 2 n.c, 3 n.c.oh */
    bool unroll_kw;
} pool_tile;

static bool is_pool(const te_tensor *t)
{
    return t->kind == TE_COMPUTE && t->body && t->body->kind == IR_REDUCE && t->n_axes >= 3 &&
           strcmp(t->tag, "pool") == 0 && t->buf->dtype == SMELT_DT_FLOAT32;
}

/* The stage a float32 pool t is tiled with (t or its epilogue), else NULL. */
static const te_tensor *pool_output(const te_graph *g, const te_tensor *t)
{
    if (!is_pool(t)) return NULL;
    const te_tensor *e = epilogue_output(g, t);
    return e && e->buf->dtype == SMELT_DT_FLOAT32 ? e : NULL;
}

/* A 2-D window over [n, c/b, h, w, b]: the block axis is reduced over 1 tap. */
static bool pool_is_blocked(const te_tensor *t)
{
    const ir_expr *r = t->body;
    return t->n_axes == 5 && r->reduce.n_axes == 3 && r->reduce.axes[2].extent == 1;
}

/* Largest divisor of w up to POOL_COLS_MAX (the tail is peeled otherwise). */
static int64_t pool_cols(int64_t w)
{
    for (int64_t r = POOL_COLS_MAX; r > 1; r--)
        if (w % r == 0) return r;
    return w < POOL_COLS_MAX ? w : 4;
}

static smelt_status pool_choose_tile(smelt_ctx *ctx, const te_tensor *t, const te_tensor *out,
                                     int vw, const sch_knobs *kn, pool_tile *p)
{
    const char *on = out->buf->name;
    int r = t->n_axes;
    int64_t a = knob(kn, SCH_KNOB_TILE_A), par = knob(kn, SCH_KNOB_PARALLEL);
    int64_t unroll = knob(kn, SCH_KNOB_UNROLL);
    p->blocked = pool_is_blocked(t);
    int64_t width = t->axes[p->blocked ? r - 2 : r - 1].extent;
    int64_t lanes = p->blocked ? t->axes[r - 1].extent : vw;
    if (a < 0 || (p->blocked ? a > width : a * vw > width) || (a > 0 && vw <= 1) ||
        a * (lanes + vw - 1) / vw > SCH_KNOB_ACC_MAX)
        return bad_knob(ctx, on, SCH_KNOB_TILE_A, a);
    if (par < 0 || par > 3) return bad_knob(ctx, on, SCH_KNOB_PARALLEL, par);
    if (unroll < 0 || unroll > 2) return bad_knob(ctx, on, SCH_KNOB_UNROLL, unroll);
    p->cols = a ? a : p->blocked ? pool_cols(width) : 1;
    p->unroll_kw = unroll == 2;
    int64_t planes = t->axes[0].extent * t->axes[1].extent;
    p->parallel = par                                             ? (int)par
                  : stage_work(t) < DEFAULT_PARALLEL_MIN_WORK     ? 1
                  : planes < POOL_PARALLEL_MIN                    ? 3
                                                                  : 2;
    return SMELT_OK;
}

/* The lanes of a tile's innermost axis: vectorised, split by the vector
 * width (outer part unrolled) when wider. */
static smelt_status pool_lanes(smelt_ctx *ctx, sch_schedule *s, const char *stage,
                               const char *axis, int64_t extent, int vw)
{
    char o[80], i[80];
    iter_name(o, sizeof o, axis, ".o");
    iter_name(i, sizeof i, axis, ".i");
    if (vw <= 1) return SMELT_OK;
    if (extent <= vw) return sch_annotate(ctx, s, SCH_VECTORIZE, stage, axis);
    SMELT_TRY(sch_split(ctx, s, stage, axis, vw));
    if (extent % vw == 0) SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, stage, o));
    return sch_annotate(ctx, s, SCH_VECTORIZE, stage, i);
}

/* out: its tile axis split by the tile, acc computed at the outer part. */
static smelt_status pool_out(smelt_ctx *ctx, const char *acc, const te_tensor *out,
                             const pool_tile *p, int vw, sch_schedule *s)
{
    const char *on = out->buf->name;
    int r = out->n_axes;
    const ir_axis *tile = &out->axes[p->blocked ? r - 2 : r - 1];
    const char *tn = tile->var->name, *last = out->axes[r - 1].var->name;
    int64_t factor = p->blocked ? p->cols : p->cols * vw;
    char to[80], ti[80];
    iter_name(to, sizeof to, tn, ".o");
    iter_name(ti, sizeof ti, tn, ".i");
    bool split = vw > 1 && tile->extent > factor;
    if (split) SMELT_TRY(sch_split(ctx, s, on, tn, factor));
    const char *at = split ? to : p->blocked ? tn : out->axes[r - 2].var->name;
    /* the parallel loop is fused before compute_at, which may name it */
    char fused[256];
    if (p->parallel > 1) {
        const char *lead[3] = {out->axes[0].var->name, out->axes[1].var->name, out->axes[2].var->name};
        int last_lead = p->parallel == 3 && r >= 4 ? 2 : 1;
        SMELT_TRY(fuse_leading(ctx, s, on, lead, last_lead, fused, sizeof fused));
        SMELT_TRY(sch_annotate(ctx, s, SCH_PARALLEL, on, fused));
        if (strcmp(at, lead[last_lead]) == 0) at = fused;
    }
    SMELT_TRY(sch_compute_at(ctx, s, acc, on, at));
    if (p->blocked) return pool_lanes(ctx, s, on, last, out->axes[r - 1].extent, vw);
    return pool_lanes(ctx, s, on, split ? ti : tn, split ? factor : tile->extent, vw);
}

/* acc over its tile: the outer data axes, the taps, then the tile's
 * columns (blocked: unrolled) and lanes. */
static smelt_status pool_acc(smelt_ctx *ctx, const char *acc, const te_tensor *t,
                             const pool_tile *p, int vw, sch_schedule *s)
{
    int r = t->n_axes, inner = p->blocked ? 2 : 1, n = 0;
    const char *order[SCH_MAX_STEP_ITERS], *rn[SMELT_MAX_RANK];
    int nr = reduce_axes(t, rn);
    for (int d = 0; d < r - inner; d++) order[n++] = t->axes[d].var->name;
    for (int k = 0; k < nr && n < SCH_MAX_STEP_ITERS - 2; k++) order[n++] = rn[k];
    for (int d = r - inner; d < r; d++) order[n++] = t->axes[d].var->name;
    SMELT_TRY(sch_reorder(ctx, s, acc, n, order));
    const char *last = t->axes[r - 1].var->name;
    if (p->unroll_kw) SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, acc, rn[p->blocked ? 1 : nr - 1]));
    if (p->blocked) {
        if (p->cols > 1) SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, acc, t->axes[r - 2].var->name));
        return pool_lanes(ctx, s, acc, last, t->axes[r - 1].extent, vw);
    }
    return pool_lanes(ctx, s, acc, last, p->cols * vw, vw);
}

/* Plain layouts vectorise the width: half vectors when they divide it and
 * whole ones do not (28 columns: 7 x 4 lanes, not 3 x 8 and a scalar tail
 * whose taps each carry bounds checks). */
static int pool_vector_width(const te_tensor *t, int vw)
{
    int64_t width = t->axes[t->n_axes - 1].extent;
    bool half = !pool_is_blocked(t) && vw >= 8 && width % vw != 0 && width % (vw / 2) == 0;
    return half ? vw / 2 : vw;
}

/* If t is a float32 pool: schedule it with its epilogue and mark both done. */
static smelt_status try_pool(smelt_ctx *ctx, const te_graph *g, const te_tensor *t, int vw,
                             const sch_knobs *kn, sch_schedule *s, bool *done)
{
    const te_tensor *e = pool_output(g, t);
    if (!e || vw <= 1) return SMELT_OK;
    vw = pool_vector_width(t, vw);
    pool_tile p = {.cols = 1};
    SMELT_TRY(pool_choose_tile(ctx, t, e, vw, kn, &p));
    char acc[256];
    snprintf(acc, sizeof acc, "%s%s", t->buf->name, e == t ? ".local" : "");
    if (e == t) SMELT_TRY(sch_cache_write(ctx, s, t->buf->name));
    for (const te_tensor *m = e == t ? e : sole_consumer(g, t); m != e; m = sole_consumer(g, m)) {
        SMELT_TRY(sch_compute_inline(ctx, s, m->buf->name));
        done[m->index] = true;
    }
    SMELT_TRY(pool_out(ctx, acc, e, &p, vw, s));
    SMELT_TRY(pool_acc(ctx, acc, t, &p, vw, s));
    done[t->index] = done[e->index] = true;
    return SMELT_OK;
}

/* If t is a conv/matmul accumulation: schedule it with its epilogue and mark
 * both as done. */
static smelt_status try_anchor(smelt_ctx *ctx, const te_graph *g, const te_tensor *t,
                               const smelt_hw *hw, const sch_knobs *kn, sch_schedule *s, bool *done)
{
    const te_tensor *e = anchor_output(g, t);
    if (!e) return SMELT_OK;
    if (e == t) {
        char local[256];
        snprintf(local, sizeof local, "%s.local", t->buf->name);
        SMELT_TRY(sch_cache_write(ctx, s, t->buf->name));
        SMELT_TRY(schedule_anchor(ctx, t, local, t, hw, kn, s));
        done[t->index] = true;
        return SMELT_OK;
    }
    /* intermediate epilogue stages are inlined into the last, which the
     * tile is computed at */
    for (const te_tensor *m = sole_consumer(g, t); m != e; m = sole_consumer(g, m)) {
        SMELT_TRY(sch_compute_inline(ctx, s, m->buf->name));
        done[m->index] = true;
    }
    SMELT_TRY(schedule_anchor(ctx, t, t->buf->name, e, hw, kn, s));
    done[t->index] = done[e->index] = true;
    return SMELT_OK;
}

/* ---- layout conversions (LayoutTransform, tag "layout") -------------------
 * NCHW <-> NCHW[b]c of float32 is a transpose of [b channels x W] tiles:
 * the tile is tensorized with smelt.transpose_f32 (read along the source's
 * contiguous axis, written along the destination's, in registers), W split
 * into whole rows of up to 16 vectors, parallel over n, channel blocks and
 * the rows; a fused elementwise producer or consumer chain works on the
 * same tiles.  Other conversions (block to block, other dtypes, producer and
 * consumer both fused) are nested loops rather than one fused index (whose
 * floordiv/floormod would be paid per element), the innermost axis
 * vectorised, parallel over n and channels. */

/* A float32 stage whose value is one float32 load of a tensor. */
static const te_tensor *copied_tensor(const te_graph *g, const te_tensor *t)
{
    const ir_expr *b = t->body;
    while (b && b->kind == IR_CAST && b->dtype == SMELT_DT_FLOAT32) b = b->bin.a;
    if (t->buf->dtype != SMELT_DT_FLOAT32 || !b || b->kind != IR_LOAD ||
        b->load.buf->dtype != SMELT_DT_FLOAT32)
        return NULL;
    return te_tensor_of(g, b->load.buf);
}

/* The plan of a blocked <-> plain transpose: t the conversion; src a fused
 * elementwise producer computed per tile (else NULL); out the stage the
 * tiles are laid over: t, or the last of a fused elementwise consumer chain
 * (computed per tile, read contiguously by it). */
typedef struct layout_plan {
    const te_graph *g;
    const te_tensor *t, *src, *out;
    int64_t block, w_tile;
    bool to_plain;
    int64_t parallel; /* 1 none, 2 n x channel blocks x rows */
} layout_plan;

/* Tile loops of out: n, channel blocks, rows (in parallel), w.o, then
 * [c.i] w.i [lanes]; names[] = c.o, c.i, w.o, w.i. */
static smelt_status layout_tile(smelt_ctx *ctx, const layout_plan *p, sch_schedule *s,
                                char (*names)[80])
{
    const te_tensor *o = p->out;
    const char *name = o->buf->name, *order[SMELT_MAX_RANK + 2];
    int rank = o->n_axes, w_axis = p->to_plain ? rank - 1 : rank - 2, n = 0;
    const char *c = o->axes[1].var->name, *w = o->axes[w_axis].var->name;
    iter_name(names[0], 80, c, p->to_plain ? ".o" : "");
    iter_name(names[1], 80, c, ".i");
    iter_name(names[2], 80, w, ".o");
    iter_name(names[3], 80, w, ".i");
    if (p->to_plain) SMELT_TRY(sch_split(ctx, s, name, c, p->block));
    SMELT_TRY(sch_split(ctx, s, name, w, p->w_tile));
    order[n++] = o->axes[0].var->name;
    order[n++] = names[0];
    for (int d = 2; d < w_axis; d++) order[n++] = o->axes[d].var->name;
    int lead = n;
    order[n++] = names[2];
    if (p->to_plain) order[n++] = names[1];
    order[n++] = names[3];
    if (!p->to_plain) order[n++] = o->axes[rank - 1].var->name;
    SMELT_TRY(sch_reorder(ctx, s, name, n, order));
    if (p->parallel == 2 || (p->parallel == 0 && stage_work(o) >= DEFAULT_PARALLEL_MIN_WORK))
        SMELT_TRY(parallelize_leading(ctx, s, name, order, lead - 1));
    return SMELT_OK;
}

/* The conversion's own loops for one tile (computed at out's w.o): its
 * two tile axes innermost, the kernel over them. */
static smelt_status layout_at_tile(smelt_ctx *ctx, const layout_plan *p, const char *tile_loop,
                                   sch_schedule *s)
{
    const te_tensor *t = p->t;
    const char *name = t->buf->name, *order[SMELT_MAX_RANK];
    int rank = t->n_axes, n = 0;
    SMELT_TRY(sch_compute_at(ctx, s, name, p->out->buf->name, tile_loop));
    if (!p->to_plain) /* n, cb, rows, w, lanes: already in place */
        return sch_tensorize(ctx, s, name, t->axes[rank - 2].var->name, "smelt.transpose_f32");
    order[n++] = t->axes[0].var->name;
    for (int d = 2; d < rank - 1; d++) order[n++] = t->axes[d].var->name;
    order[n++] = t->axes[1].var->name;
    order[n++] = t->axes[rank - 1].var->name;
    SMELT_TRY(sch_reorder(ctx, s, name, n, order));
    return sch_tensorize(ctx, s, name, t->axes[1].var->name, "smelt.transpose_f32");
}

/* A per-tile elementwise stage: its innermost axis (the contiguous one,
 * now one tile wide) vectorised. */
static smelt_status vectorize_last(smelt_ctx *ctx, const te_tensor *e, int vw, sch_schedule *s)
{
    const ir_axis *last = &e->axes[e->n_axes - 1];
    if (vw <= 1 || last->extent < 4) return SMELT_OK;
    return sch_annotate(ctx, s, SCH_VECTORIZE, e->buf->name, last->var->name);
}

static smelt_status layout_transpose(smelt_ctx *ctx, const layout_plan *p, int vw,
                                     sch_schedule *s)
{
    char names[4][80];
    SMELT_TRY(layout_tile(ctx, p, s, names));
    if (p->out == p->t && p->src) {
        SMELT_TRY(sch_compute_at(ctx, s, p->src->buf->name, p->t->buf->name, names[2]));
        SMELT_TRY(vectorize_last(ctx, p->src, vw, s));
    }
    if (p->out == p->t)
        return sch_tensorize(ctx, s, p->t->buf->name, p->to_plain ? names[1] : names[3],
                             "smelt.transpose_f32");
    /* the consumer chain: inlined into its last stage, which reads the tile */
    for (const te_tensor *m = sole_consumer(p->g, p->t); m != p->out; m = sole_consumer(p->g, m))
        SMELT_TRY(sch_compute_inline(ctx, s, m->buf->name));
    SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, p->out->buf->name,
                           p->to_plain ? names[3] : p->out->axes[p->out->n_axes - 1].var->name));
    return layout_at_tile(ctx, p, names[2], s);
}

/* b when t converts a float32 tensor between NCHW and NCHW[b]c (b > 1). */
static int64_t transpose_block(const te_graph *g, const te_tensor *t, bool *to_plain)
{
    const te_tensor *x = copied_tensor(g, t);
    if (!x || t->n_axes < 3) return 0;
    *to_plain = x->n_axes == t->n_axes + 1;
    if (!*to_plain && t->n_axes != x->n_axes + 1) return 0;
    const ir_buffer *blocked = *to_plain ? x->buf : t->buf; /* placeholders have no axes */
    return blocked->rank >= 4 ? blocked->shape[blocked->rank - 1] : 0;
}

/* Every load of prod in e is at e's own index (an elementwise read). */
static bool reads_at_own_index(const te_tensor *e, const ir_expr *x, const ir_buffer *prod);

typedef struct own_index_walk {
    const te_tensor *e;
    const ir_buffer *prod;
    bool ok;
} own_index_walk;

static void own_index_child(void *ctx, const ir_expr *x)
{
    own_index_walk *w = ctx;
    w->ok = w->ok && reads_at_own_index(w->e, x, w->prod);
}

static bool reads_at_own_index(const te_tensor *e, const ir_expr *x, const ir_buffer *prod)
{
    if (!x) return true;
    if (x->kind == IR_LOAD && x->load.buf == prod) {
        if (x->load.n != e->n_axes) return false;
        for (int d = 0; d < e->n_axes; d++) {
            const ir_expr *i = x->load.idx[d];
            bool unit = e->axes[d].extent == 1 && ir_is_int(i, 0); /* broadcasts write 0 */
            if (!unit && (i->kind != IR_VAR || i->var != e->axes[d].var)) return false;
        }
    }
    own_index_walk w = {e, prod, true};
    tir_expr_visit_children(x, own_index_child, &w);
    return w.ok;
}

/* The last stage of t's chain of elementwise consumers when it is an
 * output (each reading its predecessor at its own index), else NULL. */
static const te_tensor *layout_consumer(const te_graph *g, const te_tensor *t)
{
    const te_tensor *prev = t, *e = sole_consumer(g, t);
    while (e && same_data_shape(e, t) && reads_at_own_index(e, e->body, prev->buf)) {
        if (stage_is_output(g, e)) return e;
        prev = e;
        e = sole_consumer(g, e);
    }
    return NULL;
}

/* Whether t is a float32 NCHW <-> NCHW[b]c conversion the transpose kernel
 * can do, with at most one fused side (producer or consumers). */
static bool plan_transpose(const te_graph *g, const te_tensor *t, layout_plan *p)
{
    memset(p, 0, sizeof *p);
    if (t->kind != TE_COMPUTE || strcmp(t->tag, "layout") != 0) return false;
    p->g = g;
    p->t = t;
    p->block = transpose_block(g, t, &p->to_plain);
    if (p->block <= 1) return false;
    const te_tensor *x = copied_tensor(g, t);
    if (x->kind == TE_COMPUTE) {
        if ((x->body && x->body->kind == IR_REDUCE) || stage_is_output(g, x) ||
            sole_consumer(g, x) != t)
            return false;
        p->src = x;
    }
    p->out = stage_is_output(g, t) ? t : layout_consumer(g, t);
    return p->out && (p->out == t || !p->src);
}

/* The default W tile: whole rows up to LAYOUT_W_TILE_VECS vectors (the
 * kernel tiles them itself; measured: 16-wide calls on 28-wide rows of
 * 8-blocks cost twice the time of one 28-wide call). */
#define LAYOUT_W_TILE_VECS 16
static int64_t layout_w_tile(const layout_plan *p, int vw)
{
    int64_t w = p->t->axes[p->to_plain ? p->t->n_axes - 1 : p->t->n_axes - 2].extent;
    return w < LAYOUT_W_TILE_VECS * vw ? w : LAYOUT_W_TILE_VECS * vw;
}

static smelt_status try_layout(smelt_ctx *ctx, const te_graph *g, const te_tensor *t, int vw,
                               const sch_knobs *kn, sch_schedule *s, bool *done)
{
    if (t->kind != TE_COMPUTE || strcmp(t->tag, "layout") != 0 || t->n_axes < 3)
        return SMELT_OK;
    layout_plan p;
    int64_t order = knob(kn, SCH_KNOB_ORDER), tile = knob(kn, SCH_KNOB_TILE_A);
    if (order < 0 || order > 2) return bad_knob(ctx, t->buf->name, SCH_KNOB_ORDER, order);
    if (tile < 0) return bad_knob(ctx, t->buf->name, SCH_KNOB_TILE_A, tile);
    if (order != 1 && vw > 1 && plan_transpose(g, t, &p)) {
        p.w_tile = tile ? tile : layout_w_tile(&p, vw);
        p.parallel = knob(kn, SCH_KNOB_PARALLEL);
        if (p.parallel < 0 || p.parallel > 2)
            return bad_knob(ctx, t->buf->name, SCH_KNOB_PARALLEL, p.parallel);
        done[t->index] = done[p.out->index] = true;
        if (p.src) done[p.src->index] = true;
        for (const te_tensor *m = t; m != p.out; m = sole_consumer(g, m)) done[m->index] = true;
        return layout_transpose(ctx, &p, vw, s);
    }
    if (!stage_is_output(g, t)) return SMELT_OK;
    const char *name = t->buf->name, *last = t->axes[t->n_axes - 1].var->name;
    int64_t ext = t->axes[t->n_axes - 1].extent;
    char inner[80];
    iter_name(inner, sizeof inner, last, ".i");
    if (vw > 1 && ext > vw) {
        SMELT_TRY(sch_split(ctx, s, name, last, vw));
        SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, name, inner));
    } else if (vw > 1 && ext >= 4) {
        SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, name, last));
    }
    if (stage_work(t) >= DEFAULT_PARALLEL_MIN_WORK) {
        const char *lead[2] = {t->axes[0].var->name, t->axes[1].var->name};
        SMELT_TRY(parallelize_leading(ctx, s, name, lead, 1));
    }
    done[t->index] = true;
    return SMELT_OK;
}

/* ---- inline or materialise -------------------------------------------------
 * Inlining copies a producer's expression into every read of it, and the
 * load's indices into every use of the producer's axes: stages each reading
 * their producer k times (GatherElements(x, x), x * x) grow as k^depth.  An
 * elementwise producer is computed into its own buffer instead when inlining
 * it would give a consumer more than this many nodes, so code and compile
 * memory grow linearly with such a chain.  Well under SCH_INLINE_MAX_NODES
 * (which refuses such an inline) and far above what the test models inline
 * (at most 29 nodes: bert_tiny_like, gpt2_tiny_like). */
#define DEFAULT_INLINE_MAX_NODES 1024
_Static_assert(DEFAULT_INLINE_MAX_NODES <= SCH_INLINE_MAX_NODES, "default inlines must replay");

/* Nodes of an expression once inlined producers are expanded, and how often
 * each axis variable of the stage it belongs to occurs in it (inlining a
 * load substitutes its indices for the producer's axes: every occurrence
 * copies an index expression).  Saturates at SIZE_CAP. */
#define SIZE_CAP ((int64_t)1 << 40)
typedef struct expr_size {
    int64_t nodes, occ[SMELT_MAX_RANK];
} expr_size;

struct inline_plan {
    const te_graph *g;
    const te_readers *readers;
    bool *inlined;     /* per tensor index: compute_inline emitted */
    expr_size *memo;   /* per tensor index, for inlined stages; nodes 0: unknown */
};

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) || r > SIZE_CAP ? SIZE_CAP : r;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) || r > SIZE_CAP ? SIZE_CAP : r;
}

static expr_size size_of(inline_plan *p, const te_tensor *cur, const ir_expr *e);

typedef struct size_acc {
    inline_plan *p;
    const te_tensor *cur;
    expr_size sum;
} size_acc;

static void add_child(void *ctx, const ir_expr *e)
{
    size_acc *a = ctx;
    expr_size c = size_of(a->p, a->cur, e);
    a->sum.nodes = sat_add(a->sum.nodes, c.nodes);
    for (int d = 0; d < SMELT_MAX_RANK; d++) a->sum.occ[d] = sat_add(a->sum.occ[d], c.occ[d]);
}

/* Memoised: an inlined stage's producers are all decided. */
static const expr_size *stage_size(inline_plan *p, const te_tensor *t)
{
    expr_size *m = &p->memo[t->index];
    if (m->nodes == 0) *m = size_of(p, t, t->body);
    return m;
}

/* The load of an inlined producer: its body with the indices substituted. */
static expr_size inlined_load(inline_plan *p, const te_tensor *cur, const ir_expr *e,
                              const te_tensor *prod)
{
    const expr_size *ps = stage_size(p, prod);
    expr_size r = {ps->nodes, {0}};
    for (int d = 0; d < e->load.n && d < SMELT_MAX_RANK; d++) {
        expr_size ix = size_of(p, cur, e->load.idx[d]);
        r.nodes = sat_add(r.nodes, sat_mul(ps->occ[d], ix.nodes - 1));
        for (int v = 0; v < SMELT_MAX_RANK; v++)
            r.occ[v] = sat_add(r.occ[v], sat_mul(ps->occ[d], ix.occ[v]));
    }
    return r;
}

static expr_size size_of(inline_plan *p, const te_tensor *cur, const ir_expr *e)
{
    expr_size r = {1, {0}};
    if (!e) return r;
    if (e->kind == IR_VAR) {
        for (int d = 0; d < cur->n_axes; d++) r.occ[d] = cur->axes[d].var == e->var;
        return r;
    }
    const te_tensor *prod = e->kind == IR_LOAD ? te_readers_tensor_of(p->readers, p->g, e->load.buf) : NULL;
    if (prod && p->inlined[prod->index]) return inlined_load(p, cur, e, prod);
    size_acc a = {p, cur, r};
    tir_expr_visit_children(e, add_child, &a);
    return a.sum;
}

/* Whether every consumer of t stays within the budget with t inlined (as
 * state.c replays it: producers decided later are not expanded yet). */
static bool inline_fits(inline_plan *p, const te_tensor *t)
{
    p->inlined[t->index] = true;
    bool fits = true;
    const int *readers = te_readers_of(p->readers, t->index);
    for (int i = 0; fits && i < te_readers_count(p->readers, t->index); i++) {
        const te_tensor *c = p->g->tensors.items[readers[i]];
        fits = size_of(p, c, c->body).nodes <= DEFAULT_INLINE_MAX_NODES;
    }
    p->inlined[t->index] = fits;
    return fits;
}


/* A stage computing a transcendental function (softmax's exponentials) that
 * several stages read is computed once into its own buffer: inlined, each
 * reader would evaluate the function again, which costs more than the
 * buffer's memory traffic. */
static void find_costly_call(void *ctx, const ir_expr *e)
{
    bool *found = ctx;
    if (*found) return;
    if (e->kind == IR_CALL) {
        switch (e->call.op) {
        case IR_CALL_EXP: case IR_CALL_LOG: case IR_CALL_TANH: case IR_CALL_ERF:
        case IR_CALL_POW: case IR_CALL_SIN: case IR_CALL_COS: case IR_CALL_SIGMOID:
            *found = true;
            return;
        default: break;
        }
    }
    tir_expr_visit_children(e, find_costly_call, ctx);
}

static bool costly_and_shared(const inline_plan *p, const te_tensor *t)
{
    bool costly = false;
    if (te_readers_count(p->readers, t->index) >= 2 && t->body) find_costly_call(&costly, t->body);
    /* a table its op computes once for many reads (RoiAlign's samples per
     * region, read per channel): inlined, every read computes it again */
    return costly || strcmp(t->tag, "table") == 0;
}

smelt_status sch_default(smelt_ctx *ctx, const te_graph *g, const smelt_hw *hw, sch_schedule *s)
{
    return sch_default_knobs(ctx, g, hw, NULL, s);
}

/* ---- knobs ------------------------------------------------------------------
 * They apply to the graph's main stage: its first conv/matmul anchor, else its
 * first float32 pool, else a transposing layout conversion, else the generic
 * stage with the most work. */

typedef enum rule_kind {
    RULE_NONE,
    RULE_NCHWC,
    RULE_MATMUL,
    RULE_CONV,
    RULE_GENERIC,
    RULE_POOL,
    RULE_LAYOUT
} rule_kind;

static bool is_generic(const te_graph *g, const te_tensor *t)
{
    if (t->kind != TE_COMPUTE || t->n_axes == 0) return false;
    if (strcmp(t->tag, "layout") == 0 && stage_is_output(g, t) && t->n_axes >= 3) return false;
    return stage_is_output(g, t) || (t->body && t->body->kind == IR_REDUCE);
}

static rule_kind main_stage(const te_graph *g, int *index)
{
    *index = -1;
    for (int i = 0; i < g->tensors.len; i++) {
        const te_tensor *t = g->tensors.items[i];
        if (!anchor_output(g, t)) continue;
        *index = i;
        if (strcmp(t->tag, "conv_nchwc") == 0) return RULE_NCHWC;
        return strncmp(t->tag, "matmul", 6) == 0 ? RULE_MATMUL : RULE_CONV;
    }
    for (int i = 0; i < g->tensors.len; i++) {
        if (!pool_output(g, g->tensors.items[i])) continue;
        *index = i;
        return RULE_POOL;
    }
    layout_plan lp;
    for (int i = 0; i < g->tensors.len; i++)
        if (plan_transpose(g, g->tensors.items[i], &lp)) {
            *index = i;
            return RULE_LAYOUT;
        }
    int64_t best = -1;
    for (int i = 0; i < g->tensors.len; i++) {
        const te_tensor *t = g->tensors.items[i];
        if (is_generic(g, t) && stage_work(t) > best) {
            best = stage_work(t);
            *index = i;
        }
    }
    return *index >= 0 ? RULE_GENERIC : RULE_NONE;
}

static const char *const knob_names[SCH_KNOB_COUNT_] = {"tile_a", "tile_b", "order", "parallel",
                                                        "unroll", "tile_c", "algo", "tile_k"};

const char *sch_knob_name(sch_knob k)
{
    return k >= 0 && k < SCH_KNOB_COUNT_ ? knob_names[k] : "?";
}

static void add_value(sch_knob_space *sp, sch_knob k, int64_t v)
{
    for (int i = 0; i < sp->n_values[k]; i++)
        if (sp->values[k][i] == v) return;
    if (sp->n_values[k] < SCH_KNOB_MAX_VALUES) sp->values[k][sp->n_values[k]++] = v;
}

static void add_range(sch_knob_space *sp, sch_knob k, int64_t lo, int64_t hi)
{
    for (int64_t v = lo; v <= hi; v++) add_value(sp, k, v);
}

/* Register blocks along ow: its divisors up to 28, then the usual sizes (3
 * and 5: the 16-register tiles of 3 x 4 and 5 x 2 accumulators). */
static void nchwc_space(const te_tensor *anchor, const te_tensor *out, int vw, sch_knob_space *sp)
{
    static const int64_t common[] = {2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28};
    int64_t co = out->axes[1].extent, ow = out->axes[3].extent;
    for (int64_t d = 1; d <= ow && d <= NCHWC_REG_MAX * 2; d++)
        if (ow % d == 0) add_value(sp, SCH_KNOB_TILE_A, d);
    for (size_t i = 0; i < SMELT_ARRAY_LEN(common); i++)
        if (common[i] <= ow) add_value(sp, SCH_KNOB_TILE_A, common[i]);
    for (int64_t b = 1; b <= 8; b *= 2)
        if (co % b == 0) add_value(sp, SCH_KNOB_TILE_B, b);
    add_range(sp, SCH_KNOB_ORDER, 1, nchwc_lanes_outer_applies(anchor) ? 3 : 2);
    add_range(sp, SCH_KNOB_PARALLEL, 1, NCHWC_PAR_PIXELS_OUTER);
    add_range(sp, SCH_KNOB_UNROLL, 1, nchwc_blocked_1x1(anchor) ? NCHWC_UNROLL_LANES : 2);
    for (int64_t r = 1; r <= 4 && r <= out->axes[2].extent; r++) add_value(sp, SCH_KNOB_TILE_C, r);
    int64_t rc = anchor->body->reduce.axes[0].extent;
    for (int64_t k = 2; k < rc && k <= NCHWC_K_BATCH_MAX; k *= 2)
        if (rc % k == 0) add_value(sp, SCH_KNOB_TILE_K, k);
    if (anchor->conv2d) /* direct, or Winograd F(2x2), F(4x4) */
        for (int64_t m = 1; m <= SCH_WINOGRAD_MAX_M; m *= 2) add_value(sp, SCH_KNOB_ALGO, m);
    (void)vw;
}

static void matmul_space(const te_tensor *anchor, const te_tensor *out, int vw, sch_knob_space *sp)
{
    int r = out->n_axes;
    int64_t m = out->axes[r - 2].extent, n = out->axes[r - 1].extent;
    add_range(sp, SCH_KNOB_TILE_A, 1, m < MM_ROWS_KNOB_MAX ? m : MM_ROWS_KNOB_MAX);
    if (vw > 1 && n >= 4 && mm_packed_cols(anchor) == 0)
        for (int64_t b = 1; b <= 2 * MM_VECS_MAX && b * vw <= n; b++) add_value(sp, SCH_KNOB_TILE_B, b);
    add_range(sp, SCH_KNOB_ORDER, 1, 2);
    add_range(sp, SCH_KNOB_PARALLEL, 1, r + 1);
}

static void conv_space(const te_tensor *out, sch_knob_space *sp)
{
    for (int64_t b = 1; b <= 32 && b <= out->axes[1].extent; b *= 2) add_value(sp, SCH_KNOB_TILE_A, b);
    add_range(sp, SCH_KNOB_PARALLEL, 1, 2);
}

static void generic_space(const te_graph *g, const te_tensor *t, int vw, sch_knob_space *sp)
{
    add_range(sp, SCH_KNOB_PARALLEL, 1, t->n_axes >= 3 ? t->n_axes + 1 : 2);
    const char *rn[SMELT_MAX_RANK];
    if (vw > 1 && stage_is_output(g, t) && reduce_axes(t, rn) > 0 && t->n_axes >= 2 &&
        t->axes[t->n_axes - 1].extent >= vw)
        add_range(sp, SCH_KNOB_ORDER, 1, 2);
    if (reduces_contiguous(t, vw)) { /* rfactor (the rule's choice) or not */
        add_value(sp, SCH_KNOB_ORDER, 1);
        add_value(sp, SCH_KNOB_ORDER, 3);
        const ir_axis *r = &t->body->reduce.axes[t->body->reduce.n_axes - 1];
        for (int64_t v = 1; v <= RFACTOR_VECS_MAX && r->extent >= 2 * v * vw; v++)
            add_value(sp, SCH_KNOB_UNROLL, v + 1);
        return;
    }
    if (vw > 1 && t->axes[t->n_axes - 1].extent >= 2 * vw) {
        add_value(sp, SCH_KNOB_UNROLL, 1);
        add_value(sp, SCH_KNOB_UNROLL, 3);
        if (t->axes[t->n_axes - 1].extent >= 4 * vw) add_value(sp, SCH_KNOB_UNROLL, 5);
    }
}

/* Columns (blocked) or vectors (plain) per tile, parallel loop, kernel
 * width unrolled. */
static void pool_space(const te_tensor *t, int vw, sch_knob_space *sp)
{
    vw = pool_vector_width(t, vw);
    int r = t->n_axes;
    bool blocked = pool_is_blocked(t);
    int64_t width = t->axes[blocked ? r - 2 : r - 1].extent;
    int64_t lanes = blocked ? t->axes[r - 1].extent : vw, per_col = (lanes + vw - 1) / vw;
    static const int64_t cols[] = {1, 2, 3, 4, 6, 7, 8, 14, 16};
    for (size_t i = 0; i < SMELT_ARRAY_LEN(cols); i++)
        if ((blocked ? cols[i] : cols[i] * vw) <= width && cols[i] * per_col <= SCH_KNOB_ACC_MAX &&
            (blocked || cols[i] <= 4))
            add_value(sp, SCH_KNOB_TILE_A, cols[i]);
    add_range(sp, SCH_KNOB_PARALLEL, 1, 3);
    add_range(sp, SCH_KNOB_UNROLL, 1, 2);
}

/* Transposed conversions: W tiles of 1/2 to 16 vectors, the element-wise
 * schedule instead (order 1), parallel or not. */
static void layout_space(const te_tensor *t, int vw, sch_knob_space *sp)
{
    if (vw <= 1) return;
    for (int64_t k = vw / 2; k <= LAYOUT_W_TILE_VECS * vw; k *= 2)
        if (k >= 4) add_value(sp, SCH_KNOB_TILE_A, k);
    add_range(sp, SCH_KNOB_ORDER, 1, 2);
    add_range(sp, SCH_KNOB_PARALLEL, 1, 2);
    (void)t;
}

smelt_status sch_default_space(smelt_ctx *ctx, const te_graph *g, const smelt_hw *hw,
                               sch_knob_space *out)
{
    (void)ctx;
    int vector_width = hw->lanes;
    memset(out, 0, sizeof *out);
    int i;
    rule_kind k = main_stage(g, &i);
    const te_tensor *t = i >= 0 ? g->tensors.items[i] : NULL;
    static const char *const rules[] = {"none", "conv_nchwc", "matmul", "conv", "generic",
                                        "pool", "layout"};
    out->rule = rules[k];
    if (k == RULE_NCHWC) nchwc_space(t, anchor_output(g, t), vector_width, out);
    else if (k == RULE_MATMUL) matmul_space(t, anchor_output(g, t), vector_width, out);
    else if (k == RULE_CONV) conv_space(anchor_output(g, t), out);
    else if (k == RULE_GENERIC) generic_space(g, t, vector_width, out);
    else if (k == RULE_POOL) pool_space(t, vector_width, out);
    else if (k == RULE_LAYOUT) layout_space(t, vector_width, out);
    return SMELT_OK;
}

/* ---- Winograd convolution (sched/winograd.c) ------------------------------
 * The algo knob M >= 2 starts the schedule with `winograd STAGE M` and
 * schedules the rewritten graph: the input transform vectorised along the
 * input channels and parallel over (alpha^2 x tiles), its GEMMs by the
 * matrix-product rule (tile_a = rows, order, parallel as for a matmul;
 * tile_b, unroll and tile_c do not apply and are ignored), the output
 * transform inlined into the fused epilogue's stage, scheduled as an
 * elementwise stage (block lanes vectorised). */

static const te_tensor *winograd_input(const te_graph *g)
{
    for (int i = 0; i < g->tensors.len; i++) {
        const te_tensor *t = g->tensors.items[i];
        if (t->kind == TE_COMPUTE && strcmp(t->tag, "winograd_input") == 0) return t;
    }
    return NULL;
}

/* The rewritten graph, blocked by rows of tiles as oneDNN's Winograd
 * kernels are: the output stage (the output transform inlined into the
 * fused epilogue's last stage) runs parallel over n x tile rows; at each
 * tile row it computes the row's input transform V [alpha^2, row's tiles,
 * Ci] and GEMMs W [alpha^2, row's tiles, Co] (bound inference narrows them
 * to the row), so both stay in L2 and their buffers are small.
 *   V: per tile, per channel vector, every e unrolled (the transform row's
 *      select chain folds to one sum; the tile's loads are shared by all e)
 *   W: the matrix-product rule (knobs tile_a = rows, order), not parallel
 *   out: n, oh.o, co, ow.o, oh.i, ow.i (unrolled: the tile's select chains
 *      fold, its GEMM results are loaded once), lanes vectorised */
static smelt_status schedule_winograd_input(smelt_ctx *ctx, const te_tensor *v, int vw,
                                            sch_schedule *s)
{
    const char *vn = v->buf->name;
    int64_t ci = v->axes[2].extent;
    bool vec = vw > 1 && ci >= vw;
    if (vec) SMELT_TRY(sch_split(ctx, s, vn, "i2", vw));
    const char *order[4] = {"i1", vec ? "i2.o" : "i2", "i0", "i2.i"};
    SMELT_TRY(sch_reorder(ctx, s, vn, vec ? 4 : 3, order));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, vn, "i0"));
    if (vec) SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, vn, "i2.i"));
    return SMELT_OK;
}

static smelt_status schedule_winograd(smelt_ctx *ctx, const te_graph *g, const te_tensor *v,
                                      const smelt_hw *hw, const sch_knobs *kn, sch_schedule *s,
                                      bool *done)
{
    int vw = hw->lanes;
    const te_tensor *mm = sole_consumer(g, v), *t = mm ? sole_consumer(g, mm) : NULL;
    const te_tensor *e = t ? epilogue_output(g, t) : NULL;
    if (!mm || !is_anchor(mm) || !t || strcmp(t->tag, "winograd_output") != 0 || !e ||
        e->n_axes != 5)
        return smelt_errf(ctx, SMELT_ERR_INTERNAL, "winograd: '%s' is not an input transform "
                          "followed by GEMMs and an output transform", v->buf->name);
    int64_t alpha = 1;
    while (alpha * alpha < v->axes[0].extent) alpha++;
    int64_t m = alpha - 2;
    for (const te_tensor *x = t; x != e; x = sole_consumer(g, x)) {
        SMELT_TRY(sch_compute_inline(ctx, s, x->buf->name));
        done[x->index] = true;
    }
    const char *en = e->buf->name;
    const char *ax[5];
    for (int i = 0; i < 5; i++) ax[i] = e->axes[i].var->name;
    char oho[80], ohi[80], owo[80], owi[80], lo[80], li[80];
    iter_name(oho, sizeof oho, ax[2], ".o");
    iter_name(ohi, sizeof ohi, ax[2], ".i");
    iter_name(owo, sizeof owo, ax[3], ".o");
    iter_name(owi, sizeof owi, ax[3], ".i");
    iter_name(lo, sizeof lo, ax[4], ".o");
    iter_name(li, sizeof li, ax[4], ".i");
    int64_t lanes = e->axes[4].extent;
    bool vec = vw > 1 && lanes > 1, split_lanes = vec && lanes > vw;
    SMELT_TRY(sch_split(ctx, s, en, ax[2], m));
    SMELT_TRY(sch_split(ctx, s, en, ax[3], m));
    if (split_lanes) SMELT_TRY(sch_split(ctx, s, en, ax[4], vw));
    const char *order[8] = {ax[0], oho, ax[1], owo, ohi, owi, split_lanes ? lo : ax[4], li};
    SMELT_TRY(sch_reorder(ctx, s, en, split_lanes ? 8 : 7, order));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, en, ohi));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, en, owi));
    if (split_lanes) SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, en, lo));
    if (vec) SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, en, split_lanes ? li : ax[4]));
    done[e->index] = true;
    /* the tile-row loop alone is parallel: a fused index would hide the
     * row's tiles from bound inference (the blocks would cover every tile) */
    const char *row = oho;
    int64_t par = knob(kn, SCH_KNOB_PARALLEL);
    if (par != 1) SMELT_TRY(sch_annotate(ctx, s, SCH_PARALLEL, en, row));
    /* the row's GEMMs: rows x panel tiles over the row's tiles, every e
     * inside a block of rows, whose input transform is computed there */
    const char *mn = mm->buf->name;
    int64_t panel = mm_packed_cols(mm), k = mm->body->reduce.axes[0].extent;
    mm_tile tile = {.vec = vw > 1 && panel % vw == 0, .rows = 1, .vecs = 1};
    tile.cols = panel;
    if (tile.vec) mm_best_tile(e->axes[3].extent / m + 1, panel / vw, k, hw, panel / vw, &tile.rows, &tile.vecs);
    int64_t rows = knob(kn, SCH_KNOB_TILE_A);
    if (rows > 0 && rows <= MM_ROWS_KNOB_MAX) tile.rows = rows;
    /* accumulated in W itself (a block-sized temporary): the input
     * transform is computed at W's row block, which a cache_write stage
     * would hide; the tile's sums stay in registers across k (GCC's store
     * motion, as in the accumulation of a plain reduction) */
    SMELT_TRY(sch_split(ctx, s, mn, "i1", tile.rows));
    SMELT_TRY(sch_split(ctx, s, mn, "i2", panel));
    bool split_vecs = tile.vec && tile.vecs > 1;
    if (split_vecs) SMELT_TRY(sch_split(ctx, s, mn, "i2.i", vw));
    const char *morder[7] = {"i1.o", "i0", "i2.o", "k", "i1.i", split_vecs ? "i2.i.o" : "i2.i", "i2.i.i"};
    SMELT_TRY(sch_reorder(ctx, s, mn, split_vecs ? 7 : 6, morder));
    SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, mn, "i1.i"));
    if (split_vecs) SMELT_TRY(sch_annotate(ctx, s, SCH_UNROLL, mn, "i2.i.o"));
    if (tile.vec) SMELT_TRY(sch_annotate(ctx, s, SCH_VECTORIZE, mn, split_vecs ? "i2.i.i" : "i2.i"));
    SMELT_TRY(sch_compute_at(ctx, s, mn, en, row));
    SMELT_TRY(schedule_winograd_input(ctx, v, vw, s));
    SMELT_TRY(sch_compute_at(ctx, s, v->buf->name, mn, "i1.o"));
    done[v->index] = true;
    done[mm->index] = true;
    return SMELT_OK;
}

/* algo >= 2: the winograd step, then the rewritten graph's schedule. */
static smelt_status schedule_algo(smelt_ctx *ctx, const te_graph *g, const smelt_hw *hw,
                                  const sch_knobs *kn, sch_schedule *s)
{
    int64_t m = knob(kn, SCH_KNOB_ALGO);
    const te_tensor *c = sch_winograd_candidate(g);
    if (!c || !sch_winograd_m_ok(m)) return bad_knob(ctx, c ? c->buf->name : "?", SCH_KNOB_ALGO, m);
    sch_step step = {.kind = SCH_WINOGRAD, .stage = c->buf->name, .factor = m};
    SMELT_TRY(sch_add(ctx, s, &step));
    te_graph *wg = NULL;
    SMELT_TRY(sch_winograd_te(ctx, g, c->buf->name, m, &wg));
    int64_t tiles = ((const te_tensor *)winograd_input(wg))->axes[1].extent;
    int64_t rows = knob(kn, SCH_KNOB_TILE_A);
    sch_knobs k2 = {{0}};
    k2.v[SCH_KNOB_TILE_A] = rows <= MM_ROWS_KNOB_MAX && rows <= tiles ? rows : 0;
    k2.v[SCH_KNOB_ORDER] = knob(kn, SCH_KNOB_ORDER);
    k2.v[SCH_KNOB_PARALLEL] = knob(kn, SCH_KNOB_PARALLEL);
    smelt_status st = sch_default_knobs(ctx, wg, hw, &k2, s);
    te_graph_free(wg);
    return st;
}

/* ---- GPU targets ------------------------------------------------------------
 * One thread per output element: a stage's data axes fused into one loop,
 * split by the block size, the outer part bound to blockIdx.x and the inner
 * to threadIdx.x; its reduction runs inside the thread.  Elementwise
 * intermediates are inlined by the same rules as on CPUs; the other stages
 * are computed at the root, each a kernel of its own (codegen/gpu_emit.c). */
/* Whether every load of buf in e reads the element of the consumer's own
 * point: indices are the consumer's axes in order, or 0 on an axis of
 * extent 1 (an elementwise epilogue). */
typedef struct own_point {
    const ir_buffer *buf;
    const te_tensor *consumer;
    bool ok;
} own_point;

static void check_own_point(void *ctx, const ir_expr *e)
{
    own_point *op = ctx;
    if (!op->ok) return;
    if (e->kind == IR_LOAD && e->load.buf == op->buf) {
        if (e->load.n != op->consumer->n_axes) op->ok = false;
        for (int d = 0; op->ok && d < e->load.n; d++) {
            const ir_expr *ix = e->load.idx[d];
            /* a dimension of extent 1 may be read at 0 (broadcasting ops do) */
            op->ok = (ix->kind == IR_VAR && ix->var == op->consumer->axes[d].var) ||
                     (ir_is_int(ix, 0) && op->consumer->axes[d].extent == 1);
        }
        return;
    }
    tir_expr_visit_children(e, check_own_point, ctx);
}

/* The one stage that reads reduction t, through a chain of inlined
 * elementwise stages each read once, every link reading its producer at
 * its own points (an epilogue: bias, activation): t is then computed inside
 * that stage's thread, its accumulator a private variable (a register)
 * instead of device memory, and the pair is one kernel.  NULL otherwise. */
static const te_tensor *gpu_fusable_reader(const te_graph *g, const te_readers *r,
                                           const bool *inlined, const te_tensor *t)
{
    const te_tensor *cur = t;
    for (int depth = 0; depth < 64; depth++) {
        if (stage_is_output(g, cur) || te_readers_count(r, cur->index) != 1) return NULL;
        const te_tensor *c = g->tensors.items[te_readers_of(r, cur->index)[0]];
        if (c->kind != TE_COMPUTE || c->check || c->n_axes != t->n_axes || c->n_axes == 0 ||
            !c->body || c->body->kind == IR_REDUCE)
            return NULL;
        for (int d = 0; d < c->n_axes; d++)
            if (c->axes[d].extent != t->axes[d].extent) return NULL;
        own_point op = {cur->buf, c, true};
        check_own_point(&op, c->body);
        if (!op.ok) return NULL;
        if (!inlined[c->index]) return c;
        cur = c;
    }
    return NULL;
}

static smelt_status gpu_bind_stage(smelt_ctx *ctx, const te_tensor *t, int threads, sch_schedule *s)
{
    if (t->n_axes == 0) return SMELT_OK; /* a scalar: one thread */
    const char *order[SMELT_MAX_RANK] = {0};
    int64_t total = 1;
    for (int d = 0; d < t->n_axes; d++) {
        order[d] = t->axes[d].var->name;
        total = sat_mul(total, t->axes[d].extent);
    }
    char fused[512], outer[520], inner[520];
    SMELT_TRY(fuse_leading(ctx, s, t->buf->name, order, t->n_axes - 1, fused, sizeof fused));
    SMELT_TRY(sch_split(ctx, s, t->buf->name, fused, total < threads ? (total > 0 ? total : 1) : threads));
    snprintf(outer, sizeof outer, "%s.o", fused);
    snprintf(inner, sizeof inner, "%s.i", fused);
    SMELT_TRY(sch_bind(ctx, s, t->buf->name, outer, "blockIdx.x"));
    return sch_bind(ctx, s, t->buf->name, inner, "threadIdx.x");
}

/* A long reduction with few outputs (a row's softmax sums, a reduction to a
 * scalar) would leave most threads idle: rfactor splits its last reduce axis
 * by the block size, each thread sums its slice into the block's memory
 * (STAGE.rf, computed at STAGE's block), and thread 0 adds the partial sums
 * (block_stmt in gpu_emit.c puts the barrier between). */
#define GPU_RFACTOR_MIN_EXTENT 1024
#define GPU_RFACTOR_MAX_OUTPUTS 256

static bool gpu_wants_rfactor(const te_tensor *t, int threads)
{
    if (!t->body || t->body->kind != IR_REDUCE || t->body->reduce.n_axes == 0) return false;
    int64_t outputs = 1;
    for (int d = 0; d < t->n_axes; d++) outputs = sat_mul(outputs, t->axes[d].extent);
    const ir_axis *r = &t->body->reduce.axes[t->body->reduce.n_axes - 1];
    return outputs <= GPU_RFACTOR_MAX_OUTPUTS && r->extent >= GPU_RFACTOR_MIN_EXTENT &&
           r->extent >= 2 * (int64_t)threads;
}

static smelt_status gpu_rfactor_stage(smelt_ctx *ctx, const te_tensor *t, int threads, sch_schedule *s)
{
    const char *name = t->buf->name;
    const char *r = t->body->reduce.axes[t->body->reduce.n_axes - 1].var->name;
    char rf[520], ri[520], fused[512];
    snprintf(rf, sizeof rf, "%s.rf", name);
    snprintf(ri, sizeof ri, "%s.i", r);
    SMELT_TRY(sch_rfactor(ctx, s, name, r, threads));
    if (t->n_axes > 0) { /* one block per output */
        const char *order[SMELT_MAX_RANK] = {0};
        for (int d = 0; d < t->n_axes; d++) order[d] = t->axes[d].var->name;
        SMELT_TRY(fuse_leading(ctx, s, name, order, t->n_axes - 1, fused, sizeof fused));
        SMELT_TRY(sch_bind(ctx, s, name, fused, "blockIdx.x"));
        SMELT_TRY(sch_compute_at(ctx, s, rf, name, fused));
    }
    return sch_bind(ctx, s, rf, ri, "threadIdx.x");
}

/* SMELT_DEBUG=2: a reduction's tile decision, with its extents (output
 * axes, then reduce axes). */
static void print_tile(const te_tensor *t, const sch_gpu_tile *p, bool planned)
{
    char ext[256];
    int n = 0;
    for (int i = 0; i < t->n_axes && n < (int)sizeof ext - 24; i++)
        n += snprintf(ext + n, sizeof ext - (size_t)n, "%s%lld", i ? "x" : "", (long long)t->axes[i].extent);
    for (int i = 0; i < t->body->reduce.n_axes && n < (int)sizeof ext - 24; i++)
        n += snprintf(ext + n, sizeof ext - (size_t)n, "%s%lld", i ? "x" : " sum ",
                      (long long)t->body->reduce.axes[i].extent);
    ext[n] = 0;
    fprintf(stderr, "smelt: GPU tile for '%s' (%s): %s%s%s (%lld x %lld x %lld threads, %lld x %lld "
            "registers, k step %lld, %lld shared bytes; model %.3g vs one thread per output %.3g)\n",
            t->buf->name, ext, planned ? "tiled" : "not tiled", !planned && p->why ? ": " : "",
            !planned && p->why ? p->why : "", (long long)p->ty, (long long)p->txh,
            (long long)p->txw, (long long)p->tm, (long long)p->tn, (long long)p->kt,
            (long long)p->shared_bytes, p->cost, p->plain_cost);
}

/* The GPU rules at a level: 3 all of them, 2 without tiled matrix
 * products and convolutions (sched/gpu_tile.c), 1 without rfactor either,
 * 0 only the per-stage binding (each stage at the root, which always
 * replays). */
static smelt_status schedule_gpu_level(smelt_ctx *ctx, const te_graph *g, const smelt_hw *hw,
                                       int level, sch_schedule *s)
{
    size_t n = (size_t)g->tensors.len + 1;
    bool *inlined = smelt_calloc(n, sizeof *inlined);
    expr_size *memo = smelt_calloc(n, sizeof *memo);
    /* tiles: per tensor, the plan whose loops it gets (tile_of: its index + 1),
     * and the reductions scheduled through another stage's plan */
    sch_gpu_tile *tiles = smelt_calloc(n, sizeof *tiles);
    int *tile_of = smelt_calloc(n, sizeof *tile_of);
    bool *tiled = smelt_calloc(n, sizeof *tiled);
    te_readers readers;
    inline_plan plan = {g, &readers, inlined, memo};
    smelt_status st = te_readers_build(ctx, g, &readers);
    if (st == SMELT_OK && (!inlined || !memo || !tiles || !tile_of || !tiled))
        st = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; st == SMELT_OK && i < g->tensors.len; i++) {
        const te_tensor *t = g->tensors.items[i];
        if (t->kind != TE_COMPUTE || t->check) continue;
        bool is_reduce = t->body && t->body->kind == IR_REDUCE;
        if (!stage_is_output(g, t) && !is_reduce && !costly_and_shared(&plan, t) && inline_fits(&plan, t))
            st = sch_compute_inline(ctx, s, t->buf->name);
    }
    /* matrix products and convolutions in 2-D block tiles; the stage that
     * gets the loops is the reduction's epilogue, else the reduction itself */
    for (int i = 0; st == SMELT_OK && level >= 3 && i < g->tensors.len; i++) {
        const te_tensor *t = g->tensors.items[i];
        if (t->kind != TE_COMPUTE || t->check || inlined[i] || !t->body || t->body->kind != IR_REDUCE)
            continue;
        const te_tensor *c = gpu_fusable_reader(g, &readers, inlined, t);
        const te_tensor *out = c ? c : t;
        sch_gpu_tile p = {0};
        bool planned = !tile_of[out->index] && sch_gpu_tile_plan(g, t, inlined, hw, &p);
        if (smelt_debug_level() >= 2 && p.acc == t) print_tile(t, &p, planned);
        if (!planned) continue;
        tiles[out->index] = p;
        tile_of[out->index] = out->index + 1;
        tiled[i] = out != t;
    }
    /* readers before the reductions computed inside them (compute_at names
     * the reader's thread loop) */
    for (int i = g->tensors.len - 1; st == SMELT_OK && i >= 0; i--) {
        const te_tensor *t = g->tensors.items[i];
        if (t->kind != TE_COMPUTE || t->check || inlined[i] || tiled[i]) continue;
        if (tile_of[i]) {
            st = sch_gpu_tile_steps(ctx, &tiles[i], t, s);
            continue;
        }
        bool is_reduce = t->body && t->body->kind == IR_REDUCE;
        const te_tensor *c =
            is_reduce && level >= 1 ? gpu_fusable_reader(g, &readers, inlined, t) : NULL;
        if (!c && level >= 2 && gpu_wants_rfactor(t, hw->gpu_threads)) {
            st = gpu_rfactor_stage(ctx, t, hw->gpu_threads, s);
            continue;
        }
        if (!c) {
            st = gpu_bind_stage(ctx, t, hw->gpu_threads, s);
            continue;
        }
        char at[520];
        snprintf(at, sizeof at, "%s", c->axes[0].var->name);
        for (int d = 1; d < c->n_axes; d++) {
            size_t len = strlen(at);
            snprintf(at + len, sizeof at - len, ".%s", c->axes[d].var->name);
        }
        strncat(at, ".i", sizeof at - strlen(at) - 1);
        st = sch_compute_at(ctx, s, t->buf->name, c->buf->name, at);
    }
    smelt_free(inlined);
    smelt_free(memo);
    smelt_free(tiles);
    smelt_free(tile_of);
    smelt_free(tiled);
    te_readers_free(&readers);
    return st;
}

/* A group the fusing rules (compute_at, rfactor) do not fit replays with
 * fewer of them rather than failing the compile. */
static smelt_status schedule_gpu(smelt_ctx *ctx, const te_graph *g, const smelt_hw *hw,
                                 sch_schedule *s)
{
    for (int level = 3; level > 0; level--) {
        sch_schedule trial;
        sch_schedule_init(&trial);
        smelt_ctx local = {.status = SMELT_OK};
        sch_state *st = NULL;
        smelt_status r = schedule_gpu_level(&local, g, hw, level, &trial);
        if (r == SMELT_OK) r = sch_state_build(&local, g, &trial, &st);
        sch_state_free(st);
        for (int i = 0; r == SMELT_OK && i < trial.n; i++) r = sch_add(ctx, s, &trial.steps[i]);
        sch_schedule_fini(&trial);
        if (r == SMELT_OK) return SMELT_OK;
        if (local.status == SMELT_ERR_NOMEM || smelt_ctx_status(ctx) != SMELT_OK)
            return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        if (smelt_debug_level() >= 1)
            fprintf(stderr, "smelt: GPU schedule level %d does not replay (%s): fewer rules\n", level,
                    local.message);
    }
    return schedule_gpu_level(ctx, g, hw, 0, s);
}

smelt_status sch_default_knobs(smelt_ctx *ctx, const te_graph *g, const smelt_hw *hw,
                               const sch_knobs *kn, sch_schedule *s)
{
    int vector_width = hw->lanes;
    if (hw->gpu_threads > 0) {
        for (int k = 0; k < SCH_KNOB_COUNT_; k++)
            if (kn && kn->v[k]) return bad_knob(ctx, "?", (sch_knob)k, kn->v[k]);
        /* SMELT_GPU_BLOCK=N: blocks of N threads instead of the target's (a
         * power of two up to 1024; tests run the CUDA target's 256-thread
         * tiles on PoCL with it) */
        smelt_hw local = *hw;
        const char *env = getenv("SMELT_GPU_BLOCK");
        long n = env ? strtol(env, NULL, 10) : 0;
        if (n >= 1 && n <= 1024 && (n & (n - 1)) == 0) local.gpu_threads = (int)n;
        return schedule_gpu(ctx, g, &local, s);
    }
    int64_t algo = knob(kn, SCH_KNOB_ALGO);
    if (algo >= 2) return schedule_algo(ctx, g, hw, kn, s);
    if (algo < 0 || (algo == 1 && !sch_winograd_candidate(g)))
        return bad_knob(ctx, "?", SCH_KNOB_ALGO, algo);
    size_t n = (size_t)g->tensors.len + 1;
    bool *done = smelt_calloc(n, sizeof *done), *inlined = smelt_calloc(n, sizeof *inlined);
    expr_size *memo = smelt_calloc(n, sizeof *memo);
    te_readers readers;
    inline_plan plan = {g, &readers, inlined, memo};
    smelt_status st = te_readers_build(ctx, g, &readers);
    if (st == SMELT_OK && (!done || !inlined || !memo)) st = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    int main_i;
    main_stage(g, &main_i);
    const te_tensor *wino = winograd_input(g);
    if (wino && st == SMELT_OK) {
        st = schedule_winograd(ctx, g, wino, hw, kn, s, done);
        main_i = -1;
    }
    for (int i = 0; st == SMELT_OK && i < g->tensors.len; i++)
        if (!done[i]) st = try_anchor(ctx, g, g->tensors.items[i], hw, i == main_i ? kn : NULL, s,
                        done);
    for (int i = 0; st == SMELT_OK && i < g->tensors.len; i++)
        if (!done[i])
            st = try_pool(ctx, g, g->tensors.items[i], vector_width, i == main_i ? kn : NULL, s,
                          done);
    for (int i = 0; st == SMELT_OK && i < g->tensors.len; i++)
        if (!done[i])
            st = try_layout(ctx, g, g->tensors.items[i], vector_width, i == main_i ? kn : NULL, s,
                            done);
    for (int i = 0; st == SMELT_OK && i < g->tensors.len; i++) {
        const te_tensor *t = g->tensors.items[i];
        if (t->kind != TE_COMPUTE || done[i]) continue;
        st = schedule_generic(ctx, g, t, vector_width, i == main_i ? kn : NULL, s, &plan);
    }
    smelt_free(done);
    smelt_free(inlined);
    smelt_free(memo);
    te_readers_free(&readers);
    return st;
}

static smelt_status schedule_generic(smelt_ctx *ctx, const te_graph *g, const te_tensor *t,
                                     int vector_width, const sch_knobs *kn, sch_schedule *s,
                                     inline_plan *plan)
{
    {
        if (t->check) return SMELT_OK; /* a serial pass over the checked data is cheap */
        bool is_reduce = t->body && t->body->kind == IR_REDUCE;
        if (!stage_is_output(g, t) && !is_reduce && !costly_and_shared(plan, t) &&
            inline_fits(plan, t))
            return sch_compute_inline(ctx, s, t->buf->name);
        bool rule_knobs = !knob(kn, SCH_KNOB_PARALLEL) && !knob(kn, SCH_KNOB_UNROLL) &&
                          !knob(kn, SCH_KNOB_ORDER);
        if (rule_knobs && reads_row_reduction(g, t, vector_width))
            return schedule_rows(ctx, t, vector_width, s);
        return schedule_stage(ctx, t, vector_width, kn, s);
    }
}
