/* TfIdfVectorizer (opset 9): counts of the pool's n-grams in each row of
 * an integer input X ([C] or [B, C]), weighted.
 *
 * The pool (pool_int64s) holds n-grams by size: ngram_counts[i] is where the
 * (i + 1)-grams start; the n-grams are numbered across all sizes in pool
 * order, and n-gram k counts into output column ngram_indexes[k].  Only sizes
 * in [min_gram_length, max_gram_length] are looked for.  An n-gram of a row
 * is n items `skip + 1` apart, for every skip in [0, max_skip_count]; a
 * unigram is counted once (skips do not apply to it).  When the pool lists an
 * n-gram twice, its first number counts (as onnx's reference).  Output
 * float32 [B, max(ngram_indexes) + 1] ([1-D X: that many]): TF the counts,
 * IDF weights[j] (or 1) where a count is non-zero, TFIDF count x weights[j]
 * (or the count).  String pools and inputs are outside smelt (strings).
 *
 * Compiled: one extern stage, a parallel task per row that counts every
 * n-gram size's pool entries (tables of the de-duplicated n-grams and their
 * columns, compile-time constants) at each start and skip, then weights the
 * counts by the mode. */
#include <string.h>

#include "ops/op.h"
#include "te/te.h"

enum { TFIDF_TF, TFIDF_IDF, TFIDF_TFIDF };

typedef struct tfidf_attrs {
    int64_t min_gram, max_gram, max_skip;
    int mode;
    int n_counts, n_indexes, n_pool, n_weights;
    const int64_t *counts, *indexes, *pool;
    const float *weights;
    int64_t out_cols;
} tfidf_attrs;

OP_ATTRS(TFIDF_VECTORIZER) = {{"max_gram_length", 0, 0}, {"max_skip_count", 0, 0},
                              {"min_gram_length", 0, 0}, {"mode", 0, 0},
                              {"ngram_counts", 0, 0},    {"ngram_indexes", 0, 0},
                              {"pool_int64s", 0, 0},     {"pool_strings", 0, 0},
                              {"weights", 0, 0},         {NULL, 0, 0}};

static smelt_status tfidf_mode(smelt_ctx *ctx, const gr_node *n, tfidf_attrs *a)
{
    const char *mode = NULL;
    SMELT_TRY(op_attr_string(ctx, n, "mode", "", &mode));
    static const char *const names[] = {"TF", "IDF", "TFIDF"};
    for (int m = 0; m < 3; m++)
        if (strcmp(mode, names[m]) == 0) {
            a->mode = m;
            return SMELT_OK;
        }
    return op_errf(ctx, n, SMELT_ERR_ATTR, "attribute 'mode' is '%s': expected TF, IDF or TFIDF", mode);
}

/* The pool's layout: counts ascending from 0 and inside the pool, one
 * index per n-gram, weights one per output column when given. */
static smelt_status tfidf_check(smelt_ctx *ctx, const gr_node *n, tfidf_attrs *a)
{
    if (a->min_gram < 1 || a->max_gram < a->min_gram || a->max_skip < 0)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "gram lengths %lld..%lld and max_skip_count %lld: "
                       "expected 1 <= min_gram_length <= max_gram_length, max_skip_count >= 0",
                       (long long)a->min_gram, (long long)a->max_gram, (long long)a->max_skip);
    int64_t ngrams = 0;
    for (int i = 0; i < a->n_counts; i++)
        if (a->counts[i] < (i ? a->counts[i - 1] : 0) || a->counts[i] > a->n_pool)
            return op_errf(ctx, n, SMELT_ERR_ATTR, "ngram_counts[%d] = %lld is not an ascending "
                           "position inside the pool of %d", i, (long long)a->counts[i], a->n_pool);
    for (int i = 0; i < a->n_counts; i++) {
        int64_t end = i + 1 < a->n_counts ? a->counts[i + 1] : a->n_pool;
        if ((end - a->counts[i]) % (i + 1))
            return op_errf(ctx, n, SMELT_ERR_ATTR, "the pool's %d-grams from ngram_counts[%d] = %lld "
                           "to %lld are not whole", i + 1, i, (long long)a->counts[i], (long long)end);
        ngrams += (end - a->counts[i]) / (i + 1);
    }
    if (a->n_indexes != ngrams)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "%d ngram_indexes for %lld n-grams in the pool",
                       a->n_indexes, (long long)ngrams);
    a->out_cols = 0;
    for (int i = 0; i < a->n_indexes; i++) {
        if (a->indexes[i] < 0)
            return op_errf(ctx, n, SMELT_ERR_ATTR, "ngram_indexes[%d] = %lld is negative", i,
                           (long long)a->indexes[i]);
        if (a->indexes[i] + 1 > a->out_cols) a->out_cols = a->indexes[i] + 1;
    }
    if (a->n_weights > 0 && a->n_weights < a->out_cols)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "%d weights for %lld output columns", a->n_weights,
                       (long long)a->out_cols);
    return SMELT_OK;
}

