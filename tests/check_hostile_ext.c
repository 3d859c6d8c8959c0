/* check_hostile_ext.c — hostile inputs to the entry points beyond
 * fmmcl_plan_execute: fmmcl_plan_evaluate (dipoles, Hessians, Helmholtz,
 * Stokes), fmmcl_plan_update_positions and fmmcl_plan_execute_buffers on
 * those plans, and the fmmcl command's runs of them. Each case gives a
 * result within its bound over every target (against the plain-C double
 * reference) or one exact non-zero status, never success with a wrong,
 * zero or non-finite answer. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "fmmcl.h"
#include "fmmcl_cl.h"
#include "test_util.h"

static fmmcl_context ctx;
static fmmcl_device_info dev;
static char *work;

static void open_device(void) {
  work = fmmcl_test_tempdir("hostile_ext");
  ck_assert_ptr_nonnull(work);
  ctx = fmmcl_test_context();
  ck_assert_msg(ctx != NULL, "no OpenCL context: %s", fmmcl_last_error(NULL));
  ck_assert_int_eq(fmmcl_context_device(ctx, &dev), FMMCL_SUCCESS);
}

static void close_device(void) {
  fmmcl_context_destroy(ctx);
  ctx = NULL;
  fmmcl_test_rmtree(work);
  free(work);
}

enum { LAP, HELM, STOKES, KINDS };
static const char *const kind_name[KINDS] = {"Laplace dipoles + Hessian", "Helmholtz dipoles + gradient",
                                             "Stokes stresslets + pressure"};

/* The richest options of each kind: every source array and output it has. */
static fmmcl_plan_options ext_options(int kind, fmmcl_precision p, double k) {
  fmmcl_plan_options o;
  ck_assert_int_eq(fmmcl_plan_options_init(&o, kind == LAP    ? FMMCL_LAPLACE_3D
                                               : kind == HELM ? FMMCL_HELMHOLTZ_3D
                                                              : FMMCL_STOKES_3D),
                   FMMCL_SUCCESS);
  o.method = FMMCL_DIRECT;
  o.precision = p;
  if (kind == LAP) o.dipoles = o.hessian = o.gradient = 1;
  if (kind == HELM) o.dipoles = o.gradient = 1, o.wavenumber_re = k;
  if (kind == STOKES) o.stresslets = o.pressure = 1;
  return o;
}

/* Strengths of n sources: a holds 6n values, b 6n, c 3n (times scale;
 * orientations c unscaled). */
typedef struct {
  double *a, *b, *c;
  fmmcl_sources_data in;
} strengths;

static strengths make_strengths(int kind, size_t n, double scale, unsigned seed) {
  strengths s = {fmmcl_test_zeros(6 * n), fmmcl_test_zeros(6 * n), fmmcl_test_zeros(3 * n), {0}};
  fmmcl_test_random_values(seed, 6 * n, -scale, scale, s.a);
  fmmcl_test_random_values(seed + 1, 6 * n, -scale, scale, s.b);
  fmmcl_test_random_values(seed + 2, 3 * n, -1, 1, s.c);
  if (kind == LAP) s.in.charges = s.a, s.in.dipoles = s.b;
  if (kind == HELM) s.in.complex_charges = s.a, s.in.complex_dipoles = s.b;
  if (kind == STOKES) s.in.forces = s.a, s.in.stresslet_strengths = s.b, s.in.stresslet_orientations = s.c;
  return s;
}

static void free_strengths(strengths *s) { free(s->a), free(s->b), free(s->c); }

/* Every output of a kind, each of up to 6 values per target. */
typedef struct {
  double *v[3];
  size_t per[3];
  fmmcl_targets_data out;
} fields;

static fields make_fields(int kind, size_t m) {
  fields f = {{fmmcl_test_zeros(6 * m), fmmcl_test_zeros(6 * m), fmmcl_test_zeros(6 * m)}, {0}, {0}};
  if (kind == LAP) {
    f.out.potential = f.v[0], f.out.gradient = f.v[1], f.out.hessian = f.v[2];
    f.per[0] = 1, f.per[1] = 3, f.per[2] = 6;
  } else if (kind == HELM) {
    f.out.complex_potential = f.v[0], f.out.complex_gradient = f.v[1];
    f.per[0] = 2, f.per[1] = 6;
  } else {
    f.out.velocity = f.v[0], f.out.pressure = f.v[1];
    f.per[0] = 3, f.per[1] = 1;
  }
  return f;
}

static void free_fields(fields *f) {
  for (int k = 0; k < 3; k++) free(f->v[k]);
}

/* The largest relative L2 error over the outputs; infinite where a value
 * is not finite. */
static double worst_error(const fields *a, const fields *ref, size_t m) {
  double worst = 0;
  for (int k = 0; k < 3; k++) {
    if (!a->per[k]) continue;
    for (size_t i = 0; i < m * a->per[k]; i++)
      if (!isfinite(a->v[k][i])) return INFINITY;
    worst = fmax(worst, fmmcl_test_rel_l2(a->v[k], ref->v[k], m * a->per[k]));
  }
  return worst;
}

