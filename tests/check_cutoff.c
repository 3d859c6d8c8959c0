/* check_cutoff.c — Check suite of the Gaussian's cut-off direct sum
 * (FMMCL_CUTOFF) against the plain-C direct sum over every target, and of
 * what FMMCL_AUTO chooses for the Gaussian. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h" /* the GPU class of the Gaussian's model, off the device */
#include "model/model.h"
#include "test_util.h"

static fmmcl_context ctx;

enum { UNIFORM, CLUSTERED }; /* fmmcl_test_cluster_points's kinds */

static fmmcl_plan_options gauss_options(fmmcl_method method, fmmcl_precision precision, int dim, double sigma,
                                        double tol) {
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_GAUSSIAN);
  o.method = method;
  o.precision = precision;
  o.dim = dim;
  o.sigma = sigma;
  o.tolerance = tol;
  o.gradient = 0;
  return o;
}

typedef struct outcome {
  double error; /* max over all targets of |plan - reference| / sum |q| */
  double bound; /* the plan's fmmcl_plan_error_bound */
  double pairs; /* the plan's direct pairs ("p2p") */
  fmmcl_method ran;
} outcome;

/* Runs o's plan on (src, tgt) (tgt NULL: the sources) and compares every
 * target with fmmcl_reference_direct. Charges of one sign: the dropped
 * terms cannot cancel, so a cut-off short of its bound shows. */
