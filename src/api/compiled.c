/* The compiled path behind the public API: lower the graph, emit C, build it
 * through the compile cache, load it (JIT) or write a package (AOT), run it
 * through the runtime. */
#include <string.h>

#include "codegen/codegen.h"
#include "lower/program.h"
#include "smelt_internal.h"
#include "smelt_rt.h"
#include "tune/tune.h"

struct smelt_compiled {
    lowered_program *lp;
    const cg_target *target;
    void *handle;
    const smelt_rt_module_info *info;
    smelt_rt_model *rt;
    int refs; /* the model's reference + runs in flight; under the model's mu */
};

/* The model's compiled code for one run: a recompile may replace it while
 * the run goes on, the last reference frees it. */
static smelt_compiled *compiled_get(smelt_model *m)
{
    smelt_compiled *c = m->compiled;
    if (c) c->refs++;
    return c;
}

static void compiled_put(smelt_model *m, smelt_compiled *c)
{
    if (!c) return;
    pthread_mutex_lock(&m->mu);
    bool last = --c->refs == 0;
    pthread_mutex_unlock(&m->mu);
    if (last) smelt_compiled_free(c);
}

static const cg_target *pick_target(smelt_ctx *ctx, const char *name)
{
    const cg_target *t = name && *name && strcmp(name, "host") != 0 ? cg_target_find(name)
                                                                     : cg_target_host();
    if (!t)
        smelt_errf(ctx, SMELT_ERR_ARG, "unknown target '%s' (known: host, %s)", name,
                   cg_target_names());
    return t;
}

/* Lower with the schedule file's and the records' schedules where they have
 * one (the file first). */
static smelt_status lower_model(smelt_ctx *ctx, smelt_model *m, const cg_target *t,
                                lowered_program **lp)
{
    lower_options lo = {.hw = &t->hw};
    const char *path = m->options.records, *spath = m->options.schedule;
    smelt_records_use *use = &m->records_use;
    memset(use, 0, sizeof *use);
    if (!path && !spath) return lower_graph(ctx, m->graph, &lo, lp);
    char key[256];
    SMELT_TRY(tune_target_key(ctx, t, key, sizeof key));
    sch_user_file uf = {0};
    if (spath) {
        SMELT_TRY(sch_user_file_load(ctx, spath, &uf));
        uf.target_key = key;
        lo.user_schedules = &uf;
    }
    tune_db db = {0};
    smelt_status s = SMELT_OK;
    sch_source src;
    if (path) {
        s = tune_db_load(ctx, path, key, &db);
        src = tune_db_source(&db);
        lo.schedules = &src;
    }
    if (s == SMELT_OK) s = lower_graph(ctx, m->graph, &lo, lp);
    if (s == SMELT_OK && spath) s = sch_user_file_check_used(ctx, &uf);
    if (s != SMELT_OK && *lp) {
        lowered_program_free(*lp);
        *lp = NULL;
    }
    if (path)
        *use = (smelt_records_use){.used = true,
                                   .scheduled = s == SMELT_OK ? (*lp)->n_stored : 0,
                                   .records = db.n, .other_target = db.other_target,
                                   .bad_schema = db.bad_schema, .malformed = db.malformed};
    use->schedule_used = spath != NULL;
    if (s == SMELT_OK) {
        use->functions = (*lp)->prog.n_funcs;
        use->schedule_functions = (*lp)->n_user;
    }
    if (path) tune_db_fini(&db);
    if (spath) sch_user_file_fini(&uf);
    return s;
}

const smelt_records_use *smelt_model_records_use(const smelt_model *m) { return &m->records_use; }

void smelt_compiled_free(smelt_compiled *c)
{
    if (!c) return;
    smelt_rt_model_free(c->rt);
    if (c->handle) cg_unload_module(c->handle);
    lowered_program_free(c->lp);
    smelt_free(c);
}

