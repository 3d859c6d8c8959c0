/* check_precision_direct.c — single precision in the DIRECT method keeps the
 * tolerance's promise on the distributions that stress it (surfaces, tight
 * clusters, points far from the origin): every target against the double
 * reference sum. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmmcl.h"
#include "core/internal.h" /* fmmcl_context_override_defines: device-independent groups */
#include "test_util.h"
#include "testing/distributions.h"

/* The default tolerance's promise: potential 1e-4 and gradient (as vectors)
 * 3e-4 relative L2 over all targets. The device's float arithmetic alone
 * gives ~1e-6 (a few roundings of 6e-8 per pair and sqrt(N) of them in the
 * running sums); what used to break the promise is the rounding of the
 * coordinates, u x frame / distance of the closest pairs, which the local
 * frames and the low parts of near pairs remove. */
#define TOL_POT 1e-4
#define TOL_GRAD 3e-4
/* Shifting every point by (1000, ..., 1000) changes no difference in
 * double; in float it may change the errors only as much as the rounding
 * of the offsets from the frames' centres does: at most 2x. */
#define SHIFT 1000.0
#define SHIFT_RATIO 2.0

static fmmcl_context ctx;

typedef struct precision_case {
  fmmcl_kernel kernel;
  fmmcl_distribution dist;
  size_t n;
} precision_case;

/* 3D: every distribution; 2D: the uniform square, the circle and the
 * clusters; and the Yukawa kernel on the hardest 3D set. Sizes keep the
 * suite within a minute on two CPU cores (the 2D kernel's log is slow). */
static const precision_case cases[] = {
    {FMMCL_LAPLACE_3D, FMMCL_DIST_UNIFORM, 8000},   {FMMCL_LAPLACE_3D, FMMCL_DIST_PLUMMER, 8000},
    {FMMCL_LAPLACE_3D, FMMCL_DIST_ELLIPSOID, 8000}, {FMMCL_LAPLACE_3D, FMMCL_DIST_SURFACE, 8000},
    {FMMCL_LAPLACE_3D, FMMCL_DIST_CLUSTERS, 8000},  {FMMCL_LAPLACE_2D, FMMCL_DIST_UNIFORM, 6000},
    {FMMCL_LAPLACE_2D, FMMCL_DIST_SURFACE, 6000},   {FMMCL_LAPLACE_2D, FMMCL_DIST_CLUSTERS, 6000},
    {FMMCL_YUKAWA_3D, FMMCL_DIST_CLUSTERS, 6000},
};
#define N_CASES (sizeof cases / sizeof cases[0])

typedef struct errors {
  double pot, grad;
} errors;

/* Relative L2 errors of a single-precision direct plan over all targets
 * (targets = sources) against fmmcl_reference_direct in double. */
