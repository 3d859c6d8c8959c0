/* model_sweep.c — the fitting sweep: 3D FMM plans over N, q, p and input
 * shape on one device, each timed as a model sample, then the least-squares
 * fit; stops at a time budget with the samples it has. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

void fmmcl_model_sweep_inputs(int shape, size_t n, double *x, double *q) {
  unsigned long long s = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < 3 * n + n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const double u = (double)(s >> 11) * (1.0 / 9007199254740992.0);
    if (i < 3 * n) x[i] = u;
    else q[i - 3 * n] = 2 * u - 1;
  }
  if (shape != 1) return;
  /* a solid ellipsoid of axes 1:1:4 from the same numbers: deep, adaptive
   * trees whose W and X lists are not empty, unlike the cube's */
  for (size_t i = 0; i < n; i++) {
    const double r = cbrt(x[3 * i]), z = 2 * x[3 * i + 1] - 1, phi = 6.283185307179586 * x[3 * i + 2];
    const double sn = sqrt(1 - z * z);
    x[3 * i] = r * sn * cos(phi), x[3 * i + 1] = r * sn * sin(phi), x[3 * i + 2] = 4 * r * z;
  }
}

static size_t gcd(size_t a, size_t b) {
  while (b) {
    const size_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

fmmcl_status fmmcl_model_fit_sweep(fmmcl_context ctx, fmmcl_precision prec, const fmmcl_model_sweep *sw,
                                   fmmcl_model_precision *mp, fmmcl_model_sample **samples, size_t *count) {
  if (!ctx || !sw || !mp || !samples || !count)
    return fmmcl_fail(ctx, FMMCL_ERROR_NULL_POINTER, "fmmcl_model_fit_sweep: NULL argument");
  if (!mp->measured) return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "measure the peaks before the fit");
  *samples = NULL;
  *count = 0;
  size_t n_max = 0;
  for (size_t i = 0; i < sw->n_n; i++) n_max = sw->n[i] > n_max ? sw->n[i] : n_max;
  const int shapes = sw->shapes == 2 ? 2 : 1;
  const size_t total = sw->n_n * sw->n_q * sw->n_p * (size_t)shapes;
  if (!total || !n_max) return fmmcl_fail(ctx, FMMCL_ERROR_INVALID_ARGUMENT, "empty sweep");
  double *x = malloc(3 * n_max * sizeof *x), *q = malloc(n_max * sizeof *q);
  fmmcl_model_sample *out = calloc(total, sizeof *out);
  fmmcl_status st =
      x && q && out ? FMMCL_SUCCESS : fmmcl_fail(ctx, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
  const double t0 = fmmcl_wall_seconds();
  size_t k = 0;
  /* the points in an order that spreads every prefix over the whole grid
   * (index i -> i * stride mod total, stride coprime to total), so that a sweep cut by the budget still spans N, q, p and the
   * shapes: a fit on small N alone extrapolates badly */
  size_t stride = (size_t)(0.618 * (double)total) | 1;
  while (gcd(stride, total) != 1) stride++;
  /* the budget counts measuring, not compiling: the first plan of each
   * order builds its kernels (tens of seconds on PoCL), so its creation is
   * left out; and a fit of NREG constants per phase gets at least 2 NREG
   * samples whatever the budget */
  double compiling = 0;
  int built[FMMCL_MODEL_SWEEP_MAX] = {0};
  for (size_t i = 0; !st && i < total; i++) {
    const size_t min_samples = 2 * FMMCL_MODEL_NREG;
    if (sw->budget_s > 0 && k >= min_samples && fmmcl_wall_seconds() - t0 - compiling > sw->budget_s) break;
    size_t j = i * stride % total;
    const size_t a = j % sw->n_n;
    j /= sw->n_n;
    const size_t b = j % sw->n_q;
    j /= sw->n_q;
    const size_t c = j % sw->n_p;
    const int sh = (int)(j / sw->n_p);
    fmmcl_model_sweep_inputs(sh, sw->n[a], x, q);
    fmmcl_plan_options o;
    fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
    o.method = FMMCL_FMM;
    o.precision = prec;
    o.leaf_size = sw->q[b];
    o.order = sw->p[c];
    fmmcl_plan plan;
    const double tc = fmmcl_wall_seconds();
    st = fmmcl_plan_create(ctx, &o, sw->n[a], x, 0, NULL, &plan);
    if (!built[c]) compiling += fmmcl_wall_seconds() - tc, built[c] = 1;
    if (st) break;
    st = fmmcl_model_plan_sample(plan, q, sw->repeats, &out[k++]);
    fmmcl_plan_destroy(plan);
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

/* The default sweep spans the sizes the model is used at (bench-model: 1e5
 * to 4e6 points; a fit on N <= 1.3e5 alone extrapolated badly), the leaf
 * sizes it chooses from and the orders of tolerances 1e-3 .. 1e-5, on the
 * cube and the ellipsoid. A CPU device's sizes grow with its cores (2 cores:
 * 5000 to 80000 points); budget_s keeps the whole fit short: 60 s on a GPU,
 * 180 s on a CPU device, where a third of that left too few plans for a
 * good fit (benchmarks/README.md, bench-model). */
void fmmcl_model_default_sweep(const fmmcl_device_info *dev, fmmcl_model_sweep *sw) {
  static const size_t gpu_n[] = {100000, 300000, 1000000}, cpu_n[] = {5000, 20000, 80000};
  static const int q[] = {32, 64, 128, 256, 512, 1024}, cpu_q[] = {32, 128, 512};
  static const int p[] = {5, 8, 10}; /* the orders of tol 1e-3, 1e-4, 1e-5 in single */
  memset(sw, 0, sizeof *sw);
  const int gpu = dev->is_gpu;
  sw->n_n = 3;
  memcpy(sw->n, gpu ? gpu_n : cpu_n, sw->n_n * sizeof *sw->n);
  const size_t scale = gpu || dev->compute_units <= 2 ? 1 : dev->compute_units / 2;
  for (size_t i = 0; i < sw->n_n; i++) sw->n[i] *= scale;
  sw->n_q = gpu ? 6 : 3;
  memcpy(sw->q, gpu ? q : cpu_q, sw->n_q * sizeof *sw->q);
  sw->n_p = 3;
  memcpy(sw->p, p, sw->n_p * sizeof *sw->p);
  sw->shapes = 2;
  sw->repeats = 3;
  sw->budget_s = gpu ? 60 : 180;
}