static smelt_status build_and_load(smelt_ctx *ctx, smelt_compiled *c, const smelt_options *o)
{
    smelt_strbuf src;
    smelt_strbuf_init(&src);
    smelt_status s = cg_emit_program(ctx, &c->lp->prog, c->target, &src);
    if (s == SMELT_OK && src.failed) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s == SMELT_OK && o && o->dump_c) fputs(smelt_strbuf_cstr(&src), stdout);
    char *lib = NULL;
    if (s == SMELT_OK) s = cg_build_shared(ctx, smelt_strbuf_cstr(&src), c->target, &lib);
    smelt_strbuf_fini(&src);
    if (s == SMELT_OK) s = cg_load_module(ctx, lib, &c->handle, &c->info);
    smelt_free(lib);
    if (s != SMELT_OK) return s;
    char err[512] = "";
    c->rt = smelt_rt_model_from_info(c->info, c->lp->prog.weights, o ? o->num_threads : 0, err,
                                     sizeof err);
    if (!c->rt) return smelt_errf(ctx, SMELT_ERR_RUNTIME, "loading the compiled model: %s", err);
    return SMELT_OK;
}

void smelt_set_pool_threads(int num_threads) { smelt_rt_set_pool_threads(num_threads); }

static bool same_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

/* Options that change the generated code or how it runs. */
static bool build_options_differ(const smelt_options *a, const smelt_options *b)
{
    const char *ta = a->target && *a->target ? a->target : "host";
    const char *tb = b->target && *b->target ? b->target : "host";
    return strcmp(ta, tb) != 0 || a->num_threads != b->num_threads || !same_str(a->records, b->records) ||
           a->dump_c != b->dump_c || a->opt_level != b->opt_level ||
           !same_str(a->disabled_passes, b->disabled_passes);
}

/* Under m->mu.  New options: graph options the graph was not optimised
 * with are refused; others replace the compiled code (and drop the
 * specialisations of a dynamic model, which were built with the old ones). */
static smelt_status compile_locked(smelt_ctx *ctx, smelt_model *m, const smelt_options *o)
{
    if (o) {
        SMELT_TRY(smelt_model_check_graph_options(ctx, m, o));
        bool differ = build_options_differ(&m->options, o);
        m->options = *o;
        if (differ && m->compiled) {
            smelt_compiled *old = m->compiled;
            m->compiled = NULL;
            if (--old->refs == 0) smelt_compiled_free(old);
        }
        if (differ) smelt_specializations_free(m);
    }
    if (m->compiled || !smelt_graph_is_static(m->graph)) return SMELT_OK; /* dynamic: per run */
    SMELT_TRY(smelt_model_optimize(ctx, m, NULL));
    o = &m->options;
    smelt_compiled *c = smelt_calloc(1, sizeof *c);
    if (!c) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    c->target = pick_target(ctx, o ? o->target : NULL);
    smelt_status s = c->target ? lower_model(ctx, m, c->target, &c->lp) : SMELT_ERR_ARG;
    if (s == SMELT_OK) s = build_and_load(ctx, c, o);
    if (s != SMELT_OK) {
        smelt_compiled_free(c);
        return s;
    }
    c->refs = 1;
    m->compiled = c;
    return SMELT_OK;
}

smelt_status smelt_model_compile(smelt_ctx *ctx, smelt_model *m, const smelt_options *o)
{
    smelt_ctx_clear(ctx);
    if (!m) return smelt_errf(ctx, SMELT_ERR_ARG, "NULL model");
    pthread_mutex_lock(&m->mu);
    smelt_status s = compile_locked(ctx, m, o);
    pthread_mutex_unlock(&m->mu);
    return s;
}

smelt_rt_model *smelt_model_compiled_rt(const smelt_model *m)
{
    return m && m->compiled ? m->compiled->rt : NULL;
}

void smelt_model_release_compiled(smelt_model *m)
{
    smelt_compiled *c = m->compiled;
    m->compiled = NULL;
    if (c && --c->refs == 0) smelt_compiled_free(c);
}

smelt_status smelt_model_write_package(smelt_ctx *ctx, smelt_model *m, const char *dir,
                                       const smelt_options *o)
{
    smelt_ctx_clear(ctx);
    const cg_target *t = pick_target(ctx, o ? o->target : NULL);
    if (!t) return SMELT_ERR_ARG;
    pthread_mutex_lock(&m->mu);
    smelt_status s = smelt_graph_is_static(m->graph) ? smelt_model_optimize(ctx, m, o)
                                                     : smelt_graph_refuse_dynamic(ctx, m->graph);
    lowered_program *lp = NULL;
    if (s == SMELT_OK) s = lower_model(ctx, m, t, &lp);
    pthread_mutex_unlock(&m->mu);
    if (s != SMELT_OK) return s;
    s = cg_write_package_prefixed(ctx, &lp->prog, t, dir, o && o->embed_weights,
                                  o ? o->aot_prefix : NULL);
    lowered_program_free(lp);
    return s;
}

