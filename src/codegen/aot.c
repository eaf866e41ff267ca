/* AOT packages: a directory that builds into a program with nothing but a
 * C99 compiler, pthreads and libm.
 *
 *   model.c           the generated module + the model_* API of model.h
 *   model.h           documented API: create, set input, run, get output, free
 *   weights.bin       the weight blob (absent with embed_weights)
 *   smelt_rt.h, smelt_rt_pool.c, smelt_rt_model.c   the runtime, copied
 *   main.c            example: random inputs, run, print output statistics
 *   Makefile
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/embed.h"

const cg_embedded_file *cg_runtime_file(const char *name)
{
    for (int i = 0; i < cg_runtime_n_files; i++)
        if (!strcmp(cg_runtime_files[i].name, name)) return &cg_runtime_files[i];
    return NULL;
}

static smelt_status write_text(smelt_ctx *ctx, const char *dir, const char *name, smelt_strbuf *text)
{
    if (text->failed) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory writing %s", name);
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = smelt_alloc(n);
    if (!path) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    snprintf(path, n, "%s/%s", dir, name);
    smelt_status s = smelt_write_file(ctx, path, text->data ? text->data : "", text->len);
    smelt_free(path);
    return s;
}

static smelt_status write_bytes(smelt_ctx *ctx, const char *dir, const char *name, const void *data,
                                size_t size)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = smelt_alloc(n);
    if (!path) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    snprintf(path, n, "%s/%s", dir, name);
    smelt_status s = smelt_write_file(ctx, path, size ? data : "", size);
    smelt_free(path);
    return s;
}

static smelt_status make_dir(smelt_ctx *ctx, const char *dir)
{
    char *p = smelt_strdup(dir);
    if (!p) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    bool ok = true;
    for (char *s = p + 1; *s && ok; s++) {
        if (*s != '/') continue;
        *s = '\0';
        ok = mkdir(p, 0755) == 0 || errno == EEXIST;
        *s = '/';
    }
    ok = ok && (mkdir(p, 0755) == 0 || errno == EEXIST);
    smelt_free(p);
    struct stat st;
    if (!ok || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return smelt_errf(ctx, SMELT_ERR_IO, "cannot create package directory '%s': %s", dir, strerror(errno));
    return SMELT_OK;
}

/* ---- model.h ---- */

static void describe_io(smelt_strbuf *h, const ir_program *p, const char *what, int i,
                        const ir_io_desc *d)
{
    int64_t bytes = (int64_t)smelt_dtype_size(d->dtype);
    smelt_strbuf_printf(h, " *   %s %d: ", what, i);
    cg_append_comment_text(h, d->name, 100);
    smelt_strbuf_printf(h, "  %s[", smelt_dtype_name(d->dtype));
    for (int k = 0; k < d->rank; k++) {
        smelt_strbuf_append(h, k ? "," : "");
        if (d->rt[k] > 0) { /* a run-time dim: its name (escaped) up to its maximum */
            cg_append_comment_text(h, p->rt[d->rt[k] - 1].name, 40);
            if (d->rt_add[k]) smelt_strbuf_printf(h, "%+d", d->rt_add[k]);
            smelt_strbuf_append(h, "<=");
        }
        smelt_strbuf_printf(h, "%lld", (long long)d->dims[k]);
        bytes *= d->dims[k];
    }
    smelt_strbuf_printf(h, "]  (%lld bytes%s)\n", (long long)bytes, d->rank && p->n_rt ? " at most" : "");
}

