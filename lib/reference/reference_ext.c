/* reference_ext.c — the plain-C (OpenMP) double-precision sums of
 * fmmcl_plan_evaluate: Laplace dipoles and Hessians, Helmholtz, Stokes. */
#include <complex.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/internal.h"
#include "plan/registry.h"

/* Laplace 1/r at one target, r = x - y: charges q/r, dipoles d . r / r^3;
 * gradient and Hessian (xx, yy, zz, xy, xz, yz) w.r.t. the target. */
static void laplace_at(const double *t, size_t ns, const double *src, const fmmcl_sources_data *in,
                       double *pot, double *grad, double *hess) {
  static const int ha[6] = {0, 1, 2, 0, 0, 1}, hb[6] = {0, 1, 2, 1, 2, 2};
  double p = 0, g[3] = {0, 0, 0}, h[6] = {0, 0, 0, 0, 0, 0};
  for (size_t j = 0; j < ns; j++) {
    const double r[3] = {t[0] - src[3 * j], t[1] - src[3 * j + 1], t[2] - src[3 * j + 2]};
    const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    if (r2 == 0) continue;
    const double ri = 1 / sqrt(r2), ri2 = ri * ri, ri3 = ri * ri2, ri5 = ri3 * ri2, ri7 = ri5 * ri2;
    if (in->charges) {
      const double q = in->charges[j];
      p += q * ri;
      for (int a = 0; a < 3; a++) g[a] -= q * r[a] * ri3;
      for (int k = 0; k < 6; k++) h[k] += q * (3 * r[ha[k]] * r[hb[k]] * ri5 - (ha[k] == hb[k]) * ri3);
    }
    if (in->dipoles) {
      const double *d = in->dipoles + 3 * j, rd = d[0] * r[0] + d[1] * r[1] + d[2] * r[2];
      p += rd * ri3;
      for (int a = 0; a < 3; a++) g[a] += d[a] * ri3 - 3 * rd * r[a] * ri5;
      for (int k = 0; k < 6; k++) {
        const int a = ha[k], b = hb[k];
        h[k] += -3 * (d[a] * r[b] + d[b] * r[a] + (a == b) * rd) * ri5 + 15 * rd * r[a] * r[b] * ri7;
      }
    }
  }
  if (pot) *pot = p;
  for (int a = 0; a < 3 && grad; a++) grad[a] = g[a];
  for (int k = 0; k < 6 && hess; k++) hess[k] = h[k];
}

/* Helmholtz G = exp(ikr)/r: grad_x G = A r with A = e (ikr - 1) / r^3,
 * and the Hessian A I + B r r^T with B = e (3 - 3ikr - k^2 r^2) / r^5;
 * a dipole d gives -d . grad_x G and its gradient -(A d + B r (d . r)). */
static void helmholtz_at(double complex k, const double *t, size_t ns, const double *src,
                         const fmmcl_sources_data *in, double *pot, double *grad) {
  double complex p = 0, g[3] = {0, 0, 0};
  for (size_t j = 0; j < ns; j++) {
    const double r[3] = {t[0] - src[3 * j], t[1] - src[3 * j + 1], t[2] - src[3 * j + 2]};
    const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    if (r2 == 0) continue;
    const double rr = sqrt(r2);
    const double complex ikr = I * k * rr, e = cexp(ikr);
    const double complex A = e * (ikr - 1) / (r2 * rr);
    if (in->complex_charges) {
      const double complex q = in->complex_charges[2 * j] + I * in->complex_charges[2 * j + 1];
      p += q * e / rr;
      for (int a = 0; a < 3; a++) g[a] += q * A * r[a];
    }
    if (in->complex_dipoles) {
      const double *dv = in->complex_dipoles + 6 * j;
      const double complex d[3] = {dv[0] + I * dv[1], dv[2] + I * dv[3], dv[4] + I * dv[5]};
      const double complex dr = d[0] * r[0] + d[1] * r[1] + d[2] * r[2];
      const double complex B = e * (3 - 3 * ikr + ikr * ikr) / (r2 * r2 * rr);
      p -= A * dr;
      for (int a = 0; a < 3; a++) g[a] -= A * d[a] + B * r[a] * dr;
    }
  }
  if (pot) pot[0] = creal(p), pot[1] = cimag(p);
  for (int a = 0; a < 3 && grad; a++) grad[2 * a] = creal(g[a]), grad[2 * a + 1] = cimag(g[a]);
}

