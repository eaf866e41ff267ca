/* Tuning records: one JSON object per line, appended and flushed as each
 * measurement ends, so an interrupted run loses nothing.
 *
 *   {"v":1,"task":"<32 hex>","target":"...","op":"...","knobs":[0,8,0,0,0],
 *    "schedule":"split y i3 8\n...","status":"ok","ms":0.1234,"spread":0.02,
 *    "flops":1.2e7,"verified":false,"reason":""}
 *
 * A records file is untrusted input: the parser accepts only flat objects of
 * strings, numbers, booleans and arrays of integers, within the caps in
 * tune.h, and a line it cannot read is counted and skipped, never fatal. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "tune/tune.h"

static const char *const status_names[TUNE_STATUS_COUNT_] = {
    "ok", "invalid_schedule", "build_error", "crash", "timeout", "wrong", "run_error"};

const char *tune_status_name(tune_status s)
{
    return s >= 0 && s < TUNE_STATUS_COUNT_ ? status_names[s] : "?";
}

static bool status_from_name(const char *n, tune_status *out)
{
    for (int i = 0; i < TUNE_STATUS_COUNT_; i++)
        if (strcmp(status_names[i], n) == 0) {
            *out = (tune_status)i;
            return true;
        }
    return false;
}

/* ---- writing ---- */

static void json_string(smelt_strbuf *out, const char *s)
{
    smelt_strbuf_append(out, "\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') smelt_strbuf_printf(out, "\\%c", *p);
        else if (*p == '\n') smelt_strbuf_append(out, "\\n");
        else if (*p < 0x20 || *p >= 0x7f) smelt_strbuf_printf(out, "\\u%04x", *p);
        else smelt_strbuf_appendn(out, (const char *)p, 1);
    }
    smelt_strbuf_append(out, "\"");
}

static void json_number(smelt_strbuf *out, double v)
{
    if (!isfinite(v)) v = 0; /* JSON has no inf/nan */
    smelt_strbuf_printf(out, "%.6g", v);
}

smelt_status tune_record_write(smelt_ctx *ctx, smelt_strbuf *out, const tune_record *r)
{
    smelt_strbuf_printf(out, "{\"v\":%d,\"task\":", TUNE_RECORD_SCHEMA);
    json_string(out, r->task);
    smelt_strbuf_append(out, ",\"target\":");
    json_string(out, r->target);
    smelt_strbuf_append(out, ",\"op\":");
    json_string(out, r->op);
    smelt_strbuf_append(out, ",\"knobs\":[");
    for (int i = 0; i < SCH_KNOB_COUNT_; i++)
        smelt_strbuf_printf(out, "%s%lld", i ? "," : "", (long long)r->knobs[i]);
    smelt_strbuf_append(out, "],\"schedule\":");
    json_string(out, r->schedule);
    smelt_strbuf_append(out, ",\"status\":");
    json_string(out, tune_status_name(r->status));
    smelt_strbuf_append(out, ",\"ms\":");
    json_number(out, r->ms);
    smelt_strbuf_append(out, ",\"spread\":");
    json_number(out, r->spread);
    smelt_strbuf_append(out, ",\"flops\":");
    json_number(out, r->flops);
    if (r->rel > 0) {
        smelt_strbuf_append(out, ",\"raw_ms\":");
        json_number(out, r->raw_ms);
        smelt_strbuf_append(out, ",\"rel\":");
        json_number(out, r->rel);
    }
    smelt_strbuf_printf(out, ",\"verified\":%s,\"reason\":", r->verified ? "true" : "false");
    json_string(out, r->reason);
    smelt_strbuf_append(out, "}\n");
    return out->failed ? smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory") : SMELT_OK;
}

smelt_status tune_record_append(smelt_ctx *ctx, FILE *f, const tune_record *r)
{
    smelt_strbuf line;
    smelt_strbuf_init(&line);
    smelt_status s = tune_record_write(ctx, &line, r);
    if (s == SMELT_OK && (fwrite(line.data, 1, line.len, f) != line.len || fflush(f) != 0))
        s = smelt_errf(ctx, SMELT_ERR_IO, "writing a tuning record: %s", strerror(errno));
    smelt_strbuf_fini(&line);
    return s;
}

