/* VECTORIZED loops: GCC vector extensions, or a scalar loop when vectors
 * could change results.
 *
 * A loop is emitted with vector types when (after inlining the lets that
 * depend on the loop variable):
 *   - its body is stores, lets, and ifs whose condition does not depend on
 *     the loop variable;
 *   - every store index is affine in the loop variable with a non-zero
 *     constant stride, and every store and every load of a stored buffer use
 *     the same index (so each lane touches only its own elements: running
 *     the statements lane-parallel equals running the iterations in order);
 *   - all stores compute in one element type, float32 or float64: the
 *     stored buffer's, or the float operand of a cast stored into an int8,
 *     uint8, int16, uint16 or int32 buffer (quantize and Cast loops: the
 *     lanes are clamped, NaN zeroed and converted as smelt_f2i does).
 * The first two conditions also make `ivdep` safe on the scalar fallback.
 *
 * Expressions become three-address statements on vector temporaries (no
 * functions with vector arguments, so no ABI warnings without -mavx*).
 * Stride-1 loads are unaligned vector loads, loop-invariant values are
 * broadcast, anything else is built lane by lane from the scalar emitter
 * with the loop variable replaced by (v + lane) - correct for any node.
 * float32 exp/tanh/erf/sigmoid call the prelude's vector functions (a few
 * ulp from libm); other math calls run libm per lane.
 */
#include <string.h>

#include "codegen/c_internal.h"
#include "tir/simplify.h"

typedef enum vec_verdict {
    VEC_OK,          /* vector types */
    VEC_SCALAR_SAFE, /* no dependence between iterations: scalar + ivdep */
    VEC_UNSAFE,      /* plain scalar loop */
} vec_verdict;

typedef struct vec_access {
    const ir_buffer *buf;
    const ir_expr *idx;
    const ir_expr *val; /* stores: the stored value */
} vec_access;

typedef struct vec_scan {
    const ir_var *v;
    vec_access stores[64], loads[256];
    int n_stores, n_loads;
    bool unsafe;      /* possible dependence between iterations */
    bool not_vector;  /* safe, but not something we emit as vectors */
} vec_scan;

/* ---- analysis ---- */

static void scan_expr(vec_scan *sc, const ir_expr *x)
{
    if (!x) return;
    switch (x->kind) {
    case IR_INT:
    case IR_FLOAT:
    case IR_VAR: return;
    case IR_NOT:
    case IR_CAST: scan_expr(sc, x->bin.a); return;
    case IR_SELECT:
        scan_expr(sc, x->select.cond);
        scan_expr(sc, x->select.t);
        scan_expr(sc, x->select.f);
        return;
    case IR_CALL:
        if (x->call.op == IR_CALL_LB_DECODE || x->call.op == IR_CALL_LB_ENCODE ||
            x->call.op == IR_CALL_BITCAST)
            sc->not_vector = true; /* byte codes and bit views: scalar conversions */
        for (int i = 0; i < x->call.n; i++) scan_expr(sc, x->call.args[i]);
        return;
    case IR_LOAD:
        if (x->load.n != 1 || sc->n_loads == (int)SMELT_ARRAY_LEN(sc->loads)) {
            sc->unsafe = true;
            return;
        }
        sc->loads[sc->n_loads++] = (vec_access){x->load.buf, x->load.idx[0], NULL};
        scan_expr(sc, x->load.idx[0]);
        return;
    case IR_REDUCE: sc->unsafe = true; return;
    default:
        scan_expr(sc, x->bin.a);
        scan_expr(sc, x->bin.b);
        return;
    }
}

static void scan_stmt(vec_scan *sc, const ir_stmt *s)
{
    if (!s || sc->unsafe) return;
    switch (s->kind) {
    case IR_STMT_STORE:
        if (s->store.n != 1 || sc->n_stores == (int)SMELT_ARRAY_LEN(sc->stores)) {
            sc->unsafe = true;
            return;
        }
        sc->stores[sc->n_stores++] = (vec_access){s->store.buf, s->store.idx[0], s->store.value};
        scan_expr(sc, s->store.idx[0]);
        scan_expr(sc, s->store.value);
        return;
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++) scan_stmt(sc, s->seq.items[i]);
        return;
    case IR_STMT_LET:
        if (ir_expr_uses_var(s->let.value, sc->v)) sc->not_vector = true; /* not inlined */
        scan_expr(sc, s->let.value);
        scan_stmt(sc, s->let.body);
        return;
    case IR_STMT_IF:
        if (ir_expr_uses_var(s->if_.cond, sc->v)) sc->not_vector = true;
        scan_expr(sc, s->if_.cond);
        scan_stmt(sc, s->if_.then_);
        scan_stmt(sc, s->if_.else_);
        return;
    default: /* loops, allocations, micro-kernel calls: not analysed */
        sc->unsafe = true;
        return;
    }
}

/* A linear form c0 + sum(coef * atom) of an integer index expression;
 * atoms are variables or any non-linear subexpression (compared
 * structurally), so two indices' difference is known when it is constant. */
typedef struct lin_form {
    int64_t c0;
    struct {
        const ir_expr *atom;
        int64_t coef;
    } t[16];
    int n;
    bool ok;
} lin_form;

static void lin_add(lin_form *f, const ir_expr *atom, int64_t coef)
{
    for (int i = 0; i < f->n; i++)
        if (ir_expr_equal(f->t[i].atom, atom)) {
            if (smelt_add_overflow_i64(f->t[i].coef, coef, &f->t[i].coef)) f->ok = false;
            return;
        }
    if (f->n == (int)SMELT_ARRAY_LEN(f->t)) {
        f->ok = false;
        return;
    }
    f->t[f->n].atom = atom;
    f->t[f->n++].coef = coef;
}

static void lin_build(lin_form *f, const ir_expr *x, int64_t scale)
{
    int64_t v;
    switch (x->kind) {
    case IR_INT:
        if (smelt_mul_overflow_i64(x->i, scale, &v) || smelt_add_overflow_i64(f->c0, v, &f->c0)) f->ok = false;
        return;
    case IR_ADD:
    case IR_SUB:
        lin_build(f, x->bin.a, scale);
        lin_build(f, x->bin.b, x->kind == IR_ADD ? scale : -scale);
        return;
    case IR_MUL:
        if (x->bin.a->kind == IR_INT && !smelt_mul_overflow_i64(x->bin.a->i, scale, &v)) {
            lin_build(f, x->bin.b, v);
            return;
        }
        if (x->bin.b->kind == IR_INT && !smelt_mul_overflow_i64(x->bin.b->i, scale, &v)) {
            lin_build(f, x->bin.a, v);
            return;
        }
        break;
    case IR_CAST:
        if (!cg_dtype_is_float(x->dtype) && !cg_dtype_is_float(x->bin.a->dtype)) {
            lin_build(f, x->bin.a, scale);
            return;
        }
        break;
    default: break;
    }
    lin_add(f, x, scale);
}