/* Stokeslet f/r + r (r . f)/r^3 with pressure 2 r . f / r^3; stresslet
 * -6 r (r . s)(r . n)/r^5 with pressure 4 (s . n)/r^3 - 12 (r . s)(r . n)/r^5
 * (the pressures satisfy grad p = laplacian u away from the sources). */
static void stokes_at(const double *t, size_t ns, const double *src, const fmmcl_sources_data *in,
                      double *vel, double *pres) {
  double u[3] = {0, 0, 0}, p = 0;
  for (size_t j = 0; j < ns; j++) {
    const double r[3] = {t[0] - src[3 * j], t[1] - src[3 * j + 1], t[2] - src[3 * j + 2]};
    const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    if (r2 == 0) continue;
    const double ri = 1 / sqrt(r2), ri3 = ri / r2, ri5 = ri3 / r2;
    if (in->forces) {
      const double *f = in->forces + 3 * j, rf = r[0] * f[0] + r[1] * f[1] + r[2] * f[2];
      for (int a = 0; a < 3; a++) u[a] += f[a] * ri + r[a] * rf * ri3;
      p += 2 * rf * ri3;
    }
    if (in->stresslet_strengths) {
      const double *s = in->stresslet_strengths + 3 * j, *n = in->stresslet_orientations + 3 * j;
      const double rs = r[0] * s[0] + r[1] * s[1] + r[2] * s[2], rn = r[0] * n[0] + r[1] * n[1] + r[2] * n[2];
      const double sn = s[0] * n[0] + s[1] * n[1] + s[2] * n[2];
      for (int a = 0; a < 3; a++) u[a] -= 6 * r[a] * rs * rn * ri5;
      p += 4 * sn * ri3 - 12 * rs * rn * ri5;
    }
  }
  for (int a = 0; a < 3 && vel; a++) vel[a] = u[a];
  if (pres) *pres = p;
}

/* The address of target i's values in an output array of per values each. */
static double *at(double *v, size_t i, size_t per) { return v ? v + i * per : NULL; }

void fmmcl_reference_ext_at(const fmmcl_plan_options *opt, const double *t, size_t ns, const double *src,
                            const fmmcl_sources_data *in, size_t i, const fmmcl_targets_data *out) {
  switch (opt->kernel) {
    case FMMCL_HELMHOLTZ_3D:
      helmholtz_at(opt->wavenumber_re + I * opt->wavenumber_im, t, ns, src, in,
                   at(out->complex_potential, i, 2), at(out->complex_gradient, i, 6));
      break;
    case FMMCL_STOKES_3D: stokes_at(t, ns, src, in, at(out->velocity, i, 3), at(out->pressure, i, 1)); break;
    default:
      laplace_at(t, ns, src, in, at(out->potential, i, 1), at(out->gradient, i, 3), at(out->hessian, i, 6));
  }
}

fmmcl_status fmmcl_reference_evaluate(const fmmcl_plan_options *opt, size_t n_sources, const double *sources,
                                      const fmmcl_sources_data *in, size_t n_targets, const double *targets,
                                      fmmcl_targets_data *out) {
  fmmcl_clear_error(NULL);
  if (!opt) return fmmcl_fail(NULL, FMMCL_ERROR_NULL_POINTER, "fmmcl_reference_evaluate: NULL argument");
  fmmcl_status st = fmmcl_options_check(NULL, opt);
  if (!st) st = fmmcl_points_check(NULL, "sources", n_sources, sources, opt->dim);
  if (!st && targets) st = fmmcl_points_check(NULL, "targets", n_targets, targets, opt->dim);
  if (!st) st = fmmcl_evaluate_check(NULL, opt, n_sources, in, out);
  if (st) return st;
  if (!targets) {
    targets = sources;
    n_targets = n_sources;
  }
  if (!fmmcl_options_need_evaluate(opt)) { /* the kernels of fmmcl_reference_direct */
    double *pot = out->potential ? out->potential : malloc(n_targets * sizeof *pot);
    if (!pot) return fmmcl_fail(NULL, FMMCL_ERROR_OUT_OF_MEMORY, "out of host memory");
    st = fmmcl_reference_direct(opt, n_sources, sources, in->charges, n_targets, targets, pot, out->gradient);
    if (pot != out->potential) free(pot);
    return st;
  }
#pragma omp parallel for schedule(dynamic, 16)
  for (size_t i = 0; i < n_targets; i++)
    fmmcl_reference_ext_at(opt, targets + 3 * i, n_sources, sources, in, i, out);
  /* a reference is no reference if it overflowed (as the plans, checked) */
  return fmmcl_evaluate_outputs_check(NULL, "reference", FMMCL_DOUBLE, n_targets, opt->dim, out);
}
