/* Running a model compiled for a target this process cannot load (another
 * architecture): its AOT package is cross-built as an executable with the
 * target's C compiler, with -Wall -Wextra -Werror, and run under the
 * target's emulator (qemu-aarch64 for aarch64).  Inputs and outputs go
 * through files in a private temporary folder, removed afterwards
 * ($SMELT_KEEP_CROSS=1 keeps it and names it on stderr).  What `smelt
 * check --target aarch64` runs. */
#define _GNU_SOURCE /* mkdtemp */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "exec/exec.h"
#include "smelt_internal.h"

/* The program: model_create on DIR/weights.bin, inputs from DIR/in<i>.bin
 * (each file's size is the input's: a model with run-time dims takes any
 * length in its range), outputs to DIR/out<i>.bin with their dims in
 * DIR/out<i>.dims (model order), exit 3 with the model's error message
 * when the run fails. */
static const char runner_text[] =
    "/* smelt's cross-run driver: ./run DIR THREADS */\n"
    "#include <stdio.h>\n#include <stdlib.h>\n\n#include \"model.h\"\n\n"
    "/* The file's bytes (at most max), their count in *size. */\n"
    "static void *read_all(const char *path, size_t max, size_t *size)\n{\n"
    "    FILE *f = fopen(path, \"rb\");\n"
    "    void *p = malloc(max + 1);\n"
    "    size_t got = f && p ? fread(p, 1, max + 1, f) : 0;\n"
    "    int bad = !f || !p || ferror(f) || got > max;\n"
    "    if (f) fclose(f);\n"
    "    if (bad) { free(p); return NULL; }\n"
    "    *size = got;\n"
    "    return p;\n}\n\n"
    "static int write_dims(const char *path, const smelt_rt_io_info *io, const int64_t *vals)\n{\n"
    "    FILE *f = fopen(path, \"w\");\n"
    "    int d, ok = f != NULL;\n"
    "    for (d = 0; ok && d < io->rank; d++)\n"
    "        ok = fprintf(f, \"%lld \", (long long)smelt_rt_io_dim(io, d, vals)) > 0;\n"
    "    if (f && fclose(f) != 0) ok = 0;\n"
    "    return ok;\n}\n\n"
    "/* a data-dependent count is known after the run: from the size of an\n"
    " * output that has it as its only run-time dim */\n"
    "static void counts_from_outputs(model_t *m, const smelt_rt_module_info *info, int64_t *vals)\n{\n"
    "    int i, d;\n"
    "    for (i = 0; i < info->num_outputs; i++) {\n"
    "        const smelt_rt_io_info *io = &info->outputs[i];\n"
    "        int axis = -1, n = 0;\n"
    "        size_t row = smelt_rt_dtype_size(io->dtype), bytes = 0;\n"
    "        for (d = 0; d < io->rank; d++)\n"
    "            if (io->rt[d]) { axis = d; n++; }\n"
    "        if (n != 1 || !info->rt_dims[io->rt[axis] - 1].data) continue;\n"
    "        for (d = 0; d < io->rank; d++)\n"
    "            if (d != axis) row *= (size_t)io->dims[d];\n"
    "        if (row && model_get_output(m, io->name, &bytes))\n"
    "            vals[io->rt[axis] - 1] = (int64_t)(bytes / row) - io->rt_add[axis];\n"
    "    }\n}\n\n"
    "int main(int argc, char **argv)\n{\n"
    "    char path[4096], err[1024];\n"
    "    const smelt_rt_module_info *info = model_info();\n"
    "    void *in[MODEL_NUM_INPUTS + 1];\n"
    "    size_t in_bytes[MODEL_NUM_INPUTS + 1];\n"
    "    int64_t vals[16];\n"
    "    model_t *m;\n"
    "    int i;\n"
    "    if (argc != 3) return 2;\n"
    "    snprintf(path, sizeof path, \"%s/weights.bin\", argv[1]);\n"
    "    m = model_create(path, atoi(argv[2]), err, sizeof err);\n"
    "    if (!m) { fprintf(stderr, \"%s\\n\", err); return 2; }\n"
    "    for (i = 0; i < info->num_inputs; i++) {\n"
    "        snprintf(path, sizeof path, \"%s/in%d.bin\", argv[1], i);\n"
    "        in[i] = read_all(path, smelt_rt_io_bytes(&info->inputs[i]), &in_bytes[i]);\n"
    "        if (!in[i]) { fprintf(stderr, \"cannot read %s\\n\", path); return 2; }\n"
    "        if (model_set_input(m, info->inputs[i].name, in[i], in_bytes[i]) != SMELT_RT_OK) {\n"
    "            fprintf(stderr, \"%s\\n\", model_error(m));\n"
    "            return 2;\n"
    "        }\n"
    "    }\n"
    "    if (info->num_rt_dims &&\n"
    "        smelt_rt_model_run_dims(m, in_bytes, info->num_inputs, vals, err, sizeof err) != SMELT_RT_OK) {\n"
    "        fprintf(stderr, \"%s\\n\", err);\n"
    "        return 2;\n"
    "    }\n"
    "    if (model_run(m) != SMELT_RT_OK) { fprintf(stderr, \"%s\\n\", model_error(m)); return 3; }\n"
    "    if (info->num_rt_dims) counts_from_outputs(m, info, vals);\n"
    "    for (i = 0; i < info->num_outputs; i++) {\n"
    "        size_t bytes = 0;\n"
    "        const void *data = model_get_output(m, info->outputs[i].name, &bytes);\n"
    "        FILE *f;\n"
    "        snprintf(path, sizeof path, \"%s/out%d.bin\", argv[1], i);\n"
    "        f = fopen(path, \"wb\");\n"
    "        if (!f || !data || fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) {\n"
    "            fprintf(stderr, \"cannot write %s\\n\", path);\n"
    "            return 2;\n"
    "        }\n"
    "        snprintf(path, sizeof path, \"%s/out%d.dims\", argv[1], i);\n"
    "        if (!write_dims(path, &info->outputs[i], info->num_rt_dims ? vals : NULL)) {\n"
    "            fprintf(stderr, \"cannot write %s\\n\", path);\n"
    "            return 2;\n"
    "        }\n"
    "    }\n"
    "    for (i = 0; i < info->num_inputs; i++) free(in[i]);\n"
    "    model_free(m);\n"
    "    return 0;\n}\n";

