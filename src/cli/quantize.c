/* smelt quantize: static post-training quantization to the QDQ form that
 * onnxruntime.quantization.quantize_static writes (QuantFormat.QDQ,
 * per_channel=True, QUInt8 activations, QInt8 weights, MinMax calibration):
 *
 *   - every Conv, MatMul and Gemm with a constant float32 weight (Conv:
 *     rank >= 3; MatMul, Gemm: 2-D) gets it as int8 per output channel,
 *     symmetric: zero point 0, scale = max|w| / 127 (/ 64 with
 *     --reduce-range, ORT's reduce_range=True), behind a DequantizeLinear
 *     (axis 0 for Conv and Gemm with transB, 1 for MatMul and Gemm without);
 *   - its bias (Conv; Gemm with beta 1 and a 1-D bias) as int32 with scale
 *     x_scale * w_scale[c] and zero point 0;
 *   - its activation input (MatMul: both when B is not constant) and its
 *     output, or, where a Relu or Clip alone reads it, that activation's
 *     output, the activation removed (ORT's QDQRemovableActivation: the
 *     quantization's clamp to the calibrated range of the activation's
 *     output takes its place), as u8
 *     through QuantizeLinear -> DequantizeLinear, scale and zero point from
 *     the minimum and maximum over the calibration runs (ORT's
 *     compute_scale_zp: the range widened to hold 0, scale = range / 255,
 *     zero point = round(-min / scale)); a Softmax's output takes [0, 1],
 *     as ORT's adjust_tensor_ranges sets.
 *
 * Calibration runs the float model with the reference executor on
 * --samples seeded random inputs (floats uniform in [-1, 1), as smelt run's
 * random inputs) or on the inputs in --calib DIR.  The rewrite
 * (quantize_proto.c) works on the ModelProto itself, so everything else in
 * the model stays as it was.
 */
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/smelt_internal.h"
#include "cli/cli.h"
#include "cli/quantize.h"
#include "io/io.h"

typedef struct q_opts {
    const char *model, *out, *calib;
    long samples;
    uint64_t seed;
    bool reduce_range;
} q_opts;

static const char usage[] =
    "usage: smelt quantize MODEL -o OUT.onnx [--calib DIR | --samples N [--seed S]] "
    "[--reduce-range]\n";

static int parse_opts(int argc, char **argv, q_opts *o)
{
    memset(o, 0, sizeof *o);
    o->samples = 16;
    bool samples_given = false, seed_given = false;
    for (int i = 0; i < argc; i++) {
        const char *v, *a = argv[i];
        if (cli_opt(argc, argv, &i, "-o", &v) || cli_opt(argc, argv, &i, "--output", &v)) {
            if (!(o->out = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "--calib", &v)) {
            if (!(o->calib = v)) return 2;
        } else if (cli_opt(argc, argv, &i, "--samples", &v)) {
            if (!v || !cli_int("--samples", v, 1, 100000, &o->samples)) return 2;
            samples_given = true;
        } else if (cli_opt(argc, argv, &i, "--seed", &v)) {
            if (!v || !cli_u64("--seed", v, &o->seed)) return 2;
            seed_given = true;
        } else if (strcmp(a, "--reduce-range") == 0) {
            o->reduce_range = true;
        } else if (a[0] == '-') {
            fprintf(stderr, "smelt quantize: unknown option '%s'\n%s", a, usage);
            return 2;
        } else if (!o->model) {
            o->model = a;
        } else {
            fprintf(stderr, "smelt quantize: unexpected argument '%s' (one model)\n", a);
            return 2;
        }
    }
    if (!o->model || !o->out) return fprintf(stderr, "%s", usage), 2;
    if (o->calib && (samples_given || seed_given))
        return fprintf(stderr, "smelt quantize: --calib takes the inputs from DIR: "
                               "--samples and --seed apply to random inputs only\n"), 2;
    return 0;
}

/* ---- the plan: which nodes, activations, weights and biases ---- */

static bool name_is(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static bool default_domain(const Onnx__NodeProto *n)
{
    return !n->domain || !*n->domain || strcmp(n->domain, "ai.onnx") == 0;
}

static const Onnx__AttributeProto *node_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (name_is(n->attribute[i]->name, name)) return n->attribute[i];
    return NULL;
}

static int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = node_attr(n, name);
    return a ? a->i : dflt;
}

