/* GPU code generation: OpenCL C and CUDA from the same loop IR.
 *
 * Each function of the program (one fused group) becomes one or more
 * kernels: every statement at its root, under the temporaries allocated
 * there, is one kernel launch.  A root loop bound to blockIdx.x (schedule
 * step bind) gives the launch's blocks; loops bound to threadIdx.x inside
 * it the threads of a block (the largest such extent is the block size;
 * each thread loop runs `if (tid < extent)`).  A root statement with no
 * bound loop runs as one thread (correct, slow: the default GPU schedules
 * bind every stage that has data axes).  Code between thread loops (an
 * accumulator's initialisation, say) runs on thread 0, and a barrier
 * separates the parts of a block, so every thread sees what another wrote.
 * The thread's own code is the C emitter's (c_emit.c, c_expr.c): kernels of
 * the two languages differ only in the small table below (qualifiers, index
 * builtins, barrier) and in the host code that launches them.
 *
 * Memory: the weights, the activation arena and each model input and
 * output are device buffers; temporaries at a function's root live in a
 * workspace after the arena on the device; temporaries inside a thread are
 * private arrays.  Inputs are copied to the device and outputs back at the
 * model's edges only, once per run.  The weights are copied once.
 *
 * Refused with an error naming the function (its nodes) and the problem,
 * never run elsewhere: micro-kernel calls (tensorize), run-time data checks,
 * float16/bfloat16/low-bit arithmetic, misplaced bound loops, a thread
 * loop whose extent is not a constant, blocks over 1024 threads.
 *
 * A package for a GPU target: model.c (C99: the module info and the model.h
 * API, calling model_gpu_run_) and the device file, model_gpu.c (OpenCL:
 * the kernels as a string built at the first run, host code on the OpenCL
 * API) or model_gpu.cu (CUDA: kernels and host code for nvcc).
 */
#include <string.h>

#include "codegen/c_internal.h"

/* What model_gpu_run_ returns when the device API failed (its message is on
 * stderr); runtime/model.c reports it as such. */
#define GPU_RUN_FAILED "SMELT_RT_RUN_DEVICE_FAILED"
#define GPU_MAX_THREADS 1024 /* CUDA's limit per block; OpenCL devices say theirs */
#define GPU_MAX_BLOCKS ((int64_t)0x7fffffff)

typedef struct gpu_lang {
    cg_gpu_lang id;
    const char *kernel_decl; /* before the kernel's name */
    const char *block_id, *thread_id;
    const char *barrier;
    const char *fn_qual;     /* helper functions */
    const char *prelude;     /* types and macros the emitted C names */
    const char *check_fail;  /* smelt_gpu_check_fail_: the first failing thread records */
    const char *shared;      /* memory of a block: OpenCL __local, CUDA __shared__ */
    const char *unroll;      /* SMELT_UNROLL(n) */
} gpu_lang;

static const char opencl_prelude[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "typedef char int8_t;\ntypedef uchar uint8_t;\ntypedef short int16_t;\n"
    "typedef ushort uint16_t;\ntypedef int int32_t;\ntypedef uint uint32_t;\n"
    "typedef long int64_t;\ntypedef ulong uint64_t;\n"
    "#define INT64_C(x) (x##L)\n#define UINT64_C(x) (x##UL)\n"
    "#define INT8_MIN CHAR_MIN\n#define INT8_MAX CHAR_MAX\n#define UINT8_MAX UCHAR_MAX\n"
    "#define INT16_MIN SHRT_MIN\n#define INT16_MAX SHRT_MAX\n#define UINT16_MAX USHRT_MAX\n"
    "#define INT32_MIN INT_MIN\n#define INT32_MAX INT_MAX\n#define UINT32_MAX UINT_MAX\n"
    "#define INT64_MIN LONG_MIN\n#define INT64_MAX LONG_MAX\n#define UINT64_MAX ULONG_MAX\n"
    "/* the C library's float names: OpenCL's built-ins are overloaded */\n"
    "#define expf exp\n#define logf log\n#define sqrtf sqrt\n#define tanhf tanh\n"
    "#define erff erf\n#define powf pow\n#define fabsf fabs\n#define floorf floor\n"
    "#define ceilf ceil\n#define rintf rint\n#define sinf sin\n#define cosf cos\n"
    "#define fmodf fmod\n#define tanf tan\n#define asinf asin\n#define acosf acos\n"
    "#define atanf atan\n#define sinhf sinh\n#define coshf cosh\n#define asinhf asinh\n"
    "#define acoshf acosh\n#define atanhf atanh\n#define nextafterf nextafter\n";

static const char cuda_prelude[] =
    "#include <math.h>\n#include <stdint.h>\n";

static const char common_macros[] =
    "#define SMELT_ALIGN64 __attribute__((aligned(64)))\n"
    "#define SMELT_IVDEP\n";
/* loops the schedule unrolls but codegen does not copy (too large) */
static const char opencl_unroll[] = "#define SMELT_UNROLL(n)\n\n";
static const char cuda_unroll[] =
    "#define SMELT_PRAGMA_(x) _Pragma(#x)\n#define SMELT_UNROLL(n) SMELT_PRAGMA_(unroll n)\n\n";

/* A failed data check: r = {flag, site, value, position} on the device; the
 * first thread to set the flag records its site, value and position (not
 * the lowest position as on CPUs: any failing element is reported). */
static const char opencl_check_fail[] =
    "static inline void smelt_gpu_check_fail_(__global int64_t *r, int site, int64_t value, int64_t pos)\n{\n"
    "    if (atomic_cmpxchg((volatile __global int *)r, 0, 1) == 0) {\n"
    "        r[1] = site;\n        r[2] = value;\n        r[3] = pos;\n    }\n}\n";
static const char cuda_check_fail[] =
    "static __device__ inline void smelt_gpu_check_fail_(int64_t *r, int site, int64_t value, int64_t pos)\n{\n"
    "    if (atomicCAS((unsigned long long *)r, 0ull, 1ull) == 0ull) {\n"
    "        r[1] = site;\n        r[2] = value;\n        r[3] = pos;\n    }\n}\n";

static const gpu_lang langs[] = {
    {CG_GPU_OPENCL, "__kernel void", "((int64_t)get_group_id(0))", "((int64_t)get_local_id(0))",
     "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);", "static inline", opencl_prelude,
     opencl_check_fail, "__local", opencl_unroll},
    {CG_GPU_CUDA, "__global__ void", "((int64_t)blockIdx.x)", "((int64_t)threadIdx.x)",
     "__syncthreads();", "static __device__ inline", cuda_prelude, cuda_check_fail, "__shared__",
     cuda_unroll},
};

static const gpu_lang *lang_of(const cg_target *t)
{
    for (size_t i = 0; i < SMELT_ARRAY_LEN(langs); i++)
        if (t && langs[i].id == t->gpu) return &langs[i];
    return NULL;
}

/* ---- the plan: kernels per function ---- */

typedef struct gpu_kernel {
    int func;
    int index;           /* within its function: f<func>_k<index> */
    int64_t blocks, threads;
} gpu_kernel;

/* A temporary at a function's root: in the device workspace. */
typedef struct gpu_temp {
    const ir_buffer *buf;
    int number;          /* t<number> */
    int64_t offset;      /* bytes into the workspace */
    int previous;        /* the name binding it shadows */
} gpu_temp;

typedef struct gpu_emitter {
    cg_emitter e;
    const gpu_lang *lang;
    const ir_func *func;
    smelt_strbuf kernels; /* kernel source */
    gpu_kernel *k;
    int n_k, cap_k;
    int *first_k, *n_func_k; /* per function */
    gpu_temp temps[64];
    int n_temps;
    int64_t ws_used, ws_peak; /* workspace of the current function */
    int64_t max_ws;           /* over functions */
    int64_t threads;          /* of the kernel being emitted */
    smelt_strbuf shared_decls; /* the kernel's block-shared arrays (kernel scope) */
    int64_t shared_bytes;
    /* the kernel's shared arrays by buffer (a tile copied by partitioning
     * into a loop's main part and tail is declared once) */
    const ir_buffer *shared_buf[64];
    int shared_num[64];
    int n_shared;
    /* barriers in thread code: where the last one ended (no second one
     * right after it), and one owed after a tile's copy */
    const smelt_strbuf *barrier_out;
    size_t barrier_at;
    bool barrier_pending;
    int in_copy;               /* inside a tile's copy loop */
} gpu_emitter;

/* Shared memory a kernel may declare: the target's (CUDA's 48 KiB of
 * static shared memory, OpenCL's minimum local memory, 32 KiB). */
static int64_t max_shared_bytes(const gpu_emitter *g)
{
    int64_t n = g->e.target ? g->e.target->hw.gpu_shared_bytes : 0;
    return n > 0 ? n : (int64_t)32 << 10;
}

static smelt_status gfail(gpu_emitter *g, smelt_status code, const char *what)
{
    const ir_func *f = g->func;
    return cg_fail(&g->e, code, "target '%s': function %s (%s): %s", g->e.target->name,
                   f && f->name ? f->name : "?", f && f->comment ? f->comment : "", what);
}

static bool push_kernel(gpu_emitter *g, int func, int64_t blocks, int64_t threads)
{
    if (g->n_k == g->cap_k) {
        int ncap = g->cap_k ? g->cap_k * 2 : 32;
        gpu_kernel *n = smelt_realloc(g->k, sizeof *n * (size_t)g->cap_k, sizeof *n * (size_t)ncap);
        if (!n) return cg_fail(&g->e, SMELT_ERR_NOMEM, "codegen: out of memory"), false;
        g->k = n;
        g->cap_k = ncap;
    }
    g->k[g->n_k++] = (gpu_kernel){func, g->n_func_k[func]++, blocks, threads};
    return true;
}

/* ---- analysis of a kernel's statement ---- */

static bool has_thread_loop(const ir_stmt *s)
{
    if (!s) return false;
    switch (s->kind) {
    case IR_STMT_FOR:
        return s->for_.kind == IR_FOR_GPU_THREAD || has_thread_loop(s->for_.body);
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++)
            if (has_thread_loop(s->seq.items[i])) return true;
        return false;
    case IR_STMT_LET: return has_thread_loop(s->let.body);
    case IR_STMT_ALLOCATE: return has_thread_loop(s->alloc.body);
    case IR_STMT_IF: return has_thread_loop(s->if_.then_) || has_thread_loop(s->if_.else_);
    default: return false;
    }
}

