/* The public tensor-expression API (include/smelt_te.h): user-written
 * computes and schedules over te/, sched/, lower/ and codegen/.  This file
 * only checks user input and translates; the work is done by those modules. */
#include <ctype.h>
#include <string.h>

#include "codegen/codegen.h"
#include "lower/lower.h"
#include "smelt_rt.h"
#include "api/te_api.h"

struct smelt_te_axis {
    ir_axis ax;
};

struct smelt_te_graph {
    te_graph *te;
    smelt_ctx *ctx;
    bool borrowed;   /* te belongs to the caller (a custom op's definition) */
    bool frozen; /* a schedule fixed the outputs */
    bool in_compute; /* between compute_begin and compute_end */
    int pending_rank;
    ir_var *pending[SMELT_MAX_RANK];
    smelt_strbuf text;
};

struct smelt_te_schedule {
    smelt_te_graph *g;
    sch_schedule sched;
    smelt_strbuf text;
};

struct smelt_te_func {
    smelt_ctx *ctx;
    void *handle;
    const smelt_rt_module_info *info;
    smelt_rt_model *rt;
    int n_args;
    bool is_output[2 * TE_GROUP_MAX_IO];
    int slot[2 * TE_GROUP_MAX_IO]; /* index among inputs / outputs */
    char *source;
};

#define TE_NAME_MAX 63

static te_tensor *T(const smelt_te_tensor *t) { return (te_tensor *)t; }
static ir_expr *E(smelt_te_expr *e) { return (ir_expr *)e; }
static smelt_te_expr *X(ir_expr *e) { return (smelt_te_expr *)e; }

/* ---- names ---------------------------------------------------------------- */

static bool check_name(smelt_ctx *ctx, const char *what, const char *name)
{
    if (!name || !*name) {
        smelt_errf(ctx, SMELT_ERR_ARG, "te: a %s needs a name", what);
        return false;
    }
    size_t n = strlen(name);
    bool ok = n <= TE_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        ok = c > ' ' && c != 0x7f && c != '.' && c != '#';
    }
    if (!ok)
        smelt_errf(ctx, SMELT_ERR_ARG,
                   "te: %s name '%.80s' is not usable in a schedule (1-%d characters, no blanks, "
                   "'.', '#' or control characters)",
                   what, name, TE_NAME_MAX);
    return ok;
}

/* i0, i1, ...: the data axes of every compute */
static bool is_axis_name(const char *name)
{
    if (name[0] != 'i' || !name[1]) return false;
    for (const char *p = name + 1; *p; p++)
        if (!isdigit((unsigned char)*p)) return false;
    return true;
}

static bool graph_usable(smelt_te_graph *g, const char *what)
{
    if (!g) return false;
    if (g->frozen) {
        smelt_errf(g->ctx, SMELT_ERR_ARG,
                   "te: %s after a schedule was created (a schedule fixes the graph)", what);
        return false;
    }
    return true;
}

static bool shape_ok(smelt_te_graph *g, const char *name, int rank, const int64_t *shape)
{
    if (rank < 0 || rank > SMELT_MAX_RANK || (rank > 0 && !shape)) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: tensor '%s': rank %d (0-%d allowed)", name, rank,
                   SMELT_MAX_RANK);
        return false;
    }
    int64_t total = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 1 || shape[i] > ((int64_t)1 << 40) / total) {
            smelt_errf(g->ctx, SMELT_ERR_ARG, "te: tensor '%s': dim %d is %lld (1 up to 2^40 "
                       "elements in all)", name, i, (long long)shape[i]);
            return false;
        }
        total *= shape[i];
    }
    return true;
}

static bool tensor_name_free(smelt_te_graph *g, const char *name)
{
    if (!check_name(g->ctx, "tensor", name)) return false;
    if (te_tensor_named(g->te, name)) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: a tensor named '%s' exists already", name);
        return false;
    }
    return true;
}

static bool dtype_ok(smelt_ctx *ctx, smelt_dtype dt, const char *what)
{
    switch (dt) {
    case SMELT_DT_FLOAT32: case SMELT_DT_FLOAT64: case SMELT_DT_FLOAT16: case SMELT_DT_BFLOAT16:
    case SMELT_DT_INT8: case SMELT_DT_INT16: case SMELT_DT_INT32: case SMELT_DT_INT64:
    case SMELT_DT_UINT8: case SMELT_DT_UINT16: case SMELT_DT_UINT32: case SMELT_DT_UINT64:
    case SMELT_DT_BOOL: return true;
    default:
        smelt_errf(ctx, SMELT_ERR_ARG, "te: %s: dtype %d is not a numeric type", what, (int)dt);
        return false;
    }
}

static bool is_float(smelt_dtype dt)
{
    return dt == SMELT_DT_FLOAT32 || dt == SMELT_DT_FLOAT64 || dt == SMELT_DT_FLOAT16 ||
           dt == SMELT_DT_BFLOAT16;
}

static bool is_integer(smelt_dtype dt) { return !is_float(dt) && dt != SMELT_DT_BOOL; }

/* ---- graphs --------------------------------------------------------------- */