static float attr_float(const Onnx__NodeProto *n, const char *name, float dflt)
{
    const Onnx__AttributeProto *a = node_attr(n, name);
    return a ? a->f : dflt;
}

static const char *node_input(const Onnx__NodeProto *n, size_t i)
{
    return i < n->n_input && n->input[i] && *n->input[i] ? n->input[i] : NULL;
}

static bool is_graph_output(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_output; i++)
        if (name_is(g->output[i]->name, name)) return true;
    return false;
}

/* The single node reading `name`, NULL when none or several. */
static const Onnx__NodeProto *sole_reader(const Onnx__GraphProto *g, const char *name)
{
    const Onnx__NodeProto *found = NULL;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++)
            if (name_is(g->node[i]->input[k], name)) {
                if (found) return NULL;
                found = g->node[i];
            }
    return found;
}

static int find_or_add_act(q_plan *p, const char *name)
{
    for (int i = 0; i < p->n_acts; i++)
        if (strcmp(p->acts[i].name, name) == 0) return i;
    p->acts[p->n_acts] = (q_act){.name = name};
    return p->n_acts++;
}

static const gr_value *float_constant(const gr_graph *g, const char *name, int rank_min, int rank_max)
{
    const gr_value *v = name ? gr_graph_find_value(g, name) : NULL;
    if (!v || !v->constant || v->constant->dtype != SMELT_DT_FLOAT32) return NULL;
    return v->constant->rank >= rank_min && v->constant->rank <= rank_max ? v : NULL;
}

/* A float32 value computed at run time (what calibration can see). */
static bool float_activation(const gr_graph *g, const char *name)
{
    const gr_value *v = name ? gr_graph_find_value(g, name) : NULL;
    return v && !v->constant && v->dtype == SMELT_DT_FLOAT32;
}

static bool quantizable_op(const Onnx__NodeProto *n, q_kind *k)
{
    if (!default_domain(n)) return false;
    if (name_is(n->op_type, "Conv")) return *k = Q_CONV, true;
    if (name_is(n->op_type, "MatMul")) return *k = Q_MATMUL, true;
    if (name_is(n->op_type, "Gemm")) return *k = Q_GEMM, true;
    return false;
}

static bool is_quantized_op(const char *op)
{
    static const char *const ops[] = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                                      "QLinearConv", "QLinearMatMul", "MatMulInteger",
                                      "ConvInteger"};
    for (size_t i = 0; i < SMELT_ARRAY_LEN(ops); i++)
        if (name_is(op, ops[i])) return true;
    return false;
}

/* The weight's channel axis, or -1 when the node's weight is not one we
 * quantize (not a constant float32 of the expected rank). */
static int weight_axis(const gr_graph *g, const Onnx__NodeProto *n, q_kind k)
{
    const char *w = node_input(n, 1);
    switch (k) {
    case Q_CONV: return float_constant(g, w, 3, SMELT_MAX_RANK) ? 0 : -1;
    case Q_MATMUL: return float_constant(g, w, 2, 2) ? 1 : -1;
    case Q_GEMM: return float_constant(g, w, 2, 2) ? (attr_int(n, "transB", 0) ? 0 : 1) : -1;
    }
    return -1;
}

static int find_or_add_weight(q_plan *p, const char *name, int axis)
{
    for (int i = 0; i < p->n_weights; i++)
        if (strcmp(p->weights[i].name, name) == 0) return p->weights[i].axis == axis ? i : -2;
    p->weights[p->n_weights] = (q_weight){.name = name, .axis = axis};
    return p->n_weights++;
}

/* The bias input we quantize: a constant float32 [channels] (Gemm: beta 1,
 * as ORT's quantize_bias_static folds beta into the scale); else -1 and it
 * stays float. */
static int plan_bias(q_plan *p, const gr_graph *g, const Onnx__NodeProto *n, q_kind k, int64_t channels)
{
    const char *b = k == Q_MATMUL ? NULL : node_input(n, 2);
    const gr_value *v = float_constant(g, b, 1, 1);
    if (!v || v->constant->dims[0] != channels || (k == Q_GEMM && attr_float(n, "beta", 1.0f) != 1.0f))
        return -1;
    for (int i = 0; i < p->n_biases; i++)
        if (strcmp(p->biases[i].name, b) == 0) return i; /* shared: the first user's scales */
    p->biases[p->n_biases] = (q_bias){.name = b, .n = channels};
    return p->n_biases++;
}

