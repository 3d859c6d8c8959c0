/* check_hostile.c — inputs a hostile or careless user gives: each must give a
 * result within the tolerance or a non-zero status with a clear message,
 * never success with a wrong, zero or non-finite answer. Overflowing
 * outputs, range limits of each precision, forged binary-cache files, the
 * Morton cube of a tiny set far from the origin, tight groups of points far
 * from their frames, and the command line. */
#include <check.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fmmcl.h"
#include "core/internal.h" /* binary cache primitives, fmmcl_program_build */
#include "tree/morton3d.h" /* the root cube under test */
#include "test_util.h"

static fmmcl_context ctx;
static fmmcl_device_info dev;
static char *work; /* a temporary directory per test */

static void open_device_with(int fresh_cache) {
  work = fmmcl_test_tempdir("hostile");
  ck_assert_ptr_nonnull(work);
  if (fresh_cache) { /* a binary cache of the test's own, empty at the start */
    char xdg[4096];
    snprintf(xdg, sizeof xdg, "%s/xdg", work);
    setenv("XDG_CACHE_HOME", xdg, 1);
  }
  unsetenv("FMMCL_NO_CACHE");
  ctx = fmmcl_test_context();
  ck_assert_msg(ctx != NULL, "no OpenCL context: %s", fmmcl_last_error(NULL));
  ck_assert_int_eq(fmmcl_context_device(ctx, &dev), FMMCL_SUCCESS);
}

static void open_device(void) { open_device_with(0); }
static void open_device_fresh_cache(void) { open_device_with(1); }

static void close_device(void) {
  fmmcl_context_destroy(ctx);
  ctx = NULL;
  fmmcl_test_rmtree(work);
  free(work);
}

static fmmcl_plan_options options(fmmcl_kernel k, fmmcl_method m, fmmcl_precision p) {
  fmmcl_plan_options o;
  ck_assert_int_eq(fmmcl_plan_options_init(&o, k), FMMCL_SUCCESS);
  o.method = m;
  o.precision = p;
  return o;
}

static int skip_double(fmmcl_precision p) { return p == FMMCL_DOUBLE && !dev.has_fp64; }

/* Creates and executes a plan; returns the first failing status, with the
 * message in *msg (static). */
static fmmcl_status run_plan(const fmmcl_plan_options *o, size_t n, const double *x, const double *q,
                             double *pot, double *grad, const char **msg) {
  fmmcl_plan plan = NULL;
  fmmcl_status st = fmmcl_plan_create(ctx, o, n, x, 0, NULL, &plan);
  if (!st) st = fmmcl_plan_execute(plan, q, pot, o->gradient ? grad : NULL);
  static char text[4096];
  snprintf(text, sizeof text, "%s", fmmcl_last_error(ctx));
  *msg = text;
  fmmcl_plan_destroy(plan);
  return st;
}

static void expect_status(const fmmcl_plan_options *o, size_t n, const double *x, const double *q,
                          fmmcl_status want, const char *needle, const char *what) {
  double *pot = fmmcl_test_zeros(n), *grad = fmmcl_test_zeros(3 * n);
  const char *msg;
  fmmcl_status st = run_plan(o, n, x, q, pot, grad, &msg);
  ck_assert_msg(st == want, "%s: got \"%s\" (%s), want \"%s\"", what, fmmcl_strerror(st), msg,
                fmmcl_strerror(want));
  if (needle)
    ck_assert_msg(strstr(msg, needle) != NULL, "%s: message \"%s\" lacks \"%s\"", what, msg, needle);
  free(pot);
  free(grad);
}

static int all_finite(const double *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return 0;
  return 1;
}

/* ---- outputs checked: overflow in the sum is a status, never a result ---- */

/* Two charges of 1e36 at 0.01: the gradient q/r^2 = 1e40 overflows float,
 * though every input and the potential (1e38) are representable. */
START_TEST(test_float_gradient_overflow) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_DIRECT, FMMCL_SINGLE);
  double x[6] = {0, 0, 0, 0.01, 0, 0}, q[2] = {1e36, 1e36};
  expect_status(&o, 2, x, q, FMMCL_ERROR_NONFINITE_OUTPUT, "FMMCL_DOUBLE", "float gradient overflow");
  expect_status(&o, 2, x, q, FMMCL_ERROR_NONFINITE_OUTPUT, "gradient", "float gradient overflow");
  o.precision = FMMCL_DOUBLE; /* the same sum in double is fine */
  if (skip_double(o.precision)) return;
  double pot[2], grad[6];
  const char *msg;
  ck_assert_int_eq(run_plan(&o, 2, x, q, pot, grad, &msg), FMMCL_SUCCESS);
  ck_assert_double_eq_tol(grad[0], 1e40, 1e28);
}
END_TEST

