/* check_helmholtz_fmm.c — the 3D Helmholtz FMM (spherical-wave expansions)
 * against the plain-C double reference over all targets: real, complex
 * and imaginary wavenumbers, charges and dipoles, potential and gradient,
 * float and double, uniform, clustered and surface sets; the error falling
 * with the tolerance, the batched M2L against plain C, what FMMCL_AUTO
 * becomes, and the plans it refuses. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmmcl.h"
#include "methods/helmholtz3d/hfmm.h" /* fmmcl_hfmm_debug_m2l: the batched M2L under test */
#include "model/model.h"              /* fmmcl_model_resolve: what AUTO becomes */
#include "testing/distributions.h"
#include "test_util.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static fmmcl_context ctx;

static double *values(size_t n, unsigned seed) {
  double *p = malloc(n * sizeof *p);
  ck_assert_ptr_nonnull(p);
  fmmcl_test_random_values(seed, n, -1, 1, p);
  return p;
}

/* One FMM run against the reference: relative L2 errors over all targets
 * of the potential and the gradient, and the order the plan chose. */
typedef struct {
  double k_re, k_im;
  fmmcl_precision prec;
  fmmcl_distribution dist;
  int dipoles, separate; /* dipoles as well as charges; targets apart from the sources */
  double tol;
  size_t n;
} run;

typedef struct {
  double pot, grad;
  int order;
} result;