/* Coefficient of v in the form; false if v also hides in a non-linear atom. */
static bool lin_coef(const lin_form *f, const ir_var *v, int64_t *c)
{
    *c = 0;
    for (int i = 0; i < f->n; i++) {
        const ir_expr *a = f->t[i].atom;
        if (a->kind == IR_VAR && a->var == v)
            *c += f->t[i].coef;
        else if (f->t[i].coef != 0 && ir_expr_uses_var(a, v))
            return false;
    }
    return true;
}

/* Coefficient of v in x when x is affine in v with a constant coefficient. */
static bool affine_coef(const ir_expr *x, const ir_var *v, int64_t *c)
{
    lin_form f = {.ok = true};
    lin_build(&f, x, 1);
    return f.ok && lin_coef(&f, v, c);
}

/* Can accesses a[i] and b[j] of one buffer touch the same element for
 * iterations i != j (a loop of `extent` iterations)?  Each lane only
 * touching its own elements is what lets statements run lane-parallel. */
static bool accesses_independent(const ir_expr *a, const ir_expr *b, const ir_var *v, const ir_expr *extent)
{
    lin_form f = {.ok = true};
    lin_build(&f, a, 1);
    lin_build(&f, b, -1);
    for (int i = 0; i < f.n; i++)
        if (f.t[i].coef != 0) return false; /* different strides, or a non-constant difference */
    int64_t ca, cb;
    if (!f.ok || !affine_coef(a, v, &ca) || !affine_coef(b, v, &cb) || ca != cb) return false;
    int64_t c = ca;
    int64_t d = f.c0;
    if (d == 0) return true; /* the same element in the same iteration */
    if (c == 0) return false;
    if (d % c != 0) return true; /* never the same element */
    int64_t span;
    return extent->kind == IR_INT && !smelt_mul_overflow_i64(c < 0 ? -c : c, extent->i, &span) &&
           (d < 0 ? -d : d) >= span;
}

static bool stores_are_independent(const vec_scan *sc, const ir_expr *extent)
{
    for (int i = 0; i < sc->n_stores; i++) {
        int64_t c;
        if (!affine_coef(sc->stores[i].idx, sc->v, &c) || c == 0) return false;
        for (int j = 0; j < sc->n_stores; j++)
            if (j != i && sc->stores[j].buf == sc->stores[i].buf &&
                !accesses_independent(sc->stores[j].idx, sc->stores[i].idx, sc->v, extent))
                return false;
        for (int j = 0; j < sc->n_loads; j++)
            if (sc->loads[j].buf == sc->stores[i].buf &&
                !accesses_independent(sc->loads[j].idx, sc->stores[i].idx, sc->v, extent))
                return false;
    }
    return true;
}

static bool is_float(smelt_dtype dt) { return dt == SMELT_DT_FLOAT32 || dt == SMELT_DT_FLOAT64; }

/* The type a store's lanes compute in: its buffer's (float), or the float
 * operand of a cast to an integer type we convert vectors to; else none. */
static smelt_dtype lane_type(const vec_access *st)
{
    smelt_dtype dt = st->buf->dtype;
    if (is_float(dt)) return dt;
    const ir_expr *v = st->val;
    if (cg_cvt_index(dt) >= 0 && v->kind == IR_CAST && is_float(v->bin.a->dtype)) return v->bin.a->dtype;
    return SMELT_DT_UNDEFINED;
}

static vec_verdict analyse(cg_emitter *e, const ir_stmt *body, const ir_var *v, const ir_expr *extent,
                           smelt_dtype *elem)
{
    vec_scan *sc = smelt_calloc(1, sizeof *sc);
    if (!sc) {
        cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
        return VEC_UNSAFE;
    }
    const cg_target *t = e->target;
    sc->v = v;
    scan_stmt(sc, body);
    vec_verdict verdict = VEC_OK;
    if (sc->unsafe || sc->n_stores == 0 || !stores_are_independent(sc, extent)) {
        verdict = VEC_UNSAFE;
    } else {
        smelt_dtype dt = lane_type(&sc->stores[0]);
        for (int i = 1; i < sc->n_stores; i++)
            if (lane_type(&sc->stores[i]) != dt) sc->not_vector = true;
        if (dt == SMELT_DT_UNDEFINED) sc->not_vector = true;
        if (sc->not_vector || cg_target_lanes(t, dt) == 0) verdict = VEC_SCALAR_SAFE;
        *elem = dt;
    }
    smelt_free(sc);
    return verdict;
}

/* Whether s stores into a buffer that e loads. */
static bool stores_into_read(const ir_stmt *s, const ir_expr *e)
{
    if (!s) return false;
    switch (s->kind) {
    case IR_STMT_STORE: return ir_expr_reads(e, s->store.buf);
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++)
            if (stores_into_read(s->seq.items[i], e)) return true;
        return false;
    case IR_STMT_LET: return stores_into_read(s->let.body, e);
    case IR_STMT_IF: return stores_into_read(s->if_.then_, e) || stores_into_read(s->if_.else_, e);
    case IR_STMT_FOR: return stores_into_read(s->for_.body, e);
    case IR_STMT_ALLOCATE: return stores_into_read(s->alloc.body, e);
    default: return true; /* calls write through pointers */
    }
}

/* Inline lets whose value depends on v, so stride analysis sees through
 * them (the scalar fallback keeps the original body).  Not one whose value
 * loads a buffer its body stores: the copy would load after the store and
 * read the new value (the let stays, so the loop is emitted scalar). */
static ir_stmt *inline_lets(cg_emitter *e, ir_stmt *s, const ir_var *v)
{
    if (!s) return NULL;
    switch (s->kind) {
    case IR_STMT_LET: {
        if (ir_expr_uses_var(s->let.value, v) && !stores_into_read(s->let.body, s->let.value)) {
            ir_subst sub = {s->let.var, s->let.value};
            ir_stmt *body = ir_stmt_substitute(&e->b, s->let.body, &sub, 1);
            return inline_lets(e, body, v);
        }
        ir_stmt *body = inline_lets(e, s->let.body, v);
        return body == s->let.body ? s : ir_let(&e->b, s->let.var, s->let.value, body);
    }
    case IR_STMT_SEQ: {
        ir_stmt **items = smelt_arena_alloc(&e->arena, sizeof *items * (size_t)(s->seq.n + 1));
        if (!items) return NULL;
        bool changed = false;
        for (int i = 0; i < s->seq.n; i++) {
            items[i] = inline_lets(e, s->seq.items[i], v);
            changed |= items[i] != s->seq.items[i];
        }
        return changed ? ir_seq(&e->b, s->seq.n, items) : s;
    }
    case IR_STMT_IF: {
        ir_stmt *t = inline_lets(e, s->if_.then_, v), *f = inline_lets(e, s->if_.else_, v);
        return t == s->if_.then_ && f == s->if_.else_ ? s : ir_if(&e->b, s->if_.cond, t, f);
    }
    default: return s;
    }
}