/* Charges of 1e300 in a double tree method (a close pair, r = 1e-9, among
 * random points): the sum overflows double. Every method says so. */
START_TEST(test_double_charges_overflow) {
  static const fmmcl_method methods[] = {FMMCL_DIRECT, FMMCL_TREECODE, FMMCL_FMM};
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, methods[_i], FMMCL_DOUBLE);
  if (skip_double(o.precision)) return;
  o.tolerance = 1e-6;
  const size_t n = 600;
  double *x = fmmcl_test_zeros(3 * n), *q = fmmcl_test_zeros(n);
  fmmcl_test_random_points(11, n, 3, x);
  x[3] = x[0] + 1e-9, x[4] = x[1], x[5] = x[2];
  for (size_t i = 0; i < n; i++) q[i] = 1e300;
  expect_status(&o, n, x, q, FMMCL_ERROR_NONFINITE_OUTPUT, "overflowed double precision",
                fmmcl_method_name(methods[_i]));
  free(x);
  free(q);
}
END_TEST

/* ---- range checks that match the arithmetic ------------------------------ */

/* |x| = 1e19 in float: r^2 overflows (the limit is sqrt(FLT_MAX / 12) = 5.3e18);
 * in double the same points are fine. */
START_TEST(test_float_coordinates_too_large) {
  static const fmmcl_method methods[] = {FMMCL_DIRECT, FMMCL_FMM};
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, methods[_i], FMMCL_SINGLE);
  o.tolerance = 1e-4;
  double x[9] = {0, 0, 0, 1e19, 0, 0, 0, 1e19, 0}, q[3] = {1, 1, 1};
  expect_status(&o, 3, x, q, FMMCL_ERROR_INVALID_ARGUMENT, "r^2 overflows single", "float |x| = 1e19");
  x[3] = x[7] = 5e18; /* just inside */
  if (methods[_i] == FMMCL_DIRECT) expect_status(&o, 3, x, q, FMMCL_SUCCESS, NULL, "float |x| = 5e18");
  o.precision = FMMCL_DOUBLE;
  o.method = FMMCL_DIRECT;
  x[3] = x[7] = 1e19;
  if (!skip_double(o.precision)) expect_status(&o, 3, x, q, FMMCL_SUCCESS, NULL, "double |x| = 1e19");
}
END_TEST

/* The 2D FMM on data scaled by 1e30, float: refused, not NaN. */
START_TEST(test_fmm2d_scaled) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_2D, FMMCL_FMM, FMMCL_SINGLE);
  const size_t n = 500;
  double *x = fmmcl_test_zeros(2 * n), *q = fmmcl_test_zeros(n);
  fmmcl_test_random_points(12, n, 2, x);
  fmmcl_test_random_values(13, n, -1, 1, q);
  for (size_t i = 0; i < 2 * n; i++) x[i] *= 1e30;
  expect_status(&o, n, x, q, FMMCL_ERROR_INVALID_ARGUMENT, "overflows single", "2D FMM float, scale 1e30");
  free(x);
  free(q);
}
END_TEST

/* Points closer than FLT_MAX^(-1/3) = 1.4e-13 in float with the gradient:
 * 1/r^3 must overflow, so the plan is refused up front; without the
 * gradient (1/r) and in double the same points are summed. */
START_TEST(test_float_tiny_extent) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_DIRECT, FMMCL_SINGLE);
  double x[6] = {0.5, 0.5, 0.5, 0.5 + 1e-14, 0.5, 0.5}, q[2] = {1, 1};
  expect_status(&o, 2, x, q, FMMCL_ERROR_INVALID_ARGUMENT, "1/r^3 overflows single", "float, extent 1e-14");
  o.gradient = 0;
  /* the input rounds to float as it is shifted: whatever it computes is finite */
  double pot[2], grad[6];
  const char *msg;
  ck_assert_msg(run_plan(&o, 2, x, q, pot, grad, &msg) == FMMCL_SUCCESS, "%s", msg);
  ck_assert(all_finite(pot, 2));
  o.precision = FMMCL_DOUBLE;
  o.gradient = 1;
  if (skip_double(o.precision)) return;
  ck_assert_msg(run_plan(&o, 2, x, q, pot, grad, &msg) == FMMCL_SUCCESS, "%s", msg);
  const double r = x[3] - x[0]; /* the double input's own distance */
  ck_assert_double_eq_tol(pot[0], 1 / r, 1e-10 / r);
  ck_assert_double_eq_tol(grad[0], 1 / (r * r), 1e-10 / (r * r));
}
END_TEST

