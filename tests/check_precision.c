/* check_precision.c — single precision keeps its promise in the 3D FMM and
 * treecode: at the default tolerance every distribution meets it over all
 * targets, moving the whole set far from the origin changes nothing, and
 * pairs far closer than a leaf is wide keep float's accuracy. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmmcl.h"
#include "core/internal.h" /* fmmcl_context_override_defines: the P2P tilings under test */
#include "testing/distributions.h"
#include "test_util.h"

/* Points per set: the host double reference runs N^2 pairs per set and
 * shift, and the suite stays within a minute on two CPU cores. */
#define N 12000
/* What single precision promises at its default tolerance (relative L2 over
 * all targets): the potential within the tolerance, the gradient, a
 * derivative rougher, within three times it. */
#define TOL 1e-4
#define GRAD_TOL 3e-4
/* Far from the origin: a float ulp at 1000 is 6e-5, larger than many
 * separations in these sets, so coordinates rounded before they are
 * centred would lose every digit of the close pairs. */
#define FAR 1000.0

static fmmcl_context ctx;

/* A point set with its double reference, computed once for both methods. */
typedef struct reference_set {
  double *x, *q, *pot, *grad;
} reference_set;

static reference_set make_set(fmmcl_distribution d, double shift) {
  reference_set r = {malloc(3 * N * sizeof(double)), malloc(N * sizeof(double)), malloc(N * sizeof(double)),
                     malloc(3 * N * sizeof(double))};
  ck_assert(r.x && r.q && r.pot && r.grad);
  ck_assert_int_eq(fmmcl_distribution_points(d, 3, 11, N, shift, r.x), 0);
  fmmcl_test_random_values(12, N, -1, 1, r.q);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.precision = FMMCL_DOUBLE;
  ck_assert_int_eq(fmmcl_reference_direct(&o, N, r.x, r.q, 0, NULL, r.pot, r.grad), FMMCL_SUCCESS);
  return r;
}

static void free_set(reference_set *r) { free(r->x), free(r->q), free(r->pot), free(r->grad); }

/* Errors of a single-precision plan of method m at the default tolerance
 * on n points x with charges q (leaves of leaf_size, 0: the plan's
 * choice), against the double reference rp, rg over all targets. */
static fmmcl_test_errors single_errors_of(fmmcl_method m, size_t n, const double *x, const double *q,
                                          const double *rp, const double *rg, int leaf_size) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = m, o.precision = FMMCL_SINGLE, o.tolerance = TOL, o.leaf_size = leaf_size;
  double *pot = malloc(n * sizeof *pot), *grad = malloc(3 * n * sizeof *grad);
  ck_assert(pot && grad);
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan) == FMMCL_SUCCESS, "create: %s",
                fmmcl_last_error(ctx));
  ck_assert_msg(fmmcl_plan_execute(plan, q, pot, grad) == FMMCL_SUCCESS, "execute: %s",
                fmmcl_last_error(ctx));
  fmmcl_plan_destroy(plan);
  fmmcl_test_errors e = {fmmcl_test_rel_l2(pot, rp, n), fmmcl_test_rel_l2(grad, rg, 3 * n)};
  free(pot), free(grad);
  return e;
}

static fmmcl_test_errors single_errors(fmmcl_method m, const reference_set *r) {
  return single_errors_of(m, N, r->x, r->q, r->pot, r->grad, 0);
}

/* Loop i: distribution i / 2, method i % 2 (FMM, treecode). The method
 * meets the tolerance at the origin and at FAR, and FAR changes neither
 * error by more than a factor of 2. */