/* Plan, evaluate, and the reference on the same data: the status, and
 * the error in *err (when the status is success), the rounding estimate
 * in *estimate (when the plan was made), the message in msg. */
static fmmcl_status evaluate_case(const fmmcl_plan_options *o, int kind, size_t n, const double *x,
                                  double scale, double *err, double *estimate, char *msg, size_t len) {
  strengths s = make_strengths(kind, n, scale, 11);
  if (!o->stresslets) s.in.stresslet_strengths = s.in.stresslet_orientations = NULL;
  fields f = make_fields(kind, n), r = make_fields(kind, n);
  fmmcl_plan plan = NULL;
  fmmcl_status st = fmmcl_plan_create(ctx, o, n, x, 0, NULL, &plan);
  if (!st) st = fmmcl_plan_evaluate(plan, &s.in, &f.out);
  snprintf(msg, len, "%s", st ? fmmcl_last_error(ctx) : "");
  double distance;
  *estimate = NAN;
  if (plan) ck_assert_int_eq(fmmcl_plan_rounding_estimate(plan, x, NULL, estimate, &distance), FMMCL_SUCCESS);
  fmmcl_plan_destroy(plan);
  *err = NAN;
  if (!st) {
    ck_assert_int_eq(fmmcl_reference_evaluate(o, n, x, &s.in, n, x, &r.out), FMMCL_SUCCESS);
    *err = worst_error(&f, &r, n);
  }
  free_strengths(&s), free_fields(&f), free_fields(&r);
  return st;
}

static double unit(fmmcl_precision p) { return p == FMMCL_DOUBLE ? 0x1p-53 : 0x1p-24; }

/* N points uniform in [off, off + scale)^3. */
static double *cube(size_t n, double scale, double off, unsigned seed) {
  double *x = fmmcl_test_zeros(3 * n);
  fmmcl_test_random_points(seed, n, 3, x);
  for (size_t i = 0; i < 3 * n; i++) x[i] = off + scale * x[i];
  return x;
}

#define N 150

/* ---- extents: r^-5 of the Hessians and dipole gradients ---------------- */

/* Sets of extent 1e-12 (at the origin and at 0.5) and 1e13: the pair bodies
 * take up to r^-5, which in float overflows below r = 2e-8 and underflows
 * above 5e7 in world units. The device sees coordinates in units of a power
 * of two near the set's size, so every output is right to its precision's
 * rounding in both. (Before: extent 1e-12 in float, NaN outputs reported as
 * FMMCL_ERROR_NONFINITE_OUTPUT; extent 1e13, the float Hessian 128% wrong
 * with success.) */
START_TEST(test_extents) {
  const int kind = _i;
  const double scales[] = {1e-12, 1e-12, 1e13}, offs[] = {0, 0.5, 0};
  for (int pp = 0; pp < 2; pp++) {
    const fmmcl_precision p = pp ? FMMCL_DOUBLE : FMMCL_SINGLE;
    if (p == FMMCL_DOUBLE && !dev.has_fp64) continue;
    for (int e = 0; e < 3; e++) {
      fmmcl_plan_options o = ext_options(kind, p, 3 / scales[e]);
      double *x = cube(N, scales[e], offs[e], 3);
      double err, est;
      char msg[1024];
      fmmcl_status st = evaluate_case(&o, kind, N, x, 1, &err, &est, msg, sizeof msg);
      ck_assert_msg(st == FMMCL_SUCCESS, "%s, %s, extent %g at %g: %s", kind_name[kind],
                    pp ? "double" : "single", scales[e], offs[e], msg);
      /* the rounding of the input and of the pair's arithmetic: some
       * hundreds of ulps at the closest pairs of the Hessians (measured:
       * 4.5e-6 in float, 7.6e-15 in double at N = 300) */
      ck_assert_msg(err <= 500 * unit(p), "%s, %s, extent %g at %g: error %.3g", kind_name[kind],
                    pp ? "double" : "single", scales[e], offs[e], err);
      free(x);
    }
  }
}
END_TEST

/* ---- one far point --------------------------------------------------------- */

/* The unit cube plus one point at (D, D, D): the device's frame is the
 * points' median, so the outlier no longer costs the bulk its digits. In
 * double every output is right to rounding for D up to 1e15, and the
 * rounding estimate (the frame's) says so; in float D = 1e3 is right, and
 * farther outliers (whose pairs with the bulk span more than float's range
 * of r^-5 in one scale) give a status, or a rounding estimate above 1e-4
 * where the answer misses. (Before, with the box's centre as the frame:
 * double errors 2e-4 at D = 1e11 and 0.8-1.0 at 1e15, float 1e-3 at D = 1e3
 * and 1.0 beyond, all with success.) */