static smelt_status tfidf_import(smelt_ctx *ctx, gr_graph *g, gr_node *n)
{
    tfidf_attrs *a = op_attrs_new(ctx, g, n, sizeof *a);
    if (!a) return SMELT_ERR_NOMEM;
    SMELT_TRY(op_attr_int(ctx, n, "min_gram_length", 1, &a->min_gram));
    SMELT_TRY(op_attr_int(ctx, n, "max_gram_length", 1, &a->max_gram));
    SMELT_TRY(op_attr_int(ctx, n, "max_skip_count", 0, &a->max_skip));
    SMELT_TRY(tfidf_mode(ctx, n, a));
    SMELT_TRY(op_attr_ints(ctx, n, "ngram_counts", &a->n_counts, &a->counts));
    SMELT_TRY(op_attr_ints(ctx, n, "ngram_indexes", &a->n_indexes, &a->indexes));
    SMELT_TRY(op_attr_ints(ctx, n, "pool_int64s", &a->n_pool, &a->pool));
    SMELT_TRY(op_attr_floats(ctx, n, "weights", &a->n_weights, &a->weights));
    if (gr_node_attr(n, "pool_strings"))
        return op_errf(ctx, n, SMELT_ERR_UNSUPPORTED, "attribute 'pool_strings': string tensors "
                       "are outside smelt's types");
    if (a->n_pool < 0 || a->n_counts < 0 || a->n_indexes < 0)
        return op_errf(ctx, n, SMELT_ERR_ATTR, "attributes 'pool_int64s', 'ngram_counts' and "
                       "'ngram_indexes' are required");
    if (a->n_weights < 0) a->n_weights = 0;
    return tfidf_check(ctx, n, a);
}

static const smelt_dtype k_tfidf_types[] = {SMELT_DT_INT32, SMELT_DT_INT64, SMELT_DT_UNDEFINED};

static smelt_status tfidf_infer(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                                smelt_tensor *out)
{
    const tfidf_attrs *a = n->op_attrs;
    SMELT_TRY(op_check_dtype(ctx, n, in[0], "X", k_tfidf_types));
    if (in[0]->rank < 1 || in[0]->rank > 2)
        return op_errf(ctx, n, SMELT_ERR_SHAPE, "X has rank %d; expected [C] or [B, C]", in[0]->rank);
    out[0] = (smelt_tensor){.dtype = SMELT_DT_FLOAT32, .rank = in[0]->rank};
    if (in[0]->rank == 2) out[0].dims[0] = in[0]->dims[0];
    out[0].dims[in[0]->rank - 1] = a->out_cols;
    return SMELT_OK;
}

/* The number of the pool's n-gram of size `size` that x[at], x[at + step],
 * ... spells (1-based across all sizes, as ngram_indexes counts), 0: none. */
static int64_t pool_ngram(const tfidf_attrs *a, const smelt_tensor *x, int64_t at, int64_t step,
                          int64_t size)
{
    int64_t number = 0;
    for (int i = 0; i < a->n_counts; i++) {
        int64_t end = i + 1 < a->n_counts ? a->counts[i + 1] : a->n_pool;
        for (int64_t p = a->counts[i]; p < end; p += i + 1) {
            number++;
            if (i + 1 != size) continue;
            int64_t k = 0;
            while (k < size && op_get_i64(x, at + k * step) == a->pool[p + k]) k++;
            if (k == size) return number;
        }
    }
    return 0;
}

