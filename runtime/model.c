/* Running a compiled model: module checks, weights, the activation arenas,
 * input checks and the named API (C99, libc and pthreads).
 *
 * Everything a single-threaded run needs is allocated at load: one arena
 * (64-byte aligned, arena_bytes from the compiler's memory plan), one buffer
 * per output for the named API and the pointer tables, so
 * smelt_rt_model_run allocates nothing.  Concurrent runs each take an arena
 * from the model's free list (`slots`, under `mu`); when every arena is in
 * use another is allocated and kept, so a model holds as many arenas as
 * calls ever overlapped.  Messages of the run path go into the caller's
 * buffer (never into shared state while another call may read it).
 */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200809L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c99 */
#endif
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "smelt_rt.h"

#define RT_MAX_IO 65536 /* sanity cap on a module's input/output counts */

#define RT_ERR_CAP 1024

/* One activation arena; free ones are on the model's list.  A module with
 * run-time dims also gets, after the arena, a buffer at the dims' maxima
 * for each input and output that has one (its `stage` offset), and the
 * pointer tables run() is called with. */
typedef struct rt_slot {
    struct rt_slot *next;
    unsigned char *arena, *arena_raw;
    const void **in;
    void **out;
} rt_slot;

struct smelt_rt_model {
    const smelt_rt_module_info *info;
    void *dl_handle;                /* set by smelt_rt_model_load; closed at free */
    void (*dl_close)(void *handle); /* how to close it (keeps dlfcn out of this file) */
    const unsigned char *weights;   /* what run() reads */
    unsigned char *weights_owned;   /* raw allocation when read from a file */
    pthread_mutex_t mu;             /* slots, n_slots, error */
    int mu_ready;
    rt_slot *slots;                 /* free arenas */
    int n_slots;                    /* arenas allocated */
    smelt_rt_pool *pool;            /* a handle on the process-wide pool, or NULL */
    const void **bound_in;   /* named API: bound inputs */
    size_t *bound_in_bytes;
    void **out_bufs;         /* named API: model-owned outputs */
    unsigned char **out_raw;
    size_t *out_bytes;
    int have_outputs;        /* an invoke has completed */
    size_t *stage;           /* run-time dims: per input, then output, its buffer's
                                offset in a slot past the arena, or SIZE_MAX: none */
    int *staged;             /* the indices into stage that are staged, inputs first */
    int n_staged_in, n_staged;
    size_t slot_bytes;       /* arena and buffers */
    int invoking;            /* atomic: an invoke is in progress */
    char error[RT_ERR_CAP];
};

/* ---- small helpers ---- */

size_t smelt_rt_dtype_size(int dtype)
{
    switch (dtype) {
    case 1: case 6: case 12: return 4;  /* float32, int32, uint32 */
    case 2: case 3: case 9: return 1;   /* uint8, int8, bool */
    case 4: case 5: case 10: case 16: return 2; /* uint16, int16, float16, bfloat16 */
    case 7: case 11: case 13: return 8; /* int64, float64, uint64 */
    /* float8, float4 and 4/2-bit integers: one element per byte (smelt_rt.h) */
    case 17: case 18: case 19: case 20: case 21: case 22: case 23: case 24: case 25: case 26:
        return 1;
    default: return 0;                  /* string, complex, unknown */
    }
}

const char *smelt_rt_dtype_name(int dtype)
{
    static const char *const names[] = {"undefined", "float32", "uint8",  "int8",   "uint16",
                                        "int16",     "int32",   "int64",  "string", "bool",
                                        "float16",   "float64", "uint32", "uint64", "complex64",
                                        "complex128", "bfloat16", "float8e4m3fn",
                                        "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
                                        "uint4",    "int4",    "float4e2m1", "float8e8m0",
                                        "uint2",    "int2"};
    if (dtype < 0 || dtype >= (int)(sizeof names / sizeof names[0])) return "?";
    return names[dtype];
}


/* Byte size with overflow detection: returns 0 on failure, 1 on success. */
static int io_bytes_at(const smelt_rt_io_info *io, const int64_t *vals, size_t *out)
{
    size_t total = smelt_rt_dtype_size(io->dtype);
    if (total == 0 || io->rank < 0 || io->rank > 8) return 0;
    for (int d = 0; d < io->rank; d++) {
        int64_t v = smelt_rt_io_dim(io, d, vals);
        if (v < 0) return 0;
        size_t dim = (size_t)v;
        if ((uint64_t)v > (uint64_t)SIZE_MAX) return 0;
        if (dim != 0 && total > SIZE_MAX / dim) return 0;
        total *= dim;
    }
    *out = total;
    return 1;
}

static int io_bytes_checked(const smelt_rt_io_info *io, size_t *out) { return io_bytes_at(io, NULL, out); }

size_t smelt_rt_io_bytes(const smelt_rt_io_info *io)
{
    size_t n = 0;
    return io && io_bytes_checked(io, &n) ? n : 0;
}

size_t smelt_rt_io_bytes_at(const smelt_rt_io_info *io, const int64_t *vals)
{
    size_t n = 0;
    return io && io_bytes_at(io, vals, &n) ? n : 0;
}

static void put_error(char *buf, size_t size, const char *fmt, va_list ap)
{
    if (buf && size) vsnprintf(buf, size, fmt, ap);
}