START_TEST(test_outlier) {
  const int kind = _i;
  const double far[] = {1e3, 1e8, 1e15};
  for (int pp = 0; pp < 2; pp++) {
    const fmmcl_precision p = pp ? FMMCL_DOUBLE : FMMCL_SINGLE;
    if (p == FMMCL_DOUBLE && !dev.has_fp64) continue;
    for (int d = 0; d < 3; d++) {
      fmmcl_plan_options o = ext_options(kind, p, 3);
      double *x = cube(N, 1, 0, 5);
      x[3 * (N - 1)] = x[3 * (N - 1) + 1] = x[3 * (N - 1) + 2] = far[d];
      double err, est;
      char msg[1024];
      fmmcl_status st = evaluate_case(&o, kind, N, x, 1, &err, &est, msg, sizeof msg);
      const char *what = kind_name[kind];
      if (p == FMMCL_DOUBLE || d == 0) {
        /* Helmholtz in float at D = 1e3: k r = 5e3, whose phase rounds by 3e-4 */
        const double bound = p == FMMCL_DOUBLE ? 1e-13 : kind == HELM ? 1e-3 : 1e-5;
        ck_assert_msg(st == FMMCL_SUCCESS, "%s, D = %g: %s", what, far[d], msg);
        ck_assert_msg(err <= bound, "%s, %s, D = %g: error %.3g", what, pp ? "double" : "single", far[d],
                      err);
        if (kind != HELM) /* Helmholtz adds the far pair's phase */
          ck_assert_msg(est <= 1e-5, "%s, D = %g: estimate %.3g for a resolved set", what, far[d], est);
      } else {
        ck_assert_msg(st == FMMCL_ERROR_NONFINITE_OUTPUT || st == FMMCL_ERROR_INVALID_ARGUMENT ||
                          (st == FMMCL_SUCCESS && (err <= 1e-4 || est > 1e-4)),
                      "%s, single, D = %g: status %d, error %.3g, estimate %.3g", what, far[d], (int)st, err,
                      est);
      }
      free(x);
    }
  }
}
END_TEST

/* ---- two tight groups ------------------------------------------------------ */

/* Two groups 1e-9 wide at x = 0 and x = 1: their median falls between, so
 * every offset is about 0.5 while pairs are ~1e-10 apart; the offsets go
 * to the device as hi + lo pairs, whose high parts difference exactly for
 * close points. Double: every output right to rounding (before, 1.2e-6 with
 * success); float: right to rounding, or the Hessian's and dipole
 * gradient's r^-5 overflows float at 1e-10 and the status says so (before,
 * Stokes in float: error 42 with success). */
START_TEST(test_two_clusters) {
  const int kind = _i;
  for (int pp = 0; pp < 2; pp++) {
    const fmmcl_precision p = pp ? FMMCL_DOUBLE : FMMCL_SINGLE;
    if (p == FMMCL_DOUBLE && !dev.has_fp64) continue;
    fmmcl_plan_options o = ext_options(kind, p, 3);
    double *x = cube(N, 1e-9, 0, 37);
    for (size_t i = N / 2; i < N; i++) x[3 * i] += 1;
    double err, est;
    char msg[1024];
    fmmcl_status st = evaluate_case(&o, kind, N, x, 1, &err, &est, msg, sizeof msg);
    ck_assert_msg(st == FMMCL_SUCCESS || (p == FMMCL_SINGLE && st == FMMCL_ERROR_NONFINITE_OUTPUT),
                  "%s, %s: %s", kind_name[kind], pp ? "double" : "single", msg);
    if (!st)
      ck_assert_msg(err <= 500 * unit(p), "%s, %s: error %.3g", kind_name[kind], pp ? "double" : "single",
                    err);
    free(x);
  }
}
END_TEST

/* ---- the treecode on coincident clusters -------------------------------- */

/* 1000 points at (0.2, 0.2, 0.2) and 1000 at (0.8, 0.8, 0.8), exactly
 * coincident (c = 0) or in cubes 1e-6 wide (c = 1); charges in [-1, 1).
 * Every cell holding a group has all its charge at one corner, where a
 * multipole about the cell's centre converges at theta / (2 - theta) = 1/3
 * only, beyond what the order rule assumes (before: potential 4.6e-4 at
 * float tol 1e-4, 1.9e-6 at double tol 1e-6, with success). About the
 * sources' own centre the far group is a point (or nearly). Potential and
 * gradient over every target against the double direct sum; plain charges
 * (fmmcl_plan_execute) and the dipole + Hessian treecode (evaluate). */
