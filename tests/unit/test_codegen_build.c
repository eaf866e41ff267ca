/* Building through the compile cache: hits skip the compiler, failures
 * carry the compiler's message, $CC is honoured, unsafe cache directories
 * are refused, the least recently used entries are evicted; SHA-256 test vectors; target lookup. */
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codegen/sha256.h"
#include "test_codegen_util.h"

static const char *const good_source =
    "#include \"smelt_rt.h\"\n"
    "static int run_(smelt_rt_pool *p, const unsigned char *w, unsigned char *a,\n"
    "                const void *const *in, void *const *out)\n"
    "{ (void)p; (void)w; (void)a; (void)in; (void)out; return 0; }\n"
    "const smelt_rt_module_info smelt_module_info = {SMELT_RT_ABI_VERSION, 0, 0, NULL, NULL, 0, 0, NULL, run_, 0, NULL, 0, NULL, NULL, 0, NULL, 0};\n";

static void test_sha256(void)
{
    static const struct {
        const char *in, *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    for (size_t i = 0; i < SMELT_ARRAY_LEN(v); i++) {
        cg_sha256 h;
        unsigned char d[32];
        char hex[65];
        cg_sha256_init(&h);
        /* in two pieces, to cross the block logic */
        size_t n = strlen(v[i].in);
        cg_sha256_update(&h, v[i].in, n / 2);
        cg_sha256_update(&h, v[i].in + n / 2, n - n / 2);
        cg_sha256_final(&h, d);
        cg_sha256_hex(d, hex);
        CHECK(strcmp(hex, v[i].hex) == 0);
    }
    /* one million 'a' */
    cg_sha256 h;
    unsigned char d[32];
    char hex[65], block[1000];
    memset(block, 'a', sizeof block);
    cg_sha256_init(&h);
    for (int i = 0; i < 1000; i++) cg_sha256_update(&h, block, sizeof block);
    cg_sha256_final(&h, d);
    cg_sha256_hex(d, hex);
    CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0);
}

static void test_targets(void)
{
    CHECK(cg_target_find("avx512") && cg_target_find("avx512")->vector_bytes == 64);
    CHECK(cg_target_find("avx2") && cg_target_find("avx2")->vector_bytes == 32);
    CHECK(cg_target_find("generic") && cg_target_find("generic")->vector_bytes == 0);
    CHECK(cg_target_find("host") && cg_target_find("host")->native);
    CHECK(cg_target_find("nonsense") == NULL);
    CHECK(cg_target_lanes(cg_target_find("avx512"), SMELT_DT_FLOAT32) == 16);
    CHECK(cg_target_lanes(cg_target_find("avx2"), SMELT_DT_FLOAT64) == 4);
    CHECK(cg_target_lanes(cg_target_find("generic"), SMELT_DT_FLOAT32) == 0);
    bool fast_math = false;
    for (const char *const *f = cg_common_cflags(); *f; f++) fast_math |= strstr(*f, "fast-math") != NULL;
    CHECK(!fast_math);
}

