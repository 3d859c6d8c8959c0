/* check_fmm_ext.c — Laplace dipoles and Hessians through the 3D FMM and
 * treecode (fmmcl_plan_evaluate) against fmmcl_reference_evaluate over all
 * targets, float and double, on uniform, clustered and surface sets with
 * targets among or apart from the sources; errors falling as the tolerance
 * tightens; stresslets by FMM against the direct sum. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmmcl.h"
#include "testing/distributions.h"
#include "test_util.h"

static fmmcl_context ctx;

static void open_device(void) {
  ctx = fmmcl_test_context();
  ck_assert_msg(ctx != NULL, "no OpenCL context: %s", fmmcl_last_error(NULL));
}

static void close_device(void) {
  fmmcl_context_destroy(ctx);
  ctx = NULL;
}

/* Relative L2 errors of one evaluation: potential, gradient, Hessian. */
typedef struct {
  double pot, grad, hess;
} errors;

/* What a case sums. */
typedef struct {
  fmmcl_method method;
  fmmcl_precision prec;
  fmmcl_distribution dist;
  size_t ns, nt; /* nt 0: the targets are the sources */
  int charges;   /* with charges as well as dipoles */
  int dipoles;   /* dipole sources */
  int hessian;   /* Hessian output */
  double tol;
} fmm_case;

static double *values(size_t n, unsigned seed) {
  double *v = malloc((n ? n : 1) * sizeof *v);
  ck_assert_ptr_nonnull(v);
  fmmcl_test_random_values(seed, n, -1, 1, v);
  return v;
}

static double *points(fmmcl_distribution d, unsigned seed, size_t n) {
  double *p = malloc(3 * n * sizeof *p);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(fmmcl_distribution_points(d, 3, seed, n, 0, p), 0);
  return p;
}

static errors run_case(const fmm_case *c) {
  fmmcl_plan_options o;
  ck_assert_int_eq(fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D), FMMCL_SUCCESS);
  o.method = c->method;
  o.precision = c->prec;
  o.tolerance = c->tol;
  o.gradient = 1;
  o.dipoles = c->dipoles;
  o.hessian = c->hessian;
  o.leaf_size = 64; /* several levels at a few thousand points */
  double *src = points(c->dist, 1, c->ns);
  const size_t m = c->nt ? c->nt : c->ns;
  /* separate targets: the same shape from another seed */
  double *tgt = c->nt ? points(c->dist, 2, c->nt) : NULL;
  fmmcl_sources_data in = {0};
  in.charges = c->charges ? values(c->ns, 3) : NULL;
  in.dipoles = c->dipoles ? values(3 * c->ns, 4) : NULL;
  double *pot = calloc(m, sizeof *pot), *grad = calloc(3 * m, sizeof *grad);
  double *hess = c->hessian ? calloc(6 * m, sizeof *hess) : NULL;
  double *rpot = calloc(m, sizeof *rpot), *rgrad = calloc(3 * m, sizeof *rgrad);
  double *rhess = calloc(6 * m, sizeof *rhess);
  ck_assert(pot && grad && rpot && rgrad && rhess && (hess || !c->hessian));
  fmmcl_plan plan;
  fmmcl_status st = fmmcl_plan_create(ctx, &o, c->ns, src, c->nt, tgt, &plan);
  ck_assert_msg(st == FMMCL_SUCCESS, "plan: %s", fmmcl_last_error(ctx));
  fmmcl_targets_data out = {.potential = pot, .gradient = grad, .hessian = hess};
  st = fmmcl_plan_evaluate(plan, &in, &out);
  ck_assert_msg(st == FMMCL_SUCCESS, "evaluate: %s", fmmcl_last_error(ctx));
  fmmcl_plan_destroy(plan);
  fmmcl_plan_options ro = o;
  ro.method = FMMCL_DIRECT;
  ro.hessian = 1;
  fmmcl_targets_data ref = {.potential = rpot, .gradient = rgrad, .hessian = rhess};
  st = fmmcl_reference_evaluate(&ro, c->ns, src, &in, c->nt, tgt, &ref);
  ck_assert_msg(st == FMMCL_SUCCESS, "reference: %s", fmmcl_last_error(NULL));
  errors e = {fmmcl_test_rel_l2(pot, rpot, m), fmmcl_test_rel_l2(grad, rgrad, 3 * m),
              c->hessian ? fmmcl_test_rel_l2(hess, rhess, 6 * m) : 0};
  free(src), free(tgt), free((void *)in.charges), free((void *)in.dipoles);
  free(pot), free(grad), free(hess), free(rpot), free(rgrad), free(rhess);
  return e;
}

