/* check_precision_bb.c — Check suite of single precision in the black-box
 * FMM and the fast Gauss transform: errors over every target against the
 * double-precision direct sum, on uniform and clustered points, as given and
 * moved far from the origin. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fmmcl.h"
#include "test_util.h"
#include "testing/distributions.h"

enum { N = 4000 };
#define TOL 1e-4
#define SHIFT 1000.0
#define SIGMA 0.05

typedef struct result {
  double l2;    /* relative L2 error of the potential over all targets */
  double worst; /* largest |error| over all targets */
  double bound; /* the plan's error bound per unit |charge| (NaN: none stated) */
} result;

/* A plan of method m for kernel k (single precision unless told, potential
 * only) over the distribution's points plus shift, against the double
 * direct sum. */
static result run(fmmcl_kernel k, fmmcl_method m, fmmcl_precision prec, fmmcl_distribution d, double shift) {
  double *x = malloc(3 * N * sizeof *x), *q = malloc(N * sizeof *q);
  double *p = malloc(N * sizeof *p), *ref = malloc(N * sizeof *ref);
  ck_assert_int_eq(fmmcl_distribution_points(d, 3, 1, N, shift, x), 0);
  fmmcl_test_random_values(2, N, -1, 1, q);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, k);
  o.dim = 3, o.sigma = SIGMA, o.gradient = 0, o.method = m, o.precision = prec, o.tolerance = TOL;
  ck_assert_int_eq(fmmcl_reference_direct(&o, N, x, q, 0, NULL, ref, NULL), FMMCL_SUCCESS);
  fmmcl_context ctx = fmmcl_test_context();
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, p, NULL), FMMCL_SUCCESS);
  result r = {fmmcl_test_rel_l2(p, ref, N), 0, NAN};
  double bound;
  if (fmmcl_plan_error_bound(plan, &bound) == FMMCL_SUCCESS) r.bound = bound;
  for (size_t i = 0; i < N; i++) r.worst = fmax(r.worst, fabs(p[i] - ref[i]));
  fmmcl_plan_destroy(plan);
  fmmcl_context_destroy(ctx);
  free(x), free(q), free(p), free(ref);
  return r;
}

static const fmmcl_distribution dists[2] = {FMMCL_DIST_UNIFORM, FMMCL_DIST_CLUSTERS};

/* The bbFMM of 1/r at tolerance 1e-4 in single precision: within the
 * tolerance over every target (the order comes from the tolerance), as
 * good as the same plan in double up to rounding (the rounding of offsets
 * within leaves, not of positions in the root box), and the same with
 * every point moved by 1000: rounding does not grow with the distance from
 * the origin. */
START_TEST(test_bbfmm_laplace) {
  const fmmcl_distribution d = dists[_i];
  const result s = run(FMMCL_LAPLACE_3D, FMMCL_BBFMM, FMMCL_SINGLE, d, 0);
  const result far = run(FMMCL_LAPLACE_3D, FMMCL_BBFMM, FMMCL_SINGLE, d, SHIFT);
  const result dbl = run(FMMCL_LAPLACE_3D, FMMCL_BBFMM, FMMCL_DOUBLE, d, 0);
  const char *name = fmmcl_distribution_name(d);
  printf("bbfmm 1/r %-9s single %.3e, shifted by %g %.3e, double %.3e\n", name, s.l2, SHIFT, far.l2, dbl.l2);
  ck_assert_msg(s.l2 <= TOL, "%s: single %.3e > %g", name, s.l2, TOL);
  ck_assert_msg(far.l2 <= TOL, "%s shifted: single %.3e > %g", name, far.l2, TOL);
  ck_assert_msg(far.l2 <= 2 * s.l2, "%s: shifted %.3e vs %.3e", name, far.l2, s.l2);
  /* rounding adds at most the approximation error again */
  ck_assert_msg(s.l2 <= 2 * dbl.l2, "%s: single %.3e, double %.3e", name, s.l2, dbl.l2);
}
END_TEST