/* ---- reading: a flat JSON object ---- */

typedef struct json_in {
    const char *p, *end;
    smelt_ctx *ctx;
} json_in;

static smelt_status bad(json_in *in, const char *what)
{
    return smelt_errf(in->ctx, SMELT_ERR_PARSE, "tuning record: %s", what);
}

static void skip_ws(json_in *in)
{
    while (in->p < in->end && (*in->p == ' ' || *in->p == '\t' || *in->p == '\r')) in->p++;
}

static bool eat(json_in *in, char c)
{
    skip_ws(in);
    if (in->p < in->end && *in->p == c) {
        in->p++;
        return true;
    }
    return false;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string into out (NUL-terminated, smelt_alloc'd).  \u escapes above
 * 0x7f are kept as '?': our own writer never makes them. */
static smelt_status parse_string(json_in *in, char **out)
{
    *out = NULL;
    if (!eat(in, '"')) return bad(in, "expected a string");
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    while (in->p < in->end && *in->p != '"') {
        char c = *in->p++;
        if ((unsigned char)c < 0x20) break;
        if (c != '\\') {
            smelt_strbuf_appendn(&sb, &c, 1);
            continue;
        }
        if (in->p >= in->end) break;
        char e = *in->p++, v;
        switch (e) {
        case 'n': v = '\n'; break;
        case 't': v = '\t'; break;
        case 'r': v = '\r'; break;
        case 'b': v = '\b'; break;
        case 'f': v = '\f'; break;
        case '"': case '\\': case '/': v = e; break;
        case 'u': {
            int code = 0;
            for (int k = 0; k < 4; k++) {
                int d = in->p < in->end ? hex_digit(*in->p++) : -1;
                if (d < 0) {
                    smelt_strbuf_fini(&sb);
                    return bad(in, "bad \\u escape");
                }
                code = code * 16 + d;
            }
            v = code >= 1 && code < 0x80 ? (char)code : '?';
            break;
        }
        default:
            smelt_strbuf_fini(&sb);
            return bad(in, "bad escape in a string");
        }
        smelt_strbuf_appendn(&sb, &v, 1);
    }
    if (in->p >= in->end || *in->p != '"') {
        smelt_strbuf_fini(&sb);
        return bad(in, "unterminated string");
    }
    in->p++;
    if (sb.failed) {
        smelt_strbuf_fini(&sb);
        return smelt_errf(in->ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    *out = smelt_strdup(smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
    return *out ? SMELT_OK : smelt_errf(in->ctx, SMELT_ERR_NOMEM, "out of memory");
}

static smelt_status parse_number(json_in *in, double *out)
{
    skip_ws(in);
    char buf[64];
    size_t n = 0;
    while (in->p < in->end && n < sizeof buf - 1 && strchr("+-.0123456789eE", *in->p))
        buf[n++] = *in->p++;
    buf[n] = '\0';
    char *endp;
    errno = 0;
    *out = n ? strtod(buf, &endp) : 0;
    if (!n || *endp || errno || !isfinite(*out)) return bad(in, "bad number");
    return SMELT_OK;
}

static smelt_status parse_bool(json_in *in, bool *out)
{
    skip_ws(in);
    size_t left = (size_t)(in->end - in->p);
    if (left >= 4 && memcmp(in->p, "true", 4) == 0) {
        in->p += 4;
        *out = true;
        return SMELT_OK;
    }
    if (left >= 5 && memcmp(in->p, "false", 5) == 0) {
        in->p += 5;
        *out = false;
        return SMELT_OK;
    }
    return bad(in, "expected true or false");
}

static smelt_status parse_knobs(json_in *in, int64_t *knobs)
{
    if (!eat(in, '[')) return bad(in, "knobs: expected an array");
    /* records written before a knob was added have fewer: the rest are 0 */
    for (int i = 0; i < SCH_KNOB_COUNT_; i++) knobs[i] = 0;
    for (int i = 0; i < SCH_KNOB_COUNT_; i++) {
        double v;
        if (i >= 6 && eat(in, ']')) return SMELT_OK;
        if (i && !eat(in, ',')) return bad(in, "knobs: expected ','");
        SMELT_TRY(parse_number(in, &v));
        if (v != floor(v) || v < 0 || v > 1e9) return bad(in, "knobs: not a small integer");
        knobs[i] = (int64_t)v;
    }
    return eat(in, ']') ? SMELT_OK : bad(in, "knobs: wrong count");
}

/* Skip a value of a key this version does not know (forward compatible):
 * only scalars. */
static smelt_status skip_value(json_in *in)
{
    skip_ws(in);
    if (in->p < in->end && *in->p == '"') {
        char *s;
        SMELT_TRY(parse_string(in, &s));
        smelt_free(s);
        return SMELT_OK;
    }
    if (in->p < in->end && (*in->p == 't' || *in->p == 'f')) {
        bool b;
        return parse_bool(in, &b);
    }
    double d;
    return parse_number(in, &d);
}

static smelt_status parse_field(json_in *in, const char *key, tune_record *r, int *schema)
{
    double d;
    if (strcmp(key, "v") == 0) {
        SMELT_TRY(parse_number(in, &d));
        *schema = d == floor(d) && fabs(d) < 1e6 ? (int)d : -1;
        return SMELT_OK;
    }
    char **str = strcmp(key, "target") == 0 ? &r->target
                 : strcmp(key, "op") == 0     ? &r->op
                 : strcmp(key, "schedule") == 0 ? &r->schedule
                                              : NULL;
    if (str) {
        smelt_free(*str);
        return parse_string(in, str);
    }
    if (strcmp(key, "task") == 0 || strcmp(key, "status") == 0 || strcmp(key, "reason") == 0) {
        char *s;
        SMELT_TRY(parse_string(in, &s));
        smelt_status st = SMELT_OK;
        if (key[0] == 'r') {
            snprintf(r->reason, sizeof r->reason, "%s", s);
        } else if (key[1] == 'a') {
            bool hex = strlen(s) == SCH_KEY_LEN;
            for (const char *p = s; hex && *p; p++) hex = hex_digit(*p) >= 0;
            if (hex) memcpy(r->task, s, SCH_KEY_LEN + 1);
            else st = bad(in, "task: not a workload key");
        } else if (!status_from_name(s, &r->status)) {
            st = bad(in, "unknown status");
        }
        smelt_free(s);
        return st;
    }
    if (strcmp(key, "knobs") == 0) return parse_knobs(in, r->knobs);
    if (strcmp(key, "verified") == 0) return parse_bool(in, &r->verified);
    double *num = strcmp(key, "ms") == 0       ? &r->ms
                  : strcmp(key, "spread") == 0 ? &r->spread
                  : strcmp(key, "flops") == 0  ? &r->flops
                  : strcmp(key, "raw_ms") == 0 ? &r->raw_ms
                  : strcmp(key, "rel") == 0    ? &r->rel
                                               : NULL;
    if (num) {
        SMELT_TRY(parse_number(in, num));
        return *num >= 0 ? SMELT_OK : bad(in, "negative time or count");
    }
    return skip_value(in);
}

void tune_record_fini(tune_record *r)
{
    smelt_free(r->target);
    smelt_free(r->op);
    smelt_free(r->schedule);
    memset(r, 0, sizeof *r);
}

smelt_status tune_record_parse(smelt_ctx *ctx, const char *line, size_t len, tune_record *r)
{
    memset(r, 0, sizeof *r);
    json_in in = {line, line + len, ctx};
    int schema = 0;
    smelt_status s = eat(&in, '{') ? SMELT_OK : bad(&in, "expected '{'");
    for (bool first = true; s == SMELT_OK && !eat(&in, '}'); first = false) {
        char *key = NULL;
        if (!first && !eat(&in, ',')) s = bad(&in, "expected ',' or '}'");
        if (s == SMELT_OK) s = parse_string(&in, &key);
        if (s == SMELT_OK && !eat(&in, ':')) s = bad(&in, "expected ':'");
        if (s == SMELT_OK) s = parse_field(&in, key, r, &schema);
        smelt_free(key);
    }
    skip_ws(&in);
    if (s == SMELT_OK && in.p != in.end) s = bad(&in, "text after the object");
    if (s == SMELT_OK && schema != TUNE_RECORD_SCHEMA)
        s = smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "tuning record of schema %d (this smelt reads %d)",
                       schema, TUNE_RECORD_SCHEMA);
    if (s == SMELT_OK && (!r->task[0] || !r->target || !r->schedule))
        s = bad(&in, "task, target and schedule are required");
    if (s != SMELT_OK) tune_record_fini(r);
    return s;
}

/* ---- the database ---- */

/* ---- indexes ---- */

static char *task_key(smelt_arena *a, const char *task, const char *target)
{
    return smelt_arena_printf(a, "%s|%s", task, target);
}

static char *schedule_key(smelt_arena *a, const char *task, const char *target,
                          const char *schedule)
{
    return smelt_arena_printf(a, "%s|%s|%016llx", task, target,
                              (unsigned long long)smelt_hash_bytes(schedule, strlen(schedule), 0));
}

static void *index_value(int i) { return (void *)(intptr_t)(i + 1); }
static int index_of(void *v) { return (int)(intptr_t)v - 1; }

/* Is a better than b as the record to apply? */
static bool better_record(const tune_record *a, const tune_record *b)
{
    if (a->status != TUNE_OK || a->ms <= 0) return false;
    if (!b) return true;
    if (a->verified != b->verified) return a->verified;
    return a->ms < b->ms;
}

static bool index_record(tune_db *db, int i)
{
    const tune_record *r = &db->recs[i];
    char *tk = task_key(&db->keys, r->task, r->target);
    char *sk = schedule_key(&db->keys, r->task, r->target, r->schedule);
    if (!tk || !sk) return false;
    void *first = smelt_strmap_get(&db->by_schedule, sk);
    if (!first && !smelt_strmap_put(&db->by_schedule, sk, index_value(i))) return false;
    void *best = smelt_strmap_get(&db->by_task, tk);
    if (!better_record(r, best ? &db->recs[index_of(best)] : NULL)) return true;
    return smelt_strmap_put(&db->by_task, tk, index_value(i));
}

smelt_status tune_db_add(smelt_ctx *ctx, tune_db *db, const tune_record *r)
{
    if (db->n >= TUNE_RECORDS_MAX)
        return smelt_errf(ctx, SMELT_ERR_LIMIT, "more than %d tuning records (TUNE_RECORDS_MAX)",
                          TUNE_RECORDS_MAX);
    if (db->n == db->cap) {
        int cap = db->cap ? db->cap * 2 : 64;
        tune_record *nr = smelt_realloc(db->recs, sizeof *nr * (size_t)db->cap, sizeof *nr * (size_t)cap);
        if (!nr) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
        db->recs = nr;
        db->cap = cap;
    }
    tune_record *d = &db->recs[db->n];
    *d = *r;
    d->target = smelt_strdup(r->target ? r->target : "");
    d->op = smelt_strdup(r->op ? r->op : "");
    d->schedule = smelt_strdup(r->schedule ? r->schedule : "");
    if (!d->target || !d->op || !d->schedule || !index_record(db, db->n)) {
        tune_record_fini(d);
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    db->n++;
    return SMELT_OK;
}

void tune_db_fini(tune_db *db)
{
    for (int i = 0; i < db->n; i++) tune_record_fini(&db->recs[i]);
    smelt_free(db->recs);
    smelt_strmap_fini(&db->by_task);
    smelt_strmap_fini(&db->by_schedule);
    smelt_arena_fini(&db->keys);
    memset(db, 0, sizeof *db);
}

static smelt_status load_line(smelt_ctx *ctx, tune_db *db, const char *line, size_t len)
{
    if (len == 0) return SMELT_OK;
    smelt_ctx local = {.status = SMELT_OK};
    tune_record r;
    if (len > TUNE_RECORD_MAX_LINE) {
        db->malformed++;
        return SMELT_OK;
    }
    smelt_status s = tune_record_parse(&local, line, len, &r);
    if (s == SMELT_ERR_NOMEM) return smelt_errf(ctx, s, "out of memory");
    if (s != SMELT_OK) {
        if (s == SMELT_ERR_UNSUPPORTED) db->bad_schema++;
        else db->malformed++;
        return SMELT_OK;
    }
    if (db->target_key[0] && strcmp(r.target, db->target_key) != 0) {
        db->other_target++;
        tune_record_fini(&r);
        return SMELT_OK;
    }
    s = tune_db_add(ctx, db, &r);
    tune_record_fini(&r);
    return s;
}

smelt_status tune_db_load_bytes(smelt_ctx *ctx, const void *data, size_t size,
                                const char *target_key, tune_db *db)
{
    memset(db, 0, sizeof *db);
    snprintf(db->target_key, sizeof db->target_key, "%s", target_key ? target_key : "");
    if (size > TUNE_RECORDS_MAX_BYTES)
        return smelt_errf(ctx, SMELT_ERR_LIMIT, "a records file over %zu bytes (TUNE_RECORDS_MAX_BYTES)",
                          TUNE_RECORDS_MAX_BYTES);
    const char *p = data, *end = p + size;
    smelt_status s = SMELT_OK;
    while (s == SMELT_OK && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end; /* a last line without newline: cut by a kill */
        s = load_line(ctx, db, p, (size_t)(stop - p));
        p = nl ? nl + 1 : end;
    }
    if (s != SMELT_OK) tune_db_fini(db);
    return s;
}

smelt_status tune_db_load(smelt_ctx *ctx, const char *path, const char *target_key, tune_db *db)
{
    memset(db, 0, sizeof *db);
    snprintf(db->target_key, sizeof db->target_key, "%s", target_key ? target_key : "");
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return SMELT_OK;
        return smelt_errf(ctx, SMELT_ERR_IO, "cannot read records '%s': %s", path, strerror(errno));
    }
    fclose(f);
    void *data;
    size_t size;
    SMELT_TRY(smelt_read_file(ctx, path, TUNE_RECORDS_MAX_BYTES, &data, &size));
    smelt_status s = tune_db_load_bytes(ctx, data, size, target_key, db);
    smelt_free(data);
    return s;
}

/* A lookup key in a scratch arena: the maps are keyed by strings. */
static const tune_record *lookup(const tune_db *db, const smelt_strmap *map, const char *key)
{
    void *v = key ? smelt_strmap_get(map, key) : NULL;
    return v ? &db->recs[index_of(v)] : NULL;
}

const tune_record *tune_db_best_for(const tune_db *db, const char *task, const char *target)
{
    smelt_arena a;
    smelt_arena_init(&a);
    const tune_record *r = lookup(db, &db->by_task, task_key(&a, task, target));
    smelt_arena_fini(&a);
    return r;
}

const tune_record *tune_db_best(const tune_db *db, const char *task)
{
    return tune_db_best_for(db, task, db->target_key);
}

const tune_record *tune_db_find(const tune_db *db, const char *task, const char *schedule)
{
    smelt_arena a;
    smelt_arena_init(&a);
    const tune_record *r = lookup(db, &db->by_schedule, schedule_key(&a, task, db->target_key, schedule));
    smelt_arena_fini(&a);
    return r && strcmp(r->schedule, schedule) == 0 ? r : NULL;
}

static const char *db_find(void *user, const char *key)
{
    const tune_record *r = tune_db_best(user, key);
    return r ? r->schedule : NULL;
}

sch_source tune_db_source(tune_db *db)
{
    sch_source s = {db->target_key, db_find, db};
    return s;
}
