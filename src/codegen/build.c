/* Building generated C with the system C compiler, through a content-hash
 * cache, and loading the result.
 *
 * The compiler is found at run time ($CC, split on blanks, else cc), probed
 * once per process (`--version`, whose first line is part of the cache key)
 * and run with posix_spawnp: no shell ever sees a path or a flag.
 *
 * Cache entries are <sha256>.so, keyed on the source, the flags, the
 * compiler identity and the runtime header.  A library is compiled into a
 * mkstemp() file in the cache directory and renamed into place, so a
 * concurrent or interrupted build never leaves a partial library under a
 * key.  The cache directory must belong to the user and not be writable by
 * others: a library from it is loaded into the process.
 */
#define _GNU_SOURCE /* mkstemp, environ, posix_spawn */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/embed.h"
#include "codegen/sha256.h"

extern char **environ;

#define CC_MAX_ARGS 16
#define OUTPUT_KEEP (16 << 10) /* compiler output kept for the log */
#define MESSAGE_OUTPUT 800     /* compiler output quoted in the error message */

/* ---- running a program ---- */

typedef struct proc_result {
    int exit_code;   /* -1 if it did not exit normally */
    smelt_strbuf output; /* stdout + stderr, first OUTPUT_KEEP bytes */
} proc_result;

static void drain(int fd, smelt_strbuf *out)
{
    char buf[4096];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (out->len < OUTPUT_KEEP) {
            size_t room = OUTPUT_KEEP - out->len;
            smelt_strbuf_appendn(out, buf, (size_t)n < room ? (size_t)n : room);
        }
    }
}

/* Run argv (argv[0] looked up in PATH), capturing its output.  Returns an
 * errno value if it could not be started. */
static int run_process(char *const *argv, proc_result *r)
{
    int fds[2];
    r->exit_code = -1;
    smelt_strbuf_init(&r->output);
    if (pipe(fds) != 0) return errno;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid;
    int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (err == 0) drain(fds[0], &r->output);
    close(fds[0]);
    if (err != 0) return err;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return errno;
    if (WIFEXITED(status)) r->exit_code = WEXITSTATUS(status);
    return 0;
}

int cg_run_process(char *const *argv, int *exit_code, smelt_strbuf *output)
{
    proc_result r;
    int err = run_process(argv, &r);
    *exit_code = r.exit_code;
    *output = r.output;
    return err;
}

/* ---- the compiler ---- */

typedef struct cc_probe {
    char env[512];                /* the $CC it was probed for */
    char words[512];              /* $CC split in place */
    char *argv[CC_MAX_ARGS + 1];
    int argc;
    char identity[256];           /* first line of --version */
    bool ok;
} cc_probe;

static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static cc_probe probe_cache;

static bool split_words(cc_probe *p)
{
    p->argc = 0;
    char *s = p->words;
    while (*s) {
        while (*s == ' ' || *s == '\t') *s++ = '\0';
        if (!*s) break;
        if (p->argc == CC_MAX_ARGS) return false;
        p->argv[p->argc++] = s;
        while (*s && *s != ' ' && *s != '\t') s++;
    }
    p->argv[p->argc] = NULL;
    return p->argc > 0;
}

static smelt_status probe_compiler(smelt_ctx *ctx, const char *cc, cc_probe *p)
{
    memset(p, 0, sizeof *p);
    if (strlen(cc) >= sizeof p->env) return smelt_errf(ctx, SMELT_ERR_ARG, "$CC is too long");
    snprintf(p->env, sizeof p->env, "%s", cc);
    snprintf(p->words, sizeof p->words, "%s", cc);
    if (!split_words(p))
        return smelt_errf(ctx, SMELT_ERR_ARG, "$CC ('%s') is empty or has more than %d words", cc, CC_MAX_ARGS);
    char *argv[CC_MAX_ARGS + 2];
    for (int i = 0; i < p->argc; i++) argv[i] = p->argv[i];
    argv[p->argc] = "--version";
    argv[p->argc + 1] = NULL;
    proc_result r;
    int err = run_process(argv, &r);
    if (err || r.exit_code != 0) {
        smelt_status s = smelt_errf(ctx, SMELT_ERR_IO,
                                    "no working C compiler: '%s --version' %s%s (set CC to a C compiler)", cc,
                                    err ? "could not run: " : "failed: ",
                                    err ? strerror(err) : smelt_strbuf_cstr(&r.output));
        smelt_strbuf_fini(&r.output);
        return s;
    }
    const char *out = smelt_strbuf_cstr(&r.output);
    size_t n = strcspn(out, "\n");
    snprintf(p->identity, sizeof p->identity, "%.*s", (int)(n < 255 ? n : 255), out);
    smelt_strbuf_fini(&r.output);
    p->ok = true;
    return SMELT_OK;
}

