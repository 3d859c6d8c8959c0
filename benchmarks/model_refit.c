/* model_refit.c — model-refit: fits the performance model offline from
 * measured samples and reports how well it predicts samples it was not
 * fitted on (leave-one-out, or a held-out file or N), so that a model form
 * can be checked against recorded GPU data without the GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "model/model.h"

#define MAX_ROWS 4096

static void usage(void) {
  printf(
      "usage: model-refit [options]\n"
      "  --samples FILE       samples CSV (fmmtune --fit --report-csv, bench-model --samples-csv)\n"
      "  --test FILE          samples to predict (same CSV form); without it, leave-one-out\n"
      "                       over --samples: each sample predicted by a fit on the others\n"
      "  --from-bench FILE    instead of --samples: a bench-model per-phase CSV (first-round\n"
      "                       form); each (dist, n) case's gpu and cpu schedule rows become\n"
      "                       a sample of device a and b, the work counted again on host\n"
      "                       trees of bench-model's inputs; overhead = total - phases\n"
      "  --peaks-a P,B        device a's peaks (pairs/s, bytes/s) for --from-bench\n"
      "  --peaks-b P,B        device b's peaks for --from-bench\n"
      "  --holdout-n N        fit on samples with fewer than N sources, test on the rest\n"
      "  --write-samples FILE write the samples read (--from-bench: reconstructed) as CSV\n"
      "  --no-granules        fit without the granule and overhead terms (the first\n"
      "                       round's form, for comparison)\n"
      "  --verbose            every phase of every prediction\n");
}

static fmmcl_model_csv_row rows[MAX_ROWS];
static int verbose;
static size_t n_rows;

static void add_rows(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "model-refit: cannot open %s\n", path);
    exit(1);
  }
  fmmcl_model_csv_row *r;
  size_t n;
  if (fmmcl_model_samples_read(f, &r, &n)) {
    fprintf(stderr, "model-refit: %s: %s\n", path, fmmcl_last_error(NULL));
    exit(1);
  }
  fclose(f);
  for (size_t i = 0; i < n && n_rows < MAX_ROWS; i++) rows[n_rows++] = r[i];
  free(r);
}

/* ---- the first round's bench-model CSV ------------------------------------ */

typedef struct bench_case {
  char dist[16];
  size_t n;
  int order, leaf;
  double sec[2][FMMCL_MODEL_NPHASES], total[2];
  int seen[2];
} bench_case;

static void from_bench(const char *path, const double peaks[2][2]) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "model-refit: cannot open %s\n", path);
    exit(1);
  }
  static bench_case cases[256];
  size_t n_cases = 0;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char dist[16], sched[16], dev[8], phase[16];
    size_t n;
    double tol, pred, meas;
    int order, leaf;
    if (sscanf(line, "%15[^,],%zu,%lf,%d,%d,%15[^,],%7[^,],%15[^,],%lf,%lf", dist, &n, &tol, &order, &leaf,
               sched, dev, phase, &pred, &meas) != 10)
      continue; /* the header */
    const int d = !strcmp(sched, "gpu") ? 0 : !strcmp(sched, "cpu") ? 1 : -1;
    if (d < 0) continue; /* hybrids: shares of both devices at once */
    bench_case *c = NULL;
    for (size_t i = 0; i < n_cases; i++)
      if (!strcmp(cases[i].dist, dist) && cases[i].n == n && cases[i].order == order && cases[i].leaf == leaf)
        c = &cases[i];
    if (!c) {
      if (n_cases == 256) continue;
      c = &cases[n_cases++];
      memset(c, 0, sizeof *c);
      snprintf(c->dist, sizeof c->dist, "%s", dist);
      c->n = n, c->order = order, c->leaf = leaf;
    }
    c->seen[d] = 1;
    if (!strcmp(phase, "total")) c->total[d] = meas;
    for (int ph = 0; ph < FMMCL_MODEL_OVERHEAD; ph++)
      if (!strcmp(phase, fmmcl_model_phase_names[ph])) c->sec[d][ph] = meas;
  }
  fclose(f);
  for (size_t i = 0; i < n_cases; i++) {
    bench_case *c = &cases[i];
    double *x = malloc(3 * c->n * sizeof *x), work[FMMCL_MODEL_NWORK];
    bench_model_points(!strcmp(c->dist, "ellipsoid"), c->n, x);
    bench_check(NULL, fmmcl_model_counts(c->n, x, 0, NULL, (size_t)c->leaf, FMMCL_SINGLE, work), "counts");
    free(x);
    for (int d = 0; d < 2; d++) {
      if (!c->seen[d] || n_rows == MAX_ROWS) continue;
      fmmcl_model_csv_row *r = &rows[n_rows++];
      memset(r, 0, sizeof *r);
      snprintf(r->device, sizeof r->device, "%c:%.15s", 'a' + d, c->dist);
      r->precision = FMMCL_SINGLE;
      r->model.measured = 1, r->model.pairs_per_s = peaks[d][0], r->model.bytes_per_s = peaks[d][1];
      r->sample.order = c->order;
      r->sample.n_sources = r->sample.n_targets = c->n;
      memcpy(r->sample.work, work, sizeof work);
      r->sample.work[FMMCL_MODEL_COMBINE] = 0; /* no hybrid */
      double phases = 0;
      for (int ph = 0; ph < FMMCL_MODEL_OVERHEAD; ph++) phases += r->sample.seconds[ph] = c->sec[d][ph];
      /* the first round summed even a single device's result on the host:
       * that is in this overhead */
      r->sample.seconds[FMMCL_MODEL_OVERHEAD] = c->total[d] > phases ? c->total[d] - phases : 0;
    }
  }
}

