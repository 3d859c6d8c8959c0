/* check_direct.c — the DIRECT method on the device, checked against the plain-C
 * reference and against closed forms: sizes that fill no work-group, both
 * precisions, every kernel, several tilings, plan reuse, phase timings, build
 * options, the status of every kind of bad input, and the kernel and
 * method names and registry that plans are made from. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmmcl.h"
#include "core/internal.h" /* fmmcl_context_override_defines: the tilings under test */
#include "plan/registry.h" /* the method registry and kernel table under test */
#include "model/model.h"   /* fmmcl_model_resolve: what AUTO becomes */
#include "test_util.h"

/* Float: the device's arithmetic alone. Coordinates are grid points
 * (fmmcl_test_grid_points, spacing 2^-20 in [0, 1)): the library takes them
 * relative to tile and block centres on a grid of 2^-20 (from the box
 * centre, a multiple of 2^-21), after which they, and a tile's sources moved
 * into a block's frame, are exact in float, so the device sees exactly the
 * reference's input. What is left is
 * a few roundings of 6e-8 per pair and ~6e-8 sqrt(N) from the running sum,
 * about 1e-6 at N = 1531: 1e-5 keeps a margin of ten and still catches one
 * wrong pair of 1531 (~1e-3). Raw coordinates would add the rounding of the
 * input, ~6e-8 x extent / nearest-pair distance in the gradient, which is no
 * error of the kernel (test_laplace_far_from_origin bounds that case). */
#define TOL_SINGLE 1e-5
/* Double: the same arithmetic at 1.1e-16 per operation. */
#define TOL_DOUBLE 1e-12
/* One pair in closed form: a handful of roundings (native_rsqrt and
 * native_exp are good to ~1e-7 relative in float). */
#define TOL_PAIR_SINGLE 1e-6
#define TOL_PAIR_DOUBLE 1e-14
/* Output arrays are filled with this before a call that must fail, and must
 * still hold it afterwards ("on failure the outputs are untouched"). */
#define SENTINEL 12345.0

static fmmcl_context ctx;
static fmmcl_device_info dev;

/* Checked fixture: runs in each test's own process, so no OpenCL state ever
 * crosses Check's fork (PoCL's worker threads would not survive it). */
static void open_device(void) {
  ctx = fmmcl_test_context();
  ck_assert_msg(ctx != NULL, "no OpenCL context: %s", fmmcl_last_error(NULL));
  ck_assert_int_eq(fmmcl_context_device(ctx, &dev), FMMCL_SUCCESS);
}

static void close_device(void) {
  fmmcl_context_destroy(ctx);
  ctx = NULL;
}

/* ---- helpers ------------------------------------------------------------ */

static fmmcl_precision precision_of(int i) { return i ? FMMCL_DOUBLE : FMMCL_SINGLE; }
static const char *precision_name(fmmcl_precision p) { return p == FMMCL_DOUBLE ? "double" : "single"; }
static double tol(fmmcl_precision p) { return p == FMMCL_DOUBLE ? TOL_DOUBLE : TOL_SINGLE; }
static double tol_pair(fmmcl_precision p) { return p == FMMCL_DOUBLE ? TOL_PAIR_DOUBLE : TOL_PAIR_SINGLE; }

static double *doubles(size_t n) {
  double *p = malloc((n ? n : 1) * sizeof *p);
  ck_assert_ptr_nonnull(p);
  return p;
}

static double *filled(size_t n, double v) {
  double *p = doubles(n);
  for (size_t i = 0; i < n; i++) p[i] = v;
  return p;
}

static int all_equal(const double *v, size_t n, double x) {
  for (size_t i = 0; i < n; i++)
    if (v[i] != x) return 0;
  return 1;
}

static int all_finite(const double *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return 0;
  return 1;
}

static fmmcl_plan_options options(fmmcl_kernel k, fmmcl_precision p, int dim) {
  fmmcl_plan_options o;
  ck_assert_int_eq(fmmcl_plan_options_init(&o, k), FMMCL_SUCCESS);
  o.precision = p;
  if (k == FMMCL_GAUSSIAN) o.dim = dim;
  return o;
}

/* A device without fp64 must refuse a double plan; the test then stops. */
static int device_has(fmmcl_precision p) {
  if (p == FMMCL_SINGLE || dev.has_fp64) return 1;
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, p, 3);
  double x[3] = {0, 0, 0};
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 1, x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  return 0;
}

static fmmcl_plan make_plan(const fmmcl_plan_options *o, size_t ns, const double *src, size_t nt,
                            const double *tgt) {
  fmmcl_plan plan = NULL;
  fmmcl_status st = fmmcl_plan_create(ctx, o, ns, src, nt, tgt, &plan);
  ck_assert_msg(st == FMMCL_SUCCESS, "fmmcl_plan_create: %s: %s", fmmcl_strerror(st), fmmcl_last_error(ctx));
  ck_assert_ptr_nonnull(plan);
  return plan;
}

static void execute(fmmcl_plan plan, const double *q, double *pot, double *grad) {
  fmmcl_status st = fmmcl_plan_execute(plan, q, pot, grad);
  ck_assert_msg(st == FMMCL_SUCCESS, "fmmcl_plan_execute: %s: %s", fmmcl_strerror(st), fmmcl_last_error(ctx));
}

/* One plan, one execution. */
static void device_sum(const fmmcl_plan_options *o, size_t ns, const double *src, size_t nt,
                       const double *tgt, const double *q, double *pot, double *grad) {
  fmmcl_plan plan = make_plan(o, ns, src, nt, tgt);
  execute(plan, q, pot, grad);
  fmmcl_plan_destroy(plan);
}

static void reference_sum(const fmmcl_plan_options *o, size_t ns, const double *src, size_t nt,
                          const double *tgt, const double *q, double *pot, double *grad) {
  fmmcl_status st = fmmcl_reference_direct(o, ns, src, q, nt, tgt, pot, grad);
  ck_assert_msg(st == FMMCL_SUCCESS, "fmmcl_reference_direct: %s", fmmcl_last_error(NULL));
}

typedef struct {
  double pot, grad;
} rel_errors;

/* Relative L2 errors of a plan's result (plan executed with q) against the reference. */
static rel_errors plan_errors(fmmcl_plan plan, const fmmcl_plan_options *o, size_t ns, const double *src,
                              size_t nt, const double *tgt, const double *q) {
  const size_t m = tgt ? nt : ns, d = (size_t)o->dim;
  double *pot = doubles(m), *grad = doubles(m * d), *rp = doubles(m), *rg = doubles(m * d);
  execute(plan, q, pot, grad);
  reference_sum(o, ns, src, nt, tgt, q, rp, rg);
  rel_errors e = {fmmcl_test_rel_l2(pot, rp, m), fmmcl_test_rel_l2(grad, rg, m * d)};
  free(pot);
  free(grad);
  free(rp);
  free(rg);
  return e;
}

/* Device against reference on one input, with a message that says which. */
static void expect_close(const fmmcl_plan_options *o, size_t ns, const double *src, size_t nt,
                         const double *tgt, const double *q, double tol_pot, double tol_grad,
                         const char *what) {
  fmmcl_plan plan = make_plan(o, ns, src, nt, tgt);
  rel_errors e = plan_errors(plan, o, ns, src, nt, tgt, q);
  fmmcl_plan_destroy(plan);
  const size_t m = tgt ? nt : ns;
  /* written so that NaN fails */
  ck_assert_msg(e.pot <= tol_pot, "%s (%s, dim %d, %zu sources, %zu targets): potential error %.3g > %.3g",
                what, precision_name(o->precision), o->dim, ns, m, e.pot, tol_pot);
  ck_assert_msg(e.grad <= tol_grad, "%s (%s, dim %d, %zu sources, %zu targets): gradient error %.3g > %.3g",
                what, precision_name(o->precision), o->dim, ns, m, e.grad, tol_grad);
}

/* |sum_i q_i grad_i| / sum_i |q_i| |grad_i| for targets == sources: zero in
 * exact arithmetic for any kernel K(x - y) = K(y - x), since the pair forces
 * q_i q_j grad K cancel (Newton's third law). */
static double momentum_imbalance(const double *q, const double *grad, size_t n, int dim) {
  double total[FMMCL_MAX_DIM] = {0}, scale = 0;
  for (size_t i = 0; i < n; i++) {
    double g2 = 0;
    for (int c = 0; c < dim; c++) {
      total[c] += q[i] * grad[i * dim + c];
      g2 += grad[i * dim + c] * grad[i * dim + c];
    }
    scale += fabs(q[i]) * sqrt(g2);
  }
  double t2 = 0;
  for (int c = 0; c < dim; c++) t2 += total[c] * total[c];
  return sqrt(t2) / scale;
}

/* ---- Laplace 3D against the reference ------------------------------------ */

/* None a multiple of any work-group size the library or a tuner would use. */
static const size_t sizes[] = {1, 2, 7, 129, 1000, 1531};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

START_TEST(test_laplace_sizes) {
  const size_t n = sizes[_i / 2];
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, precision_of(_i % 2), 3);
  if (!device_has(o.precision)) return;
  double *x = doubles(3 * n), *q = doubles(n);
  fmmcl_test_grid_points(100 + (unsigned)_i, n, 3, x);
  fmmcl_test_random_values(200 + (unsigned)_i, n, -1, 1, q);
  expect_close(&o, n, x, 0, NULL, q, tol(o.precision), tol(o.precision), "targets = sources");
  free(x);
  free(q);
}
END_TEST

