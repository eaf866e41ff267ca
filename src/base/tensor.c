/* smelt_tensor helpers. */
#include "base.h"

int64_t smelt_tensor_numel(const smelt_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    return n;
}

size_t smelt_tensor_nbytes(const smelt_tensor *t)
{
    return (size_t)smelt_tensor_numel(t) * smelt_dtype_size(t->dtype);
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