/* ---- fitting and testing ---------------------------------------------------- */

/* Device a and b of --from-bench rows are "a:dist"; group on the letter. */
static int same_device(const fmmcl_model_csv_row *x, const fmmcl_model_csv_row *y) {
  if (x->device[1] == ':' && y->device[1] == ':') return x->device[0] == y->device[0];
  return !strcmp(x->device, y->device) && x->precision == y->precision;
}

static void strip(fmmcl_model_sample *s) {
  for (int ph = 0; ph < FMMCL_MODEL_NPHASES; ph++) s->work[FMMCL_MODEL_NPHASES + ph] = 0;
  s->work[FMMCL_MODEL_OVERHEAD] = 0;
}

static double wall(const fmmcl_model_sample *s) {
  double t = 0;
  for (int ph = 0; ph < FMMCL_MODEL_COMBINE; ph++) t += s->seconds[ph];
  return t;
}

/* Fits on train[] (n), predicts s; appends the total's and each phase's
 * (above 0.1 ms) relative errors. */
static void predict_one(const fmmcl_model_csv_row *train, size_t n, const fmmcl_model_csv_row *test,
                        int plain, double *err_total, size_t *n_total, double *err_phase, size_t *n_phase) {
  fmmcl_model_sample *smp = malloc((n ? n : 1) * sizeof *smp);
  for (size_t i = 0; i < n; i++) {
    smp[i] = train[i].sample;
    if (plain) strip(&smp[i]);
  }
  fmmcl_model_precision mp = test->model;
  const size_t rs = test->precision == FMMCL_DOUBLE ? 8 : 4;
  fmmcl_model_fit_samples(smp, n, rs, &mp);
  fmmcl_model_sample s = test->sample;
  if (plain) strip(&s);
  double sec[FMMCL_MODEL_NPHASES];
  const double pred = fmmcl_model_predict(&mp, rs, s.order, s.work, s.n_sources, s.n_targets, sec);
  const double meas = wall(&test->sample);
  err_total[(*n_total)++] = fabs(pred - meas) / meas;
  for (int ph = 0; ph < FMMCL_MODEL_COMBINE; ph++) {
    if (test->sample.seconds[ph] > 1e-4)
      err_phase[(*n_phase)++] = fabs(sec[ph] - test->sample.seconds[ph]) / test->sample.seconds[ph];
    if (verbose && (sec[ph] > 0 || test->sample.seconds[ph] > 0))
      printf("      %-9s measured %10.6f s predicted %10.6f s\n", fmmcl_model_phase_names[ph],
             test->sample.seconds[ph], sec[ph]);
  }
  printf("  %-44.44s N=%-8zu p=%-2d measured %10.6f s predicted %10.6f s  %6.1f%%\n", test->device,
         test->sample.n_sources, s.order, meas, pred, 100 * fabs(pred - meas) / meas);
  free(smp);
}

