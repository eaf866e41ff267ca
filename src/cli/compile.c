/* smelt compile: import and optimise a model; print its IR or statistics. */
#include <stdlib.h>
#include <string.h>

#include "api/smelt_internal.h"
#include "cli/cli.h"
#include "codegen/target.h"
#include "ops/control.h"
#include "ops/op.h"

#define COMPILE_MAX_MODELS 256

typedef struct compile_opts {
    const char *models[COMPILE_MAX_MODELS];
    int n_models;
    const char *model, *dump, *out_dir;
    bool stats, json;
    smelt_options o;
    cli_dims dims;
} compile_opts;

/* Bytes of the values nodes produce that are not graph outputs. */
static int64_t intermediate_bytes(const gr_graph *g)
{
    int64_t sum = 0;
    for (int i = 0; i < g->nodes.len; i++) {
        const gr_node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_outputs; k++) {
            const gr_value *v = n->outputs[k];
            int64_t numel = v ? gr_value_numel(v) : -1;
            if (v && !v->is_output && numel > 0) sum += numel * (int64_t)smelt_dtype_size(v->dtype);
        }
    }
    return sum;
}

static void print_ops_text(const gr_graph *g)
{
    int counts[OP_COUNT_] = {0};
    for (int i = 0; i < g->nodes.len; i++) counts[((gr_node *)g->nodes.items[i])->op]++;
    printf("ops:");
    for (int k = 0; k < OP_COUNT_; k++)
        if (counts[k]) printf(" %s=%d", op_get((op_kind)k)->name, counts[k]);
    printf("\n");
}

/* One generated function per unit (gr_unit_end), in call order; functions
 * beyond the units copy graph outputs no node writes. */

/* A fused group of thousands of ops (a long elementwise chain) prints its
 * first and last few and the count, not one line of every op. */
#define STATS_OPS_SHOWN 24
#define STATS_OPS_HEAD 16
#define STATS_OPS_TAIL 4

static void print_unit_ops(const gr_graph *g, int start, int end)
{
    int n = end - start;
    for (int i = start; i < end; i++) {
        if (n > STATS_OPS_SHOWN && i == start + STATS_OPS_HEAD) {
            printf(" ... (%d ops)", n);
            i = end - STATS_OPS_TAIL;
        }
        printf(" %s", ((const gr_node *)g->nodes.items[i])->op_type);
    }
    printf("\n");
}

/* The functions of g's units in call order: a control node (If, Loop,
 * Scan) generates none itself but its bodies' in order (lower/control.c;
 * an If on a constant only the branch taken).  `emit` prints one. */
typedef void (*unit_printer)(const gr_graph *g, int start, int end, const gr_node *in, int f);

static int walk_functions(const gr_graph *g, const gr_node *in, unit_printer emit, int f)
{
    for (int start = 0; start < g->nodes.len;) {
        int end = gr_unit_end(g, start);
        const gr_node *n = g->nodes.items[start];
        if (end - start == 1 && op_runs_bodies(n)) {
            const ctl_attrs *a = ctl_attrs_of(n);
            const gr_value *c = n->op == OP_IF ? n->inputs[0] : NULL;
            bool taken = c && c->constant && op_get_i64(c->constant, 0);
            if (n->op != OP_IF) f = walk_functions(a->body, n, emit, f);
            if (n->op == OP_IF && (!c || !c->constant || taken)) f = walk_functions(a->then_g, n, emit, f);
            if (n->op == OP_IF && (!c || !c->constant || !taken)) f = walk_functions(a->else_g, n, emit, f);
        } else {
            emit(g, start, end, in, f++);
        }
        start = end;
    }
    return f;
}

static void print_unit_text(const gr_graph *g, int start, int end, const gr_node *in, int f)
{
    printf("  f%d:", f);
    if (in) printf(" [in %s '%s']", in->op_type, in->name);
    print_unit_ops(g, start, end);
}

static void print_functions_text(const gr_graph *g, int functions)
{
    printf("function ops:\n");
    int f = walk_functions(g, NULL, print_unit_text, 0);
    for (; f < functions; f++) printf("  f%d: (output copy)\n", f);
}

