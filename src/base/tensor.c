/* smelt_tensor helpers. */
#include "base.h"

/* Tensors reach here from API callers too: a rank outside 0..SMELT_MAX_RANK,
 * a negative (symbolic) dim or an overflowing product gives -1, never a
 * read past dims or a wrapped count. */
int64_t smelt_tensor_numel(const smelt_tensor *t)
{
    if (t->rank < 0 || t->rank > SMELT_MAX_RANK) return -1;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] < 0 || smelt_mul_overflow_i64(n, t->dims[i], &n)) return -1;
    return n;
}

/* 0 when the element count is -1 (see above) or the bytes overflow. */
size_t smelt_tensor_nbytes(const smelt_tensor *t)
{
    int64_t n = smelt_tensor_numel(t);
    size_t es = smelt_dtype_size(t->dtype);
    if (n < 0 || (es && (uint64_t)n > SIZE_MAX / es)) return 0;
    return (size_t)n * es;
}

void smelt_tensor_free(smelt_tensor *t)
{
    if (!t) return;
    smelt_free(t->data);
    smelt_free(t->name);
    smelt_free(t);
}

void smelt_tensor_release(smelt_tensor *t)
{
    if (!t) return;
    smelt_free(t->data);
    smelt_free(t->name);
    t->data = NULL;
    t->name = NULL;
}