/* ---- emission ---- */

typedef struct vec_emit {
    cg_emitter *e;
    const ir_var *v;
    smelt_dtype elem;
    int lanes;
    const char *vt, *ut, *mt; /* value, unaligned value, mask types */
    const char *ct;           /* scalar C type of the element */
    int guarded; /* > 0: inside a select branch or the right side of && / ||, which
                    the scalar code would not evaluate for every lane */
    /* Values already computed in this statement (reset after each store,
     * which may change what a load would read, and at block edges). */
    struct {
        const ir_expr *x;
        bool mask;
        int id;
    } cse[64];
    int n_cse;
} vec_emit;

static int cse_find(const vec_emit *ve, const ir_expr *x, bool mask)
{
    for (int i = 0; i < ve->n_cse; i++)
        if (ve->cse[i].mask == mask && ir_expr_equal(ve->cse[i].x, x)) return ve->cse[i].id;
    return -1;
}

static int cse_put(vec_emit *ve, const ir_expr *x, bool mask, int id)
{
    if (ve->n_cse < (int)SMELT_ARRAY_LEN(ve->cse)) {
        ve->cse[ve->n_cse].x = x;
        ve->cse[ve->n_cse].mask = mask;
        ve->cse[ve->n_cse++].id = id;
    }
    return id;
}

static int new_tmp(vec_emit *ve) { return ve->e->next_tmp++; }

/* Scalar text of x for one lane (-1: no substitution). */
static void lane_expr(vec_emit *ve, const ir_expr *x, int lane, cg_ctx_kind ctx, smelt_strbuf *out)
{
    const ir_var *saved_var = ve->e->lane_var;
    int saved_lane = ve->e->lane;
    bool saved_clamp = ve->e->clamp_loads;
    ve->e->lane_var = lane >= 0 ? ve->v : NULL;
    ve->e->lane = lane;
    ve->e->clamp_loads = ve->guarded > 0;
    cg_expr(ve->e, x, ctx, out);
    ve->e->lane_var = saved_var;
    ve->e->lane = saved_lane;
    ve->e->clamp_loads = saved_clamp;
}

static void splat_list(vec_emit *ve, const char *name)
{
    for (int k = 0; k < ve->lanes; k++)
        smelt_strbuf_printf(ve->e->out, "%s%s", k ? ", " : "", name);
}

/* A lane-by-lane value (is_mask: -1/0 per lane from a boolean). */
static int vec_by_lanes(vec_emit *ve, const ir_expr *x, bool is_mask)
{
    int id = new_tmp(ve);
    cg_line(ve->e, "%s %c%d = {", is_mask ? ve->mt : ve->vt, is_mask ? 'm' : 'x', id);
    ve->e->indent++;
    for (int k = 0; k < ve->lanes; k++) {
        cg_indent(ve->e);
        if (is_mask) smelt_strbuf_append(ve->e->out, "(");
        lane_expr(ve, x, k, CG_VALUE, ve->e->out);
        smelt_strbuf_append(ve->e->out, is_mask ? ") ? -1 : 0,\n" : ",\n");
    }
    ve->e->indent--;
    cg_line(ve->e, "};");
    return id;
}

static int vec_splat(vec_emit *ve, const ir_expr *x, bool is_mask)
{
    int s = new_tmp(ve), id = new_tmp(ve);
    cg_indent(ve->e);
    smelt_strbuf_printf(ve->e->out, "const %s s%d = ", is_mask ? "int" : ve->ct, s);
    if (is_mask) smelt_strbuf_append(ve->e->out, "(");
    lane_expr(ve, x, -1, CG_VALUE, ve->e->out);
    smelt_strbuf_append(ve->e->out, is_mask ? ") ? -1 : 0;\n" : ";\n");
    char name[24];
    snprintf(name, sizeof name, "s%d", s);
    cg_indent(ve->e);
    smelt_strbuf_printf(ve->e->out, "%s %c%d = {", is_mask ? ve->mt : ve->vt, is_mask ? 'm' : 'x', id);
    splat_list(ve, name);
    smelt_strbuf_append(ve->e->out, "};\n");
    return id;
}

static int vec_value(vec_emit *ve, const ir_expr *x);
static int vec_mask(vec_emit *ve, const ir_expr *x);

/* A contiguous load the scalar code might not perform for every lane: a
 * vector load when all lanes are inside the buffer, else lane by lane with
 * clamped indices (the lanes outside are discarded by the caller). */
static int vec_guarded_load(vec_emit *ve, const ir_expr *x, const cg_bufinfo *bi, int id)
{
    cg_emitter *e = ve->e;
    int64_t n = cg_buffer_elems(x->load.buf);
    const char *name = bi ? bi->name : "?";
    e->helpers[CG_H_CLAMPI] = true;
    cg_line(e, "%s x%d = {0};", ve->vt, id);
    cg_line(e, "{");
    e->indent++;
    cg_indent(e);
    smelt_strbuf_append(e->out, "const int64_t b_ = ");
    lane_expr(ve, x->load.idx[0], -1, CG_INDEX, e->out);
    smelt_strbuf_append(e->out, ";\n");
    cg_line(e, "if (b_ >= 0 && b_ <= %lld) {", (long long)(n - ve->lanes));
    cg_line(e, "    x%d = *(const %s *)&%s[b_];", id, ve->ut, name);
    cg_line(e, "} else {");
    cg_line(e, "    int k_;");
    cg_line(e, "    for (k_ = 0; k_ < %d; ++k_) x%d[k_] = %s[smelt_clampi_(b_ + k_, %lld)];", ve->lanes, id, name,
            (long long)(n > 0 ? n : 1));
    cg_line(e, "}");
    e->indent--;
    cg_line(e, "}");
    return id;
}

/* Strides loaded as c contiguous vectors and c - 1 shuffles (vpermt2ps on
 * AVX-512) instead of one scalar load per lane: pooling and strided
 * convolutions read their input this way. */
#define VEC_DEINTERLEAVE_MAX_STRIDE 4

/* First element of chunk j: chunks back to back, the last one ending at the
 * last lane's element, so nothing outside the lanes' span is read. */
static int64_t chunk_offset(int64_t j, int64_t c, int lanes)
{
    return j < c - 1 ? j * lanes : (c - 1) * (lanes - 1);
}

static int64_t chunk_of(int64_t pos, int64_t c, int lanes)
{
    int64_t j = pos / lanes;
    return j < c - 1 ? j : c - 1;
}

