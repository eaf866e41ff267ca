/* smelt.roialign_f32: RoiAlign of one region over float32 channels, the
 * micro-kernel the op's extern stage calls per region (ops/sample.c).  This
 * file is C99 text embedded into generated code (CMakeLists.txt,
 * codegen/microkernel.c); it is not compiled into smelt itself.
 *
 * The arithmetic is the reference kernel's (ops/sample.c roi_axis_of,
 * roi_sample, roi_bin), in double, in its order: per bin, the samples row
 * by row, each the weighted sum (or maximum) of its four pixels, 0 when
 * more than a pixel outside; the mean over grid_h x grid_w samples (or the
 * maximum).  A sample's pixels and weights are worked out once for all
 * channels, whose sums run in acc (C doubles of scratch).  The TIR
 * interpreter (tir/interp.c) runs this same text. */
#ifndef SMELT_UK_ROIALIGN_F32_H
#define SMELT_UK_ROIALIGN_F32_H

typedef struct smelt_ukroi_axis {
    double start, bin;
    int64_t grid;
} smelt_ukroi_axis;

static smelt_ukroi_axis smelt_ukroi_axis_of(double lo, double hi, double scale, int64_t half_pixel,
                                            int64_t ratio, int64_t bins, int64_t bound)
{
    double off = half_pixel ? 0.5 : 0.0;
    smelt_ukroi_axis r;
    r.start = lo * scale - off;
    double size = (hi * scale - off) - r.start;
    if (!half_pixel) size = size > 1.0 ? size : 1.0;
    r.bin = size / (double)bins;
    double g = ratio > 0 ? (double)ratio : ceil(size / (double)bins);
    r.grid = g >= 0.0 ? (g < (double)bound ? (int64_t)g : bound) : 0; /* the check refuses more */
    return r;
}

/* The sample at p along an axis of len pixels: 0 more than a pixel outside,
 * else its low pixel, high pixel and the high one's weight. */
static int smelt_ukroi_sample(double p, int64_t len, int64_t *low, int64_t *high, double *l)
{
    if (!(p >= -1.0 && p <= (double)len)) return 0;
    p = p > 0.0 ? p : 0.0;
    double f = floor(p);
    if (f >= (double)(len - 1)) {
        *low = *high = len - 1;
        *l = 0.0;
    } else {
        *low = (int64_t)f;
        *high = *low + 1;
        *l = p - f;
    }
    return 1;
}

/* y [C, oh, ow] of the region roi (x1, y1, x2, y2) over image x [C, H, W]. */
static void smelt_uk_roialign_f32(float *y, const float *x, const float *roi, double *acc,
                                  int64_t C, int64_t H, int64_t W, int64_t oh, int64_t ow,
                                  int64_t ratio, int64_t half_pixel, int64_t max_mode,
                                  int64_t bound_h, int64_t bound_w, double scale)
{
    smelt_ukroi_axis ry = smelt_ukroi_axis_of((double)roi[1], (double)roi[3], scale, half_pixel, ratio,
                                              oh, bound_h);
    smelt_ukroi_axis rx = smelt_ukroi_axis_of((double)roi[0], (double)roi[2], scale, half_pixel, ratio,
                                              ow, bound_w);
    int64_t plane = H * W, count = ry.grid * rx.grid;
    for (int64_t ph = 0; ph < oh; ph++)
        for (int64_t pw = 0; pw < ow; pw++) {
            for (int64_t c = 0; c < C; c++) acc[c] = 0.0;
            int any = 0;
            for (int64_t iy = 0; iy < ry.grid; iy++) {
                double py = ry.start + (double)ph * ry.bin + ((double)iy + 0.5) * ry.bin / (double)ry.grid;
                for (int64_t ix = 0; ix < rx.grid; ix++) {
                    double px = rx.start + (double)pw * rx.bin + ((double)ix + 0.5) * rx.bin / (double)rx.grid;
                    int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;
                    double ly = 0.0, lx = 0.0;
                    int in = smelt_ukroi_sample(py, H, &y0, &y1, &ly) &&
                             smelt_ukroi_sample(px, W, &x0, &x1, &lx);
                    double hy = 1.0 - ly, hx = 1.0 - lx;
                    for (int64_t c = 0; c < C && in; c++) {
                        const float *p = x + c * plane;
                        double v0 = hy * hx * (double)p[y0 * W + x0];
                        double v1 = hy * lx * (double)p[y0 * W + x1];
                        double v2 = ly * hx * (double)p[y1 * W + x0];
                        double v3 = ly * lx * (double)p[y1 * W + x1];
                        if (!max_mode) {
                            acc[c] += v0 + v1 + v2 + v3;
                            continue;
                        }
                        double m = v0;
                        m = v1 > m ? v1 : m;
                        m = v2 > m ? v2 : m;
                        m = v3 > m ? v3 : m;
                        acc[c] = any && !(m > acc[c]) ? acc[c] : m;
                    }
                    if (!in && max_mode) /* a sample outside weighs 0 */
                        for (int64_t c = 0; c < C; c++) acc[c] = any && !(0.0 > acc[c]) ? acc[c] : 0.0;
                    any = 1;
                }
            }
            double div = (double)(count > 1 ? count : 1);
            for (int64_t c = 0; c < C; c++)
                y[(c * oh + ph) * ow + pw] = (float)(max_mode ? acc[c] : acc[c] / div);
        }
}

#endif