static void count_row(const tfidf_attrs *a, const smelt_tensor *x, int64_t begin, int64_t len,
                      double *counts)
{
    int64_t min_size = a->min_gram;
    for (int64_t step = 1; step <= a->max_skip + 1; step++) {
        for (int64_t start = 0; start < len; start++)
            for (int64_t size = min_size; size <= a->max_gram; size++) {
                if (start + (size - 1) * step >= len) break;
                int64_t k = pool_ngram(a, x, begin + start, step, size);
                if (k) counts[a->indexes[k - 1]] += 1;
            }
        if (min_size == 1 && ++min_size > a->max_gram) break; /* unigrams once */
    }
}

static smelt_status tfidf_eval(smelt_ctx *ctx, const gr_node *n, const smelt_tensor *const *in,
                               smelt_tensor *out)
{
    const tfidf_attrs *a = n->op_attrs;
    const smelt_tensor *x = in[0];
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, len = x->dims[x->rank - 1];
    double *counts = smelt_calloc((size_t)(a->out_cols ? a->out_cols : 1), sizeof *counts);
    if (!counts) return op_errf(ctx, n, SMELT_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; r < rows; r++) {
        memset(counts, 0, sizeof *counts * (size_t)a->out_cols);
        count_row(a, x, r * len, len, counts);
        for (int64_t j = 0; j < a->out_cols; j++) {
            double w = j < a->n_weights ? a->weights[j] : 1.0, c = counts[j];
            double y = a->mode == TFIDF_TF ? c : a->mode == TFIDF_IDF ? (c > 0 ? w : 0) : c * w;
            op_set_f64(&out[0], r * a->out_cols + j, y);
        }
    }
    smelt_free(counts);
    return SMELT_OK;
}

/* ---- compiled ---- */

/* The pool's n-grams of one size without repeats (the first one counts),
 * as constant tables: grams [n, size] and their output columns [n]. */
typedef struct tfidf_size {
    int64_t size, n;
    const te_tensor *grams, *cols;
} tfidf_size;

typedef struct tfidf_te {
    const tfidf_attrs *a;
    const te_tensor *x, *weights; /* weights: NULL without */
    int64_t rows, len;
    int n_sizes;
    tfidf_size sizes[64];
} tfidf_te;

static bool same_gram(const int64_t *p, const int64_t *q, int64_t size)
{
    return memcmp(p, q, sizeof *p * (size_t)size) == 0;
}

/* Size i + 1's n-grams (pool positions counts[i] .. end) into tables. */
static smelt_status tfidf_size_tables(op_compute_args *a, const tfidf_attrs *at, int i,
                                      int64_t number, tfidf_size *ts)
{
    int64_t size = i + 1, begin = at->counts[i];
    int64_t end = i + 1 < at->n_counts ? at->counts[i + 1] : at->n_pool;
    int64_t most = (end - begin) / size;
    int64_t *grams = smelt_alloc(sizeof *grams * (size_t)(most * size + 1));
    int64_t *cols = smelt_alloc(sizeof *cols * (size_t)(most + 1));
    int64_t n = 0;
    for (int64_t g = 0; grams && cols && g < most; g++) {
        const int64_t *gram = at->pool + begin + g * size;
        bool seen = false;
        for (int64_t h = 0; h < g && !seen; h++) seen = same_gram(at->pool + begin + h * size, gram, size);
        if (seen) continue;
        memcpy(grams + n * size, gram, sizeof *grams * (size_t)size);
        cols[n++] = at->indexes[number + g];
    }
    int64_t shape[2] = {n, size};
    *ts = (tfidf_size){.size = size, .n = n};
    ts->grams = grams ? te_const_tensor(a->te, "tfidf_grams", SMELT_DT_INT64, 2, shape, grams) : NULL;
    ts->cols = cols ? te_const_tensor(a->te, "tfidf_cols", SMELT_DT_INT64, 1, &n, cols) : NULL;
    if (!grams) smelt_free(cols);
    return ts->grams && ts->cols ? SMELT_OK : smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
}

typedef struct tfidf_build {
    const tfidf_te *t;
    ir_builder *b;
    ir_buffer *y;
    ir_expr *row;
} tfidf_build;

