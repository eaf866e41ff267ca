/* The reference executor's memory budget (see exec.h). */
#include <stdlib.h>
#include <unistd.h>

#include "exec/exec.h"
#include "ops/op.h"

/* Half the physical memory: room for the weights and the rest of the
 * process; the per-tensor cap when the size is unknown. */
static int64_t default_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int64_t total;
    if (pages <= 0 || page <= 0 || smelt_mul_overflow_i64(pages, page, &total))
        return SMELT_LIMIT_TENSOR_BYTES;
    return total / 2;
}

static int suffix_shift(char c)
{
    switch (c) {
    case 'k': case 'K': return 10;
    case 'm': case 'M': return 20;
    case 'g': case 'G': return 30;
    case 't': case 'T': return 40;
    default: return -1;
    }
}

/* Decimal digits, then optionally one of K, M, G, T (powers of 1024). */
static bool parse_bytes(const char *text, int64_t *out)
{
    int64_t v = 0;
    const char *p = text;
    if (*p < '0' || *p > '9') return false;
    for (; *p >= '0' && *p <= '9'; p++)
        if (smelt_mul_overflow_i64(v, 10, &v) || smelt_add_overflow_i64(v, *p - '0', &v))
            return false;
    int shift = 0;
    if (*p) {
        shift = suffix_shift(*p++);
        if (shift < 0 || *p || v > (INT64_MAX >> shift)) return false;
    }
    *out = v << shift;
    return true;
}

smelt_status exec_memory_limit(smelt_ctx *ctx, int64_t *bytes)
{
    const char *env = getenv(EXEC_MEMORY_LIMIT_ENV);
    if (!env || !*env) {
        *bytes = default_limit();
        return SMELT_OK;
    }
    if (!parse_bytes(env, bytes))
        return smelt_errf(ctx, SMELT_ERR_ARG,
                          "%s='%.64s' is not a byte count (decimal digits, optionally followed "
                          "by K, M, G or T)",
                          EXEC_MEMORY_LIMIT_ENV, env);
    return SMELT_OK;
}

smelt_status exec_budget_init(smelt_ctx *ctx, exec_budget *b)
{
    b->live = 0;
    return exec_memory_limit(ctx, &b->limit);
}

smelt_status exec_budget_charge(smelt_ctx *ctx, exec_budget *b, const gr_node *node,
                                int64_t bytes, const char *what)
{
    int64_t total;
    if (bytes >= 0 && !smelt_add_overflow_i64(b->live, bytes, &total) && total <= b->limit) {
        b->live = total;
        return SMELT_OK;
    }
    static const char fmt[] =
        "%s need %lld bytes while %lld are held: over the reference executor's memory limit "
        "of %lld bytes (%s; raise it in the environment, e.g. %s=64G)";
    if (node)
        return op_errf(ctx, node, SMELT_ERR_LIMIT, fmt, what, (long long)bytes,
                       (long long)b->live, (long long)b->limit, EXEC_MEMORY_LIMIT_ENV,
                       EXEC_MEMORY_LIMIT_ENV);
    return smelt_errf(ctx, SMELT_ERR_LIMIT, fmt, what, (long long)bytes, (long long)b->live,
                      (long long)b->limit, EXEC_MEMORY_LIMIT_ENV, EXEC_MEMORY_LIMIT_ENV);
}

void exec_budget_release(exec_budget *b, int64_t bytes)
{
    b->live = bytes < b->live ? b->live - bytes : 0;
}