/* The largest threadIdx.x extent in s (1 when none); false, with an error,
 * when one is not a constant or too large. */
static bool threads_of(gpu_emitter *g, const ir_stmt *s, int64_t *threads)
{
    if (!s) return true;
    switch (s->kind) {
    case IR_STMT_FOR:
        if (s->for_.kind == IR_FOR_GPU_THREAD) {
            const ir_expr *ext = s->for_.extent;
            char msg[256];
            if (ext->kind != IR_INT || ext->i < 0 || ext->i > GPU_MAX_THREADS) {
                snprintf(msg, sizeof msg, "loop '%s' is bound to threadIdx.x but its extent is %s "
                         "(a constant of at most %d is needed)", s->for_.var->name,
                         ext->kind == IR_INT ? "too large" : "not a constant", GPU_MAX_THREADS);
                gfail(g, SMELT_ERR_UNSUPPORTED, msg);
                return false;
            }
            if (ext->i > *threads) *threads = ext->i;
        }
        return threads_of(g, s->for_.body, threads);
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++)
            if (!threads_of(g, s->seq.items[i], threads)) return false;
        return true;
    case IR_STMT_LET: return threads_of(g, s->let.body, threads);
    case IR_STMT_ALLOCATE: return threads_of(g, s->alloc.body, threads);
    case IR_STMT_IF: return threads_of(g, s->if_.then_, threads) && threads_of(g, s->if_.else_, threads);
    default: return true;
    }
}

/* ---- kernel text ---- */

static char *text_of(gpu_emitter *g, const ir_expr *x)
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    cg_expr(&g->e, x, CG_INDEX, &sb);
    char *s = sb.failed ? NULL : smelt_strdup(smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
    if (!s) cg_fail(&g->e, SMELT_ERR_NOMEM, "codegen: out of memory");
    return s;
}

/* `const int64_t vN = min + base;` binding s's loop variable; returns the
 * previous binding for cg_unbind_var. */
static int bind_loop_var(gpu_emitter *g, const ir_stmt *s, const char *base)
{
    char *mn = text_of(g, s->for_.min);
    int id;
    int prev = cg_bind_var(&g->e, s->for_.var, &id);
    cg_line(&g->e, "const %s v%d = %s + %s;", cg_value_type(s->for_.var->dtype), id, mn ? mn : "0",
            base);
    smelt_free(mn);
    return prev;
}

static void barrier(gpu_emitter *g)
{
    if (g->threads > 1) cg_line(&g->e, "%s", g->lang->barrier);
}

/* A barrier in thread code, unless one was the last thing emitted. */
static void thread_barrier(gpu_emitter *g)
{
    cg_emitter *e = &g->e;
    g->barrier_pending = false;
    if (g->threads <= 1 || (g->barrier_out == e->out && e->out->len == g->barrier_at)) return;
    cg_line(e, "%s", g->lang->barrier);
    g->barrier_out = e->out;
    g->barrier_at = e->out->len;
}

/* The kernel-scope array of shared buffer b (declared at its first
 * allocation); its number, or -1 after an error. */
static int shared_array(gpu_emitter *g, const ir_buffer *b)
{
    for (int i = 0; i < g->n_shared; i++)
        if (g->shared_buf[i] == b) return g->shared_num[i];
    int64_t bytes = cg_buffer_bytes(b), limit = max_shared_bytes(g);
    const char *type = cg_storage_type(b->dtype);
    if (bytes < 0 || !type || g->shared_bytes + bytes > limit ||
        g->n_shared == (int)SMELT_ARRAY_LEN(g->shared_buf)) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s '%s' needs %lld bytes of the block's shared memory (with the "
                 "kernel's other shared arrays %lld), more than the %lld bytes per block of the target",
                 b->scope == IR_SCOPE_SHARED ? "the cache_read tile" : "the temporary shared by the threads",
                 b->name, (long long)bytes, (long long)(g->shared_bytes + bytes), (long long)limit);
        gfail(g, SMELT_ERR_UNSUPPORTED, msg);
        return -1;
    }
    int number = g->e.next_temp++;
    int64_t elems = bytes / (int64_t)smelt_dtype_size(b->dtype);
    /* OpenCL wants __local arrays at the kernel's scope */
    smelt_strbuf_printf(&g->shared_decls, "    %s %s t%d[%lld];\n", g->lang->shared, type, number,
                        (long long)(elems > 0 ? elems : 1));
    g->shared_bytes += bytes;
    g->shared_buf[g->n_shared] = b;
    g->shared_num[g->n_shared++] = number;
    return number;
}

/* ---- thread code: a tile's copy by all of the block's threads ---- */

/* Thread code's statements that gpu_emit.c emits itself (cg_emitter's
 * gpu_stmt hook): a threadIdx.x loop inside the thread loop is the copy of
 * a cache_read tile, run by every thread of the block (its own index
 * `tid_` again) between barriers; a shared buffer is declared at the
 * kernel's scope.  A barrier owed after a copy is placed before the next
 * statement. */
static bool thread_stmt(cg_emitter *e, const ir_stmt *s)
{
    gpu_emitter *g = (gpu_emitter *)e;
    if (s->kind == IR_STMT_ALLOCATE && s->alloc.buf->scope == IR_SCOPE_SHARED) {
        int number = shared_array(g, s->alloc.buf);
        if (number < 0) return true;
        int prev = cg_add_buf(e, s->alloc.buf, false, false, number);
        cg_stmt(e, s->alloc.body);
        cg_remove_buf(e, s->alloc.buf, prev);
        return true;
    }
    if (s->kind == IR_STMT_FOR && s->for_.kind == IR_FOR_GPU_THREAD) {
        const ir_expr *ext = s->for_.extent;
        if (g->in_copy || ext->kind != IR_INT || ext->i > g->threads) {
            char msg[300];
            snprintf(msg, sizeof msg, "loop '%s' is bound to threadIdx.x inside %s", s->for_.var->name,
                     g->in_copy ? "a tile's copy (nested threadIdx.x loops)"
                                : "a thread loop but its extent is not a constant within the block size");
            gfail(g, SMELT_ERR_UNSUPPORTED, msg);
            return true;
        }
        /* the tile's readers from before are done (after a copy and nothing
         * else, the barrier before that copy did it) */
        if (!g->barrier_pending) thread_barrier(g);
        g->barrier_pending = false;
        bool all = ext->i == g->threads;
        if (!all) cg_line(e, "if (tid_ < %lld) {", (long long)ext->i);
        else cg_line(e, "{");
        e->indent++;
        int prev = bind_loop_var(g, s, "tid_");
        g->in_copy++;
        cg_stmt(e, s->for_.body);
        g->in_copy--;
        cg_unbind_var(e, s->for_.var, prev);
        e->indent--;
        cg_line(e, "}");
        g->barrier_pending = true; /* the copy is complete before anyone reads it */
        return true;
    }
    if (g->barrier_pending && s->kind != IR_STMT_SEQ && s->kind != IR_STMT_ALLOCATE) thread_barrier(g);
    return false;
}

/* The loops and conditions around a tile's copy inside thread loop t must
 * be the same for every thread (each reaches the copy's barriers): no trip
 * count or condition on the thread's index or values computed from it. */