START_TEST(test_treecode_coincident) {
  const int c = _i;
  const size_t n = 2000;
  double *x = fmmcl_test_zeros(3 * n), *q = fmmcl_test_zeros(n);
  double *jit = cube(n, 1e-6, 0, 53);
  unsigned r = 12345;
  for (size_t i = 0; i < n; i++) {
    for (int d = 0; d < 3; d++) x[3 * i + d] = (i < n / 2 ? 0.2 : 0.8) + (c ? jit[3 * i + d] : 0);
    r = r * 1103515245u + 12345u;
    q[i] = 2.0 * (double)(r >> 8) / 16777216.0 - 1.0;
  }
  free(jit);
  fmmcl_plan_options o;
  fmmcl_plan_options_init(&o, FMMCL_LAPLACE_3D);
  o.gradient = 1, o.precision = FMMCL_DOUBLE;
  double *rp = fmmcl_test_zeros(n), *rg = fmmcl_test_zeros(3 * n), *pot = fmmcl_test_zeros(n), *grad = fmmcl_test_zeros(3 * n);
  ck_assert_int_eq(fmmcl_reference_direct(&o, n, x, q, 0, NULL, rp, rg), FMMCL_SUCCESS);
  for (int pp = 0; pp < 2; pp++) {
    const fmmcl_precision p = pp ? FMMCL_DOUBLE : FMMCL_SINGLE;
    if (p == FMMCL_DOUBLE && !dev.has_fp64) continue;
    o.method = FMMCL_TREECODE, o.precision = p, o.tolerance = pp ? 1e-6 : 1e-4;
    fmmcl_plan plan;
    ck_assert_msg(fmmcl_plan_create(ctx, &o, n, x, 0, NULL, &plan) == FMMCL_SUCCESS, "%s",
                  fmmcl_last_error(ctx));
    ck_assert_msg(fmmcl_plan_execute(plan, q, pot, grad) == FMMCL_SUCCESS, "%s", fmmcl_last_error(ctx));
    fmmcl_plan_destroy(plan);
    const double ep = fmmcl_test_rel_l2(pot, rp, n), eg = fmmcl_test_rel_l2(grad, rg, 3 * n);
    ck_assert_msg(ep <= o.tolerance && eg <= o.tolerance,
                  "treecode %s, %s: potential %.3g, gradient %.3g (tol %g)", pp ? "double" : "single",
                  c ? "1e-6 groups" : "coincident", ep, eg, o.tolerance);
  }
  free(x), free(q), free(rp), free(rg), free(pot), free(grad);
}
END_TEST

/* ---- the Stokes FMM ------------------------------------------------------------ */

/* STOKES_3D by four Laplace FMMs: u_i = phi_i - x_k d_i phi_k + d_i psi
 * cancels terms that grow with |x|, taken from a centre among the points
 * (the median). The unit cube plus one point at (D, D, D) meets the
 * default tolerance (double 1e-6 at D = 1e15, float 1e-4 at D = 1e7;
 * before, with the box's centre: 1.82 and 18.5 with success); two groups
 * 1e-9 wide at x = 0 and 1 lose the digits of their spacing to the
 * cancellation, and fmmcl_plan_rounding_estimate says so wherever the
 * error exceeds the tolerance. */
START_TEST(test_stokes_fmm) {
  for (int pp = 0; pp < 2; pp++) {
    const fmmcl_precision p = pp ? FMMCL_DOUBLE : FMMCL_SINGLE;
    if (p == FMMCL_DOUBLE && !dev.has_fp64) continue;
    const double tol = pp ? 1e-6 : 1e-4;
    fmmcl_plan_options o = ext_options(STOKES, p, 0);
    o.method = FMMCL_FMM;
    o.stresslets = 0;
    for (int c = 0; c < 2; c++) {
      double *x = cube(N, c ? 1e-9 : 1, 0, 41);
      if (c)
        for (size_t i = N / 2; i < N; i++) x[3 * i] += 1;
      else x[3 * (N - 1)] = x[3 * (N - 1) + 1] = x[3 * (N - 1) + 2] = pp ? 1e15 : 1e7;
      double err, est;
      char msg[1024];
      fmmcl_status st = evaluate_case(&o, STOKES, N, x, 1, &err, &est, msg, sizeof msg);
      ck_assert_msg(st == FMMCL_SUCCESS, "Stokes FMM %s, %s: %s", pp ? "double" : "single",
                    c ? "two groups" : "outlier", msg);
      if (!c) ck_assert_msg(err <= tol && est <= tol, "outlier: error %.3g, estimate %.3g", err, est);
      else ck_assert_msg(err <= tol || est > tol, "two groups: error %.3g, estimate %.3g", err, est);
      free(x);
    }
  }
}
END_TEST

/* ---- Helmholtz: k r ----------------------------------------------------------- */

/* exp(ikr): where the phase Re k r rounds by a radian (u Re k r >= 1) or
 * (k r)^2 overflows, the plan is refused naming it; below that the
 * rounding estimate includes u Re k r / 3 and covers the measured error;
 * an Im k that damps every pair to nothing is exactly 0 in double. (Before:
 * float k = 1e5, 1e7, 1e15 gave errors 2.5e-3, 0.23, 1.4 and double k =
 * 1e15, 1e30 gave 0.05, 0.92, all with success and estimates of 5e-6.) */