START_TEST(test_single_keeps_tolerance) {
  const fmmcl_distribution d = (fmmcl_distribution)(_i / 2);
  const fmmcl_method method = _i % 2 ? FMMCL_TREECODE : FMMCL_FMM;
  const char *name = _i % 2 ? "treecode" : "fmm";
  fmmcl_test_errors e[2];
  for (int k = 0; k < 2; k++) {
    reference_set r = make_set(d, k ? FAR : 0.0);
    e[k] = single_errors(method, &r);
    free_set(&r);
    ck_assert_msg(e[k].pot <= TOL && e[k].grad <= GRAD_TOL,
                  "%s %s shift %g: potential %.3e (<= %g), gradient %.3e (<= %g)", fmmcl_distribution_name(d),
                  name, k ? FAR : 0.0, e[k].pot, TOL, e[k].grad, GRAD_TOL);
  }
  ck_assert_msg(e[1].pot <= 2 * e[0].pot && e[1].grad <= 2 * e[0].grad,
                "%s %s: shift %g moved the errors from %.3e / %.3e to %.3e / %.3e",
                fmmcl_distribution_name(d), name, FAR, e[0].pot, e[0].grad, e[1].pot, e[1].grad);
}
END_TEST

/* Local frames are leaf-sized, not pair-sized: a pair 1e-9 apart at 0.2
 * (a float ulp there is 1.5e-8) is beyond float's plain offsets, so the
 * plan adds their low parts, and the rounding estimate says the pair is
 * then resolved for both methods: to within the tolerance in single, to
 * about 1e-7 of the pair's gradient term in double. */
START_TEST(test_rounding_estimate_local_frames) {
  enum { M = 2000 };
  double *x = malloc(3 * M * sizeof *x);
  ck_assert(x);
  fmmcl_test_random_points(7, M, 3, x);
  for (int d = 0; d < 3; d++) x[3 * 5 + d] = 0.2, x[3 * 6 + d] = 0.2 + (d == 0 ? 1e-9 : 0);
  const fmmcl_method methods[] = {FMMCL_FMM, FMMCL_TREECODE};
  for (int m = 0; m < 2; m++)
    for (int prec = 0; prec < 2; prec++) {
      fmmcl_plan_options o;
      fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
      o.method = methods[m], o.precision = prec ? FMMCL_DOUBLE : FMMCL_SINGLE,
      o.tolerance = prec ? 1e-6 : TOL;
      fmmcl_plan plan;
      ck_assert_msg(fmmcl_plan_create(ctx, &o, M, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                    fmmcl_last_error(ctx));
      double estimate, dist;
      ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, NULL, &estimate, &dist), FMMCL_SUCCESS);
      fmmcl_plan_destroy(plan);
      ck_assert_msg(fabs(dist - 1e-9) < 1e-12, "closest pair %g apart", dist);
      if (prec) ck_assert_msg(estimate < 1e-6, "double: estimate %.3e", estimate);
      else ck_assert_msg(estimate < TOL, "single: estimate %.3e", estimate);
    }
  free(x);
}
END_TEST

/* FMM and treecode in float at TOL on n points x (leaves of leaf_size, 0:
 * the plan's choice) against the double reference over all targets: the
 * potential within TOL, the gradient within grad_tol. */
static void expect_both_methods_within(const char *what, size_t n, const double *x, const double *q,
                                       int leaf_size, double grad_tol) {
  double *rp = malloc(n * sizeof *rp), *rg = malloc(3 * n * sizeof *rg);
  ck_assert(rp && rg);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.precision = FMMCL_DOUBLE;
  ck_assert_int_eq(fmmcl_reference_direct(&o, n, x, q, 0, NULL, rp, rg), FMMCL_SUCCESS);
  const fmmcl_method methods[] = {FMMCL_FMM, FMMCL_TREECODE};
  for (int m = 0; m < 2; m++) {
    const fmmcl_test_errors e = single_errors_of(methods[m], n, x, q, rp, rg, leaf_size);
    ck_assert_msg(e.pot <= TOL && e.grad <= grad_tol, "%s, %s: potential %.3e (<= %g), gradient %.3e (<= %g)",
                  what, m ? "treecode" : "fmm", e.pot, TOL, e.grad, grad_tol);
  }
  free(rp), free(rg);
}

