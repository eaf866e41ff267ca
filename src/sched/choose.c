/* The one place lowering gets a schedule from: a stored one (tuning
 * records) for the group's workload key, else the default rules. */
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"

static void key_text(const te_graph *te, const char *target_key, smelt_strbuf *sb)
{
    te_graph_print(te, sb);
    smelt_strbuf_append(sb, "outputs:");
    for (int i = 0; i < te->outputs.len; i++) {
        const te_tensor *t = te->outputs.items[i];
        smelt_strbuf_printf(sb, " %s", t->buf->name);
    }
    smelt_strbuf_printf(sb, "\ntarget: %s\n", target_key ? target_key : "");
}

void sch_workload_key(const te_graph *te, const char *target_key, char key[SCH_KEY_LEN + 1])
{
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    key_text(te, target_key, &sb);
    /* two independent 64-bit FNV-1a hashes: stable across runs and builds */
    uint64_t h[2] = {smelt_hash_bytes(sb.data, sb.len, 0x736d656c74ull),
                     smelt_hash_bytes(sb.data, sb.len, 0x74756e6572ull)};
    if (sb.failed) h[0] = h[1] = 0; /* no key: matches no record */
    smelt_strbuf_fini(&sb);
    snprintf(key, SCH_KEY_LEN + 1, "%016llx%016llx", (unsigned long long)h[0],
             (unsigned long long)h[1]);
}

/* Parse and replay the stored text; false (and nothing appended) when it
 * does not fit te. */
static smelt_status try_stored(smelt_ctx *ctx, const te_graph *te, const char *text,
                               sch_schedule *out, bool *ok)
{
    smelt_ctx local = {.status = SMELT_OK};
    sch_schedule s;
    sch_schedule_init(&s);
    sch_state *st = NULL;
    smelt_status r = sch_schedule_parse(&local, text, &s);
    if (r == SMELT_OK) r = sch_state_build(&local, te, &s, &st);
    sch_state_free(st);
    *ok = r == SMELT_OK;
    if (!*ok && smelt_debug_level() >= 1)
        fprintf(stderr, "smelt: ignoring a stored schedule that does not replay: %s\n",
                local.message);
    for (int i = 0; *ok && i < s.n; i++) {
        if (sch_add(ctx, out, &s.steps[i]) != SMELT_OK) {
            sch_schedule_fini(&s);
            return smelt_ctx_status(ctx);
        }
    }
    sch_schedule_fini(&s);
    return local.status == SMELT_ERR_NOMEM ? smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory")
                                           : SMELT_OK;
}

smelt_status sch_choose(smelt_ctx *ctx, const te_graph *te, const smelt_hw *hw,
                        const sch_source *src, sch_schedule *out, bool *from_source)
{
    *from_source = false;
    if (src && src->find) {
        char key[SCH_KEY_LEN + 1];
        sch_workload_key(te, src->target_key, key);
        const char *text = src->find(src->user, key);
        if (text) SMELT_TRY(try_stored(ctx, te, text, out, from_source));
        if (*from_source) return SMELT_OK;
    }
    /* SMELT_WINOGRAD=M (2, 4): every conv Winograd applies to takes it
     * (testing and experiments; the tuner's algo knob is the normal way) */
    const char *w = getenv("SMELT_WINOGRAD");
    if (w && *w && sch_winograd_candidate(te)) {
        sch_knobs k = {{0}};
        k.v[SCH_KNOB_ALGO] = strtoll(w, NULL, 10);
        if (sch_winograd_m_ok(k.v[SCH_KNOB_ALGO]))
            return sch_default_knobs(ctx, te, hw, &k, out);
    }
    return sch_default(ctx, te, hw, out);
}
