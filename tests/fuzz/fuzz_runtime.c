/* libFuzzer harness: the runtime's input checking (libsmelt_rt).
 *
 * Two modules: models/tiny_cnn compiled once at startup through the
 * compile cache (lower, emit, cc, dlopen), and MULTI below, a hand-written
 * module in this file (so sanitizers see its reads) with three inputs and
 * two outputs of mixed dtypes, a rank-0 one and an empty one.  Each input
 * is a script of calls with fuzzed counts, sizes, NULLs, names and indices:
 * run, set_input(_index), invoke, get_output(_index), the index lookups, and
 * building a model from a corrupted module description.  The harness knows
 * which calls are valid; every valid call must succeed, every other one must
 * fail with a message, and no byte outside an output may change (guard
 * bytes around every output buffer; on error the outputs stay untouched).
 * Input buffers are allocated at exactly the size the caller claims, so an
 * accepted short buffer is an ASan report in MULTI's reads.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/smelt_internal.h"
#include "codegen/codegen.h"
#include "codegen/target.h"
#include "fuzz_util.h"
#include "lower/program.h"
#include "smelt_rt.h"

#define GUARD 64
#define MAX_IO 8
#define MAX_CALLS 32

/* Huge allocations from corrupted module descriptions must fail, not abort. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

/* ---- MULTI: out0 = x * 2 + b (float32[2,3], b bool scalar), out1 = int32[0],
 *      idx int64[4] summed into out0[0] ---- */

static const smelt_rt_io_info MULTI_IN[3] = {
    {"x", 1, 2, {2, 3}, {0}, {0}, 0}, {"idx", 7, 1, {4}, {0}, {0}, 0}, {"b", 9, 0, {0}, {0}, {0}, 0}};
static const smelt_rt_io_info MULTI_OUT[2] = {{"y", 1, 2, {2, 3}, {0}, {0}, 0}, {"empty", 6, 2, {3, 0}, {0}, {0}, 0}};

static int multi_run(smelt_rt_pool *pool, const unsigned char *weights, unsigned char *arena,
                     const void *const *in, void *const *out, smelt_rt_run_error *rterr)
{
    (void)rterr;
    (void)pool, (void)weights;
    const float *x = in[0];
    const int64_t *idx = in[1];
    const unsigned char *b = in[2];
    float *y = out[0];
    memset(arena, 0x11, 128); /* arena_bytes below */
    int64_t sum = 0;
    for (int i = 0; i < 4; i++) sum += idx[i] & 0xff;
    for (int i = 0; i < 6; i++) y[i] = x[i] * 2.0f + (float)(*b & 1);
    y[0] += (float)sum;
    return 0;
}

static const smelt_rt_module_info MULTI = {
    SMELT_RT_ABI_VERSION, 3, 2, MULTI_IN, MULTI_OUT, 128, 0, NULL, multi_run, 0, NULL, 0, NULL, NULL, 0, NULL, 0};

/* ---- tiny_cnn through the compile cache, once ---- */

typedef struct compiled {
    lowered_program *lp;
    void *handle;
    const smelt_rt_module_info *info;
} compiled;

static void die(smelt_ctx *ctx, const char *what)
{
    fprintf(stderr, "fuzz_runtime: %s: %s\n", what, smelt_ctx_message(ctx));
    abort();
}

static compiled build_tiny_cnn(void)
{
    compiled c = {0};
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_model *m = smelt_model_load(ctx, SMELT_TINY_CNN_PATH);
    if (!m) die(ctx, "loading " SMELT_TINY_CNN_PATH);
    const cg_target *t = cg_target_find("generic");
    lower_options lo = {.hw = &cg_target_find("generic")->hw};
    if (lower_graph(ctx, m->graph, &lo, &c.lp) != SMELT_OK) die(ctx, "lowering");
    smelt_strbuf src;
    smelt_strbuf_init(&src);
    char *lib = NULL;
    if (cg_emit_program(ctx, &c.lp->prog, t, &src) != SMELT_OK) die(ctx, "emitting C");
    if (cg_build_shared(ctx, smelt_strbuf_cstr(&src), t, &lib) != SMELT_OK) die(ctx, "building");
    if (cg_load_module(ctx, lib, &c.handle, &c.info) != SMELT_OK) die(ctx, "loading the module");
    smelt_free(lib);
    smelt_strbuf_fini(&src);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return c;
}