/* The probe for the current $CC, done once per distinct value. */
static smelt_status get_compiler(smelt_ctx *ctx, cc_probe *out)
{
    const char *cc = getenv("CC");
    if (!cc || !*cc) cc = "cc";
    pthread_mutex_lock(&probe_mu);
    smelt_status s = SMELT_OK;
    if (!probe_cache.ok || strcmp(probe_cache.env, cc) != 0) s = probe_compiler(ctx, cc, &probe_cache);
    if (s == SMELT_OK) {
        *out = probe_cache;
        /* argv points into words: re-point into the copy */
        for (int i = 0; i < out->argc; i++) out->argv[i] = out->words + (probe_cache.argv[i] - probe_cache.words);
    }
    pthread_mutex_unlock(&probe_mu);
    return s;
}

smelt_status cg_compiler_identity(smelt_ctx *ctx, char *out, size_t cap)
{
    cc_probe p;
    SMELT_TRY(get_compiler(ctx, &p));
    snprintf(out, cap, "%s", p.identity);
    return SMELT_OK;
}

/* ---- the cache directory ---- */

static char *path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = smelt_alloc(n);
    if (p) snprintf(p, n, "%s/%s", a, b);
    return p;
}

/* mkdir -p with mode 0700 for the components it creates. */
static bool make_dirs(char *path)
{
    for (char *s = path + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        bool ok = mkdir(path, 0700) == 0 || errno == EEXIST;
        *s = '/';
        if (!ok) return false;
    }
    return mkdir(path, 0700) == 0 || errno == EEXIST;
}

static char *default_cache_dir(void)
{
    const char *env = getenv("SMELT_CACHE_DIR");
    if (env && *env) return smelt_strdup(env);
    env = getenv("XDG_CACHE_HOME");
    if (env && env[0] == '/') return path_join(env, "smelt");
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : NULL;
    }
    return home ? path_join(home, ".cache/smelt") : NULL;
}

smelt_status cg_cache_dir(smelt_ctx *ctx, char **out_dir)
{
    *out_dir = NULL;
    char *dir = default_cache_dir();
    if (!dir) return smelt_errf(ctx, SMELT_ERR_IO, "no cache directory: set SMELT_CACHE_DIR or HOME");
    if (!make_dirs(dir)) {
        smelt_status s = smelt_errf(ctx, SMELT_ERR_IO, "cannot create cache directory '%s': %s", dir,
                                    strerror(errno));
        smelt_free(dir);
        return s;
    }
    struct stat st;
    const char *why = NULL;
    if (stat(dir, &st) != 0)
        why = strerror(errno);
    else if (!S_ISDIR(st.st_mode))
        why = "not a directory";
    else if (st.st_uid != geteuid())
        why = "owned by another user";
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        why = "writable by group or others (chmod go-w)";
    if (why) {
        smelt_status s = smelt_errf(ctx, SMELT_ERR_IO, "refusing cache directory '%s': %s", dir, why);
        smelt_free(dir);
        return s;
    }
    /* Absolute, so library paths stay valid whatever the working directory. */
    char *abs = realpath(dir, NULL);
    smelt_free(dir);
    if (!abs) return smelt_errf(ctx, SMELT_ERR_IO, "cannot resolve the cache directory: %s", strerror(errno));
    *out_dir = smelt_strdup(abs);
    free(abs); /* from libc, not the allocator hook */
    return *out_dir ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
}

/* ---- files ---- */

static bool write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* A new empty file "dir/tmp-XXXXXX"; the name in *path (smelt_free). */
static int make_temp(const char *dir, char **path)
{
    *path = path_join(dir, "tmp-XXXXXX");
    if (!*path) return -1;
    int fd = mkstemp(*path);
    if (fd < 0) {
        smelt_free(*path);
        *path = NULL;
    }
    return fd;
}

