/* Keyed hashing for tables indexed by untrusted strings (value and node
 * names of a model).  An unkeyed hash such as FNV lets a model choose names
 * that all land in one bucket, turning every lookup into a linear scan and
 * the import into quadratic time; SipHash-2-4 under a per-process random key
 * leaves nothing to aim at.  Nothing that must be the same run to run
 * (generated C, cache keys, printed IR) may depend on these values: the
 * string maps have no iteration order to leak. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

static uint64_t rotl64(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

static void sip_round(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = rotl64(v[1], 13) ^ v[0];
    v[0] = rotl64(v[0], 32);
    v[2] += v[3];
    v[3] = rotl64(v[3], 16) ^ v[2];
    v[0] += v[3];
    v[3] = rotl64(v[3], 21) ^ v[0];
    v[2] += v[1];
    v[1] = rotl64(v[1], 17) ^ v[2];
    v[2] = rotl64(v[2], 32);
}

static uint64_t load_le64(const unsigned char *p, size_t n)
{
    uint64_t w = 0;
    for (size_t i = 0; i < n; i++) w |= (uint64_t)p[i] << (8 * i);
    return w;
}

static void sip_absorb(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    sip_round(v);
    sip_round(v);
    v[0] ^= m;
}

uint64_t smelt_siphash(const uint64_t key[2], const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t v[4] = {key[0] ^ 0x736f6d6570736575ull, key[1] ^ 0x646f72616e646f6dull,
                     key[0] ^ 0x6c7967656e657261ull, key[1] ^ 0x7465646279746573ull};
    size_t whole = n - n % 8;
    for (size_t i = 0; i < whole; i += 8) sip_absorb(v, load_le64(p + i, 8));
    uint64_t tail = n % 8 ? load_le64(p + whole, n % 8) : 0; /* p may be NULL when n is 0 */
    sip_absorb(v, tail | (uint64_t)(n & 0xff) << 56);
    v[2] ^= 0xff;
    for (int r = 0; r < 4; r++) sip_round(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* ---- the per-process key ---- */

static uint64_t g_key[2];
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static bool read_urandom(void *buf, size_t n)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    return got == n;
}

/* Last resort when the kernel gives no randomness: time, pid and an ASLR'd
 * address, stirred.  Weaker, but still not known to the model's author. */
static void weak_key(uint64_t key[2])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t state = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^
                     (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&state;
    key[0] = splitmix64(&state);
    key[1] = splitmix64(&state);
}

static void init_key(void)
{
    /* SMELT_HASH_SEED fixes the key (like PYTHONHASHSEED): to replay a run
     * exactly while debugging, or to check that output does not depend on it */
    const char *seed = getenv("SMELT_HASH_SEED");
    if (seed && *seed) {
        uint64_t state = smelt_hash_bytes(seed, strlen(seed), 0);
        g_key[0] = splitmix64(&state);
        g_key[1] = splitmix64(&state);
        return;
    }
    /* GRND_NONBLOCK: early in boot the pool may not be ready; never wait */
    if (getrandom(g_key, sizeof g_key, GRND_NONBLOCK) == (ssize_t)sizeof g_key) return;
    if (read_urandom(g_key, sizeof g_key)) return;
    weak_key(g_key);
}

uint64_t smelt_hash_keyed(const void *data, size_t n) { return smelt_hash_keyed_seed(data, n, 0); }

uint64_t smelt_hash_keyed_seed(const void *data, size_t n, uint64_t seed)
{
    pthread_once(&g_key_once, init_key);
    uint64_t key[2] = {g_key[0] ^ seed, g_key[1]};
    return smelt_siphash(key, data, n);
}