static outcome run(const fmmcl_plan_options *o, size_t ns, const double *src, size_t nt, const double *tgt) {
  const size_t m = tgt ? nt : ns;
  double *q = malloc(ns * sizeof *q), *pot = malloc(m * sizeof *pot), *ref = malloc(m * sizeof *ref);
  fmmcl_test_random_values(9, ns, 0, 1, q);
  fmmcl_plan plan;
  fmmcl_status st = fmmcl_plan_create(ctx, o, ns, src, tgt ? nt : 0, tgt, &plan);
  ck_assert_msg(st == FMMCL_SUCCESS, "plan: %s", fmmcl_last_error(ctx));
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
  outcome r = {0, 0, 0, FMMCL_AUTO};
  fmmcl_plan_info info;
  ck_assert_int_eq(fmmcl_plan_describe(plan, &info), FMMCL_SUCCESS);
  r.ran = info.method;
  if (fmmcl_plan_error_bound(plan, &r.bound) != FMMCL_SUCCESS) r.bound = NAN;
  ck_assert_int_eq(fmmcl_plan_counts(plan, "p2p", &r.pairs), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  ck_assert_int_eq(fmmcl_reference_direct(o, ns, src, q, m, tgt ? tgt : src, ref, NULL), FMMCL_SUCCESS);
  double qsum = 0;
  for (size_t i = 0; i < ns; i++) qsum += fabs(q[i]);
  for (size_t i = 0; i < m; i++) r.error = fmax(r.error, fabs(pot[i] - ref[i]) / qsum);
  free(q);
  free(pot);
  free(ref);
  return r;
}

/* The float device's rounding of a sum of terms of at most |q| each, per
 * unit of sum |q| (a few ulps of float), on top of the cut-off's bound. */
static double rounding(fmmcl_precision p) { return p == FMMCL_DOUBLE ? 1e-13 : 2e-6; }

/* Every target within the tolerance, d = 1, 2, 3, 6, uniform and clustered,
 * float at 1e-4 and double at 1e-6 and 1e-10; sigma narrow enough that the
 * cut-off drops most pairs (which the p2p count confirms, so the test sees
 * the cut-off at work, not an all-pairs sum). */
START_TEST(test_cutoff_tolerance) {
  static const int dims[] = {1, 2, 3, 6};
  const int dim = dims[_i / 2], kind = _i % 2;
  const size_t ns = 1500, nt = 700;
  double *src = malloc(ns * dim * sizeof *src), *tgt = malloc(nt * dim * sizeof *tgt);
  fmmcl_test_cluster_points(kind, 7, ns, dim, src);
  fmmcl_test_cluster_points(kind, 8, nt, dim, tgt);
  static const double sigmas[2][4] = {{0.02, 0.02, 0.01, 0.03}, {0.002, 0.002, 0.004, 0.016}};
  const double sigma = sigmas[kind][_i / 2];
  static const struct {
    fmmcl_precision p;
    double tol;
  } cases[] = {{FMMCL_SINGLE, 1e-4}, {FMMCL_DOUBLE, 1e-6}, {FMMCL_DOUBLE, 1e-10}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    fmmcl_plan_options o = gauss_options(FMMCL_CUTOFF, cases[c].p, dim, sigma, cases[c].tol);
    outcome r = run(&o, ns, src, nt, tgt);
    ck_assert_int_eq(r.ran, FMMCL_CUTOFF);
    ck_assert_msg(r.bound <= cases[c].tol, "bound %g above tol %g", r.bound, cases[c].tol);
    ck_assert_msg(r.error <= r.bound + rounding(cases[c].p),
                  "dim %d %s sigma %g %s tol %g: error %g bound %g", dim, kind ? "clustered" : "uniform",
                  sigma, cases[c].p == FMMCL_DOUBLE ? "double" : "single", cases[c].tol, r.error, r.bound);
    ck_assert_msg(r.pairs < 0.5 * (double)ns * (double)nt, "dim %d: %g pairs of %g: no cut-off", dim, r.pairs,
                  (double)ns * nt);
  }
  free(src);
  free(tgt);
}
END_TEST

/* The cut-off's radius itself: one unit charge among zero charges, and
 * targets where its term is just above the bound (1.02 bound .. 100 bound)
 * in every direction, so across box faces and corners: a pair dropped
 * there costs more than the bound, so none may be; targets where its term
 * is far below the bound may lose it. In double, at tolerances 1e-6 and
 * 1e-10. */
START_TEST(test_cutoff_radius) {
  const int dim = 3;
  /* zero charges fill the boxes; whole boxes within the cut-off are summed,
   * so a radius short by less than about a box's side would not show */
  const size_t ns = 4000, nt = 256;
  const double sigma = 0.05;
  double *src = malloc(ns * dim * sizeof *src), *tgt = malloc(nt * dim * sizeof *tgt);
  double *q = calloc(ns, sizeof *q), *pot = malloc(nt * sizeof *pot), *ref = malloc(nt * sizeof *ref);
  fmmcl_test_cluster_points(UNIFORM, 21, ns, dim, src);
  for (int k = 0; k < dim; k++) src[k] = 0.5;
  q[0] = 1;
  static const double tols[] = {1e-6, 1e-10};
  for (int t = 0; t < 2; t++) {
    fmmcl_plan_options o = gauss_options(FMMCL_CUTOFF, FMMCL_DOUBLE, dim, sigma, tols[t]);
    double dir[3 * 256];
    fmmcl_test_cluster_points(UNIFORM, 22, nt, dim, dir);
    for (size_t i = 0; i < nt; i++) {
      double len = 0;
      for (int k = 0; k < dim; k++) len += (dir[i * dim + k] - 0.5) * (dir[i * dim + k] - 0.5);
      /* the term exp(-r^2 / (2 sigma^2)) = c tol, c from 1.02 to 100 */
      const double c = 1.02 * pow(100 / 1.02, (double)(i % 16) / 15);
      const double r = sigma * sqrt(2 * log(1 / (c * tols[t])));
      for (int k = 0; k < dim; k++) tgt[i * dim + k] = 0.5 + r * (dir[i * dim + k] - 0.5) / sqrt(len);
    }
    fmmcl_plan plan;
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, ns, src, nt, tgt, &plan), FMMCL_SUCCESS);
    double bound;
    ck_assert_int_eq(fmmcl_plan_error_bound(plan, &bound), FMMCL_SUCCESS);
    ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
    fmmcl_plan_destroy(plan);
    ck_assert_int_eq(fmmcl_reference_direct(&o, ns, src, q, nt, tgt, ref, NULL), FMMCL_SUCCESS);
    for (size_t i = 0; i < nt; i++)
      ck_assert_msg(fabs(pot[i] - ref[i]) <= bound + 1e-15, "tol %g target %zu: term %g, got %g (bound %g)",
                    tols[t], i, ref[i], pot[i], bound);
  }
  free(src);
  free(tgt);
  free(q);
  free(pot);
  free(ref);
}
END_TEST