static void set_err(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_error(buf, size, fmt, ap);
    va_end(ap);
}

/* The model's own message (smelt_rt_model_error): written under mu. */
static smelt_rt_status model_err(smelt_rt_model *m, smelt_rt_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (m->mu_ready) pthread_mutex_lock(&m->mu);
    put_error(m->error, sizeof m->error, fmt, ap);
    if (m->mu_ready) pthread_mutex_unlock(&m->mu);
    va_end(ap);
    return s;
}

/* A call's message into its caller's buffer. */
static smelt_rt_status call_err(char *buf, size_t size, smelt_rt_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_error(buf, size, fmt, ap);
    va_end(ap);
    return s;
}

/* "float32[1,3,224,224]" into buf. */
static const char *describe_io_at(const smelt_rt_io_info *io, const int64_t *vals, char *buf,
                                  size_t size)
{
    int n = snprintf(buf, size, "%s[", smelt_rt_dtype_name(io->dtype));
    for (int d = 0; d < io->rank && n > 0 && (size_t)n < size; d++)
        n += snprintf(buf + n, size - (size_t)n, "%s%lld", d ? "," : "",
                      (long long)smelt_rt_io_dim(io, d, vals));
    if (n > 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, "]");
    return buf;
}

static const char *describe_io(const smelt_rt_io_info *io, char *buf, size_t size)
{
    return describe_io_at(io, NULL, buf, size);
}

/* 64-byte aligned allocation: returns the aligned pointer, *raw is what to free. */
static unsigned char *alloc_aligned(size_t bytes, unsigned char **raw)
{
    if (bytes > SIZE_MAX - 64) return NULL;
    *raw = malloc(bytes + 64);
    if (!*raw) return NULL;
    uintptr_t p = ((uintptr_t)*raw + 63) & ~(uintptr_t)63;
    return (unsigned char *)p;
}

/* ---- module validation ---- */

static int check_io_list(const smelt_rt_io_info *list, int count, const char *what, int n_rt,
                         char *err, size_t err_size)
{
    if (count < 0 || count > RT_MAX_IO || (count > 0 && !list)) {
        set_err(err, err_size, "invalid module: bad %s count %d", what, count);
        return 0;
    }
    for (int i = 0; i < count; i++) {
        size_t bytes;
        if (!io_bytes_checked(&list[i], &bytes)) {
            set_err(err, err_size, "invalid module: %s %d has an unsupported dtype %d or bad shape",
                    what, i, list[i].dtype);
            return 0;
        }
        for (int d = 0; d < list[i].rank; d++)
            if (list[i].rt[d] < 0 || list[i].rt[d] > n_rt || (!list[i].rt[d] && list[i].rt_add[d])) {
                set_err(err, err_size, "invalid module: %s %d dim %d names run-time dim %d of %d",
                        what, i, d, list[i].rt[d], n_rt);
                return 0;
            }
    }
    return 1;
}

static int check_error_sites(const smelt_rt_module_info *info, char *err, size_t err_size)
{
    int n = info->num_error_sites;
    if (n < 0 || n > RT_MAX_IO * 16 || (n > 0 && !info->error_sites)) {
        set_err(err, err_size, "invalid module: bad error site count %d", n);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        const smelt_rt_error_site *site = &info->error_sites[i];
        if (!site->node || !site->op || !site->message) {
            set_err(err, err_size, "invalid module: error site %d has no text", i);
            return 0;
        }
    }
    return 1;
}

#define RT_MAX_DIMS 16

static int check_rt_dims(const smelt_rt_module_info *info, char *err, size_t err_size)
{
    int n = info->num_rt_dims;
    if (n < 0 || n > RT_MAX_DIMS || (n > 0 && !info->rt_dims) || info->rt_dims_offset < 0 ||
        (n > 0 && info->rt_dims_offset % 8) ||
        (n > 0 && info->rt_dims_offset + 8 * (int64_t)n > info->arena_bytes)) {
        set_err(err, err_size, "invalid module: bad run-time dims (%d)", n);
        return 0;
    }
    for (int k = 0; k < n; k++) {
        const smelt_rt_dim_info *r = &info->rt_dims[k];
        if (!r->name || r->min < (r->data ? 0 : 1) || r->max < r->min || r->max < 1) {
            set_err(err, err_size, "invalid module: run-time dim %d has no name or a bad range", k);
            return 0;
        }
    }
    return 1;
}

static int check_module(const smelt_rt_module_info *info, char *err, size_t err_size)
{
    if (!info) {
        set_err(err, err_size, "invalid module: no module info");
        return 0;
    }
    if (info->abi_version != SMELT_RT_ABI_VERSION) {
        set_err(err, err_size, "module ABI version %d, this runtime supports %d (rebuild the model)",
                info->abi_version, SMELT_RT_ABI_VERSION);
        return 0;
    }
    if (!info->run || info->arena_bytes < 0 || info->weight_bytes < 0 ||
        (uint64_t)info->arena_bytes > (uint64_t)(SIZE_MAX / 2) ||
        (uint64_t)info->weight_bytes > (uint64_t)(SIZE_MAX / 2)) {
        set_err(err, err_size, "invalid module: bad entry point or sizes");
        return 0;
    }
    return check_rt_dims(info, err, err_size) &&
           check_io_list(info->inputs, info->num_inputs, "input", info->num_rt_dims, err, err_size) &&
           check_io_list(info->outputs, info->num_outputs, "output", info->num_rt_dims, err, err_size) &&
           check_error_sites(info, err, err_size);
}

