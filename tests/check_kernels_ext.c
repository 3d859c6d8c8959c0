/* check_kernels_ext.c — fmmcl_plan_evaluate's kernels (Laplace dipoles and
 * Hessians, Helmholtz, Stokes) on the device against the plain-C double
 * reference over all targets, the reference against finite differences
 * and the Yukawa kernel, and the status of every kind of bad input. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmmcl.h"
#include "testing/distributions.h"
#include "test_util.h"

/* Errors are max over targets of |device - reference| (the Euclidean norm
 * of the target's values of one output) over the largest reference norm.
 * The device sees each coordinate rounded to its precision (unit u) after
 * the shift to the box's centre, an error of u |x| <= u h (h the box's
 * half-side) that is no error of the kernel: a term of 1/r^p then moves by
 * p u h / r relative, most at the closest pair, whose term is at most the
 * largest value of the field. So the bound is 4 p u h / r_min (a margin
 * of four) plus the arithmetic's own rounding, a few u per pair over ~1e3
 * pairs of the largest terms: 1e3 u. */
static double tolerance(fmmcl_precision prec, int p, double h, double r_min) {
  const double u = prec == FMMCL_DOUBLE ? 1.1e-16 : 6e-8;
  return 4 * p * u * h / r_min + 1e3 * u;
}

#define N_POINTS 700
#define SENTINEL 12345.0

static fmmcl_context ctx;

static double *doubles(size_t n, unsigned seed) {
  double *p = malloc(n * sizeof *p);
  ck_assert_ptr_nonnull(p);
  fmmcl_test_random_values(seed, n, -1, 1, p);
  return p;
}

/* max_i |a_i - b_i| / max_i |b_i|, with per values to a target. */
static double max_rel(const double *a, const double *b, size_t n, size_t per) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < n; i++) {
    double e = 0, r = 0;
    for (size_t c = 0; c < per; c++) {
      e += (a[i * per + c] - b[i * per + c]) * (a[i * per + c] - b[i * per + c]);
      r += b[i * per + c] * b[i * per + c];
    }
    err = fmax(err, sqrt(e));
    ref = fmax(ref, sqrt(r));
  }
  return ref > 0 ? err / ref : err;
}

/* ---- one configuration of each kernel --------------------------------------- */

typedef struct {
  const char *name;
  fmmcl_kernel kernel;
  int dipoles, hessian, gradient, stresslets, pressure;
  double k_re, k_im;
  int no_charges; /* only dipoles (or stresslets) */
} config;

static const config configs[] = {
    {"laplace charges+dipoles, gradient+hessian", FMMCL_LAPLACE_3D, 1, 1, 1, 0, 0, 0, 0, 0},
    {"laplace dipoles only, hessian only", FMMCL_LAPLACE_3D, 1, 1, 0, 0, 0, 0, 0, 1},
    {"laplace charges, hessian", FMMCL_LAPLACE_3D, 0, 1, 1, 0, 0, 0, 0, 0},
    {"helmholtz real k", FMMCL_HELMHOLTZ_3D, 1, 0, 1, 0, 0, 6.0, 0, 0},
    {"helmholtz complex k", FMMCL_HELMHOLTZ_3D, 1, 0, 1, 0, 0, 2.0, 1.5, 0},
    {"helmholtz imaginary k, charges", FMMCL_HELMHOLTZ_3D, 0, 0, 1, 0, 0, 0, 4.0, 0},
    {"helmholtz dipoles only", FMMCL_HELMHOLTZ_3D, 1, 0, 0, 0, 0, 1.0, 0.25, 1},
    {"stokes forces+stresslets, pressure", FMMCL_STOKES_3D, 0, 0, 0, 1, 1, 0, 0, 0},
    {"stokes forces", FMMCL_STOKES_3D, 0, 0, 0, 0, 0, 0, 0, 0},
    {"stokes stresslets only, pressure", FMMCL_STOKES_3D, 0, 0, 0, 1, 1, 0, 0, 1},
};
#define N_CONFIGS (sizeof configs / sizeof configs[0])

static void options_of(const config *c, fmmcl_precision prec, fmmcl_plan_options *o) {
  ck_assert_int_eq(fmmcl_plan_options_init(o, c->kernel), FMMCL_SUCCESS);
  o->precision = prec;
  o->gradient = c->gradient;
  o->dipoles = c->dipoles;
  o->hessian = c->hessian;
  o->stresslets = c->stresslets;
  o->pressure = c->pressure;
  o->wavenumber_re = c->k_re;
  o->wavenumber_im = c->k_im;
}