START_TEST(test_laplace_sources_not_targets) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, precision_of(_i), 3);
  if (!device_has(o.precision)) return;
  const size_t cases[][2] = {{300, 77}, {50, 333}, {1, 5}, {129, 1}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const size_t ns = cases[k][0], nt = cases[k][1];
    double *y = doubles(3 * ns), *x = doubles(3 * nt), *q = doubles(ns);
    fmmcl_test_grid_points(300 + (unsigned)k, ns, 3, y);
    fmmcl_test_grid_points(400 + (unsigned)k, nt, 3, x);
    fmmcl_test_random_values(500 + (unsigned)k, ns, -1, 1, q);
    expect_close(&o, ns, y, nt, x, q, tol(o.precision), tol(o.precision), "separate targets");
    free(y);
    free(x);
    free(q);
  }
}
END_TEST

/* A lone point does not see itself: potential and gradient exactly 0, also
 * when the target sits on the source but is given as a separate array. */
START_TEST(test_laplace_single_point) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, precision_of(_i), 3);
  if (!device_has(o.precision)) return;
  double x[3] = {0.25, 0.5, 0.75}, q = 2.5, pot = SENTINEL, grad[3] = {SENTINEL, SENTINEL, SENTINEL};
  device_sum(&o, 1, x, 0, NULL, &q, &pot, grad);
  ck_assert_msg(pot == 0.0 && all_equal(grad, 3, 0.0), "N = 1: potential %g, gradient (%g, %g, %g)", pot,
                grad[0], grad[1], grad[2]);
  double t[3] = {0.25, 0.5, 0.75};
  pot = SENTINEL;
  device_sum(&o, 1, x, 1, t, &q, &pot, grad);
  ck_assert_msg(pot == 0.0 && all_equal(grad, 3, 0.0), "target on the source: potential %g", pot);
}
END_TEST

/* phi(x) = q / r and grad phi = -q (x - y) / r^3: magnitude q / r^2, pointing
 * from the target towards a positive source. x - y = (1/4, 1/2, 1/2), r = 3/4. */
START_TEST(test_laplace_two_points) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, precision_of(_i), 3);
  if (!device_has(o.precision)) return;
  const double y[3] = {0.125, 0.25, 0.5}, d[3] = {0.25, 0.5, 0.5}, r = 0.75;
  double x[3], pot, grad[3];
  for (int c = 0; c < 3; c++) x[c] = y[c] + d[c];
  const double tp = tol_pair(o.precision);
  for (double q = -2; q <= 3; q += 5) {
    device_sum(&o, 1, y, 1, x, &q, &pot, grad);
    ck_assert_msg(fabs(pot - q / r) <= tp * fabs(q / r), "q = %g: potential %.17g, want %.17g", q, pot,
                  q / r);
    double gnorm = 0, toward = 0;
    for (int c = 0; c < 3; c++) {
      const double want = -q * d[c] / (r * r * r);
      ck_assert_msg(fabs(grad[c] - want) <= tp * fabs(q) / (r * r), "q = %g: gradient[%d] %.17g, want %.17g",
                    q, c, grad[c], want);
      gnorm += grad[c] * grad[c];
      toward += grad[c] * (y[c] - x[c]);
    }
    ck_assert_msg(fabs(sqrt(gnorm) - fabs(q) / (r * r)) <= tp * fabs(q) / (r * r), "|gradient| %g, want %g",
                  sqrt(gnorm), fabs(q) / (r * r));
    ck_assert_msg(q > 0 ? toward > 0 : toward < 0, "q = %g: gradient points the wrong way", q);
  }
  /* targets = sources: each point sees only the other */
  double p2[6], q2[2] = {1.5, -0.5}, pot2[2], grad2[6];
  memcpy(p2, y, sizeof y);
  memcpy(p2 + 3, x, sizeof x);
  device_sum(&o, 2, p2, 0, NULL, q2, pot2, grad2);
  ck_assert_msg(fabs(pot2[0] - q2[1] / r) <= tp && fabs(pot2[1] - q2[0] / r) <= tp * 2,
                "pair: potentials %.17g %.17g", pot2[0], pot2[1]);
  for (int c = 0; c < 3; c++) {
    ck_assert(fabs(grad2[c] - q2[1] * d[c] / (r * r * r)) <= tp * 2);
    ck_assert(fabs(grad2[3 + c] + q2[0] * d[c] / (r * r * r)) <= tp * 4);
  }
}
END_TEST

/* sum_i q_i grad phi(x_i) = 0 with targets = sources, independent of the reference. */
START_TEST(test_laplace_momentum) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, precision_of(_i), 3);
  if (!device_has(o.precision)) return;
  const size_t n = 1000;
  double *x = doubles(3 * n), *q = doubles(n), *pot = doubles(n), *grad = doubles(3 * n);
  fmmcl_test_grid_points(600, n, 3, x);
  fmmcl_test_random_values(601, n, -1, 1, q);
  device_sum(&o, n, x, 0, NULL, q, pot, grad);
  const double m = momentum_imbalance(q, grad, n, 3);
  ck_assert_msg(m <= tol(o.precision), "sum q_i grad_i / sum |q_i grad_i| = %.3g", m);
  free(x);
  free(q);
  free(pot);
  free(grad);
}
END_TEST

/* Raw coordinates in [c, c + 1)^3 with c = 1e3 and 1e6. In float the library
 * takes them relative to centres near them (tiles and blocks of the unit
 * box) in double first; the input rounding left is then at most 2^-25 per
 * coordinate, a relative error of ~2^-25 / r in a pair at distance r
 * (2^-24 / r in its gradient): ~1e-6 in the L2 norm over 1000 points, whose
 * nearest pairs are ~0.01 apart, hence a bound of 1e-4 on both. Without the
 * shift, floats near c are 6e-5 (c = 1e3) or 0.06 (c = 1e6) apart and the
 * error is over 1e-3; the test shows that on the reference, so it cannot pass
 * for a library that rounded the raw coordinates. Double sees the input exactly. */
START_TEST(test_laplace_far_from_origin) {
  const double offsets[] = {1e3, 1e6};
  const double offset = offsets[_i / 2];
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, precision_of(_i % 2), 3);
  if (!device_has(o.precision)) return;
  const size_t n = 1000;
  double *x = doubles(3 * n), *q = doubles(n);
  fmmcl_test_random_values(700 + (unsigned)_i, 3 * n, offset, offset + 1, x);
  fmmcl_test_random_values(701 + (unsigned)_i, n, -1, 1, q);
  const int single = o.precision == FMMCL_SINGLE;
  const double bound = single ? 1e-4 : TOL_DOUBLE;
  expect_close(&o, n, x, 0, NULL, q, bound, bound, "far from the origin");
  if (single) {
    double *xf = doubles(3 * n), *p = doubles(n), *pf = doubles(n);
    for (size_t i = 0; i < 3 * n; i++) xf[i] = (double)(float)x[i];
    reference_sum(&o, n, x, 0, NULL, q, p, NULL);
    reference_sum(&o, n, xf, 0, NULL, q, pf, NULL);
    ck_assert_msg(fmmcl_test_rel_l2(pf, p, n) > 10 * bound, "unshifted float input would only err by %.3g",
                  fmmcl_test_rel_l2(pf, p, n));
    free(xf);
    free(p);
    free(pf);
  }
  free(x);
  free(q);
}
END_TEST

/* 1/sqrt(r^2 + eps^2): against the reference with the same eps, and in
 * closed form — with eps > 0 every pair counts, a point on a source included. */
START_TEST(test_laplace_softening) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, precision_of(_i), 3);
  if (!device_has(o.precision)) return;
  const double t = tol(o.precision), tp = tol_pair(o.precision);
  const size_t n = 1000, ns = 300, nt = 77;
  double *x = doubles(3 * n), *q = doubles(n), *y = doubles(3 * nt);
  fmmcl_test_grid_points(800, n, 3, x);
  fmmcl_test_grid_points(801, nt, 3, y);
  fmmcl_test_random_values(802, n, -1, 1, q);
  const double eps_values[] = {1e-3, 0.05, 0.5};
  for (size_t k = 0; k < 3; k++) {
    o.softening = eps_values[k];
    expect_close(&o, n, x, 0, NULL, q, t, t, "softened, targets = sources");
    expect_close(&o, ns, x, nt, y, q, t, t, "softened, separate targets");
  }
  /* separated pair: x - y = (1/4, 1/2, 1/2), r^2 = 9/16, eps = 1: sqrt(r^2 + eps^2) = 5/4 */
  o.softening = 1.0;
  const double src[3] = {0.5, 0.5, 0.5}, d[3] = {0.25, 0.5, 0.5}, tgt[3] = {0.75, 1.0, 1.0};
  double qa = 3, pot, grad[3];
  device_sum(&o, 1, src, 1, tgt, &qa, &pot, grad);
  ck_assert_msg(fabs(pot - qa / 1.25) <= tp * qa / 1.25, "softened pair: potential %.17g, want %.17g", pot,
                qa / 1.25);
  for (int c = 0; c < 3; c++)
    ck_assert_msg(fabs(grad[c] + qa * d[c] / (1.25 * 1.25 * 1.25)) <= tp * qa,
                  "softened pair: gradient[%d] %.17g", c, grad[c]);
  /* two coincident points, targets = sources: each sees both, (q1 + q2) / eps */
  o.softening = 0.25;
  double twin[6] = {0.5, 0.25, 0.75, 0.5, 0.25, 0.75}, q2[2] = {1.5, -0.5}, pot2[2], grad2[6];
  device_sum(&o, 2, twin, 0, NULL, q2, pot2, grad2);
  for (int i = 0; i < 2; i++)
    ck_assert_msg(fabs(pot2[i] - 4.0) <= tp * 4, "coincident softened: potential %.17g, want 4", pot2[i]);
  ck_assert_msg(all_equal(grad2, 6, 0.0), "coincident softened points pull");
  /* one point: q / eps */
  device_sum(&o, 1, twin, 0, NULL, &qa, &pot, grad);
  ck_assert_msg(fabs(pot - qa / 0.25) <= tp * qa / 0.25, "N = 1 softened: potential %.17g, want %g", pot,
                qa / 0.25);
  free(x);
  free(q);
  free(y);
}
END_TEST