/* A Relu, or a Clip with constant bounds, that alone reads n's output
 * (not a graph output): ORT's quantizer removes it, or NULL. */
static const Onnx__NodeProto *removable_activation(const Onnx__GraphProto *gp, const gr_graph *g,
                                                   const Onnx__NodeProto *n)
{
    const char *y = n->n_output ? n->output[0] : NULL;
    if (!y || is_graph_output(gp, y)) return NULL;
    const Onnx__NodeProto *r = sole_reader(gp, y);
    if (!r || !default_domain(r) || r->n_output != 1 || !name_is(node_input(r, 0), y)) return NULL;
    if (name_is(r->op_type, "Relu")) return r;
    if (!name_is(r->op_type, "Clip")) return NULL;
    for (size_t i = 1; i < r->n_input && i < 3; i++)
        if (node_input(r, i) && !float_constant(g, node_input(r, i), 0, 1)) return NULL;
    return r;
}

/* The tensor whose quantization follows node n: its output, or that of
 * the activation removed after it. */
static const char *output_point(const Onnx__GraphProto *gp, const gr_graph *g, const Onnx__NodeProto *n,
                                const Onnx__NodeProto **act)
{
    *act = removable_activation(gp, g, n);
    return *act ? (*act)->output[0] : n->n_output ? n->output[0] : NULL;
}

static smelt_status plan_node(smelt_ctx *ctx, q_plan *p, const gr_graph *g, const Onnx__GraphProto *gp,
                              const Onnx__NodeProto *n, q_kind k)
{
    const Onnx__NodeProto *act;
    const char *x = node_input(n, 0), *w = node_input(n, 1), *y = output_point(gp, g, n, &act);
    int axis = weight_axis(g, n, k);
    bool b_act = axis < 0 && k == Q_MATMUL && float_activation(g, w);
    if (!float_activation(g, x) || (axis < 0 && !b_act) || !y || !float_activation(g, y)) {
        fprintf(stderr, "smelt quantize: node '%s' (%s) stays float: its input, weight or output "
                        "is not a float32 tensor of the form quantized here\n",
                n->name ? n->name : "?", n->op_type);
        return SMELT_OK;
    }
    q_node *q = &p->nodes[p->n_nodes];
    *q = (q_node){.node = n, .act = act, .kind = k, .b_act = -1, .weight = -1, .bias = -1, .axis = axis};
    if (axis >= 0) {
        q->weight = find_or_add_weight(p, w, axis);
        if (q->weight == -2) {
            fprintf(stderr, "smelt quantize: node '%s' (%s) stays float: its weight '%s' is "
                            "quantized along another axis for another node\n",
                    n->name ? n->name : "?", n->op_type, w);
            return SMELT_OK;
        }
        int64_t channels = gr_graph_find_value(g, w)->constant->dims[axis];
        q->bias = plan_bias(p, g, n, k, channels);
    } else {
        q->b_act = find_or_add_act(p, w);
    }
    q->x = find_or_add_act(p, x);
    q->y = find_or_add_act(p, y);
    p->n_nodes++;
    (void)ctx;
    return SMELT_OK;
}

static smelt_status plan_alloc(smelt_ctx *ctx, q_plan *p, size_t n_nodes)
{
    size_t n = n_nodes ? n_nodes : 1;
    p->nodes = smelt_arena_alloc(&p->arena, sizeof *p->nodes * n);
    p->acts = smelt_arena_alloc(&p->arena, sizeof *p->acts * 3 * n);
    p->weights = smelt_arena_alloc(&p->arena, sizeof *p->weights * n);
    p->biases = smelt_arena_alloc(&p->arena, sizeof *p->biases * n);
    if (!p->nodes || !p->acts || !p->weights || !p->biases)
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    return SMELT_OK;
}