int main(int argc, char **argv) {
  const char *samples = NULL, *test = NULL, *bench = NULL, *write = NULL;
  double peaks[2][2] = {{0, 0}, {0, 0}};
  size_t holdout_n = 0;
  int plain = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help")) {
      usage();
      return 0;
    }
    if (!strcmp(a, "--no-granules")) {
      plain = 1;
      continue;
    }
    if (!strcmp(a, "--verbose")) {
      verbose = 1;
      continue;
    }
    if (!v) {
      fprintf(stderr, "model-refit: %s needs a value (see --help)\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--samples")) samples = v;
    else if (!strcmp(a, "--test")) test = v;
    else if (!strcmp(a, "--from-bench")) bench = v;
    else if (!strcmp(a, "--write-samples")) write = v;
    else if (!strcmp(a, "--holdout-n")) holdout_n = (size_t)strtod(v, NULL);
    else if (!strcmp(a, "--peaks-a")) sscanf(v, "%lf,%lf", &peaks[0][0], &peaks[0][1]);
    else if (!strcmp(a, "--peaks-b")) sscanf(v, "%lf,%lf", &peaks[1][0], &peaks[1][1]);
    else {
      fprintf(stderr, "model-refit: unknown option %s (see --help)\n", a);
      return 2;
    }
  }
  if (!!samples + !!bench != 1) {
    fprintf(stderr, "model-refit: give --samples or --from-bench\n");
    return 2;
  }
  if (bench && !(peaks[0][0] > 0 && peaks[0][1] > 0 && peaks[1][0] > 0 && peaks[1][1] > 0)) {
    fprintf(stderr, "model-refit: --from-bench needs --peaks-a and --peaks-b\n");
    return 2;
  }
  if (samples) add_rows(samples);
  else from_bench(bench, peaks);
  const size_t n_train_rows = n_rows;
  if (test) add_rows(test);
  if (write) {
    FILE *f = fopen(write, "w");
    for (size_t i = 0; f && i < n_rows; i++)
      fmmcl_model_samples_write(f, rows[i].device, rows[i].precision, &rows[i].model, &rows[i].sample, 1);
    if (!f || fclose(f)) {
      fprintf(stderr, "model-refit: cannot write %s\n", write);
      return 1;
    }
  }
  printf("# %zu samples%s, model form %s\n", n_train_rows, test ? " to fit on" : "",
         plain ? "without granule and overhead terms" : "v2 (granules, overhead)");
  /* per device: the samples to predict, each with the training set it may use */
  int done[MAX_ROWS] = {0};
  double *all_t = malloc(MAX_ROWS * sizeof(double)),
         *all_p = malloc(MAX_ROWS * FMMCL_MODEL_NPHASES * sizeof(double));
  fmmcl_model_csv_row *train = malloc(MAX_ROWS * sizeof *train);
  for (size_t lead = 0; lead < n_rows; lead++) {
    if (done[lead]) continue;
    double *et = malloc(MAX_ROWS * sizeof(double)),
           *ep = malloc(MAX_ROWS * FMMCL_MODEL_NPHASES * sizeof(double));
    size_t nt = 0, np = 0;
    const char *name = rows[lead].device;
    printf("device %.*s\n", rows[lead].device[1] == ':' ? 1 : 60, name);
    for (size_t i = lead; i < n_rows; i++) {
      if (!same_device(&rows[i], &rows[lead])) continue;
      done[i] = 1;
      const int is_test = test ? i >= n_train_rows : holdout_n ? rows[i].sample.n_sources >= holdout_n : 1;
      if (!is_test) continue;
      size_t k = 0; /* what this sample's prediction may be fitted on */
      for (size_t j = 0; j < n_train_rows; j++) {
        if (!same_device(&rows[j], &rows[i]) || j == i) continue;
        if (holdout_n && rows[j].sample.n_sources >= holdout_n) continue;
        train[k++] = rows[j];
      }
      if (k < 2) {
        printf("  %-44.44s N=%-8zu: fewer than 2 samples of this device to fit on\n", rows[i].device,
               rows[i].sample.n_sources);
        continue;
      }
      predict_one(train, k, &rows[i], plain, et, &nt, ep, &np);
    }
    printf("  median error: total %.1f%% over %zu, phases > 0.1 ms %.1f%% over %zu\n",
           100 * fmmcl_median(et, nt), nt, 100 * fmmcl_median(ep, np), np);
    free(et), free(ep);
  }
  free(all_t), free(all_p), free(train);
  return 0;
}