/* ---- construction ---- */

static int alloc_named_buffers(smelt_rt_model *m)
{
    const smelt_rt_module_info *info = m->info;
    size_t ni = (size_t)info->num_inputs + 1, no = (size_t)info->num_outputs + 1;
    m->bound_in = calloc(ni, sizeof *m->bound_in);
    m->bound_in_bytes = calloc(ni, sizeof *m->bound_in_bytes);
    m->out_bufs = calloc(no, sizeof *m->out_bufs);
    m->out_raw = calloc(no, sizeof *m->out_raw);
    m->out_bytes = calloc(no, sizeof *m->out_bytes);
    if (!m->bound_in || !m->bound_in_bytes || !m->out_bufs || !m->out_raw || !m->out_bytes)
        return 0;
    for (int i = 0; i < info->num_outputs; i++) {
        io_bytes_checked(&info->outputs[i], &m->out_bytes[i]);
        m->out_bufs[i] = alloc_aligned(m->out_bytes[i], &m->out_raw[i]);
        if (!m->out_bufs[i]) return 0;
    }
    return 1;
}

static void slot_free(rt_slot *s)
{
    if (!s) return;
    free(s->arena_raw);
    free(s->in);
    free(s->out);
    free(s);
}

static rt_slot *slot_new(const smelt_rt_model *m)
{
    const smelt_rt_module_info *info = m->info;
    rt_slot *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->arena = alloc_aligned(m->slot_bytes, &s->arena_raw);
    if (info->num_rt_dims) {
        s->in = calloc((size_t)info->num_inputs + 1, sizeof *s->in);
        s->out = calloc((size_t)info->num_outputs + 1, sizeof *s->out);
    }
    if (!s->arena || (info->num_rt_dims && (!s->in || !s->out))) {
        slot_free(s);
        return NULL;
    }
    return s;
}

static int has_rt(const smelt_rt_io_info *io)
{
    for (int d = 0; d < io->rank; d++)
        if (io->rt[d]) return 1;
    return 0;
}

/* Where each input and output with a run-time dim is staged in a slot. */
static int plan_stages(smelt_rt_model *m)
{
    const smelt_rt_module_info *info = m->info;
    int n = info->num_inputs + info->num_outputs;
    m->slot_bytes = (size_t)info->arena_bytes;
    if (!info->num_rt_dims) return 1;
    m->stage = calloc((size_t)n + 1, sizeof *m->stage);
    m->staged = calloc((size_t)n + 1, sizeof *m->staged);
    if (!m->stage || !m->staged) return 0;
    for (int i = 0; i < n; i++) {
        const smelt_rt_io_info *io = i < info->num_inputs ? &info->inputs[i]
                                                          : &info->outputs[i - info->num_inputs];
        size_t bytes = 0;
        m->stage[i] = SIZE_MAX;
        if (!has_rt(io) || io->dense) continue; /* dense: run() takes the caller's buffer */
        io_bytes_checked(io, &bytes);
        m->slot_bytes = (m->slot_bytes + 63) / 64 * 64;
        if (bytes > SIZE_MAX / 4 - m->slot_bytes) return 0;
        m->stage[i] = m->slot_bytes;
        m->slot_bytes += bytes;
        m->staged[m->n_staged++] = i;
        if (i < info->num_inputs) m->n_staged_in = m->n_staged;
    }
    return 1;
}

static smelt_rt_model *model_new(const smelt_rt_module_info *info, int num_threads, char *err,
                                 size_t err_size)
{
    if (!check_module(info, err, err_size)) return NULL;
    smelt_rt_model *m = calloc(1, sizeof *m);
    if (!m) {
        set_err(err, err_size, "out of memory");
        return NULL;
    }
    m->info = info;
    if (pthread_mutex_init(&m->mu, NULL) != 0) {
        set_err(err, err_size, "could not create a mutex");
        free(m);
        return NULL;
    }
    m->mu_ready = 1;
    m->slots = plan_stages(m) ? slot_new(m) : NULL;
    m->n_slots = m->slots ? 1 : 0;
    int ok = m->slots && alloc_named_buffers(m);
    if (!ok) {
        set_err(err, err_size, "out of memory allocating the model (arena %lld bytes)",
                (long long)info->arena_bytes);
        smelt_rt_model_free(m);
        return NULL;
    }
    if (num_threads != 1 && !(m->pool = smelt_rt_pool_shared(num_threads))) {
        set_err(err, err_size, "could not start the thread pool (%d threads)", num_threads);
        smelt_rt_model_free(m);
        return NULL;
    }
    return m;
}

/* A weight pointer for run(): never NULL, even for a model without weights. */
static const unsigned char no_weights[64];

smelt_rt_model *smelt_rt_model_from_info(const smelt_rt_module_info *info,
                                         const unsigned char *weights, int num_threads,
                                         char *err, size_t err_size)
{
    if (info && !weights) weights = info->embedded_weights;
    if (info && !weights && info->weight_bytes > 0) {
        set_err(err, err_size, "the model needs %lld bytes of weights and none were given",
                (long long)info->weight_bytes);
        return NULL;
    }
    smelt_rt_model *m = model_new(info, num_threads, err, err_size);
    if (m) m->weights = weights ? weights : no_weights;
    return m;
}