#define CROSS_MAX_ARGS 48
#define CROSS_MESSAGE 1500 /* compiler or program output quoted in an error */

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = smelt_alloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char *p = join(dir, e->d_name);
            if (p) unlink(p);
            smelt_free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Run argv; a failure to start or a non-zero exit becomes an error naming
 * `what` with the program's output. */
static smelt_status run_step(smelt_ctx *ctx, const char *what, char *const *argv, smelt_status code)
{
    smelt_strbuf out;
    int exit_code = -1;
    int err = cg_run_process(argv, &exit_code, &out);
    smelt_status s = SMELT_OK;
    const char *text = smelt_strbuf_cstr(&out);
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n') len--;
    if (err)
        s = smelt_errf(ctx, SMELT_ERR_IO, "%s: cannot run '%s': %s (is it installed? scripts/setup.sh "
                       "installs it)", what, argv[0], strerror(err));
    else if (exit_code == 3) /* the model's own run error (a data check) */
        s = smelt_errf(ctx, SMELT_ERR_RUNTIME, "%.*s", (int)len, text);
    else if (exit_code != 0)
        s = smelt_errf(ctx, code, "%s failed (exit status %d):\n%.*s%s", what, exit_code,
                       (int)(len < CROSS_MESSAGE ? len : CROSS_MESSAGE), text,
                       len > CROSS_MESSAGE ? "\n[... truncated]" : "");
    smelt_strbuf_fini(&out);
    return s;
}

static smelt_status write_inputs(smelt_ctx *ctx, const smelt_model *m, const char *dir,
                                 const smelt_tensor *inputs, int n)
{
    for (int i = 0; i < n; i++) {
        SMELT_TRY(exec_check_input_rt(ctx, m->graph, m->graph->inputs.items[i], &inputs[i]));
        char name[32];
        snprintf(name, sizeof name, "in%d.bin", i);
        char *p = join(dir, name);
        if (!p) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        smelt_status s = smelt_write_file(ctx, p, inputs[i].data ? inputs[i].data : "",
                                          smelt_tensor_nbytes(&inputs[i]));
        smelt_free(p);
        SMELT_TRY(s);
    }
    return SMELT_OK;
}

/* The C compiler of t's program: the cross compiler, or for a GPU target
 * (whose host code runs here) the host's ($CC, else cc). */
