/* libFuzzer harness: the whole pipeline to C source on small generated graphs.
 *
 * The input bytes are a recipe, not a protobuf: a small interpreter turns
 * them into a ModelProto of up to MAX_NODES nodes (op types from ops.def
 * plus Constant, arities from each op_def, inputs picked among earlier
 * values or fresh constants shaped like the graph's inputs, attributes from
 * a table of the names the ops read, values near the interesting ones).
 * Every byte string gives some model, so libFuzzer mutates graphs rather
 * than wire format.  The model then goes through the real path: decode,
 * import, shape inference (constant folding through the reference kernels),
 * lower_graph and cg_emit_program for a target the recipe picks; the C
 * compiler is never run.  A failure must carry a status and a message and
 * must not be SMELT_ERR_INTERNAL.
 *
 * One recipe bit names values with hostile strings; the emitted C must then
 * hold none of them raw (RECIPE_HOSTILE in recipe_model.c).
 *
 * Recipe layout (a missing byte reads as 0):
 *   flags  opset (bits 0-2), target (bits 3-4), hostile names (bit 5)
 *   rank   base rank 0..4, then one byte per dim (DIM_TABLE)
 *   n_in   graph inputs 1..3, each: dtype byte, shape-variant byte
 *   nodes  until the bytes run out or an op byte of 255: op byte, input and output counts
 *          (clamped to the op's arity), one byte per input (an earlier
 *          value, a new constant, or omitted), attribute count, attributes
 *          (one the op does not know at the model's opset is left out: the
 *          importer would refuse the model there).  An op byte from
 *          RECIPE_PATTERN_FIRST (232) to 254 makes a pattern instead: a
 *          subgraph of the quantization or recurrent ops built from the
 *          bytes that follow (recipe_patterns.c)
 *   output one byte: odd adds the value before the last as a second output
 * tests/fuzz/gen_pipeline_corpus.py writes seeds in this layout.
 *
 * SMELT_FUZZ_VERBOSE=1 prints each model's fate (for judging the seeds);
 * SMELT_FUZZ_SAVE_MODEL=FILE writes the (last) generated model there, to
 * look at a crash with `smelt compile FILE --dump-ir=...`.
 *
 * SMELT_FUZZ_MODEL_INPUT=1 takes each input as a ModelProto instead of a
 * recipe and runs it for every target (names checked as for hostile ones).
 * A recipe picks ops by their index in ops.def, so it means another model
 * once ops are added; crashes are therefore kept as the models they made
 * (tests/fuzz/regressions/pipeline_models/, one .onnx per crash, replayed
 * this way).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/smelt_internal.h"
#include "codegen/codegen.h"
#include "fuzz_util.h"
#include "lower/program.h"
#include "ops/op.h"
#include "recipe_model.h"

/* ---- the pipeline ---- */

static void hostile_fail(const char *why)
{
    fprintf(stderr, "hostile name reached the C: %s\n", why);
    abort();
}

/* Lex the C (comments, string and char literals) and fail if EVIL shows
 * up as code, a trigraph could form, a line splice (backslash-newline)
 * ends a line comment or sits in a literal, or a literal holds a raw
 * newline.  The compiler's own multi-line macros splice lines in code. */
static void check_no_raw_names(const char *c)
{
    if (strstr(c, "??")) hostile_fail("'\?\?' (trigraph)");
    enum { CODE, LINE_COMMENT, BLOCK_COMMENT, STRING, CHAR } st = CODE;
    for (const char *p = c; *p; p++) {
        switch (st) {
        case CODE:
            if (strncmp(p, "EVIL", 4) == 0) hostile_fail("EVIL outside a literal or comment");
            if (p[0] == '/' && p[1] == '/') st = LINE_COMMENT, p++;
            else if (p[0] == '/' && p[1] == '*') st = BLOCK_COMMENT, p++;
            else if (*p == '"') st = STRING;
            else if (*p == '\'') st = CHAR;
            break;
        case LINE_COMMENT:
            if (p[0] == '\\' && p[1] == '\n') hostile_fail("backslash-newline in a line comment");
            if (*p == '\n') st = CODE;
            break;
        case BLOCK_COMMENT: if (p[0] == '*' && p[1] == '/') st = CODE, p++; break;
        case STRING:
        case CHAR:
            if (*p == '\n') hostile_fail("raw newline in a literal");
            if (p[0] == '\\' && p[1] == '\n') hostile_fail("backslash-newline in a literal");
            if (*p == '\\' && p[1]) p++;
            else if (*p == (st == STRING ? '"' : '\'')) st = CODE;
            break;
        }
    }
}

/* The graph passes (passes/pipeline.c), when the library has them: weak,
 * so the harness also builds against a tree without the pass pipeline. */
smelt_status smelt_model_optimize(smelt_ctx *ctx, smelt_model *m, const smelt_options *o);
#pragma weak smelt_model_optimize

static void lower_and_emit(smelt_ctx *ctx, smelt_model *m, const cg_target *t, int hostile)
{
    if (smelt_model_optimize && smelt_model_optimize(ctx, m, NULL) != SMELT_OK) {
        fuzz_check_failed(ctx);
        return;
    }
    lower_options lo = {.hw = &t->hw};
    lowered_program *lp = NULL;
    if (lower_graph(ctx, m->graph, &lo, &lp) != SMELT_OK) {
        fuzz_check_failed(ctx);
        return;
    }
    smelt_strbuf c;
    smelt_strbuf_init(&c);
    if (cg_emit_program(ctx, &lp->prog, t, &c) != SMELT_OK) fuzz_check_failed(ctx);
    else if (hostile && !c.failed) check_no_raw_names(smelt_strbuf_cstr(&c));
    smelt_strbuf_fini(&c);
    lowered_program_free(lp);
}

static bool env_is_1(const char *name)
{
    const char *v = getenv(name);
    return v && *v == '1';
}

/* Load the model, optimise, lower and emit for target t. */
static void run_model(const uint8_t *bytes, size_t n, const cg_target *t, int hostile, bool verbose)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load_bytes(ctx, bytes, n, NULL);
    if (!m) fuzz_check_failed(ctx);
    else if (smelt_graph_is_static(m->graph)) lower_and_emit(ctx, m, t, hostile);
    if (verbose)
        fprintf(stderr, "%zu-byte model, %s, %s: %s\n", n, t->name,
                !m ? "load failed" : smelt_graph_is_static(m->graph) ? "lowered" : "dynamic",
                smelt_ctx_status(ctx) ? smelt_ctx_message(ctx) : "ok");
    smelt_model_free(m);
    smelt_ctx_free(ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool init, verbose, model_input;
    if (!init) {
        fuzz_use_budget_allocator();
        verbose = env_is_1("SMELT_FUZZ_VERBOSE");
        model_input = env_is_1("SMELT_FUZZ_MODEL_INPUT");
        init = true;
    }
    if (model_input) {
        for (int i = 0; i < 3; i++) run_model(data, size, cg_target_find(RECIPE_TARGETS[i]), 1, verbose);
        return 0;
    }
    pb model = {0};
    int hostile;
    const cg_target *t = cg_target_find(recipe_build_model(data, size, &model, &hostile));
    recipe_save_model(&model);
    run_model(model.d, model.n, t, hostile, verbose);
    free(model.d);
    return 0;
}