typedef struct uniform_walk {
    const ir_var *dep[64];
    int n_dep;
    const char *bad; /* the loop or "a condition" that depends on the thread */
} uniform_walk;

static bool depends(const uniform_walk *w, const ir_expr *x)
{
    for (int i = 0; i < w->n_dep; i++)
        if (ir_expr_uses_var(x, w->dep[i])) return true;
    return false;
}

static void check_uniform(uniform_walk *w, const ir_stmt *s)
{
    if (!s || w->bad || !has_thread_loop(s)) return;
    switch (s->kind) {
    case IR_STMT_FOR:
        if (depends(w, s->for_.min) || depends(w, s->for_.extent)) {
            w->bad = s->for_.var->name;
            return;
        }
        if (s->for_.kind != IR_FOR_GPU_THREAD) check_uniform(w, s->for_.body);
        return;
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++) check_uniform(w, s->seq.items[i]);
        return;
    case IR_STMT_LET:
        if (depends(w, s->let.value)) {
            if (w->n_dep == (int)SMELT_ARRAY_LEN(w->dep)) {
                w->bad = s->let.var->name;
                return;
            }
            w->dep[w->n_dep++] = s->let.var;
        }
        check_uniform(w, s->let.body);
        return;
    case IR_STMT_ALLOCATE: check_uniform(w, s->alloc.body); return;
    case IR_STMT_IF:
        if (depends(w, s->if_.cond)) {
            w->bad = "a condition";
            return;
        }
        check_uniform(w, s->if_.then_);
        check_uniform(w, s->if_.else_);
        return;
    default: return;
    }
}

/* A thread loop holding tile copies: all the block's threads run it. */
static bool check_copy_loop(gpu_emitter *g, const ir_stmt *s)
{
    char msg[400];
    const ir_expr *ext = s->for_.extent;
    if (!ir_is_int(s->for_.min, 0) || ext->kind != IR_INT || ext->i != g->threads) {
        snprintf(msg, sizeof msg, "thread loop '%s' holds a cache_read tile's copy, so every thread of "
                 "the block must run it, but it covers %s of the block's %lld threads",
                 s->for_.var->name, ext->kind == IR_INT ? "part" : "an unknown part",
                 (long long)g->threads);
        gfail(g, SMELT_ERR_UNSUPPORTED, msg);
        return false;
    }
    uniform_walk w = {.dep = {s->for_.var}, .n_dep = 1};
    check_uniform(&w, s->for_.body);
    if (w.bad) {
        snprintf(msg, sizeof msg, "inside thread loop '%s', %s%s%s around a cache_read tile's copy "
                 "depends on the thread, so the threads would not all reach its barriers",
                 s->for_.var->name, strcmp(w.bad, "a condition") ? "loop '" : "", w.bad,
                 strcmp(w.bad, "a condition") ? "'" : "");
        gfail(g, SMELT_ERR_UNSUPPORTED, msg);
        return false;
    }
    return true;
}

static void block_stmt(gpu_emitter *g, const ir_stmt *s);

/* A loop that holds thread loops: every thread runs it (same trip count),
 * with a barrier before the next iteration. */
static void block_for(gpu_emitter *g, const ir_stmt *s)
{
    cg_emitter *e = &g->e;
    char *mn = text_of(g, s->for_.min), *ext = text_of(g, s->for_.extent);
    int id;
    int prev = cg_bind_var(e, s->for_.var, &id);
    cg_line(e, "for (%s v%d = %s; v%d < %s + %s; ++v%d) {", cg_value_type(s->for_.var->dtype), id,
            mn ? mn : "0", id, mn ? mn : "0", ext ? ext : "0", id);
    e->indent++;
    block_stmt(g, s->for_.body);
    barrier(g);
    e->indent--;
    cg_line(e, "}");
    cg_unbind_var(e, s->for_.var, prev);
    smelt_free(mn);
    smelt_free(ext);
}

/* A statement of a block's code (outside thread loops). */
static void block_stmt(gpu_emitter *g, const ir_stmt *s)
{
    cg_emitter *e = &g->e;
    if (!s || e->status != SMELT_OK) return;
    if (!has_thread_loop(s)) {
        if (g->threads <= 1) {
            cg_stmt(e, s);
            return;
        }
        cg_line(e, "if (tid_ == 0) {"); /* once per block */
        e->indent++;
        cg_stmt(e, s);
        e->indent--;
        cg_line(e, "}");
        return;
    }
    switch (s->kind) {
    case IR_STMT_SEQ:
        for (int i = 0; i < s->seq.n; i++) {
            if (i) barrier(g);
            block_stmt(g, s->seq.items[i]);
        }
        return;
    case IR_STMT_FOR:
        if (s->for_.kind == IR_FOR_GPU_THREAD) {
            bool copies = has_thread_loop(s->for_.body); /* cache_read tiles */
            if (copies && !check_copy_loop(g, s)) return;
            char *ext = text_of(g, s->for_.extent);
            if (copies) cg_line(e, "{"); /* every thread: the copies' barriers */
            else cg_line(e, "if (tid_ < %s) {", ext ? ext : "0");
            smelt_free(ext);
            e->indent++;
            int prev = bind_loop_var(g, s, "tid_");
            cg_stmt(e, s->for_.body); /* thread_stmt emits the copies */
            if (g->barrier_pending) thread_barrier(g);
            cg_unbind_var(e, s->for_.var, prev);
            e->indent--;
            cg_line(e, "}");
        } else if (s->for_.kind == IR_FOR_GPU_BLOCK) {
            cg_stmt(e, s); /* fails: not the kernel's outermost loop */
        } else {
            block_for(g, s);
        }
        return;
    case IR_STMT_LET: {
        char *val = text_of(g, s->let.value);
        int id;
        int prev = cg_bind_var(e, s->let.var, &id);
        cg_line(e, "{");
        e->indent++;
        cg_line(e, "const %s v%d = %s;", cg_value_type(s->let.var->dtype), id, val ? val : "0");
        block_stmt(g, s->let.body);
        e->indent--;
        cg_line(e, "}");
        cg_unbind_var(e, s->let.var, prev);
        smelt_free(val);
        return;
    }
    case IR_STMT_IF: {
        char *cond = text_of(g, s->if_.cond);
        cg_line(e, "if (%s) {", cond ? cond : "0");
        smelt_free(cond);
        e->indent++;
        block_stmt(g, s->if_.then_);
        e->indent--;
        if (s->if_.else_) {
            cg_line(e, "} else {");
            e->indent++;
            block_stmt(g, s->if_.else_);
            e->indent--;
        }
        cg_line(e, "}");
        return;
    }
    case IR_STMT_ALLOCATE: { /* written by some threads, read by others: the block's memory */
        const ir_buffer *b = s->alloc.buf;
        int number = shared_array(g, b);
        if (number < 0) return;
        int prev = cg_add_buf(e, b, false, false, number);
        block_stmt(g, s->alloc.body);
        cg_remove_buf(e, b, prev);
        return;
    }
    default: cg_fail(e, SMELT_ERR_INTERNAL, "codegen: statement kind %d holds a thread loop", (int)s->kind);
    }
}

static void kernel_signature(gpu_emitter *g, const char *name)
{
    const ir_func *f = g->func;
    smelt_strbuf *o = &g->kernels;
    smelt_strbuf_printf(o, "%s %s(", g->lang->kernel_decl, name);
    for (int i = 0; i < f->n_params; i++) {
        const char *cq = cg_param_is_const(f->params[i]) ? "const " : "";
        if (g->lang->id == CG_GPU_OPENCL) /* buffer + byte offset: no pointer arithmetic on cl_mem */
            smelt_strbuf_printf(o, "__global %suchar *b%d, long o%d, ", cq, i, i);
        else
            smelt_strbuf_printf(o, "%s%s *p%d, ", cq, cg_storage_type(f->params[i]->dtype), i);
    }
    smelt_strbuf_append(o, g->lang->id == CG_GPU_OPENCL
                               ? "__global uchar *rb_, long ro_, __global uchar *wsb_, long wso_)\n{\n"
                               : "int64_t *rterr_, unsigned char *ws_)\n{\n");
}

/* Whether the kernel just emitted named root temporary i (nvcc warns
 * about a pointer set and never used, even with a (void) cast). */
static bool temp_used(gpu_emitter *g, int i)
{
    int idx = -1;
    return cg_ptrmap_get(&g->e.buf_ids, g->temps[i].buf, &idx) && idx >= 0 && g->e.bufs[idx].used;
}

static void temps_unused(gpu_emitter *g)
{
    int idx = -1;
    for (int i = 0; i < g->n_temps; i++)
        if (cg_ptrmap_get(&g->e.buf_ids, g->temps[i].buf, &idx) && idx >= 0) g->e.bufs[idx].used = false;
}