static void emit_model_h(const ir_program *p, const cg_target *t, int heap_free,
                         int64_t arena_bytes, smelt_strbuf *h)
{
    smelt_strbuf_printf(h,
        "/* C API of this model, compiled by smelt for target %s.\n"
        " *\n"
        " * Inputs and outputs (names are the model's own; use them with\n"
        " * model_set_input / model_get_output, or use indices through smelt_rt.h):\n",
        t->name);
    for (int i = 0; i < p->n_inputs; i++) describe_io(h, p, "input", i, &p->inputs[i]);
    for (int i = 0; i < p->n_outputs; i++) describe_io(h, p, "output", i, &p->outputs[i]);
    if (p->n_rt)
        smelt_strbuf_append(h,
            " *\n"
            " * Run-time dims (NAME<=MAX above): model_set_input takes inputs of any\n"
            " * length in the range the package was compiled for, the outputs follow\n"
            " * (their sizes from model_get_output); the BYTES macros below are the\n"
            " * maxima.  model_run_static runs at the maxima.\n");
    smelt_strbuf_append(h,
        " *\n"
        " * Typical use:\n"
        " *     char err[256];\n"
        " *     model_t *m = model_create(\"weights.bin\", 0, err, sizeof err);\n"
        " *     if (!m) { puts(err); return 1; }\n"
        " *     model_set_input(m, \"input name\", data, data_bytes);\n"
        " *     if (model_run(m) != SMELT_RT_OK) puts(model_error(m));\n"
        " *     const float *y = model_get_output(m, \"output name\", &bytes);\n"
        " *     model_free(m);\n"
        " *\n"
        " * Data is dense, row-major, in the listed element type (float16 and\n"
        " * bfloat16 as raw 16-bit patterns, bool as one byte 0/1).\n"
        " */\n"
        "#ifndef SMELT_MODEL_H\n#define SMELT_MODEL_H\n\n"
        "#include <stddef.h>\n\n#include \"smelt_rt.h\"\n\n"
        "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    smelt_strbuf_printf(h, "#define MODEL_NUM_INPUTS %d\n#define MODEL_NUM_OUTPUTS %d\n\n", p->n_inputs,
                        p->n_outputs);
    /* sizes for static buffers: MODEL_INPUT_<i>_BYTES, MODEL_OUTPUT_<i>_BYTES
     * (by index: the model's names need not be C identifiers) */
    smelt_strbuf_printf(h,
        "/* Sizes in bytes, for static buffers: the activation arena a run uses\n"
        " * (smelt_rt_module_info.arena_bytes), the weight blob, and each input\n"
        " * and output in model order. */\n"
        "#define MODEL_ARENA_BYTES %lldu\n#define MODEL_WEIGHT_BYTES %lldu\n",
        (long long)arena_bytes, (long long)p->weight_bytes);
    for (int i = 0; i < p->n_inputs; i++) {
        int64_t n = (int64_t)smelt_dtype_size(p->inputs[i].dtype);
        for (int d = 0; d < p->inputs[i].rank; d++) n *= p->inputs[i].dims[d];
        smelt_strbuf_printf(h, "#define MODEL_INPUT_%d_BYTES %lldu\n", i, (long long)n);
    }
    for (int i = 0; i < p->n_outputs; i++) {
        int64_t n = (int64_t)smelt_dtype_size(p->outputs[i].dtype);
        for (int d = 0; d < p->outputs[i].rank; d++) n *= p->outputs[i].dims[d];
        smelt_strbuf_printf(h, "#define MODEL_OUTPUT_%d_BYTES %lldu\n", i, (long long)n);
    }
    smelt_strbuf_printf(h, "/* 1: model_run_static allocates nothing (no temporary over 64 KiB). */\n"
                           "#define MODEL_HEAP_FREE %d\n\n", heap_free);
    smelt_strbuf_append(h,
        "typedef smelt_rt_model model_t;\n\n"
        "/* Load the model.  weights_path: the package's weights.bin (ignored, may\n"
        " * be NULL, when the weights are compiled in).  num_threads <= 0 uses all\n"
        " * cores, 1 runs on the calling thread only.  Returns NULL on failure with\n"
        " * the reason in err. */\n"
        "model_t *model_create(const char *weights_path, int num_threads, char *err, size_t err_size);\n\n"
        "/* Bind input `name` to data of exactly `bytes` bytes.  Not copied: data\n"
        " * must stay valid until model_run returns. */\n"
        "smelt_rt_status model_set_input(model_t *m, const char *name, const void *data, size_t bytes);\n\n"
        "/* Run on the bound inputs.  Not reentrant for one model_t. */\n"
        "smelt_rt_status model_run(model_t *m);\n\n"
        "/* Output `name` after a successful model_run: owned by the model, valid\n"
        " * until the next run or model_free; its size in *bytes (may be NULL). */\n"
        "const void *model_get_output(model_t *m, const char *name, size_t *bytes);\n\n"
        "/* What went wrong in the last failed call on m. */\n"
        "const char *model_error(const model_t *m);\n\n"
        "void model_free(model_t *m);\n\n"
        "/* The module's description (names, dtypes, shapes) for generic code. */\n"
        "const smelt_rt_module_info *model_info(void);\n\n"
        "/* Run without the runtime's allocations and threads: on the calling\n"
        " * thread, in caller memory.  weights: the weight blob (MODEL_WEIGHT_BYTES;\n"
        " * NULL when compiled in); arena: MODEL_ARENA_BYTES bytes, 64-byte\n"
        " * aligned, not shared with a concurrent call; inputs/outputs in model\n"
        " * order, MODEL_INPUT_<i>_BYTES / MODEL_OUTPUT_<i>_BYTES each.  Nothing is\n"
        " * checked.  Returns 0; non-zero when a data check failed (an index out of\n"
        " * range...) or a temporary the generated code puts on the heap (only\n"
        " * those over 64 KiB inside parallel loops; MODEL_HEAP_FREE is 1 when\n"
        " * there are none) could\n"
        " * not be allocated. */\n"
        "int model_run_static(const unsigned char *weights, unsigned char *arena,\n"
        "                     const void *const *inputs, void *const *outputs);\n\n"
        "#ifdef __cplusplus\n}\n#endif\n#endif\n");
}