/* sigma below sqrt(FLT_MIN) = 1.1e-19 (float) or sqrt(DBL_MIN) = 1.5e-154
 * (double): 1/(2 sigma^2) overflows and the self pair would be inf * 0. */
START_TEST(test_gaussian_tiny_sigma) {
  const fmmcl_precision p = _i ? FMMCL_DOUBLE : FMMCL_SINGLE;
  fmmcl_plan_options o = options(FMMCL_GAUSSIAN, FMMCL_DIRECT, p);
  if (skip_double(p)) return;
  o.gradient = 0;
  double x[6] = {0, 0, 0, 1, 0, 0}, q[2] = {2, 3};
  o.sigma = p == FMMCL_DOUBLE ? 1e-170 : 1e-20;
  expect_status(&o, 2, x, q, FMMCL_ERROR_INVALID_ARGUMENT, "sigma", "tiny sigma");
  /* just above the limit: the self pair alone, exactly */
  o.sigma = p == FMMCL_DOUBLE ? 1e-150 : 2e-19;
  double pot[2], grad[6];
  const char *msg;
  ck_assert_msg(run_plan(&o, 2, x, q, pot, grad, &msg) == FMMCL_SUCCESS, "%s", msg);
  ck_assert_double_eq_tol(pot[0], 2, 1e-6);
  ck_assert_double_eq_tol(pot[1], 3, 1e-6);
}
END_TEST

/* sum |q| above FLT_MAX / 16 in float: refused at execute, outputs untouched. */
START_TEST(test_float_charges_too_large) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_DIRECT, FMMCL_SINGLE);
  double x[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0}, q[3] = {1e37, -1e37, 1e37};
  expect_status(&o, 3, x, q, FMMCL_ERROR_INVALID_ARGUMENT, "rescale the charges", "float charges 1e37");
  o.precision = FMMCL_DOUBLE;
  if (!skip_double(o.precision)) expect_status(&o, 3, x, q, FMMCL_SUCCESS, NULL, "double charges 1e37");
}
END_TEST

/* Softening whose square overflows float. */
START_TEST(test_float_softening_too_large) {
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_DIRECT, FMMCL_SINGLE);
  o.softening = 1e20;
  double x[6] = {0, 0, 0, 1, 0, 0}, q[2] = {1, 1};
  expect_status(&o, 2, x, q, FMMCL_ERROR_INVALID_ARGUMENT, "softening", "float softening 1e20");
}
END_TEST

/* ---- the Morton cube: enlarged in ulps of the coordinates ----------------- */

/* A set of extent 1e-12 at 0.5: every point must fall inside the root cube
 * without the clamp (its integer coordinate in [0, 2^21)). */
START_TEST(test_morton_cube_far_small_set) {
  const size_t n = 2000;
  double *x = fmmcl_test_zeros(3 * n);
  fmmcl_test_random_points(21, n, 3, x);
  for (size_t i = 0; i < 3 * n; i++) x[i] = 0.5 + 1e-12 * x[i];
  fmmcl_morton3d_cube cube;
  ck_assert_int_eq(fmmcl_morton3d_bounding_cube(x, n, NULL, 0, &cube), FMMCL_SUCCESS);
  const double scale = (double)FMMCL_MORTON_CELLS_PER_AXIS / cube.width;
  size_t outside = 0;
  for (size_t i = 0; i < 3 * n; i++) {
    double t = floor((x[i] - cube.origin[i % 3]) * scale);
    outside += !(t >= 0 && t < (double)FMMCL_MORTON_CELLS_PER_AXIS);
  }
  ck_assert_msg(outside == 0, "%zu coordinates outside the cube", outside);
  ck_assert_msg(cube.width < 1.1e-12, "cube width %g for an extent of 1e-12", cube.width);
  free(x);
}
END_TEST

/* The same set through a double FMM at tol 1e-8, against the direct sum:
 * cells of width ~1e-13 near 0.5 are met only because the device sees
 * each point relative to its leaf's centre, in units of the root cube
 * (cell centres there are exact), not world coordinates rounded to ulps
 * of 0.5. */