/* Targets far from every source (their neighbourhoods empty: nothing to
 * sum, zero exactly, as the reference's exp underflows), mixed with
 * targets among the sources. */
START_TEST(test_cutoff_empty_neighbourhood) {
  const int dim = 3;
  const size_t ns = 800, nt = 400;
  double *src = malloc(ns * dim * sizeof *src), *tgt = malloc(nt * dim * sizeof *tgt);
  fmmcl_test_cluster_points(UNIFORM, 3, ns, dim, src);
  fmmcl_test_cluster_points(UNIFORM, 4, nt, dim, tgt);
  for (size_t i = 0; i < nt; i += 2) tgt[i * dim] += 5; /* every other target 5 (250 sigma) away */
  for (int p = 0; p < 2; p++) {
    fmmcl_plan_options o = gauss_options(FMMCL_CUTOFF, p ? FMMCL_DOUBLE : FMMCL_SINGLE, dim, 0.02, 1e-6);
    outcome r = run(&o, ns, src, nt, tgt);
    ck_assert_msg(r.error <= r.bound + rounding(o.precision), "error %g", r.error);
    double *q = malloc(ns * sizeof *q), *pot = malloc(nt * sizeof *pot);
    fmmcl_test_random_values(9, ns, -1, 1, q);
    fmmcl_plan plan;
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, ns, src, nt, tgt, &plan), FMMCL_SUCCESS);
    ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, NULL), FMMCL_SUCCESS);
    for (size_t i = 0; i < nt; i += 2) ck_assert_msg(pot[i] == 0, "far target %zu: %g", i, pot[i]);
    fmmcl_plan_destroy(plan);
    free(q);
    free(pot);
  }
  free(src);
  free(tgt);
}
END_TEST

/* sigma as wide as the data: every pair is within the cut-off, and the sum
 * is the direct sum to rounding. */
START_TEST(test_cutoff_all_pairs) {
  const int dim = 2;
  const size_t n = 1000;
  double *x = malloc(n * dim * sizeof *x);
  fmmcl_test_cluster_points(UNIFORM, 5, n, dim, x);
  fmmcl_plan_options o = gauss_options(FMMCL_CUTOFF, FMMCL_DOUBLE, dim, 2.0, 1e-6);
  outcome r = run(&o, n, x, 0, NULL);
  ck_assert(r.pairs == (double)n * (double)n);
  ck_assert_msg(r.error <= 1e-13, "error %g", r.error);
  free(x);
}
END_TEST

/* AUTO for the Gaussian: the plan says what ran (never AUTO), that method
 * meets the tolerance, and the choice follows the work: the direct sum for
 * a few hundred points, a binned method (CUTOFF or FGT) where sigma is
 * narrow and the points many; with a gradient the direct sum, the only
 * method that gives one. */
START_TEST(test_auto_gaussian) {
  static const struct {
    int dim;
    size_t n;
    double sigma;
    int binned; /* 1: must choose CUTOFF or FGT; 0: must choose DIRECT; -1: any */
  } cases[] = {{3, 200, 0.05, 0}, {3, 20000, 0.01, 1}, {1, 20000, 0.002, 1}, {2, 3000, 0.5, -1}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const int dim = cases[c].dim;
    const size_t n = cases[c].n;
    double *x = malloc(n * dim * sizeof *x);
    fmmcl_test_cluster_points(UNIFORM, 11, n, dim, x);
    fmmcl_plan_options o = gauss_options(FMMCL_AUTO, FMMCL_DOUBLE, dim, cases[c].sigma, 1e-6);
    outcome r = run(&o, n, x, 0, NULL);
    ck_assert_int_ne(r.ran, FMMCL_AUTO);
    const double bound = isnan(r.bound) ? 1e-6 : r.bound;
    ck_assert_msg(r.error <= bound + 1e-13, "auto chose %s: error %g", fmmcl_method_name(r.ran), r.error);
    if (cases[c].binned == 1)
      ck_assert_msg(r.ran == FMMCL_CUTOFF || r.ran == FMMCL_FGT, "case %zu: auto chose %s", c,
                    fmmcl_method_name(r.ran));
    if (cases[c].binned == 0) ck_assert_int_eq(r.ran, FMMCL_DIRECT);
    free(x);
  }
  const size_t n = 300;
  double *x = malloc(n * 3 * sizeof *x);
  fmmcl_test_cluster_points(UNIFORM, 12, n, 3, x);
  fmmcl_plan_options o = gauss_options(FMMCL_AUTO, FMMCL_DOUBLE, 3, 0.01, 1e-6);
  o.gradient = 1;
  ck_assert_int_eq(fmmcl_test_resolved_method(ctx, &o, n, x), FMMCL_DIRECT);
  free(x);
}
END_TEST