START_TEST(test_helmholtz_kr) {
  double *x = cube(N, 1, 0, 7);
  struct {
    fmmcl_precision p;
    double kr, ki;
    fmmcl_status want;
    const char *needle;
  } cases[] = {{FMMCL_SINGLE, 1e7, 0, FMMCL_ERROR_INVALID_ARGUMENT, "phase"},
               {FMMCL_SINGLE, 1e15, 0, FMMCL_ERROR_INVALID_ARGUMENT, "phase"},
               {FMMCL_SINGLE, 1, 1e30, FMMCL_ERROR_INVALID_ARGUMENT, "(k r)^2 overflows"},
               {FMMCL_DOUBLE, 1e30, 0, FMMCL_ERROR_INVALID_ARGUMENT, "phase"},
               {FMMCL_DOUBLE, 1e200, 0, FMMCL_ERROR_INVALID_ARGUMENT, "(k r)^2 overflows"},
               {FMMCL_SINGLE, 1e5, 0, FMMCL_SUCCESS, NULL},
               {FMMCL_DOUBLE, 1e15, 0, FMMCL_SUCCESS, NULL},
               {FMMCL_DOUBLE, 0, 1e30, FMMCL_SUCCESS, NULL}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    if (cases[c].p == FMMCL_DOUBLE && !dev.has_fp64) continue;
    fmmcl_plan_options o = ext_options(HELM, cases[c].p, cases[c].kr);
    o.wavenumber_im = cases[c].ki;
    double err, est;
    char msg[1024];
    fmmcl_status st = evaluate_case(&o, HELM, N, x, 1, &err, &est, msg, sizeof msg);
    ck_assert_msg(st == cases[c].want, "k = %g + %gi: status %d (%s), want %d", cases[c].kr, cases[c].ki,
                  (int)st, msg, (int)cases[c].want);
    if (cases[c].needle)
      ck_assert_msg(strstr(msg, cases[c].needle), "k = %g: \"%s\" lacks \"%s\"", cases[c].kr, msg,
                    cases[c].needle);
    else if (cases[c].ki > 0) ck_assert_msg(err == 0, "k = %gi: error %g, want exactly 0", cases[c].ki, err);
    else /* the estimate covers what is measured, and reports the loss */
      ck_assert_msg(err <= est && est > (cases[c].p == FMMCL_DOUBLE ? 1e-6 : 1e-4),
                    "k = %g: error %.3g, estimate %.3g", cases[c].kr, err, est);
  }
  free(x);
}
END_TEST

/* ---- strengths ------------------------------------------------------------- */

/* Strengths whose sum overflows float are refused before any work (dipoles
 * of 1e37, forces of 1e37); a charge pair whose float Hessian overflows in
 * world units (q = 1e30, r = 1e-3: 3e39) is computed in the scaled units
 * and comes out right in double; in double, Hessians of 1e300 charges at
 * that distance overflow and are reported, by the plan and by both
 * plain-C references (gradient 1e306 x 1e6). */
START_TEST(test_strengths) {
  double *x = cube(N, 1, 0, 9);
  double err, est;
  char msg[1024];
  for (int kind = 0; kind < KINDS; kind++) {
    fmmcl_plan_options o = ext_options(kind, FMMCL_SINGLE, 3);
    fmmcl_status st = evaluate_case(&o, kind, N, x, 1e37, &err, &est, msg, sizeof msg);
    ck_assert_msg(st == FMMCL_ERROR_INVALID_ARGUMENT && strstr(msg, "rescale"), "%s, strengths 1e37: %d (%s)",
                  kind_name[kind], (int)st, msg);
  }
  /* two charges 1e-3 apart, no dipoles */
  double pair[6] = {0.25, 0.5, 0.5, 0.251, 0.5, 0.5}, q[2] = {1e30, -1e30}, pot[2], grad[6], hess[12];
  double rpot[2], rgrad[6], rhess[12];
  fmmcl_plan_options o = ext_options(LAP, FMMCL_SINGLE, 0);
  o.dipoles = 0;
  for (int pp = 0; pp < 2; pp++) {
    o.precision = pp ? FMMCL_DOUBLE : FMMCL_SINGLE;
    if (pp && !dev.has_fp64) continue;
    if (pp) q[0] = 1e300, q[1] = -1e300;
    const fmmcl_sources_data in = {.charges = q};
    fmmcl_targets_data out = {.potential = pot, .gradient = grad, .hessian = hess};
    fmmcl_plan plan;
    ck_assert_int_eq(fmmcl_plan_create(ctx, &o, 2, pair, 0, NULL, &plan), FMMCL_SUCCESS);
    fmmcl_status st = fmmcl_plan_evaluate(plan, &in, &out);
    if (!pp) {
      ck_assert_msg(st == FMMCL_SUCCESS, "float Hessian 3e39: %s", fmmcl_last_error(ctx));
      fmmcl_targets_data ref = {.potential = rpot, .gradient = rgrad, .hessian = rhess};
      ck_assert_int_eq(fmmcl_reference_evaluate(&o, 2, pair, &in, 2, pair, &ref), FMMCL_SUCCESS);
      ck_assert_msg(fabs(hess[0] - rhess[0]) <= 1e-5 * fabs(rhess[0]) && fabs(rhess[0]) > 1e39,
                    "Hessian xx %g, reference %g", hess[0], rhess[0]);
      ck_assert_msg(fmmcl_test_rel_l2(grad, rgrad, 6) <= 1e-5, "gradient");
    } else {
      ck_assert_int_eq(st, FMMCL_ERROR_NONFINITE_OUTPUT);
      ck_assert_ptr_nonnull(strstr(fmmcl_last_error(ctx), "Hessian"));
      /* the plain-C reference overflows too, and says so (it returned
       * success with inf) */
      fmmcl_targets_data ref = {.potential = rpot, .gradient = rgrad, .hessian = rhess};
      ck_assert_int_eq(fmmcl_reference_evaluate(&o, 2, pair, &in, 2, pair, &ref),
                       FMMCL_ERROR_NONFINITE_OUTPUT);
      ck_assert_int_eq(fmmcl_reference_direct(&o, 2, pair, q, 2, pair, rpot, rgrad), FMMCL_ERROR_UNSUPPORTED);
      fmmcl_plan_options plain = o;
      plain.hessian = 0;
      ck_assert_int_eq(fmmcl_reference_direct(&plain, 2, pair, q, 2, pair, rpot, rgrad),
                       FMMCL_ERROR_NONFINITE_OUTPUT);
    }
    fmmcl_plan_destroy(plan);
  }
  free(x);
}
END_TEST