START_TEST(test_fmm_double_far_small_set) {
  if (skip_double(FMMCL_DOUBLE)) return;
  const size_t n = 2000;
  double *x = fmmcl_test_zeros(3 * n), *q = fmmcl_test_zeros(n);
  fmmcl_test_random_points(21, n, 3, x);
  for (size_t i = 0; i < 3 * n; i++) x[i] = 0.5 + 1e-12 * x[i];
  fmmcl_test_random_values(22, n, -1, 1, q);
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_FMM, FMMCL_DOUBLE);
  o.tolerance = 1e-8, o.leaf_size = 32; /* a deep tree: cells down to 1e-13 */
  fmmcl_test_errors e = fmmcl_test_plan_errors(ctx, &o, n, x, q, 0, NULL);
  ck_assert_msg(e.pot <= 1e-8 && e.grad <= 1e-8, "potential %.3e, gradient %.3e at tol 1e-8", e.pot, e.grad);
  free(x), free(q);
}
END_TEST

/* ---- geometry: tight groups far from their frames ------------------------- */

/* The sets of the geometry class (tests/README.md), n points and charges:
 * 0 radii 10^-U(0,12) about the origin in random directions; 1 two
 * clusters 1e-9 wide at x = 0 and x = 1; 2..5 the unit cube with one point
 * at (D, D, D), D = 1e3, 1e8, 1e12, 1e15; 6 a pair 1.7e-13 apart at
 * 1.4e-12 and a point at (0.3, 0.7, -0.5). */
static size_t geometry_set(int which, double *x, double *q) {
  if (which == 6) {
    const double p[9] = {1.391e-12, 0, 0, 1.391e-12 + 1.719e-13, 0, 0, 0.3, 0.7, -0.5},
                 c[3] = {1, -0.296, 0.5};
    memcpy(x, p, sizeof p), memcpy(q, c, sizeof c);
    return 3;
  }
  const size_t n = 2000;
  double *u = fmmcl_test_zeros(4 * n);
  fmmcl_test_random_values(31 + (unsigned)which, 4 * n, 0, 1, u);
  fmmcl_test_random_values(41 + (unsigned)which, n, -0.5, 0.5, q);
  for (size_t i = 0; i < n; i++) {
    double d[3] = {u[4 * i] - 0.5, u[4 * i + 1] - 0.5, u[4 * i + 2] - 0.5};
    const double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    for (int k = 0; k < 3; k++) {
      if (which == 0) x[3 * i + k] = pow(10, -12 * u[4 * i + 3]) * d[k] / len;
      else if (which == 1) x[3 * i + k] = 1e-9 * u[4 * i + 3] * d[k] / len + (k == 0 && i % 2 ? 1.0 : 0.0);
      else x[3 * i + k] = u[4 * i + k];
    }
  }
  if (which >= 2) {
    const double D[] = {1e3, 1e8, 1e12, 1e15};
    x[3 * (n - 1)] = x[3 * (n - 1) + 1] = x[3 * (n - 1) + 2] = D[which - 2];
  }
  free(u);
  return n;
}

static double rel_l2(const double *a, const double *b, size_t n) {
  double e = 0, r = 0;
  for (size_t i = 0; i < n; i++) e += (a[i] - b[i]) * (a[i] - b[i]), r += b[i] * b[i];
  return sqrt(e / r);
}

/* The methods whose double plans decide at creation whether their near
 * fields add the offsets' low parts (-DCOMPENSATE in the build options). */
static int compensated_method(fmmcl_method m) { return m == FMMCL_DIRECT || m == FMMCL_FMM || m == FMMCL_TREECODE; }

/* Double at tol 1e-8 meets 1e-8 in the potential and the gradient, over
 * all targets, for every method: the frames (tiles, leaves) of a tight
 * group of points may be far wider than it, or lie far from it, and the
 * offsets from them must keep the group's digits. Single meets 1e-4 (the
 * potential) or its rounding estimate says it cannot (the CLI warns). */