/* Lanes g, g + c, ..., g + c*(L-1) of `name` into x<id>: chunk 0 and 1
 * shuffled, then each further chunk shuffled into the result. */
static void emit_deinterleave(vec_emit *ve, const char *name, int g, int64_t c, int id)
{
    cg_emitter *e = ve->e;
    int lanes = ve->lanes, acc = -1;
    e->helpers[CG_H_SHUFFLE2] = true;
    for (int64_t j = 0; j < c; j++) {
        int chunk = new_tmp(ve);
        cg_line(e, "const %s x%d = *(const %s *)&%s[g%d + %lld];", ve->vt, chunk, ve->ut, name, g,
                (long long)chunk_offset(j, c, lanes));
        if (j == 0) {
            acc = chunk;
            continue;
        }
        int r = j == c - 1 ? id : new_tmp(ve);
        cg_indent(e);
        smelt_strbuf_printf(e->out, "%s%s x%d = SMELT_SHUF2_(%s, x%d, x%d", j == c - 1 ? "" : "const ",
                            ve->vt, r, ve->mt, acc, chunk);
        for (int k = 0; k < lanes; k++) {
            int64_t pos = c * k, from = chunk_of(pos, c, lanes);
            int64_t lane = from == j ? lanes + pos - chunk_offset(j, c, lanes) /* this chunk */
                           : j == 1 && from == 0 ? pos                       /* chunk 0 as loaded */
                                                 : k;                        /* resolved (or later) */
            smelt_strbuf_printf(e->out, ", %lld", (long long)lane);
        }
        smelt_strbuf_append(e->out, ");\n");
        acc = r;
    }
}

/* Lane by lane: base + k * c per lane (clamped when speculative). */
static void emit_gather(vec_emit *ve, const char *name, int g, int64_t c, int64_t n)
{
    cg_emitter *e = ve->e;
    if (ve->guarded) e->helpers[CG_H_CLAMPI] = true;
    for (int k = 0; k < ve->lanes; k++) {
        if (ve->guarded)
            smelt_strbuf_printf(e->out, "%s%s[smelt_clampi_(g%d + %lld, %lld)]", k ? ", " : "", name, g,
                                (long long)(c * k), (long long)(n > 0 ? n : 1));
        else
            smelt_strbuf_printf(e->out, "%s%s[g%d + %lld]", k ? ", " : "", name, g, (long long)(c * k));
    }
}

/* A load with a constant stride c != 1: the lane-0 index once, then a
 * deinterleave of contiguous vectors for small positive strides (when
 * speculative, only if every lane is inside the buffer), else a gather. */
static int vec_strided_load(vec_emit *ve, const ir_expr *x, int64_t c)
{
    cg_emitter *e = ve->e;
    const cg_bufinfo *bi = cg_buf(e, x->load.buf);
    const char *name = bi ? bi->name : "?";
    int b = new_tmp(ve), id = new_tmp(ve);
    int64_t n = cg_buffer_elems(x->load.buf), span = c * (ve->lanes - 1);
    cg_indent(e);
    smelt_strbuf_printf(e->out, "const int64_t g%d = ", b);
    lane_expr(ve, x->load.idx[0], -1, CG_INDEX, e->out);
    smelt_strbuf_append(e->out, ";\n");
    bool deinterleave = c >= 2 && c <= VEC_DEINTERLEAVE_MAX_STRIDE && n > span;
    if (!deinterleave) {
        cg_indent(e);
        smelt_strbuf_printf(e->out, "%s x%d = {", ve->vt, id);
        emit_gather(ve, name, b, c, n);
        smelt_strbuf_append(e->out, "};\n");
        return id;
    }
    if (!ve->guarded) {
        emit_deinterleave(ve, name, b, c, id);
        return id;
    }
    cg_line(e, "%s x%d;", ve->vt, id);
    cg_line(e, "if (g%d >= 0 && g%d < %lld) {", b, b, (long long)(n - span));
    e->indent++;
    int inner = new_tmp(ve);
    emit_deinterleave(ve, name, b, c, inner);
    cg_line(e, "x%d = x%d;", id, inner);
    e->indent--;
    cg_line(e, "} else {");
    cg_indent(e);
    smelt_strbuf_printf(e->out, "    x%d = (%s){", id, ve->vt);
    emit_gather(ve, name, b, c, n);
    smelt_strbuf_append(e->out, "};\n");
    cg_line(e, "}");
    return id;
}

static int vec_load(vec_emit *ve, const ir_expr *x)
{
    int64_t c;
    if (!affine_coef(x->load.idx[0], ve->v, &c)) return vec_by_lanes(ve, x, false);
    if (c != 1) return vec_strided_load(ve, x, c);
    const cg_bufinfo *bi = cg_buf(ve->e, x->load.buf);
    int id = new_tmp(ve);
    if (ve->guarded) return vec_guarded_load(ve, x, bi, id);
    cg_indent(ve->e);
    smelt_strbuf_printf(ve->e->out, "%s x%d = *(const %s *)&%s[", ve->vt, id, ve->ut, bi ? bi->name : "?");
    lane_expr(ve, x->load.idx[0], -1, CG_INDEX, ve->e->out);
    smelt_strbuf_append(ve->e->out, "];\n");
    return id;
}

static int blend(vec_emit *ve, int mask, int t, int f)
{
    int id = new_tmp(ve);
    cg_line(ve->e, "%s x%d = (%s)((m%d & (%s)x%d) | (~m%d & (%s)x%d));", ve->vt, id, ve->vt, mask,
            ve->mt, t, mask, ve->mt, f);
    return id;
}

/* min(a, b) = a < b ? a : b, max likewise with >: MINPS/MAXPS exactly (b when
 * unordered or equal), one instruction where the prelude maps them, instead
 * of a compare whose mask the blend waits for. */
static int minmax_ids(vec_emit *ve, bool is_min, int a, int b)
{
    bool f32 = ve->elem == SMELT_DT_FLOAT32 && (ve->lanes == 4 || ve->lanes == 8 || ve->lanes == 16);
    if (f32) { /* the prelude's macro: the instruction, or the same blend */
        int id = new_tmp(ve);
        ve->e->vminmax_f32 = true;
        cg_line(ve->e, "%s x%d = SMELT_V%s_f32x%d(x%d, x%d);", ve->vt, id, is_min ? "MIN" : "MAX",
                ve->lanes, a, b);
        return id;
    }
    int m = new_tmp(ve);
    cg_line(ve->e, "%s m%d = (%s)(x%d %s x%d);", ve->mt, m, ve->mt, a, is_min ? "<" : ">", b);
    return blend(ve, m, a, b);
}

static int vec_minmax(vec_emit *ve, const ir_expr *x)
{
    int a = vec_value(ve, x->bin.a), b = vec_value(ve, x->bin.b);
    return minmax_ids(ve, x->kind == IR_MIN, a, b);
}