static result run_fmm(const run *r) {
  const size_t n = r->n, m = r->separate ? n / 2 : n;
  double *src = malloc(3 * n * sizeof *src), *tgt = NULL;
  ck_assert_ptr_nonnull(src);
  ck_assert_int_eq(fmmcl_distribution_points(r->dist, 3, 5u, n, 0.0, src), 0);
  if (r->separate) {
    tgt = malloc(3 * m * sizeof *tgt);
    ck_assert_ptr_nonnull(tgt);
    ck_assert_int_eq(fmmcl_distribution_points(FMMCL_DIST_UNIFORM, 3, 99, m, -0.5, tgt), 0);
  }
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
  o.method = FMMCL_FMM;
  o.precision = r->prec;
  o.gradient = 1;
  o.dipoles = r->dipoles;
  o.wavenumber_re = r->k_re;
  o.wavenumber_im = r->k_im;
  o.tolerance = r->tol;
  /* small leaves, so that these small sets have every far-field list (the
   * default leaves, 20 p points, would leave them mostly near field) */
  o.leaf_size = 32;
  fmmcl_sources_data in = {0};
  in.complex_charges = values(2 * n, 13);
  if (r->dipoles) in.complex_dipoles = values(6 * n, 14);
  double *pot = malloc(2 * m * sizeof(double)), *grad = malloc(6 * m * sizeof(double));
  double *rpot = malloc(2 * m * sizeof(double)), *rgrad = malloc(6 * m * sizeof(double));
  ck_assert(pot && grad && rpot && rgrad);
  fmmcl_targets_data dev = {0}, ref = {0};
  dev.complex_potential = pot, dev.complex_gradient = grad;
  ref.complex_potential = rpot, ref.complex_gradient = rgrad;
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, src, m, tgt, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert_msg(fmmcl_plan_evaluate(plan, &in, &dev) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
  fmmcl_plan_info info;
  result res = {0};
  if (fmmcl_plan_describe(plan, &info) == FMMCL_SUCCESS) res.order = info.order;
  fmmcl_plan_destroy(plan);
  ck_assert_msg(fmmcl_reference_evaluate(&o, n, src, &in, m, tgt, &ref) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(NULL));
  res.pot = fmmcl_test_rel_l2(pot, rpot, 2 * m);
  res.grad = fmmcl_test_rel_l2(grad, rgrad, 6 * m);
  free(src), free(tgt), free(pot), free(grad), free(rpot), free(rgrad);
  free((void *)in.complex_charges), free((void *)in.complex_dipoles);
  return res;
}

static const char *dist_name(fmmcl_distribution d) {
  return d == FMMCL_DIST_UNIFORM ? "uniform" : d == FMMCL_DIST_CLUSTERS ? "clusters" : "surface";
}

/* ---- against the reference ---------------------------------------------------- */

/* k real, complex, imaginary x uniform, clustered, surface (the surface's
 * targets a separate uniform set); dipoles with the charges in every other
 * case. The tolerance bounds the relative L2 error over all targets of the
 * potential and of the gradient. */
static const double ks[3][2] = {{6.0, 0}, {4.0, 1.5}, {0, 5.0}};
static const fmmcl_distribution dists[3] = {FMMCL_DIST_UNIFORM, FMMCL_DIST_CLUSTERS, FMMCL_DIST_SURFACE};
#define N_POINTS 1500

static void check_case(int i, fmmcl_precision prec, double tol) {
  const run r = {ks[i / 3][0], ks[i / 3][1], prec, dists[i % 3], i % 2, dists[i % 3] == FMMCL_DIST_SURFACE,
                 tol,          N_POINTS};
  const result e = run_fmm(&r);
  fprintf(stderr,
          "helmholtz fmm %s k = %g%+gi %s%s: order %d, potential %.2e, gradient %.2e (tolerance %g)\n",
          prec == FMMCL_DOUBLE ? "double" : "float", r.k_re, r.k_im, dist_name(r.dist),
          r.dipoles ? " +dipoles" : "", e.order, e.pot, e.grad, tol);
  ck_assert_msg(e.pot <= tol, "potential error %g over %g", e.pot, tol);
  ck_assert_msg(e.grad <= tol, "gradient error %g over %g", e.grad, tol);
}

START_TEST(test_double) { check_case(_i, FMMCL_DOUBLE, 1e-6); }
END_TEST

START_TEST(test_float) { check_case(_i, FMMCL_SINGLE, 1e-4); }
END_TEST

/* The error falls with the tolerance and stays under each (double). */
START_TEST(test_error_falls) {
  const double tols[3] = {1e-3, 1e-5, 1e-8};
  double last = 1;
  int last_order = 0;
  for (int t = 0; t < 3; t++) {
    const run r = {3.0, 0.5, FMMCL_DOUBLE, FMMCL_DIST_UNIFORM, 0, 0, tols[t], 1000};
    const result e = run_fmm(&r);
    fprintf(stderr, "helmholtz fmm tolerance %g: order %d, potential %.2e, gradient %.2e\n", tols[t], e.order,
            e.pot, e.grad);
    ck_assert_msg(e.pot <= tols[t] && e.grad <= tols[t], "tolerance %g: errors %g %g", tols[t], e.pot,
                  e.grad);
    ck_assert(e.pot < last && e.order > last_order);
    last = e.pot, last_order = e.order;
  }
}
END_TEST

/* k = i kappa is the Yukawa kernel exp(-kappa r) / r: the FMM's complex
 * potential against the real direct Yukawa sum of the real charges. */
START_TEST(test_imaginary_k_is_yukawa) {
  const size_t n = 1500;
  double *src = malloc(3 * n * sizeof *src), *q = values(n, 21), *cq = calloc(2 * n, sizeof(double));
  double *pot = malloc(2 * n * sizeof(double)), *ypot = malloc(n * sizeof(double));
  ck_assert(src && cq && pot && ypot);
  ck_assert_int_eq(fmmcl_distribution_points(FMMCL_DIST_CLUSTERS, 3, 23u, n, 0.0, src), 0);
  for (size_t i = 0; i < n; i++) cq[2 * i] = q[i];
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
  o.method = FMMCL_FMM;
  o.precision = FMMCL_DOUBLE;
  o.wavenumber_im = 3.0;
  o.tolerance = 1e-6;
  o.leaf_size = 32;
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, src, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  fmmcl_sources_data in = {.complex_charges = cq};
  fmmcl_targets_data out = {.complex_potential = pot};
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &in, &out), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  fmmcl_plan_options_init(&o, FMMCL_YUKAWA_3D);
  o.method = FMMCL_DIRECT;
  o.precision = FMMCL_DOUBLE;
  o.kernel_param = 3.0;
  o.gradient = 0;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, src, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, ypot, NULL), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  double err = 0, ref = 0;
  for (size_t i = 0; i < n; i++) {
    err += (pot[2 * i] - ypot[i]) * (pot[2 * i] - ypot[i]) + pot[2 * i + 1] * pot[2 * i + 1];
    ref += ypot[i] * ypot[i];
  }
  fprintf(stderr, "helmholtz fmm k = 3i against direct Yukawa: %.2e\n", sqrt(err / ref));
  ck_assert_msg(sqrt(err / ref) <= 1e-6, "against Yukawa: %g", sqrt(err / ref));
  free(src), free(q), free(cq), free(pot), free(ypot);
}
END_TEST

