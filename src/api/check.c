/* Public check API: run one ONNX backend-test folder and compare its
 * outputs (what `smelt check` runs per folder). */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend/onnx.h"
#include "ops/op.h"
#include "smelt_internal.h"

void smelt_check_options_init(smelt_check_options *o)
{
    memset(o, 0, sizeof *o);
    o->mode = SMELT_CHECK_COMPILED;
    o->rtol = 1e-3;
    o->atol = 1e-7;
    smelt_options_init(&o->compile);
}

smelt_check_result smelt_check_test(const char *dir, const smelt_check_options *o, char *why,
                                    size_t cap)
{
    if (!dir || !o || (!why && cap)) {
        if (why && cap) snprintf(why, cap, "NULL folder or options");
        return SMELT_CHECK_FAIL;
    }
    return smelt_check_test_noting(dir, o, NULL, why, cap);
}

/* ---- finding data sets ---- */

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int smelt_list_dir(const char *dir, const char *prefix, smelt_ptrvec *out)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (prefix && strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        char *p = smelt_alloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!p) break;
        sprintf(p, "%s/%s", dir, e->d_name);
        if (!smelt_ptrvec_push(out, p)) {
            smelt_free(p);
            break;
        }
    }
    closedir(d);
    if (out->len) qsort(out->items, (size_t)out->len, sizeof(void *), cmp_str); /* items NULL if empty */
    return 0;
}

void smelt_list_free(smelt_ptrvec *v)
{
    for (int i = 0; i < v->len; i++) smelt_free(v->items[i]);
    smelt_ptrvec_fini(v);
}

/* ---- comparing ---- */

static bool values_close(double got, double want, const smelt_check_options *o)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= o->atol + o->rtol * fabs(want);
}

/* Sequences and optionals: the same count, each element compared. */
static smelt_check_result compare_containers(const smelt_tensor *got, const smelt_tensor *want,
                                             const smelt_check_options *o, char *why, size_t cap)
{
    const char *name = want->name ? want->name : "";
    if (got->rank != 1 || got->dims[0] != want->dims[0]) {
        snprintf(why, cap, "output '%s': %lld elements, expected %lld", name,
                 got->rank == 1 ? (long long)got->dims[0] : -1LL, (long long)want->dims[0]);
        return SMELT_CHECK_FAIL;
    }
    const smelt_tensor *g = got->data, *w = want->data;
    for (int64_t i = 0; i < want->dims[0]; i++) {
        smelt_tensor wi = w[i];
        char elem[256];
        snprintf(elem, sizeof elem, "%s[%lld]", name, (long long)i);
        wi.name = elem;
        if (smelt_check_compare(&g[i], &wi, o, why, cap) != SMELT_CHECK_PASS)
            return SMELT_CHECK_FAIL;
    }
    return SMELT_CHECK_PASS;
}

/* "[2,3]" into out. */
static void dims_text(const smelt_tensor *t, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < t->rank && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (n < cap) snprintf(out + n, cap - n, "]");
}

smelt_check_result smelt_check_compare(const smelt_tensor *got, const smelt_tensor *want,
                                       const smelt_check_options *o, char *why, size_t cap)
{
    if (got->dtype == want->dtype && smelt_dtype_is_container(want->dtype))
        return compare_containers(got, want, o, why, cap);
    if (got->dtype != want->dtype) {
        snprintf(why, cap, "output '%s': dtype %s, expected %s", want->name ? want->name : "",
                 smelt_dtype_name(got->dtype), smelt_dtype_name(want->dtype));
        return SMELT_CHECK_FAIL;
    }
    bool same_shape = got->rank == want->rank;
    for (int i = 0; same_shape && i < got->rank; i++) same_shape = got->dims[i] == want->dims[i];
    if (!same_shape) {
        char gd[160], wd[160];
        dims_text(got, gd, sizeof gd);
        dims_text(want, wd, sizeof wd);
        snprintf(why, cap, "output '%s': shape %s, expected %s", want->name ? want->name : "", gd, wd);
        return SMELT_CHECK_FAIL;
    }
    int64_t n = smelt_tensor_numel(want), worst = -1, bad = 0;
    double worst_err = -1;
    bool exact = !op_dtype_is_float(want->dtype);
    bool codes = smelt_dtype_is_lowbit_float(want->dtype); /* float8/float4: bit-exact */
    for (int64_t i = 0; i < n; i++) {
        double g = op_get_f64(got, i), w = op_get_f64(want, i);
        bool ok = codes   ? ((const uint8_t *)got->data)[i] == ((const uint8_t *)want->data)[i]
                  : exact ? op_get_i64(got, i) == op_get_i64(want, i)
                          : values_close(g, w, o);
        if (ok) continue;
        bad++;
        double err = isnan(g) || isnan(w) || g == w ? INFINITY : fabs(g - w); /* g == w: -0/+0 */
        if (err > worst_err) {
            worst_err = err;
            worst = i;
        }
    }
    if (!bad) return SMELT_CHECK_PASS;
    snprintf(why, cap, "output '%s': %lld of %lld elements differ; worst at flat index %lld: "
             "got %.9g, expected %.9g (rtol %g, atol %g)",
             want->name ? want->name : "", (long long)bad, (long long)n, (long long)worst,
             op_get_f64(got, worst), op_get_f64(want, worst), o->rtol, o->atol);
    return SMELT_CHECK_FAIL;
}