static const char *const model_api_text =
    "\n/* ---- The model.h API: thin wrappers over smelt_rt ---- */\n"
    "#include <string.h> /* memcpy: a GPU module's C part has no prelude */\n"
    "#include \"model.h\"\n\n"
    "model_t *model_create(const char *weights_path, int num_threads, char *err, size_t err_size)\n{\n"
    "    return smelt_rt_model_from_info_file(&smelt_module_info, weights_path, num_threads, err, err_size);\n"
    "}\n\n"
    "smelt_rt_status model_set_input(model_t *m, const char *name, const void *data, size_t bytes)\n{\n"
    "    return smelt_rt_model_set_input(m, name, data, bytes);\n}\n\n"
    "smelt_rt_status model_run(model_t *m) { return smelt_rt_model_invoke(m); }\n\n"
    "const void *model_get_output(model_t *m, const char *name, size_t *bytes)\n{\n"
    "    return smelt_rt_model_get_output(m, name, bytes);\n}\n\n"
    "const char *model_error(const model_t *m) { return smelt_rt_model_error(m); }\n\n"
    "void model_free(model_t *m) { smelt_rt_model_free(m); }\n\n"
    "const smelt_rt_module_info *model_info(void) { return &smelt_module_info; }\n\n"
    "int model_run_static(const unsigned char *weights, unsigned char *arena,\n"
    "                     const void *const *inputs, void *const *outputs)\n{\n"
    "    smelt_rt_run_error rterr = {0, -1, 0, 0, NULL, NULL};\n"
    "    static const unsigned char none[64];\n"
    "    if (!weights) weights = smelt_module_info.embedded_weights ? smelt_module_info.embedded_weights : none;\n"
    "    for (int k = 0; k < smelt_module_info.num_rt_dims; k++) /* run-time dims at their maxima */\n"
    "        memcpy(arena + smelt_module_info.rt_dims_offset + 8 * k, &smelt_module_info.rt_dims[k].max, 8);\n"
    "    return smelt_module_info.run(NULL, weights, arena, inputs, outputs, &rterr);\n}\n";

/* ---- main.c ---- */

