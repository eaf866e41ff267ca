/* Growable strings. */
#include <string.h>

#include "base.h"

void smelt_strbuf_init(smelt_strbuf *sb) { memset(sb, 0, sizeof *sb); }

void smelt_strbuf_fini(smelt_strbuf *sb)
{
    smelt_free(sb->data);
    memset(sb, 0, sizeof *sb);
}

static bool strbuf_reserve(smelt_strbuf *sb, size_t extra)
{
    if (sb->failed) return false;
    if (sb->len + extra + 1 <= sb->cap) return true;
    size_t ncap = sb->cap ? sb->cap : 256;
    while (ncap < sb->len + extra + 1) ncap *= 2;
    char *n = smelt_realloc(sb->data, sb->len + (sb->data ? 1 : 0), ncap);
    if (!n) {
        sb->failed = true;
        return false;
    }
    sb->data = n;
    sb->cap = ncap;
    return true;
}

void smelt_strbuf_appendn(smelt_strbuf *sb, const char *s, size_t n)
{
    if (!strbuf_reserve(sb, n)) return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void smelt_strbuf_append(smelt_strbuf *sb, const char *s) { smelt_strbuf_appendn(sb, s, strlen(s)); }

void smelt_strbuf_printf(smelt_strbuf *sb, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0 && strbuf_reserve(sb, (size_t)n)) {
        vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
        sb->len += (size_t)n;
    }
    va_end(ap2);
}

const char *smelt_strbuf_cstr(smelt_strbuf *sb) { return sb->data ? sb->data : ""; }
