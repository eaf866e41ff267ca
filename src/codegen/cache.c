/* Compile cache upkeep.
 *
 * An entry is <64 hex digits>.so with the source it was built from
 * (<key>.c).  A hit refreshes the library's mtime, so mtime orders entries
 * by last use (atime is often off).  After a new entry is written, the least
 * recently used entries are removed until the cache fits its budget.
 * Removing a library another process has loaded is safe: the mapping keeps
 * the inode alive.  Temp files left by a killed compile are removed once
 * they are an hour old. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"

#define CACHE_DEFAULT_MAX_MB 2048
#define CACHE_STALE_TEMP_SECONDS 3600
#define CACHE_KEY_LEN 64

typedef struct cache_entry {
    char key[CACHE_KEY_LEN + 1];
    int64_t bytes;  /* the library and its source */
    time_t last_use; /* the newest mtime of the two */
} cache_entry;

typedef struct cache_scan {
    cache_entry *items;
    int len, cap;
    int64_t total;
} cache_scan;

smelt_status cg_cache_budget(smelt_ctx *ctx, int64_t *max_bytes)
{
    const char *env = getenv("SMELT_CACHE_MAX_MB");
    int64_t mb = CACHE_DEFAULT_MAX_MB;
    if (env && *env) {
        char *end;
        errno = 0;
        long long v = strtoll(env, &end, 10);
        if (errno || *end || v < 0 || v > (INT64_MAX >> 20))
            return smelt_errf(ctx, SMELT_ERR_ARG,
                              "SMELT_CACHE_MAX_MB='%s': expected a whole number of megabytes "
                              "(0: never evict)",
                              env);
        mb = v;
    }
    *max_bytes = mb << 20;
    return SMELT_OK;
}

void cg_cache_touch(const char *lib_path) { (void)utimensat(AT_FDCWD, lib_path, NULL, 0); }

/* Is name "<64 hex>.so" or "<64 hex>.c"? Then its key. */
static bool entry_key(const char *name, char key[CACHE_KEY_LEN + 1])
{
    for (int i = 0; i < CACHE_KEY_LEN; i++) {
        char c = name[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    const char *ext = name + CACHE_KEY_LEN;
    if (strcmp(ext, ".so") != 0 && strcmp(ext, ".c") != 0) return false;
    memcpy(key, name, CACHE_KEY_LEN);
    key[CACHE_KEY_LEN] = '\0';
    return true;
}

/* One entry per file (a key's .so and .c are merged after the scan:
 * merge_keys); a search per file made the scan quadratic in the entries, seconds
 * per build on a cache of thousands (the fuzzers' brief runs in CI). */
static cache_entry *add_entry(cache_scan *s, const char *key)
{
    if (s->len == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        cache_entry *grown =
            smelt_realloc(s->items, (size_t)s->cap * sizeof *grown, (size_t)cap * sizeof *grown);
        if (!grown) return NULL;
        s->items = grown;
        s->cap = cap;
    }
    cache_entry *e = &s->items[s->len++];
    memset(e, 0, sizeof *e);
    memcpy(e->key, key, sizeof e->key);
    return e;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const cache_entry *)a)->key, ((const cache_entry *)b)->key);
}

/* Sort by key and merge each key's files into one entry (bytes summed,
 * the latest use kept). */
static void merge_keys(cache_scan *s)
{
    if (s->len == 0) return;
    qsort(s->items, (size_t)s->len, sizeof *s->items, by_key);
    int n = 0;
    for (int i = 1; i < s->len; i++) {
        cache_entry *last = &s->items[n], *e = &s->items[i];
        if (strcmp(last->key, e->key) == 0) {
            last->bytes += e->bytes;
            if (e->last_use > last->last_use) last->last_use = e->last_use;
        } else {
            s->items[++n] = *e;
        }
    }
    s->len = n + 1;
}

static bool is_stale_temp(const char *name, const struct stat *st, time_t now)
{
    return strncmp(name, "tmp-", 4) == 0 && now - st->st_mtime > CACHE_STALE_TEMP_SECONDS;
}

static bool scan_cache(int dfd, DIR *d, cache_scan *s)
{
    time_t now = time(NULL);
    for (struct dirent *de; (de = readdir(d));) {
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) continue;
        if (is_stale_temp(de->d_name, &st, now)) {
            (void)unlinkat(dfd, de->d_name, 0);
            continue;
        }
        char key[CACHE_KEY_LEN + 1];
        if (strlen(de->d_name) < CACHE_KEY_LEN || !entry_key(de->d_name, key)) continue;
        cache_entry *e = add_entry(s, key);
        if (!e) return false;
        e->bytes = st.st_size;
        e->last_use = st.st_mtime;
        s->total += st.st_size;
    }
    merge_keys(s);
    return true;
}

static int by_last_use(const void *a, const void *b)
{
    const cache_entry *x = a, *y = b;
    if (x->last_use != y->last_use) return x->last_use < y->last_use ? -1 : 1;
    return strcmp(x->key, y->key);
}

static void remove_entry(int dfd, const cache_entry *e)
{
    char name[CACHE_KEY_LEN + 4];
    snprintf(name, sizeof name, "%s.so", e->key);
    (void)unlinkat(dfd, name, 0);
    snprintf(name, sizeof name, "%s.c", e->key);
    (void)unlinkat(dfd, name, 0);
}

smelt_status cg_cache_trim(smelt_ctx *ctx, const char *dir, int64_t max_bytes,
                           const char *keep_key)
{
    if (max_bytes <= 0) return SMELT_OK;
    DIR *d = opendir(dir);
    if (!d) return SMELT_OK; /* upkeep is best effort: the build itself succeeded */
    cache_scan s = {0};
    bool scanned = scan_cache(dirfd(d), d, &s);
    if (scanned && s.total > max_bytes) {
        qsort(s.items, (size_t)s.len, sizeof *s.items, by_last_use);
        for (int i = 0; i < s.len && s.total > max_bytes; i++) {
            if (keep_key && strcmp(s.items[i].key, keep_key) == 0) continue;
            remove_entry(dirfd(d), &s.items[i]);
            s.total -= s.items[i].bytes;
        }
    }
    closedir(d);
    smelt_free(s.items);
    return scanned ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
}