/* Write data to dir/name atomically (temp file + rename). */
static smelt_status write_atomic(smelt_ctx *ctx, const char *dir, const char *name, const void *data,
                                 size_t n)
{
    char *tmp, *final = path_join(dir, name);
    int fd = make_temp(dir, &tmp);
    if (fd < 0 || !final) {
        smelt_free(final);
        smelt_free(tmp);
        if (fd >= 0) close(fd);
        return smelt_errf(ctx, SMELT_ERR_IO, "cannot create a file in '%s': %s", dir, strerror(errno));
    }
    bool ok = write_all(fd, data, n);
    ok = close(fd) == 0 && ok;
    ok = ok && rename(tmp, final) == 0;
    if (!ok) unlink(tmp);
    smelt_status s = ok ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_IO, "cannot write '%s': %s", final, strerror(errno));
    smelt_free(tmp);
    smelt_free(final);
    return s;
}

static bool is_own_regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid();
}

static void hash_str(cg_sha256 *h, const char *s)
{
    cg_sha256_update(h, s, strlen(s) + 1); /* with the NUL: fields cannot run together */
}

/* The runtime header in cache/include-<hash>/smelt_rt.h; its directory in *inc. */
static smelt_status ensure_header(smelt_ctx *ctx, const char *cache, const cg_embedded_file *hdr,
                                  char **inc)
{
    unsigned char d[32];
    char hex[65], name[48];
    cg_sha256 h;
    cg_sha256_init(&h);
    cg_sha256_update(&h, hdr->data, hdr->size);
    cg_sha256_final(&h, d);
    cg_sha256_hex(d, hex);
    snprintf(name, sizeof name, "include-%.16s", hex);
    *inc = path_join(cache, name);
    if (!*inc) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (mkdir(*inc, 0700) != 0 && errno != EEXIST)
        return smelt_errf(ctx, SMELT_ERR_IO, "cannot create '%s': %s", *inc, strerror(errno));
    char *file = path_join(*inc, "smelt_rt.h");
    bool have = file && is_own_regular_file(file);
    smelt_free(file);
    return have ? SMELT_OK : write_atomic(ctx, *inc, "smelt_rt.h", hdr->data, hdr->size);
}

/* ---- building ---- */

typedef struct build_job {
    const char *cache, *inc;
    char key[65];
    cc_probe cc;
    const char *argv[CC_MAX_ARGS + 48];
    int argc;
} build_job;

static void add_arg(build_job *j, const char *a)
{
    if (j->argc < (int)SMELT_ARRAY_LEN(j->argv) - 1) j->argv[j->argc++] = a;
}

/* Compiler flags after the compiler words (not the file names). */
static void add_flags(build_job *j, const cg_target *t, const char *inc_flag)
{
    for (const char *const *f = cg_common_cflags(); *f; f++) add_arg(j, *f);
    for (const char *const *f = t->isa_flags; *f; f++) add_arg(j, *f);
    add_arg(j, "-shared");
    add_arg(j, inc_flag);
}

static void compute_key(build_job *j, const char *source, const cg_embedded_file *hdr)
{
    cg_sha256 h;
    unsigned char d[32];
    cg_sha256_init(&h);
    hash_str(&h, "smelt-cache-v1");
    hash_str(&h, j->cc.identity);
    for (int i = 0; i < j->argc; i++)
        if (strncmp(j->argv[i], "-I", 2) != 0) hash_str(&h, j->argv[i]); /* the path is not content */
    cg_sha256_update(&h, hdr->data, hdr->size);
    hash_str(&h, "");
    hash_str(&h, source);
    cg_sha256_final(&h, d);
    cg_sha256_hex(d, j->key);
}

/* Replace every occurrence of `from` in text by `to` (paths in messages). */
static void replace_all(smelt_strbuf *text, const char *from, const char *to)
{
    smelt_strbuf r;
    smelt_strbuf_init(&r);
    const char *s = smelt_strbuf_cstr(text), *hit;
    size_t n = strlen(from);
    while (n && (hit = strstr(s, from))) {
        smelt_strbuf_appendn(&r, s, (size_t)(hit - s));
        smelt_strbuf_append(&r, to);
        s = hit + n;
    }
    smelt_strbuf_append(&r, s);
    smelt_strbuf_fini(text);
    *text = r;
}