/* Read exactly `expected` bytes from path into 64-byte aligned memory. */
static unsigned char *read_weights(const char *path, int64_t expected, unsigned char **raw,
                                   char *err, size_t err_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        set_err(err, err_size, "cannot open weights file '%s'", path);
        return NULL;
    }
    unsigned char *data = alloc_aligned((size_t)expected, raw);
    size_t got = data ? fread(data, 1, (size_t)expected, f) : 0;
    int extra = data && fgetc(f) != EOF;
    int io_error = ferror(f);
    fclose(f);
    if (!data) {
        set_err(err, err_size, "out of memory reading %lld bytes of weights", (long long)expected);
        return NULL;
    }
    if (io_error || got != (size_t)expected || extra) {
        set_err(err, err_size, "weights file '%s' %s: expected exactly %lld bytes", path,
                io_error ? "could not be read" : got != (size_t)expected ? "is too short" : "is too long",
                (long long)expected);
        free(*raw);
        *raw = NULL;
        return NULL;
    }
    return data;
}

smelt_rt_model *smelt_rt_model_from_info_file(const smelt_rt_module_info *info,
                                              const char *weights_path, int num_threads,
                                              char *err, size_t err_size)
{
    if (!weights_path || !info || info->embedded_weights || info->weight_bytes == 0)
        return smelt_rt_model_from_info(info, NULL, num_threads, err, err_size);
    if (!check_module(info, err, err_size)) return NULL;
    unsigned char *raw = NULL;
    unsigned char *w = read_weights(weights_path, info->weight_bytes, &raw, err, err_size);
    if (!w) return NULL;
    smelt_rt_model *m = smelt_rt_model_from_info(info, w, num_threads, err, err_size);
    if (!m) {
        free(raw);
        return NULL;
    }
    m->weights_owned = raw;
    return m;
}

/* Used by the loader (load.c) to hand over the library handle. */
void smelt_rt_model_attach_library_(smelt_rt_model *m, void *handle, void (*close_fn)(void *));
void smelt_rt_model_attach_library_(smelt_rt_model *m, void *handle, void (*close_fn)(void *))
{
    m->dl_handle = handle;
    m->dl_close = close_fn;
}

void smelt_rt_model_free(smelt_rt_model *m)
{
    if (!m) return;
    smelt_rt_pool_free(m->pool);
    if (m->out_raw)
        for (int i = 0; i < m->info->num_outputs; i++) free(m->out_raw[i]);
    free(m->out_raw);
    free(m->out_bufs);
    free(m->out_bytes);
    free(m->bound_in);
    free(m->bound_in_bytes);
    for (rt_slot *sl = m->slots, *next; sl; sl = next) {
        next = sl->next;
        slot_free(sl);
    }
    free(m->stage);
    free(m->staged);
    if (m->mu_ready) pthread_mutex_destroy(&m->mu);
    free(m->weights_owned);
    if (m->dl_handle && m->dl_close) m->dl_close(m->dl_handle);
    free(m);
}

const smelt_rt_module_info *smelt_rt_model_info(const smelt_rt_model *m) { return m ? m->info : NULL; }

int smelt_rt_model_num_threads(const smelt_rt_model *m)
{
    return m && m->pool ? smelt_rt_pool_size(m->pool) : 1;
}

const char *smelt_rt_model_error(const smelt_rt_model *m) { return m ? m->error : "no model"; }

/* ---- running ---- */

static smelt_rt_status check_buffers(const smelt_rt_model *m, const char *what,
                                     const smelt_rt_io_info *ios, int expected_count,
                                     const void *const *ptrs, const size_t *bytes, int count,
                                     const int64_t *vals, char *err, size_t err_size)
{
    char desc[160];
    (void)m;
    if (count != expected_count)
        return call_err(err, err_size, SMELT_RT_ERR_ARG, "expected %d %ss, got %d",
                        expected_count, what, count);
    if (count > 0 && (!ptrs || !bytes))
        return call_err(err, err_size, SMELT_RT_ERR_ARG, "%s pointer or size array is NULL", what);
    for (int i = 0; i < count; i++) {
        size_t want = 0;
        io_bytes_at(&ios[i], vals, &want);
        if (!ptrs[i] && want > 0)
            return call_err(err, err_size, SMELT_RT_ERR_ARG, "%s %d ('%s') is NULL; expected %s",
                            what, i, ios[i].name, describe_io_at(&ios[i], vals, desc, sizeof desc));
        if (bytes[i] != want)
            return call_err(err, err_size, SMELT_RT_ERR_ARG,
                            "%s %d ('%s'): expected %zu bytes (%s), got %zu", what, i,
                            ios[i].name, want, describe_io_at(&ios[i], vals, desc, sizeof desc), bytes[i]);
    }
    return SMELT_RT_OK;
}

static int ranges_overlap(const void *a, size_t na, const void *b, size_t nb)
{
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    return na && nb && pa < pb + nb && pb < pa + na;
}