/* The parameters and the root temporaries the kernel uses as typed pointers. */
static void kernel_pointers(gpu_emitter *g)
{
    const ir_func *f = g->func;
    smelt_strbuf *o = &g->kernels;
    bool cl = g->lang->id == CG_GPU_OPENCL;
    const char *as = cl ? "__global " : "";
    for (int i = 0; i < f->n_params && cl; i++) {
        const char *cq = cg_param_is_const(f->params[i]) ? "const " : "";
        const char *t = cg_storage_type(f->params[i]->dtype);
        smelt_strbuf_printf(o, "    %s%s%s *p%d = (%s%s%s *)(b%d + o%d);\n", as, cq, t, i, as, cq, t, i, i);
    }
    if (cl)
        smelt_strbuf_append(o, "    __global uchar *ws_ = wsb_ + wso_;\n"
                               "    __global int64_t *rterr_ = (__global int64_t *)(rb_ + ro_);\n");
    smelt_strbuf_append(o, "    (void)rterr_;\n");
    for (int i = 0; i < f->n_params; i++) smelt_strbuf_printf(o, "    (void)p%d;\n", i);
    smelt_strbuf_append(o, "    (void)ws_;\n");
    for (int i = 0; i < g->n_temps; i++) {
        if (!temp_used(g, i)) continue;
        const char *t = cg_storage_type(g->temps[i].buf->dtype);
        smelt_strbuf_printf(o, "    %s%s *t%d = (%s%s *)(ws_ + %lld);\n", as, t, g->temps[i].number,
                            as, t, (long long)g->temps[i].offset);
    }
}

/* One root statement of the current function as a kernel. */
static void emit_kernel(gpu_emitter *g, const ir_stmt *s)
{
    cg_emitter *e = &g->e;
    int64_t blocks = 1, threads = 1;
    bool block_loop = s->kind == IR_STMT_FOR && s->for_.kind == IR_FOR_GPU_BLOCK;
    if (block_loop) {
        const ir_expr *ext = s->for_.extent;
        if (ext->kind != IR_INT || ext->i < 0 || ext->i > GPU_MAX_BLOCKS) {
            char msg[256];
            snprintf(msg, sizeof msg, "loop '%s' is bound to blockIdx.x but its extent is not a "
                     "constant in [0, 2^31)", s->for_.var->name);
            gfail(g, SMELT_ERR_UNSUPPORTED, msg);
            return;
        }
        blocks = ext->i;
    }
    if (!threads_of(g, block_loop ? s->for_.body : s, &threads)) return;
    if (blocks == 0) return; /* an empty loop: nothing to launch */
    int fi = e->func_index;
    if (!push_kernel(g, fi, blocks, threads)) return;
    char name[48];
    snprintf(name, sizeof name, "f%d_k%d", fi, g->k[g->n_k - 1].index);
    smelt_strbuf_printf(&g->kernels, "/* %s: %lld block%s of %lld thread%s */\n", name,
                        (long long)blocks, blocks == 1 ? "" : "s", (long long)threads,
                        threads == 1 ? "" : "s");
    /* the body first: the declarations depend on what it uses */
    smelt_strbuf body;
    smelt_strbuf_init(&body);
    smelt_strbuf_fini(&g->shared_decls);
    smelt_strbuf_init(&g->shared_decls);
    g->shared_bytes = 0;
    g->n_shared = 0;
    g->barrier_out = NULL;
    g->barrier_pending = false;
    g->in_copy = 0;
    temps_unused(g);
    smelt_strbuf *saved = e->out;
    e->out = &body;
    e->indent = 1;
    g->threads = threads;
    cg_line(e, "const int64_t tid_ = %s;", g->lang->thread_id);
    cg_line(e, "(void)tid_;");
    if (block_loop) {
        int prev = bind_loop_var(g, s, g->lang->block_id);
        block_stmt(g, s->for_.body);
        cg_unbind_var(e, s->for_.var, prev);
    } else {
        block_stmt(g, s);
    }
    e->out = saved;
    kernel_signature(g, name);
    kernel_pointers(g);
    smelt_strbuf_appendn(&g->kernels, g->shared_decls.data ? g->shared_decls.data : "",
                         g->shared_decls.len);
    smelt_strbuf_appendn(&g->kernels, body.data ? body.data : "", body.len);
    smelt_strbuf_append(&g->kernels, "}\n\n");
    cg_sb_done(e, &body);
}

/* A function's root: temporaries (into the workspace) around kernels. */
static void emit_root(gpu_emitter *g, const ir_stmt *s)
{
    cg_emitter *e = &g->e;
    if (!s || e->status != SMELT_OK) return;
    if (s->kind == IR_STMT_SEQ) {
        for (int i = 0; i < s->seq.n; i++) emit_root(g, s->seq.items[i]);
        return;
    }
    if (s->kind != IR_STMT_ALLOCATE) {
        emit_kernel(g, s);
        return;
    }
    const ir_buffer *b = s->alloc.buf;
    int64_t bytes = cg_buffer_bytes(b);
    if (bytes < 0 || !cg_storage_type(b->dtype) || g->n_temps == (int)SMELT_ARRAY_LEN(g->temps)) {
        gfail(g, SMELT_ERR_UNSUPPORTED, "a temporary with a bad type or shape, or too many temporaries");
        return;
    }
    int64_t size = (bytes + 63) / 64 * 64;
    gpu_temp *t = &g->temps[g->n_temps++];
    t->buf = b;
    t->number = e->next_temp++;
    t->offset = g->ws_used;
    t->previous = cg_add_buf(e, b, false, false, t->number);
    g->ws_used += size;
    if (g->ws_used > g->ws_peak) g->ws_peak = g->ws_used;
    emit_root(g, s->alloc.body);
    g->ws_used -= size;
    g->n_temps--;
    cg_remove_buf(e, b, t->previous);
}

static void emit_function(gpu_emitter *g, const ir_func *f, int index)
{
    cg_emitter *e = &g->e;
    g->func = f;
    g->first_k[index] = g->n_k;
    if (!cg_begin_function(e, f, index)) return;
    e->gpu = true;
    e->gpu_stmt = thread_stmt;
    e->in_task = true;
    g->ws_used = g->ws_peak = 0;
    g->n_temps = 0;
    smelt_strbuf_printf(&g->kernels, "/* function f_%d: ", index);
    cg_append_comment_text(&g->kernels, f->name, 80);
    if (f->comment && *f->comment) {
        smelt_strbuf_append(&g->kernels, "\n * ");
        cg_append_comment_text(&g->kernels, f->comment, 400);
    }
    smelt_strbuf_append(&g->kernels, " */\n");
    emit_root(g, f->body);
    const char *missing = e->status == SMELT_OK ? cg_gpu_unsupported_helper(e) : NULL;
    if (missing) {
        char msg[160];
        snprintf(msg, sizeof msg, "it needs %s, which GPU kernels do not support yet", missing);
        gfail(g, SMELT_ERR_UNSUPPORTED, msg);
    }
    if (g->ws_peak > g->max_ws) g->max_ws = g->ws_peak;
    e->gpu = false;
    e->gpu_stmt = NULL;
    e->in_task = false;
}

static void gpu_fini(gpu_emitter *g)
{
    cg_emitter_fini(&g->e);
    smelt_strbuf_fini(&g->shared_decls);
    smelt_strbuf_fini(&g->kernels);
    smelt_free(g->k);
    smelt_free(g->first_k);
    smelt_free(g->n_func_k);
}

/* Kernels of every called function (the plan in g, the source in
 * g->kernels, the prelude before it in *src). */
static smelt_status plan_kernels(gpu_emitter *g, smelt_ctx *ctx, const ir_program *p,
                                 const cg_target *t, const cg_emit_options *opts, smelt_strbuf *src)
{
    memset(g, 0, sizeof *g);
    cg_emitter_init(&g->e, ctx, p, t, opts);
    smelt_strbuf_init(&g->kernels);
    smelt_strbuf_init(&g->shared_decls);
    g->lang = lang_of(t);
    if (!g->lang) return cg_fail(&g->e, SMELT_ERR_ARG, "codegen: target '%s' is not a GPU target",
                                 t ? t->name : "?");
    int nf = p->n_funcs > 0 ? p->n_funcs : 1;
    g->first_k = smelt_calloc((size_t)nf, sizeof *g->first_k);
    g->n_func_k = smelt_calloc((size_t)nf, sizeof *g->n_func_k);
    if (!g->first_k || !g->n_func_k) return cg_fail(&g->e, SMELT_ERR_NOMEM, "codegen: out of memory");
    if (!cg_check_program(&g->e)) return g->e.status;
    for (int i = 0; i < p->n_funcs && g->e.status == SMELT_OK; i++)
        if (cg_is_called(p, p->funcs[i])) emit_function(g, p->funcs[i], i);
    if (g->e.status != SMELT_OK) return g->e.status;
    smelt_strbuf_append(src, g->lang->prelude);
    smelt_strbuf_append(src, common_macros);
    smelt_strbuf_append(src, g->lang->unroll);
    cg_gpu_prelude_helpers(&g->e, g->lang->fn_qual, src);
    if (g->e.gpu_checks) smelt_strbuf_append(src, g->lang->check_fail);
    smelt_strbuf_append(src, "\n");
    smelt_strbuf_appendn(src, g->kernels.data ? g->kernels.data : "", g->kernels.len);
    if (src->failed || g->kernels.failed) cg_fail(&g->e, SMELT_ERR_NOMEM, "codegen: out of memory");
    return g->e.status;
}

