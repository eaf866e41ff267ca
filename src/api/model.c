/* Public model API: load, describe, run with the reference kernels. */
#include <libgen.h>
#include <limits.h>
#include <string.h>

#include "codegen/target.h"
#include "exec/exec.h"
#include "frontend/onnx.h"
#include "passes/passes.h"
#include "smelt_internal.h"

/* Dynamic models are re-imported per input signature (specialize.c). */
static bool keep_bytes(smelt_model *m, const void *bytes, size_t size, const char *base_dir)
{
    m->bytes = smelt_alloc(size ? size : 1);
    m->base_dir = base_dir ? smelt_strdup(base_dir) : NULL;
    if (!m->bytes || (base_dir && !m->base_dir)) return false;
    memcpy(m->bytes, bytes, size);
    m->size = size;
    return true;
}

smelt_model *smelt_model_from_graph(gr_graph *g)
{
    smelt_model *m = smelt_calloc(1, sizeof *m);
    if (!m || pthread_mutex_init(&m->mu, NULL) != 0) {
        smelt_free(m);
        gr_graph_free(g);
        return NULL;
    }
    m->graph = g;
    m->last_nodes = -1;
    smelt_options_init(&m->options);
    return m;
}

smelt_model *smelt_model_load_bytes(smelt_ctx *ctx, const void *bytes, size_t size,
                                    const char *base_dir)
{
    smelt_ctx_clear(ctx);
    gr_graph *g;
    if (onnx_import(ctx, bytes, size, base_dir, &g) != SMELT_OK) return NULL;
    if (pass_infer_shapes(ctx, g) != SMELT_OK || gr_graph_verify(ctx, g) != SMELT_OK) {
        gr_graph_free(g);
        return NULL;
    }
    smelt_model *m = smelt_model_from_graph(g);
    if (!m) {
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (!smelt_graph_is_static(g) && !keep_bytes(m, bytes, size, base_dir)) {
        smelt_model_free(m);
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return m;
}

const char *smelt_version(void) { return SMELT_VERSION; }

void smelt_options_init(smelt_options *o)
{
    memset(o, 0, sizeof *o);
    o->opt_level = 2;
}

static bool same_hw(const smelt_hw *a, const smelt_hw *b)
{
    return a->lanes == b->lanes && a->vector_regs == b->vector_regs && a->tile_acc_max == b->tile_acc_max &&
           a->l1_bytes == b->l1_bytes && a->l2_bytes == b->l2_bytes;
}

static bool same_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Options the graph passes read cannot change once they have run (the
 * graph is optimised in place): an error naming what differs. */
smelt_status smelt_model_check_graph_options(smelt_ctx *ctx, const smelt_model *m,
                                             const smelt_options *o)
{
    if (!o || !m->optimized) return SMELT_OK;
    const smelt_options *was = &m->options;
    const char *what = NULL;
    char buf[160];
    if (o->opt_level != was->opt_level) {
        snprintf(buf, sizeof buf, "-O%d (it was optimised at -O%d)", o->opt_level, was->opt_level);
        what = buf;
    } else if (!same_str(o->disabled_passes, was->disabled_passes)) {
        what = "another disabled_passes list";
    } else if (!same_str(o->dump_ir_after, was->dump_ir_after) && o->dump_ir_after) {
        what = "dump_ir_after (the passes have run already)";
    } else {
        const cg_target *t = cg_target_find(o->target && *o->target ? o->target : "host");
        if (t && !same_hw(&t->hw, &m->graph->hw)) {
            snprintf(buf, sizeof buf, "target '%s' (the graph's blocked layout and packed "
                     "weights were made for %d-lane vectors and %d vector registers)",
                     o->target && *o->target ? o->target : "host", m->graph->hw.lanes,
                     m->graph->hw.vector_regs);
            what = buf;
        }
    }
    if (!what) return SMELT_OK;
    return smelt_errf(ctx, SMELT_ERR_ARG,
                      "this model's graph was already optimised with other options and cannot "
                      "be optimised again with %s: load the model again to compile it so", what);
}

smelt_status smelt_model_optimize(smelt_ctx *ctx, smelt_model *m, const smelt_options *o)
{
    SMELT_TRY(smelt_model_check_graph_options(ctx, m, o));
    if (o) m->options = *o;
    if (m->optimized) return SMELT_OK;
    const smelt_options *mo = &m->options;
    if (mo->opt_level < 0 || mo->opt_level > 3)
        return smelt_errf(ctx, SMELT_ERR_ARG, "optimisation level %d (expected 0..3)",
                          mo->opt_level);
    /* the layout pass blocks channels by the target's vector width */
    const cg_target *t = cg_target_find(mo->target && *mo->target ? mo->target : "host");
    if (t) m->graph->hw = t->hw; /* unknown: lanes 0, no blocking; compiling names it */
    pass_options po = {mo->opt_level, mo->disabled_passes, mo->dump_ir_after, NULL};
    SMELT_TRY(pass_pipeline_run(ctx, m->graph, &po, &m->report));
    m->optimized = true;
    return SMELT_OK;
}

smelt_model *smelt_model_load(smelt_ctx *ctx, const char *path)
{
    smelt_ctx_clear(ctx);
    void *bytes;
    size_t size;
    if (smelt_read_file(ctx, path, SMELT_LIMIT_MODEL_BYTES, &bytes, &size) != SMELT_OK)
        return NULL;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    smelt_model *m = smelt_model_load_bytes(ctx, bytes, size, dirname(dir));
    smelt_free(bytes);
    return m;
}

void smelt_model_free(smelt_model *m)
{
    if (!m) return;
    smelt_model_release_compiled(m);
    smelt_specializations_free(m);
    for (int k = 0; k < m->n_ties; k++) {
        smelt_free((void *)m->ties[k].name);
        smelt_free((void *)m->ties[k].base);
    }
    smelt_free(m->bytes);
    smelt_free(m->base_dir);
    gr_graph_free(m->graph);
    pthread_mutex_destroy(&m->mu);
    smelt_free(m);
}

int smelt_model_num_inputs(const smelt_model *m) { return m->graph->inputs.len; }
int smelt_model_num_outputs(const smelt_model *m) { return m->graph->outputs.len; }

static void value_info(const gr_value *v, const char **name, smelt_dtype *dt, int *rank,
                       int64_t dims[SMELT_MAX_RANK])
{
    if (name) *name = v->name;
    if (dt) *dt = v->dtype;
    if (rank) *rank = v->rank;
    for (int i = 0; dims && i < v->rank; i++) dims[i] = v->dims[i] >= 0 ? v->dims[i] : -1;
}

void smelt_model_input_info(const smelt_model *m, int i, const char **name, smelt_dtype *dt,
                            int *rank, int64_t dims[SMELT_MAX_RANK])
{
    value_info(m->graph->inputs.items[i], name, dt, rank, dims);
}

void smelt_model_output_info(const smelt_model *m, int i, const char **name,
                             smelt_dtype *dt, int *rank, int64_t dims[SMELT_MAX_RANK])
{
    value_info(m->graph->outputs.items[i], name, dt, rank, dims);
}

static smelt_status run_interpreted(smelt_ctx *ctx, smelt_model *m, exec_mode mode,
                                    const smelt_tensor *inputs, int num_inputs,
                                    smelt_tensor *outputs, int num_outputs)
{
    const gr_graph *g = m->graph;
    if (num_inputs != g->inputs.len)
        return smelt_errf(ctx, SMELT_ERR_ARG, "the model takes %d inputs, %d given",
                          g->inputs.len, num_inputs);
    if (num_outputs != g->outputs.len)
        return smelt_errf(ctx, SMELT_ERR_ARG, "the model has %d outputs, room for %d given",
                          g->outputs.len, num_outputs);
    if ((num_inputs && !inputs) || !outputs)
        return smelt_errf(ctx, SMELT_ERR_ARG, "NULL input or output array");
    memset(outputs, 0, sizeof *outputs * (size_t)num_outputs);
    SMELT_TRY(exec_graph(ctx, g, mode, inputs, outputs));
    for (int i = 0; i < num_outputs; i++) {
        const gr_value *v = g->outputs.items[i];
        outputs[i].name = smelt_strdup(v->name);
    }
    return SMELT_OK;
}

smelt_status smelt_model_run_reference(smelt_ctx *ctx, smelt_model *m,
                                       const smelt_tensor *inputs, int num_inputs,
                                       smelt_tensor *outputs, int num_outputs)
{
    smelt_ctx_clear(ctx);
    return run_interpreted(ctx, m, EXEC_REFERENCE, inputs, num_inputs, outputs, num_outputs);
}

smelt_status smelt_model_run_te(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                int num_inputs, smelt_tensor *outputs, int num_outputs)
{
    return run_interpreted(ctx, m, EXEC_TE, inputs, num_inputs, outputs, num_outputs);
}

gr_graph *smelt_model_graph(smelt_model *m) { return m->graph; }