smelt_status smelt_model_gpu_placement(smelt_ctx *ctx, smelt_model *m, const smelt_options *o,
                                       smelt_strbuf *out)
{
    smelt_ctx_clear(ctx);
    const cg_target *t = pick_target(ctx, o ? o->target : NULL);
    if (!t) return SMELT_ERR_ARG;
    if (t->gpu == CG_GPU_NONE)
        return smelt_errf(ctx, SMELT_ERR_ARG, "target '%s' is not a GPU target", t->name);
    pthread_mutex_lock(&m->mu);
    smelt_status s = smelt_model_optimize(ctx, m, o);
    lowered_program *lp = NULL;
    if (s == SMELT_OK) s = lower_model(ctx, m, t, &lp);
    pthread_mutex_unlock(&m->mu);
    if (s == SMELT_OK) s = cg_gpu_emit_device(ctx, &lp->prog, t, NULL, out);
    lowered_program_free(lp);
    return s;
}

bool smelt_model_totals(const smelt_model *m, smelt_compile_totals *t)
{
    memset(t, 0, sizeof *t);
    if (!m->compiled) return false;
    const ir_program *p = &m->compiled->lp->prog;
    t->functions = p->n_funcs;
    t->arena_bytes = p->arena_bytes;
    t->weight_bytes = p->weight_bytes;
    return true;
}

/* Outputs of the run's dims (vals: the run-time dims' values, or NULL). */
static smelt_status alloc_outputs(smelt_ctx *ctx, const smelt_rt_module_info *info,
                                  const int64_t *vals, smelt_tensor *outputs, void **ptrs,
                                  size_t *sizes)
{
    for (int i = 0; i < info->num_outputs; i++) {
        const smelt_rt_io_info *d = &info->outputs[i];
        smelt_tensor *t = &outputs[i];
        memset(t, 0, sizeof *t);
        t->dtype = (smelt_dtype)d->dtype;
        t->rank = d->rank;
        for (int k = 0; k < d->rank; k++)
            t->dims[k] = smelt_rt_io_dim(d, k, vals);
        sizes[i] = smelt_tensor_nbytes(t);
        t->data = ptrs[i] = smelt_alloc(sizes[i] ? sizes[i] : 1);
        if (!t->data) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory for outputs");
    }
    return SMELT_OK;
}

static smelt_status run_compiled(smelt_ctx *ctx, smelt_model *m, smelt_compiled *c,
                                 const smelt_tensor *inputs, int num_inputs,
                                 smelt_tensor *outputs, int num_outputs, int64_t *call_ns)
{
    const smelt_rt_module_info *info = c->info;
    if (num_inputs != info->num_inputs || num_outputs != info->num_outputs || !outputs ||
        (num_inputs && !inputs) || num_inputs > 256 || num_outputs > 256)
        return smelt_errf(ctx, SMELT_ERR_ARG, "the model takes %d inputs and %d outputs, "
                          "%d and %d given", info->num_inputs, info->num_outputs, num_inputs,
                          num_outputs);
    const gr_graph *g = m->graph;
    for (int i = 0; i < num_inputs; i++) /* the same checks as the reference path */
        SMELT_TRY(exec_check_input_rt(ctx, g, g->inputs.items[i], &inputs[i]));
    const void *in_ptrs[256];
    size_t in_sizes[256], out_sizes[256];
    void *out_ptrs[256];
    for (int i = 0; i < num_inputs; i++) {
        in_ptrs[i] = inputs[i].data;
        in_sizes[i] = smelt_tensor_nbytes(&inputs[i]);
    }
    char err[1024] = "";
    int64_t vals[16];
    if (info->num_rt_dims && smelt_rt_model_run_dims(c->rt, in_sizes, num_inputs, vals, err,
                                                     sizeof err) != SMELT_RT_OK)
        return smelt_errf(ctx, SMELT_ERR_ARG, "%s", err);
    smelt_status s = alloc_outputs(ctx, info, info->num_rt_dims ? vals : NULL, outputs, out_ptrs,
                                   out_sizes);
    int64_t run_vals[16];
    smelt_rt_status rs = s == SMELT_OK ? smelt_rt_model_run_ex(c->rt, in_ptrs, in_sizes, num_inputs,
                                                               out_ptrs, out_sizes, num_outputs,
                                                               call_ns, run_vals, err, sizeof err)
                                       : SMELT_RT_OK;
    /* a data-dependent count is known now: the outputs take its value */
    for (int i = 0; s == SMELT_OK && rs == SMELT_RT_OK && info->num_rt_dims && i < num_outputs; i++)
        for (int k = 0; k < info->outputs[i].rank; k++)
            outputs[i].dims[k] = smelt_rt_io_dim(&info->outputs[i], k, run_vals);
    if (rs != SMELT_RT_OK)
        s = smelt_errf(ctx, rs == SMELT_RT_ERR_NOMEM ? SMELT_ERR_NOMEM : SMELT_ERR_RUNTIME, "%s",
                       err[0] ? err : "the compiled model failed without a message");
    for (int i = 0; i < num_outputs; i++) {
        if (s != SMELT_OK) {
            smelt_tensor_release(&outputs[i]);
            continue;
        }
        outputs[i].name = smelt_strdup(((gr_value *)g->outputs.items[i])->name);
    }
    return s;
}