static smelt_status compile_failed(smelt_ctx *ctx, build_job *j, const char *src_tmp, int spawn_err,
                                   proc_result *r)
{
    char name[96];
    snprintf(name, sizeof name, "failed-%.16s.c", j->key);
    char *kept = path_join(j->cache, name);
    if (kept && rename(src_tmp, kept) != 0) {
        smelt_free(kept);
        kept = NULL;
    }
    if (spawn_err) {
        smelt_status s = smelt_errf(ctx, SMELT_ERR_IO, "cannot run the C compiler '%s': %s", j->cc.env,
                                    strerror(spawn_err));
        smelt_free(kept);
        return s;
    }
    replace_all(&r->output, src_tmp, name);
    const char *out = smelt_strbuf_cstr(&r->output);
    size_t len = strlen(out);
    smelt_status s = smelt_errf(ctx, SMELT_ERR_INTERNAL,
                                "C compiler '%s' failed (exit status %d) on generated code kept in %s:\n%.*s%s",
                                j->cc.env, r->exit_code, kept ? kept : "(not kept)",
                                (int)(len < MESSAGE_OUTPUT ? len : MESSAGE_OUTPUT), out,
                                len > MESSAGE_OUTPUT ? "\n[... truncated]" : "");
    if (smelt_debug_level() >= 1) fprintf(stderr, "smelt: compiler output:\n%s\n", out);
    smelt_free(kept);
    return s;
}

static smelt_status compile_parts(smelt_ctx *ctx, build_job *j, int parts, const char *src_tmp,
                                  const char *out_tmp);

/* Keep the source next to the library, for debugging. */
static void keep_source(build_job *j, const char *src_tmp)
{
    char name[80];
    snprintf(name, sizeof name, "%s.c", j->key);
    char *csrc = path_join(j->cache, name);
    if (csrc) rename(src_tmp, csrc);
    smelt_free(csrc);
}

/* Run the compiler on src_tmp writing out_tmp (in parts when parts > 1);
 * then move out_tmp to lib. */
static smelt_status run_compiler(smelt_ctx *ctx, build_job *j, int parts, const char *src_tmp,
                                 const char *out_tmp, const char *lib)
{
    if (parts > 1) {
        smelt_status s = compile_parts(ctx, j, parts, src_tmp, out_tmp);
        if (s == SMELT_OK && rename(out_tmp, lib) != 0)
            s = smelt_errf(ctx, SMELT_ERR_IO, "cannot move the built library to '%s': %s", lib,
                           strerror(errno));
        if (s == SMELT_OK) keep_source(j, src_tmp);
        return s;
    }
    int base = j->argc;
    add_arg(j, "-o");
    add_arg(j, out_tmp);
    add_arg(j, "-x");
    add_arg(j, "c");
    add_arg(j, src_tmp);
    add_arg(j, "-x");
    add_arg(j, "none");
    add_arg(j, "-lm");
    j->argv[j->argc] = NULL;
    proc_result r;
    int err = run_process((char *const *)j->argv, &r);
    j->argc = base;
    smelt_status s = SMELT_OK;
    if (err || r.exit_code != 0) {
        s = compile_failed(ctx, j, src_tmp, err, &r);
    } else if (rename(out_tmp, lib) != 0) {
        s = smelt_errf(ctx, SMELT_ERR_IO, "cannot move the built library to '%s': %s", lib, strerror(errno));
    } else {
        keep_source(j, src_tmp);
    }
    smelt_strbuf_fini(&r.output);
    return s;
}

/* ---- builds in parts: one compiler per part at once, then one link ----
 * (c_emit.c: -DSMELT_PARTS=N -DSMELT_PART=k keeps part k's functions) */

#define PART_BYTES_MIN (256 << 10) /* generated C per part, at least */
#define PARTS_MAX 8