smelt_te_graph *smelt_te_graph_new(smelt_ctx *ctx)
{
    if (!ctx) return NULL;
    smelt_te_graph *g = smelt_calloc(1, sizeof *g);
    if (g) g->te = te_graph_new(ctx);
    if (!g || !g->te) {
        smelt_free(g);
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    g->ctx = ctx;
    smelt_strbuf_init(&g->text);
    return g;
}

smelt_te_graph *smelt_te_graph_wrap(te_graph *te, smelt_ctx *ctx)
{
    smelt_te_graph *g = smelt_calloc(1, sizeof *g);
    if (!g) {
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    g->te = te;
    g->ctx = ctx;
    g->borrowed = true;
    smelt_strbuf_init(&g->text);
    return g;
}

smelt_status smelt_te_error(smelt_te_graph *g, smelt_status code, const char *message)
{
    if (!g) return code;
    if (code == SMELT_OK) code = SMELT_ERR_ARG;
    return smelt_errf(g->ctx, code, "%s", message ? message : "error");
}

void smelt_te_graph_free(smelt_te_graph *g)
{
    if (!g) return;
    if (!g->borrowed) te_graph_free(g->te);
    smelt_strbuf_fini(&g->text);
    smelt_free(g);
}

smelt_te_tensor *smelt_te_placeholder(smelt_te_graph *g, const char *name, smelt_dtype dtype,
                                      int rank, const int64_t *shape)
{
    if (!graph_usable(g, "a placeholder") || !tensor_name_free(g, name) ||
        !dtype_ok(g->ctx, dtype, name) || !shape_ok(g, name, rank, shape))
        return NULL;
    if (g->in_compute) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: placeholder '%s' declared inside a compute", name);
        return NULL;
    }
    if (g->borrowed) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: placeholder '%s' in a custom op's definition "
                   "(its inputs are given)", name);
        return NULL;
    }
    return (smelt_te_tensor *)te_placeholder(g->te, name, dtype, rank, shape);
}

smelt_status smelt_te_compute_begin(smelt_te_graph *g, int rank, smelt_te_expr **idx)
{
    if (!graph_usable(g, "a compute")) return SMELT_ERR_ARG;
    if (g->in_compute)
        return smelt_errf(g->ctx, SMELT_ERR_ARG, "te: a compute begun inside another one");
    if (rank < 0 || rank > SMELT_MAX_RANK || (rank && !idx))
        return smelt_errf(g->ctx, SMELT_ERR_ARG, "te: compute of rank %d", rank);
    for (int i = 0; i < rank; i++) {
        char name[16];
        snprintf(name, sizeof name, "i%d", i);
        g->pending[i] = ir_var_new(&g->te->b, name, SMELT_DT_INT64);
        idx[i] = X(ir_var_ref(&g->te->b, g->pending[i]));
        if (!idx[i]) return smelt_errf(g->ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    g->pending_rank = rank;
    g->in_compute = true;
    return SMELT_OK;
}

/* Variables of a body: the compute's axes, and a root reduction's axes
 * inside it; a reduction anywhere else is refused. */
typedef struct body_check {
    smelt_te_graph *g;
    const char *name;
    int n_vars;
    const ir_var *vars[2 * SMELT_MAX_RANK + 16];
} body_check;

static bool check_expr(body_check *c, const ir_expr *e, bool root)
{
    switch (e->kind) {
    case IR_INT:
    case IR_FLOAT: return true;
    case IR_VAR:
        for (int i = 0; i < c->n_vars; i++)
            if (c->vars[i] == e->var) return true;
        smelt_errf(c->g->ctx, SMELT_ERR_ARG,
                   "te: compute '%s' uses '%s', which is neither one of its indices nor a "
                   "reduce axis of its reduction", c->name, e->var->name);
        return false;
    case IR_LOAD:
        for (int i = 0; i < e->load.n; i++)
            if (!check_expr(c, e->load.idx[i], false)) return false;
        return true;
    case IR_SELECT:
        return check_expr(c, e->select.cond, false) && check_expr(c, e->select.t, false) &&
               check_expr(c, e->select.f, false);
    case IR_CALL:
        for (int i = 0; i < e->call.n; i++)
            if (!check_expr(c, e->call.args[i], false)) return false;
        return true;
    case IR_REDUCE: {
        if (!root) {
            smelt_errf(c->g->ctx, SMELT_ERR_ARG,
                       "te: compute '%s': a reduction must be the whole body (compute it as a "
                       "stage of its own and read that)", c->name);
            return false;
        }
        if (c->n_vars + e->reduce.n_axes > (int)SMELT_ARRAY_LEN(c->vars)) {
            smelt_errf(c->g->ctx, SMELT_ERR_ARG, "te: compute '%s': too many reduce axes", c->name);
            return false;
        }
        for (int i = 0; i < e->reduce.n_axes; i++) c->vars[c->n_vars++] = e->reduce.axes[i].var;
        return check_expr(c, e->reduce.src, false);
    }
    case IR_NOT:
    case IR_CAST: return check_expr(c, e->bin.a, false);
    default: return check_expr(c, e->bin.a, false) && check_expr(c, e->bin.b, false);
    }
}

typedef struct subst_body {
    ir_expr *body;
    int rank;
    ir_var *const *from;
} subst_body;

static ir_expr *subst_body_fn(te_graph *te, ir_expr *const *idx, void *user)
{
    subst_body *sb = user;
    ir_subst map[SMELT_MAX_RANK];
    for (int i = 0; i < sb->rank; i++) map[i] = (ir_subst){.var = sb->from[i], .value = idx[i]};
    return ir_expr_substitute(&te->b, sb->body, map, sb->rank);
}

smelt_te_tensor *smelt_te_compute_end(smelt_te_graph *g, const char *name, smelt_dtype dtype,
                                      int rank, const int64_t *shape, smelt_te_expr *body)
{
    if (!g) return NULL;
    bool was_open = g->in_compute;
    g->in_compute = false;
    if (!was_open) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: compute '%s' ended without a begin",
                   name ? name : "");
        return NULL;
    }
    if (!graph_usable(g, "a compute") || !tensor_name_free(g, name) ||
        !shape_ok(g, name, rank, shape))
        return NULL;
    if (rank != g->pending_rank) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: compute '%s' has rank %d but began with %d", name,
                   rank, g->pending_rank);
        return NULL;
    }
    ir_expr *b = E(body);
    if (!b) {
        if (smelt_ctx_status(g->ctx) == SMELT_OK)
            smelt_errf(g->ctx, SMELT_ERR_ARG, "te: compute '%s' has no body", name);
        return NULL;
    }
    if (dtype == SMELT_DT_UNDEFINED) dtype = b->dtype;
    if (!dtype_ok(g->ctx, dtype, name)) return NULL;
    if (b->kind == IR_REDUCE && b->dtype != dtype) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: compute '%s' is %s but its reduction is %s (cast "
                   "what it reduces, or cast in a stage of its own)", name,
                   smelt_dtype_name(dtype), smelt_dtype_name(b->dtype));
        return NULL;
    }
    body_check c = {.g = g, .name = name};
    for (int i = 0; i < rank; i++) c.vars[c.n_vars++] = g->pending[i];
    if (!check_expr(&c, b, true)) return NULL;
    subst_body sb = {.body = b, .rank = rank, .from = g->pending};
    te_tensor *t = te_compute(g->te, name, dtype, rank, shape, subst_body_fn, &sb,
                              b->kind == IR_REDUCE ? "reduce" : NULL);
    return (smelt_te_tensor *)t;
}

