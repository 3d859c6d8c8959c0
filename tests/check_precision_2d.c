/* check_precision_2d.c — Check suite of the 2D FMM's single precision: at
 * the default tolerance it meets that tolerance over every target on the
 * distributions that defeat one global float frame, wherever the set lies. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "testing/distributions.h"
#include "test_util.h"

static fmmcl_context ctx;

static void setup(void) {
  ctx = fmmcl_test_context();
  ck_assert_ptr_nonnull(ctx);
}
static void teardown(void) { fmmcl_context_destroy(ctx); }

static int has_fp64(void) {
  fmmcl_device_info d;
  fmmcl_context_device(ctx, &d);
  return d.has_fp64;
}

enum { N = 4000 };
static const fmmcl_distribution dists[] = {FMMCL_DIST_UNIFORM, FMMCL_DIST_SURFACE, FMMCL_DIST_CLUSTERS};

static fmmcl_plan_options fmm2d(fmmcl_precision prec, double tol) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_2D);
  o.method = FMMCL_FMM, o.precision = prec, o.tolerance = tol;
  return o;
}

/* Errors of a plan over all targets (the sources) of distribution d,
 * every coordinate plus shift, against the double direct sum. */
static fmmcl_test_errors errors_of(const fmmcl_plan_options *o, fmmcl_distribution d, double shift) {
  double *x = malloc(2 * N * sizeof *x), *q = malloc(N * sizeof *q);
  ck_assert(x && q);
  ck_assert_int_eq(fmmcl_distribution_points(d, 2, 11, N, shift, x), 0);
  fmmcl_test_random_values(12, N, -1.0, 1.0, q);
  const fmmcl_test_errors e = fmmcl_test_plan_errors(ctx, o, N, x, q, 0, NULL);
  free(x), free(q);
  return e;
}

/* Single at tol 1e-4 over every target: potential within 1e-4, gradient
 * (as a vector) within 3e-4, on the unit square, the unit circle (random
 * points on a curve: the closest pairs, about 2 pi / N^2 apart, carry most
 * of the gradient's norm) and corner clusters; shifted by 1000 neither
 * error grows more than twice (or past float's own rounding, 1e-6), since
 * the device never sees a coordinate of the shifted frame. */
START_TEST(test_single_meets_tolerance) {
  const fmmcl_distribution d = dists[_i];
  const fmmcl_plan_options o = fmm2d(FMMCL_SINGLE, 1e-4);
  const fmmcl_test_errors e0 = errors_of(&o, d, 0), e1 = errors_of(&o, d, 1000);
  const char *name = fmmcl_distribution_name(d);
  ck_assert_msg(e0.pot <= 1e-4 && e0.grad <= 3e-4, "%s: pot %.2e grad %.2e", name, e0.pot, e0.grad);
  ck_assert_msg(e1.pot <= 1e-4 && e1.grad <= 3e-4, "%s + 1000: pot %.2e grad %.2e", name, e1.pot, e1.grad);
  ck_assert_msg(e1.pot <= 2 * fmax(e0.pot, 1e-6) && e1.grad <= 2 * fmax(e0.grad, 1e-6),
                "%s: shifted by 1000, pot %.2e -> %.2e, grad %.2e -> %.2e", name, e0.pot, e1.pot, e0.grad,
                e1.grad);
}
END_TEST

/* Double keeps its tolerance on the same sets, shifted or not. */
START_TEST(test_double_meets_tolerance) {
  if (!has_fp64()) return;
  const fmmcl_distribution d = dists[_i];
  const fmmcl_plan_options o = fmm2d(FMMCL_DOUBLE, 1e-8);
  for (int k = 0; k < 2; k++) {
    const fmmcl_test_errors e = errors_of(&o, d, k ? 1000 : 0);
    ck_assert_msg(e.pot <= 1e-8 && e.grad <= 1e-8, "%s%s: pot %.2e grad %.2e", fmmcl_distribution_name(d),
                  k ? " + 1000" : "", e.pot, e.grad);
  }
}
END_TEST

/* A pair 1e-9 apart near (0.2, 0.2) among uniform points: a float of one
 * global frame (an ulp of 1.5e-8 there) cannot tell its points apart, the
 * leaf's hi + lo offsets can. The rounding estimate says so (the plan's
 * frame_size), the gradient at the pair's targets (the pair term, 1e9)
 * lies within three times that estimate, and the whole set meets 3e-4. */
START_TEST(test_close_pair_resolved) {
  double *x = malloc(2 * N * sizeof *x), *q = malloc(N * sizeof *q);
  double *p = malloc(N * sizeof *p), *g = malloc(2 * N * sizeof *g);
  double *rp = malloc(N * sizeof *rp), *rg = malloc(2 * N * sizeof *rg);
  ck_assert(x && q && p && g && rp && rg);
  fmmcl_test_random_points(13, N, 2, x);
  fmmcl_test_random_values(14, N, 0.5, 1.0, q);
  x[2 * 900] = 0.2, x[2 * 900 + 1] = 0.2;
  x[2 * 17] = 0.200000001, x[2 * 17 + 1] = 0.2;
  const fmmcl_plan_options o = fmm2d(FMMCL_SINGLE, 1e-4);
  ck_assert_int_eq(fmmcl_reference_direct(&o, N, x, q, 0, NULL, rp, rg), FMMCL_SUCCESS);
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  double estimate, dist;
  ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, NULL, &estimate, &dist), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, p, g), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  ck_assert_msg(fabs(dist - 1e-9) < 1e-12, "closest pair %g apart", dist);
  ck_assert_msg(estimate < 1e-4, "estimate %.3e", estimate);
  const size_t at[2] = {17, 900};
  for (int k = 0; k < 2; k++) {
    const double *a = g + 2 * at[k], *r = rg + 2 * at[k];
    const double e = hypot(a[0] - r[0], a[1] - r[1]) / hypot(r[0], r[1]);
    ck_assert_msg(e <= 3 * estimate, "target %zu: %.3e above 3 x estimate %.3e", at[k], e, estimate);
  }
  const double ep = fmmcl_test_rel_l2(p, rp, N), eg = fmmcl_test_rel_l2(g, rg, 2 * N);
  ck_assert_msg(ep <= 1e-4 && eg <= 3e-4, "pot %.2e grad %.2e", ep, eg);
  free(x), free(q), free(p), free(g), free(rp), free(rg);
}
END_TEST

static Suite *precision_2d_suite(void) {
  Suite *s = suite_create("precision_2d");
  TCase *tc = tcase_create("fmm2d");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_single_meets_tolerance, 0, 3);
  tcase_add_loop_test(tc, test_double_meets_tolerance, 0, 3);
  tcase_add_test(tc, test_close_pair_resolved);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(precision_2d_suite());
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
