/* smelt graph: Graphviz rendering of a model's graph. */
#include "api/smelt_internal.h"
#include "cli/cli.h"

static int write_graph(smelt_ctx *ctx, smelt_model *m, const char *out)
{
    smelt_status s = smelt_model_write_graph(ctx, m, out);
    if (s == SMELT_OK) printf("wrote %s\n", out);
    return s == SMELT_OK ? 0 : s == SMELT_ERR_ARG ? (cli_fail(ctx), 2) : cli_fail(ctx);
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
    int rc = m ? write_graph(ctx, m, out) : cli_fail_load(ctx, model);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return rc;
}