static smelt_status build_plan(smelt_ctx *ctx, const Onnx__ModelProto *model, const gr_graph *g, q_plan *p)
{
    const Onnx__GraphProto *gp = model->graph;
    SMELT_TRY(plan_alloc(ctx, p, gp->n_node));
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        q_kind k;
        if (default_domain(n) && is_quantized_op(n->op_type))
            return smelt_errf(ctx, SMELT_ERR_ARG,
                              "node '%s' (%s): the model is quantized already", n->name ? n->name : "?",
                              n->op_type);
        if (quantizable_op(n, &k)) SMELT_TRY(plan_node(ctx, p, g, gp, n, k));
    }
    if (p->n_nodes == 0)
        return smelt_errf(ctx, SMELT_ERR_ARG, "nothing to quantize: no Conv, MatMul or Gemm with a "
                                              "constant float32 weight and float32 activations");
    for (size_t i = 0; i < gp->n_node; i++)
        if (default_domain(gp->node[i]) && name_is(gp->node[i]->op_type, "Softmax") && gp->node[i]->n_output)
            for (int k = 0; k < p->n_acts; k++)
                p->acts[k].unit |= name_is(p->acts[k].name, gp->node[i]->output[0]);
    return SMELT_OK;
}

/* ---- calibration ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of dir (not . or ..), sorted; dirs_only: subfolders, else
 * .npy and .pb files. */
static smelt_status list_dir(smelt_ctx *ctx, smelt_arena *a, const char *dir, bool dirs_only,
                             char ***out, int *n)
{
    DIR *d = opendir(dir);
    if (!d) return smelt_errf(ctx, SMELT_ERR_IO, "--calib '%s': cannot open the folder", dir);
    int cap = 64;
    char **names = smelt_arena_alloc(a, sizeof *names * (size_t)cap);
    *n = 0;
    struct dirent *e;
    smelt_status s = names ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    while (s == SMELT_OK && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *path = smelt_arena_printf(a, "%s/%s", dir, e->d_name);
        struct stat st;
        if (!path || stat(path, &st) != 0) continue;
        size_t len = strlen(e->d_name);
        bool tensor_file = S_ISREG(st.st_mode) && ((len > 4 && strcmp(e->d_name + len - 4, ".npy") == 0) ||
                                                   (len > 3 && strcmp(e->d_name + len - 3, ".pb") == 0));
        if (dirs_only ? !S_ISDIR(st.st_mode) : !tensor_file) continue;
        if (*n == cap) {
            char **bigger = smelt_arena_alloc(a, sizeof *names * (size_t)cap * 2);
            if (!bigger) {
                s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
                break;
            }
            memcpy(bigger, names, sizeof *names * (size_t)cap);
            names = bigger, cap *= 2;
        }
        names[(*n)++] = path;
    }
    closedir(d);
    if (s == SMELT_OK) qsort(names, (size_t)*n, sizeof *names, cmp_str);
    *out = names;
    return s;
}

/* The calibration samples: file paths, n_inputs per sample (or none: random). */
typedef struct q_samples {
    char **files; /* [count * n_inputs] */
    int count, n_inputs;
} q_samples;

static smelt_status find_samples(smelt_ctx *ctx, smelt_arena *a, const char *dir, int n_inputs, q_samples *s)
{
    char **subdirs;
    int n_sub;
    SMELT_TRY(list_dir(ctx, a, dir, true, &subdirs, &n_sub));
    s->n_inputs = n_inputs;
    if (n_sub == 0) { /* one file per sample */
        SMELT_TRY(list_dir(ctx, a, dir, false, &s->files, &s->count));
        if (s->count == 0)
            return smelt_errf(ctx, SMELT_ERR_ARG, "--calib '%s': no .npy or .pb files and no "
                                                  "sample folders", dir);
        if (n_inputs != 1)
            return smelt_errf(ctx, SMELT_ERR_ARG, "--calib '%s': the model has %d inputs: give each "
                              "sample as a folder of input files (input_0.pb, input_1.pb, ...)",
                              dir, n_inputs);
        return SMELT_OK;
    }
    s->count = n_sub;
    s->files = smelt_arena_alloc(a, sizeof *s->files * (size_t)n_sub * (size_t)n_inputs);
    if (!s->files) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n_sub; i++) {
        char **files;
        int n;
        SMELT_TRY(list_dir(ctx, a, subdirs[i], false, &files, &n));
        if (n != n_inputs)
            return smelt_errf(ctx, SMELT_ERR_ARG, "--calib: sample folder '%s' holds %d input files, "
                              "the model has %d inputs", subdirs[i], n, n_inputs);
        memcpy(s->files + (size_t)i * (size_t)n_inputs, files, sizeof *files * (size_t)n_inputs);
    }
    return SMELT_OK;
}