/* eps = 0 with distinct points that coincide: the pair contributes nothing,
 * wherever the two points fall in the tiling, and a target on a source given
 * as a separate array is treated the same. */
START_TEST(test_laplace_coincident) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, precision_of(_i), 3);
  if (!device_has(o.precision)) return;
  const double t = tol(o.precision);
  const size_t n = 300;
  double *x = doubles(3 * n), *q = doubles(n);
  fmmcl_test_grid_points(900, n, 3, x);
  fmmcl_test_random_values(901, n, -1, 1, q);
  for (size_t i = 0; i < 30; i++)
    memcpy(x + 3 * (n - 1 - 2 * i), x + 3 * i, 3 * sizeof *x); /* far apart in index */
  expect_close(&o, n, x, 0, NULL, q, t, t, "repeated sources");
  double *copy = doubles(3 * n);
  memcpy(copy, x, 3 * n * sizeof *x);
  expect_close(&o, n, x, n, copy, q, t, t, "targets on sources");
  double two[6] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, q2[2] = {1, 2}, pot[2], grad[6];
  device_sum(&o, 2, two, 0, NULL, q2, pot, grad);
  ck_assert_msg(all_equal(pot, 2, 0.0) && all_equal(grad, 6, 0.0), "two coincident points: potentials %g %g",
                pot[0], pot[1]);
  free(x);
  free(q);
  free(copy);
}
END_TEST

/* Two points 1e-12 apart are distinct in double and one point in float: the
 * float device must treat them as coincident (finite results), whatever
 * work-groups they fall in, while the other targets stay correct. */
START_TEST(test_laplace_float_twins) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  const size_t n = 200;
  double *x = doubles(3 * n), *q = doubles(n), *pot = doubles(n), *grad = doubles(3 * n), *rp = doubles(n),
         *rg = doubles(3 * n);
  fmmcl_test_grid_points(1000, n, 3, x);
  fmmcl_test_random_values(1001, n, -1, 1, q);
  memcpy(x + 3 * (n - 1), x, 3 * sizeof *x);
  x[3 * (n - 1)] += 1e-12;
  device_sum(&o, n, x, 0, NULL, q, pot, grad);
  ck_assert_msg(all_finite(pot, n) && all_finite(grad, 3 * n), "float twins gave a non-finite result");
  reference_sum(&o, n, x, 0, NULL, q, rp, rg);
  const double ep = fmmcl_test_rel_l2(pot + 1, rp + 1, n - 2),
               eg = fmmcl_test_rel_l2(grad + 3, rg + 3, 3 * (n - 2));
  ck_assert_msg(ep <= TOL_SINGLE && eg <= TOL_SINGLE, "others next to float twins: errors %.3g %.3g", ep, eg);
  free(x);
  free(q);
  free(pot);
  free(grad);
  free(rp);
  free(rg);
}
END_TEST

/* ---- Yukawa 3D ------------------------------------------------------------ */

static fmmcl_plan_options yukawa(fmmcl_precision p, double kappa) {
  fmmcl_plan_options o = options(FMMCL_YUKAWA_3D, p, 3);
  o.kernel_param = kappa;
  return o;
}

/* kappa from a range of several boxes (almost 1/r) to a tenth of the box
 * (each point sees mostly its neighbours), on every target: targets =
 * sources (the guarded tiles), separate targets, and softened. exp adds
 * one rounding (native_exp: ~1e-7 in float) and kappa r's ~kappa r 6e-8
 * per pair, whose weight exp(-kappa r) makes it at most 0.4 ulp: the
 * tolerances of the 1/r kernel hold. */
static const double kappas[] = {0.5, 2, 10};
#define N_KAPPAS (sizeof kappas / sizeof kappas[0])

START_TEST(test_yukawa_vs_reference) {
  fmmcl_plan_options o = yukawa(precision_of(_i % 2), kappas[_i / 2]);
  if (!device_has(o.precision)) return;
  const double t = tol(o.precision);
  const size_t n = 1531, ns = 300, nt = 77;
  double *x = doubles(3 * n), *q = doubles(n), *y = doubles(3 * nt);
  fmmcl_test_grid_points(1300 + (unsigned)_i, n, 3, x);
  fmmcl_test_grid_points(1310 + (unsigned)_i, nt, 3, y);
  fmmcl_test_random_values(1320 + (unsigned)_i, n, -1, 1, q);
  expect_close(&o, n, x, 0, NULL, q, t, t, "yukawa, targets = sources");
  expect_close(&o, ns, x, nt, y, q, t, t, "yukawa, separate targets");
  o.softening = 0.05;
  expect_close(&o, n, x, 0, NULL, q, t, t, "yukawa softened, targets = sources");
  free(x);
  free(q);
  free(y);
}
END_TEST

/* kappa = 0 is the Laplace kernel: the device sums agree to the roundings
 * of one pair (exp(0) = 1 and 1 + 0 r = 1 are exact), and so do the
 * references. */
START_TEST(test_yukawa_kappa_zero) {
  fmmcl_plan_options oy = yukawa(precision_of(_i), 0), ol = options(FMMCL_LAPLACE_3D, precision_of(_i), 3);
  if (!device_has(oy.precision)) return;
  const size_t n = 1000;
  double *x = doubles(3 * n), *q = doubles(n), *py = doubles(n), *gy = doubles(3 * n), *pl = doubles(n),
         *gl = doubles(3 * n);
  fmmcl_test_grid_points(1400, n, 3, x);
  fmmcl_test_random_values(1401, n, -1, 1, q);
  device_sum(&oy, n, x, 0, NULL, q, py, gy);
  device_sum(&ol, n, x, 0, NULL, q, pl, gl);
  const double tp = tol_pair(oy.precision);
  double ep = fmmcl_test_rel_l2(py, pl, n), eg = fmmcl_test_rel_l2(gy, gl, 3 * n);
  ck_assert_msg(ep <= tp && eg <= tp, "device, kappa = 0 vs laplace3d (%s): errors %.3g %.3g",
                precision_name(oy.precision), ep, eg);
  reference_sum(&oy, n, x, 0, NULL, q, py, gy);
  reference_sum(&ol, n, x, 0, NULL, q, pl, gl);
  ep = fmmcl_test_rel_l2(py, pl, n), eg = fmmcl_test_rel_l2(gy, gl, 3 * n);
  ck_assert_msg(ep <= TOL_PAIR_DOUBLE && eg <= TOL_PAIR_DOUBLE,
                "reference, kappa = 0 vs laplace3d: %.3g %.3g", ep, eg);
  free(x);
  free(q);
  free(py);
  free(gy);
  free(pl);
  free(gl);
}
END_TEST

/* One pair in closed form, x - y = (1/4, 1/2, 1/2), r = 3/4, kappa = 2:
 * phi = q e^{-kappa r} / r, grad phi = -q e^{-kappa r} (1 + kappa r) (x - y) / r^3;
 * a lone point and two coincident points see nothing. */
START_TEST(test_yukawa_two_points) {
  fmmcl_plan_options o = yukawa(precision_of(_i), 2);
  if (!device_has(o.precision)) return;
  const double y[3] = {0.125, 0.25, 0.5}, d[3] = {0.25, 0.5, 0.5}, r = 0.75, k = 2;
  double x[3], pot, grad[3], q = -1.5;
  for (int c = 0; c < 3; c++) x[c] = y[c] + d[c];
  const double tp = tol_pair(o.precision), e = exp(-k * r), want = q * e / r;
  device_sum(&o, 1, y, 1, x, &q, &pot, grad);
  ck_assert_msg(fabs(pot - want) <= tp * fabs(want), "potential %.17g, want %.17g", pot, want);
  for (int c = 0; c < 3; c++) {
    const double g = -q * e * (1 + k * r) * d[c] / (r * r * r);
    ck_assert_msg(fabs(grad[c] - g) <= tp * fabs(q) * e * (1 + k * r) / (r * r),
                  "gradient[%d] %.17g, want %.17g", c, grad[c], g);
  }
  double two[6] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, q2[2] = {1, 2}, p2[2], g2[6];
  device_sum(&o, 1, two, 0, NULL, q2, p2, g2);
  ck_assert_msg(p2[0] == 0.0 && all_equal(g2, 3, 0.0), "N = 1: potential %g", p2[0]);
  device_sum(&o, 2, two, 0, NULL, q2, p2, g2);
  ck_assert_msg(all_equal(p2, 2, 0.0) && all_equal(g2, 6, 0.0), "coincident points: potentials %g %g", p2[0],
                p2[1]);
}
END_TEST

/* The reference's gradient is the derivative of its potential: central
 * differences with step h = 1e-4 d (d: the target's nearest source) err by
 * ~(h/d)^2 = 1e-8 relative (truncation) plus ~1e-16 d / h = 1e-12
 * (rounding); 1e-6 still catches a wrong sign or a missing 1 + kappa r. */
START_TEST(test_yukawa_reference_gradient) {
  const double k_eps[][2] = {{2, 0}, {0.5, 0}, {2, 0.1}};
  fmmcl_plan_options o = yukawa(FMMCL_DOUBLE, k_eps[_i][0]);
  o.softening = k_eps[_i][1];
  const size_t ns = 200, nt = 40;
  double *y = doubles(3 * ns), *x = doubles(3 * nt), *q = doubles(ns), *g = doubles(3 * nt),
         *fd = doubles(3 * nt);
  double *p = doubles(nt);
  fmmcl_test_grid_points(1500, ns, 3, y);
  fmmcl_test_grid_points(1501, nt, 3, x);
  fmmcl_test_random_values(1502, ns, -1, 1, q);
  reference_sum(&o, ns, y, nt, x, q, p, g);
  for (size_t i = 0; i < nt; i++) {
    double d2 = INFINITY;
    for (size_t j = 0; j < ns; j++) {
      double r2 = 0;
      for (int c = 0; c < 3; c++) r2 += (x[3 * i + c] - y[3 * j + c]) * (x[3 * i + c] - y[3 * j + c]);
      d2 = r2 < d2 ? r2 : d2;
    }
    ck_assert(d2 > 0);
    const double h = 1e-4 * sqrt(d2);
    for (int c = 0; c < 3; c++) {
      double t[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]}, pp, pm;
      t[c] += h;
      reference_sum(&o, ns, y, 1, t, q, &pp, NULL);
      t[c] -= 2 * h;
      reference_sum(&o, ns, y, 1, t, q, &pm, NULL);
      fd[3 * i + c] = (pp - pm) / (2 * h);
    }
  }
  const double e = fmmcl_test_rel_l2(g, fd, 3 * nt);
  ck_assert_msg(e <= 1e-6, "kappa %g, eps %g: gradient vs central differences %.3g", o.kernel_param,
                o.softening, e);
  free(y);
  free(x);
  free(q);
  free(g);
  free(fd);
  free(p);
}
END_TEST