/* ---- host code ---- */

/* The device arena: the planned arena, then the largest workspace. */
static int64_t ws_offset(const ir_program *p) { return (p->arena_bytes + 63) / 64 * 64; }

static int64_t io_bytes(const ir_io_desc *d)
{
    int64_t n = (int64_t)smelt_dtype_size(d->dtype);
    for (int i = 0; i < d->rank; i++) n *= d->dims[i];
    return n;
}

static void emit_sizes(const gpu_emitter *g, smelt_strbuf *o)
{
    const ir_program *p = g->e.prog;
    smelt_strbuf_printf(o, "#define SMELT_N_IN %d\n#define SMELT_N_OUT %d\n#define SMELT_N_KERNELS %d\n",
                        p->n_inputs, p->n_outputs, g->n_k);
    smelt_strbuf_printf(o, "#define SMELT_WEIGHT_BYTES ((size_t)%lld)\n", (long long)p->weight_bytes);
    smelt_strbuf_printf(o, "#define SMELT_DEVICE_ARENA_BYTES ((size_t)%lld) /* arena + workspace */\n",
                        (long long)(ws_offset(p) + g->max_ws));
    smelt_strbuf_append(o, "static const size_t smelt_in_bytes_[SMELT_N_IN + 1] = {");
    for (int i = 0; i < p->n_inputs; i++) smelt_strbuf_printf(o, "%lld, ", (long long)io_bytes(&p->inputs[i]));
    smelt_strbuf_append(o, "0};\nstatic const size_t smelt_out_bytes_[SMELT_N_OUT + 1] = {");
    for (int i = 0; i < p->n_outputs; i++)
        smelt_strbuf_printf(o, "%lld, ", (long long)io_bytes(&p->outputs[i]));
    smelt_strbuf_append(o, "0};\n\n");
}

/* Where a slot's data is on the device: a buffer (OpenCL: its cl_mem;
 * CUDA: its base pointer) and a byte offset. */
static void slot_place(const gpu_lang *l, const ir_slot *s, char *base, size_t cap, int64_t *off)
{
    const char *st = l->id == CG_GPU_OPENCL ? "smelt_cl_" : "smelt_cu_";
    *off = 0;
    switch (s->kind) {
    case IR_SLOT_INPUT: snprintf(base, cap, "%s.in[%d]", st, s->index); break;
    case IR_SLOT_OUTPUT: snprintf(base, cap, "%s.out[%d]", st, s->index); break;
    case IR_SLOT_WEIGHT: snprintf(base, cap, "%s.weights", st); *off = s->offset; break;
    case IR_SLOT_ARENA: snprintf(base, cap, "%s.arena", st); *off = s->offset; break;
    /* never read: any valid buffer will do (a null cl_mem is not portable) */
    case IR_SLOT_UNUSED: snprintf(base, cap, "%s.weights", st); break;
    }
}

static void emit_launches(gpu_emitter *g, smelt_strbuf *o)
{
    const ir_program *p = g->e.prog;
    bool cl = g->lang->id == CG_GPU_OPENCL;
    for (int c = 0; c < p->n_calls && g->e.status == SMELT_OK; c++) {
        const ir_call_site *cs = &p->calls[c];
        int fi = cg_func_index(p, cs->func);
        if (fi < 0) {
            cg_fail(&g->e, SMELT_ERR_INTERNAL, "codegen: call %d targets a function not in the program", c);
            return;
        }
        for (int a = 0; a < cs->func->n_params; a++)
            if (!cg_check_slot(&g->e, c, a, &cs->args[a], cs->func->params[a])) return;
        smelt_strbuf_printf(o, "    /* call %d: f_%d */\n", c, fi);
        for (int k = g->first_k[fi]; k < g->first_k[fi] + g->n_func_k[fi]; k++) {
            const gpu_kernel *gk = &g->k[k];
            char base[64];
            int64_t off;
            if (cl) {
                smelt_strbuf_printf(o, "    if (");
                for (int a = 0; a < cs->func->n_params; a++) {
                    slot_place(g->lang, &cs->args[a], base, sizeof base, &off);
                    smelt_strbuf_printf(o, "smelt_cl_arg_(%d, %d, %s, %lld) ||\n        ", k, a, base,
                                        (long long)off);
                }
                smelt_strbuf_printf(o, "smelt_cl_arg_(%d, %d, smelt_cl_.err, 0) ||\n"
                                    "        smelt_cl_arg_(%d, %d, smelt_cl_.arena, %lld) ||\n"
                                    "        smelt_cl_launch_(%d, %lld, %lld))\n        return %s;\n",
                                    k, cs->func->n_params, k, cs->func->n_params + 1,
                                    (long long)ws_offset(p), k,
                                    (long long)gk->blocks, (long long)gk->threads, GPU_RUN_FAILED);
            } else {
                smelt_strbuf_printf(o, "    f%d_k%d<<<%lld, %lld>>>(", gk->func, gk->index,
                                    (long long)gk->blocks, (long long)gk->threads);
                for (int a = 0; a < cs->func->n_params; a++) {
                    const ir_buffer *b = cs->func->params[a];
                    slot_place(g->lang, &cs->args[a], base, sizeof base, &off);
                    smelt_strbuf_printf(o, "\n        (%s%s *)(void *)(%s + %lld),",
                                        cg_param_is_const(b) ? "const " : "", cg_storage_type(b->dtype),
                                        base, (long long)off);
                }
                smelt_strbuf_printf(o, "\n        (int64_t *)(void *)smelt_cu_.err, smelt_cu_.arena + %lld);\n",
                                    (long long)ws_offset(p));
                smelt_strbuf_printf(o, "    if (smelt_cu_check_(cudaGetLastError(), \"launching f%d_k%d\"))\n"
                                    "        return %s;\n", gk->func, gk->index, GPU_RUN_FAILED);
            }
        }
        if (!cl)
            smelt_strbuf_printf(o, "#ifdef SMELT_GPU_TIMING\n    if (smelt_cu_call_mark_(%d)) return %s;\n#endif\n",
                                c + 1, GPU_RUN_FAILED);
    }
}

/* CUDA, timed per call (-DSMELT_GPU_TIMING): each call's function and
 * nodes, for model_gpu_call_name. */
static void emit_call_names(const gpu_emitter *g, smelt_strbuf *o)
{
    const ir_program *p = g->e.prog;
    smelt_strbuf_printf(o, "#define SMELT_N_CALLS %d\n#ifdef SMELT_GPU_TIMING\n"
                           "static const char *const smelt_cu_call_names_[SMELT_N_CALLS + 1] = {\n",
                        p->n_calls);
    for (int c = 0; c < p->n_calls; c++) {
        const ir_func *fn = p->calls[c].func;
        char text[512];
        snprintf(text, sizeof text, "f%d %s%s%s%s", cg_func_index(p, fn), fn->name,
                 fn->comment && *fn->comment ? " (" : "", fn->comment ? fn->comment : "",
                 fn->comment && *fn->comment ? ")" : "");
        smelt_strbuf_append(o, "    ");
        cg_append_string_literal(o, text);
        smelt_strbuf_append(o, ",\n");
    }
    smelt_strbuf_append(o, "    NULL};\n#endif\n\n");
}

