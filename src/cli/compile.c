/* smelt compile: import and optimise a model; print its IR on request. */
#include <stdlib.h>
#include <string.h>

#include "api/smelt_internal.h"
#include "cli/cli.h"

/* Without -o: build the model (JIT cache) and report; -o DIR: AOT package. */
static int compile_model(smelt_ctx *ctx, smelt_model *m, const char *path, const char *dump,
                         const char *out_dir, const smelt_options *opts)
{
    gr_graph *g = smelt_model_graph(m);
    if (dump && strcmp(dump, "graph") == 0) {
        smelt_strbuf sb;
        smelt_strbuf_init(&sb);
        gr_graph_print(g, &sb);
        fputs(smelt_strbuf_cstr(&sb), stdout);
        smelt_strbuf_fini(&sb);
        return 0;
    }
    if (dump && strcmp(dump, "tir") == 0) setenv("SMELT_DEBUG", "3", 1);
    if (out_dir) {
        if (smelt_model_write_package(ctx, m, out_dir, opts) != SMELT_OK) return cli_fail(ctx);
        printf("wrote package %s\n", out_dir);
        return 0;
    }
    if (smelt_model_compile(ctx, m, opts) != SMELT_OK) return cli_fail(ctx);
    if (!dump)
        printf("%s: %d nodes, %d inputs, %d outputs (opset %lld); compiled\n", path,
               g->nodes.len, g->inputs.len, g->outputs.len, (long long)g->opset);
    return 0;
}

int cli_compile(int argc, char **argv)
{
    const char *model = NULL, *dump = NULL, *out_dir = NULL;
    smelt_options opts = {0};
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (cli_opt(argc, argv, &i, "--dump-ir", &v)) {
            if (!(dump = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "-o", &v)) {
            if (!(out_dir = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "--target", &v)) {
            if (!(opts.target = v)) return 2;
        } else if (strcmp(argv[i], "--embed-weights") == 0) {
            opts.embed_weights = 1;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "smelt compile: unknown option '%s'\n", argv[i]);
            return 2;
        } else {
            model = argv[i];
        }
    }
    if (!model)
        return fprintf(stderr, "usage: smelt compile MODEL [-o DIR] [--embed-weights] "
                               "[--target T] [--dump-ir=graph|tir|c]\n"), 2;
    if (dump && strcmp(dump, "graph") != 0 && strcmp(dump, "c") != 0 && strcmp(dump, "tir") != 0) {
        fprintf(stderr, "smelt compile: unknown IR '%s' for --dump-ir (known: graph, tir, c)\n",
                dump);
        return 2;
    }
    opts.dump_c = dump && strcmp(dump, "c") == 0;
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, model);
    int rc = m ? compile_model(ctx, m, model, dump, out_dir, &opts) : cli_fail(ctx);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return rc;
}