/* AUTO: the direct sum for small problems, on the device. */
START_TEST(test_yukawa_auto_small) {
  fmmcl_plan_options o = yukawa(FMMCL_SINGLE, 2);
  o.method = FMMCL_AUTO;
  const size_t n = 500;
  double *x = doubles(3 * n), *q = doubles(n);
  fmmcl_test_grid_points(1600, n, 3, x);
  fmmcl_test_random_values(1601, n, -1, 1, q);
  fmmcl_plan plan = make_plan(&o, n, x, 0, NULL);
  ck_assert(fmmcl_plan_runs(plan, "direct"));
  o.method = FMMCL_DIRECT;
  rel_errors e = plan_errors(plan, &o, n, x, 0, NULL, q);
  ck_assert_msg(e.pot <= TOL_SINGLE && e.grad <= TOL_SINGLE, "auto: errors %.3g %.3g", e.pot, e.grad);
  fmmcl_plan_destroy(plan);
  free(x);
  free(q);
}
END_TEST

/* ---- Gaussian ------------------------------------------------------------ */

static const int gauss_dims[] = {1, 2, 3, 5, 8};
#define N_GAUSS_DIMS (sizeof gauss_dims / sizeof gauss_dims[0])

/* sigma from far below the nearest-neighbour distance (each point sees
 * almost only itself; in 8D with 1000 points neighbours are ~0.35 apart)
 * to far above the box (every pair weighs ~1). */
START_TEST(test_gaussian_dims) {
  const int dim = gauss_dims[_i / 2];
  fmmcl_plan_options o = options(FMMCL_GAUSSIAN, precision_of(_i % 2), dim);
  if (!device_has(o.precision)) return;
  const double t = tol(o.precision);
  const size_t n = 1000, ns = 300, nt = 77;
  double *x = doubles(n * dim), *q = doubles(n), *y = doubles(nt * dim), *pot = doubles(n),
         *grad = doubles(n * dim);
  fmmcl_test_grid_points(1100 + (unsigned)dim, n, dim, x);
  fmmcl_test_grid_points(1200 + (unsigned)dim, nt, dim, y);
  fmmcl_test_random_values(1300 + (unsigned)dim, n, -1, 1, q);
  const double sigmas[] = {0.05, 0.5, 5.0};
  for (size_t k = 0; k < 3; k++) {
    o.sigma = sigmas[k];
    char what[64];
    snprintf(what, sizeof what, "sigma %g, targets = sources", o.sigma);
    expect_close(&o, n, x, 0, NULL, q, t, t, what);
    snprintf(what, sizeof what, "sigma %g, separate targets", o.sigma);
    expect_close(&o, ns, x, nt, y, q, t, t, what);
    /* with sigma small a lone far target's sum underflows float: not an error */
    if (o.sigma >= 0.5) expect_close(&o, 5, x, 1, y, q, t, t, what);
    device_sum(&o, n, x, 0, NULL, q, pot, grad);
    const double m = momentum_imbalance(q, grad, n, dim);
    ck_assert_msg(m <= t, "sigma %g: sum q_i grad_i / sum |q_i grad_i| = %.3g", o.sigma, m);
  }
  free(x);
  free(q);
  free(y);
  free(pot);
  free(grad);
}
END_TEST

/* The Gaussian counts every pair, itself included: one point has
 * potential q exp(0) = q and gradient exactly 0. */
START_TEST(test_gaussian_single_point) {
  const int dims[] = {1, 3, 8};
  fmmcl_plan_options o = options(FMMCL_GAUSSIAN, precision_of(_i), 3);
  if (!device_has(o.precision)) return;
  for (int k = 0; k < 3; k++) {
    o.dim = dims[k];
    double x[FMMCL_MAX_DIM], q = -1.75, pot = SENTINEL, grad[FMMCL_MAX_DIM];
    for (int c = 0; c < o.dim; c++) x[c] = 0.125 * (c + 1);
    device_sum(&o, 1, x, 0, NULL, &q, &pot, grad);
    ck_assert_msg(fabs(pot - q) <= tol_pair(o.precision) * fabs(q), "dim %d: potential %.17g, want %g", o.dim,
                  pot, q);
    ck_assert_msg(all_equal(grad, (size_t)o.dim, 0.0), "dim %d: a lone point has a gradient", o.dim);
  }
}
END_TEST

/* q exp(-r^2 / (2 sigma^2)) and its gradient q exp(...) (y - x) / sigma^2,
 * with x - y = (1/4, 1/2, 1/2, 0, ...), r = 3/4, sigma = 3/4: q exp(-1/2). */
START_TEST(test_gaussian_two_points) {
  const int dims[] = {3, 8};
  fmmcl_plan_options o = options(FMMCL_GAUSSIAN, precision_of(_i), 3);
  if (!device_has(o.precision)) return;
  const double tp = tol_pair(o.precision), q = 2.0, s = 0.75, e = exp(-0.5);
  o.sigma = s;
  for (int k = 0; k < 2; k++) {
    o.dim = dims[k];
    double y[FMMCL_MAX_DIM] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, d[FMMCL_MAX_DIM] = {0.25, 0.5, 0.5};
    double x[FMMCL_MAX_DIM], pot, grad[FMMCL_MAX_DIM];
    for (int c = 0; c < o.dim; c++) x[c] = y[c] + d[c];
    device_sum(&o, 1, y, 1, x, &q, &pot, grad);
    ck_assert_msg(fabs(pot - q * e) <= tp * q * e, "dim %d: potential %.17g, want %.17g", o.dim, pot, q * e);
    for (int c = 0; c < o.dim; c++) {
      const double want = -q * e * d[c] / (s * s);
      ck_assert_msg(fabs(grad[c] - want) <= tp * q, "dim %d: gradient[%d] %.17g, want %.17g", o.dim, c,
                    grad[c], want);
    }
  }
}
END_TEST

/* ---- plans ---------------------------------------------------------------- */

/* One plan, new charges each time: each answer is the new sum. The plan
 * keeps its own copy of the points, so the caller may scribble on theirs. */
START_TEST(test_plan_reuse) {
  const fmmcl_kernel kernels[] = {FMMCL_LAPLACE_3D, FMMCL_GAUSSIAN};
  fmmcl_plan_options o = options(kernels[_i], FMMCL_SINGLE, 3);
  const size_t n = 700;
  double *x = doubles(3 * n), *mine = doubles(3 * n), *q1 = doubles(n), *q2 = doubles(n);
  fmmcl_test_grid_points(1400, n, 3, x);
  memcpy(mine, x, 3 * n * sizeof *x);
  fmmcl_test_random_values(1401, n, -1, 1, q1);
  fmmcl_test_random_values(1402, n, 0, 2, q2);
  fmmcl_plan plan = make_plan(&o, n, mine, 0, NULL);
  for (size_t i = 0; i < 3 * n; i++) mine[i] = NAN;
  const double *qs[] = {q1, q2, q1};
  for (int k = 0; k < 3; k++) {
    rel_errors e = plan_errors(plan, &o, n, x, 0, NULL, qs[k]);
    ck_assert_msg(e.pot <= TOL_SINGLE && e.grad <= TOL_SINGLE, "execution %d: errors %.3g %.3g", k, e.pot,
                  e.grad);
  }
  fmmcl_plan_destroy(plan);
  free(x);
  free(mine);
  free(q1);
  free(q2);
}
END_TEST

/* gradient = NULL is allowed; a plan made without gradient refuses a
 * gradient array and leaves the outputs alone. */
START_TEST(test_gradient_optional) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  const size_t n = 129;
  double *x = doubles(3 * n), *q = doubles(n), *pot = doubles(n), *rp = doubles(n);
  fmmcl_test_grid_points(1500, n, 3, x);
  fmmcl_test_random_values(1501, n, -1, 1, q);
  reference_sum(&o, n, x, 0, NULL, q, rp, NULL);
  for (int with_gradient = 1; with_gradient >= 0; with_gradient--) {
    o.gradient = with_gradient;
    fmmcl_plan plan = make_plan(&o, n, x, 0, NULL);
    execute(plan, q, pot, NULL);
    ck_assert_msg(fmmcl_test_rel_l2(pot, rp, n) <= TOL_SINGLE,
                  "gradient option %d, NULL gradient: error %.3g", with_gradient,
                  fmmcl_test_rel_l2(pot, rp, n));
    if (!with_gradient) {
      double *p = filled(n, SENTINEL), *g = filled(3 * n, SENTINEL);
      ck_assert_int_eq(fmmcl_plan_execute(plan, q, p, g), FMMCL_ERROR_INVALID_ARGUMENT);
      ck_assert_str_ne(fmmcl_last_error(ctx), "");
      ck_assert(all_equal(p, n, SENTINEL) && all_equal(g, 3 * n, SENTINEL));
      free(p);
      free(g);
    }
    fmmcl_plan_destroy(plan);
  }
  free(x);
  free(q);
  free(pot);
  free(rp);
}
END_TEST