/* ---- new positions ------------------------------------------------------------ */

/* fmmcl_plan_update_positions on evaluate's plans: a Laplace Hessian plan
 * moved to a set of extent 1e-12 sums as a plan made there (bit for bit)
 * and within rounding of the reference; NaN or float-overflowing
 * coordinates, and a Helmholtz move whose k r loses the phase, are refused
 * and leave the plan summing on its old positions, bit for bit. */
START_TEST(test_update_positions) {
  const int kind = _i; /* LAP or HELM */
  fmmcl_plan_options o = ext_options(kind, FMMCL_SINGLE, 3);
  double *x = cube(N, 1, 0, 13), *y = cube(N, 1e-12, 0.5, 17), *bad = cube(N, 1, 0, 13);
  strengths s = make_strengths(kind, N, 1, 19);
  fields a = make_fields(kind, N), b = make_fields(kind, N), r = make_fields(kind, N);
  fmmcl_plan plan, fresh;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &s.in, &a.out), FMMCL_SUCCESS);
  /* refused moves */
  const double moves[] = {NAN, 1e19, 1e7};
  const fmmcl_status want[] = {FMMCL_ERROR_NONFINITE_INPUT, FMMCL_ERROR_INVALID_ARGUMENT,
                               kind == HELM ? FMMCL_ERROR_INVALID_ARGUMENT : FMMCL_SUCCESS};
  for (int m = 0; m < 3; m++) {
    if (want[m] == FMMCL_SUCCESS) continue;
    for (size_t i = 0; i < 3 * N; i++) bad[i] = x[i] * (m == 0 ? 1 : moves[m]);
    if (m == 0) bad[7] = NAN;
    ck_assert_int_eq(fmmcl_plan_update_positions(plan, bad, NULL), want[m]);
    ck_assert_int_eq(fmmcl_plan_evaluate(plan, &s.in, &b.out), FMMCL_SUCCESS);
    for (int k = 0; k < 3; k++)
      ck_assert_msg(memcmp(a.v[k], b.v[k], N * a.per[k] * sizeof(double)) == 0,
                    "move %d refused, but the results changed", m);
  }
  /* an accepted one */
  ck_assert_int_eq(fmmcl_plan_update_positions(plan, y, NULL), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_evaluate(plan, &s.in, &a.out), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, y, 0, NULL, &fresh), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_evaluate(fresh, &s.in, &b.out), FMMCL_SUCCESS);
  for (int k = 0; k < 3; k++)
    ck_assert_msg(memcmp(a.v[k], b.v[k], N * a.per[k] * sizeof(double)) == 0, "moved plan != fresh plan");
  ck_assert_int_eq(fmmcl_reference_evaluate(&o, N, y, &s.in, N, y, &r.out), FMMCL_SUCCESS);
  const double err = worst_error(&a, &r, N);
  ck_assert_msg(err <= 500 * unit(FMMCL_SINGLE), "%s after the move to extent 1e-12: error %.3g",
                kind_name[kind], err);
  fmmcl_plan_destroy(plan);
  fmmcl_plan_destroy(fresh);
  free(x), free(y), free(bad);
  free_strengths(&s), free_fields(&a), free_fields(&b), free_fields(&r);
}
END_TEST

/* ---- device buffers ----------------------------------------------------------- */

/* fmmcl_plan_execute_buffers on evaluate's plans: a Laplace plan with
 * dipoles and Hessians runs through the host (charges only) and equals
 * fmmcl_plan_execute; a result right in double but beyond the float
 * buffer's range is FMMCL_ERROR_NONFINITE_OUTPUT (it was success with inf
 * in the buffer);
 * a Helmholtz plan (no real charges) and a buffer too small are refused
 * with FMMCL_ERROR_INVALID_ARGUMENT, the result buffer untouched. */
