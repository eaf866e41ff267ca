/* Shared helpers of the codegen tests: build small ir_programs by hand,
 * compile them through the cache, load and run them via the runtime. */
#ifndef SMELT_TEST_CODEGEN_UTIL_H
#define SMELT_TEST_CODEGEN_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "test_util.h"

typedef struct cgt_prog {
    smelt_arena arena;
    ir_builder b;
    ir_program p;
    ir_func *funcs[16];
    ir_call_site calls[32];
    ir_io_desc inputs[8], outputs[8];
} cgt_prog;

static inline void cgt_init(cgt_prog *t)
{
    memset(t, 0, sizeof *t);
    smelt_arena_init(&t->arena);
    ir_builder_init(&t->b, &t->arena);
    t->p.funcs = t->funcs;
    t->p.calls = t->calls;
    t->p.inputs = t->inputs;
    t->p.outputs = t->outputs;
}

static inline void cgt_fini(cgt_prog *t) { smelt_arena_fini(&t->arena); }

/* ---- expression shorthands ---- */
static inline ir_expr *I(cgt_prog *t, int64_t v) { return ir_int(&t->b, v); }
static inline ir_expr *F(cgt_prog *t, double v) { return ir_const_float(&t->b, SMELT_DT_FLOAT32, v); }
static inline ir_expr *V(cgt_prog *t, ir_var *v) { return ir_var_ref(&t->b, v); }
static inline ir_expr *LD(cgt_prog *t, ir_buffer *buf, ir_expr *idx) { return ir_load(&t->b, buf, 1, &idx); }
static inline ir_stmt *ST(cgt_prog *t, ir_buffer *buf, ir_expr *idx, ir_expr *val)
{
    return ir_store(&t->b, buf, 1, &idx, val);
}
static inline ir_expr *BIN(cgt_prog *t, ir_kind k, ir_expr *a, ir_expr *b) { return ir_binary(&t->b, k, a, b); }
static inline ir_stmt *FOR(cgt_prog *t, ir_var *v, int64_t min, int64_t extent, ir_for_kind k, ir_stmt *body)
{
    return ir_for(&t->b, v, I(t, min), I(t, extent), k, body);
}
static inline ir_buffer *BUF(cgt_prog *t, const char *name, smelt_dtype dt, int64_t n, ir_buffer_kind kind)
{
    return ir_buffer_new(&t->b, name, dt, 1, &n, kind);
}
static inline ir_var *VAR(cgt_prog *t, const char *name) { return ir_var_new(&t->b, name, SMELT_DT_INT64); }

/* ---- program pieces ---- */
static inline ir_func *cgt_func(cgt_prog *t, const char *name, int n_params, ir_buffer *const *params,
                         ir_stmt *body)
{
    ir_func *f = smelt_arena_alloc(&t->arena, sizeof *f);
    f->name = name;
    f->comment = "test function";
    f->n_params = n_params;
    f->params = smelt_arena_alloc(&t->arena, sizeof(ir_buffer *) * (size_t)(n_params + 1));
    for (int i = 0; i < n_params; i++) f->params[i] = params[i];
    f->body = body;
    t->funcs[t->p.n_funcs++] = f;
    return f;
}

static inline void cgt_call(cgt_prog *t, const ir_func *f, const ir_slot *slots)
{
    ir_call_site *c = &t->calls[t->p.n_calls++];
    c->func = f;
    c->args = smelt_arena_alloc(&t->arena, sizeof(ir_slot) * (size_t)(f->n_params + 1));
    for (int i = 0; i < f->n_params; i++) c->args[i] = slots[i];
}

static inline void cgt_io(ir_io_desc *d, const char *name, smelt_dtype dt, int rank, const int64_t *dims)
{
    d->name = name;
    d->dtype = dt;
    d->rank = rank;
    for (int i = 0; i < rank; i++) d->dims[i] = dims[i];
}

static inline void cgt_input(cgt_prog *t, const char *name, smelt_dtype dt, int64_t n)
{
    cgt_io(&t->inputs[t->p.n_inputs++], name, dt, 1, &n);
}

static inline void cgt_output(cgt_prog *t, const char *name, smelt_dtype dt, int64_t n)
{
    cgt_io(&t->outputs[t->p.n_outputs++], name, dt, 1, &n);
}

static inline ir_slot SLOT_IN(int i) { return (ir_slot){IR_SLOT_INPUT, i, 0}; }
static inline ir_slot SLOT_OUT(int i) { return (ir_slot){IR_SLOT_OUTPUT, i, 0}; }
static inline ir_slot SLOT_W(int64_t off) { return (ir_slot){IR_SLOT_WEIGHT, 0, off}; }
static inline ir_slot SLOT_A(int64_t off) { return (ir_slot){IR_SLOT_ARENA, 0, off}; }

/* ---- targets ---- */

/* The targets this machine can run: generic, avx2, avx512 (as supported). */
static inline int cgt_targets(const cg_target **out)
{
    const cg_target *host = cg_target_host();
    int n = 0;
    out[n++] = cg_target_find("generic");
    if (host->isa >= CG_ISA_AVX2) out[n++] = cg_target_find("avx2");
    if (host->isa >= CG_ISA_AVX512) out[n++] = cg_target_find("avx512");
    return n;
}

static inline void cgt_setup_env(void)
{
    /* Relative to the test's working directory (the build tree). */
    setenv("SMELT_CACHE_DIR", "cg-test-cache", 0);
}

/* Emit, build (through the cache), load and wrap in a runtime model with
 * two threads.  NULL on failure (the reason is printed). */
static inline smelt_rt_model *cgt_compile(cgt_prog *t, const cg_target *target, void **handle, char **source)
{
    smelt_ctx *ctx = smelt_ctx_new();
    smelt_strbuf c;
    smelt_strbuf_init(&c);
    char *lib = NULL;
    const smelt_rt_module_info *info = NULL;
    smelt_rt_model *m = NULL;
    *handle = NULL;
    if (t->b.failed) fprintf(stderr, "builder failed\n");
    if (cg_emit_program(ctx, &t->p, target, &c) == SMELT_OK &&
        cg_build_shared(ctx, smelt_strbuf_cstr(&c), target, &lib) == SMELT_OK &&
        cg_load_module(ctx, lib, handle, &info) == SMELT_OK) {
        char err[512];
        m = smelt_rt_model_from_info(info, t->p.weights, 2, err, sizeof err);
        if (!m) fprintf(stderr, "from_info: %s\n", err);
    } else {
        fprintf(stderr, "[%s] %s\n", target->name, smelt_ctx_message(ctx));
        if (getenv("CGT_SHOW_SOURCE")) fprintf(stderr, "%s\n", smelt_strbuf_cstr(&c));
    }
    if (source) *source = smelt_strdup(smelt_strbuf_cstr(&c));
    smelt_free(lib);
    smelt_strbuf_fini(&c);
    smelt_ctx_free(ctx);
    return m;
}

static inline void cgt_release(smelt_rt_model *m, void *handle, char *source)
{
    smelt_rt_model_free(m);
    cg_unload_module(handle);
    smelt_free(source);
}

#endif
