/* smelt.nms_f32: ONNX NonMaxSuppression over float32 boxes, the micro-kernel
 * the op's extern stage calls (ops/detect.c).  This file is C99 text embedded
 * into generated code (CMakeLists.txt, codegen/microkernel.c); it is not
 * compiled into smelt itself.
 *
 * Per batch entry and class: the boxes whose score exceeds score_threshold
 * (all without one), by descending score (NaN last, ties: the lower box
 * first), each kept unless its IoU with a box kept before exceeds
 * iou_threshold, until max_out are kept.  Rows (batch, class, box) go to
 * out in that order.  The arithmetic is float's, operation by operation, as
 * the reference kernel's (which rounds each double result to float: the
 * same values, since double holds every float sum, difference, product and
 * quotient to within one rounding).
 *
 * The number of rows is the data-dependent count: it is written to *count
 * (a slot of the program's run-time dims, which the functions after this
 * one read at their top), and the rows from there to `bound` are zeros,
 * so code that runs over a whole tile past the count reads valid indices. */
#ifndef SMELT_UK_NMS_F32_H
#define SMELT_UK_NMS_F32_H

typedef struct smelt_uknms_box {
    float lo[2], hi[2]; /* y, x */
} smelt_uknms_box;

static smelt_uknms_box smelt_uknms_box_at(const float *v, int64_t center)
{
    smelt_uknms_box x;
    for (int d = 0; d < 2; d++) {
        if (center) { /* (x_center, y_center, width, height) */
            float half = v[3 - d] / 2.0f, c = v[1 - d];
            x.lo[d] = c - half;
            x.hi[d] = c + half;
        } else {
            x.lo[d] = v[d] < v[d + 2] ? v[d] : v[d + 2];
            x.hi[d] = v[d] < v[d + 2] ? v[d + 2] : v[d];
        }
    }
    return x;
}

static int smelt_uknms_suppresses(const smelt_uknms_box *p, const smelt_uknms_box *q, float iou)
{
    float ext[2];
    for (int d = 1; d >= 0; d--) {
        float lo = p->lo[d] > q->lo[d] ? p->lo[d] : q->lo[d];
        float hi = p->hi[d] < q->hi[d] ? p->hi[d] : q->hi[d];
        if (!(hi > lo)) return 0;
        ext[d] = hi - lo;
    }
    float inter = ext[1] * ext[0];
    float a1 = (p->hi[1] - p->lo[1]) * (p->hi[0] - p->lo[0]);
    float a2 = (q->hi[1] - q->lo[1]) * (q->hi[0] - q->lo[0]);
    float uni = (a1 + a2) - inter;
    if (!(inter > 0.0f) || !(a1 > 0.0f) || !(a2 > 0.0f) || !(uni > 0.0f)) return 0;
    return inter / uni > iou;
}

/* Whether candidate i goes before j: higher score, NaN last, lower box first. */
static int smelt_uknms_before(const float *s, int64_t i, int64_t j)
{
    int ni = s[i] != s[i], nj = s[j] != s[j];
    if (ni != nj) return nj;
    if (!ni && s[i] != s[j]) return s[i] > s[j];
    return i < j;
}

/* Sort idx[0..m) by smelt_uknms_before (bottom-up merge sort through tmp). */
static void smelt_uknms_sort(const float *s, int64_t *idx, int64_t *tmp, int64_t m)
{
    int64_t *a = idx, *b = tmp;
    for (int64_t w = 1; w < m; w *= 2) {
        for (int64_t lo = 0; lo < m; lo += 2 * w) {
            int64_t mid = lo + w < m ? lo + w : m, hi = lo + 2 * w < m ? lo + 2 * w : m;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) b[k++] = smelt_uknms_before(s, a[j], a[i]) ? a[j++] : a[i++];
            while (i < mid) b[k++] = a[i++];
            while (j < hi) b[k++] = a[j++];
        }
        int64_t *t = a;
        a = b;
        b = t;
    }
    if (a != idx)
        for (int64_t i = 0; i < m; i++) idx[i] = a[i];
}

/* boxes [nb, n, 4], scores [nb, nc, n]; out [bound, 3]; the scalar inputs
 * max_output_boxes_per_class, iou_threshold and score_threshold at
 * max_out_p, iou_p and score_p, present as flags bits 0, 1 and 2 say (bit 3:
 * center_point_box); scratch: idx and tmp of n entries, kept of n boxes (4
 * floats each).  count is the run-time dims slot, passed as the read-only
 * parameter it is to every function: this kernel is its only writer. */
static void smelt_uk_nms_f32(int64_t *out, const int64_t *count, const float *boxes,
                             const float *scores, const int64_t *max_out_p, const float *iou_p,
                             const float *score_p, int64_t flags, int64_t nb, int64_t nc, int64_t n,
                             int64_t bound, int64_t *idx, int64_t *tmp, float *kept)
{
    int64_t max_out = flags & 1 ? max_out_p[0] : 0, center = flags & 8, has_score = flags & 4;
    float iou = flags & 2 ? iou_p[0] : 0.0f, score_thr = has_score ? score_p[0] : 0.0f;
    smelt_uknms_box *kb = (smelt_uknms_box *)(void *)kept;
    int64_t rows = 0;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t c = 0; c < nc; c++) {
            const float *s = scores + (b * nc + c) * n;
            int64_t m = 0, k = 0;
            for (int64_t i = 0; i < n; i++)
                if (!has_score || s[i] > score_thr) idx[m++] = i;
            smelt_uknms_sort(s, idx, tmp, m);
            for (int64_t j = 0; j < m && k < max_out && rows < bound; j++) {
                smelt_uknms_box x = smelt_uknms_box_at(boxes + (b * n + idx[j]) * 4, center);
                int keep = 1;
                for (int64_t q = 0; q < k && keep; q++) keep = !smelt_uknms_suppresses(&x, &kb[q], iou);
                if (!keep) continue;
                kb[k++] = x;
                out[rows * 3 + 0] = b;
                out[rows * 3 + 1] = c;
                out[rows * 3 + 2] = idx[j];
                rows++;
            }
        }
    for (int64_t r = rows * 3; r < bound * 3; r++) out[r] = 0;
    *(int64_t *)(uintptr_t)count = rows;
}

#endif