/* ---- running one data set ---- */

static smelt_status run_model(smelt_ctx *ctx, smelt_model *m, smelt_check_mode mode,
                              const smelt_tensor *in, int ni, smelt_tensor *out, int no)
{
    switch (mode) {
    case SMELT_CHECK_TE: return smelt_model_run_te(ctx, m, in, ni, out, no);
    case SMELT_CHECK_COMPILED:
        if (smelt_model_runs_cross(m)) return smelt_model_run_cross(ctx, m, in, ni, out, no);
        return smelt_model_run(ctx, m, in, ni, out, no);
    default: return smelt_model_run_reference(ctx, m, in, ni, out, no);
    }
}

/* The files of the model's inputs or outputs: TensorProtos, or for those
 * the model types as sequences or optionals their SequenceProto/OptionalProto. */
static smelt_status load_numbered(smelt_ctx *ctx, const smelt_model *m, const char *dir,
                                  const char *prefix, smelt_tensor **out, int max, int *count)
{
    bool inputs = strcmp(prefix, "input") == 0;
    int declared = inputs ? smelt_model_num_inputs(m) : smelt_model_num_outputs(m);
    *count = 0;
    for (int i = 0; i < max; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, i);
        if (!is_file(path)) break;
        smelt_dtype dt = SMELT_DT_UNDEFINED;
        if (i < declared && inputs) smelt_model_input_info(m, i, NULL, &dt, NULL, NULL);
        else if (i < declared) smelt_model_output_info(m, i, NULL, &dt, NULL, NULL);
        SMELT_TRY(onnx_value_load_pb(ctx, path, dt, &out[i]));
        (*count)++;
    }
    return SMELT_OK;
}

/* ONNX's backend tests store bfloat16 data as uint16 tensors (numpy has no
 * bfloat16): read them as the bfloat16 the model declares. */
static void fix_bfloat16_test_data(const smelt_model *m, smelt_tensor *in, int ni,
                                   smelt_tensor **want, int nw)
{
    for (int i = 0; i < ni && i < smelt_model_num_inputs(m); i++) {
        smelt_dtype dt;
        smelt_model_input_info(m, i, NULL, &dt, NULL, NULL);
        if (dt == SMELT_DT_BFLOAT16 && in[i].dtype == SMELT_DT_UINT16) in[i].dtype = dt;
    }
    for (int i = 0; i < nw && i < smelt_model_num_outputs(m); i++) {
        smelt_dtype dt;
        smelt_model_output_info(m, i, NULL, &dt, NULL, NULL);
        if (dt == SMELT_DT_BFLOAT16 && want[i]->dtype == SMELT_DT_UINT16) want[i]->dtype = dt;
    }
}

