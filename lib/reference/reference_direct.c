/* reference_direct.c — the plain-C (OpenMP) double-precision direct sums that
 * every device result is tested against. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "plan/registry.h"

/* Yukawa exp(-kappa rho) / rho, rho = sqrt(r^2 + eps^2), at one target,
 * kappa = 0 being Laplace 1/rho: the gradient w.r.t. the target is
 * q exp(-kappa rho) (1 + kappa rho) (s - t) / rho^3; a pair with rho = 0 is
 * skipped. */
static void screened3d_at(double kappa, const fmmcl_plan_options *opt, const double *t, size_t ns,
                          const double *src, const double *q, double *pot, double *grad) {
  const double eps2 = opt->softening * opt->softening;
  double p = 0, gx = 0, gy = 0, gz = 0;
  for (size_t j = 0; j < ns; j++) {
    double dx = src[3 * j] - t[0], dy = src[3 * j + 1] - t[1], dz = src[3 * j + 2] - t[2];
    double r2 = dx * dx + dy * dy + dz * dz + eps2;
    if (r2 == 0) continue;
    double r = sqrt(r2), e = kappa == 0 ? 1.0 : exp(-kappa * r);
    double qr = q[j] * e / r, qr3 = qr * (1 + kappa * r) / r2;
    p += qr;
    gx += qr3 * dx;
    gy += qr3 * dy;
    gz += qr3 * dz;
  }
  *pot = p;
  if (grad) {
    grad[0] = gx;
    grad[1] = gy;
    grad[2] = gz;
  }
}

/* Laplace 1/sqrt(r^2 + eps^2) at one target. */
void fmmcl_reference_laplace3d_at(const fmmcl_plan_options *opt, const double *t, size_t ns,
                                  const double *src, const double *q, double *pot, double *grad) {
  screened3d_at(0.0, opt, t, ns, src, q, pot, grad);
}

/* Yukawa with kappa = kernel_param at one target. */
void fmmcl_reference_yukawa3d_at(const fmmcl_plan_options *opt, const double *t, size_t ns, const double *src,
                                 const double *q, double *pot, double *grad) {
  screened3d_at(opt->kernel_param, opt, t, ns, src, q, pot, grad);
}

/* Laplace in the plane, -log sqrt(r^2 + eps^2), at one target: the gradient
 * w.r.t. the target is -(t - s) / (r^2 + eps^2); a pair with r^2 + eps^2 = 0
 * is skipped (a point never sees itself). */
void fmmcl_reference_laplace2d_at(const fmmcl_plan_options *opt, const double *t, size_t ns,
                                  const double *src, const double *q, double *pot, double *grad) {
  const double eps2 = opt->softening * opt->softening;
  double p = 0, gx = 0, gy = 0;
  for (size_t j = 0; j < ns; j++) {
    double dx = t[0] - src[2 * j], dy = t[1] - src[2 * j + 1];
    double r2 = dx * dx + dy * dy + eps2;
    if (r2 == 0) continue;
    double qr2 = q[j] / r2;
    p -= 0.5 * q[j] * log(r2);
    gx -= qr2 * dx;
    gy -= qr2 * dy;
  }
  *pot = p;
  if (grad) {
    grad[0] = gx;
    grad[1] = gy;
  }
}

/* Gaussian exp(-r^2 / (2 sigma^2)) in dim dimensions at one target. */
void fmmcl_reference_gaussian_at(const fmmcl_plan_options *opt, const double *t, size_t ns, const double *src,
                                 const double *q, double *pot, double *grad) {
  const int dim = opt->dim;
  const double sigma = opt->sigma;
  double p = 0, g[FMMCL_MAX_DIM] = {0};
  const double inv_2s2 = 1.0 / (2.0 * sigma * sigma), inv_s2 = 1.0 / (sigma * sigma);
  for (size_t j = 0; j < ns; j++) {
    double d[FMMCL_MAX_DIM], r2 = 0;
    for (int c = 0; c < dim; c++) {
      d[c] = src[j * dim + c] - t[c];
      r2 += d[c] * d[c];
    }
    double qe = q[j] * exp(-r2 * inv_2s2);
    p += qe;
    for (int c = 0; c < dim; c++) g[c] += qe * d[c];
  }
  *pot = p;
  if (grad)
    for (int c = 0; c < dim; c++) grad[c] = g[c] * inv_s2;
}

fmmcl_status fmmcl_reference_direct(const fmmcl_plan_options *opt, size_t n_sources, const double *sources,
                                    const double *charges, size_t n_targets, const double *targets,
                                    double *potential, double *gradient) {
  fmmcl_clear_error(NULL);
  if (!opt || !charges || !potential)
    return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_reference_direct: NULL argument");
  fmmcl_status st = fmmcl_options_check(NULL, opt);
  if (!st) st = fmmcl_points_check(NULL, "sources", n_sources, sources, opt->dim);
  if (!st && targets) st = fmmcl_points_check(NULL, "targets", n_targets, targets, opt->dim);
  if (st) return st;
  if (fmmcl_options_need_evaluate(opt))
    return fmmcl_fail(NULL, FMMCL_ERROR_UNSUPPORTED,
                      "fmmcl_reference_direct sums real charges only: use fmmcl_reference_evaluate");
  if (!fmmcl_all_finite(charges, n_sources))
    return fmmcl_fail(NULL, FMMCL_ERROR_NONFINITE_INPUT, "a charge is NaN or infinite");
  if (!targets) {
    targets = sources;
    n_targets = n_sources;
  }
  const size_t dim = (size_t)opt->dim;
  const fmmcl_reference_at sum_at = fmmcl_kernel_describe(opt->kernel)->reference; /* checked above */
#pragma omp parallel for schedule(dynamic, 16)
  for (size_t i = 0; i < n_targets; i++)
    sum_at(opt, targets + i * dim, n_sources, sources, charges, &potential[i],
           gradient ? gradient + i * dim : NULL);
  /* a reference is no reference if it overflowed (as the plans, checked) */
  const fmmcl_targets_data out = {.potential = potential, .gradient = gradient};
  return fmmcl_evaluate_outputs_check(NULL, "reference", FMMCL_DOUBLE, n_targets, opt->dim, &out);
}