/* x's item at column col of the row */
static ir_expr *tfidf_x(const tfidf_build *tb, ir_expr *col)
{
    ir_buffer *x = tb->t->x->buf;
    ir_expr *idx[2] = {tb->row, col};
    ir_expr *v = x->rank == 2 ? ir_load(tb->b, x, 2, idx) : ir_load(tb->b, x, 1, &col);
    return ir_cast(tb->b, SMELT_DT_INT64, v);
}

/* y's element at column col of the row */
static ir_expr *tfidf_y_get(const tfidf_build *tb, ir_expr *col)
{
    ir_expr *idx[2] = {tb->row, col};
    return tb->y->rank == 2 ? ir_load(tb->b, tb->y, 2, idx) : ir_load(tb->b, tb->y, 1, &col);
}

static ir_stmt *tfidf_y_set(const tfidf_build *tb, ir_expr *col, ir_expr *v)
{
    ir_expr *idx[2] = {tb->row, col};
    return tb->y->rank == 2 ? ir_store(tb->b, tb->y, 2, idx, v) : ir_store(tb->b, tb->y, 1, &col, v);
}

/* Every start and skip of one size: y[row, cols[g]] += 1 where the items
 * start, start + step, ... spell grams[g]. */
static ir_stmt *tfidf_count_size(const tfidf_build *tb, const tfidf_size *ts)
{
    ir_builder *b = tb->b;
    const tfidf_attrs *at = tb->t->a;
    ir_var *sv = ir_var_new(b, "tfidf_skip", SMELT_DT_INT64);
    ir_var *pv = ir_var_new(b, "tfidf_start", SMELT_DT_INT64);
    ir_var *gv = ir_var_new(b, "tfidf_gram", SMELT_DT_INT64);
    ir_expr *step = ir_add(b, ir_var_ref(b, sv), ir_int(b, 1));
    ir_expr *g = ir_var_ref(b, gv), *start = ir_var_ref(b, pv);
    ir_expr *match = NULL;
    for (int64_t k = 0; k < ts->size; k++) {
        ir_expr *gi[2] = {g, ir_int(b, k)};
        ir_expr *item = tfidf_x(tb, ir_add(b, start, ir_mul(b, step, ir_int(b, k))));
        ir_expr *eq = ir_binary(b, IR_EQ, item, ir_load(b, ts->grams->buf, 2, gi));
        match = match ? ir_binary(b, IR_AND, match, eq) : eq;
    }
    ir_expr *col = ir_load(b, ts->cols->buf, 1, &g);
    ir_expr *one = ir_add(b, tfidf_y_get(tb, col), ir_const_float(b, SMELT_DT_FLOAT32, 1));
    ir_stmt *count = ir_if(b, match, tfidf_y_set(tb, col, one), NULL);
    ir_expr *starts = ir_binary(b, IR_MAX, ir_int(b, 0),
                                ir_sub(b, ir_int(b, tb->t->len), ir_mul(b, step, ir_int(b, ts->size - 1))));
    ir_stmt *grams = ir_for(b, gv, ir_int(b, 0), ir_int(b, ts->n), IR_FOR_SERIAL, count);
    ir_stmt *per_start = ir_for(b, pv, ir_int(b, 0), starts, IR_FOR_SERIAL, grams);
    int64_t skips = ts->size == 1 ? 1 : at->max_skip + 1; /* unigrams once */
    return ir_for(b, sv, ir_int(b, 0), ir_int(b, skips), IR_FOR_SERIAL, per_start);
}

/* y[row, j] by the mode: the count, the weight where it is non-zero, or both. */
static ir_stmt *tfidf_weigh(const tfidf_build *tb)
{
    ir_builder *b = tb->b;
    const tfidf_te *t = tb->t;
    if (t->a->mode == TFIDF_TF) return NULL;
    ir_var *jv = ir_var_new(b, "tfidf_col", SMELT_DT_INT64);
    ir_expr *j = ir_var_ref(b, jv);
    ir_expr *c = tfidf_y_get(tb, j);
    ir_expr *w = t->weights ? ir_load(b, t->weights->buf, 1, &j) : ir_const_float(b, SMELT_DT_FLOAT32, 1);
    ir_expr *zero = ir_const_float(b, SMELT_DT_FLOAT32, 0);
    ir_expr *v = t->a->mode == TFIDF_IDF ? ir_select(b, ir_binary(b, IR_GT, c, zero), w, zero)
                                         : ir_mul(b, c, w);
    return ir_for(b, jv, ir_int(b, 0), ir_int(b, t->a->out_cols), IR_FOR_SERIAL, tfidf_y_set(tb, j, v));
}