/* Source arrays of c for n sources (NULL where c has none), malloc'ed. */
static void sources_of(const config *c, size_t n, fmmcl_sources_data *in) {
  memset(in, 0, sizeof *in);
  switch (c->kernel) {
    case FMMCL_LAPLACE_3D:
      if (!c->no_charges) in->charges = doubles(n, 11);
      if (c->dipoles) in->dipoles = doubles(3 * n, 12);
      break;
    case FMMCL_HELMHOLTZ_3D:
      if (!c->no_charges) in->complex_charges = doubles(2 * n, 13);
      if (c->dipoles) in->complex_dipoles = doubles(6 * n, 14);
      break;
    default:
      if (!c->no_charges) in->forces = doubles(3 * n, 15);
      if (c->stresslets) {
        in->stresslet_strengths = doubles(3 * n, 16);
        in->stresslet_orientations = doubles(3 * n, 17);
      }
  }
}

static void sources_free(fmmcl_sources_data *in) {
  free((void *)in->charges);
  free((void *)in->dipoles);
  free((void *)in->complex_charges);
  free((void *)in->complex_dipoles);
  free((void *)in->forces);
  free((void *)in->stresslet_strengths);
  free((void *)in->stresslet_orientations);
}

/* Output arrays of c for m targets, and how many values each holds per target. */
typedef struct {
  double *v[7];
  size_t per[7];
} outputs;

static void outputs_of(const config *c, size_t m, fmmcl_targets_data *out, outputs *keep) {
  memset(out, 0, sizeof *out);
  memset(keep, 0, sizeof *keep);
  double **slot[7] = {&out->potential,        &out->gradient, &out->hessian, &out->complex_potential,
                      &out->complex_gradient, &out->velocity, &out->pressure};
  const size_t per[7] = {1, 3, 6, 2, 6, 3, 1};
  const int lap = c->kernel == FMMCL_LAPLACE_3D, helm = c->kernel == FMMCL_HELMHOLTZ_3D, st = !lap && !helm;
  const int want[7] = {lap, lap && c->gradient, lap && c->hessian, helm, helm && c->gradient,
                       st,  st && c->pressure};
  for (int k = 0; k < 7; k++)
    if (want[k]) {
      keep->v[k] = *slot[k] = malloc(m * per[k] * sizeof(double));
      ck_assert_ptr_nonnull(keep->v[k]);
      for (size_t i = 0; i < m * per[k]; i++) keep->v[k][i] = SENTINEL;
      keep->per[k] = per[k];
    }
}

static void outputs_free(outputs *o) {
  for (int k = 0; k < 7; k++) free(o->v[k]);
}

/* ---- device against the reference ------------------------------------------ */

static const fmmcl_distribution dists[] = {FMMCL_DIST_UNIFORM, FMMCL_DIST_CLUSTERS, FMMCL_DIST_SURFACE};
#define N_DISTS (sizeof dists / sizeof dists[0])

/* _i: config x precision x distribution; targets are the sources but for
 * the surface, where they are a separate uniform set. */