static const char *method_word(fmmcl_method m) { return m == FMMCL_FMM ? "fmm" : "treecode"; }

/* The promise of the tolerance (as check_fmm3d.c states it for charges):
 * the potential within tol in relative L2 over all targets; gradients and
 * Hessians, one and two derivatives further from it, within ten times. */
static void expect_within(const fmm_case *c) {
  const errors e = run_case(c);
  const char *dist = fmmcl_distribution_name(c->dist);
  const char *prec = c->prec == FMMCL_DOUBLE ? "double" : "float";
  ck_assert_msg(e.pot <= c->tol, "%s %s %s tol %.0e: potential error %.3e", method_word(c->method), prec,
                dist, c->tol, e.pot);
  ck_assert_msg(e.grad <= 10 * c->tol, "%s %s %s tol %.0e: gradient error %.3e", method_word(c->method), prec,
                dist, c->tol, e.grad);
  ck_assert_msg(e.hess <= 10 * c->tol, "%s %s %s tol %.0e: Hessian error %.3e", method_word(c->method), prec,
                dist, c->tol, e.hess);
}

/* The three shapes: uniform and surface with the targets at the sources,
 * clusters with targets of their own (a point never sees itself). */
static const fmmcl_distribution shapes[] = {FMMCL_DIST_UNIFORM, FMMCL_DIST_SURFACE, FMMCL_DIST_CLUSTERS};

static fmm_case shape_case(fmmcl_method method, fmmcl_precision prec, int shape) {
  const fmm_case c = {
      method, prec, shapes[shape], 3000, shape == 2 ? 2000 : 0, 1, 1, 1, prec == FMMCL_DOUBLE ? 1e-7 : 1e-4};
  return c;
}

/* Charges and dipoles, potential, gradient and Hessian. */
START_TEST(test_fmm_float) {
  const fmm_case c = shape_case(FMMCL_FMM, FMMCL_SINGLE, _i);
  expect_within(&c);
}
END_TEST

START_TEST(test_fmm_double) {
  const fmm_case c = shape_case(FMMCL_FMM, FMMCL_DOUBLE, _i);
  expect_within(&c);
}
END_TEST

START_TEST(test_treecode_float) {
  const fmm_case c = shape_case(FMMCL_TREECODE, FMMCL_SINGLE, _i);
  expect_within(&c);
}
END_TEST

START_TEST(test_treecode_double) {
  const fmm_case c = shape_case(FMMCL_TREECODE, FMMCL_DOUBLE, _i);
  expect_within(&c);
}
END_TEST

/* Dipoles alone and charges with a Hessian alone: each part of the
 * expansions carries its own error. */
START_TEST(test_parts) {
  const fmm_case dip = {FMMCL_FMM, FMMCL_DOUBLE, FMMCL_DIST_UNIFORM, 3000, 2000, 0, 1, 0, 1e-6};
  const fmm_case hess = {FMMCL_FMM, FMMCL_DOUBLE, FMMCL_DIST_UNIFORM, 3000, 2000, 1, 0, 1, 1e-6};
  const fmm_case tc = {FMMCL_TREECODE, FMMCL_SINGLE, FMMCL_DIST_CLUSTERS, 3000, 0, 0, 1, 1, 1e-4};
  expect_within(&dip);
  expect_within(&hess);
  expect_within(&tc);
}
END_TEST