START_TEST(test_geometry_tight_groups) {
  double *x = fmmcl_test_zeros(3 * 2000), *q = fmmcl_test_zeros(2000), *pot = fmmcl_test_zeros(2000), *grad = fmmcl_test_zeros(3 * 2000);
  double *rp = fmmcl_test_zeros(2000), *rg = fmmcl_test_zeros(3 * 2000);
  const size_t n = geometry_set(_i, x, q);
  const fmmcl_method methods[] = {FMMCL_DIRECT, FMMCL_FMM, FMMCL_TREECODE};
  for (int prec = 0; prec < 2; prec++) {
    const fmmcl_precision p = prec ? FMMCL_DOUBLE : FMMCL_SINGLE;
    if (skip_double(p)) continue;
    for (int m = 0; m < 3; m++) {
      fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, methods[m], p);
      o.tolerance = prec ? 1e-8 : 1e-4;
      o.gradient = prec; /* float's 1/r^3 overflows on set 0's closest pairs */
      fmmcl_plan plan = NULL;
      fmmcl_status st = fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan);
      if (!st) st = fmmcl_plan_execute(plan, q, pot, o.gradient ? grad : NULL);
      ck_assert_msg(st == FMMCL_SUCCESS, "set %d, method %d, %s: %s", _i, m, prec ? "double" : "single",
                    fmmcl_last_error(ctx));
      ck_assert_int_eq(fmmcl_reference_direct(&o, n, x, q, n, x, rp, o.gradient ? rg : NULL), FMMCL_SUCCESS);
      const double ep = rel_l2(pot, rp, n), eg = o.gradient ? rel_l2(grad, rg, 3 * n) : 0;
      double est = 0, dist = 0;
      ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, NULL, &est, &dist), FMMCL_SUCCESS);
      char opts[1024] = "";
      ck_assert_int_eq(fmmcl_plan_build_options(plan, opts, sizeof opts), FMMCL_SUCCESS);
      fmmcl_plan_destroy(plan);
      if (prec)
        ck_assert_msg(ep <= 1e-8 && eg <= 1e-8, "set %d, method %d, double: potential %.3e, gradient %.3e",
                      _i, m, ep, eg);
      /* The sets are built to defeat the frames: each double plan finds
       * that its near fields need the offsets' low parts, but the octree's
       * where only one outlier stretches the root (sets 2 and 3: the
       * leaves fit the unit cube's points, whose offsets are then exact
       * enough) */
      const int tree = methods[m] != FMMCL_DIRECT, fits = tree && (_i == 2 || _i == 3);
      if (prec && compensated_method(methods[m]))
        ck_assert_msg(strstr(opts, fits ? "-DCOMPENSATE=0" : "-DCOMPENSATE=1") != NULL,
                      "set %d, method %d, double: %s", _i, m, opts);
      else
        ck_assert_msg(ep <= 1e-4 || est > 1e-4,
                      "set %d, method %d, single: potential %.3e with a rounding estimate of %.3e", _i, m, ep,
                      est);
    }
  }
  free(x), free(q), free(pot), free(grad), free(rp), free(rg);
}
END_TEST

/* ---- the binary cache: forged files never reach the driver --------------- */

#define OPTS "-DFMMCL_TEST_HOSTILE=1"
/* Where the header keeps its fields (binary_cache.c's cache_header). */
enum { TAG_AT = 24, LENGTH_AT = 32, CHECKSUM_AT = 40, HEADER = 48 };

static int build(void) {
  cl_program prog = NULL;
  int cached = -1;
  fmmcl_status st = fmmcl_program_build(ctx, "direct/p2p.cl", OPTS, &prog, &cached);
  ck_assert_msg(st == FMMCL_SUCCESS, "build: %s", fmmcl_last_error(ctx));
  clReleaseProgram(prog);
  return cached;
}

/* The one .bin file of the test's cache: its path and contents. */
static unsigned char *cache_file(char *path, size_t len, size_t *size, uint64_t *key) {
  char dir[4096];
  ck_assert_int_eq(fmmcl_cache_dir_path(dir, sizeof dir), FMMCL_SUCCESS);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep '\\.bin$'", dir);
  FILE *p = popen(cmd, "r");
  char name[256] = "";
  ck_assert_ptr_nonnull(fgets(name, sizeof name, p));
  pclose(p);
  name[strcspn(name, "\n")] = '\0';
  snprintf(path, len, "%s/%s", dir, name);
  *key = strtoull(name, NULL, 16);
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  rewind(f);
  unsigned char *data = malloc(*size);
  ck_assert_uint_eq(fread(data, 1, *size, f), *size);
  fclose(f);
  return data;
}