START_TEST(test_vs_reference) {
  const config *c = &configs[_i / (2 * N_DISTS)];
  const fmmcl_precision prec = (_i / N_DISTS) % 2 ? FMMCL_DOUBLE : FMMCL_SINGLE;
  const fmmcl_distribution d = dists[_i % N_DISTS];
  const size_t n = N_POINTS, m = d == FMMCL_DIST_SURFACE ? N_POINTS / 2 : n;
  double *src = malloc(3 * n * sizeof *src), *tgt = NULL;
  ck_assert_int_eq(fmmcl_distribution_points(d, 3, 7u + (unsigned)_i, n, 0.0, src), 0);
  if (d == FMMCL_DIST_SURFACE) {
    tgt = malloc(3 * m * sizeof *tgt);
    ck_assert_int_eq(fmmcl_distribution_points(FMMCL_DIST_UNIFORM, 3, 99, m, -0.5, tgt), 0);
  }
  fmmcl_plan_options o;
  options_of(c, prec, &o);
  fmmcl_sources_data in;
  sources_of(c, n, &in);
  fmmcl_targets_data dev, ref;
  outputs dk, rk;
  outputs_of(c, m, &dev, &dk);
  outputs_of(c, m, &ref, &rk);
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, src, m, tgt, &plan) == FMMCL_SUCCESS, "%s: %s", c->name,
                fmmcl_last_error(ctx));
  ck_assert_msg(fmmcl_plan_evaluate(plan, &in, &dev) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
  ck_assert_msg(fmmcl_reference_evaluate(&o, n, src, &in, m, tgt, &ref) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(NULL));
  /* the power of 1/r in each output's terms: one more per derivative, one
   * more for a dipole (stresslet) than for a charge (Stokeslet) */
  const int extra = c->dipoles || c->stresslets;
  const int power[7] = {1 + extra, 2 + extra, 3 + extra, 1 + extra, 2 + extra, 1 + extra, 2 + extra};
  size_t closest;
  double r_min = 0, h = 0;
  size_t found = 0;
  ck_assert_int_eq(fmmcl_closest_targets(3, n, src, m, tgt, 1, &closest, &r_min, &found), FMMCL_SUCCESS);
  ck_assert_uint_eq(found, 1);
  for (int a = 0; a < 3; a++) {
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) lo = fmin(lo, src[3 * i + a]), hi = fmax(hi, src[3 * i + a]);
    for (size_t i = 0; tgt && i < m; i++) lo = fmin(lo, tgt[3 * i + a]), hi = fmax(hi, tgt[3 * i + a]);
    h = fmax(h, 0.5 * (hi - lo));
  }
  int outputs_seen = 0;
  for (int k = 0; k < 7; k++) {
    if (!dk.v[k]) continue;
    outputs_seen++;
    const double e = max_rel(dk.v[k], rk.v[k], m, dk.per[k]), tol = tolerance(prec, power[k], h, r_min);
    if (getenv("FMMCL_TEST_VERBOSE"))
      printf("%s %d %d: %d %.3g (tol %.3g)\n", c->name, (int)prec, (int)d, k, e, tol);
    ck_assert_msg(e <= tol, "%s, %s, %s: output %d error %.3g > %.3g", c->name,
                  prec == FMMCL_DOUBLE ? "double" : "single", fmmcl_distribution_name(d), k, e, tol);
  }
  ck_assert_int_gt(outputs_seen, 0);
  fmmcl_plan_destroy(plan);
  outputs_free(&dk);
  outputs_free(&rk);
  sources_free(&in);
  free(src);
  free(tgt);
}
END_TEST

/* k = i kappa is the Yukawa kernel exp(-kappa r)/r: real charges give the
 * YUKAWA_3D potential and gradient, and an imaginary part of exactly 0
 * (sin 0 = 0), on the device and in the reference. */
