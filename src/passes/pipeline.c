/* The pass manager: THE ordered table of graph passes, with the level each
 * starts at, and the instruments around every pass (timing, what changed,
 * IR dumps). */
#include <string.h>
#include <time.h>

#include "ops/op.h"
#include "passes/passes.h"

typedef smelt_status (*pass_fn)(smelt_ctx *ctx, gr_graph *g);

typedef struct pass_row {
    const char *name;
    pass_fn fn;
    int min_level;
    const char *description;
} pass_row;

static const pass_row pass_table[] = {
    {"infer_shapes", pass_infer_shapes, 0, "dtypes and shapes; small shape subgraphs fold"},
    {"split_args", pass_split_args, 0, "Concats wider than a generated function, as trees"},
    {"expand_flex", pass_expand_flex, 0, "FlexAttention's modifier bodies as nodes of the graph"},
    {"unroll_scan8", pass_unroll_scan8, 0, "Scan-8 (batch axis) unrolled per entry and step"},
    {"fuse_qdq", pass_fuse_qdq, 2, "DequantizeLinear -> Conv -> QuantizeLinear as QLinearConv"},
    {"widen_half", pass_widen_half, 1, "half-precision graphs around Conv/MatMul in float32"},
    {"fold_constants", pass_fold_constants, 1, "evaluate all-constant nodes (size-capped)"},
    {"eliminate_dead", pass_eliminate_dead, 1, "drop nodes that reach no output"},
    {"eliminate_common", pass_eliminate_common, 1, "one node per (op, inputs, attributes)"},
    {"simplify_algebra", pass_simplify_algebra, 2, "identities, op chains, Pow, MatMul+Add"},
    {"fuse_attention", pass_fuse_attention, 2, "attention blocks as one FusedAttention node"},
    {"fold_batchnorm", pass_fold_batchnorm, 2, "BatchNorm, per-channel Mul/Add into Conv"},
    {"alter_layout", pass_alter_layout, 2, "conv chains in the blocked layout NCHW[x]c"},
    {"pack_weights", pass_pack_weights, 2, "constant MatMul/Gemm weights in column panels"},
    {"pack_runtime_b", pass_pack_runtime_b, 2, "large MatMul B computed at run time in column panels"},
    {"fuse_ops", pass_fuse_ops, 2, "operator fusion"},
    /* memory planning runs in lowering (passes/plan_memory.c, called from
     * lower/program.c): only there are the materialised values and the call
     * order known */
};

#define N_PASSES ((int)(sizeof pass_table / sizeof pass_table[0]))
_Static_assert(N_PASSES <= PASS_MAX, "pass_report holds PASS_MAX passes");

int pass_count(void) { return N_PASSES; }
const char *pass_name(int i) { return pass_table[i].name; }
const char *pass_description(int i) { return pass_table[i].description; }
int pass_min_level(int i) { return pass_table[i].min_level; }

/* Is `name` (length n) one of the comma-separated items of list? */
static bool list_has(const char *list, const char *name, size_t n)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0) return true;
        p += len + (p[len] == ',');
    }
    return false;
}

static int find_pass(const char *name, size_t n)
{
    for (int i = 0; i < N_PASSES; i++)
        if (strlen(pass_table[i].name) == n && strncmp(pass_table[i].name, name, n) == 0)
            return i;
    return -1;
}

static smelt_status unknown_pass(smelt_ctx *ctx, const char *name, size_t n)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    for (int i = 0; i < N_PASSES; i++)
        smelt_strbuf_printf(&sb, "%s%s", i ? ", " : "", pass_table[i].name);
    smelt_status s = smelt_errf(ctx, SMELT_ERR_ARG, "unknown pass '%.*s' (passes: %s)", (int)n,
                                name, smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
    return s;
}

smelt_status pass_check_names(smelt_ctx *ctx, const char *list)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len && find_pass(p, len) < 0) return unknown_pass(ctx, p, len);
        p += len + (p[len] == ',');
    }
    return SMELT_OK;
}

/* ---- instruments ---- */

typedef struct graph_snapshot {
    int nodes, values;
    uint64_t hash;
    int ops[OP_COUNT_];
} graph_snapshot;

static void snapshot(const gr_graph *g, smelt_strbuf *text, graph_snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->nodes = g->nodes.len;
    s->values = g->values.len;
    for (int i = 0; i < g->nodes.len; i++) s->ops[((gr_node *)g->nodes.items[i])->op]++;
    smelt_strbuf_fini(text);
    smelt_strbuf_init(text);
    gr_graph_print(g, text);
    const char *t = smelt_strbuf_cstr(text);
    s->hash = smelt_hash_bytes(t, strlen(t), 0);
}

