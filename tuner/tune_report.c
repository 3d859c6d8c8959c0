/* tune_report.c — what fmmtune shows: a progress bar on stderr while a job
 * runs (a line per tenth of the budget when stderr is no terminal, so logs
 * of unattended runs stay readable), the closing table and its CSV. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tune.h"

#define BAR_WIDTH 24

void tune_progress_start(tune_progress *pg, const char *label, size_t total, double budget) {
  if (!pg->enabled) return;
  pg->tty = isatty(fileno(stderr));
  snprintf(pg->label, sizeof pg->label, "%s", label);
  pg->t0 = fmmcl_wall_seconds();
  pg->budget = budget;
  pg->total = total;
  pg->last_tenth = -1;
}

void tune_progress_step(tune_progress *pg, size_t done, size_t rejected, double best_ms, const char *best) {
  if (!pg->enabled) return;
  const double t = fmmcl_wall_seconds() - pg->t0;
  /* the bar follows whichever runs out first: candidates or time */
  double frac = pg->total ? (double)done / (double)pg->total : 1;
  if (pg->budget > 0 && t / pg->budget > frac) frac = t / pg->budget;
  if (frac > 1) frac = 1;
  const int tenth = (int)(frac * 10);
  if (!pg->tty && tenth == pg->last_tenth) return;
  pg->last_tenth = tenth;
  char bar[BAR_WIDTH + 1];
  const int filled = (int)(frac * BAR_WIDTH + 0.5);
  for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < filled ? '#' : '.';
  bar[BAR_WIDTH] = '\0';
  char bests[160] = "best -";
  if (!isnan(best_ms)) snprintf(bests, sizeof bests, "best %.4g ms %s", best_ms, best);
  fprintf(stderr, "%s%-30s [%s] %3zu/%zu %zu rej %4.0f/%.0f s  %s%s", pg->tty ? "\r\033[K" : "", pg->label,
          bar, done, pg->total, rejected, t, pg->budget, bests, pg->tty ? "" : "\n");
  fflush(stderr);
}

void tune_progress_end(tune_progress *pg, const char *summary) {
  if (!pg->enabled) return;
  fprintf(stderr, "%s%s\n", pg->tty ? "\r\033[K" : "", summary);
}

void tune_progress_candidate(tune_progress *pg, const char *params, double ms, double seconds,
                             const char *why) {
  if (!pg->verbose) return;
  if (ms >= 0)
    fprintf(stderr, "%s%s  %-28s %10.4g ms  (%.1f s)\n", pg->tty ? "\r\033[K" : "", pg->label, params, ms,
            seconds);
  else
    fprintf(stderr, "%s%s  %-28s rejected: %s  (%.1f s)\n", pg->tty ? "\r\033[K" : "", pg->label, params, why,
            seconds);
}

/* "-DWGS=128 -DTPW=4" -> "WGS=128 TPW=4", for narrow tables */
static const char *short_defines(const char *d, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (const char *s = d; *s && used + 1 < len; s++) {
    if (s[0] == '-' && s[1] == 'D' && (s == d || s[-1] == ' ')) {
      s++;
      continue;
    }
    buf[used++] = *s;
    buf[used] = '\0';
  }
  return buf;
}

static double gain_of(const tune_result *r) {
  return r->ok && r->best_ms > 0 && isfinite(r->default_ms) ? r->default_ms / r->best_ms : NAN;
}

void tune_report_table(FILE *out, const tune_result *res, size_t n) {
  fprintf(out, "\n%-28s %8s  %-26s %10s  %-26s %10s %6s\n", "kernel precision class", "N", "default", "ms",
          "tuned", "ms", "gain");
  double log_sum = 0;
  size_t counted = 0;
  for (size_t i = 0; i < n; i++) {
    const tune_result *r = &res[i];
    char a[128], b[128];
    if (!r->ok) {
      fprintf(out, "%-28s %8zu  failed: %s\n", r->label, r->n, r->why);
      continue;
    }
    const double g = gain_of(r);
    fprintf(out, "%-28s %8zu  %-26s %10.4g  %-26s %10.4g %5.2fx\n", r->label, r->n,
            short_defines(r->default_defines, a, sizeof a), r->default_ms,
            short_defines(r->best_defines, b, sizeof b), r->best_ms, g);
    if (isfinite(g)) {
      log_sum += log(g);
      counted++;
    }
  }
  if (counted)
    fprintf(out, "geometric-mean gain over the defaults: %.2fx (%zu kernels)\n",
            exp(log_sum / (double)counted), counted);
}

void tune_report_csv(FILE *out, const fmmcl_device_info *dev, const tune_result *res, size_t n,
                     double budget) {
  fprintf(out,
          "device,kernel,precision,class,n,default,default_ms,tuned,tuned_ms,gain,tried,valid,"
          "rejected,exhaustive,budget_s\n");
  for (size_t i = 0; i < n; i++) {
    const tune_result *r = &res[i];
    char k[64], p[16], c[32];
    if (sscanf(r->label, "%63s %15s %31s", k, p, c) != 3) continue;
    fprintf(out, "\"%s\",%s,%s,%s,%zu,\"%s\",%.6g,\"%s\",%.6g,%.4f,%zu,%zu,%zu,%d,%.0f\n", dev->device_name,
            k, p, c, r->n, r->default_defines, r->default_ms, r->ok ? r->best_defines : "", r->best_ms,
            gain_of(r), r->tried, r->n_valid, r->rejected, r->exhaustive, budget);
  }
}
