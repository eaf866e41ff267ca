/* Schedule files written by people (smelt compile --schedule FILE): entries
 * "task NAME" followed by steps in the text form, applied to the generated
 * functions they name before the records and the default rules are asked.
 * Unlike a record, an entry that does not replay is an error naming the
 * file, the line and the step. */
#include <ctype.h>
#include <string.h>

#include "sched/sched.h"

#define USER_FILE_MAX_BYTES (1 << 20)

static const char *strip_prefix(const char *msg, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(msg, prefix, n) == 0 ? msg + n : msg;
}

static bool is_key_prefix(const char *s)
{
    size_t n = strlen(s);
    if (n < 8 || n > SCH_KEY_LEN) return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i])) return false;
    return true;
}

void sch_user_file_fini(sch_user_file *uf)
{
    for (int i = 0; i < uf->n; i++) {
        sch_schedule_fini(&uf->entries[i].sched);
        smelt_free(uf->entries[i].step_line);
    }
    smelt_free(uf->entries);
    smelt_free(uf->path);
    smelt_free(uf->task_names);
    memset(uf, 0, sizeof *uf);
}

static smelt_status add_entry(smelt_ctx *ctx, sch_user_file *uf, const char *task, int line)
{
    for (int i = 0; i < uf->n; i++)
        if (strcmp(uf->entries[i].task, task) == 0)
            return smelt_errf(ctx, SMELT_ERR_ARG, "%s:%d: task '%s' has an entry already (line %d)",
                              uf->path, line, task, uf->entries[i].line);
    sch_user_entry *grown = smelt_realloc(uf->entries, sizeof *grown * (size_t)uf->n,
                                          sizeof *grown * (size_t)(uf->n + 1));
    if (!grown) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    uf->entries = grown;
    sch_user_entry *e = &uf->entries[uf->n++];
    memset(e, 0, sizeof *e);
    sch_schedule_init(&e->sched);
    e->line = line;
    e->task = smelt_arena_strdup(&e->sched.arena, task);
    if (!e->task) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    return SMELT_OK;
}

static smelt_status add_step_line(smelt_ctx *ctx, sch_user_file *uf, const char *text, int line)
{
    sch_user_entry *e = &uf->entries[uf->n - 1];
    smelt_ctx local = {.status = SMELT_OK};
    int before = e->sched.n;
    if (sch_schedule_parse(&local, text, &e->sched) != SMELT_OK)
        return smelt_errf(ctx, local.status, "%s:%d: %s", uf->path, line,
                          strip_prefix(local.message, "schedule line 1: "));
    int *grown = smelt_realloc(e->step_line, sizeof *grown * (size_t)before,
                               sizeof *grown * (size_t)e->sched.n);
    if (!grown) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    e->step_line = grown;
    for (int i = before; i < e->sched.n; i++) e->step_line[i] = line;
    return SMELT_OK;
}

smelt_status sch_user_file_parse(smelt_ctx *ctx, const char *path, const char *text,
                                 sch_user_file *out)
{
    memset(out, 0, sizeof *out);
    out->path = smelt_strdup(path ? path : "<schedule>");
    if (!out->path) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    smelt_status s = SMELT_OK;
    int line = 0;
    for (const char *p = text; s == SMELT_OK && *p;) {
        line++;
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char buf[1024];
        if (n >= sizeof buf) {
            s = smelt_errf(ctx, SMELT_ERR_ARG, "%s:%d: line longer than %d characters", out->path,
                           line, (int)sizeof buf - 1);
            break;
        }
        memcpy(buf, p, n);
        buf[n] = 0;
        char *hash = strchr(buf, '#');
        if (hash) *hash = 0;
        char *w = buf;
        while (*w == ' ' || *w == '\t' || *w == '\r') w++;
        if (strncmp(w, "task", 4) == 0 && (w[4] == ' ' || w[4] == '\t')) {
            char name[256], extra[8];
            int k = sscanf(w + 4, "%255s %7s", name, extra);
            if (k != 1)
                s = smelt_errf(ctx, SMELT_ERR_ARG, "%s:%d: 'task NAME' names one generated function "
                               "(as --dump-ir=tir prints it) or a workload key (smelt tune "
                               "--list-tasks)", out->path, line);
            else
                s = add_entry(ctx, out, name, line);
        } else if (*w) {
            if (out->n == 0)
                s = smelt_errf(ctx, SMELT_ERR_ARG, "%s:%d: a step before the first 'task NAME' line",
                               out->path, line);
            else
                s = add_step_line(ctx, out, w, line);
        }
        p += n;
        if (*p) p++;
    }
    if (s != SMELT_OK) sch_user_file_fini(out);
    return s;
}