/* The FGT of exp(-r^2 / (2 sigma^2)) at tolerance 1e-4 in single
 * precision: every target within the plan's bound (times the sum of
 * |charges|), the relative L2 error within the tolerance, and the same
 * with every point moved by 1000 (in the box's frame, not the world's). */
START_TEST(test_fgt_gaussian) {
  const fmmcl_distribution d = dists[_i];
  const char *name = fmmcl_distribution_name(d);
  double qsum = 0, *q = malloc(N * sizeof *q);
  fmmcl_test_random_values(2, N, -1, 1, q);
  for (size_t i = 0; i < N; i++) qsum += fabs(q[i]);
  free(q);
  const result s = run(FMMCL_GAUSSIAN, FMMCL_FGT, FMMCL_SINGLE, d, 0);
  const result far = run(FMMCL_GAUSSIAN, FMMCL_FGT, FMMCL_SINGLE, d, SHIFT);
  printf("fgt gaussian %-9s single %.3e, shifted by %g %.3e; worst %.3e, bound %.3e\n", name, s.l2, SHIFT,
         far.l2, fmax(s.worst, far.worst), s.bound * qsum);
  ck_assert(s.bound <= TOL);
  ck_assert_msg(s.worst <= s.bound * qsum, "%s: %.3e > bound %.3e", name, s.worst, s.bound * qsum);
  ck_assert_msg(far.worst <= far.bound * qsum, "%s shifted: %.3e > bound %.3e", name, far.worst,
                far.bound * qsum);
  ck_assert_msg(s.l2 <= TOL, "%s: %.3e > %g", name, s.l2, TOL);
  ck_assert_msg(far.l2 <= TOL, "%s shifted: %.3e > %g", name, far.l2, TOL);
  ck_assert_msg(far.l2 <= 2 * s.l2, "%s: shifted %.3e vs %.3e", name, far.l2, s.l2);
}
END_TEST

/* Local frames are small, yet no frame a leaf or box wide resolves a pair
 * 1e-9 apart in single precision: the rounding estimate still says so (the
 * CLI's warning), and says double precision does. */
START_TEST(test_rounding_estimate) {
  const fmmcl_method m = _i ? FMMCL_FGT : FMMCL_BBFMM;
  const fmmcl_kernel k = _i ? FMMCL_GAUSSIAN : FMMCL_LAPLACE_3D;
  double *x = malloc(3 * N * sizeof *x);
  fmmcl_test_random_points(5, N, 3, x);
  for (int c = 0; c < 3; c++) x[3 * 17 + c] = 0.2, x[3 * 900 + c] = 0.2 + (c == 0 ? 1e-9 : 0);
  fmmcl_context ctx = fmmcl_test_context();
  double estimate[2];
  for (int prec = 0; prec < 2; prec++) {
    fmmcl_plan_options o;
    fmmcl_plan_options_init(&o, k);
    o.dim = 3, o.sigma = SIGMA, o.method = m, o.tolerance = TOL, o.gradient = 0;
    o.precision = prec ? FMMCL_DOUBLE : FMMCL_SINGLE;
    fmmcl_plan plan;
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan), FMMCL_SUCCESS);
    double dist;
    ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, NULL, &estimate[prec], &dist), FMMCL_SUCCESS);
    ck_assert(fabs(dist - 1e-9) < 1e-12);
    fmmcl_plan_destroy(plan);
  }
  printf("rounding estimate %s, pair 1e-9 apart: single %.3e, double %.3e\n", _i ? "fgt" : "bbfmm",
         estimate[0], estimate[1]);
  ck_assert_msg(estimate[0] > TOL, "single: %.3e", estimate[0]);
  ck_assert_msg(estimate[1] < TOL, "double: %.3e", estimate[1]);
  fmmcl_context_destroy(ctx);
  free(x);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("precision_bb");
  TCase *tc = tcase_create("single");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_bbfmm_laplace, 0, 2);
  tcase_add_loop_test(tc, test_fgt_gaussian, 0, 2);
  tcase_add_loop_test(tc, test_rounding_estimate, 0, 2);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