static const char *const main_text =
    "/* Example for this smelt package: fills every input with pseudo-random\n"
    " * values, runs the model and prints statistics of every output.\n"
    " *   usage: ./main [weights.bin] [runs]\n"
    " */\n"
    "#define _POSIX_C_SOURCE 199309L /* clock_gettime */\n"
    "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include <string.h>\n#include <time.h>\n\n"
    "#include \"model.h\"\n#include \"smelt_lowbit.h\"\n\n"
    "static uint32_t rng_state = 12345u;\n\n"
    "/* uniform in [-1, 1) */\n"
    "static float next_uniform(void)\n{\n"
    "    rng_state = rng_state * 1664525u + 1013904223u;\n"
    "    return (float)(rng_state >> 8) / 8388608.0f - 1.0f;\n}\n\n"
    "/* float -> IEEE half bits, for values in [-1, 1] (enough for example data) */\n"
    "static uint16_t to_half(float f)\n{\n"
    "    uint32_t x;\n"
    "    memcpy(&x, &f, 4);\n"
    "    uint32_t sign = (x >> 16) & 0x8000u;\n"
    "    int32_t e = (int32_t)((x >> 23) & 0xffu) - 127 + 15;\n"
    "    if (e <= 0) return (uint16_t)sign;\n"
    "    return (uint16_t)(sign | ((uint32_t)e << 10) | ((x & 0x7fffffu) >> 13));\n}\n\n"
    "static float from_half(uint16_t h)\n{\n"
    "    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY)\n"
    "                                                       : ldexpf((float)(m | 0x400u), (int)e - 25);\n"
    "    return (h & 0x8000u) ? -v : v;\n}\n\n"
    "static void fill(void *data, int dtype, size_t n)\n{\n"
    "    size_t i;\n"
    "    for (i = 0; i < n; i++) {\n"
    "        float r = next_uniform();\n"
    "        switch (dtype) {\n"
    "        case 1: ((float *)data)[i] = r; break;\n"
    "        case 11: ((double *)data)[i] = r; break;\n"
    "        case 10: ((uint16_t *)data)[i] = to_half(r); break;\n"
    "        case 16: { uint32_t b; memcpy(&b, &r, 4); ((uint16_t *)data)[i] = (uint16_t)(b >> 16); break; }\n"
    "        case 9: ((uint8_t *)data)[i] = r > 0; break;\n"
    "        case 2: ((uint8_t *)data)[i] = (uint8_t)((r + 1) * 5); break;\n"
    "        case 3: ((int8_t *)data)[i] = (int8_t)(r * 5); break;\n"
    "        case 4: ((uint16_t *)data)[i] = (uint16_t)((r + 1) * 5); break;\n"
    "        case 5: ((int16_t *)data)[i] = (int16_t)(r * 5); break;\n"
    "        case 6: ((int32_t *)data)[i] = (int32_t)(r * 5); break;\n"
    "        case 12: ((uint32_t *)data)[i] = (uint32_t)((r + 1) * 5); break;\n"
    "        case 7: ((int64_t *)data)[i] = (int64_t)(r * 5); break;\n"
    "        case 13: ((uint64_t *)data)[i] = (uint64_t)((r + 1) * 5); break;\n"
    "        default: /* float8, float4, int4, int2: one byte per element */\n"
    "            if (dtype >= 17 && dtype <= 26)\n"
    "                ((uint8_t *)data)[i] = (uint8_t)smelt_lowbit_encode(dtype, r * 5, SMELT_LB_SATURATE);\n"
    "            break;\n"
    "        }\n"
    "    }\n}\n\n"
    "static double element(const void *data, int dtype, size_t i)\n{\n"
    "    switch (dtype) {\n"
    "    case 1: return ((const float *)data)[i];\n"
    "    case 11: return ((const double *)data)[i];\n"
    "    case 10: return from_half(((const uint16_t *)data)[i]);\n"
    "    case 16: { uint32_t b = (uint32_t)((const uint16_t *)data)[i] << 16; float f; memcpy(&f, &b, 4); return f; }\n"
    "    case 9: case 2: return ((const uint8_t *)data)[i];\n"
    "    case 3: return ((const int8_t *)data)[i];\n"
    "    case 4: return ((const uint16_t *)data)[i];\n"
    "    case 5: return ((const int16_t *)data)[i];\n"
    "    case 6: return ((const int32_t *)data)[i];\n"
    "    case 12: return ((const uint32_t *)data)[i];\n"
    "    case 7: return (double)((const int64_t *)data)[i];\n"
    "    case 13: return (double)((const uint64_t *)data)[i];\n"
    "    case 22: case 26: return ((const int8_t *)data)[i];\n"
    "    case 21: case 25: return ((const uint8_t *)data)[i];\n"
    "    default:\n"
    "        if (dtype >= 17 && dtype <= 24) return smelt_lowbit_decode(dtype, ((const uint8_t *)data)[i]);\n"
    "        return 0;\n"
    "    }\n}\n\n"
    "static void print_stats(const smelt_rt_io_info *io, const void *data, size_t bytes)\n{\n"
    "    size_t n = bytes / smelt_rt_dtype_size(io->dtype), i, nan = 0;\n"
    "    double sum = 0, lo = INFINITY, hi = -INFINITY;\n"
    "    for (i = 0; i < n; i++) {\n"
    "        double v = element(data, io->dtype, i);\n"
    "        if (v != v) { nan++; continue; }\n"
    "        sum += v;\n"
    "        if (v < lo) lo = v;\n"
    "        if (v > hi) hi = v;\n"
    "    }\n"
    "    printf(\"output '%s' (%s, %lu elements): min %g max %g mean %g nan %lu first\", io->name,\n"
    "           smelt_rt_dtype_name(io->dtype), (unsigned long)n, lo, hi, n > nan ? sum / (double)(n - nan) : 0.0,\n"
    "           (unsigned long)nan);\n"
    "    for (i = 0; i < n && i < 5; i++) printf(\" %g\", element(data, io->dtype, i));\n"
    "    printf(\"\\n\");\n}\n\n"
    "static double now_ms(void)\n{\n"
    "    struct timespec ts;\n"
    "    clock_gettime(CLOCK_MONOTONIC, &ts);\n"
    "    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;\n}\n\n"
    "int main(int argc, char **argv)\n{\n"
    "    const char *weights = argc > 1 ? argv[1] : \"weights.bin\";\n"
    "    int runs = argc > 2 ? atoi(argv[2]) : 1, i, r;\n"
    "    char err[512];\n"
    "    const smelt_rt_module_info *info = model_info();\n"
    "    void *inputs[MODEL_NUM_INPUTS + 1];\n"
    "    model_t *m = model_create(weights, 0, err, sizeof err);\n"
    "    double t0;\n"
    "    if (!m) {\n"
    "        fprintf(stderr, \"error: %s\\n\", err);\n"
    "        return 1;\n"
    "    }\n"
    "    for (i = 0; i < info->num_inputs; i++) {\n"
    "        size_t bytes = smelt_rt_io_bytes(&info->inputs[i]);\n"
    "        inputs[i] = malloc(bytes ? bytes : 1);\n"
    "        if (!inputs[i]) {\n"
    "            fprintf(stderr, \"error: out of memory\\n\");\n"
    "            return 1;\n"
    "        }\n"
    "        fill(inputs[i], info->inputs[i].dtype, bytes / smelt_rt_dtype_size(info->inputs[i].dtype));\n"
    "        if (model_set_input(m, info->inputs[i].name, inputs[i], bytes) != SMELT_RT_OK) {\n"
    "            fprintf(stderr, \"error: %s\\n\", model_error(m));\n"
    "            return 1;\n"
    "        }\n"
    "    }\n"
    "    if (runs < 1) runs = 1;\n"
    "    t0 = now_ms();\n"
    "    for (r = 0; r < runs; r++) {\n"
    "        if (model_run(m) != SMELT_RT_OK) {\n"
    "            fprintf(stderr, \"error: %s\\n\", model_error(m));\n"
    "            return 1;\n"
    "        }\n"
    "    }\n"
    "    printf(\"%d run(s), %.3f ms per run\\n\", runs, (now_ms() - t0) / runs);\n"
    "    for (i = 0; i < info->num_outputs; i++) {\n"
    "        size_t bytes = 0;\n"
    "        const void *data = model_get_output(m, info->outputs[i].name, &bytes);\n"
    "        if (data) print_stats(&info->outputs[i], data, bytes);\n"
    "    }\n"
    "    for (i = 0; i < info->num_inputs; i++) free(inputs[i]);\n"
    "    model_free(m);\n"
    "    return 0;\n}\n";