/* ---- the batched M2L against plain C ---------------------------------------------- */

/* Every V pair of a clustered set (cells of several levels, every position
 * in a parent, partial groups, polar angles either side of pi/2), k
 * damped: the device's batched translations against the plain-C ones
 * made per pair in double. What differs is rounding: the operators' and
 * the sums' (a few hundred terms), about 1e-13 relative in double and
 * 1e-6 in float. */
START_TEST(test_m2l_batched) {
  const size_t n = 1500;
  double *src = malloc(3 * n * sizeof *src);
  ck_assert_ptr_nonnull(src);
  ck_assert_int_eq(fmmcl_distribution_points(FMMCL_DIST_CLUSTERS, 3, 7u, n, 0.0, src), 0);
  for (int single = 0; single < 2; single++) {
    fmmcl_plan_options o;
    fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
    o.method = FMMCL_FMM;
    o.precision = single ? FMMCL_SINGLE : FMMCL_DOUBLE;
    o.wavenumber_re = 4, o.wavenumber_im = 1.5;
    o.order = 10;
    o.leaf_size = 32;
    fmmcl_plan plan;
    ck_assert_msg(fmmcl_plan_create(ctx, &o, n, src, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                  fmmcl_last_error(ctx));
    double err;
    ck_assert_msg(fmmcl_hfmm_debug_m2l(plan, 5u, &err) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
    fmmcl_plan_destroy(plan);
    fprintf(stderr, "helmholtz batched m2l %s: %.2e\n", single ? "float" : "double", err);
    ck_assert_msg(err <= (single ? 1e-4 : 1e-10), "batched M2L off by %g", err);
  }
  free(src);
}
END_TEST

/* ---- what FMMCL_AUTO becomes ------------------------------------------------------ */

/* The FMM above its pairs threshold where its order rule accepts the
 * points' cube; the direct sum below it, at k = 0 (the FMM's refusal) and
 * at high frequency (the unit cube at 100 wavelengths). */
START_TEST(test_auto) {
  const size_t big = 1u << 15, small = 5000;
  double *x = malloc(3 * big * sizeof *x);
  ck_assert_ptr_nonnull(x);
  fmmcl_test_random_points(41, big, 3, x);
  fmmcl_plan_options o, r;
  fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
  o.method = FMMCL_AUTO;
  o.precision = FMMCL_DOUBLE;
  const struct {
    size_t n;
    double k_re, k_im;
    int dipoles;
    fmmcl_method want;
  } cases[] = {{big, 1, 0, 0, FMMCL_FMM},
               {big, 1, 0.5, 1, FMMCL_FMM},
               {small, 1, 0, 0, FMMCL_DIRECT},
               {big, 2 * M_PI * 100, 0, 0, FMMCL_DIRECT},
               {big, 0, 0, 0, FMMCL_DIRECT}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    o.wavenumber_re = cases[i].k_re, o.wavenumber_im = cases[i].k_im, o.dipoles = cases[i].dipoles;
    ck_assert_int_eq(fmmcl_model_resolve(NULL, &o, cases[i].n, x, 0, NULL, &r), FMMCL_SUCCESS);
    ck_assert_msg(r.method == cases[i].want, "N = %zu, k = %g%+gi: method %s", cases[i].n, cases[i].k_re,
                  cases[i].k_im, fmmcl_method_name(r.method));
  }
  /* through the public API: a small plan is the direct sum, and says so */
  o.wavenumber_re = 1, o.wavenumber_im = 0, o.dipoles = 0;
  ck_assert_int_eq(fmmcl_test_resolved_method(ctx, &o, 500, x), FMMCL_DIRECT);
  free(x);
}
END_TEST

/* ---- what it refuses ------------------------------------------------------------- */

static fmmcl_status create_with(double k_re, double k_im, fmmcl_precision prec, fmmcl_plan *plan) {
  const size_t n = 500;
  double *src = malloc(3 * n * sizeof *src);
  ck_assert_ptr_nonnull(src);
  fmmcl_test_random_points(31, n, 3, src);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_HELMHOLTZ_3D);
  o.method = FMMCL_FMM;
  o.precision = prec;
  o.wavenumber_re = k_re;
  o.wavenumber_im = k_im;
  o.leaf_size = 16;
  fmmcl_status st = fmmcl_plan_create(ctx, &o, n, src, 0, NULL, plan);
  free(src);
  return st;
}

START_TEST(test_refused) {
  fmmcl_plan plan = NULL;
  /* the unit cube at 100 wavelengths: far above the low-frequency limit */
  ck_assert_int_eq(create_with(2 * M_PI * 100, 0, FMMCL_DOUBLE, &plan), FMMCL_ERROR_UNSUPPORTED);
  ck_assert_ptr_null(plan);
  ck_assert_msg(strstr(fmmcl_last_error(ctx), "wavelengths") != NULL, "%s", fmmcl_last_error(ctx));
  /* float's limit is lower than double's */
  ck_assert_int_eq(create_with(2 * M_PI * 4, 0, FMMCL_SINGLE, &plan), FMMCL_ERROR_UNSUPPORTED);
  ck_assert_int_eq(create_with(2 * M_PI * 4, 0, FMMCL_DOUBLE, &plan), FMMCL_SUCCESS);
  /* complex charges: fmmcl_plan_execute's real ones are refused */
  double q[500] = {0}, pot[500];
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_plan_destroy(plan);
  plan = NULL;
  /* k = 0 is the Laplace kernel */
  ck_assert_int_eq(create_with(0, 0, FMMCL_DOUBLE, &plan), FMMCL_ERROR_UNSUPPORTED);
  ck_assert_msg(strstr(fmmcl_last_error(ctx), "LAPLACE_3D") != NULL, "%s", fmmcl_last_error(ctx));
}
END_TEST

static Suite *helmholtz_fmm_suite(void) {
  Suite *s = suite_create("helmholtz_fmm");
  TCase *dev = tcase_create("device");
  fmmcl_test_context_fixture(dev, &ctx);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(dev, 300);
  tcase_add_loop_test(dev, test_double, 0, 9);
  tcase_add_loop_test(dev, test_float, 0, 9);
  tcase_add_test(dev, test_error_falls);
  tcase_add_test(dev, test_imaginary_k_is_yukawa);
  tcase_add_test(dev, test_m2l_batched);
  tcase_add_test(dev, test_auto);
  suite_add_tcase(s, dev);
  TCase *bad = tcase_create("refused");
  fmmcl_test_context_fixture(bad, &ctx);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(bad, 300);
  tcase_add_test(bad, test_refused);
  suite_add_tcase(s, bad);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(helmholtz_fmm_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