static errors measure(const precision_case *c, double shift) {
  fmmcl_plan_options o;
  ck_assert_int_eq(fmmcl_plan_options_init(&o, c->kernel), FMMCL_SUCCESS);
  o.method = FMMCL_DIRECT, o.precision = FMMCL_SINGLE, o.tolerance = 1e-4;
  if (c->kernel == FMMCL_YUKAWA_3D) o.kernel_param = 2;
  const int dim = o.dim;
  const size_t n = c->n;
  double *x = malloc(n * dim * sizeof *x), *q = malloc(n * sizeof *q);
  double *p = malloc(n * sizeof *p), *g = malloc(n * dim * sizeof *g);
  double *rp = malloc(n * sizeof *rp), *rg = malloc(n * dim * sizeof *rg);
  ck_assert(x && q && p && g && rp && rg);
  ck_assert_int_eq(fmmcl_distribution_points(c->dist, dim, 11, n, shift, x), 0);
  fmmcl_test_random_values(12, n, -1, 1, q);
  fmmcl_plan plan = NULL;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  ck_assert_msg(fmmcl_plan_execute(plan, q, p, g) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
  fmmcl_plan_destroy(plan);
  ck_assert_int_eq(fmmcl_reference_direct(&o, n, x, q, 0, NULL, rp, rg), FMMCL_SUCCESS);
  errors e = {fmmcl_test_rel_l2(p, rp, n), fmmcl_test_rel_l2(g, rg, n * dim)};
  free(x), free(q), free(p), free(g), free(rp), free(rg);
  return e;
}

/* The promise at the origin and 1000 away, and the shift changes neither
 * error by more than 2x (errors under 1e-6, a few roundings of the sums
 * themselves, are compared from that floor: their ratio is noise). */
START_TEST(test_single_keeps_tolerance) {
  const precision_case *c = &cases[_i];
  const char *name = fmmcl_distribution_name(c->dist), *kernel = fmmcl_kernel_name(c->kernel);
  const errors e1 = measure(c, SHIFT), e0 = measure(c, 0);
  const errors all[2] = {e0, e1};
  for (int k = 1; k >= 0; k--) {
    ck_assert_msg(all[k].pot <= TOL_POT, "%s %s, shift %g: potential error %.3e", kernel, name,
                  k ? SHIFT : 0.0, all[k].pot);
    ck_assert_msg(all[k].grad <= TOL_GRAD, "%s %s, shift %g: gradient error %.3e", kernel, name,
                  k ? SHIFT : 0.0, all[k].grad);
  }
  const double floor = 1e-6;
  ck_assert_msg(fmax(e1.pot, floor) <= SHIFT_RATIO * fmax(e0.pot, floor) &&
                    fmax(e1.grad, floor) <= SHIFT_RATIO * fmax(e0.grad, floor),
                "%s %s: shifted errors %.3e %.3e against %.3e %.3e", kernel, name, e1.pot, e1.grad, e0.pot,
                e0.grad);
}
END_TEST

/* Double plans decide at creation whether their near tiles add the
 * offsets' low parts (-DCOMPENSATE in the build options; direct.c,
 * needs_low_parts): the ordinary sets, at the origin and 1000 away, build
 * without them (the compensation would only cost them speed);
 * tests/check_hostile.c's geometry cases build with them. The direct
 * method's groups are those of a CPU device (64-point tiles, one target a
 * work-item) on every device: the clusters' ratio grows with the groups
 * (1.1e-12 of the 2e-12 allowed here; an H100's blocks of 1024 targets
 * cross it, and compensate). */
START_TEST(test_double_ordinary_uncompensated) {
  static const fmmcl_distribution dists[] = {FMMCL_DIST_UNIFORM, FMMCL_DIST_PLUMMER, FMMCL_DIST_CLUSTERS};
  const fmmcl_distribution dist = dists[_i / 2];
  const double shift = _i % 2 ? SHIFT : 0;
  fmmcl_plan_options o;
  ck_assert_int_eq(fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D), FMMCL_SUCCESS);
  o.precision = FMMCL_DOUBLE, o.tolerance = 1e-8;
  fmmcl_device_info dev;
  ck_assert_int_eq(fmmcl_context_device(ctx, &dev), FMMCL_SUCCESS);
  if (!dev.has_fp64) return;
  const size_t n = 20000;
  double *x = malloc(3 * n * sizeof *x);
  ck_assert(x != NULL);
  ck_assert_int_eq(fmmcl_distribution_points(dist, 3, 11, n, shift, x), 0);
  static const fmmcl_method methods[] = {FMMCL_DIRECT, FMMCL_FMM, FMMCL_TREECODE};
  ck_assert_int_eq(fmmcl_context_override_defines(ctx, "p2p_laplace3d", "-DWGS=64 -DTPW=1 -DUNROLL=4"),
                   FMMCL_SUCCESS);
  for (int m = 0; m < 3; m++) {
    o.method = methods[m];
    fmmcl_plan plan = NULL;
    ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                  fmmcl_last_error(ctx));
    char opts[1024];
    ck_assert_int_eq(fmmcl_plan_build_options(plan, opts, sizeof opts), FMMCL_SUCCESS);
    fmmcl_plan_destroy(plan);
    ck_assert_msg(strstr(opts, "-DCOMPENSATE=1") == NULL && strstr(opts, "-DCOMPENSATE=0") != NULL,
                  "%s, shift %g, method %d: %s", fmmcl_distribution_name(dist), shift, m, opts);
  }
  ck_assert_int_eq(fmmcl_context_override_defines(ctx, "p2p_laplace3d", NULL), FMMCL_SUCCESS);
  free(x);
}
END_TEST

/* The rounding estimate sees the direct method's frames: two clusters 1e-3
 * wide, 1000 apart, resolve a pair 1e-7 apart as the tiles' frames (1e-3)
 * allow, not as the whole set's (866) would, and the single-precision sum
 * at that pair's targets meets the estimate's bound (three times it). A
 * pair 1e-9 apart at 0.2 stays beyond float even in a tile's frame. Each
 * cluster holds 2048 points, a whole number of the largest target blocks
 * (1024 on a GPU), so that no block spans both clusters: one that did
 * would have a frame 1000 wide, and the estimate would say so. */