static smelt_status check_input(smelt_ctx *ctx, const gr_value *v, const smelt_tensor *t, const char *file)
{
    bool ok = t->dtype == v->dtype && t->rank == v->rank;
    for (int d = 0; ok && d < v->rank; d++) ok = v->dims[d] < 0 || v->dims[d] == t->dims[d];
    if (!ok)
        return smelt_errf(ctx, SMELT_ERR_ARG, "--calib: '%s' is %s of rank %d, model input '%s' "
                          "is %s of rank %d (or its dims differ)", file, smelt_dtype_name(t->dtype),
                          t->rank, v->name, smelt_dtype_name(v->dtype), v->rank);
    return SMELT_OK;
}

static smelt_status random_input(smelt_ctx *ctx, const gr_value *v, uint64_t seed, smelt_tensor *t)
{
    memset(t, 0, sizeof *t);
    t->dtype = v->dtype;
    t->rank = v->rank;
    for (int d = 0; d < v->rank; d++) t->dims[d] = v->dims[d] < 0 ? 1 : v->dims[d];
    size_t nb = smelt_tensor_nbytes(t);
    if (!(t->data = smelt_alloc(nb ? nb : 1))) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    io_fill_random(t, seed, 2);
    return SMELT_OK;
}

/* Sample k's inputs into in[] (released by the caller). */
static smelt_status sample_inputs(smelt_ctx *ctx, const gr_graph *g, const q_opts *o, const q_samples *s,
                                  int k, smelt_tensor *in)
{
    for (int i = 0; i < g->inputs.len; i++) {
        const gr_value *v = g->inputs.items[i];
        if (!s->files) {
            SMELT_TRY(random_input(ctx, v, o->seed + (uint64_t)k * (uint64_t)g->inputs.len + (uint64_t)i,
                                   &in[i]));
            continue;
        }
        const char *file = s->files[(size_t)k * (size_t)s->n_inputs + (size_t)i];
        smelt_tensor *t;
        SMELT_TRY(io_tensor_load(ctx, file, &t));
        in[i] = *t;
        smelt_free(t);
        SMELT_TRY(check_input(ctx, v, &in[i], file));
    }
    return SMELT_OK;
}

static smelt_status observe(smelt_ctx *ctx, q_act *a, const smelt_tensor *t)
{
    const float *x = t->data;
    int64_t n = smelt_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            return smelt_errf(ctx, SMELT_ERR_RUNTIME, "calibration: tensor '%s' holds %g: its range "
                              "cannot be quantized", a->name, (double)x[i]);
        if (!a->seen || x[i] < a->lo) a->lo = x[i];
        if (!a->seen || x[i] > a->hi) a->hi = x[i];
        a->seen = true;
    }
    return SMELT_OK;
}

/* Run the float graph once with the activations as its outputs. */
static smelt_status calibrate_one(smelt_ctx *ctx, gr_graph *g, q_plan *p, const smelt_tensor *in,
                                  smelt_tensor *outs)
{
    smelt_ptrvec saved = g->outputs;
    g->outputs = (smelt_ptrvec){0};
    smelt_status s = SMELT_OK;
    for (int i = 0; s == SMELT_OK && i < p->n_acts; i++)
        if (!smelt_ptrvec_push(&g->outputs, gr_graph_find_value(g, p->acts[i].name)))
            s = smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    if (s == SMELT_OK) s = exec_graph(ctx, g, EXEC_REFERENCE, in, outs);
    smelt_ptrvec_fini(&g->outputs);
    g->outputs = saved;
    for (int i = 0; s == SMELT_OK && i < p->n_acts; i++) s = observe(ctx, &p->acts[i], &outs[i]);
    return s;
}

static smelt_status calibrate(smelt_ctx *ctx, gr_graph *g, const q_opts *o, q_plan *p)
{
    q_samples s = {0};
    if (o->calib) SMELT_TRY(find_samples(ctx, &p->arena, o->calib, g->inputs.len, &s));
    int count = o->calib ? s.count : (int)o->samples;
    smelt_tensor *in = smelt_calloc((size_t)g->inputs.len + 1, sizeof *in);
    smelt_tensor *outs = smelt_calloc((size_t)p->n_acts, sizeof *outs);
    smelt_status st = in && outs ? SMELT_OK : smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int k = 0; st == SMELT_OK && k < count; k++) {
        st = sample_inputs(ctx, g, o, &s, k, in);
        if (st == SMELT_OK) st = calibrate_one(ctx, g, p, in, outs);
        for (int i = 0; i < g->inputs.len; i++) smelt_tensor_release(&in[i]);
        for (int i = 0; i < p->n_acts; i++) smelt_tensor_release(&outs[i]);
    }
    smelt_free(in);
    smelt_free(outs);
    if (st == SMELT_OK)
        fprintf(stderr, "smelt quantize: calibrated %d activations on %d %s\n", p->n_acts, count,
                o->calib ? "samples from --calib" : "random samples");
    return st;
}