static void write_bytes(const char *path, const unsigned char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* A flipped payload whose public FNV-1a checksum is recomputed (what
 * crashed the driver before): the keyed checksum refuses it. */
START_TEST(test_cache_forged_checksum) {
  ck_assert_int_eq(build(), 0);
  char path[4300];
  size_t size;
  uint64_t key;
  unsigned char *data = cache_file(path, sizeof path, &size, &key);
  data[HEADER + (size - HEADER) / 2] ^= 0x10;
  uint64_t forged = fmmcl_hash64(FMMCL_HASH64_INIT, data + HEADER, size - HEADER);
  memcpy(data + CHECKSUM_AT, &forged, 8);
  write_bytes(path, data, size);
  unsigned char *loaded = NULL;
  size_t loaded_len = 0;
  uint64_t tag;
  memcpy(&tag, data + TAG_AT, 8);
  ck_assert_int_eq(fmmcl_cache_load_tagged(key, tag, &loaded, &loaded_len), FMMCL_ERROR_CORRUPT_FILE);
  ck_assert_ptr_null(loaded);
  ck_assert_int_eq(build(), 0);
  ck_assert_int_eq(build(), 1);
  free(data);
}
END_TEST

/* The secret that keys the checksum is its owner's alone. */
START_TEST(test_cache_secret_private) {
  ck_assert_int_eq(build(), 0);
  char dir[4096], path[4200];
  ck_assert_int_eq(fmmcl_cache_dir_path(dir, sizeof dir), FMMCL_SUCCESS);
  snprintf(path, sizeof path, "%s/.secret", dir);
  struct stat sb;
  ck_assert_int_eq(stat(path, &sb), 0);
  ck_assert_int_eq(sb.st_mode & 0777, 0600);
  ck_assert_int_eq(sb.st_size, 16);
}
END_TEST

/* Correctly signed files the driver must refuse (junk), or whose program
 * lacks the kernels the entry names (a valid binary under another name
 * list): each is
 * rebuilt from source, and the bad payload is gone (deleted, then replaced
 * by the rebuilt binary), so it never reaches the driver again. */
START_TEST(test_cache_signed_but_wrong) {
  ck_assert_int_eq(build(), 0);
  char path[4300];
  size_t size;
  uint64_t key, tag;
  unsigned char *good = cache_file(path, sizeof path, &size, &key);
  memcpy(&tag, good + TAG_AT, 8);
  const char *names = (const char *)good + HEADER;
  size_t names_len = strlen(names) + 1;
  unsigned char *bad = malloc(names_len + 4096);
  memcpy(bad, names, names_len);
  size_t bad_len = names_len + 4096;
  if (_i == 0) { /* junk no driver can load */
    for (size_t i = 0; i < 4096; i++) bad[names_len + i] = (unsigned char)(i * 131 + 7);
  } else { /* the valid binary, but a name list its program does not match */
    memcpy(bad, "no_such_kernel", 15);
    bad_len = 15 + (size - HEADER - names_len);
    bad = realloc(bad, bad_len);
    memcpy(bad + 15, good + HEADER + names_len, size - HEADER - names_len);
  }
  ck_assert_int_eq(fmmcl_cache_store_tagged(key, tag, bad, bad_len), FMMCL_SUCCESS);
  ck_assert_int_eq(build(), 0);
  size_t now_size;
  uint64_t now_key;
  unsigned char *now = cache_file(path, sizeof path, &now_size, &now_key);
  ck_assert_msg(now_size != HEADER + bad_len || memcmp(now + HEADER, bad, bad_len) != 0,
                "the refused payload is still in the cache");
  ck_assert_int_eq(build(), 1);
  free(now);
  free(bad);
  free(good);
}
END_TEST

/* A valid file with a try mark beside it: a process died in the driver
 * while loading it, so it is not trusted again; the rebuilt binary is. */
START_TEST(test_cache_crash_mark) {
  ck_assert_int_eq(build(), 0);
  char path[4300], mark[4300], dir[4096];
  size_t size;
  uint64_t key;
  free(cache_file(path, sizeof path, &size, &key));
  ck_assert_int_eq(fmmcl_cache_dir_path(dir, sizeof dir), FMMCL_SUCCESS);
  snprintf(mark, sizeof mark, "%s/.%016llx.trying", dir, (unsigned long long)key);
  write_bytes(mark, (const unsigned char *)"", 0);
  ck_assert_int_eq(build(), 0);
  ck_assert_int_eq(access(mark, F_OK), -1);
  ck_assert_int_eq(build(), 1);
}
END_TEST

/* ---- the command line ------------------------------------------------------ */

/* fmmcl on a file whose float gradient overflows: non-zero exit with the
 * reason, never "-nan" or "inf" with status 0; --check likewise. */
START_TEST(test_cli_overflow) {
  char input[4300], cmd[9000];
  snprintf(input, sizeof input, "%s/overflow.csv", work);
  FILE *f = fopen(input, "w");
  ck_assert_ptr_nonnull(f);
  fputs("x,y,z,q\n0,0,0,1e36\n0.01,0,0,1e36\n0,0.01,0,1e36\n", f);
  fclose(f);
  const char *extra[] = {"", "--check 3"};
  snprintf(cmd, sizeof cmd, "'%s/fmmcl' --precision single %s '%s' 2>&1", FMMCL_BIN_DIR, extra[_i], input);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  char out[16384];
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  int status = pclose(p);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0, "exit 0 on overflow:\n%s", out);
  ck_assert_msg(strstr(out, "overflow") != NULL, "no reason given:\n%s", out);
  ck_assert_msg(strstr(out, "nan") == NULL, "printed a NaN:\n%s", out);
}
END_TEST