/* A uniform set with a few pairs a million times closer than a leaf is
 * wide: their terms dominate the gradient's L2 norm over all targets (as
 * a uniform set's closest pairs do at 1e7 points), so the plan must add
 * the offsets' low parts however few the close pairs are; with float's
 * plain offsets the gradient was off by 5e-3 here. */
START_TEST(test_few_close_pairs) {
  enum { M = 6000 };
  double *x = malloc(3 * M * sizeof *x), *q = malloc(M * sizeof *q);
  ck_assert(x && q);
  fmmcl_test_random_points(21, M, 3, x);
  fmmcl_test_random_values(22, M, -1, 1, q);
  /* point 2k + 1 next to point 2k, 1e-6 .. 3e-6 away along a diagonal */
  for (int k = 0; k < 3; k++)
    for (int d = 0; d < 3; d++) x[3 * (2 * k + 1) + d] = x[3 * (2 * k) + d] + (k + 1) * 1e-6 / sqrt(3.0);
  expect_both_methods_within("uniform with three close pairs", M, x, q, 0, GRAD_TOL);
  free(x), free(q);
}
END_TEST

/* Points on a sphere's surface in leaves of 512: the closest pairs are
 * thousands of times closer than a leaf is wide and their terms dominate
 * the gradient's norm, so the gradient is only as good as the near field's
 * pair differences. Offsets rounded to float relative to a leaf's centre
 * alone cost ulp(leaf) / distance there (tens of times GRAD_NEAR_TOL at
 * this N, growing with N); carried as hi + lo parts, each difference
 * rounds at the pair's own scale, as in the direct sum, whose float error
 * here is about 2e-6. */
#define N_SURFACE 30000
#define GRAD_NEAR_TOL 1e-5

START_TEST(test_surface_large_leaves) {
  const size_t n = N_SURFACE;
  double *x = malloc(3 * n * sizeof *x), *q = malloc(n * sizeof *q);
  ck_assert(x && q);
  ck_assert_int_eq(fmmcl_distribution_points(FMMCL_DIST_SURFACE, 3, 13, n, 0.0, x), 0);
  fmmcl_test_random_values(14, n, -1, 1, q);
  expect_both_methods_within("surface, leaves of 512", n, x, q, 512, GRAD_NEAR_TOL);
  free(x), free(q);
}
END_TEST

/* The P2P's targets per work-item change which work-item sums a target,
 * not the order of its sum: every tiling gives the TPW = 1 result to
 * rounding, in float with and without the low parts (a surface in leaves
 * of 512 compensates; a jittered lattice in leaves of 100, whose points
 * are all far apart, does not, where a uniform set's closest pairs would) and in
 * double, over passes that end part-way through their rows (WGS = 32,
 * TPW = 3: 96 targets a pass). */