/* ---- Makefile ---- */

static void emit_makefile(const cg_target *t, smelt_strbuf *mk)
{
    smelt_strbuf_printf(mk, "# Builds the example program of this smelt package (target %s).\n", t->name);
    smelt_strbuf_append(mk,
        "# Needs only a C99 compiler, pthreads and libm.\n"
        "#   make                the example program ./main\n"
        "#   make lib            libmodel.a (model + runtime) to link into a program\n"
        "#   make shared         libmodel.so\n"
        "#   make ARCH=native    this machine's whole instruction set (fastest, not portable)\n\n"
        "CFLAGS ?= -std=c99 -O2 -Wall -Wextra -Werror\n"
        "# Architecture: ARCH=portable (default) builds with the instruction set the\n"
        "# target needs and no more; ARCH=native adds -march=native; or set ARCH_FLAGS.\n"
        "ARCH ?= portable\n"
        "ARCH_FLAGS_portable =");
    for (const char *const *f = t->isa_flags; *f; f++)
        if (strcmp(*f, "-march=native") != 0 && strcmp(*f, "-mtune=native") != 0)
            smelt_strbuf_printf(mk, " %s", *f);
    smelt_strbuf_append(mk,
        "\nARCH_FLAGS_native = $(ARCH_FLAGS_portable) -march=native\n"
        "ARCH_FLAGS ?= $(ARCH_FLAGS_$(ARCH))\n"
        "# The model itself: optimised for the target it was compiled for.\n"
        "MODEL_CFLAGS =");
    for (const char *const *f = cg_common_cflags(); *f; f++)
        if (strcmp(*f, "-fPIC") != 0 && strcmp(*f, "-std=c99") != 0) smelt_strbuf_printf(mk, " %s", *f);
    smelt_strbuf_append(mk,
        " $(ARCH_FLAGS)\n"
        "LDLIBS = -lpthread -lm\n"
        "LIB_OBJS = model.o smelt_rt_pool.o smelt_rt_model.o\n"
        "OBJS = main.o $(LIB_OBJS)\n\n"
        "main: $(OBJS)\n"
        "\t$(CC) $(CFLAGS) -o $@ $(OBJS) $(LDLIBS)\n\n"
        "lib: libmodel.a\n"
        "libmodel.a: $(LIB_OBJS)\n"
        "\t$(AR) rcs $@ $(LIB_OBJS)\n\n"
        "shared: libmodel.so\n"
        "libmodel.so: model.c model.h smelt_rt.h smelt_rt_pool.c smelt_rt_model.c\n"
        "\t$(CC) $(CFLAGS) $(MODEL_CFLAGS) -fPIC -shared -o $@ model.c smelt_rt_pool.c "
        "smelt_rt_model.c $(LDLIBS)\n\n"
        "model.o: model.c model.h smelt_rt.h\n"
        "\t$(CC) $(CFLAGS) $(MODEL_CFLAGS) -c model.c\n\n"
        "main.o: main.c model.h smelt_rt.h\n"
        "smelt_rt_pool.o: smelt_rt_pool.c smelt_rt.h\n"
        "smelt_rt_model.o: smelt_rt_model.c smelt_rt.h\n\n"
        "clean:\n"
        "\trm -f main $(OBJS) libmodel.a libmodel.so\n\n"
        ".PHONY: clean lib shared\n");
}