/* fmmtune's numbers are numbers: text, infinity, negative or zero counts
 * are usage errors naming the option, not 0, a default or a wrap-around. */
START_TEST(test_fmmtune_bad_numbers) {
  const char *args[] = {"--budget abc", "--budget 1e400", "--budget -3", "--n abc",
                        "--n -5",       "--n 0",          "--repeats x", "--seed -1"};
  char cmd[8192], out[16384];
  snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", FMMCL_TUNER_BIN, args[_i]);
  const int rc = fmmcl_test_run_command(cmd, out, sizeof out);
  ck_assert_msg(rc == 2, "%s: exit %d:\n%s", args[_i], rc, out);
  char opt[32];
  sscanf(args[_i], "%31s", opt);
  ck_assert_msg(strstr(out, opt) != NULL, "%s: the option is not named:\n%s", args[_i], out);
}
END_TEST

/* A runtime that cannot start for want of a cache directory is named as
 * such, not as "no device" alone (POCL_CACHE_DIR unset: PoCL then takes
 * XDG_CACHE_HOME); a runtime that copes is fine too. */
START_TEST(test_unusable_xdg_cache_home) {
  char cmd[8192], out[16384];
  snprintf(cmd, sizeof cmd, "env -u POCL_CACHE_DIR XDG_CACHE_HOME=/dev/null/cache '%s/fmmcl' --demo 50 2>&1",
           FMMCL_BIN_DIR);
  const int rc = fmmcl_test_run_command(cmd, out, sizeof out);
  ck_assert_msg(rc == 0 || strstr(out, "XDG_CACHE_HOME") != NULL, "exit %d without the cause:\n%s", rc, out);
}
END_TEST

/* Points closer than single precision can tell apart (1e-9 at 0.2, where
 * a float's ulp is 1.5e-8) draw a warning naming the pair's distance and
 * double precision, whatever --quiet says; a set that single precision
 * resolves draws none. */
START_TEST(test_cli_resolution_warning) {
  char input[4300], cmd[9000], out[16384];
  snprintf(input, sizeof input, "%s/close.csv", work);
  FILE *f = fopen(input, "w");
  ck_assert_ptr_nonnull(f);
  fputs("x,y,z,q\n", f);
  for (int i = 0; i < 40; i++)
    fprintf(f, "%.17g,%.17g,%.17g,1\n", 0.5 + 0.01 * i, 0.3 + 0.007 * i, 0.1 * (i % 7));
  if (_i == 0) fputs("0.2,0.2,0.2,1\n0.200000001,0.2,0.2,1\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s/fmmcl' --quiet --precision single --method direct '%s' 2>&1", FMMCL_BIN_DIR,
           input);
  const int rc = fmmcl_test_run_command(cmd, out, sizeof out);
  ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
  if (_i == 0) {
    ck_assert_msg(strstr(out, "warning") && strstr(out, "1e-09") && strstr(out, "--precision double"),
                  "no warning:\n%s", out);
  } else {
    ck_assert_msg(strstr(out, "warning") == NULL, "a warning on a resolved set:\n%s", out);
  }
}
END_TEST

/* An unknown kernel is refused by fmmcl_plan_options_init itself; an
 * infinite bbFMM parameter is refused with the options, never compiled. */
START_TEST(test_options_refused_early) {
  fmmcl_plan_options o;
  ck_assert_int_eq(fmmcl_plan_options_init(&o, (fmmcl_kernel)99), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(fmmcl_plan_options_init(&o, (fmmcl_kernel)-1), FMMCL_ERROR_INVALID_ARGUMENT);
  double x[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  fmmcl_plan plan = NULL;
  o = options(FMMCL_LAPLACE_3D, FMMCL_BBFMM, FMMCL_SINGLE);
  o.gradient = 0, o.bbfmm_kernel = FMMCL_BBFMM_MULTIQUADRIC, o.kernel_param = INFINITY;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 4, x, 0, NULL, &plan), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(fmmcl_last_error(ctx), "kernel_param") != NULL, "%s", fmmcl_last_error(ctx));
}
END_TEST

/* A bbFMM whose operators need more than the device allows in one buffer
 * (double at tol 1e-9: about 2.5 GB per level) says so, with the sizes,
 * instead of a raw CL_INVALID_BUFFER_SIZE; a device that allows it builds. */