/* Outputs must not overlap inputs or each other (generated code uses restrict). */
static smelt_rt_status check_overlap(const smelt_rt_model *m, const void *const *in,
                                     const size_t *in_b, void *const *out, const size_t *out_b,
                                     char *err, size_t err_size)
{
    const smelt_rt_module_info *info = m->info;
    for (int o = 0; o < info->num_outputs; o++) {
        for (int i = 0; i < info->num_inputs; i++)
            if (ranges_overlap(out[o], out_b[o], in[i], in_b[i]))
                return call_err(err, err_size, SMELT_RT_ERR_ARG,
                                "output %d ('%s') overlaps input %d ('%s')", o,
                                info->outputs[o].name, i, info->inputs[i].name);
        for (int k = 0; k < o; k++)
            if (ranges_overlap(out[o], out_b[o], out[k], out_b[k]))
                return call_err(err, err_size, SMELT_RT_ERR_ARG,
                                "output %d ('%s') overlaps output %d ('%s')", o,
                                info->outputs[o].name, k, info->outputs[k].name);
    }
    return SMELT_RT_OK;
}

/* "node 'N' (Op): " + the site's message with {value} and {position} filled
 * in (src/tir/ir.c ir_check_format writes the compiler's side the same way). */
static smelt_rt_status report_check(const smelt_rt_model *m, const smelt_rt_run_error *r,
                                    char *err, size_t cap)
{
    const smelt_rt_module_info *info = m->info;
    if (r->site >= info->num_error_sites)
        return call_err(err, cap, SMELT_RT_ERR_INTERNAL, "invalid module: error site %d of %d",
                        r->site, info->num_error_sites);
    if (!err || cap == 0) return SMELT_RT_ERR_DATA;
    const smelt_rt_error_site *site = &info->error_sites[r->site];
    size_t n = 0;
    int len = snprintf(err, cap, "node '%s' (%s): ", site->node, site->op);
    n = len < 0 ? 0 : (size_t)len < cap ? (size_t)len : cap - 1;
    for (const char *p = site->message; *p && n + 1 < cap;) {
        int is_value = strncmp(p, "{value}", 7) == 0, is_pos = strncmp(p, "{position}", 10) == 0;
        if (is_value || is_pos) {
            len = snprintf(err + n, cap - n, "%lld",
                           (long long)(is_value ? r->value : r->position));
            n = len < 0 || (size_t)len >= cap - n ? cap - 1 : n + (size_t)len;
            p += is_value ? 7 : 10;
        } else {
            err[n++] = *p++;
        }
    }
    err[n] = '\0';
    return SMELT_RT_ERR_DATA;
}

/* An arena of the model's own, or a new one when all are in use. */
static rt_slot *slot_take(smelt_rt_model *m)
{
    pthread_mutex_lock(&m->mu);
    rt_slot *s = m->slots;
    if (s) m->slots = s->next;
    pthread_mutex_unlock(&m->mu);
    if (s) return s;
    s = slot_new(m);
    if (!s) return NULL;
    pthread_mutex_lock(&m->mu);
    m->n_slots++;
    pthread_mutex_unlock(&m->mu);
    return s;
}

static void slot_give(smelt_rt_model *m, rt_slot *s)
{
    pthread_mutex_lock(&m->mu);
    s->next = m->slots;
    m->slots = s;
    pthread_mutex_unlock(&m->mu);
}

int smelt_rt_model_arenas_(smelt_rt_model *m);
int smelt_rt_model_arenas_(smelt_rt_model *m) /* for tests: arenas allocated so far */
{
    pthread_mutex_lock(&m->mu);
    int n = m->n_slots;
    pthread_mutex_unlock(&m->mu);
    return n;
}

/* ---- run-time dims ---- */

/* The only run-time dim of io (its index, and the axis in *axis), -1 when
 * it has none or several. */
static int only_rt(const smelt_rt_io_info *io, int *axis)
{
    int k = -1, n = 0;
    for (int d = 0; d < io->rank; d++)
        if (io->rt[d]) {
            k = io->rt[d] - 1;
            *axis = d;
            n++;
        }
    return n == 1 ? k : -1;
}

smelt_rt_status smelt_rt_model_run_dims(const smelt_rt_model *m, const size_t *input_bytes,
                                        int num_inputs, int64_t *vals, char *err, size_t err_size)
{
    const smelt_rt_module_info *info = m->info;
    if (num_inputs != info->num_inputs || (num_inputs && !input_bytes))
        return call_err(err, err_size, SMELT_RT_ERR_ARG, "expected %d inputs, got %d",
                        info->num_inputs, num_inputs);
    for (int k = 0; k < info->num_rt_dims; k++) vals[k] = -1;
    for (int i = 0; i < num_inputs; i++) {
        const smelt_rt_io_info *io = &info->inputs[i];
        int axis = -1, k = only_rt(io, &axis);
        size_t row = smelt_rt_dtype_size(io->dtype);
        for (int d = 0; d < io->rank; d++) row *= d == axis ? 1 : (size_t)io->dims[d];
        if (k < 0 || row == 0) continue;
        if (input_bytes[i] % row)
            return call_err(err, err_size, SMELT_RT_ERR_ARG, "input %d ('%s'): %zu bytes are not "
                            "a whole number of rows of its run-time dim '%s' (%zu bytes each)",
                            i, io->name, input_bytes[i], info->rt_dims[k].name, row);
        int64_t v = (int64_t)(input_bytes[i] / row) - io->rt_add[axis];
        if (vals[k] >= 0 && vals[k] != v)
            return call_err(err, err_size, SMELT_RT_ERR_ARG, "input %d ('%s') has run-time dim "
                            "'%s' = %lld, an earlier input %lld", i, io->name,
                            info->rt_dims[k].name, (long long)v, (long long)vals[k]);
        vals[k] = v;
    }
    for (int k = 0; k < info->num_rt_dims; k++) {
        const smelt_rt_dim_info *r = &info->rt_dims[k];
        if (r->data) { /* written by the run; outputs are checked at its maximum */
            vals[k] = r->max;
            continue;
        }
        if (vals[k] < 0)
            return call_err(err, err_size, SMELT_RT_ERR_ARG, "no input has the run-time dim "
                            "'%s' as its only one, so its value is not known", r->name);
        if (vals[k] < r->min || vals[k] > r->max)
            return call_err(err, err_size, SMELT_RT_ERR_ARG, "run-time dim '%s' = %lld is "
                            "outside the range the model was compiled for (%lld..%lld)",
                            r->name, (long long)vals[k], (long long)r->min, (long long)r->max);
    }
    return SMELT_RT_OK;
}