/* ---- buffers ---- */

/* Every buffer handed to the runtime during one input; freed at the end. */
typedef struct arena_list {
    unsigned char *raw[4 * MAX_CALLS * MAX_IO + 8];
    int n;
} arena_list;

static unsigned char *keep(arena_list *a, size_t bytes)
{
    if (a->n >= (int)(sizeof a->raw / sizeof a->raw[0])) abort();
    unsigned char *p = malloc(bytes ? bytes : 1);
    if (!p) abort();
    return a->raw[a->n++] = p;
}

/* An input buffer of exactly `bytes` (what the caller claims), filled. */
static void *input_buffer(arena_list *a, size_t bytes)
{
    unsigned char *p = keep(a, bytes);
    for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(i * 7 + 1);
    return p;
}

/* An output buffer of `bytes` between two guards; content 0x5a, guards 0xa5. */
static void *output_buffer(arena_list *a, size_t bytes)
{
    unsigned char *p = keep(a, bytes + 2 * GUARD);
    memset(p, 0xa5, GUARD);
    memset(p + GUARD, 0x5a, bytes);
    memset(p + GUARD + bytes, 0xa5, GUARD);
    return p + GUARD;
}

static void check_output_buffer(const void *buf, size_t bytes, bool untouched)
{
    const unsigned char *p = (const unsigned char *)buf - GUARD;
    for (size_t i = 0; i < GUARD; i++)
        if (p[i] != 0xa5 || p[GUARD + bytes + i] != 0xa5) {
            fprintf(stderr, "fuzz_runtime: write outside an output buffer\n");
            abort();
        }
    for (size_t i = 0; untouched && i < bytes; i++)
        if (p[GUARD + i] != 0x5a) {
            fprintf(stderr, "fuzz_runtime: a failed call wrote to an output\n");
            abort();
        }
}

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_runtime: %s\n", what);
    abort();
}

/* The status must be OK exactly when the call was valid, with a message otherwise. */
static bool verbose; /* SMELT_FUZZ_VERBOSE=1: print every call's outcome */

static void expect(smelt_rt_model *m, smelt_rt_status s, bool valid, const char *call)
{
    char msg[256];
    if (verbose) fprintf(stderr, "%s: %s, status %d %s\n", call, valid ? "valid" : "invalid",
                         (int)s, s ? smelt_rt_model_error(m) : "");
    if (valid && s != SMELT_RT_OK) {
        snprintf(msg, sizeof msg, "valid %s failed: %s", call, smelt_rt_model_error(m));
        fail(msg);
    }
    if (!valid && s == SMELT_RT_OK) {
        snprintf(msg, sizeof msg, "invalid %s succeeded", call);
        fail(msg);
    }
    if (!valid && (s != SMELT_RT_ERR_ARG || !*smelt_rt_model_error(m))) {
        snprintf(msg, sizeof msg, "invalid %s: status %d, message '%s'", call, (int)s,
                 smelt_rt_model_error(m));
        fail(msg);
    }
}

/* ---- fuzzed arguments ---- */

static int fuzz_count(recipe *r, int expected)
{
    unsigned b = rd_byte(r);
    if (b < 160) return expected;
    if (b == 255) return INT_MAX;
    if (b == 254) return INT_MIN;
    return (int)(b % 8) - 2;
}

static size_t fuzz_size(recipe *r, size_t exact, size_t elem)
{
    unsigned b = rd_byte(r);
    if (b < 160) return exact;
    switch (b % 6) {
    case 0: return exact + 1;
    case 1: return exact ? exact - 1 : 1;
    case 2: return 0;
    case 3: return exact + elem;
    case 4: return exact >= elem ? exact - elem : exact + 3;
    default: return exact * 2 + 1;
    }
}