START_TEST(test_imaginary_k_is_yukawa) {
  const fmmcl_precision prec = _i ? FMMCL_DOUBLE : FMMCL_SINGLE;
  const size_t n = 500;
  const double kappa = 3.0;
  double *x = malloc(3 * n * sizeof *x), *q = doubles(n, 5), *cq = calloc(2 * n, sizeof *cq);
  fmmcl_test_grid_points(3, n, 3, x);
  for (size_t i = 0; i < n; i++) cq[2 * i] = q[i];
  double *yp = malloc(n * sizeof *yp), *yg = malloc(3 * n * sizeof *yg);
  double *hp = malloc(2 * n * sizeof *hp), *hg = malloc(6 * n * sizeof *hg);
  double *rp = malloc(2 * n * sizeof *rp), *rg = malloc(6 * n * sizeof *rg);
  double *yrp = malloc(n * sizeof *yrp), *yrg = malloc(3 * n * sizeof *yrg);
  fmmcl_plan_options y, h;
  fmmcl_plan_options_init(&y, FMMCL_YUKAWA_3D);
  y.kernel_param = kappa;
  y.precision = prec;
  fmmcl_plan_options_init(&h, FMMCL_HELMHOLTZ_3D);
  h.wavenumber_im = kappa;
  h.precision = prec;
  fmmcl_plan py, ph;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &y, n, x, 0, NULL, &py), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &h, n, x, 0, NULL, &ph), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(py, q, yp, yg), FMMCL_SUCCESS);
  fmmcl_sources_data in = {.complex_charges = cq};
  fmmcl_targets_data out = {.complex_potential = hp, .complex_gradient = hg};
  ck_assert_msg(fmmcl_plan_evaluate(ph, &in, &out) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
  fmmcl_targets_data rout = {.complex_potential = rp, .complex_gradient = rg};
  ck_assert_int_eq(fmmcl_reference_evaluate(&h, n, x, &in, 0, NULL, &rout), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_reference_direct(&y, n, x, q, 0, NULL, yrp, yrg), FMMCL_SUCCESS);
  double ep = 0, eg = 0, mp = 0, mg = 0, rep = 0, reg = 0;
  for (size_t i = 0; i < n; i++) {
    ck_assert(hp[2 * i + 1] == 0 && rp[2 * i + 1] == 0);
    ep = fmax(ep, fabs(hp[2 * i] - yp[i]));
    mp = fmax(mp, fabs(yp[i]));
    rep = fmax(rep, fabs(rp[2 * i] - yrp[i]) / fabs(yrp[i]));
    for (int c = 0; c < 3; c++) {
      ck_assert(hg[6 * i + 2 * c + 1] == 0 && rg[6 * i + 2 * c + 1] == 0);
      eg = fmax(eg, fabs(hg[6 * i + 2 * c] - yg[3 * i + c]));
      mg = fmax(mg, fabs(yg[3 * i + c]));
      reg = fmax(reg, fabs(rg[6 * i + 2 * c] - yrg[3 * i + c]));
    }
  }
  /* the two device kernels round differently; the references agree to the last digits */
  const double tol = prec == FMMCL_DOUBLE ? 1e-12 : 1e-5;
  ck_assert_msg(ep <= tol * mp && eg <= tol * mg, "potential %.3g gradient %.3g", ep / mp, eg / mg);
  ck_assert_msg(rep <= 1e-13, "reference potentials differ by %.3g", rep);
  ck_assert_msg(reg <= 1e-13 * mg, "reference gradients differ by %.3g", reg);
  fmmcl_plan_destroy(py);
  fmmcl_plan_destroy(ph);
  free(x), free(q), free(cq), free(yp), free(yg), free(hp), free(hg), free(rp), free(rg), free(yrp),
      free(yrg);
}
END_TEST

/* The Stokeslet velocity and pressure by the Stokes FMM (near field by the
 * Stokes pair, far field by four Laplace FMMs) against the reference over
 * all targets, sets moved off the origin by 5 (the method centres them;
 * the surface's targets apart from its sources):
 * double at tol 1e-6 and 1e-8, float at 1e-4, each within tol of the
 * largest value plus 30 times the plan's rounding estimate est (what
 * rounding the coordinates in the near field's leaf frames costs its
 * closest pair; the far field's cancellation of x_k d_i phi_k against
 * d_i psi loses only u |x| / R, R at least a leaf's width). */
static const struct {
  fmmcl_precision prec;
  double tol;
} stokes_runs[] = {{FMMCL_DOUBLE, 1e-6}, {FMMCL_DOUBLE, 1e-8}, {FMMCL_SINGLE, 1e-4}};
#define N_STOKES_RUNS (sizeof stokes_runs / sizeof stokes_runs[0])

