/* Tuning tasks: the unique workloads (one per distinct te graph of a
 * generated function) of the models being tuned, and the target key their
 * measurements are valid for. */
#include <string.h>

#include "tune/tune.h"

/* ---- target key ---- */

/* "vendor family model: model name" of the first CPU, from /proc/cpuinfo. */
static void cpu_identity(char *out, size_t cap)
{
    char vendor[64] = "", family[16] = "", model[16] = "", name[128] = "", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) {
            if (name[0]) break; /* end of the first processor's block */
            continue;
        }
        char *v = colon + 1 + (colon[1] == ' ');
        v[strcspn(v, "\n")] = '\0';
        if (!strncmp(line, "vendor_id", 9)) snprintf(vendor, sizeof vendor, "%s", v);
        else if (!strncmp(line, "cpu family", 10)) snprintf(family, sizeof family, "%s", v);
        else if (!strncmp(line, "model name", 10)) snprintf(name, sizeof name, "%s", v);
        else if (!strncmp(line, "model\t", 6)) snprintf(model, sizeof model, "%s", v);
    }
    if (f) fclose(f);
    snprintf(out, cap, "%s %s %s: %s", vendor[0] ? vendor : "unknown-cpu", family, model, name);
}

smelt_status tune_target_key(smelt_ctx *ctx, const cg_target *t, char *out, size_t cap)
{
    char cc[256], cpu[256] = "any cpu";
    SMELT_TRY(cg_compiler_identity(ctx, cc, sizeof cc));
    cpu_identity(cpu, sizeof cpu);
    snprintf(out, cap, "%s%s | %s | %s", t->name, t->native ? " (native)" : "", cpu, cc);
    return SMELT_OK;
}

/* ---- workload descriptions ---- */

double tune_te_flops(const te_graph *te)
{
    double flops = 0;
    for (int i = 0; i < te->tensors.len; i++) {
        const te_tensor *t = te->tensors.items[i];
        if (t->ext) flops += t->ext->flops;
        if (t->kind != TE_COMPUTE) continue;
        double n = 1;
        for (int d = 0; d < t->n_axes; d++) n *= (double)t->axes[d].extent;
        if (t->body && t->body->kind == IR_REDUCE) {
            for (int k = 0; k < t->body->reduce.n_axes; k++)
                n *= (double)t->body->reduce.axes[k].extent;
            n *= 2;
        }
        flops += n;
    }
    return flops;
}

/* The stage that does the work: an extern stage, else the one the rules
 * tile (the first reduction, else the first output). */
static const te_tensor *main_tensor(const te_graph *te)
{
    for (int i = 0; i < te->tensors.len; i++)
        if (((const te_tensor *)te->tensors.items[i])->ext) return te->tensors.items[i];
    for (int i = 0; i < te->tensors.len; i++) {
        const te_tensor *t = te->tensors.items[i];
        if (t->kind == TE_COMPUTE && t->body && t->body->kind == IR_REDUCE) return t;
    }
    return te->outputs.len ? te->outputs.items[0] : NULL;
}

void tune_te_summary(const te_graph *te, const char *rule, char *out, size_t cap)
{
    const te_tensor *t = main_tensor(te);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    smelt_strbuf_printf(&sb, "%s", rule);
    if (t) {
        smelt_strbuf_printf(&sb, " %s %s[", t->tag, smelt_dtype_name(t->buf->dtype));
        for (int d = 0; d < t->buf->rank; d++) /* an extern stage has no axes */
            smelt_strbuf_printf(&sb, "%s%lld", d ? "," : "", (long long)t->buf->shape[d]);
        smelt_strbuf_append(&sb, "]");
        if (t->body && t->body->kind == IR_REDUCE) {
            smelt_strbuf_append(&sb, " sum[");
            for (int k = 0; k < t->body->reduce.n_axes; k++)
                smelt_strbuf_printf(&sb, "%s%lld", k ? "," : "",
                                    (long long)t->body->reduce.axes[k].extent);
            smelt_strbuf_append(&sb, "]");
        }
    }
    smelt_strbuf_printf(&sb, " (%d stages)", te->tensors.len);
    snprintf(out, cap, "%s", smelt_strbuf_cstr(&sb));
    smelt_strbuf_fini(&sb);
}

int64_t tune_space_size(const sch_knob_space *sp)
{
    int64_t n = 1;
    for (int k = 0; k < SCH_KNOB_COUNT_; k++)
        if (sp->n_values[k] > 0 && n < INT64_MAX / (sp->n_values[k] + 1))
            n *= sp->n_values[k] + 1; /* + 0: the rule's own choice */
    return n;
}

/* ---- extraction ---- */

typedef struct extract_state {
    smelt_ctx *ctx;
    tune_task_list *list;
    int model, n_units;
    const smelt_hw *hw;
    const char *target_key;
    smelt_status status;
} extract_state;

static tune_task *find_task(tune_task_list *l, const char *key)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->tasks[i].key, key) == 0) return &l->tasks[i];
    return NULL;
}

static tune_task *new_task(extract_state *x)
{
    tune_task_list *l = x->list;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        tune_task *nt = smelt_realloc(l->tasks, sizeof *nt * (size_t)l->cap, sizeof *nt * (size_t)cap);
        if (!nt) return NULL;
        l->tasks = nt;
        l->cap = cap;
    }
    tune_task *t = &l->tasks[l->n++];
    memset(t, 0, sizeof *t);
    return t;
}

static void on_unit(void *user, int unit, const te_graph *te)
{
    extract_state *x = user;
    if (x->status != SMELT_OK || unit >= x->n_units) return; /* output copies: nothing to tune */
    char key[SCH_KEY_LEN + 1];
    sch_workload_key(te, x->target_key, key);
    tune_task *t = find_task(x->list, key);
    if (t) {
        t->weight++;
        return;
    }
    if (!(t = new_task(x))) {
        x->status = smelt_errf(x->ctx, SMELT_ERR_NOMEM, "out of memory");
        return;
    }
    memcpy(t->key, key, sizeof key);
    t->model = x->model;
    t->unit = unit;
    t->weight = 1;
    t->flops = tune_te_flops(te);
    x->status = sch_default_space(x->ctx, te, x->hw, &t->space);
    t->space_size = tune_space_size(&t->space);
    tune_te_summary(te, t->space.rule, t->summary, sizeof t->summary);
}

smelt_status tune_extract_tasks(smelt_ctx *ctx, const gr_graph *g, int model, const smelt_hw *hw,
                                const char *target_key, tune_task_list *list)
{
    extract_state x = {ctx, list, model, lower_count_units(g), hw, target_key, SMELT_OK};
    lower_options lo = {.hw = hw, .on_unit = on_unit, .on_unit_user = &x};
    lowered_program *lp = NULL;
    smelt_status s = lower_graph(ctx, g, &lo, &lp);
    lowered_program_free(lp);
    return s != SMELT_OK ? s : x.status;
}