static ir_stmt *build_tfidf(te_graph *g, ir_buffer *out, void *user)
{
    const tfidf_te *t = user;
    ir_builder *b = &g->b;
    ir_var *rv = ir_var_new(b, "tfidf_row", SMELT_DT_INT64), *jv = ir_var_new(b, "tfidf_col", SMELT_DT_INT64);
    tfidf_build tb = {.t = t, .b = b, .y = out, .row = ir_var_ref(b, rv)};
    ir_stmt *body = ir_for(b, jv, ir_int(b, 0), ir_int(b, t->a->out_cols), IR_FOR_SERIAL,
                           tfidf_y_set(&tb, ir_var_ref(b, jv), ir_const_float(b, SMELT_DT_FLOAT32, 0)));
    for (int i = 0; i < t->n_sizes; i++) body = ir_seq2(b, body, tfidf_count_size(&tb, &t->sizes[i]));
    body = ir_seq2(b, body, tfidf_weigh(&tb));
    body = ir_for(b, rv, ir_int(b, 0), ir_int(b, t->rows), t->rows > 1 ? IR_FOR_PARALLEL : IR_FOR_SERIAL,
                  body);
    return b->failed ? NULL : body;
}

static smelt_status tfidf_compute(op_compute_args *a)
{
    const gr_node *n = a->node;
    const tfidf_attrs *at = n->op_attrs;
    tfidf_te *t = smelt_arena_alloc(&a->te->arena, sizeof *t);
    if (!t) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
    memset(t, 0, sizeof *t);
    const ir_buffer *xb = a->in[0]->buf;
    *t = (tfidf_te){.a = at, .x = a->in[0], .rows = xb->rank == 2 ? xb->shape[0] : 1,
                    .len = xb->shape[xb->rank - 1]};
    if (at->n_counts > (int)SMELT_ARRAY_LEN(t->sizes))
        return op_errf(a->ctx, n, SMELT_ERR_UNSUPPORTED, "n-grams longer than %d are not compiled",
                       (int)SMELT_ARRAY_LEN(t->sizes));
    int64_t number = 0;
    for (int i = 0; i < at->n_counts; i++) {
        int64_t end = i + 1 < at->n_counts ? at->counts[i + 1] : at->n_pool;
        if (i + 1 >= at->min_gram && i + 1 <= at->max_gram && end > at->counts[i])
            SMELT_TRY(tfidf_size_tables(a, at, i, number, &t->sizes[t->n_sizes++]));
        number += (end - at->counts[i]) / (i + 1);
    }
    if (at->mode != TFIDF_TF && at->n_weights > 0) {
        float *w = smelt_alloc(sizeof *w * (size_t)at->out_cols + 1);
        if (w) memcpy(w, at->weights, sizeof *w * (size_t)at->out_cols);
        t->weights = te_const_tensor(a->te, "tfidf_weights", SMELT_DT_FLOAT32, 1, &at->out_cols, w);
        if (!t->weights) return smelt_errf(a->ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    te_tensor *inputs[2 * SMELT_ARRAY_LEN(t->sizes) + 2];
    int n_in = 0;
    inputs[n_in++] = a->in[0];
    for (int i = 0; i < t->n_sizes; i++) {
        inputs[n_in++] = (te_tensor *)t->sizes[i].grams;
        inputs[n_in++] = (te_tensor *)t->sizes[i].cols;
    }
    if (t->weights) inputs[n_in++] = (te_tensor *)t->weights;
    const smelt_tensor *y = &a->out_type[0];
    double work = (double)(t->rows * t->len) * (double)(at->n_pool + 1);
    a->out[0] = te_extern_stage(a->te, "tfidf", SMELT_DT_FLOAT32, y->rank, y->dims, n_in, inputs,
                                build_tfidf, t, "tfidf", work);
    return a->out[0] ? SMELT_OK : smelt_ctx_status(a->ctx);
}

const op_def op_def_TFIDF_VECTORIZER = {
    .compute = tfidf_compute, .import = tfidf_import, .infer = tfidf_infer, .eval = tfidf_eval,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
};
