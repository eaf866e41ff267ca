/* Loop-IR features for the cost model (see features.h).
 *
 * One walk over the function body keeps the enclosing loops (trip counts
 * from tir_bounds under a tir_scope of the outer loops, so partitioned
 * loops with min/max extents count with their upper bound), the number of
 * times the current statement runs, and which annotated loops enclose it.
 * Every expression adds its operations times that count; every load and
 * store adds an access to its buffer, with the index's affine form
 * (tir/affine.h) giving the stride along the innermost loop and the reuse
 * loop.  Counts are doubles: trip-count products overflow int64 on
 * nonsense schedules, and the features are logs anyway. */
#include "tune/features.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tir/affine.h"
#include "tir/bounds.h"
#include "tir/scalar.h"

#define FT_MAX_DEPTH 128
#define FT_STMT_BUFS 16 /* buffers of one statement tracked per loop level */

typedef struct ft_loop {
    const ir_var *var;
    double trip;
    ir_for_kind kind;
} ft_loop;

typedef enum ft_stride { FT_UNIT, FT_BROADCAST, FT_STRIDED } ft_stride;

/* What the walk knows about one buffer. */
typedef struct ft_buf {
    const ir_buffer *buf;
    double loads, stores;   /* elements */
    tir_interval span;      /* union of the flat index ranges */
    double dom_n;           /* accesses of the most executed access site */
    ft_stride stride_class; /* ... and that site's stride, reuse distance */
    double stride, reuse_dist;
} ft_buf;

/* Operations of one expression, per execution. */
typedef struct ft_ops {
    double add, mul, div, cmp, fma, math, iops, sel, loads;
} ft_ops;

/* Bytes one statement touches in each of its innermost loop levels, per
 * buffer (the largest of the buffer's accesses). */
typedef struct ft_level_acc {
    const ir_buffer *buf;
    double bytes[TUNE_FEATURE_LEVELS];
} ft_level_acc;

/* The loop nest around the dominant store (most float work). */
typedef struct ft_dom {
    double flops, count;
    double level_bytes[TUNE_FEATURE_LEVELS], level_flops[TUNE_FEATURE_LEVELS];
    int depth;
    double inner_ext, vec_lanes, unroll, par_ext, outer_serial;
    ir_for_kind inner_kind;
    bool set;
} ft_dom;

typedef struct ft_walk {
    smelt_ctx *ctx;
    smelt_status status;
    tir_scope scope;
    ft_loop loops[FT_MAX_DEPTH];
    int depth;
    double count;       /* executions of the current statement */
    int in_vec, in_par, in_unroll, in_if;
    double unroll_mult; /* product of the enclosing unrolled trips: copies of the code */
    ft_buf *bufs;
    int n_bufs, cap_bufs;
    double g[TUNE_F_GLOBAL_COUNT_]; /* raw sums behind the global slots */
    double par_iters;   /* iterations of outermost parallel loops */
    double par_flops;
    double temp_min;
    ft_level_acc lv[FT_STMT_BUFS]; /* the current statement's accesses */
    int n_lv;
    ft_dom dom;
} ft_walk;

static void ft_fail(ft_walk *w, smelt_status code, const char *what)
{
    if (w->status == SMELT_OK) w->status = smelt_errf(w->ctx, code, "tune_features: %s", what);
}

static double elem_bytes(const ir_buffer *b) { return (double)smelt_dtype_size(b->dtype); }

static double buf_numel(const ir_buffer *b)
{
    double n = 1;
    for (int i = 0; i < b->rank; i++) n *= (double)b->shape[i];
    return n;
}

/* ---- buffers and accesses ---- */

static ft_buf *buf_entry(ft_walk *w, const ir_buffer *b)
{
    for (int i = 0; i < w->n_bufs; i++)
        if (w->bufs[i].buf == b) return &w->bufs[i];
    if (w->n_bufs == w->cap_bufs) {
        int cap = w->cap_bufs ? 2 * w->cap_bufs : 16;
        ft_buf *nb = smelt_realloc(w->bufs, sizeof *nb * (size_t)w->cap_bufs, sizeof *nb * (size_t)cap);
        if (!nb) {
            ft_fail(w, SMELT_ERR_NOMEM, "out of memory");
            return NULL;
        }
        w->bufs = nb;
        w->cap_bufs = cap;
    }
    ft_buf *e = &w->bufs[w->n_bufs++];
    *e = (ft_buf){.buf = b, .span = tir_interval_point(0)};
    e->span.lo_inf = true; /* empty until the first access */
    return e;
}

/* Flat index of buf[idx...] as an affine form and an interval (row-major
 * when the access is not flattened yet). */