static const char opencl_host_text[] =
    "typedef struct smelt_cl_state_ {\n"
    "    int ready;\n"
    "    cl_context ctx;\n"
    "    cl_command_queue queue;\n"
    "    cl_program program;\n"
    "    cl_kernel kernels[SMELT_N_KERNELS + 1];\n"
    "    cl_mem weights, arena, err, in[SMELT_N_IN + 1], out[SMELT_N_OUT + 1];\n"
    "    const unsigned char *weights_host;\n"
    "} smelt_cl_state_;\n\n"
    "/* One device state per process: the first run builds it. */\n"
    "static smelt_cl_state_ smelt_cl_;\n\n"
    "static int smelt_cl_check_(cl_int err, const char *what)\n{\n"
    "    if (err == CL_SUCCESS) return 0;\n"
    "    fprintf(stderr, \"smelt: OpenCL: %s failed (error %d)\\n\", what, (int)err);\n"
    "    return 1;\n}\n\n"
    "static int smelt_cl_buffer_(cl_mem *m, size_t bytes)\n{\n"
    "    cl_int err;\n"
    "    *m = clCreateBuffer(smelt_cl_.ctx, CL_MEM_READ_WRITE, bytes ? bytes : 64, NULL, &err);\n"
    "    return smelt_cl_check_(err, \"clCreateBuffer\");\n}\n\n"
    "/* The first GPU of any platform, else the first device of any kind. */\n"
    "static int smelt_cl_device_(cl_device_id *dev)\n{\n"
    "    cl_platform_id platforms[16];\n"
    "    cl_uint np = 0, nd = 0, p;\n"
    "    int pass;\n"
    "    if (clGetPlatformIDs(16, platforms, &np) != CL_SUCCESS || np == 0) {\n"
    "        fprintf(stderr, \"smelt: OpenCL: no platform found (install an OpenCL driver; on Debian, \"\n"
    "                \"pocl-opencl-icd runs OpenCL on the CPU)\\n\");\n"
    "        return 1;\n"
    "    }\n"
    "    for (pass = 0; pass < 2; pass++)\n"
    "        for (p = 0; p < np && p < 16; p++)\n"
    "            if (clGetDeviceIDs(platforms[p], pass ? CL_DEVICE_TYPE_ALL : CL_DEVICE_TYPE_GPU, 1, dev,\n"
    "                               &nd) == CL_SUCCESS && nd > 0)\n"
    "                return 0;\n"
    "    fprintf(stderr, \"smelt: OpenCL: no device found\\n\");\n"
    "    return 1;\n}\n\n"
    "static int smelt_cl_build_(cl_device_id dev)\n{\n"
    "    const char *src = smelt_cl_source_;\n"
    "    cl_int err;\n"
    "    int i;\n"
    "    smelt_cl_.program = clCreateProgramWithSource(smelt_cl_.ctx, 1, &src, NULL, &err);\n"
    "    if (smelt_cl_check_(err, \"clCreateProgramWithSource\")) return 1;\n"
    "    err = clBuildProgram(smelt_cl_.program, 1, &dev, \"-cl-std=CL1.2\", NULL, NULL);\n"
    "    if (err != CL_SUCCESS) {\n"
    "        static char log[16384];\n"
    "        log[0] = 0;\n"
    "        clGetProgramBuildInfo(smelt_cl_.program, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);\n"
    "        log[sizeof log - 1] = 0;\n"
    "        fprintf(stderr, \"smelt: OpenCL: the kernels did not build (error %d):\\n%s\\n\", (int)err, log);\n"
    "        return 1;\n"
    "    }\n"
    "    for (i = 0; i < SMELT_N_KERNELS; i++) {\n"
    "        smelt_cl_.kernels[i] = clCreateKernel(smelt_cl_.program, smelt_cl_names_[i], &err);\n"
    "        if (smelt_cl_check_(err, \"clCreateKernel\")) return 1;\n"
    "    }\n"
    "    return 0;\n}\n\n"
    "static int smelt_cl_upload_weights_(const unsigned char *weights)\n{\n"
    "    smelt_cl_.weights_host = weights;\n"
    "    if (SMELT_WEIGHT_BYTES == 0) return 0;\n"
    "    return smelt_cl_check_(clEnqueueWriteBuffer(smelt_cl_.queue, smelt_cl_.weights, CL_TRUE, 0,\n"
    "                                                SMELT_WEIGHT_BYTES, weights, 0, NULL, NULL),\n"
    "                           \"copying the weights\");\n}\n\n"
    "static int smelt_cl_init_(const unsigned char *weights)\n{\n"
    "    cl_device_id dev;\n"
    "    cl_int err;\n"
    "    int i;\n"
    "    if (smelt_cl_.ready)\n"
    "        return weights == smelt_cl_.weights_host ? 0 : smelt_cl_upload_weights_(weights);\n"
    "    if (smelt_cl_device_(&dev)) return 1;\n"
    "    smelt_cl_.ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);\n"
    "    if (smelt_cl_check_(err, \"clCreateContext\")) return 1;\n"
    "    smelt_cl_.queue = clCreateCommandQueue(smelt_cl_.ctx, dev, 0, &err);\n"
    "    if (smelt_cl_check_(err, \"clCreateCommandQueue\") || smelt_cl_build_(dev)) return 1;\n"
    "    if (smelt_cl_buffer_(&smelt_cl_.weights, SMELT_WEIGHT_BYTES) ||\n"
    "        smelt_cl_buffer_(&smelt_cl_.arena, SMELT_DEVICE_ARENA_BYTES) ||\n"
    "        smelt_cl_buffer_(&smelt_cl_.err, 4 * sizeof(cl_long)))\n"
    "        return 1;\n"
    "    for (i = 0; i < SMELT_N_IN; i++)\n"
    "        if (smelt_cl_buffer_(&smelt_cl_.in[i], smelt_in_bytes_[i])) return 1;\n"
    "    for (i = 0; i < SMELT_N_OUT; i++)\n"
    "        if (smelt_cl_buffer_(&smelt_cl_.out[i], smelt_out_bytes_[i])) return 1;\n"
    "    if (smelt_cl_upload_weights_(weights)) return 1;\n"
    "    smelt_cl_.ready = 1;\n"
    "    return 0;\n}\n\n"
    "/* Argument a of kernel k: a buffer and a byte offset into it. */\n"
    "static int smelt_cl_arg_(int k, int a, cl_mem m, long long offset)\n{\n"
    "    cl_long off = (cl_long)offset;\n"
    "    cl_int err = clSetKernelArg(smelt_cl_.kernels[k], (cl_uint)(2 * a), sizeof m, &m);\n"
    "    if (err == CL_SUCCESS) err = clSetKernelArg(smelt_cl_.kernels[k], (cl_uint)(2 * a + 1), sizeof off, &off);\n"
    "    return smelt_cl_check_(err, \"clSetKernelArg\");\n}\n\n"
    "static int smelt_cl_launch_(int k, size_t blocks, size_t threads)\n{\n"
    "    size_t global = blocks * threads;\n"
    "    return smelt_cl_check_(clEnqueueNDRangeKernel(smelt_cl_.queue, smelt_cl_.kernels[k], 1, NULL, &global,\n"
    "                                                  &threads, 0, NULL, NULL),\n"
    "                           smelt_cl_names_[k]);\n}\n\n";