/* A name: the real one, a near miss, NULL, or bytes from the recipe. */
static const char *fuzz_name(recipe *r, const char *real, char *buf, size_t size)
{
    unsigned b = rd_byte(r);
    if (b < 150) return real;
    switch (b % 5) {
    case 0: return NULL;
    case 1: snprintf(buf, size, "%s ", real); return buf;
    case 2: snprintf(buf, size, "%.*s", real[0] ? (int)strlen(real) - 1 : 0, real); return buf;
    case 3: return "";
    default: {
        size_t n = rd_pick(r, (unsigned)size);
        for (size_t i = 0; i + 1 < n; i++) buf[i] = (char)(1 + rd_pick(r, 255));
        buf[n ? n - 1 : 0] = '\0';
        return buf;
    }
    }
}

static int fuzz_index(recipe *r, int count)
{
    unsigned b = rd_byte(r);
    if (b < 160) return count ? (int)(b % (unsigned)count) : 0;
    static const int odd[] = {-1, INT_MIN, INT_MAX, MAX_IO, 65536};
    return b % 6 == 5 ? count : odd[b % 5];
}

/* ---- calls ---- */

typedef struct session {
    smelt_rt_model *m;
    const smelt_rt_module_info *info;
    recipe r;
    arena_list bufs;
    bool bound[MAX_IO];
    bool invoked;
} session;

static size_t io_bytes(const smelt_rt_io_info *io) { return smelt_rt_io_bytes(io); }
static size_t io_elem(const smelt_rt_io_info *io) { return smelt_rt_dtype_size(io->dtype); }

static bool overlaps(const void *a, size_t na, const void *b, size_t nb)
{
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    return na && nb && pa < pb + nb && pb < pa + na;
}

/* smelt_rt_model_run with fuzzed counts, arrays, pointers and sizes. */
static void call_run(session *s)
{
    const smelt_rt_module_info *info = s->info;
    int ni = fuzz_count(&s->r, info->num_inputs), no = fuzz_count(&s->r, info->num_outputs);
    bool null_in = rd_pick(&s->r, 16) == 0, null_in_sizes = rd_pick(&s->r, 16) == 0;
    bool null_out = rd_pick(&s->r, 16) == 0, null_out_sizes = rd_pick(&s->r, 16) == 0;
    const void *in[MAX_IO] = {0};
    void *out[MAX_IO] = {0};
    size_t in_b[MAX_IO] = {0}, out_b[MAX_IO] = {0};
    bool valid = ni == info->num_inputs && no == info->num_outputs &&
                 !(ni > 0 && (null_in || null_in_sizes)) && !(no > 0 && (null_out || null_out_sizes));
    for (int i = 0; i < ni && i < MAX_IO; i++) {
        const smelt_rt_io_info *io = i < info->num_inputs ? &info->inputs[i] : &info->inputs[0];
        size_t exact = io_bytes(io);
        in_b[i] = fuzz_size(&s->r, exact, io_elem(io));
        bool null = rd_pick(&s->r, 12) == 0;
        in[i] = null ? NULL : input_buffer(&s->bufs, in_b[i]);
        valid = valid && in_b[i] == exact && (in[i] || exact == 0);
    }
    for (int i = 0; i < no && i < MAX_IO; i++) {
        const smelt_rt_io_info *io = i < info->num_outputs ? &info->outputs[i] : &info->outputs[0];
        size_t exact = io_bytes(io);
        out_b[i] = fuzz_size(&s->r, exact, io_elem(io));
        unsigned how = rd_pick(&s->r, 16);
        out[i] = how == 0 ? NULL : output_buffer(&s->bufs, out_b[i]);
        if (how == 1 && ni > 0 && in[0] && out_b[i] <= in_b[0]) out[i] = (void *)in[0];
        valid = valid && out_b[i] == exact && (out[i] || exact == 0);
    }
    for (int o = 0; valid && o < no; o++) {
        for (int i = 0; i < ni; i++) valid = valid && !overlaps(out[o], out_b[o], in[i], in_b[i]);
        for (int k = 0; k < o; k++) valid = valid && !overlaps(out[o], out_b[o], out[k], out_b[k]);
    }
    smelt_rt_status st = smelt_rt_model_run(s->m, null_in ? NULL : in, null_in_sizes ? NULL : in_b,
                                            ni, null_out ? NULL : out, null_out_sizes ? NULL : out_b, no);
    expect(s->m, st, valid, "run");
    for (int i = 0; i < no && i < MAX_IO; i++) {
        bool aliased = ni > 0 && out[i] == in[0];
        if (out[i] && !aliased) check_output_buffer(out[i], out_b[i], st != SMELT_RT_OK);
    }
}