/* The far field's error follows the tolerance down (so the dipole moments
 * and the second derivatives of L2P and M2P are those of the sum, not
 * only the near field's): each step of 1e-3 cuts every error. */
START_TEST(test_error_falls) {
  static const double tols[] = {1e-3, 1e-6, 1e-9};
  const fmmcl_method method = _i ? FMMCL_TREECODE : FMMCL_FMM;
  errors last = {INFINITY, INFINITY, INFINITY};
  for (size_t k = 0; k < sizeof tols / sizeof tols[0]; k++) {
    const fmm_case c = {method, FMMCL_DOUBLE, FMMCL_DIST_UNIFORM, 2000, 1500, 1, 1, 1, tols[k]};
    const errors e = run_case(&c);
    ck_assert_msg(e.pot < last.pot / 10 && e.grad < last.grad / 10 && e.hess < last.hess / 10,
                  "%s tol %.0e: errors %.3e %.3e %.3e did not fall from %.3e %.3e %.3e", method_word(method),
                  tols[k], e.pot, e.grad, e.hess, last.pot, last.grad, last.hess);
    ck_assert_msg(e.pot <= tols[k] && e.hess <= 10 * tols[k], "%s tol %.0e: errors %.3e %.3e",
                  method_word(method), tols[k], e.pot, e.hess);
    last = e;
  }
}
END_TEST

/* A dipole plan executed with charges only (fmmcl_plan_execute) sums what
 * a charge plan does: its dipoles are zero, not left over from an evaluate. */
START_TEST(test_execute_charges) {
  const size_t n = 2000;
  double *src = points(FMMCL_DIST_UNIFORM, 5, n), *q = values(n, 6), *d = values(3 * n, 7);
  double *p0 = malloc(n * sizeof *p0), *p1 = malloc(n * sizeof *p1), *g0 = malloc(3 * n * sizeof *g0),
         *g1 = malloc(3 * n * sizeof *g1), *scratch = malloc(n * sizeof *scratch);
  ck_assert(p0 && p1 && g0 && g1 && scratch);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM;
  o.precision = FMMCL_DOUBLE;
  o.leaf_size = 64;
  fmmcl_plan plain, dip;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, src, 0, NULL, &plain), FMMCL_SUCCESS);
  o.dipoles = 1;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, src, 0, NULL, &dip), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(plain, q, p0, g0), FMMCL_SUCCESS);
  fmmcl_sources_data in = {.charges = q, .dipoles = d};
  fmmcl_targets_data out = {.potential = scratch};
  ck_assert_int_eq(fmmcl_plan_evaluate(dip, &in, &out), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(dip, q, p1, g1), FMMCL_SUCCESS);
  ck_assert_double_le(fmmcl_test_rel_l2(p1, p0, n), 1e-14);
  ck_assert_double_le(fmmcl_test_rel_l2(g1, g0, 3 * n), 1e-14);
  fmmcl_plan_destroy(plain);
  fmmcl_plan_destroy(dip);
  free(src), free(q), free(d), free(p0), free(p1), free(g0), free(g1), free(scratch);
}
END_TEST

/* ---- stresslets by FMM -------------------------------------------------------- */

/* max_i |a_i - b_i| / max_i |b_i|, per values to a target. */
static double max_rel(const double *a, const double *b, size_t n, size_t per) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < n; i++) {
    double e = 0, r = 0;
    for (size_t c = 0; c < per; c++) {
      e += (a[i * per + c] - b[i * per + c]) * (a[i * per + c] - b[i * per + c]);
      r += b[i * per + c] * b[i * per + c];
    }
    err = fmax(err, sqrt(e)), ref = fmax(ref, sqrt(r));
  }
  return ref > 0 ? err / ref : err;
}

/* Stokeslets and stresslets (and stresslets alone) by four Laplace FMMs
 * with charges and dipoles against the reference over all targets, sets
 * moved off the origin by 5, velocity and pressure, as check_kernels_ext.c
 * holds the Stokeslet FMM: double at tol 1e-6 on a surface, float at 1e-3
 * in a cube, each within
 * tol plus 30 times the plan's rounding estimate (float's rounding of the
 * coordinates enters terms that cancel, see there). */
