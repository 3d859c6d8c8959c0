/* check_update.c — fmmcl_plan_update_positions and its device-buffer form
 * fmmcl_plan_update_positions_buffers: a plan moved to new positions gives
 * what a plan made there gives, for every method; a refused update leaves
 * the plan working on its old positions. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmmcl.h"
#include "fmmcl_cl.h"
#include "test_util.h"

static fmmcl_context ctx;

typedef struct {
  fmmcl_kernel kernel;
  fmmcl_method method;
  fmmcl_precision precision;
  int dim, separate_targets;
} update_case;

static const update_case cases[] = {
    {FMMCL_LAPLACE_3D, FMMCL_FMM, FMMCL_SINGLE, 3, 0},
    {FMMCL_LAPLACE_3D, FMMCL_TREECODE, FMMCL_DOUBLE, 3, 1},
    {FMMCL_LAPLACE_3D, FMMCL_DIRECT, FMMCL_SINGLE, 3, 1},
    {FMMCL_LAPLACE_2D, FMMCL_FMM, FMMCL_DOUBLE, 2, 0},
    {FMMCL_GAUSSIAN, FMMCL_FGT, FMMCL_DOUBLE, 2, 1},
    {FMMCL_LAPLACE_3D, FMMCL_AUTO, FMMCL_DOUBLE, 3, 0},
};

static void options(const update_case *c, fmmcl_plan_options *o) {
  fmmcl_plan_options_init(o, c->kernel);
  o->method = c->method, o->precision = c->precision, o->dim = c->dim;
  if (c->kernel == FMMCL_GAUSSIAN) o->sigma = 0.1, o->gradient = 0;
}

/* The update from host arrays, or (via_buffers) from device buffers of
 * the plan's context holding the same doubles; dim coordinates a point. */
static fmmcl_status update(fmmcl_plan plan, int via_buffers, size_t dim, size_t ns, const double *x,
                           size_t nt, const double *y) {
  if (!via_buffers) return fmmcl_plan_update_positions(plan, x, y);
  cl_context cl;
  ck_assert_int_eq(fmmcl_context_cl_handles(ctx, &cl, NULL, NULL), FMMCL_SUCCESS);
  cl_int e1 = CL_SUCCESS, e2 = CL_SUCCESS;
  cl_mem bx =
      clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, dim * ns * sizeof *x, (void *)x, &e1);
  cl_mem by =
      y ? clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, dim * nt * sizeof *y, (void *)y, &e2)
        : NULL;
  ck_assert_int_eq(e1, CL_SUCCESS);
  ck_assert_int_eq(e2, CL_SUCCESS);
  const fmmcl_status st = fmmcl_plan_update_positions_buffers(plan, bx, by);
  clReleaseMemObject(bx);
  if (by) clReleaseMemObject(by);
  return st;
}