static smelt_status model_run(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                              int num_inputs, smelt_tensor *outputs, int num_outputs,
                              int64_t *call_ns)
{
    smelt_ctx_clear(ctx);
    if (!m) return smelt_errf(ctx, SMELT_ERR_ARG, "NULL model");
    pthread_mutex_lock(&m->mu);
    if (call_ns && !smelt_graph_is_static(m->graph)) {
        pthread_mutex_unlock(&m->mu);
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "a profile needs static shapes: bind the "
                          "model's symbolic dims first (--dim NAME=VALUE, smelt_model_set_dim)");
    }
    if (!smelt_graph_is_static(m->graph)) { /* one call at a time (smelt.h) */
        smelt_status s = smelt_run_specialized(ctx, m, inputs, num_inputs, outputs, num_outputs);
        pthread_mutex_unlock(&m->mu);
        return s;
    }
    smelt_status s = m->compiled ? SMELT_OK : compile_locked(ctx, m, NULL);
    smelt_compiled *c = s == SMELT_OK ? compiled_get(m) : NULL;
    pthread_mutex_unlock(&m->mu);
    if (s != SMELT_OK) return s;
    s = run_compiled(ctx, m, c, inputs, num_inputs, outputs, num_outputs, call_ns);
    if (s == SMELT_OK) {
        pthread_mutex_lock(&m->mu);
        m->last_nodes = m->graph->nodes.len;
        pthread_mutex_unlock(&m->mu);
    }
    compiled_put(m, c);
    return s;
}

int smelt_model_last_nodes(smelt_model *m)
{
    pthread_mutex_lock(&m->mu);
    int n = m->last_nodes;
    pthread_mutex_unlock(&m->mu);
    return n;
}

smelt_status smelt_model_run(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                             int num_inputs, smelt_tensor *outputs, int num_outputs)
{
    return model_run(ctx, m, inputs, num_inputs, outputs, num_outputs, NULL);
}

smelt_status smelt_model_run_profiled(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                      int num_inputs, smelt_tensor *outputs, int num_outputs,
                                      int64_t *call_ns)
{
    if (!call_ns) {
        smelt_ctx_clear(ctx);
        return smelt_errf(ctx, SMELT_ERR_ARG, "NULL call_ns (smelt_model_num_calls entries)");
    }
    return model_run(ctx, m, inputs, num_inputs, outputs, num_outputs, call_ns);
}

int smelt_model_num_calls(smelt_model *m)
{
    if (!m) return 0;
    pthread_mutex_lock(&m->mu);
    int n = m->compiled ? smelt_rt_model_info(m->compiled->rt)->num_calls : 0;
    pthread_mutex_unlock(&m->mu);
    return n;
}