/* A GPU target's Makefile: the device file built by nvcc (CUDA) or linked
 * with the OpenCL ICD loader. */
static void emit_makefile_gpu(const cg_target *t, smelt_strbuf *mk)
{
    bool cuda = t->gpu == CG_GPU_CUDA;
    smelt_strbuf_printf(mk, "# Builds the example program of this smelt package (target %s).\n", t->name);
    if (cuda)
        smelt_strbuf_append(mk,
            "# Needs a C99 compiler and the CUDA toolkit (nvcc); runs on an NVIDIA GPU.\n"
            "#   make                         the example program ./main (for CUDA_ARCH=sm_90)\n"
            "#   make CUDA_ARCH=sm_80         for A100-class GPUs\n"
            "#   make NVCC_ARCH='-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90'\n"
            "#                                one program for both\n"
            "#   make lib                     libmodel.a (model + runtime; link with nvcc or -lcudart)\n\n"
            "CFLAGS ?= -std=c99 -O2 -Wall -Wextra -Werror\n"
            "NVCC ?= nvcc\n"
            "CUDA_ARCH ?= sm_90\n"
            "NVCC_ARCH ?= -arch=$(CUDA_ARCH)\n"
            "NVCCFLAGS ?= -O3 $(NVCC_ARCH) -Werror all-warnings -Xcompiler -Wall,-Wextra\n"
            "LDLIBS = -lpthread -lm\n"
            "LIB_OBJS = model.o model_gpu.o smelt_rt_pool.o smelt_rt_model.o\n"
            "OBJS = main.o $(LIB_OBJS)\n\n"
            "main: $(OBJS)\n"
            "\t$(NVCC) $(NVCC_ARCH) -o $@ $(OBJS) $(LDLIBS)\n\n"
            "model_gpu.o: model_gpu.cu smelt_rt.h\n"
            "\t$(NVCC) $(NVCCFLAGS) -c model_gpu.cu\n\n");
    else
        smelt_strbuf_append(mk,
            "# Needs a C99 compiler, the OpenCL headers and ICD loader (Debian:\n"
            "# opencl-headers ocl-icd-opencl-dev) and an OpenCL driver (a GPU's, or\n"
            "# pocl-opencl-icd for the CPU).  The kernels build at the first run.\n"
            "#   make                the example program ./main\n"
            "#   make lib            libmodel.a (model + runtime; link with -lOpenCL)\n\n"
            "CFLAGS ?= -std=c99 -O2 -Wall -Wextra -Werror\n"
            "LDLIBS = -lOpenCL -lpthread -lm\n"
            "LIB_OBJS = model.o model_gpu.o smelt_rt_pool.o smelt_rt_model.o\n"
            "OBJS = main.o $(LIB_OBJS)\n\n"
            "main: $(OBJS)\n"
            "\t$(CC) $(CFLAGS) -o $@ $(OBJS) $(LDLIBS)\n\n"
            "model_gpu.o: model_gpu.c smelt_rt.h\n\n");
    smelt_strbuf_append(mk,
        "lib: libmodel.a\n"
        "libmodel.a: $(LIB_OBJS)\n"
        "\t$(AR) rcs $@ $(LIB_OBJS)\n\n"
        "model.o: model.c model.h smelt_rt.h\n"
        "main.o: main.c model.h smelt_rt.h\n"
        "smelt_rt_pool.o: smelt_rt_pool.c smelt_rt.h\n"
        "smelt_rt_model.o: smelt_rt_model.c smelt_rt.h\n\n"
        "clean:\n"
        "\trm -f main $(OBJS) libmodel.a\n\n"
        ".PHONY: clean lib\n");
}