/* The harness's own name lookup, to judge the runtime's. */
static int find_name(const smelt_rt_io_info *list, int count, const char *name)
{
    for (int i = 0; name && i < count; i++)
        if (list[i].name && strcmp(list[i].name, name) == 0) return i;
    return -1;
}

static void call_set_input(session *s, bool by_name)
{
    const smelt_rt_module_info *info = s->info;
    int idx = fuzz_index(&s->r, info->num_inputs);
    const smelt_rt_io_info *io = &info->inputs[idx >= 0 && idx < info->num_inputs ? idx : 0];
    size_t bytes = fuzz_size(&s->r, io_bytes(io), io_elem(io));
    const void *data = rd_pick(&s->r, 12) == 0 ? NULL : input_buffer(&s->bufs, bytes);
    smelt_rt_status st;
    if (by_name) {
        char buf[80];
        const char *name = fuzz_name(&s->r, io->name, buf, sizeof buf);
        idx = find_name(info->inputs, info->num_inputs, name);
        if (smelt_rt_model_input_index(s->m, name) != idx) fail("input_index");
        st = smelt_rt_model_set_input(s->m, name, data, bytes);
    } else {
        st = smelt_rt_model_set_input_index(s->m, idx, data, bytes);
    }
    bool valid = idx >= 0 && idx < info->num_inputs;
    size_t exact = valid ? io_bytes(&info->inputs[idx]) : 0;
    valid = valid && bytes == exact && (data || exact == 0);
    expect(s->m, st, valid, by_name ? "set_input" : "set_input_index");
    if (valid) s->bound[idx] = true;
}

static void call_invoke(session *s)
{
    bool valid = true;
    for (int i = 0; i < s->info->num_inputs; i++)
        valid = valid && (s->bound[i] || io_bytes(&s->info->inputs[i]) == 0);
    expect(s->m, smelt_rt_model_invoke(s->m), valid, "invoke");
    if (valid) s->invoked = true;
}

static void call_get_output(session *s, bool by_name)
{
    const smelt_rt_module_info *info = s->info;
    int idx = fuzz_index(&s->r, info->num_outputs);
    bool want_bytes = rd_pick(&s->r, 4) != 0;
    size_t bytes = 12345;
    const void *p;
    if (by_name) {
        char buf[80];
        const char *real = info->outputs[idx >= 0 && idx < info->num_outputs ? idx : 0].name;
        const char *name = fuzz_name(&s->r, real, buf, sizeof buf);
        idx = find_name(info->outputs, info->num_outputs, name);
        if (smelt_rt_model_output_index(s->m, name) != idx) fail("output_index");
        p = smelt_rt_model_get_output(s->m, name, want_bytes ? &bytes : NULL);
    } else {
        p = smelt_rt_model_get_output_index(s->m, idx, want_bytes ? &bytes : NULL);
    }
    bool valid = idx >= 0 && idx < info->num_outputs && s->invoked;
    if (valid != (p != NULL)) fail(valid ? "valid get_output failed" : "invalid get_output succeeded");
    if (!valid && !*smelt_rt_model_error(s->m)) fail("get_output failed without a message");
    if (valid && want_bytes && bytes != io_bytes(&info->outputs[idx])) fail("get_output size");
}