START_TEST(test_execute_buffers) {
  cl_context clctx;
  cl_command_queue queue;
  ck_assert_int_eq(fmmcl_context_cl_handles(ctx, &clctx, &queue, NULL), FMMCL_SUCCESS);
  double *x = cube(N, 1, 0, 23), q[N], pot[N], grad[3 * N];
  fmmcl_test_random_values(29, N, -1, 1, q);
  float qf[N], pf[N], gf[3 * N];
  for (int i = 0; i < N; i++) qf[i] = (float)q[i];
  cl_int err;
  cl_mem bq = clCreateBuffer(clctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof qf, qf, &err);
  cl_mem bp = clCreateBuffer(clctx, CL_MEM_READ_WRITE, sizeof pf, NULL, &err);
  cl_mem bg = clCreateBuffer(clctx, CL_MEM_READ_WRITE, sizeof gf, NULL, &err);
  cl_mem small = clCreateBuffer(clctx, CL_MEM_READ_WRITE, sizeof pf / 2, NULL, &err);
  ck_assert(bq && bp && bg && small);
  fmmcl_plan_options o = ext_options(LAP, FMMCL_SINGLE, 0);
  fmmcl_plan plan;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, bq, bp, bg), FMMCL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, grad), FMMCL_SUCCESS);
  ck_assert_int_eq(clEnqueueReadBuffer(queue, bp, CL_TRUE, 0, sizeof pf, pf, 0, NULL, NULL), CL_SUCCESS);
  ck_assert_int_eq(clEnqueueReadBuffer(queue, bg, CL_TRUE, 0, sizeof gf, gf, 0, NULL, NULL), CL_SUCCESS);
  for (int i = 0; i < N; i++)
    ck_assert_msg(pf[i] == (float)pot[i], "potential %d: %g vs %g", i, pf[i], pot[i]);
  for (int i = 0; i < 3 * N; i++) ck_assert_msg(gf[i] == (float)grad[i], "gradient %d", i);
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, bq, small, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  fmmcl_plan_destroy(plan);
  /* a gradient of ~1e41 (charges 1e33 in a set 1e-3 wide): right in
   * double through fmmcl_plan_execute, beyond the float result buffer */
  for (int i = 0; i < 3 * N; i++) x[i] *= 1e-3;
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan), FMMCL_SUCCESS);
  for (int i = 0; i < N; i++) q[i] = 1e33, qf[i] = 1e33f;
  ck_assert_int_eq(clEnqueueWriteBuffer(queue, bq, CL_TRUE, 0, sizeof qf, qf, 0, NULL, NULL), CL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute(plan, q, pot, grad), FMMCL_SUCCESS);
  double gmax = 0;
  for (int i = 0; i < 3 * N; i++) gmax = fmax(gmax, fabs(grad[i]));
  ck_assert_msg(gmax > 3.5e38 && isfinite(gmax), "largest gradient %g", gmax);
  fmmcl_status st = fmmcl_plan_execute_buffers(plan, bq, bp, bg);
  ck_assert_msg(st == FMMCL_ERROR_NONFINITE_OUTPUT, "float overflow through buffers: %d (%s)", (int)st,
                fmmcl_last_error(ctx));
  fmmcl_plan_destroy(plan);
  o = ext_options(HELM, FMMCL_SINGLE, 3);
  ck_assert_int_eq(fmmcl_plan_create(ctx, &o, N, x, 0, NULL, &plan), FMMCL_SUCCESS);
  const float mark = 12345.0f;
  for (int i = 0; i < N; i++) pf[i] = mark;
  ck_assert_int_eq(clEnqueueWriteBuffer(queue, bp, CL_TRUE, 0, sizeof pf, pf, 0, NULL, NULL), CL_SUCCESS);
  ck_assert_int_eq(fmmcl_plan_execute_buffers(plan, bq, bp, NULL), FMMCL_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(clEnqueueReadBuffer(queue, bp, CL_TRUE, 0, sizeof pf, pf, 0, NULL, NULL), CL_SUCCESS);
  for (int i = 0; i < N; i++) ck_assert(pf[i] == mark);
  fmmcl_plan_destroy(plan);
  clReleaseMemObject(bq), clReleaseMemObject(bp), clReleaseMemObject(bg), clReleaseMemObject(small);
  free(x);
}
END_TEST

/* ---- the command line ------------------------------------------------------- */


/* fmmcl's evaluate runs: a Helmholtz k whose phase is lost exits 1 naming
 * it; a float Hessian run on a set with an outlier at 1e8 exits non-zero
 * naming the overflow, or warns (never exit 0 in silence); the same in
 * double runs clean and unwarned; a float Helmholtz run at k r = 1e5 warns
 * whatever --quiet says. */