/* SMELT_CC_PARTS=N forces N parts (tests, experiments). */
static int build_parts(size_t source_bytes)
{
    const char *forced = getenv("SMELT_CC_PARTS");
    if (forced && *forced) {
        long n = strtol(forced, NULL, 10);
        return n < 1 ? 1 : n > PARTS_MAX ? PARTS_MAX : (int)n;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t parts = source_bytes / PART_BYTES_MIN;
    if (cpus > 0 && parts > (size_t)cpus) parts = (size_t)cpus;
    if (parts > PARTS_MAX) parts = PARTS_MAX;
    return parts < 1 ? 1 : (int)parts;
}

typedef struct part_job {
    const char *argv[CC_MAX_ARGS + 64];
    char defs[2][32];
    char *obj;
    proc_result r;
    int err;
} part_job;

static void *run_part(void *arg)
{
    part_job *p = arg;
    p->err = run_process((char *const *)p->argv, &p->r);
    return NULL;
}

/* Part k's command: the job's compiler and flags but -shared, then -c. */
static void part_argv(const build_job *j, part_job *p, int parts, int k, const char *src)
{
    int n = 0;
    for (int i = 0; i < j->argc; i++)
        if (strcmp(j->argv[i], "-shared") != 0) p->argv[n++] = j->argv[i];
    snprintf(p->defs[0], sizeof p->defs[0], "-DSMELT_PARTS=%d", parts);
    snprintf(p->defs[1], sizeof p->defs[1], "-DSMELT_PART=%d", k);
    const char *tail[] = {p->defs[0], p->defs[1], "-c", "-o", p->obj, "-x", "c", src};
    for (size_t i = 0; i < SMELT_ARRAY_LEN(tail); i++) p->argv[n++] = tail[i];
    p->argv[n] = NULL;
}

/* Compile src_tmp's parts at once, then link them into out_tmp. */
static smelt_status compile_parts(smelt_ctx *ctx, build_job *j, int parts, const char *src_tmp,
                                  const char *out_tmp)
{
    part_job *p = smelt_calloc((size_t)parts, sizeof *p);
    pthread_t *th = smelt_calloc((size_t)parts, sizeof *th);
    bool *started = smelt_calloc((size_t)parts, sizeof *started);
    smelt_status s = p && th && started ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int k = 0; k < parts && s == SMELT_OK; k++) {
        int fd = make_temp(j->cache, &p[k].obj);
        if (fd < 0) s = smelt_errf(ctx, SMELT_ERR_IO, "cannot create a file in '%s': %s", j->cache,
                                   strerror(errno));
        else close(fd);
    }
    for (int k = 0; k < parts && s == SMELT_OK; k++) {
        part_argv(j, &p[k], parts, k, src_tmp);
        started[k] = pthread_create(&th[k], NULL, run_part, &p[k]) == 0;
        if (!started[k]) run_part(&p[k]); /* no thread: this one in turn */
    }
    for (int k = 0; s == SMELT_OK && k < parts; k++)
        if (started[k]) pthread_join(th[k], NULL);
    for (int k = 0; s == SMELT_OK && k < parts; k++)
        if (p[k].err || p[k].r.exit_code != 0) s = compile_failed(ctx, j, src_tmp, p[k].err, &p[k].r);
    if (s == SMELT_OK) { /* the link: compiler words, -shared, the objects */
        const char *argv[CC_MAX_ARGS + PARTS_MAX + 8];
        int n = 0;
        for (int i = 0; i < j->cc.argc; i++) argv[n++] = j->cc.argv[i];
        argv[n++] = "-shared";
        argv[n++] = "-o";
        argv[n++] = out_tmp;
        for (int k = 0; k < parts; k++) argv[n++] = p[k].obj;
        argv[n++] = "-lm";
        argv[n] = NULL;
        proc_result r;
        int err = run_process((char *const *)argv, &r);
        if (err || r.exit_code != 0) s = compile_failed(ctx, j, src_tmp, err, &r);
        smelt_strbuf_fini(&r.output);
    }
    for (int k = 0; p && k < parts; k++) {
        if (p[k].obj) unlink(p[k].obj);
        smelt_free(p[k].obj);
        smelt_strbuf_fini(&p[k].r.output);
    }
    smelt_free(p);
    smelt_free(th);
    smelt_free(started);
    return s;
}

/* Compile source into dir/<key>.so via temp files and rename. */
static smelt_status compile_into_cache(smelt_ctx *ctx, build_job *j, const char *source, const char *lib)
{
    char *src_tmp = NULL, *out_tmp = NULL;
    int sfd = make_temp(j->cache, &src_tmp);
    int ofd = sfd >= 0 ? make_temp(j->cache, &out_tmp) : -1;
    if (ofd >= 0) close(ofd);
    bool wrote = sfd >= 0 && write_all(sfd, source, strlen(source));
    if (sfd >= 0) wrote = close(sfd) == 0 && wrote;
    smelt_status s;
    if (!wrote || ofd < 0)
        s = smelt_errf(ctx, SMELT_ERR_IO, "cannot write the generated source into '%s': %s", j->cache,
                       strerror(errno));
    else
        s = run_compiler(ctx, j, build_parts(strlen(source)), src_tmp, out_tmp, lib);
    if (src_tmp) unlink(src_tmp); /* no-ops when renamed */
    if (out_tmp) unlink(out_tmp);
    smelt_free(src_tmp);
    smelt_free(out_tmp);
    return s;
}