static tir_interval index_form(ft_walk *w, const ir_buffer *buf, int n, ir_expr *const *idx,
                               tir_affine *f)
{
    tir_interval iv = tir_interval_point(0);
    int64_t stride = 1;
    for (int d = n - 1; d >= 0; d--) {
        tir_affine_add_expr(f, idx[d], stride);
        iv = tir_interval_add(iv, tir_interval_mul_const(tir_bounds(idx[d], &w->scope), stride));
        if (d > 0 && n == buf->rank && __builtin_mul_overflow(stride, buf->shape[d], &stride))
            f->failed = true;
    }
    return iv;
}

/* Does loop l move the index (as a plain term or inside a non-affine atom)? */
static bool moves(const tir_affine *f, const ft_loop *l, int64_t *coef)
{
    *coef = f->failed ? 1 : tir_affine_coef(f, l->var);
    return *coef != 0 || f->failed || tir_affine_var_in_atoms(f, l->var);
}

/* Innermost loop that runs more than once, or -1. */
static int innermost(const ft_walk *w)
{
    int l = w->depth - 1;
    while (l >= 0 && w->loops[l].trip <= 1) l--;
    return l;
}

/* Elements the loops inside loop `from` touch: the index span along the
 * loops that move it, capped at their iteration count. */
static double inner_footprint(const ft_walk *w, const tir_affine *f, int from)
{
    double span = 1, prod = 1;
    for (int k = from + 1; k < w->depth; k++) {
        int64_t c;
        if (!moves(f, &w->loops[k], &c) || w->loops[k].trip <= 1) continue;
        double step = c == 0 ? 1 : fabs((double)c);
        span += step * (w->loops[k].trip - 1);
        prod *= w->loops[k].trip;
    }
    return span < prod ? span : prod;
}

/* The reuse loop is the innermost (non-trivial) loop that does not move the
 * index: the element comes back once per iteration of it, after the inner
 * loops' footprint has gone through the cache. */
static void site_shape(ft_walk *w, const tir_affine *f, ft_buf *e)
{
    int in = innermost(w);
    int64_t c = 0;
    if (in < 0 || !moves(f, &w->loops[in], &c)) {
        e->stride_class = FT_BROADCAST;
        e->stride = 0;
    } else {
        bool affine = !f->failed && !tir_affine_var_in_atoms(f, w->loops[in].var);
        e->stride_class = affine && (c == 1 || c == -1) ? FT_UNIT : FT_STRIDED;
        e->stride = fabs((double)c);
    }
    e->reuse_dist = 0;
    for (int l = in; l >= 0; l--) {
        if (w->loops[l].trip <= 1 || moves(f, &w->loops[l], &c)) continue;
        e->reuse_dist = inner_footprint(w, f, l) * elem_bytes(e->buf);
        break;
    }
}

/* Index of the outermost loop of level i (1-based): the i-th loop from
 * inside that runs more than once, 0 (the whole nest) when there are fewer. */
static int level_loop(const ft_walk *w, int i)
{
    for (int l = w->depth - 1; l >= 0; l--)
        if (w->loops[l].trip > 1 && --i == 0) return l;
    return 0;
}

/* Record what an access of the current statement touches at each level;
 * tile_elems > 1 for a micro-kernel operand (a tile per call). */
static void note_levels(ft_walk *w, const ir_buffer *buf, const tir_affine *f, double tile_elems)
{
    ft_level_acc *a = NULL;
    for (int i = 0; i < w->n_lv && !a; i++)
        if (w->lv[i].buf == buf) a = &w->lv[i];
    if (!a && w->n_lv == FT_STMT_BUFS) return; /* an unusual statement: the rest is left out */
    if (!a) a = &w->lv[w->n_lv++], *a = (ft_level_acc){.buf = buf};
    for (int i = 0; i < TUNE_FEATURE_LEVELS; i++) {
        double b = inner_footprint(w, f, level_loop(w, i + 1) - 1) * tile_elems * elem_bytes(buf);
        if (b > a->bytes[i]) a->bytes[i] = b;
    }
}

static void add_access(ft_walk *w, const ir_buffer *buf, int n, ir_expr *const *idx, bool store)
{
    ft_buf *e = buf_entry(w, buf);
    if (!e) return;
    tir_affine f;
    tir_affine_init(&f);
    tir_interval iv = index_form(w, buf, n, idx, &f);
    if (!tir_interval_is_bounded(iv)) iv = tir_interval_range(0, (int64_t)buf_numel(buf) - 1);
    e->span = e->span.lo_inf ? iv : tir_interval_union(e->span, iv);
    if (store)
        e->stores += w->count;
    else
        e->loads += w->count;
    if (w->count > e->dom_n) {
        e->dom_n = w->count;
        site_shape(w, &f, e);
    }
    note_levels(w, buf, &f, 1);
    tir_affine_fini(&f);
}

/* ---- expressions ---- */

static bool is_float_mul(const ir_expr *e) { return e->kind == IR_MUL && tir_dtype_is_float(e->dtype); }

