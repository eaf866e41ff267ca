/* smelt.nonzero and smelt.compress: selections whose output size depends on
 * the data, the micro-kernels the NonZero and Compress extern stages call
 * (ops/data.c, ops/select.c).  This file is C99 text embedded into
 * generated code (CMakeLists.txt, codegen/microkernel.c); it is not
 * compiled into smelt itself.
 *
 * Each writes its output laid out at `bound` along the selected dim, zeros
 * past the selection (code running over a whole tile past it reads valid
 * indices), and the number selected to *count: a slot of the program's
 * run-time dims, passed as the read-only parameter it is to every function;
 * these kernels are its only writers (api/specialize.c, "Data-dependent
 * counts"). */
#ifndef SMELT_UK_SELECT_H
#define SMELT_UK_SELECT_H

/* kind: 0 any type compared byte by byte, 1 float32, 2 float64, 3 a 16-bit
 * float (float16, bfloat16: the sign bit ignored, so -0 is zero) */
static int smelt_uksel_nonzero_at(const unsigned char *p, int64_t kind, int64_t es)
{
    if (kind == 1) {
        float f;
        memcpy(&f, p, sizeof f);
        return f != 0.0f;
    }
    if (kind == 2) {
        double d;
        memcpy(&d, p, sizeof d);
        return d != 0.0;
    }
    if (kind == 3) {
        uint16_t h;
        memcpy(&h, p, sizeof h);
        return (h & 0x7fff) != 0;
    }
    for (int64_t b = 0; b < es; b++)
        if (p[b]) return 1;
    return 0;
}

/* NonZero: the row-major indices of x's non-zero elements (n of them, dims
 * dims[0..rank)) as columns of y [rank, bound]. */
static void smelt_uk_nonzero(int64_t *y, const int64_t *count, const void *x, const int64_t *dims,
                             int64_t kind, int64_t es, int64_t n, int64_t rank, int64_t bound)
{
    const unsigned char *p = (const unsigned char *)x;
    int64_t k = 0;
    for (int64_t i = 0; i < n && k < bound; i++) {
        if (!smelt_uksel_nonzero_at(p + i * es, kind, es)) continue;
        int64_t rest = i;
        for (int64_t d = rank - 1; d >= 0; d--) {
            y[d * bound + k] = rest % dims[d];
            rest /= dims[d];
        }
        k++;
    }
    for (int64_t d = 0; d < rank; d++)
        for (int64_t j = k; j < bound; j++) y[d * bound + j] = 0;
    *(int64_t *)(uintptr_t)count = k;
}

/* Compress: x as outer x n x inner elements of es bytes; the slices i < n
 * whose cond[i] is true (ncond entries; the check stage refused true ones
 * past n) go to y, outer x bound x inner. */
static void smelt_uk_compress(void *y, const int64_t *count, const void *x, const void *cond,
                              int64_t ncond, int64_t outer, int64_t n, int64_t inner, int64_t es,
                              int64_t bound)
{
    unsigned char *dst = (unsigned char *)y;
    const unsigned char *src = (const unsigned char *)x, *c = (const unsigned char *)cond;
    int64_t m = ncond < n ? ncond : n, k = 0, row = inner * es;
    for (int64_t i = 0; i < m && k < bound; i++) {
        if (!c[i]) continue;
        for (int64_t o = 0; o < outer; o++)
            memcpy(dst + (o * bound + k) * row, src + (o * n + i) * row, (size_t)row);
        k++;
    }
    for (int64_t o = 0; o < outer; o++)
        memset(dst + (o * bound + k) * row, 0, (size_t)((bound - k) * row));
    *(int64_t *)(uintptr_t)count = k;
}

#endif