static void run(fmmcl_plan plan, const double *q, size_t nt, double *pot, double *grad) {
  ck_assert_msg(fmmcl_plan_execute(plan, q, pot, grad) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
  (void)nt;
}

/* Positions A, then B (A moved by a step and stretched, so the tree
 * changes): the moved plan's results are the fresh plan's on B; from host
 * arrays, then (the second half of the loop) from device buffers. */
START_TEST(test_moved_equals_fresh) {
  const int n_cases = (int)(sizeof cases / sizeof *cases), via_buffers = _i >= n_cases;
  const update_case *c = &cases[_i % n_cases];
  enum { NS = 2500, NT = 1500 };
  const size_t dim = (size_t)c->dim, nt = c->separate_targets ? NT : NS;
  double *a = malloc(NS * dim * sizeof *a), *b = malloc(NS * dim * sizeof *b);
  double *ta = malloc(NT * dim * sizeof *ta), *tb = malloc(NT * dim * sizeof *tb),
         *q = malloc(NS * sizeof *q);
  double *pot = malloc(nt * sizeof *pot), *grad = malloc(nt * dim * sizeof *grad);
  double *pot2 = malloc(nt * sizeof *pot2), *grad2 = malloc(nt * dim * sizeof *grad2);
  fmmcl_test_random_points(31, NS, c->dim, a);
  fmmcl_test_random_points(32, NT, c->dim, ta);
  for (size_t i = 0; i < NS * dim; i++) b[i] = 1.7 * a[i] * a[i] + 0.3;
  for (size_t i = 0; i < NT * dim; i++) tb[i] = 1.7 * ta[i] * ta[i] + 0.3;
  fmmcl_test_random_values(33, NS, -1, 1, q);
  fmmcl_plan_options o;
  options(c, &o);
  const double *tgt_a = c->separate_targets ? ta : NULL, *tgt_b = c->separate_targets ? tb : NULL;
  fmmcl_plan moved = NULL, fresh = NULL;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, NS, a, nt, tgt_a, &moved) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  double *g = o.gradient ? grad : NULL, *g2 = o.gradient ? grad2 : NULL;
  run(moved, q, nt, pot, g);
  ck_assert_msg(update(moved, via_buffers, dim, NS, b, nt, tgt_b) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  run(moved, q, nt, pot, g);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, NS, b, nt, tgt_b, &fresh), FMMCL_SUCCESS);
  run(fresh, q, nt, pot2, g2);
  /* the same tree and kernels: the same numbers */
  for (size_t i = 0; i < nt; i++)
    ck_assert_msg(pot[i] == pot2[i], "case %d target %zu: %g vs %g", _i, i, pot[i], pot2[i]);
  for (size_t i = 0; g && i < nt * dim; i++) ck_assert(grad[i] == grad2[i]);
  /* and they are B's sums, not A's */
  double *ref = malloc(nt * sizeof *ref);
  fmmcl_plan_options r = o;
  ck_assert_int_eq(fmmcl_reference_direct(&r, NS, b, q, nt, c->separate_targets ? tb : b, ref, NULL),
                   FMMCL_SUCCESS);
  const double tol = c->precision == FMMCL_SINGLE ? 1e-3 : 1e-5;
  ck_assert_msg(fmmcl_test_rel_l2(pot, ref, nt) <= tol, "case %d: error %g", _i,
                fmmcl_test_rel_l2(pot, ref, nt));
  /* the update is timed, and the next execute keeps that time */
  fmmcl_phase_time ph[64];
  size_t count = 0;
  int seen = 0;
  ck_assert_int_eq(fmmcl_plan_timings(moved, ph, 64, &count), FMMCL_SUCCESS);
  for (size_t i = 0; i < count && i < 64; i++) seen |= strcmp(ph[i].name, "update") == 0;
  ck_assert_msg(seen, "no update phase after execute");
  fmmcl_plan_destroy(moved), fmmcl_plan_destroy(fresh);
  free(a), free(b), free(ta), free(tb), free(q), free(pot), free(grad), free(pot2), free(grad2), free(ref);
}
END_TEST

/* The refusal tests' plan: a 3D FMM on N points x with charges q, its
 * sums before any update kept; y a copy of x for the refused positions. */
enum { REFUSAL_N = 1200 };
typedef struct {
  double *x, *y, q[REFUSAL_N], before[REFUSAL_N];
  fmmcl_plan_options o;
  fmmcl_plan plan;
} refusal;

static void refusal_open(unsigned seed, refusal *r) {
  r->x = malloc(3 * REFUSAL_N * sizeof *r->x), r->y = malloc(3 * REFUSAL_N * sizeof *r->y);
  fmmcl_test_random_points(seed, REFUSAL_N, 3, r->x);
  fmmcl_test_random_values(seed + 1, REFUSAL_N, -1, 1, r->q);
  memcpy(r->y, r->x, 3 * REFUSAL_N * sizeof *r->y);
  fmmcl_plan_options_init(&r->o, FMMCL_LAPLACE_3D);
  r->o.method = FMMCL_FMM, r->o.gradient = 0;
  r->plan = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &r->o, REFUSAL_N, r->x, 0, NULL, &r->plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(r->plan, r->q, r->before, NULL), FMMCL_SUCCESS);
}

/* The plan still sums on its old positions, bit for bit; then freed. */
static void refusal_close(refusal *r) {
  double after[REFUSAL_N];
  ck_assert_int_eq(fmmcl_plan_execute(r->plan, r->q, after, NULL), FMMCL_SUCCESS);
  for (int i = 0; i < REFUSAL_N; i++)
    ck_assert_msg(r->before[i] == after[i], "target %d: %g vs %g", i, r->before[i], after[i]);
  fmmcl_plan_destroy(r->plan);
  free(r->x), free(r->y);
}