static void expr_ops(ft_walk *w, const ir_expr *e, ft_ops *o);

static void arith_ops(ft_walk *w, const ir_expr *e, ft_ops *o)
{
    if (!tir_dtype_is_float(e->dtype)) {
        o->iops++;
    } else if (e->kind == IR_ADD || e->kind == IR_SUB) {
        o->add++;
        if (is_float_mul(e->bin.a) || is_float_mul(e->bin.b)) o->fma++;
    } else if (e->kind == IR_MUL) {
        o->mul++;
    } else if (e->kind == IR_DIV || e->kind == IR_MOD) {
        o->div++;
    } else {
        o->cmp++; /* min, max */
    }
    expr_ops(w, e->bin.a, o);
    expr_ops(w, e->bin.b, o);
}

static void logic_ops(ft_walk *w, const ir_expr *e, ft_ops *o)
{
    if (e->kind != IR_NOT && e->kind != IR_AND && e->kind != IR_OR && tir_dtype_is_float(e->bin.a->dtype))
        o->cmp++;
    else
        o->iops++;
    expr_ops(w, e->bin.a, o);
    if (e->kind != IR_NOT) expr_ops(w, e->bin.b, o);
}

static void expr_ops(ft_walk *w, const ir_expr *e, ft_ops *o)
{
    if (!e || w->status != SMELT_OK) return;
    if (e->kind >= IR_ADD && e->kind <= IR_SHR) return arith_ops(w, e, o);
    if (e->kind >= IR_EQ && e->kind <= IR_NOT) return logic_ops(w, e, o);
    switch (e->kind) {
    case IR_SELECT:
        o->sel++;
        expr_ops(w, e->select.cond, o);
        expr_ops(w, e->select.t, o);
        expr_ops(w, e->select.f, o);
        return;
    case IR_CAST: expr_ops(w, e->bin.a, o); return;
    case IR_CALL:
        o->math++;
        for (int i = 0; i < e->call.n; i++) expr_ops(w, e->call.args[i], o);
        return;
    case IR_LOAD:
        o->loads++;
        for (int i = 0; i < e->load.n; i++) expr_ops(w, e->load.idx[i], o);
        add_access(w, e->load.buf, e->load.n, e->load.idx, false);
        return;
    case IR_REDUCE: ft_fail(w, SMELT_ERR_ARG, "the function is not lowered (it holds a te reduction)"); return;
    default: return; /* immediates, variables */
    }
}

static double ops_flops(const ft_ops *o) { return o->add + o->mul + o->div + o->cmp + o->math; }

/* Add one statement's operations, run w->count times. */
static void add_ops(ft_walk *w, const ft_ops *o)
{
    double n = w->count, fl = ops_flops(o) * n;
    w->g[TUNE_F_FLOAT_ADD] += o->add * n;
    w->g[TUNE_F_FLOAT_MUL] += o->mul * n;
    w->g[TUNE_F_FLOAT_DIV] += o->div * n;
    w->g[TUNE_F_FLOAT_CMP] += o->cmp * n;
    w->g[TUNE_F_FLOAT_FMA] += o->fma * n;
    w->g[TUNE_F_MATH_CALLS] += o->math * n;
    w->g[TUNE_F_INT_OPS] += o->iops * n;
    w->g[TUNE_F_SELECTS] += o->sel * n;
    w->g[TUNE_F_LOADS] += o->loads * n;
    w->g[TUNE_F_FLOPS] += fl;
    if (w->in_vec) w->g[TUNE_F_VEC_SHARE] += fl;
    if (w->in_par) w->par_flops += fl;
    if (w->in_unroll) w->g[TUNE_F_UNROLL_SHARE] += fl;
    if (w->in_if) w->g[TUNE_F_GUARD_SHARE] += fl;
    w->g[TUNE_F_CODE_SIZE] += (ops_flops(o) + o->loads + 1) * w->unroll_mult;
}

static void expr_count(ft_walk *w, const ir_expr *e)
{
    ft_ops o = {0};
    expr_ops(w, e, &o);
    add_ops(w, &o);
}

/* ---- statements ---- */

/* Remember the loop nest of the store doing the most float work (ties: the
 * one run most often, then the first). */