static void print_stats_text(const smelt_model *m, const smelt_compile_totals *t)
{
    const pass_report *r = &m->report;
    printf("%-18s %7s %7s %9s  %s\n", "pass", "before", "after", "ms", "changes");
    for (int i = 0; i < r->n; i++) {
        const pass_stat *st = &r->passes[i];
        if (!st->ran) {
            printf("%-18s %7s %7s %9s  (skipped)\n", st->name, "-", "-", "-");
            continue;
        }
        printf("%-18s %7d %7d %9.2f  %s\n", st->name, st->nodes_before, st->nodes_after, st->ms,
               st->changed ? st->change : "(unchanged)");
    }
    const gr_graph *g = m->graph;
    printf("nodes: %d\nfunctions: %d\narena bytes: %lld\nintermediate bytes: %lld\n"
           "weight bytes: %lld\n",
           g->nodes.len, t->functions, (long long)t->arena_bytes,
           (long long)intermediate_bytes(g), (long long)t->weight_bytes);
    print_ops_text(g);
    print_functions_text(g, t->functions);
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static void print_unit_json(const gr_graph *g, int start, int end, const gr_node *in, int f)
{
    (void)in;
    printf("%s[", f ? ", " : "");
    for (int k = start; k < end; k++) {
        if (k > start) printf(", ");
        json_string(((const gr_node *)g->nodes.items[k])->op_type);
    }
    printf("]");
}

/* "function_ops": [["MatMul", "Add", "Gelu"], ...], index = function number. */
static void print_functions_json(const gr_graph *g, int functions)
{
    printf(", \"function_ops\": [");
    int f = walk_functions(g, NULL, print_unit_json, 0);
    for (; f < functions; f++) printf("%s[\"(output copy)\"]", f ? ", " : "");
    printf("]");
}

static void print_stats_json(const smelt_model *m, const smelt_compile_totals *t)
{
    const pass_report *r = &m->report;
    const gr_graph *g = m->graph;
    printf("{\"opt_level\": %d, \"passes\": [", m->options.opt_level);
    for (int i = 0; i < r->n; i++) {
        const pass_stat *st = &r->passes[i];
        printf("%s{\"name\": ", i ? ", " : "");
        json_string(st->name);
        printf(", \"ran\": %s, \"nodes_before\": %d, \"nodes_after\": %d, \"ms\": %.3f, "
               "\"changed\": %s, \"changes\": ",
               st->ran ? "true" : "false", st->nodes_before, st->nodes_after, st->ms,
               st->changed ? "true" : "false");
        json_string(st->change);
        printf("}");
    }
    printf("], \"nodes\": %d, \"functions\": %d, \"arena_bytes\": %lld, "
           "\"intermediate_bytes\": %lld, \"weight_bytes\": %lld, \"ops\": {",
           g->nodes.len, t->functions, (long long)t->arena_bytes,
           (long long)intermediate_bytes(g), (long long)t->weight_bytes);
    int counts[OP_COUNT_] = {0}, first = 1;
    for (int i = 0; i < g->nodes.len; i++) counts[((gr_node *)g->nodes.items[i])->op]++;
    for (int k = 0; k < OP_COUNT_; k++) {
        if (!counts[k]) continue;
        printf("%s\"%s\": %d", first ? "" : ", ", op_get((op_kind)k)->name, counts[k]);
        first = 0;
    }
    printf("}");
    print_functions_json(g, t->functions);
    printf("}\n");
}

static int print_graph(smelt_ctx *ctx, smelt_model *m, const compile_opts *c)
{
    if (smelt_model_optimize(ctx, m, &c->o) != SMELT_OK) return cli_fail(ctx);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    gr_graph_print(smelt_model_graph(m), &sb);
    fputs(smelt_strbuf_cstr(&sb), stdout);
    smelt_strbuf_fini(&sb);
    return 0;
}

/* --stats for a GPU target: what the kernels are, per function (every
 * function is a kernel or fails to compile: nothing falls back to the CPU). */
static int print_gpu_placement(smelt_ctx *ctx, smelt_model *m, const compile_opts *c)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    if (smelt_model_gpu_placement(ctx, m, &c->o, &sb) != SMELT_OK) {
        smelt_strbuf_fini(&sb);
        return cli_fail(ctx);
    }
    printf("where each function runs (target %s):\n%s", c->o.target, smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
    return 0;
}

static int compile_static(smelt_ctx *ctx, smelt_model *m, const compile_opts *c);

/* Without -o: build the model (JIT cache) and report; -o DIR: AOT package.
 * A model whose only dynamic dims are data-dependent counts compiles with
 * them taken at run time; other dynamic models are refused saying why. */
static int compile_model(smelt_ctx *ctx, smelt_model *m, const compile_opts *c)
{
    if (!cli_apply_dims(ctx, m, &c->dims)) return 1;
    if (c->dump && strcmp(c->dump, "graph") == 0) return print_graph(ctx, m, c);
    if (smelt_graph_is_static(smelt_model_graph(m))) return compile_static(ctx, m, c);
    smelt_model *counted = NULL;
    if (smelt_model_with_counts(ctx, m, &counted) != SMELT_OK) return cli_fail(ctx);
    int rc = compile_static(ctx, counted, c);
    smelt_model_free(counted);
    return rc;
}

static int compile_static(smelt_ctx *ctx, smelt_model *m, const compile_opts *c)
{
    gr_graph *g = smelt_model_graph(m);
    const char *dump = c->dump;
    smelt_set_tir_dump(dump && strcmp(dump, "tir") == 0 ? stdout : NULL);
    if (c->out_dir) {
        if (smelt_model_write_package(ctx, m, c->out_dir, &c->o) != SMELT_OK) return cli_fail(ctx);
        cli_records_note(m);
        printf("wrote package %s\n", c->out_dir);
        return 0;
    }
    const cg_target *gpu = c->o.target ? cg_target_find(c->o.target) : NULL;
    if (c->stats && gpu && gpu->gpu != CG_GPU_NONE) /* kernels, not a library to load */
        return print_gpu_placement(ctx, m, c);
    if (smelt_model_compile(ctx, m, &c->o) != SMELT_OK) return cli_fail(ctx);
    cli_records_note(m);
    smelt_compile_totals t;
    smelt_model_totals(m, &t);
    if (c->stats && c->json) print_stats_json(m, &t);
    else if (c->stats) print_stats_text(m, &t);
    else if (!dump)
        printf("%s: %d nodes, %d inputs, %d outputs (opset %lld); compiled\n", c->model,
               g->nodes.len, g->inputs.len, g->outputs.len, (long long)g->opset);
    return 0;
}

/* --dump-ir: graph (after the passes), tir, c, all (graph after every pass)
 * or after:PASS. */
static bool set_dump(compile_opts *c, const char *v)
{
    c->dump = v;
    if (strcmp(v, "all") == 0) c->o.dump_ir_after = v;
    else if (strncmp(v, "after:", 6) == 0) c->o.dump_ir_after = v + 6;
    else return strcmp(v, "graph") == 0 || strcmp(v, "c") == 0 || strcmp(v, "tir") == 0;
    return true;
}

static int parse(int argc, char **argv, compile_opts *c)
{
    memset(c, 0, sizeof *c);
    smelt_options_init(&c->o);
    for (int i = 0; i < argc; i++) {
        const char *v;
        int po = cli_pass_opt(argc, argv, &i, &c->o);
        if (po == 0) po = cli_dim_opt(argc, argv, &i, &c->dims);
        if (po < 0) return 2;
        if (po > 0) continue;
        if (cli_opt(argc, argv, &i, "--dump-ir", &v)) {
            if (!v) return 2;
            if (!set_dump(c, v))
                return fprintf(stderr, "smelt compile: unknown IR '%s' for --dump-ir (known: "
                                       "graph, tir, c, all, after:PASS)\n", v), 2;
        } else if (cli_opt(argc, argv, &i, "--prefix", &v)) {
            if (!(c->o.aot_prefix = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "-o", &v)) {
            if (!(c->out_dir = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "--target", &v)) {
            if (!(c->o.target = v)) return 2;
        } else if (strcmp(argv[i], "--embed-weights") == 0) {
            c->o.embed_weights = 1;
        } else if (strcmp(argv[i], "--stats") == 0) {
            c->stats = true;
        } else if (strcmp(argv[i], "--json") == 0) {
            c->json = true;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "smelt compile: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (c->n_models < COMPILE_MAX_MODELS) {
            c->models[c->n_models++] = argv[i];
        } else {
            fprintf(stderr, "smelt compile: more than %d models\n", COMPILE_MAX_MODELS);
            return 2;
        }
    }
    if (c->n_models == 0)
        return fprintf(stderr, "usage: smelt compile MODEL [-o DIR] [--embed-weights] "
                               "[--target T] [-O0..-O3] [--disable-pass=PASS] [--dim NAME=VALUE] "
                               "[--stats [--json]] "
                               "[--dump-ir=graph|tir|c|all|after:PASS]\n"), 2;
    if (c->out_dir && c->n_models > 1)
        return fprintf(stderr, "smelt compile: -o writes the package of one model; %d models "
                               "given (run one compile per model)\n", c->n_models), 2;
    if (c->o.aot_prefix && !c->out_dir)
        return fprintf(stderr, "smelt compile: --prefix needs -o DIR (it names the package's "
                               "symbols)\n"), 2;
    if (c->json && !c->stats)
        return fprintf(stderr, "smelt compile: --json needs --stats\n"), 2;
    if (c->o.embed_weights && !c->out_dir)
        return fprintf(stderr, "smelt compile: --embed-weights needs -o DIR (the JIT build "
                               "reads the weights from memory)\n"), 2;
    if (c->stats && (c->out_dir || c->dump))
        return fprintf(stderr, "smelt compile: --stats does not combine with %s\n",
                       c->out_dir ? "-o" : "--dump-ir"), 2;
    c->o.dump_c = c->dump && strcmp(c->dump, "c") == 0;
    return 0;
}

int cli_compile(int argc, char **argv)
{
    static compile_opts c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    /* Several models: each compiled in turn; the first failure stops. */
    for (int k = 0; rc == 0 && k < c.n_models; k++) {
        c.model = c.models[k];
        smelt_ctx *ctx = smelt_ctx_new();
        if (!ctx) return fprintf(stderr, "smelt: out of memory\n"), 1;
        smelt_model *m = smelt_model_load(ctx, c.model);
        rc = m ? compile_model(ctx, m, &c) : cli_fail_load(ctx, c.model);
        if (rc && m) fprintf(stderr, "smelt compile: %s failed\n", c.model);
        smelt_model_free(m);
        smelt_ctx_free(ctx);
    }
    return rc;
}