START_TEST(test_cli) {
  char input[4300], hin[4300], cmd[9000], out[16384];
  snprintf(input, sizeof input, "%s/outlier.csv", work);
  snprintf(hin, sizeof hin, "%s/helm.csv", work);
  FILE *f = fopen(input, "w"), *h = fopen(hin, "w");
  ck_assert(f && h);
  fputs("x,y,z,q\n", f);
  fputs("x,y,z,qr,qi\n", h);
  double *x = cube(100, 1, 0, 31);
  for (int i = 0; i < 100; i++) {
    fprintf(f, "%.17g,%.17g,%.17g,%g\n", x[3 * i], x[3 * i + 1], x[3 * i + 2], (i % 3) - 1.0);
    fprintf(h, "%.17g,%.17g,%.17g,%g,0\n", x[3 * i], x[3 * i + 1], x[3 * i + 2], (i % 3) - 1.0);
  }
  fputs("1e8,1e8,1e8,1\n", f);
  fclose(f), fclose(h);
  free(x);
  const char *bin = FMMCL_BIN_DIR;
  snprintf(cmd, sizeof cmd, "'%s/fmmcl' --quiet --kernel helmholtz3d --wavenumber 1e7 '%s' 2>&1", bin, hin);
  int rc = fmmcl_test_run_command(cmd, out, sizeof out);
  ck_assert_msg(rc == 1 && strstr(out, "phase"), "k = 1e7: exit %d:\n%s", rc, out);
  snprintf(cmd, sizeof cmd, "'%s/fmmcl' --quiet --kernel helmholtz3d --wavenumber 1e5 '%s' 2>&1", bin, hin);
  rc = fmmcl_test_run_command(cmd, out, sizeof out);
  ck_assert_msg(rc == 0 && strstr(out, "warning") && strstr(out, "--precision double"),
                "k = 1e5: exit %d:\n%s", rc, out);
  snprintf(cmd, sizeof cmd, "'%s/fmmcl' --quiet --hessian '%s' 2>&1", bin, input);
  rc = fmmcl_test_run_command(cmd, out, sizeof out);
  ck_assert_msg((rc != 0 && strstr(out, "overflow")) || (rc == 0 && strstr(out, "warning")),
                "float outlier: exit %d:\n%s", rc, out);
  ck_assert_msg(strstr(out, "nan") == NULL, "printed a NaN:\n%s", out);
  if (!dev.has_fp64) return;
  snprintf(cmd, sizeof cmd, "'%s/fmmcl' --quiet --precision double --hessian '%s' 2>&1", bin, input);
  rc = fmmcl_test_run_command(cmd, out, sizeof out);
  ck_assert_msg(rc == 0 && strstr(out, "warning") == NULL, "double outlier: exit %d:\n%s", rc, out);
}
END_TEST

/* fmmcl-mpi (where configure found MPI; one rank, as a singleton): bad
 * numbers are usage errors naming the option (it named the value), and a
 * float gradient that overflows (charges 1e35, a pair 1e-3 apart) exits
 * non-zero with the reason, never a NaN. */
START_TEST(test_mpi_cli) {
  char mpi[4300], input[4300], cmd[9000], out[16384];
  snprintf(mpi, sizeof mpi, "%s/fmmcl-mpi", FMMCL_BIN_DIR);
  FILE *probe = fopen(mpi, "r");
  if (!probe) return; /* built without MPI */
  fclose(probe);
  const char *env = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1";
  const char *bad[] = {"--tol abc", "--tol 1e400", "--theta nan", "--order -5", "--demo -5"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    snprintf(cmd, sizeof cmd, "%s '%s' --device cpu %s 2>&1", env, mpi, bad[k]);
    const int rc = fmmcl_test_run_command(cmd, out, sizeof out);
    char opt[32];
    sscanf(bad[k], "%31s", opt);
    ck_assert_msg(rc == 2 && strstr(out, opt), "%s: exit %d:\n%s", bad[k], rc, out);
  }
  snprintf(input, sizeof input, "%s/pair.csv", work);
  FILE *f = fopen(input, "w");
  ck_assert_ptr_nonnull(f);
  fputs("x,y,z,q\n", f);
  double *x = cube(40, 1, 0, 43);
  for (int i = 0; i < 40; i++) fprintf(f, "%.17g,%.17g,%.17g,1e35\n", x[3 * i], x[3 * i + 1], x[3 * i + 2]);
  fprintf(f, "%.17g,%.17g,%.17g,1e35\n", x[0] + 1e-3, x[1], x[2]);
  fclose(f);
  free(x);
  snprintf(cmd, sizeof cmd, "%s '%s' --device cpu --precision single --method direct --check 5 '%s' 2>&1",
           env, mpi, input);
  const int rc = fmmcl_test_run_command(cmd, out, sizeof out);
  ck_assert_msg(rc != 0 && strstr(out, "overflow") && !strstr(out, "nan"), "overflow: exit %d:\n%s", rc, out);
}
END_TEST

static Suite *hostile_ext_suite(void) {
  Suite *s = suite_create("hostile_ext");
  TCase *ev = tcase_create("evaluate");
  tcase_add_checked_fixture(ev, open_device, close_device);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(ev, 300);
  tcase_add_loop_test(ev, test_extents, 0, KINDS);
  tcase_add_loop_test(ev, test_outlier, 0, KINDS);
  tcase_add_loop_test(ev, test_two_clusters, 0, KINDS);
  tcase_add_loop_test(ev, test_treecode_coincident, 0, 2);
  tcase_add_test(ev, test_stokes_fmm);
  tcase_add_test(ev, test_helmholtz_kr);
  tcase_add_test(ev, test_strengths);
  suite_add_tcase(s, ev);
  TCase *up = tcase_create("update");
  tcase_add_checked_fixture(up, open_device, close_device);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(up, 300);
  tcase_add_loop_test(up, test_update_positions, LAP, HELM + 1);
  tcase_add_test(up, test_execute_buffers);
  suite_add_tcase(s, up);
  TCase *cli = tcase_create("cli");
  tcase_add_checked_fixture(cli, open_device, close_device);
  if (!getenv("CK_DEFAULT_TIMEOUT")) tcase_set_timeout(cli, 300);
  tcase_add_test(cli, test_cli);
  tcase_add_test(cli, test_mpi_cli);
  suite_add_tcase(s, cli);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(hostile_ext_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