static void test_cache_hit(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    char *lib1 = NULL, *lib2 = NULL, *lib3 = NULL;
    /* a unique source so the first build really compiles */
    char src[2048];
    snprintf(src, sizeof src, "%s/* %ld */\n", good_source, (long)getpid());
    CHECK(cg_build_shared(ctx, src, cg_target_find("generic"), &lib1) == SMELT_OK);
    struct stat st1, st2;
    CHECK(lib1 && stat(lib1, &st1) == 0);
    struct timespec old[2] = {{.tv_sec = time(NULL) - 1000}, {.tv_sec = time(NULL) - 1000}};
    CHECK(lib1 && utimensat(AT_FDCWD, lib1, old, 0) == 0);
    CHECK(cg_build_shared(ctx, src, cg_target_find("generic"), &lib2) == SMELT_OK);
    CHECK(lib1 && lib2 && strcmp(lib1, lib2) == 0);
    /* a hit renames nothing (same inode) and marks the entry as just used
     * (eviction is least recently used first) */
    CHECK(lib2 && stat(lib2, &st2) == 0 && st1.st_ino == st2.st_ino &&
          st2.st_mtim.tv_sec > time(NULL) - 100);
    /* other flags, other key */
    CHECK(cg_build_shared(ctx, src, cg_target_find("avx2"), &lib3) == SMELT_OK);
    CHECK(lib1 && lib3 && strcmp(lib1, lib3) != 0);
    void *h = NULL;
    const smelt_rt_module_info *info = NULL;
    CHECK(lib1 && cg_load_module(ctx, lib1, &h, &info) == SMELT_OK && info && info->num_inputs == 0);
    cg_unload_module(h);
    /* the runtime's own loader */
    char err[512] = "";
    smelt_rt_model *m = lib1 ? smelt_rt_model_load(lib1, NULL, 1, err, sizeof err) : NULL;
    CHECK(m != NULL && smelt_rt_model_info(m)->num_outputs == 0);
    CHECK(m && smelt_rt_model_run(m, NULL, NULL, 0, NULL, NULL, 0) == SMELT_RT_OK);
    smelt_rt_model_free(m);
    char *plain = NULL;
    CHECK(cg_build_shared(ctx, "int smelt_test_not_a_module;\n", cg_target_find("generic"), &plain) == SMELT_OK);
    CHECK(plain && smelt_rt_model_load(plain, NULL, 1, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "is not a smelt module");
    CHECK(plain && cg_load_module(ctx, plain, &h, &info) != SMELT_OK);
    smelt_ctx_clear(ctx);
    smelt_free(plain);
    /* the cache holds no temp files after the builds */
    char *dir = NULL;
    CHECK(cg_cache_dir(ctx, &dir) == SMELT_OK);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q '^tmp-'", dir ? dir : ".");
    CHECK(system(cmd) != 0);
    smelt_free(dir);
    smelt_free(lib1);
    smelt_free(lib2);
    smelt_free(lib3);
    smelt_ctx_free(ctx);
}

static void test_build_error(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    char *lib = NULL;
    const char *broken = "int f(void) { return missing_symbol_xyz + ; }\n";
    CHECK(cg_build_shared(ctx, broken, cg_target_find("generic"), &lib) != SMELT_OK);
    CHECK(lib == NULL);
    const char *msg = smelt_ctx_message(ctx);
    CHECK_STR_CONTAINS(msg, "C compiler");
    CHECK_STR_CONTAINS(msg, "missing_symbol_xyz");
    CHECK_STR_CONTAINS(msg, "error");
    CHECK(strstr(msg, "tmp-") == NULL); /* temp paths are replaced by the kept file's name */
    smelt_ctx_free(ctx);
}

static void test_compiler_env(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    char *lib = NULL;
    setenv("CC", "/nonexistent/smelt-test-cc", 1);
    CHECK(cg_build_shared(ctx, good_source, cg_target_find("generic"), &lib) != SMELT_OK);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "no working C compiler");
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "/nonexistent/smelt-test-cc");
    smelt_ctx_clear(ctx);
    /* $CC with arguments is split on blanks (no shell) */
    setenv("CC", "cc -DSMELT_TEST_DEFINE=1", 1);
    CHECK(cg_build_shared(ctx, "#if SMELT_TEST_DEFINE != 1\n#error no define\n#endif\n", cg_target_find("generic"),
                          &lib) == SMELT_OK);
    smelt_free(lib);
    lib = NULL;
    smelt_ctx_clear(ctx);
    setenv("CC", "cc; touch /tmp/smelt-cc-injection", 1);
    CHECK(cg_build_shared(ctx, good_source, cg_target_find("generic"), &lib) != SMELT_OK);
    CHECK(access("/tmp/smelt-cc-injection", F_OK) != 0);
    unsetenv("CC");
    smelt_ctx_clear(ctx);
    CHECK(cg_build_shared(ctx, good_source, cg_target_find("generic"), &lib) == SMELT_OK);
    smelt_free(lib);
    smelt_ctx_free(ctx);
}

static void test_cache_dir_checks(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    char *saved = getenv("SMELT_CACHE_DIR") ? strdup(getenv("SMELT_CACHE_DIR")) : NULL;
    char dir[] = "cg-open-cache-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    chmod(dir, 0777);
    setenv("SMELT_CACHE_DIR", dir, 1);
    char *out = NULL, *lib = NULL;
    CHECK(cg_cache_dir(ctx, &out) != SMELT_OK);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "writable by group or others");
    smelt_ctx_clear(ctx);
    CHECK(cg_build_shared(ctx, good_source, cg_target_find("generic"), &lib) != SMELT_OK);
    chmod(dir, 0700);
    smelt_ctx_clear(ctx);
    CHECK(cg_cache_dir(ctx, &out) == SMELT_OK && out && out[0] == '/');
    smelt_free(out);
    /* a new nested directory is created 0700 */
    char nested[128];
    snprintf(nested, sizeof nested, "%s/a/b", dir);
    setenv("SMELT_CACHE_DIR", nested, 1);
    struct stat st;
    CHECK(cg_cache_dir(ctx, &out) == SMELT_OK && stat(nested, &st) == 0 && (st.st_mode & 0777) == 0700);
    smelt_free(out);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    if (saved) setenv("SMELT_CACHE_DIR", saved, 1);
    free(saved);
    smelt_ctx_free(ctx);
}