static const char *runner_cc(const cg_target *t)
{
    const char *cc = cg_target_cross_cc(t);
    if (cc || t->gpu == CG_GPU_NONE) return cc;
    cc = getenv("CC");
    return cc && *cc && !strchr(cc, ' ') ? cc : "cc";
}

/* The compiler command, the flags an AOT package builds with (-Wextra too)
 * and the target's, the package's sources (an OpenCL package's device file
 * too, linked with the ICD loader). */
static smelt_status build_runner(smelt_ctx *ctx, const cg_target *t, const char *dir)
{
    const char *argv[CROSS_MAX_ARGS + 1];
    char *owned[8] = {0};
    int argc = 0, no = 0;
    argv[argc++] = runner_cc(t);
    static const char *const warn[] = {"-Wall", "-Wextra", "-Werror", NULL};
    for (const char *const *f = warn; *f; f++) argv[argc++] = *f;
    for (const char *const *f = cg_common_cflags(); *f; f++)
        if (strcmp(*f, "-fPIC") != 0) argv[argc++] = *f;
    for (const char *const *f = t->isa_flags; *f && argc < CROSS_MAX_ARGS - 10; f++) argv[argc++] = *f;
    static const char *const files[] = {"run", "model.c", "smelt_rt_pool.c", "smelt_rt_model.c",
                                        "runner.c"};
    argv[argc++] = "-o";
    for (size_t i = 0; i < SMELT_ARRAY_LEN(files); i++) argv[argc++] = owned[no++] = join(dir, files[i]);
    if (t->gpu == CG_GPU_OPENCL) {
        argv[argc++] = owned[no++] = join(dir, "model_gpu.c");
        argv[argc++] = "-lOpenCL";
    }
    argv[argc++] = "-lpthread";
    argv[argc++] = "-lm";
    argv[argc] = NULL;
    smelt_status s = SMELT_OK;
    for (int i = 0; i < no; i++)
        if (!owned[i]) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s == SMELT_OK) {
        char what[128];
        snprintf(what, sizeof what, "%s the model for target '%s' with %s",
                 t->gpu != CG_GPU_NONE ? "building" : "cross-building", t->name, argv[0]);
        s = run_step(ctx, what, (char *const *)argv, SMELT_ERR_INTERNAL);
    }
    for (int i = 0; i < no; i++) smelt_free(owned[i]);
    return s;
}

static smelt_status run_runner(smelt_ctx *ctx, const cg_target *t, const char *dir, int threads)
{
    const char *argv[CROSS_MAX_ARGS + 1];
    int argc = 0;
    for (const char *const *e = t->emulator; *e && argc < CROSS_MAX_ARGS - 4; e++) argv[argc++] = *e;
    char *prog = join(dir, "run");
    char nthreads[16];
    snprintf(nthreads, sizeof nthreads, "%d", threads);
    argv[argc++] = prog;
    argv[argc++] = dir;
    argv[argc++] = nthreads;
    argv[argc] = NULL;
    char what[128];
    if (t->emulator[0])
        snprintf(what, sizeof what, "running the model for target '%s' under %s", t->name, argv[0]);
    else
        snprintf(what, sizeof what, "running the model for target '%s'", t->name);
    smelt_status s = prog ? run_step(ctx, what, (char *const *)argv, SMELT_ERR_RUNTIME)
                          : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_free(prog);
    return s;
}

/* Output v's dims as the program wrote them to path: v's rank, each at
 * most v's dim (a run-time dim's maximum). */
static smelt_status read_dims(smelt_ctx *ctx, const gr_value *v, const char *path, smelt_tensor *t)
{
    void *text = NULL;
    size_t size = 0;
    SMELT_TRY(smelt_read_file(ctx, path, 512, &text, &size));
    char buf[513];
    memcpy(buf, text, size);
    buf[size] = '\0';
    smelt_free(text);
    const char *p = buf;
    for (int k = 0; k < v->rank; k++) {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || d > v->dims[k])
            return smelt_errf(ctx, SMELT_ERR_RUNTIME, "output '%s': the cross-run wrote dims '%s', "
                              "not %d dims within the compiled ones", v->name, buf, v->rank);
        t->dims[k] = d;
        p = end;
    }
    return SMELT_OK;
}