/* ---- the package ---- */

static smelt_status write_runtime(smelt_ctx *ctx, const char *dir)
{
    static const char *const names[] = {"smelt_rt.h", "smelt_lowbit.h", "smelt_rt_pool.c",
                                        "smelt_rt_model.c"};
    for (size_t i = 0; i < SMELT_ARRAY_LEN(names); i++) {
        const cg_embedded_file *f = cg_runtime_file(names[i]);
        if (!f) return smelt_errf(ctx, SMELT_ERR_INTERNAL, "runtime file %s is not embedded", names[i]);
        SMELT_TRY(write_bytes(ctx, dir, names[i], f->data, f->size));
    }
    return SMELT_OK;
}

/* 1 when the generated code takes no temporary from the heap. */
static int heap_free(const smelt_strbuf *c)
{
    return strstr(smelt_strbuf_cstr((smelt_strbuf *)c), "smelt_alloc64_((size_t)") == NULL;
}

/* text with the identifiers model_* and MODEL_* (not inside another
 * identifier, e.g. smelt_rt_model_run) renamed to prefix_* and PREFIX_*. */
static bool apply_prefix(const char *prefix, smelt_strbuf *text)
{
    if (!prefix || !*prefix) return true;
    char upper[80];
    size_t n = strlen(prefix);
    for (size_t i = 0; i <= n; i++)
        upper[i] = prefix[i] >= 'a' && prefix[i] <= 'z' ? (char)(prefix[i] - 'a' + 'A') : prefix[i];
    smelt_strbuf out;
    smelt_strbuf_init(&out);
    const char *src = smelt_strbuf_cstr(text);
    for (const char *q = src; *q;) {
        bool word_start = q == src || !(q[-1] == '_' || (q[-1] >= 'a' && q[-1] <= 'z') ||
                                        (q[-1] >= 'A' && q[-1] <= 'Z') || (q[-1] >= '0' && q[-1] <= '9'));
        if (word_start && strncmp(q, "model_", 6) == 0) {
            smelt_strbuf_printf(&out, "%s_", prefix);
            q += 6;
        } else if (word_start && strncmp(q, "MODEL_", 6) == 0) {
            smelt_strbuf_printf(&out, "%s_", upper);
            q += 6;
        } else if (word_start && strncmp(q, "SMELT_MODEL_H", 13) == 0) {
            smelt_strbuf_printf(&out, "SMELT_%s_H", upper);
            q += 13;
        } else {
            char c[2] = {*q++, 0};
            smelt_strbuf_append(&out, c);
        }
    }
    bool ok = !out.failed;
    smelt_strbuf_fini(text);
    *text = out;
    return ok;
}