static void describe_change(const graph_snapshot *a, const graph_snapshot *b, pass_stat *st)
{
    st->changed = a->nodes != b->nodes || a->values != b->values || a->hash != b->hash;
    size_t used = 0, cap = sizeof st->change;
    st->change[0] = '\0';
    for (int k = 0; k < OP_COUNT_ && used + 1 < cap; k++) {
        int d = b->ops[k] - a->ops[k];
        if (!d) continue;
        int w = snprintf(st->change + used, cap - used, "%s%+d %s", used ? ", " : "", d,
                         op_get((op_kind)k)->name);
        used += w > 0 ? (size_t)w : 0;
    }
    if (used >= cap) memcpy(st->change + cap - 4, "...", 4);
    if (!used && st->changed && b->values != a->values)
        snprintf(st->change, cap, "%+d values", b->values - a->values);
    else if (!used && st->changed)
        snprintf(st->change, cap, "rewritten");
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void dump(const pass_options *o, const char *name, const pass_stat *st,
                 smelt_strbuf *text)
{
    if (!o->dump_after || (strcmp(o->dump_after, "all") != 0 && strcmp(o->dump_after, name) != 0))
        return;
    FILE *f = o->dump_out ? o->dump_out : stdout;
    if (!st->changed) {
        fprintf(f, "## after %s (unchanged)\n", name);
        return;
    }
    fprintf(f, "## after %s\n%s", name, smelt_strbuf_cstr(text));
}

static smelt_status run_one(smelt_ctx *ctx, gr_graph *g, const pass_row *p,
                            const pass_options *o, pass_stat *st, smelt_strbuf *text,
                            graph_snapshot *before)
{
    graph_snapshot after;
    st->nodes_before = g->nodes.len;
    double t0 = now_ms();
    SMELT_TRY(p->fn(ctx, g));
    SMELT_TRY(gr_graph_verify(ctx, g));
    st->ms = now_ms() - t0;
    st->ran = true;
    st->nodes_after = g->nodes.len;
    snapshot(g, text, &after);
    describe_change(before, &after, st);
    *before = after;
    dump(o, p->name, st, text);
    return SMELT_OK;
}

/* If/Loop/Scan bodies get the same passes at the same level, without the
 * instruments (reports and dumps describe the model's graph), after the
 * graph around them: its inference gave the bodies' input types. */
static smelt_status optimize_bodies(smelt_ctx *ctx, gr_graph *g, const pass_options *o)
{
    pass_options quiet = *o;
    quiet.dump_after = NULL;
    for (int i = 0; i < g->nodes.len; i++) {
        gr_node *n = g->nodes.items[i];
        if (!(op_get(n->op)->def->flags & OP_FLAG_SUBGRAPHS)) continue;
        for (int k = 0; k < n->n_attrs; k++) {
            gr_graph *body = n->attrs[k].type == GR_ATTR_GRAPH ? n->attrs[k].g : NULL;
            if (!body) continue;
            body->hw = g->hw;
            SMELT_TRY(pass_pipeline_run(ctx, body, &quiet, NULL));
        }
    }
    return SMELT_OK;
}

smelt_status pass_pipeline_run(smelt_ctx *ctx, gr_graph *g, const pass_options *o,
                               pass_report *report)
{
    SMELT_TRY(pass_check_names(ctx, o->disabled));
    if (o->dump_after && strcmp(o->dump_after, "all") != 0 &&
        find_pass(o->dump_after, strlen(o->dump_after)) < 0)
        return unknown_pass(ctx, o->dump_after, strlen(o->dump_after));
    pass_report local;
    if (!report) report = &local;
    memset(report, 0, sizeof *report);
    smelt_strbuf text;
    smelt_strbuf_init(&text);
    graph_snapshot *before = smelt_calloc(1, sizeof *before);
    smelt_status s = before ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s == SMELT_OK) snapshot(g, &text, before);
    for (int i = 0; s == SMELT_OK && i < N_PASSES; i++) {
        const pass_row *p = &pass_table[i];
        pass_stat *st = &report->passes[report->n++];
        st->name = p->name;
        st->nodes_before = st->nodes_after = g->nodes.len;
        if (o->opt_level < p->min_level ||
            list_has(o->disabled, p->name, strlen(p->name)))
            continue;
        s = run_one(ctx, g, p, o, st, &text, before);
    }
    smelt_free(before);
    smelt_strbuf_fini(&text);
    return s == SMELT_OK ? optimize_bodies(ctx, g, o) : s;
}