START_TEST(test_stokes_fmm) {
  const fmmcl_precision prec = stokes_runs[_i / N_DISTS].prec;
  const fmmcl_distribution d = dists[_i % N_DISTS];
  /* the surface's targets are a separate uniform set in its box */
  const size_t n = 3000, m = d == FMMCL_DIST_SURFACE ? n / 2 : n;
  const double tol = stokes_runs[_i / N_DISTS].tol;
  double *x = malloc(3 * n * sizeof *x), *f = doubles(3 * n, 31), *t = NULL;
  ck_assert_int_eq(fmmcl_distribution_points(d, 3, 41, n, 5.0, x), 0);
  if (d == FMMCL_DIST_SURFACE) {
    t = malloc(3 * m * sizeof *t);
    ck_assert_int_eq(fmmcl_distribution_points(FMMCL_DIST_UNIFORM, 3, 43, m, 5.0, t), 0);
  }
  double *u = malloc(3 * m * sizeof *u), *p = malloc(m * sizeof *p);
  double *ru = malloc(3 * m * sizeof *ru), *rp = malloc(m * sizeof *rp);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_STOKES_3D);
  o.method = FMMCL_FMM;
  o.precision = prec;
  o.tolerance = tol;
  o.pressure = 1;
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, t ? m : 0, t, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  fmmcl_sources_data in = {.forces = f};
  fmmcl_targets_data out = {.velocity = u, .pressure = p}, ref = {.velocity = ru, .pressure = rp};
  ck_assert_msg(fmmcl_plan_evaluate(plan, &in, &out) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_reference_evaluate(&o, n, x, &in, t ? m : 0, t, &ref), FMMCL_SUCCESS);
  const double eu = max_rel(u, ru, m, 3), ep = max_rel(p, rp, m, 1);
  double est, dist;
  ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, t, &est, &dist), FMMCL_SUCCESS);
  if (getenv("FMMCL_TEST_VERBOSE"))
    printf("stokes fmm %d %d tol %g: %.3g %.3g est %.3g dist %.3g\n", (int)prec, (int)d, tol, eu, ep, est, dist);
  const double bound = tol + 30 * est;
  ck_assert_msg(eu <= bound && ep <= bound, "%s %s: velocity %.3g pressure %.3g > %g",
                fmmcl_distribution_name(d), prec == FMMCL_DOUBLE ? "double" : "single", eu, ep, bound);
  fmmcl_plan_info info;
  ck_assert_int_eq(fmmcl_plan_describe(plan, &info), FMMCL_SUCCESS);
  ck_assert_int_gt(info.order, 0);
  fmmcl_plan_destroy(plan);
  /* stresslets by FMM: check_fmm_ext.c */
  free(x), free(f), free(t), free(u), free(p), free(ru), free(rp);
}
END_TEST

/* ---- the reference against the mathematics (no device) ----------------------- */

/* One source at the origin, the target at x: the reference's value there. */
static void ref_one(const fmmcl_plan_options *o, const fmmcl_sources_data *in, const double *x,
                    fmmcl_targets_data *out) {
  const double src[3] = {0, 0, 0};
  ck_assert_int_eq(fmmcl_reference_evaluate(o, 1, src, in, 1, x, out), FMMCL_SUCCESS);
}

/* Central differences of step 1e-5 at |x| ~ 1: error ~1e-10 + rounding 1e-11. */
#define FD_H 1e-5
#define FD_TOL 1e-7

/* Laplace: gradient = d potential, Hessian = d gradient, for a charge and a dipole. */
START_TEST(test_reference_laplace_derivatives) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.dipoles = o.hessian = 1;
  const double q = 0.7, d[3] = {0.3, -0.5, 0.8}, x[3] = {0.6, -0.4, 0.9};
  fmmcl_sources_data in = {.charges = &q, .dipoles = d};
  double p, g[3], h[6];
  fmmcl_targets_data out = {.potential = &p, .gradient = g, .hessian = h};
  ref_one(&o, &in, x, &out);
  static const int ha[6] = {0, 1, 2, 0, 0, 1}, hb[6] = {0, 1, 2, 1, 2, 2};
  for (int a = 0; a < 3; a++) {
    double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]}, pp, pm, gp[3], gm[3];
    xp[a] += FD_H, xm[a] -= FD_H;
    fmmcl_targets_data op = {.potential = &pp, .gradient = gp}, om = {.potential = &pm, .gradient = gm};
    ref_one(&o, &in, xp, &op);
    ref_one(&o, &in, xm, &om);
    ck_assert_double_eq_tol(g[a], (pp - pm) / (2 * FD_H), FD_TOL);
    for (int k = 0; k < 6; k++)
      if (hb[k] == a) ck_assert_double_eq_tol(h[k], (gp[ha[k]] - gm[ha[k]]) / (2 * FD_H), FD_TOL);
  }
  /* the potential is harmonic: the Hessian's trace is 0 */
  ck_assert_double_eq_tol(h[0] + h[1] + h[2], 0, 1e-12);
}
END_TEST

/* Helmholtz: the gradient is d potential (real and imaginary parts), and
 * the potential solves laplacian u + k^2 u = 0. */