static bool valid_prefix(const char *prefix)
{
    if (!prefix || !*prefix) return true;
    size_t n = strlen(prefix);
    if (n > 64 || (prefix[0] >= '0' && prefix[0] <= '9')) return false;
    for (size_t i = 0; i < n; i++) {
        char c = prefix[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            return false;
    }
    return strncmp(prefix, "smelt_", 6) != 0;
}

static smelt_status write_sources(smelt_ctx *ctx, const ir_program *p, const cg_target *t, const char *dir,
                                  bool embed_weights, const char *prefix)
{
    smelt_strbuf c, h, mk, m;
    smelt_strbuf_init(&c);
    smelt_strbuf_init(&h);
    smelt_strbuf_init(&mk);
    smelt_strbuf_init(&m);
    int64_t arena_bytes = p->arena_bytes;
    cg_emit_options opts = {.embed_weights = embed_weights, .arena_bytes_out = &arena_bytes};
    if (prefix && *prefix)
        smelt_strbuf_printf(&c, "/* every exported symbol under the prefix '%s' */\n"
                            "#define smelt_module_info %s_module_info\n", prefix, prefix);
    smelt_strbuf dev;
    smelt_strbuf_init(&dev);
    bool gpu = t->gpu != CG_GPU_NONE;
    smelt_status s = cg_emit_program_opts(ctx, p, t, &opts, &c);
    if (s == SMELT_OK && gpu) s = cg_gpu_emit_device(ctx, p, t, &dev, NULL);
    if (s == SMELT_OK) {
        smelt_strbuf_append(&c, model_api_text);
        emit_model_h(p, t, heap_free(&c), arena_bytes, &h);
        if (gpu) emit_makefile_gpu(t, &mk);
        else emit_makefile(t, &mk);
        if (gpu && !apply_prefix(prefix, &dev)) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        smelt_strbuf_append(&m, main_text);
        if (!apply_prefix(prefix, &c) || !apply_prefix(prefix, &h) || !apply_prefix(prefix, &m))
            s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    if (s == SMELT_OK) {
        s = write_text(ctx, dir, "model.c", &c);
    }
    if (s == SMELT_OK && gpu)
        s = write_text(ctx, dir, t->gpu == CG_GPU_CUDA ? "model_gpu.cu" : "model_gpu.c", &dev);
    smelt_strbuf_fini(&dev);
    if (s == SMELT_OK) s = write_text(ctx, dir, "model.h", &h);
    if (s == SMELT_OK) s = write_text(ctx, dir, "Makefile", &mk);
    if (s == SMELT_OK) s = write_text(ctx, dir, "main.c", &m);
    smelt_strbuf_fini(&c);
    smelt_strbuf_fini(&h);
    smelt_strbuf_fini(&mk);
    smelt_strbuf_fini(&m);
    return s;
}

smelt_status cg_write_package(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                              const char *dir, bool embed_weights)
{
    return cg_write_package_prefixed(ctx, p, t, dir, embed_weights, NULL);
}

smelt_status cg_write_package_prefixed(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                                       const char *dir, bool embed_weights, const char *prefix)
{
    if (!valid_prefix(prefix))
        return smelt_errf(ctx, SMELT_ERR_ARG, "AOT prefix '%s' is not a C identifier of at most 64 "
                          "characters (and must not start with 'smelt_')", prefix);
    if (!p || !t || !dir || !*dir) return smelt_errf(ctx, SMELT_ERR_ARG, "cg_write_package: bad arguments");
    if (p->weight_bytes > 0 && !p->weights)
        return smelt_errf(ctx, SMELT_ERR_INTERNAL, "cg_write_package: %lld weight bytes but no blob",
                          (long long)p->weight_bytes);
    SMELT_TRY(make_dir(ctx, dir));
    /* Writing into an earlier package: what this one does not write (the
     * weights file of a package that now embeds them, build products of the
     * old sources) is removed, so nothing stale stays beside it. */
    static const char *const stale[] = {"main", "main.o", "model.o", "smelt_rt_pool.o",
                                        "smelt_rt_model.o", "libmodel.a", "libmodel.so",
                                        "weights.bin", "model_gpu.o", "model_gpu.c",
                                        "model_gpu.cu"};
    for (size_t i = 0; i < SMELT_ARRAY_LEN(stale); i++) {
        char path[4096];
        if (strcmp(stale[i], "weights.bin") == 0 && !embed_weights) continue; /* rewritten */
        if (snprintf(path, sizeof path, "%s/%s", dir, stale[i]) >= (int)sizeof path) continue;
        if (unlink(path) != 0 && errno != ENOENT)
            return smelt_errf(ctx, SMELT_ERR_IO, "cannot remove the stale file '%s': %s", path,
                              strerror(errno));
    }
    SMELT_TRY(write_sources(ctx, p, t, dir, embed_weights, prefix));
    SMELT_TRY(write_runtime(ctx, dir));
    if (!embed_weights) SMELT_TRY(write_bytes(ctx, dir, "weights.bin", p->weights, (size_t)p->weight_bytes));
    return SMELT_OK;
}
