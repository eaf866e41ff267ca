/* smelt graph: Graphviz rendering of a model's graph. */
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/smelt_internal.h"
#include "cli/cli.h"

extern char **environ;

static const char *extension(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : "";
}

/* Run `dot -T<fmt> -o out in` without a shell, so paths are never parsed. */
static int render_with_dot(const char *fmt, const char *dot_path, const char *out)
{
    char tflag[16];
    snprintf(tflag, sizeof tflag, "-T%s", fmt);
    char *args[] = {"dot", tflag, "-o", (char *)out, (char *)dot_path, NULL};
    pid_t pid;
    if (posix_spawnp(&pid, "dot", NULL, NULL, args, environ) != 0) {
        fprintf(stderr, "smelt graph: graphviz 'dot' is not installed; write a .dot file "
                        "instead or install graphviz\n");
        return 1;
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "smelt graph: dot failed to render '%s'\n", out);
        return 1;
    }
    return 0;
}

static int write_graph(smelt_ctx *ctx, gr_graph *g, const char *out)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    gr_graph_print_dot(g, &sb);
    const char *ext = extension(out);
    int rc = 0;
    if (strcmp(ext, "dot") == 0 || strcmp(ext, "gv") == 0) {
        if (smelt_write_file(ctx, out, sb.data, sb.len) != SMELT_OK) rc = cli_fail(ctx);
    } else if (strcmp(ext, "svg") == 0 || strcmp(ext, "png") == 0 || strcmp(ext, "pdf") == 0) {
        char tmp[] = "/tmp/smelt-graph-XXXXXX";
        int fd = mkstemp(tmp);
        if (fd < 0 || write(fd, sb.data, sb.len) != (ssize_t)sb.len) {
            fprintf(stderr, "smelt graph: cannot write a temporary file\n");
            rc = 1;
        }
        if (fd >= 0) close(fd);
        if (rc == 0) rc = render_with_dot(ext, tmp, out);
        unlink(tmp);
    } else {
        fprintf(stderr, "smelt graph: unknown output format '.%s' (use .dot, .svg, .png)\n", ext);
        rc = 2;
    }
    smelt_strbuf_fini(&sb);
    if (rc == 0) printf("wrote %s\n", out);
    return rc;
}

int cli_graph(int argc, char **argv)
{
    const char *model = NULL, *out = NULL;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (cli_opt(argc, argv, &i, "-o", &v)) {
            if (!(out = v)) return 2;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "smelt graph: unknown option '%s'\n", argv[i]);
            return 2;
        } else {
            model = argv[i];
        }
    }
    if (!model || !out) return fprintf(stderr, "usage: smelt graph MODEL -o FILE.dot|.svg|.png\n"), 2;
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, model);
    int rc = m ? write_graph(ctx, smelt_model_graph(m), out) : cli_fail_load(ctx, model);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return rc;
}