START_TEST(test_stresslet_fmm) {
  const fmmcl_precision prec = _i ? FMMCL_SINGLE : FMMCL_DOUBLE;
  const fmmcl_distribution d = _i ? FMMCL_DIST_UNIFORM : FMMCL_DIST_SURFACE;
  const size_t n = 1500;
  const double tol = prec == FMMCL_DOUBLE ? 1e-6 : 1e-3;
  double *x = malloc(3 * n * sizeof *x), *f = values(3 * n, 31), *ss = values(3 * n, 32),
         *sn = values(3 * n, 33);
  double *u = malloc(3 * n * sizeof *u), *p = malloc(n * sizeof *p);
  double *ru = malloc(3 * n * sizeof *ru), *rp = malloc(n * sizeof *rp);
  ck_assert(x && u && p && ru && rp);
  ck_assert_int_eq(fmmcl_distribution_points(d, 3, 41, n, 5.0, x), 0);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_STOKES_3D);
  o.method = FMMCL_FMM;
  o.precision = prec;
  o.tolerance = tol;
  o.pressure = 1;
  o.stresslets = 1;
  o.leaf_size = 64; /* a far field at this size */
  fmmcl_plan plan;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  double est, dist;
  ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, NULL, &est, &dist), FMMCL_SUCCESS);
  const double bound = tol + 30 * est;
  for (int forces = 1; forces >= 0; forces--) {
    const fmmcl_sources_data in = {
        .forces = forces ? f : NULL, .stresslet_strengths = ss, .stresslet_orientations = sn};
    fmmcl_targets_data out = {.velocity = u, .pressure = p}, ref = {.velocity = ru, .pressure = rp};
    ck_assert_msg(fmmcl_plan_evaluate(plan, &in, &out) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
    ck_assert_int_eq(fmmcl_reference_evaluate(&o, n, x, &in, 0, NULL, &ref), FMMCL_SUCCESS);
    const double eu = max_rel(u, ru, n, 3), ep = max_rel(p, rp, n, 1);
    if (getenv("FMMCL_TEST_VERBOSE"))
      printf("stresslet fmm %s %s forces %d: %.3g %.3g est %.3g\n", fmmcl_distribution_name(d),
             prec == FMMCL_DOUBLE ? "double" : "float", forces, eu, ep, est);
    ck_assert_msg(eu <= bound && ep <= bound, "%s %s forces %d: velocity %.3g pressure %.3g > %g",
                  fmmcl_distribution_name(d), prec == FMMCL_DOUBLE ? "double" : "single", forces, eu, ep,
                  bound);
  }
  fmmcl_plan_info info;
  ck_assert_int_eq(fmmcl_plan_describe(plan, &info), FMMCL_SUCCESS);
  ck_assert_int_gt(info.order, 0);
  fmmcl_plan_destroy(plan);
  free(x), free(f), free(ss), free(sn), free(u), free(p), free(ru), free(rp);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("fmm_ext");
  TCase *tc = tcase_create("laplace");
  /* per test, in its own process: an OpenCL context does not survive fork */
  tcase_add_checked_fixture(tc, open_device, close_device);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_fmm_float, 0, 3);
  tcase_add_loop_test(tc, test_fmm_double, 0, 3);
  tcase_add_loop_test(tc, test_treecode_float, 0, 3);
  tcase_add_loop_test(tc, test_treecode_double, 0, 3);
  tcase_add_test(tc, test_parts);
  tcase_add_loop_test(tc, test_error_falls, 0, 2);
  tcase_add_test(tc, test_execute_charges);
  suite_add_tcase(s, tc);
  TCase *st = tcase_create("stokes");
  tcase_add_checked_fixture(st, open_device, close_device);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(st, 300);
  tcase_add_loop_test(st, test_stresslet_fmm, 0, 2);
  suite_add_tcase(s, st);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