/* Copy between a dense tensor of the run's dims (run) and the layout at
 * the maxima (full); rows past the run's length are left alone. */
static void copy_rows(unsigned char *dst, const unsigned char *src, int d, int rank,
                      const int64_t *run, const int64_t *full, size_t es, int to_full)
{
    size_t run_in = es, full_in = es;
    int same = 1;
    for (int k = d + 1; k < rank; k++) {
        run_in *= (size_t)run[k];
        full_in *= (size_t)full[k];
        same = same && run[k] == full[k];
    }
    if (d == rank || same) {
        memcpy(dst, src, d == rank ? es : (size_t)run[d] * run_in);
        return;
    }
    size_t dstep = to_full ? full_in : run_in, sstep = to_full ? run_in : full_in;
    for (int64_t i = 0; i < run[d]; i++)
        copy_rows(dst + (size_t)i * dstep, src + (size_t)i * sstep, d + 1, rank, run, full, es,
                  to_full);
}

static void stage_copy(const smelt_rt_io_info *io, const int64_t *vals, void *dst,
                       const void *src, int to_full)
{
    int64_t run[8], full[8];
    for (int d = 0; d < io->rank; d++) {
        run[d] = smelt_rt_io_dim(io, d, vals);
        full[d] = io->dims[d];
    }
    copy_rows(dst, src, 0, io->rank, run, full, smelt_rt_dtype_size(io->dtype), to_full);
}

/* Staging copies of one run (stage_task): inputs into the slot's buffers
 * at the maxima, or outputs back out of them. */
typedef struct stage_job {
    const smelt_rt_model *m;
    rt_slot *slot;
    const int64_t *vals;
    const void *const *inputs;
    void *const *outputs;
    const int *which; /* indices into m->stage (outputs after the inputs) */
} stage_job;

static void stage_task(void *closure, int64_t begin, int64_t end)
{
    const stage_job *j = closure;
    const smelt_rt_module_info *info = j->m->info;
    for (int64_t t = begin; t < end; t++) {
        int k = j->which[t], o = k - info->num_inputs;
        unsigned char *buf = j->slot->arena + j->m->stage[k];
        if (o < 0)
            stage_copy(&info->inputs[k], j->vals, buf, j->inputs[k], 1);
        else
            stage_copy(&info->outputs[o], j->vals, j->outputs[o], buf, 0);
    }
}

/* Stage the inputs with run-time dims into the slot and give run() the
 * slot's tables; write the dims' values where the module reads them. */
static void stage_inputs(const smelt_rt_model *m, rt_slot *slot, const int64_t *vals,
                         const void *const **in, void *const **out, const void *const *inputs,
                         void *const *outputs)
{
    const smelt_rt_module_info *info = m->info;
    if (!info->num_rt_dims) return;
    memcpy(slot->arena + info->rt_dims_offset, vals, sizeof *vals * (size_t)info->num_rt_dims);
    for (int i = 0; i < info->num_inputs; i++) {
        size_t off = m->stage[i];
        slot->in[i] = off == SIZE_MAX ? inputs[i] : slot->arena + off;
    }
    /* in parallel on the model's pool: a key/value cache's tensors are tens
     * of MB per token, bound by memory bandwidth */
    stage_job j = {m, slot, vals, inputs, outputs, m->staged};
    smelt_rt_parallel_for(m->pool, m->n_staged_in, stage_task, &j);
    for (int o = 0; o < info->num_outputs; o++) {
        size_t off = m->stage[info->num_inputs + o];
        slot->out[o] = off == SIZE_MAX ? outputs[o] : slot->arena + off;
    }
    *in = slot->in;
    *out = slot->out;
}

static void unstage_outputs(const smelt_rt_model *m, rt_slot *slot, const int64_t *vals,
                            void *const *outputs)
{
    const smelt_rt_module_info *info = m->info;
    if (!info->num_rt_dims) return;
    stage_job j = {m, slot, vals, NULL, outputs, m->staged + m->n_staged_in};
    smelt_rt_parallel_for(m->pool, m->n_staged - m->n_staged_in, stage_task, &j);
}

static int64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