START_TEST(test_reference_helmholtz_derivatives) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
  o.dipoles = 1;
  o.wavenumber_re = 2.5, o.wavenumber_im = 0.7;
  const double q[2] = {0.7, -0.2}, d[6] = {0.3, 0.1, -0.5, 0.4, 0.8, -0.6}, x[3] = {0.6, -0.4, 0.9};
  fmmcl_sources_data in = {.complex_charges = q, .complex_dipoles = d};
  double p[2], g[6], lap[2] = {0, 0};
  fmmcl_targets_data out = {.complex_potential = p, .complex_gradient = g};
  ref_one(&o, &in, x, &out);
  for (int a = 0; a < 3; a++) {
    double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]}, pp[2], pm[2];
    xp[a] += FD_H, xm[a] -= FD_H;
    fmmcl_targets_data op = {.complex_potential = pp}, om = {.complex_potential = pm};
    ref_one(&o, &in, xp, &op);
    ref_one(&o, &in, xm, &om);
    for (int c = 0; c < 2; c++) {
      ck_assert_double_eq_tol(g[2 * a + c], (pp[c] - pm[c]) / (2 * FD_H), FD_TOL);
      lap[c] += (pp[c] - 2 * p[c] + pm[c]) / (FD_H * FD_H);
    }
  }
  /* k^2 u with k = kr + i ki: (kr^2 - ki^2) + 2 i kr ki */
  const double k2r = 2.5 * 2.5 - 0.7 * 0.7, k2i = 2 * 2.5 * 0.7;
  ck_assert_double_eq_tol(lap[0] + k2r * p[0] - k2i * p[1], 0, 1e-4);
  ck_assert_double_eq_tol(lap[1] + k2r * p[1] + k2i * p[0], 0, 1e-4);
}
END_TEST

/* Stokes: the velocity is divergence free and laplacian u = grad p (unit
 * viscosity) away from the sources, for a Stokeslet and a stresslet. */
START_TEST(test_reference_stokes_equations) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_STOKES_3D);
  o.stresslets = o.pressure = 1;
  const double f[3] = {0.5, 0.1, -0.8}, s[3] = {0.3, -0.7, 0.5}, nv[3] = {0.2, 0.9, -0.4},
               x[3] = {0.7, 0.4, -0.3};
  fmmcl_sources_data in = {.forces = f, .stresslet_strengths = s, .stresslet_orientations = nv};
  double u[3], p, lap[3] = {0, 0, 0}, gp[3], div = 0;
  fmmcl_targets_data out = {.velocity = u, .pressure = &p};
  ref_one(&o, &in, x, &out);
  const double h = 1e-4;
  for (int a = 0; a < 3; a++) {
    double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]}, up[3], um[3], pp, pm;
    xp[a] += h, xm[a] -= h;
    fmmcl_targets_data op = {.velocity = up, .pressure = &pp}, om = {.velocity = um, .pressure = &pm};
    ref_one(&o, &in, xp, &op);
    ref_one(&o, &in, xm, &om);
    for (int c = 0; c < 3; c++) lap[c] += (up[c] - 2 * u[c] + um[c]) / (h * h);
    gp[a] = (pp - pm) / (2 * h);
    div += (up[a] - um[a]) / (2 * h);
  }
  ck_assert_double_eq_tol(div, 0, 1e-6);
  for (int c = 0; c < 3; c++) ck_assert_double_eq_tol(lap[c], gp[c], 1e-4 * (1 + fabs(gp[c])));
}
END_TEST

/* ---- plans and bad input ----------------------------------------------------- */

/* A LAPLACE_3D dipole plan's fmmcl_plan_execute is its evaluation with
 * charges alone; a plain plan evaluates through fmmcl_plan_evaluate. */
START_TEST(test_execute_and_evaluate_agree) {
  const size_t n = 300;
  double *x = malloc(3 * n * sizeof *x), *q = doubles(n, 2);
  fmmcl_test_grid_points(4, n, 3, x);
  double p1[300], p2[300], g1[900], g2[900];
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.precision = FMMCL_DOUBLE;
  o.dipoles = 1;
  fmmcl_plan plan;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, p1, g1), FMMCL_SUCCESS);
  fmmcl_sources_data in = {.charges = q};
  fmmcl_targets_data out = {.potential = p2, .gradient = g2};
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &in, &out), FMMCL_SUCCESS);
  ck_assert_mem_eq(p1, p2, sizeof p1);
  ck_assert_mem_eq(g1, g2, sizeof g1);
  fmmcl_plan_destroy(plan);
  o.dipoles = 0; /* the plain direct method, through evaluate */
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &in, &out), FMMCL_SUCCESS);
  ck_assert_double_lt(max_rel(p2, p1, n, 1), 1e-12);
  ck_assert_double_lt(max_rel(g2, g1, n, 3), 1e-12);
  fmmcl_plan_destroy(plan);
  free(x), free(q);
}
END_TEST

