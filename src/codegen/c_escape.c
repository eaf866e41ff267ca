/* Model text (tensor names, node names) only ever reaches the generated C
 * through these two functions: as an escaped string literal or as
 * neutralised comment text.  Identifiers in the C are always our own. */
#include "codegen/codegen.h"

/* Split long literals ("..." "...") to stay far below any compiler's limit. */
#define LITERAL_CHUNK 200

void cg_append_string_literal(smelt_strbuf *out, const char *s)
{
    smelt_strbuf_append(out, "\"");
    size_t col = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char buf[8];
        unsigned c = *p;
        if (c == '"' || c == '\\' || c == '?') { /* '?' as \? so no trigraph can form */
            buf[0] = '\\';
            buf[1] = (char)c;
            buf[2] = '\0';
        } else if (c >= 0x20 && c < 0x7f && !(c == '/' && p > (const unsigned char *)s && p[-1] == '*')) {
            buf[0] = (char)c;
            buf[1] = '\0';
        } else { /* and '/' after '*': no "*" "/" in the file, even where harmless */
            /* Always three octal digits: a following digit cannot join the escape. */
            snprintf(buf, sizeof buf, "\\%03o", c);
        }
        smelt_strbuf_append(out, buf);
        col += 1;
        if (col >= LITERAL_CHUNK && p[1]) {
            smelt_strbuf_append(out, "\" \"");
            col = 0;
        }
    }
    smelt_strbuf_append(out, "\"");
}

void cg_append_comment_text(smelt_strbuf *out, const char *s, size_t max_len)
{
    char prev = ' '; /* callers open with "/" "* " */
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++, n++) {
        if (n >= max_len) {
            smelt_strbuf_append(out, "...");
            break;
        }
        char c = (*p >= 0x20 && *p < 0x7f && *p != '\\') ? (char)*p : '.';
        if (c == '?' && prev == '?') c = '.'; /* no trigraphs */
        /* Keep "/" "*" and "*" "/" from forming. */
        if ((c == '/' && prev == '*') || (c == '*' && prev == '/')) smelt_strbuf_append(out, " ");
        smelt_strbuf_appendn(out, &c, 1);
        prev = c;
    }
    if (prev == '*' || prev == '/') smelt_strbuf_append(out, " ");
}