smelt_rt_status smelt_rt_model_run_err(smelt_rt_model *m, const void *const *inputs,
                                       const size_t *input_bytes, int num_inputs,
                                       void *const *outputs, const size_t *output_bytes,
                                       int num_outputs, char *err, size_t err_size)
{
    return smelt_rt_model_run_profiled(m, inputs, input_bytes, num_inputs, outputs, output_bytes,
                                       num_outputs, NULL, err, err_size);
}

smelt_rt_status smelt_rt_model_run_profiled(smelt_rt_model *m, const void *const *inputs,
                                            const size_t *input_bytes, int num_inputs,
                                            void *const *outputs, const size_t *output_bytes,
                                            int num_outputs, int64_t *call_ns, char *err,
                                            size_t err_size)
{
    return smelt_rt_model_run_ex(m, inputs, input_bytes, num_inputs, outputs, output_bytes,
                                 num_outputs, call_ns, NULL, err, err_size);
}

/* The data-dependent counts the run wrote into the slot (clamped to their
 * range, which the kernels keep). */
static void read_data_dims(const smelt_rt_module_info *info, const rt_slot *slot, int64_t *vals)
{
    for (int k = 0; k < info->num_rt_dims; k++) {
        const smelt_rt_dim_info *r = &info->rt_dims[k];
        if (!r->data) continue;
        int64_t v;
        memcpy(&v, slot->arena + info->rt_dims_offset + 8 * k, sizeof v);
        vals[k] = v < 0 ? 0 : v > r->max ? r->max : v;
    }
}

smelt_rt_status smelt_rt_model_run_ex(smelt_rt_model *m, const void *const *inputs,
                                      const size_t *input_bytes, int num_inputs,
                                      void *const *outputs, const size_t *output_bytes,
                                      int num_outputs, int64_t *call_ns, int64_t *run_dims,
                                      char *err, size_t err_size)
{
    if (err && err_size) err[0] = '\0';
    if (!m) return call_err(err, err_size, SMELT_RT_ERR_ARG, "no model (NULL)");
    const smelt_rt_module_info *info = m->info;
    int64_t vals[RT_MAX_DIMS];
    smelt_rt_status s = SMELT_RT_OK;
    if (info->num_rt_dims)
        s = smelt_rt_model_run_dims(m, input_bytes, num_inputs, vals, err, err_size);
    const int64_t *v = info->num_rt_dims ? vals : NULL;
    if (s == SMELT_RT_OK)
        s = check_buffers(m, "input", info->inputs, info->num_inputs, inputs, input_bytes,
                          num_inputs, v, err, err_size);
    if (s == SMELT_RT_OK)
        s = check_buffers(m, "output", info->outputs, info->num_outputs,
                          (const void *const *)outputs, output_bytes, num_outputs, v, err, err_size);
    if (s == SMELT_RT_OK)
        s = check_overlap(m, inputs, input_bytes, outputs, output_bytes, err, err_size);
    if (s != SMELT_RT_OK) return s;
    rt_slot *slot = slot_take(m);
    if (!slot)
        return call_err(err, err_size, SMELT_RT_ERR_NOMEM,
                        "out of memory for another activation arena (%lld bytes) for a "
                        "concurrent run", (long long)info->arena_bytes);
    smelt_rt_run_error rterr = {0, -1, 0, 0, call_ns, monotonic_ns};
    const void *const *in = inputs;
    void *const *out = outputs;
    stage_inputs(m, slot, vals, &in, &out, inputs, outputs);
    int rc = info->run(m->pool, m->weights, slot->arena, in, out, &rterr);
    if (rc == 0 && info->num_rt_dims) read_data_dims(info, slot, vals);
    if (rc == 0) unstage_outputs(m, slot, vals, outputs);
    if (rc == 0 && run_dims) memcpy(run_dims, vals, sizeof *vals * (size_t)info->num_rt_dims);
    slot_give(m, slot);
    if (rc == 0) return SMELT_RT_OK;
    if (rc == SMELT_RT_RUN_DEVICE_FAILED && rterr.site < 0)
        return call_err(err, err_size, SMELT_RT_ERR_INTERNAL,
                        "the GPU device failed (OpenCL or CUDA; its message is on stderr)");
    return rterr.site >= 0 ? report_check(m, &rterr, err, err_size)
                           : call_err(err, err_size, SMELT_RT_ERR_NOMEM,
                                      "out of memory for a temporary buffer while running");
}

smelt_rt_status smelt_rt_model_run(smelt_rt_model *m, const void *const *inputs,
                                   const size_t *input_bytes, int num_inputs,
                                   void *const *outputs, const size_t *output_bytes,
                                   int num_outputs)
{
    if (!m) return SMELT_RT_ERR_ARG;
    char err[RT_ERR_CAP];
    smelt_rt_status s = smelt_rt_model_run_err(m, inputs, input_bytes, num_inputs, outputs,
                                               output_bytes, num_outputs, err, sizeof err);
    if (s != SMELT_RT_OK) model_err(m, s, "%s", err);
    return s;
}

/* ---- named API ---- */

static int find_io(const smelt_rt_io_info *list, int count, const char *name)
{
    if (!name) return -1;
    for (int i = 0; i < count; i++)
        if (list[i].name && strcmp(list[i].name, name) == 0) return i;
    return -1;
}