static const char cuda_host_text[] =
    "typedef struct smelt_cu_state_ {\n"
    "    int ready;\n"
    "    unsigned char *weights, *arena, *err, *in[SMELT_N_IN + 1], *out[SMELT_N_OUT + 1];\n"
    "    const unsigned char *weights_host;\n"
    "} smelt_cu_state_;\n\n"
    "/* One device state per process: the first run builds it. */\n"
    "static smelt_cu_state_ smelt_cu_;\n\n"
    "static int smelt_cu_check_(cudaError_t err, const char *what)\n{\n"
    "    if (err == cudaSuccess) return 0;\n"
    "    fprintf(stderr, \"smelt: CUDA: %s failed: %s\\n\", what, cudaGetErrorString(err));\n"
    "    return 1;\n}\n\n"
    "static int smelt_cu_alloc_(unsigned char **p, size_t bytes)\n{\n"
    "    return smelt_cu_check_(cudaMalloc((void **)p, bytes ? bytes : 64), \"cudaMalloc\");\n}\n\n"
    "static int smelt_cu_upload_weights_(const unsigned char *weights)\n{\n"
    "    smelt_cu_.weights_host = weights;\n"
    "    if (SMELT_WEIGHT_BYTES == 0) return 0;\n"
    "    return smelt_cu_check_(cudaMemcpy(smelt_cu_.weights, weights, SMELT_WEIGHT_BYTES,\n"
    "                                      cudaMemcpyHostToDevice), \"copying the weights\");\n}\n\n"
    "static int smelt_cu_init_(const unsigned char *weights)\n{\n"
    "    int i;\n"
    "    if (smelt_cu_.ready)\n"
    "        return weights == smelt_cu_.weights_host ? 0 : smelt_cu_upload_weights_(weights);\n"
    "    if (smelt_cu_alloc_(&smelt_cu_.weights, SMELT_WEIGHT_BYTES) ||\n"
    "        smelt_cu_alloc_(&smelt_cu_.arena, SMELT_DEVICE_ARENA_BYTES) ||\n"
    "        smelt_cu_alloc_(&smelt_cu_.err, 4 * sizeof(long long)))\n"
    "        return 1;\n"
    "    for (i = 0; i < SMELT_N_IN; i++)\n"
    "        if (smelt_cu_alloc_(&smelt_cu_.in[i], smelt_in_bytes_[i])) return 1;\n"
    "    for (i = 0; i < SMELT_N_OUT; i++)\n"
    "        if (smelt_cu_alloc_(&smelt_cu_.out[i], smelt_out_bytes_[i])) return 1;\n"
    "    if (smelt_cu_upload_weights_(weights)) return 1;\n"
    "    smelt_cu_.ready = 1;\n"
    "    return 0;\n}\n\n"
    "/* Built with -DSMELT_GPU_TIMING: CUDA events around each run's kernels\n"
    " * (model_gpu_kernel_ms; the run waits for the second one). */\n"
    "static double smelt_cu_kernel_ms_ = -1;\n"
    "#ifdef SMELT_GPU_TIMING\n"
    "static cudaEvent_t smelt_cu_ev_[2];\n\n"
    "/* Per call (model_gpu_time_calls(1)): an event before the first call and\n"
    " * after each call's kernels, each call's device time kept from the last\n"
    " * run; off by default, so the run's kernels are timed without them. */\n"
    "static int smelt_cu_time_calls_;\n"
    "static cudaEvent_t smelt_cu_call_ev_[SMELT_N_CALLS + 1];\n"
    "static double smelt_cu_call_ms_[SMELT_N_CALLS + 1];\n\n"
    "static int smelt_cu_call_mark_(int c)\n{\n"
    "    if (!smelt_cu_time_calls_) return 0;\n"
    "    if (!smelt_cu_call_ev_[c] &&\n"
    "        smelt_cu_check_(cudaEventCreate(&smelt_cu_call_ev_[c]), \"cudaEventCreate\"))\n"
    "        return 1;\n"
    "    return smelt_cu_check_(cudaEventRecord(smelt_cu_call_ev_[c], 0), \"cudaEventRecord\");\n}\n\n"
    "/* After the run's last event: each call's time (its events are done). */\n"
    "static int smelt_cu_calls_ms_(void)\n{\n"
    "    int c;\n"
    "    for (c = 0; c < SMELT_N_CALLS; c++) {\n"
    "        float ms = 0;\n"
    "        smelt_cu_call_ms_[c] = -1;\n"
    "        if (!smelt_cu_time_calls_) continue;\n"
    "        if (smelt_cu_check_(cudaEventElapsedTime(&ms, smelt_cu_call_ev_[c], smelt_cu_call_ev_[c + 1]),\n"
    "                            \"cudaEventElapsedTime\"))\n"
    "            return 1;\n"
    "        smelt_cu_call_ms_[c] = ms;\n"
    "    }\n"
    "    return 0;\n}\n\n"
    "extern \"C\" void model_gpu_time_calls(int on)\n{\n"
    "    smelt_cu_time_calls_ = on;\n}\n\n"
    "extern \"C\" int model_gpu_call_count(void)\n{\n"
    "    return SMELT_N_CALLS;\n}\n\n"
    "/* \"fN NAME (its nodes)\" of call c, else NULL. */\n"
    "extern \"C\" const char *model_gpu_call_name(int c)\n{\n"
    "    return c >= 0 && c < SMELT_N_CALLS ? smelt_cu_call_names_[c] : NULL;\n}\n\n"
    "/* Call c's device time in the last run timed per call, else -1. */\n"
    "extern \"C\" double model_gpu_call_ms(int c)\n{\n"
    "    return c >= 0 && c < SMELT_N_CALLS && smelt_cu_call_ev_[c + 1] ? smelt_cu_call_ms_[c] : -1;\n}\n\n"
    "static int smelt_cu_timing_(int end)\n{\n"
    "    float ms = 0;\n"
    "    if (!end && !smelt_cu_ev_[0] &&\n"
    "        (smelt_cu_check_(cudaEventCreate(&smelt_cu_ev_[0]), \"cudaEventCreate\") ||\n"
    "         smelt_cu_check_(cudaEventCreate(&smelt_cu_ev_[1]), \"cudaEventCreate\")))\n"
    "        return 1;\n"
    "    if (smelt_cu_check_(cudaEventRecord(smelt_cu_ev_[end], 0), \"cudaEventRecord\")) return 1;\n"
    "    if (!end) return 0;\n"
    "    if (smelt_cu_check_(cudaEventSynchronize(smelt_cu_ev_[1]), \"cudaEventSynchronize\") ||\n"
    "        smelt_cu_check_(cudaEventElapsedTime(&ms, smelt_cu_ev_[0], smelt_cu_ev_[1]),\n"
    "                        \"cudaEventElapsedTime\"))\n"
    "        return 1;\n"
    "    smelt_cu_kernel_ms_ = ms;\n"
    "    return smelt_cu_calls_ms_();\n}\n"
    "#endif\n\n"
    "/* The device time of the last run's kernels in milliseconds when the\n"
    " * package is built with -DSMELT_GPU_TIMING (nvcc), else -1. */\n"
    "extern \"C\" double model_gpu_kernel_ms(void)\n{\n"
    "    return smelt_cu_kernel_ms_;\n}\n\n";

/* Data checks: the device's error record is cleared before the kernels and
 * read back after them; a set flag fails the run with the check's site. */
static void emit_error_record(gpu_emitter *g, smelt_strbuf *o, bool before)
{
    bool cl = g->lang->id == CG_GPU_OPENCL;
    if (before && cl)
        smelt_strbuf_printf(o,
            "    if (smelt_cl_check_(clEnqueueWriteBuffer(smelt_cl_.queue, smelt_cl_.err, CL_FALSE, 0,\n"
            "                                             sizeof zero, zero, 0, NULL, NULL),\n"
            "                        \"clearing the error record\"))\n        return %s;\n", GPU_RUN_FAILED);
    else if (before)
        smelt_strbuf_printf(o,
            "    if (smelt_cu_check_(cudaMemset(smelt_cu_.err, 0, sizeof rec), \"clearing the error record\"))\n"
            "        return %s;\n", GPU_RUN_FAILED);
    else if (cl)
        smelt_strbuf_printf(o,
            "    if (smelt_cl_check_(clEnqueueReadBuffer(smelt_cl_.queue, smelt_cl_.err, CL_TRUE, 0, sizeof rec,\n"
            "                                            rec, 0, NULL, NULL), \"reading the error record\"))\n"
            "        return %s;\n", GPU_RUN_FAILED);
    else
        smelt_strbuf_printf(o,
            "    if (smelt_cu_check_(cudaMemcpy(rec, smelt_cu_.err, sizeof rec, cudaMemcpyDeviceToHost),\n"
            "                        \"reading the error record\"))\n        return %s;\n", GPU_RUN_FAILED);
    if (!before)
        smelt_strbuf_append(o, "    if (rec[0]) {\n"
                               "        rterr->site = (int)rec[1];\n"
                               "        rterr->value = rec[2];\n"
                               "        rterr->position = rec[3];\n"
                               "        return 1;\n    }\n");
}

