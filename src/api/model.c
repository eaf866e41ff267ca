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

smelt_model *smelt_model_load_bytes(smelt_ctx *ctx, const void *bytes, size_t size,
                                    const char *base_dir)
{
    gr_graph *g;
    if (onnx_import(ctx, bytes, size, base_dir, &g) != SMELT_OK) return NULL;
    if (pass_infer_shapes(ctx, g) != SMELT_OK || gr_graph_verify(ctx, g) != SMELT_OK) {
        gr_graph_free(g);
        return NULL;
    }
    smelt_model *m = smelt_calloc(1, sizeof *m);
    if (!m) {
        gr_graph_free(g);
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    m->graph = g;
    smelt_options_init(&m->options);
    if (!smelt_graph_is_static(g) && !keep_bytes(m, bytes, size, base_dir)) {
        smelt_model_free(m);
        smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return m;
}

void smelt_options_init(smelt_options *o)
{
    memset(o, 0, sizeof *o);
    o->opt_level = 2;
}

smelt_status smelt_model_optimize(smelt_ctx *ctx, smelt_model *m, const smelt_options *o)
{
    if (o) m->options = *o;
    if (m->optimized) return SMELT_OK;
    const smelt_options *mo = &m->options;
    if (mo->opt_level < 0 || mo->opt_level > 3)
        return smelt_errf(ctx, SMELT_ERR_ARG, "optimisation level %d (expected 0..3)",
                          mo->opt_level);
    /* the layout pass blocks channels by the target's vector width */
    const cg_target *t = cg_target_find(mo->target && *mo->target ? mo->target : "host");
    m->graph->vector_lanes = cg_target_lanes(t, SMELT_DT_FLOAT32);
    pass_options po = {mo->opt_level, mo->disabled_passes, mo->dump_ir_after, NULL};
    SMELT_TRY(pass_pipeline_run(ctx, m->graph, &po, &m->report));
    m->optimized = true;
    return SMELT_OK;
}

smelt_model *smelt_model_load(smelt_ctx *ctx, const char *path)
{
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
    smelt_compiled_free(m->compiled);
    smelt_specializations_free(m);
    smelt_free(m->bytes);
    smelt_free(m->base_dir);
    gr_graph_free(m->graph);
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
    return run_interpreted(ctx, m, EXEC_REFERENCE, inputs, num_inputs, outputs, num_outputs);
}

smelt_status smelt_model_run_te(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                int num_inputs, smelt_tensor *outputs, int num_outputs)
{
    return run_interpreted(ctx, m, EXEC_TE, inputs, num_inputs, outputs, num_outputs);
}

gr_graph *smelt_model_graph(smelt_model *m) { return m->graph; }