/* ---- float <-> integer conversions ---- */

/* The integer vector type of dt with the loop's lane count (typedef'd in
 * the prelude); the 'q' temporaries hold them. */
static const char *cvt_type(vec_emit *ve, smelt_dtype dt, bool unaligned)
{
    ve->e->vec_cvt_lanes[cg_cvt_index(dt)] |= 1u << ve->lanes;
    return cg_cvt_type(dt, ve->lanes, unaligned);
}

static int splat_const(vec_emit *ve, double v)
{
    int id = new_tmp(ve);
    const char *suffix = ve->elem == SMELT_DT_FLOAT32 ? "f" : "";
    cg_indent(ve->e);
    smelt_strbuf_printf(ve->e->out, "const %s x%d = {", ve->vt, id);
    for (int k = 0; k < ve->lanes; k++) smelt_strbuf_printf(ve->e->out, "%s%.1f%s", k ? ", " : "", v, suffix);
    smelt_strbuf_append(ve->e->out, "};\n");
    return id;
}

static void int_range(smelt_dtype dt, double *lo, double *hi)
{
    switch (dt) {
    case SMELT_DT_INT8: *lo = -128, *hi = 127; return;
    case SMELT_DT_UINT8: *lo = 0, *hi = 255; return;
    case SMELT_DT_INT16: *lo = -32768, *hi = 32767; return;
    case SMELT_DT_UINT16: *lo = 0, *hi = 65535; return;
    default: *lo = -2147483648.0, *hi = 2147483647.0; return;
    }
}

/* Float lanes x as integers of dt, each what the scalar smelt_f2i(x, lo, hi)
 * gives: NaN 0, clamped to [lo, hi], truncated.  The float clamp keeps every
 * lane convertible; float32 cannot hold 2^31 - 1, so int32 clamps at the
 * float below 2^31 and adds 127 to lanes >= 2^31. */
static int vec_to_int(vec_emit *ve, int x, smelt_dtype dt)
{
    cg_emitter *e = ve->e;
    bool f32 = ve->elem == SMELT_DT_FLOAT32, big = f32 && dt == SMELT_DT_INT32;
    double lo, hi;
    int_range(dt, &lo, &hi);
    int lo_v = splat_const(ve, lo), hi_v = splat_const(ve, big ? 2147483520.0 : hi);
    int c = minmax_ids(ve, true, minmax_ids(ve, false, x, lo_v), hi_v); /* NaN -> lo */
    const char *it = cvt_type(ve, SMELT_DT_INT32, false);
    int q = new_tmp(ve);
    cg_line(e, "%s q%d = __builtin_convertvector(x%d, %s);", it, q, c, it);
    if (big) cg_line(e, "q%d += (%s)(x%d >= 2147483648.0f) & 127;", q, it, x);
    if (f32)
        cg_line(e, "q%d &= (%s)(x%d == x%d); /* NaN -> 0 */", q, it, x, x);
    else
        cg_line(e, "q%d &= __builtin_convertvector((%s)(x%d == x%d), %s); /* NaN -> 0 */", q, ve->mt, x, x, it);
    if (dt == SMELT_DT_INT32) return q;
    const char *nt = cvt_type(ve, dt, false);
    int r = new_tmp(ve);
    cg_line(e, "const %s q%d = __builtin_convertvector(q%d, %s);", nt, r, q, nt);
    return r;
}

/* (float)p[i] of a contiguous integer load: one vector load and one
 * conversion (exact as the scalar cast) instead of a value per lane. */
static int vec_cast(vec_emit *ve, const ir_expr *x)
{
    const ir_expr *a = x->bin.a;
    int64_t c;
    if (a->kind != IR_LOAD || cg_cvt_index(a->dtype) < 0 || a->dtype != a->load.buf->dtype || ve->guarded ||
        !affine_coef(a->load.idx[0], ve->v, &c) || c != 1)
        return vec_by_lanes(ve, x, false);
    const cg_bufinfo *bi = cg_buf(ve->e, a->load.buf);
    int q = new_tmp(ve), id = new_tmp(ve);
    cg_indent(ve->e);
    smelt_strbuf_printf(ve->e->out, "const %s q%d = *(const %s *)&%s[", cvt_type(ve, a->dtype, false), q,
                        cvt_type(ve, a->dtype, true), bi ? bi->name : "?");
    lane_expr(ve, a->load.idx[0], -1, CG_INDEX, ve->e->out);
    smelt_strbuf_append(ve->e->out, "];\n");
    cg_line(ve->e, "%s x%d = __builtin_convertvector(q%d, %s);", ve->vt, id, q, ve->vt);
    return id;
}

static int vec_call(vec_emit *ve, const ir_expr *x)
{
    ir_call_op op = x->call.op;
    if (x->call.args[0]->dtype != ve->elem || (x->call.n > 1 && x->call.args[1]->dtype != ve->elem) ||
        op == IR_CALL_ISNAN || op == IR_CALL_ISINF)
        return vec_by_lanes(ve, x, false);
    int a = vec_value(ve, x->call.args[0]);
    int b = x->call.n > 1 ? vec_value(ve, x->call.args[1]) : -1;
    int id = new_tmp(ve);
    if (op == IR_CALL_ABS) { /* clear the sign bit: exactly fabs */
        cg_line(ve->e, "%s x%d = (%s)((%s)x%d & %s);", ve->vt, id, ve->vt, ve->mt, a,
                ve->elem == SMELT_DT_FLOAT64 ? "INT64_C(0x7fffffffffffffff)" : "0x7fffffff");
        return id;
    }
    cg_vmath vm;
    const char *vname = ve->elem == SMELT_DT_FLOAT32 ? cg_vmath_name(op, &vm) : NULL;
    if (vname) { /* the prelude's vector function, within a few ulp of libm */
        ve->e->vmath_lanes[vm] |= 1u << ve->lanes;
        cg_line(ve->e, "%s x%d = x%d;", ve->vt, id, a);
        cg_line(ve->e, "%s_f32x%d(&x%d);", vname, ve->lanes, id);
        return id;
    }
    /* Per lane with the scalar function: identical results; GCC turns
     * sqrt/floor/ceil/rint loops into vector instructions. */
    char a0[32], a1[32];
    snprintf(a0, sizeof a0, "x%d[k_]", id);
    snprintf(a1, sizeof a1, "x%d[k_]", b);
    cg_line(ve->e, "%s x%d = x%d;", ve->vt, id, a);
    cg_indent(ve->e);
    smelt_strbuf_printf(ve->e->out, "{ int k_; for (k_ = 0; k_ < %d; ++k_) x%d[k_] = ", ve->lanes, id);
    cg_math_call_text(op, ve->elem, a0, b >= 0 ? a1 : NULL, ve->e->out);
    smelt_strbuf_append(ve->e->out, "; }\n");
    return id;
}