static const fmmcl_phase_time *find_phase(const fmmcl_phase_time *t, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(t[i].name, name) == 0) return &t[i];
  return NULL;
}

START_TEST(test_phase_timings) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  const size_t n = 1531;
  double *x = doubles(3 * n), *q = doubles(n), *pot = doubles(n), *grad = doubles(3 * n);
  fmmcl_test_grid_points(1600, n, 3, x);
  fmmcl_test_random_values(1601, n, -1, 1, q);
  fmmcl_plan plan = make_plan(&o, n, x, 0, NULL);
  fmmcl_phase_time t[FMMCL_MAX_PHASES];
  size_t count = 0, first_count = 0;
  ck_assert_int_eq(fmmcl_plan_timings(plan, t, FMMCL_MAX_PHASES, &count), FMMCL_SUCCESS);
  ck_assert_ptr_nonnull(find_phase(t, count, "build"));
  for (int run = 0; run < 2; run++) {
    execute(plan, q, pot, grad);
    ck_assert_int_eq(fmmcl_plan_timings(plan, t, FMMCL_MAX_PHASES, &count), FMMCL_SUCCESS);
    const char *names[] = {"build", "upload", "p2p", "download"};
    for (int k = 0; k < 4; k++) {
      const fmmcl_phase_time *p = find_phase(t, count, names[k]);
      ck_assert_msg(p != NULL, "no phase \"%s\" after execute", names[k]);
      ck_assert_msg(p->seconds >= 0 && isfinite(p->seconds), "phase %s: %g s", names[k], p->seconds);
    }
    ck_assert_msg(find_phase(t, count, "p2p")->seconds > 0, "the kernel took no time");
    size_t counted = 0;
    ck_assert_int_eq(fmmcl_plan_timings(plan, NULL, 0, &counted), FMMCL_SUCCESS);
    ck_assert_uint_eq(counted, count);
    /* a second execution replaces the first's phases rather than adding more */
    if (run == 0) first_count = count;
    else ck_assert_uint_eq(count, first_count);
  }
  ck_assert_int_eq(fmmcl_plan_timings(plan, t, 4, NULL), FMMCL_ERROR_NULL_POINTER);
  fmmcl_plan_destroy(plan);
  free(x);
  free(q);
  free(pot);
  free(grad);
}
END_TEST

static size_t count_substr(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

START_TEST(test_build_options) {
  fmmcl_plan_options o = options(_i / 2 ? FMMCL_GAUSSIAN : FMMCL_LAPLACE_3D, precision_of(_i % 2), 3);
  if (!device_has(o.precision)) return;
  double x[6] = {0, 0, 0, 0.5, 0.25, 0.125};
  fmmcl_plan plan = make_plan(&o, 2, x, 0, NULL);
  char buf[1024], tiny[8];
  ck_assert_int_eq(fmmcl_plan_build_options(plan, buf, sizeof buf), FMMCL_SUCCESS);
  ck_assert_uint_eq(count_substr(buf, "-DWGS="), 1);
  const int dbl = o.precision == FMMCL_DOUBLE;
  ck_assert_msg(strstr(buf, dbl ? "-DFMMCL_DOUBLE" : "-DFMMCL_SINGLE") != NULL, "options \"%s\"", buf);
  ck_assert_msg(strstr(buf, dbl ? "-DFMMCL_SINGLE" : "-DFMMCL_DOUBLE") == NULL, "options \"%s\"", buf);
  ck_assert_int_eq(fmmcl_plan_build_options(plan, tiny, sizeof tiny), FMMCL_SUCCESS);
  ck_assert_uint_lt(strlen(tiny), sizeof tiny); /* truncated, terminated */
  ck_assert_int_eq(fmmcl_plan_build_options(plan, NULL, 16), FMMCL_ERROR_NULL_POINTER);
  fmmcl_plan_destroy(plan);
}
END_TEST

/* Other tilings must give the same sums: every (WGS, TPW, UNROLL) pads the
 * points differently, and with targets = sources the singular-pair guard
 * runs on different tiles. TPW = 3 divides no power of two. */
static const char *const tilings[] = {"-DWGS=16 -DTPW=1 -DUNROLL=1", "-DWGS=32 -DTPW=2 -DUNROLL=2",
                                      "-DWGS=64 -DTPW=4 -DUNROLL=8", "-DWGS=128 -DTPW=3 -DUNROLL=4"};
#define N_TILINGS (sizeof tilings / sizeof tilings[0])

START_TEST(test_override_tilings) {
  const char *defines = tilings[_i / 2];
  const int gaussian = _i % 2;
  fmmcl_plan_options o = options(gaussian ? FMMCL_GAUSSIAN : FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  const char *kernel = gaussian ? "p2p_gaussian" : "p2p_laplace3d";
  ck_assert_int_eq(fmmcl_context_override_defines(ctx, kernel, defines), FMMCL_SUCCESS);
  const size_t n = 1531;
  double *x = doubles(3 * n), *y = doubles(3 * n), *q = doubles(n);
  fmmcl_test_grid_points(1700, n, 3, x);
  fmmcl_test_grid_points(1701, n, 3, y);
  fmmcl_test_random_values(1702, n, -1, 1, q);
  if ((size_t)strtoul(defines + strlen("-DWGS="), NULL, 10) > dev.max_work_group_size) {
    fmmcl_plan plan = NULL;
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
    free(x);
    free(y);
    free(q);
    return;
  }
  fmmcl_plan plan = make_plan(&o, n, x, 0, NULL);
  char buf[1024];
  ck_assert_int_eq(fmmcl_plan_build_options(plan, buf, sizeof buf), FMMCL_SUCCESS);
  ck_assert_msg(strstr(buf, defines) && count_substr(buf, "-DWGS=") == 1 &&
                    count_substr(buf, "-DTPW=") == 1 && count_substr(buf, "-DUNROLL=") == 1,
                "override \"%s\" but options \"%s\"", defines, buf);
  fmmcl_plan_destroy(plan);
  const size_t cases[][2] = {{1531, 0}, {7, 0}, {1000, 0}, {300, 77}, {129, 1000}, {1, 1531}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const size_t ns = cases[k][0], nt = cases[k][1];
    char what[96];
    snprintf(what, sizeof what, "tiling %s", defines);
    expect_close(&o, ns, x, nt, nt ? y : NULL, q, TOL_SINGLE, TOL_SINGLE, what);
  }
  /* Raw coordinates, whose offsets from the frames' centres no float holds
   * exactly: a point as source and as target must still be 0 apart (tiles
   * take their block's centre), and a target given separately on a source
   * is skipped at the frames' resolution, in both precisions. Asked for
   * 1e-6, float's near pairs carry the low parts of the offsets (its plan
   * compensates: at this density most points have a neighbour closer than
   * 10 tolerances of their offsets' rounding), so the device's arithmetic
   * alone is left: TOL_SINGLE holds. */
  fmmcl_test_random_points(1703, n, 3, x);
  memcpy(y, x, 3 * n * sizeof *x);
  o.tolerance = 1e-6;
  for (int prec = 0; prec < 2; prec++) {
    o.precision = precision_of(prec);
    if (!device_has(o.precision)) continue;
    char what[96];
    snprintf(what, sizeof what, "tiling %s, raw %s coordinates", defines, precision_name(o.precision));
    expect_close(&o, n, x, 0, NULL, q, tol(o.precision), tol(o.precision), what);
    expect_close(&o, n, x, n, y, q, tol(o.precision), tol(o.precision), what);
  }
  free(x);
  free(y);
  free(q);
}
END_TEST

START_TEST(test_override_invalid) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  double x[6] = {0, 0, 0, 1, 1, 1}, q[2] = {1, 1}, pot[2], rp[2];
  char too_big[128];
  snprintf(too_big, sizeof too_big, "-DWGS=%zu -DTPW=1 -DUNROLL=1", 2 * dev.max_work_group_size);
  const char *bad[] = {too_big, "-DWGS=0 -DTPW=1 -DUNROLL=1", "-DWGS=16 -DTPW=0 -DUNROLL=1"};
  for (int k = 0; k < 3; k++) {
    ck_assert_int_eq(fmmcl_context_override_defines(ctx, "p2p_laplace3d", bad[k]), FMMCL_SUCCESS);
    fmmcl_plan plan = NULL;
    ck_assert_msg(fmmcl_plan_create(ctx, &o, 2, x, 0, NULL, &plan) == FMMCL_ERROR_INVALID_ARGUMENT,
                  "override \"%s\" accepted", bad[k]);
    ck_assert_str_ne(fmmcl_last_error(ctx), "");
    ck_assert_ptr_null(plan);
  }
  /* removing the override restores the defaults */
  ck_assert_int_eq(fmmcl_context_override_defines(ctx, "p2p_laplace3d", NULL), FMMCL_SUCCESS);
  fmmcl_plan plan = make_plan(&o, 2, x, 0, NULL);
  char buf[1024];
  ck_assert_int_eq(fmmcl_plan_build_options(plan, buf, sizeof buf), FMMCL_SUCCESS);
  ck_assert_msg(strstr(buf, "-DTPW=0") == NULL && strstr(buf, too_big) == NULL, "options \"%s\"", buf);
  execute(plan, q, pot, NULL);
  reference_sum(&o, 2, x, 0, NULL, q, rp, NULL);
  ck_assert(fmmcl_test_rel_l2(pot, rp, 2) <= TOL_SINGLE);
  fmmcl_plan_destroy(plan);
}
END_TEST

/* ---- bad input ------------------------------------------------------------ */

/* Expects plan creation to fail with want and a message. */
static void expect_create_fails(const fmmcl_plan_options *o, size_t ns, const double *src, size_t nt,
                                const double *tgt, fmmcl_status want, const char *what) {
  fmmcl_plan plan = NULL;
  fmmcl_status st = fmmcl_plan_create(ctx, o, ns, src, nt, tgt, &plan);
  ck_assert_msg(st == want, "%s: got \"%s\", want \"%s\"", what, fmmcl_strerror(st), fmmcl_strerror(want));
  ck_assert_msg(fmmcl_last_error(ctx)[0] != '\0', "%s: no message", what);
  ck_assert_msg(plan == NULL, "%s: a plan came back from a failure", what);
}

static const double bad_values[] = {NAN, INFINITY, -INFINITY};

START_TEST(test_nonfinite_points) {
  const double bad = bad_values[_i % 3];
  const int in_targets = _i / 3;
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  const size_t n = 50;
  double *x = doubles(3 * n), *y = doubles(3 * n);
  fmmcl_test_grid_points(1800, n, 3, x);
  fmmcl_test_grid_points(1801, n, 3, y);
  (in_targets ? y : x)[3 * 17 + 1] = bad;
  expect_create_fails(&o, n, x, n, y, FMMCL_ERROR_NONFINITE_INPUT, in_targets ? "bad target" : "bad source");
  if (!in_targets)
    expect_create_fails(&o, n, x, 0, NULL, FMMCL_ERROR_NONFINITE_INPUT, "bad source, no targets");
  o = options(FMMCL_GAUSSIAN, FMMCL_SINGLE, 2);
  expect_create_fails(&o, n, x, n, y, FMMCL_ERROR_NONFINITE_INPUT, "Gaussian, bad point");
  free(x);
  free(y);
}
END_TEST

START_TEST(test_nonfinite_charges) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  const size_t n = 50;
  double *x = doubles(3 * n), *q = doubles(n), *pot = filled(n, SENTINEL), *grad = filled(3 * n, SENTINEL);
  fmmcl_test_grid_points(1900, n, 3, x);
  fmmcl_test_random_values(1901, n, -1, 1, q);
  fmmcl_plan plan = make_plan(&o, n, x, 0, NULL);
  for (int k = 0; k < 3; k++) {
    q[n - 1] = bad_values[k];
    ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, grad), FMMCL_ERROR_NONFINITE_INPUT);
    ck_assert_str_ne(fmmcl_last_error(ctx), "");
    ck_assert_msg(all_equal(pot, n, SENTINEL) && all_equal(grad, 3 * n, SENTINEL), "outputs touched");
  }
  fmmcl_plan_destroy(plan);
  free(x);
  free(q);
  free(pot);
  free(grad);
}
END_TEST