/* Refused updates: each with one status, and the plan still sums on its
 * old positions afterwards, bit for bit. */
START_TEST(test_refused_keeps_plan) {
  refusal r;
  refusal_open(41, &r);
  double *x = r.x, *y = r.y;
  y[3 * 7 + 1] = NAN;
  ck_assert_int_eq(fmmcl_plan_update_positions(r.plan, y, NULL), FMMCL_ERROR_NONFINITE_INPUT);
  y[3 * 7 + 1] = 1e30; /* r^2 overflows single precision */
  ck_assert_int_eq(fmmcl_plan_update_positions(r.plan, y, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_plan_update_positions(r.plan, x, x), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_plan_update_positions(r.plan, NULL, NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_update_positions(NULL, x, NULL), FMMCL_ERROR_NULL_POINTER);
  /* a hybrid schedule's plan is rebuilt by the call that made it */
  fmmcl_plan hybrid = NULL;
  if (fmmcl_plan_create_hybrid(ctx, NULL, &r.o, REFUSAL_N, x, 0, NULL, FMMCL_SCHEDULE_GPU, &hybrid) ==
      FMMCL_SUCCESS) {
    ck_assert_int_eq(fmmcl_plan_update_positions(hybrid, x, NULL), FMMCL_ERROR_UNSUPPORTED);
    fmmcl_plan_destroy(hybrid);
  }
  refusal_close(&r);
}
END_TEST

/* Refused updates from device buffers: a buffer of another context or too
 * small, points the checks refuse (NaN, a range single precision cannot
 * hold), targets where the targets are the sources; the plan still sums on
 * its old positions afterwards, bit for bit. */
START_TEST(test_buffers_refused_keeps_plan) {
  enum { N = REFUSAL_N };
  refusal r;
  refusal_open(43, &r);
  double *x = r.x, *y = r.y;
  cl_context cl;
  cl_device_id dev;
  ck_assert_int_eq(fmmcl_context_cl_handles(ctx, &cl, NULL, &dev), FMMCL_SUCCESS);
  cl_int err = CL_SUCCESS;
  cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  cl_mem foreign = clCreateBuffer(other, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 3 * N * sizeof *x, x, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_update_positions_buffers(r.plan, foreign, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  cl_mem small = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 3 * N * sizeof *x - 8, x, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_update_positions_buffers(r.plan, small, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  y[3 * 7 + 1] = NAN;
  ck_assert_int_eq(update(r.plan, 1, 3, N, y, 0, NULL), FMMCL_ERROR_NONFINITE_INPUT);
  y[3 * 7 + 1] = INFINITY;
  ck_assert_int_eq(update(r.plan, 1, 3, N, y, 0, NULL), FMMCL_ERROR_NONFINITE_INPUT);
  y[3 * 7 + 1] = 1e30; /* r^2 overflows single precision */
  ck_assert_int_eq(update(r.plan, 1, 3, N, y, 0, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(update(r.plan, 1, 3, N, x, N, x), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_plan_update_positions_buffers(r.plan, NULL, NULL), FMMCL_ERROR_NULL_POINTER);
  ck_assert_int_eq(fmmcl_plan_update_positions_buffers(NULL, small, NULL), FMMCL_ERROR_NULL_POINTER);
  refusal_close(&r);
  clReleaseMemObject(foreign), clReleaseMemObject(small), clReleaseContext(other);
}
END_TEST

/* Whether the plan's phases name phase (before the next execute: what the
 * last update did; a rebuild records "lists", an update in place not). */
static int has_phase(fmmcl_plan plan, const char *phase) {
  fmmcl_phase_time ph[64];
  size_t count = 0;
  ck_assert_int_eq(fmmcl_plan_timings(plan, ph, 64, &count), FMMCL_SUCCESS);
  for (size_t i = 0; i < count && i < 64; i++)
    if (strcmp(ph[i].name, phase) == 0) return 1;
  return 0;
}

typedef struct {
  fmmcl_precision precision;
  int separate_targets, close_pair; /* close_pair: two sources 1e-7 apart (double compensates) */
  int leaf_size;    /* 0: the default; 1500: leaves of more points than a work-group has items */
  const char *grow; /* FMMCL_FMM3D_GROW for the plan (a grown root cube, as GPUs take), or NULL */
} in_place_case;

static const in_place_case in_place_cases[] = {
    {FMMCL_SINGLE, 0, 0, 0, NULL}, {FMMCL_DOUBLE, 1, 0, 0, NULL},    {FMMCL_DOUBLE, 0, 1, 0, NULL},
    {FMMCL_SINGLE, 1, 1, 0, NULL}, {FMMCL_SINGLE, 0, 0, 1500, NULL}, {FMMCL_SINGLE, 1, 0, 0, "1.61"},
};

/* After each update, over every target, bit for bit what a plan made on
 * those positions gives, and within the tolerance of the direct sum. */
static void expect_fresh(const fmmcl_plan_options *o, fmmcl_plan moved, size_t ns, const double *x, size_t nt,
                         const double *y, const double *q, const char *what) {
  double *pot = malloc(nt * sizeof *pot), *grad = malloc(3 * nt * sizeof *grad);
  double *pot2 = malloc(nt * sizeof *pot2), *grad2 = malloc(3 * nt * sizeof *grad2);
  double *ref = malloc(nt * sizeof *ref);
  fmmcl_plan fresh = NULL;
  run(moved, q, nt, pot, grad);
  ck_assert_int_eq(fmmcl_plan_create(ctx, o, ns, x, nt, y, &fresh), FMMCL_SUCCESS);
  run(fresh, q, nt, pot2, grad2);
  for (size_t i = 0; i < nt; i++)
    ck_assert_msg(pot[i] == pot2[i], "%s: target %zu: %.17g vs %.17g", what, i, pot[i], pot2[i]);
  for (size_t i = 0; i < 3 * nt; i++)
    ck_assert_msg(grad[i] == grad2[i], "%s: gradient %zu: %.17g vs %.17g", what, i, grad[i], grad2[i]);
  ck_assert_int_eq(fmmcl_reference_direct(o, ns, x, q, nt, y ? y : x, ref, NULL), FMMCL_SUCCESS);
  const double err = fmmcl_test_rel_l2(pot, ref, nt), tol = o->precision == FMMCL_SINGLE ? 1e-3 : 1e-5;
  ck_assert_msg(err <= tol, "%s: error %g", what, err);
  fmmcl_plan_destroy(fresh);
  free(pot), free(grad), free(pot2), free(grad2), free(ref);
}

/* Time steps of a 3D FMM: small moves keep the octree, and the plan is
 * updated in place (no lists rebuilt), then moved back, then stretched so
 * that the tree changes and the plan is rebuilt; every state sums as a
 * fresh plan does; from host arrays, then (the second half of the loop)
 * from device buffers. */
START_TEST(test_in_place_steps) {
  const int n_cases = (int)(sizeof in_place_cases / sizeof *in_place_cases), b = _i >= n_cases;
  const in_place_case *c = &in_place_cases[_i % n_cases];
  enum { NS = 4000, NT = 2000 };
  const size_t nt = c->separate_targets ? NT : NS;
  double *x = malloc(3 * NS * sizeof *x), *x2 = malloc(3 * NS * sizeof *x2), *y = malloc(3 * NT * sizeof *y);
  double *y2 = malloc(3 * NT * sizeof *y2), *d = malloc(3 * NS * sizeof *d), *q = malloc(NS * sizeof *q);
  fmmcl_test_random_points(51, NS, 3, x);
  fmmcl_test_random_points(52, NT, 3, y);
  fmmcl_test_random_points(53, NS, 3, d);
  fmmcl_test_random_values(54, NS, -1, 1, q);
  if (c->close_pair)
    for (int k = 0; k < 3; k++) x[3 * 9 + k] = x[3 * 8 + k] + (k ? 0 : 1e-7);
  /* a time step: every point moved by up to 1e-3 (the close pair together) */
  for (size_t i = 0; i < 3 * NS; i++) x2[i] = x[i] + 2e-3 * (d[i] - 0.5);
  for (size_t i = 0; i < 3 * NT; i++) y2[i] = y[i] + 2e-3 * (d[i] - 0.5);
  if (c->close_pair)
    for (int k = 0; k < 3; k++) x2[3 * 9 + k] = x2[3 * 8 + k] + (k ? 0 : 1e-7);
  if (c->grow) ck_assert_int_eq(setenv("FMMCL_FMM3D_GROW", c->grow, 1), 0);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM, o.precision = c->precision, o.leaf_size = c->leaf_size;
  const double *ya = c->separate_targets ? y : NULL, *yb = c->separate_targets ? y2 : NULL;
  fmmcl_plan plan = NULL;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, NS, x, nt, ya, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert_msg(update(plan, b, 3, NS, x2, nt, yb) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
  ck_assert_msg(!has_phase(plan, "lists"), "case %d: a small move rebuilt the tree", _i);
  expect_fresh(&o, plan, NS, x2, nt, yb, q, "moved");
  ck_assert_int_eq(update(plan, b, 3, NS, x, nt, ya), FMMCL_SUCCESS);
  ck_assert_msg(!has_phase(plan, "lists"), "case %d: the move back rebuilt the tree", _i);
  expect_fresh(&o, plan, NS, x, nt, ya, q, "moved back");
  /* stretched towards a corner: the leaves there overflow */
  for (size_t i = 0; i < 3 * NS; i++) x2[i] = x[i] * x[i] * x[i];
  for (size_t i = 0; i < 3 * NT; i++) y2[i] = y[i] * y[i] * y[i];
  ck_assert_int_eq(update(plan, b, 3, NS, x2, nt, yb), FMMCL_SUCCESS);
  ck_assert_msg(has_phase(plan, "lists"), "case %d: a new tree was not built", _i);
  expect_fresh(&o, plan, NS, x2, nt, yb, q, "stretched");
  /* and in place again from the new tree */
  for (size_t i = 0; i < 3 * NS; i++) x[i] = x2[i] + 1e-6 * (d[i] - 0.5);
  for (size_t i = 0; i < 3 * NT; i++) y[i] = y2[i] + 1e-6 * (d[i] - 0.5);
  ck_assert_int_eq(update(plan, b, 3, NS, x, nt, ya), FMMCL_SUCCESS);
  expect_fresh(&o, plan, NS, x, nt, ya, q, "stretched and moved");
  /* the rounding estimate finds its pair's leaves through the permutation
   * the update left on the device: as a fresh plan's */
  ck_assert_int_eq(update(plan, b, 3, NS, x2, nt, yb), FMMCL_SUCCESS);
  ck_assert_int_eq(update(plan, b, 3, NS, x, nt, ya), FMMCL_SUCCESS);
  ck_assert_msg(!has_phase(plan, "lists"), "case %d: a tiny move rebuilt the tree", _i);
  fmmcl_plan fresh = NULL;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, NS, x, nt, ya, &fresh), FMMCL_SUCCESS);
  double e1, d1, e2, d2;
  ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, ya, &e1, &d1), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_rounding_estimate(fresh, x, ya, &e2, &d2), FMMCL_SUCCESS);
  ck_assert_msg(e1 == e2 && d1 == d2, "case %d: estimate %g at %g, fresh %g at %g", _i, e1, d1, e2, d2);
  fmmcl_plan_destroy(fresh);
  fmmcl_plan_destroy(plan);
  if (c->grow) unsetenv("FMMCL_FMM3D_GROW");
  free(x), free(x2), free(y), free(y2), free(d), free(q);
}
END_TEST

int main(void) {
  Suite *s = suite_create("update");
  TCase *tc = tcase_create("positions");
  fmmcl_test_context_fixture(tc, &ctx);
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_moved_equals_fresh, 0, 2 * (int)(sizeof cases / sizeof *cases));
  tcase_add_test(tc, test_refused_keeps_plan);
  tcase_add_test(tc, test_buffers_refused_keeps_plan);
  suite_add_tcase(s, tc);
  TCase *tp = tcase_create("in place");
  fmmcl_test_context_fixture(tp, &ctx);
  tcase_set_timeout(tp, 600);
  tcase_add_loop_test(tp, test_in_place_steps, 0, 2 * (int)(sizeof in_place_cases / sizeof *in_place_cases));
  suite_add_tcase(s, tp);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  const int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
