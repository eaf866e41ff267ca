/* --plot: best-so-far against trials as an SVG, one thin line per task
 * (speed-up of its best over its first measurement, the default) and the
 * geometric mean over tasks in bold. */
#include <math.h>
#include <string.h>

#include "tune/tune.h"

#define PLOT_W 640
#define PLOT_H 400
#define PLOT_MARGIN 48

static double speedup_at(const double *h, int n, int i)
{
    if (n == 0) return 1;
    if (i >= n) i = n - 1;
    return h[0] > 0 && h[i] > 0 ? h[0] / h[i] : 1;
}

static void polyline(smelt_strbuf *sb, const double *y, int n, double ymax, const char *style)
{
    smelt_strbuf_printf(sb, "<polyline fill=\"none\" %s points=\"", style);
    for (int i = 0; i < n; i++) {
        double px = PLOT_MARGIN + (PLOT_W - 2 * PLOT_MARGIN) * (n > 1 ? (double)i / (n - 1) : 0);
        double py = PLOT_H - PLOT_MARGIN - (PLOT_H - 2 * PLOT_MARGIN) * (y[i] - 1) / (ymax - 1);
        smelt_strbuf_printf(sb, "%.1f,%.1f ", px, py);
    }
    smelt_strbuf_append(sb, "\"/>\n");
}

smelt_status tune_plot(smelt_ctx *ctx, const tune_session *s, const char *path)
{
    int tasks = tune_session_num_tasks(s), len = 1;
    for (int t = 0; t < tasks; t++) {
        int n;
        tune_session_history(s, t, &n);
        if (n > len) len = n;
    }
    double *mean = smelt_calloc((size_t)len, sizeof *mean), *line = smelt_calloc((size_t)len, sizeof *line);
    if (!mean || !line) {
        smelt_free(mean);
        smelt_free(line);
        return smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory");
    }
    double ymax = 1.1;
    for (int t = 0; t < tasks; t++) {
        int n;
        const double *h = tune_session_history(s, t, &n);
        for (int i = 0; i < len; i++) {
            double v = speedup_at(h, n, i);
            mean[i] += log(v) / (tasks ? tasks : 1);
            if (v > ymax) ymax = v;
        }
    }
    for (int i = 0; i < len; i++) mean[i] = exp(mean[i]);
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    smelt_strbuf_printf(&sb, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n"
                             "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                        PLOT_W, PLOT_H);
    smelt_strbuf_printf(&sb, "<text x=\"%d\" y=\"20\" font-size=\"14\">best-so-far speed-up over the "
                             "default schedule vs trials (%d tasks; bold: geometric mean)</text>\n",
                        PLOT_MARGIN, tasks);
    smelt_strbuf_printf(&sb, "<text x=\"4\" y=\"%d\" font-size=\"11\">%.2fx</text>\n"
                             "<text x=\"4\" y=\"%d\" font-size=\"11\">1.00x</text>\n"
                             "<text x=\"%d\" y=\"%d\" font-size=\"11\">%d trials</text>\n",
                        PLOT_MARGIN, ymax, PLOT_H - PLOT_MARGIN, PLOT_W - PLOT_MARGIN - 40,
                        PLOT_H - PLOT_MARGIN + 16, len);
    for (int t = 0; t < tasks; t++) {
        int n;
        const double *h = tune_session_history(s, t, &n);
        for (int i = 0; i < len; i++) line[i] = speedup_at(h, n, i);
        polyline(&sb, line, len, ymax, "stroke=\"#9ab\" stroke-width=\"1\"");
    }
    polyline(&sb, mean, len, ymax, "stroke=\"#c30\" stroke-width=\"3\"");
    smelt_strbuf_append(&sb, "</svg>\n");
    smelt_status st = sb.failed ? smelt_errf(ctx, SMELT_ERR_NOMEM, "out of memory")
                                : smelt_write_file(ctx, path, sb.data, sb.len);
    smelt_strbuf_fini(&sb);
    smelt_free(mean);
    smelt_free(line);
    return st;
}