START_TEST(test_rounding_estimate_frames) {
  enum { N = 4096 };
  double *x = malloc(3 * N * sizeof *x), *q = malloc(N * sizeof *q);
  double *p = malloc(N * sizeof *p), *g = malloc(3 * N * sizeof *g);
  double *rp = malloc(N * sizeof *rp), *rg = malloc(3 * N * sizeof *rg);
  ck_assert(x && q && p && g && rp && rg);
  fmmcl_test_random_points(21, N, 3, x);
  for (size_t i = 0; i < 3 * N; i++) x[i] = 1e-3 * x[i] + (i >= 3 * (N / 2) ? 1000 : 0);
  for (int d = 0; d < 3; d++) x[3 * 7 + d] = x[3 * 300 + d] + (d == 0 ? 1e-7 : 0);
  fmmcl_test_random_values(22, N, 0.5, 1, q);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_DIRECT, o.precision = FMMCL_SINGLE;
  fmmcl_plan plan = NULL;
  ck_assert_msg(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                fmmcl_last_error(ctx));
  double estimate, dist;
  ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, NULL, &estimate, &dist), FMMCL_SUCCESS);
  ck_assert_msg(fabs(dist - 1e-7) < 1e-10, "closest pair %g apart", dist);
  const double u = 0x1p-24, frames = 2 * sqrt(3.0) * 1e-3; /* two tiles' radii at most */
  ck_assert_msg(estimate <= u * frames / dist + 4 * u, "estimate %.3e above the tiles' %.3e", estimate,
                u * frames / dist + 4 * u);
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, p, g), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  ck_assert_int_eq(fmmcl_reference_direct(&o, N, x, q, 0, NULL, rp, rg), FMMCL_SUCCESS);
  const size_t at[2] = {7, 300};
  for (int k = 0; k < 2; k++) {
    const double e = fmmcl_test_rel_l2(g + 3 * at[k], rg + 3 * at[k], 3);
    ck_assert_msg(e <= 3 * estimate, "target %zu: gradient error %.3e above 3 x %.3e", at[k], e, estimate);
  }
  /* 1e-9 at 0.2: beyond float in any frame that holds more than the pair */
  double y[3 * 42];
  for (int i = 0; i < 40; i++)
    y[3 * i] = 0.5 + 0.01 * i, y[3 * i + 1] = 0.3 + 0.007 * i, y[3 * i + 2] = 0.1 * (i % 7);
  for (int d = 0; d < 3; d++) y[3 * 40 + d] = 0.2, y[3 * 41 + d] = 0.2 + (d == 0 ? 1e-9 : 0);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 42, y, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, y, NULL, &estimate, &dist), FMMCL_SUCCESS);
  ck_assert_msg(estimate > 1e-4, "1e-9 at 0.2: estimate %.3e", estimate);
  fmmcl_plan_destroy(plan);
  free(x), free(q), free(p), free(g), free(rp), free(rg);
}
END_TEST

/* Float decides per set, as the 3D FMM's P2P does, whether its near tiles
 * add the low parts: not on uniform points (the plain loop is faster and
 * the closest pairs' rounding vanishes in the L2 norm), but where many
 * tiles span tight groups far apart (100 clusters 1e-6 wide, 80 points
 * each, so most tiles straddle two: frames 1e5 times wider than the
 * spacing), and there the promise still holds over all targets. */
START_TEST(test_single_compensates_where_needed) {
  enum { CLUSTERS = 100, PER = 80, N = CLUSTERS * PER };
  double *x = malloc(3 * N * sizeof *x), *c = malloc(3 * CLUSTERS * sizeof *c), *q = malloc(N * sizeof *q);
  double *p = malloc(N * sizeof *p), *g = malloc(3 * N * sizeof *g);
  double *rp = malloc(N * sizeof *rp), *rg = malloc(3 * N * sizeof *rg);
  ck_assert(x && c && q && p && g && rp && rg);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_DIRECT, o.precision = FMMCL_SINGLE, o.tolerance = 1e-4;
  fmmcl_test_random_values(31, N, -1, 1, q);
  for (int set = 0; set < 2; set++) {
    if (set == 0) {
      fmmcl_test_random_points(32, N, 3, x);
    } else {
      fmmcl_test_random_points(33, CLUSTERS, 3, c);
      fmmcl_test_random_points(34, N, 3, x);
      for (size_t i = 0; i < 3 * (size_t)N; i++) x[i] = c[3 * (i / (3 * PER)) + i % 3] + 1e-6 * (x[i] - 0.5);
    }
    fmmcl_plan plan = NULL;
    ck_assert_msg(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                  fmmcl_last_error(ctx));
    char opts[1024];
    ck_assert_int_eq(fmmcl_plan_build_options(plan, opts, sizeof opts), FMMCL_SUCCESS);
    ck_assert_msg(strstr(opts, set ? "-DCOMPENSATE=1" : "-DCOMPENSATE=0") != NULL, "%s: %s",
                  set ? "clusters" : "uniform", opts);
    ck_assert_int_eq(fmmcl_plan_execute(plan, q, p, g), FMMCL_SUCCESS);
    fmmcl_plan_destroy(plan);
    ck_assert_int_eq(fmmcl_reference_direct(&o, N, x, q, 0, NULL, rp, rg), FMMCL_SUCCESS);
    const double ep = fmmcl_test_rel_l2(p, rp, N), eg = fmmcl_test_rel_l2(g, rg, 3 * N);
    ck_assert_msg(ep <= TOL_POT && eg <= TOL_GRAD, "%s: errors %.3e %.3e", set ? "clusters" : "uniform", ep,
                  eg);
  }
  free(x), free(c), free(q), free(p), free(g), free(rp), free(rg);
}
END_TEST

static Suite *precision_suite(void) {
  Suite *s = suite_create("precision_direct");
  TCase *tc = tcase_create("single");
  fmmcl_test_context_fixture(tc, &ctx);
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_single_keeps_tolerance, 0, (int)N_CASES);
  tcase_add_test(tc, test_rounding_estimate_frames);
  tcase_add_test(tc, test_single_compensates_where_needed);
  tcase_add_loop_test(tc, test_double_ordinary_uncompensated, 0, 6);
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
