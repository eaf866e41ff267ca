/* Public graph API: the nodes of a model and its Graphviz rendering. */
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "smelt_internal.h"

extern char **environ;

static const char *dim_name(const gr_graph *g, const gr_value *v, int d)
{
    if (d < 0 || d >= v->rank || GR_DIM_IS_STATIC(v->dims[d])) return NULL;
    int id = GR_DIM_SYM_ID(v->dims[d]);
    return id < g->syms.len ? g->syms.items[id] : "?";
}

const char *smelt_model_input_dim_name(const smelt_model *m, int i, int d)
{
    return dim_name(m->graph, m->graph->inputs.items[i], d);
}

const char *smelt_model_output_dim_name(const smelt_model *m, int i, int d)
{
    return dim_name(m->graph, m->graph->outputs.items[i], d);
}

int smelt_model_num_nodes(const smelt_model *m) { return m->graph->nodes.len; }

void smelt_model_node_info(const smelt_model *m, int i, const char **name, const char **op_type,
                           int *num_inputs, int *num_outputs)
{
    const gr_node *n = m->graph->nodes.items[i];
    if (name) *name = n->name;
    if (op_type) *op_type = n->op_type;
    if (num_inputs) *num_inputs = n->n_inputs;
    if (num_outputs) *num_outputs = n->n_outputs;
}

const char *smelt_model_node_input(const smelt_model *m, int i, int k)
{
    const gr_node *n = m->graph->nodes.items[i];
    return n->inputs[k] ? n->inputs[k]->name : "";
}

const char *smelt_model_node_output(const smelt_model *m, int i, int k)
{
    const gr_node *n = m->graph->nodes.items[i];
    return n->outputs[k] ? n->outputs[k]->name : "";
}

static const char *extension(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : "";
}

/* Run `dot -T<fmt> -o out in` without a shell, so paths are never parsed. */
static smelt_status render_with_dot(smelt_ctx *ctx, const char *fmt, const char *dot_path,
                                    const char *out)
{
    char tflag[16];
    snprintf(tflag, sizeof tflag, "-T%s", fmt);
    char *args[] = {"dot", tflag, "-o", (char *)out, (char *)dot_path, NULL};
    pid_t pid;
    if (posix_spawnp(&pid, "dot", NULL, NULL, args, environ) != 0)
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED,
                          "graphviz 'dot' is not installed; write a .dot file instead or "
                          "install graphviz");
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return smelt_errf(ctx, SMELT_ERR_IO, "dot failed to render '%s'", out);
    return SMELT_OK;
}

static smelt_status render_dot_text(smelt_ctx *ctx, const smelt_strbuf *sb, const char *fmt,
                                    const char *out)
{
    char tmp[] = "/tmp/smelt-graph-XXXXXX";
    int fd = mkstemp(tmp);
    bool written = fd >= 0 && write(fd, sb->data, sb->len) == (ssize_t)sb->len;
    if (fd >= 0) close(fd);
    smelt_status s = written ? render_with_dot(ctx, fmt, tmp, out)
                             : smelt_errf(ctx, SMELT_ERR_IO, "cannot write a temporary file");
    if (fd >= 0) unlink(tmp);
    return s;
}

smelt_status smelt_model_write_graph(smelt_ctx *ctx, smelt_model *m, const char *path)
{
    smelt_ctx_clear(ctx);
    if (!m || !path) return smelt_errf(ctx, SMELT_ERR_ARG, "NULL model or path");
    const char *ext = extension(path);
    bool as_text = strcmp(ext, "dot") == 0 || strcmp(ext, "gv") == 0;
    bool rendered = strcmp(ext, "svg") == 0 || strcmp(ext, "png") == 0 || strcmp(ext, "pdf") == 0;
    if (!as_text && !rendered)
        return smelt_errf(ctx, SMELT_ERR_ARG,
                          "unknown graph format '.%s' (use .dot, .gv, .svg, .png, .pdf)", ext);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    gr_graph_print_dot(m->graph, &sb);
    smelt_status s = as_text ? smelt_write_file(ctx, path, sb.data, sb.len)
                             : render_dot_text(ctx, &sb, ext, path);
    smelt_strbuf_fini(&sb);
    return s;
}
