/* Sticky first-error context and status names. */
#include <stdlib.h>
#include <string.h>

#include "base.h"

smelt_ctx *smelt_ctx_new(void) { return calloc(1, sizeof(smelt_ctx)); }

void smelt_ctx_free(smelt_ctx *ctx) { free(ctx); }

smelt_status smelt_ctx_status(const smelt_ctx *ctx) { return ctx ? ctx->status : SMELT_OK; }

const char *smelt_ctx_message(const smelt_ctx *ctx)
{
    return ctx && ctx->status != SMELT_OK ? ctx->message : "";
}

void smelt_ctx_clear(smelt_ctx *ctx)
{
    if (!ctx) return;
    ctx->status = SMELT_OK;
    ctx->message[0] = '\0';
    ctx->node[0] = '\0';
    ctx->op[0] = '\0';
}

const char *smelt_ctx_node(const smelt_ctx *ctx)
{
    return ctx && ctx->status != SMELT_OK ? ctx->node : "";
}

const char *smelt_ctx_op(const smelt_ctx *ctx)
{
    return ctx && ctx->status != SMELT_OK ? ctx->op : "";
}

smelt_status smelt_verrf(smelt_ctx *ctx, smelt_status code, const char *fmt, va_list ap)
{
    if (ctx && ctx->status == SMELT_OK) {
        ctx->status = code;
        vsnprintf(ctx->message, sizeof ctx->message, fmt, ap);
    }
    return code;
}

smelt_status smelt_errf_at(smelt_ctx *ctx, smelt_status code, const char *node, const char *op,
                           const char *fmt, ...)
{
    bool first = ctx && ctx->status == SMELT_OK;
    va_list ap;
    va_start(ap, fmt);
    smelt_verrf(ctx, code, fmt, ap);
    va_end(ap);
    if (first) {
        snprintf(ctx->node, sizeof ctx->node, "%s", node ? node : "");
        snprintf(ctx->op, sizeof ctx->op, "%s", op ? op : "");
    }
    return code;
}

smelt_status smelt_ctx_forward(smelt_ctx *ctx, const smelt_ctx *from)
{
    return smelt_errf_at(ctx, from->status, from->node, from->op, "%s", from->message);
}

smelt_status smelt_errf(smelt_ctx *ctx, smelt_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    smelt_verrf(ctx, code, fmt, ap);
    va_end(ap);
    return code;
}

void smelt_ctx_append(smelt_ctx *ctx, const char *fmt, ...)
{
    if (!ctx || ctx->status == SMELT_OK) return;
    size_t len = strlen(ctx->message);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->message + len, sizeof ctx->message - len, fmt, ap);
    va_end(ap);
}

_Noreturn void smelt_internal_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "smelt: internal error (a compiler bug) at %s:%d: %s\n", file, line, what);
    abort();
}

const char *smelt_status_name(smelt_status s)
{
    static const char *const names[] = {
        [SMELT_OK] = "ok",
        [SMELT_ERR_IO] = "io error",
        [SMELT_ERR_PARSE] = "parse error",
        [SMELT_ERR_MODEL] = "invalid model",
        [SMELT_ERR_UNSUPPORTED] = "unsupported",
        [SMELT_ERR_SHAPE] = "shape error",
        [SMELT_ERR_ATTR] = "attribute error",
        [SMELT_ERR_LIMIT] = "limit exceeded",
        [SMELT_ERR_NOMEM] = "out of memory",
        [SMELT_ERR_ARG] = "bad argument",
        [SMELT_ERR_RUNTIME] = "runtime error",
        [SMELT_ERR_INTERNAL] = "internal error",
    };
    _Static_assert(SMELT_ARRAY_LEN(names) == SMELT_STATUS_COUNT_, "status names");
    return (unsigned)s < SMELT_STATUS_COUNT_ ? names[s] : "unknown status";
}

static FILE *tir_dump;
void smelt_set_tir_dump(FILE *f) { tir_dump = f; }
FILE *smelt_tir_dump(void) { return tir_dump; }

int smelt_debug_level(void)
{
    const char *s = getenv("SMELT_DEBUG");
    if (!s || !*s) return 0;
    int v = atoi(s);
    return v < 0 ? 0 : v > 4 ? 4 : v;
}