START_TEST(test_empty_input) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  double x[6] = {0, 0, 0, 1, 1, 1}, y[3] = {0.5, 0.5, 0.5};
  expect_create_fails(&o, 0, x, 0, NULL, FMMCL_ERROR_EMPTY_INPUT, "no sources");
  expect_create_fails(&o, 0, x, 1, y, FMMCL_ERROR_EMPTY_INPUT, "no sources, one target");
  expect_create_fails(&o, 2, x, 0, y, FMMCL_ERROR_EMPTY_INPUT, "a target array of 0 targets");
  /* targets NULL: n_targets is ignored */
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 2, x, 0, NULL, &plan), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
}
END_TEST

START_TEST(test_bad_options) {
  const size_t n = 4;
  double x[4 * 16];
  fmmcl_test_grid_points(2000, n, 16, x); /* room for any dim */
  const double bad_sigma[] = {-1.0, 0.0, NAN, INFINITY};
  for (int k = 0; k < 4; k++) {
    fmmcl_plan_options o = options(FMMCL_GAUSSIAN, FMMCL_SINGLE, 3);
    o.sigma = bad_sigma[k];
    expect_create_fails(&o, n, x, 0, NULL, FMMCL_ERROR_INVALID_ARGUMENT, "bad sigma");
  }
  const double bad_eps[] = {-1e-3, NAN, INFINITY};
  for (int k = 0; k < 3; k++) {
    fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
    o.softening = bad_eps[k];
    expect_create_fails(&o, n, x, 0, NULL, FMMCL_ERROR_INVALID_ARGUMENT, "bad softening");
  }
  const double bad_kappa[] = {-1e-3, NAN, INFINITY};
  for (int k = 0; k < 3; k++) {
    fmmcl_plan_options o = options(FMMCL_YUKAWA_3D, FMMCL_SINGLE, 3);
    o.kernel_param = bad_kappa[k];
    expect_create_fails(&o, n, x, 0, NULL, FMMCL_ERROR_INVALID_ARGUMENT, "bad kappa");
    o = options(FMMCL_YUKAWA_3D, FMMCL_SINGLE, 3);
    o.softening = bad_eps[k];
    expect_create_fails(&o, n, x, 0, NULL, FMMCL_ERROR_INVALID_ARGUMENT, "bad Yukawa softening");
  }
  const int bad_gauss_dim[] = {0, 9, -1};
  for (int k = 0; k < 3; k++) {
    fmmcl_plan_options o = options(FMMCL_GAUSSIAN, FMMCL_SINGLE, bad_gauss_dim[k]);
    expect_create_fails(&o, n, x, 0, NULL, FMMCL_ERROR_INVALID_ARGUMENT, "Gaussian dim");
  }
  const int bad_laplace_dim[] = {2, 4, 0};
  for (int k = 0; k < 3; k++) {
    fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
    o.dim = bad_laplace_dim[k];
    expect_create_fails(&o, n, x, 0, NULL, FMMCL_ERROR_INVALID_ARGUMENT, "Laplace dim");
  }
  const int bad_enum[] = {99, -1};
  for (int k = 0; k < 2; k++) {
    fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
    o.kernel = (fmmcl_kernel)bad_enum[k];
    expect_create_fails(&o, n, x, 0, NULL, FMMCL_ERROR_INVALID_ARGUMENT, "unknown kernel");
    o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
    o.method = (fmmcl_method)bad_enum[k];
    expect_create_fails(&o, n, x, 0, NULL, FMMCL_ERROR_INVALID_ARGUMENT, "unknown method");
    o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
    o.precision = (fmmcl_precision)bad_enum[k];
    expect_create_fails(&o, n, x, 0, NULL, FMMCL_ERROR_INVALID_ARGUMENT, "unknown precision");
  }
}
END_TEST

/* Combinations that are valid but stay unavailable: no 2D Laplace
 * treecode, and the fast Gauss transform is for the Gaussian only.
 * (The 2D Laplace direct sum and FMM are tested in check_fmm2d.) */
START_TEST(test_unsupported) {
  double x[3 * 4];
  fmmcl_test_grid_points(2100, 4, 3, x);
  fmmcl_plan_options o = options(FMMCL_LAPLACE_2D, FMMCL_SINGLE, 2);
  ck_assert_int_eq(o.dim, 2);
  o.method = FMMCL_TREECODE;
  expect_create_fails(&o, 4, x, 0, NULL, FMMCL_ERROR_UNSUPPORTED, "LAPLACE_2D treecode");
  /* the message names the method and kernel asked for and what would work */
  const char *msg = fmmcl_last_error(ctx);
  ck_assert_msg(strstr(msg, "treecode") && strstr(msg, "LAPLACE_2D") && strstr(msg, "LAPLACE_3D"), "%s", msg);
  o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  o.method = FMMCL_FGT;
  expect_create_fails(&o, 4, x, 0, NULL, FMMCL_ERROR_UNSUPPORTED, "FGT of LAPLACE_3D");
  msg = fmmcl_last_error(ctx);
  ck_assert_msg(strstr(msg, "fgt") && strstr(msg, "LAPLACE_3D") && strstr(msg, "GAUSSIAN"), "%s", msg);
}
END_TEST

/* fmmcl.h promises an error bound of 0 for every direct plan, the bbFMM's
 * functions summed directly (DIRECT with bbfmm_kernel set) included. */
START_TEST(test_direct_error_bound) {
  const size_t n = 40;
  double x[3 * 40];
  fmmcl_test_grid_points(2200, n, 3, x);
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  if (_i == 1) { /* Yukawa exp(-2 r)/r, potential only */
    o.bbfmm_kernel = FMMCL_BBFMM_YUKAWA;
    o.kernel_param = 2.0;
    o.gradient = 0;
  }
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  double bound = -1;
  fmmcl_status st = fmmcl_plan_error_bound(plan, &bound);
  ck_assert_msg(st == FMMCL_SUCCESS, "%s direct: %s (%s)", _i ? "bbFMM yukawa" : "laplace3d",
                fmmcl_strerror(st), fmmcl_last_error(ctx));
  ck_assert(bound == 0.0);
  fmmcl_plan_destroy(plan);
}
END_TEST

/* ---- names and the registry (no device) ------------------------------------ */

/* Every enum value, its name (the command line's), and back; the value
 * past the last is "unknown", so a new member without a name fails here. */
START_TEST(test_kernel_names) {
  static const struct {
    fmmcl_kernel k;
    const char *name;
  } all[] = {{FMMCL_LAPLACE_3D, "laplace3d"},
             {FMMCL_GAUSSIAN, "gaussian"},
             {FMMCL_LAPLACE_2D, "laplace2d"},
             {FMMCL_YUKAWA_3D, "yukawa3d"},
             {FMMCL_HELMHOLTZ_3D, "helmholtz3d"},
             {FMMCL_STOKES_3D, "stokes3d"}};
  const size_t n = sizeof all / sizeof all[0];
  for (size_t i = 0; i < n; i++) {
    ck_assert_str_eq(fmmcl_kernel_name(all[i].k), all[i].name);
    fmmcl_kernel back = (fmmcl_kernel)-7;
    ck_assert_int_eq(fmmcl_kernel_parse(fmmcl_kernel_name(all[i].k), &back), FMMCL_SUCCESS);
    ck_assert_int_eq(back, all[i].k);
  }
  ck_assert_str_eq(fmmcl_kernel_name((fmmcl_kernel)n), "unknown");
  ck_assert_str_eq(fmmcl_kernel_name((fmmcl_kernel)-1), "unknown");
}
END_TEST