/* AUTO counts each method's plan creation over opt.executions: at one
 * execution and at a million it takes the method of least predicted
 * seconds + creation / executions (fmmcl_model_gaussian), and the plan
 * meets its tolerance either way. 2000 points in 6 dimensions at sigma
 * 0.02 lie mostly alone in their boxes; their lists cost the occupied
 * prefixes the walk visits, milliseconds, so on a CPU even one execution
 * takes a binned sum over the direct sum's 4e6 pairs. executions is
 * refused below 0 and by other kernels. */
START_TEST(test_auto_executions) {
  const size_t n = 2000;
  double *x = malloc(n * 6 * sizeof *x);
  fmmcl_test_cluster_points(UNIFORM, 14, n, 6, x);
  fmmcl_plan_options o = gauss_options(FMMCL_AUTO, FMMCL_DOUBLE, 6, 0.02, 1e-6);
  fmmcl_device_info info;
  ck_assert_int_eq(fmmcl_context_device(ctx, &info), FMMCL_SUCCESS);
  static const fmmcl_method methods[FMMCL_GAUSS_METHODS] = {FMMCL_DIRECT, FMMCL_CUTOFF, FMMCL_FGT, FMMCL_BBFMM};
  const int runs[] = {1, 1000000};
  for (int e = 0; e < 2; e++) {
    o.executions = runs[e];
    outcome r = run(&o, n, x, 0, NULL);
    ck_assert_msg(r.error <= (isnan(r.bound) ? 1e-6 : r.bound) + 1e-13, "%s: error %g",
                  fmmcl_method_name(r.ran), r.error);
    double sec[FMMCL_GAUSS_METHODS], made[FMMCL_GAUSS_METHODS];
    ck_assert_int_eq(fmmcl_model_gaussian(ctx, &o, n, x, 0, NULL, sec, made), FMMCL_SUCCESS);
    int best = 0;
    for (int m = 1; m < FMMCL_GAUSS_METHODS; m++)
      if (sec[m] >= 0 && sec[m] + made[m] / runs[e] < sec[best] + made[best] / runs[e]) best = m;
    ck_assert_msg(r.ran == methods[best], "%d executions: auto chose %s, the model's least is %s", runs[e],
                  fmmcl_method_name(r.ran), fmmcl_method_name(methods[best]));
    if (!info.is_gpu)
      ck_assert_msg(r.ran == FMMCL_CUTOFF || r.ran == FMMCL_FGT, "%d executions: auto chose %s", runs[e],
                    fmmcl_method_name(r.ran));
  }
  fmmcl_plan plan;
  o.executions = -1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert(strstr(fmmcl_last_error(ctx), "executions"));
  fmmcl_plan_options l;
  fmmcl_plan_options_init(&l, FMMCL_LAPLACE_3D);
  l.method = FMMCL_AUTO;
  l.executions = 3;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &l, 600, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert(strstr(fmmcl_last_error(ctx), "executions"));
  free(x);
}
END_TEST

/* The GPU class's model of the tiled cut-off sum: the device fills with
 * targets, so 1e5 points in a few full boxes (d = 3, sigma 1, single: every
 * pair within the cut-off) run the cut-off sum at the all-pairs kernel's
 * rate or above and AUTO must not prefer the direct sum (the H100 measured
 * 7.4 ms against 11.7). The fixture's context is this test's alone. */