static void consider_dominant(ft_walk *w, double flops)
{
    ft_dom *d = &w->dom;
    double work = flops * w->count;
    if (d->set && (work < d->flops * d->count || (work == d->flops * d->count && w->count <= d->count)))
        return;
    *d = (ft_dom){.flops = flops, .count = w->count, .depth = w->depth, .inner_ext = 1,
                  .vec_lanes = 1, .unroll = 1, .par_ext = 1, .outer_serial = 1,
                  .inner_kind = IR_FOR_SERIAL, .set = true};
    int in = innermost(w);
    if (in >= 0) d->inner_ext = w->loops[in].trip, d->inner_kind = w->loops[in].kind;
    for (int i = 0; i < TUNE_FEATURE_LEVELS; i++) {
        double runs = 1;
        for (int l = level_loop(w, i + 1); l < w->depth; l++) runs *= w->loops[l].trip;
        d->level_flops[i] = flops * runs;
        for (int k = 0; k < w->n_lv; k++) d->level_bytes[i] += w->lv[k].bytes[i];
    }
    bool seen_par = false;
    for (int l = 0; l < w->depth; l++) {
        const ft_loop *lp = &w->loops[l];
        if (lp->kind == IR_FOR_VECTORIZED) d->vec_lanes *= lp->trip;
        if (lp->kind == IR_FOR_UNROLLED) d->unroll *= lp->trip;
        if (lp->kind == IR_FOR_PARALLEL) d->par_ext *= lp->trip, seen_par = true;
        if (!seen_par && lp->kind == IR_FOR_SERIAL) d->outer_serial *= lp->trip;
    }
}

static void walk_stmt(ft_walk *w, const ir_stmt *s);

static void store_stmt(ft_walk *w, const ir_stmt *s)
{
    ft_ops o = {0};
    w->n_lv = 0;
    for (int i = 0; i < s->store.n; i++) expr_ops(w, s->store.idx[i], &o);
    expr_ops(w, s->store.value, &o);
    add_ops(w, &o);
    w->g[TUNE_F_STORES] += w->count;
    add_access(w, s->store.buf, s->store.n, s->store.idx, true);
    consider_dominant(w, ops_flops(&o));
}

/* Upper bound of an integer argument under the current scope (1 when unknown). */
static double arg_upper(ft_walk *w, const ir_expr *e)
{
    tir_interval iv = tir_bounds(e, &w->scope);
    return iv.hi_inf ? 1 : iv.hi < 0 ? 0 : (double)iv.hi;
}

/* One operand tile of a micro-kernel: rows x cols elements from &buf[base]
 * with strides (ld_r, ld_c), accessed n_acc times per call. */
static void kernel_operand(ft_walk *w, const ir_call_arg *a, double rows, double cols, double ld_r,
                           double ld_c, double n_acc, bool store, ft_stride cls)
{
    ft_buf *e = buf_entry(w, a->buf);
    if (!e) return;
    tir_interval base = tir_bounds(a->index, &w->scope);
    double reach = (rows > 0 ? rows - 1 : 0) * fabs(ld_r) + (cols > 0 ? cols - 1 : 0) * fabs(ld_c);
    tir_interval iv = tir_interval_add(base, tir_interval_range(0, (int64_t)fmin(reach, 1e15)));
    if (!tir_interval_is_bounded(iv)) iv = tir_interval_range(0, (int64_t)buf_numel(a->buf) - 1);
    e->span = e->span.lo_inf ? iv : tir_interval_union(e->span, iv);
    double n = w->count * n_acc;
    if (store)
        e->stores += n;
    else
        e->loads += n;
    if (n > e->dom_n) {
        e->dom_n = n;
        e->stride_class = cls;
        e->stride = cls == FT_UNIT ? 1 : cls == FT_BROADCAST ? 0 : fabs(ld_c);
        e->reuse_dist = 0;
    }
    tir_affine f;
    tir_affine_init(&f);
    tir_affine_add_expr(&f, a->index, 1);
    note_levels(w, a->buf, &f, rows * cols);
    tir_affine_fini(&f);
}

/* smelt.transpose_f32(dst, src, M, N, ldd, lds) (sched.h): M x N floats
 * moved, no arithmetic; both sides read or written along their unit stride. */
static void transpose_call(ft_walk *w, const ir_stmt *s)
{
    const ir_call_arg *a = s->call.args;
    w->n_lv = 0;
    double m = arg_upper(w, a[2].index), n = arg_upper(w, a[3].index);
    double ldd = arg_upper(w, a[4].index), lds = arg_upper(w, a[5].index);
    w->g[TUNE_F_KERNEL_CALL] = 1;
    w->g[TUNE_F_LOADS] += m * n * w->count;
    w->g[TUNE_F_STORES] += m * n * w->count;
    w->g[TUNE_F_CODE_SIZE] += w->unroll_mult;
    kernel_operand(w, &a[0], m, n, ldd, 1, m * n, true, FT_UNIT);
    kernel_operand(w, &a[1], n, m, lds, 1, m * n, false, FT_UNIT);
    consider_dominant(w, 0);
}

/* smelt.gemm_f32(C, A, B, M, N, K, ldc, lda_i, lda_k, ldb_k, ldb_j)
 * (sched.h): C[M x N] += A[M x K] * B[K x N], j the vector axis. */
