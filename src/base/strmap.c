/* Open-addressing hash map from C strings to pointers. */
#include <string.h>

#include "base.h"

void smelt_strmap_init(smelt_strmap *m) { memset(m, 0, sizeof *m); }

void smelt_strmap_fini(smelt_strmap *m)
{
    smelt_free(m->keys);
    smelt_free(m->vals);
    memset(m, 0, sizeof *m);
}

/* Linear probing from the key's home slot; *probes counts the occupied
 * slots stepped over. */
static size_t strmap_slot(const char **keys, size_t cap, const char *key, size_t *probes)
{
    size_t i = (size_t)smelt_hash_keyed(key, strlen(key)) & (cap - 1);
    while (keys[i] && strcmp(keys[i], key) != 0) {
        i = (i + 1) & (cap - 1);
        (*probes)++;
    }
    return i;
}

void *smelt_strmap_get(const smelt_strmap *m, const char *key)
{
    if (!m->cap) return NULL;
    size_t unused = 0;
    size_t i = strmap_slot(m->keys, m->cap, key, &unused);
    return m->keys[i] ? m->vals[i] : NULL;
}

static bool strmap_grow(smelt_strmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    const char **keys = smelt_calloc(ncap, sizeof *keys);
    void **vals = smelt_calloc(ncap, sizeof *vals);
    if (!keys || !vals) {
        smelt_free(keys);
        smelt_free(vals);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t j = strmap_slot(keys, ncap, m->keys[i], &m->probes);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    smelt_free(m->keys);
    smelt_free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = ncap;
    return true;
}

bool smelt_strmap_put(smelt_strmap *m, const char *key, void *val)
{
    if ((m->len + 1) * 2 > m->cap && !strmap_grow(m)) return false;
    size_t i = strmap_slot(m->keys, m->cap, key, &m->probes);
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->len++;
    }
    m->vals[i] = val;
    return true;
}