static const char *call_string(smelt_model *m, int k, bool nodes)
{
    if (!m || k < 0) return NULL;
    pthread_mutex_lock(&m->mu);
    const smelt_rt_module_info *info = m->compiled ? smelt_rt_model_info(m->compiled->rt) : NULL;
    const char *s = !info || k >= info->num_calls ? NULL
                    : nodes                       ? info->call_nodes[k]
                                                  : info->call_names[k];
    pthread_mutex_unlock(&m->mu);
    return s;
}

const char *smelt_model_call_name(smelt_model *m, int k) { return call_string(m, k, false); }

const char *smelt_model_call_nodes(smelt_model *m, int k) { return call_string(m, k, true); }

int smelt_model_compiled_threads(smelt_model *m)
{
    if (!m) return 0;
    pthread_mutex_lock(&m->mu);
    int n = m->compiled ? smelt_rt_model_num_threads(m->compiled->rt) : 0;
    pthread_mutex_unlock(&m->mu);
    return n;
}

int smelt_model_input_index(const smelt_model *m, const char *name)
{
    if (!m || !name) return -1;
    const gr_graph *g = m->graph;
    for (int i = 0; i < g->inputs.len; i++)
        if (strcmp(((const gr_value *)g->inputs.items[i])->name, name) == 0) return i;
    return -1;
}

int smelt_model_output_index(const smelt_model *m, const char *name)
{
    if (!m || !name) return -1;
    const gr_graph *g = m->graph;
    for (int i = 0; i < g->outputs.len; i++)
        if (strcmp(((const gr_value *)g->outputs.items[i])->name, name) == 0) return i;
    return -1;
}

/* "'x', 'y'" into sb: the model's input names for messages. */
static void input_names(const gr_graph *g, smelt_strbuf *sb)
{
    for (int i = 0; i < g->inputs.len; i++)
        smelt_strbuf_printf(sb, "%s'%s'", i ? ", " : "", ((const gr_value *)g->inputs.items[i])->name);
    if (g->inputs.len == 0) smelt_strbuf_append(sb, "none");
}

smelt_status smelt_model_run_named(smelt_ctx *ctx, smelt_model *m, const char *const *names,
                                   const smelt_tensor *inputs, int num_inputs,
                                   smelt_tensor *outputs, int num_outputs)
{
    smelt_ctx_clear(ctx);
    if (!m || (num_inputs && !inputs) || num_inputs < 0)
        return smelt_errf(ctx, SMELT_ERR_ARG, "NULL model or inputs");
    const gr_graph *g = m->graph;
    int n = g->inputs.len;
    if (n > 256) return smelt_errf(ctx, SMELT_ERR_LIMIT, "more than 256 inputs");
    smelt_tensor ordered[256];
    int given_by[256];
    for (int i = 0; i < n; i++) given_by[i] = -1;
    smelt_strbuf known;
    smelt_strbuf_init(&known);
    input_names(g, &known);
    smelt_status s = SMELT_OK;
    for (int k = 0; k < num_inputs && s == SMELT_OK; k++) {
        const char *name = names ? names[k] : inputs[k].name;
        int i = smelt_model_input_index(m, name);
        if (!name)
            s = smelt_errf(ctx, SMELT_ERR_ARG, "input %d has no name (the model's inputs: %s)", k,
                           smelt_strbuf_cstr(&known));
        else if (i < 0)
            s = smelt_errf(ctx, SMELT_ERR_ARG, "the model has no input named '%s' (its inputs: %s)",
                           name, smelt_strbuf_cstr(&known));
        else if (given_by[i] >= 0)
            s = smelt_errf(ctx, SMELT_ERR_ARG, "input '%s' is given twice (tensors %d and %d)",
                           name, given_by[i], k);
        else {
            given_by[i] = k;
            ordered[i] = inputs[k];
        }
    }
    for (int i = 0; i < n && s == SMELT_OK; i++)
        if (given_by[i] < 0)
            s = smelt_errf(ctx, SMELT_ERR_ARG, "input '%s' is not given (the model's inputs: %s)",
                           ((const gr_value *)g->inputs.items[i])->name, smelt_strbuf_cstr(&known));
    smelt_strbuf_fini(&known);
    if (s != SMELT_OK) return s;
    return smelt_model_run(ctx, m, ordered, n, outputs, num_outputs);
}