smelt_te_tensor *smelt_te_compute(smelt_te_graph *g, const char *name, smelt_dtype dtype,
                                  int rank, const int64_t *shape, smelt_te_body_fn body,
                                  void *user)
{
    if (!g) return NULL;
    smelt_te_expr *idx[SMELT_MAX_RANK];
    if (!body) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: compute '%s' has no body function",
                   name ? name : "");
        return NULL;
    }
    if (smelt_te_compute_begin(g, rank, idx) != SMELT_OK) return NULL;
    smelt_te_expr *e = body(g, idx, user);
    return smelt_te_compute_end(g, name, dtype, rank, shape, e);
}

const char *smelt_te_tensor_name(const smelt_te_tensor *t) { return t ? T(t)->buf->name : NULL; }
smelt_dtype smelt_te_tensor_dtype(const smelt_te_tensor *t)
{
    return t ? T(t)->buf->dtype : SMELT_DT_UNDEFINED;
}
int smelt_te_tensor_rank(const smelt_te_tensor *t) { return t ? T(t)->buf->rank : -1; }
int64_t smelt_te_tensor_dim(const smelt_te_tensor *t, int d)
{
    return t && d >= 0 && d < T(t)->buf->rank ? T(t)->buf->shape[d] : -1;
}

const char *smelt_te_graph_text(smelt_te_graph *g)
{
    if (!g) return NULL;
    smelt_strbuf_fini(&g->text);
    smelt_strbuf_init(&g->text);
    te_graph_print(g->te, &g->text);
    return smelt_strbuf_cstr(&g->text);
}

/* ---- expressions ---------------------------------------------------------- */

static smelt_te_expr *built(smelt_te_graph *g, ir_expr *e)
{
    if (!e || g->te->b.failed) {
        smelt_errf(g->ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return X(e);
}

smelt_te_axis *smelt_te_reduce_axis(smelt_te_graph *g, const char *name, int64_t extent)
{
    if (!g || !check_name(g->ctx, "reduce axis", name)) return NULL;
    if (is_axis_name(name)) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: reduce axis '%s': i0, i1, ... name the data axes",
                   name);
        return NULL;
    }
    if (extent < 1) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: reduce axis '%s' has extent %lld", name,
                   (long long)extent);
        return NULL;
    }
    smelt_te_axis *a = smelt_arena_alloc(&g->te->arena, sizeof *a);
    char *n = smelt_arena_strdup(&g->te->arena, name);
    if (!a || !n) {
        smelt_errf(g->ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    a->ax = te_reduce_axis(g->te, n, extent);
    return a->ax.var ? a : NULL;
}

smelt_te_expr *smelt_te_axis_expr(smelt_te_graph *g, const smelt_te_axis *a)
{
    if (!g || !a) return NULL;
    return built(g, ir_var_ref(&g->te->b, a->ax.var));
}

smelt_te_expr *smelt_te_const_int(smelt_te_graph *g, smelt_dtype dtype, int64_t v)
{
    if (!g || !dtype_ok(g->ctx, dtype, "constant")) return NULL;
    if (is_float(dtype)) return built(g, ir_const_float(&g->te->b, dtype, (double)v));
    return built(g, ir_const_int(&g->te->b, dtype, dtype == SMELT_DT_BOOL ? v != 0 : v));
}

smelt_te_expr *smelt_te_const_float(smelt_te_graph *g, smelt_dtype dtype, double v)
{
    if (!g || !dtype_ok(g->ctx, dtype, "constant")) return NULL;
    if (!is_float(dtype)) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: a float constant of type %s",
                   smelt_dtype_name(dtype));
        return NULL;
    }
    return built(g, ir_const_float(&g->te->b, dtype, v));
}

smelt_te_expr *smelt_te_read(smelt_te_graph *g, const smelt_te_tensor *t, int n,
                             smelt_te_expr *const *idx)
{
    if (!g || !t) return NULL;
    if (te_tensor_of(g->te, T(t)->buf) != T(t)) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: tensor '%s' belongs to another graph",
                   T(t)->buf->name);
        return NULL;
    }
    if (n != T(t)->buf->rank) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: '%s' has rank %d but is read with %d indices",
                   T(t)->buf->name, T(t)->buf->rank, n);
        return NULL;
    }
    ir_expr *ix[SMELT_MAX_RANK];
    for (int i = 0; i < n; i++) {
        if (!idx || !idx[i]) return NULL;
        if (!is_integer(E(idx[i])->dtype)) {
            smelt_errf(g->ctx, SMELT_ERR_ARG, "te: index %d of '%s' is %s, not an integer", i,
                       T(t)->buf->name, smelt_dtype_name(E(idx[i])->dtype));
            return NULL;
        }
        ix[i] = ir_cast(&g->te->b, SMELT_DT_INT64, E(idx[i]));
    }
    return built(g, te_read(g->te, T(t), ix));
}