smelt_status cg_build_shared(smelt_ctx *ctx, const char *c_source, const cg_target *t,
                             char **out_lib_path)
{
    *out_lib_path = NULL;
    if (!c_source || !t) return smelt_errf(ctx, SMELT_ERR_ARG, "cg_build_shared: no source or target");
    if (t->gpu != CG_GPU_NONE)
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED,
                          "target '%s' generates GPU kernels, which do not load into this process: "
                          "%s`smelt compile --target %s -o DIR` writes a package (README: Targets)",
                          t->name, t->emulator ? "`smelt check --target opencl` runs a model on the "
                          "OpenCL device as a program, " : "", t->name);
    if (!cg_target_loadable(t))
        return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED,
                          "target '%s' is another architecture than this host's, so its code cannot "
                          "run in this process: `smelt check --target %s` runs a model under %s, "
                          "`smelt compile --target %s -o DIR` writes a package to build with %s",
                          t->name, t->name, t->emulator ? t->emulator[0] : "an emulator",
                          t->name, t->cross_cc ? t->cross_cc : "its C compiler");
    const cg_embedded_file *hdr = cg_runtime_file("smelt_rt.h");
    if (!hdr) return smelt_errf(ctx, SMELT_ERR_INTERNAL, "the runtime header is not embedded");
    build_job *j = smelt_calloc(1, sizeof *j);
    if (!j) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    char *cache = NULL, *inc = NULL, *inc_flag = NULL, *lib = NULL;
    smelt_status s = get_compiler(ctx, &j->cc);
    if (s == SMELT_OK) s = cg_cache_dir(ctx, &cache);
    if (s == SMELT_OK) s = ensure_header(ctx, cache, hdr, &inc);
    if (s == SMELT_OK) {
        inc_flag = smelt_alloc(strlen(inc) + 3);
        if (!inc_flag) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    if (s == SMELT_OK) {
        snprintf(inc_flag, strlen(inc) + 3, "-I%s", inc);
        j->cache = cache;
        j->inc = inc;
        for (int i = 0; i < j->cc.argc; i++) add_arg(j, j->cc.argv[i]);
        add_flags(j, t, inc_flag);
        compute_key(j, c_source, hdr);
        char name[80];
        snprintf(name, sizeof name, "%s.so", j->key);
        lib = path_join(cache, name);
        if (!lib) s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    int64_t budget = 0;
    if (s == SMELT_OK) s = cg_cache_budget(ctx, &budget);
    if (s == SMELT_OK && is_own_regular_file(lib)) {
        cg_cache_touch(lib);
    } else if (s == SMELT_OK) {
        s = compile_into_cache(ctx, j, c_source, lib);
        if (s == SMELT_OK) s = cg_cache_trim(ctx, cache, budget, j->key);
    }
    if (s == SMELT_OK) {
        *out_lib_path = lib;
        lib = NULL;
    }
    smelt_free(lib);
    smelt_free(inc_flag);
    smelt_free(inc);
    smelt_free(cache);
    smelt_free(j);
    return s;
}

/* ---- loading ---- */

smelt_status cg_load_module(smelt_ctx *ctx, const char *lib_path, void **handle,
                            const smelt_rt_module_info **info)
{
    *handle = NULL;
    *info = NULL;
    void *h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return smelt_errf(ctx, SMELT_ERR_IO, "cannot load '%s': %s", lib_path, why ? why : "unknown error");
    }
    const smelt_rt_module_info *mi = dlsym(h, SMELT_RT_MODULE_SYMBOL);
    if (!mi || mi->abi_version != SMELT_RT_ABI_VERSION) {
        dlclose(h);
        return smelt_errf(ctx, SMELT_ERR_IO, "'%s' is not a smelt module of ABI version %d", lib_path,
                          SMELT_RT_ABI_VERSION);
    }
    *handle = h;
    *info = mi;
    return SMELT_OK;
}

void cg_unload_module(void *handle)
{
    if (handle) dlclose(handle);
}