static smelt_status read_output(smelt_ctx *ctx, const gr_value *v, const char *dir, int i,
                                smelt_tensor *t)
{
    memset(t, 0, sizeof *t);
    t->dtype = v->dtype;
    t->rank = v->rank;
    char name[32];
    snprintf(name, sizeof name, "out%d.dims", i);
    char *p = join(dir, name);
    if (!p) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_status s = read_dims(ctx, v, p, t);
    smelt_free(p);
    SMELT_TRY(s);
    snprintf(name, sizeof name, "out%d.bin", i);
    if (!(p = join(dir, name))) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    void *data = NULL;
    size_t size = 0, want = smelt_tensor_nbytes(t);
    s = smelt_read_file(ctx, p, want + 1, &data, &size);
    smelt_free(p);
    SMELT_TRY(s);
    if (size != want) {
        smelt_free(data);
        return smelt_errf(ctx, SMELT_ERR_RUNTIME, "output '%s': the cross-run wrote %zu bytes, "
                          "expected %zu", v->name, size, want);
    }
    t->data = data;
    t->name = smelt_strdup(v->name);
    return SMELT_OK;
}

static smelt_status read_outputs(smelt_ctx *ctx, const smelt_model *m, const char *dir,
                                 smelt_tensor *outputs, int n)
{
    for (int i = 0; i < n; i++)
        SMELT_TRY(read_output(ctx, m->graph->outputs.items[i], dir, i, &outputs[i]));
    return SMELT_OK;
}

bool smelt_model_runs_cross(const smelt_model *m)
{
    const char *tn = m->options.target;
    const cg_target *t = cg_target_find(tn && *tn ? tn : "host");
    return t && !cg_target_loadable(t) && t->emulator;
}

smelt_status smelt_model_run_cross(smelt_ctx *ctx, smelt_model *m, const smelt_tensor *inputs,
                                   int num_inputs, smelt_tensor *outputs, int num_outputs)
{
    smelt_ctx_clear(ctx);
    if (!outputs || num_outputs < 0) return smelt_errf(ctx, SMELT_ERR_ARG, "no output tensors");
    memset(outputs, 0, sizeof *outputs * (size_t)num_outputs);
    const char *tn = m->options.target;
    const cg_target *t = cg_target_find(tn && *tn ? tn : "host");
    if (!t) return smelt_errf(ctx, SMELT_ERR_ARG, "unknown target '%s' (known: %s)", tn, cg_target_names());
    if (!t->emulator || !runner_cc(t))
        return smelt_errf(ctx, SMELT_ERR_ARG, "target '%s' has no emulator to run its code under", t->name);
    if (!smelt_graph_is_static(m->graph)) { /* a program per input signature */
        pthread_mutex_lock(&m->mu);
        smelt_status s = smelt_run_specialized(ctx, m, inputs, num_inputs, outputs, num_outputs);
        pthread_mutex_unlock(&m->mu);
        return s;
    }
    if (num_inputs != m->graph->inputs.len || num_outputs != m->graph->outputs.len)
        return smelt_errf(ctx, SMELT_ERR_ARG, "the model takes %d inputs and %d outputs, %d and %d given",
                          m->graph->inputs.len, m->graph->outputs.len, num_inputs, num_outputs);
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/smelt_cross_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return smelt_errf(ctx, SMELT_ERR_IO, "cannot create a folder in %s: %s",
                                         tmp && *tmp ? tmp : "/tmp", strerror(errno));
    smelt_options o = m->options;
    o.embed_weights = false; /* weights.bin beside the program */
    o.aot_prefix = NULL;
    smelt_status s = smelt_model_write_package(ctx, m, dir, &o);
    char *runner = join(dir, "runner.c");
    if (s == SMELT_OK && !runner) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s == SMELT_OK) s = smelt_write_file(ctx, runner, runner_text, strlen(runner_text));
    smelt_free(runner);
    if (s == SMELT_OK) s = write_inputs(ctx, m, dir, inputs, num_inputs);
    if (s == SMELT_OK) s = build_runner(ctx, t, dir);
    if (s == SMELT_OK) s = run_runner(ctx, t, dir, m->options.num_threads);
    if (s == SMELT_OK) s = read_outputs(ctx, m, dir, outputs, num_outputs);
    if (s != SMELT_OK)
        for (int i = 0; i < num_outputs; i++) smelt_tensor_release(&outputs[i]);
    const char *keep = getenv("SMELT_KEEP_CROSS");
    if (keep && *keep && strcmp(keep, "0") != 0)
        fprintf(stderr, "smelt: kept the cross-built package in %s\n", dir);
    else
        remove_dir(dir);
    return s;
}