static const ir_kind binop_kind[] = {
    [SMELT_TE_ADD] = IR_ADD, [SMELT_TE_SUB] = IR_SUB, [SMELT_TE_MUL] = IR_MUL,
    [SMELT_TE_DIV] = IR_DIV, [SMELT_TE_MOD] = IR_MOD, [SMELT_TE_FLOORDIV] = IR_FLOORDIV,
    [SMELT_TE_FLOORMOD] = IR_FLOORMOD, [SMELT_TE_MIN] = IR_MIN, [SMELT_TE_MAX] = IR_MAX,
    [SMELT_TE_EQ] = IR_EQ, [SMELT_TE_NE] = IR_NE, [SMELT_TE_LT] = IR_LT, [SMELT_TE_LE] = IR_LE,
    [SMELT_TE_GT] = IR_GT, [SMELT_TE_GE] = IR_GE, [SMELT_TE_AND] = IR_AND, [SMELT_TE_OR] = IR_OR,
};
_Static_assert(SMELT_ARRAY_LEN(binop_kind) == SMELT_TE_BINOP_COUNT_, "binop table");

smelt_te_expr *smelt_te_binary(smelt_te_graph *g, smelt_te_binop op, smelt_te_expr *a,
                               smelt_te_expr *b)
{
    if (!g || !a || !b) return NULL;
    if ((unsigned)op >= SMELT_TE_BINOP_COUNT_) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: unknown binary operator %d", (int)op);
        return NULL;
    }
    ir_kind k = binop_kind[op];
    smelt_dtype da = E(a)->dtype, db = E(b)->dtype;
    if (da != db) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: '%s' of %s and %s (cast one side)", ir_kind_name(k),
                   smelt_dtype_name(da), smelt_dtype_name(db));
        return NULL;
    }
    bool logic = k == IR_AND || k == IR_OR;
    bool int_only = k == IR_MOD || k == IR_FLOORDIV || k == IR_FLOORMOD;
    if ((logic && da != SMELT_DT_BOOL) || (!logic && da == SMELT_DT_BOOL && k != IR_EQ &&
                                           k != IR_NE) ||
        (int_only && !is_integer(da))) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: '%s' of %s operands", ir_kind_name(k),
                   smelt_dtype_name(da));
        return NULL;
    }
    return built(g, ir_binary(&g->te->b, k, E(a), E(b)));
}

smelt_te_expr *smelt_te_neg(smelt_te_graph *g, smelt_te_expr *a)
{
    if (!g || !a) return NULL;
    smelt_te_expr *zero = smelt_te_const_int(g, E(a)->dtype, 0);
    return smelt_te_binary(g, SMELT_TE_SUB, zero, a);
}

smelt_te_expr *smelt_te_not(smelt_te_graph *g, smelt_te_expr *a)
{
    if (!g || !a) return NULL;
    if (E(a)->dtype != SMELT_DT_BOOL) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: not of a %s", smelt_dtype_name(E(a)->dtype));
        return NULL;
    }
    return built(g, ir_not(&g->te->b, E(a)));
}

smelt_te_expr *smelt_te_select(smelt_te_graph *g, smelt_te_expr *cond, smelt_te_expr *t,
                               smelt_te_expr *f)
{
    if (!g || !cond || !t || !f) return NULL;
    if (E(cond)->dtype != SMELT_DT_BOOL || E(t)->dtype != E(f)->dtype) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: select(%s, %s, %s): a bool condition and two "
                   "values of one type", smelt_dtype_name(E(cond)->dtype),
                   smelt_dtype_name(E(t)->dtype), smelt_dtype_name(E(f)->dtype));
        return NULL;
    }
    return built(g, ir_select(&g->te->b, E(cond), E(t), E(f)));
}

smelt_te_expr *smelt_te_cast(smelt_te_graph *g, smelt_dtype dtype, smelt_te_expr *a)
{
    if (!g || !a || !dtype_ok(g->ctx, dtype, "cast")) return NULL;
    return built(g, ir_cast(&g->te->b, dtype, E(a)));
}

smelt_te_expr *smelt_te_call(smelt_te_graph *g, const char *fn, int n,
                             smelt_te_expr *const *args)
{
    if (!g || !fn) return NULL;
    int op = -1;
    for (int i = 0; i < IR_CALL_LB_DECODE; i++) /* the low-bit conversions are internal */
        if (!strcmp(ir_call_name((ir_call_op)i), fn)) op = i;
    if (op < 0) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: unknown function '%.64s'", fn);
        return NULL;
    }
    int want = op == IR_CALL_POW || op == IR_CALL_FMOD ? 2 : 1;
    if (n != want || !args) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: %s takes %d argument%s, not %d", fn, want,
                   want > 1 ? "s" : "", n);
        return NULL;
    }
    ir_expr *a[2];
    for (int i = 0; i < n; i++) {
        if (!args[i]) return NULL;
        a[i] = E(args[i]);
        if (!is_float(a[i]->dtype) || a[i]->dtype != a[0]->dtype) {
            smelt_errf(g->ctx, SMELT_ERR_ARG, "te: %s of %s: float arguments of one type", fn,
                       smelt_dtype_name(a[i]->dtype));
            return NULL;
        }
    }
    smelt_dtype rt = op == IR_CALL_ISNAN || op == IR_CALL_ISINF ? SMELT_DT_BOOL : a[0]->dtype;
    return built(g, ir_call(&g->te->b, (ir_call_op)op, rt, n, a));
}