/* One side of a uniform select, assigned to x<id> inside its C block;
 * values computed there are out of scope afterwards. */
static void uniform_branch(vec_emit *ve, const ir_expr *x, int id)
{
    int n_cse = ve->n_cse;
    ve->e->indent++;
    int v = vec_value(ve, x);
    cg_line(ve->e, "x%d = x%d;", id, v);
    ve->e->indent--;
    ve->n_cse = n_cse;
}

/* select(c, t, f) with c the same in every lane: a C if evaluates only the
 * chosen side, as the scalar code does, so its loads are not speculative.
 * Selects nested in the false side become else-ifs: a Concat's chain
 * (i < end0 ? in0 : i < end1 ? in1 : ...) reads one input per element. */
static int vec_uniform_select(vec_emit *ve, const ir_expr *x)
{
    cg_emitter *e = ve->e;
    int id = new_tmp(ve);
    cg_line(e, "%s x%d;", ve->vt, id);
    const char *keyword = "if";
    for (; x->kind == IR_SELECT && !ir_expr_uses_var(x->select.cond, ve->v); x = x->select.f) {
        cg_indent(e);
        smelt_strbuf_printf(e->out, "%s (", keyword);
        lane_expr(ve, x->select.cond, -1, CG_VALUE, e->out);
        smelt_strbuf_append(e->out, ") {\n");
        uniform_branch(ve, x->select.t, id);
        keyword = "} else if";
    }
    cg_line(e, "} else {");
    uniform_branch(ve, x, id);
    cg_line(e, "}");
    return id;
}

static const char *vec_op(ir_kind k)
{
    switch (k) {
    case IR_ADD: return "+";
    case IR_SUB: return "-";
    case IR_MUL: return "*";
    case IR_DIV: return "/";
    case IR_EQ: return "==";
    case IR_NE: return "!=";
    case IR_LT: return "<";
    case IR_LE: return "<=";
    case IR_GT: return ">";
    case IR_GE: return ">=";
    default: return NULL;
    }
}

static int vec_value_new(vec_emit *ve, const ir_expr *x);

static int vec_value(vec_emit *ve, const ir_expr *x)
{
    int id = cse_find(ve, x, false);
    return id >= 0 ? id : cse_put(ve, x, false, vec_value_new(ve, x));
}

static int vec_value_new(vec_emit *ve, const ir_expr *x)
{
    if (!ir_expr_uses_var(x, ve->v)) return vec_splat(ve, x, false);
    if (x->dtype != ve->elem) return vec_by_lanes(ve, x, false);
    switch (x->kind) {
    case IR_LOAD: return vec_load(ve, x);
    case IR_ADD:
    case IR_SUB:
    case IR_MUL:
    case IR_DIV: {
        int a = vec_value(ve, x->bin.a), b = vec_value(ve, x->bin.b);
        int id = new_tmp(ve);
        cg_line(ve->e, "%s x%d = x%d %s x%d;", ve->vt, id, a, vec_op(x->kind), b);
        return id;
    }
    case IR_MIN:
    case IR_MAX: return vec_minmax(ve, x);
    case IR_SELECT: {
        if (!ir_expr_uses_var(x->select.cond, ve->v)) return vec_uniform_select(ve, x);
        int m = vec_mask(ve, x->select.cond);
        ve->guarded++;
        int t = vec_value(ve, x->select.t), f = vec_value(ve, x->select.f);
        ve->guarded--;
        return blend(ve, m, t, f);
    }
    case IR_CALL: return vec_call(ve, x);
    case IR_CAST: return vec_cast(ve, x);
    default: return vec_by_lanes(ve, x, false);
    }
}

static int vec_mask_new(vec_emit *ve, const ir_expr *x);

static int vec_mask(vec_emit *ve, const ir_expr *x)
{
    int id = cse_find(ve, x, true);
    return id >= 0 ? id : cse_put(ve, x, true, vec_mask_new(ve, x));
}

/* A comparison of index expressions whose difference is affine in v:
 * d = a - b at lane 0 once, then lane k compares d + c*k with 0. */
static int vec_index_compare(vec_emit *ve, const ir_expr *x)
{
    ir_expr *diff = ir_sub(&ve->e->b, x->bin.a, x->bin.b);
    int64_t c;
    if (!diff || !affine_coef(diff, ve->v, &c)) return -1;
    int d = new_tmp(ve), id = new_tmp(ve);
    cg_indent(ve->e);
    smelt_strbuf_printf(ve->e->out, "const int64_t g%d = ", d);
    lane_expr(ve, diff, -1, CG_INDEX, ve->e->out);
    smelt_strbuf_append(ve->e->out, ";\n");
    cg_indent(ve->e);
    smelt_strbuf_printf(ve->e->out, "%s m%d = {", ve->mt, id);
    for (int k = 0; k < ve->lanes; k++)
        smelt_strbuf_printf(ve->e->out, "%s-(g%d + %lld %s 0)", k ? ", " : "", d, (long long)(c * k),
                            vec_op(x->kind));
    smelt_strbuf_append(ve->e->out, "};\n");
    return id;
}

static int vec_mask_new(vec_emit *ve, const ir_expr *x)
{
    if (!ir_expr_uses_var(x, ve->v)) return vec_splat(ve, x, true);
    int id;
    if (x->kind >= IR_EQ && x->kind <= IR_GE && x->bin.a->dtype == SMELT_DT_INT64 &&
        (id = vec_index_compare(ve, x)) >= 0)
        return id;
    switch (x->kind) {
    case IR_EQ:
    case IR_NE:
    case IR_LT:
    case IR_LE:
    case IR_GT:
    case IR_GE: {
        if (x->bin.a->dtype != ve->elem) break;
        int a = vec_value(ve, x->bin.a), b = vec_value(ve, x->bin.b);
        id = new_tmp(ve);
        cg_line(ve->e, "%s m%d = (%s)(x%d %s x%d);", ve->mt, id, ve->mt, a, vec_op(x->kind), b);
        return id;
    }
    case IR_AND:
    case IR_OR: {
        int a = vec_mask(ve, x->bin.a);
        ve->guarded++; /* C evaluates the right side only for some lanes */
        int b = vec_mask(ve, x->bin.b);
        ve->guarded--;
        id = new_tmp(ve);
        cg_line(ve->e, "%s m%d = m%d %s m%d;", ve->mt, id, a, x->kind == IR_AND ? "&" : "|", b);
        return id;
    }
    case IR_NOT: {
        int a = vec_mask(ve, x->bin.a);
        id = new_tmp(ve);
        cg_line(ve->e, "%s m%d = ~m%d;", ve->mt, id, a);
        return id;
    }
    case IR_CALL:
        if (x->call.op != IR_CALL_ISNAN || x->call.args[0]->dtype != ve->elem) break;
        {
            int a = vec_value(ve, x->call.args[0]);
            id = new_tmp(ve);
            cg_line(ve->e, "%s m%d = (%s)(x%d != x%d);", ve->mt, id, ve->mt, a, a);
            return id;
        }
    default: break;
    }
    return vec_by_lanes(ve, x, true);
}

