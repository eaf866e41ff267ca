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
 * (or the count).  String pools and inputs are outside smelt (strings). */
#include <string.h>

#include "ops/op.h"

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

const op_def op_def_TFIDF_VECTORIZER = {
    .import = tfidf_import, .infer = tfidf_infer, .eval = tfidf_eval, .min_inputs = 1,
    .max_inputs = 1,        .min_outputs = 1,     .max_outputs = 1,
};
