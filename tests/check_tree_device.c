/* check_tree_device.c — Check suite of the device Morton keys and radix sort
 * (cl/tree.cl via lib/tree3d_device_sort.c): keys, sorted order and
 * permutation equal the host's exactly, and so does the tree built on them. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "methods/laplace3d/fmm3d.h"
#include "test_util.h"
#include "tree/tree3d.h"
#include "tree/tree3d_device_sort.h"

static fmmcl_context ctx;

static void setup(void) {
  ctx = fmmcl_test_context();
  ck_assert_ptr_nonnull(ctx);
}
static void teardown(void) { fmmcl_context_destroy(ctx); }

/* Check reports each passing assertion through a pipe: loops call it only
 * on failure. */
#define REQUIRE(expr, ...)                  \
  do {                                      \
    if (!(expr)) ck_abort_msg(__VA_ARGS__); \
  } while (0)

/* The device path needs fp64; a device without it is not this suite's. */
#define SKIP_WITHOUT_FP64()                                  \
  do {                                                       \
    if (!fmmcl_tree3d_device_sort_available(ctx, 1)) return; \
  } while (0)

/* ---- point sets --------------------------------------------------------- */

enum { UNIFORM, CLUSTERED, IDENTICAL, ON_FACES, N_KINDS };
static const char *kind_name[] = {"uniform", "clustered", "identical", "on cell faces"};

static uint64_t rng;
static double uniform01(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1.0p-53;
}

/* Clustered: three tight Gaussian-like blobs of very different widths (deep,
 * adaptive tree; many equal keys at the finest level). On faces: coordinates
 * on the dyadic grid of 1/64, so many points sit exactly on cell faces where
 * the key's floor decides the side. */
static double *make_points(int kind, size_t n, uint64_t seed) {
  double *p = malloc(3 * (n ? n : 1) * sizeof *p);
  ck_assert_ptr_nonnull(p);
  rng = 0x9e3779b97f4a7c15ULL ^ (seed * 0x2545f4914f6cdd1dULL);
  for (size_t i = 0; i < n; i++) {
    double *x = p + 3 * i;
    if (kind == UNIFORM) {
      for (int c = 0; c < 3; c++) x[c] = uniform01();
    } else if (kind == CLUSTERED) {
      static const double centre[3][3] = {{0.1, 0.2, 0.3}, {0.7, 0.7, 0.2}, {0.5, 0.9, 0.9}};
      static const double width[3] = {1e-2, 1e-5, 1e-9};
      int b = (int)(i % 3);
      for (int c = 0; c < 3; c++)
        x[c] = centre[b][c] + width[b] * (uniform01() + uniform01() + uniform01() - 1.5);
    } else if (kind == IDENTICAL) {
      x[0] = 0.25, x[1] = -3.5, x[2] = 1e3;
    } else {
      for (int c = 0; c < 3; c++) x[c] = floor(64 * uniform01()) / 64;
    }
  }
  return p;
}

/* ---- keys and sort -------------------------------------------------------- */

/* Device keys and sort against fmmcl_morton3d_keys + fmmcl_morton3d_sort. */
static void check_sort(int kind, size_t n) {
  double *x = make_points(kind, n, 7 + n);
  fmmcl_morton3d_cube cube;
  ck_assert_int_eq(fmmcl_morton3d_bounding_cube(x, n, NULL, 0, &cube), FMMCL_SUCCESS);
  uint64_t *hk = malloc(n * sizeof *hk), *dk = malloc(n * sizeof *dk), *unsorted = malloc(n * sizeof *hk);
  size_t *hp = malloc(n * sizeof *hp), *dp = malloc(n * sizeof *dp);
  ck_assert(hk && dk && hp && dp && unsorted);
  fmmcl_morton3d_keys(&cube, x, n, hk);
  memcpy(unsorted, hk, n * sizeof *hk);
  ck_assert_int_eq(fmmcl_morton3d_sort(hk, hp, n), FMMCL_SUCCESS);
  fmmcl_status st = fmmcl_tree3d_device_sort(ctx, &cube, x, n, dk, dp);
  ck_assert_msg(st == FMMCL_SUCCESS, "device sort: %s", fmmcl_last_error(ctx));
  for (size_t i = 0; i < n; i++) {
    REQUIRE(dp[i] < n, "%s n=%zu: perm[%zu] = %zu out of range", kind_name[kind], n, i, dp[i]);
    /* the key the device computed for point dp[i] is the host's key of it */
    REQUIRE(dk[i] == unsorted[dp[i]], "%s n=%zu: device key of point %zu is %llx, host %llx", kind_name[kind],
            n, dp[i], (unsigned long long)dk[i], (unsigned long long)unsorted[dp[i]]);
    REQUIRE(dk[i] == hk[i] && dp[i] == hp[i],
            "%s n=%zu: sorted position %zu: device (%llx, %zu), host (%llx, %zu)", kind_name[kind], n, i,
            (unsigned long long)dk[i], dp[i], (unsigned long long)hk[i], hp[i]);
  }
  free(x), free(hk), free(dk), free(hp), free(dp), free(unsorted);
}

