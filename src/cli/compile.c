/* smelt compile: import and optimise a model; print its IR on request. */
#include <string.h>

#include "api/smelt_internal.h"
#include "cli/cli.h"

int cli_compile(int argc, char **argv)
{
    const char *model = NULL, *dump = NULL;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (cli_opt(argc, argv, &i, "--dump-ir", &v)) {
            if (!(dump = v)) return 2;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "smelt compile: unknown option '%s'\n", argv[i]);
            return 2;
        } else {
            model = argv[i];
        }
    }
    if (!model) return fprintf(stderr, "usage: smelt compile MODEL [--dump-ir=graph]\n"), 2;
    if (dump && strcmp(dump, "graph") != 0) {
        fprintf(stderr, "smelt compile: unknown IR '%s' for --dump-ir (known: graph)\n", dump);
        return 2;
    }
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, model);
    int rc = 0;
    if (!m) {
        rc = cli_fail(ctx);
    } else {
        gr_graph *g = smelt_model_graph(m);
        smelt_strbuf sb;
        smelt_strbuf_init(&sb);
        if (dump) gr_graph_print(g, &sb);
        else smelt_strbuf_printf(&sb, "%s: %d nodes, %d inputs, %d outputs (opset %lld)\n", model,
                                 g->nodes.len, g->inputs.len, g->outputs.len,
                                 (long long)g->opset);
        fputs(smelt_strbuf_cstr(&sb), stdout);
        smelt_strbuf_fini(&sb);
    }
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return rc;
}