/* ---- the arithmetic (onnxruntime.quantization.quant_utils) ---- */

/* u8, asymmetric: compute_scale_zp(min(lo, 0), max(hi, 0), 0, 255). */
static void act_params(q_act *a)
{
    float rmin = a->lo < 0 ? a->lo : 0.0f, rmax = a->hi > 0 ? a->hi : 0.0f;
    double s = ((double)rmax - (double)rmin) / 255.0;
    if (s < FLT_MIN) {
        a->scale = 1.0f, a->zp = 0;
        return;
    }
    double z = nearbyint(0.0 - (double)rmin / s);
    a->zp = (uint8_t)(z < 0 ? 0 : z > 255 ? 255 : z);
    a->scale = (float)s;
}

/* int8, symmetric per channel: scale = 2 max|w| / (qmax - qmin) in double,
 * stored as float; q = clip(round(w / scale), -128, 127) in float32. */
static smelt_status quantize_weight(smelt_ctx *ctx, const gr_graph *g, q_plan *p, q_weight *w, int qmax)
{
    const smelt_tensor *t = gr_graph_find_value(g, w->name)->constant;
    int64_t outer = 1, inner = 1, c = t->dims[w->axis];
    for (int d = 0; d < w->axis; d++) outer *= t->dims[d];
    for (int d = w->axis + 1; d < t->rank; d++) inner *= t->dims[d];
    w->channels = c;
    w->scale = smelt_arena_alloc(&p->arena, sizeof(float) * (size_t)(c ? c : 1));
    w->q = smelt_arena_alloc(&p->arena, sizeof *w->q);
    void *data = smelt_arena_alloc(&p->arena, (size_t)(outer * c * inner) + 1);
    if (!w->scale || !w->q || !data) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    *w->q = *t;
    w->q->dtype = SMELT_DT_INT8, w->q->data = data, w->q->name = NULL;
    const float *x = t->data;
    for (int64_t ch = 0; ch < c; ch++) {
        float absmax = 0.0f;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                float v = x[(o * c + ch) * inner + i];
                if (!isfinite(v))
                    return smelt_errf(ctx, SMELT_ERR_MODEL, "weight '%s' holds %g: it cannot be "
                                      "quantized", w->name, (double)v);
                absmax = fabsf(v) > absmax ? fabsf(v) : absmax;
            }
        double s = 2.0 * (double)absmax / (2.0 * qmax);
        float scale = s < FLT_MIN ? 1.0f : (float)s;
        w->scale[ch] = scale;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t at = (o * c + ch) * inner + i;
                float q = nearbyintf(x[at] / scale);
                ((int8_t *)data)[at] = (int8_t)(q < -128.0f ? -128 : q > 127.0f ? 127 : q);
            }
    }
    return SMELT_OK;
}

/* int32 with scale x_scale * w_scale[c] (float32), zero point 0:
 * round(b / scale) in double, clipped to int32 (quantize_bias_static). */
static smelt_status quantize_bias(smelt_ctx *ctx, const gr_graph *g, q_plan *p, const q_node *qn)
{
    q_bias *b = &p->biases[qn->bias];
    if (b->q) return SMELT_OK; /* shared, done for its first user */
    const smelt_tensor *t = gr_graph_find_value(g, b->name)->constant;
    const q_weight *w = &p->weights[qn->weight];
    float xs = p->acts[qn->x].scale;
    b->rank = t->rank;
    memcpy(b->dims, t->dims, sizeof b->dims);
    b->q = smelt_arena_alloc(&p->arena, sizeof(int32_t) * (size_t)b->n + 1);
    b->scale = smelt_arena_alloc(&p->arena, sizeof(float) * (size_t)b->n + 1);
    if (!b->q || !b->scale) return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t c = 0; c < b->n; c++) {
        float v = ((const float *)t->data)[c];
        b->scale[c] = xs * w->scale[c];
        if (!isfinite(v) || b->scale[c] == 0.0f)
            return smelt_errf(ctx, SMELT_ERR_MODEL, "node '%s' (%s): bias '%s' channel %lld: %s",
                              qn->node->name ? qn->node->name : "?", qn->node->op_type, b->name,
                              (long long)c, isfinite(v) ? "its scale x_scale * w_scale is 0 "
                              "(underflow)" : "not a finite value");
        double q = nearbyint((double)v / (double)b->scale[c]);
        b->q[c] = (int32_t)(q < -2147483648.0 ? -2147483648.0 : q > 2147483647.0 ? 2147483647.0 : q);
    }
    return SMELT_OK;
}