static fmmcl_status create_status(const fmmcl_plan_options *o) {
  const double x[6] = {0, 0, 0, 1, 0.5, 0.25};
  fmmcl_plan plan = NULL;
  fmmcl_status st = fmmcl_plan_create(ctx, o, 2, x, 0, NULL, &plan);
  fmmcl_plan_destroy(plan);
  return st;
}

/* Options a kernel does not read, and methods that cannot sum them yet. */
START_TEST(test_bad_options) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
  o.wavenumber_im = -0.5; /* a growing wave */
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(fmmcl_last_error(ctx), "imaginary part"));
  o.wavenumber_im = NAN;
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_INVALID_ARGUMENT);
  o.wavenumber_im = 0;
  o.wavenumber_re = INFINITY;
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
  o.hessian = 1;
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(fmmcl_last_error(ctx), "Hessian"));
  fmmcl_plan_options_init(&o, FMMCL_STOKES_3D);
  ck_assert_int_eq(o.gradient, 0);
  o.gradient = 1;
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_plan_options_init(&o, FMMCL_STOKES_3D);
  o.dipoles = 1;
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_plan_options_init(&o, FMMCL_YUKAWA_3D);
  o.hessian = 1;
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.pressure = 1;
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.wavenumber_re = 1;
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.dipoles = 1;
  o.softening = 0.1;
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_INVALID_ARGUMENT);
  /* the 3D FMM and treecode sum dipoles and Hessians (check_fmm_ext.c);
   * the bbFMM does not yet, and says so */
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.dipoles = 1;
  o.method = FMMCL_BBFMM;
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(fmmcl_last_error(ctx), "dipoles"));
  o.dipoles = 0, o.hessian = 1;
  ck_assert_int_eq(create_status(&o), FMMCL_ERROR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(fmmcl_last_error(ctx), "Hessian"));
  o.dipoles = 1;
  for (int m = 0; m < 2; m++) {
    o.method = m ? FMMCL_TREECODE : FMMCL_FMM;
    ck_assert_msg(create_status(&o) == FMMCL_SUCCESS, "%s: %s", fmmcl_method_name(o.method),
                  fmmcl_last_error(ctx));
  }
  const fmmcl_kernel ext[2] = {FMMCL_HELMHOLTZ_3D, FMMCL_STOKES_3D};
  const fmmcl_method fast[3] = {FMMCL_FMM, FMMCL_TREECODE, FMMCL_BBFMM};
  for (int k = 0; k < 2; k++)
    for (int m = 0; m < 3; m++) {
      if (ext[k] == FMMCL_HELMHOLTZ_3D && fast[m] == FMMCL_FMM) continue; /* check_helmholtz_fmm.c */
      fmmcl_plan_options_init(&o, ext[k]);
      o.method = fast[m];
      o.stresslets = ext[k] == FMMCL_STOKES_3D;
      if (ext[k] == FMMCL_STOKES_3D && fast[m] == FMMCL_FMM) continue; /* check_fmm_ext.c */
      ck_assert_msg(create_status(&o) == FMMCL_ERROR_UNSUPPORTED, "%s %s: %s", fmmcl_kernel_name(ext[k]),
                    fmmcl_method_name(fast[m]), fmmcl_last_error(ctx));
    }
  /* AUTO picks what can sum them */
  fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
  o.method = FMMCL_AUTO;
  ck_assert_int_eq(create_status(&o), FMMCL_SUCCESS);
}
END_TEST