smelt_status sch_user_file_load(smelt_ctx *ctx, const char *path, sch_user_file *out)
{
    memset(out, 0, sizeof *out);
    void *data = NULL;
    size_t size = 0;
    smelt_status s = smelt_read_file(ctx, path, USER_FILE_MAX_BYTES, &data, &size);
    if (s != SMELT_OK) {
        smelt_ctx_append(ctx, " (schedule file)");
        return s;
    }
    char *text = smelt_alloc(size + 1);
    if (!text) {
        smelt_free(data);
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    memcpy(text, data, size);
    text[size] = 0;
    smelt_free(data);
    if (strlen(text) != size)
        s = smelt_errf(ctx, SMELT_ERR_PARSE, "%s: a NUL byte in a schedule file", path);
    else
        s = sch_user_file_parse(ctx, path, text, out);
    smelt_free(text);
    return s;
}

static void step_text(const sch_step *step, char *buf, size_t cap)
{
    sch_schedule one = {.n = 1, .cap = 1, .steps = (sch_step *)step};
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    sch_schedule_print(&one, &sb);
    snprintf(buf, cap, "%s", smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
    size_t n = strlen(buf);
    if (n && buf[n - 1] == '\n') buf[n - 1] = 0;
}

/* Remember each function's name and key for the "no such task" message. */
static void note_task(sch_user_file *uf, const char *func_name, const char *key)
{
    if (uf->task_names_len > 4000) return;
    char line[160];
    int n = snprintf(line, sizeof line, "%s%s (%.8s)", uf->task_names_len ? ", " : "", func_name, key);
    char *grown = smelt_realloc(uf->task_names, uf->task_names_len,
                                uf->task_names_len + (size_t)n + 1);
    if (!grown) return;
    memcpy(grown + uf->task_names_len, line, (size_t)n + 1);
    uf->task_names = grown;
    uf->task_names_len += (size_t)n;
}

smelt_status sch_user_choose(smelt_ctx *ctx, sch_user_file *uf, const te_graph *te,
                             const char *func_name, sch_schedule *out, bool *found)
{
    *found = false;
    char key[SCH_KEY_LEN + 1];
    sch_workload_key(te, uf->target_key, key);
    note_task(uf, func_name, key);
    sch_user_entry *e = NULL;
    for (int i = 0; i < uf->n && !e; i++) {
        const char *t = uf->entries[i].task;
        if (strcmp(t, func_name) == 0 ||
            (is_key_prefix(t) && strncmp(key, t, strlen(t)) == 0))
            e = &uf->entries[i];
    }
    if (!e) return SMELT_OK;
    e->uses++;
    /* replay step by step so that an illegal step is named */
    sch_schedule prefix = e->sched;
    for (int i = 1; i <= e->sched.n; i++) {
        prefix.n = i;
        smelt_ctx local = {.status = SMELT_OK};
        sch_state *st = NULL;
        smelt_status r = sch_state_build(&local, te, &prefix, &st);
        sch_state_free(st);
        if (r != SMELT_OK) {
            char text[256], pre[160];
            step_text(&e->sched.steps[i - 1], text, sizeof text);
            snprintf(pre, sizeof pre, "schedule step on '%s': ", e->sched.steps[i - 1].stage);
            return smelt_errf(ctx, r, "%s:%d: task '%s' (function %s): step '%s': %s", uf->path,
                              e->step_line[i - 1], e->task, func_name, text,
                              strip_prefix(local.message, pre));
        }
    }
    for (int i = 0; i < e->sched.n; i++) SMELT_TRY(sch_add(ctx, out, &e->sched.steps[i]));
    *found = true;
    return SMELT_OK;
}

smelt_status sch_user_file_check_used(smelt_ctx *ctx, const sch_user_file *uf)
{
    for (int i = 0; i < uf->n; i++)
        if (!uf->entries[i].uses)
            return smelt_errf(ctx, SMELT_ERR_ARG, "%s:%d: no generated function is task '%s' (the "
                              "functions: %s)", uf->path, uf->entries[i].line,
                              uf->entries[i].task, uf->task_names ? uf->task_names : "none");
    return SMELT_OK;
}
