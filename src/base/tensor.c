/* smelt_tensor helpers. */
#include <string.h>

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

/* A container's elements, freed with it (the shape says how many). */
static void release_elements(smelt_tensor *t)
{
    if (!smelt_dtype_is_container(t->dtype) || !t->data || t->rank != 1 || t->dims[0] < 0) return;
    smelt_tensor *e = t->data;
    for (int64_t i = 0; i < t->dims[0]; i++) smelt_tensor_release(&e[i]);
}

void smelt_tensor_free(smelt_tensor *t)
{
    if (!t) return;
    smelt_tensor_release(t);
    smelt_free(t);
}

void smelt_tensor_release(smelt_tensor *t)
{
    if (!t) return;
    release_elements(t);
    smelt_free(t->data);
    smelt_free(t->name);
    t->data = NULL;
    t->name = NULL;
}

int smelt_dtype_is_container(smelt_dtype dt)
{
    return ((unsigned)dt & (SMELT_DT_SEQUENCE_BIT | SMELT_DT_OPTIONAL_BIT)) != 0;
}

smelt_dtype smelt_dtype_element(smelt_dtype dt)
{
    unsigned u = (unsigned)dt;
    if (u & SMELT_DT_OPTIONAL_BIT) return (smelt_dtype)(u & ~(unsigned)SMELT_DT_OPTIONAL_BIT);
    return (smelt_dtype)(u & ~(unsigned)SMELT_DT_SEQUENCE_BIT);
}

size_t smelt_value_nbytes(const smelt_tensor *t)
{
    if (!smelt_dtype_is_container(t->dtype)) return smelt_tensor_nbytes(t);
    if (t->rank != 1 || t->dims[0] < 0 || (t->dims[0] && !t->data)) return 0;
    const smelt_tensor *e = t->data;
    size_t n = (size_t)t->dims[0] * sizeof *e;
    for (int64_t i = 0; i < t->dims[0]; i++) n += smelt_value_nbytes(&e[i]);
    return n;
}

int smelt_value_copy(const smelt_tensor *t, smelt_tensor *dst)
{
    *dst = *t;
    dst->name = NULL;
    bool box = smelt_dtype_is_container(t->dtype);
    int64_t count = box && t->rank == 1 && t->dims[0] > 0 ? t->dims[0] : 0;
    size_t nb = box ? (size_t)count * sizeof(smelt_tensor) : smelt_tensor_nbytes(t);
    dst->data = smelt_calloc(nb ? nb : 1, 1);
    if (!dst->data) return false;
    if (!box) {
        if (nb) memcpy(dst->data, t->data, nb);
        return true;
    }
    const smelt_tensor *src = t->data;
    smelt_tensor *e = dst->data;
    for (int64_t i = 0; i < count; i++)
        if (!smelt_value_copy(&src[i], &e[i])) {
            dst->dims[0] = i + 1; /* element i holds nothing: release frees 0..i */
            smelt_tensor_release(dst);
            return false;
        }
    return true;
}