START_TEST(test_p2p_targets_per_item) {
  enum { NP = 3000 };
  double *x = malloc(3 * NP * sizeof *x), *q = malloc(NP * sizeof *q);
  double *p0 = malloc(NP * sizeof *p0), *g0 = malloc(3 * NP * sizeof *g0);
  double *p1 = malloc(NP * sizeof *p1), *g1 = malloc(3 * NP * sizeof *g1);
  ck_assert(x && q && p0 && g0 && p1 && g1);
  fmmcl_test_random_values(15, NP, -1, 1, q);
  /* TILE=1: the sources (and their low parts) staged in local memory */
  static const char *const tilings[] = {
      "-DWGS=32 -DUNROLL=4 -DTPW=1",          "-DWGS=32 -DUNROLL=4 -DTPW=3",
      "-DWGS=64 -DUNROLL=8 -DTPW=2",          "-DWGS=16 -DUNROLL=2 -DTPW=4",
      "-DWGS=32 -DUNROLL=4 -DTPW=3 -DTILE=1", "-DWGS=16 -DUNROLL=2 -DTPW=1 -DTILE=1"};
  const int n_tilings = (int)(sizeof tilings / sizeof tilings[0]);
  for (int c = 0; c < 4; c++) {
    const int surface = c & 1, dbl = c >> 1;
    if (surface) ck_assert_int_eq(fmmcl_distribution_points(FMMCL_DIST_SURFACE, 3, 16, NP, 0.0, x), 0);
    else {
      /* 15 x 15 x 14 cells of side 1/15, a point in each within 0.15 of a
       * cell from its centre: no two closer than 0.7 of a cell */
      fmmcl_test_random_values(16, 3 * NP, -0.15, 0.15, x);
      for (int i = 0; i < NP; i++) {
        const int cell[3] = {i % 15, i / 15 % 15, i / 225};
        for (int d = 0; d < 3; d++) x[3 * i + d] = (cell[d] + 0.5 + x[3 * i + d]) / 15;
      }
    }
    fmmcl_plan_options o;
    fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
    o.method = FMMCL_FMM, o.precision = dbl ? FMMCL_DOUBLE : FMMCL_SINGLE;
    o.tolerance = dbl ? 1e-8 : TOL, o.leaf_size = surface ? 512 : 100;
    if (dbl) {
      fmmcl_device_info dev;
      ck_assert_int_eq(fmmcl_context_device(ctx, &dev), FMMCL_SUCCESS);
      if (!dev.has_fp64) continue;
    }
    for (int t = 0; t < n_tilings; t++) {
      ck_assert_int_eq(fmmcl_context_override_defines(ctx, "fmm3d_p2p", tilings[t]), FMMCL_SUCCESS);
      fmmcl_plan plan;
      ck_assert_msg(fmmcl_plan_create(ctx, &o, NP, x, 0, NULL, &plan) == FMMCL_SUCCESS, "create: %s",
                    fmmcl_last_error(ctx));
      if (!dbl && !t) { /* both of float's paths: the sets take the one said above */
        char opts[1024];
        ck_assert_int_eq(fmmcl_plan_build_options(plan, opts, sizeof opts), FMMCL_SUCCESS);
        ck_assert_msg(strstr(opts, surface ? "-DCOMPENSATE=1" : "-DCOMPENSATE=0"), "%s: %s",
                      surface ? "surface" : "lattice", opts);
      }
      ck_assert_msg(fmmcl_plan_execute(plan, q, t ? p1 : p0, t ? g1 : g0) == FMMCL_SUCCESS, "execute: %s",
                    fmmcl_last_error(ctx));
      fmmcl_plan_destroy(plan);
      if (!t) continue;
      const double ep = fmmcl_test_rel_l2(p1, p0, NP), eg = fmmcl_test_rel_l2(g1, g0, 3 * NP);
      const double bound = dbl ? 1e-14 : 1e-6;
      ck_assert_msg(ep <= bound && eg <= bound, "%s %s, %s against TPW=1: %.3e %.3e",
                    surface ? "surface" : "lattice", dbl ? "double" : "single", tilings[t], ep, eg);
    }
  }
  ck_assert_int_eq(fmmcl_context_override_defines(ctx, "fmm3d_p2p", NULL), FMMCL_SUCCESS);
  free(x), free(q), free(p0), free(g0), free(p1), free(g1);
}
END_TEST

static Suite *precision_suite(void) {
  Suite *s = suite_create("precision");
  TCase *tc = tcase_create("fmm3d");
  fmmcl_test_context_fixture(tc, &ctx);
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_single_keeps_tolerance, 0, 2 * FMMCL_DIST_COUNT);
  tcase_add_test(tc, test_rounding_estimate_local_frames);
  tcase_add_test(tc, test_surface_large_leaves);
  tcase_add_test(tc, test_few_close_pairs);
  tcase_add_test(tc, test_p2p_targets_per_item);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(precision_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