int smelt_rt_model_input_index(const smelt_rt_model *m, const char *name)
{
    return m ? find_io(m->info->inputs, m->info->num_inputs, name) : -1;
}

int smelt_rt_model_output_index(const smelt_rt_model *m, const char *name)
{
    return m ? find_io(m->info->outputs, m->info->num_outputs, name) : -1;
}

smelt_rt_status smelt_rt_model_set_input_index(smelt_rt_model *m, int index, const void *data,
                                               size_t bytes)
{
    if (!m) return SMELT_RT_ERR_ARG;
    if (index < 0 || index >= m->info->num_inputs)
        return model_err(m, SMELT_RT_ERR_ARG, "no input %d (the model has %d)", index,
                         m->info->num_inputs);
    const smelt_rt_io_info *io = &m->info->inputs[index];
    size_t want = smelt_rt_io_bytes(io);
    char desc[160];
    /* a run-time dim's length is checked by invoke, against the others' */
    if (has_rt(io) && data && bytes <= want) want = bytes;
    if ((!data && want > 0) || bytes != want)
        return model_err(m, SMELT_RT_ERR_ARG, "input %d ('%s'): expected %zu bytes (%s), got %zu%s",
                         index, io->name, want, describe_io(io, desc, sizeof desc), bytes,
                         data ? "" : " and a NULL pointer");
    m->bound_in[index] = data;
    m->bound_in_bytes[index] = bytes;
    return SMELT_RT_OK;
}

smelt_rt_status smelt_rt_model_set_input(smelt_rt_model *m, const char *name, const void *data,
                                         size_t bytes)
{
    if (!m) return SMELT_RT_ERR_ARG;
    int i = smelt_rt_model_input_index(m, name);
    if (i < 0)
        return model_err(m, SMELT_RT_ERR_ARG, "the model has no input named '%s'",
                         name ? name : "(null)");
    return smelt_rt_model_set_input_index(m, i, data, bytes);
}

smelt_rt_status smelt_rt_model_invoke(smelt_rt_model *m)
{
    if (!m) return SMELT_RT_ERR_ARG;
    const smelt_rt_module_info *info = m->info;
    for (int i = 0; i < info->num_inputs; i++)
        if (!m->bound_in[i] && smelt_rt_io_bytes(&info->inputs[i]) > 0)
            return model_err(m, SMELT_RT_ERR_ARG, "input %d ('%s') was never set", i,
                             info->inputs[i].name);
    int idle = 0;
    if (!__atomic_compare_exchange_n(&m->invoking, &idle, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return model_err(m, SMELT_RT_ERR_ARG,
                         "smelt_rt_model_invoke: another thread is invoking this model; the "
                         "named API is for one thread at a time (threads sharing a model call "
                         "smelt_rt_model_run_err)");
    smelt_rt_status s = SMELT_RT_OK;
    if (info->num_rt_dims) { /* the outputs' sizes follow the inputs' */
        int64_t vals[RT_MAX_DIMS];
        char e[RT_ERR_CAP];
        s = smelt_rt_model_run_dims(m, m->bound_in_bytes, info->num_inputs, vals, e, sizeof e);
        if (s != SMELT_RT_OK) model_err(m, s, "%s", e);
        for (int o = 0; s == SMELT_RT_OK && o < info->num_outputs; o++)
            io_bytes_at(&info->outputs[o], vals, &m->out_bytes[o]);
    }
    int64_t run_vals[RT_MAX_DIMS];
    if (s == SMELT_RT_OK) {
        char e[RT_ERR_CAP];
        s = smelt_rt_model_run_ex(m, m->bound_in, m->bound_in_bytes, info->num_inputs, m->out_bufs,
                                  m->out_bytes, info->num_outputs, NULL, run_vals, e, sizeof e);
        if (s != SMELT_RT_OK) model_err(m, s, "%s", e);
    }
    /* a data-dependent count is known now: the outputs' sizes follow it */
    for (int o = 0; s == SMELT_RT_OK && info->num_rt_dims && o < info->num_outputs; o++)
        io_bytes_at(&info->outputs[o], run_vals, &m->out_bytes[o]);
    if (s == SMELT_RT_OK) m->have_outputs = 1;
    __atomic_store_n(&m->invoking, 0, __ATOMIC_RELEASE);
    return s;
}

const void *smelt_rt_model_get_output_index(smelt_rt_model *m, int index, size_t *bytes)
{
    if (!m) return NULL;
    if (index < 0 || index >= m->info->num_outputs) {
        model_err(m, SMELT_RT_ERR_ARG, "no output %d (the model has %d)", index,
                  m->info->num_outputs);
        return NULL;
    }
    if (!m->have_outputs) {
        model_err(m, SMELT_RT_ERR_ARG, "output %d ('%s') requested before the model was invoked",
                  index, m->info->outputs[index].name);
        return NULL;
    }
    if (bytes) *bytes = m->out_bytes[index];
    return m->out_bufs[index];
}

const void *smelt_rt_model_get_output(smelt_rt_model *m, const char *name, size_t *bytes)
{
    if (!m) return NULL;
    int i = smelt_rt_model_output_index(m, name);
    if (i < 0) {
        model_err(m, SMELT_RT_ERR_ARG, "the model has no output named '%s'", name ? name : "(null)");
        return NULL;
    }
    return smelt_rt_model_get_output_index(m, i, bytes);
}