/* A store of the lanes, converted to the buffer's integer type when the
 * loop computes in float (lane_type). */
static void vec_store(vec_emit *ve, const ir_stmt *s)
{
    smelt_dtype dt = s->store.buf->dtype;
    bool convert = dt != ve->elem;
    int val = vec_value(ve, convert ? s->store.value->bin.a : s->store.value);
    const char *ut = ve->ut;
    char pre = 'x';
    if (convert) {
        val = vec_to_int(ve, val, dt);
        ut = cvt_type(ve, dt, true);
        pre = 'q';
    }
    const cg_bufinfo *bi = cg_buf(ve->e, s->store.buf);
    if (!bi) return;
    int64_t c = 0;
    affine_coef(s->store.idx[0], ve->v, &c);
    if (c == 1) {
        cg_indent(ve->e);
        smelt_strbuf_printf(ve->e->out, "*(%s *)&%s[", ut, bi->name);
        lane_expr(ve, s->store.idx[0], -1, CG_INDEX, ve->e->out);
        smelt_strbuf_printf(ve->e->out, "] = %c%d;\n", pre, val);
        return;
    }
    /* scatter with a constant stride */
    int b = new_tmp(ve);
    cg_indent(ve->e);
    smelt_strbuf_printf(ve->e->out, "const int64_t g%d = ", b);
    lane_expr(ve, s->store.idx[0], -1, CG_INDEX, ve->e->out);
    smelt_strbuf_append(ve->e->out, ";\n");
    for (int k = 0; k < ve->lanes; k++)
        cg_line(ve->e, "%s[g%d + %lld] = %c%d[%d];", bi->name, b, (long long)(c * k), pre, val, k);
}

static void vec_stmt(vec_emit *ve, const ir_stmt *s)
{
    cg_emitter *e = ve->e;
    if (!s || e->status != SMELT_OK) return;
    if (s->kind != IR_STMT_SEQ) ve->n_cse = 0;
    switch (s->kind) {
    case IR_STMT_STORE: vec_store(ve, s); return;
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++) vec_stmt(ve, s->seq.items[i]);
        return;
    case IR_STMT_LET: { /* invariant in v (the others were inlined) */
        smelt_strbuf val;
        smelt_strbuf_init(&val);
        lane_expr(ve, s->let.value, -1, s->let.var->dtype == SMELT_DT_INT64 ? CG_INDEX : CG_VALUE, &val);
        cg_line(e, "{");
        e->indent++;
        int id;
        int prev = cg_bind_var(e, s->let.var, &id);
        cg_line(e, "const %s v%d = %s;", cg_value_type(s->let.var->dtype), id, smelt_strbuf_cstr(&val));
        vec_stmt(ve, s->let.body);
        cg_unbind_var(e, s->let.var, prev);
        e->indent--;
        cg_line(e, "}");
        cg_sb_done(e, &val);
        return;
    }
    case IR_STMT_IF:
        cg_indent(e);
        smelt_strbuf_append(e->out, "if (");
        lane_expr(ve, s->if_.cond, -1, CG_INDEX, e->out);
        smelt_strbuf_append(e->out, ") {\n");
        e->indent++;
        vec_stmt(ve, s->if_.then_);
        e->indent--;
        if (s->if_.else_) {
            cg_line(e, "} else {");
            e->indent++;
            vec_stmt(ve, s->if_.else_);
            e->indent--;
        }
        cg_line(e, "}");
        return;
    default:
        cg_fail(e, SMELT_ERR_INTERNAL, "codegen: unexpected statement in a vector loop");
    }
}

/* Largest lane count for the extent (a constant extent smaller than the
 * widest vector gets a narrower one, down to 16 bytes). */
static int choose_lanes(const cg_target *t, smelt_dtype dt, const ir_expr *extent)
{
    int lanes = cg_target_lanes(t, dt);
    int min_lanes = 16 / (int)smelt_dtype_size(dt);
    if (extent->kind != IR_INT) return lanes;
    while (lanes > min_lanes && lanes > extent->i) lanes /= 2;
    return lanes <= extent->i ? lanes : 0;
}

static void text_of(cg_emitter *e, const ir_expr *x, smelt_strbuf *sb)
{
    smelt_strbuf_init(sb);
    cg_expr(e, x, CG_INDEX, sb);
}

static void emit_vector_loop(cg_emitter *e, const ir_stmt *s, ir_stmt *vbody, smelt_dtype dt, int lanes)
{
    vec_emit ve = {.e = e,
                   .v = s->for_.var,
                   .elem = dt,
                   .lanes = lanes,
                   .vt = cg_vec_type(dt, lanes, 'v'),
                   .ut = cg_vec_type(dt, lanes, 'u'),
                   .mt = cg_vec_type(dt, lanes, 'm'),
                   .ct = cg_storage_type(dt)};
    if (dt == SMELT_DT_FLOAT32)
        e->vec_f32_lanes |= 1u << lanes;
    else
        e->vec_f64_lanes |= 1u << lanes;
    const ir_expr *mn = s->for_.min, *ext = s->for_.extent;
    bool const_trip = mn->kind == IR_INT && ext->kind == IR_INT;
    bool one_iter = ext->kind == IR_INT && ext->i == lanes;
    bool no_tail = ext->kind == IR_INT && ext->i % lanes == 0;
    smelt_strbuf mtext, etext;
    text_of(e, mn, &mtext);
    text_of(e, ext, &etext);
    int end = new_tmp(&ve);
    cg_line(e, "{ /* vectorized: %d x %s */", lanes, dt == SMELT_DT_FLOAT32 ? "float" : "double");
    e->indent++;
    int id;
    int prev = cg_bind_var(e, s->for_.var, &id);
    const char *vt = cg_value_type(s->for_.var->dtype);
    if (one_iter) {
        cg_line(e, "const %s v%d = %s;", vt, id, smelt_strbuf_cstr(&mtext));
        vec_stmt(&ve, vbody);
    } else {
        if (const_trip)
            cg_line(e, "const %s e%d = %lld;", vt, end, (long long)(mn->i + ext->i));
        else
            cg_line(e, "const %s e%d = %s + %s;", vt, end, smelt_strbuf_cstr(&mtext), smelt_strbuf_cstr(&etext));
        cg_line(e, "%s v%d = %s;", vt, id, smelt_strbuf_cstr(&mtext));
        cg_line(e, "for (; v%d <= e%d - %d; v%d += %d) {", id, end, lanes, id, lanes);
        e->indent++;
        vec_stmt(&ve, vbody);
        e->indent--;
        cg_line(e, "}");
        if (!no_tail) {
            cg_line(e, "for (; v%d < e%d; ++v%d) { /* tail */", id, end, id);
            e->indent++;
            cg_stmt(e, s->for_.body);
            e->indent--;
            cg_line(e, "}");
        }
    }
    cg_unbind_var(e, s->for_.var, prev);
    e->indent--;
    cg_line(e, "}");
    cg_sb_done(e, &mtext);
    cg_sb_done(e, &etext);
}

