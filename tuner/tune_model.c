/* tune_model.c — fmmtune --model: runs the performance model's
 * microbenchmarks (and with --fit, the sweep that fits its per-phase
 * constants) on one device and stores them in the device's model file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "tune.h"

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The sweep, the fit, and how well the fit reproduces its own samples. */
static int fit_precision(fmmcl_context ctx, const fmmcl_device_info *dev, fmmcl_precision prec, double budget,
                         const char *samples_csv, fmmcl_model_precision *mp) {
  fmmcl_model_sweep sw;
  fmmcl_model_default_sweep(dev, &sw);
  if (budget > 0) sw.budget_s = budget;
  fmmcl_model_sample *smp;
  size_t n;
  fprintf(stderr, "fmmtune: fitting over up to %zu plans, %.0f s budget\n",
          sw.n_n * sw.n_q * sw.n_p * (size_t)sw.shapes, sw.budget_s);
  if (fmmcl_model_fit_sweep(ctx, prec, &sw, mp, &smp, &n)) {
    fprintf(stderr, "fmmtune: fit: %s\n", fmmcl_last_error(ctx));
    return 0;
  }
  double *err = malloc((n ? n : 1) * sizeof *err);
  printf("%8s %8s %3s %12s %12s %8s\n", "N", "leaves", "p", "measured_s", "predicted_s", "error");
  for (size_t i = 0; err && i < n; i++) {
    double meas = 0;
    for (int ph = 0; ph < FMMCL_MODEL_COMBINE; ph++) meas += smp[i].seconds[ph]; /* the wall time */
    const double pred = fmmcl_model_predict(mp, prec == FMMCL_DOUBLE ? 8 : 4, smp[i].order, smp[i].work,
                                            smp[i].n_sources, smp[i].n_targets, NULL);
    err[i] = fabs(pred - meas) / meas;
    printf("%8zu %8.0f %3d %12.6f %12.6f %7.1f%%\n", smp[i].n_sources,
           smp[i].work[FMMCL_MODEL_NPHASES + FMMCL_MODEL_P2M], smp[i].order, meas, pred, 100 * err[i]);
  }
  if (err && n) {
    qsort(err, n, sizeof *err, cmp_double);
    printf("median prediction error of the total: %.1f%%\n", 100 * err[n / 2]);
  }
  free(err);
  int ok = 1;
  if (samples_csv) {
    FILE *f = fopen(samples_csv, "a");
    ok = f && fmmcl_model_samples_write(f, dev->device_name, prec, mp, smp, n) == FMMCL_SUCCESS;
    if (f && fclose(f)) ok = 0;
    if (!ok) fprintf(stderr, "fmmtune: cannot write %s\n", samples_csv);
  }
  free(smp);
  return ok;
}

int tune_model_main(fmmcl_context ctx, const fmmcl_device_info *dev, const char *precision, int fit,
                    double budget, const char *samples_csv) {
  char path[4200];
  if (fmmcl_model_file_path(dev, path, sizeof path)) {
    fprintf(stderr, "fmmtune: %s\n", fmmcl_last_error(NULL));
    return 3;
  }
  fmmcl_model m;
  fmmcl_status st = fmmcl_model_load(path, dev, &m);
  if (st == FMMCL_ERROR_CORRUPT_FILE || st == FMMCL_ERROR_UNSUPPORTED)
    fprintf(stderr, "fmmtune: %s; starting a new model\n", fmmcl_last_error(NULL));
  int rc = 0;
  for (int p = 0; p < 2; p++) {
    const fmmcl_precision prec = p ? FMMCL_DOUBLE : FMMCL_SINGLE;
    if (strcmp(precision, "both") && strcmp(precision, p ? "double" : "single")) continue;
    if (prec == FMMCL_DOUBLE && !dev->has_fp64) continue;
    fmmcl_model_precision *mp = &m.prec[p];
    if (fmmcl_model_measure(ctx, prec, &mp->pairs_per_s, &mp->bytes_per_s)) {
      fprintf(stderr, "fmmtune: %s\n", fmmcl_last_error(ctx));
      rc = 1;
      continue;
    }
    mp->measured = 1;
    printf("%s %s: U-list mix %.4g pairs/s, streaming %.4g GB/s\n", dev->device_name, p ? "double" : "single",
           mp->pairs_per_s, mp->bytes_per_s * 1e-9);
    if (fit && !fit_precision(ctx, dev, prec, budget, samples_csv, mp)) rc = 1;
  }
  if (fmmcl_model_store(path, dev, &m)) {
    fprintf(stderr, "fmmtune: %s\n", fmmcl_last_error(NULL));
    return 1;
  }
  printf("model: %s\n", path);
  return rc;
}
