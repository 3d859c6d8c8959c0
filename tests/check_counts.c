/* check_counts.c — fmmcl_plan_counts: the work each phase does, against what
 * the method must do (all pairs for DIRECT; for the FMM and treecode every
 * source in one P2M, a near field of at most all pairs, a far field), and
 * the status of bad arguments. */
#include <check.h>
#include <stdlib.h>

#include "fmmcl.h"
#include "test_util.h"

static const char *const ops[] = {"p2p", "p2m", "m2m", "m2l", "p2l", "l2l", "l2p", "m2p"};
#define N_OPS (sizeof ops / sizeof ops[0])

static fmmcl_context ctx;

/* Checked fixture: each test opens its own device after Check's fork. */
static void setup(void) {
  ctx = fmmcl_test_context();
  ck_assert_ptr_nonnull(ctx);
}
static void teardown(void) { fmmcl_context_destroy(ctx); }

/* A plan of method on n uniform sources (and m separate targets, m > 0). */
static fmmcl_plan make_plan(fmmcl_method method, size_t n, size_t m, int leaf) {
  double *x = malloc(3 * n * sizeof *x), *y = m ? malloc(3 * m * sizeof *y) : NULL;
  ck_assert_ptr_nonnull(x);
  fmmcl_test_random_points(11, n, 3, x);
  if (m) fmmcl_test_random_points(12, m, 3, y);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = method;
  o.leaf_size = leaf;
  o.order = method == FMMCL_DIRECT ? 0 : 3; /* counts do not depend on p */
  fmmcl_plan plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, n, x, m, y, &plan), FMMCL_SUCCESS);
  free(x);
  free(y);
  return plan;
}

static double count(fmmcl_plan plan, const char *phase) {
  double w = -1;
  ck_assert_int_eq(fmmcl_plan_counts(plan, phase, &w), FMMCL_SUCCESS);
  ck_assert(w >= 0);
  return w;
}

START_TEST(test_direct_all_pairs) {
  fmmcl_plan plan = make_plan(FMMCL_DIRECT, 500, 300, 0);
  ck_assert(count(plan, "p2p") == 500.0 * 300.0);
  for (size_t i = 1; i < N_OPS; i++) ck_assert(count(plan, ops[i]) == 0); /* phases it never runs */
  fmmcl_plan_destroy(plan);
}
END_TEST

/* N = 8000 with q = 16 makes ~500 leaves, levels down to 3 or 4: V lists
 * (level >= 2) are non-empty, and the near field is a small part of N^2. */
START_TEST(test_fmm_counts) {
  const double n = 8000;
  fmmcl_plan plan = make_plan(FMMCL_FMM, 8000, 0, 16);
  const double p2p = count(plan, "p2p");
  /* every target meets at least its own leaf's sources (itself included),
   * and never more than all sources */
  ck_assert(p2p >= n);
  ck_assert(p2p < n * n / 4);
  ck_assert(count(plan, "m2l") > 0);
  ck_assert(count(plan, "p2m") == n); /* each source in exactly one leaf */
  ck_assert(count(plan, "l2p") == n);
  ck_assert(count(plan, "m2m") > 0);
  ck_assert(count(plan, "l2l") > 0);
  fmmcl_plan_destroy(plan);
}
END_TEST

START_TEST(test_treecode_counts) {
  const double n = 8000;
  fmmcl_plan plan = make_plan(FMMCL_TREECODE, 8000, 0, 16);
  const double p2p = count(plan, "p2p"), m2p = count(plan, "m2p");
  ck_assert(p2p >= n && p2p < n * n / 4);
  /* far field: each target meets at least one accepted cell */
  ck_assert(m2p >= n);
  ck_assert(count(plan, "p2m") == n);
  /* no local expansions in a treecode */
  ck_assert(count(plan, "m2l") == 0 && count(plan, "p2l") == 0);
  ck_assert(count(plan, "l2l") == 0 && count(plan, "l2p") == 0);
  fmmcl_plan_destroy(plan);
}
END_TEST

START_TEST(test_bad_arguments) {
  fmmcl_plan plan = make_plan(FMMCL_DIRECT, 10, 0, 0);
  double w = 7;
  ck_assert_int_eq(fmmcl_plan_counts(plan, "m2x", &w), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert(w == 7); /* untouched on failure */
  ck_assert_int_eq(fmmcl_plan_counts(plan, "build", &w), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_plan_counts(plan, "P2P", &w), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_plan_counts(plan, NULL, &w), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_counts(plan, "p2p", NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_counts(NULL, "p2p", &w), FMMCL_ERROR_NULL_POINTER);
  ck_assert_str_ne(fmmcl_last_error(ctx), "");
  fmmcl_plan_destroy(plan);
}
END_TEST

static Suite *counts_suite(void) {
  Suite *s = suite_create("counts");
  TCase *tc = tcase_create("plan_counts");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_direct_all_pairs);
  tcase_add_test(tc, test_fmm_counts);
  tcase_add_test(tc, test_treecode_counts);
  tcase_add_test(tc, test_bad_arguments);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(counts_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