smelt_te_expr *smelt_te_reduce(smelt_te_graph *g, smelt_te_reduce_op op, smelt_te_expr *src,
                               int n, smelt_te_axis *const *axes)
{
    if (!g || !src) return NULL;
    if ((unsigned)op > SMELT_TE_RMIN || n < 1 || n > SMELT_MAX_RANK || !axes) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: a reduction over %d axes (1-%d allowed)", n,
                   SMELT_MAX_RANK);
        return NULL;
    }
    if (E(src)->dtype == SMELT_DT_BOOL) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: a reduction of bool values (cast them)");
        return NULL;
    }
    ir_axis ax[SMELT_MAX_RANK];
    for (int i = 0; i < n; i++) {
        if (!axes[i]) return NULL;
        ax[i] = axes[i]->ax;
        for (int j = 0; j < i; j++)
            if (!strcmp(ax[j].var->name, ax[i].var->name)) {
                smelt_errf(g->ctx, SMELT_ERR_ARG, "te: a reduction over two axes named '%s'",
                           ax[i].var->name);
                return NULL;
            }
    }
    static const ir_reduce_op ops[] = {IR_REDUCE_SUM, IR_REDUCE_PROD, IR_REDUCE_MAX,
                                       IR_REDUCE_MIN};
    return built(g, te_reduce(g->te, ops[op], E(src), n, ax));
}

smelt_dtype smelt_te_expr_dtype(const smelt_te_expr *e)
{
    return e ? ((const ir_expr *)e)->dtype : SMELT_DT_UNDEFINED;
}

/* ---- schedules ------------------------------------------------------------ */

