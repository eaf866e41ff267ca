/* smelt.nonzero, smelt.compress and smelt.unique: selections whose output
 * size depends on the data, the micro-kernels the NonZero, Compress and
 * Unique extern stages call (ops/data.c, ops/select.c).  This file is C99 text embedded into
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

/* the file carries every kernel; a module calls some (AOT packages build
 * with -Wall -Werror) */
#if defined(__GNUC__)
#define SMELT_UKSEL_FN static __attribute__((unused))
#else
#define SMELT_UKSEL_FN static
#endif

/* kind: 0 any type compared byte by byte, 1 float32, 2 float64, 3 a 16-bit
 * float (float16, bfloat16: the sign bit ignored, so -0 is zero) */
SMELT_UKSEL_FN int smelt_uksel_nonzero_at(const unsigned char *p, int64_t kind, int64_t es)
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
SMELT_UKSEL_FN void smelt_uk_nonzero(int64_t *y, const int64_t *count, const void *x, const int64_t *dims,
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
SMELT_UKSEL_FN void smelt_uk_compress(void *y, const int64_t *count, const void *x, const void *cond,
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

/* Unique's order of slices i and j (outer x n x inner elements): element by
 * element as the reference compares them (kind 1 float32, 2 float64: NaN
 * last, NaNs equal; 4 signed, 5 unsigned integers of es bytes, compared as
 * int64 values) */
SMELT_UKSEL_FN int64_t smelt_uksel_elem_i64(const unsigned char *p, int64_t kind, int64_t es)
{
    if (es == 1) return kind == 4 ? (int64_t)*(const int8_t *)p : (int64_t)*p;
    if (es == 2) {
        uint16_t u;
        memcpy(&u, p, 2);
        return kind == 4 ? (int64_t)(int16_t)u : (int64_t)u;
    }
    if (es == 4) {
        uint32_t u;
        memcpy(&u, p, 4);
        return kind == 4 ? (int64_t)(int32_t)u : (int64_t)u;
    }
    uint64_t u;
    memcpy(&u, p, 8);
    return (int64_t)u;
}

SMELT_UKSEL_FN int smelt_uksel_slice_cmp(const unsigned char *x, int64_t kind, int64_t es, int64_t outer,
                                 int64_t n, int64_t inner, int64_t i, int64_t j)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t e = 0; e < inner; e++) {
            const unsigned char *pa = x + ((o * n + i) * inner + e) * es;
            const unsigned char *pb = x + ((o * n + j) * inner + e) * es;
            if (kind == 1 || kind == 2) {
                double a, b;
                if (kind == 1) {
                    float fa, fb;
                    memcpy(&fa, pa, 4);
                    memcpy(&fb, pb, 4);
                    a = fa;
                    b = fb;
                } else {
                    memcpy(&a, pa, 8);
                    memcpy(&b, pb, 8);
                }
                if (a != a || b != b) {
                    if ((a != a) != (b != b)) return a != a ? 1 : -1;
                    continue;
                }
                if (a != b) return a < b ? -1 : 1;
            } else {
                int64_t a = smelt_uksel_elem_i64(pa, kind, es), b = smelt_uksel_elem_i64(pb, kind, es);
                if (a != b) return a < b ? -1 : 1;
            }
        }
    return 0;
}

/* Unique: the distinct slices of x, ascending (sorted) or in order of first
 * occurrence.  want 0: Y into y (outer x bound x inner elements of es
 * bytes); want 1: y int64 [3 * bound ... ]: the first occurrences [bound],
 * the counts [bound], then each slice's position in Y [n].  Scratch idx,
 * tmp, grp: n entries each.  A stable merge sort of the slices by value
 * puts equal ones together, first occurrence first. */
SMELT_UKSEL_FN void smelt_uk_unique(void *y, const int64_t *count, const void *x, int64_t want,
                            int64_t kind, int64_t es, int64_t outer, int64_t n, int64_t inner,
                            int64_t sorted, int64_t bound, int64_t *idx, int64_t *tmp, int64_t *grp)
{
    const unsigned char *src = (const unsigned char *)x;
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    int64_t *a = idx, *b = tmp;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                b[k++] = smelt_uksel_slice_cmp(src, kind, es, outer, n, inner, a[j], a[i]) < 0 ? a[j++] : a[i++];
            while (i < mid) b[k++] = a[i++];
            while (j < hi) b[k++] = a[j++];
        }
        int64_t *t = a;
        a = b;
        b = t;
    }
    /* groups in value order: first[g] (into b, free now), grp[slice] = g */
    int64_t k = 0;
    for (int64_t p = 0; p < n; p++) {
        if (p == 0 || smelt_uksel_slice_cmp(src, kind, es, outer, n, inner, a[p - 1], a[p]) != 0)
            b[k++] = a[p];
        grp[a[p]] = k - 1;
    }
    int64_t *first = b, *pos = a; /* pos[g]: g's place in Y */
    if (sorted) {
        for (int64_t g = 0; g < k; g++) pos[g] = g;
    } else {
        int64_t next = 0;
        for (int64_t i = 0; i < n; i++)
            if (first[grp[i]] == i) pos[grp[i]] = next++;
    }
    if (k > bound) k = bound;
    if (want == 0) {
        unsigned char *dst = (unsigned char *)y;
        int64_t row = inner * es;
        for (int64_t o = 0; o < outer; o++) {
            memset(dst + o * bound * row, 0, (size_t)(bound * row));
            for (int64_t g = 0; g < k; g++)
                memcpy(dst + (o * bound + pos[g]) * row, src + (o * n + first[g]) * row, (size_t)row);
        }
    } else {
        int64_t *meta = (int64_t *)y;
        for (int64_t i = 0; i < 2 * bound; i++) meta[i] = 0;
        for (int64_t g = 0; g < k; g++) meta[pos[g]] = first[g];
        for (int64_t i = 0; i < n; i++) {
            meta[bound + pos[grp[i]]]++;
            meta[2 * bound + i] = pos[grp[i]];
        }
    }
    *(int64_t *)(uintptr_t)count = k;
}

#endif
