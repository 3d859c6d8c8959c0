/* check_plan_describe.c — what a plan says about itself: the method auto
 * chose and the order the tolerance chose (fmmcl_plan_describe), and how
 * well its precision resolves the closest pair (fmmcl_plan_rounding_estimate)
 * against the error actually measured at that pair's target. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "fmmcl.h"
#include "test_util.h"

static fmmcl_context ctx;

static fmmcl_plan make_plan(fmmcl_method m, fmmcl_precision prec, double tol, size_t n, const double *x) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = m, o.precision = prec, o.tolerance = tol;
  fmmcl_plan plan = NULL;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  return plan;
}

/* AUTO is resolved to what runs; a tighter tolerance takes a higher
 * order; a direct sum has none. */
START_TEST(test_describe) {
  enum { N = 3000 };
  double *x = malloc(3 * N * sizeof *x);
  fmmcl_test_random_points(3, N, 3, x);
  fmmcl_plan_info info;
  fmmcl_plan plan = make_plan(FMMCL_AUTO, FMMCL_SINGLE, 1e-4, N, x);
  ck_assert_int_eq(fmmcl_plan_describe(plan, &info), FMMCL_SUCCESS);
  ck_assert_int_ne(info.method, FMMCL_AUTO);
  ck_assert_int_eq(info.kernel, FMMCL_LAPLACE_3D);
  ck_assert_int_eq(info.precision, FMMCL_SINGLE);
  ck_assert_int_eq(fmmcl_plan_describe(plan, NULL), FMMCL_ERROR_NULL_POINTER);
  fmmcl_plan_destroy(plan);
  int last = 0;
  const double tols[] = {1e-2, 1e-4, 1e-6};
  for (int k = 0; k < 3; k++) {
    plan = make_plan(FMMCL_FMM, FMMCL_DOUBLE, tols[k], N, x);
    ck_assert_int_eq(fmmcl_plan_describe(plan, &info), FMMCL_SUCCESS);
    ck_assert_int_eq(info.method, FMMCL_FMM);
    ck_assert_msg(info.order > last, "tol %g: order %d after %d", tols[k], info.order, last);
    last = info.order;
    fmmcl_plan_destroy(plan);
  }
  plan = make_plan(FMMCL_DIRECT, FMMCL_SINGLE, 0, N, x);
  ck_assert_int_eq(fmmcl_plan_describe(plan, &info), FMMCL_SUCCESS);
  ck_assert_int_eq(info.order, 0);
  fmmcl_plan_destroy(plan);
  free(x);
}
END_TEST

/* A planted pair 1e-6 apart: the estimate is the typical error of that
 * pair's gradient term, so the measured error at its target lies below
 * three times it (the bound); it says the direct sum in single cannot meet
 * 1e-4 there, the FMM and the treecode with the offsets' low parts and
 * double can; the pair and its distance are found. */
START_TEST(test_rounding_estimate) {
  enum { N = 2000 };
  const fmmcl_method methods[] = {FMMCL_DIRECT, FMMCL_FMM, FMMCL_TREECODE};
  const fmmcl_method m = methods[_i];
  double *x = malloc(3 * N * sizeof *x), *q = malloc(N * sizeof *q);
  double *p = malloc(N * sizeof *p), *g = malloc(3 * N * sizeof *g);
  double *rp = malloc(N * sizeof *rp), *rg = malloc(3 * N * sizeof *rg);
  fmmcl_test_random_points(5, N, 3, x);
  fmmcl_test_random_values(6, N, 0.5, 1.0, q);
  for (int d = 0; d < 3; d++) x[3 * 17 + d] = x[3 * 900 + d] + (d == 1 ? 1e-6 : 0);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  ck_assert_int_eq(fmmcl_reference_direct(&o, N, x, q, 0, NULL, rp, rg), FMMCL_SUCCESS);
  double worst = 0, estimate[2] = {0, 0};
  for (int prec = 0; prec < 2; prec++) {
    fmmcl_plan plan = make_plan(m, prec ? FMMCL_DOUBLE : FMMCL_SINGLE, prec ? 1e-8 : 1e-4, N, x);
    double dist;
    ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, NULL, &estimate[prec], &dist), FMMCL_SUCCESS);
    ck_assert_msg(fabs(dist - 1e-6) < 1e-9, "closest pair %g apart", dist);
    ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, x, &estimate[prec], &dist),
                     FMMCL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(fmmcl_plan_execute(plan, q, p, g), FMMCL_SUCCESS);
    fmmcl_plan_destroy(plan);
    if (prec) continue;
    /* the pair's own targets: their gradients are that term */
    const size_t at[2] = {17, 900};
    for (int k = 0; k < 2; k++) {
      double e2 = 0, r2 = 0;
      for (int d = 0; d < 3; d++) {
        const double e = g[3 * at[k] + d] - rg[3 * at[k] + d];
        e2 += e * e, r2 += rg[3 * at[k] + d] * rg[3 * at[k] + d];
      }
      worst = fmax(worst, sqrt(e2 / r2));
    }
  }
  /* the direct sum leaves a lone close pair's offsets plain (it adds their
   * low parts when 2 % of the points are that close); the FMM and the
   * treecode add them for one pair */
  if (m == FMMCL_DIRECT) ck_assert_msg(estimate[0] > 1e-4, "single: estimate %.3e", estimate[0]);
  else ck_assert_msg(estimate[0] < 1e-4, "single, low parts: estimate %.3e", estimate[0]);
  ck_assert_msg(worst <= 3 * estimate[0], "single: measured %.3e above 3 x estimate %.3e", worst,
                estimate[0]);
  ck_assert_msg(estimate[1] < 1e-8, "double: estimate %.3e", estimate[1]);
  free(x), free(q), free(p), free(g), free(rp), free(rg);
}
END_TEST

/* The closest-targets search ranks a planted pair first; a coincident pair
 * is no neighbour; bad arguments are refused. */
START_TEST(test_closest_targets_arguments) {
  double x[] = {0, 0, 0, 1, 0, 0, 1, 0, 0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5 + 1e-3};
  size_t out[5], found = 9;
  double dist[5];
  ck_assert_int_eq(fmmcl_closest_targets(3, 5, x, 0, NULL, 5, out, dist, &found), FMMCL_SUCCESS);
  ck_assert_uint_ge(found, 2);
  ck_assert_msg(fabs(dist[0] - 1e-3) < 1e-12 && (out[0] == 3 || out[0] == 4), "first %zu at %g", out[0],
                dist[0]);
  for (size_t i = 0; i < found; i++) ck_assert_msg(dist[i] > 0, "a coincident pair counted");
  ck_assert_int_eq(fmmcl_closest_targets(4, 5, x, 0, NULL, 5, out, dist, &found),
                   FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_closest_targets(3, 5, x, 0, NULL, 5, out, dist, NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_closest_targets(3, 5, x, 0, NULL, 0, out, dist, &found), FMMCL_SUCCESS);
  ck_assert_uint_eq(found, 0);
}
END_TEST

static Suite *describe_suite(void) {
  Suite *s = suite_create("plan_describe");
  TCase *tc = tcase_create("describe");
  fmmcl_test_context_fixture(tc, &ctx);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_describe);
  tcase_add_loop_test(tc, test_rounding_estimate, 0, 3);
  tcase_add_test(tc, test_closest_targets_arguments);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(describe_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