/* ---- corrupted module descriptions ---- */

static void corrupt_io(recipe *r, smelt_rt_io_info *io)
{
    switch (rd_pick(r, 6)) {
    case 0: io->dtype = (int[]){0, 8, 14, 15, 17, -1, 99}[rd_pick(r, 7)]; break;
    case 1: io->rank = (int[]){-1, 9, INT_MAX, INT_MIN}[rd_pick(r, 4)]; break;
    case 2: io->dims[rd_pick(r, 2)] = (int64_t[]){-1, INT64_MIN, 0}[rd_pick(r, 3)]; break;
    case 3: /* a product that overflows size_t, never one that merely is large */
        io->rank = io->rank < 2 ? 2 : io->rank;
        io->dims[0] = io->dims[1] = INT64_MAX;
        break;
    case 4: io->name = NULL; break;
    default: break;
    }
}

/* smelt_rt_model_from_info on a corrupted copy of MULTI: a model or NULL
 * with a message, never a crash or a huge allocation. */
static void call_from_info(session *s)
{
    smelt_rt_io_info in[3], out[2];
    memcpy(in, MULTI_IN, sizeof in);
    memcpy(out, MULTI_OUT, sizeof out);
    smelt_rt_module_info info = MULTI;
    info.inputs = in, info.outputs = out;
    switch (rd_pick(&s->r, 8)) {
    case 0: info.abi_version = (int)rd_small(&s->r); break;
    case 1: info.num_inputs = (int[]){-1, 0, INT_MIN, INT_MAX, 70000}[rd_pick(&s->r, 5)]; break;
    case 2: info.inputs = rd_pick(&s->r, 2) ? NULL : in, info.outputs = NULL; break;
    case 3: info.arena_bytes = (int64_t[]){-1, INT64_MIN, 0}[rd_pick(&s->r, 3)]; break;
    case 4: info.weight_bytes = (int64_t[]){-1, 16, INT64_MIN}[rd_pick(&s->r, 3)]; break;
    case 5: info.run = NULL; break;
    case 6: corrupt_io(&s->r, &in[rd_pick(&s->r, 3)]); break;
    default: corrupt_io(&s->r, &out[rd_pick(&s->r, 2)]); break;
    }
    if (info.arena_bytes == 0) info.arena_bytes = 128; /* multi_run writes 128 bytes */
    char err[256] = "";
    smelt_rt_model *m = smelt_rt_model_from_info(&info, NULL, 1, err, sizeof err);
    if (!m && !err[0]) fail("from_info failed without a message");
    smelt_rt_model_free(m);
}

static void run_script(session *s)
{
    for (int call = 0; call < MAX_CALLS && s->r.n; call++) {
        switch (rd_pick(&s->r, 9)) {
        case 0: call_run(s); break;
        case 1: call_set_input(s, true); break;
        case 2: call_set_input(s, false); break;
        case 3: call_invoke(s); break;
        case 4: call_get_output(s, true); break;
        case 5: call_get_output(s, false); break;
        case 6: call_from_info(s); break;
        case 7: call_run(s); break;
        default: call_invoke(s); break;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static compiled cnn;
    if (!cnn.info) {
        const char *v = getenv("SMELT_FUZZ_VERBOSE");
        verbose = v && *v == '1';
        cnn = build_tiny_cnn();
    }
    session s = {.r = {data, size}};
    s.info = rd_pick(&s.r, 2) ? cnn.info : &MULTI;
    const unsigned char *weights = s.info == &MULTI ? NULL : cnn.lp->prog.weights;
    char err[256];
    s.m = smelt_rt_model_from_info(s.info, weights, 1, err, sizeof err);
    if (!s.m) fail(err);
    run_script(&s);
    smelt_rt_model_free(s.m);
    for (int i = 0; i < s.bufs.n; i++) free(s.bufs.raw[i]);
    return 0;
}