smelt_te_schedule *smelt_te_schedule_new(smelt_te_graph *g, int n_outputs,
                                         smelt_te_tensor *const *outputs)
{
    if (!g) return NULL;
    if (g->borrowed) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: a schedule inside a custom op's definition");
        return NULL;
    }
    if (g->in_compute) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: a schedule inside a compute");
        return NULL;
    }
    if (n_outputs < 1 || n_outputs > TE_GROUP_MAX_IO || !outputs) {
        smelt_errf(g->ctx, SMELT_ERR_ARG, "te: a schedule needs 1-%d outputs, not %d",
                   TE_GROUP_MAX_IO, n_outputs);
        return NULL;
    }
    for (int i = 0; i < n_outputs; i++) {
        te_tensor *t = T(outputs[i]);
        if (!t || te_tensor_of(g->te, t->buf) != t) {
            smelt_errf(g->ctx, SMELT_ERR_ARG, "te: schedule output %d is not a tensor of the graph",
                       i);
            return NULL;
        }
        if (t->kind != TE_COMPUTE) {
            smelt_errf(g->ctx, SMELT_ERR_ARG, "te: schedule output '%s' is a placeholder",
                       t->buf->name);
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (outputs[j] == outputs[i]) {
                smelt_errf(g->ctx, SMELT_ERR_ARG, "te: schedule output '%s' named twice",
                           t->buf->name);
                return NULL;
            }
    }
    if (g->frozen) {
        bool same = g->te->outputs.len == n_outputs;
        for (int i = 0; same && i < n_outputs; i++)
            same = g->te->outputs.items[i] == (void *)outputs[i];
        if (!same) {
            smelt_errf(g->ctx, SMELT_ERR_ARG, "te: the graph's first schedule had other outputs "
                       "(declare a new graph for these)");
            return NULL;
        }
    } else {
        for (int i = 0; i < n_outputs; i++)
            if (!te_mark_output(g->te, T(outputs[i]))) {
                smelt_errf(g->ctx, SMELT_ERR_NOMEM, "out of memory");
                return NULL;
            }
        g->frozen = true;
    }
    smelt_te_schedule *s = smelt_calloc(1, sizeof *s);
    if (!s) {
        smelt_errf(g->ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->g = g;
    sch_schedule_init(&s->sched);
    smelt_strbuf_init(&s->text);
    return s;
}

void smelt_te_schedule_free(smelt_te_schedule *s)
{
    if (!s) return;
    sch_schedule_fini(&s->sched);
    smelt_strbuf_fini(&s->text);
    smelt_free(s);
}

static const char *step_text(const sch_step *step, char *buf, size_t cap)
{
    sch_schedule one = {.n = 1, .cap = 1, .steps = (sch_step *)step};
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    sch_schedule_print(&one, &sb);
    snprintf(buf, cap, "%s", smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
    size_t n = strlen(buf);
    if (n && buf[n - 1] == '\n') buf[n - 1] = 0;
    return buf;
}

/* Append a step and replay the whole schedule; an illegal step is dropped
 * and the error names it. */
static smelt_status add_step(smelt_te_schedule *s, const sch_step *step)
{
    if (!s) return SMELT_ERR_ARG;
    smelt_ctx *ctx = s->g->ctx;
    if (!step->stage) return smelt_errf(ctx, SMELT_ERR_ARG, "schedule step without a stage");
    for (int i = 0; i < step->n_iters; i++)
        if (!step->iters[i])
            return smelt_errf(ctx, SMELT_ERR_ARG, "schedule step on '%.64s' with a missing "
                              "iteration name", step->stage);
    if (step->kind == SCH_SPLIT && step->factor < 1)
        return smelt_errf(ctx, SMELT_ERR_ARG, "schedule step 'split %.64s %.64s %lld': the "
                          "factor must be positive", step->stage, step->iters[0],
                          (long long)step->factor);
    SMELT_TRY(sch_add(ctx, &s->sched, step));
    sch_state *st = NULL;
    smelt_ctx *tmp = smelt_ctx_new();
    if (!tmp) {
        s->sched.n--;
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    smelt_status r = sch_state_build(tmp, s->g->te, &s->sched, &st);
    sch_state_free(st);
    if (r != SMELT_OK) {
        char text[512];
        step_text(&s->sched.steps[s->sched.n - 1], text, sizeof text);
        s->sched.n--;
        const char *msg = smelt_ctx_message(tmp);
        char prefix[160];
        snprintf(prefix, sizeof prefix, "schedule step on '%s': ", s->sched.steps[s->sched.n].stage);
        if (!strncmp(msg, prefix, strlen(prefix))) msg += strlen(prefix);
        smelt_errf(ctx, r, "schedule step %d '%s': %s", s->sched.n + 1, text, msg);
    }
    smelt_ctx_free(tmp);
    return r;
}

static sch_step step1(sch_kind k, const char *stage, const char *iter)
{
    return (sch_step){.kind = k, .stage = stage, .n_iters = 1, .iters = {iter}};
}

smelt_status smelt_te_split(smelt_te_schedule *s, const char *stage, const char *iter,
                            int64_t factor)
{
    sch_step st = step1(SCH_SPLIT, stage, iter);
    st.factor = factor;
    return add_step(s, &st);
}

smelt_status smelt_te_tile(smelt_te_schedule *s, const char *stage, const char *x,
                           const char *y, int64_t fx, int64_t fy)
{
    if (!s) return SMELT_ERR_ARG;
    int n0 = s->sched.n;
    smelt_status r = smelt_te_split(s, stage, x, fx);
    if (r == SMELT_OK) r = smelt_te_split(s, stage, y, fy);
    if (r == SMELT_OK) {
        char xo[80], yo[80], xi[80], yi[80];
        snprintf(xo, sizeof xo, "%.70s.o", x);
        snprintf(xi, sizeof xi, "%.70s.i", x);
        snprintf(yo, sizeof yo, "%.70s.o", y);
        snprintf(yi, sizeof yi, "%.70s.i", y);
        const char *order[4] = {xo, yo, xi, yi};
        r = smelt_te_reorder(s, stage, 4, order);
    }
    if (r != SMELT_OK) s->sched.n = n0; /* all or nothing */
    return r;
}

smelt_status smelt_te_fuse(smelt_te_schedule *s, const char *stage, const char *outer,
                           const char *inner)
{
    sch_step st = {.kind = SCH_FUSE, .stage = stage, .n_iters = 2, .iters = {outer, inner}};
    return add_step(s, &st);
}

smelt_status smelt_te_reorder(smelt_te_schedule *s, const char *stage, int n,
                              const char *const *iters)
{
    if (!s) return SMELT_ERR_ARG;
    if (n < 1 || n > SCH_MAX_STEP_ITERS || !iters)
        return smelt_errf(s->g->ctx, SMELT_ERR_ARG, "schedule step 'reorder %.64s': 1-%d "
                          "iteration names, not %d", stage ? stage : "", SCH_MAX_STEP_ITERS, n);
    sch_step st = {.kind = SCH_REORDER, .stage = stage, .n_iters = n};
    for (int i = 0; i < n; i++) st.iters[i] = iters[i];
    return add_step(s, &st);
}

smelt_status smelt_te_vectorize(smelt_te_schedule *s, const char *stage, const char *iter)
{
    sch_step st = step1(SCH_VECTORIZE, stage, iter);
    return add_step(s, &st);
}

smelt_status smelt_te_unroll(smelt_te_schedule *s, const char *stage, const char *iter)
{
    sch_step st = step1(SCH_UNROLL, stage, iter);
    return add_step(s, &st);
}

smelt_status smelt_te_parallel(smelt_te_schedule *s, const char *stage, const char *iter)
{
    sch_step st = step1(SCH_PARALLEL, stage, iter);
    return add_step(s, &st);
}

smelt_status smelt_te_compute_inline(smelt_te_schedule *s, const char *stage)
{
    sch_step st = {.kind = SCH_COMPUTE_INLINE, .stage = stage};
    return add_step(s, &st);
}

smelt_status smelt_te_compute_at(smelt_te_schedule *s, const char *stage, const char *consumer,
                                 const char *iter)
{
    sch_step st = step1(SCH_COMPUTE_AT, stage, iter);
    st.target = consumer;
    if (s && !consumer)
        return smelt_errf(s->g->ctx, SMELT_ERR_ARG, "schedule step 'compute_at %.64s': no "
                          "consumer named", stage ? stage : "");
    return add_step(s, &st);
}

smelt_status smelt_te_cache_write(smelt_te_schedule *s, const char *stage)
{
    sch_step st = {.kind = SCH_CACHE_WRITE, .stage = stage};
    return add_step(s, &st);
}

smelt_status smelt_te_rfactor(smelt_te_schedule *s, const char *stage, const char *iter,
                              int64_t factor)
{
    sch_step st = step1(SCH_RFACTOR, stage, iter);
    st.factor = factor;
    if (s && factor < 1)
        return smelt_errf(s->g->ctx, SMELT_ERR_ARG, "schedule step 'rfactor %.64s': the factor "
                          "must be positive", stage ? stage : "");
    return add_step(s, &st);
}

smelt_status smelt_te_tensorize(smelt_te_schedule *s, const char *stage, const char *iter,
                                const char *kernel)
{
    sch_step st = step1(SCH_TENSORIZE, stage, iter);
    st.target = kernel;
    if (s && !kernel)
        return smelt_errf(s->g->ctx, SMELT_ERR_ARG, "schedule step 'tensorize %.64s': no kernel "
                          "named", stage ? stage : "");
    return add_step(s, &st);
}

smelt_status smelt_te_apply_text(smelt_te_schedule *s, const char *text)
{
    if (!s || !text) return s ? smelt_errf(s->g->ctx, SMELT_ERR_ARG, "no schedule text") : SMELT_ERR_ARG;
    smelt_ctx *ctx = s->g->ctx;
    int line = 1;
    for (const char *p = text; *p; line++) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char *ln = smelt_alloc(n + 1);
        if (!ln) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        memcpy(ln, p, n);
        ln[n] = 0;
        char *hash = strchr(ln, '#');
        if (hash) *hash = 0;
        sch_schedule one;
        sch_schedule_init(&one);
        smelt_status r = sch_schedule_parse(ctx, ln, &one);
        for (int i = 0; r == SMELT_OK && i < one.n; i++) r = add_step(s, &one.steps[i]);
        sch_schedule_fini(&one);
        smelt_free(ln);
        if (r != SMELT_OK) {
            smelt_ctx_append(ctx, " (line %d)", line);
            return r;
        }
        p += n;
        if (*p) p++;
    }
    return SMELT_OK;
}

const char *smelt_te_schedule_text(smelt_te_schedule *s)
{
    if (!s) return NULL;
    smelt_strbuf_fini(&s->text);
    smelt_strbuf_init(&s->text);
    sch_schedule_print(&s->sched, &s->text);
    return smelt_strbuf_cstr(&s->text);
}

const char *smelt_te_stage_loops(smelt_te_schedule *s, const char *stage)
{
    if (!s || !stage) return NULL;
    sch_state *st = NULL;
    if (sch_state_build(s->g->ctx, s->g->te, &s->sched, &st) != SMELT_OK) return NULL;
    int si = sch_stage_index(st, stage);
    if (si < 0 || st->stages[si].is_placeholder) {
        smelt_errf(s->g->ctx, SMELT_ERR_ARG, "schedule: no computed stage named '%.64s'", stage);
        sch_state_free(st);
        return NULL;
    }
    smelt_strbuf_fini(&s->text);
    smelt_strbuf_init(&s->text);
    const sch_stage *sg = &st->stages[si];
    for (int i = 0; i < sg->n_leaves; i++)
        smelt_strbuf_printf(&s->text, "%s%s", i ? " " : "", sg->iters[sg->leaves[i]].name);
    sch_state_free(st);
    return smelt_strbuf_cstr(&s->text);
}

/* ---- lowering and building ------------------------------------------------ */

/* Check args (each placeholder of the graph and each output once) and lower. */
static smelt_status lower_args(smelt_te_schedule *s, int n_args, smelt_te_tensor *const *args,
                               ir_builder *b, sch_state **st, ir_func **f)
{
    smelt_ctx *ctx = s->g->ctx;
    te_graph *te = s->g->te;
    *st = NULL;
    if (n_args < 1 || n_args > 2 * TE_GROUP_MAX_IO || !args)
        return smelt_errf(ctx, SMELT_ERR_ARG, "te: %d arguments (1-%d allowed)", n_args,
                          2 * TE_GROUP_MAX_IO);
    for (int i = 0; i < n_args; i++) {
        te_tensor *t = T(args[i]);
        if (!t || te_tensor_of(te, t->buf) != t)
            return smelt_errf(ctx, SMELT_ERR_ARG, "te: argument %d is not a tensor of the graph", i);
        for (int j = 0; j < i; j++)
            if (args[j] == args[i])
                return smelt_errf(ctx, SMELT_ERR_ARG, "te: argument '%s' named twice",
                                  t->buf->name);
        if (t->kind == TE_COMPUTE && t->buf->kind != IR_BUF_OUTPUT)
            return smelt_errf(ctx, SMELT_ERR_ARG, "te: argument '%s' is not an output of the "
                              "schedule (intermediate stages live inside the function)",
                              t->buf->name);
    }
    for (int i = 0; i < te->tensors.len; i++) {
        te_tensor *t = te->tensors.items[i];
        if (t->kind != TE_PLACEHOLDER && t->buf->kind != IR_BUF_OUTPUT) continue;
        bool found = false;
        for (int j = 0; j < n_args; j++) found |= T(args[j]) == t;
        if (!found)
            return smelt_errf(ctx, SMELT_ERR_ARG, "te: %s '%s' is missing from the arguments",
                              t->kind == TE_PLACEHOLDER ? "placeholder" : "output", t->buf->name);
    }
    SMELT_TRY(sch_state_build(ctx, te, &s->sched, st));
    smelt_status r = lower_func(ctx, *st, b, "smelt_te_fn", f);
    if (r == SMELT_OK) (*f)->comment = "user tensor expression";
    return r;
}

const char *smelt_te_lower(smelt_te_schedule *s, int n_args, smelt_te_tensor *const *args)
{
    if (!s) return NULL;
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder b;
    ir_builder_init(&b, &ar);
    b.next_id = 1 << 24;
    sch_state *st = NULL;
    ir_func *f = NULL;
    smelt_status r = lower_args(s, n_args, args, &b, &st, &f);
    const char *out = NULL;
    if (r == SMELT_OK) {
        smelt_strbuf_fini(&s->text);
        smelt_strbuf_init(&s->text);
        smelt_strbuf_append(&s->text, "func(");
        for (int i = 0; i < f->n_params; i++)
            smelt_strbuf_printf(&s->text, "%s%s", i ? ", " : "", f->params[i]->name);
        smelt_strbuf_append(&s->text, ")\n");
        ir_stmt_print(f->body, 1, &s->text);
        if (s->text.failed) smelt_errf(s->g->ctx, SMELT_ERR_NOMEM, "out of memory");
        else out = smelt_strbuf_cstr(&s->text);
    }
    sch_state_free(st);
    smelt_arena_fini(&ar);
    return out;
}

static void io_desc(ir_io_desc *d, const ir_buffer *b)
{
    d->name = b->name;
    d->dtype = b->dtype;
    d->rank = b->rank;
    for (int i = 0; i < b->rank; i++) d->dims[i] = b->shape[i];
}

smelt_te_func *smelt_te_build(smelt_te_schedule *s, int n_args, smelt_te_tensor *const *args,
                              const char *target, int num_threads)
{
    if (!s) return NULL;
    smelt_ctx *ctx = s->g->ctx;
    const cg_target *tg = target && *target && strcmp(target, "host") != 0
                              ? cg_target_find(target)
                              : cg_target_host();
    if (!tg) {
        smelt_errf(ctx, SMELT_ERR_ARG, "unknown target '%.64s' (known: host, %s)", target,
                   cg_target_names());
        return NULL;
    }
    if (num_threads < 0) {
        smelt_errf(ctx, SMELT_ERR_ARG, "te: %d threads", num_threads);
        return NULL;
    }
    smelt_te_func *fn = smelt_calloc(1, sizeof *fn);
    if (!fn) {
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    fn->ctx = ctx;
    smelt_arena ar;
    smelt_arena_init(&ar);
    ir_builder b;
    ir_builder_init(&b, &ar);
    b.next_id = 1 << 24;
    sch_state *st = NULL;
    ir_func *f = NULL;
    smelt_strbuf src;
    smelt_strbuf_init(&src);
    char *lib = NULL;
    smelt_status r = lower_args(s, n_args, args, &b, &st, &f);
    ir_io_desc *ins = NULL, *outs = NULL;
    ir_slot *slots = NULL;
    if (r == SMELT_OK) {
        ins = smelt_arena_alloc(&ar, sizeof *ins * (size_t)n_args);
        outs = smelt_arena_alloc(&ar, sizeof *outs * (size_t)n_args);
        slots = smelt_arena_alloc(&ar, sizeof *slots * (size_t)(f->n_params + 1));
        if (!ins || !outs || !slots) r = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    ir_program p = {0};
    if (r == SMELT_OK) {
        fn->n_args = n_args;
        for (int i = 0; i < n_args; i++) {
            const ir_buffer *buf = T(args[i])->buf;
            fn->is_output[i] = buf->kind == IR_BUF_OUTPUT;
            if (fn->is_output[i]) {
                fn->slot[i] = p.n_outputs;
                io_desc(&outs[p.n_outputs++], buf);
            } else {
                fn->slot[i] = p.n_inputs;
                io_desc(&ins[p.n_inputs++], buf);
            }
        }
        for (int k = 0; k < f->n_params; k++)
            for (int i = 0; i < n_args; i++)
                if (T(args[i])->buf == f->params[k])
                    slots[k] = (ir_slot){.kind = fn->is_output[i] ? IR_SLOT_OUTPUT : IR_SLOT_INPUT,
                                         .index = fn->slot[i]};
        ir_call_site call = {.func = f, .args = slots};
        ir_func *funcs[1] = {f};
        p.n_funcs = 1;
        p.funcs = funcs;
        p.n_calls = 1;
        p.calls = &call;
        p.inputs = ins;
        p.outputs = outs;
        r = cg_emit_program(ctx, &p, tg, &src);
        if (r == SMELT_OK && src.failed) r = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    if (r == SMELT_OK) r = cg_build_shared(ctx, smelt_strbuf_cstr(&src), tg, &lib);
    if (r == SMELT_OK) r = cg_load_module(ctx, lib, &fn->handle, &fn->info);
    if (r == SMELT_OK) {
        char err[512] = "";
        fn->rt = smelt_rt_model_from_info(fn->info, NULL, num_threads, err, sizeof err);
        if (!fn->rt) r = smelt_errf(ctx, SMELT_ERR_RUNTIME, "loading the built function: %s", err);
    }
    if (r == SMELT_OK) {
        fn->source = smelt_strdup(smelt_strbuf_cstr(&src));
        if (!fn->source) r = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    smelt_free(lib);
    smelt_strbuf_fini(&src);
    sch_state_free(st);
    smelt_arena_fini(&ar);
    if (r != SMELT_OK) {
        smelt_te_func_free(fn);
        return NULL;
    }
    return fn;
}

void smelt_te_func_free(smelt_te_func *f)
{
    if (!f) return;
    smelt_rt_model_free(f->rt);
    if (f->handle) cg_unload_module(f->handle);
    smelt_free(f->source);
    smelt_free(f);
}

smelt_status smelt_te_func_call(smelt_te_func *f, int n, void *const *buffers,
                                const size_t *bytes)
{
    if (!f) return SMELT_ERR_ARG;
    if (n != f->n_args || !buffers || !bytes)
        return smelt_errf(f->ctx, SMELT_ERR_ARG, "te: the function takes %d buffers, not %d",
                          f->n_args, n);
    const void *in[2 * TE_GROUP_MAX_IO];
    void *out[2 * TE_GROUP_MAX_IO];
    size_t in_b[2 * TE_GROUP_MAX_IO], out_b[2 * TE_GROUP_MAX_IO];
    int n_in = 0, n_out = 0;
    for (int i = 0; i < n; i++) {
        if (f->is_output[i]) {
            out[f->slot[i]] = buffers[i];
            out_b[f->slot[i]] = bytes[i];
            n_out++;
        } else {
            in[f->slot[i]] = buffers[i];
            in_b[f->slot[i]] = bytes[i];
            n_in++;
        }
    }
    smelt_rt_status r = smelt_rt_model_run(f->rt, in, in_b, n_in, out, out_b, n_out);
    if (r == SMELT_RT_OK) return SMELT_OK;
    return smelt_errf(f->ctx, r == SMELT_RT_ERR_ARG ? SMELT_ERR_ARG : SMELT_ERR_RUNTIME,
                      "te: calling the function: %s", smelt_rt_model_error(f->rt));
}

const char *smelt_te_func_source(const smelt_te_func *f) { return f ? f->source : NULL; }
