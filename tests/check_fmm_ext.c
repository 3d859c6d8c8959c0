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

static void report(const fmm_case *c, errors e) {
  fprintf(stderr, "%s %s %s ns=%zu nt=%zu q=%d d=%d h=%d tol=%.0e: pot %.2e grad %.2e hess %.2e\n",
          method_word(c->method), c->prec == FMMCL_DOUBLE ? "double" : "float",
          fmmcl_distribution_name(c->dist), c->ns, c->nt, c->charges, c->dipoles, c->hessian, c->tol, e.pot,
          e.grad, e.hess);
}

START_TEST(test_probe) {
  static const fmmcl_distribution dists[] = {FMMCL_DIST_UNIFORM, FMMCL_DIST_CLUSTERS, FMMCL_DIST_SURFACE};
  for (int prec = 0; prec < 2; prec++)
    for (int mth = 0; mth < 2; mth++)
      for (int d = 0; d < 3; d++) {
        fmm_case c = {mth ? FMMCL_TREECODE : FMMCL_FMM,
                      prec ? FMMCL_DOUBLE : FMMCL_SINGLE,
                      dists[d],
                      3000,
                      d == 1 ? 1500 : 0,
                      1,
                      1,
                      1,
                      prec ? 1e-7 : 1e-4};
        report(&c, run_case(&c));
      }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("fmm_ext");
  TCase *tc = tcase_create("laplace");
  tcase_add_unchecked_fixture(tc, open_device, close_device);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_probe);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