START_TEST(test_sort_kinds) {
  SKIP_WITHOUT_FP64();
  /* 5000: several tiles and a partial one; 20011: several work-groups */
  check_sort(_i, 5000);
  check_sort(_i, 20011);
}
END_TEST

START_TEST(test_sort_sizes) {
  SKIP_WITHOUT_FP64();
  /* one key, a partial tile, exactly one tile, one more than a tile, and
   * one past a whole group's block (WGS * TILES = 2048 by default) */
  const size_t sizes[] = {1, 2, 3, 255, 256, 257, 2047, 2048, 2049};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) check_sort(UNIFORM, sizes[k]);
  check_sort(CLUSTERED, 1);
}
END_TEST

/* Other tuned parameters: 3-bit digits make 21 passes, so the result ends
 * in the second buffer; 8-bit digits need WGS >= 256. */
START_TEST(test_sort_parameters) {
  SKIP_WITHOUT_FP64();
  ck_assert_int_eq(fmmcl_context_override_defines(ctx, "tree_sort", "-DWGS=64 -DTILES=3 -DRADIX_BITS=3"),
                   FMMCL_SUCCESS);
  check_sort(CLUSTERED, 1000);
  check_sort(UNIFORM, 3000);
  ck_assert_int_eq(fmmcl_context_override_defines(ctx, "tree_sort", "-DWGS=256 -DTILES=2 -DRADIX_BITS=8"),
                   FMMCL_SUCCESS);
  check_sort(ON_FACES, 3000);
  ck_assert_int_eq(fmmcl_context_override_defines(ctx, "tree_sort", "-DWGS=128 -DRADIX_BITS=8"),
                   FMMCL_SUCCESS);
  double x[3] = {0, 0, 0};
  uint64_t k;
  size_t p;
  fmmcl_morton3d_cube cube = {{0, 0, 0}, 1};
  ck_assert_int_eq(fmmcl_tree3d_device_sort(ctx, &cube, x, 1, &k, &p), FMMCL_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* Keys outside the cube clamp to the boundary cells, as on the host. */
START_TEST(test_keys_clamped) {
  SKIP_WITHOUT_FP64();
  double x[12] = {-1, 0.5, 0.5, 2, 0.5, 0.5, 0.5, -1e300, 1e300, 0.5, 0.5, 0.5};
  fmmcl_morton3d_cube cube = {{0, 0, 0}, 1};
  uint64_t dk[4], hk[4];
  size_t dp[4], hp[4];
  fmmcl_morton3d_keys(&cube, x, 4, hk);
  ck_assert_int_eq(fmmcl_morton3d_sort(hk, hp, 4), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_tree3d_device_sort(ctx, &cube, x, 4, dk, dp), FMMCL_SUCCESS);
  for (int i = 0; i < 4; i++) {
    ck_assert_uint_eq(dk[i], hk[i]);
    ck_assert_uint_eq(dp[i], hp[i]);
  }
}
END_TEST

/* ---- trees ----------------------------------------------------------------- */

static void require_same_cell(const fmmcl_tree3d_cell *a, const fmmcl_tree3d_cell *b, size_t i) {
  REQUIRE(a->key == b->key && a->level == b->level && a->parent == b->parent &&
              a->child_begin == b->child_begin && a->n_children == b->n_children &&
              a->src_begin == b->src_begin && a->src_end == b->src_end && a->tgt_begin == b->tgt_begin &&
              a->tgt_end == b->tgt_end && a->half_width == b->half_width,
          "cell %zu differs", i);
  for (int d = 0; d < 3; d++)
    REQUIRE(a->anchor[d] == b->anchor[d] && a->center[d] == b->center[d], "cell %zu geometry differs", i);
}

static void require_same_points(size_t n, const uint64_t *ka, const size_t *pa, const double *xa,
                                const uint64_t *kb, const size_t *pb, const double *xb) {
  for (size_t i = 0; i < n; i++) REQUIRE(ka[i] == kb[i] && pa[i] == pb[i], "sorted point %zu differs", i);
  REQUIRE(memcmp(xa, xb, 3 * n * sizeof *xa) == 0, "sorted coordinates differ");
}

static void require_same_tree(const fmmcl_tree3d *a, const fmmcl_tree3d *b) {
  ck_assert(memcmp(&a->cube, &b->cube, sizeof a->cube) == 0);
  ck_assert_uint_eq(a->n_cells, b->n_cells);
  ck_assert_uint_eq(a->n_leaves, b->n_leaves);
  ck_assert_int_eq(a->n_levels, b->n_levels);
  ck_assert_int_eq(a->max_level, b->max_level);
  ck_assert_uint_eq(a->n_overfull_leaves, b->n_overfull_leaves);
  ck_assert_int_eq(a->targets_are_sources, b->targets_are_sources);
  ck_assert(memcmp(a->level_begin, b->level_begin, sizeof a->level_begin) == 0);
  for (size_t i = 0; i < a->n_cells; i++) require_same_cell(&a->cells[i], &b->cells[i], i);
  ck_assert(memcmp(a->leaves, b->leaves, a->n_leaves * sizeof *a->leaves) == 0);
  require_same_points(a->n_sources, a->source_keys, a->source_perm, a->source_xyz, b->source_keys,
                      b->source_perm, b->source_xyz);
  require_same_points(a->n_targets, a->target_keys, a->target_perm, a->target_xyz, b->target_keys,
                      b->target_perm, b->target_xyz);
}

/* targets: 0 = the sources, else that many distinct targets. */
static void check_tree(int kind, size_t n, size_t n_targets, size_t q, int max_level) {
  double *x = make_points(kind, n, 11), *y = n_targets ? make_points(UNIFORM, n_targets, 12) : NULL;
  fmmcl_tree3d *host, *dev;
  ck_assert_int_eq(fmmcl_tree3d_build(n, x, n_targets, y, q, max_level, &host), FMMCL_SUCCESS);
  double sort_seconds = -1;
  fmmcl_status st = fmmcl_tree3d_build_device(ctx, n, x, n_targets, y, q, max_level, &dev, &sort_seconds);
  ck_assert_msg(st == FMMCL_SUCCESS, "device build: %s", fmmcl_last_error(ctx));
  ck_assert(sort_seconds >= 0);
  require_same_tree(host, dev);
  fmmcl_tree3d_destroy(host);
  fmmcl_tree3d_destroy(dev);
  free(x), free(y);
}

START_TEST(test_tree_kinds) {
  SKIP_WITHOUT_FP64();
  check_tree(_i, 6000, 0, 16, 0);
  check_tree(_i, 3001, 1999, 8, 0);
}
END_TEST

START_TEST(test_tree_small_and_limited) {
  SKIP_WITHOUT_FP64();
  check_tree(UNIFORM, 1, 0, 1, 0);
  check_tree(UNIFORM, 1, 1, 1, 0);
  check_tree(CLUSTERED, 4000, 0, 4, 20); /* single precision's depth limit: overfull leaves */
  check_tree(IDENTICAL, 700, 0, 64, 0);
}
END_TEST

/* The device build reports the host build's argument errors in ctx. */
START_TEST(test_tree_errors) {
  SKIP_WITHOUT_FP64();
  double x[6] = {0, 0, 0, NAN, 1, 1};
  fmmcl_tree3d *t = (fmmcl_tree3d *)&t;
  ck_assert_int_eq(fmmcl_tree3d_build_device(ctx, 2, x, 0, NULL, 4, 0, &t, NULL),
                   FMMCL_ERROR_NONFINITE_INPUT);
  ck_assert_ptr_null(t);
  ck_assert_int_eq(fmmcl_tree3d_build_device(ctx, 1, x, 0, NULL, 0, 0, &t, NULL),
                   FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_tree3d_build_device(ctx, 1, x, 0, NULL, 4, 22, &t, NULL),
                   FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_tree3d_build_device(ctx, 0, x, 0, NULL, 4, 0, &t, NULL), FMMCL_ERROR_EMPTY_INPUT);
  ck_assert(strlen(fmmcl_last_error(ctx)) > 0);
}
END_TEST

/* ---- the plan ------------------------------------------------------------ */

/* An FMM plan built with the device sort gives bit-identical results to one
 * built on the host: same tree, same lists, same kernels, and the points
 * the device packed itself equal the host's packing. Loop i: bit 0 single
 * precision, bit 1 targets apart from the sources. */
START_TEST(test_plan_same_result) {
  SKIP_WITHOUT_FP64();
  const size_t n = 3000, nt = _i & 2 ? 1700 : n;
  double *x = make_points(CLUSTERED, n, 21), *q = malloc(n * sizeof *q);
  double *y = _i & 2 ? make_points(UNIFORM, nt, 22) : NULL;
  double *pot[2] = {malloc(nt * sizeof(double)), malloc(nt * sizeof(double))};
  ck_assert(q && pot[0] && pot[1]);
  fmmcl_test_random_values(5, n, -1, 1, q);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.method = FMMCL_FMM, o.precision = _i & 1 ? FMMCL_SINGLE : FMMCL_DOUBLE, o.order = 4, o.leaf_size = 32;
  o.gradient = 0;
  for (int dev = 0; dev < 2; dev++) {
    setenv("FMMCL_TREE_SORT", dev ? "device" : "host", 1);
    fmmcl_plan plan;
    fmmcl_status st = fmmcl_plan_create(ctx, &o, n, x, nt, y, &plan);
    ck_assert_msg(st == FMMCL_SUCCESS, "plan (%s sort): %s", dev ? "device" : "host", fmmcl_last_error(ctx));
    fmmcl_phase_time t[FMMCL_MAX_PHASES];
    size_t count, has_sort = 0;
    ck_assert_int_eq(fmmcl_plan_timings(plan, t, FMMCL_MAX_PHASES, &count), FMMCL_SUCCESS);
    for (size_t i = 0; i < count; i++) has_sort |= strcmp(t[i].name, "sort") == 0;
    ck_assert_int_eq(has_sort, dev);
    ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot[dev], NULL), FMMCL_SUCCESS);
    fmmcl_plan_destroy(plan);
  }
  unsetenv("FMMCL_TREE_SORT");
  ck_assert(memcmp(pot[0], pot[1], nt * sizeof(double)) == 0);
  free(x), free(y), free(q), free(pot[0]), free(pot[1]);
}
END_TEST

static Suite *tree_device_suite(void) {
  Suite *s = suite_create("tree_device");
  TCase *tc = tcase_create("sort");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_sort_kinds, 0, N_KINDS);
  tcase_add_test(tc, test_sort_sizes);
  tcase_add_test(tc, test_keys_clamped);
  tcase_add_test(tc, test_sort_parameters);
  suite_add_tcase(s, tc);
  tc = tcase_create("tree");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_tree_kinds, 0, N_KINDS);
  tcase_add_test(tc, test_tree_small_and_limited);
  tcase_add_test(tc, test_tree_errors);
  tcase_add_loop_test(tc, test_plan_same_result, 0, 4);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(tree_device_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