/* A file of `bytes` bytes in dir, last modified `age` seconds ago. */
static void put_file(const char *dir, const char *name, size_t bytes, int age)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    for (size_t i = 0; i < bytes; i++) fputc('x', f);
    fclose(f);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age;
    t[1] = t[0];
    CHECK(utimensat(AT_FDCWD, path, t, 0) == 0);
}

static bool exists_in(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static void key_name(char *out, char digit, const char *ext)
{
    memset(out, digit, 64);
    strcpy(out + 64, ext);
}

/* Least recently used entries go first (library and source together), the
 * entry just built never, other files never; stale temp files go. */
static void test_cache_trim(void)
{
    smelt_ctx *ctx = smelt_ctx_new();
    char dir[] = "cg-trim-cache-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char a_so[70], a_c[70], b_so[70], c_so[70], d_so[70];
    key_name(a_so, 'a', ".so");
    key_name(a_c, 'a', ".c");
    key_name(b_so, 'b', ".so");
    key_name(c_so, 'c', ".so");
    key_name(d_so, 'd', ".so");
    put_file(dir, a_so, 1000, 400); /* oldest */
    put_file(dir, a_c, 500, 400);
    put_file(dir, d_so, 1000, 300); /* the one being kept, though old */
    put_file(dir, b_so, 1000, 200);
    put_file(dir, c_so, 1000, 100); /* newest */
    put_file(dir, "notes.txt", 5000, 1000);
    put_file(dir, "tmp-old123", 10, 7200);
    put_file(dir, "tmp-new456", 10, 10);
    char keep[65];
    memcpy(keep, d_so, 64);
    keep[64] = '\0';
    /* 4500 bytes of entries; 2500 allowed: a (1500) and b (1000) must go */
    CHECK(cg_cache_trim(ctx, dir, 2500, keep) == SMELT_OK);
    CHECK(!exists_in(dir, a_so) && !exists_in(dir, a_c));
    CHECK(!exists_in(dir, b_so));
    CHECK(exists_in(dir, c_so) && exists_in(dir, d_so));
    CHECK(exists_in(dir, "notes.txt") && exists_in(dir, "tmp-new456"));
    CHECK(!exists_in(dir, "tmp-old123"));
    /* within budget: nothing more goes */
    CHECK(cg_cache_trim(ctx, dir, 2500, NULL) == SMELT_OK);
    CHECK(exists_in(dir, c_so) && exists_in(dir, d_so));

    /* the budget comes from the environment, checked */
    int64_t budget = 0;
    setenv("SMELT_CACHE_MAX_MB", "3", 1);
    CHECK(cg_cache_budget(ctx, &budget) == SMELT_OK && budget == 3 << 20);
    setenv("SMELT_CACHE_MAX_MB", "lots", 1);
    CHECK(cg_cache_budget(ctx, &budget) == SMELT_ERR_ARG);
    CHECK_STR_CONTAINS(smelt_ctx_message(ctx), "SMELT_CACHE_MAX_MB='lots'");
    unsetenv("SMELT_CACHE_MAX_MB");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    smelt_ctx_free(ctx);
}

/* Many keys, each a library and a source written apart (the directory
 * lists them in any order): trimming to half removes the older half's both
 * files and keeps the newer half's (the scan merges a key's files after
 * sorting: a search per file made it quadratic, seconds per build on the
 * fuzzers' caches of thousands of entries). */
static void test_cache_trim_many(void)
{
    enum { KEYS = 300 };
    smelt_ctx *ctx = smelt_ctx_new();
    char dir[] = "cg-trim-many-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char name[80];
    for (int k = 0; k < KEYS; k++) { /* key k is k seconds younger than key 0 */
        snprintf(name, sizeof name, "%064x.so", k * 7919);
        put_file(dir, name, 100, 1000 - k);
    }
    for (int k = KEYS - 1; k >= 0; k--) {
        snprintf(name, sizeof name, "%064x.c", k * 7919);
        put_file(dir, name, 50, 1000 - k);
    }
    CHECK(cg_cache_trim(ctx, dir, (int64_t)KEYS / 2 * 150, NULL) == SMELT_OK);
    int kept_old = 0, kept_new = 0;
    for (int k = 0; k < KEYS; k++) {
        snprintf(name, sizeof name, "%064x.so", k * 7919);
        bool so = exists_in(dir, name);
        snprintf(name, sizeof name, "%064x.c", k * 7919);
        CHECK(so == exists_in(dir, name)); /* a key's files go together */
        if (k < KEYS / 2) kept_old += so;
        else kept_new += so;
    }
    CHECK(kept_old == 0 && kept_new == KEYS / 2);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    smelt_ctx_free(ctx);
}

int main(void)
{
    cgt_setup_env();
    test_sha256();
    test_targets();
    test_cache_hit();
    test_build_error();
    test_compiler_env();
    test_cache_dir_checks();
    test_cache_trim();
    test_cache_trim_many();
    TEST_MAIN_END();
}