static void call_stmt(ft_walk *w, const ir_stmt *s)
{
    if (strcmp(s->call.kernel, "smelt.transpose_f32") == 0 && s->call.n == 6) {
        transpose_call(w, s);
        return;
    }
    if (strcmp(s->call.kernel, "smelt.gemm_f32") != 0 || s->call.n != 11) {
        ft_fail(w, SMELT_ERR_UNSUPPORTED, "a call to a micro-kernel without a feature description");
        return;
    }
    const ir_call_arg *a = s->call.args;
    w->n_lv = 0;
    double m = arg_upper(w, a[3].index), n = arg_upper(w, a[4].index), k = arg_upper(w, a[5].index);
    double ld[5];
    for (int i = 0; i < 5; i++) ld[i] = arg_upper(w, a[6 + i].index);
    double fma = m * n * k * w->count;
    w->g[TUNE_F_FLOAT_ADD] += fma;
    w->g[TUNE_F_FLOAT_MUL] += fma;
    w->g[TUNE_F_FLOAT_FMA] += fma;
    w->g[TUNE_F_FLOPS] += 2 * fma;
    w->g[TUNE_F_KERNEL_FLOPS] += 2 * fma;
    w->g[TUNE_F_KERNEL_CALL] = 1;
    w->g[TUNE_F_LOADS] += (m * n + m * k + k * n) * w->count;
    w->g[TUNE_F_STORES] += m * n * w->count;
    w->g[TUNE_F_VEC_SHARE] += 2 * fma; /* the kernels are vector code */
    if (w->in_par) w->par_flops += 2 * fma;
    if (w->in_if) w->g[TUNE_F_GUARD_SHARE] += 2 * fma;
    w->g[TUNE_F_CODE_SIZE] += w->unroll_mult;
    kernel_operand(w, &a[0], m, n, ld[0], 1, m * n, false, FT_UNIT);
    kernel_operand(w, &a[0], m, n, ld[0], 1, m * n, true, FT_UNIT);
    kernel_operand(w, &a[1], m, k, ld[1], ld[2], m * k, false, FT_BROADCAST);
    kernel_operand(w, &a[2], k, n, ld[3], ld[4], k * n, false, ld[4] == 1 ? FT_UNIT : FT_STRIDED);
    consider_dominant(w, 2 * m * n * k);
}

static void for_stmt(ft_walk *w, const ir_stmt *s)
{
    if (w->depth == FT_MAX_DEPTH) {
        ft_fail(w, SMELT_ERR_LIMIT, "loop nest deeper than 128");
        return;
    }
    ir_for_kind k = s->for_.kind;
    expr_count(w, s->for_.min);
    expr_count(w, s->for_.extent);
    double trip = arg_upper(w, s->for_.extent);
    if (s->for_.extent->kind != IR_INT) w->g[TUNE_F_NONCONST_LOOPS]++;
    if (w->depth == 0) w->g[TUNE_F_NESTS]++;
    if (k == IR_FOR_VECTORIZED) w->g[TUNE_F_VEC_LOOPS]++;
    if (k == IR_FOR_UNROLLED) w->g[TUNE_F_UNROLL_LOOPS]++;
    if (k == IR_FOR_PARALLEL) w->g[TUNE_F_PAR_LOOPS]++;
    int mark = tir_scope_mark(&w->scope);
    if (!tir_scope_push_for(&w->scope, s)) ft_fail(w, SMELT_ERR_NOMEM, "out of memory");
    double count = w->count, unroll = w->unroll_mult;
    w->loops[w->depth++] = (ft_loop){s->for_.var, trip, k};
    if (w->depth > w->g[TUNE_F_MAX_DEPTH]) w->g[TUNE_F_MAX_DEPTH] = w->depth;
    w->count *= trip;
    w->g[TUNE_F_ITERATIONS] += w->count;
    if (k == IR_FOR_PARALLEL && !w->in_par) w->par_iters += w->count;
    if (k == IR_FOR_UNROLLED) w->unroll_mult *= trip;
    w->in_vec += k == IR_FOR_VECTORIZED;
    w->in_par += k == IR_FOR_PARALLEL;
    w->in_unroll += k == IR_FOR_UNROLLED;
    walk_stmt(w, s->for_.body);
    w->in_vec -= k == IR_FOR_VECTORIZED;
    w->in_par -= k == IR_FOR_PARALLEL;
    w->in_unroll -= k == IR_FOR_UNROLLED;
    w->depth--;
    w->count = count;
    w->unroll_mult = unroll;
    tir_scope_pop_to(&w->scope, mark);
}

static void alloc_stmt(ft_walk *w, const ir_stmt *s)
{
    double bytes = buf_numel(s->alloc.buf) * elem_bytes(s->alloc.buf);
    w->g[TUNE_F_TEMP_BYTES] += bytes;
    if (w->temp_min == 0 || bytes < w->temp_min) w->temp_min = bytes;
    w->g[TUNE_F_ALLOCS_RUN] += w->count;
    walk_stmt(w, s->alloc.body);
}