static smelt_check_result run_data_set(smelt_ctx *ctx, smelt_model *m, const char *set_dir,
                                 const smelt_check_options *o, char *why, size_t cap)
{
    enum { MAX_IO = 64 };
    smelt_tensor *ins[MAX_IO] = {0}, *wants[MAX_IO] = {0}, gots[MAX_IO];
    smelt_tensor in_vals[MAX_IO];
    int ni = 0, nw = 0, no = smelt_model_num_outputs(m);
    smelt_check_result r = SMELT_CHECK_PASS;
    memset(gots, 0, sizeof gots);
    if (load_numbered(ctx, m, set_dir, "input", ins, MAX_IO, &ni) != SMELT_OK ||
        load_numbered(ctx, m, set_dir, "output", wants, MAX_IO, &nw) != SMELT_OK) {
        snprintf(why, cap, "%s", smelt_ctx_message(ctx));
        r = SMELT_CHECK_FAIL;
    } else if (nw != no || no > MAX_IO) {
        snprintf(why, cap, "model has %d outputs, test data has %d", no, nw);
        r = SMELT_CHECK_FAIL;
    }
    for (int i = 0; i < ni; i++) in_vals[i] = *ins[i];
    fix_bfloat16_test_data(m, in_vals, ni, wants, nw);
    if (r == SMELT_CHECK_PASS && run_model(ctx, m, o->mode, in_vals, ni, gots, no) != SMELT_OK) {
        snprintf(why, cap, "%s", smelt_ctx_message(ctx));
        r = smelt_ctx_status(ctx) == SMELT_ERR_UNSUPPORTED ? SMELT_CHECK_UNSUPPORTED : SMELT_CHECK_FAIL;
    }
    for (int i = 0; r == SMELT_CHECK_PASS && i < no; i++) r = smelt_check_compare(&gots[i], wants[i], o, why, cap);
    for (int i = 0; i < MAX_IO; i++) {
        smelt_tensor_free(ins[i]);
        smelt_tensor_free(wants[i]);
        smelt_tensor_release(&gots[i]);
    }
    return r;
}

/* The options' dims that m has (a folder tree may hold other models). */
static smelt_status apply_dims(smelt_ctx *ctx, smelt_model *m, const smelt_check_options *o)
{
    for (int i = 0; i < o->num_dims; i++) {
        if (!o->dim_names || !o->dim_min || !o->dim_max)
            return smelt_errf(ctx, SMELT_ERR_ARG, "check options: %d dims without names or "
                              "values", o->num_dims);
        if (!smelt_graph_has_dim(m->graph, o->dim_names[i])) continue;
        SMELT_TRY(smelt_model_set_dim_range(ctx, m, o->dim_names[i], o->dim_min[i], o->dim_max[i]));
    }
    return SMELT_OK;
}

smelt_check_result smelt_check_test_noting(const char *dir, const smelt_check_options *o,
                                           void (*on_compiled)(const smelt_model *), char *why,
                                           size_t cap)
{
    smelt_ctx *ctx = smelt_ctx_new();
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    smelt_model *m = smelt_model_load(ctx, path);
    if (m) m->options = o->compile;
    smelt_check_result r = SMELT_CHECK_PASS;
    if (m && o->mode == SMELT_CHECK_COMPILED && apply_dims(ctx, m, o) != SMELT_OK) {
        smelt_model_free(m);
        m = NULL;
    }
    if (!m) {
        snprintf(why, cap, "%s", smelt_ctx_message(ctx));
        r = smelt_ctx_status(ctx) == SMELT_ERR_UNSUPPORTED ? SMELT_CHECK_UNSUPPORTED : SMELT_CHECK_FAIL;
    }
    smelt_ptrvec sets = {0};
    if (m) smelt_list_dir(dir, "test_data_set_", &sets);
    if (m && sets.len == 0) {
        snprintf(why, cap, "no test_data_set_* folder");
        r = SMELT_CHECK_FAIL;
    }
    for (int i = 0; r == SMELT_CHECK_PASS && i < sets.len; i++) {
        smelt_ctx_clear(ctx);
        r = run_data_set(ctx, m, sets.items[i], o, why, cap);
    }
    /* a pass whose outputs all folded checked the folding, not the compiler */
    if (m && r == SMELT_CHECK_PASS && o->mode == SMELT_CHECK_COMPILED && smelt_model_last_nodes(m) == 0)
        snprintf(why, cap, "%s", SMELT_CHECK_FOLDED_NOTE);
    if (m && o->mode == SMELT_CHECK_COMPILED && on_compiled) on_compiled(m);
    smelt_list_free(&sets);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return r;
}