static smelt_status compute_params(smelt_ctx *ctx, const gr_graph *g, const q_opts *o, q_plan *p)
{
    for (int i = 0; i < p->n_acts; i++) {
        if (!p->acts[i].seen)
            return smelt_errf(ctx, SMELT_ERR_INTERNAL, "calibration never saw tensor '%s'",
                              p->acts[i].name);
        if (p->acts[i].unit) p->acts[i].lo = 0.0f, p->acts[i].hi = 1.0f;
        act_params(&p->acts[i]);
    }
    for (int i = 0; i < p->n_weights; i++)
        SMELT_TRY(quantize_weight(ctx, g, p, &p->weights[i], o->reduce_range ? 64 : 127));
    for (int i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].bias >= 0) SMELT_TRY(quantize_bias(ctx, g, p, &p->nodes[i]));
    return SMELT_OK;
}

/* ---- the command ---- */

static smelt_status opset_check(smelt_ctx *ctx, const Onnx__ModelProto *m)
{
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *op = m->opset_import[i];
        if ((!op->domain || !*op->domain || strcmp(op->domain, "ai.onnx") == 0) && op->version < 13)
            return smelt_errf(ctx, SMELT_ERR_UNSUPPORTED, "the model imports opset %lld: per-channel "
                              "DequantizeLinear (its axis) needs opset 13 or later",
                              (long long)op->version);
    }
    return SMELT_OK;
}

static smelt_status quantize_model(smelt_ctx *ctx, const q_opts *o, smelt_model *m,
                                   const Onnx__ModelProto *model, q_plan *p)
{
    if (!model->graph) return smelt_errf(ctx, SMELT_ERR_ARG, "'%s' has no graph", o->model);
    SMELT_TRY(opset_check(ctx, model));
    SMELT_TRY(build_plan(ctx, model, m->graph, p));
    SMELT_TRY(calibrate(ctx, m->graph, o, p));
    SMELT_TRY(compute_params(ctx, m->graph, o, p));
    void *bytes;
    size_t size;
    SMELT_TRY(q_write_model(ctx, model, p, &bytes, &size));
    smelt_status s = smelt_write_file(ctx, o->out, bytes, size);
    smelt_free(bytes);
    if (s == SMELT_OK)
        fprintf(stderr, "smelt quantize: %d nodes quantized (%d weights, %d biases, %d activations) "
                        "-> %s\n", p->n_nodes, p->n_weights, p->n_biases, p->n_acts, o->out);
    return s;
}

int cli_quantize(int argc, char **argv)
{
    q_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc) return rc;
    smelt_ctx *ctx = smelt_ctx_new();
    if (!ctx) return fprintf(stderr, "smelt: out of memory\n"), 1;
    smelt_model *m = smelt_model_load(ctx, o.model);
    if (!m) {
        rc = cli_fail_load(ctx, o.model);
        smelt_ctx_free(ctx);
        return rc;
    }
    void *bytes = NULL;
    size_t size = 0;
    Onnx__ModelProto *model = NULL;
    q_plan p = {0};
    smelt_arena_init(&p.arena);
    smelt_status s = smelt_read_file(ctx, o.model, SMELT_LIMIT_MODEL_BYTES, &bytes, &size);
    if (s == SMELT_OK && !(model = onnx__model_proto__unpack(NULL, size, bytes)))
        s = smelt_errf(ctx, SMELT_ERR_PARSE, "'%s': not an ONNX ModelProto", o.model);
    if (s == SMELT_OK) s = quantize_model(ctx, &o, m, model, &p);
    rc = s == SMELT_OK ? 0 : cli_fail(ctx);
    if (model) onnx__model_proto__free_unpacked(model, NULL);
    smelt_free(bytes);
    smelt_arena_fini(&p.arena);
    smelt_model_free(m);
    smelt_ctx_free(ctx);
    return rc;
}