/* ---- guards folded into the loop range ----
 * A vectorized loop whose whole body is `if (cond) S` with cond a
 * conjunction of comparisons linear in v (coefficient +-1) runs S over the
 * sub-range where cond holds instead: the same iterations, in the same
 * order, with no per-lane guard (partitioning left a tail check). */

static ir_expr *fold(ir_builder *b, ir_kind k, ir_expr *x, ir_expr *y)
{
    if (x && y && x->kind == IR_INT && y->kind == IR_INT) {
        int64_t r;
        switch (k) {
        case IR_ADD: if (!smelt_add_overflow_i64(x->i, y->i, &r)) return ir_int(b, r); break;
        case IR_SUB: if (!smelt_add_overflow_i64(x->i, -y->i, &r)) return ir_int(b, r); break;
        case IR_MIN: return ir_int(b, x->i < y->i ? x->i : y->i);
        case IR_MAX: return ir_int(b, x->i > y->i ? x->i : y->i);
        default: break;
        }
    }
    return ir_binary(b, k, x, y);
}

/* Tighten [*lo, *hi) by cond; false if cond is not of the handled form. */
static bool guard_bounds(cg_emitter *e, const ir_expr *cond, const ir_var *v, ir_expr **lo, ir_expr **hi)
{
    ir_builder *b = &e->b;
    if (cond->kind == IR_AND)
        return guard_bounds(e, cond->bin.a, v, lo, hi) && guard_bounds(e, cond->bin.b, v, lo, hi);
    if (cond->kind != IR_LT && cond->kind != IR_LE && cond->kind != IR_GT && cond->kind != IR_GE)
        return false;
    if (cond->bin.a->dtype != SMELT_DT_INT64 || cond->bin.b->dtype != SMELT_DT_INT64) return false;
    if (!ir_expr_uses_var(cond, v)) return true; /* invariant: stays inside */
    ir_expr *diff = ir_sub(b, cond->bin.a, cond->bin.b); /* cond: c*v + r OP 0 */
    int64_t c;
    if (!diff || !affine_coef(diff, v, &c) || (c != 1 && c != -1)) return false;
    ir_subst zero = {v, ir_int(b, 0)};
    ir_expr *r = ir_expr_substitute(b, diff, &zero, 1);
    ir_expr *neg_r = fold(b, IR_SUB, ir_int(b, 0), r);
    ir_expr *bound;
    bool upper;
    switch (cond->kind) {
    case IR_LT: upper = c > 0, bound = c > 0 ? neg_r : fold(b, IR_ADD, r, ir_int(b, 1)); break;
    case IR_LE: upper = c > 0, bound = c > 0 ? fold(b, IR_ADD, neg_r, ir_int(b, 1)) : r; break;
    case IR_GT: upper = c < 0, bound = c > 0 ? fold(b, IR_ADD, neg_r, ir_int(b, 1)) : r; break;
    default: upper = c < 0, bound = c > 0 ? neg_r : fold(b, IR_ADD, r, ir_int(b, 1)); break;
    }
    if (upper)
        *hi = fold(b, IR_MIN, *hi, bound);
    else
        *lo = fold(b, IR_MAX, *lo, bound);
    return *lo && *hi;
}

/* The conjuncts of cond that do not use v (NULL if none). */
static bool strip_variant(ir_builder *b, const ir_expr *cond, const ir_var *v, ir_expr **rest)
{
    if (cond->kind == IR_AND)
        return strip_variant(b, cond->bin.a, v, rest) && strip_variant(b, cond->bin.b, v, rest);
    if (ir_expr_uses_var(cond, v)) return true;
    *rest = *rest ? ir_binary(b, IR_AND, *rest, (ir_expr *)cond) : (ir_expr *)cond;
    return *rest != NULL;
}

/* The narrowed loop, or NULL when s is not a guarded loop we can narrow. */
static ir_stmt *narrow_guarded(cg_emitter *e, const ir_stmt *s)
{
    const ir_stmt *body = s->for_.body;
    const ir_var *v = s->for_.var;
    if (body->kind != IR_STMT_IF || body->if_.else_ || !ir_expr_uses_var(body->if_.cond, v)) return NULL;
    ir_builder *b = &e->b;
    ir_expr *lo = s->for_.min, *hi = fold(b, IR_ADD, s->for_.min, s->for_.extent);
    if (!guard_bounds(e, body->if_.cond, v, &lo, &hi)) return NULL;
    /* invariant parts of the condition stay as a guard inside */
    /* simplified: a constant extent (a peeled tail) picks narrower lanes */
    ir_expr *ext = tir_simplify_expr(b, fold(b, IR_MAX, fold(b, IR_SUB, hi, lo), ir_int(b, 0)), NULL);
    if (!ext) return NULL;
    ir_stmt *inner = body->if_.then_;
    ir_expr *rest = NULL;
    if (!strip_variant(b, body->if_.cond, v, &rest)) return NULL;
    if (rest) inner = ir_if(b, rest, inner, NULL);
    return ir_for(b, s->for_.var, lo, ext, IR_FOR_VECTORIZED, inner);
}

void cg_vector_for(cg_emitter *e, const ir_stmt *s)
{
    ir_stmt *narrowed = narrow_guarded(e, s);
    if (narrowed) {
        cg_line(e, "/* loop guard folded into the loop bounds */");
        cg_vector_for(e, narrowed);
        return;
    }
    ir_stmt *vbody = inline_lets(e, s->for_.body, s->for_.var);
    if (!vbody) {
        cg_fail(e, SMELT_ERR_NOMEM, "codegen: out of memory");
        return;
    }
    smelt_dtype dt = SMELT_DT_UNDEFINED;
    vec_verdict v = analyse(e, vbody, s->for_.var, s->for_.extent, &dt);
    int lanes = v == VEC_OK ? choose_lanes(e->target, dt, s->for_.extent) : 0;
    if (v == VEC_OK && lanes > 0) {
        emit_vector_loop(e, s, vbody, dt, lanes);
        return;
    }
    cg_scalar_for(e, s, v == VEC_UNSAFE ? NULL : "SMELT_IVDEP");
}