static void emit_run(gpu_emitter *g, smelt_strbuf *o)
{
    bool cl = g->lang->id == CG_GPU_OPENCL, checks = g->e.gpu_checks;
    smelt_strbuf_printf(o, "/* Called by model.c's run entry: inputs to the device, the kernels in\n"
                           " * program order, outputs back.  0; 1 when a data check failed (rterr\n"
                           " * says which); %s with the reason on stderr. */\n",
                        GPU_RUN_FAILED);
    smelt_strbuf_append(o, "static int model_gpu_run_locked_(" CG_GPU_RUN_PARAMS ")\n{\n    int i;\n");
    if (checks)
        smelt_strbuf_printf(o, "    %s rec[4] = {0, 0, 0, 0};\n%s", cl ? "cl_long" : "long long",
                            cl ? "    static const cl_long zero[4] = {0, 0, 0, 0};\n" : "");
    else
        smelt_strbuf_append(o, "    (void)rterr;\n");
    if (cl) {
        smelt_strbuf_printf(o,
            "    if (smelt_cl_init_(weights)) return %s;\n"
            "    for (i = 0; i < SMELT_N_IN; i++)\n"
            "        if (smelt_cl_check_(clEnqueueWriteBuffer(smelt_cl_.queue, smelt_cl_.in[i], CL_FALSE, 0,\n"
            "                                                 smelt_in_bytes_[i], inputs[i], 0, NULL, NULL),\n"
            "                            \"copying an input to the device\"))\n"
            "            return %s;\n", GPU_RUN_FAILED, GPU_RUN_FAILED);
    } else {
        smelt_strbuf_printf(o,
            "    if (smelt_cu_init_(weights)) return %s;\n"
            "    for (i = 0; i < SMELT_N_IN; i++)\n"
            "        if (smelt_cu_check_(cudaMemcpy(smelt_cu_.in[i], inputs[i], smelt_in_bytes_[i],\n"
            "                                       cudaMemcpyHostToDevice), \"copying an input to the device\"))\n"
            "            return %s;\n", GPU_RUN_FAILED, GPU_RUN_FAILED);
    }
    if (checks) emit_error_record(g, o, true);
    if (!cl)
        smelt_strbuf_printf(o, "#ifdef SMELT_GPU_TIMING\n    if (smelt_cu_timing_(0) || smelt_cu_call_mark_(0)) return %s;\n#endif\n",
                            GPU_RUN_FAILED);
    emit_launches(g, o);
    if (!cl)
        smelt_strbuf_printf(o, "#ifdef SMELT_GPU_TIMING\n    if (smelt_cu_timing_(1)) return %s;\n#endif\n",
                            GPU_RUN_FAILED);
    if (cl)
        smelt_strbuf_printf(o,
            "    for (i = 0; i < SMELT_N_OUT; i++)\n"
            "        if (smelt_cl_check_(clEnqueueReadBuffer(smelt_cl_.queue, smelt_cl_.out[i], CL_TRUE, 0,\n"
            "                                                smelt_out_bytes_[i], outputs[i], 0, NULL, NULL),\n"
            "                            \"copying an output from the device\"))\n"
            "            return %s;\n", GPU_RUN_FAILED);
    else
        smelt_strbuf_printf(o,
            "    for (i = 0; i < SMELT_N_OUT; i++)\n"
            "        if (smelt_cu_check_(cudaMemcpy(outputs[i], smelt_cu_.out[i], smelt_out_bytes_[i],\n"
            "                                       cudaMemcpyDeviceToHost), \"copying an output from the device\"))\n"
            "            return %s;\n", GPU_RUN_FAILED);
    if (checks) emit_error_record(g, o, false);
    smelt_strbuf_append(o, "    (void)inputs;\n    (void)outputs;\n    return 0;\n}\n\n");
    /* one device state: concurrent runs (smelt_rt.h allows them) take turns */
    smelt_strbuf_printf(o, "static pthread_mutex_t smelt_gpu_mu_ = PTHREAD_MUTEX_INITIALIZER;\n\n"
                           "%sint model_gpu_run_(" CG_GPU_RUN_PARAMS ")\n{\n"
                           "    int rc;\n"
                           "    pthread_mutex_lock(&smelt_gpu_mu_);\n"
                           "    rc = model_gpu_run_locked_(weights, inputs, outputs, rterr);\n"
                           "    pthread_mutex_unlock(&smelt_gpu_mu_);\n"
                           "    return rc;\n}\n", cl ? "" : "extern \"C\" ");
}

/* The kernel source as a C string, a literal per line. */
static void emit_source_string(const smelt_strbuf *src, smelt_strbuf *o)
{
    smelt_strbuf_append(o, "static const char smelt_cl_source_[] =\n");
    const char *text = src->data ? src->data : "";
    for (const char *q = text; *q;) {
        const char *nl = strchr(q, '\n');
        size_t n = nl ? (size_t)(nl - q + 1) : strlen(q);
        char *line = smelt_alloc(n + 1);
        if (!line) {
            o->failed = true;
            return;
        }
        memcpy(line, q, n);
        line[n] = 0;
        smelt_strbuf_append(o, "    ");
        cg_append_string_literal(o, line);
        smelt_strbuf_append(o, "\n");
        smelt_free(line);
        q += n;
    }
    smelt_strbuf_append(o, "    \"\";\n\n");
}

static void emit_device_file(gpu_emitter *g, const smelt_strbuf *kernels, smelt_strbuf *o)
{
    bool cl = g->lang->id == CG_GPU_OPENCL;
    smelt_strbuf_printf(o, "/* Generated by smelt for target %s: the kernels and the host code that "
                           "runs them.\n * Do not edit. */\n", g->e.target->name);
    if (cl) {
        smelt_strbuf_append(o, "#define CL_TARGET_OPENCL_VERSION 120\n#include <CL/cl.h>\n"
                               "#include <pthread.h>\n#include <stdio.h>\n#include <stddef.h>\n\n#include \"smelt_rt.h\"\n\n");
        emit_sizes(g, o);
        emit_source_string(kernels, o);
        smelt_strbuf_append(o, "static const char *const smelt_cl_names_[SMELT_N_KERNELS + 1] = {\n");
        for (int k = 0; k < g->n_k; k++)
            smelt_strbuf_printf(o, "    \"f%d_k%d\",\n", g->k[k].func, g->k[k].index);
        smelt_strbuf_append(o, "    NULL};\n\n");
        smelt_strbuf_append(o, opencl_host_text);
        smelt_strbuf_append(o, "int model_gpu_run_(" CG_GPU_RUN_PARAMS ");\n\n");
    } else {
        smelt_strbuf_append(o, "#include <cuda_runtime.h>\n#include <pthread.h>\n#include <stdio.h>\n\n#include \"smelt_rt.h\"\n\n");
        smelt_strbuf_appendn(o, kernels->data ? kernels->data : "", kernels->len);
        emit_sizes(g, o);
        emit_call_names(g, o);
        smelt_strbuf_append(o, cuda_host_text);
    }
    emit_run(g, o);
}

smelt_status cg_gpu_emit_device(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                                smelt_strbuf *out, smelt_strbuf *placement)
{
    gpu_emitter g;
    smelt_strbuf kernels;
    smelt_strbuf_init(&kernels);
    smelt_status s = plan_kernels(&g, ctx, p, t, NULL, &kernels);
    if (s == SMELT_OK && out) emit_device_file(&g, &kernels, out);
    if (s == SMELT_OK && placement) {
        for (int f = 0; f < p->n_funcs; f++) {
            const ir_func *fn = p->funcs[f];
            smelt_strbuf_printf(placement, "f%d %s", f, fn->name);
            if (fn->comment && *fn->comment) smelt_strbuf_printf(placement, " (%s)", fn->comment);
            smelt_strbuf_append(placement, ": ");
            if (g.n_func_k[f] == 0) smelt_strbuf_append(placement, cg_is_called(p, p->funcs[f])
                                                                         ? "no work (empty)\n"
                                                                         : "not called\n");
            for (int k = g.first_k[f]; k < g.first_k[f] + g.n_func_k[f]; k++)
                smelt_strbuf_printf(placement, "%s%s kernel f%d_k%d (%lld x %lld threads)",
                                    k > g.first_k[f] ? ", " : "", t->name, f, g.k[k].index,
                                    (long long)g.k[k].blocks, (long long)g.k[k].threads);
            if (g.n_func_k[f]) smelt_strbuf_append(placement, "\n");
        }
    }
    if (s == SMELT_OK && ((out && out->failed) || (placement && placement->failed) || kernels.failed))
        s = cg_fail(&g.e, SMELT_ERR_NOMEM, "codegen: out of memory");
    s = g.e.status != SMELT_OK ? g.e.status : s;
    smelt_strbuf_fini(&kernels);
    gpu_fini(&g);
    return s;
}

smelt_status cg_gpu_emit_host(smelt_ctx *ctx, const ir_program *p, const cg_target *t,
                              const cg_emit_options *opts, smelt_strbuf *out)
{
    /* the kernels' plan numbers the data checks' sites the module lists */
    gpu_emitter g;
    smelt_strbuf kernels;
    smelt_strbuf_init(&kernels);
    smelt_status s = plan_kernels(&g, ctx, p, t, opts, &kernels);
    smelt_strbuf_fini(&kernels);
    if (s != SMELT_OK) {
        gpu_fini(&g);
        return s;
    }
    smelt_strbuf_printf(out, "/* Generated by smelt for target %s: the module; the kernels and the host\n"
                             " * code that launches them are in model_gpu.%s.  Do not edit. */\n",
                        t->name, t->gpu == CG_GPU_CUDA ? "cu" : "c");
    smelt_strbuf_append(out, "#include <stdint.h>\n#include <stdlib.h>\n\n#include \"smelt_rt.h\"\n\n"
                             "#if defined(__GNUC__)\n#define SMELT_ALIGN64 __attribute__((aligned(64)))\n"
                             "#else\n#define SMELT_ALIGN64\n#endif\n\n"
                             "int model_gpu_run_(" CG_GPU_RUN_PARAMS ");\n\n"
                             "/* The host arena is unused: the device has its own. */\n"
                             "static int smelt_run_(smelt_rt_pool *pool, const unsigned char *weights, "
                             "unsigned char *arena,\n                      const void *const *inputs, "
                             "void *const *outputs, smelt_rt_run_error *rterr)\n{\n"
                             "    (void)pool;\n    (void)arena;\n"
                             "    return model_gpu_run_(weights, inputs, outputs, rterr);\n}\n\n");
    cg_emit_module_info(&g.e, out);
    if (g.e.status == SMELT_OK && opts && opts->arena_bytes_out) *opts->arena_bytes_out = 64;
    if (g.e.status == SMELT_OK && out->failed) cg_fail(&g.e, SMELT_ERR_NOMEM, "codegen: out of memory");
    s = g.e.status;
    gpu_fini(&g);
    return s;
}