START_TEST(test_bbfmm_operators_too_large) {
  if (!dev.has_fp64) return;
  enum { N = 600 };
  double *x = fmmcl_test_zeros(3 * N);
  fmmcl_test_random_points(8, N, 3, x);
  fmmcl_plan_options o = options(FMMCL_LAPLACE_3D, FMMCL_BBFMM, FMMCL_DOUBLE);
  o.gradient = 0, o.tolerance = 1e-9;
  fmmcl_plan plan = NULL;
  fmmcl_status st = fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan);
  ck_assert_msg(st == FMMCL_SUCCESS || st == FMMCL_ERROR_OUT_OF_MEMORY, "status %d: %s", st,
                fmmcl_last_error(ctx));
  if (st) ck_assert_msg(strstr(fmmcl_last_error(ctx), "one allocation") != NULL, "%s", fmmcl_last_error(ctx));
  fmmcl_plan_destroy(plan);
  free(x);
}
END_TEST

/* The new status reads differently from every other. */
START_TEST(test_status_string) {
  const char *s = fmmcl_strerror(FMMCL_ERROR_NONFINITE_OUTPUT);
  ck_assert(strstr(s, "NaN or infinite") != NULL);
  ck_assert_str_ne(s, fmmcl_strerror(FMMCL_ERROR_NONFINITE_INPUT));
  ck_assert_int_eq(FMMCL_ERROR_NONFINITE_OUTPUT + 1, FMMCL_STATUS_COUNT);
}
END_TEST

static Suite *hostile_suite(void) {
  Suite *s = suite_create("hostile");
  TCase *out = tcase_create("outputs");
  tcase_add_checked_fixture(out, open_device, close_device);
  tcase_add_test(out, test_float_gradient_overflow);
  tcase_add_loop_test(out, test_double_charges_overflow, 0, 3);
  tcase_add_test(out, test_status_string);
  suite_add_tcase(s, out);

  TCase *range = tcase_create("ranges");
  tcase_add_checked_fixture(range, open_device, close_device);
  tcase_add_loop_test(range, test_float_coordinates_too_large, 0, 2);
  tcase_add_test(range, test_fmm2d_scaled);
  tcase_add_test(range, test_float_tiny_extent);
  tcase_add_loop_test(range, test_gaussian_tiny_sigma, 0, 2);
  tcase_add_test(range, test_float_charges_too_large);
  tcase_add_test(range, test_float_softening_too_large);
  tcase_add_test(range, test_options_refused_early);
  tcase_add_test(range, test_bbfmm_operators_too_large);
  suite_add_tcase(s, range);

  TCase *morton = tcase_create("morton");
  tcase_add_checked_fixture(morton, open_device, close_device);
  tcase_add_test(morton, test_morton_cube_far_small_set);
  tcase_add_test(morton, test_fmm_double_far_small_set);
  suite_add_tcase(s, morton);

  TCase *geometry = tcase_create("geometry");
  tcase_add_checked_fixture(geometry, open_device, close_device);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(geometry, 120);
  tcase_add_loop_test(geometry, test_geometry_tight_groups, 0, 7);
  suite_add_tcase(s, geometry);

  TCase *cache = tcase_create("cache");
  tcase_add_checked_fixture(cache, open_device_fresh_cache, close_device);
  tcase_add_test(cache, test_cache_forged_checksum);
  tcase_add_test(cache, test_cache_secret_private);
  tcase_add_loop_test(cache, test_cache_signed_but_wrong, 0, 2);
  tcase_add_test(cache, test_cache_crash_mark);
  suite_add_tcase(s, cache);

  TCase *cli = tcase_create("cli");
  tcase_add_checked_fixture(cli, open_device, close_device);
  tcase_add_loop_test(cli, test_cli_overflow, 0, 2);
  tcase_add_loop_test(cli, test_fmmtune_bad_numbers, 0, 8);
  tcase_add_test(cli, test_unusable_xdg_cache_home);
  tcase_add_loop_test(cli, test_cli_resolution_warning, 0, 2);
  suite_add_tcase(s, cli);
  return s;
}

int main(void) {
  /* PoCL keeps its compiler cache under XDG_CACHE_HOME, which the cache
   * tests change: pinned to the suite's, rebuilds from source stay fast.
   * Read when PoCL starts, so set before any OpenCL. */
  const char *xdg = getenv("XDG_CACHE_HOME");
  if (!getenv("POCL_CACHE_DIR") && xdg && *xdg) {
    char pocl[4096];
    snprintf(pocl, sizeof pocl, "%s/pocl", xdg);
    setenv("POCL_CACHE_DIR", pocl, 1);
  }
  SRunner *sr = srunner_create(hostile_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