static void walk_stmt(ft_walk *w, const ir_stmt *s)
{
    if (!s || w->status != SMELT_OK) return;
    switch (s->kind) {
    case IR_STMT_FOR: for_stmt(w, s); return;
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++) walk_stmt(w, s->seq.items[i]);
        return;
    case IR_STMT_LET: {
        expr_count(w, s->let.value);
        int mark = tir_scope_mark(&w->scope);
        if (!tir_scope_push(&w->scope, s->let.var, tir_bounds(s->let.value, &w->scope)))
            ft_fail(w, SMELT_ERR_NOMEM, "out of memory");
        walk_stmt(w, s->let.body);
        tir_scope_pop_to(&w->scope, mark);
        return;
    }
    case IR_STMT_STORE: store_stmt(w, s); return;
    case IR_STMT_ALLOCATE: alloc_stmt(w, s); return;
    case IR_STMT_IF: {
        ft_ops o = {.sel = 1};
        expr_ops(w, s->if_.cond, &o);
        add_ops(w, &o);
        w->in_if++;
        walk_stmt(w, s->if_.then_);
        walk_stmt(w, s->if_.else_);
        w->in_if--;
        return;
    }
    case IR_STMT_CALL: call_stmt(w, s); return;
    case IR_STMT_CHECK: { /* the test runs every time; the report only on bad data */
        ft_ops o = {.sel = 1};
        expr_ops(w, s->check.cond, &o);
        add_ops(w, &o);
        return;
    }
    default: ft_fail(w, SMELT_ERR_INTERNAL, "unknown statement kind"); return;
    }
}

/* ---- the feature vector ---- */

static float lg(double x) { return (float)log2(1.0 + (x > 0 ? x : 0)); }
static float share(double part, double whole) { return whole > 0 ? (float)(part / whole) : 0.0f; }

static double unique_elems(const ft_buf *e)
{
    double span = e->span.lo_inf ? 0 : (double)e->span.hi - (double)e->span.lo + 1;
    double n = buf_numel(e->buf), acc = e->loads + e->stores;
    if (span > n) span = n;
    return span < acc ? span : acc;
}

static void buffer_slots(const ft_buf *e, float *o)
{
    double acc = e->loads + e->stores, uniq = unique_elems(e);
    o[TUNE_FB_BYTES] = lg(acc * elem_bytes(e->buf));
    o[TUNE_FB_UNIQUE_BYTES] = lg(uniq * elem_bytes(e->buf));
    o[TUNE_FB_REUSE] = lg(uniq > 0 ? acc / uniq : 0);
    o[TUNE_FB_UNIT] = e->stride_class == FT_UNIT;
    o[TUNE_FB_BROADCAST] = e->stride_class == FT_BROADCAST;
    o[TUNE_FB_STRIDED] = e->stride_class == FT_STRIDED;
    o[TUNE_FB_STRIDE] = lg(e->stride);
    o[TUNE_FB_REUSE_DIST] = lg(e->reuse_dist);
    o[TUNE_FB_WRITE_SHARE] = share(e->stores, acc);
    o[TUNE_FB_TEMP] = e->buf->kind == IR_BUF_TEMP;
}

static double bytes_accessed(const ft_buf *e) { return (e->loads + e->stores) * elem_bytes(e->buf); }

/* Does buffer i come before buffer j: more bytes accessed, then first seen? */
static bool ranks_before(const ft_walk *w, int i, int j)
{
    double bi = bytes_accessed(&w->bufs[i]), bj = bytes_accessed(&w->bufs[j]);
    return bi > bj || (bi == bj && i < j);
}

/* The TUNE_FEATURE_BUFFERS buffers with the most bytes accessed: slot s
 * takes the best buffer ranking after slot s-1's. */
static void top_buffers(const ft_walk *w, float *out)
{
    int prev = -1;
    for (int slot = 0; slot < TUNE_FEATURE_BUFFERS; slot++) {
        int best = -1;
        for (int i = 0; i < w->n_bufs; i++)
            if ((prev < 0 || ranks_before(w, prev, i)) && (best < 0 || ranks_before(w, i, best))) best = i;
        if (best < 0) break;
        prev = best;
        buffer_slots(&w->bufs[best], out + TUNE_F_GLOBAL_COUNT_ + slot * TUNE_F_BUF_SLOTS);
    }
}

