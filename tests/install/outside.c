/* An application outside the tree: built from an installed prefix with
 * pkg-config only.  Loads a model, compiles it, runs it on zeros and prints
 * the first output's first values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <smelt.h>

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    if (strcmp(smelt_version(), SMELT_VERSION) != 0) {
        fprintf(stderr, "library %s, header %s\n", smelt_version(), SMELT_VERSION);
        return 1;
    }
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, argv[1]);
    if (!m || smelt_model_compile(ctx, m, NULL) != SMELT_OK) {
        fprintf(stderr, "%s: %s\n", smelt_status_name(smelt_ctx_status(ctx)), smelt_ctx_message(ctx));
        return 1;
    }
    smelt_tensor in = {0}, out = {0};
    smelt_model_input_info(m, 0, NULL, &in.dtype, &in.rank, in.dims);
    in.data = calloc(smelt_tensor_nbytes(&in), 1);
    if (smelt_model_run(ctx, m, &in, 1, &out, 1) != SMELT_OK) {
        fprintf(stderr, "%s\n", smelt_ctx_message(ctx));
        return 1;
    }
    const float *y = out.data;
    printf("%s: %.6f %.6f %.6f\n", out.name, y[0], y[1], y[2]);
    smelt_tensor_release(&out);
    free(in.data);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return 0;
}