START_TEST(test_method_names) {
  static const struct {
    fmmcl_method m;
    const char *name;
  } all[] = {{FMMCL_DIRECT, "direct"}, {FMMCL_TREECODE, "treecode"}, {FMMCL_FMM, "fmm"},
             {FMMCL_FGT, "fgt"},       {FMMCL_BBFMM, "bbfmm"},       {FMMCL_AUTO, "auto"},
             {FMMCL_CUTOFF, "cutoff"}};
  const size_t n = sizeof all / sizeof all[0];
  for (size_t i = 0; i < n; i++) {
    ck_assert_str_eq(fmmcl_method_name(all[i].m), all[i].name);
    fmmcl_method back = (fmmcl_method)-7;
    ck_assert_int_eq(fmmcl_method_parse(fmmcl_method_name(all[i].m), &back), FMMCL_SUCCESS);
    ck_assert_int_eq(back, all[i].m);
  }
  ck_assert_str_eq(fmmcl_method_name((fmmcl_method)n), "unknown");
  ck_assert_str_eq(fmmcl_method_name((fmmcl_method)-1), "unknown");
}
END_TEST

START_TEST(test_bbfmm_kernel_names) {
  static const struct {
    fmmcl_bbfmm_kernel k;
    const char *name;
  } all[] = {{FMMCL_BBFMM_PLAN_KERNEL, "plan_kernel"},
             {FMMCL_BBFMM_LAPLACE, "laplace"},
             {FMMCL_BBFMM_INV_R2, "inv_r2"},
             {FMMCL_BBFMM_GAUSSIAN, "gaussian"},
             {FMMCL_BBFMM_MULTIQUADRIC, "multiquadric"},
             {FMMCL_BBFMM_INV_MULTIQUADRIC, "inverse_multiquadric"},
             {FMMCL_BBFMM_YUKAWA, "yukawa"},
             {FMMCL_BBFMM_USER, "user"}};
  const size_t n = sizeof all / sizeof all[0];
  for (size_t i = 0; i < n; i++) {
    ck_assert_str_eq(fmmcl_bbfmm_kernel_name(all[i].k), all[i].name);
    fmmcl_bbfmm_kernel back = (fmmcl_bbfmm_kernel)-7;
    ck_assert_int_eq(fmmcl_bbfmm_kernel_parse(fmmcl_bbfmm_kernel_name(all[i].k), &back), FMMCL_SUCCESS);
    ck_assert_int_eq(back, all[i].k);
  }
  ck_assert_str_eq(fmmcl_bbfmm_kernel_name((fmmcl_bbfmm_kernel)n), "unknown");
  ck_assert_str_eq(fmmcl_bbfmm_kernel_name((fmmcl_bbfmm_kernel)-1), "unknown");
}
END_TEST

/* Names are exact: other spellings, "unknown" itself and "" fail with the
 * valid names in the message and leave *out alone; NULL is NULL_POINTER. */
START_TEST(test_parse_unknown) {
  static const char *const bad[] = {"unknown",    "",      "LAPLACE_3D", "Laplace3d",
                                    "laplace3d ", "fmm3d", "bessel"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    fmmcl_kernel k = (fmmcl_kernel)-7;
    ck_assert_int_eq(fmmcl_kernel_parse(bad[i], &k), FMMCL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq((int)k, -7);
    ck_assert_msg(strstr(fmmcl_last_error(NULL), "laplace2d"), "%s", fmmcl_last_error(NULL));
    fmmcl_method m = (fmmcl_method)-7;
    ck_assert_int_eq(fmmcl_method_parse(bad[i], &m), FMMCL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq((int)m, -7);
    ck_assert_msg(strstr(fmmcl_last_error(NULL), "treecode"), "%s", fmmcl_last_error(NULL));
    fmmcl_bbfmm_kernel b = (fmmcl_bbfmm_kernel)-7;
    ck_assert_int_eq(fmmcl_bbfmm_kernel_parse(bad[i], &b), FMMCL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq((int)b, -7);
    ck_assert_msg(strstr(fmmcl_last_error(NULL), "yukawa"), "%s", fmmcl_last_error(NULL));
  }
  fmmcl_kernel k;
  fmmcl_method m;
  fmmcl_bbfmm_kernel b;
  ck_assert_int_eq(fmmcl_kernel_parse(NULL, &k), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_kernel_parse("gaussian", NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_method_parse(NULL, &m), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_method_parse("fmm", NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_bbfmm_kernel_parse(NULL, &b), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_bbfmm_kernel_parse("user", NULL), FMMCL_ERROR_NULL_POINTER);
}
END_TEST

/* Every row's ops is complete and named once; each kernel's row describes
 * that kernel; the lookup picks the bbFMM's direct sum only when a bbFMM
 * function is named. */
START_TEST(test_registry_rows) {
  size_t n;
  const fmmcl_method_row *rows = fmmcl_method_rows(&n);
  ck_assert_uint_gt(n, 0);
  for (size_t i = 0; i < n; i++) {
    const fmmcl_method_ops *ops = rows[i].ops;
    ck_assert_ptr_nonnull(ops);
    ck_assert_msg(ops->name && ops->create && ops->execute && ops->destroy, "row %zu incomplete", i);
    ck_assert_str_ne(fmmcl_method_name(rows[i].method), "unknown");
    for (size_t j = 0; j < i; j++)
      ck_assert_msg(strcmp(rows[j].ops->name, ops->name) != 0 || rows[j].ops == ops, "two ops named %s",
                    ops->name);
  }
  for (int k = 0; k <= FMMCL_STOKES_3D; k++) {
    const fmmcl_kernel_desc *d = fmmcl_kernel_describe((fmmcl_kernel)k);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(d->kernel, k);
    ck_assert_str_eq(d->name, fmmcl_kernel_name((fmmcl_kernel)k));
    ck_assert_msg(d->dim_min >= 1 && d->dim_min <= d->default_dim && d->default_dim <= d->dim_max &&
                      d->dim_max <= FMMCL_MAX_DIM,
                  "%s: dims", d->name);
    /* the ext kernels' reference is fmmcl_reference_evaluate's */
    ck_assert_msg(d->p2p_kernel && (d->reference || d->ext), "%s: no pair kernel or reference", d->name);
  }
  ck_assert_ptr_null(fmmcl_kernel_describe((fmmcl_kernel)(FMMCL_STOKES_3D + 1)));
  ck_assert_ptr_null(fmmcl_kernel_describe((fmmcl_kernel)-1));
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  const fmmcl_method_ops *ops;
  ck_assert_int_eq(fmmcl_method_lookup(NULL, &o, &ops), FMMCL_SUCCESS);
  ck_assert_str_eq(ops->name, "direct");
  o.bbfmm_kernel = FMMCL_BBFMM_YUKAWA;
  ck_assert_int_eq(fmmcl_method_lookup(NULL, &o, &ops), FMMCL_SUCCESS);
  ck_assert_str_eq(ops->name, "bbfmm_direct");
  o.method = (fmmcl_method)99;
  ck_assert_int_eq(fmmcl_method_lookup(NULL, &o, &ops), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_null(ops);
  /* YUKAWA_3D: the direct sum and the bbFMM */
  fmmcl_plan_options_init(&o, FMMCL_YUKAWA_3D);
  ck_assert_int_eq(fmmcl_method_lookup(NULL, &o, &ops), FMMCL_SUCCESS);
  ck_assert_str_eq(ops->name, "direct");
  o.method = FMMCL_BBFMM;
  ck_assert_int_eq(fmmcl_method_lookup(NULL, &o, &ops), FMMCL_SUCCESS);
  ck_assert_ptr_eq(ops, &fmmcl_bbfmm_ops);
}
END_TEST

/* What AUTO becomes for YUKAWA_3D: the direct sum below 2^26 pairs; above,
 * the bbFMM when it can give what is asked (the potential, unsoftened),
 * else still the direct sum. */
START_TEST(test_yukawa_auto_rule) {
  fmmcl_plan_options o, r;
  fmmcl_plan_options_init(&o, FMMCL_YUKAWA_3D);
  o.method = FMMCL_AUTO;
  o.kernel_param = 2;
  const double x[3] = {0, 0, 0}; /* not read by the rule */
  const struct {
    size_t n;
    int gradient;
    double eps;
    fmmcl_method want;
  } cases[] = {{5000, 1, 0, FMMCL_DIRECT}, {5000, 0, 0, FMMCL_DIRECT},   {9000, 0, 0, FMMCL_BBFMM},
               {9000, 1, 0, FMMCL_DIRECT}, {9000, 0, 0.1, FMMCL_DIRECT}, {1u << 20, 0, 0, FMMCL_BBFMM}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    o.gradient = cases[i].gradient;
    o.softening = cases[i].eps;
    ck_assert_int_eq(fmmcl_model_resolve(NULL, &o, cases[i].n, x, 0, NULL, &r), FMMCL_SUCCESS);
    ck_assert_msg(r.method == cases[i].want, "N = %zu, gradient %d, eps %g: method %s", cases[i].n,
                  cases[i].gradient, cases[i].eps, fmmcl_method_name(r.method));
  }
}
END_TEST

/* Beyond the range of float after the centre shift: refused, not inf. */
START_TEST(test_float_range) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  double x[6] = {-1e39, 0, 0, 1e39, 0, 0};
  expect_create_fails(&o, 2, x, 0, NULL, FMMCL_ERROR_INVALID_ARGUMENT, "float overflow");
}
END_TEST

START_TEST(test_null_arguments) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  double x[6] = {0, 0, 0, 1, 1, 1}, q[2] = {1, 1};
  double pot[2] = {SENTINEL, SENTINEL},
         grad[6] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL, SENTINEL, SENTINEL};
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(NULL, &o, 2, x, 0, NULL, &plan), FMMCL_ERROR_NULL_POINTER);
  ck_assert_str_ne(fmmcl_last_error(NULL), "");
  ck_assert_ptr_null(plan);
  expect_create_fails(NULL, 2, x, 0, NULL, FMMCL_ERROR_NULL_POINTER, "NULL options");
  expect_create_fails(&o, 2, NULL, 0, NULL, FMMCL_ERROR_NULL_POINTER, "NULL sources");
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 2, x, 0, NULL, NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_str_ne(fmmcl_last_error(ctx), "");
  ck_assert_int_eq(fmmcl_plan_options_init(NULL, FMMCL_LAPLACE_3D), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_execute(NULL, q, pot, grad), FMMCL_ERROR_NULL_POINTER);
  ck_assert_str_ne(fmmcl_last_error(NULL), "");
  plan = make_plan(&o, 2, x, 0, NULL);
  ck_assert_int_eq(fmmcl_plan_execute(plan, NULL, pot, grad), FMMCL_ERROR_NULL_POINTER);
  ck_assert_str_ne(fmmcl_last_error(ctx), "");
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, NULL, grad), FMMCL_ERROR_NULL_POINTER);
  ck_assert_str_ne(fmmcl_last_error(ctx), "");
  ck_assert(all_equal(pot, 2, SENTINEL) && all_equal(grad, 6, SENTINEL));
  fmmcl_plan_destroy(plan);
  ck_assert_int_eq(fmmcl_plan_destroy(NULL), FMMCL_SUCCESS);
}
END_TEST

