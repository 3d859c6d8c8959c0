/* model_sweep.c — the fitting sweep: small 3D FMM plans over N, q and p on
 * one device, each timed as a model sample, then the least-squares fit. */
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Uniform points in the unit cube and charges in [-1, 1), from a fixed
 * seed, so a sweep sees the same inputs every time. */
static void fill_inputs(size_t n, double *x, double *q) {
  unsigned long long s = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < 3 * n + n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const double u = (double)(s >> 11) * (1.0 / 9007199254740992.0);
    if (i < 3 * n) x[i] = u;
    else q[i - 3 * n] = 2 * u - 1;
  }
}

fmmcl_status fmmcl_model_fit_sweep(fmmcl_context ctx, fmmcl_precision prec, const fmmcl_model_sweep *sw,
                                   fmmcl_model_precision *mp, fmmcl_model_sample **samples,
                                   size_t *count) {
  if (!ctx || !sw || !mp || !samples || !count)
    return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_model_fit_sweep: NULL argument");
  if (!mp->measured)
    return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "measure the peaks before the fit");
  *samples = NULL;
  *count = 0;
  size_t n_max = 0;
  for (size_t i = 0; i < sw->n_n; i++) n_max = sw->n[i] > n_max ? sw->n[i] : n_max;
  const size_t total = sw->n_n * sw->n_q * sw->n_p;
  if (!total || !n_max) return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "empty sweep");
  double *x = malloc(3 * n_max * sizeof *x), *q = malloc(n_max * sizeof *q);
  fmmcl_model_sample *out = calloc(total, sizeof *out);
  fmmcl_status st = x && q && out ? FMMCL_SUCCESS : fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  size_t k = 0;
  for (size_t a = 0; !st && a < sw->n_n; a++) {
    fill_inputs(sw->n[a], x, q);
    for (size_t b = 0; !st && b < sw->n_q; b++)
      for (size_t c = 0; !st && c < sw->n_p; c++) {
        fmmcl_plan_options o;
        fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
        o.method = FMMCL_FMM;
        o.precision = prec;
        o.leaf_size = sw->q[b];
        o.order = sw->p[c];
        fmmcl_plan plan;
        st = fmmcl_plan_create(ctx, &o, sw->n[a], x, 0, NULL, &plan);
        if (st) break;
        st = fmmcl_model_plan_sample(plan, q, sw->repeats, &out[k++]);
        fmmcl_plan_destroy(plan);
      }
  }
  free(x);
  free(q);
  if (st) {
    free(out);
    return st;
  }
  fmmcl_model_fit_samples(out, k, prec == FMMCL_DOUBLE ? 8 : 4, mp);
  *samples = out;
  *count = k;
  return FMMCL_SUCCESS;
}

/* The default sweep: problems of a few to tens of milliseconds on the
 * device class, so the fit takes about a minute at most; a CPU device's
 * sizes grow with its cores (2 cores: 4000 to 16000 points). */
void fmmcl_model_default_sweep(const fmmcl_device_info *dev, fmmcl_model_sweep *sw) {
  static const size_t gpu_n[] = {100000, 200000, 400000, 1000000}, cpu_n[] = {4000, 8000, 16000};
  static const int gpu_q[] = {64, 128, 256, 512}, cpu_q[] = {32, 64, 128};
  static const int gpu_p[] = {4, 6, 8}, cpu_p[] = {3, 5};
  memset(sw, 0, sizeof *sw);
  const int gpu = dev->is_gpu;
  sw->n_n = gpu ? 4 : 3;
  memcpy(sw->n, gpu ? gpu_n : cpu_n, sw->n_n * sizeof *sw->n);
  const size_t scale = gpu || dev->compute_units <= 2 ? 1 : dev->compute_units / 2;
  for (size_t i = 0; i < sw->n_n; i++) sw->n[i] *= scale;
  sw->n_q = gpu ? 4 : 3;
  memcpy(sw->q, gpu ? gpu_q : cpu_q, sw->n_q * sizeof *sw->q);
  sw->n_p = gpu ? 3 : 2;
  memcpy(sw->p, gpu ? gpu_p : cpu_p, sw->n_p * sizeof *sw->p);
  sw->repeats = 3;
}