static void dominant_slots(const ft_walk *w, float *out)
{
    const ft_dom *d = &w->dom;
    if (!d->set) return;
    out[TUNE_F_DOM_DEPTH] = (float)d->depth;
    out[TUNE_F_DOM_COUNT] = lg(d->count);
    out[TUNE_F_DOM_INNER_EXT] = lg(d->inner_ext);
    out[TUNE_F_DOM_INNER_SERIAL] = d->inner_kind == IR_FOR_SERIAL;
    out[TUNE_F_DOM_INNER_PARALLEL] = d->inner_kind == IR_FOR_PARALLEL;
    out[TUNE_F_DOM_INNER_VECTOR] = d->inner_kind == IR_FOR_VECTORIZED;
    out[TUNE_F_DOM_INNER_UNROLL] = d->inner_kind == IR_FOR_UNROLLED;
    out[TUNE_F_DOM_VEC_LANES] = lg(d->vec_lanes);
    out[TUNE_F_DOM_UNROLL] = lg(d->unroll);
    out[TUNE_F_DOM_PAR_EXT] = lg(d->par_ext);
    out[TUNE_F_DOM_OUTER_SERIAL] = lg(d->outer_serial);
    for (int i = 0; i < TUNE_FEATURE_LEVELS; i++) {
        out[TUNE_F_DOM_BYTES_L1 + i] = lg(d->level_bytes[i]);
        out[TUNE_F_DOM_INTENSITY_L1 + i] = lg(d->level_bytes[i] > 0 ? d->level_flops[i] / d->level_bytes[i] : 0);
    }
}

static void finish(const ft_walk *w, float *out)
{
    const double *g = w->g;
    double flops = g[TUNE_F_FLOPS], arg_bytes = 0, accessed = 0;
    for (int i = 0; i < w->n_bufs; i++) {
        accessed += bytes_accessed(&w->bufs[i]);
        if (w->bufs[i].buf->kind != IR_BUF_TEMP) arg_bytes += unique_elems(&w->bufs[i]) * elem_bytes(w->bufs[i].buf);
    }
    for (int i = 0; i < TUNE_F_GLOBAL_COUNT_; i++) out[i] = lg(g[i]);
    out[TUNE_F_KERNEL_CALL] = (float)g[TUNE_F_KERNEL_CALL];
    out[TUNE_F_VEC_SHARE] = share(g[TUNE_F_VEC_SHARE], flops);
    out[TUNE_F_PAR_SHARE] = share(w->par_flops, flops);
    out[TUNE_F_UNROLL_SHARE] = share(g[TUNE_F_UNROLL_SHARE], flops);
    out[TUNE_F_GUARD_SHARE] = share(g[TUNE_F_GUARD_SHARE], flops);
    out[TUNE_F_MAX_DEPTH] = (float)g[TUNE_F_MAX_DEPTH];
    out[TUNE_F_NESTS] = (float)g[TUNE_F_NESTS];
    out[TUNE_F_NONCONST_LOOPS] = (float)g[TUNE_F_NONCONST_LOOPS];
    out[TUNE_F_VEC_LOOPS] = (float)g[TUNE_F_VEC_LOOPS];
    out[TUNE_F_UNROLL_LOOPS] = (float)g[TUNE_F_UNROLL_LOOPS];
    out[TUNE_F_PAR_LOOPS] = (float)g[TUNE_F_PAR_LOOPS];
    out[TUNE_F_PAR_CHUNK_WORK] = lg(w->par_iters > 0 ? w->par_flops / w->par_iters : 0);
    out[TUNE_F_SERIAL_FLOPS] = lg(flops - w->par_flops);
    out[TUNE_F_INTENSITY] = lg(arg_bytes > 0 ? flops / arg_bytes : 0);
    out[TUNE_F_ARG_BYTES] = lg(arg_bytes);
    out[TUNE_F_BYTES_ACCESSED] = lg(accessed);
    out[TUNE_F_TEMP_MIN_BYTES] = lg(w->temp_min);
    dominant_slots(w, out);
    top_buffers(w, out);
}

smelt_status tune_features_extract(smelt_ctx *ctx, const ir_func *f, float *out)
{
    if (!f || !out) return smelt_errf(ctx, SMELT_ERR_ARG, "tune_features_extract: NULL %s", f ? "out" : "function");
    for (int i = 0; i < TUNE_FEATURE_COUNT; i++) out[i] = 0;
    ft_walk w = {.ctx = ctx, .count = 1, .unroll_mult = 1};
    tir_scope_init(&w.scope, NULL);
    walk_stmt(&w, f->body);
    if (w.status == SMELT_OK) finish(&w, out);
    tir_scope_fini(&w.scope);
    smelt_free(w.bufs);
    return w.status;
}

/* ---- names ---- */