/* The reference refuses what a plan refuses, with the outputs untouched. */
static void expect_reference_fails(const fmmcl_plan_options *o, size_t ns, const double *src, const double *q,
                                   size_t nt, const double *tgt, int with_potential, fmmcl_status want,
                                   const char *what) {
  double pot[8], grad[64];
  for (int i = 0; i < 8; i++) pot[i] = SENTINEL;
  for (int i = 0; i < 64; i++) grad[i] = SENTINEL;
  fmmcl_status st = fmmcl_reference_direct(o, ns, src, q, nt, tgt, with_potential ? pot : NULL, grad);
  ck_assert_msg(st == want, "reference, %s: got \"%s\", want \"%s\"", what, fmmcl_strerror(st),
                fmmcl_strerror(want));
  ck_assert_msg(fmmcl_last_error(NULL)[0] != '\0', "reference, %s: no message", what);
  ck_assert_msg(all_equal(pot, 8, SENTINEL) && all_equal(grad, 64, SENTINEL),
                "reference, %s: outputs touched", what);
}

START_TEST(test_reference_bad_input) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  double x[3 * 4], y[3 * 4], q[4] = {1, -1, 0.5, 2};
  fmmcl_test_grid_points(2200, 4, 3, x);
  fmmcl_test_grid_points(2201, 4, 3, y);
  expect_reference_fails(NULL, 4, x, q, 0, NULL, 1, FMMCL_ERROR_NULL_POINTER, "NULL options");
  expect_reference_fails(&o, 4, NULL, q, 0, NULL, 1, FMMCL_ERROR_NULL_POINTER, "NULL sources");
  expect_reference_fails(&o, 4, x, NULL, 0, NULL, 1, FMMCL_ERROR_NULL_POINTER, "NULL charges");
  expect_reference_fails(&o, 4, x, q, 0, NULL, 0, FMMCL_ERROR_NULL_POINTER, "NULL potential");
  expect_reference_fails(&o, 0, x, q, 0, NULL, 1, FMMCL_ERROR_EMPTY_INPUT, "no sources");
  expect_reference_fails(&o, 4, x, q, 0, y, 1, FMMCL_ERROR_EMPTY_INPUT, "0 targets");
  for (int k = 0; k < 3; k++) {
    x[5] = bad_values[k];
    expect_reference_fails(&o, 4, x, q, 0, NULL, 1, FMMCL_ERROR_NONFINITE_INPUT, "bad source");
    x[5] = 0.5;
    y[7] = bad_values[k];
    expect_reference_fails(&o, 4, x, q, 4, y, 1, FMMCL_ERROR_NONFINITE_INPUT, "bad target");
    y[7] = 0.5;
    q[3] = bad_values[k];
    expect_reference_fails(&o, 4, x, q, 0, NULL, 1, FMMCL_ERROR_NONFINITE_INPUT, "bad charge");
    q[3] = 2;
  }
  o.softening = -1;
  expect_reference_fails(&o, 4, x, q, 0, NULL, 1, FMMCL_ERROR_INVALID_ARGUMENT, "negative softening");
  o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  o.dim = 2;
  expect_reference_fails(&o, 4, x, q, 0, NULL, 1, FMMCL_ERROR_INVALID_ARGUMENT, "Laplace dim 2");
  o = options(FMMCL_GAUSSIAN, FMMCL_SINGLE, 3);
  o.sigma = 0;
  expect_reference_fails(&o, 4, x, q, 0, NULL, 1, FMMCL_ERROR_INVALID_ARGUMENT, "sigma 0");
  o = options(FMMCL_GAUSSIAN, FMMCL_SINGLE, 9);
  expect_reference_fails(&o, 1, x, q, 0, NULL, 1, FMMCL_ERROR_INVALID_ARGUMENT, "Gaussian dim 9");
  o = options(FMMCL_LAPLACE_3D, FMMCL_SINGLE, 3);
  o.kernel = (fmmcl_kernel)99;
  expect_reference_fails(&o, 4, x, q, 0, NULL, 1, FMMCL_ERROR_INVALID_ARGUMENT, "unknown kernel");
  o = options(FMMCL_LAPLACE_2D, FMMCL_SINGLE, 2);
  o.dim = 3;
  expect_reference_fails(&o, 4, x, q, 0, NULL, 1, FMMCL_ERROR_INVALID_ARGUMENT, "LAPLACE_2D dim 3");
  o = options(FMMCL_YUKAWA_3D, FMMCL_SINGLE, 3);
  o.kernel_param = -2;
  expect_reference_fails(&o, 4, x, q, 0, NULL, 1, FMMCL_ERROR_INVALID_ARGUMENT, "negative kappa");
  o.kernel_param = NAN;
  expect_reference_fails(&o, 4, x, q, 0, NULL, 1, FMMCL_ERROR_INVALID_ARGUMENT, "NaN kappa");
}
END_TEST

/* ---- the suite ------------------------------------------------------------ */

static TCase *device_case(const char *name) {
  TCase *tc = tcase_create(name);
  tcase_add_checked_fixture(tc, open_device, close_device);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(tc, 300); /* cold kernel builds */
  return tc;
}

static Suite *direct_suite(void) {
  Suite *s = suite_create("direct");
  TCase *lap = device_case("laplace3d");
  tcase_add_loop_test(lap, test_laplace_sizes, 0, 2 * N_SIZES);
  tcase_add_loop_test(lap, test_laplace_sources_not_targets, 0, 2);
  tcase_add_loop_test(lap, test_laplace_single_point, 0, 2);
  tcase_add_loop_test(lap, test_laplace_two_points, 0, 2);
  tcase_add_loop_test(lap, test_laplace_momentum, 0, 2);
  tcase_add_loop_test(lap, test_laplace_far_from_origin, 0, 4);
  tcase_add_loop_test(lap, test_laplace_softening, 0, 2);
  tcase_add_loop_test(lap, test_laplace_coincident, 0, 2);
  tcase_add_test(lap, test_laplace_float_twins);
  suite_add_tcase(s, lap);

  TCase *yuk = device_case("yukawa3d");
  tcase_add_loop_test(yuk, test_yukawa_vs_reference, 0, 2 * N_KAPPAS);
  tcase_add_loop_test(yuk, test_yukawa_kappa_zero, 0, 2);
  tcase_add_loop_test(yuk, test_yukawa_two_points, 0, 2);
  tcase_add_loop_test(yuk, test_yukawa_reference_gradient, 0, 3);
  tcase_add_test(yuk, test_yukawa_auto_small);
  suite_add_tcase(s, yuk);

  TCase *gauss = device_case("gaussian");
  tcase_add_loop_test(gauss, test_gaussian_dims, 0, 2 * N_GAUSS_DIMS);
  tcase_add_loop_test(gauss, test_gaussian_single_point, 0, 2);
  tcase_add_loop_test(gauss, test_gaussian_two_points, 0, 2);
  suite_add_tcase(s, gauss);

  TCase *plans = device_case("plans");
  tcase_add_loop_test(plans, test_plan_reuse, 0, 2);
  tcase_add_test(plans, test_gradient_optional);
  tcase_add_test(plans, test_phase_timings);
  tcase_add_loop_test(plans, test_build_options, 0, 4);
  tcase_add_loop_test(plans, test_override_tilings, 0, 2 * N_TILINGS);
  tcase_add_test(plans, test_override_invalid);
  tcase_add_loop_test(plans, test_direct_error_bound, 0, 2);
  suite_add_tcase(s, plans);

  TCase *names = tcase_create("names");
  tcase_add_test(names, test_kernel_names);
  tcase_add_test(names, test_method_names);
  tcase_add_test(names, test_bbfmm_kernel_names);
  tcase_add_test(names, test_parse_unknown);
  tcase_add_test(names, test_registry_rows);
  tcase_add_test(names, test_yukawa_auto_rule);
  suite_add_tcase(s, names);

  TCase *bad = device_case("bad_input");
  tcase_add_loop_test(bad, test_nonfinite_points, 0, 6);
  tcase_add_test(bad, test_nonfinite_charges);
  tcase_add_test(bad, test_empty_input);
  tcase_add_test(bad, test_bad_options);
  tcase_add_test(bad, test_unsupported);
  tcase_add_test(bad, test_float_range);
  tcase_add_test(bad, test_null_arguments);
  tcase_add_test(bad, test_reference_bad_input);
  suite_add_tcase(s, bad);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(direct_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