/* Arrays missing or not provided for: exact statuses, outputs untouched. */
START_TEST(test_bad_arrays) {
  const size_t n = 4;
  const double x[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  double q[8] = {1, 2, 3, 4, 5, 6, 7, 8}, d[24] = {0}, pot[8], hess[24], vel[12];
  fmmcl_plan_options o;
  fmmcl_plan plan;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.dipoles = 1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
  for (size_t i = 0; i < 8; i++) pot[i] = SENTINEL;
  fmmcl_sources_data none = {0}, in = {.charges = q, .dipoles = d};
  fmmcl_targets_data out = {.potential = pot};
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &none, &out), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, NULL, &out), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &in, NULL), FMMCL_ERROR_NULL_POINTER);
  fmmcl_targets_data empty = {0};
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &in, &empty), FMMCL_ERROR_NULL_POINTER);
  fmmcl_targets_data with_hessian = {.potential = pot, .hessian = hess}; /* the plan has none */
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &in, &with_hessian), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_targets_data with_velocity = {.potential = pot, .velocity = vel};
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &in, &with_velocity), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_sources_data complex_in = {.complex_charges = q};
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &complex_in, &out), FMMCL_ERROR_INVALID_ARGUMENT);
  d[5] = NAN;
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &in, &out), FMMCL_ERROR_NONFINITE_INPUT);
  d[5] = 0;
  for (size_t i = 0; i < 8; i++) ck_assert(pot[i] == SENTINEL);
  fmmcl_plan_destroy(plan);
  /* a plan without dipoles refuses them */
  o.dipoles = 0;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &in, &out), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_plan_destroy(plan);
  /* Helmholtz: no real charges, nor fmmcl_plan_execute */
  fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
  o.wavenumber_re = 1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
  fmmcl_sources_data real_in = {.charges = q};
  fmmcl_targets_data cout = {.complex_potential = pot};
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &real_in, &cout), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &none, &cout), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &complex_in, &out), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &complex_in, &cout), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  /* Stokes: a stresslet needs both halves; pressure needs opt.pressure */
  fmmcl_plan_options_init(&o, FMMCL_STOKES_3D);
  o.stresslets = 1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_SUCCESS);
  fmmcl_sources_data half = {.stresslet_strengths = d};
  fmmcl_targets_data sout = {.velocity = vel}, pout = {.velocity = vel, .pressure = pot};
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &half, &sout), FMMCL_ERROR_NULL_POINTER);
  fmmcl_sources_data forces = {.forces = d};
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &forces, &pout), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &forces, &sout), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  /* the reference checks the same way, and fmmcl_reference_direct sends these on */
  fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
  o.wavenumber_im = -1;
  ck_assert_int_eq(fmmcl_reference_evaluate(&o, n, x, &complex_in, 0, NULL, &cout),
                   FMMCL_ERROR_INVALID_ARGUMENT);
  o.wavenumber_im = 1;
  ck_assert_int_eq(fmmcl_reference_evaluate(&o, n, x, &none, 0, NULL, &cout), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_reference_direct(&o, n, x, q, 0, NULL, pot, NULL), FMMCL_ERROR_UNSUPPORTED);
}
END_TEST

START_TEST(test_names) {
  fmmcl_kernel k;
  ck_assert_str_eq(fmmcl_kernel_name(FMMCL_HELMHOLTZ_3D), "helmholtz3d");
  ck_assert_str_eq(fmmcl_kernel_name(FMMCL_STOKES_3D), "stokes3d");
  ck_assert_int_eq(fmmcl_kernel_parse("stokes3d", &k), FMMCL_SUCCESS);
  ck_assert_int_eq(k, FMMCL_STOKES_3D);
  ck_assert_int_eq(fmmcl_kernel_parse("helmholtz3d", &k), FMMCL_SUCCESS);
  ck_assert_int_eq(k, FMMCL_HELMHOLTZ_3D);
}
END_TEST

static TCase *device_case(const char *name) {
  TCase *tc = tcase_create(name);
  fmmcl_test_context_fixture(tc, &ctx);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(tc, 300);
  return tc;
}

static Suite *kernels_ext_suite(void) {
  Suite *s = suite_create("kernels_ext");
  TCase *dev = device_case("device");
  tcase_add_loop_test(dev, test_vs_reference, 0, (int)(N_CONFIGS * 2 * N_DISTS));
  tcase_add_loop_test(dev, test_imaginary_k_is_yukawa, 0, 2);
  tcase_add_test(dev, test_execute_and_evaluate_agree);
  tcase_add_loop_test(dev, test_stokes_fmm, 0, (int)(N_STOKES_RUNS * N_DISTS));
  suite_add_tcase(s, dev);
  TCase *ref = tcase_create("reference");
  tcase_add_test(ref, test_reference_laplace_derivatives);
  tcase_add_test(ref, test_reference_helmholtz_derivatives);
  tcase_add_test(ref, test_reference_stokes_equations);
  tcase_add_test(ref, test_names);
  suite_add_tcase(s, ref);
  TCase *bad = device_case("bad_input");
  tcase_add_test(bad, test_bad_options);
  tcase_add_test(bad, test_bad_arrays);
  suite_add_tcase(s, bad);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(kernels_ext_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