static const char *const k_global_names[TUNE_F_GLOBAL_COUNT_] = {
    [TUNE_F_FLOAT_ADD] = "float_add", [TUNE_F_FLOAT_MUL] = "float_mul",
    [TUNE_F_FLOAT_DIV] = "float_div", [TUNE_F_FLOAT_CMP] = "float_cmp",
    [TUNE_F_FLOAT_FMA] = "float_fma", [TUNE_F_MATH_CALLS] = "math_calls",
    [TUNE_F_INT_OPS] = "int_ops", [TUNE_F_SELECTS] = "selects",
    [TUNE_F_LOADS] = "loads", [TUNE_F_STORES] = "stores",
    [TUNE_F_FLOPS] = "flops", [TUNE_F_KERNEL_CALL] = "kernel_call",
    [TUNE_F_KERNEL_FLOPS] = "kernel_flops", [TUNE_F_VEC_SHARE] = "vec_share",
    [TUNE_F_PAR_SHARE] = "par_share", [TUNE_F_UNROLL_SHARE] = "unroll_share",
    [TUNE_F_GUARD_SHARE] = "guard_share", [TUNE_F_ITERATIONS] = "iterations",
    [TUNE_F_MAX_DEPTH] = "max_depth", [TUNE_F_NESTS] = "nests",
    [TUNE_F_NONCONST_LOOPS] = "nonconst_loops", [TUNE_F_VEC_LOOPS] = "vec_loops",
    [TUNE_F_UNROLL_LOOPS] = "unroll_loops", [TUNE_F_PAR_LOOPS] = "par_loops",
    [TUNE_F_DOM_DEPTH] = "dom_depth", [TUNE_F_DOM_COUNT] = "dom_count",
    [TUNE_F_DOM_INNER_EXT] = "dom_inner_extent", [TUNE_F_DOM_INNER_SERIAL] = "dom_inner_serial",
    [TUNE_F_DOM_INNER_PARALLEL] = "dom_inner_parallel",
    [TUNE_F_DOM_INNER_VECTOR] = "dom_inner_vectorized",
    [TUNE_F_DOM_INNER_UNROLL] = "dom_inner_unrolled", [TUNE_F_DOM_VEC_LANES] = "dom_vec_lanes",
    [TUNE_F_DOM_UNROLL] = "dom_unroll", [TUNE_F_DOM_PAR_EXT] = "dom_par_extent",
    [TUNE_F_DOM_OUTER_SERIAL] = "dom_outer_serial",
    [TUNE_F_DOM_BYTES_L1] = "dom_bytes_l1", [TUNE_F_DOM_BYTES_L2] = "dom_bytes_l2",
    [TUNE_F_DOM_BYTES_L3] = "dom_bytes_l3", [TUNE_F_DOM_BYTES_L4] = "dom_bytes_l4",
    [TUNE_F_DOM_BYTES_L5] = "dom_bytes_l5", [TUNE_F_DOM_INTENSITY_L1] = "dom_intensity_l1",
    [TUNE_F_DOM_INTENSITY_L2] = "dom_intensity_l2", [TUNE_F_DOM_INTENSITY_L3] = "dom_intensity_l3",
    [TUNE_F_DOM_INTENSITY_L4] = "dom_intensity_l4", [TUNE_F_DOM_INTENSITY_L5] = "dom_intensity_l5", [TUNE_F_PAR_CHUNK_WORK] = "par_chunk_work",
    [TUNE_F_SERIAL_FLOPS] = "serial_flops", [TUNE_F_INTENSITY] = "intensity",
    [TUNE_F_ARG_BYTES] = "arg_bytes", [TUNE_F_BYTES_ACCESSED] = "bytes_accessed",
    [TUNE_F_TEMP_BYTES] = "temp_bytes", [TUNE_F_TEMP_MIN_BYTES] = "temp_min_bytes",
    [TUNE_F_ALLOCS_RUN] = "allocs_run", [TUNE_F_CODE_SIZE] = "code_size",
};

#define B(i) "buf" #i ".bytes", "buf" #i ".unique_bytes", "buf" #i ".reuse", "buf" #i ".unit",       \
             "buf" #i ".broadcast", "buf" #i ".strided", "buf" #i ".stride", "buf" #i ".reuse_dist", \
             "buf" #i ".write_share", "buf" #i ".temp"
static const char *const k_buffer_names[TUNE_FEATURE_BUFFERS * TUNE_F_BUF_SLOTS] = {B(0), B(1), B(2), B(3)};
#undef B
_Static_assert(TUNE_F_DOM_INTENSITY_L1 - TUNE_F_DOM_BYTES_L1 == TUNE_FEATURE_LEVELS &&
                   TUNE_F_DOM_INTENSITY_L5 - TUNE_F_DOM_INTENSITY_L1 == TUNE_FEATURE_LEVELS - 1,
               "one bytes and one intensity slot per level");
_Static_assert(TUNE_FEATURE_BUFFERS == 4 && TUNE_F_BUF_SLOTS == 10,
               "update k_buffer_names with the per-buffer slots");

const char *tune_feature_name(int i)
{
    if (i < 0 || i >= TUNE_FEATURE_COUNT) return "?";
    if (i < TUNE_F_GLOBAL_COUNT_) return k_global_names[i] ? k_global_names[i] : "?";
    return k_buffer_names[i - TUNE_F_GLOBAL_COUNT_];
}