START_TEST(test_gpu_model_full_boxes) {
  fmmcl_context g = ctx;
  g->dev.info.is_gpu = 1; /* the model only: nothing runs on it after this */
  const size_t n = 100000;
  double *x = malloc(n * 3 * sizeof *x), t[FMMCL_GAUSS_METHODS];
  fmmcl_test_cluster_points(UNIFORM, 15, n, 3, x);
  fmmcl_plan_options o = gauss_options(FMMCL_AUTO, FMMCL_SINGLE, 3, 1.0, 1e-4);
  ck_assert_int_eq(fmmcl_model_gaussian(g, &o, n, x, 0, NULL, t, NULL), FMMCL_SUCCESS);
  ck_assert_msg(t[FMMCL_GAUSS_CUTOFF] > 0 && t[FMMCL_GAUSS_CUTOFF] < t[FMMCL_GAUSS_DIRECT],
                "cutoff %g s, direct %g s", t[FMMCL_GAUSS_CUTOFF], t[FMMCL_GAUSS_DIRECT]);
  fmmcl_plan_options r;
  ck_assert_int_eq(fmmcl_model_resolve(g, &o, n, x, 0, NULL, &r), FMMCL_SUCCESS);
  ck_assert_msg(r.method != FMMCL_DIRECT, "auto chose %s", fmmcl_method_name(r.method));
  free(x);
}
END_TEST

/* Clear statuses: sigma <= 0 or NaN, a tolerance outside (0, 1) or NaN, a
 * gradient, another kernel, NaN coordinates; and the name round trip. */
START_TEST(test_cutoff_bad_input) {
  const size_t n = 50;
  double x[50 * 3];
  fmmcl_test_cluster_points(UNIFORM, 13, n, 3, x);
  fmmcl_plan plan;
  const double bad_sigma[] = {0, -1, NAN, INFINITY};
  for (size_t i = 0; i < 4; i++) {
    fmmcl_plan_options o = gauss_options(FMMCL_CUTOFF, FMMCL_DOUBLE, 3, bad_sigma[i], 1e-6);
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
    ck_assert(strstr(fmmcl_last_error(ctx), "sigma"));
    o.method = FMMCL_AUTO;
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  }
  const double bad_tol[] = {-1e-6, 1, NAN};
  for (size_t i = 0; i < 3; i++) {
    fmmcl_plan_options o = gauss_options(FMMCL_CUTOFF, FMMCL_DOUBLE, 3, 0.1, bad_tol[i]);
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
    ck_assert(strstr(fmmcl_last_error(ctx), "tolerance"));
  }
  fmmcl_plan_options o = gauss_options(FMMCL_CUTOFF, FMMCL_DOUBLE, 3, 0.1, 1e-6);
  o.gradient = 1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  ck_assert(strstr(fmmcl_last_error(ctx), "gradient"));
  fmmcl_plan_options l;
  fmmcl_plan_options_init(&l, FMMCL_LAPLACE_3D);
  l.method = FMMCL_CUTOFF;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &l, n, x, 0, NULL, &plan), FMMCL_ERROR_UNSUPPORTED);
  ck_assert(strstr(fmmcl_last_error(ctx), "GAUSSIAN"));
  o.gradient = 0;
  x[7] = NAN;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan), FMMCL_ERROR_NONFINITE_INPUT);
  fmmcl_method m;
  ck_assert_int_eq(fmmcl_method_parse("cutoff", &m), FMMCL_SUCCESS);
  ck_assert_int_eq(m, FMMCL_CUTOFF);
  ck_assert_str_eq(fmmcl_method_name(FMMCL_CUTOFF), "cutoff");
}
END_TEST

static Suite *cutoff_suite(void) {
  Suite *s = suite_create("cutoff");
  TCase *tc = tcase_create("cutoff");
  fmmcl_test_context_fixture(tc, &ctx);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(tc, 600); /* cold kernel builds under PoCL */
  tcase_add_loop_test(tc, test_cutoff_tolerance, 0, 8);
  tcase_add_test(tc, test_cutoff_radius);
  tcase_add_test(tc, test_cutoff_empty_neighbourhood);
  tcase_add_test(tc, test_cutoff_all_pairs);
  tcase_add_test(tc, test_auto_gaussian);
  tcase_add_test(tc, test_auto_executions);
  tcase_add_test(tc, test_gpu_model_full_boxes);
  tcase_add_test(tc, test_cutoff_bad_input);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(cutoff_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
